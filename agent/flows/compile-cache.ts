// A cache of compiled logical flows shared by the agents of one process (a simulation of many
// chassis): what a Logical_Flow row compiles to on one datapath is the same for every chassis
// that holds the same SB rows, except for three chassis-specific steps that are applied after
// the cache — dropping flows for ports not related to the chassis, and placing conjunction ids
// in the chassis's own id space — and one input the cache refuses: rows that ask
// is_chassis_resident() or need groups (ct_lb, fwd_group, select) are always compiled by each agent.
//
// Entries are found by the row's UUID and a signature of what the compile read: the row's own
// _version and, by _version, the datapath and each port, multicast group, address set and port
// group the row's text names. A row's _version changes whenever its content does (the
// central's are hashes of the content), so agents that decoded the same rows from streams of
// their own, each holding its own row objects, find each other's entries. A cached result's
// flow objects are shared between agents when nothing chassis-specific changes them, which is
// most of the memory saving.
//
// Bounded by two generations of at most `generationEntriesMax` entries each: when the current
// one is full it becomes the previous one and the one before is dropped; a hit in the previous
// generation moves to the current one. Entries no agent asks for any more (a row changed, a
// port it names moved) so leave within two generations.

import type { FlowSpec, MaskedValue, OfAction } from '../openflow/types.js';

export interface CachedCompile {
  /** Flows as compiled with every port related and conjunction ids from 1. */
  readonly flows: readonly FlowSpec[];
  readonly conjunctionsN: number;
}

export class SharedCompileCache {
  private current = new Map<string, CachedCompile>();
  private previous = new Map<string, CachedCompile>();
  readonly counters = { hits: 0, misses: 0, generations: 0 };

  constructor(readonly generationEntriesMax = 50_000) {}

  /** Entries held, both generations. */
  get size(): number {
    return this.current.size + this.previous.size;
  }

  get(row: { readonly _uuid: string }, key: string): CachedCompile | undefined {
    const k = `${row._uuid}|${key}`;
    let hit = this.current.get(k);
    if (hit === undefined) {
      hit = this.previous.get(k);
      if (hit !== undefined) {
        this.previous.delete(k);
        this.put(k, hit);
      }
    }
    if (hit === undefined) this.counters.misses++;
    else this.counters.hits++;
    return hit;
  }

  set(row: { readonly _uuid: string }, key: string, value: CachedCompile): void {
    this.put(`${row._uuid}|${key}`, value);
  }

  private put(k: string, value: CachedCompile): void {
    if (this.current.size >= this.generationEntriesMax && !this.current.has(k)) {
      this.previous = this.current;
      this.current = new Map();
      this.counters.generations++;
    }
    this.current.set(k, value);
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
