// The replicated NB state machine: replicas fed the same log agree byte for byte, failures
// change nothing, snapshots round-trip, malformed requests are refused before the log, and
// history answers resumes or says `compacted`. Method: hand-made entries, then three Raft
// nodes on an in-process network with real LevelDB.
import { join } from 'node:path';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import t from 'tap';
import { LocalNetwork } from '../../cluster/local-transport.js';
import { RaftNode } from '../../cluster/node.js';
import type { Entry } from '../../cluster/types.js';
import { dumpDatabaseJson, parseDatabaseSchema, precheckTransaction } from '../../ovsdb/index.js';
import type { Database, DbDelta, Row } from '../../ovsdb/index.js';
import { NB_SCHEMA_JSON } from '../../ovsdb/schemas/index.js';
import { encodeCommand, nbTxn } from '../../server/commands.js';
import { History, databaseBytes } from '../../server/history.js';
import type { ApplyResult, Projection } from '../../server/nb-state-machine.js';
import { NbStateMachine } from '../../server/nb-state-machine.js';
import { testdirAfterTeardowns } from '../helpers/testdir.js';

const schema = parseDatabaseSchema(NB_SCHEMA_JSON);
let seedCounter = 1;
const seed = (): [number, number, number, number] => [seedCounter++, 0x9e3779b9, 0x85ebca6b, 0xc2b2ae35];
const entry = (index: number, ops: unknown[]): Entry => ({ term: 1, index, type: 'normal', data: encodeCommand(nbTxn(ops, seed())) });

const lsAdd = (name: string): unknown[] => [{ op: 'insert', table: 'Logical_Switch', row: { name } }];
const lspAdd = (ls: string, name: string): unknown[] => [
  { op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': 'p', row: { name, addresses: `00:00:00:00:00:01 10.0.0.1` } },
  { op: 'mutate', table: 'Logical_Switch', where: [['name', '==', ls]], mutations: [['ports', 'insert', ['named-uuid', 'p']]] },
];

class CountingProjection implements Projection {
  applies = 0;
  resets = 0;
  lastRevision = 0;
  apply(_nb: Database, _delta: DbDelta, revision: number): void {
    this.applies++;
    this.lastRevision = revision;
  }
  restored: Uint8Array | undefined;
  reset(_nb: Database, revision: number): void {
    this.resets++;
    this.lastRevision = revision;
  }
  snapshot(): Uint8Array {
    return new Uint8Array([this.applies]);
  }
  restore(_nb: Database, data: Uint8Array | undefined, revision: number): void {
    this.restored = data;
    this.lastRevision = revision;
  }
}

t.test('replicas applying the same entries hold identical databases', async (t) => {
  const entries = [entry(2, lsAdd('sw0')), entry(3, lspAdd('sw0', 'p1')), entry(5, lspAdd('sw0', 'p2')), entry(6, lsAdd('sw1'))];
  const replicas = [0, 1, 2].map(() => new NbStateMachine({ schema }));
  for (const r of replicas) for (const e of entries) t.equal(r.apply(e, false).kind, 'committed');
  const dumps = replicas.map((r) => JSON.stringify(dumpDatabaseJson(r.nb)));
  t.equal(new Set(dumps).size, 1, 'byte-identical dumps, including row UUIDs and _version');
  t.same(replicas.map((r) => r.revision), [6, 6, 6]);
});

t.test('a failed transaction is a no-op with an RFC 7047 error; the revision still advances', async (t) => {
  const sm = new NbStateMachine({ schema });
  sm.apply(entry(1, lsAdd('sw0')), false);
  const before = JSON.stringify(dumpDatabaseJson(sm.nb));
  const r = sm.apply(entry(2, [{ op: 'insert', table: 'Logical_Switch_Port', row: { name: 'x', tag: 9999 } }]), false) as Extract<ApplyResult, { kind: 'failed' }>;
  t.equal(r.kind, 'failed');
  t.match(r.results[0], { error: 'constraint violation' });
  t.equal(JSON.stringify(dumpDatabaseJson(sm.nb)), before);
  t.equal(sm.revision, 2);
  t.equal(sm.apply({ term: 1, index: 3, type: 'normal', data: new Uint8Array([1, 2, 3]) }, false).kind, 'malformed', 'garbage in the log is reported, not thrown');
  t.equal(sm.apply(entry(4, lsAdd('sw1')), true).kind, 'duplicate', 'a duplicate entry changes nothing');
  t.equal(sm.nb.rows('Logical_Switch').size, 1);
});

t.test('snapshot and restore: same database, same revision, projection reset', async (t) => {
  const proj = new CountingProjection();
  const a = new NbStateMachine({ schema, projection: proj });
  a.apply(entry(1, lsAdd('sw0')), false);
  a.apply(entry(2, lspAdd('sw0', 'p1')), false);
  t.equal(proj.applies, 2);
  const b = new NbStateMachine({ schema, projection: proj });
  b.restore(a.snapshot());
  t.equal(b.revision, 2);
  t.same(dumpDatabaseJson(b.nb), dumpDatabaseJson(a.nb));
  t.equal(proj.lastRevision, 2);
  t.ok(proj.resets >= 2);
  t.same(proj.restored, new Uint8Array([2]), 'the projection gets back the bytes it put in the snapshot');
  const plain = new NbStateMachine({ schema });
  plain.restore(a.snapshot());
  t.same(dumpDatabaseJson(plain.nb), dumpDatabaseJson(a.nb), 'a state machine without a projection ignores its state');
});

t.test('a restored replica keeps row order, so a scan gives rows the same new _versions', async (t) => {
  const a = new NbStateMachine({ schema });
  // Inserted in an order unlike their UUIDs' sorted order (seeds differ per entry).
  for (let i = 1; i <= 6; i++) a.apply(entry(i, lsAdd(`sw${i}`)), false);
  const b = new NbStateMachine({ schema });
  b.restore(a.snapshot());
  const touchAll = entry(7, [{ op: 'update', table: 'Logical_Switch', where: [], row: { other_config: ['map', [['k', 'v']]] } }]);
  a.apply(touchAll, false);
  b.apply(touchAll, false);
  t.equal(JSON.stringify(dumpDatabaseJson(b.nb)), JSON.stringify(dumpDatabaseJson(a.nb)));
});

t.test('precheck refuses malformed transactions before they reach the log', async (t) => {
  const bad: [string, unknown[]][] = [
    ['unknown table', [{ op: 'insert', table: 'Nope', row: {} }]],
    ['unknown column', [{ op: 'insert', table: 'Logical_Switch', row: { nope: 1 } }]],
    ['wrong type', [{ op: 'insert', table: 'Logical_Switch', row: { name: 5 } }]],
    ['out of range', [{ op: 'update', table: 'Logical_Switch_Port', where: [], row: { tag: 0 } }]],
    ['unknown op', [{ op: 'frobnicate' }]],
    ['bad where', [{ op: 'delete', table: 'ACL', where: [['priority', 'like', 1]] }]],
  ];
  for (const [what, ops] of bad) {
    const r = precheckTransaction(schema, ops);
    t.ok(r !== undefined && r.kind === 'failed', `${what}: refused`);
  }
  t.equal(precheckTransaction(schema, lspAdd('sw0', 'p1')), undefined, 'a valid transaction passes');
  t.equal(precheckTransaction(schema, [{ op: 'delete', table: 'Logical_Switch', where: [['_uuid', '==', ['uuid', '6f1a2b3c-0000-4000-8000-000000000001']]] }]), undefined, 'state-dependent outcomes are left to apply');
});

t.test('history: resume after a revision, compaction by count and by bytes', async (t) => {
  const h = new History({ revisionsMax: 3, bytesMax: 1 << 30 });
  const d = (n: number): DbDelta => ({ changes: Array.from({ length: n }, () => ({ kind: 'delete', table: 'T', uuid: 'u', old: { _uuid: 'u', _version: 'v' } })) });
  for (let r = 1; r <= 5; r++) h.append(r * 10, d(1));
  const s = h.since(30);
  t.same(s.kind === 'ok' ? s.items.map((i) => i.revision) : s, [40, 50]);
  const s20 = h.since(20);
  t.same(s20.kind === 'ok' ? s20.items.map((i) => i.revision) : s20, [30, 40, 50], 'the oldest retained revision is still a valid resume point');
  t.same(h.since(50), { kind: 'ok', items: [] }, 'nothing after the newest');
  t.same(h.since(10), { kind: 'compacted', minRevision: 20 });
  const hb = new History({ revisionsMax: 1000, bytesMax: 2000 });
  for (let r = 1; r <= 10; r++) hb.append(r, d(5));
  t.ok(hb.retainedBytes <= 2000, 'bytes bounded');
  t.ok(hb.size < 10 && hb.size >= 1);
  t.equal(hb.since(0).kind, 'compacted');
  hb.reset(100);
  t.same(hb.since(100), { kind: 'ok', items: [] });
  t.equal(hb.since(99).kind, 'compacted');
});

t.test('history: a dropped revision\'s changes are no longer reachable from the history', async (t) => {
  v8.setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const h = new History({ revisionsMax: 2, bytesMax: 1 << 30 });
  // Appended from a function of its own, so no variable of this test keeps the delta alive.
  const appendFirst = (): WeakRef<DbDelta> => {
    const first: DbDelta = { changes: [{ kind: 'insert', table: 'T', uuid: 'u0', new: { _uuid: 'u0', _version: 'v' } }] };
    h.append(1, first);
    return new WeakRef(first);
  };
  const firstRef = appendFirst();
  for (let r = 2; r <= 4; r++) h.append(r, { changes: [] });
  t.equal(h.since(0).kind, 'compacted', 'revision 1 was dropped');
  // Dropped slots are cut from the array only past 1024 of them: before that they must be empty.
  await new Promise((r) => setImmediate(r));
  gc();
  t.equal(firstRef.deref(), undefined, 'and its delta was collected');
});

t.test('history: with floorBytes, the byte bound follows the database\'s size', async (t) => {
  const row = (u: string, payload: string): Row => ({ _uuid: u, _version: payload.length.toString(), name: payload });
  const db = new Map<string, Row>();
  // A database of 100 rows, then the same rows modified over and over: the history keeps about
  // the database's size of changes, not bytesMax.
  const h = new History({ revisionsMax: 1_000_000, bytesMax: 1 << 30, floorBytes: 1000 });
  h.reset(0, databaseBytes([db]));
  let rev = 0;
  for (let i = 0; i < 100; i++) {
    const r = row(`u${i}`, 'x'.repeat(100));
    db.set(r._uuid, r);
    h.append(++rev, { changes: [{ kind: 'insert', table: 'T', uuid: r._uuid, new: r }] });
  }
  const size = databaseBytes([db]);
  t.ok(h.bytesBound === size, `the bound is the database's estimated size (${h.bytesBound} = ${size})`);
  for (let k = 0; k < 20; k++) {
    for (let i = 0; i < 100; i++) {
      const old = db.get(`u${i}`) as Row;
      const r = row(`u${i}`, 'y'.repeat(100 + (k % 2)));
      db.set(r._uuid, r);
      h.append(++rev, { changes: [{ kind: 'modify', table: 'T', uuid: r._uuid, old, new: r, columns: ['name'] }] });
      t.ok(h.retainedBytes <= Math.max(h.bytesBound, 0) || h.size === 1, 'never more than the bound');
    }
  }
  t.equal(h.bytesBound, databaseBytes([db]), 'the running estimate equals a fresh count after 2,000 modifications');
  t.ok(h.retainedBytes <= databaseBytes([db]) && h.retainedBytes > databaseBytes([db]) / 2, `${h.retainedBytes} bytes retained for a ${databaseBytes([db])}-byte database`);
  t.equal(h.since(rev - 10).kind, 'ok', 'recent revisions resume');
  t.equal(h.since(100).kind, 'compacted', 'the first inserts are gone');
  // Deleting rows shrinks the bound down to the floor, never below.
  for (let i = 0; i < 100; i++) {
    const old = db.get(`u${i}`) as Row;
    db.delete(old._uuid);
    h.append(++rev, { changes: [{ kind: 'delete', table: 'T', uuid: old._uuid, old }] });
  }
  t.equal(h.bytesBound, 1000, 'an empty database: the floor');
  t.ok(h.retainedBytes <= 1000, 'retained within the floor');
  // Without floorBytes the bound is bytesMax whatever the database holds.
  t.equal(new History({ revisionsMax: 10, bytesMax: 5000 }).bytesBound, 5000);
  // A reset takes the new baseline.
  h.reset(rev, 123_456);
  t.equal(h.bytesBound, 123_456, 'the baseline given at reset');
});

t.test('history: with databasePercent, the byte bound is that share of the database\'s size', async (t) => {
  const h = new History({ revisionsMax: 1_000_000, bytesMax: 1 << 30, floorBytes: 1000, databasePercent: 25 });
  h.reset(0, 100_000);
  t.equal(h.bytesBound, 25_000, 'a quarter of the baseline');
  let rev = 0;
  for (let i = 0; i < 2000; i++) {
    const r: Row = { _uuid: `u${i}`, _version: 'v', name: 'x'.repeat(100) };
    h.append(++rev, { changes: [{ kind: 'insert', table: 'T', uuid: r._uuid, new: r }] });
    t.ok(h.retainedBytes <= h.bytesBound || h.size === 1, 'never more than the bound');
  }
  t.ok(h.bytesBound > 25_000 && h.retainedBytes > h.bytesBound / 2, `the bound grew with the database (${h.bytesBound}), and the history with it (${h.retainedBytes})`);
  t.equal(h.since(rev - 10).kind, 'ok', 'recent revisions resume');
  t.equal(h.since(0).kind, 'compacted', 'the first inserts are gone');
  h.reset(rev, 100);
  t.equal(h.bytesBound, 1000, 'a small database: the floor');
  t.equal(new History({ revisionsMax: 10, bytesMax: 10_000, floorBytes: 1000, databasePercent: 25 }).bytesBound, 1000);
  const big = new History({ revisionsMax: 10, bytesMax: 10_000, floorBytes: 1000, databasePercent: 25 });
  big.reset(0, 1_000_000);
  t.equal(big.bytesBound, 10_000, 'never above bytesMax');
});

t.test('three Raft nodes replicate NB transactions to identical databases', async (t) => {
  const net = new LocalNetwork('nb-test');
  const ids = [1, 2, 3];
  const peers = new Map(ids.map((id) => [id, `local:${id}`]));
  const sms = ids.map(() => new NbStateMachine({ schema }));
  const dir = testdirAfterTeardowns(t);
  const nodes = await Promise.all(
    ids.map((id, i) =>
      RaftNode.start({ id, clusterId: 'nb-test', dataDir: join(dir, `node${id}`), transport: net.transport(id), stateMachine: sms[i] as NbStateMachine, peers, bootstrap: ids, tickMs: 10, log: () => undefined }),
    ),
  );
  t.teardown(() => Promise.all(nodes.map((n) => n.stop())));
  let leader: RaftNode | undefined;
  while ((leader = nodes.find((n) => n.status().role === 'leader')) === undefined) await new Promise((r) => setTimeout(r, 10));
  await leader.propose(encodeCommand(nbTxn(lsAdd('sw0'), seed())));
  for (let i = 0; i < 50; i++) {
    const out = await leader.propose(encodeCommand(nbTxn(lspAdd('sw0', `p${i}`), seed())));
    t.equal((out.result as ApplyResult).kind, 'committed');
  }
  const target = leader.status().appliedIndex;
  while (!sms.every((s) => s.revision >= target)) await new Promise((r) => setTimeout(r, 10));
  t.equal(new Set(sms.map((s) => JSON.stringify(dumpDatabaseJson(s.nb)))).size, 1, 'all three replicas agree');
  t.equal(sms[0]?.nb.rows('Logical_Switch_Port').size, 50);
});

t.test('nb_cfg protocol: sb_cfg and hv_cfg follow nb_cfg in the same revision, one merged change', async (t) => {
  const proj = new CountingProjection();
  const sm = new NbStateMachine({ schema, projection: proj });
  const events: { delta: DbDelta }[] = [];
  sm.onCommit((e) => events.push(e));
  sm.apply(entry(1, [{ op: 'insert', table: 'NB_Global', row: {} }]), false);
  const e2: Entry = { term: 1, index: 2, type: 'normal', data: encodeCommand(nbTxn([{ op: 'mutate', table: 'NB_Global', where: [], mutations: [['nb_cfg', '+=', 1]] }], seed(), 0, 1_700_000_000_000)) };
  t.equal(sm.apply(e2, false).kind, 'committed');
  const g = [...sm.nb.rows('NB_Global').values()][0];
  t.match(g, { nb_cfg: 1, sb_cfg: 1, hv_cfg: 1, nb_cfg_timestamp: 1_700_000_000_000, sb_cfg_timestamp: 1_700_000_000_000, hv_cfg_timestamp: 1_700_000_000_000 });
  const last = events.at(-1)?.delta.changes ?? [];
  t.equal(last.length, 1, 'one change for NB_Global, not two');
  t.same(last[0]?.kind === 'modify' ? last[0].columns : [], ['hv_cfg', 'hv_cfg_timestamp', 'nb_cfg', 'nb_cfg_timestamp', 'sb_cfg', 'sb_cfg_timestamp']);
  const plain = new NbStateMachine({ schema });
  plain.apply(entry(1, [{ op: 'insert', table: 'NB_Global', row: { nb_cfg: 5 } }]), false);
  t.equal([...plain.nb.rows('NB_Global').values()][0]?.sb_cfg, 0, 'without a projection nothing derives sb_cfg');
});
