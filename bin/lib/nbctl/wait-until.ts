// db-ctl-base's wait-until TABLE RECORD [COLUMN[:KEY]OP VALUE]...: block until the record exists
// and every condition holds, re-checking whenever the table changes (a watch on the member that
// read it, not a poll). OP is one of db-ctl-base's relations, compared as OVSDB compares datums:
// "=", "!=", "<", ">", "<=", ">=" order two values (by their number of elements first, then
// element by element), and the "{...}" forms compare them as sets. The global --timeout bounds
// the wait; when it runs out ovn-nbctl is killed by its alarm, and its last words are ours.
import type { NbAccess, RowJson } from './nb.js';
import { NbctlError, flagValue, mapOf, setOf, strcmp, text } from './nb.js';
import type { SchemaJson } from './db-commands.js';
import { atom, columnType, matchColumn, parseValue, schemaOf, token } from './db-commands.js';
import type { ColumnTypeJson } from './record-table.js';
import { baseName, isMap } from './record-table.js';

/** ovsdb_token_parse's delimiters, as wait-until's conditions are read with them. */
const delimiters = ':=, []{}!<>';
const relations = ['=', '!=', '<', '>', '<=', '>=', '{=}', '{!=}', '{<}', '{>}', '{<=}', '{>=}', '{in}', '{not-in}'] as const;
type Relation = (typeof relations)[number];

/** What ovn-nbctl prints when its --timeout alarm ends it. */
export const alarmMessage = 'terminating with signal 14 (Alarm clock)';
/** Watches a member may cut in a row before the wait gives up, rather than re-reading forever. */
export const waitCutsInARowMax = 8;

interface Condition {
  readonly column: string;
  readonly key?: string;
  readonly relation: Relation;
  readonly value: string;
}

/** The column a condition names: read before any waiting, so a bad name fails at once. */
function conditionColumn(schema: SchemaJson, table: string, arg: string): { column: string; end: number } {
  const t = token(arg, 0, delimiters);
  if (t.text === '') throw new NbctlError(`${arg}: missing column name`);
  return { column: matchColumn(schema, table, t.text), end: t.end };
}

/** db-ctl-base's parse_column_key_value with every relation allowed: the longest that fits. */
function parseCondition(schema: SchemaJson, table: string, arg: string): Condition {
  const { column, end } = conditionColumn(schema, table, arg);
  let at = end;
  let key: string | undefined;
  if (arg[at] === ':') {
    const k = token(arg, at + 1, delimiters);
    key = k.text;
    at = k.end;
  }
  const rest = arg.slice(at);
  // A relation counts only with a value after it.
  const relation = relations.filter((r) => rest.startsWith(r) && rest.length > r.length).sort((a, b) => b.length - a.length)[0];
  if (relation === undefined) {
    const quoted = relations.map((r) => `"${r}"`);
    throw new NbctlError(`${arg}: argument does not end in ${quoted.slice(0, -1).join(', ')}, or ${quoted.at(-1) as string} followed by a value.`);
  }
  return { column, ...(key === undefined ? {} : { key }), relation, value: rest.slice(relation.length) };
}

/** A datum as OVSDB keeps one: its keys sorted, and for a map the values in the same order. */
interface Datum {
  readonly keys: unknown[];
  readonly values?: unknown[];
}

/** An atom as a comparable value: a UUID by its text, anything else as it is. */
const plain = (a: unknown): unknown => (Array.isArray(a) && (a[0] === 'uuid' || a[0] === 'named-uuid') ? String(a[1]) : a);

/** ovsdb_atom_compare_3way for the atom types NB columns have. */
function atomOrder(a: unknown, b: unknown): number {
  if (typeof a === 'number' && typeof b === 'number') return a < b ? -1 : a > b ? 1 : 0;
  if (typeof a === 'boolean' && typeof b === 'boolean') return Number(a) - Number(b);
  return strcmp(String(a), String(b));
}

function datumOf(json: unknown, map: boolean): Datum {
  if (map) {
    const pairs = mapOf(json).map(([k, v]) => [plain(k), plain(v)] as const).sort(([a], [b]) => atomOrder(a, b));
    return { keys: pairs.map(([k]) => k), values: pairs.map(([, v]) => v) };
  }
  return { keys: setOf(json).map(plain).sort(atomOrder) };
}

/** ovsdb_datum_compare_3way: the shorter datum first, then element by element. */
function datumOrder(a: Datum, b: Datum): number {
  if (a.keys.length !== b.keys.length) return a.keys.length < b.keys.length ? -1 : 1;
  for (let i = 0; i < a.keys.length; i++) {
    const c = atomOrder(a.keys[i], b.keys[i]);
    if (c !== 0) return c;
  }
  for (let i = 0; i < (a.values?.length ?? 0); i++) {
    const c = atomOrder(a.values?.[i], b.values?.[i]);
    if (c !== 0) return c;
  }
  return 0;
}

const holds = (d: Datum, i: number, other: Datum): boolean =>
  other.keys.some((k, j) => atomOrder(k, d.keys[i]) === 0 && (d.values === undefined || atomOrder(other.values?.[j], d.values[i]) === 0));
/** Every element of `a` is in `b`. */
const includesAll = (a: Datum, b: Datum): boolean => a.keys.every((_, i) => holds(a, i, b));
/** No element of `a` is in `b`. */
const excludesAll = (a: Datum, b: Datum): boolean => a.keys.every((_, i) => !holds(a, i, b));

function evaluate(a: Datum, b: Datum, relation: Relation): boolean {
  switch (relation) {
    case '=':
    case '{=}':
      return datumOrder(a, b) === 0;
    case '!=':
    case '{!=}':
      return datumOrder(a, b) !== 0;
    case '<':
      return datumOrder(a, b) < 0;
    case '>':
      return datumOrder(a, b) > 0;
    case '<=':
      return datumOrder(a, b) <= 0;
    case '>=':
      return datumOrder(a, b) >= 0;
    case '{<}':
      return b.keys.length > a.keys.length && includesAll(a, b);
    case '{>}':
      return a.keys.length > b.keys.length && includesAll(b, a);
    case '{<=}':
    case '{in}':
      return includesAll(a, b);
    case '{>=}':
      return includesAll(b, a);
    case '{not-in}':
      return excludesAll(a, b);
  }
}

const isSetRelation = (r: Relation): boolean => r.startsWith('{');

/** A column's value in a row; one the row lacks is empty, which is what a test of it sees. */
const cellOf = (row: RowJson, column: string): unknown => row[column] ?? ['set', []];

/** db-ctl-base's check_condition: whether `row` satisfies the condition `arg`. */
function satisfies(schema: SchemaJson, table: string, row: RowJson, arg: string): boolean {
  const c = parseCondition(schema, table, arg);
  const type = columnType(schema, table, c.column);
  if (c.key === undefined) {
    const want = datumOf(parseValue(type, c.value), isMap(type));
    return evaluate(datumOf(cellOf(row, c.column), isMap(type)), want, c.relation);
  }
  if (!isMap(type)) throw new NbctlError(`cannot specify key to check for non-map column ${c.column}`);
  // The map's value at the key, against a set of the map's value type.
  const valueType = type.value as ColumnTypeJson['key'];
  const key = plain(atom(baseName(type.key), JSON.stringify(c.key)));
  const want = datumOf(parseValue({ key: valueType, min: 0, max: 'unlimited' }, c.value), false);
  const entry = mapOf(cellOf(row, c.column)).find(([k]) => atomOrder(plain(k), key) === 0);
  if (entry === undefined && !isSetRelation(c.relation)) return false;
  return evaluate({ keys: entry === undefined ? [] : [plain(entry[1])] }, want, c.relation);
}

/** The record `id` names among `rows`: by UUID, else by the table's name column (as maybeRow). */
function recordIn(schema: SchemaJson, table: string, rows: readonly RowJson[], id: string): RowJson | undefined {
  const byUuid = rows.find((r) => text(r._uuid) === id.toLowerCase());
  if (byUuid !== undefined) return byUuid;
  if (schema.tables[table]?.columns.name === undefined) return undefined;
  const named = rows.filter((r) => r.name === id);
  if (named.length > 1) throw new NbctlError(`Multiple ${table} rows named '${id}'.  Use a UUID.`);
  return named[0];
}

export const waitUntil = {
  args: [2, Infinity] as [number, number],
  options: '',
  run: async (nb: NbAccess, [table, id, ...conditions]: string[], flags: ReadonlySet<string>): Promise<string> => {
    const schema = await schemaOf(nb);
    if (schema.tables[table as string] === undefined) throw new NbctlError(`unknown table "${table}"`);
    for (const c of conditions) conditionColumn(schema, table as string, c);
    const timeout = flagValue(flags, '--timeout');
    const deadlineMs = timeout === undefined ? undefined : Date.now() + Number(timeout) * 1000;
    let cutsInARow = 0;
    for (;;) {
      const read = await nb.read(table as string);
      const row = recordIn(schema, table as string, read.rows, id as string);
      // Conditions are checked in order, and the first that fails ends the check (so an error in
      // a later one shows only once the earlier ones hold), as in db-ctl-base.
      if (row !== undefined && conditions.every((c) => satisfies(schema, table as string, row, c))) return '';
      const outcome = await nb.changedSince(read, deadlineMs === undefined ? undefined : deadlineMs - Date.now());
      if (outcome === 'timeout') throw new NbctlError(alarmMessage);
      cutsInARow = outcome === 'cut' ? cutsInARow + 1 : 0;
      if (cutsInARow > waitCutsInARowMax) throw new NbctlError(`wait-until: the database ended ${cutsInARow} watches of ${table} in a row`);
    }
  },
};
