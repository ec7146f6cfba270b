// The packets OVN's nested controller actions start from, built from the packet that reached the
// controller: arp { } (an ARP request for the packet's IPv4 destination), icmp4 { } / icmp6 { }
// and their _error forms (a destination-unreachable carrying the start of the original packet),
// nd_na { } (a neighbor advertisement answering a solicitation) and nd_ns { } (a neighbor
// solicitation for the packet's IPv6 destination); and icmp4.frag_mtu / icmp6.frag_mtu, which
// write the MTU into such an error on its way (pinctrl_handle_put_icmp_frag_mtu). The nested actions then
// rewrite these (swap addresses, set type and code, …) in the switch; what is built here is
// exactly what ovn-controller 23.03 builds before it hands them over (pinctrl.c:
// pinctrl_handle_arp, pinctrl_handle_icmp, pinctrl_handle_nd_na, pinctrl_handle_nd_ns). Pure.

import {
  ARP_OP, ETH_HEADER_BYTES, ETH_TYPE, ICMP4_TYPE, ICMP6_TYPE, ICMP_HEADER_BYTES, IPV4_FLAG_DF, IPV4_HEADER_BYTES,
  IPV6_HEADER_BYTES, IP_PROTO, MAC_ZERO, ND_FLAG, buildArp, buildEthernet, buildIcmp4, buildIcmp6, buildIpv4, buildIpv6,
  buildNdBody, icmp6Checksum, macToBytes, packetError, refreshIpv4Checksum, type EthHeader, type Frame, type Ipv6, type Mac, type PacketError,
} from './packet.js';

/**
 * The TOS byte of the IPv4 packets ovn-controller makes: 0. pinctrl_compose_ipv4 sets
 * IP_DSCP_CS6, and the packet_set_ipv4 call after it writes the tos it is given, 0, over it.
 */
const TOS_COMPOSED = 0;
const TTL_MAX = 255;
/** RFC 1812 §4.3.2.3: an ICMPv4 error is at most 576 bytes, Ethernet header included as OVN counts. */
const ICMP4_ERROR_BYTES_MAX = 576;
/** RFC 4443 §2.4 (c): an ICMPv6 error fits the minimum IPv6 MTU. */
const ICMP6_ERROR_BYTES_MAX = 1280;
const ICMP4_CODE = { HOST_UNREACH: 1, PORT_UNREACH: 3 } as const;
/** ovn-controller starts every ICMPv6 error at code 1 (administratively prohibited). */
const ICMP6_CODE = { ADMIN_PROHIBITED: 1, PORT_UNREACH: 4 } as const;
/** The DEI/CFI bit of a TCI: ovs marks "tag present" with it and clears it when it pushes a tag. */
const VLAN_CFI = 0x1000;

/** An Ethernet header for a generated packet, tagged as the original was. */
function ethLike(f: Frame, dst: string, src: string, ethType: number): EthHeader {
  const tci = f.eth.vlanTci;
  return tci === undefined ? { dst, src, ethType } : { dst, src, ethType, vlanTci: tci & ~VLAN_CFI };
}

/** arp { }: an ARP request from the packet's source MAC and IPv4 address for its IPv4 destination. */
export function composeArpRequest(f: Frame): Buffer | PacketError {
  if (f.ipv4 === undefined) return packetError('unsupported', `arp action on a packet that is not IPv4 (EtherType 0x${f.eth.ethType.toString(16)})`);
  const arp = buildArp({ op: ARP_OP.REQUEST, sha: f.eth.src, spa: f.ipv4.src, tha: MAC_ZERO, tpa: f.ipv4.dst });
  return buildEthernet(ethLike(f, f.eth.dst, f.eth.src, ETH_TYPE.ARP), arp);
}

export interface IcmpErrorOptions {
  /**
     * icmp4 { } / icmp6 { } (ACTION_OPCODE_ICMP): the code says "port unreachable" when the
   * original was UDP. The _error forms always start from code 1 (v4 host unreachable, v6
   * administratively prohibited);
   * their nested actions usually set another type and code.
   */
  readonly portUnreachForUdp: boolean;
}

/**
 * icmp4/icmp6 and icmp4_error/icmp6_error: a destination-unreachable from the original's source to
 * its destination (the nested actions swap them), quoting as much of the original IP packet as
 * fits in 576 (v4) or 1280 (v6) bytes. 'raw' is the packet the frame was parsed from.
 */
export function composeIcmpError(f: Frame, raw: Uint8Array, opts: IcmpErrorOptions): Buffer | PacketError {
  const l3 = Buffer.from(raw.buffer, raw.byteOffset, raw.length).subarray(f.eth.l3Offset);
  if (f.ipv4 !== undefined) {
    const room = ICMP4_ERROR_BYTES_MAX - (ETH_HEADER_BYTES + IPV4_HEADER_BYTES + ICMP_HEADER_BYTES);
    const quoted = l3.subarray(0, Math.min(f.ipv4.totalLength, room));
    const code = opts.portUnreachForUdp && f.ipv4.protocol === IP_PROTO.UDP ? ICMP4_CODE.PORT_UNREACH : ICMP4_CODE.HOST_UNREACH;
    const icmp = buildIcmp4({ type: ICMP4_TYPE.DST_UNREACH, code, rest: 0 }, quoted);
    const ip = buildIpv4({
      tos: TOS_COMPOSED, id: 0, flagsFragment: IPV4_FLAG_DF, ttl: TTL_MAX, protocol: IP_PROTO.ICMP, src: f.ipv4.src, dst: f.ipv4.dst,
    }, icmp);
    return buildEthernet(ethLike(f, f.eth.dst, f.eth.src, ETH_TYPE.IPV4), ip);
  }
  if (f.ipv6 !== undefined) {
    const room = ICMP6_ERROR_BYTES_MAX - (ETH_HEADER_BYTES + IPV6_HEADER_BYTES + ICMP_HEADER_BYTES);
    const quoted = l3.subarray(0, Math.min(IPV6_HEADER_BYTES + f.ipv6.payloadLength, room));
    const code = opts.portUnreachForUdp && f.ipv6.nextHeader === IP_PROTO.UDP ? ICMP6_CODE.PORT_UNREACH : ICMP6_CODE.ADMIN_PROHIBITED;
    // After type, code and checksum: 4 unused bytes, then the quoted packet.
    const body = Buffer.concat([Buffer.alloc(4), quoted]);
    const icmp = buildIcmp6({ type: ICMP6_TYPE.DST_UNREACH, code }, body, f.ipv6.src, f.ipv6.dst);
    const ip = buildIpv6({ trafficClass: 0, flowLabel: 0, nextHeader: IP_PROTO.ICMPV6, hopLimit: TTL_MAX, src: f.ipv6.src, dst: f.ipv6.dst }, icmp);
    return buildEthernet(ethLike(f, f.eth.dst, f.eth.src, ETH_TYPE.IPV6), ip);
  }
  return packetError('unsupported', `ICMP action on a packet that is neither IPv4 nor IPv6 (EtherType 0x${f.eth.ethType.toString(16)})`);
}

/**
 * nd_na { } / nd_na_router { }: a solicited, override neighbor advertisement for the solicited
 * target, from the solicitation's destination MAC back to its source, carrying the target
 * link-layer address option (the MAC the nested actions will usually overwrite). Untagged, as OVN.
 */
export function composeNdNa(f: Frame, router: boolean): Buffer | PacketError {
  if (f.ipv6 === undefined || f.nd === undefined) return packetError('unsupported', 'nd_na action on a packet that is not neighbor discovery');
  const flags = (ND_FLAG.SOLICITED | ND_FLAG.OVERRIDE | (router ? ND_FLAG.ROUTER : 0)) >>> 0;
  const src = f.nd.target;
  const dst = f.ipv6.src;
  const body = buildNdBody({ type: ICMP6_TYPE.ND_NA, flags, target: f.nd.target, tll: f.eth.dst });
  const icmp = buildIcmp6({ type: ICMP6_TYPE.ND_NA, code: 0 }, body, src, dst);
  const ip = buildIpv6({ trafficClass: 0, flowLabel: 0, nextHeader: IP_PROTO.ICMPV6, hopLimit: TTL_MAX, src, dst }, icmp);
  return buildEthernet({ dst: f.eth.src, src: f.eth.dst, ethType: ETH_TYPE.IPV6 }, ip);
}

/** The IPv6 link-local address of a MAC (modified EUI-64, RFC 4291 appendix A). */
export function linkLocalOf(mac: Mac): Ipv6 {
  const b = macToBytes(mac);
  let iid = 0n;
  for (const byte of [(b[0] as number) ^ 0x02, b[1] as number, b[2] as number, 0xff, 0xfe, b[3] as number, b[4] as number, b[5] as number]) iid = (iid << 8n) | BigInt(byte);
  return (0xfe80n << 112n) | iid;
}

/** The solicited-node multicast address of an IPv6 address (RFC 4291 §2.7.1), and its MAC. */
function solicitedNode(ip: Ipv6): { ip: Ipv6; mac: Mac } {
  const low = ip & 0xffffffn;
  const sn = (0xff02n << 112n) | (1n << 32n) | (0xffn << 24n) | low;
  const last4 = sn & 0xffffffffn;
  const hex = (n: bigint): string => n.toString(16).padStart(2, '0');
  const mac = `33:33:${hex((last4 >> 24n) & 0xffn)}:${hex((last4 >> 16n) & 0xffn)}:${hex((last4 >> 8n) & 0xffn)}:${hex(last4 & 0xffn)}`;
  return { ip: sn, mac };
}

/**
 * nd_ns { }: a neighbor solicitation for the packet's IPv6 destination, from the link-local
 * address of its source MAC to the destination's solicited-node group, with the source
 * link-layer address option. Untagged, as OVN composes it (the nested actions usually set
 * nd.target to the next hop).
 */
export function composeNdNs(f: Frame): Buffer | PacketError {
  if (f.ipv6 === undefined) return packetError('unsupported', `nd_ns action on a packet that is not IPv6 (EtherType 0x${f.eth.ethType.toString(16)})`);
  const src = linkLocalOf(f.eth.src);
  const group = solicitedNode(f.ipv6.dst);
  const body = buildNdBody({ type: ICMP6_TYPE.ND_NS, flags: 0, target: f.ipv6.dst, sll: f.eth.src });
  const icmp = buildIcmp6({ type: ICMP6_TYPE.ND_NS, code: 0 }, body, src, group.ip);
  const ip = buildIpv6({ trafficClass: 0, flowLabel: 0, nextHeader: IP_PROTO.ICMPV6, hopLimit: TTL_MAX, src, dst: group.ip }, icmp);
  return buildEthernet({ dst: group.mac, src: f.eth.src, ethType: ETH_TYPE.IPV6 }, ip);
}

/** RFC 1624's incremental update of a ones-complement checksum for one 16-bit word changed. */
function recalcChecksum16(checksum: number, before: number, after: number): number {
  let sum = (~checksum & 0xffff) + (~before & 0xffff) + after;
  sum = (sum & 0xffff) + (sum >>> 16);
  sum = (sum & 0xffff) + (sum >>> 16);
  return ~sum & 0xffff;
}

/**
 * icmp4.frag_mtu = N / icmp6.frag_mtu = N, as the paused packet reached the controller: the
 * ICMPv4 error's next-hop MTU (the second 16 bits after its checksum; the ICMP checksum updated
 * for that word, the IPv4 header's recomputed) or the ICMPv6 message's 32 bits after its
 * checksum (its checksum recomputed over the pseudo-header), set to `mtu` (big-endian, 2 or 4
 * bytes). A copy; the packet must be ICMPv4 (v4) or ICMPv6 (v6), as ovn-controller requires.
 */
export function setIcmpFragMtu(f: Frame, raw: Uint8Array, mtu: Buffer, v6: boolean): Buffer | PacketError {
  const out = Buffer.from(raw);
  const at = f.l4Offset;
  if (!v6) {
    if (f.ipv4 === undefined || f.ipv4.protocol !== IP_PROTO.ICMP || at === undefined || f.l4 === undefined || f.l4.length < ICMP_HEADER_BYTES) {
      return packetError('unsupported', 'icmp4.frag_mtu on a packet that is not ICMPv4');
    }
    if (mtu.length < 2) return packetError('malformed', `icmp4.frag_mtu: the userdata holds ${mtu.length} of the MTU's 2 bytes`);
    const before = out.readUInt16BE(at + 6);
    const after = mtu.readUInt16BE(0);
    out.writeUInt16BE(after, at + 6);
    out.writeUInt16BE(recalcChecksum16(out.readUInt16BE(at + 2), before, after), at + 2);
    refreshIpv4Checksum(out.subarray(f.eth.l3Offset));
    return out;
  }
  if (f.ipv6 === undefined || f.ipv6.nextHeader !== IP_PROTO.ICMPV6 || at === undefined || f.l4 === undefined || f.l4.length < ICMP_HEADER_BYTES) {
    return packetError('unsupported', 'icmp6.frag_mtu on a packet that is not ICMPv6');
  }
  if (mtu.length < 4) return packetError('malformed', `icmp6.frag_mtu: the userdata holds ${mtu.length} of the MTU's 4 bytes`);
  mtu.copy(out, at + 4, 0, 4);
  const message = out.subarray(at, at + f.l4.length);
  message.writeUInt16BE(0, 2);
  message.writeUInt16BE(icmp6Checksum(message, f.ipv6.src, f.ipv6.dst), 2);
  return out;
}
