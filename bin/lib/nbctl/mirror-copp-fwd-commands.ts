// ovn-nbctl's port mirroring commands (mirror-add, mirror-del, mirror-list, lsp-attach-mirror,
// lsp-detach-mirror), forwarding group commands (fwd-group-add, fwd-group-del, fwd-group-list)
// and control plane protection commands (copp-add, copp-del, copp-list, ls-copp-add,
// lr-copp-add), with ovn-nbctl 23.03's argument rules, messages and listings. Mirror and Copp
// rows are roots that ports, switches and routers refer to weakly; a Forwarding_Group row
// belongs to the switch that holds it.
import { ethAddrFromString } from '../../../northd/netaddr.js';
import { inetPton4, normalizeAddrStr } from './inet.js';
import type { CommandSpec, NbAccess, RowJson } from './nb.js';
import { NbctlError, byUuid, col, findRecord, isUuid, mapOf, maybeRecord, setOf, strcmp, text, uuidOf, uuidRef } from './nb.js';
import { smapOrder } from './smap-order.js';

const findSwitch = (nb: NbAccess, id: string): Promise<RowJson> => findRecord(nb, 'Logical_Switch', id, 'switch');
const findPort = (nb: NbAccess, id: string): Promise<RowJson> => findRecord(nb, 'Logical_Switch_Port', id, 'port');

/** The switch whose ports include `lsp`, with ovn-nbctl's message when there is none. */
async function switchOfPort(nb: NbAccess, lsp: RowJson): Promise<RowJson> {
  const id = uuidOf(lsp);
  const ls = (await nb.rows('Logical_Switch')).find((r) => setOf(r.ports).some((p) => text(p) === id));
  if (ls === undefined) throw new NbctlError(`logical port ${String(lsp.name)} is not part of any logical switch`);
  return ls;
}

/** OVS's str_to_long in base 10: the whole text a long (leading blanks and a sign allowed). */
function strToLong(s: string): bigint | undefined {
  if (!/^[ \t\n\v\f\r]*[+-]?\d+$/.test(s)) return undefined;
  const v = BigInt(s.trim());
  // strtol's ERANGE.
  return v === BigInt.asIntN(64, v) ? v : undefined;
}

// --- mirrors -------------------------------------------------------------------------------

const findMirror = (nb: NbAccess, id: string): Promise<RowJson> => findRecord(nb, 'Mirror', id, 'mirror');

/** ovn-nbctl reads a mirror's type and filter by their first letter alone. */
function mirrorType(arg: string): 'gre' | 'erspan' {
  if (arg.startsWith('g')) return 'gre';
  if (arg.startsWith('e')) return 'erspan';
  throw new NbctlError(`${arg}: type must be "gre" or "erspan"`);
}

function mirrorFilter(arg: string): 'to-lport' | 'from-lport' {
  if (arg.startsWith('t')) return 'to-lport';
  if (arg.startsWith('f')) return 'from-lport';
  throw new NbctlError(`${arg}: selection must be "to-lport" or "from-lport"`);
}

const mirrorAdd: CommandSpec = {
  args: [5, 5],
  // ovn-nbctl takes --may-exist here and does nothing with it: a second mirror of a name fails.
  options: '--may-exist',
  run: async (nb, [name, typeArg, indexArg, filterArg, sink]) => {
    if ((await nb.rows('Mirror', [['name', '==', name]])).length > 0) throw new NbctlError(`Mirror with ${name} name already exists.`);
    const type = mirrorType(typeArg as string);
    const index = strToLong(indexArg as string);
    if (index === undefined) throw new NbctlError('Invalid Index');
    const filter = mirrorFilter(filterArg as string);
    // The sink must read as an IPv4 or IPv6 address; it is stored as given.
    if (normalizeAddrStr(sink as string) === undefined) throw new NbctlError(`Invalid sink ip: ${sink}`);
    await nb.transact([{ op: 'insert', table: 'Mirror', row: { name, type, index: Number(index), filter, sink } }]);
    return '';
  },
};

const mirrorDel: CommandSpec = {
  args: [0, 1],
  options: '',
  run: async (nb, [name]) => {
    // Without a name every mirror goes; a name no mirror has is no error.
    const doomed = name === undefined ? await nb.rows('Mirror') : (await nb.rows('Mirror', [['name', '==', name]])).slice(0, 1);
    if (doomed.length > 0) await nb.transact(doomed.map((m) => ({ op: 'delete', table: 'Mirror', where: byUuid(m) })));
    return '';
  },
};

const mirrorList: CommandSpec = {
  args: [0, 0],
  options: '',
  run: async (nb) =>
    (await nb.rows('Mirror'))
      .sort((a, b) => strcmp(String(a.name), String(b.name)))
      .map((m) => `${String(m.name)}:\n  Type     :  ${String(m.type)}\n  Sink     :  ${String(m.sink)}\n  Filter   :  ${String(m.filter)}\n  Index/Key:  ${String(m.index)}\n\n`)
      .join(''),
};

const lspAttachMirror: CommandSpec = {
  args: [2, 2],
  options: '--may-exist',
  run: async (nb, [port, mirrorId], flags) => {
    const lsp = await findPort(nb, port as string);
    const mirror = await findMirror(nb, mirrorId as string);
    if (setOf(lsp.mirror_rules).some((r) => text(r) === uuidOf(mirror))) {
      if (flags.has('--may-exist')) return '';
      throw new NbctlError(`mirror ${String(mirror.name)} is already attached to the logical port ${port}.`);
    }
    await nb.transact([{ op: 'mutate', table: 'Logical_Switch_Port', where: byUuid(lsp), mutations: [['mirror_rules', 'insert', uuidRef(uuidOf(mirror))]] }]);
    return '';
  },
};

const lspDetachMirror: CommandSpec = {
  args: [2, 2],
  options: '',
  run: async (nb, [port, mirrorId]) => {
    const lsp = await findPort(nb, port as string);
    const mirror = await findMirror(nb, mirrorId as string);
    // A mirror the port does not have is no error.
    await nb.transact([{ op: 'mutate', table: 'Logical_Switch_Port', where: byUuid(lsp), mutations: [['mirror_rules', 'delete', uuidRef(uuidOf(mirror))]] }]);
    return '';
  },
};

// --- forwarding groups ---------------------------------------------------------------------

/**
 * A forwarding group by UUID or name, as ovn-nbctl finds one: the first of a name, never an
 * error (the table has no index on names, so two may share one).
 */
async function maybeFwdGroup(nb: NbAccess, id: string): Promise<RowJson | undefined> {
  if (isUuid(id)) {
    const byId = (await nb.rows('Forwarding_Group', [['_uuid', '==', uuidRef(id.toLowerCase())]]))[0];
    if (byId !== undefined) return byId;
  }
  return (await nb.rows('Forwarding_Group', [['name', '==', id]]))[0];
}

/**
 * The switch ovn-nbctl takes a forwarding group to be in: the one holding its first child
 * port, or none when that port is gone.
 */
async function fwdGroupSwitch(nb: NbAccess, group: RowJson): Promise<RowJson | undefined> {
  const first = text(setOf(group.child_port)[0]);
  const lsp = await maybeRecord(nb, 'Logical_Switch_Port', first, 'port');
  return lsp === undefined ? undefined : switchOfPort(nb, lsp);
}

const fwdGroupAdd: CommandSpec = {
  args: [4, Infinity],
  options: '--liveness',
  run: async (nb, [name, sw, vip, vmac, ...ports], flags) => {
    // ovn-nbctl takes four arguments and then asks for at least one port.
    if (ports.length === 0) throw new NbctlError('Usage : ovn-nbctl fwd-group-add group switch vip vmac child_ports...');
    if ((await maybeFwdGroup(nb, name as string)) !== undefined) throw new NbctlError(`${name}: a forwarding group by this name already exists`);
    let ls = await findSwitch(nb, sw as string);
    if (inetPton4(vip as string) === undefined) throw new NbctlError(`invalid ip address ${vip}`);
    if (ethAddrFromString(vmac as string) === undefined) throw new NbctlError(`invalid mac address ${vmac}`);
    for (const port of ports) {
      const lsp = await maybeRecord(nb, 'Logical_Switch_Port', port, 'port');
      if (lsp === undefined) throw new NbctlError(`${port}: logical switch port does not exist`);
      // As in ovn-nbctl, the port's switch must have the name given (a switch given by UUID
      // never does), and the group goes to that switch.
      ls = await switchOfPort(nb, lsp);
      if (ls.name !== sw) throw new NbctlError(`${port}: port already exists but in logical switch ${String(ls.name)}`);
    }
    const row: Record<string, unknown> = { name, vip, vmac, child_port: ['set', [...new Set(ports)].sort(strcmp)] };
    if (flags.has('--liveness')) row.liveness = true;
    await nb.transact([
      { op: 'insert', table: 'Forwarding_Group', 'uuid-name': 'fg', row },
      { op: 'mutate', table: 'Logical_Switch', where: byUuid(ls), mutations: [['forwarding_groups', 'insert', ['named-uuid', 'fg']]] },
    ]);
    return '';
  },
};

const fwdGroupDel: CommandSpec = {
  args: [1, 1],
  // ovn-nbctl takes --if-exists and needs none: a group it cannot find is no error anyway.
  options: '--if-exists',
  run: async (nb, [id]) => {
    const group = await maybeFwdGroup(nb, id as string);
    if (group === undefined) return '';
    const ls = await fwdGroupSwitch(nb, group);
    if (ls === undefined) return '';
    // ovn-nbctl drops the switch's first group (in UUID order) with this group's name.
    const held = new Set(setOf(ls.forwarding_groups).map(text));
    const sameName = (await nb.rows('Forwarding_Group', [['name', '==', group.name]])).filter((g) => held.has(uuidOf(g))).sort((a, b) => strcmp(uuidOf(a), uuidOf(b)))[0];
    if (sameName === undefined) return '';
    await nb.transact([
      { op: 'mutate', table: 'Logical_Switch', where: byUuid(ls), mutations: [['forwarding_groups', 'delete', uuidRef(uuidOf(sameName))]] },
      { op: 'delete', table: 'Forwarding_Group', where: byUuid(group) },
    ]);
    return '';
  },
};

const fwdGroupList: CommandSpec = {
  args: [0, 1],
  options: '',
  // ovn-nbctl lists the groups in its IDL's hash order, which is no order to a reader: here by
  // name, then UUID. With a switch, only the groups whose switch has that name are listed.
  run: async (nb, [sw]) => {
    if (sw !== undefined) await findSwitch(nb, sw);
    let out = `${col('FWD_GROUP', 16, 16)}${col('LS', 14, 16)}${col('VIP', 16, 7)}${col('VMAC', 22, 21)}CHILD_PORTS\n`;
    const groups = (await nb.rows('Forwarding_Group')).sort((a, b) => strcmp(String(a.name), String(b.name)) || strcmp(uuidOf(a), uuidOf(b)));
    for (const g of groups) {
      const ls = await fwdGroupSwitch(nb, g);
      if (ls === undefined || (sw !== undefined && ls.name !== sw)) continue;
      out += `${col(String(g.name), 16, 16)}${col(String(ls.name), 14, 18)}${col(String(g.vip), 15, 16)}${col(String(g.vmac), 9, 18)}     `;
      out += `${setOf(g.child_port).map((p) => ` ${text(p)}`).join('')}\n`;
    }
    return out;
  },
};

// --- control plane protection --------------------------------------------------------------

/** The control protocols a CoPP policy may meter, in ovn-nbctl's order (its error lists them). */
const coppProtocols = [
  'arp', 'arp-resolve', 'dhcpv4-opts', 'dhcpv6-opts', 'dns', 'event-elb', 'icmp4-error', 'icmp6-error', 'igmp',
  'nd-na', 'nd-ns', 'nd-ns-resolve', 'nd-ra-opts', 'tcp-reset', 'bfd', 'reject', 'svc-monitor',
] as const;

function checkCoppProtocol(proto: string): void {
  if (!(coppProtocols as readonly string[]).includes(proto)) throw new NbctlError(`Invalid control protocol. Allowed values: ${coppProtocols.join(', ')}.`);
}

const findCopp = (nb: NbAccess, id: string): Promise<RowJson> => findRecord(nb, 'Copp', id, 'copp');
const maybeCopp = (nb: NbAccess, id: string): Promise<RowJson | undefined> => maybeRecord(nb, 'Copp', id, 'copp');

const meterPairs = (copp: RowJson): [string, string][] => mapOf(copp.meters).map(([k, v]) => [text(k), text(v)]);

const coppAdd: CommandSpec = {
  args: [3, 3],
  options: '',
  run: async (nb, [id, proto, meter]) => {
    checkCoppProtocol(proto as string);
    // The meter is not looked up: a policy may name a meter before it exists.
    // A policy named is made when missing; one given by UUID must exist, and keeps its name.
    const byId = isUuid(id as string);
    const copp = byId ? await findCopp(nb, id as string) : await maybeCopp(nb, id as string);
    const meters = ['map', [...meterPairs(copp ?? {}).filter(([k]) => k !== proto), [proto, meter]]];
    const row: Record<string, unknown> = byId ? { meters } : { name: id, meters };
    await nb.transact([copp === undefined ? { op: 'insert', table: 'Copp', row } : { op: 'update', table: 'Copp', where: byUuid(copp), row }]);
    return '';
  },
};

const coppDel: CommandSpec = {
  args: [1, 2],
  options: '',
  run: async (nb, [id, proto]) => {
    if (proto !== undefined) checkCoppProtocol(proto);
    const copp = await maybeCopp(nb, id as string);
    if (copp === undefined) return '';
    // Without a protocol the whole policy goes, and so does one left with no meters.
    const left = proto === undefined ? [] : meterPairs(copp).filter(([k]) => k !== proto);
    const op = left.length === 0 ? { op: 'delete', table: 'Copp', where: byUuid(copp) } : { op: 'update', table: 'Copp', where: byUuid(copp), row: { meters: ['map', left] } };
    await nb.transact([op]);
    return '';
  },
};

const coppList: CommandSpec = {
  args: [1, 1],
  options: '',
  run: async (nb, [id]) => {
    // A policy that does not exist lists as nothing.
    const copp = await maybeCopp(nb, id as string);
    return copp === undefined ? '' : smapOrder(meterPairs(copp)).map(([k, v]) => `${k}: ${v}\n`).join('');
  },
};

/** ls-copp-add and lr-copp-add: the entity first, then the policy, both of which must exist. */
function coppAttach(table: 'Logical_Switch' | 'Logical_Router', what: 'switch' | 'router'): CommandSpec {
  return {
    args: [2, 2],
    options: '',
    run: async (nb, [id, entityId]) => {
      const entity = await findRecord(nb, table, entityId as string, what);
      const copp = await findCopp(nb, id as string);
      await nb.transact([{ op: 'update', table, where: byUuid(entity), row: { copp: uuidRef(uuidOf(copp)) } }]);
      return '';
    },
  };
}

export const mirrorCoppFwdCommands: Record<string, CommandSpec> = {
  'mirror-add': mirrorAdd,
  'mirror-del': mirrorDel,
  'mirror-list': mirrorList,
  'lsp-attach-mirror': lspAttachMirror,
  'lsp-detach-mirror': lspDetachMirror,
  'fwd-group-add': fwdGroupAdd,
  'fwd-group-del': fwdGroupDel,
  'fwd-group-list': fwdGroupList,
  'copp-add': coppAdd,
  'copp-del': coppDel,
  'copp-list': coppList,
  'ls-copp-add': coppAttach('Logical_Switch', 'switch'),
  'lr-copp-add': coppAttach('Logical_Router', 'router'),
};
