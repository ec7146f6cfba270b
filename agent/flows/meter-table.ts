// Meter ids, handed out as ovn-controller 23.03's meter table does (lib/extend-table.c): one id
// per meter name, the lowest free id from 1 up, held while some source (a logical flow) uses the
// name. A name (an SB Meter's, or the description set_meter gives its own meter: see
// actions/set-meter.ts) that no source uses any more retires: its id stays taken until the
// owner has deleted the meter from the switch (settle), and the name coming back before then
// gets the same id again, as ovn-controller finds it among its installed meters. So an id is
// never given to another meter while the switch may still hold the old one under it.
//
// Also what a name's meter is (meterSpecOf): the SB Meter of that name, as ovn-controller's
// update_ovs_meter makes it, or the meter a set_meter name describes. Pure bookkeeping: no I/O.

import assert from 'node:assert/strict';
import type * as sb from '../../ovsdb/rows/sb.js';
import { SET_METER_PREFIX, setMeterOf } from '../actions/set-meter.js';
import { OFPMF, type MeterBand, type MeterSpec } from '../openflow/types.js';

/** Meter ids in use at once (ids 1..METER_IDS_MAX). Open vSwitch's userspace datapath holds
 *  262,144 meters per process; one chassis's QoS rules and logging meters need far fewer. */
export const METER_IDS_MAX = 65_536;

/** Bands one meter may have: Open vSwitch's MAX_BANDS (userspace and kernel datapaths). */
export const METER_BANDS_MAX = 8;

/** A binary min-heap of numbers: the free ids, lowest first. */
class MinHeap {
  private readonly a: number[] = [];
  get size(): number {
    return this.a.length;
  }
  push(x: number): void {
    const a = this.a;
    a.push(x);
    for (let i = a.length - 1; i > 0;) {
      const p = (i - 1) >> 1;
      if ((a[p] as number) <= x) break;
      a[i] = a[p] as number;
      a[p] = x;
      i = p;
    }
  }
  pop(): number | undefined {
    const a = this.a;
    const top = a[0];
    const last = a.pop();
    if (a.length === 0 || last === undefined) return top;
    a[0] = last;
    for (let i = 0; ;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < a.length && (a[l] as number) < (a[m] as number)) m = l;
      if (r < a.length && (a[r] as number) < (a[m] as number)) m = r;
      if (m === i) break;
      [a[i], a[m]] = [a[m] as number, a[i] as number];
      i = m;
    }
    return top;
  }
}

export class MeterTable {
  /** Names in use → their id and the sources using them. */
  private readonly byName = new Map<string, { readonly id: number; readonly users: Set<string> }>();
  private readonly byId = new Map<number, string>();
  /** Source → the names it uses. */
  private readonly usesOf = new Map<string, readonly string[]>();
  /** Names allocated since the last setUses whose users are not known yet. */
  private readonly fresh = new Set<string>();
  /** Retired names → their ids, and back: taken until settled. */
  private readonly retiring = new Map<string, number>();
  private readonly retiringIds = new Map<number, string>();
  /** Retiring ids whose deletion has gone out with a batch (markSent), to free on settle. */
  private readonly sent = new Set<number>();
  private readonly free = new MinHeap();
  /** The lowest id never handed out. */
  private next = 1;
  /** Ids whose name came or went since the last takeChanged. */
  private readonly changed = new Set<number>();

  constructor(private readonly idsMax = METER_IDS_MAX) {
    assert(Number.isInteger(idsMax) && idsMax >= 1 && idsMax <= 0xffff0000, 'meter ids are 1..OFPM13_MAX');
  }

  /** Ids in use. */
  get size(): number {
    return this.byName.size;
  }

  idOf(name: string): number | undefined {
    return this.byName.get(name)?.id;
  }

  nameOf(id: number): string | undefined {
    return this.byId.get(id);
  }

  /** Every name in use with its id. */
  entries(): IterableIterator<[string, { readonly id: number }]> {
    return this.byName.entries();
  }

  /**
   * The id of `name`, allocated if the name has none (its retiring id if it has one), or
   * undefined when idsMax ids are taken. The caller says which sources use it with setUses;
   * a name allocated and then used by no source retires at the next setUses.
   */
  use(name: string): number | undefined {
    const have = this.byName.get(name);
    if (have !== undefined) return have.id;
    let id = this.retiring.get(name);
    if (id !== undefined) {
      this.retiring.delete(name);
      this.retiringIds.delete(id);
      this.sent.delete(id);
    } else {
      id = this.free.pop() ?? (this.next <= this.idsMax ? this.next++ : undefined);
      if (id === undefined) return undefined;
    }
    this.byName.set(name, { id, users: new Set() });
    this.byId.set(id, name);
    this.fresh.add(name);
    this.changed.add(id);
    return id;
  }

  /** The names `source` uses now (each given an id by use()); names left without users retire. */
  setUses(source: string, names: Iterable<string>): void {
    const next = [...new Set(names)];
    for (const name of this.usesOf.get(source) ?? []) {
      if (next.includes(name)) continue;
      const e = this.byName.get(name);
      if (e === undefined) continue;
      e.users.delete(source);
      if (e.users.size === 0) this.retire(name);
    }
    for (const name of next) {
      const e = this.byName.get(name);
      assert(e !== undefined, `meter ${name} used by ${source} without an id`);
      e.users.add(source);
    }
    if (next.length > 0) this.usesOf.set(source, next);
    else this.usesOf.delete(source);
    // Names a compile allocated that no source ended up using.
    for (const name of this.fresh) {
      const e = this.byName.get(name);
      if (e !== undefined && e.users.size === 0) this.retire(name);
    }
    this.fresh.clear();
  }

  private retire(name: string): void {
    const e = this.byName.get(name);
    if (e === undefined) return;
    this.byName.delete(name);
    this.byId.delete(e.id);
    this.retiring.set(name, e.id);
    this.retiringIds.set(e.id, name);
    this.changed.add(e.id);
  }

  /** Ids whose name came or went since the last call. */
  takeChanged(): number[] {
    const out = [...this.changed];
    this.changed.clear();
    return out;
  }

  /** The ids retiring now go out (deleted if installed) with the batch being built. */
  markSent(): void {
    for (const id of this.retiringIds.keys()) this.sent.add(id);
  }

  /** The switch confirmed the batch: the ids it deleted are free again. */
  settle(): void {
    for (const id of this.sent) {
      const name = this.retiringIds.get(id);
      if (name === undefined) continue;
      this.retiringIds.delete(id);
      this.retiring.delete(name);
      this.free.push(id);
    }
    this.sent.clear();
  }
}

/** What a name's meter reads of the SB: its Meter by name and the Meter_Bands it lists. */
export interface MeterRows {
  meter(name: string): sb.Meter | undefined;
  meterBand(uuid: string): sb.Meter_Band | undefined;
}

/**
 * The meter id `id` stands for when it is named `name`, or undefined when there is none to
 * install: a set_meter description, as add_meter_string reads it (kbps, stats, one drop band,
 * burst when given); or the SB Meter of that name, as update_ovs_meter makes it (stats, its
 * unit, burst when a band has a burst size; its drop bands in the order the row lists them). A
 * name with no SB Meter (ovn-controller: "could not find meter named"), whose bands are not all
 * there, or with more bands than METER_BANDS_MAX has none.
 */
export function meterSpecOf(id: number, name: string, rows: MeterRows): MeterSpec | undefined {
  if (name.startsWith(SET_METER_PREFIX)) {
    const d = setMeterOf(name);
    if (d === undefined) return undefined;
    return {
      meterId: id, flags: OFPMF.KBPS | OFPMF.STATS | (d.burst !== 0 ? OFPMF.BURST : 0),
      bands: [{ type: 'drop', rate: d.rate, burstSize: d.burst }],
    };
  }
  const m = rows.meter(name);
  if (m === undefined || m.bands.length === 0 || m.bands.length > METER_BANDS_MAX) return undefined;
  const bands: MeterBand[] = [];
  let flags = OFPMF.STATS | (m.unit === 'pktps' ? OFPMF.PKTPS : OFPMF.KBPS);
  for (const u of m.bands) {
    const b = rows.meterBand(u);
    if (b === undefined || b.action !== 'drop') return undefined;
    bands.push({ type: 'drop', rate: b.rate, burstSize: b.burst_size });
    if (b.burst_size !== 0) flags |= OFPMF.BURST;
  }
  return { meterId: id, flags, bands };
}
