// IP multicast settings as ovn-northd 23.03 reads them from the NB and writes them to the SB:
// a switch's IGMP/MLD snooping (Logical_Switch other_config:mcast_*), copied into one SB
// IP_Multicast row per switch, which ovn-controller's snooping and querier read; a router's
// multicast relay (Logical_Router options:mcast_relay). The flows these settings give are in
// lflows/multicast.ts, the groups in multicast.ts.
import type * as sb from '../ovsdb/rows/sb.js';
import type { Uuid } from '../ovsdb/index.js';
import type { TextSink } from './hash.js';
import { hashUuid, hashUuidOfWritten } from './hash.js';
import { boolOption } from './nb.js';
import type { SbChangeSet, SbTable } from './sb-changes.js';

/** OVN_MCAST_* of lib/ip-mcast-index.h. */
export const MCAST_DEFAULT_MAX_ENTRIES = 2048;
export const MCAST_MIN_IDLE_TIMEOUT_S = 15;
export const MCAST_MAX_IDLE_TIMEOUT_S = 3600;
export const MCAST_DEFAULT_IDLE_TIMEOUT_S = 300;
export const MCAST_MIN_QUERY_INTERVAL_S = 1;
export const MCAST_MAX_QUERY_INTERVAL_S = MCAST_MAX_IDLE_TIMEOUT_S;
export const MCAST_DEFAULT_QUERY_MAX_RESPONSE_S = 1;

/** A switch's snooping settings (mcast_switch_info), as the IP_Multicast row carries them. */
export interface SwitchMcast {
  readonly kind: 'switch';
  /** other_config:mcast_snoop. */
  readonly enabled: boolean;
  readonly querier: boolean;
  /** other_config:mcast_flood_unregistered: unregistered IP multicast takes the L2 flood. */
  readonly floodUnregistered: boolean;
  readonly tableSize: number;
  readonly idleTimeout: number;
  readonly queryInterval: number;
  readonly queryMaxResp: number;
  /** Unset: undefined (the row's column is left empty). */
  readonly ethSrc: string | undefined;
  readonly ip4Src: string | undefined;
  readonly ip6Src: string | undefined;
  /** other_config:interconn-ts is set (an ovn-ic transit switch): remote ports' IGMP is snooped. */
  readonly interconn: boolean;
}

/** A router's relay setting (mcast_router_info.relay). */
export interface RouterMcast {
  readonly kind: 'router';
  /** options:mcast_relay. */
  readonly relay: boolean;
}

export type McastConfig = SwitchMcast | RouterMcast;

const TWO_64 = 1n << 64n;

/**
 * smap_get_ullong: OVS's str_to_ullong (strtoull, base 10): optional leading white space and
 * sign (a minus negates modulo 2^64), decimal digits to the end, at most 2^64-1; anything else
 * gives `def`. The value is what an int64 SB column receives (the same 64 bits, signed).
 */
export function optionUllong(options: ReadonlyMap<string, string>, key: string, def: number): bigint {
  const text = options.get(key);
  if (text === undefined) return BigInt(def);
  const m = /^[ \t\n\v\f\r]*([+-]?)([0-9]+)$/.exec(text);
  if (m === null) return BigInt(def);
  const magnitude = BigInt(m[2] as string);
  if (magnitude >= TWO_64) return BigInt(def);
  return m[1] === '-' ? (TWO_64 - magnitude) % TWO_64 : magnitude;
}

/** The unsigned 64-bit `v` clamped to [lo, hi], as an unsigned comparison clamps it. */
function clamp(v: bigint, lo: number, hi: number): bigint {
  return v < BigInt(lo) ? BigInt(lo) : v > BigInt(hi) ? BigInt(hi) : v;
}

/** An unsigned 64-bit value as the signed integer the SB column holds. */
function asColumn(v: bigint): number {
  return Number(BigInt.asIntN(64, v));
}

/** The other_config keys switchMcastOf reads. */
const SWITCH_MCAST_KEYS: readonly string[] = [
  'mcast_idle_timeout', 'mcast_query_interval', 'mcast_snoop', 'mcast_querier', 'mcast_flood_unregistered', 'mcast_table_size', 'mcast_query_max_response',
  'mcast_eth_src', 'mcast_ip4_src', 'mcast_ip6_src', 'interconn-ts',
];

/** init_mcast_info_for_switch_datapath. */
export function switchMcastOf(oc: ReadonlyMap<string, string>): SwitchMcast {
  // A switch that sets none of the keys (most) shares one frozen value, as its IP_Multicast
  // row shares its column values (putIpMulticast).
  return oc.size === 0 || !SWITCH_MCAST_KEYS.some((k) => oc.has(k)) ? DEFAULT_SWITCH_MCAST : readSwitchMcast(oc);
}

function readSwitchMcast(oc: ReadonlyMap<string, string>): SwitchMcast {
  const idle = clamp(optionUllong(oc, 'mcast_idle_timeout', MCAST_DEFAULT_IDLE_TIMEOUT_S), MCAST_MIN_IDLE_TIMEOUT_S, MCAST_MAX_IDLE_TIMEOUT_S);
  const query = clamp(optionUllong(oc, 'mcast_query_interval', Number(idle / 2n)), MCAST_MIN_QUERY_INTERVAL_S, MCAST_MAX_QUERY_INTERVAL_S);
  return {
    kind: 'switch',
    enabled: boolOption(oc, 'mcast_snoop', false),
    querier: boolOption(oc, 'mcast_querier', true),
    floodUnregistered: boolOption(oc, 'mcast_flood_unregistered', false),
    tableSize: asColumn(optionUllong(oc, 'mcast_table_size', MCAST_DEFAULT_MAX_ENTRIES)),
    idleTimeout: asColumn(idle),
    queryInterval: asColumn(query),
    queryMaxResp: asColumn(optionUllong(oc, 'mcast_query_max_response', MCAST_DEFAULT_QUERY_MAX_RESPONSE_S)),
    ethSrc: oc.get('mcast_eth_src'),
    ip4Src: oc.get('mcast_ip4_src'),
    ip6Src: oc.get('mcast_ip6_src'),
    interconn: oc.has('interconn-ts'),
  };
}

/** A switch's settings when it sets none of SWITCH_MCAST_KEYS. */
const DEFAULT_SWITCH_MCAST: SwitchMcast = Object.freeze(readSwitchMcast(new Map()));

const NO_RELAY: RouterMcast = Object.freeze({ kind: 'router', relay: false });
const RELAY: RouterMcast = Object.freeze({ kind: 'router', relay: true });

/** init_mcast_info_for_router_datapath. */
export function routerMcastOf(options: ReadonlyMap<string, string>): RouterMcast {
  return boolOption(options, 'mcast_relay', false) ? RELAY : NO_RELAY;
}

/** Whether a datapath is a switch snooping IGMP/MLD. */
export function snooping(c: McastConfig): c is SwitchMcast & { enabled: true } {
  return c.kind === 'switch' && c.enabled;
}

/** Whether a datapath is a router relaying IP multicast. */
export function relaying(c: McastConfig): boolean {
  return c.kind === 'router' && c.relay;
}

export function ipMulticastUuid(dpSbUuid: Uuid): Uuid {
  return hashUuid(['IP_Multicast', dpSbUuid]);
}

type McastColumns = Pick<sb.IP_Multicast, 'enabled' | 'querier' | 'table_size' | 'idle_timeout' | 'query_interval' | 'query_max_resp'>;

/** The optional columns of a switch's IP_Multicast row, as one-element arrays. */
function columnsOf(c: SwitchMcast): McastColumns {
  return {
    enabled: Object.freeze([c.enabled]), querier: Object.freeze([c.querier]), table_size: Object.freeze([c.tableSize]), idle_timeout: Object.freeze([c.idleTimeout]),
    query_interval: Object.freeze([c.queryInterval]), query_max_resp: Object.freeze([c.queryMaxResp]),
  };
}

/** The column values every switch with the default settings shares (six arrays a row fewer). */
const DEFAULT_COLUMNS = columnsOf(DEFAULT_SWITCH_MCAST);

/**
 * build_ip_mcast: every switch has its IP_Multicast row (snooping or not). Unlike ovn-northd,
 * which only sets eth_src, ip4_src and ip6_src when the option is there (so a removed option
 * leaves the old address in the row), an unset option empties the column.
 */
export function putIpMulticast(table: SbTable, dp: { readonly sbUuid: Uuid; readonly mcast: McastConfig }, out: SbChangeSet): void {
  const c = dp.mcast;
  if (c.kind !== 'switch') return;
  const v = c === DEFAULT_SWITCH_MCAST ? DEFAULT_COLUMNS : columnsOf(c);
  const row: sb.IP_Multicast = {
    _uuid: ipMulticastUuid(dp.sbUuid), _version: '', datapath: dp.sbUuid, enabled: v.enabled, querier: v.querier,
    eth_src: c.ethSrc ?? '', ip4_src: c.ip4Src ?? '', ip6_src: c.ip6Src ?? '',
    table_size: v.table_size, idle_timeout: v.idle_timeout, query_interval: v.query_interval, query_max_resp: v.query_max_resp, seq_no: 0,
  };
  (row as { _version: Uuid })._version = hashUuidOfWritten('version', row, writeIpMulticastText);
  table.put(row, out);
}

/**
 * The canonical text of an IP_Multicast row's columns (sb-changes.ts `versioned`), spelled out
 * for the one shape putIpMulticast builds and put piece by piece into the hash, as
 * datapaths.ts does for Datapath_Binding. Through the generic walk (`versioned`), the rows of
 * an entry of 1,000 new switches made 3.3 of its 15.6 MB of garbage, and 13 % of its apply time
 * went into them; 6 % now. tests/northd/projections.test.ts checks the rows against
 * contentVersion.
 */
function writeIpMulticastText(w: TextSink, row: sb.IP_Multicast): void {
  w.put('{"datapath":');
  w.putString(row.datapath);
  w.put(row.enabled[0] === true ? ',"enabled":[true],"querier":[' : ',"enabled":[false],"querier":[');
  w.put(row.querier[0] === true ? 'true],"eth_src":' : 'false],"eth_src":');
  w.putString(row.eth_src);
  w.put(',"ip4_src":');
  w.putString(row.ip4_src);
  w.put(',"ip6_src":');
  w.putString(row.ip6_src);
  w.put(',"table_size":[');
  w.put(String(row.table_size[0]));
  w.put('],"idle_timeout":[');
  w.put(String(row.idle_timeout[0]));
  w.put('],"query_interval":[');
  w.put(String(row.query_interval[0]));
  w.put('],"query_max_resp":[');
  w.put(String(row.query_max_resp[0]));
  w.put('],"seq_no":0}');
}
