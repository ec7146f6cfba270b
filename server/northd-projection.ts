// The northd projection as the NB state machine's Projection: every committed NB delta goes
// through `createNorthd().apply`, and the resulting SB delta is handed, tagged with its
// revision, to the SB listeners (the future agent stream and SB watches). Its snapshot is
// northd's history (tunnel keys, chassis-owned reports: Port_Binding columns and
// Service_Monitor.status, registered Chassis, the drop sampling kept in force) rather than the SB rows: a restore recomputes
// the rows from the NB database with that history, which gives exactly the view of a replica
// that applied the whole log prefix. Everything here runs inside apply, so it is pure:
// no clock, no randomness, no I/O.
import assert from 'node:assert/strict';
import { Packr } from 'msgpackr';
import type { Database, DbDelta, Row, Uuid } from '../ovsdb/index.js';
import type { ChassisOwnedColumns, IgmpGroupReport, NodeStats, Northd, NorthdHistory, SbDelta, SbView } from '../northd/index.js';
import { createNorthd } from '../northd/index.js';
import { DROP_DOMAIN_LIMIT } from '../northd/drop-sampling.js';
import { SbChangeSet } from '../northd/sb-changes.js';
import type { Projection, RestoredChassisDb } from './nb-state-machine.js';

/** Called with every SB change in revision order; a listener must not throw. */
export type SbChangeListener = (revision: number, delta: SbDelta) => void;

export interface NorthdProjectionStats {
  readonly revision: number;
  readonly applies: number;
  readonly restores: number;
  /** SB row changes handed to listeners so far. */
  readonly sbRowChanges: number;
  /** Rows per SB table in the current view. */
  readonly rows: Readonly<Record<string, number>>;
  /** The engine's per-node counters (since the last reset or restore). */
  readonly engine: Readonly<Record<string, NodeStats>>;
}

const packr = new Packr({ useRecords: false });
/**
 * 4: format 3's seven parts, then the drop sampling kept in force ([collector set, domain]).
 *    Written only when there is one: NB_Global's options name a domain ovn-northd refuses while
 *    sampling is on (northd/drop-sampling.ts); format 3 or 2 otherwise, so that builds before it
 *    read every other history (they sample no drops, so their flows differ from this build's
 *    while sampling is on anyway). A history without one keeps nothing: the options say.
 * 3: [3, datapath keys, port keys, chassis-owned columns, Service_Monitor statuses, registered
 *    Chassis (name, UUID), learned multicast groups' keys (datapath, name, key)]. Written only
 *    when there are such keys (chassis write IGMP_Group from apply version 3 on, when every
 *    member reads this format); format 2 otherwise, which the builds before it read.
 * 2 (still written): [2, datapath keys, port keys, chassis-owned columns, Service_Monitor
 *    statuses, registered Chassis (name, UUID)].
 * 1 (still read, the last released): [1, datapath keys, port keys, chassis-owned columns],
 *    from before health checks and before northd read Chassis: no statuses were reported then,
 *    and the restore takes the Chassis from the chassis database restored beside it.
 */
const historyFormat = 4;
const historyFormatV3 = 3;
const historyFormatV2 = 2;
const historyFormatV1 = 1;
const emptyDelta: DbDelta = { changes: [] };

type ColumnPairs = [string, unknown][];

/** Chassis-owned columns as sorted [column, value] pairs, so equal reports encode equally. */
function columnPairs(c: ChassisOwnedColumns): ColumnPairs {
  return Object.entries(c)
    .filter(([, v]) => v !== undefined)
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
}

export function encodeNorthdHistory(h: NorthdHistory): Uint8Array {
  const owned = h.chassisOwned.map(([name, c]) => [name, columnPairs(c)]);
  if (h.dropSampling !== undefined) return packr.pack([historyFormat, h.datapathKeys, h.portKeys, owned, h.serviceMonitorStatus, h.chassis, h.igmpKeys, h.dropSampling]);
  if (h.igmpKeys.length === 0) return packr.pack([historyFormatV2, h.datapathKeys, h.portKeys, owned, h.serviceMonitorStatus, h.chassis]);
  return packr.pack([historyFormatV3, h.datapathKeys, h.portKeys, owned, h.serviceMonitorStatus, h.chassis, h.igmpKeys]);
}

/** A format-4 history's drop sampling, checked: two integers, a collector set that is on and a domain ovn-northd takes. */
function isHeldDropSampling(v: unknown): v is [number, number] {
  if (!Array.isArray(v) || v.length !== 2) return false;
  const [collectorSet, domain] = v as unknown[];
  return Number.isInteger(collectorSet) && Number.isInteger(domain) && (collectorSet as number) >= 1 && (collectorSet as number) <= 0xffffffff &&
    (domain as number) >= 0 && (domain as number) < DROP_DOMAIN_LIMIT;
}

/** `legacyChassis`: the registered Chassis for a format-1 history, which has none. */
export function decodeNorthdHistory(data: Uint8Array, legacyChassis: readonly (readonly [string, Uuid])[] = []): NorthdHistory {
  const v: unknown = packr.unpack(data);
  const known = Array.isArray(v) && ((v.length === 8 && v[0] === historyFormat) || (v.length === 7 && v[0] === historyFormatV3) || (v.length === 6 && v[0] === historyFormatV2) ||
    (v.length === 4 && v[0] === historyFormatV1));
  assert.ok(known, 'northd snapshot: unknown format');
  const [, datapathKeys, portKeys, owned, statuses, registered, learned, held] = v as [
    number, [Uuid, number][], [Uuid, string, number][], [string, ColumnPairs][], [Uuid, string][] | undefined, (readonly [string, Uuid])[] | undefined,
    [Uuid, string, number][] | undefined, unknown,
  ];
  const serviceMonitorStatus = statuses ?? [];
  const chassis = registered ?? legacyChassis;
  const igmpKeys = learned ?? [];
  assert.ok(
    Array.isArray(datapathKeys) && Array.isArray(portKeys) && Array.isArray(owned) && Array.isArray(serviceMonitorStatus) && Array.isArray(chassis) && Array.isArray(igmpKeys),
    'northd snapshot: malformed',
  );
  const chassisOwned = owned.map(([name, pairs]) => [name, Object.fromEntries(pairs) as ChassisOwnedColumns] as const);
  const history: NorthdHistory = { datapathKeys, portKeys, chassisOwned, serviceMonitorStatus, chassis, igmpKeys };
  if ((v as unknown[])[0] !== historyFormat) return history;
  assert.ok(isHeldDropSampling(held), 'northd snapshot: malformed drop sampling');
  return { ...history, dropSampling: held };
}

/** The SB changes that turn view `a` into view `b`, in (table, uuid) order. */
export function diffViews(a: SbView, b: SbView): SbDelta {
  const changes = new SbChangeSet();
  const tables = new Set([...a.keys(), ...b.keys()]);
  for (const table of tables) {
    const before = a.get(table) ?? new Map<Uuid, Row>();
    const after = b.get(table) ?? new Map<Uuid, Row>();
    for (const [uuid, row] of before) {
      const now = after.get(uuid);
      // Rows present in both are compared column by column (toChanges drops equal ones).
      if (now !== row) changes.record(table, uuid, row, now);
    }
    for (const [uuid, row] of after) if (!before.has(uuid)) changes.record(table, uuid, undefined, row);
  }
  return { changes: changes.toChanges() };
}

export class NorthdProjection implements Projection {
  private northd: Northd = createNorthd();
  private rev = 0;
  private applies = 0;
  private restores = 0;
  private sbRowChanges = 0;
  private last: { readonly revision: number; readonly delta: SbDelta } | undefined;
  private readonly listeners = new Set<SbChangeListener>();

  /** The revision of the last applied NB change or restore. */
  get revision(): number {
    return this.rev;
  }

  /**
   * Registers a listener for SB changes. Consumers must apply every delta in order: folding
   * them over an empty view gives `view()`. A restore is reported as one delta (the
   * difference between the view before and the one restored) at the snapshot's revision.
   */
  onSbChange(listener: SbChangeListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The last non-empty SB delta and its revision. */
  lastChange(): { readonly revision: number; readonly delta: SbDelta } | undefined {
    return this.last;
  }

  /** The current SB rows: table → uuid → row. Live maps, read-only: copy what you keep. */
  view(): SbView {
    return this.northd.view();
  }

  /** northd's history at the current revision (what the snapshot carries). */
  history(): NorthdHistory {
    return this.northd.history();
  }

  stats(): NorthdProjectionStats {
    const rows: Record<string, number> = {};
    for (const [table, r] of this.northd.view()) rows[table] = r.size;
    return { revision: this.rev, applies: this.applies, restores: this.restores, sbRowChanges: this.sbRowChanges, rows, engine: this.northd.stats() };
  }

  apply(nb: Database, delta: DbDelta, revision: number): void {
    // One revision may carry two steps: a chassis transaction's port reports, then the NB
    // changes they cause (Logical_Switch_Port.up, hv_cfg).
    assert.ok(revision >= this.rev, `northd projection: revision ${revision} after ${this.rev}`);
    this.applies++;
    this.emit(revision, this.northd.apply(nb, delta));
  }

  reset(nb: Database, revision: number): void {
    this.replace(nb, createNorthd(), revision);
  }

  snapshot(): Uint8Array {
    return encodeNorthdHistory(this.northd.history());
  }

  restore(nb: Database, data: Uint8Array | undefined, revision: number, chassisDb?: RestoredChassisDb): void {
    this.restores++;
    const legacy = [...(chassisDb?.chassis ?? [])].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    this.replace(nb, createNorthd(data === undefined ? undefined : decodeNorthdHistory(data, legacy), chassisDb), revision);
  }

  portBindings(): ReadonlyMap<Uuid, Row> {
    return this.northd.view().get('Port_Binding') ?? new Map<Uuid, Row>();
  }

  chassisOwned(): ReadonlyMap<string, ChassisOwnedColumns> {
    return this.northd.chassisOwned();
  }

  setChassisOwned(
    nb: Database, updates: ReadonlyMap<string, ChassisOwnedColumns | undefined>, revision: number, chassis?: ReadonlyMap<string, Uuid | undefined>,
    hostnames?: ReadonlyMap<Uuid, string | undefined>,
  ): void {
    assert.ok(revision >= this.rev, `northd projection: revision ${revision} after ${this.rev}`);
    this.applies++;
    this.emit(revision, this.northd.setChassisOwned(nb, updates, chassis, hostnames));
  }

  sbGlobalUuid(): Uuid | undefined {
    for (const uuid of this.northd.view().get('SB_Global')?.keys() ?? []) return uuid;
    return undefined;
  }

  serviceMonitors(): ReadonlyMap<Uuid, Row> {
    return this.northd.view().get('Service_Monitor') ?? new Map<Uuid, Row>();
  }

  bfdSessions(): ReadonlyMap<Uuid, Row> {
    return this.northd.view().get('BFD') ?? new Map<Uuid, Row>();
  }

  serviceMonitorStatus(): ReadonlyMap<Uuid, string> {
    return this.northd.serviceMonitorStatus();
  }

  setServiceMonitorStatus(nb: Database, updates: ReadonlyMap<Uuid, string | undefined>, revision: number): void {
    assert.ok(revision >= this.rev, `northd projection: revision ${revision} after ${this.rev}`);
    this.applies++;
    this.emit(revision, this.northd.setServiceMonitorStatus(nb, updates));
  }

  setIgmpGroups(nb: Database, updates: ReadonlyMap<Uuid, IgmpGroupReport | undefined>, revision: number): void {
    assert.ok(revision >= this.rev, `northd projection: revision ${revision} after ${this.rev}`);
    this.applies++;
    this.emit(revision, this.northd.setIgmpGroups(nb, updates));
  }

  setVxlanMode(nb: Database, vxlan: boolean, revision: number): void {
    assert.ok(revision >= this.rev, `northd projection: revision ${revision} after ${this.rev}`);
    this.applies++;
    this.emit(revision, this.northd.setVxlanMode(nb, vxlan));
  }

  /** Swaps in `fresh`, runs its first (full) computation and reports the difference. */
  private replace(nb: Database, fresh: Northd, revision: number): void {
    const before = this.northd.view();
    const wasEmpty = [...before.values()].every((rows) => rows.size === 0);
    // A fresh northd's first delta inserts every row of its view: when there was no view
    // before (a node starting up), that is already the difference, without a second pass.
    const first = fresh.apply(nb, emptyDelta);
    this.northd = fresh;
    this.emit(revision, wasEmpty ? first : diffViews(before, fresh.view()));
  }

  private emit(revision: number, delta: SbDelta): void {
    this.rev = revision;
    if (delta.changes.length === 0) return;
    this.last = { revision, delta };
    this.sbRowChanges += delta.changes.length;
    for (const l of this.listeners) l(revision, delta);
  }
}
