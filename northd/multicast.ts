// Multicast_Group rows of logical switches, as ovn-northd 23.03 builds them: _MC_flood (key
// 32768) holds every enabled LSP; _MC_flood_l2 (32772) every enabled LSP that is not of type
// router; _MC_unknown (32769) every enabled, non-external LSP whose addresses include
// "unknown". A group with no ports has no row.
//
// A row's _version follows its ports through their set sum (northd/hash.ts), as a
// Logical_DP_Group's does: one port joining a switch of thousands is a constant-time change to
// the version, where hashing the row's text would read every port again.
import type * as sb from '../ovsdb/rows/sb.js';
import type { Uuid } from '../ovsdb/index.js';
import type { EngineNode, NodeInputs } from './engine.js';
import { hashUuid, setVersion, SummedSet, uuidWords } from './hash.js';
import type { PortInfo, PortsChange, PortsData } from './ports.js';
import { SbChangeSet, SbTable } from './sb-changes.js';

export const MC_FLOOD = { name: '_MC_flood', key: 32768 } as const;
export const MC_UNKNOWN = { name: '_MC_unknown', key: 32769 } as const;
export const MC_FLOOD_L2 = { name: '_MC_flood_l2', key: 32772 } as const;
const GROUPS = [MC_FLOOD, MC_UNKNOWN, MC_FLOOD_L2] as const;
type GroupName = (typeof GROUPS)[number]['name'];

export interface MulticastData {
  /**
   * Datapath → group name → its member Port_Binding UUIDs, kept sorted (as the row lists them)
   * with their set sum: one port joining or leaving sorts and hashes nothing again.
   */
  readonly members: Map<Uuid, Map<GroupName, SummedSet>>;
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
    const m = groups?.get(g.name);
    if (m === undefined || m.size === 0) {
      data.table.remove(uuid, out);
      continue;
    }
    // A copy: the row's value must not change when the membership list does.
    const row: sb.Multicast_Group = { _uuid: uuid, _version: setVersion('Multicast_Group', uuid, m.size, m.sum), datapath: dp, name: g.name, tunnel_key: g.key, ports: m.copy() };
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
      out.sb.maybeTrackWhole(data.table);
      const ports = inputs.data<PortsData>('ports');
      const before = new Set([...data.members.keys()].filter((dp) => hasUnknown(data, dp)));
      const dps = new Set(data.members.keys());
      data.members.clear();
      // Every list afresh (a SummedSet sorts once when read after many joins).
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
        // Datapath → the groups whose membership may have changed: only their rows are written.
        const dirty = new Map<Uuid, Set<GroupName>>();
        const touch = (p: PortInfo): void => {
          let groups = dirty.get(p.dp);
          if (groups === undefined) dirty.set(p.dp, (groups = new Set()));
          for (const g of groupsOf(p)) groups.add(g);
        };
        const before = new Map<Uuid, boolean>();
        for (const { old, new: now } of (change as PortsChange).ports.values()) {
          for (const p of [old, now]) if (p !== undefined && !before.has(p.dp)) before.set(p.dp, hasUnknown(data, p.dp));
          if (old !== undefined) {
            setMembership(data, old, false);
            touch(old);
          }
          if (now !== undefined) {
            setMembership(data, now, true);
            touch(now);
          }
        }
        if (dirty.size === 0) return 'unchanged';
        for (const dp of [...dirty.keys()].sort()) {
          writeRows(data, dp, out.sb, dirty.get(dp));
          if (before.get(dp) !== hasUnknown(data, dp)) out.unknownFlipped.add(dp);
        }
        return 'handled';
      },
    },
  };
}
