// A process's control socket (ovs-appctl/ovn-appctl's target) and, for the agent, its
// pidfile, as the commands open them. A path given on the command line must work: the process
// refuses to start without it. A default one (in OVN_RUNDIR, which may be missing or not
// writable on a development machine) is best effort: the process warns and runs without it.
// "none" turns either off, as Open vSwitch's --unixctl=none does. Several socket paths,
// comma-separated, give the same commands at each: a central member can answer at both names
// ovn-ctl gives OVN's databases (ovnnb_db.ctl, ovnsb_db.ctl).
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
  /** --unixctl as given: a path, several comma-separated, or none (undefined: defaultUnixctl). */
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
  /** The sockets open (none: "none", or the default could not be opened). */
  readonly servers: readonly UnixctlServer[];
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

/** Writes the pidfile (first: a running holder refuses the start), then opens the sockets. */
export async function openControl(o: ControlOptions): Promise<Control> {
  const pidfile = await attempt(o.pidfile, o.defaultPidfile, 'pidfile', createPidfile, o.warn);
  const commands = [...o.commands];
  const servers: UnixctlServer[] = [];
  const close = async (): Promise<void> => {
    for (const s of servers) await s.close();
    await pidfile?.close();
  };
  try {
    const given = o.unixctl === undefined || o.unixctl === NONE ? [o.unixctl] : o.unixctl.split(',').filter((p) => p !== '');
    for (const path of given) {
      const server = await attempt(path, o.defaultUnixctl, 'control socket', (p) => UnixctlServer.listen({ path: p, version: o.version, commands, onProblem: o.warn }), o.warn);
      if (server !== undefined) servers.push(server);
    }
  } catch (err) {
    await close();
    throw err;
  }
  return { servers, pidfile, close };
}
