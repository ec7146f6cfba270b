// Packets held while their next hop's MAC is being resolved (ovn-controller's buffered
// packets). A packet that reaches arp { } or nd_ns { } is the reason for the request: instead
// of losing it (and a TCP handshake's first second with it), pinctrl keeps a copy under the
// (datapath, output port, next-hop IP) the request is for, with the pipeline state it had. When
// a MAC_Binding for that port and IP appears in the SB, each held packet is sent again with
// that MAC as its destination, into the output stage (table 37) as if the pipeline had resolved
// it. Bounded as in OVN: 4 packets per next hop (the oldest gives way), 1,000 next hops, and a
// next hop nobody answers is forgotten after 10 s. Pure: time comes in as an argument.

import { OFPP } from '../openflow/actions.js';
import type { OfAction } from '../openflow/types.js';
import type { OfMessage } from '../openflow/messages.js';
import { OFTABLE_OUTPUT_INIT } from '../compile/tables.js';
import { macToBytes, type Mac } from './packet.js';

export interface BufferLimits {
  readonly packetsPerHopMax: number;
  readonly hopsMax: number;
  readonly hopTimeoutMs: number;
}

export const bufferLimits: BufferLimits = {
  /** Packets held per next hop; a fifth pushes out the oldest. */
  packetsPerHopMax: 4,
  /** Next hops held at once; a packet for another one is not held. */
  hopsMax: 1000,
  /** A next hop not resolved (nor pushed to) for this long is dropped. */
  hopTimeoutMs: 10_000,
};

/** OpenFlow 1.0's 16-bit OFPP_CONTROLLER, as resubmit's in_port spells it. */
const OFPP10_CONTROLLER = 0xfffd;
const OFP_NO_BUFFER = 0xffffffff;

interface Held {
  readonly packet: Buffer;
  /** The reloaded pipeline state, then the resubmit to the output stage. */
  readonly actions: readonly OfAction[];
}

interface Hop {
  readonly packets: Held[];
  touchedMs: number;
}

export interface BufferStats {
  held: number;
  sent: number;
  /** Packets pushed out by a newer one for the same hop, or dropped with a timed-out hop. */
  dropped: number;
  /** Packets not held because hopsMax next hops were already waiting. */
  refused: number;
}

/** The key of a next hop: datapath and port tunnel keys, and the IP as MAC_Binding.ip spells it. */
export function hopKey(dpKey: number, portKey: number, ip: string): string {
  return `${dpKey}/${portKey}/${ip}`;
}

export class BufferedPackets {
  private readonly hops = new Map<string, Hop>();
  readonly stats: BufferStats = { held: 0, sent: 0, dropped: 0, refused: 0 };

  constructor(private readonly limits: BufferLimits = bufferLimits) {}

  get hopsWaiting(): number {
    return this.hops.size;
  }

  /**
   * Holds a copy of `packet` for the next hop `key`; `reload` sets the pipeline state it had
   * (registers, metadata, pkt_mark). Returns false when it was not held (too many hops).
   */
  hold(key: string, packet: Uint8Array, reload: readonly OfAction[], nowMs: number): boolean {
    this.expire(nowMs);
    let hop = this.hops.get(key);
    if (hop === undefined) {
      if (this.hops.size >= this.limits.hopsMax) {
        this.stats.refused++;
        return false;
      }
      hop = { packets: [], touchedMs: nowMs };
      this.hops.set(key, hop);
    }
    hop.touchedMs = nowMs;
    hop.packets.push({ packet: Buffer.from(packet), actions: [...reload, { kind: 'resubmit', table: OFTABLE_OUTPUT_INIT, inPort: OFPP10_CONTROLLER }] });
    if (hop.packets.length > this.limits.packetsPerHopMax) {
      hop.packets.shift();
      this.stats.dropped++;
    }
    this.stats.held++;
    return true;
  }

  /**
   * The next hop `key` resolved to `mac`: the packet-outs that send its held packets on, in the
   * order they came (none when nothing is held for it). The hop is forgotten.
   */
  release(key: string, mac: Mac): OfMessage[] {
    const hop = this.hops.get(key);
    if (hop === undefined) return [];
    this.hops.delete(key);
    const dst = macToBytes(mac);
    return hop.packets.map((h) => {
      const data = Buffer.from(h.packet);
      dst.copy(data, 0);
      this.stats.sent++;
      return { kind: 'packet_out', bufferId: OFP_NO_BUFFER, inPort: OFPP.CONTROLLER, actions: h.actions, data } as OfMessage;
    });
  }

  /** Forgets next hops not touched for hopTimeoutMs. */
  expire(nowMs: number): void {
    for (const [key, hop] of this.hops) {
      if (nowMs - hop.touchedMs <= this.limits.hopTimeoutMs) continue;
      this.stats.dropped += hop.packets.length;
      this.hops.delete(key);
    }
  }
}
