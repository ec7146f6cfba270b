// Which Southbound rows a chassis needs, kept up to date incrementally as the SB view changes.
//
// A chassis's local datapaths are those of the Port_Bindings bound to it (chassis,
// additional_chassis, requested_chassis, requested_additional_chassis name its Chassis row, or
// options:l3gateway-chassis names it), and every datapath reachable from them through ports of
// type "patch" or "l3gateway" (options:peer names the port on the other side), transitively,
// as ovn-controller's local datapaths are. The datapath of a chassisredirect or external port is
// also local to every member of the port's HA_Chassis_Group (HA_Chassis.chassis names the
// member's Chassis row or, without it, external_ids:chassis-name a registered chassis's name):
// a standby gateway holds the flows it needs before it takes over. A row is seen through its
// footprint:
//   - datapath-scoped rows (Datapath_Binding itself, Port_Binding, Multicast_Group,
//     MAC_Binding, Static_MAC_Binding, IP_Multicast, IGMP_Group by their datapath;
//     Logical_Flow by logical_datapath or the datapaths of its logical_dp_group;
//     Logical_DP_Group and DNS by their datapaths; Load_Balancer by its datapaths or the
//     datapaths of its datapath_group; FDB by the datapath whose tunnel_key is its dp_key) by a
//     chassis with one of those datapaths local;
//   - Chassis_Private only by its own chassis (every chassis's acks would otherwise reach
//     every chassis: that is why OVN keeps it apart from Chassis), and Chassis_Template_Var
//     only by the chassis it names (its values of the template variables);
//   - a Port_Binding also by a chassis that asked for its logical_port (an iface-id of a local
//     interface), bound or not, so that the chassis can claim it, and by a chassis that asked
//     for its parent_port (a container port rides on its parent's interface);
//   - a Port_Binding of type chassisredirect or external by everyone: the active member of its
//     HA_Chassis_Group claims it, and a gateway chassis may have nothing else bound there yet
//     (ovn-controller monitors these two types on every chassis for the same reason);
//   - every other table (SB_Global, Chassis, Encap, Address_Set, Port_Group, Meter, DHCP
//     options, gateway and HA tables, Mirror, ...) by everyone; Connection, SSL and the RBAC tables by
//     no one.
// With monitor-all, a chassis sees every row.
//
// Everything here is pure and synchronous: the index reads the live view it is given and is
// told every change in order. `windowOf` + `candidatesOf` + `stepOf` turn the changes between
// two revisions into what one interest must receive; the functions at the end compute the same
// from scratch, as the oracle of the tests.
import assert from 'node:assert/strict';
import type { Atom, DbDelta, Row } from '../ovsdb/index.js';
import { isMapValue } from '../ovsdb/index.js';

/** The live SB view: table → uuid → row, at the index's revision. */
export type Rows = (table: string) => ReadonlyMap<string, Row>;

/** Tables never streamed to agents: the database server's own configuration. */
export const unstreamedTables: ReadonlySet<string> = new Set(['Connection', 'SSL', 'RBAC_Role', 'RBAC_Permission']);

/** Tables whose rows belong to one datapath, by the column that names it. */
const datapathColumnOf: Readonly<Record<string, string>> = {
  Port_Binding: 'datapath',
  Multicast_Group: 'datapath',
  MAC_Binding: 'datapath',
  Static_MAC_Binding: 'datapath',
  IP_Multicast: 'datapath',
  IGMP_Group: 'datapath',
  Logical_DP_Group: 'datapaths',
  DNS: 'datapaths',
};

/**
 * Tables whose rows belong to one chassis, by the column that names it: only that chassis sees
 * them (Chassis_Private with its acks; Chassis_Template_Var, the values of its template
 * variables, which ovn-controller too monitors for its own chassis only).
 */
const chassisColumnOf: Readonly<Record<string, string>> = {
  Chassis_Private: 'name',
  Chassis_Template_Var: 'chassis',
};

/** Whether a table's rows are seen by the one chassis they name. */
function isChassisScoped(table: string): boolean {
  return table in chassisColumnOf;
}

/** Whether a table's rows are seen through datapaths (and so indexed by them). */
export function isDatapathScoped(table: string): boolean {
  return table in datapathColumnOf || table === 'Datapath_Binding' || table === 'Logical_Flow' || table === 'Load_Balancer' || table === 'FDB';
}

/**
 * Who sees a row. 'all': everyone; 'datapaths': chassis with one of `datapaths` local;
 * 'chassis': only the chassis named `chassis` (Chassis_Private); 'none': no one. A
 * Port_Binding also names its `port` and its `parent` port, seen by chassis that want either
 * as an iface-id (its `datapaths` are kept under scope 'all' too, to file it by datapath).
 */
export interface Footprint {
  readonly scope: 'all' | 'datapaths' | 'chassis' | 'none';
  readonly datapaths: readonly string[];
  /**
   * A Logical_Flow's or a Load_Balancer's datapath groups, as sets of their members: seen where any member is
   * local. Kept as the groups' own sets (`groupMembers`) rather than copied into `datapaths`:
   * a group of every switch would otherwise make each of its flows cost that many entries.
   */
  readonly groups?: readonly Members[];
  readonly port?: string;
  readonly parent?: string;
  readonly chassis?: string;
}

const noDatapaths: readonly string[] = Object.freeze([]);
export const footprintAll: Footprint = Object.freeze({ scope: 'all', datapaths: noDatapaths });
export const footprintNone: Footprint = Object.freeze({ scope: 'none', datapaths: noDatapaths });

/** The part of an interest shared by every chassis with the same local datapaths. */
export interface GroupInterest {
  readonly monitorAll: boolean;
  readonly datapaths: ReadonlySet<string>;
}

/** One stream's whole interest. */
export interface Interest extends GroupInterest {
  readonly chassis: string;
  readonly ifaceIds: ReadonlySet<string>;
}

export function groupSees(fp: Footprint, g: GroupInterest): boolean {
  if (fp.scope === 'none') return false;
  if (g.monitorAll || fp.scope === 'all') return true;
  if (fp.scope !== 'datapaths') return false;
  for (const dp of fp.datapaths) if (g.datapaths.has(dp)) return true;
  for (const members of fp.groups ?? []) if (intersects(members, g.datapaths)) return true;
  return false;
}

/** A read-only set of datapaths: what a group's members and an interest's datapaths share. */
export interface Members {
  readonly size: number;
  has(dp: string): boolean;
  [Symbol.iterator](): Iterator<string>;
}

/** Whether two sets share a member, walking the smaller. */
export function intersects(a: Members, b: Members): boolean {
  const [small, large] = a.size <= b.size ? [a, b] : [b, a];
  for (const x of small) if (large.has(x)) return true;
  return false;
}

/**
 * A sorted members array looked up by binary search: no copy of a group of ten thousand
 * switches per group row (old rows stay alive in the history).
 */
class SortedMembers implements Members {
  constructor(private readonly sorted: readonly string[]) {}
  get size(): number {
    return this.sorted.length;
  }
  has(dp: string): boolean {
    let lo = 0;
    let hi = this.sorted.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const v = this.sorted[mid] as string;
      if (v === dp) return true;
      if (v < dp) lo = mid + 1;
      else hi = mid - 1;
    }
    return false;
  }
  [Symbol.iterator](): Iterator<string> {
    return this.sorted[Symbol.iterator]();
  }
}

/** The members of a Logical_DP_Group row, made once per row object (rows are immutable). */
const memberSets = new WeakMap<Row, Members>();
const noMembers: Members = new Set<string>();

export function groupMembers(row: Row | undefined): Members {
  if (row === undefined) return noMembers;
  let members = memberSets.get(row);
  if (members === undefined) {
    const dps = uuidsOf(row.datapaths);
    let sorted = true;
    for (let i = 1; i < dps.length && sorted; i++) sorted = (dps[i - 1] as string) < (dps[i] as string);
    members = sorted ? new SortedMembers(dps) : new Set(dps);
    memberSets.set(row, members);
  }
  return members;
}

/** What a stream sees beyond its group: Port_Bindings it asked for, its own Chassis_Private and Chassis_Template_Var. */
export function personallySees(fp: Footprint, i: Interest): boolean {
  if (i.monitorAll) return false;
  if (fp.port !== undefined && i.ifaceIds.has(fp.port)) return true;
  if (fp.parent !== undefined && i.ifaceIds.has(fp.parent)) return true;
  return fp.scope === 'chassis' && fp.chassis === i.chassis;
}

export function sees(fp: Footprint, i: Interest): boolean {
  return groupSees(fp, i) || personallySees(fp, i);
}

/** A stable text key of a set of datapaths (what groups of streams are keyed by). */
export function groupKeyOf(g: GroupInterest): string {
  return g.monitorAll ? '*' : [...g.datapaths].sort().join(',');
}

/** The uuids a reference column holds (a scalar, or a set of 0..n). */
function uuidsOf(v: unknown): readonly string[] {
  if (typeof v === 'string') return [v];
  if (Array.isArray(v)) return v as string[];
  return noDatapaths;
}

function optionOf(row: Row, column: string, key: string): string | undefined {
  const m = row[column];
  if (!isMapValue(m)) return undefined;
  const v = m.get(key);
  return typeof v === 'string' ? v : undefined;
}

/** How the footprint of a row is found from other rows (the view at some revision). */
export interface Aux {
  dpGroup(uuid: string): Row | undefined;
  datapathByKey(key: number): string | undefined;
}

/** The footprint of one row of `table`, reading other rows through `aux`. */
export function footprintOf(table: string, row: Row, aux: Aux): Footprint {
  if (unstreamedTables.has(table)) return footprintNone;
  const chassisColumn = chassisColumnOf[table];
  if (chassisColumn !== undefined) return { scope: 'chassis', datapaths: noDatapaths, chassis: row[chassisColumn] as string };
  if (table === 'Datapath_Binding') return { scope: 'datapaths', datapaths: [row._uuid] };
  // A group is seen where one of its members is local; it is found through the groups, not
  // filed under each member (a group of every switch changes with every new switch).
  if (table === 'Logical_DP_Group') return { scope: 'datapaths', datapaths: noDatapaths, groups: [groupMembers(row)] };
  if (table === 'Logical_Flow') {
    const own = uuidsOf(row.logical_datapath);
    const groups = uuidsOf(row.logical_dp_group);
    if (groups.length === 0) return { scope: 'datapaths', datapaths: own };
    return { scope: 'datapaths', datapaths: own, groups: groups.map((g) => groupMembers(aux.dpGroup(g))) };
  }
  if (table === 'Load_Balancer') {
    const own = uuidsOf(row.datapaths);
    const groups = uuidsOf(row.datapath_group);
    if (groups.length === 0) return { scope: 'datapaths', datapaths: own };
    return { scope: 'datapaths', datapaths: own, groups: groups.map((g) => groupMembers(aux.dpGroup(g))) };
  }
  if (table === 'FDB') {
    const dp = aux.datapathByKey(row.dp_key as number);
    return { scope: 'datapaths', datapaths: dp === undefined ? noDatapaths : [dp] };
  }
  const column = datapathColumnOf[table];
  if (column === undefined) return footprintAll;
  const datapaths = uuidsOf(row[column]);
  if (table === 'Port_Binding') {
    const parent = uuidsOf(row.parent_port)[0];
    return {
      scope: seenEverywhere(row) ? 'all' : 'datapaths', datapaths, port: row.logical_port as string,
      ...(parent === undefined || parent === '' ? {} : { parent }),
    };
  }
  return { scope: 'datapaths', datapaths };
}

/** Port_Binding types every chassis sees: those placed by HA_Chassis_Group priority. */
const everywhereTypes: ReadonlySet<string> = new Set(['chassisredirect', 'external']);

/** Whether every chassis sees this Port_Binding (see the file's comment). */
function seenEverywhere(row: Row): boolean {
  return everywhereTypes.has(row.type as string);
}

/** What a Port_Binding contributes to bindings and to the patch graph. */
interface BindingRecord {
  readonly datapath: string;
  readonly name: string;
  /** Chassis rows (by uuid) the port is bound or requested to. */
  readonly chassis: readonly string[];
  /** options:l3gateway-chassis of an l3gateway port (a chassis name). */
  readonly l3gatewayChassis: string | undefined;
  /** options:peer of a patch or l3gateway port. */
  readonly peer: string | undefined;
  /** ha_chassis_group of a chassisredirect or external port. */
  readonly haGroup: string | undefined;
}

function bindingOf(row: Row): BindingRecord {
  const type = row.type as string;
  const chassis = new Set<string>();
  for (const c of ['chassis', 'additional_chassis', 'requested_chassis', 'requested_additional_chassis']) for (const u of uuidsOf(row[c])) chassis.add(u);
  const patchLike = type === 'patch' || type === 'l3gateway';
  return {
    datapath: row.datapath as string,
    name: row.logical_port as string,
    chassis: [...chassis].sort(),
    l3gatewayChassis: type === 'l3gateway' ? optionOf(row, 'options', 'l3gateway-chassis') : undefined,
    peer: patchLike ? optionOf(row, 'options', 'peer') : undefined,
    haGroup: type === 'chassisredirect' || type === 'external' ? uuidsOf(row.ha_chassis_group)[0] : undefined,
  };
}

function sameBinding(a: BindingRecord, b: BindingRecord): boolean {
  return a.datapath === b.datapath && a.name === b.name && a.l3gatewayChassis === b.l3gatewayChassis && a.peer === b.peer && a.haGroup === b.haGroup && a.chassis.length === b.chassis.length && a.chassis.every((c, i) => c === b.chassis[i]);
}

/** What one applied delta may have changed in the chassis' local datapaths. */
export interface Touched {
  /** Chassis (by name) whose bindings or whose Chassis row changed. */
  readonly chassisNames: ReadonlySet<string>;
  /** Chassis (by uuid) named by changed bindings. */
  readonly chassisUuids: ReadonlySet<string>;
  /** Datapaths whose patch links changed: a chassis with one of them local must look again. */
  readonly datapaths: ReadonlySet<string>;
}

function addTo<K, V>(m: Map<K, Set<V>>, k: K, v: V): void {
  let s = m.get(k);
  if (s === undefined) m.set(k, (s = new Set()));
  s.add(v);
}
function removeFrom<K, V>(m: Map<K, Set<V>>, k: K, v: V): void {
  const s = m.get(k);
  if (s === undefined) return;
  s.delete(v);
  if (s.size === 0) m.delete(k);
}
function countUp<K, V>(m: Map<K, Map<V, number>>, k: K, v: V): void {
  let c = m.get(k);
  if (c === undefined) m.set(k, (c = new Map()));
  c.set(v, (c.get(v) ?? 0) + 1);
}
function countDown<K, V>(m: Map<K, Map<V, number>>, k: K, v: V): void {
  const c = m.get(k);
  const n = c?.get(v);
  assert.ok(c !== undefined && n !== undefined, 'interest index: a binding removed that was never added');
  if (n > 1) c.set(v, n - 1);
  else {
    c.delete(v);
    if (c.size === 0) m.delete(k);
  }
}

/**
 * The interest index over a live SB view. Told every change of the view in order (`apply`,
 * after the view changed); keeps the footprint of every datapath-scoped row, the rows of each
 * datapath, the bindings per chassis and the patch graph, so that a chassis's local datapaths
 * and the rows of a datapath are found without scanning the view.
 */
export class InterestIndex {
  /** Footprints of datapath-scoped rows: table → uuid → footprint. */
  private fps = new Map<string, Map<string, Footprint>>();
  /** Datapath → table → uuids of rows whose footprint names it. */
  private byDatapath = new Map<string, Map<string, Set<string>>>();
  private flowsByDpGroup = new Map<string, Set<string>>();
  private lbsByDpGroup = new Map<string, Set<string>>();
  private fdbsByKey = new Map<number, Set<string>>();
  private datapathOfKey = new Map<number, string>();
  private bindings = new Map<string, BindingRecord>();
  private portByName = new Map<string, string>();
  /** Chassis uuid → datapath → number of ports bound there. */
  private boundByChassis = new Map<string, Map<string, number>>();
  /** Chassis name → datapath → number of l3gateway ports for it there. */
  private l3gatewayByChassis = new Map<string, Map<string, number>>();
  /** Datapath → ports on it with a peer. */
  private patchPorts = new Map<string, Set<string>>();
  /** Port name → ports naming it as their peer. */
  private peersNaming = new Map<string, Set<string>>();
  private chassisByName = new Map<string, string>();
  private chassisNameOf = new Map<string, string>();
  /** Port name → Port_Bindings whose parent_port names it. */
  private childrenOf = new Map<string, Set<string>>();
  /** Port_Bindings every chassis sees (chassisredirect, external). */
  private portsEverywhere = new Set<string>();
  /** HA_Chassis_Group uuid → the chassisredirect and external ports naming it. */
  private haPortsByGroup = new Map<string, Set<string>>();

  /** The footprints' view of other rows, as the view is now. */
  readonly auxNow: Aux = {
    dpGroup: (uuid) => this.rows('Logical_DP_Group').get(uuid),
    datapathByKey: (key) => this.datapathOfKey.get(key),
  };

  /** Indexes the view as it is; with `empty`, nothing until rebuild() (a member that may never need it). */
  constructor(
    private readonly rows: Rows,
    empty = false,
  ) {
    if (!empty) this.rebuild();
  }

  /** Forgets everything and indexes the view as it is (a start, or a snapshot installed). */
  rebuild(): void {
    this.clear();
    for (const row of this.rows('Chassis').values()) this.setChassis(undefined, row);
    for (const row of this.rows('Datapath_Binding').values()) this.datapathOfKey.set(row.tunnel_key as number, row._uuid);
    for (const row of this.rows('Port_Binding').values()) this.setBinding(row._uuid, bindingOf(row));
    for (const table of ['Datapath_Binding', 'Logical_Flow', 'Load_Balancer', 'FDB', ...Object.keys(datapathColumnOf)]) {
      for (const row of this.rows(table).values()) this.setRow(table, row._uuid, row, undefined);
    }
  }

  /** Forgets everything, indexing nothing (a member that stopped following the view). */
  clear(): void {
    this.fps = new Map();
    this.byDatapath = new Map();
    this.flowsByDpGroup = new Map();
    this.lbsByDpGroup = new Map();
    this.fdbsByKey = new Map();
    this.datapathOfKey = new Map();
    this.bindings = new Map();
    this.portByName = new Map();
    this.boundByChassis = new Map();
    this.l3gatewayByChassis = new Map();
    this.patchPorts = new Map();
    this.peersNaming = new Map();
    this.chassisByName = new Map();
    this.chassisNameOf = new Map();
    this.childrenOf = new Map();
    this.portsEverywhere = new Set();
    this.haPortsByGroup = new Map();
    this.flowGroupOf = new Map();
    this.lbGroupOf = new Map();
    this.fdbKeyOf = new Map();
  }

  /**
   * Takes in one change of the view (the view already shows it) and says what it may have
   * changed in the chassis' local datapaths.
   */
  apply(delta: DbDelta): Touched {
    const chassisNames = new Set<string>();
    const chassisUuids = new Set<string>();
    const datapaths = new Set<string>();
    const changedGroups: string[] = [];
    const changedKeys: number[] = [];
    // First what footprints read (Chassis names, datapath keys), then the rows themselves,
    // then the rows whose footprint follows a changed Logical_DP_Group or datapath key.
    for (const c of delta.changes) {
      if (c.table === 'Chassis') {
        const old = c.kind === 'insert' ? undefined : c.old;
        const row = c.kind === 'delete' ? undefined : c.new;
        if (old !== undefined) chassisNames.add(old.name as string);
        if (row !== undefined) chassisNames.add(row.name as string);
        this.setChassis(old, row);
      } else if (c.table === 'Datapath_Binding') {
        if (c.kind !== 'insert') {
          const key = c.old.tunnel_key as number;
          if (this.datapathOfKey.get(key) === c.uuid) this.datapathOfKey.delete(key);
          changedKeys.push(key);
        }
        if (c.kind !== 'delete') {
          this.datapathOfKey.set(c.new.tunnel_key as number, c.uuid);
          changedKeys.push(c.new.tunnel_key as number);
        }
      } else if (c.table === 'Logical_DP_Group') {
        changedGroups.push(c.uuid);
      } else if (c.table === 'HA_Chassis') {
        // The member it names, before and after, may gain or lose its groups' datapaths.
        for (const r of [c.kind === 'insert' ? undefined : c.old, c.kind === 'delete' ? undefined : c.new]) {
          const name = r === undefined ? undefined : this.haMemberName(r);
          if (name !== undefined) chassisNames.add(name);
        }
      } else if (c.table === 'HA_Chassis_Group') {
        for (const r of [c.kind === 'insert' ? undefined : c.old, c.kind === 'delete' ? undefined : c.new]) {
          if (r !== undefined) this.haGroupMemberNames(r, chassisNames);
        }
      }
    }
    for (const c of delta.changes) {
      const row = c.kind === 'delete' ? undefined : c.new;
      if (c.table === 'Port_Binding') {
        const before = this.bindings.get(c.uuid);
        const after = row === undefined ? undefined : bindingOf(row);
        if (before !== undefined && after !== undefined && sameBinding(before, after)) {
          // Nothing the bindings or the patch graph read changed.
        } else {
          for (const r of [before, after]) {
            if (r === undefined) continue;
            for (const u of r.chassis) chassisUuids.add(u);
            if (r.l3gatewayChassis !== undefined) chassisNames.add(r.l3gatewayChassis);
            if (r.haGroup !== undefined) {
              const g = this.rows('HA_Chassis_Group').get(r.haGroup);
              if (g !== undefined) this.haGroupMemberNames(g, chassisNames);
            }
            if (r.peer !== undefined) datapaths.add(r.datapath);
            // Ports that name this one as their peer now lead somewhere else (or nowhere).
            for (const p of this.peersNaming.get(r.name) ?? []) datapaths.add((this.bindings.get(p) as BindingRecord).datapath);
          }
          this.setBinding(c.uuid, after);
          if (after !== undefined) for (const p of this.peersNaming.get(after.name) ?? []) datapaths.add((this.bindings.get(p) as BindingRecord).datapath);
        }
      }
      if (isDatapathScoped(c.table)) this.setRow(c.table, c.uuid, row, c.kind === 'insert' ? undefined : c.old);
    }
    // A flow's footprint follows its groups when asked (footprint()); it is filed by its own
    // datapaths only, which a group change leaves as they are.
    for (const g of changedGroups) for (const lb of [...(this.lbsByDpGroup.get(g) ?? [])]) this.setRow('Load_Balancer', lb, this.rows('Load_Balancer').get(lb), undefined);
    for (const k of changedKeys) for (const f of [...(this.fdbsByKey.get(k) ?? [])]) this.setRow('FDB', f, this.rows('FDB').get(f), undefined);
    return { chassisNames, chassisUuids, datapaths };
  }

  /**
   * The name of the registered chassis an HA_Chassis row names: its chassis column's Chassis
   * (none when that is not registered), or else external_ids:chassis-name when a chassis of that
   * name is (agent/ha-chassis.ts, memberChassis).
   */
  private haMemberName(hc: Row): string | undefined {
    const ref = uuidsOf(hc.chassis)[0];
    if (ref !== undefined) return this.chassisNameOf.get(ref);
    const name = optionOf(hc, 'external_ids', 'chassis-name');
    return name !== undefined && this.chassisByName.has(name) ? name : undefined;
  }

  /** Adds the names of a group's registered members to `out`. */
  private haGroupMemberNames(group: Row, out: Set<string>): void {
    for (const u of uuidsOf(group.ha_chassis)) {
      const hc = this.rows('HA_Chassis').get(u);
      const name = hc === undefined ? undefined : this.haMemberName(hc);
      if (name !== undefined) out.add(name);
    }
  }

  private setChassis(old: Row | undefined, row: Row | undefined): void {
    if (old !== undefined) {
      const name = old.name as string;
      if (this.chassisByName.get(name) === old._uuid) this.chassisByName.delete(name);
      this.chassisNameOf.delete(old._uuid);
    }
    if (row !== undefined) {
      this.chassisByName.set(row.name as string, row._uuid);
      this.chassisNameOf.set(row._uuid, row.name as string);
    }
  }

  private setBinding(uuid: string, after: BindingRecord | undefined): void {
    const before = this.bindings.get(uuid);
    if (before !== undefined) {
      if (this.portByName.get(before.name) === uuid) this.portByName.delete(before.name);
      for (const c of before.chassis) countDown(this.boundByChassis, c, before.datapath);
      if (before.l3gatewayChassis !== undefined) countDown(this.l3gatewayByChassis, before.l3gatewayChassis, before.datapath);
      if (before.haGroup !== undefined) removeFrom(this.haPortsByGroup, before.haGroup, uuid);
      if (before.peer !== undefined) {
        removeFrom(this.patchPorts, before.datapath, uuid);
        removeFrom(this.peersNaming, before.peer, uuid);
      }
      this.bindings.delete(uuid);
    }
    if (after === undefined) return;
    this.bindings.set(uuid, after);
    this.portByName.set(after.name, uuid);
    for (const c of after.chassis) countUp(this.boundByChassis, c, after.datapath);
    if (after.l3gatewayChassis !== undefined) countUp(this.l3gatewayByChassis, after.l3gatewayChassis, after.datapath);
    if (after.haGroup !== undefined) addTo(this.haPortsByGroup, after.haGroup, uuid);
    if (after.peer !== undefined) {
      addTo(this.patchPorts, after.datapath, uuid);
      addTo(this.peersNaming, after.peer, uuid);
    }
  }

  /**
   * (Re)indexes one datapath-scoped row under its footprint now (row undefined: it is gone).
   * `old` is the row as it was last indexed (undefined when it was not): Logical_Flow
   * footprints are not kept (see footprint()), so a flow is unfiled by its old row.
   */
  private setRow(table: string, uuid: string, row: Row | undefined, old: Row | undefined): void {
    let fps = this.fps.get(table);
    if (fps === undefined) this.fps.set(table, (fps = new Map()));
    const before: Pick<Footprint, 'datapaths' | 'parent'> | undefined =
      table !== 'Logical_Flow' ? fps.get(uuid) : old === undefined ? undefined : { datapaths: uuidsOf(old.logical_datapath) };
    if (before !== undefined) {
      for (const dp of before.datapaths) {
        const t = this.byDatapath.get(dp);
        const s = t?.get(table);
        s?.delete(uuid);
        if (s !== undefined && s.size === 0) t?.delete(table);
        if (t !== undefined && t.size === 0) this.byDatapath.delete(dp);
      }
      if (before.parent !== undefined) removeFrom(this.childrenOf, before.parent, uuid);
      if (table === 'Port_Binding') this.portsEverywhere.delete(uuid);
      fps.delete(uuid);
    }
    if (table === 'Logical_Flow') {
      this.fileUnderGroup(this.flowsByDpGroup, this.flowGroupOf, uuid, row === undefined ? undefined : uuidsOf(row.logical_dp_group)[0]);
    } else if (table === 'Load_Balancer') {
      this.fileUnderGroup(this.lbsByDpGroup, this.lbGroupOf, uuid, row === undefined ? undefined : uuidsOf(row.datapath_group)[0]);
    } else if (table === 'FDB') {
      const was = this.fdbKeyOf.get(uuid);
      if (was !== undefined) {
        removeFrom(this.fdbsByKey, was, uuid);
        this.fdbKeyOf.delete(uuid);
      }
      if (row !== undefined) {
        addTo(this.fdbsByKey, row.dp_key as number, uuid);
        this.fdbKeyOf.set(uuid, row.dp_key as number);
      }
    }
    if (row === undefined) return;
    const fp = footprintOf(table, row, this.auxNow);
    if (table !== 'Logical_Flow') fps.set(uuid, fp);
    if (fp.parent !== undefined) addTo(this.childrenOf, fp.parent, uuid);
    if (table === 'Port_Binding' && fp.scope === 'all') this.portsEverywhere.add(uuid);
    for (const dp of fp.datapaths) {
      let t = this.byDatapath.get(dp);
      if (t === undefined) this.byDatapath.set(dp, (t = new Map()));
      let s = t.get(table);
      if (s === undefined) t.set(table, (s = new Set()));
      s.add(uuid);
    }
  }

  /** Files a row under its datapath group (or none), moving it from where it was. */
  private fileUnderGroup(byGroup: Map<string, Set<string>>, groupOf: Map<string, string>, uuid: string, group: string | undefined): void {
    const was = groupOf.get(uuid);
    if (was !== undefined) {
      removeFrom(byGroup, was, uuid);
      groupOf.delete(uuid);
    }
    if (group !== undefined) {
      addTo(byGroup, group, uuid);
      groupOf.set(uuid, group);
    }
  }

  /** Logical_Flow → its logical_dp_group, Load_Balancer → its datapath_group; FDB → its dp_key
   *  (what they were indexed under). */
  private flowGroupOf = new Map<string, string>();
  private lbGroupOf = new Map<string, string>();
  private fdbKeyOf = new Map<string, number>();

  /**
   * The footprint of a row as the view is now. A Logical_Flow's is worked out when asked: it
   * reads only the flow's own columns and the current datapath groups, and keeping one per flow
   * cost ~3.5 MiB with the 10,000-port topology's ~49,000 flows.
   */
  footprint(table: string, row: Row): Footprint {
    return this.fps.get(table)?.get(row._uuid) ?? footprintOf(table, row, this.auxNow);
  }

  /**
   * Rows (table, uuid) whose footprint names `datapath`: indexed under it, and the flows and
   * load balancers of the datapath groups it is a member of (those are indexed by group only).
   */
  *rowsOfDatapath(datapath: string): Generator<readonly [string, string]> {
    for (const [table, uuids] of this.byDatapath.get(datapath) ?? []) for (const uuid of uuids) yield [table, uuid];
    // Groups are few (one per distinct set of datapaths sharing flows): looked up, not filed.
    for (const g of this.rows('Logical_DP_Group').values()) {
      if (!groupMembers(g).has(datapath)) continue;
      yield ['Logical_DP_Group', g._uuid];
      for (const f of this.flowsByDpGroup.get(g._uuid) ?? []) yield ['Logical_Flow', f];
      for (const lb of this.lbsByDpGroup.get(g._uuid) ?? []) yield ['Load_Balancer', lb];
    }
  }

  /** Logical_Flows whose logical_dp_group is `uuid`. */
  flowsOfDpGroup(uuid: string): ReadonlySet<string> {
    return this.flowsByDpGroup.get(uuid) ?? new Set();
  }

  /** Load_Balancers whose datapath_group is `uuid`. */
  lbsOfDpGroup(uuid: string): ReadonlySet<string> {
    return this.lbsByDpGroup.get(uuid) ?? new Set();
  }

  /** FDB rows whose dp_key is `key`. */
  fdbsOfKey(key: number): ReadonlySet<string> {
    return this.fdbsByKey.get(key) ?? new Set();
  }

  datapathByKey(key: number): string | undefined {
    return this.datapathOfKey.get(key);
  }

  /** The Port_Binding uuid of a logical port. */
  portNamed(name: string): string | undefined {
    return this.portByName.get(name);
  }

  /** Port_Bindings whose parent_port is `name` (its container ports). */
  portsWithParent(name: string): ReadonlySet<string> {
    return this.childrenOf.get(name) ?? new Set();
  }

  /** Port_Bindings every chassis sees whatever its datapaths. */
  everywherePorts(): ReadonlySet<string> {
    return this.portsEverywhere;
  }

  /** The Port_Bindings an iface-id brings: the port of that name and its container ports. */
  *portsOfIfaceId(name: string): Generator<string> {
    const own = this.portByName.get(name);
    if (own !== undefined) yield own;
    yield* [...this.portsWithParent(name)].sort();
  }

  chassisUuid(name: string): string | undefined {
    return this.chassisByName.get(name);
  }

  chassisName(uuid: string): string | undefined {
    return this.chassisNameOf.get(uuid);
  }

  /** The local datapaths of chassis `name` (see the file's comment). */
  localDatapaths(name: string): Set<string> {
    const local = new Set<string>();
    const uuid = this.chassisByName.get(name);
    if (uuid !== undefined) for (const dp of this.boundByChassis.get(uuid)?.keys() ?? []) local.add(dp);
    for (const dp of this.l3gatewayByChassis.get(name)?.keys() ?? []) local.add(dp);
    // Groups with ports are few (one per gateway port); their members a handful each.
    const members = new Set<string>();
    for (const [g, ports] of this.haPortsByGroup) {
      const group = this.rows('HA_Chassis_Group').get(g);
      if (group === undefined) continue;
      members.clear();
      this.haGroupMemberNames(group, members);
      if (members.has(name)) for (const p of ports) local.add((this.bindings.get(p) as BindingRecord).datapath);
    }
    const queue = [...local];
    // Each datapath enters the queue once, so this ends after at most every datapath.
    while (queue.length > 0) {
      const dp = queue.pop() as string;
      for (const p of this.patchPorts.get(dp) ?? []) {
        const peer = this.portByName.get((this.bindings.get(p) as BindingRecord).peer as string);
        const next = peer === undefined ? undefined : this.bindings.get(peer)?.datapath;
        if (next !== undefined && !local.has(next)) {
          local.add(next);
          queue.push(next);
        }
      }
    }
    return local;
  }
}

/** The changes between two revisions, per row: its image at the first and at the second. */
export interface WindowEntry {
  readonly old: Row | undefined;
  readonly new: Row | undefined;
}
export type Window = ReadonlyMap<string, ReadonlyMap<string, WindowEntry>>;

/** Folds consecutive deltas into one entry per row (first old image, last new image). */
export function windowOf(deltas: Iterable<DbDelta>): Window {
  const w = new Map<string, Map<string, WindowEntry>>();
  for (const d of deltas) {
    for (const c of d.changes) {
      let t = w.get(c.table);
      if (t === undefined) w.set(c.table, (t = new Map()));
      const prev = t.get(c.uuid);
      const old = prev !== undefined ? prev.old : c.kind === 'insert' ? undefined : c.old;
      const now = c.kind === 'delete' ? undefined : c.new;
      if (old === undefined && now === undefined) t.delete(c.uuid);
      else t.set(c.uuid, { old, new: now });
    }
  }
  return w;
}

export function windowSize(w: Window): number {
  let n = 0;
  for (const t of w.values()) n += t.size;
  return n;
}

/** One row that may look different to some interest: its two images and footprints. */
export interface Candidate {
  readonly table: string;
  readonly uuid: string;
  readonly old: Row | undefined;
  readonly new: Row | undefined;
  /** The row itself changed (rather than only what decides who sees it). */
  readonly changed: boolean;
  readonly fpOld: Footprint;
  readonly fpNew: Footprint;
}

/**
 * What footprints read at the start of a window: the window's old images where it changed
 * them, the view now elsewhere.
 */
export function auxBefore(index: InterestIndex, rows: Rows, w: Window): Aux {
  const groups = w.get('Logical_DP_Group');
  const datapaths = w.get('Datapath_Binding');
  const oldKeys = new Map<number, string>();
  for (const [uuid, e] of datapaths ?? []) if (e.old !== undefined) oldKeys.set(e.old.tunnel_key as number, uuid);
  return {
    dpGroup: (uuid) => {
      const e = groups?.get(uuid);
      return e !== undefined ? e.old : rows('Logical_DP_Group').get(uuid);
    },
    datapathByKey: (key) => {
      const old = oldKeys.get(key);
      if (old !== undefined) return old;
      const now = index.datapathByKey(key);
      return now !== undefined && datapaths?.has(now) !== true ? now : undefined;
    },
  };
}

/**
 * The rows a window may show differently to someone: every row it changed, and the rows whose
 * footprint follows a Logical_DP_Group or a datapath key it changed. The index must already
 * be at the window's end.
 */
export function candidatesOf(index: InterestIndex, rows: Rows, w: Window): Candidate[] {
  const before = auxBefore(index, rows, w);
  const out: Candidate[] = [];
  for (const [table, entries] of w) {
    if (unstreamedTables.has(table)) continue;
    for (const [uuid, e] of entries) {
      out.push({
        table,
        uuid,
        old: e.old,
        new: e.new,
        changed: true,
        fpOld: e.old === undefined ? footprintNone : footprintOf(table, e.old, before),
        fpNew: e.new === undefined ? footprintNone : index.footprint(table, e.new),
      });
    }
  }
  const dependent = (table: string, uuid: string): void => {
    if (w.get(table)?.has(uuid) === true) return;
    const row = rows(table).get(uuid);
    if (row === undefined) return;
    out.push({ table, uuid, old: row, new: row, changed: false, fpOld: footprintOf(table, row, before), fpNew: index.footprint(table, row) });
  };
  const seenFlows = new Set<string>();
  for (const uuid of w.get('Logical_DP_Group')?.keys() ?? []) {
    for (const f of index.flowsOfDpGroup(uuid)) if (!seenFlows.has(f)) {
      seenFlows.add(f);
      dependent('Logical_Flow', f);
    }
    // A load balancer names one group at most: it cannot come twice.
    for (const lb of index.lbsOfDpGroup(uuid)) dependent('Load_Balancer', lb);
  }
  const keys = new Set<number>();
  for (const e of w.get('Datapath_Binding')?.values() ?? []) {
    if (e.old !== undefined) keys.add(e.old.tunnel_key as number);
    if (e.new !== undefined) keys.add(e.new.tunnel_key as number);
  }
  for (const k of keys) for (const f of index.fdbsOfKey(k)) dependent('FDB', f);
  return out;
}

/** Rows of `datapaths` as they are now, not already among `taken` (table + '\0' + uuid). */
export function candidatesOfDatapaths(index: InterestIndex, rows: Rows, datapaths: Iterable<string>, taken: Set<string>): Candidate[] {
  const out: Candidate[] = [];
  for (const dp of datapaths) {
    for (const [table, uuid] of index.rowsOfDatapath(dp)) {
      const k = `${table}\0${uuid}`;
      if (taken.has(k)) continue;
      taken.add(k);
      const row = rows(table).get(uuid) as Row;
      const fp = index.footprint(table, row);
      out.push({ table, uuid, old: row, new: row, changed: false, fpOld: fp, fpNew: fp });
    }
  }
  return out;
}

/** Port_Bindings the named iface-ids bring (the ports and their container ports) as they are
 *  now, not already among `taken`. */
export function candidatesOfPorts(index: InterestIndex, rows: Rows, ports: Iterable<string>, taken: Set<string>): Candidate[] {
  const out: Candidate[] = [];
  for (const name of ports) {
    for (const uuid of index.portsOfIfaceId(name)) {
      const k = `Port_Binding\0${uuid}`;
      if (taken.has(k)) continue;
      taken.add(k);
      const row = rows('Port_Binding').get(uuid) as Row;
      const fp = index.footprint('Port_Binding', row);
      out.push({ table: 'Port_Binding', uuid, old: row, new: row, changed: false, fpOld: fp, fpNew: fp });
    }
  }
  return out;
}

export function candidateKey(c: { readonly table: string; readonly uuid: string }): string {
  return `${c.table}\0${c.uuid}`;
}

/** One row of an agent's step: its image now, or undefined when it left the agent's view. */
export interface ViewChange {
  readonly table: string;
  readonly uuid: string;
  readonly row: Row | undefined;
  /** For a row the viewer saw before and sees now: the image it holds (the wire may send the difference). */
  readonly old?: Row | undefined;
}

/**
 * What a viewer that saw rows by `wasSeen` must be told so that it sees them by `isSeen`:
 * an upsert for a row it sees now that changed or that it did not see, a removal for a row it
 * saw and no longer sees.
 */
export function viewChange(c: Candidate, wasSeen: boolean, isSeen: boolean): ViewChange | undefined {
  if (isSeen && wasSeen && c.changed && c.old !== undefined) return { table: c.table, uuid: c.uuid, row: c.new as Row, old: c.old };
  if (isSeen && (c.changed || !wasSeen)) return { table: c.table, uuid: c.uuid, row: c.new as Row };
  if (wasSeen && !isSeen) return { table: c.table, uuid: c.uuid, row: undefined };
  return undefined;
}

/** The part of a step every stream of a group receives alike. */
export function groupStep(cands: Iterable<Candidate>, before: GroupInterest, after: GroupInterest): ViewChange[] {
  const out: ViewChange[] = [];
  for (const c of cands) {
    const v = viewChange(c, groupSees(c.fpOld, before), groupSees(c.fpNew, after));
    if (v !== undefined) out.push(v);
  }
  return out;
}

/** Whether a candidate may concern a stream beyond its group (see personalStep). */
export function personallyRelevant(c: Candidate, before: Interest, after: Interest): boolean {
  return personallySees(c.fpOld, before) || personallySees(c.fpNew, after);
}

/**
 * What one stream must be told after its group's part of the same step (applied after it,
 * a later entry for a row overriding an earlier one) so that it sees rows by its whole
 * interest: the Port_Bindings it asked for and its own Chassis_Private.
 */
export function personalStep(cands: Iterable<Candidate>, before: Interest, after: Interest): ViewChange[] {
  const out: ViewChange[] = [];
  for (const c of cands) {
    const g0 = groupSees(c.fpOld, before);
    const g1 = groupSees(c.fpNew, after);
    const shared = viewChange(c, g0, g1);
    const wanted = viewChange(c, g0 || personallySees(c.fpOld, before), g1 || personallySees(c.fpNew, after));
    if (wanted !== undefined) {
      if (shared === undefined || (shared.row === undefined) !== (wanted.row === undefined)) out.push(wanted);
    } else if (shared !== undefined && shared.row === undefined) {
      // The group dropped a row this stream still sees (unchanged): put it back.
      out.push({ table: c.table, uuid: c.uuid, row: c.new as Row });
    }
  }
  return out;
}

/**
 * Every row `interest` sees in the view now (the rows of a snapshot): the group's part (what
 * every stream with the same local datapaths sees), the stream's own part beyond it, or both.
 */
export function visibleRows(index: InterestIndex, rows: Rows, tables: Iterable<string>, interest: Interest, part: 'group' | 'personal' | 'all'): ViewChange[] {
  const out: ViewChange[] = [];
  if (part !== 'personal') {
    for (const table of tables) {
      if (unstreamedTables.has(table)) continue;
      if (interest.monitorAll || (!isDatapathScoped(table) && !isChassisScoped(table))) {
        for (const row of rows(table).values()) out.push({ table, uuid: row._uuid, row });
      }
    }
    if (!interest.monitorAll) {
      const taken = new Set<string>();
      for (const dp of [...interest.datapaths].sort()) {
        for (const [table, uuid] of index.rowsOfDatapath(dp)) {
          const k = `${table}\0${uuid}`;
          if (taken.has(k)) continue;
          taken.add(k);
          out.push({ table, uuid, row: rows(table).get(uuid) as Row });
        }
      }
      for (const uuid of [...index.everywherePorts()].sort()) {
        if (!taken.has(`Port_Binding\0${uuid}`)) out.push({ table: 'Port_Binding', uuid, row: rows('Port_Binding').get(uuid) as Row });
      }
    }
  }
  if (part !== 'group' && !interest.monitorAll) {
    const taken = new Set<string>();
    for (const name of [...interest.ifaceIds].sort()) {
      for (const uuid of index.portsOfIfaceId(name)) {
        const row = rows('Port_Binding').get(uuid) as Row;
        // A port on a local datapath is already in the group's part.
        if (taken.has(uuid) || groupSees(index.footprint('Port_Binding', row), interest)) continue;
        taken.add(uuid);
        out.push({ table: 'Port_Binding', uuid, row });
      }
    }
    for (const [table, column] of Object.entries(chassisColumnOf)) {
      for (const row of rows(table).values()) if (row[column] === interest.chassis) out.push({ table, uuid: row._uuid, row });
    }
  }
  return out;
}

// --- The oracle: the same answers from the whole view, with no index and no shared code ----
// Written from the rules in this file's opening comment, table by table, as plainly as
// possible; the tests compare the incremental answers with these.

function refs(v: unknown): string[] {
  return typeof v === 'string' ? [v] : Array.isArray(v) ? (v as string[]) : [];
}

/** A chassis's local datapaths by scanning every Port_Binding (the index's oracle). */
export function localDatapathsFromScratch(rows: Rows, name: string): Set<string> {
  let uuid: string | undefined;
  for (const c of rows('Chassis').values()) if (c.name === name) uuid = c._uuid;
  const ports = [...rows('Port_Binding').values()];
  const option = (pb: Row, key: string): unknown => (pb.options as ReadonlyMap<Atom, Atom>).get(key);
  const local = new Set<string>();
  const registered = (n: unknown): boolean => [...rows('Chassis').values()].some((c) => c.name === n);
  const haMember = (pb: Row): boolean => {
    if (pb.type !== 'chassisredirect' && pb.type !== 'external') return false;
    const group = rows('HA_Chassis_Group').get(refs(pb.ha_chassis_group)[0] ?? '');
    return refs(group?.ha_chassis).some((u) => {
      const hc = rows('HA_Chassis').get(u);
      if (hc === undefined) return false;
      const ref = refs(hc.chassis)[0];
      if (ref !== undefined) return ref === uuid;
      const named = (hc.external_ids as ReadonlyMap<Atom, Atom>).get('chassis-name');
      return named === name && registered(named);
    });
  };
  for (const pb of ports) {
    const boundHere = uuid !== undefined && [...refs(pb.chassis), ...refs(pb.additional_chassis), ...refs(pb.requested_chassis), ...refs(pb.requested_additional_chassis)].includes(uuid);
    const gatewayHere = pb.type === 'l3gateway' && option(pb, 'l3gateway-chassis') === name;
    if (boundHere || gatewayHere || haMember(pb)) local.add(pb.datapath as string);
  }
  for (let grew = true; grew; ) {
    grew = false;
    for (const pb of ports) {
      if ((pb.type !== 'patch' && pb.type !== 'l3gateway') || !local.has(pb.datapath as string)) continue;
      const peer = ports.find((q) => q.logical_port === option(pb, 'peer'));
      if (peer !== undefined && !local.has(peer.datapath as string)) {
        local.add(peer.datapath as string);
        grew = true;
      }
    }
  }
  return local;
}

/** Whether `interest` sees a row of `table`, from the whole view (the footprints' oracle). */
export function seesFromScratch(rows: Rows, table: string, row: Row, interest: Interest): boolean {
  if (table === 'Connection' || table === 'SSL' || table === 'RBAC_Role' || table === 'RBAC_Permission') return false;
  if (interest.monitorAll) return true;
  const local = (dps: readonly string[]): boolean => dps.some((d) => interest.datapaths.has(d));
  switch (table) {
    case 'Chassis_Private':
      return row.name === interest.chassis;
    case 'Chassis_Template_Var':
      return row.chassis === interest.chassis;
    case 'Datapath_Binding':
      return interest.datapaths.has(row._uuid);
    case 'Port_Binding':
      return interest.datapaths.has(row.datapath as string) || interest.ifaceIds.has(row.logical_port as string)
        || refs(row.parent_port).some((p) => interest.ifaceIds.has(p)) || row.type === 'chassisredirect' || row.type === 'external';
    case 'Multicast_Group':
    case 'MAC_Binding':
    case 'Static_MAC_Binding':
    case 'IP_Multicast':
    case 'IGMP_Group':
      return local(refs(row.datapath));
    case 'Logical_DP_Group':
    case 'DNS':
      return local(refs(row.datapaths));
    case 'Logical_Flow': {
      if (local(refs(row.logical_datapath))) return true;
      return refs(row.logical_dp_group).some((g) => local(refs(rows('Logical_DP_Group').get(g)?.datapaths)));
    }
    case 'Load_Balancer': {
      if (local(refs(row.datapaths))) return true;
      return refs(row.datapath_group).some((g) => local(refs(rows('Logical_DP_Group').get(g)?.datapaths)));
    }
    case 'FDB':
      return [...rows('Datapath_Binding').values()].some((d) => d.tunnel_key === row.dp_key && interest.datapaths.has(d._uuid));
    default:
      return true;
  }
}

/** Every row `interest` sees, by evaluating each row from scratch. */
export function visibleFromScratch(rows: Rows, tables: Iterable<string>, interest: Interest): Map<string, Map<string, Row>> {
  const out = new Map<string, Map<string, Row>>();
  for (const table of tables) {
    for (const row of rows(table).values()) {
      if (!seesFromScratch(rows, table, row, interest)) continue;
      let t = out.get(table);
      if (t === undefined) out.set(table, (t = new Map()));
      t.set(row._uuid, row);
    }
  }
  return out;
}
