// Goal: the fault suite's final check finds a lost acknowledged write and a phantom one, and
// lets an unknown write be there or not. Method: key logs written by hand, settled against
// final rows with and without the damage, then the history through the checker.
import t from 'tap';
import { checkLinearizable } from '../cluster/sim/linearizability.js';
import { Rng } from '../helpers/seeded-rng.js';
import { registerValue, Workload } from './workload.js';

function workload(): Workload {
  return new Workload({ prefix: 'w', clients: 1, endpoints: () => ['127.0.0.1:1'], rng: new Rng(1), callTimeoutMs: 1000, writesPerKeyMax: 10, readShare: 0 });
}

/** Key w_c0_k1 with two acknowledged writes (a1, a2) recorded as the workload records them. */
function withTwoWrites(w: Workload, unknown?: string): void {
  const log = w.keys.get('w_c0_k1');
  if (log === undefined) throw new Error('the first key is w_c0_k1');
  log.acked.push('a1', 'a2');
  w.history.push({ client: '0', key: log.key, kind: 'write', value: registerValue(['a1']), call: 0, ret: 1, endpoint: 'x' });
  w.history.push({ client: '0', key: log.key, kind: 'write', value: registerValue(['a1', 'a2']), call: 2, ret: 3, endpoint: 'x' });
  if (unknown !== undefined) {
    log.unknown = unknown;
    w.history.push({ client: '0', key: log.key, kind: 'write', value: registerValue(['a1', 'a2', unknown]), call: 4, ret: Infinity, endpoint: 'x' });
  }
}

t.test('every acknowledged write there: nothing lost, linearizable', async (t) => {
  const w = workload();
  withTwoWrites(w);
  const r = w.settle(new Map([['w_c0_k1', ['a2', 'a1']]]), 10);
  t.same(r, { lost: [], phantoms: [] });
  t.equal(checkLinearizable(w.history).kind, 'ok');
});

t.test('an acknowledged write missing is lost, and the history is not linearizable', async (t) => {
  const w = workload();
  withTwoWrites(w);
  const r = w.settle(new Map([['w_c0_k1', ['a2']]]), 10);
  t.same(r.lost, ['w_c0_k1: a1']);
  t.equal(checkLinearizable(w.history).kind, 'violation');
  const gone = workload();
  withTwoWrites(gone);
  t.same(gone.settle(new Map(), 10).lost, ['w_c0_k1: a1', 'w_c0_k1: a2'], 'a row gone loses every write');
});

t.test('an unknown write may be there or not; anything else is a phantom', async (t) => {
  for (const final of [['a1', 'a2'], ['a1', 'a2', 'u3']]) {
    const w = workload();
    withTwoWrites(w, 'u3');
    t.same(w.settle(new Map([['w_c0_k1', final]]), 10), { lost: [], phantoms: [] }, `final ${final.join(',')}`);
    t.equal(checkLinearizable(w.history).kind, 'ok');
  }
  const w = workload();
  withTwoWrites(w);
  const r = w.settle(new Map([['w_c0_k1', ['a1', 'a2', 'x9']], ['w_c9_k9', ['z']]]), 10);
  t.same(r.phantoms, ['w_c0_k1: x9', 'w_c9_k9: a row no client inserted']);
});
