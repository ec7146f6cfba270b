// The replicated state machine of a central node: the OVN_Northbound database, changed only by
// committed log entries, followed by the northd projection hook. Every replica applies the
// same entries in the same order and so holds the same database, byte for byte, at the same
// revision (the log index of the last applied transaction).
import assert from 'node:assert/strict';
import { Packr } from 'msgpackr';
import { ApplyRefusedError, type StateMachine } from '../cluster/state-machine.js';
import type { Entry } from '../cluster/types.js';
import { decodeDatabase, encodeDatabase, gatherPieces, msgpackArrayHeader, msgpackBinHeader, streamDatabase, type EncodingStream } from '../ovsdb/codec.js';
import type { DatabaseOptions, DatabaseSchema, DbDelta, RbacSession, Row, RowChange, Uuid, UuidSeed } from '../ovsdb/index.js';
import { Database, insertChange, transact, uuidSource } from '../ovsdb/index.js';
import type { ChassisOwnedColumns, DynamicAddressWrite, IgmpGroupReport, TagWrite } from '../northd/index.js';
import { Ipam, tagWrites } from '../northd/index.js';
import type { BfdStatusWrite } from '../northd/bfd.js';
import { bfdReportWrites, bfdStatusWrites } from '../northd/bfd.js';
import { boolOption } from '../northd/nb.js';
import { nbGlobalOptionsWrite } from '../northd/sb-global.js';
import { APPLY_VERSION_BFD, APPLY_VERSION_CONTROLLER_EVENTS, APPLY_VERSION_PORTS_UP, APPLY_VERSION_PORT_UP_NOTIF, APPLY_VERSION_PREFIX_DELEGATION, APPLY_VERSION_RBAC, APPLY_VERSION_IGMP_GROUPS, APPLY_VERSION_NB_GLOBAL_OPTIONS, APPLY_VERSION_VXLAN_MODE, APPLY_VERSION_MIGRATION_WRITES, APPLY_VERSION_INITIAL, APPLY_VERSION_MAX, APPLY_VERSION_NORTHD_WRITES, checkApplyVersionMax } from './apply-version.js';
import { applySbTxn, chassisSchema, hostnameOf, igmpReportOf, notifiesPortUp, portIsUp, vxlanModeOf } from './chassis-store.js';
import { decodeCommand, type NbTxnCommand } from './commands.js';

/** What a restored chassis database holds that the projection reads. */
export interface RestoredChassisDb {
  /** The registered Chassis, name → UUID, for projection state older than its reading them. */
  readonly chassis: ReadonlyMap<string, Uuid>;
  /** Chassis UUID → its hostname (Chassis without one left out). */
  readonly hostnames: ReadonlyMap<Uuid, string>;
  readonly igmpGroups: ReadonlyMap<Uuid, IgmpGroupReport>;
  /** A Chassis has a vxlan encap and the apply version reads it (VXLAN mode). */
  readonly vxlan?: boolean;
}

/**
 * The seam northd plugs into. Called synchronously inside apply, so it must be pure and
 * deterministic (no clock, no randomness, no I/O): every replica computes the same SB view.
 * A projection may depend on history (tunnel keys are given in order of appearance), so its
 * state travels in the NB snapshot: after `restore(nb, s.snapshot(), r)` it must be exactly
 * what it would have been had it applied the whole log prefix up to r.
 */
export interface Projection {
  /** One committed NB transaction's changes, at `revision`. */
  apply(nb: Database, delta: DbDelta, revision: number): void;
  /** Starts over with no history from `nb` (the empty database of a new state machine). */
  reset(nb: Database, revision: number): void;
  /**
   * The projection's history at the current revision, as bytes that are a pure function of
   * the log prefix (equal on every replica at the same revision).
   */
  snapshot(): Uint8Array;
  /**
   * The NB database was replaced by a snapshot taken at `revision`; `data` is what
   * `snapshot()` returned then (undefined for a snapshot without projection state: the
   * projection starts over from `nb` without history). `chassisDb` is what the chassis
   * database restored beside it holds that the projection reads.
   */
  restore(nb: Database, data: Uint8Array | undefined, revision: number, chassisDb?: RestoredChassisDb): void;
  /** northd's Port_Binding rows now, by UUID (what a chassis's Port_Binding "where" is matched against). */
  portBindings?(): ReadonlyMap<string, Row>;
  /** The chassis-owned Port_Binding columns reported so far, by logical_port. */
  chassisOwned?(): ReadonlyMap<string, ChassisOwnedColumns>;
  /**
   * Chassis changed the chassis-owned columns of these ports (undefined: all cleared), and
   * `chassis` names the Chassis rows that registered, left or were renamed (name → the UUID
   * of the Chassis of that name now, undefined when none).
   */
  setChassisOwned?(
    nb: Database, updates: ReadonlyMap<string, ChassisOwnedColumns | undefined>, revision: number, chassis?: ReadonlyMap<string, Uuid | undefined>,
    hostnames?: ReadonlyMap<Uuid, string | undefined>,
  ): void;
  /** northd's Service_Monitor rows now, by UUID (what a chassis's Service_Monitor "where" is matched against). */
  serviceMonitors?(): ReadonlyMap<string, Row>;
  /** northd's BFD rows now, by UUID (what a chassis's BFD "where" is matched against). */
  bfdSessions?(): ReadonlyMap<string, Row>;
  /** Chassis set the status of these Service_Monitor rows (undefined: cleared). */
  setServiceMonitorStatus?(nb: Database, updates: ReadonlyMap<string, string | undefined>, revision: number): void;
  /** Chassis wrote these IGMP_Group rows (by UUID; undefined: deleted). */
  setIgmpGroups?(nb: Database, updates: ReadonlyMap<Uuid, IgmpGroupReport | undefined>, revision: number): void;
  /** VXLAN mode came or went (a Chassis with a vxlan encap registered, or the last one left). */
  setVxlanMode?(nb: Database, vxlan: boolean, revision: number): void;
  /** The UUID of northd's SB_Global row, when there is one (an operator's SB_Global writes join it). */
  sbGlobalUuid?(): Uuid | undefined;
}

/** What a chassis has acknowledged: its Chassis_Private row's nb_cfg, or more as `live` heard it. */
function ackedWith(priv: Row, live: (privUuid: string) => number | undefined): number {
  return Math.max(priv.nb_cfg as number, live(priv._uuid) ?? 0);
}

/** hvCfgLaggard's answer when NB_Global.nb_cfg itself is below the target. */
export const NB_GLOBAL_LAGS = 'NB_Global';

/**
 * Where NbStateMachine.hvCfgLaggard's search for a chassis short of `target` stopped: the
 * Chassis_Private rows as its last full pass found them, and the position of the one that held
 * the answer back. Kept by the caller between calls; a new target starts a new pass.
 */
export class LaggardCursor {
  target = Number.NaN;
  rows: readonly string[] = [];
  at = 0;
}

/** What one applied entry produced, handed to the node that proposed it. */
export type ApplyResult =
  | { readonly kind: 'committed'; readonly results: unknown[]; readonly revision: number }
  /** The transaction failed; nothing changed on any replica. */
  | { readonly kind: 'failed'; readonly results: unknown[]; readonly revision: number }
  /** A "wait" was not satisfied: nothing changed; the proposer retries after a change. */
  | { readonly kind: 'blocked'; readonly timeoutMs: number; readonly revision: number }
  | { readonly kind: 'duplicate'; readonly revision: number }
  /** An nb-group entry: one result per transaction, in order (each committed, failed or blocked). */
  | { readonly kind: 'group'; readonly results: readonly ApplyResult[]; readonly revision: number }
  | { readonly kind: 'malformed'; readonly reason: string; readonly revision: number };

export interface CommitEvent {
  readonly revision: number;
  /** The NB changes (empty when only chassis-owned SB rows changed). */
  readonly delta: DbDelta;
  /** Changes to the chassis-owned SB tables (server/chassis-store.ts), when there were any. */
  readonly chassisDelta?: DbDelta;
}

export interface NbStateMachineOptions {
  readonly schema: DatabaseSchema;
  readonly projection?: Projection;
  readonly databaseOptions?: DatabaseOptions;
  /**
   * Told how long each projection step took, for metrics only: nothing in the state depends
   * on it.
   */
  readonly observeProjection?: (ms: number) => void;
  /**
   * The highest apply version this state machine implements (server/apply-version.ts):
   * APPLY_VERSION_MAX unless lowered, which tests do to stand for an older build.
   */
  readonly applyVersionMax?: number;
}

const packr = new Packr({ useRecords: false });

/** True when the schema's Logical_Switch_Port has a unique index on name alone, as OVN's has. */
/** NB tables whose rows clients find by name, where OVN's schema has no index on it. */
const nameLookupTables = ['Logical_Switch', 'Logical_Router', 'Load_Balancer'] as const;

function portNameIsUnique(schema: DatabaseSchema): boolean {
  return schema.tables.get('Logical_Switch_Port')?.indexes.some((cols) => cols.length === 1 && cols[0] === 'name') === true;
}

/**
 * 4: [4, revision, NB database, projection state or null, chassis-owned SB database, apply version].
 * 3 (still read): the same without the apply version (1 then).
 * 2 (still read): the same without the chassis database (none was registered then).
 * 1 (still read): [1, revision, database], from before the projection carried history; the
 * projection starts over then.
 */
const snapshotFormat = 4;
const snapshotFormatV3 = 3;
const snapshotFormatV2 = 2;
const snapshotFormatV1 = 1;

export class NbStateMachine implements StateMachine {
  private db: Database;
  /** The chassis-owned SB tables (Chassis, Encap, Chassis_Private, MAC_Binding, FDB). */
  private sb: Database = new Database(chassisSchema());
  /** VXLAN mode as northd was last told (from apply version 8): a Chassis has a vxlan encap. */
  private vxlan = false;
  private rev = 0;
  /**
   * How many counted chassis (hvCfg's) acknowledged each nb_cfg value, so that the lowest is
   * found without a scan of every Chassis_Private on every ack; undefined: rebuilt on next use.
   * Derived from `sb` alone, so equal on every replica; not in snapshots.
   */
  private ackCounts: Map<number, number> | undefined;
  /**
   * northd's address management (northd/ipam.ts): the dynamic_addresses it writes into the NB
   * within the entry that needs them. With a projection only, as only northd writes them (and
   * the tags of northd/tags.ts).
   */
  private readonly ipam: Ipam | undefined;
  /** How entries are applied now (server/apply-version.ts), as the log has moved it. */
  private version = APPLY_VERSION_INITIAL;
  private readonly versionMax: number;
  private readonly listeners = new Set<(e: CommitEvent) => void>();
  private readonly restoreListeners = new Set<(revision: number) => void>();

  /** Called after the state was replaced by a snapshot (history before it is gone). */
  onRestore(listener: (revision: number) => void): () => void {
    this.restoreListeners.add(listener);
    return () => this.restoreListeners.delete(listener);
  }

  constructor(private readonly options: NbStateMachineOptions) {
    this.db = new Database(options.schema, this.databaseOptions());
    this.ipam = options.projection === undefined ? undefined : new Ipam();
    this.versionMax = checkApplyVersionMax(options.applyVersionMax ?? APPLY_VERSION_MAX);
    options.projection?.reset(this.db, 0);
  }

  /** The apply version in force: what the log has moved the cluster to (server/apply-version.ts). */
  get applyVersion(): number {
    return this.version;
  }

  /** The highest apply version this state machine implements. */
  get applyVersionMax(): number {
    return this.versionMax;
  }

  /** The allocator of northd's NB writes, when the version in force has them. */
  private get northdWrites(): Ipam | undefined {
    return this.version >= APPLY_VERSION_NORTHD_WRITES ? this.ipam : undefined;
  }

  /** Refuses, before anything changes, what this build cannot apply as its peers do. */
  private refuseAbove(version: number, what: string): void {
    if (version <= this.versionMax) return;
    throw new ApplyRefusedError(
      `${what} is at apply version ${version}, and this build applies versions up to ${this.versionMax}: ` +
        `start this member on software that implements version ${version} (a cluster never moves back to an older version)`,
    );
  }

  get nb(): Database {
    return this.db;
  }

  /** The chassis-owned SB tables, as the chassis wrote them. */
  get chassis(): Database {
    return this.sb;
  }

  /** The log index of the last applied transaction (0 before any). */
  get revision(): number {
    return this.rev;
  }

  /** Called after every committed transaction that changed something, in log order. */
  onCommit(listener: (e: CommitEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  apply(entry: Entry, duplicate: boolean): ApplyResult {
    assert.ok(entry.index > this.rev, `entry ${entry.index} applied after revision ${this.rev}`);
    const command = duplicate ? undefined : decodeCommand(entry.data);
    if (command?.kind === 'apply-version') this.refuseAbove(command.version, `the cluster from entry ${entry.index} on`);
    this.rev = entry.index;
    if (command === undefined) return { kind: 'duplicate', revision: this.rev };
    if (command.kind === 'malformed') return { kind: 'malformed', reason: command.reason, revision: this.rev };
    if (command.kind === 'sb-txn') return this.applySb(command.ops, command.seed, command.elapsedMs, command.timestampMs, command.rbac);
    if (command.kind === 'apply-version') return this.moveVersion(command.version, command.seed);
    const txns = command.kind === 'nb-group' ? command.txns : [command];
    // Each transaction of a group commits or fails on its own, in order, as if it had its own
    // entry; what they changed together is projected once, at this revision.
    const results: ApplyResult[] = [];
    const deltas: DbDelta[] = [];
    let cfgFrom: NbTxnCommand | undefined;
    let last: NbTxnCommand | undefined;
    for (const t of txns) {
      const out = transact(this.db, t.ops, { newUuid: uuidSource(t.seed), elapsedMs: t.elapsedMs });
      switch (out.kind) {
        case 'blocked':
          results.push({ kind: 'blocked', timeoutMs: out.timeoutMs, revision: this.rev });
          break;
        case 'failed':
          results.push({ kind: 'failed', results: out.results, revision: this.rev });
          break;
        case 'committed':
          results.push({ kind: 'committed', results: out.results, revision: this.rev });
          if (out.delta.changes.length === 0) break;
          deltas.push(out.delta);
          last = t;
          // sb_cfg and hv_cfg can only move when NB_Global changed (nb_cfg is bumped there);
          // otherwise skip the scan of the chassis' acknowledgements.
          if (out.delta.changes.some((c) => c.table === 'NB_Global')) cfgFrom = t;
          break;
      }
    }
    if (deltas.length > 0 && last !== undefined) {
      const written = mergeAllDeltas(deltas);
      const merged = mergeDeltas(written, this.syncNorthdWrites(written, last.seed));
      const cfg = this.options.projection === undefined || cfgFrom === undefined ? { changes: [] } : this.syncCfg(cfgFrom.seed, cfgFrom.timestampMs);
      this.northdWrites?.observe(cfg);
      const delta = mergeDeltas(merged, cfg);
      this.project(delta);
      const event: CommitEvent = { revision: this.rev, delta };
      for (const l of this.listeners) l(event);
    }
    return command.kind === 'nb-group' ? { kind: 'group', results, revision: this.rev } : (results[0] as ApplyResult);
  }

  /**
   * A chassis's SB transaction (server/chassis-store.ts), then what follows from it: northd
   * hears of the changed port bindings, of Chassis registered, deleted or renamed and of the
   * service monitors' status, Logical_Switch_Port.up follows Port_Binding.up, and hv_cfg
   * follows the chassis' acknowledgements.
   */
  private applySb(ops: readonly unknown[], seed: UuidSeed, elapsedMs: number, timestampMs: number, rbac: RbacSession | undefined): ApplyResult {
    const projection = this.options.projection;
    const sbGlobal = projection?.sbGlobalUuid?.();
    const out = applySbTxn(this.sb, ops, {
      newUuid: uuidSource(seed),
      elapsedMs,
      portBindings: projection?.portBindings?.() ?? new Map(),
      owned: projection?.chassisOwned?.() ?? new Map(),
      serviceMonitors: projection?.serviceMonitors?.() ?? new Map(),
      ...(sbGlobal !== undefined ? { sbGlobal } : {}),
      igmpGroups: this.version >= APPLY_VERSION_IGMP_GROUPS,
      controllerEvents: this.version >= APPLY_VERSION_CONTROLLER_EVENTS,
      migrationWrites: this.version >= APPLY_VERSION_MIGRATION_WRITES,
      pdWrites: this.version >= APPLY_VERSION_PREFIX_DELEGATION,
      bfdSessions: projection?.bfdSessions?.() ?? new Map(),
      bfdWrites: this.version >= APPLY_VERSION_BFD,
      ...(rbac !== undefined ? { rbac } : {}),
      rbacEnforced: this.version >= APPLY_VERSION_RBAC,
    });
    switch (out.kind) {
      case 'blocked':
        return { kind: 'blocked', timeoutMs: out.timeoutMs, revision: this.rev };
      case 'failed':
        return { kind: 'failed', results: out.results, revision: this.rev };
      case 'committed': {
        this.noteAcks(out.delta);
        if (out.ports.size > 0 || out.chassis.size > 0 || out.hostnames.size > 0) this.timed(() => projection?.setChassisOwned?.(this.db, out.ports, this.rev, out.chassis, out.hostnames));
        if (out.monitors.size > 0) this.timed(() => projection?.setServiceMonitorStatus?.(this.db, out.monitors, this.rev));
        if (out.igmp.size > 0) this.timed(() => projection?.setIgmpGroups?.(this.db, out.igmp, this.rev));
        const vxlanOptions = this.syncVxlanMode(out.delta, seed);
        const reported = mergeDeltas(this.writeBfdStatus(bfdReportWrites(this.db, out.bfd), seed), vxlanOptions);
        const upPorts = this.withPortsOfNotifyingChanges(out.ports, out.delta);
        const nbDelta = mergeDeltas(mergeDeltas(mergeDeltas(this.syncPortsUp(upPorts, seed), reported), this.syncPrefixes(out.ports, seed)), this.syncCfg(seed, timestampMs));
        this.northdWrites?.observe(nbDelta);
        this.project(nbDelta);
        if (nbDelta.changes.length > 0 || out.delta.changes.length > 0 || out.ports.size > 0 || out.monitors.size > 0 || out.bfd.size > 0) {
          const event: CommitEvent = { revision: this.rev, delta: nbDelta, chassisDelta: out.delta };
          for (const l of this.listeners) l(event);
        }
        return { kind: 'committed', results: out.results, revision: this.rev };
      }
    }
  }

  /**
   * The caller's options, plus:
   * - the index syncPortsUp reads (ports by name) when the schema has no unique index on
   *   Logical_Switch_Port.name to read instead. OVN's schema has one, and a second index beside
   *   it cost ~1.9 MiB of the 10,000-port NB;
   * - indexes on the names the schema does not index (`nameLookupTables`): a client of the
   *   gRPC API has no replica to find a row's UUID in, and writes `name == "sw0"`, which scanned
   *   the whole table on every member (on 17,000 switches, 40% of the leader's busy time when
   *   adding ports by switch name).
   */
  private databaseOptions(): DatabaseOptions {
    const schema = this.options.schema;
    const extra = schema.tables.has('Logical_Switch_Port') && !portNameIsUnique(schema) ? [{ table: 'Logical_Switch_Port', column: 'name' }] : [];
    for (const table of nameLookupTables) {
      const t = schema.tables.get(table);
      const type = t?.columns.get('name')?.type;
      if (t === undefined || type?.kind !== 'scalar' || type.key.type !== 'string') continue;
      if (!t.indexes.some((cols) => cols.length === 1 && cols[0] === 'name')) extra.push({ table, column: 'name' });
    }
    const given = this.options.databaseOptions?.secondaryIndexes ?? [];
    const missing = extra.filter((x) => !given.some((g) => g.table === x.table && g.column === x.column));
    return { ...this.options.databaseOptions, secondaryIndexes: [...given, ...missing] };
  }

  /** The Logical_Switch_Port named `name` (the first, if the schema lets names repeat). */
  private portNamed(name: string): Row | undefined {
    if (portNameIsUnique(this.options.schema)) return this.db.findUnique('Logical_Switch_Port', ['name'], [name]);
    return this.db.lookup('Logical_Switch_Port', 'name', name)[0];
  }

  /**
   * Hands NB changes to the projection, less what northd never reads: the *_cfg bookkeeping
   * this state machine writes into NB_Global (sb_cfg, hv_cfg and their timestamps). Every
   * chassis acknowledgement moves hv_cfg, and projecting that was a full engine pass on every
   * member for nothing. (If northd ever reads these columns, drop them from `cfgColumns`.)
   */
  private project(delta: DbDelta): void {
    const projection = this.options.projection;
    if (projection === undefined) return;
    const read = delta.changes.some(isCfgBookkeeping) ? { changes: delta.changes.filter((c) => !isCfgBookkeeping(c)) } : delta;
    if (read.changes.length === 0) return;
    this.timed(() => projection.apply(this.db, read, this.rev));
  }

  private timed(step: () => void): void {
    const observe = this.options.observeProjection;
    if (observe === undefined) return step();
    const started = performance.now();
    step();
    observe(performance.now() - started);
  }

  /**
   * What northd writes into the switch ports after `delta` (just applied): dynamic_addresses
   * (northd/ipam.ts) and tags (northd/tags.ts), written in this entry, so the revision that adds
   * a "dynamic" port or a nested container already holds its addresses and tag.
   */
  private syncNorthdWrites(delta: DbDelta, seed: UuidSeed): DbDelta {
    const ipam = this.northdWrites;
    if (ipam === undefined) return { changes: [] };
    ipam.observe(delta);
    const ports = this.writeSwitchPorts(ipam, ipam.writes(this.db, delta), tagWrites(this.db, delta), seed, this.upWrites(delta.changes));
    if (this.version < APPLY_VERSION_BFD) return ports;
    const written = mergeDeltas(ports, this.writeBfdStatus(bfdStatusWrites(this.db, delta), seed));
    if (this.version < APPLY_VERSION_NB_GLOBAL_OPTIONS || !delta.changes.some((c) => c.table === 'NB_Global')) return written;
    return mergeDeltas(written, this.writeNbGlobalOptions(seed));
  }

  /**
   * VXLAN mode after a chassis transaction that changed Chassis or Encap rows, from version 8:
   * northd hears of a change (and, from version 7, NB_Global.options's max_tunid follows).
   */
  private syncVxlanMode(delta: DbDelta, seed: UuidSeed): DbDelta {
    if (this.version < APPLY_VERSION_VXLAN_MODE || !delta.changes.some((c) => c.table === 'Chassis' || c.table === 'Encap')) return { changes: [] };
    const vxlan = vxlanModeOf(this.sb);
    if (vxlan === this.vxlan) return { changes: [] };
    this.vxlan = vxlan;
    this.timed(() => this.options.projection?.setVxlanMode?.(this.db, vxlan, this.rev));
    return this.writeNbGlobalOptions(seed);
  }

  /** NB_Global.options with ovn-northd's keys (northd/sb-global.ts), when they are not so already. */
  private writeNbGlobalOptions(seed: UuidSeed): DbDelta {
    if (this.version < APPLY_VERSION_NB_GLOBAL_OPTIONS) return { changes: [] };
    const options = nbGlobalOptionsWrite(this.db, this.vxlan);
    const g = [...this.db.rows('NB_Global').values()][0];
    if (options === undefined || g === undefined) return { changes: [] };
    const ops = [{ op: 'update', table: 'NB_Global', where: [['_uuid', '==', ['uuid', g._uuid]]], row: { options: ['map', [...options]] } }];
    // A stream of its own for the _version this update takes.
    const optionsSeed: UuidSeed = [(seed[0] ^ 0x6e6f7074) >>> 0, seed[1], seed[2], seed[3] || 1];
    const out = transact(this.db, ops, { newUuid: uuidSource(optionsSeed) });
    if (out.kind !== 'committed') assert.fail(`northd's write of NB_Global.options cannot fail: ${JSON.stringify(out)}`);
    this.ipam?.observe(out.delta);
    return out.delta;
  }

  /**
   * NB BFD.status as ovn-northd writes it (northd/bfd.ts: where its passes settle, or a chassis's
   * report copied in), in the entry that calls for it.
   */
  private writeBfdStatus(writes: readonly BfdStatusWrite[], seed: UuidSeed): DbDelta {
    if (writes.length === 0) return { changes: [] };
    const ops = writes.map((w) => ({ op: 'update', table: 'BFD', where: [['_uuid', '==', ['uuid', w.bfd]]], row: { status: w.status } }));
    // A stream of its own for the _version these updates take.
    const bfdSeed: UuidSeed = [seed[0], (seed[1] ^ 0x0bfd5eed) >>> 0, seed[2], seed[3] || 1];
    const out = transact(this.db, ops, { newUuid: uuidSource(bfdSeed) });
    if (out.kind !== 'committed') assert.fail(`northd's writes of BFD.status cannot fail: ${JSON.stringify(out)}`);
    this.ipam?.observe(out.delta);
    return out.delta;
  }

  /** syncNorthdWrites's transaction: `addresses` and `tags` written into their ports. */
  /**
   * From version 9, the up of the switch ports `changes` made or whose type or name changed, as
   * ovn-northd writes it (desiredUp), where it is not so already.
   */
  private upWrites(changes: readonly RowChange[]): { lsp: Uuid; up: boolean }[] {
    if (this.version < APPLY_VERSION_PORTS_UP) return [];
    const owned = this.options.projection?.chassisOwned?.();
    const out: { lsp: Uuid; up: boolean }[] = [];
    for (const c of changes) {
      if (c.table !== 'Logical_Switch_Port' || c.kind === 'delete' || (c.kind === 'modify' && !c.columns.includes('type') && !c.columns.includes('name'))) continue;
      const lsp = this.db.get('Logical_Switch_Port', c.uuid);
      if (lsp === undefined) continue;
      const up = this.desiredUp(lsp, owned?.get(lsp.name as string));
      if (!isUp(lsp, up)) out.push({ lsp: c.uuid, up });
    }
    return out;
  }

  /**
   * Logical_Switch_Port.up as ovn-northd keeps it (handle_port_binding_changes): from version 9
   * a router port is up (its peer router binds it), others as their chassis report (from
   * version 12 reading the chassis's port-up-notif, as ovn-northd does).
   */
  private desiredUp(lsp: Row, owned: ChassisOwnedColumns | undefined): boolean {
    if (this.version >= APPLY_VERSION_PORTS_UP && lsp.type === 'router') return true;
    return this.version >= APPLY_VERSION_PORT_UP_NOTIF ? portIsUp(owned, (u) => this.sb.get('Chassis', u)) : portIsUp(owned);
  }

  /**
   * From version 12, `ports` and the ports bound to a Chassis whose port-up-notif this
   * transaction changed (registered, set, cleared or deleted): their up reads it.
   */
  private withPortsOfNotifyingChanges(ports: ReadonlyMap<string, ChassisOwnedColumns | undefined>, delta: DbDelta): ReadonlyMap<string, ChassisOwnedColumns | undefined> {
    if (this.version < APPLY_VERSION_PORT_UP_NOTIF) return ports;
    const changed = new Set<Uuid>();
    for (const c of delta.changes) {
      if (c.table !== 'Chassis') continue;
      const before = c.kind === 'insert' ? false : notifiesPortUp(c.old);
      const now = c.kind === 'delete' ? false : notifiesPortUp(c.new);
      if (before !== now) changed.add(c.uuid);
    }
    if (changed.size === 0) return ports;
    const out = new Map(ports);
    for (const [name, owned] of this.options.projection?.chassisOwned?.() ?? []) {
      const bound = owned?.chassis?.[0];
      if (bound !== undefined && changed.has(bound) && !out.has(name)) out.set(name, owned);
    }
    return out;
  }

  private writeSwitchPorts(ipam: Ipam, addresses: readonly DynamicAddressWrite[], tags: readonly TagWrite[], seed: UuidSeed, ups: readonly { lsp: Uuid; up: boolean }[] = []): DbDelta {
    const rows = new Map<Uuid, Record<string, unknown>>();
    const rowOf = (lsp: Uuid): Record<string, unknown> => {
      let row = rows.get(lsp);
      if (row === undefined) rows.set(lsp, (row = {}));
      return row;
    };
    for (const w of addresses) rowOf(w.lsp).dynamic_addresses = w.dynamicAddresses ?? ['set', []];
    for (const w of tags) rowOf(w.lsp).tag = w.tag;
    for (const w of ups) rowOf(w.lsp).up = w.up;
    if (rows.size === 0) return { changes: [] };
    const ops = [...rows].map(([lsp, row]) => ({ op: 'update', table: 'Logical_Switch_Port', where: [['_uuid', '==', ['uuid', lsp]]], row }));
    // A stream of its own for the _version these updates take (syncCfg's is another).
    const writeSeed: UuidSeed = [seed[0], seed[1], seed[2], (seed[3] ^ 0x1b873593) >>> 0 || 1];
    const out = transact(this.db, ops, { newUuid: uuidSource(writeSeed) });
    if (out.kind !== 'committed') assert.fail(`northd's writes of switch ports cannot fail: ${JSON.stringify(out)}`);
    ipam.observe(out.delta);
    return out.delta;
  }

  /**
   * An apply-version entry (already checked against versionMax): from here on entries apply as
   * `version` says. Moving to the version with northd's NB writes brings every switch port up
   * to date at once (ovn-northd's next full pass would), so ports written before the move are
   * not left without addresses or tags until they are next written; moving to the version with
   * BFD settles every session's NB status likewise.
   */
  private moveVersion(version: number, seed: UuidSeed): ApplyResult {
    const was = this.version;
    if (version <= was) return { kind: 'committed', results: [], revision: this.rev };
    this.version = version;
    const ipam = this.northdWrites;
    let delta: DbDelta = { changes: [] };
    if (ipam !== undefined && was < APPLY_VERSION_NORTHD_WRITES) {
      ipam.reset();
      const ports = [...this.db.rows('Logical_Switch_Port').values()].map((row) => insertChange('Logical_Switch_Port', row));
      delta = this.writeSwitchPorts(ipam, ipam.recompute(this.db), tagWrites(this.db, { changes: ports }), seed);
    }
    // Every session's NB status settled at once, as ovn-northd's next pass would.
    if (ipam !== undefined && was < APPLY_VERSION_BFD && version >= APPLY_VERSION_BFD) {
      const sessions = [...this.db.rows('BFD').values()].map((row) => insertChange('BFD', row));
      delta = mergeDeltas(delta, this.writeBfdStatus(bfdStatusWrites(this.db, { changes: sessions }), seed));
    }
    // VXLAN mode read from the Chassis registered, and NB_Global.options brought up to date (its
    // max_tunid too), at once, as ovn-northd's next pass would.
    const reaches = (v: number): boolean => was < v && version >= v;
    if (reaches(APPLY_VERSION_VXLAN_MODE) && vxlanModeOf(this.sb)) {
      this.vxlan = true;
      this.timed(() => this.options.projection?.setVxlanMode?.(this.db, true, this.rev));
    }
    if (reaches(APPLY_VERSION_NB_GLOBAL_OPTIONS) || (reaches(APPLY_VERSION_VXLAN_MODE) && this.vxlan)) delta = mergeDeltas(delta, this.writeNbGlobalOptions(seed));
    // Every switch port's up written at once, as ovn-northd's next pass would.
    if (ipam !== undefined && (reaches(APPLY_VERSION_PORTS_UP) || reaches(APPLY_VERSION_PORT_UP_NOTIF))) {
      const ports = [...this.db.rows('Logical_Switch_Port').values()].map((row) => insertChange('Logical_Switch_Port', row));
      delta = mergeDeltas(delta, this.writeSwitchPorts(ipam, [], [], seed, this.upWrites(ports)));
    }
    if (delta.changes.length > 0) {
      this.project(delta);
      const event: CommitEvent = { revision: this.rev, delta };
      for (const l of this.listeners) l(event);
    }
    return { kind: 'committed', results: [], revision: this.rev };
  }

  /** Logical_Switch_Port.up as northd keeps it after a chassis's report (desiredUp). */
  private syncPortsUp(ports: ReadonlyMap<string, ChassisOwnedColumns | undefined>, seed: UuidSeed): DbDelta {
    const ops: unknown[] = [];
    if (ports.size === 0) return { changes: [] };
    for (const [name, owned] of [...ports].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))) {
      // ovn-northd binds the port by name (unique in OVN's schema).
      const lsp = this.portNamed(name);
      if (lsp === undefined) continue;
      const up = this.desiredUp(lsp, owned);
      if (isUp(lsp, up)) continue;
      ops.push({ op: 'update', table: 'Logical_Switch_Port', where: [['_uuid', '==', ['uuid', lsp._uuid]]], row: { up } });
    }
    if (ops.length === 0) return { changes: [] };
    const upSeed: UuidSeed = [seed[0], seed[1], (seed[2] ^ 0x27d4eb2f) >>> 0, seed[3] || 1];
    const out = transact(this.db, ops, { newUuid: uuidSource(upSeed) });
    if (out.kind !== 'committed') assert.fail(`updating Logical_Switch_Port.up cannot fail: ${JSON.stringify(out)}`);
    return out.delta;
  }

  /**
   * From version 10, a router port's NB ipv6_prefix from the prefix its chassis's delegation
   * wrote into the binding (ovn_update_ipv6_prefix): for a port with options:prefix=true whose
   * options:ipv6_ra_pd_list reads "aid:prefix", the prefix; never cleared, as ovn-northd leaves it.
   */
  private syncPrefixes(ports: ReadonlyMap<string, ChassisOwnedColumns | undefined>, seed: UuidSeed): DbDelta {
    if (this.version < APPLY_VERSION_PREFIX_DELEGATION || ports.size === 0) return { changes: [] };
    const ops: unknown[] = [];
    for (const [name, owned] of [...ports].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))) {
      const prefix = delegatedPrefix(owned?.ipv6_ra_pd_list);
      if (prefix === undefined) continue;
      const lrp = this.db.findUnique('Logical_Router_Port', ['name'], [name]);
      if (lrp === undefined || !boolOption(lrp.options as ReadonlyMap<string, string>, 'prefix', false)) continue;
      const was = lrp.ipv6_prefix as readonly string[];
      if (was.length === 1 && was[0] === prefix) continue;
      ops.push({ op: 'update', table: 'Logical_Router_Port', where: [['_uuid', '==', ['uuid', lrp._uuid]]], row: { ipv6_prefix: prefix } });
    }
    if (ops.length === 0) return { changes: [] };
    const prefixSeed: UuidSeed = [seed[0], (seed[1] ^ 0x70726566) >>> 0, seed[2], seed[3] || 1];
    const out = transact(this.db, ops, { newUuid: uuidSource(prefixSeed) });
    if (out.kind !== 'committed') assert.fail(`writing Logical_Router_Port.ipv6_prefix cannot fail: ${JSON.stringify(out)}`);
    return out.delta;
  }

  /** Whether a Chassis_Private row counts towards hv_cfg (its chassis is not other_config:is-remote=true). */
  private countsForHvCfg(priv: Row): boolean {
    const chassisRef = (priv.chassis as readonly string[] | undefined)?.[0];
    const chassis = chassisRef === undefined ? undefined : this.sb.get('Chassis', chassisRef);
    const other = chassis?.other_config as ReadonlyMap<unknown, unknown> | undefined;
    return other?.get('is-remote') !== 'true';
  }

  private buildAckCounts(): Map<number, number> {
    const counts = new Map<number, number>();
    for (const priv of this.sb.rows('Chassis_Private').values()) {
      if (!this.countsForHvCfg(priv)) continue;
      const acked = priv.nb_cfg as number;
      counts.set(acked, (counts.get(acked) ?? 0) + 1);
    }
    return counts;
  }

  /**
   * Keeps ackCounts in step with a chassis transaction: an ack (Chassis_Private.nb_cfg moved,
   * same chassis) moves one count; anything else that could change who counts (a Chassis or
   * Chassis_Private row added, removed or relinked, a Chassis's other_config) drops the counts
   * for a rebuild.
   */
  private noteAcks(delta: DbDelta): void {
    const counts = this.ackCounts;
    if (counts === undefined) return;
    for (const c of delta.changes) {
      if (c.table === 'Chassis' || (c.table === 'Chassis_Private' && c.kind !== 'modify')) {
        this.ackCounts = undefined;
        return;
      }
      if (c.table !== 'Chassis_Private' || c.kind !== 'modify') continue;
      const before = (c.old.chassis as readonly string[] | undefined)?.[0];
      const after = (c.new.chassis as readonly string[] | undefined)?.[0];
      if (before !== after) {
        this.ackCounts = undefined;
        return;
      }
      const from = c.old.nb_cfg as number;
      const to = c.new.nb_cfg as number;
      if (from === to || !this.countsForHvCfg(c.new)) continue;
      const left = (counts.get(from) ?? 0) - 1;
      if (left > 0) counts.set(from, left);
      else counts.delete(from);
      counts.set(to, (counts.get(to) ?? 0) + 1);
    }
  }

  /**
   * hv_cfg as ovn-northd computes it: the lowest nb_cfg a chassis has acknowledged in
   * Chassis_Private (chassis marked other_config:is-remote=true do not count), or nb_cfg itself
   * when no chassis is registered.
   */
  private hvCfg(nbCfg: number): number {
    this.ackCounts ??= this.buildAckCounts();
    let cfg = nbCfg;
    for (const acked of this.ackCounts.keys()) if (acked < cfg) cfg = acked;
    return cfg;
  }

  /**
   * hv_cfg as it would be if each counted chassis had also written what `live` says it has
   * acknowledged (by Chassis_Private row UUID; acks not yet committed, see
   * server/live-acks.ts): the same rule as hvCfg over the rows this replica has applied.
   */
  hvCfgWith(live: (privUuid: string) => number | undefined): number {
    const global = this.db.rows('NB_Global').values().next().value;
    let cfg = typeof global?.nb_cfg === 'number' ? global.nb_cfg : 0;
    for (const priv of this.sb.rows('Chassis_Private').values()) {
      if (!this.countsForHvCfg(priv)) continue;
      const acked = ackedWith(priv, live);
      if (acked < cfg) cfg = acked;
    }
    return cfg;
  }

  /**
   * Whether hvCfgWith(live) reaches `target`: the UUID of a counted Chassis_Private row that
   * holds it below `target` (NB_GLOBAL_LAGS when nb_cfg itself is below it), or undefined when
   * nothing does. A Wait asks again at every ack it hears; `cursor` (the caller's, kept between
   * calls) is where the last search stopped, so that for one target the rows already past are
   * not looked at again: a round of n acks costs about 3n row lookups in whatever order the acks
   * come, where searching from the first row every time cost n * n / 2 when they came in the
   * rows' order (5.5 ms a round at 500 chassis in a loop, 27 ms at 1,000). Undefined is only
   * answered after a pass over every row as it is then: rows come and go, a chassis may come to
   * count, and a client may write a lower nb_cfg.
   */
  hvCfgLaggard(target: number, live: (privUuid: string) => number | undefined, cursor: LaggardCursor = new LaggardCursor()): string | undefined {
    const global = this.db.rows('NB_Global').values().next().value;
    if ((typeof global?.nb_cfg === 'number' ? global.nb_cfg : 0) < target) return NB_GLOBAL_LAGS;
    const lags = (priv: Row | undefined): boolean => priv !== undefined && this.countsForHvCfg(priv) && ackedWith(priv, live) < target;
    if (cursor.target === target) {
      for (; cursor.at < cursor.rows.length; cursor.at++) {
        const uuid = cursor.rows[cursor.at] as string;
        if (lags(this.sb.get('Chassis_Private', uuid))) return uuid;
      }
    }
    const rows: string[] = [];
    let found: number | undefined;
    for (const priv of this.sb.rows('Chassis_Private').values()) {
      if (found === undefined && lags(priv)) found = rows.length;
      rows.push(priv._uuid);
    }
    cursor.target = target;
    cursor.rows = rows;
    cursor.at = found ?? rows.length;
    return found === undefined ? undefined : rows[found];
  }

  /** hv_cfg's timestamp: the latest of the counted chassis that acknowledged exactly `cfg`. */
  private hvCfgTimestamp(cfg: number): number | undefined {
    let ts: number | undefined;
    for (const priv of this.sb.rows('Chassis_Private').values()) {
      if (priv.nb_cfg !== cfg || !this.countsForHvCfg(priv)) continue;
      const at = priv.nb_cfg_timestamp as number;
      if (ts === undefined || at > ts) ts = at;
    }
    return ts;
  }

  /**
   * The nb_cfg protocol: the SB view is derived inside apply, so once a transaction commits the
   * view already reflects it, and NB_Global.sb_cfg follows nb_cfg in the same revision. hv_cfg
   * follows the chassis (hvCfg). Deterministic: values and timestamps come from the entries.
   */
  private syncCfg(seed: UuidSeed, timestampMs: number): DbDelta {
    const global = [...this.db.rows('NB_Global').values()][0];
    if (global === undefined) return { changes: [] };
    const nbCfg = global.nb_cfg as number;
    const hvCfg = this.hvCfg(nbCfg);
    if (global.sb_cfg === nbCfg && global.hv_cfg === hvCfg) return { changes: [] };
    const row: Record<string, unknown> = { sb_cfg: nbCfg, hv_cfg: hvCfg };
    // northd picks up nb_cfg and finishes the SB for it within this one apply: it starts
    // (nb_cfg_timestamp) and completes (sb_cfg_timestamp) at the entry's time.
    if (global.sb_cfg !== nbCfg) row.nb_cfg_timestamp = row.sb_cfg_timestamp = timestampMs;
    if (global.hv_cfg !== hvCfg) row.hv_cfg_timestamp = this.hvCfgTimestamp(hvCfg) ?? timestampMs;
    // A stream of its own, distinct from the transaction's, for the _version this update takes.
    const cfgSeed: UuidSeed = [seed[0], seed[1], seed[2], (seed[3] ^ 0x5bd1e995) >>> 0 || 1];
    const out = transact(this.db, [{ op: 'update', table: 'NB_Global', where: [['_uuid', '==', ['uuid', global._uuid]]], row }], { newUuid: uuidSource(cfgSeed) });
    if (out.kind !== 'committed') assert.fail(`updating NB_Global's *_cfg cannot fail: ${JSON.stringify(out)}`);
    return out.delta;
  }

  snapshot(): Uint8Array {
    const projection = this.options.projection?.snapshot() ?? null;
    return packr.pack([snapshotFormat, this.rev, encodeDatabase(this.db), projection, encodeDatabase(this.sb), this.version]);
  }

  /**
   * snapshot()'s bytes, exactly, produced piece by piece as a consumer asks (a backup streamed
   * to a client): the databases' rows are captured now and encoded later (ovsdb/codec.ts
   * streamDatabase), so the state may move on meanwhile and nothing holds the whole encoding.
   * northd's history is the one part encoded whole, here, as the projection gives it.
   */
  snapshotStream(): { readonly revision: number } & EncodingStream {
    const revision = this.rev;
    const projection = this.options.projection?.snapshot() ?? null;
    const nb = streamDatabase(this.db);
    const sb = streamDatabase(this.sb);
    const middle = projection === null ? [packr.pack(null)] : [msgpackBinHeader(projection.byteLength), projection];
    // The byte-string headers of both databases, once measured.
    let heads: { nb: Uint8Array; sb: Uint8Array } | undefined;
    const version = packr.pack(this.version);
    function* parts(pieceBytes: number, h: { nb: Uint8Array; sb: Uint8Array }): Generator<Uint8Array> {
      yield msgpackArrayHeader(6);
      yield packr.pack(snapshotFormat);
      yield packr.pack(revision);
      yield h.nb;
      yield* nb.pieces(pieceBytes);
      yield* middle;
      yield h.sb;
      yield* sb.pieces(pieceBytes);
      yield version;
    }
    return {
      revision,
      *measure(rowsPerStep) {
        const nbBytes = yield* nb.measure(rowsPerStep);
        const sbBytes = yield* sb.measure(rowsPerStep);
        heads = { nb: msgpackBinHeader(nbBytes), sb: msgpackBinHeader(sbBytes) };
        const fixed = [msgpackArrayHeader(6), packr.pack(snapshotFormat), packr.pack(revision), heads.nb, ...middle, heads.sb, version];
        return fixed.reduce((n, x) => n + x.byteLength, 0) + nbBytes + sbBytes;
      },
      pieces(pieceBytes) {
        assert.ok(heads !== undefined, 'snapshotStream: pieces() before measure() completed');
        return gatherPieces(parts(pieceBytes, heads), pieceBytes);
      },
    };
  }

  restore(data: Uint8Array): void {
    const image: unknown = packr.unpack(data);
    assert.ok(Array.isArray(image), 'NB snapshot: not an array');
    const [format, revision, dbBytes, projection, sbBytes, version = APPLY_VERSION_INITIAL] = image as [unknown, unknown, unknown, unknown, unknown, unknown];
    assert.ok(format === snapshotFormat || format === snapshotFormatV3 || format === snapshotFormatV2 || format === snapshotFormatV1, `unknown NB snapshot format ${String(format)}`);
    assert.ok(typeof version === 'number' && Number.isSafeInteger(version) && version >= APPLY_VERSION_INITIAL, 'NB snapshot: malformed apply version');
    this.refuseAbove(version, `the snapshot at revision ${String(revision)}`);
    assert.ok(typeof revision === 'number' && dbBytes instanceof Uint8Array, 'NB snapshot: malformed');
    assert.ok(projection === undefined || projection === null || projection instanceof Uint8Array, 'NB snapshot: malformed projection state');
    assert.ok(sbBytes === undefined || sbBytes instanceof Uint8Array, 'NB snapshot: malformed chassis database');
    this.db = decodeDatabase(this.options.schema, dbBytes, this.databaseOptions());
    this.sb = sbBytes === undefined ? new Database(chassisSchema()) : decodeDatabase(chassisSchema(), sbBytes);
    this.ackCounts = undefined;
    this.ipam?.reset();
    this.version = version;
    this.rev = revision;
    const chassis = new Map<string, Uuid>();
    const hostnames = new Map<Uuid, string>();
    for (const row of this.sb.rows('Chassis').values()) {
      chassis.set(row.name as string, row._uuid);
      const hostname = hostnameOf(row);
      if (hostname !== undefined) hostnames.set(row._uuid, hostname);
    }
    const igmpGroups = new Map<Uuid, IgmpGroupReport>();
    for (const row of this.sb.rows('IGMP_Group').values()) igmpGroups.set(row._uuid, igmpReportOf(row));
    this.vxlan = version >= APPLY_VERSION_VXLAN_MODE && vxlanModeOf(this.sb);
    this.options.projection?.restore(this.db, projection ?? undefined, revision, { chassis, hostnames, igmpGroups, vxlan: this.vxlan });
    for (const l of this.restoreListeners) l(revision);
  }
}

/** NB_Global columns only this state machine writes, and northd does not read. */
const cfgColumns: ReadonlySet<string> = new Set(['nb_cfg_timestamp', 'sb_cfg', 'sb_cfg_timestamp', 'hv_cfg', 'hv_cfg_timestamp']);

/** An NB_Global modification of nothing but the *_cfg bookkeeping. */
function isCfgBookkeeping(c: RowChange): boolean {
  return c.table === 'NB_Global' && c.kind === 'modify' && c.columns.every((col) => cfgColumns.has(col));
}

/**
 * One delta with the effect of `a` then `b`, in (table, uuid) order: a row inserted then
 * modified is an insert of its final image, modified twice is one modification, inserted then
 * deleted disappears, modified then deleted is a deletion of its original image.
 */
export function mergeDeltas(a: DbDelta, b: DbDelta): DbDelta {
  if (b.changes.length === 0) return a;
  if (a.changes.length === 0) return b;
  return mergeAllDeltas([a, b]);
}

/** mergeDeltas over a sequence, in one pass: the effect of each delta in turn. */
export function mergeAllDeltas(deltas: readonly DbDelta[]): DbDelta {
  const nonEmpty = deltas.filter((d) => d.changes.length > 0);
  if (nonEmpty.length <= 1) return nonEmpty[0] ?? { changes: [] };
  const key = (c: RowChange): string => `${c.table}\u0000${c.uuid}`;
  const merged = new Map<string, RowChange | undefined>();
  for (const d of nonEmpty) {
    for (const c of d.changes) {
      const k = key(c);
      const prev = merged.get(k);
      if (prev === undefined) {
        merged.set(k, c);
        continue;
      }
      if (prev.kind === 'insert') {
        merged.set(k, c.kind === 'delete' ? undefined : { kind: 'insert', table: c.table, uuid: c.uuid, new: c.new });
      } else if (prev.kind === 'modify') {
        if (c.kind === 'delete') merged.set(k, { kind: 'delete', table: c.table, uuid: c.uuid, old: prev.old });
        else if (c.kind === 'modify') merged.set(k, { kind: 'modify', table: c.table, uuid: c.uuid, old: prev.old, new: c.new, columns: [...new Set([...prev.columns, ...c.columns])].sort() });
        else merged.set(k, c);
      } else {
        merged.set(k, c);
      }
    }
  }
  const changes = [...merged.values()].filter((c): c is RowChange => c !== undefined);
  changes.sort((x, y) => (x.table < y.table ? -1 : x.table > y.table ? 1 : x.uuid < y.uuid ? -1 : x.uuid > y.uuid ? 1 : 0));
  return { changes };
}

/** Whether a switch port's up column holds exactly `up`. */
function isUp(lsp: Row, up: boolean): boolean {
  const was = lsp.up as readonly boolean[] | undefined;
  return was !== undefined && was.length === 1 && was[0] === up;
}

/**
 * The prefix of a chassis's options:ipv6_ra_pd_list, "aid:prefix" as ovn-northd scans it
 * ("%u:%s": a decimal, a colon, then the text up to the first blank); undefined when it does
 * not read so.
 */
export function delegatedPrefix(pdList: string | undefined): string | undefined {
  if (pdList === undefined) return undefined;
  const m = /^[ \t\n\v\f\r]*\+?\d+:[ \t\n\v\f\r]*([^ \t\n\v\f\r]+)/.exec(pdList);
  return m === null ? undefined : m[1];
}
