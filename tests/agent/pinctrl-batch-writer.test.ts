// Goal: the batching skeleton under the pinctrl SB writers — due entries in batches of batchMax in
// queue order, the timer at the earliest due entry, one transaction in flight, a table that never
// holds more than pendingMax, a failed batch retried after retryDelayMs at most attemptsMax times,
// flush that resolves after its last transaction, close that stops the timer.
// Method: string items whose ops name their key, a fake clock, a fake SB answered by hand.

import t from 'tap';
import { BatchWriter, type BatchEntry, type BatchStats, type BatchWriterConfig } from '../../agent/pinctrl/batch-writer.js';
import { FakeSb } from '../helpers/fake-sb.js';
import { FakeTimers, settle } from '../helpers/fake-timers.js';

type Config = BatchWriterConfig<string>;

function setup(over: Partial<Omit<Config, 'sb' | 'timers' | 'stats'>> = {}) {
  const timers = new FakeTimers();
  const sb = new FakeSb();
  const stats: BatchStats = { queued: 0, replaced: 0, droppedFull: 0, transactions: 0, failedTransactions: 0 };
  const committed: string[] = [];
  const failures: string[] = [];
  const gaveUp: string[] = [];
  const w = new BatchWriter<string>({
    name: 'TestWriter', sb, timers, stats,
    pendingMax: 10, batchMax: 100, flushBatchesMax: 12, retryDelayMs: 100, attemptsMax: 3,
    plan: (batch: readonly BatchEntry<string>[]) => {
      const items = batch.map((e) => e.item);
      return { ops: items, committed: () => committed.push(...items), failed: (f) => failures.push(f) };
    },
    onGaveUp: (e) => gaveUp.push(e.item),
    ...over,
  });
  const now = (): number => timers.now();
  return { w, timers, sb, stats, committed, failures, gaveUp, now };
}

t.test('due entries go out in batches of batchMax, in queue order, one transaction in flight at a time', async (t) => {
  const { w, timers, sb, stats, committed, now } = setup({ batchMax: 2 });
  sb.auto = undefined;
  for (const k of ['a', 'b', 'c', 'd', 'e']) t.equal(w.put(k, k, now), 'queued');
  t.same(sb.txns, [], 'nothing is written inside put');
  await timers.advance(0);
  t.same(sb.txns, [['a', 'b']]);
  w.put('f', 'f', now);
  await settle();
  t.equal(sb.txns.length, 1, 'the next batch waits for the answer to the first');
  for (let i = 0; i < 3; i++) {
    sb.answer();
    await settle();
  }
  t.same(sb.txns, [['a', 'b'], ['c', 'd'], ['e', 'f']], 'what came while one was in flight goes in a later batch');
  t.equal(sb.inFlightMax, 1);
  t.same(committed, ['a', 'b', 'c', 'd', 'e', 'f']);
  t.same(stats, { queued: 6, replaced: 0, droppedFull: 0, transactions: 3, failedTransactions: 0 });
  t.equal(w.pendingN, 0);
});

t.test('the timer fires when the earliest entry is due; a replacement keeps its place and due time', async (t) => {
  const { w, timers, sb, stats } = setup();
  let asked = 0;
  const at = (ms: number) => (): number => {
    asked++;
    return timers.now() + ms;
  };
  w.put('x', 'x1', at(50));
  w.put('y', 'y1', at(20));
  await timers.advance(19);
  t.same(sb.txns, [], 'not before the earliest is due');
  await timers.advance(1);
  t.same(sb.txns, [['y1']], 'only what is due');
  t.equal(w.put('x', 'x2', at(0)), 'replaced');
  t.equal(asked, 2, 'a replacement does not ask for a due time');
  await timers.advance(29);
  t.equal(sb.txns.length, 1, 'the replacement is not due sooner');
  await timers.advance(1);
  t.same(sb.txns, [['y1'], ['x2']], 'the newer item is written at the first one\'s time');
  t.same([stats.queued, stats.replaced], [2, 1]);
  t.equal(timers.pending, 0, 'no timer is left armed with nothing waiting');
});

t.test('the table never holds more than pendingMax: new keys are refused, retries are given up', async (t) => {
  const { w, sb, stats, gaveUp, failures, now } = setup({ pendingMax: 2, batchMax: 2 });
  t.equal(w.put('a', 'a', now), 'queued');
  t.equal(w.put('b', 'b', now), 'queued');
  let asked = 0;
  t.equal(w.put('c', 'c', () => ++asked), 'full');
  t.equal(asked, 0, 'a refused key is not given a due time');
  t.equal(w.put('a', 'a2', now), 'replaced', 'a waiting key still takes a newer item');
  t.equal(w.pendingN, 2);
  let calls = 0;
  sb.auto = (ops) => {
    calls++;
    if (calls > 1) return ops.map(() => ({}));
    // The table fills again while the first batch is in flight; that batch then fails.
    t.equal(w.put('c', 'c', now), 'queued');
    t.equal(w.put('d', 'd', now), 'queued');
    t.equal(w.put('e', 'e', now), 'full');
    return [{ error: 'not connected' }];
  };
  await w.flush();
  t.same(sb.txns, [['a2', 'b'], ['c', 'd']]);
  t.same(gaveUp, ['a2', 'b'], 'no room to retry: given up rather than past pendingMax');
  t.same(failures, ['not connected']);
  t.same(stats, { queued: 4, replaced: 1, droppedFull: 2, transactions: 2, failedTransactions: 1 });
  t.equal(w.pendingN, 0);
});

t.test('a failed batch is retried after retryDelayMs, at most attemptsMax times; newer or unwanted items are not', async (t) => {
  const unwanted = new Set(['c']);
  const { w, timers, sb, stats, gaveUp, failures, committed, now } = setup({ attemptsMax: 2, stillWanted: (e) => !unwanted.has(e.item) });
  let calls = 0;
  sb.auto = () => {
    calls++;
    // Learned while the first transaction is in flight: a newer item for b.
    if (calls === 1) w.put('b', 'b2', now);
    return [{}, { error: 'constraint violation', details: 'duplicate' }];
  };
  w.put('a', 'a', now);
  w.put('b', 'b', now);
  w.put('c', 'c', now);
  await timers.advance(0);
  t.same(sb.txns, [['a', 'b', 'c'], ['b2']], 'the newer b goes at once, the failed batch waits');
  t.same(failures, ['constraint violation: duplicate', 'constraint violation: duplicate'], 'an error result is a failure');
  t.equal(w.pendingN, 2, 'a and b2 wait to be retried; the old b lost to b2, c is no longer wanted');
  await timers.advance(99);
  t.equal(sb.txns.length, 2, 'not before retryDelayMs');
  await timers.advance(1);
  t.same(sb.txns.at(-1), ['a', 'b2'], 'retried together');
  t.same(gaveUp, ['a', 'b2'], 'given up after attemptsMax transactions');
  await timers.advance(10_000);
  t.equal(sb.txns.length, 3, 'and never tried again');

  sb.auto = (ops) => ops.map(() => ({}));
  sb.transact = async (ops) => {
    sb.txns.push([...ops]);
    if (sb.txns.length === 4) throw new Error('disconnected: stream down');
    return ops.map(() => ({}));
  };
  w.put('t', 't', now);
  await timers.advance(0);
  t.equal(failures.at(-1), 'disconnected: stream down', 'a transport error is a failure too');
  await timers.advance(100);
  t.same(committed, ['t'], 'and retried');
  t.same([stats.transactions, stats.failedTransactions], [5, 4]);
});

t.test('flush resolves after its last transaction; flushBatchesMax leaves the rest to the timer', async (t) => {
  const { w, timers, sb, now } = setup({ batchMax: 1, flushBatchesMax: 2 });
  sb.auto = undefined;
  for (const k of ['a', 'b', 'c']) w.put(k, k, now);
  let done = false;
  const flushed = w.flush().then(() => {
    done = true;
  });
  sb.answer();
  await settle();
  t.same(sb.txns, [['a'], ['b']]);
  t.notOk(done, 'not while its second transaction is in flight');
  sb.answer();
  await flushed;
  t.equal(sb.txns.length, 2, 'two batches, then flush stops');
  t.equal(w.pendingN, 1);
  sb.auto = (ops) => ops.map(() => ({}));
  await timers.advance(0);
  t.same(sb.txns, [['a'], ['b'], ['c']], 'the timer writes the rest');
});

t.test('a plan with nothing to write starts no transaction; close stops the timer and refuses puts', async (t) => {
  const { w, timers, sb, stats, now } = setup({ plan: () => undefined });
  w.put('a', 'a', now);
  await timers.advance(0);
  t.same([sb.txns.length, stats.transactions, w.pendingN], [0, 0, 0], 'nothing written, nothing retried');
  w.put('b', 'b', () => timers.now() + 10);
  t.equal(timers.pending, 1);
  w.close();
  t.ok(w.closed);
  t.equal(timers.pending, 0, 'the timer is cleared');
  t.throws(() => w.put('c', 'c', now), /put on a closed TestWriter/);
  t.throws(() => setup({ pendingMax: 0 }), /TestWriter limits must be positive/);
});
