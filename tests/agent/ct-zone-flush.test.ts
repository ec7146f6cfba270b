// Conntrack zones are flushed when they change hands, as ovn-controller does it: a zone given to
// a new user (a port bound here, a router's SNAT/DNAT) or given up is emptied before the flows
// of its new owner are installed, so a new port never inherits an old port's connections.
// Zones restored from br-int at start keep their entries. Method: AgentFlows over a
// MemorySwitch (which zones were flushed, in which apply); and OfSwitch against a real
// ovs-vswitchd, where a committed conntrack entry in the flushed zone is gone and one in another
// zone stays.
import t from 'tap';
import { AgentFlows } from '../../agent/flows/agent-flows.js';
import { MemorySwitch } from '../../agent/flows/memory-switch.js';
import { OfSwitch } from '../../agent/flows/ofswitch.js';
import { OfChannel } from '../../agent/openflow/channel.js';
import { ovsSwitchInstalled, startOvsSwitch } from '../helpers/ovs-switch.js';
import type { Row } from '../../ovsdb/index.js';
import { ids, resetOf, smallTopology, smallView } from './flows-fixtures.js';

t.test('zones that change hands are flushed, once, before the install', async (t) => {
  const sw = new MemorySwitch();
  const af = new AgentFlows(sw);
  const r1 = await af.apply(resetOf(smallTopology()), smallView());
  t.same(r1.errors, []);
  const zones = af.ctZones();
  t.ok(zones.get('vif1') !== undefined && zones.get('vif2') !== undefined, 'the local ports have zones');
  t.same([...sw.flushedZones].sort((a, b) => a - b), [...new Set(zones.values())].sort((a, b) => a - b), 'every newly assigned zone flushed at the first install');
  sw.flushedZones.length = 0;
  await af.applyView(smallView());
  t.same(sw.flushedZones, [], 'nothing flushed when no zone changed');
  // vif2 moves to hv2: its binding names hv2 and its interface is gone from here.
  const vif2Zone = zones.get('vif2') as number;
  const [, vif2Row] = smallTopology().find(([table, r]) => table === 'Port_Binding' && (r as unknown as { logical_port: string }).logical_port === 'vif2') as [string, Row];
  const moved = { ...vif2Row, chassis: [ids.hv2], _version: `${vif2Row._version}-moved` } as unknown as Row;
  await af.apply({ reset: false, fromRevision: 1, toRevision: 2, changes: [{ table: 'Port_Binding', uuid: vif2Row._uuid, row: moved }] }, smallView({ vifs: new Map([['vif1', 1]]) }));
  t.equal(af.ctZones().get('vif2'), undefined, 'vif2 has no zone here any more');
  t.same(sw.flushedZones, [vif2Zone], 'the zone vif2 gave up is flushed');
  sw.flushedZones.length = 0;
  await af.apply({ reset: false, fromRevision: 2, toRevision: 3, changes: [{ table: 'Port_Binding', uuid: vif2Row._uuid, row: vif2Row }] }, smallView());
  t.equal(sw.flushedZones.length, 1, 'vif2 back here: its zone is flushed');
  t.equal(sw.flushedZones[0], af.ctZones().get('vif2'));
});

t.test('zones restored from the bridge are not flushed', async (t) => {
  const sw = new MemorySwitch();
  const af = new AgentFlows(sw, { ctZones: new Map([['vif1', 7], ['vif2', 9]]) });
  await af.apply(resetOf(smallTopology()), smallView());
  t.equal(af.ctZones().get('vif1'), 7);
  t.equal(af.ctZones().get('vif2'), 9);
  t.notOk(sw.flushedZones.includes(7) || sw.flushedZones.includes(9), `restored zones kept (flushed: ${JSON.stringify(sw.flushedZones)})`);
});

t.test('a real ovs-vswitchd: the flushed zone loses its connections, the others keep theirs', { skip: ovsSwitchInstalled() ? false : 'Open vSwitch is not installed' }, async (t) => {
  const ovs = await startOvsSwitch();
  t.teardown(() => ovs.stop());
  await ovs.vsctl('add-port', ovs.bridge, 'p1', '--', 'set', 'interface', 'p1', 'type=dummy', 'ofport_request=1');
  // Packets sent out through the datapath commit one UDP connection in zone 7 and one in 8.
  for (const zone of [7, 8]) {
    await ovs.ofctl('packet-out', `in_port=1 packet=${udpFrame(zone)} actions=ct(commit,zone=${zone})`);
  }
  const zonesWithEntries = async (): Promise<number[]> => {
    const out = await ovs.appctl('dpctl/dump-conntrack');
    return [...new Set([...out.matchAll(/zone=(\d+)/g)].map((m) => Number(m[1])))].sort((a, b) => a - b);
  };
  t.same(await zonesWithEntries(), [7, 8], 'one connection in each zone');
  const ch = await OfChannel.connect({ target: ovs.mgmtTarget });
  t.teardown(() => ch.close());
  await new OfSwitch(ch).flushCtZones([7]);
  t.same(await zonesWithEntries(), [8], 'zone 7 flushed, zone 8 kept');
});

/** An Ethernet/IPv4/UDP frame (hex) from 10.0.0.1:1000+zone to 10.0.0.2:53; the IPv4 header
 *  checksum is right (conntrack checks it), the UDP one zero (allowed). */
function udpFrame(zone: number): string {
  const words = [0x4500, 0x001c, 0x0000, 0x4000, 0x4011, 0x0000, 0x0a00, 0x0001, 0x0a00, 0x0002];
  let sum = words.reduce((a, w) => a + w, 0);
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >> 16);
  words[5] = ~sum & 0xffff;
  const ip = words.map((w) => w.toString(16).padStart(4, '0')).join('');
  const udp = (1000 + zone).toString(16).padStart(4, '0') + '0035' + '0008' + '0000';
  return '000000000002' + '000000000001' + '0800' + ip + udp;
}
