// SB row changes as the projection nodes record them, and the SB view they maintain. A change
// set merges any number of recordings of the same row into one net change (first old, last
// new), so a node may record freely while it works and still report the exact difference.
import type { Row, RowChange, Uuid } from '../ovsdb/index.js';
import type { Row as TypedRow } from '../ovsdb/rows/common.js';
import { hashUuid } from './hash.js';

/** The SB rows of one projection: table → uuid → row. */
export type SbView = ReadonlyMap<string, ReadonlyMap<Uuid, Row>>;

/** SB row changes in (table, uuid) order, the same shape as ovsdb's DbDelta. */
export interface SbDelta {
  readonly changes: readonly RowChange[];
}

function valueEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b)) {
    if (a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!valueEqual(a[i], b[i])) return false;
    return true;
  }
  if (a instanceof Map && b instanceof Map) {
    if (a.size !== b.size) return false;
    for (const [k, v] of a) if (!b.has(k) || !valueEqual(v, b.get(k))) return false;
    return true;
  }
  return false;
}

/** The columns (other than _uuid and _version) whose values differ between two rows. */
export function changedColumns(a: Row, b: Row): string[] {
  const out: string[] = [];
  const ra = a as unknown as Record<string, unknown>;
  const rb = b as unknown as Record<string, unknown>;
  for (const k of Object.keys(rb).sort()) {
    if (k === '_uuid' || k === '_version') continue;
    if (!valueEqual(ra[k], rb[k])) out.push(k);
  }
  return out;
}

function byKey(a: readonly [unknown, unknown], b: readonly [unknown, unknown]): number {
  const x = String(a[0]);
  const y = String(b[0]);
  return x < y ? -1 : x > y ? 1 : 0;
}

/** JSON.stringify's replacer for row values: a map becomes its [key, value] pairs in key order. */
function mapsAsSortedPairs(_key: string, value: unknown): unknown {
  return value instanceof Map ? [...(value as Map<unknown, unknown>).entries()].sort(byKey) : value;
}

/**
 * A canonical text for any row value or view: maps (including a view's table and row maps) as
 * sorted pairs, arrays in order, object members in the order the projection code builds them.
 */
export function canonicalText(value: unknown): string {
  return JSON.stringify(value, mapsAsSortedPairs) ?? 'undefined';
}

/**
 * A row's _version: a hash of its content, so the same content has the same version on every
 * replica and a changed row has a new one.
 */
export function contentVersion(columns: Readonly<Record<string, unknown>>): Uuid {
  return hashUuid(['version', canonicalText(columns)]);
}

interface Pending {
  readonly table: string;
  readonly uuid: Uuid;
  readonly old: Row | undefined;
  new: Row | undefined;
}

/** Net SB row changes of one engine run of one node (or of all nodes, merged). */
export class SbChangeSet {
  private readonly pending = new Map<string, Pending>();

  /** Records that `uuid` of `table` went from `old` to `row` (undefined = absent). */
  record(table: string, uuid: Uuid, old: Row | undefined, row: Row | undefined): void {
    const key = `${table}\u0000${uuid}`;
    const p = this.pending.get(key);
    if (p === undefined) this.pending.set(key, { table, uuid, old, new: row });
    else p.new = row;
  }

  get size(): number {
    return this.pending.size;
  }

  /** Adds every pending change of `other` (recorded later than ours). */
  merge(other: SbChangeSet): void {
    for (const p of other.pending.values()) this.record(p.table, p.uuid, p.old, p.new);
  }

  /** The net changes in (table, uuid) order; a row recorded back to its old content is dropped. */
  toChanges(): RowChange[] {
    const out: RowChange[] = [];
    const sorted = [...this.pending.values()].sort((a, b) =>
      a.table < b.table ? -1 : a.table > b.table ? 1 : a.uuid < b.uuid ? -1 : a.uuid > b.uuid ? 1 : 0,
    );
    for (const p of sorted) {
      if (p.old === undefined && p.new !== undefined) out.push({ kind: 'insert', table: p.table, uuid: p.uuid, new: p.new });
      else if (p.old !== undefined && p.new === undefined) out.push({ kind: 'delete', table: p.table, uuid: p.uuid, old: p.old });
      else if (p.old !== undefined && p.new !== undefined) {
        const columns = changedColumns(p.old, p.new);
        if (columns.length > 0) out.push({ kind: 'modify', table: p.table, uuid: p.uuid, old: p.old, new: p.new, columns });
      }
    }
    return out;
  }
}

/**
 * One SB table's rows as a node holds them; every write is recorded in the given change set,
 * so the node's output change is exactly what it wrote.
 */
export class SbTable {
  readonly rows = new Map<Uuid, Row>();
  constructor(readonly table: string) {}

  put(typed: TypedRow, changes: SbChangeSet): void {
    const row = typed as unknown as Row;
    const old = this.rows.get(row._uuid);
    if (old !== undefined && old._version === row._version) return;
    this.rows.set(row._uuid, row);
    changes.record(this.table, row._uuid, old, row);
  }

  remove(uuid: Uuid, changes: SbChangeSet): void {
    const old = this.rows.get(uuid);
    if (old === undefined) return;
    this.rows.delete(uuid);
    changes.record(this.table, uuid, old, undefined);
  }
}
