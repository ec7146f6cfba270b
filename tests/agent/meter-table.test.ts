// Goal: meter ids are handed out as ovn-controller 23.03's meter table hands them out (one per
// name, lowest free from 1, held while a source uses the name, given again only once the
// switch has dropped the old meter, the same id for a name back before then), within a named
// bound; and a name's meter is what ovn-controller installs for it. Method: scripted cases, and
// random sequences of uses, settles and sends against a dumb reference (a linear scan for the
// lowest free id) with a printed seed.

import t from 'tap';
import { setMeterName, setMeterOf } from '../../agent/actions/set-meter.js';
import { METER_BANDS_MAX, MeterTable, meterSpecOf, type MeterRows } from '../../agent/flows/meter-table.js';
import { OFPMF } from '../../agent/openflow/types.js';
import type * as sb from '../../ovsdb/rows/sb.js';
import { Rng } from '../helpers/seeded-rng.js';

const LF = '12345678-1234-4234-8234-123456789abc';

t.test('one id per name, from 1 up; a source uses several, several sources one', async (t) => {
  const m = new MeterTable();
  t.equal(m.use('a'), 1);
  t.equal(m.use('b'), 2);
  t.equal(m.use('a'), 1, 'the same name, the same id');
  m.setUses('lf:1', ['a', 'b']);
  t.equal(m.use('c'), 3);
  m.setUses('lf:2', ['c', 'a']);
  t.equal(m.size, 3);
  t.same(m.takeChanged().sort(), [1, 2, 3], 'every id that came is reported once');
  t.same(m.takeChanged(), []);
  m.setUses('lf:1', ['b']);
  t.equal(m.idOf('a'), 1, 'a is still used by lf:2');
  m.setUses('lf:2', []);
  t.equal(m.idOf('a'), undefined, 'no source uses a or c: they retire');
  t.equal(m.idOf('c'), undefined);
  t.same(m.takeChanged().sort(), [1, 3]);
  t.equal(m.nameOf(2), 'b');
});

t.test('a retired id stays taken until the switch has dropped its meter; a name back before then gets its id again', async (t) => {
  const m = new MeterTable();
  for (const n of ['a', 'b', 'c']) m.use(n);
  m.setUses('lf:1', ['a', 'b', 'c']);
  m.setUses('lf:1', ['b', 'c']);
  t.equal(m.use('d'), 4, 'id 1 is retiring: not given to another meter');
  m.setUses('lf:2', ['d']);
  t.equal(m.use('a'), 1, 'a comes back before the switch dropped meter 1: its own id');
  m.setUses('lf:3', ['a']);
  m.setUses('lf:3', []);
  m.settle();
  t.equal(m.use('e'), 5, 'settle frees only what was sent');
  m.setUses('lf:4', ['e']);
  m.markSent();
  t.equal(m.use('f'), 6, 'sent but not yet settled: still taken');
  m.setUses('lf:5', ['f']);
  m.settle();
  t.equal(m.use('g'), 1, 'settled: the lowest free id again');
  m.setUses('lf:6', ['g']);
  m.setUses('lf:1', []);
  m.markSent();
  t.equal(m.use('b'), 2, 'a name back between markSent and settle keeps its id');
  m.setUses('lf:1', ['b']);
  m.settle();
  t.equal(m.idOf('b'), 2);
  t.equal(m.use('h'), 3, 'only c (id 3) was freed');
});

t.test('a name allocated by a compile that no source then uses retires', async (t) => {
  const m = new MeterTable();
  m.use('a');
  m.use('b');
  m.setUses('lf:1', ['a']);
  t.equal(m.idOf('b'), undefined);
  t.equal(m.idOf('a'), 1);
});

t.test('at most idsMax ids; past it use() says so', async (t) => {
  const m = new MeterTable(3);
  for (const n of ['a', 'b', 'c']) t.ok(m.use(n) !== undefined);
  m.setUses('lf:1', ['a', 'b', 'c']);
  t.equal(m.use('d'), undefined);
  t.throws(() => m.setUses('lf:2', ['d']), /without an id/, 'a name without an id cannot be used');
  m.setUses('lf:1', ['b', 'c']);
  t.equal(m.use('d'), undefined, 'a retiring id is not free yet');
  m.markSent();
  m.settle();
  t.equal(m.use('d'), 1);
});

/** The same rules, done the plain way: the lowest id that is neither in use nor retiring. */
class Reference {
  readonly inUse = new Map<string, number>();
  readonly users = new Map<string, Set<string>>();
  readonly retiring = new Map<string, number>();
  readonly sent = new Set<number>();
  readonly usesOf = new Map<string, string[]>();
  readonly fresh = new Set<string>();
  constructor(private readonly max: number) {}
  use(name: string): number | undefined {
    const have = this.inUse.get(name);
    if (have !== undefined) return have;
    let id = this.retiring.get(name);
    if (id !== undefined) {
      this.retiring.delete(name);
      this.sent.delete(id);
    } else {
      const taken = new Set([...this.inUse.values(), ...this.retiring.values()]);
      id = 1;
      while (taken.has(id)) id++;
      if (id > this.max) return undefined;
    }
    this.inUse.set(name, id);
    this.users.set(name, new Set());
    this.fresh.add(name);
    return id;
  }
  setUses(source: string, names: string[]): void {
    for (const n of this.usesOf.get(source) ?? []) this.users.get(n)?.delete(source);
    for (const n of names) this.users.get(n)?.add(source);
    this.usesOf.set(source, names);
    for (const [n, u] of this.users) {
      if (u.size > 0) continue;
      this.retiring.set(n, this.inUse.get(n) as number);
      this.inUse.delete(n);
      this.users.delete(n);
    }
    this.fresh.clear();
  }
  markSent(): void {
    for (const id of this.retiring.values()) this.sent.add(id);
  }
  settle(): void {
    for (const [n, id] of this.retiring) if (this.sent.has(id)) this.retiring.delete(n);
    this.sent.clear();
  }
}

t.test('random uses, sends and settles: the ids are the reference\'s', async (t) => {
  const seeds = process.env.OVNTS_LONG === '1' ? 500 : 60;
  const names = Array.from({ length: 12 }, (_, i) => `m${i}`);
  let steps = 0;
  let peak = 0;
  for (let seed = 1; seed <= seeds; seed++) {
    const rng = new Rng(seed);
    const max = rng.int(4, 10);
    const m = new MeterTable(max);
    const ref = new Reference(max);
    let failed: string | undefined;
    for (let i = 0; i < 200 && failed === undefined; i++, steps++) {
      const k = rng.int(0, 9);
      if (k === 0) {
        m.markSent();
        ref.markSent();
      } else if (k === 1) {
        m.settle();
        ref.settle();
      } else {
        // A source compiles: it asks for some names and ends up using those it got.
        const source = `lf:${rng.int(0, 5)}`;
        const want = names.filter(() => rng.chance(0.2));
        const got: string[] = [];
        for (const n of want) {
          const a = m.use(n);
          const b = ref.use(n);
          if (a !== b) failed = `use(${n}): ${a} against ${b}`;
          if (a !== undefined) got.push(n);
        }
        m.setUses(source, got);
        ref.setUses(source, got);
      }
      for (const n of names) if (m.idOf(n) !== ref.inUse.get(n)) failed ??= `${n}: ${m.idOf(n)} against ${ref.inUse.get(n)}`;
      peak = Math.max(peak, m.size);
      if (failed !== undefined) failed = `seed ${seed} step ${i}: ${failed}`;
    }
    if (failed !== undefined) {
      t.fail(failed);
      return;
    }
  }
  t.pass(`${steps} steps over ${seeds} seeds agree with the reference`);
  t.ok(peak >= 4, `the tables filled up (up to ${peak} ids)`);
});

function rows(meters: sb.Meter[], bands: sb.Meter_Band[]): MeterRows {
  return {
    meter: (n) => meters.find((m) => m.name === n),
    meterBand: (u) => bands.find((b) => b._uuid === u),
  };
}
const band = (u: string, rate: number, burst = 0): sb.Meter_Band => ({ _uuid: u, action: 'drop', rate, burst_size: burst }) as unknown as sb.Meter_Band;
const sbMeter = (name: string, unit: 'kbps' | 'pktps', bands: string[]): sb.Meter => ({ _uuid: `u-${name}`, name, unit, bands }) as unknown as sb.Meter;

t.test('a name\'s meter: the SB Meter as update_ovs_meter makes it, or the set_meter description', async (t) => {
  const r = rows([sbMeter('acl-log', 'pktps', ['b1']), sbMeter('fair', 'kbps', ['b2', 'b3']), sbMeter('gap', 'kbps', ['b1', 'b9']),
    sbMeter('many', 'kbps', Array.from({ length: METER_BANDS_MAX + 1 }, () => 'b1'))], [band('b1', 10), band('b2', 100, 20), band('b3', 50)]);
  t.same(meterSpecOf(3, 'acl-log', r), { meterId: 3, flags: OFPMF.STATS | OFPMF.PKTPS, bands: [{ type: 'drop', rate: 10, burstSize: 0 }] });
  t.same(meterSpecOf(4, 'fair', r), {
    meterId: 4, flags: OFPMF.STATS | OFPMF.KBPS | OFPMF.BURST, bands: [{ type: 'drop', rate: 100, burstSize: 20 }, { type: 'drop', rate: 50, burstSize: 0 }],
  }, 'one band with a burst size makes the meter a burst meter');
  t.equal(meterSpecOf(5, 'missing', r), undefined, 'no SB Meter of that name: nothing to install');
  t.equal(meterSpecOf(5, 'gap', r), undefined, 'a band row not there (yet): nothing to install');
  t.equal(meterSpecOf(5, 'many', r), undefined, `more than ${METER_BANDS_MAX} bands: nothing to install`);
  t.same(meterSpecOf(1, setMeterName(LF, 100n, 0n), r), { meterId: 1, flags: OFPMF.KBPS | OFPMF.STATS, bands: [{ type: 'drop', rate: 100, burstSize: 0 }] });
  t.same(meterSpecOf(2, setMeterName(LF, 100n, 1000n), r), { meterId: 2, flags: OFPMF.KBPS | OFPMF.STATS | OFPMF.BURST, bands: [{ type: 'drop', rate: 100, burstSize: 1000 }] });
  t.equal(meterSpecOf(2, '__string: uuid x kbps stats bands=type=drop rate=1', r), undefined, 'a description we did not write: nothing');
});

t.test('set_meter names: ovn-controller\'s text, read back', async (t) => {
  t.equal(setMeterName(LF, 100n, 0n), `__string: uuid ${LF} kbps stats bands=type=drop rate=100`);
  t.equal(setMeterName(LF, 4294967295n, 4294967295n), `__string: uuid ${LF} kbps burst stats bands=type=drop rate=4294967295 burst_size=4294967295`);
  // ovn-controller's ofctrl hands what follows the 52nd character to parse_ofp_meter_mod_str.
  t.equal(setMeterName(LF, 100n, 5n).slice(52), 'kbps burst stats bands=type=drop rate=100 burst_size=5');
  t.same(setMeterOf(setMeterName(LF, 7n, 0n)), { rate: 7, burst: 0 });
  t.same(setMeterOf(setMeterName(LF, 7n, 9n)), { rate: 7, burst: 9 });
  t.equal(setMeterOf(setMeterName(LF, 4294967296n, 0n)), undefined, 'beyond 32 bits: not a meter');
});
