// The agent's packet-in service (OVN's pinctrl): the runtime hands it every NXT_PACKET_IN2 the
// integration bridge sends; it decides (handlers.ts) and carries out the answer — a packet-out or
// a resume on the OpenFlow channel, a learned MAC binding for the batched SB writer, or a virtual
// port's claim (bind_vport) for the vport writer.
//
// Packet-ins are best effort, as in ovn-controller: an answer the channel refuses (disconnected,
// or its send buffer full) is counted and dropped, never queued; the switch will send the next
// packet. Only MAC bindings and virtual port claims wait, in their writers' bounded tables.
//
// It also runs this chassis's load balancer health checks (svc-monitors.ts): the SB rows come in
// through serviceMonitorsChanged, the backends' replies through handle_svc_check packet-ins.
//
// And the BFD sessions of the router ports whose traffic leaves through this chassis
// (bfd-sessions.ts): the SB BFD rows come in through bfdChanged, the peers' packets through
// handle_bfd_msg packet-ins, and the sessions' states go out to BFD.status.
//
// And IGMP/MLD snooping (igmp-snooping.ts): igmp packet-ins feed per-switch group tables, the
// message goes on to the multicast routers or the L2 domain, and the groups are written to the
// SB as this chassis's IGMP_Group rows.
//
// And empty load balancer events (controller-event-writer.ts): trigger_event packet-ins, from
// the flows of VIPs without backends, become this chassis's Controller_Event rows for the CMS.

import { ACTION_OPCODE } from '../compile/tables.js';
import { formatIpv6 } from '../expr/to-matches.js';
import { ChannelError } from '../openflow/channel.js';
import type { OfAction } from '../openflow/types.js';
import { BufferedPackets, hopKey, type BufferStats } from './buffered-packets.js';
import { readDatapathKey, readReg, readXxreg, reloadActions, type PacketInMetadata } from './metadata.js';
import { formatIpv4 } from './packet.js';
import type { OfMessage, PacketIn2 } from '../openflow/messages.js';
import type { SbSource } from '../sb-source.js';
import { decidePacketIn, emptyPacketInContext, opcodeName, type IgnoreReason, type PacketInContext, type PacketInDecision } from './handlers.js';
import {
  MacBindingWriter, type MacBindingLookup, type MacBindingStats, type MacBindingWriterOptions, type PutResult, type WriterTimers,
} from './mac-binding-writer.js';
import { VportBindingWriter, type VportBindingStats, type VportLookup, type VportPutResult } from './vport-binding-writer.js';
import type { ReplyOutcome, SvcMonitorSpec } from './svc-monitor-table.js';
import { SvcMonitors, type SvcMonitorsOptions } from './svc-monitors.js';
import type { BfdMessageOutcome } from './bfd-session-table.js';
import { BfdSessions, type BfdSessionsOptions } from './bfd-sessions.js';
import type { BfdSessionSpec } from './bfd-specs.js';
import { Garps, type GarpSpec } from './garp.js';
import { PeriodicRas, type PeriodicRaSpec } from './periodic-ra.js';
import { realTimers } from './batch-writer.js';
import { IgmpQueriers, type QuerierSpec } from './igmp-querier.js';
import { IgmpSnooping, type IgmpLookup, type IgmpOutcome, type IgmpSnoopingOptions, type IgmpStats } from './igmp-snooping.js';
import {
  ControllerEventWriter, type ControllerEventLimits, type ControllerEventLookup, type ControllerEventPutResult, type ControllerEventStats,
} from './controller-event-writer.js';

/** The part of the OpenFlow channel pinctrl uses; OfChannel has it. send throws ChannelError
 *  ('disconnected', 'overloaded') when the message cannot go out now. */
export interface PinctrlChannel {
  send(msg: OfMessage): void;
  /** False while the channel cannot send (health checks wait); absent means always ready. */
  readonly isReady?: boolean;
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
  /** Told of a migrating port's RARP here (activation-strategy=rarp); without it the RARP is ignored. */
  readonly onActivate?: (dpKey: number, portKey: number) => void;
  readonly timers?: WriterTimers;
  readonly wallClockMs?: () => number;
  readonly random?: () => number;
  /** Limits of the MAC-binding writer (pendingMax, batchMax, retryDelayMs, attemptsMax). */
  readonly macBindings?: Pick<MacBindingWriterOptions, 'pendingMax' | 'batchMax' | 'retryDelayMs' | 'attemptsMax'>;
  /** Told of what went wrong (ignored packet-ins, refused sends, failed SB transactions); for logs. */
  readonly onProblem?: (message: string) => void;
  /** A port's tunnel keys (its datapath's and its own) and options:chassis-redirect-port, by
   *  name: how a new MAC_Binding finds the packets held for it. Without it nothing is held. */
  readonly portKeys?: (logicalPort: string) => PortKeys | undefined;
  /** Milliseconds of a monotonic clock (held packets time out); performance.now by default. */
  readonly nowMs?: () => number;
  /** Limits of the health checks (monitorsMax, probesInFlightMax) and of their status writer. */
  readonly serviceMonitors?: Pick<SvcMonitorsOptions, 'limits' | 'writer'>;
  /** Limits of the BFD sessions (sessionsMax) and of their status writer. */
  readonly bfd?: Pick<BfdSessionsOptions, 'limits' | 'writer'>;
  /** What IGMP snooping reads of the SB view (sbIgmpLookup); without it the igmp action is not handled. */
  readonly igmpLookup?: IgmpLookup;
  /** Limits of the snooping's SB writer and its recheck period. */
  readonly igmpLimits?: IgmpSnoopingOptions['limits'];
  /** This chassis and its Controller_Event rows (sbControllerEventLookup); without it trigger_event is not handled. */
  readonly controllerEventLookup?: ControllerEventLookup;
  readonly controllerEventLimits?: Partial<ControllerEventLimits>;
}

export interface PortKeys {
  readonly dpKey: number;
  readonly portKey: number;
  readonly chassisRedirectPort?: string;
}

/** A MAC_Binding row as pinctrl reads it. */
export interface MacBindingRow {
  readonly logical_port: string;
  readonly ip: string;
  readonly mac: string;
}

/** What handlePacketIn did. */
export type PacketInOutcome =
  | { readonly kind: 'sent'; readonly opcode: number; readonly message: OfMessage; readonly result?: boolean }
  | { readonly kind: 'learned'; readonly opcode: number; readonly put: PutResult }
  | { readonly kind: 'vport_claim'; readonly opcode: number; readonly put: VportPutResult }
  | { readonly kind: 'svc_checked'; readonly opcode: number; readonly outcome: ReplyOutcome }
  | { readonly kind: 'bfd'; readonly opcode: number; readonly outcome: BfdMessageOutcome }
  | { readonly kind: 'activated'; readonly opcode: number; readonly dpKey: number; readonly portKey: number }
  | { readonly kind: 'snooped'; readonly opcode: number; readonly outcome: IgmpOutcome; readonly sent: boolean }
  | { readonly kind: 'controller_event'; readonly opcode: number; readonly put: ControllerEventPutResult }
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
  readonly buffered: BufferStats;
  /** Absent without a vport lookup. */
  readonly vportBindings: VportBindingStats | undefined;
  /** Absent without an IGMP lookup. */
  readonly igmp?: IgmpStats;
  /** Absent without a Controller_Event lookup. */
  readonly controllerEvents?: ControllerEventStats;
}


/** An IPv6 next hop as MAC_Binding.ip spells it (an IPv4-mapped one as the IPv4 address). */
function formatHopIpv6(v: bigint): string {
  return v >> 32n === 0xffffn ? formatIpv4(Number(v & 0xffffffffn)) : formatIpv6(v);
}

/** The next hop an arp { } or nd_ns { } packet-in asks for, and the state to send it on with. */
function hopOf(opcode: number, md: PacketInMetadata): { key: string; reload: OfAction[] } {
  const ip = opcode === ACTION_OPCODE.ARP ? formatIpv4(readReg(md, 0)) : formatHopIpv6(readXxreg(md, 0));
  const mark = md.get('pkt_mark');
  const reload: OfAction[] = [...reloadActions(md), { kind: 'set_field', field: 'pkt_mark', value: mark === undefined ? 0n : mark.value & mark.mask }];
  return { key: hopKey(readDatapathKey(md), readReg(md, 15), ip), reload };
}

export class Pinctrl {
  private readonly channel: PinctrlChannel;
  private readonly writer: MacBindingWriter;
  private readonly vportWriter: VportBindingWriter | undefined;
  private readonly context: PacketInContext;
  private readonly onProblem: ((message: string) => void) | undefined;
  private readonly onActivate: ((dpKey: number, portKey: number) => void) | undefined;
  private readonly buffers = new BufferedPackets();
  private readonly portKeys: ((logicalPort: string) => PortKeys | undefined) | undefined;
  private readonly nowMs: () => number;
  /** The health checks this chassis runs (their stats are its stats). */
  readonly serviceMonitors: SvcMonitors;
  /** The BFD sessions of the router ports whose traffic leaves here (their stats are its stats). */
  readonly bfd: BfdSessions;
  /** The router advertisements it sends unasked (their stats are its stats). */
  readonly routerAdvertisements: PeriodicRas;
  /** The gratuitous ARPs it announces on localnet networks (their stats are its stats). */
  readonly garps: Garps;
  /** IGMP general queries on the local snooping switches that ask for a querier (igmp-querier.ts). */
  readonly queriers: IgmpQueriers;
  /** IGMP/MLD snooping; absent without an IGMP lookup. */
  readonly igmp: IgmpSnooping | undefined;
  /** The Controller_Event writer; absent without its lookup. */
  readonly controllerEvents: ControllerEventWriter | undefined;
  readonly stats: PinctrlStats;

  constructor(options: PinctrlOptions) {
    this.channel = options.channel;
    this.context = options.context ?? emptyPacketInContext;
    this.onProblem = options.onProblem;
    this.onActivate = options.onActivate;
    this.portKeys = options.portKeys;
    this.nowMs = options.nowMs ?? (() => performance.now());
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
    this.routerAdvertisements = new PeriodicRas({
      channel: options.channel, timers: options.timers ?? realTimers, random: options.random ?? Math.random, onProblem: options.onProblem,
    });
    this.garps = new Garps({ channel: options.channel, timers: options.timers ?? realTimers, onProblem: options.onProblem });
    this.queriers = new IgmpQueriers({ channel: options.channel, timers: options.timers ?? realTimers, onProblem: options.onProblem });
    this.serviceMonitors = new SvcMonitors({
      channel: options.channel, sb: options.sb, ...options.serviceMonitors,
      ...(options.timers === undefined ? {} : { timers: options.timers }),
      ...(options.random === undefined ? {} : { random: options.random }),
      ...(options.onProblem === undefined ? {} : { onProblem: options.onProblem }),
    });
    this.bfd = new BfdSessions({
      channel: options.channel, sb: options.sb, ...options.bfd,
      ...(options.timers === undefined ? {} : { timers: options.timers }),
      ...(options.random === undefined ? {} : { random: options.random }),
      ...(options.onProblem === undefined ? {} : { onProblem: options.onProblem }),
    });
    const igmpLookup = options.igmpLookup;
    this.igmp = igmpLookup === undefined ? undefined : new IgmpSnooping({
      sb: options.sb, lookup: igmpLookup,
      ...(options.timers === undefined ? {} : { timers: options.timers }),
      ...(options.igmpLimits === undefined ? {} : { limits: options.igmpLimits }),
      ...(options.onProblem === undefined ? {} : { onProblem: options.onProblem }),
    });
    const eventLookup = options.controllerEventLookup;
    this.controllerEvents = eventLookup === undefined ? undefined : new ControllerEventWriter({
      sb: options.sb, lookup: eventLookup,
      ...(options.timers === undefined ? {} : { timers: options.timers }),
      ...(options.controllerEventLimits === undefined ? {} : { limits: options.controllerEventLimits }),
      ...(options.onProblem === undefined ? {} : { onError: options.onProblem }),
    });
    this.stats = {
      packetIns: 0, packetOuts: 0, resumes: 0, learned: 0, vportClaims: 0,
      ignored: {
        not_action: 0, no_header: 0, unknown_opcode: 0, unsupported_opcode: 0, unknown_event: 0, bad_packet: 0, bad_userdata: 0, no_continuation: 0, not_sent: 0,
      },
      macBindings: this.writer.stats,
      buffered: this.buffers.stats,
      vportBindings: this.vportWriter?.stats,
      ...(this.igmp === undefined ? {} : { igmp: this.igmp.stats }),
      ...(this.controllerEvents === undefined ? {} : { controllerEvents: this.controllerEvents.stats }),
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
        if (this.vportWriter === undefined) return this.notHandled(d.opcode, 'bind_vport is not handled without port lookups');
        const put = this.vportWriter.put(d.binding);
        this.stats.vportClaims++;
        return { kind: 'vport_claim', opcode: d.opcode, put };
      }
      case 'svc_check':
        return { kind: 'svc_checked', opcode: d.opcode, outcome: this.serviceMonitors.handleReply(d.reply) };
      case 'bfd':
        return { kind: 'bfd', opcode: d.opcode, outcome: this.bfd.handleMessage(d.message) };
      case 'activate': {
        if (this.onActivate === undefined) {
          this.stats.ignored.unsupported_opcode++;
          return { kind: 'ignored', opcode: d.opcode, reason: 'unsupported_opcode', message: 'activation_strategy_rarp is not handled here' };
        }
        this.onActivate(d.dpKey, d.portKey);
        return { kind: 'activated', opcode: d.opcode, dpKey: d.dpKey, portKey: d.portKey };
      }
      case 'controller_event': {
        if (this.controllerEvents === undefined) return this.notHandled(d.opcode, 'trigger_event is not handled without a Controller_Event lookup');
        return { kind: 'controller_event', opcode: d.opcode, put: this.controllerEvents.put(d.event) };
      }
      case 'igmp': {
        if (this.igmp === undefined) return this.notHandled(d.opcode, 'igmp is not handled without an IGMP lookup');
        const outcome = this.igmp.handle(d.dpKey, d.inportKey, d.message, d.packet);
        const forward = outcome.kind === 'snooped' ? outcome.forward : undefined;
        if (forward === undefined) return { kind: 'snooped', opcode: d.opcode, outcome, sent: false };
        try {
          this.channel.send(forward);
        } catch (err) {
          if (!(err instanceof ChannelError)) throw err;
          this.stats.ignored.not_sent++;
          this.onProblem?.(`igmp: the snooped message not sent on: ${err.message}`);
          return { kind: 'snooped', opcode: d.opcode, outcome, sent: false };
        }
        this.stats.packetOuts++;
        return { kind: 'snooped', opcode: d.opcode, outcome, sent: true };
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
          // The packet that needed the request waits for its answer (see buffered-packets.ts).
          if (this.portKeys !== undefined && (d.opcode === ACTION_OPCODE.ARP || d.opcode === ACTION_OPCODE.ND_NS)) {
            const hop = hopOf(d.opcode, pin.metadata ?? new Map());
            this.buffers.hold(hop.key, pin.packet, hop.reload, this.nowMs());
          }
          return { kind: 'sent', opcode: d.opcode, message: d.message };
        }
        this.stats.resumes++;
        return { kind: 'sent', opcode: d.opcode, message: d.message, result: d.result };
      }
    }
  }

  /** A packet-in whose handler this Pinctrl was built without (its lookup was not given). */
  private notHandled(opcode: number, message: string): PacketInOutcome {
    this.stats.ignored.unsupported_opcode++;
    this.onProblem?.(`packet-in ignored (unsupported_opcode): ${message}`);
    return { kind: 'ignored', opcode, reason: 'unsupported_opcode', message };
  }

  /**
   * MAC_Binding rows that appeared or changed in the SB: the packets held for their (port, IP)
   * go on to that MAC. A binding on a distributed gateway port also releases what was held for
   * its chassisredirect port, as ovn-controller does. Returns how many packets were sent.
   */
  macBindingsChanged(rows: Iterable<MacBindingRow>): number {
    this.buffers.expire(this.nowMs());
    if (this.portKeys === undefined || this.buffers.hopsWaiting === 0) return 0;
    let sent = 0;
    for (const mb of rows) {
      const pb = this.portKeys(mb.logical_port);
      if (pb === undefined) continue;
      let msgs = this.buffers.release(hopKey(pb.dpKey, pb.portKey, mb.ip), mb.mac);
      if (msgs.length === 0 && pb.chassisRedirectPort !== undefined) {
        const cr = this.portKeys(`cr-${mb.logical_port}`);
        if (cr !== undefined) msgs = this.buffers.release(hopKey(cr.dpKey, cr.portKey, mb.ip), mb.mac);
      }
      for (const m of msgs) {
        try {
          this.channel.send(m);
          this.stats.packetOuts++;
          sent++;
        } catch (err) {
          if (!(err instanceof ChannelError)) throw err;
          this.stats.ignored.not_sent++;
          this.onProblem?.(`a held packet for ${mb.ip} via ${mb.logical_port} not sent: ${err.message}`);
        }
      }
    }
    return sent;
  }

  /** The Service_Monitor rows this chassis probes now (serviceMonitorSpecs of the SB view). */
  serviceMonitorsChanged(specs: readonly SvcMonitorSpec[], skipped: readonly string[] = []): void {
    this.serviceMonitors.sync(specs, skipped);
  }

  /** The BFD rows this chassis runs now (bfdSessionSpecs of the SB view), and those it cannot. */
  bfdChanged(specs: readonly BfdSessionSpec[], skipped: readonly string[] = []): void {
    this.bfd.sync(specs, skipped);
  }

  /**
   * The router ports this chassis advertises for unasked (periodicRaSpecs of the SB view), and
   * the bindings that ask for it but cannot be advertised, with why.
   */
  routerAdvertisementsChanged(specs: readonly PeriodicRaSpec[], skipped: readonly string[] = []): void {
    for (const why of skipped) this.onProblem?.(`periodic router advertisement skipped: ${why}`);
    this.routerAdvertisements.sync(specs);
  }

  /** garp-max-timeout-sec (Garps.setMaxTimeoutSec). */
  setGarpMaxTimeoutSec(sec: number): void {
    this.garps.setMaxTimeoutSec(sec);
  }

  /** The addresses this chassis announces on its localnet networks now (garpSpecs of the SB view). */
  garpsChanged(specs: readonly GarpSpec[]): void {
    this.garps.sync(specs);
  }

  /** The local switches this chassis sends IGMP and MLD queries on now (querierSpecs of the SB view). */
  queriersChanged(specs: readonly QuerierSpec[]): void {
    this.queriers.sync(specs);
  }

  /** The SB view's Controller_Event rows changed (see ControllerEventWriter.rowsChanged). */
  controllerEventsChanged(): void {
    this.controllerEvents?.rowsChanged();
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

  /** Stops the writers', the health checks' and the BFD sessions' timers; what still waits is not written. */
  close(): void {
    this.writer.close();
    this.vportWriter?.close();
    this.serviceMonitors.close();
    this.bfd.close();
    this.routerAdvertisements.close();
    this.garps.close();
    this.igmp?.close();
    this.queriers.close();
    this.controllerEvents?.close();
  }
}
