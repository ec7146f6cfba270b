// uuidOrder (the order of an SbDelta's rows) against the default sort it replaces: random
// UUIDs, UUIDs sharing their first eight digits, and keys of other shapes mixed in.
import t from 'tap';
import { hashUuid } from '../../northd/hash.js';
import { uuidOrder } from '../../northd/sb-changes.js';

t.test('uuidOrder orders keys as the default sort does', async (t) => {
  let x = 99;
  const next = (m: number): number => {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    return (x >>> 16) % m;
  };
  const cases: string[][] = [];
  for (const n of [0, 1, 63, 64, 65, 1000, 20000]) cases.push(Array.from({ length: n }, (_, i) => hashUuid(['k', String(i)])));
  // Shared first eight digits: the tie-break must compare the rest.
  cases.push(Array.from({ length: 3000 }, (_, i) => `0000000${next(3)}-${hashUuid(['t', String(i)]).slice(9)}`));
  cases.push(Array.from({ length: 500 }, (_, i) => `abcdef01${hashUuid(['s', String(i)]).slice(8, 8 + next(30))}`));
  // Prefixes that differ only in the bits of one radix pass (the low, middle or high 11 bits).
  for (const step of [1, 2 ** 11, 2 ** 22]) {
    cases.push(Array.from({ length: 700 }, (_, i) => `${((next(2047) * step) >>> 0).toString(16).padStart(8, '0')}-${hashUuid(['r', String(step), String(i)]).slice(9)}`));
  }
  // Other shapes anywhere: the default sort.
  for (const odd of ['ABCDEF01-0000', 'abc', '', 'zzzzzzzz-1', 'é0000000']) {
    const keys = Array.from({ length: 200 }, (_, i) => hashUuid(['o', String(i)]));
    keys.splice(next(200), 0, odd);
    cases.push(keys);
  }
  for (const keys of cases) {
    const want = [...keys].sort();
    const order = uuidOrder(keys);
    t.same([...order].sort((a, b) => a - b), keys.map((_, i) => i), 'a permutation');
    t.same([...order].map((i) => keys[i]), want, `${keys.length} keys`);
  }
});
