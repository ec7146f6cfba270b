// Goal: the Service_Monitor status writer keeps its documented bound — at most pendingMax rows
// wait, also when a failed batch comes back to retry while new statuses filled the table.
// Method: a fake SB that fails its first transaction and, while it is in flight, asks for more.

import t from 'tap';
import { SvcStatusWriter } from '../../agent/pinctrl/svc-status-writer.js';

const timers = { now: () => 0, setTimeout: () => undefined, clearTimeout: () => undefined };

t.test('a failed batch retried into a full table is given up, and asked for again later', async (t) => {
  let calls = 0;
  const w: SvcStatusWriter = new SvcStatusWriter({
    timers, pendingMax: 2, batchMax: 2,
    sb: {
      transact: async (ops) => {
        calls++;
        if (calls > 1) return ops.map(() => ({ count: 1 }));
        // Decided while the first transaction is in flight: the table fills again.
        t.equal(w.set('c', 'online'), 'queued');
        t.equal(w.set('d', 'online'), 'queued');
        return [{ error: 'not connected' }];
      },
    },
  });
  w.set('a', 'offline');
  w.set('b', 'offline');
  await w.flush();
  t.equal(calls, 2, 'the failed batch, then c and d');
  t.equal(w.pendingN, 0);
  t.same([w.stats.failedTransactions, w.stats.gaveUp, w.stats.written], [1, 2, 2], 'a and b given up rather than past pendingMax');
  t.equal(w.set('a', 'offline'), 'queued', 'a given-up row is asked for again');
  w.close();
});
