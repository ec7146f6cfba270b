// Gratuitous ARPs with real packets: a chassis (`ovnts agent` on its own ovs-vswitchd) whose
// physnet is its br-phy, on the underlay bridge with a "physical" host (a namespace that takes
// gratuitous ARPs into its neighbour table: arp_accept=1). A VM bound on a switch with a localnet
// port on physnet is announced: the host learns the VM's MAC for its IPv4 address without the VM
// sending anything. A VM on a switch without a localnet port is not announced.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import t from 'tap';
import { clusterWithAgents, e2eSkip as skip, nbctlOf } from '../helpers/agent-e2e.js';
import { until } from '../helpers/ovnts-cli.js';
import { createNsHost } from '../helpers/netns.js';

const run = promisify(execFile);

t.test('a VM bound on a localnet switch is announced to the physical network by gratuitous ARP', { skip }, async (t) => {
  const { env, ul, hosts: [hv1] } = await clusterWithAgents(t, '172.30.14', ['hv1']);
  const nbctl = nbctlOf(env);
  await hv1.ovs.vsctl('set', 'Open_vSwitch', '.', 'external_ids:ovn-bridge-mappings=physnet:br-phy');
  // The physical host, on the underlay bridge, in the VMs' subnet.
  const phys = await createNsHost({ mac: '0a:00:00:00:14:99', cidr: '10.14.0.99/24', peerNetns: ul.ns });
  t.teardown(() => phys.remove());
  await run('ip', ['netns', 'exec', ul.ns, 'ip', 'link', 'set', phys.peer, 'master', 'ul0']);
  await run('ip', ['netns', 'exec', phys.ns, 'sysctl', '-q', '-w', 'net.ipv4.conf.eth0.arp_accept=1']);
  const neighbours = async (): Promise<string> => (await run('ip', ['netns', 'exec', phys.ns, 'ip', 'neigh', 'show', 'dev', 'eth0'])).stdout;

  await nbctl('ls-add', 'pub');
  await nbctl('lsp-add', 'pub', 'ln-pub', '--', 'lsp-set-type', 'ln-pub', 'localnet', '--', 'lsp-set-addresses', 'ln-pub', 'unknown',
    '--', 'lsp-set-options', 'ln-pub', 'network_name=physnet');
  await nbctl('lsp-add', 'pub', 'vm1', '--', 'lsp-set-addresses', 'vm1', '0a:00:00:00:14:01 10.14.0.1');
  await nbctl('ls-add', 'overlay');
  await nbctl('lsp-add', 'overlay', 'vm2', '--', 'lsp-set-addresses', 'vm2', '0a:00:00:00:14:02 10.14.0.2');
  await hv1.addVm('vm1', { mac: '0a:00:00:00:14:01', cidr: '10.14.0.1/24' });
  await hv1.addVm('vm2', { mac: '0a:00:00:00:14:02', cidr: '10.14.0.2/24' });
  await nbctl('--wait=hv', 'sync');

  let last = '';
  const learned = await until(() => `the physical host learns vm1 (its neighbours: ${last})`, async () => {
    last = await neighbours();
    return /10\.14\.0\.1 .*lladdr 0a:00:00:00:14:01/.test(last) ? last : undefined;
  }, 20_000);
  t.match(learned, /10\.14\.0\.1 .*lladdr 0a:00:00:00:14:01/, 'vm1\'s address and MAC reached the physical host, with no packet from vm1');
  // The announcements go on for 31 s; vm2's would have come within the first second.
  t.notMatch(await neighbours(), /10\.14\.0\.2\b/, 'vm2, on a switch with no localnet port, is not announced');
});
