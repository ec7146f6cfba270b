// The northd property: after every NB transaction of a random (seeded) sequence over switches,
// ports, routers (ports, static routes, policies, NAT, options), ACLs on switches and port
// groups, port group membership, address sets, DHCPv4 and DHCPv6 options, DNS records,
// load balancers (on switches and routers, directly and through groups) with health checks and
// ip_port_mappings, gateway chassis and HA chassis groups on router ports (distributed gateway
// ports) and external switch ports, distributed NAT rules, gateway MTUs on router ports
// (gateway_mtu, gateway_mtu_bypass, VLAN tags of localnet ports), virtual ports (virtual-ip,
// virtual-parents, claims through a parent), NB_Global's drop sampling options (refused
// domains included, whose setting in force a recompute is given), chassis claims (Port_Binding.up), the
// Service_Monitor status chassis report, and chassis registered, renamed and deleted
// (HA_Chassis.chassis) with ports bound to them (HA_Chassis_Group.ref_chassis), their
// hostnames set, changed and cleared with ports' requested-chassis naming them, the
// incrementally maintained SB view equals a fresh recompute exactly, tunnel keys of live
// objects change only where a requested-tnl-key changed, every valid request is held by one
// of its requesters, and no change (nor a chassis report, nor a Chassis coming or going)
// recomputes any node; every tenth view compiles through our agent (tests/helpers/agent-compiles.ts),
// and the last view of every tenth sequence goes through OVN 23.03.1's own parser as well (the
// real ovn-trace, when installed), which must refuse exactly the flows our agent refuses.
// Replay one seed: NORTHD_SEED=<seed> npm run test:one -- tests/northd/incremental-equals-recompute.test.ts
import t from 'tap';
import type { Database, DbDelta, Row, Uuid } from '../../ovsdb/index.js';
import type * as nb from '../../ovsdb/rows/nb.js';
import type * as sb from '../../ovsdb/rows/sb.js';
import { bfdReportWrites, bfdSbUuid, bfdStatusWrites } from '../../northd/bfd.js';
import { createNorthd } from '../../northd/index.js';
import { chunkCountFor, lbChunkLimits } from '../../northd/load-balancers.js';
import { routeChunkLimits } from '../../northd/lflows/router.js';
import { DROP_DOMAIN_LIMIT } from '../../northd/drop-sampling.js';
import { optionUint } from '../../northd/nb.js';
import type { ChassisOwnedColumns, IgmpGroupReport, SbView } from '../../northd/index.js';
import { agentCompileErrors } from '../helpers/agent-compiles.js';
import { Rng } from '../helpers/seeded-rng.js';
import { addLrp, addLsp, byUuid, map, nbFixture, set, uuidAtom, viewDifference } from './nb-fixture.js';
import { compareWithOvnParser, missingTools } from './real-northd.js';

const LONG = process.env.OVNTS_LONG !== undefined;
const SEQUENCES = Number(process.env.NORTHD_SEQUENCES ?? (LONG ? 5000 : 300));
const TXNS = 50;
const ONLY = process.env.NORTHD_SEED;
/** The first seed of the run (seeds FROM .. FROM + SEQUENCES - 1): a sweep of seeds not run before. */
const FROM = Number(process.env.NORTHD_SEED_FROM ?? 1);
/** Every this many sequences, the last view goes through OVN's own parser too (the real ovn-trace). */
const PARSER_EVERY = Number(process.env.NORTHD_PARSER_EVERY ?? 10);
/** With NORTHD_TRACE set, every NB transaction of a replayed sequence is printed (stderr). */
const TRACE = process.env.NORTHD_TRACE !== undefined;

type Kind =
  | 'claim' | 'ls-add' | 'ls-del' | 'lsp-add' | 'lsp-del' | 'lsp-update' | 'lsp-move' | 'lr-add' | 'lr-del' | 'lrp-add' | 'lrp-del' | 'lrp-update'
  | 'ls-update' | 'nb-cfg' | 'route-add' | 'route-del' | 'route-update' | 'policy-add' | 'policy-del' | 'nat-add' | 'nat-del' | 'lr-update'
  | 'acl-add' | 'acl-del' | 'acl-update' | 'pg-add' | 'pg-del' | 'pg-ports' | 'as-add' | 'as-update' | 'as-del'
  | 'dhcp-add' | 'dhcp-update' | 'dhcp-del' | 'dhcp-set' | 'dhcp6-add' | 'dhcp6-set' | 'dns-add' | 'dns-update' | 'dns-del' | 'dns-set'
  | 'lb-add' | 'lb-update' | 'lb-vips' | 'lb-del' | 'lbg-add' | 'lbg-update' | 'lbg-del' | 'dp-lb' | 'dp-lbg' | 'smb-add' | 'smb-update' | 'smb-del'
  | 'gw-set' | 'gw-update' | 'ha-set' | 'ha-update' | 'nat-distributed' | 'gw-mtu' | 'gw-link' | 'chassis' | 'hc-add' | 'hc-update' | 'hc-del' | 'ipm-set'
  | 'svc-status' | 'vport' | 'tv-set' | 'tnl-key' | 'qos' | 'meter' | 'copp' | 'mcast' | 'igmp' | 'req-chassis' | 'hostname' | 'bfd';
const KINDS: readonly Kind[] = [
  'claim', 'ls-add', 'ls-del', 'lsp-add', 'lsp-del', 'lsp-update', 'lsp-move', 'lr-add', 'lr-del', 'lrp-add', 'lrp-del', 'lrp-update', 'ls-update', 'nb-cfg',
  'route-add', 'route-del', 'route-update', 'policy-add', 'policy-del', 'nat-add', 'nat-del', 'lr-update',
  'acl-add', 'acl-del', 'acl-update', 'pg-add', 'pg-del', 'pg-ports', 'as-add', 'as-update', 'as-del',
  'dhcp-add', 'dhcp-update', 'dhcp-del', 'dhcp-set', 'dhcp6-add', 'dhcp6-set', 'dns-add', 'dns-update', 'dns-del', 'dns-set',
  'lb-add', 'lb-update', 'lb-vips', 'lb-del', 'lbg-add', 'lbg-update', 'lbg-del', 'dp-lb', 'dp-lbg', 'smb-add', 'smb-update', 'smb-del',
  'gw-set', 'gw-update', 'ha-set', 'ha-update', 'nat-distributed', 'gw-mtu', 'gw-link', 'chassis', 'hc-add', 'hc-update', 'hc-del', 'ipm-set', 'svc-status', 'vport', 'tv-set', 'tnl-key', 'qos', 'meter', 'copp', 'mcast', 'igmp',
  'req-chassis', 'hostname', 'bfd',
];

/** Chassis names: the HA members' the generator writes (hv1..hv4) and two hypervisors'. */
const CHASSIS_NAMES: readonly string[] = ['hv1', 'hv2', 'hv3', 'hv4', 'c1', 'c2'];
/** Chassis hostnames: few, so that chassis share them, and one a Chassis name ("c1") too. */
const HOSTNAMES: readonly string[] = ['host-a', 'host-b', 'c1'];

/**
 * From the requested-chassis stream (`hrng`): an LSP's options:requested-chassis set to a list
 * of Chassis names, hostnames, unknown and empty entries, or removed.
 */
function randomRequestedChassis(hrng: Rng, db: Database): { kind: Kind; ops: unknown[] } | undefined {
  const lsps = names(db, 'Logical_Switch_Port');
  if (lsps.length === 0) return undefined;
  const port = hrng.pick(lsps);
  const mutations: unknown[] = [['options', 'delete', set(['requested-chassis'])]];
  if (hrng.chance(0.85)) {
    const entries = Array.from({ length: hrng.int(1, 3) }, () => hrng.pick([...CHASSIS_NAMES, ...HOSTNAMES, 'ghost', '']));
    mutations.push(['options', 'insert', map({ 'requested-chassis': entries.join(',') })]);
  }
  return { kind: 'req-chassis', ops: [{ op: 'mutate', table: 'Logical_Switch_Port', where: byUuid(port.uuid), mutations }] };
}

/**
 * From the BFD stream (`brng`): a session added (on a router port, often to a route's next hop,
 * now and then on no port), changed or deleted; a route made to name a session (often with its
 * next hop); or the NB statuses ovn-northd's passes would write (bfdStatusWrites), then a
 * chassis's report of one. Undefined when there is nothing to do.
 */
/** The load balancers the event stream made: the other kinds leave them alone (randomTxn). */
function isEventStreamLb(row: Row): boolean {
  return (row['external_ids'] as ReadonlyMap<string, string>).has('event-stream');
}

/**
 * Empty load balancer events asked for or no longer: NB_Global options:controller_event (in the
 * forms smap_get_bool reads and some it does not), any load balancer's options:event, or load
 * balancers of the stream's own (tagged, so that the other kinds pick as they did before it)
 * with VIPs without backends, on switches and routers, their VIPs emptied or given backends.
 */
function randomLbEvent(erng: Rng, db: Database): unknown[] | undefined {
  const toggle = (key: string, value: string | undefined): unknown[] =>
    value === undefined ? [['options', 'delete', set([key])]] : [['options', 'delete', set([key])], ['options', 'insert', map({ [key]: value })]];
  const value = (): string | undefined => erng.weighted<string | undefined>([['true', 4], [undefined, 3], ['false', 1], ['TRUE', 1], ['yes', 1]]);
  const all = [...db.rows('Load_Balancer').values()].sort((a, b) => (a._uuid < b._uuid ? -1 : 1));
  const own = all.filter(isEventStreamLb);
  const dps: [string, Uuid][] = [...['Logical_Switch', 'Logical_Router'].flatMap((table) => [...db.rows(table).keys()].sort().map((u): [string, Uuid] => [table, u]))];
  const vipChoices = ['10.0.0.106:80', '10.0.0.107', '[fd00::106]:8080', '10.0.0.100:80', '^V5:80'];
  const what = erng.weighted<string>([['global', 3], ['option', 3], ['add', own.length < 3 && dps.length > 0 ? 3 : 0], ['vip', own.length > 0 ? 2 : 0], ['del', own.length > 0 ? 1 : 0]]);
  switch (what) {
    case 'global':
      return [{ op: 'mutate', table: 'NB_Global', where: [], mutations: toggle('controller_event', value()) }];
    case 'option':
      return all.length === 0 ? undefined : [{ op: 'mutate', table: 'Load_Balancer', where: byUuid(erng.pick(all)._uuid), mutations: toggle('event', value()) }];
    case 'add': {
      const vips: Record<string, string> = {};
      for (const k of erng.subset(vipChoices, 3)) vips[k] = erng.chance(0.7) ? '' : '10.0.1.5:8080';
      const options: Record<string, string> = {};
      if (erng.chance(0.7)) options['event'] = 'true';
      if (erng.chance(0.15)) options['reject'] = 'true';
      if (erng.chance(0.1)) options['template'] = 'true';
      const row: Record<string, unknown> = { name: 'lb-ev', vips: map(vips), options: map(options), external_ids: map({ 'event-stream': 'true' }) };
      if (erng.chance(0.5)) row['protocol'] = set([erng.pick(['tcp', 'udp', 'sctp'])]);
      const ops: unknown[] = [{ op: 'insert', table: 'Load_Balancer', 'uuid-name': 'ev', row }];
      for (const [table, uuid] of erng.subset(dps, 2)) ops.push({ op: 'mutate', table, where: byUuid(uuid), mutations: [['load_balancer', 'insert', set([['named-uuid', 'ev']])]] });
      return ops;
    }
    case 'vip': {
      const vip = erng.pick(vipChoices);
      return [{ op: 'mutate', table: 'Load_Balancer', where: byUuid(erng.pick(own)._uuid), mutations: [['vips', 'delete', set([vip])], ['vips', 'insert', map({ [vip]: erng.chance(0.6) ? '' : '10.0.1.6:80' })]] }];
    }
    default: {
      // Taken off every datapath naming it, then deleted.
      const lb = erng.pick(own)._uuid;
      const ops: unknown[] = [];
      for (const [table, uuid] of dps) {
        if ((db.get(table, uuid)?.['load_balancer'] as readonly Uuid[]).includes(lb)) ops.push({ op: 'mutate', table, where: byUuid(uuid), mutations: [['load_balancer', 'delete', set([uuidAtom(lb)])]] });
      }
      ops.push({ op: 'delete', table: 'Load_Balancer', where: byUuid(lb) });
      return ops;
    }
  }
}

/** Rows of the routable stream's own topology (randomRoutable): names "rt-...", NAT IPs in 172.31.0.0/24. */
function isRoutableStreamRow(table: string, row: Row): boolean {
  if (table === 'NAT') return String(row['external_ip']).startsWith('172.31.0.');
  const name = row['name'];
  return typeof name === 'string' && name.startsWith('rt-');
}

/**
 * The database as the main generator sees it: without the routable stream's rows, so that its
 * choices (and the other kinds' coverage) are those it made before that stream existed.
 */
function withoutRoutableStream(db: Database): Database {
  const rows = (table: string): ReadonlyMap<Uuid, Row> => {
    const all = db.rows(table);
    let out: Map<Uuid, Row> | undefined;
    for (const [uuid, row] of all) {
      if (!isRoutableStreamRow(table, row)) continue;
      out ??= new Map(all);
      out.delete(uuid);
    }
    return out ?? all;
  };
  return new Proxy(db, {
    get(target, prop): unknown {
      if (prop === 'rows') return rows;
      const v: unknown = Reflect.get(target, prop, target);
      return typeof v === 'function' ? (v as (...args: unknown[]) => unknown).bind(target) : v;
    },
  });
}

/**
 * Routable addresses (options:add_route): a join switch of its own with a router whose port
 * there is a distributed gateway port (NAT rules of every kind and a load balancer on it) and
 * another router, a gateway router or not; then add_route set and removed on any NAT rule or
 * load balancer, the first router's gateway chassis taken away and given back, the second made
 * a gateway router or not, NAT rules added. (The other streams may change these rows too.)
 */
function randomRoutable(arng: Rng, db: Database): unknown[] | undefined {
  const named = (table: string, name: string): Row | undefined => [...db.rows(table).values()].find((r) => r['name'] === name);
  const join = named('Logical_Switch', 'rt-join');
  const ra = named('Logical_Router', 'rt-a');
  const rb = named('Logical_Router', 'rt-b');
  const addRoute = (): unknown => map(arng.chance(0.7) ? { add_route: 'true' } : {});
  const nat = (name: string): Record<string, unknown> => {
    const kind = arng.pick(['dnat_and_snat', 'dnat_and_snat', 'dnat', 'snat']);
    const row: Record<string, unknown> = { type: kind, external_ip: `172.31.0.${arng.int(100, 120)}`, logical_ip: kind === 'snat' ? '10.31.0.0/24' : `10.31.0.${arng.int(2, 9)}`, options: addRoute() };
    if (kind === 'dnat_and_snat' && arng.chance(0.4)) {
      row['logical_port'] = set([arng.pick(['vm1', 'vm2', 'rt-vm'])]);
      row['external_mac'] = set([`00:00:00:31:00:${arng.int(10, 99)}`]);
    }
    return { op: 'insert', table: 'NAT', 'uuid-name': name, row };
  };
  if (join === undefined || ra === undefined || rb === undefined) {
    if (join !== undefined || ra !== undefined || rb !== undefined) return undefined;
    return [
      { op: 'insert', table: 'Logical_Switch', row: { name: 'rt-join', ports: set([['named-uuid', 'pa'], ['named-uuid', 'pb']]) } },
      { op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': 'pa', row: { name: 'rt-join-a', type: 'router', addresses: set(['router']), options: map({ 'router-port': 'rt-a-join' }) } },
      { op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': 'pb', row: { name: 'rt-join-b', type: 'router', addresses: set(['router']), options: map({ 'router-port': 'rt-b-join' }) } },
      { op: 'insert', table: 'Gateway_Chassis', 'uuid-name': 'gc', row: { name: 'rt-a-join-hv1', chassis_name: 'hv1', priority: 10 } },
      { op: 'insert', table: 'Logical_Router_Port', 'uuid-name': 'ra', row: { name: 'rt-a-join', mac: '00:00:00:31:00:01', networks: set(['172.31.0.1/24']), gateway_chassis: set([['named-uuid', 'gc']]) } },
      { op: 'insert', table: 'Logical_Router_Port', 'uuid-name': 'rb', row: { name: 'rt-b-join', mac: '00:00:00:31:00:02', networks: set(['172.31.0.2/24', 'fd00:31::2/64']) } },
      nat('n1'), nat('n2'), nat('n3'),
      { op: 'insert', table: 'Load_Balancer', 'uuid-name': 'lb', row: { name: 'rt-lb', vips: map({ '172.31.0.200:80': '10.31.0.5:80', '[fd00:31::200]:80': '[fd00:31::5]:80' }), options: addRoute() } },
      { op: 'insert', table: 'Logical_Router', row: { name: 'rt-a', ports: set([['named-uuid', 'ra']]), nat: set([['named-uuid', 'n1'], ['named-uuid', 'n2'], ['named-uuid', 'n3']]), load_balancer: set([['named-uuid', 'lb']]) } },
      { op: 'insert', table: 'Logical_Router', row: { name: 'rt-b', ports: set([['named-uuid', 'rb']]), options: map(arng.chance(0.5) ? { chassis: 'hv2' } : {}) } },
    ];
  }
  const what = arng.weighted<string>([['option', 6], ['gateway', 1], ['chassis', 1], ['nat', 1]]);
  switch (what) {
    case 'option': {
      const rows = [...db.rows('NAT').values(), ...db.rows('Load_Balancer').values()].sort((a, b) => (a._uuid < b._uuid ? -1 : 1));
      const row = arng.pick(rows);
      const table = db.rows('NAT').has(row._uuid) ? 'NAT' : 'Load_Balancer';
      const mutations: unknown[] = [['options', 'delete', set(['add_route'])]];
      if (arng.chance(0.7)) mutations.push(['options', 'insert', map({ add_route: arng.pick(['true', 'true', 'false']) })]);
      return [{ op: 'mutate', table, where: byUuid(row._uuid), mutations }];
    }
    case 'gateway': {
      const lrp = named('Logical_Router_Port', 'rt-a-join');
      if (lrp === undefined) return undefined;
      const held = lrp['gateway_chassis'] as readonly Uuid[];
      return held.length > 0
        ? [{ op: 'update', table: 'Logical_Router_Port', where: byUuid(lrp._uuid), row: { gateway_chassis: set([]) } }]
        : [
          { op: 'insert', table: 'Gateway_Chassis', 'uuid-name': 'gc', row: { name: `rt-a-join-hv${arng.int(1, 3)}`, chassis_name: 'hv1', priority: 10 } },
          { op: 'update', table: 'Logical_Router_Port', where: byUuid(lrp._uuid), row: { gateway_chassis: set([['named-uuid', 'gc']]) } },
        ];
    }
    case 'chassis': {
      const options = rb['options'] as ReadonlyMap<string, string>;
      return [{ op: 'update', table: 'Logical_Router', where: byUuid(rb._uuid), row: { options: map(options.has('chassis') ? {} : { chassis: 'hv2' }) } }];
    }
    default:
      return [nat('n'), { op: 'mutate', table: 'Logical_Router', where: byUuid(ra._uuid), mutations: [['nat', 'insert', set([['named-uuid', 'n']])]] }];
  }
}

/**
 * Port mirrors and forwarding groups (their own stream): mirrors made (sinks IPv4, IPv6 or
 * unparsable), edited (renamed too), attached to and detached from switch ports, deleted while
 * attached; forwarding groups made on a switch (children its ports, or names no port has),
 * edited, moved to another switch, and taken off their switch (which deletes them).
 */
function randomMirrorOrFwd(frng: Rng, db: Database): unknown[] | undefined {
  const sorted = (table: string): Row[] => [...db.rows(table).values()].sort((a, b) => (a._uuid < b._uuid ? -1 : 1));
  const mirrors = sorted('Mirror');
  const groups = sorted('Forwarding_Group');
  const lsps = sorted('Logical_Switch_Port');
  const switches = sorted('Logical_Switch');
  const mirrorRow = (): Record<string, unknown> => ({
    filter: frng.pick(['from-lport', 'to-lport']), type: frng.pick(['gre', 'erspan']), index: frng.int(0, 20),
    sink: frng.pick(['192.0.2.50', '192.0.2.51', 'fd00:99::50', 'not-an-ip']),
  });
  const groupRow = (ls: Row): Record<string, unknown> => {
    const own = (ls['ports'] as readonly Uuid[]).map((u) => db.get('Logical_Switch_Port', u)?.['name'] as string).filter((n) => n !== undefined).sort();
    const children = frng.subset([...own, 'ghost-port'], 3);
    return {
      vip: frng.pick(['10.0.0.200', '10.0.0.201', 'fd00::200']), vmac: frng.pick(['00:00:00:00:0f:01', '00:00:00:00:0f:02']), liveness: frng.chance(0.3),
      child_port: set(children.length > 0 ? children : ['ghost-port']),
    };
  };
  const what = frng.weighted<string>([
    ['mirror-add', mirrors.length < 4 ? 3 : 0], ['mirror-edit', mirrors.length > 0 ? 2 : 0], ['attach', mirrors.length > 0 && lsps.length > 0 ? 4 : 0],
    ['detach', lsps.length > 0 ? 2 : 0], ['mirror-del', mirrors.length > 0 ? 1 : 0],
    ['fwd-add', switches.length > 0 && groups.length < 4 ? 3 : 0], ['fwd-edit', groups.length > 0 ? 2 : 0], ['fwd-move', groups.length > 0 && switches.length > 1 ? 1 : 0],
    ['fwd-del', groups.length > 0 ? 1 : 0],
  ]);
  const holderOf = (g: Uuid): Row | undefined => switches.find((ls) => (ls['forwarding_groups'] as readonly Uuid[]).includes(g));
  switch (what) {
    case 'mirror-add': {
      const ops: unknown[] = [{ op: 'insert', table: 'Mirror', 'uuid-name': 'm', row: { name: `mir-${frng.int(0, 1000)}`, ...mirrorRow() } }];
      for (const p of frng.subset(lsps, 2)) ops.push({ op: 'mutate', table: 'Logical_Switch_Port', where: byUuid(p._uuid), mutations: [['mirror_rules', 'insert', set([['named-uuid', 'm']])]] });
      return ops;
    }
    case 'mirror-edit': {
      const row = frng.chance(0.3) ? { name: `mir-${frng.int(0, 1000)}` } : mirrorRow();
      return [{ op: 'update', table: 'Mirror', where: byUuid(frng.pick(mirrors)._uuid), row }];
    }
    case 'attach':
      return [{ op: 'mutate', table: 'Logical_Switch_Port', where: byUuid(frng.pick(lsps)._uuid), mutations: [['mirror_rules', 'insert', set([uuidAtom(frng.pick(mirrors)._uuid)])]] }];
    case 'detach': {
      const attached = lsps.filter((p) => (p['mirror_rules'] as readonly Uuid[]).length > 0);
      if (attached.length === 0) return undefined;
      const p = frng.pick(attached);
      return [{ op: 'mutate', table: 'Logical_Switch_Port', where: byUuid(p._uuid), mutations: [['mirror_rules', 'delete', set([uuidAtom(frng.pick(p['mirror_rules'] as readonly Uuid[]))])]] }];
    }
    case 'mirror-del':
      return [{ op: 'delete', table: 'Mirror', where: byUuid(frng.pick(mirrors)._uuid) }];
    case 'fwd-add': {
      const ls = frng.pick(switches);
      return [
        { op: 'insert', table: 'Forwarding_Group', 'uuid-name': 'g', row: { name: `fg-${frng.int(0, 1000)}`, ...groupRow(ls) } },
        { op: 'mutate', table: 'Logical_Switch', where: byUuid(ls._uuid), mutations: [['forwarding_groups', 'insert', set([['named-uuid', 'g']])]] },
      ];
    }
    case 'fwd-edit': {
      const g = frng.pick(groups);
      const ls = holderOf(g._uuid);
      if (ls === undefined) return undefined;
      const row = groupRow(ls);
      const keep = frng.subset(Object.keys(row), 2);
      return [{ op: 'update', table: 'Forwarding_Group', where: byUuid(g._uuid), row: Object.fromEntries(Object.entries(row).filter(([k]) => keep.includes(k))) }];
    }
    default: {
      const g = frng.pick(groups)._uuid;
      const from = holderOf(g);
      if (from === undefined) return undefined;
      const ops: unknown[] = [{ op: 'mutate', table: 'Logical_Switch', where: byUuid(from._uuid), mutations: [['forwarding_groups', 'delete', set([uuidAtom(g)])]] }];
      const others = switches.filter((ls) => ls._uuid !== from._uuid);
      if (what === 'fwd-move') ops.push({ op: 'mutate', table: 'Logical_Switch', where: byUuid(frng.pick(others)._uuid), mutations: [['forwarding_groups', 'insert', set([uuidAtom(g)])]] });
      return ops;
    }
  }
}

function randomBfd(brng: Rng, db: Database): { kind: Kind; ops: unknown[] } | undefined {
  const sessions = [...db.rows('BFD').values()].sort((a, b) => (a._uuid < b._uuid ? -1 : 1)) as unknown as nb.BFD[];
  const routes = [...db.rows('Logical_Router_Static_Route').values()].sort((a, b) => (a._uuid < b._uuid ? -1 : 1)) as unknown as nb.Logical_Router_Static_Route[];
  const what = brng.weighted<string>([['add', 3], ['update', 2], ['del', 1], ['route', 3], ['settle', 3], ['report', 2]]);
  const kind: Kind = 'bfd';
  switch (what) {
    case 'add': {
      // Often a next hop on one of the port's networks, watched by a new route of its router.
      const lrps = [...db.rows('Logical_Router_Port').values()].sort((a, b) => (a._uuid < b._uuid ? -1 : 1)) as unknown as nb.Logical_Router_Port[];
      const lrp = lrps.length > 0 && brng.chance(0.8) ? brng.pick(lrps) : undefined;
      const network = lrp === undefined || lrp.networks.length === 0 ? undefined : brng.pick(lrp.networks);
      const onNetwork = network === undefined ? undefined : network.includes(':') ? network.replace(/::1\/\d+$/, '::7') : network.replace(/\.1\/\d+$/, '.7');
      const dst = onNetwork !== undefined && brng.chance(0.7) ? onNetwork : routes.length > 0 && brng.chance(0.5) ? brng.pick(routes).nexthop : randomIp(brng);
      const row: Record<string, unknown> = { logical_port: lrp?.name ?? 'ghost', dst_ip: dst };
      if (brng.chance(0.3)) row['status'] = brng.pick(['admin_down', 'down', 'init', 'up']);
      if (brng.chance(0.3)) row['min_tx'] = brng.int(1, 3) * 100;
      if (brng.chance(0.2)) row['detect_mult'] = brng.int(1, 9);
      const ops: unknown[] = [{ op: 'insert', table: 'BFD', 'uuid-name': 'b', row }];
      const router = lrp === undefined ? undefined : [...db.rows('Logical_Router').values()].find((r) => (r['ports'] as readonly string[]).includes(lrp._uuid));
      if (router !== undefined && brng.chance(0.6)) {
        const prefix = dst.includes(':') ? `fd00:${brng.int(7, 9)}::/64` : `10.${brng.int(7, 9)}.0.0/16`;
        ops.push({ op: 'insert', table: 'Logical_Router_Static_Route', 'uuid-name': 'r', row: { ip_prefix: prefix, nexthop: dst, bfd: set([['named-uuid', 'b']]), external_ids: map({ 'bfd-stream': 'true' }) } });
        ops.push({ op: 'mutate', table: 'Logical_Router', where: byUuid(router._uuid), mutations: [['static_routes', 'insert', set([['named-uuid', 'r']])]] });
      }
      return { kind, ops };
    }
    case 'update': {
      if (sessions.length === 0) return undefined;
      const b = brng.pick(sessions);
      const row = brng.weighted<Record<string, unknown>>([
        [{ status: brng.pick(['admin_down', 'down', 'init', 'up']) }, 4], [{ min_rx: brng.int(0, 3) * 500 }, 1], [{ dst_ip: randomIp(brng) }, 1],
        [{ logical_port: brng.pick([...names(db, 'Logical_Router_Port').map((p) => p.name), 'ghost']) }, 1],
      ]);
      return { kind, ops: [{ op: 'update', table: 'BFD', where: byUuid(b._uuid), row }] };
    }
    case 'del':
      return sessions.length === 0 ? undefined : { kind, ops: [{ op: 'delete', table: 'BFD', where: byUuid(brng.pick(sessions)._uuid) }] };
    case 'route': {
      if (routes.length === 0 || sessions.length === 0) return undefined;
      const b = brng.pick(sessions);
      const row: Record<string, unknown> = { bfd: brng.chance(0.85) ? set([uuidAtom(b._uuid)]) : set([]) };
      if (brng.chance(0.6)) row['nexthop'] = b.dst_ip;
      return { kind, ops: [{ op: 'update', table: 'Logical_Router_Static_Route', where: byUuid(brng.pick(routes)._uuid), row }] };
    }
    case 'settle': {
      const all: DbDelta = { changes: sessions.map((b) => ({ kind: 'insert', table: 'BFD', uuid: b._uuid, new: b as unknown as Row })) };
      const writes = bfdStatusWrites(db, all);
      return writes.length === 0 ? undefined : { kind, ops: writes.map((w) => ({ op: 'update', table: 'BFD', where: byUuid(w.bfd), row: { status: w.status } })) };
    }
    default: {
      if (sessions.length === 0) return undefined;
      const b = brng.pick(sessions);
      const writes = bfdReportWrites(db, new Map([[bfdSbUuid(b.logical_port, b.dst_ip), brng.pick(['down', 'init', 'up', 'up'] as const)]]));
      return writes.length === 0 ? undefined : { kind, ops: writes.map((w) => ({ op: 'update', table: 'BFD', where: byUuid(w.bfd), row: { status: w.status } })) };
    }
  }
}

/** The VIP keys randomLb writes (and one no load balancer has), for health checks to name. */
const HC_VIPS = ['10.0.0.100:80', '10.0.0.101', '10.0.0.102:53', '[fd00::100]:80', 'fd00::101', '10.0.0.103:80', '10.0.0.105:443', '10.0.0.199:80'] as const;

/**
 * ip_port_mappings for a load balancer's backends (and others): mostly switch ports with good
 * source IPs, sometimes a router port, a ghost, no source or a bad one.
 */
function randomMappings(rng: Rng, lb: { vips: ReadonlyMap<string, string> }, switchPorts: readonly string[], others: readonly string[]): unknown {
  const ips = new Set<string>();
  for (const backends of lb.vips.values()) {
    for (const b of backends.split(',')) {
      const v6 = b.split(':').length > 2;
      const ip = v6 ? b.replace(/^\[/, '').replace(/\](:\d+)?$/, '') : b.replace(/:\d+$/, '');
      if (ip !== '' && ip !== 'bogus') ips.add(v6 ? `[${ip}]` : ip);
    }
  }
  if (rng.chance(0.2)) ips.add('10.0.0.5');
  const pairs: Record<string, string> = {};
  for (const ip of ips) {
    if (rng.chance(0.15)) continue;
    const port = switchPorts.length > 0 && rng.chance(0.85) ? rng.pick(switchPorts) : rng.pick([...others, 'ghost']);
    const good = ip.startsWith('[') ? rng.pick(['[fd00:1::99]', 'fd00:1::98']) : rng.pick(['10.0.0.99', '10.0.0.98']);
    const src = rng.chance(0.85) ? good : rng.pick(['bogus', '', '10.0.0.099']);
    pairs[ip] = rng.chance(0.05) ? port : `${port}:${src}`;
  }
  return map(pairs);
}

function randomHcOptions(rng: Rng): unknown {
  return map(rng.chance(0.5) ? { interval: String(rng.int(1, 10)), timeout: '20' } : { success_count: '3' });
}

/** A VIP key of a load balancer with many: 600 possible, so that adding some meets existing ones. */
function manyVipKey(rng: Rng): string {
  const k = rng.int(0, 599);
  return `172.16.${k >> 8}.${k & 255}:${rng.pick(['80', '443'])}`;
}

/** Its backends: mostly good, now and then a bad one (the VIP is skipped). */
function manyVipBackends(rng: Rng): string {
  return rng.chance(0.05) ? '10.1.0.1:80,bogus' : `10.1.${rng.int(0, 3)}.${rng.int(1, 250)}:8080`;
}

/** A load balancer's columns: VIPs good and bad (a bad backend, a family mix), options. */
function randomLb(rng: Rng): Record<string, unknown> {
  const vips: Record<string, string> = {};
  const choices: [string, string][] = [
    ['10.0.0.100:80', '10.0.0.1:8080,10.0.0.2:8080'], ['10.0.0.101', '10.0.0.3'], ['10.0.0.102:53', ''], ['[fd00::100]:80', '[fd00:1::2]:80'],
    ['fd00::101', 'fd00:1::3,fd00:1::4'], ['10.0.0.103:80', '10.0.0.1:80,bogus'], ['10.0.0.104:80', '[fd00::1]:80'], ['10.0.0.105:443', '10.0.0.5:443'],
  ];
  const options: Record<string, string> = {};
  // A template load balancer: VIPs and backends naming variables, a non-template backend list,
  // a VIP of a form templates do not take; IPv4 or IPv6.
  if (rng.chance(0.15)) {
    options['template'] = 'true';
    if (rng.chance(0.5)) options['address-family'] = rng.pick(['ipv4', 'ipv6']);
    choices.push(['^V1:^P1', '^B1'], ['^V2:80', '^B1:8080,^B2:^P2'], ['^V3', '10.0.0.3'], ['^V4:53', '[fd00::1]:53'], ['^A:^B:^C', '^X']);
  }
  for (const [k, v] of rng.subset(choices, 3)) vips[k] = v;
  // Now and then many VIPs, so that they are dealt into chunks (northd/load-balancers.ts).
  if (rng.chance(0.1)) for (let i = rng.int(55, 200); i > 0; i--) vips[manyVipKey(rng)] = manyVipBackends(rng);
  if (rng.chance(0.2)) options['reject'] = 'true';
  if (rng.chance(0.2)) options['affinity_timeout'] = String(rng.int(0, 70000));
  if (rng.chance(0.2)) options['hairpin_snat_ip'] = '169.254.0.1';
  if (rng.chance(0.2)) options['skip_snat'] = 'true';
  if (rng.chance(0.2)) options['neighbor_responder'] = rng.pick(['all', 'none', 'bogus']);
  const row: Record<string, unknown> = { name: `lb${rng.int(1, 5)}`, vips: map(vips), options: map(options) };
  if (rng.chance(0.5)) row['protocol'] = set([rng.pick(['tcp', 'udp', 'sctp'])]);
  if (rng.chance(0.2)) row['selection_fields'] = set(rng.subset(['ip_src', 'ip_dst', 'tp_src', 'tp_dst'], 2));
  return row;
}

/** A gateway MTU as written: mostly good, some ovn-northd does not take, a negative one. */
function randomMtu(rng: Rng): string {
  return rng.pick(['1400', '1500', ' 9000', '1400', '9000 ', 'bogus', '0', '-5']);
}

/** A router port's gateway MTU options: an MTU, maybe with a bypass. */
function randomGatewayMtu(rng: Rng): Record<string, string> {
  const options: Record<string, string> = { gateway_mtu: randomMtu(rng) };
  if (rng.chance(0.5)) options['gateway_mtu_bypass'] = rng.pick(['udp', 'tcp.dst == 22']);
  return options;
}

function randomDhcpOptions(rng: Rng): unknown {
  const options: Record<string, string> = { server_id: '10.0.0.254', server_mac: '0a:00:00:00:00:fe' };
  if (rng.chance(0.8)) options['lease_time'] = String(rng.int(1, 3) * 3600);
  if (rng.chance(0.5)) options['router'] = '10.0.0.254';
  if (rng.chance(0.3)) options['dns_server'] = '{8.8.8.8, 1.1.1.1}';
  return map(options);
}

/** DHCPv6 options, some of them malformed (a server_id that is no MAC, one OVS reads loosely). */
function randomDhcp6Options(rng: Rng): unknown {
  const options: Record<string, string> = { server_id: rng.weighted([['0a:00:00:00:00:fe', 4], ['0:0:0:0:0:fd', 1], ['not-a-mac', 1]]) };
  if (rng.chance(0.4)) options['dhcpv6_stateless'] = rng.pick(['true', 'false', 'TRUE']);
  if (rng.chance(0.4)) options['dns_server'] = rng.pick(['fd00::53', '{fd00::53, fd00::54}']);
  if (rng.chance(0.2)) options['domain_search'] = '"ovn.org"';
  return map(options);
}

function randomDhcp6Cidr(rng: Rng): string {
  return rng.pick(['fd00:1::/64', 'fd00:2::/64', 'fd00::/16', 'fd00:3::/ffff:ffff::', 'fd00:1::/129', 'bad']);
}

/** DNS records: names in mixed case, addresses that ovn-northd writes in lowercase. */
function randomDnsRecords(rng: Rng): unknown {
  const pairs = rng.subset([['vm1.ovn.org', '10.0.0.1'], ['VM2.ovn.org', '10.0.0.2 FD00::2'], ['www.ovn.org', '192.168.1.5']] as const, 3);
  return map(Object.fromEntries(pairs));
}

const ACL_ACTIONS = ['allow', 'allow-related', 'allow-stateless', 'drop', 'reject'] as const;

function randomAcl(rng: Rng): Record<string, unknown> {
  const row: Record<string, unknown> = {
    priority: rng.int(0, 3) * 1000 + rng.int(0, 2), direction: rng.pick(['from-lport', 'to-lport']), action: rng.pick(ACL_ACTIONS),
    match: rng.pick(['ip4', 'ip4.src == $as1', 'outport == @pg1 && ip4', 'tcp.dst == 80', 'inport == @pg2']),
  };
  if (rng.chance(0.2)) row['log'] = true;
  if (rng.chance(0.1)) row['name'] = 'acl-name';
  if (rng.chance(0.1)) row['label'] = rng.int(1, 3);
  if (rng.chance(0.1)) row['options'] = map({ 'apply-after-lb': 'true' });
  return row;
}


function names(db: Database, table: string): { uuid: Uuid; name: string }[] {
  return [...db.rows(table).values()].map((r) => ({ uuid: r._uuid, name: (r as unknown as { name: string }).name })).sort((a, b) => (a.name < b.name ? -1 : 1));
}

function randomAddresses(rng: Rng): unknown {
  const mac = (): string => `0a:00:00:00:${rng.int(0, 3).toString(16).padStart(2, '0')}:${rng.int(0, 15).toString(16).padStart(2, '0')}`;
  return set(rng.subset([
    `${mac()} 10.0.0.${rng.int(1, 9)}`, 'unknown', mac(), 'router', 'dynamic', `${mac().toUpperCase()}`, `${mac()} 192.168.${rng.int(1, 4)}.${rng.int(2, 9)} fd00:${rng.int(1, 3)}::${rng.int(2, 9)}`,
  ], 3));
}

/** A next hop or prefix in the networks the generated router ports use (or not). */
function randomIp(rng: Rng): string {
  return rng.pick([`192.168.${rng.int(1, 4)}.${rng.int(1, 9)}`, `10.0.0.${rng.int(1, 9)}`, `fd00:${rng.int(1, 3)}::${rng.int(1, 9)}`, `172.16.${rng.int(0, 3)}.1`, 'fd00::9']);
}

function randomPrefix(rng: Rng): string {
  return rng.pick([`10.${rng.int(1, 3)}.0.0/16`, `10.0.${rng.int(0, 3)}.0/24`, '0.0.0.0/0', `fd00:${rng.int(4, 6)}::/64`, `10.0.0.${rng.int(1, 9)}`, 'bad']);
}

/** A virtual port's options: a VIP (in the generated networks, IPv6, or one that does not parse) and parents. */
function randomVirtualOptions(rng: Rng, lsps: readonly string[]): Record<string, string> {
  const options: Record<string, string> = {};
  if (rng.chance(0.9)) options['virtual-ip'] = rng.pick(['10.0.0.50', `192.168.${rng.int(1, 4)}.50`, `fd00:${rng.int(1, 3)}::50`, '10.0.0.050', 'bogus']);
  if (rng.chance(0.9)) options['virtual-parents'] = [...rng.subset([...lsps, 'ghost'], 3), ...(rng.chance(0.2) ? [''] : [])].join(',');
  return options;
}

/**
 * A virtual port's ops: a port made virtual (or its options redone), now and then made a VIF
 * again; at times its switch gets a router port on the VIPs' networks, so that routers resolve
 * them. Its parents are mostly its neighbours on the switch.
 */
function virtualPortOps(vrng: Rng, db: Database, lsps: readonly { uuid: Uuid; name: string }[], lrs: readonly { name: string }[], n: number): unknown[] {
  const p = vrng.pick(lsps);
  const ls = [...db.rows('Logical_Switch').values()].find((r) => (r['ports'] as readonly Uuid[]).includes(p.uuid));
  const siblings = lsps.filter((q) => q.uuid !== p.uuid && (ls?.['ports'] as readonly Uuid[] | undefined)?.includes(q.uuid) === true).map((q) => q.name);
  const candidates = siblings.length > 0 && vrng.chance(0.8) ? siblings : lsps.map((q) => q.name);
  const row = vrng.chance(0.15) ? { type: '' } : { type: 'virtual', options: map(randomVirtualOptions(vrng, candidates)) };
  const ops: unknown[] = [{ op: 'update', table: 'Logical_Switch_Port', where: byUuid(p.uuid), row }];
  if (ls !== undefined && lrs.length > 0 && vrng.chance(0.4)) {
    ops.push(...addLrp(vrng.pick(lrs).name, `vr${n}`, `0a:00:00:00:fe:${(n % 256).toString(16).padStart(2, '0')}`, ['10.0.0.1/24', '192.168.0.1/21', 'fd00::1/16']));
    ops.push(...addLsp(ls['name'] as string, `vr${n}-ls`, { type: 'router', options: map({ 'router-port': `vr${n}` }), addresses: set(['router']) }));
  }
  return ops;
}

/** A switch port's columns; a virtual port's options come from `vrng`. */
function randomLspColumns(rng: Rng, vrng: Rng, lrps: readonly string[], lsps: readonly string[]): Record<string, unknown> {
  const type = rng.pick(['', '', '', 'router', 'localnet', 'localport', 'l2gateway', 'external', 'virtual', 'vtep']);
  const options: Record<string, string> = type === 'virtual' ? randomVirtualOptions(vrng, lsps) : {};
  if (type === 'router' && lrps.length > 0 && rng.chance(0.8)) options['router-port'] = rng.pick(lrps);
  if (type === 'router' && rng.chance(0.2)) options['nat-addresses'] = rng.pick(['0a:00:00:00:00:09 172.16.0.9', 'router', 'bogus']);
  if (type === 'localnet') options['network_name'] = 'phys';
  if (rng.chance(0.2)) options['localnet_learn_fdb'] = 'true';
  const row: Record<string, unknown> = { type, options: map(options), addresses: randomAddresses(rng) };
  if (rng.chance(0.3)) row['port_security'] = set(['0a:00:00:00:00:01 10.0.0.1']);
  if (rng.chance(0.15)) row['enabled'] = set([false]);
  return row;
}

/**
 * The keys a requested-tnl-key names: low ones (held by others), ones in other flow shards (256
 * keys each, lflows/flow.ts), ovn-ic's range, bad ones.
 */
const DP_KEY_REQUESTS = ['1', '2', '3', '4', '300', '700', '16711681', '16711682', '16777215', '16777216', '0', '-3', ' 5', '5 ', 'x'];
const PORT_KEY_REQUESTS = ['1', '2', '3', '32767', '32768', '0', 'x'];

/**
 * A requested-tnl-key set, changed or cleared on a switch, router or port, or sometimes
 * another option the bindings or their flows read (interconn-ts, snat-ct-zone, arp_proxy); its
 * own stream, `krng`, so the other kinds' choices stay as they were.
 */
function randomKeyRequest(krng: Rng, db: Database): { kind: Kind; ops: unknown[] } | undefined {
  const targets: [string, string, Uuid][] = [];
  for (const [table, column] of [['Logical_Switch', 'other_config'], ['Logical_Router', 'options'], ['Logical_Switch_Port', 'options'], ['Logical_Router_Port', 'options']] as const) {
    for (const uuid of [...db.rows(table).keys()].sort()) targets.push([table, column, uuid]);
  }
  if (targets.length === 0) return undefined;
  // An ARP proxy on a router port (an LSP of type router naming its router port).
  const routerLsps = [...db.rows('Logical_Switch_Port')].filter(([, r]) => r['type'] === 'router' && (r['options'] as ReadonlyMap<string, string>).has('router-port')).map(([u]) => u).sort();
  if (routerLsps.length > 0 && krng.chance(0.2)) {
    const mutations: unknown[] = [['options', 'delete', set(['arp_proxy'])]];
    if (krng.chance(0.8)) mutations.push(['options', 'insert', map({ arp_proxy: krng.pick(['10.0.0.50', '10.0.0.50 10.0.0.51/32', 'fd00::1', 'bad 10.0.0.52']) })]);
    return { kind: 'tnl-key', ops: [{ op: 'mutate', table: 'Logical_Switch_Port', where: byUuid(krng.pick(routerLsps)), mutations }] };
  }
  const [table, column, uuid] = krng.pick(targets);
  const values = table === 'Logical_Switch' || table === 'Logical_Router' ? DP_KEY_REQUESTS : PORT_KEY_REQUESTS;
  // Sometimes the other keys a datapath's binding carries in its external_ids instead.
  const other = krng.chance(0.25);
  const option = !other ? 'requested-tnl-key' : table === 'Logical_Switch' ? 'interconn-ts' : table === 'Logical_Router' ? 'snat-ct-zone' : 'requested-tnl-key';
  const value = option === 'interconn-ts' ? krng.pick(['ts1', 'ts2']) : option === 'snat-ct-zone' ? krng.pick(['0', '7', '-1', 'x']) : krng.pick(values);
  const mutations: unknown[] = [[column, 'delete', set([option])]];
  if (krng.chance(0.8)) mutations.push([column, 'insert', map({ [option]: value })]);
  return { kind: 'tnl-key', ops: [{ op: 'mutate', table, where: byUuid(uuid), mutations }] };
}

const METER_NAMES = ['m1', 'm2', 'm3'] as const;
/** The kinds of controller action a Copp meters (its meters column's keys). */
const COPP_KINDS = ['arp', 'arp-resolve', 'dhcpv4-opts', 'dhcpv6-opts', 'dns', 'icmp4-error', 'icmp6-error', 'nd-na', 'nd-ns', 'nd-ns-resolve',
  'nd-ra-opts', 'tcp-reset', 'reject', 'svc-monitor'] as const;

function randomBand(qrng: Rng): Record<string, unknown> {
  return { action: 'drop', rate: qrng.pick([10, 100, 1000]), burst_size: qrng.pick([0, 0, 5, 50]) };
}

/**
 * QoS rules added to, changed on or taken from switches; NB meters (fair or not) made, changed
 * (their bands too) or deleted; an ACL made to log through one of them or not. Their own stream,
 * `qrng`, so the other kinds' choices stay as they were.
 */
/** The values a multicast setting is given: good ones mostly, some out of range or unparsable. */
const MCAST_SWITCH_VALUES: Readonly<Record<string, readonly string[]>> = {
  mcast_snoop: ['true', 'true', 'TRUE', 'false'],
  mcast_querier: ['false', 'true'],
  mcast_flood_unregistered: ['true', 'false'],
  mcast_table_size: ['10', '4096', '-1', 'x'],
  mcast_idle_timeout: ['5', '60', '9000', ' 30'],
  mcast_query_interval: ['0', '20', '7200'],
  mcast_eth_src: ['00:00:00:00:99:01'],
  mcast_ip4_src: ['10.0.0.254'],
  'interconn-ts': ['ts'],
};

/**
 * A multicast setting changed, from `mrng` so that the other kinds' choices stay as they were:
 * a switch's snooping settings (other_config), a router's relay, a port's static flooding (a
 * gateway port's often) or report flooding, a switch port made remote (ovn-ic) or a VIF again.
 */
function randomMcast(mrng: Rng, db: Database): { kind: Kind; ops: unknown[] } | undefined {
  const lss = [...db.rows('Logical_Switch').keys()].sort();
  const lrs = [...db.rows('Logical_Router').keys()].sort();
  const lsps = [...db.rows('Logical_Switch_Port').values()].sort((a, b) => (a._uuid < b._uuid ? -1 : 1)) as unknown as { _uuid: Uuid; type: string }[];
  const lrps = [...db.rows('Logical_Router_Port').keys()].sort();
  // Gateway ports (a DGP, or a gateway router's port with gateway chassis) flood through their
  // chassisredirect port, or as themselves where they have none: they are picked more often.
  const gatewayLrps = lrps.filter((u) => {
    const lrp = db.get('Logical_Router_Port', u) as unknown as nb.Logical_Router_Port;
    return lrp.gateway_chassis.length > 0 || lrp.ha_chassis_group.length > 0;
  });
  if (lss.length === 0 && lrs.length === 0) return undefined;
  const what = mrng.weighted<string>([['switch', lss.length > 0 ? 5 : 0], ['relay', lrs.length > 0 ? 3 : 0], ['lsp', lsps.length > 0 ? 3 : 0],
    ['lrp', lrps.length > 0 ? 3 : 0], ['remote', lsps.length > 0 ? 1 : 0]]);
  const toggle = (table: string, uuid: Uuid, column: string, key: string, values: readonly string[]): unknown => ({
    op: 'mutate', table, where: byUuid(uuid),
    mutations: mrng.chance(0.75) ? [[column, 'delete', set([key])], [column, 'insert', map({ [key]: mrng.pick(values) })]] : [[column, 'delete', set([key])]],
  });
  switch (what) {
    case 'switch': {
      const sw = mrng.pick(lss);
      const keys = mrng.subset(Object.keys(MCAST_SWITCH_VALUES), 3);
      // Mostly snooping switches: the key is there in most changes.
      if (!keys.includes('mcast_snoop') && mrng.chance(0.5)) keys.push('mcast_snoop');
      return { kind: 'mcast', ops: keys.map((k) => toggle('Logical_Switch', sw, 'other_config', k, MCAST_SWITCH_VALUES[k] as readonly string[])) };
    }
    case 'relay':
      return { kind: 'mcast', ops: [toggle('Logical_Router', mrng.pick(lrs), 'options', 'mcast_relay', ['true', 'true', 'false'])] };
    case 'lsp': {
      const p = mrng.pick(lsps);
      return { kind: 'mcast', ops: [toggle('Logical_Switch_Port', p._uuid, 'options', mrng.pick(['mcast_flood', 'mcast_flood_reports']), ['true', 'true', 'false'])] };
    }
    case 'lrp': {
      const lrp = gatewayLrps.length > 0 && mrng.chance(0.6) ? mrng.pick(gatewayLrps) : mrng.pick(lrps);
      return { kind: 'mcast', ops: [toggle('Logical_Router_Port', lrp, 'options', 'mcast_flood', ['true', 'true', 'false'])] };
    }
    default: {
      const p = mrng.pick(lsps);
      if (p.type !== '' && p.type !== 'remote') return undefined;
      return { kind: 'mcast', ops: [{ op: 'update', table: 'Logical_Switch_Port', where: byUuid(p._uuid), row: { type: p.type === 'remote' ? '' : 'remote' } }] };
    }
  }
}

const IGMP_ADDRESSES = ['239.1.1.1', '239.1.1.2', '224.0.0.5', 'ff0e::1', 'ff02::1:3', 'mrouters', 'bad'] as const;

/**
 * What chassis' snooping writes: IGMP_Group rows inserted, changed or deleted (from `mrng`),
 * mostly naming a switch and ports of it, sometimes a router, a datapath that does not exist,
 * no chassis, or ports elsewhere.
 */
function randomIgmp(mrng: Rng, view: SbView, rows: ReadonlyMap<Uuid, IgmpGroupReport>): Map<Uuid, IgmpGroupReport | undefined> {
  const dps = [...(view.get('Datapath_Binding')?.values() ?? [])] as unknown as sb.Datapath_Binding[];
  const switches = dps.filter((d) => d.external_ids.has('logical-switch')).map((d) => d._uuid).sort();
  const all = dps.map((d) => d._uuid).sort();
  const pbs = ([...(view.get('Port_Binding')?.values() ?? [])] as unknown as sb.Port_Binding[]).sort((a, b) => (a._uuid < b._uuid ? -1 : 1));
  const out = new Map<Uuid, IgmpGroupReport | undefined>();
  const row = (): IgmpGroupReport => {
    const dp = switches.length > 0 && mrng.chance(0.85) ? mrng.pick(switches) : all.length > 0 && mrng.chance(0.7) ? mrng.pick(all) : mrng.uuid();
    const local = pbs.filter((p) => p.datapath === dp).map((p) => p._uuid);
    const ports = mrng.subset(local.length > 0 && mrng.chance(0.9) ? local : pbs.map((p) => p._uuid), 3);
    return { address: mrng.pick(IGMP_ADDRESSES), datapath: mrng.chance(0.95) ? dp : undefined, chassis: mrng.chance(0.9) ? mrng.pick(['c-1', 'c-2', 'c-3']) : undefined, ports };
  };
  const existing = [...rows.keys()].sort();
  const n = mrng.int(1, 3);
  for (let i = 0; i < n; i++) {
    const what = mrng.weighted<string>([['insert', 4], ['update', existing.length > 0 ? 2 : 0], ['delete', existing.length > 0 ? 2 : 0]]);
    if (what === 'insert') out.set(mrng.uuid(), row());
    else if (what === 'update') out.set(mrng.pick(existing), row());
    else out.set(mrng.pick(existing), undefined);
  }
  return out;
}

function randomQosOrMeter(qrng: Rng, db: Database): { kind: Kind; ops: unknown[] } | undefined {
  const lss = [...db.rows('Logical_Switch').keys()].sort();
  const qos = [...db.rows('QoS').keys()].sort();
  const meters = [...db.rows('Meter').values()].sort((a, b) => (a._uuid < b._uuid ? -1 : 1)) as unknown as { _uuid: Uuid; name: string; bands: readonly Uuid[] }[];
  const acls = [...db.rows('ACL').keys()].sort();
  const copps = [...db.rows('Copp').keys()].sort();
  const dps = [...[...db.rows('Logical_Switch').keys()].map((u) => ['Logical_Switch', u] as const), ...[...db.rows('Logical_Router').keys()].map((u) => ['Logical_Router', u] as const)]
    .sort((a, b) => (a[1] < b[1] ? -1 : 1));
  const what = qrng.weighted<string>([['qos-add', lss.length > 0 ? 4 : 0], ['qos-update', qos.length > 0 ? 2 : 0], ['qos-del', qos.length > 0 ? 2 : 0],
    ['meter-add', 3], ['meter-update', meters.length > 0 ? 2 : 0], ['band-update', meters.length > 0 ? 2 : 0], ['meter-del', meters.length > 0 ? 1 : 0],
    ['acl-meter', acls.length > 0 ? 4 : 0], ['copp-add', copps.length < 2 ? 3 : 0], ['copp-update', copps.length > 0 ? 2 : 0], ['copp-del', copps.length > 0 ? 0.5 : 0],
    ['copp-set', copps.length > 0 && dps.length > 0 ? 8 : 0]]);
  const coppMeters = (): unknown => ['map', qrng.subset([...COPP_KINDS], 11).map((k) => [k, qrng.pick(METER_NAMES)])];
  const qosRow = (): Record<string, unknown> => {
    const bandwidth: Record<string, number> = {};
    if (qrng.chance(0.6)) bandwidth['rate'] = qrng.pick([64, 1000]);
    if (qrng.chance(0.4)) bandwidth['burst'] = qrng.pick([10, 200]);
    return {
      priority: qrng.pick([100, 200]), direction: qrng.pick(['from-lport', 'to-lport']), match: qrng.pick(['ip4', 'udp', 'tcp.dst == 80']),
      action: ['map', qrng.chance(0.6) ? [['dscp', qrng.pick([0, 10, 46])]] : []], bandwidth: ['map', Object.entries(bandwidth)],
    };
  };
  switch (what) {
    case 'qos-add':
      return { kind: 'qos', ops: [{ op: 'insert', table: 'QoS', 'uuid-name': 'q', row: qosRow() }, { op: 'mutate', table: 'Logical_Switch', where: byUuid(qrng.pick(lss)), mutations: [['qos_rules', 'insert', set([['named-uuid', 'q']])]] }] };
    case 'qos-update': {
      const row = qosRow();
      const update: Record<string, unknown> = {};
      for (const c of qrng.subset(Object.keys(row), 2)) update[c] = row[c];
      return { kind: 'qos', ops: [{ op: 'update', table: 'QoS', where: byUuid(qrng.pick(qos)), row: update }] };
    }
    case 'qos-del':
      return { kind: 'qos', ops: [{ op: 'mutate', table: 'Logical_Switch', where: [], mutations: [['qos_rules', 'delete', set([uuidAtom(qrng.pick(qos))])]] }] };
    case 'meter-add': {
      const bands = qrng.chance(0.3) ? ['b0', 'b1'] : ['b0'];
      return {
        kind: 'meter',
        ops: [
          ...bands.map((b) => ({ op: 'insert', table: 'Meter_Band', 'uuid-name': b, row: randomBand(qrng) })),
          { op: 'insert', table: 'Meter', row: { name: qrng.pick(METER_NAMES), unit: qrng.pick(['kbps', 'pktps']), bands: set(bands.map((b) => ['named-uuid', b])), fair: qrng.chance(0.5) ? set([qrng.chance(0.7)]) : set([]) } },
        ],
      };
    }
    case 'meter-update': {
      const m = qrng.pick(meters);
      const row: Record<string, unknown> = qrng.chance(0.6) ? { fair: set([qrng.chance(0.5)]) } : qrng.chance(0.5) ? { unit: qrng.pick(['kbps', 'pktps']) } : { name: qrng.pick(METER_NAMES) };
      return { kind: 'meter', ops: [{ op: 'update', table: 'Meter', where: byUuid(m._uuid), row }] };
    }
    case 'band-update': {
      const m = qrng.pick(meters);
      if (qrng.chance(0.3)) {
        return { kind: 'meter', ops: [{ op: 'insert', table: 'Meter_Band', 'uuid-name': 'b', row: randomBand(qrng) }, { op: 'update', table: 'Meter', where: byUuid(m._uuid), row: { bands: set([['named-uuid', 'b']]) } }] };
      }
      return { kind: 'meter', ops: [{ op: 'update', table: 'Meter_Band', where: byUuid(qrng.pick([...m.bands])), row: randomBand(qrng) }] };
    }
    case 'copp-add':
      return { kind: 'copp', ops: [{ op: 'insert', table: 'Copp', row: { name: qrng.pick(['c1', 'c2']), meters: coppMeters() } }] };
    case 'copp-update':
      return { kind: 'copp', ops: [{ op: 'update', table: 'Copp', where: byUuid(qrng.pick(copps)), row: { meters: coppMeters() } }] };
    case 'copp-del':
      return { kind: 'copp', ops: [{ op: 'delete', table: 'Copp', where: byUuid(qrng.pick(copps)) }] };
    case 'copp-set': {
      const [table, uuid] = qrng.pick(dps);
      return { kind: 'copp', ops: [{ op: 'update', table, where: byUuid(uuid), row: { copp: qrng.chance(0.8) ? set([uuidAtom(qrng.pick(copps))]) : set([]) } }] };
    }
    case 'meter-del':
      return { kind: 'meter', ops: [{ op: 'delete', table: 'Meter', where: byUuid(qrng.pick(meters)._uuid) }] };
    default:
      return { kind: 'meter', ops: [{ op: 'update', table: 'ACL', where: byUuid(qrng.pick(acls)), row: { log: qrng.chance(0.8), meter: qrng.chance(0.8) ? set([qrng.pick(METER_NAMES)]) : set([]) } }] };
  }
}

/** Every requested-tnl-key in the NB, by row (a port's with the rows it belongs to). */
function keyRequests(db: Database): Map<string, string> {
  const out = new Map<string, string>();
  for (const [table, column] of [['Logical_Switch', 'other_config'], ['Logical_Router', 'options'], ['Logical_Switch_Port', 'options'], ['Logical_Router_Port', 'options']] as const) {
    for (const [uuid, row] of db.rows(table)) {
      const v = (row[column] as ReadonlyMap<string, string>).get('requested-tnl-key');
      const owners = table.endsWith('_Port') ? [...db.strongReferrers(uuid).keys()].sort().join(',') : '';
      // A transit switch's request holds in VXLAN mode too: interconn-ts is part of it.
      const transit = table.endsWith('_Port') || !(row[column] as ReadonlyMap<string, string>).has('interconn-ts') ? '' : ' (transit)';
      if (v !== undefined) out.set(`${uuid} ${owners}`, `${v}${transit}`);
    }
  }
  return out;
}

/**
 * One random transaction's ops for the current database, or undefined when nothing fits.
 * Virtual ports draw from their own stream (`vrng`), so that adding them left the other kinds'
 * choices (and the coverage counted below) as they were.
 */
function randomTxn(rng: Rng, vrng: Rng, krng: Rng, db: Database, counter: { n: number; v: number }, monitors: number): { kind: Kind; ops: unknown[] } | undefined {
  if (krng.chance(0.04)) return randomKeyRequest(krng, db);
  if (rng.chance(0.08)) return { kind: 'claim', ops: [] };
  if (rng.chance(0.05)) return { kind: 'chassis', ops: [] };
  if (rng.chance(monitors > 0 ? 0.15 : 0.02)) return { kind: 'svc-status', ops: [] };
  const lss = names(db, 'Logical_Switch');
  const lsps = names(db, 'Logical_Switch_Port');
  const lrs = names(db, 'Logical_Router');
  const lrps = names(db, 'Logical_Router_Port');
  // Routes the BFD stream added are its own: the other kinds pick as they did before it.
  const routes = [...db.rows('Logical_Router_Static_Route').values()].filter((r) => !(r['external_ids'] as ReadonlyMap<string, string>).has('bfd-stream')).map((r) => r._uuid).sort();
  const policies = [...db.rows('Logical_Router_Policy').keys()].sort();
  const nats = [...db.rows('NAT').keys()].sort();
  const pgs = names(db, 'Port_Group');
  const ases = names(db, 'Address_Set');
  const acls = [...db.rows('ACL').keys()].sort();
  const dhcps = [...db.rows('DHCP_Options').keys()].sort();
  const lbs = [...db.rows('Load_Balancer').values()].filter((r) => !isEventStreamLb(r)).map((r) => r._uuid).sort();
  // Load balancers in chunks that a switch names: where a VIP mutation changes chunks' flows.
  const onSwitches = new Set<Uuid>();
  for (const ls of db.rows('Logical_Switch').values()) for (const u of (ls as unknown as { load_balancer: readonly Uuid[] }).load_balancer) onSwitches.add(u);
  const bigLbs = lbs.filter((u) => onSwitches.has(u) && chunkCountFor((db.get('Load_Balancer', u) as unknown as { vips: ReadonlyMap<string, string> }).vips.size) > 1);
  const smbs = [...db.rows('Static_MAC_Binding').keys()].sort();
  const lbgs = [...db.rows('Load_Balancer_Group').keys()].sort();
  const dps = [...lss.map((s) => ['Logical_Switch', s.uuid] as const), ...lrs.map((r) => ['Logical_Router', r.uuid] as const)];
  const dnss = [...db.rows('DNS').keys()].sort();
  const gwcs = [...db.rows('Gateway_Chassis').keys()].sort();
  const haGroups = [...db.rows('HA_Chassis_Group').keys()].sort();
  const haChassis = [...db.rows('HA_Chassis').keys()].sort();
  const hcs = [...db.rows('Load_Balancer_Health_Check').keys()].sort();
  const withHc = lbs.filter((u) => ((db.get('Load_Balancer', u) as unknown as { health_check: readonly Uuid[] }).health_check.length > 0));
  // Mappings mostly name enabled switch ports (monitored), sometimes disabled ones or a router port.
  const enabled = (p: { uuid: Uuid }): boolean => ((db.get('Logical_Switch_Port', p.uuid) as unknown as { enabled: readonly boolean[] }).enabled[0] ?? true);
  const mappable = lsps.filter(enabled).map((p) => p.name);
  const unmappable = [...lsps.filter((p) => !enabled(p)).map((p) => p.name), ...lrps.slice(0, 1).map((p) => p.name)];
  if (lsps.length > 0 && vrng.chance(0.03)) return { kind: 'vport', ops: virtualPortOps(vrng, db, lsps, lrs, ++counter.v) };
  const kind = rng.weighted<Kind>([
    ['ls-add', lss.length < 3 ? 3 : 0], ['ls-del', lss.length > 0 ? 1 : 0], ['lsp-add', lss.length > 0 && lsps.length < 12 ? 6 : 0],
    ['lsp-del', lsps.length > 0 ? 3 : 0], ['lsp-update', lsps.length > 0 ? 6 : 0], ['lsp-move', lsps.length > 0 && lss.length > 1 ? 1 : 0],
    ['lr-add', lrs.length < 2 ? 1 : 0], ['lr-del', lrs.length > 0 ? 0.3 : 0], ['lrp-add', lrs.length > 0 && lrps.length < 4 ? 2 : 0],
    ['lrp-del', lrps.length > 0 ? 1 : 0], ['lrp-update', lrps.length > 0 ? 1 : 0], ['ls-update', lss.length > 0 ? 1 : 0], ['nb-cfg', 0.5],
    ['route-add', lrs.length > 0 ? routeAddWeight.value : 0], ['route-del', routes.length > 0 ? 1 : 0], ['route-update', routes.length > 0 ? 1 : 0],
    ['policy-add', lrs.length > 0 ? 1 : 0], ['policy-del', policies.length > 0 ? 1.4 : 0], ['nat-add', lrs.length > 0 ? 1 : 0],
    ['nat-del', nats.length > 0 ? 0.7 : 0], ['lr-update', lrs.length > 0 ? 0.8 : 0],
    ['acl-add', lss.length + pgs.length > 0 ? 2 : 0], ['acl-del', acls.length > 0 ? 1 : 0], ['acl-update', acls.length > 0 ? 0.7 : 0],
    ['pg-add', pgs.length < 3 ? 1 : 0], ['pg-del', pgs.length > 0 ? 0.3 : 0], ['pg-ports', pgs.length > 0 && lsps.length > 0 ? 1.5 : 0],
    ['as-add', ases.length < 2 ? 0.5 : 0], ['as-update', ases.length > 0 ? 0.5 : 0], ['as-del', ases.length > 0 ? 0.6 : 0],
    ['dhcp-add', lsps.length > 0 ? 1 : 0], ['dhcp-update', dhcps.length > 0 ? 0.7 : 0], ['dhcp-del', dhcps.length > 0 ? 0.5 : 0],
    ['dhcp-set', lsps.length > 0 && dhcps.length > 0 ? 0.7 : 0], ['dhcp6-add', lsps.length > 0 ? 1 : 0],
    ['dhcp6-set', lsps.length > 0 && dhcps.length > 0 ? 0.7 : 0], ['dns-add', dnss.length < 4 ? 1 : 0], ['dns-update', dnss.length > 0 ? 0.7 : 0],
    ['dns-del', dnss.length > 0 ? 0.3 : 0], ['dns-set', lss.length > 0 && dnss.length > 0 ? 1 : 0],
    ['lb-add', lbs.length < 4 ? 1.5 : 0], ['lb-update', lbs.length > 0 ? 1 : 0], ['lb-vips', bigLbs.length > 0 ? 3 : lbs.length > 0 ? 0.5 : 0], ['lb-del', lbs.length > 0 ? 0.4 : 0],
    ['lbg-add', lbgs.length < 2 ? 0.5 : 0], ['lbg-update', lbgs.length > 0 && lbs.length > 0 ? 1 : 0], ['lbg-del', lbgs.length > 0 ? 0.6 : 0],
    ['dp-lb', dps.length > 0 && lbs.length > 0 ? 1.5 : 0], ['dp-lbg', dps.length > 0 && lbgs.length > 0 ? 1 : 0],
    ['smb-add', smbs.length < 4 ? 0.8 : 0], ['smb-update', smbs.length > 0 ? 0.5 : 0], ['smb-del', smbs.length > 0 ? 0.5 : 0],
    ['gw-set', lrps.length > 0 ? 4 : 0], ['gw-update', gwcs.length > 0 ? 4 : 0], ['ha-set', lrps.length + lsps.length > 0 ? 1 : 0],
    ['ha-update', haChassis.length > 0 ? 1.5 : 0], ['nat-distributed', lrs.length > 0 ? 1 : 0], ['gw-mtu', lrps.length > 0 ? 4 : 0],
    ['gw-link', lrps.length > 0 && lss.length > 0 ? 4 : 0],
    ['hc-add', lbs.length > 0 ? 1.5 : 0], ['hc-update', hcs.length > 0 ? 1 : 0], ['hc-del', withHc.length > 0 ? 0.5 : 0],
    ['ipm-set', lbs.length > 0 ? 2 : 0], ['tv-set', 0.5],
  ]);
  const n = ++counter.n;
  const lrpNames = [...lrps.map((p) => p.name), 'rp-ghost'];
  switch (kind) {
    case 'claim':
    case 'chassis':
    case 'svc-status':
      return { kind, ops: [] };
    case 'ls-add':
      return { kind, ops: [{ op: 'insert', table: 'Logical_Switch', row: { name: `ls${n}` } }] };
    case 'vport':
    case 'tnl-key':
    case 'qos':
    case 'meter':
    case 'copp':
    case 'mcast':
    case 'igmp':
    case 'req-chassis':
    case 'hostname':
    case 'bfd':
      return undefined;
    case 'ls-del':
      return { kind, ops: [{ op: 'delete', table: 'Logical_Switch', where: byUuid(rng.pick(lss).uuid) }] };
    case 'lsp-add': {
      const ops: unknown[] = [];
      for (let i = rng.int(1, 3); i > 0; i--) ops.push(...addLsp(rng.pick(lss).name, `p${n}-${i}`, randomLspColumns(rng, vrng, lrpNames, lsps.map((p) => p.name))));
      return { kind, ops };
    }
    case 'lsp-del': {
      const p = rng.pick(lsps);
      return { kind, ops: [{ op: 'mutate', table: 'Logical_Switch', where: [], mutations: [['ports', 'delete', set([uuidAtom(p.uuid)])]] }] };
    }
    case 'lsp-update': {
      const p = rng.pick(lsps);
      const cols = randomLspColumns(rng, vrng, lrpNames, lsps.map((p) => p.name));
      const pickCols = rng.subset(Object.keys(cols), 3);
      const row: Record<string, unknown> = {};
      for (const c of pickCols) row[c] = cols[c];
      if (pickCols.length === 0) row['addresses'] = randomAddresses(rng);
      return { kind, ops: [{ op: 'update', table: 'Logical_Switch_Port', where: byUuid(p.uuid), row }] };
    }
    case 'lsp-move': {
      const p = rng.pick(lsps);
      const to = rng.pick(lss);
      return {
        kind,
        ops: [
          { op: 'mutate', table: 'Logical_Switch', where: [['_uuid', '!=', uuidAtom(to.uuid)]], mutations: [['ports', 'delete', set([uuidAtom(p.uuid)])]] },
          { op: 'mutate', table: 'Logical_Switch', where: byUuid(to.uuid), mutations: [['ports', 'insert', set([uuidAtom(p.uuid)])]] },
        ],
      };
    }
    case 'lr-add':
      return { kind, ops: [{ op: 'insert', table: 'Logical_Router', row: { name: `lr${n}` } }] };
    case 'lr-del':
      return { kind, ops: [{ op: 'delete', table: 'Logical_Router', where: byUuid(rng.pick(lrs).uuid) }] };
    case 'lrp-add': {
      const row: Record<string, unknown> = rng.chance(0.3) ? { peer: rng.pick(lrpNames) } : {};
      if (rng.chance(0.3)) row['options'] = map(randomGatewayMtu(rng));
      const networks = rng.subset([`192.168.${n % 256}.1/24`, `fd00:${n.toString(16)}::1/64`, '10.9.0.1/16', `192.168.${rng.int(1, 4)}.1/24`, '10.0.0.1/24', `fd00:${rng.int(1, 3)}::1/64`], 2);
      if (networks.length === 0) networks.push(`192.168.${n % 256}.1/24`);
      return { kind, ops: addLrp(rng.pick(lrs).name, `rp${n}`, `0a:00:00:00:ff:${(n % 256).toString(16).padStart(2, '0')}`, networks, row) };
    }
    case 'lrp-del': {
      const p = rng.pick(lrps);
      return { kind, ops: [{ op: 'mutate', table: 'Logical_Router', where: [], mutations: [['ports', 'delete', set([uuidAtom(p.uuid)])]] }] };
    }
    case 'lrp-update': {
      const p = rng.pick(lrps);
      const row = rng.weighted<Record<string, unknown>>([
        [{ peer: rng.chance(0.5) ? set([]) : rng.pick(lrpNames) }, 2],
        [{ mac: `0a:00:00:00:fe:${(n % 256).toString(16).padStart(2, '0')}` }, 2],
        [{ enabled: set(rng.chance(0.5) ? [false] : []) }, 1],
        [{ networks: set([`172.16.${n % 256}.1/24`, 'fd00::9/64']) }, 1],
        [{ options: map(rng.chance(0.5) ? { route_table: 'rtb1' } : {}) }, 0.5],
        [{ ipv6_ra_configs: map(rng.pick([{ address_mode: 'slaac' }, { address_mode: 'slaac', send_periodic: 'true', mtu: '1400' }, {}])) }, 0.5],
        [{ options: map(rng.chance(0.5) ? { prefix_delegation: 'true' } : {}) }, 0.2],
        [{ options: map(rng.pick([{ 'reside-on-redirect-chassis': 'true' }, { 'redirect-type': rng.pick(['bridged', 'overlay']) }, {}])) }, 1],
      ]);
      return { kind, ops: [{ op: 'update', table: 'Logical_Router_Port', where: byUuid(p.uuid), row }] };
    }
    case 'ls-update': {
      const s = rng.pick(lss);
      const row = rng.chance(0.5) ? { other_config: map(rng.chance(0.5) ? { 'vlan-passthru': 'true' } : {}) } : { name: `ls${n}` };
      return { kind, ops: [{ op: 'update', table: 'Logical_Switch', where: byUuid(s.uuid), row }] };
    }
    case 'nb-cfg':
      return { kind, ops: [{ op: 'mutate', table: 'NB_Global', where: [], mutations: [['nb_cfg', '+=', 1]] }] };
    case 'route-add': {
      const row: Record<string, unknown> = { ip_prefix: randomPrefix(rng), nexthop: rng.chance(0.1) ? 'discard' : randomIp(rng) };
      if (rng.chance(0.2)) row['policy'] = 'src-ip';
      if (rng.chance(0.15) && lrpNames.length > 0) row['output_port'] = rng.pick(lrpNames);
      if (rng.chance(0.1)) row['route_table'] = 'rtb1';
      return { kind, ops: [{ op: 'insert', table: 'Logical_Router_Static_Route', 'uuid-name': 'r', row }, addToRouter(rng.pick(lrs).uuid, 'static_routes', 'r')] };
    }
    case 'route-del':
      return { kind, ops: [{ op: 'mutate', table: 'Logical_Router', where: [], mutations: [['static_routes', 'delete', set([uuidAtom(rng.pick(routes))])]] }] };
    case 'route-update':
      return { kind, ops: [{ op: 'update', table: 'Logical_Router_Static_Route', where: byUuid(rng.pick(routes)), row: rng.chance(0.5) ? { nexthop: randomIp(rng) } : { ip_prefix: randomPrefix(rng) } }] };
    case 'policy-add': {
      const action = rng.pick(['allow', 'drop', 'reroute', 'reroute']);
      const row: Record<string, unknown> = { priority: rng.int(1, 5) * 100, match: rng.pick(['ip4.dst == 10.1.0.0/16', 'ip4', 'ip6.src == fd00:1::/64']), action };
      if (action === 'reroute') row['nexthops'] = set(rng.subset([randomIp(rng), randomIp(rng), randomIp(rng)], 3));
      if (rng.chance(0.2)) row['options'] = map({ pkt_mark: String(rng.int(0, 9)) });
      return { kind, ops: [{ op: 'insert', table: 'Logical_Router_Policy', 'uuid-name': 'p', row }, addToRouter(rng.pick(lrs).uuid, 'policies', 'p')] };
    }
    case 'policy-del':
      return { kind, ops: [{ op: 'mutate', table: 'Logical_Router', where: [], mutations: [['policies', 'delete', set([uuidAtom(rng.pick(policies))])]] }] };
    case 'nat-add': {
      const type = rng.pick(['snat', 'dnat', 'dnat_and_snat'] as const);
      const row: Record<string, unknown> = {
        type, external_ip: rng.pick([`172.16.${rng.int(0, 3)}.${rng.int(10, 12)}`, 'fd00:9::1', '172.16.0.1', 'bogus']),
        logical_ip: type === 'snat' ? rng.pick(['10.0.0.0/24', '192.168.1.0/24', '10.0.0.5']) : rng.pick(['10.0.0.5', '192.168.1.5', 'fd00:1::5']),
      };
      if (type === 'dnat_and_snat' && rng.chance(0.3)) row['options'] = map({ stateless: 'true' });
      if (rng.chance(0.2)) row['external_port_range'] = '1000-2000';
      if (ases.length > 0 && rng.chance(0.2)) row[rng.pick(['allowed_ext_ips', 'exempted_ext_ips'])] = uuidAtom(rng.pick(ases).uuid);
      return { kind, ops: [{ op: 'insert', table: 'NAT', 'uuid-name': 'n', row }, addToRouter(rng.pick(lrs).uuid, 'nat', 'n')] };
    }
    case 'nat-del':
      return { kind, ops: [{ op: 'mutate', table: 'Logical_Router', where: [], mutations: [['nat', 'delete', set([uuidAtom(rng.pick(nats))])]] }] };
    case 'acl-add': {
      const onPg = pgs.length > 0 && (lss.length === 0 || rng.chance(0.5));
      const owner = onPg ? { table: 'Port_Group', uuid: rng.pick(pgs).uuid } : { table: 'Logical_Switch', uuid: rng.pick(lss).uuid };
      return { kind, ops: [{ op: 'insert', table: 'ACL', 'uuid-name': 'a', row: randomAcl(rng) }, { op: 'mutate', table: owner.table, where: byUuid(owner.uuid), mutations: [['acls', 'insert', set([['named-uuid', 'a']])]] }] };
    }
    case 'acl-del': {
      const acl = uuidAtom(rng.pick(acls));
      return { kind, ops: ['Logical_Switch', 'Port_Group'].map((table) => ({ op: 'mutate', table, where: [], mutations: [['acls', 'delete', set([acl])]] })) };
    }
    case 'acl-update': {
      const cols = randomAcl(rng);
      const row: Record<string, unknown> = {};
      for (const c of rng.subset(Object.keys(cols), 2)) row[c] = cols[c];
      if (Object.keys(row).length === 0) row['action'] = rng.pick(ACL_ACTIONS);
      return { kind, ops: [{ op: 'update', table: 'ACL', where: byUuid(rng.pick(acls)), row }] };
    }
    case 'pg-add':
      return { kind, ops: [{ op: 'insert', table: 'Port_Group', row: { name: rng.pick(['pg1', 'pg2', `pg${n}`]), ports: set(rng.subset(lsps, 3).map((p) => uuidAtom(p.uuid))) } }] };
    case 'pg-del':
      return { kind, ops: [{ op: 'delete', table: 'Port_Group', where: byUuid(rng.pick(pgs).uuid) }] };
    case 'pg-ports': {
      const pg = rng.pick(pgs);
      const p = uuidAtom(rng.pick(lsps).uuid);
      return { kind, ops: [{ op: 'mutate', table: 'Port_Group', where: byUuid(pg.uuid), mutations: [['ports', rng.chance(0.6) ? 'insert' : 'delete', set([p])]] }] };
    }
    case 'as-add':
      return { kind, ops: [{ op: 'insert', table: 'Address_Set', row: { name: rng.pick(['as1', 'pg1_ip4', `as${n}`]), addresses: set(rng.subset(['10.0.0.1', '10.0.0.2', '192.168.1.5'], 3)) } }] };
    case 'as-update':
      return { kind, ops: [{ op: 'update', table: 'Address_Set', where: byUuid(rng.pick(ases).uuid), row: rng.chance(0.7) ? { addresses: set(rng.subset(['10.0.0.3', '10.0.0.4'], 2)) } : { name: rng.pick(['as1', 'as9']) } }] };
    case 'as-del':
      return { kind, ops: [{ op: 'delete', table: 'Address_Set', where: byUuid(rng.pick(ases).uuid) }] };
    case 'dhcp-add':
      return {
        kind,
        ops: [
          { op: 'insert', table: 'DHCP_Options', 'uuid-name': 'd', row: { cidr: rng.pick(['10.0.0.0/24', '192.168.1.0/24', 'bad']), options: randomDhcpOptions(rng) } },
          { op: 'update', table: 'Logical_Switch_Port', where: byUuid(rng.pick(lsps).uuid), row: { dhcpv4_options: ['named-uuid', 'd'] } },
        ],
      };
    case 'dhcp-update':
      return { kind, ops: [{ op: 'update', table: 'DHCP_Options', where: byUuid(rng.pick(dhcps)), row: rng.chance(0.6) ? { options: randomDhcpOptions(rng) } : { cidr: rng.pick(['10.0.0.0/24', '10.0.0.0/16']) } }] };
    case 'dhcp-del':
      return { kind, ops: [{ op: 'delete', table: 'DHCP_Options', where: byUuid(rng.pick(dhcps)) }] };
    case 'smb-add':
      // On a router port, a switch port or no port; keys may repeat (the lowest UUID wins).
      return { kind, ops: [{ op: 'insert', table: 'Static_MAC_Binding', row: { logical_port: rng.pick([...lrpNames, ...lsps.map((p) => p.name), 'ghost']), ip: rng.pick(['10.0.0.50', 'fd00:1::50']), mac: rng.pick(['0a:00:00:00:00:50', '0a:00:00:00:00:51']) } }] };
    case 'smb-update':
      return { kind, ops: [{ op: 'update', table: 'Static_MAC_Binding', where: byUuid(rng.pick(smbs)), row: rng.chance(0.5) ? { mac: '0a:00:00:00:00:52', override_dynamic_mac: rng.chance(0.5) } : { logical_port: rng.pick(lrpNames) } }] };
    case 'smb-del':
      return { kind, ops: [{ op: 'delete', table: 'Static_MAC_Binding', where: byUuid(rng.pick(smbs)) }] };
    case 'lb-add': {
      // Often health checked from the start: a health check for one of its VIPs, and mappings.
      const row = randomLb(rng);
      const vips = [...((row['vips'] as [string, [string, string][]])[1])];
      if (vips.length === 0 || !rng.chance(0.5)) return { kind, ops: [{ op: 'insert', table: 'Load_Balancer', row }] };
      row['ip_port_mappings'] = randomMappings(rng, { vips: new Map(vips) }, mappable, unmappable);
      row['health_check'] = ['named-uuid', 'hc'];
      return {
        kind,
        ops: [
          { op: 'insert', table: 'Load_Balancer_Health_Check', 'uuid-name': 'hc', row: { vip: rng.pick(vips)[0], options: randomHcOptions(rng) } },
          { op: 'insert', table: 'Load_Balancer', row },
        ],
      };
    }
    case 'lb-update': {
      const row = randomLb(rng);
      // Often only the VIPs: emptied (has_lb_vip flips) or new.
      const partial = rng.chance(0.5) ? { vips: rng.chance(0.3) ? map({}) : row['vips'] } : row;
      return { kind, ops: [{ op: 'update', table: 'Load_Balancer', where: byUuid(rng.pick(lbs)), row: partial }] };
    }
    case 'lb-vips': {
      // A few VIPs added or removed (by key), as a CMS adds one service's VIP to a large load
      // balancer: one chunk's flows change, or all of them when the count crosses a boundary.
      const keys = Array.from({ length: rng.int(1, 3) }, () => manyVipKey(rng));
      const mutation = rng.chance(0.6)
        ? ['vips', 'insert', map(Object.fromEntries(keys.map((k) => [k, manyVipBackends(rng)])))]
        : ['vips', 'delete', set([...new Set(keys)])];
      const target = bigLbs.length > 0 && rng.chance(0.8) ? rng.pick(bigLbs) : rng.pick(lbs);
      return { kind, ops: [{ op: 'mutate', table: 'Load_Balancer', where: byUuid(target), mutations: [mutation] }] };
    }
    case 'lb-del':
      // Weakly referenced: the switches, routers and groups naming it lose it.
      return { kind, ops: [{ op: 'delete', table: 'Load_Balancer', where: byUuid(rng.pick(lbs)) }] };
    case 'lbg-add':
      return { kind, ops: [{ op: 'insert', table: 'Load_Balancer_Group', row: { name: `lbg${n}`, load_balancer: set(rng.subset(lbs, 2).map(uuidAtom)) } }] };
    case 'lbg-update':
      return { kind, ops: [{ op: 'mutate', table: 'Load_Balancer_Group', where: byUuid(rng.pick(lbgs)), mutations: [['load_balancer', rng.chance(0.6) ? 'insert' : 'delete', set([uuidAtom(rng.pick(lbs))])]] }] };
    case 'lbg-del': {
      // A group is strongly referenced: the datapaths using it drop it in the same transaction.
      const g = rng.pick(lbgs);
      const ops: unknown[] = dps.map(([table, uuid]) => ({ op: 'mutate', table, where: byUuid(uuid), mutations: [['load_balancer_group', 'delete', set([uuidAtom(g)])]] }));
      ops.push({ op: 'delete', table: 'Load_Balancer_Group', where: byUuid(g) });
      return { kind, ops };
    }
    case 'dp-lb': {
      const [table, uuid] = rng.pick(dps);
      return { kind, ops: [{ op: 'mutate', table, where: byUuid(uuid), mutations: [['load_balancer', rng.chance(0.65) ? 'insert' : 'delete', set([uuidAtom(rng.pick(lbs))])]] }] };
    }
    case 'dp-lbg': {
      const [table, uuid] = rng.pick(dps);
      return { kind, ops: [{ op: 'mutate', table, where: byUuid(uuid), mutations: [['load_balancer_group', rng.chance(0.65) ? 'insert' : 'delete', set([uuidAtom(rng.pick(lbgs))])]] }] };
    }
    case 'dhcp-set':
      return { kind, ops: [{ op: 'update', table: 'Logical_Switch_Port', where: byUuid(rng.pick(lsps).uuid), row: { dhcpv4_options: rng.chance(0.7) ? uuidAtom(rng.pick(dhcps)) : set([]) } }] };
    case 'dhcp6-add':
      return {
        kind,
        ops: [
          { op: 'insert', table: 'DHCP_Options', 'uuid-name': 'd', row: { cidr: randomDhcp6Cidr(rng), options: randomDhcp6Options(rng) } },
          { op: 'update', table: 'Logical_Switch_Port', where: byUuid(rng.pick(lsps).uuid), row: { dhcpv6_options: ['named-uuid', 'd'] } },
        ],
      };
    case 'dhcp6-set':
      return { kind, ops: [{ op: 'update', table: 'Logical_Switch_Port', where: byUuid(rng.pick(lsps).uuid), row: { dhcpv6_options: rng.chance(0.7) ? uuidAtom(rng.pick(dhcps)) : set([]) } }] };
    case 'dns-add': {
      const ops: unknown[] = [{ op: 'insert', table: 'DNS', 'uuid-name': 'dns', row: { records: randomDnsRecords(rng) } }];
      // Usually named by a switch or two at once; otherwise a row no switch names (yet).
      for (const s of lss.length > 0 && rng.chance(0.8) ? rng.subset(lss, 2) : []) {
        ops.push({ op: 'mutate', table: 'Logical_Switch', where: byUuid(s.uuid), mutations: [['dns_records', 'insert', set([['named-uuid', 'dns']])]] });
      }
      return { kind, ops };
    }
    case 'dns-update':
      return { kind, ops: [{ op: 'update', table: 'DNS', where: byUuid(rng.pick(dnss)), row: rng.chance(0.85) ? { records: randomDnsRecords(rng) } : { external_ids: map({ note: `n${n}` }) } }] };
    case 'dns-del':
      return { kind, ops: [{ op: 'delete', table: 'DNS', where: byUuid(rng.pick(dnss)) }] };
    case 'dns-set': {
      const s = rng.pick(lss);
      const how = rng.weighted<'insert' | 'delete' | 'set'>([['insert', 3], ['delete', 1], ['set', 1]]);
      if (how === 'set') return { kind, ops: [{ op: 'update', table: 'Logical_Switch', where: byUuid(s.uuid), row: { dns_records: set(rng.subset(dnss, 2).map(uuidAtom)) } }] };
      return { kind, ops: [{ op: 'mutate', table: 'Logical_Switch', where: byUuid(s.uuid), mutations: [['dns_records', how, set([uuidAtom(rng.pick(dnss))])]] }] };
    }
    case 'gw-set': {
      // One to three gateway chassis (a distributed gateway port), or none any more.
      const p = rng.pick(lrps);
      const ops: unknown[] = [];
      const members = rng.chance(0.25) ? [] : rng.subset(['hv1', 'hv2', 'hv3'], 3);
      members.forEach((chassis, i) => ops.push({ op: 'insert', table: 'Gateway_Chassis', 'uuid-name': `g${i}`, row: { name: `${p.name}-${chassis}-${n}`, chassis_name: chassis, priority: rng.int(0, 3) * 10 } }));
      ops.push({ op: 'update', table: 'Logical_Router_Port', where: byUuid(p.uuid), row: { gateway_chassis: set(members.map((_, i) => ['named-uuid', `g${i}`])) } });
      // Sometimes a switch port facing it announces the router's NAT and VIP addresses
      // (nat-addresses=router), drawn from `vrng` so that the other kinds' choices stay as they were.
      if (members.length > 0 && lss.length > 0 && vrng.chance(0.5)) {
        const options = vrng.chance(0.2) ? { 'router-port': p.name, 'nat-addresses': 'router', 'exclude-lb-vips-from-garp': 'true' } : { 'router-port': p.name, 'nat-addresses': 'router' };
        ops.push(...addLsp(vrng.pick(lss).name, `ga${n}`, { type: 'router', addresses: set(['router']), options: map(options) }));
      }
      return { kind, ops };
    }
    case 'gw-update':
      return { kind, ops: [{ op: 'update', table: 'Gateway_Chassis', where: byUuid(rng.pick(gwcs)), row: rng.chance(0.7) ? { priority: rng.int(0, 50) } : { chassis_name: rng.pick(['hv1', 'hv4']) } }] };
    case 'ha-set': {
      // An HA chassis group (new, an existing one, or none) on a router port or a switch port.
      const onLrp = lsps.length === 0 || (lrps.length > 0 && rng.chance(0.7));
      const target = onLrp ? { table: 'Logical_Router_Port', uuid: rng.pick(lrps).uuid } : { table: 'Logical_Switch_Port', uuid: rng.pick(lsps).uuid };
      const how = rng.weighted<'new' | 'existing' | 'none'>([['new', 2], ['existing', haGroups.length > 0 ? 2 : 0], ['none', 1]]);
      const ops: unknown[] = [];
      let value: unknown = set([]);
      if (how === 'new') {
        const members = rng.subset(['hv1', 'hv2', 'hv3'], 2);
        members.forEach((chassis, i) => ops.push({ op: 'insert', table: 'HA_Chassis', 'uuid-name': `h${i}`, row: { chassis_name: chassis, priority: rng.int(1, 40) } }));
        ops.push({ op: 'insert', table: 'HA_Chassis_Group', 'uuid-name': 'grp', row: { name: rng.pick(['grp1', `grp${n}`]), ha_chassis: set(members.map((_, i) => ['named-uuid', `h${i}`])) } });
        value = ['named-uuid', 'grp'];
      } else if (how === 'existing') {
        value = uuidAtom(rng.pick(haGroups));
      }
      ops.push({ op: 'update', table: target.table, where: byUuid(target.uuid), row: { ha_chassis_group: value } });
      return { kind, ops };
    }
    case 'ha-update':
      return { kind, ops: [{ op: 'update', table: 'HA_Chassis', where: byUuid(rng.pick(haChassis)), row: { priority: rng.int(0, 50) } }] };
    case 'nat-distributed': {
      // A dnat_and_snat rule distributed to a logical port's chassis (its MAC maybe bogus), maybe
      // naming its gateway port.
      const row: Record<string, unknown> = {
        type: 'dnat_and_snat', external_ip: rng.pick([`172.16.${rng.int(0, 3)}.${rng.int(20, 22)}`, 'fd00:9::2', '192.168.1.30']), logical_ip: rng.pick(['10.0.0.5', '192.168.1.5', 'fd00:1::5']),
        logical_port: set([rng.pick([...lsps.map((p) => p.name), 'vm-ghost'])]), external_mac: set([rng.pick(['0a:00:00:00:ee:01', '0A:0:0:0:ee:2', 'bogus'])]),
      };
      if (rng.chance(0.2) && lrps.length > 0) row['gateway_port'] = uuidAtom(rng.pick(lrps).uuid);
      if (rng.chance(0.2)) row['options'] = map({ stateless: 'true' });
      return { kind, ops: [{ op: 'insert', table: 'NAT', 'uuid-name': 'n', row }, addToRouter(rng.pick(lrs).uuid, 'nat', 'n')] };
    }
    case 'gw-link': {
      // A switch joined to a router port (usually of a router with gateway ports, whose HA
      // groups count the chassis of the switch's ports), with a VM port beside it.
      const gatewayRouters = new Set(lrs.map((r) => r.uuid).filter((u) => ((db.get('Logical_Router', u)?.['ports'] ?? []) as Uuid[])
        .some((p) => ((db.get('Logical_Router_Port', p)?.['gateway_chassis'] ?? []) as Uuid[]).length + ((db.get('Logical_Router_Port', p)?.['ha_chassis_group'] ?? []) as Uuid[]).length > 0)));
      const candidates = lrps.filter((p) => lrs.some((r) => gatewayRouters.has(r.uuid) && ((db.get('Logical_Router', r.uuid)?.['ports'] ?? []) as Uuid[]).includes(p.uuid)));
      const lrp = rng.pick(candidates.length > 0 && rng.chance(0.8) ? candidates : lrps);
      const ls = rng.pick(lss).name;
      return {
        kind,
        ops: [
          ...addLsp(ls, `r${n}`, { type: 'router', addresses: set(['router']), options: map({ 'router-port': lrp.name }) }),
          ...addLsp(ls, `v${n}`, { addresses: set([`0a:00:00:00:0a:${(n % 256).toString(16).padStart(2, '0')} 10.0.0.${(n % 200) + 20}`]) }),
        ],
      };
    }
    case 'gw-mtu': {
      // A router port's gateway MTU (some values ovn-northd does not take, a negative one) or
      // bypass set or cleared, keeping its other options; or a switch port's VLAN tag (which
      // counts on a localnet port facing a router port with an MTU).
      const what = rng.weighted<'mtu' | 'bypass' | 'clear' | 'tag'>([['mtu', 2], ['bypass', 2], ['clear', 1], ['tag', lss.length > 0 ? 3 : 0]]);
      if (what === 'tag') {
        // Usually a tagged localnet port added beside a router port, else a tag changed.
        const localnets = [...db.rows('Logical_Switch_Port').values()].filter((r) => r['type'] === 'localnet').map((r) => r._uuid).sort();
        if (localnets.length > 0 && rng.chance(0.4)) {
          return { kind, ops: [{ op: 'update', table: 'Logical_Switch_Port', where: byUuid(rng.pick(localnets)), row: { tag_request: set(rng.chance(0.6) ? [rng.int(0, 100)] : []) } }] };
        }
        const routerSwitches = lss.filter((ls) => ((db.get('Logical_Switch', ls.uuid)?.['ports'] ?? []) as Uuid[]).some((u) => db.get('Logical_Switch_Port', u)?.['type'] === 'router'));
        const ls = rng.pick(routerSwitches.length > 0 ? routerSwitches : lss);
        return { kind, ops: addLsp(ls.name, `ln${n}`, { type: 'localnet', options: map({ network_name: 'phys' }), addresses: set(['unknown']), tag_request: set([rng.int(0, 100)]) }) };
      }
      const key = what === 'bypass' || (what === 'clear' && rng.chance(0.4)) ? 'gateway_mtu_bypass' : 'gateway_mtu';
      const mutations: unknown[] = [['options', 'delete', set([key])]];
      if (what !== 'clear') mutations.push(['options', 'insert', map(what === 'mtu' ? { gateway_mtu: randomMtu(rng) } : randomGatewayMtu(rng))]);
      return { kind, ops: [{ op: 'mutate', table: 'Logical_Router_Port', where: byUuid(rng.pick(lrps).uuid), mutations }] };
    }
    case 'hc-add': {
      // A new health check (usually for one of the load balancer's VIPs), or one another load balancer has.
      const lb = rng.pick(lbs);
      if (hcs.length > 0 && rng.chance(0.2)) return { kind, ops: [{ op: 'mutate', table: 'Load_Balancer', where: byUuid(lb), mutations: [['health_check', 'insert', set([uuidAtom(rng.pick(hcs))])]] }] };
      const lbRow = db.get('Load_Balancer', lb) as unknown as { vips: ReadonlyMap<string, string> };
      const own = [...lbRow.vips.keys()];
      const vip = own.length > 0 && rng.chance(0.8) ? rng.pick(own) : rng.pick(HC_VIPS);
      const ops: unknown[] = [
        { op: 'insert', table: 'Load_Balancer_Health_Check', 'uuid-name': 'hc', row: { vip, options: randomHcOptions(rng) } },
        { op: 'mutate', table: 'Load_Balancer', where: byUuid(lb), mutations: [['health_check', 'insert', set([['named-uuid', 'hc']])]] },
      ];
      if (rng.chance(0.5)) ops.push({ op: 'update', table: 'Load_Balancer', where: byUuid(lb), row: { ip_port_mappings: randomMappings(rng, lbRow, mappable, unmappable) } });
      return { kind, ops };
    }
    case 'hc-update':
      return { kind, ops: [{ op: 'update', table: 'Load_Balancer_Health_Check', where: byUuid(rng.pick(hcs)), row: rng.chance(0.5) ? { vip: rng.pick(HC_VIPS) } : { options: randomHcOptions(rng) } }] };
    case 'hc-del': {
      // Unreferenced, the row is collected with it.
      const lb = rng.pick(withHc);
      const hc = rng.pick((db.get('Load_Balancer', lb) as unknown as { health_check: readonly Uuid[] }).health_check);
      return { kind, ops: [{ op: 'mutate', table: 'Load_Balancer', where: byUuid(lb), mutations: [['health_check', 'delete', set([uuidAtom(hc)])]] }] };
    }
    case 'tv-set': {
      // A chassis's template variables: set (the table is indexed by chassis), changed or removed.
      const chassis = rng.pick(['hv1', 'c1']);
      const existing = [...db.rows('Chassis_Template_Var').values()].find((r) => (r as unknown as { chassis: string }).chassis === chassis);
      if (existing !== undefined && rng.chance(0.3)) return { kind, ops: [{ op: 'delete', table: 'Chassis_Template_Var', where: byUuid(existing._uuid) }] };
      const variables = map(Object.fromEntries(rng.subset([['V1', '10.0.0.200'], ['P1', '80'], ['B1', '10.0.0.1:8080']], 2)));
      if (existing !== undefined) return { kind, ops: [{ op: 'update', table: 'Chassis_Template_Var', where: byUuid(existing._uuid), row: { variables } }] };
      return { kind, ops: [{ op: 'insert', table: 'Chassis_Template_Var', row: { chassis, variables } }] };
    }
    case 'ipm-set': {
      const lb = rng.chance(0.7) && withHc.length > 0 ? rng.pick(withHc) : rng.pick(lbs);
      const row = db.get('Load_Balancer', lb) as unknown as { vips: ReadonlyMap<string, string> };
      return { kind, ops: [{ op: 'update', table: 'Load_Balancer', where: byUuid(lb), row: { ip_port_mappings: randomMappings(rng, row, mappable, unmappable) } }] };
    }
    case 'lr-update': {
      const options: Record<string, string> = {};
      if (rng.chance(0.4)) options['chassis'] = 'hv1';
      if (rng.chance(0.2)) options['always_learn_from_arp_request'] = 'false';
      if (rng.chance(0.2)) options['dynamic_neigh_routers'] = 'true';
      if (rng.chance(0.2)) options['lb_force_snat_ip'] = rng.pick(['router_ip', '172.16.0.9']);
      if (rng.chance(0.2)) options['dnat_force_snat_ip'] = '172.16.0.8';
      const row: Record<string, unknown> = { options: map(options) };
      if (rng.chance(0.1)) row['enabled'] = set(rng.chance(0.5) ? [false] : []);
      return { kind, ops: [{ op: 'update', table: 'Logical_Router', where: byUuid(rng.pick(lrs).uuid), row }] };
    }
  }
}

/** A mutation adding the row named `tag` to a router's set column. */
function addToRouter(lr: Uuid, column: string, tag: string): unknown {
  return { op: 'mutate', table: 'Logical_Router', where: byUuid(lr), mutations: [[column, 'insert', set([['named-uuid', tag]])]] };
}

/** The switch ports on switches linked to a router that has a chassisredirect binding, by name. */
function linkedPorts(bindings: readonly sb.Port_Binding[]): string[] {
  const routers = new Set(bindings.filter((b) => b.type === 'chassisredirect').map((b) => b.datapath));
  const byName = new Map(bindings.map((b) => [b.logical_port, b]));
  const switches = new Set(bindings.filter((b) => routers.has(b.datapath) && b.type === 'patch')
    .map((b) => byName.get(b.options.get('peer') ?? '')?.datapath).filter((dp) => dp !== undefined && !routers.has(dp)));
  return bindings.filter((b) => switches.has(b.datapath)).map((b) => b.logical_port).sort();
}

/** The tunnel key of every live datapath (by NB uuid) and port (by datapath and name). */
function keysOf(view: SbView): Map<string, number> {
  const out = new Map<string, number>();
  for (const r of view.get('Datapath_Binding')?.values() ?? []) {
    const d = r as unknown as sb.Datapath_Binding;
    out.set(`dp ${d._uuid}`, d.tunnel_key);
  }
  for (const r of view.get('Port_Binding')?.values() ?? []) {
    const p = r as unknown as sb.Port_Binding;
    out.set(`port ${p.datapath} ${p.logical_port}`, p.tunnel_key);
  }
  return out;
}

/** Transactions applied per kind, over the whole run: proof that the generator covers them. */
const applied = new Map<Kind, number>();
/** Transactions after which a chassisredirect binding, or one of its flows with distributed NAT, existed. */
const gatewaySeen = { cr: 0, distributedNat: 0, routerGarps: 0 };
/** Transactions after which a gateway MTU check existed: plain, with a bypass, on a distributed NAT rule, with a VLAN header. */
const mtuSeen = { check: 0, bypass: 0, nat: 0, vlan: 0 };
/** Transactions after which an HA_Chassis named its Chassis, and a group had ref_chassis. */
const haSeen = { chassis: 0, ref: 0 };

/**
 * A Chassis registered, renamed or deleted, as a chassis transaction reports it: the names
 * whose Chassis changed, and (for a deletion) the bindings whose weak reference to it is
 * dropped.
 */
function chassisChange(rng: Rng, registered: Map<string, Uuid>, owned: ReadonlyMap<string, ChassisOwnedColumns>): {
  ports: Map<string, ChassisOwnedColumns | undefined>; chassis: Map<string, Uuid | undefined>;
} {
  const ports = new Map<string, ChassisOwnedColumns | undefined>();
  const chassis = new Map<string, Uuid | undefined>();
  const free = CHASSIS_NAMES.filter((n) => !registered.has(n));
  const names = [...registered.keys()].sort();
  const what = rng.weighted<'add' | 'del' | 'rename'>([['add', free.length > 0 ? 3 : 0], ['del', names.length > 0 ? 2 : 0], ['rename', names.length > 0 && free.length > 0 ? 1 : 0]]);
  if (what === 'add') {
    const name = rng.pick(free);
    const uuid = rng.uuid();
    registered.set(name, uuid);
    chassis.set(name, uuid);
  } else if (what === 'rename') {
    const from = rng.pick(names);
    const to = rng.pick(free);
    const uuid = registered.get(from) as Uuid;
    registered.delete(from);
    registered.set(to, uuid);
    chassis.set(from, undefined).set(to, uuid);
  } else {
    const name = rng.pick(names);
    const uuid = registered.get(name) as Uuid;
    registered.delete(name);
    chassis.set(name, undefined);
    for (const [port, c] of [...owned].sort((a, b) => (a[0] < b[0] ? -1 : 1))) {
      if (c.chassis?.includes(uuid) === true) ports.set(port, { ...c, chassis: c.chassis.filter((u) => u !== uuid) });
    }
  }
  return { ports, chassis };
}

/** Transactions that moved a live object's key; after which a datapath held a key of ovn-ic's range, a port a requested key, and a router port answered ARP as a proxy. */
const keySeen = { moved: 0, globalRange: 0, port: 0, arpProxy: 0 };

/**
 * Every valid request is held by a requester: for each requested key, some datapath (port, in
 * the same datapath) asking for it holds it. Bad requests (out of range, not a number) are
 * ignored.
 */
/** Whether every valid key request is honoured (in VXLAN mode, those within its ranges, or a transit switch's). */
function requestedKeysHonoured(db: Database, view: SbView, vxlan: boolean): string | undefined {
  const dpKey = new Map<Uuid, number>();
  for (const r of view.get('Datapath_Binding')?.values() ?? []) {
    const d = r as unknown as sb.Datapath_Binding;
    dpKey.set(d.external_ids.get('logical-switch') ?? d.external_ids.get('logical-router') ?? '', d.tunnel_key);
  }
  const portKey = new Map<string, { dp: Uuid; key: number }>();
  for (const r of view.get('Port_Binding')?.values() ?? []) {
    const p = r as unknown as sb.Port_Binding;
    portKey.set(p.logical_port, { dp: p.datapath, key: p.tunnel_key });
  }
  const valid = (v: string, max: number): number | undefined => (/^[ \t]*\+?[0-9]+$/.test(v) && Number(v) >= 1 && Number(v) <= max ? Number(v) : undefined);
  const dpWant = new Map<number, Uuid[]>();
  for (const [table, column] of [['Logical_Switch', 'other_config'], ['Logical_Router', 'options']] as const) {
    for (const [uuid, row] of db.rows(table)) {
      const transit = (row[column] as ReadonlyMap<string, string>).has('interconn-ts');
      const k = valid((row[column] as ReadonlyMap<string, string>).get('requested-tnl-key') ?? '', vxlan && !transit ? 4095 : 16777215);
      if (k !== undefined && dpKey.has(uuid)) dpWant.set(k, [...(dpWant.get(k) ?? []), uuid]);
    }
  }
  for (const [k, uuids] of dpWant) {
    if (!uuids.some((u) => dpKey.get(u) === k)) return `datapath key ${k} requested by ${uuids.join(', ')} is held by none of them`;
    if (k > 16711680) keySeen.globalRange++;
  }
  const portWant = new Map<string, string[]>();
  for (const table of ['Logical_Switch_Port', 'Logical_Router_Port'] as const) {
    for (const row of db.rows(table).values()) {
      const name = row['name'] as string;
      const k = valid((row['options'] as ReadonlyMap<string, string>).get('requested-tnl-key') ?? '', vxlan ? 2047 : 32767);
      const bound = portKey.get(name);
      if (k !== undefined && bound !== undefined) portWant.set(`${bound.dp} ${k}`, [...(portWant.get(`${bound.dp} ${k}`) ?? []), name]);
    }
  }
  for (const [dpAndKey, ports] of portWant) {
    const k = Number(dpAndKey.split(' ')[1]);
    if (!ports.some((n) => portKey.get(n)?.key === k)) return `port key ${dpAndKey} requested by ${ports.join(', ')} is held by none of them`;
    keySeen.port++;
  }
  return undefined;
}

/** Transactions after which a bind_vport flow existed, and a virtual port's VIP resolved to a parent's MAC. */
const virtualSeen = { bind: 0, bound: 0, unbound: 0 };

/** Transactions after which a Service_Monitor row existed, and one showed a status. */
const svcSeen = { monitors: 0, status: 0, offline: 0 };
/** Transactions after which a switch had a load balancer with VIPs in chunks, and VIP mutations of one. */
const lbSeen = { chunked: 0, vipsOnChunked: 0 };

/** The chunk limits of northd/load-balancers.ts, and the ones odd seeds run with. */
const defaultChunkLimits = { ...lbChunkLimits };
const smallChunkLimits = { vipsMin: 1, vipsPerChunk: 1, chunksMax: 8 };
/** The same for static routes (northd/lflows/router.ts). */
const defaultRouteChunkLimits = { ...routeChunkLimits };
const smallRouteChunkLimits = { groupsMin: 2, groupsPerChunk: 1, chunksMax: 4 };
/** How often routes are added: more on odd seeds, whose routers hold their route flows in chunks. */
const routeAddWeight = { value: 1.5 };
/** Transactions with a metering QoS flow, a fair meter's ACL copy, an ACL log naming one. */
const qosSeen = { metered: 0, fairCopies: 0, fairLogs: 0, copp: 0, coppWide: 0 };
/** Transactions with a snooping switch, unregistered multicast to a relay, a router flooding statically, a remote port snooped. */
const mcastSeen = { snoop: 0, relay: 0, routerStatic: 0, remote: 0, learned: 0, relayed: 0 };
/**
 * Transactions after which a router's _MC_static names a chassisredirect port (a DGP flooding),
 * those that changed which ones it names, and those after which it names a gateway router's port
 * with gateway chassis (no chassisredirect port there: the port itself).
 */
const dgpStaticSeen = { named: 0, changed: 0, gatewayRouter: 0 };
/** Transactions after which a binding had a requested chassis, additional ones, one found by hostname. */
const requestedSeen = { main: 0, additional: 0, byHostname: 0, activated: 0 };
const bfdSeen = { sessions: 0, used: 0, portFlows: 0, routeFlows: 0 };
const eventSeen = { txns: 0, switchFlows: 0, routerFlows: 0 };
/** Routable-stream transactions; steps with a route to another router's routable address. */
const routableSeen = { txns: 0, routes: 0 };
/** Flips of NB_Global's switch options; steps taken with one of them away from its default. */
const globalsSeen = { flips: 0, steps: 0 };
/** Drop sampling option changes; steps with every drop sampled, with the drops emptied (a refused domain holding it on). */
const dropSeen = { flips: 0, sampled: 0, emptied: 0 };
/** Mirror and forwarding group transactions; steps with a fwd_group flow, with a port naming mirrors. */
const fwdSeen = { txns: 0, groups: 0, mirrored: 0 };
const vxlanSeen = { flips: 0, steps: 0 };
const lbFromRouterSeen = { flips: 0, steps: 0 };
/** Route transactions on a router with its route flows in chunks (odd seeds, two groups or more). */
const routeSeen = { chunked: 0 };

/** The view the last sequence ended with (compareWithOvnParser). */
let lastView: SbView = new Map();

function runSequence(seed: number): string | undefined {
  // Odd seeds deal even two VIPs into chunks: every load balancer's flows are held chunk by
  // chunk; and two route groups: a router's route flows too.
  Object.assign(lbChunkLimits, seed % 2 === 1 ? smallChunkLimits : defaultChunkLimits);
  Object.assign(routeChunkLimits, seed % 2 === 1 ? smallRouteChunkLimits : defaultRouteChunkLimits);
  routeAddWeight.value = seed % 2 === 1 ? 6 : 1.5;
  const rng = new Rng(seed);
  const vrng = new Rng(seed + 0x5eed0000);
  const krng = new Rng(seed + 0x7e770000);
  const qrng = new Rng(seed + 0x9050000);
  const mrng = new Rng(seed + 0x3c450000);
  const irng = new Rng(seed + 0x16470000);
  const hrng = new Rng(seed + 0x40570000);
  const brng = new Rng(seed + 0x0bfd0000);
  const erng = new Rng(seed + 0x0e7e0000);
  const xrng = new Rng(seed + 0x0e8e0000);
  const lrng = new Rng(seed + 0x0e9e0000);
  const frng = new Rng(seed + 0x0eae0000);
  const grng = new Rng(seed + 0x0ebe0000);
  const arng = new Rng(seed + 0x0ece0000);
  const drng = new Rng(seed + 0x0ede0000);
  // The rows a QoS or meter transaction inserts take their UUIDs from its stream too.
  let uuidRng = rng;
  const fx = nbFixture(() => uuidRng.uuid());
  const northd = createNorthd();
  northd.apply(fx.db, fx.run([{ op: 'insert', table: 'NB_Global', row: {} }]));
  const counter = { n: 0, v: 0 };
  const registered = new Map<string, Uuid>();
  /** The registered Chassis's hostnames, as the chassis database would hold them. */
  const hostnames = new Map<Uuid, string>();
  // Key requests, QoS rules and meters come on top of the TXNS others (their own streams leave
  // those as they were).
  let extra = 0;
  /** The chassisredirect ports in a _MC_static after the last transaction (dgpStaticSeen). */
  let crStatics = '';
  /** The view a full run makes of the database now (keeping what it keeps of `before`). */
  const recomputed = (before: SbView): SbView => northd.recompute(fx.db, before, {
    chassisOwned: new Map(northd.chassisOwned()), serviceMonitorStatus: new Map(northd.serviceMonitorStatus()), chassis: new Map(northd.chassis()),
    igmpGroups: new Map(northd.igmpGroups()), hostnames: new Map(northd.hostnames()), vxlan: northd.vxlanMode(), dropSampling: northd.dropSampling(),
  });
  /**
   * A transaction of a side stream (`stream` also gives its rows' UUIDs), applied and checked
   * on its own against a recompute: 'applied', 'skipped' (none, or refused by the NB schema),
   * or the failure's description.
   */
  const sideStep = (i: number, label: string, stream: Rng, ops: unknown[] | undefined): string => {
    if (ops === undefined) return 'skipped';
    if (TRACE) process.stderr.write(`txn ${i} (${label}): ${JSON.stringify(ops)}\n`);
    let delta;
    uuidRng = stream;
    try {
      delta = fx.run(ops);
    } catch {
      return 'skipped';
    } finally {
      uuidRng = rng;
    }
    const before: SbView = new Map([...northd.view()].map(([table, rows]) => [table, new Map(rows)]));
    northd.apply(fx.db, delta);
    const difference = viewDifference(northd.view(), recomputed(before));
    return difference === undefined ? 'applied' : `txn ${i} (${label}): incremental view (first) differs from recompute (second): ${difference}`;
  };
  for (let i = 0; i < TXNS + extra; i++) {
    // Empty load balancer events: now and then a transaction of their own stream, checked on its
    // own, ahead of the step's (so the other streams' steps come where they came before it).
    if (erng.chance(0.06)) {
      const result = sideStep(i, 'lb-event', erng, randomLbEvent(erng, fx.db));
      if (result === 'applied') eventSeen.txns++;
      else if (result !== 'skipped') return result;
    }
    // NB_Global's switch options (default_acl_drop, use_ct_inv_match, ignore_lsp_down) set,
    // changed or removed, from a stream of their own.
    if (grng.chance(0.03)) {
      const key = grng.pick(['default_acl_drop', 'use_ct_inv_match', 'ignore_lsp_down']);
      const value = grng.weighted<string | undefined>([['true', 3], ['false', 3], [undefined, 2], ['TRUE', 1]]);
      const mutations: unknown[] = [['options', 'delete', set([key])]];
      if (value !== undefined) mutations.push(['options', 'insert', map({ [key]: value })]);
      const result = sideStep(i, `nb-global ${key}=${value ?? '(none)'}`, grng, [{ op: 'mutate', table: 'NB_Global', where: [], mutations }]);
      if (result === 'applied') globalsSeen.flips++;
      else if (result !== 'skipped') return result;
    }
    // Drop sampling (debug_drop_collector_set, debug_drop_domain_id) set, changed, refused (a
    // domain of 255 or more: what is in force stays, its drops emptied) or removed, from a
    // stream of its own.
    if (drng.chance(0.04)) {
      const collectorSet = drng.weighted<string | undefined>([['0', 1], ['1', 2], ['123', 2], ['4294967295', 1], ['x', 1], [undefined, 1]]);
      const domain = drng.weighted<string | undefined>([['0', 2], ['5', 2], ['254', 1], ['255', 2], ['4096', 1], [undefined, 1]]);
      const pairs: Record<string, string> = {};
      if (collectorSet !== undefined) pairs['debug_drop_collector_set'] = collectorSet;
      if (domain !== undefined) pairs['debug_drop_domain_id'] = domain;
      const mutations: unknown[] = [['options', 'delete', set(['debug_drop_collector_set', 'debug_drop_domain_id'])], ['options', 'insert', map(pairs)]];
      const result = sideStep(i, `drop sampling ${collectorSet ?? '(none)'}/${domain ?? '(none)'}`, drng, [{ op: 'mutate', table: 'NB_Global', where: [], mutations }]);
      if (result === 'applied') dropSeen.flips++;
      else if (result !== 'skipped') return result;
    }
    const globalOptions = fx.db.rows('NB_Global').values().next().value?.['options'] as ReadonlyMap<string, string> | undefined;
    if (globalOptions?.get('default_acl_drop') === 'true' || globalOptions?.get('use_ct_inv_match') === 'false' || globalOptions?.get('ignore_lsp_down') === 'false') globalsSeen.steps++;
    if (northd.dropSampling().collectorSet !== 0) {
      if (optionUint(globalOptions ?? new Map<string, string>(), 'debug_drop_domain_id', 0) >= DROP_DOMAIN_LIMIT) dropSeen.emptied++;
      else dropSeen.sampled++;
    }
    // options:add_route set or removed on a NAT rule or a load balancer (routable addresses),
    // from a stream of their own.
    if (arng.chance(0.05)) {
      const result = sideStep(i, 'routable', arng, randomRoutable(arng, fx.db));
      if (result === 'applied') routableSeen.txns++;
      else if (result !== 'skipped') return result;
    }
    // Port mirrors and forwarding groups: the same, from a stream of their own.
    if (frng.chance(0.05)) {
      const result = sideStep(i, 'mirror/fwd-group', frng, randomMirrorOrFwd(frng, fx.db));
      if (result === 'applied') fwdSeen.txns++;
      else if (result !== 'skipped') return result;
    }
    // VXLAN mode coming or going (a Chassis with a vxlan encap), now and then, checked on its
    // own: the keys held stay, new ones and requests narrow (the key requests' stream makes many).
    if (xrng.chance(0.03)) {
      const before: SbView = new Map([...northd.view()].map(([table, rows]) => [table, new Map(rows)]));
      northd.setVxlanMode(fx.db, !northd.vxlanMode());
      vxlanSeen.flips++;
      const difference = viewDifference(northd.view(), recomputed(before));
      if (difference !== undefined) return `txn ${i} (vxlan ${northd.vxlanMode() ? 'on' : 'off'}): incremental view (first) differs from recompute (second): ${difference}`;
    }
    if (northd.vxlanMode()) vxlanSeen.steps++;
    // NB_Global options:install_ls_lb_from_router set or removed now and then (its own stream,
    // checked on its own): the routers' load balancers on their switches come and go.
    if (lrng.chance(0.04)) {
      const on = (fx.db.rows('NB_Global').values().next().value?.['options'] as ReadonlyMap<string, string> | undefined)?.get('install_ls_lb_from_router') === 'true';
      const mutations: unknown[] = [['options', 'delete', set(['install_ls_lb_from_router'])]];
      if (!on) mutations.push(['options', 'insert', map({ install_ls_lb_from_router: 'true' })]);
      const before: SbView = new Map([...northd.view()].map(([table, rows]) => [table, new Map(rows)]));
      uuidRng = lrng;
      try {
        northd.apply(fx.db, fx.run([{ op: 'mutate', table: 'NB_Global', where: [], mutations }]));
      } finally {
        uuidRng = rng;
      }
      lbFromRouterSeen.flips++;
      const difference = viewDifference(northd.view(), recomputed(before));
      if (difference !== undefined) return `txn ${i} (install_ls_lb_from_router ${on ? 'off' : 'on'}): incremental view (first) differs from recompute (second): ${difference}`;
    }
    if ((fx.db.rows('NB_Global').values().next().value?.['options'] as ReadonlyMap<string, string> | undefined)?.get('install_ls_lb_from_router') === 'true') lbFromRouterSeen.steps++;
    // IGMP_Group reports change no NB row: with a stream of their own, the NB evolves as it
    // did without them.
    const igmpReport = irng.chance(0.06);
    const mcast = !igmpReport && mrng.chance(0.1);
    // Requested chassis and hostnames from a stream of their own too.
    const requesting = !igmpReport && !mcast && hrng.chance(0.07);
    // BFD sessions from a stream of their own.
    const bfding = !igmpReport && !mcast && !requesting && brng.chance(0.1);
    // What the other streams see of the NB (BFD's stream sees the routable stream's ports too).
    const mainDb = withoutRoutableStream(fx.db);
    const txn = igmpReport ? { kind: 'igmp' as const, ops: [] } : mcast ? randomMcast(mrng, mainDb)
      : requesting ? (hrng.chance(0.4) ? { kind: 'hostname' as const, ops: [] } : randomRequestedChassis(hrng, mainDb))
      : bfding ? randomBfd(brng, fx.db)
      : qrng.chance(0.15) ? randomQosOrMeter(qrng, mainDb) : randomTxn(rng, vrng, krng, mainDb, counter, northd.view().get('Service_Monitor')?.size ?? 0);
    if (txn === undefined) {
      if (mcast || requesting || bfding) extra++;
      continue;
    }
    if (['tnl-key', 'qos', 'meter', 'copp', 'mcast', 'igmp', 'req-chassis', 'hostname', 'bfd'].includes(txn.kind)) extra++;
    // The view is live: keep a copy of its tables as they are before the transaction.
    const before: SbView = new Map([...northd.view()].map(([table, rows]) => [table, new Map(rows)]));
    const beforeKeys = keysOf(before);
    const requestsBefore = keyRequests(fx.db);
    const statsBefore = northd.stats();
    let sbDelta;
    if (txn.kind === 'claim') {
      // An agent's report for some ports (maybe not bound yet), or its withdrawal; often ports
      // of a switch linked to a router with a chassisredirect port, whose chassis count for
      // its HA group's ref_chassis.
      const ports = [...names(fx.db, 'Logical_Switch_Port').map((p) => p.name), 'ghost'];
      const routed = linkedPorts([...(northd.view().get('Port_Binding')?.values() ?? [])] as unknown as sb.Port_Binding[]);
      const updates = new Map<string, ChassisOwnedColumns | undefined>();
      // Mostly to a registered chassis, sometimes to one northd has not heard of.
      const known = [...registered.values()].sort();
      const chassisOf = (): Uuid => (known.length > 0 && rng.chance(0.8) ? rng.pick(known) : rng.uuid());
      for (const name of rng.subset(routed.length > 0 && rng.chance(0.6) ? routed : ports, 2)) {
        updates.set(name, rng.chance(0.7) ? { chassis: [chassisOf()], up: [rng.chance(0.5)] } : undefined);
      }
      // A virtual port claimed through one of its parents (or another port), maybe without a
      // chassis, or released.
      const vports = [...fx.db.rows('Logical_Switch_Port').values()].filter((r) => r.type === 'virtual').map((r) => r as unknown as { name: string; options: ReadonlyMap<string, string> });
      if (vports.length > 0 && vrng.chance(0.7)) {
        const v = vrng.pick(vports);
        const parents = (v.options.get('virtual-parents') ?? '').split(',').filter((x) => x !== '');
        const parent = parents.length > 0 && vrng.chance(0.8) ? vrng.pick(parents) : vrng.pick(ports);
        updates.set(v.name, vrng.chance(0.85) ? { chassis: vrng.chance(0.85) ? [vrng.uuid()] : [], virtual_parent: [parent], up: [true] } : undefined);
      }
      sbDelta = northd.setChassisOwned(fx.db, updates);
    } else if (txn.kind === 'chassis') {
      const { ports, chassis } = chassisChange(rng, registered, northd.chassisOwned());
      // A chassis registering may come with a hostname; one leaving takes its hostname along.
      const hostnameUpdates = new Map<Uuid, string | undefined>();
      const live = new Set(registered.values());
      for (const uuid of chassis.values()) if (uuid !== undefined && !hostnames.has(uuid) && hrng.chance(0.7)) hostnameUpdates.set(uuid, hrng.pick(HOSTNAMES));
      for (const uuid of hostnames.keys()) if (!live.has(uuid)) hostnameUpdates.set(uuid, undefined);
      for (const [uuid, h] of hostnameUpdates) {
        if (h === undefined) hostnames.delete(uuid);
        else hostnames.set(uuid, h);
      }
      sbDelta = northd.setChassisOwned(fx.db, ports, chassis, hostnameUpdates);
    } else if (txn.kind === 'hostname') {
      // A registered chassis's hostname set, changed or cleared; or a port activated by a
      // chassis (options:additional-chassis-activated), or its activation withdrawn.
      const known = [...registered.values()].sort();
      const updates = new Map<Uuid, string | undefined>();
      const ports = new Map<string, ChassisOwnedColumns | undefined>();
      const lsps = names(fx.db, 'Logical_Switch_Port');
      // Mostly a port that asks for several chassis (the only ones that show it).
      const migrating = [...fx.db.rows('Logical_Switch_Port').values()]
        .filter((r) => ((r['options'] as ReadonlyMap<string, string>).get('requested-chassis') ?? '').includes(',')).map((r) => r['name'] as string).sort();
      if (lsps.length > 0 && hrng.chance(0.4)) {
        const name = migrating.length > 0 && hrng.chance(0.8) ? hrng.pick(migrating) : hrng.pick(lsps).name;
        const c: Record<string, unknown> = { ...(northd.chassisOwned().get(name) ?? {}) };
        if (hrng.chance(0.8)) c['additional_chassis_activated'] = hrng.pick(['hv1', 'c1', 'hv2,c2']);
        else delete c['additional_chassis_activated'];
        ports.set(name, c as ChassisOwnedColumns);
      } else if (known.length > 0) {
        const uuid = hrng.pick(known);
        const h = hrng.chance(0.8) ? hrng.pick(HOSTNAMES) : undefined;
        updates.set(uuid, h);
        if (h === undefined) hostnames.delete(uuid);
        else hostnames.set(uuid, h);
      }
      sbDelta = northd.setChassisOwned(fx.db, ports, new Map(), updates);
    } else if (txn.kind === 'igmp') {
      sbDelta = northd.setIgmpGroups(fx.db, randomIgmp(irng, northd.view(), northd.igmpGroups()));
    } else if (txn.kind === 'svc-status') {
      // A chassis's probes report some rows' health (or clear it); a report for no row is ignored.
      const rows = [...(northd.view().get('Service_Monitor')?.keys() ?? []), rng.uuid()];
      const updates = new Map<Uuid, string | undefined>();
      for (const uuid of rng.subset(rows, 2)) updates.set(uuid, rng.weighted<string | undefined>([['online', 3], ['offline', 3], ['error', 1], [undefined, 1]]));
      sbDelta = northd.setServiceMonitorStatus(fx.db, updates);
    } else {
      let delta;
      uuidRng = txn.kind === 'qos' || txn.kind === 'meter' || txn.kind === 'copp' ? qrng : txn.kind === 'bfd' ? brng : rng;
      if (TRACE) process.stderr.write(`txn ${i} (${txn.kind}): ${JSON.stringify(txn.ops)}\n`);
      try {
        delta = fx.run(txn.ops);
      } catch {
        continue; // A generated transaction the NB schema refuses (e.g. duplicate name) is skipped.
      } finally {
        uuidRng = rng;
      }
      sbDelta = northd.apply(fx.db, delta);
    }
    applied.set(txn.kind, (applied.get(txn.kind) ?? 0) + 1);
    const statsAfter = northd.stats();
    const bindings = [...(northd.view().get('Port_Binding')?.values() ?? [])] as unknown as sb.Port_Binding[];
    if (bindings.some((b) => b.type === 'chassisredirect')) gatewaySeen.cr++;
    if (bindings.some((b) => b.type === 'chassisredirect' && !b.options.has('always-redirect'))) gatewaySeen.distributedNat++;
    // A nat-addresses=router port with the router's NAT or VIP addresses beside the port's own GARP.
    const natRouter = new Set([...fx.db.rows('Logical_Switch_Port').values()].filter((r) => (r['options'] as ReadonlyMap<string, string>).get('nat-addresses') === 'router').map((r) => r['name'] as string));
    if (bindings.some((b) => natRouter.has(b.logical_port) && b.nat_addresses.length >= 2)) gatewaySeen.routerGarps++;
    const flows = [...(northd.view().get('Logical_Flow')?.values() ?? [])] as unknown as sb.Logical_Flow[];
    const stageOf = (f: sb.Logical_Flow): string | undefined => f.external_ids.get('stage-name');
    if (flows.some((f) => stageOf(f) === 'lr_in_chk_pkt_len' && f.priority === 50)) mtuSeen.check++;
    if (flows.some((f) => stageOf(f) === 'lr_in_chk_pkt_len' && f.priority === 55)) mtuSeen.bypass++;
    if (flows.some((f) => stageOf(f) === 'lr_in_ip_input' && f.priority === 160)) mtuSeen.nat++;
    if (flows.some((f) => stageOf(f) === 'lr_in_admission' && /check_pkt_larger\((1418|1518|9018)\)/.test(f.actions))) mtuSeen.vlan++;
    const haRows = [...(northd.view().get('HA_Chassis')?.values() ?? [])] as unknown as sb.HA_Chassis[];
    if (haRows.some((h) => h.chassis.length > 0)) haSeen.chassis++;
    const haGroupRows = [...(northd.view().get('HA_Chassis_Group')?.values() ?? [])] as unknown as sb.HA_Chassis_Group[];
    if (haGroupRows.some((g) => g.ref_chassis.length > 0)) haSeen.ref++;
    if (flows.some((f) => stageOf(f) === 'ls_in_arp_rsp' && f.actions.startsWith('bind_vport('))) virtualSeen.bind++;
    if (flows.some((f) => stageOf(f) === 'lr_in_arp_resolve' && f.actions === 'eth.dst = 00:00:00:00:00:00; next;')) virtualSeen.unbound++;
    if (flows.some((f) => stageOf(f) === 'lr_in_arp_resolve' && /== (10\.0\.0|192\.168\.[1-4]|fd00:[1-3]:)[.:]50$/.test(f.match) && f.actions !== 'eth.dst = 00:00:00:00:00:00; next;')) virtualSeen.bound++;
    const monitors = [...(northd.view().get('Service_Monitor')?.values() ?? [])] as unknown as sb.Service_Monitor[];
    if (monitors.length > 0) svcSeen.monitors++;
    if (monitors.some((m) => m.status.length > 0)) svcSeen.status++;
    if (monitors.some((m) => m.status[0] === 'offline')) svcSeen.offline++;
    const sbLbs = [...(northd.view().get('Load_Balancer')?.values() ?? [])] as unknown as sb.Load_Balancer[];
    if (seed % 2 === 1 && txn.kind.startsWith('route-') && [...fx.db.rows('Logical_Router').values()].some((r) => (r.static_routes as readonly string[]).length >= 3)) routeSeen.chunked++;
    if (sbLbs.some((lb) => chunkCountFor(lb.vips.size) > 1)) {
      lbSeen.chunked++;
      if (txn.kind === 'lb-vips') lbSeen.vipsOnChunked++;
    }
    for (const uuid of northd.serviceMonitorStatus().keys()) {
      if (northd.view().get('Service_Monitor')?.has(uuid) !== true) return `txn ${i} (${txn.kind}): a status is kept for Service_Monitor ${uuid}, which does not exist`;
    }
    const difference = viewDifference(northd.view(), recomputed(before));
    if (difference !== undefined) return `txn ${i} (${txn.kind}): incremental view (first) differs from recompute (second): ${difference}`;
    // Keys move only where a request changed (or a row with one came or went).
    const requestsAfter = keyRequests(fx.db);
    const requestsSame = requestsAfter.size === requestsBefore.size && [...requestsAfter].every(([u, v]) => requestsBefore.get(u) === v);
    let moves = 0;
    for (const [k, key] of keysOf(northd.view())) {
      const old = beforeKeys.get(k);
      if (old === undefined || old === key) continue;
      if (requestsSame) return `txn ${i} (${txn.kind}): tunnel key of ${k} changed ${old} -> ${key} with no request changed`;
      moves++;
    }
    if (moves > 0) keySeen.moved++;
    if (flows.some((f) => stageOf(f) === 'ls_in_arp_rsp' && f.actions.includes('arp.tpa <-> arp.spa'))) keySeen.arpProxy++;
    if (flows.some((f) => f.actions.startsWith('set_meter('))) qosSeen.metered++;
    if (flows.some((f) => f.actions === 'igmp;')) mcastSeen.snoop++;
    if (flows.some((f) => stageOf(f) === 'ls_in_l2_lkup' && f.priority === 80 && f.actions.includes('_MC_mrouter_flood'))) mcastSeen.relay++;
    if (flows.some((f) => stageOf(f) === 'lr_in_ip_routing' && f.priority === 10460)) mcastSeen.routerStatic++;
    if (flows.some((f) => stageOf(f) === 'ls_out_pre_lb' && f.priority === 120)) mcastSeen.remote++;
    if (flows.some((f) => stageOf(f) === 'ls_in_l2_lkup' && f.priority === 90)) mcastSeen.learned++;
    if (flows.some((f) => stageOf(f) === 'lr_in_ip_routing' && f.priority === 10500)) mcastSeen.relayed++;
    const bindingOf = new Map(bindings.map((b) => [b._uuid, b]));
    const staticMembers = ([...(northd.view().get('Multicast_Group')?.values() ?? [])] as unknown as sb.Multicast_Group[])
      .filter((g) => g.name === '_MC_static').flatMap((g) => g.ports.map((u) => bindingOf.get(u))).filter((b) => b !== undefined);
    const crNow = staticMembers.filter((b) => b.type === 'chassisredirect').map((b) => b.logical_port).sort().join(' ');
    if (crNow !== '') dgpStaticSeen.named++;
    if (crNow !== crStatics) dgpStaticSeen.changed++;
    crStatics = crNow;
    const lrpByName = new Map([...fx.db.rows('Logical_Router_Port').values()].map((r) => [r['name'] as string, r]));
    const hasGateway = (name: string): boolean => ((lrpByName.get(name)?.['gateway_chassis'] ?? []) as Uuid[]).length + ((lrpByName.get(name)?.['ha_chassis_group'] ?? []) as Uuid[]).length > 0;
    if (staticMembers.some((b) => b.type === 'l3gateway' && hasGateway(b.logical_port))) dgpStaticSeen.gatewayRouter++;
    const bfds = [...(northd.view().get('BFD')?.values() ?? [])] as unknown as sb.BFD[];
    if (bfds.length > 0) bfdSeen.sessions++;
    if (bfds.some((b) => b.status !== 'admin_down')) bfdSeen.used++;
    if (flows.some((f) => f.actions.startsWith('handle_bfd_msg('))) bfdSeen.portFlows++;
    if (flows.some((f) => stageOf(f) === 'lr_in_ip_routing' && f.match.endsWith('udp.dst == 3784'))) bfdSeen.routeFlows++;
    if (flows.some((f) => f.actions.startsWith('fwd_group('))) fwdSeen.groups++;
    // A connected-route priority for a /32 (3 * 32 + 2): a route to a routable address.
    if (flows.some((f) => stageOf(f) === 'lr_in_ip_routing' && f.priority === 98 && f.match.endsWith('/32'))) routableSeen.routes++;
    if (bindings.some((b) => b.mirror_rules.length > 0)) fwdSeen.mirrored++;
    if (flows.some((f) => stageOf(f) === 'ls_in_pre_lb' && f.actions.startsWith('trigger_event('))) eventSeen.switchFlows++;
    if (flows.some((f) => stageOf(f) === 'lr_in_dnat' && f.actions.startsWith('trigger_event('))) eventSeen.routerFlows++;
    if (bindings.some((b) => b.requested_chassis.length > 0)) requestedSeen.main++;
    if (bindings.some((b) => b.requested_additional_chassis.length > 0)) requestedSeen.additional++;
    if (bindings.some((b) => b.options.has('additional-chassis-activated'))) requestedSeen.activated++;
    const nameOf = new Map([...registered].map(([name, uuid]) => [uuid, name]));
    if (bindings.some((b) => b.requested_chassis.some((u) => !(b.options.get('requested-chassis') ?? '').split(',').includes(nameOf.get(u) ?? '')))) requestedSeen.byHostname++;
    if ([...(northd.view().get('Meter')?.values() ?? [])].some((m) => (m['name'] as string).includes('__'))) qosSeen.fairCopies++;
    if (flows.some((f) => /meter="m\d__/.test(f.actions))) qosSeen.fairLogs++;
    const meteredKinds = new Set(flows.filter((f) => f.controller_meter.length > 0).map((f) => f.external_ids.get('stage-name')));
    if (meteredKinds.size > 0) qosSeen.copp++;
    if (meteredKinds.size >= 4) qosSeen.coppWide++;
    const problem = requestedKeysHonoured(fx.db, northd.view(), northd.vxlanMode());
    if (problem !== undefined) return `txn ${i} (${txn.kind}): ${problem}`;
    if (sbDelta.changes.length === 0 && viewDifference(before, northd.view()) !== undefined) return `txn ${i} (${txn.kind}): view changed but the delta is empty`;
    for (const [node, s] of Object.entries(statsAfter)) {
      if (s.recomputes !== statsBefore[node]?.recomputes) return `txn ${i} (${txn.kind}): node ${node} recomputed`;
    }
    // Every tenth view, our agent must compile every logical flow ovn-controller would.
    if (i % 10 === 9) {
      const refused = agentCompileErrors(northd.view());
      if (refused.length > 0) return `txn ${i} (${txn.kind}): our agent refuses ${refused.length} flows, the first: ${refused[0]}`;
    }
  }
  lastView = northd.view();
  return undefined;
}

t.test(`incremental == recompute over ${ONLY ?? SEQUENCES} sequences of ${TXNS} transactions`, async (t) => {
  const seeds = ONLY !== undefined ? [Number(ONLY)] : Array.from({ length: SEQUENCES }, (_, i) => FROM + i);
  let failures = 0;
  const noRealOvn = await missingTools();
  const parser = { views: 0, bothRefused: 0 };
  for (const seed of seeds) {
    let problem = runSequence(seed);
    // OVN's parser on the last view: what our agent refuses, it refuses, and the reverse.
    if (problem === undefined && noRealOvn === false && (seed % PARSER_EVERY === 0 || ONLY !== undefined)) {
      const compared = await compareWithOvnParser(lastView);
      parser.views++;
      parser.bothRefused += compared.bothRefused;
      if (compared.disagreements.length > 0) problem = `the last view: ${compared.disagreements.length} flows judged otherwise by OVN's parser, the first: ${compared.disagreements[0]}`;
    }
    if (problem !== undefined) {
      failures++;
      t.fail(`seed ${seed}: ${problem}\nreplay: NORTHD_SEED=${seed} npm run test:one -- tests/northd/incremental-equals-recompute.test.ts`);
      if (failures >= 3) break;
    }
  }
  t.equal(failures, 0, 'every sequence agrees');
  if (ONLY === undefined && noRealOvn === false) {
    t.comment(`views through OVN's parser: ${parser.views}, flows both refused: ${parser.bothRefused}`);
    t.ok(parser.views >= Math.floor(SEQUENCES / PARSER_EVERY) - failures && parser.bothRefused >= Math.max(1, parser.views / 4),
      'OVN\'s parser judged views, the flows it refuses among them');
  }
  if (ONLY === undefined) {
    const kinds = KINDS;
    t.comment(`applied: ${kinds.map((k) => `${k} ${applied.get(k) ?? 0}`).join(', ')}`);
    for (const k of kinds) t.ok((applied.get(k) ?? 0) >= SEQUENCES / 10, `the generator applied ${k} transactions`);
    t.comment(`transactions with a chassisredirect binding: ${gatewaySeen.cr}, of which without always-redirect: ${gatewaySeen.distributedNat}`);
    t.ok(gatewaySeen.cr >= SEQUENCES && gatewaySeen.distributedNat >= SEQUENCES / 10, 'distributed gateway ports (and distributed NAT on them) were exercised');
    t.comment(`transactions with a nat-addresses=router binding announcing NAT or VIP addresses: ${gatewaySeen.routerGarps}`);
    t.ok(gatewaySeen.routerGarps >= SEQUENCES / 10, 'nat-addresses=router with the router\'s addresses was exercised');
    t.comment(`transactions with gateway MTU checks: ${mtuSeen.check}, with a bypass: ${mtuSeen.bypass}, on distributed NAT: ${mtuSeen.nat}, with a VLAN header: ${mtuSeen.vlan}`);
    t.ok(mtuSeen.check >= SEQUENCES && mtuSeen.bypass >= SEQUENCES / 5 && mtuSeen.nat >= SEQUENCES / 50 && mtuSeen.vlan >= SEQUENCES / 50, 'gateway MTUs (with bypass, distributed NAT and VLAN headers) were exercised');
    t.comment(`transactions with an HA_Chassis naming its Chassis: ${haSeen.chassis}, with a group's ref_chassis: ${haSeen.ref}`);
    t.ok(haSeen.chassis >= SEQUENCES / 2 && haSeen.ref >= SEQUENCES / 4, 'HA members\' Chassis and ref_chassis were exercised');
    t.comment(`transactions with a Service_Monitor row: ${svcSeen.monitors}, with a status shown: ${svcSeen.status}, with one offline: ${svcSeen.offline}`);
    t.ok(svcSeen.monitors >= SEQUENCES && svcSeen.status >= SEQUENCES / 2 && svcSeen.offline >= SEQUENCES / 4, 'health checks (rows, statuses, offline backends) were exercised');
    t.comment(`transactions with a switch's load balancer in chunks: ${lbSeen.chunked}, VIP mutations then: ${lbSeen.vipsOnChunked}`);
    t.ok(lbSeen.chunked >= SEQUENCES && lbSeen.vipsOnChunked >= SEQUENCES / 20, 'load balancers with VIPs in chunks (and VIPs added and removed on them) were exercised');
    t.comment(`route transactions on a router with its route flows in chunks: ${routeSeen.chunked}`);
    t.ok(routeSeen.chunked >= SEQUENCES / 4, 'static routes in chunks were added, removed and changed');
    t.comment(`transactions moving a key: ${keySeen.moved}; requested keys held in ovn-ic's range: ${keySeen.globalRange}, by ports: ${keySeen.port}`);
    t.ok(keySeen.moved >= SEQUENCES / 5 && keySeen.globalRange >= SEQUENCES / 5 && keySeen.port >= SEQUENCES / 2, 'requested tunnel keys (taken from holders, in ovn-ic\'s range, on ports) were exercised');
    t.comment(`transactions with an ARP proxy flow: ${keySeen.arpProxy}`);
    t.ok(keySeen.arpProxy >= SEQUENCES / 25, 'ARP proxies on router ports were exercised');
    t.comment(`transactions with a metering QoS flow: ${qosSeen.metered}, with a fair meter's ACL copy: ${qosSeen.fairCopies}, with an ACL log naming one: ${qosSeen.fairLogs}`);
    t.ok(qosSeen.metered >= SEQUENCES && qosSeen.fairCopies >= SEQUENCES / 6 && qosSeen.fairLogs >= SEQUENCES / 10, 'QoS metering and fair meters\' ACL copies were exercised');
    t.comment(`transactions with a flow metered by a CoPP: ${qosSeen.copp}, in four stages or more: ${qosSeen.coppWide}`);
    t.ok(qosSeen.copp >= SEQUENCES * 2 && qosSeen.coppWide >= SEQUENCES / 20, 'CoPP meters on flows were exercised');
    t.comment(`transactions with a snooping switch: ${mcastSeen.snoop}, unregistered multicast to a relay: ${mcastSeen.relay}, a router flooding statically: ${mcastSeen.routerStatic}, a remote port snooped: ${mcastSeen.remote}`);
    t.ok(mcastSeen.snoop >= SEQUENCES && mcastSeen.relay >= SEQUENCES / 10 && mcastSeen.routerStatic >= SEQUENCES / 20 && mcastSeen.remote >= SEQUENCES / 20, 'IP multicast (snooping, relay, static flooding, remote ports) was exercised');
    t.comment(`transactions with a DGP's chassisredirect port in _MC_static: ${dgpStaticSeen.named}, changing which: ${dgpStaticSeen.changed}, with a gateway router's port with gateway chassis there: ${dgpStaticSeen.gatewayRouter}`);
    t.ok(dgpStaticSeen.named >= SEQUENCES / 2 && dgpStaticSeen.changed >= SEQUENCES / 20 && dgpStaticSeen.gatewayRouter >= SEQUENCES / 10,
      'gateway ports flooding statically (by their chassisredirect port, or as themselves on a gateway router) were exercised');
    t.comment(`transactions with a learned group's flow: ${mcastSeen.learned}, relayed by a router: ${mcastSeen.relayed}`);
    t.ok(mcastSeen.learned >= SEQUENCES && mcastSeen.relayed >= SEQUENCES / 20, 'groups learned by snooping (and relayed) were exercised');
    t.comment(`transactions with a requested chassis: ${requestedSeen.main}, additional ones: ${requestedSeen.additional}, found by hostname: ${requestedSeen.byHostname}, an activated port: ${requestedSeen.activated}`);
    t.ok(requestedSeen.main >= SEQUENCES && requestedSeen.additional >= SEQUENCES / 2 && requestedSeen.byHostname >= SEQUENCES / 4 && requestedSeen.activated >= SEQUENCES / 40,
      'requested chassis (additional, by hostname, activated) were exercised');
    t.comment(`transactions with BFD sessions: ${bfdSeen.sessions}, one a route uses: ${bfdSeen.used}, a port's BFD flows: ${bfdSeen.portFlows}, a route's: ${bfdSeen.routeFlows}`);
    t.ok(bfdSeen.sessions >= SEQUENCES && bfdSeen.used >= SEQUENCES / 10 && bfdSeen.portFlows >= SEQUENCES / 2 && bfdSeen.routeFlows >= SEQUENCES / 4, 'BFD sessions (used by routes, their ports\' and routes\' flows) were exercised');
    t.comment(`install_ls_lb_from_router flips: ${lbFromRouterSeen.flips}, steps taken with it on: ${lbFromRouterSeen.steps}`);
    t.ok(lbFromRouterSeen.flips >= SEQUENCES && lbFromRouterSeen.steps >= SEQUENCES * 5, 'install_ls_lb_from_router was exercised');
    t.comment(`VXLAN mode flips: ${vxlanSeen.flips}, steps taken in VXLAN mode: ${vxlanSeen.steps}`);
    t.ok(vxlanSeen.flips >= SEQUENCES && vxlanSeen.steps >= SEQUENCES * 5, 'VXLAN mode was exercised');
    t.comment(`event stream transactions: ${eventSeen.txns}; transactions with an empty load balancer event flow on a switch: ${eventSeen.switchFlows}, on a router: ${eventSeen.routerFlows}`);
    t.ok(eventSeen.txns >= SEQUENCES && eventSeen.switchFlows >= SEQUENCES && eventSeen.routerFlows >= SEQUENCES / 2, 'empty load balancer events on switches and routers were exercised');
    t.comment(`routable stream transactions: ${routableSeen.txns}, steps with a route to another router's routable address: ${routableSeen.routes}`);
    t.ok(routableSeen.txns >= SEQUENCES && routableSeen.routes >= SEQUENCES / 2, 'routable addresses (add_route) were exercised');
    t.comment(`NB_Global switch option changes: ${globalsSeen.flips}, steps taken with one away from its default: ${globalsSeen.steps}`);
    t.ok(globalsSeen.flips >= SEQUENCES && globalsSeen.steps >= SEQUENCES * 5, 'default_acl_drop, use_ct_inv_match and ignore_lsp_down were exercised');
    t.comment(`drop sampling option changes: ${dropSeen.flips}, steps with the drops sampled: ${dropSeen.sampled}, emptied by a refused domain: ${dropSeen.emptied}`);
    t.ok(dropSeen.flips >= SEQUENCES && dropSeen.sampled >= SEQUENCES * 5 && dropSeen.emptied >= SEQUENCES, 'drop sampling (on, off, kept through a refused domain) was exercised');
    t.comment(`mirror and forwarding group transactions: ${fwdSeen.txns}; steps with a fwd_group flow: ${fwdSeen.groups}, with a port naming mirrors: ${fwdSeen.mirrored}`);
    t.ok(fwdSeen.txns >= SEQUENCES && fwdSeen.groups >= SEQUENCES * 5 && fwdSeen.mirrored >= SEQUENCES * 5, 'mirrors and forwarding groups were exercised');
    t.comment(`transactions with a bind_vport flow: ${virtualSeen.bind}, with a VIP resolved to its bound parent: ${virtualSeen.bound}, unclaimed: ${virtualSeen.unbound}`);
    t.ok(virtualSeen.bind >= SEQUENCES && virtualSeen.bound >= SEQUENCES / 20 && virtualSeen.unbound >= SEQUENCES / 10, 'virtual ports (bind flows, VIPs of claimed and unclaimed ports) were exercised');
  }
});
