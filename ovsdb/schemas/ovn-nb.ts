// OVN_Northbound 7.0.0, the schema of OVN 23.03: the desired logical network, as the cloud
// management system (or a person with ovn-nbctl) writes it. ovn-northd reads it and writes
// OVN_Southbound. Facts (names, types, constraints) agree with the installed
// ovn-nb.ovsschema; tests/ovsdb/schemas.test.ts checks it. Columns keep upstream's order
// within a table, so ovn-nb(5) can be read alongside.
import {
  bool, ephemeral, int, map, optional, ref, schema, set, smap, str, table,
} from './dsl.js';
import type { Schema } from './dsl.js';
import { DIRECTION, MIRROR_COLUMNS, SSL_COLUMNS } from './shared-columns.js';

const PRIORITY = int({ min: 0, max: 32767 });
const UINT32_POSITIVE = int({ min: 1, max: 4294967295 });

export const NB_SCHEMA: Schema = schema({
  name: 'OVN_Northbound',
  version: '7.0.0',
  upstreamCksum: '94023179 33468', // ovn-nb.ovsschema of OVN 23.03
  tables: {
    // --- Global configuration and the database's own connections ----------------------------

    NB_Global: table(
      'The one row of global settings, and the counters that show how far NB changes have reached.',
      { isRoot: true, maxRows: 1 },
      {
        name: str(),
        nb_cfg: int(),
        nb_cfg_timestamp: int(),
        sb_cfg: int(),
        sb_cfg_timestamp: int(),
        hv_cfg: int(),
        hv_cfg_timestamp: int(),
        external_ids: smap(),
        connections: set(ref('Connection')),
        ssl: optional(ref('SSL')),
        options: smap(),
        ipsec: bool(),
      },
    ),

    Connection: table(
      'A remote (listening or active) on which the server offers this database; status is live.',
      { indexes: [['target']] },
      {
        target: str(),
        max_backoff: optional(int({ min: 1000 })),
        inactivity_probe: optional(int()),
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

    // --- Logical switches ---------------------------------------------------------------------

    Logical_Switch: table(
      'A logical L2 switch: its ports, and the ACLs, QoS, load balancers and DNS applied on it.',
      { isRoot: true },
      {
        name: str(),
        ports: set(ref('Logical_Switch_Port')),
        acls: set(ref('ACL')),
        qos_rules: set(ref('QoS')),
        load_balancer: set(ref('Load_Balancer', 'weak')),
        load_balancer_group: set(ref('Load_Balancer_Group')),
        dns_records: set(ref('DNS', 'weak')),
        copp: optional(ref('Copp', 'weak')),
        other_config: smap(),
        external_ids: smap(),
        forwarding_groups: set(ref('Forwarding_Group')),
      },
    ),

    Logical_Switch_Port: table(
      'A port on a logical switch: a VIF when type is empty, else router, localnet, localport...',
      { indexes: [['name']] },
      {
        name: str(),
        type: str(),
        options: smap(),
        parent_name: optional(str()),
        tag_request: optional(int({ min: 0, max: 4095 })),
        tag: optional(int({ min: 1, max: 4095 })),
        addresses: set(str()),
        dynamic_addresses: optional(str()),
        port_security: set(str()),
        up: optional(bool()),
        enabled: optional(bool()),
        dhcpv4_options: optional(ref('DHCP_Options', 'weak')),
        dhcpv6_options: optional(ref('DHCP_Options', 'weak')),
        mirror_rules: set(ref('Mirror', 'weak')),
        ha_chassis_group: optional(ref('HA_Chassis_Group')),
        external_ids: smap(),
      },
    ),

    Forwarding_Group: table(
      'A virtual IP and MAC on a switch, answered by whichever of its child ports are live.',
      {},
      {
        name: str(),
        vip: str(),
        vmac: str(),
        liveness: bool(),
        external_ids: smap(),
        child_port: set(str(), { min: 1 }),
      },
    ),

    DHCP_Options: table(
      'DHCPv4 or DHCPv6 options for one CIDR, served by ovn-controller to the ports that use them.',
      { isRoot: true },
      {
        cidr: str(),
        options: smap(),
        external_ids: smap(),
      },
    ),

    DNS: table(
      'Host name to address records that ovn-controller answers for the switches that point here.',
      { isRoot: true },
      {
        records: smap(),
        external_ids: smap(),
      },
    ),

    // --- Named sets used in match expressions -------------------------------------------------

    Address_Set: table(
      'A named set of addresses, referred to as $name in ACL and policy matches.',
      { isRoot: true, indexes: [['name']] },
      {
        name: str(),
        addresses: set(str()),
        external_ids: smap(),
      },
    ),

    Port_Group: table(
      'Named switch ports sharing ACLs: @name in matches, with address sets $name_ip4/6.',
      { isRoot: true, indexes: [['name']] },
      {
        name: str(),
        ports: set(ref('Logical_Switch_Port', 'weak')),
        acls: set(ref('ACL')),
        external_ids: smap(),
      },
    ),

    // --- Load balancing -----------------------------------------------------------------------

    Load_Balancer: table(
      'A set of VIP to backends mappings, applied on the switches and routers that point here.',
      { isRoot: true },
      {
        name: str(),
        vips: smap(),
        protocol: optional(str({ enum: ['tcp', 'udp', 'sctp'] })),
        health_check: set(ref('Load_Balancer_Health_Check')),
        ip_port_mappings: smap(),
        selection_fields: set(
          str({ enum: ['eth_src', 'eth_dst', 'ip_src', 'ip_dst', 'tp_src', 'tp_dst'] }),
        ),
        options: smap(),
        external_ids: smap(),
      },
    ),

    Load_Balancer_Group: table(
      'A named bundle of load balancers, so one reference applies many of them to a datapath.',
      { isRoot: true, indexes: [['name']] },
      {
        name: str(),
        load_balancer: set(ref('Load_Balancer', 'weak')),
      },
    ),

    Load_Balancer_Health_Check: table(
      'Health check settings for one VIP of a load balancer.',
      {},
      {
        vip: str(),
        options: smap(),
        external_ids: smap(),
      },
    ),

    // --- Traffic policy: ACLs, QoS, meters, control plane protection, mirroring ---------------

    ACL: table(
      'An access control rule (match, action, priority, direction) on a switch or port group.',
      {},
      {
        name: optional(str({ maxLength: 63 })),
        priority: PRIORITY,
        direction: DIRECTION,
        match: str(),
        action: str({ enum: ['allow', 'allow-related', 'allow-stateless', 'drop', 'reject'] }),
        log: bool(),
        severity: optional(str({ enum: ['alert', 'warning', 'notice', 'info', 'debug'] })),
        meter: optional(str()),
        label: int({ min: 0, max: 4294967295 }),
        options: smap(),
        external_ids: smap(),
      },
    ),

    QoS: table(
      'A rule that marks DSCP on or rate-limits the traffic a match selects, on a switch.',
      {},
      {
        priority: PRIORITY,
        direction: DIRECTION,
        match: str(),
        action: map(str({ enum: ['dscp'] }), int({ min: 0, max: 63 })),
        bandwidth: map(str({ enum: ['rate', 'burst'] }), UINT32_POSITIVE),
        external_ids: smap(),
      },
    ),

    Meter: table(
      'A named rate limiter (for ACL logging, CoPP and the like), made of bands.',
      { isRoot: true, indexes: [['name']] },
      {
        name: str(),
        unit: str({ enum: ['kbps', 'pktps'] }),
        bands: set(ref('Meter_Band'), { min: 1 }),
        fair: optional(bool()),
        external_ids: smap(),
      },
    ),

    Meter_Band: table(
      'One band of a meter: what to do above which rate and burst.',
      {},
      {
        action: str({ enum: ['drop'] }),
        rate: UINT32_POSITIVE,
        burst_size: int({ min: 0, max: 4294967295 }),
        external_ids: smap(),
      },
    ),

    Copp: table(
      'Control plane protection: which meter limits each kind of packet punted to ovn-controller.',
      { isRoot: true, indexes: [['name']] },
      {
        name: str(),
        meters: smap(),
        external_ids: smap(),
      },
    ),

    Mirror: table(
      'A port mirroring session: which direction of traffic to copy, and the GRE or ERSPAN sink.',
      { isRoot: true, indexes: [['name']] },
      MIRROR_COLUMNS,
    ),

    // --- Logical routers ----------------------------------------------------------------------

    Logical_Router: table(
      'A logical L3 router: its ports, routes, policies, NAT rules and load balancers.',
      { isRoot: true },
      {
        name: str(),
        ports: set(ref('Logical_Router_Port')),
        static_routes: set(ref('Logical_Router_Static_Route')),
        policies: set(ref('Logical_Router_Policy')),
        enabled: optional(bool()),
        nat: set(ref('NAT')),
        load_balancer: set(ref('Load_Balancer', 'weak')),
        load_balancer_group: set(ref('Load_Balancer_Group')),
        copp: optional(ref('Copp', 'weak')),
        options: smap(),
        external_ids: smap(),
      },
    ),

    Logical_Router_Port: table(
      'A port on a logical router with its MAC and networks; a gateway port when given chassis.',
      { indexes: [['name']] },
      {
        name: str(),
        gateway_chassis: set(ref('Gateway_Chassis')),
        ha_chassis_group: optional(ref('HA_Chassis_Group')),
        options: smap(),
        networks: set(str(), { min: 1 }),
        mac: str(),
        peer: optional(str()),
        enabled: optional(bool()),
        ipv6_ra_configs: smap(),
        ipv6_prefix: set(str()),
        external_ids: smap(),
      },
    ),

    Logical_Router_Static_Route: table(
      'A static route of a router: prefix, next hop, optional output port and BFD session.',
      {},
      {
        route_table: str(),
        ip_prefix: str(),
        policy: optional(str({ enum: ['src-ip', 'dst-ip'] })),
        nexthop: str(),
        output_port: optional(str()),
        bfd: optional(ref('BFD', 'weak')),
        options: smap(),
        external_ids: smap(),
      },
    ),

    Logical_Router_Policy: table(
      'A policy-based routing rule: allow, drop or reroute what a match selects.',
      {},
      {
        priority: PRIORITY,
        match: str(),
        action: str({ enum: ['allow', 'drop', 'reroute'] }),
        nexthop: optional(str()),
        nexthops: set(str()),
        options: smap(),
        external_ids: smap(),
      },
    ),

    NAT: table(
      'A NAT rule of a router: SNAT, DNAT or both, between a logical and an external address.',
      {},
      {
        external_ip: str(),
        external_mac: optional(str()),
        external_port_range: str(),
        logical_ip: str(),
        logical_port: optional(str()),
        type: str({ enum: ['dnat', 'snat', 'dnat_and_snat'] }),
        allowed_ext_ips: optional(ref('Address_Set')),
        exempted_ext_ips: optional(ref('Address_Set')),
        gateway_port: optional(ref('Logical_Router_Port', 'weak')),
        options: smap(),
        external_ids: smap(),
      },
    ),

    BFD: table(
      'A BFD session that a router port runs to a peer address; ovn-controller reports its status.',
      { isRoot: true, indexes: [['logical_port', 'dst_ip']] },
      {
        logical_port: str(),
        dst_ip: str(),
        min_tx: optional(int({ min: 1 })),
        min_rx: optional(int()),
        detect_mult: optional(int({ min: 1 })),
        status: optional(str({ enum: ['down', 'init', 'up', 'admin_down'] })),
        external_ids: smap(),
        options: smap(),
      },
    ),

    Static_MAC_Binding: table(
      'An IP to MAC binding set by hand on a router port, rather than learned by ARP or ND.',
      { isRoot: true, indexes: [['logical_port', 'ip']] },
      {
        logical_port: str(),
        ip: str(),
        mac: str(),
        override_dynamic_mac: bool(),
      },
    ),

    // --- Gateway chassis and high availability ------------------------------------------------

    Gateway_Chassis: table(
      'One chassis, with its priority, that may host a distributed gateway port.',
      { indexes: [['name']] },
      {
        name: str(),
        chassis_name: str(),
        priority: PRIORITY,
        external_ids: smap(),
        options: smap(),
      },
    ),

    HA_Chassis: table(
      'One member chassis of an HA chassis group, with its priority.',
      {},
      {
        chassis_name: str(),
        priority: PRIORITY,
        external_ids: smap(),
      },
    ),

    HA_Chassis_Group: table(
      'A named, prioritized set of chassis among which one is active for a port.',
      { isRoot: true, indexes: [['name']] },
      {
        name: str(),
        ha_chassis: set(ref('HA_Chassis')),
        external_ids: smap(),
      },
    ),

    // --- Templates ----------------------------------------------------------------------------

    Chassis_Template_Var: table(
      'Per-chassis values for template variables (^name) used in load balancers and ACLs.',
      { isRoot: true, indexes: [['chassis']] },
      {
        chassis: str(),
        variables: smap(),
        external_ids: smap(),
      },
    ),
  },
});
