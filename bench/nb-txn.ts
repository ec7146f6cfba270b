// bench/nb-txn: the anchor's NB write workload (../shared/anchors/bench-nb-txn.sh drivers A, A',
// B, C: single-row Logical_Switch inserts, serial, 32 in flight, 1000-op batches) through
// ovnts's Northbound gRPC API on a 3-process `ovnts up --detach` cluster, and the same drivers in
// this process over JSON-RPC against a real 3-member clustered OVN_Northbound ovsdb-server.
// Then the 10,000-port NB topology is loaded into both, and on fresh clusters holding only it,
// and each member's RSS is read.
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { NorthboundClient } from '../server/northbound-service.js';
import { JsonRpcClient } from '../tests/helpers/jsonrpc-client.js';
import { measureCommitFloor, serialGoalBesideFloor } from './lib/commit-floor.js';
import { measureTransportCommitFloor } from './lib/grpc-commit-floor.js';
import { drive, insert, ovsdbTxn as realTxn, type CpuMs, type Run, type Txn } from './lib/nb-drivers.js';
import { loadTopology, tenThousandPorts } from './lib/nb-workload.js';
import { ovsdbServerInstalled } from './lib/ovs.js';
import { startRealNbCluster } from './lib/real-ovsdb-cluster.js';
import { freeBasePort } from './lib/ports.js';
import { fmt, percentile, printFigures, printTable } from './lib/report.js';

const run = promisify(execFile);
const serialN = Number(process.env.N ?? 2000);
const inFlight = Number(process.env.W ?? 32);
const batchOps = Number(process.env.BATCH ?? 1000);
const batchTxns = 5;
const rssGoalMiB = 150;
/**
 * After the 10,000-port load, RSS is read at once and again after this long with the cluster
 * idle: a Node member holds the load's garbage until V8's memory reducer collects it and gives
 * pages back, which it does only once the process has been idle for a while (about 20-40 s here).
 */
const rssIdleS = Number(process.env.RSS_IDLE_S ?? 45);
const ovntsJs = fileURLToPath(new URL('../bin/ovnts.js', import.meta.url));

/** Clock ticks per second of /proc's utime and stime (USER_HZ, 100 on Linux). */
const ticksPerS = 100;

/**
 * CPU used so far by these processes (user + system, ms), split into each one's main thread
 * (the event loop) and its other threads (V8's compiler and GC helpers, libuv's pool; for
 * ovsdb-server its few helpers). Threads that ended are not counted.
 */
function cpuOf(pids: readonly number[]): CpuMs {
  let main = 0;
  let other = 0;
  for (const pid of pids) {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const ms = ((Number(fields[11]) + Number(fields[12])) * 1000) / ticksPerS;
      if (Number(tid) === pid) main += ms;
      else other += ms;
    }
  }
  return { main, other };
}

/** drive, with the members' CPU over the run. */
async function driveMeasured(pids: readonly number[] | undefined, ...args: Parameters<typeof drive>): Promise<Run> {
  const before = pids === undefined ? undefined : cpuOf(pids);
  const r = await drive(...args);
  if (pids === undefined || before === undefined) return r;
  const after = cpuOf(pids);
  return { ...r, cpu: { main: after.main - before.main, other: after.other - before.other } };
}


interface Pass {
  readonly serial: Run;
  readonly serialFollower: Run | undefined;
  readonly pipelined: Run;
  readonly batched: Run;
}

interface Side extends Pass {
  /** The same drivers again, right after the first pass, on the same cluster. */
  readonly second: Pass;
  /** RSS of each member after the 10,000-port topology, leader first. */
  readonly rssMiB: readonly number[];
  /** The same, read again after rssIdleS seconds of idle (the topology-only clusters). */
  readonly idleRssMiB?: readonly number[];
  readonly loadS: number;
}

/** The anchor's drivers A, A', B, C in order; `pass` names their rows apart. CPU of `pids` per driver. */
async function passOf(pids: readonly number[] | undefined, leader: Txn, follower: Txn | undefined, pass: string, before?: (driver: 'B' | 'C') => Promise<void>): Promise<Pass> {
  const serial = await driveMeasured(pids, leader, serialN, 1, 1, `${pass}A`);
  const serialFollower = follower ? await driveMeasured(pids, follower, serialN, 1, 1, `${pass}Af`) : undefined;
  await before?.('B');
  const pipelined = await driveMeasured(pids, leader, serialN, inFlight, 1, `${pass}B`);
  await before?.('C');
  const batched = await driveMeasured(pids, leader, batchTxns, 1, batchOps, `${pass}C`);
  return { serial, serialFollower, pipelined, batched };
}

/**
 * The drivers twice on the same cluster: the first pass as the anchor runs them (a fresh
 * cluster, after 200 warm-up writes), then the same again. A member is a long-running Node
 * process whose V8 compiles the write path's functions as they get hot; its CPU per serial
 * write falls by about half over its first ~5,000 writes. The second pass shows the members
 * past most of that; ovsdb-server, compiled ahead of time, has no such phase, and runs both
 * passes too.
 */
async function runDrivers(pids: readonly number[], leader: Txn, follower: Txn | undefined, before?: (driver: 'B' | 'C') => Promise<void>): Promise<Omit<Side, 'rssMiB' | 'loadS'>> {
  await drive(leader, 200, 1, 1, 'warm');
  const first = await passOf(pids, leader, follower, '', before);
  const second = await passOf(pids, leader, follower, '2');
  return { ...first, second };
}

function rssMiBOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (m === null) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(m[1]) / 1024;
}

function readEnvFile(dir: string): { addresses: string[]; pids: number[]; metrics: string[] } {
  const text = readFileSync(join(dir, 'env'), 'utf8');
  const get = (k: string): string => new RegExp(`^${k}="([^"]*)"`, 'm').exec(text)?.[1] ?? '';
  return { addresses: get('NB_GRPC').split(',').filter(Boolean), pids: get('MEMBER_PIDS').split(' ').filter(Boolean).map(Number), metrics: get('METRICS').split(',').filter(Boolean) };
}

/** The leader's group-commit counters (server/nb-group-proposer.ts), from its /metrics. */
interface GroupCounts {
  readonly groups: number;
  readonly grouped: number;
  readonly single: number;
}

async function groupCounts(metricsUrl: string): Promise<GroupCounts> {
  const text = await (await fetch(`${metricsUrl}/metrics`)).text();
  const value = (name: string): number => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
  return { groups: value('ovnts_nb_group_entries'), grouped: value('ovnts_nb_grouped_txns'), single: value('ovnts_nb_single_txns') };
}

function oursTxn(client: NorthboundClient): Txn {
  return async (ops) => {
    const out = await client.transact(ops);
    if (out.failed) throw new Error(`transaction failed: ${JSON.stringify(out.results).slice(0, 500)}`);
  };
}

/**
 * The leader, found by trying: a follower forwards every write to the leader, so its serial
 * transactions take one more gRPC round trip. After a warm-up on every member, probes go
 * round-robin (so a growing database or a noisy neighbour weighs on all alike); the member with
 * the lowest median wins.
 */
async function findLeader(clients: readonly NorthboundClient[]): Promise<{ index: number; probeP50Ms: number[] }> {
  const txns = clients.map(oursTxn);
  for (const [i, txn] of txns.entries()) await drive(txn, 50, 1, 1, `warm-probe${i}`);
  const latMs: number[][] = clients.map(() => []);
  for (let round = 0; round < 100; round++) {
    for (const [i, txn] of txns.entries()) {
      const s = performance.now();
      await txn([insert(`probe${i}-${round}`)]);
      latMs[i]?.push(performance.now() - s);
    }
  }
  const probeP50Ms = latMs.map((l) => percentile(l, 50));
  return { index: probeP50Ms.indexOf(Math.min(...probeP50Ms)), probeP50Ms };
}

/** Runs fn on a fresh 3-member `ovnts up --detach` cluster, stopped with `ovnts down` after. */
async function withOursCluster<T>(fn: (clients: readonly NorthboundClient[], pids: readonly number[], metrics: readonly string[]) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-nb-txn-'));
  const base = await freeBasePort();
  const clients: NorthboundClient[] = [];
  try {
    await run(process.execPath, [ovntsJs, 'up', '--detach', '--data-dir', dir, '--base-port', String(base)]);
    const { addresses, pids, metrics } = readEnvFile(dir);
    for (const a of addresses) clients.push(new NorthboundClient(a));
    return await fn(clients, pids, metrics);
  } finally {
    for (const c of clients) c.close();
    await run(process.execPath, [ovntsJs, 'down', '--data-dir', dir]).catch((err: unknown) => process.stderr.write(`ovnts down failed: ${(err as Error).message}\n`));
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Loads the 10,000-port topology; once a linearizable read through every member answers, each has applied it. */
async function loadOurs(via: NorthboundClient, clients: readonly NorthboundClient[]): Promise<number> {
  const t0 = performance.now();
  await loadTopology(async (ops) => (await via.transact(ops)).results, tenThousandPorts);
  const loadS = (performance.now() - t0) / 1000;
  for (const c of clients) await c.list('NB_Global');
  return loadS;
}

async function ours(): Promise<Side & { leaderIndex: number; probeP50Ms: number[]; groupsB: GroupCounts }> {
  return withOursCluster(async (clients, pids, metrics) => {
    const { index: leaderIndex, probeP50Ms } = await findLeader(clients);
    const leader = clients[leaderIndex] as NorthboundClient;
    const follower = clients[(leaderIndex + 1) % clients.length] as NorthboundClient;
    const metricsUrl = metrics[leaderIndex] as string;
    const at = new Map<string, GroupCounts>();
    const drivers = await runDrivers(pids, oursTxn(leader), oursTxn(follower), async (driver) => {
      at.set(driver, await groupCounts(metricsUrl));
    });
    const b0 = at.get('B') as GroupCounts;
    const b1 = at.get('C') as GroupCounts;
    const groupsB = { groups: b1.groups - b0.groups, grouped: b1.grouped - b0.grouped, single: b1.single - b0.single };
    const loadS = await loadOurs(leader, clients);
    const order = [leaderIndex, ...pids.keys()].filter((i, k, a) => a.indexOf(i) === k);
    return { ...drivers, rssMiB: order.map((i) => rssMiBOf(pids[i] as number)), loadS, leaderIndex, probeP50Ms, groupsB };
  });
}

/** The RSS goal's own setting: a fresh cluster holding only the 10,000-port NB (members n1..n3). */
async function oursTopologyOnly(): Promise<{ rssMiB: number[]; idleRssMiB: number[]; loadS: number }> {
  return withOursCluster(async (clients, pids) => {
    const loadS = await loadOurs(clients[0] as NorthboundClient, clients);
    const rssMiB = pids.map(rssMiBOf);
    await new Promise((resolve) => setTimeout(resolve, rssIdleS * 1000));
    return { rssMiB, idleRssMiB: pids.map(rssMiBOf), loadS };
  });
}

async function real(withDrivers: boolean, raftPortBase: number): Promise<Side | { rssMiB: number[]; idleRssMiB: number[]; loadS: number } | undefined> {
  if (!ovsdbServerInstalled()) return undefined;
  const cluster = await startRealNbCluster('/usr/share/ovn/ovn-nb.ovsschema', raftPortBase);
  const leaderSocket = await cluster.leaderSocket();
  const leader = await JsonRpcClient.connect({ path: leaderSocket });
  const followerMember = cluster.members.find((m) => m.socket !== leaderSocket);
  const follower = followerMember ? await JsonRpcClient.connect({ path: followerMember.socket }) : undefined;
  try {
    const drivers = withDrivers ? await runDrivers(cluster.members.map((m) => m.pid), realTxn(leader), follower ? realTxn(follower) : undefined) : undefined;
    const t0 = performance.now();
    await loadTopology(async (ops) => (await leader.request('transact', ['OVN_Northbound', ...ops])) as unknown[], tenThousandPorts);
    const loadS = (performance.now() - t0) / 1000;
    const order = [...cluster.members].sort((a, b) => Number(b.socket === leaderSocket) - Number(a.socket === leaderSocket));
    const rssMiB = order.map((m) => rssMiBOf(m.pid));
    if (drivers) return { ...drivers, rssMiB, loadS };
    await new Promise((resolve) => setTimeout(resolve, rssIdleS * 1000));
    return { rssMiB, idleRssMiB: order.map((m) => rssMiBOf(m.pid)), loadS };
  } finally {
    await leader.close();
    await follower?.close();
    await cluster.stop();
  }
}

const perS = (r: Run): number => r.txns / r.wallS;
const rowsPerS = (r: Run): number => r.rows / r.wallS;
const ms = (x: number): string => fmt(x, 2);
const latRow = (r: Run | undefined): string => (r === undefined ? '' : `${ms(percentile(r.latMs, 50))} / ${ms(percentile(r.latMs, 90))} / ${ms(percentile(r.latMs, 99))} / ${ms(Math.max(...r.latMs))}`);
const ratio = (x: number, y: number | undefined): string => (y === undefined || !Number.isFinite(x) ? '' : `${fmt(x / y, 2)}x`);
/** The members' CPU per transaction (ms, summed over the three): main threads / other threads. */
const cpuRow = (r: Run | undefined): string => (r?.cpu === undefined ? '' : `${ms(r.cpu.main / r.txns)} / ${ms(r.cpu.other / r.txns)}`);
const cpuPerTxn = (r: Run | undefined): number | string => (r?.cpu === undefined ? 'na' : Number(((r.cpu.main + r.cpu.other) / r.txns).toFixed(3)));

const floor = await measureCommitFloor(serialN);
const hopsFloor = await measureTransportCommitFloor(serialN, 'grpc');
const a = await ours();
const aTopology = await oursTopologyOnly();
const b = (await real(true, 26_750)) as Side | undefined;
const bTopology = await real(false, 26_780);
const na = b === undefined ? 'not installed' : '';
printTable(
  `bench/nb-txn — 3-node ovnts up (Northbound gRPC) beside real clustered OVN_Northbound (JSON-RPC, same drivers in this process); N=${fmt(serialN)}, W=${inFlight}, ${batchTxns} x ${fmt(batchOps)}-op batches`,
  [
    ['driver', 'ovnts', 'real OVN', 'ratio', 'goal'],
    ['A serial, leader: txn/s', fmt(perS(a.serial)), b ? fmt(perS(b.serial)) : na, ratio(perS(a.serial), b && perS(b.serial)), '>= 2x'],
    ['A p50 / p90 / p99 / max ms', latRow(a.serial), latRow(b?.serial), '', ''],
    ["A' serial, follower: txn/s", a.serialFollower ? fmt(perS(a.serialFollower)) : '', b?.serialFollower ? fmt(perS(b.serialFollower)) : na, ratio(a.serialFollower ? perS(a.serialFollower) : NaN, b?.serialFollower && perS(b.serialFollower)), ''],
    ["A' p50 / p90 / p99 / max ms", latRow(a.serialFollower), latRow(b?.serialFollower), '', ''],
    [`B ${inFlight} in flight: txn/s`, fmt(perS(a.pipelined)), b ? fmt(perS(b.pipelined)) : na, ratio(perS(a.pipelined), b && perS(b.pipelined)), '>= 5x'],
    ['B p50 / p90 / p99 / max ms', latRow(a.pipelined), latRow(b?.pipelined), '', ''],
    [`C batched ${fmt(batchOps)} ops: rows/s`, fmt(rowsPerS(a.batched)), b ? fmt(rowsPerS(b.batched)) : na, ratio(rowsPerS(a.batched), b && rowsPerS(b.batched)), '>= 1x'],
    ['C per-txn p50 / p90 / p99 / max ms', latRow(a.batched), latRow(b?.batched), '', ''],
    ['members\' CPU ms per txn, main / other threads: A', cpuRow(a.serial), cpuRow(b?.serial), '', ''],
    ['  B', cpuRow(a.pipelined), cpuRow(b?.pipelined), '', ''],
    ['  C', cpuRow(a.batched), cpuRow(b?.batched), '', ''],
    ['second pass, same cluster: A serial txn/s', fmt(perS(a.second.serial)), b ? fmt(perS(b.second.serial)) : na, ratio(perS(a.second.serial), b && perS(b.second.serial)), '>= 2x'],
    ['  A p50 / p90 / p99 / max ms', latRow(a.second.serial), latRow(b?.second.serial), '', ''],
    ["  A' serial, follower: txn/s", a.second.serialFollower ? fmt(perS(a.second.serialFollower)) : '', b?.second.serialFollower ? fmt(perS(b.second.serialFollower)) : na, ratio(a.second.serialFollower ? perS(a.second.serialFollower) : NaN, b?.second.serialFollower && perS(b.second.serialFollower)), ''],
    [`  B ${inFlight} in flight: txn/s`, fmt(perS(a.second.pipelined)), b ? fmt(perS(b.second.pipelined)) : na, ratio(perS(a.second.pipelined), b && perS(b.second.pipelined)), '>= 5x'],
    [`  C batched ${fmt(batchOps)} ops: rows/s`, fmt(rowsPerS(a.second.batched)), b ? fmt(rowsPerS(b.second.batched)) : na, ratio(rowsPerS(a.second.batched), b && rowsPerS(b.second.batched)), '>= 1x'],
    ['  members\' CPU ms per txn, main / other threads: A', cpuRow(a.second.serial), cpuRow(b?.second.serial), '', ''],
    ['    B', cpuRow(a.second.pipelined), cpuRow(b?.second.pipelined), '', ''],
    ['    C', cpuRow(a.second.batched), cpuRow(b?.second.batched), '', ''],
    ['10,000-port NB alone, fresh cluster: load s', fmt(aTopology.loadS, 2), bTopology ? fmt(bTopology.loadS, 2) : na, '', ''],
    ['  then RSS MiB per member, at once', aTopology.rssMiB.map((x) => fmt(x)).join(' / '), bTopology ? bTopology.rssMiB.map((x) => fmt(x)).join(' / ') : na, '', ''],
    [`  and after ${rssIdleS} s idle`, aTopology.idleRssMiB.map((x) => fmt(x)).join(' / '), bTopology?.idleRssMiB ? bTopology.idleRssMiB.map((x) => fmt(x)).join(' / ') : na, '', `<= ${rssGoalMiB}`],
    ['after A..C: 10,000-port NB load s', fmt(a.loadS, 2), b ? fmt(b.loadS, 2) : na, '', ''],
    ['  then RSS MiB, leader / others', a.rssMiB.map((x) => fmt(x)).join(' / '), b ? b.rssMiB.map((x) => fmt(x)).join(' / ') : na, '', ''],
  ],
);
const besideFloor = serialGoalBesideFloor(floor, b === undefined ? undefined : perS(b.serial), 2, { floor: hopsFloor, what: 'a client on a gRPC stream, the followers on gRPC streams' });
printTable('What bounds a serial commit on this machine (bench/lib/commit-floor.ts and grpc-commit-floor.ts, measured before the drivers, same run)', besideFloor.rows);
const gB = a.groupsB;
process.stdout.write(`\nGroup commit during B (the leader's counters): ${fmt(gB.grouped)} of ${fmt(gB.grouped + gB.single)} transactions went in ${fmt(gB.groups)} group entries (${fmt(gB.grouped / Math.max(1, gB.groups), 1)} per group), ${fmt(gB.single)} alone.\n`);
process.stdout.write(`\nLeader found by trying: n${a.leaderIndex + 1} (serial probe p50 ms per member: ${a.probeP50Ms.map((x) => fmt(x, 2)).join(' / ')}).\n`);
process.stdout.write(
  '\nNotes: ours is three `ovnts central` processes started by `ovnts up --detach` (Raft over gRPC,\n' +
    'LevelDB with fsync, the northd projection on every member), driven through NorthboundClient\n' +
    '(transactions pipelined on one TransactStreamBatched call per client: the transactions a\n' +
    'client has in one turn of its event loop share a message, as do the replies ready together;\n' +
    'each is still its own transaction); the leader was found by trying (followers forward).\n' +
    'The real side is ovsdb-server 3-member Raft, no ovn-northd, driven over JSON-RPC on its unix\n' +
    'socket by the same driver code (bench-nb-txn.sh itself was not run: it takes ~55 s; ovnts\'s\n' +
    'own OVSDB door is not driven here). Drivers run in order A, A\', B, C, then all four again\n' +
    '(the second pass: the members\' V8 has compiled more of the write path by then; the first\n' +
    'pass is what a freshly started cluster does), on one growing database (~22,500\n' +
    'switches), then the 10,000-port topology (bench/lib/\n' +
    'nb-workload.ts) is loaded on top. The RSS goal is read on a fresh cluster holding only that\n' +
    `topology, at once and again after ${rssIdleS} s idle (a member keeps the load's garbage until V8's\n` +
    'memory reducer runs, which it does once the process is idle; RSS_IDLE_S sets the wait).\n' +
    'RSS from /proc. Machines are shared and noisy: differences under ~15 % are noise.\n' +
    'Members\' CPU: user + system time of the three member processes over each driver, from\n' +
    '/proc/PID/task (10 ms ticks), per transaction: the main threads (the event loops) and the\n' +
    'rest (V8\'s compiler and GC helpers, libuv\'s pool; ovsdb-server\'s helpers). Two cores hold\n' +
    'all three and the driver: CPU per transaction bounds the rate.\n',
);
const fig = (r: Run | undefined, f: (r: Run) => number, digits = 0): number | string => (r === undefined ? 'na' : Number(f(r).toFixed(digits)));
printFigures({
  ...besideFloor.figures,
  serial_per_s: fig(a.serial, perS),
  serial_p50_ms: fig(a.serial, (r) => percentile(r.latMs, 50), 3),
  serial_p99_ms: fig(a.serial, (r) => percentile(r.latMs, 99), 3),
  follower_serial_per_s: fig(a.serialFollower, perS),
  pipelined_per_s: fig(a.pipelined, perS),
  pipelined_p99_ms: fig(a.pipelined, (r) => percentile(r.latMs, 99), 3),
  pipelined_txns_per_group: Number((gB.grouped / Math.max(1, gB.groups)).toFixed(1)),
  batched_rows_per_s: fig(a.batched, rowsPerS),
  batched_txn_p50_ms: fig(a.batched, (r) => percentile(r.latMs, 50), 3),
  load_10k_s: Number(aTopology.loadS.toFixed(3)),
  rss_10k_mib_max: Number(Math.max(...aTopology.rssMiB).toFixed(1)),
  rss_10k_idle_mib_max: Number(Math.max(...aTopology.idleRssMiB).toFixed(1)),
  rss_after_all_mib_max: Number(Math.max(...a.rssMiB).toFixed(1)),
  real_serial_per_s: fig(b?.serial, perS),
  real_serial_p99_ms: fig(b?.serial, (r) => percentile(r.latMs, 99), 3),
  real_follower_serial_per_s: fig(b?.serialFollower, perS),
  real_pipelined_per_s: fig(b?.pipelined, perS),
  real_batched_rows_per_s: fig(b?.batched, rowsPerS),
  real_rss_10k_mib_max: bTopology ? Number(Math.max(...bTopology.rssMiB).toFixed(1)) : 'na',
  real_rss_10k_idle_mib_max: bTopology?.idleRssMiB ? Number(Math.max(...bTopology.idleRssMiB).toFixed(1)) : 'na',
  real_rss_after_all_mib_max: b ? Number(Math.max(...b.rssMiB).toFixed(1)) : 'na',
  second_serial_per_s: fig(a.second.serial, perS),
  second_follower_serial_per_s: fig(a.second.serialFollower, perS),
  second_pipelined_per_s: fig(a.second.pipelined, perS),
  second_batched_rows_per_s: fig(a.second.batched, rowsPerS),
  real_second_serial_per_s: fig(b?.second.serial, perS),
  real_second_pipelined_per_s: fig(b?.second.pipelined, perS),
  real_second_batched_rows_per_s: fig(b?.second.batched, rowsPerS),
  serial_cpu_ms_per_txn: cpuPerTxn(a.serial),
  pipelined_cpu_ms_per_txn: cpuPerTxn(a.pipelined),
  batched_cpu_ms_per_txn: cpuPerTxn(a.batched),
  second_serial_cpu_ms_per_txn: cpuPerTxn(a.second.serial),
  real_serial_cpu_ms_per_txn: cpuPerTxn(b?.serial),
  real_pipelined_cpu_ms_per_txn: cpuPerTxn(b?.pipelined),
  real_batched_cpu_ms_per_txn: cpuPerTxn(b?.batched),
  serial_ratio: b ? Number((perS(a.serial) / perS(b.serial)).toFixed(3)) : 'na',
  pipelined_ratio: b ? Number((perS(a.pipelined) / perS(b.pipelined)).toFixed(3)) : 'na',
  batched_ratio: b ? Number((rowsPerS(a.batched) / rowsPerS(b.batched)).toFixed(3)) : 'na',
  second_serial_ratio: b ? Number((perS(a.second.serial) / perS(b.second.serial)).toFixed(3)) : 'na',
  second_pipelined_ratio: b ? Number((perS(a.second.pipelined) / perS(b.second.pipelined)).toFixed(3)) : 'na',
  second_batched_ratio: b ? Number((rowsPerS(a.second.batched) / rowsPerS(b.second.batched)).toFixed(3)) : 'na',
});
