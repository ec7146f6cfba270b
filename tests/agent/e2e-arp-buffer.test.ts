// The packet that makes a router ask for its next hop's MAC is not lost (ovn-controller's
// buffered packets): the agent holds it while the ARP request is answered, and sends it on once
// the MAC_Binding learned from the reply is in the SB. The next hop here is a VM whose logical
// port lists only its MAC, so the router cannot know its IPv4 address's MAC in advance: the very
// first ping to it must get its answer. Real Open vSwitch (userspace datapath), our central and
// agent, two namespaces; everything started by the test and stopped by pid.
import t from 'tap';
import { chassisWithAgent, e2eSkip as skip, linkSwitchToRouter, nbctlOf, pingBecomes, sbctlOf, untilLogged } from '../helpers/agent-e2e.js';

t.test('the first packet to an unresolved next hop is delivered once the ARP reply is learned', { skip }, async (t) => {
  const { env, hv1, agent } = await chassisWithAgent(t, '172.30.21');
  const nbctl = nbctlOf(env);
  await nbctl('lr-add', 'lr0');
  for (const [i, net] of [[1, '10.17.1'], [2, '10.17.2']] as const) {
    await nbctl('ls-add', `sw${i}`);
    await linkSwitchToRouter(nbctl, `sw${i}`, 'lr0', `lrp${i}`, `00:00:00:17:0${i}:01`, `${net}.1/24`);
  }
  await nbctl('lsp-add', 'sw1', 'vm1', '--', 'lsp-set-addresses', 'vm1', '0a:00:00:00:17:01 10.17.1.2');
  // vm2's port gives no IP: the router has to ARP for 10.17.2.2.
  await nbctl('lsp-add', 'sw2', 'vm2', '--', 'lsp-set-addresses', 'vm2', '0a:00:00:00:17:02');
  const vm1 = await hv1.addVm('vm1', { mac: '0a:00:00:00:17:01', cidr: '10.17.1.2/24', gateway: '10.17.1.1' });
  await hv1.addVm('vm2', { mac: '0a:00:00:00:17:02', cidr: '10.17.2.2/24', gateway: '10.17.2.1' });
  await untilLogged('vm2 up', async () => ((await nbctl('lsp-get-up', 'vm2')) === 'up' ? true : undefined), 90_000, [agent]);
  // vm1's side works (this sends nothing toward vm2).
  await pingBecomes(vm1, '10.17.1.1', true, 'vm1 pings its gateway', [agent]);
  const sbctl = sbctlOf(env);
  t.equal(await sbctl('--bare', '--columns=mac', 'find', 'MAC_Binding', 'ip=10.17.2.2'), '', 'the router does not know vm2 yet');
  const out = await vm1.exec('ping', '-c', '1', '-W', '5', '10.17.2.2').catch((err: { stdout?: string }) => err.stdout ?? '');
  t.equal(await sbctl('--bare', '--columns=mac', 'find', 'MAC_Binding', 'ip=10.17.2.2'), '0a:00:00:00:17:02', 'the router learned vm2 from its ARP reply');
  if (/1 received/.test(out)) t.pass('the first ping to vm2 is answered (it waited for the ARP reply instead of being dropped)');
  else t.fail(`the first ping to vm2 was lost:\n${out}\n--- agent:\n${agent.output().slice(-3000)}`);
  // MAC binding aging (the leader's, server/mac-binding-aging.ts): with a threshold of 2 s the
  // row goes; the next ping makes the router ask again, and the agent learns it anew.
  const learnedAt = Number(await sbctl('--bare', '--columns=timestamp', 'find', 'MAC_Binding', 'ip=10.17.2.2'));
  t.ok(learnedAt > Date.now() - 60_000 && learnedAt <= Date.now(), `the agent stamped the row with its clock (${learnedAt})`);
  await nbctl('set', 'Logical_Router', 'lr0', 'options:mac_binding_age_threshold=2');
  await untilLogged('the MAC binding aged out', async () => ((await sbctl('--bare', '--columns=mac', 'find', 'MAC_Binding', 'ip=10.17.2.2')) === '' ? true : undefined), 15_000, [agent]);
  t.pass('the row went once its threshold passed');
  await pingBecomes(vm1, '10.17.2.2', true, 'vm1 reaches vm2 again', [agent]);
  const again = Number(await sbctl('--bare', '--columns=timestamp', 'find', 'MAC_Binding', 'ip=10.17.2.2'));
  t.ok(again > learnedAt, 'learned anew, with a newer timestamp');
});

t.test('IPv6: the first packet to an unresolved next hop is delivered once the NDP answer is learned', { skip }, async (t) => {
  const { env, hv1, agent } = await chassisWithAgent(t, '172.30.22');
  const nbctl = nbctlOf(env);
  await nbctl('lr-add', 'lr0');
  for (const i of [1, 2]) {
    await nbctl('ls-add', `sw${i}`);
    await linkSwitchToRouter(nbctl, `sw${i}`, 'lr0', `lrp${i}`, `00:00:00:22:0${i}:01`, `10.22.${i}.1/24`, `2001:db8:${i}::1/64`);
  }
  await nbctl('lsp-add', 'sw1', 'vm1', '--', 'lsp-set-addresses', 'vm1', '0a:00:00:00:22:01 10.22.1.2 2001:db8:1::2');
  await nbctl('lsp-add', 'sw2', 'vm2', '--', 'lsp-set-addresses', 'vm2', '0a:00:00:00:22:02');
  const vm1 = await hv1.addVm('vm1', { mac: '0a:00:00:00:22:01', cidr: '10.22.1.2/24', gateway: '10.22.1.1' });
  const vm2 = await hv1.addVm('vm2', { mac: '0a:00:00:00:22:02', cidr: '10.22.2.2/24', gateway: '10.22.2.1' });
  for (const [vm, i] of [[vm1, 1], [vm2, 2]] as const) {
    await vm.exec('ip', '-6', 'addr', 'add', `2001:db8:${i}::2/64`, 'dev', vm.dev, 'nodad');
    await vm.exec('ip', '-6', 'route', 'add', 'default', 'via', `2001:db8:${i}::1`, 'dev', vm.dev);
  }
  await untilLogged('vm2 up', async () => ((await nbctl('lsp-get-up', 'vm2')) === 'up' ? true : undefined), 90_000, [agent]);
  await untilLogged('vm1 pings its IPv6 gateway', async () => (await vm1.exec('ping', '-6', '-c', '1', '-W', '1', '2001:db8:1::1').then(() => true, () => undefined)), 90_000, [agent]);
  const out = await vm1.exec('ping', '-6', '-c', '1', '-W', '5', '2001:db8:2::2').catch((err: { stdout?: string }) => err.stdout ?? '');
  const sbctl = sbctlOf(env);
  t.equal(await sbctl('--bare', '--columns=mac', 'find', 'MAC_Binding', 'ip="2001:db8:2::2"'), '0a:00:00:00:22:02', 'the router learned vm2 from its neighbor advertisement');
  if (/1 received/.test(out)) t.pass('the first IPv6 ping to vm2 is answered (our solicitation was answered and the packet waited for it)');
  else t.fail(`the first IPv6 ping to vm2 was lost:\n${out}\n--- agent:\n${agent.output().slice(-3000)}`);
});
