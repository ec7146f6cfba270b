// A small seeded PRNG for generators and simulators: the same seed gives the same sequence on
// every platform, so a failing seed printed by a test replays exactly.

/** sfc32 seeded through splitmix32; good enough statistics for test generation, 32-bit state words. */
export class Rng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(readonly seed: number) {
    let s = seed >>> 0;
    const next = (): number => {
      s = (s + 0x9e3779b9) >>> 0;
      let z = s;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.a = next();
    this.b = next();
    this.c = next();
    this.d = next();
    for (let i = 0; i < 12; i++) this.u32();
  }

  /** A uniformly distributed unsigned 32-bit integer. */
  u32(): number {
    const t = (((this.a + this.b) >>> 0) + this.d) >>> 0;
    this.d = (this.d + 1) >>> 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) >>> 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) >>> 0;
    return t;
  }

  /** A float in [0, 1). */
  float(): number {
    return this.u32() / 0x1_0000_0000;
  }

  /** An integer in [lo, hi], both inclusive; works for spans up to 2^53. */
  int(lo: number, hi: number): number {
    if (hi < lo) throw new Error(`Rng.int: empty range [${lo}, ${hi}]`);
    const span = hi - lo + 1;
    if (span <= 0x1_0000_0000) return lo + Math.floor(this.float() * span);
    const high = this.u32() * 0x1_0000_0000 + this.u32();
    return lo + (high % span);
  }

  chance(probability: number): boolean {
    return this.float() < probability;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('Rng.pick: no items');
    return items[this.int(0, items.length - 1)] as T;
  }

  /** Picks by weight; weights must be non-negative and not all zero. */
  weighted<T>(items: readonly (readonly [T, number])[]): T {
    const total = items.reduce((sum, [, w]) => sum + w, 0);
    let x = this.float() * total;
    for (const [item, w] of items) {
      if (x < w) return item;
      x -= w;
    }
    const last = items[items.length - 1];
    if (last === undefined) throw new Error('Rng.weighted: no items');
    return last[0];
  }

  shuffle<T>(items: readonly T[]): T[] {
    const out = [...items];
    for (let i = out.length - 1; i > 0; i--) {
      const j = this.int(0, i);
      const tmp = out[i] as T;
      out[i] = out[j] as T;
      out[j] = tmp;
    }
    return out;
  }

  /** A random subset of up to max items, in random order. */
  subset<T>(items: readonly T[], max: number): T[] {
    return this.shuffle(items).slice(0, this.int(0, Math.min(max, items.length)));
  }

  /** A random RFC 4122 version-4 UUID string (lowercase), fully determined by the seed. */
  uuid(): string {
    const hex = (n: number, digits: number): string => n.toString(16).padStart(digits, '0');
    const w0 = this.u32();
    const w1 = this.u32();
    const w2 = this.u32();
    const w3 = this.u32();
    const timeHi = ((w1 & 0x0fff) | 0x4000) >>> 0;
    const clockSeq = (((w2 >>> 16) & 0x3fff) | 0x8000) >>> 0;
    return `${hex(w0, 8)}-${hex(w1 >>> 16, 4)}-${hex(timeHi, 4)}-${hex(clockSeq, 4)}-${hex(w2 & 0xffff, 4)}${hex(w3, 8)}`;
  }
}
