// sortedDifference (a merge walk over two sorted set columns) beside a dumb reference built
// from Sets, on random arrays; and sameData on the shapes projections compare.
import t from 'tap';
import { sameData, sortedDifference } from '../../northd/same-data.js';
import { Rng } from '../helpers/seeded-rng.js';

function reference(before: readonly string[], after: readonly string[]): { removed: string[]; added: string[] } {
  const b = new Set(before);
  const a = new Set(after);
  return { removed: before.filter((x) => !a.has(x)), added: after.filter((x) => !b.has(x)) };
}

t.test('sortedDifference equals the Set-based reference', async (t) => {
  const rng = new Rng(7);
  const universe = Array.from({ length: 40 }, (_, i) => `u${String(i).padStart(2, '0')}`);
  let failures = 0;
  for (let i = 0; i < 2000; i++) {
    const before = rng.subset(universe, rng.int(0, 40)).sort();
    const after = rng.subset(universe, rng.int(0, 40)).sort();
    if (!sameData(sortedDifference(before, after), reference(before, after))) failures++;
  }
  t.equal(failures, 0, 'every random pair');
  const same = ['a', 'b'];
  t.same(sortedDifference(same, same), { removed: [], added: [] }, 'the same array');
});

t.test('sameData', async (t) => {
  t.ok(sameData({ a: [1, new Map([['k', { x: 'y' }]])] }, { a: [1, new Map([['k', { x: 'y' }]])] }));
  t.notOk(sameData({ a: 1 }, { a: 1, b: undefined }), 'a missing member differs from an undefined one');
  t.notOk(sameData(new Map([['k', 1]]), new Map([['k', 2]])));
  t.notOk(sameData([1, 2], [2, 1]));
  t.notOk(sameData(new Set(['a']), ['a']));
});
