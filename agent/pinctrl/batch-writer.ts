// The batching skeleton the pinctrl SB writers share (MAC_Binding learning, bind_vport claims,
// Service_Monitor.status): a bounded table of waiting items keyed by what they write, a timer
// that fires when the earliest is due, due items written in batches of at most batchMax, one
// transaction each and one transaction in flight at a time, and a failed batch put back to retry
// after retryDelayMs, each item at most attemptsMax times.
//
// What a key is, when an item is due, how a batch becomes OVSDB operations and what a committed or
// failed transaction means are the writer's (see BatchWriterConfig); this file owns only the
// table, the timer and the one-in-flight rule. Time is injected.

import assert from 'node:assert/strict';
import type { SbSource } from '../sb-source.js';
import { backgroundTimers, type Timers } from '../../server/timers.js';

/** Writing is background work: its timers must not keep a process alive that is otherwise done. */
export type WriterTimers = Timers;
export const realTimers: WriterTimers = backgroundTimers;

/** The first error an OVSDB transaction's results report, if any (RFC 7047 §4.1.3). */
export function transactionError(results: readonly unknown[]): string | undefined {
  for (const r of results) {
    if (typeof r === 'object' && r !== null && 'error' in r) {
      const e = r as { error: unknown; details?: unknown };
      return `${String(e.error)}${typeof e.details === 'string' ? `: ${e.details}` : ''}`;
    }
  }
  return undefined;
}

export type PutResult = 'queued' | 'replaced' | 'full';

/** The counters the batching writer keeps; each writer's stats object has them among its own. */
export interface BatchStats {
  /** Items accepted into the table (new keys). */
  queued: number;
  /** Items that replaced a waiting one for the same key. */
  replaced: number;
  /** Items dropped because the table was full. */
  droppedFull: number;
  transactions: number;
  failedTransactions: number;
}

/** One waiting item. A newer item for the same key replaces `item` and keeps the rest. */
export interface BatchEntry<T> {
  readonly key: string;
  readonly item: T;
  /** When it may be written, on the timers' clock. */
  readonly dueMs: number;
  /** Failed transactions it was part of. */
  readonly attempts: number;
}

/** One batch as one transaction: the writer's operations and what their outcome means to it. */
export interface BatchPlan {
  readonly ops: readonly unknown[];
  /** Called once when the transaction committed. */
  committed(): void;
  /** Called once when it failed (an error result or a transport error), before the batch is retried. */
  failed(failure: string): void;
}

export interface BatchWriterConfig<T> {
  /** The writer's class name, for assertion messages. */
  readonly name: string;
  readonly sb: Pick<SbSource, 'transact'>;
  readonly timers: WriterTimers;
  /** Items that may wait at once; a new key past it is refused, a retry past it is given up. */
  readonly pendingMax: number;
  /** Items per transaction. */
  readonly batchMax: number;
  /** Transactions one flush() starts at the most; what is left waits for the timer. */
  readonly flushBatchesMax: number;
  /** How long the items of a failed transaction wait before they are tried again. */
  readonly retryDelayMs: number;
  /** Transactions one item may be part of before it is given up; 1 means never retried. */
  readonly attemptsMax: number;
  /** Counted into by the batching writer (the writer counts the rest of its stats itself). */
  readonly stats: BatchStats;
  /**
   * The transaction for a batch of due entries, in the order they were first queued; undefined
   * (or no ops) when none of them needs writing, and then the batch is done with.
   */
  plan(batch: readonly BatchEntry<T>[]): BatchPlan | undefined;
  /** Whether an entry of a failed batch is still to be written (default: yes); if not it is dropped silently. */
  stillWanted?(entry: BatchEntry<T>): boolean;
  /** Told of each entry of a failed batch that is given up (attemptsMax, pendingMax or closed). */
  onGaveUp?(entry: BatchEntry<T>): void;
}

interface Pending<T> {
  readonly key: string;
  item: T;
  readonly dueMs: number;
  readonly attempts: number;
}

export class BatchWriter<T> {
  private readonly config: BatchWriterConfig<T>;
  /** Waiting entries in the order they were first queued. */
  private readonly pending = new Map<string, Pending<T>>();
  private inFlight: Promise<void> | undefined;
  private timer: unknown;
  /** When the armed timer fires (Infinity: none armed). */
  private timerAtMs = Infinity;
  private closedFlag = false;

  constructor(config: BatchWriterConfig<T>) {
    this.config = config;
    const { pendingMax, batchMax, flushBatchesMax, attemptsMax } = config;
    assert(pendingMax > 0 && batchMax > 0 && flushBatchesMax > 0 && attemptsMax > 0, `${config.name} limits must be positive`);
  }

  /** Entries waiting to be written (not counting a transaction in flight). */
  get pendingN(): number {
    return this.pending.size;
  }

  get closed(): boolean {
    return this.closedFlag;
  }

  has(key: string): boolean {
    return this.pending.has(key);
  }

  /** Drops what waits for `key`, if anything (a transaction in flight is not recalled). */
  delete(key: string): void {
    this.pending.delete(key);
  }

  /**
   * Queues `item` under `key`. A waiting entry for the key takes the new item and keeps its place,
   * due time and attempts; a new key is refused when pendingMax entries wait, and otherwise is due
   * at `dueMs()` (asked only then, so that a random delay is drawn only for a new key).
   */
  put(key: string, item: T, dueMs: () => number): PutResult {
    assert(!this.closedFlag, `put on a closed ${this.config.name}`);
    const { stats } = this.config;
    const old = this.pending.get(key);
    if (old !== undefined) {
      old.item = item;
      stats.replaced++;
      return 'replaced';
    }
    if (this.pending.size >= this.config.pendingMax) {
      stats.droppedFull++;
      return 'full';
    }
    this.pending.set(key, { key, item, dueMs: dueMs(), attempts: 0 });
    stats.queued++;
    this.schedule();
    return 'queued';
  }

  /**
   * Writes every entry that is due now, batch after batch, and resolves when the last transaction
   * is done (one already in flight is waited for first). The timer calls this by itself; tests
   * and shutdown call it to be sure.
   */
  async flush(): Promise<void> {
    for (let n = 0; n < this.config.flushBatchesMax; n++) {
      while (this.inFlight !== undefined) await this.inFlight;
      const batch = this.takeDue();
      if (batch.length === 0) break;
      this.inFlight = this.commit(batch).finally(() => {
        this.inFlight = undefined;
      });
    }
    while (this.inFlight !== undefined) await this.inFlight;
    this.schedule();
  }

  /** Stops the timer; what still waits is not written. */
  close(): void {
    this.closedFlag = true;
    this.config.timers.clearTimeout(this.timer);
    this.timerAtMs = Infinity;
  }

  private takeDue(): Pending<T>[] {
    const now = this.config.timers.now();
    const batch: Pending<T>[] = [];
    for (const p of this.pending.values()) {
      if (batch.length >= this.config.batchMax) break;
      if (p.dueMs <= now) batch.push(p);
    }
    for (const p of batch) this.pending.delete(p.key);
    return batch;
  }

  /** Arms the timer for the earliest waiting entry (unless a sooner one is armed or a transaction is in flight). */
  private schedule(): void {
    if (this.closedFlag || this.inFlight !== undefined) return;
    let at = Infinity;
    for (const p of this.pending.values()) at = Math.min(at, p.dueMs);
    if (at === Infinity || at >= this.timerAtMs) return;
    const { timers } = this.config;
    timers.clearTimeout(this.timer);
    this.timerAtMs = at;
    this.timer = timers.setTimeout(() => {
      this.timerAtMs = Infinity;
      void this.flush();
    }, Math.max(0, at - timers.now()));
  }

  private async commit(batch: readonly Pending<T>[]): Promise<void> {
    const plan = this.config.plan(batch);
    if (plan === undefined || plan.ops.length === 0) return;
    const { stats } = this.config;
    stats.transactions++;
    let failure: string | undefined;
    try {
      failure = transactionError(await this.config.sb.transact(plan.ops));
    } catch (err) {
      failure = err instanceof Error ? err.message : String(err);
    }
    if (failure === undefined) {
      plan.committed();
      return;
    }
    stats.failedTransactions++;
    plan.failed(failure);
    this.requeue(batch);
  }

  /** Puts a failed batch back, behind anything queued since for the same keys. */
  private requeue(batch: readonly Pending<T>[]): void {
    const { timers, attemptsMax, pendingMax } = this.config;
    const retryAtMs = timers.now() + this.config.retryDelayMs;
    for (const p of batch) {
      if (this.pending.has(p.key)) continue; // A newer item for the key waits already.
      if (this.config.stillWanted?.(p) === false) continue;
      if (p.attempts + 1 >= attemptsMax || this.pending.size >= pendingMax || this.closedFlag) {
        this.config.onGaveUp?.(p);
        continue;
      }
      this.pending.set(p.key, { key: p.key, item: p.item, dueMs: retryAtMs, attempts: p.attempts + 1 });
    }
  }
}
