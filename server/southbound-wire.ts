// The agent stream's wire form (proto/southbound.proto), shared by the member that serves it
// and the agent that reads it: the gRPC service definition, and rows as msgpack arrays (see the
// proto's opening comment for why). Encoding trusts the view it reads; decoding trusts nothing:
// a row that is not a well-formed value of its column is a WireError, never a half-made Row.
import assert from 'node:assert/strict';
import type * as grpc from '@grpc/grpc-js';
import { Packr } from 'msgpackr';
import protobuf from 'protobufjs';
import { loadProto, serviceDefinition } from '../cluster/grpc-proto.js';
import type { Atom, ColumnSchema, DatabaseSchema, Row, TableSchema, Value } from '../ovsdb/index.js';
import { compareAtoms, isUuid, lowerBound } from '../ovsdb/index.js';
import { SmallMap, emptyMap, setEditBetween, withEdits } from '../ovsdb/datum.js';
import type { ViewChange } from './sb-interest.js';

export const southboundServiceName = 'ovnts.southbound.Southbound';

/** Limits of the wire form. */
export const wireLimits = {
  /** Encoded row bytes in one Delta message (a larger step is sent in parts). */
  partBytesMax: 512 * 1024,
  /**
   * The largest message an agent reads (gRPC's default is 4 MiB). A part holds at least one
   * row, and one SB row can be larger than a part: an address set of 400,000 addresses is a
   * 4.8 MB message. Under the default bound such a message ended the stream, and the agent
   * reconnected to be sent it again, for ever.
   */
  agentMessageBytesMax: 256 * 1024 * 1024,
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
  /** The member's SB view id (server/sb-view-id.ts); absent from a member that predates it. */
  readonly view?: string;
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

let deltaType: ReturnType<ReturnType<typeof loadProto>['lookupType']> | undefined;

/** The tag of ServerMessage.delta: field 2, length-delimited. */
const deltaFieldTag = (2 << 3) | 2;

/**
 * An encoded ServerMessage holding a Delta, with `tables` after the Delta's own: the bytes of
 * the message are kept, and only `tables` is encoded (Protocol Buffers reads a repeated field
 * written in several runs as one list, in order). A step encoded once for many streams so takes
 * each stream's own rows for the cost of those rows alone.
 */
export function appendTables(message: Buffer, tables: readonly WireTableRows[]): Buffer {
  if (tables.length === 0) return message;
  deltaType ??= loadProto('southbound.proto').lookupType('ovnts.southbound.Delta');
  const extra = deltaType.encode(deltaType.fromObject({ tables })).finish();
  const reader = protobuf.Reader.create(message);
  assert.equal(reader.uint32(), deltaFieldTag, 'appendTables: not a ServerMessage holding a Delta');
  const length = reader.uint32();
  assert.equal(reader.pos + length, message.length, 'appendTables: a ServerMessage holds its Delta alone');
  const header = protobuf.Writer.create().uint32(deltaFieldTag).uint32(length + extra.length).finish();
  return Buffer.concat([header, message.subarray(reader.pos), extra]);
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

/** The smallest set sent as a difference: below it, the set itself is about as small. */
const setDifferenceMin = 4;

/** Whether a column's value may travel as a difference: a set of more than one element. */
function isDiffable(column: ColumnSchema): boolean {
  return column.type.kind === 'set' && column.type.max > 1;
}

/**
 * The difference from set `had` to set `has` as [added, removed] (both ascending), when it is
 * smaller than `has` itself; undefined when it is not, or when either set is not ascending (then
 * the set goes whole). One merge walk.
 */
export function setDifference(had: readonly Atom[], has: readonly Atom[]): [Atom[], Atom[]] | undefined {
  if (has.length < setDifferenceMin) return undefined;
  // Made from `had` by a recorded edit (a mutation, or northd's copy of a set it keeps): the
  // edit is the difference, and neither set needs reading.
  const edit = setEditBetween(had, has);
  if (edit !== undefined) return (edit.added.length + edit.removed.length) * 2 >= has.length ? undefined : [[...edit.added], [...edit.removed]];
  const added: Atom[] = [];
  const removed: Atom[] = [];
  let i = 0;
  let j = 0;
  while (i < had.length || j < has.length) {
    const x = had[i];
    const y = has[j];
    const order = x === undefined ? 1 : y === undefined ? -1 : compareAtoms(x, y);
    if (order < 0) removed.push(had[i++] as Atom);
    else if (order > 0) added.push(has[j++] as Atom);
    else {
      i++;
      j++;
    }
    if ((added.length + removed.length) * 2 >= has.length) return undefined;
  }
  return ascending(had) && ascending(has) ? [added, removed] : undefined;
}

function ascending(xs: readonly Atom[]): boolean {
  for (let k = 1; k < xs.length; k++) if (compareAtoms(xs[k - 1] as Atom, xs[k] as Atom) >= 0) return false;
  return true;
}

/** A row as [uuid, version, values...]; with `old` (the row the agent holds), its set columns as differences where smaller. */
function encodeRow(ts: TableSchema, row: Row, old?: Row): Uint8Array {
  const out: unknown[] = [row._uuid, row._version];
  for (const c of ts.columns.values()) {
    const v = row[c.name] as Value;
    const diff = old !== undefined && isDiffable(c) ? setDifference(old[c.name] as readonly Atom[], v as readonly Atom[]) : undefined;
    out.push(diff ?? encodeValue(c, v));
  }
  return packr.pack(out);
}

/**
 * Encodes changes as TableRows entries, in parts of about `partBytesMax` encoded bytes (a part
 * holds at least one change). Entries keep the order of first appearance of their table. A
 * change that carries the row the agent holds (`old`), in a table of `diffTables`, gives its
 * set columns as differences where that is smaller (see proto/southbound.proto, TableRows).
 */
export function encodeParts(schema: DatabaseSchema, changes: readonly ViewChange[], partBytesMax: number = wireLimits.partBytesMax, diffTables: ReadonlySet<string> = noTables): WireTableRows[][] {
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
      const b = encodeRow(ts, c.row, diffTables.has(c.table) ? c.old : undefined);
      t.rows.push(b);
      bytes += b.length + 3;
    }
    if (bytes >= partBytesMax) flush();
  }
  flush();
  return parts;
}

const noTables: ReadonlySet<string> = new Set();

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

/**
 * The set at to_revision from the agent's set `had` and a difference [added, removed] (see
 * proto/southbound.proto, TableRows): one merge walk, in the order the member holds the set. A
 * difference that does not fit `had` (a removal of what it lacks, an addition of what it has,
 * lists out of order) is a WireError.
 */
function applySetDifference(table: string, column: ColumnSchema, had: readonly Atom[], added: readonly unknown[], removed: readonly unknown[]): Atom[] {
  const bad = (what: string): never => {
    throw new WireError(`${table}.${column.name}: a set difference ${what}`);
  };
  for (const list of [added, removed]) {
    for (let k = 0; k < list.length; k++) {
      if (!atomOk(column, list[k], true)) bad('holds a value not of its type');
      if (k > 0 && compareAtoms(list[k - 1] as Atom, list[k] as Atom) >= 0) bad('is not in ascending order');
    }
  }
  // The usual difference is a member or two of a large set: a copy of the set, then a binary
  // search and a splice per value, instead of comparing every member.
  if ((added.length + removed.length) * SPLICE_RATIO_MAX < had.length) {
    const has = (x: Atom): boolean => {
      const i = lowerBound(had, x);
      return i < had.length && compareAtoms(had[i] as Atom, x) === 0;
    };
    for (const x of removed) if (!has(x as Atom)) bad('removes a value the set does not have');
    for (const y of added) if (has(y as Atom)) bad('adds a value the set has');
    // One copy of the final length (ovsdb/datum.ts, withEdits): at a position, the insertion
    // before the removal.
    const edits: [number, Atom | undefined][] = [
      ...added.map((y) => [lowerBound(had, y as Atom), y as Atom] as [number, Atom]),
      ...removed.map((x) => [lowerBound(had, x as Atom), undefined] as [number, undefined]),
    ].sort((p, q) => p[0] - q[0] || (p[1] === undefined ? 1 : 0) - (q[1] === undefined ? 1 : 0));
    const out = withEdits(had, edits);
    if (out.length > column.type.max) bad(`leaves more than ${column.type.max} values`);
    return out;
  }
  const out: Atom[] = [];
  let i = 0;
  let a = 0;
  let r = 0;
  while (i < had.length || a < added.length) {
    const x = had[i];
    const y = added[a] as Atom | undefined;
    if (y === undefined || (x !== undefined && compareAtoms(x, y) < 0)) {
      const gone = r < removed.length && compareAtoms(removed[r] as Atom, x as Atom) === 0;
      if (gone) r++;
      else if (r < removed.length && compareAtoms(removed[r] as Atom, x as Atom) < 0) bad('removes a value the set does not have');
      else out.push(x as Atom);
      i++;
    } else if (x === undefined || compareAtoms(x, y) > 0) {
      out.push(y);
      a++;
    } else {
      bad('adds a value the set has');
    }
  }
  if (r < removed.length) bad('removes a value the set does not have');
  if (out.length > column.type.max) bad(`leaves more than ${column.type.max} values`);
  return out;
}

/** Below one value of a difference per this many members of the set, it is applied by splicing. */
const SPLICE_RATIO_MAX = 16;

/** Whether a raw value is a set difference: two arrays (a set's atoms are never arrays). */
function isDifference(raw: unknown): raw is [unknown[], unknown[]] {
  return Array.isArray(raw) && raw.length === 2 && Array.isArray(raw[0]) && Array.isArray(raw[1]);
}

/** The error for a value not of its column's type (a function of its own: decodeValue runs for every column of every row, and a closure made per call was over a quarter of what decoding allocated). */
function notOfItsType(table: string, column: ColumnSchema): never {
  throw new WireError(`${table}.${column.name}: not a value of its type`);
}

function decodeValue(table: string, column: ColumnSchema, raw: unknown, had?: Row, diffs?: Map<string, SetDiff>): Value {
  switch (column.type.kind) {
    case 'scalar':
      return atomOk(column, raw, true) ? raw : notOfItsType(table, column);
    case 'set': {
      if (isDifference(raw) && isDiffable(column)) {
        if (had === undefined) throw new WireError(`${table}.${column.name}: a set difference for a row the agent does not hold`);
        const value = applySetDifference(table, column, had[column.name] as readonly Atom[], raw[0], raw[1]);
        diffs?.set(column.name, { added: raw[0] as Atom[], removed: raw[1] as Atom[] });
        return value;
      }
      if (!Array.isArray(raw) || raw.length > column.type.max) return notOfItsType(table, column);
      for (const a of raw) if (!atomOk(column, a, true)) notOfItsType(table, column);
      return raw as Atom[];
    }
    case 'map': {
      if (!Array.isArray(raw) || raw.length !== 2) return notOfItsType(table, column);
      const [keys, values] = raw as [unknown, unknown];
      if (!Array.isArray(keys) || !Array.isArray(values) || keys.length !== values.length || keys.length > column.type.max) return notOfItsType(table, column);
      for (let i = 0; i < keys.length; i++) if (!atomOk(column, keys[i], true) || !atomOk(column, values[i], false)) notOfItsType(table, column);
      // As the member's rows hold them (ovsdb/datum.ts): a Map's hash table costs about 190
      // bytes whatever it holds, and most map columns of an agent's rows (a logical flow's tags
      // and external_ids, a port's options) hold none, one or two entries.
      if (keys.length === 0) return emptyMap;
      if (keys.length === 1) return new SmallMap(keys[0] as Atom, values[0] as Atom);
      if (keys.length === 2 && compareAtoms(keys[0] as Atom, keys[1] as Atom) < 0) return new SmallMap(keys[0] as Atom, values[0] as Atom, keys[1] as Atom, values[1] as Atom);
      const m = new Map<Atom, Atom>();
      for (let i = 0; i < keys.length; i++) m.set(keys[i] as Atom, values[i] as Atom);
      return m;
    }
  }
}

/** What a set difference added to and removed from one column (both ascending). */
export interface SetDiff {
  readonly added: readonly Atom[];
  readonly removed: readonly Atom[];
}

/**
 * A row decoded with set differences: which row it was applied to (the held row) and, by
 * column, what each difference changed. The agent's store, when it still holds exactly that row,
 * reindexes a member set by these instead of comparing the old and new sets again.
 */
export interface RowSetDiffs {
  readonly base: Row;
  readonly columns: ReadonlyMap<string, SetDiff>;
}

/**
 * An object with a row's properties (_uuid, _version, then the columns in the wire's order),
 * all null, that decoded rows are copied from. A row built by adding its columns one by one
 * with computed names turns into a dictionary past a dozen or so (V8 stops giving objects
 * extended by keyed stores a fixed layout): a Port_Binding's 22 columns did, and every read
 * of one of its columns in the flow code was a hash lookup. A copy of an object parsed from
 * JSON has a fixed layout, and setting its existing properties keeps it.
 */
function rowShape(table: string, columns: readonly string[]): Readonly<Record<string, unknown>> {
  const key = `${table}\u0000${columns.join('\u0000')}`;
  let shape = rowShapes.get(key);
  if (shape === undefined) {
    shape = JSON.parse(JSON.stringify(Object.fromEntries(['_uuid', '_version', ...columns].map((c) => [c, null])))) as Record<string, unknown>;
    // One per table and column order: a member sends one order per table, so a full cache
    // means someone is sending orders at random; they get no cache, not unbounded memory.
    if (rowShapes.size < ROW_SHAPES_MAX) rowShapes.set(key, shape);
  }
  return shape;
}

/** Row shapes kept (see rowShape): the SB schema has a few dozen tables. */
const ROW_SHAPES_MAX = 256;
const rowShapes = new Map<string, Readonly<Record<string, unknown>>>();

/** One decoded row change: the row as it is now, or undefined for a removal. */
export interface DecodedChange {
  readonly table: string;
  readonly uuid: string;
  readonly row: Row | undefined;
  readonly diffs?: RowSetDiffs;
}

/** A table's column order as a member sends it, checked against the schema: the columns and the shape of a row. */
interface ColumnOrder {
  readonly names: readonly string[];
  readonly columns: readonly ColumnSchema[];
  readonly shape: Readonly<Record<string, unknown>>;
}

/** By schema, then table: the order last checked (a member sends one order per table, so one entry a table). */
const columnOrders = new WeakMap<DatabaseSchema, Map<string, ColumnOrder>>();

/**
 * The columns a TableRows names, each checked to be the schema's and every column of the table
 * named once (a WireError otherwise). The order checked last for the table is kept, so an
 * entry in the same order as the one before costs a comparison of names and builds nothing.
 */
function columnOrder(schema: DatabaseSchema, tr: WireTableRows): ColumnOrder {
  let orders = columnOrders.get(schema);
  if (orders === undefined) columnOrders.set(schema, (orders = new Map()));
  const last = orders.get(tr.table);
  if (last !== undefined && sameNames(last.names, tr.columns)) return last;
  const ts = schema.tables.get(tr.table);
  if (ts === undefined) throw new WireError(`unknown table ${JSON.stringify(tr.table)}`);
  const columns = tr.columns.map((name) => {
    const c = ts.columns.get(name);
    if (c === undefined) throw new WireError(`unknown column ${tr.table}.${name}`);
    return c;
  });
  const distinct = new Set(tr.columns).size;
  if (distinct !== columns.length || columns.length !== ts.columns.size) {
    throw new WireError(`${tr.table}: the rows name ${columns.length} columns (${distinct} distinct), the schema has ${ts.columns.size}`);
  }
  const order = { names: [...tr.columns], columns, shape: rowShape(tr.table, tr.columns) };
  orders.set(tr.table, order);
  return order;
}

function sameNames(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** The row the agent holds now, for set differences (see decodeTableRows). */
export type HeldRow = (table: string, uuid: string) => Row | undefined;

/**
 * Decodes one TableRows entry against the agent's schema: removals first, then rows (a row
 * listed in both is upserted). Every column of the table must be named; unknown tables and
 * columns are a WireError. A set column given as a difference is applied to the row `held`
 * returns (the agent's row before this entry); without one, it is a WireError.
 */
export function decodeTableRows(schema: DatabaseSchema, tr: WireTableRows, held?: HeldRow): DecodedChange[] {
  const { columns, shape } = columnOrder(schema, tr);
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
    const row = { ...shape } as Record<string, Value>;
    row._uuid = raw[0];
    row._version = raw[1];
    let had: Row | undefined;
    let diffs: Map<string, SetDiff> | undefined;
    for (let i = 0; i < columns.length; i++) {
      const c = columns[i] as ColumnSchema;
      const v: unknown = raw[i + 2];
      if (diffs === undefined && isDiffable(c) && isDifference(v)) {
        had = held?.(tr.table, raw[0] as string);
        diffs = new Map();
      }
      row[c.name] = decodeValue(tr.table, c, v, had, diffs);
    }
    out.push(had !== undefined && diffs !== undefined && diffs.size > 0
      ? { table: tr.table, uuid: raw[0], row: row as Row, diffs: { base: had, columns: diffs } }
      : { table: tr.table, uuid: raw[0], row: row as Row });
  }
  return out;
}
