// Goal: simplification and normalization give OVN's results and the clause shape OVN relies on.
// Method: OVN's "simplification special cases" and "is_chassis_resident simplification" from
// tests/ovn.at printed in OVN's form, then normal-form shapes (terms, clauses, alternatives).

import t from 'tap';
import { annotateExpr } from '../../agent/expr/annotate.js';
import { formatExpr, type Expr } from '../../agent/expr/ast.js';
import { evaluateConditions, normalize, NormalizeError, simplify, type Dnf } from '../../agent/expr/normalize.js';
import { parseExpr } from '../../agent/expr/parser.js';
import { testContext } from './expr-fixtures.js';

const ctx = testContext();
const { symtab } = ctx;
const resident = (p: string): boolean => ctx.isChassisResident?.(p) ?? false;

function annotated(text: string): Expr {
  const p = parseExpr(text, symtab, ctx);
  if ('error' in p) throw new Error(p.error.message);
  const a = annotateExpr(p.expr, symtab);
  if ('error' in a) throw new Error(a.error);
  return a.expr;
}

function simplified(text: string): string {
  return formatExpr(simplify(evaluateConditions(annotated(text), resident), symtab), symtab);
}

/** Term shapes: each clause as "field×alternatives". */
function shape(d: Dnf): string[] {
  return d.map((term) => term.clauses.map((c) => `${c.field}×${c.alts.length}`).join(' & ') || 'true');
}

t.test('simplification special cases (tests/ovn.at)', async (t) => {
  t.equal(simplified('eth.dst == 0/0'), '1');
  t.equal(simplified('eth.dst != 0/0'), '0');
  t.equal(simplified('tcp.dst >= 0'), 'ip.proto == 0x6 && (eth.type == 0x800 || eth.type == 0x86dd)');
  t.equal(simplified('tcp.dst <= 65535'), 'ip.proto == 0x6 && (eth.type == 0x800 || eth.type == 0x86dd)');
  const bits = (neg: boolean): string =>
    Array.from({ length: 16 }, (_, i) => `${neg ? '!' : ''}tcp.dst[${i}]`).join(' || ');
  t.equal(simplified('tcp.dst > 0'), `(${bits(false)}) && ip.proto == 0x6 && (eth.type == 0x800 || eth.type == 0x86dd)`);
  t.equal(simplified('tcp.dst < 65535'), `(${bits(true)}) && ip.proto == 0x6 && (eth.type == 0x800 || eth.type == 0x86dd)`);
});

t.test('is_chassis_resident simplification (tests/ovn.at)', async (t) => {
  t.equal(simplified('is_chassis_resident("eth1")'), '1');
  t.equal(simplified('is_chassis_resident("eth2")'), '0');
  t.equal(simplified('!is_chassis_resident("eth1")'), '0');
  t.equal(simplified('!is_chassis_resident("eth2")'), '1');
});

t.test('relational operators become prefix tests', async (t) => {
  // OVN's expansion of 1000 <= tcp.dst <= 1010, as its conjunction test shows: six prefixes.
  const d = normalize(annotated('tcp.dst >= 1000 && tcp.dst <= 1010 && ip4'), ctx);
  t.same(shape(d), ['eth.type×1 & ip.proto×1 & tcp.dst×6']);
  t.equal(simplified('vlan.pcp > 5'), 'vlan.tci[14..15] == 0x3 && vlan.tci[12]', 'pcp 6 or 7: one prefix');
  t.equal(simplified('vlan.pcp >= 5'), '(vlan.tci[13..15] == 0x5 || vlan.tci[14..15] == 0x3) && vlan.tci[12]');
  t.equal(simplified('reg0[0..2] < 3'), 'xxreg0[96..98] == 0x2 || xxreg0[97..98] == 0', 'values 2, then 0 and 1');
});

t.test('normal-form shapes', async (t) => {
  t.same(shape(normalize(annotated('ip4 && ip4.dst == {1.2.3.4, 5.6.7.8} && tcp.dst == {1,2,3}'), ctx)),
    ['eth.type×1 & ip.proto×1 & ip4.dst×2 & tcp.dst×3'], 'two disjunctive clauses in one term');
  t.same(shape(normalize(annotated('ip && tcp'), ctx)),
    ['eth.type×1 & ip.proto×1', 'eth.type×1 & ip.proto×1'], 'eth.type (must_crossproduct) multiplies terms');
  t.same(shape(normalize(annotated('icmp6.type == {1, 2}'), ctx)).length, 2, 'icmp6.type multiplies too');
  t.same(shape(normalize(annotated('tcp.dst == 1 || (tcp.dst >= 2 && tcp.dst <= 3)'), ctx)),
    ['eth.type×1 & ip.proto×1 & tcp.dst×3', 'eth.type×1 & ip.proto×1 & tcp.dst×3'],
    'one field\'s disjunction stays one clause');
  t.same(shape(normalize(annotated('reg0 == 1 && reg0 == 2'), ctx)), [], 'a contradiction has no terms');
  t.same(shape(normalize(annotated('reg0[0] == 1 && reg0[1] == 1'), ctx)), ['xxreg0×1'], 'subfields merge');
  t.same(shape(normalize(annotated('1'), ctx)), ['true']);
  t.same(shape(normalize(annotated('0'), ctx)), []);
});

t.test('the expansion bound throws NormalizeError', async (t) => {
  const parts = Array.from({ length: 13 }, (_, i) => `(reg0[${i}] == 1 || reg4[${i}] == 1)`);
  let thrown: unknown = null;
  try {
    normalize(annotated(parts.join(' && ')), ctx);
  } catch (e) {
    thrown = e;
  }
  t.ok(thrown instanceof NormalizeError, 'NormalizeError');
  t.match(String(thrown), /exceeds 4096 terms \(normalizeTermsMax\)/);
  const twelve = Array.from({ length: 12 }, (_, i) => `(reg0[${i}] == 1 || reg4[${i}] == 1)`);
  t.equal(normalize(annotated(twelve.join(' && ')), ctx).length, 4096, '2^12 terms is at the bound');
});
