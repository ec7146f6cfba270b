// Generates ovsdb/rows/nb.ts and ovsdb/rows/sb.ts: one TypeScript interface per table, read
// from the RFC 7047 JSON that the DSL produces (plus each table's one-line description).
// Run `node --import tsx ovsdb/schemas/gen-rows.ts` after changing a schema;
// tests/ovsdb/schemas.test.ts renders the modules again in memory and fails on any difference.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { toSchemaJson } from './dsl.js';
import type { AtomicType, BaseTypeJson, Schema, TypeJson } from './dsl.js';
import { NB_SCHEMA } from './ovn-nb.js';
import { SB_SCHEMA } from './ovn-sb.js';

/** The generated modules, by path relative to the repository root. */
export const ROWS_MODULES: readonly { readonly path: string; readonly schema: Schema }[] = [
  { path: 'ovsdb/rows/nb.ts', schema: NB_SCHEMA },
  { path: 'ovsdb/rows/sb.ts', schema: SB_SCHEMA },
];

const IDENTIFIER_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;

const TS_TYPE_OF_ATOM: Readonly<Record<AtomicType, string>> = {
  integer: 'number',
  real: 'number',
  boolean: 'boolean',
  string: 'string',
  uuid: 'Uuid',
};

function baseOf(b: AtomicType | BaseTypeJson): BaseTypeJson {
  return typeof b === 'string' ? { type: b } : b;
}

/** The TypeScript type of one atom: a literal union for an enum, else the atom's type. */
function atomType(b: BaseTypeJson): string {
  if (b.enum === undefined) return TS_TYPE_OF_ATOM[b.type];
  return b.enum[1].map((v) => (typeof v === 'string' ? `'${v.replace(/[\\']/g, '\\$&')}'` : String(v))).join(' | ');
}

/** What the type does not show: reference targets, bounds, optionality. */
function notes(b: BaseTypeJson): string[] {
  const out: string[] = [];
  if (b.refTable !== undefined) out.push(b.refType === 'weak' ? `${b.refTable} (weak)` : b.refTable);
  const lo = b.minInteger ?? b.minReal;
  const hi = b.maxInteger ?? b.maxReal;
  if (lo !== undefined && hi !== undefined) out.push(`${lo}..${hi}`);
  else if (lo !== undefined) out.push(`>= ${lo}`);
  else if (hi !== undefined) out.push(`<= ${hi}`);
  if (b.minLength !== undefined) out.push(`at least ${b.minLength} characters`);
  if (b.maxLength !== undefined) out.push(`at most ${b.maxLength} characters`);
  return out;
}

function renderColumn(name: string, type: TypeJson, flags: { ephemeral: boolean; mutable: boolean }): string {
  assert(IDENTIFIER_RE.test(name), `column ${name} is not a TypeScript identifier`);
  const t = typeof type === 'string' ? { key: type } : type;
  const key = baseOf(t.key);
  const min = t.min ?? 1;
  const max = t.max ?? 1;
  let ts: string;
  let comment: string[];
  if (t.value !== undefined) {
    const value = baseOf(t.value);
    ts = `ReadonlyMap<${atomType(key)}, ${atomType(value)}>`;
    const keyNotes = notes(key);
    const valueNotes = notes(value);
    comment = [
      ...(keyNotes.length > 0 ? [`key ${keyNotes.join(', ')}`] : []),
      ...(valueNotes.length > 0 ? [`value ${valueNotes.join(', ')}`] : []),
    ];
  } else if (min === 1 && max === 1) {
    ts = atomType(key);
    comment = notes(key);
  } else {
    const element = atomType(key);
    ts = `readonly ${element.includes('|') ? `(${element})` : element}[]`;
    comment = notes(key);
    if (min === 0 && max === 1) comment.unshift('optional');
  }
  if (t.value !== undefined || max !== 1) {
    if (min === 1) comment.push('at least 1');
    if (max !== 'unlimited' && max !== 1) comment.push(`at most ${max}`);
  }
  if (flags.ephemeral) comment.push('ephemeral');
  if (!flags.mutable) comment.push('immutable');
  return `  readonly ${name}: ${ts};${comment.length > 0 ? ` // ${comment.join('; ')}` : ''}`;
}

/** The text of the rows module for `schema`. Pure: the same schema gives the same text. */
export function renderRowsModule(schema: Schema): string {
  const json = toSchemaJson(schema);
  const tableNames = Object.keys(json.tables);
  const lines: string[] = [
    `// GENERATED from our ${json.name} ${json.version} schema (ovsdb/schemas/) by`,
    '// ovsdb/schemas/gen-rows.ts. Do not edit: change the schema, then regenerate with',
    '//   node --import tsx ovsdb/schemas/gen-rows.ts',
    '// (tests/ovsdb/schemas.test.ts fails while this file is out of date).',
    '//',
    '// One interface per table, as the engine holds rows in memory: a column of exactly one atom',
    '// is that atom; an optional column or a set is a readonly array, sorted, without duplicates;',
    '// a map is a ReadonlyMap. Comments name the table a uuid refers to and the constraints the',
    '// type cannot show.',
    "import type { Row, Uuid } from './common.js';",
    '',
  ];
  for (const tableName of tableNames) {
    const table = json.tables[tableName];
    const description = schema.tables[tableName]?.description;
    assert(table !== undefined && description !== undefined);
    assert(IDENTIFIER_RE.test(tableName), `table ${tableName} is not a TypeScript identifier`);
    lines.push(`/** ${description} */`);
    lines.push(`export interface ${tableName} extends Row {`);
    for (const [columnName, column] of Object.entries(table.columns)) {
      lines.push(renderColumn(columnName, column.type, {
        ephemeral: column.ephemeral ?? false,
        mutable: column.mutable ?? true,
      }));
    }
    lines.push('}', '');
  }
  lines.push(`/** The name of a table of ${json.name}. */`);
  lines.push('export type TableName =');
  for (const [i, tableName] of tableNames.entries()) {
    lines.push(`  | '${tableName}'${i === tableNames.length - 1 ? ';' : ''}`);
  }
  lines.push('');
  lines.push('/** Each table\'s row type, by table name. */');
  lines.push('export interface Tables {');
  for (const tableName of tableNames) lines.push(`  readonly ${tableName}: ${tableName};`);
  lines.push('}', '');
  // A Uuid import that no column uses would fail the lint; every OVN schema has refs.
  assert(lines.some((l) => l.includes('Uuid') && !l.startsWith('import')), 'no uuid column');
  return lines.join('\n');
}

function main(): void {
  const root = fileURLToPath(new URL('../../', import.meta.url));
  for (const { path, schema } of ROWS_MODULES) {
    writeFileSync(root + path, renderRowsModule(schema));
    process.stdout.write(`wrote ${path}\n`);
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) main();
