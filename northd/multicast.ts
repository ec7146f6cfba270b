// Multicast_Group rows, as ovn-northd 23.03 builds them (build_mcast_groups). A switch's:
// _MC_flood (key 32768) holds every enabled LSP; _MC_flood_l2 (32772) every enabled LSP that is
// not of type router; _MC_unknown (32769) every enabled, non-external LSP whose addresses include
// "unknown"; _MC_mrouter_flood (32770) every enabled router LSP whose router relays IP multicast
// and every enabled LSP with options:mcast_flood_reports; _MC_static (32771) every enabled LSP
// with options:mcast_flood. A router's _MC_static holds its enabled ports with
// options:mcast_flood, a distributed gateway port by its chassisredirect port only (traffic to
// it must be tunneled to the gateway chassis); on a gateway router, where a port with gateway
// chassis has no chassisredirect port, the port itself. A group with no ports has no row.
//
// A row's _version follows its ports through their set sum (northd/hash.ts), as a
// Logical_DP_Group's does: one port joining a switch of thousands is a constant-time change to
// the version, where hashing the row's text would read every port again.
import type * as sb from '../ovsdb/rows/sb.js';
import type { Uuid } from '../ovsdb/index.js';
import type { EngineNode, NodeInputs } from './engine.js';
import type { DatapathsChange, DatapathsData } from './datapaths.js';
import { hashUuid, setVersion, SummedSet, uuidWords } from './hash.js';
import type { IgmpState, IpGroup, SbIgmpChange, SbIgmpData } from './igmp-groups.js';
import { igmpKeysOf as igmpStateKeys, indexRow, newIgmpState, refreshGroups, switchesTouchedByPort } from './igmp-groups.js';
import { boolOption } from './nb.js';
import type { PortInfo, PortsChange, PortsData } from './ports.js';
import { SbChangeSet, SbTable, versioned } from './sb-changes.js';

export const MC_FLOOD = { name: '_MC_flood', key: 32768 } as const;
export const MC_UNKNOWN = { name: '_MC_unknown', key: 32769 } as const;
export const MC_MROUTER_FLOOD = { name: '_MC_mrouter_flood', key: 32770 } as const;
export const MC_STATIC = { name: '_MC_static', key: 32771 } as const;
export const MC_FLOOD_L2 = { name: '_MC_flood_l2', key: 32772 } as const;
export { IGMP_GROUP_MROUTERS, MC_IP_MULTICAST_MIN } from './igmp-groups.js';
export type { IgmpGroupReport, IpGroup, SbIgmpChange, SbIgmpData } from './igmp-groups.js';
const GROUPS = [MC_FLOOD, MC_UNKNOWN, MC_MROUTER_FLOOD, MC_STATIC, MC_FLOOD_L2] as const;
type GroupName = (typeof GROUPS)[number]['name'];

export interface MulticastData {
  /**
   * Datapath → group name → its member Port_Binding UUIDs, kept sorted (as the row lists them)
   * with their set sum: one port joining or leaving sorts and hashes nothing again.
   */
  readonly members: Map<Uuid, Map<GroupName, SummedSet>>;
  /**
   * Switch datapath → how many of its router LSPs face a router relaying IP multicast, enabled
   * or not (a positive count is ovn-northd's mcast_sw_info.flood_relay).
   */
  readonly relayLinks: Map<Uuid, number>;
  readonly table: SbTable;
  /** What snooping learned (igmp-groups.ts): the chassis' IGMP_Group rows made groups. */
  readonly igmp: IgmpState;
  /** Datapath → the names of its learned groups' rows written. */
  readonly igmpRows: Map<Uuid, Set<string>>;
  /** Keys to reuse for learned groups first seen by a recompute (igmp.preferredKeys). */
  readonly preferredKeys: Map<string, number>;
}

export interface MulticastChange {
  readonly sb: SbChangeSet;
  /**
   * Datapaths whose facts their flows read changed: flags (`datapathFlags`: unknown, static
   * flood, relay flood) or learned groups.
   */
  readonly flagsChanged: Set<Uuid>;
}

export function multicastGroupUuid(dp: Uuid, name: string): Uuid {
  return hashUuid(['Multicast_Group', dp, name]);
}

const STATIC_ONLY: readonly GroupName[] = Object.freeze([MC_STATIC.name]);
const NONE: readonly GroupName[] = Object.freeze([]);

function groupsOf(p: PortInfo): readonly GroupName[] {
  if (!p.enabled) return NONE;
  // ovn-northd adds a gateway port's chassisredirect port in its place (ovn_multicast_add), and
  // the chassisredirect port, which shares the LRP's options, adds itself: its own membership
  // stands for both, and the LRP is never a member.
  if (p.kind === 'lrp') return p.crPort === undefined && boolOption(p.options, 'mcast_flood', false) ? STATIC_ONLY : NONE;
  const out: GroupName[] = [MC_FLOOD.name];
  if (p.type !== 'router') out.push(MC_FLOOD_L2.name);
  if (p.hasUnknown && p.type !== 'external') out.push(MC_UNKNOWN.name);
  if (p.routerPeer?.mcastRelay === true || boolOption(p.options, 'mcast_flood_reports', false)) out.push(MC_MROUTER_FLOOD.name);
  if (boolOption(p.options, 'mcast_flood', false)) out.push(MC_STATIC.name);
  return out;
}

function hasMembers(data: MulticastData, dp: Uuid, g: GroupName): boolean {
  return (data.members.get(dp)?.get(g)?.size ?? 0) > 0;
}

export function hasUnknown(data: MulticastData, dp: Uuid): boolean {
  return hasMembers(data, dp, MC_UNKNOWN.name);
}

/** Some enabled port of the datapath floods all IP multicast (mcast_flood): flood_static. */
export function floodStatic(data: MulticastData, dp: Uuid): boolean {
  return hasMembers(data, dp, MC_STATIC.name);
}

/** A router port of the switch faces a router relaying IP multicast: flood_relay. */
export function floodRelay(data: MulticastData, dp: Uuid): boolean {
  return data.relayLinks.has(dp);
}

/** The facts of a datapath's groups its flows read, as bits (compared before and after a change). */
function datapathFlags(data: MulticastData, dp: Uuid): number {
  return (hasUnknown(data, dp) ? 1 : 0) | (floodStatic(data, dp) ? 2 : 0) | (floodRelay(data, dp) ? 4 : 0);
}

function setMembership(data: MulticastData, p: PortInfo, present: boolean): void {
  if (p.routerPeer?.mcastRelay === true) {
    const n = (data.relayLinks.get(p.dp) ?? 0) + (present ? 1 : -1);
    if (n > 0) data.relayLinks.set(p.dp, n);
    else data.relayLinks.delete(p.dp);
  }
  for (const g of groupsOf(p)) {
    let groups = data.members.get(p.dp);
    if (groups === undefined) data.members.set(p.dp, (groups = new Map()));
    let m = groups.get(g);
    if (m === undefined) groups.set(g, (m = new SummedSet(uuidWords)));
    if (present) m.add(p.sbUuid);
    else m.delete(p.sbUuid);
    if (m.size === 0) groups.delete(g);
    if (groups.size === 0) data.members.delete(p.dp);
  }
}

/** Writes the rows of `dp`'s groups (those in `only`, when given) from the membership lists. */
function writeRows(data: MulticastData, dp: Uuid, out: SbChangeSet, only?: ReadonlySet<GroupName>): void {
  const groups = data.members.get(dp);
  for (const g of GROUPS) {
    if (only !== undefined && !only.has(g.name)) continue;
    const uuid = multicastGroupUuid(dp, g.name);
    let m = groups?.get(g.name);
    // The ports snooping found leading to multicast routers join _MC_mrouter_flood.
    const extra = g === MC_MROUTER_FLOOD ? data.igmp.mrouters.get(dp) : undefined;
    if (extra !== undefined) {
      const union = new SummedSet(uuidWords);
      for (const u of m?.items ?? []) union.add(u);
      for (const u of extra) union.add(u);
      m = union;
    }
    if (m === undefined || m.size === 0) {
      data.table.remove(uuid, out);
      continue;
    }
    // A copy: the row's value must not change when the membership list does.
    const row: sb.Multicast_Group = { _uuid: uuid, _version: setVersion('Multicast_Group', uuid, m.size, m.sum), datapath: dp, name: g.name, tunnel_key: g.key, ports: m.copy() };
    data.table.put(row, out);
  }
}

/** Writes the rows of `dp`'s learned groups, removing those of groups gone. */
function writeIgmpRows(data: MulticastData, dp: Uuid, out: SbChangeSet): void {
  const now = data.igmp.groups.get(dp);
  const before = data.igmpRows.get(dp);
  for (const name of before ?? []) if (now?.has(name) !== true) data.table.remove(multicastGroupUuid(dp, name), out);
  if (now === undefined || now.size === 0) {
    data.igmpRows.delete(dp);
    return;
  }
  data.igmpRows.set(dp, new Set(now.keys()));
  for (const g of now.values()) {
    data.table.put(versioned<sb.Multicast_Group>({ _uuid: multicastGroupUuid(dp, g.name), _version: '', datapath: dp, name: g.name, tunnel_key: g.key, ports: g.ports }), out);
  }
}

/** Builds the learned groups of `switches` (and the routers they feed) again and writes what changed. */
function refreshLearned(data: MulticastData, inputs: NodeInputs, switches: ReadonlySet<Uuid>, out: MulticastChange): void {
  if (switches.size === 0) return;
  const r = refreshGroups(data.igmp, inputs.data<SbIgmpData>('sb_igmp'), inputs.data<DatapathsData>('datapaths'), inputs.data<PortsData>('ports'), switches);
  for (const dp of [...r.groups].sort()) {
    writeIgmpRows(data, dp, out.sb);
    out.flagsChanged.add(dp);
  }
  for (const dp of [...r.mrouters].sort()) writeRows(data, dp, out.sb, MROUTER_ONLY);
}

const MROUTER_ONLY: ReadonlySet<GroupName> = new Set([MC_MROUTER_FLOOD.name]);

/** A datapath's learned groups (igmp-groups.ts), by name. */
export function learnedGroups(data: MulticastData, dp: Uuid): ReadonlyMap<string, IpGroup> | undefined {
  return data.igmp.groups.get(dp);
}

/** NorthdHistory.igmpKeys. */
export function igmpKeysOf(data: MulticastData): [Uuid, string, number][] {
  return igmpStateKeys(data.igmp);
}

export function multicastNode(): EngineNode<MulticastData, MulticastChange> {
  return {
    name: 'multicast',
    inputs: ['ports', 'datapaths', 'sb_igmp'],
    init: () => {
      const igmp = newIgmpState();
      return { members: new Map(), relayLinks: new Map(), table: new SbTable('Multicast_Group'), igmp, igmpRows: new Map(), preferredKeys: igmp.preferredKeys };
    },
    newChange: () => ({ sb: new SbChangeSet(), flagsChanged: new Set() }),
    isEmpty: (c) => c.sb.size === 0 && c.flagsChanged.size === 0,
    recompute(data: MulticastData, inputs: NodeInputs, out: MulticastChange): void {
      out.sb.maybeTrackWhole(data.table);
      const ports = inputs.data<PortsData>('ports');
      const igmp = inputs.data<SbIgmpData>('sb_igmp');
      const dps = new Set([...data.members.keys(), ...data.relayLinks.keys(), ...data.igmp.groups.keys()]);
      const before = new Map([...dps].map((dp) => [dp, datapathFlags(data, dp)]));
      data.members.clear();
      data.relayLinks.clear();
      data.igmp.rowsByDp.clear();
      data.igmp.rowsByPort.clear();
      // Every list afresh (a SummedSet sorts once when read after many joins).
      for (const p of ports.byName.values()) setMembership(data, p, true);
      for (const [uuid, row] of igmp) indexRow(data.igmp, uuid, row, true);
      // Learned groups afresh (their keys kept): every switch with rows, every one that fed a
      // router, and every datapath that had groups (refreshGroups takes routers as routers).
      const switches = new Set([...data.igmp.rowsByDp.keys(), ...data.igmp.feeds.keys(), ...data.igmp.groups.keys()]);
      refreshGroups(data.igmp, igmp, inputs.data<DatapathsData>('datapaths'), ports, switches);
      for (const dp of data.igmp.groups.keys()) dps.add(dp);
      for (const dp of data.igmp.mrouters.keys()) dps.add(dp);
      for (const dp of data.igmpRows.keys()) dps.add(dp);
      for (const dp of data.members.keys()) dps.add(dp);
      for (const dp of data.relayLinks.keys()) dps.add(dp);
      for (const row of data.table.rows.values()) dps.add((row as unknown as sb.Multicast_Group).datapath);
      for (const dp of [...dps].sort()) {
        writeRows(data, dp, out.sb);
        writeIgmpRows(data, dp, out.sb);
        if ((before.get(dp) ?? 0) !== datapathFlags(data, dp)) out.flagsChanged.add(dp);
        else if (data.igmp.groups.has(dp)) out.flagsChanged.add(dp);
      }
    },
    handlers: {
      ports(data: MulticastData, change: unknown, inputs: NodeInputs, out: MulticastChange) {
        // Datapath → the groups whose membership may have changed: only their rows are written.
        const dirty = new Map<Uuid, Set<GroupName>>();
        const touch = (p: PortInfo): void => {
          let groups = dirty.get(p.dp);
          if (groups === undefined) dirty.set(p.dp, (groups = new Set()));
          for (const g of groupsOf(p)) groups.add(g);
        };
        const before = new Map<Uuid, number>();
        const ports = inputs.data<PortsData>('ports');
        const igmp = inputs.data<SbIgmpData>('sb_igmp');
        const learned = new Set<Uuid>();
        for (const { old, new: now } of (change as PortsChange).ports.values()) {
          for (const p of [old, now]) if (p !== undefined && !before.has(p.dp)) before.set(p.dp, datapathFlags(data, p.dp));
          if (old !== undefined) {
            setMembership(data, old, false);
            touch(old);
          }
          if (now !== undefined) {
            setMembership(data, now, true);
            touch(now);
          }
          for (const p of [old, now]) if (p !== undefined) switchesTouchedByPort(data.igmp, igmp, ports, p, learned);
        }
        for (const [dp, flags] of before) if (flags !== datapathFlags(data, dp)) out.flagsChanged.add(dp);
        for (const dp of [...dirty.keys()].sort()) writeRows(data, dp, out.sb, dirty.get(dp));
        refreshLearned(data, inputs, learned, out);
        return out.sb.size === 0 && out.flagsChanged.size === 0 ? 'unchanged' : 'handled';
      },
      datapaths(data: MulticastData, change: unknown, inputs: NodeInputs, out: MulticastChange) {
        // A switch that came or went: the rows naming it count from now on, or no longer.
        const learned = new Set<Uuid>();
        for (const [dp, { old, new: now }] of (change as DatapathsChange).datapaths) {
          if ((old === undefined) !== (now === undefined) && (data.igmp.rowsByDp.has(dp) || data.igmp.groups.has(dp))) learned.add(dp);
        }
        refreshLearned(data, inputs, learned, out);
        return out.sb.size === 0 && out.flagsChanged.size === 0 ? 'unchanged' : 'handled';
      },
      sb_igmp(data: MulticastData, change: unknown, inputs: NodeInputs, out: MulticastChange) {
        const igmp = inputs.data<SbIgmpData>('sb_igmp');
        const learned = new Set<Uuid>();
        for (const [uuid, was] of change as SbIgmpChange) {
          if (was !== undefined) {
            indexRow(data.igmp, uuid, was, false);
            if (was.datapath !== undefined) learned.add(was.datapath);
          }
          const now = igmp.get(uuid);
          if (now !== undefined) {
            indexRow(data.igmp, uuid, now, true);
            if (now.datapath !== undefined) learned.add(now.datapath);
          }
        }
        refreshLearned(data, inputs, learned, out);
        return out.sb.size === 0 && out.flagsChanged.size === 0 ? 'unchanged' : 'handled';
      },
    },
  };
}
