// The flows of a virtual port (northd.c 23.03.1, build_lswitch_arp_nd_responder_known_ips and
// build_arp_resolve_flows_for_lrouter_port). A virtual port has none of a VIF's ARP/ND replies
// nor its router ARP entries; instead:
// - ls_in_arp_rsp 100, per listed parent on the same switch: a GARP or ARP reply for the VIP
//   (IPv4), or an NS for it or an NA announcing it (IPv6), coming from that parent binds the
//   port to the parent's chassis: `bind_vport(<vport>, inport); next;` (the agent's pinctrl
//   claims it). Hinted with the parent's NB row and tagged with the parent's name.
// - lr_in_arp_resolve 100 in the routers of its switch: while unclaimed, the VIP resolves to
//   00:00:00:00:00:00 (the router then asks with arp {}), in the first router port whose
//   networks hold it; once claimed, to the first MAC of the bound parent, in the first router
//   port of the parent's switch whose networks hold it.
import type { Uuid } from '../../ovsdb/index.js';
import type * as sb from '../../ovsdb/rows/sb.js';
import type { PortInfo } from '../ports.js';
import { findLportAddress } from '../netaddr.js';
import type { VirtualPortFacts } from '../virtual-ports.js';
import type { FlowHints } from './flow.js';
import { StageIds, jsonKey, lflow, portTags } from './flow.js';
import type { SwitchRouterPort } from './switch.js';

/** What a virtual port's flows read beyond the port: its parents and their switches' router ports. */
export interface VirtualPortLookup {
  /** The bound port of that name (an LSP or an LRP). */
  port(name: string): PortInfo | undefined;
  /** The router ports of switch `dp` (OVN's od->router_ports), in the order the switch flows use. */
  routerPorts(dp: Uuid): readonly SwitchRouterPort[];
}

/** ls_in_arp_rsp: the bind_vport flows, one per listed parent on the port's own switch. */
export function virtualBindFlows(p: PortInfo, v: VirtualPortFacts, dp: readonly Uuid[], lookup: VirtualPortLookup): sb.Logical_Flow[] {
  const flows: sb.Logical_Flow[] = [];
  const ids = new StageIds();
  const actions = `bind_vport(${jsonKey(p.name)}, inport); next;`;
  for (const name of v.parents) {
    const parent = lookup.port(name);
    // A parent must be a switch port on the same switch.
    if (parent === undefined || parent.kind !== 'lsp' || parent.dp !== p.dp) continue;
    // The parent's name is quoted as written here, not as a JSON string (as in 23.03).
    const match = v.v6
      ? `inport == "${name}" && ((nd_ns && ip6.dst == {${v.ip}, ${v.snAddrS ?? ''}} && nd.target == ${v.ip}) ||(nd_na && nd.target == ${v.ip}))`
      : `inport == "${name}" && ((arp.op == 1 && arp.spa == ${v.ip} && arp.tpa == ${v.ip}) || (arp.op == 2 && arp.spa == ${v.ip}))`;
    const hints: FlowHints = { hint: parent.nbUuid, tags: portTags(name), ids };
    flows.push(lflow(dp, 'ls_in_arp_rsp', 100, match, actions, hints));
  }
  return flows;
}

/** lr_in_arp_resolve: where the routers of the port's switch send packets for the VIP. */
export function virtualArpResolveFlows(p: PortInfo, v: VirtualPortFacts, routerPorts: readonly SwitchRouterPort[], lookup: VirtualPortLookup, hint: FlowHints): sb.Logical_Flow[] {
  if (routerPorts.length === 0) return [];
  const reg = v.v6 ? 'xxreg0' : 'reg0';
  const resolve = (rp: SwitchRouterPort, mac: string): sb.Logical_Flow =>
    lflow(rp.routerLd, 'lr_in_arp_resolve', 100, `outport == ${jsonKey(rp.peer.name)} && ${reg} == ${v.ip}`, `eth.dst = ${mac}; next;`, hint);
  if (v.boundParent === undefined) {
    // Not claimed yet: the router finds the VIP's owner by ARP/ND.
    const rp = routerPorts.find((r) => findLportAddress(r.peer.networks, v.ip) !== undefined);
    return rp === undefined ? [] : [resolve(rp, '00:00:00:00:00:00')];
  }
  const parent = lookup.port(v.boundParent);
  if (parent === undefined || parent.kind !== 'lsp') return [];
  // The first address entry of the parent (they all have a MAC) through the first router port
  // of the parent's switch whose networks hold the VIP.
  const first = parent.lspAddrs[0];
  if (first === undefined) return [];
  const rp = lookup.routerPorts(parent.dp).find((r) => findLportAddress(r.peer.networks, v.ip) !== undefined);
  return rp === undefined ? [] : [resolve(rp, first.ea)];
}
