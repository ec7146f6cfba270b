// The agent stream's wire form (proto/southbound.proto), shared by the member that serves it
// and the agent that reads it: the gRPC service definition, and rows as msgpack arrays (see the
// proto's opening comment for why). Encoding trusts the view it reads; decoding trusts nothing:
// a row that is not a well-formed value of its column is a WireError, never a half-made Row.
import type * as grpc from '@grpc/grpc-js';
import { Packr } from 'msgpackr';
import { loadProto, serviceDefinition } from '../cluster/grpc-proto.js';
import type { Atom, ColumnSchema, DatabaseSchema, Row, TableSchema, Value } from '../ovsdb/index.js';
import { isUuid } from '../ovsdb/index.js';
import type { ViewChange } from './sb-interest.js';

export const southboundServiceName = 'ovnts.southbound.Southbound';

/** Limits of the wire form. */
export const wireLimits = {
  /** Encoded row bytes in one Delta message (a larger step is sent in parts). */
  partBytesMax: 512 * 1024,
} as const;

/**
 * The service definition. A response that is already an encoded ServerMessage (a Buffer) goes
 * out as it is: that is how one delta encoded once is written to many streams.
 */
export function southboundDefinition(): grpc.ServiceDefinition {
  const def = serviceDefinition(loadProto('southbound.proto'), southboundServiceName) as unknown as Record<string, grpc.MethodDefinition<unknown, unknown>>;
  const stream = def.stream as grpc.MethodDefinition<unknown, unknown>;
  const serialize = stream.responseSerialize;
  def.stream = { ...stream, responseSerialize: (v: unknown) => (Buffer.isBuffer(v) ? v : serialize(v)) };
  return def as unknown as grpc.ServiceDefinition;
}

export interface WireTableRows {
  readonly table: string;
  readonly columns: readonly string[];
  readonly rows: readonly Uint8Array[];
  readonly removes: readonly string[];
}

export interface WireDelta {
  readonly fromRevision: number;
  readonly toRevision: number;
  readonly reset: boolean;
  readonly more: boolean;
  readonly tables: readonly WireTableRows[];
}

export interface WireResume {
  readonly mode: 'DELTA' | 'SNAPSHOT';
  readonly fromRevision: number;
  readonly toRevision: number;
  readonly reason: string;
  readonly member: number;
}

/** A ServerMessage as grpc-proto decodes it (longs as numbers, bytes as Uint8Array). */
export interface WireServerMessage {
  readonly kind?: 'resume' | 'delta';
  readonly resume?: WireResume;
  readonly delta?: WireDelta;
}

let serverMessageType: ReturnType<ReturnType<typeof loadProto>['lookupType']> | undefined;

/** Encodes one ServerMessage once, to be written to any number of streams. */
export function encodeServerMessage(m: { resume: WireResume } | { delta: WireDelta }): Buffer {
  serverMessageType ??= loadProto('southbound.proto').lookupType('ovnts.southbound.ServerMessage');
  return Buffer.from(serverMessageType.encode(serverMessageType.fromObject(m as Record<string, unknown>)).finish());
}

/** Decodes a ServerMessage as the gRPC client would (for tests that hold encoded messages). */
export function decodeServerMessage(b: Uint8Array): WireServerMessage {
  serverMessageType ??= loadProto('southbound.proto').lookupType('ovnts.southbound.ServerMessage');
  return serverMessageType.toObject(serverMessageType.decode(b), { longs: Number, enums: String, bytes: Uint8Array as unknown as typeof String, defaults: true, oneofs: true }) as WireServerMessage;
}

const packr = new Packr({ useRecords: false, mapsAsObjects: false, variableMapSize: true });

function encodeValue(column: ColumnSchema, v: Value): unknown {
  if (column.type.kind !== 'map') return v;
  const m = v as ReadonlyMap<Atom, Atom>;
  return [[...m.keys()], [...m.values()]];
}

function encodeRow(ts: TableSchema, row: Row): Uint8Array {
  const out: unknown[] = [row._uuid, row._version];
  for (const c of ts.columns.values()) out.push(encodeValue(c, row[c.name] as Value));
  return packr.pack(out);
}

/**
 * Encodes changes as TableRows entries, in parts of about `partBytesMax` encoded bytes (a part
 * holds at least one change). Entries keep the order of first appearance of their table.
 */
export function encodeParts(schema: DatabaseSchema, changes: readonly ViewChange[], partBytesMax: number = wireLimits.partBytesMax): WireTableRows[][] {
  const parts: WireTableRows[][] = [];
  let tables = new Map<string, { rows: Uint8Array[]; removes: string[] }>();
  let bytes = 0;
  const flush = (): void => {
    if (tables.size === 0) return;
    parts.push([...tables].map(([table, t]) => ({ table, columns: columnsOf(schema, table), rows: t.rows, removes: t.removes })));
    tables = new Map();
    bytes = 0;
  };
  for (const c of changes) {
    let t = tables.get(c.table);
    if (t === undefined) tables.set(c.table, (t = { rows: [], removes: [] }));
    if (c.row === undefined) {
      t.removes.push(c.uuid);
      bytes += c.uuid.length + 2;
    } else {
      const ts = schema.tables.get(c.table);
      if (ts === undefined) throw new Error(`encodeParts: no table ${c.table} in ${schema.name}`);
      const b = encodeRow(ts, c.row);
      t.rows.push(b);
      bytes += b.length + 3;
    }
    if (bytes >= partBytesMax) flush();
  }
  flush();
  return parts;
}

const columnLists = new WeakMap<DatabaseSchema, Map<string, readonly string[]>>();

function columnsOf(schema: DatabaseSchema, table: string): readonly string[] {
  let m = columnLists.get(schema);
  if (m === undefined) columnLists.set(schema, (m = new Map()));
  let cols = m.get(table);
  if (cols === undefined) {
    cols = [...(schema.tables.get(table) as TableSchema).columns.keys()];
    m.set(table, cols);
  }
  return cols;
}

/** Bytes that are not what the protocol says. The stream that carried them is not trusted. */
export class WireError extends Error {}

function atomOk(column: ColumnSchema, a: unknown, key: boolean): a is Atom {
  const base = key ? column.type.key : column.type.value;
  switch (base?.type) {
    case 'integer':
      return typeof a === 'number' && Number.isInteger(a);
    case 'real':
      return typeof a === 'number';
    case 'boolean':
      return typeof a === 'boolean';
    case 'string':
      return typeof a === 'string';
    case 'uuid':
      return isUuid(a);
    default:
      return false;
  }
}

function decodeValue(table: string, column: ColumnSchema, raw: unknown): Value {
  const bad = (): never => {
    throw new WireError(`${table}.${column.name}: not a value of its type`);
  };
  switch (column.type.kind) {
    case 'scalar':
      return atomOk(column, raw, true) ? raw : bad();
    case 'set': {
      if (!Array.isArray(raw) || raw.length > column.type.max) return bad();
      for (const a of raw) if (!atomOk(column, a, true)) bad();
      return raw as Atom[];
    }
    case 'map': {
      if (!Array.isArray(raw) || raw.length !== 2) return bad();
      const [keys, values] = raw as [unknown, unknown];
      if (!Array.isArray(keys) || !Array.isArray(values) || keys.length !== values.length || keys.length > column.type.max) return bad();
      const m = new Map<Atom, Atom>();
      keys.forEach((k, i) => {
        const v: unknown = values[i];
        if (!atomOk(column, k, true) || !atomOk(column, v, false)) bad();
        m.set(k as Atom, v as Atom);
      });
      return m;
    }
  }
}

/** One decoded row change: the row as it is now, or undefined for a removal. */
export interface DecodedChange {
  readonly table: string;
  readonly uuid: string;
  readonly row: Row | undefined;
}

/**
 * Decodes one TableRows entry against the agent's schema: removals first, then rows (a row
 * listed in both is upserted). Every column of the table must be named; unknown tables and
 * columns are a WireError.
 */
export function decodeTableRows(schema: DatabaseSchema, tr: WireTableRows): DecodedChange[] {
  const ts = schema.tables.get(tr.table);
  if (ts === undefined) throw new WireError(`unknown table ${JSON.stringify(tr.table)}`);
  const columns = tr.columns.map((name) => {
    const c = ts.columns.get(name);
    if (c === undefined) throw new WireError(`unknown column ${tr.table}.${name}`);
    return c;
  });
  if (new Set(tr.columns).size !== columns.length || columns.length !== ts.columns.size) {
    throw new WireError(`${tr.table}: the rows name ${columns.length} distinct columns, the schema has ${ts.columns.size}`);
  }
  const out: DecodedChange[] = [];
  for (const uuid of tr.removes) {
    if (!isUuid(uuid)) throw new WireError(`${tr.table}: a removal names ${JSON.stringify(uuid)}, not a uuid`);
    out.push({ table: tr.table, uuid, row: undefined });
  }
  for (const bytes of tr.rows) {
    let raw: unknown;
    try {
      raw = packr.unpack(bytes);
    } catch (err) {
      throw new WireError(`${tr.table}: a row is not msgpack: ${(err as Error).message}`);
    }
    if (!Array.isArray(raw) || raw.length !== columns.length + 2 || !isUuid(raw[0]) || !isUuid(raw[1])) {
      throw new WireError(`${tr.table}: a row is not [uuid, version, ${columns.length} values]`);
    }
    const row: Record<string, Value> = { _uuid: raw[0], _version: raw[1] };
    columns.forEach((c, i) => (row[c.name] = decodeValue(tr.table, c, raw[i + 2])));
    out.push({ table: tr.table, uuid: raw[0], row: row as Row });
  }
  return out;
}
