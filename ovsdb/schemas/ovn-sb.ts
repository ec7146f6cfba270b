// OVN_Southbound 20.27.0, the schema of OVN 23.03: the middle of OVN. ovn-northd writes the
// logical network compiled into logical flows and bindings; every ovn-controller reads it and
// writes back what only a chassis knows (itself, where ports are bound, learned MACs). Facts
// (names, types, constraints) agree with the installed ovn-sb.ovsschema;
// tests/ovsdb/schemas.test.ts checks it. Columns keep upstream's order within a table, so
// ovn-sb(5) can be read alongside.
import {
  bool, ephemeral, int, map, optional, ref, schema, set, smap, str, table, uuid,
} from './dsl.js';
import type { Schema } from './dsl.js';
import { MIRROR_COLUMNS, SSL_COLUMNS } from './shared-columns.js';

const PRIORITY = int({ min: 0, max: 32767 });
const DATAPATH_KEY = int({ min: 1, max: 16777215 });

export const SB_SCHEMA: Schema = schema({
  name: 'OVN_Southbound',
  version: '20.27.0',
  upstreamCksum: '4078371916 30328', // ovn-sb.ovsschema of OVN 23.03
  tables: {
    // --- Global configuration, the database's own connections, and access control ----------

    SB_Global: table(
      'The one row of global settings, and the counter ovn-controllers echo back.',
      { isRoot: true, maxRows: 1 },
      {
        nb_cfg: int(),
        external_ids: smap(),
        connections: set(ref('Connection')),
        ssl: optional(ref('SSL')),
        options: smap(),
        ipsec: bool(),
      },
    ),

    Connection: table(
      'A remote on which the server offers this database; role selects RBAC rules.',
      { indexes: [['target']] },
      {
        target: str(),
        max_backoff: optional(int({ min: 1000 })),
        inactivity_probe: optional(int()),
        read_only: bool(),
        role: str(),
        other_config: smap(),
        external_ids: smap(),
        is_connected: ephemeral(bool()),
        status: ephemeral(smap()),
      },
    ),

    SSL: table(
      'The key, certificate and CA ovsdb-server uses for SSL remotes.',
      { maxRows: 1 },
      SSL_COLUMNS,
    ),

    RBAC_Role: table(
      'A role for connections: which permission applies to each table.',
      { isRoot: true },
      {
        name: str(),
        permissions: map(str(), ref('RBAC_Permission', 'weak')),
      },
    ),

    RBAC_Permission: table(
      'What a role may do to one table: the rows it may touch, the columns it may update.',
      { isRoot: true },
      {
        table: str(),
        authorization: set(str()),
        insert_delete: bool(),
        update: set(str()),
      },
    ),

    // --- Chassis: the hypervisors and gateways, written by their ovn-controller --------------

    Chassis: table(
      'A hypervisor or gateway running ovn-controller, and how to tunnel to it.',
      { isRoot: true, indexes: [['name']] },
      {
        name: str(),
        hostname: str(),
        encaps: set(ref('Encap'), { min: 1 }),
        vtep_logical_switches: set(str()),
        nb_cfg: int(),
        external_ids: smap(),
        other_config: smap(),
        transport_zones: set(str()),
      },
    ),

    Chassis_Private: table(
      'Per-chassis state that only its own ovn-controller writes, kept apart to spare others.',
      { isRoot: true, indexes: [['name']] },
      {
        name: str(),
        chassis: optional(ref('Chassis', 'weak')),
        nb_cfg: int(),
        nb_cfg_timestamp: int(),
        external_ids: smap(),
      },
    ),

    Encap: table(
      'One tunnel encapsulation (type and IP) by which a chassis can be reached.',
      { indexes: [['type', 'ip']] },
      {
        type: str({ enum: ['geneve', 'stt', 'vxlan'] }),
        options: smap(),
        ip: str(),
        chassis_name: str(),
      },
    ),

    // --- Datapaths and ports: the logical topology with its tunnel keys -----------------------

    Datapath_Binding: table(
      'A logical switch or router as a datapath, with the tunnel key that names it on the wire.',
      { isRoot: true, indexes: [['tunnel_key']] },
      {
        tunnel_key: DATAPATH_KEY,
        load_balancers: set(uuid()),
        external_ids: smap(),
      },
    ),

    Port_Binding: table(
      'A logical port of a datapath, its tunnel key, and the chassis where it is bound.',
      { isRoot: true, indexes: [['datapath', 'tunnel_key'], ['logical_port']] },
      {
        logical_port: str(),
        type: str(),
        gateway_chassis: set(ref('Gateway_Chassis')),
        ha_chassis_group: optional(ref('HA_Chassis_Group')),
        options: smap(),
        datapath: ref('Datapath_Binding'),
        tunnel_key: int({ min: 1, max: 32767 }),
        parent_port: optional(str()),
        tag: optional(int({ min: 1, max: 4095 })),
        virtual_parent: optional(str()),
        chassis: optional(ref('Chassis', 'weak')),
        additional_chassis: set(ref('Chassis', 'weak')),
        encap: optional(ref('Encap', 'weak')),
        additional_encap: set(ref('Encap', 'weak')),
        mirror_rules: set(ref('Mirror', 'weak')),
        mac: set(str()),
        port_security: set(str()),
        nat_addresses: set(str()),
        up: optional(bool()),
        external_ids: smap(),
        requested_chassis: optional(ref('Chassis', 'weak')),
        requested_additional_chassis: set(ref('Chassis', 'weak')),
      },
    ),

    Multicast_Group: table(
      'A named set of ports of one datapath (flood, unknown, IGMP groups), with its tunnel key.',
      { isRoot: true, indexes: [['datapath', 'tunnel_key'], ['datapath', 'name']] },
      {
        datapath: ref('Datapath_Binding'),
        name: str(),
        tunnel_key: int({ min: 32768, max: 65535 }),
        ports: set(ref('Port_Binding', 'weak')),
      },
    ),

    Logical_DP_Group: table(
      'A set of datapaths that share one logical flow or load balancer row.',
      {},
      {
        datapaths: set(ref('Datapath_Binding', 'weak')),
      },
    ),

    // --- Logical flows and what their matches and actions refer to ----------------------------

    Logical_Flow: table(
      'One logical flow: match and actions at a priority, in a table of a pipeline.',
      { isRoot: true },
      {
        logical_datapath: optional(ref('Datapath_Binding')),
        logical_dp_group: optional(ref('Logical_DP_Group')),
        pipeline: str({ enum: ['ingress', 'egress'] }),
        table_id: int({ min: 0, max: 32 }),
        priority: int({ min: 0, max: 65535 }),
        match: str(),
        actions: str(),
        tags: smap(),
        controller_meter: optional(str()),
        external_ids: smap(),
      },
    ),

    Address_Set: table(
      'A named address set, as northd exports it for $name in matches.',
      { isRoot: true, indexes: [['name']] },
      {
        name: str(),
        addresses: set(str()),
      },
    ),

    Port_Group: table(
      'A named set of logical port names, as northd exports it for @name in matches.',
      { isRoot: true, indexes: [['name']] },
      {
        name: str(),
        ports: set(str()),
      },
    ),

    Meter: table(
      'A named meter that flows may use (by name), made of bands.',
      { isRoot: true, indexes: [['name']] },
      {
        name: str(),
        unit: str({ enum: ['kbps', 'pktps'] }),
        bands: set(ref('Meter_Band'), { min: 1 }),
      },
    ),

    Meter_Band: table(
      'One band of a meter: what to do above which rate and burst.',
      {},
      {
        action: str({ enum: ['drop'] }),
        rate: int({ min: 1, max: 4294967295 }),
        burst_size: int({ min: 0, max: 4294967295 }),
      },
    ),

    Load_Balancer: table(
      'A load balancer and the datapaths it applies to, for ovn-controller\'s own use.',
      { isRoot: true },
      {
        name: str(),
        vips: smap(),
        protocol: optional(str({ enum: ['tcp', 'udp', 'sctp'] })),
        datapaths: set(ref('Datapath_Binding')),
        datapath_group: optional(ref('Logical_DP_Group')),
        options: smap(),
        external_ids: smap(),
      },
    ),

    DHCP_Options: table(
      'A DHCPv4 option that the put_dhcp_opts action knows: name, code and type.',
      { isRoot: true },
      {
        name: str(),
        code: int({ min: 0, max: 254 }),
        type: str({
          enum: ['bool', 'uint8', 'uint16', 'uint32', 'ipv4', 'static_routes', 'str', 'host_id', 'domains'],
        }),
      },
    ),

    DHCPv6_Options: table(
      'A DHCPv6 option that the put_dhcpv6_opts action knows: name, code and type.',
      { isRoot: true },
      {
        name: str(),
        code: int({ min: 0, max: 254 }),
        type: str({ enum: ['ipv6', 'str', 'mac'] }),
      },
    ),

    DNS: table(
      'DNS records that ovn-controller answers on the given datapaths.',
      { isRoot: true },
      {
        records: smap(),
        datapaths: set(ref('Datapath_Binding'), { min: 1 }),
        external_ids: smap(),
      },
    ),

    Mirror: table(
      'A port mirroring session, copied from the northbound database.',
      { isRoot: true, indexes: [['name']] },
      MIRROR_COLUMNS,
    ),

    Chassis_Template_Var: table(
      'Per-chassis values for template variables, copied from the northbound database.',
      { isRoot: true, indexes: [['chassis']] },
      {
        chassis: str(),
        variables: smap(),
      },
    ),

    // --- Gateways, high availability and BFD --------------------------------------------------

    Gateway_Chassis: table(
      'One chassis, with its priority, that may host a gateway port.',
      { indexes: [['name']] },
      {
        name: str(),
        chassis: optional(ref('Chassis', 'weak')),
        priority: PRIORITY,
        external_ids: smap(),
        options: smap(),
      },
    ),

    HA_Chassis: table(
      'One member chassis of an HA chassis group, with its priority.',
      {},
      {
        chassis: optional(ref('Chassis', 'weak')),
        priority: PRIORITY,
        external_ids: smap(),
      },
    ),

    HA_Chassis_Group: table(
      'A prioritized set of chassis of which one is active, and the chassis that care.',
      { isRoot: true, indexes: [['name']] },
      {
        name: str(),
        ha_chassis: set(ref('HA_Chassis')),
        ref_chassis: set(ref('Chassis', 'weak')),
        external_ids: smap(),
      },
    ),

    BFD: table(
      'A BFD session a chassis runs for a port; northd sets it up, the chassis reports status.',
      { isRoot: true, indexes: [['logical_port', 'dst_ip', 'src_port', 'disc']] },
      {
        src_port: int({ min: 49152, max: 65535 }),
        disc: int(),
        logical_port: str(),
        dst_ip: str(),
        min_tx: int(),
        min_rx: int(),
        detect_mult: int(),
        status: str({ enum: ['down', 'init', 'up', 'admin_down'] }),
        external_ids: smap(),
        options: smap(),
      },
    ),

    // --- State learned or reported by ovn-controller, and multicast ---------------------------

    MAC_Binding: table(
      'An IP to MAC binding a router learned by ARP or ND, shared by all chassis.',
      { isRoot: true, indexes: [['logical_port', 'ip']] },
      {
        logical_port: str(),
        ip: str(),
        mac: str(),
        timestamp: int(),
        datapath: ref('Datapath_Binding'),
      },
    ),

    Static_MAC_Binding: table(
      'An IP to MAC binding set by hand on a router port, copied from the NB database.',
      { isRoot: true, indexes: [['logical_port', 'ip']] },
      {
        logical_port: str(),
        ip: str(),
        mac: str(),
        override_dynamic_mac: bool(),
        datapath: ref('Datapath_Binding'),
      },
    ),

    FDB: table(
      'A MAC address a switch learned on one of its ports (for ports with unknown addresses).',
      { isRoot: true, indexes: [['mac', 'dp_key']] },
      {
        mac: str(),
        dp_key: DATAPATH_KEY,
        port_key: DATAPATH_KEY,
      },
    ),

    IP_Multicast: table(
      'IGMP/MLD snooping and querier settings for one logical switch.',
      { isRoot: true, indexes: [['datapath']] },
      {
        datapath: ref('Datapath_Binding', 'weak'),
        enabled: optional(bool()),
        querier: optional(bool()),
        eth_src: str(),
        ip4_src: str(),
        ip6_src: str(),
        table_size: optional(int()),
        idle_timeout: optional(int()),
        query_interval: optional(int()),
        query_max_resp: optional(int()),
        seq_no: int(),
      },
    ),

    IGMP_Group: table(
      'A multicast group a chassis learned by snooping, with its local member ports.',
      { isRoot: true, indexes: [['address', 'datapath', 'chassis']] },
      {
        address: str(),
        datapath: optional(ref('Datapath_Binding', 'weak')),
        chassis: optional(ref('Chassis', 'weak')),
        ports: set(ref('Port_Binding', 'weak')),
      },
    ),

    Service_Monitor: table(
      'A load balancer backend health check: northd asks, the chassis reports status.',
      { isRoot: true, indexes: [['logical_port', 'ip', 'port', 'protocol']] },
      {
        ip: str(),
        protocol: optional(str({ enum: ['tcp', 'udp'] })),
        port: int({ min: 0, max: 65535 }),
        logical_port: str(),
        src_mac: str(),
        src_ip: str(),
        status: optional(str({ enum: ['online', 'offline', 'error'] })),
        options: smap(),
        external_ids: smap(),
      },
    ),

    Controller_Event: table(
      'An event ovn-controller reports for the CMS to act on (an empty LB backend).',
      { isRoot: true },
      {
        event_type: str({ enum: ['empty_lb_backends'] }),
        event_info: smap(),
        chassis: optional(ref('Chassis', 'weak')),
        seq_num: int(),
      },
    ),
  },
});
