// The packet formats the agent's packet-in handlers read and write: Ethernet (with one 802.1Q
// tag), ARP, IPv4, ICMPv4, UDP, TCP, IPv6, ICMPv6 (neighbor discovery) and DHCPv4 (BOOTP with
// options). Layouts follow the RFCs (826, 791, 792, 768, 793, 8200, 4443, 4861, 2131/2132).
//
// Pure and bounded: a parser reads only the bytes it is given (never past a length field it
// was handed), takes at most packetBytesMax bytes, and never throws for bad input — it returns
// a PacketError naming what is wrong. Builders take well-formed values (a programmer error
// there is an assertion) and compute every length and checksum themselves.

import assert from 'node:assert/strict';

/** The largest packet the handlers look at (an IPv4 total length cannot say more). */
export const packetBytesMax = 65535;
/** Options a DHCP message may carry before the parser stops reading them. */
export const dhcpOptionsMax = 255;
/** Options an ND message may carry before the parser stops reading them. */
export const ndOptionsMax = 64;

export const ETH_TYPE = { IPV4: 0x0800, ARP: 0x0806, VLAN: 0x8100, IPV6: 0x86dd } as const;
export const IP_PROTO = { ICMP: 1, TCP: 6, UDP: 17, ICMPV6: 58 } as const;
export const ARP_OP = { REQUEST: 1, REPLY: 2 } as const;
export const ICMP6_TYPE = { DST_UNREACH: 1, ND_NS: 135, ND_NA: 136 } as const;
export const ND_OPT = { SOURCE_LINKADDR: 1, TARGET_LINKADDR: 2 } as const;
export const ETH_HEADER_BYTES = 14;
export const VLAN_HEADER_BYTES = 4;
export const ARP_BYTES = 28;
export const IPV4_HEADER_BYTES = 20;
export const IPV6_HEADER_BYTES = 40;
export const UDP_HEADER_BYTES = 8;
export const ICMP_HEADER_BYTES = 8;
/** op … file: the fixed BOOTP part of a DHCP message (RFC 2131 figure 1). */
export const DHCP_HEADER_BYTES = 236;
export const DHCP_MAGIC_COOKIE = 0x63825363;

export const packetErrorKinds = ['truncated', 'malformed', 'unsupported', 'too_large'] as const;
export type PacketErrorKind = (typeof packetErrorKinds)[number];

/** Why bytes are not the packet a parser expected. */
export interface PacketError {
  readonly error: PacketErrorKind;
  readonly message: string;
}

export const packetError = (error: PacketErrorKind, message: string): PacketError => ({ error, message });

export function isPacketError(x: unknown): x is PacketError {
  return typeof x === 'object' && x !== null && 'error' in x && typeof (x as { error: unknown }).error === 'string';
}

// ---- Addresses ------------------------------------------------------------------------------

/** A MAC address as "xx:xx:xx:xx:xx:xx", lower case. */
export type Mac = string;

export const MAC_ZERO: Mac = '00:00:00:00:00:00';
export const MAC_BROADCAST: Mac = 'ff:ff:ff:ff:ff:ff';

export function macFromBytes(b: Uint8Array, at = 0): Mac {
  const parts: string[] = [];
  for (let i = 0; i < 6; i++) parts.push((b[at + i] ?? 0).toString(16).padStart(2, '0'));
  return parts.join(':');
}

/** Parses "xx:xx:xx:xx:xx:xx" (either case); undefined if it is not one. */
export function parseMac(s: string): Mac | undefined {
  return /^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$/.test(s) ? s.toLowerCase() : undefined;
}

export function macToBytes(mac: Mac): Buffer {
  const ok = parseMac(mac);
  assert(ok !== undefined, `not a MAC address: ${mac}`);
  return Buffer.from(ok.split(':').map((x) => Number.parseInt(x, 16)));
}

export function macFromBigint(v: bigint): Mac {
  const b = Buffer.alloc(6);
  for (let i = 0; i < 6; i++) b[i] = Number((v >> BigInt(8 * (5 - i))) & 0xffn);
  return macFromBytes(b);
}

/** A multicast (or broadcast) MAC has the low bit of its first byte set. */
export function isMulticastMac(mac: Mac): boolean {
  return (Number.parseInt(mac.slice(0, 2), 16) & 1) === 1;
}

/** An IPv4 address as an unsigned 32-bit number. */
export type Ipv4 = number;

export function formatIpv4(ip: Ipv4): string {
  return [24, 16, 8, 0].map((s) => (ip >>> s) & 0xff).join('.');
}

export function parseIpv4(s: string): Ipv4 | undefined {
  const parts = s.split('.');
  if (parts.length !== 4) return undefined;
  let v = 0;
  for (const p of parts) {
    if (!/^[0-9]{1,3}$/.test(p) || Number(p) > 255) return undefined;
    v = v * 256 + Number(p);
  }
  return v >>> 0;
}

/** An IPv6 address as a 128-bit unsigned bigint. */
export type Ipv6 = bigint;

export function ipv6FromBytes(b: Uint8Array, at = 0): Ipv6 {
  let v = 0n;
  for (let i = 0; i < 16; i++) v = (v << 8n) | BigInt(b[at + i] ?? 0);
  return v;
}

export function ipv6ToBytes(v: Ipv6): Buffer {
  assert(v >= 0n && v < 1n << 128n, 'IPv6 address out of range');
  const b = Buffer.alloc(16);
  for (let i = 0; i < 16; i++) b[i] = Number((v >> BigInt(8 * (15 - i))) & 0xffn);
  return b;
}

// ---- Checksums ------------------------------------------------------------------------------

/** The 16-bit ones'-complement sum of 'parts' as one byte string (RFC 1071), not yet inverted. */
function onesSum(parts: readonly Uint8Array[]): number {
  let sum = 0;
  let odd: number | undefined;
  for (const p of parts) {
    let i = 0;
    if (odd !== undefined && p.length > 0) {
      sum += (odd << 8) | (p[0] as number);
      odd = undefined;
      i = 1;
    }
    for (; i + 1 < p.length; i += 2) sum += ((p[i] as number) << 8) | (p[i + 1] as number);
    if (i < p.length) odd = p[i] as number;
    // Fold now and then so the sum stays a small integer however long the input.
    if (sum > 0x7fffffff) sum = (sum & 0xffff) + (sum >>> 16);
  }
  if (odd !== undefined) sum += odd << 8;
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
  return sum;
}

/** The Internet checksum of the concatenation of 'parts' (RFC 1071). */
export function internetChecksum(...parts: readonly Uint8Array[]): number {
  return ~onesSum(parts) & 0xffff;
}

function ipv4Pseudo(src: Ipv4, dst: Ipv4, protocol: number, length: number): Buffer {
  const b = Buffer.alloc(12);
  b.writeUInt32BE(src, 0);
  b.writeUInt32BE(dst, 4);
  b[9] = protocol;
  b.writeUInt16BE(length, 10);
  return b;
}

function ipv6Pseudo(src: Ipv6, dst: Ipv6, nextHeader: number, length: number): Buffer {
  const b = Buffer.alloc(40);
  ipv6ToBytes(src).copy(b, 0);
  ipv6ToBytes(dst).copy(b, 16);
  b.writeUInt32BE(length, 32);
  b[39] = nextHeader;
  return b;
}

// ---- Ethernet -------------------------------------------------------------------------------

export interface EthHeader {
  readonly dst: Mac;
  readonly src: Mac;
  /** The 802.1Q tag's TCI when the frame carries one (TPID 0x8100). */
  readonly vlanTci?: number;
  /** The EtherType after any tag. */
  readonly ethType: number;
}

export interface EthFrame extends EthHeader {
  /** Where the L3 header starts. */
  readonly l3Offset: number;
}

export function parseEthernet(b: Uint8Array): EthFrame | PacketError {
  if (b.length > packetBytesMax) return packetError('too_large', `a ${b.length}-byte frame is larger than ${packetBytesMax} bytes`);
  if (b.length < ETH_HEADER_BYTES) return packetError('truncated', `a ${b.length}-byte frame has no Ethernet header`);
  const dst = macFromBytes(b, 0);
  const src = macFromBytes(b, 6);
  const type = ((b[12] as number) << 8) | (b[13] as number);
  if (type !== ETH_TYPE.VLAN) return { dst, src, ethType: type, l3Offset: ETH_HEADER_BYTES };
  if (b.length < ETH_HEADER_BYTES + VLAN_HEADER_BYTES) return packetError('truncated', 'an 802.1Q tag is cut short');
  const vlanTci = ((b[14] as number) << 8) | (b[15] as number);
  const ethType = ((b[16] as number) << 8) | (b[17] as number);
  return { dst, src, vlanTci, ethType, l3Offset: ETH_HEADER_BYTES + VLAN_HEADER_BYTES };
}

export function buildEthernet(h: EthHeader, payload: Uint8Array): Buffer {
  const tagged = h.vlanTci !== undefined;
  const head = Buffer.alloc(ETH_HEADER_BYTES + (tagged ? VLAN_HEADER_BYTES : 0));
  macToBytes(h.dst).copy(head, 0);
  macToBytes(h.src).copy(head, 6);
  if (h.vlanTci !== undefined) {
    assert(h.vlanTci >= 0 && h.vlanTci <= 0xffff, 'VLAN TCI out of range');
    head.writeUInt16BE(ETH_TYPE.VLAN, 12);
    head.writeUInt16BE(h.vlanTci, 14);
    head.writeUInt16BE(h.ethType, 16);
  } else {
    head.writeUInt16BE(h.ethType, 12);
  }
  return Buffer.concat([head, payload]);
}

// ---- ARP ------------------------------------------------------------------------------------

/** An Ethernet/IPv4 ARP packet (RFC 826; hardware type 1, protocol 0x0800). */
export interface ArpPacket {
  readonly op: number;
  readonly sha: Mac;
  readonly spa: Ipv4;
  readonly tha: Mac;
  readonly tpa: Ipv4;
}

export function parseArp(b: Uint8Array): ArpPacket | PacketError {
  if (b.length < ARP_BYTES) return packetError('truncated', `ARP needs ${ARP_BYTES} bytes, got ${b.length}`);
  const v = Buffer.from(b.buffer, b.byteOffset, b.length);
  if (v.readUInt16BE(0) !== 1 || v.readUInt16BE(2) !== ETH_TYPE.IPV4 || v[4] !== 6 || v[5] !== 4) {
    return packetError('unsupported', 'ARP other than Ethernet/IPv4');
  }
  return { op: v.readUInt16BE(6), sha: macFromBytes(v, 8), spa: v.readUInt32BE(14), tha: macFromBytes(v, 18), tpa: v.readUInt32BE(24) };
}

export function buildArp(a: ArpPacket): Buffer {
  const b = Buffer.alloc(ARP_BYTES);
  b.writeUInt16BE(1, 0);
  b.writeUInt16BE(ETH_TYPE.IPV4, 2);
  b[4] = 6;
  b[5] = 4;
  b.writeUInt16BE(a.op, 6);
  macToBytes(a.sha).copy(b, 8);
  b.writeUInt32BE(a.spa >>> 0, 14);
  macToBytes(a.tha).copy(b, 18);
  b.writeUInt32BE(a.tpa >>> 0, 24);
  return b;
}

// ---- IPv4 -----------------------------------------------------------------------------------

export const IPV4_FLAG_DF = 0x4000;
export const IPV4_FLAG_MF = 0x2000;

export interface Ipv4Fields {
  readonly tos: number;
  readonly id: number;
  /** Flags and fragment offset as the 16-bit word on the wire. */
  readonly flagsFragment: number;
  readonly ttl: number;
  readonly protocol: number;
  readonly src: Ipv4;
  readonly dst: Ipv4;
}

export interface Ipv4Header extends Ipv4Fields {
  /** IHL × 4: the header with its options. */
  readonly headerBytes: number;
  readonly totalLength: number;
  readonly checksum: number;
  readonly checksumOk: boolean;
}

export function isFragment(h: Ipv4Fields): boolean {
  return (h.flagsFragment & (IPV4_FLAG_MF | 0x1fff)) !== 0;
}

/** Parses an IPv4 header; bytes past totalLength (Ethernet padding) are not the packet's. */
export function parseIpv4Header(b: Uint8Array): Ipv4Header | PacketError {
  if (b.length < IPV4_HEADER_BYTES) return packetError('truncated', `IPv4 needs ${IPV4_HEADER_BYTES} bytes, got ${b.length}`);
  const v = Buffer.from(b.buffer, b.byteOffset, b.length);
  const vihl = v[0] as number;
  if (vihl >> 4 !== 4) return packetError('malformed', `IP version ${vihl >> 4} in an IPv4 header`);
  const headerBytes = (vihl & 0xf) * 4;
  if (headerBytes < IPV4_HEADER_BYTES) return packetError('malformed', `IPv4 header length ${headerBytes}`);
  if (headerBytes > b.length) return packetError('truncated', `IPv4 header of ${headerBytes} bytes in ${b.length}`);
  const totalLength = v.readUInt16BE(2);
  if (totalLength < headerBytes) return packetError('malformed', `IPv4 total length ${totalLength} below its header length ${headerBytes}`);
  if (totalLength > b.length) return packetError('truncated', `IPv4 total length ${totalLength} but ${b.length} bytes present`);
  return {
    tos: v[1] as number, totalLength, id: v.readUInt16BE(4), flagsFragment: v.readUInt16BE(6), ttl: v[8] as number,
    protocol: v[9] as number, checksum: v.readUInt16BE(10), src: v.readUInt32BE(12), dst: v.readUInt32BE(16), headerBytes,
    checksumOk: internetChecksum(v.subarray(0, headerBytes)) === 0,
  };
}

/** A 20-byte IPv4 header (no options) with its checksum, followed by 'payload'. */
export function buildIpv4(h: Ipv4Fields, payload: Uint8Array): Buffer {
  const total = IPV4_HEADER_BYTES + payload.length;
  assert(total <= packetBytesMax, 'IPv4 packet too large');
  const b = Buffer.alloc(total);
  b[0] = 0x45;
  b[1] = h.tos;
  b.writeUInt16BE(total, 2);
  b.writeUInt16BE(h.id, 4);
  b.writeUInt16BE(h.flagsFragment, 6);
  b[8] = h.ttl;
  b[9] = h.protocol;
  b.writeUInt32BE(h.src >>> 0, 12);
  b.writeUInt32BE(h.dst >>> 0, 16);
  b.writeUInt16BE(internetChecksum(b.subarray(0, IPV4_HEADER_BYTES)), 10);
  Buffer.from(payload.buffer, payload.byteOffset, payload.length).copy(b, IPV4_HEADER_BYTES);
  return b;
}

/** Rewrites an IPv4 header's checksum in place (after a caller changed a field). */
export function refreshIpv4Checksum(header: Buffer): void {
  const n = ((header[0] as number) & 0xf) * 4;
  assert(n >= IPV4_HEADER_BYTES && n <= header.length, 'not an IPv4 header');
  header.writeUInt16BE(0, 10);
  header.writeUInt16BE(internetChecksum(header.subarray(0, n)), 10);
}

// ---- UDP ------------------------------------------------------------------------------------

export interface UdpHeader {
  readonly srcPort: number;
  readonly dstPort: number;
  readonly length: number;
  readonly checksum: number;
}

export function parseUdp(b: Uint8Array): UdpHeader | PacketError {
  if (b.length < UDP_HEADER_BYTES) return packetError('truncated', `UDP needs ${UDP_HEADER_BYTES} bytes, got ${b.length}`);
  const v = Buffer.from(b.buffer, b.byteOffset, b.length);
  const length = v.readUInt16BE(4);
  if (length < UDP_HEADER_BYTES) return packetError('malformed', `UDP length ${length}`);
  if (length > b.length) return packetError('truncated', `UDP length ${length} but ${b.length} bytes present`);
  return { srcPort: v.readUInt16BE(0), dstPort: v.readUInt16BE(2), length, checksum: v.readUInt16BE(6) };
}

/** A UDP datagram. With 'pseudo' the checksum covers the IPv4 pseudo-header; without, it is 0
 *  (no checksum, which RFC 768 allows over IPv4). */
export function buildUdp(ports: { readonly srcPort: number; readonly dstPort: number }, payload: Uint8Array,
  pseudo?: { readonly src: Ipv4; readonly dst: Ipv4 }): Buffer {
  const length = UDP_HEADER_BYTES + payload.length;
  assert(length <= 0xffff, 'UDP datagram too large');
  const b = Buffer.alloc(length);
  b.writeUInt16BE(ports.srcPort, 0);
  b.writeUInt16BE(ports.dstPort, 2);
  b.writeUInt16BE(length, 4);
  Buffer.from(payload.buffer, payload.byteOffset, payload.length).copy(b, UDP_HEADER_BYTES);
  if (pseudo !== undefined) {
    const sum = internetChecksum(ipv4Pseudo(pseudo.src, pseudo.dst, IP_PROTO.UDP, length), b);
    b.writeUInt16BE(sum === 0 ? 0xffff : sum, 6);
  }
  return b;
}

/** Sets the checksum of a UDP datagram over IPv6 in place (mandatory there: a computed 0 is sent as 0xffff). */
export function fillUdp6Checksum(datagram: Buffer, src: Ipv6, dst: Ipv6): void {
  assert(datagram.length >= UDP_HEADER_BYTES, 'not a UDP datagram');
  datagram.writeUInt16BE(0, 6);
  const sum = internetChecksum(ipv6Pseudo(src, dst, IP_PROTO.UDP, datagram.length), datagram);
  datagram.writeUInt16BE(sum === 0 ? 0xffff : sum, 6);
}

/** Whether a UDP datagram over IPv6 has the right checksum (0 is never right there). */
export function udp6ChecksumOk(datagram: Uint8Array, src: Ipv6, dst: Ipv6): boolean {
  const v = Buffer.from(datagram.buffer, datagram.byteOffset, datagram.length);
  if (v.length < UDP_HEADER_BYTES || v.readUInt16BE(6) === 0) return false;
  return internetChecksum(ipv6Pseudo(src, dst, IP_PROTO.UDP, v.length), v) === 0;
}

/** Whether a UDP datagram's checksum is right (0 = none, which counts as right over IPv4). */
export function udpChecksumOk(datagram: Uint8Array, src: Ipv4, dst: Ipv4): boolean {
  const v = Buffer.from(datagram.buffer, datagram.byteOffset, datagram.length);
  if (v.length < UDP_HEADER_BYTES || v.readUInt16BE(6) === 0) return true;
  return internetChecksum(ipv4Pseudo(src, dst, IP_PROTO.UDP, v.length), v) === 0;
}

// ---- TCP ------------------------------------------------------------------------------------

export const TCP_HEADER_BYTES = 20;
/** The control bits of a TCP header's flags byte (RFC 793, 3168). */
export const TCP_FLAG = { FIN: 0x01, SYN: 0x02, RST: 0x04, PSH: 0x08, ACK: 0x10, URG: 0x20, ECE: 0x40, CWR: 0x80 } as const;

export interface TcpFields {
  readonly srcPort: number;
  readonly dstPort: number;
  readonly seq: number;
  readonly ack: number;
  /** The control bits (TCP_FLAG), the low 9 bits of the word after the data offset. */
  readonly flags: number;
  readonly window: number;
  readonly urgent: number;
}

export interface TcpHeader extends TcpFields {
  /** Data offset × 4: the header with its options. */
  readonly headerBytes: number;
  readonly checksum: number;
}

/** The addresses a TCP or UDP checksum covers, with the IP version they belong to. */
export type L4Pseudo =
  | { readonly kind: 'ipv4'; readonly src: Ipv4; readonly dst: Ipv4 }
  | { readonly kind: 'ipv6'; readonly src: Ipv6; readonly dst: Ipv6 };

function l4Pseudo(p: L4Pseudo, protocol: number, length: number): Buffer {
  return p.kind === 'ipv4' ? ipv4Pseudo(p.src, p.dst, protocol, length) : ipv6Pseudo(p.src, p.dst, protocol, length);
}

/** Parses a TCP header (options are counted in headerBytes, not read). */
export function parseTcp(b: Uint8Array): TcpHeader | PacketError {
  if (b.length < TCP_HEADER_BYTES) return packetError('truncated', `TCP needs ${TCP_HEADER_BYTES} bytes, got ${b.length}`);
  const v = Buffer.from(b.buffer, b.byteOffset, b.length);
  const ctl = v.readUInt16BE(12);
  const headerBytes = (ctl >> 12) * 4;
  if (headerBytes < TCP_HEADER_BYTES) return packetError('malformed', `TCP data offset ${headerBytes} bytes`);
  if (headerBytes > b.length) return packetError('truncated', `TCP header of ${headerBytes} bytes in ${b.length}`);
  return {
    srcPort: v.readUInt16BE(0), dstPort: v.readUInt16BE(2), seq: v.readUInt32BE(4), ack: v.readUInt32BE(8), headerBytes,
    flags: ctl & 0x1ff, window: v.readUInt16BE(14), checksum: v.readUInt16BE(16), urgent: v.readUInt16BE(18),
  };
}

/** A TCP segment without options: a 20-byte header with its checksum over 'pseudo', then 'payload'. */
export function buildTcp(h: TcpFields, payload: Uint8Array, pseudo: L4Pseudo): Buffer {
  const length = TCP_HEADER_BYTES + payload.length;
  assert(length <= 0xffff, 'TCP segment too large');
  assert(h.flags >= 0 && h.flags <= 0x1ff, 'TCP flags out of range');
  const b = Buffer.alloc(length);
  b.writeUInt16BE(h.srcPort, 0);
  b.writeUInt16BE(h.dstPort, 2);
  b.writeUInt32BE(h.seq >>> 0, 4);
  b.writeUInt32BE(h.ack >>> 0, 8);
  b.writeUInt16BE(((TCP_HEADER_BYTES / 4) << 12) | h.flags, 12);
  b.writeUInt16BE(h.window, 14);
  b.writeUInt16BE(h.urgent, 18);
  Buffer.from(payload.buffer, payload.byteOffset, payload.length).copy(b, TCP_HEADER_BYTES);
  b.writeUInt16BE(internetChecksum(l4Pseudo(pseudo, IP_PROTO.TCP, length), b), 16);
  return b;
}

/** Whether a TCP segment's checksum is right. */
export function tcpChecksumOk(segment: Uint8Array, pseudo: L4Pseudo): boolean {
  const v = Buffer.from(segment.buffer, segment.byteOffset, segment.length);
  return internetChecksum(l4Pseudo(pseudo, IP_PROTO.TCP, v.length), v) === 0;
}

// ---- ICMPv4 ---------------------------------------------------------------------------------

export const ICMP4_TYPE = { ECHO_REPLY: 0, DST_UNREACH: 3, ECHO_REQUEST: 8, TIME_EXCEEDED: 11 } as const;

export interface Icmp4Header {
  readonly type: number;
  readonly code: number;
  readonly checksum: number;
  /** The 32 bits after the checksum (unused, echo id/seq, or next-hop MTU). */
  readonly rest: number;
  readonly checksumOk: boolean;
}

export function parseIcmp4(b: Uint8Array): Icmp4Header | PacketError {
  if (b.length < ICMP_HEADER_BYTES) return packetError('truncated', `ICMP needs ${ICMP_HEADER_BYTES} bytes, got ${b.length}`);
  const v = Buffer.from(b.buffer, b.byteOffset, b.length);
  return { type: v[0] as number, code: v[1] as number, checksum: v.readUInt16BE(2), rest: v.readUInt32BE(4), checksumOk: internetChecksum(v) === 0 };
}

export function buildIcmp4(h: { readonly type: number; readonly code: number; readonly rest: number }, payload: Uint8Array): Buffer {
  const b = Buffer.alloc(ICMP_HEADER_BYTES + payload.length);
  b[0] = h.type;
  b[1] = h.code;
  b.writeUInt32BE(h.rest >>> 0, 4);
  Buffer.from(payload.buffer, payload.byteOffset, payload.length).copy(b, ICMP_HEADER_BYTES);
  b.writeUInt16BE(internetChecksum(b), 2);
  return b;
}

// ---- IPv6 and ICMPv6 ------------------------------------------------------------------------

export interface Ipv6Fields {
  readonly trafficClass: number;
  readonly flowLabel: number;
  readonly nextHeader: number;
  readonly hopLimit: number;
  readonly src: Ipv6;
  readonly dst: Ipv6;
}

export interface Ipv6Header extends Ipv6Fields {
  readonly payloadLength: number;
}

/** The fixed IPv6 header; extension headers are left in the payload (nextHeader says so). */
export function parseIpv6Header(b: Uint8Array): Ipv6Header | PacketError {
  if (b.length < IPV6_HEADER_BYTES) return packetError('truncated', `IPv6 needs ${IPV6_HEADER_BYTES} bytes, got ${b.length}`);
  const v = Buffer.from(b.buffer, b.byteOffset, b.length);
  const w = v.readUInt32BE(0);
  if (w >>> 28 !== 6) return packetError('malformed', `IP version ${w >>> 28} in an IPv6 header`);
  const payloadLength = v.readUInt16BE(4);
  if (IPV6_HEADER_BYTES + payloadLength > b.length) {
    return packetError('truncated', `IPv6 payload length ${payloadLength} but ${b.length - IPV6_HEADER_BYTES} bytes present`);
  }
  return {
    trafficClass: (w >>> 20) & 0xff, flowLabel: w & 0xfffff, payloadLength, nextHeader: v[6] as number, hopLimit: v[7] as number,
    src: ipv6FromBytes(v, 8), dst: ipv6FromBytes(v, 24),
  };
}

export function buildIpv6(h: Ipv6Fields, payload: Uint8Array): Buffer {
  assert(payload.length <= 0xffff, 'IPv6 payload too large (no jumbograms)');
  const b = Buffer.alloc(IPV6_HEADER_BYTES + payload.length);
  b.writeUInt32BE(((6 << 28) | ((h.trafficClass & 0xff) << 20) | (h.flowLabel & 0xfffff)) >>> 0, 0);
  b.writeUInt16BE(payload.length, 4);
  b[6] = h.nextHeader;
  b[7] = h.hopLimit;
  ipv6ToBytes(h.src).copy(b, 8);
  ipv6ToBytes(h.dst).copy(b, 24);
  Buffer.from(payload.buffer, payload.byteOffset, payload.length).copy(b, IPV6_HEADER_BYTES);
  return b;
}

export interface Icmp6Header {
  readonly type: number;
  readonly code: number;
  readonly checksum: number;
}

export function parseIcmp6(b: Uint8Array): Icmp6Header | PacketError {
  if (b.length < 4) return packetError('truncated', `ICMPv6 needs 4 bytes, got ${b.length}`);
  const v = Buffer.from(b.buffer, b.byteOffset, b.length);
  return { type: v[0] as number, code: v[1] as number, checksum: v.readUInt16BE(2) };
}

/** An ICMPv6 message: type, code, the checksum over the IPv6 pseudo-header, then 'body'. */
export function buildIcmp6(h: { readonly type: number; readonly code: number }, body: Uint8Array, src: Ipv6, dst: Ipv6): Buffer {
  const b = Buffer.alloc(4 + body.length);
  b[0] = h.type;
  b[1] = h.code;
  Buffer.from(body.buffer, body.byteOffset, body.length).copy(b, 4);
  b.writeUInt16BE(icmp6Checksum(b, src, dst), 2);
  return b;
}

/** The checksum of an ICMPv6 message over the IPv6 pseudo-header (its own checksum field 0). */
export function icmp6Checksum(message: Uint8Array, src: Ipv6, dst: Ipv6): number {
  return internetChecksum(ipv6Pseudo(src, dst, IP_PROTO.ICMPV6, message.length), message);
}

export function icmp6ChecksumOk(message: Uint8Array, src: Ipv6, dst: Ipv6): boolean {
  return icmp6Checksum(message, src, dst) === 0;
}

/** A neighbor solicitation or advertisement (RFC 4861 §4.3, §4.4). */
export interface NdMessage {
  readonly type: typeof ICMP6_TYPE.ND_NS | typeof ICMP6_TYPE.ND_NA;
  /** The advertisement's R/S/O bits as the first 32-bit word after the checksum (0 for NS). */
  readonly flags: number;
  readonly target: Ipv6;
  /** The source (NS) or target (NA) link-layer address option, when present. */
  readonly sll?: Mac;
  readonly tll?: Mac;
}

export const ND_FLAG = { ROUTER: 0x80000000, SOLICITED: 0x40000000, OVERRIDE: 0x20000000 } as const;

/** Parses an ICMPv6 NS or NA (code 0); other ICMPv6 messages are 'unsupported'. */
export function parseNd(icmp6: Uint8Array): NdMessage | PacketError {
  const h = parseIcmp6(icmp6);
  if (isPacketError(h)) return h;
  if ((h.type !== ICMP6_TYPE.ND_NS && h.type !== ICMP6_TYPE.ND_NA) || h.code !== 0) {
    return packetError('unsupported', `ICMPv6 type ${h.type} code ${h.code} is not neighbor discovery`);
  }
  if (icmp6.length < 24) return packetError('truncated', `an ND message needs 24 bytes, got ${icmp6.length}`);
  const v = Buffer.from(icmp6.buffer, icmp6.byteOffset, icmp6.length);
  let sll: Mac | undefined;
  let tll: Mac | undefined;
  let at = 24;
  for (let n = 0; at < v.length; n++) {
    if (n >= ndOptionsMax) return packetError('too_large', `more than ${ndOptionsMax} ND options`);
    if (at + 2 > v.length) return packetError('truncated', 'an ND option header is cut short');
    const len = (v[at + 1] as number) * 8;
    if (len === 0) return packetError('malformed', 'an ND option of length 0');
    if (at + len > v.length) return packetError('truncated', 'an ND option runs past the message');
    const type = v[at] as number;
    if (len === 8 && type === ND_OPT.SOURCE_LINKADDR && sll === undefined) sll = macFromBytes(v, at + 2);
    if (len === 8 && type === ND_OPT.TARGET_LINKADDR && tll === undefined) tll = macFromBytes(v, at + 2);
    at += len;
  }
  return {
    type: h.type, flags: v.readUInt32BE(4), target: ipv6FromBytes(v, 8),
    ...(sll === undefined ? {} : { sll }), ...(tll === undefined ? {} : { tll }),
  };
}

/** The ICMPv6 body (after type, code and checksum) of an NS or NA with at most one link-layer option. */
export function buildNdBody(m: NdMessage): Buffer {
  const opts: Buffer[] = [];
  const opt = (type: number, mac: Mac): Buffer => Buffer.concat([Buffer.from([type, 1]), macToBytes(mac)]);
  if (m.sll !== undefined) opts.push(opt(ND_OPT.SOURCE_LINKADDR, m.sll));
  if (m.tll !== undefined) opts.push(opt(ND_OPT.TARGET_LINKADDR, m.tll));
  const head = Buffer.alloc(20);
  head.writeUInt32BE(m.flags >>> 0, 0);
  ipv6ToBytes(m.target).copy(head, 4);
  return Buffer.concat([head, ...opts]);
}

// ---- DHCPv4 ---------------------------------------------------------------------------------

export const BOOTP_OP = { REQUEST: 1, REPLY: 2 } as const;
export const DHCP_MSG = { DISCOVER: 1, OFFER: 2, REQUEST: 3, DECLINE: 4, ACK: 5, NAK: 6, RELEASE: 7, INFORM: 8 } as const;
export const DHCP_OPT = {
  PAD: 0, NETMASK: 1, ROUTER: 3, REQUESTED_IP: 50, LEASE_TIME: 51, MSG_TYPE: 53, SERVER_ID: 54, T1: 58, T2: 59,
  BOOTFILE: 67, ETHERBOOT: 175, NEXT_SERVER: 253, BOOTFILE_ALT: 254, END: 255,
} as const;
export const DHCP_FLAG_BROADCAST = 0x8000;
export const DHCP_SERVER_PORT = 67;
export const DHCP_CLIENT_PORT = 68;

export interface DhcpOptionTlv {
  readonly code: number;
  readonly data: Buffer;
}

/** The BOOTP fields of a DHCP message (RFC 2131 §2) and its options. */
export interface DhcpMessage {
  readonly op: number;
  readonly htype: number;
  readonly hlen: number;
  readonly hops: number;
  readonly xid: number;
  readonly secs: number;
  readonly flags: number;
  readonly ciaddr: Ipv4;
  readonly yiaddr: Ipv4;
  readonly siaddr: Ipv4;
  readonly giaddr: Ipv4;
  /** 16 bytes; an Ethernet client's MAC is the first 6. */
  readonly chaddr: Buffer;
  /** 64 bytes. */
  readonly sname: Buffer;
  /** 128 bytes. */
  readonly file: Buffer;
  /** In order, without pads and the end option. */
  readonly options: readonly DhcpOptionTlv[];
  /** The options area stopped early: an option ran past the message, or there were too many. */
  readonly optionsCut: boolean;
}

/**
 * Reads options (code, length, value) until END or the end of 'b', skipping pads. Like
 * ovn-controller, an option that runs past the end stops the reading and what came before it
 * stands; 'cut' says that happened.
 */
export function parseDhcpOptions(b: Uint8Array): { options: DhcpOptionTlv[]; cut: boolean } {
  const v = Buffer.from(b.buffer, b.byteOffset, b.length);
  const options: DhcpOptionTlv[] = [];
  let at = 0;
  while (at < v.length) {
    const code = v[at] as number;
    if (code === DHCP_OPT.END) return { options, cut: false };
    if (code === DHCP_OPT.PAD) {
      at++;
      continue;
    }
    if (at + 2 > v.length) return { options, cut: true };
    const len = v[at + 1] as number;
    if (at + 2 + len > v.length) return { options, cut: true };
    if (options.length >= dhcpOptionsMax) return { options, cut: true };
    options.push({ code, data: Buffer.from(v.subarray(at + 2, at + 2 + len)) });
    at += 2 + len;
  }
  return { options, cut: false };
}

export function parseDhcp(b: Uint8Array): DhcpMessage | PacketError {
  if (b.length < DHCP_HEADER_BYTES + 4) return packetError('truncated', `DHCP needs ${DHCP_HEADER_BYTES + 4} bytes, got ${b.length}`);
  const v = Buffer.from(b.buffer, b.byteOffset, b.length);
  if (v.readUInt32BE(DHCP_HEADER_BYTES) !== DHCP_MAGIC_COOKIE) return packetError('malformed', 'no DHCP magic cookie');
  const { options, cut } = parseDhcpOptions(v.subarray(DHCP_HEADER_BYTES + 4));
  return {
    op: v[0] as number, htype: v[1] as number, hlen: v[2] as number, hops: v[3] as number, xid: v.readUInt32BE(4),
    secs: v.readUInt16BE(8), flags: v.readUInt16BE(10), ciaddr: v.readUInt32BE(12), yiaddr: v.readUInt32BE(16),
    siaddr: v.readUInt32BE(20), giaddr: v.readUInt32BE(24), chaddr: Buffer.from(v.subarray(28, 44)),
    sname: Buffer.from(v.subarray(44, 108)), file: Buffer.from(v.subarray(108, 236)), options, optionsCut: cut,
  };
}

export function dhcpOption(m: Pick<DhcpMessage, 'options'>, code: number): Buffer | undefined {
  return m.options.find((o) => o.code === code)?.data;
}

export function encodeDhcpOptions(options: readonly DhcpOptionTlv[]): Buffer {
  return Buffer.concat(options.map((o) => {
    assert(o.code > 0 && o.code < 255 && o.data.length <= 255, `DHCP option ${o.code} of ${o.data.length} bytes`);
    return Buffer.concat([Buffer.from([o.code, o.data.length]), o.data]);
  }));
}

/** A DHCP message: the BOOTP header, the magic cookie, the options and END. */
export function buildDhcp(m: Omit<DhcpMessage, 'optionsCut'>): Buffer {
  const b = Buffer.alloc(DHCP_HEADER_BYTES + 4);
  b[0] = m.op;
  b[1] = m.htype;
  b[2] = m.hlen;
  b[3] = m.hops;
  b.writeUInt32BE(m.xid >>> 0, 4);
  b.writeUInt16BE(m.secs, 8);
  b.writeUInt16BE(m.flags, 10);
  b.writeUInt32BE(m.ciaddr >>> 0, 12);
  b.writeUInt32BE(m.yiaddr >>> 0, 16);
  b.writeUInt32BE(m.siaddr >>> 0, 20);
  b.writeUInt32BE(m.giaddr >>> 0, 24);
  m.chaddr.subarray(0, 16).copy(b, 28);
  m.sname.subarray(0, 64).copy(b, 44);
  m.file.subarray(0, 128).copy(b, 108);
  b.writeUInt32BE(DHCP_MAGIC_COOKIE, DHCP_HEADER_BYTES);
  return Buffer.concat([b, encodeDhcpOptions(m.options), Buffer.from([DHCP_OPT.END])]);
}

// ---- A whole frame --------------------------------------------------------------------------

/**
 * What a handler needs to know of a frame, after ovs's flow_extract: each layer that is present
 * and well formed, with where it starts. A layer that is present but malformed makes the whole
 * parse an error; a protocol this module does not read simply stops the walk.
 */
export interface Frame {
  readonly eth: EthFrame;
  readonly arp?: ArpPacket;
  readonly ipv4?: Ipv4Header;
  readonly ipv6?: Ipv6Header;
  /** Where the L4 header starts (IPv4 not a later fragment, or IPv6 without extension headers). */
  readonly l4Offset?: number;
  /** The L4 bytes, up to the IP packet's own end (no Ethernet padding). */
  readonly l4?: Buffer;
  readonly udp?: UdpHeader;
  readonly icmp4?: Icmp4Header;
  readonly icmp6?: Icmp6Header;
  readonly nd?: NdMessage;
}

export function parseFrame(bytes: Uint8Array): Frame | PacketError {
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
  const eth = parseEthernet(b);
  if (isPacketError(eth)) return eth;
  const l3 = b.subarray(eth.l3Offset);
  if (eth.ethType === ETH_TYPE.ARP) {
    const arp = parseArp(l3);
    return isPacketError(arp) ? arp : { eth, arp };
  }
  if (eth.ethType === ETH_TYPE.IPV4) {
    const ipv4 = parseIpv4Header(l3);
    if (isPacketError(ipv4)) return ipv4;
    // A fragment's L4 header is absent (later fragments) or its length runs past this packet.
    if (isFragment(ipv4)) return { eth, ipv4 };
    const l4Offset = eth.l3Offset + ipv4.headerBytes;
    const l4 = b.subarray(l4Offset, eth.l3Offset + ipv4.totalLength);
    const base = { eth, ipv4, l4Offset, l4 };
    if (ipv4.protocol === IP_PROTO.UDP) {
      const udp = parseUdp(l4);
      return isPacketError(udp) ? udp : { ...base, udp };
    }
    if (ipv4.protocol === IP_PROTO.ICMP) {
      const icmp4 = parseIcmp4(l4);
      return isPacketError(icmp4) ? icmp4 : { ...base, icmp4 };
    }
    return base;
  }
  if (eth.ethType === ETH_TYPE.IPV6) {
    const ipv6 = parseIpv6Header(l3);
    if (isPacketError(ipv6)) return ipv6;
    const l4Offset = eth.l3Offset + IPV6_HEADER_BYTES;
    const l4 = b.subarray(l4Offset, l4Offset + ipv6.payloadLength);
    const base = { eth, ipv6, l4Offset, l4 };
    if (ipv6.nextHeader === IP_PROTO.UDP) {
      const udp = parseUdp(l4);
      return isPacketError(udp) ? udp : { ...base, udp };
    }
    if (ipv6.nextHeader === IP_PROTO.ICMPV6) {
      const icmp6 = parseIcmp6(l4);
      if (isPacketError(icmp6)) return icmp6;
      if ((icmp6.type === ICMP6_TYPE.ND_NS || icmp6.type === ICMP6_TYPE.ND_NA) && icmp6.code === 0) {
        const nd = parseNd(l4);
        return isPacketError(nd) ? nd : { ...base, icmp6, nd };
      }
      return { ...base, icmp6 };
    }
    return base;
  }
  return { eth };
}
