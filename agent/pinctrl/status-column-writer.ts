// The writes of a chassis-owned status column of a row northd derives (Service_Monitor.status,
// BFD.status): what this chassis found, written into the SB through the agent's chassis-side
// transactions as an "update" of that one column by _uuid, the only write the central accepts
// on such a row.
//
// Written only on change: a status is queued when the caller saw the SB view say otherwise, and
// a status already asked for (waiting, in flight, or committed but not yet seen in the SB view)
// is not asked for again. Batched and bounded by the shared BatchWriter (batch-writer.ts), as the
// MAC-binding writer is: at most pendingMax rows wait (a newer status for a waiting row replaces
// it and keeps its place), batchMax rows per transaction, one transaction at a time; a failed
// transaction puts its rows back to retry after retryDelayMs, each at most attemptsMax times,
// and a row given up is asked for again at the caller's next change (it reconciles then). A
// status is due as soon as it is asked for. Time is injected.

import assert from 'node:assert/strict';
import type { SbSource } from '../sb-source.js';
import { BatchWriter, type BatchEntry, type BatchPlan, type WriterTimers } from './batch-writer.js';

export interface StatusColumnWriterOptions {
  readonly sb: Pick<SbSource, 'transact'>;
  readonly timers: WriterTimers;
  /** Rows whose status may wait at once (the caller's own limit on its rows is enough). */
  readonly pendingMax?: number;
  readonly batchMax?: number;
  readonly retryDelayMs?: number;
  readonly attemptsMax?: number;
  readonly onError?: (message: string) => void;
}

export const statusPendingMax = 1000;
export const statusBatchMax = 100;

export type SetResult = 'queued' | 'replaced' | 'unchanged' | 'full';

export interface StatusWriterStats {
  queued: number;
  replaced: number;
  /** Statuses already asked for. */
  unchanged: number;
  droppedFull: number;
  /** Rows updated by committed transactions. */
  written: number;
  transactions: number;
  failedTransactions: number;
  gaveUp: number;
}

export class StatusColumnWriter<S extends string> {
  private readonly table: string;
  private readonly name: string;
  private readonly timers: WriterTimers;
  private readonly pendingMax: number;
  private readonly onError: ((message: string) => void) | undefined;
  /** Row _uuid → the status to write, due now or, after a failed transaction, at its retry. */
  private readonly batches: BatchWriter<S>;
  /** Row → the status last asked for, until the SB view shows it (or it is given up). */
  private readonly asked = new Map<string, S>();
  readonly stats: StatusWriterStats = { queued: 0, replaced: 0, unchanged: 0, droppedFull: 0, written: 0, transactions: 0, failedTransactions: 0, gaveUp: 0 };

  /** `table` is the SB table whose `status` column is written; `name` names the writer in assertions. */
  constructor(target: { readonly table: string; readonly name: string }, options: StatusColumnWriterOptions) {
    this.table = target.table;
    this.name = target.name;
    this.timers = options.timers;
    this.pendingMax = options.pendingMax ?? statusPendingMax;
    this.onError = options.onError;
    this.batches = new BatchWriter({
      name: this.name, sb: options.sb, timers: this.timers, stats: this.stats,
      pendingMax: this.pendingMax, batchMax: options.batchMax ?? statusBatchMax, flushBatchesMax: this.pendingMax + 2,
      retryDelayMs: options.retryDelayMs ?? 1000, attemptsMax: options.attemptsMax ?? 3,
      plan: (batch) => this.plan(batch),
      // A status superseded or forgotten while its transaction was in flight is not retried.
      stillWanted: (p) => this.asked.get(p.key) === p.item,
      onGaveUp: (p) => {
        this.asked.delete(p.key);
        this.stats.gaveUp++;
      },
    });
  }

  get pendingN(): number {
    return this.batches.pendingN;
  }

  /** Asks for row `uuid`'s status to be `status` (the caller saw the SB view say otherwise). */
  set(uuid: string, status: S): SetResult {
    assert(!this.batches.closed, `set on a closed ${this.name}`);
    if (this.asked.get(uuid) === status) {
      this.stats.unchanged++;
      return 'unchanged';
    }
    // Rows asked for but not yet seen in the SB view are bounded too (twice the waiting rows).
    if (!this.batches.has(uuid) && !this.asked.has(uuid) && this.asked.size >= 2 * this.pendingMax) {
      this.stats.droppedFull++;
      return 'full';
    }
    const result = this.batches.put(uuid, status, () => this.timers.now());
    if (result !== 'full') this.asked.set(uuid, status);
    return result;
  }

  /** The SB view shows `sbStatus` for the row: a status it confirms need not be remembered. */
  observed(uuid: string, sbStatus: string | undefined): void {
    if (!this.batches.has(uuid) && this.asked.get(uuid) === sbStatus) this.asked.delete(uuid);
  }

  /** The row is no longer this chassis's to write: what waits for it is dropped. */
  forget(uuid: string): void {
    this.batches.delete(uuid);
    this.asked.delete(uuid);
  }

  /** Writes everything due now, batch after batch; resolves when done. */
  flush(): Promise<void> {
    return this.batches.flush();
  }

  /** Stops the timer; what still waits is not written. */
  close(): void {
    this.batches.close();
  }

  /** An update of the status column of each row, by _uuid. */
  private plan(batch: readonly BatchEntry<S>[]): BatchPlan {
    const ops = batch.map((p) => ({ op: 'update', table: this.table, where: [['_uuid', '==', ['uuid', p.key]]], row: { status: p.item } }));
    return {
      ops,
      committed: () => {
        this.stats.written += batch.length;
      },
      failed: (failure) => this.onError?.(`${this.table} status transaction of ${ops.length} rows failed: ${failure}`),
    };
  }
}
