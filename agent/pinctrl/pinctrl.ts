// The agent's packet-in service (OVN's pinctrl): the runtime hands it every NXT_PACKET_IN2 the
// integration bridge sends; it decides (handlers.ts) and carries out the answer — a packet-out or
// a resume on the OpenFlow channel, or a learned MAC binding for the batched SB writer.
//
// Packet-ins are best effort, as in ovn-controller: an answer the channel refuses (disconnected,
// or its send buffer full) is counted and dropped, never queued; the switch will send the next
// packet. Only MAC bindings wait, in the writer's bounded table.

import { ChannelError } from '../openflow/channel.js';
import type { OfMessage, PacketIn2 } from '../openflow/messages.js';
import type { SbSource } from '../sb-source.js';
import { decidePacketIn, emptyPacketInContext, opcodeName, type IgnoreReason, type PacketInContext, type PacketInDecision } from './handlers.js';
import {
  MacBindingWriter, type MacBindingLookup, type MacBindingStats, type MacBindingWriterOptions, type PutResult, type WriterTimers,
} from './mac-binding-writer.js';

/** The part of the OpenFlow channel pinctrl uses; OfChannel has it. send throws ChannelError
 *  ('disconnected', 'overloaded') when the message cannot go out now. */
export interface PinctrlChannel {
  send(msg: OfMessage): void;
}

export interface PinctrlOptions {
  readonly channel: PinctrlChannel;
  /** Where learned MAC bindings are written (the agent's SB stream). */
  readonly sb: Pick<SbSource, 'transact'>;
  /** Port, datapath and MAC_Binding lookups in the agent's current SB view. */
  readonly lookup: MacBindingLookup;
  /** What the answers read of the current SB view (DNS records); none when absent. */
  readonly context?: PacketInContext;
  readonly timers?: WriterTimers;
  readonly wallClockMs?: () => number;
  readonly random?: () => number;
  /** Limits of the MAC-binding writer (pendingMax, batchMax, retryDelayMs, attemptsMax). */
  readonly macBindings?: Pick<MacBindingWriterOptions, 'pendingMax' | 'batchMax' | 'retryDelayMs' | 'attemptsMax'>;
  /** Told of what went wrong (ignored packet-ins, refused sends, failed SB transactions); for logs. */
  readonly onProblem?: (message: string) => void;
}

/** What handlePacketIn did. */
export type PacketInOutcome =
  | { readonly kind: 'sent'; readonly opcode: number; readonly message: OfMessage; readonly result?: boolean }
  | { readonly kind: 'learned'; readonly opcode: number; readonly put: PutResult }
  | { readonly kind: 'ignored'; readonly opcode?: number; readonly reason: IgnoreReason | 'not_sent'; readonly message: string };

export interface PinctrlStats {
  packetIns: number;
  packetOuts: number;
  resumes: number;
  learned: number;
  /** Ignored packet-ins by reason, and answers the channel refused ('not_sent'). */
  readonly ignored: Record<IgnoreReason | 'not_sent', number>;
  readonly macBindings: MacBindingStats;
}

export class Pinctrl {
  private readonly channel: PinctrlChannel;
  private readonly writer: MacBindingWriter;
  private readonly context: PacketInContext;
  private readonly onProblem: ((message: string) => void) | undefined;
  readonly stats: PinctrlStats;

  constructor(options: PinctrlOptions) {
    this.channel = options.channel;
    this.context = options.context ?? emptyPacketInContext;
    this.onProblem = options.onProblem;
    this.writer = new MacBindingWriter({
      sb: options.sb, lookup: options.lookup,
      ...(options.timers === undefined ? {} : { timers: options.timers }),
      ...(options.wallClockMs === undefined ? {} : { wallClockMs: options.wallClockMs }),
      ...(options.random === undefined ? {} : { random: options.random }),
      ...options.macBindings,
      ...(options.onProblem === undefined ? {} : { onError: options.onProblem }),
    });
    this.stats = {
      packetIns: 0, packetOuts: 0, resumes: 0, learned: 0,
      ignored: { not_action: 0, no_header: 0, unknown_opcode: 0, unsupported_opcode: 0, bad_packet: 0, bad_userdata: 0, no_continuation: 0, not_sent: 0 },
      macBindings: this.writer.stats,
    };
  }

  /** Handles one packet-in; synchronous (a learned binding is written later, in a batch). */
  handlePacketIn(pin: PacketIn2): PacketInOutcome {
    this.stats.packetIns++;
    const d: PacketInDecision = decidePacketIn(pin, this.context);
    switch (d.kind) {
      case 'ignored':
        this.stats.ignored[d.reason]++;
        this.onProblem?.(`packet-in ignored (${d.reason}): ${d.message}`);
        return d;
      case 'learn': {
        const put = this.writer.put(d.binding);
        this.stats.learned++;
        return { kind: 'learned', opcode: d.opcode, put };
      }
      case 'packet_out':
      case 'resume': {
        try {
          this.channel.send(d.message);
        } catch (err) {
          if (!(err instanceof ChannelError)) throw err;
          this.stats.ignored.not_sent++;
          const message = `${opcodeName(d.opcode)}: ${d.kind} not sent: ${err.message}`;
          this.onProblem?.(message);
          return { kind: 'ignored', opcode: d.opcode, reason: 'not_sent', message };
        }
        if (d.kind === 'packet_out') {
          this.stats.packetOuts++;
          return { kind: 'sent', opcode: d.opcode, message: d.message };
        }
        this.stats.resumes++;
        return { kind: 'sent', opcode: d.opcode, message: d.message, result: d.result };
      }
    }
  }

  /** Writes every MAC binding that is due now; resolves when its transactions are done. */
  flushMacBindings(): Promise<void> {
    return this.writer.flush();
  }

  /** MAC bindings waiting to be written. */
  get pendingMacBindings(): number {
    return this.writer.pendingN;
  }

  /** Stops the writer's timer; bindings still waiting are not written. */
  close(): void {
    this.writer.close();
  }
}
