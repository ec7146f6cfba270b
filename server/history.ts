// Retained history of committed changes, for watches that resume from a revision: a queue of
// (revision, delta) bounded by count and by estimated bytes. A watcher whose revision fell out
// of it gets `compacted` with the oldest revision still available, and must re-read.
import type { DbDelta, Row } from '../ovsdb/index.js';

export interface HistoryLimits {
  readonly revisionsMax: number;
  readonly bytesMax: number;
}

export const historyDefaults: HistoryLimits = { revisionsMax: 100_000, bytesMax: 256 * 1024 * 1024 };

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
  for (const v of Object.values(row)) {
    if (typeof v === 'string') n += 16 + v.length * 2;
    else if (Array.isArray(v)) n += 16 + v.length * 24;
    else if (v instanceof Map) n += 32 + v.size * 48;
    else n += 8;
  }
  return n;
}

export function deltaBytes(delta: DbDelta): number {
  let n = 32;
  for (const c of delta.changes) {
    if (c.kind !== 'insert') n += rowBytes(c.old);
    if (c.kind !== 'delete') n += rowBytes(c.new);
  }
  return n;
}

export class History {
  private readonly items: HistoryItem[] = [];
  private head = 0;
  private bytes = 0;
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

  append(revision: number, delta: DbDelta): void {
    const item = { revision, delta, bytes: deltaBytes(delta) };
    this.items.push(item);
    this.bytes += item.bytes;
    while (this.size > this.limits.revisionsMax || (this.bytes > this.limits.bytesMax && this.size > 1)) this.dropOldest();
  }

  /** Forgets everything: after a snapshot restore, only revisions after `revision` can resume. */
  reset(revision: number): void {
    this.items.length = 0;
    this.head = 0;
    this.bytes = 0;
    this.floor = revision;
  }

  private dropOldest(): void {
    const item = this.items[this.head] as HistoryItem;
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
    return { kind: 'ok', items: this.items.slice(lo) };
  }
}
