// The Logical_Flow node: flows are owned by a datapath ("d <uuid>"), a switch's hairpin
// ("h <uuid>"), a port ("p <name>"), an (ACL, switch) pair, a (switch, load balancer) pair or a
// load balancer's health checks (their ARP/ND responders, in the switches of the monitored
// ports); regenerating an owner replaces its flows. A flow's identity is its content without
// the datapath (stage, priority, match, actions) and the datapath's shard (flow.ts), as
// ovn-northd 23.03 shares rows (across all datapaths): every (owner, datapath) of a shard that
// produces the same content holds one row, which names its one datapath in logical_datapath
// or, when there are several, a Logical_DP_Group of them. The row's hints (stage-hint,
// in_out_port) come from the lowest holding, so the result does not depend on the order of
// changes.
//
// Groups are named by their members (a content hash), or, for flows held only through
// templates (below), by those templates; either way every replica and a recompute name them
// alike, and a group lives while a row refers to it. A run notes which datapaths joined or
// left each flow it touched and settles the rows once at its end (`finish`): the many flows
// that gain the same datapaths (every default flow of a new switch) share one computation of
// their new group.
//
// Memory: a flow with one holding is its own row, the object the owner produced (no copy),
// and the table is all that records it: it is written there as soon as it is held. Only a
// flow held several times (or whose row is a copy) has an entry, with a map of holdings and a
// count of them per datapath. A switch's own flows are its shard's shared templates, held in
// the switch's datapath (`heldIn`): a flow shared by the switches of a shard (nearly all of
// them) then costs no per-switch object at all, and one that is a row alone is copied then.
import assert from 'node:assert/strict';
import type * as sb from '../../ovsdb/rows/sb.js';
import type { Uuid } from '../../ovsdb/index.js';
import { lowerBound } from '../../ovsdb/atom.js';
import type { DatapathInfo, DatapathsChange, DatapathsData } from '../datapaths.js';
import type { EngineNode, NodeInputs } from '../engine.js';
import type { MulticastChange, MulticastData } from '../multicast.js';
import { floodRelay, floodStatic, hasUnknown, learnedGroups } from '../multicast.js';
import { relaying, snooping } from '../ip-multicast.js';
import type { McastFloodFlags } from './multicast.js';
import { routerMcastFlows, switchMcastFlows } from './multicast.js';
import type { PortInfo, PortsChange, PortsData } from '../ports.js';
import type { AclsChange, AclsData, SwitchAcls } from '../acls.js';
import type { DropActions, DropSamplingData } from '../drop-sampling.js';
import type { DnsChange, DnsData } from '../dns.js';
import type { RoutersChange, RoutersData } from '../routers.js';
import type { LbsChange, LbsData } from '../load-balancers.js';
import { hasLbVip } from '../load-balancers.js';
import { sameData } from '../same-data.js';
import { fitted } from '../fitted.js';
import { EMPTY_SET_SUM, hashUuid, hashUuid5, setSumWith, setVersion, type SetSum } from '../hash.js';
import { SbChangeSet, SbTable } from '../sb-changes.js';
import { NO_ACL_FLAGS, aclFlows } from './acl.js';
import { qosFlows } from './qos.js';
import { withCopp } from '../copp.js';
import { lbRouterFlows, lbSvcArpFlows, lbSwitchFlows, routerLbContext, sbLoadBalancer, sbLoadBalancerUuid } from './lb.js';
import { NO_FLOWS, templateLineages } from './flow.js';
import type { RoutePlan } from './router.js';
import { planRoutes, routerDatapathFlows, routerPortFlows } from './router.js';
import type { SwitchRouterPort } from './switch.js';
import { fwdGroupFlows, hairpinFlows, switchDatapathFlows, switchPortFlows } from './switch.js';

export interface LflowsData {
  /** Owner → its flows (one per (content, datapath)), in the order it produced them. */
  readonly owners: Map<string, readonly sb.Logical_Flow[]>;
  /**
   * Owner → the datapath (its logical_datapath value) its flows are held in, for owners whose
   * flows are templates naming another datapath (a switch's own flows). Other owners' flows
   * are held in their own logical_datapath.
   */
  readonly heldIn: Map<string, readonly Uuid[]>;
  /**
   * Flow UUID (its content) → who holds it and how the row shows it, for flows that need an
   * entry: one that is in the table but not here has exactly one holding, the row itself. A
   * flow with an entry is always in the table (it has a row from its first holding until
   * `finish` removes both), so a flow not in the table needs no look here.
   */
  readonly entries: Map<Uuid, FlowEntry>;
  /** Logical_DP_Group UUID → the group and the number of rows referring to it. */
  readonly groups: Map<Uuid, DpGroup>;
  /** Entries touched in the current run, settled by `finish`. */
  readonly dirty: Set<Uuid>;
  readonly table: SbTable;
  readonly groupTable: SbTable;
  /**
   * SB Load_Balancer rows, one per load balancer applied to a switch, naming the switches
   * through a Logical_DP_Group (the same groups the flows use: a group is named by its members).
   */
  readonly lbTable: SbTable;
  /** Load balancer → the group its row refers to. */
  readonly lbGroups: Map<Uuid, DpGroup>;
  /** lbOwner → how many chunk owners it has, when more than one (see regenLb). */
  readonly lbChunks: Map<string, number>;
  /** Router datapath → its static routes' plan, whose chunks are owners of their own (see regenDatapath). */
  readonly routePlans: Map<Uuid, RoutePlan>;
  /** Template id → a template held as a whole, with the datapaths holding it. */
  readonly templates: Map<Uuid, TemplateHold>;
  /** Flow UUID → the held templates that contain it, in id order. */
  readonly flowTemplates: Map<Uuid, TemplateHold[]>;
  /** Class key (its templates' ids) → the flows held through exactly those templates and no other way. */
  readonly classes: Map<string, FlowClass>;
  /** Flow UUID → its class, for flows held through templates only. */
  readonly classOf: Map<Uuid, FlowClass>;
  /** Templates whose datapaths changed in the current run. */
  readonly dirtyTemplates: Set<TemplateHold>;
  /** Classes to settle at the end of the current run. */
  readonly dirtyClasses: Set<FlowClass>;
  /** Flows whose templates (or whether they are also held directly) changed in the current run. */
  readonly classDirty: Set<Uuid>;
}

interface DpGroup {
  readonly row: sb.Logical_DP_Group;
  /** The sum of its members' words (`memberSum`), from which its name is made. */
  readonly sum: SetSum;
  /** The one-element logical_dp_group value that rows referring to it share. */
  readonly ref: readonly Uuid[];
  refs: number;
}

/**
 * One Logical_Flow row: how many holdings (owner, datapath) it has in each datapath, and the
 * versions they produced by hints (the same content otherwise), each with its number of
 * holdings. One datapath and one version are kept inline.
 */
class FlowEntry {
  dp1: Uuid | undefined = undefined;
  n1 = 0;
  dps: Map<Uuid, number> | undefined = undefined;
  v1: sb.Logical_Flow | undefined = undefined;
  c1 = 0;
  variants: Map<string, Variant> | undefined = undefined;
  /** The datapaths of the row as last settled: its one datapath or its group's members. */
  members: readonly Uuid[] = NO_UUIDS;
  group: DpGroup | undefined = undefined;
  /** Datapaths that joined or left in this run (net). */
  joined: Set<Uuid> | undefined = undefined;
  left: Set<Uuid> | undefined = undefined;
  /**
   * Holdings by owners holding the flow itself. The counts above also hold, for a flow that is
   * in templates as well (`materialize`), one per (held template, datapath holding it).
   */
  direct = 0;

  constructor(readonly uuid: Uuid) {}

  /** An entry for a flow held once so far, the row the table shows. */
  static of(row: sb.Logical_Flow): FlowEntry {
    const e = new FlowEntry(row._uuid);
    e.dp1 = dpOf(row);
    e.n1 = 1;
    e.v1 = row;
    e.c1 = 1;
    e.members = row.logical_datapath;
    e.direct = 1;
    return e;
  }
}

interface Variant {
  readonly flow: sb.Logical_Flow;
  count: number;
}

const NO_UUIDS: readonly Uuid[] = Object.freeze([]);
const NO_NAMES: readonly string[] = Object.freeze([]);

function dpOf(flow: sb.Logical_Flow): Uuid {
  return flow.logical_datapath[0] as Uuid;
}

function sameHints(a: sb.Logical_Flow, b: sb.Logical_Flow): boolean {
  return a.external_ids.get('stage-hint') === b.external_ids.get('stage-hint') && a.tags.get('in_out_port') === b.tags.get('in_out_port');
}

/** A version's hints as one sortable text: the row shows the lowest. */
function hintsKey(f: sb.Logical_Flow): string {
  return `${f.external_ids.get('stage-hint') ?? ''}\n${f.tags.get('in_out_port') ?? ''}`;
}

function noteJoin(e: FlowEntry, dp: Uuid): void {
  if (e.left?.delete(dp) === true) return;
  (e.joined ??= new Set()).add(dp);
}

function noteLeave(e: FlowEntry, dp: Uuid): void {
  if (e.joined?.delete(dp) === true) return;
  (e.left ??= new Set()).add(dp);
}

/** Counts one more holding in `dp`; true when the datapath joined the flow. */
function countDp(e: FlowEntry, dp: Uuid): boolean {
  if (e.dps === undefined) {
    if (e.n1 === 0) {
      e.dp1 = dp;
      e.n1 = 1;
    } else if (e.dp1 === dp) {
      e.n1++;
      return false;
    } else {
      e.dps = new Map([[e.dp1 as Uuid, e.n1], [dp, 1]]);
      e.dp1 = undefined;
      e.n1 = 0;
    }
  } else {
    const n = e.dps.get(dp) ?? 0;
    e.dps.set(dp, n + 1);
    if (n > 0) return false;
  }
  noteJoin(e, dp);
  return true;
}

/** Counts one holding fewer in `dp`; true when the datapath left the flow. */
function uncountDp(e: FlowEntry, dp: Uuid): boolean {
  if (e.dps === undefined) {
    if (e.dp1 !== dp || e.n1 === 0) assert.fail(`lflow ${e.uuid} released in ${dp}, where it has no holding`);
    if (--e.n1 > 0) return false;
    e.dp1 = undefined;
  } else {
    const n = e.dps.get(dp);
    if (n === undefined) assert.fail(`lflow ${e.uuid} released in ${dp}, where it has no holding`);
    if (n > 1) {
      e.dps.set(dp, n - 1);
      return false;
    }
    e.dps.delete(dp);
    if (e.dps.size === 1) {
      const [[d, m]] = e.dps as unknown as [[Uuid, number]];
      e.dp1 = d;
      e.n1 = m;
      e.dps = undefined;
    }
  }
  noteLeave(e, dp);
  return true;
}

/** Counts one more holding of `flow`'s hints; true when they are new to the flow. */
function countVariant(e: FlowEntry, flow: sb.Logical_Flow): boolean {
  if (e.variants === undefined) {
    if (e.c1 === 0) {
      e.v1 = flow;
      e.c1 = 1;
      return true;
    }
    if (sameHints(e.v1 as sb.Logical_Flow, flow)) {
      e.c1++;
      return false;
    }
    const first = e.v1 as sb.Logical_Flow;
    e.variants = new Map([[hintsKey(first), { flow: first, count: e.c1 }]]);
    e.v1 = undefined;
    e.c1 = 0;
  }
  const key = hintsKey(flow);
  const v = e.variants.get(key);
  if (v !== undefined) {
    v.count++;
    return false;
  }
  e.variants.set(key, { flow, count: 1 });
  return true;
}

/** Counts one holding fewer of `flow`'s hints; true when the last holding of them went. */
function uncountVariant(e: FlowEntry, flow: sb.Logical_Flow): boolean {
  if (e.variants === undefined) {
    if (e.c1 === 0 || !sameHints(e.v1 as sb.Logical_Flow, flow)) assert.fail(`lflow ${e.uuid} released with hints it is not held with`);
    if (--e.c1 > 0) return false;
    e.v1 = undefined;
    return true;
  }
  const key = hintsKey(flow);
  const v = e.variants.get(key);
  if (v === undefined) assert.fail(`lflow ${e.uuid} released with hints it is not held with`);
  if (--v.count > 0) return false;
  e.variants.delete(key);
  if (e.variants.size === 1) {
    const [[, only]] = e.variants as unknown as [[string, Variant]];
    e.v1 = only.flow;
    e.c1 = only.count;
    e.variants = undefined;
  }
  return true;
}

/** Holds `flow` in datapath `ld` (its own logical_datapath, or the one a template is held in). */
function hold(data: LflowsData, flow: sb.Logical_Flow, ld: readonly Uuid[], out: SbChangeSet): void {
  const uuid = flow._uuid;
  const dp = ld[0] as Uuid;
  let e = data.entries.get(uuid);
  if (e === undefined) {
    const via = data.flowTemplates.get(uuid);
    if (via !== undefined) {
      // Held through templates so far: from now on counted in an entry, theirs too.
      data.entries.set(uuid, (e = new FlowEntry(uuid)));
      for (const t of via) materialize(data, e, t);
      data.classDirty.add(uuid);
    } else {
      const row = data.table.rows.get(uuid) as sb.Logical_Flow | undefined;
      if (row === undefined) {
        // The common case, a flow nobody holds: it is its own row from now on (a template, a
        // copy in its datapath).
        const own = dpOf(flow) === dp ? flow : { ...flow, _version: '', logical_datapath: ld };
        if (own._version === '') (own as { _version: Uuid })._version = rowVersion(uuid, dp, own);
        data.table.insert(own, out);
        return;
      }
      // Its one holding is the row: from a second one on, its holdings are counted in an entry.
      data.entries.set(uuid, (e = FlowEntry.of(row)));
    }
  }
  e.direct++;
  const joined = countDp(e, dp);
  if (countVariant(e, flow) || joined) data.dirty.add(uuid);
}

/** Releases the holding of `flow` in datapath `dp`. */
function release(data: LflowsData, flow: sb.Logical_Flow, dp: Uuid, out: SbChangeSet): void {
  const uuid = flow._uuid;
  const e = data.entries.get(uuid);
  if (e === undefined) {
    const row = data.table.rows.get(uuid) as sb.Logical_Flow | undefined;
    if (row === undefined) assert.fail(`lflow ${uuid} released but held by nobody`);
    if (data.flowTemplates.has(uuid) || dpOf(row) !== dp || !sameHints(row, flow)) assert.fail(`lflow ${uuid} released in ${dp}, where it has no holding`);
    data.table.remove(uuid, out);
    return;
  }
  e.direct--;
  const left = uncountDp(e, dp);
  const gone = uncountVariant(e, flow);
  const via = data.flowTemplates.get(uuid);
  if (e.direct === 0 && via !== undefined) {
    demix(data, e, via, out);
    return;
  }
  if (gone || left) data.dirty.add(uuid);
}

/** A flow held through templates only again: its entry goes, and its class gives its row. */
function demix(data: LflowsData, e: FlowEntry, via: readonly TemplateHold[], out: SbChangeSet): void {
  unref(data, e.group, out);
  data.entries.delete(e.uuid);
  data.dirty.delete(e.uuid);
  for (const t of via) t.mixed.delete(e.uuid);
  data.classDirty.add(e.uuid);
}

// --- Templates held as a whole. ---
//
// A switch's own flows (and a load balancer's on a switch) are its shard's frozen templates,
// the same array for every switch of the shard with the same facts. Such an owner holds the
// template as one holding of its datapath: a new switch costs a count, not one per flow. A flow
// held through templates only belongs to the class of exactly those templates; the class's
// datapaths are the union of theirs, and from two datapaths on its flows name the class's own
// Logical_DP_Group, named by the templates rather than by the members. A switch joining then
// changes that one group row in place, not every flow row of its shard.
//
// A flow that is in a held template and also held by an owner of its own (the same content
// from a port, say) is "mixed": it has an entry that counts the templates' holdings as well
// (`materialize`), and its row comes from the entry as any other flow's, named by members.

class TemplateHold {
  /** Datapath → the owners holding this template there. */
  readonly dps = new Map<Uuid, number>();
  /** Its flows that also have an entry (mixed), whose counts follow this template's datapaths. */
  readonly mixed = new Set<Uuid>();
  /** The classes of which this template is one. */
  readonly classes = new Set<FlowClass>();
  private readonly byUuid: Map<Uuid, sb.Logical_Flow>;
  /** Datapaths that joined or left in this run (net). */
  joined: Set<Uuid> | undefined = undefined;
  left: Set<Uuid> | undefined = undefined;

  /** What its class's group is named by: its content id, or the lineage of templateLineages. */
  readonly lineage: string;

  constructor(
    readonly id: Uuid,
    readonly flows: readonly sb.Logical_Flow[],
  ) {
    this.byUuid = new Map(flows.map((f) => [f._uuid, f]));
    this.lineage = templateLineages.get(flows) ?? id;
  }

  /** This template's version of one of its flows. */
  version(uuid: Uuid): sb.Logical_Flow {
    return this.byUuid.get(uuid) as sb.Logical_Flow;
  }
}

/** The flows held through exactly one set of templates (and no other way). */
class FlowClass {
  readonly flows = new Set<Uuid>();
  /** The union of its templates' datapaths as last settled, sorted and frozen. */
  members: readonly Uuid[] = NO_UUIDS;
  sum: SetSum = EMPTY_SET_SUM;
  /** Its members have not been computed yet (a class made in this run). */
  fresh = true;
  /** One of its templates is no longer held: its flows move to other classes. */
  dead = false;
  /** Whether its Logical_DP_Group row is in the table. */
  shown = false;
  readonly uuid: Uuid;
  readonly ref: readonly Uuid[];

  constructor(
    readonly key: string,
    readonly templates: readonly TemplateHold[],
  ) {
    // Named by its templates' lineages (their ids unless replaced in place; see templateLineages),
    // sorted: the templates are in id order, and a template replaced in place by one of another
    // id may move in it, where the name must stay.
    this.uuid = hashUuid(['Logical_DP_Group', 'templates', ...templates.map((t) => t.lineage).sort()]);
    this.ref = Object.freeze([this.uuid]);
  }
}

/**
 * Template arrays → their name: their flows' UUIDs and hints, in order, and their lineage if
 * they have one. Two templates of equal content and other lineages (a load balancer's VIP alone
 * in chunk 0 of 2, then in chunk 4 of 8 once VIPs were added) are two templates, so the class
 * the later one makes is named by its own lineage, as a full run names it.
 */
const templateIds = new WeakMap<readonly sb.Logical_Flow[], Uuid>();

function templateId(flows: readonly sb.Logical_Flow[]): Uuid {
  let id = templateIds.get(flows);
  if (id === undefined) {
    const lineage = templateLineages.get(flows);
    const parts = lineage === undefined ? ['lflow template'] : ['lflow template', lineage];
    for (const f of flows) parts.push(f._uuid, hintsKey(f));
    id = hashUuid(parts);
    templateIds.set(flows, id);
  }
  return id;
}

/** Whether an owner's flows, held in `ld`, are held as a whole: a frozen template. */
function isTemplate(flows: readonly sb.Logical_Flow[], ld: readonly Uuid[] | undefined): ld is readonly Uuid[] {
  return ld !== undefined && flows.length > 0 && Object.isFrozen(flows);
}

/** Counts template `t`'s holdings in an entry's counts (a mixed flow). */
function materialize(data: LflowsData, e: FlowEntry, t: TemplateHold): void {
  for (const dp of t.dps.keys()) countDp(e, dp);
  countVariant(e, t.version(e.uuid));
  t.mixed.add(e.uuid);
  data.dirty.add(e.uuid);
}

function insertById(list: TemplateHold[], t: TemplateHold): void {
  let i = list.length;
  while (i > 0 && (list[i - 1] as TemplateHold).id > t.id) i--;
  list.splice(i, 0, t);
}

/** A template comes to be held (in no datapath yet): its flows gain it. */
function registerTemplate(data: LflowsData, t: TemplateHold, out: SbChangeSet): void {
  data.templates.set(t.id, t);
  for (const f of t.flows) {
    const uuid = f._uuid;
    let via = data.flowTemplates.get(uuid);
    let e = data.entries.get(uuid);
    if (via === undefined) {
      data.flowTemplates.set(uuid, (via = [t]));
      // Held directly until now (its own row, or an entry): mixed from now on.
      const row = e === undefined ? (data.table.rows.get(uuid) as sb.Logical_Flow | undefined) : undefined;
      if (row !== undefined) data.entries.set(uuid, (e = FlowEntry.of(row)));
    } else insertById(via, t);
    if (e !== undefined && e.direct === 0) {
      // Its last holding of its own went earlier in this run (its entry awaits the settle):
      // held through templates only now.
      demix(data, e, via, out);
      e = undefined;
    }
    if (e !== undefined) materialize(data, e, t);
    data.classDirty.add(uuid);
  }
}

/** A template is no longer held anywhere: its flows lose it, and its classes end. */
function unregisterTemplate(data: LflowsData, t: TemplateHold, out: SbChangeSet): void {
  data.templates.delete(t.id);
  for (const c of t.classes) {
    c.dead = true;
    data.classes.delete(c.key);
    data.dirtyClasses.add(c);
    for (const other of c.templates) if (other !== t) other.classes.delete(c);
  }
  t.classes.clear();
  for (const f of t.flows) {
    const uuid = f._uuid;
    const via = data.flowTemplates.get(uuid) as TemplateHold[];
    via.splice(via.indexOf(t), 1);
    if (t.mixed.delete(uuid) && uncountVariant(data.entries.get(uuid) as FlowEntry, f)) data.dirty.add(uuid);
    if (via.length === 0) {
      data.flowTemplates.delete(uuid);
      // Held by nobody now: gone at once, so that a holding later in the run starts afresh.
      if (!data.entries.has(uuid)) data.table.remove(uuid, out);
    }
    data.classDirty.add(uuid);
  }
}

/** Holds template `flows` in datapath `dp`. */
function templateHold(data: LflowsData, flows: readonly sb.Logical_Flow[], dp: Uuid, out: SbChangeSet): void {
  const id = templateId(flows);
  let t = data.templates.get(id);
  if (t === undefined) registerTemplate(data, (t = new TemplateHold(id, flows)), out);
  const n = t.dps.get(dp) ?? 0;
  t.dps.set(dp, n + 1);
  if (n > 0) return;
  if (t.left?.delete(dp) !== true) (t.joined ??= new Set()).add(dp);
  data.dirtyTemplates.add(t);
  for (const uuid of t.mixed) if (countDp(data.entries.get(uuid) as FlowEntry, dp)) data.dirty.add(uuid);
}

/** Releases the holding of template `flows` in datapath `dp`. */
function templateRelease(data: LflowsData, flows: readonly sb.Logical_Flow[], dp: Uuid, out: SbChangeSet): void {
  const t = data.templates.get(templateId(flows));
  const n = t?.dps.get(dp);
  if (t === undefined || n === undefined) assert.fail(`lflow template released in ${dp}, where it has no holding`);
  if (n > 1) {
    t.dps.set(dp, n - 1);
    return;
  }
  t.dps.delete(dp);
  if (t.joined?.delete(dp) !== true) (t.left ??= new Set()).add(dp);
  data.dirtyTemplates.add(t);
  for (const uuid of t.mixed) if (uncountDp(data.entries.get(uuid) as FlowEntry, dp)) data.dirty.add(uuid);
  if (t.dps.size === 0) unregisterTemplate(data, t, out);
}

function sortedHas(sorted: readonly Uuid[], x: Uuid): boolean {
  return sorted[lowerBound(sorted, x)] === x;
}

/**
 * Settles the templates' side of a run: moves flows between classes, brings each touched
 * class's members and group row up to date, and returns the flows whose class row to write.
 */
function settleClasses(data: LflowsData, out: SbChangeSet): Set<Uuid> {
  const rows = new Set<Uuid>();
  for (const t of data.dirtyTemplates) for (const c of t.classes) data.dirtyClasses.add(c);
  for (const uuid of data.classDirty) {
    const via = data.entries.has(uuid) ? undefined : data.flowTemplates.get(uuid);
    const key = via?.map((t) => t.id).join(',');
    const old = data.classOf.get(uuid);
    if (old !== undefined && !old.dead && old.key === key) {
      rows.add(uuid);
      continue;
    }
    if (old !== undefined) {
      old.flows.delete(uuid);
      data.classOf.delete(uuid);
      data.dirtyClasses.add(old);
    }
    if (via === undefined || key === undefined) continue;
    let c = data.classes.get(key);
    if (c === undefined) {
      c = new FlowClass(key, [...via]);
      data.classes.set(key, c);
      for (const t of via) t.classes.add(c);
    }
    c.flows.add(uuid);
    data.classOf.set(uuid, c);
    data.dirtyClasses.add(c);
    rows.add(uuid);
  }
  for (const c of data.dirtyClasses) {
    if (c.dead || c.flows.size === 0) {
      if (c.shown) data.groupTable.remove(c.uuid, out);
      c.shown = false;
      if (!c.dead) {
        c.dead = true;
        data.classes.delete(c.key);
        for (const t of c.templates) t.classes.delete(c);
      }
      continue;
    }
    const before = c.members;
    if (c.fresh) {
      const all = new Set<Uuid>();
      for (const t of c.templates) for (const dp of t.dps.keys()) all.add(dp);
      const members = [...all].sort();
      c.members = members;
      c.sum = setSumWith(EMPTY_SET_SUM, members, 1);
      c.fresh = false;
    } else {
      const joined = new Set<Uuid>();
      const left = new Set<Uuid>();
      for (const t of c.templates) {
        for (const changed of [t.joined, t.left]) {
          for (const dp of changed ?? []) {
            const now = c.templates.some((u) => u.dps.has(dp));
            if (now !== sortedHas(before, dp)) (now ? joined : left).add(dp);
          }
        }
      }
      if (joined.size > 0 || left.size > 0) {
        c.members = newMembers(before, joined, left);
        c.sum = setSumWith(setSumWith(c.sum, joined, 1), left, -1);
      }
    }
    const members = c.members;
    // Its flows' rows name its one datapath or its group: rewritten when that changes.
    if ((before.length >= 2) !== (members.length >= 2) || (members.length === 1 && before[0] !== members[0])) for (const uuid of c.flows) rows.add(uuid);
    const show = members.length >= 2;
    if (show && (members !== before || !c.shown)) {
      const row: sb.Logical_DP_Group = { _uuid: c.uuid, _version: setVersion('Logical_DP_Group', c.uuid, members.length, c.sum), datapaths: members };
      data.groupTable.put(row, out);
    } else if (!show && c.shown) data.groupTable.remove(c.uuid, out);
    c.shown = show;
  }
  for (const t of data.dirtyTemplates) {
    t.joined = undefined;
    t.left = undefined;
  }
  data.dirtyTemplates.clear();
  data.dirtyClasses.clear();
  data.classDirty.clear();
  return rows;
}

/** Writes the row of a flow held through templates only: its class's datapath or group. */
function writeClassRow(data: LflowsData, uuid: Uuid, c: FlowClass, out: SbChangeSet): void {
  let rep = (c.templates[0] as TemplateHold).version(uuid);
  for (let i = 1; i < c.templates.length; i++) {
    const v = (c.templates[i] as TemplateHold).version(uuid);
    if (hintsKey(v) < hintsKey(rep)) rep = v;
  }
  const row: sb.Logical_Flow =
    c.members.length >= 2
      ? { ...rep, _version: rowVersion(uuid, c.uuid, rep), logical_datapath: NO_UUIDS, logical_dp_group: c.ref }
      : { ...rep, _version: rowVersion(uuid, c.members[0] as Uuid, rep), logical_datapath: c.members };
  data.table.put(row, out);
}

/** The version the row shows: the one with the lowest hints. */
function representative(e: FlowEntry): sb.Logical_Flow | undefined {
  if (e.variants === undefined) return e.v1;
  let best: string | undefined;
  let flow: sb.Logical_Flow | undefined;
  for (const [k, v] of e.variants) {
    if (best === undefined || k < best) {
      best = k;
      flow = v.flow;
    }
  }
  return flow;
}

/**
 * Up to this many members, newMembers fills an array made at its final length (V8 gives
 * `new Array(n)` fast elements up to 100,000); a longer list grows as it is filled.
 */
const PREALLOCATED_MEMBERS_MAX = 65_536;

/** `set`'s members sorted, or none. */
function sortedMembers(set: ReadonlySet<Uuid> | undefined): readonly Uuid[] {
  return set === undefined || set.size === 0 ? NO_UUIDS : set.size === 1 ? [...set] : [...set].sort();
}

/**
 * The members after this run's joins and leaves (`joined` holds no member, `left` only
 * members): one merge of the sorted lists into one array of the final length. Copying a class
 * with Array.from and splicing the joins in allocated it twice (the splice grows a full copy by
 * half again); when datapaths were split into 16 shards by UUID, a run of 32 switch inserts
 * changed about 14 classes of 1/16 of the switches each, and that was half of all the bytes
 * such a run allocated.
 */
export function newMembers(old: readonly Uuid[], joined: ReadonlySet<Uuid> | undefined, left: ReadonlySet<Uuid> | undefined): Uuid[] {
  const add = sortedMembers(joined);
  const drop = sortedMembers(left);
  const n = old.length + add.length - drop.length;
  const out: Uuid[] = n <= PREALLOCATED_MEMBERS_MAX ? new Array<Uuid>(n) : [];
  // Each join and leave is placed by binary search; the members between them are copied as
  // they are, without comparing them (a comparison reads the string).
  let k = 0;
  let from = 0;
  let j = 0;
  let d = 0;
  while (j < add.length || d < drop.length) {
    const takeAdd = d >= drop.length || (j < add.length && (add[j] as Uuid) < (drop[d] as Uuid));
    const x = (takeAdd ? add[j] : drop[d]) as Uuid;
    const at = Math.max(from, lowerBound(old, x));
    for (let i = from; i < at; i++) out[k++] = old[i] as Uuid;
    from = at;
    if (takeAdd) {
      j++;
      out[k++] = x;
      if (old[from] === x) from++; // a join that was a member already (callers never do that)
    } else {
      d++;
      if (old[from] === x) from++; // else a leave that was not a member (callers never do that)
    }
  }
  for (let i = from; i < old.length; i++) out[k++] = old[i] as Uuid;
  // Only where a join or a leave broke the callers' rule: the list as the set operations make it.
  if (k !== out.length) out.length = k;
  return out;
}

/**
 * The group of exactly `members` (sorted, at least two, summing to `sum`), made when first
 * needed; a new group keeps `members` itself (the caller's fresh array).
 */
function groupOf(data: LflowsData, members: Uuid[], sum: SetSum, out: SbChangeSet): DpGroup {
  const uuid = hashUuid(['Logical_DP_Group', String(members.length), ...sum.map(String)]);
  let g = data.groups.get(uuid);
  if (g === undefined) {
    const row: sb.Logical_DP_Group = { _uuid: uuid, _version: uuid, datapaths: members };
    g = { row, sum, ref: Object.freeze([uuid]), refs: 0 };
    data.groups.set(uuid, g);
    data.groupTable.insert(row, out);
  }
  return g;
}

function unref(data: LflowsData, g: DpGroup | undefined, out: SbChangeSet): void {
  if (g === undefined || --g.refs > 0) return;
  data.groups.delete(g.row._uuid);
  data.groupTable.remove(g.row._uuid, out);
}

function rowVersion(uuid: Uuid, where: string, rep: sb.Logical_Flow): Uuid {
  return hashUuid5('Logical_Flow', uuid, where, rep.external_ids.get('stage-hint') ?? '', rep.tags.get('in_out_port') ?? '');
}

/**
 * Settles every entry the run touched: its members, its group and its row. Entries whose
 * datapaths changed alike (the same old members, the same joins and leaves) share one
 * computation of the new members and group.
 */
function settle(data: LflowsData, out: SbChangeSet): void {
  const classRows = data.classDirty.size > 0 || data.dirtyTemplates.size > 0 || data.dirtyClasses.size > 0 ? settleClasses(data, out) : undefined;
  if (data.dirty.size > 0) settleEntries(data, out);
  for (const uuid of classRows ?? []) {
    const c = data.classOf.get(uuid);
    if (c !== undefined && !data.entries.has(uuid)) writeClassRow(data, uuid, c, out);
  }
}

function settleEntries(data: LflowsData, out: SbChangeSet): void {
  const memo = new Map<string, { members: readonly Uuid[]; group: DpGroup | undefined }>();
  // The order does not matter: what a row becomes depends on its own holdings only. A row
  // written when its flow was first held (the table changes as flows come and go) is replaced
  // here, and a change set keeps a row's first old and last new value.
  for (const uuid of data.dirty) {
    const e = data.entries.get(uuid);
    if (e === undefined) continue;
    if ((e.joined?.size ?? 0) > 0 || (e.left?.size ?? 0) > 0) {
      const signature = `${e.group?.row._uuid ?? e.members.join(',')}|${e.joined === undefined ? '' : [...e.joined].sort().join(',')}|${e.left === undefined ? '' : [...e.left].sort().join(',')}`;
      let next = memo.get(signature);
      if (next === undefined) {
        const members = newMembers(e.members, e.joined, e.left);
        let group: DpGroup | undefined;
        if (members.length >= 2) {
          const base = e.group?.sum ?? setSumWith(EMPTY_SET_SUM, e.members, 1);
          group = groupOf(data, members, setSumWith(setSumWith(base, e.joined ?? [], 1), e.left ?? [], -1), out);
        }
        next = { members: members.length === 1 ? Object.freeze(members) : members, group };
        if (next.group !== undefined) next = { members: next.group.row.datapaths, group: next.group };
        memo.set(signature, next);
      }
      if (next.group !== undefined) next.group.refs++;
      unref(data, e.group, out);
      e.members = next.members;
      e.group = next.group;
      e.joined = undefined;
      e.left = undefined;
    }
    const rep = representative(e);
    if (rep === undefined) {
      data.table.remove(e.uuid, out);
      data.entries.delete(e.uuid);
      continue;
    }
    let row: sb.Logical_Flow;
    if (e.group === undefined) {
      // One datapath: the row is a version an owner produced (versioned on first showing),
      // unless the version kept for these hints came from a datapath that has since left.
      const dp = e.members[0] as Uuid;
      row = dpOf(rep) === dp ? rep : { ...rep, _version: '', logical_datapath: e.members };
      if (row._version === '') (row as { _version: Uuid })._version = rowVersion(e.uuid, dp, row);
    } else {
      row = { ...rep, _version: rowVersion(e.uuid, e.group.row._uuid, rep), logical_datapath: NO_UUIDS, logical_dp_group: e.group.ref };
    }
    data.table.put(row, out);
    // Held once again, and the row is that holding: the table alone records it.
    if (row === e.v1 && e.c1 === 1 && e.n1 === 1 && !data.flowTemplates.has(uuid)) data.entries.delete(uuid);
  }
  data.dirty.clear();
}

/** The datapath an owner's flow is held in: the owner's `heldIn`, else the flow's own. */
function heldDp(f: sb.Logical_Flow, ld: readonly Uuid[] | undefined): Uuid {
  return ld === undefined ? dpOf(f) : (ld[0] as Uuid);
}

/**
 * The same flows, by UUID, holding datapath and hints, in the same order (`a` held in `aLd`,
 * `b` in `bLd`): regenerating changed nothing.
 */
function sameFlows(a: readonly sb.Logical_Flow[], aLd: readonly Uuid[] | undefined, b: readonly sb.Logical_Flow[], bLd: readonly Uuid[] | undefined): boolean {
  if (a.length !== b.length) return false;
  if (a === b && aLd?.[0] === bLd?.[0]) return true;
  // Templates of other lineages name their classes' groups otherwise (templateLineages).
  if (templateLineages.get(a) !== templateLineages.get(b)) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as sb.Logical_Flow;
    const y = b[i] as sb.Logical_Flow;
    if (x._uuid !== y._uuid || heldDp(x, aLd) !== heldDp(y, bLd) || !sameHints(x, y)) return false;
  }
  return true;
}

/** Frozen templates whose flows' UUIDs are distinct. */
const distinctTemplates = new WeakSet<readonly sb.Logical_Flow[]>();

/** Up to this many flows, an owner's flows are compared pairwise rather than through a map. */
const PAIRWISE_FLOWS_MAX = 8;

function flowKey(f: sb.Logical_Flow, ld: readonly Uuid[] | undefined): string {
  return `${f._uuid} ${heldDp(f, ld)}`;
}

/**
 * `produced` without repeated (content, datapath) pairs: an owner may produce a flow twice
 * (an address listed twice, two NAT rules with one logical IP); its first copy counts, as
 * ovn-northd keeps the first flow added and its hint.
 */
function distinctFlows(produced: readonly sb.Logical_Flow[], ld: readonly Uuid[] | undefined): readonly sb.Logical_Flow[] {
  // A template held in one datapath is distinct when its UUIDs are: known once per template.
  const template = ld !== undefined && Object.isFrozen(produced);
  if (template && distinctTemplates.has(produced)) return produced;
  if (produced.length <= PAIRWISE_FLOWS_MAX) {
    let repeated = false;
    for (let i = 1; i < produced.length && !repeated; i++) {
      const b = produced[i] as sb.Logical_Flow;
      for (let j = 0; j < i; j++) {
        const a = produced[j] as sb.Logical_Flow;
        if (a._uuid === b._uuid && heldDp(a, ld) === heldDp(b, ld)) repeated = true;
      }
    }
    if (!repeated) return produced;
  }
  // Distinct UUIDs (the usual case) are distinct flows: that needs no composite keys.
  const uuids = new Set<Uuid>();
  for (const f of produced) uuids.add(f._uuid);
  if (uuids.size === produced.length) {
    if (template) distinctTemplates.add(produced);
    return produced;
  }
  const byKey = new Map<string, sb.Logical_Flow>();
  for (const f of produced) if (!byKey.has(flowKey(f, ld))) byKey.set(flowKey(f, ld), f);
  return byKey.size === produced.length ? produced : [...byKey.values()];
}

/**
 * Makes `produced` the flows of `owner`, held in `ld` when given (templates naming another
 * datapath), else each in its own logical_datapath.
 */
function setOwner(data: LflowsData, owner: string, produced: readonly sb.Logical_Flow[], out: SbChangeSet, ld?: readonly Uuid[]): void {
  let flows = distinctFlows(produced, ld);
  const stored = data.owners.get(owner);
  const old = stored ?? NO_FLOWS;
  // Only an owner with flows has a holding datapath: a new or empty owner (a new switch's, or
  // its hairpin owner with no flows) is not looked up again in a map of every owner.
  const oldLd = stored === undefined ? undefined : data.heldIn.get(owner);
  if (sameFlows(old, oldLd, flows, ld)) return;
  if (isTemplate(old, oldLd) || isTemplate(flows, ld)) {
    // A template is held and released as a whole: everything old goes, everything new comes.
    if (isTemplate(old, oldLd)) templateRelease(data, old, oldLd[0] as Uuid, out);
    else for (const f of old) release(data, f, heldDp(f, oldLd), out);
    if (isTemplate(flows, ld)) templateHold(data, flows, ld[0] as Uuid, out);
    else for (const f of flows) hold(data, f, ld ?? f.logical_datapath, out);
  } else if (old.length === 0) {
    for (const f of flows) hold(data, f, ld ?? f.logical_datapath, out);
  } else {
    // What went (or changed hints) is released, what came (or changed hints) is held; a flow
    // that stays as it was is left alone. Flows are matched by (UUID, holding datapath).
    const oldByKey = old.length > PAIRWISE_FLOWS_MAX ? new Map(old.map((f) => [flowKey(f, oldLd), f])) : undefined;
    const newByKey = flows.length > PAIRWISE_FLOWS_MAX ? new Map(flows.map((f) => [flowKey(f, ld), f])) : undefined;
    const inNew = (f: sb.Logical_Flow): sb.Logical_Flow | undefined =>
      newByKey !== undefined ? newByKey.get(flowKey(f, oldLd)) : flows.find((g) => g._uuid === f._uuid && heldDp(g, ld) === heldDp(f, oldLd));
    const inOld = (f: sb.Logical_Flow): sb.Logical_Flow | undefined =>
      oldByKey !== undefined ? oldByKey.get(flowKey(f, ld)) : old.find((g) => g._uuid === f._uuid && heldDp(g, oldLd) === heldDp(f, ld));
    for (const f of old) {
      const g = inNew(f);
      if (g === undefined || !sameHints(f, g)) release(data, f, heldDp(f, oldLd), out);
    }
    // The owner keeps its old object of a flow that stays: the row may be that object.
    const stored: sb.Logical_Flow[] = [];
    for (const f of flows) {
      const g = inOld(f);
      if (g === undefined || !sameHints(f, g)) {
        hold(data, f, ld ?? f.logical_datapath, out);
        stored.push(f);
      } else stored.push(g);
    }
    flows = stored;
  }
  // Kept at their exact length: the owner's list was grown by push (room for 16 from its first
  // flow), and ten thousand ports keep one each. A frozen list is a shared template: kept as is.
  if (flows.length > 0) data.owners.set(owner, Object.isFrozen(flows) ? flows : fitted(flows));
  else if (stored !== undefined) data.owners.delete(owner);
  if (flows.length > 0 && ld !== undefined) {
    if (ld !== oldLd) data.heldIn.set(owner, ld);
  } else if (oldLd !== undefined) data.heldIn.delete(owner);
}

/**
 * The node's change in one run: the flow rows written, and the owners already regenerated.
 * Every input is final when the node runs, so an owner that two handlers of the run both
 * reach (a new switch: its datapath, its multicast group, its ACL state) is built once.
 */
export class FlowChanges extends SbChangeSet {
  readonly regenerated = new Set<string>();
  private regeneratingAll = false;

  /**
   * The caller regenerates every owner once from now on (a recompute): claims are granted
   * without being noted, as each owner is reached once (an owner a handler of the run already
   * built is built again, unchanged). Noting them was a hashed insert per owner of a full run.
   */
  regenerateAll(): void {
    this.regeneratingAll = true;
  }

  /** Whether `owner` still has to be regenerated in this run (and notes that it will be). */
  claim(owner: string): boolean {
    if (this.regeneratingAll) return true;
    // One lookup: the set grows exactly when the owner is new to it.
    const before = this.regenerated.size;
    return this.regenerated.add(owner).size !== before;
  }
}

function datapathOwner(sbUuid: Uuid): string {
  return `d ${sbUuid}`;
}

/** The owner of chunk `i` of a router's static route flows (RoutePlan.chunks). */
function routeChunkOwner(sbUuid: Uuid, i: number): string {
  return `r ${sbUuid} ${i}`;
}

/** The owner of a switch's load balancer hairpin flows. */
function hairpinOwner(sbUuid: Uuid): string {
  return `h ${sbUuid}`;
}

/** A datapath's IP multicast flows (lflows/multicast.ts). */
function mcastOwner(sbUuid: Uuid): string {
  return `m ${sbUuid}`;
}

/** A switch's forwarding group flows (fwdGroupFlows). */
function fwdOwner(sbUuid: Uuid): string {
  return `f ${sbUuid}`;
}

function portOwner(name: string): string {
  return `p ${name}`;
}

/** What regenerating an owner reads: the inputs' current data. */
interface Sources {
  readonly dps: DatapathsData;
  readonly ports: PortsData;
  readonly mc: MulticastData;
  readonly routers: RoutersData;
  readonly acls: AclsData;
  readonly lbs: LbsData;
  readonly dns: DnsData;
  /** The drop action texts in force (drop-sampling.ts). */
  readonly drops: DropActions;
  /**
   * Each switch's router ports as `routerPortsOf` found them: the inputs do not change while
   * the node runs, and every port of a switch reads them.
   */
  readonly routerPorts: Map<Uuid, readonly SwitchRouterPort[]>;
  /** Each switch's localnet ports as `localnetPortsOf` found them. */
  readonly localnetPorts: Map<Uuid, readonly string[]>;
}

function sourcesOf(inputs: NodeInputs): Sources {
  return {
    routerPorts: new Map(),
    localnetPorts: new Map(),
    dps: inputs.data<DatapathsData>('datapaths'),
    ports: inputs.data<PortsData>('ports'),
    mc: inputs.data<MulticastData>('multicast'),
    routers: inputs.data<RoutersData>('routers'),
    acls: inputs.data<AclsData>('acls'),
    lbs: inputs.data<LbsData>('lbs'),
    dns: inputs.data<DnsData>('dns'),
    drops: inputs.data<DropSamplingData>('drop_sampling').actions,
  };
}

/** The owner of one ACL's flows on one switch. */
function aclOwner(dp: Uuid, acl: Uuid): string {
  return `a ${dp} ${acl}`;
}

/** The owner of a switch's QoS rule flows. */
function qosOwner(dp: Uuid): string {
  return `q ${dp}`;
}

/** The owner of one load balancer's flows on one datapath (of its first chunk of VIPs). */
function lbOwner(dp: Uuid, lb: Uuid): string {
  return `b ${dp} ${lb}`;
}

/** The owner of chunk `i` of a load balancer's VIPs, of which `owner` is lbOwner's. */
function lbChunkOwner(owner: string, i: number): string {
  return i === 0 ? owner : `${owner} ${i}`;
}

/** The owner of one load balancer's health check ARP/ND responders. */
function svcArpOwner(lb: Uuid): string {
  return `s ${lb}`;
}

/** Whether an owner (its datapath, port, ACL or load balancer pair) still exists in the inputs. */
function ownerExists(owner: string, src: Sources): boolean {
  const id = owner.slice(2);
  if (owner.startsWith('s ')) return src.lbs.lbs.has(id);
  if (owner.startsWith('b ')) {
    const [dp, lb] = id.split(' ') as [Uuid, Uuid];
    return src.lbs.byDp.get(dp)?.counts.has(lb) === true;
  }
  if (owner.startsWith('a ')) {
    const [dp, acl] = id.split(' ') as [Uuid, Uuid];
    return src.acls.bySwitch.get(dp)?.acls.has(acl) === true;
  }
  if (owner.startsWith('r ')) return src.routers.bySb.has(id.slice(0, id.indexOf(' ')));
  if (owner.startsWith('q ')) return (src.acls.bySwitch.get(id)?.qos.length ?? 0) > 0;
  return owner.startsWith('d ') || owner.startsWith('h ') || owner.startsWith('m ') || owner.startsWith('f ') ? src.dps.bySb.has(id) : src.ports.byName.has(id);
}

function mcastFlags(src: Sources, sbUuid: Uuid): McastFloodFlags {
  return { floodStatic: floodStatic(src.mc, sbUuid), floodRelay: floodRelay(src.mc, sbUuid) };
}

/** A switch's ports of type remote (ovn-ic's), by name. */
function remotePortsOf(src: Sources, sbUuid: Uuid): string[] {
  const out: string[] = [];
  for (const name of src.ports.byDp.get(sbUuid) ?? []) if (src.ports.byName.get(name)?.type === 'remote') out.push(name);
  return out.sort();
}

/**
 * Regenerates a datapath's owners. `fresh`: the datapath did not exist when the run began, so
 * its owners hold no flows (a datapath that goes has its owners emptied in the run it goes,
 * and one that goes and comes back in a run is not fresh): an owner it gives no flows is
 * passed over, not looked up in the map of every owner. A new switch's hairpin, multicast and
 * forwarding group owners were three such look-ups, a name built and hashed for each.
 */
function regenDatapath(data: LflowsData, src: Sources, sbUuid: Uuid, out: FlowChanges, fresh = false): void {
  const owner = datapathOwner(sbUuid);
  if (!out.claim(owner)) return;
  const info = src.dps.bySb.get(sbUuid);
  let flows: readonly sb.Logical_Flow[] = NO_FLOWS;
  if (info !== undefined && info.kind === 'switch') {
    const acl = src.acls.bySwitch.get(sbUuid) ?? NO_ACL_FLAGS;
    const globals = src.acls.globals;
    const flags = { hasAcls: acl.hasAcls, hasStateful: acl.hasStateful, hasLbVip: hasLbVip(src.lbs, sbUuid), defaultDrop: globals.defaultDrop, ctInvMatch: globals.ctInvMatch };
    // Its shard's templates, held in its own datapath; its hairpin flows are its own.
    flows = switchDatapathFlows(info, hasUnknown(src.mc, sbUuid), flags, src.dns.withRecords.has(sbUuid), src.drops);
    setOwner(data, owner, metered(src, flows, info.logicalDatapath), out, info.logicalDatapath);
    const hairpin = flags.hasLbVip ? hairpinFlows(info) : NO_FLOWS;
    if (!fresh || hairpin.length > 0) setOwner(data, hairpinOwner(sbUuid), hairpin, out);
    const groups = learnedGroups(src.mc, sbUuid);
    const mcast = snooping(info.mcast) || groups !== undefined ? switchMcastFlows(info, mcastFlags(src, sbUuid), remotePortsOf(src, sbUuid), src.drops, groups) : NO_FLOWS;
    if (!fresh || mcast.length > 0) setOwner(data, mcastOwner(sbUuid), metered(src, mcast), out);
    const fwd = fwdGroupFlows(info);
    if (!fresh || fwd.length > 0) setOwner(data, fwdOwner(sbUuid), fwd, out);
    return;
  }
  if (!fresh) {
    setOwner(data, hairpinOwner(sbUuid), NO_FLOWS, out);
    setOwner(data, fwdOwner(sbUuid), NO_FLOWS, out);
  }
  const facts = info === undefined ? undefined : src.routers.bySb.get(sbUuid);
  const previous = data.routePlans.get(sbUuid);
  const plan = facts === undefined ? undefined : planRoutes(facts, src.drops, previous);
  if (facts !== undefined) flows = routerDatapathFlows(facts, src.drops, plan);
  setOwner(data, owner, metered(src, flows), out);
  const mcast = facts === undefined || info === undefined ? NO_FLOWS : routerMcastFlows(facts, relaying(info.mcast), mcastFlags(src, sbUuid), src.drops, learnedGroups(src.mc, sbUuid));
  if (!fresh || mcast.length > 0) setOwner(data, mcastOwner(sbUuid), mcast, out);
  // Its static routes' chunks: a chunk whose routes are as they were is the same flows array.
  const chunks = plan?.chunks ?? [];
  chunks.forEach((chunk, i) => {
    if (chunk !== previous?.chunks[i]) setOwner(data, routeChunkOwner(sbUuid, i), chunk.flows, out);
  });
  for (let i = chunks.length; i < (previous?.chunks.length ?? 0); i++) setOwner(data, routeChunkOwner(sbUuid, i), NO_FLOWS, out);
  if (plan !== undefined && chunks.length > 0) data.routePlans.set(sbUuid, plan);
  else data.routePlans.delete(sbUuid);
}

/** The router ports of a switch, with their peers, in name order. */
function routerPortsOf(src: Sources, dp: Uuid): readonly SwitchRouterPort[] {
  const known = src.routerPorts.get(dp);
  if (known !== undefined) return known;
  const out: SwitchRouterPort[] = [];
  for (const name of [...(src.ports.routersByDp.get(dp) ?? [])].sort()) {
    const p = src.ports.byName.get(name);
    const peer = p?.routerPeer;
    const routerLd = peer === undefined ? undefined : src.dps.bySb.get(peer.dp)?.logicalDatapath;
    if (p !== undefined && peer !== undefined && routerLd !== undefined) out.push({ lsp: name, peer, routerLd, addrs: p.lspAddrs });
  }
  src.routerPorts.set(dp, out);
  return out;
}

/** The localnet ports of a switch, in name order. */
function localnetPortsOf(src: Sources, dp: Uuid): readonly string[] {
  let known = src.localnetPorts.get(dp);
  if (known === undefined) {
    known = [...(src.ports.byDp.get(dp) ?? [])].filter((name) => src.ports.byName.get(name)?.type === 'localnet').sort();
    src.localnetPorts.set(dp, known);
  }
  return known;
}

function lspFlows(src: Sources, p: PortInfo, dp: DatapathInfo): readonly sb.Logical_Flow[] {
  return switchPortFlows(p, {
    dp: dp.logicalDatapath, allRouter: src.ports.allRouter.get(p.dp) === true, vlanPassthru: dp.vlanPassthru, checkLspUp: !src.acls.globals.ignoreLspDown,
    hasStateful: src.acls.bySwitch.get(p.dp)?.hasStateful === true, hasLbVip: hasLbVip(src.lbs, p.dp),
    routerPorts: routerPortsOf(src, p.dp), localnetPorts: p.type === 'external' ? localnetPortsOf(src, p.dp) : NO_NAMES, peerRouter: p.routerPeer === undefined ? undefined : src.routers.bySb.get(p.routerPeer.dp),
    virtualLookup: p.virtual === undefined ? undefined : { port: (name) => src.ports.byName.get(name), routerPorts: (d) => routerPortsOf(src, d) },
    drops: src.drops,
  });
}

function lrpFlows(src: Sources, p: PortInfo): readonly sb.Logical_Flow[] {
  const router = src.routers.bySb.get(p.dp);
  const facts = router?.ports.find((rp) => rp.name === p.name);
  if (router === undefined || facts === undefined) return NO_FLOWS;
  const peer = p.peer === undefined ? undefined : src.ports.byName.get(p.peer);
  const peerLd = peer === undefined || !p.peerIsLrp ? undefined : src.dps.bySb.get(peer.dp)?.logicalDatapath;
  return routerPortFlows(facts, router, {
    lrpPeer: peer !== undefined && peerLd !== undefined ? { name: peer.name, logicalDatapath: peerLd } : undefined,
    hasPeer: p.peer !== undefined, peerColumnSet: p.peerColumnSet, routerKey: src.dps.bySb.get(p.dp)?.key ?? 0, drops: src.drops,
  });
}

function regenPort(data: LflowsData, src: Sources, name: string, out: FlowChanges): void {
  const owner = portOwner(name);
  if (!out.claim(owner)) return;
  const p = src.ports.byName.get(name);
  let flows = NO_FLOWS;
  if (p !== undefined) {
    const dp = src.dps.bySb.get(p.dp);
    if (dp === undefined) assert.fail(`port ${name} is bound to datapath ${p.dp}, which does not exist`);
    flows = p.kind === 'lsp' ? lspFlows(src, p, dp) : lrpFlows(src, p);
  }
  setOwner(data, owner, metered(src, flows), out);
}

/**
 * `flows` with the controller meters their datapaths' CoPP gives them (copp.ts); `ld`: the
 * datapath an owner's flows are held in, when not their own logical_datapath (a template).
 */
function metered(src: Sources, flows: readonly sb.Logical_Flow[], ld?: readonly Uuid[]): readonly sb.Logical_Flow[] {
  if (src.dps.coppRowOf.size === 0) return flows;
  return withCopp(flows, ld?.[0], (dp) => src.dps.bySb.get(dp)?.copp);
}

function regenAcl(data: LflowsData, src: Sources, dp: Uuid, acl: Uuid, out: FlowChanges): void {
  const owner = aclOwner(dp, acl);
  if (!out.claim(owner)) return;
  const state = src.acls.bySwitch.get(dp);
  const facts = state?.acls.get(acl);
  const ld = src.dps.bySb.get(dp)?.logicalDatapath;
  const flows = state === undefined || facts === undefined || ld === undefined ? NO_FLOWS : aclFlows(ld, facts, state.hasStateful || hasLbVip(src.lbs, dp), src.acls.globals.ctInvMatch, src.drops);
  setOwner(data, owner, metered(src, flows), out);
}

function regenQos(data: LflowsData, src: Sources, dp: Uuid, out: FlowChanges): void {
  const owner = qosOwner(dp);
  if (!out.claim(owner)) return;
  const rules = src.acls.bySwitch.get(dp)?.qos;
  const ld = src.dps.bySb.get(dp)?.logicalDatapath;
  setOwner(data, owner, rules === undefined || rules.length === 0 || ld === undefined ? NO_FLOWS : qosFlows(ld, rules), out);
}

/**
 * A load balancer's flows on one datapath, one owner per chunk of its VIPs (LbFacts.chunks):
 * chunk 0's owner is `lbOwner(dp, lb)`, chunk i's that with " i". A chunk whose VIPs did not
 * change gives the same flows (the same template on a switch), which its owner leaves alone.
 */
function regenLb(data: LflowsData, src: Sources, dp: Uuid, lb: Uuid, out: FlowChanges): void {
  const owner = lbOwner(dp, lb);
  if (!out.claim(owner)) return;
  const info = src.dps.bySb.get(dp);
  const facts = src.lbs.lbs.get(lb);
  const applies = info !== undefined && facts !== undefined && src.lbs.byDp.get(dp)?.counts.has(lb) === true;
  const held = data.lbChunks.get(owner) ?? 1;
  let chunks = 0;
  if (applies && info.kind === 'switch') {
    // Its shard's templates for this load balancer, held in the switch's datapath.
    chunks = facts.chunks.length;
    facts.chunks.forEach((chunk, i) => setOwner(data, lbChunkOwner(owner, i), metered(src, lbSwitchFlows(info.logicalDatapath, facts, chunk, i, src.drops), info.logicalDatapath), out, info.logicalDatapath));
  } else if (applies) {
    const router = src.routers.bySb.get(dp);
    if (router !== undefined) {
      chunks = facts.chunks.length;
      facts.chunks.forEach((chunk, i) => setOwner(data, lbChunkOwner(owner, i), metered(src, lbRouterFlows(router, facts, chunk, i === 0, src.drops)), out));
    }
  }
  for (let i = chunks; i < held; i++) setOwner(data, lbChunkOwner(owner, i), NO_FLOWS, out);
  if (chunks > 1) data.lbChunks.set(owner, chunks);
  else data.lbChunks.delete(owner);
}

function regenSvcArp(data: LflowsData, src: Sources, lb: Uuid, out: FlowChanges): void {
  if (!out.claim(svcArpOwner(lb))) return;
  const facts = src.lbs.lbs.get(lb);
  const flows = facts === undefined || facts.svcArp.length === 0 ? NO_FLOWS : lbSvcArpFlows(facts, (dp) => src.dps.bySb.get(dp)?.logicalDatapath);
  setOwner(data, svcArpOwner(lb), flows, out);
}

/**
 * Writes a load balancer's SB row: present while it applies to a switch, naming its switches
 * through their group (sync_lbs uses a group even for one switch).
 */
function writeLbRow(data: LflowsData, src: Sources, lb: Uuid, out: FlowChanges): void {
  const facts = src.lbs.lbs.get(lb);
  const switches: Uuid[] = [];
  for (const dp of src.lbs.dpsOf.get(lb) ?? []) if (src.dps.bySb.get(dp)?.kind === 'switch') switches.push(dp);
  const old = data.lbGroups.get(lb);
  if (facts === undefined || switches.length === 0) {
    if (old === undefined) return;
    data.lbTable.remove(sbLoadBalancerUuid(lb), out);
    data.lbGroups.delete(lb);
    unref(data, old, out);
    return;
  }
  switches.sort();
  const group = groupOf(data, switches, setSumWith(EMPTY_SET_SUM, switches, 1), out);
  group.refs++;
  data.lbGroups.set(lb, group);
  unref(data, old, out);
  data.lbTable.put(sbLoadBalancer(facts, group.row._uuid), out);
}

/** Owners to regenerate in one handler, gathered first so each is regenerated once, in order. */
class Dirty {
  readonly datapaths = new Set<Uuid>();
  /** Datapaths that did not exist when the run began (regenDatapath's `fresh`). */
  readonly fresh = new Set<Uuid>();
  readonly ports = new Set<string>();
  /** [switch, ACL] pairs, as "<dp> <acl>". */
  readonly acls = new Set<string>();
  /** Switches whose QoS rules changed. */
  readonly qos = new Set<Uuid>();
  /** [switch, load balancer] pairs, as "<dp> <lb>". */
  readonly lbs = new Set<string>();
  /** Load balancers whose SB row to write again. */
  readonly lbRows = new Set<Uuid>();
  /** Load balancers whose health check ARP/ND responders to build again. */
  readonly svcArps = new Set<Uuid>();
  /** Every owner whose flows may sit in datapath `dp` (its CoPP changed). */
  everythingIn(src: Sources, dp: Uuid): void {
    for (const name of src.ports.byDp.get(dp) ?? []) {
      this.ports.add(name);
      for (const other of src.ports.peerRefs.get(name) ?? []) this.ports.add(other);
      for (const lsp of src.ports.routerPortRefs.get(name) ?? []) this.ports.add(lsp);
    }
    for (const acl of src.acls.bySwitch.get(dp)?.acls.keys() ?? []) this.acls.add(`${dp} ${acl}`);
    for (const lb of src.lbs.byDp.get(dp)?.counts.keys() ?? []) this.lbs.add(`${dp} ${lb}`);
  }
  /**
   * Every owner whose flows may sit in datapath `dp`, which moved to another shard: those of the
   * datapath itself (its own, its ports', ACLs', QoS rules', load balancers' and health checks'),
   * and of every datapath one router link away, whose ports emit flows into it (a switch's ports
   * their ARP resolution into its routers, a router's ports theirs into its switches). A rare
   * event (a requested key), rebuilt broadly rather than tracked per datapath on every change.
   */
  movedShard(src: Sources, dp: Uuid): void {
    const dps = new Set<Uuid>([dp]);
    const link = (name: string | undefined): void => {
      const p = name === undefined ? undefined : src.ports.byName.get(name);
      if (p !== undefined) dps.add(p.dp);
    };
    for (const name of src.ports.byDp.get(dp) ?? []) {
      link(src.ports.routerPortOf.get(name));
      link(src.ports.peerOf.get(name));
      for (const other of src.ports.routerPortRefs.get(name) ?? []) link(other);
      for (const other of src.ports.peerRefs.get(name) ?? []) link(other);
    }
    for (const d of dps) {
      this.datapaths.add(d);
      this.everythingIn(src, d);
      this.allPortsOf(src, d);
      this.qos.add(d);
    }
    for (const [lb, facts] of src.lbs.lbs) if (facts.svcArp.some((a) => dps.has(a.dp))) this.svcArps.add(lb);
  }
  /** Every port bound to switch `dp` (their flows read the switch's router ports). */
  allPortsOf(src: Sources, dp: Uuid): void {
    for (const name of src.ports.byDp.get(dp) ?? []) this.ports.add(name);
  }
  regen(data: LflowsData, src: Sources, out: FlowChanges): void {
    // A virtual port's flows read its parents (their switch, NB row, addresses and, through the
    // parent's switch, its router ports): whatever regenerates a parent regenerates them too.
    for (const name of [...this.ports]) for (const v of src.ports.virtualRefs.get(name) ?? []) this.ports.add(v);
    for (const sbUuid of [...this.datapaths].sort()) regenDatapath(data, src, sbUuid, out, this.fresh.has(sbUuid));
    for (const name of [...this.ports].sort()) regenPort(data, src, name, out);
    for (const pair of [...this.acls].sort()) {
      const [dp, acl] = pair.split(' ') as [Uuid, Uuid];
      regenAcl(data, src, dp, acl, out);
    }
    for (const dp of [...this.qos].sort()) regenQos(data, src, dp, out);
    for (const pair of [...this.lbs].sort()) {
      const [dp, lb] = pair.split(' ') as [Uuid, Uuid];
      regenLb(data, src, dp, lb, out);
    }
    for (const lb of [...this.lbRows].sort()) writeLbRow(data, src, lb, out);
    for (const lb of [...this.svcArps].sort()) regenSvcArp(data, src, lb, out);
  }
}

/**
 * The holding machinery alone, for tests that drive owners directly (combinations, such as a
 * flow both in a template and held by an owner of its own, that NB inputs rarely reach).
 */
export const lflowHoldings = {
  setOwner: (data: LflowsData, owner: string, produced: readonly sb.Logical_Flow[], out: SbChangeSet, ld?: readonly Uuid[]): void => setOwner(data, owner, produced, out, ld),
  settle: (data: LflowsData, out: SbChangeSet): void => settle(data, out),
};

export function lflowsNode(): EngineNode<LflowsData, FlowChanges> {
  return {
    name: 'lflows',
    inputs: ['datapaths', 'ports', 'multicast', 'routers', 'acls', 'lbs', 'dns', 'drop_sampling'],
    init: () => ({
      owners: new Map(), heldIn: new Map(), entries: new Map<Uuid, FlowEntry>(), groups: new Map(), dirty: new Set<Uuid>(), table: new SbTable('Logical_Flow'),
      groupTable: new SbTable('Logical_DP_Group'), lbTable: new SbTable('Load_Balancer'), lbGroups: new Map(), lbChunks: new Map(), routePlans: new Map(),
      templates: new Map(), flowTemplates: new Map(), classes: new Map(), classOf: new Map(), dirtyTemplates: new Set(), dirtyClasses: new Set(), classDirty: new Set(),
    }),
    newChange: () => new FlowChanges(),
    isEmpty: (c) => c.size === 0,
    finish: (data, out) => settle(data, out),
    recompute(data: LflowsData, inputs: NodeInputs, out: FlowChanges): void {
      out.maybeTrackWhole(data.table);
      out.maybeTrackWhole(data.groupTable);
      out.maybeTrackWhole(data.lbTable);
      const src = sourcesOf(inputs);
      out.regenerateAll();
      // Owners that went away first (the result does not depend on the order), then every
      // datapath and port afresh.
      const gone = [...data.owners.keys()].filter((owner) => !ownerExists(owner, src));
      for (const owner of gone.sort()) {
        setOwner(data, owner, NO_FLOWS, out);
        data.lbChunks.delete(owner);
      }
      for (const dp of [...data.routePlans.keys()]) if (!src.routers.bySb.has(dp)) data.routePlans.delete(dp);
      for (const sbUuid of [...src.dps.bySb.keys()].sort()) regenDatapath(data, src, sbUuid, out);
      for (const name of [...src.ports.byName.keys()].sort()) regenPort(data, src, name, out);
      for (const dp of [...src.acls.bySwitch.keys()].sort()) {
        for (const acl of [...(src.acls.bySwitch.get(dp) as SwitchAcls).acls.keys()].sort()) regenAcl(data, src, dp, acl, out);
        if ((src.acls.bySwitch.get(dp) as SwitchAcls).qos.length > 0) regenQos(data, src, dp, out);
      }
      for (const [dp, state] of [...src.lbs.byDp].sort(([a], [b]) => (a < b ? -1 : 1))) {
        for (const lb of [...state.counts.keys()].sort()) regenLb(data, src, dp, lb, out);
      }
      for (const lb of [...new Set([...data.lbGroups.keys(), ...src.lbs.lbs.keys()])].sort()) writeLbRow(data, src, lb, out);
      for (const lb of [...src.lbs.lbs.keys()].sort()) regenSvcArp(data, src, lb, out);
    },
    handlers: {
      datapaths(data: LflowsData, change: unknown, inputs: NodeInputs, out: FlowChanges) {
        const src = sourcesOf(inputs);
        const dirty = new Dirty();
        for (const [sbUuid, { old, new: now }] of (change as DatapathsChange).datapaths) {
          dirty.datapaths.add(sbUuid);
          if (old === undefined) dirty.fresh.add(sbUuid);
          // A switch's ARP responder flows depend on vlan-passthru; a router's ports' flows name
          // its load balancer VIP sets, whose names carry its tunnel key (a requested key moves it).
          if (old !== undefined && now !== undefined && (old.vlanPassthru !== now.vlanPassthru || old.key !== now.key)) dirty.allPortsOf(src, sbUuid);
          // Its CoPP meters the controller actions of every flow it holds: its ports' (and those
          // its router ports' peers emit into it), its ACLs' and its load balancers'.
          if (old !== undefined && now !== undefined && !sameData(old.copp, now.copp)) dirty.everythingIn(src, sbUuid);
          // A key in another shard (a requested one): every flow it holds is another row now.
          if (old !== undefined && now !== undefined && old.logicalDatapath !== now.logicalDatapath) dirty.movedShard(src, sbUuid);
        }
        dirty.regen(data, src, out);
        return 'handled';
      },
      ports(data: LflowsData, change: unknown, inputs: NodeInputs, out: FlowChanges) {
        const src = sourcesOf(inputs);
        const c = change as PortsChange;
        const dirty = new Dirty();
        for (const [name, { old, new: now }] of c.ports) {
          dirty.ports.add(name);
          for (const p of [old, now]) {
            if (p === undefined) continue;
            // A router port of a switch: every port there resolves addresses through it.
            if (p.kind === 'lsp' && p.routerPeer !== undefined) dirty.allPortsOf(src, p.dp);
            // A localnet port: the switch's external ports are reached through it.
            if (p.type === 'localnet') for (const other of src.ports.byDp.get(p.dp) ?? []) if (src.ports.byName.get(other)?.type === 'external') dirty.ports.add(other);
            // An LRP: the LRPs peering with it emit flows into its router.
            if (p.kind === 'lrp') for (const other of src.ports.peerRefs.get(name) ?? []) dirty.ports.add(other);
            // A transit switch's remote ports have their IGMP snooped (the switch's multicast flows).
            const mcast = p.type === 'remote' ? src.dps.bySb.get(p.dp)?.mcast : undefined;
            if (mcast !== undefined && snooping(mcast)) dirty.datapaths.add(p.dp);
          }
        }
        // Router ports' ARP/ND flows depend on whether their switch has only router ports.
        for (const dp of c.allRouterFlipped) for (const name of src.ports.routersByDp.get(dp) ?? []) dirty.ports.add(name);
        dirty.regen(data, src, out);
        return 'handled';
      },
      multicast(data: LflowsData, change: unknown, inputs: NodeInputs, out: FlowChanges) {
        // Its switch flows read whether _MC_unknown has ports, its multicast flows the flood flags.
        const flipped = (change as MulticastChange).flagsChanged;
        if (flipped.size === 0) return 'unchanged';
        const src = sourcesOf(inputs);
        for (const sbUuid of [...flipped].sort()) regenDatapath(data, src, sbUuid, out);
        return 'handled';
      },
      acls(data: LflowsData, change: unknown, inputs: NodeInputs, out: FlowChanges) {
        const src = sourcesOf(inputs);
        const dirty = new Dirty();
        const c = change as AclsChange;
        const was = c.globalsWere;
        const now = src.acls.globals;
        if (was !== undefined && (was.defaultDrop !== now.defaultDrop || was.ctInvMatch !== now.ctInvMatch)) {
          // default_acl_drop or use_ct_inv_match: every switch's ACL stages and ACLs.
          for (const info of src.dps.bySb.values()) if (info.kind === 'switch') dirty.datapaths.add(info.sbUuid);
          for (const [dp, state] of src.acls.bySwitch) for (const acl of state.acls.keys()) dirty.acls.add(`${dp} ${acl}`);
        }
        // ignore_lsp_down: every switch port's ARP and ND responders.
        if (was !== undefined && was.ignoreLspDown !== now.ignoreLspDown) for (const info of src.dps.bySb.values()) if (info.kind === 'switch') dirty.allPortsOf(src, info.sbUuid);
        for (const [dp, { old, new: now }] of c.switches) {
          // A switch without ACL state has the default flags (no ACLs, not stateful).
          const flagsChanged = (old?.hasAcls ?? false) !== (now?.hasAcls ?? false) || (old?.hasStateful ?? false) !== (now?.hasStateful ?? false);
          if (flagsChanged) {
            // The switch's default ACL stages, its router/localnet/DHCP ports' conntrack flows
            // and every ACL's flows depend on whether the switch is stateful.
            dirty.datapaths.add(dp);
            dirty.allPortsOf(src, dp);
          }
          for (const [acl, facts] of old?.acls ?? []) if (flagsChanged || !sameData(facts, now?.acls.get(acl))) dirty.acls.add(`${dp} ${acl}`);
          for (const [acl, facts] of now?.acls ?? []) if (flagsChanged || !sameData(facts, old?.acls.get(acl))) dirty.acls.add(`${dp} ${acl}`);
          if (!sameData(old?.qos, now?.qos)) dirty.qos.add(dp);
        }
        dirty.regen(data, src, out);
        return 'handled';
      },
      lbs(data: LflowsData, change: unknown, inputs: NodeInputs, out: FlowChanges) {
        const src = sourcesOf(inputs);
        const c = change as LbsChange;
        const dirty = new Dirty();
        // has_lb_vip: the switch's default flows, its ports' conntrack and DHCP flows, and its
        // ACLs' flows (stateful handling) all read it.
        for (const dp of c.hasVipFlipped.keys()) {
          if (src.dps.bySb.get(dp)?.kind !== 'switch') continue;
          dirty.datapaths.add(dp);
          dirty.allPortsOf(src, dp);
          for (const acl of src.acls.bySwitch.get(dp)?.acls.keys() ?? []) dirty.acls.add(`${dp} ${acl}`);
        }
        for (const pair of c.pairs) dirty.lbs.add(pair);
        for (const lb of c.facts) for (const dp of src.lbs.dpsOf.get(lb) ?? []) dirty.lbs.add(`${dp} ${lb}`);
        // Its health checks' responders sit in the monitored ports' switches, wherever it applies.
        for (const lb of c.facts) dirty.svcArps.add(lb);
        for (const lb of c.membership) dirty.lbRows.add(lb);
        dirty.regen(data, src, out);
        return 'handled';
      },
      dns(data: LflowsData, change: unknown, inputs: NodeInputs, out: FlowChanges) {
        // Only whether a switch has DNS records reaches its flows; the records are the DNS rows'.
        const flipped = (change as DnsChange).flipped;
        if (flipped.size === 0) return 'unchanged';
        const src = sourcesOf(inputs);
        for (const sbUuid of [...flipped].sort()) regenDatapath(data, src, sbUuid, out);
        return 'handled';
      },
      routers(data: LflowsData, change: unknown, inputs: NodeInputs, out: FlowChanges) {
        const src = sourcesOf(inputs);
        const dirty = new Dirty();
        for (const [sbUuid, { old, new: now }] of (change as RoutersChange).routers) {
          dirty.datapaths.add(sbUuid);
          // Its load balancers' flows read its force-SNAT setting, NAT addresses and gateway ports.
          if (routerLbContext(old) !== routerLbContext(now)) for (const lb of src.lbs.byDp.get(sbUuid)?.counts.keys() ?? []) dirty.lbs.add(`${sbUuid} ${lb}`);
          // A port's own facts changing regenerates it through the ports input, but for whether a
          // BFD session names it, which the router's facts hold.
          // The router LSP facing such a port too: its routes to other routers' routable
          // addresses leave by the port, with the port's BFD pass-through.
          if (old !== undefined && now !== undefined) {
            const flipped = (name: string): void => {
              dirty.ports.add(name);
              for (const lsp of src.ports.routerPortRefs.get(name) ?? []) dirty.ports.add(lsp);
            };
            const hadBfd = new Set(old.ports.filter((rp) => rp.hasBfd).map((rp) => rp.name));
            for (const rp of now.ports) if (rp.hasBfd !== hadBfd.delete(rp.name)) flipped(rp.name);
            for (const name of hadBfd) flipped(name);
          }
          if (old !== undefined && now !== undefined && sameData(old.portFacing, now.portFacing)) continue;
          // Its ports' flows, and the switch side of the router LSPs facing them, read the
          // router's port-facing facts.
          for (const facts of [old, now]) {
            for (const rp of facts?.ports ?? []) {
              dirty.ports.add(rp.name);
              for (const lsp of src.ports.routerPortRefs.get(rp.name) ?? []) dirty.ports.add(lsp);
            }
          }
        }
        dirty.regen(data, src, out);
        return 'handled';
      },
      drop_sampling(data: LflowsData, _change: unknown, inputs: NodeInputs, out: FlowChanges) {
        // Drop sampling turned on, off or to another collector set or domain: every owner whose
        // flows may drop is built again. Its flows that do not drop come out as they were and
        // stay; a switch's templates keep their lineage (switchDatapathFlows), so those that stay
        // keep their groups too, and only the flows that drop are written.
        const src = sourcesOf(inputs);
        const dirty = new Dirty();
        for (const sbUuid of src.dps.bySb.keys()) dirty.datapaths.add(sbUuid);
        for (const name of src.ports.byName.keys()) dirty.ports.add(name);
        for (const [dp, state] of src.acls.bySwitch) for (const [acl, facts] of state.acls) if (facts.action === 'drop') dirty.acls.add(`${dp} ${acl}`);
        for (const [dp, state] of src.lbs.byDp) for (const lb of state.counts.keys()) dirty.lbs.add(`${dp} ${lb}`);
        dirty.regen(data, src, out);
        return 'handled';
      },
    },
  };
}
