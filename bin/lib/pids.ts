// Process liveness and stopping by pid, for the commands that start members (ovnts up/down)
// and for the tests and benchmarks that start real daemons.
// Liveness comes from /proc/PID/stat (a dead child can linger as a zombie here, and kill -0
// says a zombie is alive); a pid is signalled only after /proc/PID/cmdline shows it is still
// the process we started (pids are reused).
import fs from 'node:fs';

/** Process state letter from /proc/PID/stat, or undefined when the process no longer exists. */
export function processState(pid: number): string | undefined {
  let stat: string;
  try {
    stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  // The command name is in parentheses and may contain spaces; the state follows the last ')'.
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
}

export function isAlive(pid: number): boolean {
  const state = processState(pid);
  return state !== undefined && state !== 'Z' && state !== 'X';
}

/** The argv of a live process, or undefined when it is gone. */
export function processArgv(pid: number): string[] | undefined {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

export async function waitForExit(pid: number, timeoutMs: number, pollMs = 5): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (isAlive(pid)) {
    if (Date.now() > deadline) throw new Error(`pid ${pid} still alive ${timeoutMs} ms after it was signalled`);
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}

/**
 * Sends `signal` to pid if it is still the process `isOurs` recognizes by its argv, then waits
 * for it to exit (or become a zombie).
 */
export async function stopPid(pid: number, isOurs: (argv: readonly string[]) => boolean, signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 10_000): Promise<void> {
  const argv = processArgv(pid);
  if (argv === undefined || !isOurs(argv) || !isAlive(pid)) return;
  process.kill(pid, signal);
  await waitForExit(pid, timeoutMs);
}
