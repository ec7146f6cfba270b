// BFD sessions from a router port to a next hop: the NB BFD table becomes SB BFD rows
// (23.03's build_bfd_table), which the chassis hosting the port runs; a static route that names a
// session (Logical_Router_Static_Route.bfd, with the session's dst_ip as its nexthop) is left out
// while the session is down (parsed_routes_add).
//
// Status. ovn-northd and the chassis share one column on each side: NB BFD.status and SB
// BFD.status, reconciled by ovn-northd over several passes (an empty status becomes admin_down;
// a session no valid route uses is admin_down; one a route uses leaves admin_down for down; past
// that the chassis's reports are copied into the NB). Those passes settle where `bfdStatusOf`
// says, which is what the view shows here: the SB status is a function of the NB row and of
// whether a valid route uses it. The chassis's reports reach the NB in the entry that carries
// them (`bfdReportWrites`, applied by the state machine), and ovn-northd's own NB writes in the
// entry whose change calls for them (`bfdStatusWrites`), both from apply version 5
// (server/apply-version.ts); before it the NB keeps what clients wrote and the view reads it
// through `bfdStatusOf` all the same.
//
// Departures from ovn-northd, both in values it draws rather than reads: `disc` is a hash of the
// session's key (ovn-northd draws it at random), and `src_port` is chosen by hashing the key
// into 49152..65534, in key order, the next free port on a collision (ovn-northd takes the lowest
// free port when it first meets the row). Both are then functions of the NB, so replicas agree
// without keeping them as history. A session's port moves only when a new session's key lands
// on it and sorts first.
//
// Incremental: an NB change to BFD rows, static routes, routers or router ports (what decides
// whether a valid route uses a session) derives every session again when there are any: the
// table holds one row per next hop watched, and a pass over it is cheap beside a router's flows.
import type { Database, DbDelta, Uuid } from '../ovsdb/index.js';
import type * as nb from '../ovsdb/rows/nb.js';
import type * as sb from '../ovsdb/rows/sb.js';
import type { EngineNode, NodeInputs } from './engine.js';
import { hashUuid, murmur3x86x128Text } from './hash.js';
import { nbGet, nbRows, ownerOf } from './nb.js';
import { extractLrpNetworks } from './netaddr.js';
import type { LportAddresses } from './netaddr.js';
import { SbChangeSet, SbTable, versioned } from './sb-changes.js';
import { parseRouteText, staticRouteOutport } from './static-routes.js';

export type BfdStatus = 'admin_down' | 'down' | 'init' | 'up';

/** BFD_DEF_MINTX, BFD_DEF_MINRX (ms) and BFD_DEF_DETECT_MULT: an NB row's empty columns. */
export const BFD_DEFAULT_MIN_TX_MS = 1000;
export const BFD_DEFAULT_MIN_RX_MS = 1000;
export const BFD_DEFAULT_DETECT_MULT = 5;
/** RFC 5881: a session's UDP source port is one of 49152..65535 (ovn-northd uses up to 65534). */
export const BFD_SRC_PORT_MIN = 49152;
export const BFD_SRC_PORT_COUNT = 65535 - BFD_SRC_PORT_MIN;
/** The UDP port BFD control packets are sent to (RFC 5881). */
export const BFD_DST_PORT = 3784;

const STATUSES: ReadonlySet<string> = new Set(['admin_down', 'down', 'init', 'up']);

/** Whether `s` is a BFD status the schema admits. */
export function isBfdStatus(s: unknown): s is BfdStatus {
  return typeof s === 'string' && STATUSES.has(s);
}

/**
 * Where ovn-northd's passes leave a session's status (both NB and SB) given the status in its NB
 * row and whether a valid route uses it: admin_down when none does; otherwise down in place of
 * admin_down (or none), else what the row says.
 */
export function bfdStatusOf(nbStatus: string | undefined, used: boolean): BfdStatus {
  if (!used) return 'admin_down';
  return nbStatus === undefined || nbStatus === 'admin_down' || !isBfdStatus(nbStatus) ? 'down' : nbStatus;
}

/** A session's key: ovn-northd matches NB and SB rows by (logical_port, dst_ip). */
const keyOf = (logicalPort: string, dstIp: string): string => `${logicalPort}\n${dstIp}`;

/** The SB BFD row UUID of a session, by its key. */
export function bfdSbUuid(logicalPort: string, dstIp: string): Uuid {
  return hashUuid(['BFD', keyOf(logicalPort, dstIp)]);
}

/** A session's local discriminator: non-zero, a function of its key. */
export function bfdDisc(logicalPort: string, dstIp: string): number {
  return (murmur3x86x128Text(keyOf(logicalPort, dstIp), 0xbfd)[0] >>> 0) || 1;
}

/**
 * UDP source ports for `keys` (sorted): each key's hashed slot, or the next free one after it
 * when an earlier key took it. Undefined for keys past the 16,383 ports (ovn-northd skips those
 * rows too).
 */
function assignSrcPorts(keys: readonly string[]): Map<string, number> {
  const taken = new Set<number>();
  const out = new Map<string, number>();
  for (const key of keys) {
    if (taken.size === BFD_SRC_PORT_COUNT) break;
    let slot = (murmur3x86x128Text(key, 0x5bfd)[0] >>> 0) % BFD_SRC_PORT_COUNT;
    while (taken.has(slot)) slot = (slot + 1) % BFD_SRC_PORT_COUNT;
    taken.add(slot);
    out.set(key, BFD_SRC_PORT_MIN + slot);
  }
  return out;
}

/** A router's ports with networks that parse, in NB order (what a route's output is chosen among). */
function routerPorts(db: Database, router: nb.Logical_Router): { name: string; networks: LportAddresses }[] {
  const out: { name: string; networks: LportAddresses }[] = [];
  for (const u of router.ports) {
    const lrp = nbGet<nb.Logical_Router_Port>(db, 'Logical_Router_Port', u);
    const networks = lrp === undefined ? undefined : extractLrpNetworks(lrp.mac, lrp.networks);
    if (lrp !== undefined && networks !== undefined) out.push({ name: lrp.name, networks });
  }
  return out;
}

/**
 * Routers' ports as routerPorts reads them, for one pass over the sessions: a router with many
 * ports and many watched routes has its ports' networks parsed once, not once per route.
 */
export type RouterPortsMemo = Map<Uuid, { name: string; networks: LportAddresses }[]>;

/** Whether static route `route` of `router` is valid (parsed_routes_add before its BFD check). */
function routeIsValid(db: Database, router: nb.Logical_Router, route: nb.Logical_Router_Static_Route, memo: RouterPortsMemo): boolean {
  const text = parseRouteText(route.nexthop, route.ip_prefix);
  if (text === undefined) return false;
  if (text.discard) return true;
  let ports = memo.get(router._uuid);
  if (ports === undefined) memo.set(router._uuid, (ports = routerPorts(db, router)));
  return staticRouteOutport(ports, route.output_port[0], route.nexthop, text.prefix.v4) !== undefined;
}

/** Whether a valid static route of some router uses BFD row `bfd` (names it, with its dst_ip as nexthop). */
export function bfdIsUsed(db: Database, bfd: nb.BFD, memo: RouterPortsMemo = new Map()): boolean {
  for (const referrer of db.weakReferrers(bfd._uuid).keys()) {
    const route = nbGet<nb.Logical_Router_Static_Route>(db, 'Logical_Router_Static_Route', referrer);
    if (route === undefined || route.bfd[0] !== bfd._uuid || route.nexthop !== bfd.dst_ip) continue;
    const owner = ownerOf(db, 'Logical_Router', referrer);
    const router = owner === undefined ? undefined : nbGet<nb.Logical_Router>(db, 'Logical_Router', owner);
    if (router !== undefined && routeIsValid(db, router, route, memo)) return true;
  }
  return false;
}

/** The NB tables whose changes can change a session's row: its own, and what decides whether a valid route uses it. */
const BFD_INPUT_TABLES: ReadonlySet<string> = new Set(['BFD', 'Logical_Router_Static_Route', 'Logical_Router', 'Logical_Router_Port']);

function touchesBfd(db: Database, delta: DbDelta): boolean {
  return delta.changes.some((c) => c.table === 'BFD') || (db.rows('BFD').size > 0 && delta.changes.some((c) => BFD_INPUT_TABLES.has(c.table)));
}

/** One NB write of BFD.status. */
export interface BfdStatusWrite {
  readonly bfd: Uuid;
  readonly status: BfdStatus;
}

/**
 * ovn-northd's writes of NB BFD.status after `delta` (just applied): each session's status where
 * its passes leave it. A client that moves a session from one of down/init/up to another gets
 * the previous one back (ovn-northd copies the SB status over it), as long as a route uses it.
 */
export function bfdStatusWrites(db: Database, delta: DbDelta): BfdStatusWrite[] {
  if (!touchesBfd(db, delta)) return [];
  const was = new Map<Uuid, string | undefined>();
  for (const c of delta.changes) {
    if (c.table === 'BFD' && c.kind === 'modify' && c.columns.includes('status')) was.set(c.uuid, (c.old as unknown as nb.BFD).status[0]);
  }
  const out: BfdStatusWrite[] = [];
  const memo: RouterPortsMemo = new Map();
  for (const row of [...nbRows<nb.BFD>(db, 'BFD').values()].sort((a, b) => (a._uuid < b._uuid ? -1 : 1))) {
    const now = row.status[0];
    const used = bfdIsUsed(db, row, memo);
    let status = bfdStatusOf(now, used);
    const before = was.get(row._uuid);
    if (used && before !== undefined && before !== 'admin_down' && isBfdStatus(before) && now !== undefined && now !== 'admin_down') status = before;
    if (status !== now) out.push({ bfd: row._uuid, status });
  }
  return out;
}

/**
 * What the chassis's reports of SB BFD.status (by SB row UUID) write into the NB: the reported
 * status, for a session a route uses and reported as down, init or up. A report on an unused
 * session, or of admin_down, is one ovn-northd overwrites in the SB at once: nothing.
 */
export function bfdReportWrites(db: Database, reports: ReadonlyMap<Uuid, BfdStatus>): BfdStatusWrite[] {
  if (reports.size === 0) return [];
  const bySb = new Map<Uuid, nb.BFD>();
  for (const row of nbRows<nb.BFD>(db, 'BFD').values()) {
    const sbUuid = bfdSbUuid(row.logical_port, row.dst_ip);
    const held = bySb.get(sbUuid);
    if (held === undefined || row._uuid < held._uuid) bySb.set(sbUuid, row);
  }
  const out: BfdStatusWrite[] = [];
  const memo: RouterPortsMemo = new Map();
  for (const [sbUuid, status] of [...reports].sort((a, b) => (a[0] < b[0] ? -1 : 1))) {
    const row = bySb.get(sbUuid);
    if (row === undefined || status === 'admin_down' || !bfdIsUsed(db, row, memo)) continue;
    if (row.status[0] !== status) out.push({ bfd: row._uuid, status });
  }
  return out;
}

export interface BfdData {
  readonly table: SbTable;
  /** Session key → its NB rows (one, as the NB's index has it; the lowest UUID wins otherwise). */
  readonly byKey: Map<string, Set<Uuid>>;
  /** NB row → its key as last read. */
  readonly keyOf: Map<Uuid, string>;
  /** Session key → its UDP source port. */
  srcPorts: Map<string, number>;
  /** Logical port → how many sessions name it (a router port with any has BFD flows). */
  readonly portSessions: Map<string, number>;
}

function track(db: Database, data: BfdData, uuid: Uuid): boolean {
  let keysChanged = false;
  const old = data.keyOf.get(uuid);
  const row = nbGet<nb.BFD>(db, 'BFD', uuid);
  const now = row === undefined ? undefined : keyOf(row.logical_port, row.dst_ip);
  if (old === now) return false;
  if (old !== undefined) {
    const s = data.byKey.get(old);
    s?.delete(uuid);
    if (s?.size === 0) {
      data.byKey.delete(old);
      keysChanged = true;
    }
    data.keyOf.delete(uuid);
    const port = old.slice(0, old.indexOf('\n'));
    const n = (data.portSessions.get(port) ?? 0) - 1;
    if (n > 0) data.portSessions.set(port, n);
    else data.portSessions.delete(port);
  }
  if (row !== undefined && now !== undefined) {
    let s = data.byKey.get(now);
    if (s === undefined) {
      data.byKey.set(now, (s = new Set()));
      keysChanged = true;
    }
    s.add(uuid);
    data.keyOf.set(uuid, now);
    data.portSessions.set(row.logical_port, (data.portSessions.get(row.logical_port) ?? 0) + 1);
  }
  return keysChanged;
}

/** Writes every session's SB row as the NB has it now (rows unchanged in content record nothing). */
function writeAll(db: Database, data: BfdData, out: SbChangeSet): void {
  const keep = new Set<Uuid>();
  const memo: RouterPortsMemo = new Map();
  for (const key of [...data.byKey.keys()].sort()) {
    const winner = [...(data.byKey.get(key) ?? [])].sort()[0];
    const row = winner === undefined ? undefined : nbGet<nb.BFD>(db, 'BFD', winner);
    const srcPort = data.srcPorts.get(key);
    if (row === undefined || srcPort === undefined) continue;
    const uuid = bfdSbUuid(row.logical_port, row.dst_ip);
    keep.add(uuid);
    data.table.put(versioned<sb.BFD>({
      _uuid: uuid, _version: '', src_port: srcPort, disc: bfdDisc(row.logical_port, row.dst_ip), logical_port: row.logical_port, dst_ip: row.dst_ip,
      min_tx: row.min_tx[0] ?? BFD_DEFAULT_MIN_TX_MS, min_rx: row.min_rx[0] ?? BFD_DEFAULT_MIN_RX_MS, detect_mult: row.detect_mult[0] ?? BFD_DEFAULT_DETECT_MULT,
      status: bfdStatusOf(row.status[0], bfdIsUsed(db, row, memo)), external_ids: new Map(), options: new Map(),
    }), out);
  }
  for (const uuid of [...data.table.rows.keys()]) if (!keep.has(uuid)) data.table.remove(uuid, out);
}

export function bfdNode(): EngineNode<BfdData, SbChangeSet> {
  return {
    name: 'bfd',
    inputs: ['nb'],
    init: () => ({ table: new SbTable('BFD'), byKey: new Map(), keyOf: new Map(), srcPorts: new Map(), portSessions: new Map() }),
    newChange: () => new SbChangeSet(),
    isEmpty: (c) => c.size === 0,
    recompute(data: BfdData, inputs: NodeInputs, out: SbChangeSet): void {
      out.maybeTrackWhole(data.table);
      const db = inputs.data<Database>('nb');
      for (const uuid of [...new Set([...data.keyOf.keys(), ...nbRows(db, 'BFD').keys()])].sort()) track(db, data, uuid);
      data.srcPorts = assignSrcPorts([...data.byKey.keys()].sort());
      writeAll(db, data, out);
    },
    handlers: {
      nb(data: BfdData, change: unknown, inputs: NodeInputs, out: SbChangeSet) {
        const db = inputs.data<Database>('nb');
        const delta = change as DbDelta;
        if (!delta.changes.some((c) => BFD_INPUT_TABLES.has(c.table))) return 'unchanged';
        if (data.table.rows.size === 0 && !touchesBfd(db, delta)) return 'unchanged';
        let keysChanged = false;
        for (const c of delta.changes) if (c.table === 'BFD' && track(db, data, c.uuid)) keysChanged = true;
        if (keysChanged) data.srcPorts = assignSrcPorts([...data.byKey.keys()].sort());
        writeAll(db, data, out);
        return 'handled';
      },
    },
  };
}
