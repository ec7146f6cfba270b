// SB updates the runtime holds back from the flow side (while ovn-match-northd-version's gate is
// closed), coalesced into one: the latest state of each row, a reset absorbing what came before
// it, as the stream client coalesces what arrives while an update is being applied. Bounded: past
// `changesMax` rows the changes are dropped and only the fact is kept (`overflowed`); the owner
// then asks its source for the whole view again (SbSource.resync) instead of applying them.
import type { SbRowChange, SbUpdate } from './sb-source.js';

export const heldUpdatesLimits = {
  /** Rows held before they are given up for a resync (the stream's own pendingChangesMax). */
  changesMax: 1_000_000,
} as const;

const keyOf = (c: SbRowChange): string => `${c.table}\0${c.uuid}`;

export class HeldUpdates {
  private reset = false;
  private from: number;
  private to: number;
  private changes = new Map<string, SbRowChange>();
  private overflowedValue = false;

  constructor(first: SbUpdate, private readonly changesMax: number = heldUpdatesLimits.changesMax) {
    this.from = first.fromRevision;
    this.to = first.fromRevision;
    this.add(first);
  }

  /** The revision the held updates reach. */
  get toRevision(): number {
    return this.to;
  }

  /** Whether changes were dropped past the bound: only a resync recovers them. */
  get overflowed(): boolean {
    return this.overflowedValue;
  }

  /** Folds the next update in (updates come in revision order, each from the last one's end). */
  add(u: SbUpdate): void {
    this.to = u.toRevision;
    if (this.overflowedValue) return;
    if (u.reset) {
      this.reset = true;
      this.changes = new Map();
    }
    for (const c of u.changes) {
      const k = keyOf(c);
      this.changes.delete(k);
      // In a held reset (a whole view) a removed row is simply not there.
      if (c.row !== undefined || !this.reset) this.changes.set(k, c);
    }
    if (this.changes.size > this.changesMax) {
      this.overflowedValue = true;
      this.changes = new Map();
    }
  }

  /** The one update that stands for everything held (not to be called once overflowed). */
  update(): SbUpdate {
    return { reset: this.reset, fromRevision: this.from, toRevision: this.to, changes: [...this.changes.values()] };
  }
}
