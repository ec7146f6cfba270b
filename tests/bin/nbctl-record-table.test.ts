// Goal: nbctl's record printer lays out tables as ovn-nbctl does in every format and data style.
// Method: fixed tables whose expected text was printed by the real ovn-nbctl 23.03 (against an
// ovsdb-server with the NB schema), plus C printf's "%.15g" for reals; the end-to-end comparison
// is tests/bin/nbctl-vs-ovn-nbctl.test.ts.
import t from 'tap';
import { NbctlError } from '../../bin/lib/nbctl/nb.js';
import type { Cell, ColumnTypeJson, RecordTable } from '../../bin/lib/nbctl/record-table.js';
import { datumToString, defaultTableStyle, formatRecordTable, jsonText, numberText, tableStyle } from '../../bin/lib/nbctl/record-table.js';

const str: ColumnTypeJson = { key: 'string' };
const optionalInt: ColumnTypeJson = { key: 'integer', min: 0, max: 1 };
const optionalUuid: ColumnTypeJson = { key: 'uuid', min: 0, max: 1 };
const strings: ColumnTypeJson = { key: 'string', min: 0, max: 'unlimited' };
const smap: ColumnTypeJson = { key: 'string', value: 'string', min: 0, max: 'unlimited' };
const uuid: ColumnTypeJson = { key: 'uuid' };

const p1 = '6155c82d-9d80-4e73-b1df-cabcce8c18bd';
const p2 = 'a750d534-0d99-4151-8c9c-a83e5be31e28';

/** Two Logical_Switch_Port records, as in the real run the expectations come from. */
function ports(columns: readonly string[]): RecordTable {
  const rows: Record<string, Cell>[] = [
    {
      _uuid: { datum: ['uuid', p2], type: uuid },
      name: { datum: 'p2', type: str },
      addresses: { datum: ['set', []], type: strings },
      external_ids: { datum: ['map', [['k', 'a,b'], ['q', 'say "hi"']]], type: smap },
      tag_request: { datum: ['set', []], type: optionalInt },
    },
    {
      _uuid: { datum: ['uuid', p1], type: uuid },
      name: { datum: 'p1', type: str },
      addresses: { datum: ['set', ['00:00:00:00:00:01 10.0.0.1', 'unknown']], type: strings },
      external_ids: { datum: ['map', [['a', 'b'], ['x y', 'z']]], type: smap },
      tag_request: { datum: 5, type: optionalInt },
    },
  ];
  return { headings: columns, rows: rows.map((r) => columns.map((c) => r[c] as Cell)) };
}

const print = (table: RecordTable, ...flags: string[]): string => formatRecordTable(table, tableStyle(flags));

t.test('options act in the order given, as getopt reads them', async (t) => {
  t.same(tableStyle([]), defaultTableStyle);
  t.match(tableStyle(['--bare', '--format=table']), { format: 'table', data: 'bare', headings: false });
  t.match(tableStyle(['--format=table', '--bare']), { format: 'list', data: 'bare', headings: false });
  t.match(tableStyle(['--max-column-width=x']), { columnWidthMax: 0 }, "atoi's 0 for a non-number: no limit");
  t.match(tableStyle(['--max-column-width=12abc']), { columnWidthMax: 12 });
  t.throws(() => tableStyle(['--format=yaml', '--data=x']), new NbctlError('unknown output format "yaml"'), 'the first bad option is the one reported');
  t.throws(() => tableStyle(['--data=x']), new NbctlError('unknown data format "x"'));
});

t.test('list: 20-column headings, a blank line between records, bare cells without headings', async (t) => {
  t.equal(
    print(ports(['name', 'addresses', '_uuid'])),
    `name                : p2\naddresses           : []\n_uuid               : ${p2}\n\nname                : p1\naddresses           : ["00:00:00:00:00:01 10.0.0.1", unknown]\n_uuid               : ${p1}\n`,
  );
  t.equal(print(ports(['name', 'addresses']), '--bare'), 'p2\n\n\np1\n00:00:00:00:00:01 10.0.0.1 unknown\n');
  t.equal(print(ports(['name', 'external_ids']), '--no-headings'), 'p2\n{k="a,b", q="say \\"hi\\""}\n\np1\n{a=b, "x y"=z}\n');
  t.equal(print(ports(['name', 'external_ids']), '--format=list', '--data=bare'), 'name                : p2\nexternal_ids        : k=a,b q=say "hi"\n\nname                : p1\nexternal_ids        : a=b x y=z\n');
  t.equal(print({ headings: ['name'], rows: [] }), '', 'no records, no output');
});

t.test('table: padded columns, a dashes row, no trailing spaces', async (t) => {
  t.equal(
    print(ports(['name', 'external_ids', 'addresses', 'tag_request', '_uuid']), '--format=table', '--data=json'),
    [
      'name external_ids                             addresses                                        tag_request _uuid',
      '---- ---------------------------------------- ------------------------------------------------ ----------- -----------------------------------------------',
      `"p2" ["map",[["k","a,b"],["q","say \\"hi\\""]]] ["set",[]]                                       ["set",[]]  ["uuid","${p2}"]`,
      `"p1" ["map",[["a","b"],["x y","z"]]]          ["set",["00:00:00:00:00:01 10.0.0.1","unknown"]] 5           ["uuid","${p1}"]`,
      '',
    ].join('\n'),
  );
  t.equal(
    print(ports(['_uuid', 'addresses', 'name', 'tag_request']), '--format=table', '--no-headings'),
    `${p2} []                                      p2 []\n${p1} ["00:00:00:00:00:01 10.0.0.1", unknown] p1 5\n`,
    'without headings the widths are the cells\' own',
  );
  const onlyP1 = ports(['name', 'addresses', 'external_ids', 'tag_request']);
  t.equal(
    print({ ...onlyP1, rows: onlyP1.rows.slice(1) }, '--format=table', '--max-column-width=6'),
    'name addresses external_ids tag_request\n---- --------- ------------ -----------\np1   ["00:00:0 {a=b, "x y"= 5\n',
    "a cell is cut to the column width, which is at least its heading's",
  );
  t.equal(print({ headings: ['_uuid', 'name'], rows: [] }, '--format=table'), '_uuid name\n----- ----\n', 'no records: headings only');
});

t.test('widths count UTF-8 bytes, and non-ASCII strings are quoted', async (t) => {
  const row: RecordTable = { headings: ['name', 'type'], rows: [[{ datum: 'éé', type: str }, { datum: '', type: str }]] };
  // "éé" quoted is 6 bytes but 4 characters: the heading is padded to 6, the cell not at all.
  t.equal(print(row, '--format=table'), 'name   type\n------ ----\n"éé" ""\n');
  t.equal(print(row, '--format=table', '--no-headings', '--max-column-width=3'), '"é ""\n', 'a cut at a character boundary keeps the whole character');
  t.equal(print(row, '--format=csv'), 'name,type\n"""éé""",""""""\n');
});

t.test('csv: fields with a comma, quote or newline are quoted, quotes doubled', async (t) => {
  t.equal(
    print(ports(['name', 'external_ids', 'addresses']), '--format=csv', '--data=bare'),
    'name,external_ids,addresses\np2,"k=a,b q=say ""hi""",\np1,a=b x y=z,00:00:00:00:00:01 10.0.0.1 unknown\n',
  );
  t.equal(print({ headings: ['name'], rows: [] }, '--format=csv', '--no-headings'), '');
});

t.test('html: escaped text, the _uuid cell an anchor, other UUIDs links to it', async (t) => {
  const table: RecordTable = {
    headings: ['_uuid', 'external_ids', 'tag_request'],
    rows: [[{ datum: ['uuid', p2], type: uuid }, { datum: ['map', [['h', '<&>'], ['ref', p1]]], type: smap }, { datum: ['set', []], type: optionalInt }]],
  };
  t.equal(
    print(table, '--format=html'),
    [
      '<table border=1>',
      '  <tr>',
      '    <th>_uuid</th>',
      '    <th>external_ids</th>',
      '    <th>tag_request</th>',
      '  </tr>',
      '  <tr>',
      `    <td><a name="${p2}">a750d534</a></td>`,
      `    <td>{h=&quot;&lt;&amp;&gt;&quot;, ref=&quot;<a href="#${p1}">6155c82d</a>&quot;}</td>`,
      '    <td>[]</td>',
      '  </tr>',
      '</table>',
      '',
    ].join('\n'),
  );
});

t.test('json: members sorted; --pretty indents and keeps closing brackets on the last line', async (t) => {
  t.equal(print(ports(['name', 'tag_request']), '--format=json', '--data=bare'), '{"data":[["p2",["set",[]]],["p1",5]],"headings":["name","tag_request"]}\n', '--data does not change json cells');
  t.equal(jsonText({ headings: ['a'], data: [] }, true), '{\n  "data": [],\n  "headings": [\n    "a"]}');
  t.equal(
    print({ headings: ['name', 'addresses'], rows: [[{ datum: 'p1', type: str }, { datum: ['set', ['x', 'y']], type: strings }]] }, '--format=json', '--pretty'),
    '{\n  "data": [\n    [\n      "p1",\n      [\n        "set",\n        [\n          "x",\n          "y"]]]],\n  "headings": [\n    "name",\n    "addresses"]}\n',
  );
});

t.test('values in ovs-vsctl syntax', async (t) => {
  t.equal(datumToString(['uuid', p1], optionalUuid), p1, 'an optional value with its one element: no brackets');
  t.equal(datumToString(['set', [['uuid', p1]]], optionalUuid), p1);
  t.equal(datumToString(['set', []], optionalUuid), '[]');
  t.equal(datumToString('a', strings), '[a]', 'a set of one element in a column of many: brackets');
  t.equal(datumToString(['map', [['k', 'v']]], { key: 'string', value: 'string', min: 0, max: 1 }), 'k=v', 'a map of at most one entry: no braces');
  t.equal(datumToString(['map', []], smap), '{}');
  const quoted = ['true', 'false', '9x', 'a b', 'é', 'ABCDEF01-0000-0000-0000-000000000000', ''];
  for (const s of quoted) t.equal(datumToString(s, str), JSON.stringify(s), `${JSON.stringify(s)} is quoted`);
  for (const s of ['word', '_x', 'a-b.c_9', 'True']) t.equal(datumToString(s, str), s, `${s} is bare`);
  t.equal(datumToString(true, { key: 'boolean' }), 'true');
});

t.test('reals as "%.15g"', async (t) => {
  const cases: [number, string][] = [
    [0.1, '0.1'],
    [1e-5, '1e-05'],
    [1.2345678901234568e17, '1.23456789012346e+17'],
    [1.5, '1.5'],
    [-2.5e-7, '-2.5e-07'],
    [1 / 3, '0.333333333333333'],
    [0.0001, '0.0001'],
    [100, '100'],
  ];
  for (const [n, text] of cases) t.equal(numberText(n), text, String(n));
});
