// Goal: the Controller_Event writer keeps ovn-controller 23.03's table and writes as it does: one
// waiting event per (vip, protocol, load_balancer), at most 1000, dropped once 10 s old while
// nothing can be written; one row per event for this chassis, none while its row exists (nor
// before the stream brings the row it just inserted), a new one after the CMS deleted it; seq_num
// after the highest of this chassis's rows; a failed transaction retried; one in flight at a time.
// Method: a fake central that applies inserts and a fake agent view the test brings up to date
// (the stream's lag), an injected clock.

import t from 'tap';
import { ControllerEventWriter, controllerEventLimits, type ControllerEventRow, type EmptyLbBackendsEvent } from '../../agent/pinctrl/index.js';
import { FakeTimers } from '../helpers/fake-timers.js';

const US = '11111111-1111-4111-8111-111111111111';
const OTHER = '22222222-2222-4222-8222-222222222222';
const LB = '12345678-abcd-9876-fedc-11119f8e7d6c';

interface CentralRow extends ControllerEventRow {
  readonly chassis: string;
}

const ev = (vip: string, protocol = 'tcp', loadBalancer = LB): EmptyLbBackendsEvent => ({ vip, protocol, loadBalancer });

/**
 * The central's Controller_Event rows and the agent's view of them. `mode` says what a
 * transaction meets: committed, refused by the member, the stream down, or held until released.
 */
class FakeCentral {
  readonly rows = new Map<string, CentralRow>();
  view = new Map<string, CentralRow>();
  readonly txns: unknown[][] = [];
  mode: 'commit' | 'refuse' | 'down' | 'hold' = 'commit';
  private held: (() => void)[] = [];
  private next = 0;

  readonly transact = async (ops: readonly unknown[]): Promise<unknown[]> => {
    this.txns.push([...ops]);
    if (this.mode === 'down') throw new Error('14 UNAVAILABLE: No connection established');
    if (this.mode === 'hold') await new Promise<void>((resolve) => this.held.push(resolve));
    if (this.mode === 'refuse') return [{ error: 'constraint violation', details: 'refused by the test' }];
    return ops.map((o) => {
      const { row } = o as { row: { event_info: ['map', [string, string][]]; chassis: ['uuid', string]; seq_num: number } };
      const info = new Map(row.event_info[1]);
      const uuid = `row-${++this.next}`;
      this.rows.set(uuid, { vip: info.get('vip'), protocol: info.get('protocol'), loadBalancer: info.get('load_balancer'), seqNum: row.seq_num, chassis: row.chassis[1] });
      return { uuid: ['uuid', uuid] };
    });
  };

  /** The stream brings the agent's view up to the central's rows. */
  deliver(w?: ControllerEventWriter): void {
    this.view = new Map(this.rows);
    w?.rowsChanged();
  }

  release(): void {
    this.mode = 'commit';
    for (const r of this.held.splice(0)) r();
  }

  readonly lookup = {
    chassisUuid: (): string | undefined => US,
    emptyLbBackendsRows: (us: string): ControllerEventRow[] => [...this.view.values()].filter((r) => r.chassis === us),
  };

  /** The inserted rows of every transaction, as (vip, seq_num). */
  inserted(): string[] {
    return this.txns.flat().map((o) => {
      const r = (o as { row: { event_info: ['map', [string, string][]]; seq_num: number } }).row;
      return `${new Map(r.event_info[1]).get('vip')}#${r.seq_num}`;
    });
  }
}

function setup(limits: Partial<typeof controllerEventLimits> = {}): { central: FakeCentral; timers: FakeTimers; w: ControllerEventWriter; errors: string[] } {
  const central = new FakeCentral();
  const timers = new FakeTimers();
  const errors: string[] = [];
  const w = new ControllerEventWriter({ sb: central, lookup: central.lookup, timers, limits, onError: (m) => errors.push(m) });
  return { central, timers, w, errors };
}

t.test('the table: one waiting event per key, at most 1000, the rest dropped and counted', async (t) => {
  const { central, timers, w } = setup();
  t.teardown(() => w.close());
  t.equal(w.put(ev('10.0.0.10:80')), 'queued');
  t.equal(w.put(ev('10.0.0.10:80')), 'waiting', 'the same VIP, protocol and load balancer: nothing changes');
  t.equal(w.put(ev('10.0.0.10:80', 'udp')), 'queued', 'another protocol is another event');
  t.equal(w.put(ev('10.0.0.10:80', 'tcp', '00000000-0000-4000-8000-000000000001')), 'queued', 'another load balancer too');
  const more = Array.from({ length: controllerEventLimits.pendingMax - 3 }, (_, i) => w.put(ev(`10.1.${i >> 8}.${i & 255}:80`)));
  t.ok(more.every((r) => r === 'queued'), `${more.length} more queued`);
  t.equal(w.pendingN, 1000);
  t.equal(w.put(ev('10.9.9.9:80')), 'full', 'the 1001st is dropped');
  t.equal(w.put(ev('10.0.0.10:80')), 'waiting', 'one already waiting still is');
  t.match(w.stats, { queued: 1000, waiting: 2, droppedFull: 1 });
  await timers.advance(0);
  t.equal(central.txns.length, 1, 'one pass writes them all, in one transaction');
  t.equal(central.txns[0]?.length, 1000);
  t.equal(w.pendingN, 0, 'and the table is empty after it');
  t.equal(w.put(ev('10.9.9.9:80')), 'queued', 'room again');
});

t.test('the writer: a row for this chassis once; none while it exists; a new one after the CMS deleted it', async (t) => {
  const { central, timers, w } = setup();
  t.teardown(() => w.close());
  w.put(ev('10.0.0.10:80'));
  await timers.advance(0);
  t.same(central.txns, [[{
    op: 'insert', table: 'Controller_Event',
    row: {
      event_type: 'empty_lb_backends',
      event_info: ['map', [['load_balancer', LB], ['protocol', 'tcp'], ['vip', '10.0.0.10:80']]],
      chassis: ['uuid', US], seq_num: 1,
    },
  }]]);

  // A packet before the stream brought the row: the row just inserted counts.
  t.equal(w.put(ev('10.0.0.10:80')), 'queued');
  await timers.advance(0);
  t.equal(central.txns.length, 1, 'nothing written before the view has the row');
  central.deliver(w);
  w.put(ev('10.0.0.10:80'));
  await timers.advance(1000);
  t.equal(central.txns.length, 1, 'nothing written while the view has it');
  t.equal(w.stats.exists, 2);

  // The CMS handled it and deleted the row: the next packet writes a new one, numbered after it.
  central.rows.clear();
  central.deliver(w);
  w.put(ev('10.0.0.10:80'));
  await timers.advance(0);
  t.same(central.inserted(), ['10.0.0.10:80#1', '10.0.0.10:80#2']);
  t.equal(w.stats.written, 2);
});

t.test('a row seen and deleted before the next packet does not hold the VIP back', async (t) => {
  const { central, timers, w } = setup();
  t.teardown(() => w.close());
  w.put(ev('10.0.0.10:80'));
  await timers.advance(0);
  central.deliver(w); // the stream brings the row ...
  central.rows.clear();
  central.deliver(w); // ... and its deletion
  w.put(ev('10.0.0.10:80'));
  await timers.advance(0);
  t.same(central.inserted(), ['10.0.0.10:80#1', '10.0.0.10:80#2']);
});

t.test('seq_num: the next after the highest of this chassis\'s rows and of those written', async (t) => {
  const { central, timers, w } = setup();
  t.teardown(() => w.close());
  central.rows.set('old', { vip: '10.0.0.20:80', protocol: 'tcp', loadBalancer: LB, seqNum: 41, chassis: US });
  central.rows.set('theirs', { vip: '10.0.0.30:80', protocol: 'tcp', loadBalancer: LB, seqNum: 99, chassis: OTHER });
  central.deliver(w);
  w.put(ev('10.0.0.10:80'));
  w.put(ev('10.0.0.20:80'));
  w.put(ev('10.0.0.30:80'));
  await timers.advance(0);
  t.same(central.inserted(), ['10.0.0.10:80#42', '10.0.0.30:80#43'], 'ours numbered after 41; another chassis\'s row is not ours, nor its number');
  central.rows.clear();
  central.deliver(w);
  w.put(ev('10.0.0.40:80'));
  await timers.advance(0);
  t.same(central.inserted().slice(2), ['10.0.0.40:80#44'], 'the counter does not go back when the rows go');
});

t.test('a failed transaction is retried after a second, with the events it was to insert', async (t) => {
  const { central, timers, w, errors } = setup();
  t.teardown(() => w.close());
  central.rows.set('old', { vip: '10.0.0.20:80', protocol: 'tcp', loadBalancer: LB, seqNum: 7, chassis: US });
  central.deliver(w);
  central.mode = 'refuse';
  w.put(ev('10.0.0.10:80'));
  w.put(ev('10.0.0.20:80'));
  await timers.advance(0);
  t.equal(central.txns.length, 1);
  t.match(errors, [/Controller_Event insert of 1 rows failed: constraint violation: refused by the test/]);
  central.mode = 'commit';
  await timers.advance(999);
  t.equal(central.txns.length, 1, 'not before the retry delay');
  await timers.advance(1);
  t.same(central.inserted(), ['10.0.0.10:80#8', '10.0.0.10:80#9'], 'retried alone, with the next number');
  t.match(w.stats, { transactions: 2, failedTransactions: 1, written: 1, exists: 1, expired: 0 });
  t.equal(w.pendingN, 0);
});

t.test('while nothing can be written, events are tried every second and dropped at 10 s; newer ones are written once it can', async (t) => {
  const { central, timers, w } = setup();
  t.teardown(() => w.close());
  central.mode = 'down';
  w.put(ev('10.0.0.10:80'));
  await timers.advance(5000);
  w.put(ev('10.0.0.11:80'));
  t.equal(w.put(ev('10.0.0.10:80')), 'waiting', 'the old event still waits, with its first arrival time');
  await timers.advance(5000);
  t.equal(w.stats.expired, 1, 'the first is dropped at 10 s');
  t.equal(w.pendingN, 1);
  t.ok(central.txns.length >= 10 && central.txns.length <= 12, `tried about every second (${central.txns.length} transactions)`);
  await timers.advance(5000);
  t.equal(w.stats.expired, 2, 'and the second at its own 10 s');
  t.equal(w.pendingN, 0, 'nothing waits for ever');
  t.equal(timers.pending, 0, 'and no timer is left armed');

  const tried = central.txns.length;
  await timers.advance(3000);
  w.put(ev('10.0.0.12:80'));
  central.mode = 'commit';
  await timers.advance(0);
  t.equal(central.txns.length, tried + 1);
  const numbers = central.inserted().map((x) => Number(x.split('#')[1]));
  t.same(central.inserted().slice(-1), [`10.0.0.12:80#${Math.max(...numbers.slice(0, -1)) + 1}`], 'back up: the next packet is written at once, numbered after every try');
  t.equal(central.rows.size, 1, 'and only it');
});

t.test('one transaction in flight at a time; what comes meanwhile goes in the next', async (t) => {
  const { central, timers, w } = setup();
  t.teardown(() => w.close());
  central.mode = 'hold';
  w.put(ev('10.0.0.10:80'));
  await timers.advance(0);
  w.put(ev('10.0.0.11:80'));
  w.put(ev('10.0.0.10:80'));
  await timers.advance(2000);
  t.equal(central.txns.length, 1, 'the second waits for the first');
  central.release();
  await timers.advance(0);
  await w.flush();
  t.same(central.inserted(), ['10.0.0.10:80#1', '10.0.0.11:80#2'], 'the VIP written by the first is not written again');
});

t.test('no Chassis row yet: the events are dropped and counted', async (t) => {
  const { central, timers, w } = setup();
  t.teardown(() => w.close());
  central.lookup.chassisUuid = () => undefined;
  w.put(ev('10.0.0.10:80'));
  await timers.advance(0);
  t.equal(central.txns.length, 0);
  t.match(w.stats, { noChassis: 1, written: 0 });
});

t.test('a row inserted and never seen holds its VIP back for the expiry time only', async (t) => {
  const { central, timers, w } = setup();
  t.teardown(() => w.close());
  w.put(ev('10.0.0.10:80'));
  await timers.advance(0);
  central.rows.clear(); // deleted before the stream ever showed it
  await timers.advance(controllerEventLimits.expiryMs - 1);
  w.put(ev('10.0.0.10:80'));
  await timers.advance(0);
  t.equal(central.txns.length, 1, 'within the expiry time: taken as there');
  await timers.advance(1);
  w.put(ev('10.0.0.10:80'));
  await timers.advance(0);
  t.same(central.inserted(), ['10.0.0.10:80#1', '10.0.0.10:80#2'], 'after it: written again');
});
