// A set column's reference changes, read from the edit a small mutation recorded
// (ovsdb/datum.ts, setEditBetween) or by walking both sets, against a plain Set difference:
// random inserts and deletes of 1 to 12 keys (the splice path records, a larger one merges),
// compared with the value they came from, with one from further back (no edit known), and
// through northd's sortedDifference, which reads the same edits.
import t from 'tap';
import type { Atom, Uuid } from '../../ovsdb/atom.js';
import { forEachRefChange, fromDatum, setEditBetween, toDatum, type Value } from '../../ovsdb/datum.js';
import { parseDatabaseSchema } from '../../ovsdb/index.js';
import { applyMutation, type Mutation } from '../../ovsdb/mutation.js';
import { NB_SCHEMA_JSON } from '../../ovsdb/schemas/index.js';
import { sortedDifference } from '../../northd/same-data.js';
import { Rng } from '../helpers/seeded-rng.js';

const schema = parseDatabaseSchema(NB_SCHEMA_JSON);
const column = schema.tables.get('Logical_Switch')?.columns.get('ports');
if (column === undefined) throw new Error('Logical_Switch.ports not in the schema');
const type = column.type;

const uuidOf = (k: number): Uuid => `00000000-0000-4000-8000-${k.toString(16).padStart(12, '0')}`;

/** What forEachRefChange visits, in order. */
function visits(prev: Value, next: Value): string[] {
  const out: string[] = [];
  forEachRefChange(type, prev, next, (target, _base, sign) => out.push(`${sign > 0 ? '+' : '-'}${target}`));
  return out;
}

/** The same from two plain Sets: removals and additions, in UUID order. */
function expected(prev: readonly Atom[], next: readonly Atom[]): string[] {
  const a = new Set(prev);
  const b = new Set(next);
  const out: [string, string][] = [];
  for (const x of a) if (!b.has(x)) out.push([x as string, `-${x as string}`]);
  for (const x of b) if (!a.has(x)) out.push([x as string, `+${x as string}`]);
  return out.sort((x, y) => (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0)).map((x) => x[1]);
}

t.test('reference changes of mutated sets equal a plain difference, with or without a recorded edit', async (t) => {
  const rng = new Rng(20261203);
  let value: readonly Atom[] = [];
  const past: (readonly Atom[])[] = [];
  let steps = 0;
  let recorded = 0;
  let walked = 0;
  for (let step = 0; step < 3000; step++) {
    const n = rng.chance(0.15) ? rng.int(9, 12) : rng.int(1, 8);
    // Keys from a pool of 600: some present, some not; sorted and distinct as a parsed set is.
    const keys = [...new Set(Array.from({ length: n }, () => uuidOf(rng.int(0, 599))))].sort();
    const mutation: Mutation = { column, mutator: rng.chance(0.6) ? 'insert' : 'delete', arg: { keys } };
    const next = fromDatum(type, applyMutation(mutation, toDatum(type, value))) as readonly Atom[];
    if (setEditBetween(value, next) !== undefined) recorded++;
    else walked++;
    const want = expected(value, next);
    if (JSON.stringify(visits(value, next)) !== JSON.stringify(want)) t.fail(`step ${step}: visits from the value it came from`);
    const diff = sortedDifference(value as string[], next as string[]);
    if (JSON.stringify([...diff.removed.map((x) => `-${x}`), ...diff.added.map((x) => `+${x}`)].sort()) !== JSON.stringify([...want].sort())) t.fail(`step ${step}: sortedDifference`);
    // From a value further back, no recorded edit leads to `next`: the walk answers.
    const older = past.length > 0 ? (past[rng.int(0, past.length - 1)] as readonly Atom[]) : [];
    if (JSON.stringify(visits(older, next)) !== JSON.stringify(expected(older, next))) t.fail(`step ${step}: visits from an older value`);
    past.push(value);
    if (past.length > 20) past.shift();
    value = next;
    steps++;
  }
  t.equal(steps, 3000);
  t.ok(recorded > 1000, `${recorded} steps read the recorded edit`);
  t.ok(walked > 100, `${walked} steps walked both sets (a mutation of more than 8 keys, or nothing changed)`);
});
