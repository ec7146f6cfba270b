// Running the real `ovnts` command line from tests, and finding a free range of loopback ports
// for `ovnts up` (NB gRPC base+1.., Raft base+11.., OVSDB base+21..).
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Test } from 'tap';
import { JsonRpcClient } from './jsonrpc-client.js';
import { stopPid } from './process.js';

const run = promisify(execFile);
const bin = join(import.meta.dirname, '../../bin/ovnts.ts');

export interface CliResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `ovnts ARGS...` (through tsx) to completion; a non-zero exit is a result, not a throw. */
export async function ovnts(...args: string[]): Promise<CliResult> {
  try {
    const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', bin, ...args], { timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

/** A base port whose `ovnts up` ports for three members are all free now. */
export async function freeBasePort(): Promise<number> {
  for (let base = 27000 + (process.pid % 50) * 50; base < 60000; base += 50) {
    const ports = [1, 2, 3, 11, 12, 13, 21, 22, 23, 31, 32, 33, 41, 42, 43].map((d) => base + d);
    if ((await Promise.all(ports.map(portFree))).every(Boolean)) return base;
  }
  throw new Error('no free port range');
}

export interface UpEnv {
  /** Northbound gRPC addresses, member order. */
  readonly nbGrpc: string[];
  /** Southbound (agent stream) gRPC addresses, member order. */
  readonly sbGrpc: string[];
  /** OVSDB door remotes (tcp:IP:PORT), member order. */
  readonly nbOvsdb: string[];
  /** OVN_Southbound OVSDB door remotes, member order. */
  readonly sbOvsdb: string[];
  /** Member pids, member order. */
  readonly pids: number[];
  /** http://IP:PORT of each member's /healthz, /readyz and /metrics, member order. */
  readonly metrics: string[];
}

/** Reads the env file `ovnts up` wrote in dataDir. */
export function readUpEnv(dataDir: string): UpEnv {
  const env = readFileSync(join(dataDir, 'env'), 'utf8');
  const field = (name: string): string => new RegExp(`^${name}="([^"]*)"`, 'm').exec(env)?.[1] ?? '';
  return {
    nbGrpc: field('NB_GRPC').split(',').filter(Boolean),
    sbGrpc: field('SB_GRPC').split(',').filter(Boolean),
    nbOvsdb: field('NB_OVSDB').split(',').filter(Boolean),
    sbOvsdb: field('SB_OVSDB').split(',').filter(Boolean),
    pids: field('MEMBER_PIDS').split(' ').filter(Boolean).map(Number),
    metrics: field('METRICS').split(',').filter(Boolean),
  };
}

/**
 * `ovnts up --detach` on a free port range in `dir`, checked by `t`; the members are stopped by
 * pid when `t` ends (tap may remove the test folder, and with it the env file `ovnts down`
 * reads, before teardowns run).
 */
export async function upCluster(t: Test, dir: string): Promise<UpEnv> {
  const base = await freeBasePort();
  const up = await ovnts('up', `--data-dir=${dir}`, `--base-port=${base}`, '--detach');
  t.equal(up.code, 0, `up ${dir}: ${up.stderr}`);
  const env = readUpEnv(dir);
  t.teardown(async () => {
    for (const pid of env.pids) await stopPid(pid, (argv) => argv.includes('central'));
  });
  return env;
}

/** Which member leads, as each OVSDB door's _Server database says (member index, or -1). */
export async function leaderIndex(remotes: readonly string[], skip: ReadonlySet<number> = new Set()): Promise<number> {
  for (const [i, remote] of remotes.entries()) {
    if (skip.has(i)) continue;
    const m = /^tcp:([\d.]+):(\d+)$/.exec(remote);
    if (m === null) throw new Error(`unexpected OVSDB remote ${remote}`);
    const c = await JsonRpcClient.connect({ host: m[1] as string, port: Number(m[2]) });
    try {
      const [r] = (await c.request('transact', ['_Server', { op: 'select', table: 'Database', where: [], columns: ['leader'] }])) as [{ rows: { leader: boolean }[] }];
      if (r.rows[0]?.leader === true) return i;
    } finally {
      await c.close();
    }
  }
  return -1;
}

/** Polls leaderIndex until a member leads (20 s at most). */
export async function waitForLeader(remotes: readonly string[], skip: ReadonlySet<number> = new Set()): Promise<number> {
  return until(() => 'no leader within 20 s', async () => {
    const i = await leaderIndex(remotes, skip);
    return i >= 0 ? i : undefined;
  }, 20_000);
}

/** Polls `f` until it gives a value (a throw counts as not yet); `what` says what timed out. */
export async function until<T>(what: string | (() => string), f: () => Promise<T | undefined>, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await f().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out: ${typeof what === 'string' ? what : what()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
