// A FlowSwitch that is a table in memory: the same contract as OfSwitch (atomic batches, a group
// must exist while a flow outputs to it, a failed batch changes nothing), cheap enough that one
// process holds hundreds of simulated chassis. Tests can make the next batch fail or "restart"
// the switch (it loses everything and its generation moves, as a restarted ovs-vswitchd would).

import { flowKey } from '../openflow/reconcile.js';
import type { FlowSpec, GroupSpec, OfAction } from '../openflow/types.js';
import { sameFlowContent, deepEqual } from './flow-table.js';
import type { FlowSwitch, ReconcileResult, SwitchBatch, SwitchContents } from './switch.js';

export class MemorySwitchError extends Error {
  override readonly name = 'MemorySwitchError';
  constructor(readonly kind: 'injected' | 'missing_group', message: string) {
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
  private failures: string[] = [];
  generation = 1;
  /** Batches applied, and flow/group modifications in them (for tests and benchmarks). */
  readonly counters = { batches: 0, flowMods: 0, groupMods: 0, reconciles: 0 };
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
    this.checkGroups(groups, [...batch.modifyFlows, ...batch.addFlows]);
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
    this.counters.batches++;
    this.counters.flowMods += batch.deleteFlows.length + batch.modifyFlows.length + batch.addFlows.length;
    this.counters.groupMods += batch.putGroups.length + batch.deleteGroups.length;
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
    return { flows: [...this.flows.values()], groups: [...this.groups.values()] };
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
    this.checkGroups(groups, [...next.values()]);
    this.flows = next;
    this.groups = groups;
    this.counters.reconciles++;
    this.counters.flowMods += added + modified + deleted;
    this.counters.groupMods += groupMods;
    return { added, modified, deleted, unchanged };
  }
}
