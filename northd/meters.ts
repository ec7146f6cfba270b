// SB Meter and Meter_Band (sync_meters): a copy of every NB Meter with its bands, and for each
// ACL that logs through a fair meter (NB Meter.fair = true) a private copy of that meter named
// "<meter>__<ACL UUID>", so that each such ACL's log is rate-limited on its own (the ACL's flow
// names the copy: acls.ts). Every NB ACL counts, applied to a switch or not, as in ovn-northd.
//
// Rows are keyed by name. A meter's bands are written in (rate, burst_size, action) order, each
// band row named by the meter and its place, so a replica derives the same UUIDs. Where an NB
// meter's name is also some ACL's copy name, the copy wins (ovn-northd writes the NB meters
// first, then the copies over them).
//
// Incremental: an NB Meter or Meter_Band change derives its meter's names again (its own and its
// copies); an ACL change its own copy's name.
import type { Database, DbDelta, Uuid } from '../ovsdb/index.js';
import type * as nb from '../ovsdb/rows/nb.js';
import type * as sb from '../ovsdb/rows/sb.js';
import type { EngineNode, NodeInputs } from './engine.js';
import { hashUuid } from './hash.js';
import { nbGet, nbRows } from './nb.js';
import { SbChangeSet, SbTable, versioned } from './sb-changes.js';
import { addTo, removeFrom } from './static-mac-bindings.js';

export interface MetersData {
  readonly meters: SbTable;
  readonly bands: SbTable;
  /** NB meter name → the ACLs that log through it (log = true and meter = that name). */
  readonly loggers: Map<string, Set<Uuid>>;
  /** ACL → the meter it logs through, as last read. */
  readonly loggerOf: Map<Uuid, string>;
  /** SB meter name → how many band rows it has. */
  readonly bandCount: Map<string, number>;
}

const meterUuid = (name: string): Uuid => hashUuid(['Meter', name]);
const bandUuid = (name: string, i: number): Uuid => hashUuid(['Meter_Band', name, String(i)]);

/** The name of ACL `acl`'s private copy of fair meter `meter`. */
export function fairCopyName(meter: string, acl: Uuid): string {
  return `${meter}__${acl}`;
}

const COPY_NAME = /^(.*)__([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

function meterByName(db: Database, name: string): nb.Meter | undefined {
  return db.findUnique('Meter', ['name'], [name]) as nb.Meter | undefined;
}

/** Notes how ACL `uuid` logs now; the copy names it named or names are dirty. */
function trackAcl(db: Database, data: MetersData, uuid: Uuid, dirty: Set<string>): void {
  const was = data.loggerOf.get(uuid);
  if (was !== undefined) {
    removeFrom(data.loggers, was, uuid);
    data.loggerOf.delete(uuid);
    dirty.add(fairCopyName(was, uuid));
  }
  const row = nbGet<nb.ACL>(db, 'ACL', uuid);
  const meter = row?.log === true ? row.meter[0] : undefined;
  if (meter === undefined) return;
  addTo(data.loggers, meter, uuid);
  data.loggerOf.set(uuid, meter);
  dirty.add(fairCopyName(meter, uuid));
}

/** A meter name and every copy name of it are dirty. */
function meterDirty(data: MetersData, name: string, dirty: Set<string>): void {
  dirty.add(name);
  for (const acl of data.loggers.get(name) ?? []) dirty.add(fairCopyName(name, acl));
}

/** The NB meter SB meter `name` copies: an ACL's fair copy, else the NB meter of that name. */
function sourceOf(db: Database, data: MetersData, name: string): nb.Meter | undefined {
  const copy = COPY_NAME.exec(name);
  if (copy !== null) {
    const [, meter, acl] = copy as unknown as [string, string, Uuid];
    const m = data.loggers.get(meter)?.has(acl) === true ? meterByName(db, meter) : undefined;
    if (m !== undefined && m.fair[0] === true) return m;
  }
  return meterByName(db, name);
}

function write(db: Database, data: MetersData, names: Iterable<string>, out: SbChangeSet): void {
  for (const name of [...new Set(names)].sort()) {
    const src = sourceOf(db, data, name);
    const bands: nb.Meter_Band[] = [];
    for (const u of src?.bands ?? []) {
      const b = nbGet<nb.Meter_Band>(db, 'Meter_Band', u);
      if (b !== undefined) bands.push(b);
    }
    bands.sort((a, b) => a.rate - b.rate || a.burst_size - b.burst_size || (a.action < b.action ? -1 : a.action > b.action ? 1 : 0));
    const had = data.bandCount.get(name) ?? 0;
    for (let i = src === undefined ? 0 : bands.length; i < had; i++) data.bands.remove(bandUuid(name, i), out);
    if (src === undefined) {
      data.meters.remove(meterUuid(name), out);
      data.bandCount.delete(name);
      continue;
    }
    const uuids = bands.map((b, i) => {
      const uuid = bandUuid(name, i);
      data.bands.put(versioned<sb.Meter_Band>({ _uuid: uuid, _version: '', action: b.action, rate: b.rate, burst_size: b.burst_size }), out);
      return uuid;
    });
    data.bandCount.set(name, bands.length);
    data.meters.put(versioned<sb.Meter>({ _uuid: meterUuid(name), _version: '', name, unit: src.unit, bands: uuids.sort() }), out);
  }
}

export function metersNode(): EngineNode<MetersData, SbChangeSet> {
  return {
    name: 'meters',
    inputs: ['nb'],
    init: () => ({ meters: new SbTable('Meter'), bands: new SbTable('Meter_Band'), loggers: new Map(), loggerOf: new Map(), bandCount: new Map() }),
    newChange: () => new SbChangeSet(),
    isEmpty: (c) => c.size === 0,
    recompute(data: MetersData, inputs: NodeInputs, out: SbChangeSet): void {
      out.maybeTrackWhole(data.meters);
      out.maybeTrackWhole(data.bands);
      const db = inputs.data<Database>('nb');
      const dirty = new Set<string>(data.bandCount.keys());
      for (const acl of [...new Set([...data.loggerOf.keys(), ...nbRows(db, 'ACL').keys()])].sort()) trackAcl(db, data, acl, dirty);
      for (const m of nbRows<nb.Meter>(db, 'Meter').values()) meterDirty(data, m.name, dirty);
      write(db, data, dirty, out);
    },
    handlers: {
      nb(data: MetersData, change: unknown, inputs: NodeInputs, out: SbChangeSet) {
        const db = inputs.data<Database>('nb');
        const dirty = new Set<string>();
        for (const c of (change as DbDelta).changes) {
          if (c.table === 'ACL') {
            trackAcl(db, data, c.uuid, dirty);
          } else if (c.table === 'Meter') {
            if (c.kind !== 'insert') meterDirty(data, (c.old as unknown as nb.Meter).name, dirty);
            if (c.kind !== 'delete') meterDirty(data, (c.new as unknown as nb.Meter).name, dirty);
          } else if (c.table === 'Meter_Band') {
            // A band's meters (a band deleted left its meters' bands column changed too).
            for (const m of db.strongReferrers(c.uuid).keys()) {
              const row = nbGet<nb.Meter>(db, 'Meter', m);
              if (row !== undefined) meterDirty(data, row.name, dirty);
            }
          }
        }
        if (dirty.size === 0) return 'unchanged';
        write(db, data, dirty, out);
        return 'handled';
      },
    },
  };
}
