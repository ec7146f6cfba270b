// DNS and DHCPv6 with real packets: a 3-member cluster, the real ovn-nbctl, `ovnts agent` on a
// chassis namespace with its own ovs-vswitchd. A VM's query for a name in its switch's DNS
// records must be answered by the agent's dns_lookup handler (busybox nslookup, sent to another
// VM that runs no DNS server), and a query for another name must go on to that VM unanswered.
// A VM's DHCPv6 SOLICIT and REQUEST (sent by a small client in the VM's namespace over a real UDP
// socket) must get the ADVERTISE and REPLY of the agent's put_dhcpv6_opts handler, with the port's
// address, the DHCPv6_Options' server id, DNS server and domain search (no DHCPv6 client
// ships with Debian's base system or busybox, so the test's own client speaks for one).
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import t from 'tap';
import { chassisWithAgent, e2eSkip, nbctlOf, untilLogged } from '../helpers/agent-e2e.js';
import { dhcpv6Exchange } from '../helpers/vm-clients.js';

const execFileAsync = promisify(execFile);

async function busyboxInstalled(): Promise<boolean> {
  try {
    await execFileAsync('busybox', ['nslookup', '--help']);
    return true;
  } catch (err) {
    // busybox prints its usage and exits 1 for --help; a missing binary is ENOENT.
    return (err as { code?: unknown }).code !== 'ENOENT';
  }
}

t.test('DNS: a name in the switch\'s records is answered by the agent; another name goes on to its destination', { skip: e2eSkip || (!(await busyboxInstalled()) && 'busybox (nslookup) is not installed') }, async (t) => {
  const { env, hv1, agent } = await chassisWithAgent(t, '172.30.16');
  const nbctl = nbctlOf(env);
  await nbctl('ls-add', 'sw0');
  await nbctl('lsp-add', 'sw0', 'vm1', '--', 'lsp-set-addresses', 'vm1', '0a:00:00:00:16:01 10.16.0.1');
  await nbctl('lsp-add', 'sw0', 'vm2', '--', 'lsp-set-addresses', 'vm2', '0a:00:00:00:16:02 10.16.0.2');
  const dns = await nbctl('create', 'DNS', 'records={"web.ovn.org"="192.0.2.80 2001:db8::80", "80.2.0.192.in-addr.arpa"="web.ovn.org"}');
  await nbctl('add', 'Logical_Switch', 'sw0', 'dns_records', dns);
  const vm1 = await hv1.addVm('vm1', { mac: '0a:00:00:00:16:01', cidr: '10.16.0.1/24' });
  await hv1.addVm('vm2', { mac: '0a:00:00:00:16:02', cidr: '10.16.0.2/24' });
  for (const vm of ['vm1', 'vm2']) {
    await untilLogged(`${vm} up`, async () => ((await nbctl('lsp-get-up', vm)) === 'up' ? true : undefined), 90_000, [agent]);
  }
  // vm2 runs no DNS server: only the agent can answer a query sent to it.
  const lookup = async (...args: string[]): Promise<{ ok: boolean; text: string }> => {
    try {
      const { stdout, stderr } = await execFileAsync('ip', ['netns', 'exec', vm1.ns, 'busybox', 'nslookup', ...args, '10.16.0.2'], { timeout: 20_000 });
      return { ok: true, text: stdout + stderr };
    } catch (err) {
      const e = err as { stdout?: string; stderr?: string };
      return { ok: false, text: `${e.stdout ?? ''}${e.stderr ?? ''}` };
    }
  };
  const a = await untilLogged('an A answer for web.ovn.org', async () => {
    const r = await lookup('-type=a', 'WEB.ovn.org');
    return r.ok && /192\.0\.2\.80/.test(r.text) ? r.text : undefined;
  }, 90_000, [agent]);
  t.match(a, /Address:\s*192\.0\.2\.80/, 'the A record, for a name asked in another case');
  const aaaa = await lookup('-type=aaaa', 'web.ovn.org');
  t.match(aaaa.text, /Address:\s*2001:db8::80/, 'the AAAA record');
  const ptr = await lookup('-type=ptr', '80.2.0.192.in-addr.arpa');
  t.match(ptr.text, /web\.ovn\.org/, 'the PTR record');
  const miss = await lookup('-type=a', 'nope.ovn.org');
  t.equal(miss.ok, false, `a name without a record is not answered: the query reaches vm2, which refuses it (${miss.text.trim().split('\n').pop() ?? ''})`);
  t.notMatch(miss.text, /Address:\s*192\.0\.2/, 'and no record leaks into it');
});

t.test('DHCPv6: SOLICIT, REQUEST and INFORMATION-REQUEST are answered by the agent with the port\'s address and the options', { skip: e2eSkip }, async (t) => {
  const { env, hv1, agent } = await chassisWithAgent(t, '172.30.17');
  const nbctl = nbctlOf(env);
  await nbctl('ls-add', 'sw0');
  await nbctl('lsp-add', 'sw0', 'vm1', '--', 'lsp-set-addresses', 'vm1', '0a:00:00:00:17:01 ae70::17');
  await nbctl('dhcp-options-create', 'ae70::/64');
  const opts = await nbctl('--bare', '--columns=_uuid', 'find', 'DHCP_Options', 'cidr="ae70::/64"');
  // Values go into the row as written: domain_search keeps its quotes, as put_dhcpv6_opts needs.
  await nbctl('dhcp-options-set-options', opts, 'server_id=00:00:00:00:10:02', 'dns_server={ae70::1}', 'domain_search="ovn.org"');
  await nbctl('lsp-set-dhcpv6-options', 'vm1', opts);
  const vm1 = await hv1.addVm('vm1', { mac: '0a:00:00:00:17:01' });
  await untilLogged('vm1 up', async () => ((await nbctl('lsp-get-up', 'vm1')) === 'up' ? true : undefined), 90_000, [agent]);
  // The client retries until its link-local address has left duplicate address detection and
  // the flows are in.
  const answers = await untilLogged('a DHCPv6 exchange', async () => {
    return dhcpv6Exchange(vm1);
  }, 90_000, [agent]);
  const [advertise, reply, info] = answers;
  const clientId = '000300010a0000001701';
  const serverId = '0003000100000000' + '1002';
  const iaNa = '00001701ffffffffffffffff' + '00050018' + 'ae700000000000000000000000000017' + 'ffffffffffffffff';
  const dns = 'ae700000000000000000000000000001';
  const search = '076f766e2e6f726700';
  t.same(advertise, { type: 2, xid: 1, options: [[1, clientId], [3, iaNa], [23, dns], [24, search], [2, serverId]] },
    'ADVERTISE: the client id, IA_NA with the port\'s address (infinite lifetimes), DNS server, domain search, DUID-LL server id');
  t.same(reply, { type: 7, xid: 2, options: [[1, clientId], [3, iaNa], [23, dns], [24, search], [2, serverId]] }, 'REPLY to REQUEST: the lease');
  t.same(info, { type: 7, xid: 3, options: [[1, clientId], [23, dns], [24, search], [2, serverId]] }, 'REPLY to INFORMATION-REQUEST: the options, no address');
});
