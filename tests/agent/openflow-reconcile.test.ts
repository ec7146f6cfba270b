// Goal: diffFlows turns any installed flow table into the desired one with only the difference:
// flows already right are untouched, changed actions are modified in place, and nothing is
// cleared first. Method: table-driven cases, and a seeded property over random desired sets and
// random drifts, applied to a small model of a switch's flow table (the oracle: the model equals
// the desired set afterwards, a second diff is empty, untouched flows keep their identity).

import t from 'tap';
import { encodeActions } from '../../agent/openflow/actions.js';
import type { FlowMod, FlowStats } from '../../agent/openflow/messages.js';
import { diffFlows, flowKey } from '../../agent/openflow/reconcile.js';
import type { FlowSpec, OfAction } from '../../agent/openflow/types.js';
import { genActions, genMatch } from '../helpers/ovs-openflow-gen.js';
import { Rng } from '../helpers/seeded-rng.js';

const seed = Number(process.env.OVNTS_SEED ?? 77);

interface ModelFlow {
  spec: FlowSpec;
  /** Changes when the flow is replaced (add), not when it is modified: stands for its counters. */
  born: number;
}

class ModelSwitch {
  readonly flows = new Map<string, ModelFlow>();
  private births = 0;

  apply(m: FlowMod): void {
    const k = flowKey(m.table, m.priority, m.match);
    const prev = this.flows.get(k);
    switch (m.command) {
      case 'add':
        this.flows.set(k, { spec: { table: m.table, priority: m.priority, match: m.match, actions: m.actions, cookie: m.cookie }, born: ++this.births });
        return;
      case 'modify_strict':
        if (prev !== undefined) prev.spec = { ...prev.spec, actions: m.actions };
        return;
      case 'delete_strict':
        this.flows.delete(k);
        return;
      default:
        throw new Error(`the diff should only use add, modify_strict and delete_strict, not ${m.command}`);
    }
  }

  dump(): FlowStats[] {
    return [...this.flows.values()].map(({ spec }) => ({
      table: spec.table, priority: spec.priority, idleTimeout: 0, hardTimeout: 0, flags: 0, importance: 0, cookie: spec.cookie,
      match: spec.match, actions: spec.actions.filter((a) => a.kind !== 'drop'), actionBytes: encodeActions(spec.actions),
    }));
  }
}

const m1 = new Map([['reg14', { value: 1n, mask: 0xffffffffn }]]);
const m2 = new Map([['reg14', { value: 2n, mask: 0xffffffffn }]]);
const out = (port: number): OfAction[] => [{ kind: 'output', port }];
const spec = (match: FlowSpec['match'], actions: OfAction[], cookie = 1n, priority = 100): FlowSpec => ({ table: 8, priority, match, actions, cookie });

t.test('table-driven cases', async (t) => {
  const cases: { name: string; installed: FlowSpec[]; desired: FlowSpec[]; commands: string[] }[] = [
    { name: 'nothing to do', installed: [spec(m1, out(1))], desired: [spec(m1, out(1))], commands: [] },
    { name: 'add one', installed: [spec(m1, out(1))], desired: [spec(m1, out(1)), spec(m2, out(2))], commands: ['add'] },
    { name: 'delete one', installed: [spec(m1, out(1)), spec(m2, out(2))], desired: [spec(m1, out(1))], commands: ['delete_strict'] },
    { name: 'new actions modify in place', installed: [spec(m1, out(1))], desired: [spec(m1, out(3))], commands: ['modify_strict'] },
    { name: 'new cookie replaces', installed: [spec(m1, out(1))], desired: [spec(m1, out(1), 2n)], commands: ['add'] },
    { name: 'priority is identity', installed: [spec(m1, out(1), 1n, 5)], desired: [spec(m1, out(1), 1n, 6)], commands: ['delete_strict', 'add'] },
    { name: 'drop equals no actions', installed: [spec(m1, [])], desired: [spec(m1, [{ kind: 'drop' }])], commands: [] },
  ];
  for (const c of cases) {
    const sw = new ModelSwitch();
    for (const f of c.installed) sw.apply({ command: 'add', ...f });
    const d = diffFlows(c.desired, sw.dump());
    t.same(d.mods.map((m) => m.command), c.commands, c.name);
  }
});

t.test('duplicates in the desired set: the first wins', async (t) => {
  const d = diffFlows([spec(m1, out(1)), spec(m1, out(2))], []);
  t.equal(d.duplicates, 1);
  t.same(d.mods.map((m) => m.actions), [out(1)]);
});

t.test('tables option keeps foreign tables', async (t) => {
  const sw = new ModelSwitch();
  sw.apply({ command: 'add', ...spec(m1, out(1)), table: 99 });
  t.equal(diffFlows([], sw.dump(), { tables: new Set([8]) }).mods.length, 0);
  t.equal(diffFlows([], sw.dump()).mods.length, 1);
});

t.test('property: reconcile converges with only the difference', async (t) => {
  const rng = new Rng(seed);
  for (let round = 0; round < 200; round++) {
    const base: FlowSpec[] = Array.from({ length: rng.int(0, 40) }, () => ({
      table: rng.int(0, 3), priority: rng.int(0, 3), match: genMatch(rng, 3), actions: genActions(rng, 3), cookie: BigInt(rng.int(0, 2)),
    }));
    const sw = new ModelSwitch();
    for (const m of diffFlows(base, sw.dump()).mods) sw.apply(m);
    // Drift: the desired set changes a little.
    const desired = base.flatMap((f): FlowSpec[] => {
      const r = rng.int(0, 9);
      if (r === 0) return [];
      if (r === 1) return [{ ...f, actions: genActions(rng, 3) }];
      if (r === 2) return [{ ...f, cookie: f.cookie + 1n }];
      return [f];
    });
    for (let i = rng.int(0, 5); i > 0; i--) desired.push({ table: rng.int(0, 3), priority: rng.int(0, 3), match: genMatch(rng, 3), actions: genActions(rng, 3), cookie: 0n });
    const before = new Map([...sw.flows].map(([k, f]) => [k, { born: f.born, cookie: f.spec.cookie }]));
    const d = diffFlows(desired, sw.dump());
    for (const m of d.mods) sw.apply(m);
    const want = new Map<string, FlowSpec>();
    for (const f of desired) {
      const k = flowKey(f.table, f.priority, f.match);
      if (!want.has(k)) want.set(k, f);
    }
    const okKeys = t.same([...sw.flows.keys()].sort(), [...want.keys()].sort(), `round ${round}: same flows (seed ${seed})`);
    let okContent = true;
    let touchedWithoutCause = 0;
    for (const [k, f] of want) {
      const got = sw.flows.get(k);
      if (got === undefined || got.spec.cookie !== f.cookie || !encodeActions(got.spec.actions).equals(encodeActions(f.actions))) okContent = false;
      const was = before.get(k);
      if (was !== undefined && got !== undefined && got.born !== was.born && was.cookie === f.cookie) {
        // Replaced although only its actions (or nothing) changed.
        touchedWithoutCause++;
      }
    }
    t.ok(okContent, `round ${round}: same cookies and actions`);
    t.equal(touchedWithoutCause, 0, `round ${round}: flows with an unchanged cookie keep their counters`);
    t.equal(diffFlows(desired, sw.dump()).mods.length, 0, `round ${round}: a second diff is empty`);
    if (!okKeys || !okContent) break;
  }
});
