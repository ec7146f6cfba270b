// Load balancer health checks with real packets: our agent probes the backends of a health-
// checked VIP and writes Service_Monitor.status, and northd keeps only the live backends in
// ct_lb_mark. Method: `ovnts up`, the real ovn-nbctl / ovn-sbctl against the cluster's doors,
// `ovnts agent` with a userspace ovs-vswitchd; backends are namespaces, one with a TCP server
// (a small Node script), one without (its kernel answers the SYN with an RST); the server is
// stopped and started again by pid.
import t from 'tap';
import type { Test } from 'tap';
import { chassisWithAgent, e2eSkip, linkSwitchToRouter, nbctlOf, pingBecomes, sbctlOf, untilLogged, nodeInNs } from '../helpers/agent-e2e.js';
import type { NsHost } from '../helpers/netns.js';
import { connectMany } from '../helpers/vm-clients.js';

const VIP = '10.41.9.100';
const WAIT_MS = 90_000;

/** A TCP server in `vm`'s namespace answering every connection with `name`; returns its stop. */
function serve(t: Test, vm: NsHost, name: string, port: number): () => Promise<void> {
  return nodeInNs(t, vm, `require('net').createServer((s) => s.end(${JSON.stringify(name)} + '\\n')).listen(${port}, '0.0.0.0')`);
}

t.test('health checks: the backend with a server goes online, the other offline; only live backends are balanced to', { skip: e2eSkip }, async (t) => {
  const { env, hv1, agent } = await chassisWithAgent(t, '172.30.41');
  const nbctl = nbctlOf(env);
  const sbctl = sbctlOf(env);
  // sw0 (10.41.0.0/24) behind lr0: the VIP is off the subnet, so the client sends to its gateway
  // and the switch's load balancer DNATs on the way in.
  await nbctl('ls-add', 'sw0');
  await nbctl('lr-add', 'lr0');
  await linkSwitchToRouter(nbctl, 'sw0', 'lr0', 'lrp0', '00:00:00:41:00:01', '10.41.0.1/24');
  const vms: [string, string, string][] = [['vm1', '0a:00:00:00:41:01', '10.41.0.2'], ['vm2', '0a:00:00:00:41:02', '10.41.0.3'], ['vm3', '0a:00:00:00:41:03', '10.41.0.4']];
  const hosts = new Map<string, NsHost>();
  for (const [name, mac, ip] of vms) {
    await nbctl('lsp-add', 'sw0', name, '--', 'lsp-set-addresses', name, `${mac} ${ip}`);
    hosts.set(name, await hv1.addVm(name, { mac, cidr: `${ip}/24`, gateway: '10.41.0.1' }));
  }
  const [vm1, vm3] = [hosts.get('vm1') as NsHost, hosts.get('vm3') as NsHost];
  await pingBecomes(vm3, '10.41.0.2', true, 'vm3 reaches vm1', [agent]);
  let stopServer = serve(t, vm1, 'vm1', 8080);

  // A VIP on the clients' switch with both backends, health checked every second from
  // 10.41.0.254 (the switch answers ARP for it with svc_monitor_mac).
  await nbctl('lb-add', 'lb0', `${VIP}:80`, '10.41.0.2:8080,10.41.0.3:8080', 'tcp');
  await nbctl('ls-lb-add', 'sw0', 'lb0');
  await nbctl('--', '--id=@hc', 'create', 'Load_Balancer_Health_Check', `vip="${VIP}:80"`, 'options:interval=1', 'options:timeout=1',
    'options:success_count=1', 'options:failure_count=1', '--', 'add', 'Load_Balancer', 'lb0', 'health_check', '@hc');
  await nbctl('set', 'Load_Balancer', 'lb0', 'ip_port_mappings:"10.41.0.2"="vm1:10.41.0.254"', 'ip_port_mappings:"10.41.0.3"="vm2:10.41.0.254"');

  const statuses = async (): Promise<Map<string, string>> => {
    const out = await sbctl('--format=csv', '--no-headings', '--data=bare', '--columns=logical_port,status', 'list', 'Service_Monitor');
    return new Map(out.split('\n').filter((l) => l !== '').map((l) => l.split(',') as [string, string]));
  };
  const lbFlow = async (): Promise<string> => (await sbctl('lflow-list', 'sw0')).split('\n').find((l) => l.includes('ls_in_lb') && l.includes(`${VIP} && tcp.dst == 80`)) ?? '';

  const first = await untilLogged('vm1 online and vm2 offline in Service_Monitor.status', async () => {
    const s = await statuses();
    return s.get('vm1') === 'online' && s.get('vm2') === 'offline' ? s : undefined;
  }, WAIT_MS, [agent]);
  t.same([...first].sort(), [['vm1', 'online'], ['vm2', 'offline']], 'our agent probed both backends and wrote their status');
  await untilLogged('only vm1 in ct_lb_mark', async () => (/ct_lb_mark\(backends=10\.41\.0\.2:8080\);/.test(await lbFlow()) ? true : undefined), WAIT_MS, [agent]);
  t.pass(`the VIP's flow balances to vm1 only: ${(await lbFlow()).trim()}`);
  const answers = await untilLogged('connections to the VIP all reach vm1', async () => {
    const a = await connectMany(vm3, VIP, 80, 12);
    return a.every((x) => x === 'vm1') ? a : undefined;
  }, WAIT_MS, [agent]);
  t.equal(answers.length, 12, 'twelve connections, every one to the live backend');

  // The server stops: vm1's kernel resets the next SYN, and the VIP has no backend left.
  await stopServer();
  await untilLogged('vm1 offline once its server stops', async () => ((await statuses()).get('vm1') === 'offline' ? true : undefined), WAIT_MS, [agent]);
  t.pass('stopping the listener flips vm1 offline');
  await untilLogged('no backend left in the VIP\'s flow', async () => (!(await lbFlow()).includes('ct_lb_mark') ? true : undefined), WAIT_MS, [agent]);
  t.match(await lbFlow(), /drop;|reject/, 'the VIP drops with every backend offline');

  // It starts again: online, and balanced to again.
  stopServer = serve(t, vm1, 'vm1', 8080);
  await untilLogged('vm1 online again', async () => ((await statuses()).get('vm1') === 'online' ? true : undefined), WAIT_MS, [agent]);
  t.pass('a listener back flips vm1 online');
  const again = await untilLogged('connections reach vm1 again', async () => {
    const a = await connectMany(vm3, VIP, 80, 3);
    return a.every((x) => x === 'vm1') ? a : undefined;
  }, WAIT_MS, [agent]);
  t.equal(again.length, 3);
  await stopServer();
});
