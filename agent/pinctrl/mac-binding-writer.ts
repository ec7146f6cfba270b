// put_arp / put_nd learning: IP-to-MAC bindings a logical router learned from packets, written
// into the SB MAC_Binding table through the agent's chassis-side transactions.
//
// As ovn-controller (pinctrl.c, mac-learn.c) does it: learned bindings wait in a bounded table
// keyed by (datapath, port, IP) — a newer MAC for the same key replaces the waiting one, and when
// the table is full new keys are dropped (the next ARP will teach them again). A binding learned
// from a unicast packet is due at once; one learned from a broadcast or multicast reply waits
// 1..50 ms, so that when every chassis sees the same gratuitous ARP they do not all write it at
// the same moment. Due bindings go out in batches, one transaction each, one transaction at a
// time: an insert of {logical_port, ip, mac, datapath, timestamp}, or an update of mac and
// timestamp when the SB already has the (logical_port, ip) row with another MAC, or nothing when
// it has the same MAC. A failed transaction (another chassis inserted the same row first, or the
// stream was down) puts its bindings back to retry, each at most attemptsMax times.
//
// Time, the wall clock written into timestamp, and the random delay are injected.

import assert from 'node:assert/strict';
import type { SbSource } from '../sb-source.js';
import type { Mac } from './packet.js';

/** What the writer reads of the agent's SB view; every call is a plain map read. */
export interface MacBindingLookup {
  /** The logical_port of the Port_Binding with tunnel key 'portKey' in the datapath with tunnel key 'dpKey'. */
  portName(dpKey: number, portKey: number): string | undefined;
  /** The _uuid of the Datapath_Binding with tunnel key 'dpKey'. */
  datapathUuid(dpKey: number): string | undefined;
  /** The SB MAC_Binding row for (logical_port, ip), as the agent's SB view has it now. */
  macBinding(logicalPort: string, ip: string): { readonly mac: string } | undefined;
}

/** One binding a packet taught; ip is the text MAC_Binding.ip holds (dotted IPv4, RFC 5952 IPv6). */
export interface LearnedBinding {
  readonly dpKey: number;
  readonly portKey: number;
  readonly ip: string;
  readonly mac: Mac;
  /** Learned from a unicast packet: written without the anti-stampede delay. */
  readonly unicast: boolean;
}

export interface WriterTimers {
  now(): number;
  setTimeout(f: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

const realTimers: WriterTimers = {
  now: () => performance.now(),
  setTimeout: (f, ms) => {
    const h = setTimeout(f, ms);
    // Learning is background work: it must not keep a process alive that is otherwise done.
    h.unref();
    return h;
  },
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

export interface MacBindingWriterOptions {
  readonly sb: Pick<SbSource, 'transact'>;
  readonly lookup: MacBindingLookup;
  readonly timers?: WriterTimers;
  /** Milliseconds since the epoch, for MAC_Binding.timestamp. */
  readonly wallClockMs?: () => number;
  /** A float in [0, 1), for the multicast delay. */
  readonly random?: () => number;
  /** Bindings that may wait at once (MAX_MAC_BINDINGS in ovn-controller). */
  readonly pendingMax?: number;
  /** Bindings per transaction. */
  readonly batchMax?: number;
  /** How long a binding whose transaction failed waits before it is tried again. */
  readonly retryDelayMs?: number;
  /** Transactions one binding may be part of before it is given up. */
  readonly attemptsMax?: number;
  /** Told of each failed transaction (the bindings are retried or given up as counted in stats). */
  readonly onError?: (message: string) => void;
}

export const macBindingPendingMax = 1000;
export const macBindingBatchMax = 100;
/** MAX_MAC_BINDING_DELAY_MSEC: the longest wait of a binding learned from a multicast packet. */
export const multicastDelayMsMax = 50;

export type PutResult = 'queued' | 'replaced' | 'full';

export interface MacBindingStats {
  /** Bindings accepted into the table (new keys). */
  queued: number;
  /** Bindings that replaced a waiting one for the same key. */
  replaced: number;
  /** Bindings dropped because the table was full. */
  droppedFull: number;
  /** Rows inserted or updated by committed transactions. */
  inserted: number;
  updated: number;
  /** Bindings the SB already had with the same MAC. */
  unchanged: number;
  /** Bindings whose port or datapath the SB view does not know. */
  unknownPort: number;
  transactions: number;
  failedTransactions: number;
  /** Bindings given up after attemptsMax failed transactions. */
  gaveUp: number;
}

interface Pending {
  readonly key: string;
  binding: LearnedBinding;
  commitAtMs: number;
  attempts: number;
}

const keyOf = (b: LearnedBinding): string => `${b.dpKey}/${b.portKey}/${b.ip}`;

export class MacBindingWriter {
  private readonly sb: Pick<SbSource, 'transact'>;
  private readonly lookup: MacBindingLookup;
  private readonly timers: WriterTimers;
  private readonly wallClockMs: () => number;
  private readonly random: () => number;
  private readonly pendingMax: number;
  private readonly batchMax: number;
  private readonly retryDelayMs: number;
  private readonly attemptsMax: number;
  private readonly onError: ((message: string) => void) | undefined;
  /** Waiting bindings in the order they were first learned. */
  private readonly pending = new Map<string, Pending>();
  private inFlight: Promise<void> | undefined;
  private timer: unknown;
  private timerAtMs = Infinity;
  private closed = false;
  readonly stats: MacBindingStats = {
    queued: 0, replaced: 0, droppedFull: 0, inserted: 0, updated: 0, unchanged: 0, unknownPort: 0, transactions: 0, failedTransactions: 0, gaveUp: 0,
  };

  constructor(options: MacBindingWriterOptions) {
    this.sb = options.sb;
    this.lookup = options.lookup;
    this.timers = options.timers ?? realTimers;
    this.wallClockMs = options.wallClockMs ?? (() => Date.now());
    this.random = options.random ?? Math.random;
    this.pendingMax = options.pendingMax ?? macBindingPendingMax;
    this.batchMax = options.batchMax ?? macBindingBatchMax;
    this.retryDelayMs = options.retryDelayMs ?? 1000;
    this.attemptsMax = options.attemptsMax ?? 3;
    this.onError = options.onError;
    assert(this.pendingMax > 0 && this.batchMax > 0 && this.attemptsMax > 0, 'MacBindingWriter limits must be positive');
  }

  /** Bindings waiting to be written (not counting a transaction in flight). */
  get pendingN(): number {
    return this.pending.size;
  }

  /** Learns one binding; it is written when due, in the next batch. */
  put(binding: LearnedBinding): PutResult {
    assert(!this.closed, 'put on a closed MacBindingWriter');
    const key = keyOf(binding);
    const old = this.pending.get(key);
    if (old !== undefined) {
      old.binding = binding;
      this.stats.replaced++;
      return 'replaced';
    }
    if (this.pending.size >= this.pendingMax) {
      this.stats.droppedFull++;
      return 'full';
    }
    const delayMs = binding.unicast ? 0 : Math.floor(this.random() * multicastDelayMsMax) + 1;
    this.pending.set(key, { key, binding, commitAtMs: this.timers.now() + delayMs, attempts: 0 });
    this.stats.queued++;
    this.schedule();
    return 'queued';
  }

  /**
   * Writes every binding that is due now, batch after batch, and resolves when done (a
   * transaction already in flight is waited for first). The timer calls this by itself; tests
   * and shutdown call it to be sure.
   */
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
      if (p.commitAtMs <= now) batch.push(p);
    }
    for (const p of batch) this.pending.delete(p.key);
    return batch;
  }

  /** Arms the timer for the earliest waiting binding (unless a sooner one is armed). */
  private schedule(): void {
    if (this.closed || this.inFlight !== undefined) return;
    let at = Infinity;
    for (const p of this.pending.values()) at = Math.min(at, p.commitAtMs);
    if (at === Infinity || at >= this.timerAtMs) return;
    this.timers.clearTimeout(this.timer);
    this.timerAtMs = at;
    this.timer = this.timers.setTimeout(() => {
      this.timerAtMs = Infinity;
      void this.flush();
    }, Math.max(0, at - this.timers.now()));
  }

  private async commit(batch: readonly Pending[]): Promise<void> {
    const ops: unknown[] = [];
    const counts = { inserted: 0, updated: 0 };
    const timestamp = this.wallClockMs();
    for (const p of batch) {
      const b = p.binding;
      const logicalPort = this.lookup.portName(b.dpKey, b.portKey);
      const datapath = this.lookup.datapathUuid(b.dpKey);
      if (logicalPort === undefined || datapath === undefined) {
        this.stats.unknownPort++;
        continue;
      }
      const existing = this.lookup.macBinding(logicalPort, b.ip);
      if (existing !== undefined && existing.mac === b.mac) {
        this.stats.unchanged++;
        continue;
      }
      if (existing === undefined) {
        ops.push({ op: 'insert', table: 'MAC_Binding', row: { logical_port: logicalPort, ip: b.ip, mac: b.mac, datapath: ['uuid', datapath], timestamp } });
        counts.inserted++;
      } else {
        ops.push({
          op: 'update', table: 'MAC_Binding', where: [['logical_port', '==', logicalPort], ['ip', '==', b.ip]], row: { mac: b.mac, timestamp },
        });
        counts.updated++;
      }
    }
    if (ops.length === 0) return;
    this.stats.transactions++;
    let failure: string | undefined;
    try {
      const results = await this.sb.transact(ops);
      failure = transactionError(results);
    } catch (err) {
      failure = err instanceof Error ? err.message : String(err);
    }
    if (failure === undefined) {
      this.stats.inserted += counts.inserted;
      this.stats.updated += counts.updated;
      return;
    }
    this.stats.failedTransactions++;
    this.onError?.(`MAC_Binding transaction of ${ops.length} ops failed: ${failure}`);
    this.requeue(batch);
  }

  /** Puts a failed batch back, behind anything learned since for the same keys. */
  private requeue(batch: readonly Pending[]): void {
    const retryAtMs = this.timers.now() + this.retryDelayMs;
    for (const p of batch) {
      if (this.pending.has(p.key)) continue; // A newer binding for the key waits already.
      if (p.attempts + 1 >= this.attemptsMax || this.pending.size >= this.pendingMax || this.closed) {
        this.stats.gaveUp++;
        continue;
      }
      this.pending.set(p.key, { key: p.key, binding: p.binding, commitAtMs: retryAtMs, attempts: p.attempts + 1 });
    }
  }
}

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
