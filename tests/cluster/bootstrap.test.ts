// Goal: every founder of a cluster starts with the same first entry, whatever order its peers
// were listed in (the fault suite's check-cluster found founders disagreeing at index 1 when
// each was given itself first). Method: bootstrap states built from permutations compared.
import t from 'tap';
import { bootstrapState } from '../../cluster/bootstrap.js';
import { decodeConfChange } from '../../cluster/conf-change.js';

t.test('the founding entry does not depend on the order of the voters', async (t) => {
  const orders = [[1, 2, 3], [2, 1, 3], [3, 1, 2], [3, 2, 1]];
  const [first, ...rest] = orders.map((o) => bootstrapState(o));
  for (const [i, s] of rest.entries()) t.same(s, first, `voters given as ${orders[i + 1]?.join(',')}`);
  const entry = first?.entries[0];
  t.match(entry, { index: 1, term: 1, type: 'conf-change' });
  t.same(decodeConfChange((entry as { data: Uint8Array }).data), { kind: 'bootstrap', voters: [1, 2, 3] }, 'voters in id order');
});
