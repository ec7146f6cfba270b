// Container ports and HA-placed ports with real processes: a cluster (`ovnts up`), `ovnts agent`
// on chassis that are network namespaces with their own ovs-vswitchd (userspace datapath), the
// real ovn-nbctl/ovn-sbctl through the OVSDB doors. A VM with containers is the VM's own
// switch tagging their frames: an OVS bridge in the chassis's ovs-vswitchd whose trunk port is a
// veth to br-int carrying the VM's iface-id, each container a namespace host on an access port
// with its VLAN tag (what a VLAN subinterface in the VM does; this kernel has no 8021q). A
// container pings only if the agent claimed its port with the parent and installed the tagged
// flows (the parent has port security on its own MAC, so the containers' frames cannot pass as
// the parent's). HA: the chassisredirect port of a gateway port with two gateway chassis, and an
// external port with an HA_Chassis_Group, are bound where the priorities say, and follow them
// (BFD between the two gateways keeps both alive; failover on a dead host: e2e-gateway-ha).
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import t, { type Test } from 'tap';
import type { ChassisHost } from '../helpers/chassis-host.js';
import { chassisWithAgent, clusterWithAgents, e2eSkip as skip, nbctlOf, pingBecomes, sbctlOf, untilLogged, type Agent } from '../helpers/agent-e2e.js';
import type { NsHost } from '../helpers/netns.js';
import { createNsHost } from '../helpers/netns.js';
import { stopPid } from '../helpers/process.js';

const run = promisify(execFile);

interface Container {
  readonly tag: number;
  readonly mac: string;
  readonly cidr: string;
}

interface VmWithContainers {
  readonly containers: NsHost[];
  /** Takes the VM's interface off br-int. */
  detach(): Promise<void>;
}

let vms = 0;

/** A VM with containers on chassis `ch` (see the file's comment); torn down with t. */
async function addVmWithContainers(t: Test, ch: ChassisHost, ifaceId: string, containers: readonly Container[]): Promise<VmWithContainers> {
  const n = ++vms;
  const bridge = `brvm${n}`;
  const [up, down] = [`vmt${n}a`, `vmt${n}b`];
  const inNs = (...args: string[]): Promise<unknown> => run('ip', ['netns', 'exec', ch.ns, ...args]);
  await inNs('ip', 'link', 'add', up, 'type', 'veth', 'peer', 'name', down);
  for (const dev of [up, down]) {
    // The userspace datapath does not compute checksums a veth leaves to offload.
    await inNs('ethtool', '-K', dev, 'tx', 'off');
    await inNs('ip', 'link', 'set', dev, 'up');
  }
  await ch.ovs.vsctl('add-br', bridge, '--', 'set', 'Bridge', bridge, 'datapath_type=netdev');
  await ch.ovs.vsctl('add-port', bridge, down);
  const hosts: NsHost[] = [];
  for (const c of containers) {
    const host = await createNsHost({ mac: c.mac, cidr: c.cidr, peerNetns: ch.ns });
    t.teardown(() => host.remove());
    await ch.ovs.vsctl('add-port', bridge, host.peer, `tag=${c.tag}`);
    hosts.push(host);
  }
  await ch.ovs.vsctl('add-port', 'br-int', up, '--', 'set', 'Interface', up, `external_ids:iface-id=${ifaceId}`);
  return { containers: hosts, detach: async () => void (await ch.ovs.vsctl('--if-exists', 'del-port', 'br-int', up)) };
}

/** The name of the chassis a Port_Binding is bound to ('' when none). */
async function boundTo(sbctl: (...a: string[]) => Promise<string>, port: string): Promise<string> {
  const uuid = await sbctl('--bare', '--columns=chassis', 'find', 'Port_Binding', `logical_port=${port}`);
  return uuid === '' ? '' : sbctl('--bare', '--columns=name', 'list', 'Chassis', uuid);
}

t.test('container ports: bound and up with their parent, tagged traffic on their own switch, released when deleted or when the parent goes', { skip }, async (t) => {
  const { env, hv1, agent } = await chassisWithAgent(t, '172.30.21');
  const nbctl = nbctlOf(env);
  const sbctl = sbctlOf(env);

  // sw0: the VM vm1, vm2, and c1 = VLAN 10 inside vm1. sw1, another switch (a trunk subport):
  // vm3, and c2 = VLAN 20 inside vm1.
  await nbctl('ls-add', 'sw0');
  await nbctl('ls-add', 'sw1');
  await nbctl('lsp-add', 'sw0', 'vm1', '--', 'lsp-set-addresses', 'vm1', '0a:00:00:00:21:01 10.21.9.1', '--', 'lsp-set-port-security', 'vm1', '0a:00:00:00:21:01');
  await nbctl('lsp-add', 'sw0', 'vm2', '--', 'lsp-set-addresses', 'vm2', '0a:00:00:00:21:02 10.21.0.2');
  await nbctl('lsp-add', 'sw1', 'vm3', '--', 'lsp-set-addresses', 'vm3', '0a:00:00:00:22:03 10.22.0.3');
  await nbctl('lsp-add', 'sw0', 'c1', 'vm1', '10', '--', 'lsp-set-addresses', 'c1', '0a:00:00:00:21:11 10.21.0.11');
  await nbctl('lsp-add', 'sw1', 'c2', 'vm1', '20', '--', 'lsp-set-addresses', 'c2', '0a:00:00:00:22:12 10.22.0.12');

  // vm1 first, alone on the chassis: nothing else makes sw1 local, so c2's Port_Binding can only
  // come with vm1's iface-id (its parent_port).
  const vm1 = await addVmWithContainers(t, hv1, 'vm1', [{ tag: 10, mac: '0a:00:00:00:21:11', cidr: '10.21.0.11/24' }, { tag: 20, mac: '0a:00:00:00:22:12', cidr: '10.22.0.12/24' }]);
  const [c1, c2] = vm1.containers as [NsHost, NsHost];
  for (const p of ['vm1', 'c1', 'c2']) {
    await untilLogged(`${p} up`, async () => ((await nbctl('lsp-get-up', p)) === 'up' ? true : undefined), 60_000, [agent]);
    t.equal(await boundTo(sbctl, p), 'hv1', `${p} is bound to hv1 and up`);
  }
  await hv1.addVm('vm2', { mac: '0a:00:00:00:21:02', cidr: '10.21.0.2/24' });
  await hv1.addVm('vm3', { mac: '0a:00:00:00:22:03', cidr: '10.22.0.3/24' });

  await pingBecomes(c1, '10.21.0.2', true, 'c1 (VLAN 10 in vm1) pings vm2', [agent]);
  t.pass('the container on its parent\'s switch reaches vm2 through the tagged port');
  await pingBecomes(c2, '10.22.0.3', true, 'c2 (VLAN 20 in vm1) pings vm3 on sw1', [agent]);
  t.pass('the container on another switch reaches vm3');
  t.match(await c1.exec('ip', 'neigh', 'show', '10.21.0.2'), /0a:00:00:00:21:02/, 'c1 resolved vm2 by ARP over VLAN 10');

  await nbctl('lsp-del', 'c1');
  await pingBecomes(c1, '10.21.0.2', false, 'c1\'s ping stops once c1 is deleted', [agent]);
  t.ok(await c2.ping('10.22.0.3'), 'c2 still pings vm3');

  await vm1.detach();
  await untilLogged('c2 released with its parent', async () => ((await boundTo(sbctl, 'c2')) === '' ? true : undefined), 30_000, [agent]);
  t.equal(await nbctl('lsp-get-up', 'c2'), 'down', 'c2 is down once its parent\'s interface is gone');
  t.equal(await boundTo(sbctl, 'vm1'), '', 'and vm1 is released');
});

t.test('a VM with a container moves to another chassis: the container port moves with it', { skip }, async (t) => {
  const { env, hosts: [hv1, hv2], agents } = await clusterWithAgents(t, '172.30.22', ['hv1', 'hv2']);
  const nbctl = nbctlOf(env);
  const sbctl = sbctlOf(env);
  await nbctl('ls-add', 'sw0');
  await nbctl('lsp-add', 'sw0', 'vm1', '--', 'lsp-set-addresses', 'vm1', '0a:00:00:00:23:01 10.23.9.1', '--', 'lsp-set-port-security', 'vm1', '0a:00:00:00:23:01');
  await nbctl('lsp-add', 'sw0', 'vm2', '--', 'lsp-set-addresses', 'vm2', '0a:00:00:00:23:02 10.23.0.2');
  await nbctl('lsp-add', 'sw0', 'c1', 'vm1', '30', '--', 'lsp-set-addresses', 'c1', '0a:00:00:00:23:11 10.23.0.11');
  // vm2 stays on hv2; vm1 with its container starts on hv1.
  await hv2.addVm('vm2', { mac: '0a:00:00:00:23:02', cidr: '10.23.0.2/24' });
  const c1 = { tag: 30, mac: '0a:00:00:00:23:11', cidr: '10.23.0.11/24' };
  const before = await addVmWithContainers(t, hv1, 'vm1', [c1]);
  await pingBecomes(before.containers[0] as NsHost, '10.23.0.2', true, 'c1 on hv1 pings vm2 on hv2 through Geneve', agents);
  t.equal(await boundTo(sbctl, 'c1'), 'hv1', 'c1 is bound to hv1 with vm1');

  // The VM moves: its interface leaves hv1 and a new one with the same iface-id appears on hv2.
  await before.detach();
  await (before.containers[0] as NsHost).remove();
  const after = await addVmWithContainers(t, hv2, 'vm1', [c1]);
  await pingBecomes(after.containers[0] as NsHost, '10.23.0.2', true, 'c1 pings vm2 again from hv2', agents);
  for (const p of ['vm1', 'c1']) {
    await untilLogged(`${p} bound to hv2 and up`, async () => ((await boundTo(sbctl, p)) === 'hv2' && (await nbctl('lsp-get-up', p)) === 'up' ? true : undefined), 30_000, agents);
  }
  t.pass('vm1 and c1 are bound to hv2 and up');
});

t.test('a gateway port and an external port on two chassis: they follow HA priority; a member cut off claims nothing', { skip }, async (t) => {
  const { env, agents } = await clusterWithAgents(t, '172.30.23', ['gw1', 'gw2']);
  const nbctl = nbctlOf(env);
  const sbctl = sbctlOf(env);
  await nbctl('lr-add', 'lr0');
  await nbctl('lrp-add', 'lr0', 'lrp-pub', '00:00:00:23:ff:01', '172.16.23.1/24');
  await nbctl('lrp-set-gateway-chassis', 'lrp-pub', 'gw1', '20');
  await nbctl('lrp-set-gateway-chassis', 'lrp-pub', 'gw2', '10');
  const at = (name: string, what: string, port = 'cr-lrp-pub'): Promise<true> =>
    untilLogged(what, async () => ((await boundTo(sbctl, port)) === name ? true : undefined), 60_000, agents);

  await at('gw1', 'cr-lrp-pub bound to gw1, the higher priority');
  t.pass('the highest-priority gateway chassis claimed the chassisredirect port');
  // The members name the agents' Chassis in their chassis column (what ovn-controller reads).
  const memberChassis = async (name: string): Promise<string> => sbctl('--bare', '--columns=chassis', 'find', 'HA_Chassis', `external_ids:chassis-name=${name}`);
  const chassisOf = async (name: string): Promise<string> => sbctl('--bare', '--columns=_uuid', 'find', 'Chassis', `name=${name}`);
  t.same([await memberChassis('gw1'), await memberChassis('gw2')], [await chassisOf('gw1'), await chassisOf('gw2')], 'each HA_Chassis references its registered Chassis');
  await nbctl('lrp-set-gateway-chassis', 'lrp-pub', 'gw2', '30');
  await at('gw2', 'cr-lrp-pub moves to gw2 once gw2 has the higher priority');
  t.pass('a priority change moves it');

  // An external port (a bare-metal host on a provider network) with its own HA_Chassis_Group.
  await nbctl('ha-chassis-group-add', 'hagrp');
  await nbctl('ha-chassis-group-add-chassis', 'hagrp', 'gw1', '10');
  await nbctl('ha-chassis-group-add-chassis', 'hagrp', 'gw2', '20');
  const group = await nbctl('--bare', '--columns=_uuid', 'find', 'HA_Chassis_Group', 'name=hagrp');
  await nbctl('ls-add', 'provider');
  await nbctl('lsp-add', 'provider', 'ext1', '--', 'lsp-set-type', 'ext1', 'external', '--', 'lsp-set-addresses', 'ext1', '0a:00:00:00:23:e1 172.16.23.50',
    '--', 'set', 'Logical_Switch_Port', 'ext1', `ha_chassis_group=${group}`);
  await at('gw2', 'ext1 bound to gw2, the higher priority of its group', 'ext1');
  t.pass('the external port is bound to its group\'s highest-priority chassis');

  // gw2's agent stops without cleanup (its Chassis row stays, as after a crash) while its switch
  // runs on: its BFD session with gw1 stays up, so to gw1 it is alive and nothing moves (a dead
  // host's ports do move: e2e-gateway-ha.test.ts). "Nothing moves" is checked once gw1 has
  // acknowledged a later revision (its Chassis_Private.nb_cfg reached a new nb_cfg).
  const gw1Acks = async (what: string): Promise<void> => {
    await nbctl('--wait=sb', 'sync');
    const nbCfg = Number(await nbctl('get', 'NB_Global', '.', 'nb_cfg'));
    await untilLogged(what, async () => (Number(await sbctl('--bare', '--columns=nb_cfg', 'find', 'Chassis_Private', 'name=gw1')) >= nbCfg ? true : undefined), 60_000, agents);
  };
  await stopPid((agents[1] as Agent).pid, (argv) => argv.includes('agent'));
  await gw1Acks('gw1 acknowledges the revision after gw2 stopped');
  t.equal(await boundTo(sbctl, 'cr-lrp-pub'), 'gw2', 'a chassis whose agent stopped but whose switch keeps BFD up keeps the port');
  t.equal(await boundTo(sbctl, 'ext1'), 'gw2', 'and the external port');
  // An operator deletes gw2's Chassis: its members reference no Chassis and gw1's tunnel to it
  // goes. gw1 is then the only member left, with no live BFD session and no chassis using the
  // groups (ref_chassis): as ovn-controller, it takes itself for cut off and claims neither.
  await sbctl('chassis-del', 'gw2');
  await gw1Acks('gw1 acknowledges the revision after gw2 was deleted');
  t.equal(await boundTo(sbctl, 'cr-lrp-pub'), '', 'gw1, alone without a live session, does not claim the gateway port');
  t.equal(await boundTo(sbctl, 'ext1'), '', 'nor the external port');
  t.equal(await memberChassis('gw2'), '', 'gw2\'s members (of both groups) reference no Chassis any more');
});
