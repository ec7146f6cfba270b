// The Northbound gRPC service (proto/northbound.proto) over a CentralNode: Transact, List,
// GetSchema and Watch, plus the client a follower uses to forward writes to the leader.
// Every error becomes a gRPC status in exactly one place (statusOf).
import * as grpc from '@grpc/grpc-js';
import { loadProto, serviceDefinition } from '../cluster/grpc-proto.js';
import { channelCredentials, tlsChannelOptions, type TlsCredentials } from '../cluster/tls.js';
import type { NodeId } from '../cluster/types.js';
import type { DbDelta, RbacSession, Row } from '../ovsdb/index.js';
import { rowToJson, schemaToJson } from '../ovsdb/index.js';
import { quote } from '../ovsdb/errors.js';
import { MalformedRequestError, malformedReason } from '../cluster/grpc-proto.js';
import type { CentralNode, DbFeed, TransactDb, TransactOptions, TransactOutcome } from './central-node.js';
import { CentralNodeError, StreamEnd } from './errors.js';
// Not from ovsdb-door.js: that would load the central node (and LevelDB) into every client.
import { JSON_VALUE_BYTES_MAX_DEFAULT } from './json-stream.js';

const serviceName = 'ovnts.northbound.Northbound';

export function northboundDefinition(): grpc.ServiceDefinition {
  return serviceDefinition(loadProto('northbound.proto'), serviceName);
}

/** Limits of the Northbound door. */
export const northboundLimits = {
  /** Watch events queued for one slow watcher before it is cut off. */
  watchQueueEventsMax: 10_000,
  /** Rows per initial-state event of a watch (a big table arrives in several events). */
  initialRowsPerEventMax: 1000,
  /** Interval of progress notices on an idle watch. */
  progressIntervalMs: 10_000,
  /** Requests of one TransactStream awaiting their replies; one more is refused at once. */
  streamTransactsInFlightMax: 1024,
  /**
   * A batch of replies on TransactStreamBatched is cut before a reply that would take it past
   * this many bytes: a client that takes any single reply takes any batch (gRPC's default
   * bound on a received message is 4 MiB).
   */
  replyBatchBytesMax: 1024 * 1024,
  /** The same for the requests our client sends in one TransactStreamBatched message. */
  requestBatchBytesMax: 1024 * 1024,
  /**
   * The largest reply a client takes (gRPC's default is 4 MiB). A whole table is one List
   * reply: the 10,000-port NB's Logical_Switch_Port table is 5.2 MB, and nbctl's show, list and
   * transactions of several commands read whole tables.
   */
  clientReplyBytesMax: 256 * 1024 * 1024,
  /**
   * The largest request message the server reads (gRPC's default is 4 MiB): the OVSDB doors'
   * bound on one message, plus room for the envelope. A follower forwards every write it takes,
   * from either door, to the leader here, so the leader must read whatever a follower's door
   * accepted. Our clients check it before a request leaves (see TransactChannel).
   */
  requestBytesMax: JSON_VALUE_BYTES_MAX_DEFAULT + 64 * 1024,
} as const;

/** Options of the grpc.Server that serves the Northbound service. */
export const northboundServerOptions: grpc.ServerOptions = { 'grpc.max_receive_message_length': northboundLimits.requestBytesMax };

/**
 * Bytes of a TransactStream request on the wire, at most: its JSON text (UTF-8, up to 3 bytes
 * per UTF-16 unit, measured only when that could matter) and the protobuf envelope.
 */
function requestBytesAtMost(m: { request: WireTransactRequest } | { wait: WireWaitRequest }): number {
  const envelopeBytesMax = 256;
  if (!('request' in m)) return envelopeBytesMax;
  const text = m.request.opsJson;
  // The db name and an RBAC session's role and id, at up to 3 bytes per unit too.
  const fields = (m.request.db?.length ?? 0) + 3 * ((m.request.rbac?.role?.length ?? 0) + (m.request.rbac?.id?.length ?? 0));
  const bound = text.length * 3 + fields + envelopeBytesMax;
  return bound <= northboundLimits.requestBytesMax ? bound : Buffer.byteLength(text) + fields + envelopeBytesMax;
}

class BadRequest extends Error {}

/**
 * The longest status message sent: details travel in an HTTP/2 trailer, and one that is too
 * large breaks the connection instead of reporting the error.
 */
const statusDetailsCharsMax = 1024;

/** A UTF-16 surrogate without its other half. */
const loneSurrogate = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * Details fit to send: at most statusDetailsCharsMax characters, and well-formed text. grpc-js
 * percent-encodes them with encodeURI, which throws on a lone surrogate (one echoed from a
 * client's malformed JSON, or half of a pair the cut split): the call was then never answered
 * and the rejection went unhandled.
 */
function bounded(s: Partial<grpc.StatusObject>): Partial<grpc.StatusObject> {
  if (s.details === undefined) return s;
  const details = s.details.length > statusDetailsCharsMax ? `${s.details.slice(0, statusDetailsCharsMax)}...` : s.details;
  const wellFormed = details.replace(loneSurrogate, '\ufffd');
  return wellFormed === s.details ? s : { ...s, details: wellFormed };
}

/** The single place where an outcome becomes a gRPC status. */
export function statusOf(err: unknown): Partial<grpc.StatusObject> {
  return bounded(statusOfUnbounded(err));
}

function statusOfUnbounded(err: unknown): Partial<grpc.StatusObject> {
  if (err instanceof BadRequest) return { code: grpc.status.INVALID_ARGUMENT, details: err.message };
  if (err instanceof MalformedRequestError) return { code: grpc.status.INVALID_ARGUMENT, details: err.message };
  if (err instanceof CentralNodeError) {
    switch (err.kind) {
      case 'bad-request':
        return { code: grpc.status.INVALID_ARGUMENT, details: err.message };
      case 'too-large':
        return { code: grpc.status.RESOURCE_EXHAUSTED, details: err.message };
      case 'unavailable':
        return { code: grpc.status.UNAVAILABLE, details: err.message };
      case 'timeout':
        return { code: grpc.status.DEADLINE_EXCEEDED, details: err.message };
    }
  }
  if (err instanceof WatchCut) return { code: err.code, details: err.message };
  if (err instanceof StreamEnd) {
    switch (err.kind) {
      case 'invalid':
        return { code: grpc.status.INVALID_ARGUMENT, details: err.message };
      case 'unavailable':
        return { code: grpc.status.UNAVAILABLE, details: err.message };
      case 'aborted':
        return { code: grpc.status.ABORTED, details: err.message };
      case 'exhausted':
        return { code: grpc.status.RESOURCE_EXHAUSTED, details: err.message };
      case 'denied':
        return { code: grpc.status.PERMISSION_DENIED, details: err.message };
    }
  }
  const e = err as Partial<grpc.ServiceError>;
  if (typeof e.code === 'number' && typeof e.details === 'string') return { code: e.code, details: e.details };
  return { code: grpc.status.INTERNAL, details: (err as Error).message };
}

class WatchCut extends Error {
  constructor(
    readonly code: grpc.status,
    message: string,
  ) {
    super(message);
  }
}

function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new BadRequest(`${what} is not valid JSON: ${(err as Error).message}`);
  }
}

function unary<Req, Res>(f: (req: Req) => Promise<Res>): grpc.handleUnaryCall<Req, Res> {
  return (call, callback) => {
    const malformed = malformedReason(call.request);
    if (malformed !== undefined) {
      callback(statusOf(new MalformedRequestError(malformed)));
      return;
    }
    f(call.request).then(
      (res) => callback(null, res),
      (err: unknown) => callback(statusOf(err)),
    );
  };
}

export interface WireChange {
  table: string;
  uuid: string;
  oldJson: string;
  newJson: string;
}

function changesOf(feed: DbFeed, delta: DbDelta, tables: ReadonlySet<string> | undefined): WireChange[] {
  const out: WireChange[] = [];
  for (const c of delta.changes) {
    if (tables !== undefined && !tables.has(c.table)) continue;
    const schema = feed.schema.tables.get(c.table);
    if (schema === undefined) continue;
    out.push({
      table: c.table,
      uuid: c.uuid,
      oldJson: c.kind === 'insert' ? '' : JSON.stringify(rowToJson(schema, c.old)),
      newJson: c.kind === 'delete' ? '' : JSON.stringify(rowToJson(schema, c.new)),
    });
  }
  return out;
}

function watch(central: CentralNode, call: grpc.ServerWritableStream<{ tables: string[]; sinceRevision: number; db?: string; sbView?: string }, unknown>): void {
  const malformed = malformedReason(call.request);
  if (malformed !== undefined) {
    call.emit('error', statusOf(new MalformedRequestError(malformed)));
    return;
  }
  const { tables: tableList, sinceRevision } = call.request;
  const dbName = call.request.db ?? '';
  if (dbName !== '' && dbName !== 'OVN_Northbound' && dbName !== 'OVN_Southbound') {
    call.emit('error', statusOf(new BadRequest(`unknown database ${quote(dbName)}`)));
    return;
  }
  if (dbName === 'OVN_Southbound' && central.northd === undefined) {
    call.emit('error', statusOf(new CentralNodeError('unavailable', 'this node runs no northd projection: no OVN_Southbound view')));
    return;
  }
  const feed = central.feed(dbName === 'OVN_Southbound' ? 'OVN_Southbound' : 'OVN_Northbound');
  // A revision beyond this member's log is one no member has told anyone about yet (a
  // lagging member may still be catching up to a real one: those are served as they apply).
  const lastIndex = central.node.status().lastIndex;
  if (sinceRevision > lastIndex) {
    call.emit('error', statusOf(new WatchCut(grpc.status.OUT_OF_RANGE, `revision ${sinceRevision} is in the future: this member's log ends at ${lastIndex}`)));
    return;
  }
  for (const t of tableList) {
    if (!feed.schema.tables.has(t)) {
      call.emit('error', statusOf(new BadRequest(`unknown table ${quote(t)}`)));
      return;
    }
  }
  const tables = tableList.length > 0 ? new Set(tableList) : undefined;
  let ended = false;
  let queued = 0;
  let lastRevision = 0;
  const closeSession = central.sessions.open('watch');
  call.on('close', closeSession);
  const cut = (code: grpc.status, message: string): void => {
    if (ended) return;
    ended = true;
    closeSession();
    off();
    clearInterval(progress);
    call.emit('error', statusOf(new WatchCut(code, message)));
  };
  // An SB watch's events name the view they come from (WatchRequest.sb_view).
  const sbView = dbName === 'OVN_Southbound' ? central.sbViewId : undefined;
  const send = (event: object): void => {
    if (ended) return;
    queued++;
    const ok = call.write(sbView === undefined ? event : { ...event, sbView }, () => {
      queued--;
    });
    // Backpressure: gRPC buffers what write() could not send; past the limit the watcher is
    // too slow, and it is cut rather than allowed to grow this process's memory.
    if (!ok && queued > northboundLimits.watchQueueEventsMax) {
      cut(grpc.status.RESOURCE_EXHAUSTED, `watcher fell more than ${northboundLimits.watchQueueEventsMax} events behind; resume from revision ${lastRevision}`);
    }
  };
  // Deltas that commit while the initial state or history is being sent are queued here and
  // sent after it, so the stream has no gaps and no repeats.
  const pending: { revision: number; delta: DbDelta }[] = [];
  let live = false;
  const offCommit = feed.onChange((e) => {
    if (!live) {
      pending.push(e);
      return;
    }
    emit(e.revision, e.delta);
  });
  // A snapshot from the leader replaced this replica's state: the changes in between are not
  // known here, so the watcher must resume elsewhere or re-read.
  const offRestore = central.onRestore((revision) => {
    cut(grpc.status.ABORTED, `this member's state was replaced by a snapshot at revision ${revision}; resume from revision ${lastRevision} on another member, or re-read`);
  });
  const off = (): void => {
    offCommit();
    offRestore();
  };
  const emit = (revision: number, delta: DbDelta): void => {
    if (revision <= lastRevision) return;
    lastRevision = revision;
    const changes = changesOf(feed, delta, tables);
    if (changes.length > 0) send({ revision, changes, initial: false, progress: false });
  };
  const progress = setInterval(() => send({ revision: Math.max(lastRevision, central.revision), changes: [], initial: false, progress: true }), northboundLimits.progressIntervalMs);
  call.on('cancelled', () => {
    ended = true;
    closeSession();
    off();
    clearInterval(progress);
  });

  if (sinceRevision === 0) {
    const revision = central.revision;
    lastRevision = revision;
    const names = tables ? [...tables].sort() : [...feed.schema.tables.keys()].sort();
    let batch: WireChange[] = [];
    const flush = (): void => {
      send({ revision, changes: batch, initial: true, progress: false });
      batch = [];
    };
    for (const name of names) {
      const schema = feed.schema.tables.get(name);
      if (schema === undefined) continue;
      for (const row of feed.rows(name).values()) {
        batch.push({ table: name, uuid: (row as Row)._uuid, oldJson: '', newJson: JSON.stringify(rowToJson(schema, row)) });
        if (batch.length >= northboundLimits.initialRowsPerEventMax) flush();
      }
    }
    flush();
  } else {
    const theirs = call.request.sbView ?? '';
    if (sbView !== undefined && theirs !== '' && theirs !== sbView) {
      cut(grpc.status.OUT_OF_RANGE, `view: the watcher's copy of the SB view was derived by other software (view ${quote(theirs)}, this member's ${quote(sbView)}); re-read with since_revision 0`);
      return;
    }
    const since = feed.history.since(sinceRevision);
    if (since.kind === 'compacted') {
      cut(grpc.status.OUT_OF_RANGE, `compacted: revision ${sinceRevision} is no longer retained; the oldest revision to resume from is ${since.minRevision}; re-read with since_revision 0`);
      return;
    }
    lastRevision = sinceRevision;
    for (const item of since.items) emit(item.revision, item.delta);
  }
  live = true;
  for (const e of pending) emit(e.revision, e.delta);
  pending.length = 0;
}

interface WireTransactRequest {
  opsJson: string;
  db?: string;
  forwarded?: boolean;
  rbac?: { role?: string; id?: string | null } | null;
}

/** A request's RBAC session (proto/northbound.proto: RbacSession), undefined for none or an empty role. */
function rbacOf(req: WireTransactRequest): RbacSession | undefined {
  const role = req.rbac?.role;
  if (role === undefined || role === '') return undefined;
  const id = req.rbac?.id;
  return typeof id === 'string' ? { role, id } : { role };
}

interface WireTransactReply {
  resultsJson: string;
  revision: number;
  failed: boolean;
}

async function transactOne(central: CentralNode, req: WireTransactRequest): Promise<WireTransactReply> {
  const db = req.db ?? '';
  if (db !== '' && db !== 'OVN_Northbound' && db !== 'OVN_Southbound') throw new BadRequest(`unknown database ${db}`);
  const rbac = rbacOf(req);
  const out = await central.transact(parseJson(req.opsJson, 'ops_json'), db === 'OVN_Southbound' ? 'OVN_Southbound' : 'OVN_Northbound', { forwarded: req.forwarded === true, ...(rbac !== undefined ? { rbac } : {}) });
  return { resultsJson: JSON.stringify(out.results), revision: out.revision, failed: out.failed };
}

interface WireWaitRequest {
  nbCfg: number | string;
  waitFor: string;
  timeoutMs: number;
  minRevision?: number | string;
}

interface WireWaitReply {
  revision: number | string;
  nbCfg: number | string;
  sbCfg: number | string;
  hvCfg: number | string;
}

/** One Wait, on its own call or on a TransactStream. */
async function waitOne(central: CentralNode, req: WireWaitRequest): Promise<WireWaitReply> {
  const s = await central.waitCfg(Number(req.nbCfg), req.waitFor === 'HV' ? 'hv' : 'sb', req.timeoutMs, Number(req.minRevision ?? 0));
  return { revision: s.revision, nbCfg: s.nbCfg, sbCfg: s.sbCfg, hvCfg: s.hvCfg };
}

type StreamRequest = { id: number; request?: WireTransactRequest | null; wait?: WireWaitRequest | null };
type StreamReply = { id: number; reply?: WireTransactReply; waitReply?: WireWaitReply; statusCode: number; statusDetails: string };

/** Bytes a reply takes on the wire, at least: what a batch of replies is measured by. */
function replyBytes(r: StreamReply): number {
  return 64 + (r.reply?.resultsJson.length ?? 0) + r.statusDetails.length;
}

/**
 * What one end of a TransactStreamBatched call sends: the items added in one turn of the event
 * loop leave together at its end, cut before an item that would take the batch past
 * `bytesMax` (so a batch is larger only when one item alone is).
 */
class TurnBatcher<T> {
  private items: T[] = [];
  private bytes = 0;
  private scheduled = false;

  constructor(
    private readonly bytesMax: number,
    private readonly write: (items: T[]) => void,
  ) {}

  add(item: T, bytes: number): void {
    if (this.items.length > 0 && this.bytes + bytes > this.bytesMax) this.flush();
    this.items.push(item);
    this.bytes += bytes;
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.flush();
    });
  }

  flush(): void {
    if (this.items.length === 0) return;
    const items = this.items;
    this.clear();
    this.write(items);
  }

  /** Drops what was not sent. */
  clear(): void {
    this.items = [];
    this.bytes = 0;
  }
}

/**
 * The requests of one TransactStream or TransactStreamBatched call: every request is a
 * Transact of its own (or a Wait), answered with its id once done; they run concurrently, as
 * requests on separate calls would. A grpc-js unary call costs the server several times a
 * stream message (a new HTTP/2 stream, headers, trailers, a deadline timer), which is most of
 * a small transaction's CPU on the leader; and a stream message costs several times the
 * request it carries, hence the batched form.
 */
class StreamRequests {
  private inFlight = 0;
  private ended = false;
  private endRequested = false;

  constructor(
    private readonly central: CentralNode,
    private readonly call: grpc.ServerDuplexStream<unknown, unknown>,
    private readonly send: (r: StreamReply) => void,
    /** Sends what is held back, before the call ends. */
    private readonly flush: () => void = () => undefined,
  ) {
    call.on('end', () => {
      // The client sent its last request: the call closes once every reply is out.
      this.endRequested = true;
      this.endWhenDone();
    });
    call.on('cancelled', () => {
      this.ended = true;
    });
    call.on('error', () => {
      this.ended = true;
    });
  }

  private reply(r: StreamReply): void {
    if (this.ended || this.call.cancelled || this.call.destroyed) return;
    this.send(r);
  }

  private fail(id: number, err: unknown): void {
    const st = statusOf(err);
    this.reply({ id, statusCode: st.code ?? grpc.status.UNKNOWN, statusDetails: st.details ?? '' });
  }

  /** A message that did not decode: answered as a request with id 0. */
  malformed(reason: string): void {
    this.fail(0, new MalformedRequestError(reason));
  }

  handle(m: StreamRequest): void {
    const malformed = malformedReason(m);
    if (malformed !== undefined) {
      this.fail(typeof m.id === 'number' ? m.id : 0, new MalformedRequestError(malformed));
      return;
    }
    const request = m.request ?? undefined;
    const wait = m.wait ?? undefined;
    if ((request === undefined) === (wait === undefined)) {
      this.fail(m.id, new BadRequest('a TransactStream request needs its request or its wait, not both'));
      return;
    }
    if (this.inFlight >= northboundLimits.streamTransactsInFlightMax) {
      this.fail(m.id, new StreamEnd('exhausted', `at most ${northboundLimits.streamTransactsInFlightMax} transactions may await their replies on one stream`));
      return;
    }
    this.inFlight++;
    const done: Promise<StreamReply> = request !== undefined
      ? transactOne(this.central, request).then((r) => ({ id: m.id, reply: r, statusCode: 0, statusDetails: '' }))
      : waitOne(this.central, wait as WireWaitRequest).then((r) => ({ id: m.id, waitReply: r, statusCode: 0, statusDetails: '' }));
    done.then(
      (r) => this.reply(r),
      (err: unknown) => this.fail(m.id, err),
    ).finally(() => {
      this.inFlight--;
      this.endWhenDone();
    });
  }

  private endWhenDone(): void {
    if (!this.endRequested || this.inFlight > 0 || this.ended) return;
    this.ended = true;
    if (this.call.cancelled || this.call.destroyed) return;
    this.flush();
    this.call.end();
  }
}

function transactStream(central: CentralNode, call: grpc.ServerDuplexStream<StreamRequest, unknown>): void {
  const requests = new StreamRequests(central, call, (r) => call.write(r));
  call.on('data', (m: StreamRequest) => requests.handle(m));
}

function transactStreamBatched(central: CentralNode, call: grpc.ServerDuplexStream<{ requests?: StreamRequest[] }, unknown>): void {
  const batcher = new TurnBatcher<StreamReply>(northboundLimits.replyBatchBytesMax, (replies) => {
    if (!call.cancelled && !call.destroyed) call.write({ replies });
  });
  const requests = new StreamRequests(central, call, (r) => batcher.add(r, replyBytes(r)), () => batcher.flush());
  call.on('data', (m: { requests?: StreamRequest[] }) => {
    const malformed = malformedReason(m);
    if (malformed !== undefined) {
      requests.malformed(malformed);
      return;
    }
    for (const r of m.requests ?? []) requests.handle(r);
  });
}

export function northboundHandlers(central: CentralNode): grpc.UntypedServiceImplementation {
  return {
    transact: unary((req: WireTransactRequest) => transactOne(central, req)),
    transactStream: (call: grpc.ServerDuplexStream<StreamRequest, unknown>) => transactStream(central, call),
    transactStreamBatched: (call: grpc.ServerDuplexStream<{ requests?: StreamRequest[] }, unknown>) => transactStreamBatched(central, call),
    list: unary(async (req: { table: string; whereJson: string; columns: string[]; consistency: string; db?: string }) => {
      const db = req.db ?? '';
      if (db !== '' && db !== 'OVN_Northbound' && db !== 'OVN_Southbound') throw new BadRequest(`unknown database ${db}`);
      if (db !== 'OVN_Southbound' && !central.schema.tables.has(req.table)) throw new BadRequest(`unknown table ${req.table}`);
      const where = req.whereJson === '' ? [] : parseJson(req.whereJson, 'where_json');
      if (!Array.isArray(where)) throw new BadRequest('where_json must be a JSON array of conditions');
      const consistency = req.consistency === 'SERIALIZABLE' ? 'serializable' : 'linearizable';
      const out = db === 'OVN_Southbound' ? await central.listSouthbound(req.table, where, req.columns, consistency) : await central.list(req.table, where, req.columns, consistency);
      return { rowsJson: JSON.stringify(out.rows), revision: out.revision };
    }),
    getSchema: unary(async () => ({ schemaJson: JSON.stringify(schemaToJson(central.schema)) })),
    watch: (call: grpc.ServerWritableStream<{ tables: string[]; sinceRevision: number; db?: string; sbView?: string }, unknown>) => watch(central, call),
    wait: unary((req: WireWaitRequest) => waitOne(central, req)),
  };
}

type UnaryFn = (req: unknown, options: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res: unknown) => void) => void;

/** A Northbound client: the library side of the API, also used by followers to forward. */
export class NorthboundClient {
  private static ctor: grpc.ServiceClientConstructor | undefined;
  private readonly client: grpc.Client;
  private channel: TransactChannel | undefined;
  /** Whether transactions go on TransactStreamBatched (until a server says it has none). */
  private batched = true;

  /** With `tls`, the member is reached over TLS with that identity (cluster/tls.ts). */
  constructor(
    readonly address: string,
    private readonly callTimeoutMs = 30_000,
    tls?: TlsCredentials,
  ) {
    NorthboundClient.ctor ??= grpc.makeGenericClientConstructor(northboundDefinition(), 'Northbound');
    this.client = new NorthboundClient.ctor(address, channelCredentials(tls), {
      ...tlsChannelOptions(tls, address),
      'grpc.max_receive_message_length': northboundLimits.clientReplyBytesMax,
      'grpc.max_send_message_length': northboundLimits.requestBytesMax,
    });
  }

  private call(method: string, req: unknown, timeoutMs = this.callTimeoutMs): Promise<unknown> {
    const c = this.client as unknown as Record<string, UnaryFn>;
    return new Promise((resolve, reject) => (c[method] as UnaryFn).call(c, req, { deadline: Date.now() + timeoutMs }, (err, res) => (err ? reject(err) : resolve(res))));
  }

  /**
   * Transactions go on one TransactStream per client (see TransactChannel), opened on first
   * use. `forwarded`: see TransactOptions (a member forwarding its client's write sets it).
   */
  async transact(ops: readonly unknown[], db: TransactDb = 'OVN_Northbound', options: TransactOptions = {}): Promise<TransactOutcome> {
    const request = { opsJson: JSON.stringify(ops), db, ...(options.forwarded === true ? { forwarded: true } : {}), ...(options.rbac !== undefined ? { rbac: options.rbac } : {}) };
    const r = await this.stream().call({ request }, this.callTimeoutMs);
    return { results: JSON.parse(r.resultsJson) as unknown[], revision: r.revision, failed: r.failed };
  }

  private stream(): TransactChannel {
    if (this.channel === undefined || this.channel.dead) {
      this.channel = new TransactChannel(this.client, this.batched, (left) => {
        // A server without TransactStreamBatched (an older member): TransactStream from now on.
        this.batched = false;
        for (const p of left) this.stream().call(p.m, p.timeoutMs).then(p.resolve, p.reject);
      });
    }
    return this.channel;
  }

  /** Rows of an NB table, or of the derived SB view with `db: 'OVN_Southbound'`. */
  async list(table: string, where: unknown[] = [], options: { columns?: string[]; consistency?: 'linearizable' | 'serializable'; db?: 'OVN_Northbound' | 'OVN_Southbound' } = {}): Promise<{ rows: Record<string, unknown>[]; revision: number }> {
    const r = (await this.call('list', {
      table,
      db: options.db ?? '',
      whereJson: JSON.stringify(where),
      columns: options.columns ?? [],
      consistency: options.consistency === 'serializable' ? 'SERIALIZABLE' : 'LINEARIZABLE',
    })) as { rowsJson: string; revision: number };
    return { rows: JSON.parse(r.rowsJson) as Record<string, unknown>[], revision: r.revision };
  }

  async getSchema(): Promise<unknown> {
    const r = (await this.call('getSchema', {})) as { schemaJson: string };
    return JSON.parse(r.schemaJson);
  }

  /**
   * Waits until sb_cfg or hv_cfg reaches nbCfg (ovn-nbctl --wait); see the Wait RPC. Give
   * `minRevision`, the revision of the write nbCfg was read from (TransactOutcome.revision),
   * when it is known: the member then judges from its own state, without a ReadIndex round.
   */
  async wait(nbCfg: number, which: 'sb' | 'hv', timeoutMs: number, minRevision = 0): Promise<{ revision: number; nbCfg: number; sbCfg: number; hvCfg: number }> {
    // On the transaction stream: a unary call costs several times a stream message, and a
    // --wait's Wait follows its transaction on the same client.
    const r = await this.stream().call({ wait: { nbCfg, waitFor: which === 'hv' ? 'HV' : 'SB', timeoutMs, minRevision } }, timeoutMs + 5_000);
    return { revision: Number(r.revision), nbCfg: Number(r.nbCfg), sbCfg: Number(r.sbCfg), hvCfg: Number(r.hvCfg) };
  }

  /** Opens a watch; events arrive on the returned stream ('data', 'error', 'end'). */
  watch(tables: readonly string[], sinceRevision: number, db: TransactDb = 'OVN_Northbound', sbView = ''): grpc.ClientReadableStream<{ revision: number; changes: WireChange[]; initial: boolean; progress: boolean; sbView?: string }> {
    const c = this.client as unknown as Record<string, (req: unknown) => grpc.ClientReadableStream<never>>;
    return (c.watch as (req: unknown) => grpc.ClientReadableStream<never>).call(c, { tables, sinceRevision, db, ...(sbView !== '' ? { sbView } : {}) });
  }

  close(): void {
    this.channel?.close();
    this.client.close();
  }
}

/** An error shaped as grpc-js reports a failed call (code, details, message "CODE NAME: details"). */
function callError(code: number, details: string): grpc.ServiceError {
  return Object.assign(new Error(`${code} ${grpc.status[code] ?? 'UNKNOWN'}: ${details}`), { code, details, metadata: new grpc.Metadata() });
}

type ChannelMessage = { request: WireTransactRequest } | { wait: WireWaitRequest };
type ChannelReply = { id: number | string; reply?: WireTransactReply | null; waitReply?: WireWaitReply | null; statusCode: number; statusDetails: string };

interface PendingTransact {
  readonly m: ChannelMessage;
  readonly timeoutMs: number;
  readonly resolve: (r: WireTransactReply | WireWaitReply) => void;
  readonly reject: (err: unknown) => void;
  readonly timer: NodeJS.Timeout;
}

/**
 * The client end of one TransactStreamBatched call (or TransactStream, against a server that
 * has no batched form). A request that fails, or outlives its timeout, fails as the same
 * Transact call would (a ServiceError with its code and details). When the stream ends, every
 * request still waiting fails with the stream's error: "No connection established" when it
 * never connected (so nothing was delivered, as callers such as a follower's forwarder rely
 * on), otherwise an error after which the outcome is unknown. The stream is then dead and the
 * next request opens another.
 *
 * Batched, the requests made in one turn of the event loop leave in one message, cut before
 * one that would take it past requestBatchBytesMax (one larger than that goes alone). A
 * server without the batched form answers UNIMPLEMENTED having handled nothing: the requests
 * then go again on a TransactStream (`unbatched`), with their timeouts counted afresh.
 */
class TransactChannel {
  private readonly stream: grpc.ClientDuplexStream<unknown, unknown>;
  private readonly pending = new Map<number, PendingTransact>();
  private nextId = 0;
  private readonly outgoing = new TurnBatcher<{ id: number } & ChannelMessage>(northboundLimits.requestBatchBytesMax, (requests) => {
    if (!this.dead) this.stream.write({ requests });
  });
  dead = false;

  constructor(
    client: grpc.Client,
    private readonly batched: boolean,
    /** Given what a server without the batched form left unhandled. */
    private readonly unbatched: (left: readonly PendingTransact[]) => void = () => undefined,
  ) {
    const c = client as unknown as Record<'transactStream' | 'transactStreamBatched', () => grpc.ClientDuplexStream<unknown, unknown>>;
    this.stream = batched ? c.transactStreamBatched() : c.transactStream();
    this.stream.on('data', (m: unknown) => {
      if (!batched) this.answer(m as ChannelReply);
      else for (const r of (m as { replies?: ChannelReply[] }).replies ?? []) this.answer(r);
    });
    this.stream.on('error', (err: grpc.ServiceError) => {
      if (batched && err.code === grpc.status.UNIMPLEMENTED) this.handOver();
      else this.end(err);
    });
    this.stream.on('end', () => this.end(callError(grpc.status.UNAVAILABLE, 'the transaction stream ended')));
  }

  private answer(m: ChannelReply): void {
    const id = Number(m.id);
    const p = this.pending.get(id);
    if (p === undefined) return;
    this.pending.delete(id);
    clearTimeout(p.timer);
    const result = 'wait' in p.m ? m.waitReply : m.reply;
    if (m.statusCode === 0 && result !== undefined && result !== null) p.resolve({ ...result, revision: Number(result.revision) });
    else p.reject(callError(m.statusCode === 0 ? grpc.status.INTERNAL : m.statusCode, m.statusCode === 0 ? 'a TransactStream reply without its result' : m.statusDetails));
  }

  call(m: { request: WireTransactRequest }, timeoutMs: number): Promise<WireTransactReply>;
  call(m: { wait: WireWaitRequest }, timeoutMs: number): Promise<WireWaitReply>;
  call(m: ChannelMessage, timeoutMs: number): Promise<WireTransactReply | WireWaitReply>;
  call(m: ChannelMessage, timeoutMs: number): Promise<WireTransactReply | WireWaitReply> {
    // The server ends the whole stream on a message over its bound, failing every request on
    // it, and a follower's forwarder carries many clients' writes on one stream: one that is
    // too big fails alone, before it is sent.
    const bytes = requestBytesAtMost(m);
    if (bytes > northboundLimits.requestBytesMax) {
      return Promise.reject(callError(grpc.status.RESOURCE_EXHAUSTED, `a request of ${bytes} bytes is over the server's bound of ${northboundLimits.requestBytesMax} bytes on one request`));
    }
    const id = ++this.nextId;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(callError(grpc.status.DEADLINE_EXCEEDED, 'Deadline exceeded'));
      }, timeoutMs);
      this.pending.set(id, { m, timeoutMs, resolve, reject, timer });
      if (!this.batched) {
        this.stream.write({ id, ...m });
        return;
      }
      this.outgoing.add({ id, ...m }, bytes);
    });
  }

  close(): void {
    this.dead = true;
    this.stream.cancel();
    this.end(callError(grpc.status.CANCELLED, 'the client was closed'));
  }

  /** The server has no batched form: nothing sent was handled, so all of it goes again. */
  private handOver(): void {
    this.dead = true;
    const left = [...this.pending.values()];
    this.pending.clear();
    this.outgoing.clear();
    for (const p of left) clearTimeout(p.timer);
    this.unbatched(left);
  }

  private end(err: unknown): void {
    this.dead = true;
    this.outgoing.clear();
    for (const p of this.pending.values()) {
      clearTimeout(p.timer);
      p.reject(err);
    }
    this.pending.clear();
  }
}

/**
 * Builds the forwarder a follower uses: one client per peer's Northbound address, reached with
 * the member's own TLS identity when it has one.
 */
export function forwarder(addresses: ReadonlyMap<NodeId, string> | ((id: NodeId) => string | undefined), tls?: TlsCredentials): { forward: (leader: NodeId, ops: readonly unknown[], db: TransactDb, rbac?: RbacSession) => Promise<TransactOutcome>; close: () => void } {
  const clients = new Map<NodeId, NorthboundClient>();
  return {
    forward: async (leader, ops, db, rbac) => {
      const address = typeof addresses === 'function' ? addresses(leader) : addresses.get(leader);
      if (address === undefined) throw new CentralNodeError('unavailable', `no Northbound address known for leader ${leader}`);
      let c = clients.get(leader);
      if (c === undefined) {
        c = new NorthboundClient(address, undefined, tls);
        clients.set(leader, c);
      }
      return c.transact(ops, db, { forwarded: true, ...(rbac !== undefined ? { rbac } : {}) });
    },
    close: () => {
      for (const c of clients.values()) c.close();
    },
  };
}
