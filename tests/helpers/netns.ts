// Test hosts in network namespaces: each host is a namespace with one veth whose other end stays
// in the test's namespace, to be added to an Open vSwitch bridge (userspace datapath). Names are
// unique per process; namespaces are deleted by name at the end (deleting a namespace deletes the
// veth inside it and so its peer), and on process exit for any a failed test left behind.
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

export interface NsHostOptions {
  readonly mac: string;
  /** Address with prefix length, e.g. 10.0.0.2/24; omit for a host that gets it by DHCP. */
  readonly cidr?: string;
  readonly gateway?: string;
  readonly mtu?: number;
  /** Put the outer veth end in this namespace (a chassis's) instead of the test's. */
  readonly peerNetns?: string;
}

export interface NsHost {
  /** The namespace's name. */
  readonly ns: string;
  /** The veth end inside the namespace (named eth0 there). */
  readonly dev: string;
  /** The veth end in the test's namespace: add it to the bridge. */
  readonly peer: string;
  readonly mac: string;
  /** Runs a command inside the namespace; rejects on a non-zero exit. */
  exec(cmd: string, ...args: string[]): Promise<string>;
  /** Whether one ping from this host reaches 'ip' within timeoutS seconds. */
  ping(ip: string, timeoutS?: number): Promise<boolean>;
  remove(): Promise<void>;
}

let counter = 0;
const created = new Set<string>();
let hookInstalled = false;

async function ip(...args: string[]): Promise<string> {
  return (await execFileAsync('ip', args)).stdout;
}

/** Whether this process may create namespaces (root with iproute2). */
export function netnsAvailable(): boolean {
  try {
    execFileSync('ip', ['netns', 'list'], { stdio: 'ignore' });
    return process.getuid?.() === 0;
  } catch {
    return false;
  }
}

export async function createNsHost(options: NsHostOptions): Promise<NsHost> {
  if (!hookInstalled) {
    hookInstalled = true;
    process.on('exit', () => {
      for (const ns of created) {
        try {
          execFileSync('ip', ['netns', 'del', ns], { stdio: 'ignore' });
        } catch {
          // Already gone.
        }
      }
    });
  }
  const n = ++counter;
  const ns = `ovnts-${process.pid}-${n}`;
  const peer = `ov${process.pid}_${n}`.slice(0, 15);
  const inner = `oi${process.pid}_${n}`.slice(0, 15);
  await ip('netns', 'add', ns);
  created.add(ns);
  const inNs = async (cmd: string, ...args: string[]): Promise<string> => (await execFileAsync('ip', ['netns', 'exec', ns, cmd, ...args])).stdout;
  try {
    await ip('link', 'add', peer, 'type', 'veth', 'peer', 'name', inner);
    await ip('link', 'set', inner, 'netns', ns);
    await inNs('ip', 'link', 'set', inner, 'name', 'eth0');
    await inNs('ip', 'link', 'set', 'eth0', 'address', options.mac);
    if (options.mtu !== undefined) {
      await inNs('ip', 'link', 'set', 'eth0', 'mtu', String(options.mtu));
      await ip('link', 'set', peer, 'mtu', String(options.mtu));
    }
    const outer = async (cmd: string, ...args: string[]): Promise<unknown> =>
      options.peerNetns === undefined ? execFileAsync(cmd, args) : execFileAsync('ip', ['netns', 'exec', options.peerNetns, cmd, ...args]);
    if (options.peerNetns !== undefined) await ip('link', 'set', peer, 'netns', options.peerNetns);
    // The userspace datapath does not compute checksums a veth leaves to offload.
    await inNs('ethtool', '-K', 'eth0', 'tx', 'off');
    await outer('ethtool', '-K', peer, 'tx', 'off');
    await inNs('ip', 'link', 'set', 'lo', 'up');
    await inNs('ip', 'link', 'set', 'eth0', 'up');
    await outer('ip', 'link', 'set', peer, 'up');
    if (options.cidr !== undefined) await inNs('ip', 'addr', 'add', options.cidr, 'dev', 'eth0');
    if (options.gateway !== undefined) await inNs('ip', 'route', 'add', 'default', 'via', options.gateway);
  } catch (err) {
    await ip('netns', 'del', ns).catch(() => undefined);
    created.delete(ns);
    throw err;
  }
  let removed = false;
  return {
    ns,
    dev: 'eth0',
    peer,
    mac: options.mac,
    exec: inNs,
    async ping(target: string, timeoutS = 2): Promise<boolean> {
      try {
        await inNs('ping', '-c', '1', '-W', String(timeoutS), target);
        return true;
      } catch {
        return false;
      }
    },
    async remove(): Promise<void> {
      if (removed) return;
      removed = true;
      await ip('netns', 'del', ns).catch(() => undefined);
      created.delete(ns);
    },
  };
}
