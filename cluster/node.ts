// RaftNode: the imperative shell around RawNode. It owns the clock (a tick timer), the disk
// (RaftStorage), the network (a Transport) and the state machine, and runs ONE loop that takes
// each Ready and does its work in the order raw-node.ts prescribes:
//
//   [a leader: send a held commit index now if it settles a broadcastCommit proposal]
//   → send rd.messages → persist (await storage.save, fsync'd) → send rd.messagesAfterPersist
//   → [one turn of the event loop for the transport to write those, or the broadcast commit]
//   → apply (snapshot, committed entries, read states) → advance() → maybe take a snapshot
//   → if proposals were settled, one turn of the event loop for their callers to propose again
//
// Compaction never silences the Raft timers. While a snapshot is written to disk, heartbeats
// and appends keep leaving (as they do during any write). Encoding the state machine holds the
// event loop, so a leader whose last encode here took snapshotHandoffMs or more (default: a
// quarter of the election timeout) does not take the next snapshot while it leads: it lets the
// log grow to twice the threshold (the followers compact meanwhile), then hands leadership to an
// up-to-date voter and compacts as a follower, as ovsdb-server does. The twice keeps a new
// leader (a follower that compacted at the threshold) from handing it straight back.
//
// Ticks, peer messages and client requests are stepped into the RawNode as they arrive, even
// while a save is in flight (the core allows it between ready() and advance()); they only wake
// the loop. Proposals that arrive during a save land in the next Ready together, which is how
// one fsync serves many entries; a leader's appends of them leave at once (takeEarlyMessages),
// so followers write them while the leader is still writing the previous batch.
//
// Clients get promises: propose() resolves once the entry is committed and applied here,
// readIndex() once the local state is linearizable; both reject with a ProposalError whose
// `kind` says what to do next (ask the leader, retry, give up). A storage error stops the node
// for good: it records the error, rejects everything pending with 'stopped', and steps nothing
// more, so it can never vote or acknowledge on a disk that broke its promises.

import assert from 'node:assert';
import { Packr } from 'msgpackr';
import { bootstrapState } from './bootstrap.js';
import { applyConfChange, decodeConfChange, type ConfChange } from './conf-change.js';
import type { RaftConfig } from './config.js';
import type { ProposeResult, RaftCounters, TransferResult } from './raft.js';
import { RawNode, type NodeStatus } from './raw-node.js';
import { ClientSessions } from './session.js';
import { RaftStorage, StorageCorruptError, StorageError, type ReadyWrites, type StorageWarning } from './storage.js';
import { ApplyRefusedError, type StateMachine } from './state-machine.js';
import type { PeerLinks, Transport, TransportReport, TransportStats } from './transport.js';
import {
  NONE,
  type ClientTag,
  type ConfState,
  type Entry,
  type Message,
  type NodeId,
  type PersistedState,
  type ReadState,
  type Ready,
  type Snapshot,
  type SnapshotMeta,
} from './types.js';

/** What the node needs of its disk: RaftStorage, or a test double that fails on demand. */

/** What stops a node for good: its storage failed, or its state machine refused an entry. */
export type FatalError = StorageError | ApplyRefusedError;

function fatalWhy(err: FatalError): string {
  return err instanceof ApplyRefusedError ? `cannot apply: ${err.message}` : `storage failed: ${err.message}`;
}

export interface NodeStorage {
  readonly warnings: readonly StorageWarning[];
  load(): PersistedState;
  save(rd: ReadyWrites): Promise<void>;
  saveSnapshot(meta: SnapshotMeta, data: Uint8Array): Promise<void>;
  compact(index: number): Promise<void>;
  close(): Promise<void>;
}

/** Core settings the node passes through unchanged (see config.ts). */
export type RaftTuning = Omit<RaftConfig, 'id' | 'clusterId' | 'seed' | 'electionTicks' | 'heartbeatTicks'>;

export interface RaftNodeOptions {
  readonly id: NodeId;
  readonly clusterId: string;
  readonly dataDir: string;
  readonly transport: Transport;
  readonly stateMachine: StateMachine;
  /** Every peer's address, handed to the transport. */
  readonly peers: ReadonlyMap<NodeId, string>;
  /** The founding voters of a new cluster: used only when dataDir holds no state. */
  readonly bootstrap?: readonly NodeId[];
  /** Wall-clock length of one tick, which is also the heartbeat interval at heartbeatTicks 1. */
  readonly tickMs?: number;
  readonly electionTicks?: number;
  readonly heartbeatTicks?: number;
  /** Seed of the core's PRNG (election timeouts). Defaults to one derived from the id. */
  readonly seed?: number;
  /**
   * When a snapshot is taken and the log compacted behind it. It is due once at least
   * snapshotEntries entries were applied since the last snapshot AND their data adds up to
   * snapshotLogRatio times the last snapshot's size, so that writing snapshots costs at most
   * 1/ratio of writing the log, however large the state (ovsdb-server also waits for its log
   * to outgrow its last snapshot). It is due regardless once the log since the last snapshot
   * holds snapshotEntriesMax entries or snapshotLogBytes bytes: the caps on what the log keeps
   * in memory. snapshotLogRatio 0 makes it every snapshotEntries entries.
   */
  readonly snapshotEntries?: number;
  readonly snapshotLogRatio?: number;
  readonly snapshotEntriesMax?: number;
  readonly snapshotLogBytes?: number;
  /**
   * A leader whose last snapshot's encode held the event loop this long or longer hands
   * leadership away before taking the next (see the top of this file). Default: a quarter of
   * the election timeout in force.
   */
  readonly snapshotHandoffMs?: number;
  /** Proposals waiting to apply; beyond this new ones are rejected 'dropped'. */
  readonly proposalsPendingMax?: number;
  /**
   * The most bytes of data one proposed entry may carry; a larger proposal is refused
   * 'too-large'. Never more than the transport can carry to a peer (`Transport.entryBytesMax`):
   * an entry no follower can receive would never commit, and every entry behind it would wait.
   */
  readonly entryBytesMax?: number;
  /** Reads waiting for their index; beyond this new ones are rejected 'dropped'. */
  readonly readsPendingMax?: number;
  readonly proposalTimeoutMs?: number;
  readonly readTimeoutMs?: number;
  /** Client sessions remembered for at-most-once (least recently used forgotten first). */
  readonly sessionsMax?: number;
  /**
   * How long a leader's new commit index may wait, after it applied, for a proposal's append
   * to carry it to the followers (RawNode.lingerCommit); 0 sends it at once in empty appends.
   * A client that waits on its write and writes again (the serial case) proposes within a
   * round trip: the two empty appends, and the two answers to them, are not made at all. An
   * isolated write reaches the followers' state machines at most this much later; a
   * proposal made with broadcastCommit never waits.
   */
  readonly commitLingerMs?: number;
  /**
   * A node founding a new cluster (dataDir empty, `bootstrap` given) whose id is the lowest of
   * the founders campaigns this long after it starts, and again at this interval for three
   * election timeouts while it knows no leader and is no candidate; 0 leaves the first election
   * to the timeouts. The founders of a cluster start together (`ovnts up`), so the first leader comes a
   * round trip after they listen rather than one to two election timeouts later, as
   * `ovsdb-tool create-cluster` makes its server the leader at once. A campaign is an input like
   * a message: it changes when the first election happens, never what any election may decide.
   */
  readonly foundingCampaignMs?: number;
  readonly raft?: RaftTuning;
  /** Opens the disk; defaults to RaftStorage.open. */
  readonly openStorage?: (dir: string) => Promise<NodeStorage>;
  /** Told once when a storage error or a refused apply stops the node. Defaults to logging it. */
  readonly onFatalError?: (err: FatalError) => void;
  /** Where the node reports what a person should know (recovery warnings, the fatal error). */
  readonly log?: (line: string) => void;
  /** Told how long each durable write and each snapshot took (for metrics). Must not throw. */
  readonly observe?: NodeObserver;
}

export interface NodeObserver {
  /** A Ready's synced write: its duration and how many entries it carried. */
  persisted?(ms: number, entries: number): void;
  /**
   * A snapshot taken and the log compacted behind it: the whole time it held the node's loop,
   * its size, and the part spent encoding the state machine (which holds the event loop).
   */
  snapshotTaken?(ms: number, bytes: number, encodeMs: number): void;
  /** A proposal of this node applied here: milliseconds from propose() to applied. */
  proposalApplied?(ms: number): void;
}

export const nodeDefaults = {
  tickMs: 100,
  electionTicks: 10,
  heartbeatTicks: 1,
  snapshotEntries: 10_000,
  snapshotLogRatio: 1,
  snapshotEntriesMax: 100_000,
  snapshotLogBytes: 64 * 1024 * 1024,
  proposalsPendingMax: 4096,
  entryBytesMax: 16 * 1024 * 1024 - 64 * 1024,
  readsPendingMax: 1024,
  proposalTimeoutMs: 5000,
  readTimeoutMs: 5000,
  sessionsMax: 10_000,
  commitLingerMs: 2,
  foundingCampaignMs: 0,
} as const;

export interface ProposeOptions {
  /**
   * The proposer waits on the followers' applies too (a client's --wait=sb or --wait=hv, which
   * agents on every member answer): once committed, the leader sends the commit index at once
   * rather than with its next append, which costs one message to each follower when no other
   * proposal follows soon.
   */
  readonly broadcastCommit?: boolean;
  /**
   * Appended only right after this index, all of it applied (see quiescentIndex): a proposal
   * written for the state there is refused ('dropped', retry) once the log has moved on.
   */
  readonly onlyAfter?: number;
}

export type ProposalErrorKind = 'not-leader' | 'dropped' | 'timeout' | 'stopped' | 'too-large';

/**
 * Why a proposal or read did not complete. 'not-leader': send it to `leaderHint` (NONE when no
 * leader is known yet; retry later). 'dropped': it was not accepted, or its entry was replaced
 * after a leader change, or its outcome is unknown: retry (with the same client tag, a retry
 * is applied at most once). 'timeout': no outcome within the limit (it may still apply).
 * 'stopped': this node stopped. 'too-large': its data is over `entryBytesMax`; it was not
 * proposed, here or anywhere, and never will be. `outcomeUnknown` says whether the entry may have applied (or
 * may still): an untagged proposal must not be retried blindly then.
 */
export class ProposalError extends Error {
  override name = 'ProposalError';
  outcomeUnknown = false;

  constructor(
    readonly kind: ProposalErrorKind,
    message: string,
    readonly leaderHint: NodeId = NONE,
    readonly leaderAddress: string | undefined = undefined,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

function unknownOutcome(e: ProposalError): ProposalError {
  e.outcomeUnknown = true;
  return e;
}

export interface ProposalOutcome {
  readonly index: number;
  /** What StateMachine.apply returned for the entry on this node. */
  readonly result: unknown;
}

export interface ConfChangeOutcome {
  readonly index: number;
  /** The membership in force on this node once the change applied. */
  readonly conf: ConfState;
}

export interface NodeCounters {
  readies: number;
  entriesPersisted: number;
  entriesApplied: number;
  duplicatesApplied: number;
  proposalsAccepted: number;
  proposalsRejected: number;
  proposalsTimedOut: number;
  readsServed: number;
  readsTimedOut: number;
  /** Reads failed as 'dropped' because the leader changed before confirming them. */
  readsDropped: number;
  snapshotsTaken: number;
  snapshotsRestored: number;
  /** Leaderships handed away so that a slow snapshot would not hold a leader's loop. */
  snapshotHandoffs: number;
}

/** What this node knows of one other member: the leader's progress for it, and contact. */
export interface PeerStatus {
  readonly id: NodeId;
  readonly address: string | undefined;
  /** Leader only: the highest index known to be on that member's disk, and the next to send. */
  readonly match?: number;
  readonly next?: number;
  readonly state?: 'probe' | 'replicate' | 'snapshot';
  readonly learner?: boolean;
  /** Milliseconds since a message from it last arrived here; undefined if none has. */
  readonly lastContactMsAgo: number | undefined;
}

/**
 * This node's last election, as ovsdb-server's cluster/status reports its own (wall clock,
 * shell-side bookkeeping): when it last began one (a pre-vote or vote campaign, or a new term
 * as candidate) and why, and when it last became leader. Undefined before the first.
 */
export interface ElectionTimes {
  readonly startedMsAgo?: number;
  readonly reason?: 'timeout' | 'leadership_transfer';
  readonly wonMsAgo?: number;
}

export interface RaftNodeStatus extends NodeStatus {
  readonly tickMs: number;
  readonly election: ElectionTimes;
  readonly peers: readonly PeerStatus[];
  /** The last index applied to the state machine. */
  readonly appliedIndex: number;
  readonly snapshotIndex: number;
  /** Bytes of entry data applied since the last snapshot (the byte threshold's measure). */
  readonly logBytesSinceSnapshot: number;
  /** How long the last snapshot taken here held the loop; undefined before the first. */
  readonly lastSnapshotMs: number | undefined;
  readonly proposalsPending: number;
  readonly readsPending: number;
  readonly counters: Readonly<NodeCounters>;
  readonly raftCounters: Readonly<RaftCounters>;
  readonly transport: TransportStats;
  readonly fatalError: FatalError | undefined;
}

interface PendingProposal {
  readonly term: number;
  readonly deadlineTick: number;
  /** performance.now() when proposed, for the proposal latency metric. */
  readonly proposedAt: number;
  /** Its commit index goes to the followers at once (ProposeOptions). */
  readonly broadcastCommit: boolean;
  readonly resolve: (result: unknown) => void;
  readonly reject: (err: ProposalError) => void;
}

interface PendingRead {
  readonly deadlineTick: number;
  /** Set once the leader confirmed it: the index the state machine must reach. */
  index: number | undefined;
  readonly resolve: (index: number) => void;
  readonly reject: (err: ProposalError) => void;
}

// The node's snapshot image: the state machine's bytes, the client sessions (so that
// at-most-once survives compaction and travels to followers with the state it protects), and
// the member addresses learned from conf changes (replicated state like the rest).
//   2: [2, machine, sessions, members: [id, address, clientAddress | null][]]
//   1 (still read): [1, machine, sessions]
const snapshotFormat = 2;
const snapshotFormatV1 = 1;
const packr = new Packr({ useRecords: false });

/** Where a member is reached: by its peers (Raft) and by clients (the application's API). */
export interface MemberAddresses {
  readonly address: string;
  readonly clientAddress?: string;
}

type MemberEntry = [NodeId, string, string | null];

/** The image a node snapshot holds (also what `snapshot restore` writes). */
export function encodeNodeSnapshot(machine: Uint8Array, sessions: [string, number][], members: ReadonlyMap<NodeId, MemberAddresses> = new Map()): Uint8Array {
  const m: MemberEntry[] = [...members].sort((a, b) => a[0] - b[0]).map(([id, a]) => [id, a.address, a.clientAddress ?? null]);
  return packr.pack([snapshotFormat, machine, sessions, m]);
}

function decodeNodeSnapshot(data: Uint8Array): { machine: Uint8Array; sessions: [string, number][]; members: Map<NodeId, MemberAddresses> } {
  const v: unknown = packr.unpack(data);
  assert(Array.isArray(v) && ((v.length === 3 && v[0] === snapshotFormatV1) || (v.length === 4 && v[0] === snapshotFormat)), 'node snapshot: unknown format');
  const [, machine, sessions, members = []] = v as [number, unknown, unknown, unknown];
  assert(machine instanceof Uint8Array && Array.isArray(sessions) && Array.isArray(members), 'node snapshot: malformed');
  const learned = new Map<NodeId, MemberAddresses>();
  for (const [id, address, clientAddress] of members as MemberEntry[]) learned.set(id, clientAddress === null ? { address } : { address, clientAddress });
  return {
    machine: new Uint8Array(machine.buffer, machine.byteOffset, machine.byteLength),
    sessions: sessions as [string, number][],
    members: learned,
  };
}

/** A default seed that differs per node and stays the same across its restarts. */
function seedFor(id: NodeId): number {
  return Math.imul(id, 0x9e3779b1) >>> 0;
}

function ticksFor(ms: number, tickMs: number): number {
  return Math.max(1, Math.ceil(ms / tickMs));
}

type Resolved = Required<Pick<RaftNodeOptions, keyof typeof nodeDefaults>>;

/**
 * A leader that hands leadership away before compacting waits until the log since its snapshot
 * is this many times the threshold: a follower compacts at the threshold, so the voter that
 * takes over is never due for the same hand-off at once.
 */
const leaderCompactionSlack = 2;

/**
 * A peer that keeps failing to take a snapshot (it refuses one over its snapshotBytesMax, say)
 * gets one log line at once and then at most one per this interval, with the count between.
 * The leader resends the snapshot every heartbeat or so, so unlimited lines would flood the log.
 */
export const snapshotFailureLogIntervalMs = 60_000;

export class RaftNode {
  readonly id: NodeId;
  private fatal: FatalError | undefined;

  private readonly limits: Resolved;
  private readonly proposals = new Map<number, PendingProposal>();
  private readonly reads = new Map<string, PendingRead>();
  /** Conf changes applied in the Ready in hand: resolved after advance(), when they are in force. */
  private confApplied: PendingProposal[] = [];
  private readSeq = 0;
  /** Proposals the Ready in hand resolved (see step 7 of the loop). */
  private settledInReady = 0;
  private ticks = 0;
  private applied: number;
  private snapshotIndex: number;
  /** Bytes of entry data applied since the last snapshot taken or installed. */
  private logBytesSinceSnapshot = 0;
  /** Size of the last snapshot taken, installed or loaded (0: none yet). */
  private lastSnapshotBytes = 0;
  /** How long the last snapshot taken here held the loop (undefined: none taken yet). */
  private lastSnapshotMs: number | undefined;
  /** How long the last snapshot's encode held the event loop (undefined: none taken yet). */
  private lastEncodeMs: number | undefined;
  /** This leader handed leadership away to compact, since its last snapshot. */
  private handedOff = false;
  /**
   * A founder's campaigns (foundingCampaignMs): the tick of the next one, every how many ticks,
   * and the last tick one may come at; undefined once a leader is known or the window passed.
   */
  private foundingCampaign: { next: number; readonly every: number; readonly until: number } | undefined;
  /** A snapshot is being written: what may leave early, leaves (see notify). */
  private compacting = false;
  private stopping = false;
  private wakeup: (() => void) | undefined;
  private timer: NodeJS.Timeout | undefined;
  private loopDone: Promise<void> = Promise.resolve();
  private transportClosed: Promise<void> | undefined;
  private stopped: Promise<void> | undefined;
  private readonly counters: NodeCounters = {
    readies: 0,
    entriesPersisted: 0,
    entriesApplied: 0,
    duplicatesApplied: 0,
    proposalsAccepted: 0,
    proposalsRejected: 0,
    proposalsTimedOut: 0,
    readsServed: 0,
    readsTimedOut: 0,
    readsDropped: 0,
    snapshotsTaken: 0,
    snapshotsRestored: 0,
    snapshotHandoffs: 0,
  };
  private readonly progressListeners = new Set<() => void>();
  /** Per peer: when a failed snapshot was last logged, and the failures since (see onReport). */
  private readonly snapshotFailures = new Map<NodeId, { loggedAtMs: number; unlogged: number }>();
  private readonly log: (line: string) => void;
  private readonly onFatalError: (err: FatalError) => void;

  private constructor(
    private readonly options: RaftNodeOptions,
    private readonly raw: RawNode,
    private readonly storage: NodeStorage,
    private sessions: ClientSessions,
    limits: Resolved,
    snapshotIndex: number,
  ) {
    this.id = options.id;
    this.limits = limits;
    this.applied = snapshotIndex;
    this.snapshotIndex = snapshotIndex;
    this.log = options.log ?? ((line) => console.error(line));
    this.onFatalError = options.onFatalError ?? ((err) => this.log(`raft node ${this.id} stopped: ${err.message}`));
  }

  /**
   * Opens the node's storage in dataDir (bootstrapping it when empty and `bootstrap` is
   * given), restores the state machine from the stored snapshot, and starts the transport,
   * the tick timer and the loop. Committed entries after the snapshot are applied by the loop
   * as the core hands them back.
   */
  static async start(options: RaftNodeOptions): Promise<RaftNode> {
    const limits: Resolved = {
      tickMs: options.tickMs ?? nodeDefaults.tickMs,
      electionTicks: options.electionTicks ?? nodeDefaults.electionTicks,
      heartbeatTicks: options.heartbeatTicks ?? nodeDefaults.heartbeatTicks,
      snapshotEntries: options.snapshotEntries ?? nodeDefaults.snapshotEntries,
      snapshotLogRatio: options.snapshotLogRatio ?? nodeDefaults.snapshotLogRatio,
      // A count threshold above the cap raises the cap with it.
      snapshotEntriesMax: Math.max(options.snapshotEntriesMax ?? nodeDefaults.snapshotEntriesMax, options.snapshotEntries ?? nodeDefaults.snapshotEntries),
      snapshotLogBytes: options.snapshotLogBytes ?? nodeDefaults.snapshotLogBytes,
      proposalsPendingMax: options.proposalsPendingMax ?? nodeDefaults.proposalsPendingMax,
      entryBytesMax: Math.min(options.entryBytesMax ?? nodeDefaults.entryBytesMax, options.transport.entryBytesMax ?? Infinity),
      readsPendingMax: options.readsPendingMax ?? nodeDefaults.readsPendingMax,
      proposalTimeoutMs: options.proposalTimeoutMs ?? nodeDefaults.proposalTimeoutMs,
      readTimeoutMs: options.readTimeoutMs ?? nodeDefaults.readTimeoutMs,
      sessionsMax: options.sessionsMax ?? nodeDefaults.sessionsMax,
      commitLingerMs: options.commitLingerMs ?? nodeDefaults.commitLingerMs,
      foundingCampaignMs: options.foundingCampaignMs ?? nodeDefaults.foundingCampaignMs,
    };
    for (const [name, v] of Object.entries(limits)) {
      if (name === 'snapshotLogRatio') assert(Number.isFinite(v) && v >= 0, `RaftNode option ${name} must be a number >= 0, got ${v}`);
      else if (name === 'commitLingerMs' || name === 'foundingCampaignMs') assert(Number.isInteger(v) && v >= 0, `RaftNode option ${name} must be an integer >= 0, got ${v}`);
      else assert(Number.isInteger(v) && v >= 1, `RaftNode option ${name} must be a positive integer, got ${v}`);
    }
    assert(options.snapshotHandoffMs === undefined || options.snapshotHandoffMs >= 0, `RaftNode option snapshotHandoffMs must not be negative, got ${options.snapshotHandoffMs}`);
    const openStorage = options.openStorage ?? ((dir: string) => RaftStorage.open(dir));
    const storage = await openStorage(options.dataDir);
    const log = options.log ?? ((line: string) => console.error(line));
    for (const w of storage.warnings) log(`raft node ${options.id}: ${w.message}`);
    let state = storage.load();
    const empty = state.hardState.term === 0 && state.snapshot === undefined && state.entries.length === 0;
    if (empty && options.bootstrap !== undefined) {
      state = bootstrapState(options.bootstrap);
      // The founding entry must be durable before the node speaks: the core treats it as stable.
      await storage.save({ entries: state.entries, hardState: state.hardState });
    }
    const raw = new RawNode(
      {
        ...options.raft,
        id: options.id,
        clusterId: options.clusterId,
        seed: options.seed ?? seedFor(options.id),
        electionTicks: limits.electionTicks,
        heartbeatTicks: limits.heartbeatTicks,
      },
      state,
    );
    let sessions = new ClientSessions(limits.sessionsMax);
    let learned = new Map<NodeId, MemberAddresses>();
    if (state.snapshot !== undefined) {
      const image = decodeNodeSnapshot(state.snapshot.data);
      options.stateMachine.restore(image.machine);
      sessions = ClientSessions.fromEntries(image.sessions, limits.sessionsMax);
      learned = image.members;
    }
    const node = new RaftNode(options, raw, storage, sessions, limits, state.snapshot?.meta.index ?? 0);
    node.learned = learned;
    node.lastSnapshotBytes = state.snapshot?.data.byteLength ?? 0;
    node.removedIds = new Set(state.snapshot?.meta.conf.removed ?? []);
    options.transport.setPeers(node.peerAddresses());
    try {
      await options.transport.start({
        onMessage: (m) => node.onMessage(m),
        onReport: (r) => node.onReport(r),
      });
    } catch (err) {
      // Release the LevelDB lock so that a caller may retry; the transport's error is the one
      // to report.
      await storage.close();
      throw err;
    }
    if (empty && options.bootstrap !== undefined && limits.foundingCampaignMs > 0 && options.id === Math.min(...options.bootstrap)) {
      // Again every such delay while no leader is known, for three election timeouts: a founder
      // that started later than this one (its peers not yet listening) is reached once it
      // listens. Each campaign restarts this node's election timer, so without the repeats a
      // first campaign that reached nobody would put the first election off.
      const every = ticksFor(limits.foundingCampaignMs, limits.tickMs);
      node.foundingCampaign = { next: every, every, until: 3 * limits.electionTicks };
    }
    node.timer = setInterval(() => node.onTick(), limits.tickMs);
    node.loopDone = node.run();
    return node;
  }

  // ---------------------------------------------------------------------------------------
  // The loop

  private async run(): Promise<void> {
    while (!this.stopping) {
      this.lingerCommitStep();
      if (!this.raw.hasReady()) {
        // Woken by a tick, a message, a report or a request; nothing is lost in between
        // because hasReady() and setting `wakeup` happen in one synchronous step.
        await new Promise<void>((resolve) => {
          this.wakeup = resolve;
        });
        continue;
      }
      const rd = this.raw.ready();
      this.counters.readies++;
      // 0. A leader holds a commit index for the next append while it applies (raw-node.ts);
      //    one that settles a proposal made with broadcastCommit leaves now instead (or in
      //    this Ready's appends, when they carry it), so that the followers apply it alongside
      //    this node: see step 3.
      const broadcast = rd.committedEntries.some((e) => this.proposals.get(e.index)?.broadcastCommit === true);
      if (broadcast) {
        this.raw.broadcastCommit();
        this.send(this.raw.takeEarlyMessages());
      }
      // 1. Appends, heartbeats and snapshots from a leader promise nothing about our disk:
      //    they leave first, so followers write in parallel with our own write.
      this.send(rd.messages);
      // 2. Persist the snapshot, entries and hard state in one synced batch. A storage
      //    error ends the node here: nothing after this point may be sent or applied.
      try {
        const started = performance.now();
        await this.storage.save(rd);
        if (rd.mustSync) this.options.observe?.persisted?.(performance.now() - started, rd.entries.length);
      } catch (err) {
        if (!(err instanceof StorageError)) throw err;
        this.fail(err);
        return;
      }
      this.counters.entriesPersisted += rd.entries.length;
      // 3. Votes and acknowledgements promise what step 2 made durable: only now may they go.
      //    A transport writes in a later turn of the event loop (grpc-js's http2 session
      //    does), and the applies below hold the loop. So before applying, one turn lets it
      //    write what should not wait for them: a follower's acknowledgement, which the
      //    leader's commit waits on, and a leader's broadcast commit index (step 0), without
      //    which the followers would learn it only after this node applied.
      this.send(rd.messagesAfterPersist);
      if (rd.committedEntries.length > 0 && (broadcast || rd.messagesAfterPersist.length > 0)) {
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
      // 4. Apply: install the snapshot, apply committed entries in order (settling the
      //    proposals waiting on them), then serve reads whose index is now applied.
      try {
        this.applyReady(rd);
      } catch (err) {
        // Entries this build cannot apply as the others do: stop before them (their Ready
        // is never advanced; a restart replays them, and refuses again until upgraded).
        if (!(err instanceof ApplyRefusedError)) throw err;
        this.fail(err);
        return;
      }
      // 5. Tell the core all of it is done; conf changes take effect in there.
      this.raw.advance();
      this.settleConfChanges();
      this.emitProgress();
      // 6. Compact once enough has been applied since the last snapshot (a leader with slow
      //    snapshots hands leadership away first; see compactionStep).
      if (this.compactionStep() === 'compact') {
        try {
          await this.takeSnapshot();
        } catch (err) {
          if (!(err instanceof StorageError)) throw err;
          this.fail(err);
          return;
        }
        this.emitProgress();
      }
      // 7. Whoever waited on the proposals settled in step 4 often proposes again at once (a
      //    client's next command): let them in before the next Ready, so that one append to
      //    each follower carries their entries and the commit index that settled the last ones.
      if (this.settledInReady > 0) {
        this.settledInReady = 0;
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
    }
  }

  private lingerTimer: NodeJS.Timeout | undefined;
  /** The commit index now unsent already waited its linger: it goes at the next Ready. */
  private lingerSpent = false;

  /**
   * A leader's commit index that no append carried yet waits up to commitLingerMs for the
   * next proposal's append (RawNode.lingerCommit), once; then it goes in empty appends.
   */
  private lingerCommitStep(): void {
    if (!this.raw.commitUnsent()) {
      this.lingerSpent = false;
      this.endLinger();
      return;
    }
    if (this.lingerSpent || this.lingerTimer !== undefined || this.limits.commitLingerMs === 0) return;
    this.raw.lingerCommit(true);
    this.lingerTimer = setTimeout(() => {
      this.lingerTimer = undefined;
      this.lingerSpent = true;
      this.raw.lingerCommit(false);
      this.notify();
    }, this.limits.commitLingerMs);
  }

  /**
   * Hands messages to the transport. Once they carried the commit index a linger waited for,
   * that linger is over: its timer, left running, would fire while the next commit index waits
   * (its entry's acknowledgements often arrive during this node's own write, before the loop
   * looks again) and send that one in empty appends at once, instead of in the append of the
   * client's next proposal.
   */
  private send(messages: readonly Message[]): void {
    if (messages.length === 0) return;
    this.options.transport.send(messages);
    if (!this.raw.commitUnsent()) {
      this.lingerSpent = false;
      this.endLinger();
    }
  }

  private endLinger(): void {
    if (this.lingerTimer === undefined) return;
    clearTimeout(this.lingerTimer);
    this.lingerTimer = undefined;
    this.raw.lingerCommit(false);
  }

  /** The storage error or refused apply that stopped this node, if one did. */
  get fatalError(): FatalError | undefined {
    return this.fatal;
  }

  private emitProgress(): void {
    for (const listener of this.progressListeners) listener();
  }

  private notify(): void {
    const w = this.wakeup;
    if (w === undefined) {
      // The loop is busy with a Ready (usually awaiting its write) or a snapshot: what may
      // leave early, leaves now (RawNode.takeEarlyMessages), once per turn of the event loop
      // so that the proposals of one turn share one append. During a snapshot this is what
      // keeps a leader's heartbeats going.
      if (this.raw.hasOutstandingReady() || this.compacting) this.scheduleEarlySend();
      return;
    }
    this.wakeup = undefined;
    w();
  }

  private earlySendScheduled = false;

  private scheduleEarlySend(): void {
    if (this.earlySendScheduled) return;
    this.earlySendScheduled = true;
    setImmediate(() => {
      this.earlySendScheduled = false;
      if (this.stopping || this.fatal !== undefined || !(this.raw.hasOutstandingReady() || this.compacting)) return;
      this.send(this.raw.takeEarlyMessages());
    });
  }

  private applyReady(rd: Ready): void {
    if (rd.snapshot !== undefined) this.restoreSnapshot(rd.snapshot);
    // Conf changes take effect in the core at advance(); the addresses they carry are noted
    // here, judged against the configuration as the entries before them leave it.
    let conf = this.raw.raft.conf;
    for (const e of rd.committedEntries) {
      if (e.type === 'conf-change') conf = this.noteMembership(e, conf);
      this.applyEntry(e);
    }
    this.noteReadStates(rd.readStates);
    if (rd.softState !== undefined) this.noteLeader(rd.softState.lead);
    this.noteElection();
    this.serveReads();
  }

  /** The leader as the last soft state named it (undefined before the first). */
  private knownLead: NodeId | undefined = undefined;

  /**
   * A read not yet confirmed when the leader changes never will be: the leader that was asked
   * is gone, and the next one never heard of it. It fails at once as 'dropped' (retryable)
   * instead of waiting out its deadline; reads already confirmed wait for their index as before.
   */
  private noteLeader(lead: NodeId): void {
    const was = this.knownLead;
    this.knownLead = lead;
    if (was === undefined || was === lead) return;
    for (const [ctx, r] of this.reads) {
      if (r.index !== undefined) continue;
      this.reads.delete(ctx);
      this.counters.readsDropped++;
      r.reject(new ProposalError('dropped', `the leader changed (${was} to ${lead === 0 ? 'none' : lead}) before the read was confirmed; retry`));
    }
  }

  private applyEntry(e: Entry): void {
    assert(e.index === this.applied + 1, `node ${this.id}: applying ${e.index} after ${this.applied}`);
    let result: unknown = undefined;
    this.logBytesSinceSnapshot += e.data.byteLength;
    if (e.type === 'normal') {
      const fresh = this.sessions.shouldApply(e);
      if (!fresh) this.counters.duplicatesApplied++;
      result = this.options.stateMachine.apply(e, !fresh);
    }
    this.applied = e.index;
    this.counters.entriesApplied++;
    const p = this.proposals.get(e.index);
    if (p === undefined) return;
    this.proposals.delete(e.index);
    if (p.term !== e.term) {
      // Another leader's entry took the index: ours was lost in the change of leader.
      p.reject(
        new ProposalError(
          'dropped',
          `entry ${e.index} of term ${p.term} was replaced by term ${e.term} after a leader change; retry`,
        ),
      );
    } else if (e.type === 'conf-change') {
      this.confApplied.push(p);
    } else {
      this.options.observe?.proposalApplied?.(performance.now() - p.proposedAt);
      this.settledInReady++;
      p.resolve(result);
    }
  }

  /** Addresses learned from conf changes (replicated state: in the log and the snapshots). */
  private learned = new Map<NodeId, MemberAddresses>();
  private removedIds = new Set<NodeId>();

  /** Where each member other than this one is reached: learned from the log, else configured. */
  private peerAddresses(): Map<NodeId, string> {
    const out = new Map<NodeId, string>();
    for (const [id, a] of this.options.peers) out.set(id, a);
    for (const [id, m] of this.learned) out.set(id, m.address);
    for (const id of this.removedIds) out.delete(id);
    return out;
  }

  private noteMembership(e: Entry, conf: ConfState): ConfState {
    let cc: ConfChange;
    try {
      cc = decodeConfChange(e.data);
    } catch {
      return conf;
    }
    const r = applyConfChange(conf, cc, this.limits.heartbeatTicks);
    if (!r.ok) return conf;
    if ((cc.kind === 'add-voter' || cc.kind === 'add-learner') && typeof cc.address === 'string') {
      this.learned.set(cc.id, typeof cc.clientAddress === 'string' ? { address: cc.address, clientAddress: cc.clientAddress } : { address: cc.address });
      this.options.transport.setPeers(this.peerAddresses());
    } else if (cc.kind === 'remove') {
      this.learned.delete(cc.id);
      this.removedIds.add(cc.id);
      if (cc.id !== this.id) this.options.transport.setPeers(this.peerAddresses());
    }
    return r.conf;
  }

  private restoreSnapshot(s: Snapshot): void {
    assert(s.meta.index > this.applied, `node ${this.id}: snapshot ${s.meta.index} not after applied ${this.applied}`);
    const image = decodeNodeSnapshot(s.data);
    this.options.stateMachine.restore(image.machine);
    this.sessions = ClientSessions.fromEntries(image.sessions, this.limits.sessionsMax);
    this.learned = image.members;
    this.removedIds = new Set(s.meta.conf.removed);
    this.options.transport.setPeers(this.peerAddresses());
    this.applied = s.meta.index;
    this.snapshotIndex = s.meta.index;
    this.logBytesSinceSnapshot = 0;
    this.lastSnapshotBytes = s.data.byteLength;
    this.counters.snapshotsRestored++;
    // Proposals the snapshot covers: whether they made it is unknown here.
    for (const [index, p] of this.proposals) {
      if (index > s.meta.index) continue;
      this.proposals.delete(index);
      p.reject(unknownOutcome(new ProposalError('dropped', `entry ${index} was covered by a snapshot from the leader: outcome unknown, retry`)));
    }
  }

  private settleConfChanges(): void {
    if (this.confApplied.length === 0) return;
    const conf = this.raw.status().conf;
    for (const p of this.confApplied) p.resolve(conf);
    this.confApplied = [];
  }

  private noteReadStates(states: readonly ReadState[]): void {
    for (const rs of states) {
      const r = this.reads.get(rs.ctx);
      if (r !== undefined) r.index = rs.index;
    }
  }

  private serveReads(): void {
    for (const [ctx, r] of this.reads) {
      if (r.index === undefined || r.index > this.applied) continue;
      this.reads.delete(ctx);
      this.counters.readsServed++;
      r.resolve(r.index);
    }
  }

  /**
   * What the loop does about compaction after a Ready. 'compact': take a snapshot now. 'none':
   * not due; or this is a leader whose encodes hold the event loop (snapshotHandoffMs) and which
   * lets the log grow to leaderCompactionSlack times the threshold, then hands leadership to an
   * up-to-date voter and compacts once it follows. With no voter to hand to, or a hand-off that
   * did not take within an election timeout (the core abandons it), it compacts as leader.
   */
  private compactionStep(): 'none' | 'compact' {
    const entries = this.applied - this.snapshotIndex;
    const bytes = this.logBytesSinceSnapshot;
    const l = this.limits;
    const due = (factor: number): boolean =>
      entries >= factor * l.snapshotEntriesMax ||
      bytes >= factor * l.snapshotLogBytes ||
      (entries >= factor * l.snapshotEntries && bytes >= factor * l.snapshotLogRatio * this.lastSnapshotBytes);
    const raft = this.raw.raft;
    if (raft.role !== 'leader') this.handedOff = false;
    if (!due(1)) return 'none';
    const handoffMs = this.options.snapshotHandoffMs ?? (raft.electionTicks * this.limits.tickMs) / 4;
    const slow = this.lastEncodeMs !== undefined && this.lastEncodeMs >= handoffMs;
    // A lone voter has no one to hand to.
    if (raft.role !== 'leader' || !slow || raft.conf.voters.length < 2) return 'compact';
    if (!due(leaderCompactionSlack) || raft.leadTransferee !== NONE) return 'none';
    if (!this.handedOff) {
      const to = this.upToDateVoter();
      if (to !== undefined && this.raw.transferLeadership(to).kind === 'started') {
        this.handedOff = true;
        this.counters.snapshotHandoffs++;
        this.log(`raft node ${this.id}: handing leadership to ${to} before a snapshot (the last encode held the event loop ${Math.round(this.lastEncodeMs ?? 0)} ms)`);
        return 'none';
      }
    }
    return 'compact';
  }

  /**
   * The voter other than this leader that is furthest along among those being replicated to
   * and heard from within the election timeout (the core catches it up before it hands over,
   * refusing proposals meanwhile); undefined when there is none.
   */
  private upToDateVoter(): NodeId | undefined {
    const raft = this.raw.raft;
    const heardSince = Date.now() - raft.electionTicks * this.limits.tickMs;
    let best: { id: NodeId; match: number } | undefined;
    for (const id of raft.conf.voters) {
      if (id === this.id) continue;
      const pr = raft.progress.get(id);
      if (pr === undefined || pr.state !== 'replicate' || (this.lastHeardMs.get(id) ?? 0) < heardSince) continue;
      if (best === undefined || pr.match > best.match) best = { id, match: pr.match };
    }
    return best?.id;
  }

  /**
   * Encodes the state machine (holding the event loop), then writes the snapshot and drops
   * the log it covers. Heartbeats and appends leave during the writes (`compacting`).
   */
  private async takeSnapshot(): Promise<void> {
    const started = performance.now();
    const data = encodeNodeSnapshot(this.options.stateMachine.snapshot(), this.sessions.entries(), this.learned);
    const encodeMs = performance.now() - started;
    const r = this.raw.compact(this.applied, data);
    // A snapshot from the leader is being installed: it replaces ours; try after it lands.
    if (r.kind === 'snapshot-pending') return;
    if (r.kind === 'already-compacted') {
      this.snapshotIndex = r.snapshotIndex;
      return;
    }
    this.compacting = true;
    try {
      // Snapshot durable first, then the log it covers goes (storage.ts explains why two writes).
      await this.storage.saveSnapshot(r.snapshot.meta, r.snapshot.data);
      await this.storage.compact(r.snapshot.meta.index + 1);
    } finally {
      this.compacting = false;
    }
    this.snapshotIndex = r.snapshot.meta.index;
    this.logBytesSinceSnapshot = 0;
    this.lastSnapshotBytes = data.byteLength;
    this.handedOff = false;
    this.counters.snapshotsTaken++;
    this.lastSnapshotMs = performance.now() - started;
    this.lastEncodeMs = encodeMs;
    this.options.observe?.snapshotTaken?.(this.lastSnapshotMs, data.byteLength, encodeMs);
  }

  /** A storage error or a refused apply: stop for good, and say so. Never retried, never ignored. */
  private fail(err: FatalError): void {
    if (this.fatal !== undefined) return;
    this.fatal = err;
    this.halt(fatalWhy(err), err);
    this.transportClosed = this.options.transport.close();
    this.onFatalError(err);
  }

  /** Stops stepping and ticking, and rejects everything pending with 'stopped'. */
  private halt(why: string, cause?: Error): void {
    this.stopping = true;
    if (this.timer !== undefined) clearInterval(this.timer);
    this.endLinger();
    this.timer = undefined;
    const options = cause === undefined ? undefined : { cause };
    const message = `raft node ${this.id} stopped: ${why}`;
    const err = (): ProposalError => new ProposalError('stopped', message, NONE, undefined, options);
    for (const p of this.proposals.values()) p.reject(unknownOutcome(err()));
    this.proposals.clear();
    for (const p of this.confApplied) p.reject(err());
    this.confApplied = [];
    for (const r of this.reads.values()) r.reject(err());
    this.reads.clear();
    this.notify();
    this.emitProgress();
  }

  // ---------------------------------------------------------------------------------------
  // Inputs: ticks, peers, the transport

  private onTick(): void {
    if (this.stopping) return;
    this.ticks++;
    this.raw.tick();
    this.foundingCampaignStep();
    this.expire();
    this.notify();
  }

  /**
   * A founder's next campaign, when due (foundingCampaignMs). Only from a follower or
   * pre-candidate: a candidate's election runs its course (a new campaign would only raise the
   * term again), and once a leader is known there is nothing left to do.
   */
  private foundingCampaignStep(): void {
    const c = this.foundingCampaign;
    if (c === undefined || this.ticks < c.next) return;
    const { role, lead } = this.raw.raft;
    if (role === 'leader' || lead !== NONE || this.ticks > c.until) {
      this.foundingCampaign = undefined;
      return;
    }
    c.next = this.ticks + c.every;
    if (role === 'follower' || role === 'pre-candidate') this.raw.campaign();
  }

  /** Rejects requests past their deadline. Maps keep insertion order, which is deadline order. */
  private expire(): void {
    for (const [index, p] of this.proposals) {
      if (p.deadlineTick > this.ticks) break;
      this.proposals.delete(index);
      this.counters.proposalsTimedOut++;
      p.reject(unknownOutcome(new ProposalError('timeout', `entry ${index} did not apply within ${this.limits.proposalTimeoutMs} ms (it may still apply)`)));
    }
    for (const [ctx, r] of this.reads) {
      if (r.deadlineTick > this.ticks) break;
      this.reads.delete(ctx);
      this.counters.readsTimedOut++;
      r.reject(new ProposalError('timeout', `read index not confirmed within ${this.limits.readTimeoutMs} ms`));
    }
  }

  /** When a message from each peer last arrived (wall clock; for status only). */
  private readonly lastHeardMs = new Map<NodeId, number>();
  /** Elections as status reports them (ElectionTimes), from the role and term each Ready leaves. */
  private readonly elections: { startedAtMs?: number; reason?: 'timeout' | 'leadership_transfer'; wonAtMs?: number; role: string; term: number; transferAsked: boolean } = { role: 'follower', term: 0, transferAsked: false };

  /** Notes an election begun or won since the last Ready (status only). */
  private noteElection(): void {
    const e = this.elections;
    const { role, term } = this.raw.raft;
    const campaigning = (r: string): boolean => r === 'pre-candidate' || r === 'candidate';
    // A campaign starts when a node leaves following, and again each new term it stands in.
    if (campaigning(role) && (!campaigning(e.role) || (role === 'candidate' && e.role === 'candidate' && term !== e.term))) {
      e.startedAtMs = Date.now();
      e.reason = e.transferAsked ? 'leadership_transfer' : 'timeout';
    }
    if (role === 'leader' && e.role !== 'leader') e.wonAtMs = Date.now();
    if (role !== e.role || term !== e.term) e.transferAsked = false;
    e.role = role;
    e.term = term;
  }

  private onMessage(m: Message): void {
    if (this.stopping) return;
    this.lastHeardMs.set(m.from, Date.now());
    // The leader hands over: the campaign this starts is a leadership transfer's.
    if (m.type === 'timeout-now') this.elections.transferAsked = true;
    this.raw.step(m);
    const lost = this.raw.raft.lostAcknowledged;
    if (lost !== undefined) {
      this.fail(
        new StorageCorruptError(
          'log',
          `the log ends at ${lost.lastIndex}, but leader ${lost.leader} knows this member acknowledged entries up to ${lost.commit}: ` +
            'its storage lost writes after syncing them. It stops rather than vote or acknowledge on a log it cannot trust; ' +
            'remove this member and add it back with an empty data folder',
          lost.lastIndex + 1,
        ),
      );
      return;
    }
    this.notify();
  }

  private onReport(r: TransportReport): void {
    if (this.stopping) return;
    if (r.kind === 'snapshot') {
      this.raw.reportSnapshot(r.to, r.ok);
      if (r.ok) this.snapshotFailures.delete(r.to);
      else this.logSnapshotFailure(r.to, r.reason);
    } else {
      this.raw.reportUnreachable(r.to);
    }
    this.notify();
  }

  /** Logs a snapshot `to` did not take, rate-limited per peer (snapshotFailureLogIntervalMs). */
  private logSnapshotFailure(to: NodeId, reason: string | undefined): void {
    const now = performance.now();
    const seen = this.snapshotFailures.get(to);
    if (seen !== undefined && now - seen.loggedAtMs < snapshotFailureLogIntervalMs) {
      seen.unlogged++;
      return;
    }
    const more = seen === undefined || seen.unlogged === 0 ? '' : ` (${seen.unlogged} more since the last report)`;
    this.log(`raft node ${this.id}: snapshot to ${to} failed: ${reason ?? 'no reason given'}${more}; it stays behind until one gets through`);
    this.snapshotFailures.set(to, { loggedAtMs: now, unlogged: 0 });
  }

  // ---------------------------------------------------------------------------------------
  // Client API

  /**
   * Proposes `data` as a normal entry (tagged with `client` for at-most-once). Resolves once
   * the entry is committed and applied on this node, with what the state machine returned.
   */
  propose(data: Uint8Array, client?: ClientTag, options: ProposeOptions = {}): Promise<ProposalOutcome> {
    // Checked on every member, leader or not, so a follower refuses it as the leader would.
    if (data.byteLength > this.limits.entryBytesMax) {
      return Promise.reject(new ProposalError('too-large', `an entry of ${data.byteLength} bytes is over the ${this.limits.entryBytesMax}-byte bound on one log entry`));
    }
    const refused = this.refuse(this.proposals.size, this.limits.proposalsPendingMax, 'proposals');
    if (refused !== undefined) return Promise.reject(refused);
    if (options.onlyAfter !== undefined && this.quiescentIndex() !== options.onlyAfter) {
      return Promise.reject(new ProposalError('dropped', `the log moved on from index ${options.onlyAfter}, which this proposal was written for; retry`));
    }
    return this.track(this.raw.propose(data, client), options.broadcastCommit === true);
  }

  /** Proposes a membership change; resolves once it applied here (and so is in force here). */
  proposeConfChange(cc: ConfChange): Promise<ConfChangeOutcome> {
    const refused = this.refuse(this.proposals.size, this.limits.proposalsPendingMax, 'proposals');
    if (refused !== undefined) return Promise.reject(refused);
    // The result of an applied conf change is the configuration then in force (settleConfChanges).
    return this.track(this.raw.proposeConfChange(cc)).then((o) => ({ index: o.index, conf: o.result as ConfState }));
  }

  /**
   * A linearizable read barrier: resolves with an index once the leader confirmed it and this
   * node applied it, so that a local read then reflects every write acknowledged before the
   * call. Works on followers (the leader is asked) and on the leader.
   */
  readIndex(): Promise<number> {
    const refused = this.refuse(this.reads.size, this.limits.readsPendingMax, 'reads');
    if (refused !== undefined) return Promise.reject(refused);
    const ctx = `${this.id}:${++this.readSeq}`;
    const r = this.raw.readIndex(ctx);
    if (r.kind === 'not-leader') return Promise.reject(this.notLeader(r.leaderHint));
    if (r.kind === 'dropped') return Promise.reject(new ProposalError('dropped', 'the leader has too many reads pending; retry'));
    return new Promise<number>((resolve, reject) => {
      const deadlineTick = this.ticks + ticksFor(this.limits.readTimeoutMs, this.limits.tickMs);
      this.reads.set(ctx, { deadlineTick, index: undefined, resolve, reject });
      this.notify();
    });
  }

  /** Asks the leader to hand leadership to `to`; the outcome shows in status() later. */
  transferLeadership(to: NodeId): TransferResult {
    if (this.stopping) return { kind: 'invalid', reason: `node ${this.id} is stopped` };
    const r = this.raw.transferLeadership(to);
    this.notify();
    return r;
  }

  /**
   * Calls `listener` after every handled Ready (role, leader, commit or applied index may have
   * changed), after a snapshot, and when the node stops. Returns the unsubscribe function.
   * For waiting on the node without polling; the listener must not throw.
   */
  onProgress(listener: () => void): () => void {
    this.progressListeners.add(listener);
    return () => this.progressListeners.delete(listener);
  }

  /** The Raft address of `id` (learned from the log, else configured). */
  addressOf(id: NodeId): string | undefined {
    return this.learned.get(id)?.address ?? this.options.peers.get(id);
  }

  /** The transport's connections with each peer (undefined: a transport without connections). */
  links(): ReadonlyMap<NodeId, PeerLinks> | undefined {
    return this.options.transport.links?.();
  }

  /** The client address a conf change gave for `id`, if one did. */
  clientAddressOf(id: NodeId): string | undefined {
    return this.learned.get(id)?.clientAddress;
  }

  /** The largest entry this node proposes (a larger one is refused 'too-large'). */
  get entryBytesMax(): number {
    return this.limits.entryBytesMax;
  }

  /** The other members (voters and learners) of this node's current configuration. */
  otherMembers(): NodeId[] {
    const conf = this.raw.raft.conf;
    return [...conf.voters, ...conf.learners].filter((id) => id !== this.id);
  }

  /**
   * The index this node has applied, when it leads and its log holds no entry it has not
   * applied: a proposal made in this same turn of the event loop is appended right after that
   * index, so if it is ever applied, it is applied to exactly the state there is now.
   * Undefined otherwise (the state it will meet is not known yet).
   */
  quiescentIndex(): number | undefined {
    if (this.stopping || this.raw.raft.role !== 'leader' || this.raw.raft.leadTransferee !== NONE) return undefined;
    return this.raw.raft.log.lastIndex() === this.applied ? this.applied : undefined;
  }

  /** The role and the leader as this node knows them: status() without its cost, for callers
   *  that ask on every commit. */
  leadership(): { readonly role: RaftNodeStatus['role']; readonly lead: NodeId } {
    return { role: this.raw.raft.role, lead: this.raw.raft.lead };
  }

  status(): RaftNodeStatus {
    const core = this.raw.status();
    const now = Date.now();
    const ids = new Set<NodeId>([...core.conf.voters, ...core.conf.learners, ...this.peerAddresses().keys()]);
    ids.delete(this.id);
    const peers: PeerStatus[] = [...ids].sort((a, b) => a - b).map((id) => {
      const heard = this.lastHeardMs.get(id);
      const pr = this.raw.raft.progress.get(id);
      const base = { id, address: this.addressOf(id), lastContactMsAgo: heard === undefined ? undefined : now - heard };
      return core.role !== 'leader' || pr === undefined ? base : { ...base, match: pr.match, next: pr.next, state: pr.state, learner: pr.isLearner };
    });
    const e = this.elections;
    return {
      ...core,
      tickMs: this.limits.tickMs,
      election: {
        ...(e.startedAtMs !== undefined ? { startedMsAgo: now - e.startedAtMs } : {}),
        ...(e.reason !== undefined ? { reason: e.reason } : {}),
        ...(e.wonAtMs !== undefined ? { wonMsAgo: now - e.wonAtMs } : {}),
      },
      peers,
      appliedIndex: this.applied,
      snapshotIndex: this.snapshotIndex,
      logBytesSinceSnapshot: this.logBytesSinceSnapshot,
      lastSnapshotMs: this.lastSnapshotMs,
      proposalsPending: this.proposals.size,
      readsPending: this.reads.size,
      counters: { ...this.counters },
      raftCounters: { ...this.raw.raft.counters },
      transport: this.options.transport.stats(),
      fatalError: this.fatalError,
    };
  }

  /**
   * Stops the timer and the loop (after the Ready in hand is finished), rejects everything
   * pending with 'stopped', closes the transport and the storage. Idempotent.
   */
  stop(): Promise<void> {
    this.stopped ??= this.shutdown();
    return this.stopped;
  }

  private async shutdown(): Promise<void> {
    if (!this.stopping) this.halt('stop() was called');
    await this.loopDone;
    await (this.transportClosed ?? this.options.transport.close());
    await this.storage.close();
  }

  private refuse(pending: number, max: number, what: string): ProposalError | undefined {
    if (this.stopping) {
      const why = this.fatalError === undefined ? 'stopped' : `stopped: ${fatalWhy(this.fatalError)}`;
      return new ProposalError('stopped', `raft node ${this.id} is ${why}`);
    }
    if (pending >= max) {
      if (what === 'proposals') this.counters.proposalsRejected++;
      return new ProposalError('dropped', `raft node ${this.id} has ${pending} ${what} pending (limit ${max}); retry later`);
    }
    return undefined;
  }

  private notLeader(hint: NodeId): ProposalError {
    const address = hint === NONE ? undefined : this.addressOf(hint);
    const where =
      hint === NONE ? 'no leader is known yet; retry' : `the leader is node ${hint} (${address ?? 'address unknown'})`;
    return new ProposalError('not-leader', `raft node ${this.id} is not the leader: ${where}`, hint, address);
  }

  /** Turns the core's answer into a promise settled when the entry applies (or fails). */
  private track(r: ProposeResult, broadcastCommit = false): Promise<ProposalOutcome> {
    switch (r.kind) {
      case 'not-leader':
        this.counters.proposalsRejected++;
        return Promise.reject(this.notLeader(r.leaderHint));
      case 'dropped': {
        this.counters.proposalsRejected++;
        const detail = r.detail === undefined ? '' : ` (${r.detail})`;
        return Promise.reject(new ProposalError('dropped', `proposal dropped by the leader: ${r.reason}${detail}`));
      }
      case 'accepted': {
        this.counters.proposalsAccepted++;
        // A pending proposal at the same index belongs to an earlier term whose entry this
        // leader's log has now overwritten.
        const old = this.proposals.get(r.index);
        if (old !== undefined) {
          this.proposals.delete(r.index);
          const why = `entry ${r.index} of term ${old.term} was overwritten by term ${r.term}; retry`;
          old.reject(new ProposalError('dropped', why));
        }
        return new Promise<ProposalOutcome>((resolve, reject) => {
          const deadlineTick = this.ticks + ticksFor(this.limits.proposalTimeoutMs, this.limits.tickMs);
          const settle = (result: unknown): void => resolve({ index: r.index, result });
          this.proposals.set(r.index, { term: r.term, deadlineTick, proposedAt: performance.now(), broadcastCommit, resolve: settle, reject });
          this.notify();
        });
      }
    }
  }
}
