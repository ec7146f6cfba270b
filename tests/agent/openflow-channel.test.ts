// Goal: the channel's shell behaviour (negotiation, echo both ways, xid correlation, multipart
// assembly, atomic batches, reconnection with backoff, bounded queues, resilience to bad bytes).
// Method: a scripted fake switch on a unix socket speaking our codec; every wait is on an event
// with a timeout, never a sleep.

import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { ChannelError, OfChannel, PENDING_REQUESTS_MAX } from '../../agent/openflow/channel.js';
import { decodeMessage, encodeMessage, type FlowStats, type OfMessage } from '../../agent/openflow/messages.js';
import type { OfDecodeError } from '../../agent/openflow/wire.js';
import { FakeTimers } from '../helpers/fake-timers.js';

interface Received {
  readonly xid: number;
  readonly msg: OfMessage;
  readonly conn: number;
}

/** A fake switch: frames messages, records them, and answers with 'script'. */
class FakeSwitch {
  readonly received: Received[] = [];
  readonly sockets: net.Socket[] = [];
  connections = 0;
  script: (r: Received, reply: (m: OfMessage, xid?: number) => void, sock: net.Socket) => void = () => undefined;
  helloVersions: number[] = [6];
  private waiters: (() => void)[] = [];

  constructor(readonly server: net.Server) {
    server.on('connection', (sock) => {
      const conn = ++this.connections;
      this.sockets.push(sock);
      sock.write(encodeMessage({ kind: 'hello', versions: this.helloVersions }, 0));
      let buf = Buffer.alloc(0);
      sock.on('error', () => undefined);
      sock.on('data', (chunk: Buffer) => {
        buf = Buffer.concat([buf, chunk]);
        while (buf.length >= 8 && buf.length >= buf.readUInt16BE(2)) {
          const len = buf.readUInt16BE(2);
          const d = decodeMessage(buf.subarray(0, len));
          buf = buf.subarray(len);
          const r: Received = { xid: d.xid, msg: d.msg, conn };
          this.received.push(r);
          this.script(r, (m, xid) => sock.write(encodeMessage(m, xid ?? d.xid)), sock);
        }
        this.notify();
      });
      this.notify();
    });
  }

  /** Listens on a unix socket in a fresh short folder under /tmp (socket paths must fit in 108
   *  bytes), or on loopback TCP. */
  static async start(transport: 'unix' | 'tcp' = 'unix'): Promise<FakeSwitch> {
    const server = net.createServer();
    if (transport === 'tcp') {
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      return new FakeSwitch(server);
    }
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ofsw-'));
    await new Promise<void>((resolve) => server.listen(path.join(dir, 'br-int.mgmt'), resolve));
    server.on('close', () => fs.rmSync(dir, { recursive: true, force: true }));
    return new FakeSwitch(server);
  }

  get target(): string {
    const a = this.server.address();
    return typeof a === 'string' ? `unix:${a}` : `tcp:127.0.0.1:${a?.port}`;
  }

  private notify(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  /** Resolves when 'cond' holds, checking after every event; fails after timeoutMs. */
  async until(cond: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!cond()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 20).unref();
      });
    }
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** The ordinary switch answers: echo, barrier, features, bundles. */
function standardScript(r: Received, reply: (m: OfMessage, xid?: number) => void): void {
  switch (r.msg.kind) {
    case 'echo_request': reply({ kind: 'echo_reply', data: r.msg.data }); break;
    case 'barrier_request': reply({ kind: 'barrier_reply' }); break;
    case 'features_request': reply({ kind: 'features_reply', datapathId: 42n, nBuffers: 0, nTables: 254, auxiliaryId: 0, capabilities: 0 }); break;
    case 'bundle_control': {
      const ctrl = r.msg.ctrl === 'open_request' ? 'open_reply' : r.msg.ctrl === 'commit_request' ? 'commit_reply' : r.msg.ctrl === 'discard_request' ? 'discard_reply' : 'close_reply';
      reply({ kind: 'bundle_control', bundleId: r.msg.bundleId, ctrl, flags: r.msg.flags });
      break;
    }
    default: break;
  }
}

const stats = (priority: number): FlowStats => ({
  table: 0, priority, idleTimeout: 0, hardTimeout: 0, flags: 0, importance: 0, cookie: 0n, match: new Map(), actions: [], actionBytes: Buffer.alloc(0),
});

t.test('negotiates, correlates replies, answers echo requests', async (t) => {
  const sw = await FakeSwitch.start();
  sw.script = standardScript;
  const ch = await OfChannel.connect({ target: sw.target });
  t.teardown(async () => { ch.close(); await sw.close(); });
  t.ok(ch.isReady);
  await sw.until(() => sw.received.length > 0, 'our hello');
  t.equal(sw.received[0]?.msg.kind, 'hello');
  const [features] = await ch.request({ kind: 'features_request' });
  t.equal(features?.kind === 'features_reply' ? features.datapathId : undefined, 42n);
  // The switch asks; the channel answers with the same xid and data.
  const sock = sw.sockets[0] as net.Socket;
  sock.write(encodeMessage({ kind: 'echo_request', data: Buffer.from('ping') }, 777));
  await ch.barrier();
  t.ok(sw.received.some((r) => r.msg.kind === 'echo_reply' && r.xid === 777), 'echo reply sent');
  // A multipart reply in two parts is assembled into one answer.
  sw.script = (r, reply) => {
    if (r.msg.kind === 'flow_stats_request') {
      reply({ kind: 'flow_stats_reply', more: true, flows: [stats(1), stats(2)] });
      reply({ kind: 'flow_stats_reply', more: false, flows: [stats(3)] });
    } else standardScript(r, reply);
  };
  t.same((await ch.dumpFlows()).map((f) => f.priority), [1, 2, 3]);
});

t.test('an incompatible switch is refused', async (t) => {
  const sw = await FakeSwitch.start();
  sw.helloVersions = [1, 4];
  t.teardown(() => sw.close());
  const err = await OfChannel.connect({ target: sw.target }).catch((e: unknown) => e);
  t.ok(err instanceof ChannelError && err.kind === 'incompatible', String(err));
});

t.test('sends echo requests when idle and reconnects when they go unanswered', async (t) => {
  const sw = await FakeSwitch.start();
  let answerEchoes = true;
  sw.script = (r, reply) => {
    if (r.msg.kind === 'echo_request' && !answerEchoes) return;
    standardScript(r, reply);
  };
  const states: string[] = [];
  const ch = await OfChannel.connect({ target: sw.target, echoIntervalMs: 30, echoTimeoutMs: 60, reconnectMinMs: 10, onStateChange: (s) => states.push(s) });
  t.teardown(async () => { ch.close(); await sw.close(); });
  await sw.until(() => sw.received.some((r) => r.msg.kind === 'echo_request'), 'an echo request');
  t.equal(ch.connectionsN, 1, 'answered echoes keep the connection');
  answerEchoes = false;
  await sw.until(() => sw.connections >= 2 && ch.connectionsN >= 2, 'a reconnect');
  t.same(states.slice(0, 3), ['ready', 'disconnected', 'ready']);
});

t.test('the probe interval (ovn-openflow-probe-interval): 0 sends no echo however long the line is idle; set later, it probes and drops a silent switch', async (t) => {
  const sw = await FakeSwitch.start();
  let answerEchoes = true;
  sw.script = (r, reply) => {
    if (r.msg.kind === 'echo_request' && !answerEchoes) return;
    standardScript(r, reply);
  };
  const timers = new FakeTimers();
  const ch = await OfChannel.connect({ target: sw.target, echoIntervalMs: 0, timers });
  t.teardown(async () => { ch.close(); await sw.close(); });
  t.equal(timers.pending, 0, 'no probe timer armed');
  await timers.advance(3_600_000);
  // A request and its reply: whatever the channel sent before it has reached the switch.
  await ch.request({ kind: 'features_request' });
  t.notOk(sw.received.some((r) => r.msg.kind === 'echo_request'), 'an hour idle: no echo request');
  t.throws(() => ch.setProbeIntervalMs(-1), /probe interval must be a count of ms/);
  ch.setProbeIntervalMs(5000);
  t.equal(ch.probeIntervalMs, 5000);
  await timers.advance(4_999);
  await ch.request({ kind: 'features_request' });
  t.notOk(sw.received.some((r) => r.msg.kind === 'echo_request'), 'not before the interval');
  await timers.advance(10_001);
  await sw.until(() => sw.received.some((r) => r.msg.kind === 'echo_request'), 'an echo request once idle for the interval');
  t.equal(ch.connectionsN, 1, 'answered: the connection stays');
  answerEchoes = false;
  const before = sw.received.filter((r) => r.msg.kind === 'echo_request').length;
  await timers.advance(10_000);
  await sw.until(() => sw.received.filter((r) => r.msg.kind === 'echo_request').length > before, 'another probe');
  await timers.advance(5_000);
  await sw.until(() => sw.connections >= 2, 'an unanswered probe drops the connection after the interval');
  ch.setProbeIntervalMs(0);
  t.equal(timers.pending <= 1, true, 'turned off again: at most the reconnect timer is armed');
});

t.test('a lost connection fails what is in flight, then comes back with backoff', async (t) => {
  const sw = await FakeSwitch.start();
  sw.script = (r, reply, sock) => {
    if (r.msg.kind === 'features_request' && r.conn === 1) sock.destroy();
    else standardScript(r, reply);
  };
  const ch = await OfChannel.connect({ target: sw.target, reconnectMinMs: 10, reconnectMaxMs: 40 });
  t.teardown(async () => { ch.close(); await sw.close(); });
  const err = await ch.request({ kind: 'features_request' }).catch((e: unknown) => e);
  t.ok(err instanceof ChannelError && err.kind === 'disconnected', String(err));
  await ch.whenReady();
  t.equal(ch.connectionsN, 2);
  const [f] = await ch.request({ kind: 'features_request' });
  t.equal(f?.kind, 'features_reply');
});

t.test('installBatch: one refused message discards the whole bundle', async (t) => {
  const sw = await FakeSwitch.start();
  let addsSeen = 0;
  sw.script = (r, reply) => {
    if (r.msg.kind === 'bundle_add') {
      if (addsSeen++ === 3) reply({ kind: 'error', errType: 4, code: 9, data: Buffer.alloc(0) });
      return;
    }
    standardScript(r, reply);
  };
  const ch = await OfChannel.connect({ target: sw.target });
  t.teardown(async () => { ch.close(); await sw.close(); });
  const mods = Array.from({ length: 10 }, (_, i) => ({ command: 'add' as const, table: 0, priority: i, match: new Map(), actions: [], cookie: 0n }));
  const err = await ch.installBatch(mods).catch((e: unknown) => e);
  t.ok(err instanceof ChannelError && err.kind === 'batch_failed', String(err));
  t.match(String(err), /message 3: OFPET_BAD_MATCH\/BAD_PREREQ/);
  await sw.until(() => sw.received.some((r) => r.msg.kind === 'bundle_control' && r.msg.ctrl === 'discard_request'), 'the discard');
  t.notOk(sw.received.some((r) => r.msg.kind === 'bundle_control' && r.msg.ctrl === 'commit_request'), 'never committed');
  // And a clean batch commits.
  addsSeen = 100;
  await ch.installBatch(mods);
  t.ok(sw.received.some((r) => r.msg.kind === 'bundle_control' && r.msg.ctrl === 'commit_request'));
  const adds = sw.received.filter((r) => r.msg.kind === 'bundle_add');
  t.ok(adds.every((r) => r.msg.kind === 'bundle_add' && r.msg.flags === 3), 'atomic and ordered');
});

t.test('bad bytes from the switch never crash the channel', async (t) => {
  const sw = await FakeSwitch.start();
  sw.script = (r, reply, sock) => {
    if (r.msg.kind === 'flow_stats_request') {
      // A flow-stats reply whose flow entry claims more bytes than the message holds.
      const bad = encodeMessage({ kind: 'flow_stats_reply', more: false, flows: [stats(1)] }, r.xid);
      bad.writeUInt16BE(0xfff0, 16);
      sock.write(bad);
    } else standardScript(r, reply);
  };
  const decodeErrors: OfDecodeError[] = [];
  const ch = await OfChannel.connect({ target: sw.target, reconnectMinMs: 10, onDecodeError: (e) => decodeErrors.push(e) });
  t.teardown(async () => { ch.close(); await sw.close(); });
  const err = await ch.dumpFlows().catch((e: unknown) => e);
  t.ok(err instanceof ChannelError && err.kind === 'protocol', String(err));
  // An undecodable message nobody waits for goes to onDecodeError; the channel stays up.
  const orphan = encodeMessage({ kind: 'packet_in', bufferId: 0, totalLen: 0, reason: 0, table: 0, cookie: 0n, match: new Map(), data: Buffer.alloc(0) }, 5);
  orphan.writeUInt16BE(7, 24 + 2); // the match's length below its own header
  (sw.sockets[0] as net.Socket).write(orphan);
  await ch.barrier();
  t.equal(decodeErrors.length, 1);
  t.equal(ch.connectionsN, 1);
  // A frame shorter than a header loses the stream: the channel reconnects.
  (sw.sockets[0] as net.Socket).write(Buffer.from('0600000400000000', 'hex'));
  await sw.until(() => ch.connectionsN === 2, 'a reconnect after a framing error');
  t.equal(decodeErrors.length, 2);
});

t.test('requests waiting for replies are bounded', async (t) => {
  const sw = await FakeSwitch.start();
  sw.script = (r, reply) => {
    if (r.msg.kind !== 'features_request') standardScript(r, reply);
  };
  const ch = await OfChannel.connect({ target: sw.target });
  t.teardown(async () => { ch.close(); await sw.close(); });
  const waiting = Array.from({ length: PENDING_REQUESTS_MAX }, () => ch.request({ kind: 'features_request' }).catch((e: unknown) => e));
  const over = await ch.request({ kind: 'features_request' }).catch((e: unknown) => e);
  t.ok(over instanceof ChannelError && over.kind === 'overloaded', String(over));
  ch.close();
  const settled = await Promise.all(waiting);
  t.ok(settled.every((e) => e instanceof ChannelError && e.kind === 'closed'), 'close fails what waits');
});

t.test('tcp targets work the same', async (t) => {
  const sw = await FakeSwitch.start('tcp');
  sw.script = standardScript;
  const ch = await OfChannel.connect({ target: sw.target });
  t.teardown(async () => { ch.close(); await sw.close(); });
  t.match(sw.target, /^tcp:127\.0\.0\.1:\d+$/);
  await ch.barrier();
  t.ok(ch.isReady);
  await t.rejects(OfChannel.connect({ target: 'ssl:1.2.3.4:6653' }), /neither unix:PATH nor tcp:HOST:PORT/);
});

t.test('a message the codec cannot encode is refused before anything is sent', async (t) => {
  const sw = await FakeSwitch.start();
  sw.script = standardScript;
  const ch = await OfChannel.connect({ target: sw.target });
  t.teardown(async () => { ch.close(); await sw.close(); });
  const bad = { command: 'add' as const, table: 0, priority: 1, match: new Map([['no_such_field', { value: 1n, mask: 1n }]]), actions: [], cookie: 0n };
  const err = await ch.installBatch([bad]).catch((e: unknown) => e);
  t.ok(err instanceof ChannelError && err.kind === 'bad_request', String(err));
  t.match(String(err), /message 0 cannot be encoded: unknown OpenFlow field no_such_field/);
  const err2 = await ch.command({ kind: 'flow_mod', mod: bad }).catch((e: unknown) => e);
  t.match(String(err2), /unknown OpenFlow field/);
  await ch.barrier();
  t.notOk(sw.received.some((r) => r.msg.kind === 'bundle_control' || r.msg.kind === 'flow_mod'), 'nothing reached the switch');
});

t.test('connect gives up after its timeout when nothing listens, and keeps trying until then', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ofsw-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const started = Date.now();
  const err = await OfChannel.connect({ target: `unix:${dir}/nothing.mgmt`, connectTimeoutMs: 150, reconnectMinMs: 10 }).catch((e: unknown) => e);
  t.ok(err instanceof ChannelError && err.kind === 'timeout', String(err));
  t.ok(Date.now() - started >= 140, 'it waited for the timeout');
  // A switch that appears while connect() retries is picked up.
  const sockPath = path.join(dir, 'late.mgmt');
  const pending = OfChannel.connect({ target: `unix:${sockPath}`, connectTimeoutMs: 5000, reconnectMinMs: 10, reconnectMaxMs: 20 });
  const late = await new Promise<FakeSwitch>((resolve) => {
    const server = net.createServer();
    server.listen(sockPath, () => resolve(new FakeSwitch(server)));
  });
  const ch = await pending;
  t.ok(ch.isReady);
  ch.close();
  await late.close();
});
