// IGMP snooping with real packets: a switch with other_config:mcast_snoop=true and three VMs on
// one chassis (`ovnts agent` on its own ovs-vswitchd). Unregistered multicast is dropped (no
// router relays it, no port floods it). vm1 joins 239.1.1.1 (the kernel sends an IGMPv3
// report): the agent learns it and writes this chassis's IGMP_Group row through the central,
// northd makes the group 239.1.1.1 of vm1, and multicast pings from vm3 to the group reach vm1
// (it answers) and not vm2 (its port transmits none of them). vm1 leaves (an IGMPv3
// leave): the row and the group go. With the switch's querier addresses set, the agent's
// queries keep a membership alive past idle_timeout; with an ip6_src as well, its MLD queries
// reach the VMs (a Python sniffer in vm2's namespace counts them, IPv6 being off there).
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { mldQueryPacket } from '../../agent/pinctrl/igmp-querier.js';
import { NorthboundClient } from '../../server/northbound-service.js';
import { clusterWithAgents, e2eSkip as skip, nbctlOf } from '../helpers/agent-e2e.js';
import type { NsHost } from '../helpers/netns.js';
import { until } from '../helpers/ovnts-cli.js';

const run = promisify(execFile);

/** How many multicast pings each round sends. */
const PINGS = 8;

/** Prints, as hex, each MLD query (ICMPv6 130 behind a hop-by-hop header) eth0 receives in `argv[1]` seconds. */
const MLD_QUERY_SNIFF = `
import socket, sys, time
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x86dd))
s.bind(('eth0', 0))
end = time.time() + float(sys.argv[1])
while time.time() < end:
    s.settimeout(max(0.01, end - time.time()))
    try:
        f, addr = s.recvfrom(65535)
    except socket.timeout:
        break
    if addr[2] != socket.PACKET_OUTGOING and len(f) >= 63 and f[20] == 0 and f[62] == 130:
        print(f.hex(), flush=True)
`;

/** Replies to `PINGS` pings from `from` to `group` (ping counts the answers of every member). */
async function multicastReplies(from: NsHost, group: string): Promise<number> {
  const out = await run('ip', ['netns', 'exec', from.ns, 'ping', '-n', '-c', String(PINGS), '-i', '0.2', '-W', '1', '-t', '4', group]).then((r) => r.stdout, (err: { stdout?: string }) => err.stdout ?? '');
  const m = /(\d+) received/.exec(out);
  return m === null ? 0 : Number(m[1]);
}

t.test('a snooping switch forwards a group\'s multicast to the port that joined it, learned by the agent', { skip }, async (t) => {
  const { env, hosts: [hv1], agents: [agent] } = await clusterWithAgents(t, '172.30.42', ['hv1']);
  const nbctl = nbctlOf(env);
  await nbctl('ls-add', 'sw0', '--', 'set', 'Logical_Switch', 'sw0', 'other_config:mcast_snoop=true');
  const vms: NsHost[] = [];
  for (const i of [1, 2, 3]) {
    await nbctl('lsp-add', 'sw0', `vm${i}`, '--', 'lsp-set-addresses', `vm${i}`, `0a:00:00:00:42:0${i} 10.42.0.${i}`);
    const vm = await hv1.addVm(`vm${i}`, { mac: `0a:00:00:00:42:0${i}`, cidr: `10.42.0.${i}/24` });
    // No IPv6 (its MLD and router solicitations would be noise on the ports), multicast routed
    // out of eth0, and echo requests to a joined group answered.
    await vm.exec('sysctl', '-q', '-w', 'net.ipv6.conf.all.disable_ipv6=1');
    await vm.exec('sysctl', '-q', '-w', 'net.ipv4.icmp_echo_ignore_broadcasts=0');
    await vm.exec('ip', 'route', 'add', '224.0.0.0/4', 'dev', 'eth0');
    vms.push(vm);
  }
  const [vm1, vm2, vm3] = vms as [NsHost, NsHost, NsHost];
  await nbctl('--wait=hv', 'sync');
  t.ok(await vm3.ping('10.42.0.1', 5), 'unicast works');
  t.equal(await multicastReplies(vm3, '239.1.1.1'), 0, 'no member yet: unregistered multicast is dropped');

  const client = new NorthboundClient(env.nbGrpc[0] as string);
  t.teardown(() => client.close());
  const sb = async (table: string): Promise<Record<string, unknown>[]> => (await client.list(table, [], { db: 'OVN_Southbound' })).rows;
  const portUuid = (await sb('Port_Binding')).find((r) => r.logical_port === 'vm1')?._uuid;

  await vm1.exec('ip', 'addr', 'add', '239.1.1.1/32', 'dev', 'eth0', 'autojoin');
  const row = await until(() => `the agent writes an IGMP_Group row (agent output: ${agent.output().slice(-2000)})`, async () => (await sb('IGMP_Group')).find((r) => r.address === '239.1.1.1'), 20_000);
  t.same(row.ports, portUuid, 'this chassis\'s row names vm1\'s binding');
  const group = await until('the Multicast_Group', async () => (await sb('Multicast_Group')).find((r) => r.name === '239.1.1.1'), 10_000);
  t.same(group.ports, portUuid, 'northd made the group of vm1');
  await nbctl('--wait=hv', 'sync');

  const txTo = async (vm: NsHost): Promise<number> => {
    const dump = (await run('ovs-ofctl', ['-O', 'OpenFlow15', 'dump-ports', join(hv1.ovs.dir, 'br-int.mgmt'), vm.peer])).stdout;
    const m = /tx pkts=(\d+)/.exec(dump);
    return m === null ? Number.NaN : Number(m[1]);
  };
  const before = await txTo(vm2);
  const replies = await until('vm1 answers pings to its group', async () => {
    const n = await multicastReplies(vm3, '239.1.1.1');
    return n > 0 ? n : undefined;
  }, 20_000);
  t.ok(replies >= PINGS / 2, `vm1 answered ${replies} of ${PINGS} pings to 239.1.1.1`);
  const leaked = (await txTo(vm2)) - before;
  t.ok(leaked < PINGS, `vm2's port transmitted ${leaked} packets meanwhile: the group's traffic did not reach it`);

  await vm1.exec('ip', 'addr', 'del', '239.1.1.1/32', 'dev', 'eth0');
  await until('the row goes when vm1 leaves', async () => ((await sb('IGMP_Group')).some((r) => r.address === '239.1.1.1') ? undefined : true), 20_000);
  await until('and the group', async () => ((await sb('Multicast_Group')).some((r) => r.name === '239.1.1.1') ? undefined : true), 10_000);
  t.pass('vm1 left: its IGMP_Group row and the group are gone');

  // A membership lives idle_timeout (15 s here) after its last report; the kernel reports again
  // only when queried. With the switch's querier addresses set, the agent queries every 7 s
  // (idle_timeout / 2) and vm1's membership outlives the timeout.
  await nbctl('set', 'Logical_Switch', 'sw0', 'other_config:mcast_idle_timeout=15', 'other_config:mcast_eth_src="0a:00:00:00:42:fe"', 'other_config:mcast_ip4_src="10.42.0.254"');
  await nbctl('--wait=hv', 'sync');
  await vm1.exec('ip', 'addr', 'add', '239.1.1.1/32', 'dev', 'eth0', 'autojoin');
  await until('vm1 joins again', async () => (await sb('IGMP_Group')).find((r) => r.address === '239.1.1.1'), 20_000);
  await new Promise((r) => setTimeout(r, 25_000));
  t.ok((await sb('IGMP_Group')).some((r) => r.address === '239.1.1.1'), 'the membership outlives idle_timeout: the querier\'s queries keep it');
  t.ok(await multicastReplies(vm3, '239.1.1.1') > 0, 'and vm1 still gets the group\'s traffic');

  // MLD: with an ip6_src and a 1 s interval, vm2 (no member of anything) receives the agent's
  // MLD general queries, byte for byte the querier's packet (the real ovn-controller's too, as
  // tests/server/ovn-controller.test.ts shows).
  await nbctl('set', 'Logical_Switch', 'sw0', 'other_config:mcast_ip6_src="fe80::42:fe"', 'other_config:mcast_query_interval=1');
  await nbctl('--wait=hv', 'sync');
  const heard = (await vm2.exec('python3', '-c', MLD_QUERY_SNIFF, '3.5')).split('\n').filter((l) => l !== '');
  t.ok(heard.length >= 2 && heard.length <= 5, `vm2 received ${heard.length} MLD queries in 3.5 s (one a second)`);
  const expected = mldQueryPacket({ ethSrc: '0a:00:00:00:42:fe', ip6Src: (0xfe80n << 112n) | 0x42_00fen, maxRespS: 1 }).toString('hex');
  t.same([...new Set(heard)], [expected], 'each the querier\'s MLD query from ip6_src to ff02::1');
});
