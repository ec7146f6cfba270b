// The northd projection's public surface. `createNorthd()` keeps an incrementally maintained
// SB view: feed it every committed NB delta in order with `apply`, and it returns the SB
// changes. `recompute` is the oracle: a fresh, full computation from an NB database.
//
// Tunnel keys are history: the key of a datapath or port is chosen when it first appears and
// kept while it lives, so no function of the NB state alone can give them. A recompute (like
// ovn-northd's, which reads them back from the SB) therefore takes the previous SB view and
// keeps the keys of the objects that are still there.
//
// What chassis write into northd's rows comes in through two sources: Port_Binding's
// chassis-owned columns per logical port (`setChassisOwned`) and Service_Monitor.status per
// row (`setServiceMonitorStatus`). Both are history too, kept in `history()`, as is the third
// thing chassis bring: the SB Chassis rows registered (name → UUID, also given to
// `setChassisOwned`), which HA_Chassis.chassis and HA_Chassis_Group.ref_chassis name. The
// IGMP_Group rows chassis write (what their snooping learned, `setIgmpGroups`) and the Chassis
// rows' hostnames (which options:requested-chassis may name) are not history here: they live in
// the chassis database, which a restore hands back (`createNorthd`); the tunnel keys of the
// multicast groups made from those rows are.
//
// One more thing is history: the drop sampling in force (drop-sampling.ts). ovn-northd keeps the
// last valid NB_Global setting when a new one names a domain it refuses, so while the options
// name one, what is in force comes from before them; `history()` carries it then.
import type { Database, DbDelta, Row, RowChange, Uuid } from '../ovsdb/index.js';
import type * as sb from '../ovsdb/rows/sb.js';
import type { DatapathsData } from './datapaths.js';
import { datapathsNode } from './datapaths.js';
import type { NodeStats } from './engine.js';
import { Engine, erase } from './engine.js';
import type { LflowsData } from './lflows/node.js';
import { lflowsNode } from './lflows/node.js';
import type { IgmpGroupReport, MulticastData, SbIgmpChange, SbIgmpData } from './multicast.js';
import { igmpKeysOf, MC_IP_MULTICAST_MIN, multicastNode } from './multicast.js';
import type { ChassisOwnedColumns, PortsData, SbChassisData, SbOwnedData } from './ports.js';
import { portSbUuid, portsNode } from './ports.js';
import type { SbHostnamesData } from './requested-chassis.js';
import { applyHostnameUpdates } from './requested-chassis.js';
import type { SbEncapsData } from './tunnel-keys.js';
import type { SbChangeSet, SbDelta, SbTable, SbView } from './sb-changes.js';
import { SbChangeSet as ChangeSet } from './sb-changes.js';
import type { SbGlobalData } from './sb-global.js';
import { sbGlobalNode } from './sb-global.js';
import { addressSetsNode, type AddressSetsData } from './address-sets.js';
import { routersNode } from './routers.js';
import type { AclsData } from './acls.js';
import { aclsNode } from './acls.js';
import type { DhcpCodesData } from './dhcp-codes.js';
import { dhcpCodesNode } from './dhcp-codes.js';
import { lbsNode } from './load-balancers.js';
import type { MirrorsData } from './mirrors.js';
import { mirrorsNode } from './mirrors.js';
import type { StaticMacBindingsData } from './static-mac-bindings.js';
import { staticMacBindingsNode } from './static-mac-bindings.js';
import type { BfdData } from './bfd.js';
import { bfdNode } from './bfd.js';
import type { TemplateVarsData } from './template-vars.js';
import { templateVarsNode } from './template-vars.js';
import type { DnsData } from './dns.js';
import { dnsNode } from './dns.js';
import type { DropSampling, DropSamplingData } from './drop-sampling.js';
import { dropSamplingNode, heldDropSampling, seedDropSampling } from './drop-sampling.js';
import type { SvcMonitorsData, SvcStatusData } from './service-monitors.js';
import { svcMonitorsNode } from './service-monitors.js';
import type { MetersData } from './meters.js';
import { metersNode } from './meters.js';
import type { RbacData } from './rbac.js';
import { rbacNode } from './rbac.js';

export type { SbDelta, SbView } from './sb-changes.js';
export type { NodeStats } from './engine.js';
export type { ChassisOwnedColumns } from './ports.js';
export type { DropSampling } from './drop-sampling.js';
export { ACTIVATED_OPTION, PD_LIST_OPTION } from './ports.js';
export { hashUuid } from './hash.js';
export { Ipam } from './ipam.js';
export type { DynamicAddressWrite } from './ipam.js';
export { tagWrites } from './tags.js';
export type { TagWrite } from './tags.js';
export { flowDatapaths } from './lflows/flow.js';
export { LS_EGRESS_STAGES, LS_INGRESS_STAGES, LR_EGRESS_STAGES, LR_INGRESS_STAGES } from './stages.js';

/**
 * What of northd's state is history rather than a function of the NB database: the tunnel
 * keys given so far, the agents' last reports and the Chassis registered. With it,
 * `createNorthd(history)` followed by a first run on the same NB database reproduces the view
 * exactly. Every list is sorted, so equal states give equal values (and equal bytes when
 * encoded in order).
 */
export interface NorthdHistory {
  /** [NB Logical_Switch/Logical_Router UUID, tunnel key], by UUID. */
  readonly datapathKeys: readonly (readonly [Uuid, number])[];
  /** [Datapath_Binding UUID, logical_port, tunnel key], by logical_port. */
  readonly portKeys: readonly (readonly [Uuid, string, number])[];
  /** [logical_port, chassis-owned columns], by logical_port. */
  readonly chassisOwned: readonly (readonly [string, ChassisOwnedColumns])[];
  /** [Service_Monitor UUID, status as a chassis reported it], by UUID. */
  readonly serviceMonitorStatus: readonly (readonly [Uuid, string])[];
  /** [Chassis name, Chassis UUID] of every registered chassis, by name. */
  readonly chassis: readonly (readonly [string, Uuid])[];
  /** [Datapath_Binding UUID, group name, tunnel key] of the IP multicast groups, by datapath and name. */
  readonly igmpKeys: readonly (readonly [Uuid, string, number])[];
  /**
   * [collector set, observation domain] of the drop sampling kept in force while NB_Global's
   * options name a domain ovn-northd refuses; absent when the options alone say what is in
   * force (as they do whenever their domain is valid, or sampling is off).
   */
  readonly dropSampling?: readonly [number, number];
}


/**
 * What chassis wrote, and the drop sampling in force, for `recompute`. Named rather than
 * positional: the status and Chassis maps are both string → string, so an argument in the
 * wrong place would still type-check.
 */
export interface NorthdReports {
  readonly chassisOwned?: ReadonlyMap<string, ChassisOwnedColumns>;
  readonly serviceMonitorStatus?: ReadonlyMap<Uuid, string>;
  readonly chassis?: ReadonlyMap<string, Uuid>;
  readonly igmpGroups?: ReadonlyMap<Uuid, IgmpGroupReport>;
  /** Chassis UUID → its hostname (Chassis without one are left out). */
  readonly hostnames?: ReadonlyMap<Uuid, string>;
  /** A Chassis has a vxlan encap (VXLAN mode). */
  readonly vxlan?: boolean;
  /** The drop sampling in force before the run (kept while NB_Global names a refused domain); absent: off. */
  readonly dropSampling?: DropSampling;
}

/** What the chassis database restored beside a history holds that northd reads (createNorthd). */
export interface NorthdRestored {
  readonly igmpGroups?: ReadonlyMap<Uuid, IgmpGroupReport>;
  /** Chassis UUID → its hostname (Chassis without one are left out). */
  readonly hostnames?: ReadonlyMap<Uuid, string>;
  /** A Chassis has a vxlan encap (VXLAN mode). */
  readonly vxlan?: boolean;
}

export interface Northd {
  /** Applies one committed NB transaction: `nb` is the database after it, `delta` its changes. */
  apply(nb: Database, delta: DbDelta): SbDelta;
  /**
   * Records what agents reported for some ports' chassis-owned Port_Binding columns (chassis,
   * encap, up, ...; undefined = forget the port's report) and, in `chassis`, the SB Chassis
   * rows that registered, left or were renamed (name → the UUID of the Chassis of that name
   * now, undefined when there is none), in `hostnames` the Chassis rows whose hostname came,
   * went or changed (UUID → the hostname now, undefined when the row is gone or has none), and
   * returns the SB changes. `nb` is the current NB database. Reports for ports without a
   * binding are kept for when it appears.
   */
  setChassisOwned(
    nb: Database, updates: ReadonlyMap<string, ChassisOwnedColumns | undefined>, chassis?: ReadonlyMap<string, Uuid | undefined>,
    hostnames?: ReadonlyMap<Uuid, string | undefined>,
  ): SbDelta;
  /**
   * Records the status chassis reported for some Service_Monitor rows (by UUID; undefined =
   * cleared) and returns the SB changes: the rows, and the flows of the load balancers whose
   * backends became (un)available. A report for a row that does not exist is ignored; a row's
   * report goes with the row.
   */
  setServiceMonitorStatus(nb: Database, updates: ReadonlyMap<Uuid, string | undefined>): SbDelta;
  /**
   * Records the IGMP_Group rows chassis inserted, changed or deleted (by UUID; undefined =
   * deleted) and returns the SB changes: the multicast groups of the switches (and relaying
   * routers) they name, and those groups' flows.
   */
  setIgmpGroups(nb: Database, updates: ReadonlyMap<Uuid, IgmpGroupReport | undefined>): SbDelta;
  /**
   * Records whether a Chassis has a vxlan encap (ovn-northd's is_vxlan_mode) and returns the SB
   * changes: in VXLAN mode new datapaths take keys up to 4095 and new ports up to 2047, requests
   * above are ignored (the keys held stay), and max_tunid says 4095.
   */
  setVxlanMode(nb: Database, vxlan: boolean): SbDelta;
  /** VXLAN mode as last reported. */
  vxlanMode(): boolean;
  /**
   * A fresh full computation; tunnel keys of objects alive in `previous` are kept, and what
   * chassis wrote comes from `reported` (none when absent): chassis-owned columns, Service_Monitor
   * statuses, the registered Chassis and their hostnames.
   */
  recompute(nb: Database, previous?: SbView, reported?: NorthdReports): SbView;
  /** The chassis-owned columns as last reported, by logical port. */
  chassisOwned(): ReadonlyMap<string, ChassisOwnedColumns>;
  /** Service_Monitor.status as last reported, by row UUID. */
  serviceMonitorStatus(): ReadonlyMap<Uuid, string>;
  /** The registered Chassis as last reported: name → UUID. */
  chassis(): ReadonlyMap<string, Uuid>;
  /** The IGMP_Group rows as last reported, by UUID. */
  igmpGroups(): ReadonlyMap<Uuid, IgmpGroupReport>;
  /** The registered Chassis's hostnames as last reported: UUID → hostname. */
  hostnames(): ReadonlyMap<Uuid, string>;
  /** The drop sampling in force (drop-sampling.ts). */
  dropSampling(): DropSampling;
  /** The current SB rows: table → uuid → row. */
  view(): SbView;
  /** The state a restart must carry to reproduce this view (see NorthdHistory). */
  history(): NorthdHistory;
  /** Per-node counters: recomputes and incremental runs. */
  stats(): Record<string, NodeStats>;
}

function buildEngine(): Engine {
  return new Engine(['nb', 'sb_owned', 'svc_status', 'sb_chassis', 'sb_hostnames', 'sb_igmp', 'sb_encaps'], [
    erase(datapathsNode()), erase(portsNode()), erase(multicastNode()), erase(svcMonitorsNode()), erase(lbsNode()), erase(bfdNode()), erase(routersNode()), erase(aclsNode()), erase(dnsNode()), erase(dropSamplingNode()), erase(lflowsNode()),
    erase(sbGlobalNode()), erase(addressSetsNode()), erase(staticMacBindingsNode()), erase(mirrorsNode()),
    erase(dhcpCodesNode()), erase(templateVarsNode()), erase(metersNode()), erase(rbacNode()),
  ]);
}

function viewOf(engine: Engine): SbView {
  const tables: SbTable[] = [
    engine.data<DatapathsData>('datapaths').table,
    engine.data<DatapathsData>('datapaths').ipMulticast,
    engine.data<LflowsData>('lflows').table,
    engine.data<LflowsData>('lflows').groupTable,
    engine.data<LflowsData>('lflows').lbTable,
    engine.data<MulticastData>('multicast').table,
    engine.data<PortsData>('ports').table,
    engine.data<PortsData>('ports').haGroupTable,
    engine.data<PortsData>('ports').haChassisTable,
    engine.data<SbGlobalData>('sb_global').table,
    engine.data<AddressSetsData>('address_sets').table,
    engine.data<AclsData>('acls').table,
    engine.data<DhcpCodesData>('dhcp_codes').v4,
    engine.data<DhcpCodesData>('dhcp_codes').v6,
    engine.data<DnsData>('dns').table,
    engine.data<StaticMacBindingsData>('static_mac_bindings').table,
    engine.data<SvcMonitorsData>('svc_monitors').table,
    engine.data<TemplateVarsData>('template_vars').table,
    engine.data<MetersData>('meters').meters,
    engine.data<MetersData>('meters').bands,
    engine.data<BfdData>('bfd').table,
    engine.data<MirrorsData>('mirrors').table,
    engine.data<RbacData>('rbac').roles,
    engine.data<RbacData>('rbac').permissions,
  ];
  const out = new Map<string, ReadonlyMap<Uuid, Row>>();
  for (const t of [...tables].sort((a, b) => (a.table < b.table ? -1 : 1))) out.set(t.table, t.rows);
  return out;
}

/** Nodes whose change is an SbChangeSet; others that write SB rows carry one as `sb`. */
const SB_CHANGE_NODES: ReadonlySet<string> = new Set(['bfd', 'lflows', 'sb_global', 'address_sets', 'dhcp_codes', 'static_mac_bindings', 'mirrors', 'template_vars', 'meters', 'rbac']);
const SB_CARRYING_NODES: ReadonlySet<string> = new Set(['datapaths', 'ports', 'multicast', 'acls', 'dns', 'svc_monitors']);

function mergedDelta(changes: ReadonlyMap<string, unknown>): SbDelta {
  const parts: SbChangeSet[] = [];
  for (const [name, c] of changes) {
    if (SB_CHANGE_NODES.has(name)) parts.push(c as SbChangeSet);
    else if (SB_CARRYING_NODES.has(name)) parts.push((c as { sb: SbChangeSet }).sb);
  }
  return { changes: ChangeSet.changesOf(parts) };
}

/** Seeds a fresh engine with the tunnel keys of `previous`, before its first (full) run. */
function seedKeys(engine: Engine, previous: SbView): void {
  const dps = engine.data<DatapathsData>('datapaths');
  for (const row of previous.get('Datapath_Binding')?.values() ?? []) {
    const r = row as unknown as sb.Datapath_Binding;
    const nbUuid = r.external_ids.get('logical-switch') ?? r.external_ids.get('logical-router');
    if (nbUuid !== undefined) dps.preferredKeys.set(nbUuid, r.tunnel_key);
  }
  const mc = engine.data<MulticastData>('multicast');
  for (const row of previous.get('Multicast_Group')?.values() ?? []) {
    const r = row as unknown as sb.Multicast_Group;
    if (r.tunnel_key >= MC_IP_MULTICAST_MIN) mc.preferredKeys.set(`${r.datapath} ${r.name}`, r.tunnel_key);
  }
  const ports = engine.data<PortsData>('ports');
  for (const row of previous.get('Port_Binding')?.values() ?? []) {
    const r = row as unknown as sb.Port_Binding;
    ports.preferredKeys.set(`${r.datapath} ${r.logical_port}`, r.tunnel_key);
  }
}

const byFirst = <T extends readonly [string, ...unknown[]]>(a: T, b: T): number => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0);

function historyOf(engine: Engine, owned: ReadonlyMap<string, ChassisOwnedColumns>, svcStatus: ReadonlyMap<Uuid, string>, chassis: ReadonlyMap<string, Uuid>): NorthdHistory {
  const igmpKeys = igmpKeysOf(engine.data<MulticastData>('multicast'));
  const datapathKeys = [...engine.data<DatapathsData>('datapaths').byNb.values()].map((d) => [d.nbUuid, d.key] as const).sort(byFirst);
  const portKeys = [...engine.data<PortsData>('ports').byName.values()]
    .map((p) => [p.name, p.dp, p.key] as const)
    .sort(byFirst)
    .map(([name, dp, key]) => [dp, name, key] as const);
  const chassisOwned = [...owned].sort(byFirst);
  const serviceMonitorStatus = [...svcStatus].sort(byFirst);
  const history: NorthdHistory = { datapathKeys, portKeys, chassisOwned, serviceMonitorStatus, chassis: [...chassis].sort(byFirst), igmpKeys };
  const held = heldDropSampling(engine.data<DropSamplingData>('drop_sampling'));
  return held === undefined ? history : { ...history, dropSampling: [held.collectorSet, held.domain] };
}

export type { IgmpGroupReport } from './multicast.js';

/**
 * A northd whose first run (a full computation) keeps the tunnel keys and chassis-owned
 * columns of `history`, so a replica restored from a snapshot continues exactly where the
 * others are, with what the chassis database restored beside it holds (`restored`: its
 * IGMP_Group rows and Chassis hostnames). Without `history` it starts empty.
 */
export function createNorthd(history?: NorthdHistory, restored?: NorthdRestored): Northd {
  const engine = buildEngine();
  const owned = new Map<string, ChassisOwnedColumns>(history?.chassisOwned ?? []);
  const svcStatus = new Map<Uuid, string>(history?.serviceMonitorStatus ?? []);
  const chassis = new Map<string, Uuid>(history?.chassis ?? []);
  const igmp = new Map<Uuid, IgmpGroupReport>(restored?.igmpGroups ?? []);
  const hostnameOf = new Map<Uuid, string>();
  const byHostname = new Map<string, readonly Uuid[]>();
  applyHostnameUpdates(byHostname, hostnameOf, restored?.hostnames ?? []);
  const encaps: SbEncapsData = { vxlan: restored?.vxlan ?? false };
  const igmpPreferred = engine.data<MulticastData>('multicast').preferredKeys;
  for (const [dp, name, key] of history?.igmpKeys ?? []) igmpPreferred.set(`${dp} ${name}`, key);
  const dpPreferred = engine.data<DatapathsData>('datapaths').preferredKeys;
  const portPreferred = engine.data<PortsData>('ports').preferredKeys;
  for (const [nbUuid, key] of history?.datapathKeys ?? []) dpPreferred.set(nbUuid, key);
  for (const [dp, name, key] of history?.portKeys ?? []) portPreferred.set(`${dp} ${name}`, key);
  const dropSampling = engine.data<DropSamplingData>('drop_sampling');
  if (history?.dropSampling !== undefined) seedDropSampling(dropSampling, { collectorSet: history.dropSampling[0], domain: history.dropSampling[1] });
  let started = false;
  let view: SbView | undefined;
  const run = (
    nb: Database,
    nbChange: DbDelta | undefined,
    ownedChange: ReadonlySet<string> | undefined,
    statusChange: ReadonlySet<Uuid> | undefined,
    chassisChange: ReadonlySet<string> | undefined,
    igmpChange?: SbIgmpChange,
    hostnameChange?: ReadonlySet<string>,
    encapsChange?: true,
  ): SbDelta => {
    const sources = new Map<string, { data: unknown; change: unknown }>([
      ['nb', { data: nb, change: nbChange }],
      ['sb_owned', { data: owned satisfies SbOwnedData, change: ownedChange }],
      ['svc_status', { data: svcStatus satisfies SvcStatusData, change: statusChange }],
      ['sb_chassis', { data: chassis satisfies SbChassisData, change: chassisChange }],
      ['sb_hostnames', { data: byHostname satisfies SbHostnamesData, change: hostnameChange }],
      ['sb_igmp', { data: igmp satisfies SbIgmpData, change: igmpChange }],
      ['sb_encaps', { data: encaps, change: encapsChange }],
    ]);
    // The first run recomputes everything from the database, so its delta is not needed.
    const delta = mergedDelta(engine.run(sources, !started));
    if (!started) {
      // The preferred keys served the first run only: kept longer, a port deleted and added
      // again later would take its old key here and the lowest free one on replicas that
      // never restarted.
      dpPreferred.clear();
      portPreferred.clear();
      igmpPreferred.clear();
    }
    started = true;
    return delta;
  };
  /**
   * A port whose Port_Binding is gone takes its chassis-owned columns with it: added again
   * later, it is a new binding that a chassis must claim (and report up) afresh, as in OVN.
   * Likewise a Service_Monitor row takes its status: made again, it starts unknown.
   */
  const forgetDeleted = (delta: SbDelta): SbDelta => {
    const gone: string[] = [];
    // Indexed: a full run's delta holds every row, and this runs too rarely to be optimized.
    for (let i = 0; i < delta.changes.length; i++) {
      const c = delta.changes[i] as RowChange;
      if (c.kind !== 'delete') continue;
      if (c.table === 'Service_Monitor') svcStatus.delete(c.uuid);
      else if (c.table === 'Port_Binding') gone.push(c.old.logical_port as string);
    }
    // A binding deleted under one UUID may be inserted or kept under another in the same delta:
    // only then are the delta's other bindings read (a full run's delta inserts every one).
    if (gone.length === 0) return delta;
    const kept = new Set<string>();
    for (let i = 0; i < delta.changes.length; i++) {
      const c = delta.changes[i] as RowChange;
      if (c.table === 'Port_Binding' && c.kind !== 'delete') kept.add(c.new.logical_port as string);
    }
    for (const name of gone) if (!kept.has(name)) owned.delete(name);
    return delta;
  };
  /**
   * A switch port turning virtual, or ceasing to be, is a new binding too (ovn-northd deletes
   * and recreates its Port_Binding): what a chassis reported for it is forgotten before the
   * run, so no claim of a VIF survives as a claim of a VIP, nor the other way round.
   */
  const forgetVirtualTypeChanges = (delta: DbDelta): ReadonlySet<string> | undefined => {
    let names: Set<string> | undefined;
    for (const c of delta.changes) {
      if (c.table !== 'Logical_Switch_Port' || c.kind !== 'modify') continue;
      const was = c.old as unknown as { name: string; type: string };
      const now = c.new as unknown as { name: string; type: string };
      if ((was.type === 'virtual') === (now.type === 'virtual') || !owned.has(now.name)) continue;
      owned.delete(now.name);
      (names ??= new Set()).add(now.name);
    }
    return names;
  };
  /**
   * A port left without additional chassis forgets which chassis activated it, as ovn-northd
   * drops the key from its options then: a later migration starts unactivated. Its binding
   * shows the key only while it has additional chassis, so the view is the same either way.
   */
  const forgetActivations = (delta: SbDelta, reported: Iterable<string> = []): SbDelta => {
    const rows = engine.data<PortsData>('ports').table.rows;
    const check = (name: string): void => {
      const c = owned.get(name);
      if (c?.additional_chassis_activated === undefined) return;
      const pb = rows.get(portSbUuid(name)) as unknown as sb.Port_Binding | undefined;
      if (pb === undefined || pb.requested_additional_chassis.length > 0) return;
      const rest: Record<string, unknown> = { ...c };
      delete rest['additional_chassis_activated'];
      owned.set(name, rest as ChassisOwnedColumns);
    };
    for (let i = 0; i < delta.changes.length; i++) {
      const c = delta.changes[i] as RowChange;
      if (c.table === 'Port_Binding' && c.kind !== 'delete') check(c.new.logical_port as string);
    }
    for (const name of reported) check(name);
    return delta;
  };
  return {
    apply: (nb, delta) => forgetActivations(forgetDeleted(run(nb, delta, started ? forgetVirtualTypeChanges(delta) : undefined, undefined, undefined))),
    setChassisOwned(nb, updates, chassisUpdates, hostnameUpdates): SbDelta {
      for (const [name, columns] of updates) {
        if (columns === undefined) owned.delete(name);
        else owned.set(name, columns);
      }
      const renamed = new Set<string>();
      for (const [name, uuid] of chassisUpdates ?? []) {
        if (chassis.get(name) === uuid) continue;
        if (uuid === undefined) chassis.delete(name);
        else chassis.set(name, uuid);
        renamed.add(name);
      }
      const rehosted = applyHostnameUpdates(byHostname, hostnameOf, hostnameUpdates ?? []);
      return forgetActivations(forgetDeleted(run(
        nb, undefined, updates.size > 0 ? new Set(updates.keys()) : undefined, undefined, renamed.size > 0 ? renamed : undefined, undefined,
        rehosted.size > 0 ? rehosted : undefined,
      )), updates.keys());
    },
    setServiceMonitorStatus(nb, updates): SbDelta {
      const rows = engine.data<SvcMonitorsData>('svc_monitors').table.rows;
      const touched = new Set<Uuid>();
      for (const [uuid, status] of updates) {
        if (!rows.has(uuid)) continue;
        touched.add(uuid);
        if (status === undefined) svcStatus.delete(uuid);
        else svcStatus.set(uuid, status);
      }
      return run(nb, undefined, undefined, touched.size === 0 ? undefined : touched, undefined);
    },
    setIgmpGroups(nb, updates): SbDelta {
      // The rows as they were, for the node to find the groups they were in.
      const change: SbIgmpChange = new Map([...updates.keys()].map((uuid) => [uuid, igmp.get(uuid)]));
      for (const [uuid, row] of updates) {
        if (row === undefined) igmp.delete(uuid);
        else igmp.set(uuid, row);
      }
      return run(nb, undefined, undefined, undefined, undefined, change.size > 0 ? change : undefined);
    },
    setVxlanMode(nb, vxlan): SbDelta {
      if (encaps.vxlan === vxlan) return run(nb, undefined, undefined, undefined, undefined);
      encaps.vxlan = vxlan;
      return run(nb, undefined, undefined, undefined, undefined, undefined, undefined, true);
    },
    vxlanMode: () => encaps.vxlan,
    recompute(nb, previous, reported): SbView {
      const fresh = buildEngine();
      if (previous !== undefined) seedKeys(fresh, previous);
      if (reported?.dropSampling !== undefined) seedDropSampling(fresh.data<DropSamplingData>('drop_sampling'), reported.dropSampling);
      const ownedData: SbOwnedData = reported?.chassisOwned ?? new Map();
      const statusData: SvcStatusData = reported?.serviceMonitorStatus ?? new Map();
      const chassisData: SbChassisData = reported?.chassis ?? new Map();
      const igmpData: SbIgmpData = reported?.igmpGroups ?? new Map();
      const hostnameData = new Map<string, readonly Uuid[]>();
      applyHostnameUpdates(hostnameData, new Map(), reported?.hostnames ?? []);
      fresh.run(new Map([
        ['nb', { data: nb, change: undefined }],
        ['sb_owned', { data: ownedData, change: undefined }],
        ['svc_status', { data: statusData, change: undefined }],
        ['sb_chassis', { data: chassisData, change: undefined }],
        ['sb_hostnames', { data: hostnameData satisfies SbHostnamesData, change: undefined }],
        ['sb_igmp', { data: igmpData, change: undefined }],
        ['sb_encaps', { data: { vxlan: reported?.vxlan ?? false } satisfies SbEncapsData, change: undefined }],
      ]));
      return viewOf(fresh);
    },
    chassisOwned: () => owned,
    serviceMonitorStatus: () => svcStatus,
    chassis: () => chassis,
    igmpGroups: () => igmp,
    hostnames: () => hostnameOf,
    dropSampling: () => dropSampling.inForce,
    // The nodes' tables live as long as the engine, so the view's map of them is made once.
    view: () => (view ??= viewOf(engine)),
    history: () => historyOf(engine, owned, svcStatus, chassis),
    stats: () => engine.stats(),
  };
}
