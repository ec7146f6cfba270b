// A process's control socket (ovs-appctl/ovn-appctl's target) and, for the agent, its
// pidfile, as the commands open them. A path given on the command line must work: the process
// refuses to start without it. A default one (in OVN_RUNDIR, which may be missing or not
// writable on a development machine) is best effort: the process warns and runs without it.
// "none" turns either off, as Open vSwitch's --unixctl=none does.
import { UnixctlServer, type UnixctlCommand } from '../../ovsdb/unixctl-server.js';
import { createPidfile, type Pidfile } from './pidfile.js';

/** Open vSwitch's word for "no control socket". */
export const NONE = 'none';

/** Where OVN's daemons keep their sockets and pidfiles: $OVN_RUNDIR, else /var/run/ovn. */
export function ovnRundir(env: NodeJS.ProcessEnv = process.env): string {
  const dir = env.OVN_RUNDIR;
  return dir !== undefined && dir !== '' ? dir : '/var/run/ovn';
}

export class ControlSocketError extends Error {}

export interface ControlOptions {
  /** --unixctl as given (undefined: defaultPath). */
  readonly unixctl: string | undefined;
  readonly defaultUnixctl: string;
  /** --pidfile as given (undefined: defaultPidfile, if any). */
  readonly pidfile?: string | undefined;
  readonly defaultPidfile?: string;
  readonly version: string;
  readonly commands: Iterable<readonly [string, UnixctlCommand]>;
  readonly warn: (message: string) => void;
}

export interface Control {
  readonly server: UnixctlServer | undefined;
  readonly pidfile: Pidfile | undefined;
  /** Stops the socket and removes it and the pidfile. */
  close(): Promise<void>;
}

/** A path as given (must work), by default (best effort), or none. */
async function attempt<T>(given: string | undefined, fallback: string | undefined, what: string, open: (path: string) => Promise<T>, warn: (m: string) => void): Promise<T | undefined> {
  const path = given ?? fallback;
  if (path === undefined || path === NONE) return undefined;
  try {
    return await open(path);
  } catch (err) {
    if (given !== undefined) throw new ControlSocketError(`${what}: ${(err as Error).message}`, { cause: err });
    warn(`no ${what}: ${(err as Error).message}`);
    return undefined;
  }
}

/** Writes the pidfile (first: a running holder refuses the start), then opens the socket. */
export async function openControl(o: ControlOptions): Promise<Control> {
  const pidfile = await attempt(o.pidfile, o.defaultPidfile, 'pidfile', createPidfile, o.warn);
  let server: UnixctlServer | undefined;
  try {
    server = await attempt(o.unixctl, o.defaultUnixctl, 'control socket', (path) => UnixctlServer.listen({ path, version: o.version, commands: o.commands, onProblem: o.warn }), o.warn);
  } catch (err) {
    await pidfile?.close();
    throw err;
  }
  return {
    server,
    pidfile,
    async close() {
      await server?.close();
      await pidfile?.close();
    },
  };
}
