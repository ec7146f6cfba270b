// Goal: the fault suite's final check finds a lost acknowledged write and a phantom one, lets
// an unknown write be there or not, and finds a write answered as a definite failure that took
// effect. Method: key logs written by hand, settled against final rows with and without the
// damage, then the history through the checker; the door's error replies classified.
import t from 'tap';
import { checkLinearizable } from '../cluster/sim/linearizability.js';
import { Rng } from '../helpers/seeded-rng.js';
import { doorErrorOutcome, registerValue, Workload } from './workload.js';

function workload(): Workload {
  const endpoint = { member: 'n1', nb: '127.0.0.1:1', ovsdb: { host: '127.0.0.1', port: 1 } };
  return new Workload({ prefix: 'w', clients: 1, ovsdbClients: 0, endpoints: () => [endpoint], rng: new Rng(1), callTimeoutMs: 1000, writesPerKeyMax: 10, readShare: 0 });
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

t.test('a write answered as a definite failure must not show up', async (t) => {
  const w = workload();
  withTwoWrites(w);
  const log = w.keys.get('w_c0_k1');
  if (log === undefined) throw new Error('the first key is w_c0_k1');
  log.failed = 'f3';
  t.same(w.settle(new Map([['w_c0_k1', ['a1', 'a2']]]), 10), { lost: [], phantoms: [] }, 'absent: as answered');
  const again = workload();
  withTwoWrites(again);
  (again.keys.get('w_c0_k1') as { failed: string | undefined }).failed = 'f3';
  t.same(again.settle(new Map([['w_c0_k1', ['a1', 'a2', 'f3']]]), 10).phantoms, ['w_c0_k1: f3 (answered as a definite failure)']);
});

t.test("the door's error replies: unknown when the door says it cannot know, else a definite failure", async (t) => {
  // The replies as server/ovsdb-door.ts words them (toRpcError).
  t.equal(doorErrorOutcome({ error: 'unavailable', details: 'the outcome of this transaction is unknown: entry 7 did not apply within 5000 ms (it may still apply)' }), 'unknown');
  t.equal(doorErrorOutcome({ error: 'unavailable', details: 'the leader did not answer a forwarded transaction (gRPC status 14: Connection dropped); it may or may not have committed' }), 'unknown');
  t.equal(doorErrorOutcome({ error: 'timeout', details: 'the leader did not answer a forwarded transaction (gRPC status 4: Deadline exceeded); it may or may not have committed' }), 'unknown');
  t.equal(doorErrorOutcome({ error: 'unavailable', details: 'no leader: raft node 2 is not the leader: no leader is known yet; retry' }), 'failed');
  t.equal(doorErrorOutcome({ error: 'syntax error', details: 'a transaction is a JSON array of operations' }), 'failed');
  t.equal(doorErrorOutcome('unknown database'), 'failed');
});
