// Multicast_Group rows of logical switches, as ovn-northd 23.03 builds them: _MC_flood (key
// 32768) holds every enabled LSP; _MC_flood_l2 (32772) every enabled LSP that is not of type
// router; _MC_unknown (32769) every enabled, non-external LSP whose addresses include
// "unknown". A group with no ports has no row.
import type * as sb from '../ovsdb/rows/sb.js';
import type { Uuid } from '../ovsdb/index.js';
import type { EngineNode, NodeInputs } from './engine.js';
import { hashUuid } from './hash.js';
import type { PortInfo, PortsChange, PortsData } from './ports.js';
import { SbChangeSet, SbTable, contentVersion } from './sb-changes.js';

export const MC_FLOOD = { name: '_MC_flood', key: 32768 } as const;
export const MC_UNKNOWN = { name: '_MC_unknown', key: 32769 } as const;
export const MC_FLOOD_L2 = { name: '_MC_flood_l2', key: 32772 } as const;
const GROUPS = [MC_FLOOD, MC_UNKNOWN, MC_FLOOD_L2] as const;
type GroupName = (typeof GROUPS)[number]['name'];

export interface MulticastData {
  /** Datapath → group name → member Port_Binding UUIDs. */
  readonly members: Map<Uuid, Map<GroupName, Set<Uuid>>>;
  readonly table: SbTable;
}

export interface MulticastChange {
  readonly sb: SbChangeSet;
  /** Datapaths whose _MC_unknown went from empty to non-empty or back. */
  readonly unknownFlipped: Set<Uuid>;
}

export function multicastGroupUuid(dp: Uuid, name: string): Uuid {
  return hashUuid(['Multicast_Group', dp, name]);
}

function groupsOf(p: PortInfo): GroupName[] {
  if (p.kind !== 'lsp' || !p.enabled) return [];
  const out: GroupName[] = [MC_FLOOD.name];
  if (p.type !== 'router') out.push(MC_FLOOD_L2.name);
  if (p.hasUnknown && p.type !== 'external') out.push(MC_UNKNOWN.name);
  return out;
}

export function hasUnknown(data: MulticastData, dp: Uuid): boolean {
  return (data.members.get(dp)?.get(MC_UNKNOWN.name)?.size ?? 0) > 0;
}

function setMembership(data: MulticastData, p: PortInfo, present: boolean): void {
  for (const g of groupsOf(p)) {
    let groups = data.members.get(p.dp);
    if (groups === undefined) data.members.set(p.dp, (groups = new Map()));
    let set = groups.get(g);
    if (set === undefined) groups.set(g, (set = new Set()));
    if (present) set.add(p.sbUuid);
    else set.delete(p.sbUuid);
    if (set.size === 0) groups.delete(g);
    if (groups.size === 0) data.members.delete(p.dp);
  }
}

/** Writes the rows of `dp`'s groups from the membership sets. */
function writeRows(data: MulticastData, dp: Uuid, out: SbChangeSet): void {
  const groups = data.members.get(dp);
  for (const g of GROUPS) {
    const uuid = multicastGroupUuid(dp, g.name);
    const set = groups?.get(g.name);
    if (set === undefined || set.size === 0) {
      data.table.remove(uuid, out);
      continue;
    }
    const columns = { datapath: dp, name: g.name, tunnel_key: g.key, ports: [...set].sort() };
    const row: sb.Multicast_Group = { _uuid: uuid, _version: contentVersion(columns), ...columns };
    data.table.put(row, out);
  }
}

export function multicastNode(): EngineNode<MulticastData, MulticastChange> {
  return {
    name: 'multicast',
    inputs: ['ports'],
    init: () => ({ members: new Map(), table: new SbTable('Multicast_Group') }),
    newChange: () => ({ sb: new SbChangeSet(), unknownFlipped: new Set() }),
    isEmpty: (c) => c.sb.size === 0 && c.unknownFlipped.size === 0,
    recompute(data: MulticastData, inputs: NodeInputs, out: MulticastChange): void {
      const ports = inputs.data<PortsData>('ports');
      const before = new Set([...data.members.keys()].filter((dp) => hasUnknown(data, dp)));
      const dps = new Set(data.members.keys());
      data.members.clear();
      for (const p of ports.byName.values()) setMembership(data, p, true);
      for (const dp of data.members.keys()) dps.add(dp);
      for (const row of data.table.rows.values()) dps.add((row as unknown as sb.Multicast_Group).datapath);
      for (const dp of [...dps].sort()) {
        writeRows(data, dp, out.sb);
        if (before.has(dp) !== hasUnknown(data, dp)) out.unknownFlipped.add(dp);
      }
    },
    handlers: {
      ports(data: MulticastData, change: unknown, _inputs: NodeInputs, out: MulticastChange) {
        const dirty = new Set<Uuid>();
        const before = new Map<Uuid, boolean>();
        for (const { old, new: now } of (change as PortsChange).ports.values()) {
          for (const p of [old, now]) if (p !== undefined && !before.has(p.dp)) before.set(p.dp, hasUnknown(data, p.dp));
          if (old !== undefined) {
            setMembership(data, old, false);
            dirty.add(old.dp);
          }
          if (now !== undefined) {
            setMembership(data, now, true);
            dirty.add(now.dp);
          }
        }
        if (dirty.size === 0) return 'unchanged';
        for (const dp of [...dirty].sort()) {
          writeRows(data, dp, out.sb);
          if (before.get(dp) !== hasUnknown(data, dp)) out.unknownFlipped.add(dp);
        }
        return 'handled';
      },
    },
  };
}
