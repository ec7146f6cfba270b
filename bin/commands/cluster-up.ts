// `ovnts up` and `ovnts down`: a local cluster of central nodes as separate processes, for
// development and for the README's main command. Members keep their data in DATA_DIR/nK and
// log to DATA_DIR/nK.log; DATA_DIR/env records the endpoints, control sockets and pids in
// shell syntax. With -p/-c/-C every member runs with that TLS identity (docs/tls.md), its OVSDB
// doors serve pssl: (NB_OVSDB and SB_OVSDB are then ssl: remotes), and the
// env file names the files (OVNTS_PRIVATE_KEY, OVNTS_CERTIFICATE, OVNTS_CA_CERT) for the
// commands run beside it; a later `up` on the folder keeps them unless given others.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, openSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import type { Command } from 'commander';
import { TlsCredentials, type TlsFiles } from '../../cluster/tls.js';
import { NorthboundClient } from '../../server/northbound-service.js';
import { clusterIdFile, defaultClusterId } from '../lib/cluster-id.js';
import { flagsNotGiven } from '../lib/node-flags.js';
import { isAlive, processArgv } from '../lib/pids.js';
import { tlsEnvNames } from '../lib/endpoints.js';
import { tlsFilesOfFlags, tlsFlagNames, tlsOption, type TlsFlagValues } from '../lib/tls-flags.js';

const upLimits = { leaderWaitMs: 30_000, stopWaitMs: 15_000, statusIntervalMs: 2000 } as const;

/**
 * Node flags each member starts with (a flag of the same name given to `up` itself wins, with or
 * without its `--no-`). docs/central.md (Memory) has the measurements.
 *
 * - `--max-semi-space-size=4` (V8 reads it only when the process starts, so it cannot be set
 *   from inside): a young generation of at most 2 x 4 MiB. With V8's default on
 *   these machines (16 MiB semi-spaces) a member that had loaded the 10,000-port NB kept 32 MiB
 *   of new space committed and stayed at 170-181 MiB RSS after 30 s idle; with 4 MiB, V8's
 *   memory reducer brought every member to 137-144 MiB. Batched 1,000-row transactions cost
 *   about 5 % more CPU.
 * - `--no-allocation-site-pretenuring`: why, in memberStartV8Flags (bin/commands/central.ts),
 *   which `central` also sets at start when not given, for a member started by hand. Given
 *   here, it holds from the process's first allocation.
 */
export const memberNodeFlags: readonly string[] = ['--max-semi-space-size=4', '--no-allocation-site-pretenuring'];

/** memberNodeFlags less those `up` itself was given (either way), then `up`'s own node flags. */
export function memberExecArgv(own: readonly string[]): string[] {
  return [...flagsNotGiven(memberNodeFlags, own), ...own];
}

/** True when pid is still one of our central members for this data folder (pids get reused). */
function isOurMember(pid: number, dataDir: string): boolean {
  const argv = processArgv(pid);
  return argv !== undefined && argv.includes('central') && argv.some((a) => a === `--data-dir=${dataDir}` || a.startsWith(`--data-dir=${dataDir}/`));
}

interface EnvFile {
  readonly NB_GRPC: string;
  readonly MEMBER_PIDS: string;
  /** The TLS identity the members were started with, if any. */
  readonly tls: TlsFiles | undefined;
  /** The RBAC role the members hold agents to (--agent-role), if any. */
  readonly agentRole: string | undefined;
}

function readEnv(dataDir: string): EnvFile | undefined {
  const path = join(dataDir, 'env');
  if (!existsSync(path)) return undefined;
  const env: Record<string, string> = {};
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    const m = /^(\w+)="?([^"]*)"?$/.exec(line.trim());
    if (m) env[m[1] as string] = m[2] as string;
  }
  const privateKey = env[tlsEnvNames.privateKey];
  const certificate = env[tlsEnvNames.certificate];
  const caCert = env[tlsEnvNames.caCert];
  const tls = privateKey !== undefined && certificate !== undefined && caCert !== undefined ? { privateKey, certificate, caCert } : undefined;
  const agentRole = env.AGENT_ROLE === undefined || env.AGENT_ROLE === '' ? undefined : env.AGENT_ROLE;
  return { NB_GRPC: env.NB_GRPC ?? '', MEMBER_PIDS: env.MEMBER_PIDS ?? '', tls, agentRole };
}

/** The env file's lines that name the TLS files (none without TLS). */
function tlsEnvLines(files: TlsFiles | undefined): string {
  if (files === undefined) return '';
  return `${tlsEnvNames.privateKey}="${files.privateKey}"\n${tlsEnvNames.certificate}="${files.certificate}"\n${tlsEnvNames.caCert}="${files.caCert}"\n`;
}

/** The members of `dataDir` that run now, by name (nK), from the pids its env file lists. */
function runningMembers(dataDir: string, env: EnvFile | undefined): Map<string, number> {
  const running = new Map<string, number>();
  for (const pid of (env?.MEMBER_PIDS ?? '').split(' ').filter(Boolean).map(Number)) {
    if (!isAlive(pid) || !isOurMember(pid, dataDir)) continue;
    const name = processArgv(pid)?.find((a) => a.startsWith('--name='))?.slice('--name='.length);
    if (name !== undefined) running.set(name, pid);
  }
  return running;
}

async function stopMembers(dataDir: string, pids: number[]): Promise<number> {
  let stopped = 0;
  for (const pid of pids) {
    if (!isAlive(pid) || !isOurMember(pid, dataDir)) continue;
    process.kill(pid, 'SIGTERM');
    stopped++;
  }
  const deadline = Date.now() + upLimits.stopWaitMs;
  while (pids.some((p) => isAlive(p) && isOurMember(p, dataDir))) {
    if (Date.now() > deadline) throw new Error(`members still running after ${upLimits.stopWaitMs} ms: ${pids.filter(isAlive).join(' ')}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return stopped;
}

async function waitForLeader(addresses: string[], tls: TlsCredentials | undefined, failure: () => string | undefined): Promise<void> {
  const clients = addresses.map((a) => new NorthboundClient(a, 1000, tls));
  try {
    const deadline = Date.now() + upLimits.leaderWaitMs;
    for (;;) {
      const why = failure();
      if (why !== undefined) throw new Error(why);
      // Every member must answer (a linearizable read: there is a leader, and this member is
      // up and reaches it), not only one: two members make a quorum while the third may still
      // be binding its ports, and a client given its address would be refused.
      const answered = await Promise.all(clients.map((c) => c.list('NB_Global').then(() => true, () => false)));
      if (answered.every(Boolean) && failure() === undefined) return;
      if (Date.now() > deadline) {
        const silent = addresses.filter((_, i) => !answered[i]);
        throw new Error(silent.length === addresses.length ? `no leader within ${upLimits.leaderWaitMs} ms` : `no answer from ${silent.join(', ')} within ${upLimits.leaderWaitMs} ms`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    for (const c of clients) c.close();
  }
}

/**
 * The members `up` starts and the cluster id it gives them. A folder that holds a cluster keeps
 * its members (n1..nK, each folder that exists and is not empty) and their id (their cluster-id
 * files); `--nodes`, when given, must agree. A new folder gets `--nodes` members and a random
 * id, so that no two clusters started by `up` take each other's Raft messages: every `up`
 * cluster used to have the one default id, and a member folder left from another cluster (an
 * `up --nodes 1` folder started again with three members) answered the new leader with a
 * commit index beyond its log, which stopped that leader.
 */
export function upClusterOf(dataDir: string, nodes: number | undefined): { names: string[]; clusterId: string } {
  const existing = (existsSync(dataDir) ? readdirSync(dataDir, { withFileTypes: true }) : [])
    .filter((e) => e.isDirectory() && /^n[1-9]\d*$/.test(e.name) && readdirSync(join(dataDir, e.name)).length > 0)
    .map((e) => e.name)
    .sort((a, b) => Number(a.slice(1)) - Number(b.slice(1)));
  if (existing.length === 0) {
    const n = nodes ?? 3;
    return { names: Array.from({ length: n }, (_, i) => `n${i + 1}`), clusterId: `ovnts-${randomBytes(8).toString('hex')}` };
  }
  const names = existing.map((_, i) => `n${i + 1}`);
  if (existing.join() !== names.join()) {
    throw new Error(`${dataDir} holds member folders ${existing.join(', ')}, not n1..n${existing.length}: start its members with ovnts central, or use another --data-dir`);
  }
  if (nodes !== undefined && nodes !== names.length) {
    throw new Error(`${dataDir} holds a cluster of ${names.length} member(s) (${names.join(', ')}), not ${nodes}: run ovnts up --nodes ${names.length} there (ovnts cluster add-member grows a running cluster), or use another --data-dir`);
  }
  const ids = new Map<string, string>();
  for (const name of names) {
    const path = join(dataDir, name, clusterIdFile);
    ids.set(name, existsSync(path) ? readFileSync(path, 'utf8').trim() : defaultClusterId);
  }
  const distinct = new Set(ids.values());
  if (distinct.size > 1) {
    throw new Error(`the members in ${dataDir} belong to different clusters: ${[...ids].map(([n, id]) => `${n} ${id}`).join(', ')}`);
  }
  return { names, clusterId: [...distinct][0] as string };
}

/** The ports of the i-th member: `--base-port`'s layout. */
interface MemberPorts {
  readonly nbGrpc: number;
  readonly raft: number;
  readonly ovsdbNb: number;
  readonly metrics: number;
  readonly ovsdbSb: number;
}

function memberPorts(base: number, i: number): MemberPorts {
  return { nbGrpc: base + 1 + i, raft: base + 11 + i, ovsdbNb: base + 21 + i, metrics: base + 31 + i, ovsdbSb: base + 41 + i };
}

const portUse: Readonly<Record<keyof MemberPorts, string>> = {
  nbGrpc: 'Northbound gRPC',
  raft: 'Raft',
  ovsdbNb: 'OVSDB (OVN_Northbound)',
  metrics: 'metrics',
  ovsdbSb: 'OVSDB (OVN_Southbound)',
};

/** Whether something else listens on 127.0.0.1:port (a bind there fails). */
export function portInUse(port: number): Promise<boolean> {
  return new Promise((resolvePort) => {
    const probe = createServer();
    probe.once('error', () => resolvePort(true));
    probe.listen({ host: '127.0.0.1', port, exclusive: true }, () => probe.close(() => resolvePort(false)));
  });
}

/**
 * Refuses to start when a port of the new members is taken. Without this check, a second
 * cluster started on the ports of a running one found that one's leader and reported success
 * while its own members had already exited.
 */
async function checkPortsFree(names: readonly string[], ports: readonly MemberPorts[]): Promise<void> {
  for (const [i, name] of names.entries()) {
    for (const [use, port] of Object.entries(ports[i] as MemberPorts) as [keyof MemberPorts, number][]) {
      if (await portInUse(port)) throw new Error(`port ${port} (${name}'s ${portUse[use]}) is in use on 127.0.0.1: is another cluster running there? Choose another --base-port`);
    }
  }
}

/**
 * Creates the NB_Global row if the database has none, as `ovn-nbctl init` does: OVN's tools
 * expect it. maxRows 1 makes a concurrent second insert fail instead of duplicating it.
 */
async function initNbGlobal(addresses: string[], tls: TlsCredentials | undefined): Promise<void> {
  const client = new NorthboundClient(addresses[0] as string, 10_000, tls);
  try {
    if ((await client.list('NB_Global')).rows.length > 0) return;
    await client.transact([{ op: 'insert', table: 'NB_Global', row: {} }]);
  } finally {
    client.close();
  }
}

interface UpOptions extends TlsFlagValues {
  dataDir: string;
  nodes: string;
  basePort: string;
  detach?: boolean;
  agentRole?: string;
}

export function registerUpCommands(program: Command): void {
  program
    .command('up')
    .description('start (or restart) a local cluster of central nodes and wait for a leader; with some of its members running, start the others beside them')
    .option('--data-dir <dir>', 'the cluster\'s folder', '.ovnts')
    .option('--nodes <n>', 'number of members of a new cluster (a folder that holds one keeps its members)', '3')
    .option('--base-port <p>', 'Northbound gRPC on P+1..P+n, Raft on P+11..P+10+n, OVSDB (OVN_Northbound) on P+21..P+20+n, HTTP metrics on P+31..P+30+n, OVSDB (OVN_Southbound) on P+41..P+40+n', '16700')
    .option('--detach', 'return once there is a leader and leave the members running')
    // Every member's TLS identity (one for all: they are one service), as `central` takes it.
    .addOption(tlsOption.privateKey('the members\'', ', as ovnts central -p/-c/-C, and the files are named in DATA_DIR/env for the commands run beside it (default: those it names, from the last up)'))
    .addOption(tlsOption.certificate('the members\''))
    .addOption(tlsOption.caCert())
    .option('--agent-role <role>', 'as ovnts central --agent-role: the members hold agents to this RBAC role ("ovn-controller"), each to the chassis its certificate names; needs -p/-c/-C (default: the role of the last up on this folder, if any)')
    .action(async (o: UpOptions, command: Command) => {
      const dataDir = resolve(o.dataDir);
      const nodesGiven = command.getOptionValueSource('nodes') !== 'default';
      const basePortGiven = command.getOptionValueSource('basePort') !== 'default';
      const requested = Number(o.nodes);
      let base = Number(o.basePort);
      if (!Number.isInteger(requested) || requested < 1 || requested > 7) throw new Error('--nodes must be 1 to 7');
      mkdirSync(dataDir, { recursive: true });
      const previous = readEnv(dataDir);
      const running = runningMembers(dataDir, previous);
      const { names, clusterId } = upClusterOf(dataDir, nodesGiven ? requested : undefined);
      // Paths made absolute: members and commands read them from other folders. Read and
      // checked here, so that a file that cannot be used is named before any member starts.
      const given = tlsFilesOfFlags(o);
      const tlsFiles = given === undefined ? previous?.tls : { privateKey: resolve(given.privateKey), certificate: resolve(given.certificate), caCert: resolve(given.caCert) };
      const tls = tlsFiles === undefined ? undefined : new TlsCredentials(tlsFiles);
      // As the identity, the agents' role is kept for the next `up` on this folder.
      const agentRole = o.agentRole ?? previous?.agentRole;
      if (agentRole !== undefined && agentRole !== '' && tlsFiles === undefined) throw new Error(`--agent-role ${agentRole}: an agent's id is the common name of its certificate, so the role needs the members' ${tlsFlagNames.privateKey}, ${tlsFlagNames.certificate} and ${tlsFlagNames.caCert}`);
      // With an identity the OVSDB doors serve SSL too (ovn-nbctl --db=ssl:... -p -c -C), as an
      // encrypted OVN central's ovsdb-servers do: nothing of the cluster is left in the clear.
      const doorScheme = tlsFiles === undefined ? 'ptcp' : 'pssl';
      const remoteScheme = tlsFiles === undefined ? 'tcp' : 'ssl';
      const n = names.length;
      if (running.size === n) throw new Error(`the cluster in ${dataDir} is already running (pids ${[...running.values()].join(' ')}); run ovnts down --data-dir ${o.dataDir} to stop it`);
      if (running.size > 0) {
        // Some members of this folder run: start the others beside them, on the ports the
        // running ones were given (the env file's first Northbound gRPC port is base + 1).
        const runningBase = Number(/:(\d+)(,|$)/.exec(previous?.NB_GRPC ?? '')?.[1]) - 1;
        if (!Number.isInteger(runningBase) || runningBase < 1) throw new Error(`${dataDir}/env names no ports for the running members (pids ${[...running.values()].join(' ')}); run ovnts down --data-dir ${o.dataDir} first`);
        if (basePortGiven && base !== runningBase) throw new Error(`${[...running.keys()].join(', ')} of the cluster in ${dataDir} run on --base-port ${runningBase}: leave out --base-port to restart the others beside them`);
        base = runningBase;
      }
      if (!Number.isInteger(base) || base < 1 || memberPorts(base, n - 1).ovsdbSb > 65535) throw new Error(`--base-port must be a number from 1 to ${65535 - memberPorts(0, n - 1).ovsdbSb}`);
      const ports = names.map((_, i) => memberPorts(base, i));
      const nb = names.map((name, i) => `${name}=127.0.0.1:${ports[i]?.nbGrpc}`).join(',');
      const raft = names.map((name, i) => `${name}=127.0.0.1:${ports[i]?.raft}`).join(',');
      const starting = names.filter((name) => !running.has(name));
      await checkPortsFree(starting, starting.map((name) => ports[names.indexOf(name)] as MemberPorts));
      if (running.size > 0) process.stdout.write(`ovnts: restarting ${starting.join(', ')} beside ${[...running.keys()].join(', ')} (running) in ${dataDir}\n`);
      const script = process.argv[1] as string;
      const pids: number[] = [];
      const started: number[] = [];
      // A member that exits while the cluster starts (a port in use, a locked data folder)
      // fails `up` at once, with its name; its log says why.
      let exited: string | undefined;
      for (const [i, name] of names.entries()) {
        const alive = running.get(name);
        if (alive !== undefined) {
          pids.push(alive);
          continue;
        }
        const log = openSync(join(dataDir, `${name}.log`), 'a');
        const p = ports[i] as MemberPorts;
        const child = spawn(process.execPath, [...memberExecArgv(process.execArgv), script, 'central', `--name=${name}`, `--data-dir=${join(dataDir, name)}`, `--cluster-id=${clusterId}`, `--peers=${raft}`, `--nb-peers=${nb}`, `--ovsdb=${doorScheme}:${p.ovsdbNb}:127.0.0.1`, `--ovsdb-sb=${doorScheme}:${p.ovsdbSb}:127.0.0.1`, `--metrics=127.0.0.1:${p.metrics}`, ...(tlsFiles === undefined ? [] : [`--private-key=${tlsFiles.privateKey}`, `--certificate=${tlsFiles.certificate}`, `--ca-cert=${tlsFiles.caCert}`]), ...(agentRole === undefined || agentRole === '' ? [] : [`--agent-role=${agentRole}`])], {
          detached: true,
          stdio: ['ignore', log, log],
        });
        child.once('exit', (code, signal) => {
          exited ??= `member ${name} exited (${code ?? signal}) while starting; see ${join(dataDir, `${name}.log`)}`;
        });
        child.unref();
        pids.push(child.pid as number);
        started.push(child.pid as number);
      }
      const addresses = ports.map((p) => `127.0.0.1:${p.nbGrpc}`);
      const ovsdbRemotes = ports.map((p) => `${remoteScheme}:127.0.0.1:${p.ovsdbNb}`).join(',');
      const metricsUrls = ports.map((p) => `http://127.0.0.1:${p.metrics}`).join(',');
      const sbRemotes = ports.map((p) => `${remoteScheme}:127.0.0.1:${p.ovsdbSb}`).join(',');
      // Each member's control socket, where `central` puts it by default (its data folder).
      const controlSockets = names.map((name) => join(dataDir, name, 'ovnts.ctl')).join(',');
      // Agents' streams (proto/southbound.proto) are served on the same gRPC address as the
      // Northbound API, so SB_GRPC is NB_GRPC; it has a line of its own for agents to read.
      writeFileSync(join(dataDir, 'env'), `# written by ovnts up\nNB_GRPC="${addresses.join(',')}"\nSB_GRPC="${addresses.join(',')}"\nNB_OVSDB="${ovsdbRemotes}"\nSB_OVSDB="${sbRemotes}"\nMETRICS="${metricsUrls}"\nUNIXCTL="${controlSockets}"\nMEMBER_PIDS="${pids.join(' ')}"\nDATA_DIR="${dataDir}"\n${tlsEnvLines(tlsFiles)}${agentRole === undefined || agentRole === '' ? '' : `AGENT_ROLE="${agentRole}"\n`}`);
      try {
        await waitForLeader(addresses, tls, () => exited);
      } catch (err) {
        // Only what this run started: members that were running stay as they were.
        await stopMembers(dataDir, started);
        throw new Error(`${(err as Error).message}; see the logs in ${dataDir}`, { cause: err });
      }
      await initNbGlobal(addresses, tls);
      process.stdout.write(
        `ovnts: ${n} central nodes up in ${dataDir}\nNB_GRPC=${addresses.join(',')}\nSB_GRPC=${addresses.join(',')}   (for agents: the per-chassis SB stream)\nNB_OVSDB=${ovsdbRemotes}   (for ovn-nbctl --db=...)\nSB_OVSDB=${sbRemotes}   (for ovn-sbctl --db=...)\nMETRICS=${metricsUrls}   (/healthz, /readyz, /metrics)\nUNIXCTL=${controlSockets}   (for ovs-appctl -t ...: cluster/status OVN_Northbound, status, ...)\nMEMBER_PIDS=${pids.join(' ')}\n${tlsFiles === undefined ? '' : `TLS: gRPC and the OVSDB doors with ${tlsFiles.privateKey}, ${tlsFiles.certificate}, CA ${tlsFiles.caCert}   (commands that take their endpoints from the env file use them too; ovn-nbctl -p -c -C)\n`}(also in ${join(dataDir, 'env')})\n`,
      );
      if (o.detach === true) return;
      process.stdout.write('Ctrl-C stops every member.\n');
      const clients = addresses.map((a) => new NorthboundClient(a, 1000, tls));
      const timer = setInterval(() => {
        void Promise.all(clients.map((c) => c.list('NB_Global', [], { consistency: 'serializable' }).then((r) => `rev ${r.revision}`, () => 'down'))).then((states) =>
          process.stdout.write(`${new Date().toISOString()} ${names.map((nm, i) => `${nm}: ${states[i]}`).join('  ')}\n`),
        );
      }, upLimits.statusIntervalMs);
      await new Promise<void>((r) => {
        process.once('SIGINT', r);
        process.once('SIGTERM', r);
      });
      clearInterval(timer);
      for (const c of clients) c.close();
      await stopMembers(dataDir, pids);
      process.stdout.write('ovnts: stopped\n');
    });

  program
    .command('down')
    .description('stop the local cluster that ovnts up started')
    .option('--data-dir <dir>', 'the cluster\'s folder', '.ovnts')
    .action(async (o: { dataDir: string }) => {
      const dataDir = resolve(o.dataDir);
      const env = readEnv(dataDir);
      if (env === undefined) throw new Error(`no cluster in ${dataDir} (no env file)`);
      const stopped = await stopMembers(dataDir, env.MEMBER_PIDS.split(' ').filter(Boolean).map(Number));
      process.stdout.write(`ovnts: stopped ${stopped} member(s) in ${dataDir}\n`);
    });
}
