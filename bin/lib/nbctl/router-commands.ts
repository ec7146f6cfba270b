// ovn-nbctl's router commands beyond ports: static routes (lr-route-*), routing policies
// (lr-policy-*) and NAT (lr-nat-*), with ovn-nbctl 23.03's argument rules, messages and list
// formats. Every check runs before the one transaction a command sends, so a failing command
// changes nothing.
import { ethAddrFromString, extractLrpNetworks, findLportAddress } from '../../../northd/netaddr.js';
import {
  ipParseCidr,
  ipv6ParseCidr,
  normalizeAddrStr,
  normalizeIpv4AddrStr,
  normalizeIpv4PrefixStr,
  normalizeIpv6AddrStr,
  normalizeIpv6PrefixStr,
  normalizePrefixStr,
  scanInt64,
} from './inet.js';
import type { CommandSpec, NbAccess, RowJson } from './nb.js';
import { NbctlError, byUuid, col, findRecord, flagValue, isUuid, mapOf, maybeRecord, optional, optionalText, setOf, strcmp, text, uuidOf, uuidRef } from './nb.js';
import { smapOrder } from './smap-order.js';



/** ovn-nbctl's parse_priority: ovs_scan's "%"SCNd64 (trailing text ignored), then 0...32767. */
export function parsePriority(s: string): number {
  const v = scanInt64(s);
  if (v === undefined || v < 0n || v > 32767n) throw new NbctlError(`${s}: priority must in range 0...32767`);
  return Number(v);
}

/** The rows a router's set column points at, in the column's order. */
async function children(nb: NbAccess, lr: RowJson, column: string, table: string): Promise<RowJson[]> {
  const ids = setOf(lr[column]).map(text);
  if (ids.length === 0) return [];
  const rows = new Map((await nb.rows(table)).map((r) => [uuidOf(r), r]));
  return ids.map((id) => rows.get(id)).filter((r): r is RowJson => r !== undefined);
}

const mapGet = (v: unknown, key: string): string | undefined => {
  const e = mapOf(v).find(([k]) => text(k) === key);
  return e === undefined ? undefined : text(e[1]);
};

const findRouter = (nb: NbAccess, id: string): Promise<RowJson> => findRecord(nb, 'Logical_Router', id, 'router');

// --- static routes -------------------------------------------------------------------------

function routePolicyIsSrc(flags: ReadonlySet<string>): { policy: string | undefined; isSrc: boolean } {
  const policy = flagValue(flags, '--policy');
  if (policy !== undefined && policy !== 'src-ip' && policy !== 'dst-ip') throw new NbctlError(`bad policy: ${policy}`);
  return { policy, isSrc: policy === 'src-ip' };
}

/** nbctl_lr_get_route: the first route with this table, policy kind, prefix (and nexthop with ECMP). */
function findRoute(routes: readonly RowJson[], prefix: string, nextHop: string, isSrc: boolean, ecmp: boolean, table: string | undefined): RowJson | undefined {
  return routes.find((r) => {
    if (String(r.route_table ?? '') !== (table ?? '')) return false;
    if ((optionalText(r.policy) === 'src-ip') !== isSrc) return false;
    const p = normalizePrefixStr(String(r.ip_prefix));
    if (p === undefined || p !== prefix) return false;
    return !ecmp || nextHop === String(r.nexthop);
  });
}

const lrRouteAdd: CommandSpec = {
  args: [3, 4],
  options: '--may-exist,--ecmp,--ecmp-symmetric-reply,--policy=,--route-table=,--bfd?',
  run: async (nb, [router, prefixArg, nextHopArg, portArg], flags) => {
    const lr = await findRouter(nb, router as string);
    const { policy, isSrc } = routePolicyIsSrc(flags);
    const table = flagValue(flags, '--route-table');
    let v6 = false;
    let prefix = normalizeIpv4PrefixStr(prefixArg as string);
    if (prefix === undefined) {
      prefix = normalizeIpv6PrefixStr(prefixArg as string);
      v6 = true;
    }
    if (prefix === undefined) throw new NbctlError(`bad prefix argument: ${prefixArg}`);
    const discard = nextHopArg === 'discard';
    let nextHop: string;
    let outPort: RowJson | undefined;
    if (discard) nextHop = 'discard';
    else {
      const ip = v6 ? normalizeIpv6AddrStr(nextHopArg as string) : normalizeIpv4AddrStr(nextHopArg as string);
      if (ip !== undefined) nextHop = ip;
      else {
        // Not an address: an output port alone, with no next hop.
        outPort = await maybeRecord(nb, 'Logical_Router_Port', nextHopArg as string, 'port');
        if (outPort === undefined) throw new NbctlError(`bad ${v6 ? 'IPv6' : 'IPv4'} nexthop argument: ${nextHopArg}`);
        nextHop = '';
      }
    }
    if (portArg !== undefined) outPort = await findRecord(nb, 'Logical_Router_Port', portArg, 'port');
    // --bfd=UUID names a BFD row; a bare --bfd finds one by next hop (and port), or makes one.
    const withBfd = [...flags].some((f) => f === '--bfd' || f.startsWith('--bfd='));
    let bfd: RowJson | undefined;
    if (withBfd) {
      const id = flagValue(flags, '--bfd');
      if (id !== undefined) {
        bfd = isUuid(id) ? (await nb.rows('BFD', [['_uuid', '==', uuidRef(id.toLowerCase())]]))[0] : undefined;
        if (bfd === undefined) throw new NbctlError('no entry found in the BFD table');
      } else if (outPort === undefined) bfd = (await nb.rows('BFD')).find((b) => b.dst_ip === nextHop);
      // With an output port ovn-nbctl 23.03 never reuses a row: it compares BFD.logical_port,
      // a column its IDL does not read (so always ""), and inserts a new row, which the
      // (logical_port, dst_ip) index then refuses if the session exists.
    }
    /** The route's bfd value, and the insert of a new BFD row when there is none to point at. */
    const bfdLink = (): { ops: unknown[]; ref?: unknown } => {
      if (!withBfd) return { ops: [] };
      if (bfd !== undefined) return { ops: [], ref: uuidRef(uuidOf(bfd)) };
      if (outPort === undefined) throw new NbctlError('insert entry in the BFD table failed');
      return { ops: [{ op: 'insert', table: 'BFD', 'uuid-name': 'b', row: { dst_ip: nextHop, logical_port: String(outPort.name) } }], ref: ['named-uuid', 'b'] };
    };
    const mayExist = flags.has('--may-exist');
    const symmetric = flags.has('--ecmp-symmetric-reply');
    const ecmp = flags.has('--ecmp') || symmetric;
    const routes = await children(nb, lr, 'static_routes', 'Logical_Router_Static_Route');
    const route = findRoute(routes, prefix, nextHop, isSrc, ecmp, table);
    if (discard) {
      if (ecmp) throw new NbctlError('ecmp is not valid for discard routes.');
      if (withBfd) throw new NbctlError('bfd dst_ip cannot be discard.');
      if (outPort !== undefined) throw new NbctlError('outport is not valid for discard routes.');
    }
    if (!ecmp) {
      if (route !== undefined && mapGet(route.external_ids, 'ic-learned-route') === undefined) {
        if (!mayExist) throw new NbctlError(`duplicate prefix: ${prefix} (policy: ${isSrc ? 'src-ip' : 'dst-ip'}). Use option --ecmp to allow this for ECMP routing.`);
        const update: Record<string, unknown> = { ip_prefix: prefix, nexthop: nextHop };
        if (outPort !== undefined) update.output_port = String(outPort.name);
        if (policy !== undefined) update.policy = policy;
        const link = bfdLink();
        if (link.ref !== undefined) update.bfd = link.ref;
        await nb.transact([...link.ops, { op: 'update', table: 'Logical_Router_Static_Route', where: byUuid(route), row: update }]);
        return '';
      }
    } else if (route !== undefined) {
      if (!mayExist) throw new NbctlError('duplicate nexthop for the same ECMP route');
      return '';
    }
    if (findRoute(routes, prefix, 'discard', isSrc, true, table) !== undefined) throw new NbctlError('discard nexthop for the same ECMP route exists.');
    const row: Record<string, unknown> = { ip_prefix: prefix, nexthop: nextHop };
    if (outPort !== undefined) row.output_port = String(outPort.name);
    if (policy !== undefined) row.policy = policy;
    if (table !== undefined) row.route_table = table;
    if (symmetric) row.options = ['map', [['ecmp_symmetric_reply', 'true']]];
    const link = bfdLink();
    if (link.ref !== undefined) row.bfd = link.ref;
    await nb.transact([
      ...link.ops,
      { op: 'insert', table: 'Logical_Router_Static_Route', 'uuid-name': 'r', row },
      { op: 'mutate', table: 'Logical_Router', where: byUuid(lr), mutations: [['static_routes', 'insert', ['named-uuid', 'r']]] },
    ]);
    return '';
  },
};

const lrRouteDel: CommandSpec = {
  args: [1, 4],
  options: '--if-exists,--policy=,--route-table=',
  run: async (nb, [router, prefixArg, nextHopArg, portArg], flags) => {
    const lr = await findRouter(nb, router as string);
    const table = flagValue(flags, '--route-table');
    const { policy, isSrc } = routePolicyIsSrc(flags);
    if (prefixArg === undefined && policy === undefined) {
      await nb.transact([{ op: 'update', table: 'Logical_Router', where: byUuid(lr), row: { static_routes: ['set', []] } }]);
      return '';
    }
    let prefix: string | undefined;
    if (prefixArg !== undefined) {
      prefix = normalizePrefixStr(prefixArg);
      if (prefix === undefined) throw new NbctlError(`bad prefix argument: ${prefixArg}`);
    }
    let nextHop: string | undefined;
    if (nextHopArg !== undefined) {
      nextHop = nextHopArg === 'discard' ? 'discard' : normalizePrefixStr(nextHopArg);
      if (nextHop === undefined) throw new NbctlError(`bad nexthop argument: ${nextHopArg}`);
    }
    const doomed = (await children(nb, lr, 'static_routes', 'Logical_Router_Static_Route')).filter((r) => {
      if (policy !== undefined && (optionalText(r.policy) === 'src-ip') !== isSrc) return false;
      if (prefix !== undefined && normalizePrefixStr(String(r.ip_prefix)) !== prefix) return false;
      if (nextHop !== undefined) {
        const rt = String(r.nexthop) === 'discard' ? 'discard' : normalizePrefixStr(String(r.nexthop));
        if (rt === undefined || rt !== nextHop) return false;
      }
      if (String(r.route_table ?? '') !== (table ?? '')) return false;
      return portArg === undefined || optionalText(r.output_port) === portArg;
    });
    if (doomed.length === 0) {
      if (flags.has('--if-exists')) return '';
      throw new NbctlError(`no matching route: policy '${policy ?? 'any'}', prefix '${prefix ?? '(null)'}', nexthop '${nextHop ?? 'any'}', output_port '${portArg ?? 'any'}'.`);
    }
    const bfds = doomed.map((r) => optional(r.bfd)).filter((b) => b !== undefined);
    await nb.transact([
      ...bfds.map((b) => ({ op: 'delete', table: 'BFD', where: [['_uuid', '==', b]] })),
      { op: 'mutate', table: 'Logical_Router', where: byUuid(lr), mutations: [['static_routes', 'delete', ['set', doomed.map((r) => uuidRef(uuidOf(r)))]]] },
    ]);
    return '';
  },
};

interface ListedRoute {
  readonly route: RowJson;
  readonly table: string;
  readonly priority: number;
  /** The prefix's address as bytes, compared as memcmp does (IPv4 as four bytes). */
  readonly addr: readonly number[];
}

/** route_cmp_details: nexthop text, then output port (a route without one first). */
function routeDetailsCmp(a: RowJson, b: RowJson): number {
  const c = strcmp(String(a.nexthop), String(b.nexthop));
  if (c !== 0) return c;
  const pa = optionalText(a.output_port);
  const pb = optionalText(b.output_port);
  if (pa !== undefined && pb !== undefined) return strcmp(pa, pb);
  if (pa === undefined && pb === undefined) return 0;
  return pa !== undefined ? 1 : -1;
}

function routeKeyCmp(a: ListedRoute, b: ListedRoute): number {
  const t = strcmp(a.table, b.table);
  if (t !== 0) return t;
  if (a.priority !== b.priority) return a.priority > b.priority ? -1 : 1;
  for (let i = 0; i < a.addr.length; i++) if (a.addr[i] !== b.addr[i]) return (a.addr[i] as number) < (b.addr[i] as number) ? -1 : 1;
  return 0;
}

function printRoute(r: RowJson, ecmp: boolean): string {
  const prefix = normalizePrefixStr(String(r.ip_prefix)) ?? '';
  const nh = String(r.nexthop);
  const nextHop = nh === 'discard' ? 'discard' : nh !== '' ? (normalizePrefixStr(nh) ?? '') : '';
  let s = `${prefix.padStart(25)} ${nextHop.padStart(25)} ${optionalText(r.policy) ?? 'dst-ip'}`;
  const port = optionalText(r.output_port);
  if (port !== undefined) s += ` ${port}`;
  if (mapGet(r.external_ids, 'ic-learned-route') !== undefined) s += ' (learned)';
  if (ecmp) s += ' ecmp';
  if ((mapGet(r.options, 'ecmp_symmetric_reply') ?? '').toLowerCase() === 'true') s += ' ecmp-symmetric-reply';
  if (optional(r.bfd) !== undefined) s += ' bfd';
  return `${s}\n`;
}

function printRouteFamily(routes: ListedRoute[]): string {
  routes.sort((a, b) => routeKeyCmp(a, b) || routeDetailsCmp(a.route, b.route));
  let out = '';
  for (const [i, r] of routes.entries()) {
    const prev = routes[i - 1];
    const next = routes[i + 1];
    const ecmp = (next !== undefined && routeKeyCmp(r, next) === 0) || (prev !== undefined && routeKeyCmp(r, prev) === 0);
    if (prev === undefined || prev.table !== r.table) out += `${i > 0 ? '\n' : ''}Route Table ${r.table === '' ? '<main>' : r.table}:\n`;
    out += printRoute(r.route, ecmp);
  }
  return out;
}

const lrRouteList: CommandSpec = {
  args: [1, 1],
  options: '--route-table=',
  run: async (nb, [router], flags) => {
    const lr = await findRouter(nb, router as string);
    const only = flagValue(flags, '--route-table');
    const v4: ListedRoute[] = [];
    const v6: ListedRoute[] = [];
    for (const route of await children(nb, lr, 'static_routes', 'Logical_Router_Static_Route')) {
      const table = String(route.route_table ?? '');
      if (only !== undefined && table !== only) continue;
      const rank = (plen: number): number => ((optionalText(route.policy) ?? 'dst-ip') === 'dst-ip' ? 2 * plen + 1 : 2 * plen);
      const p4 = ipParseCidr(String(route.ip_prefix));
      if (p4 !== undefined) {
        v4.push({ route, table, priority: rank(p4.plen), addr: [p4.addr >>> 24, (p4.addr >>> 16) & 0xff, (p4.addr >>> 8) & 0xff, p4.addr & 0xff] });
        continue;
      }
      const p6 = ipv6ParseCidr(String(route.ip_prefix));
      if (p6 !== undefined) v6.push({ route, table, priority: rank(p6.plen), addr: p6.addr });
    }
    let out = '';
    if (v4.length > 0) out += `IPv4 Routes\n${printRouteFamily(v4)}`;
    if (v6.length > 0) out += `${v4.length > 0 ? '\n' : ''}IPv6 Routes\n${printRouteFamily(v6)}`;
    return out;
  },
};

// --- routing policies ----------------------------------------------------------------------

const policyActions = new Set(['allow', 'drop', 'reroute']);

const lrPolicyAdd: CommandSpec = {
  args: [4, Infinity],
  options: '--may-exist',
  run: async (nb, [router, priorityArg, match, action, ...rest], flags) => {
    const lr = await findRouter(nb, router as string);
    const priority = parsePriority(priorityArg as string);
    if (!policyActions.has(action as string)) throw new NbctlError(`${action}: action must be one of "allow", "drop", and "reroute"`);
    const reroute = action === 'reroute';
    if (reroute && rest.length === 0) throw new NbctlError('Nexthop is required when action is reroute.');
    const policies = await children(nb, lr, 'policies', 'Logical_Router_Policy');
    if (policies.some((p) => p.priority === priority && p.match === match)) {
      if (flags.has('--may-exist')) return '';
      throw new NbctlError(`Same routing policy already existed on the logical router ${router}.`);
    }
    const nexthops: string[] = [];
    if (reroute) {
      const arg = rest[0] as string;
      let firstIsV4: boolean | undefined;
      for (const token of arg.split(',').filter((t) => t !== '')) {
        const hop = normalizeAddrStr(token);
        if (hop === undefined) throw new NbctlError(`bad next hop argument: ${arg}`);
        const isV4 = hop.includes('.');
        firstIsV4 ??= isV4;
        if (isV4 !== firstIsV4) throw new NbctlError(`bad next hops argument, not in the same addr family : ${arg}`);
        nexthops.push(hop);
      }
    }
    const options = new Map<string, string>();
    for (const kv of rest.slice(reroute ? 1 : 0)) {
      const i = kv.indexOf('=');
      if (i < 0 || i === kv.length - 1) throw new NbctlError(`No value specified for the option : ${i < 0 ? kv : kv.slice(0, i)}`);
      options.set(kv.slice(0, i), kv.slice(i + 1));
    }
    const row: Record<string, unknown> = { priority, match, action, options: ['map', [...options]] };
    if (reroute) row.nexthops = ['set', nexthops];
    await nb.transact([
      { op: 'insert', table: 'Logical_Router_Policy', 'uuid-name': 'p', row },
      { op: 'mutate', table: 'Logical_Router', where: byUuid(lr), mutations: [['policies', 'insert', ['named-uuid', 'p']]] },
    ]);
    return '';
  },
};

const lrPolicyDel: CommandSpec = {
  args: [1, 3],
  options: '--if-exists',
  run: async (nb, [router, which, match], flags) => {
    const lr = await findRouter(nb, router as string);
    const detach = (rows: RowJson[]): Promise<unknown> =>
      nb.transact([{ op: 'mutate', table: 'Logical_Router', where: byUuid(lr), mutations: [['policies', 'delete', ['set', rows.map((r) => uuidRef(uuidOf(r)))]]] }]);
    if (which === undefined) {
      await nb.transact([{ op: 'update', table: 'Logical_Router', where: byUuid(lr), row: { policies: ['set', []] } }]);
      return '';
    }
    const uuid = isUuid(which) ? which.toLowerCase() : undefined;
    // With a UUID the priority stays 0, as in ovn-nbctl (which then matches "0 MATCH").
    const priority = uuid === undefined ? parsePriority(which) : 0;
    const policies = await children(nb, lr, 'policies', 'Logical_Router_Policy');
    if (match === undefined) {
      if (uuid !== undefined) {
        const p = policies.find((r) => uuidOf(r) === uuid);
        if (p === undefined) {
          if (flags.has('--if-exists')) return '';
          throw new NbctlError('Logical router policy uuid is not found.');
        }
        await detach([p]);
        return '';
      }
      const doomed = policies.filter((r) => r.priority === priority);
      if (doomed.length > 0) await detach(doomed);
      return '';
    }
    const p = policies.find((r) => r.priority === priority && r.match === match);
    if (p !== undefined) await detach([p]);
    return '';
  },
};

const lrPolicyList: CommandSpec = {
  args: [1, 1],
  options: '',
  run: async (nb, [router]) => {
    const lr = await findRouter(nb, router as string);
    const policies = await children(nb, lr, 'policies', 'Logical_Router_Policy');
    policies.sort((a, b) => (a.priority !== b.priority ? (Number(a.priority) > Number(b.priority) ? -1 : 1) : strcmp(String(a.match), String(b.match))));
    let out = policies.length > 0 ? 'Routing Policies\n' : '';
    for (const p of policies) {
      out += `${String(p.priority).padStart(10)} ${String(p.match).padStart(50)} ${String(p.action).padStart(15)}`;
      for (const [i, hop] of setOf(p.nexthops).map(text).entries()) {
        const shown = normalizePrefixStr(hop) ?? '';
        out += i === 0 ? ` ${shown.padStart(25)}` : `, ${shown}`;
      }
      const options = smapOrder(mapOf(p.options).map(([k, v]) => [text(k), text(v)] as const));
      if (options.length > 0) out += `${''.padStart(15)}${options.map(([k, v]) => `${k}=${v}`).join(',')}`;
      out += '\n';
    }
    return out;
  },
};

// --- NAT -----------------------------------------------------------------------------------

const natTypes = new Set(['dnat', 'snat', 'dnat_and_snat']);
const checkNatType = (t: string): void => {
  if (!natTypes.has(t)) throw new NbctlError(`${t}: type must be one of "dnat", "snat" and "dnat_and_snat".`);
};

/** ovn-nbctl's is_valid_port_range: "LO" or "LO-HI" with 0 < LO < HI <= 65535 (strtol rules). */
function isValidPortRange(s: string): boolean {
  const tokens = s.split('-').filter((t) => t !== '');
  const strtol = (t: string): number => {
    const m = /^[ \t\n\v\f\r]*([+-]?\d+)/.exec(t);
    return m === null ? 0 : Number(m[1]);
  };
  if (tokens.length === 0) return false;
  const lo = strtol(tokens[0] as string);
  if (lo <= 0) return false;
  if (!s.includes('-')) return true;
  if (tokens.length !== 2) return false;
  const hi = strtol(tokens[1] as string);
  return lo < hi && hi <= 65535;
}

const isDgwPort = (lrp: RowJson): boolean => optional(lrp.ha_chassis_group) !== undefined || setOf(lrp.gateway_chassis).length > 0;

function ipInLrpNetworks(lrp: RowJson, ip: string): boolean {
  const laddrs = extractLrpNetworks(String(lrp.mac), setOf(lrp.networks).map(text));
  return laddrs !== undefined && findLportAddress(laddrs, ip) !== undefined;
}

const lrNatAdd: CommandSpec = {
  args: [4, 7],
  options: '--may-exist,--stateless,--portrange,--add-route,--gateway-port=',
  run: async (nb, [router, type, externalIp, logicalIp, ...rest], flags) => {
    const lr = await findRouter(nb, router as string);
    checkNatType(type as string);
    const portrange = flags.has('--portrange');
    const addRoute = flags.has('--add-route');
    let v6 = false;
    let newExternal = normalizeIpv4AddrStr(externalIp as string);
    if (newExternal === undefined) {
      newExternal = normalizeIpv6AddrStr(externalIp as string);
      v6 = true;
    }
    if (newExternal === undefined) throw new NbctlError(`${externalIp}: Not a valid IPv4 or IPv6 address.`);
    const isSnat = type === 'snat';
    const family = v6 ? 'IPv6' : 'IPv4';
    let newLogical: string | undefined;
    if (!isSnat) {
      newLogical = v6 ? normalizeIpv6AddrStr(logicalIp as string) : normalizeIpv4AddrStr(logicalIp as string);
      if (newLogical === undefined) throw new NbctlError(`${logicalIp}: Not a valid ${family} address.`);
    } else {
      newLogical = v6 ? normalizeIpv6PrefixStr(logicalIp as string) : normalizeIpv4PrefixStr(logicalIp as string);
      if (newLogical === undefined) throw new NbctlError(`${logicalIp}: should be an ${family} address or network.`);
    }
    let logicalPort: string | undefined;
    let externalMac: string | undefined;
    let portRange: string | undefined;
    if (rest.length === 1) {
      if (!portrange) throw new NbctlError('lr-nat-add with logical_port must also specify external_mac.');
      portRange = rest[0] as string;
      if (!isValidPortRange(portRange)) throw new NbctlError(`invalid port range ${portRange}.`);
    } else if (rest.length >= 2) {
      if (type !== 'dnat_and_snat') throw new NbctlError('logical_port and external_mac are only valid when type is "dnat_and_snat".');
      if (rest.length === 2 && portrange) throw new NbctlError('lr-nat-add with logical_port must also specify external_mac.');
      logicalPort = rest[0] as string;
      await findRecord(nb, 'Logical_Switch_Port', logicalPort, 'port');
      externalMac = rest[1] as string;
      if (ethAddrFromString(externalMac) === undefined) throw new NbctlError(`invalid mac address ${externalMac}.`);
      if (rest.length > 2) {
        portRange = rest[2] as string;
        if (!isValidPortRange(portRange)) throw new NbctlError(`invalid port range ${portRange}.`);
      }
    }
    const mayExist = flags.has('--may-exist');
    const stateless = flags.has('--stateless');
    if (type !== 'dnat_and_snat' && stateless) throw new NbctlError('stateless is not applicable to dnat or snat types');
    if (isSnat && addRoute) throw new NbctlError('routes cannot be added for snat types.');

    const ports = await children(nb, lr, 'ports', 'Logical_Router_Port');
    const dgwName = flagValue(flags, '--gateway-port');
    let dgwPort: RowJson | undefined;
    let nDgw = 0;
    if (dgwName !== undefined) {
      dgwPort = await findRecord(nb, 'Logical_Router_Port', dgwName, 'port');
      nDgw = ports.filter(isDgwPort).length;
      if (!ports.some((p) => uuidOf(p) === uuidOf(dgwPort as RowJson))) throw new NbctlError(`${dgwName} is not a router port of logical router: ${router}.`);
      if (!isDgwPort(dgwPort)) throw new NbctlError(`${dgwName} is not a distributed gateway router port.`);
    } else {
      for (const p of ports.filter(isDgwPort)) {
        nDgw++;
        if (ipInLrpNetworks(p, newExternal)) dgwPort = p;
      }
      if (nDgw > 1 && dgwPort === undefined) throw new NbctlError(`logical router: ${router} has multiple distributed gateway ports and gateway_port can not be determined from external IP of NAT rule.`);
    }

    for (const nat of await children(nb, lr, 'nat', 'NAT')) {
      const oldExternal = normalizePrefixStr(String(nat.external_ip));
      const oldLogical = normalizePrefixStr(String(nat.logical_ip));
      if (oldExternal === undefined || oldLogical === undefined) continue;
      const natGw = optionalText(nat.gateway_port);
      const sameGw = nDgw <= 1 || (natGw !== undefined && dgwPort !== undefined && natGw === uuidOf(dgwPort)) || (natGw === undefined && dgwPort !== undefined && ipInLrpNetworks(dgwPort, oldExternal));
      // As in ovn-nbctl, both checks run for a NAT and the later message wins; the first match ends the loop.
      let error: string | undefined;
      let stop = false;
      let update = false;
      if (type === nat.type && sameGw && (isSnat ? newLogical === oldLogical : newExternal === oldExternal)) {
        stop = true;
        if ((isSnat ? newExternal : newLogical) === (isSnat ? oldExternal : oldLogical)) {
          if (mayExist) update = true;
          else error = `${newExternal}, ${newLogical}: a NAT with this external_ip and logical_ip already exists`;
        } else error = `a NAT with this type (${type}), ${isSnat ? 'logical_ip' : 'external_ip'} (${isSnat ? newLogical : newExternal}) already exists`;
      }
      if ((type === 'dnat_and_snat' || nat.type === 'dnat_and_snat') && oldExternal === newExternal && (mapGet(nat.options, 'stateless') === 'true' || stateless)) {
        stop = true;
        if (!mayExist) error = `${newExternal}, ${newLogical}: External ip cannot be shared across stateless and stateful NATs`;
      }
      if (!stop) continue;
      if (error !== undefined) throw new NbctlError(error);
      if (update) {
        const row: Record<string, unknown> = { logical_port: ['set', logicalPort === undefined ? [] : [logicalPort]], external_mac: ['set', externalMac === undefined ? [] : [externalMac]] };
        await nb.transact([{ op: 'update', table: 'NAT', where: byUuid(nat), row }]);
      }
      return '';
    }

    const options: [string, string][] = [['stateless', stateless ? 'true' : 'false']];
    if (addRoute) options.push(['add_route', 'true']);
    const row: Record<string, unknown> = { type, external_ip: externalIp, logical_ip: newLogical, options: ['map', options] };
    if (logicalPort !== undefined && externalMac !== undefined) {
      row.logical_port = logicalPort;
      row.external_mac = externalMac;
    }
    if (portRange !== undefined) row.external_port_range = portRange;
    if (dgwName !== undefined && dgwPort !== undefined) row.gateway_port = uuidRef(uuidOf(dgwPort));
    await nb.transact([
      { op: 'insert', table: 'NAT', 'uuid-name': 'n', row },
      { op: 'mutate', table: 'Logical_Router', where: byUuid(lr), mutations: [['nat', 'insert', ['named-uuid', 'n']]] },
    ]);
    return '';
  },
};

const lrNatDel: CommandSpec = {
  args: [1, 4],
  options: '--if-exists',
  run: async (nb, [router, type, ipArg, gwArg], flags) => {
    const lr = await findRouter(nb, router as string);
    const detach = (rows: RowJson[]): Promise<unknown> =>
      rows.length === 0 ? Promise.resolve() : nb.transact([{ op: 'mutate', table: 'Logical_Router', where: byUuid(lr), mutations: [['nat', 'delete', ['set', rows.map((r) => uuidRef(uuidOf(r)))]]] }]);
    if (type === undefined) {
      await nb.transact([{ op: 'update', table: 'Logical_Router', where: byUuid(lr), row: { nat: ['set', []] } }]);
      return '';
    }
    checkNatType(type);
    const nats = await children(nb, lr, 'nat', 'NAT');
    if (ipArg === undefined) {
      await detach(nats.filter((n) => n.type === type));
      return '';
    }
    const natIp = normalizePrefixStr(ipArg);
    const isSnat = type === 'snat';
    const ipOf = (n: RowJson): string | undefined => normalizePrefixStr(String(isSnat ? n.logical_ip : n.external_ip));
    if (gwArg === undefined) {
      if (natIp === undefined) {
        // Not an address: a gateway port, whose NATs of this type all go.
        const gw = await findRecord(nb, 'Logical_Router_Port', ipArg, 'port');
        await detach(nats.filter((n) => n.type === type && optionalText(n.gateway_port) === uuidOf(gw)));
        return '';
      }
      await detach(nats.filter((n) => n.type === type && ipOf(n) === natIp));
      return '';
    }
    if (natIp === undefined) throw new NbctlError(`${ipArg}: Invalid IP address or CIDR`);
    const gw = await findRecord(nb, 'Logical_Router_Port', gwArg, 'port');
    const nat = nats.find((n) => n.type === type && ipOf(n) === natIp && optionalText(n.gateway_port) === uuidOf(gw));
    if (nat !== undefined) {
      await detach([nat]);
      return '';
    }
    if (!flags.has('--if-exists')) throw new NbctlError(`no matching NAT with the type (${type}), ${isSnat ? 'logical_ip' : 'external_ip'} (${natIp}) and gateway_port (${gwArg})`);
    return '';
  },
};

/**
 * lr-nat-update-ext-ip ROUTER TYPE IP ADDRESS_SET: the router's NAT of that type whose logical
 * IP (snat) or external IP (dnat, dnat_and_snat) is IP applies only to the external addresses
 * in the address set (allowed_ext_ips), or, with --is-exempted, to all but them
 * (exempted_ext_ips).
 */
const lrNatUpdateExtIp: CommandSpec = {
  args: [4, 4],
  options: '--is-exempted',
  run: async (nb, [router, type, ipArg, setId], flags) => {
    const lr = await findRouter(nb, router as string);
    checkNatType(type as string);
    const set = await findRecord(nb, 'Address_Set', setId as string, 'Address Set');
    const natIp = normalizePrefixStr(ipArg as string);
    if (natIp === undefined) throw new NbctlError(`${ipArg}: Invalid IP address or CIDR`);
    const isSnat = type === 'snat';
    const nat = (await children(nb, lr, 'nat', 'NAT')).find((n) => n.type === type && normalizePrefixStr(String(isSnat ? n.logical_ip : n.external_ip)) === natIp);
    if (nat === undefined) throw new NbctlError(`${type}: Could not locate nat rule for: ${natIp}.`);
    const column = flags.has('--is-exempted') ? 'exempted_ext_ips' : 'allowed_ext_ips';
    await nb.transact([{ op: 'update', table: 'NAT', where: byUuid(nat), row: { [column]: uuidRef(uuidOf(set)) } }]);
    return '';
  },
};

const lrNatList: CommandSpec = {
  args: [1, 1],
  options: '',
  run: async (nb, [router]) => {
    const lr = await findRouter(nb, router as string);
    const nats = await children(nb, lr, 'nat', 'NAT');
    if (nats.length === 0) return '';
    const lrps = new Map((await nb.rows('Logical_Router_Port')).map((r) => [uuidOf(r), r]));
    const lines = nats.map((n) => {
      const gw = optionalText(n.gateway_port);
      const key = `${col(String(n.type), 17, 13)}${col(gw === undefined ? '' : String(lrps.get(gw)?.name ?? ''), 22, 18)}${String(n.external_ip)}`;
      const mac = optionalText(n.external_mac);
      const port = optionalText(n.logical_port);
      const range = String(n.external_port_range ?? '');
      const value = mac !== undefined && port !== undefined ? `${col(range, 17, 13)}${col(String(n.logical_ip), 20, 16)}${col(mac, 21, 17)}${port}` : `${col(range, 17, 13)}${String(n.logical_ip)}`;
      return { key, value };
    });
    lines.sort((a, b) => strcmp(a.key, b.key) || strcmp(a.value, b.value));
    const header = `${col('TYPE', 17, 13)}${col('GATEWAY_PORT', 22, 18)}${col('EXTERNAL_IP', 19, 15)}${col('EXTERNAL_PORT', 17, 13)}${col('LOGICAL_IP', 20, 16)}${col('EXTERNAL_MAC', 21, 17)}LOGICAL_PORT\n`;
    return header + lines.map((l) => `${col(l.key, 58, 54)}${l.value}\n`).join('');
  },
};

export const routerCommands: Record<string, CommandSpec> = {
  'lr-route-add': lrRouteAdd,
  'lr-route-del': lrRouteDel,
  'lr-route-list': lrRouteList,
  'lr-policy-add': lrPolicyAdd,
  'lr-policy-del': lrPolicyDel,
  'lr-policy-list': lrPolicyList,
  'lr-nat-add': lrNatAdd,
  'lr-nat-del': lrNatDel,
  'lr-nat-list': lrNatList,
  'lr-nat-update-ext-ip': lrNatUpdateExtIp,
};
