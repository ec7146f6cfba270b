// The incremental engine, after OVN's inc-proc-eng: a DAG of nodes, each the materialized
// result of its declared inputs. On a run, a node whose inputs changed gets each changed input's
// change through that input's handler: 'handled' (applied incrementally, maybe changing the
// node), 'unchanged' (irrelevant to this node) or 'unhandled' (cannot do it incrementally: the
// node recomputes from its inputs' current data). Nodes never read what they did not declare.
//
// Pure: no module state, time or randomness; nodes run in declaration order, which must be a
// topological order (checked). Node data is owned and mutated by the engine instance only.
import assert from 'node:assert/strict';

export type HandlerResult = 'handled' | 'unchanged' | 'unhandled';

/** What a node may read during a run: its declared inputs' data and this run's changes. */
export interface NodeInputs {
  data<T>(name: string): T;
  /** The input's change in this run, or undefined when it did not change. */
  change<T>(name: string): T | undefined;
}

/**
 * Handles one input's change. Contract: when it returns 'unhandled' it must not have touched
 * `data` or `out`; otherwise it records into `out` every change it made to `data`.
 */
export type ChangeHandler<D, C> = (data: D, inputChange: unknown, inputs: NodeInputs, out: C) => HandlerResult;

export interface EngineNode<D, C> {
  readonly name: string;
  readonly inputs: readonly string[];
  /** The node's data before its first run. */
  init(): D;
  /** A fresh, empty change for one run. */
  newChange(): C;
  isEmpty(change: C): boolean;
  /**
   * Brings `data` to the full result of the inputs' current data, recording the difference it
   * makes into `out`. It may keep state that must survive recomputes (allocated tunnel keys).
   */
  recompute(data: D, inputs: NodeInputs, out: C): void;
  /** One handler per input it can follow incrementally; a missing handler means 'unhandled'. */
  readonly handlers: Readonly<Record<string, ChangeHandler<D, C>>>;
  /**
   * Called once after a run's handlers (or its recompute), when the node ran: work that is
   * cheaper done once per run than once per handler (grouping the flows the run touched).
   */
  finish?(data: D, out: C): void;
}

export interface NodeStats {
  readonly recomputes: number;
  readonly incrementalRuns: number;
}

interface Slot {
  readonly node: EngineNode<unknown, unknown> | undefined; // undefined: an input (source) node
  /** What the node may read (made once: a run passes it to every handler of the node). */
  inputs: NodeInputs | undefined;
  /** The slots of the node's inputs, in declaration order. */
  inputSlots: readonly Slot[];
  data: unknown;
  change: unknown;
  recomputes: number;
  incrementalRuns: number;
}

/** Erases a node's types so nodes of different data can share one engine. */
export function erase<D, C>(node: EngineNode<D, C>): EngineNode<unknown, unknown> {
  return node as unknown as EngineNode<unknown, unknown>;
}

export class Engine {
  private readonly slots = new Map<string, Slot>();
  private readonly order: string[] = [];
  private initialized = false;

  /** `sources` are set from outside on every run; `nodes` in a topological order. */
  constructor(sources: readonly string[], nodes: readonly EngineNode<unknown, unknown>[]) {
    for (const name of sources) {
      assert(!this.slots.has(name), `duplicate engine node ${name}`);
      this.slots.set(name, { node: undefined, inputs: undefined, inputSlots: [], data: undefined, change: undefined, recomputes: 0, incrementalRuns: 0 });
    }
    for (const node of nodes) {
      assert(!this.slots.has(node.name), `duplicate engine node ${node.name}`);
      for (const input of node.inputs) assert(this.slots.has(input), `${node.name}: input ${input} is not declared before it`);
      const inputSlots = node.inputs.map((i) => this.slots.get(i) as Slot);
      this.slots.set(node.name, { node, inputs: this.inputsOf(node), inputSlots, data: node.init(), change: undefined, recomputes: 0, incrementalRuns: 0 });
      this.order.push(node.name);
    }
  }

  /**
   * One run: sets every source's data and change (undefined = unchanged), then brings every
   * node up to date. The first run, and a run with `recomputeAll`, recompute every node.
   * Returns each node's change of this run (only nodes that changed).
   */
  run(sources: ReadonlyMap<string, { readonly data: unknown; readonly change: unknown }>, recomputeAll = false): Map<string, unknown> {
    for (const [name, s] of sources) {
      const slot = this.slots.get(name);
      assert(slot !== undefined && slot.node === undefined, `${name} is not a source`);
      slot.data = s.data;
      slot.change = s.change;
    }
    const full = recomputeAll || !this.initialized;
    const changes = new Map<string, unknown>();
    for (const name of this.order) {
      const slot = this.slots.get(name) as Slot;
      const node = slot.node as EngineNode<unknown, unknown>;
      slot.change = undefined;
      // Most runs change a few nodes' inputs: the others are passed over without allocating.
      if (!full && !slot.inputSlots.some((s) => s.change !== undefined)) continue;
      const inputs = slot.inputs as NodeInputs;
      const out = node.newChange();
      if (full) {
        node.recompute(slot.data, inputs, out);
        slot.recomputes++;
      } else {
        let handledAll = true;
        for (let k = 0; k < node.inputs.length; k++) {
          const change = (slot.inputSlots[k] as Slot).change;
          if (change === undefined) continue;
          const handler = node.handlers[node.inputs[k] as string];
          const result = handler === undefined ? 'unhandled' : handler(slot.data, change, inputs, out);
          if (result === 'unhandled') {
            handledAll = false;
            break;
          }
        }
        if (handledAll) {
          slot.incrementalRuns++;
        } else {
          node.recompute(slot.data, inputs, out);
          slot.recomputes++;
        }
      }
      node.finish?.(slot.data, out);
      if (!node.isEmpty(out)) {
        slot.change = out;
        changes.set(name, out);
      }
    }
    // Changes are read during the run only: the caller has them in `changes`, and a slot
    // holding on to its node's would keep a full run's (a change per port) alive until the next.
    for (const slot of this.slots.values()) slot.change = undefined;
    this.initialized = true;
    return changes;
  }

  data<T>(name: string): T {
    const slot = this.slots.get(name);
    assert(slot !== undefined, `no engine node ${name}`);
    return slot.data as T;
  }

  /** Counters per computed node, in run order. */
  stats(): Record<string, NodeStats> {
    const out: Record<string, NodeStats> = {};
    for (const name of this.order) {
      const s = this.slots.get(name) as Slot;
      out[name] = { recomputes: s.recomputes, incrementalRuns: s.incrementalRuns };
    }
    return out;
  }

  private inputsOf(node: EngineNode<unknown, unknown>): NodeInputs {
    const declared = new Set(node.inputs);
    const slots = this.slots;
    return {
      data<T>(name: string): T {
        assert(declared.has(name), `${node.name} reads undeclared input ${name}`);
        return (slots.get(name) as Slot).data as T;
      },
      change<T>(name: string): T | undefined {
        assert(declared.has(name), `${node.name} reads undeclared input ${name}`);
        return (slots.get(name) as Slot).change as T | undefined;
      },
    };
  }
}
