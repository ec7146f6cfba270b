// The Logical_Flow holdings driven directly by owners: templates held as a whole (a switch's
// own flows), flows held one by one, and flows held both ways at once, in random sequences.
// After every settle the rows must say, for every flow, exactly the datapaths its holdings
// name and the lowest hints among them; the recorded changes must turn the previous rows into
// the current ones; and building the same owners afresh must give the same rows.
import t from 'tap';
import type { Test } from 'tap';
import type { Row, Uuid } from '../../ovsdb/index.js';
import type * as sb from '../../ovsdb/rows/sb.js';
import { Prng } from '../../cluster/prng.js';
import { hashUuid } from '../../northd/hash.js';
import { datapathRef, lflow, shardTemplateRef } from '../../northd/lflows/flow.js';
import type { LflowsData } from '../../northd/lflows/node.js';
import { lflowHoldings, lflowsNode } from '../../northd/lflows/node.js';
import { SbChangeSet } from '../../northd/sb-changes.js';

const LONG = process.env.OVNTS_LONG !== undefined;
const SEQUENCES = Number(process.env.OVNTS_HOLDINGS_SEQUENCES ?? (LONG ? 10000 : 400));
const STEPS = 60;
const SHARD = 0;

/** Datapaths of one shard (flows are shared only within a shard). */
const dps: Uuid[] = Array.from({ length: 6 }, (_, i) => hashUuid(['test datapath', String(i)]));
const lds = new Map(dps.map((dp) => [dp, datapathRef(dp, SHARD)]));
const HINTS = ['0000000a', '0000000b'];
const CONTENTS = 7;

/** Content `c` with hints `h` (-1: none), in datapath `ld`. */
function flow(ld: readonly Uuid[], c: number, h: number): sb.Logical_Flow {
  return lflow(ld, 'ls_in_acl', 100 + c, `reg0[${c}] == 1`, 'next;', h < 0 ? {} : { hint: HINTS[h] as Uuid });
}

/** Frozen templates of the shard, as switch templates are: subsets of the contents. */
const TEMPLATES: readonly (readonly sb.Logical_Flow[])[] = [
  [0, 1, 2, 3],
  [0, 1, 4],
  [2, 5],
  [0, 1, 2, 3, 6],
].map((cs, i) => Object.freeze(cs.map((c) => flow(shardTemplateRef(SHARD), c, i === 2 ? 0 : -1))));

type Choice = { kind: 'template'; index: number } | { kind: 'direct'; flows: readonly [number, number][] } | { kind: 'none' };

function produce(owner: string, choice: Choice): { flows: readonly sb.Logical_Flow[]; ld?: readonly Uuid[] } {
  const dp = owner.split(' ')[1] as Uuid;
  const ld = lds.get(dp) as readonly Uuid[];
  if (choice.kind === 'template') return { flows: TEMPLATES[choice.index] as readonly sb.Logical_Flow[], ld };
  if (choice.kind === 'direct') return { flows: choice.flows.map(([c, h]) => flow(ld, c, h)) };
  return { flows: [] };
}

function fresh(): LflowsData {
  return lflowsNode().init();
}

function rowsOf(data: LflowsData): Map<string, Row> {
  const out = new Map<string, Row>();
  for (const [uuid, row] of data.table.rows) out.set(`Logical_Flow ${uuid}`, row);
  for (const [uuid, row] of data.groupTable.rows) out.set(`Logical_DP_Group ${uuid}`, row);
  return out;
}

function versions(rows: ReadonlyMap<string, Row>): Record<string, string> {
  return Object.fromEntries([...rows].map(([k, r]) => [k, r._version]).sort(([a], [b]) => ((a as string) < (b as string) ? -1 : 1)));
}

/** What the owners' current flows say each row must be: its datapaths and lowest hint. */
function expected(choices: ReadonlyMap<string, Choice>): Map<Uuid, { dps: string; hint: string }> {
  const byFlow = new Map<Uuid, { dps: Set<Uuid>; hints: string[] }>();
  for (const [owner, choice] of choices) {
    const dp = owner.split(' ')[1] as Uuid;
    for (const f of produce(owner, choice).flows) {
      let e = byFlow.get(f._uuid);
      if (e === undefined) byFlow.set(f._uuid, (e = { dps: new Set(), hints: [] }));
      e.dps.add(dp);
      e.hints.push(f.external_ids.get('stage-hint') ?? '');
    }
  }
  return new Map([...byFlow].map(([uuid, e]) => [uuid, { dps: [...e.dps].sort().join(','), hint: e.hints.sort()[0] as string }]));
}

function check(t: Test, data: LflowsData, choices: ReadonlyMap<string, Choice>, where: string): boolean {
  const want = expected(choices);
  const got = new Map<Uuid, { dps: string; hint: string }>();
  const referenced = new Set<Uuid>();
  for (const row of data.table.rows.values()) {
    const f = row as unknown as sb.Logical_Flow;
    let members = f.logical_datapath;
    if (f.logical_dp_group.length > 0) {
      const g = data.groupTable.rows.get(f.logical_dp_group[0] as Uuid) as unknown as sb.Logical_DP_Group | undefined;
      if (g === undefined) return t.fail(`${where}: flow ${f._uuid} names a missing group`);
      referenced.add(g._uuid);
      members = g.datapaths;
      if (members.length < 2) return t.fail(`${where}: group ${g._uuid} of ${members.length} datapath`);
    }
    got.set(f._uuid, { dps: members.join(','), hint: f.external_ids.get('stage-hint') ?? '' });
  }
  for (const uuid of data.groupTable.rows.keys()) if (!referenced.has(uuid)) return t.fail(`${where}: group ${uuid} referred to by no flow`);
  const w = JSON.stringify([...want].sort());
  const g = JSON.stringify([...got].sort());
  if (w !== g) return t.fail(`${where}: rows do not say the holdings`, { found: g, wanted: w });
  return true;
}

function runSequence(t: Test, seed: number): boolean {
  const rng = new Prng(seed);
  const pick = (n: number): number => rng.nextU32() % n;
  const owners = dps.flatMap((dp) => [`d ${dp}`, `b ${dp}`, `x ${dp}`, `y ${dp}`]);
  const choices = new Map<string, Choice>();
  const data = fresh();
  let view = new Map<string, Row>();
  for (let step = 0; step < STEPS; step++) {
    // A run changes one to five owners, then settles.
    const out = new SbChangeSet();
    for (let k = 1 + pick(5); k > 0; k--) {
      const owner = owners[pick(owners.length)] as string;
      const r = pick(10);
      let choice: Choice;
      if (r < 3) choice = { kind: 'none' };
      else if (owner.startsWith('d ') || owner.startsWith('b ')) choice = { kind: 'template', index: pick(TEMPLATES.length) };
      else {
        const flows: [number, number][] = [];
        for (let c = 0; c < CONTENTS; c++) if (pick(3) === 0) flows.push([c, pick(3) - 1]);
        choice = flows.length === 0 ? { kind: 'none' } : { kind: 'direct', flows };
      }
      const { flows, ld } = produce(owner, choice);
      lflowHoldings.setOwner(data, owner, flows, out, ld);
      if (choice.kind === 'none') choices.delete(owner);
      else choices.set(owner, choice);
    }
    lflowHoldings.settle(data, out);
    const where = `seed ${seed} step ${step} (replay: OVNTS_HOLDINGS_SEED=${seed})`;
    if (!check(t, data, choices, where)) return false;
    // The change set turns the previous rows into these.
    for (const c of out.toChanges()) {
      const key = `${c.table} ${c.uuid}`;
      if (c.kind === 'delete') view.delete(key);
      else view.set(key, c.new);
    }
    const now = rowsOf(data);
    if (JSON.stringify(versions(view)) !== JSON.stringify(versions(now))) return t.fail(`${where}: the changes do not give the rows`);
    view = now;
    // The same owners built afresh, in name order, give the same rows.
    const again = fresh();
    const out2 = new SbChangeSet();
    for (const owner of [...choices.keys()].sort()) {
      const { flows, ld } = produce(owner, choices.get(owner) as Choice);
      lflowHoldings.setOwner(again, owner, flows, out2, ld);
    }
    lflowHoldings.settle(again, out2);
    const freshRows = rowsOf(again);
    if (JSON.stringify(versions(freshRows)) !== JSON.stringify(versions(now))) {
      const differing = [...new Set([...freshRows.keys(), ...now.keys()])].filter((k) => freshRows.get(k)?._version !== now.get(k)?._version);
      const show = (r: Row | undefined): string => JSON.stringify(r, (_k, v: unknown) => (v instanceof Map ? [...v] : v));
      return t.fail(`${where}: a fresh build gives other rows`, { differing: differing.map((k) => `${k}\n  incremental ${show(now.get(k))}\n  fresh       ${show(freshRows.get(k))}`) });
    }
  }
  return true;
}

t.test('holdings through templates, one by one and both: rows follow, changes replay, fresh builds agree', async (t) => {
  const only = process.env.OVNTS_HOLDINGS_SEED;
  const seeds = only !== undefined ? [Number(only)] : Array.from({ length: SEQUENCES }, (_, i) => i + 1);
  let passed = 0;
  for (const seed of seeds) if (runSequence(t, seed)) passed++;
  t.equal(passed, seeds.length, `${passed} of ${seeds.length} sequences of ${STEPS} runs`);
});

t.test('a flow both in a template and held on its own is counted both ways', async (t) => {
  const data = fresh();
  const [a, b] = dps as [Uuid, Uuid];
  const out = new SbChangeSet();
  const tpl = TEMPLATES[0] as readonly sb.Logical_Flow[];
  lflowHoldings.setOwner(data, `d ${a}`, tpl, out, lds.get(a));
  lflowHoldings.setOwner(data, `d ${b}`, tpl, out, lds.get(b));
  lflowHoldings.settle(data, out);
  const shared = data.table.rows.get((tpl[0] as sb.Logical_Flow)._uuid) as unknown as sb.Logical_Flow;
  t.equal(shared.logical_dp_group.length, 1, 'the template flows name one group');
  const classGroup = shared.logical_dp_group[0];
  // An owner of its own in a's datapath produces content 0 with a hint: mixed.
  const out2 = new SbChangeSet();
  lflowHoldings.setOwner(data, `x ${a}`, [flow(lds.get(a) as readonly Uuid[], 0, 0)], out2);
  lflowHoldings.settle(data, out2);
  const mixed = data.table.rows.get((tpl[0] as sb.Logical_Flow)._uuid) as unknown as sb.Logical_Flow;
  t.not(mixed.logical_dp_group[0], classGroup, 'the mixed flow names a group of its members');
  t.same((data.groupTable.rows.get(mixed.logical_dp_group[0] as Uuid) as unknown as sb.Logical_DP_Group).datapaths, [a, b].sort());
  t.equal(mixed.external_ids.get('stage-hint') ?? '', '', 'the lowest hint (none, from the template) shows');
  // Released again: back to the class's group.
  const out3 = new SbChangeSet();
  lflowHoldings.setOwner(data, `x ${a}`, [], out3);
  lflowHoldings.settle(data, out3);
  t.equal((data.table.rows.get((tpl[0] as sb.Logical_Flow)._uuid) as unknown as sb.Logical_Flow).logical_dp_group[0], classGroup);
  t.ok(check(t, data, new Map([[`d ${a}`, { kind: 'template', index: 0 }], [`d ${b}`, { kind: 'template', index: 0 }]]), 'after'));
});

t.test('an owner releasing a flow and a template taking it up in one run leave it held through the template only', async (t) => {
  const data = fresh();
  const [a, b] = dps as [Uuid, Uuid];
  const tpl = TEMPLATES[0] as readonly sb.Logical_Flow[];
  const out = new SbChangeSet();
  // Content 0 held on its own in a and in b: an entry (two holdings).
  lflowHoldings.setOwner(data, `x ${a}`, [flow(lds.get(a) as readonly Uuid[], 0, 0)], out);
  lflowHoldings.setOwner(data, `x ${b}`, [flow(lds.get(b) as readonly Uuid[], 0, 0)], out);
  lflowHoldings.settle(data, out);
  // In one run both let it go, and then a template holding it comes to be held in a.
  const out2 = new SbChangeSet();
  lflowHoldings.setOwner(data, `x ${a}`, [], out2);
  lflowHoldings.setOwner(data, `x ${b}`, [], out2);
  lflowHoldings.setOwner(data, `d ${a}`, tpl, out2, lds.get(a));
  lflowHoldings.settle(data, out2);
  const choices = new Map<string, Choice>([[`d ${a}`, { kind: 'template', index: 0 }]]);
  t.ok(check(t, data, choices, 'after'));
  // And it follows the template from then on.
  const out3 = new SbChangeSet();
  lflowHoldings.setOwner(data, `d ${b}`, tpl, out3, lds.get(b));
  lflowHoldings.settle(data, out3);
  choices.set(`d ${b}`, { kind: 'template', index: 0 });
  t.ok(check(t, data, choices, 'with b'));
  const again = fresh();
  const out4 = new SbChangeSet();
  for (const owner of [...choices.keys()].sort()) lflowHoldings.setOwner(again, owner, tpl, out4, lds.get(owner.split(' ')[1] as Uuid));
  lflowHoldings.settle(again, out4);
  t.same(versions(rowsOf(data)), versions(rowsOf(again)), 'a fresh build agrees');
});
