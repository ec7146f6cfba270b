// What a logical router's flows are made of, one RouterFacts per router datapath: its options,
// its bound ports (with their networks), static routes, policies and NAT rules, read from the
// NB rows in the order ovn-northd sees them (set columns sorted by UUID), parsed the way
// northd.c parses them. Router flows are pure functions of these facts (lflows/router.ts).
//
// Incremental: an NB change to a router, its routes, policies or NAT rules, an LRP binding
// change (networks, options, peer), its load balancers or a datapath appearing marks the
// router dirty; a dirty
// router's facts are derived afresh and reported only when they differ.
import type { Database, DbDelta, Row, Uuid } from '../ovsdb/index.js';
import type * as nb from '../ovsdb/rows/nb.js';
import type { DatapathInfo, DatapathsChange, DatapathsData } from './datapaths.js';
import { datapathSbUuid } from './datapaths.js';
import type { EngineNode, NodeInputs } from './engine.js';
import { boolOption, nbGet, ownerOf } from './nb.js';
import type { LportAddresses } from './netaddr.js';
import { extractIpAddresses } from './netaddr.js';
import type { PortInfo, PortsChange, PortsData } from './ports.js';
import type { LbFacts, LbsChange, LbsData } from './load-balancers.js';
import { lbFactsOfDatapath } from './load-balancers.js';
import { relaying } from './ip-multicast.js';
import { findLportAddress } from './netaddr.js';
import { sameData } from './same-data.js';
import type { BfdData } from './bfd.js';

export interface StaticRouteFacts {
  readonly uuid: Uuid;
  readonly ipPrefix: string;
  readonly nexthop: string;
  readonly outputPort: string | undefined;
  readonly srcIp: boolean;
  readonly routeTable: string;
  readonly options: ReadonlyMap<string, string>;
  /** The BFD session it names (its NB row's dst_ip and status), when it names one. */
  readonly bfd: { readonly dstIp: string; readonly status: string | undefined } | undefined;
}

export interface PolicyFacts {
  readonly uuid: Uuid;
  readonly priority: number;
  readonly match: string;
  readonly action: 'allow' | 'drop' | 'reroute';
  readonly nexthop: string | undefined;
  /** Sorted, as the NB set holds them. */
  readonly nexthops: readonly string[];
  readonly options: ReadonlyMap<string, string>;
}

export interface NatFacts {
  readonly uuid: Uuid;
  readonly type: 'dnat' | 'dnat_and_snat' | 'snat';
  readonly externalIp: string;
  readonly logicalIp: string;
  readonly externalMac: string | undefined;
  readonly logicalPort: string | undefined;
  readonly externalPortRange: string;
  readonly options: ReadonlyMap<string, string>;
  readonly allowedExtIps: string | undefined;
  readonly exemptedExtIps: string | undefined;
  readonly gatewayPort: string | undefined;
  /** Its logical_port is a bound switch port of type "virtual". */
  readonly logicalPortVirtual: boolean;
  /** The external address when it parses to exactly one IP (nat_entry_is_valid). */
  readonly ext: { readonly v6: boolean; readonly addrS: string; readonly snAddrS: string } | undefined;
}

/** A router port as its router's flows see it. */
export interface RouterPortFacts {
  readonly name: string;
  /** Its binding's tunnel key (ECMP symmetric replies remember it in conntrack). */
  readonly key: number;
  readonly nbUuid: Uuid;
  readonly networks: LportAddresses;
  readonly enabled: boolean;
  readonly gateway: boolean;
  readonly options: ReadonlyMap<string, string>;
  readonly ipv6RaConfigs: ReadonlyMap<string, string>;
  /** The chassisredirect port its ARP replies are gated by (PortInfo.residentCr). */
  readonly residentCr: string | undefined;
  /** Its peer switch has a vtep port: as a gateway port it is not centralized. */
  readonly peerHasVtep: boolean;
  /** Its peer switch has a VLAN-tagged localnet port (PortInfo.peerVlanLocalnet). */
  readonly peerVlanLocalnet: boolean;
  /** A BFD session names it (op->has_bfd): its BFD messages go to the chassis, routes out of it pass them on. */
  readonly hasBfd: boolean;
}

export interface RouterFacts {
  readonly nbUuid: Uuid;
  readonly sbUuid: Uuid;
  readonly logicalDatapath: readonly Uuid[];
  readonly name: string;
  readonly options: ReadonlyMap<string, string>;
  /** options:chassis: a gateway router. */
  readonly chassis: string | undefined;
  /** Bound ports in NB order. */
  readonly ports: readonly RouterPortFacts[];
  readonly routes: readonly StaticRouteFacts[];
  readonly policies: readonly PolicyFacts[];
  readonly nats: readonly NatFacts[];
  /** The load balancers applied to it (directly or through groups), by UUID. */
  readonly lbs: readonly LbFacts[];
  /** The facts its ports' flows (and the switch side of its peers) read: when only routes or
   * policies change, only the router's own flows are regenerated. */
  readonly portFacing: PortFacingFacts;
}

/** A router's load balancer VIP addresses (od->lb_ips), each list sorted. */
export interface RouterLbIps {
  readonly v4: readonly string[];
  readonly v6: readonly string[];
  /** Those a router port's network holds, or all of a load balancer with neighbor_responder=all. */
  readonly v4Reachable: readonly string[];
  readonly v6Reachable: readonly string[];
}

export interface PortFacingFacts {
  readonly isGwRouter: boolean;
  /** Distributed gateway ports, by name in NB order. */
  readonly l3dgwPorts: readonly string[];
  /** Unique SNAT external IPs (and force-SNAT IPs), with the first SNAT rule's UUID when any. */
  readonly snatIps: ReadonlyMap<string, Uuid | undefined>;
  readonly lbForceSnatRouterIp: boolean;
  readonly learnFromArpRequest: boolean;
  readonly dynamicNeighRouters: boolean;
  readonly nats: readonly NatFacts[];
  /** A load balancer with VIPs applies (od->has_lb_vip). */
  readonly hasLbVip: boolean;
  /** It relays IP multicast (options:mcast_relay): its ports rewrite multicast's eth.src. */
  readonly mcastRelay: boolean;
  readonly lbIps: RouterLbIps;
}

export interface RoutersData {
  readonly bySb: Map<Uuid, RouterFacts>;
  /** Switch port name → the routers whose NAT rules name it as logical_port. */
  readonly natPortRefs: Map<string, Set<Uuid>>;
}

export interface RoutersChange {
  readonly routers: Map<Uuid, { readonly old: RouterFacts | undefined; readonly new: RouterFacts | undefined }>;
}

/** The one IP of a force-SNAT option (extract_ip_address: at most one of each family, host addresses). */
function forceSnatIps(options: ReadonlyMap<string, string>, key: string): string[] {
  const text = options.get(key);
  if (text === undefined) return [];
  const parsed = extractIpAddresses(text);
  if (parsed === undefined || parsed.ipv4.length > 1 || parsed.ipv6.length > 1) return [];
  if (parsed.ipv4.some((a) => a.plen !== 32) || parsed.ipv6.some((a) => a.plen !== 128)) return [];
  return [...parsed.ipv4.map((a) => a.addrS), ...parsed.ipv6.map((a) => a.addrS)];
}

function natFacts(db: Database, n: nb.NAT, ports: PortsData): NatFacts {
  const parsed = extractIpAddresses(n.external_ip);
  const one = parsed !== undefined && parsed.ipv4.length + parsed.ipv6.length === 1;
  const v6 = parsed?.ipv6[0];
  const v4 = parsed?.ipv4[0];
  const asName = (u: Uuid | undefined): string | undefined => (u === undefined ? undefined : nbGet<nb.Address_Set>(db, 'Address_Set', u)?.name);
  const gw = n.gateway_port[0];
  return {
    uuid: n._uuid, type: n.type, externalIp: n.external_ip, logicalIp: n.logical_ip, externalMac: n.external_mac[0], logicalPort: n.logical_port[0],
    externalPortRange: n.external_port_range, options: n.options, allowedExtIps: asName(n.allowed_ext_ips[0]), exemptedExtIps: asName(n.exempted_ext_ips[0]),
    gatewayPort: gw === undefined ? undefined : nbGet<nb.Logical_Router_Port>(db, 'Logical_Router_Port', gw)?.name,
    logicalPortVirtual: n.logical_port[0] !== undefined && ports.byName.get(n.logical_port[0])?.type === 'virtual',
    ext: !one ? undefined : v6 !== undefined ? { v6: true, addrS: v6.addrS, snAddrS: v6.snAddrS } : { v6: false, addrS: (v4 as { addrS: string }).addrS, snAddrS: '' },
  };
}

const NO_LB_IPS: RouterLbIps = Object.freeze({ v4: [], v6: [], v4Reachable: [], v6Reachable: [] });

/** The VIP addresses of a router's load balancers and those its ports can answer for. */
function lbIpsOf(lbs: readonly LbFacts[], ports: readonly RouterPortFacts[]): RouterLbIps {
  if (lbs.length === 0) return NO_LB_IPS;
  const v4 = new Set<string>();
  const v6 = new Set<string>();
  const v4Reachable = new Set<string>();
  const v6Reachable = new Set<string>();
  for (const lb of lbs) {
    for (const v of lb.vips) {
      // od->lb_ips goes by the parsed address (a template's reads as IPv6), reachability by family.
      (v.addrV6 ? v6 : v4).add(v.ip);
      const reachable = lb.neighMode === 'all' || (lb.neighMode === 'reachable' && ports.some((p) => findLportAddress(p.networks, v.ip) !== undefined));
      if (reachable) (v.v6 ? v6Reachable : v4Reachable).add(v.ip);
    }
  }
  const sorted = (s: Set<string>): string[] => [...s].sort();
  return { v4: sorted(v4), v6: sorted(v6), v4Reachable: sorted(v4Reachable), v6Reachable: sorted(v6Reachable) };
}

/**
 * A static route's facts by its NB row (rows are never changed in place): the same object for as
 * long as the route is unchanged, which is how a router's chunks of route flows (lflows/router.ts)
 * tell that their routes are as they were.
 */
const routeFacts = new WeakMap<nb.Logical_Router_Static_Route, StaticRouteFacts>();
/** Those of routes naming a BFD session, which are also the same for as long as the session's row is. */
const bfdRouteFacts = new WeakMap<nb.Logical_Router_Static_Route, { readonly session: nb.BFD; readonly facts: StaticRouteFacts }>();

/** A static route's facts (the same object while its row, and its BFD session's, are the same). */
function staticRouteFacts(db: Database, u: Uuid, r: nb.Logical_Router_Static_Route): StaticRouteFacts {
  const bfdUuid = r.bfd[0];
  const session = bfdUuid === undefined ? undefined : nbGet<nb.BFD>(db, 'BFD', bfdUuid);
  if (session === undefined) {
    let facts = routeFacts.get(r);
    if (facts === undefined) {
      facts = { uuid: u, ipPrefix: r.ip_prefix, nexthop: r.nexthop, outputPort: r.output_port[0], srcIp: r.policy[0] === 'src-ip', routeTable: r.route_table, options: r.options, bfd: undefined };
      routeFacts.set(r, facts);
    }
    return facts;
  }
  const known = bfdRouteFacts.get(r);
  if (known !== undefined && known.session === session) return known.facts;
  const facts: StaticRouteFacts = {
    uuid: u, ipPrefix: r.ip_prefix, nexthop: r.nexthop, outputPort: r.output_port[0], srcIp: r.policy[0] === 'src-ip', routeTable: r.route_table, options: r.options,
    bfd: { dstIp: session.dst_ip, status: session.status[0] },
  };
  bfdRouteFacts.set(r, { session, facts });
  return facts;
}

/** The facts of the router bound to datapath `dp`, from the NB and the ports' bindings. */
export function routerFactsOf(db: Database, dp: DatapathInfo, ports: PortsData, lbsData: LbsData, bfd: BfdData): RouterFacts | undefined {
  const lr = nbGet<nb.Logical_Router>(db, 'Logical_Router', dp.nbUuid);
  if (lr === undefined) return undefined;
  const portFacts: RouterPortFacts[] = [];
  for (const u of lr.ports) {
    const lrp = nbGet<nb.Logical_Router_Port>(db, 'Logical_Router_Port', u);
    const p = lrp === undefined ? undefined : ports.byName.get(lrp.name);
    if (p === undefined || p.kind !== 'lrp' || p.dp !== dp.sbUuid || p.networks === undefined) continue;
    portFacts.push({
      name: p.name, key: p.key, nbUuid: p.nbUuid, networks: p.networks, enabled: p.enabled, gateway: p.gateway, options: p.options, ipv6RaConfigs: p.ipv6RaConfigs, residentCr: p.residentCr, peerHasVtep: p.peerHasVtep,
      peerVlanLocalnet: p.peerVlanLocalnet, hasBfd: bfd.portSessions.has(p.name),
    });
  }
  const routes: StaticRouteFacts[] = [];
  for (const u of lr.static_routes) {
    const r = nbGet<nb.Logical_Router_Static_Route>(db, 'Logical_Router_Static_Route', u);
    if (r !== undefined) routes.push(staticRouteFacts(db, u, r));
  }
  const policies: PolicyFacts[] = [];
  for (const u of lr.policies) {
    const r = nbGet<nb.Logical_Router_Policy>(db, 'Logical_Router_Policy', u);
    if (r === undefined) continue;
    policies.push({ uuid: u, priority: r.priority, match: r.match, action: r.action, nexthop: r.nexthop[0], nexthops: r.nexthops, options: r.options });
  }
  const nats: NatFacts[] = [];
  for (const u of lr.nat) {
    const r = nbGet<nb.NAT>(db, 'NAT', u);
    if (r !== undefined) nats.push(natFacts(db, r, ports));
  }
  const chassis = lr.options.get('chassis');
  // Unique SNAT IPs (init_nat_entries): force-SNAT addresses first, then each valid SNAT rule's.
  const snatIps = new Map<string, Uuid | undefined>();
  const addSnat = (ip: string, rule: Uuid | undefined): void => {
    if (!snatIps.has(ip) || (snatIps.get(ip) === undefined && rule !== undefined)) snatIps.set(ip, rule);
  };
  for (const ip of forceSnatIps(lr.options, 'dnat_force_snat_ip')) addSnat(ip, undefined);
  const lbForceSnatRouterIp = lr.options.get('lb_force_snat_ip') === 'router_ip' && chassis !== undefined;
  if (!lbForceSnatRouterIp) for (const ip of forceSnatIps(lr.options, 'lb_force_snat_ip')) addSnat(ip, undefined);
  for (const n of nats) if (n.type === 'snat' && n.ext !== undefined) addSnat(n.ext.addrS, n.uuid);
  // A gateway router takes no distributed gateway ports (ovn-northd ignores them there).
  const l3dgwPorts = chassis !== undefined ? [] : portFacts.filter((p) => p.gateway).map((p) => p.name);
  const lbs = lbFactsOfDatapath(lbsData, dp.sbUuid);
  return {
    nbUuid: dp.nbUuid, sbUuid: dp.sbUuid, logicalDatapath: dp.logicalDatapath, name: lr.name, options: lr.options, chassis,
    ports: portFacts, routes, policies, nats, lbs,
    portFacing: {
      isGwRouter: chassis !== undefined, l3dgwPorts, snatIps, lbForceSnatRouterIp, learnFromArpRequest: boolOption(lr.options, 'always_learn_from_arp_request', true),
      dynamicNeighRouters: boolOption(lr.options, 'dynamic_neigh_routers', false), nats, hasLbVip: lbs.some((lb) => lb.hasVips), lbIps: lbIpsOf(lbs, portFacts),
      mcastRelay: relaying(dp.mcast),
    },
  };
}

function addNatPortRef(data: RoutersData, port: string, router: Uuid): void {
  let s = data.natPortRefs.get(port);
  if (s === undefined) data.natPortRefs.set(port, (s = new Set()));
  s.add(router);
}

function dropNatPortRef(data: RoutersData, port: string, router: Uuid): void {
  const s = data.natPortRefs.get(port);
  s?.delete(router);
  if (s?.size === 0) data.natPortRefs.delete(port);
}

function refresh(inputs: NodeInputs, data: RoutersData, touched: Iterable<Uuid>, out: RoutersChange): void {
  const db = inputs.data<Database>('nb');
  const dps = inputs.data<DatapathsData>('datapaths');
  const ports = inputs.data<PortsData>('ports');
  const lbs = inputs.data<LbsData>('lbs');
  const bfd = inputs.data<BfdData>('bfd');
  for (const sbUuid of [...new Set(touched)].sort()) {
    const old = data.bySb.get(sbUuid);
    const dp = dps.bySb.get(sbUuid);
    const now = dp === undefined || dp.kind !== 'router' ? undefined : routerFactsOf(db, dp, ports, lbs, bfd);
    // The same facts, unless its key moved it to another flow shard: its datapath array is
    // another then, of the same content (lflows/flow.ts, datapathRef).
    if (old !== undefined && now !== undefined && old.logicalDatapath === now.logicalDatapath && sameData(old, now)) continue;
    if (now === undefined) data.bySb.delete(sbUuid);
    else data.bySb.set(sbUuid, now);
    for (const n of old?.nats ?? []) if (n.logicalPort !== undefined) dropNatPortRef(data, n.logicalPort, sbUuid);
    for (const n of now?.nats ?? []) if (n.logicalPort !== undefined) addNatPortRef(data, n.logicalPort, sbUuid);
    if (old === undefined && now === undefined) continue;
    const prev = out.routers.get(sbUuid);
    out.routers.set(sbUuid, { old: prev === undefined ? old : prev.old, new: now });
  }
}

const ROUTER_CHILD_TABLES = ['Logical_Router_Static_Route', 'Logical_Router_Policy', 'NAT', 'Logical_Router_Port'] as const;

export function routersNode(): EngineNode<RoutersData, RoutersChange> {
  return {
    name: 'routers',
    inputs: ['nb', 'datapaths', 'ports', 'lbs', 'bfd'],
    init: () => ({ bySb: new Map(), natPortRefs: new Map() }),
    newChange: () => ({ routers: new Map() }),
    isEmpty: (c) => c.routers.size === 0,
    recompute(data: RoutersData, inputs: NodeInputs, out: RoutersChange): void {
      const dps = inputs.data<DatapathsData>('datapaths');
      const touched = new Set<Uuid>(data.bySb.keys());
      for (const dp of dps.bySb.values()) if (dp.kind === 'router') touched.add(dp.sbUuid);
      refresh(inputs, data, touched, out);
    },
    handlers: {
      nb(data: RoutersData, change: unknown, inputs: NodeInputs, out: RoutersChange) {
        const db = inputs.data<Database>('nb');
        const ports = inputs.data<PortsData>('ports');
        const touched = new Set<Uuid>();
        for (const c of (change as DbDelta).changes) {
          if (c.table === 'Logical_Router') {
            touched.add(datapathSbUuid(c.uuid));
          } else if ((ROUTER_CHILD_TABLES as readonly string[]).includes(c.table)) {
            // A deleted child changed its router's set column too; a live one names its router.
            const owner = ownerOf(db, 'Logical_Router', c.uuid);
            if (owner !== undefined) touched.add(datapathSbUuid(owner));
          } else if (c.table === 'BFD') {
            // The routes naming the session read its dst_ip and status; the port it names has
            // BFD flows while any session names it.
            for (const referrer of db.weakReferrers(c.uuid).keys()) {
              const owner = db.get('Logical_Router_Static_Route', referrer) === undefined ? undefined : ownerOf(db, 'Logical_Router', referrer);
              if (owner !== undefined) touched.add(datapathSbUuid(owner));
            }
            for (const row of [c.kind === 'insert' ? undefined : c.old, c.kind === 'delete' ? undefined : c.new]) {
              const port = row === undefined ? undefined : ports.byName.get((row as unknown as nb.BFD).logical_port);
              if (port?.kind === 'lrp') touched.add(port.dp);
            }
          } else if (c.table === 'Address_Set') {
            // NAT allowed/exempted external IPs name an address set.
            for (const referrer of [...db.strongReferrers(c.uuid).keys(), ...db.weakReferrers(c.uuid).keys()]) {
              const owner = db.get('NAT', referrer) === undefined ? undefined : ownerOf(db, 'Logical_Router', referrer);
              if (owner !== undefined) touched.add(datapathSbUuid(owner));
            }
            const renamed = c.kind === 'modify' && (c.old as Row & { name: string }).name !== (c.new as Row & { name: string }).name;
            if (renamed) for (const r of data.bySb.values()) if (r.nats.some((n) => n.allowedExtIps !== undefined || n.exemptedExtIps !== undefined)) touched.add(r.sbUuid);
          }
        }
        if (touched.size === 0) return 'unchanged';
        refresh(inputs, data, touched, out);
        return 'handled';
      },
      // What the bfd node holds changes only with the NB, whose handler above reads it.
      bfd: () => 'unchanged',
      datapaths(data: RoutersData, change: unknown, inputs: NodeInputs, out: RoutersChange) {
        const touched: Uuid[] = [];
        for (const [sbUuid, { old, new: now }] of (change as DatapathsChange).datapaths) {
          if (old?.kind === 'router' || now?.kind === 'router') touched.push(sbUuid);
        }
        if (touched.length === 0) return 'unchanged';
        refresh(inputs, data, touched, out);
        return 'handled';
      },
      lbs(data: RoutersData, change: unknown, inputs: NodeInputs, out: RoutersChange) {
        // A router's load balancers: the pairs that began or stopped, and every router of a
        // load balancer whose facts changed.
        const c = change as LbsChange;
        const lbs = inputs.data<LbsData>('lbs');
        const touched = new Set<Uuid>();
        const note = (dp: Uuid): void => {
          if (data.bySb.has(dp) || lbs.byDp.get(dp)?.kind === 'router') touched.add(dp);
        };
        for (const pair of c.pairs) note(pair.slice(0, pair.indexOf(' ')));
        for (const lb of c.facts) for (const dp of lbs.dpsOf.get(lb) ?? []) note(dp);
        for (const dp of c.hasVipFlipped.keys()) note(dp);
        // A load balancer deleted: the routers that listed it.
        for (const lb of c.facts) {
          if (lbs.lbs.has(lb)) continue;
          for (const r of data.bySb.values()) if (r.lbs.some((f) => f.uuid === lb)) touched.add(r.sbUuid);
        }
        if (touched.size === 0) return 'unchanged';
        refresh(inputs, data, touched, out);
        return 'handled';
      },
      ports(data: RoutersData, change: unknown, inputs: NodeInputs, out: RoutersChange) {
        const touched: Uuid[] = [];
        const note = (p: PortInfo | undefined): void => {
          if (p !== undefined && p.kind === 'lrp') touched.push(p.dp);
        };
        for (const [name, { old, new: now }] of (change as PortsChange).ports) {
          note(old);
          note(now);
          // A switch port becoming (or ceasing to be) virtual: the routers whose NAT names it.
          if ((old?.type === 'virtual') !== (now?.type === 'virtual')) for (const r of data.natPortRefs.get(name) ?? []) touched.push(r);
        }
        if (touched.length === 0) return 'unchanged';
        refresh(inputs, data, touched, out);
        return 'handled';
      },
    },
  };
}
