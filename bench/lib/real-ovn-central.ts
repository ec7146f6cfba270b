// The real OVN central as OVN deploys it: a 3-member clustered (Raft) OVN_Northbound, a 3-member
// clustered OVN_Southbound (create-cluster on the first member, join-cluster for the others) and
// one ovn-northd on all of them, in a temp folder, on unix sockets only. Stopped by the pids it
// recorded, each checked against its command line.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { stopPid } from '../../tests/helpers/process.js';

const run = promisify(execFile);

export interface RealOvnCentral {
  readonly dir: string;
  /** unix:… remotes of the three NB members, comma-separated (for ovn-nbctl --db). */
  readonly nb: string;
  /** unix:… remotes of the three SB members, comma-separated (for ovn-controller's ovn-remote). */
  readonly sb: string;
  readonly pids: { readonly nb: readonly number[]; readonly sb: readonly number[]; readonly northd: number };
  stop(): Promise<void>;
}

interface Member {
  readonly pid: number;
  readonly db: string;
  readonly socket: string;
}

async function until(what: string, timeoutMs: number, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const readPid = (file: string): number => Number(readFileSync(file, 'utf8').trim());

/** One clustered database of three members; raft ports raftPortBase..+2 on loopback. */
async function startDbCluster(dir: string, prefix: string, dbName: string, schemaPath: string, raftPortBase: number, started: Member[]): Promise<Member[]> {
  const raft = (i: number): string => `tcp:127.0.0.1:${raftPortBase + i}`;
  const members: Member[] = [];
  for (let i = 0; i < 3; i++) {
    const name = `${prefix}${i + 1}`;
    const db = join(dir, `${name}.db`);
    const socket = join(dir, `${name}.sock`);
    const ctl = join(dir, `${name}.ctl`);
    if (i === 0) await run('ovsdb-tool', ['-vconsole:off', 'create-cluster', db, schemaPath, raft(0)]);
    else await run('ovsdb-tool', ['join-cluster', db, dbName, raft(i), ...Array.from({ length: i }, (_, j) => raft(j))]);
    await run('ovsdb-server', ['--detach', '--no-chdir', '-vconsole:off', `--pidfile=${join(dir, `${name}.pid`)}`, `--log-file=${join(dir, `${name}.log`)}`,
      `--unixctl=${ctl}`, `--remote=punix:${socket}`, db]);
    const m = { pid: readPid(join(dir, `${name}.pid`)), db, socket };
    members.push(m);
    started.push(m);
  }
  for (let i = 0; i < members.length; i++) {
    const ctl = join(dir, `${prefix}${i + 1}.ctl`);
    await until(`${prefix}${i + 1} to join ${dbName}`, 30_000, async () => /Status: cluster member/.test((await run('ovs-appctl', ['-t', ctl, 'cluster/status', dbName])).stdout));
  }
  return members;
}

/** Raft ports raftPortBase..+5; the caller picks a base unlikely to clash. */
export async function startRealOvnCentral(raftPortBase = 26750): Promise<RealOvnCentral> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-ovn-'));
  const started: Member[] = [];
  let northd = 0;
  const stop = async (): Promise<void> => {
    if (northd !== 0) await stopPid(northd, (argv) => (argv[0] ?? '').endsWith('ovn-northd') && argv.some((a) => a.includes(dir)));
    for (const m of started) await stopPid(m.pid, (argv) => (argv[0] ?? '').endsWith('ovsdb-server') && argv.includes(m.db));
    if (existsSync(dir)) rmSync(dir, { recursive: true, force: true });
  };
  try {
    const nbMembers = await startDbCluster(dir, 'nb', 'OVN_Northbound', '/usr/share/ovn/ovn-nb.ovsschema', raftPortBase, started);
    const sbMembers = await startDbCluster(dir, 'sb', 'OVN_Southbound', '/usr/share/ovn/ovn-sb.ovsschema', raftPortBase + 3, started);
    const nb = nbMembers.map((m) => `unix:${m.socket}`).join(',');
    const sb = sbMembers.map((m) => `unix:${m.socket}`).join(',');
    await run('ovn-nbctl', [`--db=${nb}`, '--timeout=30', 'init']);
    await run('ovn-northd', ['--detach', '--no-chdir', '-vconsole:off', `--pidfile=${join(dir, 'northd.pid')}`, `--log-file=${join(dir, 'northd.log')}`,
      `--unixctl=${join(dir, 'northd.ctl')}`, `--ovnnb-db=${nb}`, `--ovnsb-db=${sb}`]);
    northd = readPid(join(dir, 'northd.pid'));
    await until('ovn-northd to be active', 30_000, async () => /active/.test((await run('ovs-appctl', ['-t', join(dir, 'northd.ctl'), 'status'])).stdout));
    await run('ovn-nbctl', [`--db=${nb}`, '--timeout=60', '--wait=sb', 'sync']);
    return { dir, nb, sb, pids: { nb: nbMembers.map((m) => m.pid), sb: sbMembers.map((m) => m.pid), northd }, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
