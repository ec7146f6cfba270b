// Remotes from the database: a door run with remotesFromDb listens where the Connection rows
// say, as ovsdb-server run with --remote=db:OVN_Northbound,NB_Global,connections does. The real
// ovn-nbctl and ovn-sbctl write the rows (set-connection, set, del-connection) and then use the
// listeners they opened; read_only rows refuse writes with ovsdb-server's error; targets the door
// cannot serve are reported, never fatal.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { LocalNetwork } from '../../cluster/local-transport.js';
import { CentralNode } from '../../server/central-node.js';
import type { OvsdbDoor, RemoteStatus } from '../../server/ovsdb-door.js';
import { startOvsdbDoor } from '../../server/ovsdb-door.js';
import { NorthboundClient } from '../../server/northbound-service.js';
import { JsonRpcClient } from '../helpers/jsonrpc-client.js';
import { runTool, type CliResult } from '../helpers/ovnts-cli.js';
import { ovntsArgv } from '../helpers/ovnts-bin.js';
import { stopPid } from '../helpers/process.js';
import { freePort } from '../helpers/raft-kv-cluster.js';
import { testdirAfterTeardowns } from '../helpers/testdir.js';

const haveTools = existsSync('/usr/bin/ovn-nbctl') && existsSync('/usr/bin/ovn-sbctl');

type Run = CliResult;
const run = runTool;


/** Whether something accepts TCP connections on the loopback port. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const c = net.connect(port, '127.0.0.1');
    c.once('connect', () => {
      c.destroy();
      resolve(true);
    });
    c.once('error', () => resolve(false));
  });
}

/** Polls the door's remotes until `ok` holds of them (listeners open and close asynchronously). */
async function remotesUntil(door: OvsdbDoor, ok: (r: RemoteStatus[]) => boolean): Promise<RemoteStatus[]> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const r = door.remotes();
    if (ok(r) || Date.now() > deadline) return r;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

interface Fixture {
  central: CentralNode;
  nb: OvsdbDoor;
  sb: OvsdbDoor;
  errors: string[];
}

async function start(t: { teardown(fn: () => unknown): void }): Promise<Fixture> {
  const network = new LocalNetwork('door-remotes');
  const dir = mkdtempSync(join(tmpdir(), 'door-remotes-'));
  const central = await CentralNode.start({ id: 1, clusterId: 'door-remotes', dataDir: join(dir, 'n1'), transport: network.transport(1), peers: new Map([[1, 'local:1']]), bootstrap: [1], tickMs: 10 });
  await central.transact([{ op: 'insert', table: 'NB_Global', row: {} }]);
  const errors: string[] = [];
  const onRemoteError = (target: string, reason: string): void => void errors.push(`${target}: ${reason}`);
  const nb = await startOvsdbDoor({ central, listen: { host: '127.0.0.1', port: 0 }, remotesFromDb: true, onRemoteError });
  const sb = await startOvsdbDoor({ central, listen: { host: '127.0.0.1', port: 0 }, remotesFromDb: true, onRemoteError, db: 'OVN_Southbound' });
  t.teardown(async () => {
    await nb.close();
    await sb.close();
    await central.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  return { central, nb, sb, errors };
}

const portOf = (door: OvsdbDoor): number => (door.address as { port: number }).port;

t.test('ovn-nbctl set-connection opens listeners, del-connection closes them and their connections', { skip: haveTools ? false : 'ovn-nbctl is not installed' }, async (t) => {
  const { nb } = await start(t);
  const main = `tcp:127.0.0.1:${portOf(nb)}`;
  const nbctl = (db: string, ...args: string[]): Promise<Run> => run('ovn-nbctl', [`--db=${db}`, '--timeout=20', ...args]);
  const p1 = await freePort();
  const p2 = await freePort();
  t.equal(await accepts(p1), false, 'nothing listens on the port before the row');

  const set = await nbctl(main, 'set-connection', `ptcp:${p1}:127.0.0.1`, `ptcp:${p2}:127.0.0.1`);
  t.equal(set.code, 0, `set-connection: ${set.stderr}`);
  const open = await remotesUntil(nb, (r) => r.filter((x) => x.listening !== undefined).length === 2);
  t.same(open.map((r) => [r.target, r.listening, r.readOnly]), [
    [`ptcp:${p1}:127.0.0.1`, { host: '127.0.0.1', port: p1 }, false],
    [`ptcp:${p2}:127.0.0.1`, { host: '127.0.0.1', port: p2 }, false],
  ].sort(), 'both rows are listened on');
  const viaRow = `tcp:127.0.0.1:${p1}`;
  const add = await nbctl(viaRow, 'ls-add', 'sw-row');
  t.equal(add.code, 0, `ls-add through the row's listener: ${add.stderr}`);
  t.equal((await nbctl(main, 'ls-list')).stdout.includes('(sw-row)'), true, 'the write is the same database');

  const other = await nbctl(`tcp:127.0.0.1:${p2}`, 'ls-add', 'sw-other');
  t.equal(other.code, 0, `the other row's listener writes too: ${other.stderr}`);
  let onClose: () => void = () => undefined;
  const closed = new Promise<void>((resolve) => (onClose = resolve));
  const c = await JsonRpcClient.connect({ host: '127.0.0.1', port: p1 }, { onClose: () => onClose() });
  t.same(await c.request('list_dbs', []), ['OVN_Northbound', '_Server']);

  // del-connection: both listeners close, and their connections end.
  const del = await nbctl(main, 'del-connection');
  t.equal(del.code, 0, `del-connection: ${del.stderr}`);
  t.same(await remotesUntil(nb, (r) => r.length === 0), [], 'no remotes once the rows are gone');
  await closed;
  t.pass('a connection to a removed remote is closed, as ovsdb-server closes it');
  t.equal(await accepts(p1), false, 'nothing listens there any more');
  t.equal(await accepts(p2), false);
  t.equal((await nbctl(main, 'ls-add', 'sw-after')).code, 0, 'the command-line listener is untouched');
});

t.test('ovn-sbctl set-connection opens a Southbound listener; read_only refuses writes there', { skip: haveTools ? false : 'ovn-sbctl is not installed' }, async (t) => {
  const { sb, nb } = await start(t);
  const sbctl = (db: string, ...args: string[]): Promise<Run> => run('ovn-sbctl', [`--db=${db}`, '--timeout=20', ...args]);
  const main = `tcp:127.0.0.1:${portOf(sb)}`;
  const p = await freePort();
  const set = await sbctl(main, 'set-connection', `ptcp:${p}:127.0.0.1`);
  t.equal(set.code, 0, `ovn-sbctl set-connection: ${set.stderr}`);
  const open = await remotesUntil(sb, (r) => r.some((x) => x.listening !== undefined));
  t.same(open, [{ target: `ptcp:${p}:127.0.0.1`, listening: { host: '127.0.0.1', port: p }, readOnly: false }]);
  t.same(nb.remotes(), [], "the Northbound door follows the Northbound's rows only");
  const viaRow = `tcp:127.0.0.1:${p}`;
  const list = await sbctl(viaRow, 'list', 'SB_Global');
  t.equal(list.code, 0, `ovn-sbctl through the new listener: ${list.stderr}`);
  t.match(list.stdout, /connections\s+: \[[0-9a-f-]{36}\]/);
  t.equal((await sbctl(viaRow, 'chassis-add', 'hv1', 'geneve', '192.0.2.1')).code, 0, 'a chassis registers through it');

  // read_only (a column of the Southbound's Connection table): writes there are refused with
  // ovsdb-server's error; reads work; the command-line listener is not affected.
  const ro = await sbctl(main, 'set', 'connection', '.', 'read_only=true');
  t.equal(ro.code, 0, `set read_only: ${ro.stderr}`);
  await remotesUntil(sb, (r) => r.some((x) => x.readOnly === true));
  const refused = await sbctl(viaRow, 'chassis-add', 'hv2', 'geneve', '192.0.2.2');
  t.not(refused.code, 0, 'a write through the read-only remote fails');
  t.match(refused.stderr, /not allowed/, `ovsdb-server's error: ${refused.stderr.trim()}`);
  const read = await sbctl(viaRow, '--columns=name', 'list', 'Chassis');
  t.equal(read.code, 0, 'reads still work there');
  t.match(read.stdout, /hv1/);
  t.notMatch((await sbctl(main, '--columns=name', 'list', 'Chassis')).stdout, /hv2/, 'the refused write changed nothing');
  t.equal((await sbctl(main, 'chassis-add', 'hv3', 'geneve', '192.0.2.3')).code, 0, 'the command-line listener still writes');
  const c = await JsonRpcClient.connect({ host: '127.0.0.1', port: p });
  const results = (await c.request('transact', ['OVN_Southbound', { op: 'select', table: 'Chassis', where: [['name', '==', 'hv1']], columns: ['name'] }, { op: 'delete', table: 'Chassis', where: [] }, { op: 'comment', comment: 'after' }])) as unknown[];
  t.same(results, [{ rows: [{ name: 'hv1' }] }, { error: 'not allowed', details: 'delete operation not allowed when database server is in read only mode' }, null], 'the reads before the write are answered, the rest null');
  await c.close();
});

t.test('targets the door cannot serve are reported once each and change nothing else', async (t) => {
  const { nb, errors, central } = await start(t);
  const busy = net.createServer();
  await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => busy.close(() => resolve())));
  const taken = (busy.address() as net.AddressInfo).port;
  const good = await freePort();
  const targets = ['pssl:6641', 'tcp:192.0.2.1:6641', `ptcp:${taken}:127.0.0.1`, `ptcp:${good}:127.0.0.1`, 'nonsense'];
  const out = await central.transact([
    ...targets.map((target, i) => ({ op: 'insert', table: 'Connection', 'uuid-name': `c${i}`, row: { target } })),
    { op: 'update', table: 'NB_Global', where: [], row: { connections: ['set', targets.map((_, i) => ['named-uuid', `c${i}`])] } },
  ]);
  t.equal(out.failed, false);
  const r = await remotesUntil(nb, (x) => x.length === targets.length);
  const byTarget = new Map(r.map((x) => [x.target, x]));
  t.match(byTarget.get('pssl:6641')?.error, /pssl: needs a private key, a certificate and a CA certificate.*or the database's SSL row/, 'pssl: without SSL settings (no flags, no SSL row)');
  t.match(byTarget.get('tcp:192.0.2.1:6641')?.error, /active remotes/);
  t.match(byTarget.get(`ptcp:${taken}:127.0.0.1`)?.error, /cannot listen: .*EADDRINUSE/);
  t.match(byTarget.get('nonsense')?.error, /expected ptcp/);
  t.same(byTarget.get(`ptcp:${good}:127.0.0.1`)?.listening, { host: '127.0.0.1', port: good }, 'the servable one listens all the same');
  t.equal(errors.length, 4, 'each failure reported once');
  // A change to another column of the rows reports nothing again.
  await central.transact([{ op: 'update', table: 'Connection', where: [], row: { inactivity_probe: 60000 } }]);
  await new Promise((resolve) => setTimeout(resolve, 100));
  t.equal(errors.length, 4, 'not reported again on an unrelated change');
  // The listener that worked serves the protocol.
  const c = await JsonRpcClient.connect({ host: '127.0.0.1', port: good });
  t.same(await c.request('list_dbs', []), ['OVN_Northbound', '_Server']);
  await c.close();
});

t.test('a door with no command-line listener serves only what the rows say', async (t) => {
  const network = new LocalNetwork('door-remotes-only');
  const dir = mkdtempSync(join(tmpdir(), 'door-remotes-only-'));
  const central = await CentralNode.start({ id: 1, clusterId: 'door-remotes-only', dataDir: join(dir, 'n1'), transport: network.transport(1), peers: new Map([[1, 'local:1']]), bootstrap: [1], tickMs: 10, projection: null });
  const p = await freePort();
  await central.transact([
    { op: 'insert', table: 'Connection', 'uuid-name': 'c', row: { target: `ptcp:${p}:127.0.0.1` } },
    { op: 'insert', table: 'NB_Global', row: { connections: ['named-uuid', 'c'] } },
  ]);
  // Rows already there when the door starts are listened on before it returns.
  const door = await startOvsdbDoor({ central, remotesFromDb: true });
  t.teardown(async () => {
    await door.close();
    await central.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  t.equal(door.address, undefined);
  t.same(door.remotes(), [{ target: `ptcp:${p}:127.0.0.1`, listening: { host: '127.0.0.1', port: p }, readOnly: false }]);
  t.equal(await accepts(p), true);
  await t.rejects(startOvsdbDoor({ central }), /needs a listener or remotesFromDb/, 'a door with nowhere to listen is refused');
});

t.test('ovnts central --ovsdb-remotes-from-db: a member with no --ovsdb listens where the rows say', async (t) => {
  const dir = testdirAfterTeardowns(t);
  const [raftPort, grpcPort, rowPort] = [await freePort(), await freePort(), await freePort()];
  const [node, argv] = ovntsArgv('central', '--name=n1', `--data-dir=${join(dir, 'n1')}`, `--peers=n1=127.0.0.1:${raftPort}`, `--nb-peers=n1=127.0.0.1:${grpcPort}`, '--ovsdb-remotes-from-db');
  const child = spawn(node, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  t.teardown(() => (child.pid === undefined ? undefined : stopPid(child.pid, (a) => a.includes('central'))));
  const until = async (what: string, ok: () => boolean | Promise<boolean>): Promise<void> => {
    const deadline = Date.now() + 20_000;
    while (!(await ok())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; stderr: ${stderr}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  await until('the member to be ready', () => stdout.includes('"ready"'));
  const nb = new NorthboundClient(`127.0.0.1:${grpcPort}`);
  t.teardown(() => nb.close());
  const out = await nb.transact([
    { op: 'insert', table: 'Connection', 'uuid-name': 'c', row: { target: `ptcp:${rowPort}:127.0.0.1` } },
    { op: 'insert', table: 'Connection', 'uuid-name': 'd', row: { target: 'pssl:6641' } },
    { op: 'insert', table: 'NB_Global', row: { connections: ['set', [['named-uuid', 'c'], ['named-uuid', 'd']]] } },
  ]);
  t.equal(out.failed, false);
  await until('the row\'s listener', () => accepts(rowPort));
  const c = await JsonRpcClient.connect({ host: '127.0.0.1', port: rowPort });
  t.same(await c.request('list_dbs', []), ['OVN_Northbound', '_Server'], 'the NB door answers there');
  await c.close();
  await until('the pssl: target to be reported', () => stderr.includes('pssl:6641'));
  t.match(stderr, /central n1: OVN_Northbound Connection pssl:6641: cannot listen: pssl: needs a private key/, 'the target it cannot serve (no SSL settings), on stderr');
  await nb.transact([{ op: 'update', table: 'NB_Global', where: [], row: { connections: ['set', []] } }]);
  await until('the listener to close', async () => !(await accepts(rowPort)));
  t.pass('the listener closes when the row goes');
});
