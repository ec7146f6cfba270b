// Datapath_Binding: one per Logical_Switch and Logical_Router, with a tunnel key that is the
// lowest free key when the datapath first appears (datapaths appearing together take keys in
// NB UUID order) and never changes while the datapath lives, unless requested: a switch's
// other_config:requested-tnl-key or a router's options:requested-tnl-key takes that key, from
// whichever datapath held it without asking (which takes the lowest free one); two asking for
// one key: the one holding it keeps it, else the lowest NB UUID (tunnel-keys.ts, KeySpace).
// external_ids carry the NB UUID under logical-switch / logical-router and the name, as
// ovn-northd 23.03 writes them. In VXLAN mode (`sb_encaps`: a Chassis has a vxlan encap) new
// datapaths take keys up to 4095 and a request above that is ignored (but a transit switch's),
// while the keys held stay.
import type { Database, DbDelta, Uuid } from '../ovsdb/index.js';
import { SmallMap } from '../ovsdb/index.js';
import type * as nb from '../ovsdb/rows/nb.js';
import type * as sb from '../ovsdb/rows/sb.js';
import type { CoppMeters } from './copp.js';
import { coppMetersOf } from './copp.js';
import type { EngineNode, NodeInputs } from './engine.js';
import type { TextSink } from './hash.js';
import { hashUuid, hashUuidOfWritten } from './hash.js';
import { datapathRef, shardOfKey } from './lflows/flow.js';
import type { McastConfig } from './ip-multicast.js';
import { ipMulticastUuid, putIpMulticast, routerMcastOf, switchMcastOf } from './ip-multicast.js';
import { boolOption, nbGet, nbRows, optionInt } from './nb.js';
import { sameData } from './same-data.js';
import { SbChangeSet, SbTable } from './sb-changes.js';
import { addTo, removeFrom } from './static-mac-bindings.js';
import type { SbEncapsData } from './tunnel-keys.js';
import { DATAPATH_KEY_LIMIT, DATAPATH_KEY_MAX, DATAPATH_KEY_MAX_VXLAN, DATAPATH_KEY_MIN, KeySpace } from './tunnel-keys.js';

export interface DatapathInfo {
  readonly nbUuid: Uuid;
  readonly kind: 'switch' | 'router';
  readonly sbUuid: Uuid;
  /**
   * [sbUuid]: the logical_datapath value every flow of this datapath shares, which also says its
   * flows' shard (lflows/flow.ts, datapathRef): a new one when its key moves it to another shard.
   */
  readonly logicalDatapath: readonly Uuid[];
  readonly key: number;
  readonly name: string;
  /** Logical_Switch other_config:vlan-passthru=true (switches only). */
  readonly vlanPassthru: boolean;
  /** Its CoPP (copp.ts): the meters its controller actions name, by kind; undefined = none. */
  readonly copp: CoppMeters | undefined;
  /** Its IP multicast settings (ip-multicast.ts): a switch's snooping, a router's relay. */
  readonly mcast: McastConfig;
  /** A switch's forwarding groups with child ports, in NB UUID order (lflows/switch.ts). */
  readonly fwdGroups: readonly FwdGroupFacts[];
}

/** An NB Forwarding_Group as its flows read it. */
export interface FwdGroupFacts {
  readonly uuid: Uuid;
  readonly vip: string;
  readonly vmac: string;
  readonly liveness: boolean;
  /** Its child_port set, in the set's order. */
  readonly childPorts: readonly string[];
}

const NO_FWD_GROUPS: readonly FwdGroupFacts[] = Object.freeze([]);

export interface DatapathsData {
  readonly byNb: Map<Uuid, DatapathInfo>;
  readonly bySb: Map<Uuid, DatapathInfo>;
  /** Keys by NB UUID. */
  readonly keys: KeySpace;
  readonly table: SbTable;
  /** Keys to reuse for datapaths first seen by a recompute (the oracle's view of history). */
  readonly preferredKeys: Map<Uuid, number>;
  /** NB Copp → the datapaths (NB UUIDs) whose copp names it, for a Copp or Meter change. */
  readonly coppUsers: Map<Uuid, Set<Uuid>>;
  /** Datapath (NB UUID) → the NB Copp its copp column names. */
  readonly coppRowOf: Map<Uuid, Uuid>;
  /** SB IP_Multicast: one row per switch (ip-multicast.ts). */
  readonly ipMulticast: SbTable;
  /** NB Forwarding_Group → the switch (NB UUID) whose forwarding_groups last named it. */
  readonly fwdGroupOwner: Map<Uuid, Uuid>;
  /** A switch (NB UUID) → the Forwarding_Group rows it names, for switches that name any. */
  readonly fwdGroupRows: Map<Uuid, readonly Uuid[]>;
}

export interface DatapathsChange {
  readonly sb: SbChangeSet;
  /** By SB UUID: the datapath's info before and after (undefined = absent). */
  readonly datapaths: Map<Uuid, { readonly old: DatapathInfo | undefined; readonly new: DatapathInfo | undefined }>;
}

export function datapathSbUuid(nbUuid: Uuid): Uuid {
  return hashUuid(['Datapath_Binding', nbUuid]);
}

const DP_TABLES = ['Logical_Router', 'Logical_Switch'] as const;
const NO_UUIDS: readonly Uuid[] = Object.freeze([]);

interface Desired {
  readonly nbUuid: Uuid;
  readonly kind: 'switch' | 'router';
  readonly name: string;
  readonly vlanPassthru: boolean;
  readonly copp: CoppMeters | undefined;
  /** The NB Copp its copp column names, if any. */
  readonly coppRow: Uuid | undefined;
  readonly mcast: McastConfig;
  readonly externalIds: ReadonlyMap<string, string>;
  /** options:requested-tnl-key (other_config on a switch), 0 when none. */
  readonly requestedKey: number;
  /** other_config:interconn-ts (options on a router): its requested key holds in VXLAN mode too. */
  readonly interconnTs: boolean;
  /** The binding's external_ids beyond the NB UUID, name and name2 (bindingIds). */
  readonly moreIds: readonly (readonly [string, string])[];
  readonly fwdGroups: readonly FwdGroupFacts[];
  /** Every Forwarding_Group the switch names, with child ports or not. */
  readonly fwdGroupRows: readonly Uuid[];
}

const NO_IDS: readonly (readonly [string, string])[] = Object.freeze([]);

/** A switch's other_config:interconn-ts (ovn-ic's transit switches). */
function switchIds(ls: nb.Logical_Switch): readonly (readonly [string, string])[] {
  const ts = ls.other_config.get('interconn-ts');
  return ts === undefined ? NO_IDS : [['interconn-ts', ts]];
}

/**
 * A router's options:snat-ct-zone (as an integer >= 0) and always_learn_from_arp_request=false,
 * which ovn-controller reads from the binding.
 */
function routerIds(lr: nb.Logical_Router): readonly (readonly [string, string])[] {
  const zone = optionInt(lr.options, 'snat-ct-zone', -1);
  const learn = boolOption(lr.options, 'always_learn_from_arp_request', true);
  if (zone < 0 && learn) return NO_IDS;
  const ids: [string, string][] = [];
  if (zone >= 0) ids.push(['snat-ct-zone', String(zone)]);
  if (!learn) ids.push(['always_learn_from_arp_request', 'false']);
  return ids;
}

/**
 * A switch's forwarding groups that have child ports (ovn-northd's build_fwd_group_lflows passes
 * over the others), in the order of its forwarding_groups set.
 */
function fwdGroupsOf(db: Database, ls: nb.Logical_Switch): readonly FwdGroupFacts[] {
  if (ls.forwarding_groups.length === 0) return NO_FWD_GROUPS;
  const out: FwdGroupFacts[] = [];
  for (const uuid of ls.forwarding_groups) {
    const g = nbGet<nb.Forwarding_Group>(db, 'Forwarding_Group', uuid);
    if (g === undefined || g.child_port.length === 0) continue;
    out.push({ uuid, vip: g.vip, vmac: g.vmac, liveness: g.liveness, childPorts: g.child_port });
  }
  return out.length === 0 ? NO_FWD_GROUPS : out;
}

function desiredOf(db: Database, table: string, nbUuid: Uuid): Desired | undefined {
  if (table === 'Logical_Switch') {
    const ls = nbGet<nb.Logical_Switch>(db, table, nbUuid);
    if (ls === undefined) return undefined;
    return {
      nbUuid, kind: 'switch', name: ls.name, vlanPassthru: ls.other_config.get('vlan-passthru') === 'true', externalIds: ls.external_ids,
      requestedKey: optionInt(ls.other_config, 'requested-tnl-key', 0), interconnTs: ls.other_config.has('interconn-ts'), moreIds: switchIds(ls), copp: coppMetersOf(db, ls.copp), coppRow: ls.copp[0],
      mcast: switchMcastOf(ls.other_config), fwdGroups: fwdGroupsOf(db, ls), fwdGroupRows: ls.forwarding_groups,
    };
  }
  const lr = nbGet<nb.Logical_Router>(db, table, nbUuid);
  // A disabled router has no datapath at all in ovn-northd (lrouter_is_enabled).
  if (lr === undefined || lr.enabled[0] === false) return undefined;
  return {
    nbUuid, kind: 'router', name: lr.name, vlanPassthru: false, externalIds: lr.external_ids, requestedKey: optionInt(lr.options, 'requested-tnl-key', 0),
    interconnTs: lr.options.has('interconn-ts'),
    moreIds: routerIds(lr), copp: coppMetersOf(db, lr.copp), coppRow: lr.copp[0], mcast: routerMcastOf(lr.options), fwdGroups: NO_FWD_GROUPS, fwdGroupRows: NO_UUIDS,
  };
}

/** external_ids:name2, from the Neutron name when there is one. */
function name2Of(d: Desired): string | undefined {
  const name2 = d.externalIds.get(d.kind === 'switch' ? 'neutron:network_name' : 'neutron:router_name');
  return name2 === undefined || name2 === '' ? undefined : name2;
}

/** The binding's external_ids as ovn-northd 23.03 writes them, in key order (as the SB keeps maps). */
function bindingIds(d: Desired): (readonly [string, string])[] {
  const ids: (readonly [string, string])[] = [[d.kind === 'switch' ? 'logical-switch' : 'logical-router', d.nbUuid], ['name', d.name]];
  const name2 = name2Of(d);
  if (name2 !== undefined) ids.push(['name2', name2]);
  if (d.moreIds.length > 0) {
    ids.push(...d.moreIds);
    ids.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  }
  return ids;
}

function sameIds(row: sb.Datapath_Binding | undefined, ids: readonly (readonly [string, string])[]): boolean {
  if (row === undefined || row.external_ids.size !== ids.length) return false;
  for (const [k, v] of ids) if (row.external_ids.get(k) !== v) return false;
  return true;
}

function bindingRow(d: Desired, sbUuid: Uuid, key: number, ids: readonly (readonly [string, string])[] = bindingIds(d)): sb.Datapath_Binding {
  // Most bindings carry two ids (the NB UUID and the name): a SmallMap of them costs a quarter
  // of a Map's hash table.
  const [first, second] = ids as readonly [readonly [string, string], readonly [string, string]];
  const externalIds = ids.length === 2 ? new SmallMap(first[0], first[1], second[0], second[1]) : new Map(ids);
  const row: sb.Datapath_Binding = { _uuid: sbUuid, _version: '', tunnel_key: key, load_balancers: NO_UUIDS, external_ids: externalIds };
  (row as { _version: Uuid })._version = hashUuidOfWritten('version', { row, ids }, writeBindingText);
  return row;
}

/**
 * The canonical text of a binding's columns, spelled out for the one shape bindingRow builds
 * (no load balancers; external_ids in key order): the text `versioned` would write, put piece
 * by piece into the hash. Versioning a new switch's binding through the generic walk was a
 * tenth of what the projection spent on the switch. tests/northd/projections.test.ts checks
 * every row against contentVersion.
 */
function writeBindingText(w: TextSink, b: { readonly row: sb.Datapath_Binding; readonly ids: readonly (readonly [string, string])[] }): void {
  w.put('{"tunnel_key":');
  w.put(String(b.row.tunnel_key));
  w.put(',"load_balancers":[],"external_ids":[');
  for (let i = 0; i < b.ids.length; i++) {
    const [k, v] = b.ids[i] as readonly [string, string];
    w.put(i === 0 ? '[' : ',[');
    w.putString(k);
    w.put(',');
    w.putString(v);
    w.put(']');
  }
  w.put(']}');
}

/** The desired state of a datapath an NB change did not name (by its kind when it has a binding). */
function desiredNow(db: Database, data: DatapathsData, nbUuid: Uuid): Desired | undefined {
  const old = data.byNb.get(nbUuid);
  return old === undefined
    ? desiredOf(db, 'Logical_Switch', nbUuid) ?? desiredOf(db, 'Logical_Router', nbUuid)
    : desiredOf(db, old.kind === 'switch' ? 'Logical_Switch' : 'Logical_Router', nbUuid);
}

/** Notes the NB Copp datapath `nbUuid` names now (undefined: none, or the datapath is gone). */
function trackCopp(data: DatapathsData, nbUuid: Uuid, copp: Uuid | undefined): void {
  const was = data.coppRowOf.get(nbUuid);
  if (was === copp) return;
  if (was !== undefined) removeFrom(data.coppUsers, was, nbUuid);
  if (copp === undefined) data.coppRowOf.delete(nbUuid);
  else {
    data.coppRowOf.set(nbUuid, copp);
    addTo(data.coppUsers, copp, nbUuid);
  }
}

/** Notes which switch names each of its Forwarding_Group rows (none when it is gone). */
function trackFwdGroups(data: DatapathsData, nbUuid: Uuid, rows: readonly Uuid[]): void {
  const was = data.fwdGroupRows.get(nbUuid);
  if (was === undefined && rows.length === 0) return;
  for (const g of was ?? NO_UUIDS) if (!rows.includes(g) && data.fwdGroupOwner.get(g) === nbUuid) data.fwdGroupOwner.delete(g);
  for (const g of rows) data.fwdGroupOwner.set(g, nbUuid);
  if (rows.length === 0) data.fwdGroupRows.delete(nbUuid);
  else data.fwdGroupRows.set(nbUuid, rows);
}

/**
 * Applies the desired state of the datapaths in `touched` (NB UUID → desired or undefined):
 * removals first, then every request and kept key, then the keys (KeySpace.settle: new
 * datapaths take the lowest free keys in NB UUID order), so an incremental run and a recompute
 * give the same keys. A datapath whose key a request took, or that took a requested key freed
 * here, is rewritten too.
 */
function applyDesired(data: DatapathsData, db: Database, touched: ReadonlyMap<Uuid, Desired | undefined>, out: DatapathsChange, vxlan: boolean): void {
  data.keys.setMax(vxlan ? DATAPATH_KEY_MAX_VXLAN : DATAPATH_KEY_MAX);
  const note = (sbUuid: Uuid, old: DatapathInfo | undefined, now: DatapathInfo | undefined): void => {
    const prev = out.datapaths.get(sbUuid);
    out.datapaths.set(sbUuid, { old: prev === undefined ? old : prev.old, new: now });
  };
  const gone = (old: DatapathInfo): void => {
    data.byNb.delete(old.nbUuid);
    data.bySb.delete(old.sbUuid);
    data.table.remove(old.sbUuid, out.sb);
    data.ipMulticast.remove(ipMulticastUuid(old.sbUuid), out.sb);
    note(old.sbUuid, old, undefined);
  };
  const fresh = new Map<Uuid, Desired>();
  const updated = new Map<Uuid, Desired>();
  for (const [nbUuid, d] of touched) {
    trackCopp(data, nbUuid, d?.coppRow);
    trackFwdGroups(data, nbUuid, d?.fwdGroupRows ?? NO_UUIDS);
    const old = data.byNb.get(nbUuid);
    if ((old !== undefined || data.keys.has(nbUuid)) && (d === undefined || (old !== undefined && d.kind !== old.kind))) {
      data.keys.remove(nbUuid);
      if (old !== undefined) gone(old);
    }
    if (d === undefined) continue;
    if (!data.keys.has(nbUuid)) {
      data.keys.add(nbUuid);
      const k = data.preferredKeys.get(nbUuid);
      if (k !== undefined) data.keys.keep(nbUuid, k);
      fresh.set(nbUuid, d);
    } else {
      updated.set(nbUuid, d);
    }
    data.keys.request(nbUuid, vxlan && !d.interconnTs && d.requestedKey > DATAPATH_KEY_MAX_VXLAN ? 0 : d.requestedKey);
  }
  // Datapaths left without a key (the space exhausted) have no binding: ovn-northd leaves
  // them out too, until a key is free.
  data.keys.settle();
  const moved = new Set(data.keys.takeChanged());
  // Untouched datapaths whose key a request took are rewritten as they are; one that waited
  // for a key (the space exhausted) and has one now is new.
  for (const nbUuid of moved) {
    if (touched.has(nbUuid)) continue;
    const d = desiredNow(db, data, nbUuid);
    if (d !== undefined) updated.set(nbUuid, d);
  }
  for (const [nbUuid, d] of updated) {
    const old = data.byNb.get(nbUuid);
    const key = data.keys.keyOf(nbUuid);
    if (old === undefined) {
      fresh.set(nbUuid, d); // Without a key so far (the space exhausted): new once it has one.
      continue;
    }
    if (key === undefined) {
      gone(old);
      continue;
    }
    // Most changes of a switch or router (its ports, say) leave its binding as it is.
    const current = data.table.rows.get(old.sbUuid) as unknown as sb.Datapath_Binding | undefined;
    const ids = bindingIds(d);
    const sameCopp = sameData(d.copp, old.copp);
    const sameMcast = sameData(d.mcast, old.mcast);
    const sameFwd = sameData(d.fwdGroups, old.fwdGroups);
    if (key === old.key && d.name === old.name && d.vlanPassthru === old.vlanPassthru && sameCopp && sameMcast && sameFwd && sameIds(current, ids)) continue;
    const logicalDatapath = shardOfKey(key) === shardOfKey(old.key) ? old.logicalDatapath : datapathRef(old.sbUuid, shardOfKey(key));
    const info: DatapathInfo = {
      ...old, key, logicalDatapath, name: d.name, vlanPassthru: d.vlanPassthru, copp: sameCopp ? old.copp : d.copp, mcast: sameMcast ? old.mcast : d.mcast,
      fwdGroups: sameFwd ? old.fwdGroups : d.fwdGroups,
    };
    data.byNb.set(nbUuid, info);
    data.bySb.set(info.sbUuid, info);
    data.table.put(bindingRow(d, old.sbUuid, key, ids), out.sb);
    if (!sameMcast) putIpMulticast(data.ipMulticast, info, out.sb);
    if (info.key !== old.key || info.name !== old.name || info.vlanPassthru !== old.vlanPassthru || !sameCopp || !sameMcast || !sameFwd) note(old.sbUuid, old, info);
  }
  for (const nbUuid of [...fresh.keys()].sort()) {
    const d = fresh.get(nbUuid) as Desired;
    const key = data.keys.keyOf(nbUuid);
    if (key === undefined) continue;
    const sbUuid = datapathSbUuid(d.nbUuid);
    const info: DatapathInfo = { nbUuid: d.nbUuid, kind: d.kind, sbUuid, logicalDatapath: datapathRef(sbUuid, shardOfKey(key)), key, name: d.name, vlanPassthru: d.vlanPassthru, copp: d.copp, mcast: d.mcast,
      fwdGroups: d.fwdGroups,
    };
    data.byNb.set(d.nbUuid, info);
    data.bySb.set(sbUuid, info);
    data.table.put(bindingRow(d, sbUuid, key), out.sb);
    putIpMulticast(data.ipMulticast, info, out.sb);
    note(sbUuid, undefined, info);
  }
}

export function datapathsNode(): EngineNode<DatapathsData, DatapathsChange> {
  return {
    name: 'datapaths',
    inputs: ['nb', 'sb_encaps'],
    init: () => ({ byNb: new Map(), bySb: new Map(), keys: new KeySpace(DATAPATH_KEY_MIN, DATAPATH_KEY_MAX, DATAPATH_KEY_LIMIT), table: new SbTable('Datapath_Binding'), preferredKeys: new Map(),
      coppUsers: new Map(), coppRowOf: new Map(), ipMulticast: new SbTable('IP_Multicast'), fwdGroupOwner: new Map(), fwdGroupRows: new Map() }),
    newChange: () => ({ sb: new SbChangeSet(), datapaths: new Map() }),
    isEmpty: (c) => c.sb.size === 0 && c.datapaths.size === 0,
    recompute(data: DatapathsData, inputs: NodeInputs, out: DatapathsChange): void {
      out.sb.maybeTrackWhole(data.table);
      out.sb.maybeTrackWhole(data.ipMulticast);
      const db = inputs.data<Database>('nb');
      const touched = new Map<Uuid, Desired | undefined>();
      for (const nbUuid of data.keys.owners()) touched.set(nbUuid, undefined);
      for (const table of DP_TABLES) {
        for (const nbUuid of nbRows(db, table).keys()) touched.set(nbUuid, desiredOf(db, table, nbUuid));
      }
      applyDesired(data, db, touched, out, inputs.data<SbEncapsData>('sb_encaps').vxlan);
    },
    handlers: {
      nb(data: DatapathsData, change: unknown, inputs: NodeInputs, out: DatapathsChange) {
        const db = inputs.data<Database>('nb');
        const touched = new Map<Uuid, Desired | undefined>();
        const coppChanged = new Set<Uuid>();
        const fwdChanged = new Set<Uuid>();
        let metersChanged = false;
        for (const c of (change as DbDelta).changes) {
          if (c.table === 'Copp') coppChanged.add(c.uuid);
          else if (c.table === 'Forwarding_Group') fwdChanged.add(c.uuid);
          else if (c.table === 'Meter') metersChanged ||= c.kind !== 'modify' || c.columns.includes('name');
          if (c.table !== 'Logical_Switch' && c.table !== 'Logical_Router') continue;
          touched.set(c.uuid, desiredOf(db, c.table, c.uuid));
        }
        // A meter appearing, going or renamed changes every CoPP that may name it (there are
        // few Copp rows); a Copp row changing, the datapaths naming it.
        if (metersChanged) for (const copp of data.coppUsers.keys()) coppChanged.add(copp);
        for (const copp of [...coppChanged].sort()) {
          for (const nbUuid of [...(data.coppUsers.get(copp) ?? [])].sort()) {
            if (touched.has(nbUuid)) continue;
            touched.set(nbUuid, desiredNow(db, data, nbUuid));
          }
        }
        // A forwarding group's own columns changing changes only its switch's flows.
        for (const g of [...fwdChanged].sort()) {
          const owner = data.fwdGroupOwner.get(g);
          if (owner !== undefined && !touched.has(owner)) touched.set(owner, desiredNow(db, data, owner));
        }
        if (touched.size === 0) return 'unchanged';
        applyDesired(data, db, touched, out, inputs.data<SbEncapsData>('sb_encaps').vxlan);
        return 'handled';
      },
      sb_encaps(data: DatapathsData, _change: unknown, inputs: NodeInputs, out: DatapathsChange) {
        // VXLAN mode came or went: every request is read again (held keys stay).
        const db = inputs.data<Database>('nb');
        const touched = new Map<Uuid, Desired | undefined>();
        for (const nbUuid of [...data.keys.owners()].sort()) touched.set(nbUuid, desiredNow(db, data, nbUuid));
        applyDesired(data, db, touched, out, inputs.data<SbEncapsData>('sb_encaps').vxlan);
        return 'handled';
      },
    },
  };
}
