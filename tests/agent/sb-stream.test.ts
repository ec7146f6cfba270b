// The agent's stream client against a scripted member (a real gRPC server playing the
// Southbound service by hand): what it says in Hello when it reconnects, that a member
// breaking the protocol (a step from the wrong revision, an undecodable row) costs a
// reconnect rather than a corrupt view, that steps arriving while the runtime is busy are
// coalesced into one update (a snapshot absorbing what came before it), that an Ack made while
// disconnected is sent after the next Resume, and that the backoff is bounded and jittered.
import * as grpc from '@grpc/grpc-js';
import t from 'tap';
import type { Test } from 'tap';
import type { Row } from '../../ovsdb/index.js';
import { parseDatabaseSchema } from '../../ovsdb/index.js';
import { defaultValue } from '../../ovsdb/datum.js';
import { SB_SCHEMA_JSON } from '../../ovsdb/schemas/index.js';
import type { SbSourceState, SbUpdate } from '../../agent/sb-source.js';
import { SbStream, backoffDelayMs, sbStreamLimits, setDifferenceTables } from '../../agent/sb-stream.js';
import type { ViewChange } from '../../server/sb-interest.js';
import { encodeParts, encodeServerMessage, southboundDefinition } from '../../server/southbound-wire.js';
import { startTcpProxy } from '../helpers/tcp-proxy.js';

const schema = parseDatabaseSchema(SB_SCHEMA_JSON);

function row(table: string, uuid: string, cols: Record<string, unknown> = {}): Row {
  const r: Record<string, unknown> = { _uuid: uuid, _version: uuid };
  for (const c of (schema.tables.get(table) as NonNullable<ReturnType<typeof schema.tables.get>>).columns.values()) r[c.name] = defaultValue(c.type);
  return Object.assign(r, cols) as Row;
}
const uuid = (n: number): string => `00000000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;

const resume = (mode: 'DELTA' | 'SNAPSHOT', from: number, to: number): Buffer => encodeServerMessage({ resume: { mode, fromRevision: from, toRevision: to, reason: 'test', member: 1 } });
const step = (from: number, to: number, changes: ViewChange[], reset = false): Buffer =>
  encodeServerMessage({ delta: { fromRevision: from, toRevision: to, reset, more: false, tables: encodeParts(schema, changes)[0] ?? [] } });

interface Connection {
  readonly hello: Record<string, unknown>;
  readonly received: Record<string, unknown>[];
  readonly call: grpc.ServerDuplexStream<Record<string, unknown>, Buffer>;
}

/** A member that hands every stream to the test once its Hello came. */
async function scriptedMember(t: Test): Promise<{ address: string; next: () => Promise<Connection> }> {
  const waiting: ((c: Connection) => void)[] = [];
  const ready: Connection[] = [];
  const server = new grpc.Server();
  server.addService(southboundDefinition(), {
    stream: (call: grpc.ServerDuplexStream<Record<string, unknown>, Buffer>) => {
      let conn: Connection | undefined;
      call.on('data', (m: Record<string, unknown>) => {
        if (conn === undefined) {
          conn = { hello: m.hello as Record<string, unknown>, received: [], call };
          const w = waiting.shift();
          if (w !== undefined) w(conn);
          else ready.push(conn);
        } else conn.received.push(m);
      });
      call.on('error', () => undefined);
    },
    transact: (_call: unknown, cb: grpc.sendUnaryData<unknown>) => cb(null, { resultsJson: '[]', revision: 1, failed: false }),
  });
  const port = await new Promise<number>((res, rej) => server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? rej(e) : res(p))));
  t.teardown(() => server.forceShutdown());
  return {
    address: `127.0.0.1:${port}`,
    next: () => {
      const c = ready.shift();
      if (c !== undefined) return Promise.resolve(c);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no connection within 20 s')), 20_000);
        waiting.push((x) => {
          clearTimeout(timer);
          resolve(x);
        });
      });
    },
  };
}

/** A runtime that records updates and can be stalled. */
function runtime(): { updates: SbUpdate[]; states: SbSourceState[]; stall: (on: boolean) => void; onUpdate: (u: SbUpdate) => Promise<void>; onState: (s: SbSourceState) => void; nth: (n: number) => Promise<void>; disconnected: (n: number) => Promise<SbSourceState> } {
  const updates: SbUpdate[] = [];
  const states: SbSourceState[] = [];
  let gate: Promise<void> | undefined;
  let open: () => void = () => undefined;
  let wake: (() => void)[] = [];
  const notify = (): void => {
    const w = wake;
    wake = [];
    for (const f of w) f();
  };
  const waitFor = async <T>(f: () => T | undefined, what: string): Promise<T> => {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const v = f();
      if (v !== undefined) return v;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise<void>((r) => {
        const timer = setTimeout(r, 1000);
        wake.push(() => {
          clearTimeout(timer);
          r();
        });
      });
    }
  };
  return {
    updates,
    states,
    stall: (on) => {
      if (on) gate ??= new Promise<void>((r) => (open = r));
      else {
        gate = undefined;
        open();
      }
    },
    onUpdate: async (u) => {
      updates.push(u);
      notify();
      while (gate !== undefined) await gate;
    },
    onState: (s) => {
      states.push(s);
      notify();
    },
    nth: async (n) => void (await waitFor(() => (updates.length >= n ? true : undefined), `${n} updates`)),
    disconnected: (n) => waitFor(() => states.filter((s) => s.state === 'disconnected')[n - 1], `disconnection ${n}`),
  };
}

/** Polls `f` (every 10 ms, 20 s at most) until it holds: for what the client does not announce. */
async function until(f: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!f()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const hello = { chassis: 'hv1', hostname: 'hv1', encaps: [{ type: 'geneve', ip: '192.0.2.1' }], lastRevision: 0, ifaceIds: ['vm1'] };

/** A scripted member, a recording runtime, and a stream (short backoff) started against them. */
async function startedStream(t: Test): Promise<{ member: Awaited<ReturnType<typeof scriptedMember>>; rt: ReturnType<typeof runtime>; src: SbStream }> {
  const member = await scriptedMember(t);
  const rt = runtime();
  const src = new SbStream({ endpoints: [member.address], limits: { backoffMsInitial: 10, backoffMsMax: 50 } });
  t.teardown(() => src.close());
  src.start(hello, rt.onUpdate, rt.onState);
  return { member, rt, src };
}

t.test('protocol errors cost a reconnect; Hello says what the view holds', async (t) => {
  const { member, rt, src } = await startedStream(t);

  const c1 = await member.next();
  t.match(c1.hello, { chassis: 'hv1', lastRevision: 0, ifaceIds: ['vm1'], heldDatapaths: [] }, 'the first Hello asks for everything, with its iface-ids');
  c1.call.write(resume('SNAPSHOT', 0, 5));
  c1.call.write(step(0, 5, [{ table: 'SB_Global', uuid: uuid(1), row: row('SB_Global', uuid(1), { nb_cfg: 3 }) }], true));
  await rt.nth(1);
  t.match(rt.updates[0], { reset: true, fromRevision: 0, toRevision: 5 });
  src.ack(5, 3);
  c1.call.write(step(3, 7, []));
  const d1 = await rt.disconnected(1);
  t.match(d1, { state: 'disconnected', reason: /protocol error.*from revision 3, but this agent is at 5/ }, 'a step from the wrong revision is refused');

  const c2 = await member.next();
  t.match(c2.hello, { lastRevision: 5, heldDatapaths: [], ifaceIds: [] }, 'it resumes after what it delivered');
  c2.call.write(resume('DELTA', 5, 6));
  c2.call.write(encodeServerMessage({ delta: { fromRevision: 5, toRevision: 6, reset: false, more: false, tables: [{ table: 'No_Such_Table', columns: [], rows: [], removes: [] }] } }));
  t.match(await rt.disconnected(2), { reason: /protocol error.*unknown table/ }, 'an undecodable step is refused');
  t.equal(rt.updates.length, 1, 'and nothing of it reached the runtime');

  const c3 = await member.next();
  t.match(c3.hello, { lastRevision: 5 });
  c3.call.write(resume('DELTA', 5, 6));
  const dp = uuid(2);
  const pb = uuid(3);
  c3.call.write(step(5, 6, [
    { table: 'Datapath_Binding', uuid: dp, row: row('Datapath_Binding', dp, { tunnel_key: 1 }) },
    { table: 'Port_Binding', uuid: pb, row: row('Port_Binding', pb, { logical_port: 'vm1', datapath: uuid(9) }) },
  ]));
  await rt.nth(2);
  t.match(rt.updates[1], { reset: false, fromRevision: 5, toRevision: 6 });
  c3.call.emit('error', { code: grpc.status.UNAVAILABLE, details: 'going away' });
  t.match(await rt.disconnected(3), { reason: /UNAVAILABLE: going away/ });
  t.match(c1.received.find((m) => m.kind === 'ack'), { ack: { revision: 5, nbCfg: 3 } }, 'an Ack made while connected goes out at once');
  src.ack(6, 4);
  const c4 = await member.next();
  t.match(c4.hello, { lastRevision: 6, heldDatapaths: [dp], ifaceIds: ['vm1'] }, 'it says which datapaths it holds, and the port it holds by iface-id');
  c4.call.write(resume('DELTA', 6, 6));
  await until(() => c4.received.some((m) => m.kind === 'ack'), 'the Ack');
  t.match(c4.received.find((m) => m.kind === 'ack'), { ack: { revision: 6, nbCfg: 4 } }, 'one made while disconnected goes out after the next Resume');
  t.equal(src.stats().protocolErrors, 2);
});

t.test('steps that come while the runtime is busy are coalesced', async (t) => {
  const member = await scriptedMember(t);
  const rt = runtime();
  const src = new SbStream({ endpoints: [member.address] });
  t.teardown(() => src.close());
  src.start(hello, rt.onUpdate, rt.onState);
  const c = await member.next();
  const A = uuid(10);
  const B = uuid(11);
  const C = uuid(12);
  const E = uuid(13);
  const mac = (u: string, ip: string): ViewChange => ({ table: 'MAC_Binding', uuid: u, row: row('MAC_Binding', u, { ip, datapath: uuid(99) }) });
  rt.stall(true);
  c.call.write(resume('SNAPSHOT', 0, 1));
  c.call.write(step(0, 1, [], true));
  await rt.nth(1);
  // The runtime is busy with revision 1; three steps arrive.
  c.call.write(step(1, 2, [mac(A, '10.0.0.1')]));
  c.call.write(step(2, 3, [{ table: 'MAC_Binding', uuid: A, row: undefined }, mac(B, '10.0.0.2')]));
  c.call.write(step(3, 4, [mac(B, '10.0.0.3')]));
  c.call.write(step(4, 5, [mac(E, '10.0.0.9')]));
  await until(() => src.stats().steps === 5, 'the four steps to arrive');
  rt.stall(false);
  await rt.nth(2);
  const u = rt.updates[1] as SbUpdate;
  t.match(u, { reset: false, fromRevision: 1, toRevision: 5 }, 'one update for four steps');
  const byUuid = new Map(u.changes.map((ch) => [ch.uuid, ch]));
  t.equal(byUuid.get(A)?.row, undefined, 'a row added then removed is a removal');
  t.equal(byUuid.get(B)?.row?.ip, '10.0.0.3', 'a row changed twice has its latest image');
  t.equal(u.changes.length, 3, 'A, B and E');

  // A snapshot absorbs what was pending before it.
  rt.stall(true);
  c.call.write(step(5, 6, [mac(A, '10.0.0.4')]));
  await rt.nth(3);
  c.call.write(step(6, 7, [mac(B, '10.0.0.5')]));
  c.call.write(step(7, 8, [mac(C, '10.0.0.6')], true));
  c.call.write(step(8, 9, [mac(E, '10.0.0.7')]));
  await until(() => src.stats().steps === 9, 'the three steps to arrive');
  rt.stall(false);
  await rt.nth(4);
  const r = rt.updates[3] as SbUpdate;
  t.match(r, { reset: true, fromRevision: 6, toRevision: 9 }, 'a reset update from the runtime\'s revision');
  t.same(r.changes.map((ch) => ch.uuid).sort(), [C, E].sort(), 'holding only the snapshot and what followed it');
});

t.test('set differences apply to the rows the stream holds, delivered or pending', async (t) => {
  const { member, rt, src } = await startedStream(t);
  const c1 = await member.next();
  t.match(c1.hello, { setDifferenceTables: setDifferenceTables }, 'Hello names the tables whose sets may come as differences');
  const G = uuid(20);
  const ports = (ns: number[]): string[] => ns.map((n) => uuid(100 + n)).sort();
  let version = 0;
  const mc = (ns: number[]): Row => row('Multicast_Group', G, { _version: uuid(1000 + ++version), datapath: uuid(99), name: '_MC_flood', tunnel_key: 32768, ports: ports(ns) });
  // A step the member encodes against the row the agent holds (the difference where smaller).
  const diffStep = (from: number, to: number, was: Row, now: Row): Buffer =>
    encodeServerMessage({ delta: { fromRevision: from, toRevision: to, reset: false, more: false, tables: encodeParts(schema, [{ table: 'Multicast_Group', uuid: G, row: now, old: was }], Number.MAX_SAFE_INTEGER, new Set(setDifferenceTables))[0] ?? [] } });
  const latest = (): unknown => rt.updates.at(-1)?.changes.find((ch) => ch.uuid === G)?.row?.ports;
  const r1 = mc([1, 2, 3, 4, 5, 6]);
  c1.call.write(resume('SNAPSHOT', 0, 1));
  c1.call.write(step(0, 1, [{ table: 'Multicast_Group', uuid: G, row: r1 }], true));
  await rt.nth(1);
  const r2 = mc([1, 2, 3, 4, 5, 6, 7]);
  c1.call.write(diffStep(1, 2, r1, r2));
  await rt.nth(2);
  t.same(latest(), ports([1, 2, 3, 4, 5, 6, 7]), 'a port added, against the delivered row');
  // The runtime is busy: the next two differences apply to what is pending, in turn.
  rt.stall(true);
  const r3 = mc([1, 2, 3, 4, 5, 6, 7, 8]);
  const r4 = mc([2, 3, 4, 5, 6, 7, 8]);
  c1.call.write(diffStep(2, 3, r2, r3));
  await rt.nth(3);
  c1.call.write(diffStep(3, 4, r3, r4));
  const r5 = mc([2, 3, 4, 5, 6, 7, 8, 9]);
  c1.call.write(diffStep(4, 5, r4, r5));
  await until(() => src.stats().steps === 5, 'the steps to arrive');
  rt.stall(false);
  await rt.nth(4);
  t.same(latest(), ports([2, 3, 4, 5, 6, 7, 8, 9]), 'a removal and an addition against the pending row');
  // A difference for a row the stream never had: a protocol error, nothing delivered.
  const stranger = row('Multicast_Group', uuid(21), { _version: uuid(2000), datapath: uuid(99), name: '_MC_unknown', tunnel_key: 32769, ports: ports([1, 2, 3, 4, 5]) });
  c1.call.write(encodeServerMessage({ delta: { fromRevision: 5, toRevision: 6, reset: false, more: false, tables: encodeParts(schema, [{ table: 'Multicast_Group', uuid: uuid(21), row: { ...stranger, ports: ports([1, 2, 3, 4, 5, 6]) }, old: stranger }], Number.MAX_SAFE_INTEGER, new Set(setDifferenceTables))[0] ?? [] } }));
  t.match(await rt.disconnected(1), { reason: /protocol error.*set difference for a row the agent does not hold/ });
  t.equal(rt.updates.length, 4, 'nothing of that step reached the runtime');
  // After a reconnect, differences apply to what was delivered before it.
  const c2 = await member.next();
  t.match(c2.hello, { lastRevision: 5 });
  c2.call.write(resume('DELTA', 5, 6));
  const r6 = mc([2, 3, 4, 5, 6, 7, 8, 9, 10]);
  c2.call.write(diffStep(5, 6, r5, r6));
  await rt.nth(5);
  t.same(latest(), ports([2, 3, 4, 5, 6, 7, 8, 9, 10]), 'against the row delivered before the reconnect');
});

t.test('an Ack that says what the last one said is not sent; a new stream hears the last one again', async (t) => {
  const { member, rt, src } = await startedStream(t);
  const c1 = await member.next();
  c1.call.write(resume('SNAPSHOT', 0, 1));
  c1.call.write(step(0, 1, [], true));
  for (let r = 2; r <= 4; r++) c1.call.write(step(r - 1, r, []));
  await rt.nth(4);
  const acks = (c: Connection): unknown[] => c.received.filter((m) => m.kind === 'ack').map((m) => m.ack);
  src.ack(1, 3);
  src.ack(2, 3);
  src.ack(3, 3, 'table 40: no room');
  src.ack(4, 3);
  src.ack(4, 4);
  await until(() => acks(c1).length === 4, 'four Acks');
  t.same(acks(c1), [
    { revision: 1, nbCfg: 3, error: '' },
    { revision: 3, nbCfg: 3, error: 'table 40: no room' },
    { revision: 4, nbCfg: 3, error: '' },
    { revision: 4, nbCfg: 4, error: '' },
  ], 'the repeat of nb_cfg 3 without an error is left out; an error, its clearing and a new nb_cfg go out');
  c1.call.emit('error', { code: grpc.status.UNAVAILABLE, details: 'going away' });
  await rt.disconnected(1);
  const c2 = await member.next();
  c2.call.write(resume('DELTA', 4, 4));
  await until(() => acks(c2).length === 1, 'the Ack after Resume');
  t.same(acks(c2), [{ revision: 4, nbCfg: 4, error: '' }], 'the new member hears the last Ack, in case the old one never wrote it');
});

t.test('the backoff doubles up to its bound, with jitter between half and all of it', async (t) => {
  let prevMax = 0;
  for (let failures = 0; failures < 40; failures++) {
    const lo = backoffDelayMs(failures, 0);
    const hi = backoffDelayMs(failures, 0.999999);
    const exp = Math.min(sbStreamLimits.backoffMsMax, sbStreamLimits.backoffMsInitial * 2 ** failures);
    t.ok(Math.abs(lo - exp / 2) < 1e-6 && hi <= exp && hi > exp * 0.99, `failure ${failures}: ${lo.toFixed(0)}..${hi.toFixed(0)} ms`);
    t.ok(hi >= prevMax - 1e-6, 'never shorter than the one before');
    prevMax = hi;
  }
  t.equal(backoffDelayMs(1000, 0.999999) <= sbStreamLimits.backoffMsMax, true, 'bounded by backoffMsMax');
});

t.test('a row larger than gRPC\'s default 4 MiB message reaches the agent', async (t) => {
  const { member, rt } = await startedStream(t);
  const c1 = await member.next();
  c1.call.write(resume('SNAPSHOT', 0, 5));
  // An address set of 400,000 addresses: one row, so one part, of about 4.8 MB.
  const addresses = Array.from({ length: 400_000 }, (_, i) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);
  const message = step(0, 5, [{ table: 'Address_Set', uuid: uuid(1), row: row('Address_Set', uuid(1), { name: 'big', addresses: [...addresses].sort() }) }], true);
  t.ok(message.byteLength > 4 * 1024 * 1024, `one message of ${message.byteLength} bytes`);
  c1.call.write(message);
  await rt.nth(1);
  t.equal(rt.states.filter((s) => s.state === 'disconnected').length, 0, 'no reconnect');
  t.match(rt.updates[0], { reset: true, toRevision: 5 });
});

t.test('ovn-remote-probe-interval: keepalive pings find a member that stopped answering; a new interval reconnects and resumes', async (t) => {
  const member = await scriptedMember(t);
  const proxy = await startTcpProxy(t, member.address);
  const rt = runtime();
  const src = new SbStream({ endpoints: [proxy.address], limits: { backoffMsInitial: 10, backoffMsMax: 50 } });
  t.teardown(() => src.close());
  src.setProbeIntervalMs(1000);
  src.start(hello, rt.onUpdate, rt.onState);
  const c1 = await member.next();
  c1.call.write(resume('SNAPSHOT', 0, 5));
  c1.call.write(step(0, 5, [{ table: 'SB_Global', uuid: uuid(1), row: row('SB_Global', uuid(1)) }], true));
  await rt.nth(1);
  // A new interval: the stream reconnects to the same member at once and resumes after revision 5.
  src.setProbeIntervalMs(2000);
  const c2 = await member.next();
  t.equal(c2.hello.lastRevision, 5, 'the new connection resumes after the last revision delivered');
  t.match(await rt.disconnected(1), { state: 'disconnected', reason: /the probe interval is now 2000 ms/ });
  c2.call.write(resume('DELTA', 5, 5));
  await until(() => rt.states.at(-1)?.state === 'connected', 'connected again');
  const stalledAt = Date.now();
  proxy.stall(true);
  const lost = await rt.disconnected(2);
  const tookMs = Date.now() - stalledAt;
  t.ok(tookMs < 8000, `the silent member is noticed after ${tookMs} ms (a ping every 2 s, 2 s to answer)`);
  const reason = lost.state === 'disconnected' ? lost.reason : '';
  t.notMatch(reason, /probe interval/, `by the keepalive: ${reason}`);
});

t.test('ovn-remote-probe-interval 0: no pings, a silent member goes unnoticed', async (t) => {
  const member = await scriptedMember(t);
  const proxy = await startTcpProxy(t, member.address);
  const rt = runtime();
  const src = new SbStream({ endpoints: [proxy.address], limits: { backoffMsInitial: 10, backoffMsMax: 50 } });
  t.teardown(() => src.close());
  src.setProbeIntervalMs(0);
  src.start(hello, rt.onUpdate, rt.onState);
  const c1 = await member.next();
  c1.call.write(resume('SNAPSHOT', 0, 5));
  await until(() => rt.states.at(-1)?.state === 'connected', 'connected');
  proxy.stall(true);
  // What the previous test noticed within a few seconds stays unnoticed here.
  await new Promise((r) => setTimeout(r, 5000));
  t.notOk(rt.states.some((s) => s.state === 'disconnected'), 'still connected after 5 s of silence');
});
