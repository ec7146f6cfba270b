// Starts a real Open vSwitch (ovsdb-server + ovs-vswitchd with the userspace datapath) in a
// private temp folder, with a bridge whose OpenFlow management socket the tests connect to.
// Every file the daemons touch (database, sockets, pidfiles, logs) lives in that folder; the
// daemons are stopped by the pids they wrote, and liveness is read from /proc (zombies linger).
import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { isAlive, processArgv, waitForExit } from './process.js';

const execFileAsync = promisify(execFile);
const STOP_TIMEOUT_MS = 10_000;
const SCHEMA_PATH = '/usr/share/openvswitch/vswitch.ovsschema';

export function ovsSwitchInstalled(): boolean {
  try {
    execFileSync('ovs-vswitchd', ['--version'], { stdio: 'ignore' });
    return fs.existsSync(SCHEMA_PATH);
  } catch {
    return false;
  }
}

export interface OvsSwitch {
  readonly dir: string;
  readonly bridge: string;
  /** unix:… target of the bridge's management socket. */
  readonly mgmtTarget: string;
  /** unix:… target of the Open_vSwitch database (for OVSDB clients such as the agent). */
  readonly dbTarget: string;
  readonly vswitchdCtl: string;
  readonly env: NodeJS.ProcessEnv;
  readonly vswitchdPid: number;
  vsctl(...args: string[]): Promise<string>;
  /** ovs-ofctl -O OpenFlow15 <cmd> <mgmt socket> <args…>. */
  ofctl(cmd: string, ...args: string[]): Promise<string>;
  appctl(...args: string[]): Promise<string>;
  stop(): Promise<void>;
}

const live = new Map<number, string>();
let hookInstalled = false;

function isOurs(pid: number, name: string, dir: string): boolean {
  const argv = processArgv(pid);
  return argv !== undefined && (argv[0] ?? '').endsWith(name) && argv.some((a) => a.includes(dir));
}

function readPid(file: string): number {
  const pid = Number.parseInt(fs.readFileSync(file, 'utf8').trim(), 10);
  if (!Number.isInteger(pid) || pid <= 0) throw new Error(`bad pidfile ${file}`);
  return pid;
}

async function stopDaemon(pid: number, name: string, dir: string): Promise<void> {
  if (isOurs(pid, name, dir) && isAlive(pid)) {
    process.kill(pid, 'SIGTERM');
    await waitForExit(pid, STOP_TIMEOUT_MS);
  }
  live.delete(pid);
}

export interface OvsSwitchOptions {
  readonly bridge?: string;
  /** Dummy ports p1..pN with OpenFlow port numbers 1..N. */
  readonly ports?: number;
  /**
   * Use the host's network devices (veths in test namespaces) instead of replacing every device
   * with an in-memory dummy. The datapath stays the userspace one (--disable-system, netdev).
   */
  readonly realDevices?: boolean;
  /** Run ovs-vswitchd inside this network namespace (a chassis of its own, with its own routes
   *  for tunnel endpoints); the database and the control sockets stay in the temp folder. */
  readonly netns?: string;
}

/**
 * Starts ovsdb-server and ovs-vswitchd and adds a netdev bridge speaking OpenFlow 1.5.
 * Unless realDevices is set, ovs-vswitchd runs with --enable-dummy=override, so the bridge's own
 * port and every port are Open vSwitch's in-memory dummy devices: nothing appears in the host's
 * network stack.
 */
export async function startOvsSwitch(options: OvsSwitchOptions = {}): Promise<OvsSwitch> {
  const bridge = options.bridge ?? 'br-int';
  // A short folder under /tmp: unix socket paths must fit in 108 bytes.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ovs-'));
  const env: NodeJS.ProcessEnv = { ...process.env, OVS_RUNDIR: dir, OVS_DBDIR: dir, OVS_LOGDIR: dir, OVS_SYSCONFDIR: dir };
  const run = async (cmd: string, args: string[]): Promise<string> => (await execFileAsync(cmd, args, { env, maxBuffer: 256 * 1024 * 1024 })).stdout;
  const db = path.join(dir, 'conf.db');
  const dbSock = path.join(dir, 'db.sock');
  const vswitchdCtl = path.join(dir, 'ovs-vswitchd.ctl');
  if (!hookInstalled) {
    hookInstalled = true;
    process.on('exit', () => {
      for (const [pid, d] of live) if (isAlive(pid) && (isOurs(pid, 'ovs-vswitchd', d) || isOurs(pid, 'ovsdb-server', d))) process.kill(pid, 'SIGTERM');
    });
  }
  await run('ovsdb-tool', ['create', db, SCHEMA_PATH]);
  await run('ovsdb-server', [db, `--remote=punix:${dbSock}`, `--pidfile=${dir}/ovsdb-server.pid`, `--unixctl=${dir}/ovsdb-server.ctl`,
    '--detach', '--no-chdir', `--log-file=${dir}/ovsdb-server.log`, '-vconsole:off']);
  const dbPid = readPid(`${dir}/ovsdb-server.pid`);
  live.set(dbPid, dir);
  let swPid = 0;
  try {
    await run('ovs-vsctl', [`--db=unix:${dbSock}`, '--no-wait', 'init']);
    const dummy = options.realDevices === true ? [] : ['--enable-dummy=override'];
    const vswitchd = ['ovs-vswitchd', `unix:${dbSock}`, '--disable-system', ...dummy, `--pidfile=${dir}/ovs-vswitchd.pid`, `--unixctl=${vswitchdCtl}`,
      '--detach', '--no-chdir', `--log-file=${dir}/ovs-vswitchd.log`, '-vconsole:off'];
    if (options.netns === undefined) await run(vswitchd[0] as string, vswitchd.slice(1));
    else await run('ip', ['netns', 'exec', options.netns, ...vswitchd]);
    swPid = readPid(`${dir}/ovs-vswitchd.pid`);
    live.set(swPid, dir);
    await run('ovs-vsctl', [`--db=unix:${dbSock}`, '--timeout=20', 'add-br', bridge, '--', 'set', 'bridge', bridge,
      'datapath_type=netdev', 'protocols=OpenFlow15', 'fail-mode=secure', 'other-config:disable-in-band=true']);
    for (let i = 1; i <= (options.ports ?? 0); i++) {
      await run('ovs-vsctl', [`--db=unix:${dbSock}`, '--timeout=20', 'add-port', bridge, `p${i}`, '--', 'set', 'interface', `p${i}`,
        'type=dummy', `ofport_request=${i}`]);
    }
  } catch (err) {
    if (swPid !== 0) await stopDaemon(swPid, 'ovs-vswitchd', dir);
    await stopDaemon(dbPid, 'ovsdb-server', dir);
    throw err;
  }
  const mgmt = path.join(dir, `${bridge}.mgmt`);
  let stopped = false;
  return {
    dir,
    bridge,
    mgmtTarget: `unix:${mgmt}`,
    dbTarget: `unix:${dbSock}`,
    vswitchdCtl,
    env,
    vswitchdPid: swPid,
    vsctl: (...args) => run('ovs-vsctl', [`--db=unix:${dbSock}`, '--timeout=20', ...args]),
    ofctl: (cmd, ...args) => run('ovs-ofctl', ['-O', 'OpenFlow15', cmd, mgmt, ...args]),
    appctl: (...args) => run('ovs-appctl', ['-t', vswitchdCtl, ...args]),
    async stop(): Promise<void> {
      if (stopped) return;
      stopped = true;
      await stopDaemon(swPid, 'ovs-vswitchd', dir);
      await stopDaemon(dbPid, 'ovsdb-server', dir);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
