// bind_vport claims: a parent port sent a GARP, an ARP reply or an ND message for a virtual
// port's VIP, so this chassis claims the virtual port with that parent (pinctrl.c's
// put_vport_bindings). The SB write sets Port_Binding.chassis to this chassis and
// virtual_parent to the parent's name, through the agent's chassis-side transactions; the
// binding planner (agent/local/virtual-binding.ts) then keeps the port while the parent stays
// bound here.
//
// As in ovn-controller, claims wait in a bounded table keyed by (datapath, virtual port) — the
// latest parent wins, and when the table is full new keys are dropped (the VIP's owner sends
// GARPs again) — and are written together on the next turn of the event loop. A claim is written
// only for a port of type "virtual" whose parent the SB knows, and not at all when the SB shows
// it claimed here through that parent already (every GARP of the owner would otherwise be a
// transaction). A failed transaction is reported and not retried: the next GARP claims again.

import type { SbSource } from '../sb-source.js';
import { BatchWriter, realTimers, type BatchEntry, type BatchPlan, type PutResult, type WriterTimers } from './batch-writer.js';

/** One bind_vport packet-in: tunnel keys, all a packet-in carries. */
export interface VportBinding {
  readonly dpKey: number;
  readonly vportKey: number;
  /** The parent: the logical input port of the packet (reg14). */
  readonly parentKey: number;
}

/** What the writer reads of a Port_Binding. */
export interface VportPort {
  readonly uuid: string;
  readonly logicalPort: string;
  readonly type: string;
  readonly chassis: string | undefined;
  readonly virtualParent: string | undefined;
}

/** What the writer reads of the agent's SB view; every call is a plain map read. */
export interface VportLookup {
  /** The Port_Binding with tunnel key `portKey` in the datapath with tunnel key `dpKey`. */
  port(dpKey: number, portKey: number): VportPort | undefined;
  /** This chassis's Chassis row, once the SB has it. */
  chassisUuid(): string | undefined;
}

export interface VportBindingWriterOptions {
  readonly sb: Pick<SbSource, 'transact'>;
  readonly lookup: VportLookup;
  readonly timers?: WriterTimers;
  /** Claims that may wait at once (ovn-controller's 1000). */
  readonly pendingMax?: number;
  /** Told of each failed transaction. */
  readonly onError?: (message: string) => void;
  /** Told of each claim committed (for logs): the virtual port and its parent. */
  readonly onClaim?: (vport: string, parent: string) => void;
}

export const vportBindingPendingMax = 1000;

export type VportPutResult = PutResult;

export interface VportBindingStats {
  queued: number;
  replaced: number;
  droppedFull: number;
  /** Claims written by committed transactions. */
  claimed: number;
  /** Claims the SB shows already (this chassis, this parent). */
  unchanged: number;
  /** Claims whose virtual port or parent the SB view does not know. */
  unknownPort: number;
  /** Claims of a port that is not of type "virtual" (ovn-controller ignores them too). */
  notVirtual: number;
  /** Claims made before this chassis's Chassis row is in the SB view. */
  noChassis: number;
  transactions: number;
  failedTransactions: number;
}

const keyOf = (b: VportBinding): string => `${b.dpKey}/${b.vportKey}`;

export class VportBindingWriter {
  private readonly lookup: VportLookup;
  private readonly timers: WriterTimers;
  private readonly onError: ((message: string) => void) | undefined;
  private readonly onClaim: ((vport: string, parent: string) => void) | undefined;
  private readonly batches: BatchWriter<VportBinding>;
  readonly stats: VportBindingStats = {
    queued: 0, replaced: 0, droppedFull: 0, claimed: 0, unchanged: 0, unknownPort: 0, notVirtual: 0, noChassis: 0, transactions: 0, failedTransactions: 0,
  };

  constructor(options: VportBindingWriterOptions) {
    this.lookup = options.lookup;
    this.timers = options.timers ?? realTimers;
    this.onError = options.onError;
    this.onClaim = options.onClaim;
    const pendingMax = options.pendingMax ?? vportBindingPendingMax;
    // Every waiting claim is due at once and goes in one transaction (batchMax = pendingMax); a
    // flush writes what waits and what came while that was in flight (two batches); a failed
    // claim is not retried (attemptsMax 1): the next GARP claims again.
    this.batches = new BatchWriter({
      name: 'VportBindingWriter', sb: options.sb, timers: this.timers, stats: this.stats,
      pendingMax, batchMax: pendingMax, flushBatchesMax: 2, retryDelayMs: 0, attemptsMax: 1,
      plan: (batch) => this.plan(batch),
    });
  }

  get pendingN(): number {
    return this.batches.pendingN;
  }

  /** Queues one claim; it is written on the next turn of the event loop, with the others. */
  put(binding: VportBinding): VportPutResult {
    return this.batches.put(keyOf(binding), binding, () => this.timers.now());
  }

  /** Writes every waiting claim; resolves when its transaction is done (after any in flight). */
  flush(): Promise<void> {
    return this.batches.flush();
  }

  /** Stops the timer; claims still waiting are not written. */
  close(): void {
    this.batches.close();
  }

  /** One update of chassis and virtual_parent for each claim the SB does not show already. */
  private plan(batch: readonly BatchEntry<VportBinding>[]): BatchPlan | undefined {
    const us = this.lookup.chassisUuid();
    if (us === undefined) {
      this.stats.noChassis += batch.length;
      return undefined;
    }
    const ops: unknown[] = [];
    const claims: [string, string][] = [];
    for (const { item: b } of batch) {
      const vport = this.lookup.port(b.dpKey, b.vportKey);
      const parent = this.lookup.port(b.dpKey, b.parentKey);
      if (vport === undefined || parent === undefined) {
        this.stats.unknownPort++;
        continue;
      }
      if (vport.type !== 'virtual') {
        this.stats.notVirtual++;
        continue;
      }
      if (vport.chassis === us && vport.virtualParent === parent.logicalPort) {
        this.stats.unchanged++;
        continue;
      }
      ops.push({
        op: 'update', table: 'Port_Binding', where: [['_uuid', '==', ['uuid', vport.uuid]]],
        row: { chassis: ['uuid', us], virtual_parent: parent.logicalPort },
      });
      claims.push([vport.logicalPort, parent.logicalPort]);
    }
    return {
      ops,
      committed: () => {
        this.stats.claimed += claims.length;
        for (const [v, p] of claims) this.onClaim?.(v, p);
      },
      failed: (failure) => this.onError?.(`bind_vport claim of ${claims.map(([v, p]) => `${v} (parent ${p})`).join(', ')} failed: ${failure}`),
    };
  }
}
