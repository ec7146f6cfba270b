// Writing a transaction small, for the one state it will meet. An IDL client (ovn-nbctl,
// ovsdbapp's older code) adds one port to a switch by verifying the switch's ports, a "wait"
// that spells out all of them, and writing the whole new set back in an "update": two copies of
// a set of thousands for a change of one. A clustered server logs the request as it came, so
// every member persisted, parsed and compared both copies (360 KB for a pod added to a switch
// and a port group of 2,000 ports each).
//
// When the proposer knows the exact state the transaction will be applied to (nothing of its
// log is waiting to be applied, and the entry goes right after), it can answer for that state
// what the bulky operations come to, and log that instead:
// - a "wait" that holds now, ahead of every write, holds then: it becomes a "comment" (whose
//   result is the same {});
// - an "update" of one row by UUID, of set and map columns only, in a table no earlier
//   operation wrote, becomes a "mutate" that deletes what the new value lacks and inserts what
//   it adds; an update that changes nothing becomes an update of no columns.
// Each rewritten operation answers as the original would and leaves the same rows, with the
// same UUIDs drawn in the same order (tests/ovsdb/compact.test.ts checks it against
// transact on random databases). Anything else, or anything that does not parse, is left as
// it came; an operation that would fail is left for the apply to report.
import type { Atom, Uuid } from './atom.js';
import { zeroUuid } from './atom.js';
import type { Database } from './database.js';
import type { Value } from './datum.js';
import { atomFromJson, atomToJson } from './datum.js';
import type { ColumnSchema, TableSchema } from './schema.js';
import { findColumn } from './schema.js';
import { tryTransaction } from './transaction.js';

/** Operations that write nothing. */
const readsOnly: ReadonlySet<unknown> = new Set(['wait', 'comment', 'assert', 'commit', 'select']);

/** A set or map written whole with fewer elements than this is left as it is: nothing to gain. */
export const COMPACT_ELEMENTS_MIN = 64;

/**
 * `ops` rewritten smaller for execution on `db` exactly as it is now, or undefined when
 * nothing was rewritten. Only valid when `ops` will execute on this state of `db` and no other.
 */
export function compactTransaction(db: Database, ops: readonly unknown[]): unknown[] | undefined {
  let out: unknown[] | undefined;
  let wrote = false;
  const written = new Set<string>();
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i];
    if (typeof op !== 'object' || op === null || Array.isArray(op)) return undefined;
    const o = op as Record<string, unknown>;
    if (o.op === 'abort') return undefined;
    let replacement: unknown;
    if (o.op === 'wait') {
      if (!wrote && jsonShape(o.rows).elements >= COMPACT_ELEMENTS_MIN) {
        if (jsonShape(o).named || !waitHolds(db, o)) return undefined;
        replacement = { op: 'comment', comment: '' };
      }
    } else if (o.op === 'update' && typeof o.table === 'string' && !written.has(o.table)) {
      replacement = compactUpdate(db, o);
    }
    if (!readsOnly.has(o.op)) {
      // Anything else may write (an unknown op fails the transaction anyway).
      wrote = true;
      written.add(typeof o.table === 'string' ? o.table : '');
    }
    if (replacement !== undefined) {
      out ??= ops.slice();
      out[i] = replacement;
    }
  }
  return out;
}

/**
 * How many atoms a JSON value holds in its sets and maps, roughly (what writing it costs), and
 * whether it names a row by "named-uuid" (its meaning then depends on the transaction).
 */
function jsonShape(json: unknown, into = { elements: 0, named: false }): { elements: number; named: boolean } {
  if (Array.isArray(json)) {
    if (isNamedUuid(json)) into.named = true;
    else if (json.length === 2 && (json[0] === 'set' || json[0] === 'map') && Array.isArray(json[1])) into.elements += json[1].length;
    for (const v of json) jsonShape(v, into);
  } else if (typeof json === 'object' && json !== null) {
    for (const v of Object.values(json)) jsonShape(v, into);
  }
  return into;
}

/** Whether the wait holds on `db` as it is (a wait that would block or fail does not). */
function waitHolds(db: Database, op: Record<string, unknown>): boolean {
  const out = tryTransaction(db, [op], { newUuid: () => zeroUuid, readOnly: true });
  return out.kind === 'committed';
}

/** The one row `where` names by UUID (`[["_uuid", "==", ["uuid", X]]]`), if it is that. */
function pinnedRow(where: unknown): Uuid | undefined {
  if (!Array.isArray(where) || where.length !== 1) return undefined;
  const c = where[0] as unknown;
  if (!Array.isArray(c) || c.length !== 3 || c[0] !== '_uuid' || c[1] !== '==') return undefined;
  const v = c[2] as unknown;
  if (!Array.isArray(v) || v.length !== 2 || v[0] !== 'uuid' || typeof v[1] !== 'string') return undefined;
  return v[1];
}

/** A column an update may write as a mutate: a set or map of any size, mutable. */
function mutableCollection(table: TableSchema, name: string): ColumnSchema | undefined {
  const c = findColumn(table, name);
  if (c === undefined || !c.mutable || name === '_uuid' || name === '_version') return undefined;
  const t = c.type;
  if (t.kind === 'scalar' || t.min !== 0 || t.max !== Infinity) return undefined;
  return c;
}

/** The update as a mutate (or an update of no columns), or undefined to leave it. */
function compactUpdate(db: Database, op: Record<string, unknown>): unknown {
  const schema = db.schema.tables.get(op.table as string);
  const uuid = pinnedRow(op.where);
  const row = op.row;
  if (schema === undefined || uuid === undefined || typeof row !== 'object' || row === null || Array.isArray(row)) return undefined;
  const current = db.rows(schema.name).get(uuid.toLowerCase());
  if (current === undefined || jsonShape(row).elements < COMPACT_ELEMENTS_MIN) return undefined;
  const mutations: unknown[] = [];
  for (const [name, json] of Object.entries(row as Record<string, unknown>)) {
    const column = mutableCollection(schema, name);
    if (column === undefined) return undefined;
    const m = column.type.kind === 'map' ? mapMutations(column, current[name] as Value, json) : setMutations(column, current[name] as Value, json);
    if (m === undefined) return undefined;
    mutations.push(...m);
  }
  if (mutations.length === 0) return { op: 'update', table: op.table, where: op.where, row: {} };
  return { op: 'mutate', table: op.table, where: op.where, mutations };
}

/** The JSON elements of a set value (a lone atom is a set of one), or undefined. */
function setElements(json: unknown): unknown[] | undefined {
  if (Array.isArray(json) && json.length === 2 && json[0] === 'set') return Array.isArray(json[1]) ? json[1] : undefined;
  return [json];
}

function isNamedUuid(json: unknown): boolean {
  return Array.isArray(json) && json.length === 2 && json[0] === 'named-uuid';
}

/** [delete, insert] mutations that take the set `current` to `json`, or undefined if it does not parse. */
function setMutations(column: ColumnSchema, current: Value, json: unknown): unknown[] | undefined {
  const elements = setElements(json);
  if (elements === undefined) return undefined;
  const base = column.type.key;
  const have = new Set(current as readonly Atom[]);
  const next = new Set<Atom>();
  const added: unknown[] = [];
  try {
    for (const e of elements) {
      // A named UUID is a row this transaction inserts: never one the set holds already.
      if (isNamedUuid(e)) {
        added.push(e);
        continue;
      }
      const atom = atomFromJson(base, e);
      if (next.has(atom)) return undefined; // a duplicate: the update's own error stands
      next.add(atom);
      if (!have.has(atom)) added.push(atomToJson(base, atom));
    }
  } catch {
    return undefined;
  }
  const removed = (current as readonly Atom[]).filter((a) => !next.has(a)).map((a) => atomToJson(base, a));
  const out: unknown[] = [];
  if (removed.length > 0) out.push([column.name, 'delete', ['set', removed]]);
  if (added.length > 0) out.push([column.name, 'insert', ['set', added]]);
  return out;
}

/** [delete, insert] mutations that take the map `current` to `json`, or undefined if it does not parse. */
function mapMutations(column: ColumnSchema, current: Value, json: unknown): unknown[] | undefined {
  if (!Array.isArray(json) || json.length !== 2 || json[0] !== 'map' || !Array.isArray(json[1])) return undefined;
  const keyType = column.type.key;
  const valueType = column.type.value;
  if (valueType === undefined) return undefined;
  const have = current as ReadonlyMap<Atom, Atom>;
  const next = new Map<Atom, Atom>();
  const added: unknown[] = [];
  try {
    for (const p of json[1] as unknown[]) {
      if (!Array.isArray(p) || p.length !== 2 || isNamedUuid(p[0]) || isNamedUuid(p[1])) return undefined;
      const k = atomFromJson(keyType, p[0]);
      const v = atomFromJson(valueType, p[1]);
      if (next.has(k)) return undefined;
      next.set(k, v);
      if (have.get(k) !== v) added.push([atomToJson(keyType, k), atomToJson(valueType, v)]);
    }
  } catch {
    return undefined;
  }
  const removed: unknown[] = [];
  for (const [k, v] of have) if (next.get(k) !== v) removed.push([atomToJson(keyType, k), atomToJson(valueType, v)]);
  const out: unknown[] = [];
  if (removed.length > 0) out.push([column.name, 'delete', ['map', removed]]);
  if (added.length > 0) out.push([column.name, 'insert', ['map', added]]);
  return out;
}
