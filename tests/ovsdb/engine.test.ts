// The transaction engine's own contract beyond RFC results: the delta it reports, garbage
// collection cascades, weak-reference cleanup, indexes kept in step, the storage codec.
// Method: a small schema, hand-written transactions, exact expectations.
import t from 'tap';
import type { Test } from 'tap';
import { Database, dumpDatabaseJson, parseDatabaseSchema, transact, tryTransaction } from '../../ovsdb/index.js';
import type { TransactOutcome } from '../../ovsdb/index.js';
import { decodeDatabase, encodeDatabase } from '../../ovsdb/codec.js';

const schemaJson = {
  name: 'Test',
  version: '1.0.0',
  tables: {
    Switch: {
      isRoot: true,
      indexes: [['name']],
      columns: {
        name: { type: 'string' },
        ports: { type: { key: { type: 'uuid', refTable: 'Port' }, min: 0, max: 'unlimited' } },
        owner: { type: { key: 'string', min: 0, max: 1 } },
      },
    },
    Port: {
      columns: {
        name: { type: 'string' },
        peer: { type: { key: { type: 'uuid', refTable: 'Port', refType: 'weak' }, min: 0, max: 1 } },
        qos: { type: { key: { type: 'uuid', refTable: 'Qos' }, min: 0, max: 1 } },
        options: { type: { key: 'string', value: 'string', min: 0, max: 'unlimited' } },
      },
    },
    Qos: { columns: { rate: { type: { key: { type: 'integer', minInteger: 0 } } } } },
    Group: {
      isRoot: true,
      columns: {
        name: { type: 'string' },
        members: { type: { key: { type: 'uuid', refTable: 'Port', refType: 'weak' }, min: 1, max: 'unlimited' } },
      },
    },
  },
};
const schema = parseDatabaseSchema(schemaJson);

function fresh(): { db: Database; run: (ops: unknown[]) => TransactOutcome } {
  const db = new Database(schema, { secondaryIndexes: [{ table: 'Port', column: 'name' }] });
  let n = 0;
  const newUuid = (): string => `00000000-0000-4000-8000-${(++n).toString(16).padStart(12, '0')}`;
  return { db, run: (ops) => transact(db, ops, { newUuid }) };
}

function committed(t: Test, out: TransactOutcome): Extract<TransactOutcome, { kind: 'committed' }> {
  if (out.kind !== 'committed') t.fail(`expected commit, got ${JSON.stringify(out)}`);
  return out as Extract<TransactOutcome, { kind: 'committed' }>;
}

const sw = (ports: string[]): unknown => ({
  op: 'insert',
  table: 'Switch',
  'uuid-name': 'sw',
  row: { name: 's1', ports: ['set', ports.map((p) => ['named-uuid', p])] },
});
const port = (name: string, extra: Record<string, unknown> = {}): unknown => ({ op: 'insert', table: 'Port', 'uuid-name': name, row: { name, ...extra } });

t.test('delta lists inserts, modifies with changed columns, deletes; sorted by table then uuid', async (t) => {
  const { run } = fresh();
  const a = committed(t, run([sw(['p1', 'p2']), port('p1'), port('p2')]));
  t.same(a.delta.changes.map((c) => [c.kind, c.table]), [['insert', 'Port'], ['insert', 'Port'], ['insert', 'Switch']]);
  const b = committed(t, run([{ op: 'update', table: 'Port', where: [['name', '==', 'p1']], row: { options: ['map', [['k', 'v']]] } }]));
  t.equal(b.delta.changes.length, 1);
  const m = b.delta.changes[0];
  t.equal(m?.kind, 'modify');
  if (m?.kind === 'modify') {
    t.same(m.columns, ['options']);
    t.not(m.old._version, m.new._version, 'a modified row gets a new _version');
  }
  const c = committed(t, run([{ op: 'update', table: 'Port', where: [['name', '==', 'p1']], row: { options: ['map', [['k', 'v']]] } }]));
  t.same(c.delta.changes, [], 'an update to the same values changes nothing');
});

t.test('garbage collection cascades through strong references of non-root rows', async (t) => {
  const { db, run } = fresh();
  committed(t, run([sw(['p1']), port('p1', { qos: ['named-uuid', 'q'] }), { op: 'insert', table: 'Qos', 'uuid-name': 'q', row: { rate: 5 } }]));
  t.equal(db.rows('Qos').size, 1);
  const out = committed(t, run([{ op: 'update', table: 'Switch', where: [], row: { ports: ['set', []] } }]));
  t.same(out.delta.changes.map((c) => [c.kind, c.table]), [['delete', 'Port'], ['delete', 'Qos'], ['modify', 'Switch']]);
  t.equal(db.rows('Port').size, 0);
  t.equal(db.rows('Qos').size, 0);
  t.equal(db.strongRefs.size, 0, 'reference index is empty again');
});

t.test('an inserted non-root row that nothing references is collected at once', async (t) => {
  const { db, run } = fresh();
  const out = committed(t, run([port('lonely')]));
  t.same(out.delta.changes, []);
  t.equal(db.rows('Port').size, 0);
});

t.test('tryTransaction answers as transact would and leaves the database as it was', async (t) => {
  const { db, run } = fresh();
  committed(t, run([sw(['p1']), port('p1')]));
  const before = JSON.stringify(dumpDatabaseJson(db));
  let n = 100;
  const newUuid = (): string => `00000000-0000-4000-8000-${(++n).toString(16).padStart(12, '0')}`;
  const ops = [port('p2'), { op: 'mutate', table: 'Switch', where: [], mutations: [['ports', 'insert', ['set', [['named-uuid', 'p2']]]]] }, { op: 'select', table: 'Port', where: [], columns: ['name'] }];
  const tried = committed(t, tryTransaction(db, ops, { newUuid }));
  t.same(tried.results[2], { rows: [{ name: 'p1' }, { name: 'p2' }] }, 'later operations see the earlier ones');
  t.same(tried.delta.changes.map((c) => [c.kind, c.table]), [['insert', 'Port'], ['modify', 'Switch']], 'the delta is what a commit would write');
  t.equal(JSON.stringify(dumpDatabaseJson(db)), before, 'nothing was written');
  const dangling = tryTransaction(db, [{ op: 'mutate', table: 'Switch', where: [], mutations: [['ports', 'insert', ['set', [['uuid', '00000000-0000-4000-8000-00000000ffff']]]]] }], { newUuid });
  t.equal(dangling.kind, 'failed', 'the checks of the commit step are made');
  t.equal(dangling.kind === 'failed' ? dangling.results.length : 0, 2, "a commit step's error follows the operations' results");
  n = 100;
  t.same(committed(t, transact(db, ops, { newUuid })).results, tried.results, 'transact then gives the same answers');
});

t.test('weak references to deleted rows are removed; a min of 1 then fails the transaction', async (t) => {
  const { db, run } = fresh();
  committed(t, run([sw(['p1', 'p2']), port('p1', { peer: ['named-uuid', 'p2'] }), port('p2'), { op: 'insert', table: 'Group', row: { name: 'g', members: ['named-uuid', 'p2'] } }]));
  const before = JSON.stringify(dumpDatabaseJson(db));
  const p2 = db.lookup('Port', 'name', 'p2')[0]?._uuid as string;
  const fail = run([{ op: 'mutate', table: 'Switch', where: [], mutations: [['ports', 'delete', ['uuid', p2]]] }]);
  t.equal(fail.kind, 'failed');
  if (fail.kind === 'failed') t.equal(fail.error.error, 'constraint violation', 'group members would become empty');
  t.equal(JSON.stringify(dumpDatabaseJson(db)), before, 'failed transaction changed nothing');
  const ok = committed(t, run([
    { op: 'mutate', table: 'Switch', where: [], mutations: [['ports', 'delete', ['uuid', p2]]] },
    { op: 'delete', table: 'Group', where: [] },
  ]));
  t.same(ok.delta.changes.map((c) => [c.kind, c.table]).sort(), [['delete', 'Group'], ['delete', 'Port'], ['modify', 'Port'], ['modify', 'Switch']].sort());
  const p1 = db.lookup('Port', 'name', 'p1')[0];
  t.same(p1?.peer, [], 'p1.peer no longer points at the deleted p2');
});

t.test('unique index: swapping two names in one transaction is allowed, a duplicate is not', async (t) => {
  const { db, run } = fresh();
  committed(t, run([{ op: 'insert', table: 'Switch', row: { name: 'a' } }, { op: 'insert', table: 'Switch', row: { name: 'b' } }]));
  committed(t, run([
    { op: 'update', table: 'Switch', where: [['name', '==', 'a']], row: { name: 'tmp' } },
    { op: 'update', table: 'Switch', where: [['name', '==', 'b']], row: { name: 'a' } },
    { op: 'update', table: 'Switch', where: [['name', '==', 'tmp']], row: { name: 'b' } },
  ]));
  t.equal(db.findUnique('Switch', ['name'], ['a'])?.name, 'a');
  const dup = run([{ op: 'insert', table: 'Switch', row: { name: 'a' } }]);
  t.equal(dup.kind, 'failed');
  if (dup.kind === 'failed') t.same(dup.error.error, 'constraint violation');
});

t.test('unique index: a row that keeps its key still refuses another row taking it', async (t) => {
  const { db, run } = fresh();
  committed(t, run([{ op: 'insert', table: 'Switch', row: { name: 'a' } }, { op: 'insert', table: 'Switch', row: { name: 'b' } }]));
  const refused = (ops: unknown[], what: string): void => {
    const out = run(ops);
    t.equal(out.kind, 'failed', what);
    if (out.kind === 'failed') t.equal(out.error.error, 'constraint violation', what);
  };
  const keep = { op: 'update', table: 'Switch', where: [['name', '==', 'a']], row: { owner: 'x' } };
  const before = JSON.stringify(dumpDatabaseJson(db));
  refused([keep, { op: 'update', table: 'Switch', where: [['name', '==', 'b']], row: { name: 'a' } }], 'kept, then taken by an update');
  refused([{ op: 'update', table: 'Switch', where: [['name', '==', 'b']], row: { name: 'a' } }, keep], 'taken by an update, then kept');
  refused([keep, { op: 'insert', table: 'Switch', row: { name: 'a' } }], 'kept, then taken by an insert');
  refused([{ op: 'update', table: 'Switch', where: [['name', '==', 'a']], row: { name: 'a', owner: 'y' } }, { op: 'insert', table: 'Switch', row: { name: 'a' } }], 'set to the same value, then taken');
  t.equal(JSON.stringify(dumpDatabaseJson(db)), before, 'nothing changed');
  const out = run([keep]);
  committed(t, out);
  if (out.kind === 'committed') t.same(out.delta.changes.map((c) => c.kind === 'modify' ? c.columns : c.kind), [['owner']], 'the kept key is not among the changed columns');
  committed(t, run([keep, { op: 'update', table: 'Switch', where: [['name', '==', 'b']], row: { name: 'c' } }, { op: 'insert', table: 'Switch', row: { name: 'b' } }]));
  t.same([...db.rows('Switch').values()].map((r) => r.name).sort(), ['a', 'b', 'c'], 'a key given up is free to take in the same transaction');
});

t.test('wait: timeout 0 fails at once, no timeout blocks, a later change satisfies it', async (t) => {
  const { run } = fresh();
  const wait = (timeout?: number): unknown => ({ op: 'wait', ...(timeout === undefined ? {} : { timeout }), table: 'Switch', where: [], columns: ['name'], until: '==', rows: [{ name: 'x' }] });
  const a = run([wait(0)]);
  t.equal(a.kind, 'failed');
  if (a.kind === 'failed') t.equal(a.error.error, 'timed out');
  t.same(run([wait()]), { kind: 'blocked', timeoutMs: Infinity });
  t.same(run([wait(500)]), { kind: 'blocked', timeoutMs: 500 });
  committed(t, run([{ op: 'insert', table: 'Switch', row: { name: 'x' } }]));
  t.equal(run([wait()]).kind, 'committed');
});

t.test('codec: an empty table is left out, so a schema without it (a previous build\'s) reads the bytes', async (t) => {
  const { db, run } = fresh();
  committed(t, run([sw([])]));
  const bytes = encodeDatabase(db);
  // The schema of a build before the Group table.
  const { Group: _group, ...older } = schemaJson.tables;
  const fewer = parseDatabaseSchema({ ...schemaJson, tables: older });
  const copy = decodeDatabase(fewer, bytes);
  t.same([...copy.rows('Switch').values()], [...db.rows('Switch').values()], 'the rows as they were');
  committed(t, run([{ ...(sw(['p1']) as object), row: { name: 's2', ports: ['set', [['named-uuid', 'p1']]] } }, port('p1'), { op: 'insert', table: 'Group', row: { name: 'g', members: ['named-uuid', 'p1'] } }]));
  t.throws(() => decodeDatabase(fewer, encodeDatabase(db)), 'a table with rows is not left out');
});

t.test('codec round trip: same rows, same indexes, same bytes', async (t) => {
  const { db, run } = fresh();
  committed(t, run([sw(['p1', 'p2']), port('p1', { options: ['map', [['a', '1'], ['b', '2']]], peer: ['named-uuid', 'p2'] }), port('p2')]));
  const bytes = encodeDatabase(db);
  const copy = decodeDatabase(schema, bytes, { secondaryIndexes: [{ table: 'Port', column: 'name' }] });
  t.same(dumpDatabaseJson(copy), dumpDatabaseJson(db));
  t.same(Buffer.from(encodeDatabase(copy)), Buffer.from(bytes));
  t.equal(copy.lookup('Port', 'name', 'p1').length, 1);
  t.same([...copy.strongRefs.keys()].sort(), [...db.strongRefs.keys()].sort());
  t.same([...copy.weakRefs.keys()], [...db.weakRefs.keys()]);
});
