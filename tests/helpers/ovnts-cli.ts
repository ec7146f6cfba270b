// Running the real `ovnts` command line from tests, and finding a free range of loopback ports
// for `ovnts up` (NB gRPC base+1.., Raft base+11.., OVSDB base+21..).
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';

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
    nbOvsdb: field('NB_OVSDB').split(',').filter(Boolean),
    sbOvsdb: field('SB_OVSDB').split(',').filter(Boolean),
    pids: field('MEMBER_PIDS').split(' ').filter(Boolean).map(Number),
    metrics: field('METRICS').split(',').filter(Boolean),
  };
}
