// OVSDB monitors (RFC 7047 section 4.1.5 and ovsdb-server(7): monitor, monitor_cond,
// monitor_cond_since): which tables, columns and rows a client watches, and the table-updates
// that an initial snapshot or a committed change turns into. Pure functions of the monitor,
// the rows and the changes; the door (server/ovsdb-door.ts) does the I/O.
import type { Atom } from '../ovsdb/atom.js';
import { compareAtoms } from '../ovsdb/atom.js';
import type { Clause } from '../ovsdb/condition.js';
import { evaluateConditions, parseConditions } from '../ovsdb/condition.js';
import { defaultValue, sortedDifference } from '../ovsdb/datum.js';
import { syntaxError } from '../ovsdb/errors.js';
import type { ColumnType, DatabaseSchema, DbDelta, Row, RowChange, TableSchema, Value } from '../ovsdb/index.js';
import { OvsdbError, OvsdbErrorName, datumToJson, valueToJson, valuesEqual } from '../ovsdb/index.js';
import { versionColumn } from '../ovsdb/schema.js';

/** What monitors read of a database: its schema and its rows (an ovsdb Database, or a view). */
export interface ReadableDb {
  readonly schema: DatabaseSchema;
  rows(table: string): ReadonlyMap<string, Row>;
}

/** 1: "update" (monitor); 2: "update2" (monitor_cond); 3: "update3" (monitor_cond_since). */
export type MonitorVersion = 1 | 2 | 3;

export interface MonitorSelect {
  readonly initial: boolean;
  readonly insert: boolean;
  readonly delete: boolean;
  readonly modify: boolean;
}

/** One clause of a monitor condition: a literal true/false, or [column, function, value]. */
type MonitorClause = { readonly kind: 'const'; readonly value: boolean } | { readonly kind: 'clause'; readonly clause: Clause };

export interface TableMonitor {
  readonly schema: TableSchema;
  /** Monitored columns, without _uuid. */
  readonly columns: readonly string[];
  readonly select: MonitorSelect;
  /**
   * A monitor condition is a disjunction (ovsdb-server's "match any clause"): a row is
   * watched when any clause holds; an empty list watches every row.
   */
  where: readonly MonitorClause[];
}

export interface Monitor {
  /** The client's monitor id, any JSON value; kept as given. */
  id: unknown;
  readonly db: string;
  readonly version: MonitorVersion;
  readonly tables: ReadonlyMap<string, TableMonitor>;
}

export type TableUpdates = Record<string, Record<string, unknown>>;

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function columnType(schema: TableSchema, name: string): ColumnType {
  if (name === '_version') return versionColumn.type;
  const c = schema.columns.get(name);
  if (c === undefined) throw new Error(`no column ${name} in ${schema.name}`);
  return c.type;
}

/** Parses the where of a monitor_cond request for one table. Throws OvsdbError. */
export function parseMonitorWhere(schema: TableSchema, json: unknown): MonitorClause[] {
  if (json === undefined) return [];
  if (!Array.isArray(json)) throw syntaxError('"where" must be an array of conditions');
  return json.map((c: unknown): MonitorClause => (typeof c === 'boolean' ? { kind: 'const', value: c } : { kind: 'clause', clause: parseConditions(schema, [c])[0] as Clause }));
}

function parseSelect(json: unknown): MonitorSelect {
  if (json === undefined) return { initial: true, insert: true, delete: true, modify: true };
  if (!isRecord(json)) throw syntaxError('"select" must be an object');
  const flag = (name: string): boolean => {
    const v = json[name];
    if (v === undefined) return true;
    if (typeof v !== 'boolean') throw syntaxError(`"select" member ${name} must be a boolean`);
    return v;
  };
  return { initial: flag('initial'), insert: flag('insert'), delete: flag('delete'), modify: flag('modify') };
}

/**
 * Parses <monitor-requests> ({table: request or [request...]}). Several requests for one
 * table are merged: the union of their columns and select flags, the first one's condition.
 * Throws OvsdbError with the RFC's names on bad input.
 */
export function parseMonitorRequests(db: ReadableDb, json: unknown, version: MonitorVersion): Map<string, TableMonitor> {
  if (!isRecord(json)) throw syntaxError('monitor requests must be an object of table names');
  const out = new Map<string, TableMonitor>();
  for (const [table, value] of Object.entries(json)) {
    const schema = db.schema.tables.get(table);
    if (schema === undefined) throw new OvsdbError(OvsdbErrorName.unknownTable, `no table named ${table}`);
    const requests = Array.isArray(value) ? value : [value];
    if (requests.length === 0) throw syntaxError(`empty monitor request for table ${table}`);
    const columns = new Set<string>();
    const select = { initial: false, insert: false, delete: false, modify: false };
    let where: MonitorClause[] | undefined;
    for (const r of requests) {
      if (!isRecord(r)) throw syntaxError(`monitor request for table ${table} must be an object`);
      const cols = r['columns'];
      if (cols === undefined) {
        for (const c of schema.columns.keys()) columns.add(c);
        columns.add('_version');
      } else {
        if (!Array.isArray(cols)) throw syntaxError('"columns" must be an array of column names');
        for (const c of cols) {
          if (typeof c !== 'string') throw syntaxError('"columns" must be an array of column names');
          if (c === '_uuid') continue;
          if (c !== '_version' && !schema.columns.has(c)) throw new OvsdbError(OvsdbErrorName.syntaxError, `${table} table has no ${c} column`);
          columns.add(c);
        }
      }
      const s = parseSelect(r['select']);
      select.initial ||= s.initial;
      select.insert ||= s.insert;
      select.delete ||= s.delete;
      select.modify ||= s.modify;
      if (r['where'] !== undefined && version === 1) throw syntaxError('"where" is only allowed in monitor_cond and monitor_cond_since');
      where ??= parseMonitorWhere(schema, r['where']);
    }
    out.set(table, { schema, columns: [...columns], select, where: where ?? [] });
  }
  return out;
}

export function rowMatches(tm: TableMonitor, row: Row): boolean {
  if (tm.where.length === 0) return true;
  return tm.where.some((c) => (c.kind === 'const' ? c.value : evaluateConditions([c.clause], row)));
}

function rowJson(tm: TableMonitor, row: Row, skipDefaults: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const name of tm.columns) {
    const type = columnType(tm.schema, name);
    const value = row[name] as Value;
    if (skipDefaults && name !== '_version' && valuesEqual(type, value, defaultValue(type))) continue;
    out[name] = valueToJson(type, value);
  }
  return out;
}

function sortedAtoms(atoms: Atom[]): Atom[] {
  return atoms.sort(compareAtoms);
}

/**
 * The update2 "modify" diff of one column: the new value of a scalar or of an optional value
 * (a set of at most one element, as ovsdb-server sends it: the IDL replaces those); a set's
 * symmetric difference; a map's removed, added and changed pairs.
 */
function columnDiff(type: ColumnType, oldValue: Value, newValue: Value): unknown {
  switch (type.kind) {
    case 'scalar':
      return valueToJson(type, newValue);
    case 'set': {
      if (type.max === 1) return valueToJson(type, newValue);
      // A merge walk of the two sorted values (or the edit a mutation recorded): a port added
      // to a switch of thousands must not cost a search of one set per element of the other.
      const { removed, added } = sortedDifference(oldValue as readonly Atom[], newValue as readonly Atom[]);
      const keys = removed.length === 0 ? added : added.length === 0 ? removed : sortedAtoms([...removed, ...added]);
      return datumToJson({ ...type, min: 0, max: Infinity }, { keys });
    }
    case 'map': {
      const a = oldValue as ReadonlyMap<Atom, Atom>;
      const b = newValue as ReadonlyMap<Atom, Atom>;
      const pairs = new Map<Atom, Atom>();
      for (const [k, v] of a) if (!b.has(k)) pairs.set(k, v);
      for (const [k, v] of b) {
        const old = a.get(k);
        if (old === undefined || compareAtoms(old, v) !== 0) pairs.set(k, v);
      }
      const keys = sortedAtoms([...pairs.keys()]);
      return datumToJson(type, { keys, values: keys.map((k) => pairs.get(k) as Atom) });
    }
  }
}

function add(out: TableUpdates, table: string, uuid: string, update: unknown): void {
  (out[table] ??= {})[uuid] = update;
}

/** The initial contents a monitor reports: every watched row (nothing without select.initial). */
export function initialUpdates(m: Monitor, db: ReadableDb): TableUpdates {
  const out: TableUpdates = {};
  for (const [table, tm] of m.tables) {
    if (!tm.select.initial) continue;
    for (const row of db.rows(table).values()) {
      if (!rowMatches(tm, row)) continue;
      add(out, table, row._uuid, m.version === 1 ? { new: rowJson(tm, row, false) } : { initial: rowJson(tm, row, true) });
    }
  }
  return out;
}

/**
 * The table-updates one committed change set produces for a monitor, or undefined when the
 * monitor sees none of it. A modify that moves a row into (out of) the condition is reported
 * as an insert (delete), as ovsdb-server does.
 */
export function changeUpdates(m: Monitor, changes: readonly RowChange[]): TableUpdates | undefined {
  const out: TableUpdates = {};
  let any = false;
  for (const c of changes) {
    const tm = m.tables.get(c.table);
    if (tm === undefined) continue;
    const oldIn = c.kind !== 'insert' && rowMatches(tm, c.old);
    const newIn = c.kind !== 'delete' && rowMatches(tm, c.new);
    let update: unknown;
    if (oldIn && newIn && c.kind === 'modify') {
      if (!tm.select.modify) continue;
      const changed = tm.columns.filter((name) => c.columns.includes(name) || (name === '_version' && c.old._version !== c.new._version));
      if (changed.length === 0) continue;
      if (m.version === 1) {
        const old: Record<string, unknown> = {};
        for (const name of changed) old[name] = valueToJson(columnType(tm.schema, name), c.old[name] as Value);
        update = { old, new: rowJson(tm, c.new, false) };
      } else {
        const diff: Record<string, unknown> = {};
        for (const name of changed) diff[name] = columnDiff(columnType(tm.schema, name), c.old[name] as Value, c.new[name] as Value);
        update = { modify: diff };
      }
    } else if (newIn) {
      if (!tm.select.insert) continue;
      update = m.version === 1 ? { new: rowJson(tm, c.new, false) } : { insert: rowJson(tm, c.new, true) };
    } else if (oldIn) {
      if (!tm.select.delete) continue;
      update = m.version === 1 ? { old: rowJson(tm, c.old, false) } : { delete: null };
    } else continue;
    add(out, c.table, c.uuid, update);
    any = true;
  }
  return any ? out : undefined;
}

/** Folds a run of committed deltas into one net change per row (for a resumed monitor). */
export function netChanges(db: ReadableDb, deltas: readonly DbDelta[]): RowChange[] {
  const first = new Map<string, { table: string; old: Row | undefined; new: Row | undefined }>();
  for (const d of deltas) {
    for (const c of d.changes) {
      const seen = first.get(c.uuid);
      const after = c.kind === 'delete' ? undefined : c.new;
      if (seen === undefined) first.set(c.uuid, { table: c.table, old: c.kind === 'insert' ? undefined : c.old, new: after });
      else seen.new = after;
    }
  }
  const out: RowChange[] = [];
  for (const [uuid, x] of first) {
    if (x.old === undefined && x.new !== undefined) out.push({ kind: 'insert', table: x.table, uuid, new: x.new });
    else if (x.old !== undefined && x.new === undefined) out.push({ kind: 'delete', table: x.table, uuid, old: x.old });
    else if (x.old !== undefined && x.new !== undefined) {
      const schema = db.schema.tables.get(x.table);
      if (schema === undefined) continue;
      const oldRow = x.old;
      const newRow = x.new;
      const columns = [...schema.columns.values()].filter((col) => !valuesEqual(col.type, oldRow[col.name] as Value, newRow[col.name] as Value)).map((col) => col.name);
      out.push({ kind: 'modify', table: x.table, uuid, old: oldRow, new: newRow, columns });
    }
  }
  return out;
}

/**
 * monitor_cond_change for one table: the new condition's effect on the rows the client holds,
 * as update2 rows (delete for rows leaving, insert for rows entering).
 */
export function conditionChangeUpdates(m: Monitor, table: string, oldWhere: readonly MonitorClause[], db: ReadableDb): Record<string, unknown> {
  const tm = m.tables.get(table);
  if (tm === undefined) return {};
  const out: Record<string, unknown> = {};
  const before: TableMonitor = { ...tm, where: oldWhere };
  for (const row of db.rows(table).values()) {
    const was = rowMatches(before, row);
    const is = rowMatches(tm, row);
    if (was && !is) out[row._uuid] = { delete: null };
    else if (!was && is) out[row._uuid] = { insert: rowJson(tm, row, true) };
  }
  return out;
}
