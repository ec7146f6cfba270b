// bench/raft: three `ovnts raft-kv` processes on loopback (gRPC peer transport, LevelDB with
// fsync), 100-byte commands: one client serial, then 64 proposals in flight. Beside them the
// disk's fsync floor, the bare serial commit of three processes on this disk (no Raft), and a
// real 3-member clustered ovsdb-server (OVN_Northbound) doing
// single-row inserts the same two ways.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RaftKvCluster } from '../tests/helpers/raft-kv-cluster.js';
import { JsonRpcClient } from '../tests/helpers/jsonrpc-client.js';
import { measureCommitFloor } from './lib/commit-floor.js';
import { measureFsync } from './lib/fsync.js';
import { ovsdbServerInstalled } from './lib/ovs.js';
import { startRealNbCluster } from './lib/real-ovsdb-cluster.js';
import { fmt, median, percentile, printFigures, printTable } from './lib/report.js';

const serialN = Number(process.env.BENCH_SERIAL ?? 2000);
const concurrentN = Number(process.env.BENCH_CONCURRENT ?? 20_000);
const inFlight = Number(process.env.BENCH_IN_FLIGHT ?? 64);
const ovntsJs = fileURLToPath(new URL('../bin/ovnts.js', import.meta.url));

interface Figures {
  /** Raw Raft: proposals made on the leader itself (no client RPC per command). */
  readonly rawSerialPerS?: number;
  readonly rawSerialP50Ms?: number;
  readonly rawSerialP99Ms?: number;
  readonly rawConcurrentPerS?: number;
  readonly rawConcurrentP99Ms?: number;
  readonly serialPerS: number;
  readonly serialP50Ms: number;
  readonly serialP99Ms: number;
  readonly concurrentPerS: number;
  readonly concurrentP99Ms: number;
}

function figuresOf(serial: { perS: number; lat: number[] }, conc: { perS: number; lat: number[] }): Figures {
  return {
    serialPerS: serial.perS,
    serialP50Ms: median(serial.lat),
    serialP99Ms: percentile(serial.lat, 99),
    concurrentPerS: conc.perS,
    concurrentP99Ms: percentile(conc.lat, 99),
  };
}

async function drive(n: number, parallel: number, op: (i: number) => Promise<unknown>): Promise<{ perS: number; lat: number[] }> {
  const lat: number[] = [];
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < n) {
        const i = next++;
        const s = performance.now();
        await op(i);
        lat.push(performance.now() - s);
      }
    }),
  );
  return { perS: n / ((performance.now() - t0) / 1000), lat };
}

async function ours(): Promise<Figures> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-raft-kv-'));
  const cluster = await RaftKvCluster.start({ dir, ovnts: [process.execPath, ovntsJs] });
  const client = cluster.client();
  try {
    const value = Buffer.alloc(100, 'x');
    for (let i = 0; i < 200; i++) await client.put(`warm${i}`, value);
    const serial = await drive(serialN, 1, (i) => client.put(`s${i}`, value));
    const conc = await drive(concurrentN, inFlight, (i) => client.put(`c${i}`, value));
    const leader = await cluster.leader(client);
    const rawSerial = await client.load(leader, serialN, 1, 100);
    const rawConc = await client.load(leader, concurrentN * 2, inFlight, 100);
    return {
      rawSerialPerS: rawSerial.commitsPerS,
      rawSerialP50Ms: rawSerial.p50Ms,
      rawSerialP99Ms: rawSerial.p99Ms,
      rawConcurrentPerS: rawConc.commitsPerS,
      rawConcurrentP99Ms: rawConc.p99Ms,
      ...figuresOf(serial, conc),
    };
  } finally {
    client.close();
    await cluster.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function real(): Promise<Figures | undefined> {
  if (!ovsdbServerInstalled()) return undefined;
  const cluster = await startRealNbCluster('/usr/share/ovn/ovn-nb.ovsschema');
  const client = await JsonRpcClient.connect({ path: await cluster.leaderSocket() });
  try {
    const insert = (name: string): Promise<unknown> => client.request('transact', ['OVN_Northbound', { op: 'insert', table: 'Logical_Switch', row: { name } }]);
    for (let i = 0; i < 200; i++) await insert(`warm${i}`);
    const serial = await drive(serialN, 1, (i) => insert(`s${i}`));
    const conc = await drive(Math.min(concurrentN, 5000), inFlight, (i) => insert(`c${i}`));
    return figuresOf(serial, conc);
  } finally {
    await client.close();
    await cluster.stop();
  }
}

const fsync = measureFsync();
const floor = await measureCommitFloor(serialN);
const a = await ours();
const b = await real();
const ratio = (x: number, y: number | undefined): string => (y === undefined ? '' : `${fmt(x / y, 2)}x`);
printTable(`bench/raft — 3 processes on loopback, fsync on every persist; serial n=${fmt(serialN)}, ${inFlight} in flight n=${fmt(concurrentN)}`, [
  ['figure', 'ovnts raft-kv (100-byte put)', 'real OVSDB Raft (1-row insert)', 'ratio'],
  ['raw Raft serial commits/s (on leader)', fmt(a.rawSerialPerS ?? NaN), b ? fmt(b.serialPerS) : 'not installed', ratio(a.rawSerialPerS ?? NaN, b?.serialPerS)],
  ['raw Raft serial p50 / p99 ms', `${fmt(a.rawSerialP50Ms ?? NaN, 2)} / ${fmt(a.rawSerialP99Ms ?? NaN, 2)}`, b ? `${fmt(b.serialP50Ms, 2)} / ${fmt(b.serialP99Ms, 2)}` : '', ''],
  [`raw Raft ${inFlight} in flight commits/s`, fmt(a.rawConcurrentPerS ?? NaN), b ? fmt(b.concurrentPerS) : '', ratio(a.rawConcurrentPerS ?? NaN, b?.concurrentPerS)],
  [`raw Raft ${inFlight} in flight p99 ms`, fmt(a.rawConcurrentP99Ms ?? NaN, 2), b ? fmt(b.concurrentP99Ms, 2) : '', ''],
  ['through the gRPC door: serial commits/s', fmt(a.serialPerS), b ? fmt(b.serialPerS) : 'not installed', ratio(a.serialPerS, b?.serialPerS)],
  ['through the door: serial p50 / p99 ms', `${fmt(a.serialP50Ms, 2)} / ${fmt(a.serialP99Ms, 2)}`, b ? `${fmt(b.serialP50Ms, 2)} / ${fmt(b.serialP99Ms, 2)}` : '', ''],
  [`through the door: ${inFlight} in flight commits/s`, fmt(a.concurrentPerS), b ? fmt(b.concurrentPerS) : '', ratio(a.concurrentPerS, b?.concurrentPerS)],
  [`through the door: ${inFlight} in flight p99 ms`, fmt(a.concurrentP99Ms, 2), b ? fmt(b.concurrentP99Ms, 2) : '', ''],
  ['disk fsync p50 / p99 ms (floor)', `${fmt(fsync.p50Ms, 3)} / ${fmt(fsync.p99Ms, 3)}`, '', ''],
  ['bare serial commit, no Raft: commits/s', fmt(floor.leaderWaits.perS), '', ''],
  ['  p50 / p99 ms', `${fmt(floor.leaderWaits.p50Ms, 2)} / ${fmt(floor.leaderWaits.p99Ms, 2)}`, '', ''],
  ['  leader not waiting on its own write: commits/s', fmt(floor.followersOnly.perS), '', ''],
  ['  p50 / p99 ms', `${fmt(floor.followersOnly.p50Ms, 2)} / ${fmt(floor.followersOnly.p99Ms, 2)}`, '', ''],
]);
process.stdout.write(
  '\nNotes: "raw Raft" rows: the leader process proposes 100-byte puts to itself (RaftKv Load),\n' +
    'through the gRPC peer transport and fsync\'d LevelDB, committed and applied; no client RPC\n' +
    'per command. "Through the door" rows pay one grpc-js unary call per put from a client\n' +
    'process. The real side is a whole OVSDB transaction through a clustered ovsdb-server\n' +
    '(JSON-RPC on a unix socket), driven the same two ways. Goals for raw Raft: serial >= 3,000/s\n' +
    'with p99 < 3 ms, concurrent >= 30,000/s. "Bare serial commit" (bench/lib/commit-floor.ts):\n' +
    'three processes, 100-byte commands over raw loopback TCP, each appended and fdatasync\'d on\n' +
    'the leader and both followers, done once the leader\'s write and one follower\'s answer are;\n' +
    'no Raft, no gRPC, no LevelDB: the serial rate no implementation on this machine\'s one disk\n' +
    'can pass. Machines are shared and noisy: compare medians.\n',
);
printFigures({
  raw_serial_per_s: Math.round(a.rawSerialPerS ?? NaN),
  raw_serial_p50_ms: Number((a.rawSerialP50Ms ?? NaN).toFixed(3)),
  raw_serial_p99_ms: Number((a.rawSerialP99Ms ?? NaN).toFixed(3)),
  raw_concurrent_per_s: Math.round(a.rawConcurrentPerS ?? NaN),
  raw_concurrent_p99_ms: Number((a.rawConcurrentP99Ms ?? NaN).toFixed(3)),
  serial_per_s: Math.round(a.serialPerS),
  serial_p50_ms: Number(a.serialP50Ms.toFixed(3)),
  serial_p99_ms: Number(a.serialP99Ms.toFixed(3)),
  concurrent_per_s: Math.round(a.concurrentPerS),
  concurrent_p99_ms: Number(a.concurrentP99Ms.toFixed(3)),
  fsync_p50_ms: Number(fsync.p50Ms.toFixed(3)),
  floor_serial_per_s: Math.round(floor.leaderWaits.perS),
  floor_serial_p50_ms: Number(floor.leaderWaits.p50Ms.toFixed(3)),
  floor_followers_only_per_s: Math.round(floor.followersOnly.perS),
  real_serial_per_s: b ? Math.round(b.serialPerS) : 'na',
  real_serial_p50_ms: b ? Number(b.serialP50Ms.toFixed(3)) : 'na',
  real_concurrent_per_s: b ? Math.round(b.concurrentPerS) : 'na',
});
