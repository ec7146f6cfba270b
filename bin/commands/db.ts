// `ovnts db`: a standalone OVSDB database in one file, driven like `ovsdb-tool`: create it from
// one of our schemas, run RFC 7047 transactions against it, dump it. The file holds the
// msgpackr snapshot codec's bytes; it is rewritten (to a temp file, fsynced, renamed) after
// every committed transaction, so a crash leaves either the old or the new database.
import { randomUUID } from 'node:crypto';
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import type { Command } from 'commander';
import { decodeDatabase, encodeDatabase } from '../../ovsdb/codec.js';
import { Database, dumpDatabaseJson, parseDatabaseSchema, transact } from '../../ovsdb/index.js';
import type { DatabaseSchema } from '../../ovsdb/index.js';
import { schemaJsonFor } from '../../ovsdb/schemas/index.js';

function writeAtomically(path: string, bytes: Uint8Array): void {
  const tmp = `${path}.tmp`;
  const fd = openSync(tmp, 'w');
  try {
    writeSync(fd, bytes);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
}

const header = 'ovnts-db 1\n';

function save(path: string, schemaName: string, db: Database): void {
  const body = encodeDatabase(db);
  const head = Buffer.from(`${header}${schemaName}\n`);
  writeAtomically(path, Buffer.concat([head, body]));
}

function load(path: string): { db: Database; schema: DatabaseSchema; schemaName: string } {
  const bytes = readFileSync(path);
  const text = bytes.subarray(0, 64).toString('latin1');
  if (!text.startsWith(header)) throw new Error(`${path} is not an ovnts database file`);
  const nl = text.indexOf('\n', header.length);
  const schemaName = text.slice(header.length, nl);
  const schema = parseDatabaseSchema(schemaJsonFor(schemaName));
  return { db: decodeDatabase(schema, bytes.subarray(nl + 1)), schema, schemaName };
}

function readJsonArg(arg: string): unknown {
  const text = arg === '-' ? readFileSync(0, 'utf8') : arg;
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new Error(`transaction is not valid JSON: ${(err as Error).message}`, { cause: err });
  }
}

export function registerDbCommand(program: Command): void {
  const db = program.command('db').description('a standalone OVSDB database file (create, transact, dump)');
  db.command('create')
    .description('create an empty database file from one of our schemas')
    .argument('<file>', 'database file to create')
    .argument('<schema>', 'nb or sb')
    .action((file: string, schemaName: string) => {
      const schema = parseDatabaseSchema(schemaJsonFor(schemaName));
      save(file, schemaName, new Database(schema));
      process.stdout.write(`created ${file} (${schema.name} ${schema.version})\n`);
    });
  db.command('transact')
    .description('run one RFC 7047 transaction (a JSON array: [db-name, op...], or "-" for stdin); prints the result array')
    .argument('<file>', 'database file')
    .argument('<transaction>', 'JSON transaction')
    .action((file: string, txnArg: string) => {
      const { db: database, schema, schemaName } = load(file);
      const params = readJsonArg(txnArg);
      if (!Array.isArray(params) || params[0] !== schema.name) {
        throw new Error(`transaction must be a JSON array whose first element is "${schema.name}"`);
      }
      const out = transact(database, params.slice(1), { newUuid: randomUUID });
      if (out.kind === 'blocked') throw new Error('a "wait" operation is not satisfied and has no timeout; nothing was changed');
      if (out.kind === 'committed' && out.delta.changes.length > 0) save(file, schemaName, database);
      process.stdout.write(JSON.stringify(out.results) + '\n');
      if (out.kind === 'failed') process.exitCode = 1;
    });
  db.command('dump')
    .description('print every row of every non-empty table as JSON')
    .argument('<file>', 'database file')
    .action((file: string) => {
      const dump = dumpDatabaseJson(load(file).db);
      const nonEmpty = Object.fromEntries(Object.entries(dump).filter(([, rows]) => Object.keys(rows).length > 0));
      process.stdout.write(JSON.stringify(nonEmpty, null, 2) + '\n');
    });
}
