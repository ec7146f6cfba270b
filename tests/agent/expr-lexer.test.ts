// Goal: our lexer tokenizes OVN's match syntax exactly as OVN's lib/lex.c does.
// Method: the golden table tests/testdata/agent/expr-lex.txt (OVN's own "lexer" cases), each
// input lexed and printed back token by token; plus error offsets.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { formatToken, lex } from '../../agent/expr/lexer.js';
import { testsDir } from '../helpers/source-tree.js';

function render(input: string): string {
  const r = lex(input);
  if ('error' in r) return `error(${JSON.stringify(r.error.message)})`;
  return r.tokens.filter((x) => x.kind !== 'end').map(formatToken).join(' ');
}

const lines = readFileSync(join(testsDir, 'testdata/agent/expr-lex.txt'), 'utf8').split('\n');
let cases = 0;
for (const line of lines) {
  if (line.trim() === '' || line.startsWith('#')) continue;
  const at = line.indexOf(' => ');
  const input = at < 0 ? line : line.slice(0, at);
  const expected = at < 0 ? line : line.slice(at + 4);
  t.equal(render(input), expected, input);
  cases++;
}

t.test('the golden table is not empty', async (t) => {
  t.ok(cases >= 70, `${cases} cases`);
});

t.test('errors carry the offset of the bad token', async (t) => {
  const r = lex('ip4.src == 256.1.2.3');
  t.ok('error' in r);
  if ('error' in r) t.equal(r.error.offset, 11);
  const q = lex('inport == "abc');
  if ('error' in q) t.equal(q.error.offset, 10);
  else t.fail('expected an error');
});

t.test('identifiers, strings, address sets and port groups', async (t) => {
  const r = lex('inport == "lp1" && ip4.src == $as_1 && outport == @pg');
  t.ok('tokens' in r);
  if ('tokens' in r) {
    t.same(r.tokens.map((x) => x.kind), ['id', 'punct', 'string', 'punct', 'id', 'punct', 'addressSet', 'punct',
      'id', 'punct', 'portGroup', 'end']);
  }
});

t.test('quoted strings: value, text and offset, with and without escapes', async (t) => {
  const strings = (input: string): unknown[] => {
    const r = lex(input);
    if ('error' in r) return [r.error];
    return r.tokens.filter((x) => x.kind === 'string').map((x) => x.kind === 'string' && [x.value, x.text, x.offset]);
  };
  t.same(strings('outport = "lp1"; output;'), [['lp1', '"lp1"', 10]], 'a plain string');
  t.same(strings('""'), [['', '""', 0]], 'the empty string');
  t.same(strings('{"a", "b\\"c", "d"}'), [['a', '"a"', 1], ['b"c', '"b\\"c"', 6], ['d', '"d"', 14]], 'an escaped quote between plain strings');
  t.same(strings('"x" "\\\\y\\n"'), [['x', '"x"', 0], ['\\y\n', '"\\\\y\\n"', 4]], 'a plain string, then escapes after its closing quote');
  t.same(strings('"\\u0041b"'), [['Ab', '"\\u0041b"', 0]], 'a \\u escape');
  t.same(strings('inport == "lp1'), [{ message: 'Input ends inside quoted string.', offset: 10 }], 'unterminated');
  t.same(strings('"a\\'), [{ message: 'Input ends inside quoted string.', offset: 0 }], 'unterminated after a backslash');
  t.same(strings('"a\\q"'), [{ message: 'Invalid escape `\\q\' in quoted string.', offset: 2 }], 'an unknown escape');
});
