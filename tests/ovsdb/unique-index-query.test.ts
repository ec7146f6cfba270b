// Goal: a "where" that pins a unique string column (`name == "x"`) finds its rows through the
// schema's unique index and gives exactly what scanning the table gives, in the same order,
// whatever the transaction did before it: rows inserted, renamed onto or away from the name,
// updated, deleted, and names repeated in the middle of a transaction (uniqueness holds only at
// commit). Method: seeded random transactions over the NB schema's Address_Set (a root table,
// unique by name); each select by `name == k` is paired with the same select by
// `name includes k`, which means the same on a scalar column but takes no index.
import t from 'tap';
import { Database, parseDatabaseSchema, transact } from '../../ovsdb/index.js';
import { NB_SCHEMA_JSON } from '../../ovsdb/schemas/index.js';
import { Rng } from '../helpers/seeded-rng.js';

const long = process.env.OVNTS_LONG === '1';
const TXNS = long ? 20_000 : 2_000;
const NAMES = Array.from({ length: 8 }, (_, i) => `as${i}`);

interface Select {
  readonly rows: { readonly _uuid: unknown; readonly name: string; readonly addresses: unknown }[];
}

t.test('select by a unique name through the index == by scanning, through renames, repeats and deletes', async (t) => {
  const rng = new Rng(7);
  const db = new Database(parseDatabaseSchema(NB_SCHEMA_JSON));
  let n = 0;
  const ctx = { newUuid: () => `00000000-0000-4000-8000-${(++n).toString(16).padStart(12, '0')}` };
  const pick = (): string => NAMES[rng.int(0, NAMES.length - 1)] as string;
  let compared = 0;
  let matched = 0;
  let repeated = 0;
  let commits = 0;
  for (let txn = 0; txn < TXNS; txn++) {
    const ops: unknown[] = [];
    const pairs: number[] = [];
    for (let k = rng.int(1, 8); k > 0; k--) {
      switch (rng.int(0, 5)) {
        case 0:
          ops.push({ op: 'insert', table: 'Address_Set', row: { name: pick(), addresses: ['set', [`10.0.0.${rng.int(1, 9)}`]] } });
          break;
        case 1:
          ops.push({ op: 'update', table: 'Address_Set', where: [['name', '==', pick()]], row: { name: pick() } });
          break;
        case 2:
          ops.push({ op: 'update', table: 'Address_Set', where: [['name', '==', pick()]], row: { addresses: ['set', [`10.0.1.${rng.int(1, 9)}`]] } });
          break;
        case 3:
          ops.push({ op: 'delete', table: 'Address_Set', where: [['name', '==', pick()]] });
          break;
        default: {
          const name = pick();
          pairs.push(ops.length);
          ops.push({ op: 'select', table: 'Address_Set', where: [['name', '==', name]] });
          ops.push({ op: 'select', table: 'Address_Set', where: [['name', 'includes', name]] });
        }
      }
    }
    if (rng.int(0, 2) === 0) ops.push({ op: 'abort' });
    const out = transact(db, ops, ctx);
    if (out.kind === 'committed') commits++;
    if (out.kind === 'blocked') continue;
    for (const i of pairs) {
      const byIndex = out.results[i] as Select | null;
      const byScan = out.results[i + 1] as Select | null;
      // Both were run (no op before them failed): they must agree, rows and order.
      if (byIndex === null || byScan === null || !('rows' in byIndex) || !('rows' in byScan)) continue;
      compared++;
      matched += byIndex.rows.length;
      if (byScan.rows.length > 1) repeated++;
      if (JSON.stringify(byIndex.rows) !== JSON.stringify(byScan.rows)) {
        t.fail(`txn ${txn}, op ${i}: by index ${JSON.stringify(byIndex.rows)}, by scan ${JSON.stringify(byScan.rows)}\n  ops ${JSON.stringify(ops)}`);
        return;
      }
    }
  }
  t.pass(`${compared} selects by name agreed with a scan over ${TXNS} transactions (${commits} committed)`);
  t.ok(matched > compared / 4, `they found rows (${matched})`);
  t.ok(repeated > 0, `some found a name repeated inside a transaction (${repeated})`);
  t.ok(commits > TXNS / 10, 'transactions committed, so the index held rows');
});
