// Deterministic tunnel key allocation: the lowest free key in [min, max]. Once given, a key
// stays with its owner until released; the allocator is part of a node's materialized data.
import assert from 'node:assert/strict';

export class KeyAllocator {
  private readonly used = new Set<number>();
  /** Every key below this one is in use. */
  private lowestFreeHint: number;

  constructor(readonly min: number, readonly max: number) {
    this.lowestFreeHint = min;
  }

  get size(): number {
    return this.used.size;
  }

  has(key: number): boolean {
    return this.used.has(key);
  }

  /** Takes the lowest free key; undefined when the range is exhausted. */
  allocate(): number | undefined {
    let k = this.lowestFreeHint;
    while (k <= this.max && this.used.has(k)) k++;
    if (k > this.max) return undefined;
    this.used.add(k);
    this.lowestFreeHint = k + 1;
    return k;
  }

  /** Marks a key kept from before as in use. */
  claim(key: number): void {
    if (key < this.min || key > this.max || this.used.has(key)) assert.fail(`tunnel key ${key} claimed twice or out of range`);
    this.used.add(key);
  }

  release(key: number): void {
    if (!this.used.delete(key)) assert.fail(`tunnel key ${key} released but not in use`);
    if (key < this.lowestFreeHint) this.lowestFreeHint = key;
  }
}

/** Datapath keys that ovn-northd 23.03 allocates locally (without VXLAN): 1..2^24-1-(2^16-1). */
export const DATAPATH_KEY_MIN = 1;
export const DATAPATH_KEY_MAX = (1 << 24) - 1 - ((1 << 16) - 1);
/** Port keys within a datapath (logical ports; multicast groups start at 32768). */
export const PORT_KEY_MIN = 1;
export const PORT_KEY_MAX = (1 << 15) - 1;
