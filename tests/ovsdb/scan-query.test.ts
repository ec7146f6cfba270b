// Goal: a "where" on a column gives exactly the rows a model of the transaction says, in the
// table's order, whatever the transaction did before it: rows inserted, renamed onto or away
// from the name, updated, deleted. Without an index the table is scanned: committed rows are
// read as they are until the transaction changes one of the table's rows, and through the
// transaction's own changes after that; a scalar column is compared atom to atom. With a
// secondary index on the column (as the central's NB keeps on Logical_Switch.name), `==` finds
// its rows through the index, and scans when more than one committed row matches. Method:
// seeded random transactions over the NB schema's Logical_Switch (a root table; name has no
// unique index), each select by `name == k`, `name != k`, `name includes k` or
// `name excludes k` checked against a model of the rows (name and other_config) in table
// order; once without an index, once with one.
import t from 'tap';
import type { Test } from 'tap';
import { Database, parseDatabaseSchema, transact } from '../../ovsdb/index.js';
import { NB_SCHEMA_JSON } from '../../ovsdb/schemas/index.js';
import { Rng } from '../helpers/seeded-rng.js';

const long = process.env.OVNTS_LONG === '1';
const TXNS = long ? 20_000 : 2_000;
const NAMES = Array.from({ length: 6 }, (_, i) => `ls${i}`);

interface ModelRow {
  /** '' for a row the current transaction inserted. */
  readonly uuid: string;
  /** Which of the transaction's inserts made it (for a row it inserted). */
  readonly insert?: number;
  name: string;
  tag: string;
}

interface Select {
  readonly rows: { readonly _uuid: [string, string]; readonly name: string }[];
}

const schema = parseDatabaseSchema(NB_SCHEMA_JSON);

t.test('select by a column with no index == the model, through renames, updates, deletes and aborts', async (t) => {
  check(t, new Database(schema), 11);
});

t.test('select by a column with a secondary index == the model, through renames, updates, deletes and aborts', async (t) => {
  check(t, new Database(schema, { secondaryIndexes: [{ table: 'Logical_Switch', column: 'name' }] }), 12);
});

function check(t: Test, db: Database, seed: number): void {
  const rng = new Rng(seed);
  let n = 0;
  // Increasing UUIDs: rows a transaction inserts enter the table in UUID order at commit, so
  // here in the order they were inserted.
  const ctx = { newUuid: () => `00000000-0000-4000-8000-${(++n).toString(16).padStart(12, '0')}` };
  const pick = (): string => NAMES[rng.int(0, NAMES.length - 1)] as string;
  let committed: ModelRow[] = [];
  let checked = 0;
  let nonEmpty = 0;
  let touchedFirst = 0;
  for (let txn = 0; txn < TXNS; txn++) {
    // The transaction's view: committed rows (copies) in table order, then its inserts.
    const view: ModelRow[] = committed.map((r) => ({ ...r }));
    const ops: unknown[] = [];
    const expected: { index: number; rows: string[][] }[] = [];
    let changedCommitted = false;
    let inserts = 0;
    for (let k = rng.int(1, 8); k > 0; k--) {
      const matching = (name: string): ModelRow[] => view.filter((r) => r.name === name);
      // A delete removes every row of a name: two in three of them insert instead, so the
      // table keeps names that several rows share.
      let kind = rng.int(0, 5);
      if (kind === 3 && rng.int(0, 2) > 0) kind = 0;
      switch (kind) {
        case 0: {
          const name = pick();
          ops.push({ op: 'insert', table: 'Logical_Switch', row: { name } });
          view.push({ uuid: '', insert: inserts, name, tag: '' });
          inserts++;
          break;
        }
        case 1: {
          const [from, to] = [pick(), pick()];
          ops.push({ op: 'update', table: 'Logical_Switch', where: [['name', '==', from]], row: { name: to } });
          for (const r of matching(from)) {
            if (r.uuid !== '' && from !== to) changedCommitted = true;
            r.name = to;
          }
          break;
        }
        case 2: {
          const name = pick();
          const tag = `t${rng.int(0, 3)}`;
          ops.push({ op: 'update', table: 'Logical_Switch', where: [['name', '==', name]], row: { other_config: ['map', [['tag', tag]]] } });
          for (const r of matching(name)) {
            if (r.uuid !== '' && r.tag !== tag) changedCommitted = true;
            r.tag = tag;
          }
          break;
        }
        case 3: {
          const name = pick();
          ops.push({ op: 'delete', table: 'Logical_Switch', where: [['name', '==', name]] });
          for (const r of matching(name)) {
            if (r.uuid !== '') changedCommitted = true;
            view.splice(view.indexOf(r), 1);
          }
          break;
        }
        default: {
          const name = pick();
          const fn = (['==', '!=', 'includes', 'excludes'] as const)[rng.int(0, 3)] as string;
          const want = view.filter((r) => (fn === '==' || fn === 'includes' ? r.name === name : r.name !== name));
          if (!changedCommitted) touchedFirst++;
          expected.push({ index: ops.length, rows: want.map((r) => [r.uuid === '' ? 'new' : r.uuid, r.name]) });
          ops.push({ op: 'select', table: 'Logical_Switch', where: [['name', fn, name]], columns: ['_uuid', 'name'] });
        }
      }
    }
    const abort = rng.int(0, 3) === 0;
    if (abort) ops.push({ op: 'abort' });
    const out = transact(db, ops, ctx);
    // A row this transaction inserted is known by its name and place: its UUID comes from the
    // result (below, at commit).
    const known = new Set(committed.map((r) => r.uuid));
    for (const e of expected) {
      const rows = (out.kind === 'committed' || out.kind === 'failed' ? (out.results[e.index] as Select | undefined)?.rows : undefined) ?? [];
      const got = rows.map((r) => [known.has(r._uuid[1]) ? r._uuid[1] : 'new', r.name]);
      if (JSON.stringify(got) !== JSON.stringify(e.rows)) {
        t.fail(`txn ${txn}, op ${e.index}: got ${JSON.stringify(got)}, the model says ${JSON.stringify(e.rows)}`);
        return;
      }
      checked++;
      if (rows.length > 0) nonEmpty++;
    }
    if (out.kind === 'committed' && !abort) {
      // The inserted rows' UUIDs: the insert results, in op order (as they enter the table).
      const inserted = ops.flatMap((op, i) => ((op as { op: string }).op === 'insert' ? [(out.results[i] as { uuid: [string, string] }).uuid[1]] : []));
      committed = view.map((r) => (r.uuid !== '' ? r : { uuid: inserted[r.insert as number] as string, name: r.name, tag: r.tag }));
    }
  }
  t.ok(checked > TXNS, `${checked} selects checked against the model`);
  t.ok(nonEmpty > checked / 4, `${nonEmpty} of them matched rows`);
  t.ok(touchedFirst > checked / 10, `${touchedFirst} ran before the transaction changed a committed row`);
  t.ok(committed.length > 0, `${committed.length} switches at the end`);
  // The database holds what the model holds, in the same order.
  const all = transact(db, [{ op: 'select', table: 'Logical_Switch', where: [], columns: ['_uuid', 'name'] }], ctx);
  t.same((all.kind === 'committed' ? (all.results[0] as Select).rows : []).map((r) => [r._uuid[1], r.name]), committed.map((r) => [r.uuid, r.name]), 'the table equals the model');
}
