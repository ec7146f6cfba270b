// Logical router flows in ovn-northd 23.03's exact spelling (northd.c, v23.03.1; checked
// against the real 23.03.1 by tests/northd/differential-real-northd.test.ts). One small pure
// function per stage or per kind of NB row; `routerDatapathFlows` gathers what a router owns
// itself (defaults, neighbor learning, static routes, policies, NAT), `routerPortFlows` what
// one of its ports owns (admission, neighbor lookup, connected routes, IP input, delivery).
//
// Register names (northd.c): reg9[2]/reg9[3] neighbor lookup results, reg9[0] egress loopback,
// reg9[1] packet larger than the gateway MTU, reg9[4] DNAT-local, xreg0[0..47] the inport's
// MAC, reg0/xxreg0 the IPv4/IPv6 next hop, reg1/xxreg1 the source IP, reg7 the route table,
// reg8[0..15]/reg8[16..31] ECMP group/member.
//
// Load balancers' router flows are in lb.ts; CoPP meters are put on the flows as the lflows node
// takes them in (copp.ts).
import type { Uuid } from '../../ovsdb/index.js';
import type * as sb from '../../ovsdb/rows/sb.js';
import type { LportAddresses } from '../netaddr.js';
import { ethAddrFromString, findLportAddress, ipv4Text, parseIpv4Cidr, parseIpv6Cidr, solicitedNodeMac, v4NetworksText, v6NetworksText } from '../netaddr.js';
import { formatIpv6 } from '../addresses.js';
import type { ParsedPrefix, RouteText } from '../static-routes.js';
import { parseRouteText, staticRouteOutport } from '../static-routes.js';
import { BFD_DST_PORT, bfdStatusOf } from '../bfd.js';
import type { DropActions } from '../drop-sampling.js';
import { crPortName } from '../gateway-ports.js';
import { chunkCount, chunkOfKey } from '../hash.js';
import { optionInt } from '../nb.js';
import type { NatFacts, PolicyFacts, RouterFacts, RouterPortFacts, StaticRouteFacts } from '../routers.js';
import type { StageName } from '../stages.js';
import { stage } from '../stages.js';
import type { FlowHints } from './flow.js';
import { StageIds, jsonKey, lflow } from './flow.js';

const NEXT = 'next;';
const INPORT_ETH = 'xreg0[0..47]';
const EGRESS_LOOPBACK_BIT = 'reg9[0]';
const PKT_LARGER = 'reg9[1]';
const ECMP_GROUP = 'reg8[0..15]';
const ECMP_MEMBER = 'reg8[16..31]';
const PRIO_MULTIPLIER = 3;
const PRIO_STATIC = 1;
const PRIO_CONNECTED = 2;

/** Adds one flow to the flows being built; `drop` is the drop action text in force (drop-sampling.ts). */
interface Emit {
  (stage: StageName, priority: number, match: string, actions: string, hint?: Uuid): void;
  readonly drop: string;
}

function emitterOf(ld: readonly Uuid[], flows: sb.Logical_Flow[], drops: DropActions): Emit {
  const ids = new StageIds();
  const emit = (stage: StageName, priority: number, match: string, actions: string, hint?: Uuid): void => {
    flows.push(lflow(ld, stage, priority, match, actions, hint === undefined ? undefined : ({ hint, ids } satisfies FlowHints)));
  };
  return Object.assign(emit, { drop: drops.drop });
}


// ---------------------------------------------------------------------------------------------
// Flows a router owns itself.

/**
 * Every flow of the router datapath itself (not of one of its ports), but for the chunks of
 * its static routes' flows when `plan` has them (RoutePlan). `drops`: the drop action texts.
 */
export function routerDatapathFlows(r: RouterFacts, drops: DropActions, plan: RoutePlan = planRoutes(r, drops)): sb.Logical_Flow[] {
  const flows: sb.Logical_Flow[] = [];
  const f = emitterOf(r.logicalDatapath, flows, drops);
  admission(f);
  neighborLearning(f, r.portFacing.learnFromArpRequest);
  f('lr_in_nd_ra_options', 0, '1', NEXT);
  f('lr_in_nd_ra_response', 0, '1', NEXT);
  f('lr_in_ip_routing_pre', 0, '1', 'reg7 = 0; next;');
  staticRoutes(f, r, plan);
  f('lr_in_ip_routing', 10550, 'nd_rs || nd_ra', f.drop);
  policies(f, r);
  f('lr_in_arp_resolve', 500, 'ip4.mcast || ip6.mcast', NEXT);
  f('lr_in_arp_resolve', 1, 'ip4', 'get_arp(outport, reg0); next;');
  f('lr_in_arp_resolve', 1, 'ip6', 'get_nd(outport, xxreg0); next;');
  f('lr_in_arp_resolve', 0, '1', f.drop);
  checkPktLen(f, r);
  gatewayRedirect(f, r);
  arpRequest(f, r);
  localTrafficDrops(f, r.portFacing.mcastRelay);
  natArpNd(f, r);
  gatewayPortNatArpNd(f, r);
  natDefaults(f, r);
  natRules(f, r);
  f('lr_in_lb_aff_check', 0, '1', NEXT);
  f('lr_in_lb_aff_learn', 0, '1', NEXT);
  return flows;
}

function admission(f: Emit): void {
  f('lr_in_admission', 100, 'vlan.present || eth.src[40]', f.drop);
  f('lr_in_admission', 0, '1', f.drop);
}

/** lr_in_lookup_neighbor and lr_in_learn_neighbor (options:always_learn_from_arp_request). */
function neighborLearning(f: Emit, learn: boolean): void {
  const ipResult = learn ? '' : 'reg9[3] = 1; ';
  f('lr_in_lookup_neighbor', 100, 'arp.op == 2', `reg9[2] = lookup_arp(inport, arp.spa, arp.sha); ${ipResult}next;`);
  f('lr_in_lookup_neighbor', 100, 'nd_na', `reg9[2] = lookup_nd(inport, nd.target, nd.tll); ${ipResult}next;`);
  if (!learn) {
    f('lr_in_lookup_neighbor', 110, 'nd_na && ip6.src == fe80::/10 && ip6.dst == ff00::/8', 'reg9[2] = lookup_nd(inport, ip6.src, nd.tll); reg9[3] = lookup_nd_ip(inport, ip6.src); next;');
  }
  f('lr_in_lookup_neighbor', 100, 'nd_ns', `reg9[2] = lookup_nd(inport, ip6.src, nd.sll); ${learn ? '' : 'reg9[3] = lookup_nd_ip(inport, ip6.src); '}next;`);
  f('lr_in_lookup_neighbor', 0, '1', 'reg9[2] = 1; next;');
  f('lr_in_learn_neighbor', 100, `reg9[2] == 1${learn ? '' : ' || reg9[3] == 0'}`, NEXT);
  f('lr_in_learn_neighbor', 90, 'arp', 'put_arp(inport, arp.spa, arp.sha); next;');
  f('lr_in_learn_neighbor', 95, 'nd_ns && (ip6.src == 0 || nd.sll == 0)', NEXT);
  f('lr_in_learn_neighbor', 95, 'nd_na && nd.tll == 0', 'put_nd(inport, nd.target, eth.src); next;');
  f('lr_in_learn_neighbor', 90, 'nd_na', 'put_nd(inport, nd.target, nd.tll); next;');
  f('lr_in_learn_neighbor', 90, 'nd_ns', 'put_nd(inport, ip6.src, nd.sll); next;');
  f('lr_in_learn_neighbor', 0, '1', f.drop);
}

function localTrafficDrops(f: Emit, relay: boolean): void {
  f('lr_in_ip_input', 100, 'ip4.src_mcast ||ip4.src == 255.255.255.255 || ip4.src == 127.0.0.0/8 || ip4.dst == 127.0.0.0/8 || ip4.src == 0.0.0.0/8 || ip4.dst == 0.0.0.0/8', f.drop);
  f('lr_in_ip_input', 85, 'arp || nd', f.drop);
  f('lr_in_ip_input', 84, 'nd_rs || nd_ra', NEXT);
  f('lr_in_ip_input', 83, 'ip6.mcast_rsvd', f.drop);
  // Other multicast goes on to routing when the router relays it.
  f('lr_in_ip_input', 82, 'ip4.mcast || ip6.mcast', relay ? NEXT : f.drop);
  f('lr_in_ip_input', 50, 'eth.bcast', f.drop);
  f('lr_in_ip_input', 32, 'ip.ttl == {0, 1} && !ip.later_frag && (ip4.mcast || ip6.mcast)', f.drop);
  f('lr_in_ip_input', 30, 'ip.ttl == {0, 1}', f.drop);
  f('lr_in_ip_input', 0, '1', NEXT);
}

// --- Routing ---------------------------------------------------------------------------------

/** Route table ids: from 1, in order of first use, ports' options:route_table first. */
class RouteTables {
  private readonly ids = new Map<string, number>();
  id(name: string): number {
    if (name === '') return 0;
    let id = this.ids.get(name);
    if (id === undefined) this.ids.set(name, (id = this.ids.size + 1));
    return id;
  }
}

function routeMatch(inport: string | undefined, rtbId: number, network: string, plen: number, srcRoute: boolean, v4: boolean, offset: number): { match: string; priority: number } {
  const ofs = srcRoute ? 0 : offset;
  let match = inport === undefined ? '' : `inport == ${jsonKey(inport)} && `;
  if (rtbId !== 0 || ofs === PRIO_STATIC) match += `reg7 == ${rtbId} && `;
  match += `ip${v4 ? '4' : '6'}.${srcRoute ? 'src' : 'dst'} == ${network}/${plen}`;
  return { match, priority: plen * PRIO_MULTIPLIER + ofs };
}

/** The port and source address a static route leaves by (find_static_route_outport). */
function routeOutport(r: RouterFacts, route: StaticRouteFacts, v4: boolean): { port: RouterPortFacts; addr: string } | undefined {
  return staticRouteOutport(r.ports, route.outputPort, route.nexthop, v4);
}

/** One route's flow in lr_in_ip_routing (add_route). */
function addRoute(f: Emit, port: RouterPortFacts | undefined, srcAddr: string | undefined, network: string, plen: number, gateway: string, srcRoute: boolean, rtbId: number, hint: Uuid, discard: boolean, offset: number, lla: boolean): void {
  const v4 = network.includes('.');
  const { match, priority } = routeMatch(!v4 && lla ? port?.name : undefined, rtbId, network, plen, srcRoute, v4, offset);
  if (discard || port === undefined) {
    f('lr_in_ip_routing', priority, match, f.drop, hint);
    return;
  }
  const nh = gateway !== '' ? gateway : v4 ? 'ip4.dst' : 'ip6.dst';
  const common = `${ECMP_GROUP} = 0; ${v4 ? 'reg0' : 'xxreg0'} = ${nh}; ${v4 ? 'reg1' : 'xxreg1'} = ${srcAddr ?? ''}; eth.src = ${port.networks.ea}; outport = ${jsonKey(port.name)}; flags.loopback = 1; next;`;
  f('lr_in_ip_routing', priority, match, `ip.ttl--; ${common}`, hint);
  // The port's BFD messages (the chassis sends them in as if they came in by the port) leave
  // with their TTL of 255 kept, as RFC 5881 asks.
  if (port.hasBfd) f('lr_in_ip_routing', priority + 1, `${match} && udp.dst == ${BFD_DST_PORT}`, common, hint);
}

/**
 * Routes in `port`'s router to another router's routable addresses (RouterPeer.routables: NAT
 * external IPs and load balancer VIPs with add_route, behind a distributed gateway port on the
 * same switch), out of `port` from its first IPv4 address, as connected routes
 * (build_ip_routing_flows_for_lrouter_port for a router's switch port). IPv4 only, as there.
 */
export function routableRouteFlows(ld: readonly Uuid[], port: RouterPortFacts, routables: readonly LportAddresses[], drops: DropActions): sb.Logical_Flow[] {
  const src = port.networks.ipv4[0];
  if (src === undefined) return [];
  const flows: sb.Logical_Flow[] = [];
  const f = emitterOf(ld, flows, drops);
  for (const r of routables) for (const a of r.ipv4) addRoute(f, port, src.addrS, a.networkS, a.plen, '', false, 0, port.nbUuid, false, PRIO_CONNECTED, false);
  return flows;
}

interface ParsedRoute {
  readonly route: StaticRouteFacts;
  readonly prefix: ParsedPrefix;
  readonly rtbId: number;
  readonly discard: boolean;
}

/** Routes of one (prefix, policy, table): an ECMP group when more than one. */
interface RouteGroup {
  readonly members: readonly ParsedRoute[];
  /** Its ECMP group id (numbered across the router, in group order); 0 for a unique route. */
  readonly ecmpId: number;
  /** Its flows' prefix (`network/plen`): groups whose flows may coincide share it, and so a chunk. */
  readonly flowPrefix: string;
}

/** One chunk of a router's static route flows, an owner of its own (lflows/node.ts). */
export interface RouteChunk {
  /** What its flows are made of: equal element by element (===), the flows are the same. */
  readonly signature: readonly unknown[];
  readonly flows: readonly sb.Logical_Flow[];
}

/**
 * A router's static routes parsed, grouped and numbered as ovn-northd does, and, past
 * `routeChunkLimits.groupsMin` groups, dealt into chunks by their flows' prefix: one route added
 * to a router of thousands then builds and compares one chunk's flows, not all of them.
 */
export interface RoutePlan {
  readonly groups: readonly RouteGroup[];
  /** Route table id of each port with options:route_table (for lr_in_ip_routing_pre). */
  readonly portTables: readonly (readonly [string, number])[];
  /** The chunks of the routes' flows; empty when they are few and stay with the router's own. */
  readonly chunks: readonly RouteChunk[];
}

/** When a router's static route flows are held in chunks, and how many (a power of two). Tests lower them. */
export const routeChunkLimits = { groupsMin: 64, groupsPerChunk: 16, chunksMax: 256 };

/**
 * The router's route plan, reusing `previous`'s chunks whose routes, ECMP ids, route tables,
 * router ports and drop action (`drops`) are as they were (the same flows array, which its owner
 * then leaves alone).
 */
export function planRoutes(r: RouterFacts, drops: DropActions, previous?: RoutePlan): RoutePlan {
  const tables = new RouteTables();
  const portTables: (readonly [string, number])[] = [];
  for (const p of r.ports) {
    const id = tables.id(p.options.get('route_table') ?? '');
    if (id !== 0) portTables.push([p.name, id]);
  }
  // Parse and validate (parsed_routes_add), then group by (prefix, plen, policy, table). A group
  // is numbered when its second route comes, in the routes' order, as ovn-northd creates an ECMP
  // group on meeting a route whose prefix an earlier one has: with routes A, B, B, A (by UUID),
  // B's group is 1 and A's 2.
  const byKey = new Map<string, ParsedRoute[]>();
  const ecmpIds = new Map<string, number>();
  for (const route of r.routes) {
    const text = routeText(route);
    if (text === undefined) continue;
    const { prefix, discard } = text;
    if (!discard && routeOutport(r, route, prefix.v4) === undefined) continue;
    // A route watched by BFD is out while its session is down.
    if (route.bfd !== undefined && route.bfd.dstIp === route.nexthop && bfdStatusOf(route.bfd.status, true) === 'down') continue;
    const parsed: ParsedRoute = { route, prefix, rtbId: tables.id(route.routeTable), discard };
    const key = `${prefix.key} ${route.srcIp} ${parsed.rtbId}`;
    const g = byKey.get(key);
    if (g === undefined) byKey.set(key, [parsed]);
    else if (g.push(parsed) === 2) ecmpIds.set(key, ecmpIds.size + 1);
  }
  const groups: RouteGroup[] = [];
  for (const [key, members] of byKey) {
    const first = members[0] as ParsedRoute;
    groups.push({ members, ecmpId: ecmpIds.get(key) ?? 0, flowPrefix: `${first.prefix.network}/${first.prefix.plen}` });
  }
  if (groups.length < routeChunkLimits.groupsMin) return { groups, portTables, chunks: [] };
  const count = chunkCount(groups.length, { min: 0, per: routeChunkLimits.groupsPerChunk, max: routeChunkLimits.chunksMax });
  const dealt: RouteGroup[][] = Array.from({ length: count }, () => []);
  for (const g of groups) (dealt[chunkOfKey(g.flowPrefix, count)] as RouteGroup[]).push(g);
  // Route flows read the router's ports (output port, its addresses, MAC and key) and chassis.
  const ports = r.ports.map((p) => `${p.name} ${p.key} ${p.hasBfd} ${p.networks.ea} ${p.networks.ipv4.map((a) => `${a.addrS}/${a.plen}`).join(',')} ${p.networks.ipv6.map((a) => `${a.addrS}/${a.plen}`).join(',')}`).join(' | ');
  const reuse = previous !== undefined && previous.chunks.length === count ? previous.chunks : undefined;
  const chunks = dealt.map((chunkGroups, i): RouteChunk => {
    const signature: unknown[] = [ports, r.chassis, r.logicalDatapath, drops.drop];
    for (const g of chunkGroups) {
      signature.push(g.ecmpId, g.members.length);
      for (const m of g.members) signature.push(m.route, m.rtbId);
    }
    const old = reuse?.[i];
    if (old !== undefined && old.signature.length === signature.length && old.signature.every((x, j) => x === signature[j])) return old;
    const flows: sb.Logical_Flow[] = [];
    const f = emitterOf(r.logicalDatapath, flows, drops);
    for (const g of chunkGroups) routeGroupFlows(f, r, g);
    return { signature, flows: Object.freeze(flows) };
  });
  return { groups, portTables, chunks };
}

/** What a route's own text says (parsed_routes_add): its prefix, and whether it discards; undefined when it is not valid. */
function routeText(route: StaticRouteFacts): RouteText | undefined {
  const known = routeTexts.get(route);
  if (known !== undefined) return known ?? undefined;
  const parsed = parseRouteText(route.nexthop, route.ipPrefix);
  routeTexts.set(route, parsed ?? null);
  return parsed;
}

/** routeText by route facts, which stay the same object while the NB row does (routers.ts). */
const routeTexts = new WeakMap<StaticRouteFacts, RouteText | null>();

/** Static routes: ECMP groups (same prefix, policy and table) and unique routes; the groups' own flows here only when not chunked. */
function staticRoutes(f: Emit, r: RouterFacts, plan: RoutePlan): void {
  f('lr_in_ip_routing_ecmp', 0, '1', f.drop);
  f('lr_in_ip_routing', 0, '1', f.drop);
  f('lr_in_ip_routing_ecmp', 150, `${ECMP_GROUP} == 0`, NEXT);
  for (const [port, id] of plan.portTables) f('lr_in_ip_routing_pre', 100, `inport == ${jsonKey(port)}`, `reg7 = ${id}; next;`);
  if (plan.chunks.length === 0) for (const g of plan.groups) routeGroupFlows(f, r, g);
}

/** The flows of one route group: a unique route's, or an ECMP group's selection and members. */
function routeGroupFlows(f: Emit, r: RouterFacts, g: RouteGroup): void {
  const members = g.members;
  const first = members[0] as ParsedRoute;
  const offset = first.route.options.get('origin') === 'connected' ? PRIO_CONNECTED : PRIO_STATIC;
  if (members.length === 1) {
    const out = first.discard ? undefined : routeOutport(r, first.route, first.prefix.v4);
    addRoute(f, out?.port, out?.addr, first.prefix.network, first.prefix.plen, first.route.nexthop, first.route.srcIp, first.rtbId, first.route.uuid, first.discard, offset, first.prefix.isLla);
    return;
  }
  const ecmpId = g.ecmpId;
  const v4 = first.prefix.v4;
  const { match, priority } = routeMatch(undefined, first.rtbId, first.prefix.network, first.prefix.plen, first.route.srcIp, v4, offset);
  f('lr_in_ip_routing', priority, match, `ip.ttl--; flags.loopback = 1; ${ECMP_GROUP} = ${ecmpId}; ${ECMP_MEMBER} = select(${members.map((_, i) => i + 1).join(', ')});`);
  const symmetric = new Set<string>();
  members.forEach((m, i) => {
    const out = routeOutport(r, m.route, v4);
    if (out === undefined) return;
    // Symmetric replies, on a gateway router only, once per output port of the group.
    if (r.chassis !== undefined && (m.route.options.get('ecmp_symmetric_reply') ?? '').toLowerCase() === 'true' && !symmetric.has(out.port.name)) {
      symmetric.add(out.port.name);
      ecmpSymmetricReply(f, m, out, v4, match);
    }
    f('lr_in_ip_routing_ecmp', 100, `${ECMP_GROUP} == ${ecmpId} && ${ECMP_MEMBER} == ${i + 1}`,
      `${v4 ? 'reg0' : 'xxreg0'} = ${m.route.nexthop}; ${v4 ? 'reg1' : 'xxreg1'} = ${out.addr}; eth.src = ${out.port.networks.ea}; outport = ${jsonKey(out.port.name)}; next;`, m.route.uuid);
  });
}

/**
 * Replies to connections that came in over an ECMP route leave by the port and to the next hop
 * (MAC) they came from (add_ecmp_symmetric_reply_flows): such connections go through
 * conntrack, which keeps the next hop's MAC (ct_label.ecmp_reply_eth) and the port's key
 * (ct_mark.ecmp_reply_port), and commit_ecmp_nh learns the next hop for the flows of tables
 * 76/77; a reply then bypasses the ECMP choice and the router policies.
 */
function ecmpSymmetricReply(f: Emit, m: ParsedRoute, out: { port: RouterPortFacts; addr: string }, v4: boolean, routeMatch: string): void {
  const hint = m.route.uuid;
  const ip = v4 ? '4' : '6';
  const cidr = m.prefix.plen === (v4 ? 32 : 128) ? m.prefix.network : `${m.prefix.network}/${m.prefix.plen}`;
  const base = `inport == ${jsonKey(out.port.name)} && ip${ip}.${m.route.srcIp ? 'dst' : 'src'} == ${cidr}`;
  f('lr_in_defrag', 100, base, 'reg9[5] = chk_ecmp_nh_mac(); ct_next;', hint);
  f('lr_in_defrag', 100, routeMatch, 'reg9[5] = chk_ecmp_nh(); ct_next;', hint);
  const commit = (proto: string): string =>
    `ct_commit { ct_label.ecmp_reply_eth = eth.src;  ct_mark.ecmp_reply_port = ${out.port.key};}; commit_ecmp_nh(ipv6 = ${v4 ? 'false' : 'true'}, proto = ${proto}); next;`;
  for (const proto of ['tcp', 'udp', 'sctp']) f('lr_in_ecmp_stateful', 100, `${base} && (ct.new && !ct.est) && ${proto}`, commit(proto), hint);
  for (const proto of ['tcp', 'udp', 'sctp']) f('lr_in_ecmp_stateful', 100, `${base} && (!ct.rpl && ct.est) && ${proto} && reg9[5] == 0`, commit(proto), hint);
  const reply = `ct.rpl && reg9[5] == 1 && ct_mark.ecmp_reply_port == ${out.port.key}`;
  f('lr_in_ip_routing', 10300, `${reply} && ${routeMatch}`,
    `ip.ttl--; flags.loopback = 1; eth.src = ${out.port.networks.ea}; ${v4 ? '' : 'xx'}reg1 = ${out.addr}; outport = ${jsonKey(out.port.name)}; next;`, hint);
  f('lr_in_policy', 65535, reply, NEXT, hint);
  f('lr_in_arp_resolve', 200, reply, 'push(xxreg1); xxreg1 = ct_label; eth.dst = xxreg1[32..79]; pop(xxreg1); next;', hint);
}

/** The first router port on the same network as a policy's next hop. */
function policyOutport(r: RouterFacts, nexthop: string): { port: RouterPortFacts; addr: string } | undefined {
  for (const port of r.ports) {
    const addr = findLportAddress(port.networks, nexthop);
    if (addr !== undefined) return { port, addr };
  }
  return undefined;
}

function pktMark(p: PolicyFacts): string {
  const v = p.options.get('pkt_mark');
  const n = v === undefined || !/^\d+$/.test(v) ? 0 : Number(v);
  return n > 0 && n <= 0xffffffff ? `pkt.mark = ${n}; ` : '';
}

function policies(f: Emit, r: RouterFacts): void {
  f('lr_in_policy', 0, '1', `${ECMP_GROUP} = 0; next;`);
  f('lr_in_policy_ecmp', 150, `${ECMP_GROUP} == 0`, NEXT);
  f('lr_in_policy_ecmp', 0, '1', f.drop);
  let ecmpId = 1;
  for (const p of r.policies) {
    if (p.action === 'reroute' && p.nexthops.length > 1) {
      ecmpPolicy(f, r, p, ecmpId);
      ecmpId++;
      continue;
    }
    let actions: string;
    if (p.action === 'reroute') {
      const nexthop = p.nexthops.length === 1 ? p.nexthops[0] : p.nexthop;
      if (nexthop === undefined) continue;
      const out = policyOutport(r, nexthop);
      if (out === undefined) continue;
      const v4 = nexthop.includes('.');
      actions = `${pktMark(p)}${v4 ? 'reg0' : 'xxreg0'} = ${nexthop}; ${v4 ? 'reg1' : 'xxreg1'} = ${out.addr}; eth.src = ${out.port.networks.ea}; outport = ${jsonKey(out.port.name)}; flags.loopback = 1; ${ECMP_GROUP} = 0; next;`;
    } else if (p.action === 'drop') {
      actions = f.drop;
    } else {
      actions = `${pktMark(p)}${ECMP_GROUP} = 0; next;`;
    }
    f('lr_in_policy', p.priority, p.match, actions, p.uuid);
  }
}

function ecmpPolicy(f: Emit, r: RouterFacts, p: PolicyFacts, groupId: number): void {
  const v4 = (p.nexthops[0] as string).includes('.');
  if (p.nexthops.some((n) => n.includes('.') !== v4)) return;
  for (let i = 0; i < p.nexthops.length; i++) {
    const nexthop = p.nexthops[i] as string;
    const out = policyOutport(r, nexthop);
    // ovn-northd stops at the first next hop without a port, keeping the members before it.
    if (out === undefined) return;
    f('lr_in_policy_ecmp', 100, `${ECMP_GROUP} == ${groupId} && ${ECMP_MEMBER} == ${i + 1}`,
      `${pktMark(p)}${v4 ? 'reg0' : 'xxreg0'} = ${nexthop}; ${v4 ? 'reg1' : 'xxreg1'} = ${out.addr}; eth.src = ${out.port.networks.ea}; outport = ${jsonKey(out.port.name)}; flags.loopback = 1; next;`, p.uuid);
  }
  f('lr_in_policy', p.priority, p.match, `${ECMP_GROUP} = ${groupId}; ${ECMP_MEMBER} = select(${p.nexthops.map((_, i) => i + 1).join(', ')});`, p.uuid);
}

function gatewayRedirect(f: Emit, r: RouterFacts): void {
  for (const name of r.portFacing.l3dgwPorts) {
    const port = r.ports.find((p) => p.name === name) as RouterPortFacts;
    // Traffic to a vtep (ramp) switch goes distributed; only its replies are centralized.
    if (port.peerHasVtep) continue;
    const redirect = `outport = ${jsonKey(crPortName(name))}; next;`;
    f('lr_in_gw_redirect', 50, `outport == ${jsonKey(name)}`, redirect, port.nbUuid);
    // Stateless dnat_and_snat rules with allowed (or exempted) external IPs: only those
    // sources are redirected (or they are dropped); the first allowed rule's address is
    // otherwise dropped. Every rule counts, as parsed or not.
    let defaultDrop = true;
    for (const n of r.nats) {
      if (!stateless(n) || (n.allowedExtIps === undefined && n.exemptedExtIps === undefined)) continue;
      const v = n.ext?.v6 === true ? '6' : '4';
      const match = `outport == ${jsonKey(name)} && ip${v}.src == $${n.allowedExtIps ?? (n.exemptedExtIps as string)}`;
      if (n.allowedExtIps !== undefined) {
        f('lr_in_gw_redirect', 75, match, redirect, port.nbUuid);
        if (defaultDrop) f('lr_in_gw_redirect', 70, `ip && ip${v}.dst == ${n.externalIp}`, f.drop);
        defaultDrop = false;
      } else {
        f('lr_in_gw_redirect', 75, match, f.drop, port.nbUuid);
      }
    }
  }
  f('lr_in_gw_redirect', 0, '1', NEXT);
}

// --- Gateway MTU (options:gateway_mtu and gateway_mtu_bypass of router ports) ---------------

const ETH_HEADER_BYTES = 14;
const VLAN_ETH_HEADER_BYTES = 18;

/** A port's options:gateway_mtu as ovn-northd reads it: 0 when unset or not an integer. */
function gatewayMtu(p: RouterPortFacts): number {
  return optionInt(p.options, 'gateway_mtu', 0);
}

/**
 * One flow at priority 50 that, when port `p` has a positive gateway MTU, first stores in
 * reg9[1] whether the frame is larger than that MTU plus its L2 header (a VLAN header too when
 * the port's switch has a tagged localnet port); with options:gateway_mtu_bypass as well, the
 * flow without the check at 55 for the packets the bypass expression matches
 * (build_gateway_mtu_flow). Every flow that gateway_mtu adds a check to is made here.
 */
function gatewayMtuFlow(f: Emit, p: RouterPortFacts, stageName: StageName, match: string, actions: string, hint: Uuid): void {
  const mtu = gatewayMtu(p);
  if (mtu <= 0) {
    f(stageName, 50, match, actions, hint);
    return;
  }
  const l2Bytes = p.peerVlanLocalnet ? VLAN_ETH_HEADER_BYTES : ETH_HEADER_BYTES;
  // ovn-northd adds in a C int: an MTU near INT_MAX wraps around.
  f(stageName, 50, match, `${PKT_LARGER} = check_pkt_larger(${(mtu + l2Bytes) | 0}); ${actions}`, hint);
  const bypass = p.options.get('gateway_mtu_bypass');
  if (bypass !== undefined) f(stageName, 55, `${match} && (${bypass})`, actions, hint);
}

/**
 * ICMPv4 "fragmentation needed" and ICMPv6 "packet too big" (with MTU `mtu`) for packets that
 * came in on `p` and were found too large (reg9[1]), sent back from `p`'s first address of the
 * family and re-entering the router's admission (build_icmperr_pkt_big_flows). With `outport`,
 * only packets routed to it (lr_in_larger_pkts); without, any (lr_in_ip_input: `p` checked them
 * itself on admission). IPv6 always: every port has a link-local address.
 */
function packetTooBig(f: Emit, p: RouterPortFacts, mtu: number, stageName: StageName, outport: RouterPortFacts | undefined): void {
  const prefix = `inport == ${jsonKey(p.name)} && ${outport === undefined ? '' : `outport == ${jsonKey(outport.name)} && `}`;
  const cond = `${PKT_LARGER} && ${EGRESS_LOOPBACK_BIT} == 0`;
  const reenter = `next(pipeline=ingress, table=${stage('lr_in_admission').table});`;
  const v4 = p.networks.ipv4[0];
  if (v4 !== undefined) {
    f(stageName, 150, `${prefix}ip4 && ${cond}`,
      `icmp4_error {${EGRESS_LOOPBACK_BIT} = 1; ${PKT_LARGER} = 0; eth.dst = ${p.networks.ea}; ip4.dst = ip4.src; ip4.src = ${v4.addrS}; ip.ttl = 255; icmp4.type = 3; /* Destination Unreachable. */ icmp4.code = 4; /* Frag Needed and DF was Set. */ icmp4.frag_mtu = ${mtu}; ${reenter} };`,
      p.nbUuid);
  }
  const v6 = p.networks.ipv6[0];
  if (v6 !== undefined) {
    f(stageName, 150, `${prefix}ip6 && ${cond}`,
      `icmp6_error {${EGRESS_LOOPBACK_BIT} = 1; ${PKT_LARGER} = 0; eth.dst = ${p.networks.ea}; ip6.dst = ip6.src; ip6.src = ${v6.addrS}; ip.ttl = 255; icmp6.type = 2; /* Packet Too Big. */ icmp6.code = 0; icmp6.frag_mtu = ${mtu}; ${reenter} };`,
      p.nbUuid);
  }
}

/**
 * lr_in_chk_pkt_len and lr_in_larger_pkts: for each port with a positive gateway MTU, packets
 * routed out of it are checked (50, or 55 without the check for gateway_mtu_bypass); those too
 * large get an ICMP error back to the port they came from (larger_pkts 150, one flow per other
 * port), and those that came in on it too large (checked on admission) get one in
 * lr_in_ip_input 150 (build_check_pkt_len_flows_for_lrouter). The router owns these flows: they
 * read every port's networks.
 */
function checkPktLen(f: Emit, r: RouterFacts): void {
  f('lr_in_chk_pkt_len', 0, '1', NEXT);
  f('lr_in_larger_pkts', 0, '1', NEXT);
  for (const op of r.ports) {
    const mtu = gatewayMtu(op);
    if (mtu <= 0) continue;
    gatewayMtuFlow(f, op, 'lr_in_chk_pkt_len', `outport == ${jsonKey(op.name)}`, NEXT, op.nbUuid);
    packetTooBig(f, op, mtu, 'lr_in_ip_input', undefined);
    for (const rp of r.ports) if (rp !== op) packetTooBig(f, rp, mtu, 'lr_in_larger_pkts', op);
  }
}

function arpRequest(f: Emit, r: RouterFacts): void {
  for (const route of r.routes) {
    const nh = parseIpv6Cidr(route.nexthop);
    if (nh === undefined || nh.plen !== 128) continue;
    const sn = [0xff02, 0, 0, 0, 0, 1, 0xff00 | ((nh.addr[6] as number) & 0xff), nh.addr[7] as number];
    f('lr_in_arp_request', 200, `eth.dst == 00:00:00:00:00:00 && ip6 && xxreg0 == ${route.nexthop}`,
      `nd_ns { eth.dst = ${solicitedNodeMac(nh.addr)}; ip6.dst = ${formatIpv6(sn)}; nd.target = ${route.nexthop}; output; };`, route.uuid);
  }
  f('lr_in_arp_request', 100, 'eth.dst == 00:00:00:00:00:00 && ip4', 'arp { eth.dst = ff:ff:ff:ff:ff:ff; arp.spa = reg1; arp.tpa = reg0; arp.op = 1; output; };');
  f('lr_in_arp_request', 100, 'eth.dst == 00:00:00:00:00:00 && ip6', 'nd_ns { nd.target = xxreg0; output; };');
  f('lr_in_arp_request', 0, '1', 'output;');
}

// --- NAT -------------------------------------------------------------------------------------

function arpReply(mac: string): string {
  return `eth.dst = eth.src; eth.src = ${mac}; arp.op = 2; /* ARP reply */ arp.tha = arp.sha; arp.sha = ${mac}; arp.tpa <-> arp.spa; outport = inport; flags.loopback = 1; output;`;
}

function ndReply(action: string, mac: string): string {
  return `${action} { eth.src = ${mac}; ip6.src = nd.target; nd.tll = ${mac}; outport = inport; flags.loopback = 1; output; };`;
}

/** ARP/ND replies for NAT external addresses, on any port (priority 90). */
function natArpNd(f: Emit, r: RouterFacts): void {
  const one = (n: NatFacts): void => {
    const ext = n.ext as NonNullable<NatFacts['ext']>;
    if (ext.v6) f('lr_in_ip_input', 90, `ip6.dst == {${ext.addrS}, ${ext.snAddrS}} && nd_ns && nd.target == ${ext.addrS}`, ndReply('nd_na', INPORT_ETH), n.uuid);
    else f('lr_in_ip_input', 90, `arp.op == 1 && arp.tpa == ${ext.addrS}`, arpReply(INPORT_ETH), n.uuid);
  };
  for (const n of r.nats) if (n.ext !== undefined && n.type !== 'snat') one(n);
  for (const rule of r.portFacing.snatIps.values()) {
    const n = rule === undefined ? undefined : r.nats.find((x) => x.uuid === rule);
    if (n !== undefined) one(n);
  }
}

function natDefaults(f: Emit, r: RouterFacts): void {
  f('lr_in_defrag', 0, '1', NEXT);
  f('lr_in_unsnat', 0, '1', NEXT);
  f('lr_out_chk_dnat_local', 0, '1', 'reg9[4] = 0; next;');
  f('lr_out_snat', 0, '1', NEXT);
  f('lr_in_dnat', 0, '1', NEXT);
  f('lr_out_undnat', 0, '1', NEXT);
  f('lr_out_post_undnat', 0, '1', NEXT);
  f('lr_out_post_snat', 0, '1', NEXT);
  f('lr_out_egr_loop', 0, '1', NEXT);
  f('lr_in_ecmp_stateful', 0, '1', NEXT);
  if (r.portFacing.hasLbVip) {
    // Related and established load-balanced connections, with their SNAT flags restored.
    f('lr_in_dnat', 70, 'ct.rel && !ct.est && !ct.new && ct_mark.skip_snat == 1', 'flags.skip_snat_for_lb = 1; ct_commit_nat;');
    f('lr_in_dnat', 70, 'ct.rel && !ct.est && !ct.new && ct_mark.force_snat == 1', 'flags.force_snat_for_lb = 1; ct_commit_nat;');
    f('lr_in_dnat', 50, 'ct.rel && !ct.est && !ct.new', 'ct_commit_nat;');
    f('lr_in_dnat', 70, 'ct.est && !ct.rel && !ct.new && ct_mark.natted && ct_mark.skip_snat == 1', 'flags.skip_snat_for_lb = 1; next;');
    f('lr_in_dnat', 70, 'ct.est && !ct.rel && !ct.new && ct_mark.natted && ct_mark.force_snat == 1', 'flags.force_snat_for_lb = 1; next;');
    f('lr_in_dnat', 50, 'ct.est && !ct.rel && !ct.new && ct_mark.natted', NEXT);
  }
  if (r.portFacing.isGwRouter && (r.nats.length > 0 || r.portFacing.hasLbVip)) {
    f('lr_out_undnat', 100, 'nd || nd_rs || nd_ra', NEXT);
    f('lr_out_undnat', 50, 'ip', 'flags.loopback = 1; ct_dnat;');
    f('lr_out_post_undnat', 50, 'ip && ct.new', 'ct_commit { } ; next; ');
  }
  f('lr_out_snat', 120, 'nd_ns', NEXT);
}

interface CheckedNat {
  readonly nat: NatFacts;
  readonly v6: boolean;
  readonly cidrBits: number;
  /** On a router with distributed gateway ports: the one the rule applies on. */
  readonly dgp: RouterPortFacts | undefined;
  /** A distributed rule (dnat_and_snat with logical_port and external_mac): the MAC, normalized. */
  readonly mac: string | undefined;
}

/**
 * A NAT rule checked as lrouter_check_nat_entry does: its addresses, its gateway port (its
 * gateway_port, which must be one of the router's distributed gateway ports, else the only
 * one, else the first whose networks hold the external IP) and whether it is distributed.
 */
function checkNat(n: NatFacts, r: RouterFacts): CheckedNat | undefined {
  if (n.allowedExtIps !== undefined && n.exemptedExtIps !== undefined) return undefined;
  const ext4 = parseIpv4Cidr(n.externalIp);
  let v6 = false;
  if (ext4 === undefined || ext4.plen !== 32) {
    const ext6 = parseIpv6Cidr(n.externalIp);
    if (ext6 === undefined || ext6.plen !== 128) return undefined;
    v6 = true;
  }
  const l3dgw = r.portFacing.l3dgwPorts;
  const portNamed = (name: string | undefined): RouterPortFacts | undefined => r.ports.find((p) => p.name === name);
  let dgp: RouterPortFacts | undefined;
  if (n.gatewayPort !== undefined) {
    if (!l3dgw.includes(n.gatewayPort)) return undefined;
    dgp = portNamed(n.gatewayPort);
  } else if (l3dgw.length === 1) {
    dgp = portNamed(l3dgw[0]);
  } else if (l3dgw.length > 1) {
    dgp = l3dgw.map(portNamed).find((p) => p !== undefined && findLportAddress(p.networks, n.externalIp) !== undefined);
    if (dgp === undefined) return undefined;
  }
  const logical = v6 ? parseIpv6Cidr(n.logicalIp) : parseIpv4Cidr(n.logicalIp);
  if (logical === undefined) return undefined;
  if (n.type !== 'snat' && logical.plen !== (v6 ? 128 : 32)) return undefined;
  let mac: string | undefined;
  if (l3dgw.length > 0 && n.type === 'dnat_and_snat' && n.logicalPort !== undefined && n.externalMac !== undefined) {
    const bytes = ethAddrFromString(n.externalMac);
    if (bytes === undefined) return undefined;
    mac = macText(bytes);
  }
  return { nat: n, v6, cidrBits: logical.plen, dgp, mac };
}

/** ETH_ADDR_FMT. */
function macText(bytes: readonly number[]): string {
  return bytes.map((b) => b.toString(16).padStart(2, '0')).join(':');
}

function stateless(n: NatFacts): boolean {
  return n.type === 'dnat_and_snat' && n.options.get('stateless') === 'true';
}

/** A NAT rule's allowed/exempted external IP match (lrouter_nat_add_ext_ip_match). */
function extIpMatch(f: Emit, r: RouterFacts, c: CheckedNat, match: string, isSrc: boolean): string {
  const n = c.nat;
  const dir = `ip${c.v6 ? '6' : '4'}.${isSrc ? 'src' : 'dst'}`;
  if (n.allowedExtIps !== undefined) return `${match} && ${dir} == $${n.allowedExtIps}`;
  if (n.exemptedExtIps !== undefined) {
    const priority = isSrc ? 102 : c.cidrBits + 3 + (r.portFacing.isGwRouter ? 0 : 128);
    f(isSrc ? 'lr_in_dnat' : 'lr_out_snat', priority, `${match} && ${dir} == $${n.exemptedExtIps}`, NEXT, n.uuid);
  }
  return match;
}

/** NAT rules of a gateway router, or of a router with distributed gateway ports. */
function natRules(f: Emit, r: RouterFacts): void {
  const pf = r.portFacing;
  if (!pf.isGwRouter) {
    if (pf.l3dgwPorts.length > 0) distributedNatRules(f, r);
    return;
  }
  for (const n of r.nats) {
    const c = checkNat(n, r);
    if (c === undefined) continue;
    const ip = c.v6 ? 'ip6' : 'ip4';
    if (n.type === 'snat' || n.type === 'dnat_and_snat') {
      f('lr_in_unsnat', 90, `ip && ${ip}.dst == ${n.externalIp}`, stateless(n) ? NEXT : 'ct_snat;', n.uuid);
    }
    if (n.type === 'dnat' || n.type === 'dnat_and_snat') {
      let match = `ip && ${ip}.dst == ${n.externalIp}`;
      if (n.allowedExtIps !== undefined || n.exemptedExtIps !== undefined) match = extIpMatch(f, r, c, match, true);
      const force = forceSnat(r, 'dnat_force_snat_ip').length > 0 ? 'flags.force_snat_for_dnat = 1; ' : '';
      const actions = stateless(n)
        ? `${force}flags.loopback = 1; ${ip}.dst=${n.logicalIp}; next;`
        : `${force}flags.loopback = 1; ct_dnat(${n.logicalIp}${n.externalPortRange !== '' ? `,${n.externalPortRange}` : ''});`;
      f('lr_in_dnat', 100, match, actions, n.uuid);
    }
    if (n.type === 'snat' || n.type === 'dnat_and_snat') {
      let match = `ip && ${ip}.src == ${n.logicalIp}`;
      if (n.allowedExtIps !== undefined || n.exemptedExtIps !== undefined) match = extIpMatch(f, r, c, match, false);
      let actions: string;
      if (stateless(n)) {
        actions = `${ip}.src=${n.externalIp}; next;`;
      } else {
        match += ' && (!ct.trk || !ct.rpl)';
        actions = `ct_snat(${n.externalIp}${n.externalPortRange !== '' ? `,${n.externalPortRange}` : ''});`;
      }
      f('lr_out_snat', c.cidrBits + 1, match, actions, n.uuid);
    }
  }
  if (r.nats.length > 0) f('lr_out_chk_dnat_local', 50, 'ip && ct_mark.natted == 1', 'reg9[4] = 1; next;', r.nbUuid);
  for (const [kind, context] of [['dnat_force_snat_ip', 'dnat'], ['lb_force_snat_ip', 'lb']] as const) {
    if (kind === 'lb_force_snat_ip' && pf.lbForceSnatRouterIp) continue;
    for (const addr of forceSnat(r, kind)) {
      const version = addr.includes('.') ? '4' : '6';
      f('lr_in_unsnat', 110, `ip${version} && ip${version}.dst == ${addr}`, 'ct_snat;');
      f('lr_out_snat', 100, `flags.force_snat_for_${context} == 1 && ip${version}`, `ct_snat(${addr});`);
    }
  }
}

/**
 * The ICMP error for packets to a distributed NAT rule's external address that came in on its
 * gateway port too large for the port's MTU: answered from the rule's external MAC and
 * address, out of the gateway port (lr_in_ip_input 160, build_lrouter_ingress_nat_check_pkt_len).
 * The MAC and address are the rule's, as written.
 */
function natPacketTooBig(f: Emit, c: CheckedNat, mtu: number): void {
  const n = c.nat;
  const dgp = c.dgp as RouterPortFacts;
  const dk = jsonKey(dgp.name);
  const ip = c.v6 ? 'ip6' : 'ip4';
  const icmp = c.v6
    ? `icmp6_error {${EGRESS_LOOPBACK_BIT} = 1; ${PKT_LARGER} = 0; eth.dst = eth.src; eth.src = ${n.externalMac as string}; ip6.dst = ip6.src; ip6.src = ${n.externalIp}; ip.ttl = 254; icmp6.type = 2; /* Packet Too Big. */ icmp6.code = 0; icmp6.frag_mtu = ${mtu}; `
    : `icmp4_error {${EGRESS_LOOPBACK_BIT} = 1; ${PKT_LARGER} = 0; eth.dst = eth.src; eth.src = ${n.externalMac as string}; ip4.dst = ip4.src; ip4.src = ${n.externalIp}; ip.ttl = 254; icmp4.type = 3; /* Destination Unreachable. */ icmp4.code = 4; /* Frag Needed and DF was Set. */ icmp4.frag_mtu = ${mtu}; `;
  f('lr_in_ip_input', 160, `inport == ${dk} && ${PKT_LARGER} && ${EGRESS_LOOPBACK_BIT} == 0 && ${ip} && ${ip}.dst == ${n.externalIp}`,
    `${icmp}outport = ${dk}; flags.loopback = 1; output; };`, n.uuid);
}

const EGRESS_LOOPBACK = `clone { ct_clear; inport = outport; outport = ""; eth.dst <-> eth.src; flags = 0; flags.loopback = 1; flags.use_snat_zone = reg9[4]; ${
  Array.from({ length: 10 }, (_, i) => `reg${i} = 0; `).join('')}reg9[0] = 1; next(pipeline=ingress, table=0); };`;

/**
 * NAT rules on a router with distributed gateway ports: each applies on its gateway port, on
 * the gateway chassis (is_chassis_resident of the chassisredirect port) or, distributed, on
 * the chassis of its logical_port, using its external_mac there. Zones are the router's
 * (ct_*_in_czone) except when the destination is a local NAT address (reg9[4]).
 */
function distributedNatRules(f: Emit, r: RouterFacts): void {
  const seen = new Set<string>();
  const bridged = r.ports.some((p) => p.options.get('redirect-type')?.toLowerCase() === 'bridged');
  for (const n of r.nats) {
    const c = checkNat(n, r);
    if (c === undefined || c.dgp === undefined) continue;
    const ip = c.v6 ? 'ip6' : 'ip4';
    const dk = jsonKey(c.dgp.name);
    const crResident = `is_chassis_resident(${jsonKey(crPortName(c.dgp.name))})`;
    const lpResident = `is_chassis_resident("${n.logicalPort ?? ''}")`;
    const mac = c.mac;
    const resident = mac === undefined ? crResident : lpResident;
    const central = mac === undefined ? ` && ${crResident}` : '';
    const setMac = mac === undefined ? '' : `eth.src = ${mac}; `;
    const range = n.externalPortRange !== '' ? `,${n.externalPortRange}` : '';
    const isStateless = stateless(n);
    const hasSnat = n.type === 'snat' || n.type === 'dnat_and_snat';
    const hasDnat = n.type === 'dnat' || n.type === 'dnat_and_snat';
    if (hasSnat) {
      f('lr_in_unsnat', 100, `ip && ${ip}.dst == ${n.externalIp} && inport == ${dk} && flags.loopback == 0${central}`, isStateless ? NEXT : 'ct_snat_in_czone;', n.uuid);
      if (!isStateless) f('lr_in_unsnat', 100, `ip && ${ip}.dst == ${n.externalIp} && inport == ${dk} && flags.loopback == 1 && flags.use_snat_zone == 1${central}`, 'ct_snat;', n.uuid);
    }
    if (hasDnat) {
      let match = `ip && ${ip}.dst == ${n.externalIp} && inport == ${dk}${central}`;
      if (n.allowedExtIps !== undefined || n.exemptedExtIps !== undefined) match = extIpMatch(f, r, c, match, true);
      f('lr_in_dnat', 100, match, isStateless ? `${ip}.dst=${n.logicalIp}; next;` : `ct_dnat_in_czone(${n.logicalIp}${range});`, n.uuid);
    }
    // Packets for the external address that come back in on the gateway port failed NAT: dropped;
    // others resolve it (once per address).
    if (!seen.has(n.externalIp)) {
      seen.add(n.externalIp);
      f('lr_in_arp_resolve', 150, `inport == ${dk} && outport == ${dk} && ${ip}.dst == ${n.externalIp}`, f.drop, n.uuid);
      f('lr_in_arp_resolve', 100, `outport == ${dk} && ${c.v6 ? 'xxreg0' : 'reg0'} == ${n.externalIp}`, `eth.dst = ${mac === undefined ? c.dgp.networks.ea : (n.externalMac as string)}; next;`, n.uuid);
      if (bridged && mac !== undefined) {
        f('lr_in_arp_resolve', 90, `outport == ${jsonKey(r.portFacing.l3dgwPorts[0] as string)} && ${ip}.src == ${n.logicalIp} && ${lpResident}`,
          c.v6 ? 'get_nd(outport, xxreg0); next;' : 'get_arp(outport, reg0); next;', n.uuid);
      }
    }
    f('lr_out_chk_dnat_local', 50, `ip && ${ip}.dst == ${n.externalIp} && ${resident}`, 'reg9[4] = 1; next;', n.uuid);
    if (hasDnat) f('lr_out_undnat', 100, `ip && ${ip}.src == ${n.logicalIp} && outport == ${dk}${central}`, `${setMac}${isStateless ? NEXT : 'ct_dnat_in_czone;'}`, n.uuid);
    if (hasSnat) {
      const priority = c.cidrBits + 1 + 128;
      let match = `ip && ${ip}.src == ${n.logicalIp} && outport == ${dk} && ${resident}`;
      if (n.allowedExtIps !== undefined || n.exemptedExtIps !== undefined) match = extIpMatch(f, r, c, match, false);
      f('lr_out_snat', priority, match, `${setMac}${isStateless ? `${ip}.src=${n.externalIp}; next;` : `ct_snat_in_czone(${n.externalIp}${range});`}`, n.uuid);
      if (!isStateless) f('lr_out_snat', priority + 1, `${match} && reg9[4] == 1`, `${setMac}reg9[4] = 0; ct_snat(${n.externalIp}${range});`, n.uuid);
    }
    if (n.type === 'snat') f('lr_in_ip_input', 120, `inport == ${dk} && ${ip}.src == ${n.externalIp}`, NEXT, n.uuid);
    if (mac !== undefined) {
      // A virtual port not claimed yet would have its traffic centralized: dropped instead.
      if (n.logicalPortVirtual) f('lr_in_gw_redirect', 80, `${ip}.src == ${n.logicalIp} && outport == ${dk}`, f.drop, n.uuid);
      gatewayMtuFlow(f, c.dgp, 'lr_in_admission', `eth.dst == ${mac} && inport == ${dk} && ${lpResident}`, `${INPORT_ETH} = ${c.dgp.networks.ea}; next;`, n.uuid);
      // Any non-zero MTU here, negative ones too (build_lrouter_ingress_flow tests gw_mtu only).
      const mtu = gatewayMtu(c.dgp);
      if (mtu !== 0) natPacketTooBig(f, c, mtu);
      f('lr_in_gw_redirect', 100, `${ip}.src == ${n.logicalIp} && outport == ${dk} && ${lpResident}`, `eth.src = ${n.externalMac as string}; ${c.v6 ? 'xxreg1' : 'reg1'} = ${n.externalIp}; next;`, n.uuid);
    }
    f('lr_out_egr_loop', 100, `${ip}.dst == ${n.externalIp} && outport == ${dk} && ${resident}`, EGRESS_LOOPBACK, n.uuid);
  }
  if (r.nats.length > 0) f('lr_out_chk_dnat_local', 50, 'ip && ct_mark.natted == 1', 'reg9[4] = 1; next;', r.nbUuid);
}

/**
 * ARP and ND replies on a distributed gateway port for the NAT addresses it applies (with the
 * rule's external MAC where its logical port resides, else the port's on the gateway chassis),
 * and drops of those requests elsewhere.
 */
function gatewayPortNatArpNd(f: Emit, r: RouterFacts): void {
  const l3dgw = r.portFacing.l3dgwPorts;
  if (l3dgw.length === 0) return;
  const rules: NatFacts[] = r.nats.filter((n) => n.ext !== undefined && n.type !== 'snat');
  for (const rule of r.portFacing.snatIps.values()) {
    const n = rule === undefined ? undefined : r.nats.find((x) => x.uuid === rule);
    if (n !== undefined && n.ext !== undefined) rules.push(n);
  }
  for (const name of l3dgw) {
    const port = r.ports.find((p) => p.name === name);
    if (port === undefined) continue;
    const key = jsonKey(name);
    for (const n of rules) {
      // is_nat_gateway_port: with several gateway ports, the rule's own (or the one on its network).
      if (l3dgw.length > 1 && (n.gatewayPort === undefined ? findLportAddress(port.networks, n.externalIp) === undefined : n.gatewayPort !== name)) continue;
      const distributed = n.externalMac !== undefined && ethAddrFromString(n.externalMac) !== undefined && n.logicalPort !== undefined;
      const mac = distributed ? (n.externalMac as string) : INPORT_ETH;
      const resident = distributed ? `is_chassis_resident("${n.logicalPort as string}")` : `is_chassis_resident(${jsonKey(crPortName(name))})`;
      const ext = n.ext as NonNullable<NatFacts['ext']>;
      const match = ext.v6 ? `inport == ${key} && ip6.dst == {${ext.addrS}, ${ext.snAddrS}} && nd_ns && nd.target == ${ext.addrS}` : `inport == ${key} && arp.op == 1 && arp.tpa == ${ext.addrS}`;
      f('lr_in_ip_input', 92, `${match} && ${resident}`, ext.v6 ? ndReply('nd_na', mac) : arpReply(mac), n.uuid);
      f('lr_in_ip_input', 91, match, f.drop, n.uuid);
    }
  }
}

/** The force-SNAT addresses of a gateway router option (one per family). */
export function forceSnat(r: RouterFacts, key: 'dnat_force_snat_ip' | 'lb_force_snat_ip'): string[] {
  const text = r.options.get(key);
  if (text === undefined || (key === 'lb_force_snat_ip' && text === 'router_ip')) return [];
  const out: string[] = [];
  const tokens = text.split(/\s+/).filter((s) => s !== '');
  let v4 = 0;
  let v6 = 0;
  for (const t of tokens) {
    const a = parseIpv4Cidr(t);
    if (a !== undefined && a.plen === 32) {
      v4++;
      out.push(ipv4Text(a.addr));
      continue;
    }
    const b = parseIpv6Cidr(t);
    if (b === undefined || b.plen !== 128) break;
    v6++;
    out.push(formatIpv6(b.addr));
  }
  return v4 > 1 || v6 > 1 ? [] : out;
}

// ---------------------------------------------------------------------------------------------
// Flows a router port owns.

/** What a router port's flows read besides its router's facts. */
export interface RouterPortContext {
  /** The LRP peer (LRP-to-LRP link): its name and its router's logical_datapath. */
  readonly lrpPeer: { readonly name: string; readonly logicalDatapath: readonly Uuid[] } | undefined;
  /** Whether the port has a peer at all (an LRP, or a router LSP naming it). */
  readonly hasPeer: boolean;
  /** Whether the LRP's own peer column is set (whatever it names). */
  readonly peerColumnSet: boolean;
  /** The router datapath's tunnel key (it names the router's load balancer address sets). */
  readonly routerKey: number;
  /** The drop action texts (drop-sampling.ts). */
  readonly drops: DropActions;
}

/** The SB Address_Set of a router's reachable load balancer VIPs (lr_lb_address_set_name). */
export function routerLbAddressSetName(routerKey: number, v6: boolean): string {
  return `_rtr_lb_${routerKey}_ip${v6 ? '6' : '4'}`;
}

/** ARP and ND replies, on every port, for the router's reachable VIPs through their address sets. */
function lbVipArpNd(f: Emit, p: RouterPortFacts, r: RouterFacts, ctx: RouterPortContext, l3dgw: boolean, crKey: string): void {
  const lb = r.portFacing.lbIps;
  const key = jsonKey(p.name);
  const resident = l3dgw ? ` && is_chassis_resident(${crKey})` : '';
  if (lb.v4Reachable.length > 0) {
    f('lr_in_ip_input', 90, `inport == ${key} && arp.op == 1 && arp.tpa == $${routerLbAddressSetName(ctx.routerKey, false)}${resident}`, arpReply(INPORT_ETH));
  }
  if (lb.v6Reachable.length > 0) {
    f('lr_in_ip_input', 90, `inport == ${key} && nd_ns && nd.target == $${routerLbAddressSetName(ctx.routerKey, true)}${resident}`, ndReply('nd_na', INPORT_ETH));
  }
}

/** Every flow one router port owns (in its router's pipeline, or its LRP peer's). */
export function routerPortFlows(p: RouterPortFacts, r: RouterFacts, ctx: RouterPortContext): sb.Logical_Flow[] {
  const flows: sb.Logical_Flow[] = [];
  const f = emitterOf(r.logicalDatapath, flows, ctx.drops);
  const key = jsonKey(p.name);
  const hint = p.nbUuid;
  const pf = r.portFacing;
  const l3dgw = pf.l3dgwPorts.includes(p.name);
  const crKey = jsonKey(crPortName(p.name));
  const nets = p.networks;
  // Admission: the port's own MAC and multicast, when enabled (with the gateway MTU check).
  if (p.enabled) {
    gatewayMtuFlow(f, p, 'lr_in_admission', `eth.mcast && inport == ${key}`, `${INPORT_ETH} = ${nets.ea}; next;`, hint);
    // A gateway port is centralized, unless its switch has vtep ports (consider_l3dgw_port_is_centralized).
    const centralized = l3dgw && !p.peerHasVtep;
    gatewayMtuFlow(f, p, 'lr_in_admission', `eth.dst == ${nets.ea} && inport == ${key}${centralized ? ` && is_chassis_resident(${crKey})` : ''}`, `${INPORT_ETH} = ${nets.ea}; next;`, hint);
  }
  // Neighbor lookup for ARP requests from the port's networks.
  for (const a of nets.ipv4) {
    const resident = l3dgw ? ` && is_chassis_resident(${crKey})` : '';
    if (!pf.learnFromArpRequest) {
      f('lr_in_lookup_neighbor', 110, `inport == ${key} && arp.spa == ${a.networkS}/${a.plen} && arp.tpa == ${a.addrS} && arp.op == 1${resident}`,
        'reg9[2] = lookup_arp(inport, arp.spa, arp.sha); reg9[3] = 1; next;', hint);
    }
    f('lr_in_lookup_neighbor', 100, `inport == ${key} && arp.spa == ${a.networkS}/${a.plen} && arp.op == 1${resident}`,
      `reg9[2] = lookup_arp(inport, arp.spa, arp.sha); ${pf.learnFromArpRequest ? '' : 'reg9[3] = lookup_arp_ip(inport, arp.spa); '}next;`, hint);
  }
  // Connected routes.
  for (const a of nets.ipv4) addRoute(f, p, a.addrS, a.networkS, a.plen, '', false, 0, hint, false, PRIO_CONNECTED, false);
  for (const a of nets.ipv6) addRoute(f, p, a.addrS, a.networkS, a.plen, '', false, 0, hint, false, PRIO_CONNECTED, a.isLla);
  ndRa(f, p, ctx, hint);
  // ARP resolution in an LRP peer's pipeline for this port's addresses.
  if (ctx.lrpPeer !== undefined) {
    const g = emitterOf(ctx.lrpPeer.logicalDatapath, flows, ctx.drops);
    const peerKey = jsonKey(ctx.lrpPeer.name);
    if (nets.ipv4.length > 0) g('lr_in_arp_resolve', 100, `outport == ${peerKey} && reg0== ${v4NetworksText(nets, false)}`, `eth.dst = ${nets.ea}; next;`, hint);
    if (nets.ipv6.length > 0) g('lr_in_arp_resolve', 100, `outport == ${peerKey} && xxreg0 == ${v6NetworksText(nets)}`, `eth.dst = ${nets.ea}; next;`, hint);
  }
  dropOwnDestination(f, p, r, 'lr_in_arp_resolve', 2, true);
  if (p.enabled) {
    // With multicast relay, multicast leaves with the port's own MAC as its source.
    if (pf.mcastRelay) f('lr_out_delivery', 110, `(ip4.mcast || ip6.mcast) && outport == ${key}`, `eth.src = ${nets.ea}; output;`);
    f('lr_out_delivery', 100, `outport == ${key}`, 'output;');
    f('lr_out_delivery', 0, '1', f.drop);
  }
  for (const a of nets.ipv6) f('lr_in_ip_input', 100, `ip6.dst == ${a.addrS} && udp.src == 547 && udp.dst == 546`, 'reg0 = 0; handle_dhcpv6_reply;');
  ipv6Input(f, p, r, hint, l3dgw, crKey);
  ipv4Input(f, p, r, hint, l3dgw);
  bfdInput(f, p, hint);
  lbVipArpNd(f, p, r, ctx, l3dgw, crKey);
  if (ctx.hasPeer && pf.lbForceSnatRouterIp) {
    const v4 = nets.ipv4[0];
    if (v4 !== undefined) {
      f('lr_in_unsnat', 110, `inport == ${key} && ip4.dst == ${v4.addrS}`, 'ct_snat;');
      f('lr_out_snat', 110, `flags.force_snat_for_lb == 1 && ip4 && outport == ${key}`, `ct_snat(${v4.addrS});`);
    }
    const v6 = nets.ipv6[0];
    if (nets.ipv6.length > 1 && v6 !== undefined) {
      f('lr_in_unsnat', 110, `inport == ${key} && ip6.dst == ${v6.addrS}`, 'ct_snat;');
      f('lr_out_snat', 110, `flags.force_snat_for_lb == 1 && ip6 && outport == ${key}`, `ct_snat(${v6.addrS});`);
    }
  }
  return flows;
}

/** Router addresses dropped at `stage`: those that are (drop_snat_ip) or are not SNAT addresses. */
function dropOwnDestination(f: Emit, p: RouterPortFacts, r: RouterFacts, stage: StageName, priority: number, snatOnes: boolean): void {
  const snat = r.portFacing.snatIps;
  // A router address that is also a load balancer VIP counts as an SNAT address here.
  const lb = r.portFacing.lbIps;
  const v4 = p.networks.ipv4.filter((a) => (snat.has(a.addrS) || lb.v4.includes(a.addrS)) === snatOnes).map((a) => a.addrS);
  if (v4.length > 0) f(stage, priority, `ip4.dst == {${v4.join(', ')}}`, f.drop, p.nbUuid);
  const v6 = p.networks.ipv6.filter((a) => (snat.has(a.addrS) || lb.v6.includes(a.addrS)) === snatOnes).map((a) => a.addrS);
  if (v6.length > 0) f(stage, priority, `ip6.dst == {${v6.join(', ')}}`, f.drop, p.nbUuid);
}

function ipv6Input(f: Emit, p: RouterPortFacts, r: RouterFacts, hint: Uuid, l3dgw: boolean, crKey: string): void {
  const nets = p.networks;
  const key = jsonKey(p.name);
  if (nets.ipv6.length > 0) {
    f('lr_in_ip_input', 90, `ip6.dst == ${v6NetworksText(nets)} && icmp6.type == 128 && icmp6.code == 0`, 'ip6.dst <-> ip6.src; ip.ttl = 255; icmp6.type = 129; flags.loopback = 1; next; ', hint);
  }
  for (const a of nets.ipv6) {
    f('lr_in_ip_input', 90, `inport == ${key} && ip6.dst == {${a.addrS}, ${a.snAddrS}} && nd_ns && nd.target == ${a.addrS}${l3dgw ? ` && is_chassis_resident(${crKey})` : ''}`, ndReply('nd_na_router', INPORT_ETH), hint);
  }
  if (!r.portFacing.isGwRouter && r.portFacing.l3dgwPorts.length === 0) {
    for (const a of nets.ipv6) {
      const base = `ip6 && ip6.dst == ${a.addrS} && !ip.later_frag`;
      f('lr_in_ip_input', 80, `${base} && tcp`, 'tcp_reset {eth.dst <-> eth.src; ip6.dst <-> ip6.src; next; };', hint);
      f('lr_in_ip_input', 80, `${base} && sctp`, 'sctp_abort {eth.dst <-> eth.src; ip6.dst <-> ip6.src; next; };', hint);
      f('lr_in_ip_input', 80, `${base} && udp`, 'icmp6 {eth.dst <-> eth.src; ip6.dst <-> ip6.src; ip.ttl = 255; icmp6.type = 1; icmp6.code = 4; next; };', hint);
      f('lr_in_ip_input', 70, base, 'icmp6 {eth.dst <-> eth.src; ip6.dst <-> ip6.src; ip.ttl = 255; icmp6.type = 1; icmp6.code = 3; next; };', hint);
    }
  }
  for (const a of nets.ipv6) {
    if (a.isLla) continue;
    const ip = l3dgw ? 'ip6.dst <-> ip6.src' : `ip6.dst = ip6.src; ip6.src = ${a.addrS}`;
    f('lr_in_ip_input', 31, `inport == ${key} && ip6 && ip6.src == ${a.networkS}/${a.plen} && ip.ttl == {0, 1} && !ip.later_frag`,
      `icmp6 {eth.dst <-> eth.src; ${ip} ; ip.ttl = 254; icmp6.type = 3; /* Time exceeded */ icmp6.code = 0; /* TTL exceeded in transit */ outport = ${key}; flags.loopback = 1; output; };`, hint);
  }
}

function ipv4Input(f: Emit, p: RouterPortFacts, r: RouterFacts, hint: Uuid, l3dgw: boolean): void {
  const nets = p.networks;
  const key = jsonKey(p.name);
  if (nets.ipv4.length > 0) {
    f('lr_in_ip_input', 100, `ip4.src == ${v4NetworksText(nets, true)} && reg9[0] == 0`, f.drop, hint);
    f('lr_in_ip_input', 90, `ip4.dst == ${v4NetworksText(nets, false)} && icmp4.type == 8 && icmp4.code == 0`, 'ip4.dst <-> ip4.src; ip.ttl = 255; icmp4.type = 0; flags.loopback = 1; next; ', hint);
  }
  for (const a of nets.ipv4) {
    const ip = l3dgw ? 'ip4.dst <-> ip4.src' : `ip4.dst = ip4.src; ip4.src = ${a.addrS}`;
    f('lr_in_ip_input', 31, `inport == ${key} && ip4 && ip.ttl == {0, 1} && !ip.later_frag`,
      `icmp4 {eth.dst <-> eth.src; icmp4.type = 11; /* Time exceeded */ icmp4.code = 0; /* TTL exceeded in transit */ ${ip} ; ip.ttl = 254; outport = ${key}; flags.loopback = 1; output; };`, hint);
  }
  // Answered on one chassis only when the port's switch has a localnet port (PortInfo.residentCr).
  const resident = p.residentCr === undefined ? '' : ` && is_chassis_resident(${jsonKey(p.residentCr)})`;
  for (const a of nets.ipv4) {
    f('lr_in_ip_input', 90, `inport == ${key} && arp.op == 1 && arp.tpa == ${a.addrS} && arp.spa == ${a.networkS}/${a.plen}${resident}`, arpReply(INPORT_ETH), hint);
  }
  if (!r.portFacing.isGwRouter && r.portFacing.l3dgwPorts.length === 0) {
    for (const a of nets.ipv4) {
      const base = `ip4 && ip4.dst == ${a.addrS} && !ip.later_frag`;
      f('lr_in_ip_input', 80, `${base} && udp`, 'icmp4 {eth.dst <-> eth.src; ip4.dst <-> ip4.src; ip.ttl = 255; icmp4.type = 3; icmp4.code = 3; next; };', hint);
      f('lr_in_ip_input', 80, `${base} && tcp`, 'tcp_reset {eth.dst <-> eth.src; ip4.dst <-> ip4.src; next; };', hint);
      f('lr_in_ip_input', 80, `${base} && sctp`, 'sctp_abort {eth.dst <-> eth.src; ip4.dst <-> ip4.src; next; };', hint);
      f('lr_in_ip_input', 70, base, 'icmp4 {eth.dst <-> eth.src; ip4.dst <-> ip4.src; ip.ttl = 255; icmp4.type = 3; icmp4.code = 2; next; };', hint);
    }
  }
  if (!r.portFacing.lbForceSnatRouterIp) dropOwnDestination(f, p, r, 'lr_in_ip_input', 60, false);
}

/**
 * A port a BFD session names (build_lrouter_bfd_flows): BFD messages to its addresses go to the
 * chassis (handle_bfd_msg), and those from them (the chassis sends them in by the port) are
 * kept from the drop of packets from the router's own addresses.
 */
function bfdInput(f: Emit, p: RouterPortFacts, hint: Uuid): void {
  if (!p.hasBfd) return;
  const udp = `udp.dst == ${BFD_DST_PORT}`;
  if (p.networks.ipv4.length > 0) {
    const nets = v4NetworksText(p.networks, false);
    f('lr_in_ip_input', 110, `ip4.src == ${nets} && ${udp}`, 'next; ', hint);
    f('lr_in_ip_input', 110, `ip4.dst == ${nets} && ${udp}`, 'handle_bfd_msg(); ', hint);
  }
  if (p.networks.ipv6.length > 0) {
    const nets = v6NetworksText(p.networks);
    f('lr_in_ip_input', 110, `ip6.src == ${nets} && ${udp}`, 'next; ', hint);
    f('lr_in_ip_input', 110, `ip6.dst == ${nets} && ${udp}`, 'handle_bfd_msg(); ', hint);
  }
}

/** IPv6 router advertisements for a port facing a switch (ipv6_ra_configs:address_mode). */
function ndRa(f: Emit, p: RouterPortFacts, ctx: RouterPortContext, hint: Uuid): void {
  if (ctx.peerColumnSet || !ctx.hasPeer || p.networks.ipv6.length === 0) return;
  const ra = p.ipv6RaConfigs;
  const mode = ra.get('address_mode');
  if (mode !== 'slaac' && mode !== 'dhcpv6_stateful' && mode !== 'dhcpv6_stateless') return;
  const key = jsonKey(p.name);
  const mtuText = ra.get('mtu');
  const mtu = mtuText !== undefined && /^\d+$/.test(mtuText) && Number(mtuText) >= 1280 ? Number(mtuText) : 0;
  let actions = `reg0[5] = put_nd_ra_opts(addr_mode = "${mode}", slla = ${p.networks.ea}`;
  if (mtu > 0) actions += `, mtu = ${mtu}`;
  const prf = ra.get('router_preference') ?? 'MEDIUM';
  if (prf !== 'MEDIUM') actions += `, router_preference = "${prf}"`;
  const rdnss = ra.get('rdnss');
  if (rdnss !== undefined) actions += `, rdnss = ${rdnss}`;
  const dnssl = ra.get('dnssl');
  if (dnssl !== undefined) actions += `, dnssl = "${dnssl}"`;
  const routeInfo = ra.get('route_info');
  if (routeInfo !== undefined) actions += `, route_info = "${routeInfo}"`;
  const prefixes = p.networks.ipv6.filter((a) => !a.isLla);
  if (prefixes.length === 0) return;
  for (const a of prefixes) actions += `, prefix = ${a.networkS}/${a.plen}`;
  f('lr_in_nd_ra_options', 50, `inport == ${key} && ip6.dst == ff02::2 && nd_rs`, `${actions}); next;`, hint);
  const lla = p.networks.ipv6[p.networks.ipv6.length - 1] as { addrS: string };
  f('lr_in_nd_ra_response', 50, `inport == ${key} && ip6.dst == ff02::2 && nd_ra && reg0[5]`,
    `eth.dst = eth.src; eth.src = ${p.networks.ea}; ip6.dst = ip6.src; ip6.src = ${lla.addrS}; outport = inport; flags.loopback = 1; output;`, hint);
}

