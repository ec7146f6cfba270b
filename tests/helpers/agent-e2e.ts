// What the agent's end-to-end tests share: `ovnts agent` processes on chassis hosts, the real
// ovn-nbctl against the cluster's OVSDB door, and waits that end with the agents' last words.
import { execFile, spawn } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Test } from 'tap';
import { createChassisHost, createUnderlay, type ChassisHost } from './chassis-host.js';
import type { NsHost } from './netns.js';
import { netnsAvailable } from './netns.js';
import { until, upCluster, type UpEnv } from './ovnts-cli.js';
import { ovsSwitchInstalled } from './ovs-switch.js';
import { stopPid } from './process.js';

const execFileAsync = promisify(execFile);
const bin = path.join(import.meta.dirname, '../../bin/ovnts.ts');
export const PING_WAIT_MS = 90_000;

export const e2eSkip = !ovsSwitchInstalled() ? 'Open vSwitch is not installed'
  : !netnsAvailable() ? 'needs root and iproute2 for network namespaces' : false;

export interface Agent {
  readonly pid: number;
  output(): string;
}

export function startAgent(t: Test, ch: ChassisHost, env: UpEnv): Agent {
  let output = '';
  const child = spawn(process.execPath, ['--import', 'tsx', bin, 'agent', `--ovs-db=${ch.ovs.dbTarget}`, `--central=${env.sbGrpc.join(',')}`,
    '--datapath-type=netdev'], { stdio: ['ignore', 'pipe', 'pipe'] });
  const keep = (d: Buffer): void => {
    output = (output + d.toString()).slice(-20_000);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const pid = child.pid as number;
  t.teardown(() => stopPid(pid, (argv) => argv.includes('agent')));
  return { pid, output: () => output };
}

export function nbctlOf(env: UpEnv): (...args: string[]) => Promise<string> {
  return async (...args) => (await execFileAsync('ovn-nbctl', [`--db=${env.nbOvsdb.join(',')}`, '--timeout=30', ...args])).stdout.trim();
}

export function sbctlOf(env: UpEnv): (...args: string[]) => Promise<string> {
  return async (...args) => (await execFileAsync('ovn-sbctl', [`--db=${env.sbOvsdb.join(',')}`, '--timeout=30', ...args])).stdout.trim();
}

/**
 * Router port `lrp` of router `lr` (its MAC and networks) and its peer on switch `sw`: a port
 * `<sw>-<lr>` of type router with addresses "router", as ovn-nbctl's users link the two.
 */
export async function linkSwitchToRouter(nbctl: (...args: string[]) => Promise<string>, sw: string, lr: string, lrp: string, mac: string, ...networks: string[]): Promise<void> {
  const lsp = `${sw}-${lr}`;
  await nbctl('lrp-add', lr, lrp, mac, ...networks);
  await nbctl('lsp-add', sw, lsp, '--', 'lsp-set-type', lsp, 'router', '--', 'lsp-set-addresses', lsp, 'router',
    '--', 'lsp-set-options', lsp, `router-port=${lrp}`);
}

/** Polls until one ping from 'from' to 'ip' succeeds (want = true) or fails (want = false). */
export async function pingBecomes(from: NsHost, ip: string, want: boolean, what: string, agents: readonly Agent[]): Promise<void> {
  try {
    await until(what, async () => ((await from.ping(ip, 1)) === want ? true : undefined), PING_WAIT_MS);
  } catch (err) {
    const logs = agents.map((a, i) => `--- agent ${i}:\n${a.output().slice(-4000)}`).join('\n');
    throw new Error(`${(err as Error).message}\n${logs}`, { cause: err });
  }
}

/** until(), with the agents' last words on a timeout. */
export async function untilLogged<T>(what: string, f: () => Promise<T | undefined>, ms: number, agents: readonly Agent[]): Promise<T> {
  try {
    return await until(what, f, ms);
  } catch (err) {
    const logs = agents.map((a, i) => `--- agent ${i}:\n${a.output().slice(-4000)}`).join('\n');
    throw new Error(`${(err as Error).message}\n${logs}`, { cause: err });
  }
}

export async function brIntExists(ch: ChassisHost): Promise<boolean> {
  return (await ch.ovs.vsctl('--bare', '--columns=name', 'find', 'Bridge', 'name=br-int')).trim() === 'br-int';
}


/** A cluster (`ovnts up`), an underlay on prefix.0/24, chassis hv1 on it, and its agent once it
 *  has created br-int; all torn down with t. */
export async function chassisWithAgent(t: Test, prefix: string): Promise<{ env: UpEnv; hv1: ChassisHost; agent: Agent }> {
  const env = await upCluster(t, t.testdir());
  const ul = await createUnderlay(prefix);
  t.teardown(() => ul.remove());
  const hv1 = await createChassisHost(ul, { name: 'hv1', index: 1 });
  t.teardown(() => hv1.stop());
  const agent = startAgent(t, hv1, env);
  await until('the agent creates br-int', () => brIntExists(hv1).then((b) => (b ? true : undefined)), 90_000);
  return { env, hv1, agent };
}
