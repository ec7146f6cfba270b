// Set and map insert/delete mutations (ovsdb/mutation.ts) against a plain model: random edits of
// 1 to 12 keys (up to 8 take the path that copies the value once around them, more merge) on
// values of up to 3,000 keys, each result checked element by element, sorted and distinct, and a
// mutation that changes nothing gives back the value it was given.
import t from 'tap';
import type { Atom } from '../../ovsdb/atom.js';
import { compareAtoms } from '../../ovsdb/atom.js';
import type { Datum } from '../../ovsdb/datum.js';
import { parseDatabaseSchema } from '../../ovsdb/index.js';
import { applyMutation, type Mutation } from '../../ovsdb/mutation.js';
import { NB_SCHEMA_JSON } from '../../ovsdb/schemas/index.js';
import { Rng } from '../helpers/seeded-rng.js';

const schema = parseDatabaseSchema(NB_SCHEMA_JSON);
const columnOf = (table: string, name: string) => {
  const c = schema.tables.get(table)?.columns.get(name);
  if (c === undefined) throw new Error(`${table}.${name} not in the schema`);
  return c;
};
const setColumn = columnOf('Address_Set', 'addresses');
const mapColumn = columnOf('Logical_Switch', 'other_config');

const key = (k: number): string => `k${k.toString().padStart(6, '0')}`;

/** Distinct keys drawn from [0, range), sorted as a datum's are. */
function keys(rng: Rng, n: number, range: number): string[] {
  const s = new Set<string>();
  while (s.size < n) s.add(key(rng.int(0, range - 1)));
  return [...s].sort(compareAtoms as (a: string, b: string) => number);
}

function sortedDistinct(a: readonly Atom[]): boolean {
  for (let i = 1; i < a.length; i++) if (compareAtoms(a[i - 1] as Atom, a[i] as Atom) >= 0) return false;
  return true;
}

t.test('set insert and delete equal a plain Set', async (t) => {
  const rng = new Rng(71);
  let mismatches = 0;
  let sameWhenUnchanged = 0;
  let unchanged = 0;
  for (let round = 0; round < 400; round++) {
    const range = rng.int(1, 6000);
    const base = keys(rng, rng.int(0, Math.min(3000, range)), range);
    const arg = keys(rng, rng.int(1, Math.min(12, range)), range);
    const mutator = rng.int(0, 1) === 0 ? 'insert' : 'delete';
    const out = applyMutation({ column: setColumn, mutator, arg: { keys: arg } } as Mutation, { keys: base });
    const model = new Set(base);
    for (const k of arg) {
      if (mutator === 'insert') model.add(k);
      else model.delete(k);
    }
    const want = [...model].sort();
    if (!sortedDistinct(out.keys) || out.keys.length !== want.length || out.keys.some((k, i) => k !== want[i])) mismatches++;
    if (want.length === base.length && want.every((k, i) => k === base[i])) {
      unchanged++;
      if (out.keys === base) sameWhenUnchanged++;
    }
  }
  t.equal(mismatches, 0, 'every result equals the model');
  t.ok(unchanged > 0, `some mutations changed nothing (${unchanged})`);
  t.equal(sameWhenUnchanged, unchanged, 'those gave back the value they were given');
});

t.test('map insert keeps existing values; delete by key or by matching pair', async (t) => {
  const rng = new Rng(72);
  let mismatches = 0;
  for (let round = 0; round < 400; round++) {
    const range = rng.int(1, 4000);
    const baseKeys = keys(rng, rng.int(0, Math.min(2000, range)), range);
    const base: Datum = { keys: baseKeys, values: baseKeys.map((k) => `v-${k}-${rng.int(0, 1)}`) };
    const argKeys = keys(rng, rng.int(1, Math.min(12, range)), range);
    const arg: Datum = { keys: argKeys, values: argKeys.map((k) => `v-${k}-${rng.int(0, 1)}`) };
    const kind = rng.int(0, 2);
    const model = new Map(baseKeys.map((k, i) => [k, base.values?.[i] as string]));
    let m: Mutation;
    if (kind === 0) {
      m = { column: mapColumn, mutator: 'insert', arg } as Mutation;
      argKeys.forEach((k, i) => {
        if (!model.has(k)) model.set(k, arg.values?.[i] as string);
      });
    } else if (kind === 1) {
      m = { column: mapColumn, mutator: 'delete', arg } as Mutation;
      argKeys.forEach((k, i) => {
        if (model.get(k) === arg.values?.[i]) model.delete(k);
      });
    } else {
      m = { column: mapColumn, mutator: 'delete', arg: { keys: argKeys } } as Mutation;
      for (const k of argKeys) model.delete(k);
    }
    const out = applyMutation(m, base);
    const want = [...model.keys()].sort();
    const ok =
      sortedDistinct(out.keys) &&
      out.keys.length === want.length &&
      out.values?.length === want.length &&
      want.every((k, i) => out.keys[i] === k && out.values?.[i] === model.get(k));
    if (!ok) mismatches++;
  }
  t.equal(mismatches, 0, 'every result equals the model');
});
