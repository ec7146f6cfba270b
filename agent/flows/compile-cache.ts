// A cache of compiled logical flows shared by the agents of one process (a simulation of many
// chassis): what a Logical_Flow row compiles to on one datapath is the same for every chassis
// that holds the same SB rows, except for three chassis-specific steps that are applied after
// the cache — dropping flows for ports not related to the chassis, and placing conjunction ids
// in the chassis's own id space — and one input the cache refuses: rows that ask
// is_chassis_resident() or need groups (ct_lb, fwd_group, select) are always compiled by each agent.
//
// Entries are found by the row object itself (agents fed the same snapshot share row objects)
// and a signature of every other row the compile read: the datapath and each port, multicast
// group, address set and port group the row's text names, by _version. A cached result's flow
// objects are shared between agents when nothing chassis-specific changes them, which is most
// of the memory saving. Bounded: past entriesMax the cache starts empty again.

import type { FlowSpec, MaskedValue, OfAction } from '../openflow/types.js';

export interface CachedCompile {
  /** Flows as compiled with every port related and conjunction ids from 1. */
  readonly flows: readonly FlowSpec[];
  readonly conjunctionsN: number;
}

export class SharedCompileCache {
  private byRow = new WeakMap<object, Map<string, CachedCompile>>();
  private entries = 0;
  readonly counters = { hits: 0, misses: 0, resets: 0 };

  constructor(readonly entriesMax = 2_000_000) {}

  get(row: object, key: string): CachedCompile | undefined {
    const hit = this.byRow.get(row)?.get(key);
    if (hit === undefined) this.counters.misses++;
    else this.counters.hits++;
    return hit;
  }

  set(row: object, key: string, value: CachedCompile): void {
    if (this.entries >= this.entriesMax) {
      this.byRow = new WeakMap();
      this.entries = 0;
      this.counters.resets++;
    }
    let m = this.byRow.get(row);
    if (m === undefined) this.byRow.set(row, (m = new Map()));
    if (!m.has(key)) this.entries++;
    m.set(key, value);
  }
}

/**
 * The chassis-specific steps compileLogicalFlow does per datapath, on a cached result: on a
 * switch, drop flows whose match names a port (reg14 in ingress, reg15 in egress) that is not
 * related here; shift conjunction ids by 'conjOfs'. Flows nothing applies to are returned as
 * the same objects.
 */
export function adaptCached(c: CachedCompile, portReg: 'reg14' | 'reg15', isSwitch: boolean,
  isRelated: (portKey: number) => boolean, conjOfs: number): FlowSpec[] {
  const out: FlowSpec[] = [];
  for (const f of c.flows) {
    if (isSwitch) {
      const port = f.match.get(portReg);
      if (port !== undefined && port.value !== 0n && !isRelated(Number(port.value))) continue;
    }
    if (conjOfs === 0) {
      out.push(f);
      continue;
    }
    const conjId = f.match.get('conj_id');
    let match: ReadonlyMap<string, MaskedValue> = f.match;
    if (conjId !== undefined) {
      const m = new Map(f.match);
      m.set('conj_id', { value: conjId.value + BigInt(conjOfs), mask: conjId.mask });
      match = m;
    }
    const conj = f.actions.some((a) => a.kind === 'conjunction');
    const actions: readonly OfAction[] = conj
      ? f.actions.map((a) => (a.kind === 'conjunction' ? { ...a, id: a.id + conjOfs } : a))
      : f.actions;
    out.push(match === f.match && actions === f.actions ? f : { ...f, match, actions });
  }
  return out;
}
