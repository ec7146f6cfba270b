// Datapath_Binding: one per Logical_Switch and Logical_Router, with a tunnel key that is the
// lowest free key when the datapath first appears (datapaths appearing together take keys in
// NB UUID order) and never changes while the datapath lives. external_ids carry the NB UUID
// under logical-switch / logical-router and the name, as ovn-northd 23.03 writes them.
import type { Database, DbDelta, Uuid } from '../ovsdb/index.js';
import type * as nb from '../ovsdb/rows/nb.js';
import type * as sb from '../ovsdb/rows/sb.js';
import type { EngineNode, NodeInputs } from './engine.js';
import type { TextSink } from './hash.js';
import { hashUuid, hashUuidOfWritten } from './hash.js';
import { nbGet, nbRows } from './nb.js';
import { SbChangeSet, SbTable } from './sb-changes.js';
import { DATAPATH_KEY_MAX, DATAPATH_KEY_MIN, KeyAllocator } from './tunnel-keys.js';

export interface DatapathInfo {
  readonly nbUuid: Uuid;
  readonly kind: 'switch' | 'router';
  readonly sbUuid: Uuid;
  /** [sbUuid]: the logical_datapath value every flow of this datapath shares. */
  readonly logicalDatapath: readonly Uuid[];
  readonly key: number;
  readonly name: string;
  /** Logical_Switch other_config:vlan-passthru=true (switches only). */
  readonly vlanPassthru: boolean;
}

export interface DatapathsData {
  readonly byNb: Map<Uuid, DatapathInfo>;
  readonly bySb: Map<Uuid, DatapathInfo>;
  readonly keys: KeyAllocator;
  readonly table: SbTable;
  /** Keys to reuse for datapaths first seen by a recompute (the oracle's view of history). */
  readonly preferredKeys: Map<Uuid, number>;
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
  readonly externalIds: ReadonlyMap<string, string>;
}

function desiredOf(db: Database, table: string, nbUuid: Uuid): Desired | undefined {
  if (table === 'Logical_Switch') {
    const ls = nbGet<nb.Logical_Switch>(db, table, nbUuid);
    if (ls === undefined) return undefined;
    return { nbUuid, kind: 'switch', name: ls.name, vlanPassthru: ls.other_config.get('vlan-passthru') === 'true', externalIds: ls.external_ids };
  }
  const lr = nbGet<nb.Logical_Router>(db, table, nbUuid);
  // A disabled router has no datapath at all in ovn-northd (lrouter_is_enabled).
  if (lr === undefined || lr.enabled[0] === false) return undefined;
  return { nbUuid, kind: 'router', name: lr.name, vlanPassthru: false, externalIds: lr.external_ids };
}

/** external_ids:name2, from the Neutron name when there is one. */
function name2Of(d: Desired): string | undefined {
  const name2 = d.externalIds.get(d.kind === 'switch' ? 'neutron:network_name' : 'neutron:router_name');
  return name2 === undefined || name2 === '' ? undefined : name2;
}

function bindingRow(d: Desired, sbUuid: Uuid, key: number): sb.Datapath_Binding {
  const idKey = d.kind === 'switch' ? 'logical-switch' : 'logical-router';
  const ids = new Map<string, string>([[idKey, d.nbUuid], ['name', d.name]]);
  const name2 = name2Of(d);
  if (name2 !== undefined) ids.set('name2', name2);
  const row: sb.Datapath_Binding = { _uuid: sbUuid, _version: '', tunnel_key: key, load_balancers: NO_UUIDS, external_ids: ids };
  (row as { _version: Uuid })._version = hashUuidOfWritten('version', { row, idKey, name2 }, writeBindingText);
  return row;
}

/**
 * The canonical text of a binding's columns, spelled out for the one shape bindingRow builds
 * (no load balancers; external_ids with the NB UUID, the name and maybe name2, whose keys sort
 * in that order): the text `versioned` would write, put piece by piece into the hash. Versioning a
 * new switch's binding through the generic walk was a tenth of what the projection spent on
 * the switch. tests/northd/projections.test.ts checks every row against contentVersion.
 */
function writeBindingText(w: TextSink, b: { readonly row: sb.Datapath_Binding; readonly idKey: string; readonly name2: string | undefined }): void {
  const q = JSON.stringify;
  const r = b.row;
  w.put('{"tunnel_key":');
  w.put(String(r.tunnel_key));
  w.put(',"load_balancers":[],"external_ids":[["');
  w.put(b.idKey);
  w.put('",');
  w.put(q(r.external_ids.get(b.idKey)));
  w.put('],["name",');
  w.put(q(r.external_ids.get('name')));
  if (b.name2 !== undefined) {
    w.put('],["name2",');
    w.put(q(b.name2));
  }
  w.put(']]}');
}

/**
 * Applies the desired state of the datapaths in `touched` (NB UUID → desired or undefined):
 * removals first, then updates, then new datapaths in NB UUID order, so an incremental run and
 * a recompute allocate the same keys.
 */
function applyDesired(data: DatapathsData, touched: ReadonlyMap<Uuid, Desired | undefined>, out: DatapathsChange): void {
  const note = (sbUuid: Uuid, old: DatapathInfo | undefined, now: DatapathInfo | undefined): void => {
    const prev = out.datapaths.get(sbUuid);
    out.datapaths.set(sbUuid, { old: prev === undefined ? old : prev.old, new: now });
  };
  const fresh: Desired[] = [];
  for (const [nbUuid, d] of touched) {
    const old = data.byNb.get(nbUuid);
    if (old !== undefined && (d === undefined || d.kind !== old.kind)) {
      data.keys.release(old.key);
      data.byNb.delete(nbUuid);
      data.bySb.delete(old.sbUuid);
      data.table.remove(old.sbUuid, out.sb);
      note(old.sbUuid, old, undefined);
    }
    if (d === undefined) continue;
    if (old !== undefined && d.kind === old.kind) {
      // Most changes of a switch or router (its ports, say) leave its binding as it is.
      const current = data.table.rows.get(old.sbUuid) as unknown as sb.Datapath_Binding | undefined;
      if (d.name === old.name && d.vlanPassthru === old.vlanPassthru && current?.external_ids.get('name2') === name2Of(d)) continue;
      const info: DatapathInfo = { ...old, name: d.name, vlanPassthru: d.vlanPassthru };
      data.byNb.set(nbUuid, info);
      data.bySb.set(info.sbUuid, info);
      data.table.put(bindingRow(d, old.sbUuid, old.key), out.sb);
      if (info.name !== old.name || info.vlanPassthru !== old.vlanPassthru) note(old.sbUuid, old, info);
    } else {
      fresh.push(d);
    }
  }
  fresh.sort((a, b) => (a.nbUuid < b.nbUuid ? -1 : a.nbUuid > b.nbUuid ? 1 : 0));
  const keyOf = new Map<Uuid, number>();
  for (const d of fresh) {
    const k = data.preferredKeys.get(d.nbUuid);
    if (k !== undefined && k >= DATAPATH_KEY_MIN && k <= DATAPATH_KEY_MAX && !data.keys.has(k)) {
      data.keys.claim(k);
      keyOf.set(d.nbUuid, k);
    }
  }
  for (const d of fresh) {
    let key = keyOf.get(d.nbUuid);
    if (key === undefined) key = data.keys.allocate();
    if (key === undefined) continue; // Key space exhausted: ovn-northd also leaves the datapath out.
    const sbUuid = datapathSbUuid(d.nbUuid);
    const info: DatapathInfo = { nbUuid: d.nbUuid, kind: d.kind, sbUuid, logicalDatapath: Object.freeze([sbUuid]), key, name: d.name, vlanPassthru: d.vlanPassthru };
    data.byNb.set(d.nbUuid, info);
    data.bySb.set(sbUuid, info);
    data.table.put(bindingRow(d, sbUuid, key), out.sb);
    note(sbUuid, undefined, info);
  }
}

export function datapathsNode(): EngineNode<DatapathsData, DatapathsChange> {
  return {
    name: 'datapaths',
    inputs: ['nb'],
    init: () => ({ byNb: new Map(), bySb: new Map(), keys: new KeyAllocator(DATAPATH_KEY_MIN, DATAPATH_KEY_MAX), table: new SbTable('Datapath_Binding'), preferredKeys: new Map() }),
    newChange: () => ({ sb: new SbChangeSet(), datapaths: new Map() }),
    isEmpty: (c) => c.sb.size === 0 && c.datapaths.size === 0,
    recompute(data: DatapathsData, inputs: NodeInputs, out: DatapathsChange): void {
      out.sb.maybeTrackWhole(data.table);
      const db = inputs.data<Database>('nb');
      const touched = new Map<Uuid, Desired | undefined>();
      for (const nbUuid of data.byNb.keys()) touched.set(nbUuid, undefined);
      for (const table of DP_TABLES) {
        for (const nbUuid of nbRows(db, table).keys()) touched.set(nbUuid, desiredOf(db, table, nbUuid));
      }
      applyDesired(data, touched, out);
    },
    handlers: {
      nb(data: DatapathsData, change: unknown, inputs: NodeInputs, out: DatapathsChange) {
        const db = inputs.data<Database>('nb');
        const touched = new Map<Uuid, Desired | undefined>();
        for (const c of (change as DbDelta).changes) {
          if (c.table !== 'Logical_Switch' && c.table !== 'Logical_Router') continue;
          touched.set(c.uuid, desiredOf(db, c.table, c.uuid));
        }
        if (touched.size === 0) return 'unchanged';
        applyDesired(data, touched, out);
        return 'handled';
      },
    },
  };
}
