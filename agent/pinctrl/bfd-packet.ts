// The packets of the BFD sessions a chassis runs for its router ports (SB BFD rows), pure: the
// control packets the agent sends and the peer's packets the handle_bfd_msg() action hands back.
//
// A BFD control packet (RFC 5880 §4.1, single-hop over UDP per RFC 5881), 24 bytes, no
// authentication section:
//   byte 0  version (3 bits, always 1) | diagnostic (5 bits; ours is always 0)
//   byte 1  state (2 bits: 0 admin_down, 1 down, 2 init, 3 up) | P F C A D M flags
//   byte 2  detect multiplier;  byte 3  length
//   4..7 my discriminator;  8..11 your discriminator
//   12..15 desired min TX interval, 16..19 required min RX interval, 20..23 required min echo RX
//   interval, all three in microseconds.
// It is sent as ovn-controller 23.03 composes it: Ethernet from the router port's MAC to
// broadcast; IPv4 (TOS 0 — pinctrl_compose_ipv4 writes CS6 and then packet_set_ipv4 writes the
// TOS it is given, 0 — ID 0, DF, TTL 255) or IPv6 (traffic class and flow label 0, hop limit
// 255) from the port's address to the next hop; UDP from the row's src_port to 3784, with no
// checksum over IPv4 and a computed one over IPv6. The packet-out enters it into the router's
// ingress pipeline as if it came in on the port (metadata = the router's tunnel key, reg14 =
// the port's), so the router routes it out of that port like any packet to the next hop.
//
// A received packet is kept only when pinctrl_check_bfd_msg would keep it; every other one is a
// rejection with a reason from a closed set, never an exception.

import assert from 'node:assert/strict';
import { LOG_REG, OFTABLE } from '../compile/tables.js';
import { formatIpv6 } from '../expr/to-matches.js';
import { OFPP } from '../openflow/actions.js';
import { OFP_NO_BUFFER, type OfMessage } from '../openflow/messages.js';
import {
  ETH_TYPE, IPV4_FLAG_DF, IP_PROTO, MAC_BROADCAST, UDP_HEADER_BYTES, buildEthernet, buildIpv4, buildIpv6, buildUdp, fillUdp6Checksum,
  formatIpv4, isPacketError, parseFrame, type Mac,
} from './packet.js';
import { ipText, type IpAddr } from './svc-probe.js';

/** RFC 5881 §4: the UDP port single-hop BFD control packets go to. */
export const BFD_DEST_PORT = 3784;
export const BFD_VERSION = 1;
/** A control packet without an authentication section. */
export const BFD_PACKET_BYTES = 24;
/** The hop limit of every packet sent (RFC 5881 §5's GTSM value). */
export const BFD_TTL = 255;

/** Session states as the wire (and ovn-controller's enum) number them. */
export const BFD_STATE = { ADMIN_DOWN: 0, DOWN: 1, INIT: 2, UP: 3 } as const;
export type BfdState = (typeof BFD_STATE)[keyof typeof BFD_STATE];

/** The low six bits of byte 1. */
export const BFD_FLAG = { MULTIPOINT: 0x01, DEMAND: 0x02, AUTH: 0x04, CTL: 0x08, FINAL: 0x10, POLL: 0x20 } as const;
const FLAGS_MASK = 0x3f;

/** BFD.status as the SB spells each state. */
export const bfdStatusNames = ['admin_down', 'down', 'init', 'up'] as const;
export type BfdStatus = (typeof bfdStatusNames)[number];

export function bfdStatusOf(state: BfdState): BfdStatus {
  return bfdStatusNames[state];
}

const OFPP10_CONTROLLER = 0xfffd;
const MS_TO_US = 1000;
const TWO_32 = 0x1_0000_0000;

/** A C uint32_t conversion (what htonl of an int64 column keeps). */
export const u32 = (v: number): number => ((v % TWO_32) + TWO_32) % TWO_32;

/** One control packet's fields (the authentication section never present). */
export interface BfdControl {
  readonly version: number;
  readonly diag: number;
  readonly state: BfdState;
  /** P F C A D M, the low six bits of byte 1. */
  readonly flags: number;
  readonly mult: number;
  readonly length: number;
  readonly myDisc: number;
  readonly yourDisc: number;
  readonly minTxUs: number;
  readonly minRxUs: number;
  readonly minEchoRxUs: number;
}

/** What a session says in a packet it sends; intervals in milliseconds, as the SB row has them. */
export interface BfdTx {
  readonly state: BfdState;
  /** Answering a poll (P) from the peer. */
  readonly final: boolean;
  readonly mult: number;
  readonly myDisc: number;
  readonly yourDisc: number;
  readonly minTxMs: number;
  readonly minRxMs: number;
}

/** The control packet a session sends (bfd_monitor_put_bfd_msg): version 1, diagnostic 0, no echo. */
export function encodeBfdControl(tx: BfdTx): Buffer {
  const b = Buffer.alloc(BFD_PACKET_BYTES);
  b[0] = BFD_VERSION << 5;
  b[1] = (tx.state << 6) | (tx.final ? BFD_FLAG.FINAL : 0);
  b[2] = tx.mult & 0xff;
  b[3] = BFD_PACKET_BYTES;
  b.writeUInt32BE(u32(tx.myDisc), 4);
  b.writeUInt32BE(u32(tx.yourDisc), 8);
  // RFC 5880 §4.1: the intervals are in microseconds; ovn-controller multiplies in 32 bits.
  b.writeUInt32BE(u32(u32(tx.minTxMs) * MS_TO_US), 12);
  b.writeUInt32BE(u32(u32(tx.minRxMs) * MS_TO_US), 16);
  b.writeUInt32BE(0, 20);
  return b;
}

/** Reads the 24 bytes of a control packet as they are, checking nothing. */
export function decodeBfdControl(b: Uint8Array): BfdControl {
  const v = Buffer.from(b.buffer, b.byteOffset, b.length);
  const b1 = v[1] as number;
  return {
    version: (v[0] as number) >> 5, diag: (v[0] as number) & 0x1f, state: (b1 >> 6) as BfdState, flags: b1 & FLAGS_MASK,
    mult: v[2] as number, length: v[3] as number, myDisc: v.readUInt32BE(4), yourDisc: v.readUInt32BE(8),
    minTxUs: v.readUInt32BE(12), minRxUs: v.readUInt32BE(16), minEchoRxUs: v.readUInt32BE(20),
  };
}

/** The addresses of a session's packets. */
export interface BfdEndpoints {
  /** The router port's MAC. */
  readonly srcMac: Mac;
  /** The router port's address, of dst's family. */
  readonly src: IpAddr;
  /** The next hop (BFD.dst_ip). */
  readonly dst: IpAddr;
  /** BFD.src_port: the same for every packet of the session (RFC 5881 §4). */
  readonly srcPort: number;
}

/** A control packet in its UDP datagram, IP packet and Ethernet frame. */
export function composeBfdPacket(e: BfdEndpoints, control: Buffer): Buffer {
  const ports = { srcPort: e.srcPort, dstPort: BFD_DEST_PORT };
  if (e.src.kind === 'ipv4' && e.dst.kind === 'ipv4') {
    const ip = buildIpv4({ tos: 0, id: 0, flagsFragment: IPV4_FLAG_DF, ttl: BFD_TTL, protocol: IP_PROTO.UDP, src: e.src.v, dst: e.dst.v }, buildUdp(ports, control));
    return buildEthernet({ dst: MAC_BROADCAST, src: e.srcMac, ethType: ETH_TYPE.IPV4 }, ip);
  }
  if (e.src.kind === 'ipv6' && e.dst.kind === 'ipv6') {
    const udp = buildUdp(ports, control);
    fillUdp6Checksum(udp, e.src.v, e.dst.v);
    const ip = buildIpv6({ trafficClass: 0, flowLabel: 0, nextHeader: IP_PROTO.UDP, hopLimit: BFD_TTL, src: e.src.v, dst: e.dst.v }, udp);
    return buildEthernet({ dst: MAC_BROADCAST, src: e.srcMac, ethType: ETH_TYPE.IPV6 }, ip);
  }
  assert.fail(`a BFD packet from ${ipText(e.src)} to ${ipText(e.dst)} mixes address families`);
}

/** The packet-out that enters a session's packet into its router as from its port (pinctrl_send_bfd_tx_msg). */
export function bfdPacketOut(keys: { readonly dpKey: number; readonly portKey: number }, packet: Buffer): Extract<OfMessage, { kind: 'packet_out' }> {
  return {
    kind: 'packet_out', bufferId: OFP_NO_BUFFER, inPort: OFPP.CONTROLLER, data: packet,
    actions: [
      { kind: 'set_field', field: 'metadata', value: BigInt(keys.dpKey) },
      { kind: 'set_field', field: LOG_REG.INPORT, value: BigInt(keys.portKey) },
      { kind: 'resubmit', table: OFTABLE.LOG_INGRESS_PIPELINE, inPort: OFPP10_CONTROLLER },
    ],
  };
}

/** Why a handle_bfd_msg packet is dropped, in the order pinctrl_check_bfd_msg checks. */
export const bfdRejectReasons = [
  'not_ip', 'not_udp', 'not_bfd_port', 'truncated', 'version', 'auth', 'length', 'mult', 'multipoint', 'my_disc', 'final_and_poll', 'your_disc',
] as const;
export type BfdRejectReason = (typeof bfdRejectReasons)[number];

export interface BfdReject {
  readonly kind: 'reject';
  readonly reason: BfdRejectReason;
  readonly message: string;
}

/** A control packet that passed the checks, with the address it came from. */
export interface BfdMessage {
  readonly kind: 'message';
  /** The packet's IP source as the sessions key their next hop (dotted IPv4, RFC 5952 IPv6). */
  readonly src: string;
  readonly control: BfdControl;
}

const reject = (reason: BfdRejectReason, message: string): BfdReject => ({ kind: 'reject', reason, message });

/** Reads a handle_bfd_msg packet-in's packet (pinctrl_check_bfd_msg's checks, in its order). */
export function parseBfdMessage(packet: Uint8Array): BfdMessage | BfdReject {
  const f = parseFrame(packet);
  if (isPacketError(f)) return reject('not_ip', `not a well-formed frame: ${f.message}`);
  if (f.ipv4 === undefined && f.ipv6 === undefined) return reject('not_ip', `EtherType 0x${f.eth.ethType.toString(16)} is not IPv4 or IPv6`);
  const src = f.ipv4 !== undefined ? formatIpv4(f.ipv4.src) : formatIpv6((f.ipv6 as { src: bigint }).src);
  if (f.udp === undefined || f.l4 === undefined) return reject('not_udp', 'not a UDP datagram (or a fragment of one)');
  if (f.udp.dstPort !== BFD_DEST_PORT) return reject('not_bfd_port', `UDP destination port ${f.udp.dstPort} is not ${BFD_DEST_PORT}`);
  const payload = f.l4.subarray(UDP_HEADER_BYTES, f.udp.length);
  // ovn-controller reads the 24 bytes wherever they are; a shorter datagram has none to read.
  if (payload.length < BFD_PACKET_BYTES) return reject('truncated', `${payload.length} bytes of UDP payload, a control packet has ${BFD_PACKET_BYTES}`);
  const c = decodeBfdControl(payload.subarray(0, BFD_PACKET_BYTES));
  if (c.version !== BFD_VERSION) return reject('version', `version ${c.version}`);
  if ((c.flags & BFD_FLAG.AUTH) !== 0) return reject('auth', 'authentication is not supported');
  if (c.length < BFD_PACKET_BYTES) return reject('length', `length ${c.length} below ${BFD_PACKET_BYTES}`);
  if (c.mult === 0) return reject('mult', 'detect multiplier 0');
  if ((c.flags & BFD_FLAG.MULTIPOINT) !== 0) return reject('multipoint', 'multipoint is not supported');
  if (c.myDisc === 0) return reject('my_disc', 'my discriminator 0');
  if ((c.flags & BFD_FLAG.FINAL) !== 0 && (c.flags & BFD_FLAG.POLL) !== 0) return reject('final_and_poll', 'both poll and final set');
  if (c.state >= BFD_STATE.INIT && c.yourDisc === 0) return reject('your_disc', `state ${bfdStatusOf(c.state)} with your discriminator 0`);
  return { kind: 'message', src, control: c };
}
