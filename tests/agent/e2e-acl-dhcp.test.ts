// ACLs and DHCP with real packets: a 3-member cluster, the real ovn-nbctl, `ovnts agent` on a
// chassis namespace with its own ovs-vswitchd. A to-lport drop must stop a ping and an
// allow-related above it restore it, on the switch and through a port group; a VM with no address
// must get the one its port's DHCP_Options give, from busybox's udhcpc, answered by the agent's
// packet-in handler for put_dhcp_opts.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import t from 'tap';
import { chassisWithAgent, e2eSkip, nbctlOf, pingBecomes, untilLogged } from '../helpers/agent-e2e.js';

const execFileAsync = promisify(execFile);

async function udhcpcInstalled(): Promise<boolean> {
  try {
    await execFileAsync('busybox', ['udhcpc', '--help']);
    return true;
  } catch (err) {
    // busybox prints its usage and exits 1 for --help; a missing binary is ENOENT.
    return (err as { code?: unknown }).code !== 'ENOENT';
  }
}

t.test('ACLs: a to-lport drop blocks the ping, allow-related restores it; the same through a port group', { skip: e2eSkip }, async (t) => {
  const { env, hv1, agent } = await chassisWithAgent(t, '172.30.14');
  const nbctl = nbctlOf(env);
  await nbctl('ls-add', 'sw0');
  for (const i of [1, 2]) await nbctl('lsp-add', 'sw0', `vm${i}`, '--', 'lsp-set-addresses', `vm${i}`, `0a:00:00:00:14:0${i} 10.14.0.${i}`);
  const vm1 = await hv1.addVm('vm1', { mac: '0a:00:00:00:14:01', cidr: '10.14.0.1/24' });
  await hv1.addVm('vm2', { mac: '0a:00:00:00:14:02', cidr: '10.14.0.2/24' });
  await pingBecomes(vm1, '10.14.0.2', true, 'ping before any ACL', [agent]);

  await nbctl('acl-add', 'sw0', 'to-lport', '1000', 'outport == "vm2" && ip4', 'drop');
  await pingBecomes(vm1, '10.14.0.2', false, 'a to-lport drop stops the ping', [agent]);
  t.pass('a to-lport drop on the switch blocks ping to vm2');
  await nbctl('acl-add', 'sw0', 'to-lport', '1001', 'outport == "vm2" && icmp4', 'allow-related');
  await pingBecomes(vm1, '10.14.0.2', true, 'allow-related above the drop lets ICMP through', [agent]);
  t.pass('allow-related above it restores the ping (replies pass as related traffic)');

  await nbctl('acl-del', 'sw0');
  await nbctl('pg-add', 'pg_web', 'vm2');
  await nbctl('acl-add', 'pg_web', 'to-lport', '1000', 'outport == @pg_web && ip4', 'drop');
  await pingBecomes(vm1, '10.14.0.2', false, 'a port-group drop stops the ping', [agent]);
  t.pass('a port-group ACL drop blocks ping to its member');
  await nbctl('acl-add', 'pg_web', 'to-lport', '1001', 'outport == @pg_web && icmp4', 'allow-related');
  await pingBecomes(vm1, '10.14.0.2', true, 'a port-group allow-related restores the ping', [agent]);
  t.pass('a port-group allow-related restores it');
  await nbctl('acl-del', 'pg_web', 'to-lport', '1001', 'outport == @pg_web && icmp4');
  await pingBecomes(vm1, '10.14.0.2', false, 'the port-group drop again, without the allow', [agent]);
  await nbctl('clear', 'Port_Group', 'pg_web', 'ports');
  await pingBecomes(vm1, '10.14.0.2', true, 'vm2 out of the group: its drop no longer applies', [agent]);
  t.pass('with vm2 out of the group, the group\'s ACLs no longer apply to it');
});

t.test('DHCP: a VM with no address gets its port\'s DHCP_Options from the agent', { skip: e2eSkip || (!(await udhcpcInstalled()) && 'busybox (udhcpc) is not installed') }, async (t) => {
  const { env, hv1, agent } = await chassisWithAgent(t, '172.30.15');
  const nbctl = nbctlOf(env);
  await nbctl('ls-add', 'sw0');
  await nbctl('lsp-add', 'sw0', 'vm1', '--', 'lsp-set-addresses', 'vm1', '0a:00:00:00:15:01 10.15.0.7');
  await nbctl('dhcp-options-create', '10.15.0.0/24');
  const uuid = await nbctl('--bare', '--columns=_uuid', 'find', 'DHCP_Options', 'cidr="10.15.0.0/24"');
  await nbctl('dhcp-options-set-options', uuid, 'lease_time=3600', 'router=10.15.0.1', 'server_id=10.15.0.1', 'server_mac=c0:ff:ee:00:15:01', 'dns_server=10.15.0.53');
  await nbctl('lsp-set-dhcpv4-options', 'vm1', uuid);
  const vm1 = await hv1.addVm('vm1', { mac: '0a:00:00:00:15:01' });
  await untilLogged('vm1 up', async () => ((await nbctl('lsp-get-up', 'vm1')) === 'up' ? true : undefined), 90_000, [agent]);
  // -n: give up rather than background; -q: quit once leased; -s /bin/true: print, change nothing.
  const lease = await untilLogged('a DHCP lease', async () => {
    try {
      const { stdout, stderr } = await execFileAsync('ip', ['netns', 'exec', vm1.ns, 'busybox', 'udhcpc', '-i', 'eth0', '-n', '-q', '-t', '3', '-T', '1', '-s', '/bin/true']);
      const text = stdout + stderr;
      return /lease of [\d.]+ obtained/.test(text) ? text : undefined;
    } catch {
      return undefined;
    }
  }, 90_000, [agent]);
  t.match(lease, /lease of 10\.15\.0\.7 obtained from 10\.15\.0\.1/, 'the address from the port\'s addresses, the server from server_id');
  t.match(lease, /lease time 3600/, 'the lease time from the options');
});
