// Logical switch flows in ovn-northd 23.03's exact spelling (northd.c, v23.03.1; checked
// against the real 23.03.1 by tests/northd/differential-real-northd.test.ts):
// - per datapath: the default flow of every stage as 23.03 writes it for a switch without
//   load balancer VIPs or DNS (the ACL stages by its ACL state, lflows/acl.ts; pre-LB and
//   hairpin by whether it has load balancer VIPs, the load balancers' own flows in
//   lflows/lb.ts); the DNS lookup, response and ACL flows when the switch has DNS records
//   (dns.ts); the admission flows of ls_in_check_port_sec (drop VLAN-tagged frames unless
//   vlan-passthru, drop multicast sources, check_in_port_sec()), ls_in_apply_port_sec,
//   ls_in_l2_lkup broadcast/multicast → _MC_flood, ls_in_l2_unknown
//   (unknown destinations → _MC_unknown when a port has "unknown", else drop), and the egress
//   port security stages. L2/IP port security itself is done by the chassis from
//   Port_Binding.port_security (check_in_port_sec/check_out_port_sec in 23.03).
// - per port: ls_in_l2_lkup unicast for each known Ethernet address, FDB learning for ports
//   with "unknown" and no port security, the drops for disabled ports, router ports' ARP/ND
//   forwarding (router and DNAT addresses), pre-LB/pre-ACL conntrack bypass for router and
//   localnet ports, ARP/ND replies for the port's addresses (ls_in_arp_rsp), its addresses'
//   ARP resolution in the routers of its switch, and native DHCPv4 and DHCPv6 (lflows/dhcp.ts).
import type { Uuid } from '../../ovsdb/index.js';
import type * as sb from '../../ovsdb/rows/sb.js';
import type { DatapathInfo } from '../datapaths.js';
import type { DropActions } from '../drop-sampling.js';
import type { PortInfo, RouterPeer } from '../ports.js';
import { ethAddrFromString, extractIpAddresses, findLportAddress, v4NetworksText, v6NetworksText } from '../netaddr.js';
import type { LportAddresses } from '../netaddr.js';
import { ssetOrder } from '../ovs-hash.js';
import type { RouterFacts, RouterPortFacts } from '../routers.js';
import type { StageName } from '../stages.js';
import { stage } from '../stages.js';
import type { AclFlags } from './acl.js';
import { aclStageDefaults } from './acl.js';
import { dhcpFlows } from './dhcp.js';
import type { FlowHints } from './flow.js';
import { NO_FLOWS, StageIds, jsonKey, lflow, portTags, shardOfRef, shardTemplateRef, templateLineages } from './flow.js';
import type { VirtualPortLookup } from './virtual.js';
import { virtualArpResolveFlows, virtualBindFlows } from './virtual.js';
import { routableRouteFlows } from './router.js';

const SVC_MONITOR = 'eth.dst == $svc_monitor_mac';
const ND_MLD_LB = 'nd || nd_rs || nd_ra || mldv1 || mldv2';
const STATEFUL_COMMIT: readonly (readonly [string, string])[] = [
  ['reg0[1] == 1 && reg0[13] == 0', 'ct_commit { ct_mark.blocked = 0; }; next;'],
  ['reg0[1] == 1 && reg0[13] == 1', 'ct_commit { ct_mark.blocked = 0; ct_label.label = reg3; }; next;'],
];

/**
 * Flows owned by a switch datapath itself, to be held in its datapath (`dp.logicalDatapath`):
 * its shard's frozen templates, naming a placeholder datapath of the shard. A switch with load
 * balancer VIPs has its own hairpin flows besides (`hairpinFlows`). `drops`: the drop action
 * texts (drop-sampling.ts).
 */
export function switchDatapathFlows(dp: DatapathInfo, hasUnknown: boolean, acl: AclFlags, hasDns: boolean, drops: DropActions): readonly sb.Logical_Flow[] {
  // The flows depend on these eight facts and the drop actions only, so they are built (and
  // their UUIDs hashed) once per combination and shard, and shared by the switches:
  // lflows/node.ts holds them in each switch's datapath, and copies one only when it becomes a
  // row of that switch alone.
  const key = (acl.ctInvMatch === false ? 128 : 0) | (acl.defaultDrop === true ? 64 : 0) | (hasDns ? 32 : 0) | (acl.hasLbVip === true ? 16 : 0) | (dp.vlanPassthru ? 8 : 0) | (hasUnknown ? 4 : 0) |
    (acl.hasAcls ? 2 : 0) | (acl.hasStateful ? 1 : 0);
  const shard = shardOfRef(dp.logicalDatapath);
  let templates = SWITCH_TEMPLATES.get(drops);
  if (templates === undefined) SWITCH_TEMPLATES.set(drops, (templates = new Map()));
  // The facts take 8 bits.
  const slot = shard * 256 + key;
  let template = templates.get(slot);
  if (template === undefined) {
    template = Object.freeze(buildSwitchDatapathFlows(shardTemplateRef(shard), dp.vlanPassthru, hasUnknown, acl, hasDns, drops));
    // Named by the facts and the shard, not by the drop actions: when drop sampling is turned on
    // or off, the flows that stay keep their Logical_DP_Group and their rows (lflows/node.ts).
    templateLineages.set(template, `switch ${key} ${shard}`);
    templates.set(slot, template);
  }
  return template;
}

/**
 * A switch's forwarding groups (build_fwd_group_lflows): an ARP responder for each group's VIP
 * with its virtual MAC (ls_in_arp_rsp 50), and the MAC forwarded to one of its child ports
 * (ls_in_l2_lkup 50, `fwd_group`, which the chassis turns into a select group). Groups without
 * child ports have none (datapaths.ts leaves them out). VIP, MAC and port names are put in as
 * the NB row has them, unchecked, as ovn-northd puts them.
 */
export function fwdGroupFlows(dp: DatapathInfo): readonly sb.Logical_Flow[] {
  if (dp.fwdGroups.length === 0) return NO_FLOWS;
  const d = dp.logicalDatapath;
  const flows: sb.Logical_Flow[] = [];
  for (const g of dp.fwdGroups) {
    const hint: FlowHints = { hint: g.uuid };
    flows.push(lflow(d, 'ls_in_arp_rsp', 50, `arp.tpa == ${g.vip} && arp.op == 1`,
      `eth.dst = eth.src; eth.src = ${g.vmac}; arp.op = 2; /* ARP reply */ arp.tha = arp.sha; arp.sha = ${g.vmac}; arp.tpa = arp.spa; arp.spa = ${g.vip}; outport = inport; flags.loopback = 1; output;`,
      hint));
    const children = `childports=${g.childPorts.map((p) => `"${p}"`).join(',')}`;
    flows.push(lflow(d, 'ls_in_l2_lkup', 50, `eth.dst == ${g.vmac}`, `fwd_group(${g.liveness ? 'liveness="true",' : ''}${children});`, hint));
  }
  return flows;
}

/**
 * Hairpin for load balancers (build_lb_hairpin): a connection from a backend to its own VIP is
 * SNATed to the VIP and sent back out of the port it came from. These carry the switch's hint.
 */
export function hairpinFlows(dp: DatapathInfo): sb.Logical_Flow[] {
  const d = dp.logicalDatapath;
  const hint: FlowHints = { hint: dp.nbUuid };
  return [
    lflow(d, 'ls_in_pre_hairpin', 100, 'ip && ct.trk', 'reg0[6] = chk_lb_hairpin(); reg0[12] = chk_lb_hairpin_reply(); next;', hint),
    lflow(d, 'ls_in_nat_hairpin', 100, 'ip && ct.new && ct.trk && reg0[6] == 1', 'ct_snat_to_vip; next;', hint),
    lflow(d, 'ls_in_nat_hairpin', 100, 'ip && ct.est && ct.trk && reg0[6] == 1', 'ct_snat;', hint),
    lflow(d, 'ls_in_nat_hairpin', 90, 'ip && reg0[12] == 1', 'ct_snat;', hint),
  ];
}

/**
 * Immutable templates of a switch datapath's flows by drop actions, then by its eight facts and
 * its shard. The drop actions of a setting in force are one object while it is (PLAIN_DROPS when
 * off), so the templates of a setting no longer in force go with it.
 */
const SWITCH_TEMPLATES = new WeakMap<DropActions, Map<number, readonly sb.Logical_Flow[]>>();

function buildSwitchDatapathFlows(d: readonly Uuid[], vlanPassthru: boolean, hasUnknown: boolean, acl: AclFlags, hasDns: boolean, drops: DropActions): sb.Logical_Flow[] {
  const drop = drops.drop;
  const f = (s: StageName, priority: number, match: string, actions: string): sb.Logical_Flow => lflow(d, s, priority, match, actions);
  const flows: sb.Logical_Flow[] = [];
  // Admission control and port security.
  if (!vlanPassthru) flows.push(f('ls_in_check_port_sec', 100, 'vlan.present', drop));
  flows.push(
    f('ls_in_check_port_sec', 100, 'eth.src[40]', drop),
    f('ls_in_check_port_sec', 50, '1', 'reg0[15] = check_in_port_sec(); next;'),
    f('ls_in_apply_port_sec', 50, 'reg0[15] == 1', drop),
    f('ls_in_apply_port_sec', 0, '1', 'next;'),
    f('ls_in_lookup_fdb', 0, '1', 'next;'),
    f('ls_in_put_fdb', 0, '1', 'next;'),
    // Pre-LB and pre-stateful, as for a switch without load balancers.
    f('ls_in_pre_lb', 110, SVC_MONITOR, 'next;'),
    f('ls_in_pre_lb', 110, 'eth.mcast', 'next;'),
    f('ls_in_pre_lb', 110, ND_MLD_LB, 'next;'),
    f('ls_in_pre_lb', 110, 'reg0[16] == 1', 'next;'),
    f('ls_in_pre_lb', 0, '1', 'next;'),
    ...(acl.hasLbVip === true ? [f('ls_in_pre_lb', 100, 'ip', 'reg0[2] = 1; next;'), f('ls_out_pre_lb', 100, 'ip', 'reg0[2] = 1; next;')] : []),
    ...(acl.hasLbVip === true ? [f('ls_in_hairpin', 1, '(reg0[6] == 1 || reg0[12] == 1)', 'eth.dst <-> eth.src; outport = inport; flags.loopback = 1; output;')] : []),
    f('ls_in_pre_stateful', 110, 'reg0[2] == 1', 'ct_lb_mark;'),
    f('ls_in_pre_stateful', 100, 'reg0[0] == 1', 'ct_next;'),
    f('ls_in_pre_stateful', 0, '1', 'next;'),
    f('ls_in_qos_mark', 0, '1', 'next;'),
    f('ls_in_qos_meter', 0, '1', 'next;'),
    f('ls_in_lb_aff_check', 0, '1', 'next;'),
    f('ls_in_lb', 0, '1', 'next;'),
    f('ls_in_lb_aff_learn', 0, '1', 'next;'),
    f('ls_in_pre_hairpin', 0, '1', 'next;'),
    f('ls_in_nat_hairpin', 0, '1', 'next;'),
    f('ls_in_hairpin', 0, '1', 'next;'),
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
    f('ls_in_l2_unknown', 50, 'outport == "none"', hasUnknown ? 'outport = "_MC_unknown"; output;' : drop),
    f('ls_in_l2_unknown', 0, '1', 'output;'),
    // Egress.
    f('ls_out_pre_lb', 110, 'eth.mcast', 'next;'),
    f('ls_out_pre_lb', 110, 'eth.src == $svc_monitor_mac', 'next;'),
    f('ls_out_pre_lb', 110, ND_MLD_LB, 'next;'),
    f('ls_out_pre_lb', 110, 'reg0[16] == 1', 'next;'),
    f('ls_out_pre_lb', 0, '1', 'next;'),
    f('ls_out_pre_stateful', 110, 'reg0[2] == 1', 'ct_lb_mark;'),
    f('ls_out_pre_stateful', 100, 'reg0[0] == 1', 'ct_next;'),
    f('ls_out_pre_stateful', 0, '1', 'next;'),
    f('ls_out_qos_mark', 0, '1', 'next;'),
    f('ls_out_qos_meter', 0, '1', 'next;'),
    ...STATEFUL_COMMIT.map(([m, a]) => f('ls_out_stateful', 100, m, a)),
    f('ls_out_stateful', 0, '1', 'next;'),
    f('ls_out_check_port_sec', 100, 'eth.mcast', 'reg0[15] = 0; next;'),
    f('ls_out_check_port_sec', 0, '1', 'reg0[15] = check_out_port_sec(); next;'),
    f('ls_out_apply_port_sec', 50, 'reg0[15] == 1', drop),
    f('ls_out_apply_port_sec', 0, '1', 'output;'),
  );
  // Pre-ACL, ACL hints and ACL defaults, by whether ACLs (stateful ones) apply.
  aclStageDefaults((s, priority, match, actions) => flows.push(f(s, priority, match, actions)), acl, drops);
  if (hasDns) {
    // DNS queries go to ovn-controller (dns_lookup); an answered one goes back out of the port
    // it came from, one flow per IP version with the same match; the answers pass the egress
    // ACLs (committed when the switch is stateful).
    const back = 'udp.dst = udp.src; udp.src = 53; outport = inport; flags.loopback = 1; output;';
    flows.push(
      f('ls_in_dns_lookup', 100, 'udp.dst == 53', 'reg0[4] = dns_lookup(); next;'),
      f('ls_in_dns_response', 100, 'udp.dst == 53 && reg0[4]', `eth.dst <-> eth.src; ip4.src <-> ip4.dst; ${back}`),
      f('ls_in_dns_response', 100, 'udp.dst == 53 && reg0[4]', `eth.dst <-> eth.src; ip6.src <-> ip6.dst; ${back}`),
      f('ls_out_acl', 34000, 'udp.src == 53', acl.hasStateful || acl.hasLbVip === true ? 'ct_commit; next;' : 'next;'),
    );
  }
  return flows;
}

/** A router port of a switch (a router LSP with its peer LRP), as its neighbours' flows see it. */
export interface SwitchRouterPort {
  readonly lsp: string;
  readonly peer: RouterPeer;
  /** The peer router's logical_datapath value. */
  readonly routerLd: readonly Uuid[];
  /** The router LSP's addresses (its peer's networks for "router"). */
  readonly addrs: readonly LportAddresses[];
}

/** What a switch port's flows read beyond the port itself: its switch and the routers on it. */
export interface SwitchPortContext {
  /** The switch's logical_datapath value. */
  readonly dp: readonly Uuid[];
  /** Every port of the switch is a router port with a peer (ARP/ND need not be flooded). */
  readonly allRouter: boolean;
  readonly vlanPassthru: boolean;
  /** NB_Global options:ignore_lsp_down=false: a port that is not up answers no ARP or ND. */
  readonly checkLspUp: boolean;
  /** The switch has stateful ACLs (router and localnet ports then skip conntrack in pre-ACL). */
  readonly hasStateful: boolean;
  /** The switch has load balancer VIPs (localnet ports then go through conntrack in pre-LB). */
  readonly hasLbVip: boolean;
  /** The router ports of the switch (OVN's od->router_ports). */
  readonly routerPorts: readonly SwitchRouterPort[];
  /** For an external port: the localnet ports of the switch, through which it is reached. */
  readonly localnetPorts: readonly string[];
  /** For a router LSP: its peer router's facts (NAT addresses, options). */
  readonly peerRouter: RouterFacts | undefined;
  /** For a virtual port: its parents and their switches (no flows of a virtual port without it). */
  readonly virtualLookup?: VirtualPortLookup | undefined;
  /** The drop action texts (drop-sampling.ts). */
  readonly drops: DropActions;
}

/** Flows owned by one logical switch port (some of them in its routers' pipelines). */
export function switchPortFlows(p: PortInfo, ctx: SwitchPortContext): sb.Logical_Flow[] {
  if (p.kind !== 'lsp') return [];
  const dp = ctx.dp;
  const flows: sb.Logical_Flow[] = [];
  const key = jsonKey(p.name);
  const ids = new StageIds();
  const hint = { hint: p.nbUuid, ids };
  // The port's tags map is made only for a port that has flows about it, and shared by them.
  let lportHints: FlowHints | undefined;
  const lport = (): FlowHints => (lportHints ??= { hint: p.nbUuid, tags: portTags(p.name), ids });
  // FDB learning: a port with "unknown" and no port security, a VIF or a localnet port that
  // may learn (options:localnet_learn_fdb). As 23.03.1 writes it: the "flags.localnet = 1; "
  // that 23.03.3 puts first on a localnet port's lookup names a field ovn-controller 23.03.1
  // does not know, which would refuse the flow.
  if (p.portSecurityCount === 0 && p.hasUnknown && (p.type === '' || (p.type === 'localnet' && p.localnetLearnFdb))) {
    flows.push(
      lflow(dp, 'ls_in_lookup_fdb', 100, `inport == ${key}`, 'reg0[11] = lookup_fdb(inport, eth.src); next;', lport()),
      lflow(dp, 'ls_in_put_fdb', 100, `inport == ${key} && reg0[11] == 0`, 'put_fdb(inport, eth.src); next;', lport()),
    );
  }
  // Router and localnet ports skip conntrack: in pre-LB (localnet ports only while the switch
  // has no load balancer VIPs: traffic from outside must be load balanced), and in pre-ACL when
  // the switch has stateful ACLs (then the egress pre-LB action keeps ct state).
  if (p.routerPeer !== undefined || p.type === 'localnet') {
    if (ctx.hasStateful) {
      flows.push(
        lflow(dp, 'ls_in_pre_acl', 110, `ip && inport == ${key}`, 'next;', lport()),
        lflow(dp, 'ls_out_pre_acl', 110, `ip && outport == ${key}`, 'next;', lport()),
      );
    }
    if (p.routerPeer !== undefined || !ctx.hasLbVip) {
      flows.push(
        lflow(dp, 'ls_in_pre_lb', 110, `ip && inport == ${key}`, 'next;', lport()),
        lflow(dp, 'ls_out_pre_lb', 110, `ip && outport == ${key}`, ctx.hasStateful ? 'next;' : 'ct_clear; next;', lport()),
      );
    }
  }
  arpNdResponder(p, ctx, flows, lport, hint);
  if (p.virtual !== undefined && ctx.virtualLookup !== undefined) flows.push(...virtualBindFlows(p, p.virtual, dp, ctx.virtualLookup));
  routerArpResolve(p, ctx, flows, hint);
  routableRoutes(p, ctx, flows);
  flows.push(...dhcpFlows(p, dp, ctx.hasStateful || ctx.hasLbVip, ctx.localnetPorts));
  if (p.type === 'external') {
    externalPortFlows(p, ctx, flows);
    return flows;
  }
  if (!p.enabled) {
    flows.push(
      lflow(dp, 'ls_in_check_port_sec', 100, `inport == ${key}`, 'reg0[15] = 1; next;', lport()),
      lflow(dp, 'ls_in_l2_unknown', 50, `outport == ${key}`, ctx.drops.drop, lport()),
    );
  }
  // A vtep port's traffic (from the ramp switch) skips to the hairpin stage, then to L2 lookup
  // (or, where the gateway port facing it resides, on through ARP/ND hairpinning).
  if (p.type === 'vtep') {
    if (p.enabled) flows.push(lflow(dp, 'ls_in_check_port_sec', 70, `inport == ${key}`, `reg0[14] = 1; next(pipeline=ingress, table=${stage('ls_in_hairpin').table});`, lport()));
    flows.push(lflow(dp, 'ls_in_hairpin', 1000, 'reg0[14] == 1', `next(pipeline=ingress, table=${stage('ls_in_l2_lkup').table});`));
  }
  if (p.vtepHairpinCr !== undefined) flows.push(lflow(dp, 'ls_in_hairpin', 2000, `reg0[14] == 1 && is_chassis_resident(${jsonKey(p.vtepHairpinCr)})`, 'next;'));
  const action = p.enabled ? `outport = ${key}; output;` : ctx.drops.drop;
  // A router port's MAC is looked up only where its gateway chassis port resides, when the
  // router has a distributed gateway port there and the switch a localnet port.
  const resident = p.residentCr === undefined ? '' : ` && is_chassis_resident(${jsonKey(p.residentCr)})`;
  for (const mac of p.macs) flows.push(lflow(dp, 'ls_in_l2_lkup', 50, `eth.dst == ${mac}${p.routerPeer !== undefined && mac === p.routerPeer.mac ? resident : ''}`, action, hint));
  // Facing a distributed gateway port: the external MACs of its router's distributed NAT rules,
  // where their logical ports reside.
  const peer = p.routerPeer;
  if (peer !== undefined && p.macs.includes(peer.mac) && ctx.peerRouter?.portFacing.l3dgwPorts.includes(peer.name) === true) {
    for (const n of ctx.peerRouter.nats) {
      if (n.type !== 'dnat_and_snat' || n.logicalPort === undefined || n.externalMac === undefined) continue;
      const bytes = ethAddrFromString(n.externalMac);
      if (bytes === undefined) continue;
      const mac = bytes.map((b) => b.toString(16).padStart(2, '0')).join(':');
      flows.push(lflow(dp, 'ls_in_l2_lkup', 50, `eth.dst == ${mac} && is_chassis_resident("${n.logicalPort}")`, action, hint));
    }
  }
  if (p.routerPeer !== undefined && p.routerPeer.enabled) flows.push(...routerArpNdFlows(p, p.routerPeer, ctx, hint));
  return flows;
}

/**
 * ls_in_external_port 100 (build_drop_arp_nd_flows_for_unbound_router_ports): an external
 * port's ARP and ND requests for the switch's router ports' addresses, and its frames to their
 * MACs, coming in by a localnet port, are dropped where the port does not reside, so that the
 * router pipeline runs only on the chassis that binds it.
 */
function externalPortFlows(p: PortInfo, ctx: SwitchPortContext, flows: sb.Logical_Flow[]): void {
  const key = jsonKey(p.name);
  const drop = ctx.drops.drop;
  const ids = new StageIds();
  for (const localnet of ctx.localnetPorts) {
    const hints: FlowHints = { hint: p.nbUuid, tags: portTags(localnet), ids };
    const inport = jsonKey(localnet);
    for (const a of p.lspAddrs) {
      for (const rp of ctx.routerPorts) {
        for (const r of rp.addrs) {
          const from = `inport == ${inport} && eth.src == ${a.ea}`;
          for (const ip of r.ipv4) flows.push(lflow(ctx.dp, 'ls_in_external_port', 100, `${from} && !is_chassis_resident(${key}) && arp.tpa == ${ip.addrS} && arp.op == 1`, drop, hints));
          for (const ip of r.ipv6) {
            flows.push(lflow(ctx.dp, 'ls_in_external_port', 100, `${from} && !is_chassis_resident(${key}) && nd_ns && ip6.dst == {${ip.addrS}, ${ip.snAddrS}} && nd.target == ${ip.addrS}`, drop, hints));
          }
          flows.push(lflow(ctx.dp, 'ls_in_external_port', 100, `${from} && eth.dst == ${r.ea} && !is_chassis_resident(${key})`, drop, hints));
        }
      }
    }
  }
}

/**
 * ls_in_arp_rsp: ARP and ND replies for the port's own addresses (a router port's are its
 * peer's networks), except to the port itself; localnet ports' requests skip the stage. With
 * NB_Global options:ignore_lsp_down=false only while the port is up.
 */
function arpNdResponder(p: PortInfo, ctx: SwitchPortContext, flows: sb.Logical_Flow[], lport: () => FlowHints, hint: FlowHints): void {
  const dp = ctx.dp;
  const key = jsonKey(p.name);
  if (p.type === 'localnet') flows.push(lflow(dp, 'ls_in_arp_rsp', 100, `inport == ${key}`, 'next;', lport()));
  // A router's port and a localport answer while down too (ovn-northd's lsp_is_up reads the NB row).
  if (ctx.checkLspUp && !p.nbUp && p.type !== 'router' && p.type !== 'localport') return;
  if (p.type === 'virtual' || p.type === 'external' || p.hasUnknown || ctx.vlanPassthru) return;
  const na = p.type === 'router' ? 'nd_na_router' : 'nd_na';
  for (const a of p.lspAddrs) {
    for (const ip of a.ipv4) {
      const match = `arp.tpa == ${ip.addrS} && arp.op == 1`;
      flows.push(
        lflow(dp, 'ls_in_arp_rsp', 50, match,
          `eth.dst = eth.src; eth.src = ${a.ea}; arp.op = 2; /* ARP reply */ arp.tha = arp.sha; arp.sha = ${a.ea}; arp.tpa = arp.spa; arp.spa = ${ip.addrS}; outport = inport; flags.loopback = 1; output;`, hint),
        lflow(dp, 'ls_in_arp_rsp', 100, `${match} && inport == ${key}`, 'next;', lport()),
      );
    }
    for (const ip of a.ipv6) {
      const match = `nd_ns && ip6.dst == {${ip.addrS}, ${ip.snAddrS}} && nd.target == ${ip.addrS}`;
      flows.push(
        lflow(dp, 'ls_in_arp_rsp', 50, match,
          `${na} { eth.src = ${a.ea}; ip6.src = ${ip.addrS}; nd.target = ${ip.addrS}; nd.tll = ${a.ea}; outport = inport; flags.loopback = 1; output; };`, hint),
        lflow(dp, 'ls_in_arp_rsp', 100, `${match} && inport == ${key}`, 'next;', lport()),
      );
    }
  }
  if (p.routerPeer !== undefined) arpProxyFlow(p, p.routerPeer, dp, flows, hint);
}

/**
 * ls_in_arp_rsp 50 for a router port's options:arp_proxy (its IPv4 addresses): its router
 * port's MAC answers ARP requests for them, as if it held them.
 */
function arpProxyFlow(p: PortInfo, peer: RouterPeer, dp: readonly Uuid[], flows: sb.Logical_Flow[], hint: FlowHints): void {
  const text = p.options.get('arp_proxy');
  const ips = text === undefined ? undefined : extractIpAddresses(text)?.ipv4;
  if (ips === undefined || ips.length === 0) return;
  const ea = peer.networks.ea;
  flows.push(lflow(dp, 'ls_in_arp_rsp', 50, `arp.op == 1 && arp.tpa == {${ips.map((ip) => ip.addrS).join(',')}}`,
    `eth.dst = eth.src; eth.src = ${ea}; arp.op = 2; /* ARP reply */ arp.tha = arp.sha; arp.sha = ${ea}; arp.tpa <-> arp.spa; outport = inport; flags.loopback = 1; output;`, hint));
}

/**
 * lr_in_arp_resolve of the switch's routers: a VIF's addresses resolve to its MAC in every
 * router whose port network holds them; a router port resolves the other routers' ports on
 * the switch in its own router (unless that router learns them: dynamic_neigh_routers).
 */
function routerArpResolve(p: PortInfo, ctx: SwitchPortContext, flows: sb.Logical_Flow[], hint: FlowHints): void {
  if (!p.enabled || ctx.routerPorts.length === 0) return;
  if (p.type === 'virtual') {
    if (p.virtual !== undefined && ctx.virtualLookup !== undefined) flows.push(...virtualArpResolveFlows(p, p.virtual, ctx.routerPorts, ctx.virtualLookup, hint));
    return;
  }
  if (p.type !== 'router') {
    for (const a of p.lspAddrs) {
      for (const [ips, reg] of [[a.ipv4, 'reg0'], [a.ipv6, 'xxreg0']] as const) {
        for (const ip of ips) {
          for (const rp of ctx.routerPorts) {
            if (findLportAddress(rp.peer.networks, ip.addrS) === undefined) continue;
            flows.push(lflow(rp.routerLd, 'lr_in_arp_resolve', 100, `outport == ${jsonKey(rp.peer.name)} && ${reg} == ${ip.addrS}`, `eth.dst = ${a.ea}; next;`, hint));
          }
        }
      }
    }
    return;
  }
  const peer = p.routerPeer;
  if (p.type !== 'router' || peer === undefined || ctx.peerRouter === undefined || ctx.peerRouter.portFacing.dynamicNeighRouters) return;
  const routerLd = ctx.peerRouter.logicalDatapath;
  const peerKey = jsonKey(peer.name);
  // Another router's routable addresses (behind its distributed gateway port) resolve to their
  // MACs in a gateway router, or out of a distributed gateway port (routable_addresses_to_lflows:
  // no hint there).
  const pf = ctx.peerRouter.portFacing;
  const routablesHere = pf.isGwRouter || pf.l3dgwPorts.includes(peer.name);
  for (const rp of ctx.routerPorts) {
    if (rp.peer.name === peer.name) continue;
    const nets = rp.peer.networks;
    if (nets.ipv4.length > 0) flows.push(lflow(routerLd, 'lr_in_arp_resolve', 100, `outport == ${peerKey} && reg0 == ${v4NetworksText(nets, false)}`, `eth.dst = ${nets.ea}; next;`, hint));
    if (nets.ipv6.length > 0) flows.push(lflow(routerLd, 'lr_in_arp_resolve', 100, `outport == ${peerKey} && xxreg0 == ${v6NetworksText(nets)}`, `eth.dst = ${nets.ea}; next;`, hint));
    if (!routablesHere) continue;
    for (const r of rp.peer.routables) {
      flows.push(lflow(routerLd, 'lr_in_arp_resolve', 100, `outport == ${peerKey} && reg0 == {${r.ipv4.map((a) => a.addrS).join(', ')}}`, `eth.dst = ${r.ea}; next;`));
    }
  }
}

/**
 * Routes in this router port's router to the routable addresses of the other routers on the
 * switch (RouterPeer.routables), out of this port; dynamic_neigh_routers does not stop them.
 */
function routableRoutes(p: PortInfo, ctx: SwitchPortContext, flows: sb.Logical_Flow[]): void {
  const peer = p.routerPeer;
  if (peer === undefined || ctx.peerRouter === undefined || peer.ipv4.length === 0) return;
  let port: RouterPortFacts | undefined;
  for (const rp of ctx.routerPorts) {
    if (rp.peer.name === peer.name || rp.peer.routables.length === 0) continue;
    port ??= ctx.peerRouter.ports.find((q) => q.name === peer.name);
    if (port === undefined) return;
    flows.push(...routableRouteFlows(ctx.peerRouter.logicalDatapath, port, rp.peer.routables, ctx.drops));
  }
}

/**
 * ARP requests and ND solicitations for a router port's own addresses and its router's DNAT
 * addresses go only to that router port (priority 80), and its self-originated ones (from the
 * port's MAC or a NAT external MAC) are flooded within the L2 domain (75).
 */
function routerArpNdFlows(p: PortInfo, peer: RouterPeer, ctx: SwitchPortContext, hint: FlowHints): sb.Logical_Flow[] {
  const dp = ctx.dp;
  const key = jsonKey(p.name);
  const action = ctx.allRouter ? `outport = ${key}; output;` : `clone {outport = ${key}; output; }; outport = "_MC_flood_l2"; output;`;
  const flows: sb.Logical_Flow[] = [];
  const macs = [peer.mac];
  // The router's load balancer VIPs in this port's networks (those in none are not asked here).
  const lbIps = ctx.peerRouter?.portFacing.lbIps;
  for (const ip of lbIps?.v4 ?? []) if (findLportAddress(peer.networks, ip) !== undefined) flows.push(lflow(dp, 'ls_in_l2_lkup', 80, `flags[1] == 0 && arp.op == 1 && arp.tpa == ${ip}`, action, hint));
  for (const ip of lbIps?.v6 ?? []) if (ip.includes(':') && findLportAddress(peer.networks, ip) !== undefined) flows.push(lflow(dp, 'ls_in_l2_lkup', 80, `flags[1] == 0 && nd_ns && nd.target == ${ip}`, action, hint));
  for (const n of ctx.peerRouter?.nats ?? []) {
    if (n.ext === undefined || n.type === 'snat') continue;
    // A NAT address that is also a VIP has its flow already (its MAC still counts below).
    if ((n.ext.v6 ? lbIps?.v6 : lbIps?.v4)?.includes(n.externalIp) === true) {
      if (n.externalMac !== undefined && !macs.includes(n.externalMac)) macs.push(n.externalMac);
      continue;
    }
    const match = n.ext.v6 ? `flags[1] == 0 && nd_ns && nd.target == ${n.externalIp}` : `flags[1] == 0 && arp.op == 1 && arp.tpa == ${n.externalIp}`;
    flows.push(lflow(dp, 'ls_in_l2_lkup', 80, match, action, hint));
    if (n.externalMac !== undefined && !macs.includes(n.externalMac)) macs.push(n.externalMac);
  }
  for (const ip of peer.ipv4) flows.push(lflow(dp, 'ls_in_l2_lkup', 80, `flags[1] == 0 && arp.op == 1 && arp.tpa == ${ip}`, action, hint));
  for (const ip of peer.ipv6) flows.push(lflow(dp, 'ls_in_l2_lkup', 80, `flags[1] == 0 && nd_ns && nd.target == ${ip}`, action, hint));
  if (!ctx.allRouter) {
    // An sset in ovn-northd: printed in its hash order.
    flows.push(lflow(dp, 'ls_in_l2_lkup', 75, `eth.src == {${ssetOrder(macs).join(', ')}} && (arp.op == 1 || rarp.op == 3 || nd_ns)`, 'outport = "_MC_flood_l2"; output;'));
  }
  return flows;
}
