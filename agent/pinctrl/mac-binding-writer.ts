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

import type { SbSource } from '../sb-source.js';
import { BatchWriter, realTimers, type BatchEntry, type BatchPlan, type PutResult, type WriterTimers } from './batch-writer.js';
import type { Mac } from './packet.js';

export { realTimers, transactionError, type PutResult, type WriterTimers } from './batch-writer.js';

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

const keyOf = (b: LearnedBinding): string => `${b.dpKey}/${b.portKey}/${b.ip}`;

export class MacBindingWriter {
  private readonly lookup: MacBindingLookup;
  private readonly timers: WriterTimers;
  private readonly wallClockMs: () => number;
  private readonly random: () => number;
  private readonly onError: ((message: string) => void) | undefined;
  private readonly batches: BatchWriter<LearnedBinding>;
  readonly stats: MacBindingStats = {
    queued: 0, replaced: 0, droppedFull: 0, inserted: 0, updated: 0, unchanged: 0, unknownPort: 0, transactions: 0, failedTransactions: 0, gaveUp: 0,
  };

  constructor(options: MacBindingWriterOptions) {
    this.lookup = options.lookup;
    this.timers = options.timers ?? realTimers;
    this.wallClockMs = options.wallClockMs ?? (() => Date.now());
    this.random = options.random ?? Math.random;
    this.onError = options.onError;
    const pendingMax = options.pendingMax ?? macBindingPendingMax;
    this.batches = new BatchWriter({
      name: 'MacBindingWriter', sb: options.sb, timers: this.timers, stats: this.stats,
      pendingMax, batchMax: options.batchMax ?? macBindingBatchMax, flushBatchesMax: pendingMax + 2,
      retryDelayMs: options.retryDelayMs ?? 1000, attemptsMax: options.attemptsMax ?? 3,
      plan: (batch) => this.plan(batch),
      onGaveUp: () => {
        this.stats.gaveUp++;
      },
    });
  }

  /** Bindings waiting to be written (not counting a transaction in flight). */
  get pendingN(): number {
    return this.batches.pendingN;
  }

  /** Learns one binding; it is written when due, in the next batch. */
  put(binding: LearnedBinding): PutResult {
    return this.batches.put(keyOf(binding), binding, () => {
      const delayMs = binding.unicast ? 0 : Math.floor(this.random() * multicastDelayMsMax) + 1;
      return this.timers.now() + delayMs;
    });
  }

  /**
   * Writes every binding that is due now, batch after batch, and resolves when done (a
   * transaction already in flight is waited for first). The timer calls this by itself; tests
   * and shutdown call it to be sure.
   */
  flush(): Promise<void> {
    return this.batches.flush();
  }

  /** Stops the timer; what still waits is not written. */
  close(): void {
    this.batches.close();
  }

  /** An insert, an update or nothing for each binding; a failed transaction puts them all back to retry. */
  private plan(batch: readonly BatchEntry<LearnedBinding>[]): BatchPlan {
    const ops: unknown[] = [];
    const counts = { inserted: 0, updated: 0 };
    const timestamp = this.wallClockMs();
    for (const { item: b } of batch) {
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
    return {
      ops,
      committed: () => {
        this.stats.inserted += counts.inserted;
        this.stats.updated += counts.updated;
      },
      failed: (failure) => this.onError?.(`MAC_Binding transaction of ${ops.length} ops failed: ${failure}`),
    };
  }
}
