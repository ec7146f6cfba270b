// The in-memory Raft log: a stable part (a mirror of what the shell has made durable: the
// latest snapshot and the entries after it) and an unstable part (entries, or a snapshot,
// handed out in a Ready and not yet acknowledged as persisted).
//
//   snapshot.index | stable entries ...        |
//                              | unstable entries (offset ...) |
//
// Unstable entries may start inside the stable range: a follower truncating a conflicting
// tail writes the new entries there, and the stable copy is cut when they become stable.

import assert from 'node:assert';
import { entryBytes, type Entry, type Snapshot, type SnapshotMeta } from './types.js';

export class RaftLog {
  private snapshot: Snapshot;
  private stable: Entry[];
  private unstableSnapshot: Snapshot | undefined;
  private unstableOffset: number;
  private unstable: Entry[] = [];
  committed: number;
  /** The highest index the shell has applied (acknowledged through advance). */
  applied: number;

  constructor(snapshot: Snapshot, entries: readonly Entry[], committed: number) {
    this.snapshot = snapshot;
    this.stable = [...entries];
    this.stable.forEach((e, i) =>
      assert(e.index === snapshot.meta.index + 1 + i, `stored entries not contiguous at ${e.index}`),
    );
    this.unstableSnapshot = undefined;
    this.unstableOffset = this.lastIndex() + 1;
    assert(committed >= snapshot.meta.index, `commit ${committed} below snapshot ${snapshot.meta.index}`);
    assert(committed <= this.lastIndex(), `commit ${committed} beyond last index ${this.lastIndex()}`);
    this.committed = committed;
    this.applied = snapshot.meta.index;
  }

  private stableLastIndex(): number {
    return this.snapshot.meta.index + this.stable.length;
  }

  firstIndex(): number {
    if (this.unstableSnapshot !== undefined) return this.unstableSnapshot.meta.index + 1;
    return this.snapshot.meta.index + 1;
  }

  lastIndex(): number {
    if (this.unstable.length > 0) return this.unstableOffset + this.unstable.length - 1;
    if (this.unstableSnapshot !== undefined) return this.unstableSnapshot.meta.index;
    return this.stableLastIndex();
  }

  /** The highest index such that it and everything before it is durable. */
  persistedIndex(): number {
    if (this.unstableSnapshot !== undefined) return Math.min(this.snapshot.meta.index, this.unstableOffset - 1);
    return Math.min(this.unstableOffset - 1, this.lastIndex());
  }

  lastTerm(): number {
    const t = this.term(this.lastIndex());
    assert(t !== undefined, 'last term unavailable');
    return t;
  }

  /** The term of the entry at `i`; undefined when compacted away or beyond the last index. */
  term(i: number): number | undefined {
    if (i > this.lastIndex()) return undefined;
    if (i >= this.unstableOffset && i < this.unstableOffset + this.unstable.length) {
      return (this.unstable[i - this.unstableOffset] as Entry).term;
    }
    if (this.unstableSnapshot !== undefined) {
      if (i === this.unstableSnapshot.meta.index) return this.unstableSnapshot.meta.term;
      return undefined;
    }
    if (i === this.snapshot.meta.index) return this.snapshot.meta.term;
    if (i < this.snapshot.meta.index) return undefined;
    return (this.stable[i - this.snapshot.meta.index - 1] as Entry).term;
  }

  matchTerm(i: number, term: number): boolean {
    return this.term(i) === term;
  }

  /** Whether a candidate whose last entry is (index, term) is at least as up to date as us. */
  isUpToDate(index: number, term: number): boolean {
    const lastTerm = this.lastTerm();
    return term > lastTerm || (term === lastTerm && index >= this.lastIndex());
  }

  /**
   * Entries in [lo, hi), at most `countMax` of them and, past the first, at most `bytesMax`
   * bytes in all. lo must not be compacted.
   */
  slice(lo: number, hi: number, countMax = Number.MAX_SAFE_INTEGER, bytesMax = Number.MAX_SAFE_INTEGER): Entry[] {
    assert(lo >= this.firstIndex(), `slice from ${lo} below first index ${this.firstIndex()}`);
    assert(hi <= this.lastIndex() + 1, `slice to ${hi} beyond last index ${this.lastIndex()}`);
    const out: Entry[] = [];
    let bytes = 0;
    for (let i = lo; i < hi && out.length < countMax; i++) {
      const e = this.entryAt(i);
      bytes += entryBytes(e);
      if (out.length > 0 && bytes > bytesMax) break;
      out.push(e);
    }
    return out;
  }

  private entryAt(i: number): Entry {
    if (i >= this.unstableOffset) {
      const e = this.unstable[i - this.unstableOffset];
      assert(e !== undefined, `no entry ${i}`);
      return e;
    }
    const e = this.stable[i - this.snapshot.meta.index - 1];
    assert(e !== undefined && e.index === i, `no stable entry ${i}`);
    return e;
  }

  /** Appends entries, truncating any unstable or stable tail they overwrite. */
  append(entries: readonly Entry[]): void {
    const first = entries[0];
    if (first === undefined) return;
    const after = first.index;
    assert(after > this.committed, `append at ${after} would overwrite committed ${this.committed}`);
    assert(after <= this.lastIndex() + 1, `append at ${after} leaves a gap after ${this.lastIndex()}`);
    if (after === this.unstableOffset + this.unstable.length) {
      this.unstable.push(...entries);
    } else if (after <= this.unstableOffset) {
      this.unstableOffset = after;
      this.unstable = [...entries];
    } else {
      this.unstable = this.unstable.slice(0, after - this.unstableOffset).concat(entries);
    }
  }

  /**
   * The follower side of an append: if our entry at `index` has `logTerm`, merges `entries`
   * (skipping those we already have, overwriting from the first conflict) and advances the
   * commit index. Returns the last index now known to match the leader, or undefined.
   */
  maybeAppend(index: number, logTerm: number, committed: number, entries: readonly Entry[]): number | undefined {
    if (!this.matchTerm(index, logTerm)) return undefined;
    const lastNew = index + entries.length;
    const conflict = this.findConflict(entries);
    if (conflict !== 0) {
      assert(conflict > this.committed, `entry ${conflict} conflicts with committed ${this.committed}`);
      this.append(entries.slice(conflict - (index + 1)));
    }
    this.commitTo(Math.min(committed, lastNew));
    return lastNew;
  }

  /** The index of the first entry that is new or differs from ours; 0 when none. */
  private findConflict(entries: readonly Entry[]): number {
    for (const e of entries) {
      if (!this.matchTerm(e.index, e.term)) return e.index;
    }
    return 0;
  }

  /**
   * The last entry at or below `index` whose term is at most `term`, for fast back-off: every
   * entry above it has a larger term and cannot match. Stops at the compaction point.
   */
  findConflictByTerm(index: number, term: number): { index: number; term: number } {
    const floor = this.firstIndex() - 1;
    for (let i = Math.min(index, this.lastIndex()); i >= floor; i--) {
      const t = this.term(i);
      if (t === undefined) return { index: i, term: 0 };
      if (t <= term) return { index: i, term: t };
    }
    return { index: floor, term: 0 };
  }

  commitTo(index: number): void {
    if (index <= this.committed) return;
    assert(index <= this.lastIndex(), `commit ${index} beyond last index ${this.lastIndex()}`);
    this.committed = index;
  }

  /** Commits `index` if its entry has `term` (the leader's current-term rule). */
  maybeCommit(index: number, term: number): boolean {
    if (index > this.committed && this.term(index) === term) {
      this.commitTo(index);
      return true;
    }
    return false;
  }

  appliedTo(index: number): void {
    assert(index <= this.committed, `applied ${index} beyond commit ${this.committed}`);
    if (index > this.applied) this.applied = index;
  }

  hasNextCommittedEntries(): boolean {
    return this.committed > Math.max(this.applied, this.firstIndex() - 1);
  }

  nextCommittedEntries(countMax: number): Entry[] {
    const lo = Math.max(this.applied + 1, this.firstIndex());
    if (lo > this.committed) return [];
    return this.slice(lo, this.committed + 1, countMax);
  }

  unstableEntries(): readonly Entry[] {
    return this.unstable;
  }

  pendingSnapshot(): Snapshot | undefined {
    return this.unstableSnapshot;
  }

  /** The shell persisted entries up to (index, term): they join the stable part. */
  stableTo(index: number, term: number): void {
    if (index < this.unstableOffset || index >= this.unstableOffset + this.unstable.length) return;
    if (this.term(index) !== term) return;
    if (this.unstableSnapshot !== undefined) return;
    const n = index - this.unstableOffset + 1;
    // In place: the stable part holds up to a snapshot's worth of entries, and copying it on
    // every persist (once per commit under a serial load) cost more than the rest of this
    // method. It is private and never handed out, so nobody sees it change.
    const keep = this.unstableOffset - this.snapshot.meta.index - 1;
    if (this.stable.length > keep) this.stable.length = keep;
    for (let i = 0; i < n; i++) this.stable.push(this.unstable[i] as Entry);
    this.unstable = n === this.unstable.length ? [] : this.unstable.slice(n);
    this.unstableOffset = index + 1;
  }

  /** The shell persisted the snapshot at `index`: it replaces the stored log. */
  stableSnapTo(index: number): void {
    const s = this.unstableSnapshot;
    if (s === undefined || s.meta.index !== index) return;
    this.snapshot = s;
    this.stable = [];
    this.unstableSnapshot = undefined;
  }

  /** Installs a snapshot from the leader: the log becomes just the snapshot. */
  restore(snapshot: Snapshot): void {
    this.unstableSnapshot = snapshot;
    this.unstable = [];
    this.unstableOffset = snapshot.meta.index + 1;
    this.committed = snapshot.meta.index;
    if (this.applied < snapshot.meta.index) this.applied = snapshot.meta.index;
  }

  /** The latest stable snapshot (what a leader sends a lagging follower). */
  latestSnapshot(): Snapshot {
    return this.snapshot;
  }

  /**
   * Drops the stable entries up to `meta.index`, which the state machine has captured in
   * `data`. The index must be applied and stable. Returns false if already compacted there.
   */
  compact(meta: SnapshotMeta, data: Uint8Array): boolean {
    if (meta.index <= this.snapshot.meta.index) return false;
    assert(meta.index <= this.applied, `compact ${meta.index} beyond applied ${this.applied}`);
    assert(meta.index <= this.stableLastIndex(), `compact ${meta.index} beyond stable ${this.stableLastIndex()}`);
    assert(this.unstableSnapshot === undefined, 'compact while a snapshot is being installed');
    assert(this.term(meta.index) === meta.term, 'compact: term mismatch');
    this.stable = this.stable.slice(meta.index - this.snapshot.meta.index);
    this.snapshot = { meta, data };
    return true;
  }
}
