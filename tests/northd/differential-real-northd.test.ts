// Differential tests against the real ovn-northd 23.03: topologies built with the real
// ovn-nbctl in a real NB, projected by the real ovn-northd into a real SB, and mirrored row by
// row (same UUIDs) into ovnts. Bindings, groups, port groups, address sets and DNS rows must
// agree, and for every datapath the set of logical flows ovnts produces must equal the real one
// (stage, priority, match, actions; hints are compared separately). Finally the incrementally
// built view must equal a fresh recompute.
import assert from 'node:assert/strict';
import t from 'tap';
import type { Test } from 'tap';
import type * as sb from '../../ovsdb/rows/sb.js';
import type { SbView } from '../../northd/index.js';
import { flowDatapaths } from '../../northd/index.js';
import type { RealSandbox } from './real-northd.js';
import { asArray, missingTools, ovnTrace, realSbOf, startRealSandbox } from './real-northd.js';
import type { DbDelta } from '../../ovsdb/index.js';
import { bfdReportWrites, bfdStatusWrites } from '../../northd/bfd.js';
import { optionUint } from '../../northd/nb.js';
import { agingOps, macBindingAgingPlan, staleOps, staleRows } from '../../server/sb-housekeeping.js';
import { delegatedPrefix } from '../../server/nb-state-machine.js';
import { chassisAdd, compareWithReal, localnetLsp, ours, routerLsp, scenario } from './real-compare.js';

const skip = await missingTools();

t.test('one switch, two VIF ports', { skip }, async (t) => {
  await scenario(t, [
    ['ls-add', 'sw0'],
    ['lsp-add', 'sw0', 'vm1'],
    ['lsp-set-addresses', 'vm1', '00:00:00:00:00:01 10.0.0.1'],
    ['lsp-add', 'sw0', 'vm2'],
    ['lsp-set-addresses', 'vm2', '00:00:00:00:00:02 10.0.0.2'],
    ['lsp-set-port-security', 'vm2', '00:00:00:00:00:02 10.0.0.2'],
  ]);
});

t.test('port types, a router, unknown and disabled ports', { skip }, async (t) => {
  await scenario(t, [
    ['ls-add', 'sw0'],
    ['ls-add', 'sw1'],
    ['lr-add', 'lr0'],
    ['lsp-add', 'sw0', 'p1', '--', 'lsp-set-addresses', 'p1', '00:00:00:00:00:01 10.0.0.1'],
    ['lsp-add', 'sw0', 'p3', '--', 'lsp-set-addresses', 'p3', 'unknown'],
    ['lrp-add', 'lr0', 'lrp0', '00:00:00:00:ff:01', '10.0.0.254/24'],
    routerLsp('sw0', 'sw0-lr0', 'lrp0'),
    ['lsp-add', 'sw1', 'q1', '--', 'lsp-set-addresses', 'q1', '00:00:00:00:01:01 20.0.0.1 fd00::1'],
    localnetLsp('sw1', 'ln1', 'phys'),
    // A localnet port that learns MACs (FDB lookup and learning flows, as for a VIF with unknown).
    ['lsp-set-options', 'ln1', 'network_name=phys', 'localnet_learn_fdb=true'],
    ['lsp-add', 'sw1', 'lp', '--', 'lsp-set-type', 'lp', 'localport', '--', 'lsp-set-addresses', 'lp', '00:00:00:00:01:09 20.0.0.9'],
    ['lsp-add', 'sw1', 'c1', 'q1', '7', '--', 'lsp-set-addresses', 'c1', '00:00:00:00:01:07'],
    ['lsp-add', 'sw1', 'off', '--', 'lsp-set-addresses', 'off', '00:00:00:00:01:0a', '--', 'lsp-set-enabled', 'off', 'disabled'],
    ['lsp-add', 'sw1', 'l2gw', '--', 'lsp-set-type', 'l2gw', 'l2gateway', '--', 'lsp-set-options', 'l2gw', 'network_name=phys', 'l2gateway-chassis=hv1'],
    ['ls-add', 'transit'],
    ['lrp-add', 'lr0', 'lrp1', '00:00:00:00:ff:02', '172.16.0.1/24', 'fd00:ab::1/64'],
    routerLsp('transit', 'transit-lr0', 'lrp1'),
  ]);
});

/** (a) Two switches with VMs (IPv4 and IPv6) joined by a router. */
const twoSwitchesAndARouter: readonly (readonly string[])[] = [
  ['ls-add', 'sw1'],
  ['ls-add', 'sw2'],
  ['lr-add', 'lr0'],
  ['lrp-add', 'lr0', 'lr0-sw1', '00:00:00:00:ff:01', '10.0.1.1/24', 'fd00:1::1/64'],
  ['lrp-add', 'lr0', 'lr0-sw2', '00:00:00:00:ff:02', '10.0.2.1/24', 'fd00:2::1/64'],
  routerLsp('sw1', 'sw1-lr0', 'lr0-sw1'),
  routerLsp('sw2', 'sw2-lr0', 'lr0-sw2'),
  ['lsp-add', 'sw1', 'vm1', '--', 'lsp-set-addresses', 'vm1', '00:00:00:00:01:0a 10.0.1.10 fd00:1::a'],
  ['lsp-add', 'sw1', 'vm3', '--', 'lsp-set-addresses', 'vm3', '00:00:00:00:01:0b 10.0.1.11'],
  ['lsp-add', 'sw2', 'vm2', '--', 'lsp-set-addresses', 'vm2', '00:00:00:00:02:0a 10.0.2.10 fd00:2::a'],
];

t.test('(a) two switches joined by a router', { skip }, async (t) => {
  const real = await scenario(t, twoSwitchesAndARouter);
  // The real ovn-trace walks both SBs: vm1 on sw1 to vm2 on sw2 goes through lr0, which
  // decrements the TTL and rewrites both MACs; the verdicts are the same text.
  const ours = await realSbOf(t, real.northd.view());
  const routed = 'inport == "vm1" && eth.src == 00:00:00:00:01:0a && eth.dst == 00:00:00:00:ff:01 && ip4.src == 10.0.1.10 && ip4.dst == 10.0.2.10 && ip.ttl == 64 && icmp4.type == 8';
  const realTrace = await ovnTrace(real.sbSocket, 'sw1', routed);
  const ourTrace = await ovnTrace(ours.socketPath, 'sw1', routed);
  t.equal(ourTrace, realTrace, 'ovn-trace gives the same verdict on our flows as on ovn-northd\'s');
  t.match(ourTrace, /ip\.ttl--;[\s\S]*eth\.src = 00:00:00:00:ff:02;[\s\S]*eth\.dst = 00:00:00:00:02:0a;[\s\S]*output\("vm2"\);/, `routed to vm2, TTL decremented, MACs rewritten:\n${ourTrace}`);
  const v6 = 'inport == "vm1" && eth.src == 00:00:00:00:01:0a && eth.dst == 00:00:00:00:ff:01 && ip6.src == fd00:1::a && ip6.dst == fd00:2::a && ip.ttl == 64';
  t.equal(await ovnTrace(ours.socketPath, 'sw1', v6), await ovnTrace(real.sbSocket, 'sw1', v6), 'the same verdict for IPv6');
  // Changes after the fact: a VM goes, a port's networks change, a router port is disabled.
  await real.nbctl(['lsp-del', 'vm3']);
  await real.nbctl(['set', 'Logical_Router_Port', 'lr0-sw2', 'networks="10.0.2.1/24","10.0.22.1/24","fd00:2::1/64"']);
  await real.nbctl(['lsp-set-addresses', 'vm2', '00:00:00:00:02:0a 10.0.22.5 fd00:2::a']);
  await real.nbctl(['lrp-set-enabled', 'lr0-sw1', 'disabled']);
  await real.nbctl(['lsp-set-enabled', 'vm1', 'disabled']);
  await compareWithReal(t, real);
});

t.test('(b) static routes, ECMP routes and policies through a second router', { skip }, async (t) => {
  const real = await scenario(t, [
    ...twoSwitchesAndARouter,
    // A join switch to a second router, and a third switch behind it.
    ['ls-add', 'join'],
    ['lrp-add', 'lr0', 'lr0-join', '00:00:00:00:ff:10', '100.64.0.1/24', 'fd00:64::1/64'],
    routerLsp('join', 'join-lr0', 'lr0-join'),
    ['lr-add', 'lr1'],
    ['lrp-add', 'lr1', 'lr1-join', '00:00:00:00:ff:11', '100.64.0.2/24', 'fd00:64::2/64'],
    routerLsp('join', 'join-lr1', 'lr1-join'),
    ['lrp-add', 'lr1', 'lr1-join2', '00:00:00:00:ff:12', '100.64.0.3/24'],
    routerLsp('join', 'join-lr1b', 'lr1-join2'),
    ['ls-add', 'sw3'],
    ['lrp-add', 'lr1', 'lr1-sw3', '00:00:00:00:ff:13', '10.0.3.1/24', 'fd00:3::1/64'],
    routerLsp('sw3', 'sw3-lr1', 'lr1-sw3'),
    ['lsp-add', 'sw3', 'vm4', '--', 'lsp-set-addresses', 'vm4', '00:00:00:00:03:0a 10.0.3.10 fd00:3::a'],
    // Routes: to sw3 through lr1, back to sw1/sw2, an ECMP route over lr1's two join ports,
    // IPv6, a source route, a discard route, a route with an output port.
    ['lr-route-add', 'lr0', '10.0.3.0/24', '100.64.0.2'],
    ['lr-route-add', 'lr0', 'fd00:3::/64', 'fd00:64::2'],
    ['--ecmp', 'lr-route-add', 'lr0', '10.0.9.0/24', '100.64.0.2'],
    ['--ecmp', 'lr-route-add', 'lr0', '10.0.9.0/24', '100.64.0.3'],
    ['--policy=src-ip', 'lr-route-add', 'lr0', '10.0.1.128/25', '100.64.0.2'],
    ['lr-route-add', 'lr0', '192.168.99.0/24', 'discard'],
    ['lr-route-add', 'lr0', '10.0.8.0/24', '100.64.0.9', 'lr0-join'],
    ['lr-route-add', 'lr1', '10.0.0.0/16', '100.64.0.1'],
    ['lr-route-add', 'lr1', '0.0.0.0/0', '100.64.0.1'],
    // Policies: allow, drop, reroute, and an ECMP reroute.
    ['lr-policy-add', 'lr0', '1000', 'ip4.src == 10.0.1.10 && ip4.dst == 10.0.3.10', 'allow'],
    ['lr-policy-add', 'lr0', '900', 'ip4.dst == 10.0.3.66', 'drop'],
    ['lr-policy-add', 'lr0', '800', 'ip4.src == 10.0.2.0/24 && ip4.dst == 10.0.3.0/24', 'reroute', '100.64.0.3'],
    ['lr-policy-add', 'lr0', '700', 'ip4.dst == 10.0.7.0/24', 'reroute', '100.64.0.2,100.64.0.3'],
    ['lr-policy-add', 'lr0', '600', 'ip6.dst == fd00:3::/64', 'reroute', 'fd00:64::2'],
    // A direct router-to-router link (LRPs naming each other as peer).
    ['lrp-add', 'lr0', 'lr0-lr1', '00:00:00:00:ff:20', '169.254.0.1/30', 'peer=lr1-lr0'],
    ['lrp-add', 'lr1', 'lr1-lr0', '00:00:00:00:ff:21', '169.254.0.2/30', 'peer=lr0-lr1'],
  ]);
  // Deletions are mirrored incrementally too.
  await real.nbctl(['lr-route-del', 'lr0', '192.168.99.0/24']);
  await real.nbctl(['lr-policy-del', 'lr0', '900', 'ip4.dst == 10.0.3.66']);
  await real.nbctl(['lrp-del', 'lr1-join2']);
  await compareWithReal(t, real);
  // A disabled router has no datapath; enabled again, it comes back.
  await real.nbctl(['set', 'Logical_Router', 'lr1', 'enabled=false']);
  await compareWithReal(t, real);
  await real.nbctl(['set', 'Logical_Router', 'lr1', 'enabled=true']);
  await compareWithReal(t, real, { portKeys: false });
});

/** (c), (h) A gateway router on hv1 between sw1 (two VMs) and ext (an outside host), with a default route and SNAT. */
const gatewayRouterTopology: readonly (readonly string[])[] = [
  ['ls-add', 'sw1'],
  ['lsp-add', 'sw1', 'vm1', '--', 'lsp-set-addresses', 'vm1', '00:00:00:00:01:0a 10.0.1.10 fd00:1::a'],
  ['lsp-add', 'sw1', 'vm2', '--', 'lsp-set-addresses', 'vm2', '00:00:00:00:01:0b 10.0.1.11'],
  ['ls-add', 'ext'],
  ['lsp-add', 'ext', 'outside', '--', 'lsp-set-addresses', 'outside', '00:00:00:00:ee:01 172.16.0.254'],
  ['lr-add', 'gw', '--', 'set', 'Logical_Router', 'gw', 'options:chassis=hv1'],
  ['lrp-add', 'gw', 'gw-sw1', '00:00:00:00:ff:01', '10.0.1.1/24', 'fd00:1::1/64'],
  routerLsp('sw1', 'sw1-gw', 'gw-sw1'),
  ['lrp-add', 'gw', 'gw-ext', '00:00:00:00:ff:02', '172.16.0.1/24', 'fd00:ee::1/64'],
  routerLsp('ext', 'ext-gw', 'gw-ext'),
  ['lr-route-add', 'gw', '0.0.0.0/0', '172.16.0.254'],
  ['lr-nat-add', 'gw', 'snat', '172.16.0.1', '10.0.1.0/24'],
];

t.test('(c) a gateway router with SNAT, DNAT and dnat_and_snat', { skip }, async (t) => {
  const real = await scenario(t, [
    ...gatewayRouterTopology,
    ['lr-nat-add', 'gw', 'dnat', '172.16.0.100', '10.0.1.10'],
    ['lr-nat-add', 'gw', 'dnat_and_snat', '172.16.0.101', '10.0.1.11'],
    ['--stateless', 'lr-nat-add', 'gw', 'dnat_and_snat', '172.16.0.102', '10.0.1.12'],
    ['--portrange', 'lr-nat-add', 'gw', 'snat', '172.16.0.103', '10.0.1.13', '1000-2000'],
    ['lr-nat-add', 'gw', 'dnat_and_snat', 'fd00:ee::100', 'fd00:1::a'],
  ]);
  // Force-SNAT options, then a NAT rule deleted.
  await real.nbctl(['set', 'Logical_Router', 'gw', 'options:dnat_force_snat_ip=172.16.0.50', 'options:lb_force_snat_ip=router_ip']);
  await real.nbctl(['lr-nat-del', 'gw', 'dnat', '172.16.0.100']);
  await compareWithReal(t, real);
  // A localnet port on the external switch: the gateway router's port there sends GARPs
  // (nat_addresses of its binding); removed again, it stops.
  await real.nbctl(['lsp-add', 'ext', 'ln-ext', '--', 'lsp-set-type', 'ln-ext', 'localnet', '--', 'lsp-set-addresses', 'ln-ext', 'unknown', '--', 'lsp-set-options', 'ln-ext', 'network_name=phys']);
  await compareWithReal(t, real);
  await real.nbctl(['lsp-del', 'ln-ext']);
  await compareWithReal(t, real);
});

t.test('(e) ACLs on switches and port groups, with address sets', { skip }, async (t) => {
  const real = await scenario(t, [
    ...twoSwitchesAndARouter,
    localnetLsp('sw1', 'ln1', 'phys'),
    ['create', 'Address_Set', 'name=web', 'addresses="10.0.2.10","10.0.2.11"'],
    // Stateless ACLs only on sw2 (no conntrack there)...
    ['acl-add', 'sw2', 'from-lport', '1001', 'ip4.src == $web && tcp.dst == 80', 'allow'],
    ['acl-add', 'sw2', 'to-lport', '1002', 'ip4.dst == 10.0.2.10 && udp', 'drop'],
    ['acl-add', 'sw2', 'to-lport', '1003', 'ip4.dst == 10.0.2.10 && tcp.dst == 23', 'reject'],
    ['--apply-after-lb', 'acl-add', 'sw2', 'from-lport', '1004', 'ip4.src == 10.0.2.10 && icmp4', 'allow-stateless'],
    ['acl-add', 'sw2', 'to-lport', '1005', 'ip4.src == 10.0.1.0/24', 'allow-stateless'],
    // ...a port group (vm1 and vm2, on both switches) with stateful ACLs.
    ['pg-add', 'pg_web', 'vm1', 'vm2'],
    ['acl-add', 'pg_web', 'to-lport', '2000', 'outport == @pg_web && ip4 && tcp.dst == 80', 'allow-related'],
    ['acl-add', 'pg_web', 'to-lport', '1000', 'outport == @pg_web && ip4', 'drop'],
    ['acl-add', 'pg_web', 'from-lport', '1500', 'inport == @pg_web && ip4.dst == $pg_web_ip4', 'allow'],
    ['--log', '--name=deny-ssh', '--severity=warning', 'acl-add', 'pg_web', 'to-lport', '2100', 'outport == @pg_web && tcp.dst == 22', 'reject'],
    ['--label=42', '--log', 'acl-add', 'pg_web', 'from-lport', '1700', 'inport == @pg_web && udp.dst == 53', 'allow-related'],
    ['acl-add', 'pg_web', 'from-lport', '1600', 'inport == @pg_web && icmp4', 'allow-stateless'],
    // A second, empty port group and one only on sw1.
    ['pg-add', 'pg_empty'],
    ['pg-add', 'pg_sw1', 'vm3'],
    ['acl-add', 'pg_sw1', 'from-lport', '900', 'inport == @pg_sw1', 'drop'],
  ]);
  // ovn-trace: vm2's UDP to vm1 is dropped by pg_web's to-lport drop on sw1 (after conntrack),
  // its TCP to port 80 is allowed and committed; the same verdicts on both SBs.
  const ours = await realSbOf(t, real.northd.view());
  const fromVm2 = 'inport == "vm2" && eth.src == 00:00:00:00:02:0a && eth.dst == 00:00:00:00:ff:02 && ip4.src == 10.0.2.10 && ip4.dst == 10.0.1.10 && ip.ttl == 64';
  const udp = `${fromVm2} && udp && udp.src == 5000 && udp.dst == 5001`;
  const newConn = ['--ct=new', '--ct=new', '--ct=new', '--ct=new'];
  const udpTrace = await ovnTrace(ours.socketPath, 'sw2', udp, newConn);
  t.equal(udpTrace, await ovnTrace(real.sbSocket, 'sw2', udp, newConn), 'ovn-trace: the same verdict for UDP to vm1');
  t.notMatch(udpTrace, /output\("vm1"\)/, `dropped by the port group's ACL:\n${udpTrace}`);
  const web = `${fromVm2} && tcp && tcp.src == 5000 && tcp.dst == 80`;
  const webTrace = await ovnTrace(ours.socketPath, 'sw2', web, newConn);
  t.equal(webTrace, await ovnTrace(real.sbSocket, 'sw2', web, newConn), 'ovn-trace: the same verdict for TCP to port 80');
  t.match(webTrace, /output\("vm1"\)/, `allowed by the allow-related ACL:\n${webTrace}`);
  // Changes: membership, address set content, an ACL updated and one deleted; then the
  // stateful ACLs go and the switches fall back to stateless.
  await real.nbctl(['pg-set-ports', 'pg_web', 'vm1']);
  await real.nbctl(['set', 'Address_Set', 'web', 'addresses="10.0.2.12"']);
  await real.nbctl(['acl-del', 'sw2', 'to-lport', '1003', 'ip4.dst == 10.0.2.10 && tcp.dst == 23']);
  await real.nbctl(['lsp-set-addresses', 'vm1', '00:00:00:00:01:0a 10.0.1.10 10.0.1.20 fd00:1::a']);
  await compareWithReal(t, real);
  await real.nbctl(['pg-set-ports', 'pg_web', 'vm1', 'vm2', 'vm3']);
  await real.nbctl(['acl-del', 'pg_web']);
  await compareWithReal(t, real);
});

t.test('(f) native DHCPv4 for ports with dhcpv4_options', { skip }, async (t) => {
  const options = 'options={server_id="10.0.1.1", server_mac="00:00:00:00:ff:01", lease_time="3600", router="10.0.1.1", dns_server="{8.8.8.8, 1.1.1.1}", mtu="1442"}';
  const real = await scenario(t, [
    ...twoSwitchesAndARouter,
    ['--', '--id=@d', 'create', 'DHCP_Options', 'cidr=10.0.1.0/24', options, '--', 'set', 'Logical_Switch_Port', 'vm1', 'dhcpv4_options=@d', '--', 'set', 'Logical_Switch_Port', 'vm3', 'dhcpv4_options=@d'],
    ['lsp-set-options', 'vm3', 'hostname=vm-three'],
    // vm2's address is outside the options' CIDR: no offer, only the ACL flow.
    ['--', '--id=@d', 'create', 'DHCP_Options', 'cidr=10.0.9.0/24', options, '--', 'set', 'Logical_Switch_Port', 'vm2', 'dhcpv4_options=@d'],
    // Options without lease_time offer nothing.
    ['--', '--id=@d', 'create', 'DHCP_Options', 'cidr=10.0.1.0/24', 'options={server_id="10.0.1.1", server_mac="00:00:00:00:ff:01"}', '--', 'lsp-add', 'sw1', 'vm5', '--', 'lsp-set-addresses', 'vm5', '00:00:00:00:01:0c 10.0.1.12', '--', 'set', 'Logical_Switch_Port', 'vm5', 'dhcpv4_options=@d'],
  ]);
  // The real ovn-trace: a DHCPDISCOVER from vm1 is answered by ovn-controller (put_dhcp_opts).
  const ours = await realSbOf(t, real.northd.view());
  const discover = 'inport == "vm1" && eth.src == 00:00:00:00:01:0a && eth.dst == ff:ff:ff:ff:ff:ff && ip4.src == 0.0.0.0 && ip4.dst == 255.255.255.255 && udp.src == 68 && udp.dst == 67';
  const trace = await ovnTrace(ours.socketPath, 'sw1', discover);
  t.equal(trace, await ovnTrace(real.sbSocket, 'sw1', discover), 'ovn-trace: the same verdict for a DHCPDISCOVER');
  t.match(trace, /put_dhcp_opts\(offerip = 10\.0\.1\.10, dns_server = \{8\.8\.8\.8, 1\.1\.1\.1\}, lease_time = 3600, mtu = 1442, netmask = 255\.255\.255\.0, router = 10\.0\.1\.1, server_id = 10\.0\.1\.1\)/, `answered with vm1's offer:\n${trace}`);
  // Changes: the options' content, a port's address, then a stateful ACL (the server's replies
  // are committed), then the options removed from a port.
  // The mirror has the real NB's row UUIDs: find the options row vm1 uses there.
  const vm1 = real.fx.db.findUnique('Logical_Switch_Port', ['name'], ['vm1']) as unknown as { dhcpv4_options: string[] };
  await real.nbctl(['dhcp-options-set-options', vm1.dhcpv4_options[0] as string, 'server_id=10.0.1.1', 'server_mac=00:00:00:00:ff:01', 'lease_time=7200', 'router=10.0.1.1']);
  await real.nbctl(['lsp-set-addresses', 'vm3', '00:00:00:00:01:0b 10.0.1.13']);
  await real.nbctl(['acl-add', 'sw1', 'to-lport', '1000', 'ip4 && tcp', 'allow-related']);
  await compareWithReal(t, real);
  await real.nbctl(['clear', 'Logical_Switch_Port', 'vm1', 'dhcpv4_options']);
  await compareWithReal(t, real);
});

t.test('(g) load balancers on switches: VIPs with and without ports, IPv6, groups, options', { skip }, async (t) => {
  const real = await scenario(t, [
    ...twoSwitchesAndARouter,
    localnetLsp('sw1', 'ln1', 'phys'),
    // TCP with a port, a port-less VIP, UDP, IPv6, and a VIP without backends (dropped).
    ['lb-add', 'lb-web', '10.0.0.100:80', '10.0.1.10:8080,10.0.1.11:8080'],
    ['lb-add', 'lb-web', '10.0.0.101', '10.0.1.10,10.0.2.10'],
    ['lb-add', 'lb-dns', '10.0.0.53:53', '10.0.2.10:5353', 'udp'],
    ['lb-add', 'lb-v6', '[fd00::100]:80', '[fd00:1::a]:80,[fd00:2::a]:8080'],
    ['create', 'Load_Balancer', 'name=lb-empty', 'vips:"10.0.0.102:80"=""', 'protocol=tcp'],
    ['ls-lb-add', 'sw1', 'lb-web'],
    ['ls-lb-add', 'sw2', 'lb-web'],
    ['ls-lb-add', 'sw1', 'lb-dns'],
    ['ls-lb-add', 'sw2', 'lb-v6'],
    ['ls-lb-add', 'sw2', 'lb-empty'],
    // An allow-stateless ACL on sw1 (its pre-ACL filter comes with the VIPs), a stateful one on sw2.
    ['acl-add', 'sw1', 'from-lport', '1001', 'ip4.src == 10.0.1.10 && icmp4', 'allow-stateless'],
    ['acl-add', 'sw2', 'to-lport', '1002', 'ip4 && tcp', 'allow-related'],
  ]);
  // Options: reject without backends, selection fields, affinity, hairpin SNAT IP; a group of
  // load balancers on a third switch; a bad VIP (skipped); a load balancer with no VIPs.
  await real.nbctl(['set', 'Load_Balancer', 'lb-empty', 'options:reject=true']);
  await real.nbctl(['set', 'Load_Balancer', 'lb-web', 'selection_fields=ip_src,tp_dst', 'options:hairpin_snat_ip="169.254.0.1 fd69::1"']);
  await real.nbctl(['set', 'Load_Balancer', 'lb-dns', 'options:affinity_timeout=60']);
  await real.nbctl(['lb-add', 'lb-aff', '10.0.0.110:443', '10.0.1.10:443,10.0.2.10:8443']);
  await real.nbctl(['set', 'Load_Balancer', 'lb-aff', 'options:affinity_timeout=30']);
  await real.nbctl(['lb-add', 'lb-aff6', '[fd00::110]:443', '[fd00:1::a]:443']);
  await real.nbctl(['set', 'Load_Balancer', 'lb-aff6', 'options:affinity_timeout=30', 'vips:"fd00::111"="fd00:1::a"']);
  await real.nbctl(['create', 'Load_Balancer', 'name=lb-novips', 'protocol=tcp']);
  // The mirror has the real NB's UUIDs; ovn-nbctl names load balancers by UUID in generic commands.
  const uuidOf = (table: string, name: string): string => [...real.fx.db.rows(table).values()].find((r) => r['name'] === name)?._uuid ?? assert.fail(`no ${table} ${name}`);
  const lbUuid = (name: string): string => uuidOf('Load_Balancer', name);
  await real.nbctl(['create', 'Load_Balancer_Group', 'name=grp', `load_balancer=${lbUuid('lb-aff')},${lbUuid('lb-aff6')}`]);
  await real.nbctl(['ls-add', 'sw3', '--', 'add', 'Logical_Switch', 'sw3', 'load_balancer_group', uuidOf('Load_Balancer_Group', 'grp')]);
  await real.nbctl(['add', 'Logical_Switch', 'sw1', 'load_balancer_group', uuidOf('Load_Balancer_Group', 'grp')]);
  await real.nbctl(['ls-lb-add', 'sw3', 'lb-novips']);
  await real.nbctl(['set', 'Load_Balancer', 'lb-web', 'vips:"10.0.0.103:80"="10.0.1.10:8080,bogus"']);
  // DNS on sw1, stateful only through its VIPs: the DNS answers are committed.
  await real.nbctl(['--', '--id=@d', 'create', 'DNS', 'records={vm1="10.0.1.10"}', '--', 'add', 'Logical_Switch', 'sw1', 'dns_records', '@d']);
  await compareWithReal(t, real);
  // The real ovn-trace on both SBs: vm1's SYN to the VIP is load balanced (ct_lb_mark to one
  // backend); vm3's to a VIP whose backends are gone is dropped.
  const oursSb = await realSbOf(t, real.northd.view());
  const syn = 'inport == "vm1" && eth.src == 00:00:00:00:01:0a && eth.dst == 00:00:00:00:ff:01 && ip4.src == 10.0.1.10 && ip4.dst == 10.0.0.100 && ip.ttl == 64 && tcp && tcp.src == 40000 && tcp.dst == 80';
  const newConn = ['--ct=new', '--ct=new', '--ct=new', '--ct=new'];
  // ovn-trace picks a backend at random unless told: the same one on both sides.
  const toVm3 = [...newConn, '--lb-dst=10.0.1.11:8080'];
  const synTrace = await ovnTrace(oursSb.socketPath, 'sw1', syn, toVm3);
  t.equal(synTrace, await ovnTrace(real.sbSocket, 'sw1', syn, toVm3), 'ovn-trace: the same verdict for a SYN to the VIP');
  t.match(synTrace, /ct_lb_mark[\s\S]*output\("vm3"\)/, `load balanced to the backend asked for (vm3):\n${synTrace}`);
  const toAff = 'inport == "vm1" && eth.src == 00:00:00:00:01:0a && eth.dst == 00:00:00:00:ff:01 && ip4.src == 10.0.1.10 && ip4.dst == 10.0.0.110 && ip.ttl == 64 && tcp && tcp.src == 40001 && tcp.dst == 443';
  const toVm2 = [...newConn, '--lb-dst=10.0.2.10:8443'];
  t.equal(await ovnTrace(oursSb.socketPath, 'sw1', toAff, toVm2), await ovnTrace(real.sbSocket, 'sw1', toAff, toVm2), 'ovn-trace: the same verdict through the affinity flows');
  // Changes: a backend removed, a load balancer detached, one deleted (weakly referenced), the
  // group loses a member, the VIPs of sw3's own load balancer come and go.
  await real.nbctl(['--may-exist', 'lb-add', 'lb-web', '10.0.0.100:80', '10.0.1.10:8080']);
  await real.nbctl(['ls-lb-del', 'sw2', 'lb-web']);
  await real.nbctl(['lb-del', 'lb-dns']);
  await real.nbctl(['remove', 'Load_Balancer_Group', 'grp', 'load_balancer', lbUuid('lb-aff6')]);
  await real.nbctl(['set', 'Load_Balancer', 'lb-novips', 'vips:"10.0.0.120:80"="10.0.1.10:80"']);
  await compareWithReal(t, real);
  await real.nbctl(['clear', 'Load_Balancer', 'lb-novips', 'vips']);
  await real.nbctl(['remove', 'Logical_Switch', 'sw1', 'load_balancer_group', uuidOf('Load_Balancer_Group', 'grp')]);
  await real.nbctl(['lb-del', 'lb-v6']);
  await compareWithReal(t, real);
});

t.test('(g2) static MAC bindings on router ports', { skip }, async (t) => {
  const real = await scenario(t, [
    ...twoSwitchesAndARouter,
    ['static-mac-binding-add', 'lr0-sw1', '10.0.1.50', '00:00:00:00:01:50'],
    ['static-mac-binding-add', 'lr0-sw2', 'fd00:2::50', '00:00:00:00:02:50'],
    // On a switch port: ovn-northd makes no SB row for it.
    ['create', 'Static_MAC_Binding', 'logical_port=vm1', 'ip=10.0.1.51', 'mac="00:00:00:00:01:51"'],
    ['create', 'Static_MAC_Binding', 'logical_port=nope', 'ip=10.0.1.52', 'mac="00:00:00:00:01:52"'],
  ]);
  await real.nbctl(['--may-exist', 'static-mac-binding-add', 'lr0-sw1', '10.0.1.50', '00:00:00:00:01:55']);
  await real.nbctl(['set', 'Static_MAC_Binding', smbUuid(real, '10.0.1.50'), 'override_dynamic_mac=true']);
  await compareWithReal(t, real);
  await real.nbctl(['static-mac-binding-del', 'lr0-sw2', 'fd00:2::50']);
  await compareWithReal(t, real);
});

/** The UUID of the NB Static_MAC_Binding with this IP, in our mirror (the real NB's UUIDs). */
function smbUuid(real: RealSandbox, ip: string): string {
  for (const row of real.fx.db.rows('Static_MAC_Binding').values()) if (row['ip'] === ip) return row._uuid;
  throw new Error(`no Static_MAC_Binding for ${ip}`);
}

t.test('(h) load balancers on routers: a gateway router and a distributed router', { skip }, async (t) => {
  const real = await scenario(t, [
    ...gatewayRouterTopology,
    ['lr-nat-add', 'gw', 'dnat_and_snat', '172.16.0.101', '10.0.1.11'],
    // On the gateway router: a VIP in the external network (reachable), one outside every
    // network, IPv6, a port-less VIP, a VIP that is also a NAT address, no backends.
    ['lb-add', 'lb-ext', '172.16.0.100:80', '10.0.1.10:8080,10.0.1.11:8080'],
    ['lb-add', 'lb-ext', '192.168.50.5:443', '10.0.1.10:443'],
    ['lb-add', 'lb-ext', '172.16.0.101:8000', '10.0.1.11:80'],
    ['lb-add', 'lb-v6', '[fd00:ee::100]:80', '[fd00:1::a]:80'],
    ['lb-add', 'lb-any', '172.16.0.102', '10.0.1.10'],
    ['lb-add', 'lb-udp', '172.16.0.103:53', '10.0.1.10:53', 'udp'],
    ['lr-lb-add', 'gw', 'lb-ext'],
    ['lr-lb-add', 'gw', 'lb-v6'],
    ['lr-lb-add', 'gw', 'lb-any'],
    ['lr-lb-add', 'gw', 'lb-udp'],
    // A distributed router (no gateway) with a load balancer, and the same one on a switch.
    ['ls-add', 'sw2'],
    ['lsp-add', 'sw2', 'vm3', '--', 'lsp-set-addresses', 'vm3', '00:00:00:00:02:0a 10.0.2.10'],
    ['lr-add', 'dr'],
    ['lrp-add', 'dr', 'dr-sw2', '00:00:00:00:ff:21', '10.0.2.1/24'],
    routerLsp('sw2', 'sw2-dr', 'dr-sw2'),
    ['lb-add', 'lb-dr', '10.0.2.100:80', '10.0.2.10:80'],
    ['lr-lb-add', 'dr', 'lb-dr'],
    ['ls-lb-add', 'sw2', 'lb-dr'],
  ]);
  // Options: skip_snat, neighbor_responder, affinity, reject, force SNAT on the router.
  await real.nbctl(['set', 'Load_Balancer', 'lb-any', 'options:skip_snat=true', 'options:neighbor_responder=all']);
  await real.nbctl(['set', 'Load_Balancer', 'lb-udp', 'options:neighbor_responder=none', 'options:affinity_timeout=20']);
  await real.nbctl(['set', 'Load_Balancer', 'lb-v6', 'options:affinity_timeout=20']);
  await real.nbctl(['create', 'Load_Balancer', 'name=lb-rej', 'vips:"172.16.0.104:80"=""', 'protocol=tcp', 'options:reject=true']);
  await real.nbctl(['lr-lb-add', 'gw', 'lb-rej']);
  await compareWithReal(t, real);
  // The real ovn-trace on both SBs: from outside, ARP for the VIP is answered by the gateway
  // router; a SYN to it is DNATed (ct_lb_mark) towards sw1; one to the rejecting VIP is refused.
  const oursSb = await realSbOf(t, real.northd.view());
  const fromOutside = 'inport == "outside" && eth.src == 00:00:00:00:ee:01';
  const arp = `${fromOutside} && eth.dst == ff:ff:ff:ff:ff:ff && arp.op == 1 && arp.sha == 00:00:00:00:ee:01 && arp.spa == 172.16.0.254 && arp.tpa == 172.16.0.100`;
  const arpTrace = await ovnTrace(oursSb.socketPath, 'ext', arp);
  t.equal(arpTrace, await ovnTrace(real.sbSocket, 'ext', arp), 'ovn-trace: the same verdict for ARP to the VIP');
  t.match(arpTrace, /arp\.op = 2/, `answered by the router:\n${arpTrace}`);
  const newConn = ['--ct=new', '--ct=new', '--ct=new', '--ct=new'];
  // ovn-trace picks a backend at random unless told: the same one on both sides.
  for (const [what, dst, backend] of [['the VIP', '172.16.0.100 && tcp && tcp.src == 40000 && tcp.dst == 80', '10.0.1.11:8080'], ['the rejecting VIP', '172.16.0.104 && tcp && tcp.src == 40000 && tcp.dst == 80', ''], ['the UDP VIP', '172.16.0.103 && udp && udp.src == 4000 && udp.dst == 53', '10.0.1.10:53']] as const) {
    const flow = `${fromOutside} && eth.dst == 00:00:00:00:ff:02 && ip4.src == 172.16.0.254 && ip.ttl == 64 && ip4.dst == ${dst}`;
    const options = backend === '' ? newConn : [...newConn, `--lb-dst=${backend}`];
    const trace = await ovnTrace(oursSb.socketPath, 'ext', flow, options);
    t.equal(trace, await ovnTrace(real.sbSocket, 'ext', flow, options), `ovn-trace: the same verdict for a packet to ${what}`);
    if (what === 'the VIP') t.match(trace, /ct_lb_mark/, `DNATed by the router's load balancer:\n${trace}`);
    if (what === 'the rejecting VIP') t.match(trace, /tcp_reset \{\s*output\("outside"\)/, `refused with a TCP reset back to the sender:\n${trace}`);
  }
  await real.nbctl(['set', 'Logical_Router', 'gw', 'options:lb_force_snat_ip=router_ip']);
  await compareWithReal(t, real);
  await real.nbctl(['set', 'Logical_Router', 'gw', 'options:lb_force_snat_ip=172.16.0.50']);
  await real.nbctl(['set', 'Load_Balancer', 'lb-ext', 'options:affinity_timeout=60']);
  await compareWithReal(t, real);
  // Changes: a VIP removed, a load balancer detached, one deleted, the NAT rule on a VIP gone.
  await real.nbctl(['lb-del', 'lb-ext', '192.168.50.5:443']);
  await real.nbctl(['lr-lb-del', 'gw', 'lb-v6']);
  await real.nbctl(['lb-del', 'lb-any']);
  await real.nbctl(['lr-nat-del', 'gw', 'dnat_and_snat', '172.16.0.101']);
  await real.nbctl(['remove', 'Logical_Router', 'gw', 'options', 'lb_force_snat_ip']);
  await compareWithReal(t, real);
});

/** The UUID of the NB Address_Set named `name`, in our mirror (the real NB's UUIDs). */
function nbUuidByAsName(real: RealSandbox, name: string): string {
  const row = [...real.fx.db.rows('Address_Set').values()].find((r) => (r as unknown as { name: string }).name === name);
  if (row === undefined) throw new Error(`no Address_Set ${name} in the mirror`);
  return row._uuid;
}

/** The UUID of the NB row of `table` whose external_ids:name is `name`, in our mirror (the real NB's UUIDs). */
function nbUuidByName(real: RealSandbox, table: string, name: string): string {
  for (const row of real.fx.db.rows(table).values()) {
    if ((row as unknown as { external_ids: ReadonlyMap<string, string> }).external_ids.get('name') === name) return row._uuid;
  }
  throw new Error(`no ${table} row named ${name} in the mirror`);
}

t.test('(i) native DHCPv6 for ports with dhcpv6_options', { skip }, async (t) => {
  const dhcp6 = (name: string, cidr: string, options: string, ...ports: string[]): string[] =>
    ['--', '--id=@d', 'create', 'DHCP_Options', `cidr="${cidr}"`, `options=${options}`, `external_ids:name=${name}`, ...ports.flatMap((p) => ['--', 'set', 'Logical_Switch_Port', p, 'dhcpv6_options=@d'])];
  const real = await scenario(t, [
    ...twoSwitchesAndARouter,
    // Stateful on sw1: vm1 is offered its address; vm3 has no IPv6 address (only the ACL flow).
    // (A string option's value carries its own quotes: ovn-northd copies values as they are.)
    dhcp6('stateful', 'fd00:1::/64', '{server_id="00:00:00:00:ff:01", dns_server="{fd00::53, fd00::54}", domain_search="\\"ovn.org\\""}', 'vm1', 'vm3'),
    // Stateless on sw2: no ia_addr.
    dhcp6('stateless', 'fd00:2::/64', '{server_id="00:00:00:00:ff:02", dhcpv6_stateless="true", dns_server="fd00::53"}', 'vm2'),
    // vm4's address is outside the CIDR; vm5's first one is, its second is not.
    ['lsp-add', 'sw1', 'vm4', '--', 'lsp-set-addresses', 'vm4', '00:00:00:00:01:0d fd00:9::4'],
    ['lsp-add', 'sw1', 'vm5', '--', 'lsp-set-addresses', 'vm5', '00:00:00:00:01:0e 10.0.1.14 fd00:9::5 fd00:1::5', '00:00:00:00:01:0f fd00:1::6'],
    ['lsp-add', 'sw1', 'vm6', '--', 'lsp-set-addresses', 'vm6', '00:00:00:00:01:10 fd00:1::10'],
    // Malformed options: a bad CIDR (the ACL flow only), a server_id that is no MAC (nothing),
    // a server_id OVS reads as a MAC though it is not spelled as one, "TRUE" for stateless, a
    // CIDR written with a mask, and an unquoted string (copied as it is).
    dhcp6('bad-cidr', 'fd00:1::/129', '{server_id="00:00:00:00:ff:01"}', 'vm4'),
    dhcp6('bad-server', 'fd00:1::/64', '{server_id="not-a-mac", dns_server="fd00::53"}', 'vm6'),
    ['lsp-add', 'sw1', 'vm7', '--', 'lsp-set-addresses', 'vm7', '00:00:00:00:01:11 fd00:1::11'],
    dhcp6('odd', 'fd00:1::/ffff:ffff:ffff:ffff::', '{server_id="0:0:0:0:ff:3", dhcpv6_stateless="TRUE", domain_search="ovn.org"}', 'vm7'),
  ]);
  const statefulOptions = nbUuidByName(real, 'DHCP_Options', 'stateful');
  await real.nbctl(['set', 'Logical_Switch_Port', 'vm5', `dhcpv6_options=${statefulOptions}`]);
  await compareWithReal(t, real);
  // What the real ovn-northd made of each case (our flows equal its, compared above).
  const dhcp6Flows = (port: string): string[] => ours<sb.Logical_Flow>(real.northd.view(), 'Logical_Flow')
    .filter((f) => f.match.includes(`port == "${port}"`) && (f.match.includes('udp.src == 546') || f.match.includes('udp.src == 547')))
    .map((f) => `${f.external_ids.get('stage-name') ?? ''} ${f.actions}`).sort();
  const stages = (port: string): string[] => dhcp6Flows(port).map((f) => f.split(' ')[0] as string);
  t.same(stages('vm3'), ['ls_out_acl'], 'no IPv6 address: only the ACL flow for the server\'s replies');
  t.same(stages('vm4'), ['ls_out_acl'], 'a CIDR that does not parse: only the ACL flow');
  t.same(dhcp6Flows('vm6'), [], 'a server_id that is no MAC: no flow at all');
  t.same(stages('vm5'), ['ls_in_dhcp_options', 'ls_in_dhcp_options', 'ls_in_dhcp_response', 'ls_in_dhcp_response', 'ls_out_acl'], 'one offer per address entry');
  t.match(dhcp6Flows('vm5').join('\n'), /ia_addr = fd00:1::5,[\s\S]*ia_addr = fd00:1::6,/, 'the first address in the CIDR of each entry');
  t.match(dhcp6Flows('vm7').join('\n'), /put_dhcpv6_opts\(domain_search = ovn\.org, server_id = 0:0:0:0:ff:3\)[\s\S]*ip6\.src = fe80::200:ff:fe00:ff03;/,
    'a masked CIDR, a loosely written server_id (copied as written), stateless by "TRUE"');
  t.match(dhcp6Flows('vm2').join('\n'), /put_dhcpv6_opts\(dns_server = fd00::53, server_id = 00:00:00:00:ff:02\)/, 'stateless: no ia_addr, no dhcpv6_stateless');
  // The real ovn-trace: a SOLICIT from vm1 is answered by ovn-controller (put_dhcpv6_opts).
  const ourSb = await realSbOf(t, real.northd.view());
  const solicit = 'inport == "vm1" && eth.src == 00:00:00:00:01:0a && eth.dst == 33:33:00:01:00:02 && ip6.src == fe80::200:ff:fe00:10a && ip6.dst == ff02::1:2 && udp.src == 546 && udp.dst == 547';
  const trace = await ovnTrace(ourSb.socketPath, 'sw1', solicit);
  t.equal(trace, await ovnTrace(real.sbSocket, 'sw1', solicit), 'ovn-trace: the same verdict for a DHCPv6 SOLICIT');
  t.match(trace, /put_dhcpv6_opts\(ia_addr = fd00:1::a, dns_server = \{fd00::53, fd00::54\}, domain_search = "ovn\.org", server_id = 00:00:00:00:ff:01\)/, `answered with vm1's address:\n${trace}`);
  // Changes: the options' content, a port's address, the options cleared from a port, then a
  // stateful ACL (the server's replies are committed).
  await real.nbctl(['dhcp-options-set-options', statefulOptions, 'server_id=00:00:00:00:ff:09', 'dhcpv6_stateless=true']);
  await real.nbctl(['lsp-set-addresses', 'vm1', '00:00:00:00:01:0a 10.0.1.10 fd00:1::b']);
  await real.nbctl(['clear', 'Logical_Switch_Port', 'vm2', 'dhcpv6_options']);
  await compareWithReal(t, real);
  await real.nbctl(['acl-add', 'sw1', 'to-lport', '1000', 'ip6 && tcp', 'allow-related']);
  await real.nbctl(['dhcp-options-set-options', nbUuidByName(real, 'DHCP_Options', 'bad-server'), 'server_id=00:00:00:00:ff:01']);
  await compareWithReal(t, real);
  t.match(dhcp6Flows('vm1').join('\n'), /ls_out_acl ct_commit; next;/, 'on a stateful switch the server\'s replies are committed');
  t.same(stages('vm6'), ['ls_in_dhcp_options', 'ls_in_dhcp_response', 'ls_out_acl'], 'a server_id set right: vm6 is served');
});

t.test('(j) DNS records on switches', { skip }, async (t) => {
  const dns = (name: string, records: string, ...switches: string[]): string[] =>
    ['--', '--id=@d', 'create', 'DNS', `records=${records}`, `external_ids:name=${name}`, ...switches.flatMap((s) => ['--', 'add', 'Logical_Switch', s, 'dns_records', '@d'])];
  const real = await scenario(t, [
    ...twoSwitchesAndARouter,
    ['ls-add', 'sw3'],
    ['lsp-add', 'sw3', 'vm9', '--', 'lsp-set-addresses', 'vm9', '00:00:00:00:03:0a 10.0.3.10'],
    // d1 on sw1 (names and addresses in mixed case, some not ASCII), d2 shared by sw1 and sw2,
    // and an empty row on sw3 (an SB row, but no DNS flows there).
    dns('d1', '{"vm1.ovn.org"="10.0.1.10 FD00:1::A", "VM3.ovn.org"="10.0.1.11", "Ünï.ovn.org"="10.0.1.12 ÄB"}', 'sw1'),
    dns('d2', '{"vm2.ovn.org"="10.0.2.10 fd00:2::a"}', 'sw1', 'sw2'),
    dns('empty', '{}', 'sw3'),
    // A row no switch names has no SB row.
    dns('unused', '{"x.ovn.org"="10.9.9.9"}'),
  ]);
  const view = real.northd.view();
  t.equal(view.get('DNS')?.size, 3, 'one SB row per DNS row a switch names');
  const d1 = [...(view.get('DNS')?.values() ?? [])].find((r) => (r as unknown as sb.DNS).external_ids.get('dns_id') === nbUuidByName(real, 'DNS', 'd1')) as unknown as sb.DNS | undefined;
  t.same(d1 === undefined ? undefined : Object.fromEntries(d1.records), { 'VM3.ovn.org': '10.0.1.11', 'vm1.ovn.org': '10.0.1.10 fd00:1::a', 'Ünï.ovn.org': '10.0.1.12 Äb' },
    'the values in lowercase (ASCII letters only), the names as written (as the real SB has them)');
  // The real ovn-trace: a query from vm1 goes to ovn-controller (dns_lookup) on both SBs.
  const ourSb = await realSbOf(t, view);
  const query = 'inport == "vm1" && eth.src == 00:00:00:00:01:0a && eth.dst == 00:00:00:00:ff:01 && ip4.src == 10.0.1.10 && ip4.dst == 10.0.1.1 && udp.src == 5353 && udp.dst == 53';
  const trace = await ovnTrace(ourSb.socketPath, 'sw1', query);
  t.equal(trace, await ovnTrace(real.sbSocket, 'sw1', query), 'ovn-trace: the same verdict for a DNS query');
  t.match(trace, /dns_lookup/, `the query is looked up:\n${trace}`);
  const query3 = 'inport == "vm9" && eth.src == 00:00:00:00:03:0a && eth.dst == 00:00:00:00:03:0b && ip4.src == 10.0.3.10 && ip4.dst == 10.0.3.1 && udp.src == 5353 && udp.dst == 53';
  const trace3 = await ovnTrace(ourSb.socketPath, 'sw3', query3);
  t.equal(trace3, await ovnTrace(real.sbSocket, 'sw3', query3), 'ovn-trace: the same verdict on a switch with an empty DNS row');
  t.notMatch(trace3, /dns_lookup/, 'no lookup where the records are empty');
  // Changes: records edited (the empty row gets some, d2 changes), a stateful ACL, sw1's
  // dns_records cleared, a row still named by a switch deleted.
  await real.nbctl(['set', 'DNS', nbUuidByName(real, 'DNS', 'empty'), 'records={"vm9.ovn.org"="10.0.3.10"}']);
  await real.nbctl(['set', 'DNS', nbUuidByName(real, 'DNS', 'd2'), 'records={"vm2.ovn.org"="10.0.2.11", "www.ovn.org"="10.0.2.12"}']);
  await real.nbctl(['acl-add', 'sw2', 'to-lport', '1000', 'ip4 && tcp', 'allow-related']);
  await compareWithReal(t, real);
  await real.nbctl(['clear', 'Logical_Switch', 'sw1', 'dns_records']);
  await compareWithReal(t, real);
  await real.nbctl(['destroy', 'DNS', nbUuidByName(real, 'DNS', 'd2')]);
  await compareWithReal(t, real);
  t.same([...(real.northd.view().get('DNS')?.values() ?? [])].map((r) => (r as unknown as sb.DNS).external_ids.get('dns_id')), [nbUuidByName(real, 'DNS', 'empty')], 'only the row sw3 names is left');
  // The records emptied again: the flows go, the row stays.
  await real.nbctl(['clear', 'DNS', nbUuidByName(real, 'DNS', 'empty'), 'records']);
  await compareWithReal(t, real);
});

/** (k) A distributed router whose port to the external network is a distributed gateway port. */
const distributedGateway: readonly (readonly string[])[] = [
  ['ls-add', 'sw1'],
  ['lsp-add', 'sw1', 'vm1', '--', 'lsp-set-addresses', 'vm1', '00:00:00:00:01:0a 10.0.1.10 fd00:1::a'],
  ['lsp-add', 'sw1', 'vm2', '--', 'lsp-set-addresses', 'vm2', '00:00:00:00:01:0b 10.0.1.11'],
  ['ls-add', 'ext'],
  localnetLsp('ext', 'ln-ext', 'phys'),
  ['lr-add', 'lr0'],
  ['lrp-add', 'lr0', 'lr0-sw1', '00:00:00:00:ff:01', '10.0.1.1/24', 'fd00:1::1/64'],
  routerLsp('sw1', 'sw1-lr0', 'lr0-sw1'),
  ['lrp-add', 'lr0', 'lr0-ext', '00:00:00:00:ff:02', '172.16.0.1/24', 'fd00:ee::1/64'],
  routerLsp('ext', 'ext-lr0', 'lr0-ext'),
  ['lr-route-add', 'lr0', '0.0.0.0/0', '172.16.0.254'],
  ['lrp-set-gateway-chassis', 'lr0-ext', 'hv1', '20'],
  ['lrp-set-gateway-chassis', 'lr0-ext', 'hv2', '10'],
];

t.test('(k) a distributed gateway port with two gateway chassis', { skip }, async (t) => {
  const real = await scenario(t, distributedGateway);
  const binding = (name: string): sb.Port_Binding | undefined =>
    ours<sb.Port_Binding>(real.northd.view(), 'Port_Binding').find((p) => p.logical_port === name);
  t.equal(binding('cr-lr0-ext')?.type, 'chassisredirect', 'a chassisredirect binding for the gateway port');
  t.same(ours<sb.HA_Chassis_Group>(real.northd.view(), 'HA_Chassis_Group').map((g) => [g.name, g.ha_chassis.length]), [['lr0-ext', 2]], 'its Gateway_Chassis rows as an SB HA_Chassis_Group');
  // options:redirect-chassis (the pre-Gateway_Chassis way) makes no gateway port in 23.03.
  await real.nbctl(['set', 'Logical_Router_Port', 'lr0-sw1', 'options:redirect-chassis=hv9']);
  await compareWithReal(t, real);
  t.equal(binding('cr-lr0-sw1'), undefined, 'no chassisredirect binding for options:redirect-chassis');
  await real.nbctl(['remove', 'Logical_Router_Port', 'lr0-sw1', 'options', 'redirect-chassis']);
  // reside-on-redirect-chassis on the inner port, whose switch gets a localnet port.
  await real.nbctl(['set', 'Logical_Router_Port', 'lr0-sw1', 'options:reside-on-redirect-chassis=true']);
  await real.nbctl(localnetLsp('sw1', 'ln-sw1', 'phys2'));
  await compareWithReal(t, real);
  // nat-addresses on the switch port facing the gateway port: sent from its chassis.
  await real.nbctl(['lsp-set-options', 'ext-lr0', 'router-port=lr0-ext', 'nat-addresses=00:00:00:00:ff:02 172.16.0.5 172.16.0.6']);
  await compareWithReal(t, real);
  t.same(binding('ext-lr0')?.nat_addresses, ['00:00:00:00:ff:02 172.16.0.1 is_chassis_resident("cr-lr0-ext")', '00:00:00:00:ff:02 172.16.0.5 172.16.0.6 is_chassis_resident("cr-lr0-ext")'],
    'its nat-addresses beside the router port\'s own GARP, from the gateway chassis');
  // nat-addresses=router: the router's NAT rules (one on the port's own address, a centralized
  // and a distributed dnat_and_snat, an IPv6 one) and its load balancers' VIPs, then without the
  // VIPs, then as the rules and VIPs change.
  await real.nbctl(['lr-nat-add', 'lr0', 'snat', '172.16.0.1', '10.0.1.0/24']);
  await real.nbctl(['lr-nat-add', 'lr0', 'dnat_and_snat', '172.16.0.10', '10.0.1.10']);
  await real.nbctl(['lr-nat-add', 'lr0', 'dnat_and_snat', '172.16.0.11', '10.0.1.11', 'vm2', '00:00:00:00:ab:01']);
  await real.nbctl(['lr-nat-add', 'lr0', 'dnat_and_snat', 'fd00:ee::10', 'fd00:1::a']);
  await real.nbctl(['lb-add', 'lb0', '172.16.0.100:80', '10.0.1.10:8080', 'tcp']);
  await real.nbctl(['lb-add', 'lb6', '[fd00:ee::100]:80', '[fd00:1::a]:8080', 'tcp']);
  await real.nbctl(['lr-lb-add', 'lr0', 'lb0']);
  await real.nbctl(['lr-lb-add', 'lr0', 'lb6']);
  await real.nbctl(['lsp-set-options', 'ext-lr0', 'router-port=lr0-ext', 'nat-addresses=router']);
  await compareWithReal(t, real);
  t.same(binding('ext-lr0')?.nat_addresses, [
    '00:00:00:00:ab:01 172.16.0.11 is_chassis_resident("vm2")',
    '00:00:00:00:ff:02 172.16.0.1 is_chassis_resident("cr-lr0-ext")',
    '00:00:00:00:ff:02 172.16.0.10 172.16.0.100 fd00:ee::100 is_chassis_resident("cr-lr0-ext")',
  ], 'the distributed rule from its VM\'s chassis; the centralized one and the VIPs from the gateway chassis');
  await real.nbctl(['lsp-set-options', 'ext-lr0', 'router-port=lr0-ext', 'nat-addresses=router', 'exclude-lb-vips-from-garp=true']);
  await compareWithReal(t, real);
  await real.nbctl(['lsp-set-options', 'ext-lr0', 'router-port=lr0-ext', 'nat-addresses=router']);
  await real.nbctl(['lr-nat-del', 'lr0', 'dnat_and_snat', '172.16.0.10']);
  await real.nbctl(['lb-add', 'lb0', '172.16.0.101:80', '10.0.1.11:8080', 'tcp']);
  await compareWithReal(t, real);
  await real.nbctl(['lb-del', 'lb6']);
  await real.nbctl(['lr-nat-del', 'lr0', 'dnat_and_snat', '172.16.0.11']);
  await compareWithReal(t, real);
  await real.nbctl(['lb-del', 'lb0']);
  await real.nbctl(['lr-nat-del', 'lr0', 'snat', '172.16.0.1']);
  await compareWithReal(t, real);
  t.same(binding('ext-lr0')?.nat_addresses, ['00:00:00:00:ff:02 172.16.0.1 is_chassis_resident("cr-lr0-ext")'], 'no rule and no VIP left: the router port\'s own GARP only');
  await real.nbctl(['lr-nat-del', 'lr0']);
  await real.nbctl(['lsp-set-options', 'ext-lr0', 'router-port=lr0-ext']);
  // An NB HA_Chassis_Group on the port wins over its Gateway_Chassis rows; its members change.
  await real.nbctl(['ha-chassis-group-add', 'grp1']);
  await real.nbctl(['ha-chassis-group-add-chassis', 'grp1', 'hv3', '30']);
  await real.nbctl(['set', 'Logical_Router_Port', 'lr0-ext', `ha_chassis_group=${[...real.fx.db.rows('HA_Chassis_Group').values()].find((r) => (r as unknown as { name: string }).name === 'grp1')?._uuid ?? '?'}`]);
  await compareWithReal(t, real);
  await real.nbctl(['ha-chassis-group-add-chassis', 'grp1', 'hv4', '40']);
  await real.nbctl(['ha-chassis-group-set-chassis-prio', 'grp1', 'hv3', '50']);
  await compareWithReal(t, real);
  await real.nbctl(['clear', 'Logical_Router_Port', 'lr0-ext', 'ha_chassis_group']);
  await compareWithReal(t, real);
  // Changes: a chassis's priority changed, one removed, then the last one (no longer a DGP).
  await real.nbctl(['lrp-set-gateway-chassis', 'lr0-ext', 'hv2', '30']);
  await compareWithReal(t, real);
  await real.nbctl(['lrp-del-gateway-chassis', 'lr0-ext', 'hv1']);
  await compareWithReal(t, real);
  await real.nbctl(['lrp-del-gateway-chassis', 'lr0-ext', 'hv2']);
  await compareWithReal(t, real);
  // A DGP again, then deleted with its switch port.
  await real.nbctl(['lrp-set-gateway-chassis', 'lr0-ext', 'hv1', '5']);
  await compareWithReal(t, real);
  // On a gateway router the port is no distributed gateway port (no cr binding), yet its
  // binding still names one in chassis-redirect-port; then back to a distributed router.
  await real.nbctl(['set', 'Logical_Router', 'lr0', 'options:chassis=gw1']);
  await compareWithReal(t, real);
  t.equal(binding('cr-lr0-ext'), undefined, 'no chassisredirect binding on a gateway router');
  t.equal(binding('lr0-ext')?.options.get('chassis-redirect-port'), 'cr-lr0-ext', 'chassis-redirect-port all the same');
  await real.nbctl(['remove', 'Logical_Router', 'lr0', 'options', 'chassis']);
  await compareWithReal(t, real);
  await real.nbctl(['lrp-del', 'lr0-ext']);
  await compareWithReal(t, real);
});

t.test('(l) NAT on a distributed gateway port: SNAT, centralized and distributed dnat_and_snat', { skip }, async (t) => {
  const real = await scenario(t, [
    ...distributedGateway,
    ['lr-nat-add', 'lr0', 'snat', '172.16.0.10', '10.0.1.0/24'],
    ['lr-nat-add', 'lr0', 'dnat_and_snat', '172.16.0.100', '10.0.1.10', 'vm1', '00:00:00:00:ee:10'],
    ['lr-nat-add', 'lr0', 'dnat_and_snat', '172.16.0.101', '10.0.1.11'],
    // (Not the same logical IP as another rule: the real SB keeps the hint of the rule that
    // made a shared flow first, a matter of history.)
    ['lr-nat-add', 'lr0', 'dnat', '172.16.0.102', '10.0.1.12'],
    ['lr-nat-add', 'lr0', 'snat', 'fd00:ee::10', 'fd00:1::/64'],
  ]);
  // The real ovn-trace on both SBs: vm2's packet out leaves by the gateway port, whose next hop
  // is not resolved yet: an ARP request on the external network. The same verdict text.
  const ourSb = await realSbOf(t, real.northd.view());
  const out = 'inport == "vm2" && eth.src == 00:00:00:00:01:0b && eth.dst == 00:00:00:00:ff:01 && ip4.src == 10.0.1.11 && ip4.dst == 172.16.0.254 && ip.ttl == 64 && tcp && tcp.dst == 80';
  const trace = await ovnTrace(ourSb.socketPath, 'sw1', out);
  t.equal(trace, await ovnTrace(real.sbSocket, 'sw1', out), 'ovn-trace: the same verdict for a packet leaving by the gateway port');
  t.match(trace, /eth\.src = 00:00:00:00:ff:02;[\s\S]*arp \{[\s\S]*output\("ln-ext"\)/, `routed out by the gateway port, its next hop asked for on the localnet port:\n${trace}`);
  // A distributed rule on a virtual port (its traffic dropped rather than centralized until
  // the port is claimed), then the port made a plain one.
  await real.nbctl(['lsp-add', 'sw1', 'vip', '--', 'lsp-set-type', 'vip', 'virtual']);
  await real.nbctl(['lr-nat-add', 'lr0', 'dnat_and_snat', '172.16.0.150', '10.0.1.50', 'vip', '00:00:00:00:ee:50']);
  await compareWithReal(t, real);
  const gwDrop = (): boolean => ours<sb.Logical_Flow>(real.northd.view(), 'Logical_Flow')
    .some((f) => f.external_ids.get('stage-name') === 'lr_in_gw_redirect' && f.priority === 80 && f.match === 'ip4.src == 10.0.1.50 && outport == "lr0-ext"');
  t.ok(gwDrop(), 'the virtual port\'s distributed traffic is dropped at the gateway redirect');
  await real.nbctl(['lsp-set-type', 'vip', '']);
  await compareWithReal(t, real);
  t.notOk(gwDrop(), 'no longer once the port is not virtual');
  // Stateless rules limited to (or exempting) address sets of external sources.
  await real.nbctl(['create', 'Address_Set', 'name=ext_ok', 'addresses="192.168.7.0/24"']);
  await real.nbctl(['--', '--id=@n', 'create', 'NAT', 'type=dnat_and_snat', 'external_ip=172.16.0.160', 'logical_ip=10.0.1.60', 'options:stateless=true',
    `allowed_ext_ips=${nbUuidByAsName(real, 'ext_ok')}`, '--', 'add', 'Logical_Router', 'lr0', 'nat', '@n']);
  await real.nbctl(['--', '--id=@n', 'create', 'NAT', 'type=dnat_and_snat', 'external_ip=172.16.0.161', 'logical_ip=10.0.1.61', 'options:stateless=true',
    `allowed_ext_ips=${nbUuidByAsName(real, 'ext_ok')}`, '--', 'add', 'Logical_Router', 'lr0', 'nat', '@n']);
  await real.nbctl(['--', '--id=@n', 'create', 'NAT', 'type=dnat_and_snat', 'external_ip=172.16.0.162', 'logical_ip=10.0.1.62', 'options:stateless=true',
    `exempted_ext_ips=${nbUuidByAsName(real, 'ext_ok')}`, '--', 'add', 'Logical_Router', 'lr0', 'nat', '@n']);
  await compareWithReal(t, real);
  const redirects = ours<sb.Logical_Flow>(real.northd.view(), 'Logical_Flow').filter((f) => f.external_ids.get('stage-name') === 'lr_in_gw_redirect');
  t.same([redirects.filter((f) => f.priority === 75).length, redirects.filter((f) => f.priority === 70).length], [2, 1],
    'allowed sources redirected and the rest of the first allowed address dropped, exempted ones dropped (two rules share one allowed flow)');
  // Changes: the distributed rule removed (the gateway port always redirects again), SNAT removed.
  await real.nbctl(['lr-nat-del', 'lr0', 'dnat_and_snat', '172.16.0.100']);
  await compareWithReal(t, real);
  await real.nbctl(['lr-nat-del', 'lr0', 'snat', '10.0.1.0/24']);
  await compareWithReal(t, real);
  // The gateway port deleted with NAT rules left on the router.
  await real.nbctl(['lrp-del', 'lr0-ext']);
  await compareWithReal(t, real);
});

t.test('(m) load balancers on a router with a distributed gateway port', { skip }, async (t) => {
  const real = await scenario(t, [
    ...distributedGateway,
    ['lr-nat-add', 'lr0', 'snat', '172.16.0.10', '10.0.1.0/24'],
    ['lr-nat-add', 'lr0', 'dnat_and_snat', '172.16.0.100', '10.0.1.10', 'vm1', '00:00:00:00:ee:10'],
    // A VIP with ports and two backends, a port-less VIP, IPv6, UDP, a VIP that is a
    // NAT address, and no backends (dropped, then rejected).
    ['lb-add', 'lb1', '172.16.0.200:80', '10.0.1.10:8080,10.0.1.11:8080'],
    ['lb-add', 'lb1', '172.16.0.201', '10.0.1.10'],
    ['lb-add', 'lb1', '172.16.0.100:8000', '10.0.1.11:80'],
    ['lb-add', 'lb-v6', '[fd00:ee::200]:80', '[fd00:1::a]:80'],
    ['lb-add', 'lb-udp', '172.16.0.202:53', '10.0.1.10:53', 'udp'],
    ['lr-lb-add', 'lr0', 'lb1'],
    ['lr-lb-add', 'lr0', 'lb-v6'],
    ['lr-lb-add', 'lr0', 'lb-udp'],
    ['create', 'Load_Balancer', 'name=lb-empty', 'vips:"172.16.0.203:80"=""', 'protocol=tcp'],
    ['lr-lb-add', 'lr0', 'lb-empty'],
  ]);
  const flows = ours<sb.Logical_Flow>(real.northd.view(), 'Logical_Flow');
  t.ok(flows.some((f) => f.external_ids.get('stage-name') === 'lr_out_undnat' && f.priority === 120 && f.match.includes('is_chassis_resident("cr-lr0-ext")')),
    'backends\' replies are unDNATed on the gateway chassis');
  t.ok(flows.some((f) => f.external_ids.get('stage-name') === 'lr_in_dnat' && f.match.includes('172.16.0.200') && f.match.includes('is_chassis_resident')),
    'new connections to a VIP are load balanced on the gateway chassis');
  // skip_snat, affinity, reject without backends, then the router's force SNAT for load balancers.
  await real.nbctl(['set', 'Load_Balancer', 'lb-udp', 'options:skip_snat=true', 'options:affinity_timeout=30']);
  await real.nbctl(['set', 'Load_Balancer', 'lb-empty', 'options:reject=true']);
  await compareWithReal(t, real);
  await real.nbctl(['set', 'Logical_Router', 'lr0', 'options:lb_force_snat_ip=172.16.0.50']);
  await compareWithReal(t, real);
  // Changes: a VIP removed, a load balancer detached, the gateway chassis changed, then removed.
  await real.nbctl(['lb-del', 'lb1', '172.16.0.201']);
  await real.nbctl(['lr-lb-del', 'lr0', 'lb-v6']);
  await real.nbctl(['lrp-set-gateway-chassis', 'lr0-ext', 'hv3', '40']);
  await compareWithReal(t, real);
  await real.nbctl(['clear', 'Logical_Router_Port', 'lr0-ext', 'gateway_chassis']);
  await compareWithReal(t, real);
});

t.test('(n) two distributed gateway ports on one router: NAT by gateway_port and by network, a load balancer', { skip }, async (t) => {
  const real = await scenario(t, [
    ...distributedGateway,
    ['ls-add', 'ext2'],
    localnetLsp('ext2', 'ln-ext2', 'phys2'),
    ['lrp-add', 'lr0', 'lr0-ext2', '00:00:00:00:ff:03', '172.17.0.1/24'],
    routerLsp('ext2', 'ext2-lr0', 'lr0-ext2'),
    ['lrp-set-gateway-chassis', 'lr0-ext2', 'hv2', '20'],
    // On the first port's network, on the second's, one naming its port, one on neither (skipped).
    ['lr-nat-add', 'lr0', 'snat', '172.16.0.10', '10.0.1.0/24'],
    ['lr-nat-add', 'lr0', 'dnat_and_snat', '172.17.0.100', '10.0.1.10', 'vm1', '00:00:00:00:ee:11'],
    // (ovn-nbctl refuses rules whose gateway port it cannot tell: written directly.)
    ['--', '--id=@n', 'create', 'NAT', 'type=dnat_and_snat', 'external_ip=192.168.99.5', 'logical_ip=10.0.1.11', '--', 'add', 'Logical_Router', 'lr0', 'nat', '@n'],
    ['--', '--id=@n', 'create', 'NAT', 'type=dnat', 'external_ip=192.168.99.6', 'logical_ip=10.0.1.12', '--', 'add', 'Logical_Router', 'lr0', 'nat', '@n'],
    ['lb-add', 'lb1', '172.17.0.200:80', '10.0.1.10:8080'],
    ['lr-lb-add', 'lr0', 'lb1'],
  ]);
  // The rule on neither network named to the second port.
  const nat = [...real.fx.db.rows('NAT').values()].find((r) => (r as unknown as { external_ip: string }).external_ip === '192.168.99.5');
  const port = [...real.fx.db.rows('Logical_Router_Port').values()].find((r) => (r as unknown as { name: string }).name === 'lr0-ext2');
  await real.nbctl(['set', 'NAT', nat?._uuid ?? '?', `gateway_port=${port?._uuid ?? '?'}`]);
  await compareWithReal(t, real);
  // The first gateway port stops being one: the second is the router's only (and first) one.
  await real.nbctl(['clear', 'Logical_Router_Port', 'lr0-ext', 'gateway_chassis']);
  await compareWithReal(t, real);
});

t.test('(o) a distributed gateway port facing a switch with a vtep port', { skip }, async (t) => {
  const real = await scenario(t, [
    ...distributedGateway,
    ['lsp-add', 'ext', 'vtep1', '--', 'lsp-set-type', 'vtep1', 'vtep', '--', 'lsp-set-options', 'vtep1', 'vtep-physical-switch=ps1', 'vtep-logical-switch=ls1',
      '--', 'lsp-set-addresses', 'vtep1', 'unknown'],
    ['lr-nat-add', 'lr0', 'snat', '172.16.0.10', '10.0.1.0/24'],
  ]);
  // The vtep port gone: the gateway port is centralized again.
  await real.nbctl(['lsp-del', 'vtep1']);
  await compareWithReal(t, real);
});

t.test('(p) gateway_mtu and gateway_mtu_bypass on a gateway router port and on a distributed gateway port', { skip }, async (t) => {
  // A gateway router: its external port (IPv4 and IPv6) gets an MTU, then a bypass; a third
  // port with IPv4 only gets larger-packet errors back from the external one (and IPv6 from
  // its link-local address).
  const gw = await scenario(t, [
    ...gatewayRouterTopology,
    ['ls-add', 'sw3'],
    ['lrp-add', 'gw', 'gw-sw3', '00:00:00:00:ff:03', '10.0.3.1/24'],
    routerLsp('sw3', 'sw3-gw', 'gw-sw3'),
    ['set', 'Logical_Router_Port', 'gw-ext', 'options:gateway_mtu=1400'],
  ]);
  const flowsOf = (view: SbView, stageName: string): sb.Logical_Flow[] =>
    ours<sb.Logical_Flow>(view, 'Logical_Flow').filter((f) => f.external_ids.get('stage-name') === stageName);
  t.same(flowsOf(gw.northd.view(), 'lr_in_larger_pkts').filter((f) => f.priority === 150).map((f) => f.match).sort(), [
    'inport == "gw-sw1" && outport == "gw-ext" && ip4 && reg9[1] && reg9[0] == 0',
    'inport == "gw-sw1" && outport == "gw-ext" && ip6 && reg9[1] && reg9[0] == 0',
    'inport == "gw-sw3" && outport == "gw-ext" && ip4 && reg9[1] && reg9[0] == 0',
    'inport == "gw-sw3" && outport == "gw-ext" && ip6 && reg9[1] && reg9[0] == 0',
  ], 'an ICMP error back to each other port, IPv4 and IPv6');
  t.ok(flowsOf(gw.northd.view(), 'lr_in_admission').some((f) => f.priority === 50 && f.actions.startsWith('reg9[1] = check_pkt_larger(1414); ')),
    'the port checks what it admits against its MTU plus the Ethernet header');
  // ovn-trace does not evaluate check_pkt_larger: a packet whose reg9[1] is already set stands
  // for one too large. Routed out of gw-ext, it is answered with "fragmentation needed".
  const ourGwSb = await realSbOf(t, gw.northd.view());
  const big = 'inport == "gw-sw1" && eth.src == 00:00:00:00:01:0a && eth.dst == 00:00:00:00:ff:01 && ip4.src == 10.0.1.10 && ip4.dst == 172.16.0.254 && ip.ttl == 64 && udp && reg9[1] == 1';
  const gwTrace = await ovnTrace(ourGwSb.socketPath, 'gw', big);
  t.equal(gwTrace, await ovnTrace(gw.sbSocket, 'gw', big), 'ovn-trace: the same verdict for a packet larger than the MTU');
  t.match(gwTrace, /icmp4 \{[\s\S]*ip4\.dst = 10\.0\.1\.10;[\s\S]*ip4\.src = 10\.0\.1\.1;[\s\S]*icmp4\.type = 3;[\s\S]*icmp4\.code = 4;[\s\S]*icmp4\.frag_mtu = 1400;[\s\S]*output\("vm1"\)/,
    `answered to vm1 from gw-sw1's address with fragmentation needed, MTU 1400:\n${gwTrace}`);
  // A bypass for UDP, the MTU on the inner port too (a value with leading blanks still parses),
  // a value that does not parse (no checks), then a tagged localnet port on the external switch
  // (the check counts a VLAN header) and the options removed.
  await gw.nbctl(['set', 'Logical_Router_Port', 'gw-ext', 'options:gateway_mtu_bypass="udp"']);
  await gw.nbctl(['set', 'Logical_Router_Port', 'gw-sw1', 'options:gateway_mtu=" 9000"']);
  await gw.nbctl(['set', 'Logical_Router_Port', 'gw-sw3', 'options:gateway_mtu="1500 "', 'options:gateway_mtu_bypass="tcp"']);
  await compareWithReal(t, gw);
  t.ok(flowsOf(gw.northd.view(), 'lr_in_chk_pkt_len').some((f) => f.priority === 55 && f.match === 'outport == "gw-ext" && (udp)' && f.actions === 'next;'),
    'bypassed packets skip the length check');
  t.same(flowsOf(gw.northd.view(), 'lr_in_chk_pkt_len').filter((f) => f.priority === 50).map((f) => `${f.match}: ${f.actions}`).sort(), [
    'outport == "gw-ext": reg9[1] = check_pkt_larger(1414); next;',
    'outport == "gw-sw1": reg9[1] = check_pkt_larger(9014); next;',
  ], '" 9000" is an MTU, "1500 " is none');
  await gw.nbctl(['lsp-add', 'ext', 'ln-ext', '--', 'lsp-set-type', 'ln-ext', 'localnet', '--', 'lsp-set-addresses', 'ln-ext', 'unknown', '--', 'lsp-set-options', 'ln-ext', 'network_name=phys',
    '--', 'set', 'Logical_Switch_Port', 'ln-ext', 'tag_request=100']);
  await compareWithReal(t, gw);
  t.ok(flowsOf(gw.northd.view(), 'lr_in_admission').some((f) => f.actions.startsWith('reg9[1] = check_pkt_larger(1418); ')), 'a VLAN header counted');
  await gw.nbctl(['clear', 'Logical_Switch_Port', 'ln-ext', 'tag_request']);
  await gw.nbctl(['remove', 'Logical_Router_Port', 'gw-ext', 'options', 'gateway_mtu']);
  await compareWithReal(t, gw);
  await gw.nbctl(['remove', 'Logical_Router_Port', 'gw-sw1', 'options', 'gateway_mtu']);
  await gw.nbctl(['remove', 'Logical_Router_Port', 'gw-ext', 'options', 'gateway_mtu_bypass']);
  await compareWithReal(t, gw);

  // A distributed gateway port with a tagged localnet port, centralized and distributed NAT
  // (IPv4 and IPv6): the distributed rules' admission is checked too, and their too-large
  // packets are answered from their external addresses.
  const dgp = await scenario(t, [
    ...distributedGateway,
    ['set', 'Logical_Switch_Port', 'ln-ext', 'tag_request=10'],
    ['lr-nat-add', 'lr0', 'snat', '172.16.0.10', '10.0.1.0/24'],
    ['lr-nat-add', 'lr0', 'dnat_and_snat', '172.16.0.100', '10.0.1.10', 'vm1', '00:00:00:00:EE:10'],
    ['lr-nat-add', 'lr0', 'dnat_and_snat', '172.16.0.101', '10.0.1.11'],
    ['lr-nat-add', 'lr0', 'dnat_and_snat', 'fd00:ee::100', 'fd00:1::a', 'vm1', '00:00:00:00:ee:11'],
    ['set', 'Logical_Router_Port', 'lr0-ext', 'options:gateway_mtu=1300'],
  ]);
  t.equal(flowsOf(dgp.northd.view(), 'lr_in_ip_input').filter((f) => f.priority === 160).length, 2, 'too-large packets to each distributed NAT address answered');
  // A bypass, the localnet's tag removed, a negative MTU (no checks, yet ovn-northd keeps the
  // distributed rules' ICMP errors), then the MTU removed.
  await dgp.nbctl(['set', 'Logical_Router_Port', 'lr0-ext', 'options:gateway_mtu_bypass="tcp.dst == 22"']);
  await compareWithReal(t, dgp);
  await dgp.nbctl(['clear', 'Logical_Switch_Port', 'ln-ext', 'tag_request']);
  await dgp.nbctl(['set', 'Logical_Router_Port', 'lr0-ext', 'options:gateway_mtu=-5']);
  await compareWithReal(t, dgp);
  t.same(flowsOf(dgp.northd.view(), 'lr_in_ip_input').filter((f) => f.priority === 160).map((f) => /frag_mtu = (-?\d+)/.exec(f.actions)?.[1]), ['-5', '-5'],
    'a negative MTU keeps the distributed rules\' ICMP errors');
  t.notOk(flowsOf(dgp.northd.view(), 'lr_in_admission').some((f) => f.actions.includes('check_pkt_larger')), 'and checks nothing');
  await dgp.nbctl(['remove', 'Logical_Router_Port', 'lr0-ext', 'options', 'gateway_mtu']);
  await compareWithReal(t, dgp);
});

/**
 * Sets the status of the Service_Monitor of (ip, port, logical_port) on both sides: on the real
 * SB with ovn-sbctl (as ovn-controller would write it), on ours through the chassis write rules;
 * then waits until the real ovn-northd has run on it.
 */
async function setMonitorStatus(t: Test, real: RealSandbox, ip: string, port: number, lport: string, status: string | undefined): Promise<void> {
  const realUuid = (await real.sbctl(['--bare', '--columns=_uuid', 'find', 'Service_Monitor', `ip="${ip}"`, `port=${port}`, `logical_port=${lport}`])).trim();
  assert.match(realUuid, /^[0-9a-f-]{36}$/, `the real SB has one Service_Monitor for ${ip}:${port} on ${lport}`);
  await real.sbctl(status === undefined ? ['clear', 'Service_Monitor', realUuid, 'status'] : ['set', 'Service_Monitor', realUuid, `status=${status}`]);
  const mine = ours<sb.Service_Monitor>(real.northd.view(), 'Service_Monitor').find((r) => r.ip === ip && r.port === port && r.logical_port === lport);
  assert.ok(mine !== undefined, `ovnts has a Service_Monitor for ${ip}:${port} on ${lport}`);
  const out = real.chassisTxn([{ op: 'update', table: 'Service_Monitor', where: [['_uuid', '==', ['uuid', mine._uuid]]], row: { status: status ?? ['set', []] } }]);
  t.match(out, { kind: 'committed', results: [{ count: 1 }] }, `status ${status ?? 'cleared'} for ${ip}:${port} written through the chassis rules`);
  // ovn-northd runs on the SB change; a second wait makes sure the run that saw it is over.
  await real.nbctl(['sync']);
  await real.nbctl(['sync']);
}

t.test('(q) load balancer health checks: Service_Monitor rows, backends by status, ARP/ND responders', { skip }, async (t) => {
  const healthCheck = (lb: string, vip: string, ...options: string[]): string[] =>
    ['--', '--id=@hc', 'create', 'Load_Balancer_Health_Check', `vip="${vip}"`, ...options, '--', 'add', 'Load_Balancer', lb, 'health_check', '@hc'];
  const lbUdp: readonly (readonly string[])[] = [
    // UDP, rejecting without backends: one backend monitored, one on a disabled port, one on a
    // port that does not exist, one whose source IP does not parse.
    ['lb-add', 'lb-udp', '10.0.2.100:53', '10.0.2.10:53,10.0.2.11:53,10.0.2.12:53,10.0.2.13:53', 'udp'],
    ['set', 'Load_Balancer', 'lb-udp', 'options:reject=true', 'ip_port_mappings:"10.0.2.10"="vm3:10.0.2.2"', 'ip_port_mappings:"10.0.2.11"="vm4:10.0.2.3"',
      'ip_port_mappings:"10.0.2.12"="ghost:10.0.2.2"', 'ip_port_mappings:"10.0.2.13"="vm3:bogus"'],
    healthCheck('lb-udp', '10.0.2.100:53'),
    ['ls-lb-add', 'sw2', 'lb-udp'],
  ];
  const real = await scenario(t, [
    ...gatewayRouterTopology,
    ['ls-add', 'sw2'],
    ['lsp-add', 'sw2', 'vm3', '--', 'lsp-set-addresses', 'vm3', '00:00:00:00:02:0a 10.0.2.10'],
    ['lsp-add', 'sw2', 'vm4', '--', 'lsp-set-addresses', 'vm4', '00:00:00:00:02:0b 10.0.2.11', '--', 'lsp-set-enabled', 'vm4', 'disabled'],
    // A health-checked VIP (one backend without a mapping) and one without a health check, on
    // sw1 and on the gateway router.
    ['lb-add', 'lb-hc', '10.0.1.100:80', '10.0.1.10:80,10.0.1.11:80,10.0.1.12:80'],
    ['lb-add', 'lb-hc', '10.0.1.101:80', '10.0.1.10:80,10.0.1.11:80'],
    healthCheck('lb-hc', '10.0.1.100:80', 'options:interval=5', 'options:timeout=20', 'options:success_count=3', 'options:failure_count=3'),
    ['set', 'Load_Balancer', 'lb-hc', 'ip_port_mappings:"10.0.1.10"="vm1:10.0.1.2"', 'ip_port_mappings:"10.0.1.11"="vm2:10.0.1.2"'],
    ['ls-lb-add', 'sw1', 'lb-hc'],
    ['lr-lb-add', 'gw', 'lb-hc'],
    // IPv6: a Neighbor Advertisement responder for the source address.
    ['lb-add', 'lb-hc6', '[fd00:1::100]:80', '[fd00:1::a]:80'],
    healthCheck('lb-hc6', '[fd00:1::100]:80', 'options:interval=10'),
    ['set', 'Load_Balancer', 'lb-hc6', 'ip_port_mappings:"[fd00:1::a]"="vm1:[fd00:1::2]"'],
    ['ls-lb-add', 'sw1', 'lb-hc6'],
    // A port-less VIP health checked (its backend monitored on port 0), and an SCTP load
    // balancer, which ovn-northd does not health check.
    ['lb-add', 'lb-hc', '10.0.1.102', '10.0.1.10'],
    healthCheck('lb-hc', '10.0.1.102'),
    ['lb-add', 'lb-sctp', '10.0.1.103:80', '10.0.1.10:80', 'sctp'],
    healthCheck('lb-sctp', '10.0.1.103:80'),
    ['set', 'Load_Balancer', 'lb-sctp', 'ip_port_mappings:"10.0.1.10"="vm1:10.0.1.3"'],
    ['ls-lb-add', 'sw1', 'lb-sctp'],
    ...lbUdp,
  ]);
  t.equal(real.northd.view().get('Service_Monitor')?.size, 5, 'five backends monitored (vm1 three times, vm2, vm3)');
  // The real ovn-trace on both SBs: the health check source IP is answered with svc_monitor_mac.
  const oursSb = await realSbOf(t, real.northd.view());
  const arp = 'inport == "vm1" && eth.src == 00:00:00:00:01:0a && eth.dst == ff:ff:ff:ff:ff:ff && arp.op == 1 && arp.sha == 00:00:00:00:01:0a && arp.spa == 10.0.1.10 && arp.tpa == 10.0.1.2';
  const arpTrace = await ovnTrace(oursSb.socketPath, 'sw1', arp);
  t.equal(arpTrace, await ovnTrace(real.sbSocket, 'sw1', arp), 'ovn-trace: the same verdict for ARP to the health check source IP');
  t.match(arpTrace, /arp\.op = 2;[\s\S]*arp\.spa = 10\.0\.1\.2;[\s\S]*output\("vm1"\)/, `answered back to vm1:\n${arpTrace}`);

  // Status from the chassis: a backend offline leaves ct_lb_mark (on the switch and the router).
  await setMonitorStatus(t, real, '10.0.1.10', 80, 'vm1', 'offline');
  await compareWithReal(t, real);
  const lbFlow = (vip: string): string | undefined => ours<sb.Logical_Flow>(real.northd.view(), 'Logical_Flow')
    .find((f) => f.external_ids.get('stage-name') === 'ls_in_lb' && f.match.includes(`ip4.dst == ${vip}`))?.actions;
  t.equal(lbFlow('10.0.1.100'), 'reg0[1] = 0; ct_lb_mark(backends=10.0.1.11:80);', 'only vm2 is chosen');
  t.equal(lbFlow('10.0.1.101'), 'reg0[1] = 0; ct_lb_mark(backends=10.0.1.10:80,10.0.1.11:80);', 'the VIP without a health check keeps both');
  const routerFlow = ours<sb.Logical_Flow>(real.northd.view(), 'Logical_Flow').find((f) => f.external_ids.get('stage-name') === 'lr_in_dnat' && f.match.includes('ip4.dst == 10.0.1.100 '));
  t.equal(routerFlow?.actions, 'ct_lb_mark(backends=10.0.1.11:80);', 'and on the gateway router too');
  // The only monitored backend of the UDP VIP offline: it rejects.
  await setMonitorStatus(t, real, '10.0.2.10', 53, 'vm3', 'offline');
  await compareWithReal(t, real);
  t.match(lbFlow('10.0.2.100'), /^reg0 = 0; reject /, 'no backend left: the VIP rejects');
  // "online" from a port that is not up: ovn-northd writes "offline" over it, ours shows "offline".
  await setMonitorStatus(t, real, '10.0.1.10', 80, 'vm1', 'online');
  await compareWithReal(t, real);
  t.equal(lbFlow('10.0.1.100'), 'reg0[1] = 0; ct_lb_mark(backends=10.0.1.11:80);', 'still out while its port is down');
  // The port up (Port_Binding.up, a chassis-owned column), then online again: back in.
  await real.sbctl(['set', 'Port_Binding', 'vm1', 'up=true']);
  t.match(real.chassisTxn([{ op: 'update', table: 'Port_Binding', where: [['logical_port', '==', 'vm1']], row: { up: true } }]), { kind: 'committed' });
  await setMonitorStatus(t, real, '10.0.1.10', 80, 'vm1', 'online');
  await compareWithReal(t, real);
  t.equal(lbFlow('10.0.1.100'), 'reg0[1] = 0; ct_lb_mark(backends=10.0.1.10:80,10.0.1.11:80);', 'vm1 is chosen again');

  // NB changes: a mapping removed (its row goes), the health check's options edited, the IPv6
  // health check removed (the VIP takes its backends as written again), the disabled port enabled.
  await real.nbctl(['remove', 'Load_Balancer', 'lb-hc', 'ip_port_mappings', '"10.0.1.11"']);
  const hcUuid = [...real.fx.db.rows('Load_Balancer_Health_Check').values()].find((r) => r['vip'] === '10.0.1.100:80')?._uuid ?? assert.fail('no health check');
  await real.nbctl(['set', 'Load_Balancer_Health_Check', hcUuid, 'options:interval=7']);
  await real.nbctl(['clear', 'Load_Balancer', 'lb-hc6', 'health_check']);
  await real.nbctl(['lsp-set-enabled', 'vm4', 'enabled']);
  await compareWithReal(t, real);
  // The UDP load balancer deleted: its rows go, and with them their status; made again, its
  // rows start without one.
  await real.nbctl(['lb-del', 'lb-udp']);
  await compareWithReal(t, real);
  for (const step of lbUdp) await real.nbctl(step);
  await compareWithReal(t, real);
  t.same(ours<sb.Service_Monitor>(real.northd.view(), 'Service_Monitor').filter((r) => r.logical_port === 'vm3').map((r) => r.status), [[]], 'a new row: no status');
});

t.test('(r) virtual ports: VIPs (IPv4, IPv6) with parents, claimed through a parent, moved, released', { skip }, async (t) => {
  // vip4 lists vm1 and vm3 (sw1), vm2 (another switch: no flow) and a name no port has; vip6
  // an IPv6 VIP; vbad a VIP that does not parse and vnone no parents (no flows for either).
  const real = await scenario(t, [
    ...twoSwitchesAndARouter,
    ['lsp-add', 'sw1', 'vip4', '--', 'lsp-set-type', 'vip4', 'virtual', '--', 'lsp-set-addresses', 'vip4', '00:00:00:00:01:64 10.0.1.100',
      '--', 'lsp-set-options', 'vip4', 'virtual-ip=10.0.1.100', 'virtual-parents=vm1,vm3,vm2,ghost'],
    ['lsp-add', 'sw1', 'vip6', '--', 'lsp-set-type', 'vip6', 'virtual', '--', 'lsp-set-options', 'vip6', 'virtual-ip=fd00:1::64', 'virtual-parents=vm1,,vm3'],
    ['lsp-add', 'sw1', 'vbad', '--', 'lsp-set-type', 'vbad', 'virtual', '--', 'lsp-set-options', 'vbad', 'virtual-ip=10.0.1.010', 'virtual-parents=vm1'],
    ['lsp-add', 'sw1', 'vnone', '--', 'lsp-set-type', 'vnone', 'virtual', '--', 'lsp-set-options', 'vnone', 'virtual-ip=10.0.1.102'],
  ]);
  const flowsOf = (stageName: string): sb.Logical_Flow[] =>
    ours<sb.Logical_Flow>(real.northd.view(), 'Logical_Flow').filter((f) => f.external_ids.get('stage-name') === stageName);
  const binds = (): string[] => flowsOf('ls_in_arp_rsp').filter((f) => f.actions.startsWith('bind_vport(')).map((f) => `${f.tags.get('in_out_port') ?? ''}: ${f.actions}`).sort();
  t.same(binds(), [
    'vm1: bind_vport("vip4", inport); next;', 'vm1: bind_vport("vip6", inport); next;',
    'vm3: bind_vport("vip4", inport); next;', 'vm3: bind_vport("vip6", inport); next;',
  ], 'a bind_vport flow per parent on the same switch, for each VIP that parses');
  const resolve = (ip: string): string[] => flowsOf('lr_in_arp_resolve').filter((f) => f.match.endsWith(` == ${ip}`)).map((f) => `${f.match}: ${f.actions}`);
  t.same(resolve('10.0.1.100'), ['outport == "lr0-sw1" && reg0 == 10.0.1.100: eth.dst = 00:00:00:00:00:00; next;'], 'unclaimed: the router asks for the VIP');

  // The real ovn-trace on both SBs: a gratuitous ARP for the VIP from vm1 binds vip4.
  const garp = 'inport == "vm1" && eth.src == 00:00:00:00:01:0a && eth.dst == ff:ff:ff:ff:ff:ff && arp.op == 1 && arp.sha == 00:00:00:00:01:0a && arp.spa == 10.0.1.100 && arp.tha == 00:00:00:00:00:00 && arp.tpa == 10.0.1.100';
  const ourSb = await realSbOf(t, real.northd.view());
  const garpTrace = await ovnTrace(ourSb.socketPath, 'sw1', garp);
  t.equal(garpTrace, await ovnTrace(real.sbSocket, 'sw1', garp), 'ovn-trace: the same verdict for a GARP of the VIP');
  const detailed = await ovnTrace(ourSb.socketPath, 'sw1', garp, ['--detailed']);
  t.match(detailed, /ls_in_arp_rsp[^\n]*\n\s*bind_vport\("vip4", inport\);/, `the GARP binds vip4 on our flows:\n${detailed}`);

  // A chassis claims vip4 through vm1 and vip6 through vm3, as the agent's pinctrl does: in the
  // real SB with ovn-sbctl, in ours as a chassis report.
  // (With the features an ovn-controller 23.03 reports: without them ovn-northd would fall back
  // to flows for older chassis.)
  await real.sbctl(['chassis-add', 'hv1', 'geneve', '127.0.0.1', '--', 'set', 'Chassis', 'hv1',
    'other_config:ct-no-masked-label=true', 'other_config:mac-binding-timestamp=true', 'other_config:ct-lb-related=true']);
  const hv1 = (await real.sbctl(['--bare', '--columns=_uuid', 'find', 'Chassis', 'name=hv1'])).trim();
  const claim = async (port: string, parent: string | undefined, chassis: boolean): Promise<void> => {
    await real.sbctl(['set', 'Port_Binding', port, `virtual_parent=${parent === undefined ? '[]' : `"${parent}"`}`, `chassis=${chassis ? hv1 : '[]'}`]);
    real.northd.setChassisOwned(real.fx.db, new Map([[port, { chassis: chassis ? [hv1] : [], virtual_parent: parent === undefined ? [] : [parent] }]]));
    await real.nbctl(['sync']);
  };
  await claim('vip4', 'vm1', true);
  await claim('vip6', 'vm3', true);
  await compareWithReal(t, real);
  t.same(resolve('10.0.1.100'), ['outport == "lr0-sw1" && reg0 == 10.0.1.100: eth.dst = 00:00:00:00:01:0a; next;'], 'claimed: the VIP resolves to the parent\'s MAC');
  t.same(resolve('fd00:1::64'), ['outport == "lr0-sw1" && xxreg0 == fd00:1::64: eth.dst = 00:00:00:00:01:0b; next;'], 'IPv6 too');
  // The VIP moves to vm3; vm3's addresses change; a parent set without a chassis is unclaimed.
  await claim('vip4', 'vm3', true);
  await compareWithReal(t, real);
  await real.nbctl(['lsp-set-addresses', 'vm3', '00:00:00:00:01:0c 10.0.1.11']);
  await compareWithReal(t, real);
  t.same(resolve('10.0.1.100'), ['outport == "lr0-sw1" && reg0 == 10.0.1.100: eth.dst = 00:00:00:00:01:0c; next;'], 'the parent\'s new MAC');
  await claim('vip4', 'vm3', false);
  await compareWithReal(t, real);
  // The bound parent deleted (no resolve flow), then the parents and the VIP edited, the router
  // port's networks changed, a port turning virtual and back.
  await claim('vip4', 'vm1', true);
  await real.nbctl(['lsp-del', 'vm1']);
  await compareWithReal(t, real);
  t.same(resolve('10.0.1.100'), [], 'no resolve flow while the bound parent is gone');
  // (Added again, vm1 takes the lowest free tunnel key here, the next after the last in OVN.)
  await real.nbctl(['lsp-add', 'sw1', 'vm1', '--', 'lsp-set-addresses', 'vm1', '00:00:00:00:01:0d 10.0.1.10']);
  await compareWithReal(t, real, { portKeys: false });
  await real.nbctl(['lsp-set-options', 'vip4', 'virtual-ip=10.0.2.100', 'virtual-parents=vm3,vm2']);
  await compareWithReal(t, real, { portKeys: false });
  await real.nbctl(['set', 'Logical_Router_Port', 'lr0-sw1', 'networks="10.0.1.1/24","10.0.2.101/24","fd00:1::1/64"']);
  await compareWithReal(t, real, { portKeys: false });
  // A claimed port that stops being virtual, and a VIF turning virtual, are new bindings: what
  // the chassis wrote is gone (ovn-northd recreates the row), so vip6 is unclaimed again.
  await real.nbctl(['lsp-set-options', 'vbad', 'virtual-ip=10.0.1.10', 'virtual-parents=vm3']);
  await real.nbctl(['lsp-set-type', 'vip6', '']);
  await compareWithReal(t, real, { portKeys: false });
  await real.nbctl(['lsp-set-type', 'vip6', 'virtual']);
  await compareWithReal(t, real, { portKeys: false });
  t.same(resolve('fd00:1::64'), ['outport == "lr0-sw1" && xxreg0 == fd00:1::64: eth.dst = 00:00:00:00:00:00; next;'], 'vip6 unclaimed again');
  t.notOk(real.northd.chassisOwned().has('vip6'), 'its chassis report is forgotten');
});

t.test('(s) HA_Chassis.chassis and HA_Chassis_Group.ref_chassis follow the Chassis registered and the ports bound', { skip }, async (t) => {
  // lr0's gateway port lr0-ext has three gateway chassis (hv1, hv2, gw3); lr1 reaches lr0
  // through a join switch, so ports bound on lr1's switch count for lr0-ext's group; sw3 has no
  // router; lr2's gateway port has one gateway chassis (a group of one gets no ref_chassis); an
  // external port on sw1 has an NB group of its own (named by no gateway port: no ref_chassis).
  // VMs are bound to chassis c1, c2, c3.
  const real = await scenario(t, [
    ...distributedGateway,
    ['lrp-set-gateway-chassis', 'lr0-ext', 'gw3', '5'],
    ['ls-add', 'join'],
    ['lrp-add', 'lr0', 'lr0-join', '00:00:00:00:ff:03', '100.64.0.1/24'],
    routerLsp('join', 'join-lr0', 'lr0-join'),
    ['lr-add', 'lr1'],
    ['lrp-add', 'lr1', 'lr1-join', '00:00:00:00:ff:11', '100.64.0.2/24'],
    routerLsp('join', 'join-lr1', 'lr1-join'),
    ['ls-add', 'sw2'],
    ['lsp-add', 'sw2', 'vm3', '--', 'lsp-set-addresses', 'vm3', '00:00:00:00:02:0a 10.0.2.10'],
    ['lrp-add', 'lr1', 'lr1-sw2', '00:00:00:00:ff:12', '10.0.2.1/24'],
    routerLsp('sw2', 'sw2-lr1', 'lr1-sw2'),
    ['ls-add', 'sw3'],
    ['lsp-add', 'sw3', 'vm4', '--', 'lsp-set-addresses', 'vm4', '00:00:00:00:03:0a 10.0.3.10'],
    ['lr-add', 'lr2'],
    ['ls-add', 'sw4'],
    ['lsp-add', 'sw4', 'vm5', '--', 'lsp-set-addresses', 'vm5', '00:00:00:00:04:0a 10.0.4.10'],
    ['lrp-add', 'lr2', 'lr2-sw4', '00:00:00:00:ff:21', '10.0.4.1/24'],
    routerLsp('sw4', 'sw4-lr2', 'lr2-sw4'),
    ['ls-add', 'ext2'],
    localnetLsp('ext2', 'ln-ext2', 'phys'),
    ['lrp-add', 'lr2', 'lr2-ext2', '00:00:00:00:ff:22', '172.16.1.1/24'],
    routerLsp('ext2', 'ext2-lr2', 'lr2-ext2'),
    ['lrp-set-gateway-chassis', 'lr2-ext2', 'hv1', '10'],
    ['ha-chassis-group-add', 'grp-ext'],
    ['ha-chassis-group-add-chassis', 'grp-ext', 'hv1', '10'],
    ['ha-chassis-group-add-chassis', 'grp-ext', 'gw4', '20'],
    ['lsp-add', 'sw1', 'ext1', '--', 'lsp-set-type', 'ext1', 'external', '--', 'lsp-set-addresses', 'ext1', '00:00:00:00:01:0e 10.0.1.14'],
  ]);
  const grpExt = [...real.fx.db.rows('HA_Chassis_Group').values()].find((r) => r['name'] === 'grp-ext')?._uuid ?? '?';
  await real.nbctl(['set', 'Logical_Switch_Port', 'ext1', `ha_chassis_group=${grpExt}`]);
  const chassisNames = (): Map<string, string> => new Map([...real.chassisDb.rows('Chassis').values()].map((c) => [c._uuid, c['name'] as string]));
  const group = (name: string): { members: string[]; ref: string[] } => {
    const view = real.northd.view();
    const g = ours<sb.HA_Chassis_Group>(view, 'HA_Chassis_Group').find((r) => r.name === name);
    const names = chassisNames();
    const members = (g?.ha_chassis ?? []).map((u) => view.get('HA_Chassis')?.get(u) as unknown as sb.HA_Chassis)
      .map((m) => `${m.external_ids.get('chassis-name') ?? '?'}=${m.chassis.map((c) => names.get(c) ?? '?').join('') || '-'}`).sort();
    return { members, ref: (g?.ref_chassis ?? []).map((c) => names.get(c) ?? '?').sort() };
  };

  // Some members' chassis register (hv1, a member of three groups), others not yet (hv2) or
  // never (gw3, gw4); and the chassis the VMs will be bound to.
  for (const [name, ip] of [['hv1', '192.0.2.1'], ['c1', '192.0.2.11'], ['c2', '192.0.2.12'], ['c3', '192.0.2.13']] as const) await real.chassisCtl(chassisAdd(name, ip));
  await compareWithReal(t, real);
  t.same(group('lr0-ext').members, ['gw3=-', 'hv1=hv1', 'hv2=-'], 'a member names its Chassis when it is registered');
  // VMs bound: on lr0's own switch (c1), behind lr1 through the join switch (c2), on a switch
  // with no router (c3: not counted), behind lr2 (c3, counted for lr2's group once it has two
  // members).
  await real.bind('vm1', 'c1');
  await real.bind('vm3', 'c2');
  await real.bind('vm4', 'c3');
  await real.bind('vm5', 'c3');
  await compareWithReal(t, real);
  t.same(group('lr0-ext').ref, ['c1', 'c2'], 'ref_chassis: the chassis with ports on switches connected to the gateway port\'s router');
  t.same(group('lr2-ext2').ref, [], 'a group of one member has no ref_chassis');
  t.same(group('grp-ext').ref, [], 'nor has a group no gateway port names');
  // A chassis registering after the group exists is referenced; the external port bound.
  await real.chassisCtl(chassisAdd('hv2', '192.0.2.2'));
  await real.bind('ext1', 'hv1');
  await compareWithReal(t, real);
  t.same(group('lr0-ext'), { members: ['gw3=-', 'hv1=hv1', 'hv2=hv2'], ref: ['c1', 'c2', 'hv1'] }, 'hv2 referenced once registered; an external port\'s chassis counts');
  // Ports move: vm2 bound beside vm1, vm1 unbound (c1 stays), vm2 unbound (c1 leaves).
  await real.bind('vm2', 'c1');
  await real.bind('vm1', undefined);
  await compareWithReal(t, real);
  await real.bind('vm2', undefined);
  await real.bind('ext1', undefined);
  await compareWithReal(t, real);
  t.same(group('lr0-ext').ref, ['c2'], 'a chassis with no port bound any more leaves ref_chassis');
  // lr2's gateway port gets a second chassis: its group now counts c3 (vm5 on sw4).
  await real.nbctl(['lrp-set-gateway-chassis', 'lr2-ext2', 'hv2', '20']);
  await compareWithReal(t, real);
  t.same(group('lr2-ext2').ref, ['c3'], 'a group of two members gets the chassis behind its router');
  // A deleted chassis: its bindings are dropped (c2), and it is no member's chassis (hv1).
  await real.chassisCtl(['chassis-del', 'c2']);
  await real.chassisCtl(['chassis-del', 'hv1']);
  await compareWithReal(t, real);
  t.same(group('lr0-ext'), { members: ['gw3=-', 'hv1=-', 'hv2=hv2'], ref: [] }, 'a deleted chassis leaves the members and ref_chassis');
  // lr1 leaves the join switch: vm3 (bound again) no longer counts for lr0-ext.
  await real.chassisCtl(chassisAdd('c2', '192.0.2.12'));
  await real.bind('vm3', 'c2');
  await real.bind('vm1', 'c1');
  await compareWithReal(t, real);
  t.same(group('lr0-ext').ref, ['c1', 'c2'], 'bound again');
  await real.nbctl(['lsp-del', 'join-lr1']);
  await compareWithReal(t, real);
  t.same(group('lr0-ext').ref, ['c1'], 'lr1 no longer reaches lr0');
  // An NB group on the gateway port instead of its gateway chassis, a member registering.
  await real.nbctl(['set', 'Logical_Router_Port', 'lr0-ext', `ha_chassis_group=${grpExt}`]);
  await real.chassisCtl(chassisAdd('gw4', '192.0.2.4'));
  await compareWithReal(t, real);
  t.same(group('grp-ext'), { members: ['gw4=gw4', 'hv1=-'], ref: ['c1'] }, 'the NB group, named by the gateway port, gets its ref_chassis');
});

t.test('(t) template load balancers (options:template) and Chassis_Template_Var', { skip }, async (t) => {
  const real = await scenario(t, [
    ...distributedGateway,
    // On a switch and on the router with a distributed gateway port: a VIP and port from
    // variables, a literal port, backends from variables (an address and port each, or a list),
    // and a backend list that is not a template (explicit IPv4 backends).
    ['--template', 'lb-add', 'lbt', '^VIP:^PORT', '^BACKENDS'],
    ['--template', 'lb-add', 'lbt', '^VIP2:80', '^B1:8080,^B2:^P2'],
    ['--template', 'lb-add', 'lbt-udp', '^VIPU:53', '10.0.1.10:53,10.0.1.11:53', 'udp'],
    // IPv6 (address-family): the SB row's VIP keys are bracketed; explicit IPv6 backends.
    ['--template', 'lb-add', 'lbt6', '^VIP6:^PORT6', '^B6', 'tcp', 'ipv6'],
    ['--template', 'lb-add', 'lbt6', '^VIP6B:8080', '[fd00:1::a]:80', 'tcp', 'ipv6'],
    ['ls-lb-add', 'sw1', 'lbt'],
    ['ls-lb-add', 'sw1', 'lbt-udp'],
    ['ls-lb-add', 'sw1', 'lbt6'],
    ['lr-lb-add', 'lr0', 'lbt'],
    ['lr-lb-add', 'lr0', 'lbt6'],
    ['create', 'Chassis_Template_Var', 'chassis=hv1', 'variables:VIP=172.16.0.200', 'variables:PORT=80', 'variables:BACKENDS="10.0.1.10:8080,10.0.1.11:8080"'],
    ['create', 'Chassis_Template_Var', 'chassis=hv2', 'variables:VIP=172.16.0.201', 'variables:PORT=80'],
  ]);
  const lbRow = (name: string): sb.Load_Balancer | undefined => ours<sb.Load_Balancer>(real.northd.view(), 'Load_Balancer').find((r) => r.name === name);
  t.same([...(lbRow('lbt6')?.vips.keys() ?? [])].sort(), ['[^VIP6B]:8080', '[^VIP6]:^PORT6'], 'an IPv6 template\'s variable VIPs are bracketed in the SB');
  t.ok(ours<sb.Logical_Flow>(real.northd.view(), 'Logical_Flow').some((f) => f.match === 'ct.new && ip4.dst == ^VIP && tcp.dst == ^PORT'), 'flows carry the variables');
  // Affinity (whose flows read a template's VIP as IPv6), neighbor_responder (all, and
  // reachable, which a template cannot have), add_route and a health check (both ignored for a
  // template), a VIP that is not a template of the allowed forms (skipped), skip_snat.
  await real.nbctl(['set', 'Load_Balancer', 'lbt', 'options:affinity_timeout=30', 'options:neighbor_responder=all']);
  await real.nbctl(['set', 'Load_Balancer', 'lbt6', 'options:neighbor_responder=reachable', 'options:add_route=true', 'options:skip_snat=true']);
  await real.nbctl(['set', 'Load_Balancer', 'lbt-udp', 'vips:"^A:^B:^C"="^X"', 'options:affinity_timeout=10']);
  await real.nbctl(['--', '--id=@hc', 'create', 'Load_Balancer_Health_Check', 'vip="^VIPU:53"', '--', 'add', 'Load_Balancer', 'lbt-udp', 'health_check', '@hc']);
  await real.nbctl(['set', 'Load_Balancer', 'lbt-udp', 'ip_port_mappings:10.0.1.10=vm1:10.0.1.2']);
  await compareWithReal(t, real);
  t.equal(ours<sb.Service_Monitor>(real.northd.view(), 'Service_Monitor').length, 0, 'a template load balancer\'s health check monitors nothing');
  // A gateway router with a template load balancer (as ovn-kubernetes sets up NodePorts).
  await real.nbctl(['lr-add', 'gw', '--', 'set', 'Logical_Router', 'gw', 'options:chassis=hv1']);
  await real.nbctl(['lrp-add', 'gw', 'gw-ext', '00:00:00:00:ff:09', '172.16.0.9/24']);
  await real.nbctl(routerLsp('ext', 'ext-gw', 'gw-ext'));
  await real.nbctl(['lr-lb-add', 'gw', 'lbt-udp']);
  await real.nbctl(['lr-lb-add', 'gw', 'lbt']);
  await compareWithReal(t, real);
  // Variables change and go; a load balancer stops being a template.
  await real.nbctl(['set', 'Chassis_Template_Var', 'hv2', 'variables:BACKENDS="10.0.1.11:8080"']);
  await real.nbctl(['remove', 'Chassis_Template_Var', 'hv1', 'variables', 'PORT']);
  await compareWithReal(t, real);
  await real.nbctl(['destroy', 'Chassis_Template_Var', 'hv1']);
  await real.nbctl(['set', 'Load_Balancer', 'lbt-udp', 'options:template=false']);
  await compareWithReal(t, real);
});

t.test('(u) IPv6 router advertisements: ipv6_ra_configs flows, periodic advertisements on the binding, prefix delegation', { skip }, async (t) => {
  const real = await scenario(t, [
    ['ls-add', 'sw1'],
    ['lsp-add', 'sw1', 'vm1', '--', 'lsp-set-addresses', 'vm1', '00:00:00:00:01:0a fd00:1::a'],
    ['ls-add', 'sw2'],
    ['lr-add', 'lr0'],
    ['lrp-add', 'lr0', 'lr0-sw1', '00:00:00:00:ff:01', 'fd00:1::1/64', 'fd00:11::1/64', '10.0.1.1/24'],
    routerLsp('sw1', 'sw1-lr0', 'lr0-sw1'),
    ['lrp-add', 'lr0', 'lr0-sw2', '00:00:00:00:ff:02', 'fd00:2::1/64'],
    routerLsp('sw2', 'sw2-lr0', 'lr0-sw2'),
    ['lrp-add', 'lr0', 'lr0-alone', '00:00:00:00:ff:03', 'fd00:3::1/64'],
    // SLAAC advertised periodically with every option; stateful DHCPv6 on demand only.
    ['set', 'Logical_Router_Port', 'lr0-sw1', 'ipv6_ra_configs:address_mode=slaac', 'ipv6_ra_configs:send_periodic=true', 'ipv6_ra_configs:mtu=1400',
      'ipv6_ra_configs:max_interval=120', 'ipv6_ra_configs:rdnss="fd00:1::53"', 'ipv6_ra_configs:dnssl="ovn.org,example.com"',
      'ipv6_ra_configs:router_preference=HIGH', 'ipv6_ra_configs:route_info="HIGH-fd00:aa::/64,LOW-fd00:bb::/48"'],
    ['set', 'Logical_Router_Port', 'lr0-sw2', 'ipv6_ra_configs:address_mode=dhcpv6_stateful', 'options:prefix_delegation=true', 'options:prefix=true'],
    ['set', 'Logical_Router_Port', 'lr0-alone', 'ipv6_ra_configs:address_mode=slaac', 'ipv6_ra_configs:send_periodic=true'],
  ]);
  const options = (name: string): ReadonlyMap<string, string> | undefined => ours<sb.Port_Binding>(real.northd.view(), 'Port_Binding').find((p) => p.logical_port === name)?.options;
  t.equal(options('lr0-sw1')?.get('ipv6_ra_prefixes'), 'fd00:11::/64 fd00:1::/64', 'the advertised prefixes on the binding (networks in the column\'s order)');
  t.equal(options('lr0-alone')?.get('ipv6_ra_send_periodic'), undefined, 'a port without a peer advertises nothing');
  // Intervals out of range, an MTU below IPv6's minimum, an invalid mode, then periodic off.
  await real.nbctl(['set', 'Logical_Router_Port', 'lr0-sw1', 'ipv6_ra_configs:max_interval=2', 'ipv6_ra_configs:min_interval=100', 'ipv6_ra_configs:mtu=1000',
    'ipv6_ra_configs:router_preference=bogus']);
  await real.nbctl(['set', 'Logical_Router_Port', 'lr0-sw2', 'ipv6_ra_configs:address_mode=bogus', 'ipv6_ra_configs:send_periodic=true', 'enabled=false']);
  await compareWithReal(t, real);
  await real.nbctl(['set', 'Logical_Router_Port', 'lr0-sw1', 'ipv6_ra_configs:send_periodic=false', 'ipv6_ra_configs:address_mode=dhcpv6_stateless']);
  await compareWithReal(t, real);
});

t.test('(v) ECMP symmetric replies on a gateway router (options:ecmp_symmetric_reply)', { skip }, async (t) => {
  // One ECMP group per router: ovn-northd numbers a router's groups in its hash order, ours in
  // the routes' order (the same flows otherwise), so a router of several groups would compare
  // only up to their numbers. And each router's replies leave by ports of keys no other
  // router's do: the reply flows of equal keys are one flow shared by the routers, hinted with
  // one of their routes (which one differs), and the comparison of hints knows only datapaths'.
  const gateway = (name: string, net: number, mac: string, ports: number): string[][] => [
    ['lr-add', name, '--', 'set', 'Logical_Router', name, 'options:chassis=hv1'],
    ...Array.from({ length: ports }, (_, i) => ['lrp-add', name, `${name}-${i}`, `00:00:00:00:${mac}:0${i}`, `172.${net}.${i}.1/24`, `fd00:${net}:${i}::1/64`]),
  ];
  const real = await scenario(t, [
    // Two next hops through two ports (IPv4), an IPv6 pair on one port, a source route, and a
    // pair without the option (no symmetric flows).
    ...gateway('gw4', 20, 'a4', 2),
    ['--ecmp-symmetric-reply', 'lr-route-add', 'gw4', '192.168.0.0/16', '172.20.0.11'],
    ['--ecmp-symmetric-reply', 'lr-route-add', 'gw4', '192.168.0.0/16', '172.20.1.12'],
    ...gateway('gw6', 21, 'a6', 3),
    ['--ecmp-symmetric-reply', 'lr-route-add', 'gw6', 'fd00:99::/64', 'fd00:21:2::11'],
    ['--ecmp-symmetric-reply', 'lr-route-add', 'gw6', 'fd00:99::/64', 'fd00:21:2::12'],
    ...gateway('gws', 22, 'a5', 4),
    ['--ecmp-symmetric-reply', '--policy=src-ip', 'lr-route-add', 'gws', '10.0.1.0/24', '172.22.3.21'],
    ['--ecmp-symmetric-reply', '--policy=src-ip', 'lr-route-add', 'gws', '10.0.1.0/24', '172.22.3.22'],
    ...gateway('gwp', 23, 'a7', 1),
    ['--ecmp', 'lr-route-add', 'gwp', '198.51.100.0/24', '172.23.0.31'],
    ['--ecmp', 'lr-route-add', 'gwp', '198.51.100.0/24', '172.23.0.32'],
  ]);
  t.ok(ours<sb.Logical_Flow>(real.northd.view(), 'Logical_Flow').some((f) => f.external_ids.get('stage-name') === 'lr_in_ecmp_stateful' && f.actions.includes('commit_ecmp_nh')),
    'connections over the routes are committed with their next hop');
  // The same routes on a distributed router: no symmetric replies there.
  await real.nbctl(['remove', 'Logical_Router', 'gw4', 'options', 'chassis']);
  await compareWithReal(t, real);
});

t.test('(w) requested tunnel keys (taken from holders, in ovn-ic\'s range, kept when no longer asked for, bad ones ignored), and the other external_ids of a binding', { skip }, async (t) => {
  const real = await startRealSandbox(t);
  const keyOf = async (table: string, name: string): Promise<unknown> => {
    const rows = await real.sbList(table);
    return table === 'Datapath_Binding'
      ? rows.find((r) => (r['external_ids'] as Record<string, string>)['name'] === name)?.['tunnel_key']
      : rows.find((r) => r['logical_port'] === name)?.['tunnel_key'];
  };
  for (const ls of ['sw0', 'sw1', 'sw2']) await real.nbctl(['ls-add', ls]);
  // sw2 asks for sw0's key: sw0 takes the lowest free one (sw2's old 3).
  await real.nbctl(['set', 'Logical_Switch', 'sw2', 'other_config:requested-tnl-key=1']);
  await compareWithReal(t, real);
  t.same([await keyOf('Datapath_Binding', 'sw2'), await keyOf('Datapath_Binding', 'sw0')], [1, 3], 'the real keys are the ones this case expects');
  // A transit switch's key from ovn-ic's range; a router asking for sw1's key as it is made.
  await real.nbctl(['ls-add', 'ts', '--', 'set', 'Logical_Switch', 'ts', 'other_config:requested-tnl-key=16711681', 'other_config:interconn-ts=ts']);
  await real.nbctl(['lr-add', 'lr0', '--', 'set', 'Logical_Router', 'lr0', 'options:requested-tnl-key=2']);
  await compareWithReal(t, real);
  t.same([await keyOf('Datapath_Binding', 'ts'), await keyOf('Datapath_Binding', 'lr0'), await keyOf('Datapath_Binding', 'sw1')], [16711681, 2, 4]);
  // No longer asked for: kept. Asked for badly: ignored.
  await real.nbctl(['remove', 'Logical_Switch', 'sw2', 'other_config', 'requested-tnl-key']);
  await real.nbctl(['set', 'Logical_Switch', 'sw1', 'other_config:requested-tnl-key=abc']);
  await real.nbctl(['set', 'Logical_Switch', 'sw0', 'other_config:requested-tnl-key=0']);
  await compareWithReal(t, real);
  t.equal(await keyOf('Datapath_Binding', 'sw2'), 1);
  // Ports: c asks for a's key, a takes c's old one; a router port asks for a key of its own.
  for (const p of ['a', 'b', 'c']) await real.nbctl(['lsp-add', 'sw0', p]);
  await real.nbctl(['lsp-set-options', 'c', 'requested-tnl-key=1']);
  await real.nbctl(['lrp-add', 'lr0', 'lrp0', '00:00:00:00:ff:01', '10.0.0.1/24', '--', 'set', 'Logical_Router_Port', 'lrp0', 'options:requested-tnl-key=7']);
  await real.nbctl(['lsp-add', 'ts', 'ts-p', '--', 'lsp-set-options', 'ts-p', 'requested-tnl-key=100']);
  await compareWithReal(t, real);
  t.same([await keyOf('Port_Binding', 'c'), await keyOf('Port_Binding', 'a'), await keyOf('Port_Binding', 'lrp0'), await keyOf('Port_Binding', 'ts-p')], [1, 3, 7, 100]);
  // The port asking no more keeps its key; a new port takes the lowest free one.
  await real.nbctl(['lsp-set-options', 'c']);
  await real.nbctl(['lsp-add', 'sw0', 'd']);
  await compareWithReal(t, real);
  t.equal(await keyOf('Port_Binding', 'd'), 2 + 2, 'keys 1-3 are held: d takes 4');
  // The binding's other external_ids: a router's SNAT zone and ARP learning (ovn-controller
  // reads them there), a transit switch's interconn-ts (above).
  await real.nbctl(['lr-add', 'lr1', '--', 'set', 'Logical_Router', 'lr1', 'options:snat-ct-zone=10', 'options:always_learn_from_arp_request=false']);
  await real.nbctl(['lr-add', 'lr2', '--', 'set', 'Logical_Router', 'lr2', 'options:snat-ct-zone=-1', 'options:always_learn_from_arp_request=FALSE']);
  // smap_get_bool: only "false" (any case) turns a default-true option off; only "true" (any case) turns one on.
  await real.nbctl(['set', 'Logical_Router', 'lr0', 'options:snat-ct-zone=x', 'options:always_learn_from_arp_request=no', 'options:dynamic_neigh_routers=TRUE']);
  await compareWithReal(t, real);
  await real.nbctl(['remove', 'Logical_Router', 'lr1', 'options', 'snat-ct-zone']);
  await compareWithReal(t, real);
});

t.test('(x) ARP proxy on router ports (options:arp_proxy)', { skip }, async (t) => {
  const real = await scenario(t, [
    ['ls-add', 'sw0'],
    ['ls-add', 'sw1'],
    ['lr-add', 'lr0'],
    ['lrp-add', 'lr0', 'lr0-sw0', '00:00:00:00:ff:01', '10.0.0.1/24'],
    ['lrp-add', 'lr0', 'lr0-sw1', '00:00:00:00:ff:02', '10.0.1.1/24'],
    routerLsp('sw0', 'sw0-lr0', 'lr0-sw0'),
    routerLsp('sw1', 'sw1-lr0', 'lr0-sw1'),
    ['lsp-add', 'sw0', 'vm1', '--', 'lsp-set-addresses', 'vm1', '00:00:00:00:00:01 10.0.0.10'],
    // IPv4 addresses (a prefix's address too) answer; IPv6 ones do not; parsing stops at a bad one.
    ['lsp-set-options', 'sw0-lr0', 'router-port=lr0-sw0', 'arp_proxy=10.0.0.50 10.0.0.60/32 fd00::5 169.254.0.0/16 bad 10.0.0.70'],
    // Only IPv6: no flow.
    ['lsp-set-options', 'sw1-lr0', 'router-port=lr0-sw1', 'arp_proxy=fd00::7'],
    // A VIF's arp_proxy means nothing.
    ['lsp-set-options', 'vm1', 'arp_proxy=10.0.0.80'],
  ]);
  t.ok(ours<sb.Logical_Flow>(real.northd.view(), 'Logical_Flow').some((f) => f.external_ids.get('stage-name') === 'ls_in_arp_rsp' && f.actions.includes('arp.tpa <-> arp.spa')),
    'the proxy flow is there');
  // The option changed and removed; a switch passing VLANs through answers nothing.
  await real.nbctl(['lsp-set-options', 'sw0-lr0', 'router-port=lr0-sw0', 'arp_proxy=10.0.0.51']);
  await real.nbctl(['lsp-set-options', 'sw1-lr0', 'router-port=lr0-sw1', 'arp_proxy=10.0.1.51']);
  await real.nbctl(['set', 'Logical_Switch', 'sw1', 'other_config:vlan-passthru=true']);
  await compareWithReal(t, real);
  await real.nbctl(['lsp-set-options', 'sw0-lr0', 'router-port=lr0-sw0']);
  await compareWithReal(t, real);
});

t.test('(y) QoS rules (DSCP marking, metering) and meters (NB Meter copies, fair meters\' per-ACL copies for ACL logs)', { skip }, async (t) => {
  const real = await scenario(t, [
    ['ls-add', 'sw0'],
    ['ls-add', 'sw1'],
    ['lsp-add', 'sw0', 'vm1', '--', 'lsp-set-addresses', 'vm1', '00:00:00:00:00:01 10.0.0.10'],
    ['qos-add', 'sw0', 'from-lport', '100', 'ip4.src == 10.0.0.10', 'dscp=10'],
    ['qos-add', 'sw0', 'to-lport', '200', 'ip4.dst == 10.0.0.10', 'rate=1000', 'burst=200'],
    ['qos-add', 'sw0', 'from-lport', '300', 'udp', 'rate=500', 'dscp=46'],
    ['qos-add', 'sw1', 'to-lport', '100', 'tcp', 'rate=64'],
    ['meter-add', 'm-drop', 'drop', '100', 'pktps', '10'],
    ['--fair', 'meter-add', 'm-fair', 'drop', '200', 'kbps'],
    ['--log', '--meter=m-drop', '--name=a1', '--severity=alert', 'acl-add', 'sw0', 'to-lport', '1000', 'tcp', 'drop'],
    ['--log', '--meter=m-fair', '--name=a2', 'acl-add', 'sw0', 'from-lport', '1001', 'udp', 'allow-related'],
    ['--log', '--meter=m-fair', 'acl-add', 'sw1', 'to-lport', '1002', 'icmp4', 'allow'],
    // A meter nothing names yet, and an ACL naming a meter that does not exist.
    ['meter-add', 'm-idle', 'drop', '5', 'kbps', '1'],
    ['--log', '--meter=m-none', 'acl-add', 'sw1', 'to-lport', '1003', 'arp', 'drop'],
  ]);
  const view = (): Map<string, sb.Meter> => new Map(ours<sb.Meter>(real.northd.view(), 'Meter').map((m) => [m.name, m]));
  t.equal([...view().keys()].filter((n) => n.startsWith('m-fair__')).length, 2, 'each ACL logging through the fair meter has its own copy');
  t.ok(ours<sb.Logical_Flow>(real.northd.view(), 'Logical_Flow').some((f) => f.actions.startsWith('set_meter(1000, 200);')), 'a metering flow is there');
  // The fair meter turns unfair (the ACLs name it, the copies go), the other fair; a band's
  // rate changes; a QoS rule goes; the idle meter goes.
  await real.nbctl(['set', 'Meter', 'm-fair', 'fair=false']);
  await real.nbctl(['set', 'Meter', 'm-drop', 'fair=true']);
  const band = (real.fx.db.findUnique('Meter', ['name'], ['m-drop']) as unknown as { bands: string[] }).bands[0] as string;
  await real.nbctl(['set', 'Meter_Band', band, 'rate=150', 'burst_size=0']);
  await real.nbctl(['qos-del', 'sw0', 'to-lport']);
  await real.nbctl(['meter-del', 'm-idle']);
  await compareWithReal(t, real);
  t.same([...view().keys()].filter((n) => n.includes('__')).map((n) => n.split('__')[0]), ['m-drop'], 'the copies follow fairness');
  // The ACL stops logging; the meter it named goes; the switch's QoS rules go.
  await real.nbctl(['--log', '--meter=m-none', 'acl-add', 'sw0', 'to-lport', '1004', 'arp', 'drop']);
  await real.nbctl(['set', 'ACL', (real.fx.db.rows('ACL').values().next().value as { _uuid: string })._uuid, 'log=false']);
  await real.nbctl(['meter-del', 'm-drop']);
  await real.nbctl(['qos-del', 'sw1']);
  await compareWithReal(t, real);
  await real.nbctl(['meter-add', 'm-none', 'drop', '7', 'pktps']);
  await compareWithReal(t, real);
});

t.test('(z) control plane protection: a Copp naming every kind on switches and routers (controller_meter)', { skip }, async (t) => {
  const kinds = ['arp', 'arp-resolve', 'dhcpv4-opts', 'dhcpv6-opts', 'dns', 'event-elb', 'icmp4-error', 'icmp6-error', 'igmp', 'nd-na', 'nd-ns',
    'nd-ns-resolve', 'nd-ra-opts', 'tcp-reset', 'reject', 'svc-monitor', 'bfd'];
  const real = await scenario(t, [
    ...twoSwitchesAndARouter,
    ['meter-add', 'cm', 'drop', '100', 'pktps'],
    ['meter-add', 'cm2', 'drop', '10', 'pktps'],
    // Every kind through cm, but arp and icmp4-error through cm2 on the router's Copp, and one
    // kind naming a meter that does not exist (not metered).
    ...kinds.map((k) => ['copp-add', 'cp-ls', k, 'cm']),
    ...kinds.map((k) => ['copp-add', 'cp-lr', k, k === 'arp' || k === 'icmp4-error' ? 'cm2' : 'cm']),
    ['copp-add', 'cp-lr', 'nd-ns', 'no-such-meter'],
    // Flows of many kinds: DHCPv4 and DHCPv6 on a port, DNS, reject ACLs, a load balancer
    // rejecting without backends on a switch and the router, a gateway MTU, IPv6 RAs, a
    // static route through an IPv6 next hop.
    ['--', '--id=@d', 'create', 'DHCP_Options', 'cidr=10.0.1.0/24', 'options={server_id="10.0.1.1", server_mac="00:00:00:00:ff:01", lease_time="3600", router="10.0.1.1"}',
      '--', 'set', 'Logical_Switch_Port', 'vm1', 'dhcpv4_options=@d'],
    ['--', '--id=@d', 'create', 'DHCP_Options', 'cidr="fd00:1::/64"', 'options={server_id="00:00:00:00:ff:01"}', '--', 'set', 'Logical_Switch_Port', 'vm1', 'dhcpv6_options=@d'],
    ['--', '--id=@d', 'create', 'DNS', 'records={vm1="10.0.1.10"}', '--', 'add', 'Logical_Switch', 'sw1', 'dns_records', '@d'],
    ['acl-add', 'sw1', 'to-lport', '1001', 'tcp.dst == 23', 'reject'],
    ['acl-add', 'sw2', 'from-lport', '1002', 'udp', 'allow-related'],
    ['acl-add', 'sw2', 'to-lport', '1003', 'tcp.dst == 24', 'reject'],
    ['create', 'Load_Balancer', 'name=lb-rej', 'vips:"10.0.0.102:80"=""', 'protocol=tcp', 'options:reject=true'],
    ['ls-lb-add', 'sw1', 'lb-rej'],
    ['ls-lb-add', 'sw2', 'lb-rej'],
    ['lr-lb-add', 'lr0', 'lb-rej'],
    ['set', 'Logical_Router_Port', 'lr0-sw2', 'ipv6_ra_configs:address_mode=slaac'],
    ['lr-route-add', 'lr0', 'fd00:3::/64', 'fd00:2::99'],
    ['ls-copp-add', 'cp-ls', 'sw1'],
    ['lr-copp-add', 'cp-lr', 'lr0'],
  ]);
  const metered = (): number => ours<sb.Logical_Flow>(real.northd.view(), 'Logical_Flow').filter((f) => f.controller_meter.length > 0).length;
  t.ok(metered() > 20, `flows carry controller meters (${metered()})`);
  // sw2 takes the switches' Copp too; the router's meter cm2 goes (its kinds unmetered); a kind
  // dropped from the switches' Copp; cm2 made again.
  await real.nbctl(['ls-copp-add', 'cp-ls', 'sw2']);
  await real.nbctl(['meter-del', 'cm2']);
  await real.nbctl(['copp-del', 'cp-ls', 'reject']);
  await compareWithReal(t, real);
  await real.nbctl(['meter-add', 'cm2', 'drop', '20', 'pktps']);
  await real.nbctl(['copp-add', 'cp-lr', 'nd-ns', 'cm2']);
  await compareWithReal(t, real);
  // The Copp taken off sw1, then the router's deleted (the router's copp column loses it).
  await real.nbctl(['clear', 'Logical_Switch', 'sw1', 'copp']);
  await real.nbctl(['copp-del', 'cp-lr']);
  await compareWithReal(t, real);
});

t.test('(aa) IP multicast: IGMP/MLD snooping on switches (IP_Multicast), relay on a router, static flooding, a transit switch\'s remote ports', { skip }, async (t) => {
  const real = await scenario(t, [
    ...twoSwitchesAndARouter,
    // sw1 snoops with every setting given (some out of range, clamped); sw2 snoops with the
    // defaults; the router relays; vm3 floods all multicast, vm1 its reports.
    ['set', 'Logical_Switch', 'sw1', 'other_config:mcast_snoop=true', 'other_config:mcast_querier=false', 'other_config:mcast_table_size=100',
      'other_config:mcast_idle_timeout=5', 'other_config:mcast_query_interval=9000', 'other_config:mcast_query_max_response=3',
      'other_config:mcast_eth_src="00:00:00:00:99:01"', 'other_config:mcast_ip4_src="10.0.1.254"', 'other_config:mcast_ip6_src="fe80::99:1"'],
    ['set', 'Logical_Switch', 'sw2', 'other_config:mcast_snoop=true'],
    ['set', 'Logical_Router', 'lr0', 'options:mcast_relay=true'],
    ['lsp-set-options', 'vm3', 'mcast_flood=true'],
    ['lsp-set-options', 'vm1', 'mcast_flood_reports=true'],
    // A switch that does not snoop, with a bad idle timeout, and a transit switch (ovn-ic) with
    // remote ports, snooping.
    ['ls-add', 'sw3'],
    ['set', 'Logical_Switch', 'sw3', 'other_config:mcast_idle_timeout=abc', 'other_config:mcast_table_size=-1'],
    ['lsp-add', 'sw3', 'vm4', '--', 'lsp-set-addresses', 'vm4', '00:00:00:00:03:0a'],
    ['ls-add', 'ts'],
    ['set', 'Logical_Switch', 'ts', 'other_config:interconn-ts=ts', 'other_config:mcast_snoop=true', 'other_config:mcast_flood_unregistered=true'],
    ['lsp-add', 'ts', 'r1', '--', 'lsp-set-type', 'r1', 'remote', '--', 'lsp-set-addresses', 'r1', '00:00:00:00:04:01 169.254.100.2/24'],
    ['lsp-add', 'ts', 'r2', '--', 'lsp-set-type', 'r2', 'remote', '--', 'lsp-set-addresses', 'r2', '00:00:00:00:04:02 169.254.100.3/24'],
    ['lsp-add', 'ts', 'tsvm', '--', 'lsp-set-addresses', 'tsvm', '00:00:00:00:04:0a'],
  ]);
  const flows = (): sb.Logical_Flow[] => ours<sb.Logical_Flow>(real.northd.view(), 'Logical_Flow');
  t.ok(flows().some((f) => f.actions === 'igmp;'), 'IGMP goes to the controller');
  t.ok(flows().some((f) => f.actions.startsWith('clone { outport = "_MC_mrouter_flood"; output; }; outport ="_MC_static"')), 'unregistered multicast goes to the relay and the static ports');
  // A router port floods statically (the router's _MC_static; its IGMP admitted with TTL 1 and
  // routed to it); the reports port stops; a port disabled; the transit switch loses a remote.
  await real.nbctl(['set', 'Logical_Router_Port', 'lr0-sw2', 'options:mcast_flood=true']);
  await real.nbctl(['lsp-set-options', 'vm1']);
  await real.nbctl(['lsp-set-enabled', 'vm3', 'disabled']);
  await real.nbctl(['lsp-del', 'r2']);
  await compareWithReal(t, real);
  // Relay off (the switches' mrouter groups go), on again; sw1 stops snooping and its
  // addresses go; the transit switch floods unregistered multicast no more.
  await real.nbctl(['remove', 'Logical_Router', 'lr0', 'options', 'mcast_relay']);
  await real.nbctl(['set', 'Logical_Switch', 'sw1', 'other_config:mcast_snoop=false']);
  await real.nbctl(['remove', 'Logical_Switch', 'ts', 'other_config', 'mcast_flood_unregistered']);
  await compareWithReal(t, real);
  await real.nbctl(['set', 'Logical_Router', 'lr0', 'options:mcast_relay=true']);
  await real.nbctl(['lsp-set-enabled', 'vm3', 'enabled']);
  await real.nbctl(['set', 'Logical_Router_Port', 'lr0-sw2', 'enabled=false']);
  await compareWithReal(t, real);
});

t.test('(bb) IP multicast groups learned by snooping (SB IGMP_Group rows): switch groups, mrouters, groups relayed to a router', { skip }, async (t) => {
  const real = await scenario(t, [
    ...twoSwitchesAndARouter,
    ['set', 'Logical_Switch', 'sw1', 'other_config:mcast_snoop=true', 'other_config:mcast_table_size=4'],
    ['set', 'Logical_Router', 'lr0', 'options:mcast_relay=true'],
    localnetLsp('sw1', 'ln1', 'phys'),
    ['lsp-add', 'sw2', 'vm4', '--', 'lsp-set-addresses', 'vm4', '00:00:00:00:02:0b 10.0.2.11'],
  ]);
  await real.chassisCtl(chassisAdd('hv1', '192.0.2.1'));
  await real.chassisCtl(chassisAdd('hv2', '192.0.2.2'));
  const settle = async (): Promise<void> => {
    await real.nbctl(['sync']);
    await real.nbctl(['sync']);
  };
  /** An IGMP_Group row written on both sides, as a chassis's snooping writes it. */
  const join = async (address: string, sw: string, chassis: string, ports: readonly string[]): Promise<void> => {
    const realDp = (await real.sbList('Datapath_Binding')).find((d) => (d['external_ids'] as Record<string, string>)['name'] === sw)?.['_uuid'] as string;
    const realPbs = new Map((await real.sbList('Port_Binding')).map((p) => [p['logical_port'] as string, p['_uuid'] as string]));
    const chassisUuid = [...real.chassisDb.rows('Chassis').values()].find((c) => c['name'] === chassis)?._uuid as string;
    await real.sbctl(['create', 'IGMP_Group', `address="${address}"`, `datapath=${realDp}`, `chassis=${chassisUuid}`, `ports=[${ports.map((p) => realPbs.get(p)).join(',')}]`]);
    const view = real.northd.view();
    const ourDp = ours<sb.Datapath_Binding>(view, 'Datapath_Binding').find((d) => d.external_ids.get('name') === sw)?._uuid as string;
    const ourPb = (name: string): string => ours<sb.Port_Binding>(view, 'Port_Binding').find((p) => p.logical_port === name)?._uuid as string;
    const out = real.chassisTxn([{ op: 'insert', table: 'IGMP_Group', row: { address, datapath: ['uuid', ourDp], chassis: ['uuid', chassisUuid], ports: ['set', ports.map((p) => ['uuid', ourPb(p)])] } }]);
    t.equal(out.kind, 'committed', `our IGMP_Group ${address} of ${chassis}`);
  };
  const leave = async (address: string, chassis: string): Promise<void> => {
    const chassisUuid = [...real.chassisDb.rows('Chassis').values()].find((c) => c['name'] === chassis)?._uuid as string;
    const realRow = (await real.sbList('IGMP_Group')).find((r) => r['address'] === address && asArray(r['chassis'])[0] === chassisUuid)?.['_uuid'] as string;
    await real.sbctl(['destroy', 'IGMP_Group', realRow]);
    real.chassisTxn([{ op: 'delete', table: 'IGMP_Group', where: [['address', '==', address], ['chassis', '==', ['uuid', chassisUuid]]] }]);
  };
  // sw1: a group two chassis report (with the localnet port), a routable and a link-local
  // IPv6 group, 224.0.0.251 (a group, no flow), mrouters, a row naming only the router port
  // (dropped: it faces a relaying router), an unparsable address. sw2 (not snooping) learns a
  // group too.
  await join('239.1.1.1', 'sw1', 'hv1', ['vm1']);
  await join('239.1.1.1', 'sw1', 'hv2', ['vm3']);
  await join('ff0e::1:1', 'sw1', 'hv1', ['vm1']);
  await join('ff02::1:3', 'sw1', 'hv1', ['vm3']);
  await join('224.0.0.251', 'sw1', 'hv1', ['vm1']);
  await join('mrouters', 'sw1', 'hv2', ['vm3']);
  await join('239.9.9.9', 'sw1', 'hv1', ['sw1-lr0']);
  await join('not-an-address', 'sw1', 'hv2', ['vm1']);
  await join('239.2.2.2', 'sw2', 'hv2', ['vm2', 'vm4']);
  await settle();
  await compareWithReal(t, real);
  const learned = (): string[] => ours<sb.Multicast_Group>(real.northd.view(), 'Multicast_Group').filter((g) => g.tunnel_key >= 32773).map((g) => g.name).sort();
  t.same(learned(), ['224.0.0.251', '224.0.0.251', '239.1.1.1', '239.1.1.1', '239.2.2.2', '239.2.2.2', 'ff02::1:3', 'ff0e::1:1', 'ff0e::1:1'],
    'the groups, the router relaying all but the link-local IPv6 one');
  // vm3 floods all multicast (it leaves the groups; mrouters with it); a group leaves; two more
  // (four IPv4 groups with flows once relay is off: the table size).
  await real.nbctl(['lsp-set-options', 'vm3', 'mcast_flood=true']);
  await leave('ff0e::1:1', 'hv1');
  await join('239.3.3.3', 'sw1', 'hv2', ['vm1']);
  await join('239.4.4.4', 'sw1', 'hv1', ['vm1']);
  await settle();
  await compareWithReal(t, real);
  // The router stops relaying (its groups go, sw1's ports facing it join groups again), then
  // relays again with its port flooding statically; hv2 goes (its rows with it).
  await real.nbctl(['remove', 'Logical_Router', 'lr0', 'options', 'mcast_relay']);
  await settle();
  await compareWithReal(t, real);
  await real.nbctl(['set', 'Logical_Router', 'lr0', 'options:mcast_relay=true']);
  await real.nbctl(['set', 'Logical_Router_Port', 'lr0-sw2', 'options:mcast_flood=true']);
  await real.chassisCtl(['chassis-del', 'hv2']);
  await settle();
  await compareWithReal(t, real);
  t.equal(real.chassisDb.rows('IGMP_Group').size, [...real.chassisDb.rows('IGMP_Group').values()].filter((r) => (r['chassis'] as string[]).length > 0).length, 'no row without a chassis is left');
  // A table size below the groups: as many flows per family as it allows. Which groups keep
  // theirs follows ovn-northd's hash order there (the address order here), so only the counts
  // are compared.
  await real.nbctl(['set', 'Logical_Switch', 'sw1', 'other_config:mcast_table_size=1']);
  await settle();
  const sw1 = (await real.sbList('Datapath_Binding')).find((d) => (d['external_ids'] as Record<string, string>)['name'] === 'sw1')?.['_uuid'] as string;
  const realCount = (await real.sbList('Logical_Flow')).filter((f) => f['priority'] === 90 && asArray(f['logical_datapath'])[0] === sw1 && String(f['match']).includes('ip4.dst')).length;
  const ourSw1 = ours<sb.Datapath_Binding>(real.northd.view(), 'Datapath_Binding').find((d) => d.external_ids.get('name') === 'sw1')?._uuid as string;
  const ourCount = ours<sb.Logical_Flow>(real.northd.view(), 'Logical_Flow').filter((f) => f.priority === 90 && flowDatapaths(real.northd.view(), f).includes(ourSw1) && f.match.includes('ip4.dst')).length;
  t.same([ourCount, realCount], [1, 1], 'one IPv4 group flow under mcast_table_size=1');
});

t.test('(cc) requested chassis (options:requested-chassis): by name or hostname, additional chassis, unknown entries, chassis coming, going and renamed', { skip }, async (t) => {
  const real = await scenario(t, [
    ...twoSwitchesAndARouter,
    ['lsp-add', 'sw2', 'vm4', '--', 'lsp-set-addresses', 'vm4', '00:00:00:00:02:0b 10.0.2.11'],
    ['lsp-add', 'sw2', 'vm5', '--', 'lsp-set-addresses', 'vm5', '00:00:00:00:02:0c 10.0.2.12'],
  ]);
  const chassisAdd = (name: string, ip: string, hostname: string): string[] => ['chassis-add', name, 'geneve', ip, '--', 'set', 'Chassis', name,
    `hostname=${hostname}`, 'other_config:ct-no-masked-label=true', 'other_config:mac-binding-timestamp=true', 'other_config:ovn-ct-lb-related=true'];
  await real.chassisCtl(chassisAdd('hv1', '192.0.2.1', 'host-a'));
  await real.chassisCtl(chassisAdd('hv2', '192.0.2.2', 'host-b'));
  const request = async (port: string, value: string | undefined): Promise<void> => {
    await real.nbctl(value === undefined ? ['remove', 'Logical_Switch_Port', port, 'options', 'requested-chassis'] : ['lsp-set-options', port, `requested-chassis=${value}`]);
  };
  // By name; by hostname; a migration (main and additional, a hostname among them); an unknown
  // entry before a known one; empty entries; a router port (never requested).
  await request('vm1', 'hv1');
  await request('vm2', 'host-b');
  await request('vm3', 'hv1,host-b');
  await request('vm4', 'hv9,hv2');
  await request('vm5', ',hv2,,hv1,hv2,');
  await real.nbctl(['lsp-set-options', 'sw1-lr0', 'router-port=lr0-sw1', 'requested-chassis=hv1']);
  await compareWithReal(t, real);
  const requestedOf = (port: string): string[] => {
    const pb = ours<sb.Port_Binding>(real.northd.view(), 'Port_Binding').find((p) => p.logical_port === port);
    const name = (u: string): string => [...real.chassisDb.rows('Chassis').values()].find((c) => c._uuid === u)?.['name'] as string;
    return [...(pb?.requested_chassis ?? []).map(name), ...(pb?.requested_additional_chassis ?? []).map((u) => `+${name(u)}`).sort()];
  };
  t.same(['vm1', 'vm2', 'vm3', 'vm4', 'vm5'].map(requestedOf), [['hv1'], ['hv2'], ['hv1', '+hv2'], ['hv2'], ['hv2', '+hv1', '+hv2']], 'as requested');
  // A chassis registering under the unknown name; another's hostname changing; one going.
  await real.chassisCtl(chassisAdd('hv9', '192.0.2.9', 'host-9'));
  await compareWithReal(t, real);
  await real.chassisCtl(['set', 'Chassis', 'hv2', 'hostname=host-c']);
  await compareWithReal(t, real);
  t.same(requestedOf('vm2'), [], 'a hostname no Chassis has any more: none requested');
  await real.chassisCtl(['chassis-del', 'hv1']);
  await compareWithReal(t, real);
  t.same(requestedOf('vm3'), [], 'the main chassis gone and the hostname changed: none');
  // The hostname comes back on another chassis; requests edited and removed.
  await real.chassisCtl(['set', 'Chassis', 'hv9', 'hostname=host-b']);
  await request('vm1', 'host-c');
  await request('vm4', undefined);
  await compareWithReal(t, real);
  t.same(requestedOf('vm2'), ['hv9'], 'the hostname, now hv9\'s');
  // hv2 activates vm5, where it is an additional chassis (options:additional-chassis-activated,
  // as ovn-controller writes it for activation-strategy=rarp): kept while vm5 has additional
  // chassis, gone for good once it has none.
  const activate = async (port: string, value: string): Promise<void> => {
    await real.sbctl(['set', 'Port_Binding', port, `options:additional-chassis-activated=${value}`]);
    const out = real.chassisTxn([{ op: 'mutate', table: 'Port_Binding', where: [['logical_port', '==', port]], mutations: [['options', 'insert', ['map', [['additional-chassis-activated', value]]]]] }]);
    t.equal(out.kind, 'committed', `our ${port} activated by ${value}`);
    await real.nbctl(['sync']);
  };
  await request('vm5', 'hv2,hv9');
  await activate('vm5', 'hv9');
  await compareWithReal(t, real);
  t.equal(ours<sb.Port_Binding>(real.northd.view(), 'Port_Binding').find((p) => p.logical_port === 'vm5')?.options.get('additional-chassis-activated'), 'hv9', 'shown while vm5 has an additional chassis');
  await request('vm5', 'hv2');
  await compareWithReal(t, real);
  await request('vm5', 'hv2,hv9');
  await compareWithReal(t, real);
  t.equal(ours<sb.Port_Binding>(real.northd.view(), 'Port_Binding').find((p) => p.logical_port === 'vm5')?.options.get('additional-chassis-activated'), undefined, 'forgotten once it had none');
});

t.test('(dd) BFD: sessions from router ports, routes watched by them, statuses as ovn-northd settles them, the chassis\'s reports', { skip }, async (t) => {
  const real = await scenario(t, [
    ...twoSwitchesAndARouter,
    ['lr-route-add', 'lr0', '192.168.9.0/24', '10.0.2.10'],
    ['--bfd', 'lr-route-add', 'lr0', '192.168.10.0/24', '10.0.2.20', 'lr0-sw2'],
    ['--bfd', 'lr-route-add', 'lr0', '2001:db8:10::/64', 'fd00:2::20', 'lr0-sw2'],
  ]);
  // ovn-northd settles a session over several passes (each of its own writes sets off the next):
  // two syncs after a change let them finish before the mirror is read.
  const settle = async (): Promise<void> => {
    await real.nbctl(['sync']);
    await real.nbctl(['sync']);
  };
  const sessions = async (): Promise<void> => {
    await settle();
    await compareWithReal(t, real);
    const text = (r: Record<string, unknown>): string => JSON.stringify([r['logical_port'], r['dst_ip'], r['min_tx'], r['min_rx'], r['detect_mult'], r['status'], r['options'], r['external_ids']]);
    const ourRows = ours<sb.BFD>(real.northd.view(), 'BFD');
    t.same(ourRows.map((r) => text({ ...r, options: Object.fromEntries(r.options), external_ids: Object.fromEntries(r.external_ids) })).sort(), (await real.sbList('BFD')).map(text).sort(), 'BFD rows');
    // src_port and disc are drawn by ovn-northd: ours only in form.
    t.ok(ourRows.every((r) => r.src_port >= 49152 && r.src_port <= 65534 && r.disc > 0 && r.disc <= 0xffffffff), 'src_port and disc in range');
    t.equal(new Set(ourRows.map((r) => r.src_port)).size, ourRows.length, 'src_port distinct');
    // The NB statuses ovn-northd left are where our rules settle too: nothing to write.
    const all: DbDelta = { changes: [...real.fx.db.rows('BFD').values()].map((row) => ({ kind: 'insert', table: 'BFD', uuid: row._uuid, new: row })) };
    t.same(bfdStatusWrites(real.fx.db, all), [], 'NB statuses: ovn-northd\'s are a fixed point of ours');
  };
  await sessions();
  // Sessions no route uses: on another port, with timers; on a port that does not exist.
  await real.nbctl(['create', 'BFD', 'logical_port=lr0-sw1', 'dst_ip=10.0.1.30', 'min_tx=250', 'min_rx=300', 'detect_mult=3']);
  await real.nbctl(['create', 'BFD', 'logical_port=nowhere', 'dst_ip=10.9.9.9']);
  await sessions();
  const realBfd = async (dstIp: string): Promise<string> => (await real.sbctl(['--bare', '--columns=_uuid', 'find', 'BFD', `dst_ip="${dstIp}"`])).trim();
  const nbStatus = (dstIp: string): string | undefined => ([...real.fx.db.rows('BFD').values()].find((r) => r['dst_ip'] === dstIp)?.['status'] as string[] | undefined)?.[0];
  // The chassis reports a session up, then down: ovn-northd copies it into the NB, and the route
  // watched by it comes and goes. Ours: the NB write our rules make of the same report.
  const report = async (dstIp: string, status: 'up' | 'down' | 'init'): Promise<void> => {
    const ourSb = ours<sb.BFD>(real.northd.view(), 'BFD').find((r) => r.dst_ip === dstIp);
    const writes = ourSb === undefined ? [] : bfdReportWrites(real.fx.db, new Map([[ourSb._uuid, status]]));
    const before = nbStatus(dstIp);
    await real.sbctl(['set', 'BFD', await realBfd(dstIp), `status=${status}`]);
    await settle();
    t.equal(nbStatus(dstIp), writes[0]?.status ?? before, `${dstIp} reported ${status}: our NB write is ovn-northd's`);
  };
  await report('10.0.2.20', 'up');
  await report('fd00:2::20', 'init');
  await sessions();
  t.equal(nbStatus('10.0.2.20'), 'up', 'the session is up in the NB');
  await report('10.0.2.20', 'down');
  await sessions();
  // A report on a session no route uses changes nothing (ovn-northd puts admin_down back).
  await report('10.0.1.30', 'up');
  await sessions();
  t.equal(nbStatus('10.0.1.30'), 'admin_down', 'unused: admin_down');
  await report('10.0.2.20', 'up');
  // A client moving an up session to down gets it back; to admin_down, it goes down.
  const nbUuidOf = (dstIp: string): string => [...real.fx.db.rows('BFD').values()].find((r) => r['dst_ip'] === dstIp)?._uuid as string;
  await real.nbctl(['set', 'BFD', nbUuidOf('10.0.2.20'), 'status=down']);
  await sessions();
  t.equal(nbStatus('10.0.2.20'), 'up', 'a client\'s down over up: up again');
  await real.nbctl(['set', 'BFD', nbUuidOf('10.0.2.20'), 'status=admin_down']);
  await sessions();
  t.equal(nbStatus('10.0.2.20'), 'down', 'a client\'s admin_down on a used session: down');
  // The route taken off the router (the session stays): unused, admin_down; its port keeps its flows.
  await report('10.0.2.20', 'up');
  const route = [...real.fx.db.rows('Logical_Router_Static_Route').values()].find((r) => r['nexthop'] === '10.0.2.20')?._uuid as string;
  await real.nbctl(['remove', 'Logical_Router', 'lr0', 'static_routes', route]);
  await sessions();
  // Its timers changed; the router port's networks changed so that the IPv6 route has no way out.
  await real.nbctl(['set', 'BFD', nbUuidOf('10.0.2.20'), 'min_tx=100', 'detect_mult=10']);
  await real.nbctl(['set', 'Logical_Router_Port', 'lr0-sw2', 'networks="10.0.2.1/24"']);
  await sessions();
  // Sessions deleted (the route's weak reference goes with them); the port loses its flows.
  await real.nbctl(['destroy', 'BFD', nbUuidOf('fd00:2::20')]);
  await real.nbctl(['destroy', 'BFD', nbUuidOf('10.0.2.20')]);
  await sessions();
  t.same(ours<sb.BFD>(real.northd.view(), 'BFD').map((r) => r.dst_ip).sort(), ['10.0.1.30', '10.9.9.9'], 'what is left');
});

t.test('(ee) empty load balancer events (options:event, NB_Global options:controller_event) on switches and routers, metered by a Copp', { skip }, async (t) => {
  const real = await scenario(t, [
    ...twoSwitchesAndARouter,
    // VIPs without backends (IPv4 with and without a port, IPv6, UDP) on a load balancer that
    // asks for events; one VIP of it with backends; one that rejects instead; one that does not ask.
    ['create', 'Load_Balancer', 'name=lb-ev', 'vips:"10.0.0.100:80"=""', 'vips:"10.0.0.101"=""', 'vips:"[fd00::100]:8080"=""', 'vips:"10.0.0.103:80"="10.0.1.10:80"', 'protocol=tcp', 'options:event=true'],
    ['create', 'Load_Balancer', 'name=lb-ev-udp', 'vips:"10.0.0.53:53"=""', 'protocol=udp', 'options:event=true'],
    ['create', 'Load_Balancer', 'name=lb-ev-rej', 'vips:"10.0.0.104:80"=""', 'protocol=tcp', 'options:event=true', 'options:reject=true'],
    ['create', 'Load_Balancer', 'name=lb-quiet', 'vips:"10.0.0.105:80"=""', 'protocol=tcp'],
    ['ls-lb-add', 'sw1', 'lb-ev'],
    ['ls-lb-add', 'sw1', 'lb-ev-udp'],
    ['ls-lb-add', 'sw2', 'lb-ev-rej'],
    ['ls-lb-add', 'sw2', 'lb-quiet'],
    ['lr-lb-add', 'lr0', 'lb-ev'],
    ['lr-lb-add', 'lr0', 'lb-quiet'],
    ['meter-add', 'elb', 'drop', '100', 'pktps'],
    ['copp-add', 'cp', 'event-elb', 'elb'],
    ['ls-copp-add', 'cp', 'sw1'],
  ]);
  const events = (): sb.Logical_Flow[] => ours<sb.Logical_Flow>(real.northd.view(), 'Logical_Flow').filter((f) => f.actions.startsWith('trigger_event('));
  t.equal(events().length, 7, 'an event flow per VIP without backends: lb-ev\'s three on sw1 and on lr0, lb-ev-udp\'s on sw1');
  t.ok(events().some((f) => f.actions.includes('vip = "[fd00::100]:8080"') && f.controller_meter[0] === 'elb'), 'an IPv6 VIP in brackets, metered on sw1');
  // The real ovn-trace on both SBs: a SYN from vm1 to the empty VIP reaches trigger_event.
  const oursSb = await realSbOf(t, real.northd.view());
  const syn = 'inport == "vm1" && eth.src == 00:00:00:00:01:0a && eth.dst == 00:00:00:00:ff:01 && ip4.src == 10.0.1.10 && ip4.dst == 10.0.0.100 && ip.ttl == 64 && tcp && tcp.src == 40000 && tcp.dst == 80';
  const trace = await ovnTrace(oursSb.socketPath, 'sw1', syn, ['--ct=new', '--summary']);
  t.equal(trace, await ovnTrace(real.sbSocket, 'sw1', syn, ['--ct=new', '--summary']), 'ovn-trace: the same verdict for a SYN to an empty VIP');
  t.match(trace, /trigger_event/, `the event is triggered:\n${trace}`);
  // The global switch: every load balancer's empty VIPs report (lb-quiet too, not lb-ev-rej).
  await real.nbctl(['set', 'NB_Global', '.', 'options:controller_event=true']);
  await compareWithReal(t, real);
  t.equal(events().length, 9, 'with controller_event, lb-quiet\'s VIP on sw2 and lr0 too');
  // A backend for an empty VIP; the option taken off one load balancer, then the global one.
  await real.nbctl(['set', 'Load_Balancer', 'lb-ev', 'vips:"10.0.0.100:80"="10.0.1.11:80"']);
  await real.nbctl(['remove', 'Load_Balancer', 'lb-ev-udp', 'options', 'event']);
  await compareWithReal(t, real);
  await real.nbctl(['remove', 'NB_Global', '.', 'options', 'controller_event']);
  await compareWithReal(t, real);
  t.equal(events().length, 4, 'lb-ev\'s two VIPs still empty, on sw1 and lr0');
});

t.test('(ff) external ports: DHCPv4 and DHCPv6 through the localnet ports where the port resides, ARP/ND to the routers dropped elsewhere', { skip }, async (t) => {
  const v4 = 'options={server_id="10.0.1.1", server_mac="00:00:00:00:ff:01", lease_time="3600", router="10.0.1.1"}';
  const real = await scenario(t, [
    ...twoSwitchesAndARouter,
    ['lsp-add', 'sw1', 'ln1', '--', 'lsp-set-type', 'ln1', 'localnet', '--', 'lsp-set-addresses', 'ln1', 'unknown', '--', 'lsp-set-options', 'ln1', 'network_name=phys'],
    // A bare-metal host on the provider network, served from its HA group's active chassis.
    ['lsp-add', 'sw1', 'ext1', '--', 'lsp-set-type', 'ext1', 'external', '--', 'lsp-set-addresses', 'ext1', '00:00:00:00:01:50 10.0.1.50 fd00:1::50'],
    ['--', '--id=@g', 'create', 'HA_Chassis_Group', 'name=ext-grp', '--', 'set', 'Logical_Switch_Port', 'ext1', 'ha_chassis_group=@g'],
    ['--', '--id=@d', 'create', 'DHCP_Options', 'cidr=10.0.1.0/24', v4, '--', 'set', 'Logical_Switch_Port', 'ext1', 'dhcpv4_options=@d'],
    ['--', '--id=@d', 'create', 'DHCP_Options', 'cidr="fd00:1::/64"', 'options={server_id="00:00:00:00:ff:01"}', '--', 'set', 'Logical_Switch_Port', 'ext1', 'dhcpv6_options=@d'],
    // One without a group (no DHCP, its drops all the same), one without options.
    ['lsp-add', 'sw1', 'ext2', '--', 'lsp-set-type', 'ext2', 'external', '--', 'lsp-set-addresses', 'ext2', '00:00:00:00:01:51 10.0.1.51'],
    ['--', '--id=@d', 'create', 'DHCP_Options', 'cidr=10.0.1.0/24', v4, '--', 'set', 'Logical_Switch_Port', 'ext2', 'dhcpv4_options=@d'],
    ['lsp-add', 'sw2', 'ext3', '--', 'lsp-set-type', 'ext3', 'external', '--', 'lsp-set-addresses', 'ext3', '00:00:00:00:02:52 10.0.2.52'],
  ]);
  const external = (): sb.Logical_Flow[] => ours<sb.Logical_Flow>(real.northd.view(), 'Logical_Flow').filter((f) => f.external_ids.get('stage-name') === 'ls_in_external_port' && f.priority === 100);
  t.ok(external().length >= 8, `ARP, ND and MAC drops for ext1 and ext2 facing lr0-sw1 (${external().length})`);
  t.ok(ours<sb.Logical_Flow>(real.northd.view(), 'Logical_Flow').some((f) => f.match.startsWith('inport == "ln1" && eth.src == 00:00:00:00:01:50 && ip4.src == 0.0.0.0') && f.match.endsWith('is_chassis_resident("ext1")')), 'ext1\'s DISCOVER comes in by ln1, answered where it resides');
  // A second localnet port; sw2 gets one (ext3's drops appear); the router port's networks change.
  await real.nbctl(['lsp-add', 'sw1', 'ln2', '--', 'lsp-set-type', 'ln2', 'localnet', '--', 'lsp-set-addresses', 'ln2', 'unknown', '--', 'lsp-set-options', 'ln2', 'network_name=phys2']);
  await real.nbctl(['lsp-add', 'sw2', 'ln3', '--', 'lsp-set-type', 'ln3', 'localnet', '--', 'lsp-set-addresses', 'ln3', 'unknown', '--', 'lsp-set-options', 'ln3', 'network_name=phys']);
  await real.nbctl(['set', 'Logical_Router_Port', 'lr0-sw1', 'networks="10.0.1.1/24" "10.0.5.1/24" "fd00:1::1/64"']);
  await compareWithReal(t, real);
  // ext2 gets a group; ext1 loses its own (its DHCP goes); ext1 disabled, then a localnet port deleted.
  await real.nbctl(['--', '--id=@g', 'create', 'HA_Chassis_Group', 'name=ext-grp2', '--', 'set', 'Logical_Switch_Port', 'ext2', 'ha_chassis_group=@g']);
  await real.nbctl(['clear', 'Logical_Switch_Port', 'ext1', 'ha_chassis_group']);
  await compareWithReal(t, real);
  await real.nbctl(['lsp-set-enabled', 'ext2', 'disabled']);
  await real.nbctl(['lsp-del', 'ln1']);
  await compareWithReal(t, real);
  // The router leaves sw1: no more drops there.
  await real.nbctl(['lsp-del', 'sw1-lr0']);
  await compareWithReal(t, real);
});

t.test('(gg) VXLAN mode: a Chassis with a vxlan encap narrows new tunnel keys and refuses requests above them; held keys stay', { skip }, async (t) => {
  const real = await scenario(t, [
    ...twoSwitchesAndARouter,
    ['ls-add', 'sw9', '--', 'set', 'Logical_Switch', 'sw9', 'other_config:requested-tnl-key=5000'],
    ['lsp-add', 'sw1', 'vm9', '--', 'lsp-set-addresses', 'vm9', '00:00:00:00:01:99 10.0.1.99', '--', 'lsp-set-options', 'vm9', 'requested-tnl-key=3000'],
  ]);
  const keyOf = (name: string): number | undefined => (ours<sb.Datapath_Binding>(real.northd.view(), 'Datapath_Binding').find((d) => d.external_ids.get('name') === name)?.tunnel_key);
  const portKeyOf = (name: string): number | undefined => ours<sb.Port_Binding>(real.northd.view(), 'Port_Binding').find((p) => p.logical_port === name)?.tunnel_key;
  const maxTunid = (): string | undefined => ours<sb.SB_Global>(real.northd.view(), 'SB_Global')[0]?.options.get('max_tunid');
  t.equal(keyOf('sw9'), 5000, 'requests honoured without VXLAN');
  t.equal(portKeyOf('vm9'), 3000);
  t.equal(maxTunid(), '16711680');
  await real.chassisCtl(chassisAdd('hv1', '192.0.2.1', 'vxlan'));
  await compareWithReal(t, real);
  t.equal(maxTunid(), '4095', 'VXLAN mode: max_tunid 4095');
  t.equal(keyOf('sw9'), 5000, 'a key held above 4095 stays');
  t.equal(portKeyOf('vm9'), 3000, 'a port key held above 2047 stays');
  // New requests above the VXLAN ranges are ignored (a transit switch's is not); a request changed is too.
  await real.nbctl(['ls-add', 'sw10', '--', 'set', 'Logical_Switch', 'sw10', 'other_config:requested-tnl-key=6000']);
  await real.nbctl(['ls-add', 'sw11', '--', 'set', 'Logical_Switch', 'sw11', 'other_config:requested-tnl-key=7000', 'other_config:interconn-ts=ts1']);
  await real.nbctl(['lsp-add', 'sw1', 'vm10', '--', 'lsp-set-addresses', 'vm10', '00:00:00:00:01:9a 10.0.1.98', '--', 'lsp-set-options', 'vm10', 'requested-tnl-key=2500']);
  await real.nbctl(['lsp-add', 'sw1', 'vm11', '--', 'lsp-set-options', 'vm11', 'requested-tnl-key=2000']);
  await real.nbctl(['set', 'Logical_Switch', 'sw9', 'other_config:requested-tnl-key=5001']);
  await compareWithReal(t, real);
  t.ok((keyOf('sw10') ?? 0) <= 4095, `a request above 4095 ignored: the lowest free key (${keyOf('sw10')})`);
  t.equal(keyOf('sw11'), 7000, 'a transit switch\'s request holds');
  t.ok((portKeyOf('vm10') ?? 0) <= 2047, `a port request from 2048 ignored (${portKeyOf('vm10')})`);
  t.equal(portKeyOf('vm11'), 2000, 'a port request below 2048 holds');
  t.equal(keyOf('sw9'), 5000, 'a changed request above 4095 moves nothing');
  // The vxlan chassis leaves: the requests hold again.
  await real.chassisCtl(['chassis-del', 'hv1']);
  await compareWithReal(t, real);
  t.equal(maxTunid(), '16711680');
  t.equal(keyOf('sw10'), 6000, 'without VXLAN the request is honoured');
  t.equal(keyOf('sw9'), 5001);
  t.equal(portKeyOf('vm10'), 2500);
  // A Geneve chassis does not turn it on; one with both encaps does.
  await real.chassisCtl(chassisAdd('hv2', '192.0.2.2'));
  await compareWithReal(t, real);
  t.equal(maxTunid(), '16711680', 'geneve: no VXLAN mode');
  await real.chassisCtl(chassisAdd('hv3', '192.0.2.3', 'geneve,vxlan'));
  await compareWithReal(t, real);
  t.equal(maxTunid(), '4095', 'a chassis with geneve and vxlan: VXLAN mode');
});

t.test('(hh) NB_Global options:install_ls_lb_from_router: a router\'s load balancers and groups on the switches it is connected to', { skip }, async (t) => {
  const real = await scenario(t, [
    ...twoSwitchesAndARouter,
    ['lb-add', 'lb-r', '10.0.0.100:80', '10.0.1.10:8080'],
    ['lr-lb-add', 'lr0', 'lb-r'],
    ['lb-add', 'lb-g', '10.0.0.101:80', '10.0.2.10:8080'],
    ['create', 'Load_Balancer_Group', 'name=grp'],
    ['lb-add', 'lb-s', '10.0.0.102:80', '10.0.1.11:80'],
    ['ls-lb-add', 'sw1', 'lb-s'],
  ]);
  const uuidNamed = (table: string, name: string): string => [...real.fx.db.rows(table).values()].find((r) => r['name'] === name)?._uuid as string;
  await real.nbctl(['set', 'Load_Balancer_Group', 'grp', `load_balancer=${uuidNamed('Load_Balancer', 'lb-g')}`]);
  await real.nbctl(['add', 'Logical_Router', 'lr0', 'load_balancer_group', uuidNamed('Load_Balancer_Group', 'grp')]);
  await compareWithReal(t, real);
  // The ls_in_lb flows of the router's VIPs (10.0.0.100, .101, .103, .104) on the switches.
  const routerVipFlows = (): number => ours<sb.Logical_Flow>(real.northd.view(), 'Logical_Flow')
    .filter((f) => f.external_ids.get('stage-name') === 'ls_in_lb' && /10\.0\.0\.10[0134]\b/.test(f.match)).length;
  t.equal(routerVipFlows(), 0, 'the option off: the router\'s VIPs are not load balanced on its switches');
  await real.nbctl(['set', 'NB_Global', '.', 'options:install_ls_lb_from_router=true']);
  await compareWithReal(t, real);
  t.ok(routerVipFlows() > 0, `the option on: they are (${routerVipFlows()} ls_in_lb flows)`);
  // A VIP added to the router's load balancer, a load balancer added to its group.
  await real.nbctl(['lb-add', 'lb-r', '10.0.0.103:80', '10.0.1.10:8081']);
  await real.nbctl(['lb-add', 'lb-g2', '10.0.0.104:80', '10.0.2.10:8082']);
  await real.nbctl(['add', 'Load_Balancer_Group', 'grp', 'load_balancer', uuidNamed('Load_Balancer', 'lb-g2')]);
  await compareWithReal(t, real);
  // A third switch connected, one disconnected; the router disabled and enabled again, a load
  // balancer taken off it; the group on sw1 itself too (its own use and the router's).
  await real.nbctl(['ls-add', 'sw3']);
  await real.nbctl(['lrp-add', 'lr0', 'lr0-sw3', '00:00:00:00:ff:03', '10.0.3.1/24']);
  await real.nbctl(routerLsp('sw3', 'sw3-lr0', 'lr0-sw3'));
  await real.nbctl(['add', 'Logical_Switch', 'sw1', 'load_balancer_group', uuidNamed('Load_Balancer_Group', 'grp')]);
  await compareWithReal(t, real);
  await real.nbctl(['lsp-del', 'sw2-lr0']);
  await compareWithReal(t, real);
  await real.nbctl(['set', 'Logical_Router', 'lr0', 'enabled=false']);
  await compareWithReal(t, real);
  await real.nbctl(['set', 'Logical_Router', 'lr0', 'enabled=true']);
  await real.nbctl(['lr-lb-del', 'lr0', 'lb-r']);
  await real.nbctl(['remove', 'Logical_Router', 'lr0', 'load_balancer_group', uuidNamed('Load_Balancer_Group', 'grp')]);
  // The router's ports came back in one run: ovn-northd keys them in its hash order.
  await compareWithReal(t, real, { portKeys: false });
  await real.nbctl(['add', 'Logical_Router', 'lr0', 'load_balancer_group', uuidNamed('Load_Balancer_Group', 'grp')]);
  await compareWithReal(t, real, { portKeys: false });
  // The switches lb-g applies to, as its SB row names them: sw1 by its own group, sw3 by the router's.
  const switchesOf = (name: string): number => {
    const row = ours<sb.Load_Balancer>(real.northd.view(), 'Load_Balancer').find((r) => r.name === name);
    const group = row?.datapath_group[0];
    return group === undefined ? row?.datapaths.length ?? 0 : ((real.northd.view().get('Logical_DP_Group')?.get(group) as unknown as sb.Logical_DP_Group | undefined)?.datapaths.length ?? 0);
  };
  t.equal(switchesOf('lb-g'), 2, 'the group\'s load balancer on sw1 (its own) and sw3 (the router\'s)');
  await real.nbctl(['remove', 'NB_Global', '.', 'options', 'install_ls_lb_from_router']);
  await compareWithReal(t, real, { portKeys: false });
  t.equal(switchesOf('lb-g'), 1, 'the option off again: on sw1 only');
});

t.test('(ii) port mirroring (SB Mirror, Port_Binding.mirror_rules) and forwarding groups (ARP responder, fwd_group)', { skip }, async (t) => {
  const real = await scenario(t, [
    ...twoSwitchesAndARouter,
    ['mirror-add', 'm-gre', 'gre', '7', 'from-lport', '192.0.2.50'],
    ['mirror-add', 'm-erspan', 'erspan', '12', 'to-lport', '192.0.2.51'],
    ['mirror-add', 'm-v6', 'gre', '9', 'to-lport', 'fd00:99::50'],
    ['lsp-attach-mirror', 'vm1', 'm-gre'],
    ['lsp-attach-mirror', 'vm1', 'm-erspan'],
    ['lsp-attach-mirror', 'vm2', 'm-v6'],
    // A router's port on the switch can be mirrored too; one mirror nothing uses.
    ['lsp-attach-mirror', 'sw1-lr0', 'm-gre'],
    ['mirror-add', 'm-idle', 'gre', '3', 'from-lport', '192.0.2.53'],
    ['lsp-add', 'sw1', 'vm4', '--', 'lsp-set-addresses', 'vm4', '00:00:00:00:01:0c 10.0.1.12'],
    ['fwd-group-add', 'fg1', 'sw1', '10.0.1.100', '00:00:00:00:01:64', 'vm1', 'vm3', 'vm4'],
    ['--liveness', 'fwd-group-add', 'fg2', 'sw2', '10.0.2.100', '00:00:00:00:02:64', 'vm2'],
  ]);
  const view = (): SbView => real.northd.view();
  // ovn-nbctl finds Mirror and Forwarding_Group rows by UUID only in its generic commands.
  const uuidNamed = (table: string, name: string): string => [...real.fx.db.rows(table).values()].find((r) => r['name'] === name)?._uuid as string;
  const fwdFlows = (): sb.Logical_Flow[] => ours<sb.Logical_Flow>(view(), 'Logical_Flow').filter((f) => f.actions.startsWith('fwd_group('));
  t.same(fwdFlows().map((f) => f.actions).sort(), ['fwd_group(childports="vm1","vm3","vm4");', 'fwd_group(liveness="true",childports="vm2");'], 'a fwd_group flow per group');
  t.equal(ours<sb.Port_Binding>(view(), 'Port_Binding').find((p) => p.logical_port === 'vm1')?.mirror_rules.length, 2, 'vm1 names two mirrors');
  // The real ovn-trace on both SBs: an ARP for the group's VIP is answered with its MAC.
  const oursSb = await realSbOf(t, view());
  const arp = 'inport == "vm1" && eth.src == 00:00:00:00:01:0a && eth.dst == ff:ff:ff:ff:ff:ff && arp.op == 1 && arp.sha == 00:00:00:00:01:0a && arp.spa == 10.0.1.10 && arp.tha == 00:00:00:00:00:00 && arp.tpa == 10.0.1.100';
  const trace = await ovnTrace(oursSb.socketPath, 'sw1', arp, ['--summary']);
  t.equal(trace, await ovnTrace(real.sbSocket, 'sw1', arp, ['--summary']), 'ovn-trace: the same answer to an ARP for the VIP');
  t.match(trace, /eth.src = 00:00:00:00:01:64/, `answered with the group's MAC:\n${trace}`);
  // Mirrors edited (sink, index, type, filter), one detached, one renamed; a group's ports and VIP edited.
  await real.nbctl(['set', 'Mirror', uuidNamed('Mirror', 'm-gre'), 'sink=192.0.2.60', 'index=8']);
  await real.nbctl(['set', 'Mirror', uuidNamed('Mirror', 'm-erspan'), 'type=gre', 'filter=from-lport']);
  await real.nbctl(['lsp-detach-mirror', 'vm2', 'm-v6']);
  await real.nbctl(['set', 'Forwarding_Group', uuidNamed('Forwarding_Group', 'fg1'), 'child_port=vm3,vm4', 'vip=10.0.1.101']);
  await real.nbctl(['set', 'Forwarding_Group', uuidNamed('Forwarding_Group', 'fg2'), 'liveness=false']);
  await compareWithReal(t, real);
  await real.nbctl(['set', 'Mirror', uuidNamed('Mirror', 'm-idle'), 'name=m-renamed']);
  await real.nbctl(['lsp-attach-mirror', 'vm3', 'm-renamed']);
  await compareWithReal(t, real);
  // A mirror deleted while ports use it (their weak references go); a port with mirrors
  // deleted, one a group names; a group deleted and another made on its switch. (One group per
  // switch at a time: with several, ovn-northd 23.03's loop over them reuses its index in the
  // loop over child ports, and skips groups or never ends; ours makes every group's flows.)
  await real.nbctl(['mirror-del', 'm-gre']);
  await real.nbctl(['lsp-del', 'vm3']);
  await real.nbctl(['fwd-group-del', 'fg2']);
  await real.nbctl(['fwd-group-add', 'fg3', 'sw2', '10.0.2.102', '00:00:00:00:02:65', 'vm2']);
  await compareWithReal(t, real);
  // fg1 names vm3 first, which is gone: ovn-nbctl's fwd-group-del finds a group's switch through
  // its first child port and so does nothing; the row is taken off its switch instead.
  await real.nbctl(['fwd-group-del', 'fg1']);
  t.equal(fwdFlows().length, 2, 'fwd-group-del left fg1 in place');
  await real.nbctl(['remove', 'Logical_Switch', 'sw1', 'forwarding_groups', uuidNamed('Forwarding_Group', 'fg1')]);
  await real.nbctl(['mirror-del']);
  await compareWithReal(t, real);
  t.same(fwdFlows().map((f) => f.actions), ['fwd_group(childports="vm2");'], 'fg3\'s flow alone');
  t.equal(ours<sb.Mirror>(view(), 'Mirror').length, 0, 'no mirrors left');
});

t.test('(jj) MAC binding aging (options:mac_binding_age_threshold, NB_Global options:mac_binding_removal_limit): the rows ovn-northd deletes', { skip }, async (t) => {
  // ovn-northd looks again only at the time it scheduled (the earliest expiry), whatever changes
  // meanwhile, so each case starts from a fresh pair of SBs whose rows nothing has aged yet.
  const ages: readonly [string, number][] = [['1', 3_600_000], ['2', 60_000], ['3', 10_000], ['4', -3_600_000], ['5', 3_600_000], ['6', 3_600_000]];
  const agingCase = async (settings: readonly (readonly string[])[]): Promise<{ ours: string[]; real: string[] }> => {
    const real = await scenario(t, [...twoSwitchesAndARouter, ['lr-add', 'lr1'], ['lrp-add', 'lr1', 'lr1-p', '00:00:00:00:06:01', '10.0.6.254/24']]);
    const now = Date.now();
    const realDps = await real.sbList('Datapath_Binding');
    const realDp = (router: string): string => realDps.find((d) => (d['external_ids'] as Record<string, string>)['name'] === router)?.['_uuid'] as string;
    const ourDp = (router: string): string => ours<sb.Datapath_Binding>(real.northd.view(), 'Datapath_Binding').find((d) => d.external_ids.get('name') === router)?._uuid as string;
    // Rows an hour old (three), a minute old, ten seconds old and an hour ahead of the clock, on
    // both routers; written into both SBs as chassis write them.
    for (const router of ['lr0', 'lr1']) {
      const net = router === 'lr0' ? '10.0.5' : '10.0.6';
      for (const [host, age] of ages) {
        const row = { logical_port: router === 'lr0' ? 'lr0-sw1' : 'lr1-p', ip: `${net}.${host}`, mac: `00:00:00:00:05:0${host}`, timestamp: now - age };
        await real.sbctl(['create', 'MAC_Binding', `logical_port=${row.logical_port}`, `ip=${row.ip}`, `mac="${row.mac}"`, `datapath=${realDp(router)}`, `timestamp=${row.timestamp}`]);
        t.match(real.chassisTxn([{ op: 'insert', table: 'MAC_Binding', row: { ...row, datapath: ['uuid', ourDp(router)] } }]), { kind: 'committed' });
      }
    }
    for (const args of settings) await real.nbctl(args);
    // Our aging at this moment (the leader's step), its deletions through the chassis write path.
    const view = real.northd.view();
    const global = [...real.fx.db.rows('NB_Global').values()][0];
    const limit = global === undefined ? 0 : optionUint(global['options'] as ReadonlyMap<string, string>, 'mac_binding_removal_limit', 0);
    const plan = macBindingAgingPlan((table) => real.fx.db.rows(table), (table) => (table === 'MAC_Binding' ? real.chassisDb.rows(table) : view.get(table) ?? new Map()), Date.now(), limit);
    if (plan.expired.length > 0) t.match(real.chassisTxn(agingOps(plan.expired)), { kind: 'committed' });
    return {
      ours: [...real.chassisDb.rows('MAC_Binding').values()].map((r) => String(r['ip'])).sort(),
      real: (await real.sbList('MAC_Binding')).map((r) => String(r['ip'])).sort(),
    };
  };
  // Ten minutes on lr0: its hour-old rows go; lr1 keeps everything.
  let left = await agingCase([['set', 'Logical_Router', 'lr0', 'options:mac_binding_age_threshold=600']]);
  t.same(left.ours, left.real, `the same rows left: ${left.real.join(' ')}`);
  t.same(left.real.filter((ip) => ip.startsWith('10.0.5.')), ['10.0.5.2', '10.0.5.3', '10.0.5.4'], 'lr0 lost its hour-old rows');
  // Six seconds, and a threshold on lr1 that does not parse: lr0 keeps only the row ahead of the clock.
  left = await agingCase([['set', 'Logical_Router', 'lr1', 'options:mac_binding_age_threshold=5s'], ['set', 'Logical_Router', 'lr0', 'options:mac_binding_age_threshold=6']]);
  t.same(left.ours, left.real, `the same rows left: ${left.real.join(' ')}`);
  t.same(left.real.filter((ip) => ip.startsWith('10.0.5.')), ['10.0.5.4'], 'lr0 keeps only the row ahead of the clock');
  // A removal limit of two: two rows go now on each side (which two is each side's order).
  left = await agingCase([['set', 'NB_Global', '.', 'options:mac_binding_removal_limit=2'], ['set', 'Logical_Router', 'lr0', 'options:mac_binding_age_threshold=6']]);
  t.equal(left.real.length, 10, `the real ovn-northd removed two rows: ${left.real.join(' ')}`);
  t.equal(left.ours.length, 10, `so did ours: ${left.ours.join(' ')}`);
});

t.test('(kk) NB_Global options default_acl_drop, use_ct_inv_match and ignore_lsp_down', { skip }, async (t) => {
  const real = await scenario(t, [
    ...twoSwitchesAndARouter,
    // A stateful switch with a logging, labelled allow-related ACL that logs related traffic;
    // a stateless one; a load balancer on sw2; a localport.
    ['--log', '--label=7', '--severity=info', 'acl-add', 'sw1', 'to-lport', '1001', 'ip4 && tcp.dst == 80', 'allow-related'],
    ['acl-add', 'sw2', 'from-lport', '1002', 'ip4.src == 10.0.2.10', 'drop'],
    ['lb-add', 'lb0', '10.0.0.100:80', '10.0.2.10:80'],
    ['ls-lb-add', 'sw2', 'lb0'],
    ['lsp-add', 'sw1', 'lp1', '--', 'lsp-set-type', 'lp1', 'localport', '--', 'lsp-set-addresses', 'lp1', '00:00:00:00:01:99 10.0.1.99'],
  ]);
  const acl = [...real.fx.db.rows('ACL').values()].find((r) => r['priority'] === 1001)?._uuid as string;
  await real.nbctl(['set', 'ACL', acl, 'options:log-related=true']);
  await compareWithReal(t, real);
  const flows = (): sb.Logical_Flow[] => ours<sb.Logical_Flow>(real.northd.view(), 'Logical_Flow');
  const arpFor = (ip: string): number => flows().filter((f) => f.external_ids.get('stage-name') === 'ls_in_arp_rsp' && f.priority === 50 && f.match === `arp.tpa == ${ip} && arp.op == 1`).length;
  // Drop by default, no ct.inv: both switches' ACL stages change.
  await real.nbctl(['set', 'NB_Global', '.', 'options:default_acl_drop=true', 'options:use_ct_inv_match=false']);
  await compareWithReal(t, real);
  t.notOk(flows().some((f) => /ct\.inv/.test(f.match) && f.external_ids.get('stage-name')?.includes('acl') === true), 'no ACL stage matches ct.inv');
  t.ok(flows().some((f) => f.external_ids.get('stage-name') === 'ls_in_acl' && f.priority === 0 && f.actions === 'drop;'), 'what no ACL allows is dropped');
  // ARP and ND answered only for ports that are up: vm1 bound (up), vm3 not; the router port and
  // the localport answer regardless.
  await real.chassisCtl(chassisAdd('hv1', '192.0.2.1'));
  await real.bind('vm1', 'hv1');
  await real.nbctl(['set', 'NB_Global', '.', 'options:ignore_lsp_down=false']);
  await compareWithReal(t, real);
  t.same([arpFor('10.0.1.10'), arpFor('10.0.1.11'), arpFor('10.0.1.99'), arpFor('10.0.1.1')], [1, 0, 1, 1], 'vm1 (up), not vm3 (down), the localport and the router port answer');
  // vm3 comes up, vm1 goes down; then the options go back to their defaults.
  await real.bind('vm3', 'hv1');
  await real.bind('vm1', undefined);
  await compareWithReal(t, real);
  t.same([arpFor('10.0.1.10'), arpFor('10.0.1.11')], [0, 1], 'the responders follow the ports');
  await real.nbctl(['remove', 'NB_Global', '.', 'options', 'default_acl_drop', 'use_ct_inv_match', 'ignore_lsp_down']);
  await compareWithReal(t, real);
  t.equal(arpFor('10.0.1.10'), 1, 'a down port answers again');
});

t.test('(ll) chassis rows whose port or datapath is gone: MAC_Binding and FDB rows ovn-northd removes', { skip }, async (t) => {
  const real = await scenario(t, [...twoSwitchesAndARouter, ['lsp-add', 'sw2', 'vm4', '--', 'lsp-set-addresses', 'vm4', 'unknown']]);
  const realDps = await real.sbList('Datapath_Binding');
  const realDp = (name: string): string => realDps.find((d) => (d['external_ids'] as Record<string, string>)['name'] === name)?.['_uuid'] as string;
  const ourDp = (name: string): string => ours<sb.Datapath_Binding>(real.northd.view(), 'Datapath_Binding').find((d) => d.external_ids.get('name') === name)?._uuid as string;
  const key = (port: string): number => ours<sb.Port_Binding>(real.northd.view(), 'Port_Binding').find((p) => p.logical_port === port)?.tunnel_key as number;
  const dpKey = (name: string): number => ours<sb.Datapath_Binding>(real.northd.view(), 'Datapath_Binding').find((d) => d.external_ids.get('name') === name)?.tunnel_key as number;
  // MAC bindings on lr0's two ports; FDB entries of vm2 and vm4 (which learns MACs: unknown).
  for (const [port, ip] of [['lr0-sw1', '10.0.1.50'], ['lr0-sw2', '10.0.2.50']] as const) {
    await real.sbctl(['create', 'MAC_Binding', `logical_port=${port}`, `ip=${ip}`, 'mac="00:00:00:00:09:01"', `datapath=${realDp('lr0')}`]);
    t.match(real.chassisTxn([{ op: 'insert', table: 'MAC_Binding', row: { logical_port: port, ip, mac: '00:00:00:00:09:01', datapath: ['uuid', ourDp('lr0')] } }]), { kind: 'committed' });
  }
  for (const [port, mac] of [['vm2', '00:00:00:00:09:02'], ['vm4', '00:00:00:00:09:04']] as const) {
    // The port keys are the same on both sides (compared by every scenario).
    await real.sbctl(['create', 'FDB', `mac="${mac}"`, `dp_key=${dpKey('sw2')}`, `port_key=${key(port)}`]);
    t.match(real.chassisTxn([{ op: 'insert', table: 'FDB', row: { mac, dp_key: dpKey('sw2'), port_key: key(port) } }]), { kind: 'committed' });
  }
  /** Our leader's housekeeping at this moment, through the chassis write path. */
  const ourCleanup = (): void => {
    const view = real.northd.view();
    const stale = staleRows((table) => (table === 'MAC_Binding' || table === 'FDB' || table === 'IGMP_Group' ? real.chassisDb.rows(table) : view.get(table) ?? new Map()));
    if (stale.length > 0) t.match(real.chassisTxn(staleOps(stale)), { kind: 'committed' });
  };
  const left = async (): Promise<{ ours: string[]; real: string[] }> => {
    const text = (table: string, r: Record<string, unknown>): string => (table === 'MAC_Binding' ? `mb ${String(r['logical_port'])} ${String(r['ip'])}` : `fdb ${String(r['mac'])}`);
    return {
      ours: ['MAC_Binding', 'FDB'].flatMap((table) => [...real.chassisDb.rows(table).values()].map((r) => text(table, r))).sort(),
      real: (await Promise.all(['MAC_Binding', 'FDB'].map(async (table) => (await real.sbList(table)).map((r) => text(table, r))))).flat().sort(),
    };
  };
  ourCleanup();
  let now = await left();
  t.same(now.ours, now.real, `nothing stale yet: ${now.real.join(', ')}`);
  t.equal(now.real.length, 4);
  // A router port and a VIF go: their MAC binding and FDB entry go with them.
  await real.nbctl(['lrp-del', 'lr0-sw2']);
  await real.nbctl(['lsp-del', 'vm4']);
  ourCleanup();
  now = await left();
  t.same(now.ours, now.real, `the same rows left: ${now.real.join(', ')}`);
  t.same(now.real, ['fdb 00:00:00:00:09:02', 'mb lr0-sw1 10.0.1.50'], 'the rows of lr0-sw2 and vm4 went');
  // The router goes: its other binding goes too.
  await real.nbctl(['lr-del', 'lr0']);
  ourCleanup();
  now = await left();
  t.same(now.ours, now.real, `the same rows left: ${now.real.join(', ')}`);
  t.same(now.real, ['fdb 00:00:00:00:09:02'], 'only vm2\'s FDB entry is left');
});

t.test('(mm) routable addresses (options:add_route): another router on a distributed gateway port\'s switch routes to its NAT IPs and VIPs', { skip }, async (t) => {
  const real = await scenario(t, [
    ['ls-add', 'join'],
    ['ls-add', 'inA'],
    ['lr-add', 'lrA'],
    ['lrp-add', 'lrA', 'lrA-join', '00:00:00:00:aa:01', '172.16.0.1/24'],
    ['lrp-add', 'lrA', 'lrA-in', '00:00:00:00:aa:02', '10.1.0.1/24'],
    routerLsp('join', 'join-lrA', 'lrA-join'),
    routerLsp('inA', 'inA-lrA', 'lrA-in'),
    ['lrp-set-gateway-chassis', 'lrA-join', 'hv1', '10'],
    ['lsp-add', 'inA', 'vmA', '--', 'lsp-set-addresses', 'vmA', '00:00:00:00:aa:10 10.1.0.10'],
    ['lsp-add', 'inA', 'vmB', '--', 'lsp-set-addresses', 'vmB', '00:00:00:00:aa:11 10.1.0.11'],
    // A gateway router and a router with a distributed gateway port on the same switch.
    ['lr-add', 'lrB', '--', 'set', 'Logical_Router', 'lrB', 'options:chassis=hv2'],
    ['lrp-add', 'lrB', 'lrB-join', '00:00:00:00:bb:01', '172.16.0.2/24', 'fd00:16::2/64'],
    routerLsp('join', 'join-lrB', 'lrB-join'),
    ['lr-add', 'lrC'],
    ['lrp-add', 'lrC', 'lrC-join', '00:00:00:00:cc:01', '172.16.0.3/24'],
    routerLsp('join', 'join-lrC', 'lrC-join'),
    ['lrp-set-gateway-chassis', 'lrC-join', 'hv3', '10'],
    // lrA's NAT rules and load balancer: routable ones (a centralized and a distributed
    // dnat_and_snat, a VIP), an SNAT that cannot be, one rule without the option.
    ['lr-nat-add', 'lrA', 'dnat_and_snat', '172.16.0.100', '10.1.0.10'],
    ['lr-nat-add', 'lrA', 'dnat_and_snat', '172.16.0.101', '10.1.0.11', 'vmB', '00:00:00:00:aa:21'],
    ['lr-nat-add', 'lrA', 'snat', '172.16.0.102', '10.1.0.0/24'],
    ['lr-nat-add', 'lrA', 'dnat', '172.16.0.103', '10.1.0.12'],
    ['lb-add', 'lbA', '172.16.0.200:80', '10.1.0.10:80'],
    ['lr-lb-add', 'lrA', 'lbA'],
  ]);
  const natOf = (ip: string): string => [...real.fx.db.rows('NAT').values()].find((r) => r['external_ip'] === ip)?._uuid as string;
  const routed = (router: string): string[] => {
    const dp = ours<sb.Datapath_Binding>(real.northd.view(), 'Datapath_Binding').find((d) => d.external_ids.get('name') === router)?._uuid;
    return ours<sb.Logical_Flow>(real.northd.view(), 'Logical_Flow')
      .filter((f) => flowDatapaths(real.northd.view(), f).includes(dp as string) && f.external_ids.get('stage-name') === 'lr_in_ip_routing' && /ip4\.dst == 172\.16\.0\.(1\d\d|2\d\d)\/32/.test(f.match))
      .map((f) => /172\.16\.0\.\d+/.exec(f.match)?.[0] as string).sort();
  };
  for (const ip of ['172.16.0.100', '172.16.0.101', '172.16.0.102']) await real.nbctl(['set', 'NAT', natOf(ip), 'options:add_route=true']);
  await real.nbctl(['set', 'Load_Balancer', [...real.fx.db.rows('Load_Balancer').values()][0]?._uuid as string, 'options:add_route=true']);
  await compareWithReal(t, real);
  t.same(routed('lrB'), ['172.16.0.100', '172.16.0.101', '172.16.0.200'], 'lrB routes to lrA\'s routable addresses (not the SNAT, not the rule without the option)');
  t.same(routed('lrC'), routed('lrB'), 'so does lrC');
  // The option taken off a rule; the load balancer's VIP changed; lrB no longer a gateway router.
  await real.nbctl(['remove', 'NAT', natOf('172.16.0.100'), 'options', 'add_route']);
  await real.nbctl(['lb-add', 'lbA', '172.16.0.201:80', '10.1.0.11:80']);
  await real.nbctl(['remove', 'Logical_Router', 'lrB', 'options', 'chassis']);
  await compareWithReal(t, real);
  t.same(routed('lrB'), ['172.16.0.101', '172.16.0.200', '172.16.0.201'], 'lrB follows');
  // lrA's port is no longer a distributed gateway port: nothing is routable.
  await real.nbctl(['lrp-del-gateway-chassis', 'lrA-join', 'hv1']);
  await compareWithReal(t, real);
  t.same(routed('lrB'), [], 'no routes without lrA\'s distributed gateway port');
  await real.nbctl(['lrp-set-gateway-chassis', 'lrA-join', 'hv1', '10']);
  await real.nbctl(['lsp-del', 'join-lrC']);
  await compareWithReal(t, real);
});

t.test('(nn) DHCPv6 prefix delegation: the prefix a chassis writes into a router port\'s binding (options:ipv6_ra_pd_list)', { skip }, async (t) => {
  const real = await scenario(t, [
    ['ls-add', 'sw1'],
    ['ls-add', 'sw2'],
    ['lr-add', 'lr0'],
    ['lrp-add', 'lr0', 'lr0-sw1', '00:00:00:00:ff:01', 'fd00:1::1/64', '10.0.1.1/24'],
    routerLsp('sw1', 'sw1-lr0', 'lr0-sw1'),
    ['lrp-add', 'lr0', 'lr0-sw2', '00:00:00:00:ff:02', 'fd00:2::1/64'],
    routerLsp('sw2', 'sw2-lr0', 'lr0-sw2'),
    // lr0-sw1 advertises periodically; lr0-sw2 asks its upstream for a prefix.
    ['set', 'Logical_Router_Port', 'lr0-sw1', 'ipv6_ra_configs:address_mode=slaac', 'ipv6_ra_configs:send_periodic=true'],
    ['set', 'Logical_Router_Port', 'lr0-sw2', 'ipv6_ra_configs:address_mode=dhcpv6_stateful', 'options:prefix_delegation=true', 'options:prefix=true'],
  ]);
  /** What a chassis's pinctrl writes: the key into the binding's options, on both SBs. */
  const delegate = async (port: string, value: string): Promise<void> => {
    await real.sbctl(['set', 'Port_Binding', port, `options:ipv6_ra_pd_list="${value}"`]);
    t.match(real.chassisTxn([{ op: 'mutate', table: 'Port_Binding', where: [['logical_port', '==', port]], mutations: [['options', 'delete', ['set', ['ipv6_ra_pd_list']]], ['options', 'insert', ['map', [['ipv6_ra_pd_list', value]]]]] }]), { kind: 'committed' });
    await real.nbctl(['sync']);
  };
  const options = (name: string): ReadonlyMap<string, string> | undefined => ours<sb.Port_Binding>(real.northd.view(), 'Port_Binding').find((p) => p.logical_port === name)?.options;
  // The real NB as mirrored after each command (the real ovn-northd's writes included).
  const realPrefix = async (port: string): Promise<string> => {
    await real.nbctl(['sync']);
    const row = [...real.fx.db.rows('Logical_Router_Port').values()].find((r) => r['name'] === port);
    return JSON.stringify(row?.['ipv6_prefix']);
  };
  await delegate('lr0-sw1', '1:2001:db8:1::/48');
  await delegate('lr0-sw2', '2:2001:db8:2::/56');
  await compareWithReal(t, real);
  t.equal(options('lr0-sw1')?.get('ipv6_ra_prefixes'), 'fd00:1::/64 1:2001:db8:1::/48', 'the delegated prefix advertised after the port\'s own');
  t.equal(options('lr0-sw2')?.get('ipv6_ra_pd_list'), '2:2001:db8:2::/56', 'kept in the binding\'s options');
  // The NB ipv6_prefix the central writes (nb-state-machine's syncPrefixes) is the real ovn-northd's.
  t.equal(await realPrefix('lr0-sw2'), JSON.stringify([delegatedPrefix('2:2001:db8:2::/56')]), 'lr0-sw2 (options:prefix=true): the prefix');
  t.equal(await realPrefix('lr0-sw1'), '[]', 'lr0-sw1 asks for none: nothing written');
  // A new prefix, and the port's own network changed.
  await delegate('lr0-sw1', '1:2001:db8:9::/48');
  await real.nbctl(['set', 'Logical_Router_Port', 'lr0-sw1', 'networks="fd00:1::1/64" "fd00:5::1/64"']);
  await compareWithReal(t, real);
});

t.test('(oo) drop sampling (NB_Global options debug_drop_collector_set, debug_drop_domain_id): every drop sampled; a refused domain keeps the setting in force and empties the drops', { skip }, async (t) => {
  const real = await scenario(t, [
    ...distributedGateway,
    // Switch drops: port security, a disabled port, an external port on the localnet switch,
    // a stateful switch with a logged drop ACL, unknown destinations, snooped multicast.
    ['lsp-set-port-security', 'vm2', '00:00:00:00:01:0b 10.0.1.11'],
    ['lsp-add', 'sw1', 'off', '--', 'lsp-set-addresses', 'off', '00:00:00:00:01:0c 10.0.1.12', '--', 'lsp-set-enabled', 'off', 'disabled'],
    ['lsp-add', 'ext', 'bm', '--', 'lsp-set-type', 'bm', 'external', '--', 'lsp-set-addresses', 'bm', '00:00:00:00:ee:0a 172.16.0.10'],
    ['acl-add', 'sw1', 'to-lport', '1001', 'ip4 && tcp.dst == 80', 'allow-related'],
    ['--log', 'acl-add', 'sw1', 'from-lport', '1002', 'ip4.src == 10.0.1.66', 'drop'],
    ['set', 'Logical_Switch', 'sw1', 'other_config:mcast_snoop=true'],
    // Router drops on the distributed router: a discard route, a drop policy, NAT on the gateway
    // port (distributed rules, one on a virtual port, stateless ones with allowed and exempted
    // sources), relay with a port flooding statically.
    ['lr-route-add', 'lr0', '192.168.99.0/24', 'discard'],
    ['lr-policy-add', 'lr0', '900', 'ip4.dst == 10.0.3.66', 'drop'],
    ['lr-nat-add', 'lr0', 'snat', '172.16.0.10', '10.0.1.0/24'],
    ['lr-nat-add', 'lr0', 'dnat_and_snat', '172.16.0.100', '10.0.1.10', 'vm1', '00:00:00:00:ee:10'],
    ['lr-nat-add', 'lr0', 'dnat_and_snat', 'fd00:ee::101', 'fd00:1::a'],
    ['lsp-add', 'sw1', 'vip', '--', 'lsp-set-type', 'vip', 'virtual'],
    ['lr-nat-add', 'lr0', 'dnat_and_snat', '172.16.0.150', '10.0.1.50', 'vip', '00:00:00:00:ee:50'],
    ['set', 'Logical_Router', 'lr0', 'options:mcast_relay=true'],
    ['set', 'Logical_Router_Port', 'lr0-sw1', 'options:mcast_flood=true'],
    ['create', 'Address_Set', 'name=ext_ok', 'addresses="192.168.7.0/24"'],
    // A gateway router on hv1 behind a stateless, snooping switch with a drop ACL (no relay:
    // unregistered multicast dropped on both): SNAT, dnat_and_snat, a default route, load
    // balancers with and without backends on it and on its switch. A relaying router without
    // ports (multicast it would route dropped).
    ['ls-add', 'sw2'],
    ['lsp-add', 'sw2', 'vm3', '--', 'lsp-set-addresses', 'vm3', '00:00:00:00:02:0a 10.0.2.10'],
    ['acl-add', 'sw2', 'from-lport', '1002', 'ip4.src == 10.0.2.66', 'drop'],
    ['set', 'Logical_Switch', 'sw2', 'other_config:mcast_snoop=true'],
    ['lr-add', 'gw', '--', 'set', 'Logical_Router', 'gw', 'options:chassis=hv1'],
    ['lrp-add', 'gw', 'gw-sw2', '00:00:00:00:ff:21', '10.0.2.1/24'],
    routerLsp('sw2', 'sw2-gw', 'gw-sw2'),
    ['lrp-add', 'gw', 'gw-ext', '00:00:00:00:ff:22', '172.16.0.2/24'],
    routerLsp('ext', 'ext-gw', 'gw-ext'),
    ['lr-route-add', 'gw', '0.0.0.0/0', '172.16.0.254'],
    ['lr-nat-add', 'gw', 'snat', '172.16.0.2', '10.0.2.0/24'],
    ['lr-nat-add', 'gw', 'dnat_and_snat', '172.16.0.200', '10.0.2.10'],
    ['lb-add', 'lb0', '172.16.0.50:80', '10.0.2.10:80'],
    ['create', 'Load_Balancer', 'name=lb-empty', 'vips:"172.16.0.51:80"=""', 'protocol=tcp'],
    ['lr-lb-add', 'gw', 'lb0'],
    ['lr-lb-add', 'gw', 'lb-empty'],
    ['ls-lb-add', 'sw2', 'lb-empty'],
    ['lr-add', 'lr2', '--', 'set', 'Logical_Router', 'lr2', 'options:mcast_relay=true'],
  ]);
  await real.nbctl(['--', '--id=@n', 'create', 'NAT', 'type=dnat_and_snat', 'external_ip=172.16.0.160', 'logical_ip=10.0.1.60', 'options:stateless=true',
    `allowed_ext_ips=${nbUuidByAsName(real, 'ext_ok')}`, '--', 'add', 'Logical_Router', 'lr0', 'nat', '@n']);
  await real.nbctl(['--', '--id=@n', 'create', 'NAT', 'type=dnat_and_snat', 'external_ip=172.16.0.162', 'logical_ip=10.0.1.62', 'options:stateless=true',
    `exempted_ext_ips=${nbUuidByAsName(real, 'ext_ok')}`, '--', 'add', 'Logical_Router', 'lr0', 'nat', '@n']);
  await real.nbctl(['set', 'NB_Global', '.', 'options:default_acl_drop=true']);
  await compareWithReal(t, real);
  const actions = (): string[] => ours<sb.Logical_Flow>(real.northd.view(), 'Logical_Flow').map((f) => f.actions);
  const sampled = (collectorSet: number, domain: number): number =>
    actions().filter((a) => a.endsWith(`sample(probability=65535,collector_set=${collectorSet},obs_domain=${domain},obs_point=$cookie); /* drop */`)).length;
  const plain = (): number => actions().filter((a) => a === 'drop;' || a.endsWith(' drop;') || (a.endsWith('/* drop */') && !a.includes('sample(') && !a.includes('commit_lb_aff'))).length;
  // A drop without text: nothing, or a drop ACL's ct_commit and log() alone.
  const emptied = (): number => actions().filter((a) => a === '' || a.endsWith('verdict=drop); ') || a.endsWith('ct_mark.blocked = 1; }; ')).length;
  const drops = plain();
  t.ok(drops >= 50, `${drops} flows drop`);

  await real.nbctl(['set', 'NB_Global', '.', 'options:debug_drop_collector_set=123', 'options:debug_drop_domain_id=5']);
  await compareWithReal(t, real);
  t.same([sampled(123, 5), plain()], [drops, 0], 'every drop sampled with collector set 123, domain 5');
  const sites = new Set(ours<sb.Logical_Flow>(real.northd.view(), 'Logical_Flow').filter((f) => f.actions.includes('sample(')).map((f) => `${f.external_ids.get('stage-name') ?? ''}/${f.priority}`));
  t.comment(`sampled drops at ${sites.size} (stage, priority): ${[...sites].sort().join(' ')}`);
  // The largest collector set (ovn-northd prints it with %d) and the largest domain it takes.
  await real.nbctl(['set', 'NB_Global', '.', 'options:debug_drop_collector_set=4294967295', 'options:debug_drop_domain_id=254']);
  await compareWithReal(t, real);
  t.same([sampled(-1, 254), plain()], [drops, 0], 'collector set 4294967295 printed as -1, domain 254');
  // Domain 255 is refused: the setting in force stays (sampling on), but ovn-northd empties its
  // text on every run and writes it again only for a domain it takes, so every drop is written
  // without actions (it still drops, unsampled). So for flows made later (a new switch, a
  // policy), and with the collector set turned off beside a refused domain.
  await real.nbctl(['set', 'NB_Global', '.', 'options:debug_drop_collector_set=7', 'options:debug_drop_domain_id=255']);
  await compareWithReal(t, real);
  t.same([emptied(), sampled(-1, 254), plain()], [drops, 0, 0], 'domain 255 refused: every drop emptied');
  await real.nbctl(['ls-add', 'sw3']);
  await real.nbctl(['lr-policy-add', 'gw', '800', 'ip4.dst == 10.0.9.9', 'drop']);
  await real.nbctl(['set', 'NB_Global', '.', 'options:debug_drop_collector_set=0', 'options:debug_drop_domain_id=4096']);
  await compareWithReal(t, real);
  t.ok(emptied() > drops && plain() === 0, 'the new switch and policy too, and collector set 0 beside a refused domain changes nothing');
  // The setting in force taken again: sampled again.
  await real.nbctl(['set', 'NB_Global', '.', 'options:debug_drop_collector_set=4294967295', 'options:debug_drop_domain_id=254']);
  await compareWithReal(t, real);
  t.same([emptied(), plain()], [0, 0], 'sampled again');
  // Options removed: off (domain 0 is taken), every drop plain again; a refused domain then
  // changes nothing.
  await real.nbctl(['remove', 'NB_Global', '.', 'options', 'debug_drop_collector_set', 'debug_drop_domain_id']);
  await compareWithReal(t, real);
  t.equal(sampled(-1, 254), 0, 'off: nothing sampled');
  t.ok(plain() > drops, 'every drop plain again');
  await real.nbctl(['set', 'NB_Global', '.', 'options:debug_drop_collector_set=5', 'options:debug_drop_domain_id=300']);
  await compareWithReal(t, real);
  t.same([emptied(), sampled(5, 300)], [0, 0], 'refused while off: plain drops');
});

t.test('(pp) static multicast flooding (options:mcast_flood) on distributed gateway ports: the router\'s _MC_static names their chassisredirect ports', { skip }, async (t) => {
  const real = await scenario(t, [
    ...distributedGateway,
    // lr0 relays (its multicast flows read whether a port floods statically) and its DGP
    // floods; a second DGP, on another external switch, will get an HA_Chassis_Group.
    ['set', 'Logical_Router', 'lr0', 'options:mcast_relay=true'],
    ['set', 'Logical_Switch', 'sw1', 'other_config:mcast_snoop=true'],
    ['set', 'Logical_Router_Port', 'lr0-ext', 'options:mcast_flood=true'],
    ['ls-add', 'ext2'],
    localnetLsp('ext2', 'ln-ext2', 'phys2'),
    ['lrp-add', 'lr0', 'lr0-ext2', '00:00:00:00:ff:03', '172.16.1.1/24'],
    routerLsp('ext2', 'ext2-lr0', 'lr0-ext2'),
    ['set', 'Logical_Router_Port', 'lr0-ext2', 'options:mcast_flood=true'],
    ['ha-chassis-group-add', 'grp2'],
    ['ha-chassis-group-add-chassis', 'grp2', 'hv3', '30'],
    // A gateway router: a port with a gateway chassis is no DGP there (no chassisredirect
    // port), so it floods as itself, as its other port does.
    ['ls-add', 'sw2'],
    ['lsp-add', 'sw2', 'vm3', '--', 'lsp-set-addresses', 'vm3', '00:00:00:00:02:0a 10.0.2.10'],
    ['lr-add', 'gw', '--', 'set', 'Logical_Router', 'gw', 'options:chassis=hv1', 'options:mcast_relay=true'],
    ['lrp-add', 'gw', 'gw-sw2', '00:00:00:00:ff:21', '10.0.2.1/24'],
    routerLsp('sw2', 'sw2-gw', 'gw-sw2'),
    ['lrp-add', 'gw', 'gw-ext', '00:00:00:00:ff:22', '172.16.0.2/24'],
    routerLsp('ext', 'ext-gw', 'gw-ext'),
    ['lrp-set-gateway-chassis', 'gw-ext', 'hv1', '10'],
    ['set', 'Logical_Router_Port', 'gw-ext', 'options:mcast_flood=true'],
    ['set', 'Logical_Router_Port', 'gw-sw2', 'options:mcast_flood=true'],
  ]);
  /** Our _MC_static of datapath `dp` (by name): its ports' names, sorted; undefined without a row. */
  const statics = (dp: string): string[] | undefined => {
    const view = real.northd.view();
    const uuid = ours<sb.Datapath_Binding>(view, 'Datapath_Binding').find((d) => d.external_ids.get('name') === dp)?._uuid;
    const names = new Map(ours<sb.Port_Binding>(view, 'Port_Binding').map((p) => [p._uuid, p.logical_port]));
    const group = ours<sb.Multicast_Group>(view, 'Multicast_Group').find((g) => g.datapath === uuid && g.name === '_MC_static');
    return group?.ports.map((u) => names.get(u) ?? `? ${u}`).sort();
  };
  t.same(statics('lr0'), ['cr-lr0-ext', 'lr0-ext2'], 'the DGP floods through its chassisredirect port only; the port that is no DGP yet as itself');
  t.same(statics('gw'), ['gw-ext', 'gw-sw2'], 'a gateway router\'s ports flood as themselves, gateway chassis or not');

  // The second port becomes a DGP through an HA_Chassis_Group, the inner port floods too.
  const grp2 = [...real.fx.db.rows('HA_Chassis_Group').values()].find((r) => (r as unknown as { name: string }).name === 'grp2')?._uuid ?? '?';
  await real.nbctl(['set', 'Logical_Router_Port', 'lr0-ext2', `ha_chassis_group=${grp2}`]);
  await real.nbctl(['set', 'Logical_Router_Port', 'lr0-sw1', 'options:mcast_flood=true']);
  await compareWithReal(t, real);
  t.same(statics('lr0'), ['cr-lr0-ext', 'cr-lr0-ext2', 'lr0-sw1'], 'two DGPs by their chassisredirect ports, a plain port as itself');
  // The first DGP stops flooding; the inner port becomes a DGP while flooding.
  await real.nbctl(['remove', 'Logical_Router_Port', 'lr0-ext', 'options', 'mcast_flood']);
  await real.nbctl(['lrp-set-gateway-chassis', 'lr0-sw1', 'hv2', '10']);
  await compareWithReal(t, real);
  t.same(statics('lr0'), ['cr-lr0-ext2', 'cr-lr0-sw1'], 'a port turning DGP is replaced by its chassisredirect port');
  // The inner port and the second port cease to be DGPs; the first floods again.
  await real.nbctl(['lrp-del-gateway-chassis', 'lr0-sw1', 'hv2']);
  await real.nbctl(['clear', 'Logical_Router_Port', 'lr0-ext2', 'ha_chassis_group']);
  await real.nbctl(['set', 'Logical_Router_Port', 'lr0-ext', 'options:mcast_flood=true']);
  await compareWithReal(t, real);
  t.same(statics('lr0'), ['cr-lr0-ext', 'lr0-ext2', 'lr0-sw1'], 'ports that are DGPs no more flood as themselves');
  // lr0 turns into a gateway router (its chassisredirect ports go) and back.
  await real.nbctl(['set', 'Logical_Router', 'lr0', 'options:chassis=hv1']);
  await compareWithReal(t, real);
  t.same(statics('lr0'), ['lr0-ext', 'lr0-ext2', 'lr0-sw1'], 'on a gateway router every flooding port as itself');
  // (Back, cr-lr0-ext takes the lowest free tunnel key here, the next after the last in OVN.)
  await real.nbctl(['remove', 'Logical_Router', 'lr0', 'options', 'chassis']);
  await compareWithReal(t, real, { portKeys: false });
  t.same(statics('lr0'), ['cr-lr0-ext', 'lr0-ext2', 'lr0-sw1'], 'a distributed router again: the DGP by its chassisredirect port');
  // Only the DGP floods, then it is disabled (no static group, multicast dropped), enabled again
  // and deleted.
  await real.nbctl(['remove', 'Logical_Router_Port', 'lr0-ext2', 'options', 'mcast_flood']);
  await real.nbctl(['remove', 'Logical_Router_Port', 'lr0-sw1', 'options', 'mcast_flood']);
  await compareWithReal(t, real, { portKeys: false });
  t.same(statics('lr0'), ['cr-lr0-ext'], 'the DGP alone');
  await real.nbctl(['lrp-set-enabled', 'lr0-ext', 'disabled']);
  await compareWithReal(t, real, { portKeys: false });
  t.equal(statics('lr0'), undefined, 'a disabled DGP floods nothing');
  await real.nbctl(['lrp-set-enabled', 'lr0-ext', 'enabled']);
  await compareWithReal(t, real, { portKeys: false });
  await real.nbctl(['lrp-del', 'lr0-ext']);
  await compareWithReal(t, real, { portKeys: false });
  t.equal(statics('lr0'), undefined, 'nothing left to flood');
});
