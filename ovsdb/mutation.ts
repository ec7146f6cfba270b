// Mutations (RFC 7047 section 5.1, <mutation>): [column, mutator, value]. Arithmetic applies
// to integer and real columns (to every element of a set); insert and delete to sets and maps.
// The result is checked against the column's constraints and size limits.
import type { Atom } from './atom.js';
import { compareAtoms, lowerBound } from './atom.js';
import type { Datum, NamedUuidResolver } from './datum.js';
import { checkAtomConstraints, datumFromJson, recordSetEdit, withEdits } from './datum.js';
import { OvsdbError, OvsdbErrorName, constraintViolation, syntaxError, quote } from './errors.js';
import type { BaseType, ColumnSchema, ColumnType, TableSchema } from './schema.js';
import { findColumn } from './schema.js';

export const mutators = ['+=', '-=', '*=', '/=', '%=', 'insert', 'delete'] as const;
export type Mutator = (typeof mutators)[number];

export interface Mutation {
  readonly column: ColumnSchema;
  readonly mutator: Mutator;
  readonly arg: Datum;
}

function unconstrained(base: BaseType): BaseType {
  return base.refTable === undefined ? { type: base.type } : { type: base.type, refTable: base.refTable, ...(base.refType ? { refType: base.refType } : {}) };
}

export function parseMutations(table: TableSchema, json: unknown, resolve?: NamedUuidResolver): Mutation[] {
  if (!Array.isArray(json)) throw syntaxError('"mutations" must be an array');
  return json.map((m: unknown) => parseMutation(table, m, resolve));
}

function parseMutation(table: TableSchema, json: unknown, resolve?: NamedUuidResolver): Mutation {
  if (!Array.isArray(json) || json.length !== 3 || typeof json[0] !== 'string' || typeof json[1] !== 'string') {
    throw syntaxError(`mutation must be [column, mutator, value], got ${quote(json)}`);
  }
  const [name, mutatorName, valueJson] = json as [string, string, unknown];
  const column = findColumn(table, name);
  if (column === undefined) throw new OvsdbError(OvsdbErrorName.unknownColumn, `No column ${name} in table ${table.name}.`);
  if (!column.mutable || name === '_uuid' || name === '_version') {
    throw constraintViolation(`Cannot mutate immutable column ${name} in table ${table.name}.`);
  }
  if (!(mutators as readonly string[]).includes(mutatorName)) throw new OvsdbError(OvsdbErrorName.unknownMutator, `No mutator named ${mutatorName}.`);
  const mutator = mutatorName as Mutator;
  const type = column.type;
  let argType: ColumnType;
  switch (mutator) {
    case '+=':
    case '-=':
    case '*=':
    case '/=':
    case '%=': {
      const numeric = type.key.type === 'integer' || (type.key.type === 'real' && mutator !== '%=');
      if (!numeric || type.value !== undefined) {
        throw syntaxError(`Type mismatch: "${mutator}" may not be applied to column ${name} of type ${type.key.type}${type.value ? ' map' : ''}`);
      }
      argType = { key: unconstrained(type.key), min: 1, max: 1, kind: 'scalar' };
      break;
    }
    case 'insert':
    case 'delete': {
      if (type.kind === 'scalar') {
        throw syntaxError(`Type mismatch: "${mutator}" may not be applied to column ${name} of scalar type`);
      }
      if (mutator === 'delete' && type.value !== undefined) {
        // A map's elements are deleted by [key, value] pairs or by a set of keys: try the
        // pairs first and, as ovsdb-server does, report the key-set reading's error if both fail.
        try {
          return { column, mutator, arg: datumFromJson({ ...type, min: 0, max: Infinity }, valueJson, resolve) };
        } catch (err) {
          if (!(err instanceof OvsdbError)) throw err;
          argType = { key: type.key, min: 0, max: Infinity, kind: 'set' };
        }
      } else {
        // What is inserted must itself fit the column; what is deleted may be any size.
        argType = mutator === 'insert' ? { ...type, min: 0 } : { ...type, min: 0, max: Infinity };
      }
      break;
    }
  }
  return { column, mutator, arg: datumFromJson(argType, valueJson, resolve) };
}

const int64Max = Number.MAX_SAFE_INTEGER;

function arithmetic(mutator: Mutator, base: BaseType, x: number, y: number): number {
  let r: number;
  switch (mutator) {
    case '+=':
      r = x + y;
      break;
    case '-=':
      r = x - y;
      break;
    case '*=':
      r = x * y;
      break;
    case '/=':
      if (y === 0) throw new OvsdbError(OvsdbErrorName.domainError, 'Division by zero.');
      r = base.type === 'integer' ? Math.trunc(x / y) : x / y;
      break;
    case '%=':
      if (y === 0) throw new OvsdbError(OvsdbErrorName.domainError, 'Division by zero.');
      r = x % y;
      break;
    default:
      throw new Error(`not an arithmetic mutator: ${mutator}`);
  }
  if (base.type === 'integer' && (r > int64Max || r < -int64Max)) {
    throw new OvsdbError(OvsdbErrorName.rangeError, `Result of "${mutator}" operation is out of range.`);
  }
  if (base.type === 'real' && !Number.isFinite(r)) {
    throw new OvsdbError(OvsdbErrorName.rangeError, `Result of "${mutator}" operation is out of range.`);
  }
  return r === 0 ? 0 : r; // no negative zero in a database
}

function checkSize(column: ColumnSchema, n: number): void {
  const { min, max } = column.type;
  if (n < min || n > max) {
    throw constraintViolation(
      `Attempted to store ${n} elements in ${column.name}, which requires between ${min} and ${max === Infinity ? 'unlimited' : max}.`,
    );
  }
}

/** Applies one mutation to a column's datum and returns the new datum. */
export function applyMutation(m: Mutation, d: Datum): Datum {
  const type = m.column.type;
  switch (m.mutator) {
    case 'insert':
    case 'delete':
      break;
    default: {
      const y = m.arg.keys[0] as number;
      const keys = d.keys.map((x) => arithmetic(m.mutator, type.key, x as number, y));
      for (const k of keys) checkAtomConstraints(type.key, k);
      const sorted = [...keys].sort(compareAtoms);
      for (let i = 1; i < sorted.length; i++) {
        if (compareAtoms(sorted[i - 1] as Atom, sorted[i] as Atom) === 0) throw constraintViolation(`Result of "${m.mutator}" operation contains duplicates.`);
      }
      if (type.value === undefined) return { keys: sorted };
      return { keys: sorted, ...(d.values ? { values: d.values } : {}) };
    }
  }
  const out = m.mutator === 'insert' ? insertInto(d, m.arg, type.value !== undefined) : deleteFrom(d, m.arg);
  checkSize(m.column, out.keys.length);
  return out;
}

/**
 * Up to this many keys, an insert or delete finds each key by binary search and copies the
 * datum once around them: adding a port to a switch of thousands moves memory natively, where
 * the merge below compares every key.
 */
const SPLICE_KEYS_MAX = 8;

function insertInto(d: Datum, arg: Datum, isMap: boolean): Datum {
  if (arg.keys.length <= SPLICE_KEYS_MAX) {
    // arg is a datum: its keys are sorted and distinct, so the positions come out ascending.
    const keyEdits: [number, Atom][] = [];
    const valueEdits: [number, Atom][] = [];
    for (let j = 0; j < arg.keys.length; j++) {
      const k = arg.keys[j] as Atom;
      const i = lowerBound(d.keys, k);
      // An existing key keeps its value: "insert" never replaces a map value.
      if (i < d.keys.length && compareAtoms(d.keys[i] as Atom, k) === 0) continue;
      keyEdits.push([i, k]);
      if (isMap) valueEdits.push([i, (arg.values ?? [])[j] as Atom]);
    }
    if (keyEdits.length === 0) return d;
    const keys = withEdits(d.keys, keyEdits);
    if (isMap) return { keys, values: withEdits(d.values ?? [], valueEdits) };
    recordSetEdit(keys, d.keys, keyEdits.map((e) => e[1]), []);
    return { keys };
  }
  const keys: Atom[] = [];
  const values: Atom[] = [];
  let i = 0;
  let j = 0;
  const dv = d.values ?? [];
  const av = arg.values ?? [];
  while (i < d.keys.length || j < arg.keys.length) {
    const c = i >= d.keys.length ? 1 : j >= arg.keys.length ? -1 : compareAtoms(d.keys[i] as Atom, arg.keys[j] as Atom);
    if (c <= 0) {
      // An existing key keeps its value: "insert" never replaces a map value.
      keys.push(d.keys[i] as Atom);
      if (isMap) values.push(dv[i] as Atom);
      i++;
      if (c === 0) j++;
    } else {
      keys.push(arg.keys[j] as Atom);
      if (isMap) values.push(av[j] as Atom);
      j++;
    }
  }
  if (keys.length === d.keys.length) return d;
  return isMap ? { keys, values } : { keys };
}

function deleteFrom(d: Datum, arg: Datum): Datum {
  if (arg.keys.length <= SPLICE_KEYS_MAX) {
    const at: [number, undefined][] = [];
    const removed: Atom[] = [];
    for (let j = 0; j < arg.keys.length; j++) {
      const i = lowerBound(d.keys, arg.keys[j] as Atom);
      if (i >= d.keys.length || compareAtoms(d.keys[i] as Atom, arg.keys[j] as Atom) !== 0) continue;
      // Deleting by [key, value] pairs removes a pair only when the value matches too.
      if (arg.values !== undefined && d.values !== undefined && compareAtoms(arg.values[j] as Atom, d.values[i] as Atom) !== 0) continue;
      at.push([i, undefined]);
      removed.push(d.keys[i] as Atom);
    }
    if (at.length === 0) return d;
    const keys = withEdits(d.keys, at);
    if (d.values !== undefined) return { keys, values: withEdits(d.values, at) };
    recordSetEdit(keys, d.keys, [], removed);
    return { keys };
  }
  const keys: Atom[] = [];
  const values: Atom[] = [];
  const dv = d.values;
  let j = 0;
  for (let i = 0; i < d.keys.length; i++) {
    const k = d.keys[i] as Atom;
    while (j < arg.keys.length && compareAtoms(arg.keys[j] as Atom, k) < 0) j++;
    let remove = j < arg.keys.length && compareAtoms(arg.keys[j] as Atom, k) === 0;
    // Deleting by [key, value] pairs removes a pair only when the value matches too.
    if (remove && arg.values !== undefined && dv !== undefined) remove = compareAtoms(arg.values[j] as Atom, dv[i] as Atom) === 0;
    if (!remove) {
      keys.push(k);
      if (dv !== undefined) values.push(dv[i] as Atom);
    }
  }
  if (keys.length === d.keys.length) return d;
  return dv !== undefined ? { keys, values } : { keys };
}
