// Goal: keep the random transaction generator honest, so the differential test exercises what
// it claims to. Method: run generated NB transactions against a real ovsdb-server alone and
// check each outcome (commit or error name) against what the generator expected, plus coverage.
import t from 'tap';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { NB_SCHEMA_JSON } from '../../ovsdb/schemas/index.js';
import { dumpReal, outcomeOf, realTransact } from '../helpers/differential.js';
import { JsonRpcClient } from '../helpers/jsonrpc-client.js';
import { asciiJson, parseSchemaLite } from '../helpers/ovsdb-json.js';
import { startRealOvsdbServer } from '../helpers/real-ovsdb.js';
import { TxnGenerator } from '../helpers/txn-gen.js';

const LONG = process.env['OVNTS_LONG'] !== undefined;
const OPS = ['insert', 'select', 'update', 'mutate', 'delete', 'wait', 'commit', 'abort', 'comment', 'assert'];
const FUNCTIONS = ['==', '!=', '<', '<=', '>', '>=', 'includes', 'excludes'];
const MUTATORS = ['+=', '-=', '*=', '/=', '%=', 'insert', 'delete'];
const SAFE_STEPS = [
  'insert', 'insert-orphan', 'update-row', 'update-new-row', 'update-broad', 'mutate-row', 'mutate-broad', 'delete-root',
  'delete-child', 'delete-broad', 'insert-delete', 'select', 'wait-row', 'wait-table', 'comment', 'commit',
];

/** Counts op names, condition functions and mutators used by a transaction's ops. */
function countFeatures(ops: readonly unknown[], seen: Map<string, number>): void {
  const bump = (key: string): void => {
    seen.set(key, (seen.get(key) ?? 0) + 1);
  };
  for (const op of ops) {
    if (op === null || typeof op !== 'object' || Array.isArray(op)) continue;
    const o = op as Record<string, unknown>;
    if (typeof o['op'] === 'string') bump(`op ${o['op']}`);
    for (const clause of Array.isArray(o['where']) ? o['where'] : []) if (Array.isArray(clause) && typeof clause[1] === 'string') bump(`function ${clause[1]}`);
    for (const m of Array.isArray(o['mutations']) ? o['mutations'] : []) if (Array.isArray(m) && typeof m[1] === 'string') bump(`mutator ${m[1]}`);
  }
}
const TXNS = Number(process.env['OVNTS_GEN_TXNS'] ?? (LONG ? 3000 : 400));
const SEED = Number(process.env['OVNTS_GEN_SEED'] ?? 20240601);

/** Fault kinds the generator must produce, each with the error ovsdb-server reports for it. */
const EXPECTED_FAULT_ERRORS: Record<string, string> = {
  abort: 'aborted',
  assert: 'not owner',
  'delete-referenced': 'referential integrity violation',
  'dangling-strong': 'referential integrity violation',
  'index-dup': 'constraint violation',
  enum: 'constraint violation',
  range: 'constraint violation',
  length: 'constraint violation',
  'set-size': 'syntax error',
  immutable: 'constraint violation',
  'unknown-table': 'syntax error',
  'unknown-column': 'unknown column',
  'type-error': 'syntax error',
  'duplicate-in-set': 'ovsdb error',
  'max-rows': 'constraint violation',
  'range-error': 'range error',
  'domain-error': 'domain error',
  'wait-fail': 'timed out',
  syntax: 'syntax error',
  'condition-constraint': 'constraint violation',
  'condition-size': 'syntax error',
  'duplicate-uuid': 'duplicate uuid',
  'default-violates': 'constraint violation',
};

t.test('generated NB transactions do what the generator expects on ovsdb-server', async (t) => {
  const schemaJson = NB_SCHEMA_JSON;
  const schema = parseSchemaLite(schemaJson);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ovnts-gen-'));
  // OVNTS_KEEP_DIR keeps the server's folder (database, log) for a post-mortem.
    if (process.env['OVNTS_KEEP_DIR'] !== undefined) t.comment(`ovsdb-server folder kept: ${dir}`);
    else t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const server = await startRealOvsdbServer({ dir, schemaJson });
  t.teardown(() => server.stop());
  const client = await JsonRpcClient.connect({ path: server.socketPath });
  t.teardown(() => client.close());
  t.comment(`seed ${SEED}; ${TXNS} transactions`);

  const gen = new TxnGenerator({ schema, seed: SEED });
  const mismatches: string[] = [];
  const faultErrors = new Map<string, Set<string>>();
  const features = new Map<string, number>();
  let commits = 0;
  let dump = await dumpReal(client, schema.name, schema);
  for (let i = 0; i < TXNS; i++) {
    const txn = gen.next(dump);
    countFeatures(txn.ops, features);
    for (const step of txn.steps) features.set(`step ${step.split(':')[0]}`, (features.get(`step ${step.split(':')[0]}`) ?? 0) + 1);
    const results = await realTransact(client, schema.name, txn.ops);
    const outcome = outcomeOf(results);
    if (outcome.kind === 'commit') commits++;
    const fault = txn.steps.find((s) => s.startsWith('fault:'));
    if (fault !== undefined) {
      const kind = fault.split(':')[1] as string;
      const seen = faultErrors.get(kind) ?? new Set<string>();
      seen.add(outcome.kind === 'commit' ? 'commit' : outcome.error);
      faultErrors.set(kind, seen);
    }
    const expected = txn.expect;
    const matches =
      expected.kind === 'any' ||
      (expected.kind === 'commit' && outcome.kind === 'commit') ||
      (expected.kind === 'error' && outcome.kind === 'error' && outcome.error === expected.error);
    if (!matches && mismatches.length < 10) {
      mismatches.push(
        `#${i} steps=${txn.steps.join(' ')} expected=${asciiJson(expected)} got=${asciiJson(outcome)}\n` +
          `  ops=${asciiJson(txn.ops).slice(0, 3000)}\n  results=${asciiJson(results).slice(0, 1500)}`,
      );
    }
    dump = await dumpReal(client, schema.name, schema);
  }

  t.same(mismatches, [], `generator expectations hold (replay: OVNTS_GEN_SEED=${SEED} OVNTS_GEN_TXNS=${TXNS} npx tap ${path.relative(process.cwd(), import.meta.filename ?? '')})`);
  const commitShare = commits / TXNS;
  t.ok(commitShare > 0.35 && commitShare < 0.9, `a healthy mix of commits and failures (commit share ${commitShare.toFixed(2)})`);
  for (const [kind, error] of Object.entries(EXPECTED_FAULT_ERRORS)) {
    t.ok(faultErrors.get(kind)?.has(error), `fault "${kind}" was generated and failed with "${error}" (saw ${JSON.stringify([...(faultErrors.get(kind) ?? [])])})`);
  }
  const expectedFeatures = [...OPS.map((o) => `op ${o}`), ...FUNCTIONS.map((f) => `function ${f}`), ...MUTATORS.map((m) => `mutator ${m}`), ...SAFE_STEPS.map((s) => `step ${s}`)];
  t.same(expectedFeatures.filter((f) => (features.get(f) ?? 0) === 0), [], 'every operation, condition function, mutator and step kind was generated');
  t.comment(`coverage: ${JSON.stringify(Object.fromEntries([...features].sort()))}`);
  const rowCount = Object.values(dump).reduce((n, rows) => n + Object.keys(rows).length, 0);
  t.ok(rowCount > 20, `the database grew (${rowCount} rows at the end)`);
});
