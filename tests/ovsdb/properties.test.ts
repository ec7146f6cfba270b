// Goal: engine invariants that need no oracle. Method: seeded random transactions
// (tests/helpers/txn-gen.ts) on our engine alone, over the NB, SB and RFC 7047 test schemas;
// after each one: a failed or blocked transaction leaves the database byte-identical; after a
// commit every schema constraint and referential integrity hold, the delta is exactly the
// difference of the dumps, and the engine's reference indexes (kept by difference on modify)
// equal ones counted afresh from every row; and replaying the same inputs gives the same
// replies and bytes.
import t from 'tap';
import type { Test } from 'tap';
import fs from 'node:fs';
import type { DbDelta, TransactOutcome } from '../../ovsdb/index.js';
import { Database, dumpDatabaseJson, parseDatabaseSchema, rowToJson, transact } from '../../ovsdb/index.js';
import type { Value } from '../../ovsdb/datum.js';
import { forEachRef } from '../../ovsdb/datum.js';
import { NB_SCHEMA_JSON, SB_SCHEMA_JSON } from '../../ovsdb/schemas/index.js';
import { checkInvariants } from '../helpers/ovsdb-invariants.js';
import type { DbDump, Json, JsonRow } from '../helpers/ovsdb-json.js';
import { asciiJson, canonicalJson, parseSchemaLite } from '../helpers/ovsdb-json.js';
import { RFC7047_SCHEMA_PATH } from '../helpers/rfc7047-cases.js';
import { Rng } from '../helpers/seeded-rng.js';
import { TxnGenerator } from '../helpers/txn-gen.js';

const LONG = process.env['OVNTS_LONG'] !== undefined;
const TXNS = Number(process.env['OVNTS_PROP_TXNS'] ?? (LONG ? 3000 : 250));
const SEED = process.env['OVNTS_PROP_SEED'] !== undefined ? Number(process.env['OVNTS_PROP_SEED']) : LONG ? Math.floor(Math.random() * 0x7fffffff) : 42;
const PROBLEMS_REPORTED_MAX = 5;

const SCHEMAS: [string, unknown][] = [
  ['OVN_Northbound', NB_SCHEMA_JSON],
  ['OVN_Southbound', SB_SCHEMA_JSON],
  ['RFC7047Test', JSON.parse(fs.readFileSync(RFC7047_SCHEMA_PATH, 'utf8')) as unknown],
];

interface Step {
  readonly ops: Json[];
  readonly kind: TransactOutcome['kind'];
  readonly results: string;
  readonly dump: string;
}

/** The dump a delta predicts: `before` with every change of `delta` applied. */
function applyDelta(db: Database, before: DbDump, delta: DbDelta): DbDump {
  const out: DbDump = {};
  for (const [table, rows] of Object.entries(before)) out[table] = { ...rows };
  for (const change of delta.changes) {
    const rows = out[change.table] ?? (out[change.table] = {});
    const schema = db.table(change.table).schema;
    if (change.kind === 'delete') delete rows[change.uuid];
    else rows[change.uuid] = rowToJson(schema, change.new) as JsonRow;
  }
  return out;
}

/**
 * The first difference between two dumps, or undefined. Rows are compared as JSON text: both
 * come from rowToJson, so equal rows print identically.
 */
function firstDumpDifference(a: DbDump, b: DbDump): string | undefined {
  for (const table of new Set([...Object.keys(a), ...Object.keys(b)])) {
    const ra = a[table] ?? {};
    const rb = b[table] ?? {};
    const keys = new Set([...Object.keys(ra), ...Object.keys(rb)]);
    for (const uuid of keys) {
      if (JSON.stringify(ra[uuid]) !== JSON.stringify(rb[uuid])) return `${table} ${uuid}`;
    }
  }
  return undefined;
}

/**
 * The first difference between the engine's reference indexes and indexes counted afresh from
 * every row's every reference column, or undefined when they agree.
 */
function refIndexDifference(db: Database): string | undefined {
  const counted = { strong: new Map<string, Map<string, number>>(), weak: new Map<string, Map<string, number>>() };
  for (const t of db.tables.values()) {
    for (const row of t.rows.values()) {
      for (const column of t.schema.refColumns) {
        forEachRef(column.type, row[column.name] as Value, (target, base) => {
          const index = base.refType === 'weak' ? counted.weak : counted.strong;
          let referrers = index.get(target);
          if (referrers === undefined) index.set(target, (referrers = new Map()));
          referrers.set(row._uuid, (referrers.get(row._uuid) ?? 0) + 1);
        });
      }
    }
  }
  for (const [kind, engine] of [['strong', db.strongRefs], ['weak', db.weakRefs]] as const) {
    const fresh = counted[kind];
    const targets = new Set([...engine.keys(), ...fresh.keys()]);
    for (const target of targets) {
      const have = JSON.stringify([...engine.referrers(target)].sort());
      const want = JSON.stringify([...(fresh.get(target) ?? new Map<string, number>())].sort());
      if (have !== want) return `${kind} referrers of ${target}: the index has ${have}, the rows say ${want}`;
    }
  }
  return undefined;
}

/** Runs `count` generated transactions; checks the per-transaction properties as it goes. */
function run(t: Test, name: string, schemaJson: unknown, seed: number, count: number, check: boolean): Step[] {
  const schemaLite = parseSchemaLite(schemaJson);
  const db = new Database(parseDatabaseSchema(schemaJson));
  const uuidRng = new Rng(seed ^ 0x7e57);
  const gen = new TxnGenerator({ schema: schemaLite, seed, explicitUuidProbability: 0.5, blockingWaitWeight: 4 });
  const steps: Step[] = [];
  const problems: string[] = [];
  const report = (text: string): void => {
    if (problems.length < PROBLEMS_REPORTED_MAX) problems.push(text);
  };
  let dump = dumpDatabaseJson(db) as DbDump;
  let bytes = JSON.stringify(dump);
  let broken = new Set<string>();
  const kinds = new Map<string, number>();
  for (let i = 0; i < count; i++) {
    const txn = gen.next(dump);
    const where = `${name} seed ${seed} transaction #${i} (replay: OVNTS_PROP_SEED=${seed} OVNTS_PROP_TXNS=${i + 1})`;
    let out: TransactOutcome;
    try {
      out = transact(db, txn.ops, { newUuid: () => uuidRng.uuid() });
    } catch (err) {
      report(`${where}: transact threw ${(err as Error).stack ?? String(err)}\nops: ${asciiJson(txn.ops)}`);
      break;
    }
    kinds.set(out.kind, (kinds.get(out.kind) ?? 0) + 1);
    const after = dumpDatabaseJson(db) as DbDump;
    const afterBytes = JSON.stringify(after);
    if (check) {
      if (out.kind !== 'committed' && afterBytes !== bytes) {
        report(`${where}: a ${out.kind} transaction changed the database\nops: ${asciiJson(txn.ops).slice(0, 1500)}`);
      }
      if (out.kind === 'committed') {
        // Only newly broken invariants are reported: a bad row would otherwise repeat forever.
        const invariants = checkInvariants(schemaLite, after);
        const fresh = invariants.filter((p) => !broken.has(p));
        broken = new Set(invariants);
        if (fresh.length > 0) report(`${where}: invariants broken by this commit:\n${fresh.slice(0, 5).join('\n')}\nops: ${asciiJson(txn.ops).slice(0, 1500)}`);
        const refs = refIndexDifference(db);
        if (refs !== undefined) report(`${where}: reference index out of step: ${refs}\nops: ${asciiJson(txn.ops).slice(0, 1500)}`);
        const mismatch = firstDumpDifference(applyDelta(db, dump, out.delta), after);
        if (mismatch !== undefined) report(`${where}: the delta does not describe the change (${mismatch})\nops: ${asciiJson(txn.ops).slice(0, 1500)}`);
        for (const change of out.delta.changes) {
          if (change.kind !== 'modify') continue;
          const schema = db.table(change.table).schema;
          const oldJson = rowToJson(schema, change.old) as JsonRow;
          const newJson = rowToJson(schema, change.new) as JsonRow;
          const differing = [...schema.columns.keys()].filter((c) => canonicalJson(oldJson[c] ?? null) !== canonicalJson(newJson[c] ?? null));
          if (canonicalJson([...change.columns].sort()) !== canonicalJson(differing.sort())) {
            report(`${where}: modify of ${change.table} ${change.uuid} lists columns ${asciiJson(change.columns)}, but ${asciiJson(differing)} differ`);
          }
        }
      }
    }
    steps.push({ ops: txn.ops, kind: out.kind, results: out.kind === 'blocked' ? `blocked ${out.timeoutMs}` : JSON.stringify(out.results), dump: afterBytes });
    dump = after;
    bytes = afterBytes;
  }
  if (check) {
    t.same(problems, [], `${name}: failed transactions change nothing; commits keep every invariant; deltas are exact`);
    t.comment(`${name}: ${asciiJson(Object.fromEntries(kinds))}, ${Object.values(dump).reduce((n, r) => n + Object.keys(r).length, 0)} rows at the end`);
    t.ok((kinds.get('committed') ?? 0) > count / 5 && (kinds.get('failed') ?? 0) > count / 10 && (kinds.get('blocked') ?? 0) > 0, `${name}: a mix of commits, failures and blocked waits`);
  }
  return steps;
}

for (const [name, schemaJson] of SCHEMAS) {
  t.test(`${name}: ${TXNS} random transactions, seed ${SEED}`, async (t) => {
    const first = run(t, name, schemaJson, SEED, TXNS, true);
    const again = run(t, name, schemaJson, SEED, TXNS, false);
    const firstDiff = first.findIndex((s, i) => {
      const o = again[i];
      return o === undefined || canonicalJson(s.ops) !== canonicalJson(o.ops) || s.results !== o.results || s.dump !== o.dump;
    });
    t.equal(firstDiff, -1, `${name}: replaying the same inputs gives the same replies and the same bytes${firstDiff >= 0 ? ` (first difference at #${firstDiff})` : ''}`);
    t.equal(again.length, first.length, `${name}: both runs did the same number of transactions`);
  });
}

t.test('the invariant checker catches each kind of broken database', async (t) => {
  const schemaLite = parseSchemaLite(NB_SCHEMA_JSON);
  const db = new Database(parseDatabaseSchema(NB_SCHEMA_JSON));
  const rng = new Rng(3);
  const out = transact(
    db,
    [
      { op: 'insert', table: 'Logical_Switch_Port', row: { name: 'p1' }, 'uuid-name': 'p1' },
      { op: 'insert', table: 'Logical_Switch', row: { name: 'ls', ports: ['named-uuid', 'p1'] }, 'uuid-name': 'ls' },
      { op: 'insert', table: 'ACL', row: { priority: 1, direction: 'to-lport', action: 'drop' }, 'uuid-name': 'acl' },
      { op: 'insert', table: 'Port_Group', row: { name: 'pg', ports: ['named-uuid', 'p1'], acls: ['named-uuid', 'acl'] } },
      { op: 'insert', table: 'Address_Set', row: { name: 'as1' } },
      { op: 'insert', table: 'Address_Set', row: { name: 'as2' } },
    ],
    { newUuid: () => rng.uuid() },
  );
  t.equal(out.kind, 'committed', 'the setup commits');
  const good = dumpDatabaseJson(db) as DbDump;
  t.same(checkInvariants(schemaLite, good), [], 'a consistent database passes');
  const tamper = (edit: (d: DbDump) => void): string[] => {
    const d = JSON.parse(JSON.stringify(good)) as DbDump;
    edit(d);
    return checkInvariants(schemaLite, d);
  };
  const only = (d: DbDump, table: string): [string, JsonRow] => Object.entries(d[table] ?? {})[0] as [string, JsonRow];
  const catches = (edit: (d: DbDump) => void, pattern: RegExp, what: string): void => {
    const problems = tamper(edit);
    t.ok(problems.some((p) => pattern.test(p)), `${what} (${asciiJson(problems.slice(0, 2))})`);
  };
  catches((d) => { d['Logical_Switch_Port'] = {}; }, /strong reference to missing Logical_Switch_Port/, 'a dangling strong reference');
  catches((d) => { only(d, 'Logical_Switch')[1]['ports'] = ['set', []]; }, /non-root row without a strong reference/, 'an orphaned non-root row');
  catches((d) => { only(d, 'ACL')[1]['action'] = 'bogus'; }, /not in its enum/, 'an enum violation');
  catches((d) => { only(d, 'ACL')[1]['priority'] = 40000; }, /above maxInteger/, 'a range violation');
  catches((d) => { for (const row of Object.values(d['Address_Set'] ?? {})) row['name'] = 'same'; }, /share index \[name\]/, 'a unique index violation');
  catches((d) => { const [u, row] = only(d, 'Port_Group'); row['ports'] = ['set', [['uuid', u]]]; }, /weak reference to missing Logical_Switch_Port/, 'a dangling weak reference');
  catches((d) => { d['NB_Global'] = { 'a0000000-0000-4000-8000-000000000001': {}, 'a0000000-0000-4000-8000-000000000002': {} }; }, /maxRows 1/, 'a maxRows violation');
  catches((d) => { only(d, 'ACL')[1]['external_ids'] = ['map', [['k', 'a'], ['k', 'b']]]; }, /repeated element or key/, 'a repeated map key');
  catches((d) => { only(d, 'ACL')[1]['severity'] = ['set', ['info', 'debug']]; }, /outside \[0, 1\]/, 'a set above its max');
});
