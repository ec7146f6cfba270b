// GENERATED from our OVN_Northbound 7.0.0 schema (ovsdb/schemas/) by
// ovsdb/schemas/gen-rows.ts. Do not edit: change the schema, then regenerate with
//   node --import tsx ovsdb/schemas/gen-rows.ts
// (tests/ovsdb/schemas.test.ts fails while this file is out of date).
//
// One interface per table, as the engine holds rows in memory: a column of exactly one atom
// is that atom; an optional column or a set is a readonly array, sorted, without duplicates;
// a map is a ReadonlyMap. Comments name the table a uuid refers to and the constraints the
// type cannot show.
import type { Row, Uuid } from './common.js';

/** The one row of global settings, and the counters that show how far NB changes have reached. */
export interface NB_Global extends Row {
  readonly name: string;
  readonly nb_cfg: number;
  readonly nb_cfg_timestamp: number;
  readonly sb_cfg: number;
  readonly sb_cfg_timestamp: number;
  readonly hv_cfg: number;
  readonly hv_cfg_timestamp: number;
  readonly external_ids: ReadonlyMap<string, string>;
  readonly connections: readonly Uuid[]; // Connection
  readonly ssl: readonly Uuid[]; // optional; SSL
  readonly options: ReadonlyMap<string, string>;
  readonly ipsec: boolean;
}

/** A remote (listening or active) on which the server offers this database; status is live. */
export interface Connection extends Row {
  readonly target: string;
  readonly max_backoff: readonly number[]; // optional; >= 1000
  readonly inactivity_probe: readonly number[]; // optional
  readonly other_config: ReadonlyMap<string, string>;
  readonly external_ids: ReadonlyMap<string, string>;
  readonly is_connected: boolean; // ephemeral
  readonly status: ReadonlyMap<string, string>; // ephemeral
}

/** The key, certificate and CA ovsdb-server uses for SSL remotes. */
export interface SSL extends Row {
  readonly private_key: string;
  readonly certificate: string;
  readonly ca_cert: string;
  readonly bootstrap_ca_cert: boolean;
  readonly ssl_protocols: string;
  readonly ssl_ciphers: string;
  readonly external_ids: ReadonlyMap<string, string>;
}

/** A logical L2 switch: its ports, and the ACLs, QoS, load balancers and DNS applied on it. */
export interface Logical_Switch extends Row {
  readonly name: string;
  readonly ports: readonly Uuid[]; // Logical_Switch_Port
  readonly acls: readonly Uuid[]; // ACL
  readonly qos_rules: readonly Uuid[]; // QoS
  readonly load_balancer: readonly Uuid[]; // Load_Balancer (weak)
  readonly load_balancer_group: readonly Uuid[]; // Load_Balancer_Group
  readonly dns_records: readonly Uuid[]; // DNS (weak)
  readonly copp: readonly Uuid[]; // optional; Copp (weak)
  readonly other_config: ReadonlyMap<string, string>;
  readonly external_ids: ReadonlyMap<string, string>;
  readonly forwarding_groups: readonly Uuid[]; // Forwarding_Group
}

/** A port on a logical switch: a VIF when type is empty, else router, localnet, localport... */
export interface Logical_Switch_Port extends Row {
  readonly name: string;
  readonly type: string;
  readonly options: ReadonlyMap<string, string>;
  readonly parent_name: readonly string[]; // optional
  readonly tag_request: readonly number[]; // optional; 0..4095
  readonly tag: readonly number[]; // optional; 1..4095
  readonly addresses: readonly string[];
  readonly dynamic_addresses: readonly string[]; // optional
  readonly port_security: readonly string[];
  readonly up: readonly boolean[]; // optional
  readonly enabled: readonly boolean[]; // optional
  readonly dhcpv4_options: readonly Uuid[]; // optional; DHCP_Options (weak)
  readonly dhcpv6_options: readonly Uuid[]; // optional; DHCP_Options (weak)
  readonly mirror_rules: readonly Uuid[]; // Mirror (weak)
  readonly ha_chassis_group: readonly Uuid[]; // optional; HA_Chassis_Group
  readonly external_ids: ReadonlyMap<string, string>;
}

/** A virtual IP and MAC on a switch, answered by whichever of its child ports are live. */
export interface Forwarding_Group extends Row {
  readonly name: string;
  readonly vip: string;
  readonly vmac: string;
  readonly liveness: boolean;
  readonly external_ids: ReadonlyMap<string, string>;
  readonly child_port: readonly string[]; // at least 1
}

/** DHCPv4 or DHCPv6 options for one CIDR, served by ovn-controller to the ports that use them. */
export interface DHCP_Options extends Row {
  readonly cidr: string;
  readonly options: ReadonlyMap<string, string>;
  readonly external_ids: ReadonlyMap<string, string>;
}

/** Host name to address records that ovn-controller answers for the switches that point here. */
export interface DNS extends Row {
  readonly records: ReadonlyMap<string, string>;
  readonly external_ids: ReadonlyMap<string, string>;
}

/** A named set of addresses, referred to as $name in ACL and policy matches. */
export interface Address_Set extends Row {
  readonly name: string;
  readonly addresses: readonly string[];
  readonly external_ids: ReadonlyMap<string, string>;
}

/** Named switch ports sharing ACLs: @name in matches, with address sets $name_ip4/6. */
export interface Port_Group extends Row {
  readonly name: string;
  readonly ports: readonly Uuid[]; // Logical_Switch_Port (weak)
  readonly acls: readonly Uuid[]; // ACL
  readonly external_ids: ReadonlyMap<string, string>;
}

/** A set of VIP to backends mappings, applied on the switches and routers that point here. */
export interface Load_Balancer extends Row {
  readonly name: string;
  readonly vips: ReadonlyMap<string, string>;
  readonly protocol: readonly ('sctp' | 'tcp' | 'udp')[]; // optional
  readonly health_check: readonly Uuid[]; // Load_Balancer_Health_Check
  readonly ip_port_mappings: ReadonlyMap<string, string>;
  readonly selection_fields: readonly ('eth_dst' | 'eth_src' | 'ip_dst' | 'ip_src' | 'tp_dst' | 'tp_src')[];
  readonly options: ReadonlyMap<string, string>;
  readonly external_ids: ReadonlyMap<string, string>;
}

/** A named bundle of load balancers, so one reference applies many of them to a datapath. */
export interface Load_Balancer_Group extends Row {
  readonly name: string;
  readonly load_balancer: readonly Uuid[]; // Load_Balancer (weak)
}

/** Health check settings for one VIP of a load balancer. */
export interface Load_Balancer_Health_Check extends Row {
  readonly vip: string;
  readonly options: ReadonlyMap<string, string>;
  readonly external_ids: ReadonlyMap<string, string>;
}

/** An access control rule (match, action, priority, direction) on a switch or port group. */
export interface ACL extends Row {
  readonly name: readonly string[]; // optional; at most 63 characters
  readonly priority: number; // 0..32767
  readonly direction: 'from-lport' | 'to-lport';
  readonly match: string;
  readonly action: 'allow' | 'allow-related' | 'allow-stateless' | 'drop' | 'reject';
  readonly log: boolean;
  readonly severity: readonly ('alert' | 'debug' | 'info' | 'notice' | 'warning')[]; // optional
  readonly meter: readonly string[]; // optional
  readonly label: number; // 0..4294967295
  readonly options: ReadonlyMap<string, string>;
  readonly external_ids: ReadonlyMap<string, string>;
}

/** A rule that marks DSCP on or rate-limits the traffic a match selects, on a switch. */
export interface QoS extends Row {
  readonly priority: number; // 0..32767
  readonly direction: 'from-lport' | 'to-lport';
  readonly match: string;
  readonly action: ReadonlyMap<'dscp', number>; // value 0..63
  readonly bandwidth: ReadonlyMap<'burst' | 'rate', number>; // value 1..4294967295
  readonly external_ids: ReadonlyMap<string, string>;
}

/** A named rate limiter (for ACL logging, CoPP and the like), made of bands. */
export interface Meter extends Row {
  readonly name: string;
  readonly unit: 'kbps' | 'pktps';
  readonly bands: readonly Uuid[]; // Meter_Band; at least 1
  readonly fair: readonly boolean[]; // optional
  readonly external_ids: ReadonlyMap<string, string>;
}

/** One band of a meter: what to do above which rate and burst. */
export interface Meter_Band extends Row {
  readonly action: 'drop';
  readonly rate: number; // 1..4294967295
  readonly burst_size: number; // 0..4294967295
  readonly external_ids: ReadonlyMap<string, string>;
}

/** Control plane protection: which meter limits each kind of packet punted to ovn-controller. */
export interface Copp extends Row {
  readonly name: string;
  readonly meters: ReadonlyMap<string, string>;
  readonly external_ids: ReadonlyMap<string, string>;
}

/** A port mirroring session: which direction of traffic to copy, and the GRE or ERSPAN sink. */
export interface Mirror extends Row {
  readonly name: string;
  readonly filter: 'from-lport' | 'to-lport';
  readonly sink: string;
  readonly type: 'erspan' | 'gre';
  readonly index: number;
  readonly external_ids: ReadonlyMap<string, string>;
}

/** A logical L3 router: its ports, routes, policies, NAT rules and load balancers. */
export interface Logical_Router extends Row {
  readonly name: string;
  readonly ports: readonly Uuid[]; // Logical_Router_Port
  readonly static_routes: readonly Uuid[]; // Logical_Router_Static_Route
  readonly policies: readonly Uuid[]; // Logical_Router_Policy
  readonly enabled: readonly boolean[]; // optional
  readonly nat: readonly Uuid[]; // NAT
  readonly load_balancer: readonly Uuid[]; // Load_Balancer (weak)
  readonly load_balancer_group: readonly Uuid[]; // Load_Balancer_Group
  readonly copp: readonly Uuid[]; // optional; Copp (weak)
  readonly options: ReadonlyMap<string, string>;
  readonly external_ids: ReadonlyMap<string, string>;
}

/** A port on a logical router with its MAC and networks; a gateway port when given chassis. */
export interface Logical_Router_Port extends Row {
  readonly name: string;
  readonly gateway_chassis: readonly Uuid[]; // Gateway_Chassis
  readonly ha_chassis_group: readonly Uuid[]; // optional; HA_Chassis_Group
  readonly options: ReadonlyMap<string, string>;
  readonly networks: readonly string[]; // at least 1
  readonly mac: string;
  readonly peer: readonly string[]; // optional
  readonly enabled: readonly boolean[]; // optional
  readonly ipv6_ra_configs: ReadonlyMap<string, string>;
  readonly ipv6_prefix: readonly string[];
  readonly external_ids: ReadonlyMap<string, string>;
}

/** A static route of a router: prefix, next hop, optional output port and BFD session. */
export interface Logical_Router_Static_Route extends Row {
  readonly route_table: string;
  readonly ip_prefix: string;
  readonly policy: readonly ('dst-ip' | 'src-ip')[]; // optional
  readonly nexthop: string;
  readonly output_port: readonly string[]; // optional
  readonly bfd: readonly Uuid[]; // optional; BFD (weak)
  readonly options: ReadonlyMap<string, string>;
  readonly external_ids: ReadonlyMap<string, string>;
}

/** A policy-based routing rule: allow, drop or reroute what a match selects. */
export interface Logical_Router_Policy extends Row {
  readonly priority: number; // 0..32767
  readonly match: string;
  readonly action: 'allow' | 'drop' | 'reroute';
  readonly nexthop: readonly string[]; // optional
  readonly nexthops: readonly string[];
  readonly options: ReadonlyMap<string, string>;
  readonly external_ids: ReadonlyMap<string, string>;
}

/** A NAT rule of a router: SNAT, DNAT or both, between a logical and an external address. */
export interface NAT extends Row {
  readonly external_ip: string;
  readonly external_mac: readonly string[]; // optional
  readonly external_port_range: string;
  readonly logical_ip: string;
  readonly logical_port: readonly string[]; // optional
  readonly type: 'dnat' | 'dnat_and_snat' | 'snat';
  readonly allowed_ext_ips: readonly Uuid[]; // optional; Address_Set
  readonly exempted_ext_ips: readonly Uuid[]; // optional; Address_Set
  readonly gateway_port: readonly Uuid[]; // optional; Logical_Router_Port (weak)
  readonly options: ReadonlyMap<string, string>;
  readonly external_ids: ReadonlyMap<string, string>;
}

/** A BFD session that a router port runs to a peer address; ovn-controller reports its status. */
export interface BFD extends Row {
  readonly logical_port: string;
  readonly dst_ip: string;
  readonly min_tx: readonly number[]; // optional; >= 1
  readonly min_rx: readonly number[]; // optional
  readonly detect_mult: readonly number[]; // optional; >= 1
  readonly status: readonly ('admin_down' | 'down' | 'init' | 'up')[]; // optional
  readonly external_ids: ReadonlyMap<string, string>;
  readonly options: ReadonlyMap<string, string>;
}

/** An IP to MAC binding set by hand on a router port, rather than learned by ARP or ND. */
export interface Static_MAC_Binding extends Row {
  readonly logical_port: string;
  readonly ip: string;
  readonly mac: string;
  readonly override_dynamic_mac: boolean;
}

/** One chassis, with its priority, that may host a distributed gateway port. */
export interface Gateway_Chassis extends Row {
  readonly name: string;
  readonly chassis_name: string;
  readonly priority: number; // 0..32767
  readonly external_ids: ReadonlyMap<string, string>;
  readonly options: ReadonlyMap<string, string>;
}

/** One member chassis of an HA chassis group, with its priority. */
export interface HA_Chassis extends Row {
  readonly chassis_name: string;
  readonly priority: number; // 0..32767
  readonly external_ids: ReadonlyMap<string, string>;
}

/** A named, prioritized set of chassis among which one is active for a port. */
export interface HA_Chassis_Group extends Row {
  readonly name: string;
  readonly ha_chassis: readonly Uuid[]; // HA_Chassis
  readonly external_ids: ReadonlyMap<string, string>;
}

/** Per-chassis values for template variables (^name) used in load balancers and ACLs. */
export interface Chassis_Template_Var extends Row {
  readonly chassis: string;
  readonly variables: ReadonlyMap<string, string>;
  readonly external_ids: ReadonlyMap<string, string>;
}

/** The name of a table of OVN_Northbound. */
export type TableName =
  | 'NB_Global'
  | 'Connection'
  | 'SSL'
  | 'Logical_Switch'
  | 'Logical_Switch_Port'
  | 'Forwarding_Group'
  | 'DHCP_Options'
  | 'DNS'
  | 'Address_Set'
  | 'Port_Group'
  | 'Load_Balancer'
  | 'Load_Balancer_Group'
  | 'Load_Balancer_Health_Check'
  | 'ACL'
  | 'QoS'
  | 'Meter'
  | 'Meter_Band'
  | 'Copp'
  | 'Mirror'
  | 'Logical_Router'
  | 'Logical_Router_Port'
  | 'Logical_Router_Static_Route'
  | 'Logical_Router_Policy'
  | 'NAT'
  | 'BFD'
  | 'Static_MAC_Binding'
  | 'Gateway_Chassis'
  | 'HA_Chassis'
  | 'HA_Chassis_Group'
  | 'Chassis_Template_Var';

/** Each table's row type, by table name. */
export interface Tables {
  readonly NB_Global: NB_Global;
  readonly Connection: Connection;
  readonly SSL: SSL;
  readonly Logical_Switch: Logical_Switch;
  readonly Logical_Switch_Port: Logical_Switch_Port;
  readonly Forwarding_Group: Forwarding_Group;
  readonly DHCP_Options: DHCP_Options;
  readonly DNS: DNS;
  readonly Address_Set: Address_Set;
  readonly Port_Group: Port_Group;
  readonly Load_Balancer: Load_Balancer;
  readonly Load_Balancer_Group: Load_Balancer_Group;
  readonly Load_Balancer_Health_Check: Load_Balancer_Health_Check;
  readonly ACL: ACL;
  readonly QoS: QoS;
  readonly Meter: Meter;
  readonly Meter_Band: Meter_Band;
  readonly Copp: Copp;
  readonly Mirror: Mirror;
  readonly Logical_Router: Logical_Router;
  readonly Logical_Router_Port: Logical_Router_Port;
  readonly Logical_Router_Static_Route: Logical_Router_Static_Route;
  readonly Logical_Router_Policy: Logical_Router_Policy;
  readonly NAT: NAT;
  readonly BFD: BFD;
  readonly Static_MAC_Binding: Static_MAC_Binding;
  readonly Gateway_Chassis: Gateway_Chassis;
  readonly HA_Chassis: HA_Chassis;
  readonly HA_Chassis_Group: HA_Chassis_Group;
  readonly Chassis_Template_Var: Chassis_Template_Var;
}
