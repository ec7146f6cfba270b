// ovn-nbctl's gateway commands: the gateway chassis of a distributed gateway port
// (lrp-set-gateway-chassis, lrp-del-gateway-chassis, lrp-get-gateway-chassis) and HA chassis
// groups (ha-chassis-group-*), with ovn-nbctl 23.03's argument rules, messages and listings.
// Gateway_Chassis and HA_Chassis rows are not roots: a row dropped from its port's or group's
// set is collected by the database, as ovn-nbctl relies on.
import type { CommandSpec, NbAccess, RowJson } from './nb.js';
import { NbctlError, byUuid, findRecord, setOf, strcmp, text, uuidOf, uuidRef } from './nb.js';
import { parsePriority } from './router-commands.js';


const uuidOrder = (a: RowJson, b: RowJson): number => strcmp(uuidOf(a), uuidOf(b));

/**
 * The rows a set column points at, in UUID order: the order of the set in ovn-nbctl's IDL,
 * which decides which row its "first match" loops find.
 */
async function members(nb: NbAccess, owner: RowJson, column: string, table: string): Promise<RowJson[]> {
  const ids = new Set(setOf(owner[column]).map(text));
  if (ids.size === 0) return [];
  return (await nb.rows(table)).filter((r) => ids.has(uuidOf(r))).sort(uuidOrder);
}

const findRouterPort = (nb: NbAccess, id: string): Promise<RowJson> => findRecord(nb, 'Logical_Router_Port', id, 'port');

/**
 * ovn-nbctl's order of a port's gateway chassis (lrp-get-gateway-chassis, show): priority
 * descending, then name descending.
 */
export function gatewayChassisOrder(a: RowJson, b: RowJson): number {
  const p = Number(b.priority) - Number(a.priority);
  return p !== 0 ? p : strcmp(String(b.name), String(a.name));
}

// --- gateway chassis -----------------------------------------------------------------------

const lrpSetGatewayChassis: CommandSpec = {
  args: [2, 3],
  // Declared by ovn-nbctl, and without effect: setting a chassis again updates its priority.
  options: '--may-exist',
  run: async (nb, [port, chassis, priorityArg]) => {
    const lrp = await findRouterPort(nb, port as string);
    const priority = priorityArg === undefined ? 0 : parsePriority(priorityArg);
    // The row's name is made of the port as given (a UUID stays one) and the chassis, and it is
    // looked up among every port's gateway chassis, as ovn-nbctl looks it up.
    const name = `${port}-${chassis}`;
    const existing = (await nb.rows('Gateway_Chassis', [['name', '==', name]]))[0];
    if (existing !== undefined) {
      await nb.transact([
        { op: 'update', table: 'Gateway_Chassis', where: byUuid(existing), row: { priority } },
        { op: 'mutate', table: 'Logical_Router_Port', where: byUuid(lrp), mutations: [['gateway_chassis', 'insert', uuidRef(uuidOf(existing))]] },
      ]);
      return '';
    }
    await nb.transact([
      { op: 'insert', table: 'Gateway_Chassis', 'uuid-name': 'gc', row: { name, chassis_name: chassis, priority } },
      { op: 'mutate', table: 'Logical_Router_Port', where: byUuid(lrp), mutations: [['gateway_chassis', 'insert', ['named-uuid', 'gc']]] },
    ]);
    return '';
  },
};

const lrpDelGatewayChassis: CommandSpec = {
  args: [2, 2],
  options: '',
  run: async (nb, [port, chassis]) => {
    const lrp = await findRouterPort(nb, port as string);
    // As in ovn-nbctl, a gateway chassis matches when its chassis name begins the argument.
    const gc = (await members(nb, lrp, 'gateway_chassis', 'Gateway_Chassis')).find((g) => (chassis as string).startsWith(String(g.chassis_name)));
    if (gc === undefined) throw new NbctlError(`chassis ${chassis} is not added to logical port ${port}`);
    await nb.transact([{ op: 'mutate', table: 'Logical_Router_Port', where: byUuid(lrp), mutations: [['gateway_chassis', 'delete', uuidRef(uuidOf(gc))]] }]);
    return '';
  },
};

const lrpGetGatewayChassis: CommandSpec = {
  args: [1, 1],
  options: '',
  run: async (nb, [port]) => {
    const lrp = await findRouterPort(nb, port as string);
    const gcs = (await members(nb, lrp, 'gateway_chassis', 'Gateway_Chassis')).sort(gatewayChassisOrder);
    return gcs.map((g) => `${String(g.name)} ${String(g.priority).padStart(5)}\n`).join('');
  },
};

// --- HA chassis groups ---------------------------------------------------------------------

/** ovn-nbctl's lookup of a group by UUID or name, with its message (its spelling kept). */
const findGroup = (nb: NbAccess, id: string): Promise<RowJson> => findRecord(nb, 'HA_Chassis_Group', id, 'ha_chassi_group');

/** The group's member of this chassis name, or ovn-nbctl's message when there is none. */
async function groupMember(nb: NbAccess, group: RowJson, groupArg: string, chassis: string): Promise<RowJson> {
  const member = (await members(nb, group, 'ha_chassis', 'HA_Chassis')).find((c) => c.chassis_name === chassis);
  if (member === undefined) throw new NbctlError(`${chassis}: ha chassis not found in ${groupArg} ha chassis group`);
  return member;
}

const haChassisGroupAdd: CommandSpec = {
  args: [1, 1],
  // No check for an existing group: the name index refuses a second one.
  options: '',
  run: async (nb, [name]) => {
    await nb.transact([{ op: 'insert', table: 'HA_Chassis_Group', row: { name } }]);
    return '';
  },
};

const haChassisGroupDel: CommandSpec = {
  args: [1, 1],
  options: '',
  run: async (nb, [id]) => {
    const group = await findGroup(nb, id as string);
    await nb.transact([{ op: 'delete', table: 'HA_Chassis_Group', where: byUuid(group) }]);
    return '';
  },
};

const haChassisGroupList: CommandSpec = {
  args: [0, 0],
  options: '',
  // ovn-nbctl lists the groups in its IDL's hash order, which is no order to a reader: here by
  // name. Each group's chassis come in UUID order, as in ovn-nbctl.
  run: async (nb) => {
    const groups = (await nb.rows('HA_Chassis_Group')).sort((a, b) => strcmp(String(a.name), String(b.name)) || uuidOrder(a, b));
    const chassis = new Map((await nb.rows('HA_Chassis')).map((c) => [uuidOf(c), c]));
    let out = '';
    for (const g of groups) {
      out += `${uuidOf(g)} (${String(g.name)})\n`;
      const mine = setOf(g.ha_chassis).map(text).sort(strcmp);
      for (const id of mine) {
        const c = chassis.get(id);
        if (c !== undefined) out += `    ${id} (${String(c.chassis_name)})\n    priority ${String(c.priority)}\n\n`;
      }
      out += '\n';
    }
    return out;
  },
};

const haChassisGroupAddChassis: CommandSpec = {
  args: [3, 3],
  options: '',
  run: async (nb, [id, chassis, priorityArg]) => {
    const group = await findGroup(nb, id as string);
    const priority = parsePriority(priorityArg as string);
    const member = (await members(nb, group, 'ha_chassis', 'HA_Chassis')).find((c) => c.chassis_name === chassis);
    if (member !== undefined) {
      await nb.transact([{ op: 'update', table: 'HA_Chassis', where: byUuid(member), row: { priority } }]);
      return '';
    }
    await nb.transact([
      { op: 'insert', table: 'HA_Chassis', 'uuid-name': 'c', row: { chassis_name: chassis, priority } },
      { op: 'mutate', table: 'HA_Chassis_Group', where: byUuid(group), mutations: [['ha_chassis', 'insert', ['named-uuid', 'c']]] },
    ]);
    return '';
  },
};

const haChassisGroupRemoveChassis: CommandSpec = {
  args: [2, 2],
  options: '',
  run: async (nb, [id, chassis]) => {
    const group = await findGroup(nb, id as string);
    const member = await groupMember(nb, group, id as string, chassis as string);
    await nb.transact([{ op: 'mutate', table: 'HA_Chassis_Group', where: byUuid(group), mutations: [['ha_chassis', 'delete', uuidRef(uuidOf(member))]] }]);
    return '';
  },
};

const haChassisGroupSetChassisPrio: CommandSpec = {
  args: [3, 3],
  options: '',
  run: async (nb, [id, chassis, priorityArg]) => {
    const group = await findGroup(nb, id as string);
    const priority = parsePriority(priorityArg as string);
    const member = await groupMember(nb, group, id as string, chassis as string);
    await nb.transact([{ op: 'update', table: 'HA_Chassis', where: byUuid(member), row: { priority } }]);
    return '';
  },
};

export const gatewayCommands: Record<string, CommandSpec> = {
  'lrp-set-gateway-chassis': lrpSetGatewayChassis,
  'lrp-del-gateway-chassis': lrpDelGatewayChassis,
  'lrp-get-gateway-chassis': lrpGetGatewayChassis,
  'ha-chassis-group-add': haChassisGroupAdd,
  'ha-chassis-group-del': haChassisGroupDel,
  'ha-chassis-group-list': haChassisGroupList,
  'ha-chassis-group-add-chassis': haChassisGroupAddChassis,
  'ha-chassis-group-remove-chassis': haChassisGroupRemoveChassis,
  'ha-chassis-group-set-chassis-prio': haChassisGroupSetChassisPrio,
};
