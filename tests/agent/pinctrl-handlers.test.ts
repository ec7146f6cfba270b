// Goal: each controller action's packet-in gets the answer ovn-controller 23.03 gives it — the
// packet it builds, the actions it runs on it, the DHCP reply and result bit it resumes with, the
// binding it learns — and the Pinctrl shell sends it (or counts why not).
// Method: userdata compiled from OVN action text by our own action compiler, packets built with
// the codec, expected bytes and fields written from pinctrl.c's rules; a fake channel records.

import t, { type Test } from 'tap';
import { ACTION_OPCODE } from '../../agent/compile/tables.js';
import { OFPP, decodeActions } from '../../agent/openflow/actions.js';
import { ChannelError } from '../../agent/openflow/channel.js';
import type { OfMessage, PacketIn2 } from '../../agent/openflow/messages.js';
import type { MaskedValue, OfAction } from '../../agent/openflow/types.js';
import { decidePacketIn, type PacketInDecision } from '../../agent/pinctrl/handlers.js';
import { Pinctrl } from '../../agent/pinctrl/index.js';
import {
  DHCP_MSG, ETH_TYPE, IPV4_FLAG_DF, IP_PROTO, buildDhcp, buildEthernet, buildIcmp6, buildIpv4, buildIpv6, buildNdBody, buildUdp,
  formatIpv4, icmp6ChecksumOk, internetChecksum, isPacketError, parseDhcp, parseFrame, parseIpv4, type DhcpOptionTlv, type Frame,
} from '../../agent/pinctrl/packet.js';
import { controllerUserdata, full, hex } from './pinctrl-fixtures.js';

const ip4 = (s: string): number => parseIpv4(s) as number;
const M = (o: Record<string, bigint | MaskedValue>): Map<string, MaskedValue> =>
  new Map(Object.entries(o).map(([k, v]) => [k, typeof v === 'bigint' ? { value: v, mask: k.startsWith('xreg') || k === 'metadata' ? full(64) : full(32) } : v]));

const userdataOf = (actions: string): Buffer => controllerUserdata(actions, { table: 10, isSwitch: false });

function nestedOf(actions: string): OfAction[] {
  return decodeActions(userdataOf(actions).subarray(8));
}

const frame = (raw: Buffer): Frame => {
  const f = parseFrame(raw);
  if (isPacketError(f)) throw new Error(f.message);
  return f;
};

const ETH_A = '0a:00:00:00:00:01';
const ETH_B = '0a:00:00:00:00:02';

function udpPacket(payloadBytes = 12, vlanTci?: number): Buffer {
  const udp = buildUdp({ srcPort: 5000, dstPort: 53 }, Buffer.alloc(payloadBytes, 0x61), { src: ip4('10.0.0.1'), dst: ip4('20.0.0.2') });
  return buildEthernet({ dst: ETH_B, src: ETH_A, ethType: ETH_TYPE.IPV4, ...(vlanTci === undefined ? {} : { vlanTci }) },
    buildIpv4({ tos: 0, id: 7, flagsFragment: 0, ttl: 1, protocol: IP_PROTO.UDP, src: ip4('10.0.0.1'), dst: ip4('20.0.0.2') }, udp));
}

function expectKind<K extends PacketInDecision['kind']>(t: Test, d: PacketInDecision, kind: K): Extract<PacketInDecision, { kind: K }> {
  t.equal(d.kind, kind, d.kind === 'ignored' ? `ignored: ${d.message}` : `a ${kind}`);
  if (d.kind !== kind) throw new Error(`expected ${kind}, got ${JSON.stringify(d)}`);
  return d as Extract<PacketInDecision, { kind: K }>;
}

t.test('arp { }: an ARP request for the IPv4 destination, run through the reloaded registers and the nested actions', async (t) => {
  const text = 'arp { eth.dst = ff:ff:ff:ff:ff:ff; arp.spa = reg1; arp.tpa = reg0; arp.op = 1; output; };';
  const md = M({ metadata: 3n, xreg0: (BigInt(ip4('20.0.0.254')) << 32n) | BigInt(ip4('20.0.0.1')), reg14: 2n, in_port: 5n });
  const d = expectKind(t, decidePacketIn({ packet: udpPacket(), userdata: userdataOf(text), metadata: md, reason: 1 }), 'packet_out');
  t.equal(d.opcode, ACTION_OPCODE.ARP);
  t.equal(d.message.inPort, OFPP.CONTROLLER);
  t.equal(d.message.bufferId, 0xffffffff);
  t.strictSame(d.message.data, hex(`0a0000000002 0a0000000001 0806 0001 0800 0604 0001 0a0000000001 0a000001 000000000000 14000002`),
    'eth and ARP from the packet: sha/spa its source, tpa its destination, tha zero');
  t.same(d.message.actions, [
    { kind: 'set_field', field: 'reg0', value: BigInt(ip4('20.0.0.254')) },
    { kind: 'set_field', field: 'reg1', value: BigInt(ip4('20.0.0.1')) },
    { kind: 'set_field', field: 'reg14', value: 2n },
    { kind: 'set_field', field: 'metadata', value: 3n },
    ...nestedOf(text),
  ], 'registers and metadata reloaded (in_port is not), then the nested actions');

  const tagged = expectKind(t, decidePacketIn({ packet: udpPacket(12, 0x1064), userdata: userdataOf(text), metadata: md }), 'packet_out');
  t.same(frame(tagged.message.data).eth, { dst: ETH_B, src: ETH_A, vlanTci: 0x0064, ethType: ETH_TYPE.ARP, l3Offset: 18 }, 'the tag goes along, CFI cleared');

  const arpIn = buildEthernet({ dst: ETH_B, src: ETH_A, ethType: ETH_TYPE.ARP }, Buffer.alloc(28));
  const refused = expectKind(t, decidePacketIn({ packet: arpIn, userdata: userdataOf(text), metadata: md }), 'ignored');
  t.equal(refused.reason, 'bad_packet', 'arp { } needs an IPv4 packet');
  const badNested = Buffer.concat([userdataOf(text).subarray(0, 8), hex('ffff0010 00002320 00ff0000 00000000')]);
  t.equal(expectKind(t, decidePacketIn({ packet: udpPacket(), userdata: badNested, metadata: md }), 'ignored').reason, 'bad_userdata');
});

t.test('icmp4 { } and icmp4_error { }: destination unreachable quoting the original, 576 bytes at most', async (t) => {
  const orig = udpPacket();
  const md = M({ metadata: 1n });
  const icmp = expectKind(t, decidePacketIn({ packet: orig, userdata: userdataOf('icmp4 { eth.dst <-> eth.src; output; };'), metadata: md }), 'packet_out');
  const f = frame(icmp.message.data);
  t.same(f.eth, { dst: ETH_B, src: ETH_A, ethType: ETH_TYPE.IPV4, l3Offset: 14 }, 'addresses as the original (the nested actions swap them)');
  t.same({ src: f.ipv4?.src, dst: f.ipv4?.dst, ttl: f.ipv4?.ttl, tos: f.ipv4?.tos, df: f.ipv4?.flagsFragment, id: f.ipv4?.id, proto: f.ipv4?.protocol, ok: f.ipv4?.checksumOk },
    { src: ip4('10.0.0.1'), dst: ip4('20.0.0.2'), ttl: 255, tos: 0, df: IPV4_FLAG_DF, id: 0, proto: 1, ok: true });
  t.same({ ...f.icmp4 }, { type: 3, code: 3, rest: 0, checksum: f.icmp4?.checksum, checksumOk: true }, 'icmp4 on UDP: port unreachable');
  t.strictSame(f.l4?.subarray(8), orig.subarray(14), 'the whole original IP packet is quoted');

  const err = expectKind(t, decidePacketIn({ packet: orig, userdata: userdataOf('icmp4_error { icmp4.type = 11; output; };'), metadata: md }), 'packet_out');
  t.equal(frame(err.message.data).icmp4?.code, 1, 'icmp4_error starts from host unreachable whatever the protocol');
  t.equal(err.opcode, ACTION_OPCODE.ICMP4_ERROR);

  const big = udpPacket(1400);
  const clipped = frame(expectKind(t, decidePacketIn({ packet: big, userdata: userdataOf('icmp4 { output; };'), metadata: md }), 'packet_out').message.data);
  t.equal(clipped.ipv4?.totalLength, 576 - 14, 'the error fills 576 bytes with the Ethernet header');
  t.strictSame(clipped.l4?.subarray(8), big.subarray(14, 14 + 534));
  t.equal(internetChecksum(clipped.l4 as Buffer), 0, 'ICMP checksum over the clipped quote');
});

t.test('icmp6 { }: ICMPv6 destination unreachable with the pseudo-header checksum', async (t) => {
  const src = 0xfd000000000000000000000000000001n;
  const dst = 0xfd000000000000000000000000000002n;
  const orig = buildEthernet({ dst: ETH_B, src: ETH_A, ethType: ETH_TYPE.IPV6 },
    buildIpv6({ trafficClass: 0, flowLabel: 0, nextHeader: IP_PROTO.UDP, hopLimit: 1, src, dst }, buildUdp({ srcPort: 1, dstPort: 2 }, Buffer.alloc(4))));
  const d = expectKind(t, decidePacketIn({ packet: orig, userdata: userdataOf('icmp6 { output; };'), metadata: M({}) }), 'packet_out');
  const f = frame(d.message.data);
  t.same({ type: f.icmp6?.type, code: f.icmp6?.code, hop: f.ipv6?.hopLimit, src: f.ipv6?.src, dst: f.ipv6?.dst }, { type: 1, code: 4, hop: 255, src, dst });
  t.ok(icmp6ChecksumOk(f.l4 as Buffer, src, dst));
  t.strictSame(f.l4?.subarray(8), orig.subarray(14), 'the original quoted after 4 unused bytes');
  const e = frame(expectKind(t, decidePacketIn({ packet: orig, userdata: userdataOf('icmp6_error { output; };'), metadata: M({}) }), 'packet_out').message.data);
  t.equal(e.icmp6?.code, 1);
});

t.test('nd_na { }: a solicited, override advertisement for the solicited target', async (t) => {
  const target = 0xfe80000000000000000000000000000an;
  const solicitor = 0xfe800000000000000000000000000001n;
  const ns = buildEthernet({ dst: '33:33:ff:00:00:0a', src: ETH_A, ethType: ETH_TYPE.IPV6 },
    buildIpv6({ trafficClass: 0, flowLabel: 0, nextHeader: IP_PROTO.ICMPV6, hopLimit: 255, src: solicitor, dst: 0xff0200000000000000000001ff00000an },
      buildIcmp6({ type: 135, code: 0 }, buildNdBody({ type: 135, flags: 0, target, sll: ETH_A }), solicitor, 0xff0200000000000000000001ff00000an)));
  for (const [text, router] of [['nd_na { eth.src = 0a:00:00:00:00:aa; nd.tll = 0a:00:00:00:00:aa; output; };', false], ['nd_na_router { output; };', true]] as const) {
    const d = expectKind(t, decidePacketIn({ packet: ns, userdata: userdataOf(text), metadata: M({ reg14: 1n }) }), 'packet_out');
    const f = frame(d.message.data);
    t.same(f.eth, { dst: ETH_A, src: '33:33:ff:00:00:0a', ethType: ETH_TYPE.IPV6, l3Offset: 14 });
    t.same(f.nd, { type: 136, flags: router ? 0xe0000000 : 0x60000000, target, tll: '33:33:ff:00:00:0a' }, `${router ? 'R|' : ''}S|O flags`);
    t.same({ src: f.ipv6?.src, dst: f.ipv6?.dst, hop: f.ipv6?.hopLimit }, { src: target, dst: solicitor, hop: 255 });
    t.ok(icmp6ChecksumOk(f.l4 as Buffer, target, solicitor));
    t.same(d.message.actions, [{ kind: 'set_field', field: 'reg14', value: 1n }, ...nestedOf(text)]);
  }
  t.equal(expectKind(t, decidePacketIn({ packet: udpPacket(), userdata: userdataOf('nd_na { output; };'), metadata: M({}) }), 'ignored').reason, 'bad_packet');
});

t.test('put_arp / put_nd: the binding is read from reg14, metadata, reg0/xxreg0 and eth.src', async (t) => {
  const arpReply = buildEthernet({ dst: ETH_B, src: '0a:00:00:00:00:99', ethType: ETH_TYPE.ARP }, Buffer.alloc(28));
  const md = M({ metadata: 7n, reg14: 3n, reg0: BigInt(ip4('10.0.0.99')) });
  const d = expectKind(t, decidePacketIn({ packet: arpReply, userdata: userdataOf('put_arp(inport, arp.spa, arp.sha);'), metadata: md }), 'learn');
  t.same(d.binding, { dpKey: 7, portKey: 3, ip: '10.0.0.99', mac: '0a:00:00:00:00:99', unicast: true });
  const bcast = buildEthernet({ dst: 'ff:ff:ff:ff:ff:ff', src: '0a:00:00:00:00:99', ethType: ETH_TYPE.ARP }, Buffer.alloc(28));
  t.equal(expectKind(t, decidePacketIn({ packet: bcast, userdata: userdataOf('put_arp(inport, arp.spa, arp.sha);'), metadata: md }), 'learn').binding.unicast, false,
    'a gratuitous (broadcast) ARP is not unicast');
  // fd00::1:2 in xxreg0 = reg0..reg3, reported as the packet registers xreg0 (reg0:reg1) and xreg1 (reg2:reg3).
  const md6 = M({ metadata: 7n, xreg7: 3n << 32n, xreg0: 0xfd00000000000000n, xreg1: 0x0000000000010002n });
  const nd = expectKind(t, decidePacketIn({ packet: arpReply, userdata: userdataOf('put_nd(inport, nd.target, nd.tll);'), metadata: md6 }), 'learn');
  t.same(nd.binding, { dpKey: 7, portKey: 3, ip: 'fd00::1:2', mac: '0a:00:00:00:00:99', unicast: true }, 'reg14 is the high half of xreg7');
  const mapped = M({ xreg1: 0x0000ffff0a000063n });
  t.equal(expectKind(t, decidePacketIn({ packet: arpReply, userdata: userdataOf('put_nd(inport, nd.target, nd.tll);'), metadata: mapped }), 'learn').binding.ip,
    '10.0.0.99', 'an IPv4-mapped address is written as IPv4');
});

// ---- put_dhcp_opts ------------------------------------------------------------------------------

const CLIENT = '52:54:00:c0:ff:ee';
const dhcpText = 'reg0[3] = put_dhcp_opts(offerip = 10.0.0.5, router = 10.0.0.1, netmask = 255.255.255.0, lease_time = 3600, '
  + 'server_id = 10.0.0.1, T1 = 1800, mtu = 1400, bootfile_name = "pxe.efi", bootfile_name_alt = "ipxe.efi", next_server = 10.0.0.9);';

interface RequestOpts { msgType: number; flags?: number; ciaddr?: string; requestedIp?: string; ipxe?: boolean; vlanTci?: number }

function dhcpRequest(o: RequestOpts): Buffer {
  const options: DhcpOptionTlv[] = [{ code: 53, data: Buffer.from([o.msgType]) }];
  if (o.requestedIp !== undefined) options.push({ code: 50, data: Buffer.from(hex(ip4(o.requestedIp).toString(16).padStart(8, '0'))) });
  if (o.ipxe === true) options.push({ code: 175, data: Buffer.from([1, 1, 1]) });
  const chaddr = Buffer.alloc(16);
  Buffer.from(CLIENT.replace(/:/g, ''), 'hex').copy(chaddr);
  const dhcp = buildDhcp({
    op: 1, htype: 1, hlen: 6, hops: 0, xid: 0xabcd1234, secs: 3, flags: o.flags ?? 0, ciaddr: o.ciaddr === undefined ? 0 : ip4(o.ciaddr), yiaddr: 0,
    siaddr: ip4('1.1.1.1'), giaddr: 0, chaddr, sname: Buffer.alloc(64), file: Buffer.alloc(128), options,
  });
  const src = o.ciaddr === undefined ? 0 : ip4(o.ciaddr);
  const ip = buildIpv4({ tos: 0x10, id: 0, flagsFragment: 0, ttl: 128, protocol: IP_PROTO.UDP, src, dst: 0xffffffff },
    buildUdp({ srcPort: 68, dstPort: 67 }, dhcp, { src, dst: 0xffffffff }));
  // Ethernet padding after the IP packet must not survive into the reply.
  return Buffer.concat([buildEthernet({ dst: 'ff:ff:ff:ff:ff:ff', src: CLIENT, ethType: ETH_TYPE.IPV4, ...(o.vlanTci === undefined ? {} : { vlanTci: o.vlanTci }) }, ip), Buffer.alloc(6)]);
}

const dhcpMd = M({ metadata: 1n, reg14: 1n, xreg0: 0x0000000100000000n });
const pinOf = (packet: Buffer, userdata = userdataOf(dhcpText)): PacketIn2 => ({ packet, userdata, metadata: dhcpMd, continuation: hex('c0ffee'), reason: 1 });

function reply(t: Test, req: Buffer, userdata?: Buffer): { d: Extract<PacketInDecision, { kind: 'resume' }>; f: Frame; dhcp: ReturnType<typeof parseDhcp> } {
  const d = expectKind(t, decidePacketIn(pinOf(req, userdata)), 'resume');
  const f = frame(d.message.packet);
  return { d, f, dhcp: parseDhcp((f.l4 as Buffer).subarray(8)) };
}

const optionsOf = (x: ReturnType<typeof parseDhcp>): [number, string][] => (isPacketError(x) ? [] : x.options.map((o) => [o.code, o.data.toString('hex')]));
const ascii = (s: string): string => Buffer.from(s).toString('hex');

t.test('put_dhcp_opts: DHCPDISCOVER gets an OFFER of the offer IP with the options, result bit set', async (t) => {
  const req = dhcpRequest({ msgType: DHCP_MSG.DISCOVER });
  const { d, f, dhcp } = reply(t, req);
  t.equal(d.result, true);
  t.strictSame(d.message.continuation, hex('c0ffee'), 'the continuation goes back unchanged');
  t.same(d.message.metadata?.get('xreg0'), { value: 0x0000000900000000n, mask: full(64) }, 'reg0[3] is bit 35 of xreg0 (reg0 is its high half)');
  t.same(d.message.metadata?.get('reg14'), { value: 1n, mask: full(32) });
  if (isPacketError(dhcp)) throw new Error(dhcp.message);
  t.same({ op: dhcp.op, xid: dhcp.xid, secs: dhcp.secs, yiaddr: formatIpv4(dhcp.yiaddr), siaddr: formatIpv4(dhcp.siaddr), chaddr: dhcp.chaddr.subarray(0, 6).toString('hex') },
    { op: 2, xid: 0xabcd1234, secs: 3, yiaddr: '10.0.0.5', siaddr: '10.0.0.9', chaddr: '525400c0ffee' }, 'BOOTREPLY; yiaddr the offer; siaddr from next_server');
  t.same(optionsOf(dhcp), [
    [53, '02'], [67, ascii('ipxe.efi')], [253, '0a000009'], [3, '0a000001'], [1, 'ffffff00'], [51, '00000e10'], [54, '0a000001'], [58, '00000708'], [26, '0578'],
  ], 'OFFER, then the userdata options in the order written; bootfile_name_alt replaces bootfile_name for a client that is not iPXE');
  const l4 = f.l4 as Buffer;
  t.strictSame(l4.subarray(l4.length - 9), hex('00000000 ff 00000000'), 'four zero bytes, END, four zero bytes');
  t.same({ ...f.udp }, { srcPort: 68, dstPort: 67, length: l4.length, checksum: 0 }, 'ports as the request (the next flows set them), no UDP checksum');
  t.same({ dst: formatIpv4(f.ipv4?.dst ?? 0), total: f.ipv4?.totalLength, ok: f.ipv4?.checksumOk, tos: f.ipv4?.tos }, { dst: '10.0.0.5', total: 20 + l4.length, ok: true, tos: 0x10 });
  t.equal(d.message.packet.length, 14 + 20 + l4.length, 'no Ethernet padding');
  t.strictSame(d.message.packet.subarray(0, 14), req.subarray(0, 14), 'Ethernet header as the request');
});

t.test('put_dhcp_opts: REQUEST, NAK, INFORM, RELEASE, broadcast, iPXE, VLAN', async (t) => {
  const ack = reply(t, dhcpRequest({ msgType: DHCP_MSG.REQUEST, requestedIp: '10.0.0.5' }));
  t.same(optionsOf(ack.dhcp)[0], [53, '05'], 'REQUEST for the offer IP: ACK');
  const byCiaddr = reply(t, dhcpRequest({ msgType: DHCP_MSG.REQUEST, ciaddr: '10.0.0.5' }));
  t.same(optionsOf(byCiaddr.dhcp)[0], [53, '05'], 'a renewing client names its address in ciaddr');
  const nak = reply(t, dhcpRequest({ msgType: DHCP_MSG.REQUEST, requestedIp: '10.0.0.6' }));
  t.same(optionsOf(nak.dhcp), [[53, '06']], 'another IP: NAK without options');
  t.equal(nak.d.result, true, 'a NAK is still a reply');
  if (!isPacketError(nak.dhcp)) t.same([nak.dhcp.yiaddr, nak.dhcp.siaddr], [0, 0]);
  const inform = reply(t, dhcpRequest({ msgType: DHCP_MSG.INFORM, ciaddr: '10.0.0.5' }));
  t.same(optionsOf(inform.dhcp).map(([c]) => c), [53, 67, 253, 3, 54, 26], 'INFORM: ACK without netmask, lease time, T1, T2');
  if (!isPacketError(inform.dhcp)) t.same([inform.dhcp.yiaddr, formatIpv4(inform.dhcp.siaddr)], [0, '1.1.1.1'], 'no address; siaddr as the request');
  const bcast = reply(t, dhcpRequest({ msgType: DHCP_MSG.DISCOVER, flags: 0x8000 }));
  t.equal(formatIpv4(bcast.f.ipv4?.dst ?? 0), '255.255.255.255', 'the broadcast flag makes a broadcast reply');
  const ipxe = reply(t, dhcpRequest({ msgType: DHCP_MSG.DISCOVER, ipxe: true }));
  t.same(optionsOf(ipxe.dhcp).slice(1, 3), [[67, ascii('pxe.efi')], [253, '0a000009']], 'an iPXE client gets bootfile_name; the alt is dropped');
  const vlan = reply(t, dhcpRequest({ msgType: DHCP_MSG.DISCOVER, vlanTci: 0x0005 }));
  t.same([vlan.f.eth.vlanTci, optionsOf(vlan.dhcp)[0]], [5, [53, '02']], 'a tagged request keeps its tag');

  for (const [msgType, why] of [[DHCP_MSG.RELEASE, 'DHCPRELEASE'], [DHCP_MSG.DECLINE, 'DHCPDECLINE'], [9, 'invalid DHCP message type 9']] as const) {
    const req = dhcpRequest({ msgType });
    const d = expectKind(t, decidePacketIn(pinOf(req)), 'resume');
    t.same([d.result, d.detail, d.message.packet], [false, why, req], `${why}: resumed unchanged, result 0`);
    t.same(d.message.metadata?.get('xreg0'), { value: 0x0000000100000000n, mask: full(64) });
  }
});

t.test('put_dhcp_opts: the result bit lands in whichever register the action named', async (t) => {
  const req = dhcpRequest({ msgType: DHCP_MSG.DISCOVER });
  const at = (dst: string): Map<string, MaskedValue> | undefined =>
    expectKind(t, decidePacketIn(pinOf(req, userdataOf(`${dst} = put_dhcp_opts(offerip = 10.0.0.5, router = 10.0.0.1);`))), 'resume').message.metadata as Map<string, MaskedValue>;
  t.same(at('reg0[3]')?.get('xreg0'), { value: 0x0000000900000000n, mask: full(64) });
  t.same(at('reg1[0]')?.get('xreg0'), { value: 0x0000000100000001n, mask: full(64) }, 'reg1 is the low half of xreg0');
  // reg14 has no OVN symbol (it is inport); its NXM header is class 1, field 14, 4 bytes.
  const reg14 = Buffer.from(userdataOf('reg0[3] = put_dhcp_opts(offerip = 10.0.0.5, router = 10.0.0.1);'));
  hex('0001 1c04 0000001f').copy(reg14, 8);
  const viaReg14 = expectKind(t, decidePacketIn(pinOf(req, reg14)), 'resume').message.metadata;
  t.same(viaReg14?.get('reg14'), { value: 0x80000001n, mask: full(32) }, 'a register reported as regN stays regN');
  t.same(at('reg4[2]')?.get('xreg2'), { value: 0x0000000400000000n, mask: 0x0000000400000000n }, 'a register the switch did not report is added (reg4: high half of xreg2)');
  t.same(at('reg5[2]')?.get('xreg2'), { value: 4n, mask: 4n }, 'reg5: low half of xreg2');
  t.same(at('xxreg1[0]')?.get('xreg3'), { value: 1n, mask: 1n }, 'xxreg1 bit 0 is reg7 bit 0: the low half of xreg3');
  // The switch reported reg1 alone (a router's nexthop): reg0's bit goes in reg0, not in xreg0,
  // which would name reg1's bits a second time.
  const withReg1 = { ...pinOf(req, userdataOf('reg0[5] = put_dhcp_opts(offerip = 10.0.0.5, router = 10.0.0.1);')), metadata: new Map([['reg1', { value: 0x18fen, mask: full(32) }]]) };
  const md = expectKind(t, decidePacketIn(withReg1), 'resume').message.metadata;
  t.same([md?.get('reg0'), md?.get('reg1'), md?.has('xreg0')], [{ value: 0x20n, mask: 0x20n }, { value: 0x18fen, mask: full(32) }, false], 'beside a reported reg1, reg0\'s bit is added as reg0');
});

t.test('put_dhcp_opts: malformed requests and userdata still resume, with result 0', async (t) => {
  const ud = userdataOf(dhcpText);
  const cases: [string, Buffer, Buffer, string | RegExp][] = [
    ['not UDP', udpPacket().subarray(0, 20), ud, /invalid DHCP packet|not a UDP/],
    ['a BOOTREPLY', (() => { const b = dhcpRequest({ msgType: 1 }); b[42] = 2; return b; })(), ud, 'BOOTP op 2 is not a request'],
    ['no message type', (() => { const b = dhcpRequest({ msgType: 1 }); b[42 + 240] = 12; return b; })(), ud, 'missing DHCP message type'],
    ['no options', dhcpRequest({ msgType: 1 }), ud.subarray(0, 8 + 12), 'DHCP options not present in the userdata'],
    ['no offer IP', dhcpRequest({ msgType: 1 }), ud.subarray(0, 8 + 10), 'offer IP not present in the userdata'],
  ];
  for (const [name, packet, userdata, why] of cases) {
    const d = expectKind(t, decidePacketIn(pinOf(packet, userdata)), 'resume');
    t.equal(d.result, false, name);
    t.match(d.detail, why, name);
    t.strictSame(d.message.packet, packet, `${name}: the packet resumes unchanged`);
  }
  const badField = Buffer.from(ud);
  badField.writeUInt16BE(0x0000, 8);
  const d = expectKind(t, decidePacketIn(pinOf(dhcpRequest({ msgType: 1 }), badField)), 'resume');
  t.match(d.detail, /bad result field/);
  t.same(d.message.metadata, dhcpMd, 'without a result field the metadata is left alone');
  const noCont = decidePacketIn({ ...pinOf(dhcpRequest({ msgType: 1 })), continuation: undefined } as unknown as PacketIn2);
  t.equal(expectKind(t, noCont, 'ignored').reason, 'no_continuation');
});

t.test('other opcodes', async (t) => {
  const pkt = udpPacket();
  const dns = expectKind(t, decidePacketIn({ packet: pkt, userdata: userdataOf('reg0[4] = dns_lookup();'), metadata: M({ reg0: 0xffn }), continuation: hex('01') }), 'resume');
  t.same([dns.result, dns.message.metadata?.get('reg0')], [false, { value: 0xefn, mask: full(32) }], 'dns_lookup resumes with its result bit cleared');
  t.equal(expectKind(t, decidePacketIn({ packet: pkt, userdata: userdataOf('log(verdict=allow);') }), 'ignored').reason, 'unsupported_opcode');
  t.equal(expectKind(t, decidePacketIn({ packet: pkt, userdata: hex('000000ff00000000') }), 'ignored').reason, 'unknown_opcode');
  t.equal(expectKind(t, decidePacketIn({ packet: pkt, userdata: hex('0000') }), 'ignored').reason, 'no_header');
  t.equal(expectKind(t, decidePacketIn({ packet: pkt, userdata: userdataOf('arp { output; };'), reason: 0 }), 'ignored').reason, 'not_action');
});

// ---- the Pinctrl shell --------------------------------------------------------------------------

t.test('Pinctrl sends answers on the channel, counts refusals, and hands bindings to the writer', async (t) => {
  const sent: OfMessage[] = [];
  let refuse: ChannelError | undefined;
  const txns: unknown[][] = [];
  const problems: string[] = [];
  const p = new Pinctrl({
    channel: { send: (m) => { if (refuse !== undefined) throw refuse; sent.push(m); } },
    sb: { transact: async (ops) => { txns.push([...ops]); return ops.map(() => ({})); } },
    lookup: { portName: (dp, port) => (dp === 7 && port === 3 ? 'lrp-ext' : undefined), datapathUuid: (dp) => (dp === 7 ? 'dp-uuid-7' : undefined), macBinding: () => undefined },
    wallClockMs: () => 1_700_000_000_000,
    onProblem: (m) => problems.push(m),
  });
  t.teardown(() => p.close());
  const arp = p.handlePacketIn({ packet: udpPacket(), userdata: userdataOf('arp { output; };'), metadata: M({ metadata: 7n }), reason: 1 });
  t.equal(arp.kind, 'sent');
  t.equal(sent[0]?.kind, 'packet_out');
  const dhcp = p.handlePacketIn(pinOf(dhcpRequest({ msgType: DHCP_MSG.DISCOVER })));
  t.same([dhcp.kind, dhcp.kind === 'sent' ? dhcp.result : undefined, sent[1]?.kind], ['sent', true, 'resume']);
  refuse = new ChannelError('disconnected', 'channel is not connected');
  const lost = p.handlePacketIn({ packet: udpPacket(), userdata: userdataOf('arp { output; };'), metadata: M({}) });
  t.same([lost.kind, lost.kind === 'ignored' ? lost.reason : ''], ['ignored', 'not_sent']);
  refuse = undefined;
  const learned = p.handlePacketIn({
    packet: buildEthernet({ dst: ETH_B, src: '0a:00:00:00:00:99', ethType: ETH_TYPE.ARP }, Buffer.alloc(28)),
    userdata: userdataOf('put_arp(inport, arp.spa, arp.sha);'), metadata: M({ metadata: 7n, reg14: 3n, reg0: BigInt(ip4('172.16.0.9')) }),
  });
  t.same(learned, { kind: 'learned', opcode: ACTION_OPCODE.PUT_ARP, put: 'queued' });
  await p.flushMacBindings();
  t.same(txns, [[{ op: 'insert', table: 'MAC_Binding', row: { logical_port: 'lrp-ext', ip: '172.16.0.9', mac: '0a:00:00:00:00:99', datapath: ['uuid', 'dp-uuid-7'], timestamp: 1_700_000_000_000 } }]]);
  p.handlePacketIn({ packet: udpPacket(), userdata: hex('0000') });
  t.same({ ...p.stats, ignored: { ...p.stats.ignored }, macBindings: undefined, buffered: undefined }, {
    packetIns: 5, packetOuts: 1, resumes: 1, learned: 1, vportClaims: 0, macBindings: undefined, vportBindings: undefined, buffered: undefined,
    ignored: { not_action: 0, no_header: 1, unknown_opcode: 0, unsupported_opcode: 0, unknown_event: 0, bad_packet: 0, bad_userdata: 0, no_continuation: 0, not_sent: 1 },
  });
  t.equal(p.stats.macBindings.inserted, 1);
  t.equal(problems.length, 2, 'the refusal and the ignored packet-in were reported');
  t.throws(() => new Pinctrl({
    channel: { send: () => { throw new Error('a bug'); } }, sb: { transact: async () => [] },
    lookup: { portName: () => undefined, datapathUuid: () => undefined, macBinding: () => undefined },
  }).handlePacketIn({ packet: udpPacket(), userdata: userdataOf('arp { output; };'), metadata: M({}) }), /a bug/, 'only ChannelError is an expected refusal');
});

t.test('icmp4.frag_mtu / icmp6.frag_mtu: resumed with the MTU in the ICMP error, checksums kept right; anything else resumed as it came', async (t) => {
  const md = M({ metadata: 2n, reg14: 1n });
  const cont = hex('c0ffee');
  // An ICMPv4 "fragmentation needed" as the switch holds it after the nested actions: MTU 0.
  const quoted = buildIpv4({ tos: 0, id: 1, flagsFragment: IPV4_FLAG_DF, ttl: 64, protocol: IP_PROTO.UDP, src: ip4('10.0.0.5'), dst: ip4('40.0.0.9') }, Buffer.alloc(28, 1));
  const icmp4 = Buffer.concat([hex('0304 0000 00000000'), quoted]);
  icmp4.writeUInt16BE(internetChecksum(icmp4), 2);
  const err4 = buildEthernet({ dst: ETH_A, src: ETH_B, ethType: ETH_TYPE.IPV4 },
    buildIpv4({ tos: 0, id: 0, flagsFragment: IPV4_FLAG_DF, ttl: 255, protocol: IP_PROTO.ICMP, src: ip4('40.0.0.1'), dst: ip4('10.0.0.5') }, icmp4));
  const d4 = expectKind(t, decidePacketIn({ packet: err4, userdata: userdataOf('icmp4.frag_mtu = 1400;'), metadata: md, continuation: cont, reason: 1 }), 'resume');
  const f4 = frame(d4.message.packet);
  t.same({ mtu: (f4.icmp4?.rest ?? 0) & 0xffff, icmpOk: f4.icmp4?.checksumOk, ipOk: f4.ipv4?.checksumOk, result: d4.result }, { mtu: 1400, icmpOk: true, ipOk: true, result: true },
    'the next-hop MTU set, the ICMP checksum updated for it and the IP header\'s recomputed');
  t.strictSame(d4.message.packet.subarray(14 + 20 + 8), quoted, 'the rest of the packet as it was');
  t.strictSame(d4.message.continuation, cont, 'the continuation goes back unchanged');
  t.same(d4.message.metadata, md, 'and so do the registers (there is no result bit)');

  // ICMPv6 "packet too big": the 32 bits after the checksum, the checksum over the pseudo-header.
  const a = (0xfd40n << 112n) | 1n;
  const b = (0xfd00n << 112n) | 5n;
  const err6 = buildEthernet({ dst: ETH_A, src: ETH_B, ethType: ETH_TYPE.IPV6 },
    buildIpv6({ trafficClass: 0, flowLabel: 0, nextHeader: IP_PROTO.ICMPV6, hopLimit: 255, src: a, dst: b }, buildIcmp6({ type: 2, code: 0 }, Buffer.alloc(4 + 48, 0), a, b)));
  const d6 = expectKind(t, decidePacketIn({ packet: err6, userdata: userdataOf('icmp6.frag_mtu = 1280;'), metadata: md, continuation: cont, reason: 1 }), 'resume');
  const l4 = frame(d6.message.packet).l4 as Buffer;
  t.same({ mtu: l4.readUInt32BE(4), ok: icmp6ChecksumOk(l4, a, b), result: d6.result }, { mtu: 1280, ok: true, result: true });

  // The wrong version, or not ICMP at all: resumed unchanged, as ovn-controller does.
  const wrong = expectKind(t, decidePacketIn({ packet: err6, userdata: userdataOf('icmp4.frag_mtu = 1400;'), metadata: md, continuation: cont, reason: 1 }), 'resume');
  t.same({ same: wrong.message.packet.equals(err6), result: wrong.result, detail: wrong.detail }, { same: true, result: false, detail: 'icmp4.frag_mtu on a packet that is not ICMPv4' });
  const udp = expectKind(t, decidePacketIn({ packet: udpPacket(), userdata: userdataOf('icmp6.frag_mtu = 1400;'), metadata: md, continuation: cont, reason: 1 }), 'resume');
  t.same({ same: udp.message.packet.equals(udpPacket()), result: udp.result }, { same: true, result: false });
  const short = Buffer.concat([userdataOf('icmp4.frag_mtu = 1400;').subarray(0, 9)]);
  t.match(expectKind(t, decidePacketIn({ packet: err4, userdata: short, metadata: md, continuation: cont, reason: 1 }), 'resume'), { result: false, detail: /holds 1 of the MTU's 2 bytes/ });
  t.equal(expectKind(t, decidePacketIn({ packet: err4, userdata: userdataOf('icmp4.frag_mtu = 1400;'), metadata: md, reason: 1 }), 'ignored').reason, 'no_continuation');
});
