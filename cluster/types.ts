// The data the Raft core exchanges with its shell: log entries, hard state, snapshots,
// messages between peers, and the Ready batch of work handed to the shell.
// Everything here is plain data (no classes) so that a transport or a disk can encode it.

/** A node's id within one cluster. Ids are positive integers and are never reused. */
export type NodeId = number;

/** 0 stands for "no node" (no vote cast, no leader known). */
export const NONE: NodeId = 0;

export const EntryType = {
  normal: 'normal',
  confChange: 'conf-change',
  empty: 'empty',
} as const;
export type EntryType = (typeof EntryType)[keyof typeof EntryType];

/**
 * Identifies the client request an entry carries, so that the state machine can apply a
 * retried request at most once (see session.ts). Raft itself never looks inside.
 */
export interface ClientTag {
  readonly clientId: string;
  readonly seq: number;
}

export interface Entry {
  readonly term: number;
  readonly index: number;
  readonly type: EntryType;
  readonly data: Uint8Array;
  readonly client?: ClientTag;
}

/** What must be durable before a vote or an append acknowledgement leaves the node. */
export interface HardState {
  readonly term: number;
  readonly vote: NodeId;
  readonly commit: number;
}

/**
 * The cluster membership and replicated settings as of some log index. Carried in
 * snapshots so that a node restored from one knows who its peers are.
 */
export interface ConfState {
  readonly voters: readonly NodeId[];
  readonly learners: readonly NodeId[];
  /** Ids that were members once; they can never be added again. */
  readonly removed: readonly NodeId[];
  /** Set by a `set-election-ticks` conf change; absent means the node's configured default. */
  readonly electionTicks?: number;
}

export interface SnapshotMeta {
  readonly index: number;
  readonly term: number;
  readonly conf: ConfState;
}

export interface Snapshot {
  readonly meta: SnapshotMeta;
  /** The state machine's image at meta.index, opaque to Raft. */
  readonly data: Uint8Array;
}

/**
 * One piece of a snapshot as the transport sends it. The core always sends a snapshot as one
 * logical `snap` message; a transport that must bound its frames splits `data` into chunks of at
 * most `snapshotChunkBytesMax` and reassembles them before stepping the message.
 */
export interface SnapshotChunk {
  readonly clusterId: string;
  readonly from: NodeId;
  readonly to: NodeId;
  readonly term: number;
  readonly meta: SnapshotMeta;
  /** Byte offset of this chunk within the snapshot data. */
  readonly offset: number;
  readonly totalBytes: number;
  readonly data: Uint8Array;
  readonly last: boolean;
}

export interface MessageHeader {
  readonly clusterId: string;
  readonly from: NodeId;
  readonly to: NodeId;
  readonly term: number;
}

/** The message kinds, as a closed tagged union. */
export type MessageBody =
  | {
      /** Leader → follower: entries following (index, logTerm), and the leader's commit. */
      readonly type: 'app';
      readonly index: number;
      readonly logTerm: number;
      readonly entries: readonly Entry[];
      readonly commit: number;
    }
  | {
      /**
       * Follower → leader. Accepted: `index` is the last index now matching the leader.
       * Rejected: `index` is the rejected prevIndex, and (rejectHint, logTerm) is the
       * follower's last entry that could match, so the leader can skip a whole term.
       */
      readonly type: 'app-resp';
      readonly index: number;
      readonly reject: boolean;
      readonly rejectHint: number;
      readonly logTerm: number;
    }
  | {
      readonly type: 'vote' | 'pre-vote';
      /** The candidate's last log index and term. */
      readonly index: number;
      readonly logTerm: number;
      /** Set when the campaign follows a leadership transfer: receivers skip the lease check. */
      readonly transfer: boolean;
    }
  | { readonly type: 'vote-resp' | 'pre-vote-resp'; readonly reject: boolean }
  | {
      readonly type: 'heartbeat';
      readonly commit: number;
      /** The ReadIndex round this heartbeat confirms leadership for; 0 when none. */
      readonly readSeq: number;
    }
  | { readonly type: 'heartbeat-resp'; readonly readSeq: number }
  | { readonly type: 'snap'; readonly snapshot: Snapshot }
  | { readonly type: 'timeout-now' }
  /** Follower → leader: a read request forwarded by a follower. */
  | { readonly type: 'read-index'; readonly ctx: string }
  | { readonly type: 'read-index-resp'; readonly index: number; readonly ctx: string };

export type Message = MessageHeader & MessageBody;
export type MessageType = MessageBody['type'];

/** A linearizable read may be served once the local state machine has applied `index`. */
export interface ReadState {
  readonly index: number;
  readonly ctx: string;
}

export const Role = {
  follower: 'follower',
  preCandidate: 'pre-candidate',
  candidate: 'candidate',
  leader: 'leader',
} as const;
export type Role = (typeof Role)[keyof typeof Role];

export interface SoftState {
  readonly lead: NodeId;
  readonly role: Role;
}

/**
 * A batch of work for the shell. The shell must handle it in this order, then call advance():
 *
 *   1. send `messages` (they promise nothing about local durability; may go out at once);
 *   2. persist: if `snapshot` is set, replace the whole stored log with it; then write
 *      `entries`, first deleting any stored entry at or after entries[0].index (a follower's
 *      conflicting tail is overwritten); then write `hardState` if set. One atomic batch,
 *      synced to disk when `mustSync`;
 *   3. send `messagesAfterPersist` (votes, vote and append acknowledgements: they promise
 *      that step 2 is durable);
 *   4. apply: install `snapshot` in the state machine if set, then apply `committedEntries`
 *      in order; serve `readStates` once the applied index reaches theirs;
 *   5. call advance().
 */
export interface Ready {
  readonly softState?: SoftState;
  readonly hardState?: HardState;
  readonly entries: readonly Entry[];
  readonly snapshot?: Snapshot;
  readonly messages: readonly Message[];
  readonly messagesAfterPersist: readonly Message[];
  readonly committedEntries: readonly Entry[];
  readonly readStates: readonly ReadState[];
  readonly mustSync: boolean;
}

/** What survives a crash: exactly what the shell persisted from earlier Readys. */
export interface PersistedState {
  readonly hardState: HardState;
  readonly snapshot?: Snapshot;
  /** Entries following the snapshot (or starting at index 1), contiguous. */
  readonly entries: readonly Entry[];
}

export function entryBytes(e: Entry): number {
  // A fixed overhead stands for the term, index and type, so empty entries still count.
  return e.data.byteLength + 24;
}
