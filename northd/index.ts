// The northd projection's public surface. `createNorthd()` keeps an incrementally maintained
// SB view: feed it every committed NB delta in order with `apply`, and it returns the SB
// changes. `recompute` is the oracle: a fresh, full computation from an NB database.
//
// Tunnel keys are history: the key of a datapath or port is chosen when it first appears and
// kept while it lives, so no function of the NB state alone can give them. A recompute (like
// ovn-northd's, which reads them back from the SB) therefore takes the previous SB view and
// keeps the keys of the objects that are still there.
import type { Database, DbDelta, Row, Uuid } from '../ovsdb/index.js';
import type * as sb from '../ovsdb/rows/sb.js';
import type { DatapathsData } from './datapaths.js';
import { datapathsNode } from './datapaths.js';
import type { NodeStats } from './engine.js';
import { Engine, erase } from './engine.js';
import type { LflowsData } from './lflows/node.js';
import { lflowsNode } from './lflows/node.js';
import type { MulticastData } from './multicast.js';
import { multicastNode } from './multicast.js';
import type { ChassisOwnedColumns, PortsData, SbOwnedData } from './ports.js';
import { portsNode } from './ports.js';
import type { SbChangeSet, SbDelta, SbTable, SbView } from './sb-changes.js';
import { SbChangeSet as ChangeSet } from './sb-changes.js';
import type { SbGlobalData } from './sb-global.js';
import { sbGlobalNode } from './sb-global.js';

export type { SbDelta, SbView } from './sb-changes.js';
export type { NodeStats } from './engine.js';
export type { ChassisOwnedColumns } from './ports.js';
export { hashUuid } from './hash.js';
export { LS_EGRESS_STAGES, LS_INGRESS_STAGES, LR_EGRESS_STAGES, LR_INGRESS_STAGES } from './stages.js';

export interface Northd {
  /** Applies one committed NB transaction: `nb` is the database after it, `delta` its changes. */
  apply(nb: Database, delta: DbDelta): SbDelta;
  /**
   * Records what agents reported for some ports' chassis-owned Port_Binding columns (chassis,
   * encap, up, ...; undefined = forget the port's report) and returns the SB changes. `nb` is
   * the current NB database. Reports for ports without a binding are kept for when it appears.
   */
  setChassisOwned(nb: Database, updates: ReadonlyMap<string, ChassisOwnedColumns | undefined>): SbDelta;
  /**
   * A fresh full computation; tunnel keys of objects alive in `previous` are kept, and
   * chassis-owned columns come from `chassisOwned` (none when absent).
   */
  recompute(nb: Database, previous?: SbView, chassisOwned?: ReadonlyMap<string, ChassisOwnedColumns>): SbView;
  /** The chassis-owned columns as last reported, by logical port. */
  chassisOwned(): ReadonlyMap<string, ChassisOwnedColumns>;
  /** The current SB rows: table → uuid → row. */
  view(): SbView;
  /** Per-node counters: recomputes and incremental runs. */
  stats(): Record<string, NodeStats>;
}

function buildEngine(): Engine {
  return new Engine(['nb', 'sb_owned'], [erase(datapathsNode()), erase(portsNode()), erase(multicastNode()), erase(lflowsNode()), erase(sbGlobalNode())]);
}

function viewOf(engine: Engine): SbView {
  const tables: SbTable[] = [
    engine.data<DatapathsData>('datapaths').table,
    engine.data<LflowsData>('lflows').table,
    engine.data<MulticastData>('multicast').table,
    engine.data<PortsData>('ports').table,
    engine.data<SbGlobalData>('sb_global').table,
  ];
  const out = new Map<string, ReadonlyMap<Uuid, Row>>();
  for (const t of [...tables].sort((a, b) => (a.table < b.table ? -1 : 1))) out.set(t.table, t.rows);
  return out;
}

function mergedDelta(changes: ReadonlyMap<string, unknown>): SbDelta {
  const all = new ChangeSet();
  for (const [name, c] of changes) {
    const sbPart = name === 'lflows' || name === 'sb_global' ? (c as SbChangeSet) : (c as { sb: SbChangeSet }).sb;
    all.merge(sbPart);
  }
  return { changes: all.toChanges() };
}

/** Seeds a fresh engine with the tunnel keys of `previous`, before its first (full) run. */
function seedKeys(engine: Engine, previous: SbView): void {
  const dps = engine.data<DatapathsData>('datapaths');
  for (const row of previous.get('Datapath_Binding')?.values() ?? []) {
    const r = row as unknown as sb.Datapath_Binding;
    const nbUuid = r.external_ids.get('logical-switch') ?? r.external_ids.get('logical-router');
    if (nbUuid !== undefined) dps.preferredKeys.set(nbUuid, r.tunnel_key);
  }
  const ports = engine.data<PortsData>('ports');
  for (const row of previous.get('Port_Binding')?.values() ?? []) {
    const r = row as unknown as sb.Port_Binding;
    ports.preferredKeys.set(`${r.datapath} ${r.logical_port}`, r.tunnel_key);
  }
}

export function createNorthd(): Northd {
  const engine = buildEngine();
  const owned = new Map<string, ChassisOwnedColumns>();
  let started = false;
  const run = (nb: Database, nbChange: DbDelta | undefined, ownedChange: ReadonlySet<string> | undefined): SbDelta => {
    const sources = new Map<string, { data: unknown; change: unknown }>([
      ['nb', { data: nb, change: nbChange }],
      ['sb_owned', { data: owned satisfies SbOwnedData, change: ownedChange }],
    ]);
    // The first run recomputes everything from the database, so its delta is not needed.
    const delta = mergedDelta(engine.run(sources, !started));
    started = true;
    return delta;
  };
  return {
    apply: (nb, delta) => run(nb, delta, undefined),
    setChassisOwned(nb, updates): SbDelta {
      for (const [name, columns] of updates) {
        if (columns === undefined) owned.delete(name);
        else owned.set(name, columns);
      }
      return run(nb, undefined, new Set(updates.keys()));
    },
    recompute(nb, previous, chassisOwned): SbView {
      const fresh = buildEngine();
      if (previous !== undefined) seedKeys(fresh, previous);
      const ownedData: SbOwnedData = chassisOwned ?? new Map();
      fresh.run(new Map([['nb', { data: nb, change: undefined }], ['sb_owned', { data: ownedData, change: undefined }]]));
      return viewOf(fresh);
    },
    chassisOwned: () => owned,
    view: () => viewOf(engine),
    stats: () => engine.stats(),
  };
}
