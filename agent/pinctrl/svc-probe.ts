// The packets of load balancer health checks (ovn-controller's service monitors), pure: the
// probes the agent sends to a backend and the replies the backend's port hands back.
//
// A probe is built as ovn-controller 23.03 builds it: Ethernet from the Service_Monitor's
// src_mac to the backend port's MAC; IPv4 (TOS 0, ID 0, DF, TTL 63) or IPv6 (traffic class and
// flow label 0, hop limit 63) from src_ip to the backend's ip; then either
//   TCP: a 20-byte header, no options, window 65160 — a SYN with a random sequence number to
//        open, an RST+ACK to close after the SYN+ACK (sequence = the SYN+ACK's ack + 1, as
//        ovn-controller sends it);
//   UDP: 8 bytes of zeros as payload; checksum 0 over IPv4 (none), computed over IPv6.
// It goes out as a packet-out that sets the logical datapath (metadata), the output port (reg15)
// and MLF_LOCAL_ONLY (reg10 bit 4), then resubmits to table 40 (local output): the backend's port
// is on this chassis, the egress pipeline runs, and the packet leaves through the port's VIF.
//
// Replies reach the controller through handle_svc_check(inport) (ls_in_l2_lkup, eth.dst ==
// svc_monitor_mac): the backend's port in reg14, the switch in metadata. A TCP segment is taken
// as it is; ICMP is kept only when it is port unreachable (ICMPv4 type 3 code 3, ICMPv6 type 1
// code 4), with the UDP ports of the probe it quotes.

import assert from 'node:assert/strict';
import { OFTABLE, LOG_REG, MLF } from '../compile/tables.js';
import { formatIpv6 } from '../expr/to-matches.js';
import { OFPP } from '../openflow/actions.js';
import type { OfMessage, PacketIn2 } from '../openflow/messages.js';
import { readDatapathKey, readReg } from './metadata.js';
import {
  ETH_TYPE, ICMP4_TYPE, ICMP6_TYPE, ICMP_HEADER_BYTES, IPV4_FLAG_DF, IPV4_HEADER_BYTES, IPV6_HEADER_BYTES, IP_PROTO, UDP_HEADER_BYTES,
  buildEthernet, buildIpv4, buildIpv6, buildTcp, buildUdp, fillUdp6Checksum, formatIpv4, isPacketError, packetError, parseFrame, parseTcp,
  type Ipv4, type Ipv6, type L4Pseudo, type Mac, type PacketError,
} from './packet.js';

/** The TTL / hop limit of every probe. */
export const PROBE_TTL = 63;
/** The window of a TCP probe. */
export const TCP_PROBE_WINDOW = 65160;
/** The zeros after a UDP probe's header. */
export const UDP_PROBE_PAYLOAD_BYTES = 8;
/** ICMPv4 destination unreachable's code for "port unreachable". */
const ICMP4_PORT_UNREACH = 3;
/** ICMPv6 destination unreachable's code for "port unreachable". */
const ICMP6_PORT_UNREACH = 4;
/** OpenFlow 1.0's 16-bit OFPP_CONTROLLER, as resubmit's in_port spells it. */
const OFPP10_CONTROLLER = 0xfffd;
const OFP_NO_BUFFER = 0xffffffff;

/** An IP address of either family. */
export type IpAddr = { readonly kind: 'ipv4'; readonly v: Ipv4 } | { readonly kind: 'ipv6'; readonly v: Ipv6 };

/** The address as the probe tables key it: dotted IPv4, RFC 5952 IPv6. */
export function ipText(a: IpAddr): string {
  return a.kind === 'ipv4' ? formatIpv4(a.v) : formatIpv6(a.v);
}

/** Where a probe goes and where it comes from. */
export interface ProbeTarget {
  /** The backend's logical switch (tunnel key) and port (tunnel key). */
  readonly dpKey: number;
  readonly portKey: number;
  readonly srcMac: Mac;
  /** The backend port's MAC. */
  readonly dstMac: Mac;
  /** Service_Monitor.src_ip; of the same family as dst. */
  readonly src: IpAddr;
  /** The backend's IP (Service_Monitor.ip). */
  readonly dst: IpAddr;
  /** The backend's TCP or UDP port (Service_Monitor.port). */
  readonly port: number;
}

/** One TCP segment of a probe. */
export interface TcpProbeSegment {
  readonly srcPort: number;
  readonly flags: number;
  readonly seq: number;
  readonly ack: number;
}

function ipPacket(t: ProbeTarget, protocol: number, l4: (p: L4Pseudo) => Buffer): Buffer {
  if (t.src.kind === 'ipv4' && t.dst.kind === 'ipv4') {
    const pseudo: L4Pseudo = { kind: 'ipv4', src: t.src.v, dst: t.dst.v };
    const ip = buildIpv4({ tos: 0, id: 0, flagsFragment: IPV4_FLAG_DF, ttl: PROBE_TTL, protocol, src: t.src.v, dst: t.dst.v }, l4(pseudo));
    return buildEthernet({ dst: t.dstMac, src: t.srcMac, ethType: ETH_TYPE.IPV4 }, ip);
  }
  if (t.src.kind === 'ipv6' && t.dst.kind === 'ipv6') {
    const pseudo: L4Pseudo = { kind: 'ipv6', src: t.src.v, dst: t.dst.v };
    const ip = buildIpv6({ trafficClass: 0, flowLabel: 0, nextHeader: protocol, hopLimit: PROBE_TTL, src: t.src.v, dst: t.dst.v }, l4(pseudo));
    return buildEthernet({ dst: t.dstMac, src: t.srcMac, ethType: ETH_TYPE.IPV6 }, ip);
  }
  assert.fail(`a probe from ${ipText(t.src)} to ${ipText(t.dst)} mixes address families`);
}

/** A TCP probe segment to the backend (SYN, or RST+ACK), in its Ethernet frame. */
export function composeTcpProbe(t: ProbeTarget, s: TcpProbeSegment): Buffer {
  return ipPacket(t, IP_PROTO.TCP, (pseudo) => buildTcp({
    srcPort: s.srcPort, dstPort: t.port, seq: s.seq, ack: s.ack, flags: s.flags, window: TCP_PROBE_WINDOW, urgent: 0,
  }, Buffer.alloc(0), pseudo));
}

/** A UDP probe datagram to the backend, in its Ethernet frame. */
export function composeUdpProbe(t: ProbeTarget, srcPort: number): Buffer {
  return ipPacket(t, IP_PROTO.UDP, (pseudo) => {
    const ports = { srcPort, dstPort: t.port };
    const payload = Buffer.alloc(UDP_PROBE_PAYLOAD_BYTES);
    if (pseudo.kind === 'ipv4') return buildUdp(ports, payload);
    const d = buildUdp(ports, payload);
    fillUdp6Checksum(d, pseudo.src, pseudo.dst);
    return d;
  });
}

/** The packet-out that sends a probe out of the backend's port on this chassis. */
export function probePacketOut(t: Pick<ProbeTarget, 'dpKey' | 'portKey'>, packet: Buffer): Extract<OfMessage, { kind: 'packet_out' }> {
  const localOnly = 1n << BigInt(MLF.LOCAL_ONLY);
  return {
    kind: 'packet_out', bufferId: OFP_NO_BUFFER, inPort: OFPP.CONTROLLER, data: packet,
    actions: [
      { kind: 'set_field', field: 'metadata', value: BigInt(t.dpKey) },
      { kind: 'set_field', field: LOG_REG.OUTPORT, value: BigInt(t.portKey) },
      { kind: 'set_field', field: LOG_REG.FLAGS, value: localOnly, mask: localOnly },
      { kind: 'resubmit', table: OFTABLE.LOCAL_OUTPUT, inPort: OFPP10_CONTROLLER },
    ],
  };
}

/** What a handle_svc_check packet-in says about a backend. */
export type SvcReply =
  | {
      readonly kind: 'tcp';
      readonly dpKey: number;
      /** The backend's port (reg14). */
      readonly portKey: number;
      /** The backend's IP: the reply's source. */
      readonly ip: string;
      /** The backend's TCP port: the reply's source port. */
      readonly port: number;
      /** The reply's destination port: the probe's source port. */
      readonly dstPort: number;
      readonly seq: number;
      readonly ack: number;
      readonly flags: number;
    }
  | {
      readonly kind: 'port_unreachable';
      readonly dpKey: number;
      readonly portKey: number;
      /** The backend's IP: the ICMP error's source. */
      readonly ip: string;
      /** The quoted probe's destination port (the backend's UDP port). */
      readonly port: number;
      /** The quoted probe's source port. */
      readonly srcPort: number;
    };

/**
 * Reads a handle_svc_check packet-in. Anything but TCP or an ICMP port unreachable quoting a
 * whole UDP probe is an error, as ovn-controller drops it.
 */
export function parseSvcReply(pin: PacketIn2): SvcReply | PacketError {
  const md = pin.metadata ?? new Map();
  const dpKey = readDatapathKey(md);
  const portKey = readReg(md, 14);
  const f = parseFrame(pin.packet);
  if (isPacketError(f)) return f;
  if (f.l4 === undefined || (f.ipv4 === undefined && f.ipv6 === undefined)) return packetError('unsupported', 'not an IP packet with a transport header');
  const v6 = f.ipv6 !== undefined;
  const ip = f.ipv4 !== undefined ? formatIpv4(f.ipv4.src) : formatIpv6((f.ipv6 as { src: Ipv6 }).src);
  const protocol = f.ipv4?.protocol ?? f.ipv6?.nextHeader;
  if (protocol === IP_PROTO.TCP) {
    const tcp = parseTcp(f.l4);
    if (isPacketError(tcp)) return tcp;
    return { kind: 'tcp', dpKey, portKey, ip, port: tcp.srcPort, dstPort: tcp.dstPort, seq: tcp.seq, ack: tcp.ack, flags: tcp.flags };
  }
  if (protocol !== (v6 ? IP_PROTO.ICMPV6 : IP_PROTO.ICMP)) return packetError('unsupported', `IP protocol ${protocol ?? '?'} is not TCP or ICMP`);
  if (f.l4.length < ICMP_HEADER_BYTES) return packetError('truncated', 'an ICMP header is cut short');
  const [type, code] = [f.l4[0] as number, f.l4[1] as number];
  const unreach = v6 ? type === ICMP6_TYPE.DST_UNREACH && code === ICMP6_PORT_UNREACH : type === ICMP4_TYPE.DST_UNREACH && code === ICMP4_PORT_UNREACH;
  if (!unreach) return packetError('unsupported', `ICMP type ${type} code ${code} is not port unreachable`);
  const orig = f.l4.subarray(ICMP_HEADER_BYTES);
  let udpAt: number;
  if (v6) {
    // ovn-controller only warns when the quoted payload length is not a probe's 16 bytes.
    udpAt = IPV6_HEADER_BYTES;
  } else {
    if (orig.length < IPV4_HEADER_BYTES || (orig[0] as number) >> 4 !== 4) return packetError('malformed', 'no IPv4 header quoted in the ICMP error');
    const totalLength = orig.readUInt16BE(2);
    if (totalLength !== IPV4_HEADER_BYTES + UDP_HEADER_BYTES + UDP_PROBE_PAYLOAD_BYTES) {
      return packetError('malformed', `the quoted datagram is ${totalLength} bytes, not a probe's ${IPV4_HEADER_BYTES + UDP_HEADER_BYTES + UDP_PROBE_PAYLOAD_BYTES}`);
    }
    udpAt = ((orig[0] as number) & 0xf) * 4;
  }
  if (orig.length < udpAt + 4) return packetError('truncated', 'the quoted datagram has no UDP ports');
  return { kind: 'port_unreachable', dpKey, portKey, ip, port: orig.readUInt16BE(udpAt + 2), srcPort: orig.readUInt16BE(udpAt) };
}
