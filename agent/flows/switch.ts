// What the agent needs of an OpenFlow switch: install a batch of changes atomically, report what
// it holds, and bring it to a given state by sending only the difference. Two backends implement
// it: OfSwitch (ovs-vswitchd over our OpenFlow channel) and MemorySwitch (a table in memory, so
// one process can simulate hundreds of agents). A flow's identity is (table, priority, match);
// its content is its cookie and actions.

import type { FlowSpec, GroupSpec, MeterSpec } from '../openflow/types.js';

/**
 * One change. The switch applies it in this order so that no flow ever points at a missing
 * group or meter: meters added or replaced, then in one atomic step groups added or replaced,
 * flows deleted, flows modified, flows added, groups deleted, and last meters deleted. The
 * atomic step takes effect whole or not at all; the meters around it are not part of it (Open
 * vSwitch has no meter_mod in a bundle), so after a refused batch the meters added before it
 * may be there: the owner reconciles then, as after any failure.
 */
export interface SwitchBatch {
  /** Meters to add, or to replace whole when the id exists. */
  readonly putMeters: readonly MeterSpec[];
  /** Groups to add, or to replace whole when the id exists. */
  readonly putGroups: readonly GroupSpec[];
  /** Flows to remove, by identity (their actions and cookie are ignored). */
  readonly deleteFlows: readonly FlowSpec[];
  /** Flows whose actions change, same identity and cookie. */
  readonly modifyFlows: readonly FlowSpec[];
  /** Flows to add, or to replace whole (a changed cookie is a replacement). */
  readonly addFlows: readonly FlowSpec[];
  readonly deleteGroups: readonly number[];
  /** Meters to delete, once no flow meters through them. */
  readonly deleteMeters: readonly number[];
}

export interface SwitchContents {
  readonly flows: readonly FlowSpec[];
  readonly groups: readonly GroupSpec[];
  readonly meters: readonly MeterSpec[];
}

export interface ReconcileResult {
  readonly added: number;
  readonly modified: number;
  readonly deleted: number;
  readonly unchanged: number;
}

export const emptyBatch = (): SwitchBatch => ({ putMeters: [], putGroups: [], deleteFlows: [], modifyFlows: [], addFlows: [], deleteGroups: [], deleteMeters: [] });

export function batchSize(b: SwitchBatch): number {
  return b.putMeters.length + b.putGroups.length + b.deleteFlows.length + b.modifyFlows.length + b.addFlows.length + b.deleteGroups.length
    + b.deleteMeters.length;
}

export interface FlowSwitch {
  /**
   * Brings the connection up and set up (it may move generation and geneveField); the owner
   * calls it before each batch or reconcile, then reads those two.
   */
  prepare(): Promise<void>;
  /**
   * Applies the batch, its flows and groups in one transaction (an OpenFlow bundle), and
   * resolves once the switch has confirmed it (barrier). A rejection means none of the flows and
   * groups were applied (meters put before them may have been).
   */
  install(batch: SwitchBatch): Promise<void>;
  /**
   * Empties the connection-tracking zones given (OVS's NXT_CT_FLUSH_ZONE), each confirmed by
   * the switch. Called with a zone that a port or router has just been given or has just
   * given up, before the flows that use its new owner are installed, as ovn-controller does:
   * connections of a previous owner must not be mistaken for the new owner's.
   */
  flushCtZones(zones: readonly number[]): Promise<void>;
  /** Everything the switch holds now. */
  dumpAll(): Promise<SwitchContents>;
  /**
   * Brings the switch to exactly 'want', sending only the difference: flows, groups and meters
   * that are already right are left alone (never a clear-then-reinstall, so a restarted agent
   * does not blackhole traffic, and a meter keeps its flows and counters).
   */
  reconcile(want: SwitchContents): Promise<ReconcileResult>;
  /**
   * Changes whenever the switch may hold something other than what was last installed: a new
   * connection (the switch may have restarted) or a failed batch. The owner reconciles then.
   */
  readonly generation: number;
  /** The tun_metadata field OVN's Geneve option (class 0x0102, type 0x80) is mapped to. */
  readonly geneveField: string;
}
