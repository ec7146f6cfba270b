// SB row changes as the projection nodes record them, and the SB view they maintain. A change
// set merges any number of recordings of the same row into one net change (first old, last
// new), so a node may record freely while it works and still report the exact difference.
import assert from 'node:assert/strict';
import type { Row, RowChange, Uuid } from '../ovsdb/index.js';
import { isMapValue } from '../ovsdb/index.js';
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
  if (isMapValue(a) && isMapValue(b)) {
    if (a.size !== b.size) return false;
    for (const [k, v] of a) if (!b.has(k) || !valueEqual(v, b.get(k))) return false;
    return true;
  }
  return false;
}

/**
 * The columns (other than _uuid and _version) of `b` whose values differ in `a`, in name order.
 * Only the differing names are sorted (usually one or two), not every column of the row.
 */
export function changedColumns(a: Row, b: Row): string[] {
  const out: string[] = [];
  const ra = a as unknown as Record<string, unknown>;
  const rb = b as unknown as Record<string, unknown>;
  // Rows are plain objects: for-in reads their own columns, without the array Object.keys makes.
  for (const k in rb) {
    if (k === '_uuid' || k === '_version') continue;
    if (!valueEqual(ra[k], rb[k])) out.push(k);
  }
  return out.length > 1 ? out.sort() : out;
}

function byKey(a: readonly [unknown, unknown], b: readonly [unknown, unknown]): number {
  const x = String(a[0]);
  const y = String(b[0]);
  return x < y ? -1 : x > y ? 1 : 0;
}

/** JSON.stringify's replacer for row values: a map becomes its [key, value] pairs in key order. */
function mapsAsSortedPairs(_key: string, value: unknown): unknown {
  return isMapValue(value) ? [...value.entries()].sort(byKey) : value;
}

/** The reference definition of canonicalText: JSON.stringify with maps as sorted pairs. */
export function canonicalTextReference(value: unknown): string {
  return JSON.stringify(value, mapsAsSortedPairs) ?? 'undefined';
}

/** Up to this many map keys, writeCanonical sorts them by insertion. */
const INSERTION_SORT_MAX = 16;

/** Not an object (or null): JSON.stringify writes it the same with or without the replacer. */
function isAtom(v: unknown): boolean {
  return v === null || typeof v !== 'object';
}

/**
 * One value as the reference would write it, or undefined where JSON.stringify omits it (an
 * undefined, a function or a symbol). Written out by hand because every row's _version is
 * computed from it: this avoids the replacer call per value and the pair arrays per map.
 * Values it does not know (toJSON, boxed primitives, bigint) go to the reference.
 */
function writeCanonical(value: unknown): string | undefined {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'number':
      return Number.isFinite(value) ? String(value) : 'null';
    case 'boolean':
      return value ? 'true' : 'false';
    case 'undefined':
    case 'function':
    case 'symbol':
      return undefined;
    case 'object':
      break;
    default:
      return canonicalTextReference(value);
  }
  if (value === null) return 'null';
  if (Array.isArray(value)) {
    if (value.length === 0) return '[]';
    // An array of atoms (most column values) is written by JSON.stringify itself, natively:
    // for atoms its text is the reference's, as no replacer applies to them.
    if (value.every(isAtom)) return JSON.stringify(value);
    let out = '[';
    for (let i = 0; i < value.length; i++) out += (i > 0 ? ',' : '') + (writeCanonical(value[i]) ?? 'null');
    return out + ']';
  }
  if (isMapValue(value)) {
    if (value.size === 0) return '[]';
    // String keys (every map column's but an integer-keyed one) are sorted alone and their
    // values looked up: no [key, value] array per pair, no String() per comparison.
    const keys: unknown[] = [];
    let stringKeys = true;
    value.forEach((_v, k) => {
      keys.push(k);
      if (typeof k !== 'string') stringKeys = false;
    });
    if (stringKeys) {
      // In UTF-16 code unit order, as byKey's comparison puts strings. A map column holds a
      // few keys: an insertion sort of those allocates nothing, where the built-in sort
      // allocates its work area on every call.
      if (keys.length > INSERTION_SORT_MAX) keys.sort();
      else {
        for (let i = 1; i < keys.length; i++) {
          const k = keys[i] as string;
          let j = i - 1;
          for (; j >= 0 && (keys[j] as string) > k; j--) keys[j + 1] = keys[j];
          keys[j + 1] = k;
        }
      }
      let out = '[';
      for (let i = 0; i < keys.length; i++) {
        const k = keys[i] as string;
        out += `${i > 0 ? ',' : ''}[${JSON.stringify(k)},${writeCanonical(value.get(k)) ?? 'null'}]`;
      }
      return out + ']';
    }
    const pairs = [...value.entries()].sort(byKey);
    if (pairs.every(([k, v]) => isAtom(k) && isAtom(v))) return JSON.stringify(pairs);
    let out = '[';
    for (let i = 0; i < pairs.length; i++) {
      const [k, v] = pairs[i] as [unknown, unknown];
      out += `${i > 0 ? ',' : ''}[${writeCanonical(k) ?? 'null'},${writeCanonical(v) ?? 'null'}]`;
    }
    return out + ']';
  }
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function' || value instanceof String || value instanceof Number || value instanceof Boolean) {
    return canonicalTextReference(value);
  }
  let out = '{';
  let first = true;
  for (const k of Object.keys(value)) {
    const v = writeCanonical((value as Record<string, unknown>)[k]);
    if (v === undefined) continue;
    out += `${first ? '' : ','}${JSON.stringify(k)}:${v}`;
    first = false;
  }
  return out + '}';
}

/**
 * A canonical text for any row value or view: maps (including a view's table and row maps) as
 * sorted pairs, arrays in order, object members in the order the projection code builds them.
 * Exactly `canonicalTextReference`'s text.
 */
export function canonicalText(value: unknown): string {
  return writeCanonical(value) ?? 'undefined';
}

/** The canonical text of a row's columns: the row's members other than _uuid and _version. */
function columnsText(row: Readonly<Record<string, unknown>>): string {
  let out = '{';
  let first = true;
  for (const k of Object.keys(row)) {
    if (k === '_uuid' || k === '_version') continue;
    const v = writeCanonical(row[k]);
    if (v === undefined) continue;
    out += `${first ? '' : ','}${JSON.stringify(k)}:${v}`;
    first = false;
  }
  return out + '}';
}

/**
 * A row's _version: a hash of its content, so the same content has the same version on every
 * replica and a changed row has a new one. The content is the canonical text of the columns
 * object (without _uuid and _version), in the order the projection builds them.
 */
export function contentVersion(columns: Readonly<Record<string, unknown>>): Uuid {
  return hashUuid(['version', columnsText(columns)]);
}

/**
 * Fills in the _version of a row just built with a placeholder there (`_version: ''` right
 * after `_uuid`, then the columns): the same version as `contentVersion` of its columns, with
 * no separate columns object to build and copy. The row must not have been shared yet.
 */
export function versioned<T extends TypedRow>(row: T): T {
  (row as { _version: Uuid })._version = hashUuid(['version', columnsText(row as unknown as Record<string, unknown>)]);
  return row;
}

/** Below this many keys, uuidOrder leaves the work to the default sort. */
const UUID_SORT_MIN = 64;
/** From this many keys on, too: it bounds the scratch arrays (three of 4 bytes per key). */
const UUID_SORT_MAX = 2 ** 24;

/** The value of a lowercase hex digit, or -1. */
function hexValue(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 97 && c <= 102) return c - 87;
  return -1;
}

/** Bits of the 32-bit prefix each pass of uuidOrder's radix sort orders by (three passes). */
const RADIX_BITS = 11;
const RADIX_BUCKETS = 1 << RADIX_BITS;

/**
 * The order in which the default sort (UTF-16 code units) puts `keys`, as their indexes: fast
 * for row UUIDs, whose first eight lowercase hex digits are a 32-bit number whose order is
 * theirs. The indexes are ordered by that number with a stable radix sort (three passes of 11
 * bits, so keys with the same number keep their index order), and only keys whose first eight
 * digits tie are compared as strings. Keys of another shape take the default sort. A full run
 * orders tens of thousands of row UUIDs: comparing them as strings was a tenth of it, and a
 * native sort of the numbers still a few per cent; indexes let the caller read the rows from
 * an array rather than look each up again.
 */
export function uuidOrder(keys: readonly string[]): Uint32Array {
  const n = keys.length;
  let order = new Uint32Array(n);
  for (let i = 0; i < n; i++) order[i] = i;
  const byString = (a: number, b: number): number => {
    const x = keys[a] as string;
    const y = keys[b] as string;
    return x < y ? -1 : x > y ? 1 : a - b;
  };
  if (n < UUID_SORT_MIN || n >= UUID_SORT_MAX) return order.sort(byString);
  const prefix = new Uint32Array(n);
  for (let i = 0; i < n; i++) {
    const k = keys[i] as string;
    let v = 0;
    for (let j = 0; j < 8; j++) {
      const d = hexValue(k.charCodeAt(j));
      if (d < 0) return order.sort(byString);
      v = v * 16 + d;
    }
    prefix[i] = v;
  }
  let into = new Uint32Array(n);
  const counts = new Uint32Array(RADIX_BUCKETS);
  for (let shift = 0; shift < 32; shift += RADIX_BITS) {
    counts.fill(0);
    for (let i = 0; i < n; i++) {
      const b = ((prefix[i] as number) >>> shift) & (RADIX_BUCKETS - 1);
      counts[b] = (counts[b] as number) + 1;
    }
    let at = 0;
    for (let b = 0; b < RADIX_BUCKETS; b++) {
      const c = counts[b] as number;
      counts[b] = at;
      at += c;
    }
    for (let k = 0; k < n; k++) {
      const i = order[k] as number;
      const b = ((prefix[i] as number) >>> shift) & (RADIX_BUCKETS - 1);
      into[counts[b] as number] = i;
      counts[b] = (counts[b] as number) + 1;
    }
    const sorted = into;
    into = order;
    order = sorted;
  }
  // Keys sharing their first eight digits are in index order: sort each such run as strings.
  for (let i = 0; i < n; ) {
    const p = prefix[order[i] as number] as number;
    let j = i + 1;
    while (j < n && prefix[order[j] as number] === p) j++;
    if (j - i > 1) order.subarray(i, j).sort(byString);
    i = j;
  }
  return order;
}

interface Pending {
  readonly old: Row | undefined;
  new: Row | undefined;
}

/**
 * Net SB row changes of one engine run of one node (or of all nodes, merged). Kept per table,
 * so recording a row builds no composite key and the changes come out sorted table by table.
 */
export class SbChangeSet {
  private readonly tables = new Map<string, Map<Uuid, Pending>>();
  /**
   * Tables that were empty when recording began: their net change is an insert of every row
   * they hold at the end, read from their live rows when the changes are taken. A full run
   * from nothing then records nothing row by row.
   */
  private readonly fresh = new Map<string, ReadonlyMap<Uuid, Row>>();
  private count = 0;

  /**
   * When `table` is empty, stops recording its rows one by one: its changes are taken from its
   * rows at the end. Call before writing to it; take the changes before it changes again.
   */
  maybeTrackWhole(table: SbTable): void {
    if (table.rows.size > 0) return;
    assert(!this.tables.has(table.table), `${table.table}: changes recorded before tracking it whole`);
    this.fresh.set(table.table, table.rows);
  }

  /** Whether `table` is tracked whole (its rows are not recorded one by one). */
  tracksWhole(table: string): boolean {
    return this.fresh.has(table);
  }

  /** Records that `uuid` of `table` went from `old` to `row` (undefined = absent). */
  record(table: string, uuid: Uuid, old: Row | undefined, row: Row | undefined): void {
    if (this.fresh.has(table)) return;
    let rows = this.tables.get(table);
    if (rows === undefined) this.tables.set(table, (rows = new Map()));
    const p = rows.get(uuid);
    if (p === undefined) {
      rows.set(uuid, { old, new: row });
      this.count++;
    } else {
      p.new = row;
    }
  }

  /** The number of rows recorded (or held by a table tracked whole). */
  get size(): number {
    let n = this.count;
    for (const rows of this.fresh.values()) n += rows.size;
    return n;
  }

  /** Adds every pending change of `other` (recorded later than ours). */
  merge(other: SbChangeSet): void {
    for (const [table, rows] of other.fresh) {
      assert(!this.tables.has(table) && !this.fresh.has(table), `${table}: merging a table tracked whole into recorded changes`);
      this.fresh.set(table, rows);
    }
    for (const [table, rows] of other.tables) for (const [uuid, p] of rows) this.record(table, uuid, p.old, p.new);
  }

  /** The net changes in (table, uuid) order; a row recorded back to its old content is dropped. */
  toChanges(): RowChange[] {
    return SbChangeSet.changesOf([this]);
  }

  /**
   * The net changes of `sets` recorded in that order, as `merge` then `toChanges` would give
   * them; a table recorded in one set only (each engine node writes its own tables) is read
   * in place rather than copied.
   */
  static changesOf(sets: readonly SbChangeSet[]): RowChange[] {
    const byTable = new Map<string, Map<Uuid, Pending>[]>();
    const whole = new Map<string, ReadonlyMap<Uuid, Row>>();
    for (const set of sets) {
      for (const [table, rows] of set.tables) {
        const list = byTable.get(table);
        if (list === undefined) byTable.set(table, [rows]);
        else list.push(rows);
      }
      for (const [table, rows] of set.fresh) {
        assert(!whole.has(table), `${table} tracked whole by two change sets`);
        whole.set(table, rows);
      }
    }
    const out: RowChange[] = [];
    for (const table of [...new Set([...byTable.keys(), ...whole.keys()])].sort()) {
      const rowsNow = whole.get(table);
      if (rowsNow !== undefined) {
        assert(!byTable.has(table), `${table} both tracked whole and recorded`);
        const uuids = [...rowsNow.keys()];
        const rows = [...rowsNow.values()];
        const order = uuidOrder(uuids);
        for (let k = 0; k < order.length; k++) {
          const i = order[k] as number;
          out.push({ kind: 'insert', table, uuid: uuids[i] as Uuid, new: rows[i] as Row });
        }
        continue;
      }
      const parts = byTable.get(table) as Map<Uuid, Pending>[];
      let rows = parts[0] as Map<Uuid, Pending>;
      if (parts.length > 1) {
        rows = new Map(rows);
        for (const later of parts.slice(1)) {
          for (const [uuid, p] of later) {
            const first = rows.get(uuid);
            rows.set(uuid, first === undefined ? p : { old: first.old, new: p.new });
          }
        }
      }
      // The default sort compares UTF-16 code units, as `<` does, and is the fastest.
      const uuids = [...rows.keys()];
      const pending = [...rows.values()];
      const order = uuidOrder(uuids);
      for (let k = 0; k < order.length; k++) {
        const i = order[k] as number;
        const uuid = uuids[i] as Uuid;
        const p = pending[i] as Pending;
        if (p.old === undefined && p.new !== undefined) out.push({ kind: 'insert', table, uuid, new: p.new });
        else if (p.old !== undefined && p.new === undefined) out.push({ kind: 'delete', table, uuid, old: p.old });
        else if (p.old !== undefined && p.new !== undefined && p.old !== p.new) {
          const columns = changedColumns(p.old, p.new);
          if (columns.length > 0) out.push({ kind: 'modify', table, uuid, old: p.old, new: p.new, columns });
        }
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
    // Nothing is recorded for a table tracked whole, so there is no old row to compare with
    // (a row put twice keeps the last object, of the same content when of the same version).
    if (changes.tracksWhole(this.table)) {
      this.rows.set(row._uuid, row);
      return;
    }
    const old = this.rows.get(row._uuid);
    if (old !== undefined && old._version === row._version) return;
    this.rows.set(row._uuid, row);
    changes.record(this.table, row._uuid, old, row);
  }

  /** Adds a row the caller knows is absent (asserted). */
  insert(typed: TypedRow, changes: SbChangeSet): void {
    const row = typed as unknown as Row;
    const size = this.rows.size;
    this.rows.set(row._uuid, row);
    if (this.rows.size !== size + 1) assert.fail(`${this.table} ${row._uuid} inserted but already present`);
    changes.record(this.table, row._uuid, undefined, row);
  }

  remove(uuid: Uuid, changes: SbChangeSet): void {
    const old = this.rows.get(uuid);
    if (old === undefined) return;
    this.rows.delete(uuid);
    changes.record(this.table, uuid, old, undefined);
  }
}
