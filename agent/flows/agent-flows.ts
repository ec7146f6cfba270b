// The flow side of the agent, as the runtime calls it: hand it each SB update (in revision
// order, never two at once) and the current LocalView; it recomputes what the update touched,
// installs the difference into the switch in one atomic batch, and resolves once the switch
// confirmed it. The runtime acknowledges the revision (and its nb_cfg) only after apply
// resolved without errors, so `--wait=hv` means "every chassis has the flows".
//
// After a new switch connection (or a failed batch) the next apply reconciles: the switch's
// flows, groups and meters are dumped and only the difference is sent, so a restarted agent or
// switch never goes through a moment without flows; with ovn-ofctrl-wait-before-clear that first
// install after a new connection waits that long (setWaitBeforeClearMs). (ovn-controller instead deletes every meter
// and adds them again after a reconnection; in Open vSwitch deleting a meter deletes the flows
// that meter through it, so that would both drop the QoS flows for a moment and leave our
// record of the switch's flows wrong.)

import assert from 'node:assert';
import type { LocalView } from '../local-view.js';
import { usesControllerMeter } from '../openflow/reconcile.js';
import type { FlowSpec, GroupSpec, MeterSpec } from '../openflow/types.js';
import type { SbUpdate } from '../sb-source.js';
import { DesiredFlows, type DesiredFlowsOptions, type UpdateStats } from './desired.js';
import { deepEqual, sameFlowContent } from './flow-table.js';
import { batchSize, type FlowSwitch, type SwitchBatch } from './switch.js';

export type AgentFlowsOptions = Omit<DesiredFlowsOptions, 'geneveField'> & {
  /** ovn-ofctrl-wait-before-clear, in ms (setWaitBeforeClearMs changes it); default 0. */
  readonly waitBeforeClearMs?: number;
  /** The clock of that wait (tests inject one). */
  readonly now?: () => number;
};

/** ApplyResult.errors holds at most this many messages about flows that could not be computed
 *  (the last one then says how many more), plus one about a failed install. */
export const APPLY_ERRORS_MAX = 100;

export interface ApplyResult {
  /** Logical ports bound to this chassis whose VIF flows are installed in the switch now. */
  readonly installedPorts: ReadonlySet<string>;
  /** Flows installed in the switch now (as far as this agent knows). */
  readonly flows: number;
  /** What went wrong: flows that could not be computed (each names its SB row) and a failed
   *  install. Empty = the update is fully installed and may be acknowledged. */
  readonly errors: readonly string[];
  /** Whether the switch was reconciled (dump and difference) rather than sent a batch. */
  readonly reconciled: boolean;
  /**
   * Set when nothing was installed because the first install after a new switch connection
   * waits until then (ovn-ofctrl-wait-before-clear): apply again at that time.
   */
  readonly waitingUntilMs?: number;
  /** Flow, group and meter changes sent. */
  readonly changes: number;
  readonly stats: UpdateStats;
}

export class AgentFlows {
  private readonly desired: DesiredFlows;
  /** What the switch holds, as far as we know: key → flow, id → group. */
  private readonly installed = new Map<string, FlowSpec>();
  private readonly installedGroups = new Map<number, GroupSpec>();
  private readonly installedMeters = new Map<number, MeterSpec>();
  private syncedGeneration: number | undefined;
  private installedPorts: ReadonlySet<string> = new Set();
  private busy = false;
  /** The zones whose flush the switch confirmed (or that were restored at start): user → zone. */
  private zonesFlushed: Map<string, number>;
  private waitBeforeClearMs: number;
  private readonly now: () => number;
  /** The switch generation (connection) whose wait was started, and when it ends. */
  private waitGeneration: number | undefined;
  private waitEndsMs = 0;

  constructor(private readonly sw: FlowSwitch, opts: AgentFlowsOptions = {}) {
    const { waitBeforeClearMs, now, ...desired } = opts;
    this.desired = new DesiredFlows({ ...desired, geneveField: sw.geneveField });
    this.zonesFlushed = new Map(opts.ctZones ?? []);
    this.waitBeforeClearMs = waitBeforeClearMs ?? 0;
    this.now = now ?? Date.now;
  }

  /**
   * ovn-ofctrl-wait-before-clear: after a new switch connection the first install waits this
   * long, while updates are computed, so that it is made from a complete computation (a
   * restarted agent's first views are partial: ports not yet claimed, their datapaths not yet
   * received) and does not delete flows the switch still needs. A wait in progress keeps its end,
   * as in ovn-controller, unless the value becomes 0 (then it ends at once).
   */
  setWaitBeforeClearMs(ms: number): void {
    assert(Number.isInteger(ms) && ms >= 0, `wait-before-clear must be a count of ms, not ${ms}`);
    this.waitBeforeClearMs = ms;
  }

  /** When the first install on the current connection may happen; undefined: now. */
  private waitingUntil(): number | undefined {
    const generation = this.sw.generation;
    if (this.waitGeneration !== generation) {
      this.waitGeneration = generation;
      this.waitEndsMs = this.now() + this.waitBeforeClearMs;
    }
    if (this.waitBeforeClearMs === 0 || this.syncedGeneration === generation) return undefined;
    return this.now() < this.waitEndsMs ? this.waitEndsMs : undefined;
  }

  /** The ct zones in force; persist them to keep zones across restarts (ctZones option). */
  ctZones(): ReadonlyMap<string, number> {
    return this.desired.ctZones();
  }

  /**
   * The meters and groups the flows in force use, by name, with their ids: what
   * ovn-controller's meter-table-list and group-table-list print (its extend tables).
   */
  extendTables(): { readonly meters: ReadonlyMap<string, number>; readonly groups: ReadonlyMap<string, number> } {
    return { meters: this.desired.meterTable(), groups: this.desired.groupTable() };
  }

  /** The next apply recomputes every flow and installs the difference. */
  forceRecompute(): void {
    this.desired.forceRecompute();
  }

  /** SB_Global.nb_cfg of the rows applied so far: what the runtime acknowledges with the revision. */
  get nbCfg(): number {
    return this.desired.sb.nbCfg;
  }

  /** The engine underneath (read-only use: tests, diagnostics). */
  get engine(): DesiredFlows {
    return this.desired;
  }

  /**
   * Applies one SB update (null: only the LocalView changed) and installs the result. Calls
   * must not overlap. Never rejects for an expected failure (a switch that refused or went
   * away): that is reported in errors, and the next apply reconciles.
   */
  apply(u: SbUpdate | null, view: LocalView): Promise<ApplyResult> {
    return this.run(u, view);
  }

  /** apply(null, view): only the LocalView changed. (A separate name, as `x.apply(null, …)`
   *  reads as Function.prototype.apply to linters and people alike.) */
  applyView(view: LocalView): Promise<ApplyResult> {
    return this.run(null, view);
  }

  private async run(u: SbUpdate | null, view: LocalView): Promise<ApplyResult> {
    assert(!this.busy, 'AgentFlows.apply calls must not overlap');
    this.busy = true;
    try {
      let prepared: unknown;
      try {
        await this.sw.prepare();
      } catch (err) {
        prepared = err;
      }
      this.desired.setGeneveField(this.sw.geneveField);
      const stats = this.desired.update(u, view);
      const errors: string[] = [];
      const failed = this.desired.sourceErrors();
      for (const e of failed.values()) {
        if (errors.length === APPLY_ERRORS_MAX - 1 && failed.size > APPLY_ERRORS_MAX - 1) {
          errors.push(`… and ${failed.size - errors.length} more flows that could not be computed`);
          break;
        }
        errors.push(e);
      }
      let reconciled = false;
      let changes = 0;
      try {
        if (prepared !== undefined) throw prepared;
        const waitingUntilMs = this.waitingUntil();
        if (waitingUntilMs !== undefined) return { installedPorts: this.installedPorts, flows: this.installed.size, errors, reconciled, changes, stats, waitingUntilMs };
        await this.flushZoneChanges();
        if (this.syncedGeneration !== this.sw.generation) {
          reconciled = true;
          changes = await this.reconcile();
        } else {
          changes = await this.installDifference();
        }
        this.installedPorts = new Set(this.desired.attachedPorts());
      } catch (err) {
        // The switch state is unknown now: reconcile next time.
        this.syncedGeneration = undefined;
        errors.push(`install failed: ${err instanceof Error ? err.message : String(err)}`);
      }
      return { installedPorts: this.installedPorts, flows: this.installed.size, errors, reconciled, changes, stats };
    } finally {
      this.busy = false;
    }
  }

  /**
   * Flushes every zone given to a new user or given up since the last flush, before the flows
   * of its new user go in. Restored zones are not flushed: their users and connections are the
   * same. A failed flush is tried again with the next apply (the install fails meanwhile, so
   * nothing is acknowledged).
   */
  private async flushZoneChanges(): Promise<void> {
    const now = this.desired.ctZones();
    const zones = new Set<number>();
    for (const [user, zone] of now) if (this.zonesFlushed.get(user) !== zone) zones.add(zone);
    for (const [user, zone] of this.zonesFlushed) if (now.get(user) !== zone) zones.add(zone);
    if (zones.size === 0) return;
    await this.sw.flushCtZones([...zones].sort((a, b) => a - b));
    this.zonesFlushed = new Map(now);
  }

  private async reconcile(): Promise<number> {
    const generation = this.sw.generation;
    const flows: FlowSpec[] = [];
    this.desired.table.takeDirty();
    this.desired.takeDirtyGroups();
    this.desired.takeDirtyMeters();
    for (const [, f] of this.desired.table.flows()) flows.push(f);
    const groups = [...this.desired.groupSpecs().values()];
    const meters = [...this.desired.meterSpecs().values()];
    const r = await this.sw.reconcile({ flows, groups, meters });
    this.installed.clear();
    for (const [k, f] of this.desired.table.flows()) this.installed.set(k, f);
    this.installedGroups.clear();
    for (const g of groups) this.installedGroups.set(g.groupId, g);
    this.installedMeters.clear();
    for (const m of meters) this.installedMeters.set(m.meterId, m);
    this.desired.settleMeters();
    this.syncedGeneration = generation;
    return r.added + r.modified + r.deleted;
  }

  private async installDifference(): Promise<number> {
    const keys = this.desired.table.takeDirty();
    const groupIds = this.desired.takeDirtyGroups();
    const meterIds = this.desired.takeDirtyMeters();
    const putMeters: MeterSpec[] = [];
    const deleteMeters: number[] = [];
    const addedMeters = new Set<number>();
    const meterSpecs = this.desired.meterSpecs();
    for (const id of meterIds) {
      const want = meterSpecs.get(id);
      const have = this.installedMeters.get(id);
      if (want === undefined) {
        if (have !== undefined) deleteMeters.push(id);
      } else if (have === undefined || !deepEqual(have, want)) {
        putMeters.push(want);
        if (have === undefined) addedMeters.add(id);
      }
    }
    const putGroups: GroupSpec[] = [];
    const deleteGroups: number[] = [];
    const specs = this.desired.groupSpecs();
    for (const id of groupIds) {
      const want = specs.get(id);
      const have = this.installedGroups.get(id);
      if (want === undefined) {
        if (have !== undefined) deleteGroups.push(id);
      } else if (have === undefined || !deepEqual(have, want)) {
        putGroups.push(want);
      }
    }
    const deleteFlows: FlowSpec[] = [];
    const modifyFlows: FlowSpec[] = [];
    const addFlows: FlowSpec[] = [];
    const next = new Map<string, FlowSpec | undefined>();
    for (const k of keys) {
      const want = this.desired.table.flow(k);
      const have = this.installed.get(k);
      if (want === undefined) {
        if (have !== undefined) deleteFlows.push(have);
      } else if (have === undefined || have.cookie !== want.cookie) {
        addFlows.push(want);
      } else if (!sameFlowContent(have, want)) {
        modifyFlows.push(want);
      } else {
        continue;
      }
      next.set(k, want);
    }
    // Open vSwitch binds a controller() to its meter when the flow is installed: a flow already
    // installed whose controller() names a meter added now is sent again to pick it up (an ACL
    // logged through a meter the CMS creates after the ACL).
    if (addedMeters.size > 0) {
      for (const [k, f] of this.installed) {
        if (!next.has(k) && usesControllerMeter(f.actions, addedMeters)) modifyFlows.push(f);
      }
    }
    const batch: SwitchBatch = { putMeters, putGroups, deleteFlows, modifyFlows, addFlows, deleteGroups, deleteMeters };
    const n = batchSize(batch);
    // A refused batch changed no flow; the caller then reconciles everything next time.
    if (n > 0) await this.sw.install(batch);
    for (const [k, f] of next) {
      if (f === undefined) this.installed.delete(k);
      else this.installed.set(k, f);
    }
    for (const g of putGroups) this.installedGroups.set(g.groupId, g);
    for (const id of deleteGroups) this.installedGroups.delete(id);
    for (const m of putMeters) this.installedMeters.set(m.meterId, m);
    for (const id of deleteMeters) this.installedMeters.delete(id);
    this.desired.settleMeters();
    return n;
  }
}
