// newMembers (northd/lflows/node.ts): a class's Logical_DP_Group members after a run's joins and
// leaves, merged into one array. Checked against the set operations on random lists, from one
// member to more than the preallocated size, and on inputs that break the callers' rule (a
// join that is a member already, a leave that is not one), where the result is still the sets'.
import t from 'tap';
import type { Uuid } from '../../ovsdb/index.js';
import { newMembers } from '../../northd/lflows/node.js';
import { Rng } from '../helpers/seeded-rng.js';

function reference(old: readonly Uuid[], joined: ReadonlySet<Uuid>, left: ReadonlySet<Uuid>): Uuid[] {
  const all = new Set(old);
  for (const dp of left) all.delete(dp);
  for (const dp of joined) all.add(dp);
  return [...all].sort();
}

function sample(rng: Rng, from: readonly Uuid[], n: number): Set<Uuid> {
  const out = new Set<Uuid>();
  for (let i = 0; i < n && from.length > 0; i++) out.add(from[rng.int(0, from.length - 1)] as Uuid);
  return out;
}

t.test('random joins and leaves equal the set operations', async (t) => {
  const rng = new Rng(20261204);
  let cases = 0;
  for (const size of [0, 1, 2, 9, 100, 3000, 70_000]) {
    const rounds = size > 10_000 ? 4 : 60;
    for (let r = 0; r < rounds; r++) {
      const old = Array.from({ length: size }, () => rng.uuid()).sort();
      const fresh = Array.from({ length: rng.int(0, 40) }, () => rng.uuid());
      const joined = new Set(fresh.filter((dp) => !old.includes(dp)));
      const left = sample(rng, old, rng.int(0, Math.min(size, 40)));
      const got = newMembers(old, joined, left);
      const want = reference(old, joined, left);
      if (got.length !== want.length || got.some((dp, i) => dp !== want[i])) {
        t.same(got, want, `size ${size}, ${joined.size} joins, ${left.size} leaves`);
        return;
      }
      cases++;
    }
  }
  t.pass(`${cases} cases`);
});

t.test('no change, undefined sets, and inputs outside the callers\' rule', async (t) => {
  const rng = new Rng(7);
  const old = Array.from({ length: 50 }, () => rng.uuid()).sort();
  t.same(newMembers(old, undefined, undefined), old);
  t.not(newMembers(old, undefined, undefined), old, 'always a new array: rows share the old one');
  t.same(newMembers(old, new Set(), new Set()), old);
  const outsider = rng.uuid();
  const member = old[10] as Uuid;
  t.same(newMembers(old, new Set([member, outsider]), undefined), reference(old, new Set([member, outsider]), new Set()), 'a join that is a member already');
  t.same(newMembers(old, undefined, new Set([outsider, member])), reference(old, new Set(), new Set([outsider, member])), 'a leave that is not a member');
  t.same(newMembers([], new Set([outsider]), new Set([member])), [outsider]);
});
