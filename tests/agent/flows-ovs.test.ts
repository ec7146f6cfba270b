// Goal: AgentFlows over OfSwitch drives a real ovs-vswitchd: the desired flows and groups land
// through bundles and read back equal; packets traced through them go where OVN's physical
// tables send them (local delivery, Geneve to a remote chassis with OVN's option layout,
// decapsulation, loopback drop, patch into a router); a restarted agent reconciles without
// re-sending anything; a restarted switch gets everything back. Method: a private
// ovsdb-server + ovs-vswitchd (userspace datapath, dummy ports, a Geneve port), the small
// topology of flows-fixtures.ts with a pass-through pipeline, ovs-appctl ofproto/trace and
// ovs-ofctl as the oracle.

import t from 'tap';
import { AgentFlows } from '../../agent/flows/agent-flows.js';
import { OfSwitch } from '../../agent/flows/ofswitch.js';
import { OfChannel } from '../../agent/openflow/channel.js';
import { diffFlows, flowKey } from '../../agent/openflow/reconcile.js';
import type { FlowSpec } from '../../agent/openflow/types.js';
import type { SbUpdate } from '../../agent/sb-source.js';
import type { Row } from '../../ovsdb/index.js';
import { ovsSwitchInstalled, startOvsSwitch, type OvsSwitch } from '../helpers/ovs-switch.js';
import { ids, logicalFlow, resetOf, smallTopology, smallView, U } from './flows-fixtures.js';

/** Every ingress and egress table passes packets on; L2 lookup by destination MAC. */
function pipeline(): [string, Row][] {
  const rows: [string, Row][] = [];
  let n = 0;
  const lf = (dp: string, pipe: 'ingress' | 'egress', table: number, prio: number, match: string, actions: string): void => {
    rows.push(['Logical_Flow', logicalFlow(U(++n, 0x1f), dp, pipe, table, prio, match, actions)]);
  };
  for (const dp of [ids.sw0, ids.lr0, ids.pub]) {
    for (let i = 0; i < 25; i++) lf(dp, 'ingress', i, 0, '1', 'next;');
    for (let i = 0; i < 9; i++) lf(dp, 'egress', i, 0, '1', 'next;');
    lf(dp, 'egress', 9, 0, '1', 'output;');
  }
  lf(ids.sw0, 'ingress', 25, 50, 'eth.dst == 00:00:00:00:00:01', 'outport = "vif1"; output;');
  lf(ids.sw0, 'ingress', 25, 50, 'eth.dst == 00:00:00:00:00:02', 'outport = "vif2"; output;');
  lf(ids.sw0, 'ingress', 25, 50, 'eth.dst == 00:00:00:00:00:03', 'outport = "vif3"; output;');
  lf(ids.sw0, 'ingress', 25, 50, 'eth.dst == 00:00:00:00:ff:01', 'outport = "rp-sw0"; output;');
  lf(ids.sw0, 'ingress', 25, 70, 'eth.mcast', 'outport = "_MC_flood"; output;');
  lf(ids.sw0, 'ingress', 25, 60, 'eth.dst == 00:00:00:00:00:01 && eth.src == 0a:00:00:00:00:01', 'outport = "vif1"; flags.loopback = 1; output;');
  lf(ids.lr0, 'ingress', 25, 50, '1', 'outport = "lrp-pub"; output;');
  lf(ids.pub, 'ingress', 25, 50, '1', 'outport = "ln-pub"; output;');
  lf(ids.sw0, 'ingress', 12, 100, 'ip4.dst == 10.0.0.100 && tcp.dst == 80', 'ct_lb_mark(backends=10.0.0.1:80,10.0.0.2:80);');
  return rows;
}

/** ofproto/trace of a flow: the OpenFlow ports it was output to, in order ('drop' if none), and
 *  the whole text. (The datapath actions name datapath ports, not OpenFlow ports.) */
async function trace(sw: OvsSwitch, flow: string): Promise<{ verdict: string; text: string }> {
  const text = await sw.appctl('ofproto/trace', sw.bridge, flow);
  const outs = [...text.matchAll(/^\s+output:(\d+)$/gm)].map((m) => m[1] as string);
  return { verdict: outs.length === 0 ? 'drop' : outs.join(','), text };
}

/** Flows the switch holds that differ from what the agent wants (diffFlows against a dump). */
async function drift(ch: OfChannel, af: AgentFlows): Promise<string> {
  const want: FlowSpec[] = [...af.engine.table.flows()].map(([, f]) => f);
  const d = diffFlows(want, await ch.dumpFlows());
  return `${d.added} missing, ${d.modified} different, ${d.deleted} extra`;
}

async function main(): Promise<void> {
  const sw = await startOvsSwitch({ ports: 3 });
  t.teardown(() => sw.stop());
  // A Geneve port to hv2 (ofport 10) and the physnet patch port (ofport 20, an internal
  // stand-in: only its number matters to the flows).
  await sw.vsctl('add-port', 'br-int', 'ovn-hv2-0', '--', 'set', 'interface', 'ovn-hv2-0', 'type=geneve',
    'options:remote_ip=192.0.2.2', 'options:key=flow', 'options:csum=true', 'ofport_request=10');
  await sw.vsctl('add-port', 'br-int', 'patch-physnet', '--', 'set', 'interface', 'patch-physnet', 'type=dummy', 'ofport_request=20');
  const rows = [...smallTopology(), ...pipeline()];
  const snapshot: SbUpdate = resetOf(rows);

  const ch = await OfChannel.connect({ target: sw.mgmtTarget });
  const ofs = new OfSwitch(ch);
  const af = new AgentFlows(ofs);
  let closed = false;
  t.teardown(() => {
    if (!closed) ch.close();
  });

  t.test('the desired flows and groups land and read back equal', async (t) => {
    const r = await af.apply(snapshot, smallView());
    t.same(r.errors, []);
    t.equal(r.reconciled, true);
    t.equal(ofs.geneveField, 'tun_metadata0', 'OVN\'s Geneve option was mapped to tun_metadata0');
    t.match(await sw.ofctl('dump-tlv-map'), /0x102\s+0x80\s+4\s+tun_metadata0/);
    t.equal(await drift(ch, af), '0 missing, 0 different, 0 extra');
    t.ok(r.flows > 150, `${r.flows} flows`);
    t.match(await sw.ofctl('dump-groups'), /type=select,selection_method=dp_hash,bucket=bucket_id:0,weight:100,actions=ct\(commit,table=21,zone=NXM_NX_REG13\[0\.\.15\],nat\(dst=10\.0\.0\.1:80\),exec\(set_field:0x2\/0x2->ct_mark\)\)/);
    t.same([...r.installedPorts].sort(), ['vif1', 'vif2']);
  });

  t.test('packets go where the physical tables send them', async (t) => {
    const local = await trace(sw, 'in_port=1,dl_src=00:00:00:00:00:01,dl_dst=00:00:00:00:00:02');
    t.equal(local.verdict, '2', 'vif1 → vif2 on this chassis: out of port 2');
    const remote = await trace(sw, 'in_port=1,dl_src=00:00:00:00:00:01,dl_dst=00:00:00:00:00:03');
    t.equal(remote.verdict, '10', 'vif1 → vif3: out of the tunnel to hv2');
    // Datapath 1 in the tunnel id; outport 3 in bits 0..15 and inport 1 in bits 16..30 of OVN's option.
    t.match(remote.text, /set_field:0x1\/0xffffff->tun_id\s+set_field:0x3->tun_metadata0\s+move:NXM_NX_REG14\[0\.\.14\]->NXM_NX_TUN_METADATA0\[16\.\.30\]\s+-> NXM_NX_TUN_METADATA0\[16\.\.30\] is now 0x1\s+output:10/);
    t.match(remote.text, /Final flow: .*tun_id=0x1,/);
    const hairpin = await trace(sw, 'in_port=1,dl_src=00:00:00:00:00:01,dl_dst=00:00:00:00:00:01');
    t.equal(hairpin.verdict, 'drop', 'to itself without the loopback flag: dropped in table 41');
    const loop = await trace(sw, 'in_port=1,dl_src=0a:00:00:00:00:01,dl_dst=00:00:00:00:00:01');
    t.equal(loop.verdict, '1', 'with flags.loopback: table 64 lets it out of the port it came in by');
    t.match(loop.text, /Datapath actions: \d+/, 'and the datapath outputs it');
    const decap = await trace(sw, 'in_port=10,tun_id=0x1,tun_metadata0=0x30002,dl_src=00:00:00:00:00:03,dl_dst=00:00:00:00:00:02');
    t.equal(decap.verdict, '2', 'from hv2 (inport 3, outport 2): decapsulated straight to port 2');
    const flood = await trace(sw, 'in_port=1,dl_src=00:00:00:00:00:01,dl_dst=ff:ff:ff:ff:ff:ff');
    t.equal(flood.verdict, '20,10,2', 'flood: through the router to the bridged network, to hv2 once, to the other local port');
    const routed = await trace(sw, 'in_port=1,dl_src=00:00:00:00:00:01,dl_dst=00:00:00:00:ff:01');
    t.match(routed.text, /clone\(ct_clear/, 'into the router through the patch port');
    t.equal(routed.verdict, '20', 'and out to physnet through the localnet port');
    t.match(routed.text, /65\. reg15=0x1,metadata=0x3, priority 100, cookie 0xa\s+output:20/);
  });

  t.test('an update is one bundle of the difference', async (t) => {
    const lb2 = logicalFlow(U(999, 0x1f), ids.sw0, 'ingress', 12, 100, 'ip4.dst == 10.0.0.101 && tcp.dst == 80', 'ct_lb_mark(backends=10.0.0.2:80,10.0.0.3:80);');
    const r = await af.apply({ reset: false, fromRevision: 1, toRevision: 2, changes: [{ table: 'Logical_Flow', uuid: lb2._uuid, row: lb2 }] }, smallView());
    t.same(r.errors, []);
    t.equal(r.reconciled, false);
    t.equal(r.changes, 2, 'one group and one flow');
    t.equal(await drift(ch, af), '0 missing, 0 different, 0 extra');
    t.equal((await sw.ofctl('dump-groups')).split('group_id=').length - 1, 2, 'two groups now');
    const r2 = await af.apply({ reset: false, fromRevision: 2, toRevision: 3, changes: [{ table: 'Logical_Flow', uuid: lb2._uuid }] }, smallView());
    t.same(r2.errors, []);
    t.equal((await sw.ofctl('dump-groups')).split('group_id=').length - 1, 1, 'its group left with it, in the same bundle');
    // vif2's interface goes away: its flows leave.
    const r3 = await af.applyView(smallView({ vifs: new Map([['vif1', 1]]) }));
    t.same([...r3.installedPorts], ['vif1']);
    t.equal(await drift(ch, af), '0 missing, 0 different, 0 extra');
    t.equal((await trace(sw, 'in_port=1,dl_src=00:00:00:00:00:01,dl_dst=00:00:00:00:00:02')).verdict, 'drop');
    await af.applyView(smallView());
  });

  t.test('a restarted agent reconciles and finds nothing to change; counters survive', async (t) => {
    await sw.appctl('netdev-dummy/receive', 'p1', '000000000002000000000001080045000014000000004000000000000a0000010a000002');
    const key = (f: Pick<FlowSpec, 'table' | 'priority' | 'match'>): string => flowKey(f.table, f.priority, f.match);
    // The switch counts the packet once its handler has processed it: wait for that (bounded).
    let counted: (readonly [string, bigint | undefined])[] = [];
    for (let i = 0; i < 100 && counted.length <= 5; i++) {
      counted = (await ch.dumpFlows()).filter((f) => (f.packetCount ?? 0n) > 0n).map((f) => [key(f), f.packetCount] as const);
      if (counted.length <= 5) await ch.barrier();
    }
    t.ok(counted.length > 5, 'the packet went through some flows');
    ch.close();
    closed = true;
    const ch2 = await OfChannel.connect({ target: sw.mgmtTarget });
    t.teardown(() => ch2.close());
    const af2 = new AgentFlows(new OfSwitch(ch2), { ctZones: af.ctZones() });
    const r = await af2.apply(snapshot, smallView());
    t.same(r.errors, []);
    t.equal(r.reconciled, true);
    t.equal(r.changes, 0, 'nothing re-sent');
    const after = new Map((await ch2.dumpFlows()).map((f) => [key(f), f.packetCount]));
    t.ok(counted.every(([k, n]) => after.get(k) === n), 'every flow kept its packet counter');
  });

  t.test('a bridge re-created empty: the agent reconnects and reconciles everything back', async (t) => {
    const ch3 = await OfChannel.connect({ target: sw.mgmtTarget, reconnectMaxMs: 500 });
    t.teardown(() => ch3.close());
    // A generous ready timeout: the bridge comes back at the pace of a loaded machine.
    const af3 = new AgentFlows(new OfSwitch(ch3, 30_000), { ctZones: af.ctZones() });
    t.equal((await af3.apply(snapshot, smallView())).changes, 0);
    const conn = ch3.connectionsN;
    await sw.vsctl('del-br', 'br-int');
    await sw.vsctl('add-br', 'br-int', '--', 'set', 'bridge', 'br-int', 'datapath_type=netdev', 'protocols=OpenFlow15', 'fail-mode=secure',
      'other-config:disable-in-band=true');
    for (let i = 1; i <= 3; i++) await sw.vsctl('add-port', 'br-int', `p${i}`, '--', 'set', 'interface', `p${i}`, 'type=dummy', `ofport_request=${i}`);
    await sw.vsctl('add-port', 'br-int', 'ovn-hv2-0', '--', 'set', 'interface', 'ovn-hv2-0', 'type=geneve',
      'options:remote_ip=192.0.2.2', 'options:key=flow', 'options:csum=true', 'ofport_request=10');
    await sw.vsctl('add-port', 'br-int', 'patch-physnet', '--', 'set', 'interface', 'patch-physnet', 'type=dummy', 'ofport_request=20');
    const r = await af3.applyView(smallView());
    t.ok(ch3.connectionsN > conn, 'the channel reconnected by itself');
    t.same(r.errors, []);
    t.equal(r.reconciled, true, 'a new connection: reconciled');
    t.ok(r.changes > 100, `${r.changes} flows and groups sent back`);
    t.equal(await drift(ch3, af3), '0 missing, 0 different, 0 extra');
    t.equal((await trace(sw, 'in_port=1,dl_src=00:00:00:00:00:01,dl_dst=00:00:00:00:00:02')).verdict, '2');
    // The switch goes away: an apply reports it within the ready timeout instead of stalling,
    // and the update itself is kept for the reconcile that will follow.
    await sw.stop();
    const af5 = new AgentFlows(new OfSwitch(ch3, 1_000));
    const down = await af5.apply(snapshot, smallView());
    t.match(down.errors, [/install failed: disconnected: (no connection to the switch within 1000 ms|connection to the switch closed)/]);
    t.equal(down.installedPorts.size, 0, 'nothing is reported installed');
    t.ok(af5.engine.table.size > 100, 'but the desired flows are computed, ready for the reconcile');
  });
}

if (ovsSwitchInstalled()) await main();
else t.plan(0, 'Open vSwitch is not installed');
