// A real 3-member clustered (Raft) ovsdb-server for OVN_Northbound, started in a temp folder
// the way OVN deploys its central databases: create-cluster on the first member, join-cluster
// for the others, each with its own unix socket, pidfile and unixctl socket, all on loopback.
// Stopped by the pids it recorded.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { TlsFiles } from '../../cluster/tls.js';
import { stopPid } from '../../tests/helpers/process.js';

const run = promisify(execFile);

export interface RealCluster {
  readonly dir: string;
  readonly members: readonly { readonly name: string; readonly socket: string; readonly ctl: string; readonly pid: number; readonly db: string; readonly clientPort: number }[];
  /** The unix socket of the member that is leader now. */
  leaderSocket(): Promise<string>;
  /** Starts a stopped (or killed) member again on its database file; `members` shows its new pid. */
  restart(name: string): Promise<void>;
  stop(): Promise<void>;
}

async function clusterStatus(ctl: string, dbName: string): Promise<string> {
  const { stdout } = await run('ovs-appctl', ['-t', ctl, 'cluster/status', dbName]);
  return stdout;
}

async function waitFor(what: string, timeoutMs: number, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Each member serves clients on its unix socket and on TCP port raftPortBase + 10 + i
 * (loopback). With `ssl`, the members are deployed as an encrypted OVN central is: Raft between
 * them over ssl: and that port pssl:, all with that key, certificate and CA (ovsdb-server's -p,
 * -c, -C); without, both are plain.
 */
export interface RealClusterOptions {
  readonly ssl?: TlsFiles;
}

/** Picks raft ports from a base; the caller gives a base unlikely to clash (default 26650). */
export async function startRealNbCluster(schemaPath: string, raftPortBase = 26650, options: RealClusterOptions = {}): Promise<RealCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-raft-'));
  const dbName = 'OVN_Northbound';
  const members: { name: string; socket: string; ctl: string; pid: number; db: string; clientPort: number }[] = [];
  const ssl = options.ssl;
  const raft = (i: number): string => `${ssl === undefined ? 'tcp' : 'ssl'}:127.0.0.1:${raftPortBase + i}`;
  const sslArgs = ssl === undefined ? [] : [`--private-key=${ssl.privateKey}`, `--certificate=${ssl.certificate}`, `--ca-cert=${ssl.caCert}`];
  /** Starts member `name`'s ovsdb-server on its database file; resolves with its pid. */
  const serve = async (name: string, i: number): Promise<{ name: string; socket: string; ctl: string; pid: number; db: string; clientPort: number }> => {
    const db = join(dir, `${name}.db`);
    const socket = join(dir, `${name}.sock`);
    const ctl = join(dir, `${name}.ctl`);
    const pidfile = join(dir, `${name}.pid`);
    const clientPort = raftPortBase + 10 + i;
    const remotes = [`--remote=punix:${socket}`, `--remote=${ssl === undefined ? 'ptcp' : 'pssl'}:${clientPort}:127.0.0.1`];
    await run('ovsdb-server', ['--detach', '--no-chdir', '-vconsole:off', `--pidfile=${pidfile}`, `--log-file=${join(dir, `${name}.log`)}`, `--unixctl=${ctl}`, ...remotes, ...sslArgs, db]);
    return { name, socket, ctl, pid: Number(readFileSync(pidfile, 'utf8').trim()), db, clientPort };
  };
  for (let i = 0; i < 3; i++) {
    const name = `nb${i + 1}`;
    const db = join(dir, `${name}.db`);
    if (i === 0) await run('ovsdb-tool', ['-vconsole:off', 'create-cluster', db, schemaPath, raft(0)]);
    else await run('ovsdb-tool', ['join-cluster', db, dbName, raft(i), ...Array.from({ length: i }, (_, j) => raft(j))]);
    const m = await serve(name, i);
    members.push(m);
    if (i === 0) await waitFor(`${name} to lead`, 20_000, async () => /Role: leader/.test(await clusterStatus(m.ctl, dbName)));
  }
  for (const m of members) {
    await waitFor(`${m.name} to join`, 30_000, async () => /Status: cluster member/.test(await clusterStatus(m.ctl, dbName)));
  }
  return {
    dir,
    members,
    async leaderSocket() {
      for (const m of members) if (/Role: leader/.test(await clusterStatus(m.ctl, dbName))) return m.socket;
      throw new Error('no leader');
    },
    async restart(name) {
      const i = members.findIndex((m) => m.name === name);
      if (i < 0) throw new Error(`no member ${name}`);
      const m = await serve(name, i);
      members[i] = m;
      await waitFor(`${name} to rejoin`, 30_000, async () => /Status: cluster member/.test(await clusterStatus(m.ctl, dbName)));
    },
    async stop() {
      for (const m of members) await stopPid(m.pid, (argv) => (argv[0] ?? '').endsWith('ovsdb-server') && argv.includes(m.db));
      if (existsSync(dir)) rmSync(dir, { recursive: true, force: true });
    },
  };
}
