// The role-based access control ovn-northd sets up in the Southbound database: one role,
// "ovn-controller", the role an operator gives the remote chassis connect to
// (`ovn-sbctl set-connection role=ovn-controller pssl:6642`), with the permissions ovn-northd
// 23.03 writes into RBAC_Role and RBAC_Permission (northd/ovn-northd.c, rbac_perm_cfg). A chassis
// connects with a certificate whose common name is its chassis name, and may then change only
// its own Chassis, Chassis_Private and Encap rows, the chassis-owned columns of the rows northd
// derives, and the tables every chassis shares (MAC_Binding, FDB, IGMP_Group, Controller_Event).
//
// ovnts enforces this set as it stands here (server/chassis-store.ts). The SB view shows it as
// ovn-northd writes it, one RBAC_Role row and an RBAC_Permission row per table (`rbacNode`), with
// UUIDs derived from their names so every replica names them alike; like every row northd
// derives, they are read-only to clients. ovn-northd writes its rows back over any change an
// operator makes, so the set in force is always its own: here it cannot be changed at all.
import type { RbacPermission } from '../ovsdb/index.js';
import type * as sb from '../ovsdb/rows/sb.js';
import type { EngineNode } from './engine.js';
import { hashUuid } from './hash.js';
import { SbChangeSet, SbTable, versioned } from './sb-changes.js';

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

/** The UUID of the RBAC_Role row of `role`. */
export function rbacRoleUuid(role: string): string {
  return hashUuid(['RBAC_Role', role]);
}

/** The UUID of the RBAC_Permission row of `role` on `table`. */
export function rbacPermissionUuid(role: string, table: string): string {
  return hashUuid(['RBAC_Permission', role, table]);
}

export interface RbacData {
  readonly roles: SbTable;
  readonly permissions: SbTable;
}

/** The rows, from the constant: they never change, so a run after the first leaves them as they are. */
function write(data: RbacData, out: SbChangeSet): void {
  const permissions = new Map<string, string>();
  for (const [table, p] of [...ovnControllerPermissions].sort((a, b) => (a[0] < b[0] ? -1 : 1))) {
    const uuid = rbacPermissionUuid(OVN_CONTROLLER_ROLE, table);
    permissions.set(table, uuid);
    data.permissions.put(versioned<sb.RBAC_Permission>({
      _uuid: uuid, _version: '', table: p.table, authorization: [...p.authorization].sort(), insert_delete: p.insertDelete, update: [...p.update].sort(),
    }), out);
  }
  data.roles.put(versioned<sb.RBAC_Role>({ _uuid: rbacRoleUuid(OVN_CONTROLLER_ROLE), _version: '', name: OVN_CONTROLLER_ROLE, permissions }), out);
}

/**
 * RBAC_Role and RBAC_Permission as ovn-northd writes them. The node reads the NB only to run
 * with the others: no NB change touches its rows.
 */
export function rbacNode(): EngineNode<RbacData, SbChangeSet> {
  return {
    name: 'rbac',
    inputs: ['nb'],
    init: () => ({ roles: new SbTable('RBAC_Role'), permissions: new SbTable('RBAC_Permission') }),
    newChange: () => new SbChangeSet(),
    isEmpty: (c) => c.size === 0,
    recompute(data: RbacData, _inputs, out: SbChangeSet): void {
      write(data, out);
    },
    handlers: {
      nb: () => 'unchanged',
    },
  };
}
