// Goal: the agent answers dns_lookup, put_dhcpv6_opts and put_nd_ra_opts with the very bytes the
// real ovn-controller 23.03.1 answers with. Method: one ovnts cluster serves both; the same VM
// (port vm1, same MAC and addresses) first on chassis hv1 run by `ovnts agent`, then on chassis
// hv2 run by a real ovn-controller; from inside the VM the same DNS queries (IPv4 and IPv6, every
// answered type and some that are not answered), the same DHCPv6 exchange, and a router
// solicitation answered for the router lr0 (SLAAC: the VM's kernel configures an address, a
// default route with the router's preference and the advertised MTU), then the same from the
// advertisements lr0 sends unasked every few seconds; the DNS payloads and
// DHCPv6 messages received and what the kernel made of the advertisement must be equal, and the
// two bridges must hold the same controller() actions for dns_lookup, put_dhcpv6_opts and
// put_nd_ra_opts.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { chassisWithOvnController, e2eSkip, nbctlOf, startChassisWithAgents, untilLogged } from '../helpers/agent-e2e.js';
import { createUnderlay } from '../helpers/chassis-host.js';
import type { NsHost } from '../helpers/netns.js';
import { until, upCluster } from '../helpers/ovnts-cli.js';
import { dhcpv6Exchange, dnsQueries, slaac, type Dhcp6Answer, type SlaacState } from '../helpers/vm-clients.js';
import { testdirAfterTeardowns } from '../helpers/testdir.js';

const run = promisify(execFile);

/** The flows of the br-int of the Open vSwitch whose run directory is `dir`. */
async function dumpBrInt(dir: string): Promise<string> {
  return (await run('ovs-ofctl', ['-O', 'OpenFlow15', 'dump-flows', `unix:${join(dir, 'br-int.mgmt')}`], { maxBuffer: 64 << 20 })).stdout;
}

/** The put_nd_ra_opts (8), dns_lookup (6) and put_dhcpv6_opts (5) controller actions in a flow dump, sorted. */
function pausedActions(dump: string): string[] {
  return [...dump.matchAll(/controller\(userdata=00\.00\.00\.0[568]\.[^)]*\)/g)].map((m) => m[0]).sort();
}
const ovnControllerInstalled = existsSync('/usr/bin/ovn-controller') && existsSync('/usr/bin/ovn-sbctl');

const VM_MAC = '0a:00:00:00:18:01';
/** The queries, by name and type: A, AAAA, ANY, PTR answered; MX, a missing name, an AAAA-less name not. */
const queries: readonly (readonly [string, number])[] = [
  ['web.ovn.org', 1], ['WEB.Ovn.Org', 28], ['web.ovn.org', 255], ['80.2.0.192.in-addr.arpa', 12], ['v6only.ovn.org', 28],
  ['web.ovn.org', 15], ['nope.ovn.org', 1], ['v6only.ovn.org', 1],
];

interface Observed {
  readonly dns4: string[];
  readonly dns6: string[];
  readonly dhcpv6: Dhcp6Answer[];
  readonly slaac: SlaacState;
  /** The same from the advertisements lr0 sends unasked, the VM soliciting none. */
  readonly periodic: SlaacState;
}

/** Addresses and static neighbours: the DNS "server" 10.18.0.2 / ae70::2 is a port nobody binds. */
async function configureVm(vm: NsHost): Promise<void> {
  await vm.exec('ip', '-6', 'addr', 'add', 'ae70::18/64', 'dev', 'eth0', 'nodad');
  await vm.exec('ip', 'neigh', 'replace', '10.18.0.2', 'lladdr', '0a:00:00:00:18:02', 'dev', 'eth0');
  await vm.exec('ip', '-6', 'neigh', 'replace', 'ae70::2', 'lladdr', '0a:00:00:00:18:02', 'dev', 'eth0');
}

async function observe(vm: NsHost, what: string, logs: () => string): Promise<Observed> {
  const agents = [{ pid: 0, output: logs }];
  const dns4 = await untilLogged(`${what}: the first DNS answer over IPv4`, async () => {
    const r = await dnsQueries(vm, '10.18.0.2', queries).catch(() => undefined);
    return r !== undefined && r[0] !== 'none' ? r : undefined;
  }, 90_000, agents);
  const dns6 = await dnsQueries(vm, 'ae70::2', queries);
  const dhcpv6 = await untilLogged(`${what}: a DHCPv6 exchange`, () => dhcpv6Exchange(vm), 90_000, agents);
  // Last: the solicitation turns IPv6 off and on, which takes the static address away.
  const ra = await untilLogged(`${what}: a router advertisement`, () => slaac(vm), 90_000, agents);
  const periodic = await untilLogged(`${what}: a router advertisement sent unasked`, () => slaac(vm, 15_000, false), 90_000, agents);
  return { dns4, dns6, dhcpv6, slaac: ra, periodic };
}

t.test('DNS, DHCPv6 and router advertisement answers: ours equal the real ovn-controller\'s', { skip: e2eSkip || (!ovnControllerInstalled && 'the real OVN (ovn-host) is not installed') }, async (t) => {
  const env = await upCluster(t, testdirAfterTeardowns(t));
  const nbctl = nbctlOf(env);
  const ul = await createUnderlay('172.30.18');
  t.teardown(() => ul.remove());

  await nbctl('ls-add', 'sw0');
  await nbctl('lsp-add', 'sw0', 'vm1', '--', 'lsp-set-addresses', 'vm1', `${VM_MAC} 10.18.0.1 ae70::18`);
  await nbctl('lsp-add', 'sw0', 'vm2', '--', 'lsp-set-addresses', 'vm2', '0a:00:00:00:18:02 10.18.0.2 ae70::2');
  const dns = await nbctl('create', 'DNS',
    'records={"web.ovn.org"="192.0.2.80 2001:db8::80", "80.2.0.192.in-addr.arpa"="web.ovn.org", "v6only.ovn.org"="2001:db8::6"}');
  await nbctl('add', 'Logical_Switch', 'sw0', 'dns_records', dns);
  await nbctl('dhcp-options-create', 'ae70::/64');
  const opts = await nbctl('--bare', '--columns=_uuid', 'find', 'DHCP_Options', 'cidr="ae70::/64"');
  await nbctl('dhcp-options-set-options', opts, 'server_id=00:00:00:00:10:02', 'dns_server={ae70::1,ae70::2}', 'domain_search="ovn.org"');
  await nbctl('lsp-set-dhcpv6-options', 'vm1', opts);
  // lr0 advertises ae70::/64 on sw0 for SLAAC, with its preference and an MTU.
  await nbctl('lr-add', 'lr0');
  await nbctl('lrp-add', 'lr0', 'lr0-sw0', '00:00:00:00:18:fe', 'ae70::1/64');
  await nbctl('lsp-add', 'sw0', 'sw0-lr0', '--', 'lsp-set-type', 'sw0-lr0', 'router', '--', 'lsp-set-addresses', 'sw0-lr0', 'router',
    '--', 'lsp-set-options', 'sw0-lr0', 'router-port=lr0-sw0');
  await nbctl('set', 'Logical_Router_Port', 'lr0-sw0', 'ipv6_ra_configs:address_mode=slaac', 'ipv6_ra_configs:mtu=1400', 'ipv6_ra_configs:router_preference=HIGH');
  // ... and every 3 to 4 seconds unasked, with a DNS server and search list (RFC 8106).
  await nbctl('set', 'Logical_Router_Port', 'lr0-sw0', 'ipv6_ra_configs:send_periodic=true', 'ipv6_ra_configs:max_interval=4',
    'ipv6_ra_configs:rdnss="ae70::53"', 'ipv6_ra_configs:dnssl="ovn.org"');

  // Ours: hv1 with `ovnts agent`.
  const { hosts: [hv1], agents: [agent] } = await startChassisWithAgents(t, env, ul, ['hv1']);
  const vmOurs = await hv1.addVm('vm1', { mac: VM_MAC, cidr: '10.18.0.1/24' });
  await configureVm(vmOurs);
  await untilLogged('vm1 up on hv1', async () => ((await nbctl('lsp-get-up', 'vm1')) === 'up' ? true : undefined), 90_000, [agent]);
  const ours = await observe(vmOurs, 'ovnts agent', () => agent.output());
  const ourFlows = pausedActions(await dumpBrInt(hv1.ovs.dir));
  await hv1.detachVm(vmOurs);
  await vmOurs.remove();

  // Theirs: hv2 with the real ovn-controller, the same VM moved there.
  const { host: hv2, log } = await chassisWithOvnController(t, env, ul, 'hv2', 2);
  const vmTheirs = await hv2.addVm('vm1', { mac: VM_MAC, cidr: '10.18.0.1/24' });
  await configureVm(vmTheirs);
  const hv2Uuid = (await run('ovn-sbctl', [`--db=${env.sbOvsdb.join(',')}`, '--bare', '--columns=_uuid', 'find', 'Chassis', 'name=hv2'])).stdout.trim();
  await until(() => `vm1 bound to hv2 (log: ${log()})`, async () => {
    const bound = (await run('ovn-sbctl', [`--db=${env.sbOvsdb.join(',')}`, '--bare', '--columns=chassis', 'find', 'Port_Binding', 'logical_port=vm1'])).stdout.trim();
    return hv2Uuid !== '' && bound === hv2Uuid ? true : undefined;
  }, 90_000);
  const theirs = await observe(vmTheirs, 'ovn-controller', log);
  const theirFlows = pausedActions(await dumpBrInt(hv2.ovs.dir));

  t.comment(`real ovn-controller: ${JSON.stringify(theirs)}`);
  t.ok(ours.dns4[0]?.includes('c0000250'), 'the A query was answered with 192.0.2.80 (so the comparison is of answers)');
  t.ok(ours.dhcpv6.length === 3, 'the DHCPv6 exchange completed');
  queries.forEach(([name, type], i) => {
    t.equal(ours.dns4[i], theirs.dns4[i], `DNS over IPv4, ${name} type ${type}: ${theirs.dns4[i]?.slice(0, 60)}`);
    t.equal(ours.dns6[i], theirs.dns6[i], `DNS over IPv6, ${name} type ${type}: ${theirs.dns6[i]?.slice(0, 60)}`);
  });
  t.same(ours.dhcpv6, theirs.dhcpv6, 'ADVERTISE, REPLY to REQUEST, REPLY to INFORMATION-REQUEST: the same messages');
  t.same(ours.slaac, theirs.slaac, `the same SLAAC address, default route and MTU from the router advertisement: ${JSON.stringify(theirs.slaac)}`);
  t.ok(theirs.slaac.addresses.some((a) => a.startsWith('ae70::')) && theirs.slaac.mtu === '1400' && theirs.slaac.route.includes('pref high'), 'the advertisement carried the prefix, the MTU and the preference');
  t.same(ours.periodic, theirs.periodic, `the same from the advertisements sent unasked: ${JSON.stringify(theirs.periodic)}`);
  t.ok(theirs.periodic.addresses.some((a) => a.startsWith('ae70::')), 'an advertisement came without a solicitation');
  t.ok(theirFlows.length >= 2, `ovn-controller installed ${theirFlows.length} such actions`);
  t.same(ourFlows, theirFlows, 'the same dns_lookup, put_dhcpv6_opts and put_nd_ra_opts controller actions on both bridges');
});
