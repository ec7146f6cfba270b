// What the agent's end-to-end tests share: a cluster with chassis hosts running `ovnts agent`
// (or, as the oracle, the real ovn-controller), the real ovn-nbctl and ovn-sbctl against the
// cluster's OVSDB doors, and waits that end with the agents' last words.
import { execFile, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Test } from 'tap';
import { createChassisHost, createUnderlay, type ChassisHost, type ChassisHostOptions, type Underlay } from './chassis-host.js';
import type { NsHost } from './netns.js';
import { netnsAvailable } from './netns.js';
import { until, upCluster, type UpEnv } from './ovnts-cli.js';
import { ovsSwitchInstalled } from './ovs-switch.js';
import { stopPid } from './process.js';
import { testdirAfterTeardowns } from './testdir.js';
import { ovntsArgv } from './ovnts-bin.js';

const execFileAsync = promisify(execFile);
export const PING_WAIT_MS = 90_000;

export const e2eSkip = !ovsSwitchInstalled() ? 'Open vSwitch is not installed'
  : !netnsAvailable() ? 'needs root and iproute2 for network namespaces' : false;

export interface Agent {
  readonly pid: number;
  output(): string;
}

/**
 * `ovnts agent ARGS` as a process whose control socket and pidfile go to `rundir` (OVN_RUNDIR,
 * where `ovn-appctl -t ovn-controller` looks); stopped by pid with t.
 */
export function spawnAgent(t: Test, rundir: string, args: readonly string[]): Agent {
  let output = '';
  const [file, argv] = ovntsArgv('agent', ...args);
  const child = spawn(file, argv, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, OVN_RUNDIR: rundir } });
  const keep = (d: Buffer): void => {
    output = (output + d.toString()).slice(-20_000);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const pid = child.pid as number;
  t.teardown(() => stopPid(pid, (argv) => argv.includes('agent')));
  return { pid, output: () => output };
}

/**
 * The agent of chassis `ch`, its control socket and pidfile in the chassis's folder, as the real
 * ovn-controller's are (chassisWithOvnController): every hypervisor has its own run directory.
 */
export function startAgent(t: Test, ch: ChassisHost, env: UpEnv): Agent {
  return spawnAgent(t, ch.ovs.dir, [`--ovs-db=${ch.ovs.dbTarget}`, `--central=${env.sbGrpc.join(',')}`, '--datapath-type=netdev']);
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

/** Whose last words a failed wait shows: an agent, or the log of a chassis's ovn-controller. */
export type Logged = Pick<Agent, 'output'>;

/** Polls until one ping from 'from' to 'ip' succeeds (want = true) or fails (want = false). */
export async function pingBecomes(from: NsHost, ip: string, want: boolean, what: string, agents: readonly Logged[]): Promise<void> {
  try {
    await until(what, async () => ((await from.ping(ip, want ? 0.3 : 1)) === want ? true : undefined), PING_WAIT_MS);
  } catch (err) {
    const logs = agents.map((a, i) => `--- agent ${i}:\n${a.output().slice(-4000)}`).join('\n');
    throw new Error(`${(err as Error).message}\n${logs}`, { cause: err });
  }
}

/** until(), with the agents' last words on a timeout. */
export async function untilLogged<T>(what: string, f: () => Promise<T | undefined>, ms: number, agents: readonly Logged[]): Promise<T> {
  try {
    return await until(what, f, ms);
  } catch (err) {
    const logs = agents.map((a, i) => `--- agent ${i}:\n${a.output().slice(-4000)}`).join('\n');
    throw new Error(`${(err as Error).message}\n${logs}`, { cause: err });
  }
}

/** ovs-ofctl (OpenFlow 1.5) `cmd` on `ch`'s integration bridge. */
export async function brIntOfctl(ch: ChassisHost, cmd: string, ...args: string[]): Promise<string> {
  return (await execFileAsync('ovs-ofctl', ['-O', 'OpenFlow15', cmd, `unix:${path.join(ch.ovs.dir, 'br-int.mgmt')}`, ...args])).stdout;
}

export async function brIntExists(ch: ChassisHost): Promise<boolean> {
  return (await ch.ovs.vsctl('--bare', '--columns=name', 'find', 'Bridge', 'name=br-int')).trim() === 'br-int';
}

/** What a test may choose of its chassis hosts besides name and index. */
export type HostChoices = Pick<ChassisHostOptions, 'encapType'>;

/**
 * Chassis `names` on the underlay (indexes firstIndex, firstIndex + 1, ...), each with its
 * agent, once every agent has created br-int; all torn down with t.
 */
export async function startChassisWithAgents<const N extends readonly string[]>(t: Test, env: UpEnv, ul: Underlay, names: N, firstIndex = 1, choices: HostChoices = {}): Promise<ChassisWithAgents<N>> {
  const hosts: ChassisHost[] = [];
  const agents: Agent[] = [];
  for (const [i, name] of names.entries()) {
    const ch = await createChassisHost(ul, { ...choices, name, index: firstIndex + i });
    t.teardown(() => ch.stop());
    hosts.push(ch);
    agents.push(startAgent(t, ch, env));
  }
  for (const ch of hosts) await until(`${ch.name} has br-int`, () => brIntExists(ch).then((b) => (b ? true : undefined)), 90_000);
  // One host and one agent per name, in the order of the names.
  return { hosts, agents } as unknown as ChassisWithAgents<N>;
}

/** One chassis host and one agent for each name given, in that order. */
export interface ChassisWithAgents<N extends readonly string[]> {
  readonly hosts: { readonly [K in keyof N]: ChassisHost };
  readonly agents: { readonly [K in keyof N]: Agent };
}

/** A cluster (`ovnts up`), an underlay on prefix.0/24, and chassis `names` with their agents (startChassisWithAgents); all torn down with t. */
export async function clusterWithAgents<const N extends readonly string[]>(t: Test, prefix: string, names: N, choices: HostChoices = {}): Promise<ChassisWithAgents<N> & { env: UpEnv; ul: Underlay }> {
  const env = await upCluster(t, testdirAfterTeardowns(t));
  const ul = await createUnderlay(prefix);
  t.teardown(() => ul.remove());
  return { env, ul, ...(await startChassisWithAgents(t, env, ul, names, 1, choices)) };
}

/** clusterWithAgents with the one chassis hv1. */
export async function chassisWithAgent(t: Test, prefix: string): Promise<{ env: UpEnv; hv1: ChassisHost; agent: Agent }> {
  const { env, hosts: [hv1], agents: [agent] } = await clusterWithAgents(t, prefix, ['hv1']);
  return { env, hv1, agent };
}

/**
 * Chassis `name` on the underlay run by the real ovn-controller (ovn-host) against the cluster's
 * SB door, once it has created br-int; stopped by pid with t. log() is the tail of its log file.
 */
export async function chassisWithOvnController(t: Test, env: UpEnv, ul: Underlay, name: string, index: number, choices: HostChoices = {}): Promise<{ host: ChassisHost; log: () => string }> {
  const host = await createChassisHost(ul, { ...choices, name, index });
  t.teardown(() => host.stop());
  await host.ovs.vsctl('set', 'Open_vSwitch', '.', `external_ids:ovn-remote="${env.sbOvsdb.join(',')}"`, 'external_ids:ovn-bridge-datapath-type=netdev');
  const dir = host.ovs.dir;
  const logFile = path.join(dir, 'ovn-controller.log');
  await execFileAsync('ovn-controller', [host.ovs.dbTarget, '--detach', '--no-chdir', '-vconsole:off', `--pidfile=${path.join(dir, 'ovn-controller.pid')}`, `--log-file=${logFile}`],
    { env: { ...host.ovs.env, OVN_RUNDIR: dir, OVN_LOGDIR: dir, OVN_DBDIR: dir } });
  const pid = Number(readFileSync(path.join(dir, 'ovn-controller.pid'), 'utf8').trim());
  t.teardown(() => stopPid(pid, (argv) => (argv[0] ?? '').endsWith('ovn-controller')));
  const log = (): string => (existsSync(logFile) ? readFileSync(logFile, 'utf8').slice(-3000) : '');
  await until(() => `ovn-controller creates br-int (log: ${log()})`, () => brIntExists(host).then((b) => (b ? true : undefined)), 90_000);
  return { host, log };
}

/** Who runs a test's chassis: our agent, or the real ovn-controller 23.03 as the oracle. */
export type ChassisRunner = 'ovnts agent' | 'ovn-controller';

/**
 * A cluster (`ovnts up`), an underlay on prefix.0/24 and the chassis hv1 run by `runner`; all
 * torn down with t. `agents` is empty with ovn-controller (whose log the waits cannot show).
 */
export async function clusterWithHv1(t: Test, runner: ChassisRunner, prefix: string): Promise<{ env: UpEnv; hv1: ChassisHost; agents: Agent[] }> {
  if (runner === 'ovnts agent') {
    const { env, hv1, agent } = await chassisWithAgent(t, prefix);
    return { env, hv1, agents: [agent] };
  }
  const env = await upCluster(t, testdirAfterTeardowns(t));
  const ul = await createUnderlay(prefix);
  t.teardown(() => ul.remove());
  return { env, hv1: (await chassisWithOvnController(t, env, ul, 'hv1', 1)).host, agents: [] };
}

/**
 * A Node script (`node -e`) in `host`'s namespace, a server or speaker a test plays the outside
 * world with; returns its stop (by pid, also run at teardown).
 */
export function nodeInNs(t: Test, host: NsHost, script: string): () => Promise<void> {
  const child = spawn('ip', ['netns', 'exec', host.ns, process.execPath, '-e', script], { stdio: 'ignore' });
  const pid = child.pid as number;
  const stop = (): Promise<void> => stopPid(pid, (argv) => argv.includes('-e'));
  t.teardown(stop);
  return stop;
}
