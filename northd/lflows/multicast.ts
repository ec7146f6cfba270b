// IP multicast flows of a datapath, as ovn-northd 23.03 builds them, held by the datapath's
// multicast owner (`m <dp>` in lflows/node.ts) so that the switches' shared templates stay as
// they are:
// - a snooping switch (build_lswitch_destination_lookup_bmcast): IGMP and MLD to the
//   controller (ls_in_l2_lkup 100), 224.0.0.X and reserved IPv6 multicast flooded (85), and
//   unregistered IP multicast to the relaying routers and static flood ports, or dropped (80),
//   unless other_config:mcast_flood_unregistered; on an ovn-ic transit switch, IGMP/MLD from a
//   remote port copied to the controller in ls_out_pre_lb 120 (build_interconn_mcast_snoop_flows);
// - a router (build_mcast_lookup_flows_for_lrouter, build_misc_local_traffic_drop_flows_for_
//   lrouter): IGMP/MLD with TTL 1 admitted when a port floods multicast statically
//   (lr_in_ip_input 120); with relay, multicast routed to the static flood ports or dropped
//   (lr_in_ip_routing 10460/10450) and IGMP/MLD from its own MACs dropped (10550).
// - groups learned by snooping (igmp-groups.ts, build_lswitch_ip_mcast_igmp_mld and
//   build_mcast_lookup_flows_for_lrouter): on a switch, a group's traffic to its ports, the
//   relaying routers and the static flood ports (ls_in_l2_lkup 90; none for 224.0.0.X, the
//   IPv6 all-hosts and all-routers groups, nor past other_config:mcast_table_size per
//   family); on a relaying router, routed to the group's router ports (lr_in_ip_routing 10500).
// The flows a router port's relay gives (lr_out_delivery 110) are the port's, in router.ts.
import type { Uuid } from '../../ovsdb/index.js';
import type * as sb from '../../ovsdb/rows/sb.js';
import type { DatapathInfo } from '../datapaths.js';
import type { DropActions } from '../drop-sampling.js';
import type { IpGroup } from '../igmp-groups.js';
import { snooping } from '../ip-multicast.js';
import type { RouterFacts } from '../routers.js';
import { NO_FLOWS, jsonKey, lflow } from './flow.js';

/** What a datapath's group memberships say (multicast.ts): mcast_sw_info / mcast_rtr_info flags. */
export interface McastFloodFlags {
  /** Some enabled port floods all IP multicast (options:mcast_flood). */
  readonly floodStatic: boolean;
  /** A switch's router port faces a relaying router. */
  readonly floodRelay: boolean;
}

const NO_GROUPS: ReadonlyMap<string, IpGroup> = new Map();

/** 224.0.0.X (RFC 4541 2.1.2): never snooped. */
function localV4(a: number): boolean {
  return a >>> 8 === 0xe00000;
}

/** ff02::1, ff02::2, ff05::2 (RFC 4291 2.7.1). */
function reservedV6(g: readonly number[]): boolean {
  if (g.slice(1, 7).some((x) => x !== 0)) return false;
  return (g[0] === 0xff02 && (g[7] === 1 || g[7] === 2)) || (g[0] === 0xff05 && g[7] === 2);
}

/** A switch's learned groups' flows, up to its table size per address family. */
function switchGroupFlows(dp: DatapathInfo, flags: McastFloodFlags, groups: ReadonlyMap<string, IpGroup>, flows: sb.Logical_Flow[]): void {
  const c = dp.mcast;
  // The size as ovn-northd reads it, unsigned: a negative column value is beyond any count.
  const limit = c.kind === 'switch' ? (c.tableSize < 0 ? Infinity : c.tableSize) : 0;
  let v4 = 0;
  let v6 = 0;
  let actions = '';
  if (flags.floodRelay) actions += 'clone { outport = "_MC_mrouter_flood"; output; };';
  if (flags.floodStatic) actions += 'clone { outport ="_MC_static"; output; };';
  for (const g of groups.values()) {
    if (g.v4) {
      if (localV4(g.addr as number) || v4 >= limit) continue;
      v4++;
    } else {
      if (reservedV6(g.addr as readonly number[]) || v6 >= limit) continue;
      v6++;
    }
    const match = `eth.mcast && ${g.v4 ? 'ip4 && ip4.dst' : 'ip6 && ip6.dst'} == ${g.name} `;
    flows.push(lflow(dp.logicalDatapath, 'ls_in_l2_lkup', 90, match, `${actions}outport = "${g.name}"; output; `));
  }
}

/**
 * A switch's multicast flows: a snooping switch's, and those of the groups learned on it
 * (whether it snoops or not, as ovn-northd builds them); `remotePorts` are its ports of type
 * remote, `drops` the drop action texts.
 */
export function switchMcastFlows(dp: DatapathInfo, flags: McastFloodFlags, remotePorts: readonly string[], drops: DropActions, groups: ReadonlyMap<string, IpGroup> = NO_GROUPS): readonly sb.Logical_Flow[] {
  const c = dp.mcast;
  if (!snooping(c)) {
    if (groups.size === 0) return NO_FLOWS;
    const flows: sb.Logical_Flow[] = [];
    switchGroupFlows(dp, flags, groups, flows);
    return flows;
  }
  const d = dp.logicalDatapath;
  const flows: sb.Logical_Flow[] = [
    lflow(d, 'ls_in_l2_lkup', 100, 'igmp', 'igmp;'),
    lflow(d, 'ls_in_l2_lkup', 100, 'mldv1 || mldv2', 'igmp;'),
    // RFC 4541 2.1.2 (2): 224.0.0.X is flooded; so is IPv6's reserved multicast (RFC 4291 2.7.1).
    lflow(d, 'ls_in_l2_lkup', 85, 'ip4.mcast && ip4.dst == 224.0.0.0/24', 'outport = "_MC_flood_l2"; output;'),
    lflow(d, 'ls_in_l2_lkup', 85, 'ip6.mcast_flood', 'outport = "_MC_flood"; output;'),
  ];
  if (!c.floodUnregistered) {
    let actions = '';
    if (flags.floodRelay) actions += 'clone { outport = "_MC_mrouter_flood"; output; }; ';
    if (flags.floodStatic) actions += 'outport ="_MC_static"; output;';
    if (!flags.floodRelay && !flags.floodStatic) actions += drops.drop;
    flows.push(lflow(d, 'ls_in_l2_lkup', 80, 'ip4.mcast || ip6.mcast', actions));
  }
  if (c.interconn) {
    for (const name of remotePorts) {
      const key = jsonKey(name);
      flows.push(lflow(d, 'ls_out_pre_lb', 120, `inport == ${key} && igmp`, 'clone { igmp; }; next;'));
      flows.push(lflow(d, 'ls_out_pre_lb', 120, `inport == ${key} && (mldv1 || mldv2)`, 'clone { igmp; }; next;'));
    }
  }
  switchGroupFlows(dp, flags, groups, flows);
  return flows;
}

/**
 * A router's flows; `relay` is its options:mcast_relay, `groups` those relayed from its switches,
 * `drops` the drop action texts.
 */
export function routerMcastFlows(r: RouterFacts, relay: boolean, flags: McastFloodFlags, drops: DropActions, groups: ReadonlyMap<string, IpGroup> = NO_GROUPS): readonly sb.Logical_Flow[] {
  if (!relay && !flags.floodStatic) return NO_FLOWS;
  const d: readonly Uuid[] = r.logicalDatapath;
  const flows: sb.Logical_Flow[] = [];
  if (flags.floodStatic) {
    flows.push(lflow(d, 'lr_in_ip_input', 120, 'igmp && ip.ttl == 1', 'next;'));
    flows.push(lflow(d, 'lr_in_ip_input', 120, '(mldv1 || mldv2) && ip.ttl == 1', 'next;'));
  }
  if (!relay) return flows;
  for (const g of groups.values()) {
    const match = `${g.v4 ? 'ip4 && ip4.dst' : 'ip6 && ip6.dst'} == ${g.name} `;
    const statics = flags.floodStatic ? 'clone { outport = "_MC_static"; ip.ttl--; next; };' : '';
    flows.push(lflow(d, 'lr_in_ip_routing', 10500, match, `${statics}outport = "${g.name}"; ip.ttl--; next;`));
  }
  if (flags.floodStatic) {
    // Reports flooded statically keep TTL 1; those coming back from the router's own MACs are
    // dropped so that they do not loop.
    for (const p of r.ports) {
      flows.push(lflow(d, 'lr_in_ip_routing', 10550, `eth.src == ${p.networks.ea} && igmp`, drops.drop));
      flows.push(lflow(d, 'lr_in_ip_routing', 10550, `eth.src == ${p.networks.ea} && (mldv1 || mldv2)`, drops.drop));
    }
    flows.push(lflow(d, 'lr_in_ip_routing', 10460, 'igmp', 'clone { outport = "_MC_static"; next; };'));
    flows.push(lflow(d, 'lr_in_ip_routing', 10460, 'mldv1 || mldv2', 'clone { outport = "_MC_static"; next; };'));
    flows.push(lflow(d, 'lr_in_ip_routing', 10450, 'ip4.mcast || ip6.mcast', 'clone { outport = "_MC_static"; ip.ttl--; next; };'));
  } else {
    flows.push(lflow(d, 'lr_in_ip_routing', 10450, 'ip4.mcast || ip6.mcast', drops.drop));
  }
  return flows;
}
