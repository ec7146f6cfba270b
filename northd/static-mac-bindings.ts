// SB Static_MAC_Binding: one row per NB Static_MAC_Binding whose logical_port is a router port
// with a datapath (build_static_mac_binding_table), with the port's router datapath, the IP, the
// MAC and override_dynamic_mac as the NB row has them. The agent turns them into the MAC
// bindings its routers resolve with.
//
// Rows are keyed by (logical_port, ip), as ovn-northd looks them up; when two NB rows share a key
// the lowest UUID wins, so every replica picks the same. Unlike ovn-northd, which keeps an SB row
// it made while any NB row still has its key (even after the router port went away), the view
// here is a function of the NB state: a row goes with its router port.
//
// Incremental: an NB row change derives its key again; a router port appearing, going or moving
// derives the keys naming it again.
import type { Database, DbDelta, Uuid } from '../ovsdb/index.js';
import type * as nb from '../ovsdb/rows/nb.js';
import type * as sb from '../ovsdb/rows/sb.js';
import type { EngineNode, NodeInputs } from './engine.js';
import { hashUuid } from './hash.js';
import { nbGet, nbRows } from './nb.js';
import type { PortsChange, PortsData } from './ports.js';
import { SbChangeSet, SbTable, versioned } from './sb-changes.js';

export interface StaticMacBindingsData {
  readonly table: SbTable;
  /** Key "<logical_port>\n<ip>" → the NB rows with that key. */
  readonly byKey: Map<string, Set<Uuid>>;
  /** NB row → its key as last read. */
  readonly keyOf: Map<Uuid, string>;
  /** Logical port name → the keys naming it. */
  readonly byPort: Map<string, Set<string>>;
}

const keyOf = (port: string, ip: string): string => `${port}\n${ip}`;

/** Adds `v` to the set `index` keeps under `k` (shared with service-monitors.ts's indexes). */
export function addTo<K, V>(index: Map<K, Set<V>>, k: K, v: V): void {
  let s = index.get(k);
  if (s === undefined) index.set(k, (s = new Set()));
  s.add(v);
}

/** Removes `v` from the set under `k`, and the key with its last value, so that no empty set is kept. */
export function removeFrom<K, V>(index: Map<K, Set<V>>, k: K, v: V): void {
  const s = index.get(k);
  s?.delete(v);
  if (s?.size === 0) index.delete(k);
}

/** Notes NB row `uuid` as it is now (or gone); returns the keys to derive again. */
function track(db: Database, data: StaticMacBindingsData, uuid: Uuid, dirty: Set<string>): void {
  const old = data.keyOf.get(uuid);
  if (old !== undefined) {
    removeFrom(data.byKey, old, uuid);
    data.keyOf.delete(uuid);
    if (!data.byKey.has(old)) removeFrom(data.byPort, old.slice(0, old.indexOf('\n')), old);
    dirty.add(old);
  }
  const row = nbGet<nb.Static_MAC_Binding>(db, 'Static_MAC_Binding', uuid);
  if (row === undefined) return;
  const k = keyOf(row.logical_port, row.ip);
  addTo(data.byKey, k, uuid);
  addTo(data.byPort, row.logical_port, k);
  data.keyOf.set(uuid, k);
  dirty.add(k);
}

function write(db: Database, ports: PortsData, data: StaticMacBindingsData, keys: Iterable<string>, out: SbChangeSet): void {
  for (const k of [...new Set(keys)].sort()) {
    const uuid = hashUuid(['Static_MAC_Binding', k]);
    const winner = [...(data.byKey.get(k) ?? [])].sort()[0];
    const row = winner === undefined ? undefined : nbGet<nb.Static_MAC_Binding>(db, 'Static_MAC_Binding', winner);
    const port = row === undefined ? undefined : ports.byName.get(row.logical_port);
    if (row === undefined || port === undefined || port.kind !== 'lrp') {
      data.table.remove(uuid, out);
      continue;
    }
    data.table.put(versioned<sb.Static_MAC_Binding>({
      _uuid: uuid, _version: '', logical_port: row.logical_port, ip: row.ip, mac: row.mac, override_dynamic_mac: row.override_dynamic_mac, datapath: port.dp,
    }), out);
  }
}

export function staticMacBindingsNode(): EngineNode<StaticMacBindingsData, SbChangeSet> {
  return {
    name: 'static_mac_bindings',
    inputs: ['nb', 'ports'],
    init: () => ({ table: new SbTable('Static_MAC_Binding'), byKey: new Map(), keyOf: new Map(), byPort: new Map() }),
    newChange: () => new SbChangeSet(),
    isEmpty: (c) => c.size === 0,
    recompute(data: StaticMacBindingsData, inputs: NodeInputs, out: SbChangeSet): void {
      out.maybeTrackWhole(data.table);
      const db = inputs.data<Database>('nb');
      const dirty = new Set<string>(data.byKey.keys());
      for (const uuid of [...new Set([...data.keyOf.keys(), ...nbRows(db, 'Static_MAC_Binding').keys()])].sort()) track(db, data, uuid, dirty);
      write(db, inputs.data<PortsData>('ports'), data, dirty, out);
    },
    handlers: {
      nb(data: StaticMacBindingsData, change: unknown, inputs: NodeInputs, out: SbChangeSet) {
        const db = inputs.data<Database>('nb');
        const dirty = new Set<string>();
        for (const c of (change as DbDelta).changes) if (c.table === 'Static_MAC_Binding') track(db, data, c.uuid, dirty);
        if (dirty.size === 0) return 'unchanged';
        write(db, inputs.data<PortsData>('ports'), data, dirty, out);
        return 'handled';
      },
      ports(data: StaticMacBindingsData, change: unknown, inputs: NodeInputs, out: SbChangeSet) {
        const dirty = new Set<string>();
        for (const [name, { old, new: now }] of (change as PortsChange).ports) {
          // Only whether it is a router port, and its datapath, are read.
          if (old?.kind === now?.kind && old?.dp === now?.dp) continue;
          for (const k of data.byPort.get(name) ?? []) dirty.add(k);
        }
        if (dirty.size === 0) return 'unchanged';
        write(inputs.data<Database>('nb'), inputs.data<PortsData>('ports'), data, dirty, out);
        return 'handled';
      },
    },
  };
}
