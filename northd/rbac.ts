// The role-based access control ovn-northd sets up in the Southbound database: one role,
// "ovn-controller", the role an operator gives the remote chassis connect to
// (`ovn-sbctl set-connection role=ovn-controller pssl:6642`), with the permissions ovn-northd
// 23.03 writes into RBAC_Role and RBAC_Permission (northd/ovn-northd.c, rbac_perm_cfg). A chassis
// connects with a certificate whose common name is its chassis name, and may then change only
// its own Chassis, Chassis_Private and Encap rows, the chassis-owned columns of the rows northd
// derives, and the tables every chassis shares (MAC_Binding, FDB, IGMP_Group, Controller_Event).
//
// ovnts enforces this set as it stands here (server/chassis-store.ts), whatever an operator
// might write into the RBAC tables: the set is part of the OVN release ovnts follows, as it is
// of ovn-northd, which writes it back over any change.
import type { RbacPermission } from '../ovsdb/index.js';

/** The one role ovn-northd defines. */
export const OVN_CONTROLLER_ROLE = 'ovn-controller';

/** ovn-northd 23.03's permissions of the ovn-controller role, by table. */
export const ovnControllerPermissions: ReadonlyMap<string, RbacPermission> = new Map(([
  { table: 'Chassis', authorization: ['name'], insertDelete: true, update: ['nb_cfg', 'external_ids', 'encaps', 'vtep_logical_switches', 'other_config', 'transport_zones'] },
  { table: 'Chassis_Private', authorization: ['name'], insertDelete: true, update: ['nb_cfg', 'nb_cfg_timestamp', 'chassis', 'external_ids'] },
  { table: 'Controller_Event', authorization: [''], insertDelete: true, update: ['chassis', 'event_info', 'event_type', 'seq_num'] },
  { table: 'Encap', authorization: ['chassis_name'], insertDelete: true, update: ['type', 'options', 'ip'] },
  { table: 'FDB', authorization: [''], insertDelete: true, update: ['dp_key', 'mac', 'port_key'] },
  { table: 'Port_Binding', authorization: [''], insertDelete: false, update: ['chassis', 'additional_chassis', 'encap', 'additional_encap', 'up', 'virtual_parent', 'options'] },
  { table: 'MAC_Binding', authorization: [''], insertDelete: true, update: ['logical_port', 'ip', 'mac', 'datapath', 'timestamp'] },
  { table: 'Service_Monitor', authorization: [''], insertDelete: false, update: ['status'] },
  { table: 'IGMP_Group', authorization: [''], insertDelete: true, update: ['address', 'chassis', 'datapath', 'ports'] },
  { table: 'BFD', authorization: [''], insertDelete: false, update: ['status'] },
] as const).map((p) => [p.table, p]));

/** The permission lookup of OVN's RBAC (ovsdb/rbac.ts): the ovn-controller role's, and none for any other role. */
export function ovnRbacPermission(role: string, table: string): RbacPermission | undefined {
  return role === OVN_CONTROLLER_ROLE ? ovnControllerPermissions.get(table) : undefined;
}
