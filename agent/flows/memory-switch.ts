// A FlowSwitch that is a table in memory: the same contract as OfSwitch (atomic batches, a group
// must exist while a flow outputs to it, a meter while a flow meters through it, a failed batch
// changes nothing), cheap enough that one process holds hundreds of simulated chassis. As in
// Open vSwitch, deleting a meter deletes the flows that meter through it, and a controller()
// may name a meter that does not exist. Tests can make the next batch fail or "restart" the
// switch (it loses everything and its generation moves, as a restarted ovs-vswitchd would).

import { flowKey, metersUsed } from '../openflow/reconcile.js';
import type { FlowSpec, GroupSpec, MeterSpec, OfAction } from '../openflow/types.js';
import { sameFlowContent, deepEqual } from './flow-table.js';
import type { FlowSwitch, ReconcileResult, SwitchBatch, SwitchContents } from './switch.js';

export class MemorySwitchError extends Error {
  override readonly name = 'MemorySwitchError';
  constructor(readonly kind: 'injected' | 'missing_group' | 'missing_meter', message: string) {
    super(`${kind}: ${message}`);
  }
}

function groupsUsed(actions: readonly OfAction[], out: Set<number>): void {
  for (const a of actions) {
    if (a.kind === 'group') out.add(a.groupId);
    else if (a.kind === 'clone') groupsUsed(a.actions, out);
  }
}

export class MemorySwitch implements FlowSwitch {
  private flows = new Map<string, FlowSpec>();
  private groups = new Map<number, GroupSpec>();
  private meters = new Map<number, MeterSpec>();
  private failures: string[] = [];
  generation = 1;
  /** Batches applied, and flow/group/meter modifications in them (for tests and benchmarks). */
  readonly counters = { batches: 0, flowMods: 0, groupMods: 0, meterMods: 0, reconciles: 0 };
  /** Every zone flushed, in order (for tests). */
  readonly flushedZones: number[] = [];

  constructor(readonly geneveField = 'tun_metadata0') {}

  async prepare(): Promise<void> {
    // Always connected.
  }

  /** The next install or reconcile fails with this reason (tests). */
  failNext(reason: string): void {
    this.failures.push(reason);
  }

  /** Loses every flow and group, as a restarted switch would. */
  restart(): void {
    this.flows = new Map();
    this.groups = new Map();
    this.meters = new Map();
    this.generation++;
  }

  get flowCount(): number {
    return this.flows.size;
  }

  flow(key: string): FlowSpec | undefined {
    return this.flows.get(key);
  }

  async flushCtZones(zones: readonly number[]): Promise<void> {
    this.flushedZones.push(...zones);
  }

  async install(batch: SwitchBatch): Promise<void> {
    this.takeFailure();
    // Judge the whole batch first, then apply it: a refused batch changes nothing.
    const groups = new Map(this.groups);
    for (const g of batch.putGroups) groups.set(g.groupId, g);
    for (const id of batch.deleteGroups) groups.delete(id);
    const meters = new Map(this.meters);
    for (const m of batch.putMeters) meters.set(m.meterId, m);
    this.checkGroups(groups, [...batch.modifyFlows, ...batch.addFlows]);
    this.checkMeters(meters, [...batch.modifyFlows, ...batch.addFlows]);
    if (batch.deleteGroups.length > 0) {
      const replaced = new Set<string>();
      for (const f of [...batch.deleteFlows, ...batch.modifyFlows, ...batch.addFlows]) replaced.add(flowKey(f.table, f.priority, f.match));
      const kept: FlowSpec[] = [];
      for (const [k, f] of this.flows) if (!replaced.has(k)) kept.push(f);
      this.checkGroups(groups, kept);
    }
    for (const f of batch.deleteFlows) this.flows.delete(flowKey(f.table, f.priority, f.match));
    for (const f of batch.modifyFlows) {
      const k = flowKey(f.table, f.priority, f.match);
      const have = this.flows.get(k);
      // As in OpenFlow 1.1+, modify_strict of an absent flow adds nothing.
      if (have !== undefined) this.flows.set(k, { ...have, actions: f.actions });
    }
    for (const f of batch.addFlows) this.flows.set(flowKey(f.table, f.priority, f.match), f);
    this.groups = groups;
    this.meters = meters;
    this.deleteMeters(batch.deleteMeters);
    this.counters.batches++;
    this.counters.flowMods += batch.deleteFlows.length + batch.modifyFlows.length + batch.addFlows.length;
    this.counters.groupMods += batch.putGroups.length + batch.deleteGroups.length;
    this.counters.meterMods += batch.putMeters.length + batch.deleteMeters.length;
  }

  /** Deletes meters and, as Open vSwitch does, every flow that meters through one of them. */
  private deleteMeters(ids: readonly number[]): void {
    if (ids.length === 0) return;
    for (const id of ids) this.meters.delete(id);
    const gone = new Set(ids);
    for (const [k, f] of this.flows) {
      const used = new Set<number>();
      metersUsed(f.actions, used);
      if ([...used].some((id) => gone.has(id))) this.flows.delete(k);
    }
  }

  private checkMeters(meters: ReadonlyMap<number, MeterSpec>, which: readonly FlowSpec[]): void {
    const used = new Set<number>();
    for (const f of which) metersUsed(f.actions, used);
    for (const id of used) {
      if (!meters.has(id)) throw new MemorySwitchError('missing_meter', `a flow meters through meter ${id}, which does not exist`);
    }
  }

  private checkGroups(groups: ReadonlyMap<number, GroupSpec>, which: readonly FlowSpec[]): void {
    const used = new Set<number>();
    for (const f of which) groupsUsed(f.actions, used);
    for (const id of used) {
      if (!groups.has(id)) throw new MemorySwitchError('missing_group', `a flow outputs to group ${id}, which does not exist`);
    }
  }

  private takeFailure(): void {
    const reason = this.failures.shift();
    if (reason !== undefined) throw new MemorySwitchError('injected', reason);
  }

  async dumpAll(): Promise<SwitchContents> {
    return { flows: [...this.flows.values()], groups: [...this.groups.values()], meters: [...this.meters.values()] };
  }

  async reconcile(want: SwitchContents): Promise<ReconcileResult> {
    this.takeFailure();
    const next = new Map<string, FlowSpec>();
    for (const f of want.flows) {
      const k = flowKey(f.table, f.priority, f.match);
      if (!next.has(k)) next.set(k, f);
    }
    let added = 0;
    let modified = 0;
    let unchanged = 0;
    for (const [k, f] of next) {
      const have = this.flows.get(k);
      if (have === undefined) added++;
      else if (sameFlowContent(have, f)) unchanged++;
      else modified++;
    }
    let deleted = 0;
    for (const k of this.flows.keys()) if (!next.has(k)) deleted++;
    const groups = new Map<number, GroupSpec>();
    for (const g of want.groups) if (!groups.has(g.groupId)) groups.set(g.groupId, g);
    let groupMods = 0;
    for (const [id, g] of groups) if (!deepEqual(this.groups.get(id), g)) groupMods++;
    for (const id of this.groups.keys()) if (!groups.has(id)) groupMods++;
    const meters = new Map<number, MeterSpec>();
    for (const m of want.meters) if (!meters.has(m.meterId)) meters.set(m.meterId, m);
    let meterMods = 0;
    for (const [id, m] of meters) if (!deepEqual(this.meters.get(id), m)) meterMods++;
    for (const id of this.meters.keys()) if (!meters.has(id)) meterMods++;
    this.checkGroups(groups, [...next.values()]);
    this.checkMeters(meters, [...next.values()]);
    this.flows = next;
    this.groups = groups;
    this.meters = meters;
    this.counters.reconciles++;
    this.counters.flowMods += added + modified + deleted;
    this.counters.groupMods += groupMods;
    this.counters.meterMods += meterMods;
    return { added, modified, deleted, unchanged };
  }
}
