// What the chassis write into the Southbound database, kept in the replicated state machine
// beside the NB: the chassis-owned tables (Chassis, Encap, Chassis_Private, MAC_Binding, FDB,
// IGMP_Group, Controller_Event) as an OVSDB database of their own; Port_Binding's chassis-owned columns (chassis,
// additional_chassis, encap, additional_encap, virtual_parent, up), which live in northd's
// derived Port_Binding rows and reach northd as per-port reports; Service_Monitor.status,
// the health a chassis's probes found, which reaches northd per row; and BFD.status, the state
// of a session a chassis runs, which the state machine writes into the NB BFD row as
// ovn-northd copies it there (northd/bfd.ts), from apply version 5.
//
// The same database holds what an operator writes (ovn-sbctl set-connection, set-ssl, set
// Connection . inactivity_probe=...): the Connection and SSL tables, which northd never
// touches, and SB_Global's operator columns (connections, ssl, external_ids) in a row of their
// own with SB_Global's UUID, which the SB view joins to northd's SB_Global row (sbGlobalView).
// That row is the root the Connection and SSL rows hang off, so a connection no longer
// named there is collected as OVSDB collects it.
//
// An SB transaction (`applySbTxn`) is an ordinary OVSDB transaction with two rules on top:
//   - ops on the chassis-owned tables run on the chassis database with full OVSDB semantics;
//   - a Port_Binding, Service_Monitor or BFD op must be an "update" of chassis-owned columns only
//     (from apply version 4, a Port_Binding "mutate" of them too, as ovsdb-idl inserts a
//     chassis into additional_chassis, and options' one key a chassis writes,
//     additional-chassis-activated), its "where" evaluated against northd's current rows; every
//     other op on a table northd derives is refused as a permission error, and the whole
//     transaction changes nothing.
// Port_Binding's references to Chassis and Encap are weak, as in the SB schema: a reference to
// a row that does not exist (or is deleted later) is dropped.
//
// A transaction from a session whose remote has a role (OVN's RBAC: `set-connection
// role=ovn-controller`) is also held to that role's permissions (northd/rbac.ts), as
// ovsdb-server holds it (ovsdb/rbac.ts), from apply version 11: the chassis-owned tables and the
// operator's through the gate the transaction engine asks per operation, the tables northd
// derives and every other table here, before anything runs. RBAC's refusal comes first: an
// operation both rules refuse reports RBAC's. Pure and deterministic.
import assert from 'node:assert/strict';
import type { ColumnType, DatabaseSchema, DbDelta, RbacGate, RbacSession, Row, RowChange, TableSchema, Uuid, Value } from '../ovsdb/index.js';
import { OvsdbError, OvsdbErrorName, parseDatabaseSchema, rbacGate, rbacRefusal, transact, valueFromJson } from '../ovsdb/index.js';
import { evaluateConditions, parseConditions } from '../ovsdb/condition.js';
import { fromDatum, toDatum } from '../ovsdb/datum.js';
import type { Mutation } from '../ovsdb/mutation.js';
import { applyMutation, parseMutations } from '../ovsdb/mutation.js';
import type { Database } from '../ovsdb/index.js';
import { SB_SCHEMA_JSON } from '../ovsdb/schemas/index.js';
import type { ChassisOwnedColumns, IgmpGroupReport } from '../northd/index.js';
import { ACTIVATED_OPTION, PD_LIST_OPTION } from '../northd/index.js';
import type { BfdStatus } from '../northd/bfd.js';
import { isBfdStatus } from '../northd/bfd.js';
import { ovnRbacPermission } from '../northd/rbac.js';

/** The SB tables whose rows the chassis write (northd never does). */
export const chassisOwnedTables: readonly string[] = ['Chassis', 'Encap', 'Chassis_Private', 'MAC_Binding', 'FDB', 'IGMP_Group', 'Controller_Event'];
/** Port_Binding's columns that belong to the chassis that binds the port. */
export const portBindingOwnedColumns: readonly (keyof ChassisOwnedColumns)[] = ['chassis', 'additional_chassis', 'encap', 'additional_encap', 'virtual_parent', 'up'];
/** Service_Monitor's column that belongs to the chassis probing the backend (its health). */
export const serviceMonitorOwnedColumns: readonly string[] = ['status'];
/** BFD's column that belongs to the chassis running the session (its state). */
export const bfdOwnedColumns: readonly string[] = ['status'];

/** The SB tables an operator writes (ovn-sbctl set-connection, set-ssl); northd never does. */
export const operatorTables: readonly string[] = ['Connection', 'SSL'];
/** SB_Global's columns that an operator writes; northd writes the others (nb_cfg, options, ipsec). */
export const sbGlobalOperatorColumns: readonly string[] = ['connections', 'ssl', 'external_ids'];
/** The SB tables whose rows come whole from this database rather than from northd. */
export const clientTables: readonly string[] = [...chassisOwnedTables, ...operatorTables];

const ownedTableSet = new Set(clientTables);
const sbGlobalColumnSet = new Set(sbGlobalOperatorColumns);
const ownedColumnSet = new Set<string>(portBindingOwnedColumns);
const monitorColumnSet = new Set<string>(serviceMonitorOwnedColumns);
const bfdColumnSet = new Set<string>(bfdOwnedColumns);
/** Which owned table each Port_Binding reference column points into. */
const refTableOf: Readonly<Record<string, string>> = { chassis: 'Chassis', additional_chassis: 'Chassis', encap: 'Encap', additional_encap: 'Encap' };
/** The tables those columns refer to. */
const refTables: ReadonlySet<string> = new Set(Object.values(refTableOf));

let schemaCache: DatabaseSchema | undefined;

/**
 * OVN_Southbound cut down to the chassis-owned tables. A reference into a table northd derives
 * (MAC_Binding.datapath → Datapath_Binding) becomes a plain uuid column here.
 */
export function chassisSchema(): DatabaseSchema {
  if (schemaCache !== undefined) return schemaCache;
  const tables: Record<string, unknown> = {};
  for (const name of clientTables) {
    const t = JSON.parse(JSON.stringify(SB_SCHEMA_JSON.tables[name])) as { columns: Record<string, { type: unknown }> };
    for (const col of Object.values(t.columns)) {
      const ty = col.type as { key?: { refTable?: string; refType?: string } } | string;
      if (typeof ty === 'object' && typeof ty.key === 'object' && ty.key.refTable !== undefined && !ownedTableSet.has(ty.key.refTable)) {
        delete ty.key.refTable;
        delete ty.key.refType;
      }
    }
    tables[name] = t;
  }
  // SB_Global's operator columns, in a row of their own (see the top of this file).
  const global = JSON.parse(JSON.stringify(SB_SCHEMA_JSON.tables.SB_Global)) as { columns: Record<string, unknown> };
  for (const c of Object.keys(global.columns)) if (!sbGlobalColumnSet.has(c)) delete global.columns[c];
  tables.SB_Global = global;
  schemaCache = parseDatabaseSchema({ name: SB_SCHEMA_JSON.name, version: SB_SCHEMA_JSON.version, tables });
  return schemaCache;
}

let sbSchemaCache: DatabaseSchema | undefined;

/** The full SB schema's table `name` (a table northd derives, whose owned columns chassis update). */
function derivedSchema(name: 'Port_Binding' | 'Service_Monitor' | 'BFD'): TableSchema {
  sbSchemaCache ??= parseDatabaseSchema(SB_SCHEMA_JSON);
  const t = sbSchemaCache.tables.get(name);
  assert(t !== undefined, `the SB schema has no ${name}`);
  return t;
}

export type PortUpdates = Map<string, ChassisOwnedColumns | undefined>;
/** Service_Monitor UUID → the status a chassis set (undefined: cleared). */
export type MonitorUpdates = Map<Uuid, string | undefined>;

/** SB BFD UUID → the status a chassis reported for the session. */
export type BfdReports = Map<Uuid, BfdStatus>;

/** Chassis names whose Chassis row came, went or changed: name → the UUID holding it now. */
export type ChassisUpdates = Map<string, Uuid | undefined>;

/** Chassis rows whose hostname came, went or changed: UUID → the hostname now (undefined: none). */
export type HostnameUpdates = Map<Uuid, string | undefined>;

/** IGMP_Group rows a transaction inserted, changed (their new contents) or deleted (undefined). */
export type IgmpUpdates = Map<Uuid, IgmpGroupReport | undefined>;

export type SbTxnOutcome =
  | {
    readonly kind: 'committed'; readonly results: unknown[]; readonly delta: DbDelta; readonly ports: PortUpdates; readonly monitors: MonitorUpdates; readonly chassis: ChassisUpdates;
    readonly hostnames: HostnameUpdates; readonly igmp: IgmpUpdates; readonly bfd: BfdReports;
  }
  | { readonly kind: 'failed'; readonly results: unknown[] }
  | { readonly kind: 'blocked'; readonly timeoutMs: number };

export interface SbTxnContext {
  readonly newUuid: () => Uuid;
  readonly elapsedMs?: number;
  /** northd's Port_Binding rows as they are now, by UUID. */
  readonly portBindings: ReadonlyMap<Uuid, Row>;
  /** The chassis-owned columns reported so far, by logical_port. */
  readonly owned: ReadonlyMap<string, ChassisOwnedColumns>;
  /** northd's Service_Monitor rows as they are now, by UUID. */
  readonly serviceMonitors: ReadonlyMap<Uuid, Row>;
  /** The UUID of northd's SB_Global row, when there is one (the row its operator columns join). */
  readonly sbGlobal?: Uuid;
  /** Chassis may write IGMP_Group (the cluster applies version 3 or later); refused otherwise. */
  readonly igmpGroups?: boolean;
  /** Chassis and clients may write Controller_Event (version 6 or later); refused otherwise. */
  readonly controllerEvents?: boolean;
  /**
   * Chassis may mutate Port_Binding's owned columns and write options:additional-chassis-activated
   * (the cluster applies version 4 or later); refused otherwise.
   */
  readonly migrationWrites?: boolean;
  /**
   * Chassis may write options:ipv6_ra_pd_list (the prefix a router port's DHCPv6 prefix
   * delegation obtained; the cluster applies version 10 or later); refused otherwise.
   */
  readonly pdWrites?: boolean;
  /** northd's BFD rows as they are now, by UUID. */
  readonly bfdSessions?: ReadonlyMap<Uuid, Row>;
  /** Chassis may report BFD.status (the cluster applies version 5 or later); refused otherwise. */
  readonly bfdWrites?: boolean;
  /**
   * The role of the remote the transaction came through and the client's id (its
   * certificate's common name), when that remote has a role: its writes are held to the role's
   * permissions (northd/rbac.ts). Undefined: no RBAC.
   */
  readonly rbac?: RbacSession;
  /**
   * The cluster enforces RBAC (apply version 11 or later). Without it a transaction with `rbac`
   * is refused at its first write: applied without its restrictions it would give the session
   * more than its role allows.
   */
  readonly rbacEnforced?: boolean;
}

function failedAt(index: number, n: number, error: OvsdbError): SbTxnOutcome {
  const results: unknown[] = Array.from({ length: index }, () => ({}));
  results.push(error.toJson());
  while (results.length < n) results.push(null);
  return { kind: 'failed', results };
}

function permission(details: string): OvsdbError {
  return new OvsdbError(OvsdbErrorName.permissionError, details);
}

/**
 * An update (row) or mutate (mutations) of chassis-owned columns of a table northd derives,
 * parsed before anything runs.
 */
interface DerivedUpdate {
  readonly index: number;
  readonly where: unknown;
  readonly clauses: ReturnType<typeof parseConditions>;
  readonly row: Record<string, unknown>;
  readonly mutations?: unknown;
}

interface DerivedOp {
  readonly index: number;
  readonly where: unknown;
  readonly row: Record<string, unknown>;
  /** A mutate's mutations (Port_Binding only), as sent. */
  readonly mutations?: unknown;
}

/** The UUID when `where` is exactly [["_uuid", "==", ["uuid", U]]] (already validated). */
function uuidEquality(where: unknown): Uuid | undefined {
  if (!Array.isArray(where) || where.length !== 1) return undefined;
  const c = where[0] as unknown[];
  if (!Array.isArray(c) || c[0] !== '_uuid' || c[1] !== '==' || !Array.isArray(c[2]) || c[2][0] !== 'uuid' || typeof c[2][1] !== 'string') return undefined;
  return (c[2][1] as string).toLowerCase();
}

/** Named uuids a JSON value mentions (["named-uuid", n] anywhere in it). */
function namedUuids(json: unknown, out: string[] = []): string[] {
  if (!Array.isArray(json)) return out;
  if (json.length === 2 && json[0] === 'named-uuid' && typeof json[1] === 'string') out.push(json[1]);
  else for (const x of json) namedUuids(x, out);
  return out;
}

/** The rows `where` selects: by UUID when it names one (as ovn-controller does), else a scan. */
function selected(rows: ReadonlyMap<Uuid, Row>, where: unknown): Iterable<Row> {
  const byUuid = uuidEquality(where);
  if (byUuid === undefined) return rows.values();
  const row = rows.get(byUuid);
  return row === undefined ? [] : [row];
}

const NAMED_PLACEHOLDER = '00000000-0000-0000-0000-000000000000';

/**
 * The keys of a binding's options a chassis writes, each with the report field that carries it
 * and the apply version from which it may: which chassis activated a migrating port
 * (activation-strategy=rarp), and the prefix a router port's DHCPv6 prefix delegation obtained
 * (ovn-controller's pinctrl writes "aid:prefix/plen").
 */
const chassisOptionKeys = [
  { key: ACTIVATED_OPTION, field: 'additional_chassis_activated', version: 4 },
  { key: PD_LIST_OPTION, field: 'ipv6_ra_pd_list', version: 10 },
] as const;

/** `options` with the chassis's keys as `next` reports them (each set or removed). */
function withChassisOptions(options: ReadonlyMap<string, string>, next: Record<string, unknown>): ReadonlyMap<string, string> {
  const out = new Map(options);
  for (const { key, field } of chassisOptionKeys) {
    const v = next[field] as string | undefined;
    if (v === undefined) out.delete(key);
    else out.set(key, v);
  }
  return out;
}

/**
 * A chassis wrote `after` as a binding's options, which were `before`: only the chassis's keys
 * may differ (each from its apply version on); their values become the report.
 */
function setChassisOptions(next: Record<string, unknown>, before: ReadonlyMap<string, string>, after: ReadonlyMap<string, string>, pdWrites: boolean): void {
  const keys = new Set([...before.keys(), ...after.keys()]);
  const changed = [...keys].filter((k) => before.get(k) !== after.get(k)).sort();
  const allowed = (k: string): boolean => k === ACTIVATED_OPTION || (k === PD_LIST_OPTION && pdWrites);
  const refused = changed.filter((k) => !allowed(k));
  if (refused.length > 0) {
    const pd = refused.includes(PD_LIST_OPTION) ? `; options:${PD_LIST_OPTION} once every member of the cluster runs a build that takes it (apply version 10)` : '';
    throw permission(`Port_Binding options are written by northd; a chassis may set only options:${ACTIVATED_OPTION}${pdWrites ? ` and options:${PD_LIST_OPTION}` : ''} (not ${refused.join(', ')})${pd}`);
  }
  for (const { key, field } of chassisOptionKeys) {
    const v = after.get(key);
    if (v === undefined) delete next[field];
    else next[field] = v;
  }
}

/**
 * The chassis-owned columns the Port_Binding updates and mutates write, per port, each op
 * seeing what the ones before it wrote (a mutation applies to the column as it is then);
 * each op's row count goes into `results`. A mutation whose result breaks the column's
 * constraints fails the op.
 */
function portUpdates(
  parsed: readonly DerivedUpdate[], ctx: SbTxnContext, resolve: (name: string) => Uuid, results: unknown[],
): { readonly ports: PortUpdates } | { readonly failedOp: number; readonly error: OvsdbError } {
  const pbSchema = derivedSchema('Port_Binding');
  const ports: PortUpdates = new Map();
  const current = (port: string): ChassisOwnedColumns => (ports.has(port) ? ports.get(port) : ctx.owned.get(port)) ?? {};
  for (const p of parsed) {
    let count = 0;
    const mutations: Mutation[] = p.mutations === undefined ? [] : parseMutations(pbSchema, p.mutations, resolve);
    for (const row of selected(ctx.portBindings, p.where)) {
      if (!evaluateConditions(p.clauses, row)) continue;
      count++;
      const port = row.logical_port as string;
      const next: Record<string, unknown> = { ...current(port) };
      // options as this op finds them: northd's, with the chassis's keys as reported so far.
      const options = (): ReadonlyMap<string, string> => withChassisOptions(row.options as ReadonlyMap<string, string>, next);
      try {
        for (const [col, json] of Object.entries(p.row)) {
          const column = pbSchema.columns.get(col);
          if (column === undefined) continue;
          const value = valueFromJson(column.type, json, resolve);
          if (col === 'options') setChassisOptions(next, options(), value as ReadonlyMap<string, string>, ctx.pdWrites === true);
          else next[col] = value;
        }
        for (const m of mutations) {
          const col = m.column.name;
          if (col === 'options') {
            setChassisOptions(next, options(), fromDatum(m.column.type, applyMutation(m, toDatum(m.column.type, options()))) as ReadonlyMap<string, string>, ctx.pdWrites === true);
            continue;
          }
          const now = (next[col] ?? (row as unknown as Record<string, unknown>)[col]) as Value;
          next[col] = fromDatum(m.column.type, applyMutation(m, toDatum(m.column.type, now)));
        }
      } catch (err) {
        if (err instanceof OvsdbError) return { failedOp: p.index, error: err };
        throw err;
      }
      ports.set(port, next as ChassisOwnedColumns);
    }
    results[p.index] = { count };
  }
  return { ports };
}

/** The operations that write, which RBAC restricts (reads never are). */
const rbacWriteOps: ReadonlySet<string> = new Set(['insert', 'update', 'mutate', 'delete']);

/**
 * A restricted session's transaction where RBAC is not enforced (before apply version 11):
 * refused at its first write, with what the operator must do; undefined when it writes nothing.
 * The proposer answers so without logging the transaction, and apply does the same for one that
 * reached the log anyway, so that no member applies a restricted write unrestricted.
 */
export function rbacUnenforcedRefusal(ops: readonly unknown[], session: RbacSession): Extract<SbTxnOutcome, { kind: 'failed' }> | undefined {
  const first = ops.findIndex((op) => op !== null && typeof op === 'object' && rbacWriteOps.has((op as { op?: unknown }).op as string));
  if (first < 0) return undefined;
  return failedAt(first, ops.length, permission(
    `RBAC rules for client "${session.id ?? '(null)'}" role "${session.role}" cannot be enforced until every member of the cluster runs a build that enforces them (apply version 11); ` +
      'the write is refused rather than applied without them',
  )) as Extract<SbTxnOutcome, { kind: 'failed' }>;
}

/**
 * RBAC's refusal of an operation judged before anything runs, or undefined to let it go on:
 * what needs no row — a client without an id, a table the role has no permission on (both
 * refuse every write, as in ovsdb-server) — and, with `derived`, the rest for a table northd
 * derives. Its rows are northd's, so they are not looked at: an insert or a delete needs
 * insert_delete, an update or mutate columns within the permission's `update`, and either an
 * authorization of "" (anyone), which is what OVN gives those tables. ovsdb-server, judging row
 * by row, lets such an operation through when its "where" selects no row; ovnts refuses those
 * itself anyway (a table northd derives takes only updates of chassis-owned columns), so only
 * the error differs.
 */
function rbacRefusalBefore(session: RbacSession, op: { op?: unknown; table?: unknown; row?: unknown; mutations?: unknown }, derived: boolean): string | undefined {
  const kind = op.op;
  if (typeof kind !== 'string' || !rbacWriteOps.has(kind) || typeof op.table !== 'string') return undefined;
  const refused = rbacRefusal[kind as 'insert' | 'update' | 'mutate' | 'delete'](session, op.table);
  const perm = session.id === undefined ? undefined : ovnRbacPermission(session.role, op.table);
  if (perm === undefined) return refused;
  if (!derived) return undefined;
  if (!perm.authorization.includes('')) return refused;
  if (kind === 'insert' || kind === 'delete') return perm.insertDelete ? undefined : refused;
  const columns = kind === 'update'
    ? (op.row !== null && typeof op.row === 'object' && !Array.isArray(op.row) ? Object.keys(op.row) : [])
    : (Array.isArray(op.mutations) ? op.mutations.map((m: unknown) => (Array.isArray(m) ? m[0] : undefined)) : []);
  return columns.every((c) => typeof c === 'string' && perm.update.includes(c)) ? undefined : refused;
}

/**
 * The gate the transaction engine asks for the operations on this database's tables
 * (ovsdb/rbac.ts). The insert of SB_Global's operator row that applySbTxn adds itself is not a
 * client's (a client's insert into SB_Global is refused before this), so it is let through.
 */
function chassisStoreGate(session: RbacSession): RbacGate {
  const gate = rbacGate(session, ovnRbacPermission);
  return { ...gate, insert: (table, row) => (table.name === 'SB_Global' ? undefined : gate.insert(table, row)) };
}

export function applySbTxn(store: Database, ops: unknown, ctx: SbTxnContext): SbTxnOutcome {
  if (!Array.isArray(ops)) return failedAt(0, 1, new OvsdbError(OvsdbErrorName.syntaxError, 'a transaction is an array of operations'));
  const session = ctx.rbac;
  if (session !== undefined && ctx.rbacEnforced !== true) {
    const refused = rbacUnenforcedRefusal(ops, session);
    if (refused !== undefined) return refused;
  }
  const ownedOps: unknown[] = [];
  const ownedIndex: number[] = [];
  const pbOps: DerivedOp[] = [];
  const smOps: DerivedOp[] = [];
  const bfdOps: DerivedOp[] = [];
  /** uuid-name → table, for inserts into the chassis-owned tables. */
  const inserted = new Map<string, string>();
  let needsGlobalRow = false;
  for (const [i, op] of ops.entries()) {
    const o = op as { op?: unknown; table?: unknown; row?: unknown; where?: unknown; mutations?: unknown; 'uuid-name'?: unknown };
    if (o === null || typeof o !== 'object' || typeof o.op !== 'string') {
      return failedAt(i, ops.length, new OvsdbError(OvsdbErrorName.syntaxError, 'an operation is an object with an "op"'));
    }
    if (session !== undefined && ctx.rbacEnforced === true) {
      // The tables of this database go on to the gate in the transaction engine, which judges
      // their rows as the transaction finds them; every other table is judged here.
      const here = typeof o.table === 'string' && (ownedTableSet.has(o.table) || o.table === 'SB_Global');
      const refused = rbacRefusalBefore(session, o, !here);
      if (refused !== undefined) return failedAt(i, ops.length, permission(refused));
    }
    if (o.table === 'IGMP_Group' && ctx.igmpGroups !== true) {
      return failedAt(i, ops.length, permission('table IGMP_Group is read-only until every member of the cluster runs a build where chassis write it (apply version 3)'));
    }
    if (o.table === 'Controller_Event' && ctx.controllerEvents !== true) {
      return failedAt(i, ops.length, permission('table Controller_Event is read-only until every member of the cluster runs a build where chassis write it (apply version 6)'));
    }
    if (o.op === 'comment' || o.op === 'commit' || o.op === 'abort' || (typeof o.table === 'string' && ownedTableSet.has(o.table))) {
      if (o.op === 'insert' && typeof o['uuid-name'] === 'string' && typeof o.table === 'string') inserted.set(o['uuid-name'], o.table);
      ownedOps.push(op);
      ownedIndex.push(i);
      continue;
    }
    if (o.table === 'SB_Global') {
      const refused = sbGlobalRefusal(op);
      if (refused !== undefined) return failedAt(i, ops.length, permission(refused));
      needsGlobalRow = true;
      ownedOps.push(op);
      ownedIndex.push(i);
      continue;
    }
    if (o.table === 'BFD' && ctx.bfdWrites !== true) {
      return failedAt(i, ops.length, permission('table BFD is derived by northd, and its status is read-only until every member of the cluster runs a build where chassis report it (apply version 5)'));
    }
    const derived = o.table === 'Port_Binding' ? { columns: ownedColumnSet, list: portBindingOwnedColumns, into: pbOps }
      : o.table === 'Service_Monitor' ? { columns: monitorColumnSet, list: serviceMonitorOwnedColumns, into: smOps }
      : o.table === 'BFD' ? { columns: bfdColumnSet, list: bfdOwnedColumns, into: bfdOps } : undefined;
    // options (its activation key alone, checked once the values are known) from version 4.
    const optionsToo = (c: unknown): boolean => o.table === 'Port_Binding' && c === 'options' && ctx.migrationWrites === true;
    if (derived !== undefined && o.op === 'update' && o.row !== null && typeof o.row === 'object' && !Array.isArray(o.row)) {
      const bad = Object.keys(o.row).filter((c) => !derived.columns.has(c) && !optionsToo(c));
      if (bad.length > 0) {
        return failedAt(i, ops.length, permission(`${o.table as string} column ${bad.join(', ')} is written by northd; a chassis may set only ${derived.list.join(', ')}`));
      }
      derived.into.push({ index: i, where: o.where, row: o.row as Record<string, unknown> });
      continue;
    }
    if (o.table === 'Port_Binding' && o.op === 'mutate') {
      if (ctx.migrationWrites !== true) {
        return failedAt(i, ops.length, permission('Port_Binding\'s chassis-owned columns take "mutate" once every member of the cluster runs a build that applies it (apply version 4); "update" them until then'));
      }
      const named = Array.isArray(o.mutations) ? o.mutations.map((m: unknown) => (Array.isArray(m) ? m[0] : undefined)) : [];
      const bad = named.filter((c) => typeof c !== 'string' || (!ownedColumnSet.has(c) && !optionsToo(c)));
      if (bad.length > 0) {
        return failedAt(i, ops.length, permission(`Port_Binding column ${bad.map(String).join(', ')} is written by northd; a chassis may change only ${portBindingOwnedColumns.join(', ')}`));
      }
      pbOps.push({ index: i, where: o.where, row: {}, mutations: o.mutations });
      continue;
    }
    const what = typeof o.table === 'string' ? `table ${o.table}` : 'this operation';
    return failedAt(i, ops.length, permission(`${what} is derived by northd and read-only here; a client writes ${clientTables.join(', ')}, SB_Global's ${sbGlobalOperatorColumns.join(', ')}, Port_Binding's ${portBindingOwnedColumns.join(', ')} Service_Monitor's ${serviceMonitorOwnedColumns.join(', ')} and BFD's ${bfdOwnedColumns.join(', ')} (by "update")`));
  }
  // The operator's half of SB_Global is made on first use, with northd's row's UUID (so the
  // client's "where" names it), inside this transaction: if the transaction fails, so does this.
  if (needsGlobalRow && ctx.sbGlobal !== undefined && store.get('SB_Global', ctx.sbGlobal) === undefined) {
    ownedOps.unshift({ op: 'insert', table: 'SB_Global', uuid: ctx.sbGlobal, row: {} });
    ownedIndex.unshift(-1);
  }

  // Parse the updates of derived rows before anything runs, so that a bad one changes nothing:
  // their conditions, their values (a named uuid must name a row this transaction inserts into
  // the table the column refers to).
  const parseUpdates = (table: TableSchema, list: typeof pbOps): DerivedUpdate[] | SbTxnOutcome => {
    const parsed: DerivedUpdate[] = [];
    for (const p of list) {
      try {
        for (const m of p.mutations === undefined ? [] : (p.mutations as unknown[])) {
          const col = (m as unknown[])[0] as string;
          for (const name of namedUuids((m as unknown[])[2])) {
            if (inserted.get(name) !== refTableOf[col]) {
              return failedAt(p.index, ops.length, new OvsdbError(OvsdbErrorName.syntaxError, `named-uuid "${name}" in ${table.name}.${col} is not a row this transaction inserts into ${refTableOf[col] ?? 'a referenced table'}`));
            }
          }
        }
        if (p.mutations !== undefined) parseMutations(table, p.mutations, () => NAMED_PLACEHOLDER);
        for (const [col, json] of Object.entries(p.row)) {
          for (const name of namedUuids(json)) {
            if (inserted.get(name) !== refTableOf[col]) {
              return failedAt(p.index, ops.length, new OvsdbError(OvsdbErrorName.syntaxError, `named-uuid "${name}" in ${table.name}.${col} is not a row this transaction inserts into ${refTableOf[col] ?? 'a referenced table'}`));
            }
          }
          const column = table.columns.get(col);
          if (column !== undefined) valueFromJson(column.type, json, () => NAMED_PLACEHOLDER);
        }
        parsed.push({ index: p.index, where: p.where, clauses: parseConditions(table, p.where ?? []), row: p.row, ...(p.mutations !== undefined ? { mutations: p.mutations } : {}) });
      } catch (err) {
        if (err instanceof OvsdbError) return failedAt(p.index, ops.length, err);
        throw err;
      }
    }
    return parsed;
  };
  const pbParsed = parseUpdates(derivedSchema('Port_Binding'), pbOps);
  if (!Array.isArray(pbParsed)) return pbParsed;
  // A mutation can fail on what it finds (a second chassis inserted into chassis): tried first,
  // each name standing for a distinct new row as it will, so that a failure changes nothing.
  const standIns = new Map<string, Uuid>();
  const standIn = (name: string): Uuid => {
    let u = standIns.get(name);
    if (u === undefined) standIns.set(name, (u = `00000000-0000-4000-8000-${(standIns.size + 1).toString(16).padStart(12, '0')}`));
    return u;
  };
  const tried = portUpdates(pbParsed, ctx, standIn, []);
  if ('error' in tried) return failedAt(tried.failedOp, ops.length, tried.error);
  const smParsed = parseUpdates(derivedSchema('Service_Monitor'), smOps);
  if (!Array.isArray(smParsed)) return smParsed;
  const bfdParsed = parseUpdates(derivedSchema('BFD'), bfdOps);
  if (!Array.isArray(bfdParsed)) return bfdParsed;

  const committed = transact(store, ownedOps, {
    newUuid: ctx.newUuid,
    ...(ctx.elapsedMs !== undefined ? { elapsedMs: ctx.elapsedMs } : {}),
    ...(session !== undefined && ctx.rbacEnforced === true ? { rbac: chassisStoreGate(session) } : {}),
  });
  if (committed.kind === 'blocked') return committed;
  const out = committed.kind === 'committed' ? { ...committed, delta: withoutOrphanGroups(store, committed.delta) } : committed;
  /** The owned ops' results in their places among all ops (the hidden SB_Global insert has none). */
  const placed = (owned: readonly unknown[]): unknown[] => {
    const results: unknown[] = ops.map(() => null);
    owned.forEach((r, k) => {
      if ((ownedIndex[k] as number) >= 0) results[ownedIndex[k] as number] = r;
    });
    return results;
  };
  if (out.kind === 'failed') return { kind: 'failed', results: placed(out.results) };
  const names = new Map<string, Uuid>();
  ownedOps.forEach((op, k) => {
    const name = (op as { 'uuid-name'?: unknown })['uuid-name'];
    const uuid = (out.results[k] as { uuid?: [string, string] } | null)?.uuid?.[1];
    if (typeof name === 'string' && typeof uuid === 'string') names.set(name, uuid);
  });
  const results = placed(out.results);

  const applied = portUpdates(pbParsed, ctx, (n) => names.get(n) as Uuid, results);
  assert.ok('ports' in applied, 'Port_Binding updates that passed a trial cannot fail');
  const ports = applied.ports;
  const current = (port: string): ChassisOwnedColumns => (ports.has(port) ? ports.get(port) : ctx.owned.get(port)) ?? {};
  // Weak references: drop those to Chassis or Encap rows that do not exist (now). Every port
  // reported before this transaction referred only to rows that existed then, so unless it
  // deleted such rows, only the ports it wrote can refer to a missing one: an ack transaction
  // at 500 chassis then looks at no port rather than at every bound one.
  const deletedReferenced = out.delta.changes.some((c) => c.kind === 'delete' && refTables.has(c.table));
  const candidates = deletedReferenced ? new Set<string>([...ctx.owned.keys(), ...ports.keys()]) : new Set<string>(ports.keys());
  for (const port of [...candidates].sort()) {
    const c = current(port);
    let changed = false;
    const next: Record<string, unknown> = { ...c };
    for (const [col, table] of Object.entries(refTableOf)) {
      const refs = c[col as keyof ChassisOwnedColumns] as readonly Uuid[] | undefined;
      if (refs === undefined) continue;
      const kept = refs.filter((u) => store.get(table, u) !== undefined);
      if (kept.length !== refs.length) {
        next[col] = kept;
        changed = true;
      }
    }
    if (changed) ports.set(port, next as ChassisOwnedColumns);
  }

  // Service_Monitor.status (optional: a report may clear it) and BFD.status (required: always
  // one the schema admits).
  const monitors: MonitorUpdates = statusReports(smParsed, ctx.serviceMonitors, 'Service_Monitor', results,
    (v) => ({ status: (v as readonly string[])[0] }), (status) => statusValue(status));
  const bfd: BfdReports = statusReports(bfdParsed, ctx.bfdSessions ?? new Map<Uuid, Row>(), 'BFD', results,
    (v) => (isBfdStatus(v) ? { status: v } : undefined), (status) => status);
  return { kind: 'committed', results, delta: out.delta, ports, monitors, chassis: chassisUpdates(out.delta), hostnames: hostnameUpdates(out.delta), igmp: igmpUpdates(out.delta), bfd };
}

/**
 * IGMP_Group rows left without a chassis (its Chassis deleted: the weak reference dropped at
 * commit) are deleted, as ovn-northd deletes them: a chassis gone for good leaves no groups
 * behind. Done here, after the transaction, and folded into its delta (a row it modified is
 * deleted, one it inserted was never there).
 */
function withoutOrphanGroups(store: Database, delta: DbDelta): DbDelta {
  const orphans = delta.changes.filter((c) => c.table === 'IGMP_Group' && c.kind !== 'delete' && (c.new.chassis as readonly Uuid[]).length === 0).map((c) => c.uuid);
  if (orphans.length === 0) return delta;
  const gone = transact(store, orphans.map((u) => ({ op: 'delete', table: 'IGMP_Group', where: [['_uuid', '==', ['uuid', u]]] })), { newUuid: () => NAMED_PLACEHOLDER });
  assert.ok(gone.kind === 'committed', 'deleting IGMP_Group rows cannot fail');
  const dead = new Set(orphans);
  const changes: RowChange[] = [];
  for (const c of delta.changes) {
    if (c.table !== 'IGMP_Group' || !dead.has(c.uuid)) changes.push(c);
    else if (c.kind === 'modify') changes.push({ kind: 'delete', table: c.table, uuid: c.uuid, old: c.old });
  }
  return { changes };
}

/** Whether a Chassis row has an encap of type vxlan (ovn-northd's is_vxlan_mode). */
export function vxlanModeOf(store: Database): boolean {
  for (const chassis of store.rows('Chassis').values()) {
    for (const encap of chassis.encaps as readonly Uuid[]) if (store.get('Encap', encap)?.type === 'vxlan') return true;
  }
  return false;
}

/** An IGMP_Group row as northd reads it. */
export function igmpReportOf(row: Row): IgmpGroupReport {
  return {
    address: row.address as string,
    datapath: (row.datapath as readonly Uuid[])[0],
    chassis: (row.chassis as readonly Uuid[])[0],
    ports: row.ports as readonly Uuid[],
  };
}

/** The IGMP_Group rows a transaction changed. */
function igmpUpdates(delta: DbDelta): IgmpUpdates {
  const out: IgmpUpdates = new Map();
  for (const c of delta.changes) {
    if (c.table !== 'IGMP_Group') continue;
    out.set(c.uuid, c.kind === 'delete' ? undefined : igmpReportOf(c.new));
  }
  return out;
}

/**
 * Why an operation on SB_Global is refused, or undefined when it may run on the operator's half
 * of the row: an update, mutate, wait or select that names (in its row, mutations, columns and
 * conditions) only the operator columns and _uuid. northd's columns, and the row itself
 * (insert, delete), are northd's.
 */
function sbGlobalRefusal(op: unknown): string | undefined {
  const o = op as { op: string; row?: unknown; mutations?: unknown; columns?: unknown; where?: unknown };
  if (!['update', 'mutate', 'wait', 'select'].includes(o.op)) return `SB_Global's row is northd's: only its ${sbGlobalOperatorColumns.join(', ')} may be changed (by "update" or "mutate")`;
  const named: unknown[] = [];
  if (o.row !== null && typeof o.row === 'object' && !Array.isArray(o.row)) named.push(...Object.keys(o.row));
  if (Array.isArray(o.mutations)) for (const m of o.mutations as unknown[]) named.push(Array.isArray(m) ? m[0] : m);
  if (o.op === 'select' && o.columns === undefined) named.push('nb_cfg');
  if (Array.isArray(o.columns)) named.push(...(o.columns as unknown[]));
  if (Array.isArray(o.where)) for (const c of o.where as unknown[]) if (Array.isArray(c) && c[0] !== '_uuid') named.push(c[0]);
  const bad = [...new Set(named.filter((c) => typeof c !== 'string' || !(sbGlobalColumnSet.has(c) || c === '_uuid' || c === '_version')))];
  if (bad.length === 0) return undefined;
  return `SB_Global column ${bad.map(String).join(', ')} is written by northd; a client may set and read here only ${sbGlobalOperatorColumns.join(', ')}`;
}

/**
 * What the status updates of a derived table (Service_Monitor, BFD) report, by row UUID: each
 * update's where is evaluated against the rows as the transaction's earlier updates left their
 * status, and its count goes into `results`. `read` turns the column value an update names into
 * the report (undefined: not one to keep); `column` turns a report back into the column value.
 */
function statusReports<T>(
  parsed: readonly DerivedUpdate[], rows: ReadonlyMap<Uuid, Row>, table: 'Service_Monitor' | 'BFD', results: unknown[],
  read: (value: Value) => { status: T } | undefined, column: (status: T) => Value,
): Map<Uuid, T> {
  const type = (derivedSchema(table).columns.get('status') as { type: ColumnType }).type;
  const reports = new Map<Uuid, T>();
  for (const p of parsed) {
    let count = 0;
    for (const row of selected(rows, p.where)) {
      const now = reports.has(row._uuid) ? { ...row, status: column(reports.get(row._uuid) as T) } : row;
      if (!evaluateConditions(p.clauses, now as Row)) continue;
      count++;
      if (!('status' in p.row)) continue;
      const report = read(valueFromJson(type, p.row.status));
      if (report !== undefined) reports.set(row._uuid, report.status);
    }
    results[p.index] = { count };
  }
  return reports;
}

function statusValue(status: string | undefined): readonly string[] {
  return status === undefined ? [] : [status];
}

/**
 * The Chassis names a chassis-database delta affects and which row holds each now: every name
 * a changed row had before or has after. Names are unique (the schema's index), so a name no
 * changed row holds now is held by none (an unchanged row could not have shared it with the
 * row that held it before).
 */
export function chassisUpdates(delta: DbDelta): ChassisUpdates {
  const out: ChassisUpdates = new Map();
  for (const c of delta.changes) {
    if (c.table !== 'Chassis') continue;
    if (c.kind === 'modify' && c.old.name === c.new.name) continue;
    if (c.kind !== 'insert' && !out.has(c.old.name as string)) out.set(c.old.name as string, undefined);
  }
  for (const c of delta.changes) {
    if (c.table === 'Chassis' && c.kind !== 'delete' && (c.kind === 'insert' || c.old.name !== c.new.name)) out.set(c.new.name as string, c.uuid);
  }
  return out;
}

/** A Chassis row's hostname as northd reads it: an empty one is none. */
export function hostnameOf(row: Row | undefined): string | undefined {
  const h = row === undefined ? undefined : (row as unknown as { hostname: string }).hostname;
  return h === undefined || h === '' ? undefined : h;
}

/** The Chassis rows a chassis-database delta gave, changed or took a hostname. */
export function hostnameUpdates(delta: DbDelta): HostnameUpdates {
  const out: HostnameUpdates = new Map();
  for (const c of delta.changes) {
    if (c.table !== 'Chassis') continue;
    const before = c.kind === 'insert' ? undefined : hostnameOf(c.old);
    const now = c.kind === 'delete' ? undefined : hostnameOf(c.new);
    if (before !== now) out.set(c.uuid, now);
  }
  return out;
}

/**
 * Whether a port is up as ovn-northd reports it in Logical_Switch_Port.up: bound to a chassis,
 * and Port_Binding.up true, or unset (from chassis too old to set it). With `chassisOf` (apply
 * version 12), as ovn-northd 23.03 reads it: a chassis whose other_config says
 * port-up-notif=true sets up once the port's flows are installed, so until then (unset) the
 * port is down; a chassis without it does not set up, so its ports are up once bound.
 */
export function portIsUp(c: ChassisOwnedColumns | undefined, chassisOf?: (uuid: Uuid) => Row | undefined): boolean {
  const bound = c?.chassis?.[0];
  if (c === undefined || bound === undefined) return false;
  if (chassisOf !== undefined) return notifiesPortUp(chassisOf(bound)) ? c.up?.[0] === true : true;
  return c.up === undefined || c.up.length === 0 || c.up[0] === true;
}

/** A Chassis row's other_config:port-up-notif, as smap_get_bool reads it (default false). */
export function notifiesPortUp(chassis: Row | undefined): boolean {
  const v = (chassis?.['other_config'] as ReadonlyMap<string, string> | undefined)?.get('port-up-notif');
  return v !== undefined && v.toLowerCase() === 'true';
}

/** The values a Row column holds, for callers that read chassis rows. */
export function valueOf(row: Row | undefined, column: string): Value | undefined {
  return row === undefined ? undefined : (row as unknown as Record<string, Value>)[column];
}
