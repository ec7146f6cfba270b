// Goal: our OVSDB engine answers every NB (and SB) transaction exactly as ovsdb-server 3.1 does and
// leaves the same database behind. Method: a real standalone ovsdb-server and our engine get
// the same seeded random transactions (tests/helpers/txn-gen.ts); after each one the reply
// (normalized) and the full contents of both databases must be equal.
//
// Replay one seed: OVNTS_DIFF_SCHEMA=NB OVNTS_DIFF_SEED=<seed> OVNTS_DIFF_TXNS=<n> npm run test:one -- tests/ovsdb/differential.test.ts
// Long run (more seeds, thousands of transactions): OVNTS_LONG=1.
import t from 'tap';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Database, dumpDatabaseJson, parseDatabaseSchema, transact } from '../../ovsdb/index.js';
import { NB_SCHEMA_JSON, SB_SCHEMA_JSON } from '../../ovsdb/schemas/index.js';
import { diffNormalizedDumps, dumpReal, errorDetails, normalizeDump, normalizeResults, outcomeOf, realTransact } from '../helpers/differential.js';
import { JsonRpcClient } from '../helpers/jsonrpc-client.js';
import type { DbDump, Json } from '../helpers/ovsdb-json.js';
import type { SchemaLite } from '../helpers/ovsdb-json.js';
import { asciiJson, canonicalJson, mapPairs, mapUuids, parseSchemaLite, setElements, uuidOf } from '../helpers/ovsdb-json.js';
import { startRealOvsdbServer } from '../helpers/real-ovsdb.js';
import { Rng } from '../helpers/seeded-rng.js';
import { TxnGenerator } from '../helpers/txn-gen.js';

const LONG = process.env['OVNTS_LONG'] !== undefined;
const TXNS = Number(process.env['OVNTS_DIFF_TXNS'] ?? (LONG ? 2500 : 150));
const SCHEMA_NAMES = (process.env['OVNTS_DIFF_SCHEMA'] ?? 'NB,SB').split(',');
const SEEDS: number[] =
  process.env['OVNTS_DIFF_SEED'] !== undefined
    ? [Number(process.env['OVNTS_DIFF_SEED'])]
    : LONG
      ? Array.from({ length: 4 }, () => Math.floor(Math.random() * 0x7fffffff))
      : [1, 2];
const VERBOSE = process.env['OVNTS_DIFF_VERBOSE'] !== undefined;
const TEST_FILE = 'tests/ovsdb/differential.test.ts';
const DIFFS_REPORTED_MAX = 5;

/** NB is the main target; SB gets one seed in the default run (both in long runs). */
const RUNS: { label: string; schemaJson: unknown; seed: number }[] = SCHEMA_NAMES.flatMap((label) => {
  const schemaJson = label === 'SB' ? SB_SCHEMA_JSON : NB_SCHEMA_JSON;
  const seeds = label === 'SB' && process.env['OVNTS_DIFF_SEED'] === undefined && !LONG ? SEEDS.slice(0, 1) : SEEDS;
  return seeds.map((seed) => ({ label, schemaJson, seed }));
});

/** Renames dump keys and UUID atoms from our UUIDs to ovsdb-server's. */
function mapDump(dump: DbDump, map: ReadonlyMap<string, string>): DbDump {
  if (map.size === 0) return dump;
  const out: DbDump = {};
  for (const [table, rows] of Object.entries(dump)) {
    const outRows: DbDump[string] = {};
    for (const [uuid, row] of Object.entries(rows)) outRows[map.get(uuid) ?? uuid] = mapUuids(row, map);
    out[table] = outRows;
  }
  return out;
}

/** Translates UUIDs in the ops (atoms and explicit "uuid" members) from our UUIDs to ovsdb-server's. */
function translateOps(ops: readonly Json[], map: ReadonlyMap<string, string>): Json[] {
  if (map.size === 0) return [...ops];
  return ops.map((op) => {
    const mapped = mapUuids(op, map);
    if (mapped !== null && typeof mapped === 'object' && !Array.isArray(mapped) && typeof mapped['uuid'] === 'string') {
      return { ...mapped, uuid: map.get(mapped['uuid']) ?? mapped['uuid'] };
    }
    return mapped;
  });
}

interface DanglingWeakRef {
  readonly table: string;
  readonly uuid: string;
  readonly column: string;
  /** The mutation that removes the dangling reference(s) from this column. */
  readonly mutation: Json;
}

/**
 * Weak references to rows that do not exist. ovsdb-server 3.1 leaves them behind when the
 * referring row was modified in the same transaction before the referenced row was deleted
 * (assess_weak_refs() queues the removal on a row it has already processed); RFC 7047 and
 * our engine remove them. The test repairs them on the server so both sides stay comparable.
 */
function danglingWeakRefs(schema: SchemaLite, dump: DbDump): DanglingWeakRef[] {
  const out: DanglingWeakRef[] = [];
  const exists = (table: string | undefined, atom: Json): boolean => {
    const u = uuidOf(atom);
    return table === undefined || u === undefined || dump[table]?.[u] !== undefined;
  };
  for (const table of schema.tables.values()) {
    for (const [uuid, row] of Object.entries(dump[table.name] ?? {})) {
      for (const column of table.columns.values()) {
        const { key, value } = column.type;
        const keyWeak = key.refType === 'weak' ? key.refTable : undefined;
        const valueWeak = value?.refType === 'weak' ? value.refTable : undefined;
        if (keyWeak === undefined && valueWeak === undefined) continue;
        const datum = row[column.name] ?? null;
        if (value === undefined) {
          const gone = setElements(datum).filter((a) => !exists(keyWeak, a));
          if (gone.length > 0) out.push({ table: table.name, uuid, column: column.name, mutation: [column.name, 'delete', ['set', gone]] });
        } else {
          const gone = mapPairs(datum).filter(([k, v]) => !exists(keyWeak, k) || !exists(valueWeak, v));
          if (gone.length > 0) out.push({ table: table.name, uuid, column: column.name, mutation: [column.name, 'delete', ['map', gone]] });
        }
      }
    }
  }
  return out;
}

/** The UUID a referential integrity error says a row references and does not exist. */
function danglingTarget(results: readonly Json[]): string | undefined {
  return /references nonexistent row ([0-9a-f-]{36})/.exec(errorDetails(results) ?? '')?.[1];
}

/** A normalized dump without the _version markers. */
function withoutVersions(dump: Record<string, Record<string, Json>>): Record<string, Record<string, Json>> {
  const out: Record<string, Record<string, Json>> = {};
  for (const [table, rows] of Object.entries(dump)) {
    const outRows: Record<string, Json> = {};
    for (const [uuid, row] of Object.entries(rows)) {
      const { _version: _ignored, ...columns } = row as Record<string, Json>;
      outRows[uuid] = columns;
    }
    out[table] = outRows;
  }
  return out;
}

for (const { label, schemaJson, seed } of RUNS) {
  t.test(`${label}: ${TXNS} random transactions, seed ${seed}`, async (t) => {
    const schemaLite = parseSchemaLite(schemaJson);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ovnts-diff-'));
    // OVNTS_KEEP_DIR keeps the server's folder (database, log) for a post-mortem.
    if (process.env['OVNTS_KEEP_DIR'] !== undefined) t.comment(`ovsdb-server folder kept: ${dir}`);
    else t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
    const server = await startRealOvsdbServer({ dir, schemaJson });
    t.teardown(() => server.stop());
    const client = await JsonRpcClient.connect({ path: server.socketPath });
    t.teardown(() => client.close());

    const db = new Database(parseDatabaseSchema(schemaJson));
    const uuidRng = new Rng(seed ^ 0x5eed);
    const newUuid = (): string => uuidRng.uuid();
    // Some inserts carry no "uuid" member; then each side picks its own and we pair them up
    // through the insert results. The generator works with our (seeded, hence reproducible)
    // UUIDs, and the ops are translated for ovsdb-server, whose UUIDs are random.
    const gen = new TxnGenerator({ schema: schemaLite, seed, explicitUuidProbability: 0.85 });
    const oursToReal = new Map<string, string>();
    const realToOurs = new Map<string, string>();

    let realDump = await dumpReal(client, schemaLite.name, schemaLite);
    let prevOurs: DbDump = dumpDatabaseJson(db) as DbDump;
    const outcomes = new Map<string, number>();
    // Differences that leave the two databases equal are collected and reported at the end, so
    // one run shows every kind of disagreement; a difference in contents ends the run.
    const resultDiffs: string[] = [];
    const versionDiffs: string[] = [];
    const note = (list: string[], text: string): void => {
      if (list.length < DIFFS_REPORTED_MAX) list.push(text);
    };
    let completed = 0;
    let ovsdbServerDanglingRefs = 0;
    for (let i = 0; i < TXNS; i++) {
      const txn = gen.next(mapDump(realDump, realToOurs));
      const ourOps = txn.ops;
      const where = `${label} seed ${seed}, transaction #${i}; replay: OVNTS_DIFF_SCHEMA=${label} OVNTS_DIFF_SEED=${seed} OVNTS_DIFF_TXNS=${i + 1} npm run test:one -- ${TEST_FILE}`;
      let realResults: Json[];
      try {
        realResults = await realTransact(client, schemaLite.name, translateOps(ourOps, oursToReal));
      } catch (err) {
        t.fail(`ovsdb-server did not answer (${where}): ${(err as Error).message}`, { diagnostic: true, found: `steps: ${txn.steps.join(' ')}\nops: ${asciiJson(txn.ops)}` });
        break;
      }
      const out = transact(db, ourOps, { newUuid });

      const context = `steps: ${txn.steps.join(' ')}\nops: ${asciiJson(txn.ops)}\novsdb-server: ${asciiJson(realResults)}`;
      if (out.kind === 'blocked') {
        t.fail(`ours blocked where ovsdb-server replied (${where})`, { diagnostic: true, found: context });
        break;
      }

      // Pair up the UUIDs each side chose for inserts without an explicit "uuid".
      const txnMap = new Map(oursToReal);
      ourOps.forEach((op, k) => {
        const ours = uuidOf(((out.results[k] ?? null) as { uuid?: Json } | null)?.uuid ?? null);
        const real = uuidOf(((realResults[k] ?? null) as { uuid?: Json } | null)?.uuid ?? null);
        if (op !== null && typeof op === 'object' && !Array.isArray(op) && op['op'] === 'insert' && ours !== undefined && real !== undefined && ours !== real) {
          txnMap.set(ours, real);
        }
      });
      // An undeclared uuid-name stands for a UUID each side draws for itself (a later select in
      // the same transaction shows it); both name it in the referential integrity error.
      const ourDangling = danglingTarget(out.results as Json[]);
      const realDangling = danglingTarget(realResults);
      if (ourDangling !== undefined && realDangling !== undefined && ourDangling !== realDangling) txnMap.set(ourDangling, realDangling);
      const oursNormalized = normalizeResults(mapUuids(out.results as Json[], txnMap));
      const realNormalized = normalizeResults(realResults);
      const realOutcome = outcomeOf(realResults);
      const key = realOutcome.kind === 'commit' ? 'commit' : realOutcome.error;
      outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
      if (VERBOSE) t.comment(`#${i} ${key} ${txn.steps.join(' ')}`);
      if (canonicalJson(oursNormalized) !== canonicalJson(realNormalized)) {
        note(resultDiffs, `${where}\nours (normalized): ${asciiJson(oursNormalized)}\nreal (normalized): ${asciiJson(realNormalized)}\n${context}`);
      }
      if (out.kind === 'failed') {
        const ourDetails = errorDetails(out.results as Json[]);
        const realDetails = errorDetails(realResults);
        if (VERBOSE && ourDetails !== realDetails) t.comment(`details: ours "${ourDetails}" / ovsdb-server "${realDetails}"`);
      } else if (realOutcome.kind === 'commit') {
        for (const [ours, real] of txnMap) {
          oursToReal.set(ours, real);
          realToOurs.set(real, ours);
        }
      }

      let nextRealDump = await dumpReal(client, schemaLite.name, schemaLite);
      const dangling = danglingWeakRefs(schemaLite, nextRealDump);
      if (dangling.length > 0) {
        // Remove ovsdb-server's leftover weak references (a bug of its own), then compare.
        const repair = await realTransact(
          client,
          schemaLite.name,
          dangling.map((d) => ({ op: 'mutate', table: d.table, where: [['_uuid', '==', ['uuid', d.uuid]]], mutations: [d.mutation] })),
        );
        if (outcomeOf(repair).kind !== 'commit') {
          t.fail(`could not remove ovsdb-server's dangling weak references (${where}): ${asciiJson(repair)}`);
          break;
        }
        ovsdbServerDanglingRefs += dangling.length;
        nextRealDump = await dumpReal(client, schemaLite.name, schemaLite);
      }
      const ourDump = mapDump(dumpDatabaseJson(db) as DbDump, oursToReal);
      const realNorm = normalizeDump(nextRealDump, realDump, schemaLite);
      const oursNorm = normalizeDump(ourDump, prevOurs, schemaLite);
      const contentDiffs = diffNormalizedDumps(withoutVersions(oursNorm), withoutVersions(realNorm));
      if (contentDiffs.length > 0) {
        t.fail(`database contents differ after the transaction (${where})`, {
          diagnostic: true,
          found: `${contentDiffs.join('\n')}\n${context}\nours: ${asciiJson(out.results)}`,
        });
        break;
      }
      const versionDiff = diffNormalizedDumps(oursNorm, realNorm, 3);
      if (versionDiff.length > 0) note(versionDiffs, `${where}\n${versionDiff.join('\n')}\n${context}`);
      prevOurs = ourDump;
      realDump = nextRealDump;
      completed++;
    }
    t.same(resultDiffs, [], "every reply equals ovsdb-server's (normalized)");
    t.same(versionDiffs, [], '_version changes on exactly the rows where ovsdb-server changes it');
    t.comment(`${completed} of ${TXNS} transactions compared: ${asciiJson(Object.fromEntries([...outcomes].sort()))}`);
    if (ovsdbServerDanglingRefs > 0) t.comment(`removed ${ovsdbServerDanglingRefs} dangling weak references ovsdb-server left behind (its bug)`);
    const rows = Object.values(realDump).reduce((n, r) => n + Object.keys(r).length, 0);
    t.ok(completed < TXNS || rows > 10, `the database is not trivial at the end (${rows} rows)`);
  });
}
