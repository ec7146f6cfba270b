// Goal: the pinctrl packet codec writes and reads the RFC layouts byte for byte.
// Method: expected frames written out by hand from the RFC field layouts (checksums computed by an
// independent implementation, and the IPv4 example of the Wikipedia/RFC 1071 walk-through), a
// dumb word-by-word checksum beside the fast one, and every malformed case named by its error.

import t from 'tap';
import {
  DHCP_MSG, DHCP_OPT, ETH_TYPE, IPV4_FLAG_DF, IP_PROTO, ND_FLAG, buildArp, buildDhcp, buildEthernet, buildIcmp4, buildIcmp6,
  buildIpv4, buildIpv6, buildNdBody, buildUdp, formatIpv4, icmp6ChecksumOk, internetChecksum, isPacketError, parseArp,
  parseDhcp, parseDhcpOptions, parseEthernet, parseFrame, parseIpv4, parseIpv4Header, parseIpv6Header, parseMac, parseNd,
  parseUdp, udpChecksumOk, type Frame, type PacketError,
} from '../../agent/pinctrl/packet.js';
import { Rng } from '../helpers/seeded-rng.js';

const hex = (s: string): Buffer => Buffer.from(s.replace(/[^0-9a-f]/gi, ''), 'hex');
const ip4 = (s: string): number => parseIpv4(s) as number;
const ip6 = (s: string): bigint => {
  const b = Buffer.alloc(16);
  const [head = '', tail = ''] = s.split('::');
  const hs = head === '' ? [] : head.split(':');
  const ts = tail === '' ? [] : tail.split(':');
  hs.forEach((g, i) => b.writeUInt16BE(Number.parseInt(g, 16), 2 * i));
  ts.forEach((g, i) => b.writeUInt16BE(Number.parseInt(g, 16), 16 - 2 * (ts.length - i)));
  return BigInt(`0x${b.toString('hex')}`);
};
const ok = <T>(x: T | PacketError): T => {
  if (isPacketError(x)) throw new Error(`unexpected packet error: ${x.error}: ${x.message}`);
  return x;
};
const err = (x: unknown): string => (isPacketError(x) ? x.error : 'no error');

/** RFC 1071's definition, one 16-bit word at a time, as slowly as it reads. */
function dumbChecksum(bytes: Buffer): number {
  let sum = 0;
  for (let i = 0; i < bytes.length; i += 2) sum += ((bytes[i] ?? 0) << 8) + (bytes[i + 1] ?? 0);
  while (sum > 0xffff) sum = (sum & 0xffff) + Math.floor(sum / 0x10000);
  return ~sum & 0xffff;
}

t.test('the Internet checksum equals the dumb reference, however the bytes are split', async (t) => {
  const rng = new Rng(7);
  for (let n = 0; n < 300; n++) {
    const len = rng.int(0, 3000);
    const b = Buffer.alloc(len);
    for (let i = 0; i < len; i++) b[i] = rng.int(0, 255);
    const cuts = [0, rng.int(0, len), rng.int(0, len), len].sort((x, y) => x - y);
    const parts = [b.subarray(cuts[0], cuts[1]), b.subarray(cuts[1], cuts[2]), b.subarray(cuts[2], cuts[3])];
    if (internetChecksum(...parts) !== dumbChecksum(b)) {
      t.fail(`length ${len} cut at ${cuts.join(',')}`);
      return;
    }
  }
  t.equal(internetChecksum(Buffer.alloc(70_000, 0xff)), dumbChecksum(Buffer.alloc(70_000, 0xff)), 'long all-ones input');
  t.pass('300 random inputs agree');
});

t.test('Ethernet + ARP request (RFC 826)', async (t) => {
  const frame = buildEthernet({ dst: 'ff:ff:ff:ff:ff:ff', src: '52:54:00:12:34:56', ethType: ETH_TYPE.ARP },
    buildArp({ op: 1, sha: '52:54:00:12:34:56', spa: ip4('10.0.0.1'), tha: '00:00:00:00:00:00', tpa: ip4('10.0.0.2') }));
  const want = hex(`ffffffffffff 525400123456 0806
    0001 0800 06 04 0001 525400123456 0a000001 000000000000 0a000002`);
  t.strictSame(frame, want);
  const f = ok(parseFrame(want));
  t.same(f.eth, { dst: 'ff:ff:ff:ff:ff:ff', src: '52:54:00:12:34:56', ethType: 0x806, l3Offset: 14 });
  t.same(f.arp, { op: 1, sha: '52:54:00:12:34:56', spa: ip4('10.0.0.1'), tha: '00:00:00:00:00:00', tpa: ip4('10.0.0.2') });
  t.equal(err(parseArp(hex('0006 0800 0604 0001 525400123456 0a000001 000000000000 0a000002'))), 'unsupported', 'IEEE 802 hardware type');
  t.equal(err(parseArp(want.subarray(14, 41))), 'truncated');
});

t.test('an 802.1Q tag sits between the source MAC and the EtherType', async (t) => {
  const frame = buildEthernet({ dst: '0a:00:00:00:00:02', src: '0a:00:00:00:00:01', vlanTci: 0x2064, ethType: ETH_TYPE.IPV4 }, Buffer.alloc(0));
  t.strictSame(frame, hex('0a0000000002 0a0000000001 8100 2064 0800'));
  t.same(ok(parseEthernet(frame)), { dst: '0a:00:00:00:00:02', src: '0a:00:00:00:00:01', vlanTci: 0x2064, ethType: 0x800, l3Offset: 18 });
  t.equal(err(parseEthernet(frame.subarray(0, 16))), 'truncated');
  t.equal(err(parseEthernet(frame.subarray(0, 13))), 'truncated');
  t.equal(err(parseEthernet(Buffer.alloc(65536))), 'too_large');
});

t.test('IPv4 header checksum: the classic 192.168.0.1 → 192.168.0.199 example (b861)', async (t) => {
  const packet = buildIpv4({ tos: 0, id: 0, flagsFragment: IPV4_FLAG_DF, ttl: 64, protocol: IP_PROTO.UDP, src: ip4('192.168.0.1'), dst: ip4('192.168.0.199') },
    Buffer.alloc(0x73 - 20));
  t.strictSame(packet.subarray(0, 20), hex('4500 0073 0000 4000 4011 b861 c0a8 0001 c0a8 00c7'));
  const h = ok(parseIpv4Header(packet));
  t.same({ ...h }, {
    tos: 0, totalLength: 0x73, id: 0, flagsFragment: 0x4000, ttl: 64, protocol: 17, checksum: 0xb861,
    src: ip4('192.168.0.1'), dst: ip4('192.168.0.199'), headerBytes: 20, checksumOk: true,
  });
  const bad = Buffer.from(packet);
  bad[8] = 63;
  t.equal(ok(parseIpv4Header(bad)).checksumOk, false, 'a changed TTL breaks the checksum');
  t.equal(err(parseIpv4Header(packet.subarray(0, 0x72))), 'truncated', 'total length past the bytes');
  t.equal(err(parseIpv4Header(hex('4400 0073 0000 4000 4011 b861 c0a8 0001 c0a8 00c7'))), 'malformed', 'IHL 4');
  t.equal(err(parseIpv4Header(hex('6500 0073 0000 4000 4011 b861 c0a8 0001 c0a8 00c7'))), 'malformed', 'version 6');
  t.equal(err(parseIpv4Header(hex('4500 0010 0000 4000 4011 b861 c0a8 0001 c0a8 00c7'))), 'malformed', 'total length below the header');
  t.equal(err(parseIpv4Header(hex('4600 0018 0000 4000 4011 b861 c0a8 0001 c0a8 00c7'))), 'truncated', 'options cut short');
});

t.test('UDP with the IPv4 pseudo-header checksum (RFC 768)', async (t) => {
  const u = buildUdp({ srcPort: 68, dstPort: 67 }, Buffer.from('hello'), { src: ip4('10.0.0.1'), dst: ip4('10.0.0.2') });
  t.strictSame(u, hex('0044 0043 000d a778 68656c6c6f'));
  t.ok(udpChecksumOk(u, ip4('10.0.0.1'), ip4('10.0.0.2')));
  t.notOk(udpChecksumOk(u, ip4('10.0.0.1'), ip4('10.0.0.3')), 'the pseudo-header counts');
  t.strictSame(buildUdp({ srcPort: 68, dstPort: 67 }, Buffer.from('hello')), hex('0044 0043 000d 0000 68656c6c6f'), 'no checksum');
  t.same(ok(parseUdp(u)), { srcPort: 68, dstPort: 67, length: 13, checksum: 0xa778 });
  t.equal(err(parseUdp(u.subarray(0, 12))), 'truncated');
  t.equal(err(parseUdp(hex('0044 0043 0007 0000'))), 'malformed');
});

t.test('ICMPv4 echo (RFC 792)', async (t) => {
  const m = buildIcmp4({ type: 8, code: 0, rest: 0x12340001 }, Buffer.from('abcdefgh'));
  t.strictSame(m, hex('08 00 5435 12340001 6162636465666768'));
  const pkt = buildEthernet({ dst: '0a:00:00:00:00:02', src: '0a:00:00:00:00:01', ethType: ETH_TYPE.IPV4 },
    buildIpv4({ tos: 0, id: 1, flagsFragment: 0, ttl: 64, protocol: IP_PROTO.ICMP, src: ip4('10.0.0.1'), dst: ip4('10.0.0.2') }, m));
  const f = ok(parseFrame(Buffer.concat([pkt, Buffer.alloc(10)])));
  t.same(f.icmp4, { type: 8, code: 0, checksum: 0x5435, rest: 0x12340001, checksumOk: true });
  t.equal(f.l4?.length, 16, 'Ethernet padding is not part of the ICMP message');
});

t.test('ICMPv6 neighbor advertisement (RFC 4861 §4.4) with its pseudo-header checksum', async (t) => {
  const src = ip6('fe80::1');
  const dst = ip6('fe80::2');
  const body = buildNdBody({ type: 136, flags: ND_FLAG.SOLICITED | ND_FLAG.OVERRIDE, target: src, tll: '52:54:00:00:00:01' });
  const icmp = buildIcmp6({ type: 136, code: 0 }, body, src, dst);
  t.strictSame(icmp, hex('88 00 c7c7 60000000 fe800000000000000000000000000001 02 01 525400000001'));
  t.ok(icmp6ChecksumOk(icmp, src, dst));
  const ip = buildIpv6({ trafficClass: 0, flowLabel: 0, nextHeader: IP_PROTO.ICMPV6, hopLimit: 255, src, dst }, icmp);
  t.strictSame(ip.subarray(0, 8), hex('60000000 0020 3a ff'));
  const f = ok(parseFrame(buildEthernet({ dst: '52:54:00:00:00:02', src: '52:54:00:00:00:01', ethType: ETH_TYPE.IPV6 }, ip)));
  t.same(f.nd, { type: 136, flags: 0x60000000, target: src, tll: '52:54:00:00:00:01' });
  t.same({ ...f.ipv6 }, { trafficClass: 0, flowLabel: 0, payloadLength: 32, nextHeader: 58, hopLimit: 255, src, dst });
  t.equal(err(parseNd(hex('87 00 0000 00000000 fe800000000000000000000000000001 01 00 525400000001'))), 'malformed', 'option length 0');
  t.equal(err(parseNd(hex('87 00 0000 00000000 fe800000000000000000000000000001 01 02 525400000001'))), 'truncated', 'option past the end');
  t.equal(err(parseNd(hex('80 00 0000 00000000'))), 'unsupported', 'echo request');
  t.equal(err(parseIpv6Header(ip.subarray(0, 50))), 'truncated');
  t.equal(err(parseIpv6Header(Buffer.concat([hex('40'), ip.subarray(1)]))), 'malformed');
});

/** A DHCPDISCOVER from 52:54:00:c0:ff:ee, transaction 0x3903f326, broadcast flag set. */
const discoverBytes = hex(`
  01 01 06 00  3903f326  0000 8000
  00000000 00000000 00000000 00000000
  525400c0ffee 00000000000000000000
  ${'00'.repeat(64)} ${'00'.repeat(128)}
  63825363
  35 01 01
  00
  37 03 01 03 06
  32 04 0a000005
  ff`);

t.test('DHCPDISCOVER (RFC 2131 §2, options RFC 2132)', async (t) => {
  const d = ok(parseDhcp(discoverBytes));
  t.same({ op: d.op, htype: d.htype, hlen: d.hlen, hops: d.hops, xid: d.xid, secs: d.secs, flags: d.flags }, {
    op: 1, htype: 1, hlen: 6, hops: 0, xid: 0x3903f326, secs: 0, flags: 0x8000,
  });
  t.strictSame(d.chaddr.subarray(0, 6), hex('525400c0ffee'));
  t.same(d.options.map((o) => [o.code, o.data.toString('hex')]), [[53, '01'], [55, '010306'], [50, '0a000005']], 'the pad is skipped');
  t.equal(d.optionsCut, false);
  const rebuilt = buildDhcp({ ...d, options: d.options });
  t.strictSame(rebuilt, Buffer.concat([discoverBytes.subarray(0, 243), discoverBytes.subarray(244)]), 'rebuilt without the pad');
  t.equal(err(parseDhcp(discoverBytes.subarray(0, 239))), 'truncated');
  const noCookie = Buffer.from(discoverBytes);
  noCookie[236] = 0;
  t.equal(err(parseDhcp(noCookie)), 'malformed');
  const cut = parseDhcpOptions(hex('35 01 01 0c 05 6162'));
  t.same([cut.options.length, cut.cut], [1, true], 'an option past the end stops the reading, keeping what came before');
  t.same(parseDhcpOptions(hex('35 01 03 ff 0c 05')).options.map((o) => o.code), [DHCP_OPT.MSG_TYPE], 'END stops the reading');
  t.same(parseDhcpOptions(hex('35 01')).cut, true);
  t.equal(DHCP_MSG.DISCOVER, 1);
});

t.test('a whole DHCPDISCOVER frame walks Ethernet, IPv4, UDP', async (t) => {
  const udp = buildUdp({ srcPort: 68, dstPort: 67 }, discoverBytes, { src: 0, dst: 0xffffffff });
  const ip = buildIpv4({ tos: 0x10, id: 0, flagsFragment: 0, ttl: 128, protocol: IP_PROTO.UDP, src: 0, dst: 0xffffffff }, udp);
  const frame = buildEthernet({ dst: 'ff:ff:ff:ff:ff:ff', src: '52:54:00:c0:ff:ee', ethType: ETH_TYPE.IPV4 }, ip);
  const f: Frame = ok(parseFrame(frame));
  t.equal(f.l4Offset, 34);
  t.same(f.udp, { srcPort: 68, dstPort: 67, length: 8 + discoverBytes.length, checksum: udp.readUInt16BE(6) });
  t.ok(udpChecksumOk(f.l4 as Buffer, 0, 0xffffffff));
  t.equal(formatIpv4(f.ipv4?.dst ?? 0), '255.255.255.255');
  const frag = Buffer.from(frame);
  frag.writeUInt16BE(0x2000, 14 + 6);
  frag.writeUInt16BE(0, 14 + 10);
  frag.writeUInt16BE(internetChecksum(frag.subarray(14, 34)), 14 + 10);
  t.equal(ok(parseFrame(frag)).udp, undefined, 'a fragment is not read past its IP header');
});

t.test('addresses', async (t) => {
  t.equal(parseMac('0A:00:00:00:00:FF'), '0a:00:00:00:00:ff');
  t.equal(parseMac('0a:00:00:00:00'), undefined);
  t.equal(parseIpv4('10.0.0.256'), undefined);
  t.equal(parseIpv4('1.2.3'), undefined);
  t.equal(formatIpv4(0xc0a80001), '192.168.0.1');
});
