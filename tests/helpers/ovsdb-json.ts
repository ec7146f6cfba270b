// Test-side helpers for RFC 7047 JSON: a light schema reader (independent of the engine's own
// parser, so tests do not inherit its bugs), datum encoding helpers, and the canonical forms
// used to compare our engine's output with ovsdb-server's.

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonRow = Record<string, Json>;
/** A whole database: table name → row UUID → column → RFC 7047 datum. */
export type DbDump = Record<string, Record<string, JsonRow>>;

export type AtomicType = 'integer' | 'real' | 'boolean' | 'string' | 'uuid';

export interface BaseTypeLite {
  readonly type: AtomicType;
  readonly enum?: readonly Json[];
  readonly minInteger?: number;
  readonly maxInteger?: number;
  readonly minReal?: number;
  readonly maxReal?: number;
  readonly minLength?: number;
  readonly maxLength?: number;
  readonly refTable?: string;
  readonly refType: 'strong' | 'weak';
}

export interface ColumnTypeLite {
  readonly key: BaseTypeLite;
  readonly value?: BaseTypeLite;
  readonly min: number;
  /** Infinity for "unlimited". */
  readonly max: number;
}

export interface ColumnLite {
  readonly name: string;
  readonly type: ColumnTypeLite;
  readonly mutable: boolean;
  readonly ephemeral: boolean;
}

export interface TableLite {
  readonly name: string;
  readonly columns: ReadonlyMap<string, ColumnLite>;
  readonly isRoot: boolean;
  /** Infinity when the schema sets no limit. */
  readonly maxRows: number;
  readonly indexes: readonly (readonly string[])[];
}

export interface SchemaLite {
  readonly name: string;
  readonly tables: ReadonlyMap<string, TableLite>;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function parseBaseType(json: unknown): BaseTypeLite {
  if (typeof json === 'string') return { type: json as AtomicType, refType: 'strong' };
  if (!isObject(json) || typeof json['type'] !== 'string') throw new Error(`bad base type ${JSON.stringify(json)}`);
  const base: Record<string, unknown> = { type: json['type'], refType: json['refType'] === 'weak' ? 'weak' : 'strong' };
  const enumJson = json['enum'];
  if (enumJson !== undefined) {
    base['enum'] = Array.isArray(enumJson) && enumJson[0] === 'set' ? (enumJson[1] as Json[]) : [enumJson as Json];
  }
  for (const key of ['minInteger', 'maxInteger', 'minReal', 'maxReal', 'minLength', 'maxLength', 'refTable']) {
    if (json[key] !== undefined) base[key] = json[key];
  }
  return base as unknown as BaseTypeLite;
}

function parseColumnType(json: unknown): ColumnTypeLite {
  if (typeof json === 'string') return { key: parseBaseType(json), min: 1, max: 1 };
  if (!isObject(json)) throw new Error(`bad column type ${JSON.stringify(json)}`);
  const max = json['max'] === 'unlimited' ? Infinity : typeof json['max'] === 'number' ? json['max'] : 1;
  const min = typeof json['min'] === 'number' ? json['min'] : 1;
  const type: ColumnTypeLite =
    json['value'] === undefined
      ? { key: parseBaseType(json['key']), min, max }
      : { key: parseBaseType(json['key']), value: parseBaseType(json['value']), min, max };
  return type;
}

/** Reads the parts of a schema the test generators need. Trusts the input (tests only). */
export function parseSchemaLite(json: unknown): SchemaLite {
  if (!isObject(json) || !isObject(json['tables'])) throw new Error('schema without tables');
  const tablesJson = json['tables'];
  const anyRoot = Object.values(tablesJson).some((t) => isObject(t) && t['isRoot'] === true);
  const tables = new Map<string, TableLite>();
  for (const [name, tableJson] of Object.entries(tablesJson)) {
    if (!isObject(tableJson) || !isObject(tableJson['columns'])) throw new Error(`bad table ${name}`);
    const columns = new Map<string, ColumnLite>();
    for (const [columnName, columnJson] of Object.entries(tableJson['columns'])) {
      if (!isObject(columnJson)) throw new Error(`bad column ${name}.${columnName}`);
      columns.set(columnName, {
        name: columnName,
        type: parseColumnType(columnJson['type']),
        mutable: columnJson['mutable'] !== false,
        ephemeral: columnJson['ephemeral'] === true,
      });
    }
    tables.set(name, {
      name,
      columns,
      // RFC 7047 / ovsdb-server: when no table is marked as root, every table is a root.
      isRoot: anyRoot ? tableJson['isRoot'] === true : true,
      maxRows: typeof tableJson['maxRows'] === 'number' ? tableJson['maxRows'] : Infinity,
      indexes: Array.isArray(tableJson['indexes']) ? (tableJson['indexes'] as string[][]) : [],
    });
  }
  return { name: String(json['name']), tables };
}

export function isMapType(type: ColumnTypeLite): boolean {
  return type.value !== undefined;
}

/** The atoms of a set datum (or the keys of a map datum's pairs, via mapPairs). */
export function setElements(datum: Json): Json[] {
  if (Array.isArray(datum) && datum[0] === 'set') return datum[1] as Json[];
  return [datum];
}

export function mapPairs(datum: Json): [Json, Json][] {
  if (Array.isArray(datum) && datum[0] === 'map') return datum[1] as [Json, Json][];
  throw new Error(`not a map datum: ${JSON.stringify(datum)}`);
}

/** Elements of any datum as a flat list of atoms (map keys and values both included). */
export function datumAtoms(datum: Json, type: ColumnTypeLite): Json[] {
  if (isMapType(type)) return mapPairs(datum).flat();
  return setElements(datum);
}

export function uuidAtom(uuid: string): Json {
  return ['uuid', uuid];
}

export function namedUuidAtom(name: string): Json {
  return ['named-uuid', name];
}

/** The UUID string inside a ["uuid", s] atom, or undefined for anything else. */
export function uuidOf(atom: Json): string | undefined {
  return Array.isArray(atom) && atom[0] === 'uuid' && typeof atom[1] === 'string' ? atom[1] : undefined;
}

/** UUIDs referenced by a datum through a base type that refers to refTable. */
export function referencedUuids(datum: Json, type: ColumnTypeLite): { key: string[]; value: string[] } {
  const key: string[] = [];
  const value: string[] = [];
  if (isMapType(type)) {
    for (const [k, v] of mapPairs(datum)) {
      const ku = uuidOf(k);
      const vu = uuidOf(v);
      if (ku !== undefined) key.push(ku);
      if (vu !== undefined) value.push(vu);
    }
  } else {
    for (const atom of setElements(datum)) {
      const u = uuidOf(atom);
      if (u !== undefined) key.push(u);
    }
  }
  return { key, value };
}

/**
 * Canonical JSON text: object members sorted by name, set elements and map pairs sorted by
 * their own canonical text. RFC 7047 leaves set and map order unspecified, so two equal
 * databases can print them differently.
 */
export function canonicalJson(value: Json): string {
  return JSON.stringify(canonicalize(value));
}

export function canonicalize(value: Json): Json {
  if (Array.isArray(value)) {
    if (value.length === 2 && (value[0] === 'set' || value[0] === 'map') && Array.isArray(value[1])) {
      const elements = (value[1] as Json[]).map((e) => canonicalize(e));
      elements.sort((x, y) => compareText(JSON.stringify(x), JSON.stringify(y)));
      return [value[0], elements];
    }
    return value.map((e) => canonicalize(e));
  }
  if (value !== null && typeof value === 'object') {
    const out: Record<string, Json> = {};
    for (const key of Object.keys(value).sort(compareText)) out[key] = canonicalize(value[key] as Json);
    return out;
  }
  return value;
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Deep-replaces every ["uuid", s] atom and every dump key s for which map has s. */
export function mapUuids<T extends Json>(value: T, map: ReadonlyMap<string, string>): T {
  if (map.size === 0) return value;
  const walk = (v: Json): Json => {
    if (Array.isArray(v)) {
      if (v.length === 2 && v[0] === 'uuid' && typeof v[1] === 'string') return ['uuid', map.get(v[1]) ?? v[1]];
      return v.map(walk);
    }
    if (v !== null && typeof v === 'object') {
      const out: Record<string, Json> = {};
      for (const [k, inner] of Object.entries(v)) out[k] = walk(inner);
      return out;
    }
    return v;
  };
  return walk(value) as T;
}

/** JSON text with every non-ASCII character escaped, safe to print inside TAP/YAML output. */
export function asciiJson(value: unknown): string {
  return (JSON.stringify(value) ?? 'undefined').replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * A key equal for equal datums whatever their encoding: a bare atom and a one-element set are
 * the same datum, and set and map order does not matter.
 */
export function datumKey(datum: Json): string {
  if (Array.isArray(datum) && (datum[0] === 'set' || datum[0] === 'map')) return canonicalJson(datum);
  return canonicalJson(['set', [datum]]);
}
