// A simulated disk for one node: it holds exactly what the shell persisted from Readys, so a
// crash loses everything else. It checks the shell's side of the contract as it goes.

import assert from 'node:assert';
import type { Entry, HardState, PersistedState, Ready, Snapshot } from '../../cluster/types.js';

export class MemoryDisk {
  hardState: HardState;
  snapshot: Snapshot | undefined;
  entries: Entry[];

  constructor(initial: PersistedState) {
    this.hardState = initial.hardState;
    this.snapshot = initial.snapshot;
    this.entries = [...initial.entries];
  }

  firstIndex(): number {
    return (this.snapshot?.meta.index ?? 0) + 1;
  }

  lastIndex(): number {
    return (this.snapshot?.meta.index ?? 0) + this.entries.length;
  }

  /** Writes one Ready's durable part, as one atomic batch. */
  persist(rd: Pick<Ready, 'snapshot' | 'entries' | 'hardState'>): void {
    if (rd.snapshot !== undefined) {
      this.snapshot = rd.snapshot;
      this.entries = [];
    }
    const first = rd.entries[0];
    if (first !== undefined) {
      assert(first.index >= this.firstIndex(), `disk: write at ${first.index} below first ${this.firstIndex()}`);
      assert(first.index <= this.lastIndex() + 1, `disk: gap before ${first.index}`);
      this.entries = this.entries.slice(0, first.index - this.firstIndex()).concat(rd.entries);
    }
    if (rd.hardState !== undefined) {
      const hs = rd.hardState;
      assert(hs.term >= this.hardState.term, `disk: term regresses ${this.hardState.term} -> ${hs.term}`);
      assert(hs.commit >= this.hardState.commit, `disk: commit regresses ${this.hardState.commit} -> ${hs.commit}`);
      if (hs.term === this.hardState.term && this.hardState.vote !== 0) {
        assert(hs.vote === this.hardState.vote, `disk: vote changes within term ${hs.term}`);
      }
      this.hardState = hs;
    }
    assert(this.hardState.commit <= this.lastIndex(), 'disk: commit beyond the durable log');
  }

  /** The node compacted its log into `snapshot`. */
  compact(snapshot: Snapshot): void {
    const index = snapshot.meta.index;
    if (index < this.firstIndex()) return;
    this.entries = this.entries.slice(index - this.firstIndex() + 1);
    this.snapshot = snapshot;
  }

  load(): PersistedState {
    return this.snapshot === undefined
      ? { hardState: this.hardState, entries: [...this.entries] }
      : { hardState: this.hardState, snapshot: this.snapshot, entries: [...this.entries] };
  }
}
