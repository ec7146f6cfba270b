// Goal: the linearizability checker accepts exactly the linearizable register histories.
// Method: hand-made histories with known answers, including pending (never-answered) writes.

import t from 'tap';
import { checkLinearizable, type Operation } from './sim/linearizability.js';

const w = (client: string, key: string, value: string, call: number, ret: number): Operation => ({
  client, key, kind: 'write', value, call, ret,
});
const r = (client: string, key: string, value: string | null, call: number, ret: number): Operation => ({
  client, key, kind: 'read', value, call, ret,
});
const pending = Number.POSITIVE_INFINITY;

t.test('linearizable histories', (tt) => {
  const ok = (name: string, h: Operation[]): void => {
    tt.equal(checkLinearizable(h).kind, 'ok', name);
  };
  ok('empty', []);
  ok('read of the initial value', [r('c1', 'x', null, 0, 1)]);
  ok('sequential write then read', [w('c1', 'x', '1', 0, 1), r('c2', 'x', '1', 2, 3)]);
  ok('concurrent read may see the old value', [w('c1', 'x', '1', 0, 5), r('c2', 'x', null, 1, 2)]);
  ok('concurrent read may see the new value', [w('c1', 'x', '1', 0, 5), r('c2', 'x', '1', 1, 2)]);
  ok('concurrent writes in either order', [
    w('c1', 'x', '1', 0, 4),
    w('c2', 'x', '2', 1, 5),
    r('c3', 'x', '1', 6, 7),
  ]);
  ok('a pending write may take effect late', [w('c1', 'x', '1', 0, pending), r('c2', 'x', null, 1, 2), r('c2', 'x', '1', 3, 4)]);
  ok('a pending write may never take effect', [w('c1', 'x', '1', 0, pending), r('c2', 'x', null, 5, 6)]);
  ok('keys are independent', [w('c1', 'x', '1', 0, 1), w('c1', 'y', '2', 2, 3), r('c2', 'x', '1', 4, 5), r('c2', 'y', '2', 4, 5)]);
  tt.end();
});

t.test('non-linearizable histories', (tt) => {
  const bad = (name: string, h: Operation[]): void => {
    tt.equal(checkLinearizable(h).kind, 'violation', name);
  };
  bad('stale read after a completed write', [w('c1', 'x', '1', 0, 1), r('c2', 'x', null, 2, 3)]);
  bad('read of a value never written', [r('c1', 'x', '7', 0, 1)]);
  bad('read goes back in time', [
    w('c1', 'x', '1', 0, 1),
    w('c1', 'x', '2', 2, 3),
    r('c2', 'x', '2', 4, 5),
    r('c3', 'x', '1', 6, 7),
  ]);
  bad('two readers disagree on the order of concurrent writes', [
    w('c1', 'x', '1', 0, 10),
    w('c2', 'x', '2', 0, 10),
    r('c3', 'x', '1', 1, 2),
    r('c3', 'x', '2', 3, 4),
    r('c4', 'x', '2', 1, 2),
    r('c4', 'x', '1', 3, 4),
  ]);
  bad('a read sees a write that starts after it returned', [r('c1', 'x', '1', 0, 1), w('c2', 'x', '1', 2, 3)]);
  tt.equal(checkLinearizable([w('c1', 'y', '1', 0, 1), r('c2', 'y', null, 2, 3)]).kind === 'violation'
    ? 'y' : '', 'y', 'the violation names its key');
  tt.end();
});
