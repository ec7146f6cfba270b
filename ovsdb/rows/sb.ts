// GENERATED from our OVN_Southbound 20.27.0 schema (ovsdb/schemas/) by
// ovsdb/schemas/gen-rows.ts. Do not edit: change the schema, then regenerate with
//   node --import tsx ovsdb/schemas/gen-rows.ts
// (tests/ovsdb/schemas.test.ts fails while this file is out of date).
//
// One interface per table, as the engine holds rows in memory: a column of exactly one atom
// is that atom; an optional column or a set is a readonly array, sorted, without duplicates;
// a map is a ReadonlyMap. Comments name the table a uuid refers to and the constraints the
// type cannot show.
import type { Row, Uuid } from './common.js';

/** The one row of global settings, and the counter ovn-controllers echo back. */
export interface SB_Global extends Row {
  readonly nb_cfg: number;
  readonly external_ids: ReadonlyMap<string, string>;
  readonly connections: readonly Uuid[]; // Connection
  readonly ssl: readonly Uuid[]; // optional; SSL
  readonly options: ReadonlyMap<string, string>;
  readonly ipsec: boolean;
}

/** A remote on which the server offers this database; role selects RBAC rules. */
export interface Connection extends Row {
  readonly target: string;
  readonly max_backoff: readonly number[]; // optional; >= 1000
  readonly inactivity_probe: readonly number[]; // optional
  readonly read_only: boolean;
  readonly role: string;
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

/** A role for connections: which permission applies to each table. */
export interface RBAC_Role extends Row {
  readonly name: string;
  readonly permissions: ReadonlyMap<string, Uuid>; // value RBAC_Permission (weak)
}

/** What a role may do to one table: the rows it may touch, the columns it may update. */
export interface RBAC_Permission extends Row {
  readonly table: string;
  readonly authorization: readonly string[];
  readonly insert_delete: boolean;
  readonly update: readonly string[];
}

/** A hypervisor or gateway running ovn-controller, and how to tunnel to it. */
export interface Chassis extends Row {
  readonly name: string;
  readonly hostname: string;
  readonly encaps: readonly Uuid[]; // Encap; at least 1
  readonly vtep_logical_switches: readonly string[];
  readonly nb_cfg: number;
  readonly external_ids: ReadonlyMap<string, string>;
  readonly other_config: ReadonlyMap<string, string>;
  readonly transport_zones: readonly string[];
}

/** Per-chassis state that only its own ovn-controller writes, kept apart to spare others. */
export interface Chassis_Private extends Row {
  readonly name: string;
  readonly chassis: readonly Uuid[]; // optional; Chassis (weak)
  readonly nb_cfg: number;
  readonly nb_cfg_timestamp: number;
  readonly external_ids: ReadonlyMap<string, string>;
}

/** One tunnel encapsulation (type and IP) by which a chassis can be reached. */
export interface Encap extends Row {
  readonly type: 'geneve' | 'stt' | 'vxlan';
  readonly options: ReadonlyMap<string, string>;
  readonly ip: string;
  readonly chassis_name: string;
}

/** A logical switch or router as a datapath, with the tunnel key that names it on the wire. */
export interface Datapath_Binding extends Row {
  readonly tunnel_key: number; // 1..16777215
  readonly load_balancers: readonly Uuid[];
  readonly external_ids: ReadonlyMap<string, string>;
}

/** A logical port of a datapath, its tunnel key, and the chassis where it is bound. */
export interface Port_Binding extends Row {
  readonly logical_port: string;
  readonly type: string;
  readonly gateway_chassis: readonly Uuid[]; // Gateway_Chassis
  readonly ha_chassis_group: readonly Uuid[]; // optional; HA_Chassis_Group
  readonly options: ReadonlyMap<string, string>;
  readonly datapath: Uuid; // Datapath_Binding
  readonly tunnel_key: number; // 1..32767
  readonly parent_port: readonly string[]; // optional
  readonly tag: readonly number[]; // optional; 1..4095
  readonly virtual_parent: readonly string[]; // optional
  readonly chassis: readonly Uuid[]; // optional; Chassis (weak)
  readonly additional_chassis: readonly Uuid[]; // Chassis (weak)
  readonly encap: readonly Uuid[]; // optional; Encap (weak)
  readonly additional_encap: readonly Uuid[]; // Encap (weak)
  readonly mirror_rules: readonly Uuid[]; // Mirror (weak)
  readonly mac: readonly string[];
  readonly port_security: readonly string[];
  readonly nat_addresses: readonly string[];
  readonly up: readonly boolean[]; // optional
  readonly external_ids: ReadonlyMap<string, string>;
  readonly requested_chassis: readonly Uuid[]; // optional; Chassis (weak)
  readonly requested_additional_chassis: readonly Uuid[]; // Chassis (weak)
}

/** A named set of ports of one datapath (flood, unknown, IGMP groups), with its tunnel key. */
export interface Multicast_Group extends Row {
  readonly datapath: Uuid; // Datapath_Binding
  readonly name: string;
  readonly tunnel_key: number; // 32768..65535
  readonly ports: readonly Uuid[]; // Port_Binding (weak)
}

/** A set of datapaths that share one logical flow or load balancer row. */
export interface Logical_DP_Group extends Row {
  readonly datapaths: readonly Uuid[]; // Datapath_Binding (weak)
}

/** One logical flow: match and actions at a priority, in a table of a pipeline. */
export interface Logical_Flow extends Row {
  readonly logical_datapath: readonly Uuid[]; // optional; Datapath_Binding
  readonly logical_dp_group: readonly Uuid[]; // optional; Logical_DP_Group
  readonly pipeline: 'egress' | 'ingress';
  readonly table_id: number; // 0..32
  readonly priority: number; // 0..65535
  readonly match: string;
  readonly actions: string;
  readonly tags: ReadonlyMap<string, string>;
  readonly controller_meter: readonly string[]; // optional
  readonly external_ids: ReadonlyMap<string, string>;
}

/** A named address set, as northd exports it for $name in matches. */
export interface Address_Set extends Row {
  readonly name: string;
  readonly addresses: readonly string[];
}

/** A named set of logical port names, as northd exports it for @name in matches. */
export interface Port_Group extends Row {
  readonly name: string;
  readonly ports: readonly string[];
}

/** A named meter that flows may use (by name), made of bands. */
export interface Meter extends Row {
  readonly name: string;
  readonly unit: 'kbps' | 'pktps';
  readonly bands: readonly Uuid[]; // Meter_Band; at least 1
}

/** One band of a meter: what to do above which rate and burst. */
export interface Meter_Band extends Row {
  readonly action: 'drop';
  readonly rate: number; // 1..4294967295
  readonly burst_size: number; // 0..4294967295
}

/** A load balancer and the datapaths it applies to, for ovn-controller's own use. */
export interface Load_Balancer extends Row {
  readonly name: string;
  readonly vips: ReadonlyMap<string, string>;
  readonly protocol: readonly ('sctp' | 'tcp' | 'udp')[]; // optional
  readonly datapaths: readonly Uuid[]; // Datapath_Binding
  readonly datapath_group: readonly Uuid[]; // optional; Logical_DP_Group
  readonly options: ReadonlyMap<string, string>;
  readonly external_ids: ReadonlyMap<string, string>;
}

/** A DHCPv4 option that the put_dhcp_opts action knows: name, code and type. */
export interface DHCP_Options extends Row {
  readonly name: string;
  readonly code: number; // 0..254
  readonly type: 'bool' | 'domains' | 'host_id' | 'ipv4' | 'static_routes' | 'str' | 'uint16' | 'uint32' | 'uint8';
}

/** A DHCPv6 option that the put_dhcpv6_opts action knows: name, code and type. */
export interface DHCPv6_Options extends Row {
  readonly name: string;
  readonly code: number; // 0..254
  readonly type: 'ipv6' | 'mac' | 'str';
}

/** DNS records that ovn-controller answers on the given datapaths. */
export interface DNS extends Row {
  readonly records: ReadonlyMap<string, string>;
  readonly datapaths: readonly Uuid[]; // Datapath_Binding; at least 1
  readonly external_ids: ReadonlyMap<string, string>;
}

/** A port mirroring session, copied from the northbound database. */
export interface Mirror extends Row {
  readonly name: string;
  readonly filter: 'from-lport' | 'to-lport';
  readonly sink: string;
  readonly type: 'erspan' | 'gre';
  readonly index: number;
  readonly external_ids: ReadonlyMap<string, string>;
}

/** Per-chassis values for template variables, copied from the northbound database. */
export interface Chassis_Template_Var extends Row {
  readonly chassis: string;
  readonly variables: ReadonlyMap<string, string>;
}

/** One chassis, with its priority, that may host a gateway port. */
export interface Gateway_Chassis extends Row {
  readonly name: string;
  readonly chassis: readonly Uuid[]; // optional; Chassis (weak)
  readonly priority: number; // 0..32767
  readonly external_ids: ReadonlyMap<string, string>;
  readonly options: ReadonlyMap<string, string>;
}

/** One member chassis of an HA chassis group, with its priority. */
export interface HA_Chassis extends Row {
  readonly chassis: readonly Uuid[]; // optional; Chassis (weak)
  readonly priority: number; // 0..32767
  readonly external_ids: ReadonlyMap<string, string>;
}

/** A prioritized set of chassis of which one is active, and the chassis that care. */
export interface HA_Chassis_Group extends Row {
  readonly name: string;
  readonly ha_chassis: readonly Uuid[]; // HA_Chassis
  readonly ref_chassis: readonly Uuid[]; // Chassis (weak)
  readonly external_ids: ReadonlyMap<string, string>;
}

/** A BFD session a chassis runs for a port; northd sets it up, the chassis reports status. */
export interface BFD extends Row {
  readonly src_port: number; // 49152..65535
  readonly disc: number;
  readonly logical_port: string;
  readonly dst_ip: string;
  readonly min_tx: number;
  readonly min_rx: number;
  readonly detect_mult: number;
  readonly status: 'admin_down' | 'down' | 'init' | 'up';
  readonly external_ids: ReadonlyMap<string, string>;
  readonly options: ReadonlyMap<string, string>;
}

/** An IP to MAC binding a router learned by ARP or ND, shared by all chassis. */
export interface MAC_Binding extends Row {
  readonly logical_port: string;
  readonly ip: string;
  readonly mac: string;
  readonly timestamp: number;
  readonly datapath: Uuid; // Datapath_Binding
}

/** An IP to MAC binding set by hand on a router port, copied from the NB database. */
export interface Static_MAC_Binding extends Row {
  readonly logical_port: string;
  readonly ip: string;
  readonly mac: string;
  readonly override_dynamic_mac: boolean;
  readonly datapath: Uuid; // Datapath_Binding
}

/** A MAC address a switch learned on one of its ports (for ports with unknown addresses). */
export interface FDB extends Row {
  readonly mac: string;
  readonly dp_key: number; // 1..16777215
  readonly port_key: number; // 1..16777215
}

/** IGMP/MLD snooping and querier settings for one logical switch. */
export interface IP_Multicast extends Row {
  readonly datapath: Uuid; // Datapath_Binding (weak)
  readonly enabled: readonly boolean[]; // optional
  readonly querier: readonly boolean[]; // optional
  readonly eth_src: string;
  readonly ip4_src: string;
  readonly ip6_src: string;
  readonly table_size: readonly number[]; // optional
  readonly idle_timeout: readonly number[]; // optional
  readonly query_interval: readonly number[]; // optional
  readonly query_max_resp: readonly number[]; // optional
  readonly seq_no: number;
}

/** A multicast group a chassis learned by snooping, with its local member ports. */
export interface IGMP_Group extends Row {
  readonly address: string;
  readonly datapath: readonly Uuid[]; // optional; Datapath_Binding (weak)
  readonly chassis: readonly Uuid[]; // optional; Chassis (weak)
  readonly ports: readonly Uuid[]; // Port_Binding (weak)
}

/** A load balancer backend health check: northd asks, the chassis reports status. */
export interface Service_Monitor extends Row {
  readonly ip: string;
  readonly protocol: readonly ('tcp' | 'udp')[]; // optional
  readonly port: number; // 0..65535
  readonly logical_port: string;
  readonly src_mac: string;
  readonly src_ip: string;
  readonly status: readonly ('error' | 'offline' | 'online')[]; // optional
  readonly options: ReadonlyMap<string, string>;
  readonly external_ids: ReadonlyMap<string, string>;
}

/** An event ovn-controller reports for the CMS to act on (an empty LB backend). */
export interface Controller_Event extends Row {
  readonly event_type: 'empty_lb_backends';
  readonly event_info: ReadonlyMap<string, string>;
  readonly chassis: readonly Uuid[]; // optional; Chassis (weak)
  readonly seq_num: number;
}

/** The name of a table of OVN_Southbound. */
export type TableName =
  | 'SB_Global'
  | 'Connection'
  | 'SSL'
  | 'RBAC_Role'
  | 'RBAC_Permission'
  | 'Chassis'
  | 'Chassis_Private'
  | 'Encap'
  | 'Datapath_Binding'
  | 'Port_Binding'
  | 'Multicast_Group'
  | 'Logical_DP_Group'
  | 'Logical_Flow'
  | 'Address_Set'
  | 'Port_Group'
  | 'Meter'
  | 'Meter_Band'
  | 'Load_Balancer'
  | 'DHCP_Options'
  | 'DHCPv6_Options'
  | 'DNS'
  | 'Mirror'
  | 'Chassis_Template_Var'
  | 'Gateway_Chassis'
  | 'HA_Chassis'
  | 'HA_Chassis_Group'
  | 'BFD'
  | 'MAC_Binding'
  | 'Static_MAC_Binding'
  | 'FDB'
  | 'IP_Multicast'
  | 'IGMP_Group'
  | 'Service_Monitor'
  | 'Controller_Event';

/** Each table's row type, by table name. */
export interface Tables {
  readonly SB_Global: SB_Global;
  readonly Connection: Connection;
  readonly SSL: SSL;
  readonly RBAC_Role: RBAC_Role;
  readonly RBAC_Permission: RBAC_Permission;
  readonly Chassis: Chassis;
  readonly Chassis_Private: Chassis_Private;
  readonly Encap: Encap;
  readonly Datapath_Binding: Datapath_Binding;
  readonly Port_Binding: Port_Binding;
  readonly Multicast_Group: Multicast_Group;
  readonly Logical_DP_Group: Logical_DP_Group;
  readonly Logical_Flow: Logical_Flow;
  readonly Address_Set: Address_Set;
  readonly Port_Group: Port_Group;
  readonly Meter: Meter;
  readonly Meter_Band: Meter_Band;
  readonly Load_Balancer: Load_Balancer;
  readonly DHCP_Options: DHCP_Options;
  readonly DHCPv6_Options: DHCPv6_Options;
  readonly DNS: DNS;
  readonly Mirror: Mirror;
  readonly Chassis_Template_Var: Chassis_Template_Var;
  readonly Gateway_Chassis: Gateway_Chassis;
  readonly HA_Chassis: HA_Chassis;
  readonly HA_Chassis_Group: HA_Chassis_Group;
  readonly BFD: BFD;
  readonly MAC_Binding: MAC_Binding;
  readonly Static_MAC_Binding: Static_MAC_Binding;
  readonly FDB: FDB;
  readonly IP_Multicast: IP_Multicast;
  readonly IGMP_Group: IGMP_Group;
  readonly Service_Monitor: Service_Monitor;
  readonly Controller_Event: Controller_Event;
}
