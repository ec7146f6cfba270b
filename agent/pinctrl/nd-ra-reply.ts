// put_nd_ra_opts: the Router Advertisement ovn-controller 23.03.1 answers a Router Solicitation
// with (pinctrl_handle_put_nd_ra_opts). The logical flow's controller() userdata carries the
// whole ICMPv6 message (agent/actions/nd-ra.ts); it replaces the solicitation after the packet's
// own Ethernet and IPv6 headers, with the payload length and the ICMPv6 checksum made for it.
// Addresses stay as they were: the next logical flow swaps them (lr_in_nd_ra_response), and
// Open vSwitch adjusts the checksum as it rewrites them.
//
// Pure: packet and userdata in, packet or the reason there is none out.

import { buildIcmp6, type Frame } from './packet.js';

const ND_ROUTER_SOLICIT = 133;
/** An ICMPv6 header: type, code, checksum. */
const ICMP6_HEADER_BYTES = 4;

/** The advertisement to send for solicitation `f` (whose bytes are `packet`), or why not. */
export function composeNdRaReply(f: Frame, packet: Uint8Array, ra: Uint8Array): Buffer | string {
  if (ra.length === 0) return 'IPv6 ND RA options not present in the userdata';
  if (ra.length < ICMP6_HEADER_BYTES) return `IPv6 ND RA of ${ra.length} bytes is shorter than an ICMPv6 header`;
  if (f.ipv6 === undefined || f.icmp6 === undefined || f.l4Offset === undefined || f.icmp6.type !== ND_ROUTER_SOLICIT || f.icmp6.code !== 0) {
    return 'put_nd_ra action on invalid or unsupported packet';
  }
  const head = Buffer.from(packet.subarray(0, f.l4Offset));
  head.writeUInt16BE(ra.length, f.eth.l3Offset + 4);
  const body = Buffer.from(ra.buffer, ra.byteOffset, ra.length);
  const message = buildIcmp6({ type: body[0] as number, code: body[1] as number }, body.subarray(ICMP6_HEADER_BYTES), f.ipv6.src, f.ipv6.dst);
  return Buffer.concat([head, message]);
}
