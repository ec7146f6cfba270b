// Goal: no input string makes the match compiler throw; bad input always gets an error string.
// Method: seeded garbage (random characters from the language's alphabet and random bytes) and
// seeded mutations of valid matches, hundreds of each, plus hand-picked pathological inputs.

import t, { type Test } from 'tap';
import { compileMatch } from '../../agent/expr/index.js';
import { Prng, testContext } from './expr-fixtures.js';

const ctx = testContext();
const seedBase = Number(process.env.OVNTS_SEED ?? 7001);
const casesN = Number(process.env.OVNTS_FUZZ ?? 600);

const alphabet = [
  'ip4', 'ip4.src', 'tcp.dst', 'inport', 'reg0', 'ct.est', 'eth.dst', 'vlan.tci', 'ip6.src', 'is_chassis_resident',
  '==', '!=', '<', '<=', '>', '>=', '&&', '||', '!', '(', ')', '{', '}', '[', ']', ',', '..', '$set1', '@pg1', '$',
  '@', '"eth0"', '"', '0', '1', '0x', '0xff', '10.0.0.1', '/', '/24', '::1', 'ff:ff:ff:ff:ff:ff', ':', ' ', '.',
  '=', '&', '|', '/*', '*/', '//', '\\', '\n', '18446744073709551616', '01', 'é', '\u0000', '-', ';',
];

const seeds = [
  'ip4.src == 10.0.0.0/8 && tcp.dst == {80, 443}',
  'inport == "eth0" && (ip4 || ip6)',
  'ip4 && ip4.dst == {1.2.3.4, 5.6.7.8} && tcp.dst == {1,2,3}',
  'ct.est && !ct.rel && reg0[0..3] > 4',
  'outport == @pg1 && eth.dst[40] && is_chassis_resident("eth1")',
  '1 < vlan.pcp <= 4 || ip6.src == {$set2, fe80::/10}',
];

function checkOne(t: Test, text: string, label: string): boolean {
  let r;
  try {
    r = compileMatch(text, ctx);
  } catch (e) {
    t.fail(`${label} threw ${String(e)} on ${JSON.stringify(text)}`);
    return false;
  }
  if ('error' in r && (typeof r.error !== 'string' || r.error.length === 0)) {
    t.fail(`${label}: empty error on ${JSON.stringify(text)}`);
    return false;
  }
  return 'error' in r;
}

t.test('random garbage from the alphabet', async (t) => {
  let errors = 0;
  for (let i = 0; i < casesN; i++) {
    const r = new Prng(seedBase + i);
    const n = r.int(1, 12);
    let s = '';
    for (let k = 0; k < n; k++) s += r.pick(alphabet) + (r.chance(0.5) ? ' ' : '');
    if (checkOne(t, s, `seed ${seedBase + i} (replay: OVNTS_SEED=${seedBase + i} OVNTS_FUZZ=1)`)) errors++;
  }
  t.ok(errors > casesN / 2, `${errors} of ${casesN} rejected with an error`);
});

t.test('random bytes', async (t) => {
  for (let i = 0; i < casesN; i++) {
    const r = new Prng(seedBase + 100_000 + i);
    const n = r.int(0, 40);
    let s = '';
    for (let k = 0; k < n; k++) s += String.fromCharCode(r.int(0, 255));
    checkOne(t, s, `seed ${seedBase + 100_000 + i}`);
  }
  t.pass('no throw');
});

t.test('mutations of valid matches', async (t) => {
  for (let i = 0; i < casesN; i++) {
    const r = new Prng(seedBase + 200_000 + i);
    let s = r.pick(seeds);
    const edits = r.int(1, 3);
    for (let k = 0; k < edits; k++) {
      const at = r.int(0, s.length);
      const op = r.int(0, 2);
      if (op === 0) s = s.slice(0, at) + s.slice(at + 1);
      else if (op === 1) s = s.slice(0, at) + r.pick(alphabet) + s.slice(at);
      else s = s.slice(0, at) + s.slice(at, at + 3).split('').reverse().join('') + s.slice(at + 3);
    }
    checkOne(t, s, `seed ${seedBase + 200_000 + i}`);
  }
  t.pass('no throw');
});

t.test('pathological inputs', async (t) => {
  const cases = [
    '', ' ', '(', ')', '('.repeat(5000), '!'.repeat(5000) + '1', '('.repeat(100) + '1' + ')'.repeat(100),
    'reg0 == 1 && '.repeat(3000) + 'reg0 == 1', `tcp.dst == {${Array.from({ length: 5000 }, (_, i) => i % 65536).join(', ')}}`,
    'x'.repeat(300 * 1024), '"unterminated', 'ip6.src == ' + 'f:'.repeat(100), 'eth.type[4294967296] == 1',
    'ip4.src == 1.2.3.4/33', 'reg0[31..0] == 1', 'inport == "eth0" || ip4.src == "eth0"',
    'is_chassis_resident(1)', 'is_chassis_resident("a"', 'xxreg0 > 0xffffffffffffffffffffffffffffffff',
    'xxreg0 != 0x5 && xxreg1 != 0x7 && ip6.dst != ::1',
  ];
  for (const c of cases) checkOne(t, c, `pathological ${JSON.stringify(c.slice(0, 30))}`);
  t.equal(('error' in compileMatch('('.repeat(5000), ctx)) ? 'error' : 'ok', 'error');
  const long = compileMatch('reg0 == 1 && '.repeat(3000) + 'reg0 == 1', ctx);
  t.ok('matches' in long && long.matches.length === 1, 'a long chain compiles to one flow');
});
