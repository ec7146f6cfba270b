// ovn-nbctl's logical commands (switches, ports, routers, ACLs, port groups, address sets),
// with its argument rules, flags (--may-exist, --if-exists) and messages; plus routes, routing
// policies and NAT (router-commands.ts), router port settings and static MAC bindings
// (router-port-commands.ts), gateway chassis and HA chassis groups (gateway-commands.ts), QoS
// rules and meters (qos-meter-commands.ts), load balancers and DHCP options
// (lb-dhcp-commands.ts), port mirrors, forwarding groups and CoPP
// (mirror-copp-fwd-commands.ts), init, connections and SSL (global-commands.ts) and the
// generic database commands (db-commands.ts). `runNbctl` is the whole command line minus
// endpoints; several commands run in one transaction (transaction.ts).
import assert from 'node:assert';
import { extractLspAddresses, isDynamicAddress, startsWithEthAddr } from '../../../northd/netaddr.js';
import { dbCommands } from './db-commands.js';
import { gatewayChassisOrder, gatewayCommands } from './gateway-commands.js';
import { globalCommands } from './global-commands.js';
import { lbDhcpCommands } from './lb-dhcp-commands.js';
import { mirrorCoppFwdCommands } from './mirror-copp-fwd-commands.js';
import type { CommandSpec, Nb, NbAccess, RowJson } from './nb.js';
import { NbctlError, byUuid, findRecord, listing, mapOf, maybeRecord, parseDirection, parseEnabled, setOf, text, uuidOf, uuidRef } from './nb.js';
import { tableStyle } from './record-table.js';
import { qosMeterCommands } from './qos-meter-commands.js';
import { parsePriority, routerCommands } from './router-commands.js';
import { routerPortCommands } from './router-port-commands.js';
import { alarmMessage, waitCutsInARowMax, waitUntil } from './wait-until.js';
import { NbTransaction, TryAgain } from './transaction.js';

/** Whether getopt gives an option no value, takes the next word (or "=value") as one, or may. */
type OptionArgument = 'none' | 'required' | 'optional';

/**
 * ovn-nbctl's global options, which are no command's own: read before the command and before
 * any "--", as getopt reads them. (--columns is not one: it belongs to list and find.)
 */
const globalOptions: Readonly<Record<string, OptionArgument>> = {
  '--db': 'required', '--options': 'none', '--timeout': 'required', '--wait': 'required', '--no-wait': 'none', '--dry-run': 'none', '--oneline': 'none',
  '--print-wait-time': 'none', '--leader-only': 'none', '--no-leader-only': 'none', '--shuffle-remotes': 'none', '--no-shuffle-remotes': 'none',
  '--format': 'required', '--data': 'required', '--no-headings': 'none', '--pretty': 'none', '--bare': 'none', '--max-column-width': 'required',
  // The identity to reach the cluster over TLS with (bin/lib/tls-flags.ts): read by `ovnts
  // nbctl` before it connects (tlsFlagsOf), ignored by the commands.
  '--private-key': 'required', '--certificate': 'required', '--ca-cert': 'required',
};

/**
 * Every global option of ovn-nbctl 23.03, in the order of its getopt table (utilities/
 * ovn-dbctl.c, as `ovn-nbctl --options` prints it), with the letter getopt also knows it by.
 * The order and the kinds of value decide what an abbreviation names. Those not in
 * globalOptions set ovn-nbctl's help, logging, daemon or SSL behaviour: ovnts nbctl refuses
 * them by name rather than as unknown.
 */
const ovnNbctlGlobalOptions: readonly (readonly [name: string, argument: OptionArgument, letter?: string])[] = [
  ['--db', 'required'], ['--no-syslog', 'none'], ['--help', 'none', 'h'], ['--commands', 'none'], ['--options', 'none'],
  ['--leader-only', 'none'], ['--no-leader-only', 'none'], ['--shuffle-remotes', 'none'], ['--no-shuffle-remotes', 'none'],
  ['--version', 'none', 'V'], ['--unixctl', 'required', 'u'],
  ['--no-wait', 'none'], ['--wait', 'required'], ['--print-wait-time', 'none'], ['--dry-run', 'none'], ['--oneline', 'none'], ['--timeout', 'required', 't'],
  ['--detach', 'none'], ['--no-self-confinement', 'none'], ['--no-chdir', 'none'], ['--pidfile', 'optional'], ['--overwrite-pidfile', 'none'], ['--monitor', 'none'], ['--user', 'required'],
  ['--verbose', 'optional', 'v'], ['--log-file', 'optional'], ['--syslog-method', 'required'], ['--syslog-target', 'required'],
  ['--private-key', 'required', 'p'], ['--certificate', 'required', 'c'], ['--ca-cert', 'required', 'C'], ['--ssl-protocols', 'required'], ['--ssl-ciphers', 'required'],
  ['--bootstrap-ca-cert', 'required'],
  ['--format', 'required', 'f'], ['--data', 'required', 'd'], ['--no-headings', 'none'], ['--pretty', 'none'], ['--bare', 'none'], ['--max-column-width', 'required'],
];

/** A global option's name by its letter (`-t` is `--timeout`), and the letter by the name. */
const longOfLetter: ReadonlyMap<string, string> = new Map(ovnNbctlGlobalOptions.flatMap(([name, , letter]) => (letter === undefined ? [] : [[letter, name] as const])));
const letterOfLong: ReadonlyMap<string, string> = new Map([...longOfLetter].map(([letter, name]) => [name, letter]));

/**
 * The commands' own options in the order ovn-nbctl 23.03 appends them to its getopt table
 * (each first seen while walking its command table, in that hash table's order; `ovn-nbctl
 * --options` prints them so). When an abbreviation fits several that take the same kind of
 * value, getopt takes the first, so `--a` is `--add-route`.
 */
const commandOptionOrder: readonly string[] = [
  '--if-exists', '--may-exist', '--stateless', '--portrange', '--add-route', '--gateway-port', '--route-table', '--fair', '--id', '--inactivity-probe',
  '--is-exempted', '--log', '--type', '--name', '--severity', '--meter', '--label', '--apply-after-lb', '--ecmp', '--ecmp-symmetric-reply', '--policy',
  '--bfd', '--liveness', '--add-duplicate', '--reject', '--event', '--template', '--columns', '--bootstrap', '--all',
];

const optionName = (word: string): string => word.split('=')[0] as string;
const isGlobal = (word: string): boolean => Object.hasOwn(globalOptions, optionName(word));

/**
 * db-ctl-base's check of a command's options (`given`: every one but the global ones read
 * before it) against its declared ones, with its messages.
 */
function checkOptions(name: string, declared: string, given: readonly string[]): void {
  for (const f of given) {
    const eq = f.indexOf('=');
    const key = eq < 0 ? f : f.slice(0, eq);
    // Like db-ctl-base, the first occurrence of the name in the list decides.
    const at = declared.indexOf(key);
    const end = at < 0 ? undefined : (declared[at + key.length] ?? '');
    if (end === undefined || !['=', ',', '?', ' ', ''].includes(end)) throw new NbctlError(`'${name}' command has no '${key}' option`);
    if (end !== '?' && (end === '=') !== (eq >= 0)) {
      if (end === '=') throw new NbctlError(`missing argument to '${key}' option on '${name}' command`);
      throw new NbctlError(`'${key}' option on '${name}' does not accept an argument`);
    }
  }
}

async function addNamed(nb: NbAccess, table: string, what: string, name: string | undefined, flags: ReadonlySet<string>, row: Record<string, unknown> = {}): Promise<string> {
  const mayExist = flags.has('--may-exist');
  const duplicate = flags.has('--add-duplicate');
  if (mayExist && duplicate) throw new NbctlError('--may-exist and --add-duplicate may not be used together');
  if (name === undefined && mayExist) throw new NbctlError('--may-exist requires specifying a name');
  if (name === undefined && duplicate) throw new NbctlError('--add-duplicate requires specifying a name');
  if (name !== undefined && !duplicate && (await nb.rows(table, [['name', '==', name]])).length > 0) {
    if (flags.has('--may-exist')) return '';
    throw new NbctlError(`${name}: a ${what} with this name already exists`);
  }
  await nb.transact([{ op: 'insert', table, row: name === undefined ? row : { name, ...row } }]);
  return '';
}

async function delNamed(nb: NbAccess, table: string, what: string, id: string, flags: ReadonlySet<string>): Promise<string> {
  const row = await maybeRecord(nb, table, id, what);
  if (row === undefined) {
    if (flags.has('--if-exists')) return '';
    await findRecord(nb, table, id, what); // throws ovn-nbctl's "not found" message
    return '';
  }
  await nb.transact([{ op: 'delete', table, where: byUuid(row) }]);
  return '';
}

/** Removes a child row from its parent's set column; the (non-root) child is then collected. */
async function detach(nb: NbAccess, parentTable: string, column: string, child: RowJson): Promise<void> {
  await nb.transact([{ op: 'mutate', table: parentTable, where: [[column, 'includes', uuidRef(uuidOf(child))]], mutations: [[column, 'delete', uuidRef(uuidOf(child))]] }]);
}

/** KEY=VALUE arguments as pairs; as ovn-nbctl does, an argument without "=" is skipped. */
function keyValues(args: string[]): [string, string][] {
  const pairs: [string, string][] = [];
  for (const a of args) {
    const i = a.indexOf('=');
    if (i >= 0) pairs.push([a.slice(0, i), a.slice(i + 1)]);
  }
  return pairs;
}

/** The switch that holds port `p` (ovn-nbctl's lsp_to_ls). */
async function switchOf(nb: NbAccess, p: RowJson): Promise<RowJson> {
  const id = uuidOf(p);
  const ls = (await nb.rows('Logical_Switch')).find((r) => setOf(r.ports).some((u) => text(u) === id));
  if (ls === undefined) throw new NbctlError(`logical port ${String(p.name)} is not part of any logical switch`);
  return ls;
}

/** The ports of switch `ls` other than `p`: what ovn-nbctl checks an address entry of `p` against. */
async function otherPorts(nb: NbAccess, ls: RowJson, p: RowJson): Promise<RowJson[]> {
  const others = new Set(setOf(ls.ports).map(text));
  others.delete(uuidOf(p));
  return (await nb.rows('Logical_Switch_Port')).filter((r) => others.has(uuidOf(r)));
}

/**
 * ovn-nbctl's lsp_contains_duplicates: the first IP of address entry `entry` that one of `others`
 * already has (in its addresses, or its dynamic addresses for a "dynamic" entry), as its error
 * text; undefined when none does or `entry` holds no MAC and IPs.
 */
function duplicateIp(others: readonly RowJson[], entry: string): string | undefined {
  const mine = extractLspAddresses(entry);
  if (mine === undefined) return undefined;
  for (const other of others) {
    const dynamic = setOf(other.dynamic_addresses).map(text)[0];
    for (const a of setOf(other.addresses).map(text)) {
      const theirs = extractLspAddresses(isDynamicAddress(a) && dynamic !== undefined ? dynamic : a);
      if (theirs === undefined) continue;
      const v4 = mine.ipv4.find((x) => theirs.ipv4.some((y) => y.addr === x.addr));
      if (v4 !== undefined) return `duplicate IPv4 address '${v4.addrS}' found on logical switch port '${String(other.name)}'`;
      const v6 = mine.ipv6.find((x) => theirs.ipv6.some((y) => y.addrS === x.addrS));
      if (v6 !== undefined) return `duplicate IPv6 address '${v6.addrS}' found on logical switch port '${String(other.name)}'`;
    }
  }
  return undefined;
}

/** An ACL's entity: a switch, or a port group (--type=port-group or a name that is one). */
async function aclEntity(nb: NbAccess, id: string, flags: ReadonlySet<string>): Promise<{ table: string; row: RowJson }> {
  const type = optionValue(flags, '--type');
  if (type === 'port-group') return { table: 'Port_Group', row: await findRecord(nb, 'Port_Group', id, 'port group') };
  if (type === 'switch') return { table: 'Logical_Switch', row: await findRecord(nb, 'Logical_Switch', id, 'switch') };
  if (type !== undefined) throw new NbctlError(`Invalid value '${type}' for option --type`);
  const ls = await maybeRecord(nb, 'Logical_Switch', id, 'switch');
  const pg = await maybeRecord(nb, 'Port_Group', id, 'port group');
  if (ls !== undefined && pg !== undefined) throw new NbctlError(`Same name '${id}' exists in both port-groups and logical switches. Specify --type=port-group or switch`);
  if (ls !== undefined) return { table: 'Logical_Switch', row: ls };
  if (pg !== undefined) return { table: 'Port_Group', row: pg };
  throw new NbctlError(`'${id}' is not found for port-group or switch.`);
}

/** The value of a command option given as `--name=value`, if it was given. */
function optionValue(flags: ReadonlySet<string>, name: string): string | undefined {
  for (const f of flags) if (f.startsWith(`${name}=`)) return f.slice(name.length + 1);
  return undefined;
}

/** ACL.action's values in the 23.03 schema ("pass" came with ACL tiers, later). */
const verdicts = new Set(['allow', 'allow-related', 'allow-stateless', 'drop', 'reject']);
const severities = new Set(['alert', 'warning', 'notice', 'info', 'debug']);
const labelMax = 4294967295;

const afterLb = (acl: RowJson): boolean => mapOf(acl.options).some(([k, v]) => text(k) === 'apply-after-lb' && text(v) === 'true');

/** One line of acl-list, as ovn-nbctl prints it. */
function aclLine(acl: RowJson): string {
  let line = `${String(acl.direction).padStart(10)} ${String(acl.priority).padStart(5)} (${String(acl.match)}) ${String(acl.action)}`;
  if (setOf(acl.log)[0] === true || acl.log === true) {
    const name = setOf(acl.name).map(text)[0];
    const severity = setOf(acl.severity).map(text)[0];
    const meter = setOf(acl.meter).map(text)[0];
    const parts = [name === undefined ? '' : `name=${name}`, severity === undefined ? '' : `severity=${severity}`, meter === undefined ? '' : `meter="${meter}"`].filter(Boolean);
    line += ` log(${parts.join(',')})`;
  }
  if (Number(acl.label) !== 0) line += ` label=${String(acl.label)}`;
  if (afterLb(acl)) line += ' [after-lb]';
  return `${line}\n`;
}

async function portUuids(nb: NbAccess, names: string[]): Promise<[string, string][]> {
  return Promise.all(names.map(async (n) => uuidRef(uuidOf(await findRecord(nb, 'Logical_Switch_Port', n, 'port')))));
}

const commands: Record<string, CommandSpec> = {
  // --- switches and their ports ------------------------------------------------------------
  'ls-add': { args: [0, 1], options: '--may-exist,--add-duplicate', run: (nb, [name], flags) => addNamed(nb, 'Logical_Switch', 'switch', name, flags) },
  'ls-del': { args: [1, 1], options: '--if-exists', run: (nb, [id], flags) => delNamed(nb, 'Logical_Switch', 'switch', id as string, flags) },
  'ls-list': { args: [0, 0], options: '', run: async (nb) => listing(await nb.rows('Logical_Switch')) },
  'lsp-add': {
    args: [2, 4],
    options: '--may-exist',
    run: async (nb, [sw, port, parent, tag], flags) => {
      const ls = await findRecord(nb, 'Logical_Switch', sw as string, 'switch');
      if ((await nb.rows('Logical_Switch_Port', [['name', '==', port]])).length > 0) {
        if (flags.has('--may-exist')) return '';
        throw new NbctlError(`${port}: a port with this name already exists`);
      }
      const row: Record<string, unknown> = { name: port };
      if (parent !== undefined) {
        const t = Number(tag);
        if (!/^\d+$/.test(tag ?? '') || t > 4095) throw new NbctlError(`${tag}: invalid tag (must be in range 0 to 4095)`);
        row.parent_name = parent;
        row.tag_request = t;
      }
      await nb.transact([
        { op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': 'p', row },
        { op: 'mutate', table: 'Logical_Switch', where: byUuid(ls), mutations: [['ports', 'insert', ['named-uuid', 'p']]] },
      ]);
      return '';
    },
  },
  'lsp-del': {
    args: [1, 1],
    options: '--if-exists',
    run: async (nb, [port], flags) => {
      const p = await maybeRecord(nb, 'Logical_Switch_Port', port as string, 'port');
      if (p === undefined) {
        if (flags.has('--if-exists')) return '';
        throw new NbctlError(`${port}: port name not found`);
      }
      await detach(nb, 'Logical_Switch', 'ports', p);
      return '';
    },
  },
  'lsp-list': {
    args: [1, 1],
    options: '',
    run: async (nb, [sw]) => {
      const ls = await findRecord(nb, 'Logical_Switch', sw as string, 'switch');
      const mine = new Set(setOf(ls.ports).map(text));
      return listing((await nb.rows('Logical_Switch_Port')).filter((r) => mine.has(uuidOf(r))));
    },
  },
  'lsp-set-addresses': {
    args: [1, Infinity],
    options: '',
    run: async (nb, [port, ...addresses]) => {
      const p = await findRecord(nb, 'Logical_Switch_Port', port as string, 'port');
      const ls = await switchOf(nb, p);
      const others = await otherPorts(nb, ls, p);
      // As ovn-nbctl checks each entry in turn: its form, then its IPs against the other ports
      // of the switch.
      for (const a of addresses as string[]) {
        // ovn-nbctl scans "dynamic " for an IPv6 address's characters only, and stops there.
        if (a !== 'unknown' && a !== 'dynamic' && a !== 'router' && !startsWithEthAddr(a) && !/^dynamic [0-9a-fA-F:.]/.test(a)) {
          throw new NbctlError(`${a}: Invalid address format. See ovn-nb(5). Hint: An Ethernet address must be listed before an IP address, together as a single argument.`);
        }
        const duplicate = duplicateIp(others, a);
        if (duplicate !== undefined) throw new NbctlError(`Error on switch ${String(ls.name)}: ${duplicate}`);
      }
      await nb.transact([{ op: 'update', table: 'Logical_Switch_Port', where: byUuid(p), row: { addresses: ['set', addresses] } }]);
      return '';
    },
  },
  'lsp-get-addresses': { args: [1, 1], options: '', run: async (nb, [port]) => setOf((await findRecord(nb, 'Logical_Switch_Port', port as string, 'port')).addresses).map((a) => `${text(a)}\n`).join('') },
  'lsp-set-port-security': {
    args: [1, Infinity],
    options: '',
    run: async (nb, [port, ...addrs]) => {
      const p = await findRecord(nb, 'Logical_Switch_Port', port as string, 'port');
      await nb.transact([{ op: 'update', table: 'Logical_Switch_Port', where: byUuid(p), row: { port_security: ['set', addrs] } }]);
      return '';
    },
  },
  'lsp-get-port-security': { args: [1, 1], options: '', run: async (nb, [port]) => setOf((await findRecord(nb, 'Logical_Switch_Port', port as string, 'port')).port_security).map((a) => `${text(a)}\n`).join('') },
  'lsp-get-up': { args: [1, 1], options: '', run: async (nb, [port]) => `${setOf((await findRecord(nb, 'Logical_Switch_Port', port as string, 'port')).up)[0] === true ? 'up' : 'down'}\n` },
  'lsp-set-enabled': {
    args: [2, 2],
    options: '',
    run: async (nb, [port, state]) => {
      const p = await findRecord(nb, 'Logical_Switch_Port', port as string, 'port');
      await nb.transact([{ op: 'update', table: 'Logical_Switch_Port', where: byUuid(p), row: { enabled: parseEnabled(state as string) } }]);
      return '';
    },
  },
  'lsp-get-enabled': { args: [1, 1], options: '', run: async (nb, [port]) => `${setOf((await findRecord(nb, 'Logical_Switch_Port', port as string, 'port')).enabled)[0] === false ? 'disabled' : 'enabled'}\n` },
  'lsp-set-type': {
    args: [2, 2],
    options: '',
    run: async (nb, [port, type]) => {
      const known = ['', 'router', 'localnet', 'localport', 'l2gateway', 'vtep', 'external', 'virtual', 'remote'];
      if (!known.includes(type as string)) throw new NbctlError(`Logical switch port type '${type}' is unrecognized. Not setting type.`);
      const p = await findRecord(nb, 'Logical_Switch_Port', port as string, 'port');
      await nb.transact([{ op: 'update', table: 'Logical_Switch_Port', where: byUuid(p), row: { type } }]);
      return '';
    },
  },
  'lsp-get-type': { args: [1, 1], options: '', run: async (nb, [port]) => `${String((await findRecord(nb, 'Logical_Switch_Port', port as string, 'port')).type)}\n` },
  'lsp-set-options': {
    args: [1, Infinity],
    options: '',
    run: async (nb, [port, ...kvs]) => {
      const p = await findRecord(nb, 'Logical_Switch_Port', port as string, 'port');
      await nb.transact([{ op: 'update', table: 'Logical_Switch_Port', where: byUuid(p), row: { options: ['map', keyValues(kvs)] } }]);
      return '';
    },
  },
  'lsp-get-options': { args: [1, 1], options: '', run: async (nb, [port]) => mapOf((await findRecord(nb, 'Logical_Switch_Port', port as string, 'port')).options).map(([k, v]) => `${text(k)}=${text(v)}\n`).join('') },
  'lsp-get-ls': {
    args: [1, 1],
    options: '',
    // Every switch that holds the port (the schema lets only one do so), as ovn-nbctl prints them.
    run: async (nb, [port]) => {
      const id = uuidOf(await findRecord(nb, 'Logical_Switch_Port', port as string, 'port'));
      return (await nb.rows('Logical_Switch')).filter((ls) => setOf(ls.ports).some((u) => text(u) === id)).map((ls) => `${uuidOf(ls)} (${String(ls.name)})\n`).join('');
    },
  },
  'lsp-get-parent': {
    args: [1, 1],
    options: '',
    run: async (nb, [port]) => {
      const parent = setOf((await findRecord(nb, 'Logical_Switch_Port', port as string, 'port')).parent_name)[0];
      return parent === undefined ? '' : `${text(parent)}\n`;
    },
  },
  'lsp-get-tag': {
    args: [1, 1],
    options: '',
    run: async (nb, [port]) => {
      const tag = setOf((await findRecord(nb, 'Logical_Switch_Port', port as string, 'port')).tag)[0];
      return tag === undefined ? '' : `${String(tag)}\n`;
    },
  },

  // --- routers and their ports -------------------------------------------------------------
  'lr-add': { args: [0, 1], options: '--may-exist,--add-duplicate', run: (nb, [name], flags) => addNamed(nb, 'Logical_Router', 'router', name, flags) },
  'lr-del': { args: [1, 1], options: '--if-exists', run: (nb, [id], flags) => delNamed(nb, 'Logical_Router', 'router', id as string, flags) },
  'lr-list': { args: [0, 0], options: '', run: async (nb) => listing(await nb.rows('Logical_Router')) },
  'lrp-add': {
    args: [4, Infinity],
    options: '--may-exist',
    run: async (nb, [router, port, mac, ...rest], flags) => {
      const lr = await findRecord(nb, 'Logical_Router', router as string, 'router');
      const networks = rest.filter((a) => !a.startsWith('peer='));
      const peer = rest.find((a) => a.startsWith('peer='))?.slice(5);
      if (networks.length === 0) throw new NbctlError("'lrp-add' command requires at least 4 arguments");
      if (!/^([0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}$/.test(mac as string)) throw new NbctlError(`${mac}: invalid mac address`);
      for (const n of networks) if (!/^[0-9a-fA-F:.]+\/\d+$/.test(n)) throw new NbctlError(`${n}: invalid network address`);
      if ((await nb.rows('Logical_Router_Port', [['name', '==', port]])).length > 0) {
        if (flags.has('--may-exist')) return '';
        throw new NbctlError(`${port}: a port with this name already exists`);
      }
      const row: Record<string, unknown> = { name: port, mac, networks: ['set', networks] };
      if (peer !== undefined) row.peer = peer;
      await nb.transact([
        { op: 'insert', table: 'Logical_Router_Port', 'uuid-name': 'p', row },
        { op: 'mutate', table: 'Logical_Router', where: byUuid(lr), mutations: [['ports', 'insert', ['named-uuid', 'p']]] },
      ]);
      return '';
    },
  },
  'lrp-del': {
    args: [1, 1],
    options: '--if-exists',
    run: async (nb, [port], flags) => {
      const p = await maybeRecord(nb, 'Logical_Router_Port', port as string, 'port');
      if (p === undefined) {
        if (flags.has('--if-exists')) return '';
        throw new NbctlError(`${port}: port name not found`);
      }
      await detach(nb, 'Logical_Router', 'ports', p);
      return '';
    },
  },
  'lrp-list': {
    args: [1, 1],
    options: '',
    run: async (nb, [router]) => {
      const lr = await findRecord(nb, 'Logical_Router', router as string, 'router');
      const mine = new Set(setOf(lr.ports).map(text));
      return listing((await nb.rows('Logical_Router_Port')).filter((r) => mine.has(uuidOf(r))));
    },
  },

  // --- ACLs ----------------------------------------------------------------------------------
  'acl-add': {
    // ovn-nbctl 23.03 takes (and ignores) a sixth argument.
    args: [5, 6],
    options: '--log,--may-exist,--type=,--name=,--severity=,--meter=,--label=,--apply-after-lb',
    run: async (nb, [entity, directionArg, priority, match, verdict], flags) => {
      const direction = parseDirection(directionArg as string);
      if (!verdicts.has(verdict as string)) throw new NbctlError(`${verdict}: action must be one of "allow", "allow-related", "allow-stateless", "drop", and "reject"`);
      const prio = parsePriority(priority as string);
      const { table, row } = await aclEntity(nb, entity as string, flags);
      const name = optionValue(flags, '--name');
      const severity = optionValue(flags, '--severity');
      const meter = optionValue(flags, '--meter');
      const label = optionValue(flags, '--label');
      if (severity !== undefined && !severities.has(severity)) throw new NbctlError(`bad severity: ${severity}`);
      let labelValue = 0;
      if (label !== undefined) {
        if (verdict !== 'allow' && verdict !== 'allow-related') throw new NbctlError('label can only be set with actions "allow" or "allow-related"');
        labelValue = /^\d+$/.test(label) ? Number(label) : -1;
        if (labelValue < 0 || labelValue > labelMax) throw new NbctlError(`${label}: label must in range 0...${labelMax}`);
      }
      const existing = (await nb.rows('ACL', [['direction', '==', direction], ['priority', '==', prio], ['match', '==', match]])).filter((a) => setOf(row.acls).map(text).includes(uuidOf(a)));
      if (existing.length > 0) {
        if (flags.has('--may-exist')) return '';
        throw new NbctlError(`Same ACL already existed on the ${table === 'Port_Group' ? 'port group' : 'ls'} ${entity}.`);
      }
      const acl: Record<string, unknown> = { direction, priority: prio, match, action: verdict };
      // A name, severity or meter is for logging: giving one turns logging on, as in ovn-nbctl.
      if (flags.has('--log') || name !== undefined || severity !== undefined || meter !== undefined) acl.log = true;
      if (name !== undefined) acl.name = name;
      if (severity !== undefined) acl.severity = severity;
      if (meter !== undefined) acl.meter = meter;
      if (label !== undefined) acl.label = labelValue;
      if (flags.has('--apply-after-lb')) acl.options = ['map', [['apply-after-lb', 'true']]];
      await nb.transact([
        { op: 'insert', table: 'ACL', 'uuid-name': 'a', row: acl },
        { op: 'mutate', table, where: byUuid(row), mutations: [['acls', 'insert', ['named-uuid', 'a']]] },
      ]);
      return '';
    },
  },
  'acl-del': {
    args: [1, 4],
    options: '--type=',
    run: async (nb, [entity, directionArg, priority, match], flags) => {
      const direction = directionArg === undefined ? undefined : parseDirection(directionArg);
      const { table, row } = await aclEntity(nb, entity as string, flags);
      const acls = await nb.rows('ACL');
      const mine = new Set(setOf(row.acls).map(text));
      const prio = priority === undefined ? undefined : parsePriority(priority);
      if (prio !== undefined && match === undefined) throw new NbctlError('cannot specify priority without match');
      const doomed = acls.filter((a) => mine.has(uuidOf(a)) && (direction === undefined || a.direction === direction) && (prio === undefined || (a.priority === prio && a.match === match)));
      if (doomed.length === 0) return '';
      await nb.transact([{ op: 'mutate', table, where: byUuid(row), mutations: [['acls', 'delete', ['set', doomed.map((a) => uuidRef(uuidOf(a)))]]] }]);
      return '';
    },
  },
  'acl-list': {
    args: [1, 1],
    options: '--type=',
    run: async (nb, [entity], flags) => {
      const { row } = await aclEntity(nb, entity as string, flags);
      const mine = new Set(setOf(row.acls).map(text));
      const acls = (await nb.rows('ACL')).filter((a) => mine.has(uuidOf(a)));
      // ovn-nbctl's order: direction (from-lport first), those applied after load balancing
      // last, priority descending, then match.
      acls.sort((a, b) => String(a.direction).localeCompare(String(b.direction)) || Number(afterLb(a)) - Number(afterLb(b)) || Number(b.priority) - Number(a.priority) || String(a.match).localeCompare(String(b.match)));
      return acls.map(aclLine).join('');
    },
  },

  // --- port groups and address sets ----------------------------------------------------------
  'pg-add': {
    args: [1, Infinity],
    // No --may-exist in ovn-nbctl 23.03: a second group of a name fails on the name index.
    options: '',
    run: async (nb, [name, ...ports]) => {
      await nb.transact([{ op: 'insert', table: 'Port_Group', row: { name, ports: ['set', await portUuids(nb, ports)] } }]);
      return '';
    },
  },
  'pg-set-ports': {
    args: [2, Infinity],
    options: '',
    run: async (nb, [name, ...ports]) => {
      const pg = await findRecord(nb, 'Port_Group', name as string, 'port group');
      await nb.transact([{ op: 'update', table: 'Port_Group', where: byUuid(pg), row: { ports: ['set', await portUuids(nb, ports)] } }]);
      return '';
    },
  },
  'pg-del': { args: [1, 1], options: '', run: (nb, [id], flags) => delNamed(nb, 'Port_Group', 'port group', id as string, flags) },
  // Not in ovn-nbctl 23.03 (it creates address sets with `create Address_Set`): ours.
  'as-add': {
    args: [1, Infinity],
    options: '--may-exist',
    run: async (nb, [name, ...addresses], flags) => addNamed(nb, 'Address_Set', 'address set', name, flags, { addresses: ['set', addresses] }),
  },
  'as-del': { args: [1, 1], options: '--if-exists', run: (nb, [id], flags) => delNamed(nb, 'Address_Set', 'address set', id as string, flags) },

  // --- overview --------------------------------------------------------------------------------
  show: {
    args: [0, 1],
    options: '',
    // ovn-nbctl's show: every switch and router, or the switch and the router of a name (none
    // is no error), in its words. ovn-nbctl lists them in the order of their UUIDs, which is no
    // order to a reader: here switches, routers and ports come by name, and only NAT rules
    // (which have no name) by UUID. A port's gateway chassis come in the order ovn-nbctl means
    // them to (lrp-get-gateway-chassis's): its show reads neither their priority nor their name,
    // and so prints them in UUID order.
    run: async (nb, [id]) => {
      const byName = (a: RowJson, b: RowJson): number => String(a.name).localeCompare(String(b.name));
      const byUuid = (a: RowJson, b: RowJson): number => (uuidOf(a) < uuidOf(b) ? -1 : uuidOf(a) > uuidOf(b) ? 1 : 0);
      const pick = async (table: string, what: string): Promise<RowJson[]> =>
        id === undefined ? (await nb.rows(table)).sort(byName) : [await maybeRecord(nb, table, id, what)].filter((r): r is RowJson => r !== undefined);
      const switches = await pick('Logical_Switch', 'switch');
      const routers = await pick('Logical_Router', 'router');
      const rowsOf = async (table: string, uuids: unknown): Promise<RowJson[]> => {
        const wanted = new Set(setOf(uuids).map(text));
        return wanted.size === 0 ? [] : (await nb.rows(table)).filter((r) => wanted.has(uuidOf(r))).sort(byUuid);
      };
      const quoted = (values: unknown): string => `[${setOf(values).map((v) => JSON.stringify(text(v))).join(', ')}]`;
      let out = '';
      for (const ls of switches) {
        out += `switch ${uuidOf(ls)} (${String(ls.name)})\n`;
        for (const p of (await rowsOf('Logical_Switch_Port', ls.ports)).sort(byName)) {
          const aka = mapOf(p.external_ids).find(([k]) => text(k) === 'neutron:port_name');
          out += `    port ${String(p.name)}${aka === undefined ? '' : ` (aka ${text(aka[1])})`}\n`;
          const type = String(p.type ?? '');
          if (type !== '') out += `        type: ${type}\n`;
          const parent = setOf(p.parent_name).map(text)[0];
          if (parent !== undefined) out += `        parent: ${parent}\n`;
          const tag = setOf(p.tag)[0];
          if (tag !== undefined) out += `        tag: ${String(tag)}\n`;
          if (type === 'router') {
            const peer = mapOf(p.options).find(([k]) => text(k) === 'router-port');
            if (peer !== undefined) out += `        router-port: ${text(peer[1])}\n`;
          } else if (setOf(p.addresses).length > 0) out += `        addresses: ${quoted(p.addresses)}\n`;
        }
      }
      for (const lr of routers) {
        out += `router ${uuidOf(lr)} (${String(lr.name)})\n`;
        for (const p of (await rowsOf('Logical_Router_Port', lr.ports)).sort(byName)) {
          out += `    port ${String(p.name)}\n        mac: ${JSON.stringify(p.mac)}\n        networks: ${quoted(p.networks)}\n`;
          const gateways = await rowsOf('Gateway_Chassis', p.gateway_chassis);
          if (gateways.length > 0) {
            gateways.sort(gatewayChassisOrder);
            out += `        gateway chassis: [${gateways.map((g) => String(g.chassis_name)).join(' ')}]\n`;
          }
        }
        for (const nat of await rowsOf('NAT', lr.nat)) {
          out += `    nat ${uuidOf(nat)}\n        external ip: ${JSON.stringify(nat.external_ip)}\n`;
          if (String(nat.external_port_range ?? '') !== '') out += `        external port(s): ${JSON.stringify(nat.external_port_range)}\n`;
          out += `        logical ip: ${JSON.stringify(nat.logical_ip)}\n        type: ${JSON.stringify(nat.type)}\n`;
        }
      }
      return out;
    },
  },
  sync: { args: [0, 0], options: '', run: async (nb) => (await nb.rows('NB_Global'), '') },
  ...routerCommands,
  ...routerPortCommands,
  ...gatewayCommands,
  ...qosMeterCommands,
  ...mirrorCoppFwdCommands,
  ...lbDhcpCommands,
  ...globalCommands,
  ...dbCommands,
  'wait-until': waitUntil,
};

export const nbctlCommandNames: readonly string[] = Object.keys(commands).sort();

/** One entry of getopt's table: a global option (each its own value to getopt) or a command's. */
interface GetoptOption {
  readonly name: string;
  readonly argument: OptionArgument;
  /** A command's own option: every one of them reaches getopt with the same value (OPT_LOCAL). */
  readonly local: boolean;
}

/**
 * The table getopt reads the options before the command with, as ovn-nbctl builds it: every
 * global option, then every command's own (which become the first command's options).
 */
const getoptTable: readonly GetoptOption[] = (() => {
  const declared = new Map<string, OptionArgument>();
  for (const spec of Object.values(commands)) {
    for (const option of spec.options.split(',').filter(Boolean)) {
      const name = option.replace(/[=?]$/, '');
      const argument: OptionArgument = option.endsWith('=') ? 'required' : option.endsWith('?') ? 'optional' : 'none';
      // db-ctl-base asserts the same: an option two commands share takes its value alike.
      assert(!declared.has(name) || declared.get(name) === argument, `option ${name} is declared with two kinds of value`);
      declared.set(name, argument);
    }
  }
  const ordered = new Set(commandOptionOrder);
  for (const name of declared.keys()) assert(ordered.has(name), `command option ${name} has no place in commandOptionOrder`);
  for (const name of ordered) assert(declared.has(name), `commandOptionOrder names ${name}, which no command declares`);
  return [
    ...ovnNbctlGlobalOptions.map(([name, argument]) => ({ name, argument, local: false })),
    ...commandOptionOrder.map((name) => ({ name, argument: declared.get(name) as OptionArgument, local: true })),
  ];
})();

/**
 * The getopt table as `ovn-nbctl --options` prints it (a line per option, "=ARG" when it takes
 * a value, then its letter if it has one), for the test that compares the two.
 */
export function getoptTableListing(): string {
  return getoptTable
    .map((o) => {
      const letter = o.local ? undefined : letterOfLong.get(o.name);
      const arg = o.argument !== 'none';
      return `${o.name}${arg ? '=ARG' : ''}\n${letter === undefined ? '' : `-${letter}${arg ? ' ARG' : ''}\n`}`;
    })
    .join('');
}

/**
 * The option a long option word names, as glibc's getopt_long reads it: its exact name, else
 * the one option it abbreviates. Several fit and it is ambiguous, unless they are all command
 * options with the same kind of value as the first (getopt cannot tell those apart, and takes
 * the first). Undefined when it names none, or is ambiguous.
 */
function getoptLong(word: string): GetoptOption | undefined {
  const name = optionName(word);
  const exact = getoptTable.find((o) => o.name === name);
  if (exact !== undefined) return exact;
  let first: GetoptOption | undefined;
  for (const o of getoptTable) {
    if (!o.name.startsWith(name)) continue;
    if (first === undefined) first = o;
    else if (!first.local || !o.local || o.argument !== first.argument) return undefined;
  }
  return first;
}

/** One command of a command line: the options after the "--" before it, its name and arguments. */
interface CommandWords {
  /** The options after a "--" and before the command (ovn-nbctl's per-command options): the
   *  command's own, where a global option is refused like any other it does not have. */
  readonly own: readonly string[];
  readonly name: string | undefined;
  /** Every word after the command up to the next "--", "--foo" too: an option there is an
   *  argument to ovn-nbctl. */
  readonly args: readonly string[];
}

/** A command line split as ovn-nbctl reads it. */
interface CommandLine {
  /** The options before the first command and before any "--", as getopt reads them ("-f
   *  json" becomes "--format=json"): global ones, and command ones that go to the first command. */
  readonly leading: readonly string[];
  /** The commands, in order; "--" separates them, and empty groups between two "--" are
   *  skipped, as db-ctl-base skips them. */
  readonly commands: readonly CommandWords[];
}

/**
 * Splits a command line, with getopt's complaints about the leading options. The first "--"
 * ends those; every "--" after that ends a command and starts the next, all of them run in
 * one transaction.
 */
function parseCommandLine(given: readonly string[]): CommandLine {
  const leading: string[] = [];
  let i = 0;
  for (; i < given.length; i++) {
    const w = given[i] as string;
    if (w === '--') {
      i++;
      break;
    }
    if (!w.startsWith('-') || w === '-') break;
    const short = /^-([^-])(.*)$/.exec(w);
    const letter = short?.[1];
    const option = letter === undefined ? getoptLong(w) : getoptTable.find((o) => o.name === longOfLetter.get(letter));
    if (option === undefined) throw new NbctlError(`unrecognized option '${letter ?? w}'`);
    const { name, argument } = option;
    if (!option.local && !Object.hasOwn(globalOptions, name)) throw new NbctlError(`option '${name}' is one of ovn-nbctl's help, logging, daemon and SSL options, which this nbctl does not have`);
    const inline = short === null ? (w.includes('=') ? w.slice(w.indexOf('=') + 1) : undefined) : short[2] === '' ? undefined : short[2];
    if (argument === 'none' && inline !== undefined) throw new NbctlError(`option '${w}' doesn't allow an argument`);
    if (argument !== 'required' || inline !== undefined) {
      leading.push(inline === undefined ? name : `${name}=${inline}`);
      continue;
    }
    const value = given[i + 1];
    if (value === undefined) throw new NbctlError(`option '${w}' requires an argument`);
    leading.push(`${name}=${value}`);
    i++;
  }
  const groups: string[][] = [[]];
  for (const w of given.slice(i)) {
    if (w === '--') groups.push([]);
    else (groups[groups.length - 1] as string[]).push(w);
  }
  const commands = groups
    .filter((g) => g.length > 0)
    .map((g): CommandWords => {
      const at = g.findIndex((w) => !w.startsWith('-'));
      return at < 0 ? { own: g, name: undefined, args: [] } : { own: g.slice(0, at), name: g[at], args: g.slice(at + 1) };
    });
  return { leading, commands: commands.length > 0 ? commands : [{ own: [], name: undefined, args: [] }] };
}

/**
 * The global --timeout in ms (how long --wait and wait-until may wait), checked as ovn-nbctl
 * checks it: a positive number of seconds.
 */
function timeoutOption(flags: readonly string[]): number | undefined {
  let ms: number | undefined;
  for (const f of flags) {
    if (!f.startsWith('--timeout=')) continue;
    const value = f.slice('--timeout='.length);
    const secs = /^[ \t\n\v\f\r]*\+?\d+$/.test(value) ? Number(value) : 0;
    if (secs <= 0 || secs > 4294967295) throw new NbctlError(`value ${value} on -t or --timeout is invalid`);
    ms = secs * 1000;
  }
  return ms;
}

/** A command checked against its spec, ready to run. */
interface ParsedCommand {
  readonly name: string;
  readonly spec: CommandSpec;
  readonly args: string[];
  readonly flags: ReadonlySet<string>;
}

/**
 * Checks one command's name, options and argument count, with db-ctl-base's messages.
 * `options` are the command options before it (only the first command has any) and `globals`
 * the global ones, which every command receives.
 */
function parseCommand(words: CommandWords, options: string[], globals: readonly string[]): ParsedCommand {
  const seen = new Set<string>();
  for (const f of options) {
    if (seen.has(optionName(f))) throw new NbctlError(`'${optionName(f)}' option specified multiple times`);
    seen.add(optionName(f));
  }
  for (const f of words.own) {
    if (seen.has(optionName(f))) throw new NbctlError(`'${f}' option specified multiple times`);
    seen.add(optionName(f));
    options.push(f);
  }
  const name = words.name;
  if (name === undefined) throw new NbctlError('missing command name (use --help for help)');
  const spec = commands[name];
  if (spec === undefined) throw new NbctlError(`unknown command '${name}'; use --help for help`);
  checkOptions(name, spec.options, options);
  // db-ctl-base's messages, plural even for one.
  const [min, max] = spec.args;
  const args = [...words.args];
  if (args.length < min) throw new NbctlError(`'${name}' command requires at least ${min} arguments`);
  if (args.length > max) {
    const note = args.some((a) => a.startsWith('-')) ? ' (note that options must precede command names and follow a "--" argument)' : '';
    throw new NbctlError(`'${name}' command takes at most ${max} arguments${note}`);
  }
  return { name, spec, args, flags: new Set([...globals, ...options]) };
}

/** --options lists the options getopt knows, as ovn-nbctl prints them, and runs nothing. */
function listingOf(line: CommandLine): string | undefined {
  return line.leading.some((f) => f === '--options') ? getoptTableListing() : undefined;
}

/**
 * The TLS files the leading options give (-p/--private-key, -c/--certificate, -C/--ca-cert, as
 * ovn-nbctl reads them; the last of each wins, as getopt's does). Throws getopt's complaints as
 * runNbctl would.
 */
export function tlsFlagsOf(given: readonly string[]): { privateKey?: string; certificate?: string; caCert?: string } {
  const out: { privateKey?: string; certificate?: string; caCert?: string } = {};
  const keys = { '--private-key': 'privateKey', '--certificate': 'certificate', '--ca-cert': 'caCert' } as const;
  for (const f of parseCommandLine(given).leading) {
    const name = optionName(f);
    if (Object.hasOwn(keys, name)) out[keys[name as keyof typeof keys]] = f.slice(name.length + 1);
  }
  return out;
}

/**
 * What a command line prints without a cluster (`--options`), or undefined when it needs one.
 * Throws getopt's complaints as runNbctl would.
 */
export function localOutput(given: readonly string[]): string | undefined {
  return listingOf(parseCommandLine(given));
}

/**
 * Runs one nbctl command line: global options, then (after an optional "--") the command's own
 * options, the command and its arguments; then, after each further "--", another command with
 * its options. Every command is checked before any runs. One command talks to the cluster
 * directly; several run in one transaction (NbTransaction): each sees what the ones before it
 * wrote, and either all their writes commit or none does.
 */
export async function runNbctl(nb: Nb, given: readonly string[]): Promise<string> {
  const startedMs = Date.now();
  const line = parseCommandLine(given);
  const globals = line.leading.filter(isGlobal);
  const listing = listingOf(line);
  if (listing !== undefined) return listing;
  const timeoutMs = timeoutOption(globals);
  for (const f of globals) {
    if (!f.startsWith('--wait=')) continue;
    const which = /^--wait=(sb|hv|none)$/.exec(f)?.[1];
    if (which === undefined) throw new NbctlError('argument to --wait must be "none", "sb", or "hv"');
    if (which !== 'none') nb.setWait(which as 'sb' | 'hv', timeoutMs);
  }
  // The output options are global: a bad --format or --data fails any command, as in ovn-nbctl.
  tableStyle(globals);
  // ovn-nbctl's --db names an OVSDB remote; this nbctl talks to the Northbound gRPC API, so a
  // script's --db would otherwise go unheeded and the commands reach some other cluster.
  if (globals.some((f) => f.startsWith('--db='))) {
    throw new NbctlError('--db names an OVSDB remote, which ovnts nbctl does not speak: give the cluster with `ovnts nbctl --endpoints=HOST:PORT,...` (or $OVNTS_NB), or run ovn-nbctl --db=$NB_OVSDB against its OVSDB door');
  }
  const dryRun = globals.includes('--dry-run');
  const oneline = globals.includes('--oneline');
  if (globals.includes('--print-wait-time')) nb.printWaitTimes(startedMs);
  // The first command's options: those getopt read before it (each once), then those after "--".
  const parsed = line.commands.map((words, k) => parseCommand(words, k === 0 ? line.leading.filter((f) => !isGlobal(f)) : [], globals));
  // --oneline: each command's output on one line ("\n" and "\\" escaped), an empty line for
  // none; list and find print their records as they would anyway, as in db-ctl-base.
  const shown = (c: ParsedCommand, out: string): string =>
    !oneline || c.name === 'list' || c.name === 'find' ? out : `${out.replace(/\n$/, '').replace(/[\\\n]/g, (ch) => (ch === '\n' ? '\\n' : '\\\\'))}\n`;
  const only = parsed.length === 1 ? parsed[0] : undefined;
  if (only !== undefined && !dryRun) {
    const out = shown(only, await only.spec.run(nb, only.args, only.flags));
    return out + (await nb.finish());
  }
  // A wait-until that does not hold yet has the whole line run again once its table changed,
  // within the global --timeout (counted from the start, as ovn-nbctl's alarm is).
  const deadlineMs = timeoutMs === undefined ? undefined : startedMs + timeoutMs;
  let cutsInARow = 0;
  for (;;) {
    const txn = await NbTransaction.open(nb);
    try {
      let out = '';
      for (const c of parsed) out += shown(c, await c.spec.run(txn, c.args, c.flags));
      // --dry-run: everything but the commit (and so no wait either).
      if (dryRun) {
        txn.check();
        return out;
      }
      return out + (await txn.commit());
    } catch (err) {
      if (!(err instanceof TryAgain)) throw err;
      const outcome = await nb.changedSince(err.read, deadlineMs === undefined ? undefined : deadlineMs - Date.now());
      if (outcome === 'timeout') throw new NbctlError(alarmMessage);
      cutsInARow = outcome === 'cut' ? cutsInARow + 1 : 0;
      if (cutsInARow > waitCutsInARowMax) throw new NbctlError(`wait-until: the database ended ${cutsInARow} watches of ${err.read.table} in a row`);
    }
  }
}
