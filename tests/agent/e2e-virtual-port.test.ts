// A VRRP-style VIP on a virtual port, with real packets: a 3-member cluster (`ovnts up`), the real
// ovn-nbctl and ovn-sbctl through the OVSDB doors, `ovnts agent` on a chassis that is a network
// namespace with its own ovs-vswitchd (userspace datapath), VMs in namespaces. The VIP's owner
// announces it with a gratuitous ARP (busybox arping -U): the agent's pinctrl claims the virtual
// port for its chassis with the owner as virtual_parent, the planner marks it up, the router
// resolves the VIP to the owner's MAC, and a VM behind the router pings the VIP. The VIP then
// moves to the other parent (claimed again through it), and the parent's interface going away
// releases the virtual port. Then the real ovn-controller 23.03.1 as the oracle: the same VM
// announcing the VIP on a chassis it runs gets the virtual port claimed the same way (its pinctrl's
// SB write goes through our OVSDB door), and both bridges hold the same bind_vport flows.
// Processes are stopped by pid, namespaces are the test's own.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import {
  chassisWithAgent, chassisWithOvnController, e2eSkip, linkSwitchToRouter, nbctlOf, pingBecomes, sbctlOf, startChassisWithAgents, untilLogged,
} from '../helpers/agent-e2e.js';
import { createUnderlay } from '../helpers/chassis-host.js';
import type { NsHost } from '../helpers/netns.js';
import { until, upCluster } from '../helpers/ovnts-cli.js';
import { testdirAfterTeardowns } from '../helpers/testdir.js';

const run = promisify(execFile);

async function hasBusyboxArping(): Promise<boolean> {
  try {
    const { stdout, stderr } = await run('busybox', ['--list']);
    return `${stdout}${stderr}`.split('\n').includes('arping');
  } catch {
    return false;
  }
}
const skip = e2eSkip || (!(await hasBusyboxArping()) && 'busybox with arping is not installed (gratuitous ARPs are sent with busybox arping -U)');

const VIP = '10.19.0.100';

/** Takes `vip` on the VM's interface and announces it with gratuitous ARPs. */
async function announce(vm: NsHost, vip: string): Promise<void> {
  await vm.exec('ip', 'addr', 'add', `${vip}/24`, 'dev', 'eth0');
  await vm.exec('busybox', 'arping', '-U', '-c', '2', '-w', '3', '-I', 'eth0', '-s', vip, vip).catch(() => '');
}

/** The virtual port's chassis-owned columns, as ovn-sbctl prints them. */
async function bindingOf(sbctl: (...args: string[]) => Promise<string>, port: string): Promise<{ chassis: string; parent: string; up: string }> {
  const column = (name: string): Promise<string> => sbctl('--bare', `--columns=${name}`, 'find', 'Port_Binding', `logical_port=${port}`);
  return { chassis: await column('chassis'), parent: await column('virtual_parent'), up: await column('up') };
}

t.test('a gratuitous ARP for the VIP binds the virtual port to the chassis of its parent; the VIP answers through a router', { skip }, async (t) => {
  const { env, hv1, agent } = await chassisWithAgent(t, '172.30.19');
  const nbctl = nbctlOf(env);
  const sbctl = sbctlOf(env);

  // sw0: the VIP's parents vm1 and vm2, and vip (virtual); sw1 behind lr0: vm4, the client.
  await nbctl('lr-add', 'lr0');
  for (const [i, net] of [[0, '10.19.0'], [1, '10.19.1']] as const) {
    await nbctl('ls-add', `sw${i}`);
    await linkSwitchToRouter(nbctl, `sw${i}`, 'lr0', `lrp${i}`, `00:00:00:19:0${i}:fe`, `${net}.254/24`);
  }
  for (const i of [1, 2]) await nbctl('lsp-add', 'sw0', `vm${i}`, '--', 'lsp-set-addresses', `vm${i}`, `0a:00:00:00:19:0${i} 10.19.0.${i}`);
  await nbctl('lsp-add', 'sw1', 'vm4', '--', 'lsp-set-addresses', 'vm4', '0a:00:00:00:19:04 10.19.1.4');
  await nbctl('lsp-add', 'sw0', 'vip', '--', 'lsp-set-type', 'vip', 'virtual', '--', 'lsp-set-options', 'vip', `virtual-ip=${VIP}`, 'virtual-parents=vm1,vm2');

  const vm1 = await hv1.addVm('vm1', { mac: '0a:00:00:00:19:01', cidr: '10.19.0.1/24', gateway: '10.19.0.254' });
  const vm2 = await hv1.addVm('vm2', { mac: '0a:00:00:00:19:02', cidr: '10.19.0.2/24', gateway: '10.19.0.254' });
  const vm4 = await hv1.addVm('vm4', { mac: '0a:00:00:00:19:04', cidr: '10.19.1.4/24', gateway: '10.19.1.254' });
  await pingBecomes(vm4, '10.19.0.1', true, 'vm4 reaches vm1 through lr0', [agent]);
  await pingBecomes(vm4, '10.19.0.2', true, 'and vm2', [agent]);

  const hv1Uuid = await sbctl('--bare', '--columns=_uuid', 'find', 'Chassis', 'name=hv1');
  const binding = (): ReturnType<typeof bindingOf> => bindingOf(sbctl, 'vip');
  const resolveFlow = async (): Promise<string> => (await sbctl('lflow-list', 'lr0')).split('\n').find((l) => l.includes(`reg0 == ${VIP})`)) ?? '';
  t.same(await binding(), { chassis: '', parent: '', up: 'false' }, 'unclaimed at first');
  t.match(await resolveFlow(), /eth\.dst = 00:00:00:00:00:00; next;/, 'the router asks for the VIP while it is unclaimed');

  // vm1 takes the VIP and announces it.
  await announce(vm1, VIP);
  const claimed = await untilLogged('vip claimed through vm1', async () => {
    const b = await binding();
    return b.chassis === hv1Uuid && b.parent === 'vm1' && b.up === 'true' ? b : undefined;
  }, 60_000, [agent]);
  t.same(claimed, { chassis: hv1Uuid, parent: 'vm1', up: 'true' }, 'bound to hv1 with virtual_parent vm1, up with its parent');
  t.match(agent.output(), /claimed virtual port vip for this chassis with the virtual parent vm1/, 'pinctrl logged the claim');
  await untilLogged('lr0 resolves the VIP to vm1', async () => ((await resolveFlow()).includes('eth.dst = 0a:00:00:00:19:01;') ? true : undefined), 30_000, [agent]);
  await pingBecomes(vm4, VIP, true, 'vm4 pings the VIP (vm1) through lr0', [agent]);
  t.pass('vm4 reaches the VIP on vm1');

  // The VIP moves to vm2 (a keepalived failover): vm1 drops it, vm2 announces it.
  await vm1.exec('ip', 'addr', 'del', `${VIP}/24`, 'dev', 'eth0');
  await announce(vm2, VIP);
  await untilLogged('vip claimed again through vm2', async () => ((await binding()).parent === 'vm2' ? true : undefined), 60_000, [agent]);
  await untilLogged('lr0 resolves the VIP to vm2', async () => ((await resolveFlow()).includes('eth.dst = 0a:00:00:00:19:02;') ? true : undefined), 30_000, [agent]);
  await pingBecomes(vm4, VIP, true, 'vm4 pings the VIP (now vm2) through lr0', [agent]);
  t.match(await vm4.exec('ping', '-c', '1', '-W', '2', VIP), /ttl=63/, 'one router hop to the VIP');
  t.pass('after the failover vm4 reaches the VIP on vm2');

  // vm2's interface goes: the virtual port is released with it.
  await hv1.detachVm(vm2);
  const released = await untilLogged('vip released with its parent', async () => {
    const b = await binding();
    return b.chassis === '' ? b : undefined;
  }, 60_000, [agent]);
  t.same(released, { chassis: '', parent: '', up: 'false' }, 'chassis, virtual_parent cleared and down');
  await untilLogged('lr0 asks for the VIP again', async () => ((await resolveFlow()).includes('eth.dst = 00:00:00:00:00:00;') ? true : undefined), 30_000, [agent]);
});

const ovnControllerInstalled = existsSync('/usr/bin/ovn-controller');

/** The flows of a bridge's br-int with the bind_vport controller action (opcode 17), without stats, sorted. */
async function bindVportFlows(dir: string): Promise<string[]> {
  const dump = (await run('ovs-ofctl', ['-O', 'OpenFlow15', '--no-stats', 'dump-flows', `unix:${join(dir, 'br-int.mgmt')}`], { maxBuffer: 64 << 20 })).stdout;
  return dump.split('\n').filter((l) => l.includes('userdata=00.00.00.11.')).map((l) => l.trim()).sort();
}

t.test('the real ovn-controller claims the virtual port as ours does, and installs the same bind_vport flows', {
  skip: skip || (!ovnControllerInstalled && 'the real OVN (ovn-host) is not installed'),
}, async (t) => {
  const env = await upCluster(t, testdirAfterTeardowns(t));
  const nbctl = nbctlOf(env);
  const sbctl = sbctlOf(env);
  const vip = '10.20.0.100';
  const ul = await createUnderlay('172.30.20');
  t.teardown(() => ul.remove());
  await nbctl('ls-add', 'sw0');
  await nbctl('lsp-add', 'sw0', 'vm1', '--', 'lsp-set-addresses', 'vm1', '0a:00:00:00:20:01 10.20.0.1');
  await nbctl('lsp-add', 'sw0', 'vip', '--', 'lsp-set-type', 'vip', 'virtual', '--', 'lsp-set-options', 'vip', `virtual-ip=${vip}`, 'virtual-parents=vm1');

  // Ours: hv1 with `ovnts agent`.
  const { hosts: [hv1], agents: [agent] } = await startChassisWithAgents(t, env, ul, ['hv1']);
  const vmOurs = await hv1.addVm('vm1', { mac: '0a:00:00:00:20:01', cidr: '10.20.0.1/24' });
  await untilLogged('vm1 up on hv1', async () => ((await nbctl('lsp-get-up', 'vm1')) === 'up' ? true : undefined), 90_000, [agent]);
  const hv1Uuid = await sbctl('--bare', '--columns=_uuid', 'find', 'Chassis', 'name=hv1');
  await announce(vmOurs, vip);
  const ours = await untilLogged('vip claimed on hv1', async () => {
    const b = await bindingOf(sbctl, 'vip');
    return b.chassis === hv1Uuid && b.up === 'true' ? b : undefined;
  }, 60_000, [agent]);
  const ourFlows = await bindVportFlows(hv1.ovs.dir);
  await hv1.detachVm(vmOurs);
  await vmOurs.remove();
  await untilLogged('vip released on hv1', async () => ((await bindingOf(sbctl, 'vip')).chassis === '' ? true : undefined), 60_000, [agent]);

  // Theirs: hv2 with the real ovn-controller, the same VM moved there.
  const { host: hv2, log } = await chassisWithOvnController(t, env, ul, 'hv2', 2);
  const vmTheirs = await hv2.addVm('vm1', { mac: '0a:00:00:00:20:01', cidr: '10.20.0.1/24' });
  const hv2Uuid = await sbctl('--bare', '--columns=_uuid', 'find', 'Chassis', 'name=hv2');
  await until(() => `vm1 up on hv2 (log: ${log()})`, async () => ((await nbctl('lsp-get-up', 'vm1')) === 'up' && (await bindingOf(sbctl, 'vm1')).chassis === hv2Uuid ? true : undefined), 90_000);
  await announce(vmTheirs, vip);
  const theirs = await until(() => `vip claimed on hv2 (log: ${log()})`, async () => {
    const b = await bindingOf(sbctl, 'vip');
    return b.chassis === hv2Uuid && b.up === 'true' ? b : undefined;
  }, 60_000);
  const theirFlows = await bindVportFlows(hv2.ovs.dir);

  t.same({ ...ours, chassis: 'hv1' }, { chassis: 'hv1', parent: 'vm1', up: 'true' }, 'ours: claimed for hv1 through vm1, up');
  t.same({ ...theirs, chassis: 'hv2' }, { chassis: 'hv2', parent: 'vm1', up: 'true' }, 'the real one: claimed for hv2 through vm1, up (its write accepted by our SB door)');
  t.match(log(), /Claiming virtual lport vip for this chassis with the virtual parent vm1/, 'its pinctrl made the claim');
  t.comment(`the real ovn-controller's bind_vport flows:\n${theirFlows.join('\n')}`);
  t.ok(theirFlows.length >= 2, `ovn-controller installed ${theirFlows.length} bind_vport flows`);
  t.same(ourFlows, theirFlows, 'the same bind_vport flows (matches, action encoding) on both bridges');
});
