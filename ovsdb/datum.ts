// Datums: the value of one column of one row (RFC 7047 <value>), in three forms —
//  - the wire form, RFC 7047 JSON: 5, "x", ["uuid", u], ["set", [...]], ["map", [[k, v], ...]];
//  - the in-memory Value, compact and typed by the column's kind (see ColumnKind in schema.ts):
//    a bare atom for a scalar, a sorted duplicate-free array for a set, a ReadonlyMap whose
//    keys are inserted in sorted order for a map;
//  - the generic Datum (sorted keys, with values for maps), which mutations and conditions use.
// Values are immutable once made: shared empty constants and row objects are never mutated.
import type { Atom, Uuid } from './atom.js';
import { compareAtoms, isUuid, spellsUuid, zeroUuid } from './atom.js';
import { OvsdbError, OvsdbErrorName, constraintViolation, syntaxError, quote } from './errors.js';
import type { BaseType, ColumnType } from './schema.js';

export type Value = Atom | readonly Atom[] | ReadonlyMap<Atom, Atom>;

/** A row as the engine holds it: column name → Value, plus the two implicit columns. */
export interface Row {
  readonly _uuid: Uuid;
  readonly _version: Uuid;
  readonly [column: string]: Value;
}

/** Generic datum: keys sorted and unique; for maps, values[i] belongs to keys[i]. */
export interface Datum {
  readonly keys: readonly Atom[];
  readonly values?: readonly Atom[];
}

export const emptySet: readonly Atom[] = Object.freeze([]);
export const emptyMap: ReadonlyMap<Atom, Atom> = new Map();

/**
 * An immutable map value of one or two entries, keys in sorted order (as every map value is
 * built). A Map costs about 190 bytes for its hash table whatever it holds; a value made tens
 * of thousands of times (a logical flow's external_ids, stage-hint and stage-name, or its
 * tags, in_out_port) costs a quarter of that as four fields. It is not a Map: code that tells
 * map values from other values asks `isMapValue`.
 */
export class SmallMap<K, V> implements ReadonlyMap<K, V> {
  /** `k1` undefined: the map holds `k0` only. */
  constructor(
    private readonly k0: K,
    private readonly v0: V,
    private readonly k1?: K,
    private readonly v1?: V,
  ) {}

  get size(): number {
    return this.k1 === undefined ? 1 : 2;
  }

  get(key: K): V | undefined {
    return key === this.k0 ? this.v0 : key === this.k1 && key !== undefined ? this.v1 : undefined;
  }

  has(key: K): boolean {
    return key === this.k0 || (key === this.k1 && key !== undefined);
  }

  forEach(f: (value: V, key: K, map: ReadonlyMap<K, V>) => void, self?: unknown): void {
    for (const [k, v] of this.pairs()) f.call(self, v, k, this);
  }

  // An array's iterator is what a Map's is for these purposes (it is not one by type).
  entries(): MapIterator<[K, V]> {
    return this.pairs()[Symbol.iterator]() as unknown as MapIterator<[K, V]>;
  }

  keys(): MapIterator<K> {
    return this.pairs().map(([k]) => k)[Symbol.iterator]() as unknown as MapIterator<K>;
  }

  values(): MapIterator<V> {
    return this.pairs().map(([, v]) => v)[Symbol.iterator]() as unknown as MapIterator<V>;
  }

  [Symbol.iterator](): MapIterator<[K, V]> {
    return this.entries();
  }

  private pairs(): [K, V][] {
    return this.k1 === undefined ? [[this.k0, this.v0]] : [[this.k0, this.v0], [this.k1, this.v1 as V]];
  }
}

/** Whether `v` is a map value (a Map or a SmallMap), as opposed to an atom, a set or a row. */
export function isMapValue(v: unknown): v is ReadonlyMap<unknown, unknown> {
  return v instanceof Map || v instanceof SmallMap;
}

/** Resolves ["named-uuid", name] to a row UUID within one transaction. */
export type NamedUuidResolver = (name: string) => Uuid;

export function defaultAtom(base: BaseType): Atom {
  switch (base.type) {
    case 'integer':
    case 'real':
      return 0;
    case 'boolean':
      return false;
    case 'string':
      return '';
    case 'uuid':
      return zeroUuid;
  }
}

/**
 * A column's default: its type's minimum number of default atoms. A scalar is one atom; a set
 * or map with min 1 holds one default element (as ovsdb-server has it), otherwise it is empty.
 */
export function defaultValue(type: ColumnType): Value {
  if (type.kind === 'scalar') return defaultAtom(type.key);
  if (type.min === 0) return type.kind === 'map' ? emptyMap : emptySet;
  if (type.kind === 'set') return Object.freeze([defaultAtom(type.key)]);
  return new Map([[defaultAtom(type.key), defaultAtom(type.value as BaseType)]]);
}

/** Checks an atom against its base type's constraints (enum, ranges, lengths). */
export function checkAtomConstraints(base: BaseType, atom: Atom): void {
  if (base.enum !== undefined) {
    if (!base.enum.some((e) => compareAtoms(e, atom) === 0)) {
      throw constraintViolation(`${quote(atom)} is not one of the allowed values (${base.enum.map((e) => JSON.stringify(e)).join(', ')})`);
    }
    return;
  }
  switch (base.type) {
    case 'integer': {
      const n = atom as number;
      if ((base.minInteger !== undefined && n < base.minInteger) || (base.maxInteger !== undefined && n > base.maxInteger)) {
        throw constraintViolation(`${n} is not in the valid range ${base.minInteger ?? '-inf'} to ${base.maxInteger ?? '+inf'} (inclusive)`);
      }
      return;
    }
    case 'real': {
      const n = atom as number;
      if ((base.minReal !== undefined && n < base.minReal) || (base.maxReal !== undefined && n > base.maxReal)) {
        throw constraintViolation(`${n} is not in the valid range ${base.minReal ?? '-inf'} to ${base.maxReal ?? '+inf'} (inclusive)`);
      }
      return;
    }
    case 'string': {
      const s = atom as string;
      if (base.minLength === undefined && base.maxLength === undefined) return;
      // OVSDB measures string length in Unicode code points.
      let n = 0;
      for (const _ of s) n++;
      if ((base.minLength !== undefined && n < base.minLength) || (base.maxLength !== undefined && n > base.maxLength)) {
        throw constraintViolation(`"${s}" length ${n} is not in the valid range ${base.minLength ?? 0} to ${base.maxLength ?? 'unlimited'} (inclusive)`);
      }
      return;
    }
    default:
      return;
  }
}

/** Parses one JSON atom of the given base type and checks its constraints. */
export function atomFromJson(base: BaseType, json: unknown, resolve?: NamedUuidResolver): Atom {
  let atom: Atom;
  switch (base.type) {
    case 'integer':
      if (typeof json !== 'number' || !Number.isInteger(json)) throw syntaxError(`expected integer, got ${quote(json)}`);
      if (!Number.isSafeInteger(json)) throw new OvsdbError(OvsdbErrorName.rangeError, `integer ${json} is outside the exact range of this server (±2^53)`);
      atom = json;
      break;
    case 'real':
      if (typeof json !== 'number') throw syntaxError(`expected real, got ${quote(json)}`);
      atom = json;
      break;
    case 'boolean':
      if (typeof json !== 'boolean') throw syntaxError(`expected boolean, got ${quote(json)}`);
      atom = json;
      break;
    case 'string':
      if (typeof json !== 'string') throw syntaxError(`expected string, got ${quote(json)}`);
      atom = json;
      break;
    case 'uuid':
      atom = uuidFromJson(json, resolve);
      break;
  }
  checkAtomConstraints(base, atom);
  return atom;
}

export function uuidFromJson(json: unknown, resolve?: NamedUuidResolver): Uuid {
  if (Array.isArray(json) && json.length === 2 && typeof json[1] === 'string') {
    if (json[0] === 'uuid') {
      if (spellsUuid(json[1])) return json[1];
      const s = json[1].toLowerCase();
      if (!isUuid(s)) throw syntaxError(`"${json[1]}" is not a valid UUID`);
      return s;
    }
    if (json[0] === 'named-uuid') {
      if (resolve === undefined) throw syntaxError(`named-uuid "${json[1]}" is not allowed here`);
      return resolve(json[1]);
    }
  }
  throw syntaxError(`expected ["uuid", <id>] or ["named-uuid", <name>], got ${quote(json)}`);
}

export function atomToJson(base: BaseType, atom: Atom): unknown {
  return base.type === 'uuid' ? ['uuid', atom] : atom;
}

function isTagged(json: unknown, tag: string): json is [string, unknown[]] {
  return Array.isArray(json) && json.length === 2 && json[0] === tag && Array.isArray(json[1]);
}

function checkCount(type: ColumnType, n: number): void {
  if (n < type.min || n > type.max) {
    const max = type.max === Infinity ? 'unlimited' : String(type.max);
    throw syntaxError(`${n} values when type requires between ${type.min} and ${max}`);
  }
}

/**
 * Parses a JSON datum for a column type (RFC 7047 <value>), checking every atom's constraints,
 * duplicates and the number of elements. Throws OvsdbError with the RFC's error names.
 */
export function datumFromJson(type: ColumnType, json: unknown, resolve?: NamedUuidResolver): Datum {
  if (type.value !== undefined) {
    if (!isTagged(json, 'map')) throw syntaxError(`expected ["map", [...]], got ${quote(json)}`);
    const pairs: [Atom, Atom][] = [];
    let ascending = true;
    for (const p of json[1]) {
      if (!Array.isArray(p) || p.length !== 2) throw syntaxError(`map element must be a [key, value] pair, got ${quote(p)}`);
      const pair: [Atom, Atom] = [atomFromJson(type.key, p[0], resolve), atomFromJson(type.value, p[1], resolve)];
      if (ascending && pairs.length > 0 && compareAtoms((pairs[pairs.length - 1] as [Atom, Atom])[0], pair[0]) >= 0) ascending = false;
      pairs.push(pair);
    }
    if (!ascending) {
      pairs.sort((a, b) => compareAtoms(a[0], b[0]));
      for (let i = 1; i < pairs.length; i++) {
        if (compareAtoms((pairs[i - 1] as [Atom, Atom])[0], (pairs[i] as [Atom, Atom])[0]) === 0) {
          throw new OvsdbError(OvsdbErrorName.ovsdbError, `map contains duplicate key ${quote((pairs[i] as [Atom, Atom])[0])}`);
        }
      }
    }
    checkCount(type, pairs.length);
    return { keys: pairs.map((p) => p[0]), values: pairs.map((p) => p[1]) };
  }
  const elements: unknown[] = isTagged(json, 'set') ? json[1] : [json];
  // Clients send sets in the order the database keeps them (an IDL writes back what it read),
  // so the atoms usually arrive strictly ascending: sorted and free of duplicates already.
  const keys: Atom[] = [];
  let ascending = true;
  for (const e of elements) {
    const atom = atomFromJson(type.key, e, resolve);
    if (ascending && keys.length > 0 && compareAtoms(keys[keys.length - 1] as Atom, atom) >= 0) ascending = false;
    keys.push(atom);
  }
  if (!ascending) {
    keys.sort(compareAtoms);
    for (let i = 1; i < keys.length; i++) {
      if (compareAtoms(keys[i - 1] as Atom, keys[i] as Atom) === 0) {
        throw new OvsdbError(OvsdbErrorName.ovsdbError, `set contains duplicate value ${quote(keys[i])}`);
      }
    }
  }
  checkCount(type, keys.length);
  return { keys };
}

export function datumToJson(type: ColumnType, d: Datum): unknown {
  if (type.value !== undefined) {
    const valueType = type.value;
    return ['map', d.keys.map((k, i) => [atomToJson(type.key, k), atomToJson(valueType, (d.values as readonly Atom[])[i] as Atom)])];
  }
  if (d.keys.length === 1) return atomToJson(type.key, d.keys[0] as Atom);
  return ['set', d.keys.map((k) => atomToJson(type.key, k))];
}

/** Converts the in-memory Value of a column into the generic Datum form. */
export function toDatum(type: ColumnType, value: Value): Datum {
  switch (type.kind) {
    case 'scalar':
      return { keys: [value as Atom] };
    case 'set':
      return { keys: value as readonly Atom[] };
    case 'map': {
      const m = value as ReadonlyMap<Atom, Atom>;
      return { keys: [...m.keys()], values: [...m.values()] };
    }
  }
}

/** Converts a generic Datum (already sorted and counted) into the in-memory Value. */
export function fromDatum(type: ColumnType, d: Datum): Value {
  switch (type.kind) {
    case 'scalar':
      return d.keys[0] as Atom;
    case 'set':
      return d.keys.length === 0 ? emptySet : d.keys;
    case 'map': {
      if (d.keys.length === 0) return emptyMap;
      const values = d.values as readonly Atom[];
      return new Map(d.keys.map((k, i) => [k, values[i] as Atom]));
    }
  }
}

export function valueToJson(type: ColumnType, value: Value): unknown {
  return datumToJson(type, toDatum(type, value));
}

export function valueFromJson(type: ColumnType, json: unknown, resolve?: NamedUuidResolver): Value {
  // A scalar given bare (not as a one-element set) is its one atom: datumFromJson's element
  // list and datum are not made for it (a row's name, say, in every insert).
  if (type.kind === 'scalar' && !isTagged(json, 'set')) return atomFromJson(type.key, json, resolve);
  return fromDatum(type, datumFromJson(type, json, resolve));
}

// Atoms of one type are equal exactly when they are === (JSON has no NaN, and -0 === 0 as
// compareAtoms has it): one pass over two equal strings, where compareAtoms takes two.
export function datumsEqual(a: Datum, b: Datum): boolean {
  if (a.keys.length !== b.keys.length) return false;
  for (let i = 0; i < a.keys.length; i++) {
    if (a.keys[i] !== b.keys[i]) return false;
  }
  if (a.values === undefined || b.values === undefined) return a.values === b.values;
  for (let i = 0; i < a.values.length; i++) {
    if (a.values[i] !== b.values[i]) return false;
  }
  return true;
}

export function valuesEqual(type: ColumnType, a: Value, b: Value): boolean {
  if (a === b) return true;
  switch (type.kind) {
    case 'scalar':
      return a === b;
    case 'set': {
      const x = a as readonly Atom[];
      const y = b as readonly Atom[];
      if (x.length !== y.length) return false;
      for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return false;
      return true;
    }
    case 'map': {
      const x = a as ReadonlyMap<Atom, Atom>;
      const y = b as ReadonlyMap<Atom, Atom>;
      if (x.size !== y.size) return false;
      for (const [k, v] of x) {
        const w = y.get(k);
        if (w === undefined || v !== w) return false;
      }
      return true;
    }
  }
}

/**
 * What a small insert or delete mutation did to a set column's value (ovsdb/mutation.ts): the
 * value it started from and the atoms it added and removed, each list sorted. Keyed by the
 * value it made; values are never changed in place. A value keeps only its own edit: recording
 * one forgets its base's, so no value holds more than its one predecessor alive.
 */
interface SetEdit {
  readonly base: readonly Atom[];
  readonly added: readonly Atom[];
  readonly removed: readonly Atom[];
}

const setEdits = new WeakMap<readonly Atom[], SetEdit>();

const noEdit: SetEdit = Object.freeze({ base: emptySet, added: emptySet, removed: emptySet });

/** Records that `result` is `base` with `added` added and `removed` removed (each sorted, really changed). */
export function recordSetEdit(result: readonly Atom[], base: readonly Atom[], added: readonly Atom[], removed: readonly Atom[]): void {
  setEdits.delete(base);
  setEdits.set(result, { base, added, removed });
}

/**
 * The atoms only in `next` and only in `prev`, both sorted, when `next` was made from `prev`
 * by one recorded mutation; undefined when that is not known, and the caller compares the two
 * itself. Adding a port to a switch of thousands is then one atom, not a walk of both sets.
 */
export function setEditBetween(prev: readonly Atom[], next: readonly Atom[]): { readonly added: readonly Atom[]; readonly removed: readonly Atom[] } | undefined {
  if (prev === next) return noEdit;
  const e = setEdits.get(next);
  return e !== undefined && e.base === prev ? e : undefined;
}

/**
 * `base` with `edits` applied, as one new array of the final length. Each edit is a position in
 * `base` (ascending; at one position, insertions before the removal) and either an element to
 * insert before it or `undefined` to drop the element there (elements are never undefined).
 * Copying and then splicing in place allocated twice, the second time with room to grow by half:
 * a set of 11,000 UUIDs then no longer fit a regular V8 heap object (128 KiB), and every such
 * edit paid for a large-object allocation, about ten times a copy's cost.
 */
export function withEdits<T>(base: readonly T[], edits: readonly (readonly [number, T | undefined])[]): T[] {
  if (edits.length === 1) {
    const [at, atom] = edits[0] as readonly [number, T | undefined];
    return atom === undefined ? base.toSpliced(at, 1) : base.toSpliced(at, 0, atom);
  }
  const parts: (readonly T[])[] = [];
  let from = 0;
  for (const [at, atom] of edits) {
    parts.push(base.slice(from, at));
    if (atom === undefined) from = at + 1;
    else {
      parts.push([atom]);
      from = at;
    }
  }
  parts.push(base.slice(from));
  return ([] as T[]).concat(...parts);
}

/**
 * How far two sorted, duplicate-free arrays agree at their ends, by `===`: [start, aEnd, bEnd]
 * such that a[0, start) and b[0, start) are the same elements, and so are a[aEnd, a.length) and
 * b[bEnd, b.length). What lies between is all that a merge of the two has to compare.
 */
export function sameEnds<T>(a: readonly T[], b: readonly T[]): [number, number, number] {
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let aEnd = a.length;
  let bEnd = b.length;
  while (aEnd > start && bEnd > start && a[aEnd - 1] === b[bEnd - 1]) {
    aEnd--;
    bEnd--;
  }
  return [start, aEnd, bEnd];
}

/**
 * The references a column gains and loses when its value goes from `prev` to `next`: each
 * reference `next` has and `prev` lacks is visited with +1, each one `prev` has and `next` lacks
 * with -1, and a reference both have is not visited. A switch of three thousand ports that
 * gains one is then one visit, not six thousand. Sets are sorted, so they are merged; a map's
 * entries are compared by key.
 */
export function forEachRefChange(type: ColumnType, prev: Value, next: Value, visit: (target: Uuid, base: BaseType, sign: 1 | -1) => void): void {
  const keyRef = type.key.refTable !== undefined;
  const valueRef = type.value?.refTable !== undefined;
  if ((!keyRef && !valueRef) || prev === next) return;
  switch (type.kind) {
    case 'scalar':
      if (compareAtoms(prev as Atom, next as Atom) === 0) return;
      visit(prev as Uuid, type.key, -1);
      visit(next as Uuid, type.key, 1);
      return;
    case 'set': {
      const a = prev as readonly Atom[];
      const b = next as readonly Atom[];
      const edit = setEditBetween(a, b);
      if (edit !== undefined) {
        // One insert or delete: only additions or only removals, each sorted, so these are the
        // walk's visits in the walk's order.
        for (const x of edit.removed) visit(x as Uuid, type.key, -1);
        for (const x of edit.added) visit(x as Uuid, type.key, 1);
        return;
      }
      // The same atoms at both ends (a member added to or dropped from a set of thousands)
      // are passed over without comparing them as atoms.
      const [start, aEnd, bEnd] = sameEnds(a, b);
      let i = start;
      let j = start;
      while (i < aEnd && j < bEnd) {
        const c = compareAtoms(a[i] as Atom, b[j] as Atom);
        if (c < 0) visit(a[i++] as Uuid, type.key, -1);
        else if (c > 0) visit(b[j++] as Uuid, type.key, 1);
        else {
          i++;
          j++;
        }
      }
      while (i < aEnd) visit(a[i++] as Uuid, type.key, -1);
      while (j < bEnd) visit(b[j++] as Uuid, type.key, 1);
      return;
    }
    case 'map': {
      const a = prev as ReadonlyMap<Atom, Atom>;
      const b = next as ReadonlyMap<Atom, Atom>;
      const pair = (m: ReadonlyMap<Atom, Atom>, other: ReadonlyMap<Atom, Atom>, sign: 1 | -1): void => {
        for (const [k, v] of m) {
          const w = other.get(k);
          if (w !== undefined && compareAtoms(v, w) === 0) continue;
          if (keyRef) visit(k as Uuid, type.key, sign);
          if (valueRef) visit(v as Uuid, type.value as BaseType, sign);
        }
      };
      pair(a, b, -1);
      pair(b, a, 1);
      return;
    }
  }
}

/** Every uuid atom of a value that refers to rows of `refTable` through `base`. */
export function forEachRef(type: ColumnType, value: Value, visit: (target: Uuid, base: BaseType) => void): void {
  const keyRef = type.key.refTable !== undefined;
  const valueRef = type.value?.refTable !== undefined;
  if (!keyRef && !valueRef) return;
  switch (type.kind) {
    case 'scalar':
      visit(value as Uuid, type.key);
      return;
    case 'set': {
      // Indexed, and forEach below: no iterator or [key, value] pair per element (every
      // inserted row's every reference column comes through here).
      const atoms = value as readonly Atom[];
      for (let i = 0; i < atoms.length; i++) visit(atoms[i] as Uuid, type.key);
      return;
    }
    case 'map':
      (value as ReadonlyMap<Atom, Atom>).forEach((v, k) => {
        if (keyRef) visit(k as Uuid, type.key);
        if (valueRef) visit(v as Uuid, type.value as BaseType);
      });
      return;
  }
}

/** Whether a column's value holds no atom: an empty set or map (a scalar always holds one). */
export function valueIsEmpty(type: ColumnType, value: Value): boolean {
  switch (type.kind) {
    case 'scalar':
      return false;
    case 'set':
      return (value as readonly Atom[]).length === 0;
    case 'map':
      return (value as ReadonlyMap<Atom, Atom>).size === 0;
  }
}

/**
 * The elements only in `before` and only in `after`, two sorted, duplicate-free arrays (an
 * OVSDB set column's value, of any atom type): one merge walk, no hashing. The same array twice
 * costs nothing.
 */
export function sortedDifference<T extends Atom>(before: readonly T[], after: readonly T[]): { readonly removed: T[]; readonly added: T[] } {
  const removed: T[] = [];
  const added: T[] = [];
  if (before === after) return { removed, added };
  // Made from `before` by a few small mutations: what they did, without a walk.
  const edit = setEditBetween(before, after);
  if (edit !== undefined) return { removed: [...edit.removed] as T[], added: [...edit.added] as T[] };
  // The elements both share at their start and end (one port added to a group of thousands)
  // are passed over, one equality check each, before the walk.
  const [start, beforeEnd, afterEnd] = sameEnds(before, after);
  let i = start;
  let j = start;
  while (i < beforeEnd || j < afterEnd) {
    const a = i < beforeEnd ? before[i] : undefined;
    const b = j < afterEnd ? after[j] : undefined;
    // One set holds atoms of one type, and `<` orders numbers, booleans and strings as
    // compareAtoms does; the casts only tell the compiler so.
    if (b === undefined || (a !== undefined && (a as string) < (b as string))) {
      removed.push(a as T);
      i++;
    } else if (a === undefined || (b as string) < (a as string)) {
      added.push(b);
      j++;
    } else {
      i++;
      j++;
    }
  }
  return { removed, added };
}
