// The OVSDB schema model (RFC 7047 section 3.2): databases, tables, columns and their types,
// parsed from and printed to the RFC's JSON schema format. Parsing validates everything the
// engine later relies on, so the transaction code can assume a well-formed schema.
import { OvsdbError, OvsdbErrorName } from './errors.js';
import type { Atom } from './atom.js';
import { compareAtoms } from './atom.js';

export const atomicTypes = ['integer', 'real', 'boolean', 'string', 'uuid'] as const;
export type AtomicType = (typeof atomicTypes)[number];

export type RefType = 'strong' | 'weak';

/** An atomic type with its constraints (RFC 7047 <base-type>). */
export interface BaseType {
  readonly type: AtomicType;
  /** Allowed values, sorted; undefined means unconstrained. */
  readonly enum?: readonly Atom[];
  readonly minInteger?: number;
  readonly maxInteger?: number;
  readonly minReal?: number;
  readonly maxReal?: number;
  readonly minLength?: number;
  readonly maxLength?: number;
  readonly refTable?: string;
  readonly refType?: RefType;
}

/**
 * How a column's value is held in memory: 'scalar' (exactly one atom, held bare),
 * 'set' (any other key-only type, held as a sorted duplicate-free array), 'map'.
 */
export type ColumnKind = 'scalar' | 'set' | 'map';

export interface ColumnType {
  readonly key: BaseType;
  readonly value?: BaseType;
  readonly min: number;
  /** Infinity stands for "unlimited". */
  readonly max: number;
  readonly kind: ColumnKind;
}

export interface ColumnSchema {
  readonly name: string;
  readonly type: ColumnType;
  readonly ephemeral: boolean;
  readonly mutable: boolean;
}

export interface TableSchema {
  readonly name: string;
  /** User columns in schema order (without _uuid and _version). */
  readonly columns: ReadonlyMap<string, ColumnSchema>;
  readonly isRoot: boolean;
  readonly maxRows: number;
  /** Each index is a list of column names whose combined value must be unique. */
  readonly indexes: readonly (readonly string[])[];
  /** Columns that hold uuid references (as key or value), for referential integrity. */
  readonly refColumns: readonly ColumnSchema[];
}

export interface DatabaseSchema {
  readonly name: string;
  readonly version: string;
  readonly cksum?: string;
  readonly tables: ReadonlyMap<string, TableSchema>;
}

const uuidType: ColumnType = { key: { type: 'uuid' }, min: 1, max: 1, kind: 'scalar' };

/** The two columns every table has (RFC 7047 section 3.2, <table-schema>). */
export const uuidColumn: ColumnSchema = { name: '_uuid', type: uuidType, ephemeral: false, mutable: false };
export const versionColumn: ColumnSchema = { name: '_version', type: uuidType, ephemeral: false, mutable: false };

const idPattern = /^[A-Za-z_][A-Za-z0-9_]*$/;
const versionPattern = /^\d+\.\d+\.\d+$/;

function schemaError(details: string): OvsdbError {
  return new OvsdbError(OvsdbErrorName.syntaxError, details);
}

function isObject(json: unknown): json is Record<string, unknown> {
  return typeof json === 'object' && json !== null && !Array.isArray(json);
}

function checkMembers(json: Record<string, unknown>, allowed: readonly string[], what: string): void {
  for (const key of Object.keys(json)) {
    if (!allowed.includes(key)) throw schemaError(`${what}: unknown member "${key}"`);
  }
}

function optionalNumber(json: Record<string, unknown>, key: string, what: string, integer: boolean): number | undefined {
  const v = json[key];
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || (integer && !Number.isInteger(v))) {
    throw schemaError(`${what}: "${key}" must be ${integer ? 'an integer' : 'a number'}`);
  }
  return v;
}

function parseAtomicType(json: unknown, what: string): AtomicType {
  if (typeof json === 'string' && (atomicTypes as readonly string[]).includes(json)) return json as AtomicType;
  throw schemaError(`${what}: unknown atomic type ${JSON.stringify(json)}`);
}

function parseEnumAtom(type: AtomicType, json: unknown, what: string): Atom {
  switch (type) {
    case 'integer':
      if (typeof json === 'number' && Number.isInteger(json)) return json;
      break;
    case 'real':
      if (typeof json === 'number') return json;
      break;
    case 'boolean':
      if (typeof json === 'boolean') return json;
      break;
    case 'string':
      if (typeof json === 'string') return json;
      break;
    case 'uuid':
      if (Array.isArray(json) && json[0] === 'uuid' && typeof json[1] === 'string') return json[1];
      break;
  }
  throw schemaError(`${what}: enum value ${JSON.stringify(json)} is not a ${type}`);
}

function parseBaseType(json: unknown, what: string): BaseType {
  if (typeof json === 'string') return { type: parseAtomicType(json, what) };
  if (!isObject(json)) throw schemaError(`${what}: base type must be a string or an object`);
  checkMembers(json, ['type', 'enum', 'minInteger', 'maxInteger', 'minReal', 'maxReal', 'minLength', 'maxLength', 'refTable', 'refType'], what);
  const type = parseAtomicType(json.type, what);
  const base: { -readonly [K in keyof BaseType]: BaseType[K] } = { type };
  if (json.enum !== undefined) {
    const raw = Array.isArray(json.enum) && json.enum[0] === 'set' ? json.enum[1] : [json.enum];
    if (!Array.isArray(raw) || raw.length === 0) throw schemaError(`${what}: enum must be a non-empty set`);
    const atoms = raw.map((a: unknown) => parseEnumAtom(type, a, what)).sort(compareAtoms);
    base.enum = atoms.filter((a, i) => i === 0 || compareAtoms(atoms[i - 1] as Atom, a) !== 0);
  }
  const minInteger = optionalNumber(json, 'minInteger', what, true);
  const maxInteger = optionalNumber(json, 'maxInteger', what, true);
  const minReal = optionalNumber(json, 'minReal', what, false);
  const maxReal = optionalNumber(json, 'maxReal', what, false);
  const minLength = optionalNumber(json, 'minLength', what, true);
  const maxLength = optionalNumber(json, 'maxLength', what, true);
  const only = (cond: boolean, names: string): void => {
    if (!cond) throw schemaError(`${what}: ${names} not allowed for type ${type}`);
  };
  if (minInteger !== undefined || maxInteger !== undefined) only(type === 'integer', 'minInteger/maxInteger');
  if (minReal !== undefined || maxReal !== undefined) only(type === 'real', 'minReal/maxReal');
  if (minLength !== undefined || maxLength !== undefined) only(type === 'string', 'minLength/maxLength');
  if (minInteger !== undefined) base.minInteger = minInteger;
  if (maxInteger !== undefined) base.maxInteger = maxInteger;
  if (minReal !== undefined) base.minReal = minReal;
  if (maxReal !== undefined) base.maxReal = maxReal;
  if (minLength !== undefined) base.minLength = minLength;
  if (maxLength !== undefined) base.maxLength = maxLength;
  if (minInteger !== undefined && maxInteger !== undefined && minInteger > maxInteger) throw schemaError(`${what}: minInteger exceeds maxInteger`);
  if (minReal !== undefined && maxReal !== undefined && minReal > maxReal) throw schemaError(`${what}: minReal exceeds maxReal`);
  if (minLength !== undefined && maxLength !== undefined && minLength > maxLength) throw schemaError(`${what}: minLength exceeds maxLength`);
  if (json.refTable !== undefined) {
    only(type === 'uuid', 'refTable');
    if (typeof json.refTable !== 'string') throw schemaError(`${what}: refTable must be a string`);
    base.refTable = json.refTable;
    const refType = json.refType ?? 'strong';
    if (refType !== 'strong' && refType !== 'weak') throw schemaError(`${what}: refType must be "strong" or "weak"`);
    base.refType = refType;
  } else if (json.refType !== undefined) {
    throw schemaError(`${what}: refType without refTable`);
  }
  return base;
}

function parseColumnType(json: unknown, what: string): ColumnType {
  if (typeof json === 'string') return { key: parseBaseType(json, what), min: 1, max: 1, kind: 'scalar' };
  if (!isObject(json)) throw schemaError(`${what}: type must be a string or an object`);
  checkMembers(json, ['key', 'value', 'min', 'max'], what);
  const key = parseBaseType(json.key, `${what} key`);
  const value = json.value === undefined ? undefined : parseBaseType(json.value, `${what} value`);
  const min = json.min ?? 1;
  if (min !== 0 && min !== 1) throw schemaError(`${what}: min must be 0 or 1`);
  const maxJson = json.max ?? 1;
  let max: number;
  if (maxJson === 'unlimited') max = Infinity;
  else if (typeof maxJson === 'number' && Number.isInteger(maxJson) && maxJson >= 1) max = maxJson;
  else throw schemaError(`${what}: max must be a positive integer or "unlimited"`);
  if (min > max) throw schemaError(`${what}: min exceeds max`);
  const kind: ColumnKind = value !== undefined ? 'map' : min === 1 && max === 1 ? 'scalar' : 'set';
  return value === undefined ? { key, min, max, kind } : { key, value, min, max, kind };
}

function parseColumn(name: string, json: unknown, what: string): ColumnSchema {
  if (!isObject(json)) throw schemaError(`${what}: column schema must be an object`);
  checkMembers(json, ['type', 'ephemeral', 'mutable'], what);
  const type = parseColumnType(json.type, what);
  const ephemeral = json.ephemeral ?? false;
  const mutable = json.mutable ?? true;
  if (typeof ephemeral !== 'boolean' || typeof mutable !== 'boolean') throw schemaError(`${what}: ephemeral and mutable must be booleans`);
  return { name, type, ephemeral, mutable };
}

function refsOf(type: ColumnType): boolean {
  return type.key.refTable !== undefined || type.value?.refTable !== undefined;
}

/** Parses and validates an RFC 7047 database schema. Throws OvsdbError('syntax error') if malformed. */
export function parseDatabaseSchema(json: unknown): DatabaseSchema {
  if (!isObject(json)) throw schemaError('database schema must be a JSON object');
  checkMembers(json, ['name', 'version', 'cksum', 'tables'], 'database schema');
  const { name, version, cksum, tables } = json;
  if (typeof name !== 'string' || !idPattern.test(name)) throw schemaError('database schema: "name" must be an identifier');
  if (typeof version !== 'string' || !versionPattern.test(version)) throw schemaError('database schema: "version" must look like x.y.z');
  if (cksum !== undefined && typeof cksum !== 'string') throw schemaError('database schema: "cksum" must be a string');
  if (!isObject(tables)) throw schemaError('database schema: "tables" must be an object');
  // ovsdb-server's compatibility rule: a schema whose root set is empty (no table says
  // isRoot: true) predates garbage collection, so every table is a root.
  const anyRoot = Object.values(tables).some((t) => isObject(t) && t.isRoot === true);
  const parsed = new Map<string, TableSchema>();
  for (const [tableName, tjson] of Object.entries(tables).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const what = `table ${tableName}`;
    if (!idPattern.test(tableName) || tableName.startsWith('_')) throw schemaError(`${what}: invalid table name`);
    if (!isObject(tjson)) throw schemaError(`${what}: table schema must be an object`);
    checkMembers(tjson, ['columns', 'maxRows', 'isRoot', 'indexes'], what);
    if (!isObject(tjson.columns)) throw schemaError(`${what}: "columns" must be an object`);
    const columns = new Map<string, ColumnSchema>();
    for (const [colName, cjson] of Object.entries(tjson.columns)) {
      if (!idPattern.test(colName) || colName.startsWith('_')) throw schemaError(`${what}: invalid column name "${colName}"`);
      columns.set(colName, parseColumn(colName, cjson, `${tableName}.${colName}`));
    }
    const maxRowsJson = tjson.maxRows;
    if (maxRowsJson !== undefined && (typeof maxRowsJson !== 'number' || !Number.isInteger(maxRowsJson) || maxRowsJson < 1)) {
      throw schemaError(`${what}: maxRows must be a positive integer`);
    }
    const isRoot = anyRoot ? tjson.isRoot === true : true;
    if (tjson.isRoot !== undefined && typeof tjson.isRoot !== 'boolean') throw schemaError(`${what}: isRoot must be a boolean`);
    const indexes: string[][] = [];
    if (tjson.indexes !== undefined) {
      if (!Array.isArray(tjson.indexes)) throw schemaError(`${what}: indexes must be an array`);
      for (const index of tjson.indexes) {
        if (!Array.isArray(index) || index.length === 0) throw schemaError(`${what}: each index must be a non-empty array of column names`);
        for (const c of index) {
          if (typeof c !== 'string' || (!columns.has(c) && c !== '_uuid')) throw schemaError(`${what}: index names unknown column ${JSON.stringify(c)}`);
          if (columns.get(c)?.ephemeral) throw schemaError(`${what}: index column ${c} must not be ephemeral`);
        }
        indexes.push([...(index as string[])]);
      }
    }
    const refColumns = [...columns.values()].filter((c) => refsOf(c.type));
    parsed.set(tableName, { name: tableName, columns, isRoot, maxRows: maxRowsJson ?? Infinity, indexes, refColumns });
  }
  for (const table of parsed.values()) {
    for (const column of table.refColumns) {
      for (const base of [column.type.key, column.type.value]) {
        if (base?.refTable !== undefined && !parsed.has(base.refTable)) {
          throw schemaError(`${table.name}.${column.name}: refTable ${base.refTable} does not exist`);
        }
      }
    }
  }
  return cksum === undefined ? { name, version, tables: parsed } : { name, version, cksum, tables: parsed };
}

function baseTypeToJson(base: BaseType): unknown {
  const out: Record<string, unknown> = { type: base.type };
  if (base.enum !== undefined) {
    const atoms = base.enum.map((a) => (base.type === 'uuid' ? ['uuid', a] : a));
    out.enum = ['set', atoms];
  }
  for (const k of ['minInteger', 'maxInteger', 'minReal', 'maxReal', 'minLength', 'maxLength', 'refTable'] as const) {
    if (base[k] !== undefined) out[k] = base[k];
  }
  if (base.refTable !== undefined && base.refType === 'weak') out.refType = 'weak';
  return Object.keys(out).length === 1 ? base.type : out;
}

export function columnTypeToJson(type: ColumnType): unknown {
  if (type.kind === 'scalar' && typeof baseTypeToJson(type.key) === 'string') return type.key.type;
  const out: Record<string, unknown> = { key: baseTypeToJson(type.key) };
  if (type.value !== undefined) out.value = baseTypeToJson(type.value);
  if (type.min !== 1) out.min = type.min;
  if (type.max !== 1) out.max = type.max === Infinity ? 'unlimited' : type.max;
  return out;
}

/** Prints a schema in the RFC 7047 JSON format (the form get_schema returns). */
export function schemaToJson(schema: DatabaseSchema): Record<string, unknown> {
  const tables: Record<string, unknown> = {};
  for (const table of schema.tables.values()) {
    const columns: Record<string, unknown> = {};
    for (const c of table.columns.values()) {
      const cj: Record<string, unknown> = { type: columnTypeToJson(c.type) };
      if (c.ephemeral) cj.ephemeral = true;
      if (!c.mutable) cj.mutable = false;
      columns[c.name] = cj;
    }
    const tj: Record<string, unknown> = { columns };
    if (table.isRoot) tj.isRoot = true;
    if (table.maxRows !== Infinity) tj.maxRows = table.maxRows;
    if (table.indexes.length > 0) tj.indexes = table.indexes.map((i) => [...i]);
    tables[table.name] = tj;
  }
  const out: Record<string, unknown> = { name: schema.name, version: schema.version };
  if (schema.cksum !== undefined) out.cksum = schema.cksum;
  out.tables = tables;
  return out;
}

/** Looks up a column by name, including the implicit _uuid and _version. */
export function findColumn(table: TableSchema, name: string): ColumnSchema | undefined {
  if (name === '_uuid') return uuidColumn;
  if (name === '_version') return versionColumn;
  return table.columns.get(name);
}
