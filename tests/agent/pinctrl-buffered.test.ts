// Goal: the packet that made the agent ask for a next hop's MAC (arp { }, nd_ns { }) is not lost:
// it is held under (datapath, output port, next hop) and sent on, with that MAC, into the output
// stage once a MAC_Binding for the port and IP shows up — also through a distributed gateway
// port's chassisredirect port — within OVN's bounds (4 per hop, 1,000 hops, 10 s). And nd_ns { }
// builds the neighbor solicitation ovn-controller builds. Method: the Pinctrl shell over a fake
// channel, userdata compiled by our action compiler, packets built and parsed with the codec.
import t from 'tap';
import { ACTION_OPCODE, OFTABLE_OUTPUT_INIT } from '../../agent/compile/tables.js';
import type { OfMessage } from '../../agent/openflow/messages.js';
import type { MaskedValue } from '../../agent/openflow/types.js';
import { BufferedPackets, hopKey } from '../../agent/pinctrl/buffered-packets.js';
import { composeNdNs, linkLocalOf } from '../../agent/pinctrl/compose.js';
import { Pinctrl, type PortKeys } from '../../agent/pinctrl/index.js';
import {
  ETH_TYPE, ICMP6_TYPE, IP_PROTO, buildEthernet, buildIpv4, buildIpv6, buildUdp, icmp6ChecksumOk, isPacketError, parseFrame, parseIpv4, parseNd,
} from '../../agent/pinctrl/packet.js';
import { controllerUserdata, full } from './pinctrl-fixtures.js';

const ip4 = (s: string): number => parseIpv4(s) as number;
const M = (o: Record<string, bigint>): Map<string, MaskedValue> =>
  new Map(Object.entries(o).map(([k, v]) => [k, { value: v, mask: k === 'metadata' ? full(64) : full(32) }]));
const userdataOf = (actions: string): Buffer => controllerUserdata(actions, { table: 10, isSwitch: false });
const ARP_ACTIONS = 'arp { eth.dst = ff:ff:ff:ff:ff:ff; arp.spa = reg1; arp.tpa = reg0; arp.op = 1; output; };';

function udpTo(dst: string, n: number): Buffer {
  const udp = buildUdp({ srcPort: 5000 + n, dstPort: 53 }, Buffer.alloc(8, n), { src: ip4('10.0.0.5'), dst: ip4(dst) });
  return buildEthernet({ dst: '00:00:00:00:00:00', src: '0a:00:00:00:00:01', ethType: ETH_TYPE.IPV4 },
    buildIpv4({ tos: 0, id: n, flagsFragment: 0, ttl: 63, protocol: IP_PROTO.UDP, src: ip4('10.0.0.5'), dst: ip4(dst) }, udp));
}

function pinctrlWith(ports: Record<string, PortKeys>, clock: { now: number }): { p: Pinctrl; sent: OfMessage[] } {
  const sent: OfMessage[] = [];
  const p = new Pinctrl({
    channel: { send: (m) => void sent.push(m) },
    sb: { transact: async (ops) => ops.map(() => ({})) },
    lookup: { portName: () => undefined, datapathUuid: () => undefined, macBinding: () => undefined },
    portKeys: (name) => ports[name],
    nowMs: () => clock.now,
  });
  return { p, sent };
}

t.test('arp { }: the packet is held and sent on with the learned MAC, into the output stage', async (t) => {
  const clock = { now: 0 };
  const { p, sent } = pinctrlWith({ 'lrp-ext': { dpKey: 7, portKey: 3 } }, clock);
  t.teardown(() => p.close());
  const md = M({ metadata: 7n, reg15: 3n, reg0: BigInt(ip4('172.16.0.9')), reg1: BigInt(ip4('172.16.0.1')), reg14: 1n });
  for (let n = 1; n <= 2; n++) p.handlePacketIn({ packet: udpTo('8.8.8.8', n), userdata: userdataOf(ARP_ACTIONS), metadata: md, reason: 1 });
  t.equal(sent.length, 2, 'an ARP request went out for each');
  sent.length = 0;
  t.equal(p.macBindingsChanged([{ logical_port: 'lrp-ext', ip: '172.16.0.8', mac: '0a:00:00:00:00:88' }]), 0, 'another IP releases nothing');
  t.equal(p.macBindingsChanged([{ logical_port: 'lrp-ext', ip: '172.16.0.9', mac: '0a:00:00:00:00:99' }]), 2, 'the next hop resolved: both packets go');
  t.equal(sent.length, 2);
  for (const [i, m] of sent.entries()) {
    if (m.kind !== 'packet_out') throw new Error(m.kind);
    const f = parseFrame(m.data);
    if (isPacketError(f)) throw new Error(f.message);
    t.equal(f.eth.dst, '0a:00:00:00:00:99', `packet ${i + 1}: destination MAC is the learned one`);
    t.equal(f.ipv4?.id, i + 1, `packet ${i + 1}: in the order it came`);
    t.same(m.actions.at(-1), { kind: 'resubmit', table: OFTABLE_OUTPUT_INIT, inPort: 0xfffd }, 'into the output stage, from the controller');
    t.ok(m.actions.some((a) => a.kind === 'set_field' && a.field === 'reg15' && a.value === 3n), 'with its output port reloaded');
    t.ok(m.actions.some((a) => a.kind === 'set_field' && a.field === 'pkt_mark'), 'and pkt_mark, as ovn-controller reloads it');
  }
  t.equal(p.macBindingsChanged([{ logical_port: 'lrp-ext', ip: '172.16.0.9', mac: '0a:00:00:00:00:99' }]), 0, 'sent once');
  t.same(p.stats.buffered, { held: 2, sent: 2, dropped: 0, refused: 0 });
});

t.test('a distributed gateway port: the binding on the port releases what waits on its chassisredirect port', async (t) => {
  const clock = { now: 0 };
  const { p, sent } = pinctrlWith({ 'lrp-gw': { dpKey: 7, portKey: 2, chassisRedirectPort: 'cr-lrp-gw' }, 'cr-lrp-gw': { dpKey: 7, portKey: 9 } }, clock);
  t.teardown(() => p.close());
  p.handlePacketIn({ packet: udpTo('8.8.8.8', 1), userdata: userdataOf(ARP_ACTIONS), metadata: M({ metadata: 7n, reg15: 9n, reg0: BigInt(ip4('172.16.0.9')) }), reason: 1 });
  sent.length = 0;
  t.equal(p.macBindingsChanged([{ logical_port: 'lrp-gw', ip: '172.16.0.9', mac: '0a:00:00:00:00:99' }]), 1);
});

t.test('bounds: 4 packets per next hop, the oldest gives way; a hop times out after 10 s', async (t) => {
  const b = new BufferedPackets();
  const key = hopKey(1, 2, '10.0.0.1');
  for (let n = 1; n <= 6; n++) b.hold(key, udpTo('10.0.0.1', n), [], 0);
  const out = b.release(key, '0a:00:00:00:00:01');
  t.same(out.map((m) => (m.kind === 'packet_out' ? parseFrame(m.data) : undefined)).map((f) => (f === undefined || isPacketError(f) ? 0 : f.ipv4?.id)), [3, 4, 5, 6]);
  t.equal(b.stats.dropped, 2);
  b.hold(key, udpTo('10.0.0.1', 7), [], 1_000);
  b.expire(11_000);
  t.equal(b.hopsWaiting, 1, 'still there at 10 s');
  b.expire(11_001);
  t.equal(b.hopsWaiting, 0, 'gone after 10 s');
  t.same(b.release(key, '0a:00:00:00:00:01'), []);
  const small = new BufferedPackets({ packetsPerHopMax: 4, hopsMax: 2, hopTimeoutMs: 10_000 });
  t.ok(small.hold('a', udpTo('10.0.0.1', 1), [], 0) && small.hold('b', udpTo('10.0.0.1', 1), [], 0));
  t.notOk(small.hold('c', udpTo('10.0.0.1', 1), [], 0), 'a third next hop is not held');
  t.equal(small.stats.refused, 1);
});

t.test('nd_ns { }: a solicitation for the destination, from its source MAC\'s link-local address', async (t) => {
  const src = (0x2001n << 112n) | 5n;
  const dst = (0x2001n << 112n) | (0xdbn << 96n) | 0x1234abcdn;
  const NO_NEXT_HEADER = 59;
  const pkt = buildEthernet({ dst: '00:00:00:00:00:00', src: '0a:00:00:00:00:01', ethType: ETH_TYPE.IPV6 },
    buildIpv6({ trafficClass: 0, flowLabel: 0, nextHeader: NO_NEXT_HEADER, hopLimit: 64, src, dst }, Buffer.alloc(0)));
  const f = parseFrame(pkt);
  if (isPacketError(f)) throw new Error(f.message);
  const ns = composeNdNs(f);
  if (isPacketError(ns)) throw new Error(ns.message);
  const g = parseFrame(ns);
  if (isPacketError(g) || g.ipv6 === undefined) throw new Error('not IPv6');
  t.equal(g.eth.dst, '33:33:ff:34:ab:cd', 'to the solicited-node group\'s MAC');
  t.equal(g.eth.src, '0a:00:00:00:00:01');
  t.equal(g.ipv6.src, linkLocalOf('0a:00:00:00:00:01'), 'from the link-local address of the source MAC');
  t.equal(g.ipv6.src, 0xfe80000000000000080000fffe000001n, 'fe80::800:ff:fe00:1 (modified EUI-64)');
  t.equal(g.ipv6.dst, 0xff0200000000000000000001ff34abcdn, 'ff02::1:ff34:abcd');
  t.equal(g.ipv6.hopLimit, 255);
  const icmp = ns.subarray(g.eth.l3Offset + 40);
  t.ok(icmp6ChecksumOk(icmp, g.ipv6.src, g.ipv6.dst), 'ICMPv6 checksum right');
  const nd = parseNd(icmp);
  if (isPacketError(nd)) throw new Error(nd.message);
  t.same([nd.type, nd.target, nd.sll], [ICMP6_TYPE.ND_NS, dst, '0a:00:00:00:00:01'], 'NS for the destination, with the source link-layer option');
  // And it is buffered under the next hop in xxreg0.
  const clock = { now: 0 };
  const { p, sent } = pinctrlWith({ 'lrp-v6': { dpKey: 4, portKey: 1 } }, clock);
  t.teardown(() => p.close());
  const out = p.handlePacketIn({ packet: pkt, userdata: userdataOf('nd_ns { nd.target = xxreg0; output; };'), metadata: M({ metadata: 4n, reg15: 1n, reg0: 0x20010000n, reg1: 0n, reg2: 0n, reg3: 0x99n }), reason: 1 });
  t.same([out.kind, out.kind === 'sent' ? out.opcode : 0], ['sent', ACTION_OPCODE.ND_NS]);
  sent.length = 0;
  t.equal(p.macBindingsChanged([{ logical_port: 'lrp-v6', ip: '2001::99', mac: '0a:00:00:00:00:66' }]), 1, 'the NDP answer releases it');
});
