// The member's side of the agent streams, without gRPC: every stream is a session with a sink
// to write encoded ServerMessages to. Sessions with the same local datapaths form a group; each
// SB revision is filtered once per group and encoded once, and the same bytes are written to
// every member of the group (a stream's own rows — the Port_Bindings it asked for by iface-id,
// its Chassis_Private — are added for that stream alone). A revision that changed only some
// members' own rows (a Port_Binding one asked for) is a step for those members alone: the others
// are not sent an empty step for it. The member's own record of an agent's Ack (its
// Chassis_Private.nb_cfg and timestamp, every --wait=hv) is not sent on its own at all: the agent
// knows what it acknowledged, and that row goes with its next step (at the latest the next
// progress), so an ack costs no message back. So a member is at its group's revision or past it,
// and every step is from the member's own revision (one encoding per distinct revision, usually
// one).
//
// A session is 'live' (in a group, receiving each step as it is committed) or 'syncing' (not in
// a group: new, fallen behind, or changing its interest). A syncing session is brought to the
// current revision in one step, coalesced to the latest state of each row — from the retained
// history when it covers the session's revision, as a snapshot otherwise — and then joins its
// group. A live session whose queue of unsent messages passes queueBytesMax or
// queueMessagesMax is moved to syncing: nothing more is queued for it until the queue drains,
// so a slow agent costs at most its queue, never a copy of every delta since.
//
// The per-revision path (commit) runs synchronously inside the member's apply listener; the
// index is updated there, and every live session leaves it at the committed revision.
import assert from 'node:assert/strict';
import type { DatabaseSchema, DbDelta, Row, TableSchema, Value } from '../ovsdb/index.js';
import { valuesEqual } from '../ovsdb/index.js';
import type { History } from './history.js';
import type { Candidate, GroupInterest, Interest, Members, ViewChange } from './sb-interest.js';
import {
  InterestIndex, candidateKey, candidatesOf, candidatesOfDatapaths, candidatesOfPorts, groupKeyOf, groupStep, personalStep, personallyRelevant, visibleRows, windowOf,
} from './sb-interest.js';
import type { WireResume, WireTableRows } from './southbound-wire.js';
import { appendTables, encodeParts, encodeServerMessage, wireLimits } from './southbound-wire.js';
import { StreamEnd, type StreamEndKind } from './errors.js';

/** Named limits of the agent streams on one member. */
export const fanoutLimits = {
  /** Streams one member serves at once. */
  sessionsMax: 10_000,
  /** Bytes written to a stream and not yet taken by the transport before it is moved to syncing. */
  queueBytesMax: 1024 * 1024,
  /** Messages likewise. */
  queueMessagesMax: 256,
  /** A syncing stream is caught up once its queue is down to this many bytes. */
  queueBytesLow: 256 * 1024,
  /** Row changes in the retained history beyond which a catch-up is sent as a snapshot. */
  catchUpChangesMax: 200_000,
  /** Encoded rows of catch-ups and snapshots waiting to be written, all streams together. */
  syncBytesMax: 64 * 1024 * 1024,
  /** Encoded snapshots and catch-ups kept for other streams of the same interest. */
  cacheBytesMax: 64 * 1024 * 1024,
  cacheEntriesMax: 64,
  /** iface-ids one stream may ask for. */
  ifaceIdsMax: 16_384,
  /** held_datapaths one Hello may name. */
  heldDatapathsMax: 1_000_000,
  /** Encoded row bytes in one Delta message: a larger step goes in parts. */
  partBytesMax: wireLimits.partBytesMax,
} as const;

export type FanoutLimits = { readonly [K in keyof typeof fanoutLimits]: number };

/** What the hub reads: the SB view, its retained history, and the applied revision. */
export interface SouthboundSource {
  readonly schema: DatabaseSchema;
  rows(table: string): ReadonlyMap<string, Row>;
  readonly history: History;
  revision(): number;
}

export { StreamEnd, type StreamEndKind };

/** Where a session's messages go: the transport of one stream. */
export interface StreamSink {
  /** Queues one encoded ServerMessage; `flushed` is called once the transport has taken it. */
  write(message: Buffer, flushed: () => void): void;
  /** Ends the stream with an error status. */
  end(error: StreamEnd): void;
}

/** A stream's Hello, validated. */
export interface SessionHello {
  readonly chassis: string;
  readonly lastRevision: number;
  readonly heldDatapaths: readonly string[];
  readonly ifaceIds: readonly string[];
  readonly monitorAll: boolean;
  /** Tables whose set columns the agent accepts as differences (proto Hello.set_difference_tables). */
  readonly setDifferenceTables?: readonly string[];
  /** The SB view id its view was derived with (proto Hello.view; '' when not told). */
  readonly view?: string;
}

export interface FanoutOptions {
  readonly member: number;
  /**
   * This member's SB view id (server/sb-view-id.ts): an agent whose view was derived with
   * another gets a snapshot, not the changes after its revision. '' when not given.
   */
  readonly view?: string;
  readonly limits?: Partial<FanoutLimits>;
  /** Runs a function soon, outside the caller's stack (setImmediate unless a test injects one). */
  readonly defer?: (f: () => void) => void;
  /** Told every valid Ack that carries no error. */
  readonly onAck?: (chassis: string, nbCfg: number) => void;
}

export interface FanoutStats {
  readonly sessions: number;
  readonly live: number;
  readonly syncing: number;
  readonly groups: number;
  /** Messages encoded, and messages written (one encoding may be written to many streams). */
  readonly encoded: number;
  readonly written: number;
  readonly bytesWritten: number;
  readonly snapshots: number;
  readonly catchUps: number;
  /** Live sessions moved to syncing because their queue was full. */
  readonly fellBehind: number;
  readonly ackErrors: number;
  /** Bytes queued to all streams and not yet taken by the transport. */
  readonly queuedBytes: number;
  /** The largest queue of one stream now. */
  readonly queuedBytesMaxNow: number;
  readonly syncBytes: number;
  readonly cacheBytes: number;
  readonly cacheHits: number;
  /** Catch-ups that waited for others' to be written first (syncBytesMax). */
  readonly budgetWaits: number;
  /** Revisions handled by commit, and the time spent in it (filtering, encoding, writing). */
  readonly commits: number;
  readonly commitMsTotal: number;
  readonly commitMsMax: number;
}

interface Group {
  readonly key: string;
  readonly interest: GroupInterest;
  readonly members: Set<Session>;
  revision: number;
}

/** A step waiting to be written: encoded rows (maybe shared with other sessions). */
interface Backlog {
  readonly from: number;
  readonly to: number;
  readonly reset: boolean;
  readonly parts: readonly (readonly WireTableRows[])[];
  readonly personal: readonly WireTableRows[];
  readonly resume: WireResume | undefined;
  readonly bytes: number;
  next: number;
}

const noDatapaths: ReadonlySet<string> = new Set();

function partsBytes(parts: readonly (readonly WireTableRows[])[]): number {
  let n = 0;
  for (const p of parts) for (const t of p) {
    for (const r of t.rows) n += r.length + 3;
    n += t.removes.length * 40 + 64;
  }
  return n;
}

function symmetricDifference(a: ReadonlySet<string>, b: ReadonlySet<string>): string[] {
  const out: string[] = [];
  for (const x of a) if (!b.has(x)) out.push(x);
  for (const x of b) if (!a.has(x)) out.push(x);
  return out;
}

/** The Chassis_Private columns a member writes when it records an agent's Ack (agent-writes.ts). */
const ackRecordColumns: ReadonlySet<string> = new Set(['nb_cfg', 'nb_cfg_timestamp']);

/**
 * Whether a change of a stream's own rows is only the record of its Acks: a Chassis_Private row
 * it held and still holds, of which nothing moved but nb_cfg and nb_cfg_timestamp. The agent
 * reads neither (it knows what it acknowledged), so such a change need not be sent at once.
 */
function isAckRecord(ts: TableSchema | undefined, c: ViewChange): boolean {
  if (ts === undefined || c.table !== 'Chassis_Private' || c.row === undefined || c.old === undefined) return false;
  for (const col of ts.columns.values()) {
    if (ackRecordColumns.has(col.name)) continue;
    if (!valuesEqual(col.type, c.row[col.name] as Value, c.old[col.name] as Value)) return false;
  }
  return true;
}

function setsEqual(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  if (a.size !== b.size) return false;
  for (const x of a) if (!b.has(x)) return false;
  return true;
}

/** One agent stream, as the hub sees it. */
export class Session {
  state: 'syncing' | 'live' | 'closed' = 'syncing';
  /** The to_revision of the last step written (what the agent will hold once it read it). */
  revision: number;
  /** The SB view id its Hello gave (SessionHello.view). */
  readonly helloView: string;
  /** The interest the agent's view is built with at `revision`. */
  held: Interest;
  ifaceIds: ReadonlySet<string>;
  group: Group | undefined;
  backlog: Backlog | undefined;
  queuedBytes = 0;
  queuedMessages = 0;
  resumed = false;
  catchUpScheduled = false;
  waitingForBudget = false;
  lastAckRevision = 0;
  lastAckError: string | undefined;
  /** The nb_cfg of its last Ack without an error (undefined before the first). */
  lastAckNbCfg: number | undefined;
  /**
   * Its own Chassis_Private rows (by uuid) whose last changes were only the record of its Acks,
   * not yet sent: the next step written to it carries them as they are then (see isAckRecord).
   * Empty while syncing: a catch-up from its revision carries them anyway.
   */
  readonly unsentAckRecords = new Set<string>();
  /** Tables whose set columns go to it as differences, and a key naming that choice (steps are encoded once per key). */
  readonly diffTables: ReadonlySet<string>;
  readonly diffKey: string;

  constructor(
    readonly id: number,
    readonly chassis: string,
    readonly monitorAll: boolean,
    hello: SessionHello,
    readonly sink: StreamSink,
    schemaTables: ReadonlySet<string>,
  ) {
    // Tables this member does not know (an agent newer than it) are left out.
    this.diffTables = new Set([...(hello.setDifferenceTables ?? [])].filter((t) => schemaTables.has(t)).sort());
    this.diffKey = [...this.diffTables].join(',');
    this.revision = hello.lastRevision;
    this.helloView = hello.view ?? '';
    this.ifaceIds = new Set(hello.ifaceIds);
    this.held = { chassis, monitorAll, datapaths: hello.lastRevision === 0 ? noDatapaths : new Set(hello.heldDatapaths), ifaceIds: new Set(hello.ifaceIds) };
  }
}

/** The agent streams of one member. */
export class Fanout {
  private readonly interest: InterestIndex;
  /**
   * Whether `interest` follows the view. It is kept only while something needs it (an agent
   * stream open, a test asking): a member no agent connects to does not pay for it on every
   * commit (measured: about a fifth of a follower's apply of a one-switch transaction) nor hold
   * it. It is built from the view as it is, in one pass, when needed again.
   */
  private interestLive = false;
  private readonly limits: FanoutLimits;
  private readonly sessions = new Set<Session>();
  private readonly groups = new Map<string, Group>();
  /** Datapath → groups with it local. */
  private readonly groupsByDatapath = new Map<string, Set<Group>>();
  private readonly byChassis = new Map<string, Set<Session>>();
  private readonly byIfaceId = new Map<string, Set<Session>>();
  private readonly cache = new Map<string, { parts: WireTableRows[][]; bytes: number }>();
  private cacheBytes = 0;
  private syncBytes = 0;
  private readonly budgetQueue: Session[] = [];
  private nextId = 1;
  private readonly defer: (f: () => void) => void;
  private readonly counters = { encoded: 0, written: 0, bytesWritten: 0, snapshots: 0, catchUps: 0, fellBehind: 0, ackErrors: 0, cacheHits: 0, budgetWaits: 0, commits: 0, commitMsTotal: 0, commitMsMax: 0 };

  /** The SB tables, by name (what a Hello's set_difference_tables may name). */
  private readonly tableNames: ReadonlySet<string>;
  private readonly chassisPrivateSchema: TableSchema | undefined;

  constructor(
    private readonly source: SouthboundSource,
    private readonly options: FanoutOptions,
  ) {
    this.tableNames = new Set(source.schema.tables.keys());
    this.chassisPrivateSchema = source.schema.tables.get('Chassis_Private');
    this.limits = { ...fanoutLimits, ...options.limits };
    this.defer = options.defer ?? ((f) => void setImmediate(f));
    this.interest = new InterestIndex((t) => source.rows(t), true);
  }

  /** The interest index, brought up to date with the view first if nothing followed it yet. */
  get index(): InterestIndex {
    this.followView();
    return this.interest;
  }

  private followView(): void {
    if (this.interestLive) return;
    this.interest.rebuild();
    this.interestLive = true;
  }

  private unfollowView(): void {
    this.interestLive = false;
    this.interest.clear();
  }

  private rows = (table: string): ReadonlyMap<string, Row> => this.source.rows(table);

  stats(): FanoutStats {
    let live = 0;
    let queued = 0;
    let queuedMax = 0;
    for (const s of this.sessions) {
      if (s.state === 'live') live++;
      queued += s.queuedBytes;
      queuedMax = Math.max(queuedMax, s.queuedBytes);
    }
    return {
      sessions: this.sessions.size,
      live,
      syncing: this.sessions.size - live,
      groups: this.groups.size,
      ...this.counters,
      queuedBytes: queued,
      queuedBytesMaxNow: queuedMax,
      syncBytes: this.syncBytes,
      cacheBytes: this.cacheBytes,
    };
  }

  /** The group a session is in (its key), for tests and status. */
  groupOf(s: Session): string | undefined {
    return s.group?.key;
  }

  // --- Sessions ----------------------------------------------------------------------------

  /** Opens a session for a validated Hello; it is brought to the current revision at once. */
  open(hello: SessionHello, sink: StreamSink): Session {
    if (this.sessions.size >= this.limits.sessionsMax) throw new StreamEnd('exhausted', `this member serves ${this.limits.sessionsMax} agent streams already; try another member`);
    if (hello.ifaceIds.length > this.limits.ifaceIdsMax) throw new StreamEnd('invalid', `at most ${this.limits.ifaceIdsMax} iface-ids, got ${hello.ifaceIds.length}`);
    if (hello.heldDatapaths.length > this.limits.heldDatapathsMax) throw new StreamEnd('invalid', `at most ${this.limits.heldDatapathsMax} held datapaths, got ${hello.heldDatapaths.length}`);
    assert.ok(hello.lastRevision <= this.source.revision(), 'Fanout.open: the service waits until this member has applied the agent\'s revision');
    this.followView();
    const s = new Session(this.nextId++, hello.chassis, hello.monitorAll, hello, sink, this.tableNames);
    this.sessions.add(s);
    let set = this.byChassis.get(s.chassis);
    if (set === undefined) this.byChassis.set(s.chassis, (set = new Set()));
    set.add(s);
    this.indexIfaceIds(s, s.ifaceIds, true);
    this.catchUp(s);
    this.settle();
    return s;
  }

  /** The stream ended (by the agent, or cut): forget the session. */
  close(s: Session): void {
    if (s.state === 'closed') return;
    this.leaveGroup(s);
    this.countAck(s, undefined);
    s.state = 'closed';
    this.releaseBacklog(s);
    this.sessions.delete(s);
    const set = this.byChassis.get(s.chassis);
    set?.delete(s);
    if (set?.size === 0) this.byChassis.delete(s.chassis);
    this.indexIfaceIds(s, s.ifaceIds, false);
    const i = this.budgetQueue.indexOf(s);
    if (i >= 0) this.budgetQueue.splice(i, 1);
  }

  /** Ends a session with an error status, and forgets it. */
  end(s: Session, error: StreamEnd): void {
    if (s.state === 'closed') return;
    this.close(s);
    s.sink.end(error);
  }

  /** The agent replaced its iface-ids: the Port_Bindings concerned come in one step. */
  setIfaceIds(s: Session, ifaceIds: readonly string[]): void {
    if (s.state === 'closed') return;
    if (ifaceIds.length > this.limits.ifaceIdsMax) throw new StreamEnd('invalid', `at most ${this.limits.ifaceIdsMax} iface-ids, got ${ifaceIds.length}`);
    const next = new Set(ifaceIds);
    if (setsEqual(next, s.ifaceIds)) return;
    this.indexIfaceIds(s, s.ifaceIds, false);
    s.ifaceIds = next;
    this.indexIfaceIds(s, s.ifaceIds, true);
    if (s.state === 'live') {
      this.leaveGroup(s);
      s.state = 'syncing';
    }
    this.scheduleCatchUp(s);
  }

  /** An Ack from the agent; a bad one ends the stream (StreamEnd thrown) and changes nothing. */
  ack(s: Session, revision: number, nbCfg: number, error: string): void {
    if (s.state === 'closed') return;
    if (!Number.isSafeInteger(revision) || revision < 0) throw new StreamEnd('invalid', `Ack.revision ${revision} is not a revision`);
    if (revision > s.revision) throw new StreamEnd('invalid', `Ack of revision ${revision}, but this stream has sent up to ${s.revision}`);
    if (!Number.isSafeInteger(nbCfg) || nbCfg < 0) throw new StreamEnd('invalid', `Ack.nb_cfg ${nbCfg} is not a non-negative integer`);
    const current = this.currentNbCfg();
    if (nbCfg > current) throw new StreamEnd('invalid', `Ack.nb_cfg ${nbCfg} is beyond SB_Global.nb_cfg ${current}`);
    s.lastAckRevision = Math.max(s.lastAckRevision, revision);
    if (error !== '') {
      this.counters.ackErrors++;
      s.lastAckError = error;
      return;
    }
    this.countAck(s, nbCfg);
    this.options.onAck?.(s.chassis, nbCfg);
  }

  /** Sessions by the nb_cfg of their last good Ack (few distinct values: one per change in flight). */
  private readonly sessionsByAckedNbCfg = new Map<number, number>();

  private countAck(s: Session, nbCfg: number | undefined): void {
    const was = s.lastAckNbCfg;
    if (was === nbCfg) return;
    if (was !== undefined) {
      const n = (this.sessionsByAckedNbCfg.get(was) ?? 0) - 1;
      if (n > 0) this.sessionsByAckedNbCfg.set(was, n);
      else this.sessionsByAckedNbCfg.delete(was);
    }
    s.lastAckNbCfg = nbCfg;
    if (nbCfg !== undefined) this.sessionsByAckedNbCfg.set(nbCfg, (this.sessionsByAckedNbCfg.get(nbCfg) ?? 0) + 1);
  }

  /**
   * Whether a stream here whose agent acknowledges (it has before) last acknowledged less than
   * `nbCfg`: it is still installing a change that others have acknowledged (AckWriter waits
   * for it). Streams that never acknowledged do not count.
   */
  lagging(nbCfg: number): boolean {
    for (const acked of this.sessionsByAckedNbCfg.keys()) if (acked < nbCfg) return true;
    return false;
  }

  private currentNbCfg(): number {
    for (const g of this.rows('SB_Global').values()) return g.nb_cfg as number;
    return 0;
  }

  /** The member's state was replaced by a snapshot: every stream must resume anew. */
  restore(revision: number): void {
    // Every stream ends below; the index is built again when one opens (or is asked for).
    this.unfollowView();
    this.cache.clear();
    this.cacheBytes = 0;
    for (const s of [...this.sessions]) this.end(s, new StreamEnd('aborted', `this member's state was replaced by a snapshot at revision ${revision}; resume from revision ${s.revision} on another member, or here with a new Hello`));
  }

  /** Idle groups are told the current revision (progress), so that agents can resume from it. */
  progress(): void {
    const revision = this.source.revision();
    for (const g of this.groups.values()) if (g.revision < revision) this.bump(g, revision);
    this.settle();
  }

  private indexIfaceIds(s: Session, ids: ReadonlySet<string>, add: boolean): void {
    for (const id of ids) {
      let set = this.byIfaceId.get(id);
      if (add) {
        if (set === undefined) this.byIfaceId.set(id, (set = new Set()));
        set.add(s);
      } else {
        set?.delete(s);
        if (set?.size === 0) this.byIfaceId.delete(id);
      }
    }
  }

  // --- Groups ------------------------------------------------------------------------------

  private interestOf(s: Session, g: GroupInterest): Interest {
    return { chassis: s.chassis, monitorAll: s.monitorAll, datapaths: g.datapaths, ifaceIds: s.ifaceIds };
  }

  private currentGroupInterest(s: Session): GroupInterest {
    return s.monitorAll ? { monitorAll: true, datapaths: noDatapaths } : { monitorAll: false, datapaths: this.index.localDatapaths(s.chassis) };
  }

  private leaveGroup(s: Session): void {
    const g = s.group;
    if (g === undefined) return;
    g.members.delete(s);
    s.group = undefined;
    if (g.members.size > 0) return;
    this.groups.delete(g.key);
    for (const dp of g.interest.datapaths) {
      const set = this.groupsByDatapath.get(dp);
      set?.delete(g);
      if (set?.size === 0) this.groupsByDatapath.delete(dp);
    }
  }

  /** Puts a session that is at `revision` with interest `gi` into its group. */
  private joinGroup(s: Session, gi: GroupInterest, revision: number): void {
    const key = groupKeyOf(gi);
    let g = this.groups.get(key);
    if (g === undefined) {
      g = { key, interest: gi, members: new Set(), revision };
      this.groups.set(key, g);
      for (const dp of gi.datapaths) {
        let set = this.groupsByDatapath.get(dp);
        if (set === undefined) this.groupsByDatapath.set(dp, (set = new Set()));
        set.add(g);
      }
    } else if (g.revision < revision) {
      this.bump(g, revision);
    }
    assert.equal(g.revision, revision, 'a session joins a group at the group\'s revision');
    s.group = g;
    s.state = 'live';
    s.held = this.interestOf(s, g.interest);
    g.members.add(s);
  }

  /** Moves a group's members to `revision` with an empty step (nothing of theirs changed but the records of their Acks). */
  private bump(g: Group, revision: number): void {
    const byFrom = new Map<number, Buffer>();
    for (const s of g.members) {
      if (s.revision >= revision) continue;
      let message = byFrom.get(s.revision);
      if (message === undefined) byFrom.set(s.revision, (message = this.encode({ delta: { fromRevision: s.revision, toRevision: revision, reset: false, more: false, tables: [] } })));
      this.write(s, this.forStream(s, message, []), revision);
    }
    g.revision = revision;
  }

  // --- The per-revision path -------------------------------------------------------------

  /**
   * One committed revision's changes to the SB view (the view already shows them). Every live
   * session leaves this at `revision`.
   */
  commit(revision: number, delta: DbDelta): void {
    const started = performance.now();
    this.step(revision, delta);
    const ms = performance.now() - started;
    this.counters.commits++;
    this.counters.commitMsTotal += ms;
    this.counters.commitMsMax = Math.max(this.counters.commitMsMax, ms);
  }

  private step(revision: number, delta: DbDelta): void {
    // No stream was ever opened here (or none since a snapshot): nothing follows the index.
    if (!this.interestLive) return;
    if (this.sessions.size === 0) {
      // No stream now, but there was one: stop following (and holding it).
      this.unfollowView();
      return;
    }
    const touched = this.interest.apply(delta);
    if (this.groups.size === 0) return;
    const window = windowOf([delta]);
    const cands = candidatesOf(this.index, this.rows, window);

    // Live sessions whose local datapaths this changed move to another group.
    const movers = new Map<Session, GroupInterest>();
    const consider = (s: Session): void => {
      if (s.state !== 'live' || s.monitorAll || movers.has(s)) return;
      const gi = this.currentGroupInterest(s);
      if (!setsEqual(gi.datapaths, (s.group as Group).interest.datapaths)) movers.set(s, gi);
    };
    for (const name of touched.chassisNames) for (const s of this.byChassis.get(name) ?? []) consider(s);
    for (const uuid of touched.chassisUuids) {
      const name = this.index.chassisName(uuid);
      if (name !== undefined) for (const s of this.byChassis.get(name) ?? []) consider(s);
    }
    for (const dp of touched.datapaths) for (const g of this.groupsByDatapath.get(dp) ?? []) for (const s of g.members) consider(s);

    // Each candidate goes to the groups that saw it or see it now.
    const routed = new Map<Group, Candidate[]>();
    const route = (g: Group, c: Candidate): void => {
      const list = routed.get(g);
      if (list === undefined) routed.set(g, [c]);
      else if (list[list.length - 1] !== c) list.push(c);
    };
    const all = this.groups.get('*');
    // The stream groups with a member of a datapath group local, once per group's member set
    // (the flows of one datapath group share it).
    const byMembers = new Map<Members, Group[]>();
    const groupsOfMembers = (members: Members): Group[] => {
      let out = byMembers.get(members);
      if (out !== undefined) return out;
      const found = new Set<Group>();
      if (members.size <= this.groupsByDatapath.size) {
        for (const dp of members) for (const g of this.groupsByDatapath.get(dp) ?? []) found.add(g);
      } else {
        for (const [dp, gs] of this.groupsByDatapath) if (members.has(dp)) for (const g of gs) found.add(g);
      }
      byMembers.set(members, (out = [...found]));
      return out;
    };
    for (const c of cands) {
      if (c.fpOld.scope === 'all' || c.fpNew.scope === 'all') {
        for (const g of this.groups.values()) route(g, c);
        continue;
      }
      if (all !== undefined && (c.fpOld.scope !== 'none' || c.fpNew.scope !== 'none')) route(all, c);
      for (const fp of [c.fpOld, c.fpNew]) {
        for (const dp of fp.datapaths) for (const g of this.groupsByDatapath.get(dp) ?? []) route(g, c);
        for (const members of fp.groups ?? []) for (const g of groupsOfMembers(members)) route(g, c);
      }
    }
    // And to the sessions that asked for it themselves.
    const personal = new Map<Session, Candidate[]>();
    const mine = (s: Session, c: Candidate): void => {
      if (s.state !== 'live') return;
      const list = personal.get(s);
      if (list === undefined) personal.set(s, [c]);
      else if (list[list.length - 1] !== c) list.push(c);
    };
    for (const c of cands) {
      for (const fp of [c.fpOld, c.fpNew]) {
        if (fp.port !== undefined) for (const s of this.byIfaceId.get(fp.port) ?? []) mine(s, c);
        if (fp.parent !== undefined) for (const s of this.byIfaceId.get(fp.parent) ?? []) mine(s, c);
        if (fp.scope === 'chassis' && fp.chassis !== undefined) for (const s of this.byChassis.get(fp.chassis) ?? []) mine(s, c);
      }
    }

    const joins: { s: Session; gi: GroupInterest }[] = [];
    for (const g of [...this.groups.values()]) {
      const stable: Session[] = [];
      const moving = new Map<string, { gi: GroupInterest; sessions: Session[] }>();
      for (const s of g.members) {
        const gi = movers.get(s);
        if (gi === undefined) {
          stable.push(s);
          continue;
        }
        const key = groupKeyOf(gi);
        const bucket = moving.get(key);
        if (bucket === undefined) moving.set(key, { gi, sessions: [s] });
        else bucket.sessions.push(s);
      }
      if (stable.length > 0) {
        const shared = groupStep(routed.get(g) ?? [], g.interest, g.interest);
        const ownRows = (s: Session): readonly ViewChange[] => {
          const mineNow = personal.get(s);
          if (mineNow === undefined) return [];
          const i = this.interestOf(s, g.interest);
          return personalStep(mineNow, i, i);
        };
        if (shared.length > 0) {
          this.sendStep(stable, revision, shared, ownRows);
          g.revision = revision;
        } else {
          // Only some members' own rows changed: a step for them alone, unless all that changed
          // is the record of its Acks, which waits for its next step (see the top).
          const own = new Map<Session, readonly ViewChange[]>();
          for (const s of stable) {
            if (!personal.has(s)) continue;
            const mine = ownRows(s);
            if (mine.length > 0 && mine.every((c) => isAckRecord(this.chassisPrivateSchema, c))) {
              for (const c of mine) s.unsentAckRecords.add(c.uuid);
            } else {
              own.set(s, mine);
            }
          }
          if (own.size > 0) this.sendStep([...own.keys()], revision, shared, (s) => own.get(s) ?? []);
        }
      }
      for (const { gi, sessions } of moving.values()) {
        const taken = new Set(cands.map(candidateKey));
        const extra = candidatesOfDatapaths(this.index, this.rows, symmetricDifference(g.interest.datapaths, gi.datapaths), taken);
        const both = [...cands, ...extra];
        const shared = groupStep(both, g.interest, gi);
        this.sendStep(sessions, revision, shared, (s) => {
          const before = this.interestOf(s, g.interest);
          const after = this.interestOf(s, gi);
          const extraPorts = candidatesOfPorts(this.index, this.rows, s.ifaceIds, new Set(taken));
          return personalStep([...both, ...extraPorts].filter((c) => personallyRelevant(c, before, after)), before, after);
        });
        for (const s of sessions) joins.push({ s, gi });
      }
    }
    // Only now, with every group's step of this revision sent, do movers change groups: all
    // leave first, so that a group one of them joins (and bumps) no longer counts the others.
    for (const { s } of joins) this.leaveGroup(s);
    for (const { s, gi } of joins) if (s.state === 'live') this.joinGroup(s, gi, revision);
    this.settle();
  }

  /**
   * Writes one step to `sessions`, each from its own revision: the shared changes encoded once
   * per distinct revision (usually one), with each session's own changes (if any) added to its
   * copy of the last part.
   */
  private sendStep(sessions: readonly Session[], to: number, shared: readonly ViewChange[], own: (s: Session) => readonly ViewChange[]): void {
    const variants = new Map<string, { readonly parts: WireTableRows[][]; readonly byFrom: Map<number, { readonly leading: Buffer[]; lastShared?: Buffer }> }>();
    for (const s of sessions) {
      let variant = variants.get(s.diffKey);
      if (variant === undefined) variants.set(s.diffKey, (variant = { parts: encodeParts(this.source.schema, shared, this.limits.partBytesMax, s.diffTables), byFrom: new Map() }));
      const { parts, byFrom } = variant;
      const last = Math.max(parts.length, 1) - 1;
      const from = s.revision;
      let enc = byFrom.get(from);
      if (enc === undefined) {
        const leading: Buffer[] = [];
        for (let i = 0; i < parts.length - 1; i++) leading.push(this.encode({ delta: { fromRevision: from, toRevision: to, reset: false, more: true, tables: parts[i] as WireTableRows[] } }));
        byFrom.set(from, (enc = { leading }));
      }
      for (const m of enc.leading) this.write(s, m, to);
      enc.lastShared ??= this.encode({ delta: { fromRevision: from, toRevision: to, reset: false, more: false, tables: parts[last] ?? [] } });
      this.write(s, this.forStream(s, enc.lastShared, own(s)), to);
    }
  }

  /**
   * The last message of a step encoded for many streams, as stream `s` is to receive it: with
   * its own changes `mine`, and the Ack records it was not sent yet (as the rows are now) that
   * `mine` does not carry already. The records count as sent from then on.
   */
  private forStream(s: Session, message: Buffer, mine: readonly ViewChange[]): Buffer {
    const own = this.withUnsentAckRecords(s, mine);
    return own.length === 0 ? message : appendTables(message, encodeParts(this.source.schema, own, Number.MAX_SAFE_INTEGER)[0] ?? []);
  }

  private withUnsentAckRecords(s: Session, mine: readonly ViewChange[]): readonly ViewChange[] {
    if (s.unsentAckRecords.size === 0) return mine;
    const out = [...mine];
    const rows = this.rows('Chassis_Private');
    for (const uuid of s.unsentAckRecords) {
      if (mine.some((c) => c.uuid === uuid)) continue;
      // Gone since: its removal was a step of this stream's own, which took the records along;
      // should it not have been, the removal goes now.
      out.push({ table: 'Chassis_Private', uuid, row: rows.get(uuid) });
    }
    s.unsentAckRecords.clear();
    return out;
  }

  private encode(m: Parameters<typeof encodeServerMessage>[0]): Buffer {
    this.counters.encoded++;
    return encodeServerMessage(m);
  }

  /** Sessions that wrote past their queue's limits during a step, moved to syncing after it. */
  private readonly overflowed = new Set<Session>();

  private write(s: Session, message: Buffer, revision: number): void {
    if (s.state === 'closed') return;
    s.queuedBytes += message.length;
    s.queuedMessages++;
    s.revision = revision;
    this.counters.written++;
    this.counters.bytesWritten += message.length;
    const bytes = message.length;
    s.sink.write(message, () => {
      s.queuedBytes -= bytes;
      s.queuedMessages--;
      this.drained(s);
    });
    if (s.state === 'live' && (s.queuedBytes > this.limits.queueBytesMax || s.queuedMessages > this.limits.queueMessagesMax)) this.overflowed.add(s);
  }

  /** Moves the sessions whose queues overflowed out of their groups (after a whole step). */
  private settle(): void {
    for (const s of this.overflowed) {
      if (s.state !== 'live') continue;
      this.leaveGroup(s);
      s.state = 'syncing';
      this.counters.fellBehind++;
    }
    this.overflowed.clear();
  }

  private drained(s: Session): void {
    if (s.state !== 'syncing' || s.queuedBytes > this.limits.queueBytesLow) return;
    if (s.backlog !== undefined) {
      this.pump(s);
      this.settle();
    } else {
      this.scheduleCatchUp(s);
    }
  }

  // --- Catching up -------------------------------------------------------------------------

  private scheduleCatchUp(s: Session): void {
    if (s.catchUpScheduled || s.state !== 'syncing') return;
    s.catchUpScheduled = true;
    this.defer(() => {
      s.catchUpScheduled = false;
      if (s.state === 'syncing' && s.backlog === undefined && s.queuedBytes <= this.limits.queueBytesLow) this.catchUp(s);
      this.settle();
    });
  }

  /**
   * Brings a syncing session to the current revision in one step (from history, or a
   * snapshot), then puts it in its group. A step too large to queue at once becomes a backlog
   * written as the queue drains; the session joins its group after a last, small catch-up.
   */
  private catchUp(s: Session): void {
    if (s.state !== 'syncing' || s.backlog !== undefined || s.waitingForBudget) return;
    const revision = this.source.revision();
    const gi = this.currentGroupInterest(s);
    const after = this.interestOf(s, gi);
    if (s.resumed && s.revision === revision && setsEqual(s.held.datapaths, gi.datapaths) && setsEqual(s.held.ifaceIds, s.ifaceIds)) {
      this.joinGroup(s, gi, revision);
      return;
    }
    if (this.syncBytes >= this.limits.syncBytesMax && this.syncBytes > 0) {
      s.waitingForBudget = true;
      this.counters.budgetWaits++;
      this.budgetQueue.push(s);
      return;
    }
    const plan = this.plan(s);
    let backlog: Backlog;
    if (plan.kind === 'snapshot') {
      this.counters.snapshots++;
      const parts = this.cached(`S|${revision}|${groupKeyOf(gi)}`, () => visibleRows(this.index, this.rows, this.source.schema.tables.keys(), after, 'group'));
      const personal = encodeParts(this.source.schema, visibleRows(this.index, this.rows, this.source.schema.tables.keys(), after, 'personal'), Number.MAX_SAFE_INTEGER)[0] ?? [];
      const resume: WireResume | undefined = s.resumed ? undefined : { mode: 'SNAPSHOT', fromRevision: s.revision, toRevision: revision, reason: plan.reason, member: this.options.member, view: this.options.view ?? '' };
      backlog = { from: s.revision, to: revision, reset: true, parts, personal, resume, bytes: partsBytes(parts), next: 0 };
    } else {
      this.counters.catchUps++;
      const before = s.held;
      const cands = plan.cands;
      const taken = new Set(cands.map(candidateKey));
      const extra = candidatesOfDatapaths(this.index, this.rows, symmetricDifference(before.datapaths, gi.datapaths), taken);
      const extraPorts = candidatesOfPorts(this.index, this.rows, symmetricDifference(before.ifaceIds, after.ifaceIds), taken);
      const both = [...cands, ...extra, ...extraPorts];
      const key = `D|${s.revision}|${revision}|${groupKeyOf(before)}|${groupKeyOf(gi)}|${s.diffKey}`;
      const parts = this.cached(key, () => groupStep(both, before, gi), s.diffTables);
      let mine = personalStep(both.filter((c) => personallyRelevant(c, before, after)), before, after);
      // A resuming agent's Hello infers the iface-ids its view was built with from the
      // Port_Bindings it holds outside its datapaths (proto Hello.iface_ids). That can claim more
      // than the view has: an external port is held by every chassis, wanted or not, and its
      // container ports then count as held. Its own rows are few: they are sent again whole (an
      // upsert of a row it has changes nothing), so none it lacks is missing.
      if (!s.resumed) mine = [...mine, ...visibleRows(this.index, this.rows, this.source.schema.tables.keys(), after, 'personal')];
      const personal = encodeParts(this.source.schema, mine, Number.MAX_SAFE_INTEGER)[0] ?? [];
      const resume: WireResume | undefined = s.resumed ? undefined : { mode: 'DELTA', fromRevision: s.revision, toRevision: revision, reason: plan.reason, member: this.options.member, view: this.options.view ?? '' };
      backlog = { from: s.revision, to: revision, reset: false, parts, personal, resume, bytes: partsBytes(parts), next: 0 };
    }
    s.resumed = true;
    s.backlog = backlog;
    s.held = after;
    // The step is from the stream's revision: it carries the Ack records not sent yet.
    s.unsentAckRecords.clear();
    this.syncBytes += backlog.bytes;
    this.pump(s);
  }

  private plan(s: Session): { kind: 'snapshot'; reason: string } | { kind: 'delta'; reason: string; cands: Candidate[] } {
    if (s.revision === 0) return { kind: 'snapshot', reason: 'the agent holds nothing yet' };
    const view = this.options.view ?? '';
    if (!s.resumed && s.helloView !== view) return { kind: 'snapshot', reason: `the agent's view was derived by other software (view ${JSON.stringify(s.helloView)}, this member's ${JSON.stringify(view)})` };
    const since = this.source.history.since(s.revision);
    if (since.kind === 'compacted') return { kind: 'snapshot', reason: `compacted: revision ${s.revision} is no longer retained here (the oldest is ${since.minRevision})` };
    let changes = 0;
    for (const item of since.items) changes += item.delta.changes.length;
    if (changes > this.limits.catchUpChangesMax) return { kind: 'snapshot', reason: `${changes} row changes since revision ${s.revision}: a snapshot is smaller` };
    const window = windowOf(since.items.map((i) => i.delta));
    return { kind: 'delta', reason: s.resumed ? 'caught up' : `resumed after revision ${s.revision}`, cands: candidatesOf(this.index, this.rows, window) };
  }

  /** Encoded parts of a step that other streams with the same key reuse. */
  private cached(key: string, changes: () => readonly ViewChange[], diffTables?: ReadonlySet<string>): WireTableRows[][] {
    const hit = this.cache.get(key);
    if (hit !== undefined) {
      this.counters.cacheHits++;
      this.cache.delete(key);
      this.cache.set(key, hit);
      return hit.parts;
    }
    const parts = encodeParts(this.source.schema, changes(), this.limits.partBytesMax, diffTables);
    const bytes = partsBytes(parts);
    if (bytes <= this.limits.cacheBytesMax / 4) {
      this.cache.set(key, { parts, bytes });
      this.cacheBytes += bytes;
      while (this.cache.size > this.limits.cacheEntriesMax || this.cacheBytes > this.limits.cacheBytesMax) {
        const [oldest, entry] = this.cache.entries().next().value as [string, { bytes: number }];
        this.cache.delete(oldest);
        this.cacheBytes -= entry.bytes;
      }
    }
    return parts;
  }

  /** Writes what the queue has room for of a session's backlog; at its end, catches up again. */
  private pump(s: Session): void {
    const b = s.backlog;
    if (b === undefined || s.state !== 'syncing') return;
    if (b.resume !== undefined && b.next === 0) this.write(s, this.encode({ resume: b.resume }), s.revision);
    // A resume at the agent's own revision with nothing to change needs no step at all.
    const empty = !b.reset && b.from === b.to && b.parts.length === 0 && b.personal.length === 0;
    const count = empty ? 0 : Math.max(b.parts.length, 1);
    while (b.next < count && s.queuedBytes <= this.limits.queueBytesMax) {
      const i = b.next++;
      const last = i === count - 1;
      const tables = [...(b.parts[i] ?? []), ...(last ? b.personal : [])];
      this.write(s, this.encode({ delta: { fromRevision: b.from, toRevision: b.to, reset: b.reset, more: !last, tables } }), b.to);
    }
    if (b.next < count) return;
    this.releaseBacklog(s);
    // The step is queued; anything committed meanwhile (or an interest changed) is the next.
    this.catchUp(s);
  }

  private releaseBacklog(s: Session): void {
    const b = s.backlog;
    if (b === undefined) return;
    s.backlog = undefined;
    this.syncBytes -= b.bytes;
    while (this.budgetQueue.length > 0 && this.syncBytes < this.limits.syncBytesMax) {
      const next = this.budgetQueue.shift() as Session;
      next.waitingForBudget = false;
      this.scheduleCatchUp(next);
    }
  }
}
