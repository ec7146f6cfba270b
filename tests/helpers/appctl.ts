// The real ovs-appctl and ovn-appctl, as the tests of our control sockets run them: exit code,
// stdout and stderr, a server error (exit 2) being a result rather than a throw.
import { execFile, execFileSync } from 'node:child_process';

export interface AppctlReply {
  readonly code: number;
  readonly out: string;
  readonly err: string;
}

/** `tool --timeout=30 ARGS...` with `env` added to this process's environment (OVS_RUNDIR, OVN_RUNDIR). */
export function runAppctl(tool: 'ovs-appctl' | 'ovn-appctl', args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<AppctlReply> {
  return new Promise((resolve) => {
    execFile(tool, ['--timeout=30', ...args], { env: { ...process.env, ...env } }, (error, out, err) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, out, err });
    });
  });
}

/** Whether `tool` can be run here. */
export function toolInstalled(tool: string): boolean {
  try {
    execFileSync(tool, ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
