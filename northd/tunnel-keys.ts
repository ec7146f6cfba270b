// Deterministic tunnel keys: the lowest free key in a range, and the keys owners request
// (options:requested-tnl-key). Once given, a key stays with its owner until released or taken
// by a request; the key spaces are part of a node's materialized data.
import assert from 'node:assert/strict';

/**
 * The tunnel keys of one key space (every datapath, or the ports of one datapath), with the
 * keys their owners request (options:requested-tnl-key), decided as ovn-northd 23.03 decides
 * them in each of its passes, but deterministically:
 *
 * 1. A key requested by one or more owners goes to one of them: the one holding it already,
 *    else the requester with the lowest id (ovn-northd: the first in its hash order).
 * 2. Every other owner keeps the key it holds, unless a request took it.
 * 3. Owners left without a key take the lowest free ones, in id order.
 *
 * A pass records what changed (add, keep, request, remove), then `settle` applies rule 1 to the
 * keys whose requesters or holder changed and rule 3 to the owners without a key. Rule 1 never
 * gives a key nobody requests, so a pass that changes no request and frees no requested key
 * moves no key. Requests are kept only within [min, limit]; allocation stays within [min, max],
 * leaving (max, limit] to requests (the datapath keys ovn-ic gives transit switches).
 */
export class KeySpace {
  /** Key → its owner: the keys in use. */
  private readonly holderOf = new Map<number, string>();
  /** Every key below this one is in use. */
  private lowestFreeHint: number;
  private readonly keyOfOwner = new Map<string, number>();
  /** Owners present without a key: added and not yet given one, or displaced by a request. */
  private readonly pending = new Set<string>();
  private readonly requestOf = new Map<string, number>();
  private readonly requesters = new Map<number, Set<string>>();
  /** Keys whose requesters or holder changed since the last settle. */
  private readonly unsettled = new Set<number>();
  /** Owners whose key changed since the last takeChanged (given, moved or lost). */
  private readonly changed = new Set<string>();

  private maxKey: number;

  constructor(readonly min: number, max: number, readonly limit: number = max) {
    assert.ok(min <= max && max <= limit, `key space [${min}, ${max}] up to ${limit}`);
    this.maxKey = max;
    this.lowestFreeHint = min;
  }

  /** The highest key allocation gives (requests may go up to `limit`). */
  get max(): number {
    return this.maxKey;
  }

  /**
   * Moves the highest key allocation gives (VXLAN mode narrows it): owners keep the keys they
   * hold, above it or not, as ovn-northd keeps the keys the SB has; only new ones stay below.
   */
  setMax(max: number): void {
    assert.ok(this.min <= max && max <= this.limit, `key space [${this.min}, ${max}] up to ${this.limit}`);
    this.maxKey = max;
  }

  /** Owners present (with a key or waiting for one). */
  get size(): number {
    return this.keyOfOwner.size + this.pending.size;
  }

  keyOf(owner: string): number | undefined {
    return this.keyOfOwner.get(owner);
  }

  has(owner: string): boolean {
    return this.keyOfOwner.has(owner) || this.pending.has(owner);
  }

  /** Every owner present (with a key or waiting for one), in no particular order. */
  owners(): string[] {
    return [...this.keyOfOwner.keys(), ...this.pending];
  }

  /** Whether `key` may be requested here (ovn-northd would write any, and the SB refuse it). */
  requestable(key: number): boolean {
    return Number.isInteger(key) && key >= this.min && key <= this.limit;
  }

  /** A new owner, without a key until `keep` or `settle` gives it one. */
  add(owner: string): void {
    assert.ok(!this.has(owner), `key space: ${owner} added twice`);
    this.pending.add(owner);
  }

  /** A new owner keeps `key` from before (a recompute's memory of history) when it is free. */
  keep(owner: string, key: number): void {
    if (!this.pending.has(owner) || key < this.min || key > this.limit || this.holderOf.has(key)) return;
    this.take(owner, key);
  }

  /** The owner leaves: its key is free, its request gone. */
  remove(owner: string): void {
    this.request(owner, undefined);
    this.pending.delete(owner);
    this.drop(owner);
  }

  /** Sets (or clears) the key the owner requests; one it may not request counts as none. */
  request(owner: string, key: number | undefined): void {
    const want = key !== undefined && this.requestable(key) ? key : undefined;
    const had = this.requestOf.get(owner);
    if (had === want) return;
    if (had !== undefined) {
      const s = this.requesters.get(had) as Set<string>;
      s.delete(owner);
      if (s.size === 0) this.requesters.delete(had);
      this.requestOf.delete(owner);
      this.unsettled.add(had);
    }
    if (want !== undefined) {
      let s = this.requesters.get(want);
      if (s === undefined) this.requesters.set(want, (s = new Set()));
      s.add(owner);
      this.requestOf.set(owner, want);
      this.unsettled.add(want);
    }
  }

  /**
   * Rule 1 for every unsettled key, then rule 3. Returns the owners still without a key (the
   * range is exhausted): they stay pending and are tried again by later passes.
   */
  settle(): string[] {
    // A Set iterates over what is added during the loop: a winner's old key, freed, is
    // settled in turn (a requester of it may take it). Each owner wins at most once.
    for (const key of this.unsettled) {
      this.unsettled.delete(key);
      const reqs = this.requesters.get(key);
      if (reqs === undefined) continue;
      const holder = this.holderOf.get(key);
      if (holder !== undefined && reqs.has(holder)) continue;
      let winner = '';
      let first = true;
      for (const r of reqs) {
        if (first || r < winner) winner = r;
        first = false;
      }
      if (holder !== undefined) {
        this.drop(holder);
        this.pending.add(holder);
      }
      this.drop(winner);
      this.take(winner, key);
    }
    if (this.pending.size === 0) return [];
    const left: string[] = [];
    for (const owner of [...this.pending].sort()) {
      let k = this.lowestFreeHint;
      while (k <= this.max && this.holderOf.has(k)) k++;
      if (k > this.max) {
        left.push(owner);
        continue;
      }
      this.take(owner, k);
      this.lowestFreeHint = k + 1;
    }
    return left;
  }

  /** The owners whose key changed since the last call (given, moved or lost), in id order. */
  takeChanged(): string[] {
    if (this.changed.size === 0) return [];
    const out = [...this.changed].sort();
    this.changed.clear();
    return out;
  }

  private take(owner: string, key: number): void {
    assert.ok(key >= this.min && key <= this.limit && !this.holderOf.has(key), `tunnel key ${key} taken twice or out of range`);
    this.pending.delete(owner);
    this.holderOf.set(key, owner);
    this.keyOfOwner.set(owner, key);
    this.changed.add(owner);
  }

  private drop(owner: string): void {
    const key = this.keyOfOwner.get(owner);
    if (key === undefined) return;
    this.keyOfOwner.delete(owner);
    this.holderOf.delete(key);
    if (key < this.lowestFreeHint) this.lowestFreeHint = key;
    this.changed.add(owner);
    this.unsettled.add(key);
  }
}

/** Datapath keys that ovn-northd 23.03 allocates locally (without VXLAN): 1..2^24-1-(2^16-1). */
export const DATAPATH_KEY_MIN = 1;
export const DATAPATH_KEY_MAX = (1 << 24) - 1 - ((1 << 16) - 1);
/**
 * In VXLAN mode (a Chassis has a vxlan encap: the VNI carries the datapath key in 12 bits and the
 * port key in 12), datapath keys up to 4095, and requests above refused but for a transit
 * switch's (interconn-ts); port keys up to 2047, and requests from 2048 refused.
 */
export const DATAPATH_KEY_MAX_VXLAN = (1 << 12) - 1;
export const PORT_KEY_MAX_VXLAN = (1 << 11) - 1;

/** Whether a Chassis has a vxlan encap (ovn-northd's is_vxlan_mode); a source of the engine. */
export interface SbEncapsData {
  vxlan: boolean;
}
/** The highest datapath key at all (the SB's tunnel_key column): the keys above
 *  DATAPATH_KEY_MAX are ovn-ic's, for the transit switches it makes, which request them. */
export const DATAPATH_KEY_LIMIT = (1 << 24) - 1;
/** Port keys within a datapath (logical ports; multicast groups start at 32768). */
export const PORT_KEY_MIN = 1;
export const PORT_KEY_MAX = (1 << 15) - 1;
