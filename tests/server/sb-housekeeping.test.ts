// The leader's SB housekeeping (server/sb-housekeeping.ts): which MAC bindings expire when and
// which chassis rows are stale, by hand-built views; the driver's scheduling with fake timers;
// and an in-process 3-member cluster where the leader deletes expired and stale rows through the
// log, every member ends with the same rows, and a new leader takes over after the old one stops.
import t from 'tap';
import type { Row } from '../../ovsdb/index.js';
import type { TransactOutcome } from '../../server/central-node.js';
import { optionUint } from '../../northd/nb.js';
import { SbHousekeeping, agingOps, housekeepingLimits, macBindingAgingPlan, startSbHousekeeping, staleOps, staleRows } from '../../server/sb-housekeeping.js';
import { startCentralCluster } from '../helpers/central-cluster.js';
import { FakeTimers, settle } from '../helpers/fake-timers.js';
import { testdirAfterTeardowns } from '../helpers/testdir.js';

const NOW = 1_700_000_000_000;

/** A view: routers by NB UUID with their options, their SB datapaths, a switch, and MAC bindings. */
function views(routers: Record<string, Record<string, string>>, bindings: readonly { uuid: string; dp: string; timestamp: number }[], global: Record<string, string> = {}): {
  nbRows: (table: string) => ReadonlyMap<string, Row>;
  sbRows: (table: string) => ReadonlyMap<string, Row>;
  bindings: Map<string, Row>;
} {
  const nb = new Map<string, Map<string, Row>>([
    ['Logical_Router', new Map(Object.entries(routers).map(([uuid, options]) => [uuid, { _uuid: uuid, _version: '', options: new Map(Object.entries(options)) } as Row]))],
    ['NB_Global', new Map([['g', { _uuid: 'g', _version: '', options: new Map(Object.entries(global)) } as Row]])],
  ]);
  const dps = new Map<string, Row>(Object.keys(routers).map((lr, i) => [`dp-${lr}`, { _uuid: `dp-${lr}`, _version: '', tunnel_key: i + 1, external_ids: new Map([['logical-router', lr]]) } as Row]));
  dps.set('dp-sw', { _uuid: 'dp-sw', _version: '', tunnel_key: 100, external_ids: new Map([['logical-switch', 'sw']]) } as Row);
  // A port on every datapath, which the bindings name.
  const pbs = new Map<string, Row>([...dps.keys()].map((dp) => [`pb-${dp}`, { _uuid: `pb-${dp}`, _version: '', logical_port: `p-${dp}`, datapath: dp, tunnel_key: 1 } as Row]));
  const mbs = new Map<string, Row>(bindings.map((b) => [b.uuid, { _uuid: b.uuid, _version: '', logical_port: `p-${b.dp}`, datapath: b.dp, timestamp: b.timestamp } as Row]));
  const sb = new Map<string, Map<string, Row>>([['Datapath_Binding', dps], ['Port_Binding', pbs], ['MAC_Binding', mbs]]);
  return { nbRows: (table) => nb.get(table) ?? new Map(), sbRows: (table) => sb.get(table) ?? new Map(), bindings: mbs };
}

t.test('optionUint reads an unsigned int as smap_get_uint does', async (t) => {
  const o = new Map([['a', '300'], ['b', ' 12'], ['c', '-5'], ['d', '12s'], ['e', ''], ['f', '4294967296'], ['g', '+7']]);
  t.same(['a', 'b', 'c', 'd', 'e', 'f', 'g', 'none'].map((k) => optionUint(o, k, 0)), [300, 12, 0, 0, 0, 0, 7, 0]);
});

t.test('the plan: expired rows oldest first, the next look at the earliest expiry', async (t) => {
  const v = views({ lr1: { mac_binding_age_threshold: '60' }, lr2: {}, lr3: { mac_binding_age_threshold: 'soon' } }, [
    { uuid: 'old', dp: 'dp-lr1', timestamp: NOW - 3_600_000 },
    { uuid: 'due', dp: 'dp-lr1', timestamp: NOW - 60_000 },
    { uuid: 'young', dp: 'dp-lr1', timestamp: NOW - 45_000 },
    { uuid: 'younger', dp: 'dp-lr1', timestamp: NOW - 10_000 },
    { uuid: 'future', dp: 'dp-lr1', timestamp: NOW + 10_000 },
    { uuid: 'no-threshold', dp: 'dp-lr2', timestamp: 0 },
    { uuid: 'bad-threshold', dp: 'dp-lr3', timestamp: 0 },
    { uuid: 'switch', dp: 'dp-sw', timestamp: 0 },
  ]);
  const plan = macBindingAgingPlan(v.nbRows, v.sbRows, NOW, 0);
  t.same(plan.expired.map((e) => e.uuid), ['old', 'due'], 'expired at or past the threshold, oldest first');
  t.equal(plan.nextMs, 15_000, 'the next look when "young" expires');
  t.equal(macBindingAgingPlan(v.nbRows, v.sbRows, NOW + 45_000, 0).nextMs, 5_000, 'then when "younger" does');
  t.equal(macBindingAgingPlan(v.nbRows, v.sbRows, NOW + 55_000, 0).nextMs, 15_000, 'a timestamp ahead of the clock: a threshold after it');
  t.same(macBindingAgingPlan(v.nbRows, v.sbRows, NOW + 15_000, 0).expired.map((e) => e.uuid), ['old', 'due', 'young']);
  t.same(agingOps(plan.expired.slice(0, 1)), [{ op: 'delete', table: 'MAC_Binding', where: [['_uuid', '==', ['uuid', 'old']], ['timestamp', '==', NOW - 3_600_000]] }], 'each delete names the timestamp it expired with');
  const none = views({ lr1: { mac_binding_age_threshold: '0' } }, [{ uuid: 'x', dp: 'dp-lr1', timestamp: 0 }]);
  t.same(macBindingAgingPlan(none.nbRows, none.sbRows, NOW, 0), { expired: [], nextMs: undefined }, 'a threshold of 0 ages nothing');
});

t.test('the plan under mac_binding_removal_limit, and our own cap per transaction', async (t) => {
  const rows = Array.from({ length: 5 }, (_, i) => ({ uuid: `r${i}`, dp: 'dp-lr1', timestamp: NOW - 100_000 - i }));
  const v = views({ lr1: { mac_binding_age_threshold: '1' } }, rows);
  const limited = macBindingAgingPlan(v.nbRows, v.sbRows, NOW, 2);
  t.same(limited.expired.map((e) => e.uuid), ['r4', 'r3'], 'the two oldest');
  t.equal(limited.nextMs, housekeepingLimits.removalDelayMs, 'the rest after the delay');
  t.equal(macBindingAgingPlan(v.nbRows, v.sbRows, NOW, 5).nextMs, housekeepingLimits.removalDelayMs, 'exactly the limit: the delay too (ovn-northd cannot tell)');
  t.equal(macBindingAgingPlan(v.nbRows, v.sbRows, NOW, 6).nextMs, undefined, 'under the limit: nothing left');
  const many = Array.from({ length: housekeepingLimits.rowsPerTxnMax + 3 }, (_, i) => ({ uuid: `m${String(i).padStart(5, '0')}`, dp: 'dp-lr1', timestamp: NOW - 100_000 }));
  const capped = macBindingAgingPlan(views({ lr1: { mac_binding_age_threshold: '1' } }, many).nbRows, views({ lr1: { mac_binding_age_threshold: '1' } }, many).sbRows, NOW, 0);
  t.equal(capped.expired.length, housekeepingLimits.rowsPerTxnMax, 'without a limit, at most rowsPerTxnMax a transaction');
  t.equal(capped.nextMs, 0, 'and the rest at once');
});

t.test('stale rows: MAC bindings, FDB entries and IGMP groups whose datapath or port is gone', async (t) => {
  const tables = new Map<string, Map<string, Row>>();
  const put = (table: string, row: Record<string, unknown>): void => {
    let m = tables.get(table);
    if (m === undefined) tables.set(table, (m = new Map()));
    m.set(row['_uuid'] as string, { _version: '', ...row } as Row);
  };
  put('Datapath_Binding', { _uuid: 'dp1', tunnel_key: 1 });
  put('Datapath_Binding', { _uuid: 'dp2', tunnel_key: 2 });
  put('Port_Binding', { _uuid: 'pb1', logical_port: 'vm1', datapath: 'dp1', tunnel_key: 5 });
  put('Port_Binding', { _uuid: 'pb2', logical_port: 'vm2', datapath: 'dp2', tunnel_key: 6 });
  put('MAC_Binding', { _uuid: 'm-ok', logical_port: 'vm1', datapath: 'dp1' });
  put('MAC_Binding', { _uuid: 'm-port-gone', logical_port: 'vm9', datapath: 'dp1' });
  put('MAC_Binding', { _uuid: 'm-dp-gone', logical_port: 'vm1', datapath: 'dp9' });
  put('FDB', { _uuid: 'f-ok', dp_key: 1, port_key: 5 });
  put('FDB', { _uuid: 'f-port-key', dp_key: 1, port_key: 6 });
  put('FDB', { _uuid: 'f-dp-key', dp_key: 9, port_key: 5 });
  put('IGMP_Group', { _uuid: 'g-ok', datapath: ['dp2'] });
  put('IGMP_Group', { _uuid: 'g-none', datapath: [] });
  put('IGMP_Group', { _uuid: 'g-gone', datapath: ['dp9'] });
  const rows = (table: string): ReadonlyMap<string, Row> => tables.get(table) ?? new Map();
  t.same(staleRows(rows).map((r) => `${r.table} ${r.uuid}`), [
    'MAC_Binding m-dp-gone', 'MAC_Binding m-port-gone', 'FDB f-dp-key', 'FDB f-port-key', 'IGMP_Group g-gone', 'IGMP_Group g-none',
  ], 'each table\'s stale rows, in UUID order; vm2\'s key 6 is not a port of dp1');
  t.equal(staleRows(rows, 2).length, 2, 'bounded');
  t.same(staleOps([{ table: 'FDB', uuid: 'f-dp-key' }]), [{ op: 'delete', table: 'FDB', where: [['_uuid', '==', ['uuid', 'f-dp-key']]] }]);
});

t.test('with none of the chassis rows, the looks read no bindings and no routers', async (t) => {
  // Each look follows a change to the port bindings: on a cluster that has no MAC bindings, FDB
  // entries or IGMP groups it must not walk every port binding and datapath to find nothing.
  const v = views({ lr1: { mac_binding_age_threshold: '60' } }, []);
  const read = new Map<string, number>();
  const counted = (rows: (table: string) => ReadonlyMap<string, Row>) => (table: string): ReadonlyMap<string, Row> => {
    const m = rows(table);
    // Reading the size is free; a walk over the rows is what counts.
    return new Proxy(m, {
      get(target, prop) {
        if (prop === 'values' || prop === 'keys' || prop === 'entries' || prop === Symbol.iterator) read.set(table, (read.get(table) ?? 0) + 1);
        const value = Reflect.get(target, prop, target) as unknown;
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
  };
  t.same(staleRows(counted(v.sbRows)), []);
  t.same(macBindingAgingPlan(counted(v.nbRows), counted(v.sbRows), NOW, 0), { expired: [], nextMs: undefined });
  t.same([...read.keys()], [], 'no table walked');
  // One IGMP group: the groups and the datapaths are read, the port bindings still not.
  const sb = (table: string): ReadonlyMap<string, Row> =>
    table === 'IGMP_Group' ? new Map([['g', { _uuid: 'g', _version: '', datapath: ['dp-gone'] } as unknown as Row]]) : v.sbRows(table);
  t.same(staleRows(counted(sb)).map((r) => r.uuid), ['g']);
  t.notOk(read.has('Port_Binding'), 'an IGMP group alone needs no port binding');
  t.ok(read.has('IGMP_Group'));
});

/** A fake target: the view above, a leader flag, transactions applied to the view (or failed). */
function fakeTarget(v: ReturnType<typeof views>): { target: ConstructorParameters<typeof SbHousekeeping>[0]; txns: unknown[][]; leader: { on: boolean }; fail: { next: number } } {
  const txns: unknown[][] = [];
  const leader = { on: true };
  const fail = { next: 0 };
  return {
    txns,
    leader,
    fail,
    target: {
      nbRows: v.nbRows,
      sbRows: v.sbRows,
      isLeader: () => leader.on,
      transact: async (ops): Promise<TransactOutcome> => {
        txns.push(ops);
        if (fail.next > 0) {
          fail.next--;
          return { results: [{ error: 'constraint violation' }], revision: 0, failed: true };
        }
        const results = (ops as { where: [unknown, unknown, [string, string]][] }[]).map((op) => ({ count: v.bindings.delete(op.where[0]?.[2][1] as string) ? 1 : 0 }));
        return { results, revision: 1, failed: false };
      },
    },
  };
}

t.test('the driver: deletes when due, sleeps until the next expiry, only while leading, retries a failure', async (t) => {
  const timers = new FakeTimers();
  let wall = NOW;
  const v = views({ lr1: { mac_binding_age_threshold: '10' } }, [
    { uuid: 'a', dp: 'dp-lr1', timestamp: NOW - 20_000 },
    { uuid: 'b', dp: 'dp-lr1', timestamp: NOW - 4_000 },
  ]);
  const f = fakeTarget(v);
  const aging = new SbHousekeeping(f.target, () => wall, timers);
  aging.changed();
  await timers.advance(housekeepingLimits.settleMs);
  await settle();
  t.same([...v.bindings.keys()], ['b'], 'the expired row went in one transaction');
  t.equal(f.txns.length, 1);
  // Nothing happens before b is due (6 s on); then it goes.
  wall += 5_000;
  await timers.advance(5_000);
  await settle();
  t.equal(f.txns.length, 1, 'no transaction before the next expiry');
  wall += 1_000;
  await timers.advance(1_000);
  await settle();
  t.same([...v.bindings.keys()], [], 'b went when due');
  t.same(aging.stats(), { transactions: 2, removed: 2, staleRemoved: 0, failures: 0, lastError: undefined });
  // A follower does nothing; a failed transaction is tried again after retryMs.
  v.bindings.set('c', { _uuid: 'c', _version: '', logical_port: 'p-dp-lr1', datapath: 'dp-lr1', timestamp: wall - 30_000 } as Row);
  f.leader.on = false;
  aging.changed();
  await timers.advance(1_000);
  await settle();
  t.equal(f.txns.length, 2, 'not leading: no transaction');
  f.leader.on = true;
  f.fail.next = 1;
  aging.changed();
  await timers.advance(housekeepingLimits.settleMs);
  await settle();
  t.equal(f.txns.length, 3, 'tried');
  t.ok(v.bindings.has('c'), 'the failed transaction changed nothing');
  await timers.advance(housekeepingLimits.retryMs);
  await settle();
  t.notOk(v.bindings.has('c'), 'the retry removed it');
  t.match(aging.stats(), { failures: 1, lastError: /constraint violation/ });
  aging.close();
  t.equal(timers.pending, 0, 'closed: no timer left');
});

t.test('three members: the leader ages rows through the log, a refreshed row stays, a new leader takes over', async (t) => {
  const cluster = await startCentralCluster(testdirAfterTeardowns(t));
  const agings = cluster.members.map((m) => startSbHousekeeping(m.central));
  t.teardown(async () => {
    for (const a of agings) a.close();
    await cluster.stop();
  });
  const [a] = cluster.members;
  if (a === undefined) throw new Error('no member');
  await a.client.transact([{ op: 'insert', table: 'NB_Global', row: {} }]);
  await a.client.transact([
    { op: 'insert', table: 'Logical_Router', row: { name: 'lr1', options: ['map', [['mac_binding_age_threshold', '1']]], ports: ['named-uuid', 'p1'] } },
    { op: 'insert', table: 'Logical_Router_Port', 'uuid-name': 'p1', row: { name: 'lr1-p', mac: '00:00:00:00:01:01', networks: '10.0.0.254/24' } },
    { op: 'insert', table: 'Logical_Router', row: { name: 'lr2', ports: ['named-uuid', 'p2'] } },
    { op: 'insert', table: 'Logical_Router_Port', 'uuid-name': 'p2', row: { name: 'lr2-p', mac: '00:00:00:00:01:02', networks: '10.0.1.254/24' } },
  ]);
  const sb = async (table: string, where: unknown[] = []): Promise<Record<string, unknown>[]> => (await a.client.list(table, where, { db: 'OVN_Southbound' })).rows as Record<string, unknown>[];
  const dpOf = async (name: string): Promise<unknown> => (await sb('Datapath_Binding')).find((d) => JSON.stringify(d['external_ids']).includes(`"${name}"`))?.['_uuid'];
  const lr1 = await dpOf('lr1');
  const lr2 = await dpOf('lr2');
  const now = Date.now();
  const mb = (ip: string, dp: unknown, timestamp: number): unknown => ({ op: 'insert', table: 'MAC_Binding', row: { logical_port: dp === lr1 ? 'lr1-p' : 'lr2-p', ip, mac: '00:00:00:00:00:01', datapath: dp, timestamp } });
  const inserted = await a.client.transact([mb('10.0.0.1', lr1, now - 60_000), mb('10.0.0.2', lr1, now), mb('10.0.0.3', lr1, now + 3_600_000), mb('10.0.0.4', lr2, now - 60_000)], 'OVN_Southbound');
  t.equal(inserted.failed, false, 'chassis rows written');
  const ips = async (): Promise<string[]> => (await sb('MAC_Binding')).map((r) => r['ip'] as string).sort();
  const until = async (want: string[], ms: number): Promise<string[]> => {
    const end = Date.now() + ms;
    let got = await ips();
    while (JSON.stringify(got) !== JSON.stringify(want) && Date.now() < end) {
      await new Promise((r) => setTimeout(r, 50));
      got = await ips();
    }
    return got;
  };
  t.same(await until(['10.0.0.2', '10.0.0.3', '10.0.0.4'], 3_000), ['10.0.0.2', '10.0.0.3', '10.0.0.4'], 'the minute-old row on lr1 went; lr2 has no threshold');
  // 10.0.0.2 is refreshed by a chassis whose clock is ahead: it stays a threshold past that.
  await a.client.transact([{ op: 'update', table: 'MAC_Binding', where: [['ip', '==', '10.0.0.2']], row: { timestamp: Date.now() + 1_500 } }], 'OVN_Southbound');
  await new Promise((r) => setTimeout(r, 1_500));
  t.same(await ips(), ['10.0.0.2', '10.0.0.3', '10.0.0.4'], 'the refreshed row is still there after the first threshold');
  t.same(await until(['10.0.0.3', '10.0.0.4'], 4_000), ['10.0.0.3', '10.0.0.4'], 'and goes a threshold after its new timestamp');
  const leaderIndex = cluster.members.findIndex((m) => m.central.node.leadership().role === 'leader');
  const removedByLeader = agings[leaderIndex]?.housekeeping.stats().removed;
  t.equal(removedByLeader, 2, 'the leader removed both');
  t.equal(agings.reduce((n, g, i) => n + (i === leaderIndex ? 0 : g.housekeeping.stats().transactions), 0), 0, 'followers proposed nothing');
  // The leader stops; a row expires under the new one.
  const oldLeader = cluster.members[leaderIndex];
  if (oldLeader === undefined) throw new Error('no leader');
  agings[leaderIndex]?.close();
  await cluster.stopMember(oldLeader);
  const survivor = cluster.members.find((m) => m !== oldLeader);
  if (survivor === undefined) throw new Error('no survivor');
  const ins = await survivor.client.transact([mb('10.0.0.5', lr1, Date.now() - 60_000)], 'OVN_Southbound');
  t.equal(ins.failed, false);
  const end = Date.now() + 8_000;
  let left: string[] = [];
  while (Date.now() < end) {
    left = ((await survivor.client.list('MAC_Binding', [], { db: 'OVN_Southbound' })).rows as Record<string, unknown>[]).map((r) => r['ip'] as string).sort();
    if (!left.includes('10.0.0.5')) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  t.same(left, ['10.0.0.3', '10.0.0.4'], 'the new leader aged the new row');
  // lr2's port goes: its MAC binding is stale, and goes too.
  const del = await survivor.client.transact([
    { op: 'mutate', table: 'Logical_Router', where: [['name', '==', 'lr2']], mutations: [['ports', 'delete', ['set', []]]] },
    { op: 'update', table: 'Logical_Router', where: [['name', '==', 'lr2']], row: { ports: ['set', []] } },
  ]);
  t.equal(del.failed, false);
  const end2 = Date.now() + 5_000;
  while (Date.now() < end2) {
    left = ((await survivor.client.list('MAC_Binding', [], { db: 'OVN_Southbound' })).rows as Record<string, unknown>[]).map((r) => r['ip'] as string).sort();
    if (!left.includes('10.0.0.4')) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  t.same(left, ['10.0.0.3'], 'the binding of a port that is gone went');
});
