// Acknowledgements not yet committed, for `Wait(HV)`.
//
// An agent's Ack says it has installed everything up to an nb_cfg. The member it streams from
// writes that into Chassis_Private.nb_cfg (AckWriter), and NB_Global.hv_cfg follows in the same
// apply, but that write is one more Raft commit: forwarded to the leader, replicated, applied.
// A Wait(HV) need not wait for it. The fact it waits for ("every chassis has installed nb_cfg
// N") is true once the agents have said so, committed or not, so each member keeps the acks it
// hears (LiveAcks), from its own agents and relayed by the other members (AckRelay), and a Wait
// compares against hv_cfg computed with them over the Chassis_Private rows it has applied.
// Nothing here changes the database: NB_Global.hv_cfg still moves only through the log, one
// commit after a Wait may have returned.
//
// Acks are keyed by the Chassis_Private row's UUID (the same on every member), not the chassis
// name: a chassis deleted and registered again gets a new row, and an ack of the old one does
// not count for it.
import * as grpc from '@grpc/grpc-js';
import type { NodeId } from '../cluster/types.js';
import { isUuid } from '../ovsdb/index.js';

/** Named limits of live acks and their relay. */
export const liveAckLimits = {
  /** Rows a member keeps live acks for; beyond, an ack counts once committed only. */
  entriesMax: 100_000,
  /** Acks in one relayed message. */
  relayBatchMax: 1_000,
  /** Acks waiting to be relayed to one member; beyond, the newest are not relayed. */
  relayPendingMax: 100_000,
  chassisPrivateUuidChars: 36,
} as const;

/** The acks a member has heard, by Chassis_Private UUID, and the waiters woken when one advances. */
export class LiveAcks {
  private readonly acked = new Map<string, number>();
  private waiters: (() => void)[] = [];
  private wakeScheduled = false;

  /** `committed`: a Chassis_Private row's nb_cfg as this member has applied it (undefined: no such row). */
  constructor(private readonly committed: (privUuid: string) => number | undefined) {}

  /** What `privUuid`'s chassis has acknowledged, as far as this member heard. */
  get(privUuid: string): number | undefined {
    return this.acked.get(privUuid);
  }

  get size(): number {
    return this.acked.size;
  }

  /** Records an ack; returns whether it advanced what was known. */
  note(privUuid: string, nbCfg: number): boolean {
    const prev = this.acked.get(privUuid);
    if (prev !== undefined && prev >= nbCfg) return false;
    if (prev === undefined && this.acked.size >= liveAckLimits.entriesMax) {
      this.prune();
      if (this.acked.size >= liveAckLimits.entriesMax) return false;
    }
    this.acked.set(privUuid, nbCfg);
    // Many acks arrive in one turn (one per agent, or a relayed batch): waiters wake once.
    if (!this.wakeScheduled && this.waiters.length > 0) {
      this.wakeScheduled = true;
      queueMicrotask(() => this.wake());
    }
    return true;
  }

  /**
   * Drops what the database already says: acks of rows that are gone, and of rows whose
   * committed nb_cfg has caught up. Keeps the map as small as the acks still in flight.
   */
  prune(): void {
    for (const [uuid, cfg] of this.acked) {
      const have = this.committed(uuid);
      if (have === undefined || have >= cfg) this.acked.delete(uuid);
    }
  }

  /** Calls `listener` after acks advanced (once per turn however many did); returns its remover. */
  onAdvance(listener: () => void): () => void {
    this.waiters.push(listener);
    return () => {
      this.waiters = this.waiters.filter((w) => w !== listener);
    };
  }

  private wake(): void {
    this.wakeScheduled = false;
    for (const w of [...this.waiters]) w();
  }
}

/** One relayed message: acks a member heard from its agents. */
export interface AckRelayMessage {
  readonly member: number;
  readonly acks: readonly { readonly chassisPrivate: string; readonly nbCfg: number }[];
}

/** Why a relayed message is refused, or undefined when it is well formed. */
export function malformedRelay(m: unknown): string | undefined {
  const r = m as Partial<AckRelayMessage> | null;
  if (r === null || typeof r !== 'object' || !Array.isArray(r.acks)) return 'AckRelay needs acks';
  if (r.acks.length > liveAckLimits.relayBatchMax) return `AckRelay carries at most ${liveAckLimits.relayBatchMax} acks`;
  for (const a of r.acks) {
    if (!isUuid(a?.chassisPrivate)) return `AckRelay: chassis_private must be a UUID, got ${JSON.stringify(a?.chassisPrivate)}`;
    if (!Number.isSafeInteger(a.nbCfg)) return `AckRelay: nb_cfg must be an integer, got ${JSON.stringify(a.nbCfg)}`;
  }
  return undefined;
}

export interface AckRelayOptions {
  /** The other members' Southbound addresses, asked when acks are sent. */
  readonly peers: () => ReadonlyMap<NodeId, string>;
  readonly member: NodeId;
  readonly makeClient: (address: string) => grpc.Client;
}

interface Peer {
  readonly address: string;
  readonly client: grpc.Client;
  call: grpc.ClientWritableStream<AckRelayMessage> | undefined;
  /** Waiting for 'drain' on the call. */
  blocked: boolean;
  readonly pending: Map<string, number>;
}

/** What an AckRelay has sent: messages and the acks in them, acks dropped, calls that failed. */
export interface AckRelayStats {
  readonly messages: number;
  readonly acks: number;
  readonly dropped: number;
  readonly callErrors: number;
}

/**
 * Sends the acks a member's agents make to every other member, on one long-lived
 * client-streaming call per member: acks heard in one turn leave together, the latest per
 * row. Best effort: a member that cannot be reached misses them and sees the committed
 * Chassis_Private.nb_cfg instead. A call that fails is opened again with the next acks.
 */
export class AckRelay {
  private readonly peers = new Map<NodeId, Peer>();
  /** Acks heard this turn, the latest per row, handed to every member's queue at its end. */
  private readonly heard = new Map<string, number>();
  private closed = false;
  private readonly counters = { messages: 0, acks: 0, dropped: 0, callErrors: 0 };

  constructor(private readonly options: AckRelayOptions) {}

  stats(): AckRelayStats {
    return { ...this.counters };
  }

  /** False once closed: nothing is relayed any more. */
  get open(): boolean {
    return !this.closed;
  }

  send(privUuid: string, nbCfg: number): void {
    if (this.closed) return;
    if (this.heard.size === 0) setImmediate(() => this.sendHeard());
    const prev = this.heard.get(privUuid);
    if (prev === undefined && this.heard.size >= liveAckLimits.relayPendingMax) this.counters.dropped++;
    else if (prev === undefined || prev < nbCfg) this.heard.set(privUuid, nbCfg);
  }

  close(): void {
    this.closed = true;
    for (const p of this.peers.values()) this.drop(p);
    this.peers.clear();
  }

  /** The turn's acks into each member's queue (members as they are now), then onto the wire. */
  private sendHeard(): void {
    if (this.closed) return;
    const want = this.options.peers();
    for (const [id, p] of this.peers) {
      if (want.get(id) === p.address) continue;
      this.drop(p);
      this.peers.delete(id);
    }
    for (const [id, address] of want) {
      if (id === this.options.member) continue;
      let p = this.peers.get(id);
      if (p === undefined) {
        p = { address, client: this.options.makeClient(address), call: undefined, blocked: false, pending: new Map() };
        this.peers.set(id, p);
      }
      for (const [uuid, nbCfg] of this.heard) {
        const prev = p.pending.get(uuid);
        if (prev !== undefined && prev >= nbCfg) continue;
        if (prev === undefined && p.pending.size >= liveAckLimits.relayPendingMax) {
          this.counters.dropped++;
          continue;
        }
        p.pending.set(uuid, nbCfg);
      }
      this.flush(p);
    }
    this.heard.clear();
  }

  private drop(p: Peer): void {
    p.call?.end();
    p.client.close();
  }

  private flush(p: Peer): void {
    if (this.closed || p.blocked || p.pending.size === 0) return;
    if (p.call === undefined) {
      const c = p.client as unknown as { relayAcks: (cb: (e: grpc.ServiceError | null) => void) => grpc.ClientWritableStream<AckRelayMessage> };
      const call = c.relayAcks((err) => {
        if (err !== null && err.code !== grpc.status.CANCELLED) this.counters.callErrors++;
        if (p.call === call) {
          p.call = undefined;
          p.blocked = false;
        }
      });
      call.on('drain', () => {
        p.blocked = false;
        this.flush(p);
      });
      p.call = call;
    }
    while (p.pending.size > 0 && !p.blocked) {
      const acks: { chassisPrivate: string; nbCfg: number }[] = [];
      for (const [uuid, nbCfg] of p.pending) {
        if (acks.length >= liveAckLimits.relayBatchMax) break;
        acks.push({ chassisPrivate: uuid, nbCfg });
        p.pending.delete(uuid);
      }
      this.counters.messages++;
      this.counters.acks += acks.length;
      if (!p.call.write({ member: this.options.member, acks })) p.blocked = true;
    }
  }
}
