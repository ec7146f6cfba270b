// IP multicast groups learned by snooping, as ovn-northd 23.03 builds them from the SB
// IGMP_Group rows chassis write (build_mcast_groups): per switch, one Multicast_Group per group
// address, named by the address as the chassis wrote it, holding every port any chassis
// reported for it (but ports that flood all multicast anyway: options:mcast_flood, or router
// ports facing a relaying router) and the switch's localnet ports; the "mrouters" rows' ports
// join the switch's _MC_mrouter_flood. A router relaying multicast gets a group for every
// group of its switches (IPv6 only the routable scopes, RFC 4291 2.7), holding the router port
// facing each such switch (its chassisredirect port for a gateway port), unless that port
// floods statically. Group tunnel keys come from 32773 up, lowest free, kept while the group
// lives (history, like port keys).
//
// Departures: a row naming a router datapath is ignored (ovn-controller snoops on switches
// only; ovn-northd would make the group and then build it no switch flow); a row without
// chassis or datapath, or naming a datapath that is gone, is ignored rather than deleted (the
// rows are the chassis', in the chassis database); of two spellings of one address the
// lexicographically first names the group (ovn-northd: the first in its hash order); addresses
// parse as inet_pton does, but IPv6 with an embedded IPv4 tail is not read.
import type { Uuid } from '../ovsdb/index.js';
import { formatIpv6, parseIpv6Groups } from './addresses.js';
import type { DatapathsData } from './datapaths.js';
import { crPortName, lrpOfCrName } from './gateway-ports.js';
import { boolOption } from './nb.js';
import { ipv4Value } from './netaddr.js';
import type { PortInfo, PortsData } from './ports.js';
import { addTo, removeFrom } from './static-mac-bindings.js';
import { KeySpace } from './tunnel-keys.js';

/** OVN_MIN_IP_MULTICAST .. OVN_MAX_IP_MULTICAST: the keys of learned groups. */
export const MC_IP_MULTICAST_MIN = 32773;
export const MC_IP_MULTICAST_MAX = 65535;
/** OVN_IGMP_GROUP_MROUTERS: a row whose ports lead to multicast routers. */
export const IGMP_GROUP_MROUTERS = 'mrouters';

/** An SB IGMP_Group row as a chassis wrote it (references as UUIDs, maybe of rows now gone). */
export interface IgmpGroupReport {
  readonly address: string;
  readonly datapath: Uuid | undefined;
  readonly chassis: Uuid | undefined;
  readonly ports: readonly Uuid[];
}

/** The sb_igmp source: the chassis' IGMP_Group rows by UUID. */
export type SbIgmpData = ReadonlyMap<Uuid, IgmpGroupReport>;
/** Its change: the rows changed, each with what it was before (undefined: it is new). */
export type SbIgmpChange = ReadonlyMap<Uuid, IgmpGroupReport | undefined>;

/** A learned group of a datapath, with its tunnel key. */
export interface IpGroup {
  /** The address as the (first) row wrote it: the Multicast_Group's name. */
  readonly name: string;
  readonly key: number;
  readonly v4: boolean;
  /** IPv4 as a 32-bit number, IPv6 as eight groups. */
  readonly addr: number | readonly number[];
  /** Member Port_Binding UUIDs, sorted. */
  readonly ports: readonly Uuid[];
}

export interface IgmpState {
  /** IGMP_Group rows by the datapath they name, and by the ports they name. */
  readonly rowsByDp: Map<Uuid, Set<Uuid>>;
  readonly rowsByPort: Map<Uuid, Set<Uuid>>;
  /** Datapath → its learned groups, by name. */
  readonly groups: Map<Uuid, ReadonlyMap<string, IpGroup>>;
  /** Switch → the ports its "mrouters" rows name (sorted). */
  readonly mrouters: Map<Uuid, readonly Uuid[]>;
  /** Switch → the relaying routers it feeds, with the router ports that face it. */
  readonly feeds: Map<Uuid, ReadonlyMap<Uuid, readonly Uuid[]>>;
  /** Router → the switches feeding it. */
  readonly fedBy: Map<Uuid, Set<Uuid>>;
  /** Per datapath: its groups' keys by name. */
  readonly keys: Map<Uuid, KeySpace>;
  /** Keys to reuse for groups first seen by a recompute: `${dp} ${name}` → key. */
  readonly preferredKeys: Map<string, number>;
}

export function newIgmpState(): IgmpState {
  return { rowsByDp: new Map(), rowsByPort: new Map(), groups: new Map(), mrouters: new Map(), feeds: new Map(), fedBy: new Map(), keys: new Map(), preferredKeys: new Map() };
}

/** Files a row under its datapath and ports (present) or takes it out. */
export function indexRow(state: IgmpState, uuid: Uuid, row: IgmpGroupReport, present: boolean): void {
  const f = present ? addTo : removeFrom;
  if (row.datapath !== undefined) f(state.rowsByDp, row.datapath, uuid);
  for (const p of row.ports) f(state.rowsByPort, p, uuid);
}

/** ovn_igmp_group_get_address: IPv4 (inet_pton) or IPv6. */
function parseGroupAddress(text: string): { v4: boolean; addr: number | readonly number[]; id: string } | undefined {
  const v4 = ipv4Value(text);
  if (v4 !== undefined) return { v4: true, addr: v4, id: `4 ${v4}` };
  const v6 = parseIpv6Groups(text);
  if (v6 === undefined) return undefined;
  return { v4: false, addr: v6, id: `6 ${formatIpv6(v6)}` };
}

/** ipv6_addr_is_routable_multicast: multicast with a scope beyond the site's organization. */
function routableV6(g: readonly number[]): boolean {
  if ((g[0] as number) >> 8 !== 0xff) return false;
  const scope = (g[0] as number) & 0x0f;
  return !(scope <= 3 || scope === 0x0f);
}

interface Pending {
  name: string;
  readonly v4: boolean;
  readonly addr: number | readonly number[];
  readonly ports: Set<Uuid>;
}

/** The port whose Port_Binding has UUID `u` (the rows name ports so), through the bindings' own table. */
function portBySb(ports: PortsData, u: Uuid): PortInfo | undefined {
  const row = ports.table.rows.get(u);
  return row === undefined ? undefined : ports.byName.get(row.logical_port as string);
}

/** A port a row names that the group takes: a switch port not flooding multicast anyway. */
function memberOf(p: PortInfo | undefined): boolean {
  if (p === undefined || p.kind !== 'lsp') return false;
  if (boolOption(p.options, 'mcast_flood', false)) return false;
  return p.routerPeer?.mcastRelay !== true;
}

/** A switch's groups and mrouter ports from its rows, before keys. */
function switchGroups(state: IgmpState, igmp: SbIgmpData, dps: DatapathsData, ports: PortsData, sw: Uuid): { groups: Map<string, Pending>; mrouters: Uuid[] } {
  const groups = new Map<string, Pending>();
  const mrouters = new Set<Uuid>();
  const info = dps.bySb.get(sw);
  if (info === undefined || info.kind !== 'switch') return { groups, mrouters: [] };
  for (const uuid of [...(state.rowsByDp.get(sw) ?? [])].sort()) {
    const row = igmp.get(uuid);
    if (row === undefined || row.chassis === undefined || row.datapath !== sw) continue;
    const members = row.ports.filter((u) => memberOf(portBySb(ports, u)));
    if (members.length === 0) continue;
    if (row.address === IGMP_GROUP_MROUTERS) {
      for (const u of members) mrouters.add(u);
      continue;
    }
    const a = parseGroupAddress(row.address);
    if (a === undefined) continue;
    let g = groups.get(a.id);
    if (g === undefined) groups.set(a.id, (g = { name: row.address, v4: a.v4, addr: a.addr, ports: new Set() }));
    else if (row.address < g.name) g.name = row.address;
    for (const u of members) g.ports.add(u);
  }
  if (groups.size > 0) {
    // The switch's localnet ports take every group's traffic.
    for (const name of ports.byDp.get(sw) ?? []) {
      const p = ports.byName.get(name);
      if (p?.type === 'localnet') for (const g of groups.values()) g.ports.add(p.sbUuid);
    }
  }
  return { groups, mrouters: [...mrouters].sort() };
}

/** The relaying routers a switch with groups feeds: router → the ports facing it. */
function switchFeeds(ports: PortsData, sw: Uuid): Map<Uuid, Uuid[]> {
  const out = new Map<Uuid, Uuid[]>();
  for (const name of [...(ports.routersByDp.get(sw) ?? [])].sort()) {
    const peer = ports.byName.get(name)?.routerPeer;
    if (peer === undefined || !peer.mcastRelay) continue;
    const lrp = ports.byName.get(peer.name);
    if (lrp === undefined || boolOption(lrp.options, 'mcast_flood', false)) continue;
    const facing = ports.byName.get(crPortName(peer.name)) ?? lrp;
    let list = out.get(peer.dp);
    if (list === undefined) out.set(peer.dp, (list = []));
    list.push(facing.sbUuid);
  }
  return out;
}

/** Gives keys to `wanted` groups of `dp` (keeping those it had), dropping the rest; the groups with keys. */
function keyed(state: IgmpState, dp: Uuid, wanted: Map<string, Pending>): Map<string, IpGroup> {
  let space = state.keys.get(dp);
  if (space === undefined && wanted.size > 0) state.keys.set(dp, (space = new KeySpace(MC_IP_MULTICAST_MIN, MC_IP_MULTICAST_MAX)));
  const out = new Map<string, IpGroup>();
  if (space === undefined) return out;
  const names = new Set([...wanted.values()].map((g) => g.name));
  for (const owner of space.owners()) if (!names.has(owner)) space.remove(owner);
  for (const name of [...names].sort()) {
    if (space.has(name)) continue;
    space.add(name);
    const k = state.preferredKeys.get(`${dp} ${name}`);
    if (k !== undefined) space.keep(name, k);
  }
  space.settle();
  space.takeChanged();
  for (const g of [...wanted.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    const key = space.keyOf(g.name);
    if (key === undefined) continue; // The keys ran out: ovn-northd drops the group too.
    out.set(g.name, { name: g.name, key, v4: g.v4, addr: g.addr, ports: [...g.ports].sort() });
  }
  if (space.size === 0) state.keys.delete(dp);
  return out;
}

function sameGroups(a: ReadonlyMap<string, IpGroup> | undefined, b: ReadonlyMap<string, IpGroup>): boolean {
  if ((a?.size ?? 0) !== b.size) return false;
  for (const [name, g] of b) {
    const o = a?.get(name);
    if (o === undefined || o.key !== g.key || o.ports.length !== g.ports.length || o.ports.some((u, i) => u !== g.ports[i])) return false;
  }
  return true;
}

function sameList(a: readonly Uuid[] | undefined, b: readonly Uuid[]): boolean {
  return (a?.length ?? 0) === b.length && b.every((u, i) => a?.[i] === u);
}

/**
 * Builds again the groups of the switches in `switches` and of the routers they feed (or fed).
 * Returns the datapaths whose groups changed, and those whose mrouter ports changed.
 */
export function refreshGroups(state: IgmpState, igmp: SbIgmpData, dps: DatapathsData, ports: PortsData, switches: ReadonlySet<Uuid>): { groups: Set<Uuid>; mrouters: Set<Uuid> } {
  const changed = new Set<Uuid>();
  const mrouterChanged = new Set<Uuid>();
  const routers = new Set<Uuid>();
  for (const sw of [...switches].sort()) {
    // A router named by rows (which make nothing of it): its groups are those it relays.
    if (dps.bySb.get(sw)?.kind === 'router') {
      routers.add(sw);
      continue;
    }
    const { groups, mrouters } = switchGroups(state, igmp, dps, ports, sw);
    if (!sameList(state.mrouters.get(sw), mrouters)) mrouterChanged.add(sw);
    if (mrouters.length > 0) state.mrouters.set(sw, mrouters);
    else state.mrouters.delete(sw);
    const now = keyed(state, sw, groups);
    if (!sameGroups(state.groups.get(sw), now)) changed.add(sw);
    if (now.size > 0) state.groups.set(sw, now);
    else state.groups.delete(sw);
    // The routers it fed and feeds now (a switch without groups, or only mrouters, feeds none).
    const before = state.feeds.get(sw);
    for (const r of before?.keys() ?? []) {
      routers.add(r);
      removeFrom(state.fedBy, r, sw);
    }
    const feeds = now.size > 0 ? switchFeeds(ports, sw) : new Map<Uuid, Uuid[]>();
    if (feeds.size > 0) state.feeds.set(sw, feeds);
    else state.feeds.delete(sw);
    for (const r of feeds.keys()) {
      routers.add(r);
      addTo(state.fedBy, r, sw);
    }
  }
  for (const r of [...routers].sort()) {
    const wanted = new Map<string, Pending>();
    for (const sw of [...(state.fedBy.get(r) ?? [])].sort()) {
      const facing = state.feeds.get(sw)?.get(r) ?? [];
      for (const g of state.groups.get(sw)?.values() ?? []) {
        if (!g.v4 && !routableV6(g.addr as readonly number[])) continue;
        const id = g.v4 ? `4 ${g.addr as number}` : `6 ${formatIpv6(g.addr as readonly number[])}`;
        let rg = wanted.get(id);
        if (rg === undefined) wanted.set(id, (rg = { name: g.name, v4: g.v4, addr: g.addr, ports: new Set() }));
        else if (g.name < rg.name) rg.name = g.name;
        for (const u of facing) rg.ports.add(u);
      }
    }
    const now = keyed(state, r, wanted);
    if (!sameGroups(state.groups.get(r), now)) changed.add(r);
    if (now.size > 0) state.groups.set(r, now);
    else state.groups.delete(r);
  }
  return { groups: changed, mrouters: mrouterChanged };
}

/**
 * The switches whose groups a port change may change: those whose rows name the port, the
 * port's own (its localnet ports join every group; its router ports decide what it feeds),
 * and those whose router ports face an LRP (or its chassisredirect port) that changed.
 */
export function switchesTouchedByPort(state: IgmpState, igmp: SbIgmpData, ports: PortsData, p: PortInfo, into: Set<Uuid>): void {
  for (const row of state.rowsByPort.get(p.sbUuid) ?? []) {
    const dp = igmp.get(row)?.datapath;
    if (dp !== undefined) into.add(dp);
  }
  if (state.rowsByDp.has(p.dp) || state.groups.has(p.dp)) into.add(p.dp);
  if (p.kind === 'lrp') {
    const lrp = p.type === 'chassisredirect' ? lrpOfCrName(p.name) ?? p.name : p.name;
    for (const lsp of ports.routerPortRefs.get(lrp) ?? []) {
      const q = ports.byName.get(lsp);
      if (q !== undefined && (state.rowsByDp.has(q.dp) || state.groups.has(q.dp))) into.add(q.dp);
    }
  }
}

/** [datapath, group name, key] of every learned group, sorted: NorthdHistory.igmpKeys. */
export function igmpKeysOf(state: IgmpState): [Uuid, string, number][] {
  const out: [Uuid, string, number][] = [];
  for (const [dp, groups] of state.groups) for (const g of groups.values()) out.push([dp, g.name, g.key]);
  return out.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
}
