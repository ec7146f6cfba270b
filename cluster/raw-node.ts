// The shell's handle on one Raft node, in etcd's RawNode style: feed it ticks, messages and
// requests; take a Ready; do its work; call advance().
//
// Contract with the shell (the order is what makes Raft safe; see Ready in types.ts):
//
//   while (node.hasReady()) {
//     const rd = node.ready();
//     send(rd.messages);                 // promise nothing about our disk
//     persist(rd.snapshot, rd.entries, rd.hardState);   // atomically, fsync if rd.mustSync
//     send(rd.messagesAfterPersist);     // votes and acks: only once durable
//     apply(rd.snapshot, rd.committedEntries); serve(rd.readStates);
//     node.advance();
//   }
//
// Only one Ready is outstanding at a time. Between ready() and advance() the shell may keep
// stepping messages and ticks in (a slow disk need not stall the protocol); their effects
// appear in the next Ready. A leader counts its own log toward commitment only once advance()
// reports the entries durable. A leader's new commit index reaches the followers with its
// next appends; a Ready that hands out committed entries holds a commit-only broadcast back
// for the next one, so a shell that lets its clients propose again in between (node.ts does)
// sends their entries and the commit index in one append.

import assert from 'node:assert';
import type { ConfChange } from './conf-change.js';
import type { RaftConfig } from './config.js';
import { Raft, type CompactResult, type ProposeResult, type ReadIndexResult, type TransferResult } from './raft.js';
import type {
  ClientTag,
  ConfState,
  HardState,
  Message,
  MessageType,
  NodeId,
  PersistedState,
  Ready,
  Role,
  SoftState,
} from './types.js';

/** Messages only a leader sends; they carry no promise about the sender's disk. */
const sendBeforePersist: ReadonlySet<MessageType> = new Set<MessageType>([
  'app',
  'heartbeat',
  'snap',
  'timeout-now',
  'read-index-resp',
]);

export interface NodeStatus {
  readonly id: NodeId;
  readonly role: Role;
  readonly term: number;
  readonly vote: NodeId;
  readonly lead: NodeId;
  readonly commit: number;
  readonly applied: number;
  readonly firstIndex: number;
  readonly lastIndex: number;
  readonly conf: ConfState;
  readonly electionTicks: number;
  readonly leadTransferee: NodeId;
  readonly progress: ReadonlyMap<NodeId, string>;
}

export class RawNode {
  readonly raft: Raft;
  private prevHardState: HardState;
  private prevSoftState: SoftState;
  private outstanding: Ready | undefined;
  /** See lingerCommit: a leader's new commit index waits for the next append meanwhile. */
  private commitLingering = false;

  constructor(config: RaftConfig, stored: PersistedState) {
    this.raft = new Raft(config, stored);
    this.prevHardState = stored.hardState;
    this.prevSoftState = { lead: this.raft.lead, role: this.raft.role };
  }

  get id(): NodeId {
    return this.raft.id;
  }

  tick(): void {
    this.raft.tick();
  }

  campaign(): void {
    this.raft.campaign();
  }

  step(m: Message): void {
    this.raft.step(m);
  }

  propose(data: Uint8Array, client?: ClientTag): ProposeResult {
    return this.raft.propose('normal', data, client);
  }

  proposeConfChange(cc: ConfChange): ProposeResult {
    return this.raft.proposeConfChange(cc);
  }

  readIndex(ctx: string): ReadIndexResult {
    return this.raft.readIndex(ctx);
  }

  transferLeadership(to: NodeId): TransferResult {
    return this.raft.transferLeadership(to);
  }

  compact(index: number, data: Uint8Array): CompactResult {
    return this.raft.compact(index, data);
  }

  reportSnapshot(id: NodeId, ok: boolean): void {
    this.raft.reportSnapshot(id, ok);
  }

  reportUnreachable(id: NodeId): void {
    this.raft.reportUnreachable(id);
  }

  hasReady(): boolean {
    if (this.outstanding !== undefined) return false;
    const r = this.raft;
    const hs = r.hardState();
    return (
      r.broadcastPending ||
      (r.commitBroadcastPending && !this.commitLingering) ||
      r.msgs.length > 0 ||
      r.readStates.length > 0 ||
      r.log.unstableEntries().length > 0 ||
      r.log.pendingSnapshot() !== undefined ||
      r.log.hasNextCommittedEntries() ||
      !sameHardState(hs, this.prevHardState) ||
      r.lead !== this.prevSoftState.lead ||
      r.role !== this.prevSoftState.role
    );
  }

  ready(): Ready {
    assert(this.outstanding === undefined, 'ready() called twice without advance()');
    const r = this.raft;
    const committedEntries = r.log.nextCommittedEntries(r.cfg.committedEntriesPerReadyMax);
    // A commit index alone waits while this Ready hands out entries to apply: applying them
    // settles proposals, and appends of the proposals made in answer carry it at no cost. Not
    // past a conf change, though: one that removes a member drops it from the leader's
    // progress once applied, and that member must still hear that its removal committed.
    const holdCommit = committedEntries.length > 0 && !committedEntries.some((e) => e.type === 'conf-change');
    if (r.role === 'leader' && (r.broadcastPending || (r.commitBroadcastPending && !holdCommit && !this.commitLingering))) r.bcastAppend();
    const hs = r.hardState();
    const messages: Message[] = [];
    const messagesAfterPersist: Message[] = [];
    for (const m of r.msgs) (sendBeforePersist.has(m.type) ? messages : messagesAfterPersist).push(m);
    r.msgs = [];
    const snapshot = r.log.pendingSnapshot();
    const entries = [...r.log.unstableEntries()];
    const hardStateChanged = !sameHardState(hs, this.prevHardState);
    const soft: SoftState = { lead: r.lead, role: r.role };
    const softChanged = soft.lead !== this.prevSoftState.lead || soft.role !== this.prevSoftState.role;
    const rd: Ready = {
      ...(softChanged ? { softState: soft } : {}),
      ...(hardStateChanged ? { hardState: hs } : {}),
      ...(snapshot !== undefined ? { snapshot } : {}),
      entries,
      messages,
      messagesAfterPersist,
      committedEntries,
      readStates: r.readStates,
      mustSync:
        entries.length > 0 ||
        snapshot !== undefined ||
        hs.term !== this.prevHardState.term ||
        hs.vote !== this.prevHardState.vote,
    };
    r.readStates = [];
    this.prevSoftState = soft;
    this.outstanding = rd;
    return rd;
  }

  /**
   * While a Ready is outstanding (its write in flight), or while the shell writes a snapshot
   * between Readies, the messages that promise nothing about this node's disk and may leave at
   * once: chiefly a leader's appends of entries proposed since ready(), and its heartbeats.
   * Sending them now rather than in the next Ready lets followers write those entries while
   * this node is still writing the previous ones, which takes one disk write off the commit
   * path of a busy leader, and keeps a compacting leader's heartbeats on time. Everything else
   * stays for the next Ready.
   */
  takeEarlyMessages(): Message[] {
    const r = this.raft;
    if (r.broadcastPending && r.role === 'leader') r.bcastAppend();
    if (r.msgs.length === 0) return [];
    const early: Message[] = [];
    const rest: Message[] = [];
    for (const m of r.msgs) (sendBeforePersist.has(m.type) ? early : rest).push(m);
    r.msgs = rest;
    return early;
  }

  /**
   * A leader sends its new commit index now, instead of holding it for the next append (see
   * ready()): for a shell whose client waits on the followers' applies, not only this node's.
   * The appends come out of takeEarlyMessages().
   */
  broadcastCommit(): void {
    const r = this.raft;
    if (r.role === 'leader' && r.commitBroadcastPending) r.bcastAppend();
  }

  /**
   * While on, a leader's commit index that no append has carried yet waits for the next one
   * (a proposal's, or a heartbeat's) instead of going out in empty appends of its own. The
   * shell turns it on for a moment after it applied, when a client's next proposal usually
   * follows within a round trip, and off again; broadcastCommit() sends regardless. It holds
   * back only when followers learn of a commit, never what commits or when.
   */
  lingerCommit(on: boolean): void {
    this.commitLingering = on;
  }

  /** A leader holds a commit index that its followers have not been sent. */
  commitUnsent(): boolean {
    return this.raft.role === 'leader' && this.raft.commitBroadcastPending;
  }

  /** Acknowledges the outstanding Ready: persisted, sent and applied. */
  advance(): void {
    const rd = this.outstanding;
    assert(rd !== undefined, 'advance() without ready()');
    this.outstanding = undefined;
    if (rd.hardState !== undefined) this.prevHardState = rd.hardState;
    if (rd.snapshot !== undefined) this.raft.log.stableSnapTo(rd.snapshot.meta.index);
    const last = rd.entries.at(-1);
    if (last !== undefined) this.raft.persisted(last.index, last.term);
    this.raft.applied(rd.committedEntries);
  }

  /** Whether a Ready was handed out and not yet advanced. */
  hasOutstandingReady(): boolean {
    return this.outstanding !== undefined;
  }

  status(): NodeStatus {
    const r = this.raft;
    const progress = new Map<NodeId, string>();
    for (const [id, pr] of [...r.progress].sort((a, b) => a[0] - b[0])) progress.set(id, pr.describe());
    return {
      id: r.id,
      role: r.role,
      term: r.term,
      vote: r.vote,
      lead: r.lead,
      commit: r.log.committed,
      applied: r.log.applied,
      firstIndex: r.log.firstIndex(),
      lastIndex: r.log.lastIndex(),
      conf: r.conf,
      electionTicks: r.electionTicks,
      leadTransferee: r.leadTransferee,
      progress,
    };
  }
}

function sameHardState(a: HardState, b: HardState): boolean {
  return a.term === b.term && a.vote === b.vote && a.commit === b.commit;
}
