// Reading the IGMP and MLD messages the `igmp;` action sends to the controller, as
// ovn-controller 23.03's pinctrl_ip_mcast_handle_igmp / _mld and Open vSwitch's
// mcast_snooping_add_report / _add_mld read them: the checksum must hold (IGMP over the IP
// payload; MLD, an ICMPv6 message, over the IPv6 pseudo-header), then
//   IGMP 0x12 (v1 report), 0x16 (v2 report): join the group; 0x17 (leave): leave it;
//        0x22 (v3 report): per group record, a leave when the record is MODE_IS_INCLUDE or
//        CHANGE_TO_INCLUDE with no sources, else a join; 0x11 (query): the port leads to a router.
//   MLD  131 (v1 report): join; 132 (done): leave; 143 (v2 report): records as IGMPv3;
//        130 (query): a router, unless it comes from the unspecified address.
// Reports and leaves go on to the multicast routers, queries to the whole L2 domain. Pure; bad
// input is a PacketError, never an exception.
//
// Departures from OVS: a record's aux data length counts 32-bit words (RFC 3376 4.2.6; OVS adds
// it as bytes, harmless since it is always 0); a group address that is not multicast is skipped
// (OVS would learn it); IPv6 extension headers other than hop-by-hop (where MLD's router alert
// lives) are not walked, so MLD behind them is refused.

import {
  ETH_TYPE, IP_PROTO, formatIpv4, icmp6ChecksumOk, internetChecksum, ipv6FromBytes, isPacketError, packetError,
  parseFrame, type Ipv6, type PacketError,
} from './packet.js';
import { formatIpv6 } from '../expr/to-matches.js';

export const IGMP_TYPE = { QUERY: 0x11, V1_REPORT: 0x12, V2_REPORT: 0x16, LEAVE: 0x17, V3_REPORT: 0x22 } as const;
export const MLD_TYPE = { QUERY: 130, V1_REPORT: 131, DONE: 132, V2_REPORT: 143 } as const;
/** IGMPv3 / MLDv2 record types MODE_IS_INCLUDE .. BLOCK_OLD_SOURCES (RFC 3376 4.2.12). */
export const RECORD_TYPE = { MODE_IS_INCLUDE: 1, MODE_IS_EXCLUDE: 2, CHANGE_TO_INCLUDE: 3, CHANGE_TO_EXCLUDE: 4, ALLOW_NEW: 5, BLOCK_OLD: 6 } as const;

const IGMP_HEADER_BYTES = 8;
const IGMPV3_RECORD_BYTES = 8;
const MLD_HEADER_BYTES = 8;
const MLD_V1_BYTES = MLD_HEADER_BYTES + 16;
const MLDV2_RECORD_BYTES = 20;
/** IPv6 hop-by-hop options: where MLD's router alert is. */
const IPV6_HOPOPTS = 0;
/** A report names at most this many records (a 64 KiB IGMPv3 report holds about 8,000). */
export const mcastRecordsMax = 8192;

/** One group a report joins or leaves; the address as IGMP_Group.address spells it. */
export interface McastRecord {
  readonly group: string;
  readonly join: boolean;
}

/** What one IGMP or MLD message says. */
export type McastMessage =
  /** A report or leave: the groups, then the packet goes on to the multicast routers. */
  | { readonly kind: 'report'; readonly proto: 'igmp' | 'mld'; readonly type: number; readonly records: readonly McastRecord[] }
  /** A query: `fromRouter` when its sender is a router to learn; the packet floods the L2 domain. */
  | { readonly kind: 'query'; readonly proto: 'igmp' | 'mld'; readonly fromRouter: boolean }
  /** A well-formed message of another type: nothing learned, nothing forwarded. */
  | { readonly kind: 'other'; readonly proto: 'igmp' | 'mld'; readonly type: number };

function isMulticast4(ip: number): boolean {
  return ip >>> 28 === 0xe;
}

function isMulticast6(ip: Ipv6): boolean {
  return ip >> 120n === 0xffn;
}

/** An IPv6 address as ovn-controller writes it (ipv6_string_mapped: IPv4-mapped as dotted). */
export function formatGroup6(ip: Ipv6): string {
  return ip >> 32n === 0xffffn ? formatIpv4(Number(ip & 0xffffffffn)) : formatIpv6(ip);
}

/** Parses the IGMP or MLD message in an Ethernet frame. */
export function parseMcastMessage(bytes: Uint8Array): McastMessage | PacketError {
  const f = parseFrame(bytes);
  if (isPacketError(f)) return f;
  if (f.eth.ethType === ETH_TYPE.IPV4 && f.ipv4 !== undefined) {
    if (f.ipv4.protocol !== 2) return packetError('unsupported', `IPv4 protocol ${f.ipv4.protocol} is not IGMP`);
    if (f.l4 === undefined) return packetError('unsupported', 'a fragmented IGMP message');
    return parseIgmp(f.l4);
  }
  if (f.eth.ethType === ETH_TYPE.IPV6 && f.ipv6 !== undefined && f.l4 !== undefined) {
    let l4 = f.l4;
    let next = f.ipv6.nextHeader;
    if (next === IPV6_HOPOPTS) {
      if (l4.length < 8) return packetError('truncated', 'an IPv6 hop-by-hop header cut short');
      const len = ((l4[1] as number) + 1) * 8;
      if (l4.length < len) return packetError('truncated', `an IPv6 hop-by-hop header of ${len} bytes in ${l4.length}`);
      next = l4[0] as number;
      l4 = l4.subarray(len);
    }
    if (next !== IP_PROTO.ICMPV6) return packetError('unsupported', `IPv6 next header ${next} is not ICMPv6`);
    if (l4.length < MLD_HEADER_BYTES) return packetError('truncated', `MLD needs ${MLD_HEADER_BYTES} bytes, got ${l4.length}`);
    if (!icmp6ChecksumOk(l4, f.ipv6.src, f.ipv6.dst)) return packetError('malformed', 'bad MLD checksum');
    return parseMld(l4, f.ipv6.src);
  }
  return packetError('unsupported', `EtherType 0x${f.eth.ethType.toString(16)} is neither IPv4 nor IPv6`);
}

function parseIgmp(m: Buffer): McastMessage | PacketError {
  if (m.length < IGMP_HEADER_BYTES) return packetError('truncated', `IGMP needs ${IGMP_HEADER_BYTES} bytes, got ${m.length}`);
  if (internetChecksum(m) !== 0) return packetError('malformed', 'bad IGMP checksum');
  const type = m[0] as number;
  const proto = 'igmp';
  switch (type) {
    case IGMP_TYPE.QUERY:
      return { kind: 'query', proto, fromRouter: true };
    case IGMP_TYPE.V1_REPORT:
    case IGMP_TYPE.V2_REPORT:
    case IGMP_TYPE.LEAVE: {
      const group = m.readUInt32BE(4);
      const records = isMulticast4(group) ? [{ group: formatIpv4(group), join: type !== IGMP_TYPE.LEAVE }] : [];
      return { kind: 'report', proto, type, records };
    }
    case IGMP_TYPE.V3_REPORT:
      return { kind: 'report', proto, type, records: readRecords(m, m.readUInt16BE(6), IGMP_HEADER_BYTES, 4) };
    default:
      return { kind: 'other', proto, type };
  }
}

function parseMld(m: Buffer, src: Ipv6): McastMessage | PacketError {
  const type = m[0] as number;
  const proto = 'mld';
  switch (type) {
    case MLD_TYPE.QUERY:
      return { kind: 'query', proto, fromRouter: src !== 0n };
    case MLD_TYPE.V1_REPORT:
    case MLD_TYPE.DONE: {
      if (m.length < MLD_V1_BYTES) return packetError('truncated', `an MLDv1 message needs ${MLD_V1_BYTES} bytes, got ${m.length}`);
      const group = ipv6FromBytes(m, MLD_HEADER_BYTES);
      const records = isMulticast6(group) ? [{ group: formatGroup6(group), join: type === MLD_TYPE.V1_REPORT }] : [];
      return { kind: 'report', proto, type, records };
    }
    case MLD_TYPE.V2_REPORT:
      return { kind: 'report', proto, type, records: readRecords(m, m.readUInt16BE(6), MLD_HEADER_BYTES, 16) };
    default:
      return { kind: 'other', proto, type };
  }
}

/**
 * The group records of an IGMPv3 or MLDv2 report (addresses of `addrBytes`). A record cut short
 * ends the list (the ones before it count, as in OVS); unknown record types are skipped.
 */
function readRecords(m: Buffer, n: number, start: number, addrBytes: 4 | 16): McastRecord[] {
  const out: McastRecord[] = [];
  const recordBytes = addrBytes === 4 ? IGMPV3_RECORD_BYTES : MLDV2_RECORD_BYTES;
  let at = start;
  for (let i = 0; i < Math.min(n, mcastRecordsMax); i++) {
    if (at + recordBytes > m.length) break;
    const type = m[at] as number;
    const auxWords = m[at + 1] as number;
    const sources = m.readUInt16BE(at + 2);
    let group: string | undefined;
    if (addrBytes === 4) {
      const g = m.readUInt32BE(at + 4);
      if (isMulticast4(g)) group = formatIpv4(g);
    } else {
      const g = ipv6FromBytes(m, at + 4);
      if (isMulticast6(g)) group = formatGroup6(g);
    }
    if (group !== undefined && type >= RECORD_TYPE.MODE_IS_INCLUDE && type <= RECORD_TYPE.BLOCK_OLD) {
      const leave = sources === 0 && (type === RECORD_TYPE.MODE_IS_INCLUDE || type === RECORD_TYPE.CHANGE_TO_INCLUDE);
      out.push({ group, join: !leave });
    }
    at += recordBytes + sources * addrBytes + auxWords * 4;
  }
  return out;
}
