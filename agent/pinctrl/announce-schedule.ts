// What pinctrl sends unasked on a schedule (periodic router advertisements, gratuitous ARPs):
// entries by key, each with the time of its next packet, one timer for the earliest due, and the
// packet-outs counted, those the OpenFlow channel refuses as well. A subclass says what an entry
// sends (one packet or several, as a querier's IGMP and MLD queries) and when it is due next;
// timers are injected.

import { ChannelError } from '../openflow/channel.js';
import type { OfMessage } from '../openflow/messages.js';
import type { WriterTimers } from './batch-writer.js';
import type { PinctrlChannel } from './pinctrl.js';

/** Packets sent, and those the channel could not take. */
export interface AnnounceStats {
  sent: number;
  notSent: number;
}

export interface AnnounceOptions {
  readonly channel: PinctrlChannel;
  readonly timers: WriterTimers;
  readonly onProblem?: ((message: string) => void) | undefined;
}

/** An entry: its time of next sending (Infinity: none). */
export interface AnnounceState {
  nextMs: number;
}

export abstract class AnnounceSchedule<S extends AnnounceState> {
  readonly stats: AnnounceStats = { sent: 0, notSent: 0 };
  protected readonly states = new Map<string, S>();
  private timer: unknown;

  constructor(protected readonly options: AnnounceOptions) {}

  /** What entry `s` sends now, each packet with what to call it in a problem report. */
  protected abstract packetsOf(s: S): readonly { message: OfMessage; what: string }[];

  /** Sets `s.nextMs` after a sending at `now`. */
  protected abstract reschedule(s: S, now: number): void;

  /** The keys with an entry, for tests and counters. */
  get keys(): string[] {
    return [...this.states.keys()].sort();
  }

  /** Sets the one timer for the earliest entry due (after entries changed or were sent). */
  protected arm(): void {
    this.options.timers.clearTimeout(this.timer);
    this.timer = undefined;
    let next = Infinity;
    for (const s of this.states.values()) next = Math.min(next, s.nextMs);
    if (next === Infinity) return;
    this.timer = this.options.timers.setTimeout(() => this.fire(), Math.max(0, next - this.options.timers.now()));
  }

  private fire(): void {
    this.timer = undefined;
    const now = this.options.timers.now();
    for (const s of this.states.values()) {
      if (s.nextMs > now) continue;
      // A packet the channel refuses does not keep the entry's others from being sent.
      for (const { message, what } of this.packetsOf(s)) {
        try {
          this.options.channel.send(message);
          this.stats.sent++;
        } catch (err) {
          if (!(err instanceof ChannelError)) throw err;
          this.stats.notSent++;
          this.options.onProblem?.(`${what} not sent: ${err.message}`);
        }
      }
      this.reschedule(s, now);
    }
    this.arm();
  }

  close(): void {
    this.options.timers.clearTimeout(this.timer);
    this.timer = undefined;
    this.states.clear();
  }
}
