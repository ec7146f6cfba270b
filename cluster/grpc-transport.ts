// The Raft peer transport over gRPC (proto/raft.proto, service RaftPeer). Each peer gets one
// outgoing `Messages` stream, kept open and re-opened with backoff after a failure, fed from a
// bounded queue in the order send() was called; a `snap` message goes as its own `Snapshot`
// call, split into chunks. The receive side checks every message at the door (decodes, cluster
// id, addressee) and hands the good ones to the node in arrival order.
//
// Ordering: messages to one peer are written to one stream in queue order. A message written
// to a stream that then fails is lost (Raft retries). Each stream carries a sequence number in
// its metadata, and the receiver drops anything from a stream older than the newest it has
// seen from that sender, so what arrives is always a subsequence of what was sent, in order,
// even across reconnects. A snapshot travels beside the message stream, so messages sent
// after a `snap` may arrive before it; Raft rejects and retries those.
import { randomUUID } from 'node:crypto';
import grpc from '@grpc/grpc-js';
import type { Message, NodeId } from './types.js';
import { checkMemberInfo, MEMBER_INFO_CHARS_MAX, type PeerLinks, type Transport, type TransportHandlers, type TransportReport, type TransportStats } from './transport.js';
import { isWireError, RaftCodec } from './grpc-codec.js';
import { listenGrpc, type GrpcListener } from './grpc-listen.js';
import { channelCredentials, tlsChannelOptions, type TlsCredentials } from './tls.js';
import type { RaftPeerMethod } from './grpc-codec.js';

const MiB = 1024 * 1024;

export interface GrpcTransportOptions {
  readonly id: NodeId;
  readonly clusterId: string;
  /** 'host:port' to listen on; port 0 picks a free port (see address()). */
  readonly listenAddress: string;
  /** id -> 'host:port' */
  readonly peers: ReadonlyMap<NodeId, string>;
  /** Per peer; a message sent to a peer whose queue is full is dropped. */
  readonly sendQueueMessagesMax?: number;
  /** Per peer, counting encoded message bytes. */
  readonly sendQueueBytesMax?: number;
  readonly snapshotChunkBytesMax?: number;
  /** The largest gRPC message sent or accepted. */
  readonly messageBytesMax?: number;
  /** The largest snapshot this node accepts; a larger declared size is refused up front. */
  readonly snapshotBytesMax?: number;
  /** At most one `unreachable` report per peer per this interval; the rest are only counted. */
  readonly unreachableReportIntervalMs?: number;
  /** How long one connection attempt may wait for the peer before it counts as failed. */
  readonly connectTimeoutMs?: number;
  readonly reconnectBackoffMsMin?: number;
  readonly reconnectBackoffMsMax?: number;
  /** A monotonic clock for rate limits and backoff; defaults to performance.now. */
  readonly nowMs?: () => number;
  /**
   * Connections to this node's port held at once; one more is closed as soon as it is
   * accepted. Each peer needs one (a cluster has a few); the bound keeps a flood of connections
   * from taking the file descriptors the node's storage needs (cluster/grpc-listen.ts).
   */
  readonly connectionsMax?: number;
  /**
   * This member's TLS identity (cluster/tls.ts): its port then takes only peers whose
   * certificate chains to the CA, and it reaches its peers with it. Without, plaintext.
   */
  readonly tls?: TlsCredentials;
}

const DEFAULTS = {
  sendQueueMessagesMax: 4096,
  sendQueueBytesMax: 64 * MiB,
  snapshotChunkBytesMax: 1 * MiB,
  messageBytesMax: 16 * MiB,
  snapshotBytesMax: 1024 * MiB,
  unreachableReportIntervalMs: 1000,
  connectTimeoutMs: 1000,
  reconnectBackoffMsMin: 50,
  reconnectBackoffMsMax: 2000,
  connectionsMax: 64,
} as const;

/** Room for a chunk's header and snapshot meta beside its data within one gRPC message. */
const CHUNK_OVERHEAD_BYTES_MAX = 64 * 1024;
/** Room for an append's fields and its entry's header and client tag beside the entry's data. */
const ENTRY_OVERHEAD_BYTES_MAX = 64 * 1024;
/** A batch on the Messages stream is cut at this size (or messageBytesMax, if smaller). */
const BATCH_BYTES_TARGET = 1 * MiB;
/** Each message in a batch costs its bytes plus a tag and a length prefix. */
const BATCH_ITEM_OVERHEAD_BYTES = 6;
/** Snapshots being reassembled at once; each holds up to snapshotBytesMax. */
const SNAPSHOTS_INCOMING_MAX = 4;
/** Senders whose newest stream number is remembered (a bound on what strangers can fill). */
const STREAM_SENDERS_MAX = 1024;

const METADATA_CLUSTER_ID = 'ovnts-cluster-id';
const METADATA_FROM = 'ovnts-from';
/** '<sender incarnation>.<stream sequence number>' */
const METADATA_STREAM = 'ovnts-stream';
/** The sender's member info (Transport.setMemberInfo), on its Messages streams. */
const METADATA_MEMBER_INFO = 'ovnts-member-info';

export interface GrpcTransportStats extends TransportStats {
  /** Messages dropped because no address is known for the peer, per peer. */
  readonly droppedNoAddress: ReadonlyMap<NodeId, number>;
  /** Messages dropped because, encoded, they exceed messageBytesMax. */
  readonly droppedTooLarge: number;
  /** `snap` messages dropped because a snapshot to that peer was still in flight. */
  readonly droppedSnapshotBusy: number;
  /** Queued messages dropped because their peer was removed by setPeers. */
  readonly droppedPeerRemoved: number;
  /** Received frames or messages that did not decode or were inconsistent. */
  readonly malformed: number;
  /** Streams or batches refused because a newer stream from the same sender exists. */
  readonly refusedStale: number;
  /** Outgoing message streams that ended with an error (messages in them may be lost). */
  readonly streamFailures: number;
  /** Connection attempts that did not reach the peer in connectTimeoutMs. */
  readonly connectFailures: number;
  /** Connections to this node's port closed at once because it held connectionsMax. */
  readonly refusedConnections: number;
  /** Events that made a peer unreachable; `unreachableReported` of them were reported. */
  readonly unreachable: number;
  readonly unreachableReported: number;
  readonly snapshotsSent: number;
  readonly snapshotsFailed: number;
  readonly snapshotsReceived: number;
  readonly snapshotsRefused: number;
  /** Snapshots being reassembled now (a gauge, at most SNAPSHOTS_INCOMING_MAX). */
  readonly snapshotsInProgress: number;
}

interface Counters {
  droppedQueueFull: Map<NodeId, number>;
  droppedNoAddress: Map<NodeId, number>;
  droppedTooLarge: number;
  droppedSnapshotBusy: number;
  droppedPeerRemoved: number;
  refusedForeign: number;
  refusedStale: number;
  malformed: number;
  sent: number;
  received: number;
  streamFailures: number;
  connectFailures: number;
  refusedConnections: number;
  unreachable: number;
  unreachableReported: number;
  snapshotsSent: number;
  snapshotsFailed: number;
  snapshotsReceived: number;
  snapshotsRefused: number;
}

/** A status a server handler ends a call with. */
type StatusResponse = Partial<grpc.StatusObject>;

/** Why the receiver ended a call; each maps to one gRPC status in `refusal`. */
type RefusalKind = 'malformed' | 'foreign' | 'stale' | 'too-large' | 'busy' | 'closed';

/** The one place where a refusal becomes a gRPC status. */
function refusal(kind: RefusalKind, details: string): StatusResponse {
  const code = {
    malformed: grpc.status.INVALID_ARGUMENT,
    foreign: grpc.status.PERMISSION_DENIED,
    stale: grpc.status.ABORTED,
    'too-large': grpc.status.RESOURCE_EXHAUSTED,
    busy: grpc.status.RESOURCE_EXHAUSTED,
    closed: grpc.status.UNAVAILABLE,
  }[kind];
  return { code, details };
}

function identity(b: Buffer): Buffer {
  return b;
}

function methodDefinition(m: RaftPeerMethod): grpc.MethodDefinition<Buffer, Buffer> {
  return {
    path: m.path,
    originalName: m.name,
    requestStream: true,
    responseStream: false,
    requestSerialize: identity,
    requestDeserialize: identity,
    responseSerialize: identity,
    responseDeserialize: identity,
  };
}

function increment(map: Map<NodeId, number>, id: NodeId): void {
  map.set(id, (map.get(id) ?? 0) + 1);
}

function assert(cond: boolean, msg: string): asserts cond {
  if (!cond) throw new Error(`grpc-transport: ${msg}`);
}

type SnapMessage = Extract<Message, { type: 'snap' }>;

/** What a PeerSender needs from its transport. */
interface SenderContext {
  readonly id: NodeId;
  readonly clusterId: string;
  readonly incarnation: string;
  readonly codec: RaftCodec;
  readonly counters: Counters;
  readonly limits: Required<
    Pick<
      GrpcTransportOptions,
      | 'sendQueueMessagesMax'
      | 'sendQueueBytesMax'
      | 'snapshotChunkBytesMax'
      | 'messageBytesMax'
      | 'connectTimeoutMs'
      | 'reconnectBackoffMsMin'
      | 'reconnectBackoffMsMax'
    >
  >;
  readonly nowMs: () => number;
  readonly tls: TlsCredentials | undefined;
  /**
   * Numbers this transport's Messages streams. Shared by all senders, so that a sender made
   * anew for a peer (setPeers) still numbers its streams above the ones before it.
   */
  nextStreamSeq(): number;
  /** What this node tells its peers on each Messages stream it opens (setMemberInfo). */
  memberInfo(): string | undefined;
  noteUnreachable(to: NodeId): void;
  report(r: TransportReport): void;
}

/** The outgoing side towards one peer: its queue, its message stream, its snapshot call. */
/** What a consumed send-queue slot holds instead of the message it sent. */
const SENT = new Uint8Array(0);

class PeerSender {
  private client: grpc.Client;
  /** Encoded messages; `queueHead` is the first unsent one. */
  private queue: Uint8Array[] = [];
  private queueHead = 0;
  private queueBytes = 0;
  private stream: grpc.ClientWritableStream<Buffer> | null = null;
  private streamOpenedMs = 0;
  private waitingDrain = false;
  private connecting = false;
  private retryTimer: NodeJS.Timeout | null = null;
  private backoffMs: number;
  private snapshotCall: grpc.ClientWritableStream<Buffer> | null = null;
  private closed = false;

  constructor(
    private readonly ctx: SenderContext,
    readonly peer: NodeId,
    readonly address: string,
  ) {
    this.backoffMs = ctx.limits.reconnectBackoffMsMin;
    this.client = new grpc.Client(address, channelCredentials(ctx.tls), {
      ...tlsChannelOptions(ctx.tls, address),
      'grpc.max_send_message_length': ctx.limits.messageBytesMax,
      'grpc.max_receive_message_length': ctx.limits.messageBytesMax,
      'grpc.initial_reconnect_backoff_ms': ctx.limits.reconnectBackoffMsMin,
      'grpc.max_reconnect_backoff_ms': ctx.limits.reconnectBackoffMsMax,
      'grpc.keepalive_time_ms': 10_000,
      'grpc.keepalive_timeout_ms': 5_000,
      // Retrying is Raft's business; a failed call must surface, not be replayed by gRPC.
      'grpc.enable_retries': 0,
    });
  }

  queuedMessages(): number {
    return this.queue.length - this.queueHead;
  }

  /** Its message stream: open, wanted (messages wait for it) but not open, or not needed now. */
  link(): PeerLinks['outgoing'] {
    if (this.stream !== null) return 'open';
    return this.queuedMessages() > 0 ? 'down' : undefined;
  }

  /** Queues one encoded message; false when the queue is full (the caller counts the drop). */
  enqueue(encoded: Uint8Array): boolean {
    const { sendQueueMessagesMax, sendQueueBytesMax } = this.ctx.limits;
    if (this.queuedMessages() >= sendQueueMessagesMax) return false;
    if (this.queueBytes + encoded.byteLength > sendQueueBytesMax) return false;
    this.queue.push(encoded);
    this.queueBytes += encoded.byteLength;
    return true;
  }

  /** Writes queued messages to the stream until it pushes back; opens the stream if needed. */
  pump(): void {
    if (this.closed || this.queuedMessages() === 0) return;
    const stream = this.stream;
    if (stream === null) {
      this.maybeConnect();
      return;
    }
    if (this.waitingDrain) return;
    const batchBytesMax = Math.min(BATCH_BYTES_TARGET, this.ctx.limits.messageBytesMax);
    while (this.queuedMessages() > 0) {
      const batch = this.takeBatch(batchBytesMax);
      this.ctx.counters.sent += batch.length;
      const more = stream.write(this.ctx.codec.encodeBatch(batch));
      if (!more) {
        this.waitingDrain = true;
        stream.once('drain', () => {
          if (stream !== this.stream) return;
          this.waitingDrain = false;
          this.pump();
        });
        return;
      }
    }
  }

  /** At least one message, then more while the batch stays under `bytesMax`. */
  private takeBatch(bytesMax: number): Uint8Array[] {
    const batch: Uint8Array[] = [];
    let bytes = 0;
    while (this.queueHead < this.queue.length) {
      const next = this.queue[this.queueHead];
      assert(next !== undefined, 'queue slot below its length is empty');
      const cost = next.byteLength + BATCH_ITEM_OVERHEAD_BYTES;
      if (batch.length > 0 && bytes + cost > bytesMax) break;
      batch.push(next);
      bytes += cost;
      this.queueBytes -= next.byteLength;
      // The slot lets go of the message now: the consumed prefix is cut only once it holds
      // over 1,024 slots, and until then it kept every sent append alive (4-5 MiB per peer
      // after the 10,000-port topology's ~10 KiB entries).
      this.queue[this.queueHead] = SENT;
      this.queueHead++;
    }
    // Compact once the consumed prefix dominates, so the array does not grow without bound.
    if (this.queueHead > 1024 && this.queueHead * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.queueHead);
      this.queueHead = 0;
    }
    return batch;
  }

  private maybeConnect(): void {
    if (this.connecting || this.retryTimer !== null) return;
    this.connecting = true;
    const deadline = new Date(Date.now() + this.ctx.limits.connectTimeoutMs);
    this.client.waitForReady(deadline, (err) => {
      this.connecting = false;
      if (this.closed) return;
      if (err !== undefined) {
        this.ctx.counters.connectFailures++;
        this.ctx.noteUnreachable(this.peer);
        this.scheduleRetry();
        return;
      }
      this.openStream();
      this.pump();
    });
  }

  private scheduleRetry(): void {
    if (this.closed || this.retryTimer !== null) return;
    const delayMs = this.backoffMs;
    this.backoffMs = Math.min(this.backoffMs * 2, this.ctx.limits.reconnectBackoffMsMax);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.pump();
    }, delayMs);
  }

  private openStream(): void {
    assert(this.stream === null, 'a second message stream to one peer');
    const md = this.metadata();
    md.set(METADATA_STREAM, `${this.ctx.incarnation}.${this.ctx.nextStreamSeq()}`);
    const info = this.ctx.memberInfo();
    if (info !== undefined) md.set(METADATA_MEMBER_INFO, info);
    const method = this.ctx.codec.messagesMethod.path;
    const call: grpc.ClientWritableStream<Buffer> = this.client.makeClientStreamRequest<Buffer, Buffer>(
      method,
      identity,
      identity,
      md,
      {},
      () => this.onStreamEnd(call),
    );
    this.stream = call;
    this.streamOpenedMs = this.ctx.nowMs();
    this.waitingDrain = false;
  }

  private onStreamEnd(call: grpc.ClientWritableStream<Buffer>): void {
    if (call !== this.stream) return; // Replaced by retarget(), which already accounted for it.
    this.stream = null;
    this.waitingDrain = false;
    if (this.closed) return;
    // The receiver never ends a healthy stream, so any end is a failure of this stream.
    this.ctx.counters.streamFailures++;
    this.ctx.noteUnreachable(this.peer);
    if (this.ctx.nowMs() - this.streamOpenedMs > this.ctx.limits.reconnectBackoffMsMax) {
      // A stream that lived a while was healthy; start the backoff over.
      this.backoffMs = this.ctx.limits.reconnectBackoffMsMin;
    }
    this.scheduleRetry();
  }

  private metadata(): grpc.Metadata {
    const md = new grpc.Metadata();
    md.set(METADATA_CLUSTER_ID, this.ctx.clusterId);
    md.set(METADATA_FROM, String(this.ctx.id));
    return md;
  }

  /** Starts one Snapshot call for `m`; reports its outcome as a `snapshot` report. */
  sendSnapshot(m: SnapMessage): void {
    if (this.closed) return;
    if (this.snapshotCall !== null) {
      // The one in flight will be reported; Raft sends a fresh snapshot if it still needs one.
      this.ctx.counters.droppedSnapshotBusy++;
      return;
    }
    const call: grpc.ClientWritableStream<Buffer> = this.client.makeClientStreamRequest<Buffer, Buffer>(
      this.ctx.codec.snapshotMethod.path,
      identity,
      identity,
      this.metadata(),
      {},
      (err) => {
        if (call !== this.snapshotCall) return;
        this.snapshotCall = null;
        if (this.closed) return;
        if (err === null) {
          this.ctx.counters.snapshotsSent++;
          this.ctx.report({ kind: 'snapshot', to: this.peer, ok: true });
        } else {
          this.ctx.counters.snapshotsFailed++;
          this.ctx.report({ kind: 'snapshot', to: this.peer, ok: false, reason: err.details || err.message });
        }
      },
    );
    this.snapshotCall = call;
    const data = m.snapshot.data;
    const chunkBytesMax = this.ctx.limits.snapshotChunkBytesMax;
    let offset = 0;
    const writeChunks = (): void => {
      while (call === this.snapshotCall) {
        const end = Math.min(data.byteLength, offset + chunkBytesMax);
        const last = end === data.byteLength;
        const more = call.write(
          this.ctx.codec.encodeChunk({
            clusterId: m.clusterId,
            from: m.from,
            to: m.to,
            term: m.term,
            meta: m.snapshot.meta,
            offset,
            totalBytes: data.byteLength,
            data: data.subarray(offset, end),
            last,
          }),
        );
        offset = end;
        if (last) {
          call.end();
          return;
        }
        if (!more) {
          call.once('drain', writeChunks);
          return;
        }
      }
    };
    writeChunks();
  }

  /** Points the sender at a new address: in-flight calls fail, the queue is kept. */
  retarget(address: string): PeerSender {
    const next = new PeerSender(this.ctx, this.peer, address);
    next.queue = this.queue.slice(this.queueHead);
    next.queueBytes = this.queueBytes;
    this.queue = [];
    this.queueHead = 0;
    this.queueBytes = 0;
    if (this.snapshotCall !== null) {
      // Its call dies with the old channel; the node must hear that, to send it again.
      this.ctx.counters.snapshotsFailed++;
      this.ctx.report({ kind: 'snapshot', to: this.peer, ok: false, reason: 'the peer moved to another address' });
    }
    this.close();
    next.pump();
    return next;
  }

  /** Cancels calls and timers and closes the channel; returns how many messages were queued. */
  close(): number {
    const dropped = this.queuedMessages();
    this.closed = true;
    this.queue = [];
    this.queueHead = 0;
    this.queueBytes = 0;
    if (this.retryTimer !== null) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    this.stream?.cancel();
    this.stream = null;
    this.snapshotCall?.cancel();
    this.snapshotCall = null;
    this.client.close();
    return dropped;
  }
}

/** A snapshot being reassembled from chunks. */
interface Reassembly {
  readonly from: NodeId;
  readonly term: number;
  readonly totalBytes: number;
  readonly meta: SnapMessage['snapshot']['meta'];
  readonly data: Uint8Array;
  received: number;
}

export class GrpcTransport implements Transport {
  private readonly o: GrpcTransportOptions;
  private readonly codec: RaftCodec;
  private readonly counters: Counters = {
    droppedQueueFull: new Map(),
    droppedNoAddress: new Map(),
    droppedTooLarge: 0,
    droppedSnapshotBusy: 0,
    droppedPeerRemoved: 0,
    refusedForeign: 0,
    refusedStale: 0,
    malformed: 0,
    sent: 0,
    received: 0,
    streamFailures: 0,
    connectFailures: 0,
    refusedConnections: 0,
    unreachable: 0,
    unreachableReported: 0,
    snapshotsSent: 0,
    snapshotsFailed: 0,
    snapshotsReceived: 0,
    snapshotsRefused: 0,
  };
  private readonly ctx: SenderContext;
  private readonly senders = new Map<NodeId, PeerSender>();
  private readonly lastUnreachableReportMs = new Map<NodeId, number>();
  /** Per sender id: the incarnation and sequence number of its newest Messages stream. */
  /** Each sender's newest Messages stream, with the member info it told on it (setMemberInfo). */
  private readonly newestStream = new Map<NodeId, { incarnation: string; seq: number; info: string | undefined }>();
  private readonly snapshotBytesMax: number;
  private readonly unreachableReportIntervalMs: number;
  private snapshotsIncoming = 0;
  /** Messages streams open from each sender now. */
  private readonly incomingStreams = new Map<NodeId, number>();
  private streamSeq = 0;
  /** setMemberInfo's text. */
  private ownInfo: string | undefined;
  private handlers: TransportHandlers | null = null;
  private server: grpc.Server | null = null;
  private listener: GrpcListener | null = null;
  private boundPort: number | null = null;
  private closed = false;

  constructor(o: GrpcTransportOptions) {
    this.o = o;
    this.codec = new RaftCodec();
    const limits = {
      sendQueueMessagesMax: o.sendQueueMessagesMax ?? DEFAULTS.sendQueueMessagesMax,
      sendQueueBytesMax: o.sendQueueBytesMax ?? DEFAULTS.sendQueueBytesMax,
      snapshotChunkBytesMax: o.snapshotChunkBytesMax ?? DEFAULTS.snapshotChunkBytesMax,
      messageBytesMax: o.messageBytesMax ?? DEFAULTS.messageBytesMax,
      connectTimeoutMs: o.connectTimeoutMs ?? DEFAULTS.connectTimeoutMs,
      reconnectBackoffMsMin: o.reconnectBackoffMsMin ?? DEFAULTS.reconnectBackoffMsMin,
      reconnectBackoffMsMax: o.reconnectBackoffMsMax ?? DEFAULTS.reconnectBackoffMsMax,
    };
    assert(limits.sendQueueMessagesMax >= 1, 'sendQueueMessagesMax must be at least 1');
    assert(limits.snapshotChunkBytesMax >= 1, 'snapshotChunkBytesMax must be at least 1');
    assert(
      limits.snapshotChunkBytesMax + CHUNK_OVERHEAD_BYTES_MAX <= limits.messageBytesMax,
      `snapshotChunkBytesMax (${limits.snapshotChunkBytesMax}) plus ${CHUNK_OVERHEAD_BYTES_MAX} ` +
        `bytes of header must fit in messageBytesMax (${limits.messageBytesMax})`,
    );
    assert(limits.reconnectBackoffMsMin >= 1, 'reconnectBackoffMsMin must be at least 1');
    this.snapshotBytesMax = o.snapshotBytesMax ?? DEFAULTS.snapshotBytesMax;
    this.unreachableReportIntervalMs =
      o.unreachableReportIntervalMs ?? DEFAULTS.unreachableReportIntervalMs;
    const nowMs = o.nowMs ?? (() => performance.now());
    this.ctx = {
      id: o.id,
      clusterId: o.clusterId,
      incarnation: randomUUID(),
      codec: this.codec,
      counters: this.counters,
      limits,
      nowMs,
      tls: o.tls,
      nextStreamSeq: () => ++this.streamSeq,
      memberInfo: () => this.ownInfo,
      noteUnreachable: (to) => this.noteUnreachable(to),
      report: (r) => this.report(r),
    };
    this.setPeers(o.peers);
  }

  async start(handlers: TransportHandlers): Promise<void> {
    assert(this.server === null && !this.closed, 'start() called twice or after close()');
    this.handlers = handlers;
    const bytesMax = this.ctx.limits.messageBytesMax;
    const server = new grpc.Server({
      'grpc.max_receive_message_length': bytesMax,
      'grpc.max_send_message_length': bytesMax,
    });
    const service: grpc.ServiceDefinition = {
      Messages: methodDefinition(this.codec.messagesMethod),
      Snapshot: methodDefinition(this.codec.snapshotMethod),
    };
    server.addService(service, {
      Messages: (call: grpc.ServerReadableStream<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) =>
        this.receiveMessages(call, cb),
      Snapshot: (call: grpc.ServerReadableStream<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) =>
        this.receiveSnapshot(call, cb),
    });
    this.server = server;
    this.listener = await listenGrpc(server, this.o.listenAddress, this.o.connectionsMax ?? DEFAULTS.connectionsMax, () => this.counters.refusedConnections++, this.o.tls);
    this.boundPort = this.listener.port;
  }

  /**
   * The most entry data one append can carry: a message larger than messageBytesMax, or than
   * a peer's whole send queue, is dropped every time it is sent.
   */
  get entryBytesMax(): number {
    return Math.min(this.ctx.limits.messageBytesMax, this.ctx.limits.sendQueueBytesMax) - ENTRY_OVERHEAD_BYTES_MAX;
  }

  /** The bound 'host:port', valid after start(). */
  address(): string {
    assert(this.boundPort !== null, 'address() before start()');
    const colon = this.o.listenAddress.lastIndexOf(':');
    assert(colon >= 0, `listenAddress ${this.o.listenAddress} is not host:port`);
    return `${this.o.listenAddress.slice(0, colon)}:${this.boundPort}`;
  }

  send(messages: readonly Message[]): void {
    if (this.closed) return;
    assert(this.handlers !== null, 'send() before start()');
    const touched = new Set<PeerSender>();
    for (const m of messages) {
      const sender = this.senders.get(m.to);
      if (sender === undefined) {
        increment(this.counters.droppedNoAddress, m.to);
        if (m.type === 'snap') this.report({ kind: 'snapshot', to: m.to, ok: false, reason: 'no address known for the peer' });
        else this.noteUnreachable(m.to);
        continue;
      }
      if (m.type === 'snap') {
        sender.sendSnapshot(m);
        continue;
      }
      const encoded = this.codec.encodeMessage(m);
      if (encoded.byteLength + BATCH_ITEM_OVERHEAD_BYTES > this.ctx.limits.messageBytesMax) {
        this.counters.droppedTooLarge++;
        this.noteUnreachable(m.to);
        continue;
      }
      if (!sender.enqueue(encoded)) {
        increment(this.counters.droppedQueueFull, m.to);
        this.noteUnreachable(m.to);
        continue;
      }
      touched.add(sender);
    }
    for (const s of touched) s.pump();
  }

  setMemberInfo(info: string): void {
    this.ownInfo = checkMemberInfo(info);
  }

  peerInfo(id: NodeId): string | undefined {
    return this.newestStream.get(id)?.info;
  }

  setPeers(peers: ReadonlyMap<NodeId, string>): void {
    if (this.closed) return;
    for (const [id, sender] of this.senders) {
      if (peers.has(id)) continue;
      this.counters.droppedPeerRemoved += sender.close();
      this.senders.delete(id);
    }
    for (const [id, address] of peers) {
      if (id === this.o.id) continue;
      const sender = this.senders.get(id);
      if (sender === undefined) this.senders.set(id, new PeerSender(this.ctx, id, address));
      else if (sender.address !== address) this.senders.set(id, sender.retarget(address));
    }
  }

  links(): ReadonlyMap<NodeId, PeerLinks> {
    const out = new Map<NodeId, PeerLinks>();
    for (const [id, sender] of this.senders) {
      const incoming = this.incomingStreams.get(id) ?? 0;
      const outgoing = sender.link();
      if (outgoing !== undefined || incoming > 0) out.set(id, { outgoing, incoming });
    }
    for (const [id, incoming] of this.incomingStreams) if (!out.has(id)) out.set(id, { outgoing: undefined, incoming });
    return out;
  }

  stats(): GrpcTransportStats {
    const c = this.counters;
    return {
      ...c,
      droppedQueueFull: new Map(c.droppedQueueFull),
      droppedNoAddress: new Map(c.droppedNoAddress),
      snapshotsInProgress: this.snapshotsIncoming,
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const sender of this.senders.values()) sender.close();
    this.senders.clear();
    const server = this.server;
    this.server = null;
    if (server === null) return;
    this.listener?.close();
    this.listener = null;
    // Peers keep their streams open indefinitely, so waiting for calls to finish would not
    // end; cut them. Raft tolerates the messages lost with them.
    server.forceShutdown();
    await new Promise<void>((resolve) => setImmediate(resolve));
  }

  // --- receive side ----------------------------------------------------------------------

  /** Whether `m` may be delivered: it names this cluster and this node. Counts refusals. */
  private accepts(m: Message): boolean {
    if (m.clusterId === this.o.clusterId && m.to === this.o.id) return true;
    this.counters.refusedForeign++;
    return false;
  }

  private deliver(m: Message): void {
    assert(this.handlers !== null, 'a call arrived before start()');
    this.counters.received++;
    this.handlers.onMessage(m);
  }

  private receiveMessages(
    call: grpc.ServerReadableStream<Buffer, Buffer>,
    callback: grpc.sendUnaryData<Buffer>,
  ): void {
    let done = false;
    /** Uncounts the stream in incomingStreams once it was counted. */
    let uncount = (): void => undefined;
    const finish = (err: StatusResponse | null): void => {
      uncount();
      if (done) return;
      done = true;
      callback(err, err === null ? this.codec.encodeAck() : null);
    };
    // A sender that goes away cancels the call; its side counts and reports the failure.
    const abandon = (): void => {
      uncount();
      done = true;
    };
    call.on('close', abandon);
    call.on('error', abandon);
    if (this.closed) return finish(refusal('closed', 'transport closed'));
    const clusterId = call.metadata.get(METADATA_CLUSTER_ID)[0];
    const from = Number(call.metadata.get(METADATA_FROM)[0]);
    const streamTag = String(call.metadata.get(METADATA_STREAM)[0] ?? '');
    const dot = streamTag.lastIndexOf('.');
    const incarnation = streamTag.slice(0, dot);
    const seq = Number(streamTag.slice(dot + 1));
    if (!Number.isSafeInteger(from) || dot <= 0 || !Number.isSafeInteger(seq)) {
      this.counters.malformed++;
      return finish(refusal('malformed', `bad ${METADATA_FROM} or ${METADATA_STREAM} metadata`));
    }
    if (clusterId !== this.o.clusterId) {
      this.counters.refusedForeign++;
      return finish(refusal('foreign', `this is cluster ${this.o.clusterId}`));
    }
    const newest = this.newestStream.get(from);
    if (newest !== undefined && newest.incarnation === incarnation && newest.seq >= seq) {
      this.counters.refusedStale++;
      return finish(refusal('stale', `stream ${seq} from ${from} is older than ${newest.seq}`));
    }
    if (newest === undefined && this.newestStream.size >= STREAM_SENDERS_MAX) {
      const oldest = this.newestStream.keys().next();
      if (oldest.done !== true) this.newestStream.delete(oldest.value);
    }
    // The newest stream's info is the sender's now (a restart with other software tells anew).
    const told = call.metadata.get(METADATA_MEMBER_INFO)[0];
    const mine = { incarnation, seq, info: typeof told === 'string' && told.length <= MEMBER_INFO_CHARS_MAX ? told : undefined };
    this.newestStream.set(from, mine);
    // Counted while open, for links(): once, whichever way it ends.
    this.incomingStreams.set(from, (this.incomingStreams.get(from) ?? 0) + 1);
    let counted = true;
    uncount = (): void => {
      if (!counted) return;
      counted = false;
      const n = (this.incomingStreams.get(from) ?? 1) - 1;
      if (n > 0) this.incomingStreams.set(from, n);
      else this.incomingStreams.delete(from);
    };

    call.on('data', (buf: Buffer) => {
      if (done) return;
      if (this.closed) return finish(refusal('closed', 'transport closed'));
      if (this.newestStream.get(from) !== mine) {
        this.counters.refusedStale++;
        return finish(refusal('stale', `a newer stream from ${from} replaced this one`));
      }
      const decoded = this.codec.decodeBatch(buf);
      if (isWireError(decoded)) {
        this.counters.malformed++;
        return finish(refusal('malformed', decoded.reason));
      }
      for (const m of decoded) {
        if (isWireError(m) || m.from !== from) {
          this.counters.malformed++;
          continue;
        }
        if (this.accepts(m)) this.deliver(m);
      }
    });
    call.on('end', () => finish(null));
  }

  private receiveSnapshot(
    call: grpc.ServerReadableStream<Buffer, Buffer>,
    callback: grpc.sendUnaryData<Buffer>,
  ): void {
    let done = false;
    let holdsSlot = false;
    let asm: Reassembly | null = null;
    const release = (): void => {
      done = true;
      asm = null;
      if (holdsSlot) this.snapshotsIncoming--;
      holdsSlot = false;
    };
    const finish = (err: StatusResponse | null): void => {
      if (done) return;
      release();
      if (err !== null) this.counters.snapshotsRefused++;
      callback(err, err === null ? this.codec.encodeAck() : null);
    };
    const refuse = (kind: RefusalKind, details: string): void => {
      if (done) return;
      if (kind === 'malformed') this.counters.malformed++;
      if (kind === 'foreign') this.counters.refusedForeign++;
      finish(refusal(kind, details));
    };
    // Whatever way the call goes away, the reassembly slot is released.
    call.on('close', release);
    call.on('error', release);
    if (this.closed) return refuse('closed', 'transport closed');
    if (this.snapshotsIncoming >= SNAPSHOTS_INCOMING_MAX) {
      return refuse('busy', `already receiving ${SNAPSHOTS_INCOMING_MAX} snapshots`);
    }
    this.snapshotsIncoming++;
    holdsSlot = true;

    call.on('data', (buf: Buffer) => {
      if (done) return;
      if (this.closed) return refuse('closed', 'transport closed');
      const c = this.codec.decodeChunk(buf);
      if (isWireError(c)) return refuse('malformed', c.reason);
      if (c.clusterId !== this.o.clusterId || c.to !== this.o.id) {
        return refuse('foreign', `chunk for ${c.clusterId}/${c.to}, this is ${this.o.clusterId}/${this.o.id}`);
      }
      if (asm === null) {
        if (c.totalBytes > this.snapshotBytesMax) {
          return refuse(
            'too-large',
            `snapshot of ${c.totalBytes} bytes exceeds snapshotBytesMax (${this.snapshotBytesMax})`,
          );
        }
        asm = {
          from: c.from,
          term: c.term,
          totalBytes: c.totalBytes,
          meta: c.meta,
          data: new Uint8Array(c.totalBytes),
          received: 0,
        };
      } else if (c.from !== asm.from || c.term !== asm.term || c.totalBytes !== asm.totalBytes) {
        return refuse('malformed', 'chunk header differs from the first chunk');
      }
      if (c.offset !== asm.received) {
        return refuse('malformed', `chunk at offset ${c.offset}, expected ${asm.received}`);
      }
      if (c.offset + c.data.byteLength > asm.totalBytes) {
        return refuse('malformed', `chunk runs past total_bytes ${asm.totalBytes}`);
      }
      if (!c.last && c.data.byteLength === 0) return refuse('malformed', 'empty chunk before the last');
      asm.data.set(c.data, c.offset);
      asm.received += c.data.byteLength;
      if (!c.last) return;
      if (asm.received !== asm.totalBytes) {
        return refuse('malformed', `last chunk at ${asm.received} of ${asm.totalBytes} bytes`);
      }
      const m: Message = {
        clusterId: c.clusterId,
        from: asm.from,
        to: c.to,
        term: asm.term,
        type: 'snap',
        snapshot: { meta: asm.meta, data: asm.data },
      };
      this.counters.snapshotsReceived++;
      finish(null);
      this.deliver(m);
    });
    // A call the sender cancelled also ends here, indistinguishable from a truncated one, so
    // an abandoned snapshot is counted as refused too.
    call.on('end', () => refuse('malformed', 'stream ended before the last chunk'));
  }

  // --- reports ---------------------------------------------------------------------------

  /** Counts every unreachable event; reports at most one per peer per interval. */
  private noteUnreachable(to: NodeId): void {
    this.counters.unreachable++;
    const now = this.ctx.nowMs();
    const last = this.lastUnreachableReportMs.get(to);
    if (last !== undefined && now - last < this.unreachableReportIntervalMs) return;
    this.lastUnreachableReportMs.set(to, now);
    this.counters.unreachableReported++;
    this.report({ kind: 'unreachable', to });
  }

  /**
   * Reports are delivered on a later microtask, never from inside send(), so that the node
   * is not re-entered while it is handing over a batch.
   */
  private report(r: TransportReport): void {
    queueMicrotask(() => {
      if (this.closed || this.handlers === null) return;
      this.handlers.onReport(r);
    });
  }
}
