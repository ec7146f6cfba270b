// Two tiny evaluators the property tests compare: one reads a parsed expression tree directly
// (prerequisites, subfields and predicates by their table definitions), the other runs OpenFlow
// matches with conjunctive-match semantics. Deliberately simple, so they can serve as oracles.

import type { Expr } from '../../agent/expr/ast.js';
import type { FlowMatch } from '../../agent/expr/index.js';
import { parseExpr } from '../../agent/expr/parser.js';
import { buildSymtab, type ExprSymbol } from '../../agent/expr/symbols.js';

const symtab = buildSymtab();
/** The logical ports the evaluators know; any other port name never matches. */
export const portKeys: Readonly<Record<string, number>> = { lp1: 1, lp2: 2, lp3: 3 };

export type Packet = Map<string, bigint>;

// ---- Reference evaluator over the parsed tree -----------------------------------------------

function rawField(sym: ExprSymbol, p: Packet): bigint {
  if (sym.kind === 'subfield') {
    const parent = symtab.get(sym.parent) as ExprSymbol;
    return (rawField(parent, p) >> BigInt(sym.parentOfs)) & ((1n << BigInt(sym.width)) - 1n);
  }
  if (sym.kind !== 'field') throw new Error(`no raw value for ${sym.name}`);
  const xx = /^xxreg([0-9])$/.exec(sym.of);
  const x = /^xreg([0-9])$/.exec(sym.of);
  if (xx !== null || x !== null) {
    const first = xx !== null ? Number(xx[1]) * 4 : Number((x as RegExpExecArray)[1]) * 2;
    const n = xx !== null ? 4 : 2;
    let v = 0n;
    for (let i = 0; i < n; i++) v = (v << 32n) | (p.get(`reg${first + i}`) ?? 0n);
    return v;
  }
  return p.get(sym.of) ?? 0n;
}

export interface World { readonly resident: ReadonlySet<string> }

function evalText(text: string, p: Packet, w: World): boolean {
  const r = parseExpr(text, symtab);
  if ('error' in r) throw new Error(`table expression ${text}: ${r.error.message}`);
  return evalExpr(r.expr, p, w);
}

export function evalExpr(e: Expr, p: Packet, w: World): boolean {
  switch (e.kind) {
    case 'bool': return e.value;
    case 'chassisResident': return w.resident.has(e.port) !== e.negated;
    case 'and': return e.subs.every((s) => evalExpr(s, p, w));
    case 'or': return e.subs.some((s) => evalExpr(s, p, w));
    case 'strcmp': {
      const sym = symtab.get(e.symbol) as ExprSymbol & { of: string };
      const key = portKeys[e.value];
      const eq = key !== undefined && p.get(sym.of) === BigInt(key);
      return e.relop === '==' ? eq : !eq;
    }
    case 'cmp': {
      const sym = symtab.get(e.symbol) as ExprSymbol;
      if (sym.prereqs !== null && !evalText(sym.prereqs, p, w)) return false;
      if (sym.kind === 'predicate') {
        const positive = ((e.value & 1n) === 1n) !== (e.relop === '!=');
        return evalText(sym.expansion, p, w) === positive;
      }
      const v = rawField(sym, p) & e.mask;
      if (e.relop === '==') return v === e.value;
      if (e.relop === '!=') return v !== e.value;
      let ofs = 0n;
      while (((e.mask >> ofs) & 1n) === 0n) ofs++;
      const a = v >> ofs;
      const b = e.value >> ofs;
      switch (e.relop) {
        case '<': return a < b;
        case '<=': return a <= b;
        case '>': return a > b;
        case '>=': return a >= b;
      }
    }
  }
}

// ---- Evaluator over the OpenFlow matches ----------------------------------------------------

function fieldsMatch(m: FlowMatch, p: Packet, conjId: number | null): boolean {
  for (const [name, { value, mask }] of m.fields) {
    const have = name === 'conj_id' ? (conjId === null ? null : BigInt(conjId)) : (p.get(name) ?? 0n);
    if (have === null || (have & mask) !== value) return false;
  }
  return true;
}

export function matchesAccept(ms: readonly FlowMatch[], p: Packet): boolean {
  // Plain flows first; then each conjunction id whose every clause has a matching flow.
  for (const m of ms) {
    if (m.conjunctions.length === 0 && !m.fields.has('conj_id') && fieldsMatch(m, p, null)) return true;
  }
  const seen = new Map<number, { n: number; clauses: Set<number> }>();
  for (const m of ms) {
    if (m.conjunctions.length === 0 || !fieldsMatch(m, p, null)) continue;
    for (const c of m.conjunctions) {
      const s = seen.get(c.id) ?? { n: c.nClauses, clauses: new Set<number>() };
      s.clauses.add(c.clause);
      seen.set(c.id, s);
    }
  }
  for (const [id, s] of seen) {
    if (s.clauses.size !== s.n) continue;
    if (ms.some((m) => m.fields.has('conj_id') && fieldsMatch(m, p, id))) return true;
  }
  return false;
}

