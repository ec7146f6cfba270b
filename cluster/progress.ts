// The leader's view of one follower's log (etcd's tracker.Progress).
//
//   probe:     the leader does not know where the logs diverge; it sends one append at a
//              time and waits for the answer (or a heartbeat response) before the next.
//   replicate: the logs match up to `match`; the leader streams appends optimistically,
//              advancing `next` as it sends, bounded by the inflights window.
//   snapshot:  the follower needs a snapshot; nothing else is sent until it is answered,
//              reported, or times out.

import assert from 'node:assert';
import { Inflights } from './inflights.js';

export type ProgressState = 'probe' | 'replicate' | 'snapshot';

export class Progress {
  match = 0;
  next: number;
  state: ProgressState = 'probe';
  /** In probe state: an append is outstanding, so wait before sending another. */
  probeSent = false;
  /** The snapshot index being sent in snapshot state. */
  pendingSnapshot = 0;
  /** Ticks spent in snapshot state; the leader retries after an election timeout. */
  snapshotElapsedTicks = 0;
  /** Heard from within the current check-quorum window. */
  recentActive = false;
  /**
   * The highest commit index sent to this follower in an append, lowered to next - 1 whenever
   * `next` goes back (an append beyond that may never have arrived): see canBumpCommit.
   */
  sentCommit = 0;
  isLearner: boolean;
  readonly inflights: Inflights;

  constructor(next: number, isLearner: boolean, inflightMsgsMax: number, inflightBytesMax: number) {
    this.next = next;
    this.isLearner = isLearner;
    this.inflights = new Inflights(inflightMsgsMax, inflightBytesMax);
  }

  private resetState(state: ProgressState): void {
    this.probeSent = false;
    this.pendingSnapshot = 0;
    this.snapshotElapsedTicks = 0;
    this.state = state;
    this.inflights.reset();
  }

  becomeProbe(): void {
    if (this.state === 'snapshot') {
      // The snapshot (if it arrived) covers everything up to pendingSnapshot.
      const pending = this.pendingSnapshot;
      this.resetState('probe');
      this.next = Math.max(this.match + 1, pending + 1);
    } else {
      this.resetState('probe');
      this.next = this.match + 1;
    }
    this.sentCommit = Math.min(this.sentCommit, this.next - 1);
  }

  becomeReplicate(): void {
    this.resetState('replicate');
    this.next = this.match + 1;
    this.sentCommit = Math.min(this.sentCommit, this.next - 1);
  }

  becomeSnapshot(snapshotIndex: number): void {
    this.resetState('snapshot');
    this.pendingSnapshot = snapshotIndex;
  }

  /** Records an acknowledged index; false when it is stale (not above the current match). */
  maybeUpdate(index: number): boolean {
    let updated = false;
    if (this.match < index) {
      this.match = index;
      updated = true;
      this.probeSent = false;
    }
    this.next = Math.max(this.next, index + 1);
    return updated;
  }

  /**
   * Handles a rejected append of prevIndex `rejected`; `matchHint` is the highest index the
   * follower may have in common with us. False when the rejection is stale.
   */
  maybeDecrTo(rejected: number, matchHint: number): boolean {
    if (this.state === 'replicate') {
      if (rejected <= this.match) return false;
      this.next = this.match + 1;
      this.sentCommit = Math.min(this.sentCommit, this.next - 1);
      return true;
    }
    if (this.next - 1 !== rejected) return false;
    this.next = Math.max(Math.min(rejected, matchHint + 1), this.match + 1);
    assert(this.next >= 1, 'progress: next below 1');
    this.sentCommit = Math.min(this.sentCommit, this.next - 1);
    this.probeSent = false;
    return true;
  }

  /**
   * Whether an append carrying no entries and commit index `commit` could move this
   * follower's commit index (etcd's CanBumpCommit): a follower commits at most up to the last
   * entry it was sent (next - 1), so once it was sent a commit index that covers all of
   * those, another bare append tells it nothing until more entries go.
   */
  canBumpCommit(commit: number): boolean {
    return commit > this.sentCommit && this.sentCommit < this.next - 1;
  }

  /**
   * Updates the state after sending `entries` entries ending at `lastIndex`, with commit
   * index `commit`.
   */
  sentEntries(count: number, lastIndex: number, bytes: number, commit: number): void {
    this.sentCommit = Math.max(this.sentCommit, commit);
    if (this.state === 'replicate') {
      if (count > 0) {
        this.next = lastIndex + 1;
        this.inflights.add(lastIndex, bytes);
      }
    } else if (this.state === 'probe') {
      this.probeSent = true;
    } else {
      assert.fail(`sending entries in state ${this.state}`);
    }
  }

  isPaused(): boolean {
    switch (this.state) {
      case 'probe':
        return this.probeSent;
      case 'replicate':
        return this.inflights.full();
      case 'snapshot':
        return true;
    }
  }

  describe(): string {
    return `match=${this.match} next=${this.next} ${this.state}${this.isLearner ? ' learner' : ''}`;
  }
}
