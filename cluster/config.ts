// Configuration of one Raft node. Every limit is named and bounded; ticks are abstract time.

import assert from 'node:assert';
import type { NodeId } from './types.js';

export interface RaftConfig {
  readonly id: NodeId;
  /** Every message carries it; messages from another cluster are dropped and counted. */
  readonly clusterId: string;
  /** Seed of the PRNG that randomizes election timeouts in [electionTicks, 2*electionTicks). */
  readonly seed: number;
  /** Default election timeout; a `set-election-ticks` conf change overrides it cluster-wide. */
  readonly electionTicks?: number;
  readonly heartbeatTicks?: number;
  readonly preVote?: boolean;
  readonly checkQuorum?: boolean;
  /** Append messages a leader may have outstanding to a replicating follower. */
  readonly inflightMsgsMax?: number;
  readonly inflightBytesMax?: number;
  readonly entriesPerMessageMax?: number;
  /** Soft limit: a message always carries at least one entry when it carries any. */
  readonly bytesPerMessageMax?: number;
  /** Proposals are dropped while this many entries are appended but not committed. */
  readonly uncommittedEntriesMax?: number;
  readonly committedEntriesPerReadyMax?: number;
  readonly readIndexPendingMax?: number;
  /** For the transport: snapshots are sent in chunks of at most this many bytes. */
  readonly snapshotChunkBytesMax?: number;
}

export type ResolvedConfig = Required<RaftConfig>;

export const configDefaults = {
  electionTicks: 10,
  heartbeatTicks: 1,
  preVote: true,
  checkQuorum: true,
  inflightMsgsMax: 256,
  inflightBytesMax: 64 * 1024 * 1024,
  entriesPerMessageMax: 64,
  bytesPerMessageMax: 1024 * 1024,
  uncommittedEntriesMax: 4096,
  committedEntriesPerReadyMax: 1024,
  readIndexPendingMax: 1024,
  snapshotChunkBytesMax: 1024 * 1024,
} as const;

export function resolveConfig(c: RaftConfig): ResolvedConfig {
  const r: ResolvedConfig = { ...configDefaults, ...c };
  assert(Number.isInteger(r.id) && r.id > 0, `node id must be a positive integer, got ${r.id}`);
  assert(r.clusterId.length > 0, 'clusterId must not be empty');
  assert(r.heartbeatTicks >= 1, 'heartbeatTicks must be at least 1');
  assert(r.electionTicks > r.heartbeatTicks, 'electionTicks must exceed heartbeatTicks');
  assert(r.inflightMsgsMax >= 1 && r.inflightBytesMax >= 1, 'inflight limits must be positive');
  assert(r.entriesPerMessageMax >= 1 && r.bytesPerMessageMax >= 1, 'message limits must be positive');
  assert(r.uncommittedEntriesMax >= 1 && r.committedEntriesPerReadyMax >= 1, 'limits must be positive');
  assert(r.readIndexPendingMax >= 1 && r.snapshotChunkBytesMax >= 1, 'limits must be positive');
  return r;
}
