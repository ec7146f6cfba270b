// Hypervisors for end-to-end tests: each chassis is a network namespace running its own
// ovs-vswitchd (userspace datapath) with a br-phy bridge on a shared underlay (a Linux bridge in
// a namespace of its own), its tunnel endpoint address on br-phy, and VMs that are namespace
// hosts whose veths end in the chassis's namespace. The Open_vSwitch row carries what an OVN
// chassis reads (system-id, ovn-encap-*, ovn-remote); the integration bridge is the agent's to
// create. Everything is removed by name or stopped by pid.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { createNsHost, type NsHost, type NsHostOptions } from './netns.js';
import { startOvsSwitch, type OvsSwitch } from './ovs-switch.js';

const execFileAsync = promisify(execFile);

export interface Underlay {
  readonly ns: string;
  /** The underlay's /24: chassis i gets .i */
  readonly prefix: string;
  remove(): Promise<void>;
}

let counter = 0;

async function ip(...args: string[]): Promise<string> {
  return (await execFileAsync('ip', args)).stdout;
}

export async function createUnderlay(prefix = '172.31.0'): Promise<Underlay> {
  const ns = `ovnts-ul-${process.pid}-${++counter}`;
  await ip('netns', 'add', ns);
  try {
    await ip('netns', 'exec', ns, 'ip', 'link', 'add', 'ul0', 'type', 'bridge');
    await ip('netns', 'exec', ns, 'ip', 'link', 'set', 'ul0', 'up');
  } catch (err) {
    await ip('netns', 'del', ns).catch(() => undefined);
    throw err;
  }
  return { ns, prefix, remove: () => ip('netns', 'del', ns).then(() => undefined, () => undefined) };
}

export interface ChassisHost {
  /** The chassis name (Open_vSwitch external_ids:system-id). */
  readonly name: string;
  readonly ns: string;
  readonly encapIp: string;
  readonly ovs: OvsSwitch;
  /** A VM: a namespace host whose veth is added to br-int with external_ids:iface-id. */
  addVm(ifaceId: string, host: Omit<NsHostOptions, 'peerNetns'>): Promise<NsHost>;
  /** Takes a VM's interface off br-int (the VM's namespace stays). */
  detachVm(vm: NsHost): Promise<void>;
  stop(): Promise<void>;
}

export interface ChassisHostOptions {
  readonly name: string;
  /** 1..254: the chassis's address on the underlay. */
  readonly index: number;
  /** external_ids:ovn-remote, if the agent is to read it from there. */
  readonly ovnRemote?: string;
  /** external_ids:ovn-encap-type; geneve unless given. */
  readonly encapType?: string;
}

export async function createChassisHost(underlay: Underlay, options: ChassisHostOptions): Promise<ChassisHost> {
  const ns = `ovnts-ch-${process.pid}-${++counter}`;
  const inNs = (cmd: string, ...args: string[]): Promise<string> => ip('netns', 'exec', ns, cmd, ...args);
  const encapIp = `${underlay.prefix}.${options.index}`;
  const here = `u${process.pid}_${counter}`.slice(0, 15);
  const there = `w${process.pid}_${counter}`.slice(0, 15);
  const vms: NsHost[] = [];
  let ovs: OvsSwitch | undefined;
  await ip('netns', 'add', ns);
  try {
    await inNs('ip', 'link', 'set', 'lo', 'up');
    await ip('link', 'add', here, 'type', 'veth', 'peer', 'name', there);
    await ip('link', 'set', here, 'netns', ns);
    await ip('link', 'set', there, 'netns', underlay.ns);
    await ip('netns', 'exec', underlay.ns, 'ip', 'link', 'set', there, 'master', 'ul0');
    await ip('netns', 'exec', underlay.ns, 'ethtool', '-K', there, 'tx', 'off');
    await ip('netns', 'exec', underlay.ns, 'ip', 'link', 'set', there, 'up');
    await inNs('ethtool', '-K', here, 'tx', 'off');
    await inNs('ip', 'link', 'set', here, 'up');
    ovs = await startOvsSwitch({ bridge: 'br-phy', realDevices: true, netns: ns });
    await ovs.vsctl('add-port', 'br-phy', here);
    await ovs.ofctl('add-flow', 'priority=0,actions=NORMAL');
    await inNs('ip', 'link', 'set', 'br-phy', 'up');
    await inNs('ip', 'addr', 'add', `${encapIp}/24`, 'dev', 'br-phy');
    const ids = [`external_ids:system-id=${options.name}`, `external_ids:hostname=${options.name}`,
      `external_ids:ovn-encap-type=${options.encapType ?? 'geneve'}`, `external_ids:ovn-encap-ip=${encapIp}`, 'external_ids:ovn-bridge=br-int'];
    if (options.ovnRemote !== undefined) ids.push(`external_ids:ovn-remote="${options.ovnRemote}"`);
    await ovs.vsctl('set', 'Open_vSwitch', '.', ...ids);
  } catch (err) {
    await ovs?.stop();
    await ip('netns', 'del', ns).catch(() => undefined);
    throw err;
  }
  const sw = ovs;
  return {
    name: options.name,
    ns,
    encapIp,
    ovs: sw,
    async addVm(ifaceId, host) {
      const vm = await createNsHost({ ...host, peerNetns: ns });
      vms.push(vm);
      await sw.vsctl('add-port', 'br-int', vm.peer, '--', 'set', 'Interface', vm.peer, `external_ids:iface-id=${ifaceId}`);
      return vm;
    },
    async detachVm(vm) {
      await sw.vsctl('--if-exists', 'del-port', 'br-int', vm.peer);
    },
    async stop() {
      for (const vm of vms) await vm.remove();
      await sw.stop();
      await ip('netns', 'del', ns).catch(() => undefined);
    },
  };
}
