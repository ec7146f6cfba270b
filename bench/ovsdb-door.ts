// bench/ovsdb-door: the anchor script ../shared/anchors/bench-nb-txn.sh, run twice: once with
// EXTERNAL_NB at the OVSDB door of the leader of a 3-process `ovnts up --detach` cluster (started
// here in a temp folder, stopped by pid at the end), once on its own (it then starts the real
// 3-member clustered OVN_Northbound). Its drivers A (serial), B (32 pipelined) and C (1,000-op
// batches) of single-row Logical_Switch inserts are compared side by side (goals from issue 5).
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { JsonRpcClient } from '../tests/helpers/jsonrpc-client.js';
import { readUpEnv } from '../tests/helpers/ovnts-cli.js';
import { stopPid } from '../tests/helpers/process.js';
import { anchorsDir } from './lib/anchors.js';
import { measureCommitFloor, serialGoalBesideFloor } from './lib/commit-floor.js';
import { measureTransportCommitFloor } from './lib/grpc-commit-floor.js';
import { freeBasePort } from './lib/ports.js';
import { fmt, printFigures, printTable } from './lib/report.js';

const run = promisify(execFile);
const anchor = process.env.ANCHOR ?? join(anchorsDir, 'bench-nb-txn.sh');
const ovntsJs = fileURLToPath(new URL('../bin/ovnts.js', import.meta.url));
/** The anchor's spawn drivers (E, F: one process per transaction) are not compared: kept short. */
const nSpawn = process.env.N_SPAWN ?? '30';
const goals = { serial: 2, pipelined: 5, batched: 1 } as const;

/** One driver's JSON line, as bench-nb-txn.sh's driver prints it. */
interface DriverResult {
  readonly mode: string;
  readonly txns: number;
  readonly rows: number;
  readonly wall_s: number;
  readonly txn_per_s: number;
  readonly rows_per_s: number;
  readonly p50_ms: number;
  readonly p90_ms: number;
  readonly p99_ms: number;
  readonly max_ms: number;
}

/** The anchor's output: each driver's result under the letter of its "# X:" header. */
type AnchorResults = Map<string, DriverResult>;

/** Runs the anchor script to completion, echoing its output; resolves with its parsed results. */
function runAnchor(env: Record<string, string>, label: string): Promise<AnchorResults> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [anchor], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      process.stderr.write(`[${label}] ${d.toString().replace(/\n(?=.)/g, `\n[${label}] `)}`);
    });
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code !== 0) {
        reject(new Error(`${anchor} (${label}) exited with ${code}`));
        return;
      }
      const results: AnchorResults = new Map();
      let letter = '';
      for (const line of out.split('\n')) {
        const header = /^# ([A-F]'?):/.exec(line);
        if (header) letter = header[1] as string;
        else if (line.startsWith('{') && letter !== '') results.set(letter, JSON.parse(line) as DriverResult);
      }
      resolve(results);
    });
  });
}

/** The member whose door's _Server row says it leads; waits for an election. */
async function leaderRemote(remotes: readonly string[]): Promise<string> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    for (const remote of remotes) {
      const [, host, port] = /^tcp:([\d.]+):(\d+)$/.exec(remote) ?? [];
      const c = await JsonRpcClient.connect({ host: host as string, port: Number(port) });
      try {
        const [r] = (await c.request('transact', ['_Server', { op: 'select', table: 'Database', where: [['name', '==', 'OVN_Northbound']], columns: ['leader'] }])) as [{ rows: { leader: boolean }[] }];
        if (r.rows[0]?.leader === true) return remote;
      } finally {
        await c.close();
      }
    }
    if (Date.now() > deadline) throw new Error('no leader within 20 s');
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Runs the anchor against the door of the leader of a fresh `ovnts up --detach` cluster. */
async function ours(): Promise<{ results: AnchorResults; leader: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-ovsdb-door-'));
  let pids: number[] = [];
  try {
    await run(process.execPath, [ovntsJs, 'up', '--detach', '--data-dir', dir, '--base-port', String(await freeBasePort())]);
    const env = readUpEnv(dir);
    pids = env.pids;
    const leader = await leaderRemote(env.nbOvsdb);
    return { results: await runAnchor({ EXTERNAL_NB: leader }, 'ovnts'), leader };
  } finally {
    for (const pid of pids) await stopPid(pid, (argv) => argv.includes('central') && argv.some((x) => x.startsWith(`--data-dir=${dir}/`)));
    rmSync(dir, { recursive: true, force: true });
  }
}

if (!existsSync(anchor)) throw new Error(`${anchor} not found (set ANCHOR=...)`);
const floor = await measureCommitFloor(2000);
const hopsFloor = await measureTransportCommitFloor(2000, 'tcp');
const a = await ours();
const b = await runAnchor({ BASE_PORT: String(await freeBasePort()), N_SPAWN: nSpawn }, 'real');

const get = (r: AnchorResults, letter: string): DriverResult => {
  const x = r.get(letter);
  if (x === undefined) throw new Error(`the anchor printed no result for driver ${letter}`);
  return x;
};
const lat = (x: DriverResult): string => `${fmt(x.p50_ms, 2)} / ${fmt(x.p90_ms, 2)} / ${fmt(x.p99_ms, 2)} / ${fmt(x.max_ms, 2)}`;
const ratioOf = (x: number, y: number): number => x / y;
const rows: [string, DriverResult, DriverResult, (x: DriverResult) => number, string, number][] = [
  ['A serial: txn/s', get(a.results, 'A'), get(b, 'A'), (x) => x.txn_per_s, 'serial', goals.serial],
  ['B 32 pipelined: txn/s', get(a.results, 'B'), get(b, 'B'), (x) => x.txn_per_s, 'pipelined', goals.pipelined],
  ['C 1,000-op batches: rows/s', get(a.results, 'C'), get(b, 'C'), (x) => x.rows_per_s, 'batched', goals.batched],
];
printTable(`bench/ovsdb-door — ${anchor.split('/').at(-1) ?? anchor} drivers A-C: ovnts OVSDB door (leader of 3-process ovnts up) beside the real 3-member clustered OVN_Northbound`, [
  ['driver', 'ovnts door', 'real OVN', 'ratio', 'goal', 'met'],
  ...rows.flatMap(([name, x, y, f, , goal]) => [
    [name, fmt(f(x)), fmt(f(y)), `${fmt(ratioOf(f(x), f(y)), 2)}x`, `>= ${goal}x`, ratioOf(f(x), f(y)) >= goal ? 'yes' : 'NO'],
    ['  p50 / p90 / p99 / max ms', lat(x), lat(y), '', '', ''],
  ]),
]);
const follower = b.get("A'");
if (follower) process.stdout.write(`\nReal OVN, driver A' (serial through a follower): ${fmt(follower.txn_per_s)} txn/s, p50 ${fmt(follower.p50_ms, 2)} ms (not run on ovnts: EXTERNAL_NB gives the anchor one remote).\n`);
process.stdout.write(
  `\nNotes: the same script and driver (one TCP JSON-RPC connection) on both sides. ovnts: three\n` +
    '`ovnts central` processes (Raft over gRPC, LevelDB with fsync, the northd projection on every\n' +
    `member), the anchor pointed at the leader's door (${a.leader}). Real: ovsdb-server 3-member Raft started by the\n` +
    'anchor itself, ovn-northd paused. Drivers run A, B, C in order on one growing database. The\n' +
    'machine is shared and noisy: run it a few times and read the range.\n',
);
const besideFloor = serialGoalBesideFloor(floor, get(b, 'A').txn_per_s, goals.serial, { floor: hopsFloor, what: 'a client on raw TCP (as a JSON-RPC one, framing aside), the followers on gRPC streams' });
printTable('What bounds a serial commit on this machine (bench/lib/commit-floor.ts and grpc-commit-floor.ts, measured before the drivers, same run)', besideFloor.rows);
const [serial, pipelined, batched] = rows.map(([, x, y, f]) => ({ ours: f(x), real: f(y), ratio: ratioOf(f(x), f(y)) }));
printFigures({
  ...besideFloor.figures,
  serial_per_s: Math.round(serial?.ours ?? NaN),
  real_serial_per_s: Math.round(serial?.real ?? NaN),
  serial_ratio: Number((serial?.ratio ?? NaN).toFixed(3)),
  serial_p50_ms: get(a.results, 'A').p50_ms,
  pipelined_per_s: Math.round(pipelined?.ours ?? NaN),
  real_pipelined_per_s: Math.round(pipelined?.real ?? NaN),
  pipelined_ratio: Number((pipelined?.ratio ?? NaN).toFixed(3)),
  batched_rows_per_s: Math.round(batched?.ours ?? NaN),
  real_batched_rows_per_s: Math.round(batched?.real ?? NaN),
  batched_ratio: Number((batched?.ratio ?? NaN).toFixed(3)),
});
