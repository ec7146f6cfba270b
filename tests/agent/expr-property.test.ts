// Goal: the compiled OpenFlow matches accept exactly the packets the expression accepts.
// Method: random small expressions over a few fields; a tiny evaluator reads the parsed tree
// (prerequisites, subfields and predicates by their definitions) on random packets, and a
// second one runs the matches with conjunction semantics. Seeded; a failure prints its replay.

import t from 'tap';
import { compileMatch } from '../../agent/expr/index.js';
import { parseExpr } from '../../agent/expr/parser.js';
import { buildSymtab } from '../../agent/expr/symbols.js';
import { evalExpr, matchesAccept, portKeys, type Packet, type World } from './expr-eval.js';
import { Prng } from './expr-fixtures.js';

const symtab = buildSymtab();
const addressSets: Record<string, string[]> = { as1: ['10.0.0.1', '10.0.0.4/30'], as_empty: [] };
const portGroups: Record<string, string[]> = { pg: ['lp2', 'lp3', 'lp9'] };

// ---- Generators -----------------------------------------------------------------------------

function genLeaf(r: Prng, negated: boolean): string {
  const c = (): number => r.int(0, 15);
  const relop = (): string => r.pick(['==', '!=', '<', '<=', '>', '>=']);
  const ip = (): string => `10.0.0.${r.int(0, 15)}`;
  const leaves: (() => string)[] = [
    () => `tcp.dst ${relop()} ${c()}`,
    () => `tcp.dst == {${c()}, ${c()}, ${c()}}`,
    () => `tcp.dst != {${c()}, ${c()}}`,
    () => `udp.src ${relop()} ${c()}`,
    () => `reg0[0..3] ${relop()} ${c()}`,
    () => `reg0 == {${c()}, ${c()}}`,
    () => `reg1 ${relop()} ${c()}`,
    () => `reg0[${r.int(0, 3)}]`,
    () => `!reg1[${r.int(0, 3)}]`,
    () => `reg8[0..1] == ${r.int(0, 3)}`,
    () => `ip4.src == ${ip()}/${r.pick([28, 29, 30, 31, 32])}`,
    () => `ip4.src == {${ip()}, ${ip()}, ${ip()}}`,
    () => `ip4.dst != ${ip()}/30`,
    () => `ip4.src == $as1`,
    () => `ip4.dst == {$as_empty}`,
    () => `ct.est`, () => `!ct.est`, () => `ct.new`, () => `!ct.rel`, () => `ct.trk`,
    () => `vlan.present`, () => `!vlan.present`, () => `vlan.pcp ${relop()} ${r.int(0, 7)}`,
    () => `flags.loopback`,
    () => `is_chassis_resident("${r.pick(['lp1', 'lp2'])}")`,
    () => r.pick(['1', '0']),
    // Pairs of disjunctions on distinct fields compile to conjunctive matches; several of them
    // under one OR share clause flows, which must then carry every conjunction they belong to.
    () => `(tcp.dst == {${c()}, ${c()}} && reg8[0..1] == {${r.int(0, 3)}, ${r.int(0, 3)}})`,
    () => `(tcp.dst == {${c()}, ${c()}, ${c()}} && ip4.src == {${ip()}, ${ip()}})`,
  ];
  // Nominal fields and predicates may only be tested positively once `!`s are counted.
  const positiveOnly: (() => string)[] = [
    () => r.pick(['ip4', 'ip', 'tcp', 'udp', 'ip6', 'arp']),
    () => `ip.proto == {6, 17}`,
    () => `eth.type == ${r.pick(['0x800', '0x86dd', '0x806'])}`,
    () => `inport == "${r.pick(['lp1', 'lp2', 'lp3', 'nope'])}"`,
    () => `outport == @pg`,
  ];
  const pool = negated ? leaves : [...leaves, ...positiveOnly, ...positiveOnly];
  return r.pick(pool)();
}

function genExpr(r: Prng, depth: number, negated: boolean): string {
  if (depth === 0 || r.chance(0.3)) return genLeaf(r, negated);
  const k = r.int(0, 4);
  if (k === 0) return `!(${genExpr(r, depth - 1, !negated)})`;
  const op = k <= 2 ? '&&' : '||';
  const n = r.int(2, 3);
  const parts = [];
  for (let i = 0; i < n; i++) parts.push(genExpr(r, depth - 1, negated));
  return `(${parts.join(` ${op} `)})`;
}

function genPacket(r: Prng): Packet {
  const p: Packet = new Map();
  p.set('eth_type', BigInt(r.pick([0x800, 0x86dd, 0x806, 0x800, 0x800])));
  p.set('ip_proto', BigInt(r.pick([6, 17, 1, 6])));
  p.set('tcp_dst', BigInt(r.chance(0.9) ? r.int(0, 15) : r.int(0, 0xffff)));
  p.set('udp_src', BigInt(r.int(0, 17)));
  for (const reg of ['reg0', 'reg1', 'reg8']) p.set(reg, BigInt(r.chance(0.9) ? r.int(0, 15) : r.int(0, 0xffffffff)));
  p.set('reg10', BigInt(r.int(0, 3)));
  p.set('reg14', BigInt(r.int(0, 4)));
  p.set('reg15', BigInt(r.int(0, 4)));
  p.set('ct_state', BigInt(r.int(0, 0x3f)));
  p.set('vlan_tci', BigInt(r.int(0, 0xffff)));
  p.set('ipv4_src', BigInt(0x0a000000 + r.int(0, 15)));
  p.set('ipv4_dst', BigInt(0x0a000000 + r.int(0, 15)));
  return p;
}

// ---- The property -----------------------------------------------------------------------------

const seedBase = Number(process.env.OVNTS_SEED ?? 20260601);
const expressionsN = Number(process.env.OVNTS_EXPRS ?? 600);
const packetsN = 60;

t.test('compiled matches agree with the expression on random packets', async (t) => {
  let compiled = 0;
  let tooComplex = 0;
  let accepted = 0;
  let withConjunctions = 0;
  for (let i = 0; i < expressionsN; i++) {
    const seed = seedBase + i;
    const r = new Prng(seed);
    const text = genExpr(r, 3, false);
    const resident = new Set(r.chance(0.5) ? ['lp1'] : ['lp2']);
    const world: World = { resident };
    const result = compileMatch(text, {
      symtab, lookupPort: (n) => portKeys[n], addressSet: (n) => addressSets[n], portGroup: (n) => portGroups[n],
      isChassisResident: (port) => resident.has(port),
    });
    if ('error' in result) {
      if (/too complex/.test(result.error)) { tooComplex++; continue; }
      t.fail(`seed ${seed}: ${text}: unexpected error ${result.error}\n  replay: OVNTS_SEED=${seed} OVNTS_EXPRS=1 npm run test:one -- tests/agent/expr-property.test.ts`);
      return;
    }
    compiled++;
    if (result.conjunctionsN > 0) withConjunctions++;
    const parsed = parseExpr(text, symtab, { addressSet: (n) => addressSets[n], portGroup: (n) => portGroups[n] });
    if ('error' in parsed) throw new Error('compiled but does not parse');
    for (let j = 0; j < packetsN; j++) {
      const p = genPacket(r);
      const want = evalExpr(parsed.expr, p, world);
      const got = matchesAccept(result.matches, p);
      if (want) accepted++;
      if (want !== got) {
        t.fail(`seed ${seed}: ${text}\n  packet ${JSON.stringify([...p].map(([k, v]) => `${k}=${v.toString(16)}`))}\n`
          + `  expression says ${want}, matches say ${got}\n`
          + `  replay: OVNTS_SEED=${seed} OVNTS_EXPRS=1 npm run test:one -- tests/agent/expr-property.test.ts`);
        return;
      }
    }
  }
  t.ok(compiled > expressionsN * 0.9, `${compiled} of ${expressionsN} compiled (${tooComplex} too complex)`);
  t.ok(accepted > 0, `${accepted} packet verdicts were "match"`);
  t.ok(withConjunctions > 0 || expressionsN < 50, `${withConjunctions} expressions used conjunctive matches`);
});
