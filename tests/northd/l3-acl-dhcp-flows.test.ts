// Table-driven: a small NB topology in (two switches, a router with a static route and a
// policy, a port group ACL, DHCPv4 and DHCPv6 options, DNS records) and the flows (and DNS rows)
// that carry a packet across it out,
// as ovn-northd 23.03 writes them (the differential test checks whole flow sets against the
// real one; this one runs without OVN installed). Then the owners regenerate locally.
import t from 'tap';
import type * as sb from '../../ovsdb/rows/sb.js';
import { createNorthd, flowDatapaths } from '../../northd/index.js';
import type { SbView } from '../../northd/index.js';
import { addLrp, addLsp, byUuid, map, nbFixture, set } from './nb-fixture.js';

function flowsOf(view: SbView, dpName: string): string[] {
  const dps = new Map([...(view.get('Datapath_Binding')?.values() ?? [])].map((r) => [r._uuid, (r as unknown as sb.Datapath_Binding).external_ids.get('name')]));
  return [...(view.get('Logical_Flow')?.values() ?? [])]
    .map((r) => r as unknown as sb.Logical_Flow)
    .filter((f) => flowDatapaths(view, f).some((d) => dps.get(d) === dpName))
    .map((f) => `${f.external_ids.get('stage-name') ?? ''} ${f.priority} (${f.match}) (${f.actions})`);
}

function build(): { fx: ReturnType<typeof nbFixture>; northd: ReturnType<typeof createNorthd> } {
  const fx = nbFixture();
  const northd = createNorthd();
  const steps: unknown[][] = [
    [{ op: 'insert', table: 'NB_Global', row: {} }],
    [{ op: 'insert', table: 'Logical_Switch', row: { name: 'sw1' } }],
    [{ op: 'insert', table: 'Logical_Switch', row: { name: 'sw2' } }],
    [{ op: 'insert', table: 'Logical_Router', row: { name: 'lr0' } }],
    addLrp('lr0', 'lr0-sw1', '00:00:00:00:ff:01', ['10.0.1.1/24']),
    addLrp('lr0', 'lr0-sw2', '00:00:00:00:ff:02', ['10.0.2.1/24']),
    addLsp('sw1', 'sw1-lr0', { type: 'router', addresses: set(['router']), options: map({ 'router-port': 'lr0-sw1' }) }),
    addLsp('sw2', 'sw2-lr0', { type: 'router', addresses: set(['router']), options: map({ 'router-port': 'lr0-sw2' }) }),
    addLsp('sw1', 'vm1', { addresses: set(['00:00:00:00:01:0a 10.0.1.10']) }),
    addLsp('sw2', 'vm2', { addresses: set(['00:00:00:00:02:0a 10.0.2.10']) }),
  ];
  for (const ops of steps) northd.apply(fx.db, fx.run(ops));
  return { fx, northd };
}

t.test('routing between two switches', async (t) => {
  const { northd } = build();
  const lr0 = flowsOf(northd.view(), 'lr0');
  for (const want of [
    'lr_in_admission 50 (eth.dst == 00:00:00:00:ff:01 && inport == "lr0-sw1") (xreg0[0..47] = 00:00:00:00:ff:01; next;)',
    'lr_in_ip_routing 74 (ip4.dst == 10.0.2.0/24) (ip.ttl--; reg8[0..15] = 0; reg0 = ip4.dst; reg1 = 10.0.2.1; eth.src = 00:00:00:00:ff:02; outport = "lr0-sw2"; flags.loopback = 1; next;)',
    'lr_in_arp_resolve 100 (outport == "lr0-sw2" && reg0 == 10.0.2.10) (eth.dst = 00:00:00:00:02:0a; next;)',
    'lr_in_ip_input 90 (ip4.dst == 10.0.1.1 && icmp4.type == 8 && icmp4.code == 0) (ip4.dst <-> ip4.src; ip.ttl = 255; icmp4.type = 0; flags.loopback = 1; next; )',
    'lr_out_delivery 100 (outport == "lr0-sw2") (output;)',
  ]) t.ok(lr0.includes(want), want);
  const sw1 = flowsOf(northd.view(), 'sw1');
  t.ok(sw1.includes('ls_in_arp_rsp 50 (arp.tpa == 10.0.1.10 && arp.op == 1) (eth.dst = eth.src; eth.src = 00:00:00:00:01:0a; arp.op = 2; /* ARP reply */ arp.tha = arp.sha; arp.sha = 00:00:00:00:01:0a; arp.tpa = arp.spa; arp.spa = 10.0.1.10; outport = inport; flags.loopback = 1; output;)'), 'the switch answers ARP for vm1');
});

t.test('a static route and a policy regenerate only the router\'s own flows', async (t) => {
  const { fx, northd } = build();
  const lr = [...fx.db.rows('Logical_Router').keys()][0] as string;
  const delta = northd.apply(fx.db, fx.run([
    { op: 'insert', table: 'Logical_Router_Static_Route', 'uuid-name': 'r', row: { ip_prefix: '10.9.0.0/16', nexthop: '10.0.2.99' } },
    { op: 'insert', table: 'Logical_Router_Policy', 'uuid-name': 'p', row: { priority: 100, match: 'ip4.dst == 10.8.0.0/16', action: 'drop' } },
    { op: 'mutate', table: 'Logical_Router', where: byUuid(lr), mutations: [['static_routes', 'insert', set([['named-uuid', 'r']])], ['policies', 'insert', set([['named-uuid', 'p']])]] },
  ]));
  const added = delta.changes.filter((c) => c.kind === 'insert').map((c) => (c.new as unknown as sb.Logical_Flow).match).sort();
  t.same(added, ['ip4.dst == 10.8.0.0/16', 'reg7 == 0 && ip4.dst == 10.9.0.0/16'], 'exactly the route and the policy flows');
  t.same(delta.changes.filter((c) => c.kind !== 'insert'), [], 'nothing else touched');
  t.ok(flowsOf(northd.view(), 'lr0').includes('lr_in_ip_routing 49 (reg7 == 0 && ip4.dst == 10.9.0.0/16) (ip.ttl--; reg8[0..15] = 0; reg0 = 10.0.2.99; reg1 = 10.0.2.1; eth.src = 00:00:00:00:ff:02; outport = "lr0-sw2"; flags.loopback = 1; next;)'));
});

t.test('a port group ACL makes both switches stateful', async (t) => {
  const { fx, northd } = build();
  const vm = (name: string): unknown => ['uuid', (fx.db.findUnique('Logical_Switch_Port', ['name'], [name]) as { _uuid: string })._uuid];
  northd.apply(fx.db, fx.run([
    { op: 'insert', table: 'ACL', 'uuid-name': 'a', row: { priority: 1000, direction: 'to-lport', match: 'outport == @pg && tcp.dst == 22', action: 'allow-related' } },
    { op: 'insert', table: 'Port_Group', row: { name: 'pg', ports: set([vm('vm1'), vm('vm2')]), acls: set([['named-uuid', 'a']]) } },
  ]));
  const view = northd.view();
  const pgs = [...(view.get('Port_Group')?.values() ?? [])].map((r) => `${(r as unknown as sb.Port_Group).name}: ${(r as unknown as sb.Port_Group).ports.join(' ')}`).sort();
  t.same(pgs, ['1_pg: vm1', '2_pg: vm2'], 'one SB Port_Group per switch, named by its tunnel key');
  for (const sw of ['sw1', 'sw2']) {
    const flows = flowsOf(view, sw);
    t.ok(flows.includes('ls_out_acl 2000 (reg0[7] == 1 && (outport == @pg && tcp.dst == 22)) (reg0[1] = 1; next;)'), `${sw}: the ACL commits new connections`);
    t.ok(flows.includes('ls_in_pre_acl 100 (ip) (reg0[0] = 1; next;)'), `${sw}: traffic goes through conntrack`);
    t.notOk(flows.includes('ls_in_acl 65535 (1) (next;)'), `${sw}: the pass-all default is gone`);
  }
});

t.test('DHCPv4 options offer the port its address', async (t) => {
  const { fx, northd } = build();
  northd.apply(fx.db, fx.run([
    { op: 'insert', table: 'DHCP_Options', 'uuid-name': 'd', row: { cidr: '10.0.1.0/24', options: map({ lease_time: '3600', router: '10.0.1.1', server_id: '10.0.1.1', server_mac: '00:00:00:00:ff:01' }) } },
    { op: 'update', table: 'Logical_Switch_Port', where: [['name', '==', 'vm1']], row: { dhcpv4_options: ['named-uuid', 'd'] } },
  ]));
  const flows = flowsOf(northd.view(), 'sw1');
  t.ok(flows.includes('ls_in_dhcp_options 100 (inport == "vm1" && eth.src == 00:00:00:00:01:0a && ip4.src == 0.0.0.0 && ip4.dst == 255.255.255.255 && udp.src == 68 && udp.dst == 67) (reg0[3] = put_dhcp_opts(offerip = 10.0.1.10, lease_time = 3600, netmask = 255.255.255.0, router = 10.0.1.1, server_id = 10.0.1.1); next;)'));
  t.ok(flows.includes('ls_in_dhcp_response 100 (inport == "vm1" && eth.src == 00:00:00:00:01:0a && ip4 && udp.src == 68 && udp.dst == 67 && reg0[3]) (eth.dst = eth.src; eth.src = 00:00:00:00:ff:01; ip4.src = 10.0.1.1; udp.src = 67; udp.dst = 68; outport = inport; flags.loopback = 1; output;)'));
  const codes = [...(northd.view().get('DHCP_Options')?.values() ?? [])].map((r) => r as unknown as sb.DHCP_Options);
  t.same(codes.find((c) => c.name === 'router'), { _uuid: codes.find((c) => c.name === 'router')?._uuid, _version: codes.find((c) => c.name === 'router')?._version, name: 'router', code: 3, type: 'ipv4' }, 'the SB code table');
});

t.test('DHCPv6 options offer the port its address', async (t) => {
  const { fx, northd } = build();
  northd.apply(fx.db, fx.run([
    { op: 'update', table: 'Logical_Switch_Port', where: [['name', '==', 'vm1']], row: { addresses: set(['00:00:00:00:01:0a 10.0.1.10 fd00:9::a fd00:1::a']) } },
    { op: 'insert', table: 'DHCP_Options', 'uuid-name': 'd', row: { cidr: 'fd00:1::/64', options: map({ server_id: '00:00:00:00:ff:01', dns_server: 'fd00::53' }) } },
    { op: 'update', table: 'Logical_Switch_Port', where: [['name', '==', 'vm1']], row: { dhcpv6_options: ['named-uuid', 'd'] } },
  ]));
  const request = 'inport == "vm1" && eth.src == 00:00:00:00:01:0a && ip6.dst == ff02::1:2 && udp.src == 546 && udp.dst == 547';
  const dhcp = (): string[] => flowsOf(northd.view(), 'sw1').filter((f) => f.includes('546')).sort();
  t.same(dhcp(), [
    `ls_in_dhcp_options 100 (${request}) (reg0[3] = put_dhcpv6_opts(ia_addr = fd00:1::a, dns_server = fd00::53, server_id = 00:00:00:00:ff:01); next;)`,
    `ls_in_dhcp_response 100 (${request} && reg0[3]) (eth.dst = eth.src; eth.src = 00:00:00:00:ff:01; ip6.dst = ip6.src; ip6.src = fe80::200:ff:fe00:ff01; udp.src = 547; udp.dst = 546; outport = inport; flags.loopback = 1; output;)`,
    'ls_out_acl 34000 (outport == "vm1" && eth.src == 00:00:00:00:ff:01 && ip6.src == fe80::200:ff:fe00:ff01 && udp && udp.src == 547 && udp.dst == 546) (next;)',
  ], 'the first address in the CIDR is offered; the server replies from its link-local address');
  const d = [...fx.db.rows('DHCP_Options').keys()][0] as string;
  northd.apply(fx.db, fx.run([{ op: 'update', table: 'DHCP_Options', where: byUuid(d), row: { options: map({ server_id: '00:00:00:00:ff:01', dhcpv6_stateless: 'true' }) } }]));
  t.ok(dhcp()[0]?.includes('put_dhcpv6_opts(server_id = 00:00:00:00:ff:01)'), 'stateless: no ia_addr');
  northd.apply(fx.db, fx.run([{ op: 'update', table: 'DHCP_Options', where: byUuid(d), row: { options: map({ server_id: 'nonsense' }) } }]));
  t.same(dhcp(), [], 'a server_id that is no MAC: nothing');
});

t.test('DNS records: an SB DNS row per named row, and the switch DNS flows', async (t) => {
  const { fx, northd } = build();
  const sw = (name: string): unknown => [['name', '==', name]];
  northd.apply(fx.db, fx.run([
    { op: 'insert', table: 'DNS', 'uuid-name': 'd', row: { records: map({ 'VM1.ovn.org': '10.0.1.10 FD00:1::A' }) } },
    { op: 'mutate', table: 'Logical_Switch', where: sw('sw1'), mutations: [['dns_records', 'insert', set([['named-uuid', 'd']])]] },
    { op: 'mutate', table: 'Logical_Switch', where: sw('sw2'), mutations: [['dns_records', 'insert', set([['named-uuid', 'd']])]] },
  ]));
  const dnsUuid = [...fx.db.rows('DNS').keys()][0] as string;
  const rows = (): sb.DNS[] => [...(northd.view().get('DNS')?.values() ?? [])].map((r) => r as unknown as sb.DNS);
  const dpUuids = [...(northd.view().get('Datapath_Binding')?.values() ?? [])].filter((r) => (r as unknown as sb.Datapath_Binding).external_ids.has('logical-switch')).map((r) => r._uuid).sort();
  t.same(rows().map((r) => [Object.fromEntries(r.records), r.datapaths, Object.fromEntries(r.external_ids)]), [[{ 'VM1.ovn.org': '10.0.1.10 fd00:1::a' }, dpUuids, { dns_id: dnsUuid }]], 'values lowercased, both switches, the NB UUID');
  const dnsFlows = (name: string): string[] => flowsOf(northd.view(), name).filter((f) => f.includes(' 53')).sort();
  const want = [
    'ls_in_dns_lookup 100 (udp.dst == 53) (reg0[4] = dns_lookup(); next;)',
    'ls_in_dns_response 100 (udp.dst == 53 && reg0[4]) (eth.dst <-> eth.src; ip4.src <-> ip4.dst; udp.dst = udp.src; udp.src = 53; outport = inport; flags.loopback = 1; output;)',
    'ls_in_dns_response 100 (udp.dst == 53 && reg0[4]) (eth.dst <-> eth.src; ip6.src <-> ip6.dst; udp.dst = udp.src; udp.src = 53; outport = inport; flags.loopback = 1; output;)',
    'ls_out_acl 34000 (udp.src == 53) (next;)',
  ];
  t.same(dnsFlows('sw1'), want, 'sw1 has the DNS flows');
  t.same(dnsFlows('sw2'), want, 'so has sw2');
  // Editing the records rewrites the DNS row only: the switches' flags do not change.
  const delta = northd.apply(fx.db, fx.run([{ op: 'update', table: 'DNS', where: byUuid(dnsUuid), row: { records: map({ 'vm1.ovn.org': '10.0.1.11' }) } }]));
  t.same(delta.changes.map((c) => c.table), ['DNS'], 'a records edit changes the DNS row and nothing else');
  // Emptied, the row stays (both switches name it) and the flows go.
  northd.apply(fx.db, fx.run([{ op: 'update', table: 'DNS', where: byUuid(dnsUuid), row: { records: map({}) } }]));
  t.equal(rows().length, 1, 'an empty row named by switches stays');
  t.same(dnsFlows('sw1'), [], 'no records, no DNS flows');
  // Deleted while named: the weak references go, and the row with them.
  northd.apply(fx.db, fx.run([{ op: 'delete', table: 'DNS', where: byUuid(dnsUuid) }]));
  t.same(rows(), [], 'a deleted row leaves the SB');
});
