// Starts a real, standalone ovsdb-server (Open vSwitch) in a caller-owned folder, as the oracle
// for differential and conformance tests. Every file the daemon touches (database, socket,
// pidfile, unixctl socket, log) lives in that folder; the daemon is stopped by the pid it wrote.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { isAlive, processArgv, waitForExit } from './process.js';

const execFileAsync = promisify(execFile);

/** Unix socket paths longer than this do not fit in sockaddr_un.sun_path (108 bytes with NUL). */
const SOCKET_PATH_BYTES_MAX = 100;
const STOP_TIMEOUT_MS = 10_000;

export interface RealOvsdbServerOptions {
  /** The folder that holds every file of this server; the caller owns and removes it. */
  readonly dir: string;
  readonly schemaJson?: unknown;
  readonly schemaPath?: string;
}

export interface RealOvsdbServer {
  readonly socketPath: string;
  readonly pid: number;
  readonly dbPath: string;
  readonly logPath: string;
  /** Stops the daemon (SIGTERM) and resolves once the process is gone or a zombie. */
  stop(): Promise<void>;
}

/** True when pid is still the ovsdb-server serving dbPath (pids are reused). */
function isOurDaemon(pid: number, dbPath: string): boolean {
  const argv = processArgv(pid);
  return argv !== undefined && (argv[0] ?? '').endsWith('ovsdb-server') && argv.includes(dbPath);
}

/** Daemons started by this process, so a crashing test does not leave them behind. */
const liveDaemons = new Map<number, string>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const [pid, dbPath] of liveDaemons) {
      if (isOurDaemon(pid, dbPath) && isAlive(pid)) process.kill(pid, 'SIGTERM');
    }
  });
}

/**
 * Creates a database from the schema with ovsdb-tool and starts ovsdb-server on it with
 * --detach. ovsdb-server's parent process exits only after the daemon has opened its remotes,
 * so the socket accepts connections when this resolves.
 */
export async function startRealOvsdbServer(options: RealOvsdbServerOptions): Promise<RealOvsdbServer> {
  const dir = path.resolve(options.dir);
  fs.mkdirSync(dir, { recursive: true });
  let schemaPath: string;
  if (options.schemaPath !== undefined) {
    schemaPath = path.resolve(options.schemaPath);
  } else if (options.schemaJson !== undefined) {
    schemaPath = path.join(dir, 'schema.ovsschema');
    fs.writeFileSync(schemaPath, JSON.stringify(options.schemaJson, null, 2));
  } else {
    throw new Error('startRealOvsdbServer: give schemaJson or schemaPath');
  }

  const dbPath = path.join(dir, 'db.db');
  const pidPath = path.join(dir, 'ovsdb-server.pid');
  const ctlPath = path.join(dir, 'ovsdb-server.ctl');
  const logPath = path.join(dir, 'ovsdb-server.log');
  let socketPath = path.join(dir, 'db.sock');
  // A deep test folder can make the socket path too long for sockaddr_un; then the socket goes
  // into a short private folder that stop() removes.
  let socketDir: string | undefined;
  if (Buffer.byteLength(socketPath) > SOCKET_PATH_BYTES_MAX || Buffer.byteLength(ctlPath) > SOCKET_PATH_BYTES_MAX) {
    socketDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ovsdb-'));
    socketPath = path.join(socketDir, 'db.sock');
  }
  const unixctlPath = socketDir === undefined ? ctlPath : path.join(socketDir, 'ctl');

  await execFileAsync('ovsdb-tool', ['create', dbPath, schemaPath]);
  await execFileAsync('ovsdb-server', [
    dbPath,
    `--remote=punix:${socketPath}`,
    '--detach',
    '--no-chdir',
    `--pidfile=${pidPath}`,
    `--unixctl=${unixctlPath}`,
    `--log-file=${logPath}`,
    '-vfile:info',
    '-vconsole:off',
  ]);

  const pid = Number.parseInt(fs.readFileSync(pidPath, 'utf8').trim(), 10);
  if (!Number.isInteger(pid) || pid <= 0) throw new Error(`bad pidfile ${pidPath}`);
  if (!isOurDaemon(pid, dbPath)) throw new Error(`pid ${pid} from ${pidPath} is not our ovsdb-server`);
  if (!fs.existsSync(socketPath)) throw new Error(`ovsdb-server detached but ${socketPath} does not exist`);
  liveDaemons.set(pid, dbPath);
  installExitHook();

  let stopped = false;
  return {
    socketPath,
    pid,
    dbPath,
    logPath,
    async stop(): Promise<void> {
      if (stopped) return;
      stopped = true;
      if (isOurDaemon(pid, dbPath) && isAlive(pid)) {
        process.kill(pid, 'SIGTERM');
        await waitForExit(pid, STOP_TIMEOUT_MS);
      }
      liveDaemons.delete(pid);
      if (socketDir !== undefined) fs.rmSync(socketDir, { recursive: true, force: true });
    },
  };
}
