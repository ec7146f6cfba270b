// put_dhcpv6_opts: the DHCPv6 reply ovn-controller 23.03.1 makes from a client's message and the
// option TLVs a logical flow put in the controller() userdata (pinctrl_handle_put_dhcpv6_opts).
//
// SOLICIT gets an ADVERTISE (no rapid commit); REQUEST, CONFIRM, DECLINE and INFORMATION-REQUEST
// get a REPLY. Other messages (RENEW, REBIND, RELEASE, ...) get nothing in 23.03.1: the address is
// offered with infinite lifetimes, so a client has no reason to renew. The client must send a
// Client Identifier, and an IA_NA unless it only asks for information; as in OVN, an IAID of 0
// counts as no IA_NA. The reply is the message type, the client's transaction id, its Client
// Identifier copied, then the userdata options in their order:
//   server_id (MAC)      → Server Identifier, a DUID-LL (type 3, hardware type 1, the MAC);
//   ia_addr (IPv6)       → IA_NA with the client's IAID, T1 = T2 = infinity, holding an IA
//                          Address of that address with infinite lifetimes (left out of a reply
//                          to INFORMATION-REQUEST);
//   dns_server (IPv6s)   → DNS Recursive Name Server, as given;
//   domain_search (text) → Domain Search List holding the whole text as one label (OVN's
//                          encoding: its length byte, the text, a zero byte).
// Any other option code in the userdata makes it invalid. A client message whose options run past
// its end is not answered (OVN reads on regardless). The Ethernet and IPv6 headers and the
// UDP ports are the request's (the flows that follow rewrite them); the UDP checksum is computed.
// Pure.

import { UDP_HEADER_BYTES, fillUdp6Checksum, type Frame } from './packet.js';

export const DHCP6_MSG = {
  SOLICIT: 1, ADVERTISE: 2, REQUEST: 3, CONFIRM: 4, RENEW: 5, REBIND: 6, REPLY: 7, RELEASE: 8, DECLINE: 9, INFORMATION_REQUEST: 11,
} as const;
export const DHCP6_OPT = {
  CLIENT_ID: 1, SERVER_ID: 2, IA_NA: 3, IA_ADDR: 5, STATUS_CODE: 13, DNS_SERVERS: 23, DOMAIN_LIST: 24,
} as const;
export const DHCP6_CLIENT_PORT = 546;
export const DHCP6_SERVER_PORT = 547;
const DUID_LL = 3;
const HW_TYPE_ETHERNET = 1;
const LIFETIME_INFINITE = 0xffffffff;
/** Option header (code, length) before each option's data. */
const OPT_HEADER_BYTES = 4;
/** Message type and transaction id. */
const MSG_HEADER_BYTES = 4;
/** Options read from a client message before the rest are skipped. */
export const dhcp6OptionsMax = 256;

export type Dhcp6Reply =
  | { readonly kind: 'reply'; readonly packet: Buffer; readonly msgType: number }
  | { readonly kind: 'no_reply'; readonly reason: string };

const noReply = (reason: string): Dhcp6Reply => ({ kind: 'no_reply', reason });

export interface Dhcp6Option {
  readonly code: number;
  readonly data: Buffer;
}

/** Options (code, length, data) until the end of `b`; undefined when one runs past the end. */
export function parseDhcp6Options(b: Buffer, max = dhcp6OptionsMax): Dhcp6Option[] | undefined {
  const out: Dhcp6Option[] = [];
  let at = 0;
  while (at < b.length) {
    if (out.length >= max) return undefined;
    if (at + OPT_HEADER_BYTES > b.length) return undefined;
    const code = b.readUInt16BE(at);
    const len = b.readUInt16BE(at + 2);
    if (at + OPT_HEADER_BYTES + len > b.length) return undefined;
    out.push({ code, data: b.subarray(at + OPT_HEADER_BYTES, at + OPT_HEADER_BYTES + len) });
    at += OPT_HEADER_BYTES + len;
  }
  return out;
}

export function encodeDhcp6Option(code: number, data: Uint8Array): Buffer {
  const b = Buffer.alloc(OPT_HEADER_BYTES + data.length);
  b.writeUInt16BE(code, 0);
  b.writeUInt16BE(data.length, 2);
  Buffer.from(data.buffer, data.byteOffset, data.length).copy(b, OPT_HEADER_BYTES);
  return b;
}

/** The reply's options from the userdata's, or why the userdata is invalid. `iaid` 0: no IA_NA. */
function replyOptions(user: readonly Dhcp6Option[], iaid: number): Buffer[] | string {
  const out: Buffer[] = [];
  for (const o of user) {
    switch (o.code) {
      case DHCP6_OPT.SERVER_ID: {
        if (o.data.length !== 6) return `server_id of ${o.data.length} bytes, not a MAC`;
        const duid = Buffer.alloc(10);
        duid.writeUInt16BE(DUID_LL, 0);
        duid.writeUInt16BE(HW_TYPE_ETHERNET, 2);
        o.data.copy(duid, 4);
        out.push(encodeDhcp6Option(DHCP6_OPT.SERVER_ID, duid));
        break;
      }
      case DHCP6_OPT.IA_ADDR: {
        if (o.data.length !== 16) return `ia_addr of ${o.data.length} bytes, not an IPv6 address`;
        if (iaid === 0) break;
        const addr = Buffer.alloc(24);
        o.data.copy(addr, 0);
        addr.writeUInt32BE(LIFETIME_INFINITE, 16);
        addr.writeUInt32BE(LIFETIME_INFINITE, 20);
        const ia = Buffer.alloc(12);
        ia.writeUInt32BE(iaid >>> 0, 0);
        ia.writeUInt32BE(LIFETIME_INFINITE, 4);
        ia.writeUInt32BE(LIFETIME_INFINITE, 8);
        out.push(encodeDhcp6Option(DHCP6_OPT.IA_NA, Buffer.concat([ia, encodeDhcp6Option(DHCP6_OPT.IA_ADDR, addr)])));
        break;
      }
      case DHCP6_OPT.DNS_SERVERS:
        out.push(encodeDhcp6Option(DHCP6_OPT.DNS_SERVERS, o.data));
        break;
      case DHCP6_OPT.DOMAIN_LIST:
        // OVN's length byte is the text's length cut to 8 bits.
        out.push(encodeDhcp6Option(DHCP6_OPT.DOMAIN_LIST, Buffer.concat([Buffer.from([o.data.length & 0xff]), o.data, Buffer.alloc(1)])));
        break;
      default:
        return `DHCPv6 option ${o.code} is not one put_dhcpv6_opts carries`;
    }
  }
  return out;
}

/** The reply to the DHCPv6 message in `raw` (parsed as `f`), from the userdata's option TLVs. */
export function composeDhcpv6Reply(f: Frame, raw: Uint8Array, userOptions: Uint8Array): Dhcp6Reply {
  if (userOptions.length === 0) return noReply('DHCPv6 options not present in the userdata');
  if (f.ipv6 === undefined || f.udp === undefined || f.l4 === undefined || f.l4Offset === undefined) {
    return noReply('not a UDP/IPv6 packet');
  }
  const dgram = f.l4.subarray(0, f.udp.length);
  if (dgram.length < UDP_HEADER_BYTES + MSG_HEADER_BYTES) return noReply('truncated DHCPv6 packet');
  const msg = dgram.subarray(UDP_HEADER_BYTES);
  const msgTypeIn = msg[0] as number;
  let msgType: number;
  switch (msgTypeIn) {
    case DHCP6_MSG.SOLICIT: msgType = DHCP6_MSG.ADVERTISE; break;
    case DHCP6_MSG.REQUEST: case DHCP6_MSG.CONFIRM: case DHCP6_MSG.DECLINE: case DHCP6_MSG.INFORMATION_REQUEST:
      msgType = DHCP6_MSG.REPLY;
      break;
    default: return noReply(`DHCPv6 message type ${msgTypeIn} is not answered`);
  }
  const opts = parseDhcp6Options(msg.subarray(MSG_HEADER_BYTES));
  if (opts === undefined) return noReply('the DHCPv6 options run past the message (or are too many)');
  // The last Client Identifier and IA_NA count, as in OVN's walk over the options.
  let clientId: Dhcp6Option | undefined;
  let iaid = 0;
  for (const o of opts) {
    if (o.code === DHCP6_OPT.CLIENT_ID) clientId = o;
    if (o.code === DHCP6_OPT.IA_NA) {
      if (o.data.length < 4) return noReply('an IA_NA option without an IAID');
      iaid = o.data.readUInt32BE(0);
    }
  }
  if (clientId === undefined) return noReply('no Client Identifier in the DHCPv6 message');
  if (iaid === 0 && msgTypeIn !== DHCP6_MSG.INFORMATION_REQUEST) return noReply('no IA_NA in the DHCPv6 message');
  const user = parseDhcp6Options(Buffer.from(userOptions.buffer, userOptions.byteOffset, userOptions.length));
  if (user === undefined) return noReply('invalid userdata: the DHCPv6 options run past its end');
  const out = replyOptions(user, iaid);
  if (typeof out === 'string') return noReply(`invalid userdata: ${out}`);

  const l4Offset = f.l4Offset;
  const l3Offset = f.eth.l3Offset;
  const src = Buffer.from(raw.buffer, raw.byteOffset, raw.length);
  const head = Buffer.from(msg.subarray(0, MSG_HEADER_BYTES));
  head[0] = msgType;
  const payload = Buffer.concat([head, encodeDhcp6Option(DHCP6_OPT.CLIENT_ID, clientId.data), ...out]);
  const udpBytes = UDP_HEADER_BYTES + payload.length;
  if (udpBytes > 0xffff) return noReply('the reply would not fit in a UDP datagram');
  const packet = Buffer.concat([src.subarray(0, l4Offset), dgram.subarray(0, UDP_HEADER_BYTES), payload]);
  const udp = packet.subarray(l4Offset);
  udp.writeUInt16BE(udpBytes, 4);
  packet.writeUInt16BE(udpBytes, l3Offset + 4);
  fillUdp6Checksum(udp, f.ipv6.src, f.ipv6.dst);
  return { kind: 'reply', packet, msgType };
}
