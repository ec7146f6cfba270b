// Running the real `ovnts` command line from tests, and finding a free range of loopback ports
// for `ovnts up` (NB gRPC base+1.., Raft base+11.., OVSDB base+21..).
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Test } from 'tap';
import { portInUse } from '../../bin/commands/cluster-up.js';
import { JsonRpcClient } from './jsonrpc-client.js';
import { ovntsArgv } from './ovnts-bin.js';
import { stopPid } from './process.js';

const run = promisify(execFile);

export interface CliResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs a program (ovn-nbctl, ovn-sbctl, ...) to completion, at most 60 s; a non-zero exit is a
 * result, not a throw (a process that could not start or was killed has code 1).
 */
export function runTool(cmd: string, args: readonly string[]): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(cmd, args, { timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err === null ? 0 : typeof err.code === 'number' ? err.code : 1, stdout, stderr });
    });
  });
}

/** Runs `ovnts ARGS...` (the compiled one) to completion; a non-zero exit is a result, not a throw. */
export async function ovnts(...args: string[]): Promise<CliResult> {
  try {
    const [file, argv] = ovntsArgv(...args);
    const { stdout, stderr } = await run(file, argv, { timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** Where test processes reserve port ranges, one file per base port holding the owner's pid. */
const reservations = join(tmpdir(), 'ovnts-test-ports');

/** Whether `pid` runs (a zombie is dead: read from /proc, as kill(0) cannot tell). */
function running(pid: number): boolean {
  try {
    return (readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1] ?? 'Z')[0] !== 'Z';
  } catch {
    return false;
  }
}

/**
 * Reserves the range at `base` for this process: an exclusive file, so that two test
 * processes running side by side (tap runs two) never pick the same range between finding it
 * free and binding it. A reservation whose owner is gone is taken over. A process never
 * reuses its own: each cluster it starts gets a range of its own.
 */
function reserve(base: number): boolean {
  mkdirSync(reservations, { recursive: true });
  const file = join(reservations, String(base));
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(file, String(process.pid), { flag: 'wx' });
      return true;
    } catch {
      const owner = Number(readFileSync(file, 'utf8'));
      if (owner === process.pid || running(owner)) return false;
      rmSync(file, { force: true });
    }
  }
  return false;
}

/** A base port, reserved for this process, whose `ovnts up` ports for three members are all free now. */
export async function freeBasePort(): Promise<number> {
  for (let base = 27000 + (process.pid % 50) * 50; base < 32000; base += 50) {
    const ports = [1, 2, 3, 11, 12, 13, 21, 22, 23, 31, 32, 33, 41, 42, 43].map((d) => base + d);
    if (!reserve(base)) continue;
    if (!(await Promise.all(ports.map(portInUse))).some(Boolean)) return base;
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
  /** Each member's control socket (ovs-appctl -t PATH), member order. */
  readonly unixctl: string[];
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
    unixctl: field('UNIXCTL').split(',').filter(Boolean),
  };
}

/** Tries of `ovnts up` on a fresh port range when a member exits while starting. */
const upAttemptsMax = 3;

/** The last lines of each member's log in an `ovnts up` folder. */
function memberLogTails(dir: string): string {
  const out: string[] = [];
  for (const name of ['n1', 'n2', 'n3']) {
    try {
      out.push(`${name}.log: ${readFileSync(join(dir, `${name}.log`), 'utf8').split('\n').slice(-6).join('\n  ')}`);
    } catch {
      // No log: the member was not started.
    }
  }
  return out.join('\n');
}

/**
 * `ovnts up --detach` on a free port range in `dir`, checked by `t`; the members are stopped by
 * pid when `t` ends (tap may remove the test folder, and with it the env file `ovnts down`
 * reads, before teardowns run).
 */
export async function upCluster(t: Test, dir: string): Promise<UpEnv> {
  // A port range found free can be taken before the members bind it (by a test running beside
  // this one): `up` then stops the members it started, and we try another range, saying why.
  let up: CliResult = { code: -1, stdout: '', stderr: '' };
  for (let attempt = 1; attempt <= upAttemptsMax; attempt++) {
    const base = await freeBasePort();
    up = await ovnts('up', `--data-dir=${dir}`, `--base-port=${base}`, '--detach');
    if (up.code === 0 || !up.stderr.includes('while starting') || attempt === upAttemptsMax) break;
    t.comment(`up on ports ${base}+ failed (${up.stderr.trim()}); member logs:\n${memberLogTails(dir)}`);
  }
  t.equal(up.code, 0, `up ${dir}: ${up.stderr}${up.code === 0 ? '' : `\n${memberLogTails(dir)}`}`);
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
