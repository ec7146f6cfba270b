// ovn-nbctl's generic database commands: list, get, set, add, remove, clear, create, destroy,
// find, on any table, with ovs-vsctl's value syntax (scalars; sets as [a,b] or a,b; maps as
// {k=v,...}; column:key for one map entry). list and find print their records with
// record-table.ts, in whichever of ovn-nbctl's output formats the global options ask for.
import type { NbAccess, RowJson } from './nb.js';
import { NbctlError, byUuid, flagValue, isRowId, isUuid, maybeRecord, uuidOf, uuidRef } from './nb.js';
import type { BaseTypeJson, Cell, ColumnTypeJson } from './record-table.js';
import { atomToString, baseName, datumToString, formatRecordTable, isMap, tableStyle } from './record-table.js';

export type SchemaJson = { tables: Record<string, { columns: Record<string, { type: string | ColumnTypeJson }>; indexes?: string[][] }> };

export function columnType(schema: SchemaJson, table: string, column: string): ColumnTypeJson {
  const t = schema.tables[table];
  if (t === undefined) throw new NbctlError(`unknown table "${table}"`);
  if (column === '_uuid') return { key: 'uuid' };
  const c = t.columns[column];
  if (c === undefined) throw new NbctlError(`${table} does not contain a column whose name matches "${column}"`);
  return typeof c.type === 'string' ? { key: c.type } : c.type;
}

const isScalar = (t: ColumnTypeJson): boolean => !isMap(t) && (t.min ?? 1) === 1 && (t.max ?? 1) === 1;

function unquote(s: string): string {
  const t = s.trim();
  if (t.length >= 2 && t.startsWith('"') && t.endsWith('"')) return JSON.parse(t) as string;
  return t;
}

export function atom(base: string, s: string): unknown {
  const v = unquote(s);
  switch (base) {
    case 'integer': {
      if (!/^-?\d+$/.test(v)) throw new NbctlError(`"${s}" is not a valid integer`);
      return Number(v);
    }
    case 'real': {
      const n = Number(v);
      if (v === '' || Number.isNaN(n)) throw new NbctlError(`"${s}" is not a valid real number`);
      return n;
    }
    case 'boolean':
      if (v !== 'true' && v !== 'false') throw new NbctlError(`"${s}" is not a valid boolean (use "true" or "false")`);
      return v === 'true';
    case 'uuid':
      // "@name": a row named with --id by a command before it in the transaction.
      return isRowId(v) ? ['named-uuid', v] : uuidRef(v);
    default:
      return v;
  }
}

/** Splits on commas outside quotes. */
function splitList(s: string): string[] {
  const out: string[] = [];
  let cur = '';
  let quoted = false;
  for (const ch of s) {
    if (ch === '"') quoted = !quoted;
    if (ch === ',' && !quoted) {
      out.push(cur);
      cur = '';
    } else cur += ch;
  }
  if (cur.trim() !== '') out.push(cur);
  return out.map((x) => x.trim()).filter((x) => x !== '');
}

/** Parses a whole column value in ovs-vsctl syntax into RFC 7047 JSON. */
export function parseValue(t: ColumnTypeJson, s: string): unknown {
  if (isMap(t)) {
    const body = s.trim().replace(/^\{/, '').replace(/\}$/, '');
    const pairs = splitList(body).map((kv) => {
      const i = kv.indexOf('=');
      if (i < 0) throw new NbctlError(`"${kv}": a map entry must be key=value`);
      return [atom(baseName(t.key), kv.slice(0, i)), atom(baseName(t.value as string | BaseTypeJson), kv.slice(i + 1))];
    });
    return ['map', pairs];
  }
  if (isScalar(t)) return atom(baseName(t.key), s);
  const body = s.trim().replace(/^\[/, '').replace(/\]$/, '');
  return ['set', splitList(body).map((x) => atom(baseName(t.key), x))];
}

/** "column=value" or "column:key=value". */
/**
 * One token of a COLUMN[:KEY][=VALUE] argument, from `from`, as db-ctl-base reads it: it ends at
 * the first of `delimiters` outside double quotes (by default ":", "=", "<", ">" or "!"); the
 * quotes are dropped, and outside them a backslash takes the next character as it is
 * (`external_ids:neutron\:port_name=x`).
 */
export function token(arg: string, from: number, delimiters = ':=<>!'): { text: string; end: number } {
  let out = '';
  let quoted = false;
  let i = from;
  while (i < arg.length) {
    const c = arg[i] as string;
    if (c === '\\' && !quoted) {
      if (i + 1 >= arg.length) throw new NbctlError(`${arg.slice(from)}: backslash at end of argument`);
      out += arg[i + 1];
      i += 2;
      continue;
    }
    if (!quoted && delimiters.includes(c)) break;
    if (c === '"') quoted = !quoted;
    else out += c;
    i++;
  }
  if (quoted) throw new NbctlError(`${arg.slice(from)}: quoted string extends past end of argument`);
  return { text: out, end: i };
}

/** COLUMN[:KEY] at the start of `arg`, and where it ends. */
function columnKey(arg: string): { column: string; key?: string; end: number } {
  const column = token(arg, 0);
  if (arg[column.end] !== ':') return { column: column.text, end: column.end };
  const key = token(arg, column.end + 1);
  return { column: column.text, key: key.text, end: key.end };
}

/** Whether a remove argument is KEY=VALUE rather than a KEY: an "=" outside quotes and escapes. */
function isPair(arg: string): boolean {
  const body = arg.replace(/^\{/, '');
  return body[token(body, 0).end] === '=';
}

function parseAssignment(schema: SchemaJson, table: string, arg: string): { column: string; key?: unknown; value: unknown } {
  const { column, key, end } = columnKey(arg);
  if (arg[end] !== '=') throw new NbctlError(`"${arg}": argument does not end in "=" followed by a value.`);
  const rhs = arg.slice(end + 1);
  if (key !== undefined) {
    const t = columnType(schema, table, column);
    if (!isMap(t)) throw new NbctlError(`cannot specify key to set for non-map column ${column}`);
    // The key is already unquoted: a quoted key stays one string, whatever it holds.
    return { column, key: atom(baseName(t.key), JSON.stringify(key)), value: atom(baseName(t.value as string | BaseTypeJson), rhs) };
  }
  return { column, value: parseValue(columnType(schema, table, column), rhs) };
}

/** ASCII tolower, with "-" read as "_": how db-ctl-base compares a typed name with a real one. */
const foldName = (c: string): string => (c === '-' ? '_' : c >= 'A' && c <= 'Z' ? c.toLowerCase() : c);

/**
 * How well `word` names `name`, as db-ctl-base scores it: the exact name best, then the name up
 * to case and "-"/"_", then a prefix (scored by its length); 0 is no match.
 */
function matchScore(name: string, word: string): number {
  if (name === word) return Number.MAX_SAFE_INTEGER;
  for (let i = 0; ; i++) {
    const a = name[i];
    const b = word[i];
    if (a === undefined && b === undefined) return Number.MAX_SAFE_INTEGER - 1;
    if (a === undefined || b === undefined || foldName(a) !== foldName(b)) return b === undefined ? i : 0;
  }
}

/** The column `word` names (a unique best match), with db-ctl-base's messages. */
export function matchColumn(schema: SchemaJson, table: string, word: string): string {
  let best: string[] = [];
  let bestScore = 0;
  for (const name of Object.keys(schema.tables[table]?.columns ?? {})) {
    const score = matchScore(name, word);
    if (score === 0 || score < bestScore) continue;
    if (score > bestScore) best = [];
    best.push(name);
    bestScore = score;
  }
  if (best.length === 0) throw new NbctlError(`${table} does not contain a column whose name matches "${word}"`);
  if (best.length > 1) throw new NbctlError(`${table} contains more than one column whose name matches "${word}": ${best.sort().join(', ')}`);
  return best[0] as string;
}

/**
 * The columns list and find print: those --columns names, in its order (commas or spaces
 * between; "_uuid" in any case is the record's UUID), else _uuid and then every column by name.
 */
function selectedColumns(schema: SchemaJson, table: string, flags: ReadonlySet<string>): string[] {
  const given = [...flags].filter((f) => f.startsWith('--columns='));
  if (given.length > 1) throw new NbctlError("'--columns' option specified multiple times");
  if (given[0] === undefined) return ['_uuid', ...Object.keys(schema.tables[table]?.columns ?? {}).sort()];
  const words = given[0].slice('--columns='.length).split(/[, ]/).filter((w) => w !== '');
  if (words.length === 0) throw new NbctlError('must specify at least one column name');
  return words.map((w) => (w.toLowerCase() === '_uuid' ? '_uuid' : matchColumn(schema, table, w)));
}

/** A column's value in a row; a column the row lacks holds its type's default, as in OVSDB. */
function cellOf(row: RowJson, column: string, type: ColumnTypeJson): Cell {
  const v = row[column];
  if (v !== undefined) return { datum: v, type };
  if (isMap(type)) return { datum: ['map', []], type };
  if (!isScalar(type)) return { datum: ['set', []], type };
  const defaults: Record<string, unknown> = { integer: 0, real: 0, boolean: false, string: '', uuid: ['uuid', '00000000-0000-0000-0000-000000000000'] };
  return { datum: defaults[baseName(type.key)], type };
}

/**
 * How list and find print records: a table of `headings` (selectedColumns, checked before any
 * record is looked up, as db-ctl-base does) in the style the global options ask for.
 */
function printRecords(schema: SchemaJson, table: string, headings: readonly string[], rows: readonly RowJson[], flags: ReadonlySet<string>): string {
  const types = headings.map((c) => columnType(schema, table, c));
  const cells = rows.map((r) => headings.map((c, i) => cellOf(r, c, types[i] as ColumnTypeJson)));
  return formatRecordTable({ headings, rows: cells }, tableStyle(flags));
}

export async function schemaOf(nb: NbAccess): Promise<SchemaJson> {
  return (await nb.schema()) as SchemaJson;
}

/** A record by UUID, or by the table's name column when it has one. */
async function record(nb: NbAccess, schema: SchemaJson, table: string, id: string): Promise<RowJson> {
  const row = await maybeRow(nb, schema, table, id);
  if (row === undefined) throw new NbctlError(`no row "${id}" in table ${table}`);
  return row;
}

/** record(), or undefined for a missing one when the command was given --if-exists. */
function recordUnless(nb: NbAccess, schema: SchemaJson, table: string, id: string, flags: ReadonlySet<string>): Promise<RowJson | undefined> {
  return flags.has('--if-exists') ? maybeRow(nb, schema, table, id) : record(nb, schema, table, id);
}

/** recordUnless() of each id in turn (so the first missing one is the one named), those found. */
async function recordsUnless(nb: NbAccess, schema: SchemaJson, table: string, ids: readonly string[], flags: ReadonlySet<string>): Promise<RowJson[]> {
  const rows: RowJson[] = [];
  for (const id of ids) {
    const row = await recordUnless(nb, schema, table, id, flags);
    if (row !== undefined) rows.push(row);
  }
  return rows;
}

/** db-ctl-base's check of a row id ("--id=@name"), which names a row for later commands. */
function checkRowId(id: string): void {
  if (!id.startsWith('@')) throw new NbctlError(`row id "${id}" does not begin with "@"`);
}

/** A record by UUID or name, or undefined when the table has none such (db-ctl-base's get_row). */
async function maybeRow(nb: NbAccess, schema: SchemaJson, table: string, id: string): Promise<RowJson | undefined> {
  if (schema.tables[table] === undefined) throw new NbctlError(`unknown table "${table}"`);
  const nameColumn = schema.tables[table]?.columns.name !== undefined ? 'name' : '_uuid';
  // db-ctl-base's order: a UUID, then "." for a table's only row, then the name, then a UUID's
  // first four or more characters.
  if (id === '.') {
    const rows = await nb.rows(table);
    if (rows.length === 1) return rows[0];
  }
  const named = await maybeRecord(nb, table, id, `${table} row`, nameColumn);
  if (named !== undefined || partialUuidLength(id) < 4) return named;
  const matches = (await nb.rows(table)).filter((r) => uuidOf(r).startsWith(id));
  if (matches.length > 1) {
    throw new NbctlError(`${table} contains 2 or more rows whose UUIDs begin with ${id}: at least ${uuidOf(matches[0] as RowJson)} and ${uuidOf(matches[1] as RowJson)}`);
  }
  return matches[0];
}

/** OVS's uuid_is_partial_string: how long a prefix of a UUID's text `s` is, or 0 when it is none. */
export function partialUuidLength(s: string): number {
  const template = 'xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx';
  if (s.length > template.length) return 0;
  for (let i = 0; i < s.length; i++) {
    const ok = template[i] === 'x' ? /[0-9a-fA-F]/.test(s[i] as string) : s[i] === '-';
    if (!ok) return 0;
  }
  return s.length;
}

// Each command's options are db-ctl-base's (ovs branch-3.1) for it; the output options are
// global, and refused after a "--" as any other option a command does not have.
/**
 * add and remove: TABLE RECORD COLUMN VALUE... as one mutate of that record, the mutations
 * built from the column's type and the same type with any number of elements.
 */
async function mutateColumn(
  nb: NbAccess,
  [table, id, column, ...values]: string[],
  flags: ReadonlySet<string>,
  mutations: (t: ColumnTypeJson, many: ColumnTypeJson, column: string, values: string[], table: string) => unknown[],
): Promise<string> {
  const schema = await schemaOf(nb);
  const row = await recordUnless(nb, schema, table as string, id as string, flags);
  if (row === undefined) return '';
  const t = columnType(schema, table as string, column as string);
  const many: ColumnTypeJson = { ...t, min: 0, max: 'unlimited' };
  await nb.transact([{ op: 'mutate', table, where: byUuid(row), mutations: mutations(t, many, column as string, values, table as string) }]);
  return '';
}

export const dbCommands = {
  // db-ctl-base's comment: its words are for whoever reads the command line; it does nothing.
  comment: {
    args: [0, Infinity] as [number, number],
    options: '',
    run: async () => '',
  },
  list: {
    args: [1, Infinity] as [number, number],
    options: '--if-exists,--columns=',
    run: async (nb: NbAccess, [table, ...ids]: string[], flags: ReadonlySet<string> = new Set()) => {
      const schema = await schemaOf(nb);
      if (schema.tables[table as string] === undefined) throw new NbctlError(`unknown table "${table}"`);
      const headings = selectedColumns(schema, table as string, flags);
      const rows = ids.length === 0 ? await nb.rows(table as string) : await recordsUnless(nb, schema, table as string, ids, flags);
      return printRecords(schema, table as string, headings, rows, flags);
    },
  },
  find: {
    args: [1, Infinity] as [number, number],
    options: '--columns=',
    run: async (nb: NbAccess, [table, ...conds]: string[], flags: ReadonlySet<string> = new Set()) => {
      const schema = await schemaOf(nb);
      if (schema.tables[table as string] === undefined) throw new NbctlError(`unknown table "${table}"`);
      const headings = selectedColumns(schema, table as string, flags);
      const where = conds.map((c) => {
        const a = parseAssignment(schema, table as string, c);
        return a.key === undefined ? [a.column, '==', a.value] : [a.column, 'includes', ['map', [[a.key, a.value]]]];
      });
      return printRecords(schema, table as string, headings, await nb.rows(table as string, where), flags);
    },
  },
  get: {
    args: [2, Infinity] as [number, number],
    options: '--if-exists,--id=',
    run: async (nb: NbAccess, [table, id, ...cols]: string[], flags: ReadonlySet<string> = new Set()) => {
      // --id=@name names the record for the later commands of the transaction.
      const rowId = flagValue(flags, '--id');
      const schema = await schemaOf(nb);
      if (schema.tables[table as string] === undefined) throw new NbctlError(`unknown table "${table}"`);
      // The columns are checked before the options and the record, as db-ctl-base does.
      const columns = cols.map((c) => {
        const { column, key } = columnKey(c);
        return { column, key, type: columnType(schema, table as string, column) };
      });
      if (rowId !== undefined && flags.has('--if-exists')) throw new NbctlError('--if-exists and --id may not be specified together');
      const row = await recordUnless(nb, schema, table as string, id as string, flags);
      if (row === undefined) return '';
      if (rowId !== undefined) {
        checkRowId(rowId);
        nb.nameRow(rowId, uuidOf(row));
      }
      return columns
        .map(({ column, key, type }) => {
          if (key === undefined) return `${datumToString(row[column], type)}\n`;
          const entry = (row[column] as ['map', [unknown, unknown][]])[1].find(([k]) => String(k) === key);
          if (entry === undefined) throw new NbctlError(`no key "${key}" in ${table} record "${id}" column ${column}`);
          return `${atomToString(entry[1])}\n`;
        })
        .join('');
    },
  },
  set: {
    args: [3, Infinity] as [number, number],
    options: '--if-exists',
    run: async (nb: NbAccess, [table, id, ...assigns]: string[], flags: ReadonlySet<string> = new Set()) => {
      const schema = await schemaOf(nb);
      const row = await recordUnless(nb, schema, table as string, id as string, flags);
      if (row === undefined) return '';
      const where = byUuid(row);
      const ops: unknown[] = [];
      const whole: Record<string, unknown> = {};
      for (const a of assigns.map((x) => parseAssignment(schema, table as string, x))) {
        if (a.key === undefined) whole[a.column] = a.value;
        else {
          ops.push({ op: 'mutate', table, where, mutations: [[a.column, 'delete', ['set', [a.key]]]] });
          ops.push({ op: 'mutate', table, where, mutations: [[a.column, 'insert', ['map', [[a.key, a.value]]]]] });
        }
      }
      if (Object.keys(whole).length > 0) ops.unshift({ op: 'update', table, where, row: whole });
      await nb.transact(ops);
      return '';
    },
  },
  // add and remove: OVSDB mutations of a set or map column, so what another client changed
  // meanwhile stays. add replaces the value of a map key that is there already; remove takes
  // KEY (any value) or KEY=VALUE (that value only) for a map, elements for a set.
  add: {
    args: [4, Infinity] as [number, number],
    options: '--if-exists',
    run: (nb: NbAccess, args: string[], flags: ReadonlySet<string> = new Set()) =>
      mutateColumn(nb, args, flags, (t, many, column, values) =>
        values.flatMap((v) => {
          const value = parseValue(many, v);
          if (!isMap(t)) return [[column, 'insert', value]];
          // A key already there takes the new value, as in ovn-nbctl.
          const keys = (value as ['map', [unknown, unknown][]])[1].map(([k]) => k);
          return [[column, 'delete', ['set', keys]], [column, 'insert', value]];
        }),
      ),
  },
  remove: {
    args: [4, Infinity] as [number, number],
    options: '--if-exists',
    run: (nb: NbAccess, args: string[], flags: ReadonlySet<string> = new Set()) =>
      mutateColumn(nb, args, flags, (t, many, column, values, table) => {
        // ovn-nbctl checks this one itself (and leaves add on a scalar to the server).
        if (isScalar(t)) throw new NbctlError(`"remove" operation would put 0 values in column ${column} of table ${table} but the minimum number is 1`);
        return values.map((v) => {
          if (!isMap(t)) return [column, 'delete', parseValue(many, v)];
          // KEY=VALUE removes that pair; a bare KEY (or keys) removes whatever value it has.
          return [column, 'delete', isPair(v) ? parseValue(many, v) : parseValue({ key: t.key, min: 0, max: 'unlimited' }, v)];
        });
      }),
  },
  clear: {
    args: [3, Infinity] as [number, number],
    options: '--if-exists',
    run: async (nb: NbAccess, [table, id, ...cols]: string[], flags: ReadonlySet<string> = new Set()) => {
      const schema = await schemaOf(nb);
      const row = await recordUnless(nb, schema, table as string, id as string, flags);
      if (row === undefined) return '';
      const update: Record<string, unknown> = {};
      for (const c of cols) {
        const t = columnType(schema, table as string, c);
        if (isScalar(t) || (t.min ?? 1) > 0) throw new NbctlError(`"clear" operation cannot be applied to column ${c} of table ${table}, which is not allowed to be empty`);
        update[c] = isMap(t) ? ['map', []] : ['set', []];
      }
      await nb.transact([{ op: 'update', table, where: byUuid(row), row: update }]);
      return '';
    },
  },
  create: {
    args: [2, Infinity] as [number, number],
    options: '--id=',
    run: async (nb: NbAccess, [table, ...assigns]: string[], flags: ReadonlySet<string> = new Set()) => {
      const schema = await schemaOf(nb);
      if (schema.tables[table as string] === undefined) throw new NbctlError(`unknown table "${table}"`);
      // --id=UUID gives the new row that UUID; --id=@name names it for the later commands of
      // the transaction (written as its uuid-name: see NbTransaction).
      const rowId = flagValue(flags, '--id');
      const uuid = rowId !== undefined && isUuid(rowId) ? rowId : undefined;
      if (rowId !== undefined && uuid === undefined) checkRowId(rowId);
      const row: Record<string, unknown> = {};
      for (const a of assigns.map((x) => parseAssignment(schema, table as string, x))) {
        if (a.key !== undefined) throw new NbctlError('create: column:key=value is not supported; give the whole map');
        row[a.column] = a.value;
      }
      const named = rowId === undefined ? {} : uuid === undefined ? { 'uuid-name': rowId } : { uuid: uuid.toLowerCase() };
      const [result] = await nb.transact([{ op: 'insert', table, row, ...named }]);
      return `${(result as { uuid: [string, string] }).uuid[1]}\n`;
    },
  },
  destroy: {
    args: [1, Infinity] as [number, number],
    options: '--if-exists,--all',
    run: async (nb: NbAccess, [table, ...ids]: string[], flags: ReadonlySet<string> = new Set()) => {
      const schema = await schemaOf(nb);
      if (schema.tables[table as string] === undefined) throw new NbctlError(`unknown table "${table}"`);
      const all = flags.has('--all');
      if (all && ids.length > 0) throw new NbctlError('--all and records argument should not be specified together');
      if (all && flags.has('--if-exists')) throw new NbctlError('--all and --if-exists should not be specified together');
      // ovn-nbctl only warns about this one, and succeeds having done nothing.
      if (!all && ids.length === 0) return '';
      const rows = all ? await nb.rows(table as string) : await recordsUnless(nb, schema, table as string, ids, flags);
      if (rows.length > 0) await nb.transact(rows.map((r) => ({ op: 'delete', table, where: byUuid(r) })));
      return '';
    },
  },
};
