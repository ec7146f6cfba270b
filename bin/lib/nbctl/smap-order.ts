// The order in which ovn-nbctl prints a string map with SMAP_FOR_EACH (lr-policy-list's options,
// dhcp-options-get-options): the IDL fills an smap from the column's keys in sorted order, and an
// smap is an OVS hmap keyed by hash_string(key, 0), so the printed order is its bucket order.
// This replays OVS's portable hash (lib/hash.c, mhash) and hmap insertion and growth exactly.

const rotl = (x: number, r: number): number => ((x << r) | (x >>> (32 - r))) >>> 0;

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

/** OVS hash_string(s, 0): hash_bytes over the UTF-8 bytes, little-endian words. */
export function ovsHashString(s: string): number {
  const b = new TextEncoder().encode(s);
  let hash = 0;
  let i = 0;
  for (; i + 4 <= b.length; i += 4) hash = mhashAdd(hash, ((b[i] as number) | ((b[i + 1] as number) << 8) | ((b[i + 2] as number) << 16) | ((b[i + 3] as number) << 24)) >>> 0);
  if (i < b.length) {
    let tmp = 0;
    for (let k = 0; i + k < b.length; k++) tmp |= (b[i + k] as number) << (8 * k);
    hash = mhashAdd(hash, tmp >>> 0);
  }
  return mhashFinish((hash ^ b.length) >>> 0);
}

function calcMask(capacity: number): number {
  let mask = Math.floor(capacity / 2);
  mask |= mask >>> 1;
  mask |= mask >>> 2;
  mask |= mask >>> 4;
  mask |= mask >>> 8;
  mask |= mask >>> 16;
  mask |= (mask & 1) << 1;
  return mask;
}

/** The keys of a map column in SMAP_FOR_EACH order. */
export function smapOrder<T>(pairs: readonly (readonly [string, T])[]): [string, T][] {
  type Node = { key: string; value: T; hash: number };
  let mask = 0;
  let buckets: Node[][] = [[]];
  let n = 0;
  // Each bucket is kept head first: hmap_insert_fast puts a node at the head of its chain.
  const insertFast = (bs: Node[][], m: number, node: Node): void => {
    (bs[node.hash & m] as Node[]).unshift(node);
  };
  const sorted = [...pairs].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  for (const [key, value] of sorted) {
    insertFast(buckets, mask, { key, value, hash: ovsHashString(key) });
    n++;
    if (Math.floor(n / 2) > mask) {
      const newMask = calcMask(n);
      if (newMask > mask) {
        const fresh: Node[][] = Array.from({ length: newMask + 1 }, () => []);
        for (const chain of buckets) for (const node of chain) insertFast(fresh, newMask, node);
        buckets = fresh;
        mask = newMask;
      }
    }
  }
  return buckets.flat().map((node) => [node.key, node.value]);
}
