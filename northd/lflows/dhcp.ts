// Native DHCPv4 for a switch port with dhcpv4_options, in ovn-northd 23.03's exact spelling
// (northd.c, build_dhcpv4_action and build_dhcpv4_options_flows): ls_in_dhcp_options asks
// ovn-controller to build the reply (put_dhcp_opts with the offered address and the options
// sorted by name, netmask from the CIDR, server_mac left out, options:hostname of the port
// winning), ls_in_dhcp_response turns the request around, and ls_out_acl lets the server's
// replies through (committing them when the switch is stateful).
//
// Not yet: DHCPv6, external ports (answered on the chassis of their HA group).
import type { Uuid } from '../../ovsdb/index.js';
import type * as sb from '../../ovsdb/rows/sb.js';
import { ipv4Mask, ipv4Text, parseIpv4Cidr } from '../netaddr.js';
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

/** The DHCPv4 flows of one switch port (`ld`: its switch's logical_datapath). */
export function dhcpFlows(p: PortInfo, ld: readonly Uuid[], hasStateful: boolean): sb.Logical_Flow[] {
  const d = p.dhcpv4;
  if (p.kind !== 'lsp' || d === undefined || p.type === 'external') return [];
  const flows: sb.Logical_Flow[] = [];
  const hints: FlowHints = { hint: d.uuid, tags: portTags(p.name), ids: new StageIds() };
  // The server's replies pass the egress ACLs (for every port of the switch with options).
  const serverId = d.options.get('server_id');
  const serverMac = d.options.get('server_mac');
  if (serverId !== undefined && serverMac !== undefined && d.options.get('lease_time') !== undefined) {
    flows.push(lflow(ld, 'ls_out_acl', 34000, `outport == "${p.name}" && eth.src == ${serverMac} && ip4.src == ${serverId} && udp && udp.src == 67 && udp.dst == 68`,
      hasStateful ? 'ct_commit; next;' : 'next;', hints));
  }
  if (!p.enabled || p.type === 'router') return flows;
  const key = jsonKey(p.name);
  for (const a of p.lspAddrs) {
    // The first of an entry's IPv4 addresses that the options' CIDR holds is offered.
    for (const ip of a.ipv4) {
      const offer = offerOf(p, d, ipv4Value(ip.addrS));
      if (offer === undefined) continue;
      const base = `inport == ${key} && eth.src == ${a.ea}`;
      flows.push(
        lflow(ld, 'ls_in_dhcp_options', 100, `${base} && ip4.src == 0.0.0.0 && ip4.dst == 255.255.255.255 && udp.src == 68 && udp.dst == 67`, offer.options, hints),
        lflow(ld, 'ls_in_dhcp_options', 100, `${base} && ${offer.addrMatch} && udp.src == 68 && udp.dst == 67`, offer.options, hints),
        lflow(ld, 'ls_in_dhcp_response', 100, `${base} && ip4 && udp.src == 68 && udp.dst == 67 && reg0[3]`, offer.response, hints),
      );
      break;
    }
  }
  return flows;
}
