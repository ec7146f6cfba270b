// Goal: AgentFlows over the in-memory switch installs exactly the desired flows, sends only the
// difference per update (one batch), reports the logical ports whose flows are installed,
// recovers from a refused batch and a restarted switch by reconciling, installs and removes the
// groups ct_lb needs around the flows that use them; and 500 agents fit in one process, with or
// without a shared compile cache.
// Method: the small topology of flows-fixtures.ts, SB updates by hand, the switch's table compared
// with the engine's.

import t, { type Test } from 'tap';
import { AgentFlows, APPLY_ERRORS_MAX } from '../../agent/flows/agent-flows.js';
import { MemorySwitch } from '../../agent/flows/memory-switch.js';
import { SharedCompileCache } from '../../agent/flows/compile-cache.js';
import { flowKey } from '../../agent/openflow/reconcile.js';
import { deepEqual } from '../../agent/flows/flow-table.js';
import type { SbRowChange, SbUpdate } from '../../agent/sb-source.js';
import type { LocalView } from '../../agent/local-view.js';
import type { Row } from '../../ovsdb/index.js';
import { chassis, ids, logicalFlow, port, resetOf, sbGlobal, smallTopology, smallView, U } from './flows-fixtures.js';

async function switchMatches(t: Test, sw: MemorySwitch, af: AgentFlows, what: string): Promise<void> {
  const dump = await sw.dumpAll();
  const want = new Map([...af.engine.table.flows()]);
  const have = new Map(dump.flows.map((f) => [flowKey(f.table, f.priority, f.match), f]));
  let same = want.size === have.size;
  for (const [k, f] of want) if (!deepEqual(have.get(k), f)) same = false;
  t.ok(same, `${what}: the switch holds the ${want.size} desired flows (it has ${have.size})`);
  t.same(dump.groups.map((g) => g.groupId).sort(), [...af.engine.groupSpecs().keys()].sort(), `${what}: and the desired groups`);
}

let rev = 1;
const upd = (changes: SbRowChange[]): SbUpdate => ({ reset: false, fromRevision: rev, toRevision: ++rev, changes });
const rowChange = (table: string, r: Row): SbRowChange => ({ table, uuid: r._uuid, row: r });

const lflows = (): [string, Row][] => [
  ['Logical_Flow', logicalFlow(U(1, 0x1f), ids.sw0, 'ingress', 0, 50, 'inport == "vif1"', 'next;')],
  ['Logical_Flow', logicalFlow(U(2, 0x1f), ids.sw0, 'ingress', 25, 50, 'eth.dst == 00:00:00:00:00:03', 'outport = "vif3"; output;')],
  ['Logical_Flow', logicalFlow(U(3, 0x1f), ids.sw9, 'ingress', 0, 50, '1', 'next;')],
  ['SB_Global', sbGlobal(U(1, 0x9), 7)],
];

t.test('install, update by difference, installed ports, nb_cfg', async (t) => {
  const sw = new MemorySwitch();
  const af = new AgentFlows(sw);
  const r1 = await af.apply(resetOf([...smallTopology(), ...lflows()]), smallView());
  t.same(r1.errors, []);
  t.equal(r1.reconciled, true, 'the first apply reconciles with whatever the switch holds');
  t.same([...r1.installedPorts].sort(), ['vif1', 'vif2']);
  t.equal(af.nbCfg, 7);
  t.ok(af.engine.table.refs([...af.engine.table.keys()].find((k) => k.startsWith('8|50|')) as string).includes(`lf:${U(1, 0x1f)}`),
    'a flow knows the logical flow it came from');
  t.notOk([...af.engine.table.flows()].some(([, f]) => f.match.get('metadata')?.value === 9n), 'nothing of a datapath that is not local');
  await switchMatches(t, sw, af, 'after the first apply');

  // vif2 is released (its chassis cleared): its flows go, in one small batch.
  const batches = sw.counters.batches;
  const r2 = await af.apply(upd([rowChange('Port_Binding', port(ids.vif2, ids.sw0, 'vif2', 2, {}))]), smallView());
  t.equal(r2.reconciled, false);
  t.equal(sw.counters.batches, batches + 1, 'one batch');
  t.ok(r2.changes > 0 && r2.changes < 20, `only the difference was sent (${r2.changes} changes)`);
  t.same([...r2.installedPorts], ['vif1']);
  await switchMatches(t, sw, af, 'after vif2 left');

  // Nothing changed: nothing sent.
  const r3 = await af.applyView(smallView());
  t.equal(r3.changes, 0);
  t.equal(sw.counters.batches, batches + 1, 'no empty batch');
});

t.test('flows that cannot be computed are reported, boundedly, and the rest is installed', async (t) => {
  const sw = new MemorySwitch();
  const af = new AgentFlows(sw);
  const bad: [string, Row][] = Array.from({ length: 150 }, (_, i) => ['Logical_Flow', logicalFlow(U(100 + i, 0x1f), ids.sw0, 'ingress', 1, i, 'inport ==', 'next;')]);
  const r = await af.apply(resetOf([...smallTopology(), ...lflows(), ...bad]), smallView());
  t.equal(r.errors.length, APPLY_ERRORS_MAX);
  t.match(r.errors[0], /^Logical_Flow 0000001f-.* \(ingress table 1 priority \d+\): match: /, 'each names its SB row');
  t.equal(r.errors[APPLY_ERRORS_MAX - 1], '… and 51 more flows that could not be computed');
  t.same([...r.installedPorts].sort(), ['vif1', 'vif2'], 'the good flows are installed all the same');
  await switchMatches(t, sw, af, 'with bad rows around');
});

t.test('a refused batch changes nothing and is repaired by the next apply', async (t) => {
  const sw = new MemorySwitch();
  const af = new AgentFlows(sw);
  await af.apply(resetOf([...smallTopology(), ...lflows()]), smallView());
  sw.failNext('switch said no');
  const lf = logicalFlow(U(4, 0x1f), ids.sw0, 'ingress', 3, 10, 'ip6', 'next;');
  const r = await af.apply(upd([rowChange('Logical_Flow', lf)]), smallView());
  t.match(r.errors, [/install failed: injected: switch said no/], 'the failure is reported (the runtime must not ack)');
  t.notOk((await sw.dumpAll()).flows.some((f) => f.table === 11 && f.priority === 10), 'and the switch did not change');
  const r2 = await af.applyView(smallView());
  t.same(r2.errors, []);
  t.equal(r2.reconciled, true, 'the next apply reconciled');
  t.ok((await sw.dumpAll()).flows.some((f) => f.table === 11 && f.priority === 10), 'and the new flow is there');
  await switchMatches(t, sw, af, 'after the repair');
});

t.test('a restarted switch is reconciled, not left empty', async (t) => {
  const sw = new MemorySwitch();
  const af = new AgentFlows(sw);
  await af.apply(resetOf([...smallTopology(), ...lflows()]), smallView());
  const n = sw.flowCount;
  sw.restart();
  t.equal(sw.flowCount, 0);
  const r = await af.applyView(smallView());
  t.equal(r.reconciled, true);
  t.equal(sw.flowCount, n, 'every flow is back');
  // A restarted agent (new AgentFlows) over a switch that kept its flows sends nothing.
  const af2 = new AgentFlows(sw, { ctZones: af.ctZones() });
  const r2 = await af2.apply(resetOf([...smallTopology(), ...lflows()]), smallView());
  t.equal(r2.reconciled, true);
  t.equal(r2.changes, 0, 'a restarted agent with the same zones finds everything in place');
});

t.test('ovn-ofctrl-wait-before-clear: a new connection\'s first install waits, so a partial first view does not delete flows', async (t) => {
  const sw = new MemorySwitch();
  const af = new AgentFlows(sw);
  await af.apply(resetOf([...smallTopology(), ...lflows()]), smallView());
  const n = sw.flowCount;
  // Without the wait, a restarted agent whose first view lacks the logical flows deletes theirs.
  const hasty = new MemorySwitch();
  await new AgentFlows(hasty).apply(resetOf([...smallTopology(), ...lflows()]), smallView());
  const full = hasty.flowCount;
  await new AgentFlows(hasty, { ctZones: af.ctZones() }).apply(resetOf(smallTopology()), smallView());
  t.ok(hasty.flowCount < full, `without it, the partial view's reconcile removed ${full - hasty.flowCount} flows`);

  let now = 50_000;
  const af2 = new AgentFlows(sw, { ctZones: af.ctZones(), waitBeforeClearMs: 8000, now: () => now });
  const r1 = await af2.apply(resetOf(smallTopology()), smallView());
  t.equal(r1.waitingUntilMs, 58_000, 'the first apply waits 8 s from now');
  t.match(r1, { reconciled: false, changes: 0, errors: [] });
  t.same([...r1.installedPorts], [], 'nothing counts as installed yet');
  t.equal(sw.flowCount, n, 'the switch keeps every flow meanwhile');
  now = 53_000;
  const r2 = await af2.apply(upd(lflows().map(([table, r]) => rowChange(table, r))), smallView());
  t.equal(r2.waitingUntilMs, 58_000, 'updates meanwhile are computed, not installed: the wait keeps its end');
  now = 58_000;
  const r3 = await af2.applyView(smallView());
  t.equal(r3.waitingUntilMs, undefined, 'at its end');
  t.match(r3, { reconciled: true, changes: 0 }, 'the complete view reconciles and finds every flow in place');
  t.same([...r3.installedPorts].sort(), ['vif1', 'vif2']);

  sw.failNext('switch said no');
  const failed = await af2.apply(upd([rowChange('Logical_Flow', logicalFlow(U(4, 0x1f), ids.sw0, 'ingress', 3, 10, 'ip6', 'next;'))]), smallView());
  t.match(failed.errors, [/install failed/]);
  const repaired = await af2.applyView(smallView());
  t.match(repaired, { waitingUntilMs: undefined, reconciled: true }, 'a failed batch on the same connection reconciles at once: no new wait');

  sw.restart();
  now = 60_000;
  const again = await af2.applyView(smallView());
  t.equal(again.waitingUntilMs, 68_000, 'a new connection (the switch restarted) waits again, as ovn-controller does after any reconnection');
  t.equal(sw.flowCount, 0);
  af2.setWaitBeforeClearMs(0);
  const now0 = await af2.applyView(smallView());
  t.match(now0, { waitingUntilMs: undefined, reconciled: true }, 'the wait set to 0 ends it at once');
  t.equal(sw.flowCount, n + 1, 'every flow back (and the one added since)');
  t.throws(() => af2.setWaitBeforeClearMs(-1));
});

t.test('ct_lb groups are installed before and removed after the flows that use them', async (t) => {
  const sw = new MemorySwitch();
  const af = new AgentFlows(sw);
  await af.apply(resetOf([...smallTopology(), ...lflows()]), smallView());
  const lb = logicalFlow(U(5, 0x1f), ids.sw0, 'ingress', 12, 120, 'ip4.dst == 10.0.0.100 && tcp.dst == 80', 'ct_lb_mark(backends=10.0.0.1:80,10.0.0.2:80);');
  const r = await af.apply(upd([rowChange('Logical_Flow', lb)]), smallView());
  t.same(r.errors, []);
  const dump = await sw.dumpAll();
  t.equal(dump.groups.length, 1, 'one select group');
  t.equal(dump.groups[0]?.buckets.length, 2);
  const id = dump.groups[0]?.groupId;
  t.ok(dump.flows.some((f) => f.actions.some((a) => a.kind === 'group' && a.groupId === id)), 'a flow outputs to it');
  // The memory switch refuses a group removal while a flow uses it: removing the flow in the
  // same batch must order it right.
  const r2 = await af.apply({ reset: false, fromRevision: rev, toRevision: ++rev, changes: [{ table: 'Logical_Flow', uuid: lb._uuid }] }, smallView());
  t.same(r2.errors, []);
  t.same((await sw.dumpAll()).groups, [], 'the group is gone with its flow');
});

t.test('500 agents share one process, each with its own switch', async (t) => {
  const agents: { af: AgentFlows; sw: MemorySwitch; view: LocalView }[] = [];
  const rows: [string, Row][] = [...smallTopology(), ...lflows()];
  for (let i = 0; i < 500; i++) rows.push(['Chassis', chassis(U(1000 + i, 0xc), `sim${i}`)]);
  // Each simulated chassis binds one port of its own on sw0.
  for (let i = 0; i < 500; i++) rows.push(['Port_Binding', port(U(1000 + i, 0xa), ids.sw0, `sim-vif${i}`, 100 + i, { chassis: U(1000 + i, 0xc) })]);
  const snapshot = resetOf(rows);
  const cache = new SharedCompileCache();
  for (let i = 0; i < 500; i++) {
    const sw = new MemorySwitch();
    const view: LocalView = { chassis: `sim${i}`, vifs: new Map([[`sim-vif${i}`, 1]]), tunnels: new Map([['hv1', { ofport: 9, type: 'geneve', remoteIp: '192.0.2.1' }]]), localnetPatches: new Map() };
    // Half share a compile cache, half compile alone: both must install the same flows.
    agents.push({ af: new AgentFlows(sw, i % 2 === 0 ? { sharedCache: cache } : {}), sw, view });
  }
  let ok = 0;
  for (const a of agents) {
    const r = await a.af.apply(snapshot, a.view);
    if (r.errors.length === 0 && r.installedPorts.size === 1 && a.sw.flowCount === a.af.engine.table.size) ok++;
  }
  t.equal(ok, 500, 'every agent installed its flows and reports its port');
  t.ok(cache.counters.hits > cache.counters.misses, `the shared cache served most compiles (${cache.counters.hits} hits, ${cache.counters.misses} misses)`);
  // Agents 2 (cache) and 3 (alone) see the same SB from equivalent chassis: same flows but for
  // their own port and tunnel.
  const shape = (a: AgentFlows): number => [...a.engine.table.flows()].filter(([, f]) => f.table >= 8 && f.table <= 63).length;
  t.equal(shape((agents[2] as { af: AgentFlows }).af), shape((agents[3] as { af: AgentFlows }).af), 'with or without the cache, the same logical flows');
  // One change reaches all of them as a small batch each.
  const change = upd([rowChange('Logical_Flow', logicalFlow(U(6, 0x1f), ids.sw0, 'ingress', 4, 10, 'arp', 'next;'))]);
  let small = 0;
  for (const a of agents) {
    const r = await a.af.apply(change, a.view);
    if (!r.reconciled && r.changes === 1) small++;
  }
  t.equal(small, 500, 'one new flow each, sent as one change');
});
