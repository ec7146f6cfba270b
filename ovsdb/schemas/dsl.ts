// A small DSL for writing OVSDB schemas as TypeScript, and its output: the schema JSON of
// RFC 7047 section 3.2. A schema reads as tables of columns, each column one expression:
//
//   Meter_Band: table('One band of a meter.', {}, {
//     action: str({ enum: ['drop'] }),                  // exactly one atom
//     rate: int({ min: 1, max: 4294967295 }),
//     burst_size: int({ min: 0, max: 4294967295 }),
//     external_ids: smap(),                             // string -> string map
//   }),
//
// Atoms: str, int, real, bool, uuid, ref. Shapes: a bare atom is exactly one value;
// optional(a) is zero or one; set(a) is zero or more; map(k, v) is a key/value map; smap() is
// the string-to-string map that OVN uses for external_ids, options and other_config. Flags:
// ephemeral(c) and immutable(c). The DSL asserts every RFC 7047 rule it can check up front
// (names, bounds, reference targets, index columns), so a typo fails at import, not at
// `ovsdb-tool create`.
//
// About "cksum": OVS schema files carry a "cksum" member, the POSIX cksum of the file's own
// text. RFC 7047 does not define it, but OVS tools count it as part of a schema:
// `ovsdb-client needs-conversion` says "yes" for two schemas that differ only in it, and the
// upgrade scripts of OVN deployments then try to convert the database. So a schema that states
// the facts of an upstream OVN schema file carries that file's cksum (`upstreamCksum`), and
// tests/ovsdb/schemas.test.ts checks both the facts and the cksum against the installed file.
import assert from 'node:assert/strict';

// ---------------------------------------------------------------------------------------------
// The output: RFC 7047 schema JSON, in its shortest spelling (defaults left out, as
// ovsdb-server itself prints a schema).

export type AtomicType = 'integer' | 'real' | 'boolean' | 'string' | 'uuid';

/** An atom as it may appear in an enum (uuid atoms never do in the schemas we write). */
export type EnumAtomJson = number | boolean | string;

/** RFC 7047 <base-type> in object form; a bare AtomicType stands for `{ type }`. */
export interface BaseTypeJson {
  readonly type: AtomicType;
  /** Always emitted as an OVSDB set: `['set', [...]]`, members sorted. */
  readonly enum?: readonly ['set', readonly EnumAtomJson[]];
  readonly minInteger?: number;
  readonly maxInteger?: number;
  readonly minReal?: number;
  readonly maxReal?: number;
  readonly minLength?: number;
  readonly maxLength?: number;
  readonly refTable?: string;
  /** Emitted only when 'weak'; RFC 7047's default is 'strong'. */
  readonly refType?: 'strong' | 'weak';
}

export interface TypeObjectJson {
  readonly key: AtomicType | BaseTypeJson;
  readonly value?: AtomicType | BaseTypeJson;
  /** Absent means 1. */
  readonly min?: 0 | 1;
  /** Absent means 1. */
  readonly max?: number | 'unlimited';
}

export type TypeJson = AtomicType | TypeObjectJson;

export interface ColumnSchemaJson {
  readonly type: TypeJson;
  /** Emitted only when true. */
  readonly ephemeral?: boolean;
  /** Emitted only when false. */
  readonly mutable?: boolean;
}

export interface TableSchemaJson {
  readonly columns: Readonly<Record<string, ColumnSchemaJson>>;
  readonly maxRows?: number;
  /** Emitted only when true. */
  readonly isRoot?: boolean;
  readonly indexes?: readonly (readonly string[])[];
}

export interface SchemaJson {
  readonly name: string;
  readonly version: string;
  readonly cksum?: string;
  readonly tables: Readonly<Record<string, TableSchemaJson>>;
}

// ---------------------------------------------------------------------------------------------
// The DSL's values. They are plain data; toSchemaJson() turns a Schema into SchemaJson.

/** One atomic type with its constraints: the key or value of a column. */
export interface Atom {
  readonly kind: 'atom';
  readonly json: BaseTypeJson;
}

export interface Column {
  readonly kind: 'column';
  readonly key: Atom;
  readonly value: Atom | undefined;
  readonly min: 0 | 1;
  readonly max: number | 'unlimited';
  readonly mutable: boolean;
  readonly ephemeral: boolean;
}

export interface Table {
  /** One line for readers (and for the generated row interfaces); not part of the JSON. */
  readonly description: string;
  readonly isRoot: boolean;
  readonly maxRows: number | undefined;
  readonly indexes: readonly (readonly string[])[];
  readonly columns: Readonly<Record<string, Column>>;
}

export interface Schema {
  readonly name: string;
  readonly version: string;
  /** The "cksum" of the upstream schema file whose facts this states (see the top of this file). */
  readonly upstreamCksum?: string;
  readonly tables: Readonly<Record<string, Table>>;
}

const INTEGER_MIN = -(2n ** 63n);
const INTEGER_MAX = 2n ** 63n - 1n;
const NAME_RE = /^[A-Za-z][A-Za-z0-9_]*$/;

function atom(json: BaseTypeJson): Atom {
  return { kind: 'atom', json };
}

function checkEnum<T extends EnumAtomJson>(values: readonly T[]): readonly ['set', readonly T[]] {
  assert(values.length > 0, 'an enum needs at least one member');
  assert(new Set(values).size === values.length, `enum has duplicate members: ${values.join(', ')}`);
  const sorted = [...values].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return ['set', sorted];
}

function checkIntegerBound(n: number, what: string): void {
  assert(Number.isSafeInteger(n), `${what} ${n} must be an integer JavaScript represents exactly`);
  assert(BigInt(n) >= INTEGER_MIN && BigInt(n) <= INTEGER_MAX, `${what} ${n} is not a 64-bit integer`);
}

// ---------------------------------------------------------------------------------------------
// Atoms.

export interface StringConstraints {
  readonly enum?: readonly string[];
  readonly minLength?: number;
  readonly maxLength?: number;
}

/**
 * A string; optionally one of `enum`, or with a length range. Lengths count Unicode code
 * points, as ovsdb-server does (not bytes, not UTF-16 units).
 */
export function str(c: StringConstraints = {}): Atom {
  const json: { -readonly [K in keyof BaseTypeJson]: BaseTypeJson[K] } = { type: 'string' };
  if (c.enum !== undefined) json.enum = checkEnum(c.enum);
  if (c.minLength !== undefined) {
    assert(Number.isSafeInteger(c.minLength) && c.minLength >= 0, `bad minLength ${c.minLength}`);
    json.minLength = c.minLength;
  }
  if (c.maxLength !== undefined) {
    assert(Number.isSafeInteger(c.maxLength) && c.maxLength >= (c.minLength ?? 0), `bad maxLength ${c.maxLength}`);
    json.maxLength = c.maxLength;
  }
  return atom(json);
}

export interface NumberConstraints {
  /** Inclusive lower bound (minInteger / minReal). */
  readonly min?: number;
  /** Inclusive upper bound (maxInteger / maxReal). */
  readonly max?: number;
  readonly enum?: readonly number[];
}

/** A 64-bit signed integer; optionally within [min, max] or one of `enum`. */
export function int(c: NumberConstraints = {}): Atom {
  const json: { -readonly [K in keyof BaseTypeJson]: BaseTypeJson[K] } = { type: 'integer' };
  if (c.enum !== undefined) {
    for (const n of c.enum) checkIntegerBound(n, 'enum member');
    json.enum = checkEnum(c.enum);
  }
  if (c.min !== undefined) {
    checkIntegerBound(c.min, 'min');
    json.minInteger = c.min;
  }
  if (c.max !== undefined) {
    checkIntegerBound(c.max, 'max');
    assert(c.max >= (c.min ?? c.max), `integer range [${c.min}, ${c.max}] is empty`);
    json.maxInteger = c.max;
  }
  return atom(json);
}

/** An IEEE double; optionally within [min, max] or one of `enum`. */
export function real(c: NumberConstraints = {}): Atom {
  const json: { -readonly [K in keyof BaseTypeJson]: BaseTypeJson[K] } = { type: 'real' };
  if (c.enum !== undefined) json.enum = checkEnum(c.enum);
  if (c.min !== undefined) json.minReal = c.min;
  if (c.max !== undefined) {
    assert(c.max >= (c.min ?? c.max), `real range [${c.min}, ${c.max}] is empty`);
    json.maxReal = c.max;
  }
  return atom(json);
}

export function bool(): Atom {
  return atom({ type: 'boolean' });
}

/** A uuid that refers to nothing in particular. */
export function uuid(): Atom {
  return atom({ type: 'uuid' });
}

/**
 * A reference to a row of `table`. A strong reference keeps its target alive and may not
 * dangle (the transaction fails); a weak one is removed from the column when its target is
 * deleted, and may then leave a set below its minimum (which fails the transaction).
 */
export function ref(table: string, refType: 'strong' | 'weak' = 'strong'): Atom {
  assert(NAME_RE.test(table), `bad table name in ref: ${table}`);
  return atom(refType === 'weak' ? { type: 'uuid', refTable: table, refType } : { type: 'uuid', refTable: table });
}

// ---------------------------------------------------------------------------------------------
// Shapes and flags. A bare Atom where a column is expected means "exactly one".

export type ColumnLike = Atom | Column;

export interface Bounds {
  /** 0 (the default for sets and maps) or 1. */
  readonly min?: 0 | 1;
  /** A positive count or 'unlimited' (the default for sets and maps). */
  readonly max?: number | 'unlimited';
}

function column(key: Atom, value: Atom | undefined, bounds: Required<Bounds>): Column {
  const { min, max } = bounds;
  assert(min === 0 || min === 1, `min must be 0 or 1, not ${String(min)}`);
  assert(max === 'unlimited' || (Number.isSafeInteger(max) && max >= 1 && max >= min), `bad max ${max}`);
  return { kind: 'column', key, value, min, max, mutable: true, ephemeral: false };
}

function toColumn(c: ColumnLike): Column {
  return c.kind === 'column' ? c : column(c, undefined, { min: 1, max: 1 });
}

/** Zero or one value. */
export function optional(a: Atom): Column {
  return column(a, undefined, { min: 0, max: 1 });
}

/** A set of values; by default zero or more. */
export function set(a: Atom, bounds: Bounds = {}): Column {
  return column(a, undefined, { min: bounds.min ?? 0, max: bounds.max ?? 'unlimited' });
}

/** A map from keys to values (keys unique); by default zero or more pairs. */
export function map(key: Atom, value: Atom, bounds: Bounds = {}): Column {
  return column(key, value, { min: bounds.min ?? 0, max: bounds.max ?? 'unlimited' });
}

/** A string-to-string map: external_ids, options, other_config and the like. */
export function smap(): Column {
  return map(str(), str());
}

/** A column the server does not persist (RFC 7047 "ephemeral"). */
export function ephemeral(c: ColumnLike): Column {
  return { ...toColumn(c), ephemeral: true };
}

/** A column that may be set at insert but never changed later (RFC 7047 "mutable": false). */
export function immutable(c: ColumnLike): Column {
  return { ...toColumn(c), mutable: false };
}

// ---------------------------------------------------------------------------------------------
// Tables and schemas.

export interface TableOptions {
  /** Root tables hold their rows; rows of other tables live while something refers to them. */
  readonly isRoot?: boolean;
  readonly maxRows?: number;
  /** Each index is a set of columns whose values together are unique across rows. */
  readonly indexes?: readonly (readonly string[])[];
}

export function table(description: string, options: TableOptions, columns: Record<string, ColumnLike>): Table {
  assert(description.length > 0 && !description.includes('\n'), 'a table description is one line');
  const cols: Record<string, Column> = {};
  for (const [name, c] of Object.entries(columns)) {
    // Names that begin with "_" (like _uuid and _version) are reserved for the server.
    assert(NAME_RE.test(name), `bad column name: ${name}`);
    cols[name] = toColumn(c);
  }
  assert(Object.keys(cols).length > 0, 'a table needs at least one column');
  if (options.maxRows !== undefined) {
    assert(Number.isSafeInteger(options.maxRows) && options.maxRows >= 1, `bad maxRows ${options.maxRows}`);
  }
  const indexes = options.indexes ?? [];
  for (const index of indexes) {
    assert(index.length > 0, 'an index needs at least one column');
    assert(new Set(index).size === index.length, `index [${index.join(', ')}] repeats a column`);
    for (const name of index) {
      const c = cols[name];
      assert(c !== undefined, `index column ${name} is not a column`);
      assert(!c.ephemeral, `index column ${name} is ephemeral, which OVSDB does not allow`);
    }
  }
  return { description, isRoot: options.isRoot ?? false, maxRows: options.maxRows, indexes, columns: cols };
}

export function schema(s: Schema): Schema {
  assert(NAME_RE.test(s.name), `bad schema name: ${s.name}`);
  assert(/^\d+\.\d+\.\d+$/.test(s.version), `schema version must be x.y.z, not ${s.version}`);
  // RFC 7047 isRoot defaults to false, but OVS treats a schema with no root table at all as
  // "every table is a root" (a rule from before garbage collection). Requiring a root keeps
  // our isRoot meaning exactly what it says.
  const tables = Object.entries(s.tables);
  assert(tables.some(([, t]) => t.isRoot), `schema ${s.name} has no root table`);
  for (const [tableName, t] of tables) {
    assert(NAME_RE.test(tableName), `bad table name: ${tableName}`);
    for (const [columnName, c] of Object.entries(t.columns)) {
      for (const a of [c.key, c.value]) {
        const target = a?.json.refTable;
        assert(target === undefined || s.tables[target] !== undefined,
          `${tableName}.${columnName} refers to table ${target}, which ${s.name} does not have`);
      }
    }
  }
  return s;
}

// ---------------------------------------------------------------------------------------------
// Output.

function atomToJson(a: Atom): AtomicType | BaseTypeJson {
  return Object.keys(a.json).length === 1 ? a.json.type : { ...a.json };
}

function columnToJson(c: Column): ColumnSchemaJson {
  let type: TypeJson;
  if (c.value === undefined && c.min === 1 && c.max === 1 && Object.keys(c.key.json).length === 1) {
    type = c.key.json.type;
  } else {
    type = {
      key: atomToJson(c.key),
      ...(c.value !== undefined ? { value: atomToJson(c.value) } : {}),
      ...(c.min !== 1 ? { min: c.min } : {}),
      ...(c.max !== 1 ? { max: c.max } : {}),
    };
  }
  return { type, ...(c.ephemeral ? { ephemeral: true } : {}), ...(c.mutable ? {} : { mutable: false }) };
}

function tableToJson(t: Table): TableSchemaJson {
  const columns: Record<string, ColumnSchemaJson> = {};
  for (const [name, c] of Object.entries(t.columns)) columns[name] = columnToJson(c);
  return {
    columns,
    ...(t.maxRows !== undefined ? { maxRows: t.maxRows } : {}),
    ...(t.isRoot ? { isRoot: true } : {}),
    ...(t.indexes.length > 0 ? { indexes: t.indexes.map((index) => [...index]) } : {}),
  };
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

/** The RFC 7047 schema JSON of `s`, deeply frozen: consumers share one copy. */
export function toSchemaJson(s: Schema): SchemaJson {
  const tables: Record<string, TableSchemaJson> = {};
  for (const [name, t] of Object.entries(s.tables)) tables[name] = tableToJson(t);
  return deepFreeze(s.upstreamCksum === undefined ? { name: s.name, version: s.version, tables } : { name: s.name, version: s.version, cksum: s.upstreamCksum, tables });
}
