// Load balancers and the datapaths they apply to.
//
// A load balancer applies to a switch or router that names it in its load_balancer column or
// through one of its load_balancer_group rows (ovn-northd's build_lbs). Its VIPs are parsed as
// ovn-northd 23.03 parses them (lib/lb.c): "IP", "IP:port" or "[IPv6]:port" keys, backends
// "IP[:port],..." of the same family, with a port exactly when the VIP has one; a VIP with any
// bad backend is skipped whole. A datapath "has a VIP" (od->has_lb_vip) when one of its load
// balancers has a non-empty vips column, parsed or not.
//
// Incremental: per datapath, the number of ways each load balancer applies to it (directly,
// through each group), so a group gaining a load balancer adds one count to each datapath that
// uses the group, and nothing is read again; per datapath, the number of its load balancers
// with VIPs, so a VIP column becoming empty flips has_lb_vip without scanning.
//
// Health checks (service-monitors.ts) are part of a load balancer's facts: which backends each
// health-checked VIP may choose, and the ARP/ND responder entries of its monitors. A change of
// them (a Service_Monitor's status) is a change of the facts, so its flows are built again.
import type { Database, DbDelta, Uuid } from '../ovsdb/index.js';
import type * as nb from '../ovsdb/rows/nb.js';
import { datapathSbUuid } from './datapaths.js';
import type { EngineNode, NodeInputs } from './engine.js';
import { formatIpv6, parseIpv6Groups } from './addresses.js';
import { boolOption, findLrp, nbGet, nbRows, optionUint, ownerOf } from './nb.js';
import { chunkCount, chunkOfKey } from './hash.js';
import { sameData, sortedDifference } from './same-data.js';
import { nbGlobalOf } from './sb-global.js';
import type { LbHealth, SvcArp, SvcMonitorsChange, SvcMonitorsData } from './service-monitors.js';

/**
 * One backend: its address as ovn-northd prints it, its port (0: none, and always 0 for a
 * template's backend) and the port as text (a template's may be a variable).
 */
export interface LbBackend {
  readonly ip: string;
  readonly port: number;
  readonly portStr: string | undefined;
}

/** One VIP of a load balancer, parsed. */
export interface LbVip {
  /** The VIP address as ovn-northd prints it (inet_ntop, no brackets), or a template's text. */
  readonly ip: string;
  /** The address family: the VIP's, or a template load balancer's options:address-family. */
  readonly v6: boolean;
  /**
   * Whether the parsed address is not an IPv4-mapped one, which some of ovn-northd's steps read
   * instead of the family: a template's address is never parsed, and reads as IPv6 there.
   */
  readonly addrV6: boolean;
  /** The VIP's port as text, or undefined for a VIP without one. */
  readonly port: string | undefined;
  /** The backends column value exactly as written (ct_lb_mark quotes it as is). */
  readonly backendsText: string;
  readonly backends: readonly LbBackend[];
  /**
   * For a VIP with a health check: the backends ct_lb_mark may choose (monitored and not
   * offline), in order; undefined without a health check (every backend, as written).
   */
  readonly active: readonly LbBackend[] | undefined;
}

/** A load balancer as its flows and its SB row read it. */
export interface LbFacts {
  readonly uuid: Uuid;
  readonly name: string;
  /** The NB protocol column (empty: TCP). */
  readonly protocol: nb.Load_Balancer['protocol'];
  /** The L4 protocol its matches name: tcp, udp or sctp. */
  readonly proto: 'tcp' | 'udp' | 'sctp';
  /** The VIPs that parsed, by key order. */
  readonly vips: readonly LbVip[];
  /**
   * The same VIPs dealt into `chunkCountFor(vips.length)` chunks by a hash of their key, each
   * in key order: the flows of a load balancer with many VIPs are built and held chunk by chunk
   * (lflows/node.ts), so that one VIP added or removed rebuilds one chunk's flows, not all of
   * them. A chunk whose VIPs are all as they were is the same array as before.
   */
  readonly chunks: readonly (readonly LbVip[])[];
  /** The NB vips column has entries (od->has_lb_vip counts it even if none parse). */
  readonly hasVips: boolean;
  readonly options: ReadonlyMap<string, string>;
  /** options:reject: a VIP without backends rejects rather than drops. */
  readonly reject: boolean;
  /**
   * A VIP without backends (and without reject) reports the packets that reach it to the CMS as
   * an empty_lb_backends controller event: options:event, or NB_Global options:controller_event
   * (deprecated in OVN, still read by ovn-northd 23.03).
   */
  readonly event: boolean;
  /** The hash_fields of ct_lb_mark (from selection_fields), or undefined. */
  readonly hashFields: string | undefined;
  /** options:affinity_timeout, at most 65535 (0: no affinity). */
  readonly affinityTimeout: number;
  /** options:skip_snat: a router does not SNAT its connections (force_snat ignored). */
  readonly skipSnat: boolean;
  /** options:neighbor_responder: which VIPs a router answers ARP/ND for. */
  readonly neighMode: 'reachable' | 'all' | 'none';
  /** options:add_route (never for a template load balancer). */
  readonly routable: boolean;
  /** options:template: VIPs and backends may name Chassis_Template_Var variables ("^NAME"). */
  readonly template: boolean;
  /** The SB row's vips: the NB column, but an IPv6 template's parsed VIPs in brackets. */
  readonly sbVips: ReadonlyMap<string, string>;
  /** ARP/ND responder entries for its health checks' source IPs, answered with `svcMac`. */
  readonly svcArp: readonly SvcArp[];
  readonly svcMac: string;
}

/** The load balancers that apply to one datapath. */
export interface DatapathLbs {
  readonly kind: 'switch' | 'router';
  readonly nbUuid: Uuid;
  /**
   * Load balancer → the number of ways it applies: directly, through each group, by the
   * datapath's own columns and, on a switch, by its peer routers' (install_ls_lb_from_router).
   */
  readonly counts: Map<Uuid, number>;
  /**
   * The part of `counts` by a switch's peer routers' columns (empty unless install_ls_lb_from_router
   * is on): has_lb_vip counts only the rest (ls_has_lb_vip reads the switch's own columns).
   */
  readonly inducedCounts: Map<Uuid, number>;
  /** The datapath's load_balancer and load_balancer_group columns, as last read. */
  direct: readonly Uuid[];
  groups: readonly Uuid[];
  /** A switch's share of its peer routers' columns (install_ls_lb_from_router), as last counted. */
  inducedDirect: readonly Uuid[];
  inducedGroups: readonly Uuid[];
  /** How many of the load balancers its own columns apply have VIPs. */
  withVips: number;
}

/** How a datapath uses a group: by its own load_balancer_group column, by a peer router's, or both. */
interface GroupUse {
  own: boolean;
  induced: boolean;
}

export interface LbsData {
  /** By NB Load_Balancer UUID. */
  readonly lbs: Map<Uuid, LbFacts>;
  /** By SB datapath UUID (only datapaths with load balancers or groups). */
  readonly byDp: Map<Uuid, DatapathLbs>;
  /** Load balancer → the datapaths it applies to. */
  readonly dpsOf: Map<Uuid, Set<Uuid>>;
  /** Load_Balancer_Group → its load balancers as last read, and the datapaths using it. */
  readonly groupLbs: Map<Uuid, readonly Uuid[]>;
  readonly groupDps: Map<Uuid, Map<Uuid, GroupUse>>;
  /** NB_Global options:controller_event as last read: every load balancer's `event`. */
  controllerEvent: boolean;
  /**
   * NB_Global options:install_ls_lb_from_router as last read: a router's load balancers and
   * groups apply to the switches it is connected to as well (its peer switches: a router LSP there
   * names one of its ports in options:router-port).
   */
  installFromRouter: boolean;
  /** Switch NB UUID → the routers peering it as last counted (sorted; only while the option is on). */
  readonly peersOf: Map<Uuid, readonly Uuid[]>;
  /** Router NB UUID → the switches it peers (the reverse of peersOf). */
  readonly peerSwitches: Map<Uuid, Set<Uuid>>;
  /** Router port name → the switches whose router LSPs name it, and the reverse (while the option is on). */
  readonly lrpSwitches: Map<string, Set<Uuid>>;
  readonly switchLrps: Map<Uuid, readonly string[]>;
}

export interface LbsChange {
  /** Load balancers whose facts changed (or that appeared or went): every flow of theirs. */
  readonly facts: Set<Uuid>;
  /** (datapath, load balancer) pairs that began or stopped applying, as "<dp> <lb>". */
  readonly pairs: Set<string>;
  /** Load balancers whose set of datapaths changed. */
  readonly membership: Set<Uuid>;
  /** Datapaths whose has_lb_vip flipped: the new value. */
  readonly hasVipFlipped: Map<Uuid, boolean>;
}

/** Whether a datapath has a VIP (ovn-northd's od->has_lb_vip). */
export function hasLbVip(data: LbsData, dp: Uuid): boolean {
  return (data.byDp.get(dp)?.withVips ?? 0) > 0;
}

/** The facts of the load balancers that apply to datapath `dp`, by UUID. */
export function lbFactsOfDatapath(data: LbsData, dp: Uuid): LbFacts[] {
  const out: LbFacts[] = [];
  for (const lb of lbsOfDatapath(data, dp)) {
    const f = data.lbs.get(lb);
    if (f !== undefined) out.push(f);
  }
  return out;
}

/** The load balancers that apply to switch `dp`, sorted. */
export function lbsOfDatapath(data: LbsData, dp: Uuid): Uuid[] {
  return [...(data.byDp.get(dp)?.counts.keys() ?? [])].sort();
}

// --- Parsing, as lib/lb.c and OVS's inet_parse_active do it ---------------------------------

/** An IPv4 address as inet_pton reads it: four decimal parts, no leading zeros. */
export function parseStrictIpv4(s: string): string | undefined {
  const parts = s.split('.');
  if (parts.length !== 4) return undefined;
  for (const p of parts) {
    if (!/^(0|[1-9]\d{0,2})$/.test(p) || Number(p) > 255) return undefined;
  }
  return parts.join('.');
}

interface Endpoint {
  readonly ip: string;
  readonly v6: boolean;
  readonly port: number;
}

function unbracket(s: string): string {
  if (!s.startsWith('[')) return s;
  return s.endsWith(']') ? s.slice(1, -1) : s.slice(1);
}

/**
 * "host[:port]" as OVS's inet_parse_active reads it: more than one colon outside brackets is an
 * IPv6 address without a port; a port is decimal 0..65535 (0 or empty: none).
 */
export function parseEndpoint(text: string): Endpoint | undefined {
  let colons = 0;
  let last = -1;
  let inBrackets = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '[') inBrackets = true;
    else if (c === ']') inBrackets = false;
    else if (c === ':' && !inBrackets) {
      colons++;
      last = i;
    }
  }
  let host: string;
  let portText = '';
  if (colons > 1) host = text;
  else if (last >= 0) {
    host = unbracket(text.slice(0, last));
    portText = unbracket(text.slice(last + 1));
  } else host = unbracket(text);
  let port = 0;
  if (portText !== '') {
    if (!/^[+-]?\d{1,10}$/.test(portText)) return undefined;
    port = Number(portText);
    if (port < 0 || port > 65535) return undefined;
  }
  if (host.includes(':')) {
    const groups = parseIpv6Groups(host);
    return groups === undefined ? undefined : { ip: formatIpv6(groups), v6: true, port };
  }
  const ip = parseStrictIpv4(host);
  return ip === undefined ? undefined : { ip, v6: false, port };
}

/** Explicit backends "IP[:port],..." of a VIP of family `v6`, with a port exactly when it has one. */
function explicitBackends(value: string, v6: boolean, hasPort: boolean): LbBackend[] | undefined {
  const backends: LbBackend[] = [];
  for (const token of value.split(',')) {
    if (token === '') continue;
    const b = parseEndpoint(token);
    if (b === undefined || b.v6 !== v6) return undefined;
    if (hasPort !== (b.port !== 0)) return undefined;
    backends.push({ ip: b.ip, port: b.port, portStr: b.port === 0 ? undefined : String(b.port) });
  }
  return backends;
}

/** One VIP and its backends, or undefined when ovn-northd would skip it. */
export function parseVip(key: string, value: string): LbVip | undefined {
  const vip = parseEndpoint(key);
  if (vip === undefined) return undefined;
  const backends = explicitBackends(value, vip.v6, vip.port !== 0);
  if (backends === undefined) return undefined;
  return { ip: vip.ip, v6: vip.v6, addrV6: vip.v6, port: vip.port === 0 ? undefined : String(vip.port), backendsText: value, backends, active: undefined };
}

/** The non-empty pieces of `s` between `sep`s, as strtok_r cuts them. */
function tokens(s: string, sep: string): string[] {
  return s.split(sep).filter((t) => t !== '');
}

/**
 * One VIP of a template load balancer (lib/lb.c, ovn_lb_vip_init_template): "A[:P]" where A and P
 * are text (typically "^VAR"), nothing parsed; backends "B[:P],..." the same way, or when one has
 * more than two parts, explicit backends of the family `v6` as a VIP's would be.
 */
export function parseTemplateVip(key: string, value: string, v6: boolean): LbVip | undefined {
  const atoms = tokens(key, ':');
  if (atoms.length === 0 || atoms.length > 2) return undefined;
  const [ip, port] = atoms as [string, string | undefined];
  let backends: LbBackend[] | undefined = [];
  for (const token of tokens(value, ',')) {
    const parts = tokens(token, ':');
    if (parts.length === 0 || parts.length > 2) {
      backends = undefined;
      break;
    }
    backends.push({ ip: parts[0] as string, port: 0, portStr: parts[1] });
  }
  backends ??= explicitBackends(value, v6, port !== undefined);
  if (backends === undefined) return undefined;
  return { ip, v6, addrV6: true, port, backendsText: value, backends, active: undefined };
}

/**
 * The SB vips of a template load balancer of family `v6` (ovn_northd_lb_get_vips): for IPv6 its
 * parsed VIPs again, a variable address in brackets, as ovn-controller reads them; otherwise (or
 * when none parsed) the NB column.
 */
function templateSbVips(lb: nb.Load_Balancer, vips: readonly [string, LbVip][], v6: boolean): ReadonlyMap<string, string> {
  if (!v6 || vips.length === 0) return lb.vips;
  const out: [string, string][] = [];
  for (const [key, v] of vips) {
    const ip = v.ip.startsWith('^') ? `[${v.ip}]` : v.ip;
    out.push([v.port === undefined ? ip : `${ip}:${v.port}`, lb.vips.get(key) as string]);
  }
  // A map value's keys in order, as every SB map here keeps them.
  return new Map(out.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/**
 * ovn_lb_get_neigh_mode: an unknown mode falls back to the default, "reachable"; a template
 * load balancer's VIPs are not addresses a port can be checked against, so its default is
 * "none" and "reachable" is not allowed.
 */
function neighModeOf(v: string | undefined, template: boolean): LbFacts['neighMode'] {
  return v === 'all' || v === 'none' ? v : template ? 'none' : 'reachable';
}

const NO_ARP: readonly SvcArp[] = Object.freeze([]);

/**
 * A load balancer's facts from its NB row and, when it has health checks, their health.
 * `previous` (its facts before this change) lends what did not change: a VIP whose key, value
 * and active backends are as they were is the same object, and so is a chunk of such VIPs, so
 * adding one VIP to thousands parses one.
 */
export function lbFacts(lb: nb.Load_Balancer, health?: LbHealth, previous?: LbFacts, controllerEvent = false): LbFacts {
  const protocol = lb.protocol;
  const p = protocol[0];
  const proto = p === 'udp' ? 'udp' : p === 'sctp' ? 'sctp' : 'tcp';
  const template = boolOption(lb.options, 'template', false);
  const family6 = (lb.options.get('address-family') ?? 'ipv4') !== 'ipv4';
  const mode = template ? (family6 ? 'template6' : 'template4') : 'plain';
  const memo = previous === undefined ? undefined : parseMemos.get(previous);
  const known = memo?.mode === mode ? memo.byKey : undefined;
  const byKey = new Map<string, ParsedVip>();
  const parsed: [string, LbVip][] = [];
  for (const [key, value] of [...lb.vips].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const active = health?.active.get(key);
    const before = known?.get(key);
    let entry: ParsedVip;
    if (before !== undefined && before.value === value && sameData(before.active, active)) entry = before;
    else {
      const v = template ? parseTemplateVip(key, value, family6) : parseVip(key, value);
      entry = { value, active, vip: v === undefined || active === undefined ? v : { ...v, active } };
    }
    byKey.set(key, entry);
    if (entry.vip !== undefined) parsed.push([key, entry.vip]);
  }
  const vips = parsed.map(([, v]) => v);
  const count = chunkCountFor(vips.length);
  const chunkVips: LbVip[][] = Array.from({ length: count }, () => []);
  for (const [key, v] of parsed) (chunkVips[count === 1 ? 0 : chunkOfKey(key, count)] as LbVip[]).push(v);
  const prevChunks = memo !== undefined && previous !== undefined && previous.chunks.length === count ? previous.chunks : undefined;
  const chunks = chunkVips.map((c, i) => {
    const old = prevChunks?.[i];
    return old !== undefined && old.length === c.length && old.every((v, j) => v === c[j]) ? old : Object.freeze(c);
  });
  let hashFields: string | undefined;
  if (lb.selection_fields.length > 0) {
    const named = p !== undefined;
    hashFields = lb.selection_fields.map((f) => (f === 'tp_src' && named ? `${p}_src` : f === 'tp_dst' && named ? `${p}_dst` : f)).join(',');
  }
  const facts: LbFacts = {
    uuid: lb._uuid, name: lb.name, protocol, proto, vips, chunks, hasVips: lb.vips.size > 0, options: lb.options,
    reject: boolOption(lb.options, 'reject', false), event: controllerEvent || boolOption(lb.options, 'event', false), hashFields, affinityTimeout: Math.min(optionUint(lb.options, 'affinity_timeout', 0), 65535),
    skipSnat: boolOption(lb.options, 'skip_snat', false), neighMode: neighModeOf(lb.options.get('neighbor_responder'), template),
    routable: !template && boolOption(lb.options, 'add_route', false), template, sbVips: template ? templateSbVips(lb, parsed, family6) : lb.vips,
    svcArp: health?.arp ?? NO_ARP, svcMac: health?.mac ?? '',
  };
  parseMemos.set(facts, { mode, byKey });
  return facts;
}

// --- Chunks and reuse ----------------------------------------------------------------------

/**
 * How VIPs are dealt into chunks: one chunk up to `vipsMin` VIPs; beyond, the least power of two
 * that gives at most `vipsPerChunk` VIPs a chunk on average, at most `chunksMax`. A count that
 * crosses a power of two deals every VIP again (every chunk's flows are built once more).
 * The flows are the same whatever the limits; tests lower them to deal a few VIPs into chunks.
 */
export const lbChunkLimits = { vipsMin: 64, vipsPerChunk: 16, chunksMax: 256 };

export function chunkCountFor(vips: number): number {
  return chunkCount(vips, { min: lbChunkLimits.vipsMin, per: lbChunkLimits.vipsPerChunk, max: lbChunkLimits.chunksMax });
}

/** What building a load balancer's facts parsed, by VIP key: reused by the next build. */
interface ParsedVip {
  readonly value: string;
  readonly active: readonly LbBackend[] | undefined;
  /** The VIP as the facts hold it (undefined: it did not parse). */
  readonly vip: LbVip | undefined;
}

interface ParseMemo {
  /** The parse mode the VIPs were read in: template or not, and the template's family. */
  readonly mode: string;
  readonly byKey: ReadonlyMap<string, ParsedVip>;
}

/** The memo of each facts object built here (a WeakMap: facts compare with sameData, which would read a field). */
const parseMemos = new WeakMap<LbFacts, ParseMemo>();

// --- Membership ------------------------------------------------------------------------------

/** What one run changed, gathered as it goes. */
class Run {
  constructor(readonly data: LbsData, readonly out: LbsChange, readonly svc: SvcMonitorsData) {}

  private vipsOf(lb: Uuid): boolean {
    return this.data.lbs.get(lb)?.hasVips === true;
  }

  /** Adds `delta` ways in which `lb` applies to datapath `dp`, by its own columns or not. */
  count(dp: Uuid, state: DatapathLbs, lb: Uuid, delta: number, own: boolean): void {
    const before = state.counts.get(lb) ?? 0;
    const after = before + delta;
    const inducedBefore = state.inducedCounts.get(lb) ?? 0;
    const inducedAfter = own ? inducedBefore : inducedBefore + delta;
    if (after < 0 || inducedAfter < 0) throw new Error(`load balancer ${lb} counted below zero on ${dp}`);
    if (after === 0) state.counts.delete(lb);
    else state.counts.set(lb, after);
    if (!own) {
      if (inducedAfter === 0) state.inducedCounts.delete(lb);
      else state.inducedCounts.set(lb, inducedAfter);
    }
    // has_lb_vip follows the datapath's own ways only.
    const ownBefore = before - inducedBefore;
    const ownAfter = after - inducedAfter;
    if ((ownBefore === 0) !== (ownAfter === 0) && this.vipsOf(lb)) state.withVips += ownAfter > 0 ? 1 : -1;
    if ((before === 0) === (after === 0)) return;
    let dps = this.data.dpsOf.get(lb);
    if (after > 0) {
      if (dps === undefined) this.data.dpsOf.set(lb, (dps = new Set()));
      dps.add(dp);
    } else {
      dps?.delete(dp);
      if (dps?.size === 0) this.data.dpsOf.delete(lb);
    }
    this.out.pairs.add(`${dp} ${lb}`);
    this.out.membership.add(lb);
  }

  /** Notes has_lb_vip of `dp` before a change (call `settle` after). */
  private readonly before = new Map<Uuid, boolean>();
  watch(dp: Uuid): void {
    if (!this.before.has(dp)) this.before.set(dp, hasLbVip(this.data, dp));
  }

  settle(): void {
    for (const [dp, was] of this.before) {
      const now = hasLbVip(this.data, dp);
      const state = this.data.byDp.get(dp);
      if (state !== undefined && state.counts.size === 0 && state.direct.length === 0 && state.groups.length === 0 && state.inducedDirect.length === 0 && state.inducedGroups.length === 0) {
        this.data.byDp.delete(dp);
      }
      if (was !== now) this.out.hasVipFlipped.set(dp, now);
      else this.out.hasVipFlipped.delete(dp);
    }
    this.before.clear();
  }

  private stateOf(dp: Uuid, nbUuid: Uuid, kind: 'switch' | 'router'): DatapathLbs {
    let s = this.data.byDp.get(dp);
    if (s === undefined) {
      s = { kind, nbUuid, counts: new Map(), inducedCounts: new Map(), direct: NO_UUIDS, groups: NO_UUIDS, inducedDirect: NO_UUIDS, inducedGroups: NO_UUIDS, withVips: 0 };
      this.data.byDp.set(dp, s);
    }
    return s;
  }

  /** A load balancer's row changed: its facts, and has_lb_vip of its datapaths if its VIPs came or went. */
  lb(db: Database, uuid: Uuid): void {
    const row = nbGet<nb.Load_Balancer>(db, 'Load_Balancer', uuid);
    const old = this.data.lbs.get(uuid);
    const now = row === undefined ? undefined : lbFacts(row, this.svc.lbs.get(uuid)?.health, old, this.data.controllerEvent);
    if (old !== undefined && now !== undefined && sameData(old, now)) return;
    this.out.facts.add(uuid);
    this.out.membership.add(uuid);
    const flip = (old?.hasVips ?? false) !== (now?.hasVips ?? false);
    if (flip) for (const dp of this.data.dpsOf.get(uuid) ?? []) this.watch(dp);
    if (now === undefined) this.data.lbs.delete(uuid);
    else this.data.lbs.set(uuid, now);
    if (!flip) return;
    for (const dp of this.data.dpsOf.get(uuid) ?? []) {
      const state = this.data.byDp.get(dp);
      if (state !== undefined && (state.counts.get(uuid) ?? 0) > (state.inducedCounts.get(uuid) ?? 0)) state.withVips += now?.hasVips === true ? 1 : -1;
    }
  }

  /** A group's load_balancer column changed: every datapath using it gains or loses those. */
  group(db: Database, uuid: Uuid): void {
    const row = nbGet<nb.Load_Balancer_Group>(db, 'Load_Balancer_Group', uuid);
    const old = this.data.groupLbs.get(uuid) ?? NO_UUIDS;
    const now = row?.load_balancer ?? NO_UUIDS;
    const { removed, added } = sortedDifference(old, now);
    if (row === undefined) this.data.groupLbs.delete(uuid);
    else this.data.groupLbs.set(uuid, now);
    if (removed.length === 0 && added.length === 0) return;
    for (const [dp, use] of this.data.groupDps.get(uuid) ?? []) {
      const state = this.data.byDp.get(dp);
      if (state === undefined) continue;
      this.watch(dp);
      for (const own of [true, false]) {
        if (!(own ? use.own : use.induced)) continue;
        for (const lb of removed) this.count(dp, state, lb, -1, own);
        for (const lb of added) this.count(dp, state, lb, 1, own);
      }
    }
  }

  /**
   * A switch or router row: its direct load balancers and groups, diffed against the last read;
   * on a switch, while install_ls_lb_from_router is on, its peer routers' too.
   */
  datapath(db: Database, table: 'Logical_Switch' | 'Logical_Router', nbUuid: Uuid): void {
    const row = nbGet<nb.Logical_Switch | nb.Logical_Router>(db, table, nbUuid);
    const dp = datapathSbUuid(nbUuid);
    const old = this.data.byDp.get(dp);
    const direct = row?.load_balancer ?? NO_UUIDS;
    const groups = row?.load_balancer_group ?? NO_UUIDS;
    // A switch's ports are read only while the option is on (or its peers are still counted).
    const induced = table === 'Logical_Switch' && (this.data.installFromRouter || this.data.switchLrps.has(nbUuid))
      ? this.induced(db, nbUuid, row as nb.Logical_Switch | undefined) : NO_INDUCED;
    if (old === undefined && direct.length === 0 && groups.length === 0 && induced.direct.length === 0 && induced.groups.length === 0) return;
    const state = old ?? this.stateOf(dp, nbUuid, table === 'Logical_Switch' ? 'switch' : 'router');
    this.columns(dp, state, state.direct, direct, state.groups, groups, true);
    this.columns(dp, state, state.inducedDirect, induced.direct, state.inducedGroups, induced.groups, false);
    state.direct = direct;
    state.groups = groups;
    state.inducedDirect = induced.direct;
    state.inducedGroups = induced.groups;
  }

  /** Counts the change of one pair of columns (own or induced) of datapath `dp`. */
  private columns(dp: Uuid, state: DatapathLbs, oldDirect: readonly Uuid[], direct: readonly Uuid[], oldGroups: readonly Uuid[], groups: readonly Uuid[], own: boolean): void {
    const d = sortedDifference(oldDirect, direct);
    const g = sortedDifference(oldGroups, groups);
    if (d.removed.length + d.added.length + g.removed.length + g.added.length === 0) return;
    this.watch(dp);
    for (const lb of d.removed) this.count(dp, state, lb, -1, own);
    for (const group of g.removed) {
      // What the group was counted with: its content as last read (this run's if it changed).
      for (const lb of this.data.groupLbs.get(group) ?? []) this.count(dp, state, lb, -1, own);
      const users = this.data.groupDps.get(group);
      const use = users?.get(dp);
      if (use !== undefined) {
        if (own) use.own = false;
        else use.induced = false;
        if (!use.own && !use.induced) users?.delete(dp);
      }
      if (users?.size === 0) this.data.groupDps.delete(group);
    }
    for (const lb of d.added) this.count(dp, state, lb, 1, own);
    for (const group of g.added) {
      for (const lb of this.data.groupLbs.get(group) ?? []) this.count(dp, state, lb, 1, own);
      let users = this.data.groupDps.get(group);
      if (users === undefined) this.data.groupDps.set(group, (users = new Map()));
      let use = users.get(dp);
      if (use === undefined) users.set(dp, (use = { own: false, induced: false }));
      if (own) use.own = true;
      else use.induced = true;
    }
  }

  /**
   * A switch's share of its peer routers' columns: the union of the load_balancer and
   * load_balancer_group columns of the enabled routers one of whose ports a router LSP of the
   * switch names (ovn-northd's od->ls_peers), recorded with the reverse indexes; none while the
   * option is off or for a switch that is gone.
   */
  private induced(db: Database, nbUuid: Uuid, ls: nb.Logical_Switch | undefined): { readonly direct: readonly Uuid[]; readonly groups: readonly Uuid[] } {
    const data = this.data;
    const names: string[] = [];
    const routers = new Set<Uuid>();
    for (const u of data.installFromRouter ? ls?.ports ?? [] : []) {
      const lsp = nbGet<nb.Logical_Switch_Port>(db, 'Logical_Switch_Port', u);
      const lrpName = lsp?.type === 'router' ? lsp.options.get('router-port') : undefined;
      if (lrpName === undefined) continue;
      names.push(lrpName);
      const lrp = findLrp(db, lrpName);
      const router = lrp === undefined ? undefined : ownerOf(db, 'Logical_Router', lrp._uuid);
      const lr = router === undefined ? undefined : nbGet<nb.Logical_Router>(db, 'Logical_Router', router);
      if (router !== undefined && lr !== undefined && lr.enabled[0] !== false) routers.add(router);
    }
    for (const name of data.switchLrps.get(nbUuid) ?? []) removeFromIndex(data.lrpSwitches, name, nbUuid);
    if (names.length > 0) data.switchLrps.set(nbUuid, names);
    else data.switchLrps.delete(nbUuid);
    for (const name of names) addToIndex(data.lrpSwitches, name, nbUuid);
    const peers = [...routers].sort();
    for (const r of data.peersOf.get(nbUuid) ?? []) removeFromIndex(data.peerSwitches, r, nbUuid);
    if (peers.length > 0) data.peersOf.set(nbUuid, peers);
    else data.peersOf.delete(nbUuid);
    for (const r of peers) addToIndex(data.peerSwitches, r, nbUuid);
    if (peers.length === 0) return NO_INDUCED;
    const direct = new Set<Uuid>();
    const groups = new Set<Uuid>();
    for (const r of peers) {
      const lr = nbGet<nb.Logical_Router>(db, 'Logical_Router', r) as nb.Logical_Router;
      for (const u of lr.load_balancer) direct.add(u);
      for (const u of lr.load_balancer_group) groups.add(u);
    }
    return { direct: [...direct].sort(), groups: [...groups].sort() };
  }
}

const NO_UUIDS: readonly Uuid[] = Object.freeze([]);
const NO_INDUCED = Object.freeze({ direct: NO_UUIDS, groups: NO_UUIDS });

function addToIndex<K>(index: Map<K, Set<Uuid>>, key: K, value: Uuid): void {
  let s = index.get(key);
  if (s === undefined) index.set(key, (s = new Set()));
  s.add(value);
}

function removeFromIndex<K>(index: Map<K, Set<Uuid>>, key: K, value: Uuid): void {
  const s = index.get(key);
  s?.delete(value);
  if (s?.size === 0) index.delete(key);
}

function isEmpty(c: LbsChange): boolean {
  return c.facts.size === 0 && c.pairs.size === 0 && c.membership.size === 0 && c.hasVipFlipped.size === 0;
}

/**
 * Applies a set of NB changes in the order the counts need: load balancers' facts first, then
 * groups' contents, then the datapaths' columns (which count groups by their new contents).
 */
function applyNb(
  db: Database, svc: SvcMonitorsData, data: LbsData, lbs: Iterable<Uuid>, groups: Iterable<Uuid>, switches: Iterable<Uuid>, routers: Iterable<Uuid>, out: LbsChange,
): 'handled' | 'unchanged' {
  const run = new Run(data, out, svc);
  for (const uuid of [...lbs].sort()) run.lb(db, uuid);
  for (const uuid of [...groups].sort()) run.group(db, uuid);
  for (const uuid of [...switches].sort()) run.datapath(db, 'Logical_Switch', uuid);
  for (const uuid of [...routers].sort()) run.datapath(db, 'Logical_Router', uuid);
  run.settle();
  return isEmpty(out) ? 'unchanged' : 'handled';
}

/** NB_Global options:install_ls_lb_from_router. */
function installFromRouterOn(db: Database): boolean {
  const g = nbGlobalOf(db);
  return g !== undefined && boolOption(g.options, 'install_ls_lb_from_router', false);
}

/**
 * The switches whose share of their peer routers' columns may have changed (while the option is
 * on): those a changed router peers, those whose router LSPs name a port that came, went or was
 * renamed (or a port of a router that changed), and the owner of a switch port whose type or
 * options changed.
 */
/** A router's columns that its peer switches' share of load balancers reads. */
const ROUTER_SHARE_COLUMNS: ReadonlySet<string> = new Set(['load_balancer', 'load_balancer_group', 'ports', 'enabled']);

function peerSwitchesTouched(db: Database, data: LbsData, delta: DbDelta, switches: Set<Uuid>): void {
  const byName = (name: unknown): void => {
    if (typeof name === 'string') for (const ls of data.lrpSwitches.get(name) ?? []) switches.add(ls);
  };
  for (const c of delta.changes) {
    const rows = [c.kind === 'insert' ? undefined : c.old, c.kind === 'delete' ? undefined : c.new];
    if (c.table === 'Logical_Router') {
      // Only the columns a peer switch's share reads (its NAT rules, say, change far more often).
      if (c.kind === 'modify' && !c.columns.some((col) => ROUTER_SHARE_COLUMNS.has(col))) continue;
      for (const ls of data.peerSwitches.get(c.uuid) ?? []) switches.add(ls);
      for (const row of rows) for (const u of (row?.ports as readonly Uuid[] | undefined) ?? []) byName(nbGet<nb.Logical_Router_Port>(db, 'Logical_Router_Port', u)?.name);
    } else if (c.table === 'Logical_Router_Port') {
      for (const row of rows) byName(row?.name);
    } else if (c.table === 'Logical_Switch_Port' && c.kind === 'modify' && (c.columns.includes('type') || c.columns.includes('options'))) {
      // Only what makes a router LSP (its up, addresses... are written far more often).
      const owner = ownerOf(db, 'Logical_Switch', c.uuid);
      if (owner !== undefined) switches.add(owner);
    }
  }
}

/** NB_Global options:controller_event (controller_event_en). */
function controllerEventOn(db: Database): boolean {
  const g = nbGlobalOf(db);
  return g !== undefined && boolOption(g.options, 'controller_event', false);
}

export function lbsNode(): EngineNode<LbsData, LbsChange> {
  return {
    name: 'lbs',
    inputs: ['nb', 'svc_monitors'],
    init: () => ({
      lbs: new Map(), byDp: new Map(), dpsOf: new Map(), groupLbs: new Map(), groupDps: new Map(), controllerEvent: false, installFromRouter: false,
      peersOf: new Map(), peerSwitches: new Map(), lrpSwitches: new Map(), switchLrps: new Map(),
    }),
    newChange: () => ({ facts: new Set(), pairs: new Set(), membership: new Set(), hasVipFlipped: new Map() }),
    isEmpty,
    recompute(data: LbsData, inputs: NodeInputs, out: LbsChange): void {
      const db = inputs.data<Database>('nb');
      data.controllerEvent = controllerEventOn(db);
      data.installFromRouter = installFromRouterOn(db);
      // Everything known and everything in the database, through the same steps as a change.
      const lbs = new Set([...data.lbs.keys(), ...nbRows<nb.Load_Balancer>(db, 'Load_Balancer').keys()]);
      const groups = new Set([...data.groupLbs.keys(), ...nbRows<nb.Load_Balancer_Group>(db, 'Load_Balancer_Group').keys()]);
      const switches = new Set(nbRows<nb.Logical_Switch>(db, 'Logical_Switch').keys());
      const routers = new Set(nbRows<nb.Logical_Router>(db, 'Logical_Router').keys());
      // Datapaths known but gone from the database are read as rows without load balancers.
      for (const state of data.byDp.values()) (state.kind === 'switch' ? switches : routers).add(state.nbUuid);
      applyNb(db, inputs.data<SvcMonitorsData>('svc_monitors'), data, lbs, groups, switches, routers, out);
    },
    handlers: {
      nb(data: LbsData, change: unknown, inputs: NodeInputs, out: LbsChange) {
        const lbs = new Set<Uuid>();
        const groups = new Set<Uuid>();
        const switches = new Set<Uuid>();
        const routers = new Set<Uuid>();
        const db = inputs.data<Database>('nb');
        for (const c of (change as DbDelta).changes) {
          if (c.table === 'NB_Global' && controllerEventOn(db) !== data.controllerEvent) {
            // Every load balancer's facts read the flag.
            data.controllerEvent = !data.controllerEvent;
            for (const uuid of data.lbs.keys()) lbs.add(uuid);
          }
          if (c.table === 'NB_Global' && installFromRouterOn(db) !== data.installFromRouter) {
            // Every switch's share of its routers' load balancers comes or goes.
            data.installFromRouter = !data.installFromRouter;
            for (const ls of nbRows<nb.Logical_Switch>(db, 'Logical_Switch').keys()) switches.add(ls);
          }
          if (c.table === 'Load_Balancer') lbs.add(c.uuid);
          else if (c.table === 'Load_Balancer_Group') groups.add(c.uuid);
          else if (c.table === 'Logical_Switch') switches.add(c.uuid);
          else if (c.table === 'Logical_Router') routers.add(c.uuid);
        }
        if (data.installFromRouter || data.lrpSwitches.size > 0) peerSwitchesTouched(db, data, change as DbDelta, switches);
        if (lbs.size + groups.size + switches.size + routers.size === 0) return 'unchanged';
        return applyNb(db, inputs.data<SvcMonitorsData>('svc_monitors'), data, lbs, groups, switches, routers, out);
      },
      svc_monitors(data: LbsData, change: unknown, inputs: NodeInputs, out: LbsChange) {
        // Load balancers whose health changed: their facts, read again.
        const lbs = (change as SvcMonitorsChange).lbs;
        if (lbs.size === 0) return 'unchanged';
        return applyNb(inputs.data<Database>('nb'), inputs.data<SvcMonitorsData>('svc_monitors'), data, lbs, [], [], [], out);
      },
    },
  };
}
