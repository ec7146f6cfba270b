// The OVSDB door serves the real tools: ovn-nbctl (through its IDL: _Server, monitor_cond_since,
// transact with verify) and ovsdb-client run against a door on a follower of a three-node
// cluster; raw JSON-RPC probes bad input and monitor_cond_since resume.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import t from 'tap';
import { LocalNetwork } from '../../cluster/local-transport.js';
import { nodeDefaults } from '../../cluster/node.js';
import { CentralNode } from '../../server/central-node.js';
import { forwarder, northboundDefinition, northboundHandlers, northboundServerOptions } from '../../server/northbound-service.js';
import type { OvsdbDoor } from '../../server/ovsdb-door.js';
import { startOvsdbDoor, txnIdOf } from '../../server/ovsdb-door.js';
import { JsonRpcClient } from '../helpers/jsonrpc-client.js';
import { testdirAfterTeardowns } from '../helpers/testdir.js';

interface Cluster {
  members: CentralNode[];
  follower: CentralNode;
  stop: () => Promise<void>;
}

async function startCluster(dir: string, history?: { revisionsMax: number; bytesMax: number }): Promise<Cluster> {
  const net = new LocalNetwork('door-test');
  const ids = [1, 2, 3];
  const peers = new Map(ids.map((id) => [id, `local:${id}`]));
  const addresses = new Map<number, string>();
  const fwd = forwarder(addresses);
  const members: CentralNode[] = [];
  const servers: grpc.Server[] = [];
  for (const id of ids) {
    const central = await CentralNode.start({
      id, clusterId: 'door-test', dataDir: join(dir, `n${id}`), transport: net.transport(id), peers, bootstrap: ids, tickMs: 10, forward: fwd.forward,
      ...(history ? { history } : {}),
    });
    const server = new grpc.Server(northboundServerOptions);
    server.addService(northboundDefinition(), northboundHandlers(central));
    const port = await new Promise<number>((res, rej) => server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? rej(e) : res(p))));
    addresses.set(id, `127.0.0.1:${port}`);
    members.push(central);
    servers.push(server);
  }
  // The first write waits for an election; afterwards the roles are known.
  const first = members[0] as CentralNode;
  await first.transact([{ op: 'insert', table: 'NB_Global', row: {} }]);
  const follower = members.find((m) => m.node.status().role !== 'leader') as CentralNode;
  return {
    members,
    follower,
    stop: async () => {
      fwd.close();
      for (const s of servers) s.forceShutdown();
      for (const m of members) await m.stop();
    },
  };
}

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function run(cmd: string, args: readonly string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(cmd, args, { timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof err.code === 'number' ? err.code : 1;
      resolve({ code, stdout, stderr });
    });
  });
}

const haveNbctl = existsSync('/usr/bin/ovn-nbctl');
const haveClient = existsSync('/usr/bin/ovsdb-client');

t.test('the real ovn-nbctl through a door on a follower', { skip: haveNbctl ? false : 'ovn-nbctl is not installed' }, async (t) => {
  const cluster = await startCluster(testdirAfterTeardowns(t));
  const door = await startOvsdbDoor({ central: cluster.follower, listen: { host: '127.0.0.1', port: 0 } });
  t.teardown(async () => {
    await door.close();
    await cluster.stop();
  });
  const { port } = door.address as { port: number };
  const nbctl = (...args: string[]): Promise<Run> => run('ovn-nbctl', [`--db=tcp:127.0.0.1:${port}`, '--no-leader-only', '--timeout=20', ...args]);
  const ok = async (...args: string[]): Promise<string> => {
    const r = await nbctl(...args);
    t.equal(r.code, 0, `ovn-nbctl ${args.join(' ')}${r.code === 0 ? '' : `: ${r.stderr}`}`);
    return r.stdout;
  };
  await ok('ls-add', 'sw0');
  await ok('lsp-add', 'sw0', 'p1');
  await ok('lsp-set-addresses', 'p1', '00:00:00:00:00:01 10.0.0.1');
  const show = await ok('show');
  t.match(show, /switch [0-9a-f-]+ \(sw0\)/);
  t.match(show, /port p1\n\s+addresses: \["00:00:00:00:00:01 10.0.0.1"\]/);
  t.match(await ok('ls-list'), /\(sw0\)/);
  const twice = await nbctl('ls-add', 'sw0');
  t.not(twice.code, 0, 'ls-add of an existing switch fails');
  t.match(twice.stderr, /sw0: a switch with this name already exists/);
  t.equal((await ok('lsp-get-addresses', 'p1')).trim(), '00:00:00:00:00:01 10.0.0.1');
  await ok('lsp-del', 'p1');
  await ok('ls-del', 'sw0');
  t.equal((await ok('ls-list')).trim(), '', 'nothing left');
  const rows = await cluster.follower.list('Logical_Switch', [], undefined, 'linearizable');
  t.equal(rows.rows.length, 0, 'the cluster agrees');
});

t.test('ovn-nbctl given several remotes finds the leader through _Server; more commands', { skip: haveNbctl ? false : 'ovn-nbctl is not installed' }, async (t) => {
  const cluster = await startCluster(testdirAfterTeardowns(t));
  const leader = cluster.members.find((m) => m.node.status().role === 'leader') as CentralNode;
  const doors = [await startOvsdbDoor({ central: cluster.follower, listen: { host: '127.0.0.1', port: 0 } }), await startOvsdbDoor({ central: leader, listen: { host: '127.0.0.1', port: 0 } })];
  t.teardown(async () => {
    for (const d of doors) await d.close();
    await cluster.stop();
  });
  // Leader-only (the default): a client that lands on the follower moves on to the leader.
  const db = doors.map((d) => `tcp:127.0.0.1:${(d.address as { port: number }).port}`).join(',');
  const ok = async (...args: string[]): Promise<string> => {
    const r = await run('ovn-nbctl', [`--db=${db}`, '--timeout=20', ...args]);
    t.equal(r.code, 0, `ovn-nbctl ${args.join(' ')}${r.code === 0 ? '' : `: ${r.stderr}`}`);
    return r.stdout;
  };
  await ok('ls-add', 'sw1');
  await ok('lr-add', 'lr0');
  await ok('lrp-add', 'lr0', 'lrp0', '00:00:00:00:ff:01', '192.168.0.1/24');
  await ok('acl-add', 'sw1', 'to-lport', '1000', 'ip4.src == 10.0.0.0/8', 'allow');
  await ok('pg-add', 'pg0');
  await ok('lb-add', 'lb0', '30.0.0.10:80', '10.0.0.2:80');
  await ok('lr-nat-add', 'lr0', 'snat', '172.16.0.1', '10.0.0.0/24');
  t.match(await ok('list', 'Logical_Router'), /name\s+: lr0/);
  t.match(await ok('--bare', '--columns=name', 'find', 'Logical_Router_Port', 'name=lrp0'), /lrp0/);
  t.match(await ok('acl-list', 'sw1'), /to-lport {2}1000 \(ip4.src == 10.0.0.0\/8\) allow/);
  t.match(await ok('lr-nat-list', 'lr0'), /snat\s+172.16.0.1\s+10.0.0.0\/24/);
  t.match(await ok('lb-list'), /lb0/);
  // Given only the follower, a leader-only client keeps looking for a leader and gives up.
  const followerOnly = await run('ovn-nbctl', [`--db=tcp:127.0.0.1:${(doors[0]?.address as { port: number }).port}`, '--timeout=3', 'ls-list']);
  t.not(followerOnly.code, 0, 'leader-only ovn-nbctl refuses a follower-only remote list');
});

t.test('the real ovsdb-client, over TCP and a unix socket', { skip: haveClient ? false : 'ovsdb-client is not installed' }, async (t) => {
  const cluster = await startCluster(testdirAfterTeardowns(t));
  const tcp = await startOvsdbDoor({ central: cluster.follower, listen: { host: '127.0.0.1', port: 0 } });
  // A unix socket path must fit in 108 bytes: a short temporary directory, not t.testdir().
  const sockDir = mkdtempSync(join(tmpdir(), 'door-'));
  const unix = await startOvsdbDoor({ central: cluster.follower, listen: { path: join(sockDir, 'nb.sock') } });
  t.teardown(async () => {
    await tcp.close();
    await unix.close();
    await cluster.stop();
    rmSync(sockDir, { recursive: true, force: true });
  });
  const remotes = [`tcp:127.0.0.1:${(tcp.address as { port: number }).port}`, `unix:${join(sockDir, 'nb.sock')}`];
  for (const remote of remotes) {
    const dbs = await run('ovsdb-client', ['list-dbs', remote]);
    t.equal(dbs.stdout, 'OVN_Northbound\n_Server\n', `list-dbs on ${remote}`);
    const schema = await run('ovsdb-client', ['get-schema', remote, 'OVN_Northbound']);
    t.equal((JSON.parse(schema.stdout) as { name: string }).name, 'OVN_Northbound');
    const txn = await run('ovsdb-client', ['transact', remote, JSON.stringify(['OVN_Northbound', { op: 'insert', table: 'Logical_Switch', row: { name: `via-${remote.slice(0, 4)}` } }])]);
    t.equal(txn.code, 0, `transact on ${remote}: ${txn.stderr}`);
    t.match(txn.stdout, /\[\{"uuid":\["uuid","[0-9a-f-]{36}"\]\}\]/);
    const dump = await run('ovsdb-client', ['dump', remote, 'OVN_Northbound', 'Logical_Switch']);
    t.match(dump.stdout, new RegExp(`via-${remote.slice(0, 4)}`), `dump on ${remote}`);
    const server = await run('ovsdb-client', ['dump', remote, '_Server']);
    t.match(server.stdout, /clustered/);
  }
});

interface TestLike {
  testdir(): string;
  teardown(fn: () => unknown): void;
}

async function rawDoor(t: TestLike, history?: { revisionsMax: number; bytesMax: number }): Promise<{ cluster: Cluster; door: OvsdbDoor; port: number }> {
  const cluster = await startCluster(testdirAfterTeardowns(t), history);
  const door = await startOvsdbDoor({ central: cluster.follower, listen: { host: '127.0.0.1', port: 0 } });
  t.teardown(async () => {
    await door.close();
    await cluster.stop();
  });
  return { cluster, door, port: (door.address as { port: number }).port };
}

t.test('raw JSON-RPC: bad input gets errors or a clean close; the server and data survive', async (t) => {
  const { cluster, port } = await rawDoor(t);
  const c = await JsonRpcClient.connect({ host: '127.0.0.1', port });
  t.teardown(() => c.close());
  await c.request('transact', ['OVN_Northbound', { op: 'insert', table: 'Logical_Switch', row: { name: 'keep' } }]);
  const before = JSON.stringify((await cluster.follower.list('Logical_Switch', [], ['name'], 'linearizable')).rows);
  t.match(await c.request('no_such_method', []).catch((e: unknown) => e), { error: 'unknown method' });
  t.match(await c.request('get_schema', ['Nope']).catch((e: unknown) => e), { error: { error: 'unknown database' } });
  const bad = (await c.request('transact', ['OVN_Northbound', { op: 'insert', table: 'Logical_Switch', row: { name: 'half' } }, { op: 'frobnicate' }])) as unknown[];
  t.match(bad[bad.length - 1], { error: String });
  const refused = (await c.request('transact', ['_Server', { op: 'insert', table: 'Database', row: { name: 'x' } }])) as unknown[];
  t.match(refused, [{ error: String }], '_Server is read-only');
  t.same(await c.request('echo', ['hi']), ['hi']);

  // Malformed JSON closes that connection cleanly.
  const bad2 = await import('node:net').then((net) => net.createConnection({ host: '127.0.0.1', port }));
  const closed = new Promise<void>((resolve) => bad2.on('close', () => resolve()));
  bad2.write('{"method": "echo", "params": [}]');
  await closed;
  t.pass('malformed JSON: the connection was closed');
  const bad3 = await import('node:net').then((net) => net.createConnection({ host: '127.0.0.1', port }));
  const closed3 = new Promise<void>((resolve) => bad3.on('close', () => resolve()));
  bad3.write('"not an object"');
  await closed3;

  t.same(await c.request('list_dbs', []), ['OVN_Northbound', '_Server'], 'the server stays up');
  t.equal(JSON.stringify((await cluster.follower.list('Logical_Switch', [], ['name'], 'linearizable')).rows), before, 'the database is unchanged');
});

t.test('a transaction too large for one log entry: "resources exhausted", and writes go on', async (t) => {
  const { cluster, port } = await rawDoor(t);
  const c = await JsonRpcClient.connect({ host: '127.0.0.1', port });
  t.teardown(() => c.close());
  const blob = 'x'.repeat(nodeDefaults.entryBytesMax);
  const err = await c.request('transact', ['OVN_Northbound', { op: 'insert', table: 'Logical_Switch', row: { name: 'big', external_ids: ['map', [['blob', blob]]] } }]).catch((e: unknown) => e);
  t.match(err, { error: { error: 'resources exhausted', details: /too large for the log: an entry of \d+ bytes is over the \d+-byte bound on one log entry/ } }, 'refused, as ovsdb-server names a request over what it can hold');
  t.match(await c.request('transact', ['OVN_Northbound', { op: 'insert', table: 'Logical_Switch', row: { name: 'after' } }]), [{ uuid: ['uuid', String] }], 'a write after it commits');
  t.same((await cluster.follower.list('Logical_Switch', [], ['name'], 'linearizable')).rows.map((r) => (r as { name: string }).name), ['after'], 'nothing of the big one was written');
});

t.test('monitor_cond_since: resume gets only new changes; an unknown or compacted id gets everything', async (t) => {
  const { cluster, port } = await rawDoor(t, { revisionsMax: 4, bytesMax: 1 << 30 });
  const updates: unknown[] = [];
  const c = await JsonRpcClient.connect({ host: '127.0.0.1', port }, { onNotification: (method, params) => updates.push([method, params]) });
  t.teardown(() => c.close());
  const req = { Logical_Switch: [{ columns: ['name'] }] };
  await c.request('transact', ['OVN_Northbound', { op: 'insert', table: 'Logical_Switch', row: { name: 'a' } }]);
  const first = (await c.request('monitor_cond_since', ['OVN_Northbound', 'm1', req, '00000000-0000-0000-0000-000000000000'])) as [boolean, string, Record<string, Record<string, unknown>>];
  t.equal(first[0], false, 'no last id: not found');
  t.same(Object.values(first[2]['Logical_Switch'] ?? {}), [{ initial: { name: 'a' } }]);
  const lastId = first[1];
  await c.request('transact', ['OVN_Northbound', { op: 'insert', table: 'Logical_Switch', row: { name: 'b' } }]);
  t.match(updates.at(-1), ['update3', ['m1', String, { Logical_Switch: {} }]], 'a live update3 arrived before the reply');
  await c.request('monitor_cancel', ['m1']);

  // Resume on another member's door from the id the first one gave.
  const other = cluster.members.find((m) => m !== cluster.follower) as CentralNode;
  const door2 = await startOvsdbDoor({ central: other, listen: { host: '127.0.0.1', port: 0 } });
  t.teardown(() => door2.close());
  const c2 = await JsonRpcClient.connect({ host: '127.0.0.1', port: (door2.address as { port: number }).port });
  t.teardown(() => c2.close());
  const resumed = (await c2.request('monitor_cond_since', ['OVN_Northbound', 'm2', req, lastId])) as [boolean, string, Record<string, Record<string, unknown>>];
  t.equal(resumed[0], true, 'found on another member');
  t.same(Object.values(resumed[2]['Logical_Switch'] ?? {}), [{ insert: { name: 'b' } }], 'only the change after the id');

  for (let i = 0; i < 6; i++) await c.request('transact', ['OVN_Northbound', { op: 'insert', table: 'Logical_Switch', row: { name: `x${i}` } }]);
  const compacted = (await c.request('monitor_cond_since', ['OVN_Northbound', 'm3', req, lastId])) as [boolean, string, Record<string, Record<string, unknown>>];
  t.equal(compacted[0], false, 'compacted: not found');
  t.equal(Object.keys(compacted[2]['Logical_Switch'] ?? {}).length, 8, 'and the full contents');
  const unknown = (await c.request('monitor_cond_since', ['OVN_Northbound', 'm4', req, txnIdOf(1e9)])) as [boolean, string, unknown];
  t.equal(unknown[0], false, 'an id from the future is not found');
});

t.test('_Server follows a leadership change: the monitor reports leader: true on the new leader', async (t) => {
  const { cluster, port } = await rawDoor(t);
  const notes: [string, unknown][] = [];
  let wake: () => void = () => undefined;
  const c = await JsonRpcClient.connect({ host: '127.0.0.1', port }, { onNotification: (m, p) => { notes.push([m, p]); wake(); } });
  t.teardown(() => c.close());
  const init = (await c.request('monitor_cond', ['_Server', 's', { Database: [{ columns: ['name', 'leader', 'connected'], where: [['name', '==', 'OVN_Northbound']] }] }])) as { Database: Record<string, { initial: Record<string, unknown> }> };
  t.same(Object.values(init.Database).map((r) => r.initial), [{ name: 'OVN_Northbound', connected: true }], 'a follower: leader false (a default, so omitted)');
  const leader = cluster.members.find((m) => m.node.status().role === 'leader') as CentralNode;
  t.match(leader.node.transferLeadership(cluster.follower.id), { kind: 'started' });
  const becameLeader = (): boolean => notes.some(([m, p]) => m === 'update2' && JSON.stringify(p).includes('"leader":true'));
  while (!becameLeader()) await new Promise<void>((resolve) => (wake = resolve));
  t.pass('update2 with leader: true after the transfer');
});

t.test('_Server is current when read: a door opened before its member led answers connected and leader at once', async (t) => {
  const net = new LocalNetwork('door-early');
  const central = await CentralNode.start({ id: 1, clusterId: 'door-early', dataDir: join(testdirAfterTeardowns(t), 'n1'), transport: net.transport(1), peers: new Map([[1, 'local:1']]), bootstrap: [1], tickMs: 10, projection: null });
  // No periodic refresh within the test: only a read itself can bring the row up to date.
  const door = await startOvsdbDoor({ central, listen: { host: '127.0.0.1', port: 0 }, limits: { serverStatusMs: 600_000 } });
  t.teardown(async () => {
    await door.close();
    await central.stop();
  });
  for (let i = 0; central.node.leadership().role !== 'leader'; i++) {
    if (i > 1000) throw new Error('the one member did not lead within 10 s');
    await new Promise((r) => setTimeout(r, 10));
  }
  const c = await JsonRpcClient.connect({ host: '127.0.0.1', port: (door.address as { port: number }).port });
  t.teardown(() => c.close());
  const init = (await c.request('monitor_cond', ['_Server', 's', { Database: [{ columns: ['name', 'leader', 'connected'] }] }])) as { Database: Record<string, { initial: Record<string, unknown> }> };
  t.same(Object.values(init.Database).map((r) => r.initial), [{ name: 'OVN_Northbound', connected: true, leader: true }]);
});
