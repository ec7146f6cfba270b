// The in-memory database: one row map per table, the unique indexes the schema declares,
// optional non-unique secondary indexes (by column value) and the reference index (who refers
// to a row, strongly or weakly). Only `commitChanges` mutates it, and only with a change set
// that the transaction engine has already validated in full, so a commit cannot fail halfway.
import assert from 'node:assert/strict';
import type { Atom, Uuid } from './atom.js';
import type { Row, Value } from './datum.js';
import { checkAtomConstraints, defaultValue, forEachRef, forEachRefChange, toDatum, valueToJson } from './datum.js';
import type { OvsdbError } from './errors.js';
import type { ColumnType, DatabaseSchema, TableSchema } from './schema.js';
import { findColumn, uuidColumn, versionColumn } from './schema.js';
import { RefIndex } from './ref-index.js';

/** One row's change in a committed transaction, after weak-reference cleanup and GC. */
export type RowChange =
  | { readonly kind: 'insert'; readonly table: string; readonly uuid: Uuid; readonly new: Row }
  | { readonly kind: 'modify'; readonly table: string; readonly uuid: Uuid; readonly old: Row; readonly new: Row; readonly columns: readonly string[] }
  | { readonly kind: 'delete'; readonly table: string; readonly uuid: Uuid; readonly old: Row };

/** What one committed transaction changed, ordered by table name, then row UUID. */
export interface DbDelta {
  readonly changes: readonly RowChange[];
}

export function insertChange(table: string, row: Row): RowChange {
  return { kind: 'insert', table, uuid: row._uuid, new: row };
}
export function modifyChange(table: string, old: Row, row: Row, columns: readonly string[]): RowChange {
  return { kind: 'modify', table, uuid: row._uuid, old, new: row, columns };
}
export function deleteChange(table: string, old: Row): RowChange {
  return { kind: 'delete', table, uuid: old._uuid, old };
}

/** A secondary index to maintain: rows of `table` by the value of `column`. */
export interface SecondaryIndexSpec {
  readonly table: string;
  readonly column: string;
}

export interface DatabaseOptions {
  readonly secondaryIndexes?: readonly SecondaryIndexSpec[];
}

/** Canonical key of a tuple of column values, for index maps. */
export function indexKey(types: readonly ColumnType[], values: readonly Value[]): string {
  if (values.length === 1 && typeof values[0] === 'string') return values[0];
  return JSON.stringify(values.map((v, i) => valueToJson(types[i] as ColumnType, v)));
}

export class TableData {
  readonly schema: TableSchema;
  readonly rows = new Map<Uuid, Row>();
  /** One map per schema index: key of the indexed columns → the row holding it. */
  readonly uniqueIndexes: Map<string, Uuid>[];
  readonly uniqueIndexTypes: ColumnType[][];
  /**
   * Non-unique secondary indexes by column name: key → the row holding it, or a set of them
   * when several do (most keys name one row: a set each would cost ~100 bytes per row).
   */
  readonly secondary = new Map<string, Map<string, Uuid | Set<Uuid>>>();
  /** Every column at its default value (without _uuid and _version). */
  readonly defaultRow: Readonly<Record<string, Value>>;
  /**
   * Columns whose one-element default value breaks the column's own constraints (an enum without
   * "", a range without 0): an insert must give them a value. Column name → the error.
   */
  readonly invalidDefaults: ReadonlyMap<string, OvsdbError>;

  constructor(schema: TableSchema) {
    this.schema = schema;
    const defaults: Record<string, Value> = {};
    const invalid = new Map<string, OvsdbError>();
    for (const c of schema.columns.values()) {
      defaults[c.name] = defaultValue(c.type);
      if (c.type.min === 1) {
        // One default element (a scalar, or a set or map with min 1): check it.
        const d = toDatum(c.type, defaults[c.name] as Value);
        try {
          checkAtomConstraints(c.type.key, d.keys[0] as Atom);
          if (c.type.value !== undefined) checkAtomConstraints(c.type.value, (d.values as readonly Atom[])[0] as Atom);
        } catch (err) {
          invalid.set(c.name, err as OvsdbError);
        }
      }
    }
    this.defaultRow = defaults;
    this.invalidDefaults = invalid;
    this.uniqueIndexes = schema.indexes.map(() => new Map());
    this.uniqueIndexTypes = schema.indexes.map((cols) => cols.map((c) => (findColumn(schema, c) as { type: ColumnType }).type));
  }

  uniqueKey(i: number, row: Row): string {
    const cols = this.schema.indexes[i] as readonly string[];
    return indexKey(this.uniqueIndexTypes[i] as ColumnType[], cols.map((c) => row[c] as Value));
  }
}

export class Database {
  readonly schema: DatabaseSchema;
  readonly tables: ReadonlyMap<string, TableData>;
  /** Which table holds each row UUID (row UUIDs are unique across the database here). */
  readonly rowTable = new Map<Uuid, TableData>();
  readonly strongRefs = new RefIndex();
  readonly weakRefs = new RefIndex();
  private readonly secondarySpecs: readonly SecondaryIndexSpec[];

  constructor(schema: DatabaseSchema, options: DatabaseOptions = {}) {
    this.schema = schema;
    const tables = new Map<string, TableData>();
    for (const t of schema.tables.values()) tables.set(t.name, new TableData(t));
    this.tables = tables;
    this.secondarySpecs = options.secondaryIndexes ?? [];
    for (const spec of this.secondarySpecs) {
      const t = tables.get(spec.table);
      assert.ok(t !== undefined && t.schema.columns.has(spec.column), `secondary index on unknown column ${spec.table}.${spec.column}`);
      t.secondary.set(spec.column, new Map());
    }
  }

  table(name: string): TableData {
    const t = this.tables.get(name);
    assert.ok(t !== undefined, `no table ${name}`);
    return t;
  }

  rows(table: string): ReadonlyMap<Uuid, Row> {
    return this.table(table).rows;
  }

  get(table: string, uuid: Uuid): Row | undefined {
    return this.tables.get(table)?.rows.get(uuid);
  }

  /** Rows whose `column` equals `value`, through a secondary index declared at construction. */
  lookup(table: string, column: string, value: Value): Row[] {
    const t = this.table(table);
    const index = t.secondary.get(column);
    assert.ok(index !== undefined, `no secondary index on ${table}.${column}`);
    const type = (t.schema.columns.get(column) as { type: ColumnType }).type;
    const uuids = index.get(indexKey([type], [value]));
    if (uuids === undefined) return [];
    return typeof uuids === 'string' ? [t.rows.get(uuids) as Row] : [...uuids].map((u) => t.rows.get(u) as Row);
  }

  /** The row holding `values` in the schema's unique index over `columns`, if any. */
  findUnique(table: string, columns: readonly string[], values: readonly Value[]): Row | undefined {
    const t = this.table(table);
    // A plain search: projections look rows up by name once per port in a full run, and a
    // callback per index and column would be allocated on each.
    let i = -1;
    for (let k = 0; k < t.schema.indexes.length && i < 0; k++) {
      const cols = t.schema.indexes[k] as readonly string[];
      if (cols.length !== columns.length) continue;
      let same = true;
      for (let j = 0; j < cols.length && same; j++) same = cols[j] === columns[j];
      if (same) i = k;
    }
    assert.ok(i >= 0, `no unique index on ${table}(${columns.join(', ')})`);
    const uuid = (t.uniqueIndexes[i] as Map<string, Uuid>).get(indexKey(t.uniqueIndexTypes[i] as ColumnType[], values));
    return uuid === undefined ? undefined : t.rows.get(uuid);
  }

  /** Rows that refer to `uuid` strongly (with the number of references each). */
  strongReferrers(uuid: Uuid): ReadonlyMap<Uuid, number> {
    return this.strongRefs.referrers(uuid);
  }

  /**
   * The rows referring to `uuid` strongly, repeated once per reference, without building a map
   * (a read-only view of the index: use it before the database changes).
   */
  strongReferrerList(uuid: Uuid): readonly Uuid[] {
    return this.strongRefs.referrerList(uuid);
  }

  weakReferrers(uuid: Uuid): ReadonlyMap<Uuid, number> {
    return this.weakRefs.referrers(uuid);
  }

  /**
   * References to `uuid` from rows other than itself: a row that refers only to itself is
   * still garbage, as ovsdb-server collects it.
   */
  strongRefCount(uuid: Uuid): number {
    return this.strongRefs.countExcludingSelf(uuid);
  }

  /**
   * Applies a fully validated change set. The caller (the transaction engine) guarantees
   * referential integrity, index uniqueness and constraints; this only updates the maps.
   */
  commitChanges(delta: DbDelta): void {
    // Every old key leaves the unique and secondary indexes before any new one enters (two rows
    // may swap names). References are counts, so a modified row's only move by what changed.
    for (const ch of delta.changes) {
      const t = this.table(ch.table);
      if (ch.kind !== 'insert') this.unindexRow(t, ch.old, ch.kind === 'delete');
    }
    for (const ch of delta.changes) {
      const t = this.table(ch.table);
      if (ch.kind === 'delete') {
        t.rows.delete(ch.uuid);
        this.rowTable.delete(ch.uuid);
      } else {
        t.rows.set(ch.uuid, ch.new);
        const rows = this.rowTable.size;
        this.rowTable.set(ch.uuid, t);
        // Row UUIDs are unique across the database: an insert adds one (the transaction engine
        // checks a UUID an op gives; the ones it draws are asserted here).
        if (ch.kind === 'insert' && this.rowTable.size !== rows + 1) assert.fail(`row ${ch.uuid} of ${ch.table} inserted but already present`);
        this.indexRow(t, ch.new, ch.kind === 'insert');
        if (ch.kind === 'modify') this.reindexRefs(t, ch.old, ch.new);
      }
    }
  }

  private forEachRowRef(t: TableData, row: Row, visit: (target: Uuid, strong: boolean) => void): void {
    for (const col of t.schema.refColumns) {
      forEachRef(col.type, row[col.name] as Value, (target, base) => visit(target, base.refType !== 'weak'));
    }
  }

  /** Moves a modified row's references in the reference indexes by what its columns gained and lost. */
  private reindexRefs(t: TableData, old: Row, row: Row): void {
    for (const col of t.schema.refColumns) {
      forEachRefChange(col.type, old[col.name] as Value, row[col.name] as Value, (target, base, sign) => {
        const index = base.refType !== 'weak' ? this.strongRefs : this.weakRefs;
        if (sign > 0) index.add(target, row._uuid);
        else index.remove(target, row._uuid);
      });
    }
  }

  private indexRow(t: TableData, row: Row, refs: boolean): void {
    for (let i = 0; i < t.uniqueIndexes.length; i++) (t.uniqueIndexes[i] as Map<string, Uuid>).set(t.uniqueKey(i, row), row._uuid);
    for (const [column, index] of t.secondary) {
      const type = (t.schema.columns.get(column) as { type: ColumnType }).type;
      const key = indexKey([type], [row[column] as Value]);
      const held = index.get(key);
      if (held === undefined) index.set(key, row._uuid);
      else if (typeof held === 'string') index.set(key, new Set([held, row._uuid]));
      else held.add(row._uuid);
    }
    if (refs) this.forEachRowRef(t, row, (target, strong) => (strong ? this.strongRefs : this.weakRefs).add(target, row._uuid));
  }

  private unindexRow(t: TableData, row: Row, refs: boolean): void {
    for (let i = 0; i < t.uniqueIndexes.length; i++) {
      const m = t.uniqueIndexes[i] as Map<string, Uuid>;
      const key = t.uniqueKey(i, row);
      if (m.get(key) === row._uuid) m.delete(key);
    }
    for (const [column, index] of t.secondary) {
      const type = (t.schema.columns.get(column) as { type: ColumnType }).type;
      const key = indexKey([type], [row[column] as Value]);
      const held = index.get(key);
      if (held === row._uuid) index.delete(key);
      else if (held !== undefined && typeof held !== 'string') {
        held.delete(row._uuid);
        if (held.size === 1) index.set(key, held.values().next().value as Uuid);
      }
    }
    if (refs) this.forEachRowRef(t, row, (target, strong) => (strong ? this.strongRefs : this.weakRefs).remove(target, row._uuid));
  }
}

/** Every column of a row in RFC 7047 JSON, including _uuid and _version. */
export function rowToJson(schema: TableSchema, row: Row, columns?: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const names = columns ?? ['_uuid', '_version', ...schema.columns.keys()];
  for (const name of names) {
    const col = name === '_uuid' ? uuidColumn : name === '_version' ? versionColumn : schema.columns.get(name);
    assert.ok(col !== undefined, `no column ${name}`);
    out[name] = valueToJson(col.type, row[name] as Value);
  }
  return out;
}

/** The whole database as { table: { uuid: row JSON } }, tables and rows in sorted order. */
export function dumpDatabaseJson(db: Database): Record<string, Record<string, Record<string, unknown>>> {
  const out: Record<string, Record<string, Record<string, unknown>>> = {};
  for (const name of [...db.tables.keys()].sort()) {
    const t = db.table(name);
    const rows: Record<string, Record<string, unknown>> = {};
    for (const uuid of [...t.rows.keys()].sort()) rows[uuid] = rowToJson(t.schema, t.rows.get(uuid) as Row);
    out[name] = rows;
  }
  return out;
}

export type { Atom };
