// uuidSource writes each UUID's digits into one flat string; this checks it against the plain
// reference (hex words concatenated and sliced): the same stream, seed for seed.
import t from 'tap';
import { uuidSource, type UuidSeed } from '../../ovsdb/uuid-source.js';

function referenceSource(seed: UuidSeed): () => string {
  let [s0, s1, s2, s3] = seed.map((w) => w >>> 0) as [number, number, number, number];
  const rotl = (x: number, k: number): number => ((x << k) | (x >>> (32 - k))) >>> 0;
  const next = (): number => {
    const result = Math.imul(rotl(Math.imul(s1, 5) >>> 0, 7), 9) >>> 0;
    const tt = (s1 << 9) >>> 0;
    s2 = (s2 ^ s0) >>> 0;
    s3 = (s3 ^ s1) >>> 0;
    s1 = (s1 ^ s2) >>> 0;
    s0 = (s0 ^ s3) >>> 0;
    s2 = (s2 ^ tt) >>> 0;
    s3 = rotl(s3, 11);
    return result;
  };
  const hex = (n: number): string => (n >>> 0).toString(16).padStart(8, '0');
  return () => {
    const a = next();
    const b = ((next() & 0xffff0fff) | 0x00004000) >>> 0;
    const c = ((next() & 0x3fffffff) | 0x80000000) >>> 0;
    const d = next();
    const h = hex(a) + hex(b) + hex(c) + hex(d);
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
  };
}

t.test('the same UUIDs as the reference, for seeds with small, large and zero words', async (t) => {
  const seeds: UuidSeed[] = [[1, 0, 0, 0], [0, 0, 0, 1], [0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff], [0x12345678, 0x9abcdef0, 0x0fedcba9, 0x87654321]];
  let x = 0x9e3779b9;
  for (let i = 0; i < 20; i++) {
    const w = (): number => (x = (Math.imul(x ^ (x >>> 15), 0x2c1b3c6d) + i) >>> 0);
    seeds.push([w(), w(), w(), w() || 1]);
  }
  for (const seed of seeds) {
    const ours = uuidSource(seed);
    const ref = referenceSource(seed);
    let same = 0;
    for (let i = 0; i < 2000; i++) {
      const u = ours();
      if (u === ref()) same++;
      else t.fail(`seed ${seed.join(',')}, UUID ${i}: ${u}`);
    }
    t.equal(same, 2000, `seed ${seed.join(',')}`);
  }
});

t.test('version 4, RFC 4122 variant, lowercase', async (t) => {
  const next = uuidSource([7, 7, 7, 7]);
  for (let i = 0; i < 1000; i++) t.match(next(), /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
});
