// An in-process network for tests: one LocalNetwork, one LocalTransport per node id.
// Messages are delivered asynchronously (setImmediate), in the order each sender sent them,
// so a node never re-enters itself from inside send(). The network can cut the link between
// two nodes both ways (partition), restore every link (heal), and lose every message (drop
// switch). Lost messages vanish silently, as on a real network, except that a lost snapshot is
// reported failed to its sender (a real transport sees its stream break).

import assert from 'node:assert';
import { checkMemberInfo, type Transport, type TransportHandlers, type TransportStats } from './transport.js';
import type { Message, NodeId } from './types.js';

export interface LocalNetworkOptions {
  /** Messages queued from one sender to one peer and not yet delivered; beyond this they drop. */
  readonly queueMessagesMax?: number;
}

const queueMessagesMaxDefault = 10_000;

interface Packet {
  readonly from: LocalTransport;
  readonly msg: Message;
}

export class LocalNetwork {
  private readonly transports = new Map<NodeId, LocalTransport>();
  private readonly cut = new Set<string>();
  private queue: Packet[] = [];
  /** Packets in `queue` per link ("from->to"), for the per-peer bound. */
  private readonly queued = new Map<string, number>();
  private flushScheduled = false;
  /** When set, every message is lost. */
  dropAll = false;
  readonly queueMessagesMax: number;

  constructor(
    readonly clusterId: string,
    options: LocalNetworkOptions = {},
  ) {
    this.queueMessagesMax = options.queueMessagesMax ?? queueMessagesMaxDefault;
    assert(this.queueMessagesMax >= 1, 'queueMessagesMax must be positive');
  }

  /** The transport for node `id`, created on first use; a closed one is replaced (a restart). */
  transport(id: NodeId, clusterId: string = this.clusterId): LocalTransport {
    const existing = this.transports.get(id);
    if (existing !== undefined && !existing.isClosed()) return existing;
    const t = new LocalTransport(this, id, clusterId);
    this.transports.set(id, t);
    return t;
  }

  /** Cuts the link between `a` and `b`, both ways. */
  partition(a: NodeId, b: NodeId): void {
    this.cut.add(`${a}->${b}`);
    this.cut.add(`${b}->${a}`);
  }

  /** Cuts `id` off from every other node the network knows. */
  isolate(id: NodeId): void {
    for (const other of this.transports.keys()) if (other !== id) this.partition(id, other);
  }

  /** Restores every link (the drop switch is separate). */
  heal(): void {
    this.cut.clear();
  }

  linked(from: NodeId, to: NodeId): boolean {
    return !this.dropAll && !this.cut.has(`${from}->${to}`);
  }

  /** @internal Called by LocalTransport.send. */
  enqueue(from: LocalTransport, msg: Message): boolean {
    const link = `${msg.from}->${msg.to}`;
    const queued = this.queued.get(link) ?? 0;
    if (queued >= this.queueMessagesMax) return false;
    this.queued.set(link, queued + 1);
    this.queue.push({ from, msg });
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => this.flush());
    }
    return true;
  }

  private flush(): void {
    this.flushScheduled = false;
    const packets = this.queue;
    this.queue = [];
    this.queued.clear();
    for (const { from, msg } of packets) {
      if (from.isClosed()) continue;
      const to = this.transports.get(msg.to);
      if (to === undefined || !to.isListening()) {
        from.report(msg, 'unreachable');
        continue;
      }
      if (!this.linked(msg.from, msg.to)) {
        from.report(msg, 'lost');
        continue;
      }
      to.receive(msg, from.memberInfo);
      from.report(msg, 'delivered');
    }
  }
}

export class LocalTransport implements Transport {
  private handlers: TransportHandlers | undefined;
  private closed = false;
  private peers: ReadonlyMap<NodeId, string> = new Map();
  private readonly droppedQueueFull = new Map<NodeId, number>();
  private refusedForeign = 0;
  private sent = 0;
  private received = 0;
  /** @internal What this node tells its peers (setMemberInfo). */
  memberInfo: string | undefined;
  private readonly peerInfos = new Map<NodeId, string>();

  constructor(
    private readonly network: LocalNetwork,
    readonly id: NodeId,
    readonly clusterId: string,
  ) {}

  start(handlers: TransportHandlers): Promise<void> {
    assert(this.handlers === undefined, `transport ${this.id} started twice`);
    assert(!this.closed, `transport ${this.id} started after close`);
    this.handlers = handlers;
    return Promise.resolve();
  }

  send(messages: readonly Message[]): void {
    if (this.closed) return;
    for (const m of messages) {
      assert(m.from === this.id, `transport ${this.id} asked to send a message from ${m.from}`);
      if (!this.peers.has(m.to)) {
        // No address for it: as a real transport that cannot dial.
        this.handlers?.onReport({ kind: 'unreachable', to: m.to });
        continue;
      }
      if (!this.network.enqueue(this, m)) {
        this.droppedQueueFull.set(m.to, (this.droppedQueueFull.get(m.to) ?? 0) + 1);
        this.handlers?.onReport({ kind: 'unreachable', to: m.to });
        continue;
      }
      this.sent++;
    }
  }

  setPeers(peers: ReadonlyMap<NodeId, string>): void {
    this.peers = new Map(peers);
  }

  setMemberInfo(info: string): void {
    this.memberInfo = checkMemberInfo(info);
  }

  peerInfo(id: NodeId): string | undefined {
    return this.peerInfos.get(id);
  }

  stats(): TransportStats {
    return {
      droppedQueueFull: new Map(this.droppedQueueFull),
      refusedForeign: this.refusedForeign,
      sent: this.sent,
      received: this.received,
    };
  }

  close(): Promise<void> {
    this.closed = true;
    this.handlers = undefined;
    return Promise.resolve();
  }

  isClosed(): boolean {
    return this.closed;
  }

  isListening(): boolean {
    return !this.closed && this.handlers !== undefined;
  }

  /** @internal The network delivers `m` to this node. */
  receive(m: Message, senderInfo: string | undefined): void {
    const h = this.handlers;
    if (h === undefined) return;
    if (m.clusterId !== this.clusterId || m.to !== this.id) {
      this.refusedForeign++;
      return;
    }
    this.received++;
    // As over gRPC, where a sender's info travels with its stream: the newest heard wins.
    if (senderInfo === undefined) this.peerInfos.delete(m.from);
    else this.peerInfos.set(m.from, senderInfo);
    h.onMessage(m);
  }

  /** @internal What became of a message this transport sent. */
  report(m: Message, outcome: 'delivered' | 'lost' | 'unreachable'): void {
    const h = this.handlers;
    if (h === undefined) return;
    if (m.type === 'snap') h.onReport({ kind: 'snapshot', to: m.to, ok: outcome === 'delivered' });
    else if (outcome === 'unreachable') h.onReport({ kind: 'unreachable', to: m.to });
  }
}
