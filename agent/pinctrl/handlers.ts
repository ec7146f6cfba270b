// What to do with one packet-in from a controller() action the flow compiler installed: the
// decision half of the agent's pinctrl, pure (no I/O, no clock). The userdata starts with OVN's
// 8-byte action header (opcode, 4 zero bytes), as agent/actions/compile.ts encodes it, then:
//
//   arp, icmp4, icmp4_error, icmp6, icmp6_error, nd_na, nd_na_router: OpenFlow 1.5 actions to
//     run on the packet ovn-controller builds. The answer is a packet-out of that packet whose
//     actions reload the packet-in's registers and metadata, then run the nested actions.
//   put_arp, put_nd: nothing; the binding (reg14's port in metadata's datapath, IP from reg0 or
//     xxreg0, MAC from the packet's eth.src, where the action moved its arguments) is learned.
//   put_dhcp_opts (paused): result field, bit offset, offer IP, DHCP option TLVs. The answer is a
//     resume of the continuation with the reply in place of the request and the result bit set
//     (or clear, with the request unchanged, when there is no reply).
//   put_dhcpv6_opts (paused): result field, bit offset, DHCPv6 option TLVs. Answered like
//     put_dhcp_opts, with the DHCPv6 reply (dhcp6-reply.ts).
//   dns_lookup (paused): result field, bit offset. The query is answered from the records of the
//     DNS rows of the packet's datapath (the context's dnsRecords); a resume with the response and
//     the bit set, or with the query unchanged and the bit clear, so that it goes on to its
//     destination.
//   put_nd_ra_opts (paused): result field, bit offset, the whole Router Advertisement. Answered
//     like put_dhcp_opts, the advertisement in place of the Router Solicitation (nd-ra-reply.ts).
//   bind_vport: the virtual port's tunnel key (32 bits, big-endian); the parent is reg14, the
//     datapath metadata. Nothing goes back to the switch: the claim (this chassis, the parent as
//     virtual_parent) is written to the SB by the vport writer.
//   igmp: no arguments. The IGMP or MLD message (igmp-packet.ts) goes to the snooping, with the
//     datapath (metadata) and the logical input port (reg14) it came from; a bad checksum or a
//     message cut short is a bad packet.
//   handle_svc_check: nothing to send; the reply of a load balancer backend to a health check
//     (svc-probe.ts reads it) goes to the health-check monitors.
//   handle_bfd_msg: no arguments; a BFD control packet from a router port's next hop
//     (bfd-packet.ts reads and checks it) goes to the BFD sessions.
//   trigger_event: the event type (32 bits, big-endian), then its options (controller-event.ts):
//     an empty_lb_backends event, which the Controller_Event writer records. Nothing goes back to
//     the switch; the packet is dropped, as northd's flow drops it.
//   activation_strategy_rarp: no arguments, not paused. A migrating port's RARP on its
//     destination chassis (reg14 in metadata's datapath): the port is activated there.
//
// Anything else, or anything malformed, is ignored with a reason (ovn-controller logs and drops).

import { ACTION_OPCODE } from '../compile/tables.js';
import { formatIpv6 } from '../expr/to-matches.js';
import { OFPP, decodeActions, encodeActions } from '../openflow/actions.js';
import { OfEncodeError } from '../openflow/fields.js';
import type { OfMessage, PacketIn2 } from '../openflow/messages.js';
import type { OfAction } from '../openflow/types.js';
import { tryDecode } from '../openflow/wire.js';
import { composeArpRequest, composeIcmpError, composeNdNa, composeNdNs, setIcmpFragMtu } from './compose.js';
import { composeDhcpReply } from './dhcp-reply.js';
import { composeDhcpv6Reply } from './dhcp6-reply.js';
import { composeDnsReply, type DnsRecordSets } from './dns-reply.js';
import { composeNdRaReply } from './nd-ra-reply.js';
import type { LearnedBinding } from './mac-binding-writer.js';
import type { VportBinding } from './vport-binding-writer.js';
import { parseResultBit, readDatapathKey, readReg, readXxreg, reloadActions, writeResultBit } from './metadata.js';
import { formatIpv4, isMulticastMac, isPacketError, parseEthernet, parseFrame, type Frame, type PacketError } from './packet.js';
import { parseSvcReply, type SvcReply } from './svc-probe.js';
import { parseBfdMessage, type BfdMessage } from './bfd-packet.js';
import { parseMcastMessage, type McastMessage } from './igmp-packet.js';
import { readControllerEvent, type EmptyLbBackendsEvent } from './controller-event.js';

/** OFPR_ACTION: the only packet-in reason OVN's actions produce. */
const OFPR_ACTION = 1;
/** The 32-bit opcode and 4 zero bytes before an action's arguments. */
export const ACTION_HEADER_BYTES = 8;
const OFP_NO_BUFFER = 0xffffffff;

export const ignoreReasons = ['not_action', 'no_header', 'unknown_opcode', 'unsupported_opcode', 'unknown_event', 'bad_packet', 'bad_userdata', 'no_continuation'] as const;
export type IgnoreReason = (typeof ignoreReasons)[number];

/** The answer to one packet-in. */
export type PacketInDecision =
  | { readonly kind: 'packet_out'; readonly opcode: number; readonly message: Extract<OfMessage, { kind: 'packet_out' }> }
  | {
      readonly kind: 'resume'; readonly opcode: number; readonly message: Extract<OfMessage, { kind: 'resume' }>;
      /** The value written into the action's result bit (an action without one: whether its answer was made). */
      readonly result: boolean;
      /** Why the result is false. */
      readonly detail?: string;
    }
  | { readonly kind: 'learn'; readonly opcode: number; readonly binding: LearnedBinding }
  | { readonly kind: 'bind_vport'; readonly opcode: number; readonly binding: VportBinding }
  | { readonly kind: 'svc_check'; readonly opcode: number; readonly reply: SvcReply }
  | { readonly kind: 'bfd'; readonly opcode: number; readonly message: BfdMessage }
  | { readonly kind: 'activate'; readonly opcode: number; readonly dpKey: number; readonly portKey: number }
  | { readonly kind: 'controller_event'; readonly opcode: number; readonly event: EmptyLbBackendsEvent }
  | {
      readonly kind: 'igmp'; readonly opcode: number; readonly dpKey: number; readonly inportKey: number;
      readonly message: McastMessage; readonly packet: Uint8Array;
    }
  | { readonly kind: 'ignored'; readonly opcode?: number; readonly reason: IgnoreReason; readonly message: string };

const ignored = (reason: IgnoreReason, message: string, opcode?: number): PacketInDecision =>
  ({ kind: 'ignored', reason, message, ...(opcode === undefined ? {} : { opcode }) });

const opcodeNames: ReadonlyMap<number, string> = new Map(Object.entries(ACTION_OPCODE).map(([k, v]) => [v, k.toLowerCase()]));

/** OVN's name for an opcode ("arp", "put_dhcp_opts", …), or "opcode N". */
export function opcodeName(opcode: number): string {
  return opcodeNames.get(opcode) ?? `opcode ${opcode}`;
}

/** What the decisions read of the agent's SB view, by tunnel keys (all a packet-in carries). */
export interface PacketInContext {
  /** The records of the DNS rows listing the datapath with this tunnel key, in a fixed order. */
  dnsRecords(dpKey: number): DnsRecordSets;
}

/** No SB view: no DNS records anywhere. */
export const emptyPacketInContext: PacketInContext = { dnsRecords: () => [] };

export function decidePacketIn(pin: PacketIn2, ctx: PacketInContext = emptyPacketInContext): PacketInDecision {
  if (pin.reason !== undefined && pin.reason !== OFPR_ACTION) return ignored('not_action', `packet-in reason ${pin.reason}`);
  const ud = pin.userdata;
  if (ud === undefined || ud.length < ACTION_HEADER_BYTES) return ignored('no_header', 'packet-in userdata lacks the action header');
  const opcode = ud.readUInt32BE(0);
  const args = ud.subarray(ACTION_HEADER_BYTES);
  switch (opcode) {
    case ACTION_OPCODE.ARP:
    case ACTION_OPCODE.ICMP:
    case ACTION_OPCODE.ICMP4_ERROR:
    case ACTION_OPCODE.ICMP6_ERROR:
    case ACTION_OPCODE.ND_NA:
    case ACTION_OPCODE.ND_NA_ROUTER:
    case ACTION_OPCODE.ND_NS:
      return nestedPacketOut(pin, opcode, args);
    case ACTION_OPCODE.PUT_ARP:
    case ACTION_OPCODE.PUT_ND:
      return learnBinding(pin, opcode);
    case ACTION_OPCODE.HANDLE_SVC_CHECK: {
      const reply = parseSvcReply(pin);
      return isPacketError(reply) ? ignored('bad_packet', `handle_svc_check: ${reply.message}`, opcode) : { kind: 'svc_check', opcode, reply };
    }
    case ACTION_OPCODE.BFD_MSG: {
      const message = parseBfdMessage(pin.packet);
      return message.kind === 'reject' ? ignored('bad_packet', `bfd_msg: ${message.reason}: ${message.message}`, opcode) : { kind: 'bfd', opcode, message };
    }
    case ACTION_OPCODE.PUT_DHCP_OPTS:
      return putDhcpOpts(pin, args);
    case ACTION_OPCODE.ACTIVATION_STRATEGY_RARP: {
      const md = pin.metadata ?? new Map();
      return { kind: 'activate', opcode, dpKey: readDatapathKey(md), portKey: readReg(md, 14) };
    }
    case ACTION_OPCODE.IGMP: {
      const message = parseMcastMessage(pin.packet);
      if (isPacketError(message)) return ignored('bad_packet', `igmp: ${message.message}`, opcode);
      const md = pin.metadata ?? new Map();
      return { kind: 'igmp', opcode, dpKey: readDatapathKey(md), inportKey: readReg(md, 14), message, packet: pin.packet };
    }
    case ACTION_OPCODE.EVENT: {
      const r = readControllerEvent(args);
      if (r.kind === 'malformed') return ignored('bad_userdata', `trigger_event: ${r.message}`, opcode);
      if (r.kind === 'unknown_event') return ignored('unknown_event', `trigger_event: event type ${r.eventType} is not handled`, opcode);
      return { kind: 'controller_event', opcode, event: r.event };
    }
    case ACTION_OPCODE.BIND_VPORT: {
      if (args.length < 4) return ignored('bad_userdata', 'bind_vport: the userdata lacks the virtual port\'s key', ACTION_OPCODE.BIND_VPORT);
      const md = pin.metadata ?? new Map();
      return { kind: 'bind_vport', opcode, binding: { dpKey: readDatapathKey(md), vportKey: args.readUInt32BE(0), parentKey: readReg(md, 14) } };
    }
    case ACTION_OPCODE.PUT_ICMP4_FRAG_MTU:
    case ACTION_OPCODE.PUT_ICMP6_FRAG_MTU:
      return putIcmpFragMtu(pin, opcode, args);
    case ACTION_OPCODE.PUT_DHCPV6_OPTS:
      return pausedAnswer(pin, opcode, args, (f, rest) => {
        const r = composeDhcpv6Reply(f, pin.packet, rest);
        return r.kind === 'reply' ? r.packet : r.reason;
      });
    case ACTION_OPCODE.PUT_ND_RA_OPTS:
      return pausedAnswer(pin, opcode, args, (f, rest) => composeNdRaReply(f, pin.packet, rest));
    case ACTION_OPCODE.DNS_LOOKUP:
      return pausedAnswer(pin, opcode, args, (f) => {
        const r = composeDnsReply(f, pin.packet, ctx.dnsRecords(readDatapathKey(pin.metadata ?? new Map())));
        return r.kind === 'reply' ? r.packet : r.reason;
      });
    default:
      if (opcodeNames.has(opcode)) return ignored('unsupported_opcode', `${opcodeName(opcode)} is not handled by this agent`, opcode);
      return ignored('unknown_opcode', `unrecognized packet-in opcode ${opcode}`, opcode);
  }
}

function composeFor(opcode: number, pin: PacketIn2): Buffer | PacketError {
  const f = parseFrame(pin.packet);
  if (isPacketError(f)) return f;
  switch (opcode) {
    case ACTION_OPCODE.ARP: return composeArpRequest(f);
    case ACTION_OPCODE.ICMP: return composeIcmpError(f, pin.packet, { portUnreachForUdp: true });
    case ACTION_OPCODE.ND_NA: return composeNdNa(f, false);
    case ACTION_OPCODE.ND_NA_ROUTER: return composeNdNa(f, true);
    case ACTION_OPCODE.ND_NS: return composeNdNs(f);
    default: return composeIcmpError(f, pin.packet, { portUnreachForUdp: false });
  }
}

function nestedPacketOut(pin: PacketIn2, opcode: number, args: Buffer): PacketInDecision {
  const nested = tryDecode(() => decodeActions(args));
  if (!nested.ok) return ignored('bad_userdata', `${opcodeName(opcode)}: nested actions do not decode: ${nested.error.message}`, opcode);
  const packet = composeFor(opcode, pin);
  if (isPacketError(packet)) return ignored('bad_packet', `${opcodeName(opcode)}: ${packet.message}`, opcode);
  const actions: OfAction[] = [...reloadActions(pin.metadata ?? new Map()), ...nested.value];
  // What decodes need not encode (a field the codec reads but does not write): refuse it here,
  // where it is bad input, rather than when the channel sends it.
  try {
    encodeActions(actions);
  } catch (err) {
    if (!(err instanceof OfEncodeError)) throw err;
    return ignored('bad_userdata', `${opcodeName(opcode)}: nested actions cannot be sent back: ${err.message}`, opcode);
  }
  return {
    kind: 'packet_out', opcode,
    message: { kind: 'packet_out', bufferId: OFP_NO_BUFFER, inPort: OFPP.CONTROLLER, actions, data: packet },
  };
}

function learnBinding(pin: PacketIn2, opcode: number): PacketInDecision {
  const md = pin.metadata ?? new Map();
  const eth = parseEthernet(pin.packet);
  if (isPacketError(eth)) return ignored('bad_packet', `${opcodeName(opcode)}: ${eth.message}`, opcode);
  const ip = opcode === ACTION_OPCODE.PUT_ARP ? formatIpv4(readReg(md, 0)) : formatMappedIpv6(readXxreg(md, 0));
  return {
    kind: 'learn', opcode,
    binding: { dpKey: readDatapathKey(md), portKey: readReg(md, 14), ip, mac: eth.src, unicast: !isMulticastMac(eth.dst) },
  };
}

/** An IPv6 address as MAC_Binding.ip holds it: an IPv4-mapped one as the IPv4 address (ipv6_format_mapped). */
function formatMappedIpv6(v: bigint): string {
  return v >> 32n === 0xffffn ? formatIpv4(Number(v & 0xffffffffn)) : formatIpv6(v);
}

function resumeMessage(pin: PacketIn2, packet: Buffer, metadata: ReadonlyMap<string, { value: bigint; mask: bigint }>): Extract<OfMessage, { kind: 'resume' }> {
  return { kind: 'resume', packet, metadata, continuation: pin.continuation as Buffer };
}

function putDhcpOpts(pin: PacketIn2, args: Buffer): PacketInDecision {
  const opcode = ACTION_OPCODE.PUT_DHCP_OPTS;
  if (pin.continuation === undefined) return ignored('no_continuation', 'put_dhcp_opts packet-in without a continuation', opcode);
  const md = pin.metadata ?? new Map();
  const parsed = parseResultBit(args);
  // Without a usable result field ovn-controller still resumes, leaving the metadata as it was.
  if ('error' in parsed) {
    return { kind: 'resume', opcode, message: resumeMessage(pin, pin.packet, md), result: false, detail: `bad result field: ${parsed.error}` };
  }
  const fail = (detail: string): PacketInDecision =>
    ({ kind: 'resume', opcode, message: resumeMessage(pin, pin.packet, writeResultBit(md, parsed.bit, false)), result: false, detail });
  if (parsed.rest.length < 4) return fail('offer IP not present in the userdata');
  const offerIp = parsed.rest.readUInt32BE(0);
  const f = parseFrame(pin.packet);
  if (isPacketError(f)) return fail(`invalid DHCP packet: ${f.message}`);
  const reply = composeDhcpReply(f, pin.packet, offerIp, parsed.rest.subarray(4));
  if (reply.kind === 'no_reply') return fail(reply.reason);
  return { kind: 'resume', opcode, message: resumeMessage(pin, reply.packet, writeResultBit(md, parsed.bit, true)), result: true };
}

/**
 * icmp4.frag_mtu / icmp6.frag_mtu (a paused action with no result bit): resumed with the MTU
 * written into the ICMP error, or as it came when that cannot be done (the packet is not ICMP of
 * that version, the userdata is short), as ovn-controller resumes it either way.
 */
function putIcmpFragMtu(pin: PacketIn2, opcode: number, args: Buffer): PacketInDecision {
  if (pin.continuation === undefined) return ignored('no_continuation', `${opcodeName(opcode)} packet-in without a continuation`, opcode);
  const md = pin.metadata ?? new Map();
  const f = parseFrame(pin.packet);
  const packet = isPacketError(f) ? f : setIcmpFragMtu(f, pin.packet, args, opcode === ACTION_OPCODE.PUT_ICMP6_FRAG_MTU);
  if (isPacketError(packet)) return { kind: 'resume', opcode, message: resumeMessage(pin, pin.packet, md), result: false, detail: packet.message };
  return { kind: 'resume', opcode, message: resumeMessage(pin, packet, md), result: true };
}

/**
 * A paused action whose arguments are a result bit and then `rest`: `answer` makes the packet to
 * resume with (result 1), or says why there is none (result 0, the packet unchanged). Without a
 * usable result field ovn-controller still resumes, leaving the metadata as it was.
 */
function pausedAnswer(pin: PacketIn2, opcode: number, args: Buffer, answer: (f: Frame, rest: Buffer) => Buffer | string): PacketInDecision {
  const name = opcodeName(opcode);
  if (pin.continuation === undefined) return ignored('no_continuation', `${name} packet-in without a continuation`, opcode);
  const md = pin.metadata ?? new Map();
  const parsed = parseResultBit(args);
  if ('error' in parsed) {
    return { kind: 'resume', opcode, message: resumeMessage(pin, pin.packet, md), result: false, detail: `bad result field: ${parsed.error}` };
  }
  const f = parseFrame(pin.packet);
  const packet = isPacketError(f) ? `invalid packet: ${f.message}` : answer(f, parsed.rest);
  if (typeof packet === 'string') {
    return { kind: 'resume', opcode, message: resumeMessage(pin, pin.packet, writeResultBit(md, parsed.bit, false)), result: false, detail: packet };
  }
  return { kind: 'resume', opcode, message: resumeMessage(pin, packet, writeResultBit(md, parsed.bit, true)), result: true };
}

