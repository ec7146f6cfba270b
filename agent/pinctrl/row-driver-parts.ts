// What the drivers of the rows a chassis acts on by itself (health checks, BFD sessions) share:
// reporting the rows a sync could not take, once per change rather than on every sync, and
// sending a packet-out that may find the OpenFlow channel gone.
import { ChannelError } from '../openflow/channel.js';
import type { OfMessage } from '../openflow/messages.js';
import type { PinctrlChannel } from './pinctrl.js';

/** The counters RowProblems keeps up to date. */
export interface RowProblemStats {
  refused: number;
  skipped: number;
}

/**
 * The rows a sync refused (past the driver's limit) and those it could not use, reported when
 * they differ from the last sync's: `rows` names them in messages ("BFD rows not run").
 */
export class RowProblems {
  private refusedN = 0;
  private skippedText = '';

  constructor(private readonly rows: string, private readonly stats: RowProblemStats, private readonly onProblem: ((message: string) => void) | undefined) {}

  note(refused: number, limitText: () => string, skipped: readonly string[]): void {
    if (refused !== this.refusedN) {
      this.refusedN = refused;
      this.stats.refused = refused;
      if (refused > 0) this.onProblem?.(`${refused} ${this.rows}: ${limitText()}`);
    }
    const skippedText = skipped.join('\n');
    if (skippedText === this.skippedText) return;
    this.skippedText = skippedText;
    this.stats.skipped += skipped.length;
    if (skipped.length > 0) this.onProblem?.(`${this.rows}: ${skipped.slice(0, 3).join('; ')}${skipped.length > 3 ? ` and ${skipped.length - 3} more` : ''}`);
  }
}

/**
 * Sends `m` on `channel`; false (and `what` reported) when the channel refuses it. Any other
 * error is a bug and is thrown.
 */
export function sendPacketOut(channel: PinctrlChannel, m: OfMessage, what: string, onProblem: ((message: string) => void) | undefined): boolean {
  try {
    channel.send(m);
    return true;
  } catch (err) {
    if (!(err instanceof ChannelError)) throw err;
    onProblem?.(`${what} not sent: ${err.message}`);
    return false;
  }
}
