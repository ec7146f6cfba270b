// The agent's packet-in service (OVN's pinctrl): the runtime hands it every NXT_PACKET_IN2 the
// integration bridge sends; it decides (handlers.ts) and carries out the answer — a packet-out or
// a resume on the OpenFlow channel, a learned MAC binding for the batched SB writer, or a virtual
// port's claim (bind_vport) for the vport writer.
//
// Packet-ins are best effort, as in ovn-controller: an answer the channel refuses (disconnected,
// or its send buffer full) is counted and dropped, never queued; the switch will send the next
// packet. Only MAC bindings and virtual port claims wait, in their writers' bounded tables.

import { ChannelError } from '../openflow/channel.js';
import type { OfMessage, PacketIn2 } from '../openflow/messages.js';
import type { SbSource } from '../sb-source.js';
import { decidePacketIn, emptyPacketInContext, opcodeName, type IgnoreReason, type PacketInContext, type PacketInDecision } from './handlers.js';
import {
  MacBindingWriter, type MacBindingLookup, type MacBindingStats, type MacBindingWriterOptions, type PutResult, type WriterTimers,
} from './mac-binding-writer.js';
import { VportBindingWriter, type VportBindingStats, type VportLookup, type VportPutResult } from './vport-binding-writer.js';

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
  /** Port and chassis lookups for bind_vport claims; without them bind_vport is not handled. */
  readonly vportLookup?: VportLookup;
  /** Told of each virtual port claimed (for logs). */
  readonly onVportClaim?: (vport: string, parent: string) => void;
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
  | { readonly kind: 'vport_claim'; readonly opcode: number; readonly put: VportPutResult }
  | { readonly kind: 'ignored'; readonly opcode?: number; readonly reason: IgnoreReason | 'not_sent'; readonly message: string };

export interface PinctrlStats {
  packetIns: number;
  packetOuts: number;
  resumes: number;
  learned: number;
  /** bind_vport packet-ins handed to the vport writer. */
  vportClaims: number;
  /** Ignored packet-ins by reason, and answers the channel refused ('not_sent'). */
  readonly ignored: Record<IgnoreReason | 'not_sent', number>;
  readonly macBindings: MacBindingStats;
  /** Absent without a vport lookup. */
  readonly vportBindings: VportBindingStats | undefined;
}

export class Pinctrl {
  private readonly channel: PinctrlChannel;
  private readonly writer: MacBindingWriter;
  private readonly vportWriter: VportBindingWriter | undefined;
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
    this.vportWriter = options.vportLookup === undefined ? undefined : new VportBindingWriter({
      sb: options.sb, lookup: options.vportLookup,
      ...(options.timers === undefined ? {} : { timers: options.timers }),
      ...(options.onProblem === undefined ? {} : { onError: options.onProblem }),
      ...(options.onVportClaim === undefined ? {} : { onClaim: options.onVportClaim }),
    });
    this.stats = {
      packetIns: 0, packetOuts: 0, resumes: 0, learned: 0, vportClaims: 0,
      ignored: { not_action: 0, no_header: 0, unknown_opcode: 0, unsupported_opcode: 0, bad_packet: 0, bad_userdata: 0, no_continuation: 0, not_sent: 0 },
      macBindings: this.writer.stats,
      vportBindings: this.vportWriter?.stats,
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
      case 'bind_vport': {
        if (this.vportWriter === undefined) {
          this.stats.ignored.unsupported_opcode++;
          const message = 'bind_vport is not handled without port lookups';
          this.onProblem?.(`packet-in ignored (unsupported_opcode): ${message}`);
          return { kind: 'ignored', opcode: d.opcode, reason: 'unsupported_opcode', message };
        }
        const put = this.vportWriter.put(d.binding);
        this.stats.vportClaims++;
        return { kind: 'vport_claim', opcode: d.opcode, put };
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

  /** Writes every virtual port claim waiting; resolves when its transaction is done. */
  flushVportBindings(): Promise<void> {
    return this.vportWriter?.flush() ?? Promise.resolve();
  }

  /** Stops the writers' timers; bindings and claims still waiting are not written. */
  close(): void {
    this.writer.close();
    this.vportWriter?.close();
  }
}
