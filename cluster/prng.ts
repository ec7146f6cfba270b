// A small seeded pseudo-random generator (xoshiro128**, seeded through splitmix32).
// The Raft core takes its randomness from here so that a run is a pure function of its seed:
// the same seed gives the same election timeouts on every replay.

import assert from 'node:assert';

export class Prng {
  private s0: number;
  private s1: number;
  private s2: number;
  private s3: number;

  constructor(seed: number) {
    assert(Number.isInteger(seed), `seed must be an integer, got ${seed}`);
    let x = seed >>> 0;
    const next = (): number => {
      // splitmix32: spreads a small seed over the whole 128-bit state.
      x = (x + 0x9e3779b9) >>> 0;
      let z = x;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.s0 = next();
    this.s1 = next();
    this.s2 = next();
    this.s3 = next();
    if ((this.s0 | this.s1 | this.s2 | this.s3) === 0) this.s0 = 1;
  }

  /** A uniformly distributed unsigned 32-bit integer. */
  nextU32(): number {
    const result = Math.imul(rotl(Math.imul(this.s1, 5) >>> 0, 7), 9) >>> 0;
    const t = (this.s1 << 9) >>> 0;
    this.s2 = (this.s2 ^ this.s0) >>> 0;
    this.s3 = (this.s3 ^ this.s1) >>> 0;
    this.s1 = (this.s1 ^ this.s2) >>> 0;
    this.s0 = (this.s0 ^ this.s3) >>> 0;
    this.s2 = (this.s2 ^ t) >>> 0;
    this.s3 = rotl(this.s3, 11);
    return result;
  }

  /** An integer in [0, n). */
  nextInt(n: number): number {
    assert(Number.isInteger(n) && n > 0 && n <= 0x1_0000_0000, `bad range ${n}`);
    // Multiply-shift keeps the bias below 2^-32 per draw, which is plenty for a simulator.
    return Math.floor((this.nextU32() / 0x1_0000_0000) * n);
  }

  /** A float in [0, 1). */
  nextFloat(): number {
    return this.nextU32() / 0x1_0000_0000;
  }

  /** True with probability p. */
  chance(p: number): boolean {
    return this.nextFloat() < p;
  }

  /** Picks one element of a non-empty array. */
  pick<T>(items: readonly T[]): T {
    assert(items.length > 0, 'pick from an empty array');
    return items[this.nextInt(items.length)] as T;
  }
}

function rotl(x: number, k: number): number {
  return ((x << k) | (x >>> (32 - k))) >>> 0;
}
