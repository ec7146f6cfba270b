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

import assert from 'node:assert/strict';
import type { SbSource } from '../sb-source.js';
import { transactionError, type WriterTimers } from './mac-binding-writer.js';

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

export type VportPutResult = 'queued' | 'replaced' | 'full';

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

const realTimers: WriterTimers = {
  now: () => performance.now(),
  setTimeout: (f, ms) => {
    const h = setTimeout(f, ms);
    h.unref();
    return h;
  },
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

const keyOf = (b: VportBinding): string => `${b.dpKey}/${b.vportKey}`;

export class VportBindingWriter {
  private readonly sb: Pick<SbSource, 'transact'>;
  private readonly lookup: VportLookup;
  private readonly timers: WriterTimers;
  private readonly pendingMax: number;
  private readonly onError: ((message: string) => void) | undefined;
  private readonly onClaim: ((vport: string, parent: string) => void) | undefined;
  private readonly pending = new Map<string, VportBinding>();
  private inFlight: Promise<void> | undefined;
  private timer: unknown;
  private armed = false;
  private closed = false;
  readonly stats: VportBindingStats = {
    queued: 0, replaced: 0, droppedFull: 0, claimed: 0, unchanged: 0, unknownPort: 0, notVirtual: 0, noChassis: 0, transactions: 0, failedTransactions: 0,
  };

  constructor(options: VportBindingWriterOptions) {
    this.sb = options.sb;
    this.lookup = options.lookup;
    this.timers = options.timers ?? realTimers;
    this.pendingMax = options.pendingMax ?? vportBindingPendingMax;
    this.onError = options.onError;
    this.onClaim = options.onClaim;
    assert(this.pendingMax > 0, 'VportBindingWriter pendingMax must be positive');
  }

  get pendingN(): number {
    return this.pending.size;
  }

  /** Queues one claim; it is written on the next turn of the event loop, with the others. */
  put(binding: VportBinding): VportPutResult {
    assert(!this.closed, 'put on a closed VportBindingWriter');
    const key = keyOf(binding);
    let result: VportPutResult;
    if (this.pending.has(key)) {
      this.stats.replaced++;
      result = 'replaced';
    } else if (this.pending.size >= this.pendingMax) {
      this.stats.droppedFull++;
      return 'full';
    } else {
      this.stats.queued++;
      result = 'queued';
    }
    this.pending.set(key, binding);
    this.schedule();
    return result;
  }

  /** Writes every waiting claim; resolves when its transaction is done (after any in flight). */
  async flush(): Promise<void> {
    // Claims queued while a transaction is in flight go in the next one: at most two rounds.
    for (let round = 0; round < 2; round++) {
      while (this.inFlight !== undefined) await this.inFlight;
      if (this.pending.size === 0) return;
      const batch = [...this.pending.values()];
      this.pending.clear();
      this.inFlight = this.commit(batch).finally(() => {
        this.inFlight = undefined;
      });
    }
    while (this.inFlight !== undefined) await this.inFlight;
    this.schedule();
  }

  /** Stops the timer; claims still waiting are not written. */
  close(): void {
    this.closed = true;
    if (this.armed) this.timers.clearTimeout(this.timer);
    this.armed = false;
  }

  private schedule(): void {
    if (this.closed || this.armed || this.pending.size === 0) return;
    this.armed = true;
    this.timer = this.timers.setTimeout(() => {
      this.armed = false;
      void this.flush();
    }, 0);
  }

  private async commit(batch: readonly VportBinding[]): Promise<void> {
    const us = this.lookup.chassisUuid();
    if (us === undefined) {
      this.stats.noChassis += batch.length;
      return;
    }
    const ops: unknown[] = [];
    const claims: [string, string][] = [];
    for (const b of batch) {
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
    if (ops.length === 0) return;
    this.stats.transactions++;
    let failure: string | undefined;
    try {
      failure = transactionError(await this.sb.transact(ops));
    } catch (err) {
      failure = err instanceof Error ? err.message : String(err);
    }
    if (failure !== undefined) {
      this.stats.failedTransactions++;
      this.onError?.(`bind_vport claim of ${claims.map(([v, p]) => `${v} (parent ${p})`).join(', ')} failed: ${failure}`);
      return;
    }
    this.stats.claimed += claims.length;
    for (const [v, p] of claims) this.onClaim?.(v, p);
  }
}
