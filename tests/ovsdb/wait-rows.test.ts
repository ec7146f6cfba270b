// The "wait" operation's comparison of its rows with its query's (ovsdb/transaction.ts): as
// sets, on the named columns only, duplicates counting once. One row against one is compared
// value by value, a whole table's rows through keys; both must give the same answers, with set
// columns of hundreds of elements (ovn-nbctl verifies a switch's ports before writing them).
import t from 'tap';
import { Database, parseDatabaseSchema, transact } from '../../ovsdb/index.js';

const schema = parseDatabaseSchema({
  name: 'W',
  version: '1.0.0',
  tables: {
    T: {
      columns: {
        s: { type: { key: 'string', min: 0, max: 'unlimited' } },
        m: { type: { key: 'string', value: 'integer', min: 0, max: 'unlimited' } },
        n: { type: 'integer' },
      },
    },
  },
});

const ROWS = 20;
const big = (i: number): unknown => ['set', Array.from({ length: 300 }, (_, k) => `r${i}-e${k}`)];
const mapOf = (i: number): unknown => ['map', [['a', i], ['b', i * 2]]];

function setup(): { db: Database; uuids: string[] } {
  const db = new Database(schema);
  let n = 0;
  const newUuid = (): string => `00000000-0000-4000-8000-${(++n).toString(16).padStart(12, '0')}`;
  const out = transact(db, Array.from({ length: ROWS }, (_, i) => ({ op: 'insert', table: 'T', row: { s: big(i), m: mapOf(i), n: i } })), { newUuid });
  if (out.kind !== 'committed') throw new Error('setup failed');
  return { db, uuids: (out.results as { uuid: [string, string] }[]).map((r) => r.uuid[1]) };
}

function waitOutcome(db: Database, op: Record<string, unknown>): string {
  const out = transact(db, [{ op: 'wait', table: 'T', timeout: 0, ...op }], { newUuid: () => '00000000-0000-4000-8000-ffffffffffff' });
  return out.kind === 'committed' ? 'ok' : out.kind === 'failed' ? JSON.stringify(out.results) : 'blocked';
}

t.test('one row, compared value by value', async (t) => {
  const { db, uuids } = setup();
  const where = [['_uuid', '==', ['uuid', uuids[3]]]];
  t.equal(waitOutcome(db, { where, columns: ['s', 'm', 'n'], until: '==', rows: [{ s: big(3), m: mapOf(3), n: 3 }] }), 'ok', '== with its values');
  t.equal(waitOutcome(db, { where, columns: ['s', 'm', 'n'], until: '==', rows: [{ s: big(3), m: mapOf(3), n: 3 }, { s: big(3), m: mapOf(3), n: 3 }] }), 'ok', 'a row listed twice counts once');
  t.match(waitOutcome(db, { where, columns: ['s'], until: '==', rows: [{ s: big(4) }] }), /timed out/, '== with another row\'s set');
  t.match(waitOutcome(db, { where, columns: ['m'], until: '==', rows: [{ m: mapOf(4) }] }), /timed out/, '== with another map');
  t.equal(waitOutcome(db, { where, columns: ['n'], until: '==', rows: [{ n: 3, s: big(9) }] }), 'ok', 'columns not named are not compared');
  t.equal(waitOutcome(db, { where, columns: ['s'], until: '!=', rows: [{ s: big(4) }] }), 'ok', '!= with another set');
  t.match(waitOutcome(db, { where, columns: ['s'], until: '!=', rows: [{ s: big(3) }] }), /timed out/, '!= with its own set');
});

t.test('a whole table, compared through keys', async (t) => {
  const { db } = setup();
  const all = Array.from({ length: ROWS }, (_, i) => ({ s: big(i), n: i }));
  const shuffled = [...all].reverse();
  t.equal(waitOutcome(db, { where: [], columns: ['s', 'n'], until: '==', rows: shuffled }), 'ok', '== with every row, in another order');
  t.equal(waitOutcome(db, { where: [], columns: ['s', 'n'], until: '==', rows: [...shuffled, all[0]] }), 'ok', 'a row listed twice counts once');
  t.match(waitOutcome(db, { where: [], columns: ['s', 'n'], until: '==', rows: shuffled.slice(1) }), /timed out/, '== with a row missing');
  const changed = [...all];
  changed[7] = { s: big(8), n: 7 };
  t.match(waitOutcome(db, { where: [], columns: ['s', 'n'], until: '==', rows: changed }), /timed out/, '== with one row\'s set wrong');
  t.equal(waitOutcome(db, { where: [], columns: ['s', 'n'], until: '!=', rows: changed }), 'ok', '!= with one row\'s set wrong');
});
