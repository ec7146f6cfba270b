// The append messages a leader has sent to one replicating follower and not yet seen
// acknowledged, bounded by count and by bytes. When full, the leader stops sending to that
// follower until acknowledgements free space (flow control, as etcd's tracker.Inflights).

import assert from 'node:assert';

export class Inflights {
  private readonly lastIndexes: number[] = [];
  private readonly sizes: number[] = [];
  private bytes = 0;

  constructor(
    private readonly msgsMax: number,
    private readonly bytesMax: number,
  ) {}

  /** Records a message whose last entry is `index`. Indexes must increase. */
  add(index: number, bytes: number): void {
    assert(!this.full(), 'inflights: add while full');
    const last = this.lastIndexes.at(-1);
    assert(last === undefined || index > last, `inflights: index ${index} after ${last}`);
    this.lastIndexes.push(index);
    this.sizes.push(bytes);
    this.bytes += bytes;
  }

  /** Frees every message whose last index is at most `index` (acknowledged). */
  freeLE(index: number): void {
    let n = 0;
    while (n < this.lastIndexes.length && (this.lastIndexes[n] as number) <= index) {
      this.bytes -= this.sizes[n] as number;
      n++;
    }
    this.lastIndexes.splice(0, n);
    this.sizes.splice(0, n);
  }

  /** Frees the oldest message: a heartbeat response proves the follower is alive. */
  freeFirstOne(): void {
    const first = this.lastIndexes[0];
    if (first !== undefined) this.freeLE(first);
  }

  full(): boolean {
    return this.lastIndexes.length >= this.msgsMax || this.bytes >= this.bytesMax;
  }

  count(): number {
    return this.lastIndexes.length;
  }

  reset(): void {
    this.lastIndexes.length = 0;
    this.sizes.length = 0;
    this.bytes = 0;
  }
}
