// 32-bit id spaces the agent hands out on the switch: conjunction ids (a range per logical flow
// and datapath) and group ids (one per distinct group description). An id starts at a hash of
// its owner, as ovn-controller's lflow_conj_ids does, and probes upwards past ids in use, so the
// same owner gets the same ids across restarts and recomputes whenever no other owner collided
// with it first. An owner keeps its ids until released.

import assert from 'node:assert';

/** FNV-1a over UTF-16 code units, 32 bits. */
export function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

export class IdSpace {
  private readonly used = new Map<number, string>();
  private readonly owned = new Map<string, { readonly first: number; readonly n: number }>();

  /** ids are drawn from [min, max]; 'max - min' must be far larger than what is ever in use. */
  constructor(private readonly min: number, private readonly max: number, private readonly inUseMax: number) {
    assert(min >= 0 && max > min && max <= 0xffffffff, 'id space bounds');
  }

  get size(): number {
    return this.used.size;
  }

  /** 'n' consecutive ids for 'owner' (the same range again if it already holds n), or undefined
   *  when the space holds inUseMax ids already. */
  allocate(owner: string, n: number): number | undefined {
    assert(Number.isInteger(n) && n >= 1, 'allocate at least one id');
    const have = this.owned.get(owner);
    if (have !== undefined) {
      if (have.n === n) return have.first;
      this.release(owner);
    }
    if (this.used.size + n > this.inUseMax) return undefined;
    const span = this.max - this.min + 1 - n;
    let first = this.min + (hash32(owner) % span);
    for (;;) {
      let free = true;
      for (let i = 0; i < n; i++) {
        if (this.used.has(first + i)) {
          free = false;
          break;
        }
      }
      if (free) break;
      first = first + 1 > this.min + span ? this.min : first + 1;
    }
    for (let i = 0; i < n; i++) this.used.set(first + i, owner);
    this.owned.set(owner, { first, n });
    return first;
  }

  /** The first of the `n` ids `owner` holds, or undefined when it holds none or another count. */
  held(owner: string, n: number): number | undefined {
    const have = this.owned.get(owner);
    return have !== undefined && have.n === n ? have.first : undefined;
  }

  release(owner: string): void {
    const have = this.owned.get(owner);
    if (have === undefined) return;
    for (let i = 0; i < have.n; i++) this.used.delete(have.first + i);
    this.owned.delete(owner);
  }

  owner(id: number): string | undefined {
    return this.used.get(id);
  }
}
