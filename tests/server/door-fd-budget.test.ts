// Goal: connections cannot take a member's file descriptors away from its storage. A member
// allowed few descriptors (ulimit -n 512), whose NB OVSDB door is flooded with clients that
// answer the inactivity probe and so stay, and whose gRPC and Raft ports are flooded with
// connections that never speak, turns the connections past each listener's share away, and
// goes on writing: its LevelDB opens the files a few megabytes of writes need, nothing stops,
// every write is there, and once the flood leaves new clients are served.
// Method: `ovnts up --nodes 1` under `prlimit --nofile=512:512` (the member inherits it); a gRPC
// client connected before the flood writes during it. Without the caps the member stopped:
// "save: IO error: .../000004.log: Too many open files".
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import net from 'node:net';
import { promisify } from 'node:util';
import t from 'tap';
import { connectionsMaxFor } from '../../server/listen-budget.js';
import { NorthboundClient } from '../../server/northbound-service.js';
import { ovntsArgv } from '../helpers/ovnts-bin.js';
import { freeBasePort, readUpEnv, until } from '../helpers/ovnts-cli.js';
import { JsonRpcClient } from '../helpers/jsonrpc-client.js';
import { processState, stopPid } from '../helpers/process.js';
import { testdirAfterTeardowns } from '../helpers/testdir.js';

const run = promisify(execFile);
const OPEN_FILES = 512;
/** The Raft port's connectionsMax (GrpcTransport's default). */
const RAFT_CONNECTIONS_MAX = 64;
const FLOOD = 300;

t.test('connectionsMaxFor: a share of the process limit, with room kept for the member', async (t) => {
  t.equal(connectionsMaxFor(20_000), 6496, '20,000 descriptors: 6,496 for each of the three listeners');
  t.equal(connectionsMaxFor(1024), 170, 'the usual 1,024: 170 each');
  t.equal(connectionsMaxFor(100), 64, 'never below 64');
  t.equal(connectionsMaxFor(undefined), 8192, 'unknown: 8,192');
});

/** A client that connects and answers every echo, as a live IDL does, and never leaves. */
function stayingClient(port: number, counts: { connected: number; closed: number }): net.Socket {
  const s = net.connect(port, '127.0.0.1');
  s.on('connect', () => counts.connected++);
  s.on('close', () => counts.closed++);
  s.on('error', () => undefined);
  let buf = '';
  s.on('data', (d: Buffer) => {
    buf += d.toString();
    for (let m = /\{"id":("[^"]*"|\d+),"method":"echo","params":\[\]\}/.exec(buf); m !== null; m = /\{"id":("[^"]*"|\d+),"method":"echo","params":\[\]\}/.exec(buf)) {
      s.write(JSON.stringify({ id: JSON.parse(m[1] as string) as unknown, result: [], error: null }));
      buf = buf.slice(m.index + m[0].length);
    }
  });
  return s;
}

t.test('a member with 512 descriptors outlives a flood of connections to all its ports', { skip: existsSync('/usr/bin/prlimit') ? false : 'prlimit (util-linux) is missing' }, async (t) => {
  const dir = testdirAfterTeardowns(t);
  const base = await freeBasePort();
  const [node, argv] = ovntsArgv('up', `--data-dir=${dir}`, `--base-port=${base}`, '--nodes=1', '--detach');
  await run('/usr/bin/prlimit', [`--nofile=${OPEN_FILES}:${OPEN_FILES}`, '--', node, ...argv], { timeout: 60_000 });
  const env = readUpEnv(dir);
  const pid = env.pids[0] as number;
  t.teardown(() => stopPid(pid, (a) => a.includes('central')));
  const nb = new NorthboundClient(env.nbGrpc[0] as string);
  t.teardown(() => nb.close());
  t.equal((await nb.transact([{ op: 'insert', table: 'Logical_Switch', row: { name: 'before' } }])).failed, false, 'a write before the flood');

  const doorPort = Number((env.nbOvsdb[0] as string).split(':')[2]);
  const counts = { connected: 0, closed: 0 };
  const flood: net.Socket[] = [];
  t.teardown(() => {
    for (const s of flood) s.destroy();
  });
  for (let i = 0; i < FLOOD; i++) {
    flood.push(stayingClient(doorPort, counts));
    if (i % 50 === 49) await new Promise((r) => setTimeout(r, 20));
  }
  // And connections to the gRPC and Raft ports that never speak (each holds a descriptor until
  // HTTP/2 gives up on it).
  const silent = async (port: number): Promise<{ connected: number; closed: number }> => {
    const c = { connected: 0, closed: 0 };
    for (let i = 0; i < FLOOD; i++) {
      const s = net.connect(port, '127.0.0.1');
      s.on('connect', () => c.connected++);
      s.on('close', () => c.closed++);
      s.on('error', () => undefined);
      flood.push(s);
      if (i % 50 === 49) await new Promise((r) => setTimeout(r, 20));
    }
    return c;
  };
  const grpcCounts = await silent(Number((env.nbGrpc[0] as string).split(':')[1]));
  // `up` puts member n's Raft port at base + 10 + n.
  const raftCounts = await silent(base + 11);
  await until('every flood connection settled', async () => (counts.connected >= FLOOD && grpcCounts.connected >= FLOOD && raftCounts.connected >= FLOOD ? true : undefined), 20_000);
  // Past its share the door closed them; the rest stay (they answer the probes).
  await new Promise((r) => setTimeout(r, 1000));
  const held = counts.connected - counts.closed;
  t.ok(held > 0 && held <= connectionsMaxFor(OPEN_FILES), `the door holds ${held} of ${FLOOD}, at most ${connectionsMaxFor(OPEN_FILES)}`);
  const grpcHeld = grpcCounts.connected - grpcCounts.closed;
  t.ok(grpcHeld <= connectionsMaxFor(OPEN_FILES), `the gRPC port holds ${grpcHeld} of ${FLOOD}, at most ${connectionsMaxFor(OPEN_FILES)}`);
  const raftHeld = raftCounts.connected - raftCounts.closed;
  t.ok(raftHeld <= RAFT_CONNECTIONS_MAX, `the Raft port holds ${raftHeld} of ${FLOOD}, at most ${RAFT_CONNECTIONS_MAX}`);
  const metrics = await (await fetch(`${env.metrics[0] as string}/metrics`)).text();
  for (const listener of ['ovsdb', 'grpc', 'raft']) {
    const refused = Number(new RegExp(`^ovnts_connections_refused\\{listener="${listener}"\\} (\\d+)`, 'm').exec(metrics)?.[1] ?? -1);
    t.ok(refused > 0, `/metrics counts ${refused} ${listener} connections refused`);
  }

  // About 3 MiB of writes: LevelDB flushes its 1 MiB write buffer into new table files.
  const note = 'x'.repeat(1000);
  for (let i = 0; i < 30; i++) {
    const ops = Array.from({ length: 100 }, (_, j) => ({ op: 'insert', table: 'Logical_Switch', row: { name: `f${i}-${j}`, external_ids: ['map', [['note', note]]] } }));
    const out = await nb.transact(ops);
    if (out.failed) {
      t.fail(`write ${i} failed: ${JSON.stringify(out.results.find((r) => r !== null && typeof r === 'object' && 'error' in r))}`);
      break;
    }
  }
  t.not(processState(pid), undefined, 'the member is alive');
  t.not(processState(pid), 'Z', 'and not a zombie');
  const rows = (await nb.list('Logical_Switch', [], { columns: ['name'] })).rows;
  t.equal(rows.length, 1 + 30 * 100, 'every write is there');

  for (const s of flood) s.destroy();
  const fresh = await until('a fresh OVSDB client served', async () => {
    const c = await JsonRpcClient.connect({ host: '127.0.0.1', port: doorPort });
    try {
      return (await c.request('list_dbs', [])) as unknown;
    } finally {
      await c.close();
    }
  }, 20_000);
  t.same(fresh, ['OVN_Northbound', '_Server'], 'once the flood leaves, a new client is served');
  const late = new NorthboundClient(env.nbGrpc[0] as string);
  t.teardown(() => late.close());
  t.equal((await late.transact([{ op: 'insert', table: 'Logical_Switch', row: { name: 'after' } }])).failed, false, 'and a new gRPC client too');
});
