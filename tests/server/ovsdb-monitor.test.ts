// The update2/update3 "modify" of a set column (server/ovsdb-monitor.ts, changeUpdates) against
// a plain Set difference: random changes to sets of uuids, integers, reals and strings, made by
// insert/delete mutations (whose edits ovsdb records) and by whole-value updates (which it does
// not), over sets of up to a few thousand elements. The diff must be exactly the elements in one
// value and not the other, in ovsdb-server's order.
import t from 'tap';
import type { Atom } from '../../ovsdb/atom.js';
import { compareAtoms } from '../../ovsdb/atom.js';
import { Database, parseDatabaseSchema, transact, type Row, type Value } from '../../ovsdb/index.js';
import { changeUpdates, parseMonitorRequests, type Monitor } from '../../server/ovsdb-monitor.js';
import { Rng } from '../helpers/seeded-rng.js';

const schema = parseDatabaseSchema({
  name: 'Sets',
  version: '1.0.0',
  tables: {
    T: {
      columns: {
        u: { type: { key: 'uuid', min: 0, max: 'unlimited' } },
        i: { type: { key: 'integer', min: 0, max: 'unlimited' } },
        r: { type: { key: 'real', min: 0, max: 'unlimited' } },
        s: { type: { key: 'string', min: 0, max: 'unlimited' } },
      },
    },
  },
});
const columns = ['u', 'i', 'r', 's'] as const;
type Column = (typeof columns)[number];

function atomFor(rng: Rng, c: Column, universe: number): Atom {
  const k = rng.int(0, universe - 1);
  switch (c) {
    case 'u': return `00000000-0000-4000-8000-${k.toString(16).padStart(12, '0')}`;
    case 'i': return k - Math.floor(universe / 2);
    case 'r': return (k - Math.floor(universe / 2)) / 4;
    case 's': return `name-${k}`;
  }
}

const json = (c: Column, a: Atom): unknown => (c === 'u' ? ['uuid', a] : a);
const setJson = (c: Column, atoms: readonly Atom[]): unknown => ['set', atoms.map((a) => json(c, a))];

/** The symmetric difference of two values, sorted as ovsdb-server sorts a set. */
function reference(before: readonly Atom[], after: readonly Atom[]): Atom[] {
  const a = new Set(before);
  const b = new Set(after);
  return [...before.filter((x) => !b.has(x)), ...after.filter((x) => !a.has(x))].sort(compareAtoms);
}

/** The atoms of an update2 set diff as it is on the wire (a bare atom for one, ["set", …] otherwise). */
function wireAtoms(c: Column, diff: unknown): Atom[] {
  const one = (x: unknown): Atom => (c === 'u' ? ((x as [string, string])[1] as Atom) : (x as Atom));
  if (Array.isArray(diff) && diff[0] === 'set') return (diff[1] as unknown[]).map(one);
  return [one(diff)];
}

t.test('a set column\'s modify diff is the symmetric difference, however the value changed', async (t) => {
  const rng = new Rng(20261205);
  const db = new Database(schema);
  let n = 0;
  const newUuid = (): string => `10000000-0000-4000-8000-${(++n).toString(16).padStart(12, '0')}`;
  const created = transact(db, [{ op: 'insert', table: 'T', row: {} }], { newUuid });
  if (created.kind !== 'committed') throw new Error('insert failed');
  const uuid = (db.rows('T').values().next().value as Row)._uuid;
  const m: Monitor = { id: 'm', db: 'Sets', version: 2, tables: parseMonitorRequests(db, { T: {} }, 2) };
  let checked = 0;
  let failures = 0;
  for (let step = 0; step < 400; step++) {
    const c = columns[rng.int(0, columns.length - 1)] as Column;
    const universe = rng.chance(0.5) ? 40 : 6000;
    const before = (db.rows('T').get(uuid) as Row)[c] as readonly Atom[];
    let op: unknown;
    if (rng.chance(0.6)) {
      // A mutation of a few atoms: its edit is recorded.
      const atoms = [...new Set(Array.from({ length: rng.int(1, 12) }, () => atomFor(rng, c, universe)))];
      op = { op: 'mutate', table: 'T', where: [], mutations: [[c, rng.chance(0.5) ? 'insert' : 'delete', setJson(c, atoms)]] };
    } else {
      // A whole new value: some of the old atoms kept, some new ones.
      const kept = before.filter(() => rng.chance(0.9));
      const fresh = Array.from({ length: rng.int(0, universe > 100 ? 2500 : 20) }, () => atomFor(rng, c, universe));
      op = { op: 'update', table: 'T', where: [], row: { [c]: setJson(c, [...new Set([...kept, ...fresh])]) } };
    }
    const out = transact(db, [op], { newUuid });
    if (out.kind !== 'committed') throw new Error(`step ${step}: ${JSON.stringify(out)}`);
    const after = (db.rows('T').get(uuid) as Row)[c] as Value as readonly Atom[];
    const want = reference(before, after);
    const updates = changeUpdates(m, out.delta.changes);
    if (want.length === 0) {
      if (updates !== undefined && (updates['T']?.[uuid] as { modify?: Record<string, unknown> } | undefined)?.modify?.[c] !== undefined) failures++;
      continue;
    }
    const diff = (updates?.['T']?.[uuid] as { modify: Record<string, unknown> } | undefined)?.modify[c];
    const got = diff === undefined ? [] : wireAtoms(c, diff);
    checked++;
    if (JSON.stringify(got) !== JSON.stringify(want)) {
      failures++;
      if (failures <= 3) t.fail(`step ${step}, column ${c}: got ${JSON.stringify(got).slice(0, 200)}, want ${JSON.stringify(want).slice(0, 200)}`);
    }
  }
  t.equal(failures, 0, 'every diff equals the reference');
  t.ok(checked > 200, `${checked} changed values checked`);
});
