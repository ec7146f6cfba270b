// put_dhcp_opts: the DHCPv4 reply ovn-controller 23.03 makes from a client's request and the
// options a logical flow put in the controller() userdata (pinctrl_handle_put_dhcp_opts).
//
// DISCOVER gets an OFFER and REQUEST an ACK of the offered address (a NAK, without options, when
// the client asks for another); INFORM gets an ACK without the lease options (netmask, lease
// time, T1, T2) and without an address; DECLINE and RELEASE get nothing. The reply keeps the
// request's Ethernet and IP headers (the logical flows that follow rewrite the addresses and
// ports): IP destination the offered address, or broadcast when the client set the broadcast
// flag; UDP checksum 0. bootfile_name_alt stands in for bootfile_name unless the client is
// iPXE (option 175), and next_server fills siaddr. Pure.

import {
  BOOTP_OP, DHCP_FLAG_BROADCAST, DHCP_HEADER_BYTES, DHCP_MAGIC_COOKIE, DHCP_MSG, DHCP_OPT, UDP_HEADER_BYTES, isPacketError,
  parseDhcp, parseDhcpOptions, refreshIpv4Checksum, type DhcpOptionTlv, type Frame, type Ipv4,
} from './packet.js';

export type DhcpReply =
  | { readonly kind: 'reply'; readonly packet: Buffer; readonly msgType: number }
  | { readonly kind: 'no_reply'; readonly reason: string };

const noReply = (reason: string): DhcpReply => ({ kind: 'no_reply', reason });

/** Options a reply to DHCPINFORM leaves out (RFC 2131 §3.4: no lease, no address). */
const informOmits: ReadonlySet<number> = new Set([DHCP_OPT.NETMASK, DHCP_OPT.LEASE_TIME, DHCP_OPT.T1, DHCP_OPT.T2]);

/** OVN's bootfile rule over the userdata's options, in their order (the compiler puts 67, 254, 253 first). */
function chooseBootfile(opts: DhcpOptionTlv[], ipxe: boolean): DhcpOptionTlv[] {
  const out = [...opts];
  let bootfileSeen = false;
  for (let i = 0; i < out.length; i++) {
    const o = out[i] as DhcpOptionTlv;
    if (o.code === DHCP_OPT.BOOTFILE) {
      const next = out[i + 1];
      if (next !== undefined && next.code === DHCP_OPT.BOOTFILE_ALT) {
        if (ipxe) out.splice(i + 1, 1);
        else out.splice(i, 2, { code: DHCP_OPT.BOOTFILE, data: next.data });
      }
      bootfileSeen = true;
    } else if (o.code === DHCP_OPT.BOOTFILE_ALT && !bootfileSeen) {
      out[i] = { code: DHCP_OPT.BOOTFILE, data: o.data };
    }
  }
  return out;
}

/**
 * The reply to the DHCP request in 'raw' (parsed as 'f'), offering 'offerIp' with 'userOptions'
 * (the TLVs after the offer address in the userdata).
 */
export function composeDhcpReply(f: Frame, raw: Uint8Array, offerIp: Ipv4, userOptions: Uint8Array): DhcpReply {
  if (userOptions.length === 0) return noReply('DHCP options not present in the userdata');
  if (f.ipv4 === undefined || f.udp === undefined || f.l4Offset === undefined || f.l4 === undefined) {
    return noReply('not a UDP/IPv4 packet');
  }
  const request = parseDhcp(f.l4.subarray(UDP_HEADER_BYTES));
  if (isPacketError(request)) return noReply(`invalid DHCP request: ${request.message}`);
  if (request.op !== BOOTP_OP.REQUEST) return noReply(`BOOTP op ${request.op} is not a request`);
  let msgTypeIn: number | undefined;
  let requestedIp = request.ciaddr;
  let ipxe = false;
  for (const o of request.options) {
    if (o.code === DHCP_OPT.MSG_TYPE && o.data.length === 1) msgTypeIn = o.data[0] as number;
    if (o.code === DHCP_OPT.REQUESTED_IP && o.data.length === 4) requestedIp = o.data.readUInt32BE(0);
    if (o.code === DHCP_OPT.ETHERBOOT) ipxe = true;
  }
  if (msgTypeIn === undefined) return noReply('missing DHCP message type');
  const parsedOpts = parseDhcpOptions(userOptions);
  if (parsedOpts.cut) return noReply('the userdata DHCP options run past their end');
  let opts = parsedOpts.options;
  let msgType: number;
  switch (msgTypeIn) {
    case DHCP_MSG.DISCOVER: msgType = DHCP_MSG.OFFER; break;
    case DHCP_MSG.REQUEST: msgType = requestedIp === offerIp ? DHCP_MSG.ACK : DHCP_MSG.NAK; break;
    case DHCP_MSG.INFORM:
      msgType = DHCP_MSG.ACK;
      opts = opts.filter((o) => !informOmits.has(o.code));
      break;
    case DHCP_MSG.RELEASE: return noReply('DHCPRELEASE');
    case DHCP_MSG.DECLINE: return noReply('DHCPDECLINE');
    default: return noReply(`invalid DHCP message type ${msgTypeIn}`);
  }
  const nak = msgType === DHCP_MSG.NAK;
  opts = chooseBootfile(opts, ipxe);
  let nextServer = request.siaddr;
  for (const o of opts) if (o.code === DHCP_OPT.NEXT_SERVER && o.data.length === 4) nextServer = o.data.readUInt32BE(0);
  const optionBytes = nak ? Buffer.alloc(0) : Buffer.concat(opts.map((o) => Buffer.concat([Buffer.from([o.code, o.data.length]), o.data])));

  const src = Buffer.from(raw.buffer, raw.byteOffset, raw.length);
  const l3Offset = f.eth.l3Offset;
  const l4Offset = f.l4Offset;
  // UDP header, BOOTP header, cookie, then: type (3), options, 4 zero bytes, END, 4 zero bytes.
  const l4Bytes = UDP_HEADER_BYTES + DHCP_HEADER_BYTES + 16 + optionBytes.length;
  const out = Buffer.alloc(l4Offset + l4Bytes);
  src.copy(out, 0, 0, l4Offset);
  src.copy(out, l4Offset, l4Offset, l4Offset + UDP_HEADER_BYTES + DHCP_HEADER_BYTES);
  const dhcpAt = l4Offset + UDP_HEADER_BYTES;
  out[dhcpAt] = BOOTP_OP.REPLY;
  if (msgTypeIn !== DHCP_MSG.INFORM) {
    out.writeUInt32BE(nak ? 0 : offerIp >>> 0, dhcpAt + 16);
    out.writeUInt32BE(nak ? 0 : nextServer >>> 0, dhcpAt + 20);
  } else {
    out.writeUInt32BE(0, dhcpAt + 16);
  }
  let at = dhcpAt + DHCP_HEADER_BYTES;
  out.writeUInt32BE(DHCP_MAGIC_COOKIE, at);
  at += 4;
  out[at++] = DHCP_OPT.MSG_TYPE;
  out[at++] = 1;
  out[at++] = msgType;
  optionBytes.copy(out, at);
  at += optionBytes.length + 4;
  out[at] = DHCP_OPT.END;

  out.writeUInt16BE(l4Bytes, l4Offset + 4);
  out.writeUInt16BE(0, l4Offset + 6);
  const broadcast = (request.flags & DHCP_FLAG_BROADCAST) !== 0;
  out.writeUInt32BE(broadcast ? 0xffffffff : offerIp >>> 0, l3Offset + 16);
  out.writeUInt16BE(l4Offset - l3Offset + l4Bytes, l3Offset + 2);
  refreshIpv4Checksum(out.subarray(l3Offset, l4Offset));
  return { kind: 'reply', packet: out, msgType };
}
