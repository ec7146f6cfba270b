// Goal: our OVN_Northbound and OVN_Southbound schemas state exactly the facts of the installed
// OVN 23.03 schema files, and the generated row types follow them. Method: a semantic diff
// (every RFC 7047 spelling normalised) against the real files, plus the real ovsdb-tool as
// a second, independent judge.
import t from 'tap';
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { NB_SCHEMA_JSON, SB_SCHEMA_JSON, schemaJsonFor } from '../../ovsdb/schemas/index.js';
import { ROWS_MODULES, renderRowsModule } from '../../ovsdb/schemas/gen-rows.js';
import { int, optional, ref, schema, set, str, table } from '../../ovsdb/schemas/dsl.js';
import { repoRoot } from '../helpers/source-tree.js';

const run = promisify(execFile);
const REPO_ROOT = `${repoRoot}/`;

const CASES = [
  { db: 'nb', ours: NB_SCHEMA_JSON, upstreamPath: '/usr/share/ovn/ovn-nb.ovsschema', tables: 30 },
  { db: 'sb', ours: SB_SCHEMA_JSON, upstreamPath: '/usr/share/ovn/ovn-sb.ovsschema', tables: 34 },
] as const;

// ---------------------------------------------------------------------------------------------
// The normaliser: RFC 7047 allows "string", {"key": "string"} and {"key": {"type": "string"}}
// for the same type, and leaves out defaults (min 1, max 1, refType strong, isRoot false,
// mutable true, ephemeral false). Each fact becomes one path -> value entry with every default
// spelled out and every set sorted, so two schemas are equal exactly when their facts are.

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

function obj(v: unknown, where: string): Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error(`${where}: not an object`);
  return v as Record<string, unknown>;
}

function show(v: unknown): string {
  return JSON.stringify(v) ?? 'undefined';
}

function baseFacts(b: unknown, where: string): Map<string, string> {
  const o = typeof b === 'string' ? { type: b } : obj(b, where);
  const facts = new Map<string, string>([['type', show(o.type)]]);
  if (o.enum !== undefined) {
    const e = o.enum;
    const members = Array.isArray(e) && e[0] === 'set' && Array.isArray(e[1]) ? (e[1] as Json[]) : [e as Json];
    facts.set('enum', `[${members.map(show).sort().join(',')}]`);
  }
  for (const k of ['minInteger', 'maxInteger', 'minReal', 'maxReal', 'minLength', 'maxLength', 'refTable']) {
    if (o[k] !== undefined) facts.set(k, show(o[k]));
  }
  if (o.refTable !== undefined) facts.set('refType', show(o.refType ?? 'strong'));
  const known = ['type', 'enum', 'minInteger', 'maxInteger', 'minReal', 'maxReal', 'minLength', 'maxLength',
    'refTable', 'refType'];
  for (const k of Object.keys(o)) if (!known.includes(k)) facts.set(k, show(o[k]));
  return facts;
}

function typeFacts(ty: unknown, where: string): Map<string, string> {
  const o = typeof ty === 'string' ? { key: ty } : obj(ty, where);
  const facts = new Map<string, string>();
  for (const [k, v] of baseFacts(o.key, `${where}.key`)) facts.set(`key.${k}`, v);
  if (o.value !== undefined) {
    for (const [k, v] of baseFacts(o.value, `${where}.value`)) facts.set(`value.${k}`, v);
  }
  facts.set('min', show(o.min ?? 1));
  facts.set('max', show(o.max ?? 1));
  return facts;
}

/** Every fact of a schema, by path ("ACL.priority key.maxInteger"). */
function schemaFacts(schemaJson: unknown): Map<string, string> {
  const s = obj(schemaJson, 'schema');
  const facts = new Map<string, string>([['name', show(s.name)], ['version', show(s.version)]]);
  const tables = obj(s.tables, 'tables');
  // OVS: a schema in which no table says isRoot has every table as a root.
  const anyRoot = Object.values(tables).some((tbl) => obj(tbl, 'table').isRoot === true);
  for (const [tableName, tableJson] of Object.entries(tables)) {
    const tbl = obj(tableJson, tableName);
    facts.set(tableName, 'table');
    facts.set(`${tableName} isRoot`, show(anyRoot ? (tbl.isRoot ?? false) : true));
    if (tbl.maxRows !== undefined) facts.set(`${tableName} maxRows`, show(tbl.maxRows));
    const indexes = ((tbl.indexes ?? []) as string[][]).map((index) => [...index].sort().join(',')).sort();
    facts.set(`${tableName} indexes`, show(indexes));
    for (const [columnName, columnJson] of Object.entries(obj(tbl.columns, `${tableName}.columns`))) {
      const where = `${tableName}.${columnName}`;
      const c = obj(columnJson, where);
      facts.set(where, 'column');
      for (const [k, v] of typeFacts(c.type, where)) facts.set(`${where} ${k}`, v);
      facts.set(`${where} ephemeral`, show(c.ephemeral ?? false));
      facts.set(`${where} mutable`, show(c.mutable ?? true));
    }
  }
  return facts;
}

/**
 * The differences between two schemas, one line each, sorted: "fact: ours <v> vs theirs <v>",
 * with "(none)" for a fact one side does not have. Empty means the schemas are the same.
 */
function diffSchemas(ours: unknown, theirs: unknown): string[] {
  const a = schemaFacts(ours);
  const b = schemaFacts(theirs);
  const out: string[] = [];
  for (const key of [...new Set([...a.keys(), ...b.keys()])].sort()) {
    const x = a.get(key) ?? '(none)';
    const y = b.get(key) ?? '(none)';
    if (x !== y) out.push(`${key}: ours ${x} vs theirs ${y}`);
  }
  return out;
}

// Mutable deep copies of (frozen) schemas, for the tests that alter one.
interface LooseColumn { [k: string]: unknown; type: unknown }
interface LooseTable { [k: string]: unknown; columns: Record<string, LooseColumn> }
interface LooseSchema { [k: string]: unknown; tables: Record<string, LooseTable> }

function copyOf(json: unknown): LooseSchema {
  return structuredClone(json) as LooseSchema;
}

function tableOf(s: LooseSchema, tableName: string): LooseTable {
  const tbl = s.tables[tableName];
  if (tbl === undefined) throw new Error(`no table ${tableName}`);
  return tbl;
}

function columnOf(s: LooseSchema, tableName: string, columnName: string): LooseColumn {
  const c = tableOf(s, tableName).columns[columnName];
  if (c === undefined) throw new Error(`no column ${tableName}.${columnName}`);
  return c;
}

/** The column's type in object form, whose members a test may replace. */
function typeOf(s: LooseSchema, tableName: string, columnName: string): Record<string, unknown> {
  return obj(columnOf(s, tableName, columnName).type, `${tableName}.${columnName}`);
}

// ---------------------------------------------------------------------------------------------

t.test('the normaliser ignores spelling and reports each altered fact', async (t) => {
  t.same(diffSchemas(NB_SCHEMA_JSON, NB_SCHEMA_JSON), [], 'a schema equals itself');

  // Equivalent spellings: defaults written out, short forms expanded, enum members reordered.
  const respelled = copyOf(NB_SCHEMA_JSON);
  for (const tbl of Object.values(respelled.tables)) {
    tbl.isRoot ??= false;
    for (const c of Object.values(tbl.columns)) {
      if (typeof c.type === 'string') c.type = { key: { type: c.type }, min: 1, max: 1 };
      c.mutable = true;
      c.ephemeral ??= false;
    }
  }
  typeOf(respelled, 'ACL', 'action').key = {
    type: 'string', enum: ['set', ['reject', 'drop', 'allow-stateless', 'allow-related', 'allow']],
  };
  typeOf(respelled, 'Logical_Switch', 'ports').key = {
    type: 'uuid', refTable: 'Logical_Switch_Port', refType: 'strong',
  };
  typeOf(respelled, 'Meter_Band', 'action').key = { type: 'string', enum: 'drop' };
  t.same(diffSchemas(NB_SCHEMA_JSON, respelled), [], 'equivalent spellings are equal');

  // Real differences, each reported precisely.
  const altered = copyOf(NB_SCHEMA_JSON);
  typeOf(altered, 'ACL', 'priority').key = { type: 'integer', minInteger: 0, maxInteger: 32766 };
  typeOf(altered, 'Logical_Switch', 'load_balancer').key = { type: 'uuid', refTable: 'Load_Balancer' };
  typeOf(altered, 'QoS', 'bandwidth').key = { type: 'string', enum: ['set', ['rate']] };
  typeOf(altered, 'Meter', 'bands').min = 0;
  delete tableOf(altered, 'Mirror').columns.index;
  tableOf(altered, 'NB_Global').maxRows = 2;
  columnOf(altered, 'Connection', 'status').ephemeral = false;
  tableOf(altered, 'SSL').isRoot = true;
  t.same(diffSchemas(NB_SCHEMA_JSON, altered), [
    'ACL.priority key.maxInteger: ours 32767 vs theirs 32766',
    'Connection.status ephemeral: ours true vs theirs false',
    'Logical_Switch.load_balancer key.refType: ours "weak" vs theirs "strong"',
    'Meter.bands min: ours 1 vs theirs 0',
    'Mirror.index: ours column vs theirs (none)',
    'Mirror.index ephemeral: ours false vs theirs (none)',
    'Mirror.index key.type: ours "integer" vs theirs (none)',
    'Mirror.index max: ours 1 vs theirs (none)',
    'Mirror.index min: ours 1 vs theirs (none)',
    'Mirror.index mutable: ours true vs theirs (none)',
    'NB_Global maxRows: ours 1 vs theirs 2',
    'QoS.bandwidth key.enum: ours ["burst","rate"] vs theirs ["rate"]',
    'SSL isRoot: ours false vs theirs true',
  ]);
});

for (const c of CASES) {
  const skip = existsSync(c.upstreamPath)
    ? false
    : `the real OVN is not installed (${c.upstreamPath} is missing), so there is no oracle`;
  t.test(`${c.ours.name} agrees with ${c.upstreamPath}`, { skip }, async (t) => {
    const upstream: unknown = JSON.parse(readFileSync(c.upstreamPath, 'utf8'));
    t.equal(Object.keys(c.ours.tables).length, c.tables, 'table count');
    t.same(diffSchemas(c.ours, upstream), [], 'no table, column or type differs');
  });
}

async function ovsdbToolMissing(): Promise<string | false> {
  try {
    await run('ovsdb-tool', ['--version']);
    return false;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      return 'ovsdb-tool is not installed (it comes with the openvswitch-common package)';
    }
    throw err;
  }
}

const ovsdbToolOptions = { skip: await ovsdbToolMissing() };
t.test('the real ovsdb-tool accepts our schemas and finds them equal to OVN\'s', ovsdbToolOptions, async (t) => {
  const dir = t.testdir();
  const tool = async (...args: string[]): Promise<string> => (await run('ovsdb-tool', args)).stdout.trim();
  for (const c of CASES) {
    const ourSchema = join(dir, `${c.db}.ovsschema`);
    const db = join(dir, `${c.db}.db`);
    writeFileSync(ourSchema, JSON.stringify(c.ours, null, 2));
    t.equal(await tool('schema-name', ourSchema), c.ours.name, `${c.db}: schema-name of our file`);
    t.equal(await tool('schema-version', ourSchema), c.ours.version, `${c.db}: schema-version of our file`);
    await tool('create', db, ourSchema);
    t.equal(await tool('db-name', db), c.ours.name, `${c.db}: db-name of the created database`);
    t.equal(await tool('db-version', db), c.ours.version, `${c.db}: db-version of the created database`);

    if (!existsSync(c.upstreamPath)) continue;
    // needs-conversion compares schemas semantically, and counts "cksum" as part of the
    // schema: the installed file as it is must need no conversion.
    t.equal(await tool('needs-conversion', db, c.upstreamPath), 'no', `${c.db}: ovsdb-tool sees no difference from the installed file, cksum included`);
    const upstream = copyOf(JSON.parse(readFileSync(c.upstreamPath, 'utf8')));
    const upstreamSchema = join(dir, `${c.db}-upstream.ovsschema`);
    // ... and the same judge does see a one-fact difference.
    tableOf(upstream, 'Connection').maxRows = 7;
    writeFileSync(upstreamSchema, JSON.stringify(upstream));
    t.equal(await tool('needs-conversion', db, upstreamSchema), 'yes', `${c.db}: ovsdb-tool sees an altered maxRows`);
  }
});

t.test('the generated row modules are up to date', async (t) => {
  t.equal(ROWS_MODULES.length, 2);
  for (const m of ROWS_MODULES) {
    const onDisk = readFileSync(join(REPO_ROOT, m.path), 'utf8');
    t.ok(onDisk === renderRowsModule(m.schema),
      `${m.path} is what the generator writes (if not: node --import tsx ovsdb/schemas/gen-rows.ts)`);
  }
});

t.test('schemaJsonFor takes the short and the full database names, and nothing else', async (t) => {
  t.equal(schemaJsonFor('nb'), NB_SCHEMA_JSON);
  t.equal(schemaJsonFor('OVN_Northbound'), NB_SCHEMA_JSON);
  t.equal(schemaJsonFor('sb'), SB_SCHEMA_JSON);
  t.equal(schemaJsonFor('OVN_Southbound'), SB_SCHEMA_JSON);
  for (const bad of ['', 'NB', 'ovn_northbound', 'Open_vSwitch', ' nb']) {
    t.throws(() => schemaJsonFor(bad), { message: /^unknown database ".*": expected one of nb, / }, show(bad));
  }
  t.ok(Object.isFrozen(NB_SCHEMA_JSON.tables.ACL?.columns.priority), 'the shared JSON is frozen');
});

t.test('the DSL rejects a schema that could not be right', async (t) => {
  const ok = { t: table('A table.', { isRoot: true }, { a: str() }) };
  t.doesNotThrow(() => schema({ name: 'S', version: '1.0.0', tables: ok }));
  t.throws(() => schema({ name: 'S', version: '1.0', tables: ok }), /version/);
  t.throws(() => schema({ name: 'S', version: '1.0.0', tables: { t: table('A table.', {}, { a: str() }) } }),
    /no root table/);
  t.throws(() => schema({
    name: 'S', version: '1.0.0', tables: { t: table('A table.', { isRoot: true }, { a: set(ref('Nope')) }) },
  }), /refers to table Nope/);
  t.throws(() => table('A table.', { indexes: [['b']] }, { a: str() }), /index column b/);
  t.throws(() => table('A table.', {}, { _a: str() }), /bad column name/);
  t.throws(() => int({ min: 5, max: 4 }), /empty/);
  t.throws(() => str({ enum: [] }), /at least one member/);
  t.throws(() => optional(int({ max: 2 ** 63 })), /integer/);
  t.throws(() => set(str(), { max: 0 }), /bad max/);
});
