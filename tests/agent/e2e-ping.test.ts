// Real packets through ovnts: a 3-member cluster (`ovnts up`), the real ovn-nbctl writing the
// logical network through the OVSDB door, and `ovnts agent` processes on chassis that are network
// namespaces with their own ovs-vswitchd (userspace datapath); VMs are namespaces whose veths
// are the chassis's VIFs. A ping succeeds only if the agent claimed the ports and compiled and
// installed the right flows; every check that says "fails" waits for the ping to stop.
import t from 'tap';
import { chassisWithAgent, clusterWithAgents, e2eSkip as skip, linkSwitchToRouter, nbctlOf, pingBecomes, untilLogged } from '../helpers/agent-e2e.js';

t.test('one chassis, one switch: ping follows the logical port', { skip }, async (t) => {
  const { env, hv1, agent } = await chassisWithAgent(t, '172.30.11');
  const nbctl = nbctlOf(env);

  await nbctl('ls-add', 'sw0');
  for (const [n, mac, ip] of [['vm1', '0a:00:00:00:11:01', '10.11.0.1'], ['vm2', '0a:00:00:00:11:02', '10.11.0.2']] as const) {
    await nbctl('lsp-add', 'sw0', n, '--', 'lsp-set-addresses', n, `${mac} ${ip}`);
  }
  const vm1 = await hv1.addVm('vm1', { mac: '0a:00:00:00:11:01', cidr: '10.11.0.1/24' });
  const vm2 = await hv1.addVm('vm2', { mac: '0a:00:00:00:11:02', cidr: '10.11.0.2/24' });

  await pingBecomes(vm1, '10.11.0.2', true, 'vm1 pings vm2', [agent]);
  t.pass('vm1 reaches vm2 through the logical switch');
  t.equal(await nbctl('lsp-get-up', 'vm2'), 'up', 'vm2 is up while bound and installed');

  await nbctl('lsp-del', 'vm2');
  await pingBecomes(vm1, '10.11.0.2', false, 'ping stops once vm2 is deleted', [agent]);
  t.pass('deleting the logical port stops the ping');

  await nbctl('lsp-add', 'sw0', 'vm2', '--', 'lsp-set-addresses', 'vm2', '0a:00:00:00:11:02 10.11.0.2');
  await pingBecomes(vm1, '10.11.0.2', true, 'ping again once vm2 is back', [agent]);
  t.pass('adding it back restores the ping');
  await untilLogged('vm2 up again', async () => ((await nbctl('lsp-get-up', 'vm2')) === 'up' ? true : undefined), 30_000, [agent]);

  await hv1.detachVm(vm2);
  await untilLogged('vm2 down once its interface is gone', async () => ((await nbctl('lsp-get-up', 'vm2')) === 'down' ? true : undefined), 30_000, [agent]);
  t.pass('up is false once the interface is gone');
});

t.test('two switches joined by a router: ping across it, TTL decremented, router MAC as gateway', { skip }, async (t) => {
  const { env, hv1, agent } = await chassisWithAgent(t, '172.30.12');
  const nbctl = nbctlOf(env);

  await nbctl('lr-add', 'lr0');
  for (const [i, net] of [[1, '10.12.1'], [2, '10.12.2']] as const) {
    await nbctl('ls-add', `sw${i}`);
    await linkSwitchToRouter(nbctl, `sw${i}`, 'lr0', `lrp${i}`, `00:00:00:12:0${i}:01`, `${net}.1/24`);
    await nbctl('lsp-add', `sw${i}`, `vm${i}`, '--', 'lsp-set-addresses', `vm${i}`, `0a:00:00:00:12:0${i} ${net}.2`);
  }
  const vm1 = await hv1.addVm('vm1', { mac: '0a:00:00:00:12:01', cidr: '10.12.1.2/24', gateway: '10.12.1.1' });
  await hv1.addVm('vm2', { mac: '0a:00:00:00:12:02', cidr: '10.12.2.2/24', gateway: '10.12.2.1' });

  await pingBecomes(vm1, '10.12.2.2', true, 'vm1 pings vm2 through lr0', [agent]);
  t.pass('vm1 reaches vm2 on the other switch');
  const out = await vm1.exec('ping', '-c', '1', '-W', '2', '10.12.2.2');
  t.match(out, /ttl=63/, 'the reply crossed one router hop (TTL 64 decremented once)');
  t.match(await vm1.exec('ip', 'neigh', 'show', '10.12.1.1'), /00:00:00:12:01:01/, 'the router port answered ARP for the gateway with its MAC');
  t.ok(await vm1.ping('10.12.1.1'), 'the router answers a ping to its own address');
});

t.test('two chassis: ping between VMs on different hypervisors through Geneve', { skip }, async (t) => {
  const { env, hosts, agents } = await clusterWithAgents(t, '172.30.13', ['hv1', 'hv2']);
  const nbctl = nbctlOf(env);
  await nbctl('ls-add', 'sw0');
  for (const i of [1, 2]) await nbctl('lsp-add', 'sw0', `vm${i}`, '--', 'lsp-set-addresses', `vm${i}`, `0a:00:00:00:13:0${i} 10.13.0.${i}`);
  const vm1 = await hosts[0]!.addVm('vm1', { mac: '0a:00:00:00:13:01', cidr: '10.13.0.1/24' });
  await hosts[1]!.addVm('vm2', { mac: '0a:00:00:00:13:02', cidr: '10.13.0.2/24' });
  await pingBecomes(vm1, '10.13.0.2', true, 'vm1 on hv1 pings vm2 on hv2', agents);
  t.pass('the ping crossed from hv1 to hv2 and back');
  const ports = await hosts[0]!.ovs.vsctl('--bare', '--columns=type,options', 'find', 'Interface', 'type=geneve');
  t.match(ports, new RegExp(`remote_ip=(")?${hosts[1]!.encapIp.replaceAll('.', '\\.')}`), 'hv1 has a Geneve port to hv2\'s encap IP');
});

t.test('kill -9 of the member the agent streams from: it resumes on another without a resync, and ping keeps going', { skip }, async (t) => {
  const { env, hv1, agent } = await chassisWithAgent(t, '172.30.16');
  const nbctl = nbctlOf(env);
  await nbctl('ls-add', 'sw0');
  for (const i of [1, 2]) await nbctl('lsp-add', 'sw0', `vm${i}`, '--', 'lsp-set-addresses', `vm${i}`, `0a:00:00:00:16:0${i} 10.16.0.${i}`);
  const vm1 = await hv1.addVm('vm1', { mac: '0a:00:00:00:16:01', cidr: '10.16.0.1/24' });
  await hv1.addVm('vm2', { mac: '0a:00:00:00:16:02', cidr: '10.16.0.2/24' });
  await pingBecomes(vm1, '10.16.0.2', true, 'ping before the failover', [agent]);

  const connected = [...agent.output().matchAll(/SB source connected to (\S+)/g)].map((m) => m[1] as string);
  const member = env.sbGrpc.indexOf(connected.at(-1) ?? '');
  t.ok(member >= 0, `the agent streams from member ${member} (${connected.at(-1)})`);
  // 10 s of pings, 10 a second, with the member killed 3 s in: 7 s to see it recover from an
  // election of about 1 s.
  const pinging = vm1.exec('ping', '-i', '0.1', '-w', '10', '-W', '1', '10.16.0.2').catch((err: { stdout?: string }) => err.stdout ?? '');
  await new Promise((r) => setTimeout(r, 3_000));
  process.kill(env.pids[member] as number, 'SIGKILL');
  const out = await pinging;
  const seqs = [...out.matchAll(/icmp_seq=(\d+)/g)].map((m) => Number(m[1]));
  let gap = 0;
  for (let i = 1; i < seqs.length; i++) gap = Math.max(gap, (seqs[i] as number) - (seqs[i - 1] as number) - 1);
  t.ok(seqs.length > 50, `${seqs.length} replies in 10 s`);
  t.ok(gap * 100 <= 2_000, `the longest run of lost pings was ${gap * 100} ms (an election is about 1 s)`);

  const resumed = await untilLogged('the agent reconnects to another member', async () => {
    const m = [...agent.output().matchAll(/SB source connected to (\S+)( \(resumed by (\w+)\))?/g)].at(-1);
    return m !== undefined && m[1] !== env.sbGrpc[member] ? m : undefined;
  }, 60_000, [agent]);
  t.equal(resumed[3], 'delta', `it resumed on ${resumed[1]} from its revision, without a snapshot`);
  await nbctl('--wait=hv', 'lsp-add', 'sw0', 'vm3');
  t.pass('--wait=hv returns after the failover: the agent acknowledges through its new member');
});
