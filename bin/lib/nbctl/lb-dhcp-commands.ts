// ovn-nbctl's load balancer commands (lb-*, ls-lb-*, lr-lb-*) and DHCP_Options commands
// (dhcp-options-*, lsp-set/get-dhcpv4-options and -dhcpv6-options), with ovn-nbctl 23.03's argument rules, messages
// and list formats. Every check runs before the one transaction a command sends.
import { inetParseActive, ipParseCidr, ipv6ParseCidr } from './inet.js';
import type { LbEndpoint } from './inet.js';
import type { CommandSpec, NbAccess, RowJson } from './nb.js';
import { NbctlError, byUuid, col, findRecord, isUuid, mapOf, maybeRecord, optionalText, setOf, strcmp, text, uuidOf, uuidRef } from './nb.js';
import { smapOrder } from './smap-order.js';



// --- load balancers ------------------------------------------------------------------------

/** A VIP or backend as ovn_lb_vip_format prints it: IPv6 bracketed when the VIP has a port. */
const endpointText = (e: LbEndpoint, brackets: boolean): string => `${brackets ? `[${e.ip}]` : e.ip}${e.port !== 0 ? `:${e.port}` : ''}`;

/**
 * ovn_lb_backends_init_explicit: the backends "IP[:port],..." of a VIP of `family` (with a port
 * exactly when the VIP has one), or the messages of those that are not; `vipText` names the VIP
 * in a family message.
 */
function explicitBackends(backendsArg: string, family: number, withPort: boolean, vipText: string): { backends: LbEndpoint[]; errors: string[] } {
  const errors: string[] = [];
  const backends: LbEndpoint[] = [];
  for (const token of backendsArg.split(',').filter((t) => t !== '')) {
    const b = inetParseActive(token);
    const portMessage = `${token}: should be an IP address and a port number with : as a separator`;
    if (b === undefined) errors.push(withPort ? portMessage : `${token}: should be an IP address`);
    else if (b.family !== family) errors.push(`${token}: IP address family is different from VIP ${vipText}`);
    else if (withPort && b.port === 0) errors.push(portMessage);
    else if (!withPort && b.port !== 0) errors.push(`${token}: should be an IP address`);
    else backends.push(b);
  }
  return { backends, errors };
}

/** A VIP as lb-add writes it: the normalized key and backends, and whether it has a port. */
interface VipText {
  readonly key: string;
  readonly backends: string;
  readonly withPort: boolean;
}

/** ovn_lb_vip_init (explicit, not template): the normalized VIP and backends, or its message. */
function parseVip(vipArg: string, backendsArg: string): VipText {
  const vip = inetParseActive(vipArg);
  if (vip === undefined) throw new NbctlError(`${vipArg}: should be an IP address (or an IP address and a port number with : as a separator).`);
  const withPort = vip.port !== 0;
  const { backends, errors } = explicitBackends(backendsArg, vip.family, withPort, vip.ip);
  if (errors.length > 0) throw new NbctlError(`${errors.join(', ')}.`);
  const brackets = vip.family === 6 && withPort;
  return { key: endpointText(vip, brackets), backends: backends.map((b) => endpointText(b, brackets)).join(','), withPort };
}

/** The non-empty pieces of `s` between `sep`s, as strtok_r cuts them. */
const pieces = (s: string, sep: string): string[] => s.split(sep).filter((p) => p !== '');

/**
 * ovn_lb_vip_init for a template load balancer (--template): the VIP "A[:P]" and backends
 * "B[:P],..." as text (typically "^VARIABLE"s), or when a backend has more than two parts,
 * explicit backends of `family`. Written back without brackets, but for explicit IPv6
 * backends of a VIP with a port.
 */
function parseTemplateVip(vipArg: string, backendsArg: string, family: number): VipText {
  const atoms = pieces(vipArg, ':');
  if (atoms.length === 0 || atoms.length > 2) throw new NbctlError(`${vipArg}: should be a template of the form: '^vip_variable[:^port_variable|:port]'.`);
  const [ip, port] = atoms as [string, string | undefined];
  const key = port === undefined ? ip : `${ip}:${port}`;
  const templateErrors: string[] = [];
  const templated: string[] = [];
  for (const token of pieces(backendsArg, ',')) {
    const parts = pieces(token, ':');
    // ovn-nbctl names the backend as strtok_r left it: cut after its first part.
    if (parts.length === 0 || parts.length > 2) templateErrors.push(`${parts[0] ?? token}: should be a template of the form: '^backendip_variable1[:^port_variable1|:port]'`);
    else templated.push(parts.join(':'));
  }
  if (templateErrors.length === 0) return { key, backends: templated.join(','), withPort: port !== undefined };
  const { backends, errors } = explicitBackends(backendsArg, family, port !== undefined, ip);
  if (errors.length > 0) throw new NbctlError(`invalid backend: template (${templateErrors.join(', ')}.) OR explicit (${errors.join(', ')}.)`);
  const brackets = family === 6 && port !== undefined;
  return { key, backends: backends.map((b) => endpointText(b, brackets)).join(','), withPort: port !== undefined };
}

const lbAdd: CommandSpec = {
  args: [3, 5],
  options: '--may-exist,--add-duplicate,--reject,--event,--add-route,--template',
  run: async (nb, [name, vipArg, backendsArg, protoArg, familyArg], flags) => {
    const mayExist = flags.has('--may-exist');
    const addDuplicate = flags.has('--add-duplicate');
    const reject = flags.has('--reject');
    const event = flags.has('--event');
    const template = flags.has('--template');
    if (event && reject) throw new NbctlError("--reject and --event can't specified at the same time");
    const proto = protoArg ?? 'tcp';
    if (protoArg !== undefined && !['tcp', 'udp', 'sctp'].includes(protoArg)) throw new NbctlError(`${protoArg}: protocol must be one of "tcp", "udp",  or "sctp".`);
    // The fifth argument: "ipv4", or any other word for IPv6 (only a template reads it).
    const family = familyArg === undefined || familyArg === 'ipv4' ? 4 : 6;
    const { key, backends, withPort } = template ? parseTemplateVip(vipArg as string, backendsArg as string, family) : parseVip(vipArg as string, backendsArg as string);
    if (protoArg !== undefined && !withPort) throw new NbctlError('Protocol is unnecessary when no port of vip is given.');
    if (!addDuplicate) {
      const lb = await maybeRecord(nb, 'Load_Balancer', name as string, 'load balancer');
      if (lb !== undefined) {
        const vips = mapOf(lb.vips).map(([k, v]) => [text(k), text(v)] as [string, string]);
        if (vips.some(([k]) => k === key) && !mayExist) throw new NbctlError(`${name}: a load balancer with this vip (${key}) already exists`);
        const row: Record<string, unknown> = { vips: ['map', [...vips.filter(([k]) => k !== key), [key, backends]]] };
        if (protoArg !== undefined) row.protocol = proto;
        await nb.transact([{ op: 'update', table: 'Load_Balancer', where: byUuid(lb), row }]);
        return '';
      }
    }
    const options: [string, string][] = [];
    if (reject) options.push(['reject', 'true']);
    if (event) options.push(['event', 'true']);
    if (flags.has('--add-route')) options.push(['add_route', 'true']);
    if (template) options.push(['template', 'true'], ['address-family', family === 4 ? 'ipv4' : 'ipv6']);
    await nb.transact([{ op: 'insert', table: 'Load_Balancer', row: { name, protocol: proto, vips: ['map', [[key, backends]]], options: ['map', options] } }]);
    return '';
  },
};

const lbDel: CommandSpec = {
  args: [1, 2],
  options: '--if-exists',
  run: async (nb, [id, vip], flags) => {
    // ovn-nbctl looks the load balancer up without must_exist: an unknown one is no error.
    const lb = await maybeRecord(nb, 'Load_Balancer', id as string, 'load balancer');
    if (lb === undefined) return '';
    if (vip !== undefined) {
      const vips = mapOf(lb.vips).map(([k, v]) => [text(k), text(v)] as [string, string]);
      if (!vips.some(([k]) => k === vip)) {
        if (flags.has('--if-exists')) return '';
        throw new NbctlError(`vip ${vip} is not part of the load balancer.`);
      }
      const left = vips.filter(([k]) => k !== vip);
      if (left.length > 0) {
        await nb.transact([{ op: 'update', table: 'Load_Balancer', where: byUuid(lb), row: { vips: ['map', left] } }]);
        return '';
      }
    }
    await nb.transact([{ op: 'delete', table: 'Load_Balancer', where: byUuid(lb) }]);
    return '';
  },
};

const vipWidthOf = (lbs: readonly RowJson[]): number => Math.max(0, ...lbs.flatMap((lb) => mapOf(lb.vips).map(([k]) => text(k).length)));

/** lb_info_add_smap: one load balancer's lines (its VIPs sorted), keyed by its padded name. */
function lbInfo(lb: RowJson, width: number): { key: string; text: string } {
  // smap_get_bool: "true" in any case.
  const template = text(mapOf(lb.options).find(([k]) => text(k) === 'template')?.[1] ?? '').toLowerCase() === 'true';
  const vips = mapOf(lb.vips).map(([k, v]) => [text(k), text(v)] as [string, string]).sort(([a], [b]) => strcmp(a, b));
  // A missing protocol prints as glibc prints a NULL string.
  const lbProto = optionalText(lb.protocol) ?? '(null)';
  let out = '';
  for (const [i, [vip, backends]] of vips.entries()) {
    let proto = lbProto;
    if (!template) {
      const e = inetParseActive(vip);
      if (e === undefined) continue;
      proto = e.port !== 0 ? lbProto : '';
    }
    const rest = `${col(proto, 11, 7)}${col(vip, width + 4, width)}${backends}`;
    out += i === 0 ? `${uuidOf(lb)}    ${col(String(lb.name), 20, 16)}${rest}` : `\n${''.padStart(60)}${rest}`;
  }
  return { key: col(String(lb.name), 20, 16), text: out };
}

function lbTable(lbs: readonly RowJson[]): string {
  const width = vipWidthOf(lbs);
  const infos = lbs.filter((lb) => mapOf(lb.vips).length > 0).map((lb) => lbInfo(lb, width));
  if (infos.length === 0) return '';
  infos.sort((a, b) => strcmp(a.key, b.key) || strcmp(a.text, b.text));
  return `${col('UUID', 40, 36)}${col('LB', 20, 16)}${col('PROTO', 11, 7)}${col('VIP', width + 4, width)}IPs\n${infos.map((i) => `${i.text}\n`).join('')}`;
}

const lbList: CommandSpec = {
  args: [0, 1],
  options: '',
  run: async (nb, [name]) => lbTable((await nb.rows('Load_Balancer')).filter((lb) => name === undefined || lb.name === name)),
};

/** The load balancers of a switch or router: its own, then those of its load balancer groups. */
async function attachedLbs(nb: NbAccess, owner: RowJson): Promise<RowJson[]> {
  const lbs = new Map((await nb.rows('Load_Balancer')).map((r) => [uuidOf(r), r]));
  const groups = new Map((await nb.rows('Load_Balancer_Group')).map((r) => [uuidOf(r), r]));
  const ids = [...setOf(owner.load_balancer).map(text), ...setOf(owner.load_balancer_group).flatMap((g) => setOf(groups.get(text(g))?.load_balancer).map(text))];
  return ids.map((id) => lbs.get(id)).filter((r): r is RowJson => r !== undefined);
}

function attachCommands(table: 'Logical_Switch' | 'Logical_Router', what: 'switch' | 'router'): { add: CommandSpec; del: CommandSpec; list: CommandSpec } {
  const whole = what === 'switch' ? 'logical switch' : 'logical router';
  return {
    add: {
      args: [2, 2],
      options: '--may-exist',
      run: async (nb, [owner, lbId], flags) => {
        const row = await findRecord(nb, table, owner as string, what);
        const lb = await findRecord(nb, 'Load_Balancer', lbId as string, 'load balancer');
        if (setOf(row.load_balancer).map(text).includes(uuidOf(lb))) {
          if (flags.has('--may-exist')) return '';
          throw new NbctlError(`${uuidOf(lb)} : a load balancer with this UUID already exists`);
        }
        await nb.transact([{ op: 'mutate', table, where: byUuid(row), mutations: [['load_balancer', 'insert', ['set', [uuidRef(uuidOf(lb))]]]] }]);
        return '';
      },
    },
    del: {
      args: [1, 2],
      options: '--if-exists',
      run: async (nb, [owner, lbId], flags) => {
        const row = await findRecord(nb, table, owner as string, what);
        if (lbId === undefined) {
          await nb.transact([{ op: 'update', table, where: byUuid(row), row: { load_balancer: ['set', []] } }]);
          return '';
        }
        const lb = await findRecord(nb, 'Load_Balancer', lbId, 'load balancer');
        if (setOf(row.load_balancer).map(text).includes(uuidOf(lb))) {
          await nb.transact([{ op: 'mutate', table, where: byUuid(row), mutations: [['load_balancer', 'delete', ['set', [uuidRef(uuidOf(lb))]]]] }]);
          return '';
        }
        if (flags.has('--if-exists')) return '';
        throw new NbctlError(`load balancer ${String(lb.name)} is not part of any ${whole}.`);
      },
    },
    list: {
      args: [1, 1],
      options: '',
      run: async (nb, [owner]) => lbTable(await attachedLbs(nb, await findRecord(nb, table, owner as string, what))),
    },
  };
}

// --- DHCP options --------------------------------------------------------------------------

async function findDhcpOptions(nb: NbAccess, id: string): Promise<RowJson | undefined> {
  if (!isUuid(id)) return undefined;
  return (await nb.rows('DHCP_Options', [['_uuid', '==', uuidRef(id.toLowerCase())]]))[0];
}

async function dhcpOptionsOrFail(nb: NbAccess, id: string): Promise<RowJson> {
  const row = await findDhcpOptions(nb, id);
  if (row === undefined) throw new NbctlError(`${id}: dhcp options UUID not found`);
  return row;
}

/** KEY=VALUE arguments; one without "=" is skipped, as ovn-nbctl skips it. */
const pairsOf = (args: readonly string[]): [string, string][] => {
  const m = new Map<string, string>();
  for (const a of args) {
    const i = a.indexOf('=');
    if (i >= 0) m.set(a.slice(0, i), a.slice(i + 1));
  }
  return [...m];
};

const dhcpCommands: Record<string, CommandSpec> = {
  'dhcp-options-create': {
    args: [1, Infinity],
    options: '',
    run: async (nb, [cidr, ...ids]) => {
      if (ipParseCidr(cidr as string) === undefined && ipv6ParseCidr(cidr as string) === undefined) throw new NbctlError(`Invalid cidr format '${cidr}'`);
      await nb.transact([{ op: 'insert', table: 'DHCP_Options', row: { cidr, external_ids: ['map', pairsOf(ids)] } }]);
      return '';
    },
  },
  'dhcp-options-del': {
    args: [1, 1],
    options: '',
    // ovn-nbctl's code reads --if-exists here, but the command declares no options, so
    // --if-exists is refused before it runs.
    run: async (nb, [id]) => {
      const row = await dhcpOptionsOrFail(nb, id as string);
      await nb.transact([{ op: 'delete', table: 'DHCP_Options', where: byUuid(row) }]);
      return '';
    },
  },
  'dhcp-options-list': {
    args: [0, 0],
    options: '',
    run: async (nb) =>
      (await nb.rows('DHCP_Options'))
        .sort((a, b) => strcmp(String(a.cidr), String(b.cidr)) || strcmp(uuidOf(a), uuidOf(b)))
        .map((r) => `${uuidOf(r)}\n`)
        .join(''),
  },
  'dhcp-options-set-options': {
    args: [1, Infinity],
    options: '',
    run: async (nb, [id, ...kvs]) => {
      const row = await dhcpOptionsOrFail(nb, id as string);
      await nb.transact([{ op: 'update', table: 'DHCP_Options', where: byUuid(row), row: { options: ['map', pairsOf(kvs)] } }]);
      return '';
    },
  },
  'dhcp-options-get-options': {
    args: [1, 1],
    options: '',
    run: async (nb, [id]) => {
      const row = await dhcpOptionsOrFail(nb, id as string);
      return smapOrder(mapOf(row.options).map(([k, v]) => [text(k), text(v)] as const))
        .map(([k, v]) => `${k}=${v}\n`)
        .join('');
    },
  },
  ...lspDhcpOptionsCommands('v4'),
  ...lspDhcpOptionsCommands('v6'),
};

/**
 * lsp-set-dhcpv4-options / lsp-set-dhcpv6-options and their getters: a port's DHCP_Options
 * reference, refused when the options' CIDR is not of the family ("... is not IPv4/IPv6").
 */
function lspDhcpOptionsCommands(family: 'v4' | 'v6'): Record<string, CommandSpec> {
  const column = family === 'v4' ? 'dhcpv4_options' : 'dhcpv6_options';
  const parses = (cidr: string): boolean => (family === 'v4' ? ipParseCidr(cidr) : ipv6ParseCidr(cidr)) !== undefined;
  return {
    [`lsp-set-dhcp${family}-options`]: {
      args: [1, 2],
      options: '',
      run: async (nb, [port, id]) => {
        const lsp = await findRecord(nb, 'Logical_Switch_Port', port as string, 'port');
        let value: unknown[] = [];
        if (id !== undefined) {
          const opts = await dhcpOptionsOrFail(nb, id);
          if (!parses(String(opts.cidr))) throw new NbctlError(`DHCP options cidr '${String(opts.cidr)}' is not IP${family}`);
          value = [uuidRef(uuidOf(opts))];
        }
        await nb.transact([{ op: 'update', table: 'Logical_Switch_Port', where: byUuid(lsp), row: { [column]: ['set', value] } }]);
        return '';
      },
    },
    [`lsp-get-dhcp${family}-options`]: {
      args: [1, 1],
      options: '',
      run: async (nb, [port]) => {
        const lsp = await findRecord(nb, 'Logical_Switch_Port', port as string, 'port');
        const id = optionalText(lsp[column]);
        if (id === undefined) return '';
        const opts = await findDhcpOptions(nb, id);
        return opts === undefined ? '' : `${id} (${String(opts.cidr)})\n`;
      },
    },
  };
}

const ls = attachCommands('Logical_Switch', 'switch');
const lr = attachCommands('Logical_Router', 'router');

export const lbDhcpCommands: Record<string, CommandSpec> = {
  'lb-add': lbAdd,
  'lb-del': lbDel,
  'lb-list': lbList,
  'ls-lb-add': ls.add,
  'ls-lb-del': ls.del,
  'ls-lb-list': ls.list,
  'lr-lb-add': lr.add,
  'lr-lb-del': lr.del,
  'lr-lb-list': lr.list,
  ...dhcpCommands,
};
