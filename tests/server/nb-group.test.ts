// Group commit of NB transactions: an nb-group entry applies each transaction on its own (one
// failing or blocked leaves the others committed), projects once, and leaves every replica
// with the same state; concurrent clients of a real cluster are grouped and each hears its
// own outcome, through the leader and through a follower.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { Entry } from '../../cluster/types.js';
import { dumpDatabaseJson, parseDatabaseSchema, type DbDelta } from '../../ovsdb/index.js';
import { NB_SCHEMA_JSON } from '../../ovsdb/schemas/index.js';
import { decodeCommand, encodeCommand, encodeNbGroup, nbTxn } from '../../server/commands.js';
import { NbStateMachine, mergeAllDeltas, type ApplyResult } from '../../server/nb-state-machine.js';
import { NorthdProjection } from '../../server/northd-projection.js';
import { startCentralCluster } from '../helpers/central-cluster.js';

const schema = parseDatabaseSchema(NB_SCHEMA_JSON);
let seedCounter = 1;
const seed = (): [number, number, number, number] => [seedCounter++, 0x9e3779b9, 0x85ebca6b, 0xc2b2ae35];

const lsAdd = (name: string): unknown[] => [{ op: 'insert', table: 'Logical_Switch', row: { name } }];
const lspAdd = (ls: string, name: string): unknown[] => [
  { op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': 'p', row: { name, addresses: '00:00:00:00:00:01 10.0.0.1' } },
  { op: 'mutate', table: 'Logical_Switch', where: [['name', '==', ls]], mutations: [['ports', 'insert', ['named-uuid', 'p']]] },
];
/** Fails at apply: the comment succeeds, the abort makes the whole transaction a no-op. */
const aborted = (name: string): unknown[] => [...lsAdd(name), { op: 'abort' }];
/** Blocked: waits for a switch that does not exist (timeout 0 would fail; none blocks). */
const blocked = (): unknown[] => [{ op: 'wait', table: 'Logical_Switch', where: [['name', '==', 'never']], columns: ['name'], until: '==', rows: [{ name: 'never' }] }];

const names = (sm: NbStateMachine): string[] => [...sm.nb.rows('Logical_Switch').values()].map((r) => r.name as string).sort();

t.test('an nb-group applies each transaction on its own and projects once', async (t) => {
  const txns = [lsAdd('a'), aborted('b'), lspAdd('a', 'a-p1'), blocked(), lsAdd('c')];
  const encoded = txns.map((ops) => encodeCommand(nbTxn(ops, seed())));
  const group: Entry = { term: 1, index: 1, type: 'normal', data: encodeNbGroup(encoded) };

  const projected: number[] = [];
  const make = (): NbStateMachine => {
    const projection = new NorthdProjection();
    return new NbStateMachine({ schema, projection, observeProjection: () => projected.push(1) });
  };
  const one = make();
  const events: number[] = [];
  one.onCommit((e) => events.push(e.revision));
  const r = one.apply(group, false);
  t.equal(r.kind, 'group');
  const results = (r as Extract<ApplyResult, { kind: 'group' }>).results;
  t.same(results.map((x) => x.kind), ['committed', 'failed', 'committed', 'blocked', 'committed'], 'each transaction has its own outcome');
  t.ok(results.every((x) => x.revision === 1), 'all at the group entry\'s revision');
  t.same(names(one), ['a', 'c'], 'the aborted transaction changed nothing; the others committed');
  t.equal([...one.nb.rows('Logical_Switch_Port').values()].length, 1, 'the port of a switch created earlier in the same group');
  t.same(events, [1], 'one commit event for the group');
  t.equal(projected.length, 1, 'one projection for the group');

  // The same transactions as separate entries give the same NB (row by row, UUIDs included).
  const separate = new NbStateMachine({ schema, projection: new NorthdProjection() });
  encoded.forEach((data, i) => separate.apply({ term: 1, index: i + 1, type: 'normal', data }, false));
  t.same(dumpDatabaseJson(one.nb), dumpDatabaseJson(separate.nb), 'the NB equals applying them one entry each');

  // Another replica fed the same entry agrees byte for byte, projection state included.
  const two = make();
  two.apply(group, false);
  t.same(Buffer.from(two.snapshot()), Buffer.from(one.snapshot()), 'replicas agree byte for byte');
});

t.test('a malformed nb-group changes nothing', async (t) => {
  t.equal(decodeCommand(encodeNbGroup([])).kind, 'malformed', 'an empty group');
  const sbTxnBytes = encodeCommand({ kind: 'sb-txn', ops: [], seed: seed(), elapsedMs: 0, timestampMs: 0 });
  const mixed = decodeCommand(encodeNbGroup([encodeCommand(nbTxn(lsAdd('x'), seed())), sbTxnBytes]));
  t.equal(mixed.kind, 'malformed', 'an sb-txn inside a group');
  const junk = decodeCommand(encodeNbGroup([encodeCommand(nbTxn(lsAdd('x'), seed())), new Uint8Array([0xc1])]));
  t.match(junk, { kind: 'malformed', reason: /member 1/ }, 'a member that is not msgpack');
  const sm = new NbStateMachine({ schema });
  const r = sm.apply({ term: 1, index: 1, type: 'normal', data: encodeNbGroup([encodeCommand(nbTxn(lsAdd('x'), seed())), sbTxnBytes]) }, false);
  t.equal(r.kind, 'malformed');
  t.same(names(sm), [], 'no member of a malformed group applied');
});

t.test('mergeAllDeltas composes a sequence as mergeDeltas does pairwise', async (t) => {
  const sm = new NbStateMachine({ schema });
  const deltas: DbDelta[] = [];
  sm.onCommit((e) => deltas.push(e.delta));
  let i = 0;
  const apply = (ops: unknown[]): void => void sm.apply({ term: 1, index: ++i, type: 'normal', data: encodeCommand(nbTxn(ops, seed())) }, false);
  apply(lsAdd('s1'));
  apply(lsAdd('s2'));
  apply([{ op: 'update', table: 'Logical_Switch', where: [['name', '==', 's1']], row: { other_config: ['map', [['k', 'v']]] } }]);
  apply([{ op: 'delete', table: 'Logical_Switch', where: [['name', '==', 's2']] }]);
  const merged = mergeAllDeltas(deltas);
  t.same(merged.changes.map((c) => [c.kind, (c.kind === 'delete' ? c.old : c.new).name]), [['insert', 's1']], 's2 inserted then deleted is gone; s1 is one insert of its final image');
  t.same((merged.changes[0] as unknown as { new: { other_config: ReadonlyMap<string, string> } }).new.other_config.get('k'), 'v');
  t.same(mergeAllDeltas([]).changes, []);
  t.equal(mergeAllDeltas([deltas[0]!]), deltas[0], 'one delta is returned as it is');
});

t.test('concurrent clients are grouped and each hears its own outcome', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'nb-group-'));
  const cluster = await startCentralCluster(dir);
  t.teardown(async () => {
    await cluster.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  const leader = cluster.members.find((m) => m.central.node.status().role === 'leader')!;
  const follower = cluster.members.find((m) => m !== leader)!;
  const before = { ...leader.central.nbGroups.counters };
  const outcomes = await Promise.all(
    Array.from({ length: 60 }, (_, k) => {
      const via = k % 3 === 0 ? follower : leader;
      const ops = k % 10 === 7 ? aborted(`g${k}`) : lsAdd(`g${k}`);
      return via.client.transact(ops).then(
        (r) => ({ k, ok: true, r }),
        (err: unknown) => ({ k, ok: false, r: err }),
      );
    }),
  );
  const groups = leader.central.nbGroups.counters.groups - before.groups;
  t.ok(groups > 0, `the leader grouped transactions (${groups} groups, ${leader.central.nbGroups.counters.groupedTxns - before.groupedTxns} transactions)`);
  for (const o of outcomes) {
    const r = o.r as { results?: unknown[] };
    if (o.k % 10 === 7) {
      t.ok(o.ok && (r as { failed?: boolean }).failed === true && JSON.stringify(r.results).includes('aborted'), `aborted transaction ${o.k} reports its own abort`);
    } else {
      t.ok(o.ok && (r.results?.[0] as { uuid?: unknown })?.uuid !== undefined, `transaction ${o.k} committed with its own UUID`);
    }
  }
  const want = Array.from({ length: 60 }, (_, k) => k).filter((k) => k % 10 !== 7).map((k) => `g${k}`).sort();
  const deadline = Date.now() + 10_000;
  for (const m of cluster.members) {
    while (names(m.central.sm).length < want.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    t.same(names(m.central.sm), want, `member ${m.central.node.id} holds exactly the committed switches`);
  }
  const snaps = cluster.members.map((m) => Buffer.from(m.central.sm.snapshot()));
  t.ok(snaps.every((s) => s.equals(snaps[0]!)), 'every member holds the same state, byte for byte');
});
