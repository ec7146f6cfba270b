// The shell around the BFD session table (bfd-session-table.ts): it owns the timer that runs
// the sessions when the next packet or detection timeout is due, sends their packet-outs on the
// OpenFlow channel, and hands their state changes to the BFD.status writer.
//
// Loop: sync (the SB view changed) and a peer's packet (a handle_bfd_msg packet-in) both run
// the table at once; otherwise the one timer fires at the table's nextRunMs. The table runs
// whether or not the channel is ready, so that a silent peer is found down on time; while it is
// not, the packets are dropped (counted), as a switch that is not there would lose them.
//
// Departure from ovn-controller: it batches its BFD.status writes (ten changes, or 5 s after the
// first); we write each change as soon as it happens, coalesced per row (a newer state for a row
// still waiting replaces it) in the shared bounded writer (status-column-writer.ts), so that
// northd moves the routes of a failed next hop at once.

import type { OfMessage } from '../openflow/messages.js';
import type { SbSource } from '../sb-source.js';
import { realTimers, type WriterTimers } from './batch-writer.js';
import type { BfdMessage, BfdStatus } from './bfd-packet.js';
import { BfdSessionTable, bfdSessionLimits, type BfdMessageOutcome, type BfdSessionLimits, type BfdStatusChange } from './bfd-session-table.js';
import type { BfdSessionSpec } from './bfd-specs.js';
import type { PinctrlChannel } from './pinctrl.js';
import { RowProblems, sendPacketOut } from './row-driver-parts.js';
import { StatusColumnWriter, type StatusColumnWriterOptions, type StatusWriterStats } from './status-column-writer.js';

export interface BfdSessionsOptions {
  readonly channel: PinctrlChannel;
  readonly sb: Pick<SbSource, 'transact'>;
  readonly timers?: WriterTimers;
  /** A float in [0, 1): the transmit jitter (Math.random by default). */
  readonly random?: () => number;
  readonly limits?: Partial<BfdSessionLimits>;
  readonly writer?: Pick<StatusColumnWriterOptions, 'batchMax' | 'retryDelayMs' | 'attemptsMax'>;
  readonly onProblem?: (message: string) => void;
}

export interface BfdSessionStats {
  packetsSent: number;
  /** Packet-outs the channel refused or could not take (not ready). */
  notSent: number;
  /** Peers' packets by outcome. */
  readonly messages: Record<BfdMessageOutcome, number>;
  /** Polls answered with a final packet. */
  finalsSent: number;
  stateChanges: number;
  /** Rows this chassis runs that are not run because sessionsMax sessions exist (at the last sync). */
  refused: number;
  /** Unusable rows reported (each set of them once). */
  skipped: number;
  readonly writes: StatusWriterStats;
}

export class BfdSessions {
  readonly table: BfdSessionTable;
  private readonly writer: StatusColumnWriter<BfdStatus>;
  private readonly channel: PinctrlChannel;
  private readonly timers: WriterTimers;
  private readonly onProblem: ((message: string) => void) | undefined;
  private timer: unknown;
  private closed = false;
  /** The rows refused and the unusable rows at the last sync, so that each is reported once. */
  private readonly problems: RowProblems;
  readonly stats: BfdSessionStats;

  constructor(options: BfdSessionsOptions) {
    this.channel = options.channel;
    this.timers = options.timers ?? realTimers;
    this.onProblem = options.onProblem;
    this.table = new BfdSessionTable({ random: options.random ?? Math.random, ...(options.limits === undefined ? {} : { limits: options.limits }) });
    this.writer = new StatusColumnWriter<BfdStatus>({ table: 'BFD', name: 'BfdStatusWriter' }, {
      sb: options.sb, timers: this.timers, pendingMax: options.limits?.sessionsMax ?? bfdSessionLimits.sessionsMax, ...options.writer,
      ...(options.onProblem === undefined ? {} : { onError: options.onProblem }),
    });
    this.stats = {
      packetsSent: 0, notSent: 0, finalsSent: 0, stateChanges: 0, refused: 0, skipped: 0,
      messages: { handled: 0, no_session: 0 }, writes: this.writer.stats,
    };
    this.problems = new RowProblems('BFD rows not run', this.stats, this.onProblem);
  }

  /**
   * The rows this chassis runs now (bfdSessionSpecs of the SB view), and those it could not.
   * Sessions come and go, take their rows' settings and status, and run.
   */
  sync(specs: readonly BfdSessionSpec[], skipped: readonly string[] = []): void {
    if (this.closed) return;
    const r = this.table.sync(specs, this.timers.now());
    for (const uuid of [...r.removed, ...r.overruled]) this.writer.forget(uuid);
    for (const s of specs) this.writer.observed(s.uuid, s.sbStatus);
    this.problems.note(r.refused, () => `${this.table.size} sessions is the limit`, skipped);
    this.write(this.table.statusWrites());
    this.run();
  }

  /** A peer's control packet (parseBfdMessage's): its session steps, a poll is answered, the sessions run. */
  handleMessage(m: BfdMessage): BfdMessageOutcome {
    if (this.closed) return 'no_session';
    const r = this.table.onMessage(m, this.timers.now());
    this.stats.messages[r.outcome]++;
    for (const p of r.packets) if (this.send(p)) this.stats.finalsSent++;
    this.stats.stateChanges += r.changes.length;
    this.write(r.writes);
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
    const out = this.table.run(this.timers.now());
    for (const p of out.packets) if (this.send(p)) this.stats.packetsSent++;
    this.stats.stateChanges += out.changes.length;
    this.write(out.writes);
    if (out.nextRunMs === Infinity) return;
    this.timer = this.timers.setTimeout(() => {
      this.timer = undefined;
      this.run();
    }, Math.max(0, out.nextRunMs - this.timers.now()));
  }

  private send(m: OfMessage): boolean {
    if (this.channel.isReady === false) {
      this.stats.notSent++;
      return false;
    }
    if (sendPacketOut(this.channel, m, 'BFD packet-out', this.onProblem)) return true;
    this.stats.notSent++;
    return false;
  }

  private write(changes: readonly BfdStatusChange[]): void {
    for (const c of changes) this.writer.set(c.uuid, c.status);
  }
}
