// Binary encoding of a whole database for storage (Raft snapshots), with msgpackr. Rows are
// written as arrays in schema column order, maps as [keys, values] pairs, so the bytes depend
// only on the data: the same database always encodes to the same bytes.
import assert from 'node:assert/strict';
import { Packr } from 'msgpackr';
import type { Atom } from './atom.js';
import type { Row, Value } from './datum.js';
import { emptyMap, emptySet } from './datum.js';
import type { DbDelta, DatabaseOptions } from './database.js';
import { Database, insertChange } from './database.js';
import type { ColumnSchema, DatabaseSchema } from './schema.js';

const packr = new Packr({ useRecords: false, mapsAsObjects: false, variableMapSize: true });

const formatVersion = 1;

/**
 * [format, database name, schema version, [[table name, rows]...]], each row
 * [uuid, version, ...values in schema column order]. Arrays only, so no decoder option
 * changes what comes back.
 */
type EncodedDatabase = [number, string, string, [string, unknown[][]][]];

function encodeValue(column: ColumnSchema, v: Value): unknown {
  if (column.type.kind !== 'map') return v;
  const m = v as ReadonlyMap<Atom, Atom>;
  return [[...m.keys()], [...m.values()]];
}

function decodeValue(column: ColumnSchema, raw: unknown): Value {
  switch (column.type.kind) {
    case 'scalar':
      return raw as Atom;
    case 'set':
      return (raw as Atom[]).length === 0 ? emptySet : (raw as Atom[]);
    case 'map': {
      const [keys, values] = raw as [Atom[], Atom[]];
      return keys.length === 0 ? emptyMap : new Map(keys.map((k, i) => [k, values[i] as Atom]));
    }
  }
}

/**
 * Encodes every row of the database; tables in sorted order, rows in the table's own order
 * (the order of first insertion). That order is part of the state: a transaction's scans
 * visit rows in it and draw new _version values as they go, so a decoded copy must keep it
 * or it would give rows other versions than replicas that never went through a snapshot.
 */
export function encodeDatabase(db: Database): Uint8Array {
  const tables: [string, unknown[][]][] = [];
  for (const name of [...db.tables.keys()].sort()) {
    const t = db.table(name);
    // An empty table is left out (decoding gives it no rows either): a schema gaining a table
    // keeps its encoding while the table is empty, so a previous build still reads it.
    if (t.rows.size === 0) continue;
    const columns = [...t.schema.columns.values()];
    const rows: unknown[][] = [];
    for (const row of t.rows.values()) {
      rows.push([row._uuid, row._version, ...columns.map((c) => encodeValue(c, row[c.name] as Value))]);
    }
    tables.push([name, rows]);
  }
  const out: EncodedDatabase = [formatVersion, db.schema.name, db.schema.version, tables];
  return packr.pack(out);
}

/** msgpack's header of an array of `n` elements (fixarray, array 16 or array 32). */
export function msgpackArrayHeader(n: number): Uint8Array {
  assert.ok(Number.isInteger(n) && n >= 0 && n <= 0xffffffff, `msgpack array of ${n} elements`);
  if (n < 16) return Uint8Array.of(0x90 | n);
  if (n <= 0xffff) return Uint8Array.of(0xdc, n >> 8, n & 0xff);
  return Uint8Array.of(0xdd, n >>> 24, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff);
}

/** msgpack's header of a byte string of `n` bytes (bin 8, bin 16 or bin 32). */
export function msgpackBinHeader(n: number): Uint8Array {
  assert.ok(Number.isInteger(n) && n >= 0 && n <= 0xffffffff, `msgpack bin of ${n} bytes`);
  if (n <= 0xff) return Uint8Array.of(0xc4, n);
  if (n <= 0xffff) return Uint8Array.of(0xc5, n >> 8, n & 0xff);
  return Uint8Array.of(0xc6, n >>> 24, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff);
}

/**
 * An encoding produced piece by piece rather than held whole. Its size is found by a pass of
 * its own that yields every few rows, so that a caller on the event loop can let other work
 * run between steps; pieces() may be called once measure() has run to completion.
 */
export interface EncodingStream {
  /** Measures the encoding, yielding after every `rowsPerStep` rows; returns its size in bytes. */
  measure(rowsPerStep: number): Generator<void, number>;
  /** The encoding in order, in pieces of at least `pieceBytes` but the last (a row is never split). */
  pieces(pieceBytes: number): Generator<Uint8Array>;
}

/** Runs a measuring pass to completion at once (for callers off the event loop's hot path). */
export function measureNow(stream: EncodingStream): number {
  const steps = stream.measure(Number.MAX_SAFE_INTEGER);
  for (;;) {
    const r = steps.next();
    if (r.done === true) return r.value;
  }
}

/** Gathers small parts into pieces of at least `pieceBytes` (the last may be shorter). */
export function* gatherPieces(parts: Iterable<Uint8Array>, pieceBytes: number): Generator<Uint8Array> {
  let held: Uint8Array[] = [];
  let heldBytes = 0;
  for (const part of parts) {
    held.push(part);
    heldBytes += part.byteLength;
    if (heldBytes >= pieceBytes) {
      yield Buffer.concat(held, heldBytes);
      held = [];
      heldBytes = 0;
    }
  }
  if (heldBytes > 0) yield Buffer.concat(held, heldBytes);
}

/**
 * encodeDatabase's bytes, exactly, without holding them. The rows are captured now, one
 * reference each: a commit replaces a row object and never changes one (Row is readonly), so
 * the captured rows stay this moment's state while the database moves on. msgpack is
 * compositional for what a row holds (numbers, strings, booleans, arrays), so rows packed one
 * at a time concatenate to what packing the whole gives. Memory: one reference per row, and
 * one piece.
 */
export function streamDatabase(db: Database): EncodingStream {
  // Empty tables are left out, as encodeDatabase leaves them out.
  const tables = [...db.tables.keys()].sort().filter((name) => db.table(name).rows.size > 0).map((name) => {
    const t = db.table(name);
    return { name, columns: [...t.schema.columns.values()], rows: [...t.rows.values()] };
  });
  const packRow = (columns: readonly ColumnSchema[], row: Row): Uint8Array => packr.pack([row._uuid, row._version, ...columns.map((c) => encodeValue(c, row[c.name] as Value))]);
  const head = (): Uint8Array[] => [msgpackArrayHeader(4), packr.pack(formatVersion), packr.pack(db.schema.name), packr.pack(db.schema.version), msgpackArrayHeader(tables.length)];
  const tableHead = (t: (typeof tables)[number]): Uint8Array[] => [msgpackArrayHeader(2), packr.pack(t.name), msgpackArrayHeader(t.rows.length)];
  function* parts(): Generator<Uint8Array> {
    yield* head();
    for (const t of tables) {
      yield* tableHead(t);
      for (const row of t.rows) yield packRow(t.columns, row);
    }
  }
  return {
    *measure(rowsPerStep) {
      let bytes = 0;
      let rows = 0;
      for (const part of head()) bytes += part.byteLength;
      for (const t of tables) {
        for (const part of tableHead(t)) bytes += part.byteLength;
        for (const row of t.rows) {
          bytes += packRow(t.columns, row).byteLength;
          if (++rows % rowsPerStep === 0) yield;
        }
      }
      return bytes;
    },
    pieces: (pieceBytes) => gatherPieces(parts(), pieceBytes),
  };
}

/** Rebuilds a database (rows and every index) from encodeDatabase's bytes. */
export function decodeDatabase(schema: DatabaseSchema, bytes: Uint8Array, options: DatabaseOptions = {}): Database {
  const [format, dbName, , tables] = packr.unpack(bytes) as EncodedDatabase;
  assert.equal(format, formatVersion, `unknown database encoding format ${format}`);
  assert.equal(dbName, schema.name, `snapshot is of database ${dbName}, not ${schema.name}`);
  const db = new Database(schema, options);
  const changes = [];
  for (const [name, rows] of tables) {
    const t = db.table(name);
    const columns = [...t.schema.columns.values()];
    for (const r of rows) {
      const row: Record<string, Value> = { _uuid: r[0] as string, _version: r[1] as string };
      columns.forEach((c, i) => (row[c.name] = decodeValue(c, r[i + 2])));
      changes.push(insertChange(name, row as Row));
    }
  }
  const delta: DbDelta = { changes };
  db.commitChanges(delta);
  return db;
}
