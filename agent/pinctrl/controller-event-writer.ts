// Controller_Event rows for empty_lb_backends events (pinctrl.c's event_table and
// controller_event_run): a packet sent to a load balancer VIP without backends reached a flow of
// northd's whose action is trigger_event, and the CMS (ovn-kubernetes' unidling) wants to hear of
// it. For each (vip, protocol, load_balancer) this chassis writes one row, {event_type:
// "empty_lb_backends", event_info: {vip, protocol, load_balancer}, chassis: this chassis,
// seq_num}, unless it has one already; the CMS deletes the row when it has acted, and the next
// such packet writes a new one.
//
// As in ovn-controller, events wait in a table keyed by (vip, protocol, load_balancer) — a
// packet for an event already waiting changes nothing, and at most pendingMax wait (more are
// dropped and counted) — and a pass writes all of them at once, in one transaction, inserting a
// row for each event this chassis has no row for in the SB view; the table is then empty.
// Departures:
//   - seq_num is the next after the highest of this chassis's rows in the SB view and of those
//     this writer wrote (ovn-controller counts from 1 in each process, so after a restart its
//     numbers repeat those of the rows still there).
//   - A failed transaction (the stream down, or a member refusing it) puts its events back, to
//     be tried again every retryDelayMs; ovn-controller loses them. Either way an event is
//     written within expiryMs of its packet or dropped: ovn-controller drops the events older
//     than 10 s while it has no transaction to write them in.
//   - A row this writer inserted counts as there until the SB view shows it (or for expiryMs at
//     most), so that a packet arriving before the stream brings the row does not write a second.
//
// Time is injected; the table, the one-transaction-at-a-time rule and the retries are
// batch-writer.ts's.

import type { SbSource } from '../sb-source.js';
import { EMPTY_LB_BACKENDS } from '../actions/controller-event.js';
import { BatchWriter, realTimers, type BatchEntry, type BatchPlan, type WriterTimers } from './batch-writer.js';
import type { EmptyLbBackendsEvent } from './controller-event.js';

export const controllerEventLimits = {
  /** Events that may wait at once (ovn-controller's 1000). */
  pendingMax: 1000,
  /** How long an event may wait to be written (ovn-controller's EVENT_TIMEOUT). */
  expiryMs: 10_000,
  /** How long the events of a failed transaction wait before they are tried again. */
  retryDelayMs: 1000,
} as const;

export type ControllerEventLimits = { readonly [K in keyof typeof controllerEventLimits]: number };

/** One of this chassis's empty_lb_backends rows in the SB view (event_info's keys may be missing). */
export interface ControllerEventRow {
  readonly vip: string | undefined;
  readonly protocol: string | undefined;
  readonly loadBalancer: string | undefined;
  readonly seqNum: number;
}

/** What the writer reads of the agent's SB view. */
export interface ControllerEventLookup {
  /** This chassis's Chassis row, once the SB has it. */
  chassisUuid(): string | undefined;
  /** The Controller_Event rows of event_type empty_lb_backends whose chassis is `chassisUuid`. */
  emptyLbBackendsRows(chassisUuid: string): Iterable<ControllerEventRow>;
}

export interface ControllerEventWriterOptions {
  readonly sb: Pick<SbSource, 'transact'>;
  readonly lookup: ControllerEventLookup;
  readonly timers?: WriterTimers;
  readonly limits?: Partial<ControllerEventLimits>;
  /** Told of each failed transaction. */
  readonly onError?: (message: string) => void;
}

export type ControllerEventPutResult = 'queued' | 'waiting' | 'full';

export interface ControllerEventStats {
  /** Events accepted into the table. */
  queued: number;
  /** Events already waiting when their packet came (nothing changed). */
  waiting: number;
  /** Required by the shared batching writer; an event never replaces another. */
  replaced: number;
  /** Events dropped because pendingMax waited. */
  droppedFull: number;
  /** Events dropped because they waited longer than expiryMs. */
  expired: number;
  /** Events this chassis had a row for already. */
  exists: number;
  /** Events dropped because this chassis has no Chassis row in the SB view yet. */
  noChassis: number;
  /** Rows inserted by committed transactions. */
  written: number;
  transactions: number;
  failedTransactions: number;
}

interface Waiting {
  readonly event: EmptyLbBackendsEvent;
  /** When its (first) packet came, on the timers' clock. */
  readonly arrivedMs: number;
}

const keyOf = (vip: string | undefined, protocol: string | undefined, loadBalancer: string | undefined): string =>
  JSON.stringify([vip, protocol, loadBalancer]);

export class ControllerEventWriter {
  private readonly lookup: ControllerEventLookup;
  private readonly timers: WriterTimers;
  private readonly limits: ControllerEventLimits;
  private readonly onError: ((message: string) => void) | undefined;
  private readonly batches: BatchWriter<Waiting>;
  /** The highest seq_num written or seen. */
  private seqNum = 0;
  /** Keys of rows inserted that the SB view has not shown yet → when they were committed. */
  private readonly unseen = new Map<string, number>();
  /** The keys the last failed transaction was to insert. */
  private failedKeys: ReadonlySet<string> = new Set();
  readonly stats: ControllerEventStats = {
    queued: 0, waiting: 0, replaced: 0, droppedFull: 0, expired: 0, exists: 0, noChassis: 0, written: 0, transactions: 0, failedTransactions: 0,
  };

  constructor(options: ControllerEventWriterOptions) {
    this.lookup = options.lookup;
    this.timers = options.timers ?? realTimers;
    this.limits = { ...controllerEventLimits, ...options.limits };
    this.onError = options.onError;
    const { pendingMax, expiryMs, retryDelayMs } = this.limits;
    // Every waiting event is due at once and goes in one transaction (batchMax = pendingMax); a
    // flush writes what waits and what came while that was in flight (two batches). A failed
    // event is retried until it is older than expiryMs: the attempts never run out first.
    this.batches = new BatchWriter({
      name: 'ControllerEventWriter', sb: options.sb, timers: this.timers, stats: this.stats,
      pendingMax, batchMax: pendingMax, flushBatchesMax: 2, retryDelayMs, attemptsMax: Math.ceil(expiryMs / Math.max(1, retryDelayMs)) + 2,
      plan: (batch) => this.plan(batch),
      // Of a failed batch, only the events it inserted are retried (the others were counted).
      stillWanted: (p) => {
        if (!this.failedKeys.has(p.key)) return false;
        if (!this.expired(p.item)) return true;
        this.stats.expired++;
        return false;
      },
      onGaveUp: () => {
        this.stats.expired++;
      },
    });
  }

  /** Events waiting to be written (not counting a transaction in flight). */
  get pendingN(): number {
    return this.batches.pendingN;
  }

  /** A packet-in's event: queued to be written on the next turn of the event loop, with the others. */
  put(event: EmptyLbBackendsEvent): ControllerEventPutResult {
    const key = keyOf(event.vip, event.protocol, event.loadBalancer);
    if (this.batches.has(key)) {
      this.stats.waiting++;
      return 'waiting';
    }
    const now = this.timers.now();
    const r = this.batches.put(key, { event, arrivedMs: now }, () => now);
    return r === 'full' ? 'full' : 'queued';
  }

  /**
   * The SB view's Controller_Event rows changed: rows this writer inserted that it shows now are
   * no longer remembered, so that once the CMS deletes them a new packet writes again.
   */
  rowsChanged(): void {
    const us = this.lookup.chassisUuid();
    if (us === undefined || this.unseen.size === 0) return;
    for (const r of this.lookup.emptyLbBackendsRows(us)) this.unseen.delete(keyOf(r.vip, r.protocol, r.loadBalancer));
  }

  /** Writes every waiting event; resolves when its transaction is done (after any in flight). */
  flush(): Promise<void> {
    return this.batches.flush();
  }

  /** Stops the timer; events still waiting are not written. */
  close(): void {
    this.batches.close();
  }

  private expired(w: Waiting): boolean {
    return this.timers.now() - w.arrivedMs >= this.limits.expiryMs;
  }

  /** The keys of this chassis's rows in the SB view (and of those inserted and not yet seen). */
  private keysWritten(us: string): Set<string> {
    const now = this.timers.now();
    const keys = new Set<string>();
    for (const r of this.lookup.emptyLbBackendsRows(us)) {
      const key = keyOf(r.vip, r.protocol, r.loadBalancer);
      keys.add(key);
      this.unseen.delete(key);
      this.seqNum = Math.max(this.seqNum, r.seqNum);
    }
    for (const [key, atMs] of this.unseen) {
      if (now - atMs >= this.limits.expiryMs) this.unseen.delete(key);
      else keys.add(key);
    }
    return keys;
  }

  /** One insert for each waiting event this chassis has no row for. */
  private plan(batch: readonly BatchEntry<Waiting>[]): BatchPlan | undefined {
    const us = this.lookup.chassisUuid();
    if (us === undefined) {
      this.stats.noChassis += batch.length;
      return undefined;
    }
    const written = this.keysWritten(us);
    const ops: unknown[] = [];
    const keys: string[] = [];
    for (const { key, item } of batch) {
      if (this.expired(item)) {
        this.stats.expired++;
        continue;
      }
      if (written.has(key)) {
        this.stats.exists++;
        continue;
      }
      const { vip, protocol, loadBalancer } = item.event;
      ops.push({
        op: 'insert', table: 'Controller_Event',
        row: {
          event_type: EMPTY_LB_BACKENDS,
          event_info: ['map', [['load_balancer', loadBalancer], ['protocol', protocol], ['vip', vip]]],
          chassis: ['uuid', us],
          seq_num: ++this.seqNum,
        },
      });
      keys.push(key);
    }
    return {
      ops,
      committed: () => {
        this.stats.written += keys.length;
        const now = this.timers.now();
        // Oldest first: past the bound, the rows inserted longest ago are forgotten first.
        for (const key of keys) {
          this.unseen.delete(key);
          this.unseen.set(key, now);
        }
        for (const key of this.unseen.keys()) {
          if (this.unseen.size <= 2 * this.limits.pendingMax) break;
          this.unseen.delete(key);
        }
        // The stream may have brought the rows before the transaction's answer came.
        this.rowsChanged();
      },
      failed: (failure) => {
        this.failedKeys = new Set(keys);
        this.onError?.(`Controller_Event insert of ${keys.length} rows failed: ${failure}`);
      },
    };
  }
}
