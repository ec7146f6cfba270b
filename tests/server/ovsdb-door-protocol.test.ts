// The door's protocol details against a one-node central, over raw JSON-RPC: monitor/update,
// monitor_cond/update2 (conditions, diffs, monitor_cond_change), locks, inactivity probes,
// limits, and a battery of hostile requests after which the server and the data are intact.
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { Row } from '../../ovsdb/index.js';
import { LocalNetwork } from '../../cluster/local-transport.js';
import { CentralNode } from '../../server/central-node.js';
import type { OvsdbDoorLimits } from '../../server/ovsdb-door.js';
import { connectionOptions, passiveTarget, startOvsdbDoor } from '../../server/ovsdb-door.js';
import { JsonRpcClient } from '../helpers/jsonrpc-client.js';

interface TestLike {
  teardown(fn: () => unknown): void;
}

async function startDoor(t: TestLike, limits: Partial<OvsdbDoorLimits> = {}): Promise<{ central: CentralNode; port: number; connect: (onNotification?: (m: string, p: unknown) => void) => Promise<JsonRpcClient> }> {
  const network = new LocalNetwork('door-protocol');
  // A folder of our own, removed only after the member stopped: tap removes t.testdir() before
  // this teardown has closed LevelDB, which may still write (a slow-reader test fills its
  // write buffer).
  const dir = mkdtempSync(join(tmpdir(), 'door-protocol-'));
  const central = await CentralNode.start({ id: 1, clusterId: 'door-protocol', dataDir: join(dir, 'n1'), transport: network.transport(1), peers: new Map([[1, 'local:1']]), bootstrap: [1], tickMs: 10, projection: null });
  const door = await startOvsdbDoor({ central, listen: { host: '127.0.0.1', port: 0 }, limits });
  const clients: JsonRpcClient[] = [];
  t.teardown(async () => {
    for (const c of clients) await c.close();
    await door.close();
    await central.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  const port = (door.address as { port: number }).port;
  return {
    central,
    port,
    connect: async (onNotification) => {
      const c = await JsonRpcClient.connect({ host: '127.0.0.1', port }, onNotification ? { onNotification } : {});
      clients.push(c);
      return c;
    },
  };
}

/** Collects notifications and lets a test wait for the next one. */
function inbox(): { onNotification: (m: string, p: unknown) => void; next: () => Promise<[string, unknown]> } {
  const queued: [string, unknown][] = [];
  const waiters: ((x: [string, unknown]) => void)[] = [];
  return {
    onNotification: (m, p) => {
      const w = waiters.shift();
      if (w) w([m, p]);
      else queued.push([m, p]);
    },
    next: () => {
      const q = queued.shift();
      return q ? Promise.resolve(q) : new Promise((resolve) => waiters.push(resolve));
    },
  };
}

const NB = 'OVN_Northbound';

t.test('monitor (update) and monitor_cond (update2): initial rows, inserts, diffs, conditions, condition change', async (t) => {
  const { connect } = await startDoor(t);
  const w = await connect();
  const box1 = inbox();
  const box2 = inbox();
  const m1 = await connect(box1.onNotification);
  const m2 = await connect(box2.onNotification);
  const a = (await w.request('transact', [NB, { op: 'insert', table: 'Logical_Switch', row: { name: 'a' } }])) as [{ uuid: [string, string] }];
  const aUuid = a[0].uuid[1];

  const init1 = await m1.request('monitor', [NB, 'v1', { Logical_Switch: { columns: ['name', 'ports'] } }]);
  t.same(init1, { Logical_Switch: { [aUuid]: { new: { name: 'a', ports: ['set', []] } } } }, 'monitor: initial rows as "new"');
  const init2 = await m2.request('monitor_cond', [NB, ['v2'], { Logical_Switch: [{ columns: ['name', 'ports', 'other_config'], where: [['name', '==', 'a']] }] }]);
  t.same(init2, { Logical_Switch: { [aUuid]: { initial: { name: 'a' } } } }, 'monitor_cond: initial rows without default columns');

  const p = (await w.request('transact', [NB,
    { op: 'insert', table: 'Logical_Switch_Port', row: { name: 'p' }, 'uuid-name': 'p' },
    { op: 'mutate', table: 'Logical_Switch', where: [['name', '==', 'a']], mutations: [['ports', 'insert', ['named-uuid', 'p']], ['other_config', 'insert', ['map', [['k', 'v']]]]] },
  ])) as [{ uuid: [string, string] }];
  const pUuid = p[0].uuid[1];
  const [method1, params1] = await box1.next();
  t.equal(method1, 'update');
  t.same(params1, ['v1', { Logical_Switch: { [aUuid]: { old: { ports: ['set', []] }, new: { name: 'a', ports: ['uuid', pUuid] } } } }], 'update: old holds the changed columns only');
  const [method2, params2] = await box2.next();
  t.equal(method2, 'update2');
  t.same(params2, [['v2'], { Logical_Switch: { [aUuid]: { modify: { ports: ['uuid', pUuid], other_config: ['map', [['k', 'v']]] } } } }], 'update2: modify carries diffs');

  await w.request('transact', [NB, { op: 'insert', table: 'Logical_Switch', row: { name: 'b' } }]);
  const [, insB] = await box1.next();
  t.match(insB, ['v1', { Logical_Switch: {} }], 'a new switch reaches the unconditional monitor');
  // The conditional monitor does not see b; the rename of a moves it out of the condition.
  await w.request('transact', [NB, { op: 'update', table: 'Logical_Switch', where: [['name', '==', 'a']], row: { name: 'a2' } }]);
  const [, out] = await box2.next();
  t.same(out, [['v2'], { Logical_Switch: { [aUuid]: { delete: null } } }], 'a row leaving the condition is deleted');

  const changed = await m2.request('monitor_cond_change', [['v2'], ['v2b'], { Logical_Switch: [{ where: [['name', '==', 'b'], ['name', '==', 'a2']] }] }]);
  t.same(changed, {});
  const [m3, p3] = await box2.next();
  t.equal(m3, 'update2');
  const rows = (p3 as [unknown, { Logical_Switch: Record<string, { insert: { name: string } }> }])[1].Logical_Switch;
  t.same(Object.values(rows).map((r) => r.insert.name).sort(), ['a2', 'b'], 'a wider condition inserts the rows it now covers');
  t.same(await m2.request('monitor_cancel', [['v2b']]), {});
  t.match(await m2.request('monitor_cancel', [['v2b']]).catch((e: unknown) => e), { error: 'unknown monitor' });
  t.match(await m2.request('monitor', [NB, 'bad', { Nope: {} }]).catch((e: unknown) => e), { error: { error: 'unknown table' } });
  t.match(await m2.request('monitor_cond', [NB, 'bad', { Logical_Switch: { where: [['name', 'like', 'x']] } }]).catch((e: unknown) => e), { error: { error: 'unknown function' } });
});

t.test('update2 of an optional column (at most one value) carries the new value, as ovsdb-server sends it', async (t) => {
  const { connect } = await startDoor(t);
  const w = await connect();
  const box = inbox();
  const m = await connect(box.onNotification);
  const [port] = (await w.request('transact', [NB,
    { op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': 'p', row: { name: 'p', up: false } },
    { op: 'insert', table: 'Logical_Switch', row: { name: 's', ports: ['named-uuid', 'p'] } },
  ])) as [{ uuid: [string, string] }];
  const uuid = port.uuid[1];
  t.same(await m.request('monitor_cond', [NB, 'm', { Logical_Switch_Port: [{ columns: ['up'] }] }]), { Logical_Switch_Port: { [uuid]: { initial: { up: false } } } });
  // What the real ovsdb-server 3.1 sends for these three updates (recorded): the IDL replaces
  // an optional value with what it gets; a symmetric difference would leave it wrong.
  for (const [value, expected] of [[true, true], [['set', []], ['set', []]], [false, false]] as const) {
    await w.request('transact', [NB, { op: 'update', table: 'Logical_Switch_Port', where: [], row: { up: value } }]);
    t.same(await box.next(), ['update2', ['m', { Logical_Switch_Port: { [uuid]: { modify: { up: expected } } } }]], `up = ${JSON.stringify(value)}`);
  }
});

t.test('_Server: one clustered Database row naming the leader', async (t) => {
  const { connect, central } = await startDoor(t);
  await central.transact([{ op: 'insert', table: 'NB_Global', row: {} }]);
  const c = await connect();
  const out = (await c.request('transact', ['_Server', { op: 'select', table: 'Database', where: [], columns: ['name', 'model', 'connected', 'leader'] }])) as [{ rows: unknown[] }];
  t.same(out[0].rows, [{ name: NB, model: 'clustered', connected: true, leader: true }]);
  t.same(await c.request('list_dbs', []), [NB, '_Server']);
  t.match(await c.request('get_schema', ['_Server']), { name: '_Server', tables: { Database: {} } });
  const id = await c.request('get_server_id', []);
  t.match(id, /^[0-9a-f-]{36}$/);
  t.equal(await c.request('get_server_id', []), id, 'the server id is stable');
  t.same(await c.request('set_db_change_aware', [true]), {});
});

t.test('locks: lock, queue, unlock hands over, steal notifies the owner', async (t) => {
  const { connect } = await startDoor(t);
  const boxA = inbox();
  const boxB = inbox();
  const a = await connect(boxA.onNotification);
  const b = await connect(boxB.onNotification);
  const c = await connect();
  t.same(await a.request('lock', ['L']), { locked: true });
  t.same(await b.request('lock', ['L']), { locked: false });
  t.same(await a.request('unlock', ['L']), {});
  t.same(await boxB.next(), ['locked', ['L']], 'the waiter is told it holds the lock');
  t.same(await c.request('steal', ['L']), { locked: true });
  t.same(await boxB.next(), ['stolen', ['L']], 'the owner is told it was stolen');
  t.match(await a.request('unlock', ['L']).catch((e: unknown) => e), { error: { error: 'syntax error' } });
  const assertOp = { op: 'assert', lock: 'L' };
  const insert = { op: 'insert', table: 'Logical_Switch', row: { name: 'locked-write' } };
  t.match(await a.request('transact', [NB, assertOp, insert]), [{ error: 'not owner' }, null], 'assert without the lock: not owner, nothing written');
  t.match(await c.request('transact', [NB, assertOp, insert]), [{}, { uuid: ['uuid', String] }], 'assert with the lock: the write happens');
});

function rawSocket(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.createConnection({ host: '127.0.0.1', port }, () => resolve(s));
    s.once('error', reject);
  });
}

t.test('inactivity probes: a silent peer is dropped, an answering one kept', async (t) => {
  const { port } = await startDoor(t, { inactivityProbeMs: 30 });
  const silent = await rawSocket(port);
  const got: string[] = [];
  silent.on('data', (d: Buffer) => got.push(d.toString()));
  await new Promise<void>((resolve) => silent.on('close', () => resolve()));
  t.match(got.join(''), /"method":"echo"/, 'the server probed before dropping');
  // The answering peer on a door with a longer probe: with 30 ms, a loaded machine's pause of
  // this one process (client and server both) between a probe and its answer dropped it.
  const patient = await startDoor(t, { inactivityProbeMs: 250 });
  const polite = await rawSocket(patient.port);
  t.teardown(() => polite.destroy());
  let answered = 0;
  await new Promise<void>((resolve, reject) => {
    polite.on('close', () => reject(new Error('an answering peer was dropped')));
    polite.on('data', (d: Buffer) => {
      for (const m of d.toString().match(/\{[^{}]*\}/g) ?? []) {
        const msg = JSON.parse(m) as { method?: string; id?: unknown };
        if (msg.method !== 'echo') continue;
        polite.write(JSON.stringify({ id: msg.id, result: [], error: null }));
        if (++answered === 4) resolve();
      }
    });
  });
  t.equal(answered, 4, 'four probes answered, still connected');
});

t.test("a Connection row naming the listener sets its inactivity probe, as ovsdb-server's remotes take theirs", async (t) => {
  const { port, connect } = await startDoor(t, { inactivityProbeMs: 30 });
  const admin = await connect();
  const silentFor = async (ms: number): Promise<{ closed: boolean; echoAtMs: number | undefined }> => {
    const s = await rawSocket(port);
    const started = performance.now();
    let echoAtMs: number | undefined;
    let closed = false;
    s.on('data', (d: Buffer) => (echoAtMs ??= /"method":"echo"/.test(d.toString()) ? performance.now() - started : undefined));
    s.on('close', () => (closed = true));
    await new Promise((r) => setTimeout(r, ms));
    s.destroy();
    return { closed, echoAtMs };
  };
  t.match(await silentFor(300), { closed: true }, "without a Connection row, the door's own 30 ms probe drops a silent peer");
  // ovn-nbctl set-connection ptcp:PORT, then set connection . inactivity_probe=0.
  await admin.request('transact', [NB,
    { op: 'insert', table: 'NB_Global', row: { connections: ['named-uuid', 'c'] } },
    { op: 'insert', table: 'Connection', 'uuid-name': 'c', row: { target: `ptcp:${port}:127.0.0.1`, inactivity_probe: 0 } },
  ]);
  t.same(await silentFor(400), { closed: false, echoAtMs: undefined }, 'inactivity_probe=0: no probe, the silent peer stays');
  // A peer already connected is re-armed when the row changes.
  const idle = await rawSocket(port);
  t.teardown(() => idle.destroy());
  let idleEcho: number | undefined;
  idle.on('data', (d: Buffer) => (idleEcho ??= /"method":"echo"/.test(d.toString()) ? performance.now() : undefined));
  await new Promise((r) => setTimeout(r, 100));
  const changedAt = performance.now();
  await admin.request('transact', [NB, { op: 'update', table: 'Connection', where: [], row: { inactivity_probe: 400 } }]);
  const probed = await silentFor(1500);
  t.equal(probed.closed, false, 'inactivity_probe=400 is rounded up to 1000 ms, as OVS rounds it: not dropped within 1.5 s');
  t.ok(probed.echoAtMs !== undefined && probed.echoAtMs >= 900, `the first probe came after about 1 s (${probed.echoAtMs?.toFixed(0)} ms)`);
  t.ok(idleEcho !== undefined && idleEcho - changedAt >= 900, 'the peer connected before the change was probed on the new interval');
  // A row for another listener does not apply here.
  await admin.request('transact', [NB, { op: 'update', table: 'Connection', where: [], row: { target: `ptcp:${port + 1}` } }]);
  t.match(await silentFor(300), { closed: true }, "a row naming another port leaves the door's own probe");
});

t.test('connectionOptions: which row names the listener, and what its values mean', async (t) => {
  const row = (uuid: string, target: string, probe: number[], readOnly?: boolean, role = ''): Row => ({ _uuid: uuid, _version: '', target, inactivity_probe: probe, role, ...(readOnly === undefined ? {} : { read_only: readOnly }) }) as unknown as Row;
  const tcp = { host: '127.0.0.1', port: 6641 };
  const probeMs = (rows: Row[], l: Parameters<typeof connectionOptions>[1] = tcp): number | undefined => connectionOptions(rows, l).probeMs;
  t.equal(probeMs([]), undefined);
  t.equal(probeMs([row('a', 'ptcp:6641', [])]), undefined, 'no value: the door keeps its own');
  t.equal(probeMs([row('a', 'ptcp:6641:0.0.0.0', [0])]), 0);
  t.equal(probeMs([row('a', 'pssl:6641', [60000])]), 60000);
  t.equal(probeMs([row('a', 'ptcp:6641', [10])]), 1000, 'rounded up to 1 s');
  t.equal(probeMs([row('a', 'tcp:127.0.0.1:6641', [0]), row('b', 'ptcp:66410', [0]), row('c', 'punix:/x', [0])]), undefined, 'active remotes, other ports and paths name it not');
  t.equal(probeMs([row('b', 'ptcp:6641', [2000]), row('a', 'ptcp:6641', [3000])]), 3000, 'the first in UUID order');
  t.equal(probeMs([row('a', 'punix:/run/ovn/ovnnb_db.sock', [0])], { path: '/run/ovn/ovnnb_db.sock' }), 0);
  t.same(connectionOptions([row('a', 'ptcp:6641', [], true)], tcp), { probeMs: undefined, readOnly: true, role: '' }, 'read_only');
  t.same(connectionOptions([row('a', 'ptcp:6641', [5000]), row('b', 'ptcp:6641', [], true)], tcp), { probeMs: 5000, readOnly: true, role: '' }, 'each column from the first row that sets it');
  t.same(connectionOptions([row('a', 'ptcp:6642', [], true)], tcp), { probeMs: undefined, readOnly: false, role: '' }, "another listener's read_only does not apply");
  t.equal(connectionOptions([row('a', 'pssl:6641', [], false, 'ovn-controller')], tcp).role, 'ovn-controller', 'role');
  t.equal(connectionOptions([row('a', 'ptcp:6641', []), row('b', 'ptcp:6641:127.0.0.1', [], false, 'ovn-controller')], tcp).role, 'ovn-controller', 'a row with a role restricts the listener, whatever a row before it leaves empty');
  t.equal(connectionOptions([row('a', 'ptcp:6642', [], false, 'ovn-controller')], tcp).role, '', "another listener's role does not apply");
});

t.test('passiveTarget: where a Connection row asks to listen, or why it cannot', async (t) => {
  t.same(passiveTarget('ptcp:6641'), { host: '0.0.0.0', port: 6641 }, 'every IPv4 address when no IP is given, as ovsdb-server listens');
  t.same(passiveTarget('ptcp:6641:127.0.0.1'), { host: '127.0.0.1', port: 6641 });
  t.same(passiveTarget('ptcp:6641:[::1]'), { host: '::1', port: 6641 });
  t.same(passiveTarget('punix:/run/ovn/ovnnb_db.sock'), { path: '/run/ovn/ovnnb_db.sock' });
  t.match(passiveTarget('ptcp:70000'), /out of range/);
  t.same(passiveTarget('pssl:6641'), { host: '0.0.0.0', port: 6641, ssl: true }, 'pssl: listens as ptcp: does, with SSL');
  t.same(passiveTarget('pssl:6641:127.0.0.1'), { host: '127.0.0.1', port: 6641, ssl: true });
  t.match(passiveTarget('pssl:99999'), /out of range/);
  t.match(passiveTarget('tcp:192.0.2.1:6641'), /active remotes/);
  t.match(passiveTarget('bogus'), /expected ptcp:PORT\[:IP\], pssl:PORT\[:IP\] or punix:PATH/);
});

t.test('limits and hostile input: errors or a closed connection, never a crash or a change', async (t) => {
  const { port, connect, central } = await startDoor(t, { messageBytesMax: 4096 });
  const c = await connect();
  await c.request('transact', [NB, { op: 'insert', table: 'Logical_Switch', row: { name: 'keep' } }]);
  const before = JSON.stringify((await central.list('Logical_Switch', [], undefined, 'linearizable')).rows);

  const big = await rawSocket(port);
  const bigClosed = new Promise<void>((resolve) => big.on('close', () => resolve()));
  big.write(JSON.stringify({ method: 'echo', params: ['x'.repeat(10_000)], id: 1 }));
  await bigClosed;
  t.pass('an oversized message closes the connection');

  const hostile: [string, unknown[]][] = [];
  const values: unknown[] = [null, 0, -1, 'x', true, [], {}, [[]], { a: 1 }, NB, '_Server', ['x'], [NB], { Logical_Switch: null }, { Logical_Switch: { columns: 5 } }, { Logical_Switch: { columns: ['nope'] } }, { Logical_Switch: { select: { insert: 1 } } }, { Logical_Switch: [{ where: 5 }] }];
  const methods = ['transact', 'monitor', 'monitor_cond', 'monitor_cond_since', 'monitor_cond_change', 'monitor_cancel', 'get_schema', 'lock', 'steal', 'unlock', 'echo', 'list_dbs', 'cancel', 'set_db_change_aware', 'get_server_id', 'bogus'];
  for (const m of methods) {
    for (const v of values) {
      hostile.push([m, [v]]);
      hostile.push([m, [NB, v]]);
      hostile.push([m, [NB, 'id', v]]);
      hostile.push([m, [NB, 'id', { Logical_Switch: {} }, v]]);
    }
  }
  let replies = 0;
  for (const [m, params] of hostile) {
    await c.request(m, params).catch((e: unknown) => e);
    replies++;
  }
  t.equal(replies, hostile.length, `${hostile.length} hostile requests answered`);
  const weird = await rawSocket(port);
  const weirdReplies: string[] = [];
  weird.on('data', (d: Buffer) => weirdReplies.push(d.toString()));
  const weirdClosed = new Promise<void>((resolve) => weird.on('close', () => resolve()));
  weird.write('{"method": 5, "params": "x", "id": 1}{"id": 2}{"method":"echo","params":[],"id":null}[1,2]');
  await weirdClosed;
  t.match(weirdReplies.join(''), /"id":1,"result":null,"error":\{"error":"syntax error"/, 'a request of the wrong shape gets an error');
  t.pass('then a top-level array closes the connection');
  t.same(await c.request('echo', ['alive']), ['alive'], 'the server is up');
  t.equal(JSON.stringify((await central.list('Logical_Switch', [], undefined, 'linearizable')).rows), before, 'the data is unchanged');
});

t.test('connectionsMax: one connection past it is closed at once and counted; the others keep working', async (t) => {
  const { port, connect, central } = await startDoor(t, { connectionsMax: 3 });
  const held = [await connect(), await connect(), await connect()];
  const extra = await rawSocket(port);
  const extraData: Buffer[] = [];
  extra.on('data', (d: Buffer) => extraData.push(d));
  await new Promise<void>((resolve) => extra.on('close', () => resolve()));
  t.equal(Buffer.concat(extraData).length, 0, 'the fourth is closed without a word');
  t.equal(central.sessions.refused().ovsdb, 1, 'and counted as refused');
  t.equal(central.sessions.all().ovsdb, 3, 'three sessions open');
  for (const [i, c] of held.entries()) t.same(await c.request('echo', [i]), [i], `connection ${i + 1} still answers`);
  await (held[0] as { close(): Promise<void> }).close();
  for (let i = 0; i < 100 && central.sessions.all().ovsdb > 2; i++) await new Promise((r) => setTimeout(r, 10));
  const again = await connect();
  t.same(await again.request('list_dbs', []), [NB, '_Server'], 'once one leaves, a new one is served');
  t.equal(central.sessions.refused().ovsdb, 1, 'and not refused');
});

t.test('pipelined requests beyond requestsInFlightMax wait their turn; none is refused', async (t) => {
  const { port } = await startDoor(t, { requestsInFlightMax: 2 });
  const s = await rawSocket(port);
  t.teardown(() => s.destroy());
  const n = 20;
  let text = '';
  const replies = new Promise<{ id: number; error: unknown }[]>((resolve) => {
    s.on('data', (d: Buffer) => {
      text += d.toString();
      const got = text.match(/\{"id":\d+,"result":.*?,"error":null\}/g) ?? [];
      if (got.length >= n) resolve(got.map((x) => JSON.parse(x) as { id: number; error: unknown }));
    });
  });
  let burst = '';
  for (let i = 0; i < n; i++) burst += JSON.stringify({ method: 'transact', params: [NB, { op: 'insert', table: 'Logical_Switch', row: { name: `pipe${i}` } }], id: i });
  s.write(burst);
  const got = await replies;
  t.same(got.map((r) => r.id).sort((a, b) => a - b), [...Array(n).keys()], 'every pipelined request answered without error');
});

t.test('a reply larger than outgoingBytesMax reaches a reader that reads it, and the updates after it', async (t) => {
  const { connect } = await startDoor(t, { outgoingBytesMax: 64 * 1024 });
  const w = await connect();
  const big = 'x'.repeat(32 * 1024);
  for (let i = 0; i < 4; i++) {
    const ops = Array.from({ length: 10 }, (_, j) => ({ op: 'insert', table: 'Logical_Switch', row: { name: `big${i}-${j}`, external_ids: ['map', [['blob', big]]] } }));
    await w.request('transact', [NB, ...ops]);
  }
  const box = inbox();
  const r = await connect(box.onNotification);
  const initial = (await r.request('monitor', [NB, 'm', { Logical_Switch: {} }], 10_000).catch((e: Error) => ({ Logical_Switch: {}, failed: e.message }))) as { Logical_Switch: Record<string, unknown>; failed?: string };
  t.equal(initial.failed, undefined, 'the monitor is answered');
  t.equal(Object.keys(initial.Logical_Switch).length, 40, 'the initial rows, about 1.3 MB in one reply, 20 times the bound');
  if (initial.failed !== undefined) return;
  await w.request('transact', [NB, { op: 'insert', table: 'Logical_Switch', row: { name: 'later' } }]);
  // Before the bound allowed for the longest message, the reply still reached the kernel, and
  // then the connection was closed: no update came.
  const next = await Promise.race([box.next(), new Promise<undefined>((r) => setTimeout(() => r(undefined), 10_000))]);
  t.equal(next?.[0], 'update', 'the update after it arrives on the same connection');
  t.match(JSON.stringify(next?.[1]), /"later"/);
});

t.test('a slow reader past outgoingBytesMax is dropped', async (t) => {
  const { port, connect } = await startDoor(t, { outgoingBytesMax: 64 * 1024 });
  const w = await connect();
  const s = await rawSocket(port);
  t.teardown(() => s.destroy());
  s.write(JSON.stringify({ method: 'monitor', params: [NB, 'm', { Logical_Switch: {} }], id: 1 }));
  // The reader reads nothing while about 16 MB of updates are produced for it.
  s.pause();
  const big = 'x'.repeat(32 * 1024);
  for (let i = 0; i < 10; i++) {
    const ops = Array.from({ length: 50 }, (_, j) => ({ op: 'insert', table: 'Logical_Switch', row: { name: `slow${i}-${j}`, external_ids: ['map', [['blob', big]]] } }));
    await w.request('transact', [NB, ...ops]);
  }
  // Reading again drains what the kernel held; then the stream ends because the server dropped it.
  let bytes = 0;
  s.on('data', (d: Buffer) => (bytes += d.length));
  await new Promise<void>((resolve) => {
    s.on('close', () => resolve());
    s.resume();
  });
  t.ok(bytes < 16 * 1024 * 1024, `dropped after ${bytes} bytes, before all updates were sent`);
  t.same(await w.request('echo', ['alive']), ['alive'], 'other connections are unaffected');
});
