// Load balancer flows of a logical switch in ovn-northd 23.03's exact spelling (northd.c,
// v23.03.1: build_lb_rules_pre_stateful, build_lb_rules, build_lb_affinity_ls_flows), the
// health checks' ARP/ND responders (build_lswitch_arp_nd_service_monitor), and the SB
// Load_Balancer row (sync_lbs). Every flow carries the load balancer's stage-hint.
//
// Registers (northd.c): reg0[1] commit, reg0[2] conntrack NAT, reg1 / xxreg1 the original
// destination IP and reg2[0..15] its port (read by the chassis's hairpin flows), reg9[6] a known
// affinity session, reg4 / xxreg0 and reg8[0..15] the affinity backend.
import type { Uuid } from '../../ovsdb/index.js';
import type * as sb from '../../ovsdb/rows/sb.js';
import type { DropActions } from '../drop-sampling.js';
import type { LbFacts, LbVip } from '../load-balancers.js';
import type { RouterFacts } from '../routers.js';
import { forceSnat } from './router.js';
import { crPortName } from '../gateway-ports.js';
import { hashUuid } from '../hash.js';
import { stage } from '../stages.js';
import { versioned } from '../sb-changes.js';
import type { FlowHints } from './flow.js';
import { StageIds, jsonKey, lflow, shardOfRef, shardTemplateRef, templateLineages } from './flow.js';

/**
 * Built once per chunk of VIPs (LbFacts.chunks) and shard for a placeholder datapath, for the
 * load balancer settings the flows read (`switchLevel`); lflows/node.ts holds them in each
 * switch's datapath. A chunk the facts carried over from before keeps its templates.
 */
const TEMPLATES = new WeakMap<readonly LbVip[], { readonly level: string; readonly perShard: Map<number, readonly sb.Logical_Flow[]> }>();

/** switchLevel's answer per facts object: asked once per chunk and switch the facts apply to. */
const levels = new WeakMap<LbFacts, string>();

/** What a switch's load balancer flows read of the load balancer beyond its VIPs. */
function switchLevel(lb: LbFacts): string {
  let level = levels.get(lb);
  if (level === undefined) levels.set(lb, (level = JSON.stringify([lb.uuid, lb.proto, lb.reject, lb.event, lb.hashFields ?? null, lb.affinityTimeout])));
  return level;
}

/**
 * The flows the VIPs of `chunk` (one of `lb.chunks`) give the switch whose logical_datapath value
 * is `ld`: its shard's frozen templates, to be held in `ld`. `drops`: the drop action texts.
 */
export function lbSwitchFlows(ld: readonly Uuid[], lb: LbFacts, chunk: readonly LbVip[], index: number, drops: DropActions): readonly sb.Logical_Flow[] {
  const shard = shardOfRef(ld);
  // The chunk's place is part of its templates' lineage: a chunk carried over to another place
  // (other VIPs came or went) gets templates of its new lineage, as a full run makes them. The
  // drop action is not: turning drop sampling on or off changes the flows of VIPs that drop only.
  const level = `${switchLevel(lb)} ${lb.chunks.length} ${index} ${drops.drop}`;
  let cached = TEMPLATES.get(chunk);
  if (cached === undefined || cached.level !== level) TEMPLATES.set(chunk, (cached = { level, perShard: new Map() }));
  let template = cached.perShard.get(shard);
  if (template === undefined) {
    cached.perShard.set(shard, (template = Object.freeze(buildLbSwitchFlows(shardTemplateRef(shard), lb, chunk, drops))));
    // Chunk `index` of this load balancer in this shard, whatever VIPs it holds now.
    templateLineages.set(template, `lb ${lb.uuid} ${lb.chunks.length} ${index} ${shard}`);
  }
  return template;
}

/**
 * The flow that reports a packet to a VIP without backends as an empty_lb_backends controller
 * event (build_empty_lb_event_flow): ls_in_pre_lb and lr_in_dnat at priority 130, CoPP meter
 * event-elb (copp.ts). None unless the load balancer asks for events, and none for a VIP that
 * has backends (whether or not any is healthy) or that rejects.
 */
function emptyLbEvent(lb: LbFacts, v: LbVip): { match: string; action: string } | undefined {
  if (!lb.event || v.backends.length > 0 || lb.reject) return undefined;
  const ip = v.v6 ? 'ip6' : 'ip4';
  const l4 = v.port === undefined ? '' : ` && ${lb.proto}.dst == ${v.port}`;
  const vip = v.port === undefined ? v.ip : v.v6 ? `[${v.ip}]:${v.port}` : `${v.ip}:${v.port}`;
  return {
    match: `${ip}.dst == ${v.ip} && ${lb.proto}${l4}`,
    action: `trigger_event(event = "empty_lb_backends", vip = "${vip}", protocol = "${lb.proto}", load_balancer = "${lb.uuid}");`,
  };
}

/** A backend as the affinity flows spell one: "ip:port" or "[ip6]:port" (a template's: its address alone). */
function backendText(v6: boolean, ip: string, port: number): string {
  if (port === 0) return ip;
  return v6 ? `[${ip}]:${port}` : `${ip}:${port}`;
}

/**
 * The backends ct_lb_mark chooses from (build_lb_vip_actions): the column as written, or for a
 * health-checked VIP its active backends each as "ip:port" ("[ip6]:port"), port 0 included;
 * undefined when there are none (the VIP drops or rejects).
 */
function ctLbBackends(v: LbVip): string | undefined {
  if (v.active === undefined) return v.backends.length === 0 ? undefined : v.backendsText;
  if (v.active.length === 0) return undefined;
  return v.active.map((b) => (v.v6 ? `[${b.ip}]:${b.port}` : `${b.ip}:${b.port}`)).join(',');
}

/** The ls_in_lb action for a new connection to a VIP (build_lb_vip_actions for a switch). */
function lbAction(lb: LbFacts, v: LbVip, drops: DropActions): string {
  const backends = ctLbBackends(v);
  if (backends === undefined) {
    if (lb.reject) return `reg0 = 0; reject { outport <-> inport; next(pipeline=egress,table=${stage('ls_out_qos_mark').table});};`;
    return drops.drop;
  }
  const hash = lb.hashFields !== undefined && lb.hashFields !== '' ? `; hash_fields="${lb.hashFields}"` : '';
  return `reg0[1] = 0; ct_lb_mark(backends=${backends}${hash});`;
}

function buildLbSwitchFlows(ld: readonly Uuid[], lb: LbFacts, chunk: readonly LbVip[], drops: DropActions): sb.Logical_Flow[] {
  const flows: sb.Logical_Flow[] = [];
  const hint: FlowHints = { hint: lb.uuid, ids: new StageIds() };
  for (const v of chunk) {
    const ip = v.v6 ? 'ip6' : 'ip4';
    const l4 = v.port === undefined ? '' : ` && ${lb.proto}.dst == ${v.port}`;
    // Pre-stateful: keep the original destination for the hairpin flows, then conntrack.
    const keep = `${v.v6 ? 'xxreg1' : 'reg1'} = ${v.ip}; ${v.port === undefined ? '' : `reg2[0..15] = ${v.port}; `}ct_lb_mark;`;
    flows.push(lflow(ld, 'ls_in_pre_stateful', 120, `reg0[2] == 1 && ${ip}.dst == ${v.ip}${l4}`, keep, hint));
    const event = emptyLbEvent(lb, v);
    if (event !== undefined) flows.push(lflow(ld, 'ls_in_pre_lb', 130, event.match, event.action, hint));
    affinityFlows(ld, lb, v, hint, flows);
    flows.push(lflow(ld, 'ls_in_lb', v.port === undefined ? 110 : 120, `ct.new && ${ip}.dst == ${v.ip}${l4}`, lbAction(lb, v, drops), hint));
  }
  return flows;
}

/** Session affinity (options:affinity_timeout): check, reuse the backend chosen, learn it. */
function affinityFlows(ld: readonly Uuid[], lb: LbFacts, v: LbVip, hint: FlowHints, flows: sb.Logical_Flow[]): void {
  if (lb.affinityTimeout === 0) return;
  // These flows take the family from the parsed address (a template's reads as IPv6).
  const v6 = v.addrV6;
  const ip = v6 ? 'ip6' : 'ip4';
  const regVip = v6 ? 'xxreg1' : 'reg1';
  const regBackend = v6 ? 'xxreg0' : 'reg4';
  const portMatch = v.port === undefined ? '' : ` && reg2[0..15] == ${v.port}`;
  flows.push(lflow(ld, 'ls_in_lb_aff_check', 100, `ct.new && ${ip} && ${regVip} == ${v.ip}${portMatch}`, 'reg9[6] = chk_lb_aff(); next;', hint));
  const vipText = v.port === undefined ? v.ip : v6 ? `[${v.ip}]:${v.port}` : `${v.ip}:${v.port}`;
  const actionHead = `reg0[1] = 0; ${regVip} = ${v.ip}; ${v.port === undefined ? '' : `reg2[0..15] = ${v.port}; `}ct_lb_mark(backends=`;
  const learnMatchHead = v.port === undefined
    ? `reg9[6] == 0 && ct.new && ${ip} && ${regVip} == ${v.ip} && ${ip}.dst == `
    : `reg9[6] == 0 && ct.new && ${ip} && ${regVip} == ${v.ip} && reg2[0..15] == ${v.port} && ${ip}.dst == `;
  for (const b of v.backends) {
    const backend = backendText(v6, b.ip, b.port);
    const learnMatch = `${learnMatchHead}${b.ip}${b.port === 0 ? '' : ` && ${lb.proto}.dst == ${b.port}`}`;
    const learn = `commit_lb_aff(vip = "${vipText}", backend = "${backend}"${v.port === undefined ? '' : `, proto = ${lb.proto}`}, timeout = ${lb.affinityTimeout}); /* drop */`;
    flows.push(lflow(ld, 'ls_in_lb_aff_learn', 100, learnMatch, learn, hint));
    const match = `reg9[6] == 1 && ct.new && ${ip} && ${regBackend} == ${b.ip}${b.port === 0 ? '' : ` && reg8[0..15] == ${b.port}`}`;
    flows.push(lflow(ld, 'ls_in_lb', 150, match, `${actionHead}${backend});`, hint));
  }
}

/** How a router's connections to a VIP are SNATed: the load balancer's skip_snat, else the router's lb_force_snat_ip. */
type RouterLbKind = 'normal' | 'skip' | 'force';

function routerForcesSnat(r: RouterFacts): boolean {
  return r.portFacing.lbForceSnatRouterIp || forceSnat(r, 'lb_force_snat_ip').length > 0;
}

/** What of a router its load balancers' flows read, as one text: equal texts, equal flows. */
export function routerLbContext(r: RouterFacts | undefined): string {
  if (r === undefined) return '';
  return `${String(routerForcesSnat(r))} ${r.portFacing.l3dgwPorts[0] ?? ''} ${[...new Set(r.nats.map((n) => n.externalIp))].sort().join(',')}`;
}

/** The lr_in_dnat action for a new connection to a VIP (build_lb_vip_actions for a router). */
function routerLbAction(lb: LbFacts, v: LbVip, kind: RouterLbKind, drops: DropActions): string {
  let base: string;
  let isLb = false;
  const backends = ctLbBackends(v);
  if (backends === undefined) {
    base = lb.reject ? `reg0 = 0; reject { outport <-> inport; next(pipeline=egress,table=${stage('lr_out_snat').table});};` : drops.drop;
  } else {
    isLb = true;
    const hash = lb.hashFields !== undefined && lb.hashFields !== '' ? `; hash_fields="${lb.hashFields}"` : '';
    base = `ct_lb_mark(backends=${backends}${hash}`;
  }
  if (kind === 'normal') return isLb ? `${base});` : base;
  const flag = kind === 'skip' ? 'skip_snat' : 'force_snat';
  return `flags.${flag}_for_lb = 1; ${base}${isLb ? `; ${flag});` : ''}`;
}

/**
 * The flows the VIPs of `chunk` (one of `lb.chunks`) give router `r`, and with `first` (chunk 0)
 * the load balancer's own that no VIP makes (build_lrouter_defrag_flows_for_lb,
 * build_lrouter_nat_flows_for_lb, the router affinity flows, and the skip_snat exemption). On
 * a router with distributed gateway ports the new connections are load balanced on the
 * gateway chassis of the first one (is_chassis_resident of its chassisredirect port, unless
 * the VIP rejects for want of backends), and the backends' replies leaving by that port are
 * unDNATed there (build_distr_lrouter_nat_flows_for_lb). `drops`: the drop action texts.
 */
export function lbRouterFlows(r: RouterFacts, lb: LbFacts, chunk: readonly LbVip[], first: boolean, drops: DropActions): sb.Logical_Flow[] {
  const ld = r.logicalDatapath;
  const flows: sb.Logical_Flow[] = [];
  const hint: FlowHints = { hint: lb.uuid, ids: new StageIds() };
  const force = routerForcesSnat(r);
  const kind: RouterLbKind = lb.skipSnat ? 'skip' : force ? 'force' : 'normal';
  const dgp = r.portFacing.l3dgwPorts[0];
  const externalIps = new Set(r.nats.map((n) => n.externalIp));
  for (const v of chunk) {
    const ip = v.v6 ? 'ip6' : 'ip4';
    flows.push(lflow(ld, 'lr_in_defrag', 100, `ip && ${ip}.dst == ${v.ip}`, 'ct_dnat;', hint));
    const l4 = v.port === undefined ? '' : ` && ${lb.proto} && ${lb.proto}.dst == ${v.port}`;
    const match = `ct.new && !ct.rel && ${ip} && ${ip}.dst == ${v.ip}${l4}`;
    const resident = dgp === undefined ? '' : ` && is_chassis_resident(${jsonKey(crPortName(dgp))})`;
    const dnatMatch = dgp !== undefined && (v.backends.length > 0 || !lb.reject) ? `${match}${resident}` : match;
    flows.push(lflow(ld, 'lr_in_dnat', v.port === undefined ? 110 : 120, dnatMatch, routerLbAction(lb, v, kind, drops), hint));
    if (dgp !== undefined && v.backends.length > 0) {
      const fromBackends = v.backends.map((b) => `(${ip}.src == ${b.ip}${b.portStr === undefined ? '' : ` && ${lb.proto}.src == ${b.portStr}`})`).join(' || ');
      const undnat = kind === 'force' ? 'flags.force_snat_for_lb = 1; next;' : kind === 'skip' ? 'flags.skip_snat_for_lb = 1; next;' : 'ct_dnat_in_czone;';
      flows.push(lflow(ld, 'lr_out_undnat', 120, `${ip} && (${fromBackends}) && outport == ${jsonKey(dgp)}${resident}`, undnat, hint));
    }
    // A VIP that is also a NAT external address: its packets skip unSNAT.
    if (externalIps.has(v.ip)) {
      flows.push(lflow(ld, 'lr_in_unsnat', 120, `${ip} && ${ip}.dst == ${v.ip} && ${lb.proto}${v.port === undefined ? '' : ` && ${lb.proto}.dst == ${v.port}`}`, 'next;', hint));
    }
    routerAffinityFlows(ld, lb, v, match, force ? 'force' : lb.skipSnat ? 'skip' : 'normal', hint, flows);
    const event = emptyLbEvent(lb, v);
    if (event !== undefined) flows.push(lflow(ld, 'lr_in_dnat', 130, event.match, event.action, hint));
  }
  if (first && lb.skipSnat) flows.push(lflow(ld, 'lr_out_snat', 120, 'flags.skip_snat_for_lb == 1 && ip', 'next;'));
  return flows;
}

/** Session affinity on a router (build_lb_affinity_lr_flows). */
function routerAffinityFlows(ld: readonly Uuid[], lb: LbFacts, v: LbVip, newMatch: string, kind: RouterLbKind, hint: FlowHints, flows: sb.Logical_Flow[]): void {
  if (lb.affinityTimeout === 0) return;
  const v6 = v.addrV6;
  const ip = v6 ? 'ip6' : 'ip4';
  const regVip = v6 ? 'xxreg0' : 'reg0';
  const regBackend = v6 ? 'xxreg1' : 'reg4';
  const flag = kind === 'skip' ? 'flags.skip_snat_for_lb = 1; ' : kind === 'force' ? 'flags.force_snat_for_lb = 1; ' : '';
  const ctFlag = kind === 'skip' ? '; skip_snat' : kind === 'force' ? '; force_snat' : '';
  const check = `${regVip} = ${ip}.dst; ${v.port === undefined ? '' : `reg9[16..31] = ${lb.proto}.dst; `}reg9[6] = chk_lb_aff(); next;`;
  flows.push(lflow(ld, 'lr_in_lb_aff_check', 100, newMatch, check, hint));
  const vipText = v.port === undefined ? v.ip : v6 ? `[${v.ip}]:${v.port}` : `${v.ip}:${v.port}`;
  const learnHead = v.port === undefined
    ? `reg9[6] == 0 && ct.new && ${ip} && ${regVip} == ${v.ip} && ${ip}.dst == `
    : `reg9[6] == 0 && ct.new && ${ip} && ${regVip} == ${v.ip} && reg9[16..31] == ${v.port} && ${ip}.dst == `;
  for (const b of v.backends) {
    const backend = backendText(v6, b.ip, b.port);
    const learn = `commit_lb_aff(vip = "${vipText}", backend = "${backend}"${v.port === undefined ? '' : `, proto = ${lb.proto}`}, timeout = ${lb.affinityTimeout}); /* drop */`;
    flows.push(lflow(ld, 'lr_in_lb_aff_learn', 100, `${learnHead}${b.ip}${b.port === 0 ? '' : ` && ${lb.proto}.dst == ${b.port}`}`, learn, hint));
    const match = `reg9[6] == 1 && ct.new && ${ip} && ${regBackend} == ${b.ip}${b.port === 0 ? '' : ` && reg8[0..15] == ${b.port}`}`;
    flows.push(lflow(ld, 'lr_in_dnat', 150, match, `${regVip} = ${v.ip}; ${flag}ct_lb_mark(backends=${backend}${ctFlag});`, hint));
  }
}

/**
 * The ARP/ND responders for the source IPs of a load balancer's health checks, in the switches
 * of the monitored ports (build_lswitch_arp_nd_service_monitor): the chassis's probes come from
 * svc_monitor_mac and that IP, and the backend resolves it here. `ldOf` gives a switch's
 * logical_datapath value (undefined: the switch is gone).
 */
export function lbSvcArpFlows(lb: LbFacts, ldOf: (dp: Uuid) => readonly Uuid[] | undefined): sb.Logical_Flow[] {
  const flows: sb.Logical_Flow[] = [];
  const hint: FlowHints = { hint: lb.uuid, ids: new StageIds() };
  const mac = lb.svcMac;
  for (const a of lb.svcArp) {
    const ld = ldOf(a.dp);
    if (ld === undefined) continue;
    if (!a.v6) {
      const actions = `eth.dst = eth.src; eth.src = ${mac}; arp.op = 2; /* ARP reply */ arp.tha = arp.sha; arp.sha = ${mac}; arp.tpa = arp.spa; arp.spa = ${a.srcIp}; outport = inport; flags.loopback = 1; output;`;
      flows.push(lflow(ld, 'ls_in_arp_rsp', 110, `arp.tpa == ${a.srcIp} && arp.op == 1`, actions, hint));
    } else {
      const actions = `nd_na { eth.dst = eth.src; eth.src = ${mac}; ip6.src = ${a.srcIp}; nd.target = ${a.srcIp}; nd.tll = ${mac}; outport = inport; flags.loopback = 1; output; };`;
      flows.push(lflow(ld, 'ls_in_arp_rsp', 110, `nd_ns && nd.target == ${a.srcIp}`, actions, hint));
    }
  }
  return flows;
}

/** The SB Load_Balancer row's UUID: a function of the NB row's, as every replica derives it. */
export function sbLoadBalancerUuid(nbUuid: Uuid): Uuid {
  return hashUuid(['Load_Balancer', nbUuid]);
}

/** The SB Load_Balancer row of a load balancer applied to the switches of `group` (sync_lbs). */
export function sbLoadBalancer(lb: LbFacts, group: Uuid): sb.Load_Balancer {
  const entries: [string, string][] = [...lb.options];
  if (!lb.options.has('hairpin_orig_tuple')) entries.push(['hairpin_orig_tuple', 'true']);
  const options = new Map(entries.map(([k, v]): [string, string] => [k, k === 'hairpin_orig_tuple' ? 'true' : v]).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  return versioned<sb.Load_Balancer>({
    _uuid: sbLoadBalancerUuid(lb.uuid), _version: '', name: lb.name, vips: lb.sbVips, protocol: lb.protocol, datapaths: NO_UUIDS,
    datapath_group: [group], options, external_ids: new Map([['lb_id', lb.uuid]]),
  });
}

const NO_UUIDS: readonly Uuid[] = Object.freeze([]);
