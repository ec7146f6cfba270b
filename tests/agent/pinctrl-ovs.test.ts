// Goal: with a real ovs-vswitchd, the packets our controller actions send to the agent come back
// out of the pipeline as OVN's would: an ARP request built by arp { } and finished by its nested
// actions, an ICMP time-exceeded from icmp4_error { }, "fragmentation needed" / "packet too big"
// with the MTU icmp4.frag_mtu / icmp6.frag_mtu write in (a pause and a resume), the same errors
// from the path MTU flows ovn-controller installs for a multichassis port (tables 37 and 38), a
// DHCPOFFER from put_dhcp_opts after the resume (and the result bit steering the next table), and
// a put_arp binding written to the SB.
// Method: a private switch (userspace datapath, dummy ports); logical actions compiled by our
// action compiler into flows by hand-written matches; packets arrive on a dummy port; "output"
// (table 37) sends the finished packet to the controller with a marker, where the test reads it.

import t from 'tap';
import { compileActions } from '../../agent/actions/index.js';
import { buildSymtab } from '../../agent/expr/index.js';
import { pathMtuFlows } from '../../agent/flows/physical.js';
import { OfChannel } from '../../agent/openflow/channel.js';
import type { OfMessage, PacketIn2 } from '../../agent/openflow/messages.js';
import type { FlowSpec, MaskedValue, OfAction } from '../../agent/openflow/types.js';
import { Pinctrl, type PacketInOutcome } from '../../agent/pinctrl/index.js';
import {
  DHCP_MSG, ETH_TYPE, IPV4_FLAG_DF, IP_PROTO, buildArp, buildDhcp, buildEthernet, buildIpv4, buildIpv6, buildUdp, fillUdp6Checksum, formatIpv4,
  icmp6ChecksumOk, internetChecksum, isPacketError, parseDhcp, parseFrame, parseIpv4, type Frame,
} from '../../agent/pinctrl/packet.js';
import { ovsSwitchInstalled, startOvsSwitch } from '../helpers/ovs-switch.js';

const symtab = buildSymtab();
const ones = (bits: number): bigint => (1n << BigInt(bits)) - 1n;
const ex = (value: bigint, bits: number): MaskedValue => ({ value, mask: ones(bits) });
const ip4 = (s: string): number => parseIpv4(s) as number;
const M = (o: Record<string, MaskedValue>): Map<string, MaskedValue> => new Map(Object.entries(o));
const flow = (table: number, priority: number, match: Map<string, MaskedValue>, actions: readonly OfAction[]): FlowSpec =>
  ({ table, priority, match, actions, cookie: BigInt(table * 1000 + priority) });

/** Ingress logical table N is OpenFlow table 8+N; `next` from table 0 is resubmit(,9); output is resubmit(,37). */
function actions(text: string, table = 0): OfAction[] {
  const r = compileActions(text, { symtab, pipeline: 'ingress', table, isSwitch: false, lookupPort: () => 1 });
  if ('error' in r) throw new Error(`${text}: ${r.error}`);
  return r.actions;
}

/** The userdata of the controller() that ends the pipeline: opcode 0xffffffff, which pinctrl does not know. */
const OUTPUT_MARK = Buffer.from('ffffffff00000000', 'hex');
const NO_REPLY_MARK = Buffer.from('fffffffe00000000', 'hex');
const CLIENT = '52:54:00:c0:ff:ee';
/** fd40::/64, the IPv6 destinations a gateway_mtu flow answers. */
const FD40 = 0xfd40n << 112n;
const ROUTER_MAC = '0a:00:00:00:00:fe';
/** The multichassis port's MTU less its tunnels' overhead (1400 - 58). */
const MCP_MTU = 1342;

const flows: FlowSpec[] = [
  // Port 1 is logical port 1 of datapath 1.
  flow(0, 100, M({ in_port: ex(1n, 32) }), [
    { kind: 'set_field', field: 'metadata', value: 1n }, { kind: 'set_field', field: 'reg14', value: 1n }, { kind: 'resubmit', table: 8 },
  ]),
  // arp { }: the route says next hop 20.0.0.2 (reg0) via the router address 20.0.0.1 (reg1).
  flow(8, 100, M({ eth_type: ex(0x800n, 16), ipv4_dst: { value: BigInt(ip4('20.0.0.0')), mask: 0xffffff00n } }), [
    { kind: 'set_field', field: 'reg0', value: BigInt(ip4('20.0.0.2')) }, { kind: 'set_field', field: 'reg1', value: BigInt(ip4('20.0.0.1')) },
    ...actions('arp { eth.dst = ff:ff:ff:ff:ff:ff; arp.spa = reg1; arp.tpa = reg0; arp.op = 1; output; };'),
  ]),
  // icmp4_error { }: TTL exceeded from the router's address, as lr_in_ip_input does.
  flow(8, 90, M({ eth_type: ex(0x800n, 16), ipv4_dst: { value: BigInt(ip4('30.0.0.0')), mask: 0xffffff00n } }),
    actions('icmp4_error { eth.dst <-> eth.src; ip4.dst = ip4.src; ip4.src = 30.0.0.1; ip.ttl = 254; icmp4.type = 11; icmp4.code = 0; output; };')),
  // lr_in_larger_pkts (a port's gateway_mtu): a too-big packet answered with "fragmentation
  // needed" / "packet too big" carrying the MTU, which icmp4.frag_mtu / icmp6.frag_mtu have the
  // controller write in on the way (a pause and a resume), after the addresses are rewritten.
  flow(8, 85, M({ eth_type: ex(0x800n, 16), ipv4_dst: { value: BigInt(ip4('40.0.0.0')), mask: 0xffffff00n } }),
    actions('icmp4_error { flags.loopback = 1; eth.dst <-> eth.src; ip4.dst = ip4.src; ip4.src = 40.0.0.1; ip.ttl = 255; icmp4.type = 3; icmp4.code = 4; icmp4.frag_mtu = 1400; output; };')),
  flow(8, 85, M({ eth_type: ex(0x86ddn, 16), ipv6_dst: { value: FD40, mask: ones(64) << 64n } }),
    actions('icmp6_error { flags.loopback = 1; eth.dst <-> eth.src; ip6.dst = ip6.src; ip6.src = fd40::1; ip.ttl = 255; icmp6.type = 2; icmp6.code = 0; icmp6.frag_mtu = 1400; output; };')),
  // ls_in_dhcp_options and ls_in_dhcp_response.
  flow(8, 80, M({ eth_type: ex(0x800n, 16), ip_proto: ex(17n, 8), udp_src: ex(68n, 16), udp_dst: ex(67n, 16) }),
    actions('reg0[3] = put_dhcp_opts(offerip = 10.0.0.5, router = 10.0.0.1, netmask = 255.255.255.0, lease_time = 3600, server_id = 10.0.0.1, mtu = 1442); next;')),
  flow(9, 100, M({ reg0: { value: 8n, mask: 8n }, eth_type: ex(0x800n, 16), ip_proto: ex(17n, 8), udp_src: ex(68n, 16), udp_dst: ex(67n, 16) }),
    actions(`eth.dst = eth.src; eth.src = ${ROUTER_MAC}; ip4.src = 10.0.0.1; udp.src = 67; udp.dst = 68; outport = inport; flags.loopback = 1; output;`, 1)),
  flow(9, 50, M({}), [{ kind: 'controller', userdata: NO_REPLY_MARK }]),
  // lr_in_arp_resolve learning from ARP replies.
  flow(8, 70, M({ eth_type: ex(0x806n, 16), arp_op: ex(2n, 16) }), actions('put_arp(inport, arp.spa, arp.sha);')),
  flow(37, 0, M({}), [{ kind: 'controller', userdata: OUTPUT_MARK }]),
  // A multichassis port's path MTU flows, as physical.ts builds them: port 2 is logical port 7 of
  // datapath 2, sending to port 9 (straight to table 37 here), with 1400 less Geneve's and IPv4's
  // overhead as its MTU. Table 38's default marks a packet that was not too big; datapath 2's
  // first table hands the error the nested actions resubmit there to the test.
  flow(0, 100, M({ in_port: ex(2n, 32) }), [
    { kind: 'set_field', field: 'metadata', value: 2n }, { kind: 'set_field', field: 'reg14', value: 7n }, { kind: 'set_field', field: 'reg15', value: 9n },
    { kind: 'resubmit', table: 37 },
  ]),
  ...pathMtuFlows(2, 7, MCP_MTU, 0x7000n),
  flow(38, 0, M({}), [{ kind: 'controller', userdata: NO_REPLY_MARK }]),
  flow(8, 200, M({ metadata: ex(2n, 64) }), [{ kind: 'controller', userdata: OUTPUT_MARK }]),
];

async function main(): Promise<void> {
  const sw = await startOvsSwitch({ ports: 2 });
  t.teardown(() => sw.stop());
  const marked: PacketIn2[] = [];
  const outcomes: PacketInOutcome[] = [];
  let wake: (() => void) | undefined;
  // The channel's message handler needs pinctrl, and pinctrl needs the channel.
  const late: { pinctrl?: Pinctrl } = {};
  const onMessage = (m: OfMessage): void => {
    if (m.kind !== 'packet_in2') return;
    const head = m.userdata?.subarray(0, 8);
    if (head !== undefined && (head.equals(OUTPUT_MARK) || head.equals(NO_REPLY_MARK))) marked.push(m);
    else if (late.pinctrl !== undefined) outcomes.push(late.pinctrl.handlePacketIn(m));
    wake?.();
  };
  const ch = await OfChannel.connect({ target: sw.mgmtTarget, packetIn2: true, onMessage });
  t.teardown(() => ch.close());
  const txns: unknown[][] = [];
  const pinctrl = new Pinctrl({
    channel: ch,
    sb: { transact: async (ops) => { txns.push([...ops]); return ops.map(() => ({})); } },
    lookup: {
      portName: (dp, port) => (dp === 1 && port === 1 ? 'lrp-1' : undefined),
      datapathUuid: (dp) => (dp === 1 ? '7a1b2c3d-0000-4000-8000-000000000001' : undefined),
      macBinding: () => undefined,
    },
    wallClockMs: () => 1_700_000_000_000,
  });
  late.pinctrl = pinctrl;
  t.teardown(() => pinctrl.close());
  await ch.installBatch(flows.map((f) => ({ command: 'add' as const, ...f })));

  /** Sends 'frame' in on dummy port `port` and waits (bounded) for the packet the pipeline outputs. */
  async function roundTrip(frame: Buffer, port = 'p1', timeoutMs = 20_000): Promise<PacketIn2> {
    marked.length = 0;
    await sw.appctl('netdev-dummy/receive', port, frame.toString('hex'));
    const deadline = performance.now() + timeoutMs;
    while (marked.length === 0) {
      if (performance.now() > deadline) throw new Error(`no packet came out within ${timeoutMs} ms; pinctrl outcomes: ${JSON.stringify(outcomes.map((o) => o.kind))}`);
      await new Promise<void>((resolve) => {
        wake = resolve;
        setTimeout(resolve, 200).unref();
      });
    }
    return marked.shift() as PacketIn2;
  }
  const parsed = (pin: PacketIn2): Frame => {
    const f = parseFrame(pin.packet);
    if (isPacketError(f)) throw new Error(f.message);
    return f;
  };

  t.test('arp { }: the switch emits the ARP request the nested actions finished', async (t) => {
    const udp = buildUdp({ srcPort: 1000, dstPort: 2000 }, Buffer.alloc(10));
    const pkt = buildEthernet({ dst: ROUTER_MAC, src: CLIENT, ethType: ETH_TYPE.IPV4 },
      buildIpv4({ tos: 0, id: 1, flagsFragment: 0, ttl: 64, protocol: IP_PROTO.UDP, src: ip4('10.0.0.5'), dst: ip4('20.0.0.77') }, udp));
    const out = await roundTrip(pkt);
    t.same(outcomes.at(-1)?.kind, 'sent');
    const f = parsed(out);
    t.same(f.eth, { dst: 'ff:ff:ff:ff:ff:ff', src: CLIENT, ethType: ETH_TYPE.ARP, l3Offset: 14 });
    t.same(f.arp, { op: 1, sha: CLIENT, spa: ip4('20.0.0.1'), tha: '00:00:00:00:00:00', tpa: ip4('20.0.0.2') },
      'spa and tpa from reg1 and reg0: the registers were reloaded into the packet-out');
    t.strictSame(out.packet.subarray(0, 42), buildEthernet({ dst: 'ff:ff:ff:ff:ff:ff', src: CLIENT, ethType: ETH_TYPE.ARP },
      buildArp({ op: 1, sha: CLIENT, spa: ip4('20.0.0.1'), tha: '00:00:00:00:00:00', tpa: ip4('20.0.0.2') })));
    t.same([out.metadata?.get('metadata')?.value, out.metadata?.get('reg14')?.value ?? ((out.metadata?.get('xreg7')?.value ?? 0n) >> 32n)], [1n, 1n],
      'the emitted packet is still in datapath 1, from logical port 1');
  });

  t.test('icmp4_error { }: a TTL-exceeded message quoting the original, with valid checksums', async (t) => {
    const udp = buildUdp({ srcPort: 1000, dstPort: 33434 }, Buffer.alloc(20, 0x55));
    const ip = buildIpv4({ tos: 0, id: 9, flagsFragment: 0, ttl: 1, protocol: IP_PROTO.UDP, src: ip4('10.0.0.5'), dst: ip4('30.0.0.9') }, udp);
    const out = await roundTrip(buildEthernet({ dst: ROUTER_MAC, src: CLIENT, ethType: ETH_TYPE.IPV4 }, ip));
    const f = parsed(out);
    t.same(f.eth, { dst: CLIENT, src: ROUTER_MAC, ethType: ETH_TYPE.IPV4, l3Offset: 14 }, 'MACs swapped by the nested actions');
    t.same({ src: formatIpv4(f.ipv4?.src ?? 0), dst: formatIpv4(f.ipv4?.dst ?? 0), ttl: f.ipv4?.ttl, ok: f.ipv4?.checksumOk },
      { src: '30.0.0.1', dst: '10.0.0.5', ttl: 254, ok: true }, 'IP rewritten, header checksum kept right by the switch');
    t.same({ type: f.icmp4?.type, code: f.icmp4?.code, ok: f.icmp4?.checksumOk }, { type: 11, code: 0, ok: true });
    t.strictSame(f.l4?.subarray(8), ip, 'the original IP packet, quoted');
    t.equal(internetChecksum(f.l4 as Buffer), 0);
  });

  t.test('icmp4.frag_mtu: "fragmentation needed" leaves with the MTU written in by the resume, both checksums right', async (t) => {
    const udp = buildUdp({ srcPort: 1000, dstPort: 2000 }, Buffer.alloc(1500, 0x5a));
    const ip = buildIpv4({ tos: 0, id: 9, flagsFragment: IPV4_FLAG_DF, ttl: 64, protocol: IP_PROTO.UDP, src: ip4('10.0.0.5'), dst: ip4('40.0.0.9') }, udp);
    const out = await roundTrip(buildEthernet({ dst: ROUTER_MAC, src: CLIENT, ethType: ETH_TYPE.IPV4 }, ip));
    t.match(outcomes.slice(-2).map((o) => o.kind), ['sent', 'sent'], 'the error was built, then resumed with the MTU');
    const f = parsed(out);
    t.same({ src: formatIpv4(f.ipv4?.src ?? 0), dst: formatIpv4(f.ipv4?.dst ?? 0), ttl: f.ipv4?.ttl, ok: f.ipv4?.checksumOk },
      { src: '40.0.0.1', dst: '10.0.0.5', ttl: 255, ok: true }, 'from the router to the sender, IP header checksum right');
    t.same({ type: f.icmp4?.type, code: f.icmp4?.code, mtu: (f.icmp4?.rest ?? 0) & 0xffff, ok: f.icmp4?.checksumOk }, { type: 3, code: 4, mtu: 1400, ok: true },
      'destination unreachable, fragmentation needed, next-hop MTU 1400, ICMP checksum right');
    t.equal(internetChecksum(f.l4 as Buffer), 0);
  });

  t.test('icmp6.frag_mtu: "packet too big" leaves with the MTU written in by the resume, its checksum right', async (t) => {
    const src = (0xfd00n << 112n) | 5n;
    const udp = Buffer.from(buildUdp({ srcPort: 1000, dstPort: 2000 }, Buffer.alloc(1500, 0x5a)));
    fillUdp6Checksum(udp, src, FD40 | 9n);
    const ip = buildIpv6({ trafficClass: 0, flowLabel: 0, nextHeader: IP_PROTO.UDP, hopLimit: 64, src, dst: FD40 | 9n }, udp);
    const out = await roundTrip(buildEthernet({ dst: ROUTER_MAC, src: CLIENT, ethType: ETH_TYPE.IPV6 }, ip));
    const f = parsed(out);
    t.same({ src: f.ipv6?.src, dst: f.ipv6?.dst, hops: f.ipv6?.hopLimit }, { src: FD40 | 1n, dst: src, hops: 255 }, 'from the router to the sender');
    const l4 = f.l4 as Buffer;
    t.same({ type: l4[0], code: l4[1], mtu: l4.readUInt32BE(4) }, { type: 2, code: 0, mtu: 1400 }, 'packet too big, MTU 1400');
    t.ok(icmp6ChecksumOk(l4, FD40 | 1n, src), 'its checksum covers the rewritten addresses and the MTU');
  });

  function discover(msgType: number, flags = 0): Buffer {
    const chaddr = Buffer.alloc(16);
    Buffer.from(CLIENT.replace(/:/g, ''), 'hex').copy(chaddr);
    const dhcp = buildDhcp({
      op: 1, htype: 1, hlen: 6, hops: 0, xid: 0x5eed, secs: 0, flags, ciaddr: 0, yiaddr: 0, siaddr: 0, giaddr: 0, chaddr,
      sname: Buffer.alloc(64), file: Buffer.alloc(128), options: [{ code: 53, data: Buffer.from([msgType]) }, { code: 55, data: Buffer.from([1, 3, 6, 26]) }],
    });
    return buildEthernet({ dst: 'ff:ff:ff:ff:ff:ff', src: CLIENT, ethType: ETH_TYPE.IPV4 },
      buildIpv4({ tos: 0, id: 0, flagsFragment: 0, ttl: 64, protocol: IP_PROTO.UDP, src: 0, dst: 0xffffffff },
        buildUdp({ srcPort: 68, dstPort: 67 }, dhcp, { src: 0, dst: 0xffffffff })));
  }

  t.test('put_dhcp_opts: DHCPDISCOVER → resume → DHCPOFFER out of the next table', async (t) => {
    const out = await roundTrip(discover(DHCP_MSG.DISCOVER));
    t.strictSame(out.userdata?.subarray(0, 8), OUTPUT_MARK, 'reg0[3] was set: the response flow ran, not the no-reply one');
    const f = parsed(out);
    t.same(f.eth, { dst: CLIENT, src: ROUTER_MAC, ethType: ETH_TYPE.IPV4, l3Offset: 14 });
    t.same({ src: formatIpv4(f.ipv4?.src ?? 0), dst: formatIpv4(f.ipv4?.dst ?? 0), ok: f.ipv4?.checksumOk }, { src: '10.0.0.1', dst: '10.0.0.5', ok: true });
    t.same([f.udp?.srcPort, f.udp?.dstPort], [67, 68]);
    const d = parseDhcp((f.l4 as Buffer).subarray(8));
    if (isPacketError(d)) throw new Error(d.message);
    t.same({ op: d.op, xid: d.xid, yiaddr: formatIpv4(d.yiaddr), chaddr: d.chaddr.subarray(0, 6).toString('hex') }, { op: 2, xid: 0x5eed, yiaddr: '10.0.0.5', chaddr: '525400c0ffee' });
    t.same(d.options.map((o) => [o.code, o.data.toString('hex')]), [[53, '02'], [3, '0a000001'], [1, 'ffffff00'], [51, '00000e10'], [54, '0a000001'], [26, '05a2']],
      'OFFER with router, netmask, lease time, server id, MTU');
    const b = await roundTrip(discover(DHCP_MSG.DISCOVER, 0x8000));
    t.equal(formatIpv4(parsed(b).ipv4?.dst ?? 0), '255.255.255.255', 'broadcast flag: broadcast reply');
  });

  t.test('put_dhcp_opts: DHCPRELEASE resumes with the result bit clear', async (t) => {
    const out = await roundTrip(discover(DHCP_MSG.RELEASE));
    t.strictSame(out.userdata?.subarray(0, 8), NO_REPLY_MARK, 'the no-reply flow ran');
    t.equal(parsed(out).udp?.dstPort, 67, 'the request went on unchanged');
  });

  t.test('put_arp: the binding from an ARP reply is written to the SB', async (t) => {
    const reply = buildEthernet({ dst: ROUTER_MAC, src: '0a:00:00:00:00:42', ethType: ETH_TYPE.ARP },
      buildArp({ op: 2, sha: '0a:00:00:00:00:42', spa: ip4('20.0.0.2'), tha: ROUTER_MAC, tpa: ip4('20.0.0.1') }));
    const before = outcomes.length;
    await sw.appctl('netdev-dummy/receive', 'p1', reply.toString('hex'));
    const deadline = performance.now() + 20_000;
    while (outcomes.length === before && performance.now() < deadline) {
      await new Promise<void>((resolve) => {
        wake = resolve;
        setTimeout(resolve, 200).unref();
      });
    }
    t.same(outcomes.at(-1), { kind: 'learned', opcode: 1, put: 'queued' });
    await pinctrl.flushMacBindings();
    t.same(txns, [[{
      op: 'insert', table: 'MAC_Binding',
      row: { logical_port: 'lrp-1', ip: '20.0.0.2', mac: '0a:00:00:00:00:42', datapath: ['uuid', '7a1b2c3d-0000-4000-8000-000000000001'], timestamp: 1_700_000_000_000 },
    }]]);
  });

  t.test('a multichassis port\'s path MTU flows: a packet too big for its tunnels is answered with "fragmentation needed"', async (t) => {
    const small = buildEthernet({ dst: ROUTER_MAC, src: CLIENT, ethType: ETH_TYPE.IPV4 },
      buildIpv4({ tos: 0, id: 9, flagsFragment: IPV4_FLAG_DF, ttl: 64, protocol: IP_PROTO.UDP, src: ip4('10.0.0.5'), dst: ip4('10.0.0.9') },
        buildUdp({ srcPort: 1000, dstPort: 2000 }, Buffer.alloc(100, 0x5a))));
    t.strictSame((await roundTrip(small, 'p2')).userdata?.subarray(0, 8), NO_REPLY_MARK, 'a packet within the MTU goes on (table 38\'s default)');
    const udp = buildUdp({ srcPort: 1000, dstPort: 2000 }, Buffer.alloc(1500, 0x5a));
    const ip = buildIpv4({ tos: 0, id: 9, flagsFragment: IPV4_FLAG_DF, ttl: 64, protocol: IP_PROTO.UDP, src: ip4('10.0.0.5'), dst: ip4('10.0.0.9') }, udp);
    const out = await roundTrip(buildEthernet({ dst: ROUTER_MAC, src: CLIENT, ethType: ETH_TYPE.IPV4 }, ip), 'p2');
    t.strictSame(out.userdata?.subarray(0, 8), OUTPUT_MARK, 'the error went back into the ingress pipeline');
    t.match(outcomes.slice(-2).map((o) => o.kind), ['sent', 'sent'], 'the error was built, then resumed with the MTU');
    const f = parsed(out);
    t.same(f.eth, { dst: CLIENT, src: ROUTER_MAC, ethType: ETH_TYPE.IPV4, l3Offset: 14 }, 'back to the sender');
    t.same({ src: formatIpv4(f.ipv4?.src ?? 0), dst: formatIpv4(f.ipv4?.dst ?? 0), ttl: f.ipv4?.ttl, ok: f.ipv4?.checksumOk },
      { src: '10.0.0.9', dst: '10.0.0.5', ttl: 255, ok: true }, 'from the destination to the sender, TTL 255, IP header checksum right');
    t.same({ type: f.icmp4?.type, code: f.icmp4?.code, mtu: (f.icmp4?.rest ?? 0) & 0xffff, ok: f.icmp4?.checksumOk }, { type: 3, code: 4, mtu: MCP_MTU - 18, ok: true },
      'fragmentation needed, the MTU less the Ethernet overhead, ICMP checksum right');
    t.same([out.metadata?.get('metadata')?.value, (out.metadata?.get('reg9')?.value ?? 0n) & 2n, (out.metadata?.get('reg10')?.value ?? 0n) & 1n], [2n, 0n, 1n],
      'in datapath 2, the large-packet flag cleared, loopback allowed');
  });

  t.test('a multichassis port\'s path MTU flows: an IPv6 packet too big for its tunnels is answered with "packet too big"', async (t) => {
    const src = (0xfd00n << 112n) | 5n;
    const dst = (0xfd00n << 112n) | 9n;
    const udp = Buffer.from(buildUdp({ srcPort: 1000, dstPort: 2000 }, Buffer.alloc(1500, 0x5a)));
    fillUdp6Checksum(udp, src, dst);
    const out = await roundTrip(buildEthernet({ dst: ROUTER_MAC, src: CLIENT, ethType: ETH_TYPE.IPV6 },
      buildIpv6({ trafficClass: 0, flowLabel: 0, nextHeader: IP_PROTO.UDP, hopLimit: 64, src, dst }, udp)), 'p2');
    const f = parsed(out);
    t.same({ eth: f.eth.dst, src: f.ipv6?.src, dst: f.ipv6?.dst, hops: f.ipv6?.hopLimit }, { eth: CLIENT, src: dst, dst: src, hops: 255 }, 'from the destination to the sender, hop limit 255');
    const l4 = f.l4 as Buffer;
    t.same({ type: l4[0], code: l4[1], mtu: l4.readUInt32BE(4) }, { type: 2, code: 0, mtu: MCP_MTU - 18 }, 'packet too big, the MTU less the Ethernet overhead');
    t.ok(icmp6ChecksumOk(l4, dst, src), 'its checksum covers the swapped addresses and the MTU');
  });

  t.test('nothing was ignored on the way', async (t) => {
    t.same(pinctrl.stats.ignored, { not_action: 0, no_header: 0, unknown_opcode: 0, unsupported_opcode: 0, unknown_event: 0, bad_packet: 0, bad_userdata: 0, no_continuation: 0, not_sent: 0 });
    // Packet-outs: arp, icmp4_error and the four errors of the MTU tests; resumes: those four
    // and the three DHCP ones.
    t.same([pinctrl.stats.packetOuts, pinctrl.stats.resumes, pinctrl.stats.learned], [6, 7, 1]);
  });
}

if (ovsSwitchInstalled()) await main();
else t.plan(0, 'Open vSwitch is not installed');
