// Retained history of committed changes, for watches that resume from a revision: a queue of
// (revision, delta) bounded by count and by estimated bytes. A watcher whose revision fell out
// of it gets `compacted` with the oldest revision still available, and must re-read.
//
// With `floorBytes` set, the byte bound also follows the database's own size (as ovsdb-server
// bounds its transaction history by the database's): history larger than the data it leads to
// costs more to replay than a fresh read does. The history keeps a running estimate of that
// size from the deltas it is given (and a baseline on reset), and keeps at most
// max(floorBytes, databasePercent % of that size), never more than bytesMax.
//
// Memory: what the history costs beyond the current rows (which it shares with the database)
// is its change records and the old images of modified and deleted rows: on the SB view of the
// 10,000-port NB, ~8.6 MiB per member with the whole database's size retained, ~3 MiB with a
// quarter of it. A watcher that falls further behind than that re-reads, which costs it at most
// four times the replay it would otherwise have had.
import type { DbDelta, Row } from '../ovsdb/index.js';
import { isMapValue } from '../ovsdb/index.js';

export interface HistoryLimits {
  readonly revisionsMax: number;
  readonly bytesMax: number;
  /** When set, the byte bound is databasePercent % of the database's estimated size, but at least this. */
  readonly floorBytes?: number;
  /** With floorBytes: the share of the database's estimated size kept, in percent (default 100). */
  readonly databasePercent?: number;
}

export const historyDefaults: HistoryLimits = { revisionsMax: 100_000, bytesMax: 256 * 1024 * 1024, floorBytes: 8 * 1024 * 1024, databasePercent: 25 };

export interface HistoryItem {
  readonly revision: number;
  readonly delta: DbDelta;
  readonly bytes: number;
}

export type SinceResult =
  | { readonly kind: 'ok'; readonly items: readonly HistoryItem[] }
  | { readonly kind: 'compacted'; readonly minRevision: number };

/** A cheap, deterministic size estimate of a row: enough to bound memory, not exact. */
function rowBytes(row: Row): number {
  let n = 64;
  // for-in over a row (a plain object) reads its values without the array Object.values
  // makes: every member counts every row of every delta, NB and SB.
  for (const k in row) {
    const v = (row as Record<string, unknown>)[k];
    if (typeof v === 'string') n += 16 + v.length * 2;
    else if (Array.isArray(v)) n += 16 + v.length * 24;
    else if (isMapValue(v)) n += 32 + v.size * 48;
    else n += 8;
  }
  return n;
}

export function deltaBytes(delta: DbDelta): number {
  return sizesOf(delta).bytes;
}

/** A delta's estimated bytes, and how much it grows the database by (negative: shrinks). */
function sizesOf(delta: DbDelta): { bytes: number; growth: number } {
  let bytes = 32;
  let growth = 0;
  for (const c of delta.changes) {
    if (c.kind !== 'insert') {
      const b = rowBytes(c.old);
      bytes += b;
      growth -= b;
    }
    if (c.kind !== 'delete') {
      const b = rowBytes(c.new);
      bytes += b;
      growth += b;
    }
  }
  return { bytes, growth };
}

/** The estimated size of a database (or view) of the given tables, as the history counts rows. */
export function databaseBytes(tables: Iterable<ReadonlyMap<string, Row>>): number {
  let n = 0;
  for (const rows of tables) for (const row of rows.values()) n += rowBytes(row);
  return n;
}

export class History {
  /** Retained items from `head` on; the slots before it are emptied as items are dropped. */
  private readonly items: (HistoryItem | undefined)[] = [];
  private head = 0;
  private bytes = 0;
  /** The database's estimated size: the baseline of the last reset plus every delta's growth. */
  private dbBytes = 0;
  /** Every revision after this one is retained (or was empty of changes). */
  private floor: number;

  constructor(
    private readonly limits: HistoryLimits = historyDefaults,
    startRevision = 0,
  ) {
    this.floor = startRevision;
  }

  /** The smallest revision a watcher may resume from. */
  get minRevision(): number {
    return this.floor;
  }

  get size(): number {
    return this.items.length - this.head;
  }

  get retainedBytes(): number {
    return this.bytes;
  }

  /** The byte bound now: bytesMax, or the database's share (at least floorBytes) when smaller. */
  get bytesBound(): number {
    const floor = this.limits.floorBytes;
    if (floor === undefined) return this.limits.bytesMax;
    const share = Math.floor((this.dbBytes * (this.limits.databasePercent ?? 100)) / 100);
    return Math.min(this.limits.bytesMax, Math.max(floor, share));
  }

  append(revision: number, delta: DbDelta): void {
    const { bytes, growth } = sizesOf(delta);
    const item = { revision, delta, bytes };
    this.items.push(item);
    this.bytes += item.bytes;
    this.dbBytes = Math.max(0, this.dbBytes + growth);
    const bound = this.bytesBound;
    while (this.size > this.limits.revisionsMax || (this.bytes > bound && this.size > 1)) this.dropOldest();
  }

  /**
   * Forgets everything: after a snapshot restore, only revisions after `revision` can resume.
   * `dbBytes` is the database's estimated size then (databaseBytes), the baseline the deltas
   * that follow are added to.
   */
  reset(revision: number, dbBytes = 0): void {
    this.items.length = 0;
    this.head = 0;
    this.bytes = 0;
    this.dbBytes = dbBytes;
    this.floor = revision;
  }

  private dropOldest(): void {
    const item = this.items[this.head] as HistoryItem;
    // Empty the slot: the array is cut down only now and then, and a dropped item must not
    // stay reachable until then (it may hold a whole load's changes).
    this.items[this.head] = undefined;
    this.head++;
    this.bytes -= item.bytes;
    this.floor = item.revision;
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items.splice(0, this.head);
      this.head = 0;
    }
  }

  /** The changes after `revision`, in order; or `compacted` if some of them were dropped. */
  since(revision: number): SinceResult {
    if (revision < this.floor) return { kind: 'compacted', minRevision: this.floor };
    let lo = this.head;
    let hi = this.items.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((this.items[mid] as HistoryItem).revision <= revision) lo = mid + 1;
      else hi = mid;
    }
    return { kind: 'ok', items: this.items.slice(lo) as HistoryItem[] };
  }
}
