// Open vSwitch's string hash (lib/hash.c hash_bytes over murmur-style mhash steps, the portable
// variant the Debian packages run) and the iteration order of its sset (an hmap of strings:
// buckets in index order, each bucket newest first, rehashed as it grows). ovn-northd prints
// some sets of addresses in that order, so the same text needs the same order.
const encoder = new TextEncoder();

function rotl(x: number, k: number): number {
  return ((x << k) | (x >>> (32 - k))) >>> 0;
}

function mhashAdd(hash: number, data: number): number {
  let h = hash;
  if (data !== 0) {
    let d = Math.imul(data, 0xcc9e2d51) >>> 0;
    d = rotl(d, 15);
    d = Math.imul(d, 0x1b873593) >>> 0;
    h = (h ^ d) >>> 0;
  }
  h = rotl(h, 13);
  return (Math.imul(h, 5) + 0xe6546b64) >>> 0;
}

function mhashFinish(hash: number): number {
  let h = hash;
  h = (h ^ (h >>> 16)) >>> 0;
  h = Math.imul(h, 0x85ebca6b) >>> 0;
  h = (h ^ (h >>> 13)) >>> 0;
  h = Math.imul(h, 0xc2b2ae35) >>> 0;
  return (h ^ (h >>> 16)) >>> 0;
}

/** hash_string(text, basis): the UTF-8 bytes as little-endian words, the tail zero-padded. */
export function ovsHashString(text: string, basis = 0): number {
  const bytes = encoder.encode(text);
  let h = basis >>> 0;
  let i = 0;
  for (; i + 4 <= bytes.length; i += 4) {
    h = mhashAdd(h, ((bytes[i] as number) | ((bytes[i + 1] as number) << 8) | ((bytes[i + 2] as number) << 16) | ((bytes[i + 3] as number) << 24)) >>> 0);
  }
  if (i < bytes.length) {
    let tail = 0;
    for (let j = 0; i + j < bytes.length; j++) tail |= (bytes[i + j] as number) << (8 * j);
    h = mhashAdd(h, tail >>> 0);
  }
  return mhashFinish((h ^ bytes.length) >>> 0);
}

/** hmap's calc_mask: the bucket mask for a capacity (at least 4 buckets once allocated). */
function calcMask(capacity: number): number {
  let mask = Math.floor(capacity / 2);
  for (const s of [1, 2, 4, 8, 16]) mask |= mask >>> s;
  return mask | ((mask & 1) << 1);
}

/**
 * The order in which an OVS hmap visits `items` inserted in this order (HMAP_FOR_EACH): buckets
 * in index order, each bucket newest first (hmap_insert_fast puts a node at the head of its
 * chain), rehashed into a larger mask as it grows (hmap_expand).
 */
export function hmapOrder<T>(items: readonly T[], keyOf: (item: T) => string): T[] {
  type Node = { readonly hash: number; readonly item: T };
  let mask = 0;
  let buckets: Node[][] = [[]];
  let n = 0;
  for (const item of items) {
    const hash = ovsHashString(keyOf(item));
    (buckets[hash & mask] as Node[]).unshift({ hash, item });
    n++;
    if (Math.floor(n / 2) > mask) {
      const next = calcMask(n);
      if (next > mask) {
        const grown: Node[][] = Array.from({ length: next + 1 }, () => []);
        for (const bucket of buckets) for (const node of bucket) (grown[node.hash & next] as Node[]).unshift(node);
        buckets = grown;
        mask = next;
      }
    }
  }
  return buckets.flatMap((b) => b.map((node) => node.item));
}

/** The order in which SSET_FOR_EACH visits `items` added in this order (duplicates once). */
export function ssetOrder(items: readonly string[]): string[] {
  return hmapOrder([...new Set(items)], (text) => text);
}
