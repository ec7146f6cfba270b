// Pending linearizable reads on the leader (ReadIndex, Raft thesis §6.4).
//
// A read is recorded with the commit index at the time it arrived. The leader then sends a
// heartbeat round tagged with the read's sequence number; once a majority of voters has
// answered that round, no newer leader can exist that was elected before the read arrived,
// so the read (and every earlier one) may be served at its recorded index.

import assert from 'node:assert';
import type { NodeId } from './types.js';

export interface PendingRead {
  readonly seq: number;
  readonly index: number;
  readonly ctx: string;
  /** Who asked: the leader itself or a follower that forwarded the request. */
  readonly from: NodeId;
  readonly acks: Set<NodeId>;
}

export class ReadOnly {
  private readonly queue: PendingRead[] = [];
  private nextSeq = 1;

  constructor(private readonly pendingMax: number) {}

  full(): boolean {
    return this.queue.length >= this.pendingMax;
  }

  /** Records a read and returns its heartbeat sequence number. */
  add(index: number, ctx: string, from: NodeId, self: NodeId): number {
    assert(!this.full(), 'read-only: queue full');
    const seq = this.nextSeq++;
    this.queue.push({ seq, index, ctx, from, acks: new Set([self]) });
    return seq;
  }

  /** Records that `id` answered heartbeat round `seq`; returns that read's acks, if pending. */
  recvAck(id: NodeId, seq: number): ReadonlySet<NodeId> | undefined {
    const r = this.queue.find((p) => p.seq === seq);
    if (r === undefined) return undefined;
    r.acks.add(id);
    return r.acks;
  }

  /** Removes and returns every read up to and including round `seq`. */
  release(seq: number): PendingRead[] {
    const n = this.queue.findIndex((p) => p.seq === seq);
    if (n < 0) return [];
    return this.queue.splice(0, n + 1);
  }

  lastSeq(): number {
    return this.queue.at(-1)?.seq ?? 0;
  }

  size(): number {
    return this.queue.length;
  }

  reset(): void {
    this.queue.length = 0;
  }
}
