// Goal: AgentFlows over OfSwitch installs the meters of QoS and ACL-log flows into a real
// ovs-vswitchd as ovn-controller 23.03 does: `ovs-ofctl dump-meters` shows set_meter's meter
// (kbps, stats, burst when given) and the SB Meter of an ACL's log (its unit and bands); packets
// traced through the pipeline are metered and DSCP-marked; an SB band change modifies the meter
// in place; a meter named before its SB row exists meters the packet-ins once the row comes;
// removing the flows deletes the meters; a restarted agent finds everything in place. Method: a
// private ovsdb-server + ovs-vswitchd (userspace datapath, dummy ports), the small topology of
// flows-fixtures.ts with a pass-through pipeline, SB rows by hand; ovs-ofctl and ofproto/trace
// as the oracle.

import t from 'tap';
import { AgentFlows } from '../../agent/flows/agent-flows.js';
import { OfSwitch } from '../../agent/flows/ofswitch.js';
import { OfChannel } from '../../agent/openflow/channel.js';
import type { SbRowChange, SbUpdate } from '../../agent/sb-source.js';
import type { Row } from '../../ovsdb/index.js';
import { ovsSwitchInstalled, startOvsSwitch, type OvsSwitch } from '../helpers/ovs-switch.js';
import { ids, logicalFlow, meter, meterBand, resetOf, smallTopology, smallView, U } from './flows-fixtures.js';

const L = (n: number): string => U(n, 0x1f00 + n);
const qosMeterUuid = L(1);
const qosBurstUuid = L(2);
const qosMarkUuid = L(3);
const aclUuid = L(4);
const aclLaterUuid = L(5);

/** Every table passes packets on, L2 lookup by destination MAC; QoS and ACL-log flows on sw0 as ovn-northd writes them. */
function rows(): [string, Row][] {
  const out: [string, Row][] = [...smallTopology()];
  let n = 100;
  const lf = (dp: string, pipe: 'ingress' | 'egress', table: number, prio: number, match: string, actions: string, uuid = L(++n)): void => {
    out.push(['Logical_Flow', logicalFlow(uuid, dp, pipe, table, prio, match, actions)]);
  };
  for (const dp of [ids.sw0, ids.lr0, ids.pub]) {
    for (let i = 0; i < 25; i++) lf(dp, 'ingress', i, 0, '1', 'next;');
    for (let i = 0; i < 9; i++) lf(dp, 'egress', i, 0, '1', 'next;');
    lf(dp, 'egress', 9, 0, '1', 'output;');
  }
  lf(ids.sw0, 'ingress', 25, 50, 'eth.dst == 00:00:00:00:00:01', 'outport = "vif1"; output;');
  lf(ids.sw0, 'ingress', 25, 50, 'eth.dst == 00:00:00:00:00:02', 'outport = "vif2"; output;');
  // ls_in_acl's log, ls_in_qos_mark, ls_in_qos_meter (23.03 numbers them 9, 10, 11; only the order matters here).
  lf(ids.sw0, 'ingress', 9, 2001, 'ip4 && udp.dst == 53', 'log(name="dns", severity=info, verdict=allow, meter="acl-meter"); next;', aclUuid);
  lf(ids.sw0, 'ingress', 9, 2001, 'ip4 && udp.dst == 54', 'log(name="later", severity=info, verdict=allow, meter="later-meter"); next;', aclLaterUuid);
  lf(ids.sw0, 'ingress', 10, 101, 'inport == "vif1" && ip4', 'ip.dscp = 10; next;', qosMarkUuid);
  lf(ids.sw0, 'ingress', 11, 101, 'inport == "vif1" && ip4', 'set_meter(1000); next;', qosMeterUuid);
  lf(ids.sw0, 'ingress', 11, 101, 'inport == "vif2" && ip4', 'set_meter(2000, 300); next;', qosBurstUuid);
  out.push(['Meter_Band', meterBand(U(1, 0x11), 10)], ['Meter', meter(U(1, 0x10), 'acl-meter', 'pktps', [U(1, 0x11)])]);
  return out;
}

let rev = 1;
const upd = (changes: SbRowChange[]): SbUpdate => ({ reset: false, fromRevision: rev, toRevision: ++rev, changes });

/** `ovs-ofctl dump-meters` as one line per meter: "meter=N flags… bands=type=… …". */
async function meters(sw: OvsSwitch): Promise<string[]> {
  const text = await sw.ofctl('dump-meters');
  return text.split(/\n(?=meter=)/).filter((m) => m.startsWith('meter=') || m.includes('\nmeter=')).map((m) => m.replace(/^.*\n(?=meter=)/s, '').replace(/\s+/g, ' ').trim()).sort();
}

async function datapathActions(sw: OvsSwitch, flow: string): Promise<string> {
  const text = await sw.appctl('ofproto/trace', sw.bridge, flow);
  return text.split('\n').find((l) => l.startsWith('Datapath actions:')) ?? '';
}

const vif1ToVif2 = (port: number): string => `in_port=1,dl_src=00:00:00:00:00:01,dl_dst=00:00:00:00:00:02,udp,nw_src=10.0.0.1,nw_dst=10.0.0.2,nw_ttl=64,udp_src=5000,udp_dst=${port}`;

async function main(): Promise<void> {
  const sw = await startOvsSwitch({ ports: 3 });
  t.teardown(() => sw.stop());
  await sw.vsctl('add-port', 'br-int', 'patch-physnet', '--', 'set', 'interface', 'patch-physnet', 'type=dummy', 'ofport_request=20');
  const ch = await OfChannel.connect({ target: sw.mgmtTarget });
  t.teardown(() => ch.close());
  const af = new AgentFlows(new OfSwitch(ch));
  const view = smallView({ tunnels: new Map() });

  t.test('set_meter and the ACL log meter land as ovn-controller makes them', async (t) => {
    const r = await af.apply(resetOf(rows()), view);
    t.same(r.errors, []);
    const ms = await meters(sw);
    t.equal(ms.length, 3, `three meters (later-meter has no SB row yet): ${ms.join(' | ')}`);
    t.ok(ms.some((m) => /^meter=\d+ kbps stats bands= type=drop rate=1000$/.test(m)), 'set_meter(1000): kbps stats, one drop band');
    t.ok(ms.some((m) => /^meter=\d+ kbps burst stats bands= type=drop rate=2000 burst_size=300$/.test(m)), 'set_meter(2000, 300): a burst meter');
    t.ok(ms.some((m) => /^meter=\d+ pktps stats bands= type=drop rate=10$/.test(m)), 'acl-meter: pktps, from its SB row');
    const flows = await sw.ofctl('dump-flows', `cookie=0x${qosMeterUuid.slice(0, 8)}/-1`);
    t.match(flows, /actions=meter:\d+,resubmit\(,20\)/, 'the QoS flow meters then goes on');
    t.match(await sw.ofctl('dump-flows', `cookie=0x${aclUuid.slice(0, 8)}/-1`), /controller\(userdata=00\.00\.00\.07\.00\.00\.00\.00\.00\.06\.64\.6e\.73,meter_id=\d+\)/);
    const dp = await datapathActions(sw, vif1ToVif2(80));
    t.match(dp, /meter\(\d+\)/, `vif1's packets are metered: ${dp}`);
    t.match(dp, /set\(ipv4\(tos=0x28\/0xfc\)\)/, 'and marked DSCP 10 (tos 0x28)');
    t.match(await datapathActions(sw, vif1ToVif2(53)), /sample\(sample=100\.0%,actions\(meter\(\d+\),userspace/, 'the logged DNS packet-ins go through acl-meter');
    t.notMatch(await datapathActions(sw, vif1ToVif2(54)), /actions\(meter\(/, 'later-meter is not there yet: its packet-ins are not metered');
  });

  t.test('an SB band change modifies the meter; a meter row coming late meters the packet-ins from then on', async (t) => {
    const r = await af.apply(upd([{ table: 'Meter_Band', uuid: U(1, 0x11), row: meterBand(U(1, 0x11), 20, 40) }]), view);
    t.same(r.errors, []);
    t.equal(r.changes, 1, 'one meter_mod, no flow');
    t.ok((await meters(sw)).some((m) => /^meter=\d+ pktps burst stats bands= type=drop rate=20 burst_size=40$/.test(m)), 'acl-meter has its new band');
    const late = [meterBand(U(2, 0x11), 5), meter(U(2, 0x10), 'later-meter', 'pktps', [U(2, 0x11)])];
    const r2 = await af.apply(upd([{ table: 'Meter_Band', uuid: U(2, 0x11), row: late[0] as Row }, { table: 'Meter', uuid: U(2, 0x10), row: late[1] as Row }]), view);
    t.same(r2.errors, []);
    t.ok((await meters(sw)).some((m) => /^meter=\d+ pktps stats bands= type=drop rate=5$/.test(m)), 'later-meter is installed');
    t.match(await datapathActions(sw, vif1ToVif2(54)), /sample\(sample=100\.0%,actions\(meter\(\d+\),userspace/, 'and the flow that named it was sent again: its packet-ins are metered');
  });

  t.test('a restarted agent finds the meters in place', async (t) => {
    const ch2 = await OfChannel.connect({ target: sw.mgmtTarget });
    t.teardown(() => ch2.close());
    const af2 = new AgentFlows(new OfSwitch(ch2), { ctZones: af.ctZones() });
    const now = [...rows().filter(([table]) => table !== 'Meter_Band'), ['Meter_Band', meterBand(U(1, 0x11), 20, 40)] as [string, Row],
      ['Meter_Band', meterBand(U(2, 0x11), 5)] as [string, Row], ['Meter', meter(U(2, 0x10), 'later-meter', 'pktps', [U(2, 0x11)])] as [string, Row]];
    const r = await af2.apply(resetOf(now), view);
    t.same(r.errors, []);
    t.equal(r.reconciled, true);
    t.equal(r.changes, 0, 'nothing re-sent (a burst size of 0 reads back as the rate, and is the same meter)');
  });

  t.test('flows gone: their meters go after them', async (t) => {
    const r = await af.apply(upd([{ table: 'Logical_Flow', uuid: qosMeterUuid }, { table: 'Logical_Flow', uuid: qosBurstUuid }]), view);
    t.same(r.errors, []);
    const ms = await meters(sw);
    t.equal(ms.length, 2, `the two set_meter meters are gone: ${ms.join(' | ')}`);
    t.notMatch(await datapathActions(sw, vif1ToVif2(80)), /meter\(/, 'vif1 is no longer metered');
    const r2 = await af.apply(upd([{ table: 'Logical_Flow', uuid: aclUuid }, { table: 'Logical_Flow', uuid: aclLaterUuid }]), view);
    t.same(r2.errors, []);
    t.same(await meters(sw), [], 'no flow names acl-meter or later-meter: deleted though their SB rows are there');
  });
}

if (ovsSwitchInstalled()) await main();
else t.plan(0, 'Open vSwitch is not installed');
