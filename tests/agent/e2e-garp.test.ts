// Gratuitous ARPs with real packets: a chassis (`ovnts agent` on its own ovs-vswitchd) whose
// physnet is its br-phy, on the underlay bridge with a "physical" host (a namespace that takes
// gratuitous ARPs into its neighbour table: arp_accept=1). A VM bound on a switch with a localnet
// port on physnet is announced: the host learns the VM's MAC for its IPv4 address without the VM
// sending anything. A VM on a switch without a localnet port is not announced. A router's
// floating IP (a dnat_and_snat rule) on a gateway port with nat-addresses=router is announced by
// the gateway chassis with the router port's MAC.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import t, { type Test } from 'tap';
import type { ChassisHost, Underlay } from '../helpers/chassis-host.js';
import { clusterWithAgents, e2eSkip as skip, linkSwitchToRouter, nbctlOf } from '../helpers/agent-e2e.js';
import { until } from '../helpers/ovnts-cli.js';
import { createNsHost } from '../helpers/netns.js';

const run = promisify(execFile);

/** A host on the underlay bridge (the physical network) that takes gratuitous ARPs into its neighbour table. */
async function physicalHost(t: Test, ul: Underlay, mac: string, cidr: string): Promise<{ neighbours: () => Promise<string> }> {
  const phys = await createNsHost({ mac, cidr, peerNetns: ul.ns });
  t.teardown(() => phys.remove());
  await run('ip', ['netns', 'exec', ul.ns, 'ip', 'link', 'set', phys.peer, 'master', 'ul0']);
  await run('ip', ['netns', 'exec', phys.ns, 'sysctl', '-q', '-w', 'net.ipv4.conf.eth0.arp_accept=1']);
  return { neighbours: async () => (await run('ip', ['netns', 'exec', phys.ns, 'ip', 'neigh', 'show', 'dev', 'eth0'])).stdout };
}

/**
 * A cluster with chassis hv1 whose physnet is its br-phy, a physical host on the underlay, and a
 * switch "pub" with a localnet port on physnet.
 */
async function localnetSetup(t: Test, prefix: string, hostMac: string, hostCidr: string): Promise<{ hv1: ChassisHost; nbctl: (...a: string[]) => Promise<string>; neighbours: () => Promise<string> }> {
  const { env, ul, hosts: [hv1] } = await clusterWithAgents(t, prefix, ['hv1']);
  const nbctl = nbctlOf(env);
  await hv1.ovs.vsctl('set', 'Open_vSwitch', '.', 'external_ids:ovn-bridge-mappings=physnet:br-phy');
  const { neighbours } = await physicalHost(t, ul, hostMac, hostCidr);
  await nbctl('ls-add', 'pub');
  await nbctl('lsp-add', 'pub', 'ln-pub', '--', 'lsp-set-type', 'ln-pub', 'localnet', '--', 'lsp-set-addresses', 'ln-pub', 'unknown',
    '--', 'lsp-set-options', 'ln-pub', 'network_name=physnet');
  return { hv1, nbctl, neighbours };
}

/** Waits until the host's neighbour table matches `pattern`; returns it. */
async function learns(neighbours: () => Promise<string>, pattern: RegExp, what: string): Promise<string> {
  let last = '';
  return until(() => `the physical host learns ${what} (its neighbours: ${last})`, async () => {
    last = await neighbours();
    return pattern.test(last) ? last : undefined;
  }, 20_000);
}

t.test('a VM bound on a localnet switch is announced to the physical network by gratuitous ARP', { skip }, async (t) => {
  const { hv1, nbctl, neighbours } = await localnetSetup(t, '172.30.14', '0a:00:00:00:14:99', '10.14.0.99/24');
  await nbctl('lsp-add', 'pub', 'vm1', '--', 'lsp-set-addresses', 'vm1', '0a:00:00:00:14:01 10.14.0.1');
  await nbctl('ls-add', 'overlay');
  await nbctl('lsp-add', 'overlay', 'vm2', '--', 'lsp-set-addresses', 'vm2', '0a:00:00:00:14:02 10.14.0.2');
  await hv1.addVm('vm1', { mac: '0a:00:00:00:14:01', cidr: '10.14.0.1/24' });
  await hv1.addVm('vm2', { mac: '0a:00:00:00:14:02', cidr: '10.14.0.2/24' });
  await nbctl('--wait=hv', 'sync');
  const learned = await learns(neighbours, /10\.14\.0\.1 .*lladdr 0a:00:00:00:14:01/, 'vm1');
  t.match(learned, /10\.14\.0\.1 .*lladdr 0a:00:00:00:14:01/, 'vm1\'s address and MAC reached the physical host, with no packet from vm1');
  // The announcements go on for 31 s; vm2's would have come within the first second.
  t.notMatch(await neighbours(), /10\.14\.0\.2\b/, 'vm2, on a switch with no localnet port, is not announced');
});

t.test('a floating IP on a gateway port with nat-addresses=router is announced by the gateway chassis', { skip }, async (t) => {
  const { hv1, nbctl, neighbours } = await localnetSetup(t, '172.30.15', '0a:00:00:00:15:99', '10.15.0.99/24');
  await nbctl('ls-add', 'inside');
  await nbctl('lsp-add', 'inside', 'vm1', '--', 'lsp-set-addresses', 'vm1', '0a:00:00:00:15:01 192.168.15.10');
  await nbctl('lr-add', 'lr0');
  await linkSwitchToRouter(nbctl, 'inside', 'lr0', 'lr0-inside', '0a:00:00:00:15:fe', '192.168.15.1/24');
  await linkSwitchToRouter(nbctl, 'pub', 'lr0', 'lr0-pub', '0a:00:00:00:15:fd', '10.15.0.1/24');
  await nbctl('lrp-set-gateway-chassis', 'lr0-pub', 'hv1', '10');
  await nbctl('lsp-set-options', 'pub-lr0', 'router-port=lr0-pub', 'nat-addresses=router');
  await nbctl('lr-nat-add', 'lr0', 'dnat_and_snat', '10.15.0.50', '192.168.15.10');
  await hv1.addVm('vm1', { mac: '0a:00:00:00:15:01', cidr: '192.168.15.10/24', gateway: '192.168.15.1' });
  await nbctl('--wait=hv', 'sync');
  const learned = await learns(neighbours, /10\.15\.0\.50 .*lladdr 0a:00:00:00:15:fd/, 'the floating IP');
  t.match(learned, /10\.15\.0\.50 .*lladdr 0a:00:00:00:15:fd/, 'the floating IP, at the gateway port\'s MAC');
  t.match(learned, /10\.15\.0\.1 .*lladdr 0a:00:00:00:15:fd/, 'and the gateway port\'s own address');
});
