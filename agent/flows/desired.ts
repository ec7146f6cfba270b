// The desired flows of one chassis, maintained incrementally from SB updates and the LocalView.
// Inputs: the SB rows (SbStore), the LocalView, the previous ct zones. Derived on every update:
// our Chassis uuid, the local datapaths (local-datapaths.ts), the ct zones (ct-zones.ts). Output:
// the FlowTable, whose sources are
//   lf:<uuid>  a Logical_Flow compiled for each of its local datapaths (agent/compile),
//   pb:<uuid>  a Port_Binding's physical flows,   mc:<uuid>  a Multicast_Group's,
//   mb:<uuid>  a MAC_Binding's, smb:<uuid> a Static_MAC_Binding's, fdb:<uuid> an FDB row's,
//   lb:<uuid>  a Load_Balancer's hairpin flows (tables 68..70, lb-hairpin.ts),
//   tun:<name> the decapsulation flow of the tunnel to chassis <name>,   default: fixed flows.
// A logical flow's sample action also reads the LocalView's collector sets (sampleCollectors).
// Beside the flows: the groups ct_lb's backends, fwd_group's child ports and select's members need (by description) and the meters the logical
// flows name (controller_meter, log(meter=…), set_meter's own), with their ids (meter-table.ts)
// and what each is, from the SB Meter rows.
// An update marks dirty exactly the sources whose inputs changed and recomputes only those; a
// full recompute marks every source dirty and runs the same code. Each change handler below
// names what its input feeds. The oracle (tests/agent/flows-incremental.test.ts): after any
// sequence of updates the table equals a fresh engine's, given the same ct zones.

import assert from 'node:assert/strict';
import type * as sb from '../../ovsdb/rows/sb.js';
import { compileLogicalFlow, createCompileMemo, type CompileMemo, type DatapathInfo, type FlowCompileContext, type LogicalFlowRow } from '../compile/index.js';
import { buildSymtab, type Symtab } from '../expr/index.js';
import { HA_CHASSIS_NAME_KEY } from '../ha-chassis.js';
import { sameActiveTunnels, sameSampleCollectors, type LocalView } from '../local-view.js';
import type { FlowSpec, GroupSpec, MeterSpec, OfAction } from '../openflow/types.js';
import type { SbUpdate } from '../sb-source.js';
import { addressSetDiff, isPlainAddress, matchesOneOf, PlainAddressSets, sentinels, setFieldIsolated, type AddressSetChange } from './address-set-edits.js';
import { adaptCached, type SharedCompileCache } from './compile-cache.js';
import { assignCtZones, changedZones, ctZoneUsers } from './ct-zones.js';
import { canonicalMatch, deepEqual, FlowTable } from './flow-table.js';
import { flowKey } from '../openflow/reconcile.js';
import { parseGroupDescription } from './group-desc.js';
import { IdSpace } from './id-space.js';
import { METER_IDS_MAX, MeterTable, meterSpecOf } from './meter-table.js';
import { lbHairpinFlows, lbHairpinUseCtMark } from './lb-hairpin.js';
import {
  computeLocality, isBoundHere, isRedirectActiveHere, isRelatedPort, sameLocalDatapath, type Locality,
} from './local-datapaths.js';
import {
  defaultFlows, dropSamplingOf, fdbFlows, mcGroupBasis, multicastFlowsFrom, multicastMemberShare, neighborFlows, portBindingFlows, sameDropSampling, tunnelFlows,
  type DropSampling, type McGroupBasis, type McMemberShare, type PhysicalContext,
} from './physical.js';
import { SbStore, type MemberDiff, type RowDelta } from './sb-store.js';

export interface DesiredFlowsOptions {
  /** The logical field table; built once when absent. */
  readonly symtab?: Symtab;
  /** The tun_metadata field of OVN's Geneve option on the switch (default tun_metadata0). */
  readonly geneveField?: string;
  /** ct zones persisted by a previous run (name → zone); kept where still in use. */
  readonly ctZones?: ReadonlyMap<string, number>;
  /** The datapath commits with an all-zero SNAT (OVS Datapath capabilities:ct_zero_snat), as
   *  ovn-controller detects: ct_commit then carries nat(src). Default false. */
  readonly ctZeroSnat?: boolean;
  /** The datapath has the symmetric L4 dp_hash (OVS Datapath capabilities:max_hash_alg), as
   *  ovn-controller detects: select's groups then ask for it. Default false. */
  readonly dpHashL4Sym?: boolean;
  /** A compile cache shared with the other agents of this process (simulations); absent =
   *  every logical flow is compiled by this agent. */
  readonly sharedCache?: SharedCompileCache;
}

/** What one update recomputed. */
export interface UpdateStats {
  readonly full: boolean;
  readonly logicalFlows: number;
  readonly ports: number;
  readonly multicastGroups: number;
  readonly neighbors: number;
  readonly tunnels: number;
}

/** Port types whose rows feed the local datapath computation beyond "bound here". */
const localityTypes: ReadonlySet<string> = new Set(['patch', 'l3gateway', 'localnet', 'external', 'chassisredirect']);

const EMPTY_LOCALITY: Locality = { datapaths: new Map(), byKey: new Map() };
/** A view without VIF MTUs: none known. */
const NO_MTUS: ReadonlyMap<string, number> = new Map();

/**
 * A multicast group's members' shares of its flows (physical.ts McMemberShare), kept between
 * updates with what they add up to: a group of n ports changes one member at a time (a port
 * added to a switch changes its _MC_flood and friends), and recomputing every member's share on
 * every change is O(n) per change on every chassis. A share is recomputed when its member is new
 * to the group or its Port_Binding source is dirty: every input of a share (see McMemberShare)
 * marks the member's port dirty when it changes. When every share that changed (and every
 * member that came or went) has no local or remote actions — it only names chassis to fan out
 * to, as a port on another chassis does, or nothing, as an unbound port — the sums are
 * updated for those members alone; otherwise they are added up again over all members. The
 * flows are then built from the sums (reading the tunnels and the group's own row afresh). The
 * datapath's part (the basis) is checked on each use; a full recompute drops everything.
 */
interface McShares {
  readonly dp: string;
  readonly basis: McGroupBasis;
  /** Port_Binding uuid → share; the group's members at the last recompute of the group. */
  readonly shares: Map<string, McMemberShare>;
  /** Members whose port went dirty since then → their share as it was (and is in the sums). */
  readonly stale: Map<string, McMemberShare>;
  /** The sums: local and remote actions concatenated in member order, chassis name → count. */
  local: readonly OfAction[];
  remote: readonly OfAction[];
  readonly chassis: Map<string, number>;
  readonly vtepChassis: Map<string, number>;
  /** The names with a count, sorted; undefined = to be sorted again. */
  chassisSorted: readonly string[] | undefined;
  vtepSorted: readonly string[] | undefined;
  /** The flows last built, and from what (by identity: sums and sorted names are replaced, never
   *  changed in place, and so is a LocalView's tunnel map). */
  built: McBuilt | undefined;
}

interface McBuilt {
  readonly tunnelKey: number;
  readonly local: readonly OfAction[];
  readonly remote: readonly OfAction[];
  readonly chassisSorted: readonly string[];
  readonly vtepSorted: readonly string[];
  readonly tunnels: LocalView['tunnels'];
  readonly geneveField: string;
  readonly flows: FlowSpec[];
}

function sameBasis(a: McGroupBasis, b: McGroupBasis): boolean {
  return a.tunnelKey === b.tunnelKey && a.isTransitSwitch === b.isTransitSwitch && a.hasLocalnet === b.hasLocalnet;
}

/** A share that only names chassis (or nothing): adding or removing it moves no action. */
const namesOnly = (s: McMemberShare): boolean => s.local.length === 0 && s.remote.length === 0;

/** Adds (sign 1) or takes away (sign -1) a share's chassis names; returns whether a name came or went. */
function countNames(counts: Map<string, number>, names: readonly string[], sign: 1 | -1): boolean {
  let changed = false;
  for (const n of names) {
    const c = (counts.get(n) ?? 0) + sign;
    assert(c >= 0, `multicast share count of ${n} below zero`);
    if (c === 0) counts.delete(n);
    else counts.set(n, c);
    if (c === 0 || (c === 1 && sign === 1)) changed = true;
  }
  return changed;
}

/** A Multicast_Group row change whose members are not known: the sums are added up again. */
const MEMBERS_UNKNOWN: MemberDiff = { added: [], removed: [] };

/** Rows whose actions may hold fwd_group: they read tunnels, which are this chassis's own. */
const FWD_GROUP_RE = /\bfwd_group\b/;
/** Rows whose actions may hold sample: they read the bridge's collector sets, this chassis's own. */
const SAMPLE_RE = /\bsample\b/;
/** The dependency of every row with a sample action on the LocalView's sampleCollectors. */
const SAMPLE_COLLECTORS_DEP = 'sample:collectors';

/** Group ids: OFPG_MAX is 0xffffff00. Conjunction ids below 1000 are left to fixed users. */
const GROUP_IDS_IN_USE_MAX = 1_000_000;
const CONJ_IDS_IN_USE_MAX = 8_000_000;

/**
 * The names a logical flow's text may look up: quoted strings (ports, multicast groups), $sets,
 * @groups — each as the datapath's own SB Port_Group "<tunnel_key>_<name>" and as the plain name
 * it falls back to — and its in_out_port tag; with fwd_group, the chassis each quoted port is
 * bound on ("pc:<port>"; the tunnels read are added after the compile, see recompileLflow);
 * with sample, the bridge's collector sets. Over-approximate on purpose.
 */
function lflowDeps(row: sb.Logical_Flow, dpKeys: readonly number[], memo: WeakMap<object, RowNames>): string[] {
  const names = namesOf(row, memo);
  const deps = new Set<string>(names.fixed);
  for (const g of names.groups) {
    deps.add(`pg:${g}`);
    for (const k of dpKeys) deps.add(`pg:${k}_${g}`);
  }
  return [...deps];
}

interface RowNames {
  /** "p:<port>", "as:<set>" and "pc:<port>" dependencies. */
  readonly fixed: readonly string[];
  /** Port group names (@name). */
  readonly groups: readonly string[];
}

/** The names in a row's text, scanned once per row object ('memo'; rows are immutable). */
function namesOf(row: sb.Logical_Flow, memo: WeakMap<object, RowNames>): RowNames {
  const have = memo.get(row);
  if (have !== undefined) return have;
  const fixed = new Set<string>();
  const groups = new Set<string>();
  // A scan only where its character occurs: most rows name no address set or port group.
  for (const text of [row.match, row.actions]) {
    if (text.includes('"')) for (const m of text.matchAll(/"((?:[^"\\]|\\.)*)"/g)) fixed.add(`p:${m[1] as string}`);
    if (text.includes('$')) for (const m of text.matchAll(/\$([A-Za-z_][A-Za-z0-9_.]*)/g)) fixed.add(`as:${m[1] as string}`);
    if (text.includes('@')) for (const m of text.matchAll(/@([A-Za-z_][A-Za-z0-9_.]*)/g)) groups.add(m[1] as string);
  }
  const io = row.tags.get('in_out_port');
  if (io !== undefined) fixed.add(`p:${io}`);
  // fwd_group(liveness=true) reads where its child ports are bound (the tunnel it watches).
  if (FWD_GROUP_RE.test(row.actions)) {
    for (const m of row.actions.matchAll(/"((?:[^"\\]|\\.)*)"/g)) fixed.add(`pc:${m[1] as string}`);
  }
  if (SAMPLE_RE.test(row.actions)) fixed.add(SAMPLE_COLLECTORS_DEP);
  const names = { fixed: [...fixed], groups: [...groups] };
  memo.set(row, names);
  return names;
}

function changedColumns(old: Record<string, unknown> | undefined, row: Record<string, unknown> | undefined, cols: readonly string[]): boolean {
  if (old === undefined || row === undefined) return true;
  for (const c of cols) {
    const a = old[c];
    const b = row[c];
    if (a === b) continue;
    if (Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => x === b[i])) continue;
    return true;
  }
  return false;
}

class Dirty {
  full = false;
  /** Inputs of the local datapaths changed (else the previous result stands). */
  locality = false;
  /** Inputs of the ct zone users changed. */
  zones = false;
  readonly lflows = new Set<string>();
  readonly ports = new Set<string>();
  readonly mcs = new Set<string>();
  /** Multicast groups whose row changed: the members that came and went. */
  readonly mcMembers = new Map<string, MemberDiff>();
  readonly mbs = new Set<string>();
  readonly smbs = new Set<string>();
  readonly fdbs = new Set<string>();
  readonly lbs = new Set<string>();
  readonly names = new Set<string>();
  readonly tunnels = new Set<string>();
  /** Names of SB Meters that changed (the meter, or one of its bands). */
  readonly meters = new Set<string>();
  /**
   * Address sets whose row changed in place (same name): their addresses before and after,
   * for the logical flows that can take the difference (address-set-edits.ts); null when a set
   * came, went, was renamed or changed twice.
   */
  readonly addressSets = new Map<string, AddressSetChange | null>();
  /** The same for port groups (their ports, by name). */
  readonly portGroups = new Map<string, AddressSetChange | null>();
  /** Port group name → the ports whose change marked it (markPortName). */
  readonly groupsMarkedBy = new Map<string, Set<string>>();
  /** Port name → whether it was and is related to this chassis, for ports whose row changed. */
  readonly portsRelated = new Map<string, { before: boolean; now: boolean }>();
}

/**
 * Marks the logical flows that name a set row (an address set, a port group) and notes how it
 * changed: in place (same name, once in the update: its members before and after, for the
 * edits by difference), or not (it came, went, was renamed or changed twice: null).
 */
function noteSetChange<R extends { readonly name: string }>(d: Dirty, kind: 'as' | 'pg', changes: Map<string, AddressSetChange | null>,
  was: R | undefined, now: R | undefined, members: (r: R) => readonly string[]): void {
  for (const r of [was, now]) if (r !== undefined) d.names.add(`${kind}:${r.name}`);
  if (was !== undefined && now !== undefined && was.name === now.name && !changes.has(now.name)) {
    changes.set(now.name, { before: members(was), after: members(now) });
  } else {
    for (const r of [was, now]) if (r !== undefined) changes.set(r.name, null);
  }
}

export class DesiredFlows {
  readonly sb = new SbStore();
  readonly table = new FlowTable();
  private readonly symtab: Symtab;
  private readonly ctZeroSnat: boolean;
  private readonly dpHashL4Sym: boolean;
  private readonly sharedCache: SharedCompileCache | undefined;
  private geneveField: string;
  private forceFull = false;
  private view: LocalView | undefined;
  /** The physical tables' drop sampling in force (physical.ts, dropSamplingOf). */
  private dropSampling: DropSampling | undefined;
  private chassisUuid: string | undefined;
  private locality: Locality = EMPTY_LOCALITY;
  private zones: Map<string, number>;
  /** Source → the error that kept its flows out (flows of that source are absent). */
  private readonly errors = new Map<string, string>();
  private readonly deps = new Map<string, readonly string[]>();
  private readonly rowNames = new WeakMap<object, RowNames>();
  private readonly depIndex = new Map<string, Set<string>>();
  private readonly conjIds = new IdSpace(1000, 0xfffffff0, CONJ_IDS_IN_USE_MAX);
  private readonly conjOwners = new Map<string, Set<string>>();
  private readonly groupIds = new IdSpace(1, 0xfffffeff, GROUP_IDS_IN_USE_MAX);
  /** Group description → its id, spec and the sources that use it. */
  private readonly groups = new Map<string, { readonly id: number; readonly spec: GroupSpec | { readonly error: string }; readonly users: Set<string> }>();
  private readonly groupsOf = new Map<string, readonly string[]>();
  private readonly dirtyGroups = new Set<number>();
  private readonly groupById = new Map<number, GroupSpec>();
  /** Multicast_Group uuid → its members' shares (see McShares); only groups of local datapaths. */
  private readonly mcShares = new Map<string, McShares>();
  private readonly plainSets = new PlainAddressSets();
  private readonly meters = new MeterTable();
  /** Meter id → the meter to install, for the ids in use that have one. */
  private readonly meterById = new Map<number, MeterSpec>();
  private readonly dirtyMeters = new Set<number>();
  /** Lifetime counters: how many sources each kind of recompute touched. */
  readonly counters = {
    updates: 0, fullRecomputes: 0, logicalFlowsCompiled: 0,
    /** Logical flows brought up to date by an address set's difference instead of a compile. */
    addressSetEdits: 0,
    /** Multicast group members' shares computed; group recomputes from the kept sums, and by adding every share up. */
    mcMemberShares: 0, mcSumsUpdated: 0, mcSumsAdded: 0,
  };

  constructor(opts: DesiredFlowsOptions = {}) {
    this.symtab = opts.symtab ?? buildSymtab();
    this.ctZeroSnat = opts.ctZeroSnat ?? false;
    this.dpHashL4Sym = opts.dpHashL4Sym ?? false;
    this.sharedCache = opts.sharedCache;
    this.geneveField = opts.geneveField ?? 'tun_metadata0';
    this.zones = new Map(opts.ctZones ?? []);
  }

  /** The switch mapped OVN's Geneve option to another field: the next update recomputes all. */
  setGeneveField(field: string): void {
    if (field === this.geneveField) return;
    this.geneveField = field;
    this.forceFull = true;
  }

  /** The next update recomputes every flow, whatever it carries (ovn-controller's `recompute`). */
  forceRecompute(): void {
    this.forceFull = true;
  }

  /**
   * The groups the flows use, by description (the text `group-table-list` prints, as
   * ovn-controller's group table names them), with their ids.
   */
  groupTable(): Map<string, number> {
    const out = new Map<string, number>();
    for (const [desc, g] of this.groups) if (!('error' in g.spec)) out.set(desc, g.id);
    return out;
  }

  /** The meters the flows use, by name (an SB Meter's, or a set_meter description), with their ids. */
  meterTable(): Map<string, number> {
    const out = new Map<string, number>();
    for (const [name, e] of this.meters.entries()) out.set(name, e.id);
    return out;
  }

  /** The ct zone assignments now in force (persist them to keep zones across restarts). */
  ctZones(): ReadonlyMap<string, number> {
    return this.zones;
  }

  /** Whether the datapath commits with an all-zero SNAT: the view's reading, else the option's. */
  private ctZeroSnatOf(view: LocalView | undefined): boolean {
    return view?.ctZeroSnat ?? this.ctZeroSnat;
  }

  /** Whether the datapath has the symmetric L4 dp_hash: the view's reading, else the option's. */
  private dpHashL4SymOf(view: LocalView | undefined): boolean {
    return view?.dpHashL4Sym ?? this.dpHashL4Sym;
  }

  localDatapaths(): Locality {
    return this.locality;
  }

  /** Whether this chassis compiles logical flow `uuid`: one of its datapaths is local and its in_out_port tag (if any) names a related port. */
  compilesLflow(uuid: string): boolean {
    const row = this.sb.get<sb.Logical_Flow>('Logical_Flow', uuid);
    return row !== undefined && this.inOutPortRelated(row) && this.datapathsOf(row).some((dp) => this.locality.datapaths.has(dp));
  }

  chassis(): string | undefined {
    return this.chassisUuid;
  }

  /** Sources whose flows could not be computed, with why. */
  sourceErrors(): ReadonlyMap<string, string> {
    return this.errors;
  }

  /** Every group the flows need, by id. */
  groupSpecs(): ReadonlyMap<number, GroupSpec> {
    return this.groupById;
  }

  /** Group ids added, changed or removed since the last call. */
  takeDirtyGroups(): number[] {
    const out = [...this.dirtyGroups];
    this.dirtyGroups.clear();
    return out;
  }

  /** Every meter the flows need that has something to install, by id. */
  meterSpecs(): ReadonlyMap<number, MeterSpec> {
    return this.meterById;
  }

  /** The name meter id `id` stands for now (undefined: not in use). */
  meterName(id: number): string | undefined {
    return this.meters.nameOf(id);
  }

  /**
   * Meter ids added, changed or removed since the last call. The caller is about to bring the
   * switch's meters to meterSpecs(); once the switch confirmed it, settleMeters() lets the ids
   * of meters gone be handed out again.
   */
  takeDirtyMeters(): number[] {
    const out = [...this.dirtyMeters];
    this.dirtyMeters.clear();
    this.meters.markSent();
    return out;
  }

  /** The switch holds meterSpecs() as of the last takeDirtyMeters(). */
  settleMeters(): void {
    this.meters.settle();
  }

  /**
   * Folds an SB update (or none: only the LocalView changed) in and recomputes what it touched.
   * The first call, a reset, and a change of chassis name recompute everything.
   */
  update(u: SbUpdate | null, view: LocalView): UpdateStats {
    this.counters.updates++;
    const d = new Dirty();
    const deltas = u === null ? [] : this.sb.apply(u);
    if (this.view === undefined || (u !== null && u.reset) || this.view.chassis !== view.chassis || this.forceFull) d.full = true;
    this.forceFull = false;
    for (const delta of deltas) this.onRowChange(delta, d);
    const chassisUuid = this.sb.chassisByName(view.chassis)?._uuid;
    if (chassisUuid !== this.chassisUuid) d.full = true;
    if (this.view !== undefined && !d.full) this.onViewChange(this.view, view, d);
    this.view = view;
    this.chassisUuid = chassisUuid;
    // Both are recomputed whole, but only when one of their inputs changed: a typical update
    // (a logical flow, a remote port, a MAC binding) leaves them be.
    if (d.full || d.locality) this.onLocalityChange(computeLocality(this.sb, chassisUuid, view), d);
    if (d.full || d.locality || d.zones) this.onZonesChange(assignCtZones(this.zones, ctZoneUsers(this.sb, chassisUuid, view, this.locality)), d);
    // Drop sampling turned on, off or to another collector set or domain: every physical drop
    // changes (ovn-controller recomputes its physical flows then); rare, recomputed whole.
    const sampling = this.dropSamplingNow(view);
    if (!sameDropSampling(sampling, this.dropSampling)) d.full = true;
    this.dropSampling = sampling;
    if (d.full) this.markAll(d);
    return this.recomputeDirty(d);
  }

  /** SB_Global's drop sampling options and the view's collector sets (physical.ts). */
  private dropSamplingNow(view: LocalView): DropSampling | undefined {
    const global = [...this.sb.table('SB_Global').values()][0] as unknown as sb.SB_Global | undefined;
    return dropSamplingOf(global?.options, view.sampleCollectors);
  }

  /** Recomputes every source from the stored rows (the oracle path; also after a resync). */
  recompute(view: LocalView): UpdateStats {
    const d = new Dirty();
    d.full = true;
    this.view = view;
    this.chassisUuid = this.sb.chassisByName(view.chassis)?._uuid;
    this.locality = computeLocality(this.sb, this.chassisUuid, view);
    this.zones = assignCtZones(this.zones, ctZoneUsers(this.sb, this.chassisUuid, view, this.locality));
    this.dropSampling = this.dropSamplingNow(view);
    this.markAll(d);
    return this.recomputeDirty(d);
  }

  // ---- Change handlers: input → dirty sources --------------------------------------------

  private onRowChange(delta: RowDelta, d: Dirty): void {
    const old = delta.old as unknown as Record<string, unknown> | undefined;
    const row = delta.row as unknown as Record<string, unknown> | undefined;
    switch (delta.table) {
      case 'Logical_Flow':
        d.lflows.add(delta.uuid);
        return;
      case 'Datapath_Binding':
        // Feeds every flow of the datapath: keys, kind, NAT zones of its logical flows; and the
        // local datapaths' records (key, kind) and requested SNAT zones.
        d.locality = true;
        this.markDatapath(delta.uuid, d, true);
        if (old !== undefined) for (const f of this.sb.fdbsOfDatapathKey((old as unknown as sb.Datapath_Binding).tunnel_key)) d.fdbs.add(f);
        return;
      case 'Logical_DP_Group':
        // A group changes in place as datapaths join and leave it (the group of a template's
        // flows, as switches come and go): its flows compile to the same OpenFlow unless its
        // local members changed. A datapath becoming local marks its flows through locality.
        if (old === undefined || row === undefined || !sameLocalMembers(old['datapaths'] as readonly string[], row['datapaths'] as readonly string[], this.locality)) {
          for (const lf of this.sb.logicalFlowsOfGroup(delta.uuid)) d.lflows.add(lf);
        }
        for (const lb of this.sb.loadBalancersOfGroup(delta.uuid)) d.lbs.add(lb);
        return;
      case 'Load_Balancer':
        d.lbs.add(delta.uuid);
        return;
      case 'Chassis_Template_Var': {
        // This chassis's template variables: every logical flow whose text may name one, and
        // every template load balancer, compile again (rare: a CMS sets them as nodes come).
        const here = this.view?.chassis;
        const mine = (r: Record<string, unknown> | undefined): boolean => r !== undefined && r['chassis'] === here;
        if (!mine(old) && !mine(row)) return;
        for (const [u, r] of this.sb.table('Logical_Flow')) {
          const lf = r as unknown as sb.Logical_Flow;
          if (lf.match.includes('^') || lf.actions.includes('^')) d.lflows.add(u);
        }
        for (const [u, r] of this.sb.table('Load_Balancer')) if ((r as unknown as sb.Load_Balancer).options.has('template')) d.lbs.add(u);
        return;
      }
      case 'SB_Global': {
        // ct_mark or ct_label in every load balancer's table-68 flows.
        const was = lbHairpinUseCtMark(old as unknown as sb.SB_Global | undefined);
        if (was !== lbHairpinUseCtMark(row as unknown as sb.SB_Global | undefined)) for (const u of this.sb.table('Load_Balancer').keys()) d.lbs.add(u);
        return;
      }
      case 'Port_Binding': {
        const was = old as unknown as sb.Port_Binding | undefined;
        const now = row as unknown as sb.Port_Binding | undefined;
        const visible = was === undefined || now === undefined || this.lflowView(was) !== this.lflowView(now);
        // Locality reads bound ports, patch and gateway edges, localnet and external ports.
        const bound = (pb: sb.Port_Binding | undefined): boolean => pb !== undefined && isBoundHere(pb, this.chassisUuid);
        const edge = (pb: sb.Port_Binding | undefined): boolean => pb !== undefined && localityTypes.has(pb.type);
        // A local datapath lists its ports bound on several chassis.
        const multi = (pb: sb.Port_Binding | undefined): boolean => pb !== undefined && pb.additional_chassis.length > 0;
        if (bound(was) !== bound(now) || edge(was) || edge(now) || (was !== undefined && now !== undefined && bound(now) && was.datapath !== now.datapath)
          || multi(was) !== multi(now) || (multi(now) && was !== undefined && was.datapath !== now?.datapath)) {
          d.locality = true;
        }
        if (bound(was) || bound(now)) d.zones = true;
        // On a switch with a localnet port the remote ports tunnel a multichassis port's
        // traffic by its key (table 39, priority 110), and answer its packets too big for the
        // tunnels where it is bound here (tables 37 and 38): a multichassis port that comes,
        // goes, moves, changes key, or is bound here or no longer, rewrites theirs (its coming
        // and going changes the locality too).
        if ((multi(was) || multi(now)) && (was === undefined || now === undefined || was.tunnel_key !== now.tunnel_key || was.datapath !== now.datapath
          || was.logical_port !== now.logical_port || bound(was) !== bound(now))) {
          for (const pb of [was, now]) if (pb !== undefined && this.locality.datapaths.has(pb.datapath)) this.markDatapath(pb.datapath, d, false);
        }
        for (const pb of [was, now]) {
          if (pb === undefined) continue;
          const r = d.portsRelated.get(pb.logical_port) ?? { before: false, now: false };
          if (pb === was) r.before = isRelatedPort(this.sb, pb, this.chassisUuid);
          else r.now = isRelatedPort(this.sb, pb, this.chassisUuid);
          d.portsRelated.set(pb.logical_port, r);
        }
        for (const pb of [was, now]) {
          if (pb === undefined) continue;
          this.markPortAndNeighbours(pb, d);
          if (visible) this.markPortName(pb.logical_port, d);
        }
        // fwd_group's liveness watches the tunnel to the chassis a child port is bound on.
        if (was?.chassis[0] !== now?.chassis[0] || was?.logical_port !== now?.logical_port) {
          for (const pb of [was, now]) if (pb !== undefined) d.names.add(`pc:${pb.logical_port}`);
        }
        return;
      }
      case 'Multicast_Group': {
        d.mcs.add(delta.uuid);
        d.mcMembers.set(delta.uuid, delta.members ?? MEMBERS_UNKNOWN);
        // Logical flows look a group up by name: only its existence and key matter to them.
        if (changedColumns(old, row, ['name', 'datapath', 'tunnel_key'])) {
          for (const r of [old, row]) if (r !== undefined) d.names.add(`p:${(r as unknown as sb.Multicast_Group).name}`);
        }
        return;
      }
      case 'Chassis': {
        // Remote ports bound to this chassis tunnel to it by name; the groups they are in fan
        // out to it (and to it as a VTEP or not): marking the ports marks their groups
        // (markDirtyPortsGroups). A chassis no port is bound to changes no group: when one is
        // bound, its Port_Binding marks them.
        for (const r of [old, row]) {
          if (r === undefined) continue;
          for (const p of this.sb.portsOfChassis((r as unknown as sb.Chassis)._uuid)) d.ports.add(p);
        }
        // fwd_group's liveness found the tunnel of a bound port by its chassis's name.
        if (old?.['name'] !== row?.['name']) for (const r of [old, row]) if (r !== undefined) d.names.add(`tunnel:${(r as unknown as sb.Chassis).name}`);
        // HA members name their chassis by name: a member's chassis registering or leaving may
        // change which member of a group is active (agent/ha-chassis.ts). Rare: recompute as
        // for HA rows.
        if (old === undefined || row === undefined || old.name !== row.name) {
          const names = new Set([old, row].flatMap((r) => (r === undefined ? [] : [(r as unknown as sb.Chassis).name])));
          const member = [...this.sb.table('HA_Chassis').values()].some((h) => {
            const hc = h as unknown as sb.HA_Chassis;
            return hc.chassis[0] === delta.uuid || names.has(hc.external_ids.get(HA_CHASSIS_NAME_KEY) ?? '');
          });
          if (member) {
            d.locality = true;
            d.full = true;
          }
        }
        return;
      }
      case 'HA_Chassis_Group':
      case 'HA_Chassis':
        d.locality = true;
        // Decide which chassisredirect ports are active here and which patch ports reach out.
        // Rare enough to recompute everything.
        d.full = true;
        return;
      case 'MAC_Binding':
        d.mbs.add(delta.uuid);
        return;
      case 'Static_MAC_Binding':
        d.smbs.add(delta.uuid);
        return;
      case 'FDB':
        d.fdbs.add(delta.uuid);
        return;
      case 'Address_Set': {
        const was = old as unknown as sb.Address_Set | undefined;
        const now = row as unknown as sb.Address_Set | undefined;
        noteSetChange(d, 'as', d.addressSets, was, now, (r) => r.addresses);
        if (now === undefined && was !== undefined) this.plainSets.forget(was.name);
        return;
      }
      case 'Port_Group':
        // Logical flows depend on "<key>_<name>" of each of their datapaths and on "<name>".
        noteSetChange(d, 'pg', d.portGroups, old as unknown as sb.Port_Group | undefined, row as unknown as sb.Port_Group | undefined, (r) => r.ports);
        return;
      case 'Meter':
        // What the meter of that name is; flows name meters by name, so none compiles again.
        for (const r of [old, row]) if (r !== undefined) d.meters.add((r as unknown as sb.Meter).name);
        return;
      case 'Meter_Band':
        for (const m of this.sb.metersOfBand(delta.uuid)) {
          const r = this.sb.get<sb.Meter>('Meter', m);
          if (r !== undefined) d.meters.add(r.name);
        }
        return;
      default:
        return;
    }
  }

  /** Logical flows that name the port, directly or through a port group (the group's matches
   *  are filtered by the port's relatedness). */
  private markPortName(name: string, d: Dirty): void {
    d.names.add(`p:${name}`);
    for (const u of this.sb.portGroupsOfPort(name)) {
      const pg = this.sb.get<sb.Port_Group>('Port_Group', u);
      if (pg === undefined) continue;
      d.names.add(`pg:${pg.name}`);
      let by = d.groupsMarkedBy.get(pg.name);
      if (by === undefined) d.groupsMarkedBy.set(pg.name, (by = new Set()));
      by.add(name);
    }
  }

  /** What logical flows can see of a port: where it is, its key and kind, and whether it is
   *  related to and resident on this chassis. A change of anything else (another remote
   *  chassis, its MACs, up) recompiles no logical flow. */
  private lflowView(pb: sb.Port_Binding): string {
    const resident = pb.type === 'chassisredirect' ? isRedirectActiveHere(this.sb, pb, this.chassisUuid, this.view?.activeTunnels)
      : this.chassisUuid !== undefined && pb.chassis[0] === this.chassisUuid;
    return `${pb.logical_port}|${pb.datapath}|${pb.tunnel_key}|${pb.type}|${isRelatedPort(this.sb, pb, this.chassisUuid)}|${resident}`;
  }

  /** A port's own physical flows and those that read it: its patch peer and whoever names it as
   *  peer, its containers, chassisredirect ports over it, its MAC bindings (its multicast
   *  groups follow from the port: markDirtyPortsGroups); a localnet or external port feeds
   *  every port of its datapath. */
  private markPortAndNeighbours(pb: sb.Port_Binding, d: Dirty): void {
    d.ports.add(pb._uuid);
    const name = pb.logical_port;
    const peer = pb.options.get('peer');
    const peerPb = peer === undefined ? undefined : this.sb.portByName(peer);
    if (peerPb !== undefined) d.ports.add(peerPb._uuid);
    for (const u of this.sb.portsPeeringWith(name)) d.ports.add(u);
    for (const u of this.sb.portsWithParent(name)) d.ports.add(u);
    for (const u of this.sb.portsRedirecting(name)) d.ports.add(u);
    for (const mb of this.sb.macBindingsOfPort(name)) d.mbs.add(mb);
    for (const mb of this.sb.staticMacBindingsOfPort(name)) d.smbs.add(mb);
    if (pb.type === 'localnet' || pb.type === 'external' || pb.type === 'patch' || pb.type === 'l3gateway') {
      // Localnet: every remote port of the datapath leaves through it; external: the localnet
      // port's table 41 flows; patch: peer pairs feed the chassis-MAC and bridged flows.
      this.markDatapath(pb.datapath, d, false);
      // The peer side's localnet port answers for this router port's MAC (chassis-MAC flows).
      if (peerPb !== undefined) this.markDatapath(peerPb.datapath, d, false);
    }
  }

  /** Every physical source of a datapath (and with 'lflows' its logical flows too). */
  private markDatapath(dp: string, d: Dirty, lflows: boolean): void {
    for (const u of this.sb.portsOfDatapath(dp)) {
      d.ports.add(u);
      const pb = this.sb.portBinding(u);
      if (pb === undefined) continue;
      for (const mb of this.sb.macBindingsOfPort(pb.logical_port)) d.mbs.add(mb);
      for (const mb of this.sb.staticMacBindingsOfPort(pb.logical_port)) d.smbs.add(mb);
      const peer = pb.options.get('peer');
      const peerPb = peer === undefined ? undefined : this.sb.portByName(peer);
      if (peerPb !== undefined) d.ports.add(peerPb._uuid);
    }
    for (const mc of this.sb.multicastGroupsOfDatapath(dp)) d.mcs.add(mc);
    const row = this.sb.datapath(dp);
    const key = row?.tunnel_key ?? this.locality.datapaths.get(dp)?.tunnelKey;
    if (key !== undefined) for (const f of this.sb.fdbsOfDatapathKey(key)) d.fdbs.add(f);
    if (lflows) {
      // Load balancers read whether their datapaths are local, and their tunnel keys.
      for (const lf of this.sb.logicalFlowsOfDatapath(dp)) d.lflows.add(lf);
      for (const lb of this.sb.loadBalancersOfDatapath(dp)) d.lbs.add(lb);
      for (const g of this.sb.groupsOfDatapath(dp)) {
        for (const lf of this.sb.logicalFlowsOfGroup(g)) d.lflows.add(lf);
        for (const lb of this.sb.loadBalancersOfGroup(g)) d.lbs.add(lb);
      }
    }
  }

  private onViewChange(prev: LocalView, next: LocalView, d: Dirty): void {
    // Bridge mappings decide localnet ports; interface names are zone users.
    if (changedKeys(prev.localnetPatches, next.localnetPatches, () => true).length > 0) d.locality = true;
    // A BFD session up or down may change which member of an HA group is active here: rare,
    // recomputed as a change of the HA rows is.
    // A migrating port activated here by its RARP: its blocking flows go.
    for (const name of new Set([...(prev.activatedPorts ?? []), ...(next.activatedPorts ?? [])])) {
      if ((prev.activatedPorts?.has(name) === true) === (next.activatedPorts?.has(name) === true)) continue;
      const pb = this.sb.portByName(name);
      if (pb !== undefined) d.ports.add(pb._uuid);
    }
    if (!sameActiveTunnels(prev.activeTunnels, next.activeTunnels)) {
      d.locality = true;
      d.full = true;
    }
    // What the datapath supports changes every router's ct_commit, and every select's group:
    // rare, recomputed whole (as ovn-controller recomputes when the OVS features change).
    if (this.ctZeroSnatOf(prev) !== this.ctZeroSnatOf(next)) d.full = true;
    if (this.dpHashL4SymOf(prev) !== this.dpHashL4SymOf(next)) d.full = true;
    // A collector set added to or removed from the bridge: the rows with a sample action (as
    // ovn-controller 23.03 recomputes its logical flows then).
    if (!sameSampleCollectors(prev.sampleCollectors, next.sampleCollectors)) d.names.add(SAMPLE_COLLECTORS_DEP);
    if (changedKeys(prev.vifs, next.vifs, () => true).length > 0) d.zones = true;
    // VIFs: the port itself, its containers (they use its ofport), and logical flows of both.
    for (const name of changedKeys(prev.vifs, next.vifs, (a, b) => a === b)) {
      const pb = this.sb.portByName(name);
      if (pb !== undefined) this.markPortAndNeighbours(pb, d);
      for (const u of this.sb.portsWithParent(name)) d.ports.add(u);
    }
    // The MTU of a multichassis port's interface: the path MTU flows of its datapath's remote
    // ports (as ovn-controller's pflow_output_if_status_mgr_handler recomputes them all).
    for (const name of changedKeys(prev.vifMtus ?? NO_MTUS, next.vifMtus ?? NO_MTUS, (a, b) => a === b)) {
      const pb = this.sb.portByName(name);
      if (pb !== undefined && pb.additional_chassis.length > 0) this.markDatapath(pb.datapath, d, false);
    }
    // Tunnels: their decap flow, ports bound to that chassis, every local multicast group.
    const tunnels = changedKeys(prev.tunnels, next.tunnels, (a, b) => a.ofport === b.ofport && a.type === b.type && a.remoteIp === b.remoteIp);
    for (const name of tunnels) {
      d.tunnels.add(name);
      // Logical flows whose fwd_group watched (or looked for) this tunnel.
      d.names.add(`tunnel:${name}`);
      const ch = this.sb.chassisByName(name);
      if (ch !== undefined) for (const u of this.sb.portsOfChassis(ch._uuid)) d.ports.add(u);
    }
    if (tunnels.length > 0) for (const ld of this.locality.datapaths.values()) for (const mc of this.sb.multicastGroupsOfDatapath(ld.uuid)) d.mcs.add(mc);
    // Ports of HA groups reach every member's tunnel (an active-backup bundle): rare, scanned.
    if (tunnels.length > 0) {
      for (const [u, r] of this.sb.table('Port_Binding')) if ((r as unknown as sb.Port_Binding).ha_chassis_group.length > 0) d.ports.add(u);
    }
    // Bridge mappings: localnet ports of that network, and their datapaths' remote ports.
    for (const net of changedKeys(prev.localnetPatches, next.localnetPatches, (a, b) => a === b)) {
      for (const ld of this.locality.datapaths.values()) {
        for (const u of this.sb.portsOfDatapath(ld.uuid)) {
          const pb = this.sb.portBinding(u);
          if (pb !== undefined && (pb.type === 'localnet' || pb.type === 'l2gateway') && pb.options.get('network_name') === net) this.markDatapath(ld.uuid, d, false);
        }
      }
    }
  }

  private onLocalityChange(next: Locality, d: Dirty): void {
    const prev = this.locality;
    for (const [dp, ld] of next.datapaths) {
      const was = prev.datapaths.get(dp);
      if (was === undefined) this.markDatapath(dp, d, true);
      else if (!sameLocalDatapath(was, ld)) this.markDatapath(dp, d, false);
    }
    for (const dp of prev.datapaths.keys()) if (!next.datapaths.has(dp)) this.markDatapath(dp, d, true);
    this.locality = next;
  }

  private onZonesChange(next: Map<string, number>, d: Dirty): void {
    for (const name of changedZones(this.zones, next)) {
      const m = /^(.*)_(dnat|snat)$/.exec(name);
      const dp = m === null ? undefined : m[1] as string;
      if (dp !== undefined && this.sb.datapath(dp) !== undefined) {
        // Every port of the datapath loads its NAT zones, and so do patch ports entering it.
        this.markDatapath(dp, d, false);
        continue;
      }
      const pb = this.sb.portByName(name);
      if (pb !== undefined) this.markPortAndNeighbours(pb, d);
    }
    this.zones = next;
  }

  private markAll(d: Dirty): void {
    for (const u of this.sb.table('Logical_Flow').keys()) d.lflows.add(u);
    for (const u of this.sb.table('Port_Binding').keys()) d.ports.add(u);
    for (const u of this.sb.table('Multicast_Group').keys()) d.mcs.add(u);
    for (const u of this.sb.table('MAC_Binding').keys()) d.mbs.add(u);
    for (const u of this.sb.table('Static_MAC_Binding').keys()) d.smbs.add(u);
    for (const u of this.sb.table('FDB').keys()) d.fdbs.add(u);
    for (const u of this.sb.table('Load_Balancer').keys()) d.lbs.add(u);
    // Sources that no longer have a row are dropped by their recompute.
    for (const s of [...this.table.sources(), ...this.errors.keys()]) {
      const m = /^(lf|pb|mc|mb|smb|fdb|lb|tun):(.*)$/.exec(s);
      if (m === null) continue;
      const id = m[2] as string;
      ({ lf: d.lflows, pb: d.ports, mc: d.mcs, mb: d.mbs, smb: d.smbs, fdb: d.fdbs, lb: d.lbs, tun: d.tunnels } as Record<string, Set<string>>)[m[1] as string]?.add(id);
    }
    for (const name of this.view?.tunnels.keys() ?? []) d.tunnels.add(name);
  }

  // ---- Recompute ------------------------------------------------------------------------

  private recomputeDirty(d: Dirty): UpdateStats {
    if (d.full) this.counters.fullRecomputes++;
    const view = this.view as LocalView;
    // Logical flows dirty only through one address set edited in place may take its difference.
    const bySet = new Map<string, string>();
    const otherwise = new Set(d.lflows);
    for (const n of d.names) {
      const set = n.startsWith('as:') ? n.slice(3) : undefined;
      const edited = set !== undefined && (d.addressSets.get(set) ?? null) !== null;
      const quiet = n.startsWith('pg:') ? this.quietGroupEdit(n.slice(3), d) : undefined;
      for (const lf of this.depIndex.get(n) ?? []) {
        if (quiet !== undefined && this.groupOnlyFiltered(lf, quiet.key, quiet.group)) continue;
        d.lflows.add(lf);
        if (edited && !bySet.has(lf)) bySet.set(lf, set as string);
        else otherwise.add(lf);
      }
    }
    const ctx: PhysicalContext = {
      sb: this.sb, chassisUuid: this.chassisUuid, view, locality: this.locality, zones: this.zones, geneveField: this.geneveField,
      dropSampling: this.dropSampling,
    };
    // The chassis-wide default flows depend on the drop sampling alone: set once, again on a
    // full recompute (which a change of the sampling makes), and if dropped.
    if (d.full || !this.table.hasSource('default')) this.setSource('default', defaultFlows(this.dropSampling));
    for (const u of d.ports) {
      const pb = this.sb.portBinding(u);
      this.setSource(`pb:${u}`, pb === undefined ? [] : portBindingFlows(ctx, pb));
    }
    this.markDirtyPortsGroups(d);
    for (const u of d.mcs) {
      const mc = this.sb.multicastGroup(u);
      this.setSource(`mc:${u}`, mc === undefined ? [] : this.multicastFlows(ctx, mc, d.mcMembers.get(u)));
      if (mc === undefined) this.mcShares.delete(u);
    }
    for (const u of d.mbs) {
      const mb = this.sb.get<sb.MAC_Binding>('MAC_Binding', u);
      this.setSource(`mb:${u}`, mb === undefined ? [] : neighborFlows(ctx, mb, 100));
    }
    for (const u of d.smbs) {
      const smb = this.sb.get<sb.Static_MAC_Binding>('Static_MAC_Binding', u);
      this.setSource(`smb:${u}`, smb === undefined ? [] : neighborFlows(ctx, smb, smb.override_dynamic_mac ? 150 : 50));
    }
    for (const u of d.fdbs) {
      const fdb = this.sb.get<sb.FDB>('FDB', u);
      this.setSource(`fdb:${u}`, fdb === undefined ? [] : fdbFlows(ctx, fdb));
    }
    if (d.lbs.size > 0) {
      const useCtMark = lbHairpinUseCtMark([...this.sb.table('SB_Global').values()][0] as unknown as sb.SB_Global | undefined);
      for (const u of d.lbs) {
        const lb = this.sb.get<sb.Load_Balancer>('Load_Balancer', u);
        this.setSource(`lb:${u}`, lb === undefined ? [] : lbHairpinFlows(this.sb, this.locality, useCtMark, lb, this.templateVars()));
      }
    }
    for (const name of d.tunnels) this.setSource(`tun:${name}`, tunnelFlows(ctx, name));
    const memo = createCompileMemo();
    const cctx = this.compileContext(memo);
    // Sorted: conjunction and group ids are probed in a fixed order, whatever the history.
    for (const u of [...d.lflows].sort()) {
      const set = d.full || otherwise.has(u) ? undefined : bySet.get(u);
      if (set !== undefined && this.editLflowAddresses(u, set, d.addressSets.get(set) as AddressSetChange, cctx)) continue;
      this.recompileLflow(u, cctx);
    }
    this.refreshMeters(d);
    return {
      full: d.full, logicalFlows: d.lflows.size, ports: d.ports.size, multicastGroups: d.mcs.size,
      neighbors: d.mbs.size + d.smbs.size + d.fdbs.size, tunnels: d.tunnels.size,
    };
  }

  /**
   * A dirty port's groups are recomputed with it, whatever marked the port: a port is dirty when
   * an input of its flows changed, and its share of a group reads a subset of those (a container
   * port's parent VIF coming or going changes no row of it, yet its delivery here). Its kept
   * shares are set aside as stale. A group that lost the port as a member in this update is
   * recomputed now (its row changed) and drops the share then.
   */
  private markDirtyPortsGroups(d: Dirty): void {
    if (d.full) {
      this.mcShares.clear();
      return;
    }
    for (const p of d.ports) {
      for (const mc of this.sb.multicastGroupsOfPort(p)) {
        d.mcs.add(mc);
        const kept = this.mcShares.get(mc);
        const share = kept?.shares.get(p);
        if (kept === undefined || share === undefined) continue;
        kept.shares.delete(p);
        if (!kept.stale.has(p)) kept.stale.set(p, share);
      }
    }
  }

  private memberShare(ctx: PhysicalContext, basis: McGroupBasis, dp: string, port: string): McMemberShare {
    this.counters.mcMemberShares++;
    return multicastMemberShare(ctx, basis, dp, port);
  }

  /** multicastGroupFlows, from the kept shares and sums (see McShares). 'members': the group's
   *  row changed in this update, with these members coming and going. */
  private multicastFlows(ctx: PhysicalContext, mc: sb.Multicast_Group, members: MemberDiff | undefined): FlowSpec[] {
    const ld = ctx.locality.datapaths.get(mc.datapath);
    if (ld === undefined) {
      this.mcShares.delete(mc._uuid);
      return [];
    }
    const basis = mcGroupBasis(ld);
    const was = this.mcShares.get(mc._uuid);
    const usable = was !== undefined && was.dp === mc.datapath && sameBasis(was.basis, basis) ? was : undefined;
    const kept = usable !== undefined && members !== MEMBERS_UNKNOWN && this.updateMcSums(ctx, usable, mc, members) ? usable : this.sumMcShares(ctx, basis, mc, usable);
    if (kept === usable) this.counters.mcSumsUpdated++;
    else this.counters.mcSumsAdded++;
    const chassisSorted = kept.chassisSorted ??= [...kept.chassis.keys()].sort();
    const vtepSorted = kept.vtepSorted ??= [...kept.vtepChassis.keys()].sort();
    const b = kept.built;
    // Same inputs, same flows: the common member change (an unbound port, or one on a chassis
    // the group reaches already) costs no O(chassis) rebuild nor compare.
    if (b !== undefined && b.tunnelKey === mc.tunnel_key && b.local === kept.local && b.remote === kept.remote && b.chassisSorted === chassisSorted
      && b.vtepSorted === vtepSorted && b.tunnels === ctx.view.tunnels && b.geneveField === ctx.geneveField) {
      return b.flows;
    }
    const flows = multicastFlowsFrom(ctx, basis, mc, kept.local, kept.remote, chassisSorted, vtepSorted);
    kept.built = { tunnelKey: mc.tunnel_key, local: kept.local, remote: kept.remote, chassisSorted, vtepSorted, tunnels: ctx.view.tunnels, geneveField: ctx.geneveField, flows };
    return flows;
  }

  /**
   * Updates the sums for the members that changed, when all of them only name chassis (before
   * and after); returns false, with the new shares kept but the sums stale, otherwise.
   */
  private updateMcSums(ctx: PhysicalContext, kept: McShares, mc: sb.Multicast_Group, members: MemberDiff | undefined): boolean {
    const changes: [port: string, was: McMemberShare | undefined, now: McMemberShare | undefined][] = [];
    let namesOnlyChanges = true;
    const removed = new Set(members?.removed ?? []);
    for (const p of removed) {
      const was = kept.stale.get(p) ?? kept.shares.get(p);
      changes.push([p, was, undefined]);
      if (was !== undefined && !namesOnly(was)) namesOnlyChanges = false;
    }
    for (const p of members?.added ?? []) {
      const now = this.memberShare(ctx, kept.basis, mc.datapath, p);
      changes.push([p, kept.stale.get(p), now]);
      if (!namesOnly(now)) namesOnlyChanges = false;
    }
    for (const [p, was] of kept.stale) {
      if (removed.has(p) || kept.shares.has(p)) continue;
      const now = this.memberShare(ctx, kept.basis, mc.datapath, p);
      changes.push([p, was, now]);
      if (!namesOnly(was) || !namesOnly(now)) namesOnlyChanges = false;
    }
    kept.stale.clear();
    for (const [p, was, now] of changes) {
      if (namesOnlyChanges) {
        if (was !== undefined && countNames(kept.chassis, was.chassis, -1)) kept.chassisSorted = undefined;
        if (was !== undefined && countNames(kept.vtepChassis, was.vtepChassis, -1)) kept.vtepSorted = undefined;
        if (now !== undefined && countNames(kept.chassis, now.chassis, 1)) kept.chassisSorted = undefined;
        if (now !== undefined && countNames(kept.vtepChassis, now.vtepChassis, 1)) kept.vtepSorted = undefined;
      }
      if (now === undefined) kept.shares.delete(p);
      else kept.shares.set(p, now);
    }
    return namesOnlyChanges;
  }

  /** Adds the shares up again over every member, reusing the shares 'was' keeps (its stale ones
   *  are not reused); the new McShares. */
  private sumMcShares(ctx: PhysicalContext, basis: McGroupBasis, mc: sb.Multicast_Group, was: McShares | undefined): McShares {
    const reuse = was?.shares;
    const kept: McShares = {
      dp: mc.datapath, basis, shares: new Map(), stale: new Map(), local: [], remote: [],
      chassis: new Map(), vtepChassis: new Map(), chassisSorted: undefined, vtepSorted: undefined, built: undefined,
    };
    const local: OfAction[] = [];
    const remote: OfAction[] = [];
    // In the set's order (sorted by uuid, as OVSDB keeps sets): the order of the actions.
    for (const p of mc.ports) {
      const share = reuse?.get(p) ?? this.memberShare(ctx, basis, mc.datapath, p);
      kept.shares.set(p, share);
      for (const a of share.local) local.push(a);
      for (const a of share.remote) remote.push(a);
      countNames(kept.chassis, share.chassis, 1);
      countNames(kept.vtepChassis, share.vtepChassis, 1);
    }
    kept.local = local;
    kept.remote = remote;
    this.mcShares.set(mc._uuid, kept);
    return kept;
  }

  /**
   * Brings meterById up to date for the ids whose name came or went and the names whose SB
   * Meter changed (every name on a full recompute), and marks the ids whose meter changed.
   */
  private refreshMeters(d: Dirty): void {
    const ids = new Set(this.meters.takeChanged());
    if (d.full) for (const [, e] of this.meters.entries()) ids.add(e.id);
    for (const name of d.meters) {
      const id = this.meters.idOf(name);
      if (id !== undefined) ids.add(id);
    }
    for (const id of ids) {
      const name = this.meters.nameOf(id);
      const want = name === undefined ? undefined : meterSpecOf(id, name, this.sb);
      const have = this.meterById.get(id);
      if (deepEqual(have, want)) continue;
      if (want === undefined) this.meterById.delete(id);
      else this.meterById.set(id, want);
      this.dirtyMeters.add(id);
    }
  }

  private setSource(source: string, flows: readonly FlowSpec[]): void {
    this.errors.delete(source);
    this.table.setSource(source, flows);
  }

  /**
   * A port group's row `name`, changed in place, whose ports that came or went are unrelated to
   * this chassis, were so before, and were all there is to the change (no port that marked the
   * group was or is related): its datapath's key and the group's name, or undefined. A logical
   * flow that names such a group only where it keeps the matches of related ports alone (see
   * groupOnlyFiltered) makes the same flows from it before and after.
   */
  private quietGroupEdit(name: string, d: Dirty): { readonly key: number; readonly group: string } | undefined {
    const change = d.portGroups.get(name);
    // The datapath's own group (OVN 23.03 names it "<key>_<name>"): all its ports are the
    // datapath's, and with two or more before and after, the match's terms keep their shape.
    const m = /^(\d+)_(.+)$/.exec(name);
    if (change === undefined || change === null || m === null || change.before.length < 2 || change.after.length < 2) return undefined;
    const unrelated = (port: string): boolean => {
      const r = d.portsRelated.get(port);
      if (r !== undefined) return !r.before && !r.now;
      const pb = this.sb.portByName(port);
      return pb !== undefined && !isRelatedPort(this.sb, pb, this.chassisUuid);
    };
    const { added, removed } = addressSetDiff(change);
    if (![...added, ...removed].every(unrelated)) return undefined;
    for (const port of d.groupsMarkedBy.get(name) ?? []) {
      const r = d.portsRelated.get(port);
      if (r === undefined || r.before || r.now) return undefined;
    }
    return { key: Number(m[1]), group: m[2] as string };
  }

  /**
   * Whether logical flow `uuid` names port group `group` only where the compile keeps related
   * ports' matches alone (groupFiltered), on a datapath with key `key` among them.
   */
  private groupOnlyFiltered(uuid: string, key: number, group: string): boolean {
    const row = this.sb.get<sb.Logical_Flow>('Logical_Flow', uuid);
    return row !== undefined && this.groupFiltered(row, group) && this.datapathKeysOf(row).includes(key);
  }

  /**
   * Whether the row names port group `group` once, as `inport == @group` in the ingress
   * pipeline or `outport == @group` in the egress one, on switch datapaths only: there the
   * compile keeps only the matches of ports related to this chassis (compile/logical-flow.ts,
   * keepMatch), and the others' only count towards the clause's number of alternatives.
   */
  private groupFiltered(row: sb.Logical_Flow, group: string): boolean {
    if (/!\s*\(/.test(row.match) || row.actions.includes(`@${group}`)) return false;
    const port = row.pipeline === 'ingress' ? 'inport' : 'outport';
    const esc = group.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const all = row.match.match(new RegExp(`@${esc}(?![A-Za-z0-9_.:])`, 'g')) ?? [];
    const filtered = row.match.match(new RegExp(`(?<![A-Za-z0-9_.])${port}\\s*==\\s*@${esc}(?![A-Za-z0-9_.:])`, 'g')) ?? [];
    if (all.length !== 1 || filtered.length !== 1) return false;
    const dps = this.datapathsOf(row);
    return dps.length > 0 && dps.every((dp) => this.sb.datapath(dp)?.external_ids.has('logical-switch') === true);
  }

  /**
   * A port group's ports as the edit's compiles may read them where groupFiltered holds: the
   * related ones (and any without a binding), and the first two others, which keep the clause's
   * number of alternatives at two or more, as the whole group has, while the matches they make
   * are left out anyway. A group of thousands on a shared switch is then a few ports per compile.
   */
  private relatedPart(ports: readonly string[]): readonly string[] {
    const out: string[] = [];
    let others = 0;
    for (const p of ports) {
      const pb = this.sb.portByName(p);
      if (pb === undefined || isRelatedPort(this.sb, pb, this.chassisUuid)) out.push(p);
      else if (others < 2) {
        others++;
        out.push(p);
      }
    }
    return out;
  }

  /**
   * Brings a logical flow's flows up to date with an edit of one address set it names, by the
   * flows of the addresses added and removed alone (see address-set-edits.ts for when that is
   * the same as compiling it whole). Returns false, having changed nothing, when it cannot.
   */
  private editLflowAddresses(uuid: string, set: string, change: AddressSetChange, ctx: FlowCompileContext): boolean {
    const source = `lf:${uuid}`;
    const row = this.sb.get<sb.Logical_Flow>('Logical_Flow', uuid);
    if (row === undefined || this.sharedCache !== undefined || !this.table.hasSource(source) || this.errors.has(source)) return false;
    // Two members or more before and after: the match's terms keep the shape they have now.
    if (change.before.length < 2 || change.after.length < 2 || this.groupsOf.has(source)) return false;
    if (!this.inOutPortRelated(row) || !setFieldIsolated(row.match, set, this.symtab)) return false;
    const { added, removed } = addressSetDiff(change);
    if (removed.length > 0 && !(removed.every(isPlainAddress) && this.plainSets.plainAfter(set, change))) return false;
    const stand = sentinels(change.after[0] as string, change.before, change.after);
    if (stand === undefined) return false;
    // No memo: it would give back the row compiled with the whole set. Conjunction ids: those
    // the row holds now, for as many conjunctions on each datapath, or the edit is off.
    const { memo: _memo, ...rest } = ctx;
    // Groups named only where related ports count are read as their related part: the four
    // compiles below then cost what the related ports do, not the whole group.
    const parts = new Map<readonly string[], readonly string[]>();
    const filtered = new Map<string, boolean>();
    const reduced = (group: string, ports: readonly string[] | undefined): readonly string[] | undefined => {
      if (ports === undefined || ports.length <= 2) return ports;
      let f = filtered.get(group);
      if (f === undefined) filtered.set(group, (f = this.groupFiltered(row, group)));
      if (!f) return ports;
      let part = parts.get(ports);
      if (part === undefined) parts.set(ports, (part = this.relatedPart(ports)));
      return part;
    };
    let conjMismatch = false;
    const compileWith = (addresses: readonly string[]): FlowSpec[] | undefined => {
      const r = compileLogicalFlow(row as unknown as LogicalFlowRow, {
        ...rest,
        addressSet: (n) => (n === set ? addresses : rest.addressSet?.(n)),
        portGroup: (n) => reduced(n, rest.portGroup?.(n)),
        portGroupIn: (dp, n) => reduced(n, rest.portGroupIn !== undefined ? rest.portGroupIn(dp, n) : rest.portGroup?.(n)),
        conjIdOfs: (n, lf, dp) => {
          const first = this.conjIds.held(`${lf}|${dp}`, n);
          if (first === undefined) conjMismatch = true;
          return first === undefined ? 0 : first - 1;
        },
      });
      return 'error' in r || r.groups.length > 0 || conjMismatch ? undefined : r.flows;
    };
    if (compileWith([])?.length !== 0) return false;
    // What the match makes of any two members besides the members' own flows (the other
    // clauses of a conjunction, its conj_id flow) is made with two stand-in addresses; an
    // address's flows are what its compile with one stand-in has beyond that.
    const frame = compileWith(stand);
    const add = added.length === 0 ? [] : compileWith([...added, stand[0] as string]);
    const remove = removed.length === 0 ? [] : compileWith([...removed, stand[0] as string]);
    if (frame === undefined || add === undefined || remove === undefined) return false;
    const inFrame = new Set(frame.map((f) => flowKey(f.table, f.priority, canonicalMatch(f.match))));
    const beyond = (flows: readonly FlowSpec[]): FlowSpec[] => flows.filter((f) => !inFrame.has(flowKey(f.table, f.priority, canonicalMatch(f.match))));
    const toAdd = beyond(add);
    const toRemove = beyond(remove);
    // Each flow must be an address's own, matching it exactly: not one of the frame's that two
    // stand-ins did not make (a conjunction's other clauses, when no member made them before).
    if (!toAdd.every(matchesOneOf(added)) || !toRemove.every(matchesOneOf(removed))) return false;
    if (!this.table.editSource(source, toAdd, toRemove)) return false;
    this.counters.addressSetEdits++;
    return true;
  }

  private recompileLflow(uuid: string, ctx: FlowCompileContext): void {
    const source = `lf:${uuid}`;
    const row = this.sb.get<sb.Logical_Flow>('Logical_Flow', uuid);
    const used = new Set<string>();
    /** Chassis whose tunnel fwd_group looked up: the flow depends on those tunnels too. */
    const tunnelsRead = new Set<string>();
    const groupsUsed: string[] = [];
    const metersUsed = new Set<string>();
    let meterRefused: string | undefined;
    let flows: FlowSpec[] = [];
    let error: string | undefined;
    const viaCache = row !== undefined && this.inOutPortRelated(row) ? this.compileThroughCache(row, ctx, used) : undefined;
    if (viaCache !== undefined) {
      this.counters.logicalFlowsCompiled++;
      flows = viaCache;
    } else if (row !== undefined && this.inOutPortRelated(row)) {
      this.counters.logicalFlowsCompiled++;
      const r = compileLogicalFlow(row as unknown as LogicalFlowRow, {
        ...ctx,
        conjIdOfs: (n, lf, dp) => {
          const owner = `${lf}|${dp}`;
          used.add(owner);
          const first = this.conjIds.allocate(owner, n);
          return first === undefined ? 0 : first - 1;
        },
        meterId: (name) => {
          const id = this.meters.use(name);
          if (id === undefined) meterRefused ??= name;
          else metersUsed.add(name);
          return id;
        },
        tunnelOfport: (dp, name) => this.tunnelOfport(dp, name, tunnelsRead),
      });
      if ('error' in r) error = r.error;
      else if (meterRefused !== undefined) error = `Logical_Flow ${uuid}: no meter id for ${JSON.stringify(meterRefused)}: ${METER_IDS_MAX} meters are in use.`;
      else {
        flows = r.flows;
        for (const g of r.groups) groupsUsed.push(g.description);
      }
    }
    const deps = row === undefined ? [] : lflowDeps(row, this.datapathKeysOf(row), this.rowNames);
    this.setDeps(uuid, tunnelsRead.size === 0 ? deps : [...deps, ...[...tunnelsRead].map((c) => `tunnel:${c}`)]);
    for (const owner of this.conjOwners.get(uuid) ?? []) if (!used.has(owner)) this.conjIds.release(owner);
    if (used.size > 0) this.conjOwners.set(uuid, used);
    else this.conjOwners.delete(uuid);
    this.setGroups(source, error === undefined ? groupsUsed : []);
    this.meters.setUses(source, error === undefined ? metersUsed : []);
    this.setSource(source, error === undefined ? flows : []);
    if (error !== undefined) this.errors.set(source, error);
  }

  /**
   * The row compiled through the shared cache (see compile-cache.ts), or undefined when the
   * row cannot go through it (residency or groups in its text, a row or datapath without a
   * version, a compile error: the regular path then compiles it, and reports the error).
   */
  private compileThroughCache(row: sb.Logical_Flow, ctx: FlowCompileContext, used: Set<string>): FlowSpec[] | undefined {
    const cache = this.sharedCache;
    // Residency, template variables, meter ids, tunnels and collector sets are this chassis's own: such rows are not shared.
    if (cache === undefined || /is_chassis_resident|ct_lb|\^/.test(row.match) || /is_chassis_resident|ct_lb|fwd_group|\bselect\b|\^|set_meter|meter\s*=|sample/.test(row.actions)
      || row.controller_meter.length > 0) return undefined;
    const dps = [...row.logical_datapath];
    for (const g of row.logical_dp_group) {
      const group = this.sb.dpGroup(g);
      if (group === undefined) return undefined;
      dps.push(...group.datapaths);
    }
    const { isRelatedPort, isLocalDatapath: _local, conjIdOfs: _conj, ...shared } = ctx;
    const portReg = row.pipeline === 'ingress' ? 'reg14' : 'reg15';
    const out: FlowSpec[] = [];
    for (const dp of dps) {
      if (!this.locality.datapaths.has(dp)) continue;
      const dpRow = this.sb.datapath(dp);
      if (dpRow === undefined) return undefined;
      const key = this.cacheKey(row, dpRow);
      if (key === undefined) return undefined;
      let c = cache.get(row, key);
      if (c === undefined) {
        const r = compileLogicalFlow({ ...row, logical_datapath: [dp], logical_dp_group: [] } as unknown as LogicalFlowRow, { ...shared, conjIdOfs: () => 0 });
        if ('error' in r) return undefined;
        c = { flows: r.flows, conjunctionsN: r.conjunctionsN };
        cache.set(row, key, c);
      }
      let ofs = 0;
      if (c.conjunctionsN > 0) {
        const owner = `${row._uuid}|${dp}`;
        used.add(owner);
        const first = this.conjIds.allocate(owner, c.conjunctionsN);
        ofs = first === undefined ? 0 : first - 1;
      }
      const related = isRelatedPort ?? ((): boolean => true);
      out.push(...adaptCached(c, portReg, dpRow.external_ids.has('logical-switch'), (k) => related(dp, k), ofs));
    }
    return out;
  }

  /** Everything a row's compile on one datapath read, by _version; undefined if any row has none. */
  private cacheKey(row: sb.Logical_Flow, dp: sb.Datapath_Binding): string | undefined {
    const v = (r: { readonly _version?: string } | undefined): string | undefined => (r === undefined ? '-' : r._version === '' ? undefined : r._version);
    const parts: (string | undefined)[] = [v(row), v(dp), String(this.ctZeroSnatOf(this.view)), String(this.dpHashL4SymOf(this.view))];
    for (const dep of lflowDeps(row, [dp.tunnel_key], this.rowNames)) {
      const name = dep.slice(dep.indexOf(':') + 1);
      if (dep.startsWith('p:')) parts.push(v(this.sb.portByName(name)), v(this.sb.multicastGroupByName(dp._uuid, name)));
      else if (dep.startsWith('as:')) parts.push(v(this.sb.addressSet(name)));
      else {
        // A port group's compile reads its member ports' bindings (their tunnel keys), which
        // can change while the group's row does not.
        const pg = this.sb.portGroup(name);
        parts.push(v(pg));
        for (const port of pg?.ports ?? []) parts.push(v(this.sb.portByName(port)));
      }
    }
    if (parts.some((p) => p === undefined)) return undefined;
    return `${dp._uuid}|${parts.join('|')}`;
  }

  /** The datapaths a logical flow applies to: its own, or its group's (none while the group is unknown). */
  private datapathsOf(row: sb.Logical_Flow): string[] {
    const dps = [...row.logical_datapath];
    for (const g of row.logical_dp_group) dps.push(...(this.sb.dpGroup(g)?.datapaths ?? []));
    return dps;
  }

  /** Tunnel keys of the datapaths a logical flow applies to (directly and through its group). */
  private datapathKeysOf(row: sb.Logical_Flow): number[] {
    const keys: number[] = [];
    for (const dp of this.datapathsOf(row)) {
      const k = this.sb.datapath(dp)?.tunnel_key;
      if (k !== undefined) keys.push(k);
    }
    return keys;
  }

  /** A flow tagged in_out_port is for a port that exists and is related to this chassis. */
  private inOutPortRelated(row: sb.Logical_Flow): boolean {
    const io = row.tags.get('in_out_port');
    if (io === undefined) return true;
    const pb = this.sb.portByName(io);
    return pb !== undefined && isRelatedPort(this.sb, pb, this.chassisUuid);
  }

  private setDeps(lflow: string, deps: readonly string[]): void {
    for (const n of this.deps.get(lflow) ?? []) {
      const s = this.depIndex.get(n);
      s?.delete(lflow);
      if (s?.size === 0) this.depIndex.delete(n);
    }
    if (deps.length === 0) {
      this.deps.delete(lflow);
      return;
    }
    this.deps.set(lflow, deps);
    for (const n of deps) {
      let s = this.depIndex.get(n);
      if (s === undefined) this.depIndex.set(n, (s = new Set()));
      s.add(lflow);
    }
  }

  private setGroups(source: string, descs: readonly string[]): void {
    const prev = this.groupsOf.get(source) ?? [];
    const next = [...new Set(descs)];
    for (const desc of prev) {
      if (next.includes(desc)) continue;
      const g = this.groups.get(desc);
      if (g === undefined) continue;
      g.users.delete(source);
      if (g.users.size === 0) {
        this.groups.delete(desc);
        this.groupIds.release(desc);
        this.groupById.delete(g.id);
        this.dirtyGroups.add(g.id);
      }
    }
    for (const desc of next) this.groups.get(desc)?.users.add(source);
    if (next.length > 0) this.groupsOf.set(source, next);
    else this.groupsOf.delete(source);
    // Groups allocated during a compile that no source ended up using.
    for (const [desc, g] of this.groups) {
      if (g.users.size > 0) continue;
      this.groups.delete(desc);
      this.groupIds.release(desc);
      this.groupById.delete(g.id);
      this.dirtyGroups.add(g.id);
    }
  }

  /**
   * tunnel_ofport_cb: the tunnel to the chassis port `name` of datapath `dp` is bound on, by the
   * chassis's name (none to this chassis itself). The chassis looked up goes into `read`.
   */
  private tunnelOfport(dp: string, name: string, read: Set<string>): number | undefined {
    const pb = this.sb.portByName(name);
    const chassis = pb === undefined || pb.datapath !== dp ? undefined : pb.chassis[0];
    if (chassis === undefined) return undefined;
    const ch = this.sb.get<sb.Chassis>('Chassis', chassis);
    if (ch === undefined) return undefined;
    read.add(ch.name);
    return this.view?.tunnels.get(ch.name)?.ofport;
  }

  private groupId(desc: string): number | undefined {
    const have = this.groups.get(desc);
    if (have !== undefined) return 'error' in have.spec ? undefined : have.id;
    const id = this.groupIds.allocate(desc, 1);
    if (id === undefined) return undefined;
    const spec = parseGroupDescription(id, desc);
    this.groups.set(desc, { id, spec, users: new Set() });
    if ('error' in spec) return undefined;
    this.groupById.set(id, spec);
    this.dirtyGroups.add(id);
    return id;
  }

  /** This chassis's template variables (its Chassis_Template_Var row). */
  private templateVars(): ReadonlyMap<string, string> {
    return this.sb.templateVarsOf(this.view?.chassis ?? '');
  }

  /** The compile context over the live store. The memo lives for one update only: within it
   *  nothing the compiler reads changes. */
  private compileContext(memo: CompileMemo): FlowCompileContext {
    const sbs = this.sb;
    const chassisUuid = this.chassisUuid;
    const locality = this.locality;
    const activeTunnels = this.view?.activeTunnels;
    return {
      symtab: this.symtab,
      memo,
      templateVars: this.templateVars(),
      ctZeroSnat: this.ctZeroSnatOf(this.view),
      dpHashL4Sym: this.dpHashL4SymOf(this.view),
      ...(this.view?.sampleCollectors === undefined ? {} : { sampleCollectors: this.view.sampleCollectors }),
      datapath: (u): DatapathInfo | undefined => {
        const d = sbs.datapath(u);
        if (d === undefined) return undefined;
        return { tunnelKey: d.tunnel_key, isSwitch: d.external_ids.has('logical-switch'), ...(d.external_ids.has('snat-ct-zone') ? { snatCtZone: true } : {}) };
      },
      isLocalDatapath: (u) => locality.datapaths.has(u),
      dpGroup: (g) => sbs.dpGroup(g)?.datapaths,
      lookupPort: (dp, name) => {
        const pb = sbs.portByName(name);
        if (pb !== undefined && pb.datapath === dp) return pb.tunnel_key;
        return sbs.multicastGroupByName(dp, name)?.tunnel_key;
      },
      addressSet: (n) => sbs.addressSet(n)?.addresses,
      portGroup: (n) => sbs.portGroup(n)?.ports,
      portGroupIn: (dp, n) => {
        const key = sbs.datapath(dp)?.tunnel_key;
        return (key === undefined ? undefined : sbs.portGroup(`${key}_${n}`)?.ports) ?? sbs.portGroup(n)?.ports;
      },
      isChassisResident: (port) => {
        const pb = sbs.portByName(port);
        if (pb === undefined) return false;
        if (pb.type === 'chassisredirect') return isRedirectActiveHere(sbs, pb, chassisUuid, activeTunnels);
        return chassisUuid !== undefined && pb.chassis[0] === chassisUuid;
      },
      isRelatedPort: (dp, key) => {
        const pb = sbs.portByKey(dp, key);
        return pb !== undefined && isRelatedPort(sbs, pb, chassisUuid);
      },
      groupId: (desc) => this.groupId(desc),
      // recompileLflow overrides this to note the tunnels read; other compiles see the same ports.
      tunnelOfport: (dp, name) => this.tunnelOfport(dp, name, new Set()),
      // The ids the rows hold (a compile that may allocate overrides this: recompileLflow).
      meterId: (name) => this.meters.idOf(name),
    };
  }

  /** Logical ports bound here whose VIF (a container port: its parent's) is on the bridge and
   *  whose table-0 flow is desired. */
  attachedPorts(): string[] {
    const out: string[] = [];
    const view = this.view;
    if (view === undefined || this.chassisUuid === undefined) return out;
    for (const u of this.sb.portsOfChassis(this.chassisUuid)) {
      const pb = this.sb.portBinding(u);
      const parent = pb?.parent_port[0];
      const vif = parent !== undefined && parent !== '' ? parent : pb?.logical_port;
      if (pb === undefined || vif === undefined || !isBoundHere(pb, this.chassisUuid) || !view.vifs.has(vif)) continue;
      if (this.table.flowsOf(`pb:${u}`).some((f) => f.table === 0)) out.push(pb.logical_port);
    }
    return out.sort();
  }
}

function changedKeys<V>(a: ReadonlyMap<string, V>, b: ReadonlyMap<string, V>, same: (x: V, y: V) => boolean): string[] {
  const out: string[] = [];
  for (const [k, v] of a) {
    const w = b.get(k);
    if (w === undefined || !same(v, w)) out.push(k);
  }
  for (const k of b.keys()) if (!a.has(k)) out.push(k);
  return out;
}

/** Whether two member lists name the same local datapaths. */
function sameLocalMembers(a: readonly string[], b: readonly string[], locality: Locality): boolean {
  const local = new Set<string>();
  for (const dp of a) if (locality.datapaths.has(dp)) local.add(dp);
  let n = 0;
  for (const dp of b) {
    if (!locality.datapaths.has(dp)) continue;
    if (!local.has(dp)) return false;
    n++;
  }
  return n === local.size;
}
