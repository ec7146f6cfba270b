// SB_Global: the one row, mirroring NB_Global.nb_cfg (0 when there is no NB_Global row) and
// NB_Global.options, as ovn-northd copies them, with what ovn-northd adds (and writes back into
// NB_Global.options too: `nbGlobalOptionsWrite`, which the central applies from apply version 7): mac_prefix (the
// prefix of dynamic MACs, ipam.ts), max_tunid (the highest datapath key it allocates: 4095 in
// VXLAN mode) and
// northd_internal_version (the OVN release whose logical flows these are, which ovn-controller
// compares with its own when told to: external_ids:ovn-match-northd-version). ovn-northd picks svc_monitor_mac at random when
// NB_Global has none (or one that is no Ethernet address); here it is derived from NB_Global's
// UUID (itself drawn by the leader and replicated), so every replica agrees and it stays put
// while NB_Global lives. ovn-controller needs it: a flow matching $svc_monitor_mac does not
// compile without it, and it is the source MAC of the load balancers' health checks.
import type { Database, DbDelta } from '../ovsdb/index.js';
import type * as nb from '../ovsdb/rows/nb.js';
import type * as sb from '../ovsdb/rows/sb.js';
import type { EngineNode, NodeInputs } from './engine.js';
import { hashUuid } from './hash.js';
import { nbRows } from './nb.js';
import { macPrefixOf } from './ipam.js';
import { ethAddrFromString } from './netaddr.js';
import { SbChangeSet, SbTable, versioned } from './sb-changes.js';
import type { SbEncapsData } from './tunnel-keys.js';
import { DATAPATH_KEY_MAX, DATAPATH_KEY_MAX_VXLAN } from './tunnel-keys.js';

export const SB_GLOBAL_UUID = hashUuid(['SB_Global']);

export interface SbGlobalData {
  readonly table: SbTable;
}

/** The NB_Global row, if any. */
export function nbGlobalOf(db: Database): nb.NB_Global | undefined {
  // NB_Global has at most one row (maxRows 1); iteration is over at most one.
  for (const g of nbRows<nb.NB_Global>(db, 'NB_Global').values()) return g;
  return undefined;
}

/** A unicast, locally administered MAC from NB_Global's UUID. */
export function derivedSvcMonitorMac(nbGlobalUuid: string): string {
  const hex = hashUuid(['svc_monitor_mac', nbGlobalUuid]).replace(/-/g, '');
  const bytes = [0, 1, 2, 3, 4, 5].map((i) => Number.parseInt(hex.slice(2 * i, 2 * i + 2), 16));
  bytes[0] = ((bytes[0] as number) & 0xfe) | 0x02;
  return bytes.map((b) => b.toString(16).padStart(2, '0')).join(':');
}

/** NB_Global's options:svc_monitor_mac as ovn-northd prints it (ETH_ADDR_FMT), when it parses. */
function nbSvcMonitorMac(g: nb.NB_Global): string | undefined {
  const text = g.options.get('svc_monitor_mac');
  const bytes = text === undefined ? undefined : ethAddrFromString(text);
  return bytes?.map((b) => b.toString(16).padStart(2, '0')).join(':');
}

/**
 * ovn-northd 23.03.1's internal version: its release, the SB schema version, its number of
 * logical actions and its internal minor version (ovn_get_internal_version).
 */
export const NORTHD_INTERNAL_VERSION = '23.03.1-20.27.0-70.6';

/**
 * optionsOf's last answers, by the NB_Global options map they were made from (a row's value,
 * never changed in place, and kept by every row an nb_cfg bump makes): every bump rewrites
 * SB_Global, and the options, with two UUID hashes, were most of that.
 */
const optionsMade = new WeakMap<ReadonlyMap<string, string>, { readonly uuid: string; readonly vxlan: boolean; readonly options: Map<string, string> }>();

function optionsOf(db: Database, g: nb.NB_Global | undefined, vxlan: boolean): Map<string, string> {
  if (g === undefined) return new Map();
  const made = optionsMade.get(g.options);
  if (made !== undefined && made.uuid === g._uuid && made.vxlan === vxlan) return made.options;
  const options = optionsFrom(db, g, vxlan);
  optionsMade.set(g.options, { uuid: g._uuid, vxlan, options });
  return options;
}

function optionsFrom(db: Database, g: nb.NB_Global, vxlan: boolean): Map<string, string> {
  const options = new Map<string, string>(g.options);
  // A value that parses is copied as written; ovn-northd replaces one that does not.
  if (nbSvcMonitorMac(g) === undefined) options.set('svc_monitor_mac', derivedSvcMonitorMac(g._uuid));
  const prefix = macPrefixOf(db);
  options.set('mac_prefix', [16, 8, 0].map((shift) => ((prefix >>> shift) & 0xff).toString(16).padStart(2, '0')).join(':'));
  options.set('max_tunid', String(vxlan ? DATAPATH_KEY_MAX_VXLAN : DATAPATH_KEY_MAX));
  options.set('northd_internal_version', NORTHD_INTERNAL_VERSION);
  return new Map([...options].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)));
}

/**
 * NB_Global.options as ovn-northd writes them back (ovnnb_db_run): its own, with mac_prefix,
 * max_tunid and northd_internal_version set and svc_monitor_mac added when it has none that
 * parses; the SB_Global options are then the same map. Undefined when NB_Global has them so
 * already, or when there is no NB_Global: writing them is a fixed point.
 */
export function nbGlobalOptionsWrite(db: Database, vxlan: boolean): Map<string, string> | undefined {
  const g = nbGlobalOf(db);
  if (g === undefined) return undefined;
  const options = optionsOf(db, g, vxlan);
  if (options.size === g.options.size && [...options].every(([k, v]) => g.options.get(k) === v)) return undefined;
  return options;
}

/**
 * The service-monitor MAC the flows, the svc_monitor_mac address set and the Service_Monitor
 * rows use (ovn-northd's svc_monitor_mac): NB_Global's, normalized, or the derived one;
 * undefined without an NB_Global row.
 */
export function svcMonitorMacOf(db: Database): string | undefined {
  const g = nbGlobalOf(db);
  if (g === undefined) return undefined;
  return nbSvcMonitorMac(g) ?? derivedSvcMonitorMac(g._uuid);
}

function write(data: SbGlobalData, db: Database, vxlan: boolean, out: SbChangeSet): void {
  const g = nbGlobalOf(db);
  const row = versioned<sb.SB_Global>({ _uuid: SB_GLOBAL_UUID, _version: '', nb_cfg: g?.nb_cfg ?? 0, external_ids: new Map<string, string>(), connections: [], ssl: [], options: optionsOf(db, g, vxlan), ipsec: g?.ipsec ?? false });
  data.table.put(row, out);
}

export function sbGlobalNode(): EngineNode<SbGlobalData, SbChangeSet> {
  return {
    name: 'sb_global',
    // VXLAN mode (max_tunid) has no handler: its change recomputes the row.
    inputs: ['nb', 'sb_encaps'],
    init: () => ({ table: new SbTable('SB_Global') }),
    newChange: () => new SbChangeSet(),
    isEmpty: (c) => c.size === 0,
    recompute(data: SbGlobalData, inputs: NodeInputs, out: SbChangeSet): void {
      write(data, inputs.data<Database>('nb'), inputs.data<SbEncapsData>('sb_encaps').vxlan, out);
    },
    handlers: {
      nb(data: SbGlobalData, change: unknown, inputs: NodeInputs, out: SbChangeSet) {
        if (!(change as DbDelta).changes.some((c) => c.table === 'NB_Global')) return 'unchanged';
        write(data, inputs.data<Database>('nb'), inputs.data<SbEncapsData>('sb_encaps').vxlan, out);
        return 'handled';
      },
    },
  };
}
