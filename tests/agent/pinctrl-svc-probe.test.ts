// Goal: health-check probes are the bytes ovn-controller 23.03 sends (TCP SYN / RST+ACK, UDP, over
// IPv4 and IPv6, with valid checksums) in the packet-out it injects, and the backends' replies
// through handle_svc_check are read the way pinctrl_handle_svc_check reads them.
// Method: expected frames written out in hex from pinctrl.c's rules (checksums computed apart
// from the agent's code), parsed back with packet.ts; replies built with the codec and handed to
// decidePacketIn with the userdata our compiler gives handle_svc_check(inport); seeded mangled
// replies (OVNTS_SEED replays one) must give a reply or a typed error, never a throw.

import t from 'tap';
import { ACTION_OPCODE, MLF, OFTABLE } from '../../agent/compile/tables.js';
import { parseIpv6 } from '../../agent/expr/lexer.js';
import { OFPP, encodeActions } from '../../agent/openflow/actions.js';
import type { PacketIn2 } from '../../agent/openflow/messages.js';
import { decidePacketIn } from '../../agent/pinctrl/handlers.js';
import {
  ETH_TYPE, ICMP4_TYPE, ICMP6_TYPE, IPV4_FLAG_DF, IP_PROTO, TCP_FLAG, buildEthernet, buildIcmp4, buildIcmp6, buildIpv4, buildIpv6, buildTcp,
  isPacketError, parseFrame, parseIpv4, parseTcp, tcpChecksumOk, udp6ChecksumOk, udpChecksumOk, type Frame,
} from '../../agent/pinctrl/packet.js';
import { composeTcpProbe, composeUdpProbe, parseSvcReply, probePacketOut, type IpAddr, type ProbeTarget } from '../../agent/pinctrl/svc-probe.js';
import { Rng } from '../helpers/seeded-rng.js';
import { controllerUserdata, full, hex } from './pinctrl-fixtures.js';

const seed = Number(process.env.OVNTS_SEED ?? 4141);

const v4 = (s: string): IpAddr => ({ kind: 'ipv4', v: parseIpv4(s) as number });
const v6 = (s: string): IpAddr => ({ kind: 'ipv6', v: parseIpv6(s) as bigint });
const SVC_MAC = '12:34:56:78:9a:bc';
const VM_MAC = '0a:00:00:00:00:01';

const target4: ProbeTarget = { dpKey: 3, portKey: 7, srcMac: SVC_MAC, dstMac: VM_MAC, src: v4('10.0.0.254'), dst: v4('10.0.0.1'), port: 80 };
const target6: ProbeTarget = { ...target4, src: v6('fd00::fe'), dst: v6('fd00::1') };
const udpTarget4: ProbeTarget = { ...target4, port: 53 };
const udpTarget6: ProbeTarget = { ...target6, port: 53 };

const frame = (raw: Buffer): Frame => {
  const f = parseFrame(raw);
  if (isPacketError(f)) throw new Error(f.message);
  return f;
};

t.test('a TCP SYN over IPv4: the bytes, the fields read back, the checksums', async (t) => {
  const syn = composeTcpProbe(target4, { srcPort: 40000, flags: TCP_FLAG.SYN, seq: 0x12345678, ack: 0 });
  t.strictSame(syn, hex(`0a0000000001 123456789abc 0800
    4500 0028 0000 4000 3f 06 26d2 0a0000fe 0a000001
    9c40 0050 12345678 00000000 5002 fe88 971e 0000`), 'eth to the port\'s MAC; IPv4 TOS 0, ID 0, DF, TTL 63; TCP data offset 5, SYN, window 65160');
  const f = frame(syn);
  t.match(f.ipv4, { tos: 0, id: 0, flagsFragment: IPV4_FLAG_DF, ttl: 63, protocol: IP_PROTO.TCP, checksumOk: true, totalLength: 40 });
  const tcp = parseTcp(f.l4 as Buffer);
  t.same(tcp, { srcPort: 40000, dstPort: 80, seq: 0x12345678, ack: 0, headerBytes: 20, flags: TCP_FLAG.SYN, window: 65160, checksum: 0x971e, urgent: 0 });
  t.ok(tcpChecksumOk(f.l4 as Buffer, { kind: 'ipv4', src: (f.ipv4 as { src: number }).src, dst: (f.ipv4 as { dst: number }).dst }), 'TCP checksum valid');
});

t.test('the RST+ACK that closes a probe, and a SYN over IPv6', async (t) => {
  const rst = composeTcpProbe(target4, { srcPort: 40000, flags: TCP_FLAG.RST | TCP_FLAG.ACK, seq: 0x9abcdef2, ack: 0x87654322 });
  t.strictSame(rst, hex(`0a0000000001 123456789abc 0800 4500 0028 0000 4000 3f 06 26d2 0a0000fe 0a000001
    9c40 0050 9abcdef2 87654322 5014 fe88 bb81 0000`), 'RST and ACK set');
  const syn6 = composeTcpProbe(target6, { srcPort: 40000, flags: TCP_FLAG.SYN, seq: 0x12345678, ack: 0 });
  t.strictSame(syn6, hex(`0a0000000001 123456789abc 86dd
    60000000 0014 06 3f fd0000000000000000000000000000fe fd000000000000000000000000000001
    9c40 0050 12345678 00000000 5002 fe88 b11c 0000`), 'IPv6: traffic class and flow label 0, hop limit 63');
  const f = frame(syn6);
  t.ok(tcpChecksumOk(f.l4 as Buffer, { kind: 'ipv6', src: (f.ipv6 as { src: bigint }).src, dst: (f.ipv6 as { dst: bigint }).dst }), 'TCP checksum over the IPv6 pseudo-header');
});

t.test('UDP probes: 8 zero bytes, no checksum over IPv4, a computed one over IPv6', async (t) => {
  const u4 = composeUdpProbe(udpTarget4, 50000);
  t.strictSame(u4, hex(`0a0000000001 123456789abc 0800 4500 0024 0000 4000 3f 11 26cb 0a0000fe 0a000001
    c350 0035 0010 0000 0000000000000000`));
  const f4 = frame(u4);
  t.same(f4.udp, { srcPort: 50000, dstPort: 53, length: 16, checksum: 0 });
  t.ok(udpChecksumOk(f4.l4 as Buffer, parseIpv4('10.0.0.254') as number, parseIpv4('10.0.0.1') as number));
  const u6 = composeUdpProbe(udpTarget6, 50000);
  t.strictSame(u6, hex(`0a0000000001 123456789abc 86dd 60000000 0010 11 3f fd0000000000000000000000000000fe fd000000000000000000000000000001
    c350 0035 0010 4148 0000000000000000`));
  const f6 = frame(u6);
  t.ok(udp6ChecksumOk(f6.l4 as Buffer, parseIpv6('fd00::fe') as bigint, parseIpv6('fd00::1') as bigint), 'UDP checksum valid over IPv6');
});

t.test('the packet-out: datapath, output port and MLF_LOCAL_ONLY loaded, then table 40 from the controller', async (t) => {
  const data = composeTcpProbe(target4, { srcPort: 40000, flags: TCP_FLAG.SYN, seq: 1, ack: 0 });
  const po = probePacketOut(target4, data);
  t.equal(po.inPort, OFPP.CONTROLLER);
  t.equal(po.bufferId, 0xffffffff);
  t.equal(po.data, data);
  t.same(po.actions, [
    { kind: 'set_field', field: 'metadata', value: 3n },
    { kind: 'set_field', field: 'reg15', value: 7n },
    { kind: 'set_field', field: 'reg10', value: 1n << BigInt(MLF.LOCAL_ONLY), mask: 1n << BigInt(MLF.LOCAL_ONLY) },
    { kind: 'resubmit', table: OFTABLE.LOCAL_OUTPUT, inPort: 0xfffd },
  ]);
  t.equal(OFTABLE.LOCAL_OUTPUT, 40);
  t.ok(encodeActions(po.actions).length > 0, 'the actions encode');
});

// ---- Replies -----------------------------------------------------------------------------------

const md = new Map([['metadata', { value: 3n, mask: full(64) }], ['reg14', { value: 7n, mask: full(32) }]]);
const userdata = controllerUserdata('handle_svc_check(inport);', { table: 8, isSwitch: true });

function tcpReply(flags: number, seq: number, ack: number): Buffer {
  const src = parseIpv4('10.0.0.1') as number;
  const dst = parseIpv4('10.0.0.254') as number;
  const seg = buildTcp({ srcPort: 80, dstPort: 40000, seq, ack, flags, window: 1000, urgent: 0 }, Buffer.alloc(0), { kind: 'ipv4', src, dst });
  return buildEthernet({ dst: SVC_MAC, src: VM_MAC, ethType: ETH_TYPE.IPV4 }, buildIpv4({ tos: 0, id: 1, flagsFragment: 0, ttl: 64, protocol: IP_PROTO.TCP, src, dst }, seg));
}

function icmp4Unreach(code: number, quoted: Buffer): Buffer {
  const src = parseIpv4('10.0.0.1') as number;
  const dst = parseIpv4('10.0.0.254') as number;
  const icmp = buildIcmp4({ type: ICMP4_TYPE.DST_UNREACH, code, rest: 0 }, quoted);
  return buildEthernet({ dst: SVC_MAC, src: VM_MAC, ethType: ETH_TYPE.IPV4 }, buildIpv4({ tos: 0xc0, id: 2, flagsFragment: 0, ttl: 64, protocol: IP_PROTO.ICMP, src, dst }, icmp));
}

const pin = (packet: Buffer): PacketIn2 => ({ packet, userdata, metadata: md, reason: 1 });

t.test('handle_svc_check compiles to opcode 18 and a TCP reply is read: backend IP and port, our port, seq, ack, flags', async (t) => {
  t.equal(userdata.readUInt32BE(0), ACTION_OPCODE.HANDLE_SVC_CHECK);
  const d = decidePacketIn(pin(tcpReply(TCP_FLAG.SYN | TCP_FLAG.ACK, 0x87654321, 0x12345679)));
  t.same(d, {
    kind: 'svc_check', opcode: ACTION_OPCODE.HANDLE_SVC_CHECK,
    reply: { kind: 'tcp', dpKey: 3, portKey: 7, ip: '10.0.0.1', port: 80, dstPort: 40000, seq: 0x87654321, ack: 0x12345679, flags: TCP_FLAG.SYN | TCP_FLAG.ACK },
  });
});

t.test('ICMP port unreachable quoting a UDP probe, over IPv4 and IPv6', async (t) => {
  const quoted = composeUdpProbe(udpTarget4, 50000).subarray(14);
  t.same(parseSvcReply(pin(icmp4Unreach(3, quoted))), { kind: 'port_unreachable', dpKey: 3, portKey: 7, ip: '10.0.0.1', port: 53, srcPort: 50000 });
  t.match(parseSvcReply(pin(icmp4Unreach(1, quoted))), { error: 'unsupported' }, 'host unreachable is not port unreachable');
  const longer = Buffer.concat([quoted, Buffer.alloc(4)]);
  longer.writeUInt16BE(40, 2);
  t.match(parseSvcReply(pin(icmp4Unreach(3, longer))), { error: 'malformed' }, 'a quoted datagram of another length is not a probe');
  t.match(parseSvcReply(pin(icmp4Unreach(3, quoted.subarray(0, 22)))), { error: 'truncated' }, 'no UDP ports quoted');

  const src = parseIpv6('fd00::1') as bigint;
  const dst = parseIpv6('fd00::fe') as bigint;
  const quoted6 = composeUdpProbe(udpTarget6, 50000).subarray(14);
  const body = Buffer.concat([Buffer.alloc(4), quoted6]);
  const icmp6 = buildIcmp6({ type: ICMP6_TYPE.DST_UNREACH, code: 4 }, body, src, dst);
  const p6 = buildEthernet({ dst: SVC_MAC, src: VM_MAC, ethType: ETH_TYPE.IPV6 }, buildIpv6({ trafficClass: 0, flowLabel: 0, nextHeader: IP_PROTO.ICMPV6, hopLimit: 64, src, dst }, icmp6));
  t.same(parseSvcReply(pin(p6)), { kind: 'port_unreachable', dpKey: 3, portKey: 7, ip: 'fd00::1', port: 53, srcPort: 50000 });
  const other6 = buildIcmp6({ type: ICMP6_TYPE.DST_UNREACH, code: 3 }, body, src, dst);
  const p6other = buildEthernet({ dst: SVC_MAC, src: VM_MAC, ethType: ETH_TYPE.IPV6 }, buildIpv6({ trafficClass: 0, flowLabel: 0, nextHeader: IP_PROTO.ICMPV6, hopLimit: 64, src, dst }, other6));
  t.match(parseSvcReply(pin(p6other)), { error: 'unsupported' }, 'ICMPv6 address unreachable is not port unreachable');
});

t.test('anything else is ignored as a bad packet', async (t) => {
  const udpFromBackend = composeUdpProbe({ ...udpTarget4, srcMac: VM_MAC, dstMac: SVC_MAC }, 53);
  const d = decidePacketIn(pin(udpFromBackend));
  t.match(d, { kind: 'ignored', reason: 'bad_packet', opcode: ACTION_OPCODE.HANDLE_SVC_CHECK }, 'UDP itself is not a reply');
  t.match(decidePacketIn(pin(tcpReply(TCP_FLAG.ACK, 1, 2).subarray(0, 40))), { kind: 'ignored', reason: 'bad_packet' }, 'a truncated TCP header');
  const arp = buildEthernet({ dst: SVC_MAC, src: VM_MAC, ethType: ETH_TYPE.ARP }, Buffer.alloc(28));
  t.match(decidePacketIn(pin(arp)), { kind: 'ignored', reason: 'bad_packet' }, 'not IP');
});

t.test(`mangled replies never throw: a reply or a typed error (seed ${seed})`, async (t) => {
  const rng = new Rng(seed);
  const quoted4 = composeUdpProbe(udpTarget4, 50000).subarray(14);
  const valid = [
    tcpReply(TCP_FLAG.SYN | TCP_FLAG.ACK, 1, 2), tcpReply(TCP_FLAG.RST, 1, 2), icmp4Unreach(3, quoted4),
    composeTcpProbe(target6, { srcPort: 80, flags: TCP_FLAG.SYN | TCP_FLAG.ACK, seq: 1, ack: 2 }),
  ];
  const kinds = new Map<string, number>();
  const bad: string[] = [];
  for (let i = 0; i < 3000; i++) {
    const b = Buffer.from(rng.pick(valid));
    for (let n = rng.int(0, 4); n > 0 && b.length > 0; n--) b[rng.int(0, b.length - 1)] = rng.int(0, 255);
    const packet = rng.chance(0.3) ? b.subarray(0, rng.int(0, b.length)) : b;
    try {
      const r = parseSvcReply(pin(packet));
      const k = isPacketError(r) ? r.error : r.kind;
      kinds.set(k, (kinds.get(k) ?? 0) + 1);
      if (!isPacketError(r) && (r.port > 0xffff || r.ip === '')) bad.push(`out of range: ${JSON.stringify(r)}`);
    } catch (e) {
      bad.push(`${packet.toString('hex')}: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
  t.same(bad.slice(0, 3), []);
  t.ok((kinds.get('tcp') ?? 0) > 0 && (kinds.get('port_unreachable') ?? 0) > 0 && (kinds.get('truncated') ?? 0) > 0, `replies and errors both came up: ${JSON.stringify([...kinds])}`);
});
