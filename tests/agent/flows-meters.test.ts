// Goal: the meters the logical flows name reach the switch as ovn-controller 23.03 installs them:
// set_meter's own meter per logical flow, log(meter=…) and controller_meter from the SB Meter of
// that name (none without one); added before and deleted after the flows that use them, modified
// in place when an SB band changes, deleted when no flow names them; a controller() installed
// before its meter existed is sent again once the meter is there; failures and restarts are
// reconciled. Method: AgentFlows over the in-memory switch (which, as Open vSwitch, refuses a
// flow metering through a missing meter and deletes the flows of a deleted meter), the small
// topology of flows-fixtures.ts, SB updates by hand.

import t, { type Test } from 'tap';
import { AgentFlows } from '../../agent/flows/agent-flows.js';
import { MemorySwitch } from '../../agent/flows/memory-switch.js';
import { SharedCompileCache } from '../../agent/flows/compile-cache.js';
import { OFPMF, type FlowSpec, type MeterSpec, type OfAction } from '../../agent/openflow/types.js';
import type { SbRowChange, SbUpdate } from '../../agent/sb-source.js';
import type { Row } from '../../ovsdb/index.js';
import { dpGroup, ids, logicalFlow, meter, meterBand, resetOf, smallTopology, smallView, U, withControllerMeter } from './flows-fixtures.js';

let rev = 1;
const upd = (changes: SbRowChange[]): SbUpdate => ({ reset: false, fromRevision: rev, toRevision: ++rev, changes });
const put = (table: string, r: Row): SbRowChange => ({ table, uuid: r._uuid, row: r });
const del = (table: string, uuid: string): SbRowChange => ({ table, uuid });

/** A logical flow's UUID: its first 32 bits (the cookie of its flows) its own. */
const L = (n: number): string => U(n, 0x1f00 + n);
const qosUuid = L(1);
const qosBurstUuid = L(2);
const aclUuid = L(3);
const coppUuid = L(4);
const remoteUuid = L(5);
const band1 = U(1, 0x11);
const aclMeter = U(1, 0x10);

/** A QoS meter flow (ls_in_qos_meter), as ovn-northd writes one per rule with a bandwidth. */
const qos = (uuid: string, dp: string, actions: string, match = 'inport == "vif1"'): Row => logicalFlow(uuid, dp, 'ingress', 8, 101, match, actions);

function rows(): [string, Row][] {
  return [
    ...smallTopology(),
    ['Logical_Flow', qos(qosUuid, ids.sw0, 'set_meter(1000); next;')],
    ['Logical_Flow', qos(qosBurstUuid, ids.sw0, 'set_meter(2000, 300); next;', 'inport == "vif2"')],
    ['Logical_Flow', logicalFlow(aclUuid, ids.sw0, 'ingress', 9, 1001, 'ip4 && tcp.dst == 22', 'log(name="ssh", severity=info, verdict=drop, meter="acl-meter"); /* drop */')],
    ['Logical_Flow', withControllerMeter(logicalFlow(coppUuid, ids.sw0, 'ingress', 24, 100, 'arp.op == 1', 'put_arp(inport, arp.spa, arp.sha); next;'), 'copp-arp')],
    // On sw9, which is not local here: compiled nowhere, so its meter is never made.
    ['Logical_Flow', qos(remoteUuid, ids.sw9, 'set_meter(5000); next;', 'inport == "vif9"')],
    ['Meter_Band', meterBand(band1, 10)],
    ['Meter', meter(aclMeter, 'acl-meter', 'pktps', [band1])],
  ];
}

/** The meter a flow meters through (meter:N) or its controller() names (meter_id=N). */
function metersOf(actions: readonly OfAction[]): number[] {
  const out: number[] = [];
  for (const a of actions) {
    if (a.kind === 'meter') out.push(a.meterId);
    if ((a.kind === 'controller' || a.kind === 'controller_op') && a.meterId !== undefined) out.push(a.meterId);
  }
  return out;
}

async function state(sw: MemorySwitch): Promise<{ flows: readonly FlowSpec[]; meters: Map<number, MeterSpec> }> {
  const d = await sw.dumpAll();
  return { flows: d.flows, meters: new Map(d.meters.map((m) => [m.meterId, m])) };
}

/** The ids the flows of a logical flow (by cookie) use. */
function idsOf(flows: readonly FlowSpec[], lflow: string): number[] {
  const cookie = BigInt(`0x${lflow.slice(0, 8)}`);
  return [...new Set(flows.filter((f) => f.cookie === cookie).flatMap((f) => metersOf(f.actions)))];
}

async function started(t: Test): Promise<{ sw: MemorySwitch; af: AgentFlows }> {
  const sw = new MemorySwitch();
  const af = new AgentFlows(sw);
  const r = await af.apply(resetOf(rows()), smallView());
  t.same(r.errors, [], 'no errors');
  return { sw, af };
}

t.test('set_meter, log(meter=) and controller_meter get ids from 1 up; meters with something to install are installed', async (t) => {
  const { sw, af } = await started(t);
  const { flows, meters } = await state(sw);
  const [qosId] = idsOf(flows, L(1));
  const [burstId] = idsOf(flows, qosBurstUuid);
  const [aclId] = idsOf(flows, aclUuid);
  const [coppId] = idsOf(flows, coppUuid);
  t.same([qosId, burstId, aclId, coppId].sort(), [1, 2, 3, 4], 'four names, ids 1..4');
  t.same(meters.get(qosId as number), { meterId: qosId, flags: OFPMF.KBPS | OFPMF.STATS, bands: [{ type: 'drop', rate: 1000, burstSize: 0 }] }, 'set_meter(1000): kbps, stats, one drop band');
  t.same(meters.get(burstId as number), { meterId: burstId, flags: OFPMF.KBPS | OFPMF.BURST | OFPMF.STATS, bands: [{ type: 'drop', rate: 2000, burstSize: 300 }] }, 'set_meter(2000, 300): a burst meter');
  t.same(meters.get(aclId as number), { meterId: aclId, flags: OFPMF.PKTPS | OFPMF.STATS, bands: [{ type: 'drop', rate: 10, burstSize: 0 }] }, 'acl-meter from its SB row');
  t.notOk(meters.has(coppId as number), 'copp-arp has no SB Meter: its id is named, nothing is installed');
  t.equal(meters.size, 3);
  t.same(idsOf(flows, remoteUuid), [], 'nothing of sw9');
  t.equal(flows.filter((f) => f.cookie === BigInt(`0x${remoteUuid.slice(0, 8)}`)).length, 0);
  t.equal(af.engine.meterName(coppId as number), 'copp-arp');
  const qosFlow = flows.find((f) => f.cookie === BigInt(`0x${qosUuid.slice(0, 8)}`) && metersOf(f.actions).length > 0);
  t.same(qosFlow?.actions[0], { kind: 'meter', meterId: qosId }, 'the QoS flow meters first, then goes on');
});

t.test('an SB band change modifies the meter in place; nothing else is sent', async (t) => {
  const { sw, af } = await started(t);
  const before = { ...sw.counters };
  const r = await af.apply(upd([put('Meter_Band', meterBand(band1, 25, 5))]), smallView());
  t.same(r.errors, []);
  t.equal(r.changes, 1, 'one change: the meter');
  t.equal(sw.counters.flowMods, before.flowMods, 'no flow touched');
  t.equal(sw.counters.meterMods, before.meterMods + 1);
  const { flows, meters } = await state(sw);
  const [aclId] = idsOf(flows, aclUuid);
  t.same(meters.get(aclId as number), { meterId: aclId, flags: OFPMF.PKTPS | OFPMF.BURST | OFPMF.STATS, bands: [{ type: 'drop', rate: 25, burstSize: 5 }] });
  // The meter row itself: another unit and a second band.
  const band2 = U(2, 0x11);
  await af.apply(upd([put('Meter_Band', meterBand(band2, 7)), put('Meter', meter(aclMeter, 'acl-meter', 'kbps', [band1, band2]))]), smallView());
  t.same((await state(sw)).meters.get(aclId as number)?.bands.map((b) => b.rate).sort(), [25, 7].sort(), 'both bands');
  t.equal((await state(sw)).meters.get(aclId as number)?.flags, OFPMF.KBPS | OFPMF.BURST | OFPMF.STATS);
});

t.test('a meter created after the flows that name it: installed, and their controller() sent again', async (t) => {
  const { sw, af } = await started(t);
  const { flows } = await state(sw);
  const [coppId] = idsOf(flows, coppUuid);
  const coppFlows = flows.filter((f) => f.cookie === BigInt(`0x${coppUuid.slice(0, 8)}`)).length;
  t.ok(coppFlows > 0);
  const before = { ...sw.counters };
  const r = await af.apply(upd([put('Meter_Band', meterBand(U(3, 0x11), 100)), put('Meter', meter(U(2, 0x10), 'copp-arp', 'pktps', [U(3, 0x11)]))]), smallView());
  t.same(r.errors, []);
  t.ok((await state(sw)).meters.has(coppId as number), 'copp-arp is installed under the id its flows name');
  t.equal(sw.counters.flowMods - before.flowMods, coppFlows, 'each flow naming it was sent again (Open vSwitch binds the meter at install)');
  // Its SB row goes: the meter goes, the flows keep naming the id (as ovn-controller's).
  await af.apply(upd([del('Meter', U(2, 0x10)), del('Meter_Band', U(3, 0x11))]), smallView());
  const after = await state(sw);
  t.notOk(after.meters.has(coppId as number), 'deleted with its row');
  t.same(idsOf(after.flows, coppUuid), [coppId], 'the flows still name it');
});

t.test('a meter no flow names any more is deleted after its flows; its id is given again once the switch dropped it', async (t) => {
  const { sw, af } = await started(t);
  const [qosId] = idsOf((await state(sw)).flows, qosUuid);
  const r = await af.apply(upd([del('Logical_Flow', qosUuid)]), smallView());
  t.same(r.errors, [], 'the memory switch refuses a meter deleted before its flows: the order is right');
  const s1 = await state(sw);
  t.notOk(s1.meters.has(qosId as number), 'the meter is gone');
  t.same(idsOf(s1.flows, qosUuid), []);
  // A new QoS rule: the lowest free id, which is the one just freed.
  const newQos = L(9);
  await af.apply(upd([put('Logical_Flow', qos(newQos, ids.sw0, 'set_meter(800); next;', 'inport == "vif1" && ip4'))]), smallView());
  const s2 = await state(sw);
  t.same(idsOf(s2.flows, newQos), [qosId], 'the freed id, lowest first');
  t.same(s2.meters.get(qosId as number)?.bands, [{ type: 'drop', rate: 800, burstSize: 0 }]);
  // The rate of a rule changes: its flow is another row (northd's content-addressed UUIDs), so
  // another meter; the old one goes in the same batch.
  await af.apply(upd([del('Logical_Flow', newQos), put('Logical_Flow', qos(L(10), ids.sw0, 'set_meter(900); next;', 'inport == "vif1" && ip4'))]), smallView());
  const s3 = await state(sw);
  t.same([...s3.meters.values()].filter((m) => m.bands[0]?.rate === 800), [], 'the old rate\'s meter is gone');
  t.equal([...s3.meters.values()].filter((m) => m.bands[0]?.rate === 900).length, 1);
  t.not(idsOf(s3.flows, L(10))[0], qosId, 'not the id deleted in the same batch');
});

t.test('identical QoS flows of several rows, and one row on two datapaths: a meter per row', async (t) => {
  const sw = new MemorySwitch();
  const af = new AgentFlows(sw);
  const group = U(1, 0xf);
  const r = await af.apply(resetOf([
    ...smallTopology(),
    ['Logical_DP_Group', dpGroup(group, [ids.sw0, ids.pub])],
    ['Logical_Flow', logicalFlow(L(20), ids.sw0, 'ingress', 8, 101, 'ip4', 'set_meter(1000); next;')],
    ['Logical_Flow', logicalFlow(L(21), ids.sw0, 'ingress', 8, 102, 'ip4', 'set_meter(1000); next;')],
    ['Logical_Flow', logicalFlow(L(23), ids.sw0, 'ingress', 8, 103, 'ip4', 'set_meter(1000); next;')],
    ['Logical_Flow', logicalFlow(L(22), { group }, 'ingress', 8, 101, 'ip6', 'set_meter(1000); next;')],
  ]), smallView());
  t.same(r.errors, []);
  const { flows, meters } = await state(sw);
  const a = idsOf(flows, L(20));
  const b = idsOf(flows, L(21));
  const c = idsOf(flows, L(22));
  const d = idsOf(flows, L(23));
  t.equal(a.length, 1);
  t.equal(b.length, 1);
  t.equal(d.length, 1);
  t.equal(new Set([a[0], b[0], d[0]]).size, 3, 'three rows, three meters, though their text is the same (a compiled body is not shared between them)');
  t.equal(c.length, 1, 'one row on two switches: one meter');
  t.equal(flows.filter((f) => f.cookie === BigInt(`0x${L(22).slice(0, 8)}`)).length, 2, 'on both switches');
  t.equal(meters.size, 4);
});

t.test('a compile cache shared with other chassis leaves metered rows to each chassis', async (t) => {
  const cache = new SharedCompileCache();
  const swA = new MemorySwitch();
  const swB = new MemorySwitch();
  const a = new AgentFlows(swA, { sharedCache: cache });
  const b = new AgentFlows(swB, { sharedCache: cache });
  // Chassis B names a meter A does not (its own extra QoS row, compiled first), so the same
  // shared rows get other ids on B.
  const extra = qos(L(30), ids.sw0, 'set_meter(50); next;', 'inport == "vif2" && ip6');
  t.same((await b.apply(resetOf([...rows(), ['Logical_Flow', extra]]), smallView())).errors, []);
  t.same((await a.apply(resetOf(rows()), smallView())).errors, []);
  for (const [sw, af] of [[swA, a], [swB, b]] as const) {
    const { flows, meters } = await state(sw);
    for (const f of flows) {
      for (const id of metersOf(f.actions)) {
        const name = af.engine.meterName(id);
        t.ok(name !== undefined, `meter ${id} of a flow is one of this chassis's (${name})`);
        if (f.actions.some((x) => x.kind === 'meter')) t.ok(meters.has(id), `meter ${id} is installed`);
      }
    }
  }
});

t.test('a refused batch and a restarted switch: meters are reconciled with the flows', async (t) => {
  const { sw, af } = await started(t);
  const want = (await state(sw)).meters;
  sw.failNext('no');
  const r = await af.apply(upd([put('Meter_Band', meterBand(band1, 99))]), smallView());
  t.match(r.errors, [/install failed/]);
  const r2 = await af.applyView(smallView());
  t.equal(r2.reconciled, true);
  t.same(r2.errors, []);
  const [aclId] = idsOf((await state(sw)).flows, aclUuid);
  t.equal((await state(sw)).meters.get(aclId as number)?.bands[0]?.rate, 99, 'the change made it on the reconcile');
  sw.restart();
  const r3 = await af.applyView(smallView());
  t.equal(r3.reconciled, true);
  t.equal((await state(sw)).meters.size, want.size, 'every meter is back');
  // A restarted agent over a switch that kept its meters changes nothing.
  const af2 = new AgentFlows(sw, { ctZones: af.ctZones() });
  const before = { ...sw.counters };
  const r4 = await af2.apply(resetOf([...rows().filter(([, row]) => row._uuid !== band1), ['Meter_Band', meterBand(band1, 99)]]), smallView());
  t.same(r4.errors, []);
  t.equal(r4.changes, 0, 'nothing to change');
  t.equal(sw.counters.meterMods, before.meterMods, 'no meter sent');
});
