// Goal: dns_lookup's packet-in gets the answer ovn-controller 23.03's pinctrl_handle_dns_lookup
// gives: the response built from the datapath's DNS records with the result bit set, or the query
// unchanged with the bit clear; malformed queries never throw. Method: queries built byte by byte,
// userdata from our action compiler, expected responses written out from pinctrl.c's rules.

import t from 'tap';
import type { MaskedValue } from '../../agent/openflow/types.js';
import { decidePacketIn, type PacketInContext, type PacketInDecision } from '../../agent/pinctrl/handlers.js';
import { encodePtrName, recordAddresses } from '../../agent/pinctrl/dns-reply.js';
import {
  ETH_TYPE, IP_PROTO, buildEthernet, buildIpv4, buildIpv6, buildUdp, isPacketError, parseFrame, parseIpv4, udp6ChecksumOk,
} from '../../agent/pinctrl/packet.js';
import { SbStore } from '../../agent/flows/sb-store.js';
import { sbPacketInContext } from '../../agent/pinctrl/sb-lookup.js';
import type { Row } from '../../ovsdb/index.js';
import { controllerUserdata, full, hex } from './pinctrl-fixtures.js';

const ip4 = (s: string): number => parseIpv4(s) as number;

const userdataOf = (actions: string): Buffer => controllerUserdata(actions, { table: 19, isSwitch: true });

const ud = userdataOf('reg0[4] = dns_lookup(); next;');
const md: Map<string, MaskedValue> = new Map([
  ['metadata', { value: 5n, mask: full(64) }],
  ['xreg0', { value: 0xffffffef00000000n, mask: full(64) }],
  ['reg14', { value: 1n, mask: full(32) }],
]);

/** A question name in wire form. */
const qname = (name: string): Buffer => Buffer.concat([...name.split('.').map((l) => Buffer.concat([Buffer.from([l.length]), Buffer.from(l, 'latin1')])), Buffer.alloc(1)]);

interface Query {
  readonly name?: string;
  readonly qtype?: number;
  readonly flags?: number;
  readonly qdcount?: number;
  readonly arcount?: number;
  readonly extra?: Buffer;
}

function dnsPayload(q: Query): Buffer {
  const head = Buffer.alloc(12);
  head.writeUInt16BE(0xbeef, 0);
  head.writeUInt16BE(q.flags ?? 0x0100, 2);
  head.writeUInt16BE(q.qdcount ?? 1, 4);
  head.writeUInt16BE(q.arcount ?? 0, 10);
  const tail = Buffer.alloc(4);
  tail.writeUInt16BE(q.qtype ?? 1, 0);
  tail.writeUInt16BE(1, 2);
  return Buffer.concat([head, qname(q.name ?? 'vm1.ovn.org'), tail, q.extra ?? Buffer.alloc(0)]);
}

const ETH_VM = '0a:00:00:00:00:05';
const ETH_GW = '0a:00:00:00:00:01';
const V6_VM = 0xfd000000000000000000000000000005n;
const V6_DNS = 0xfd000000000000000000000000000035n;

function query4(q: Query = {}, padTo = 0): Buffer {
  const payload = dnsPayload(q);
  const ip = buildIpv4({ tos: 0, id: 1, flagsFragment: 0, ttl: 64, protocol: IP_PROTO.UDP, src: ip4('10.0.0.5'), dst: ip4('10.0.0.53') },
    buildUdp({ srcPort: 40000, dstPort: 53 }, payload, { src: ip4('10.0.0.5'), dst: ip4('10.0.0.53') }));
  const frame = buildEthernet({ dst: ETH_GW, src: ETH_VM, ethType: ETH_TYPE.IPV4 }, ip);
  return frame.length >= padTo ? frame : Buffer.concat([frame, Buffer.alloc(padTo - frame.length, 0xee)]);
}

function query6(q: Query = {}): Buffer {
  const udp = buildUdp({ srcPort: 40000, dstPort: 53 }, dnsPayload(q));
  return buildEthernet({ dst: ETH_GW, src: ETH_VM, ethType: ETH_TYPE.IPV6 },
    buildIpv6({ trafficClass: 0, flowLabel: 0, nextHeader: IP_PROTO.UDP, hopLimit: 64, src: V6_VM, dst: V6_DNS }, udp));
}

const records: PacketInContext = {
  dnsRecords: (dpKey) => (dpKey !== 5 ? [] : [
    new Map([['vm1.ovn.org', '10.0.0.1 fd00::1 10.0.0.11'], ['1.0.0.10.in-addr.arpa', 'vm1.ovn.org'], ['broken', 'not-an-ip 10.0.0.9']]),
    new Map([['vm1.ovn.org', '10.9.9.9'], ['vm2.ovn.org', 'fd00::2'], ['net.ovn.org', '10.0.0.7/24']]),
  ]),
};

function resume(d: PacketInDecision): Extract<PacketInDecision, { kind: 'resume' }> {
  if (d.kind !== 'resume') throw new Error(`expected a resume, got ${JSON.stringify(d)}`);
  return d;
}
const decide = (packet: Buffer, ctx: PacketInContext = records, userdata = ud): Extract<PacketInDecision, { kind: 'resume' }> =>
  resume(decidePacketIn({ packet, userdata, metadata: md, reason: 1, continuation: hex('c0ffee') }, ctx));
const bit4 = (d: Extract<PacketInDecision, { kind: 'resume' }>): bigint => ((d.message.metadata?.get('xreg0')?.value ?? 0n) >> 36n) & 1n;

/** A resource record as OVN writes it: the question's name, type, class IN, TTL 3600, rdata. */
function rr(name: string, type: number, rdata: Buffer): Buffer {
  const fixed = Buffer.alloc(10);
  fixed.writeUInt16BE(type, 0);
  fixed.writeUInt16BE(1, 2);
  fixed.writeUInt32BE(3600, 4);
  fixed.writeUInt16BE(rdata.length, 8);
  return Buffer.concat([qname(name), fixed, rdata]);
}

t.test('an A query over IPv4: the response with the record\'s IPv4 addresses, result bit set', async (t) => {
  const q = query4({ name: 'VM1.ovn.ORG' });
  const d = decide(q);
  t.equal(d.result, true, d.detail ?? '');
  t.equal(bit4(d), 1n, 'reg0[4] (bit 36 of xreg0) set');
  t.strictSame(d.message.continuation, hex('c0ffee'));
  const out = d.message.packet;
  const answers = Buffer.concat([rr('VM1.ovn.ORG', 1, hex('0a000001')), rr('VM1.ovn.ORG', 1, hex('0a00000b'))]);
  const query = q.subarray(42);
  const expectedDns = Buffer.concat([hex('beef 8100 0001 0002 0000 0000'), query.subarray(12), answers]);
  t.strictSame(out.subarray(42), expectedDns, 'QR set, RD kept, ANCOUNT 2, question as asked, the A answers in record order (first row only)');
  t.strictSame(out.subarray(0, 14), q.subarray(0, 14), 'Ethernet header unchanged (the next flows swap it)');
  const f = parseFrame(out);
  if (isPacketError(f)) throw new Error(f.message);
  t.same({ len: f.udp?.length, sum: f.udp?.checksum, src: f.udp?.srcPort, dst: f.udp?.dstPort }, { len: 8 + expectedDns.length, sum: 0, src: 40000, dst: 53 });
  t.same({ total: f.ipv4?.totalLength, ok: f.ipv4?.checksumOk }, { total: 20 + 8 + expectedDns.length, ok: true });
  t.equal(out.length, 14 + 20 + 8 + expectedDns.length);
});

t.test('AAAA over IPv6, ANY, PTR, prefixes, padding', async (t) => {
  const v6 = decide(query6({ name: 'vm1.ovn.org', qtype: 28 }));
  t.equal(v6.result, true);
  const f = parseFrame(v6.message.packet);
  if (isPacketError(f)) throw new Error(f.message);
  t.strictSame(f.l4?.subarray(8 + 12 + 17), rr('vm1.ovn.org', 28, hex('fd000000000000000000000000000001')), 'one AAAA answer');
  t.equal(f.ipv6?.payloadLength, f.udp?.length, 'IPv6 payload length follows the UDP length');
  t.ok(udp6ChecksumOk(f.l4 as Buffer, V6_VM, V6_DNS), 'UDP checksum computed over IPv6');

  const any = decide(query4({ name: 'vm1.ovn.org', qtype: 255 }));
  t.strictSame(any.message.packet.subarray(42 + 12 + 17),
    Buffer.concat([rr('vm1.ovn.org', 1, hex('0a000001')), rr('vm1.ovn.org', 1, hex('0a00000b')), rr('vm1.ovn.org', 28, hex('fd000000000000000000000000000001'))]),
    'ANY: the A answers, then the AAAA');
  t.equal(any.message.packet.readUInt16BE(42 + 6), 3);

  const ptr = decide(query4({ name: '1.0.0.10.in-addr.arpa', qtype: 12 }));
  t.strictSame(ptr.message.packet.subarray(42 + 12 + 27), rr('1.0.0.10.in-addr.arpa', 12, hex('03 766d31 03 6f766e 03 6f7267 00')), 'PTR: the host name in labels');

  t.equal(decide(query4({ name: 'vm2.ovn.org', qtype: 28 })).result, true, 'a name only in the second row is found there');
  const net = decide(query4({ name: 'net.ovn.org' }));
  t.strictSame(net.message.packet.subarray(net.message.packet.length - 4), hex('0a000007'), 'an address with a prefix answers the address');

  const padded = query4({ name: 'vm1.ovn.org' }, 120);
  const p = decide(padded);
  t.equal(p.result, true);
  t.equal(p.message.packet.length, 14 + 20 + 8 + 12 + 17 + 2 * 27, 'Ethernet padding is not copied into the response');
});

t.test('queries without an answer resume unchanged with the bit clear', async (t) => {
  const cases: [string, Buffer, RegExp][] = [
    ['an unknown name', query4({ name: 'nope.ovn.org' }), /no DNS record/],
    ['AAAA for a name with only IPv4 addresses', query4({ name: 'net.ovn.org', qtype: 28 }), /no answer of type 28/],
    ['a value that starts with no address', query4({ name: 'broken' }), /no answer/],
    ['MX', query4({ qtype: 15 }), /query type 15/],
    ['a response', query4({ flags: 0x8180 }), /response/],
    ['no question', query4({ qdcount: 0 }), /without a question/],
    ['an EDNS query (additional record)', query4({ arcount: 1, extra: hex('00 0029 1000 00000000 0000') }), /additional records/],
    ['a label past the end', (() => { const b = query4(); b[42 + 12] = 60; return b; })(), /label runs past/],
    ['no type and class', query4({}).subarray(0, 42 + 12 + 13), /truncated|no type and class|invalid packet/],
    ['a short UDP payload', query4({}).subarray(0, 42 + 6), /invalid packet|truncated/],
    ['another datapath', query4({}), /no DNS record/],
  ];
  for (const [name, packet, why] of cases) {
    const ctx = name === 'another datapath' ? { dnsRecords: () => [] } : records;
    const d = decide(packet, ctx);
    t.equal(d.result, false, name);
    t.match(d.detail, why, name);
    t.strictSame(d.message.packet, packet, `${name}: the query goes on unchanged`);
    t.equal(bit4(d), 0n, `${name}: reg0[4] clear`);
  }
  const trimmed = query4({}).subarray(0, 42 + 12 + 13);
  trimmed.writeUInt16BE(20 + 8 + 12 + 13 - 0, 14 + 2);
  trimmed.writeUInt16BE(8 + 12 + 13, 34 + 4);
  t.match(decide(trimmed).detail, /no type and class/, 'a name with no room for type and class');
  const noCont = decidePacketIn({ packet: query4(), userdata: ud, metadata: md }, records);
  t.same([noCont.kind, noCont.kind === 'ignored' ? noCont.reason : ''], ['ignored', 'no_continuation']);
});

t.test('record values and PTR names are read as OVN reads them', async (t) => {
  t.same(recordAddresses('10.0.0.1 fd00::1'), { v4: [0x0a000001n], v6: [0xfd000000000000000000000000000001n] });
  t.same(recordAddresses('  10.0.0.1\t10.0.0.2/24  '), { v4: [0x0a000001n, 0x0a000002n], v6: [] });
  t.same(recordAddresses('10.0.0.1 host 10.0.0.2'), { v4: [0x0a000001n], v6: [] }, 'reading stops at the first token that is not an address');
  t.same(recordAddresses('10.0.0.1/33'), { v4: [], v6: [] });
  t.strictSame(encodePtrName('a.bc'), hex('01 61 02 6263 00'));
  t.strictSame(encodePtrName('a.b.'), hex('01 61 01 62 00 00'), 'a trailing dot leaves two zero bytes, as in OVN');
});

t.test('the SB store indexes DNS rows by datapath; the context reads their records by tunnel key', async (t) => {
  const store = new SbStore();
  const dp = (uuid: string, key: number): Row => ({ _uuid: uuid, _version: 'v1', tunnel_key: key, external_ids: new Map(), load_balancers: [] }) as unknown as Row;
  const dns = (uuid: string, version: string, dps: string[], recs: [string, string][]): Row =>
    ({ _uuid: uuid, _version: version, datapaths: dps, records: new Map(recs), external_ids: new Map() }) as unknown as Row;
  store.apply({ reset: true, changes: [
    { table: 'Datapath_Binding', uuid: 'dp-a', row: dp('dp-a', 5) },
    { table: 'Datapath_Binding', uuid: 'dp-b', row: dp('dp-b', 6) },
    { table: 'DNS', uuid: 'dns-2', row: dns('dns-2', 'v1', ['dp-a', 'dp-b'], [['x.org', '10.0.0.2']]) },
    { table: 'DNS', uuid: 'dns-1', row: dns('dns-1', 'v1', ['dp-a'], [['x.org', '10.0.0.1']]) },
  ] } as never);
  const ctx = sbPacketInContext(() => store);
  t.same([...ctx.dnsRecords(5)].map((r) => r.get('x.org')), ['10.0.0.1', '10.0.0.2'], 'both rows of datapath 5, by UUID');
  t.same([...ctx.dnsRecords(6)].map((r) => r.get('x.org')), ['10.0.0.2']);
  t.same([...ctx.dnsRecords(7)], [], 'an unknown tunnel key has no records');
  store.apply({ reset: false, changes: [{ table: 'DNS', uuid: 'dns-2', row: dns('dns-2', 'v2', ['dp-b'], [['x.org', '10.0.0.3']]) }] } as never);
  t.same([...ctx.dnsRecords(5)].map((r) => r.get('x.org')), ['10.0.0.1'], 'a row that leaves a datapath is no longer read there');
  t.same([...ctx.dnsRecords(6)].map((r) => r.get('x.org')), ['10.0.0.3'], 'its new records are');
  store.apply({ reset: false, changes: [{ table: 'DNS', uuid: 'dns-1' }] } as never);
  t.same([...ctx.dnsRecords(5)], [], 'a deleted row is gone');
  const d = decide(query4({ name: 'x.org' }), ctx);
  t.same([d.result, d.detail], [false, 'no DNS record for "x.org"']);
});
