// The Raft state machine: a pure step function over ticks, peer messages and local requests.
// It performs no I/O and reads no clock; its only randomness is the seeded PRNG that spreads
// election timeouts. Outputs accumulate in `msgs`, `readStates` and the log's unstable part,
// and raw-node.ts hands them to the shell as a Ready.
//
// The protocol follows the Raft thesis and etcd-io/raft: pre-vote (§9.6), check-quorum and the
// leader lease on votes (§6.2, §9.6), leadership transfer (§3.10), ReadIndex (§6.4),
// single-server membership changes applied when committed entries are applied (§4.1), fast
// log back-off by term, and per-follower flow control (probe / replicate / snapshot).

import assert from 'node:assert';
import {
  applyConfChange,
  decodeConfChange,
  emptyConfState,
  encodeConfChange,
  type ConfChange,
} from './conf-change.js';
import { resolveConfig, type RaftConfig, type ResolvedConfig } from './config.js';
import { RaftLog } from './log.js';
import { Prng } from './prng.js';
import { Progress } from './progress.js';
import { committedIndex, isQuorum, voteResult } from './quorum.js';
import { ReadOnly } from './read-only.js';
import {
  NONE,
  entryBytes,
  type ClientTag,
  type ConfState,
  type Entry,
  type EntryType,
  type HardState,
  type Message,
  type MessageBody,
  type NodeId,
  type PersistedState,
  type ReadState,
  type Role,
  type Snapshot,
  type SnapshotMeta,
} from './types.js';

export type ProposeResult =
  | { readonly kind: 'accepted'; readonly index: number; readonly term: number }
  | { readonly kind: 'not-leader'; readonly leaderHint: NodeId }
  | {
      readonly kind: 'dropped';
      readonly reason: 'transferring' | 'conf-change-pending' | 'invalid-conf-change' | 'uncommitted-limit';
      readonly detail?: string;
    };

export type ReadIndexResult =
  | { readonly kind: 'accepted' }
  | { readonly kind: 'not-leader'; readonly leaderHint: NodeId }
  | { readonly kind: 'dropped'; readonly reason: 'queue-full' };

export type TransferResult =
  | { readonly kind: 'started' }
  | { readonly kind: 'not-leader'; readonly leaderHint: NodeId }
  | { readonly kind: 'invalid'; readonly reason: string };

export type CompactResult =
  | { readonly kind: 'compacted'; readonly snapshot: Snapshot }
  | { readonly kind: 'already-compacted'; readonly snapshotIndex: number }
  /** A snapshot from the leader is being installed; try again after the next advance(). */
  | { readonly kind: 'snapshot-pending' };

type CampaignKind = 'pre-election' | 'election' | 'transfer';

/** Things a node counts instead of failing on: the shell may export them as metrics. */
export interface RaftCounters {
  droppedForeignCluster: number;
  droppedMisaddressed: number;
  droppedStaleTerm: number;
  invalidConfChanges: number;
  /** Acknowledgements of entries beyond the leader's log, ignored (see handleAppendResponse). */
  droppedBeyondLog: number;
}

export class Raft {
  readonly id: NodeId;
  readonly clusterId: string;
  readonly cfg: ResolvedConfig;
  term = 0;
  vote: NodeId = NONE;
  lead: NodeId = NONE;
  role: Role = 'follower';
  readonly log: RaftLog;

  /** The configuration as of `confIndex` (the last conf change this node applied). */
  conf: ConfState;
  private confIndex: number;
  /** Applied configurations by index, so that a snapshot at an older index gets its own. */
  private confHistory: { index: number; conf: ConfState }[];

  readonly progress = new Map<NodeId, Progress>();
  private readonly votes = new Map<NodeId, boolean>();
  msgs: Message[] = [];
  readStates: ReadState[] = [];

  electionTicks: number;
  private electionElapsed = 0;
  private heartbeatElapsed = 0;
  private randomizedElectionTimeout = 0;
  leadTransferee: NodeId = NONE;
  /** A new conf change may be proposed only once `applied` reaches this index. */
  private pendingConfIndex = 0;
  private readonly readOnly: ReadOnly;
  /** Reads that arrived before this leader committed an entry of its term. */
  private pendingReads: { from: NodeId; ctx: string }[] = [];
  /** Proposals since the last broadcast: sent together at the next Ready (batching). */
  broadcastPending = false;
  /**
   * The commit index moved since the last broadcast: followers learn it from the next append.
   * The next Ready carrying no committed entries sends it (raw-node.ts), unless appends of new
   * proposals carry it first: the entries this leader applies in between settle proposals
   * whose callers often propose again at once, so one append tells a follower both.
   */
  commitBroadcastPending = false;
  private readonly rng: Prng;
  /**
   * Set when a leader's heartbeat named a commit index beyond this log: this node's storage
   * lost entries it had synced and acknowledged (a disk that lied about a sync, a log file
   * cut short). Raft's promises rest on that disk, so the shell must stop the node; the
   * member is then replaced by one with an empty data folder.
   */
  lostAcknowledged: { readonly leader: NodeId; readonly commit: number; readonly lastIndex: number } | undefined;
  readonly counters: RaftCounters = {
    droppedForeignCluster: 0,
    droppedMisaddressed: 0,
    droppedStaleTerm: 0,
    invalidConfChanges: 0,
    droppedBeyondLog: 0,
  };

  constructor(config: RaftConfig, stored: PersistedState) {
    this.cfg = resolveConfig(config);
    this.id = this.cfg.id;
    this.clusterId = this.cfg.clusterId;
    this.rng = new Prng(this.cfg.seed);
    this.readOnly = new ReadOnly(this.cfg.readIndexPendingMax);
    const snapshot: Snapshot = stored.snapshot ?? {
      meta: { index: 0, term: 0, conf: emptyConfState },
      data: new Uint8Array(0),
    };
    this.log = new RaftLog(snapshot, stored.entries, stored.hardState.commit);
    this.term = stored.hardState.term;
    this.vote = stored.hardState.vote;
    this.conf = snapshot.meta.conf;
    this.confIndex = snapshot.meta.index;
    this.confHistory = [{ index: snapshot.meta.index, conf: this.conf }];
    this.electionTicks = this.conf.electionTicks ?? this.cfg.electionTicks;
    // Committed conf changes take effect as they are applied; on restart every committed one
    // is known to be durable and committed, so the node starts with them in force rather than
    // waiting for the shell to replay them (it still receives them as committed entries).
    for (const e of this.log.slice(this.log.firstIndex(), this.log.committed + 1)) {
      if (e.type === 'conf-change') this.applyConfChangeEntry(e);
    }
    this.becomeFollower(this.term, NONE);
  }

  // ---------------------------------------------------------------------------------------
  // Inputs

  tick(): void {
    if (this.role === 'leader') this.tickHeartbeat();
    else this.tickElection();
  }

  private tickElection(): void {
    this.electionElapsed++;
    if (this.promotable() && this.electionElapsed >= this.randomizedElectionTimeout) {
      this.electionElapsed = 0;
      this.hup(this.cfg.preVote ? 'pre-election' : 'election');
    }
  }

  private tickHeartbeat(): void {
    this.heartbeatElapsed++;
    this.electionElapsed++;
    for (const [id, pr] of this.progress) {
      if (id === this.id || pr.state !== 'snapshot') continue;
      // A snapshot that was lost or refused is retried after an election timeout.
      if (++pr.snapshotElapsedTicks >= this.electionTicks) pr.becomeProbe();
    }
    if (this.electionElapsed >= this.electionTicks) {
      this.electionElapsed = 0;
      if (this.cfg.checkQuorum) {
        const active = isQuorum(this.conf.voters, (id) => id === this.id || this.progress.get(id)?.recentActive === true);
        for (const [id, pr] of this.progress) if (id !== this.id) pr.recentActive = false;
        if (!active) {
          this.becomeFollower(this.term, NONE);
          return;
        }
      }
      if (this.leadTransferee !== NONE) this.abortLeaderTransfer();
    }
    if (this.heartbeatElapsed >= this.cfg.heartbeatTicks) {
      this.heartbeatElapsed = 0;
      this.bcastHeartbeat(this.readOnly.lastSeq());
    }
  }

  /** Starts an election now (the shell's "campaign" command, or tests). */
  campaign(): void {
    this.hup(this.cfg.preVote ? 'pre-election' : 'election');
  }

  propose(type: EntryType, data: Uint8Array, client?: ClientTag): ProposeResult {
    if (this.role !== 'leader') return { kind: 'not-leader', leaderHint: this.lead };
    if (this.leadTransferee !== NONE) return { kind: 'dropped', reason: 'transferring' };
    if (this.log.lastIndex() - this.log.committed >= this.cfg.uncommittedEntriesMax) {
      return { kind: 'dropped', reason: 'uncommitted-limit' };
    }
    if (type === 'conf-change') {
      if (this.pendingConfIndex > this.log.applied) return { kind: 'dropped', reason: 'conf-change-pending' };
      const check = applyConfChange(this.conf, decodeConfChange(data), this.cfg.heartbeatTicks);
      if (!check.ok) return { kind: 'dropped', reason: 'invalid-conf-change', detail: check.reason };
    }
    const index = this.log.lastIndex() + 1;
    const entry: Entry = client === undefined
      ? { term: this.term, index, type, data }
      : { term: this.term, index, type, data, client };
    this.log.append([entry]);
    if (type === 'conf-change') this.pendingConfIndex = index;
    this.broadcastPending = true;
    return { kind: 'accepted', index, term: this.term };
  }

  proposeConfChange(cc: ConfChange): ProposeResult {
    return this.propose('conf-change', encodeConfChange(cc));
  }

  readIndex(ctx: string): ReadIndexResult {
    if (this.role === 'leader') {
      return this.handleReadIndex(this.id, ctx) ? { kind: 'accepted' } : { kind: 'dropped', reason: 'queue-full' };
    }
    if (this.lead === NONE) return { kind: 'not-leader', leaderHint: NONE };
    this.send(this.lead, { type: 'read-index', ctx });
    return { kind: 'accepted' };
  }

  transferLeadership(to: NodeId): TransferResult {
    if (this.role !== 'leader') return { kind: 'not-leader', leaderHint: this.lead };
    if (to === this.id) return { kind: 'invalid', reason: 'already the leader' };
    const pr = this.progress.get(to);
    if (pr === undefined || pr.isLearner) return { kind: 'invalid', reason: `node ${to} is not a voter` };
    if (this.leadTransferee === to) return { kind: 'started' };
    if (this.leadTransferee !== NONE) this.abortLeaderTransfer();
    // The transfer must finish within one election timeout or it is abandoned.
    this.electionElapsed = 0;
    this.leadTransferee = to;
    if (pr.match === this.log.lastIndex()) this.send(to, { type: 'timeout-now' });
    else this.sendAppend(to);
    return { kind: 'started' };
  }

  /** The transport reports whether a snapshot reached `id`. */
  reportSnapshot(id: NodeId, ok: boolean): void {
    const pr = this.progress.get(id);
    if (this.role !== 'leader' || pr === undefined || pr.state !== 'snapshot') return;
    if (!ok) pr.pendingSnapshot = 0;
    // Wait for the follower's answer (or the next heartbeat) before sending more.
    pr.becomeProbe();
    pr.probeSent = true;
  }

  /** The transport failed to reach `id`: fall back to probing. */
  reportUnreachable(id: NodeId): void {
    const pr = this.progress.get(id);
    if (this.role === 'leader' && pr !== undefined && pr.state === 'replicate') pr.becomeProbe();
  }

  /** Captures the state machine's image at applied `index` and drops the log before it. */
  compact(index: number, data: Uint8Array): CompactResult {
    if (this.log.pendingSnapshot() !== undefined) return { kind: 'snapshot-pending' };
    const current = this.log.latestSnapshot().meta.index;
    if (index <= current) return { kind: 'already-compacted', snapshotIndex: current };
    const term = this.log.term(index);
    assert(term !== undefined, `compact: no entry at ${index}`);
    const meta: SnapshotMeta = { index, term, conf: this.confAt(index) };
    this.log.compact(meta, data);
    while (this.confHistory.length > 1 && (this.confHistory[1] as { index: number }).index <= index) {
      this.confHistory.shift();
    }
    return { kind: 'compacted', snapshot: { meta, data } };
  }

  private confAt(index: number): ConfState {
    let conf: ConfState | undefined;
    for (const h of this.confHistory) if (h.index <= index) conf = h.conf;
    assert(conf !== undefined, `no configuration known at ${index}`);
    return conf;
  }

  step(m: Message): void {
    if (m.clusterId !== this.clusterId) {
      this.counters.droppedForeignCluster++;
      return;
    }
    if (m.to !== this.id) {
      this.counters.droppedMisaddressed++;
      return;
    }
    if (m.term > this.term) {
      if (m.type === 'vote' || m.type === 'pre-vote') {
        // Leader lease: a node that heard from a live leader within the election timeout
        // ignores campaigns, so a partitioned node rejoining cannot depose a healthy leader.
        const inLease = this.cfg.checkQuorum && this.lead !== NONE && this.electionElapsed < this.electionTicks;
        if (!m.transfer && inLease) return;
      }
      if (m.type === 'pre-vote') {
        // A pre-vote does not change our term.
      } else if (m.type === 'pre-vote-resp' && !m.reject) {
        // A granted pre-vote carries the future term; we bump it when we campaign.
      } else if (m.type === 'app' || m.type === 'heartbeat' || m.type === 'snap') {
        this.becomeFollower(m.term, m.from);
      } else {
        this.becomeFollower(m.term, NONE);
      }
    } else if (m.term < this.term) {
      if ((this.cfg.checkQuorum || this.cfg.preVote) && (m.type === 'heartbeat' || m.type === 'app')) {
        // A stale leader may be cut off: tell it our term so it steps down. Without this, a
        // node with a higher term could never win (pre-vote and leases stop it) nor be heard.
        this.send(m.from, { type: 'app-resp', index: 0, reject: false, rejectHint: 0, logTerm: 0 });
      } else if (m.type === 'pre-vote') {
        this.send(m.from, { type: 'pre-vote-resp', reject: true });
      } else {
        this.counters.droppedStaleTerm++;
      }
      return;
    }

    if (m.type === 'vote' || m.type === 'pre-vote') {
      this.handleVoteRequest(m);
      return;
    }
    switch (this.role) {
      case 'leader':
        this.stepLeader(m);
        break;
      case 'candidate':
      case 'pre-candidate':
        this.stepCandidate(m);
        break;
      case 'follower':
        this.stepFollower(m);
        break;
    }
  }

  private handleVoteRequest(m: Message & { type: 'vote' | 'pre-vote' }): void {
    const canVote =
      this.vote === m.from ||
      (this.vote === NONE && this.lead === NONE) ||
      (m.type === 'pre-vote' && m.term > this.term);
    const respType = m.type === 'vote' ? 'vote-resp' : 'pre-vote-resp';
    if (canVote && this.log.isUpToDate(m.index, m.logTerm)) {
      // The grant carries the candidate's term: a pre-vote grant is for the term it will use.
      this.send(m.from, { type: respType, reject: false }, m.term);
      if (m.type === 'vote') {
        this.electionElapsed = 0;
        this.vote = m.from;
      }
    } else {
      this.send(m.from, { type: respType, reject: true });
    }
  }

  private stepLeader(m: Message): void {
    switch (m.type) {
      case 'app-resp':
        this.handleAppendResponse(m);
        break;
      case 'heartbeat-resp':
        this.handleHeartbeatResponse(m);
        break;
      case 'read-index':
        this.handleReadIndex(m.from, m.ctx);
        break;
      default:
        break;
    }
  }

  private stepCandidate(m: Message): void {
    const myResp = this.role === 'pre-candidate' ? 'pre-vote-resp' : 'vote-resp';
    switch (m.type) {
      case 'app':
        this.becomeFollower(m.term, m.from);
        this.handleAppend(m);
        break;
      case 'heartbeat':
        this.becomeFollower(m.term, m.from);
        this.handleHeartbeat(m);
        break;
      case 'snap':
        this.becomeFollower(m.term, m.from);
        this.handleSnapshot(m);
        break;
      case 'vote-resp':
      case 'pre-vote-resp': {
        if (m.type !== myResp) break;
        const result = this.poll(m.from, !m.reject);
        if (result === 'won') {
          if (this.role === 'pre-candidate') this.campaign1('election');
          else {
            this.becomeLeader();
            this.bcastAppend();
          }
        } else if (result === 'lost') {
          this.becomeFollower(this.term, NONE);
        }
        break;
      }
      default:
        break;
    }
  }

  private stepFollower(m: Message): void {
    switch (m.type) {
      case 'app':
        this.electionElapsed = 0;
        this.lead = m.from;
        this.handleAppend(m);
        break;
      case 'heartbeat':
        this.electionElapsed = 0;
        this.lead = m.from;
        this.handleHeartbeat(m);
        break;
      case 'snap':
        this.electionElapsed = 0;
        this.lead = m.from;
        this.handleSnapshot(m);
        break;
      case 'timeout-now':
        // Campaign at once, skipping pre-vote: the leader asked us to take over.
        this.hup('transfer');
        break;
      case 'read-index-resp':
        this.readStates.push({ index: m.index, ctx: m.ctx });
        break;
      default:
        break;
    }
  }

  // ---------------------------------------------------------------------------------------
  // Elections

  private promotable(): boolean {
    return this.conf.voters.includes(this.id) && this.log.pendingSnapshot() === undefined;
  }

  private hup(kind: CampaignKind): void {
    if (this.role === 'leader' || !this.promotable()) return;
    // A committed but unapplied conf change could remove us or change the quorum.
    for (const e of this.log.nextCommittedEntries(Number.MAX_SAFE_INTEGER)) {
      if (e.type === 'conf-change' && e.index > this.confIndex) return;
    }
    this.campaign1(kind);
  }

  private campaign1(kind: CampaignKind): void {
    let voteTerm: number;
    if (kind === 'pre-election') {
      this.becomePreCandidate();
      voteTerm = this.term + 1;
    } else {
      this.becomeCandidate();
      voteTerm = this.term;
    }
    if (this.poll(this.id, true) === 'won') {
      // A single voter wins at once.
      if (kind === 'pre-election') this.campaign1('election');
      else this.becomeLeader();
      return;
    }
    const type = kind === 'pre-election' ? 'pre-vote' : 'vote';
    for (const id of this.conf.voters) {
      if (id === this.id) continue;
      this.send(
        id,
        { type, index: this.log.lastIndex(), logTerm: this.log.lastTerm(), transfer: kind === 'transfer' },
        voteTerm,
      );
    }
  }

  private poll(id: NodeId, granted: boolean): 'won' | 'lost' | 'pending' {
    if (!this.votes.has(id)) this.votes.set(id, granted);
    return voteResult(this.conf.voters, this.votes);
  }

  private reset(term: number): void {
    if (this.term !== term) {
      assert(term > this.term, `term regresses from ${this.term} to ${term}`);
      this.term = term;
      this.vote = NONE;
    }
    this.lead = NONE;
    this.electionElapsed = 0;
    this.heartbeatElapsed = 0;
    this.randomizedElectionTimeout = this.electionTicks + this.rng.nextInt(this.electionTicks);
    this.leadTransferee = NONE;
    this.votes.clear();
    this.progress.clear();
    this.readOnly.reset();
    this.pendingReads = [];
    this.broadcastPending = false;
    this.commitBroadcastPending = false;
  }

  private becomeFollower(term: number, lead: NodeId): void {
    this.reset(term);
    this.lead = lead;
    this.role = 'follower';
  }

  private becomePreCandidate(): void {
    assert(this.role !== 'leader', 'leader cannot become pre-candidate');
    this.votes.clear();
    this.lead = NONE;
    this.role = 'pre-candidate';
  }

  private becomeCandidate(): void {
    assert(this.role !== 'leader', 'leader cannot become candidate');
    this.reset(this.term + 1);
    this.vote = this.id;
    this.role = 'candidate';
  }

  private becomeLeader(): void {
    assert(this.role === 'candidate', `${this.role} cannot become leader`);
    this.reset(this.term);
    this.lead = this.id;
    this.role = 'leader';
    this.syncProgress();
    // Our own match is what is durable; it grows as the shell reports persistence.
    const self = this.progress.get(this.id);
    assert(self !== undefined, 'leader is not in its own configuration');
    self.match = this.log.persistedIndex();
    self.becomeReplicate();
    self.recentActive = true;
    // The empty entry commits the previous terms' entries (they cannot be counted directly),
    // and no conf change may be proposed until it is applied (single-server change fix).
    const index = this.log.lastIndex() + 1;
    this.log.append([{ term: this.term, index, type: 'empty', data: new Uint8Array(0) }]);
    this.pendingConfIndex = index;
  }

  /** Makes the progress map match the configuration (leader only). */
  private syncProgress(): void {
    const members = new Set([...this.conf.voters, ...this.conf.learners]);
    for (const id of [...this.progress.keys()]) if (!members.has(id)) this.progress.delete(id);
    for (const id of members) {
      const isLearner = this.conf.learners.includes(id);
      const pr = this.progress.get(id);
      if (pr !== undefined) {
        pr.isLearner = isLearner;
        continue;
      }
      const fresh = new Progress(this.log.lastIndex() + 1, isLearner, this.cfg.inflightMsgsMax, this.cfg.inflightBytesMax);
      // A new member counts as active so that adding it cannot make check-quorum fail at once.
      fresh.recentActive = true;
      this.progress.set(id, fresh);
    }
  }

  // ---------------------------------------------------------------------------------------
  // Replication (leader side)

  private send(to: NodeId, body: MessageBody, term: number = this.term): void {
    assert(to !== this.id, `sending ${body.type} to self`);
    this.msgs.push({ clusterId: this.clusterId, from: this.id, to, term, ...body });
  }

  /** Sends the next append (or snapshot) to `to` unless its flow is paused. */
  /**
   * Sends `to` the entries it lacks. With none to send, `empty` says whether a bare append
   * (a probe, or news of the commit index) goes anyway: 'send' always, 'skip' never, and
   * 'if-news' only when it can move the follower's commit index (see the broadcast).
   */
  private sendAppend(to: NodeId, empty: 'send' | 'skip' | 'if-news' = 'send'): boolean {
    const pr = this.progress.get(to);
    if (pr === undefined || pr.isPaused()) return false;
    const prevIndex = pr.next - 1;
    const prevTerm = this.log.term(prevIndex);
    if (prevTerm === undefined) return this.sendSnapshot(to, pr);
    const entries = this.log.slice(
      pr.next,
      this.log.lastIndex() + 1,
      this.cfg.entriesPerMessageMax,
      this.cfg.bytesPerMessageMax,
    );
    const commit = this.log.committed;
    if (entries.length === 0) {
      if (empty === 'skip') return false;
      if (empty === 'if-news' && pr.state === 'replicate' && !pr.canBumpCommit(commit)) return false;
    }
    this.send(to, { type: 'app', index: prevIndex, logTerm: prevTerm, entries, commit });
    let bytes = 0;
    for (const e of entries) bytes += entryBytes(e);
    pr.sentEntries(entries.length, prevIndex + entries.length, bytes, commit);
    return true;
  }

  private sendSnapshot(to: NodeId, pr: Progress): boolean {
    // An unresponsive follower is not worth a (large) snapshot until it answers again.
    if (!pr.recentActive) return false;
    const snapshot = this.log.latestSnapshot();
    assert(snapshot.meta.index > 0, 'a compacted log implies a snapshot');
    this.send(to, { type: 'snap', snapshot });
    pr.becomeSnapshot(snapshot.meta.index);
    return true;
  }

  /** Sends every follower what it lacks and the commit index (an empty append if need be). */
  bcastAppend(): void {
    this.broadcastPending = false;
    this.commitBroadcastPending = false;
    // A follower being replicated to whose entries sent so far are all covered by the commit
    // index it was sent learns nothing from a bare append. Such appends were about one in
    // twelve of a busy leader's appends in bench/raft: a follower that acknowledged first got
    // the next entries at once (handleAppendResp), then an empty append from the broadcast
    // that sent them to the others.
    // Probes and appends answering a heartbeat response still go bare: those find lost ones.
    for (const id of this.progress.keys()) if (id !== this.id) this.sendAppend(id, 'if-news');
  }

  private bcastHeartbeat(readSeq: number): void {
    for (const [id, pr] of this.progress) {
      if (id === this.id) continue;
      // Never tell a follower to commit beyond what it is known to hold.
      this.send(id, { type: 'heartbeat', commit: Math.min(pr.match, this.log.committed), readSeq });
    }
  }

  private maybeCommit(): boolean {
    const index = committedIndex(this.conf.voters, (id) => this.progress.get(id)?.match ?? 0);
    // Only entries of the current term are committed by counting replicas (Raft §5.4.2,
    // the figure 8 case); earlier ones commit with them.
    const committed = this.log.maybeCommit(index, this.term);
    if (committed && this.pendingReads.length > 0 && this.log.term(this.log.committed) === this.term) {
      const reads = this.pendingReads;
      this.pendingReads = [];
      for (const r of reads) this.handleReadIndex(r.from, r.ctx);
    }
    return committed;
  }

  private handleAppendResponse(m: Message & { type: 'app-resp' }): void {
    const pr = this.progress.get(m.from);
    if (pr === undefined) return;
    pr.recentActive = true;
    if (m.reject) {
      // Skip every entry of a term the follower cannot have (fast back-off by term).
      let nextProbe = m.rejectHint;
      if (m.logTerm > 0) nextProbe = this.log.findConflictByTerm(m.rejectHint, m.logTerm).index;
      if (pr.maybeDecrTo(m.index, nextProbe)) {
        if (pr.state === 'replicate') pr.becomeProbe();
        this.sendAppend(m.from);
      }
      return;
    }
    if (m.index > this.log.lastIndex()) {
      // No member of this cluster holds an entry its leader lacks: it acknowledges what the
      // leader sent, its commit index, or the leader's snapshot, all within this log (Leader
      // Completeness). One that claims more holds another cluster's log under this cluster's id
      // (say a folder of another cluster started in its place): counting it toward a commit
      // would be unsafe, and no entry exists to send it.
      this.counters.droppedBeyondLog++;
      return;
    }
    const oldPaused = pr.isPaused();
    if (pr.maybeUpdate(m.index) || (pr.match === m.index && pr.state === 'probe')) {
      if (pr.state === 'probe') pr.becomeReplicate();
      else if (pr.state === 'snapshot' && pr.match + 1 >= this.log.firstIndex()) {
        pr.becomeProbe();
        pr.becomeReplicate();
      } else if (pr.state === 'replicate') pr.inflights.freeLE(m.index);

      if (this.maybeCommit()) this.commitBroadcastPending = true;
      if (oldPaused || pr.state === 'replicate') {
        // Keep the pipeline full: send whatever the follower does not have yet.
        while (this.sendAppend(m.from, 'skip')) {
          if (pr.state !== 'replicate') break;
        }
      }
      if (m.from === this.leadTransferee && pr.match === this.log.lastIndex()) {
        this.send(m.from, { type: 'timeout-now' });
      }
    }
  }

  private handleHeartbeatResponse(m: Message & { type: 'heartbeat-resp' }): void {
    const pr = this.progress.get(m.from);
    if (pr === undefined) return;
    pr.recentActive = true;
    pr.probeSent = false;
    // Lost appends would otherwise fill the window forever; a live follower frees one slot.
    if (pr.state === 'replicate' && pr.inflights.full()) pr.inflights.freeFirstOne();
    if (pr.match < this.log.lastIndex()) this.sendAppend(m.from);
    if (m.readSeq === 0 || pr.isLearner) return;
    const acks = this.readOnly.recvAck(m.from, m.readSeq);
    if (acks === undefined || !isQuorum(this.conf.voters, (id) => acks.has(id))) return;
    for (const r of this.readOnly.release(m.readSeq)) this.answerRead(r.from, r.index, r.ctx);
  }

  /** Returns false when the request had to be dropped. */
  private handleReadIndex(from: NodeId, ctx: string): boolean {
    if (this.conf.voters.length === 1 && this.conf.voters[0] === this.id) {
      this.answerRead(from, this.log.committed, ctx);
      return true;
    }
    // Our commit index is only known to be current once an entry of our term is committed.
    if (this.log.term(this.log.committed) !== this.term) {
      if (this.pendingReads.length >= this.cfg.readIndexPendingMax) return false;
      this.pendingReads.push({ from, ctx });
      return true;
    }
    if (this.readOnly.full()) return false;
    const seq = this.readOnly.add(this.log.committed, ctx, from, this.id);
    this.bcastHeartbeat(seq);
    return true;
  }

  private answerRead(from: NodeId, index: number, ctx: string): void {
    if (from === this.id) this.readStates.push({ index, ctx });
    else this.send(from, { type: 'read-index-resp', index, ctx });
  }

  private abortLeaderTransfer(): void {
    this.leadTransferee = NONE;
  }

  // ---------------------------------------------------------------------------------------
  // Replication (follower side)

  private handleAppend(m: Message & { type: 'app' }): void {
    if (m.index < this.log.committed) {
      this.send(m.from, { type: 'app-resp', index: this.log.committed, reject: false, rejectHint: 0, logTerm: 0 });
      return;
    }
    const lastNew = this.log.maybeAppend(m.index, m.logTerm, m.commit, m.entries);
    if (lastNew !== undefined) {
      this.send(m.from, { type: 'app-resp', index: lastNew, reject: false, rejectHint: 0, logTerm: 0 });
      return;
    }
    // Tell the leader our last entry that could match, with its term, so that it can skip
    // past every entry of terms we do not have.
    const hint = this.log.findConflictByTerm(Math.min(m.index, this.log.lastIndex()), m.logTerm);
    this.send(m.from, { type: 'app-resp', index: m.index, reject: true, rejectHint: hint.index, logTerm: hint.term });
  }

  private handleHeartbeat(m: Message & { type: 'heartbeat' }): void {
    if (m.commit > this.log.lastIndex()) {
      // The leader names only what this node acknowledged holding (min(match, commit)), so
      // the storage lost entries after acknowledging them. Nothing this node says can be
      // trusted any more: it answers nothing, and the shell must stop it.
      this.lostAcknowledged ??= { leader: m.from, commit: m.commit, lastIndex: this.log.lastIndex() };
      return;
    }
    this.log.commitTo(m.commit);
    this.send(m.from, { type: 'heartbeat-resp', readSeq: m.readSeq });
  }

  private handleSnapshot(m: Message & { type: 'snap' }): void {
    const index = this.restore(m.snapshot) ? this.log.lastIndex() : this.log.committed;
    this.send(m.from, { type: 'app-resp', index, reject: false, rejectHint: 0, logTerm: 0 });
  }

  private restore(snapshot: Snapshot): boolean {
    const meta = snapshot.meta;
    if (meta.index <= this.log.committed) return false;
    if (this.log.matchTerm(meta.index, meta.term)) {
      // We already hold the snapshot's last entry: just fast-forward the commit index.
      this.log.commitTo(meta.index);
      return false;
    }
    this.log.restore(snapshot);
    this.conf = meta.conf;
    this.confIndex = meta.index;
    this.confHistory = [{ index: meta.index, conf: meta.conf }];
    this.setElectionTicks(meta.conf.electionTicks ?? this.cfg.electionTicks);
    return true;
  }

  // ---------------------------------------------------------------------------------------
  // Persistence and application reports (from the shell via raw-node)

  /** The shell made the log durable through `index` (term `term`). */
  persisted(index: number, term: number): void {
    this.log.stableTo(index, term);
    if (this.role !== 'leader') return;
    const self = this.progress.get(this.id);
    if (self !== undefined && self.maybeUpdate(this.log.persistedIndex()) && this.maybeCommit()) this.commitBroadcastPending = true;
  }

  /** The shell applied committed entries through `index`; conf changes among them take effect. */
  applied(entries: readonly Entry[]): void {
    const last = entries.at(-1);
    if (last === undefined) return;
    for (const e of entries) {
      if (e.type === 'conf-change' && e.index > this.confIndex) this.applyConfChangeEntry(e);
    }
    this.log.appliedTo(last.index);
  }

  private applyConfChangeEntry(e: Entry): void {
    this.confIndex = e.index;
    const result = applyConfChange(this.conf, decodeConfChange(e.data), this.cfg.heartbeatTicks);
    if (!result.ok) {
      this.counters.invalidConfChanges++;
      return;
    }
    this.conf = result.conf;
    this.confHistory.push({ index: e.index, conf: result.conf });
    this.setElectionTicks(result.conf.electionTicks ?? this.cfg.electionTicks);
    if (this.role !== 'leader') return;
    if (!this.conf.voters.includes(this.id)) {
      // A leader removed (or demoted) steps down; the others elect a new leader.
      this.becomeFollower(this.term, NONE);
      return;
    }
    const before = new Set(this.progress.keys());
    this.syncProgress();
    if (this.leadTransferee !== NONE && !this.conf.voters.includes(this.leadTransferee)) this.abortLeaderTransfer();
    // A smaller quorum may commit more at once.
    if (this.maybeCommit()) this.commitBroadcastPending = true;
    for (const id of this.progress.keys()) if (!before.has(id)) this.sendAppend(id);
  }

  private setElectionTicks(ticks: number): void {
    if (ticks === this.electionTicks) return;
    this.electionTicks = ticks;
    this.randomizedElectionTimeout = ticks + this.rng.nextInt(ticks);
  }

  hardState(): HardState {
    return { term: this.term, vote: this.vote, commit: this.log.committed };
  }

  /** Whether this node has been removed from the cluster it belonged to. */
  isRemoved(): boolean {
    return this.conf.removed.includes(this.id);
  }
}
