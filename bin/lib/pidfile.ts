// A pidfile kept as Open vSwitch's daemons keep theirs, so that `ovn-appctl -t ovn-controller`
// finds the agent by name: ovs-appctl and ovn-appctl read <rundir>/NAME.pid and connect to
// <rundir>/NAME.<pid>.ctl, but only when that pidfile is locked (fcntl F_SETLK, a write lock
// on the whole file) by the very process whose pid it holds; an unlocked one is stale to them
// (lib/daemon-unix.c, read_pidfile). Node has no fcntl locks. LevelDB takes exactly that lock
// on its LOCK file and holds it while the database is open (util/env_posix.cc, LockFile), so
// the lock is taken by opening a throwaway LevelDB whose LOCK is a symbolic link to the
// pidfile. As Open vSwitch does, the pid is written to NAME.pid.tmp, locked there and renamed
// into place, so the name never shows an unlocked file; and a pidfile locked by a live process
// refuses the start ("already running").
//
// POSIX drops every lock a process holds on a file when it closes any descriptor of that file:
// this process must never open its own pidfile once it holds it.
import { mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { Level } from 'level';
import { isAlive } from './pids.js';

export class PidfileError extends Error {
  constructor(readonly kind: 'running' | 'io', message: string) {
    super(message);
  }
}

export interface Pidfile {
  readonly path: string;
  /** Unlocks and removes the pidfile (when it is still this process's). Idempotent. */
  close(): Promise<void>;
}

/** A LevelDB used only for its LOCK, a symbolic link to `target`, in a folder of its own. */
interface FileLock {
  readonly dir: string;
  readonly db: Level<string, string>;
}

/** The lock folders' names: the prefix, the pid of the process that made one, a dash. */
const LOCK_DIR_PREFIX = 'ovnts-pidlock-';

/**
 * Removes the lock folders of processes that are gone (a process killed with SIGKILL leaves
 * its own): their pid is in the name. Folders of other users are left alone.
 */
function sweepLockDirs(): void {
  const base = tmpdir();
  for (const name of readdirSync(base)) {
    const m = new RegExp(`^${LOCK_DIR_PREFIX}(\\d+)-`).exec(name);
    if (m === null || isAlive(Number(m[1]))) continue;
    try {
      rmSync(join(base, name), { recursive: true, force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EACCES' && (err as NodeJS.ErrnoException).code !== 'EPERM') throw err;
    }
  }
}

async function lockThrough(target: string): Promise<FileLock | 'held'> {
  const dir = mkdtempSync(join(tmpdir(), `${LOCK_DIR_PREFIX}${process.pid}-`));
  try {
    symlinkSync(resolve(target), join(dir, 'LOCK'));
    // Small buffers: nothing is ever written to this database.
    const db = new Level<string, string>(dir, { cacheSize: 0, writeBufferSize: 4096 });
    await db.open();
    return { dir, db };
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    if ((err as { cause?: { code?: string } }).cause?.code === 'LEVEL_LOCKED') return 'held';
    throw new PidfileError('io', `${target}: cannot lock: ${(err as Error).message}`);
  }
}

async function unlock(lock: FileLock): Promise<void> {
  await lock.db.close();
  rmSync(lock.dir, { recursive: true, force: true });
}

function inodeOf(path: string): number | undefined {
  try {
    return statSync(path).ino;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/**
 * Writes this process's pid to `path`, locked as Open vSwitch locks its pidfiles. Refuses
 * (PidfileError 'running') when a live process holds the lock of the file there now; a stale
 * one is replaced.
 */
export async function createPidfile(path: string): Promise<Pidfile> {
  sweepLockDirs();
  // The pid a running holder wrote, read before this process opens any lock on the file.
  let existing: string | undefined;
  try {
    existing = readFileSync(path, 'utf8').trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw new PidfileError('io', `${path}: ${(err as Error).message}`);
  }
  const check = existing === undefined ? undefined : await lockThrough(path);
  if (check === 'held') throw new PidfileError('running', `${path}: already running as pid ${existing}, aborting`);
  const tmp = `${path}.tmp`;
  let lock: FileLock | 'held' | undefined;
  try {
    try {
      writeFileSync(tmp, `${process.pid}\n`, { mode: 0o644 });
    } catch (err) {
      throw new PidfileError('io', `${tmp}: ${(err as Error).message} (is ${dirname(path)} there and writable?)`);
    }
    lock = await lockThrough(tmp);
    if (lock === 'held') throw new PidfileError('running', `${tmp}: locked by another process`);
    renameSync(tmp, path);
  } catch (err) {
    if (lock !== undefined && lock !== 'held') await unlock(lock);
    rmSync(tmp, { force: true });
    throw err;
  } finally {
    // The stale file's lock (its inode is gone from the name now, or stays as it was).
    if (check !== undefined) await unlock(check);
  }
  const held = lock;
  const inode = inodeOf(path);
  let closed: Promise<void> | undefined;
  return {
    path,
    close() {
      closed ??= (async () => {
        // Only the file this process put there: another may have replaced it meanwhile.
        if (inode !== undefined && inodeOf(path) === inode) unlinkSync(path);
        await unlock(held);
      })();
      return closed;
    },
  };
}
