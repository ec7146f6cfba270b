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

/** Character codes of the lowercase hex digits, by value. */
const hexDigitCodes: readonly number[] = Array.from('0123456789abcdef', (c) => c.charCodeAt(0));
const dashCode = '-'.charCodeAt(0);
/** 36 dashes: the codes of a UUID before its digits are written. */
const dashCodes: readonly number[] = Array.from({ length: 36 }, () => dashCode);

/** Writes the low `digits` hex digits of `word` into `codes` ending just before `end`. */
function writeHex(codes: number[], end: number, word: number, digits: number): void {
  let w = word;
  for (let i = end - 1; i >= end - digits; i--) {
    codes[i] = hexDigitCodes[w & 15] as number;
    w >>>= 4;
  }
}

export function uuidSource(seed: UuidSeed): () => Uuid {
  let s0 = seed[0] >>> 0;
  let s1 = seed[1] >>> 0;
  let s2 = seed[2] >>> 0;
  let s3 = seed[3] >>> 0;
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
  // The UUID's 36 character codes, dashes in place; the digits are rewritten for each UUID.
  // Made in one String.fromCharCode call, the string is flat: 56 bytes on the heap. Built by
  // concatenation it was a tree of cons strings (~360 bytes), and stayed one wherever nothing
  // flattened it (every row's _version: ~3.5 MiB of the 10,000-port NB). A copy of a packed
  // array: a source is made for every transaction applied, and `Array.from` with a length and
  // a function took ~2 us where this takes ~0.05.
  const codes: number[] = dashCodes.slice();
  return () => {
    const a = next();
    // Version 4 and RFC 4122 variant bits, as any client expects of a random UUID.
    const b = ((next() & 0xffff0fff) | 0x00004000) >>> 0;
    const c = ((next() & 0x3fffffff) | 0x80000000) >>> 0;
    const d = next();
    // 8-4-4-4-12: a, b's high and low halves, c's high half, then c's low half and d.
    writeHex(codes, 8, a, 8);
    writeHex(codes, 13, b >>> 16, 4);
    writeHex(codes, 18, b, 4);
    writeHex(codes, 23, c >>> 16, 4);
    writeHex(codes, 28, c, 4);
    writeHex(codes, 36, d, 8);
    return uuidFromCodes(codes);
  };
}

/**
 * The UUID text of 36 character codes, as one flat string: the codes passed as 36 arguments.
 * Spread or through `apply` they would first be copied into an arguments array (about 300 bytes
 * a UUID), and a template of pieces would be a tree of strings until something flattens it.
 */
export function uuidFromCodes(u: ArrayLike<number>): Uuid {
  return String.fromCharCode(
    u[0] as number, u[1] as number, u[2] as number, u[3] as number, u[4] as number, u[5] as number, u[6] as number, u[7] as number, u[8] as number,
    u[9] as number, u[10] as number, u[11] as number, u[12] as number, u[13] as number, u[14] as number, u[15] as number, u[16] as number, u[17] as number,
    u[18] as number, u[19] as number, u[20] as number, u[21] as number, u[22] as number, u[23] as number, u[24] as number, u[25] as number, u[26] as number,
    u[27] as number, u[28] as number, u[29] as number, u[30] as number, u[31] as number, u[32] as number, u[33] as number, u[34] as number, u[35] as number,
  );
}
