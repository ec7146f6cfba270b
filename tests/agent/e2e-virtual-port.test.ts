// A VRRP-style VIP on a virtual port, with real packets: a 3-member cluster (`ovnts up`), the real
// ovn-nbctl and ovn-sbctl through the OVSDB doors, `ovnts agent` on a chassis that is a network
// namespace with its own ovs-vswitchd (userspace datapath), VMs in namespaces. The VIP's owner
// announces it with a gratuitous ARP (busybox arping -U): the agent's pinctrl claims the virtual
// port for its chassis with the owner as virtual_parent, the planner marks it up, the router
// resolves the VIP to the owner's MAC, and a VM behind the router pings the VIP. The VIP then
// moves to the other parent (claimed again through it), and the parent's interface going away
// releases the virtual port. Processes are stopped by pid, namespaces are the test's own.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import t from 'tap';
import { chassisWithAgent, e2eSkip, nbctlOf, pingBecomes, untilLogged } from '../helpers/agent-e2e.js';
import type { UpEnv } from '../helpers/ovnts-cli.js';

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

function sbctlOf(env: UpEnv): (...args: string[]) => Promise<string> {
  return async (...args) => (await run('ovn-sbctl', [`--db=${env.sbOvsdb.join(',')}`, '--timeout=30', ...args])).stdout.trim();
}

const VIP = '10.19.0.100';

t.test('a gratuitous ARP for the VIP binds the virtual port to the chassis of its parent; the VIP answers through a router', { skip }, async (t) => {
  const { env, hv1, agent } = await chassisWithAgent(t, '172.30.19');
  const nbctl = nbctlOf(env);
  const sbctl = sbctlOf(env);

  // sw0: the VIP's parents vm1 and vm2, and vip (virtual); sw1 behind lr0: vm4, the client.
  await nbctl('lr-add', 'lr0');
  for (const [i, net] of [[0, '10.19.0'], [1, '10.19.1']] as const) {
    await nbctl('ls-add', `sw${i}`);
    await nbctl('lrp-add', 'lr0', `lrp${i}`, `00:00:00:19:0${i}:fe`, `${net}.254/24`);
    await nbctl('lsp-add', `sw${i}`, `sw${i}-lr0`, '--', 'lsp-set-type', `sw${i}-lr0`, 'router', '--', 'lsp-set-addresses', `sw${i}-lr0`, 'router',
      '--', 'lsp-set-options', `sw${i}-lr0`, `router-port=lrp${i}`);
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
  const column = (name: string): Promise<string> => sbctl('--bare', `--columns=${name}`, 'find', 'Port_Binding', 'logical_port=vip');
  const binding = async (): Promise<{ chassis: string; parent: string; up: string }> =>
    ({ chassis: await column('chassis'), parent: await column('virtual_parent'), up: await column('up') });
  const resolveFlow = async (): Promise<string> => (await sbctl('lflow-list', 'lr0')).split('\n').find((l) => l.includes(`reg0 == ${VIP})`)) ?? '';
  t.same(await binding(), { chassis: '', parent: '', up: 'false' }, 'unclaimed at first');
  t.match(await resolveFlow(), /eth\.dst = 00:00:00:00:00:00; next;/, 'the router asks for the VIP while it is unclaimed');

  // vm1 takes the VIP and announces it.
  const announce = async (vm: typeof vm1): Promise<void> => {
    await vm.exec('ip', 'addr', 'add', `${VIP}/24`, 'dev', 'eth0');
    await vm.exec('busybox', 'arping', '-U', '-c', '2', '-w', '3', '-I', 'eth0', '-s', VIP, VIP).catch(() => '');
  };
  await announce(vm1);
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
  await announce(vm2);
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
