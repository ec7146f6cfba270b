// Gratuitous ARPs on localnet networks (agent/pinctrl/garp.ts): which addresses a chassis
// announces (its VIFs on switches with a plugged localnet port, not on others, never localports;
// the NAT addresses of patch ports whose is_chassis_resident() port is here, and of l3gateway
// ports bound here), the frames (a broadcast ARP request for its own address, or a RARP without
// an IPv4 address), the packet-out that enters them as from their port, and the schedule: five
// announcements 1, 3, 7, 15 and 31 s after a key appears, none after, and a new round once a key
// went and came back.

import t from 'tap';
import { computeLocality } from '../../agent/flows/local-datapaths.js';
import { SbStore } from '../../agent/flows/sb-store.js';
import type { LocalView } from '../../agent/local-view.js';
import { ChannelError } from '../../agent/openflow/channel.js';
import type { OfMessage } from '../../agent/openflow/messages.js';
import { garpPacket, garpPacketOut, Garps, garpSpecs, parseNatAddresses, type GarpSpec } from '../../agent/pinctrl/garp.js';
import { formatIpv4, isPacketError, parseArp, parseEthernet } from '../../agent/pinctrl/packet.js';
import type { Row } from '../../ovsdb/index.js';
import { FakeTimers } from '../helpers/fake-timers.js';
import { ids, port, resetOf, smallTopology, smallView, U } from './flows-fixtures.js';

const CR = U(30, 0xa);
const topology = (crChassis: string): [string, Row][] => [
  ...smallTopology().map(([tb, r]): [string, Row] => (r._uuid === ids.rpPub
    ? [tb, { ...r, nat_addresses: ['00:00:00:00:ff:02 172.16.0.1 172.16.0.100 is_chassis_resident("cr-lrp-pub")', '00:00:00:00:ff:09 172.16.0.9'] }]
    : [tb, r])),
  ['Port_Binding', port(CR, ids.lr0, 'cr-lrp-pub', 7, { type: 'chassisredirect', chassis: crChassis, options: { 'distributed-port': 'lrp-pub' } })],
  ['Port_Binding', port(U(31, 0xa), ids.pub, 'vm-pub', 4, { chassis: ids.hv1, mac: ['garbage', '00:00:00:00:aa:01 172.16.0.10 172.16.0.11 fd00::10'] })],
  ['Port_Binding', port(U(32, 0xa), ids.pub, 'vm-pub6', 5, { chassis: ids.hv1, mac: ['00:00:00:00:aa:02 fd00::11'] })],
  ['Port_Binding', port(U(33, 0xa), ids.pub, 'lp-pub', 6, { type: 'localport', chassis: ids.hv1, mac: ['00:00:00:00:aa:03 172.16.0.12'] })],
  ['Port_Binding', port(U(34, 0xa), ids.pub, 'gw-pub', 7, { type: 'l3gateway', chassis: ids.hv1, options: { peer: 'none', 'nat-addresses': '00:00:00:00:ee:01 172.16.0.50' } })],
];
const view = (): LocalView => smallView({ vifs: new Map([['vif1', 1], ['vif2', 2], ['vm-pub', 3], ['vm-pub6', 4], ['lp-pub', 5]]) });

function specsOf(rows: [string, Row][], v: LocalView = view()): GarpSpec[] {
  const store = new SbStore();
  store.apply(resetOf(rows));
  const chassisUuid = store.chassisByName(v.chassis)?._uuid;
  return garpSpecs(store, chassisUuid, v, computeLocality(store, chassisUuid, v));
}

const brief = (s: readonly GarpSpec[]): string[] => s.map((x) => `${x.key} ${x.mac} ${x.ipv4 === undefined ? 'rarp' : formatIpv4(x.ipv4)} dp=${x.dpKey} port=${x.portKey}`);

t.test('what a chassis announces', async (t) => {
  t.same(brief(specsOf(topology(ids.hv1))), [
    'gw-pub-172.16.0.50 00:00:00:00:ee:01 172.16.0.50 dp=3 port=7',
    'rp-pub-172.16.0.1 00:00:00:00:ff:02 172.16.0.1 dp=3 port=2',
    'rp-pub-172.16.0.100 00:00:00:00:ff:02 172.16.0.100 dp=3 port=2',
    'vm-pub 00:00:00:00:aa:01 172.16.0.10 dp=3 port=4',
    'vm-pub6 00:00:00:00:aa:02 rarp dp=3 port=5',
  ], 'VIFs on pub (the first address that parses, its first IPv4), the resident gateway\'s NAT addresses, the gateway port\'s option; not sw0\'s VIFs, not the localport, not an entry of a patch port naming no port');
  t.same(brief(specsOf(topology(ids.hv2))).filter((s) => s.startsWith('rp-pub')), [], 'the gateway port on hv2: its NAT addresses are hv2\'s to announce');
  t.same(brief(specsOf(topology(ids.hv1), { ...view(), localnetPatches: new Map() })), [], 'physnet not bridged here: nothing');
  t.same(specsOf(topology(ids.hv1), { ...view(), chassis: 'hv9' }), [], 'an unregistered chassis announces nothing');
});

t.test('nat_addresses entries parse as pinctrl reads them', async (t) => {
  t.same(parseNatAddresses('00:00:00:00:ff:02 172.16.0.1 is_chassis_resident("cr-x")'), { mac: '00:00:00:00:ff:02', ipv4: [0xac100001], port: 'cr-x' });
  t.same(parseNatAddresses('00:00:00:00:ff:02 172.16.0.1/24 fd00::1 172.16.0.2'), { mac: '00:00:00:00:ff:02', ipv4: [0xac100001, 0xac100002], port: undefined });
  t.same(parseNatAddresses('00:00:00:00:ff:02 junk 172.16.0.2'), { mac: '00:00:00:00:ff:02', ipv4: [], port: undefined }, 'addresses stop at the first word that is none; the rest is ignored');
  t.equal(parseNatAddresses('00:00:00:00:ff:02 is_chassis_resident(cr-x)'), undefined, 'the port must be quoted');
  t.equal(parseNatAddresses('172.16.0.1'), undefined, 'no MAC');
});

t.test('the frames and the packet-out', async (t) => {
  const garp = garpPacket({ mac: '00:00:00:00:aa:01', ipv4: 0xac10000a });
  const eth = parseEthernet(garp);
  if (isPacketError(eth)) throw new Error(eth.message);
  t.same([eth.dst, eth.src, eth.ethType], ['ff:ff:ff:ff:ff:ff', '00:00:00:00:aa:01', 0x0806], 'broadcast ARP from the port\'s MAC');
  const arp = parseArp(garp.subarray(eth.l3Offset));
  t.same(arp, { op: 1, sha: '00:00:00:00:aa:01', spa: 0xac10000a, tha: '00:00:00:00:00:00', tpa: 0xac10000a }, 'a request for its own address');
  const rarp = garpPacket({ mac: '00:00:00:00:aa:02', ipv4: undefined });
  t.same([rarp.readUInt16BE(12), rarp.readUInt16BE(14 + 6), rarp.subarray(14 + 8, 14 + 14).toString('hex'), rarp.readUInt32BE(14 + 14), rarp.subarray(14 + 18, 14 + 24).toString('hex'), rarp.readUInt32BE(14 + 24)],
    [0x8035, 3, '00000000aa02', 0, '00000000aa02', 0], 'RARP: opcode 3, the MAC as target, no addresses');
  const out = garpPacketOut({ key: 'vm-pub', mac: '00:00:00:00:aa:01', ipv4: 0xac10000a, dpKey: 3, portKey: 4 });
  t.same(out.actions, [
    { kind: 'set_field', field: 'metadata', value: 3n },
    { kind: 'set_field', field: 'reg14', value: 4n },
    { kind: 'resubmit', table: 8, inPort: 0xfffd },
  ], 'enters the logical ingress pipeline of pub as from vm-pub');
});

t.test('five announcements, then none, and a new round after the key comes back', async (t) => {
  const timers = new FakeTimers();
  const sent: OfMessage[] = [];
  let refuse = false;
  const problems: string[] = [];
  const g = new Garps({
    channel: { send: (m: OfMessage): void => { if (refuse) throw new ChannelError('overloaded', 'full'); sent.push(m); } },
    timers, onProblem: (m) => problems.push(m),
  });
  const spec: GarpSpec = { key: 'vm-pub', mac: '00:00:00:00:aa:01', ipv4: 0xac10000a, dpKey: 3, portKey: 4 };
  const at: number[] = [];
  const t0 = timers.now();
  const advance = async (ms: number): Promise<void> => {
    for (let i = 0; i < ms / 500; i++) {
      const before = sent.length;
      await timers.advance(500);
      if (sent.length > before) at.push(timers.now() - t0);
    }
  };
  g.sync([spec]);
  await advance(60_000);
  t.same(at, [1000, 3000, 7000, 15000, 31000], 'at 1, 3, 7, 15 and 31 s');
  g.sync([{ ...spec, portKey: 9 }]);
  await advance(10_000);
  t.equal(at.length, 5, 'a known key with new keys is not announced again');
  g.sync([]);
  t.same(g.keys, [], 'gone');
  g.sync([spec]);
  await advance(2000);
  t.equal(at.length, 6, 'back: a new round');
  refuse = true;
  await advance(2000);
  t.equal(g.stats.notSent, 1, 'a send the channel refuses is counted');
  t.match(problems[0], /gratuitous ARP for vm-pub not sent/);
  g.close();
});

t.test('garp-max-timeout-sec: the backoff doubles from 1 s up to the cap and the announcements never stop; a change starts them over', async (t) => {
  const timers = new FakeTimers();
  const sent: number[] = [];
  const g = new Garps({ channel: { send: (): void => void sent.push(timers.now()) }, timers });
  const t0 = timers.now();
  g.setMaxTimeoutSec(4);
  g.sync([{ key: 'vm-pub', mac: '00:00:00:00:aa:01', ipv4: 0xac10000a, dpKey: 3, portKey: 4 }]);
  await timers.advance(30_000);
  t.same(sent.map((x) => x - t0), [1000, 2000, 4000, 8000, 12000, 16000, 20000, 24000, 28000], '1 s, then waits of 1, 2, 4, 4, 4... s (23.03.3\'s schedule)');
  await timers.advance(3_600_000);
  t.equal(sent.filter((x) => x > t0 + 30_000).length, 900, 'and on: every 4 s for the next hour');
  sent.length = 0;
  g.setMaxTimeoutSec(4);
  await timers.advance(8_000);
  t.equal(sent.length, 2);
  t.ok(sent.every((x) => (x - t0 - 28_000) % 4000 === 0), 'the same value changes nothing: still every 4 s in step');
  sent.length = 0;
  const t2 = timers.now();
  g.setMaxTimeoutSec(0);
  await timers.advance(60_000);
  t.same(sent.map((x) => x - t2), [1000, 3000, 7000, 15000, 31000], 'back to 0: started over, five announcements on 23.03.1\'s schedule');
  t.throws(() => g.setMaxTimeoutSec(-1), /count of seconds/);
  g.close();
});
