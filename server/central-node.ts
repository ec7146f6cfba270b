// One central node: a Raft member whose state machine is the OVN_Northbound database, with the
// bounded change history that watches resume from. This is the imperative shell around
// NbStateMachine: it draws UUID seeds, prechecks requests, forwards writes to the leader,
// retries blocked "wait"s, and serves reads at the consistency asked for.
import { randomFillSync, randomUUID } from 'node:crypto';
import { RaftNode, ProposalError, type FatalError, type NodeObserver } from '../cluster/node.js';
import type { Transport } from '../cluster/transport.js';
import type { NodeId } from '../cluster/types.js';
import { evaluateConditions, parseConditions } from '../ovsdb/condition.js';
import type { DatabaseSchema, DbDelta, RbacSession, Row, UuidSeed } from '../ovsdb/index.js';
import { OvsdbError, answerRefused, compactTransaction, findColumn, parseDatabaseSchema, precheckTransaction, refusalIsStateFree, rowToJson, transact } from '../ovsdb/index.js';
import { NB_SCHEMA_JSON, SB_SCHEMA_JSON } from '../ovsdb/schemas/index.js';
import { APPLY_VERSION_RBAC, applyVersionMaxOf, applyVersionTarget, memberInfoOf } from './apply-version.js';
import { clientTables, rbacUnenforcedRefusal } from './chassis-store.js';
import { sbViewId } from './sb-view-id.js';
import { encodeCommand, nbTxn, sbTxn } from './commands.js';
import type { HistoryLimits } from './history.js';
import { History, databaseBytes, historyDefaults } from './history.js';
import type { ApplyResult, CommitEvent, Projection } from './nb-state-machine.js';
import { LaggardCursor, NbStateMachine, mergeDeltas } from './nb-state-machine.js';
import { NbGroupProposer, groupDefaults, type GroupLimits } from './nb-group-proposer.js';
import { NorthdProjection } from './northd-projection.js';
import { joinSbGlobal, sbViewDelta } from './sb-global-view.js';
import { LiveAcks } from './live-acks.js';
import { Sessions } from './sessions.js';
import { CentralNodeError } from './errors.js';

const emptyRows: ReadonlyMap<string, Row> = new Map();

export { CentralNodeError };

export interface CentralNodeOptions {
  readonly id: NodeId;
  readonly clusterId: string;
  readonly dataDir: string;
  readonly transport: Transport;
  /** Raft peer addresses by node id. */
  readonly peers: ReadonlyMap<NodeId, string>;
  readonly bootstrap?: readonly NodeId[];
  /** Group commit of NB transactions (server/nb-group-proposer.ts); txnsMax 1 turns it off. */
  readonly groupLimits?: GroupLimits;
  readonly tickMs?: number;
  readonly electionTicks?: number;
  readonly snapshotEntries?: number;
  /** See RaftNodeOptions: how long a lowest-id founder waits before campaigning (default centralFoundingCampaignMs). */
  readonly foundingCampaignMs?: number;
  /** See RaftNodeOptions: how long a leader holds a commit index for its next append. */
  readonly commitLingerMs?: number;
  /** See RaftNodeOptions: compaction by bytes of log, and the leader's hand-off before a slow snapshot. */
  readonly snapshotLogBytes?: number;
  readonly snapshotLogRatio?: number;
  readonly snapshotHandoffMs?: number;
  readonly history?: HistoryLimits;
  /**
   * The projection the state machine feeds: a NorthdProjection when absent, none when null.
   * It must be fresh (one per node start).
   */
  readonly projection?: Projection | null;
  /**
   * How a follower hands a write to the leader (the service layer knows the addresses), with
   * the RBAC session of an SB write from a remote with a role (TransactOptions.rbac), which the
   * leader must hold the write to.
   */
  readonly forward?: (leader: NodeId, ops: readonly unknown[], db: TransactDb, rbac?: RbacSession) => Promise<TransactOutcome>;
  readonly onFatalError?: (err: FatalError) => void;
  /**
   * The highest apply version this member implements (server/apply-version.ts): all this build
   * has unless lowered, which tests do to stand for a member on an older build.
   */
  readonly applyVersionMax?: number;
  /**
   * The id of the software deriving this member's SB view (server/sb-view-id.ts), which the SB
   * view's resume tokens carry; by default this build's.
   */
  readonly sbViewId?: string;
  /** Told the durations of writes, snapshots, transactions and projection runs (metrics). */
  readonly observe?: CentralObserver;
}

export interface CentralObserver extends NodeObserver {
  /** One client transaction as this node answered it (forwarded ones included). */
  transacted?(ms: number, db: TransactDb, outcome: 'committed' | 'failed' | 'error'): void;
  /** One run of the projection inside apply. */
  projected?(ms: number): void;
}

export interface TransactOutcome {
  readonly results: unknown[];
  readonly revision: number;
  readonly failed: boolean;
}

/** Named limits of the central node's request path. */
export const centralLimits = {
  /** How long a write keeps looking for a leader (elections, forwarding) before giving up. */
  leaderWaitMsMax: 10_000,
  /** How long a blocked "wait" without its own timeout is retried. */
  waitRetryMsMax: 60_000,
  /** Operations in one transaction. */
  opsMax: 100_000,
  /** The longest a Wait for sb_cfg/hv_cfg may last (and its default). */
  cfgWaitMsMax: 600_000,
  /** How long a forwarded write's reply waits for this replica to apply it. */
  applyWaitMsMax: 10_000,
  /** nb_cfg targets whose search for a chassis short of them is kept (the oldest goes first). */
  laggardCursorsMax: 4,
} as const;

/** NB_Global's nb_cfg and the two values that follow it (0 when NB_Global has no row yet). */
export interface CfgState {
  readonly revision: number;
  readonly nbCfg: number;
  readonly sbCfg: number;
  readonly hvCfg: number;
}

/**
 * Whether a forwarded call failed before any byte of it reached the peer: grpc-js reports a
 * connection that could not be made as UNAVAILABLE "No connection established".
 */
function neverDelivered(err: unknown): boolean {
  const e = err as { code?: number; details?: string };
  return e.code === 14 && typeof e.details === 'string' && /No connection established/i.test(e.details);
}

/** Which database a transaction is on: the NB, or the chassis-owned part of the SB. */
export type TransactDb = 'OVN_Northbound' | 'OVN_Southbound';

/** See CentralNode.feed. */
export interface DbFeed {
  readonly schema: DatabaseSchema;
  rows(table: string): ReadonlyMap<string, Row>;
  readonly history: History;
  /** Every later revision that changed this database, in order, with its changes. */
  onChange(listener: (e: { revision: number; delta: DbDelta }) => void): () => void;
}

/**
 * Random words drawn from the system's generator this many at a time: one draw per seed cost
 * a call into the crypto library per transaction (about 35 us on the leader's critical path).
 */
const SEED_POOL_WORDS = 1024;
const seedPool = new Uint32Array(SEED_POOL_WORDS);
let seedPoolAt = SEED_POOL_WORDS;

function randomSeed(): UuidSeed {
  for (;;) {
    if (seedPoolAt + 4 > SEED_POOL_WORDS) {
      randomFillSync(seedPool);
      seedPoolAt = 0;
    }
    const at = seedPoolAt;
    seedPoolAt += 4;
    const seed: UuidSeed = [seedPool[at] as number, seedPool[at + 1] as number, seedPool[at + 2] as number, seedPool[at + 3] as number];
    if (seed.some((x) => x !== 0)) return seed;
  }
}

/** An operation that reads or annotates only: select and comment. */
function isReadOnlyOp(op: unknown): boolean {
  const kind = (op as { op?: unknown } | null)?.op;
  return kind === 'select' || kind === 'comment';
}

/**
 * A write whose client waits on every member's applies, not only the leader's: an update or
 * mutate of the nb_cfg column of NB_Global (ovn-nbctl --wait=sb|hv, `ovnts nbctl --wait`) or of
 * Chassis_Private (an agent's acknowledgement, which hv_cfg on every member waits for). Its
 * commit index goes to the followers at once (ProposeOptions.broadcastCommit).
 */
export function waitsOnFollowers(ops: readonly unknown[]): boolean {
  return ops.some((op) => {
    const o = op as { op?: unknown; table?: unknown; row?: unknown; mutations?: unknown } | null;
    if (o === null || typeof o !== 'object' || (o.table !== 'NB_Global' && o.table !== 'Chassis_Private')) return false;
    if (o.op === 'update') return o.row !== null && typeof o.row === 'object' && 'nb_cfg' in o.row;
    if (o.op === 'mutate') return Array.isArray(o.mutations) && o.mutations.some((m) => Array.isArray(m) && m[0] === 'nb_cfg');
    return false;
  });
}

/**
 * From this many operations on, a transaction's apply takes milliseconds on every member
 * (about 3-5 ms per 100 switch inserts with their projection). Held for the next append, its
 * commit index would reach the followers only after the leader applied it, and they would
 * apply it while the next transaction's append waits for their acknowledgements: the applies
 * ran one after the other. Sent at once, they run alongside the leader's. Measured with
 * 1,000-op batches on a 3-member `ovnts up`: 9,098 against 9,623 rows/s (median of three).
 */
export const bulkOpsMin = 100;

/**
 * A new cluster's lowest-id founder campaigns this long after it starts (RaftNodeOptions
 * foundingCampaignMs) rather than waiting one to two election timeouts: `ovnts up` of three
 * members took 2.7-3.4 s until every member answered through a leader, about half of it that wait.
 */
export const centralFoundingCampaignMs = 200;

/**
 * Whether a transaction's commit index goes to the followers at once: see waitsOnFollowers,
 * bulkOpsMin and TransactOptions.forwarded.
 */
export function broadcastsCommit(ops: readonly unknown[], options: TransactOptions = {}): boolean {
  return options.forwarded === true || ops.length >= bulkOpsMin || waitsOnFollowers(ops);
}

export interface TransactOptions {
  /**
   * A member forwarded this write from its client, and answers that client only once it has
   * applied it too: its commit index goes to the followers at once (broadcastCommit). Held for
   * the leader's next append, it would reach them only after up to commitLingerMs (a serial
   * client's next write waits on this answer, so no append comes sooner).
   */
  readonly forwarded?: boolean;
  /**
   * The role and client id of the session an OVN_Southbound write came from, when the remote it
   * came through has a role (OVN's RBAC: the door's Connection row says role=ovn-controller):
   * the write is held to the role's permissions. Ignored for OVN_Northbound, which has no RBAC.
   */
  readonly rbac?: RbacSession;
}

export class CentralNode {
  readonly schema: DatabaseSchema;
  readonly sm: NbStateMachine;
  readonly history: History;
  /** What the state machine feeds, if anything (the SB view when it is a NorthdProjection). */
  readonly projection: Projection | undefined;
  /** OVN_Southbound, for reads of the derived SB view. */
  readonly sbSchema: DatabaseSchema = parseDatabaseSchema(SB_SCHEMA_JSON);
  /** Clients connected to this member, by kind: each door opens and closes its own. */
  readonly sessions = new Sessions();
  /** Agents' acks heard here or relayed by other members, not yet committed (Wait(HV) counts them). */
  readonly liveAcks = new LiveAcks((uuid) => this.sm.chassis.get('Chassis_Private', uuid)?.nb_cfg as number | undefined);
  /**
   * liveReaches' state: the revision at which acks were last pruned; by target, where its search
   * for a chassis short of it stopped (a Wait and the ack writer may ask about different ones).
   */
  private livePrunedAt = -1;
  private readonly liveCursors = new Map<number, LaggardCursor>();
  private readonly commitListeners = new Set<(e: CommitEvent) => void>();
  /** Groups the NB transactions proposed in one turn into one entry (server/nb-group-proposer.ts). */
  readonly nbGroups: NbGroupProposer;

  private constructor(
    readonly node: RaftNode,
    sm: NbStateMachine,
    history: History,
    private readonly options: CentralNodeOptions,
  ) {
    this.schema = sm.nb.schema;
    this.sm = sm;
    this.history = history;
    this.sbHistory = new History(options.history ?? historyDefaults);
    this.projection = options.projection === null ? undefined : (options.projection ?? undefined);
    this.nbGroups = new NbGroupProposer(
      (data, broadcastCommit, onlyAfter) => this.node.propose(data, undefined, { broadcastCommit, ...(onlyAfter !== undefined ? { onlyAfter } : {}) }),
      options.groupLimits ?? groupDefaults,
    );
  }

  /** The northd projection, when this node runs one (the default). */
  get northd(): NorthdProjection | undefined {
    return this.projection instanceof NorthdProjection ? this.projection : undefined;
  }

  static async start(options: CentralNodeOptions): Promise<CentralNode> {
    const schema = parseDatabaseSchema(NB_SCHEMA_JSON);
    const projection = options.projection === null ? undefined : (options.projection ?? new NorthdProjection());
    const projected = options.observe?.projected?.bind(options.observe);
    const sm = new NbStateMachine({
      schema,
      ...(projection ? { projection } : {}),
      ...(projected ? { observeProjection: projected } : {}),
      ...(options.applyVersionMax !== undefined ? { applyVersionMax: options.applyVersionMax } : {}),
    });
    // Every member tells its peers how far it can apply; a leader moves the cluster that far.
    options.transport.setMemberInfo?.(memberInfoOf(sm.applyVersionMax));
    const history = new History(options.history ?? historyDefaults);
    const node = await RaftNode.start({
      id: options.id,
      clusterId: options.clusterId,
      dataDir: options.dataDir,
      transport: options.transport,
      stateMachine: sm,
      peers: options.peers,
      ...(options.bootstrap ? { bootstrap: options.bootstrap } : {}),
      ...(options.tickMs !== undefined ? { tickMs: options.tickMs } : {}),
      ...(options.electionTicks !== undefined ? { electionTicks: options.electionTicks } : {}),
      ...(options.snapshotEntries !== undefined ? { snapshotEntries: options.snapshotEntries } : {}),
      ...(options.snapshotLogBytes !== undefined ? { snapshotLogBytes: options.snapshotLogBytes } : {}),
      ...(options.snapshotLogRatio !== undefined ? { snapshotLogRatio: options.snapshotLogRatio } : {}),
      ...(options.snapshotHandoffMs !== undefined ? { snapshotHandoffMs: options.snapshotHandoffMs } : {}),
      ...(options.commitLingerMs !== undefined ? { commitLingerMs: options.commitLingerMs } : {}),
      foundingCampaignMs: options.foundingCampaignMs ?? centralFoundingCampaignMs,
      ...(options.onFatalError ? { onFatalError: options.onFatalError } : {}),
      ...(options.observe ? { observe: options.observe } : {}),
    });
    // The histories start where the restored state is: earlier revisions cannot be resumed.
    const central = new CentralNode(node, sm, history, { ...options, projection: projection ?? null });
    central.resetHistories(sm.revision);
    // The SB view's changes of one revision: northd's (there may be two steps in one
    // revision) and the chassis tables', gathered until that revision's commit event.
    let pendingSb: DbDelta = { changes: [] };
    if (projection instanceof NorthdProjection) {
      projection.onSbChange((_revision, delta) => {
        pendingSb = mergeDeltas(pendingSb, delta);
      });
    }
    sm.onCommit((e) => {
      history.append(e.revision, e.delta);
      const sb = sbViewDelta(pendingSb, e.chassisDelta, central.northdSbGlobal(), central.operatorSbGlobal());
      pendingSb = { changes: [] };
      if (sb.changes.length > 0) central.sbHistory.append(e.revision, sb);
      for (const l of central.commitListeners) l(e);
      if (sb.changes.length > 0) for (const l of central.sbListeners) l({ revision: e.revision, delta: sb });
    });
    // A snapshot installed while running replaces everything: watchers of older revisions
    // must re-read (they are told `compacted`), and their streams are cut by the listeners.
    sm.onRestore((revision) => {
      pendingSb = { changes: [] };
      central.resetHistories(revision);
      for (const l of central.restoreListeners) l(revision);
    });
    node.onProgress(() => central.moveApplyVersion());
    return central;
  }

  get id(): NodeId {
    return this.options.id;
  }

  /** The id of the software that derives this member's SB view (server/sb-view-id.ts). */
  get sbViewId(): string {
    return this.options.sbViewId ?? sbViewId();
  }

  /** A leader's apply-version entry on its way (moveApplyVersion); writes wait for it. */
  private versionMove: Promise<void> | undefined;

  /**
   * The highest apply version each other member told this one (undefined: not heard, or a
   * build from before apply versions). A transport that carries no member info is taken to
   * connect members of this same build (in-process clusters).
   */
  peerApplyVersionMax(id: NodeId): number | undefined {
    const transport = this.options.transport;
    return transport.peerInfo === undefined ? this.sm.applyVersionMax : applyVersionMaxOf(transport.peerInfo(id));
  }

  /**
   * On the leader, after each step of the node: when every member has told how far it can
   * apply and all can go further than the cluster is, the entry that moves it there
   * (server/apply-version.ts). One at a time; a lost one is proposed again at the next step.
   */
  private moveApplyVersion(): void {
    if (this.versionMove !== undefined || this.sm.applyVersion >= this.sm.applyVersionMax) return;
    if (this.node.leadership().role !== 'leader') return;
    const target = applyVersionTarget(this.sm.applyVersion, this.sm.applyVersionMax, this.node.otherMembers(), (id) => this.peerApplyVersionMax(id));
    if (target === undefined) return;
    const data = encodeCommand({ kind: 'apply-version', version: target, seed: randomSeed() });
    this.versionMove = this.node.propose(data, undefined, { broadcastCommit: true }).then(
      () => undefined,
      () => undefined,
    );
    void this.versionMove.finally(() => {
      this.versionMove = undefined;
    });
  }

  /** Retained SB view changes (northd's and the chassis tables'), for SB monitors that resume. */
  readonly sbHistory: History;
  private readonly sbListeners = new Set<(e: { revision: number; delta: DbDelta }) => void>();
  private readonly restoreListeners = new Set<(revision: number) => void>();

  /** Called with the SB view's changes of each revision that changed it, in order. */
  onSbCommit(listener: (e: { revision: number; delta: DbDelta }) => void): () => void {
    this.sbListeners.add(listener);
    return () => this.sbListeners.delete(listener);
  }

  /** Called when a snapshot from the leader replaced this replica's state while running. */
  onRestore(listener: (revision: number) => void): () => void {
    this.restoreListeners.add(listener);
    return () => this.restoreListeners.delete(listener);
  }

  /**
   * The SB view as an OVSDB database to read (OVN_Southbound): northd's rows, and the chassis
   * tables as the chassis wrote them. Read-only; live.
   */
  sbView(): { readonly schema: DatabaseSchema; rows(table: string): ReadonlyMap<string, Row> } {
    return { schema: this.sbSchema, rows: (table: string) => this.sbRows(table) };
  }

  private sbRows(table: string): ReadonlyMap<string, Row> {
    if (table === 'SB_Global') return this.sbGlobalRows();
    if (clientTables.includes(table)) return this.sm.chassis.rows(table);
    return this.northd?.view().get(table) ?? emptyRows;
  }

  /** northd's SB_Global row, without the operator's columns. */
  private northdSbGlobal(): Row | undefined {
    for (const row of this.northd?.view().get('SB_Global')?.values() ?? []) return row;
    return undefined;
  }

  /** The operator's half of SB_Global (chassis-store.ts), when one was written. */
  private operatorSbGlobal(): Row | undefined {
    const northd = this.northdSbGlobal();
    return northd === undefined ? undefined : this.sm.chassis.get('SB_Global', northd._uuid);
  }

  /** SB_Global as the view shows it (sb-global-view.ts), built again only when a half changed. */
  private sbGlobalRows(): ReadonlyMap<string, Row> {
    const northd = this.northdSbGlobal();
    const operator = this.operatorSbGlobal();
    const memo = this.sbGlobalMemo;
    if (memo !== undefined && memo.northd === northd && memo.operator === operator) return memo.rows;
    const rows = new Map<string, Row>(northd === undefined ? [] : [[northd._uuid, joinSbGlobal(northd, operator)]]);
    this.sbGlobalMemo = { northd, operator, rows };
    return rows;
  }

  private sbGlobalMemo: { readonly northd: Row | undefined; readonly operator: Row | undefined; readonly rows: ReadonlyMap<string, Row> } | undefined;

  /**
   * Both histories start again at `revision`, each with the estimated size of its database
   * there (what a database-relative bound compares the retained bytes with).
   */
  private resetHistories(revision: number): void {
    const nb = this.sm.nb;
    this.history.reset(revision, databaseBytes([...nb.schema.tables.keys()].map((t) => nb.rows(t))));
    const sb = this.sbView();
    this.sbHistory.reset(revision, databaseBytes([...sb.schema.tables.keys()].map((t) => sb.rows(t))));
  }

  /**
   * One database as a watcher sees it: its rows now, its retained changes, and each new
   * revision's changes. OVN_Northbound is the replicated NB; OVN_Southbound the SB view.
   */
  feed(db: TransactDb): DbFeed {
    if (db === 'OVN_Northbound') {
      return {
        schema: this.schema,
        rows: (table) => this.sm.nb.rows(table),
        history: this.history,
        onChange: (l) => this.onCommit((e) => l({ revision: e.revision, delta: e.delta })),
      };
    }
    const view = this.sbView();
    return { schema: view.schema, rows: view.rows, history: this.sbHistory, onChange: (l) => this.onSbCommit(l) };
  }

  /** Called after every committed change, in revision order, on this replica. */
  onCommit(listener: (e: CommitEvent) => void): () => void {
    this.commitListeners.add(listener);
    return () => this.commitListeners.delete(listener);
  }

  /** The revision this replica has applied (every applied entry, not only NB changes). */
  get revision(): number {
    return this.sm.revision;
  }

  /**
   * Resolves once this replica has applied `revision`, or after `waitMsMax` (the caller then
   * answers anyway: the write did commit, only this replica is behind).
   */
  async untilApplied(revision: number, waitMsMax: number = centralLimits.applyWaitMsMax): Promise<void> {
    const deadline = Date.now() + waitMsMax;
    while (this.revision < revision && Date.now() < deadline) await this.nextCommit(20);
  }

  /** Resolves at the next commit (or, with `orLiveAck`, the next live ack), or after `timeoutMs`. */
  private nextCommit(timeoutMs: number, orLiveAck = false): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, timeoutMs);
      const off = this.onCommit(done);
      const offAck = orLiveAck ? this.liveAcks.onAdvance(done) : undefined;
      function done(): void {
        clearTimeout(timer);
        off();
        offAck?.();
        resolve();
      }
    });
  }

  /**
   * Runs one OVSDB transaction through the log. Malformed transactions are answered without
   * touching the log; on a follower the transaction is forwarded to the leader.
   */
  async transact(ops: unknown, db: TransactDb = 'OVN_Northbound', options: TransactOptions = {}): Promise<TransactOutcome> {
    const observe = this.options.observe?.transacted;
    if (observe === undefined) return this.transactOnce(ops, db, options);
    const started = performance.now();
    try {
      const out = await this.transactOnce(ops, db, options);
      observe.call(this.options.observe, performance.now() - started, db, out.failed ? 'failed' : 'committed');
      return out;
    } catch (err) {
      observe.call(this.options.observe, performance.now() - started, db, 'error');
      throw err;
    }
  }

  private async transactOnce(ops: unknown, db: TransactDb, options: TransactOptions): Promise<TransactOutcome> {
    if (!Array.isArray(ops)) throw new CentralNodeError('bad-request', 'a transaction is a JSON array of operations');
    if (ops.length > centralLimits.opsMax) throw new CentralNodeError('bad-request', `a transaction has at most ${centralLimits.opsMax} operations`);
    // An SB transaction is checked in apply (server/chassis-store.ts): its rules depend on
    // northd's rows at that revision. A refused one is a no-op entry.
    if (db === 'OVN_Northbound') {
      const refused = precheckTransaction(this.schema, ops);
      if (refused !== undefined) {
        // Never proposed. When an operation before the failing one reads rows (a select, an
        // update's count), they are read here after the same barrier as a read-only
        // transaction's, as ovsdb-server answers `ovsdb-client query` (the ops, then abort).
        if (refusalIsStateFree(ops, refused)) return { results: refused.results, revision: this.revision, failed: true };
        await this.readBarrier('linearizable');
        const out = answerRefused(this.sm.nb, ops, refused, { newUuid: randomUUID });
        return { results: out.results, revision: this.revision, failed: true };
      }
      // Selects and comments change nothing: answered here after a linearizable read barrier,
      // not written to the log (as ovsdb-server commits no empty transaction). A request of a
      // hundred thousand comments is then a local pass, not a megabytes-long entry for every
      // member to persist.
      if (ops.every(isReadOnlyOp)) {
        await this.readBarrier('linearizable');
        const out = transact(this.sm.nb, ops, { newUuid: () => '00000000-0000-0000-0000-000000000000', readOnly: true });
        if (out.kind === 'committed') return { results: out.results, revision: this.revision, failed: false };
        if (out.kind === 'failed') return { results: out.results, revision: this.revision, failed: true };
      }
    }
    const rbac = db === 'OVN_Southbound' ? options.rbac : undefined;
    if (rbac !== undefined && this.sm.applyVersion < APPLY_VERSION_RBAC) {
      // A member behind on the log may not have applied the move to 11 yet: it catches up first.
      await this.readBarrier('linearizable');
      const refused = this.rbacRefusal(ops, rbac);
      if (refused !== undefined) return refused;
    }
    const command = (txnOps: readonly unknown[], seed: UuidSeed, elapsedMs: number, timestampMs: number): ReturnType<typeof sbTxn> =>
      (db === 'OVN_Northbound' ? nbTxn(txnOps, seed, elapsedMs, timestampMs) : sbTxn(txnOps, seed, elapsedMs, timestampMs, rbac));
    const broadcastCommit = broadcastsCommit(ops, options);
    const started = Date.now();
    /** Sends the write to the leader; undefined when it never got there and may be sent again. */
    const forwardTo = async (leader: NodeId, forward: NonNullable<CentralNodeOptions['forward']>): Promise<TransactOutcome | undefined> => {
      try {
        // As a clustered ovsdb-server's follower does, answer once this replica has the
        // write too, so what the client reads or watches here next includes it.
        const out = await forward(leader, ops, db, rbac);
        if (!out.failed) await this.untilApplied(out.revision);
        return out;
      } catch (fwdErr) {
        // A leader that cannot be reached at all never saw the request, so asking again
        // (once the election names another) cannot apply it twice. Any other failure
        // may have come after it committed: that one goes back to the client.
        if (!neverDelivered(fwdErr) || Date.now() - started > centralLimits.leaderWaitMsMax) throw fwdErr;
        await new Promise((r) => setTimeout(r, 20));
        return undefined;
      }
    };
    for (;;) {
      // A follower that knows the leader forwards at once, without a proposal refused first
      // (but one too large for the log is refused here, as that proposal would have been).
      const { role, lead } = this.node.leadership();
      if (role !== 'leader' && lead !== 0 && lead !== this.id && this.options.forward !== undefined) {
        const bytes = encodeCommand(command(ops, randomSeed(), Date.now() - started, Date.now())).byteLength;
        if (bytes > this.node.entryBytesMax) throw new CentralNodeError('too-large', `the transaction is too large for the log: an entry of ${bytes} bytes is over the ${this.node.entryBytesMax}-byte bound on one log entry`);
        const out = await forwardTo(lead, this.options.forward);
        if (out !== undefined) return out;
        continue;
      }
      // A write the leader takes while it moves the cluster's apply version goes after the move
      // (a new cluster's first writes then apply as its members can).
      if (this.versionMove !== undefined) await this.versionMove;
      if (rbac !== undefined) {
        const refused = this.rbacRefusal(ops, rbac);
        if (refused !== undefined) return refused;
      }
      const elapsedMs = Date.now() - started;
      let result: ApplyResult;
      try {
        // With every entry of the log applied, the leader knows the state this transaction
        // will meet and may log it written small for that state (ovsdb/compact.ts), proposed
        // in this turn, right after that index, or not at all.
        const at = db === 'OVN_Northbound' ? this.node.quiescentIndex() : undefined;
        const compacted = at === undefined ? undefined : compactTransaction(this.sm.nb, ops);
        const data = encodeCommand(command(compacted ?? ops, randomSeed(), elapsedMs, Date.now()));
        if (compacted !== undefined) {
          result = await this.nbGroups.proposeAlone(data, broadcastCommit, at as number);
        } else {
          result = db === 'OVN_Northbound' ? await this.nbGroups.propose(data, broadcastCommit) : ((await this.node.propose(data, undefined, { broadcastCommit })).result as ApplyResult);
        }
      } catch (err) {
        if (!(err instanceof ProposalError)) throw err;
        if (err.kind === 'too-large') throw new CentralNodeError('too-large', `the transaction is too large for the log: ${err.message}`);
        if (err.kind === 'not-leader' && err.leaderHint !== 0 && this.options.forward !== undefined) {
          const out = await forwardTo(err.leaderHint, this.options.forward);
          if (out !== undefined) return out;
          continue;
        }
        // It may have applied (or may still): proposing it again could apply it twice, so the
        // client hears that the outcome is unknown, as an OVSDB client would from a lost
        // connection, and decides. That holds for a proposal pending when the node stopped
        // too: the others may still commit its entry.
        if (err.outcomeUnknown) throw new CentralNodeError('unavailable', `the outcome of this transaction is unknown: ${err.message}`);
        if (err.kind === 'stopped') throw new CentralNodeError('unavailable', err.message);
        // No leader yet, or the proposal was lost to a leader change: try again shortly.
        if (Date.now() - started > centralLimits.leaderWaitMsMax) throw new CentralNodeError('unavailable', `no leader: ${err.message}`);
        await new Promise((r) => setTimeout(r, 20));
        continue;
      }
      switch (result.kind) {
        case 'committed':
          return { results: result.results, revision: result.revision, failed: false };
        case 'failed':
          return { results: result.results, revision: result.revision, failed: true };
        case 'blocked': {
          const left = Math.min(result.timeoutMs, centralLimits.waitRetryMsMax) - (Date.now() - started);
          if (left <= 0 && result.timeoutMs === Infinity) throw new CentralNodeError('timeout', `"wait" not satisfied within ${centralLimits.waitRetryMsMax} ms`);
          // Retry when the database changes, or when the wait's timeout expires (then the
          // transaction is proposed once more with elapsedMs past it and fails "timed out").
          await this.nextCommit(Math.max(0, left));
          continue;
        }
        case 'duplicate':
        case 'malformed':
        case 'group':
          throw new Error(`unexpected apply result for a fresh transaction: ${JSON.stringify(result)}`);
      }
    }
  }

  /**
   * The answer to a restricted session's write while this member applies a version below 11
   * (server/apply-version.ts): refused, never logged. Every entry proposed after a version
   * that enforces RBAC is applied at that version or later on every member, so a write this
   * lets through is held to its role everywhere; a write logged at an older version would be
   * applied unrestricted by a member of an older build. Undefined when the write may go on.
   */
  private rbacRefusal(ops: readonly unknown[], rbac: RbacSession): TransactOutcome | undefined {
    if (this.sm.applyVersion >= APPLY_VERSION_RBAC) return undefined;
    const refused = rbacUnenforcedRefusal(ops, rbac);
    return refused === undefined ? undefined : { results: refused.results, revision: this.revision, failed: true };
  }

  /**
   * Selects rows on this replica: after a ReadIndex round for 'linearizable' (sees every
   * write acknowledged before the call), or at once for 'serializable' (maybe stale, never torn).
   */
  async list(table: string, where: unknown, columns: readonly string[] | undefined, consistency: 'linearizable' | 'serializable'): Promise<{ rows: unknown[]; revision: number }> {
    const op: Record<string, unknown> = { op: 'select', table, where: where ?? [] };
    if (columns !== undefined && columns.length > 0) op.columns = columns;
    // A malformed read is answered before the ReadIndex round: bad input never waits on Raft
    // (and never reads as "unavailable" while an election is under way).
    const ts = this.schema.tables.get(table);
    if (ts === undefined) throw new CentralNodeError('bad-request', `unknown table ${table}`);
    for (const c of columns ?? []) if (c !== '_uuid' && c !== '_version' && findColumn(ts, c) === undefined) throw new CentralNodeError('bad-request', `unknown column ${c} in ${table}`);
    try {
      parseConditions(ts, where ?? []);
    } catch (err) {
      if (err instanceof OvsdbError) throw new CentralNodeError('bad-request', `${err.error}: ${err.details}`);
      throw err;
    }
    await this.readBarrier(consistency);
    const out = transact(this.sm.nb, [op], { newUuid: () => '00000000-0000-0000-0000-000000000000', readOnly: true });
    if (out.kind !== 'committed') {
      const err = out.kind === 'failed' ? out.error : undefined;
      throw new CentralNodeError('bad-request', err ? `${err.error}: ${err.details}` : 'select blocked');
    }
    return { rows: (out.results[0] as { rows: unknown[] }).rows, revision: this.revision };
  }

  /**
   * Selects rows of the SB view this replica's northd projection derived (OVN_Southbound,
   * read-only). The view is updated inside apply, so it is always that of the applied
   * revision: a 'linearizable' read (ReadIndex first) sees every NB write acknowledged before
   * the call; a 'serializable' one answers at once, maybe stale, never torn. Tables that the
   * projection does not fill have no rows; the chassis-owned ones (Chassis, Encap, ...) come
   * from what the chassis wrote. Rows come in UUID order.
   */
  async listSouthbound(table: string, where: unknown, columns: readonly string[] | undefined, consistency: 'linearizable' | 'serializable'): Promise<{ rows: unknown[]; revision: number }> {
    const northd = this.northd;
    if (northd === undefined) throw new CentralNodeError('unavailable', 'this node runs no northd projection: no OVN_Southbound view');
    const ts = this.sbSchema.tables.get(table);
    if (ts === undefined) throw new CentralNodeError('bad-request', `unknown OVN_Southbound table ${table}`);
    for (const c of columns ?? []) if (findColumn(ts, c) === undefined) throw new CentralNodeError('bad-request', `unknown column ${c} in ${table}`);
    let clauses;
    try {
      clauses = parseConditions(ts, where ?? []);
    } catch (err) {
      if (err instanceof OvsdbError) throw new CentralNodeError('bad-request', err.message);
      throw err;
    }
    await this.readBarrier(consistency);
    const rows = this.sbRows(table);
    const picked = columns !== undefined && columns.length > 0 ? columns : undefined;
    const out: unknown[] = [];
    for (const uuid of [...rows.keys()].sort()) {
      const row = rows.get(uuid) as Row;
      if (evaluateConditions(clauses, row)) out.push(rowToJson(ts, row, picked));
    }
    return { rows: out, revision: this.revision };
  }

  get clusterId(): string {
    return this.options.clusterId;
  }

  /**
   * The state machine's snapshot (NB database and northd's history) at a revision that is at
   * least every write acknowledged before the call (a ReadIndex round first), as a stream:
   * captured in one synchronous step, so it is one consistent revision, and encoded piece by
   * piece as the caller asks (NbStateMachine.snapshotStream), so it is never held whole.
   */
  async consistentSnapshot(): Promise<ReturnType<NbStateMachine['snapshotStream']>> {
    await this.readBarrier('linearizable');
    return this.sm.snapshotStream();
  }

  /** NB_Global's configuration sequence numbers as this replica has applied them. */
  cfgState(): CfgState {
    const global = [...this.sm.nb.rows('NB_Global').values()][0];
    const num = (v: unknown): number => (typeof v === 'number' ? v : 0);
    return { revision: this.revision, nbCfg: num(global?.nb_cfg), sbCfg: num(global?.sb_cfg), hvCfg: num(global?.hv_cfg) };
  }

  /**
   * ovn-nbctl's --wait: resolves once sb_cfg ('sb') or hv_cfg ('hv') has reached `target`,
   * judged only against state that holds the write the target was taken from, wherever in the
   * cluster it was acknowledged. With `minRevision` (that write's revision) this replica needs
   * only to have applied it: revisions are log indexes, the same on every member. Without it, a
   * ReadIndex round first makes the state at least as new as every acknowledged write. (Without
   * either, a lagging member could answer from a state before the write: nb_cfg is usually
   * increasing there, but nothing stops a client from setting it lower.)
   */
  async waitCfg(target: number, which: 'sb' | 'hv', timeoutMs: number, minRevision = 0): Promise<CfgState> {
    if (!Number.isSafeInteger(target)) throw new CentralNodeError('bad-request', `nb_cfg target must be an integer, got ${target}`);
    if (!Number.isSafeInteger(minRevision) || minRevision < 0) throw new CentralNodeError('bad-request', `min_revision must be a revision, got ${minRevision}`);
    const limit = Math.min(timeoutMs > 0 ? timeoutMs : centralLimits.cfgWaitMsMax, centralLimits.cfgWaitMsMax);
    const started = Date.now();
    if (minRevision === 0) await this.readBarrier('linearizable');
    for (;;) {
      const s = this.cfgState();
      if (s.revision >= minRevision) {
        if ((which === 'sb' ? s.sbCfg : s.hvCfg) >= target) return s;
        if (which === 'hv' && this.liveReaches(target)) return { ...s, hvCfg: this.sm.hvCfgWith((uuid) => this.liveAcks.get(uuid)) };
      }
      const left = limit - (Date.now() - started);
      if (left <= 0) {
        throw new CentralNodeError('timeout', `${which}_cfg is ${which === 'sb' ? s.sbCfg : s.hvCfg}, not yet ${target}, after ${limit} ms`);
      }
      await this.nextCommit(left, which === 'hv');
    }
  }

  /**
   * Whether every chassis that counts for hv_cfg has acknowledged `target`, committed or as far
   * as this member has heard (its agents' acks and those relayed to it). False when it has
   * heard none that the log lacks.
   */
  acknowledgedEverywhere(target: number): boolean {
    return this.liveReaches(target);
  }

  /**
   * Whether hv_cfg reaches `target` counting the acks this member has heard but the log does not
   * hold yet (server/live-acks.ts). Acks the database already holds are pruned once per
   * revision (not at every ack heard), and the search for a chassis short of the target goes on
   * from where it stopped last time (NbStateMachine.hvCfgLaggard).
   */
  private liveReaches(target: number): boolean {
    if (this.livePrunedAt !== this.revision) {
      this.liveAcks.prune();
      this.livePrunedAt = this.revision;
    }
    if (this.liveAcks.size === 0) return false;
    let cursor = this.liveCursors.get(target);
    if (cursor === undefined) {
      if (this.liveCursors.size >= centralLimits.laggardCursorsMax) this.liveCursors.delete(this.liveCursors.keys().next().value as number);
      this.liveCursors.set(target, (cursor = new LaggardCursor()));
    }
    return this.sm.hvCfgLaggard(target, (uuid) => this.liveAcks.get(uuid), cursor) === undefined;
  }

  /** For 'linearizable': a ReadIndex round, then this replica has applied at least that far. */
  private async readBarrier(consistency: 'linearizable' | 'serializable'): Promise<void> {
    if (consistency !== 'linearizable') return;
    // During an election there is briefly no leader to confirm the read: wait for one, up to
    // the same limit a write waits, rather than failing a read that will succeed in a moment.
    const started = Date.now();
    for (;;) {
      try {
        await this.node.readIndex();
        return;
      } catch (err) {
        if (!(err instanceof ProposalError)) throw err;
        const retry = err.kind === 'dropped' || (err.kind === 'not-leader' && err.leaderHint === 0);
        if (!retry || Date.now() - started > centralLimits.leaderWaitMsMax) throw new CentralNodeError('unavailable', err.message);
        await new Promise((r) => setTimeout(r, 20));
      }
    }
  }

  async stop(): Promise<void> {
    await this.node.stop();
  }
}
