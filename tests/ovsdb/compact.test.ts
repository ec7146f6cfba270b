// A transaction written small for the state it meets (ovsdb/compact.ts) must answer and commit
// exactly as the transaction it came from, on that state: the same outcome, the same results,
// the same rows with the same UUIDs and _versions. Random transactions shaped like an IDL's
// (verifying waits ahead of whole-set updates), mixed with inserts, mutates, deletes, stale
// waits, bad values, bounded and immutable columns, run both ways on random databases.
import t from 'tap';
import type { Database, DbDelta } from '../../ovsdb/index.js';
import { COMPACT_ELEMENTS_MIN, Database as Db, compactTransaction, parseDatabaseSchema, rowToJson, transact, tryTransaction } from '../../ovsdb/index.js';
import { uuidSource } from '../../ovsdb/uuid-source.js';
import { Rng } from '../helpers/seeded-rng.js';

const schema = parseDatabaseSchema({
  name: 'C',
  version: '1.0.0',
  tables: {
    S: {
      columns: {
        name: { type: 'string' },
        n: { type: 'integer' },
        ports: { type: { key: { type: 'uuid', refTable: 'P' }, min: 0, max: 'unlimited' } },
        weak: { type: { key: { type: 'uuid', refTable: 'P', refType: 'weak' }, min: 0, max: 'unlimited' } },
        tags: { type: { key: 'string', min: 0, max: 'unlimited' } },
        opts: { type: { key: 'string', value: 'string', min: 0, max: 'unlimited' } },
        cap: { type: { key: 'string', min: 0, max: 100 } },
        one: { type: { key: 'string', min: 1, max: 'unlimited' } },
        fixed: { type: { key: 'string', min: 0, max: 'unlimited' }, mutable: false },
      },
      isRoot: true,
    },
    P: { columns: { name: { type: 'string' }, n: { type: 'integer' } } },
  },
});

type Json = unknown;
const setJson = (items: readonly Json[]): Json => ['set', items];

/** A value's JSON elements, spelled as a client might (any order). */
function setItems(db: Database, uuid: string, column: string): Json[] {
  const v = (db.rows('S').get(uuid)?.[column] ?? []) as readonly (string | number)[];
  return v.map((a) => (column === 'ports' || column === 'weak' ? ['uuid', a] : a));
}

function mapItems(db: Database, uuid: string): [string, string][] {
  return [...((db.rows('S').get(uuid)?.opts ?? new Map()) as ReadonlyMap<string, string>)] as [string, string][];
}

function setup(rng: Rng): { db: Database; rows: string[] } {
  const db = new Db(schema);
  const newUuid = uuidSource([rng.u32(), rng.u32(), rng.u32(), rng.u32() | 1]);
  const ops: Json[] = [];
  for (let s = 0; s < 3; s++) {
    const ports = Array.from({ length: rng.int(COMPACT_ELEMENTS_MIN, 2 * COMPACT_ELEMENTS_MIN) }, (_, k) => `p${s}-${k}`);
    for (const p of ports) ops.push({ op: 'insert', table: 'P', 'uuid-name': p.replace('-', '_'), row: { name: p, n: 0 } });
    const refs = ports.map((p) => ['named-uuid', p.replace('-', '_')]);
    ops.push({
      op: 'insert',
      table: 'S',
      row: {
        name: `s${s}`,
        ports: setJson(refs),
        weak: setJson(refs.filter(() => rng.chance(0.5))),
        tags: setJson(Array.from({ length: rng.int(COMPACT_ELEMENTS_MIN, 2 * COMPACT_ELEMENTS_MIN) }, (_, k) => `t${k}`)),
        opts: ['map', Array.from({ length: rng.int(COMPACT_ELEMENTS_MIN, 2 * COMPACT_ELEMENTS_MIN) }, (_, k) => [`k${k}`, `v${k}`])],
        cap: setJson(Array.from({ length: 90 }, (_, k) => `c${k}`)),
        one: setJson(Array.from({ length: COMPACT_ELEMENTS_MIN + 5 }, (_, k) => `o${k}`)),
        fixed: setJson(Array.from({ length: COMPACT_ELEMENTS_MIN + 5 }, (_, k) => `f${k}`)),
      },
    });
  }
  const out = transact(db, ops, { newUuid });
  if (out.kind !== 'committed') throw new Error(`setup: ${JSON.stringify(out).slice(0, 300)}`);
  return { db, rows: [...db.rows('S').keys()] };
}

/** The elements of a set column edited: some removed, some added, maybe reordered or repeated. */
function editedSet(rng: Rng, db: Database, uuid: string, column: string, named: readonly string[]): Json {
  let items = setItems(db, uuid, column).filter(() => !rng.chance(0.05));
  const ref = column === 'ports' || column === 'weak';
  for (let k = rng.int(0, 3); k > 0; k--) {
    if (ref) {
      if (named.length > 0 && rng.chance(0.6)) items.push(['named-uuid', rng.pick(named)]);
      else {
        const pRows = [...db.rows('P').keys()];
        items.push(['uuid', rng.chance(0.1) ? rng.uuid() : rng.pick(pRows)]);
      }
    } else items.push(`${column}-new-${rng.int(0, 1000)}`);
  }
  if (rng.chance(0.3)) items = rng.shuffle(items);
  if (rng.chance(0.05) && items.length > 0) items.push(items[0]);
  if (rng.chance(0.05) && ref && items.length > 0) {
    const first = items[0] as [string, string];
    if (first[0] === 'uuid') items[0] = ['uuid', first[1].toUpperCase()];
  }
  if (rng.chance(0.03)) items.push(ref ? ['uuid', 'not-a-uuid'] : 42);
  if (column === 'one' && rng.chance(0.2)) items = [];
  return setJson(items);
}

function editedMap(rng: Rng, db: Database, uuid: string): Json {
  const pairs: Json[] = mapItems(db, uuid)
    .filter(() => !rng.chance(0.05))
    .map(([k, v]) => [k, rng.chance(0.05) ? `${v}-changed` : v]);
  for (let k = rng.int(0, 3); k > 0; k--) pairs.push([`new-${rng.int(0, 1000)}`, 'x']);
  if (rng.chance(0.05) && pairs.length > 0) pairs.push(pairs[0]);
  return ['map', rng.chance(0.3) ? rng.shuffle(pairs) : pairs];
}

/** One op of a random transaction; `named` collects the uuid-names its inserts define. */
function randomOp(rng: Rng, db: Database, rows: readonly string[], named: string[], names: { next: number }): Json {
  const live = [...db.rows('S').keys()];
  const uuid = live.length > 0 && rng.chance(0.95) ? rng.pick(live) : rng.pick(rows);
  const where = rng.chance(0.9) ? [['_uuid', '==', ['uuid', uuid]]] : [['name', '==', (db.rows('S').get(uuid)?.name as string | undefined) ?? 'gone']];
  const kind = rng.weighted<string>([
    ['wait', 3],
    ['update', 4],
    ['insert', 2],
    ['mutate', 1],
    ['delete', 0.3],
    ['other', 0.5],
  ]);
  switch (kind) {
    case 'wait': {
      const cols = rng.subset(['ports', 'weak', 'tags', 'opts', 'n', 'name'], 3);
      const columns = cols.length === 0 ? ['ports'] : cols;
      const row: Record<string, Json> = {};
      const current = db.rows('S').get(uuid);
      for (const c of columns) {
        if (current === undefined) row[c] = c === 'n' ? 0 : c === 'name' ? 'x' : setJson([]);
        else if (c === 'opts') row[c] = rng.chance(0.85) ? ['map', mapItems(db, uuid)] : editedMap(rng, db, uuid);
        else if (c === 'n' || c === 'name') row[c] = rng.chance(0.85) ? current[c] : c === 'n' ? 99 : 'other';
        else row[c] = rng.chance(0.85) ? setJson(setItems(db, uuid, c)) : editedSet(rng, db, uuid, c, []);
      }
      const op: Record<string, Json> = { op: 'wait', table: 'S', where, columns, until: rng.chance(0.9) ? '==' : '!=', rows: [row] };
      if (rng.chance(0.7)) op.timeout = 0;
      return op;
    }
    case 'update': {
      const row: Record<string, Json> = {};
      for (const c of rng.subset(['ports', 'weak', 'tags', 'opts', 'cap', 'one', 'fixed', 'n'], 3)) {
        if (db.rows('S').get(uuid) === undefined) row[c] = c === 'n' ? 1 : c === 'opts' ? ['map', []] : setJson([]);
        else if (c === 'opts') row[c] = editedMap(rng, db, uuid);
        else if (c === 'n') row[c] = rng.int(0, 5);
        else if (c === 'cap') row[c] = setJson(Array.from({ length: rng.int(80, 110) }, (_, k) => `c${k}`));
        else row[c] = editedSet(rng, db, uuid, c, named);
      }
      if (Object.keys(row).length === 0) row.tags = editedSet(rng, db, uuid, 'tags', named);
      if (rng.chance(0.05) && db.rows('S').has(uuid)) row.tags = setJson(setItems(db, uuid, 'tags'));
      return { op: 'update', table: 'S', where, row };
    }
    case 'insert': {
      const name = `n${names.next++}`;
      named.push(name);
      return { op: 'insert', table: 'P', 'uuid-name': name, row: { name, n: rng.int(0, 3) } };
    }
    case 'mutate':
      return { op: 'mutate', table: 'S', where, mutations: [['tags', 'insert', setJson([`m${rng.int(0, 50)}`])]] };
    case 'delete':
      return rng.chance(0.5) ? { op: 'delete', table: 'S', where } : { op: 'delete', table: 'P', where: [['n', '==', rng.int(0, 3)]] };
    default:
      return rng.pick<Json>([{ op: 'comment', comment: 'c' }, { op: 'select', table: 'S', where: [], columns: ['name'] }, { op: 'abort' }]);
  }
}

function deltaJson(d: DbDelta): unknown {
  return d.changes.map((c) => {
    const ts = schema.tables.get(c.table);
    if (ts === undefined) throw new Error(c.table);
    const old = c.kind === 'insert' ? undefined : rowToJson(ts, c.old);
    const now = c.kind === 'delete' ? undefined : rowToJson(ts, c.new);
    return { kind: c.kind, table: c.table, uuid: c.uuid, old, new: now, ...(c.kind === 'modify' ? { columns: [...c.columns].sort() } : {}) };
  });
}

t.test('a compacted transaction answers and commits as the original, on the state it was written for', async (t) => {
  const seeds = 40;
  const txnsPerSeed = 40;
  const counts = { txns: 0, compacted: 0, waitsDropped: 0, updatesAsMutates: 0, emptyUpdates: 0, committed: 0, failed: 0, blocked: 0 };
  let mismatches = 0;
  let changedInPlace = 0;
  for (let seed = 1; seed <= seeds && mismatches === 0; seed++) {
    const rng = new Rng(seed * 7919);
    const { db, rows } = setup(rng);
    for (let i = 0; i < txnsPerSeed; i++) {
      const named: string[] = [];
      const names = { next: 0 };
      const ops = Array.from({ length: rng.int(1, 6) }, () => randomOp(rng, db, rows, named, names));
      // IDL-shaped now and then: every wait first.
      if (rng.chance(0.5)) ops.sort((a, b) => Number((b as { op: string }).op === 'wait') - Number((a as { op: string }).op === 'wait'));
      const before = JSON.stringify(ops);
      const compacted = compactTransaction(db, ops);
      if (JSON.stringify(ops) !== before) changedInPlace++;
      counts.txns++;
      const seedWords: [number, number, number, number] = [rng.u32(), rng.u32(), rng.u32(), rng.u32() | 1];
      const elapsedMs = rng.chance(0.5) ? 0 : 10;
      const a = tryTransaction(db, ops, { newUuid: uuidSource(seedWords), elapsedMs });
      const b = tryTransaction(db, compacted ?? ops, { newUuid: uuidSource(seedWords), elapsedMs });
      counts[a.kind]++;
      if (compacted !== undefined) {
        counts.compacted++;
        for (const [k, op] of compacted.entries()) {
          const was = (ops[k] as { op: string }).op;
          const now = op as { op: string; row?: object };
          if (was === 'wait' && now.op === 'comment') counts.waitsDropped++;
          if (was === 'update' && now.op === 'mutate') counts.updatesAsMutates++;
          if (was === 'update' && now.op === 'update' && op !== ops[k]) counts.emptyUpdates++;
        }
      }
      const sa = JSON.stringify({ kind: a.kind, results: 'results' in a ? a.results : a.timeoutMs, delta: a.kind === 'committed' ? deltaJson(a.delta) : null });
      const sb = JSON.stringify({ kind: b.kind, results: 'results' in b ? b.results : b.timeoutMs, delta: b.kind === 'committed' ? deltaJson(b.delta) : null });
      if (sa !== sb) {
        mismatches++;
        t.fail(`seed ${seed} txn ${i}: outcomes differ\nops: ${before.slice(0, 2000)}\ncompacted: ${JSON.stringify(compacted).slice(0, 2000)}\noriginal: ${sa.slice(0, 1500)}\ncompacted: ${sb.slice(0, 1500)}`);
        break;
      }
      // Move on from the state the original leaves.
      if (a.kind === 'committed') transact(db, ops, { newUuid: uuidSource(seedWords), elapsedMs });
    }
  }
  t.equal(mismatches, 0, 'every compacted transaction matched its original');
  t.equal(changedInPlace, 0, 'no request was changed in place');
  t.comment(JSON.stringify(counts));
  // Enough of each kind happened for the comparison to mean something.
  t.ok(counts.compacted > counts.txns / 5, `compacted ${counts.compacted} of ${counts.txns}`);
  t.ok(counts.waitsDropped > 50, `waits dropped: ${counts.waitsDropped}`);
  t.ok(counts.updatesAsMutates > 100, `updates written as mutates: ${counts.updatesAsMutates}`);
  t.ok(counts.committed > 100 && counts.failed > 100 && counts.blocked > 10, `outcomes: ${counts.committed} committed, ${counts.failed} failed, ${counts.blocked} blocked`);
});

t.test('what is rewritten and what is left', async (t) => {
  const rng = new Rng(5);
  const { db } = setup(rng);
  const uuid = [...db.rows('S').keys()][0] as string;
  const where = [['_uuid', '==', ['uuid', uuid]]];
  const ports = setItems(db, uuid, 'ports');
  const wait = { op: 'wait', table: 'S', where, columns: ['ports'], until: '==', timeout: 0, rows: [{ ports: setJson(ports) }] };
  const update = { op: 'update', table: 'S', where, row: { ports: setJson([...ports, ['named-uuid', 'np']]) } };
  const insert = { op: 'insert', table: 'P', 'uuid-name': 'np', row: { name: 'new' } };
  const out = compactTransaction(db, [wait, update, insert]);
  t.same(out?.[0], { op: 'comment', comment: '' }, 'a wait that holds becomes a comment');
  t.same(out?.[1], { op: 'mutate', table: 'S', where, mutations: [['ports', 'insert', ['set', [['named-uuid', 'np']]]]] }, 'the whole-set update becomes the insert of one');
  t.equal(out?.[2], insert, 'the insert is left');
  const bytes = (x: unknown): number => JSON.stringify(x).length;
  t.ok(bytes(out) * 20 < bytes([wait, update, insert]), `${bytes([wait, update, insert])} bytes down to ${bytes(out)}`);

  t.equal(compactTransaction(db, [{ ...wait, rows: [{ ports: setJson(ports.slice(1)) }] }, update, insert]), undefined, 'a wait that does not hold: nothing is rewritten');
  t.equal(compactTransaction(db, [update, wait, insert])?.[1], wait, 'a wait after a write is left (it reads the transaction\'s own changes)');
  t.equal(compactTransaction(db, [{ op: 'mutate', table: 'S', where, mutations: [['n', '+=', 1]] }, update])?.[1], undefined, 'an update of a table written before it is left');
  t.equal(compactTransaction(db, [{ ...update, row: { ...update.row, n: 3 } }]), undefined, 'an update with a scalar column is left');
  t.equal(compactTransaction(db, [{ ...update, where: [['name', '==', 's0']] }]), undefined, 'an update not by UUID is left');
  t.equal(compactTransaction(db, [{ ...update, row: { ports: setJson(ports.slice(0, 10)) } }]), undefined, 'a small value is left');
  t.same(compactTransaction(db, [{ ...update, row: { ports: setJson(ports) } }])?.[0], { op: 'update', table: 'S', where, row: {} }, 'an update that changes nothing has no columns left');
});
