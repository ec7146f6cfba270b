// Goal: the gRPC peer transport delivers every message kind intact and in order, reassembles
// chunked snapshots, refuses foreign or malformed input, bounds its queues and reconnects.
// Method: real transports on 127.0.0.1 (port 0); waits are on delivery events with timeouts.
import { connect } from 'node:net';
import grpc from '@grpc/grpc-js';
import t, { type Test } from 'tap';
import { GrpcTransport } from '../../cluster/grpc-transport.js';
import type { GrpcTransportOptions } from '../../cluster/grpc-transport.js';
import { isWireError, RaftCodec } from '../../cluster/grpc-codec.js';
import { MEMBER_INFO_CHARS_MAX, type TransportHandlers, type TransportReport } from '../../cluster/transport.js';
import type { Message, NodeId } from '../../cluster/types.js';
import { freePort } from '../helpers/raft-kv-cluster.js';

const CLUSTER = 'cluster-test';
const WAIT_MS_MAX = 15_000;

/** Collects what a transport delivers and lets a test wait for a condition on it. */
class Inbox {
  readonly messages: Message[] = [];
  readonly reports: TransportReport[] = [];
  private readonly waiters = new Set<() => void>();
  readonly handlers: TransportHandlers = {
    onMessage: (m) => {
      this.messages.push(m);
      this.wake();
    },
    onReport: (r) => {
      this.reports.push(r);
      this.wake();
    },
  };

  private wake(): void {
    for (const w of [...this.waiters]) w();
  }

  /** Resolves once `pred` holds (checked after every delivery); rejects after a timeout. */
  until(pred: () => boolean, what: string, timeoutMs = WAIT_MS_MAX): Promise<void> {
    if (pred()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const check = (): void => {
        if (!pred()) return;
        this.waiters.delete(check);
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`));
      }, timeoutMs);
      this.waiters.add(check);
    });
  }
}

type Options = Partial<Omit<GrpcTransportOptions, 'id'>>;

async function startNode(
  t: Test,
  id: NodeId,
  o: Options = {},
): Promise<{ tr: GrpcTransport; inbox: Inbox }> {
  const tr = new GrpcTransport({
    id,
    clusterId: CLUSTER,
    listenAddress: '127.0.0.1:0',
    peers: new Map(),
    ...o,
  });
  const inbox = new Inbox();
  await tr.start(inbox.handlers);
  t.teardown(() => tr.close());
  return { tr, inbox };
}

/** Two started transports, 1 and 2, that know each other's address. */
async function startPair(t: Test, o: Options = {}) {
  const a = await startNode(t, 1, o);
  const b = await startNode(t, 2, o);
  a.tr.setPeers(new Map([[2, b.tr.address()]]));
  b.tr.setPeers(new Map([[1, a.tr.address()]]));
  return { a, b };
}

/** A loopback port that nothing listens on (it was free a moment ago). */
function bytes(n: number, seed: number): Uint8Array {
  const out = new Uint8Array(n);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(
    Buffer.from(b.buffer, b.byteOffset, b.byteLength),
  );
}

/** One message of every kind but `snap`, from `from` to `to`. */
function everyKind(from: NodeId, to: NodeId): Message[] {
  const h = { clusterId: CLUSTER, from, to, term: 3 };
  return [
    {
      ...h,
      type: 'app',
      index: 7,
      logTerm: 2,
      commit: 5,
      entries: [
        { term: 3, index: 8, type: 'normal', data: Uint8Array.of(1, 2, 3), client: { clientId: 'c-1', seq: 42 } },
        { term: 3, index: 9, type: 'conf-change', data: new Uint8Array(0) },
        { term: 3, index: 10, type: 'empty', data: Uint8Array.of(255) },
        { term: 3, index: 11, type: 'normal', data: bytes(1000, 7), client: { clientId: '', seq: 0 } },
      ],
    },
    { ...h, type: 'app', index: 0, logTerm: 0, commit: 0, entries: [] },
    { ...h, type: 'app-resp', index: 9, reject: true, rejectHint: 4, logTerm: 1 },
    { ...h, type: 'app-resp', index: 11, reject: false, rejectHint: 0, logTerm: 0 },
    { ...h, type: 'vote', index: 11, logTerm: 3, transfer: true },
    { ...h, type: 'pre-vote', index: 12, logTerm: 3, transfer: false },
    { ...h, type: 'vote-resp', reject: false },
    { ...h, type: 'pre-vote-resp', reject: true },
    { ...h, type: 'heartbeat', commit: 11, readSeq: 0 },
    { ...h, type: 'heartbeat', commit: 2 ** 40, readSeq: 9 },
    { ...h, type: 'heartbeat-resp', readSeq: 9 },
    { ...h, type: 'timeout-now', term: Number.MAX_SAFE_INTEGER },
    { ...h, type: 'read-index', ctx: 'read-1' },
    { ...h, type: 'read-index', ctx: '' },
    { ...h, type: 'read-index-resp', index: 11, ctx: 'read-1' },
  ];
}

function snap(from: NodeId, to: NodeId, data: Uint8Array, electionTicks?: number): Message {
  return {
    clusterId: CLUSTER,
    from,
    to,
    term: 4,
    type: 'snap',
    snapshot: {
      meta: {
        index: 100,
        term: 4,
        conf: {
          voters: [1, 2, 3],
          learners: [4],
          removed: [5],
          ...(electionTicks === undefined ? {} : { electionTicks }),
        },
      },
      data,
    },
  };
}

function heartbeat(from: NodeId, to: NodeId, commit: number, o: Partial<Message> = {}): Message {
  return { clusterId: CLUSTER, from, to, term: 1, type: 'heartbeat', commit, readSeq: 0, ...o } as Message;
}

function appWith(from: NodeId, to: NodeId, index: number, data: Uint8Array): Message {
  return {
    clusterId: CLUSTER,
    from,
    to,
    term: 1,
    type: 'app',
    index,
    logTerm: 1,
    commit: index,
    entries: [{ term: 1, index: index + 1, type: 'normal', data }],
  };
}

t.test('every message kind goes both ways, in order, intact', async (t) => {
  const { a, b } = await startPair(t);
  const toB = [...everyKind(1, 2), snap(1, 2, bytes(3000, 1), 17)];
  const toA = [...everyKind(2, 1), snap(2, 1, new Uint8Array(0))];
  a.tr.send(toB);
  b.tr.send(toA);
  await b.inbox.until(() => b.inbox.messages.length === toB.length, 'B to receive all');
  await a.inbox.until(() => a.inbox.messages.length === toA.length, 'A to receive all');
  // A snapshot travels on its own call, so only the other kinds keep their order with it.
  const inOrder = (ms: readonly Message[]) => ms.filter((m) => m.type !== 'snap');
  const snaps = (ms: readonly Message[]) => ms.filter((m) => m.type === 'snap');
  t.strictSame(inOrder(b.inbox.messages), inOrder(toB), 'A -> B in order, equal');
  t.strictSame(inOrder(a.inbox.messages), inOrder(toA), 'B -> A in order, equal');
  t.strictSame(snaps(b.inbox.messages), snaps(toB), 'snap A -> B equal, election ticks kept');
  t.strictSame(snaps(a.inbox.messages), snaps(toA), 'empty snap B -> A equal');
  await a.inbox.until(() => a.inbox.reports.some((r) => r.kind === 'snapshot'), 'snapshot report');
  t.strictSame(a.inbox.reports, [{ kind: 'snapshot', to: 2, ok: true }]);
  t.equal(b.tr.stats().received, toB.length);
  t.equal(a.tr.stats().refusedForeign + a.tr.stats().malformed, 0);
});

t.test('the port holds connectionsMax connections; one more is closed at once and counted', async (t) => {
  const { a, b } = await startPair(t, { connectionsMax: 2 });
  b.tr.send([heartbeat(2, 1, 1)]);
  await a.inbox.until(() => a.inbox.messages.length === 1, 'the peer connection');
  const port = Number(a.tr.address().split(':')[1]);
  const open = (): Promise<{ closedAt: number | undefined }> =>
    new Promise((resolve) => {
      const s = connect(port, '127.0.0.1');
      s.on('error', () => undefined);
      const state: { closedAt: number | undefined } = { closedAt: undefined };
      s.on('close', () => (state.closedAt = Date.now()));
      s.on('connect', () => resolve(state));
      t.teardown(() => s.destroy());
    });
  const second = await open();
  const third = await open();
  for (let i = 0; i < 100 && third.closedAt === undefined; i++) await new Promise((r) => setTimeout(r, 10));
  t.not(third.closedAt, undefined, 'the third connection is closed at once');
  t.equal(second.closedAt, undefined, 'the second stays');
  t.equal(a.tr.stats().refusedConnections, 1, 'one refused, counted');
  b.tr.send([heartbeat(2, 1, 2)]);
  await a.inbox.until(() => a.inbox.messages.length === 2, 'a message on the peer connection');
  t.pass('the peer still gets through');
});

t.test('10,000 small app messages arrive in order', async (t) => {
  const n = 10_000;
  const { a, b } = await startPair(t, { sendQueueMessagesMax: 2 * n });
  for (let i = 0; i < n; i++) a.tr.send([appWith(1, 2, i, Uint8Array.of(i & 0xff, i >> 8))]);
  await b.inbox.until(() => b.inbox.messages.length === n, `${n} messages`);
  const outOfOrder = b.inbox.messages.findIndex((m, i) => m.type !== 'app' || m.index !== i);
  t.equal(outOfOrder, -1, 'every message at its place');
  t.equal(a.tr.stats().sent, n);
  t.strictSame(a.tr.stats().droppedQueueFull, new Map());
});

t.test('a 5 MiB snapshot is chunked and reassembled byte for byte', async (t) => {
  const { a, b } = await startPair(t, { snapshotChunkBytesMax: 256 * 1024 });
  const data = bytes(5 * 1024 * 1024 + 123, 99);
  a.tr.send([snap(1, 2, data)]);
  await a.inbox.until(() => a.inbox.reports.length > 0, 'snapshot report');
  t.strictSame(a.inbox.reports, [{ kind: 'snapshot', to: 2, ok: true }]);
  t.equal(b.inbox.messages.length, 1);
  const got = b.inbox.messages[0];
  if (got?.type !== 'snap') throw new Error('expected a snap message');
  t.ok(sameBytes(got.snapshot.data, data), 'data byte-identical');
  const sent = snap(1, 2, data);
  if (sent.type !== 'snap') throw new Error('expected a snap message');
  t.strictSame(got.snapshot.meta, sent.snapshot.meta, 'meta equal');
  t.equal(b.tr.stats().snapshotsReceived, 1);
  t.equal(a.tr.stats().snapshotsSent, 1);
});

t.test('a snapshot to a peer that is down reports failure', async (t) => {
  const { tr, inbox } = await startNode(t, 1);
  tr.setPeers(new Map([[3, `127.0.0.1:${await freePort()}`]]));
  tr.send([snap(1, 3, bytes(10_000, 3))]);
  await inbox.until(() => inbox.reports.some((r) => r.kind === 'snapshot'), 'snapshot report');
  const failed = inbox.reports.filter((r) => r.kind === 'snapshot');
  t.match(failed, [{ kind: 'snapshot', to: 3, ok: false, reason: String }], 'reported failed, with the reason');
  t.equal(failed.length, 1);
  t.equal(tr.stats().snapshotsFailed, 1);

  // A snapshot to a peer with no address fails at once, counted.
  tr.send([snap(1, 9, bytes(10, 3))]);
  await inbox.until(() => inbox.reports.some((r) => r.kind === 'snapshot' && r.to === 9), 'report for 9');
  t.equal(tr.stats().droppedNoAddress.get(9), 1);
  t.match(inbox.reports.find((r) => r.kind === 'snapshot' && r.to === 9), { ok: false, reason: 'no address known for the peer' });
});

t.test('a snapshot larger than the receiver accepts is refused', async (t) => {
  const a = await startNode(t, 1);
  const b = await startNode(t, 2, { snapshotBytesMax: 1000 });
  a.tr.setPeers(new Map([[2, b.tr.address()]]));
  a.tr.send([snap(1, 2, bytes(1001, 5))]);
  await a.inbox.until(() => a.inbox.reports.length > 0, 'snapshot report');
  t.strictSame(a.inbox.reports, [{ kind: 'snapshot', to: 2, ok: false, reason: 'snapshot of 1001 bytes exceeds snapshotBytesMax (1000)' }], 'the sender hears why');
  t.equal(b.inbox.messages.length, 0);
  t.equal(b.tr.stats().snapshotsRefused, 1);
});

t.test('wrong cluster id or wrong addressee is refused and counted', async (t) => {
  const { a, b } = await startPair(t);
  // On A's stream to B, before a good message: a message naming another cluster.
  a.tr.send([heartbeat(1, 2, 1, { clusterId: 'other' }), heartbeat(1, 2, 2)]);
  await b.inbox.until(() => b.inbox.messages.length === 1, 'the good message');
  t.equal(b.tr.stats().refusedForeign, 1, 'foreign cluster refused');
  // In one batch on a hand-made stream: a message naming another node, then a good one.
  const codec = new RaftCodec();
  const client = new grpc.Client(b.tr.address(), grpc.credentials.createInsecure());
  t.teardown(() => client.close());
  const md = new grpc.Metadata();
  md.set('ovnts-cluster-id', CLUSTER);
  md.set('ovnts-from', '3');
  md.set('ovnts-stream', 'hand.1');
  const id = (x: Buffer): Buffer => x;
  const call = client.makeClientStreamRequest<Buffer, Buffer>(codec.messagesMethod.path, id, id, md, {}, () => {});
  call.write(codec.encodeBatch([codec.encodeMessage(heartbeat(3, 5, 3)), codec.encodeMessage(heartbeat(3, 2, 4))]));
  await b.inbox.until(() => b.inbox.messages.length === 2, 'the second good message');
  call.cancel();
  t.equal(b.tr.stats().refusedForeign, 2, 'another addressee refused');
  t.strictSame(b.inbox.messages, [heartbeat(1, 2, 2), heartbeat(3, 2, 4)], 'only good messages delivered');

  // A transport of another cluster: refused at the stream, which its sender sees as a failure.
  const rogue = new GrpcTransport({
    id: 1,
    clusterId: 'other',
    listenAddress: '127.0.0.1:0',
    peers: new Map([[2, b.tr.address()]]),
  });
  const rogueInbox = new Inbox();
  await rogue.start(rogueInbox.handlers);
  t.teardown(() => rogue.close());
  rogue.send([{ ...heartbeat(1, 2, 4), clusterId: 'other' }]);
  await rogueInbox.until(() => rogueInbox.reports.some((r) => r.kind === 'unreachable'), 'refusal');
  t.equal(b.tr.stats().refusedForeign, 3, 'foreign stream refused');
  t.equal(b.inbox.messages.length, 2, 'still only the good messages');
  t.ok(rogue.stats().streamFailures >= 1, 'the rogue counted its failed stream');
});

t.test('decoded entry data holds only its own bytes, not the frame or a spare slab', (t) => {
  const codec = new RaftCodec();
  const decodeEntries = (ms: Message[]): Uint8Array[] => {
    const out = codec.decodeBatch(codec.encodeBatch(ms.map((m) => codec.encodeMessage(m))));
    if (!Array.isArray(out)) throw new Error(`batch refused: ${out.reason}`);
    return out.flatMap((m) => (!isWireError(m) && m.type === 'app' ? m.entries.map((e) => e.data) : []));
  };
  // A follower of serial writes receives one small entry per batch and keeps it until the next
  // snapshot: what it keeps must be about the entry's size.
  const [one] = decodeEntries([appWith(1, 2, 1, bytes(100, 3))]);
  t.same(one, bytes(100, 3), 'the data is intact');
  t.equal(one?.buffer.byteLength, 100, 'one small entry keeps a 100-byte buffer');
  // Small entries of one batch share one buffer of exactly their total; a large one has its own.
  const many = decodeEntries([appWith(1, 2, 1, bytes(100, 4)), appWith(1, 2, 2, bytes(300, 5)), appWith(1, 2, 3, bytes(10_000, 6)), appWith(1, 2, 4, bytes(50, 7))]);
  t.same(many, [bytes(100, 4), bytes(300, 5), bytes(10_000, 6), bytes(50, 7)], 'every entry intact, in order');
  t.equal(many[0]?.buffer, many[1]?.buffer, 'small entries share a slab');
  t.equal(many[0]?.buffer, many[3]?.buffer, 'small entries share a slab');
  t.equal(many[0]?.buffer.byteLength, 450, 'the slab holds exactly the small entries');
  t.equal(many[2]?.buffer.byteLength, 10_000, 'a large entry has a buffer of its own');
  t.end();
});

t.test('malformed input is refused without harm', async (t) => {
  const { a, b } = await startPair(t);
  const codec = new RaftCodec();
  const client = new grpc.Client(b.tr.address(), grpc.credentials.createInsecure());
  t.teardown(() => client.close());
  const id = (x: Buffer): Buffer => x;
  const call = (path: string, md: grpc.Metadata, frames: Buffer[]): Promise<grpc.ServiceError | null> =>
    new Promise((resolve) => {
      const c = client.makeClientStreamRequest<Buffer, Buffer>(path, id, id, md, {}, (err) => resolve(err));
      for (const f of frames) c.write(f);
      c.end();
    });
  const md = (stream: string): grpc.Metadata => {
    const m = new grpc.Metadata();
    m.set('ovnts-cluster-id', CLUSTER);
    m.set('ovnts-from', '1');
    m.set('ovnts-stream', stream);
    return m;
  };
  const garbage = Buffer.from([0xff, 0xff, 0xff, 0x0f, 0x01]);
  const e1 = await call(codec.messagesMethod.path, md('rogue.1'), [garbage]);
  t.equal(e1?.code, grpc.status.INVALID_ARGUMENT, 'garbage batch refused');
  const e2 = await call(codec.messagesMethod.path, new grpc.Metadata(), [garbage]);
  t.equal(e2?.code, grpc.status.INVALID_ARGUMENT, 'missing metadata refused');
  const chunk = (offset: number, totalBytes: number, len: number, last: boolean) =>
    codec.encodeChunk({
      clusterId: CLUSTER,
      from: 1,
      to: 2,
      term: 1,
      meta: { index: 1, term: 1, conf: { voters: [1], learners: [], removed: [] } },
      offset,
      totalBytes,
      data: new Uint8Array(len),
      last,
    });
  const e3 = await call(codec.snapshotMethod.path, md('x.1'), [chunk(0, 10, 4, false), chunk(5, 10, 5, true)]);
  t.equal(e3?.code, grpc.status.INVALID_ARGUMENT, 'gap between chunks refused');
  const e4 = await call(codec.snapshotMethod.path, md('x.1'), [chunk(0, 10, 4, false)]);
  t.equal(e4?.code, grpc.status.INVALID_ARGUMENT, 'snapshot without last chunk refused');
  const e5 = await call(codec.snapshotMethod.path, md('x.1'), [garbage]);
  t.equal(e5?.code, grpc.status.INVALID_ARGUMENT, 'garbage chunk refused');
  const e6 = await call(codec.snapshotMethod.path, md('x.1'), [chunk(0, 10, 11, true)]);
  t.equal(e6?.code, grpc.status.INVALID_ARGUMENT, 'chunk past total refused');
  t.equal(b.tr.stats().malformed, 6);
  t.equal(b.tr.stats().snapshotsRefused, 4);
  t.equal(b.inbox.messages.length, 0);

  // The transport still works.
  a.tr.send([heartbeat(1, 2, 1)]);
  await b.inbox.until(() => b.inbox.messages.length === 1, 'a good message after the garbage');
});

t.test('snapshots abandoned by their sender free their reassembly slot', async (t) => {
  const b = await startNode(t, 2);
  const codec = new RaftCodec();
  // One client, so the cancellations reach the receiver before the final call on the wire.
  const client = new grpc.Client(b.tr.address(), grpc.credentials.createInsecure());
  t.teardown(() => client.close());
  const id = (x: Buffer): Buffer => x;
  const chunk = (offset: number, len: number, last: boolean) =>
    codec.encodeChunk({
      clusterId: CLUSTER,
      from: 1,
      to: 2,
      term: 1,
      meta: { index: 1, term: 1, conf: { voters: [1], learners: [], removed: [] } },
      offset,
      totalBytes: 8,
      data: new Uint8Array(len),
      last,
    });
  // The receiver has no event to wait on here, so poll its gauge for a bounded number of turns.
  const inProgress = async (n: number): Promise<boolean> => {
    for (let turn = 0; turn < 10_000; turn++) {
      if (b.tr.stats().snapshotsInProgress === n) return true;
      await new Promise((resolve) => setImmediate(resolve));
    }
    return false;
  };
  for (let i = 0; i < 6; i++) {
    let ended: Promise<grpc.ServiceError | null> = Promise.resolve(null);
    const c = await new Promise<grpc.ClientWritableStream<Buffer>>((resolve) => {
      ended = new Promise((done) => {
        resolve(client.makeClientStreamRequest<Buffer, Buffer>(
          codec.snapshotMethod.path, id, id, new grpc.Metadata(), {}, (e) => done(e)));
      });
    });
    c.write(chunk(0, 4, false));
    t.ok(await inProgress(1), `snapshot ${i} being received`);
    c.cancel();
    t.equal((await ended)?.code, grpc.status.CANCELLED, `snapshot ${i} abandoned`);
    t.ok(await inProgress(0), `snapshot ${i}: slot released`);
  }
  const err = await new Promise<grpc.ServiceError | null>((resolve) => {
    const c = client.makeClientStreamRequest<Buffer, Buffer>(
      codec.snapshotMethod.path, id, id, new grpc.Metadata(), {}, (e) => resolve(e));
    c.write(chunk(0, 4, false));
    c.write(chunk(4, 4, true));
    c.end();
  });
  t.equal(err, null, 'a whole snapshot is still accepted');
  await b.inbox.until(() => b.inbox.messages.length === 1, 'the snapshot');
});

t.test('a down peer: queue bounded, drops counted and reported; reconnects later', async (t) => {
  const port = await freePort();
  const a = await startNode(t, 1, {
    sendQueueMessagesMax: 4,
    connectTimeoutMs: 200,
    reconnectBackoffMsMin: 20,
    reconnectBackoffMsMax: 200,
  });
  a.tr.setPeers(new Map([[2, `127.0.0.1:${port}`]]));
  a.tr.send(Array.from({ length: 10 }, (_, i) => heartbeat(1, 2, i)));
  t.equal(a.tr.stats().droppedQueueFull.get(2), 6, 'six of ten dropped');
  await a.inbox.until(() => a.inbox.reports.some((r) => r.kind === 'unreachable'), 'unreachable');
  t.strictSame(a.inbox.reports[0], { kind: 'unreachable', to: 2 });
  t.equal(a.inbox.reports.length, 1, 'reports are rate-limited');
  t.ok(a.tr.stats().unreachable >= 6, 'every drop counted as unreachable');

  const b = await startNode(t, 2, { listenAddress: `127.0.0.1:${port}` });
  await b.inbox.until(() => b.inbox.messages.length === 4, 'the four queued messages');
  t.strictSame(
    b.inbox.messages.map((m) => (m.type === 'heartbeat' ? m.commit : -1)),
    [0, 1, 2, 3],
    'queued messages arrive in order after the peer starts',
  );
  a.tr.send([heartbeat(1, 2, 100)]);
  await b.inbox.until(() => b.inbox.messages.length === 5, 'a new message');
  t.strictSame(b.inbox.messages[4], heartbeat(1, 2, 100));
});

t.test('a peer that restarts: the stream is re-opened', async (t) => {
  const { a, b } = await startPair(t, { reconnectBackoffMsMin: 20, reconnectBackoffMsMax: 200 });
  a.tr.send([heartbeat(1, 2, 1)]);
  await b.inbox.until(() => b.inbox.messages.length === 1, 'first message');
  const address = b.tr.address();
  await b.tr.close();
  await a.inbox.until(() => a.inbox.reports.some((r) => r.kind === 'unreachable'), 'failure seen');
  const b2 = await startNode(t, 2, { listenAddress: address });
  a.tr.send([heartbeat(1, 2, 2)]);
  await b2.inbox.until(() => b2.inbox.messages.length === 1, 'message to the restarted peer');
  t.strictSame(b2.inbox.messages, [heartbeat(1, 2, 2)]);
  t.ok(a.tr.stats().streamFailures >= 1);
});

t.test('links(): the streams open with each peer, as cluster/status shows them', async (t) => {
  const { a, b } = await startPair(t, { reconnectBackoffMsMin: 20, reconnectBackoffMsMax: 200 });
  t.same([...a.tr.links()], [], 'nothing sent yet: no link');
  a.tr.send([heartbeat(1, 2, 1)]);
  await b.inbox.until(() => b.inbox.messages.length === 1, 'first message');
  t.same([...a.tr.links()], [[2, { outgoing: 'open', incoming: 0 }]], 'the sender\'s stream is open');
  t.same([...b.tr.links()], [[1, { outgoing: undefined, incoming: 1 }]], 'the receiver counts one incoming stream');
  b.tr.send([heartbeat(2, 1, 1)]);
  await a.inbox.until(() => a.inbox.messages.length === 1, 'the answer');
  t.same([...a.tr.links()], [[2, { outgoing: 'open', incoming: 1 }]], 'both ways');
  await b.tr.close();
  await a.inbox.until(() => a.inbox.reports.some((r) => r.kind === 'unreachable'), 'failure seen');
  a.tr.send([heartbeat(1, 2, 2)]);
  const deadline = Date.now() + WAIT_MS_MAX;
  while (a.tr.links().get(2)?.incoming !== 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  t.same(a.tr.links().get(2), { outgoing: 'down', incoming: 0 }, 'the peer gone: its stream is gone, and the one wanted to it is down');
});

t.test('setPeers: a moved peer and a removed and re-added peer keep receiving', async (t) => {
  const { a, b } = await startPair(t);
  a.tr.send([heartbeat(1, 2, 1)]);
  await b.inbox.until(() => b.inbox.messages.length === 1, 'first message');
  // Removed: queued messages go with it, counted; re-added: a fresh stream is accepted.
  a.tr.setPeers(new Map());
  a.tr.send([heartbeat(1, 2, 2)]);
  t.equal(a.tr.stats().droppedNoAddress.get(2), 1, 'no address while removed');
  a.tr.setPeers(new Map([[2, b.tr.address()]]));
  a.tr.send([heartbeat(1, 2, 3)]);
  await b.inbox.until(() => b.inbox.messages.length === 2, 'message after re-adding');
  // Moved: the same node listening on a second address (a new transport with id 2).
  const b2 = await startNode(t, 2);
  a.tr.setPeers(new Map([[2, b2.tr.address()]]));
  a.tr.send([heartbeat(1, 2, 4)]);
  await b2.inbox.until(() => b2.inbox.messages.length === 1, 'message at the new address');
  t.strictSame(
    [...b.inbox.messages, ...b2.inbox.messages].map((m) => (m.type === 'heartbeat' ? m.commit : -1)),
    [1, 3, 4],
  );
  t.equal(b.tr.stats().refusedStale + b2.tr.stats().refusedStale, 0, 'no stream taken for stale');
});

t.test('send() after close() is a no-op and close() leaves no handles', async (t) => {
  // The file's process exiting at all is the main check (tap waits for it); this one names
  // the leftover if there is one. Nothing else in this process uses TCP.
  const count = (kind: string): number =>
    process.getActiveResourcesInfo().filter((x) => x === kind).length;
  const sockets = (): number => count('TCPSocketWrap') + count('TCPServerWrap');
  /** Closed sockets leave the list within a few turns of the event loop. */
  const settled = async (): Promise<boolean> => {
    for (let turn = 0; turn < 1000; turn++) {
      if (sockets() === 0) return true;
      await new Promise((resolve) => setImmediate(resolve));
    }
    return false;
  };
  t.ok(await settled(), 'earlier tests left no sockets');
  const timersBefore = count('Timeout');
  const { a, b } = await startPair(t);
  a.tr.send([heartbeat(1, 2, 1), snap(1, 2, bytes(100, 1))]);
  await b.inbox.until(() => b.inbox.messages.length === 2, 'delivery');
  t.ok(sockets() > 0, 'the open transports hold sockets');
  await a.tr.close();
  await b.tr.close();
  a.tr.send([heartbeat(1, 2, 2)]);
  t.equal(a.tr.stats().sent, 1, 'nothing sent after close');
  t.ok(await settled(), 'no sockets left');
  t.ok(count('Timeout') <= timersBefore, 'no timers left');
});

t.test('throughput: 100k app messages one way (printed, not asserted)', async (t) => {
  const n = 100_000;
  const { a, b } = await startPair(t, { sendQueueMessagesMax: n });
  const payload = bytes(60, 11);
  const sample = new RaftCodec().encodeMessage(appWith(1, 2, 1, payload)).byteLength;
  const started = performance.now();
  for (let i = 0; i < n; i++) a.tr.send([appWith(1, 2, i, payload)]);
  await b.inbox.until(() => b.inbox.messages.length === n, `${n} messages`, 60_000);
  const seconds = (performance.now() - started) / 1000;
  t.comment(
    `throughput: ${n} app messages of ${sample} bytes encoded in ${seconds.toFixed(2)} s = ` +
      `${Math.round(n / seconds)} messages/s`,
  );
  t.equal(b.inbox.messages.length, n);
});

t.test('member info travels with a sender\'s stream; a restarted sender tells its new one', async (t) => {
  const { a, b } = await startPair(t);
  t.equal(b.tr.peerInfo(1), undefined, 'nothing known before a message arrives');
  a.tr.setMemberInfo('apply-max=2');
  a.tr.send([heartbeat(1, 2, 1)]);
  await b.inbox.until(() => b.inbox.messages.length === 1, 'B to hear from A');
  t.equal(b.tr.peerInfo(1), 'apply-max=2', 'B knows what A tells');
  t.equal(a.tr.peerInfo(2), undefined, 'A has heard nothing from B');
  // A restarts as another process: its new stream tells its new info.
  await a.tr.close();
  const again = await startNode(t, 1);
  again.tr.setMemberInfo('apply-max=1');
  again.tr.setPeers(new Map([[2, b.tr.address()]]));
  again.tr.send([heartbeat(1, 2, 2)]);
  await b.inbox.until(() => b.inbox.messages.length === 2, 'B to hear from the restarted A');
  t.equal(b.tr.peerInfo(1), 'apply-max=1', 'B now knows the restarted A\'s info');
  // One that says nothing leaves nothing behind.
  const silent = await startNode(t, 3);
  silent.tr.setPeers(new Map([[2, b.tr.address()]]));
  silent.tr.send([heartbeat(3, 2, 1)]);
  await b.inbox.until(() => b.inbox.messages.length === 3, 'B to hear from 3');
  t.equal(b.tr.peerInfo(3), undefined, 'a sender without info has none');
  t.throws(() => a.tr.setMemberInfo('x'.repeat(MEMBER_INFO_CHARS_MAX + 1)), /at most 256 characters/, 'too long is refused');
  t.throws(() => a.tr.setMemberInfo('tab\there'), /printable ASCII/, 'so is what metadata cannot carry');
});
