// SB rows for the flow-side tests, with every column the SB schema gives them (sets as arrays,
// maps as Maps), and a small topology used by several test files:
//
//   sw0 (switch, key 1): vif1 (key 1) and vif2 (key 2) bound here, vif3 (key 3) on hv2,
//                        rp-sw0 (key 4, patch to lrp-sw0), _MC_flood (32768) of all four
//   lr0 (router, key 2): lrp-sw0 (key 1) and lrp-pub (key 2), patches; snat-ct-zone unset
//   pub (switch, key 3): ln-pub (key 1, localnet "physnet"), rp-pub (key 2, patch to lrp-pub),
//                        ext1 (key 3) bound on hv2
//   sw9 (switch, key 9): vif9 on hv2 only — not local here.

import type { Row } from '../../ovsdb/index.js';
import { formatFlow } from '../../agent/compile/index.js';
import type { Test } from 'tap';
import { DesiredFlows, type UpdateStats } from '../../agent/flows/desired.js';
import { deepEqual } from '../../agent/flows/flow-table.js';
import type { LocalView } from '../../agent/local-view.js';
import type { FlowSpec, OfAction } from '../../agent/openflow/types.js';
import type { SbRowChange, SbUpdate } from '../../agent/sb-source.js';

let versionN = 0;
/** A fresh _version per row made, so a re-made row counts as changed. */
function version(): string {
  versionN++;
  return `00000000-0000-4000-8000-${versionN.toString(16).padStart(12, '0')}`;
}

export type RowIn = Record<string, unknown>;

function row(uuid: string, cols: RowIn): Row {
  return { _uuid: uuid, _version: version(), ...cols } as unknown as Row;
}

export const U = (n: number, kind = 0): string => `${kind.toString(16).padStart(8, '0')}-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;

export function datapath(uuid: string, key: number, kind: 'switch' | 'router', extra: Record<string, string> = {}): Row {
  return row(uuid, {
    tunnel_key: key, load_balancers: [],
    external_ids: new Map([[kind === 'switch' ? 'logical-switch' : 'logical-router', `nb-${uuid}`], ...Object.entries(extra)]),
  });
}

export interface PortOpts {
  readonly type?: string;
  readonly options?: Record<string, string>;
  readonly chassis?: string;
  readonly additional_chassis?: string[];
  readonly mac?: string[];
  readonly parent_port?: string;
  readonly tag?: number;
  readonly ha_chassis_group?: string;
  readonly port_security?: string[];
  readonly virtual_parent?: string;
}

export function port(uuid: string, dp: string, name: string, key: number, o: PortOpts = {}): Row {
  return row(uuid, {
    logical_port: name, type: o.type ?? '', gateway_chassis: [], ha_chassis_group: o.ha_chassis_group === undefined ? [] : [o.ha_chassis_group],
    options: new Map(Object.entries(o.options ?? {})), datapath: dp, tunnel_key: key,
    parent_port: o.parent_port === undefined ? [] : [o.parent_port], tag: o.tag === undefined ? [] : [o.tag], virtual_parent: o.virtual_parent === undefined ? [] : [o.virtual_parent],
    chassis: o.chassis === undefined ? [] : [o.chassis], additional_chassis: o.additional_chassis ?? [], encap: [], additional_encap: [],
    mirror_rules: [], mac: o.mac ?? [], port_security: o.port_security ?? [], nat_addresses: [], up: [], external_ids: new Map(),
    requested_chassis: [], requested_additional_chassis: [],
  });
}

export function chassis(uuid: string, name: string, other: Record<string, string> = {}): Row {
  return row(uuid, {
    name, hostname: name, encaps: [], vtep_logical_switches: [], nb_cfg: 0, external_ids: new Map(),
    other_config: new Map(Object.entries(other)), transport_zones: [],
  });
}

/** An HA_Chassis as our northd writes it: the chassis named in external_ids:chassis-name
 *  (or, with `chassisUuid`, by the chassis column as ovn-northd can). */
export function haChassis(uuid: string, chassisName: string, priority: number, chassisUuid?: string): Row {
  return row(uuid, { chassis: chassisUuid === undefined ? [] : [chassisUuid], priority, external_ids: new Map([['chassis-name', chassisName]]) });
}

export function haChassisGroup(uuid: string, name: string, members: string[]): Row {
  return row(uuid, { name, ha_chassis: [...members].sort(), ref_chassis: [], external_ids: new Map() });
}

export function multicastGroup(uuid: string, dp: string, name: string, key: number, ports: string[]): Row {
  return row(uuid, { datapath: dp, name, tunnel_key: key, ports: [...ports].sort() });
}

export function macBinding(uuid: string, dp: string, lport: string, ip: string, mac: string): Row {
  return row(uuid, { logical_port: lport, ip, mac, timestamp: 0, datapath: dp });
}

export function staticMacBinding(uuid: string, dp: string, lport: string, ip: string, mac: string, override: boolean): Row {
  return row(uuid, { logical_port: lport, ip, mac, override_dynamic_mac: override, datapath: dp });
}

export function fdb(uuid: string, dpKey: number, portKey: number, mac: string): Row {
  return row(uuid, { mac, dp_key: dpKey, port_key: portKey });
}

export function logicalFlow(uuid: string, dp: string | { group: string }, pipeline: 'ingress' | 'egress', table: number, priority: number,
  match: string, actions: string, tags: Record<string, string> = {}): Row {
  return row(uuid, {
    logical_datapath: typeof dp === 'string' ? [dp] : [], logical_dp_group: typeof dp === 'string' ? [] : [dp.group],
    pipeline, table_id: table, priority, match, actions, tags: new Map(Object.entries(tags)), controller_meter: [], external_ids: new Map(),
  });
}

/** The row with Logical_Flow.controller_meter set to `name` (a new version). */
export function withControllerMeter(r: Row, name: string): Row {
  return row(r._uuid, { ...(r as unknown as RowIn), controller_meter: [name] });
}

export function meter(uuid: string, name: string, unit: 'kbps' | 'pktps', bands: string[]): Row {
  return row(uuid, { name, unit, bands: [...bands].sort() });
}

export function meterBand(uuid: string, rate: number, burstSize = 0): Row {
  return row(uuid, { action: 'drop', rate, burst_size: burstSize });
}

export function dpGroup(uuid: string, dps: string[]): Row {
  return row(uuid, { datapaths: [...dps].sort() });
}

export interface LoadBalancerOpts {
  readonly datapaths?: readonly string[];
  readonly group?: string;
  readonly protocol?: 'tcp' | 'udp' | 'sctp';
  readonly options?: Record<string, string>;
}

export function loadBalancer(uuid: string, vips: Record<string, string>, o: LoadBalancerOpts = {}): Row {
  return row(uuid, {
    name: `lb-${uuid.slice(-4)}`, vips: new Map(Object.entries(vips)), protocol: o.protocol === undefined ? [] : [o.protocol],
    datapaths: [...(o.datapaths ?? [])].sort(), datapath_group: o.group === undefined ? [] : [o.group],
    options: new Map(Object.entries(o.options ?? {})), external_ids: new Map(),
  });
}

export function addressSet(uuid: string, name: string, addresses: string[]): Row {
  return row(uuid, { name, addresses: [...addresses].sort() });
}

export function portGroup(uuid: string, name: string, ports: string[]): Row {
  return row(uuid, { name, ports: [...ports].sort() });
}

export function sbGlobal(uuid: string, nbCfg: number, options: Record<string, string> = {}): Row {
  return row(uuid, { nb_cfg: nbCfg, external_ids: new Map(), connections: [], ssl: [], options: new Map(Object.entries(options)), ipsec: false });
}

/** Rows of one table each, as a reset update. */
export function resetOf(rows: readonly [string, Row][], toRevision = 1): SbUpdate {
  return { reset: true, fromRevision: 0, toRevision, changes: rows.map(([table, r]) => ({ table, uuid: r._uuid, row: r })) };
}

export const ids = {
  hv1: U(1, 0xc), hv2: U(2, 0xc),
  sw0: U(1, 0xd), lr0: U(2, 0xd), pub: U(3, 0xd), sw9: U(9, 0xd),
  vif1: U(1, 0xa), vif2: U(2, 0xa), vif3: U(3, 0xa), rpSw0: U(4, 0xa), lrpSw0: U(5, 0xa), lrpPub: U(6, 0xa),
  lnPub: U(7, 0xa), rpPub: U(8, 0xa), ext1: U(9, 0xa), vif9: U(10, 0xa),
  flood: U(1, 0xe), floodPub: U(2, 0xe),
};

/** The topology of the header comment, as SB rows (table, row). */
export function smallTopology(): [string, Row][] {
  return [
    ['Chassis', chassis(ids.hv1, 'hv1')],
    ['Chassis', chassis(ids.hv2, 'hv2')],
    ['Datapath_Binding', datapath(ids.sw0, 1, 'switch')],
    ['Datapath_Binding', datapath(ids.lr0, 2, 'router')],
    ['Datapath_Binding', datapath(ids.pub, 3, 'switch')],
    ['Datapath_Binding', datapath(ids.sw9, 9, 'switch')],
    ['Port_Binding', port(ids.vif1, ids.sw0, 'vif1', 1, { chassis: ids.hv1, mac: ['00:00:00:00:00:01 10.0.0.1'] })],
    ['Port_Binding', port(ids.vif2, ids.sw0, 'vif2', 2, { chassis: ids.hv1, mac: ['00:00:00:00:00:02 10.0.0.2'] })],
    ['Port_Binding', port(ids.vif3, ids.sw0, 'vif3', 3, { chassis: ids.hv2, mac: ['00:00:00:00:00:03 10.0.0.3'] })],
    ['Port_Binding', port(ids.rpSw0, ids.sw0, 'rp-sw0', 4, { type: 'patch', options: { peer: 'lrp-sw0' }, mac: ['router'] })],
    ['Port_Binding', port(ids.lrpSw0, ids.lr0, 'lrp-sw0', 1, { type: 'patch', options: { peer: 'rp-sw0' }, mac: ['00:00:00:00:ff:01 10.0.0.254/24'] })],
    ['Port_Binding', port(ids.lrpPub, ids.lr0, 'lrp-pub', 2, { type: 'patch', options: { peer: 'rp-pub' }, mac: ['00:00:00:00:ff:02 172.16.0.1/24'] })],
    ['Port_Binding', port(ids.lnPub, ids.pub, 'ln-pub', 1, { type: 'localnet', options: { network_name: 'physnet' }, mac: ['unknown'] })],
    ['Port_Binding', port(ids.rpPub, ids.pub, 'rp-pub', 2, { type: 'patch', options: { peer: 'lrp-pub' }, mac: ['router'] })],
    ['Port_Binding', port(ids.ext1, ids.pub, 'ext1', 3, { chassis: ids.hv2 })],
    ['Port_Binding', port(ids.vif9, ids.sw9, 'vif9', 1, { chassis: ids.hv2 })],
    ['Multicast_Group', multicastGroup(ids.flood, ids.sw0, '_MC_flood', 32768, [ids.vif1, ids.vif2, ids.vif3, ids.rpSw0])],
    ['Multicast_Group', multicastGroup(ids.floodPub, ids.pub, '_MC_flood', 32768, [ids.lnPub, ids.rpPub, ids.ext1])],
  ];
}

/** hv1's LocalView for the small topology: two VIFs, a tunnel to hv2, physnet bridged. */
export function smallView(over: Partial<LocalView> = {}): LocalView {
  return {
    chassis: 'hv1',
    vifs: new Map([['vif1', 1], ['vif2', 2]]),
    tunnels: new Map([['hv2', { ofport: 10, type: 'geneve', remoteIp: '192.0.2.2' }]]),
    localnetPatches: new Map([['physnet', 20]]),
    ...over,
  };
}

/** Every row of a generated world as one reset update: what a fresh engine, the oracle, is fed. */
export function snapshotOf(w: { readonly rows: ReadonlyMap<string, ReadonlyMap<string, Row>>; readonly revision: number }): SbUpdate {
  const changes: SbRowChange[] = [];
  for (const [table, rows] of w.rows) for (const r of rows.values()) changes.push({ table, uuid: r._uuid, row: r });
  return { reset: true, fromRevision: 0, toRevision: w.revision, changes };
}

/** The first difference between two engines' tables (flows, their sources, groups, errors), or undefined. */
/**
 * A flow with each meter id replaced by the meter's name: two engines give ids in the order
 * their histories asked for meters (lowest free first, as ovn-controller), so the same flows
 * may name different ids for the same meters.
 */
export function meterNeutral(d: DesiredFlows, f: FlowSpec): unknown {
  const named = (id: number): string => d.meterName(id) ?? `? ${id}`;
  const actions = (as: readonly OfAction[]): unknown[] => as.map((a) => {
    if (a.kind === 'meter') return { ...a, meterId: named(a.meterId) };
    if ((a.kind === 'controller' || a.kind === 'controller_op') && a.meterId !== undefined) return { ...a, meterId: named(a.meterId) };
    if (a.kind === 'clone') return { ...a, actions: actions(a.actions) };
    return a;
  });
  return { ...f, actions: actions(f.actions) };
}

/** The meters of an engine by name, their ids left out (see meterNeutral). */
export function metersByName(d: DesiredFlows): Map<string, unknown> {
  const out = new Map<string, unknown>();
  for (const [id, m] of d.meterSpecs()) out.set(d.meterName(id) ?? `? ${id}`, { flags: m.flags, bands: m.bands });
  return new Map([...out].sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0)));
}

export function difference(a: DesiredFlows, b: DesiredFlows): string | undefined {
  const ka = new Set(a.table.keys());
  const kb = new Set(b.table.keys());
  for (const k of ka) {
    if (!kb.has(k)) return `incremental has ${formatFlow(a.table.flow(k) as never)} (from ${a.table.refs(k).join(' ')}), recompute does not`;
    const fa = a.table.flow(k) as FlowSpec;
    const fb = b.table.flow(k) as FlowSpec;
    if (!deepEqual(fa, fb) && !deepEqual(meterNeutral(a, fa), meterNeutral(b, fb))) return `flow ${k} differs:\n  inc ${formatFlow(fa)}\n  full ${formatFlow(fb)}`;
    if (!deepEqual(a.table.refs(k), b.table.refs(k))) return `refs of ${k} differ: ${a.table.refs(k).join(' ')} / ${b.table.refs(k).join(' ')}`;
  }
  for (const k of kb) if (!ka.has(k)) return `recompute has ${formatFlow(b.table.flow(k) as never)} (from ${b.table.refs(k).join(' ')}), incremental does not`;
  if (!deepEqual([...a.groupSpecs()].sort((x, y) => x[0] - y[0]), [...b.groupSpecs()].sort((x, y) => x[0] - y[0]))) return 'groups differ';
  if (!deepEqual(metersByName(a), metersByName(b))) return `meters differ: ${JSON.stringify([...metersByName(a)])} / ${JSON.stringify([...metersByName(b)])}`;
  if (!deepEqual(new Map([...a.sourceErrors()].sort()), new Map([...b.sourceErrors()].sort()))) return 'errors differ';
  return undefined;
}

/**
 * An engine driven one update at a time (SB changes, a LocalView), keeping the rows it was given
 * so that after each update it is compared, on 't', with a fresh engine fed them all at once,
 * and found without errors: the oracle of the scripted incremental tests.
 */
export class IncrementalRun {
  private all: [string, Row][];
  private revision = 1;
  private current: LocalView;

  constructor(private readonly t: Test, readonly d: DesiredFlows, rows: readonly [string, Row][], view: LocalView) {
    this.all = [...rows];
    this.current = view;
    d.update(resetOf(this.all), view);
  }

  /** The view of the last update. */
  get view(): LocalView {
    return this.current;
  }

  /** One update: the rows changed by 'c' (none: the view alone) and the view 'v'; returns what it recomputed. */
  change(c: readonly SbRowChange[], v: LocalView, label: string): UpdateStats {
    for (const x of c) {
      this.all = this.all.filter(([table, r]) => !(table === x.table && r._uuid === x.uuid));
      if (x.row !== undefined) this.all.push([x.table, x.row]);
    }
    this.current = v;
    this.revision++;
    const st = this.d.update(c.length === 0 ? null : { reset: false, fromRevision: this.revision - 1, toRevision: this.revision, changes: c }, v);
    const fresh = new DesiredFlows({ ctZones: this.d.ctZones() });
    fresh.update(resetOf(this.all, this.revision), v);
    this.t.equal(difference(this.d, fresh), undefined, `${label}: incremental equals a fresh engine`);
    this.t.same(this.d.sourceErrors(), new Map(), `${label}: no errors`);
    return st;
  }
}
