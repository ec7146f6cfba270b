// Goal: put_dhcpv6_opts' packet-in gets the answer ovn-controller 23.03.1's
// pinctrl_handle_put_dhcpv6_opts gives: ADVERTISE for SOLICIT, REPLY for REQUEST, CONFIRM, DECLINE
// and INFORMATION-REQUEST, with the client id, DUID-LL server id, IA_NA, DNS servers and domain
// search, result bit set; anything else resumes unchanged with the bit clear, and never throws.
// Method: client messages built byte by byte, userdata from our action compiler compiling the
// action northd writes, expected replies written out from pinctrl.c's rules.

import t from 'tap';
import type { MaskedValue } from '../../agent/openflow/types.js';
import { decidePacketIn, type PacketInDecision } from '../../agent/pinctrl/handlers.js';
import { DHCP6_MSG, DHCP6_OPT, encodeDhcp6Option, parseDhcp6Options } from '../../agent/pinctrl/dhcp6-reply.js';
import { ETH_TYPE, IP_PROTO, buildEthernet, buildIpv6, buildUdp, isPacketError, parseFrame, udp6ChecksumOk } from '../../agent/pinctrl/packet.js';
import { controllerUserdata, full, hex } from './pinctrl-fixtures.js';


const userdataOf = (actions: string): Buffer => controllerUserdata(actions, { table: 18, isSwitch: true });

const stateful = userdataOf('reg0[3] = put_dhcpv6_opts(ia_addr = ae70::4, dns_server = {ae70::1, ae70::2}, domain_search = "ovn.org", server_id = 00:00:00:00:10:02); next;');
const stateless = userdataOf('reg0[3] = put_dhcpv6_opts(dns_server = {ae70::1}, server_id = 00:00:00:00:10:02); next;');
const md: Map<string, MaskedValue> = new Map([['metadata', { value: 2n, mask: full(64) }], ['xreg0', { value: 0n, mask: full(64) }]]);

const CLIENT_MAC = '0a:00:00:00:00:04';
const CLIENT_LLA = 0xfe800000000000000800_00ff_fe00_0004n;
const ALL_SERVERS = 0xff020000000000000000000000010002n;
const clientId = hex('0003 0001 0a0000000004');

function message(type: number, opts: Buffer[]): Buffer {
  return Buffer.concat([Buffer.from([type, 0x12, 0x34, 0x56]), ...opts]);
}
const iaNa = (iaid: number): Buffer => {
  const b = Buffer.alloc(12);
  b.writeUInt32BE(iaid >>> 0, 0);
  return encodeDhcp6Option(DHCP6_OPT.IA_NA, b);
};

function packetOf(payload: Buffer): Buffer {
  const udp = buildUdp({ srcPort: 546, dstPort: 547 }, payload);
  return buildEthernet({ dst: '33:33:00:01:00:02', src: CLIENT_MAC, ethType: ETH_TYPE.IPV6 },
    buildIpv6({ trafficClass: 0, flowLabel: 0, nextHeader: IP_PROTO.UDP, hopLimit: 1, src: CLIENT_LLA, dst: ALL_SERVERS }, udp));
}

function decide(packet: Buffer, userdata = stateful): Extract<PacketInDecision, { kind: 'resume' }> {
  const d = decidePacketIn({ packet, userdata, metadata: md, reason: 1, continuation: hex('0102') });
  if (d.kind !== 'resume') throw new Error(`expected a resume, got ${JSON.stringify(d)}`);
  return d;
}
const bit3 = (d: Extract<PacketInDecision, { kind: 'resume' }>): bigint => ((d.message.metadata?.get('xreg0')?.value ?? 0n) >> 35n) & 1n;

const serverIdOut = hex('0002 000a 0003 0001 000000001002');
const iaNaOut = (iaid: string): Buffer => hex(`0003 0028 ${iaid} ffffffff ffffffff 0005 0018 ae700000000000000000000000000004 ffffffff ffffffff`);
const dnsOut = hex('0017 0020 ae700000000000000000000000000001 ae700000000000000000000000000002');
const searchOut = hex('0018 0009 07 6f766e2e6f7267 00');

t.test('SOLICIT: ADVERTISE with the client id, IA_NA, DNS servers, domain search and DUID-LL server id', async (t) => {
  const req = packetOf(message(DHCP6_MSG.SOLICIT, [encodeDhcp6Option(DHCP6_OPT.CLIENT_ID, clientId), iaNa(0x0a0b0c0d), hex('0006 0004 0017 0018'), hex('0008 0002 0000')]));
  const d = decide(req);
  t.equal(d.result, true, d.detail ?? '');
  t.equal(bit3(d), 1n, 'reg0[3] set');
  const f = parseFrame(d.message.packet);
  if (isPacketError(f)) throw new Error(f.message);
  const expected = Buffer.concat([hex('02 123456'), encodeDhcp6Option(1, clientId), iaNaOut('0a0b0c0d'), dnsOut, searchOut, serverIdOut]);
  t.strictSame(f.l4?.subarray(8), expected, 'type ADVERTISE, same transaction id, client id, then the options in the userdata\'s order');
  t.same({ src: f.udp?.srcPort, dst: f.udp?.dstPort, len: f.udp?.length }, { src: 546, dst: 547, len: 8 + expected.length }, 'ports as the request (the next flows swap them)');
  t.equal(f.ipv6?.payloadLength, 8 + expected.length);
  t.ok(udp6ChecksumOk(f.l4 as Buffer, CLIENT_LLA, ALL_SERVERS), 'UDP checksum over the (unchanged) IPv6 addresses');
  t.strictSame(d.message.packet.subarray(0, 54), Buffer.concat([req.subarray(0, 18), d.message.packet.subarray(18, 20), req.subarray(20, 54)]), 'Ethernet and IPv6 headers as the request but the payload length');
});

t.test('REQUEST, CONFIRM, DECLINE get REPLY; INFORMATION-REQUEST gets no IA_NA; the last IA_NA counts', async (t) => {
  for (const type of [DHCP6_MSG.REQUEST, DHCP6_MSG.CONFIRM, DHCP6_MSG.DECLINE]) {
    const d = decide(packetOf(message(type, [iaNa(7), encodeDhcp6Option(DHCP6_OPT.CLIENT_ID, clientId)])));
    t.same([d.result, d.message.packet[62]], [true, DHCP6_MSG.REPLY], `type ${type}: REPLY`);
  }
  const twoIas = decide(packetOf(message(DHCP6_MSG.REQUEST, [iaNa(7), encodeDhcp6Option(DHCP6_OPT.CLIENT_ID, clientId), iaNa(9)])));
  const opts = parseDhcp6Options(twoIas.message.packet.subarray(66));
  t.strictSame(opts?.find((o) => o.code === DHCP6_OPT.IA_NA)?.data.subarray(0, 4), hex('00000009'));

  const info = decide(packetOf(message(DHCP6_MSG.INFORMATION_REQUEST, [encodeDhcp6Option(DHCP6_OPT.CLIENT_ID, clientId)])));
  t.equal(info.result, true);
  t.strictSame(info.message.packet.subarray(62), Buffer.concat([hex('07 123456'), encodeDhcp6Option(1, clientId), dnsOut, searchOut, serverIdOut]), 'no IA_NA for a stateless client');
  const stateless6 = decide(packetOf(message(DHCP6_MSG.INFORMATION_REQUEST, [encodeDhcp6Option(DHCP6_OPT.CLIENT_ID, clientId)])), stateless);
  t.strictSame(stateless6.message.packet.subarray(62), Buffer.concat([hex('07 123456'), encodeDhcp6Option(1, clientId), hex('0017 0010 ae700000000000000000000000000001'), serverIdOut]));
});

t.test('what gets no reply resumes unchanged with the bit clear', async (t) => {
  const cid = encodeDhcp6Option(DHCP6_OPT.CLIENT_ID, clientId);
  const cases: [string, Buffer, Buffer, RegExp][] = [
    ['RENEW (not answered by 23.03.1)', packetOf(message(DHCP6_MSG.RENEW, [cid, iaNa(1)])), stateful, /type 5 is not answered/],
    ['REBIND', packetOf(message(DHCP6_MSG.REBIND, [cid, iaNa(1)])), stateful, /type 6/],
    ['RELEASE', packetOf(message(DHCP6_MSG.RELEASE, [cid, iaNa(1)])), stateful, /type 8/],
    ['ADVERTISE', packetOf(message(DHCP6_MSG.ADVERTISE, [cid, iaNa(1)])), stateful, /type 2/],
    ['no client id', packetOf(message(DHCP6_MSG.SOLICIT, [iaNa(1)])), stateful, /Client Identifier/],
    ['no IA_NA', packetOf(message(DHCP6_MSG.SOLICIT, [cid])), stateful, /no IA_NA/],
    ['IAID 0 counts as none', packetOf(message(DHCP6_MSG.SOLICIT, [cid, iaNa(0)])), stateful, /no IA_NA/],
    ['an IA_NA too short for its IAID', packetOf(message(DHCP6_MSG.SOLICIT, [cid, hex('0003 0002 0001')])), stateful, /without an IAID/],
    ['an option past the end', packetOf(message(DHCP6_MSG.SOLICIT, [cid, hex('0003 0040 0001')])), stateful, /run past/],
    ['a cut option header', packetOf(message(DHCP6_MSG.SOLICIT, [cid, iaNa(1), hex('00')])), stateful, /run past/],
    ['a 3-byte message', packetOf(hex('010203')), stateful, /truncated/],
    ['over IPv4', (() => { const b = packetOf(message(1, [cid, iaNa(1)])); b.writeUInt16BE(0x0800, 12); return b; })(), stateful, /invalid packet|not a UDP\/IPv6/],
    ['no options in the userdata', packetOf(message(DHCP6_MSG.SOLICIT, [cid, iaNa(1)])), stateful.subarray(0, 16), /not present/],
    ['an unknown option in the userdata', packetOf(message(DHCP6_MSG.SOLICIT, [cid, iaNa(1)])), Buffer.concat([stateful.subarray(0, 16), hex('0027 0001 00')]), /option 39/],
    ['a short ia_addr in the userdata', packetOf(message(DHCP6_MSG.SOLICIT, [cid, iaNa(1)])), Buffer.concat([stateful.subarray(0, 16), hex('0005 0004 00000000')]), /ia_addr of 4 bytes/],
    ['a cut userdata option', packetOf(message(DHCP6_MSG.SOLICIT, [cid, iaNa(1)])), stateful.subarray(0, stateful.length - 1), /run past its end/],
  ];
  for (const [name, packet, userdata, why] of cases) {
    const d = decide(packet, userdata);
    t.equal(d.result, false, name);
    t.match(d.detail, why, name);
    t.strictSame(d.message.packet, packet, `${name}: resumed unchanged`);
    t.equal(bit3(d), 0n, `${name}: reg0[3] clear`);
  }
  const badField = Buffer.from(stateful);
  badField.writeUInt16BE(0, 8);
  const d = decide(packetOf(message(1, [encodeDhcp6Option(1, clientId), iaNa(1)])), badField);
  t.same([d.result, d.message.metadata], [false, md], 'a bad result field: resumed, metadata untouched');
});
