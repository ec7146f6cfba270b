// Goal: `ovnts nbctl` routes, policies, NAT, load balancers, DHCP options, gateway chassis, HA
// chassis groups, QoS, meters, static MAC bindings, port mirrors, forwarding groups, CoPP,
// connections and SSL behave as ovn-nbctl, the generic database commands take the options it
// gives them and no other, and list and find print records as it does in every output format.
// Method: one command script run by the real ovn-nbctl against a real ovsdb-server (OVN's NB
// schema) and by runNbctl against an in-process ovnts cluster; every step's success or failure
// and message, every list command's output and the final rows (compared by content, UUIDs
// replaced by what they point at) must be equal.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import t from 'tap';
import { getoptTableListing, runNbctl } from '../../bin/lib/nbctl/commands.js';
import { Nb, NbctlError } from '../../bin/lib/nbctl/nb.js';
import { NorthboundClient } from '../../server/northbound-service.js';
import { startCentralCluster } from '../helpers/central-cluster.js';
import { JsonRpcClient } from '../helpers/jsonrpc-client.js';
import { startRealOvsdbServer } from '../helpers/real-ovsdb.js';
import { testdirAfterTeardowns } from '../helpers/testdir.js';

const NB_SCHEMA = '/usr/share/ovn/ovn-nb.ovsschema';
const haveTools = existsSync('/usr/bin/ovn-nbctl') && existsSync('/usr/bin/ovsdb-client') && existsSync('/usr/sbin/ovsdb-server') && existsSync(NB_SCHEMA);

/** The tables compared at the end, and the columns only a projection (northd) writes. */
const tables = [
  'Logical_Switch', 'Logical_Switch_Port', 'Logical_Router', 'Logical_Router_Port', 'Logical_Router_Static_Route', 'Logical_Router_Policy', 'NAT', 'Load_Balancer',
  'DHCP_Options', 'BFD', 'HA_Chassis_Group', 'HA_Chassis', 'Gateway_Chassis', 'Load_Balancer_Group', 'ACL', 'Port_Group', 'Address_Set', 'QoS', 'Meter', 'Meter_Band',
  'Static_MAC_Binding', 'NB_Global', 'Connection', 'SSL', 'Mirror', 'Forwarding_Group', 'Copp',
];
const projected = new Set(['up', 'dynamic_addresses', 'tag', 'BFD.status']);
const isProjected = (table: string, column: string): boolean => projected.has(column) || projected.has(`${table}.${column}`);
/** Map keys only a projection writes: ovn-northd's into NB_Global.options. */
const projectedKeys = new Map([['NB_Global.options', new Set(['mac_prefix', 'svc_monitor_mac', 'max_tunid', 'northd_internal_version'])]]);
/** A column's value without the keys only a projection writes. */
function withoutProjectedKeys(table: string, column: string, v: unknown): unknown {
  const keys = projectedKeys.get(`${table}.${column}`);
  if (keys === undefined || !Array.isArray(v) || v[0] !== 'map') return v;
  return ['map', (v[1] as [unknown, unknown][]).filter(([k]) => !keys.has(k as string))];
}

type Row = Record<string, unknown>;
type Dump = Map<string, Row[]>;

interface Outcome {
  readonly ok: boolean;
  readonly stdout: string;
  /** The error message, without the "ovn-nbctl: " prefix and log lines. */
  readonly error: string;
}

interface Side {
  run(args: readonly string[]): Promise<Outcome>;
  dump(): Promise<Dump>;
}

/** A step, or one built from the side's current UUIDs (`uuid('DHCP_Options(10.0.0.0/24)')`). */
type Step = readonly string[] | ((uuid: (label: string) => string) => readonly string[]);

const script: readonly Step[] = [
  ['ls-add', 'sw0'],
  ['lsp-add', 'sw0', 'sw0-p1'],
  ['lsp-add', 'sw0', 'sw0-p2'],
  ['lr-add', 'lr0'],
  ['lrp-add', 'lr0', 'lr0-sw0', '00:00:00:00:ff:01', '10.0.0.1/24', 'fd00::1/64'],
  ['lrp-add', 'lr0', 'lr0-ext', '00:00:00:00:ff:02', '172.16.0.1/24'],
  // Static routes.
  ['lr-route-add', 'lr0', '0.0.0.0/0', '172.16.0.254'],
  ['lr-route-add', 'lr0', '10.1.0.5/16', '10.0.0.10'],
  ['lr-route-add', 'lr0', '10.1.0.0/16', '10.0.0.11'],
  ['--ecmp', 'lr-route-add', 'lr0', '10.1.0.0/16', '10.0.0.11'],
  ['--ecmp', 'lr-route-add', 'lr0', '10.1.0.0/16', '10.0.0.11', 'lr0-sw0'],
  ['--ecmp-symmetric-reply', 'lr-route-add', 'lr0', '10.2.0.0/16', '10.0.0.12'],
  ['--ecmp', 'lr-route-add', 'lr0', '10.2.0.0/16', '10.0.0.13'],
  ['--policy=src-ip', 'lr-route-add', 'lr0', '10.0.0.0/24', '172.16.0.253', 'lr0-ext'],
  ['--policy=sideways', 'lr-route-add', 'lr0', '10.3.0.0/16', '10.0.0.1'],
  ['lr-route-add', 'lr0', '10.4.0.0/16', 'discard'],
  ['--ecmp', 'lr-route-add', 'lr0', '10.4.0.0/16', '10.0.0.14'],
  ['lr-route-add', 'lr0', '10.5.0.0/16', 'discard', 'lr0-sw0'],
  ['--ecmp', 'lr-route-add', 'lr0', '10.1.0.0/16', '10.0.0.99'],
  ['--may-exist', 'lr-route-add', 'lr0', '10.8.0.0/16', '10.0.0.98'],
  ['--may-exist', '--policy=dst-ip', 'lr-route-add', 'lr0', '10.8.0.0/16', '10.0.0.97', 'lr0-sw0'],
  ['--may-exist', 'lr-route-add', 'lr0', '10.8.0.0/16', '10.0.0.96'],
  ['--route-table=rtb1', 'lr-route-add', 'lr0', '10.6.0.0/16', '10.0.0.15'],
  ['--route-table=rtb1', 'lr-route-add', 'lr0', '0.0.0.0/0', '10.0.0.16'],
  ['lr-route-add', 'lr0', '192.168.1.1', 'lr0-ext'],
  ['lr-route-add', 'lr0', 'fd01::/64', 'fd00::100'],
  ['lr-route-add', 'lr0', 'fd02::5/48', 'fd00::101', 'lr0-sw0'],
  ['lr-route-add', 'lr0', 'fd01::/64', '10.0.0.3'],
  ['lr-route-add', 'lr0', '300.1.1.0/24', '10.0.0.3'],
  ['lr-route-add', 'lr0', '10.7.0.0/33', '10.0.0.3'],
  ['lr-route-add', 'lr0', '10.7.0.0/16', '10.0.0.300'],
  ['lr-route-add', 'lr0', '10.7.0.0/16', '10.0.0.3', 'nope-port'],
  ['lr-route-add', 'lr9', '10.7.0.0/16', '10.0.0.3'],
  ['lr-route-add', 'lr0', '10.7.0.0/16'],
  ['lr-route-add', 'lr0', '10.7.0.0/16', '10.0.0.3', 'lr0-sw0', 'extra'],
  ['--if-exists', 'lr-route-add', 'lr0', '10.7.0.0/16', '10.0.0.3'],
  // After "--" ovn-nbctl checks options per command (before it, getopt complains first).
  ['--', '--policy', 'lr-route-add', 'lr0', '10.7.0.0/16', '10.0.0.3'],
  ['--', '--ecmp=yes', 'lr-route-add', 'lr0', '10.7.0.0/16', '10.0.0.3'],
  ['--bfd=', 'lr-route-add', 'lr0', '10.7.0.0/16', '10.0.0.3'],
  ['--ecmp', 'lr-nat-add', 'lr0', 'snat', '172.16.0.99', '10.9.0.0/24'],
  ['--if-exists', 'dhcp-options-del', '11111111-2222-3333-4444-555555555555'],
  ['--may-exist', 'lb-list'],
  ['lr-route-list', 'lr0'],
  ['--route-table=rtb1', 'lr-route-list', 'lr0'],
  // Routing policies.
  ['lr-policy-add', 'lr0', '100', 'ip4.src == 10.0.0.0/24', 'reroute', '10.0.0.20,10.0.0.21', 'pkt_mark=5', 'k=v'],
  ['lr-policy-add', 'lr0', '100', 'ip4.src == 10.0.1.0/24', 'allow'],
  ['lr-policy-add', 'lr0', '200', 'ip6.dst == fd09::/64', 'reroute', 'fd00::20'],
  ['lr-policy-add', 'lr0', '50', 'ip4.dst == 8.8.8.8', 'drop'],
  ['lr-policy-add', 'lr0', '100', 'ip4.src == 10.0.0.0/24', 'drop'],
  ['--may-exist', 'lr-policy-add', 'lr0', '100', 'ip4.src == 10.0.0.0/24', 'drop'],
  ['lr-policy-add', 'lr0', '40000', 'ip4', 'drop'],
  ['lr-policy-add', 'lr0', '10', 'ip4', 'forward'],
  ['lr-policy-add', 'lr0', '10', 'ip4', 'reroute'],
  ['lr-policy-add', 'lr0', '10', 'ip4', 'reroute', '10.0.0.1,fd00::1'],
  ['lr-policy-add', 'lr0', '10', 'ip4', 'reroute', '10.0.0.256'],
  ['lr-policy-add', 'lr0', '10', 'ip4', 'allow', 'pkt_mark='],
  ['lr-policy-list', 'lr0'],
  ['lr-policy-del', 'lr0', '50', 'ip4.dst == 8.8.8.8'],
  ['lr-policy-del', 'lr0', 'x1'],
  ['--if-exists', 'lr-policy-del', 'lr0', '0b7f0e4c-0000-4000-8000-000000000000'],
  ['lr-policy-del', 'lr0', '0b7f0e4c-0000-4000-8000-000000000000'],
  ['lr-policy-list', 'lr0'],
  // NAT.
  ['lr-nat-add', 'lr0', 'snat', '172.16.0.10', '10.0.0.0/24'],
  ['lr-nat-add', 'lr0', 'dnat', '172.16.0.11', '10.0.0.11'],
  ['lr-nat-add', 'lr0', 'dnat_and_snat', '172.16.0.12', '10.0.0.12', 'sw0-p1', '00:00:00:00:01:12'],
  ['--stateless', 'lr-nat-add', 'lr0', 'dnat_and_snat', '172.16.0.13', '10.0.0.13'],
  ['--portrange', 'lr-nat-add', 'lr0', 'dnat_and_snat', '172.16.0.14', '10.0.0.14', '1000-2000'],
  ['lr-nat-add', 'lr0', 'snat', '172.16.0.10', '10.0.0.0/24'],
  ['lr-nat-add', 'lr0', 'snat', '172.16.0.15', '10.0.0.0/24'],
  ['--may-exist', 'lr-nat-add', 'lr0', 'snat', '172.16.0.10', '10.0.0.0/24'],
  ['lr-nat-add', 'lr0', 'dnat_and_snat', '172.16.0.13', '10.0.0.99'],
  ['lr-nat-add', 'lr0', 'snat', 'fd10::1', 'fd00::/64'],
  ['lr-nat-add', 'lr0', 'pat', '172.16.0.16', '10.0.0.16'],
  ['lr-nat-add', 'lr0', 'dnat', '172.16.0.300', '10.0.0.16'],
  ['lr-nat-add', 'lr0', 'dnat', '172.16.0.16', '10.0.0.0/24'],
  ['lr-nat-add', 'lr0', 'snat', '172.16.0.16', 'fd00::/64'],
  ['lr-nat-add', 'lr0', 'dnat', '172.16.0.16', '10.0.0.16', 'sw0-p1', '00:00:00:00:01:16'],
  ['lr-nat-add', 'lr0', 'dnat_and_snat', '172.16.0.16', '10.0.0.16', 'sw0-p1', 'zz:00:00:00:01:16'],
  ['lr-nat-add', 'lr0', 'dnat_and_snat', '172.16.0.16', '10.0.0.16', 'nope', '00:00:00:00:01:16'],
  ['lr-nat-add', 'lr0', 'dnat_and_snat', '172.16.0.16', '10.0.0.16', '1000-2000'],
  ['--portrange', 'lr-nat-add', 'lr0', 'dnat_and_snat', '172.16.0.16', '10.0.0.16', '2000-1000'],
  ['--stateless', 'lr-nat-add', 'lr0', 'snat', '172.16.0.16', '10.0.0.16'],
  ['lr-nat-list', 'lr0'],
  // NAT on distributed gateway ports: with two, the port must be named or follow from the IP.
  ['lr-add', 'lr1'],
  ['lrp-add', 'lr1', 'lr1-gw1', '00:00:00:00:fe:01', '172.17.1.1/24'],
  ['lrp-add', 'lr1', 'lr1-gw2', '00:00:00:00:fe:02', '172.17.2.1/24'],
  ['create', 'HA_Chassis_Group', 'name=hg1'],
  ['create', 'HA_Chassis_Group', 'name=hg2'],
  (uuid) => ['set', 'Logical_Router_Port', 'lr1-gw1', `ha_chassis_group=${uuid('HA_Chassis_Group(hg1)')}`],
  ['lr-nat-add', 'lr1', 'snat', '172.17.9.9', '10.1.0.0/24'],
  (uuid) => ['set', 'Logical_Router_Port', 'lr1-gw2', `ha_chassis_group=${uuid('HA_Chassis_Group(hg2)')}`],
  ['lr-nat-add', 'lr1', 'snat', '172.17.9.10', '10.1.1.0/24'],
  ['lr-nat-add', 'lr1', 'snat', '172.17.1.10', '10.1.2.0/24'],
  ['--gateway-port=lr1-gw2', 'lr-nat-add', 'lr1', 'dnat_and_snat', '172.17.2.10', '10.1.2.10'],
  ['--gateway-port=lr0-ext', 'lr-nat-add', 'lr1', 'snat', '172.17.2.11', '10.1.3.0/24'],
  ['--gateway-port=lr1-nope', 'lr-nat-add', 'lr1', 'snat', '172.17.2.11', '10.1.3.0/24'],
  ['lr-nat-list', 'lr1'],
  ['lr-nat-del', 'lr1', 'dnat_and_snat', '172.17.2.10', 'lr1-gw1'],
  ['lr-nat-del', 'lr1', 'dnat_and_snat', 'lr1-gw2'],
  ['lr-nat-list', 'lr1'],
  ['lr-nat-del', 'lr0', 'dnat', '172.16.0.11'],
  ['lr-nat-del', 'lr0', 'snat', '10.0.0.0/24'],
  ['lr-nat-del', 'lr0', 'pat'],
  ['lr-nat-del', 'lr0', 'snat', 'nonsense', 'lr0-ext'],
  ['lr-nat-list', 'lr0'],
  // Load balancers.
  ['lb-add', 'lb0', '30.0.0.10:80', '10.0.0.11:80,10.0.0.12:8080'],
  ['lb-add', 'lb0', '30.0.0.10:443', '10.0.0.11:443', 'udp'],
  ['lb-add', 'lb-v6', '[fd30::10]:80', '[fd00::11]:80,[fd00::12]:80', 'sctp'],
  ['lb-add', 'lb-noport', '30.0.0.20', '10.0.0.21,10.0.0.22'],
  ['lb-add', 'lb0', '30.0.0.10:80', '10.0.0.13:80'],
  ['--may-exist', 'lb-add', 'lb0', '30.0.0.10:80', '10.0.0.13:80'],
  ['lb-add', 'lb1', '30.0.0.30', '10.0.0.31', 'tcp'],
  ['lb-add', 'lb1', '30.0.0.30:80', '10.0.0.31', 'tcp'],
  ['lb-add', 'lb1', '30.0.0.30', '10.0.0.31:80'],
  ['lb-add', 'lb1', '30.0.0.300', '10.0.0.31'],
  ['lb-add', 'lb1', '30.0.0.30', 'fd00::31'],
  ['lb-add', 'lb1', '30.0.0.30:80', '10.0.0.31:80', 'icmp'],
  ['lb-add', 'lb-a-rather-long-name-here', '30.0.0.40:8080', '10.0.0.41:8080,10.0.0.42:8080'],
  ['ls-lb-add', 'sw0', 'lb0'],
  ['ls-lb-add', 'sw0', 'lb-v6'],
  ['ls-lb-add', 'sw0', 'lb0'],
  ['--may-exist', 'ls-lb-add', 'sw0', 'lb0'],
  ['ls-lb-add', 'sw0', 'lb-nope'],
  ['ls-lb-add', 'sw-nope', 'lb0'],
  ['lr-lb-add', 'lr0', 'lb-noport'],
  ['lr-lb-add', 'lr0', 'lb-a-rather-long-name-here'],
  // Template load balancers: variables for the VIP, port and backends; a literal port; IPv6;
  // explicit backends (bracketed for IPv6 with a port); forms a template cannot take.
  ['--template', 'lb-add', 'lbt', '^VIP:^PORT', '^B1:^P1,^B2:8080', 'tcp'],
  ['--template', 'lb-add', 'lbt', '^VIP2', '^BACKENDS'],
  ['--template', 'lb-add', 'lbt', '^VIP2', '^OTHER'],
  ['--may-exist', '--template', 'lb-add', 'lbt', '^VIP2', '^OTHER'],
  ['--template', 'lb-add', 'lbt6', '^VIP6:8080', '^B6', 'tcp', 'ipv6'],
  ['--template', 'lb-add', 'lbt6e', '^VIP6:8080', '[fd00::1]:80,fd00::2:81', 'udp', 'ipv6'],
  ['--template', 'lb-add', 'lbt-bad', '^A:^B:^C', '^X'],
  ['--template', 'lb-add', 'lbt-bad', ':', '^X'],
  ['--template', 'lb-add', 'lbt-bad', '^V:80', 'a:b:c,10.0.0.1'],
  ['--template', 'lb-add', 'lbt-bad', '^V', '^X', 'udp'],
  ['lb-list', 'lbt'],
  // Load balancer groups count in ls-lb-list and lr-lb-list.
  ['lb-add', 'lb1', '30.0.0.31:8080', '10.0.0.31:8080,10.0.0.32:8080', 'udp'],
  (uuid) => ['create', 'Load_Balancer_Group', 'name=lbg1', `load_balancer=[${uuid('Load_Balancer(lb1)')}]`],
  (uuid) => ['set', 'Logical_Switch', 'sw0', `load_balancer_group=[${uuid('Load_Balancer_Group(lbg1)')}]`],
  (uuid) => ['set', 'Logical_Router', 'lr0', `load_balancer_group=[${uuid('Load_Balancer_Group(lbg1)')}]`],
  ['lb-list'],
  ['lb-list', 'lb0'],
  ['ls-lb-list', 'sw0'],
  ['lr-lb-list', 'lr0'],
  ['lr-lb-del', 'lr0', 'lb0'],
  ['--if-exists', 'lr-lb-del', 'lr0', 'lb0'],
  ['lr-lb-del', 'lr0', 'lb-noport'],
  ['lb-del', 'lb0', '30.0.0.10:443'],
  ['lb-del', 'lb0', '30.0.0.99:443'],
  ['lb-del', 'lb-gone'],
  ['lb-del', 'lb-v6'],
  ['ls-lb-list', 'sw0'],
  ['lr-lb-list', 'lr0'],
  ['lb-list'],
  // Records as JSON tables (--format=json), from list and find. One record each, and no set of
  // several UUIDs: ovn-nbctl lists records in its IDL's hash order and sets in UUID order,
  // which differ from run to run once UUIDs are replaced by names.
  ['--format=json', 'list', 'Load_Balancer', 'lb-noport'],
  ['--format=json', 'find', 'Logical_Router_Static_Route', 'policy=src-ip'],
  ['--format=json', 'list', 'Logical_Switch_Port', 'sw0-p1'],
  ['--format=json', 'find', 'Logical_Switch', 'name=nope'],
  // DHCP options.
  ['dhcp-options-create', '10.0.0.0/24', 'owner=test', 'bare'],
  ['dhcp-options-create', 'fd00::/64'],
  ['dhcp-options-create', '10.0.0.0/33'],
  ['dhcp-options-list'],
  (uuid) => ['dhcp-options-set-options', uuid('DHCP_Options(10.0.0.0/24)'), 'lease_time=3600', 'router=10.0.0.1', 'server_id=10.0.0.1', 'server_mac=c0:ff:ee:00:00:01', 'dns_server={8.8.8.8,8.8.4.4}', 'mtu=1442', 'domain_name="ovn.org"'],
  (uuid) => ['dhcp-options-get-options', uuid('DHCP_Options(10.0.0.0/24)')],
  (uuid) => ['lsp-set-dhcpv4-options', 'sw0-p1', uuid('DHCP_Options(10.0.0.0/24)')],
  (uuid) => ['lsp-set-dhcpv4-options', 'sw0-p2', uuid('DHCP_Options(fd00::/64)')],
  ['lsp-set-dhcpv4-options', 'sw0-p2', '11111111-2222-3333-4444-555555555555'],
  ['lsp-get-dhcpv4-options', 'sw0-p1'],
  ['lsp-get-dhcpv4-options', 'sw0-p2'],
  (uuid) => ['lsp-set-dhcpv6-options', 'sw0-p2', uuid('DHCP_Options(fd00::/64)')],
  (uuid) => ['lsp-set-dhcpv6-options', 'sw0-p1', uuid('DHCP_Options(10.0.0.0/24)')],
  ['lsp-set-dhcpv6-options', 'sw0-p1', '11111111-2222-3333-4444-555555555555'],
  ['lsp-get-dhcpv6-options', 'sw0-p2'],
  ['lsp-get-dhcpv6-options', 'sw0-p1'],
  ['lsp-set-dhcpv6-options', 'sw0-p2'],
  ['lsp-get-dhcpv6-options', 'sw0-p2'],
  (uuid) => ['lsp-set-dhcpv6-options', 'sw0-p2', uuid('DHCP_Options(fd00::/64)')],
  ['dhcp-options-get-options', 'not-a-uuid'],
  (uuid) => ['dhcp-options-del', uuid('DHCP_Options(fd00::/64)')],
  ['dhcp-options-del', '11111111-2222-3333-4444-555555555555'],
  ['dhcp-options-list'],
  // Two records with one name: ovn-nbctl wants a UUID.
  ['create', 'Logical_Router', 'name=lrdup'],
  ['create', 'Logical_Router', 'name=lrdup'],
  ['lr-route-list', 'lrdup'],
  ['create', 'Logical_Switch', 'name=swdup'],
  ['create', 'Logical_Switch', 'name=swdup'],
  ['ls-lb-list', 'swdup'],
  // A route with a BFD session: listed with "bfd", and deleting the route deletes the session.
  ['create', 'BFD', 'logical_port=lr0-sw0', 'dst_ip=10.0.0.50'],
  ['lr-route-add', 'lr0', '10.10.0.0/16', '10.0.0.50'],
  (uuid) => ['set', 'Logical_Router_Static_Route', uuid('Logical_Router_Static_Route(10.10.0.0/16)'), `bfd=${uuid('BFD(10.0.0.50)')}`],
  ['lr-route-list', 'lr0'],
  ['lr-route-del', 'lr0', '10.10.0.0/16'],
  ['--bfd', 'lr-route-add', 'lr0', '10.11.0.0/16', '10.0.0.51'],
  ['--bfd', 'lr-route-add', 'lr0', '10.11.0.0/16', '10.0.0.51', 'lr0-sw0'],
  ['--bfd', 'lr-route-add', 'lr0', '10.12.0.0/16', '10.0.0.51', 'lr0-sw0'],
  ['--bfd=not-a-uuid', 'lr-route-add', 'lr0', '10.13.0.0/16', '10.0.0.51'],
  (uuid) => [`--bfd=${uuid('BFD(10.0.0.51)')}`, 'lr-route-add', 'lr0', '10.13.0.0/16', '10.0.0.52'],
  ['--bfd', 'lr-route-add', 'lr0', '10.14.0.0/16', 'discard'],
  ['--bfd', '--may-exist', 'lr-route-add', 'lr0', '10.8.0.0/16', '10.0.0.96', 'lr0-ext'],
  ['lr-route-list', 'lr0'],
  // Deletions of routes.
  ['lr-route-del', 'lr0', '10.2.0.0/16', '10.0.0.13'],
  ['--policy=src-ip', 'lr-route-del', 'lr0'],
  ['lr-route-del', 'lr0', '10.9.0.0/16'],
  ['--if-exists', 'lr-route-del', 'lr0', '10.9.0.0/16'],
  ['lr-route-del', 'lr0', 'bogus'],
  ['lr-route-del', 'lr0', '10.1.0.0/16', '10.0.0.11', 'lr0-sw0'],
  ['--route-table=rtb1', 'lr-route-del', 'lr0', '0.0.0.0/0'],
  ['lr-route-list', 'lr0'],
  // Records in the other output formats (table, csv, html, list without headings, bare cells),
  // with --columns choosing and ordering columns. As for json: one record each, no set of
  // several UUIDs, and no _uuid of a record whose label is its UUID. Widths are those of the
  // real UUIDs, which both sides pad alike before UUIDs are relabelled.
  ['lsp-set-addresses', 'sw0-p1', '00:00:00:00:00:01 10.0.0.5', 'unknown'],
  // Entries ovn-nbctl refuses: no leading MAC, and an IP another port of the switch has.
  ['lsp-set-addresses', 'sw0-p2', 'zz:zz'],
  ['lsp-set-addresses', 'sw0-p2', 'unknown', '00-00-00-00-00-02'],
  ['lsp-set-addresses', 'sw0-p2', '00:00:00:00:00:02 10.0.0.5/24'],
  // The dynamic forms: ovn-nbctl takes "dynamic " and anything an IPv6 address may start with.
  ['lsp-set-addresses', 'sw0-p2', 'dynamic 10.0.0.77', '0a:00:00:00:00:02 dynamic', 'dynamic fd00::9', 'dynamic 10.0.0.78 fd00::10', 'dynamic bogus'],
  ['lsp-get-addresses', 'sw0-p2'],
  ['lsp-set-addresses', 'sw0-p2', 'dynamic xyz'],
  ['lsp-set-addresses', 'sw0-p2', 'dynamic'],
  ['lsp-set-addresses', 'sw0-p2'],
  // Global options with their values as separate words, and short ones.
  ['--format', 'csv', '--data', 'bare', '--columns=name,vips,protocol', 'find', 'Load_Balancer', 'name=lb1'],
  ['-f', 'table', 'list', 'Load_Balancer', 'lb-noport'],
  ['-fcsv', '-dbare', 'list', 'Load_Balancer', 'lb-noport'],
  ['set', 'Logical_Switch_Port', 'sw0-p2', 'enabled=false', 'external_ids:note="a, \\"b\\""', 'external_ids:plain=word', 'external_ids:n=42'],
  ['list', 'Logical_Switch_Port', 'sw0-p2'],
  ['--format=table', 'list', 'Logical_Switch_Port', 'sw0-p1'],
  ['--format=table', 'list', 'Load_Balancer', 'lb-noport'],
  ['--format=csv', 'list', 'Load_Balancer', 'lb-noport'],
  ['--format=csv', 'list', 'Logical_Switch_Port', 'sw0-p2'],
  ['--format=csv', '--data=bare', '--columns=name,vips,protocol', 'find', 'Load_Balancer', 'name=lb1'],
  ['--format=table', '--columns=name,dhcpv4_options,addresses,tag_request,type,external_ids', 'list', 'Logical_Switch_Port', 'sw0-p1'],
  ['--format=table', '--columns=external_ids,name,tag_request', 'list', 'Logical_Switch_Port', 'sw0-p2'],
  ['--format=table', '--no-headings', '--columns=priority,match,action,nexthops,options', 'find', 'Logical_Router_Policy', 'priority=200'],
  ['--columns=Match,PRIO,options,nexthops', 'find', 'Logical_Router_Policy', 'priority=100', 'action=reroute'],
  ['--no-headings', '--columns=name,external_ids,tag_request', 'list', 'Logical_Switch_Port', 'sw0-p2'],
  ['--bare', '--columns=name,networks,mac', 'list', 'Logical_Router_Port', 'lr0-sw0'],
  ['--bare', 'list', 'Logical_Router_Port', 'lr0-ext'],
  ['--bare', '--columns=external_ids,addresses', 'list', 'Logical_Switch_Port', 'sw0-p2'],
  ['--bare', '--format=table', '--columns=ip_prefix,nexthop,bfd,policy', 'find', 'Logical_Router_Static_Route', 'ip_prefix=10.13.0.0/16'],
  ['--format=table', '--bare', '--columns=ip_prefix,nexthop,bfd,policy', 'find', 'Logical_Router_Static_Route', 'ip_prefix=10.13.0.0/16'],
  ['--format=table', '--columns=_uuid,ip_prefix,nexthop,bfd,output_port,route_table', 'find', 'Logical_Router_Static_Route', 'ip_prefix=10.13.0.0/16'],
  ['--format=table', '--data=json', '--columns=name,vips,protocol,_uuid', 'list', 'Load_Balancer', 'lb0'],
  ['--data=json', '--columns=name,networks,peer', 'list', 'Logical_Router_Port', 'lr0-sw0'],
  ['--format=table', '--max-column-width=8', '--columns=name,vips', 'list', 'Load_Balancer', 'lb1'],
  ['--format=html', '--columns=name,vips,protocol', 'list', 'Load_Balancer', 'lb1'],
  ['--format=table', 'list', 'Load_Balancer_Group', 'lbg1'],
  ['--format=table', '--columns=name,ha_chassis_group,networks', 'list', 'Logical_Router_Port', 'lr1-gw1'],
  ['--format=json', '--pretty', '--columns=name,networks,ipv6_ra_configs', 'list', 'Logical_Router_Port', 'lr0-sw0'],
  ['--format=table', 'find', 'Logical_Switch', 'name=nope'],
  ['--format=csv', '--columns=name,ports', 'find', 'Logical_Switch', 'name=nope'],
  ['--format=csv', '--no-headings', 'find', 'Logical_Switch', 'name=nope'],
  ['get', 'Logical_Switch_Port', 'sw0-p1', 'dhcpv4_options', 'tag_request', 'addresses', 'type'],
  ['get', 'Logical_Switch_Port', 'sw0-p2', 'external_ids', 'external_ids:note', 'external_ids:n', 'tag_request'],
  ['--columns=ta', 'list', 'Logical_Switch_Port', 'sw0-p1'],
  ['--columns=bogus', 'list', 'Logical_Switch_Port', 'sw0-p1'],
  ['--columns=', 'list', 'Logical_Switch_Port', 'sw0-p1'],
  ['--columns=name', '--columns=type', 'list', 'Logical_Switch_Port', 'sw0-p1'],
  ['--format=yaml', 'ls-list'],
  ['--data=yaml', 'list', 'Load_Balancer', 'lb1'],
  // Switch ports: types, options, port security, listing, deletion.
  ['lsp-add', 'sw0', 'sw0-ln'],
  ['lsp-set-type', 'sw0-ln', 'localnet'],
  ['lsp-set-options', 'sw0-ln', 'network_name=phys', 'k=v'],
  ['lsp-get-type', 'sw0-ln'],
  ['lsp-get-options', 'sw0-ln'],
  ['lsp-set-type', 'sw0-ln', 'bogus'],
  ['lsp-set-options', 'sw0-ln', 'novalue'],
  ['lsp-get-options', 'sw0-ln'],
  ['lsp-set-options', 'sw0-ln', 'network_name=phys', 'novalue', 'a=b=c'],
  ['lsp-get-options', 'sw0-ln'],
  ['lsp-set-port-security', 'sw0-p1', '00:00:00:00:00:01 10.0.0.5', '00:00:00:00:00:02'],
  ['lsp-get-port-security', 'sw0-p1'],
  ['lsp-set-port-security', 'sw0-p1'],
  ['lsp-get-port-security', 'sw0-p1'],
  ['lsp-get-up', 'sw0-p1'],
  ['lsp-set-enabled', 'sw0-p1', 'disabled'],
  ['lsp-get-enabled', 'sw0-p1'],
  ['lsp-set-enabled', 'sw0-p1', 'maybe'],
  ['lsp-set-enabled', 'sw0-p1', 'enabled'],
  ['lsp-get-enabled', 'sw0-p1'],
  ['lsp-set-enabled', 'sw0-p1', 'disabled'],
  ['--if-exists', 'lsp-set-enabled', 'sw0-p1', 'enabled'],
  ['lsp-list', 'sw0'],
  ['lsp-list', 'nosw'],
  ['lsp-add', 'sw0', 'sw0-tmp'],
  ['lsp-del', 'sw0-tmp'],
  ['lsp-del', 'sw0-tmp'],
  ['--if-exists', 'lsp-del', 'sw0-tmp'],
  ['lsp-add', 'nosw', 'x'],
  ['lsp-add', 'sw0', 'sw0-p1'],
  ['--may-exist', 'lsp-add', 'sw0', 'sw0-p1'],
  ['--may-exist', 'lsp-add', 'sw1', 'sw0-p1'],
  // Address sets, port groups and ACLs on both.
  // (as-add and as-del are ours: ovn-nbctl 23.03 has no such commands.)
  ['create', 'Address_Set', 'name=as1', 'addresses="10.0.0.1","10.0.0.2"'],
  ['create', 'Address_Set', 'name=as2'],
  // NAT limited to, or exempting, the external addresses of an address set.
  ['lr-nat-add', 'lr0', 'snat', '172.16.0.200', '10.0.9.0/24'],
  ['lr-nat-add', 'lr0', 'dnat', '172.16.0.201', '10.0.9.5'],
  ['lr-nat-update-ext-ip', 'lr0', 'snat', '10.0.9.0/24', 'as1'],
  ['--is-exempted', 'lr-nat-update-ext-ip', 'lr0', 'dnat', '172.16.0.201', 'as2'],
  ['lr-nat-update-ext-ip', 'lr0', 'dnat_and_snat', '172.16.0.201', 'as1'],
  ['lr-nat-update-ext-ip', 'lr0', 'snat', '10.0.8.0/24', 'as1'],
  ['lr-nat-update-ext-ip', 'lr0', 'snat', 'bogus', 'as1'],
  ['lr-nat-update-ext-ip', 'lr0', 'pat', '10.0.9.0/24', 'as1'],
  ['lr-nat-update-ext-ip', 'lr0', 'snat', '10.0.9.0/24', 'nope'],
  ['lr-nat-update-ext-ip', 'nope', 'snat', '10.0.9.0/24', 'as1'],
  ['lr-nat-update-ext-ip', 'lr0', 'snat', '10.0.9.0/24'],
  ['--if-exists', 'lr-nat-update-ext-ip', 'lr0', 'snat', '10.0.9.0/24', 'as1'],
  // comment: words for the reader, alone or among other commands.
  ['comment'],
  ['comment', 'a', 'few', 'words'],
  ['ls-add', 'cm0', '--', 'comment', 'made', 'cm0', '--', 'lsp-add', 'cm0', 'cm0-p1'],
  ['lsp-list', 'cm0'],
  ['--if-exists', 'comment', 'x'],
  ['--may-exist', 'pg-add', 'pg9'],
  ['pg-add', 'pg1', 'sw0-p1'],
  ['pg-add', 'pg1'],
  ['pg-add', 'pg2', 'nope'],
  ['pg-set-ports', 'pg1', 'sw0-p1', 'sw0-p2'],
  ['pg-set-ports', 'pg1', 'nope'],
  ['pg-set-ports', 'pgx', 'sw0-p1'],
  ['acl-add', 'sw0', 'from-lport', '1001', 'ip4.src == $as1', 'allow-related'],
  ['--log', '--severity=warning', '--name=a1', '--meter=m1', 'acl-add', 'sw0', 'to-lport', '1002', 'tcp.dst == 80', 'drop'],
  ['--type=port-group', 'acl-add', 'pg1', 'to-lport', '1003', 'outport == @pg1 && ip4', 'allow'],
  ['acl-add', 'pg1', 'to-lport', '1004', 'ip4', 'allow'],
  ['--type=switch', 'acl-add', 'pg1', 'to-lport', '1004', 'ip4', 'allow'],
  ['acl-add', 'sw0', 'from-lport', '1001', 'ip4.src == $as1', 'allow-related'],
  ['--may-exist', 'acl-add', 'sw0', 'from-lport', '1001', 'ip4.src == $as1', 'allow-related'],
  ['acl-add', 'sw0', 'sideways', '1', 'ip4', 'allow'],
  ['acl-add', 'sw0', 'from-lport', '40000', 'ip4', 'allow'],
  ['acl-add', 'sw0', 'from-lport', '10', 'ip4', 'accept'],
  ['acl-add', 'sw0', 'from-lport', 'x', 'ip4', 'allow'],
  ['--apply-after-lb', 'acl-add', 'sw0', 'from-lport', '1005', 'ip4', 'allow-stateless'],
  ['--label=1234', 'acl-add', 'sw0', 'from-lport', '1006', 'ip6', 'reject'],
  ['acl-add', 'sw0', 'from-lport', '1007', 'ip6', 'pass'],
  ['--label=-1', 'acl-add', 'sw0', 'from-lport', '1007', 'ip6', 'allow'],
  ['--label=4294967296', 'acl-add', 'sw0', 'from-lport', '1007', 'ip6', 'allow'],
  ['--label=7', '--log', '--name=n7', '--apply-after-lb', 'acl-add', 'sw0', 'from-lport', '1007', 'ip6', 'allow-related'],
  ['--severity=loud', 'acl-add', 'sw0', 'to-lport', '1008', 'udp', 'allow'],
  ['--severity=info', 'acl-add', 'sw0', 'to-lport', '1008', 'udp', 'allow'],
  ['--meter=m2', 'acl-add', 'sw0', 'to-lport', '1009', 'udp', 'allow'],
  ['--type=bogus', 'acl-add', 'sw0', 'to-lport', '1010', 'udp', 'allow'],
  ['--if-exists', 'acl-del', 'sw0'],
  ['acl-list', 'sw0'],
  ['acl-list', 'pg1'],
  ['acl-list', 'nosw'],
  ['acl-del', 'sw0', 'to-lport', '1002', 'tcp.dst == 80'],
  ['acl-del', 'sw0', 'to-lport', '1002'],
  ['acl-del', 'sw0', 'sideways'],
  ['acl-del', 'sw0', 'from-lport', '1001'],
  ['acl-list', 'sw0'],
  ['acl-del', 'sw0', 'to-lport'],
  ['acl-list', 'sw0'],
  ['acl-del', 'pg1'],
  ['acl-list', 'pg1'],
  ['pg-del', 'pg1'],
  ['pg-del', 'pg1'],
  ['--if-exists', 'pg-del', 'pg1'],
  ['destroy', 'Address_Set', 'as2'],
  ['--if-exists', 'destroy', 'Address_Set', 'as2'],
  ['destroy', 'Address_Set', 'as2'],
  ['get', 'Address_Set', 'as2', 'name'],
  ['--if-exists', 'get', 'Address_Set', 'as2', 'name'],
  ['create', 'Address_Set', 'name=as3'],
  ['--all', 'destroy', 'Address_Set', 'as3'],
  ['destroy', 'Address_Set'],
  ['--all', 'destroy', 'Address_Set'],
  ['create', 'Address_Set', 'name=as1', 'addresses="10.0.0.1"'],
  // The generic commands' own options (db-ctl-base's): any other is refused, a global one too
  // after "--", and --columns (list's and find's) even before the command.
  ['--', '--bare', 'list', 'Address_Set', 'as1'],
  ['--columns=name', 'get', 'Address_Set', 'as1', 'name'],
  ['--', '--id=@a', 'set', 'Address_Set', 'as1', 'external_ids:k=v'],
  ['--', '--all', 'add', 'Address_Set', 'as1', 'addresses', '10.0.0.2'],
  ['--', '--may-exist', 'remove', 'Address_Set', 'as1', 'addresses', '10.0.0.1'],
  ['--', '--format=csv', 'clear', 'Address_Set', 'as1', 'external_ids'],
  ['--', '--if-exists', 'create', 'Address_Set', 'name=as9'],
  ['--', '--id=@a', 'destroy', 'Address_Set', 'as1'],
  ['--', '--if-exists', 'find', 'Address_Set', 'name=as1'],
  ['--', '--timeout=5', 'wait-until', 'Address_Set', 'as1'],
  ['--if-exists', 'wait-until', 'Address_Set', 'as1'],
  ['--columns=name', 'ls-list'],
  ['--if-exists', '--', '--if-exists', 'destroy', 'Address_Set', 'nosuch'],
  // getopt takes the word after --id as its value; after the command, an option is an argument.
  ['--id', 'get', 'Address_Set', 'as1'],
  ['list', 'Address_Set', '--bare'],
  // ... and each one they have still works.
  ['--', '--if-exists', '--columns=name,addresses', 'list', 'Address_Set', 'nosuch', 'as1'],
  ['list', 'Address_Set', 'as1', 'nosuch'],
  ['--', '--columns=name', 'find', 'Address_Set', 'name=as1'],
  ['--', '--if-exists', 'get', 'Address_Set', 'nosuch', 'name'],
  ['--', '--id=@a', 'get', 'Address_Set', 'as1', 'name'],
  ['--', '--id=a', 'get', 'Address_Set', 'as1', 'name'],
  ['--if-exists', '--id=@a', 'get', 'Address_Set', 'as1', 'name'],
  ['--', '--if-exists', 'set', 'Address_Set', 'nosuch', 'external_ids:k=v'],
  ['--', '--if-exists', 'add', 'Address_Set', 'nosuch', 'addresses', '10.0.0.2'],
  ['--', '--if-exists', 'remove', 'Address_Set', 'nosuch', 'addresses', '10.0.0.1'],
  ['--', '--if-exists', 'clear', 'Address_Set', 'nosuch', 'addresses'],
  ['--', '--id=@a', 'create', 'Address_Set', 'name=as-named'],
  ['--id=a5a5a5a5-0000-4000-8000-000000000001', 'create', 'Address_Set', 'name=as-given'],
  ['create', 'Address_Set'],
  ['--', '--if-exists', 'destroy', 'Address_Set', 'nosuch', 'as-named'],
  ['--all', '--if-exists', 'destroy', 'Address_Set'],
  // Deletions of switches and routers that are not there.
  ['ls-del', 'nosw'],
  ['--if-exists', 'ls-del', 'nosw'],
  ['lr-del', 'nolr'],
  ['lrp-del', 'nolrp'],
  ['ls-list'],
  ['lr-list'],
  // Options: duplicates on purpose, and options that no command or not this one has.
  ['--add-duplicate', 'ls-add', 'sw0'],
  ['--add-duplicate', 'lr-add', 'lr0'],
  ['--may-exist', 'ls-add'],
  ['--add-duplicate', 'lr-add'],
  ['--add-duplicate', '--may-exist', 'ls-add', 'sw9'],
  ['ls-del', 'sw0'],
  ['--if-exists', 'lr-del', 'lr0'],
  ['--if-exists', 'ls-add', 'x'],
  ['--may-exist', 'ls-del', 'x'],
  ['--may-exist', 'lsp-del', 'x'],
  ['--if-exists', 'lsp-add', 'sw1', 'x'],
  ['--bogus', 'ls-list'],
  ['--bogus=3', 'lsp-list', 'sw1'],
  ['--tier=2', 'acl-add', 'sw1', 'to-lport', '1', 'udp', 'allow'],
  ['--may-exist', 'lr-list'],
  ['--if-exists', 'lrp-add', 'lr1', 'p', '00:00:00:00:00:01', '10.0.0.1/24'],
  ['--may-exist', 'lrp-del', 'p'],
  ['--if-exists', 'show'],
  ['--may-exist', 'lsp-set-addresses', 'sw0-p1', 'unknown'],
  ['--if-exists', 'acl-list', 'sw1'],
  ['ls-list'],
  ['show', 'sw1'],
  ['show', 'nope'],
  // Keys with escaped and quoted separators.
  ['set', 'Logical_Switch_Port', 'sw0-p1', 'external_ids:neutron\\:port_name=web', 'external_ids:"a=b"=c', 'external_ids:k=v=w'],
  ['get', 'Logical_Switch_Port', 'sw0-p1', 'external_ids', 'external_ids:neutron\\:port_name', 'external_ids:"a=b"'],
  ['set', 'Logical_Switch_Port', 'sw0-p1', 'external_ids:x\\'],
  ['set', 'Logical_Switch_Port', 'sw0-p1', 'external_ids:"x=1'],
  ['get', 'Logical_Switch_Port', 'sw0-p1', 'external_ids'],
  // add and remove: mutations of sets and maps.
  ['add', 'Logical_Router', 'lr1', 'external_ids', 'a=1', 'b=2'],
  ['add', 'Logical_Router', 'lr1', 'external_ids', 'a=9', '{c=3,d=4}'],
  ['get', 'Logical_Router', 'lr1', 'external_ids'],
  ['remove', 'Logical_Router', 'lr1', 'external_ids', 'a', 'b=3', 'c=3'],
  ['get', 'Logical_Router', 'lr1', 'external_ids'],
  ['add', 'Logical_Router_Port', 'lr1-gw1', 'networks', '"172.17.3.1/24"', '172.17.4.1/24,172.17.5.1/24'],
  ['remove', 'Logical_Router_Port', 'lr1-gw1', 'networks', '"172.17.1.1/24"', '[172.17.4.1/24]'],
  ['get', 'Logical_Router_Port', 'lr1-gw1', 'networks'],
  ['--if-exists', 'remove', 'Logical_Router', 'nope', 'external_ids', 'a'],
  ['remove', 'Logical_Router', 'nope', 'external_ids', 'a'],
  ['--if-exists', 'add', 'Logical_Router', 'nope', 'external_ids', 'a=1'],
  ['add', 'Logical_Router', 'lr1', 'name', 'x'],
  ['remove', 'Logical_Router', 'lr1', 'name', 'lr1'],
  ['remove', 'Logical_Router', 'lr1', 'nocolumn', 'x'],
  // Gateway chassis: rows named PORT-CHASSIS, listed by priority and then name, both descending.
  ['lr-add', 'lr5'],
  ['lrp-add', 'lr5', 'lr5-gw', '00:00:00:00:fd:01', '172.18.0.1/24'],
  ['lrp-add', 'lr5', 'lr5-in', '00:00:00:00:fd:02', '10.5.0.1/24'],
  ['lrp-set-gateway-chassis', 'lr5-gw', 'ch1', '10'],
  ['lrp-set-gateway-chassis', 'lr5-gw', 'ch2'],
  ['lrp-set-gateway-chassis', 'lr5-gw', 'ch3', '10'],
  ['--may-exist', 'lrp-set-gateway-chassis', 'lr5-gw', 'ch2', '20'],
  ['lrp-set-gateway-chassis', 'lr5-gw', 'ch4', '32768'],
  ['lrp-set-gateway-chassis', 'lr5-nope', 'ch4', 'x'],
  ['lrp-set-gateway-chassis', 'lr5-gw'],
  ['lrp-get-gateway-chassis', 'lr5-gw'],
  ['lrp-get-gateway-chassis', 'lr5-in'],
  // A chassis name that begins the argument matches, as in ovn-nbctl.
  ['lrp-del-gateway-chassis', 'lr5-gw', 'ch1x'],
  ['lrp-del-gateway-chassis', 'lr5-gw', 'ch9'],
  ['--if-exists', 'lrp-del-gateway-chassis', 'lr5-gw', 'ch9'],
  ['lrp-get-gateway-chassis', 'lr5-gw'],
  // HA chassis groups.
  ['ha-chassis-group-add', 'hg5'],
  ['ha-chassis-group-add', 'hg5'],
  ['ha-chassis-group-add-chassis', 'hg5', 'ch1', '10'],
  ['ha-chassis-group-add-chassis', 'hg5', 'ch2', '20'],
  ['ha-chassis-group-add-chassis', 'hg5', 'ch1', '30'],
  ['ha-chassis-group-add-chassis', 'hg5', 'ch3', '40000'],
  ['ha-chassis-group-add-chassis', 'hg-nope', 'ch3', 'x'],
  ['ha-chassis-group-set-chassis-prio', 'hg5', 'ch2', '5'],
  ['ha-chassis-group-set-chassis-prio', 'hg5', 'ch9', '5'],
  ['ha-chassis-group-add-chassis', 'hg5', 'ch3', '1'],
  ['ha-chassis-group-remove-chassis', 'hg5', 'ch3'],
  ['ha-chassis-group-remove-chassis', 'hg5', 'ch3'],
  ['ha-chassis-group-add', 'hg6'],
  ['ha-chassis-group-list'],
  ['--if-exists', 'ha-chassis-group-del', 'hg6'],
  ['ha-chassis-group-del', 'hg6'],
  ['ha-chassis-group-del', '11111111-2222-3333-4444-555555555555'],
  ['ha-chassis-group-del', 'hg1'],
  // Router port settings (ovn-nbctl 23.03 has no lrp-get-options).
  ['lrp-set-enabled', 'lr5-in', 'DISABLED'],
  ['lrp-get-enabled', 'lr5-in'],
  ['lrp-get-enabled', 'lr5-gw'],
  ['lrp-set-enabled', 'lr5-in', 'off'],
  ['lrp-set-options', 'lr5-in', 'a=1', 'a=2', 'bare', 'c='],
  ['lrp-set-redirect-type', 'lr5-in', 'Bridged'],
  ['lrp-get-redirect-type', 'lr5-in'],
  ['lrp-get-redirect-type', 'lr5-gw'],
  ['lrp-set-redirect-type', 'lr5-nope', 'tunnel'],
  ['lrp-set-redirect-type', 'lr5-in', 'tunnel'],
  // Switch port getters; directions and states by ovn-nbctl's looser rules.
  ['ls-add', 'sw5'],
  ['lsp-add', 'sw5', 'sw5-vm'],
  ['lsp-add', 'sw5', 'sw5-c1', 'sw5-vm', '42'],
  ['lsp-get-ls', 'sw5-c1'],
  ['lsp-get-parent', 'sw5-c1'],
  ['lsp-get-parent', 'sw5-vm'],
  ['lsp-get-tag', 'sw5-vm'],
  ['lsp-set-enabled', 'sw5-vm', 'Disabled'],
  ['acl-add', 'sw5', 'to', '10', 'ip4', 'allow'],
  // ovn-nbctl 23.03 takes a sixth argument and ignores it.
  ['acl-add', 'sw5', 'from-lport', '11', 'ip4', 'drop', 'sixth'],
  ['acl-add', 'sw5', 'from-lport', '12', 'ip4', 'drop', 'sixth', 'seventh'],
  ['acl-list', 'sw5'],
  // QoS rules.
  ['qos-add', 'sw5', 'to-lport', '100', 'ip4', 'rate=100', 'burst=50', 'dscp=10'],
  ['qos-add', 'sw5', 'f', '200', 'ip6', 'dscp=5'],
  ['qos-add', 'sw5', 'to-lport', '100', 'ip4', 'dscp=3'],
  ['--may-exist', 'qos-add', 'sw5', 'to-lport', '100', 'ip4', 'dscp=3'],
  ['qos-add', 'sw5', 'to-lport', '101', 'ip4', 'burst=10'],
  ['qos-add', 'sw5', 'to-lport', '101', 'ip4', 'rate=1', 'dscp=64'],
  ['qos-add', 'sw5', 'to-lport', '101', 'ip4', 'color=red'],
  ['qos-add', 'sw5', 'sideways', '101', 'ip4', 'dscp=1'],
  ['qos-add', 'sw-nope', 'to', 'x', 'ip4', 'dscp=1'],
  ['qos-add', 'sw5', 'to-lport', '1', 'tcp', 'rate=5', 'dscp=1'],
  ['qos-list', 'sw5'],
  ['qos-del', 'sw5', 'from-lport', '200', 'ip6'],
  ['qos-del', 'sw5', '11111111-2222-3333-4444-555555555555'],
  ['qos-del', 'sw5', '11111111-2222-3333-4444-555555555555', '1'],
  ['qos-del', 'sw5', 'to', '1'],
  (uuid) => ['qos-del', 'sw5', uuid('QoS(tcp)')],
  ['qos-list', 'sw5'],
  ['qos-del', 'sw5', 'to'],
  ['qos-add', 'sw5', 'from-lport', '300', 'udp', 'dscp=7'],
  // Meters.
  ['meter-add', 'm1', 'drop', '100', 'kbps'],
  ['meter-add', 'm1', 'drop', '100', 'kbps'],
  ['--fair', 'meter-add', 'm0', 'drop', '10', 'pktps', '5'],
  ['--may-exist', 'meter-add', 'm1', 'drop', '200', 'pktps', '30'],
  ['meter-add', '__x', 'drop', '1', 'kbps'],
  ['meter-add', 'm2', 'reject', '1', 'kbps'],
  ['meter-add', 'm2', 'drop', '0', 'kbps'],
  ['meter-add', 'm2', 'drop', '1', 'mbps'],
  ['meter-add', 'm2', 'drop', '1', 'kbps', '-1'],
  ['meter-add', 'm2', 'drop', '1', 'kbps', '12x'],
  ['set', 'Meter', 'm2', 'fair=false'],
  ['meter-list'],
  ['meter-del', 'nope'],
  ['meter-del', 'm0'],
  // Static MAC bindings: looked up by the IP as given, stored normalized.
  ['static-mac-binding-list'],
  ['static-mac-binding-add', 'lr5-in', '10.5.0.5', '00:00:00:00:00:05'],
  ['static-mac-binding-add', 'lr5-in', '10.5.0.5', '00:00:00:00:00:06'],
  ['--may-exist', 'static-mac-binding-add', 'lr5-in', '10.5.0.5', '00:00:00:00:00:06'],
  ['static-mac-binding-add', 'lr5-in', 'fd05::0:5', '0A:00:00:00:00:07'],
  ['static-mac-binding-add', 'lr5-in', 'fd05::5', '00:00:00:00:00:07'],
  ['static-mac-binding-add', 'lr5-in', 'fd05::0:5', '00:00:00:00:00:07'],
  ['static-mac-binding-add', 'lr5-gw', '10.5.0.300', '00:00:00:00:00:07'],
  ['static-mac-binding-add', 'lr5-nope', '10.5.0.3', 'zz'],
  ['static-mac-binding-add', 'lr5-gw', '172.18.0.9', 'zz'],
  ['static-mac-binding-add', 'lr5-gw', '172.18.0.9', '00:00:00:00:00:09'],
  ['static-mac-binding-list'],
  ['static-mac-binding-del', 'lr5-in', 'fd05::0:5'],
  ['static-mac-binding-del', 'lr5-in', 'fd05::9'],
  ['--if-exists', 'static-mac-binding-del', 'lr5-in', 'fd05::9'],
  // init, connections and SSL, on NB_Global.
  ['init'],
  // "." names a table's only row; a table of several has none by that name.
  ['set', 'NB_Global', '.', 'options:note=dot'],
  ['get', 'NB_Global', '.', 'options:note'],
  ['get', 'Logical_Switch', '.', 'name'],
  ['get-connection'],
  ['set-connection', 'ptcp:6641', 'pssl:6642:127.0.0.1'],
  ['--inactivity-probe=30000', 'set-connection', 'ptcp:6643', 'foo:1'],
  ['get-connection'],
  ['set-connection', 'ptcp:1', 'ptcp:1'],
  ['--inactivity-probe=abc', 'set-connection', 'tcp:1.2.3.4:5'],
  ['del-connection'],
  ['get-connection'],
  ['--inactivity-probe=5000', 'set-connection', 'ptcp:6641'],
  ['get-ssl'],
  ['set-ssl', '/k', '/c'],
  ['set-ssl', '/k', '/c', '/ca'],
  ['get-ssl'],
  ['--bootstrap', 'set-ssl', '/k2', '/c2', '/ca2', 'TLSv1.2', 'HIGH'],
  ['get-ssl'],
  ['del-ssl'],
  ['get-ssl'],
  ['set-ssl', '/k3', '/c3', '/ca3', 'TLSv1.3'],
  // Several commands in one transaction ("CMD -- CMD"): each finds the rows the ones before it
  // added, they commit together, and one that fails leaves the database as it was. (A command
  // does not read a set the ones before it added to here: ovn-nbctl shows it as it was before
  // the transaction, ovnts with the additions; nbctl.test.ts covers ours.)
  ['ls-add', 'mc0', '--', 'lsp-add', 'mc0', 'mc0-p1', '--', 'lsp-set-addresses', 'mc0-p1', '00:00:00:00:0c:01 10.12.0.1'],
  ['lsp-list', 'mc0'],
  // A record named by its UUID in upper case, which OVS reads as the same UUID.
  (uuid) => ['lsp-get-addresses', uuid('Logical_Switch_Port(mc0-p1)').toUpperCase()],
  ['ls-add', 'mc1', '--', 'lsp-add', 'mc1', 'mc0-p1'],
  ['list', 'Logical_Switch', 'mc1'],
  ['lsp-add', 'mc0', 'mc0-p2', '--', 'lsp-del', 'mc0-p2', '--', 'lsp-list', 'mc0'],
  ['create', 'Address_Set', 'name=mcas', 'addresses=10.12.0.9', '--', 'get', 'Address_Set', 'mcas', 'addresses'],
  ['lr-add', 'mcr', '--', 'lrp-add', 'mcr', 'mcr-p', '00:00:00:00:0c:10', '10.12.0.254/24', '--', 'lsp-add', 'mc0', 'mc0-r', '--', 'lsp-set-type', 'mc0-r', 'router',
    '--', 'lsp-set-options', 'mc0-r', 'router-port=mcr-p', '--', 'lsp-set-addresses', 'mc0-r', 'router', '--', 'lr-route-add', 'mcr', '0.0.0.0/0', '10.12.0.1'],
  ['lr-route-list', 'mcr'],
  ['--may-exist', 'ls-add', 'mc0', '--', '--may-exist', 'lsp-add', 'mc0', 'mc0-p1', '--', 'lsp-get-addresses', 'mc0-p1'],
  ['ls-add', 'mc2', '--', '--', 'ls-add', 'mc3', '--'],
  ['ls-add', 'mc4', '--', '--may-exist'],
  ['ls-add', 'mc4', '--', 'nope-command'],
  ['ls-add', 'mc4', '--', 'ls-add', 'mc4'],
  ['ls-add', 'mc4', '--', '--add-duplicate', 'ls-add', 'mc4', '--', 'ls-del', 'mc4'],
  ['ls-add', 'mc4', '--', '--wait=sb', 'ls-add', 'mc5'],
  ['ls-add', 'wu0', '--', 'wait-until', 'Logical_Switch', 'wu0', '--', 'wait-until', 'Logical_Switch', 'mc0', 'name=mc0', '--', 'ls-add', 'wu1'],
  ['wait-until', 'Logical_Switch', 'mc0', 'nope=1', '--', 'ls-add', 'wu2'],
  ['ls-add', 'mc4', '--', 'lsp-add', 'mc4', 'mc4-p', '--', 'lsp-add', 'mc4', 'mc4-q', '--', 'ls-del', 'mc4', '--', 'lsp-list', 'mc4'],
  ['ls-list'],
  ['acl-add', 'mc0', 'to-lport', '100', 'ip4', 'allow', '--', 'acl-add', 'mc0', 'from-lport', '100', 'ip4', 'drop'],
  ['acl-list', 'mc0'],
  // Row ids: --id=@name on create and get names a row for the later commands.
  ['--', '--id=@a', 'create', 'ACL', 'direction=to-lport', 'priority=7', 'match="ip4.src==10.12.0.7"', 'action=drop', '--', 'add', 'Logical_Switch', 'mc0', 'acls', '@a'],
  ['acl-list', 'mc0'],
  ['add', 'Logical_Switch', 'mc0', 'acls', '@nope'],
  ['ls-add', 'mc6', '--', 'add', 'Logical_Switch', 'mc6', 'acls', '@nope'],
  ['--id=@p', 'get', 'Logical_Switch_Port', 'mc0-p1', '--', 'create', 'Port_Group', 'name=pgmc', 'ports=@p'],
  ['--id=@p', 'get', 'Logical_Switch_Port', 'mc0-p1', '--', '--id=@p', 'create', 'Address_Set', 'name=d0'],
  ['--id=@d', 'create', 'Address_Set', 'name=d1', '--', '--id=@d', 'create', 'Address_Set', 'name=d2'],
  ['--id=@d', 'create', 'Address_Set', 'name=d3', '--', 'set', 'Address_Set', 'd3', 'addresses=10.0.0.3'],
  ['--id=d', 'create', 'Address_Set', 'name=d4'],
  ['--id=@z', 'create', 'Address_Set', 'name=d5'],
  ['list', 'Port_Group', 'pgmc'],
  ['add', 'Logical_Switch', 'mc0', 'acls', '@f', '--', '--id=@f', 'create', 'ACL', 'direction=from-lport', 'priority=8', 'match="ip4.src==10.12.0.8"', 'action=drop'],
  ['add', 'Logical_Switch', 'mc0', 'acls', '@g', '--', '--id=@g', 'get', 'ACL', '11111111-2222-3333-4444-555555555555'],
  ['set', 'Logical_Switch', 'mc0', 'other_config:x=y', '--', 'add', 'Logical_Switch', 'mc0', 'acls', '@h'],
  ['acl-list', 'mc0'],
  // Port mirrors: type and filter read by their first letter, the sink kept as given, listed by name.
  ['mirror-add', 'mir1', 'gre', '5', 'to-lport', '10.0.0.5'],
  ['mirror-add', 'mir1', 'gre', '5', 'to-lport', '10.0.0.5'],
  ['--may-exist', 'mirror-add', 'mir1', 'erspan', '6', 'from-lport', '10.0.0.6'],
  ['mirror-add', 'mir0', 'erspanx', ' +7', 'fxx', 'fd00::05'],
  ['mirror-add', 'mir2', 'g', '-7', 't', '1.1.1.1'],
  ['mirror-add', 'mir3', 'x', '1', 't', '1.1.1.1'],
  ['mirror-add', 'mir3', 'g', '1x', 't', '1.1.1.1'],
  ['mirror-add', 'mir3', 'g', '99999999999999999999', 't', '1.1.1.1'],
  ['mirror-add', 'mir3', 'g', '', 't', '1.1.1.1'],
  ['mirror-add', 'mir3', 'g', '1', 'x', '1.1.1.1'],
  ['mirror-add', 'mir3', 'g', '1', 't', '1.1.1.01'],
  ['mirror-add', 'mir3', 'g', '1', 't', 'fd00::g'],
  ['mirror-add', 'mir3', 'g', '1', 't'],
  ['--if-exists', 'mirror-add', 'mir3', 'g', '1', 't', '1.1.1.1'],
  ['mirror-list'],
  ['lsp-attach-mirror', 'mc0-p1', 'mir1'],
  ['lsp-attach-mirror', 'mc0-p1', 'mir1'],
  ['--may-exist', 'lsp-attach-mirror', 'mc0-p1', 'mir1'],
  ['lsp-attach-mirror', 'mc0-p1', 'mir0'],
  ['lsp-attach-mirror', 'sw5-vm', 'mir2'],
  ['lsp-attach-mirror', 'sw5-vm', 'mir0'],
  ['lsp-attach-mirror', 'nope', 'mir1'],
  ['lsp-attach-mirror', 'mc0-p1', 'nope'],
  ['lsp-attach-mirror', 'mc0-p1', '11111111-2222-3333-4444-555555555555'],
  (uuid) => ['lsp-attach-mirror', 'sw5-c1', uuid('Mirror(mir1)')],
  ['lsp-detach-mirror', 'mc0-p1', 'mir2'],
  ['lsp-detach-mirror', 'mc0-p1', 'mir0'],
  ['lsp-detach-mirror', 'nope', 'mir0'],
  ['lsp-detach-mirror', 'mc0-p1', 'nope'],
  ['--may-exist', 'lsp-detach-mirror', 'mc0-p1', 'mir0'],
  ['mirror-del', 'nope'],
  ['mirror-del', 'mir2'],
  ['mirror-list'],
  ['mirror-add', 'mir4', 'gre', '4', 'to-lport', '10.0.0.4', '--', 'lsp-attach-mirror', 'sw5-c1', 'mir4'],
  ['mirror-del', 'mir4', 'extra'],
  ['mirror-del'],
  ['mirror-list'],
  ['mirror-add', 'mir5', 'erspan', '0', 'from-lport', '10.0.0.50'],
  ['mirror-add', 'mir6', 'gre', '60', 'to-lport', 'fd00::60'],
  ['lsp-attach-mirror', 'mc0-p1', 'mir5'],
  ['lsp-attach-mirror', 'sw5-vm', 'mir6'],
  ['get', 'Logical_Switch_Port', 'mc0-p1', 'mirror_rules'],
  // Forwarding groups: a group is in the switch of its ports, which must have the name given.
  ['fwd-group-add', 'fg1', 'sw5', '10.5.0.100', '00:00:00:00:05:64', 'sw5-vm'],
  ['fwd-group-list'],
  ['fwd-group-add', 'fg1', 'mc0', '10.12.0.100', '00:00:00:00:0c:64', 'mc0-p1'],
  ['fwd-group-add', 'fg2', 'sw5', '10.5.0.101', '00:00:00:00:05:65'],
  ['fwd-group-add', 'fg2', 'sw5'],
  ['fwd-group-add', 'fg2', 'nope', '10.5.0.101', '00:00:00:00:05:65', 'sw5-vm'],
  ['fwd-group-add', 'fg2', 'sw0', '10.5.0.101', '00:00:00:00:05:65', 'sw5-vm'],
  ['fwd-group-add', 'fg2', 'sw5', 'fd00::1', '00:00:00:00:05:65', 'sw5-vm'],
  ['fwd-group-add', 'fg2', 'sw5', '10.5.0.101/32', '00:00:00:00:05:65', 'sw5-vm'],
  ['fwd-group-add', 'fg2', 'sw5', '10.5.0.101', '00:00:00:00:05', 'sw5-vm'],
  ['fwd-group-add', 'fg2', 'sw5', '10.5.0.101', '00:00:00:00:05:65', 'mc0-p1'],
  ['fwd-group-add', 'fg2', 'sw5', '10.5.0.101', '00:00:00:00:05:65', 'sw5-vm', 'nope'],
  (uuid) => ['fwd-group-add', 'fg2', uuid('Logical_Switch(sw5)'), '10.5.0.101', '00:00:00:00:05:65', 'sw5-vm'],
  ['--may-exist', 'fwd-group-add', 'fg2', 'sw5', '10.5.0.101', '00:00:00:00:05:65', 'sw5-vm'],
  ['--liveness', 'fwd-group-add', 'fg2', 'mc0', '10.12.0.100', '00:00:00:00:0c:64', 'mc0-r', 'mc0-p1', 'mc0-r'],
  ['fwd-group-list', 'sw5'],
  ['fwd-group-list', 'mc0'],
  ['fwd-group-list', 'nope'],
  ['fwd-group-list', 'sw5', 'mc0'],
  (uuid) => ['fwd-group-list', uuid('Logical_Switch(sw5)')],
  ['fwd-group-del', 'nope'],
  ['--if-exists', 'fwd-group-del', 'nope'],
  ['--liveness', 'fwd-group-del', 'fg1'],
  (uuid) => ['fwd-group-del', uuid('Forwarding_Group(fg1)')],
  ['fwd-group-list', 'sw5'],
  ['fwd-group-add', 'fwd-group-with-a-long-name', 'sw5', '10.5.0.102', '0:0:0:0:5:66', 'sw5-c1', 'sw5-vm'],
  ['fwd-group-list', 'sw5'],
  // Control plane protection: policies made by copp-add, meters named and not looked up.
  ['copp-add', 'cp1', 'arp', 'm1'],
  ['copp-add', 'cp1', 'bogus', 'm1'],
  ['copp-add', 'cp1', 'icmp4-error', 'm2'],
  ['copp-add', 'cp1', 'bfd', 'm2'],
  ['copp-add', 'cp1', 'reject', 'm-none'],
  ['copp-add', 'cp1', 'arp', 'm2'],
  ['copp-add', 'cp1', 'dns', 'm1'],
  ['copp-add', 'cp1', 'nd-ra-opts', 'm1'],
  ['copp-add', 'cp1', 'arp'],
  ['copp-list', 'cp1'],
  ['copp-list', 'nope'],
  ['copp-add', '11111111-2222-3333-4444-555555555555', 'dns', 'm1'],
  (uuid) => ['copp-add', uuid('Copp(cp1)'), 'igmp', 'm1'],
  ['copp-add', 'cp2', 'svc-monitor', 'm1'],
  ['copp-del', 'cp1', 'bogus'],
  ['copp-del', 'nope', 'bogus'],
  ['copp-del', 'nope', 'arp'],
  ['copp-del', 'nope'],
  ['copp-del', 'cp1', 'dns'],
  ['copp-del', 'cp1', 'nd-na'],
  ['copp-list', 'cp1'],
  ['copp-del', 'cp2', 'svc-monitor'],
  ['copp-list', 'cp2'],
  ['copp-add', 'cp2', 'tcp-reset', 'm2'],
  ['ls-copp-add', 'cp1', 'sw5'],
  ['ls-copp-add', 'nope', 'sw5'],
  ['ls-copp-add', 'nope', 'nosw'],
  ['ls-copp-add', 'cp1', 'sw0'],
  ['lr-copp-add', 'cp2', 'lr5'],
  ['lr-copp-add', 'cp2', 'nolr'],
  ['lr-copp-add', 'nope', 'lr5'],
  ['ls-copp-add', 'cp2', 'mc0'],
  ['--if-exists', 'copp-del', 'cp2'],
  ['copp-del', 'cp2'],
  ['get', 'Logical_Switch', 'mc0', 'copp'],
  ['lr-copp-add', 'cp1', 'lr5'],
  ['get', 'Logical_Router', 'lr5', 'copp'],
  ['copp-add', 'cp3', 'event-elb', 'm1', '--', 'ls-copp-add', 'cp3', 'mc0', '--', 'copp-list', 'cp3'],
  // --dry-run: every command runs and prints, and nothing is committed.
  ['--dry-run', 'ls-add', 'dry0'],
  ['--dry-run', 'ls-add', 'dry1', '--', 'lsp-add', 'dry1', 'dry1-p', '--', 'lsp-set-addresses', 'dry1-p', '00:00:00:00:0d:01'],
  ['--dry-run', 'ls-del', 'mc0', '--', 'ls-add', 'dry2'],
  ['--dry-run', 'lsp-add', 'nope-switch', 'dry3'],
  ['--dry-run', 'lsp-get-addresses', 'mc0-p1'],
  ['--dry-run', '--oneline', 'lsp-get-addresses', 'mc0-p1', '--', 'ls-list'],
  ['ls-list'],
  // Options before the command may be shortened as getopt allows: to a prefix that names one
  // option, or several command options that take the same kind of value (the first wins).
  ['--dry', 'ls-add', 'dry4'],
  ['--may', 'ls-add', 'sw0'],
  ['--may-', 'lsp-add', 'sw0', 'sw0-p1'],
  ['--if', 'ls-del', 'nope'],
  ['--no-w', '--onel', 'ls-list'],
  ['--fo=csv', '--col=name', 'find', 'Logical_Switch', 'name=sw0'],
  ['--a', 'ls-add', 'abbr0'],
  ['--e', 'ls-list'],
  ['--in=3', 'ls-list'],
  ['--te', 'ls-list'],
  ['--no', 'ls-list'],
  ['--i', 'ls-list'],
  ['--bo', 'ls-list'],
  ['--c', 'ls-list'],
  ['--p=1', 'ls-list'],
  ['--ma=1', 'ls-list'],
  ['--max', 'ls-list'],
  ['--dry=1', 'ls-list'],
  ['--may=1', 'ls-list'],
  ['--wai'],
  ['--', '--may', 'ls-add', 'sw0'],
  ['--if', '--', '--if-exists', 'ls-del', 'nope'],
  ['ls-list'],
  // --oneline: one line per command, its newlines and backslashes escaped; list and find as ever.
  ['--oneline', 'ls-list'],
  ['--oneline', 'ls-add', 'one0', '--', 'lsp-list', 'mc0', '--', 'lsp-get-addresses', 'mc0-p1', '--', 'ls-del', 'one0'],
  ['--oneline', 'set', 'Logical_Switch', 'mc0', 'external_ids:k="a\\\\b"', '--', 'get', 'Logical_Switch', 'mc0', 'external_ids', '--', 'list', 'Address_Set', 'mcas'],
  ['--oneline', '--format=csv', 'find', 'Address_Set', 'name=mcas', '--', 'acl-list', 'mc0'],
  // wait-until on conditions that already hold, and its errors (the waiting is in nbctl.test.ts).
  ['wait-until', 'Logical_Router_Port', 'lr5-in', 'enabled=false', 'options:a=1', 'options:zz{=}[]', 'networks>"10"', 'mac!=""'],
  ['wait-until', 'Nope', 'x'],
  ['wait-until', 'Logical_Router', 'lr5', 'bogus=1'],
  ['wait-until', 'Logical_Router', 'lr5', 'name'],
  ['wait-until', 'Logical_Router', 'lr5', 'name:x=1'],
  ['--if-exists', 'wait-until', 'Logical_Router', 'lr5'],
];

/** UUIDs of no row, used to ask for rows that do not exist. */
const noRow = ['11111111-2222-3333-4444-555555555555', '0b7f0e4c-0000-4000-8000-000000000000'];
/** UUIDs in text, replaced by labels. */
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;

/**
 * Short labels for UUIDs: Table(name), or the cidr, ip_prefix or dst_ip in place of a name, else
 * Table#UUID (never equal across sides).
 */
function shortLabels(dump: Dump, into: Map<string, string>): void {
  for (const [table, rows] of dump) {
    for (const r of rows) {
      const id = (r._uuid as [string, string])[1];
      const name = [r.name, r.cidr, r.ip_prefix, r.dst_ip, r.chassis_name, r.match, r.target].find((v): v is string => typeof v === 'string' && v !== '');
      into.set(id, name === undefined ? `${table}#${id}` : `${table}(${name})`);
    }
  }
}

/** Every row as text with its references replaced by the referenced row's own text, per table. */
function canonical(dump: Dump): Map<string, string[]> {
  const rows = new Map<string, { table: string; row: Row }>();
  for (const [table, rs] of dump) for (const row of rs) rows.set((row._uuid as [string, string])[1], { table, row });
  const memo = new Map<string, string>();
  const label = (id: string): string => {
    const known = memo.get(id);
    if (known !== undefined) return known;
    const e = rows.get(id);
    const s = e === undefined ? 'dangling' : `${e.table}{${content(e.table, e.row)}}`;
    memo.set(id, s);
    return s;
  };
  const atom = (a: unknown): string => (Array.isArray(a) && a[0] === 'uuid' ? `<${label(String(a[1]))}>` : JSON.stringify(a));
  const value = (v: unknown): string => {
    if (Array.isArray(v) && v[0] === 'set') return `[${(v[1] as unknown[]).map(atom).sort().join(',')}]`;
    if (Array.isArray(v) && v[0] === 'map') return `{${(v[1] as [unknown, unknown][]).map(([k, x]) => `${atom(k)}=${atom(x)}`).sort().join(',')}}`;
    return `[${atom(v)}]`;
  };
  const content = (table: string, row: Row): string =>
    Object.keys(row)
      .filter((k) => k !== '_uuid' && k !== '_version' && !isProjected(table, k))
      .sort()
      .map((k) => `${k}=${value(withoutProjectedKeys(table, k, row[k]))}`)
      .join(' ');
  return new Map([...dump].map(([table, rs]) => [table, rs.map((r) => content(table, r)).sort()]));
}

function realSide(socket: string): Side & { close(): Promise<void> } {
  let client: Promise<JsonRpcClient> | undefined;
  const exec = (cmd: string, args: readonly string[]): Promise<{ code: number; stdout: string; stderr: string }> =>
    new Promise((resolve) => {
      execFile(cmd, args, { timeout: 30_000 }, (err, stdout, stderr) => resolve({ code: err === null ? 0 : typeof err.code === 'number' ? err.code : 1, stdout, stderr }));
    });
  return {
    async run(args) {
      const r = await exec('ovn-nbctl', [`--db=unix:${socket}`, '--timeout=20', ...args]);
      // No ovn-northd runs on this side. What it would write into every switch port's up (no
      // chassis binds any port here: true for a router port, false for the others;
      // tests/server/nb-writes-real-northd checks ours against the real ovn-northd's) is
      // written after each command, as our central writes it in the command's own entry.
      client ??= JsonRpcClient.connect({ path: socket });
      await (await client).request('transact', ['OVN_Northbound',
        { op: 'update', table: 'Logical_Switch_Port', where: [['type', '==', 'router'], ['up', '!=', ['set', [true]]]], row: { up: true } },
        { op: 'update', table: 'Logical_Switch_Port', where: [['type', '!=', 'router'], ['up', '!=', ['set', [false]]]], row: { up: false } },
      ]);
      // ovn-nbctl may log (socket_util's complaints about an address) before its own message.
      const last = r.stderr.trimEnd().split('\n').at(-1) ?? '';
      return { ok: r.code === 0, stdout: r.stdout, error: last.replace(/^ovn-nbctl: /, '') };
    },
    // The script dumps after every step: one select on an open connection, not an
    // ovsdb-client process each time (that was a third of this file's time).
    async dump() {
      client ??= JsonRpcClient.connect({ path: socket });
      const results = (await (await client).request('transact', ['OVN_Northbound', ...tables.map((table) => ({ op: 'select', table, where: [] }))])) as { rows: Row[] }[];
      return new Map(tables.map((table, i) => [table, results[i]?.rows ?? []]));
    },
    async close() {
      if (client !== undefined) await (await client).close();
    },
  };
}

function ovntsSide(nb: Nb, client: NorthboundClient): Side {
  return {
    async run(args) {
      try {
        return { ok: true, stdout: await runNbctl(nb, [...args]), error: '' };
      } catch (err) {
        if (!(err instanceof NbctlError)) throw err;
        return { ok: false, stdout: '', error: err.message };
      }
    },
    async dump() {
      const rows = await Promise.all(tables.map(async (table) => (await client.list(table)).rows));
      return new Map(tables.map((table, i) => [table, rows[i] ?? []]));
    },
  };
}

interface Trace {
  readonly steps: string[];
  readonly final: Map<string, string[]>;
}

/**
 * A failed transaction's message keeps only RFC 7047's error string: its details are the
 * server's wording (ovsdb-door-nbctl-diff compares servers), and they name a row that was
 * rolled back.
 */
function errorKind(message: string): string {
  const prefix = 'transaction error: ';
  if (!message.startsWith(prefix)) return message;
  return `${prefix}${(JSON.parse(message.slice(prefix.length)) as { error: string }).error}`;
}

/**
 * `show` with what follows from UUID values taken out: UUIDs masked, each switch's and router's
 * ports and NAT rules (ordered by their UUIDs) sorted as blocks, each port's gateway chassis
 * sorted, and the switches and routers sorted. A port's `tag:` line is dropped: northd writes
 * the tag (ovnts's central does; the real side has no ovn-northd).
 */
function normalizedShow(text: string): string {
  const entities: { head: string; blocks: string[][] }[] = [];
  // ovn-nbctl's show prints a port's gateway chassis in UUID order (see show in commands.ts).
  const chassisSorted = (line: string): string => line.replace(/^( {8}gateway chassis: \[)(.*)\]$/, (_, head: string, names: string) => `${head}${names.split(' ').sort().join(' ')}]`);
  for (const line of text.replace(UUID, 'UUID').split('\n').filter((l) => l !== '' && !/^ {8}tag: \d+$/.test(l)).map(chassisSorted)) {
    if (!line.startsWith(' ')) entities.push({ head: line, blocks: [] });
    else if (!line.startsWith('        ')) entities.at(-1)?.blocks.push([line]);
    else entities.at(-1)?.blocks.at(-1)?.push(line);
  }
  return entities
    .map((e) => [e.head, ...e.blocks.map((b) => b.join('\n')).sort()].join('\n'))
    .sort()
    .join('\n');
}

/**
 * ha-chassis-group-list with the order ovn-nbctl gives by chance taken out: it lists the groups
 * in its IDL's hash order and each group's chassis by UUID, so both are sorted here.
 */
function unordered(args: readonly string[], out: string): string {
  if (args.find((a) => !a.startsWith('--')) !== 'ha-chassis-group-list') return out;
  const groups = [...out.matchAll(/(\S[^\n]*\n)((?: {4}[^\n]*\n {4}priority \d+\n\n)*)\n/g)];
  // Text of another shape stays as it is, so that a difference in it shows.
  if (groups.map((g) => g[0]).join('') !== out) return out;
  return groups
    .map((g) => `${g[1] as string}${[...(g[2] as string).matchAll(/ {4}[^\n]*\n {4}priority \d+\n\n/g)].map((c) => c[0]).sort().join('')}\n`)
    .sort()
    .join('');
}

async function runScript(side: Side): Promise<Trace> {
  const labels = new Map<string, string>();
  shortLabels(await side.dump(), labels);
  const steps: string[] = [];
  for (const step of script) {
    // Rows are read for their labels only when a step needs them (a dump per step was most of
    // this file's time): before a step built from UUIDs, and after one that printed a new UUID.
    if (typeof step === 'function') shortLabels(await side.dump(), labels);
    const args =
      typeof step === 'function'
        ? step((label) => {
            const hit = [...labels].find(([, l]) => l === label);
            if (hit === undefined) throw new Error(`no row labelled ${label}`);
            return hit[0];
          })
        : step;
    const r = await side.run(args);
    if ((`${r.stdout}${r.error}`.match(UUID) ?? []).some((u) => !noRow.includes(u) && !labels.has(u.toLowerCase()))) shortLabels(await side.dump(), labels);
    const relabel = (s: string): string => s.replace(UUID, (u) => (noRow.includes(u) ? u : `<${labels.get(u.toLowerCase()) ?? 'unknown'}>`));
    const shown = unordered(args, relabel(r.stdout));
    steps.push(`$ nbctl ${relabel(args.join(' '))}\n${r.ok ? 'ok' : `error: ${relabel(errorKind(r.error))}`}\n${shown}`);
  }
  return { steps, final: canonical(await side.dump()) };
}

t.test('routes, policies, NAT, load balancers and DHCP options: ovnts nbctl and ovn-nbctl agree', { skip: haveTools ? false : 'ovn-nbctl, ovsdb-client, ovsdb-server or the NB schema is missing' }, async (t) => {
  const real = await startRealOvsdbServer({ dir: testdirAfterTeardowns(t), schemaPath: NB_SCHEMA });
  t.teardown(() => real.stop());
  const cluster = await startCentralCluster(testdirAfterTeardowns(t));
  t.teardown(() => cluster.stop());
  const nb = new Nb(cluster.members.map((m) => new NorthboundClient(m.address, 10_000)));
  t.teardown(() => nb.close());

  const realOne = realSide(real.socketPath);
  t.teardown(() => realOne.close());
  const theirs = await runScript(realOne);
  const ours = await runScript(ovntsSide(nb, cluster.members[0]!.client));
  for (const [i, step] of theirs.steps.entries()) t.equal(ours.steps[i], step, step.split('\n')[0] ?? step);
  for (const table of tables) t.same(ours.final.get(table), theirs.final.get(table), `final ${table} rows`);
  // show, of everything, of one router, and of a name two switches have (an error), once the
  // order UUIDs give is taken out.
  for (const args of [['show'], ['show', 'lr1'], ['show', 'swdup']]) {
    const [a, b] = [await realSide(real.socketPath).run(args), await ovntsSide(nb, cluster.members[0]!.client).run(args)];
    t.same([b.ok, b.error], [a.ok, a.error], `${args.join(' ')}: the same outcome (${a.ok ? 'ok' : a.error})`);
    t.equal(normalizedShow(b.stdout), normalizedShow(a.stdout), `${args.join(' ')}, normalized`);
  }
  t.match(normalizedShow((await realSide(real.socketPath).run(['show'])).stdout), /\n {4}nat UUID\n {8}external ip: "[^"]+"\n {8}external port\(s\): "1000-2000"/, 'show lists NAT rules, a port range among them');
  t.match((await realSide(real.socketPath).run(['show', 'lr1'])).stdout, /^router \S+ \(lr1\)\n/, 'show of one router shows it');

  // The script must exercise both outcomes and leave rows behind, or the comparison proves little.
  t.ok(theirs.steps.filter((s) => s.includes('\nerror: ')).length >= 20, 'many steps fail on the real side');
  t.ok(theirs.steps.some((s) => /^\$ nbctl lr-route-list lr0\nok\nIPv4 Routes\n/.test(s)), 'lr-route-list printed routes');
  t.ok(theirs.steps.some((s) => s.includes("error: Multiple logical routers named 'lrdup'.  Use a UUID.")), 'a duplicate name was refused');
  t.ok(theirs.steps.filter((s) => /^\$ nbctl [^\n]*\b(list|get|set|add|remove|clear|create|destroy|find|wait-until) [^\n]*\nerror: '\S+' command has no '--[a-z-]+' option\n/.test(s)).length >= 10, 'the generic commands refused options they do not have');
  t.ok(theirs.steps.some((s) => / 10\.0\.0\.50 dst-ip bfd\n/.test(s)), 'a route with BFD was listed');
  t.ok(theirs.steps.some((s) => s.startsWith('$ nbctl ls-lb-list sw0\nok\n') && s.includes('lb1 ')), "a load balancer group's member was listed");
  t.ok(theirs.steps.some((s) => s.startsWith('$ nbctl lrp-get-gateway-chassis lr5-gw\nok\nlr5-gw-ch2    20\nlr5-gw-ch3    10\nlr5-gw-ch1    10\n')), 'gateway chassis of one priority were listed by name, descending');
  t.ok(theirs.steps.some((s) => s.startsWith('$ nbctl ha-chassis-group-list\nok\n') && s.includes('priority 30\n')), 'an HA chassis group was listed with its chassis');
  for (const table of ['Logical_Router_Static_Route', 'Logical_Router_Policy', 'NAT', 'Load_Balancer', 'DHCP_Options', 'Gateway_Chassis', 'HA_Chassis', 'QoS', 'Meter', 'Meter_Band', 'Static_MAC_Binding', 'Connection', 'SSL', 'NB_Global']) {
    t.ok((theirs.final.get(table) ?? []).length > 0, `${table} ends with rows`);
  }
  const formatted = theirs.steps.filter((s) => /^\$ nbctl (--(format|data|bare|columns|no-headings|max-column-width|pretty)\S* )+(list|find) [^\n]*\nok\n./.test(s));
  t.ok(formatted.length >= 20, 'many list and find steps printed records in another format or with --columns');
  t.ok(theirs.steps.some((s) => s.startsWith('$ nbctl --format=csv list Load_Balancer lb-noport\nok\n') && s.includes('"{""30.0.0.20""=""10.0.0.21,10.0.0.22""}"')), 'a csv field was quoted');
  t.ok(theirs.steps.some((s) => s.startsWith('$ nbctl lsp-list mc0\nok\n') && s.includes('(mc0-p1)')), 'a transaction of several commands left its rows');
  t.ok(theirs.steps.some((s) => s.startsWith('$ nbctl ls-add mc4 -- ls-add mc4\nerror: mc4: a switch with this name already exists')), 'a command found the row the one before it in its transaction added');
  t.ok(theirs.steps.some((s) => s.startsWith('$ nbctl acl-list mc0\nok\n') && s.includes('to-lport     7 (ip4.src==10.12.0.7) drop')), 'a row created with --id=@name was referenced by a later command');
  t.ok(theirs.steps.some((s) => s.startsWith('$ nbctl list Port_Group pgmc\nok\n') && /\nports +: \[<Logical_Switch_Port\(mc0-p1\)>\]\n/.test(s)), 'a row named with get --id=@name was referenced by a later command');
  t.ok(theirs.steps.some((s) => s.startsWith('$ nbctl add Logical_Switch mc0 acls @nope\nerror: row id "@nope" is referenced but never created')), 'a row id never created is refused');
  t.ok(theirs.steps.some((s) => s.startsWith("$ nbctl --a ls-add abbr0\nerror: 'ls-add' command has no '--add-route' option")), 'an abbreviation named the first of several command options');
  t.ok(theirs.steps.some((s) => s.startsWith("$ nbctl --no ls-list\nerror: unrecognized option '--no'")), 'an ambiguous abbreviation was refused');
  const nat = (theirs.final.get('NAT') ?? []).find((r) => r.includes('external_ip=["172.16.0.201"]')) ?? '';
  t.match(nat.slice(nat.indexOf('exempted_ext_ips=')), /^exempted_ext_ips=\[<Address_Set\{[^<]*name=\["as2"\]/, 'lr-nat-update-ext-ip --is-exempted set exempted_ext_ips');
  t.notMatch(ours.steps.join('\n') + theirs.steps.join('\n'), /<unknown>/, 'every printed UUID is a known row');
});

t.test("the options before a command are ovn-nbctl's getopt table, in its order", { skip: haveTools ? false : 'ovn-nbctl is missing' }, async (t) => {
  // The order decides what an abbreviation names; ovn-nbctl prints its table with --options.
  const real = await new Promise<string>((resolve, reject) => execFile('ovn-nbctl', ['--options'], (err, stdout) => (err ? reject(err) : resolve(stdout))));
  t.equal(getoptTableListing(), real);
  // `ovnts nbctl --options` prints it as ovn-nbctl does, and runs nothing (so needs no cluster).
  const unreachable = { setWait: () => t.fail('--options waited'), printWaitTimes: () => undefined } as unknown as Parameters<typeof runNbctl>[0];
  t.equal(await runNbctl(unreachable, ['--options']), real, '--options');
  t.equal(await runNbctl(unreachable, ['--opt']), real, 'abbreviated, as getopt reads it');
});
