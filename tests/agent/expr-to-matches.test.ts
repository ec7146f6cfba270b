// Goal: match expressions compile to the OpenFlow matches OVN produces, conjunctions included.
// Method: the golden blocks of tests/testdata/agent/expr-flows.txt (OVN's own "converting
// expressions to flows" cases and the issue's examples), compiled against test-ovn.c's fixture.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { compileMatch, formatMatches, normalizeTermsMax } from '../../agent/expr/index.js';
import { testContext } from './expr-fixtures.js';
import { testsDir } from '../helpers/source-tree.js';

const ctx = testContext();

function compiled(text: string): string[] {
  const r = compileMatch(text, ctx);
  if ('error' in r) return [`error: ${r.error}`];
  const lines = formatMatches(r.matches);
  return lines.length === 0 ? ['(no flows)'] : lines;
}

interface Block { readonly match: string; readonly expected: string[]; readonly line: number }

function readBlocks(): Block[] {
  const text = readFileSync(join(testsDir, 'testdata/agent/expr-flows.txt'), 'utf8');
  const blocks: Block[] = [];
  let cur: { match: string; expected: string[]; line: number } | null = null;
  text.split('\n').forEach((line, i) => {
    if (line.startsWith('#')) return;
    if (line.startsWith('match: ')) {
      cur = { match: line.slice('match: '.length), expected: [], line: i + 1 };
      blocks.push(cur);
    } else if (line.trim() === '') {
      cur = null;
    } else if (cur !== null) {
      (cur as { expected: string[] }).expected.push(line);
    }
  });
  return blocks;
}

t.test('golden flows', async (t) => {
  const blocks = readBlocks();
  t.ok(blocks.length > 40, `${blocks.length} blocks`);
  for (const b of blocks) t.same(compiled(b.match), b.expected, `line ${b.line}: ${b.match.slice(0, 70)}`);
});

t.test('conjunction ids count from 1 and each term gets its own', async (t) => {
  const r = compileMatch('(ip4.src == {1.1.1.1, 2.2.2.2} && ip4.dst == {3.3.3.3, 4.4.4.4}) || '
    + '(ip4.src == {5.5.5.5, 6.6.6.6} && tcp.dst == {1, 2})', ctx);
  t.ok('matches' in r);
  if ('matches' in r) {
    t.equal(r.conjunctionsN, 2);
    const ids = new Set(r.matches.flatMap((m) => m.conjunctions.map((c) => c.id)));
    t.same([...ids].sort(), [1, 2]);
  }
});

t.test('equal matches merge: conjunctive ones pool their actions, a plain one absorbs them', async (t) => {
  const pooled = compiled('(ip4.src == {1.1.1.1, 2.2.2.2} && ip4.dst == {3.3.3.3, 4.4.4.4}) || '
    + '(ip4.src == {1.1.1.1, 2.2.2.2} && reg0 == {1, 2})');
  t.same(pooled.filter((l) => l.includes('ipv4_src=1.1.1.1')), [
    'eth_type=0x800,ipv4_src=1.1.1.1 conjunction(1,1/2),conjunction(2,0/2)',
  ]);
  t.equal(pooled.length, 8, 'two conj_id flows and six clause flows: the two ip4.src flows are shared');
  const plain = compiled('(ip4.src == {1.1.1.1, 2.2.2.2} && ip4.dst == {3.3.3.3, 4.4.4.4}) || ip4.src == 1.1.1.1');
  t.ok(plain.includes('eth_type=0x800,ipv4_src=1.1.1.1'), 'the plain flow stays');
  t.notOk(plain.some((l) => l.startsWith('eth_type=0x800,ipv4_src=1.1.1.1 ')), 'its conjunction action is gone');
});

t.test('the expansion bound fails with a clear error', async (t) => {
  // 2^13 terms: thirteen two-way choices between bits of xxreg0 (reg0) and xxreg1 (reg4), each
  // an OR over two fields, which cannot stay one clause and so must multiply.
  const parts = [];
  for (let i = 0; i < 13; i++) parts.push(`(reg0[${i}] == 1 || reg4[${i}] == 1)`);
  const r = compileMatch(parts.join(' && '), ctx);
  t.ok('error' in r);
  if ('error' in r) t.match(r.error, new RegExp(`exceeds ${normalizeTermsMax} terms`));
});
