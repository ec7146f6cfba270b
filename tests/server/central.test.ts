// Three central nodes (Raft on an in-process network, real LevelDB, real gRPC Northbound
// servers on loopback): writes through every node, linearizable and serializable reads,
// watches from scratch and resumed on another replica at the same revision with nothing
// missed or repeated, compaction answered clearly, bad requests refused without change.
import * as grpc from '@grpc/grpc-js';
import t from 'tap';
import type { CentralCluster, CentralMember } from '../helpers/central-cluster.js';
import { startCentralCluster } from '../helpers/central-cluster.js';
import { testdirAfterTeardowns } from '../helpers/testdir.js';

type Member = CentralMember;
const startCluster = (dir: string, history?: { revisionsMax: number; bytesMax: number }): Promise<CentralCluster> => startCentralCluster(dir, history ? { history } : {});

const lsAdd = (name: string): unknown[] => [{ op: 'insert', table: 'Logical_Switch', row: { name } }];

t.test('writes through every node; linearizable and serializable reads', async (t) => {
  const { members, stop } = await startCluster(testdirAfterTeardowns(t));
  t.teardown(stop);
  for (let i = 0; i < 30; i++) {
    const m = members[i % 3] as Member;
    const out = await m.client.transact(lsAdd(`ls${i}`));
    t.equal(out.failed, false, `write ${i} through node ${m.central.id}`);
  }
  for (const m of members) {
    const { rows } = await m.client.list('Logical_Switch', [], { columns: ['name'] });
    t.equal(rows.length, 30, `node ${m.central.id} sees every acknowledged write (linearizable)`);
  }
  const local = await (members[2] as Member).client.list('Logical_Switch', [['name', '==', 'ls0']], { consistency: 'serializable' });
  t.ok(local.rows.length <= 1, 'a serializable read answers from local state');
  const failed = await (members[1] as Member).client.transact([{ op: 'insert', table: 'Logical_Switch_Port', row: { name: 'p', tag: 99999 } }]);
  t.equal(failed.failed, true);
  t.match(failed.results[0], { error: 'constraint violation' });
});

t.test('a write through a follower is answered once that follower has applied it', async (t) => {
  const { members, network, stop } = await startCluster(testdirAfterTeardowns(t));
  t.teardown(stop);
  const leader = members.find((m) => m.central.node.status().role === 'leader') as Member;
  const followers = members.filter((m) => m !== leader);
  for (let i = 0; i < 20; i++) {
    const f = followers[i % followers.length] as Member;
    const out = await f.client.transact(lsAdd(`ryw${i}`));
    t.ok(f.central.revision >= out.revision, `write ${i}: follower ${f.central.id} has applied revision ${out.revision} when it answers`);
    const local = await f.client.list('Logical_Switch', [['name', '==', `ryw${i}`]], { consistency: 'serializable' });
    t.equal(local.rows.length, 1, `write ${i}: a serializable read on the same follower sees it`);
  }
  // A follower cut off from the leader's log still forwards (over gRPC) and the write commits
  // with the other follower; its answer waits until the Raft link heals and it has applied.
  const [f, g] = followers as [Member, Member];
  network.partition(leader.central.id, f.central.id);
  let answered = false;
  const pending = f.client.transact(lsAdd('cut-off')).then((out) => {
    answered = true;
    return out;
  });
  const committed = Date.now() + 5000;
  while ((await g.client.list('Logical_Switch', [['name', '==', 'cut-off']], { consistency: 'serializable' })).rows.length === 0 && Date.now() < committed) await new Promise((r) => setTimeout(r, 10));
  await new Promise((r) => setTimeout(r, 200));
  t.equal(answered, false, 'committed by the leader and the other follower, but not answered while this follower lacks it');
  network.heal();
  const out = await pending;
  t.equal(out.failed, false);
  t.ok(f.central.revision >= out.revision, 'answered once the follower has applied it');
});

t.test('selects and comments are answered without a log entry, and see every acknowledged write', async (t) => {
  const { members, stop } = await startCluster(testdirAfterTeardowns(t));
  t.teardown(stop);
  const leader = members.find((m) => m.central.node.status().role === 'leader') as Member;
  const follower = members.find((m) => m !== leader) as Member;
  await leader.client.transact(lsAdd('seen'));
  const index = leader.central.node.status().commit;
  // Through a follower, right after a write through the leader: linearizable, so it is seen.
  const ops = [{ op: 'comment', comment: 'hello' }, { op: 'select', table: 'Logical_Switch', where: [['name', '==', 'seen']], columns: ['name'] }];
  for (let i = 0; i < 20; i++) {
    await leader.client.transact(lsAdd(`w${i}`));
    const out = await follower.client.transact([...ops.slice(0, 1), { op: 'select', table: 'Logical_Switch', where: [['name', '==', `w${i}`]], columns: ['name'] }]);
    t.same(out.results, [{}, { rows: [{ name: `w${i}` }] }], `read-only transaction ${i} sees the write acknowledged just before`);
  }
  const before = leader.central.node.status().commit;
  const huge = Array.from({ length: 50_000 }, () => ({ op: 'comment', comment: 'c' }));
  const out = await follower.client.transact([...huge, ...ops.slice(1)]);
  t.equal(out.failed, false);
  t.same(out.results.at(-1), { rows: [{ name: 'seen' }] });
  t.equal(leader.central.node.status().commit, before, 'no log entry for 50,000 comments and a select');
  t.ok(before > index, 'writes still go through the log');
  const mixed = await follower.client.transact([{ op: 'comment', comment: 'x' }, ...lsAdd('mixed')]);
  t.equal(mixed.failed, false);
  t.ok(leader.central.node.status().commit > before, 'a comment beside a write is logged with it');
});

t.test('bad requests get clear errors and change nothing', async (t) => {
  const { members, stop } = await startCluster(testdirAfterTeardowns(t));
  t.teardown(stop);
  const c = (members[0] as Member).client;
  await c.transact(lsAdd('keep'));
  const before = JSON.stringify((await c.list('Logical_Switch')).rows);
  const refused = await c.transact([{ op: 'insert', table: 'Nope', row: {} }]);
  t.equal(refused.failed, true, 'unknown table: refused before the log');
  await t.rejects(c.transact('not-json-array' as unknown as unknown[]), { code: grpc.status.INVALID_ARGUMENT });
  await t.rejects(c.list('Nope'), { code: grpc.status.INVALID_ARGUMENT });
  await t.rejects(c.list('Logical_Switch', [['name', 'like', 'x']]), { code: grpc.status.INVALID_ARGUMENT });
  t.equal(JSON.stringify((await c.list('Logical_Switch')).rows), before);
});

t.test('watch: initial state, live changes, resume on another replica, compaction', async (t) => {
  const { members, stop } = await startCluster(testdirAfterTeardowns(t), { revisionsMax: 5, bytesMax: 1 << 30 });
  t.teardown(stop);
  const [a, b] = members as [Member, Member, Member];
  await a.client.transact(lsAdd('before'));
  const events: { revision: number; names: string[]; initial: boolean }[] = [];
  const stream = a.client.watch(['Logical_Switch'], 0);
  const seen = new Promise<void>((resolve, reject) => {
    stream.on('data', (e: { revision: number; changes: { newJson: string }[]; initial: boolean; progress: boolean }) => {
      if (e.progress) return;
      events.push({ revision: Number(e.revision), initial: e.initial, names: e.changes.map((c) => (JSON.parse(c.newJson || '{}') as { name?: string }).name ?? '') });
      if (events.flatMap((x) => x.names).includes('w2')) resolve();
    });
    stream.on('error', (err: grpc.ServiceError) => (err.code === grpc.status.CANCELLED ? undefined : reject(err)));
  });
  for (const n of ['w0', 'w1', 'w2']) await b.client.transact(lsAdd(n));
  await seen;
  stream.cancel();
  t.same(events[0]?.names, ['before'], 'initial state first');
  t.same(events.slice(1).flatMap((e) => e.names), ['w0', 'w1', 'w2'], 'then each change once, in order');
  const revs = events.map((e) => e.revision);
  t.same(revs, [...revs].sort((x, y) => x - y), 'revisions never go backwards');

  // Resume on another replica from the revision after w0.
  const w0rev = events[1]?.revision as number;
  const resumed: string[] = [];
  const s2 = b.client.watch(['Logical_Switch'], w0rev);
  await new Promise<void>((resolve, reject) => {
    s2.on('data', (e: { changes: { newJson: string }[]; progress: boolean }) => {
      if (e.progress) return;
      for (const c of e.changes) resumed.push((JSON.parse(c.newJson) as { name: string }).name);
      if (resumed.length >= 2) resolve();
    });
    s2.on('error', reject);
  });
  s2.cancel();
  t.same(resumed, ['w1', 'w2'], 'resumed on another replica: nothing missed, nothing repeated');

  // Push the first revisions out of the 5-revision history: resuming there is refused clearly.
  for (let i = 0; i < 8; i++) await a.client.transact(lsAdd(`more${i}`));
  const s3 = a.client.watch(['Logical_Switch'], 1);
  const err = await new Promise<grpc.ServiceError>((resolve) => s3.on('error', resolve));
  t.equal(err.code, grpc.status.OUT_OF_RANGE);
  t.match(err.details, /compacted: .*oldest revision to resume from is \d+/);
});

t.test('Wait: returns once sb_cfg/hv_cfg reach the target, on any node; times out clearly', async (t) => {
  const { members, stop } = await startCluster(testdirAfterTeardowns(t));
  t.teardown(stop);
  const [a, b] = members as [Member, Member, Member];
  await a.client.transact([{ op: 'insert', table: 'NB_Global', row: {} }]);
  await t.rejects(b.client.wait(1, 'sb', 200), { code: grpc.status.DEADLINE_EXCEEDED, details: /sb_cfg is 0, not yet 1/ });
  const pending = b.client.wait(1, 'hv', 10_000);
  await a.client.transact([{ op: 'mutate', table: 'NB_Global', where: [], mutations: [['nb_cfg', '+=', 1]] }]);
  t.match(await pending, { nbCfg: 1, hvCfg: 1 }, 'a waiter on another node is released by the commit');
  t.match(await a.client.wait(1, 'sb', 1000), { sbCfg: 1 }, 'a reached target answers at once');
});

t.test('chassis write the SB through any node: register, claim, acknowledge; --wait=hv waits for them', async (t) => {
  const { members, stop } = await startCluster(testdirAfterTeardowns(t));
  t.teardown(stop);
  const [a, b, c] = members as [Member, Member, Member];
  await a.client.transact([{ op: 'insert', table: 'NB_Global', row: {} }]);
  await a.client.transact([
    { op: 'insert', table: 'Logical_Switch', row: { name: 'sw0', ports: ['named-uuid', 'p'] } },
    { op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': 'p', row: { name: 'vm1' } },
  ]);
  const reg = await b.client.transact([
    { op: 'insert', table: 'Encap', 'uuid-name': 'e', row: { type: 'geneve', ip: '192.0.2.1', chassis_name: 'hv1' } },
    { op: 'insert', table: 'Chassis', 'uuid-name': 'c', row: { name: 'hv1', hostname: 'hv1', encaps: ['named-uuid', 'e'] } },
    { op: 'insert', table: 'Chassis_Private', row: { name: 'hv1', chassis: ['named-uuid', 'c'], nb_cfg: 0 } },
  ], 'OVN_Southbound');
  t.equal(reg.failed, false, 'a chassis registers through a follower');
  const chassis = (await c.client.list('Chassis', [], { db: 'OVN_Southbound' })).rows;
  t.match(chassis, [{ name: 'hv1', hostname: 'hv1' }], 'and every node lists it');
  const hv1 = (chassis[0] as { _uuid: [string, string] })._uuid;
  const claim = await c.client.transact([{ op: 'update', table: 'Port_Binding', where: [['logical_port', '==', 'vm1']], row: { chassis: hv1, up: true } }], 'OVN_Southbound');
  t.same(claim.results, [{ count: 1 }]);
  t.match((await a.client.list('Port_Binding', [['logical_port', '==', 'vm1']], { db: 'OVN_Southbound' })).rows, [{ chassis: hv1, up: true }]);
  t.match((await a.client.list('Logical_Switch_Port', [['name', '==', 'vm1']])).rows, [{ up: true }], 'LSP.up follows the binding');
  const denied = await a.client.transact([{ op: 'insert', table: 'Logical_Flow', row: {} }], 'OVN_Southbound');
  t.equal(denied.failed, true);
  t.match(denied.results[0], { error: 'permission error' });

  await a.client.transact([{ op: 'mutate', table: 'NB_Global', where: [], mutations: [['nb_cfg', '+=', 1]] }]);
  t.match(await a.client.wait(1, 'sb', 1000), { sbCfg: 1 }, 'sb_cfg follows at once');
  await t.rejects(b.client.wait(1, 'hv', 300), { code: grpc.status.DEADLINE_EXCEEDED }, 'hv_cfg waits for the chassis');
  const pending = b.client.wait(1, 'hv', 10_000);
  await c.client.transact([{ op: 'update', table: 'Chassis_Private', where: [['name', '==', 'hv1']], row: { nb_cfg: 1, nb_cfg_timestamp: 77 } }], 'OVN_Southbound');
  t.match(await pending, { hvCfg: 1 }, 'released by the acknowledgement');
});

t.test('the SB view feed: per-revision changes of northd and the chassis tables, retained for resume', async (t) => {
  const { members, stop } = await startCluster(testdirAfterTeardowns(t));
  t.teardown(stop);
  const [a, , c] = members as [Member, Member, Member];
  const seen: { revision: number; tables: string[] }[] = [];
  c.central.onSbCommit((e) => seen.push({ revision: e.revision, tables: [...new Set(e.delta.changes.map((x) => x.table))].sort() }));
  const start = c.central.revision;
  const ls = await a.client.transact([
    { op: 'insert', table: 'Logical_Switch', row: { name: 'sw0', ports: ['named-uuid', 'p'] } },
    { op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': 'p', row: { name: 'vm1' } },
  ]);
  const reg = await a.client.transact([
    { op: 'insert', table: 'Encap', 'uuid-name': 'e', row: { type: 'geneve', ip: '192.0.2.1', chassis_name: 'hv1' } },
    { op: 'insert', table: 'Chassis', row: { name: 'hv1', hostname: 'hv1', encaps: ['named-uuid', 'e'] } },
  ], 'OVN_Southbound');
  t.equal(reg.failed, false);
  const hv1 = (await a.client.list('Chassis', [], { db: 'OVN_Southbound' })).rows[0]?._uuid;
  const claim = await a.client.transact([{ op: 'update', table: 'Port_Binding', where: [['logical_port', '==', 'vm1']], row: { chassis: hv1 } }], 'OVN_Southbound');
  while (c.central.revision < claim.revision) await new Promise((r) => setTimeout(r, 10));
  const at = (rev: number): string[] | undefined => seen.find((s) => s.revision === rev)?.tables;
  t.ok(at(ls.revision)?.includes('Datapath_Binding') && at(ls.revision)?.includes('Port_Binding'), `the NB write's SB changes: ${JSON.stringify(at(ls.revision))}`);
  t.same(at(reg.revision), ['Chassis', 'Encap'], 'a chassis registering');
  t.same(at(claim.revision), ['Port_Binding'], 'a claim changes northd\'s Port_Binding');
  const h = c.central.sbHistory.since(start);
  t.equal(h.kind, 'ok');
  t.same(h.kind === 'ok' ? h.items.map((i) => i.revision) : [], seen.map((s) => s.revision), 'the same changes are retained for a resume');
  const view = c.central.sbView();
  t.equal(view.rows('Chassis').size, 1);
  t.equal(view.rows('Port_Binding').size, 1);
  t.equal(view.rows('Logical_Flow').size > 0, true);
});

t.test('Watch on OVN_Southbound: initial rows, a claim as a modify, resume on another replica', async (t) => {
  const { members, stop } = await startCluster(testdirAfterTeardowns(t));
  t.teardown(stop);
  const [a, b, c] = members as [Member, Member, Member];
  const ls = await a.client.transact([
    { op: 'insert', table: 'Logical_Switch', row: { name: 'sw0', ports: ['named-uuid', 'p'] } },
    { op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': 'p', row: { name: 'vm1' } },
  ]);
  // A watch is served from the replica's own applied state, as a monitor on a clustered
  // ovsdb-server follower is: wait until b has applied the write before asking it.
  while (b.central.revision < ls.revision) await new Promise((r) => setTimeout(r, 10));
  type Ev = { revision: number; changes: { table: string; oldJson: string; newJson: string }[]; initial: boolean; progress: boolean };
  const collect = (client: Member['client'], since: number, until: (evs: Ev[]) => boolean): Promise<Ev[]> =>
    new Promise((resolve, reject) => {
      const evs: Ev[] = [];
      const w = client.watch(['Port_Binding', 'Chassis', 'Encap'], since, 'OVN_Southbound');
      w.on('data', (e: Ev) => {
        if (e.progress) return;
        evs.push(e);
        if (until(evs)) {
          w.cancel();
          resolve(evs);
        }
      });
      w.on('error', (err: Error & { code?: number }) => (err.code === grpc.status.CANCELLED ? undefined : reject(err)));
    });
  const initial = await collect(b.client, 0, (evs) => evs.length > 0);
  t.equal(initial[0]?.initial, true);
  t.same(initial[0]?.changes.map((x) => x.table), ['Port_Binding'], 'the initial SB rows of the tables asked for');
  const from = initial[0]?.revision ?? 0;
  const pending = collect(c.client, from, (evs) => evs.some((e) => e.changes.some((x) => x.table === 'Port_Binding')));
  await a.client.transact([
    { op: 'insert', table: 'Encap', 'uuid-name': 'e', row: { type: 'geneve', ip: '192.0.2.1', chassis_name: 'hv1' } },
    { op: 'insert', table: 'Chassis', 'uuid-name': 'c', row: { name: 'hv1', hostname: 'hv1', encaps: ['named-uuid', 'e'] } },
  ], 'OVN_Southbound');
  const hv1 = (await a.client.list('Chassis', [], { db: 'OVN_Southbound' })).rows[0]?._uuid;
  await a.client.transact([{ op: 'update', table: 'Port_Binding', where: [['logical_port', '==', 'vm1']], row: { chassis: hv1 } }], 'OVN_Southbound');
  const evs = await pending;
  t.same(evs.map((e) => e.changes.map((x) => x.table).sort()), [['Chassis', 'Encap'], ['Port_Binding']], 'resumed on another replica: the registration, then the claim');
  const modify = evs[1]?.changes[0];
  t.ok(modify !== undefined && modify.oldJson !== '' && JSON.parse(modify.newJson).chassis !== undefined, 'the claim arrives as a modify with old and new rows');
  const bad = await new Promise<Error>((resolve) => {
    const w = a.client.watch(['Port_Binding'], 0, 'Nope' as never);
    w.on('data', () => undefined);
    w.on('error', resolve);
  });
  t.match(bad, { code: grpc.status.INVALID_ARGUMENT, details: /unknown database/ });
});

t.test('a write still pending when its node stops is answered as of unknown outcome', async (t) => {
  // The node's entry may still be committed by the others after it stops, so a client must not
  // read the answer as "nothing was written" (an OVSDB client has nothing but the words).
  const cluster = await startCluster(testdirAfterTeardowns(t));
  t.teardown(cluster.stop);
  const leader = cluster.members.find((m) => m.central.node.status().role === 'leader') as Member;
  // What a new leader proposes of its own (its apply version, say) first commits: the pending
  // proposal the loop below waits for must be this write's, not one of those (seen under load:
  // the write, still retrying, then met the stopped node and was refused outright).
  await leader.central.transact(lsAdd('settled'), 'OVN_Northbound');
  const settled = Date.now() + 5_000;
  while (leader.central.node.status().proposalsPending > 0) {
    if (Date.now() > settled) throw new Error('the leader\'s own proposals never committed');
    await new Promise((r) => setTimeout(r, 5));
  }
  cluster.network.isolate(leader.central.id);
  const pending = leader.central.transact(lsAdd('pending'), 'OVN_Northbound');
  const caught = pending.catch((err: unknown) => err);
  const deadline = Date.now() + 5_000;
  while (leader.central.node.status().proposalsPending === 0) {
    if (Date.now() > deadline) throw new Error('the write never became a pending proposal');
    await new Promise((r) => setTimeout(r, 5));
  }
  await cluster.stopMember(leader);
  t.match(await caught, { kind: 'unavailable', message: /^the outcome of this transaction is unknown: raft node \d+ stopped/ });
});
