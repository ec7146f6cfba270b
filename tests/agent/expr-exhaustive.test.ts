// Goal: for every small expression, the OpenFlow matches accept exactly the packets it accepts.
// Method: as OVN's "exhaustive" expression tests: all one- and two-terminal expressions over two
// 2-bit variables on different fields (reg0[0..1] in xxreg0, reg4[0..1] in xxreg1) with every
// relop, constant and two-element set, under && / || and optional `!`, checked on all 16 packets.

import t from 'tap';
import { compileMatch } from '../../agent/expr/index.js';
import { parseExpr } from '../../agent/expr/parser.js';
import { buildSymtab } from '../../agent/expr/symbols.js';
import { evalExpr, matchesAccept, type Packet } from './expr-eval.js';

const symtab = buildSymtab();
const world = { resident: new Set<string>() };

function terminals(): string[] {
  const out: string[] = [];
  for (const v of ['reg0[0..1]', 'reg4[0..1]']) {
    for (const r of ['==', '!=', '<', '<=', '>', '>=']) for (let c = 0; c < 4; c++) out.push(`${v} ${r} ${c}`);
    for (let a = 0; a < 4; a++) for (let b = a + 1; b < 4; b++) out.push(`${v} == {${a}, ${b}}`, `${v} != {${a}, ${b}}`);
  }
  return out;
}

function packets(): Packet[] {
  const out: Packet[] = [];
  for (let a = 0; a < 4; a++) {
    for (let b = 0; b < 4; b++) out.push(new Map([['reg0', BigInt(a)], ['reg4', BigInt(b)]]));
  }
  return out;
}

t.test('all one- and two-terminal expressions', async (t) => {
  const terms = terminals();
  const exprs: string[] = [];
  for (const a of terms) exprs.push(a, `!(${a})`);
  for (const a of terms) {
    for (const b of terms) {
      for (const op of ['&&', '||']) exprs.push(`${a} ${op} ${b}`, `!(${a} ${op} ${b})`, `!(${a}) ${op} ${b}`);
    }
  }
  const ps = packets();
  let conjunctive = 0;
  let failures = 0;
  for (const text of exprs) {
    const r = compileMatch(text, { symtab });
    const parsed = parseExpr(text, symtab);
    if ('error' in r || 'error' in parsed) {
      t.fail(`${text}: ${'error' in r ? r.error : 'parse error'}`);
      failures++;
    } else {
      if (r.conjunctionsN > 0) conjunctive++;
      for (const p of ps) {
        const want = evalExpr(parsed.expr, p, world);
        if (matchesAccept(r.matches, p) !== want) {
          t.fail(`${text}: reg0=${p.get('reg0')} reg4=${p.get('reg4')}: expression says ${want}`);
          failures++;
          break;
        }
      }
    }
    if (failures > 5) break;
  }
  t.equal(failures, 0, `${exprs.length} expressions, each on ${ps.length} packets`);
  t.ok(conjunctive > 0, `${conjunctive} of them compiled to conjunctive matches`);
});
