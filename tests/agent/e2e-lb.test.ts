// Load balancing with real packets: a 3-member cluster, the real ovn-nbctl, `ovnts agent` on a
// chassis namespace with its own ovs-vswitchd. A TCP VIP on the clients' switch spreads new
// connections over two backends (one on the same switch, one behind the router); a backend
// connecting to the VIP and balanced to itself is hairpinned (SNATed to the VIP, sent back out
// of its own port); with session affinity a client keeps to one backend; a backend removed gets
// no more connections; the load balancer detached, the
// VIP answers no more. Servers and clients are small Node scripts run inside the namespaces.
import t from 'tap';
import type { Test } from 'tap';
import { chassisWithAgent, e2eSkip, linkSwitchToRouter, nbctlOf, pingBecomes, untilLogged, type Agent, nodeInNs } from '../helpers/agent-e2e.js';
import type { ChassisHost } from '../helpers/chassis-host.js';
import type { NsHost } from '../helpers/netns.js';
import { connectMany } from '../helpers/vm-clients.js';

const VIP = '10.16.9.100';

/** A TCP server in `vm`'s namespace answering every connection with "<name> <peer address>". */
function serve(t: Test, vm: NsHost, name: string, port: number): void {
  nodeInNs(t, vm, `require('net').createServer((s) => s.end(${JSON.stringify(name)} + ' ' + s.remoteAddress + '\\n')).listen(${port}, '0.0.0.0')`);
}

/**
 * sw0 (10.N.0.0/24: vm1 the client, vm2 a backend) and sw1 (10.N.1.0/24: vm3 a backend) joined
 * by lr0, the VMs on `hv1` with servers on port 8080 in vm2 and vm3; VIPs off both subnets, so
 * clients send to their gateway. Returns once vm1 reaches vm3.
 */
async function clientAndBackends(t: Test, nbctl: (...args: string[]) => Promise<string>, hv1: ChassisHost, n: number, agent: Agent): Promise<[NsHost, NsHost, NsHost]> {
  await nbctl('lr-add', 'lr0');
  for (const i of [0, 1]) {
    await nbctl('ls-add', `sw${i}`);
    await linkSwitchToRouter(nbctl, `sw${i}`, 'lr0', `lrp${i}`, `00:00:00:${n}:0${i}:01`, `10.${n}.${i}.1/24`);
  }
  const vms = [['vm1', 'sw0', `0a:00:00:00:${n}:01`, `10.${n}.0.2`], ['vm2', 'sw0', `0a:00:00:00:${n}:02`, `10.${n}.0.3`], ['vm3', 'sw1', `0a:00:00:00:${n}:03`, `10.${n}.1.2`]] as const;
  const hosts: NsHost[] = [];
  for (const [name, sw, mac, ip] of vms) {
    await nbctl('lsp-add', sw, name, '--', 'lsp-set-addresses', name, `${mac} ${ip}`);
    hosts.push(await hv1.addVm(name, { mac, cidr: `${ip}/24`, gateway: ip.replace(/\.\d+$/, '.1') }));
  }
  const [vm1, vm2, vm3] = hosts as [NsHost, NsHost, NsHost];
  await pingBecomes(vm1, `10.${n}.1.2`, true, 'vm1 reaches vm3 through lr0', [agent]);
  serve(t, vm2, 'vm2', 8080);
  serve(t, vm3, 'vm3', 8080);
  return [vm1, vm2, vm3];
}

t.test('a switch load balancer: spread over backends, hairpin to itself, session affinity, backend removed, detached', { skip: e2eSkip }, async (t) => {
  const { env, hv1, agent } = await chassisWithAgent(t, '172.30.16');
  const nbctl = nbctlOf(env);
  const [vm1, vm2] = await clientAndBackends(t, nbctl, hv1, 16, agent);

  await nbctl('lb-add', 'lb0', `${VIP}:80`, '10.16.0.3:8080,10.16.1.2:8080', 'tcp');
  await nbctl('ls-lb-add', 'sw0', 'lb0');
  // Both backends answer, each seeing the client's own address (only DNAT on the way in).
  const spread = await untilLogged('connections to the VIP reach both backends', async () => {
    const answers = await connectMany(vm1, VIP, 80, 24);
    return answers.every((a) => a !== 'fail') && answers.some((a) => a.startsWith('vm2')) && answers.some((a) => a.startsWith('vm3')) ? answers : undefined;
  }, 90_000, [agent]);
  t.ok(spread.every((a) => a === 'vm2 10.16.0.2' || a === 'vm3 10.16.0.2'), `every answer from a backend, to the client's address: ${spread.join(', ')}`);

  // vm2 to the VIP: balanced to vm3 it is routed as usual; balanced to itself it is hairpinned
  // and its server sees the VIP as the peer (ct_snat_to_vip), never its own address.
  const hairpin = await untilLogged('vm2 reaches the VIP, itself included', async () => {
    const answers = await connectMany(vm2, VIP, 80, 24);
    return answers.every((a) => a !== 'fail') && answers.some((a) => a.startsWith('vm2')) ? answers : undefined;
  }, 90_000, [agent]);
  t.ok(hairpin.filter((a) => a.startsWith('vm2')).every((a) => a === `vm2 ${VIP}`), `hairpinned connections come from the VIP: ${hairpin.join(', ')}`);
  t.ok(hairpin.filter((a) => a.startsWith('vm3')).every((a) => a === 'vm3 10.16.0.3'), 'connections balanced to vm3 come from vm2');

  // Session affinity: once on, the client's connections keep to the backend its first one got
  // (learned into table 78 by commit_lb_aff); off again, they spread.
  await nbctl('set', 'Load_Balancer', 'lb0', 'options:affinity_timeout=60');
  const sticky = await untilLogged('with affinity every connection of the client goes to one backend', async () => {
    const answers = await connectMany(vm1, VIP, 80, 12);
    return answers.every((a) => a !== 'fail') && new Set(answers).size === 1 ? answers : undefined;
  }, 90_000, [agent]);
  t.equal(sticky.length, 12, `twelve connections to ${sticky[0] ?? '?'}`);
  await nbctl('remove', 'Load_Balancer', 'lb0', 'options', 'affinity_timeout');

  // One backend left: every new connection goes to it.
  await nbctl('--may-exist', 'lb-add', 'lb0', `${VIP}:80`, '10.16.1.2:8080', 'tcp');
  const one = await untilLogged('only vm3 answers once vm2 is no longer a backend', async () => {
    const answers = await connectMany(vm1, VIP, 80, 12);
    return answers.every((a) => a.startsWith('vm3')) ? answers : undefined;
  }, 90_000, [agent]);
  t.equal(one.length, 12, 'twelve connections, all to vm3');

  // Detached from the switch: nothing answers at the VIP.
  await nbctl('ls-lb-del', 'sw0', 'lb0');
  await untilLogged('the VIP stops answering once the load balancer is detached', async () => {
    const answers = await connectMany(vm1, VIP, 80, 3);
    return answers.every((a) => a === 'fail') ? true : undefined;
  }, 90_000, [agent]);
  t.pass('no connection to the VIP succeeds without the load balancer');
  t.ok(await vm1.ping('10.16.1.2'), 'routing between the switches is unaffected');
});

t.test('a gateway router load balancer: ARP for the VIP answered by the router, connections spread, replies unDNATed', { skip: e2eSkip }, async (t) => {
  const { env, hv1, agent } = await chassisWithAgent(t, '172.30.17');
  const nbctl = nbctlOf(env);
  // A gateway router on hv1 between sw1 (10.17.1.0/24: the backends) and ext (172.17.0.0/24:
  // the client); the VIP is on ext's network, so the client ARPs for it and the router answers.
  await nbctl('lr-add', 'gw', '--', 'set', 'Logical_Router', 'gw', `options:chassis=${hv1.name}`);
  for (const [sw, lrp, mac, cidr] of [['sw1', 'gw-sw1', '00:00:00:17:01:01', '10.17.1.1/24'], ['ext', 'gw-ext', '00:00:00:17:00:01', '172.17.0.1/24']] as const) {
    await nbctl('ls-add', sw);
    await linkSwitchToRouter(nbctl, sw, 'gw', lrp, mac, cidr);
  }
  const vms: [string, string, string, string, string][] = [
    ['vm1', 'ext', '0a:00:00:00:17:01', '172.17.0.10', '172.17.0.1'],
    ['vm2', 'sw1', '0a:00:00:00:17:02', '10.17.1.2', '10.17.1.1'],
    ['vm3', 'sw1', '0a:00:00:00:17:03', '10.17.1.3', '10.17.1.1'],
  ];
  const hosts = new Map<string, NsHost>();
  for (const [name, sw, mac, ip, gateway] of vms) {
    await nbctl('lsp-add', sw, name, '--', 'lsp-set-addresses', name, `${mac} ${ip}`);
    hosts.set(name, await hv1.addVm(name, { mac, cidr: `${ip}/24`, gateway }));
  }
  const vm1 = hosts.get('vm1') as NsHost;
  await pingBecomes(vm1, '10.17.1.2', true, 'vm1 reaches vm2 through the gateway router', [agent]);
  serve(t, hosts.get('vm2') as NsHost, 'vm2', 8080);
  serve(t, hosts.get('vm3') as NsHost, 'vm3', 8080);

  await nbctl('lb-add', 'lb-gw', '172.17.0.100:80', '10.17.1.2:8080,10.17.1.3:8080', 'tcp');
  await nbctl('lr-lb-add', 'gw', 'lb-gw');
  const spread = await untilLogged('connections to the router\'s VIP reach both backends', async () => {
    const answers = await connectMany(vm1, '172.17.0.100', 80, 24);
    return answers.every((a) => a !== 'fail') && answers.some((a) => a.startsWith('vm2')) && answers.some((a) => a.startsWith('vm3')) ? answers : undefined;
  }, 90_000, [agent]);
  t.ok(spread.every((a) => a === 'vm2 172.17.0.10' || a === 'vm3 172.17.0.10'), `every answer from a backend, to the client's address: ${spread.join(', ')}`);
  t.match(await vm1.exec('ip', 'neigh', 'show', '172.17.0.100'), /00:00:00:17:00:01/, 'the VIP resolved to the router port\'s MAC (its _rtr_lb address set)');

  // lb_force_snat_ip=router_ip: the backends see the router's address on their side instead.
  await nbctl('set', 'Logical_Router', 'gw', 'options:lb_force_snat_ip=router_ip');
  const snatted = await untilLogged('backends see the router port\'s address once force-SNAT is on', async () => {
    const answers = await connectMany(vm1, '172.17.0.100', 80, 8);
    return answers.every((a) => a.endsWith(' 10.17.1.1')) ? answers : undefined;
  }, 90_000, [agent]);
  t.equal(snatted.length, 8, 'eight connections, all SNATed to 10.17.1.1');
});

t.test('a template load balancer: the VIP, port and backends are this chassis\'s Chassis_Template_Var values', { skip: e2eSkip }, async (t) => {
  const { env, hv1, agent } = await chassisWithAgent(t, '172.30.18');
  const nbctl = nbctlOf(env);
  // The load balancer names variables only (as ovn-kubernetes's NodePort services do).
  const [vm1] = await clientAndBackends(t, nbctl, hv1, 18, agent);

  await nbctl('--template', 'lb-add', 'lbt', '^NODEIP:^NODEPORT', '^BACKENDS', 'tcp');
  await nbctl('ls-lb-add', 'sw0', 'lbt');
  await nbctl('create', 'Chassis_Template_Var', `chassis=${hv1.name}`, 'variables:NODEIP=10.18.9.100', 'variables:NODEPORT=30080',
    'variables:BACKENDS="10.18.0.3:8080,10.18.1.2:8080"');
  const spread = await untilLogged('connections to this chassis\'s VIP and port reach both backends', async () => {
    const answers = await connectMany(vm1, '10.18.9.100', 30080, 24);
    return answers.every((a) => a !== 'fail') && answers.some((a) => a.startsWith('vm2')) && answers.some((a) => a.startsWith('vm3')) ? answers : undefined;
  }, 90_000, [agent]);
  t.ok(spread.every((a) => a === 'vm2 10.18.0.2' || a === 'vm3 10.18.0.2'), `every answer from a backend: ${spread.join(', ')}`);

  // The values change: another port, one backend; the old port answers no more.
  await nbctl('set', 'Chassis_Template_Var', hv1.name, 'variables:NODEPORT=30081', 'variables:BACKENDS="10.18.1.2:8080"');
  const moved = await untilLogged('the new port reaches only the backend left', async () => {
    const answers = await connectMany(vm1, '10.18.9.100', 30081, 8);
    return answers.every((a) => a === 'vm3 10.18.0.2') ? answers : undefined;
  }, 90_000, [agent]);
  t.equal(moved.length, 8, 'eight connections, all to vm3');
  t.same(await connectMany(vm1, '10.18.9.100', 30080, 2), ['fail', 'fail'], 'the old port no longer answers');
});
