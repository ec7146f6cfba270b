// Encodes and decodes the Raft wire format of proto/raft.proto with protobufjs, loaded at run
// time (no generated code). Decoding is the door: anything a peer sends is checked here and
// turned into a typed Message, or into a `WireError` saying what was wrong; it never throws.
import protobuf from 'protobufjs';
import { findProto } from './grpc-proto.js';
import type {
  ConfState,
  Entry,
  EntryType,
  Message,
  NodeId,
  SnapshotChunk,
  SnapshotMeta,
} from './types.js';

/** A peer sent something that does not decode into a valid value; `reason` says what. */
export interface WireError {
  readonly kind: 'malformed';
  readonly reason: string;
}

function malformed(reason: string): WireError {
  return { kind: 'malformed', reason };
}

export function isWireError(v: unknown): v is WireError {
  return typeof v === 'object' && v !== null && (v as { kind?: unknown }).kind === 'malformed';
}

/** A method of the RaftPeer service, as grpc-js needs it. */
export interface RaftPeerMethod {
  readonly name: string;
  /** '/ovnts.raft.RaftPeer/Name' */
  readonly path: string;
}

const ENTRY_TYPE_TO_WIRE: Readonly<Record<EntryType, number>> = {
  normal: 0,
  'conf-change': 1,
  empty: 2,
};
const ENTRY_TYPE_FROM_WIRE: readonly EntryType[] = ['normal', 'conf-change', 'empty'];

/** The tag of field 1 (`messages`, length-delimited) of MessageBatch. */
const BATCH_MESSAGES_TAG = (1 << 3) | 2;

type Wire = Record<string, unknown>;

/** The proto types and services, loaded once per codec. */
export class RaftCodec {
  readonly messagesMethod: RaftPeerMethod;
  readonly snapshotMethod: RaftPeerMethod;
  private readonly messageType: protobuf.Type;
  private readonly batchType: protobuf.Type;
  private readonly chunkType: protobuf.Type;
  private readonly ackType: protobuf.Type;

  constructor(protoPath: string = findProto('raft.proto')) {
    const root = protobuf.loadSync(protoPath);
    this.messageType = root.lookupType('ovnts.raft.Message');
    this.batchType = root.lookupType('ovnts.raft.MessageBatch');
    this.chunkType = root.lookupType('ovnts.raft.SnapshotChunk');
    this.ackType = root.lookupType('ovnts.raft.StreamAck');
    const service = root.lookupService('ovnts.raft.RaftPeer');
    this.messagesMethod = clientStreamMethod(service, 'Messages', 'MessageBatch');
    this.snapshotMethod = clientStreamMethod(service, 'Snapshot', 'SnapshotChunk');
  }

  /** Encodes one message (any kind but `snap`) for a later `encodeBatch`. */
  encodeMessage(m: Message): Uint8Array {
    return this.messageType.encode(messageToWire(m)).finish();
  }

  /**
   * Joins messages encoded by `encodeMessage` into one MessageBatch. A repeated message field
   * is each element's bytes behind its tag and length, so the batch need not be re-encoded.
   */
  encodeBatch(encoded: readonly Uint8Array[]): Buffer {
    const w = protobuf.Writer.create();
    for (const e of encoded) w.uint32(BATCH_MESSAGES_TAG).bytes(e);
    return toBuffer(w.finish());
  }

  /** Decodes a MessageBatch: one entry per message, each a Message or the reason it is bad. */
  decodeBatch(buf: Uint8Array): (Message | WireError)[] | WireError {
    let batch: Wire;
    try {
      batch = this.batchType.decode(buf) as unknown as Wire;
    } catch (err) {
      return malformed(`MessageBatch does not decode: ${errorText(err)}`);
    }
    const messages = batch['messages'];
    if (!Array.isArray(messages)) return malformed('MessageBatch without messages');
    const arena = new ByteArena(smallEntryBytes(messages));
    return messages.map((w: unknown) => messageFromWire(w, arena));
  }

  encodeChunk(c: SnapshotChunk): Buffer {
    return toBuffer(
      this.chunkType
        .encode({
          clusterId: c.clusterId,
          from: c.from,
          to: c.to,
          term: c.term,
          meta: metaToWire(c.meta),
          offset: c.offset,
          totalBytes: c.totalBytes,
          data: c.data,
          last: c.last,
        })
        .finish(),
    );
  }

  /** Decodes a SnapshotChunk. Its `data` is a view of `buf`: copy it before keeping it. */
  decodeChunk(buf: Uint8Array): SnapshotChunk | WireError {
    let w: Wire;
    try {
      w = this.chunkType.decode(buf) as unknown as Wire;
    } catch (err) {
      return malformed(`SnapshotChunk does not decode: ${errorText(err)}`);
    }
    const clusterId = str(w['clusterId']);
    const from = u64(w['from']);
    const to = u64(w['to']);
    const term = u64(w['term']);
    const offset = u64(w['offset']);
    const totalBytes = u64(w['totalBytes']);
    const data = bytesField(w['data']);
    const last = w['last'];
    const meta = metaFromWire(w['meta']);
    if (clusterId === undefined) return malformed('chunk: bad cluster_id');
    if (from === undefined || to === undefined || term === undefined) {
      return malformed('chunk: bad from, to or term');
    }
    if (offset === undefined || totalBytes === undefined) {
      return malformed('chunk: bad offset or total_bytes');
    }
    if (data === undefined) return malformed('chunk: bad data');
    if (typeof last !== 'boolean') return malformed('chunk: bad last');
    if (isWireError(meta)) return meta;
    return { clusterId, from, to, term, meta, offset, totalBytes, data, last };
  }

  encodeAck(): Buffer {
    return toBuffer(this.ackType.encode({}).finish());
  }
}

function clientStreamMethod(
  service: protobuf.Service,
  name: string,
  requestType: string,
): RaftPeerMethod {
  const m = service.methods[name];
  // The code below is written for this exact shape; a changed proto must change it too.
  if (m === undefined || m.requestStream !== true || m.responseStream === true) {
    throw new Error(`raft.proto: RaftPeer.${name} must be a client-streaming method`);
  }
  if (m.requestType !== requestType || m.responseType !== 'StreamAck') {
    throw new Error(`raft.proto: RaftPeer.${name} must take ${requestType} and return StreamAck`);
  }
  return { name, path: `/ovnts.raft.RaftPeer/${name}` };
}

function toBuffer(u: Uint8Array): Buffer {
  return Buffer.isBuffer(u) ? u : Buffer.from(u.buffer, u.byteOffset, u.byteLength);
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

// --- encoding ------------------------------------------------------------------------------

function entryToWire(e: Entry): Wire {
  const w: Wire = { term: e.term, index: e.index, type: ENTRY_TYPE_TO_WIRE[e.type], data: e.data };
  if (e.client !== undefined) w['client'] = { clientId: e.client.clientId, seq: e.client.seq };
  return w;
}

function metaToWire(meta: SnapshotMeta): Wire {
  const c = meta.conf;
  return {
    index: meta.index,
    term: meta.term,
    conf: {
      voters: c.voters,
      learners: c.learners,
      removed: c.removed,
      ...(c.electionTicks === undefined ? {} : { electionTicks: c.electionTicks }),
    },
  };
}

function messageToWire(m: Message): Wire {
  const w: Wire = { clusterId: m.clusterId, from: m.from, to: m.to, term: m.term };
  // Setting the one oneof field on the header object is cheaper than spreading the header.
  switch (m.type) {
    case 'app':
      w['app'] = {
        index: m.index,
        logTerm: m.logTerm,
        entries: m.entries.map(entryToWire),
        commit: m.commit,
      };
      return w;
    case 'app-resp':
      w['appResp'] = { index: m.index, reject: m.reject, rejectHint: m.rejectHint, logTerm: m.logTerm };
      return w;
    case 'vote':
      w['vote'] = { index: m.index, logTerm: m.logTerm, transfer: m.transfer };
      return w;
    case 'pre-vote':
      w['preVote'] = { index: m.index, logTerm: m.logTerm, transfer: m.transfer };
      return w;
    case 'vote-resp':
      w['voteResp'] = { reject: m.reject };
      return w;
    case 'pre-vote-resp':
      w['preVoteResp'] = { reject: m.reject };
      return w;
    case 'heartbeat':
      w['heartbeat'] = { commit: m.commit, readSeq: m.readSeq };
      return w;
    case 'heartbeat-resp':
      w['heartbeatResp'] = { readSeq: m.readSeq };
      return w;
    case 'timeout-now':
      w['timeoutNow'] = {};
      return w;
    case 'read-index':
      w['readIndex'] = { ctx: m.ctx };
      return w;
    case 'read-index-resp':
      w['readIndexResp'] = { index: m.index, ctx: m.ctx };
      return w;
    case 'snap':
      // The transport routes `snap` to the Snapshot RPC before it gets here.
      throw new Error('grpc-codec: a snap message is sent as snapshot chunks, not as a Message');
  }
}

// --- decoding ------------------------------------------------------------------------------

/** Small copies share an arena slab; larger ones get their own buffer. */
const ARENA_SLAB_BYTES = 64 * 1024;
const ARENA_COPY_BYTES_MAX = 4 * 1024;

/**
 * Copies received entry data out of the frame, so that a kept entry does not pin the whole
 * frame in memory, without paying one allocation per small entry: small copies are packed
 * into shared slabs of at most ARENA_SLAB_BYTES. One arena serves one decoded batch and is
 * told the batch's small bytes up front, so its slabs hold exactly them: an entry is kept in
 * the in-memory log until the next snapshot, and a slab sized for more would pin the unused
 * rest with it (a follower of serial one-entry appends kept a 64 KiB slab per ~100-byte entry).
 */
class ByteArena {
  private slab = new Uint8Array(0);
  private used = 0;

  /** `smallBytesLeft`: the total length of the copies of at most ARENA_COPY_BYTES_MAX to come. */
  constructor(private smallBytesLeft: number) {}

  copy(src: Uint8Array): Uint8Array {
    if (src.byteLength > ARENA_COPY_BYTES_MAX) return new Uint8Array(src);
    if (this.used + src.byteLength > this.slab.byteLength) {
      this.slab = new Uint8Array(Math.max(src.byteLength, Math.min(ARENA_SLAB_BYTES, this.smallBytesLeft)));
      this.used = 0;
    }
    const out = this.slab.subarray(this.used, this.used + src.byteLength);
    out.set(src);
    this.used += src.byteLength;
    this.smallBytesLeft = Math.max(0, this.smallBytesLeft - src.byteLength);
    return out;
  }
}

/** The total length of the entry data in decoded wire messages that ByteArena packs into slabs. */
function smallEntryBytes(messages: readonly unknown[]): number {
  let n = 0;
  for (const m of messages) {
    const w = obj(m);
    const entries = w === undefined || w['body'] !== 'app' ? undefined : obj(w['app'])?.['entries'];
    if (!Array.isArray(entries)) continue;
    for (const e of entries) {
      const data = bytesField(obj(e)?.['data']);
      if (data !== undefined && data.byteLength <= ARENA_COPY_BYTES_MAX) n += data.byteLength;
    }
  }
  return n;
}

/** A uint64 from protobufjs (a number or a Long) as a safe integer, or undefined. */
function u64(v: unknown): number | undefined {
  if (typeof v === 'number') return Number.isSafeInteger(v) && v >= 0 ? v : undefined;
  if (typeof v !== 'object' || v === null) return undefined;
  const { low, high } = v as { low?: unknown; high?: unknown };
  if (typeof low !== 'number' || typeof high !== 'number') return undefined;
  const n = (high >>> 0) * 0x1_0000_0000 + (low >>> 0);
  return Number.isSafeInteger(n) ? n : undefined;
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

function bool(v: unknown): boolean | undefined {
  return typeof v === 'boolean' ? v : undefined;
}

/**
 * A bytes field. protobufjs leaves an empty one unset on the wire and reads it back as its
 * default, an empty array, so that counts as empty bytes.
 */
function bytesField(v: unknown): Uint8Array | undefined {
  if (v instanceof Uint8Array) return v;
  if (Array.isArray(v) && v.length === 0) return new Uint8Array(0);
  return undefined;
}

function obj(v: unknown): Wire | undefined {
  return typeof v === 'object' && v !== null ? (v as Wire) : undefined;
}

function has(w: Wire, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(w, key);
}

function ids(v: unknown): NodeId[] | undefined {
  if (!Array.isArray(v)) return undefined;
  const out: NodeId[] = [];
  for (const x of v) {
    const n = u64(x);
    if (n === undefined) return undefined;
    out.push(n);
  }
  return out;
}

function entryFromWire(v: unknown, arena: ByteArena): Entry | WireError {
  const w = obj(v);
  if (w === undefined) return malformed('entry: not a message');
  const term = u64(w['term']);
  const index = u64(w['index']);
  const typeCode = w['type'];
  const type = typeof typeCode === 'number' ? ENTRY_TYPE_FROM_WIRE[typeCode] : undefined;
  const data = bytesField(w['data']);
  if (term === undefined || index === undefined) return malformed('entry: bad term or index');
  if (type === undefined) return malformed(`entry: unknown type ${String(typeCode)}`);
  if (data === undefined) return malformed('entry: bad data');
  const entry = { term, index, type, data: arena.copy(data) };
  const client = obj(w['client']);
  if (client === undefined) return entry;
  const clientId = str(client['clientId']);
  const seq = u64(client['seq']);
  if (clientId === undefined || seq === undefined) return malformed('entry: bad client tag');
  return { ...entry, client: { clientId, seq } };
}

function confFromWire(v: unknown): ConfState | WireError {
  const w = obj(v);
  if (w === undefined) return malformed('snapshot meta: missing conf');
  const voters = ids(w['voters']);
  const learners = ids(w['learners']);
  const removed = ids(w['removed']);
  if (voters === undefined || learners === undefined || removed === undefined) {
    return malformed('conf: bad voters, learners or removed');
  }
  if (!has(w, 'electionTicks')) return { voters, learners, removed };
  const electionTicks = w['electionTicks'];
  if (typeof electionTicks !== 'number') return malformed('conf: bad election_ticks');
  return { voters, learners, removed, electionTicks };
}

function metaFromWire(v: unknown): SnapshotMeta | WireError {
  const w = obj(v);
  if (w === undefined) return malformed('chunk: missing snapshot meta');
  const index = u64(w['index']);
  const term = u64(w['term']);
  if (index === undefined || term === undefined) return malformed('snapshot meta: bad index or term');
  const conf = confFromWire(w['conf']);
  if (isWireError(conf)) return conf;
  return { index, term, conf };
}

function messageFromWire(v: unknown, arena: ByteArena): Message | WireError {
  const w = obj(v);
  if (w === undefined) return malformed('message: not a message');
  const clusterId = str(w['clusterId']);
  const from = u64(w['from']);
  const to = u64(w['to']);
  const term = u64(w['term']);
  if (clusterId === undefined || from === undefined || to === undefined || term === undefined) {
    return malformed('message: bad cluster_id, from, to or term');
  }
  const bodyCase = w['body'];
  const b = typeof bodyCase === 'string' ? obj(w[bodyCase]) : undefined;
  if (b === undefined) return malformed('message: no body');
  switch (bodyCase) {
    case 'app': {
      const index = u64(b['index']);
      const logTerm = u64(b['logTerm']);
      const commit = u64(b['commit']);
      const rawEntries = b['entries'];
      if (index === undefined || logTerm === undefined || commit === undefined) {
        return malformed('app: bad index, log_term or commit');
      }
      if (!Array.isArray(rawEntries)) return malformed('app: bad entries');
      const entries: Entry[] = [];
      for (const re of rawEntries) {
        const e = entryFromWire(re, arena);
        if (isWireError(e)) return e;
        entries.push(e);
      }
      return { clusterId, from, to, term, type: 'app', index, logTerm, entries, commit };
    }
    case 'appResp': {
      const index = u64(b['index']);
      const reject = bool(b['reject']);
      const rejectHint = u64(b['rejectHint']);
      const logTerm = u64(b['logTerm']);
      if (index === undefined || reject === undefined || rejectHint === undefined || logTerm === undefined) {
        return malformed('app-resp: bad fields');
      }
      return { clusterId, from, to, term, type: 'app-resp', index, reject, rejectHint, logTerm };
    }
    case 'vote':
    case 'preVote': {
      const index = u64(b['index']);
      const logTerm = u64(b['logTerm']);
      const transfer = bool(b['transfer']);
      if (index === undefined || logTerm === undefined || transfer === undefined) {
        return malformed(`${bodyCase}: bad fields`);
      }
      const type = bodyCase === 'vote' ? 'vote' : 'pre-vote';
      return { clusterId, from, to, term, type, index, logTerm, transfer };
    }
    case 'voteResp':
    case 'preVoteResp': {
      const reject = bool(b['reject']);
      if (reject === undefined) return malformed(`${bodyCase}: bad reject`);
      return { clusterId, from, to, term, type: bodyCase === 'voteResp' ? 'vote-resp' : 'pre-vote-resp', reject };
    }
    case 'heartbeat': {
      const commit = u64(b['commit']);
      const readSeq = u64(b['readSeq']);
      if (commit === undefined || readSeq === undefined) return malformed('heartbeat: bad fields');
      return { clusterId, from, to, term, type: 'heartbeat', commit, readSeq };
    }
    case 'heartbeatResp': {
      const readSeq = u64(b['readSeq']);
      if (readSeq === undefined) return malformed('heartbeat-resp: bad read_seq');
      return { clusterId, from, to, term, type: 'heartbeat-resp', readSeq };
    }
    case 'timeoutNow':
      return { clusterId, from, to, term, type: 'timeout-now' };
    case 'readIndex': {
      const ctx = str(b['ctx']);
      if (ctx === undefined) return malformed('read-index: bad ctx');
      return { clusterId, from, to, term, type: 'read-index', ctx };
    }
    case 'readIndexResp': {
      const index = u64(b['index']);
      const ctx = str(b['ctx']);
      if (index === undefined || ctx === undefined) return malformed('read-index-resp: bad fields');
      return { clusterId, from, to, term, type: 'read-index-resp', index, ctx };
    }
    default:
      return malformed(`message: unknown body ${String(bodyCase)}`);
  }
}
