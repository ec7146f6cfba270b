// Who refers to each row: target row -> the referring rows, with multiplicity. Most rows are
// referred to by one or two others (a port by its switch and its port group), so a target's
// referrers are kept in a small array with repeats; a target with many referrers (a load
// balancer shared by every switch) switches to a counted map so removal stays cheap.
import assert from 'node:assert/strict';
import type { Uuid } from './atom.js';

/** Beyond this many references to one target, its referrers move to a counted map. */
const arrayReferrersMax = 16;

type Referrers = Uuid[] | Map<Uuid, number>;

const NO_REFERRERS: readonly Uuid[] = Object.freeze([]);

export class RefIndex {
  private readonly byTarget = new Map<Uuid, Referrers>();

  /** Targets with at least one reference. */
  get size(): number {
    return this.byTarget.size;
  }

  keys(): IterableIterator<Uuid> {
    return this.byTarget.keys();
  }

  add(target: Uuid, source: Uuid): void {
    const r = this.byTarget.get(target);
    if (r === undefined) this.byTarget.set(target, [source]);
    else if (Array.isArray(r)) {
      r.push(source);
      if (r.length > arrayReferrersMax) {
        const m = new Map<Uuid, number>();
        for (const s of r) m.set(s, (m.get(s) ?? 0) + 1);
        this.byTarget.set(target, m);
      }
    } else r.set(source, (r.get(source) ?? 0) + 1);
  }

  remove(target: Uuid, source: Uuid): void {
    const r = this.byTarget.get(target);
    assert.ok(r !== undefined, `no reference ${source} -> ${target} to remove`);
    if (Array.isArray(r)) {
      const i = r.lastIndexOf(source);
      assert.ok(i >= 0, `no reference ${source} -> ${target} to remove`);
      r[i] = r[r.length - 1] as Uuid;
      r.pop();
      if (r.length === 0) this.byTarget.delete(target);
    } else {
      const c = r.get(source);
      assert.ok(c !== undefined, `no reference ${source} -> ${target} to remove`);
      if (c === 1) r.delete(source);
      else r.set(source, c - 1);
      if (r.size === 0) this.byTarget.delete(target);
    }
  }

  /** References to `target` from rows other than itself. */
  countExcludingSelf(target: Uuid): number {
    const r = this.byTarget.get(target);
    if (r === undefined) return 0;
    let n = 0;
    if (Array.isArray(r)) {
      for (const s of r) if (s !== target) n++;
    } else {
      for (const [s, c] of r) if (s !== target) n += c;
    }
    return n;
  }

  /**
   * The rows referring to `target`, a row referring n times listed n times, in no particular
   * order. Unlike `referrers` it builds nothing for the usual short list (it is the index's
   * own: read it before the index changes, never write it).
   */
  referrerList(target: Uuid): readonly Uuid[] {
    const r = this.byTarget.get(target);
    if (r === undefined) return NO_REFERRERS;
    if (Array.isArray(r)) return r;
    const out: Uuid[] = [];
    for (const [s, c] of r) for (let k = 0; k < c; k++) out.push(s);
    return out;
  }

  /** The rows referring to `target`, each with its number of references. */
  referrers(target: Uuid): ReadonlyMap<Uuid, number> {
    const r = this.byTarget.get(target);
    if (r === undefined) return new Map();
    if (!Array.isArray(r)) return r;
    const m = new Map<Uuid, number>();
    for (const s of r) m.set(s, (m.get(s) ?? 0) + 1);
    return m;
  }
}
