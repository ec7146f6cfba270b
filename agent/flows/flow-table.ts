// The desired-flow table: every OpenFlow flow the chassis wants, keyed as OpenFlow identifies a
// flow — (table, priority, match) — with the sources that produced it. A source is one SB row
// (a Logical_Flow, Port_Binding, Multicast_Group, MAC_Binding, …) or a chassis-wide producer,
// named by a string ("lf:<uuid>", "pb:<uuid>", …). A source's flows are replaced whole; the
// table remembers which keys changed until the owner takes them.
//
// Several sources may want the same key (ovn-controller's ofctrl does the same): when only
// conjunction clauses want it, their conjunction actions are merged into one flow; otherwise an
// "allow" flow (actions that are not conjunctions) beats a drop flow, which beats conjunctions,
// and among equals the smallest source name wins — an order that does not depend on history, so
// the table after any sequence of updates equals the table built from scratch.

import { flowKey } from '../openflow/reconcile.js';
import type { FlowSpec, MaskedValue, OfAction } from '../openflow/types.js';

/**
 * What every source wants under one key. Most keys have one source, so that one is held in two
 * fields and a Map is made only for a second: in a chassis holding the 10,000-port topology's
 * 88,685 flows a Map per key was 11 to 16 MB of its 174 MB of state.
 */
class Entry {
  private first: string | undefined;
  private firstFlow: FlowSpec | undefined;
  /** Source name → flow, once two sources or more want the key (then `first` is unused). */
  private many: Map<string, FlowSpec> | undefined;
  /** The effective flow, computed on demand; undefined = not computed yet. */
  effective: FlowSpec | undefined;

  get size(): number {
    return this.many !== undefined ? this.many.size : this.first !== undefined ? 1 : 0;
  }

  get(source: string): FlowSpec | undefined {
    if (this.many !== undefined) return this.many.get(source);
    return source === this.first ? this.firstFlow : undefined;
  }

  set(source: string, f: FlowSpec): void {
    this.effective = undefined;
    if (this.many !== undefined) {
      this.many.set(source, f);
    } else if (this.first === undefined || this.first === source) {
      this.first = source;
      this.firstFlow = f;
    } else {
      this.many = new Map([[this.first, this.firstFlow as FlowSpec], [source, f]]);
      this.first = undefined;
      this.firstFlow = undefined;
    }
  }

  /** Removes a source's flow; false when it wanted nothing here. */
  delete(source: string): boolean {
    if (this.many !== undefined) {
      if (!this.many.delete(source)) return false;
    } else {
      if (this.first !== source) return false;
      this.first = undefined;
      this.firstFlow = undefined;
    }
    this.effective = undefined;
    return true;
  }

  sources(): string[] {
    if (this.many !== undefined) return [...this.many.keys()];
    return this.first === undefined ? [] : [this.first];
  }

  /** The flow this key stands for (see resolve). */
  flow(): FlowSpec | undefined {
    if (this.effective === undefined) this.effective = this.many !== undefined ? resolve(this.many) : this.firstFlow;
    return this.effective;
  }
}

interface SourceFlows {
  readonly keys: readonly string[];
  readonly flows: readonly FlowSpec[];
}

/** Structural equality of plain action data (bigint, Uint8Array, arrays, objects). */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (a instanceof Uint8Array || b instanceof Uint8Array) {
    if (!(a instanceof Uint8Array && b instanceof Uint8Array) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
    return true;
  }
  if (a instanceof Map || b instanceof Map) {
    if (!(a instanceof Map && b instanceof Map) || a.size !== b.size) return false;
    for (const [k, v] of a) if (!b.has(k) || !deepEqual(v, b.get(k))) return false;
    return true;
  }
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  for (const k of ka) {
    if (!deepEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k])) return false;
  }
  return true;
}

/**
 * The match as the switch will report it: Open vSwitch reads 64- and 128-bit register matches
 * (xregN, xxregN) back as their 32-bit registers, most significant first, so a flow's identity
 * must be spelled that way or a reconcile would never recognise it. Other fields are kept.
 */
export function canonicalMatch(match: ReadonlyMap<string, MaskedValue>): ReadonlyMap<string, MaskedValue> {
  let wide = false;
  for (const k of match.keys()) if (k.charCodeAt(0) === 0x78 /* 'x' */) wide = true;
  if (!wide) return match;
  const out = new Map<string, MaskedValue>();
  for (const [name, v] of match) if (!/^xx?reg[0-9]+$/.test(name)) out.set(name, v);
  for (const [name, v] of match) {
    const m = /^(xx?)reg([0-9]+)$/.exec(name);
    if (m === null) continue;
    const n = m[1] === 'xx' ? 4 : 2;
    const first = Number(m[2]) * n;
    for (let i = 0; i < n; i++) {
      const shift = BigInt(32 * (n - 1 - i));
      const pm = (v.mask >> shift) & 0xffffffffn;
      if (pm === 0n) continue;
      const reg = `reg${first + i}`;
      const pv = (v.value >> shift) & pm;
      const prev = out.get(reg);
      out.set(reg, prev === undefined ? { value: pv, mask: pm } : { value: (prev.value & prev.mask & ~pm) | pv, mask: prev.mask | pm });
    }
  }
  return out;
}

/** Same identity is assumed; same content = same cookie and actions. */
export function sameFlowContent(a: FlowSpec, b: FlowSpec): boolean {
  return a.cookie === b.cookie && deepEqual(a.actions, b.actions);
}

const isConj = (f: FlowSpec): boolean => f.actions.length > 0 && f.actions.every((a) => a.kind === 'conjunction');

function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The flow a key stands for, given everything that wants it. */
function resolve(contribs: ReadonlyMap<string, FlowSpec>): FlowSpec | undefined {
  let allow: [string, FlowSpec] | undefined;
  let drop: [string, FlowSpec] | undefined;
  const conj: [string, FlowSpec][] = [];
  for (const [src, f] of contribs) {
    if (isConj(f)) conj.push([src, f]);
    else if (f.actions.length === 0) {
      if (drop === undefined || src < drop[0]) drop = [src, f];
    } else if (allow === undefined || src < allow[0]) allow = [src, f];
  }
  if (allow !== undefined) return allow[1];
  if (drop !== undefined) return drop[1];
  if (conj.length === 0) return undefined;
  if (conj.length === 1) return (conj[0] as [string, FlowSpec])[1];
  conj.sort((x, y) => compareStrings(x[0], y[0]));
  const seen = new Set<string>();
  const actions: OfAction[] = [];
  for (const [, f] of conj) {
    for (const a of f.actions) {
      if (a.kind !== 'conjunction') continue;
      const k = `${a.id}/${a.clause}/${a.nClauses}`;
      if (seen.has(k)) continue;
      seen.add(k);
      actions.push(a);
    }
  }
  actions.sort((x, y) => (x.kind === 'conjunction' && y.kind === 'conjunction' ? x.id - y.id || x.clause - y.clause : 0));
  const first = (conj[0] as [string, FlowSpec])[1];
  return { ...first, actions };
}

/** Merges flows of one source that share a key (conjunctions are combined; else the first wins). */
function mergeWithinSource(a: FlowSpec, b: FlowSpec): FlowSpec {
  if (isConj(a) && isConj(b)) return resolve(new Map([['a', a], ['b', b]])) as FlowSpec;
  return a;
}

/** Named limits of the flow table. */
export const flowTableLimits = {
  /** Distinct (value, mask) pairs a table shares one object for; past it, it starts over. */
  sharedValuesMax: 65_536,
} as const;

/**
 * One MaskedValue object per distinct (value, mask) the flows hold: a chassis's flows repeat a
 * few thousand (the 10,000-port topology's 88,685 flows: 290,220 match fields, 21,778 distinct
 * pairs, which the compiler had made as 188,775 objects, each with its bigints). Bounded: once
 * full it forgets what it shared (flows keep their objects) and shares anew.
 */
class SharedValues {
  private readonly byMask = new Map<bigint, Map<bigint, MaskedValue>>();
  private size = 0;

  of(v: MaskedValue): MaskedValue {
    let byValue = this.byMask.get(v.mask);
    const have = byValue?.get(v.value);
    if (have !== undefined) return have;
    if (this.size >= flowTableLimits.sharedValuesMax) {
      this.byMask.clear();
      this.size = 0;
      byValue = undefined;
    }
    if (byValue === undefined) this.byMask.set(v.mask, (byValue = new Map()));
    byValue.set(v.value, v);
    this.size++;
    return v;
  }
}

export class FlowTable {
  private readonly entries = new Map<string, Entry>();
  private readonly values = new SharedValues();
  private readonly bySource = new Map<string, SourceFlows>();
  private readonly dirty = new Set<string>();

  /** Number of distinct flow keys wanted. */
  get size(): number {
    return this.entries.size;
  }

  get sourceCount(): number {
    return this.bySource.size;
  }

  /** Replaces what a source wants; returns whether anything changed. Matches are kept in
   *  canonical form (see canonicalMatch). */
  setSource(source: string, given: readonly FlowSpec[]): boolean {
    const flows = given.map((f) => this.canonical(f));
    const old = this.bySource.get(source);
    const keys = flows.map((f) => flowKey(f.table, f.priority, f.match));
    if (old !== undefined && old.keys.length === keys.length
      && old.keys.every((k, i) => k === keys[i] && sameFlowContent(old.flows[i] as FlowSpec, flows[i] as FlowSpec))) {
      return false;
    }
    // What the source wants per key now (flows of one source sharing a key merge).
    const next = new Map<string, FlowSpec>();
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i] as string;
      const f = flows[i] as FlowSpec;
      const mine = next.get(k);
      next.set(k, mine === undefined ? f : mergeWithinSource(mine, f));
    }
    // Only keys whose contribution changed are touched (and become dirty).
    for (const k of old?.keys ?? []) {
      if (next.has(k)) continue;
      const e = this.entries.get(k);
      if (e === undefined || !e.delete(source)) continue;
      if (e.size === 0) this.entries.delete(k);
      this.dirty.add(k);
    }
    for (const [k, f] of next) {
      let e = this.entries.get(k);
      if (e === undefined) this.entries.set(k, (e = new Entry()));
      const had = e.get(source);
      if (had !== undefined && sameFlowContent(had, f)) continue;
      e.set(source, f);
      this.dirty.add(k);
    }
    if (flows.length === 0) this.bySource.delete(source);
    else this.bySource.set(source, { keys, flows });
    return true;
  }

  /**
   * Adds flows to and removes flows from what a source wants, without handing over all the rest
   * (a logical flow over an address set of thousands whose set gained or lost a member). Does
   * nothing and returns false unless the source exists, every flow removed is one it wants
   * (same key and content, under a key it wants once) and no flow added shares a key with
   * another flow added or with one it keeps: the caller then replaces the source whole.
   */
  editSource(source: string, add: readonly FlowSpec[], remove: readonly FlowSpec[]): boolean {
    const old = this.bySource.get(source);
    if (old === undefined) return false;
    const removing = new Map<string, FlowSpec>();
    for (const f of remove.map((r) => this.canonical(r))) {
      const k = flowKey(f.table, f.priority, f.match);
      if (removing.has(k)) return false;
      removing.set(k, f);
    }
    const added = add.map((f) => this.canonical(f));
    const addedKeys = added.map((f) => flowKey(f.table, f.priority, f.match));
    const adding = new Set(addedKeys);
    if (adding.size !== addedKeys.length) return false;
    const keys: string[] = [];
    const flows: FlowSpec[] = [];
    const removed = new Set<string>();
    for (let i = 0; i < old.keys.length; i++) {
      const k = old.keys[i] as string;
      const f = old.flows[i] as FlowSpec;
      const r = removing.get(k);
      if (r !== undefined) {
        if (removed.has(k) || !sameFlowContent(f, r)) return false;
        removed.add(k);
        continue;
      }
      if (adding.has(k)) return false;
      keys.push(k);
      flows.push(f);
    }
    if (removed.size !== removing.size) return false;
    for (const k of removed) {
      const e = this.entries.get(k);
      if (e === undefined || !e.delete(source)) continue;
      if (e.size === 0) this.entries.delete(k);
      this.dirty.add(k);
    }
    for (let i = 0; i < added.length; i++) {
      const k = addedKeys[i] as string;
      let e = this.entries.get(k);
      if (e === undefined) this.entries.set(k, (e = new Entry()));
      e.set(source, added[i] as FlowSpec);
      this.dirty.add(k);
      keys.push(k);
      flows.push(added[i] as FlowSpec);
    }
    if (flows.length === 0) this.bySource.delete(source);
    else this.bySource.set(source, { keys, flows });
    return true;
  }

  /**
   * The flow with its match in canonical form (canonicalMatch) and its values shared
   * (SharedValues). A value is replaced in the match it came in, by an equal one: matches are
   * values, and whoever else holds one reads the same.
   */
  private canonical(f: FlowSpec): FlowSpec {
    const match = canonicalMatch(f.match);
    if (match instanceof Map) {
      for (const [name, v] of match) {
        const shared = this.values.of(v);
        if (shared !== v) match.set(name, shared);
      }
    }
    return match === f.match ? f : { ...f, match };
  }

  removeSource(source: string): boolean {
    const old = this.bySource.get(source);
    if (old === undefined) return false;
    this.drop(source, old);
    return true;
  }

  private drop(source: string, old: SourceFlows): void {
    this.bySource.delete(source);
    for (const k of old.keys) {
      const e = this.entries.get(k);
      if (e === undefined) continue;
      e.delete(source);
      if (e.size === 0) this.entries.delete(k);
      this.dirty.add(k);
    }
  }

  /** The flow wanted under a key, or undefined. */
  flow(key: string): FlowSpec | undefined {
    return this.entries.get(key)?.flow();
  }

  /** The sources that want this key, sorted. */
  refs(key: string): string[] {
    return (this.entries.get(key)?.sources() ?? []).sort();
  }

  hasSource(source: string): boolean {
    return this.bySource.has(source);
  }

  /** The flows a source wants (as it gave them). */
  flowsOf(source: string): readonly FlowSpec[] {
    return this.bySource.get(source)?.flows ?? [];
  }

  sources(): IterableIterator<string> {
    return this.bySource.keys();
  }

  keys(): IterableIterator<string> {
    return this.entries.keys();
  }

  /** Every wanted flow with its key. */
  *flows(): IterableIterator<[string, FlowSpec]> {
    for (const k of this.entries.keys()) yield [k, this.flow(k) as FlowSpec];
  }

  /** Keys whose wanted flow may have changed since the last call (added, changed or gone). */
  takeDirty(): string[] {
    const out = [...this.dirty];
    this.dirty.clear();
    return out;
  }

  /** Marks every key dirty, for a resync against the switch. */
  markAllDirty(): void {
    for (const k of this.entries.keys()) this.dirty.add(k);
  }
}
