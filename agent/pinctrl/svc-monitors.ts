// The shell around the health-check state machine (svc-monitor-table.ts): it owns the timer that
// runs the monitors when the next probe or timeout is due, sends their packet-outs on the
// OpenFlow channel, and hands decided statuses to the Service_Monitor status writer.
//
// Loop: sync (the SB view changed) and a reply (a handle_svc_check packet-in) both run the table
// at once, as ovn-controller's pinctrl thread does after either; otherwise the one timer fires at
// the table's nextRunMs. While the channel is not ready nothing runs (no probe could go out, and
// none can be answered); the timer retries every channelRetryMs. A packet-out the channel refuses
// is lost like a dropped packet: its probe times out.

import { realTimers, type WriterTimers } from './batch-writer.js';
import type { PinctrlChannel } from './pinctrl.js';
import type { OfMessage } from '../openflow/messages.js';
import type { SbSource } from '../sb-source.js';
import { SvcMonitorTable, type ReplyOutcome, type SvcMonitorLimits, type SvcMonitorSpec, type SvcStatusChange } from './svc-monitor-table.js';
import type { SvcReply } from './svc-probe.js';
import { RowProblems, sendPacketOut } from './row-driver-parts.js';
import { SvcStatusWriter, type SvcStatusStats, type SvcStatusWriterOptions } from './svc-status-writer.js';

/** How often a run is tried again while the channel is not ready. */
export const channelRetryMs = 1000;

export interface SvcMonitorsOptions {
  readonly channel: PinctrlChannel;
  readonly sb: Pick<SbSource, 'transact'>;
  readonly timers?: WriterTimers;
  /** A float in [0, 1): TCP sequence numbers and source ports (Math.random by default). */
  readonly random?: () => number;
  readonly limits?: Partial<SvcMonitorLimits>;
  readonly writer?: Pick<SvcStatusWriterOptions, 'batchMax' | 'retryDelayMs' | 'attemptsMax'>;
  readonly onProblem?: (message: string) => void;
}

export interface SvcMonitorStats {
  probesSent: number;
  /** Probe or RST packet-outs the channel refused. */
  notSent: number;
  /** Probes due while probesInFlightMax were waiting (sent later). */
  deferred: number;
  /** Replies by outcome. */
  readonly replies: Record<ReplyOutcome, number>;
  statusChanges: number;
  /** Rows bound here not monitored at the last sync because monitorsMax monitors exist. */
  refused: number;
  /** Unusable rows reported (each set of them once). */
  skipped: number;
  readonly writes: SvcStatusStats;
}

export class SvcMonitors {
  readonly table: SvcMonitorTable;
  private readonly writer: SvcStatusWriter;
  private readonly channel: PinctrlChannel;
  private readonly timers: WriterTimers;
  private readonly onProblem: ((message: string) => void) | undefined;
  private timer: unknown;
  private closed = false;
  /** The rows refused and the unusable rows at the last sync, so that each is reported once. */
  private readonly problems: RowProblems;
  readonly stats: SvcMonitorStats;

  constructor(options: SvcMonitorsOptions) {
    this.channel = options.channel;
    this.timers = options.timers ?? realTimers;
    this.onProblem = options.onProblem;
    this.table = new SvcMonitorTable({ random: options.random ?? Math.random, ...(options.limits === undefined ? {} : { limits: options.limits }) });
    this.writer = new SvcStatusWriter({
      sb: options.sb, timers: this.timers, pendingMax: options.limits?.monitorsMax ?? 1000, ...options.writer,
      ...(options.onProblem === undefined ? {} : { onError: options.onProblem }),
    });
    this.stats = {
      probesSent: 0, notSent: 0, deferred: 0, statusChanges: 0, refused: 0, skipped: 0,
      replies: { success: 0, failure: 0, no_monitor: 0, not_ours: 0, not_decisive: 0 },
      writes: this.writer.stats,
    };
    this.problems = new RowProblems('Service_Monitor rows not probed', this.stats, this.onProblem);
  }

  /**
   * The rows this chassis probes now (serviceMonitorSpecs of the SB view), and those it could not.
   * Monitors come and go, statuses the SB view lacks are written, and the monitors run.
   */
  sync(specs: readonly SvcMonitorSpec[], skipped: readonly string[] = []): void {
    if (this.closed) return;
    const r = this.table.sync(specs);
    for (const uuid of r.removed) this.writer.forget(uuid);
    for (const s of specs) this.writer.observed(s.uuid, s.sbStatus);
    this.problems.note(r.refused, () => `${this.table.size} monitors is the limit`, skipped);
    this.write(this.table.statusWrites());
    this.run();
  }

  /** A handle_svc_check reply: counted against its monitor, then the monitors run. */
  handleReply(reply: SvcReply): ReplyOutcome {
    if (this.closed) return 'no_monitor';
    const r = this.table.onReply(reply, this.timers.now());
    this.stats.replies[r.outcome]++;
    for (const m of r.packets) this.send(m);
    this.run();
    return r.outcome;
  }

  /** Writes every status that is due; resolves when its transactions are done. */
  flush(): Promise<void> {
    return this.writer.flush();
  }

  close(): void {
    this.closed = true;
    this.timers.clearTimeout(this.timer);
    this.writer.close();
  }

  private run(): void {
    this.timers.clearTimeout(this.timer);
    this.timer = undefined;
    if (this.closed) return;
    if (this.channel.isReady === false) {
      if (this.table.size > 0) this.arm(this.timers.now() + channelRetryMs);
      return;
    }
    const now = this.timers.now();
    const out = this.table.run(now);
    this.stats.deferred += out.deferred;
    for (const m of out.probes) {
      if (this.send(m)) this.stats.probesSent++;
    }
    this.write(out.writes);
    this.stats.statusChanges += out.changed.length;
    if (out.nextRunMs !== Infinity) this.arm(out.nextRunMs);
  }

  private arm(atMs: number): void {
    this.timer = this.timers.setTimeout(() => {
      this.timer = undefined;
      this.run();
    }, Math.max(0, atMs - this.timers.now()));
  }

  private send(m: OfMessage): boolean {
    if (sendPacketOut(this.channel, m, 'health check packet-out', this.onProblem)) return true;
    this.stats.notSent++;
    return false;
  }

  private write(changes: readonly SvcStatusChange[]): void {
    for (const c of changes) this.writer.set(c.uuid, c.status);
  }
}
