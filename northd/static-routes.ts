// How ovn-northd reads one static route (parsed_routes_add, find_static_route_outport): what its
// text says, and which router port it leaves by. Shared by the router's route flows
// (lflows/router.ts) and the BFD sessions (bfd.ts), which ask whether a valid route uses a
// session, so that both read a route the same way. Pure.
import { formatIpv6 } from './addresses.js';
import type { LportAddresses } from './netaddr.js';
import { findLportAddress, ipv4Mask, ipv4Text, ipv6Masked, parseIpv4Cidr, parseIpv6Cidr } from './netaddr.js';

export interface ParsedPrefix {
  readonly v4: boolean;
  /** The prefix as given (host bits kept): two routes are ECMP peers only if these are equal. */
  readonly key: string;
  /** The network, masked, as build_route_prefix_s prints it. */
  readonly network: string;
  readonly plen: number;
  readonly isLla: boolean;
}

/** A route's own text, parsed: its prefix, and whether it discards. */
export interface RouteText {
  readonly prefix: ParsedPrefix;
  readonly discard: boolean;
}

export function parsePrefix(text: string): ParsedPrefix | undefined {
  const v4 = parseIpv4Cidr(text);
  if (v4 !== undefined) return { v4: true, key: `${ipv4Text(v4.addr)}/${v4.plen}`, network: ipv4Text((v4.addr & ipv4Mask(v4.plen)) >>> 0), plen: v4.plen, isLla: false };
  const v6 = parseIpv6Cidr(text);
  if (v6 === undefined) return undefined;
  const net = ipv6Masked(v6.addr, v6.plen);
  return { v4: false, key: `${formatIpv6(v6.addr)}/${v6.plen}`, network: formatIpv6(net), plen: v6.plen, isLla: net[0] === 0xfe80 && net[1] === 0 && net[2] === 0 && net[3] === 0 };
}

/**
 * What a route's own text says (the first checks of parsed_routes_add): a next hop that is a
 * host address (or "discard", or empty), a prefix that parses, both of one family. Undefined
 * when the route is not valid.
 */
export function parseRouteText(nexthop: string, ipPrefix: string): RouteText | undefined {
  const discard = nexthop === 'discard';
  const validNexthop = nexthop !== '' && !discard;
  let nexthopV4 = false;
  if (validNexthop) {
    const v4 = parseIpv4Cidr(nexthop);
    const v6 = v4 === undefined ? parseIpv6Cidr(nexthop) : undefined;
    if (v4 === undefined && v6 === undefined) return undefined;
    if ((v4 !== undefined && v4.plen !== 32) || (v6 !== undefined && v6.plen !== 128)) return undefined;
    nexthopV4 = v4 !== undefined;
  }
  const prefix = parsePrefix(ipPrefix);
  if (prefix === undefined) return undefined;
  if (validNexthop && prefix.v4 !== nexthopV4) return undefined;
  return { prefix, discard };
}

/** A router port as a route's output is chosen among them. */
export interface RoutePort {
  readonly name: string;
  readonly networks: LportAddresses;
}

/**
 * The port and source address a route leaves by (find_static_route_outport): its output_port
 * when it names one of `ports` (the source address on the next hop's network, else the port's
 * first of the family); otherwise the first port with the next hop on one of its networks.
 */
export function staticRouteOutport<P extends RoutePort>(ports: readonly P[], outputPort: string | undefined, nexthop: string, v4: boolean): { port: P; addr: string } | undefined {
  if (outputPort !== undefined) {
    const port = ports.find((p) => p.name === outputPort);
    if (port === undefined) return undefined;
    let addr = nexthop === '' ? undefined : findLportAddress(port.networks, nexthop);
    addr ??= v4 ? port.networks.ipv4[0]?.addrS : port.networks.ipv6[0]?.addrS;
    return addr === undefined ? undefined : { port, addr };
  }
  for (const port of ports) {
    const addr = nexthop === '' ? undefined : findLportAddress(port.networks, nexthop);
    if (addr !== undefined) return { port, addr };
  }
  return undefined;
}
