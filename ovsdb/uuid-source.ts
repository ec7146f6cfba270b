// Deterministic UUIDs for transactions applied on every replica. The leader draws a 128-bit
// seed at random when it proposes a transaction and carries it in the log entry; every
// replica then generates the same UUID stream from it (xoshiro128**, whose state is exactly
// the seed), so row UUIDs and _version values agree everywhere without any randomness in
// apply. Distinct seeds give unrelated streams.
import assert from 'node:assert/strict';
import type { Uuid } from './atom.js';

/** Four unsigned 32-bit words, not all zero. */
export type UuidSeed = readonly [number, number, number, number];

function rotl(x: number, k: number): number {
  return ((x << k) | (x >>> (32 - k))) >>> 0;
}

const hex = (n: number): string => (n >>> 0).toString(16).padStart(8, '0');

export function uuidSource(seed: UuidSeed): () => Uuid {
  let [s0, s1, s2, s3] = seed.map((w) => w >>> 0) as [number, number, number, number];
  assert.ok((s0 | s1 | s2 | s3) !== 0, 'a uuid seed must not be all zero');
  const next = (): number => {
    const result = Math.imul(rotl(Math.imul(s1, 5) >>> 0, 7), 9) >>> 0;
    const t = (s1 << 9) >>> 0;
    s2 = (s2 ^ s0) >>> 0;
    s3 = (s3 ^ s1) >>> 0;
    s1 = (s1 ^ s2) >>> 0;
    s0 = (s0 ^ s3) >>> 0;
    s2 = (s2 ^ t) >>> 0;
    s3 = rotl(s3, 11);
    return result;
  };
  return () => {
    const a = next();
    // Version 4 and RFC 4122 variant bits, as any client expects of a random UUID.
    const b = ((next() & 0xffff0fff) | 0x00004000) >>> 0;
    const c = ((next() & 0x3fffffff) | 0x80000000) >>> 0;
    const d = next();
    const h = hex(a) + hex(b) + hex(c) + hex(d);
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
  };
}
