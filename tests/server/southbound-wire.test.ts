// The agent stream's set differences (proto/southbound.proto, TableRows.rows): a set column of a
// row the agent holds may travel as [added, removed]. Goals: the member sends a difference only
// when it is smaller than the set and only for the tables the agent named; the agent rebuilds
// exactly the member's set from it, and reports what the difference added and removed (the
// store reindexes by that); and a difference that does not fit what the agent holds (or is not
// a difference of its column's type) is a WireError, never a wrong row, whether the agent merges
// it into a small set or splices it into a large one. Method: seeded random sets through
// encodeParts/decodeTableRows, then hand-made hostile rows against a small and a large set.
import t from 'tap';
import { Packr } from 'msgpackr';
import type { Row } from '../../ovsdb/index.js';
import { parseDatabaseSchema } from '../../ovsdb/index.js';
import { defaultValue } from '../../ovsdb/datum.js';
import { SB_SCHEMA_JSON } from '../../ovsdb/schemas/index.js';
import { WireError, appendTables, decodeServerMessage, decodeTableRows, encodeParts, encodeServerMessage, setDifference, type WireTableRows } from '../../server/southbound-wire.js';
import { Rng } from '../helpers/seeded-rng.js';

const schema = parseDatabaseSchema(SB_SCHEMA_JSON);
const uuid = (n: number): string => `00000000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;
const mcUuid = uuid(0xffff);
const diffTables: ReadonlySet<string> = new Set(['Multicast_Group']);

function group(ports: readonly string[], version = 1): Row {
  const r: Record<string, unknown> = { _uuid: mcUuid, _version: uuid(0x10000 + version) };
  for (const c of (schema.tables.get('Multicast_Group') as NonNullable<ReturnType<typeof schema.tables.get>>).columns.values()) r[c.name] = defaultValue(c.type);
  return Object.assign(r, { datapath: uuid(0xd), name: '_MC_flood', tunnel_key: 32768, ports: [...ports].sort() }) as unknown as Row;
}

/** The one TableRows entry encoding `row` (with `old`, the row the agent holds, for a difference). */
function encoded(row: Row, old: Row | undefined, tables: ReadonlySet<string> = diffTables): WireTableRows {
  return ((encodeParts(schema, [{ table: 'Multicast_Group', uuid: mcUuid, row, old }], Number.MAX_SAFE_INTEGER, tables)[0] ?? [])[0]) as WireTableRows;
}

function decodedPorts(tr: WireTableRows, held: Row | undefined): readonly string[] {
  const [c] = decodeTableRows(schema, tr, () => held);
  return c?.row?.ports as string[];
}

const packr = new Packr({ useRecords: false, mapsAsObjects: false, variableMapSize: true });

t.test('appendTables: a step encoded once, with one stream\'s own rows after its own, reads as that step with them', async (t) => {
  const rng = new Rng(7);
  // Steps of 0 to 300 groups: Delta lengths of one, two and three varint bytes.
  for (const n of [0, 1, 3, 40, 300]) {
    const shared = encodeParts(schema, Array.from({ length: n }, (_, i) => ({ table: 'Multicast_Group', uuid: uuid(i + 1), row: { ...group([uuid(rng.int(1, 1000))]), _uuid: uuid(i + 1) } as Row })), Number.MAX_SAFE_INTEGER)[0] ?? [];
    const own = encodeParts(schema, [{ table: 'Multicast_Group', uuid: mcUuid, row: group([uuid(5), uuid(6)]) }], Number.MAX_SAFE_INTEGER)[0] ?? [];
    const delta = { fromRevision: 1000 + n, toRevision: 70_000 + n, reset: false, more: n === 3 };
    const once = encodeServerMessage({ delta: { ...delta, tables: shared } });
    const spliced = appendTables(once, own);
    const whole = encodeServerMessage({ delta: { ...delta, tables: [...shared, ...own] } });
    t.same(decodeServerMessage(spliced), decodeServerMessage(whole), `${n} shared entries: the same message as one encoded whole`);
    t.equal(spliced.length, whole.length, `${n} shared entries: and as long`);
    t.equal(appendTables(once, []), once, 'nothing to add: the message itself');
  }
  t.throws(() => appendTables(encodeServerMessage({ resume: { mode: 'DELTA', fromRevision: 1, toRevision: 2, reason: '', member: 1 } }), [{ table: 'x', columns: [], rows: [], removes: [] }]), /not a ServerMessage holding a Delta/, 'a Resume is refused');
});

t.test('setDifference: only when smaller than the set, and only over ascending sets', async (t) => {
  const six = [1, 2, 3, 4, 5, 6].map(uuid);
  t.same(setDifference(six, [...six, uuid(7)]), [[uuid(7)], []], 'one added');
  t.same(setDifference(six, six.slice(1)), [[], [uuid(1)]], 'one removed');
  t.same(setDifference(six, six), [[], []], 'unchanged: an empty difference');
  t.equal(setDifference(six, [uuid(8), uuid(9), uuid(10), uuid(11)]), undefined, 'a new set: whole');
  t.equal(setDifference([uuid(1)], [uuid(1), uuid(2)]), undefined, 'a small set: whole');
  t.equal(setDifference(six, [...six.slice(0, 5), uuid(0), uuid(7)]), undefined, 'a set out of order: whole');
});

t.test('a set rebuilt from its difference is the member\'s set, over random changes', async (t) => {
  const rng = new Rng(11);
  let diffs = 0;
  let whole = 0;
  let spliced = 0;
  for (let n = 0; n < 3000; n++) {
    // Small sets (a difference merged in) and large ones (spliced in: under one change per 16 members).
    const large = n % 3 === 2;
    const size = large ? rng.int(40, 300) : rng.int(0, 40);
    const had = rng.subset(Array.from({ length: large ? 400 : 60 }, (_, i) => uuid(i + 1)), size).sort();
    let has = [...had];
    for (let k = rng.int(0, 4); k > 0; k--) {
      if (rng.int(0, 1) === 0 && has.length > 0) has.splice(rng.int(0, has.length - 1), 1);
      else {
        const u = uuid(rng.int(1, large ? 400 : 60));
        if (!has.includes(u)) has.push(u);
      }
    }
    has = has.sort();
    const old = group(had, 1);
    const tr = encoded(group(has, 2), old);
    const raw = packr.unpack(tr.rows[0] as Uint8Array) as unknown[];
    const asDiff = Array.isArray(raw[5]) && raw[5].length === 2 && Array.isArray(raw[5][0]);
    if (asDiff) diffs++;
    else whole++;
    const [c] = decodeTableRows(schema, tr, () => old);
    const got = c?.row?.ports as string[];
    if (JSON.stringify(got) !== JSON.stringify(has)) {
      const at = has.findIndex((x, i) => got?.[i] !== x);
      t.fail(`case ${n}: from ${had.length} members to ${has.length}, rebuilt ${got?.length ?? 0}, first wrong at ${at} (${JSON.stringify(got?.slice(Math.max(at, 0), at + 3))} for ${JSON.stringify(has.slice(Math.max(at, 0), at + 3))})`);
      return;
    }
    const reported = c?.diffs?.columns.get('ports');
    if (asDiff) {
      const added = has.filter((x) => !had.includes(x));
      const removed = had.filter((x) => !has.includes(x));
      if (c?.diffs?.base !== old || JSON.stringify(reported) !== JSON.stringify({ added, removed })) {
        t.fail(`case ${n}: the difference reported is ${JSON.stringify(reported)}, not ${JSON.stringify({ added, removed })} of the held row`);
        return;
      }
      if ((added.length + removed.length) * 16 < had.length) spliced++;
    } else if (c?.diffs !== undefined) {
      t.fail(`case ${n}: a whole set reported a difference`);
      return;
    }
  }
  t.ok(diffs > 100 && whole > 100, `both forms were sent (${diffs} differences, ${whole} whole sets)`);
  t.ok(spliced > 100 && diffs - spliced > 100, `differences both spliced into large sets (${spliced}) and merged into small ones (${diffs - spliced})`);
});

t.test('no difference for a table the agent did not name, nor for a row it does not hold', async (t) => {
  const ports = [1, 2, 3, 4, 5, 6].map(uuid);
  const old = group(ports, 1);
  const now = group([...ports, uuid(7)], 2);
  const whole = (tr: WireTableRows): boolean => {
    const raw = packr.unpack(tr.rows[0] as Uint8Array) as unknown[];
    return (raw[5] as unknown[]).every((x) => typeof x === 'string');
  };
  t.ok(whole(encoded(now, old, new Set())), 'not named: the set whole');
  t.ok(whole(encoded(now, undefined)), 'not held (an insert): the set whole');
  t.notOk(whole(encoded(now, old)), 'named and held: the difference');
  t.same(decodedPorts(encoded(now, undefined), undefined), now.ports, 'a whole set decodes without a held row');
});

for (const size of [6, 200]) t.test(`a difference that does not fit the held row is a WireError (a set of ${size})`, async (t) => {
  const ports = Array.from({ length: size }, (_, i) => uuid(i + 1));
  const held = group(ports, 1);
  const columns = [...(schema.tables.get('Multicast_Group') as NonNullable<ReturnType<typeof schema.tables.get>>).columns.keys()];
  const rowWith = (portsValue: unknown): WireTableRows => {
    const values = columns.map((c) => (c === 'ports' ? portsValue : c === 'datapath' ? uuid(0xd) : c === 'name' ? '_MC_flood' : c === 'tunnel_key' ? 32768 : []));
    return { table: 'Multicast_Group', columns, rows: [packr.pack([mcUuid, uuid(0x10002), ...values])], removes: [] };
  };
  const cases: [string, unknown, RegExp, Row | undefined][] = [
    ['a row the agent does not hold', [[uuid(7)], []], /does not hold/, undefined],
    ['an addition of a member it has', [[uuid(3)], []], /adds a value the set has/, held],
    ['a removal of a member it lacks', [[], [uuid(size + 3)]], /removes a value the set does not have/, held],
    ['a removal past its last member', [[], [uuid(0xfff)]], /removes a value the set does not have/, held],
    ['additions out of order', [[uuid(size + 3), uuid(size + 2)], []], /not in ascending order/, held],
    ['an addition and removal of one member', [[uuid(2)], [uuid(2)]], /adds a value the set has/, held],
    ['removals repeated', [[], [uuid(2), uuid(2)]], /not in ascending order/, held],
    ['a member that is not a uuid', [['nope'], []], /not of its type/, held],
  ];
  for (const [what, value, error, h] of cases) {
    let thrown: unknown;
    try {
      decodeTableRows(schema, rowWith(value), () => h);
    } catch (err) {
      thrown = err;
    }
    t.ok(thrown instanceof WireError, `${what}: a WireError`);
    t.match((thrown as Error | undefined)?.message, error, `${what}: says so`);
  }
  t.same(decodeTableRows(schema, rowWith([[uuid(size + 1)], [uuid(1)]]), () => held)[0]?.row?.ports, Array.from({ length: size }, (_, i) => uuid(i + 2)), 'one that fits applies');
  t.same(held.ports, ports, 'the held row is left as it was');
  t.throws(() => decodeTableRows(schema, rowWith([[uuid(7)], []])), /does not hold/, 'without held rows at all (an agent that named no table): refused');
});

t.test('a decoded row of many columns keeps a fixed layout (not a dictionary)', async (t) => {
  // V8's own test of an object's layout, reachable once natives syntax is allowed. A row built
  // by adding two dozen computed properties one by one becomes a dictionary: every column read
  // in the agent's flow code is then a hash lookup.
  let fast: ((o: object) => boolean) | undefined;
  try {
    (await import('node:v8')).setFlagsFromString('--allow-natives-syntax');
    fast = new Function('o', 'return %HasFastProperties(o)') as (o: object) => boolean;
  } catch {
    t.comment('this V8 does not expose %HasFastProperties: nothing to check');
    return;
  }
  const ts = schema.tables.get('Port_Binding') as NonNullable<ReturnType<typeof schema.tables.get>>;
  t.ok(ts.columns.size > 20, 'Port_Binding has more columns than V8 keeps a layout for when they are added one by one');
  const row: Record<string, unknown> = { _uuid: uuid(1), _version: uuid(2) };
  for (const c of ts.columns.values()) row[c.name] = defaultValue(c.type);
  const parts = encodeParts(schema, [{ table: 'Port_Binding', uuid: uuid(1), row: row as unknown as Row }], Number.MAX_SAFE_INTEGER, new Set())[0] ?? [];
  const [c] = decodeTableRows(schema, parts[0] as WireTableRows);
  t.ok(c?.row !== undefined && fast(c.row), 'the decoded Port_Binding has fast properties');
  t.same(Object.keys(c?.row ?? {}).slice(0, 2), ['_uuid', '_version'], 'in the same order as before: _uuid, _version, then the columns');
  t.same(c?.row, row, 'and the same values');
});

t.test('the column list of every entry is checked, whether or not the entry before named the same one', async (t) => {
  const row = group([uuid(1), uuid(2)]);
  const good = encoded(row, undefined, new Set());
  const raw = packr.unpack(good.rows[0] as Uint8Array) as unknown[];
  const decodes = (tr: WireTableRows): unknown => decodeTableRows(schema, tr)[0]?.row;
  t.same(decodes(good), row, 'the list the member sends');
  t.same(decodes(good), row, 'the same list again');
  // The same values under the columns in another order, then under the first order again.
  const order = good.columns.map((_, i) => i).reverse();
  const reordered: WireTableRows = { ...good, columns: order.map((i) => good.columns[i] as string), rows: [packr.pack([raw[0], raw[1], ...order.map((i) => raw[i + 2])])] };
  t.same(decodes(reordered), row, 'another order of the columns: the same row');
  t.same(decodes(good), row, 'and the first order after it');
  const [first, second] = good.columns as [string, string];
  const bad: [string, string[], RegExp][] = [
    ['an unknown column', ['nope', ...good.columns.slice(1)], /unknown column Multicast_Group\.nope/],
    ['a column named twice', [first, first, ...good.columns.slice(2)], /name 4 columns \(3 distinct\), the schema has 4/],
    ['a column missing', good.columns.slice(1), /name 3 columns \(3 distinct\), the schema has 4/],
    ['one column more', [...good.columns, second], /name 5 columns \(4 distinct\), the schema has 4/],
  ];
  for (const [what, columns, message] of bad) {
    for (const time of ['', ', again']) {
      let thrown: unknown;
      try {
        decodes({ ...good, columns });
      } catch (err) {
        thrown = err;
      }
      t.ok(thrown instanceof WireError && message.test(thrown.message), `${what}${time}: a WireError (${(thrown as Error | undefined)?.message ?? 'none'})`);
    }
    t.same(decodes(good), row, `after ${what}: the good list still decodes`);
  }
  t.throws(() => decodes({ ...good, table: 'Nope' }), /unknown table "Nope"/, 'an unknown table');
});
