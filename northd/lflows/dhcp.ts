// Native DHCPv4 and DHCPv6 for a switch port with dhcpv4_options / dhcpv6_options, in
// ovn-northd 23.03's exact spelling (northd.c: build_dhcpv4_action, build_dhcpv6_action and
// the flows built from them):
// - DHCPv4: ls_in_dhcp_options asks ovn-controller to build the reply (put_dhcp_opts with the
//   offered address and the options sorted by name, netmask from the CIDR, server_mac left
//   out, options:hostname of the port winning), ls_in_dhcp_response turns the request around.
// - DHCPv6: the same two stages for a request to ff02::1:2 (put_dhcpv6_opts with ia_addr first
//   unless dhcpv6_stateless=true, then the options sorted by name, dhcpv6_stateless left out);
//   the server answers from the link-local address of its server_id MAC.
// - Both: ls_out_acl lets the server's replies through (committing them when the switch is
//   stateful); these need only valid server options, not an address in the CIDR.
// Options that cannot be served (a bad CIDR, a missing or malformed server_id, ...) are
// skipped, as ovn-northd skips them.
// - An external port (a VM or bare-metal host outside OVN, on a localnet network) is served
//   where it resides, on the active member of its HA_Chassis_Group: its requests come in by
//   each localnet port of the switch and the flows add is_chassis_resident of the port; none
//   without a localnet port or a group, and no ls_out_acl flows.
import type { Uuid } from '../../ovsdb/index.js';
import type * as sb from '../../ovsdb/rows/sb.js';
import { formatIpv6, linkLocalOf } from '../addresses.js';
import type { Ipv6NetAddr } from '../netaddr.js';
import { ethAddrFromString, ipv4Mask, ipv4Text, ipv6InMasked, parseIpv4Cidr, parseIpv6Masked } from '../netaddr.js';
import type { DhcpOptionsFacts, PortInfo } from '../ports.js';
import type { FlowHints } from './flow.js';
import { StageIds, jsonKey, lflow, portTags } from './flow.js';

/** The offer's actions and match for one IPv4 address, or undefined when it cannot be offered. */
interface Offer {
  readonly options: string;
  readonly response: string;
  readonly addrMatch: string;
}

function offerOf(p: PortInfo, d: DhcpOptionsFacts, offer: number): Offer | undefined {
  const cidr = parseIpv4Cidr(d.cidr);
  if (cidr === undefined) return undefined;
  const mask = ipv4Mask(cidr.plen);
  if (((offer ^ cidr.addr) & mask) >>> 0 !== 0) return undefined;
  const serverId = d.options.get('server_id');
  const serverMac = d.options.get('server_mac');
  if (serverId === undefined || serverMac === undefined || d.options.get('lease_time') === undefined) return undefined;
  const options = new Map(d.options);
  options.delete('server_mac');
  options.set('netmask', ipv4Text(mask));
  const hostname = p.options.get('hostname');
  if (hostname !== undefined) options.set('hostname', hostname);
  const list = [...options].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)).map(([k, v]) => `${k} = ${v}`);
  const offerS = ipv4Text(offer);
  return {
    options: `reg0[3] = put_dhcp_opts(offerip = ${[offerS, ...list].join(', ')}); next;`,
    response: `eth.dst = eth.src; eth.src = ${serverMac}; ip4.src = ${serverId}; udp.src = 67; udp.dst = 68; outport = inport; flags.loopback = 1; output;`,
    addrMatch: `ip4.src == ${offerS} && ip4.dst == {${serverId}, 255.255.255.255}`,
  };
}

function ipv4Value(text: string): number {
  return (parseIpv4Cidr(text) as { addr: number }).addr;
}

/** The DHCPv6 server of `d`: its server_id text and the link-local address of that MAC. */
interface V6Server {
  readonly mac: string;
  readonly ip: string;
}

function v6ServerOf(d: DhcpOptionsFacts): V6Server | undefined {
  const mac = d.options.get('server_id');
  const bytes = mac === undefined ? undefined : ethAddrFromString(mac);
  if (mac === undefined || bytes === undefined) return undefined;
  return { mac, ip: linkLocalOf(bytes.map((b) => b.toString(16).padStart(2, '0')).join(':')) };
}

/** put_dhcpv6_opts' options for `offer` (undefined when outside the CIDR or unservable). */
function v6OptionsAction(d: DhcpOptionsFacts, offer: Ipv6NetAddr, cidr: ReturnType<typeof parseIpv6Masked>): string | undefined {
  if (cidr === undefined || !ipv6InMasked(offer.addr, cidr)) return undefined;
  const list: string[] = [];
  // As smap_get_bool reads it: "true" in any case makes it stateless, anything else does not.
  if (d.options.get('dhcpv6_stateless')?.toLowerCase() !== 'true') list.push(`ia_addr = ${formatIpv6(offer.addr)}`);
  for (const [k, v] of [...d.options].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))) if (k !== 'dhcpv6_stateless') list.push(`${k} = ${v}`);
  return `reg0[3] = put_dhcpv6_opts(${list.join(', ')}); next;`;
}

/**
 * The DHCPv4 and DHCPv6 flows of one switch port (`ld`: its switch's logical_datapath;
 * `localnets`: its switch's localnet ports, read for an external port).
 */
export function dhcpFlows(p: PortInfo, ld: readonly Uuid[], hasStateful: boolean, localnets: readonly string[]): sb.Logical_Flow[] {
  const d = p.dhcpv4;
  const d6 = p.dhcpv6;
  if (p.kind !== 'lsp' || (d === undefined && d6 === undefined)) return [];
  if (p.type === 'external') return p.enabled && p.haGroupSet ? localnets.flatMap((l) => requestFlows(p, ld, l, ` && is_chassis_resident(${jsonKey(p.name)})`)) : [];
  const flows: sb.Logical_Flow[] = [];
  const hints: FlowHints | undefined = d === undefined ? undefined : { hint: d.uuid, tags: portTags(p.name), ids: new StageIds() };
  const hints6: FlowHints | undefined = d6 === undefined ? undefined : { hint: d6.uuid, tags: hints?.tags ?? portTags(p.name), ids: hints?.ids ?? new StageIds() };
  const commit = hasStateful ? 'ct_commit; next;' : 'next;';
  // The servers' replies pass the egress ACLs (for every port of the switch with options).
  const serverId = d?.options.get('server_id');
  const serverMac = d?.options.get('server_mac');
  const v4Served = serverId !== undefined && serverMac !== undefined && d?.options.get('lease_time') !== undefined;
  if (v4Served) {
    flows.push(lflow(ld, 'ls_out_acl', 34000, `outport == "${p.name}" && eth.src == ${serverMac} && ip4.src == ${serverId} && udp && udp.src == 67 && udp.dst == 68`, commit, hints));
  }
  const server6 = d6 === undefined ? undefined : v6ServerOf(d6);
  if (server6 !== undefined) {
    flows.push(lflow(ld, 'ls_out_acl', 34000, `outport == "${p.name}" && eth.src == ${server6.mac} && ip6.src == ${server6.ip} && udp && udp.src == 547 && udp.dst == 546`, commit, hints6));
  }
  if (!p.enabled || p.type === 'router') return flows;
  flows.push(...requestFlows(p, ld, p.name, ''));
  return flows;
}

/**
 * ls_in_dhcp_options and ls_in_dhcp_response for the requests of port `p` coming in by port
 * `inport` (the port itself, or for an external port a localnet port), each match ending with
 * `resident` (for an external port, where it resides).
 */
function requestFlows(p: PortInfo, ld: readonly Uuid[], inport: string, resident: string): sb.Logical_Flow[] {
  const d = p.dhcpv4;
  const d6 = p.dhcpv6;
  const flows: sb.Logical_Flow[] = [];
  const tags = portTags(inport);
  const ids = new StageIds();
  const hints: FlowHints | undefined = d === undefined ? undefined : { hint: d.uuid, tags, ids };
  const hints6: FlowHints | undefined = d6 === undefined ? undefined : { hint: d6.uuid, tags, ids };
  const server6 = d6 === undefined ? undefined : v6ServerOf(d6);
  const key = jsonKey(inport);
  const cidr6 = d6 === undefined || server6 === undefined ? undefined : parseIpv6Masked(d6.cidr);
  for (const a of p.lspAddrs) {
    const base = `inport == ${key} && eth.src == ${a.ea}`;
    // The first of an entry's IPv4 addresses that the options' CIDR holds is offered.
    for (const ip of d === undefined ? [] : a.ipv4) {
      const offer = offerOf(p, d as DhcpOptionsFacts, ipv4Value(ip.addrS));
      if (offer === undefined) continue;
      flows.push(
        lflow(ld, 'ls_in_dhcp_options', 100, `${base} && ip4.src == 0.0.0.0 && ip4.dst == 255.255.255.255 && udp.src == 68 && udp.dst == 67${resident}`, offer.options, hints),
        lflow(ld, 'ls_in_dhcp_options', 100, `${base} && ${offer.addrMatch} && udp.src == 68 && udp.dst == 67${resident}`, offer.options, hints),
        lflow(ld, 'ls_in_dhcp_response', 100, `${base} && ip4 && udp.src == 68 && udp.dst == 67 && reg0[3]${resident}`, offer.response, hints),
      );
      break;
    }
    // Likewise the first IPv6 address in the DHCPv6 options' CIDR.
    for (const ip of server6 === undefined ? [] : a.ipv6) {
      const options = v6OptionsAction(d6 as DhcpOptionsFacts, ip, cidr6);
      if (options === undefined || server6 === undefined) continue;
      const match = `${base} && ip6.dst == ff02::1:2 && udp.src == 546 && udp.dst == 547${resident}`;
      flows.push(
        lflow(ld, 'ls_in_dhcp_options', 100, match, options, hints6),
        lflow(ld, 'ls_in_dhcp_response', 100, `${match} && reg0[3]`,
          `eth.dst = eth.src; eth.src = ${server6.mac}; ip6.dst = ip6.src; ip6.src = ${server6.ip}; udp.src = 547; udp.dst = 546; outport = inport; flags.loopback = 1; output;`, hints6),
      );
      break;
    }
  }
  return flows;
}
