// Goal: learned MAC bindings reach the SB as ovn-controller writes them — insert, update or
// nothing, in bounded batches, one transaction at a time, multicast-learned ones after their
// delay, failed ones retried a bounded number of times — and the waiting table never grows past
// its limit.
// Method: a fake clock and timer queue, a fake SB whose transactions the test completes by hand.

import t from 'tap';
import { MacBindingWriter, multicastDelayMsMax, type LearnedBinding, type MacBindingLookup } from '../../agent/pinctrl/mac-binding-writer.js';
import { FakeSb } from '../helpers/fake-sb.js';
import { FakeTimers, settle } from '../helpers/fake-timers.js';


const existing = new Map<string, string>();
const lookup: MacBindingLookup = {
  portName: (dp, port) => (dp === 0 ? undefined : `lrp-${dp}-${port}`),
  datapathUuid: (dp) => (dp === 0 ? undefined : `dp-${dp}`),
  macBinding: (lp, ip) => {
    const mac = existing.get(`${lp}|${ip}`);
    return mac === undefined ? undefined : { mac };
  },
};

const b = (ip: string, mac = '0a:00:00:00:00:01', over: Partial<LearnedBinding> = {}): LearnedBinding =>
  ({ dpKey: 1, portKey: 2, ip, mac, unicast: true, ...over });

function setup(over: Partial<ConstructorParameters<typeof MacBindingWriter>[0]> = {}): { w: MacBindingWriter; timers: FakeTimers; sb: FakeSb; errors: string[] } {
  const timers = new FakeTimers();
  const sb = new FakeSb();
  const errors: string[] = [];
  const w = new MacBindingWriter({ sb, lookup, timers, wallClockMs: () => 42, random: () => 0.5, onError: (m) => errors.push(m), ...over });
  return { w, timers, sb, errors };
}

t.beforeEach(() => existing.clear());

t.test('a unicast binding is inserted at once; one the SB has is updated, or left alone', async (t) => {
  const { w, timers, sb } = setup();
  existing.set('lrp-1-2|10.0.0.2', '0a:00:00:00:00:02');
  existing.set('lrp-1-2|10.0.0.3', '0a:00:00:00:00:99');
  t.equal(w.put(b('10.0.0.1')), 'queued');
  w.put(b('10.0.0.2'));
  w.put(b('10.0.0.3', '0a:00:00:00:00:99'));
  t.equal(sb.txns.length, 0, 'nothing is written inside put');
  await timers.advance(0);
  t.same(sb.txns, [[
    { op: 'insert', table: 'MAC_Binding', row: { logical_port: 'lrp-1-2', ip: '10.0.0.1', mac: '0a:00:00:00:00:01', datapath: ['uuid', 'dp-1'], timestamp: 42 } },
    { op: 'update', table: 'MAC_Binding', where: [['logical_port', '==', 'lrp-1-2'], ['ip', '==', '10.0.0.2']], row: { mac: '0a:00:00:00:00:01', timestamp: 42 } },
  ]], 'one transaction: an insert and an update; the same MAC is not written');
  t.same([w.stats.inserted, w.stats.updated, w.stats.unchanged, w.stats.transactions], [1, 1, 1, 1]);
  t.equal(w.pendingN, 0);
});

t.test('a binding learned from a multicast packet waits 1..50 ms', async (t) => {
  const { w, timers, sb } = setup({ random: () => 0.5 });
  w.put(b('10.0.0.1', undefined, { unicast: false }));
  await timers.advance(25);
  t.equal(sb.txns.length, 0, 'not at 25 ms');
  await timers.advance(1);
  t.equal(sb.txns.length, 1, 'at 26 ms (0.5 × 50 + 1)');
  const slow = setup({ random: () => 0.999999 });
  slow.w.put(b('10.0.0.1', undefined, { unicast: false }));
  await slow.timers.advance(multicastDelayMsMax - 1);
  t.equal(slow.sb.txns.length, 0);
  await slow.timers.advance(1);
  t.equal(slow.sb.txns.length, 1, `at most ${multicastDelayMsMax} ms`);
});

t.test('a newer MAC for a waiting key replaces it; the table refuses keys past its limit', async (t) => {
  const { w, timers, sb } = setup({ pendingMax: 3 });
  w.put(b('10.0.0.1', '0a:00:00:00:00:01', { unicast: false }));
  t.equal(w.put(b('10.0.0.1', '0a:00:00:00:00:0f', { unicast: false })), 'replaced');
  w.put(b('10.0.0.2'));
  w.put(b('10.0.0.3'));
  t.equal(w.put(b('10.0.0.4')), 'full');
  t.equal(w.pendingN, 3);
  await timers.advance(100);
  const ops = sb.txns.flat() as { row: { ip: string; mac: string } }[];
  t.same(ops.map((o) => `${o.row.ip} ${o.row.mac}`).sort(), ['10.0.0.1 0a:00:00:00:00:0f', '10.0.0.2 0a:00:00:00:00:01', '10.0.0.3 0a:00:00:00:00:01']);
  t.same([w.stats.queued, w.stats.replaced, w.stats.droppedFull], [3, 1, 1]);
});

t.test('bindings go out in batches of batchMax, one transaction in flight at a time', async (t) => {
  const { w, timers, sb } = setup({ batchMax: 100, pendingMax: 1000 });
  sb.auto = undefined;
  for (let i = 0; i < 250; i++) w.put(b(`10.0.${i >> 8}.${i & 255}`));
  await timers.advance(0);
  t.equal(sb.txns.length, 1);
  for (let i = 0; i < 5; i++) w.put(b(`10.1.0.${i}`));
  await settle();
  t.equal(sb.txns.length, 1, 'the next batch waits for the answer to the first');
  sb.answer();
  await settle();
  sb.answer();
  await settle();
  sb.answer();
  await settle();
  t.same(sb.txns.map((x) => x.length), [100, 100, 55]);
  t.equal(sb.inFlightMax, 1);
  t.equal(w.pendingN, 0);
  t.equal(w.stats.inserted, 255);
});

t.test('a failed transaction is retried after retryDelayMs, at most attemptsMax times', async (t) => {
  const { w, timers, sb, errors } = setup({ retryDelayMs: 500, attemptsMax: 2 });
  let fail = true;
  sb.auto = (ops) => (fail ? [{}, { error: 'constraint violation', details: 'duplicate (logical_port, ip)' }] : ops.map(() => ({})));
  w.put(b('10.0.0.1'));
  w.put(b('10.0.0.2'));
  await timers.advance(0);
  t.equal(sb.txns.length, 1);
  t.match(errors[0], /constraint violation: duplicate/);
  t.equal(w.pendingN, 2, 'both bindings wait again (the transaction was all or nothing)');
  await timers.advance(499);
  t.equal(sb.txns.length, 1, 'not before the retry delay');
  // Meanwhile the other chassis's row arrived in the SB view: the retry becomes an update.
  existing.set('lrp-1-2|10.0.0.1', '0a:00:00:00:00:77');
  fail = false;
  await timers.advance(1);
  t.equal(sb.txns.length, 2);
  t.same((sb.txns[1] as { op: string }[]).map((o) => o.op), ['update', 'insert']);
  t.same([w.stats.failedTransactions, w.stats.updated, w.stats.inserted, w.stats.gaveUp], [1, 1, 1, 0]);

  fail = true;
  w.put(b('10.0.0.9'));
  await timers.advance(0);
  await timers.advance(500);
  t.equal(w.stats.gaveUp, 1, 'given up after two failed transactions');
  t.equal(w.pendingN, 0);
  await timers.advance(5000);
  t.equal(sb.txns.length, 4, 'and never tried again');
});

t.test('a transport failure counts as a failed transaction; a newer binding wins over a retry', async (t) => {
  const { w, timers, sb } = setup({ retryDelayMs: 100 });
  let calls = 0;
  sb.transact = async (ops) => {
    sb.txns.push([...ops]);
    calls++;
    if (calls === 1) {
      // Learned while the first transaction is in flight.
      w.put(b('10.0.0.1', '0a:00:00:00:00:02'));
      throw new Error('disconnected: stream down');
    }
    return ops.map(() => ({}));
  };
  w.put(b('10.0.0.1', '0a:00:00:00:00:01'));
  await timers.advance(0);
  await timers.advance(0);
  t.equal(w.stats.failedTransactions, 1);
  t.same((sb.txns.at(-1) as { row: { mac: string } }[]).map((o) => o.row.mac), ['0a:00:00:00:00:02'], 'the newer MAC is what is written');
  t.equal(w.pendingN, 0, 'the failed older binding did not come back');
});

t.test('bindings of ports the SB view does not know are dropped', async (t) => {
  const { w, timers, sb } = setup();
  w.put(b('10.0.0.1', undefined, { dpKey: 0 }));
  await timers.advance(0);
  t.same([sb.txns.length, w.stats.unknownPort], [0, 1]);
  w.close();
  t.throws(() => w.put(b('10.0.0.2')), /closed/);
});
