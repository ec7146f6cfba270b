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
