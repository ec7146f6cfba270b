// Service_Monitor.status writes: the health this chassis's probes found, written into the SB
// through the agent's chassis-side transactions (an "update" of that one column by _uuid, the
// only write the central accepts on a Service_Monitor row).
//
// Written only on change: a status is queued when it differs from what the SB view shows, and a
// status already asked for (waiting, in flight, or committed but not yet seen in the SB view) is
// not asked for again. Batched and bounded like the MAC-binding writer: at most pendingMax rows
// wait (a newer status for a waiting row replaces it), batchMax rows per transaction, one
// transaction at a time; a failed transaction puts its rows back to retry after retryDelayMs,
// each at most attemptsMax times, and a row given up is asked for again at the next change of
// the SB view (the caller reconciles then). Time is injected.

import assert from 'node:assert/strict';
import type { SbSource } from '../sb-source.js';
import type { WriterTimers } from './mac-binding-writer.js';
import type { SvcStatus } from './svc-monitor-table.js';

export interface SvcStatusWriterOptions {
  readonly sb: Pick<SbSource, 'transact'>;
  readonly timers: WriterTimers;
  /** Rows whose status may wait at once (the monitor table's monitorsMax is enough). */
  readonly pendingMax?: number;
  readonly batchMax?: number;
  readonly retryDelayMs?: number;
  readonly attemptsMax?: number;
  readonly onError?: (message: string) => void;
}

export const svcStatusPendingMax = 1000;
export const svcStatusBatchMax = 100;

export type SetResult = 'queued' | 'replaced' | 'unchanged' | 'full';

export interface SvcStatusStats {
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

interface Pending {
  readonly uuid: string;
  status: SvcStatus;
  dueMs: number;
  attempts: number;
}

export class SvcStatusWriter {
  private readonly sb: Pick<SbSource, 'transact'>;
  private readonly timers: WriterTimers;
  private readonly pendingMax: number;
  private readonly batchMax: number;
  private readonly retryDelayMs: number;
  private readonly attemptsMax: number;
  private readonly onError: ((message: string) => void) | undefined;
  private readonly pending = new Map<string, Pending>();
  /** Row → the status last asked for, until the SB view shows it (or it is given up). */
  private readonly asked = new Map<string, SvcStatus>();
  private inFlight: Promise<void> | undefined;
  private timer: unknown;
  private timerAtMs = Infinity;
  private closed = false;
  readonly stats: SvcStatusStats = { queued: 0, replaced: 0, unchanged: 0, droppedFull: 0, written: 0, transactions: 0, failedTransactions: 0, gaveUp: 0 };

  constructor(options: SvcStatusWriterOptions) {
    this.sb = options.sb;
    this.timers = options.timers;
    this.pendingMax = options.pendingMax ?? svcStatusPendingMax;
    this.batchMax = options.batchMax ?? svcStatusBatchMax;
    this.retryDelayMs = options.retryDelayMs ?? 1000;
    this.attemptsMax = options.attemptsMax ?? 3;
    this.onError = options.onError;
    assert(this.pendingMax > 0 && this.batchMax > 0 && this.attemptsMax > 0, 'SvcStatusWriter limits must be positive');
  }

  get pendingN(): number {
    return this.pending.size;
  }

  /** Asks for row `uuid`'s status to be `status` (the caller saw the SB view say otherwise). */
  set(uuid: string, status: SvcStatus): SetResult {
    assert(!this.closed, 'set on a closed SvcStatusWriter');
    if (this.asked.get(uuid) === status) {
      this.stats.unchanged++;
      return 'unchanged';
    }
    const p = this.pending.get(uuid);
    if (p !== undefined) {
      p.status = status;
      this.asked.set(uuid, status);
      this.stats.replaced++;
      return 'replaced';
    }
    if (this.pending.size >= this.pendingMax || (!this.asked.has(uuid) && this.asked.size >= 2 * this.pendingMax)) {
      this.stats.droppedFull++;
      return 'full';
    }
    this.pending.set(uuid, { uuid, status, dueMs: this.timers.now(), attempts: 0 });
    this.asked.set(uuid, status);
    this.stats.queued++;
    this.schedule();
    return 'queued';
  }

  /** The SB view shows `sbStatus` for the row: a status it confirms need not be remembered. */
  observed(uuid: string, sbStatus: string | undefined): void {
    if (!this.pending.has(uuid) && this.asked.get(uuid) === sbStatus) this.asked.delete(uuid);
  }

  /** The row is no longer probed here: what waits for it is dropped. */
  forget(uuid: string): void {
    this.pending.delete(uuid);
    this.asked.delete(uuid);
  }

  /** Writes everything due now, batch after batch; resolves when done. */
  async flush(): Promise<void> {
    for (let guard = 0; guard <= this.pendingMax + 1; guard++) {
      while (this.inFlight !== undefined) await this.inFlight;
      const batch = this.takeDue();
      if (batch.length === 0) break;
      this.inFlight = this.commit(batch).finally(() => {
        this.inFlight = undefined;
      });
    }
    this.schedule();
  }

  /** Stops the timer; what still waits is not written. */
  close(): void {
    this.closed = true;
    this.timers.clearTimeout(this.timer);
    this.timerAtMs = Infinity;
  }

  private takeDue(): Pending[] {
    const now = this.timers.now();
    const batch: Pending[] = [];
    for (const p of this.pending.values()) {
      if (batch.length >= this.batchMax) break;
      if (p.dueMs <= now) batch.push(p);
    }
    for (const p of batch) this.pending.delete(p.uuid);
    return batch;
  }

  private schedule(): void {
    if (this.closed || this.inFlight !== undefined) return;
    let at = Infinity;
    for (const p of this.pending.values()) at = Math.min(at, p.dueMs);
    if (at === Infinity || at >= this.timerAtMs) return;
    this.timers.clearTimeout(this.timer);
    this.timerAtMs = at;
    this.timer = this.timers.setTimeout(() => {
      this.timerAtMs = Infinity;
      void this.flush();
    }, Math.max(0, at - this.timers.now()));
  }

  private async commit(batch: readonly Pending[]): Promise<void> {
    const ops = batch.map((p) => ({ op: 'update', table: 'Service_Monitor', where: [['_uuid', '==', ['uuid', p.uuid]]], row: { status: p.status } }));
    this.stats.transactions++;
    let failure: string | undefined;
    try {
      failure = transactionError(await this.sb.transact(ops));
    } catch (err) {
      failure = err instanceof Error ? err.message : String(err);
    }
    if (failure === undefined) {
      this.stats.written += batch.length;
      return;
    }
    this.stats.failedTransactions++;
    this.onError?.(`Service_Monitor status transaction of ${ops.length} rows failed: ${failure}`);
    const retryAtMs = this.timers.now() + this.retryDelayMs;
    for (const p of batch) {
      if (this.pending.has(p.uuid) || this.asked.get(p.uuid) !== p.status) continue; // Superseded or forgotten.
      if (p.attempts + 1 >= this.attemptsMax || this.pending.size >= this.pendingMax || this.closed) {
        this.asked.delete(p.uuid);
        this.stats.gaveUp++;
        continue;
      }
      this.pending.set(p.uuid, { uuid: p.uuid, status: p.status, dueMs: retryAtMs, attempts: p.attempts + 1 });
    }
  }
}

/** The first error an OVSDB transaction's results report, if any (RFC 7047 §4.1.3). */
function transactionError(results: readonly unknown[]): string | undefined {
  for (const r of results) {
    if (typeof r === 'object' && r !== null && 'error' in r) {
      const e = r as { error: unknown; details?: unknown };
      return `${String(e.error)}${typeof e.details === 'string' ? `: ${e.details}` : ''}`;
    }
  }
  return undefined;
}
