// The agent's copy of the Southbound rows it was sent, with the indexes the flow side reads:
// ports by name, by datapath, by chassis and by peer; multicast groups by datapath and by
// member; logical flows and load balancers by datapath and datapath group; MAC bindings by
// port; DNS rows by datapath (for pinctrl's dns_lookup; no flow reads them); Service_Monitor
// and BFD rows, unindexed (pinctrl's health checks and BFD sessions scan them; no flow reads
// them); meters by name and by band (the meters the flows name are installed from them).
// apply() folds one SbUpdate in (a reset replaces everything) and returns what changed, row by
// row, old and new: the flow engine derives its dirty sets from that list and nothing else.

import type { Row } from '../../ovsdb/index.js';
import type * as sb from '../../ovsdb/rows/sb.js';
import type { SbRowChange, SbUpdate } from '../sb-source.js';

/** One row that changed in an update: 'old' absent = inserted, 'row' absent = deleted. */
export interface RowDelta {
  readonly table: string;
  readonly uuid: string;
  readonly old?: Row;
  readonly row?: Row;
  /** For a modified row with a member set (a multicast group's or port group's ports, a
   *  datapath group's datapaths): the members that came and went. */
  readonly members?: MemberDiff;
}

export interface MemberDiff {
  readonly added: readonly string[];
  readonly removed: readonly string[];
}

/** The read side the flow computations use; SbStore implements it, a test may fake it. */
export interface SbLookups {
  datapath(uuid: string): sb.Datapath_Binding | undefined;
  portBinding(uuid: string): sb.Port_Binding | undefined;
  portByName(name: string): sb.Port_Binding | undefined;
  /** Port_Binding uuids of a datapath. */
  portsOfDatapath(dp: string): ReadonlySet<string>;
  /** Port_Binding uuids of a datapath whose type is patch or l3gateway (the edges to peers). */
  patchPortsOfDatapath(dp: string): ReadonlySet<string>;
  /** Port_Binding uuids whose chassis or additional_chassis is this Chassis uuid. */
  portsOfChassis(chassis: string): ReadonlySet<string>;
  /** Port_Binding uuids of type chassisredirect or external that name an HA_Chassis_Group. */
  haGroupPorts(): ReadonlySet<string>;
  chassis(uuid: string): sb.Chassis | undefined;
  chassisByName(name: string): sb.Chassis | undefined;
  /** The template variables of the chassis named `name` (its Chassis_Template_Var row); none: empty. */
  templateVarsOf(name: string): ReadonlyMap<string, string>;
  multicastGroup(uuid: string): sb.Multicast_Group | undefined;
  multicastGroupsOfDatapath(dp: string): ReadonlySet<string>;
  multicastGroupByName(dp: string, name: string): sb.Multicast_Group | undefined;
  haChassisGroup(uuid: string): sb.HA_Chassis_Group | undefined;
  haChassis(uuid: string): sb.HA_Chassis | undefined;
  addressSet(name: string): sb.Address_Set | undefined;
  portGroup(name: string): sb.Port_Group | undefined;
  dpGroup(uuid: string): sb.Logical_DP_Group | undefined;
}

const EMPTY: ReadonlySet<string> = new Set();
const NO_VARIABLES: ReadonlyMap<string, string> = new Map();

/**
 * The difference of two member sets as OVSDB keeps them (sorted, no repeats) in one merge walk,
 * with no sets built: pushes what came and went; returns false (the pushes meaningless) if either
 * list is not strictly ascending. Members in both are made the same string objects in 'has'.
 */
function mergeDiff(had: readonly string[], has: string[], added: string[], removed: string[]): boolean {
  let i = 0;
  let j = 0;
  let last = '';
  let first = true;
  const share = !Object.isFrozen(has);
  while (i < had.length || j < has.length) {
    const x = had[i];
    const y = has[j];
    let next: string;
    if (y === undefined || (x !== undefined && x < y)) {
      next = x as string;
      removed.push(next);
      i++;
    } else if (x === undefined || y < x) {
      next = y;
      added.push(next);
      j++;
    } else {
      // The same member: the new row keeps the old row's string, the same value. The old one is
      // long-lived already; the copy just decoded then dies young instead of joining it, so a
      // group of n members changing one at a time leaves O(1) old-generation garbage per change
      // rather than O(n) (what bench/agent's 500 agents in one heap paid for in full GCs).
      if (share && has[j] !== x) has[j] = x;
      next = x as string;
      i++;
      j++;
    }
    // Each step takes the smallest head, so two ascending lists give an ascending walk; a
    // repeat or a step back means one of them is not.
    if (!first && !(last < next)) return false;
    last = next;
    first = false;
  }
  return true;
}

/** The column of a member-set table that the store indexes members by (see SbStore.members). */
function memberColumn(table: string): string {
  return table === 'Logical_DP_Group' ? 'datapaths' : 'ports';
}

/** A multimap key → set of uuids, with the empty set shared. */
class Multi {
  private readonly m = new Map<string, Set<string>>();
  add(key: string, uuid: string): void {
    let s = this.m.get(key);
    if (s === undefined) this.m.set(key, (s = new Set()));
    s.add(uuid);
  }
  remove(key: string, uuid: string): void {
    const s = this.m.get(key);
    if (s === undefined) return;
    s.delete(uuid);
    if (s.size === 0) this.m.delete(key);
  }
  get(key: string): ReadonlySet<string> {
    return this.m.get(key) ?? EMPTY;
  }
  clear(): void {
    this.m.clear();
  }
}

/** Tables whose rows the store keeps; rows of other tables are ignored. */
export const storedTables = [
  'SB_Global', 'Chassis', 'Encap', 'Datapath_Binding', 'Port_Binding', 'Multicast_Group', 'Logical_DP_Group',
  'Logical_Flow', 'Address_Set', 'Port_Group', 'MAC_Binding', 'Static_MAC_Binding', 'HA_Chassis_Group', 'HA_Chassis', 'FDB', 'DNS',
  'Load_Balancer', 'Service_Monitor', 'Chassis_Template_Var', 'Meter', 'Meter_Band', 'IP_Multicast', 'IGMP_Group', 'BFD',
  'Controller_Event',
] as const;
const stored: ReadonlySet<string> = new Set(storedTables);

export class SbStore implements SbLookups {
  private readonly tables = new Map<string, Map<string, Row>>();
  private readonly pbName = new Map<string, string>();
  private readonly pbKey = new Map<string, string>();
  private readonly pbDp = new Multi();
  private readonly pbPatchDp = new Multi();
  private readonly pbChassis = new Multi();
  /** Port name → ports whose options:peer names it. */
  private readonly pbPeerOf = new Multi();
  /** Port name → container ports whose parent_port names it. */
  private readonly pbParentOf = new Multi();
  /** Port name → chassisredirect ports whose options:distributed-port names it. */
  private readonly pbRedirectOf = new Multi();
  /** chassisredirect and external ports with an HA_Chassis_Group. */
  private readonly pbHa = new Set<string>();
  private readonly chassisName = new Map<string, string>();
  /** Chassis name → its Chassis_Template_Var row. */
  private readonly templateVarsName = new Map<string, string>();
  private readonly mcDp = new Multi();
  private readonly mcName = new Map<string, string>();
  private readonly mcOfPort = new Multi();
  private readonly lfDp = new Multi();
  private readonly lfGroup = new Multi();
  private readonly groupOfDp = new Multi();
  private readonly lbDp = new Multi();
  private readonly lbGroup = new Multi();
  private readonly mbPort = new Multi();
  private readonly smbPort = new Multi();
  private readonly fdbDp = new Multi();
  private readonly dnsDp = new Multi();
  private readonly asName = new Map<string, string>();
  private readonly pgName = new Map<string, string>();
  /** Port name → Port_Group uuids listing it. */
  private readonly pgOfPort = new Multi();
  private readonly meterName = new Map<string, string>();
  /** Meter_Band uuid → Meter uuids listing it. */
  private readonly meterOfBand = new Multi();

  table(name: string): ReadonlyMap<string, Row> {
    return this.tables.get(name) ?? new Map();
  }

  get<T>(table: string, uuid: string): T | undefined {
    return this.tables.get(table)?.get(uuid) as unknown as T | undefined;
  }

  /** SB_Global.nb_cfg, 0 when there is no SB_Global row. */
  get nbCfg(): number {
    for (const r of this.table('SB_Global').values()) return (r as unknown as sb.SB_Global).nb_cfg;
    return 0;
  }

  /**
   * Folds an update in and returns the rows that changed (a row whose _version did not change is
   * not a change). A reset replaces every stored row: rows it does not carry are deleted.
   */
  apply(u: SbUpdate): RowDelta[] {
    const incoming = new Map<string, SbRowChange>();
    for (const c of u.changes) {
      if (!stored.has(c.table)) continue;
      incoming.set(`${c.table}\u0000${c.uuid}`, c);
    }
    if (u.reset) {
      for (const [table, rows] of this.tables) {
        for (const uuid of rows.keys()) {
          const k = `${table}\u0000${uuid}`;
          if (!incoming.has(k)) incoming.set(k, { table, uuid });
        }
      }
    }
    const deltas: RowDelta[] = [];
    for (const c of incoming.values()) {
      const d = this.put(c.table, c.uuid, c.row, c.diffs);
      if (d !== undefined) deltas.push(d);
    }
    return deltas;
  }

  private put(table: string, uuid: string, row: Row | undefined, diffs?: SbRowChange['diffs']): RowDelta | undefined {
    let rows = this.tables.get(table);
    const old = rows?.get(uuid);
    if (old === undefined && row === undefined) return undefined;
    if (old !== undefined && row !== undefined && (old === row || (old._version !== undefined && old._version === row._version && old._version !== ''))) return undefined;
    if (old !== undefined) this.unindex(table, old);
    if (row === undefined) {
      rows?.delete(uuid);
    } else {
      if (rows === undefined) this.tables.set(table, (rows = new Map()));
      rows.set(uuid, row);
      this.index(table, row);
    }
    const members = this.reindexMembers(table, uuid, old, row, diffs !== undefined && diffs.base === old ? diffs.columns : undefined);
    const d: { table: string; uuid: string; old?: Row; row?: Row; members?: MemberDiff } = { table, uuid };
    if (old !== undefined) d.old = old;
    if (row !== undefined) d.row = row;
    if (old !== undefined && row !== undefined && members !== undefined) d.members = members;
    return d;
  }

  private index(table: string, r: Row): void {
    this.indexOrNot(table, r, true);
  }

  private unindex(table: string, r: Row): void {
    this.indexOrNot(table, r, false);
  }

  /**
   * The index over a row's member set (a multicast group's or port group's ports, a datapath
   * group's datapaths), with the row's keys in it. These sets grow with the deployment and
   * change one member at a time, so an update touches only the members that came or went
   * (reindexMembers) instead of every member twice.
   */
  private members(table: string, r: Row | undefined): { readonly index: Multi; readonly keys: readonly string[] } | undefined {
    if (r === undefined) return undefined;
    switch (table) {
      case 'Multicast_Group':
        return { index: this.mcOfPort, keys: (r as unknown as sb.Multicast_Group).ports };
      case 'Port_Group':
        return { index: this.pgOfPort, keys: (r as unknown as sb.Port_Group).ports };
      case 'Logical_DP_Group':
        return { index: this.groupOfDp, keys: (r as unknown as sb.Logical_DP_Group).datapaths };
      default:
        return undefined;
    }
  }

  /** Updates the member index for a row's new member set; returns the members that came and went. */
  private reindexMembers(table: string, uuid: string, old: Row | undefined, row: Row | undefined, diffs?: NonNullable<SbRowChange['diffs']>['columns']): MemberDiff | undefined {
    const before = this.members(table, old);
    const after = this.members(table, row);
    if (before === undefined && after === undefined) return undefined;
    const index = (after ?? before as { readonly index: Multi }).index;
    const had = before?.keys ?? [];
    const has = after?.keys ?? [];
    // The source applied a difference to exactly the row held here: it is the members' change.
    const known = before !== undefined && after !== undefined ? diffs?.get(memberColumn(table)) : undefined;
    if (known !== undefined) {
      for (const k of known.removed as readonly string[]) index.remove(k, uuid);
      for (const k of known.added as readonly string[]) index.add(k, uuid);
      return { added: known.added as readonly string[], removed: known.removed as readonly string[] };
    }
    const added: string[] = [];
    const removed: string[] = [];
    if (had === has) return { added, removed };
    if (!mergeDiff(had, has as string[], added, removed)) {
      added.length = 0;
      removed.length = 0;
      const kept = new Set(has);
      const gone = new Set(had);
      for (const k of gone) if (!kept.has(k)) removed.push(k);
      for (const k of kept) if (!gone.has(k)) added.push(k);
    }
    for (const k of removed) index.remove(k, uuid);
    for (const k of added) index.add(k, uuid);
    return { added, removed };
  }

  private indexOrNot(table: string, r: Row, add: boolean): void {
    const u = r._uuid;
    const multi = (m: Multi, key: string | undefined): void => {
      if (key === undefined) return;
      if (add) m.add(key, u);
      else m.remove(key, u);
    };
    const single = (m: Map<string, string>, key: string): void => {
      if (add) m.set(key, u);
      else if (m.get(key) === u) m.delete(key);
    };
    switch (table) {
      case 'Port_Binding': {
        const pb = r as unknown as sb.Port_Binding;
        single(this.pbName, pb.logical_port);
        single(this.pbKey, `${pb.datapath}\u0000${pb.tunnel_key}`);
        multi(this.pbDp, pb.datapath);
        if (pb.type === 'patch' || pb.type === 'l3gateway') multi(this.pbPatchDp, pb.datapath);
        for (const c of new Set([...pb.chassis, ...pb.additional_chassis])) multi(this.pbChassis, c);
        multi(this.pbPeerOf, pb.options.get('peer'));
        multi(this.pbParentOf, pb.parent_port[0]);
        if (pb.type === 'chassisredirect') multi(this.pbRedirectOf, pb.options.get('distributed-port'));
        if ((pb.type === 'chassisredirect' || pb.type === 'external') && pb.ha_chassis_group.length > 0) {
          if (add) this.pbHa.add(u);
          else this.pbHa.delete(u);
        }
        return;
      }
      case 'Chassis':
        single(this.chassisName, (r as unknown as sb.Chassis).name);
        return;
      case 'Chassis_Template_Var':
        single(this.templateVarsName, (r as unknown as sb.Chassis_Template_Var).chassis);
        return;
      case 'Multicast_Group': {
        const mc = r as unknown as sb.Multicast_Group;
        multi(this.mcDp, mc.datapath);
        single(this.mcName, `${mc.datapath}\u0000${mc.name}`);
        return;
      }
      case 'Logical_Flow': {
        const lf = r as unknown as sb.Logical_Flow;
        for (const d of lf.logical_datapath) multi(this.lfDp, d);
        for (const g of lf.logical_dp_group) multi(this.lfGroup, g);
        return;
      }
      case 'Load_Balancer': {
        const lb = r as unknown as sb.Load_Balancer;
        for (const d of lb.datapaths) multi(this.lbDp, d);
        for (const g of lb.datapath_group) multi(this.lbGroup, g);
        return;
      }
      case 'MAC_Binding':
        multi(this.mbPort, (r as unknown as sb.MAC_Binding).logical_port);
        return;
      case 'Static_MAC_Binding':
        multi(this.smbPort, (r as unknown as sb.Static_MAC_Binding).logical_port);
        return;
      case 'FDB':
        multi(this.fdbDp, String((r as unknown as sb.FDB).dp_key));
        return;
      case 'DNS':
        for (const d of new Set((r as unknown as sb.DNS).datapaths)) multi(this.dnsDp, d);
        return;
      case 'Address_Set':
        single(this.asName, (r as unknown as sb.Address_Set).name);
        return;
      case 'Port_Group':
        single(this.pgName, (r as unknown as sb.Port_Group).name);
        return;
      case 'Meter': {
        const m = r as unknown as sb.Meter;
        single(this.meterName, m.name);
        for (const b of new Set(m.bands)) multi(this.meterOfBand, b);
        return;
      }
      default:
        return;
    }
  }

  // ---- SbLookups ---------------------------------------------------------------------------

  datapath(uuid: string): sb.Datapath_Binding | undefined {
    return this.get('Datapath_Binding', uuid);
  }
  portBinding(uuid: string): sb.Port_Binding | undefined {
    return this.get('Port_Binding', uuid);
  }
  portByName(name: string): sb.Port_Binding | undefined {
    const u = this.pbName.get(name);
    return u === undefined ? undefined : this.portBinding(u);
  }
  /** The port with this tunnel key in this datapath. */
  portByKey(dp: string, key: number): sb.Port_Binding | undefined {
    const u = this.pbKey.get(`${dp}\u0000${key}`);
    return u === undefined ? undefined : this.portBinding(u);
  }
  portsOfDatapath(dp: string): ReadonlySet<string> {
    return this.pbDp.get(dp);
  }
  patchPortsOfDatapath(dp: string): ReadonlySet<string> {
    return this.pbPatchDp.get(dp);
  }
  portsOfChassis(chassis: string): ReadonlySet<string> {
    return this.pbChassis.get(chassis);
  }
  /** Ports whose options:peer is this port name. */
  portsPeeringWith(name: string): ReadonlySet<string> {
    return this.pbPeerOf.get(name);
  }
  /** Container ports whose parent_port is this port name. */
  portsWithParent(name: string): ReadonlySet<string> {
    return this.pbParentOf.get(name);
  }
  haGroupPorts(): ReadonlySet<string> {
    return this.pbHa;
  }
  /** chassisredirect ports whose distributed-port is this port name. */
  portsRedirecting(name: string): ReadonlySet<string> {
    return this.pbRedirectOf.get(name);
  }
  chassis(uuid: string): sb.Chassis | undefined {
    return this.get('Chassis', uuid);
  }
  chassisByName(name: string): sb.Chassis | undefined {
    const u = this.chassisName.get(name);
    return u === undefined ? undefined : this.chassis(u);
  }
  templateVarsOf(name: string): ReadonlyMap<string, string> {
    const u = this.templateVarsName.get(name);
    return (u === undefined ? undefined : this.get<sb.Chassis_Template_Var>('Chassis_Template_Var', u)?.variables) ?? NO_VARIABLES;
  }
  multicastGroup(uuid: string): sb.Multicast_Group | undefined {
    return this.get('Multicast_Group', uuid);
  }
  multicastGroupsOfDatapath(dp: string): ReadonlySet<string> {
    return this.mcDp.get(dp);
  }
  multicastGroupByName(dp: string, name: string): sb.Multicast_Group | undefined {
    const u = this.mcName.get(`${dp}\u0000${name}`);
    return u === undefined ? undefined : this.multicastGroup(u);
  }
  /** Multicast groups that list this Port_Binding uuid. */
  multicastGroupsOfPort(pb: string): ReadonlySet<string> {
    return this.mcOfPort.get(pb);
  }
  haChassisGroup(uuid: string): sb.HA_Chassis_Group | undefined {
    return this.get('HA_Chassis_Group', uuid);
  }
  haChassis(uuid: string): sb.HA_Chassis | undefined {
    return this.get('HA_Chassis', uuid);
  }
  addressSet(name: string): sb.Address_Set | undefined {
    const u = this.asName.get(name);
    return u === undefined ? undefined : this.get('Address_Set', u);
  }
  portGroup(name: string): sb.Port_Group | undefined {
    const u = this.pgName.get(name);
    return u === undefined ? undefined : this.get('Port_Group', u);
  }
  /** Port_Group rows that list this port name. */
  portGroupsOfPort(name: string): ReadonlySet<string> {
    return this.pgOfPort.get(name);
  }
  dpGroup(uuid: string): sb.Logical_DP_Group | undefined {
    return this.get('Logical_DP_Group', uuid);
  }
  meter(name: string): sb.Meter | undefined {
    const u = this.meterName.get(name);
    return u === undefined ? undefined : this.get('Meter', u);
  }
  meterBand(uuid: string): sb.Meter_Band | undefined {
    return this.get('Meter_Band', uuid);
  }
  /** Meters that list this Meter_Band uuid. */
  metersOfBand(band: string): ReadonlySet<string> {
    return this.meterOfBand.get(band);
  }
  /** Logical flows naming this datapath directly. */
  logicalFlowsOfDatapath(dp: string): ReadonlySet<string> {
    return this.lfDp.get(dp);
  }
  /** Logical flows naming this datapath group. */
  logicalFlowsOfGroup(group: string): ReadonlySet<string> {
    return this.lfGroup.get(group);
  }
  /** Load balancers naming this datapath in their datapaths. */
  loadBalancersOfDatapath(dp: string): ReadonlySet<string> {
    return this.lbDp.get(dp);
  }
  /** Load balancers whose datapath_group is this group. */
  loadBalancersOfGroup(group: string): ReadonlySet<string> {
    return this.lbGroup.get(group);
  }
  /** Datapath groups that contain this datapath. */
  groupsOfDatapath(dp: string): ReadonlySet<string> {
    return this.groupOfDp.get(dp);
  }
  macBindingsOfPort(name: string): ReadonlySet<string> {
    return this.mbPort.get(name);
  }
  staticMacBindingsOfPort(name: string): ReadonlySet<string> {
    return this.smbPort.get(name);
  }
  /** DNS rows whose datapaths list this datapath. */
  dnsOfDatapath(dp: string): ReadonlySet<string> {
    return this.dnsDp.get(dp);
  }
  /** FDB rows of a datapath, by its tunnel key. */
  fdbsOfDatapathKey(key: number): ReadonlySet<string> {
    return this.fdbDp.get(String(key));
  }
}
