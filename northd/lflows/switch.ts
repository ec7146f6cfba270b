// Logical switch flows of this part, in ovn-northd 23.03's exact spelling (northd.c,
// branch-23.03; checked against `ovn-sbctl lflow-list` of the real 23.03.1):
// - per datapath: the default flow of every stage as 23.03 writes it for a switch with no
//   ACLs, load balancers, DHCP or DNS; the admission flows of ls_in_check_port_sec (drop
//   VLAN-tagged frames unless vlan-passthru, drop multicast sources, check_in_port_sec()),
//   ls_in_apply_port_sec, ls_in_l2_lkup broadcast/multicast → _MC_flood, ls_in_l2_unknown
//   (unknown destinations → _MC_unknown when a port has "unknown", else drop), and the egress
//   port security stages. L2/IP port security itself is done by the chassis from
//   Port_Binding.port_security (check_in_port_sec/check_out_port_sec in 23.03).
// - per port: ls_in_l2_lkup unicast for each known Ethernet address, FDB learning for ports
//   with "unknown" and no port security, the drops for disabled ports, router ports' ARP/ND
//   forwarding, and pre-LB conntrack bypass for router and localnet ports.
import type { Uuid } from '../../ovsdb/index.js';
import type * as sb from '../../ovsdb/rows/sb.js';
import type { DatapathInfo } from '../datapaths.js';
import type { PortInfo, RouterPeer } from '../ports.js';
import type { StageName } from '../stages.js';
import type { FlowHints } from './flow.js';
import { jsonKey, lflow, portTags } from './flow.js';

const DROP = 'drop;';
const SVC_MONITOR = 'eth.dst == $svc_monitor_mac';
const ND_MLD_ACL = 'nd || nd_ra || nd_rs || mldv1 || mldv2';
const ND_MLD_LB = 'nd || nd_rs || nd_ra || mldv1 || mldv2';
const STATEFUL_COMMIT: readonly (readonly [string, string])[] = [
  ['reg0[1] == 1 && reg0[13] == 0', 'ct_commit { ct_mark.blocked = 0; }; next;'],
  ['reg0[1] == 1 && reg0[13] == 1', 'ct_commit { ct_mark.blocked = 0; ct_label.label = reg3; }; next;'],
];

/** Flows owned by a switch datapath itself. */
export function switchDatapathFlows(dp: DatapathInfo, hasUnknown: boolean): sb.Logical_Flow[] {
  const d = dp.logicalDatapath;
  const f = (s: StageName, priority: number, match: string, actions: string): sb.Logical_Flow => lflow(d, s, priority, match, actions);
  const flows: sb.Logical_Flow[] = [];
  // Admission control and port security.
  if (!dp.vlanPassthru) flows.push(f('ls_in_check_port_sec', 100, 'vlan.present', DROP));
  flows.push(
    f('ls_in_check_port_sec', 100, 'eth.src[40]', DROP),
    f('ls_in_check_port_sec', 50, '1', 'reg0[15] = check_in_port_sec(); next;'),
    f('ls_in_apply_port_sec', 50, 'reg0[15] == 1', DROP),
    f('ls_in_apply_port_sec', 0, '1', 'next;'),
    f('ls_in_lookup_fdb', 0, '1', 'next;'),
    f('ls_in_put_fdb', 0, '1', 'next;'),
    // Pre-ACL, pre-LB and pre-stateful, as for a switch without ACLs or load balancers.
    f('ls_in_pre_acl', 110, SVC_MONITOR, 'next;'),
    f('ls_in_pre_acl', 0, '1', 'next;'),
    f('ls_in_pre_lb', 110, SVC_MONITOR, 'next;'),
    f('ls_in_pre_lb', 110, 'eth.mcast', 'next;'),
    f('ls_in_pre_lb', 110, ND_MLD_LB, 'next;'),
    f('ls_in_pre_lb', 110, 'reg0[16] == 1', 'next;'),
    f('ls_in_pre_lb', 0, '1', 'next;'),
    f('ls_in_pre_stateful', 110, 'reg0[2] == 1', 'ct_lb_mark;'),
    f('ls_in_pre_stateful', 100, 'reg0[0] == 1', 'ct_next;'),
    f('ls_in_pre_stateful', 0, '1', 'next;'),
    // Without ACLs, the ACL stages pass everything at the top priority.
    f('ls_in_acl_hint', 65535, '1', 'next;'),
    f('ls_in_acl', 65535, '1', 'next;'),
    f('ls_in_acl', 65532, ND_MLD_ACL, 'next;'),
    f('ls_in_qos_mark', 0, '1', 'next;'),
    f('ls_in_qos_meter', 0, '1', 'next;'),
    f('ls_in_lb_aff_check', 0, '1', 'next;'),
    f('ls_in_lb', 0, '1', 'next;'),
    f('ls_in_lb_aff_learn', 0, '1', 'next;'),
    f('ls_in_pre_hairpin', 0, '1', 'next;'),
    f('ls_in_nat_hairpin', 0, '1', 'next;'),
    f('ls_in_hairpin', 0, '1', 'next;'),
    f('ls_in_acl_after_lb', 65532, ND_MLD_ACL, 'next;'),
    f('ls_in_acl_after_lb', 0, '1', 'next;'),
    ...STATEFUL_COMMIT.map(([m, a]) => f('ls_in_stateful', 100, m, a)),
    f('ls_in_stateful', 0, '1', 'next;'),
    f('ls_in_arp_rsp', 0, '1', 'next;'),
    f('ls_in_dhcp_options', 0, '1', 'next;'),
    f('ls_in_dhcp_response', 0, '1', 'next;'),
    f('ls_in_dns_lookup', 0, '1', 'next;'),
    f('ls_in_dns_response', 0, '1', 'next;'),
    f('ls_in_external_port', 0, '1', 'next;'),
    // Destination lookup.
    f('ls_in_l2_lkup', 110, `${SVC_MONITOR} && (tcp || icmp || icmp6)`, 'handle_svc_check(inport);'),
    f('ls_in_l2_lkup', 70, 'eth.mcast', 'outport = "_MC_flood"; output;'),
    f('ls_in_l2_lkup', 0, '1', 'outport = get_fdb(eth.dst); next;'),
    f('ls_in_l2_unknown', 50, 'outport == "none"', hasUnknown ? 'outport = "_MC_unknown"; output;' : DROP),
    f('ls_in_l2_unknown', 0, '1', 'output;'),
    // Egress.
    f('ls_out_pre_acl', 110, 'eth.src == $svc_monitor_mac', 'next;'),
    f('ls_out_pre_acl', 0, '1', 'next;'),
    f('ls_out_pre_lb', 110, 'eth.mcast', 'next;'),
    f('ls_out_pre_lb', 110, 'eth.src == $svc_monitor_mac', 'next;'),
    f('ls_out_pre_lb', 110, ND_MLD_LB, 'next;'),
    f('ls_out_pre_lb', 110, 'reg0[16] == 1', 'next;'),
    f('ls_out_pre_lb', 0, '1', 'next;'),
    f('ls_out_pre_stateful', 110, 'reg0[2] == 1', 'ct_lb_mark;'),
    f('ls_out_pre_stateful', 100, 'reg0[0] == 1', 'ct_next;'),
    f('ls_out_pre_stateful', 0, '1', 'next;'),
    f('ls_out_acl_hint', 65535, '1', 'next;'),
    f('ls_out_acl', 65535, '1', 'next;'),
    f('ls_out_acl', 65532, ND_MLD_ACL, 'next;'),
    f('ls_out_qos_mark', 0, '1', 'next;'),
    f('ls_out_qos_meter', 0, '1', 'next;'),
    ...STATEFUL_COMMIT.map(([m, a]) => f('ls_out_stateful', 100, m, a)),
    f('ls_out_stateful', 0, '1', 'next;'),
    f('ls_out_check_port_sec', 100, 'eth.mcast', 'reg0[15] = 0; next;'),
    f('ls_out_check_port_sec', 0, '1', 'reg0[15] = check_out_port_sec(); next;'),
    f('ls_out_apply_port_sec', 50, 'reg0[15] == 1', DROP),
    f('ls_out_apply_port_sec', 0, '1', 'output;'),
  );
  return flows;
}

/**
 * Flows owned by one logical switch port. `allRouter`: every port of its switch is a router
 * port with a peer, so ARP/ND for a router's addresses need not be flooded as well.
 * `dp` is the switch's logical_datapath value (its DatapathInfo.logicalDatapath).
 */
export function switchPortFlows(p: PortInfo, allRouter: boolean, dp: readonly Uuid[]): sb.Logical_Flow[] {
  if (p.kind !== 'lsp') return [];
  const flows: sb.Logical_Flow[] = [];
  const key = jsonKey(p.name);
  const hint = { hint: p.nbUuid };
  // The port's tags map is made only for a port that has flows about it, and shared by them.
  let lportHints: FlowHints | undefined;
  const lport = (): FlowHints => (lportHints ??= { hint: p.nbUuid, tags: portTags(p.name) });
  // FDB learning: a port with "unknown" and no port security, a VIF or a localnet port that
  // may learn (options:localnet_learn_fdb).
  if (p.portSecurityCount === 0 && p.hasUnknown && (p.type === '' || (p.type === 'localnet' && p.localnetLearnFdb))) {
    const prefix = p.type === 'localnet' ? 'flags.localnet = 1; ' : '';
    flows.push(
      lflow(dp, 'ls_in_lookup_fdb', 100, `inport == ${key}`, `${prefix}reg0[11] = lookup_fdb(inport, eth.src); next;`, lport()),
      lflow(dp, 'ls_in_put_fdb', 100, `inport == ${key} && reg0[11] == 0`, 'put_fdb(inport, eth.src); next;', lport()),
    );
  }
  // Router and localnet ports skip conntrack in pre-LB (no ACLs or load balancers yet: with
  // stateful ACLs the egress action becomes "next;", with LB VIPs localnet ports stay in).
  if (p.routerPeer !== undefined || p.type === 'localnet') {
    flows.push(
      lflow(dp, 'ls_in_pre_lb', 110, `ip && inport == ${key}`, 'next;', lport()),
      lflow(dp, 'ls_out_pre_lb', 110, `ip && outport == ${key}`, 'ct_clear; next;', lport()),
    );
  }
  if (p.type === 'external') return flows;
  if (!p.enabled) {
    flows.push(
      lflow(dp, 'ls_in_check_port_sec', 100, `inport == ${key}`, 'reg0[15] = 1; next;', lport()),
      lflow(dp, 'ls_in_l2_unknown', 50, `outport == ${key}`, DROP, lport()),
    );
  }
  const action = p.enabled ? `outport = ${key}; output;` : DROP;
  for (const mac of p.macs) flows.push(lflow(dp, 'ls_in_l2_lkup', 50, `eth.dst == ${mac}`, action, hint));
  if (p.routerPeer !== undefined && p.routerPeer.enabled) flows.push(...routerArpNdFlows(p, p.routerPeer, allRouter, dp, hint));
  return flows;
}

/**
 * ARP requests and ND solicitations for a router port's own addresses go only to that router
 * port (priority 80), and its self-originated ones are flooded within the L2 domain (75).
 * Load balancer VIPs and NAT addresses join these flows in later parts.
 */
function routerArpNdFlows(p: PortInfo, peer: RouterPeer, allRouter: boolean, dp: readonly Uuid[], hint: FlowHints): sb.Logical_Flow[] {
  const key = jsonKey(p.name);
  const action = allRouter ? `outport = ${key}; output;` : `clone {outport = ${key}; output; }; outport = "_MC_flood_l2"; output;`;
  const flows: sb.Logical_Flow[] = [];
  for (const ip of peer.ipv4) flows.push(lflow(dp, 'ls_in_l2_lkup', 80, `flags[1] == 0 && arp.op == 1 && arp.tpa == ${ip}`, action, hint));
  for (const ip of peer.ipv6) flows.push(lflow(dp, 'ls_in_l2_lkup', 80, `flags[1] == 0 && nd_ns && nd.target == ${ip}`, action, hint));
  if (!allRouter) {
    flows.push(lflow(dp, 'ls_in_l2_lkup', 75, `eth.src == {${peer.mac}} && (arp.op == 1 || rarp.op == 3 || nd_ns)`, 'outport = "_MC_flood_l2"; output;'));
  }
  return flows;
}
