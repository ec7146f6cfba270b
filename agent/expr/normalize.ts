// Simplification and normalization, after OVN's expr_simplify / expr_normalize: conditions are
// decided, every comparison becomes a masked equality (!= becomes a disjunction of one-bit
// tests, < <= > >= a disjunction of prefix tests), and the whole becomes an OR of terms, each an
// AND of clauses over distinct fields, where a clause is one test or a disjunction of tests on a
// single field. That is the shape OpenFlow's conjunctive match can express directly. Fields OVN
// marks must_crossproduct (eth.type, ip.proto, icmp6.type, icmp6.code) are never kept as a
// disjunction: they multiply the terms instead. The expansion is bounded.

import assert from 'node:assert/strict';
import { bitRange, combine, combineAll, FALSE, TRUE, widthMask, type AndOr, type Cmp, type Expr } from './ast.js';
import { isShared, markShared } from './shared.js';
import type { Symtab } from './symbols.js';

/** One test on a field: a masked integer equality, or a logical port name. */
export type Leaf =
  | { readonly kind: 'int'; readonly field: string; readonly value: bigint; readonly mask: bigint }
  | { readonly kind: 'port'; readonly field: string; readonly port: string };

/** A disjunction of tests on one field (one test when alts has a single element). */
export interface Clause {
  readonly field: string;
  readonly alts: readonly Leaf[];
}

/** A conjunction of clauses on distinct fields, sorted by field name; no clauses means "true". */
export interface Term {
  readonly clauses: readonly Clause[];
}

/** An OR of terms; no terms means "false". */
export type Dnf = readonly Term[];

/** Bounds the number of terms in one expression's normal form (and so the flows it yields). */
export const normalizeTermsMax = 4096;
/** Bounds the alternatives kept in one clause after intersecting disjunctions on one field. */
export const clauseAltsMax = 4096;

/** An expected failure to normalize: the flow is skipped with this message, never half-compiled. */
export class NormalizeError extends Error {
  constructor(readonly kind: 'tooComplex' | 'unsupported', message: string) {
    super(message);
  }
}

export interface NormalizeContext {
  readonly symtab: Symtab;
  /** Decides is_chassis_resident("port"); absent means "not resident". */
  readonly isChassisResident?: ((port: string) => boolean) | undefined;
}

/** Rebuilds an AND/OR with constant operands folded away and same-kind operands flattened. */
function fixAndOr(kind: 'and' | 'or', subs: readonly Expr[]): Expr {
  const absorbing = kind === 'or';
  const kept: Expr[] = [];
  for (const s of subs) {
    if (s.kind === 'bool') {
      if (s.value === absorbing) return s;
      continue;
    }
    kept.push(s);
  }
  return combineAll(kind, kept) ?? (absorbing ? FALSE : TRUE);
}

/** fixAndOr over subs mapped by 'f', or 'e' itself when 'f' changed no operand and none is a
 *  constant (fixAndOr would then rebuild an equal node; keeping 'e' keeps shared nodes shared). */
function mapAndOr(e: AndOr, f: (s: Expr) => Expr): Expr {
  let subs: Expr[] | null = null;
  for (let i = 0; i < e.subs.length; i++) {
    const s = e.subs[i] as Expr;
    const t = f(s);
    if (subs === null && (t !== s || t.kind === 'bool' || t.kind === e.kind)) subs = e.subs.slice(0, i);
    if (subs !== null) subs.push(t);
  }
  if (subs === null) return e.subs.length >= 2 ? e : fixAndOr(e.kind, e.subs);
  return fixAndOr(e.kind, subs);
}

export function evaluateConditions(e: Expr, isResident: (port: string) => boolean): Expr {
  switch (e.kind) {
    case 'chassisResident':
      return isResident(e.port) !== e.negated ? TRUE : FALSE;
    case 'and':
    case 'or':
      return mapAndOr(e, (s) => evaluateConditions(s, isResident));
    default:
      return e;
  }
}

function widthOf(symtab: Symtab, name: string): number {
  const w = symtab.get(name)?.width;
  assert(w !== undefined && w > 0, `${name} is not an integer field`);
  return w;
}

function simplifyNe(e: Cmp, width: number): Expr {
  let out: Expr | null = null;
  for (let i = 0; i < width; i++) {
    const bit = 1n << BigInt(i);
    if ((e.mask & bit) === 0n) continue;
    const one: Cmp = { kind: 'cmp', symbol: e.symbol, relop: '==', value: (e.value & bit) ^ bit, mask: bit };
    out = combine('or', out, one);
  }
  return out ?? FALSE;
}

/** OVN's expr_simplify_relational: "f >= 1234" becomes "f == 1234 || f > 1234" spelled as
 *  masked equalities, one per bit position where the bound can be exceeded. */
function simplifyRelational(e: Cmp, width: number): Expr {
  const range = bitRange(e.mask);
  assert(range !== null, 'relational comparison with a non-contiguous mask');
  const [start, n] = range;
  const end = start + n;
  const lt = e.relop === '<' || e.relop === '<=';
  const eq = e.relop === '<=' || e.relop === '>=';
  const bitAt = (i: number): boolean => ((e.value >> BigInt(i)) & 1n) === 1n;
  let saturated = true;
  for (let i = start; i < end; i++) {
    if (bitAt(i) === !lt) {
      saturated = false;
      break;
    }
  }
  if (saturated) return eq ? TRUE : simplifyNe(e, width);
  let out: Expr | null = eq ? { ...e, relop: '==' } : null;
  for (let z = start; z < end; z++) {
    if (bitAt(z) !== lt) continue;
    const low = widthMask(z - start) << BigInt(start);
    const one: Cmp = {
      kind: 'cmp', symbol: e.symbol, relop: '==',
      value: (e.value ^ (1n << BigInt(z))) & ~low,
      mask: e.mask & ~low,
    };
    out = combine('or', out, one);
  }
  return out ?? FALSE;
}

/** simplify() of shared nodes, by symbol table (simplify reads the widths from it). */
const simplified = new WeakMap<Symtab, WeakMap<Expr, Expr>>();

function memoOf<T>(memos: WeakMap<Symtab, WeakMap<Expr, T>>, symtab: Symtab): WeakMap<Expr, T> {
  let m = memos.get(symtab);
  if (m === undefined) memos.set(symtab, (m = new WeakMap()));
  return m;
}

/** Turns every integer comparison into masked equalities, as OVN's expr_simplify. */
export function simplify(e: Expr, symtab: Symtab): Expr {
  switch (e.kind) {
    case 'cmp': {
      const width = widthOf(symtab, e.symbol);
      if (e.relop === '==') return e.mask === 0n ? TRUE : e;
      if (e.relop === '!=') return simplifyNe(e, width);
      return simplifyRelational(e, width);
    }
    case 'and':
    case 'or': {
      if (!isShared(e)) return mapAndOr(e, (s) => simplify(s, symtab));
      const memo = memoOf(simplified, symtab);
      let out = memo.get(e);
      if (out === undefined) {
        out = mapAndOr(e, (s) => simplify(s, symtab));
        markShared(out);
        memo.set(e, out);
      }
      return out;
    }
    default:
      return e;
  }
}

function leafOf(e: Expr): Leaf | null {
  if (e.kind === 'cmp') {
    assert(e.relop === '==', 'unsimplified comparison');
    return { kind: 'int', field: e.symbol, value: e.value, mask: e.mask };
  }
  if (e.kind === 'strcmp') {
    if (e.relop !== '==') throw new NormalizeError('unsupported', `Port field ${e.symbol} may only be tested for equality.`);
    return { kind: 'port', field: e.symbol, port: e.value };
  }
  return null;
}

function leafKey(l: Leaf): string {
  return l.kind === 'int' ? `${l.value.toString(16)}/${l.mask.toString(16)}` : `"${l.port}"`;
}

/** The tests both 'a' and 'b' pass, or null if none. */
/** Whether no packet passes both tests (intersectLeaves would return null). */
function leavesConflict(a: Leaf, b: Leaf): boolean {
  if (a.kind === 'port' || b.kind === 'port') return !(a.kind === 'port' && b.kind === 'port' && a.port === b.port);
  return ((a.value ^ b.value) & a.mask & b.mask) !== 0n;
}

function intersectLeaves(a: Leaf, b: Leaf): Leaf | null {
  if (a.kind === 'port' || b.kind === 'port') {
    return a.kind === 'port' && b.kind === 'port' && a.port === b.port ? a : null;
  }
  const common = a.mask & b.mask;
  if (((a.value ^ b.value) & common) !== 0n) return null;
  return { kind: 'int', field: a.field, value: a.value | b.value, mask: a.mask | b.mask };
}

function dedupe(alts: readonly Leaf[]): Leaf[] {
  if (alts.length <= 1) return [...alts];
  // Port names key themselves (no string to build); integer tests key by value/mask.
  const seenPorts = new Set<string>();
  const seen = new Set<string>();
  const out: Leaf[] = [];
  for (const l of alts) {
    const set = l.kind === 'port' ? seenPorts : seen;
    const k = l.kind === 'port' ? l.port : leafKey(l);
    if (!set.has(k)) {
      set.add(k);
      out.push(l);
    }
  }
  return out;
}

function intersectClauses(a: Clause, b: Clause): Clause | null {
  const x0 = a.alts[0];
  const y0 = b.alts[0];
  if (a.alts.length === 1 && b.alts.length === 1 && x0 !== undefined && y0 !== undefined) {
    // One test each (the common case): at most one result, nothing to dedupe.
    const z = intersectLeaves(x0, y0);
    return z === null ? null : { field: a.field, alts: [z] };
  }
  const alts: Leaf[] = [];
  for (const x of a.alts) {
    for (const y of b.alts) {
      const z = intersectLeaves(x, y);
      if (z !== null) alts.push(z);
    }
  }
  const unique = dedupe(alts);
  if (unique.length > clauseAltsMax) {
    throw new NormalizeError('tooComplex', `Expression too complex: a disjunction on ${a.field} exceeds ${clauseAltsMax} `
      + 'alternatives (clauseAltsMax).');
  }
  return unique.length === 0 ? null : { field: a.field, alts: unique };
}

/** Whether two sorted clause lists test one field with single tests that cannot both hold:
 *  the usual way a product term dies, found without building anything. */
function singleTestsConflict(ac: readonly Clause[], bc: readonly Clause[]): boolean {
  let i = 0;
  let j = 0;
  while (i < ac.length && j < bc.length) {
    const x = ac[i] as Clause;
    const y = bc[j] as Clause;
    if (x.field < y.field) {
      i++;
    } else if (y.field < x.field) {
      j++;
    } else {
      const p = x.alts[0];
      const q = y.alts[0];
      if (x.alts.length === 1 && y.alts.length === 1 && p !== undefined && q !== undefined && leavesConflict(p, q)) return true;
      i++;
      j++;
    }
  }
  return false;
}

/** andTerms(a, { clauses: [c] }) without building that term: 'c' goes into its place among
 *  a's sorted clauses, or is intersected with a's clause on the same field. */
function andClause(a: Term, c: Clause): Term | null {
  const ac = a.clauses;
  let i = 0;
  while (i < ac.length && (ac[i] as Clause).field < c.field) i++;
  const x = ac[i];
  if (x !== undefined && x.field === c.field) {
    const merged = intersectClauses(x, c);
    if (merged === null) return null;
    const clauses = ac.slice();
    clauses[i] = merged;
    return { clauses };
  }
  const clauses = ac.slice(0, i);
  clauses.push(c);
  for (let j = i; j < ac.length; j++) clauses.push(ac[j] as Clause);
  return { clauses };
}

/** The AND of two terms, or null if it can never match: a merge of the two sorted clause lists,
 *  intersecting the clauses on a field both test. */
function andTerms(a: Term, b: Term): Term | null {
  const ac = a.clauses;
  const bc = b.clauses;
  if (bc.length === 0) return a;
  if (ac.length === 0) return b;
  if (singleTestsConflict(ac, bc)) return null;
  const clauses: Clause[] = [];
  let i = 0;
  let j = 0;
  for (;;) {
    const x = ac[i];
    const y = bc[j];
    if (x === undefined) {
      if (y === undefined) break;
      clauses.push(y);
      j++;
    } else if (y === undefined || x.field < y.field) {
      clauses.push(x);
      i++;
    } else if (y.field < x.field) {
      clauses.push(y);
      j++;
    } else {
      const merged = intersectClauses(x, y);
      if (merged === null) return null;
      clauses.push(merged);
      i++;
      j++;
    }
  }
  return { clauses };
}

/** Normal forms of shared nodes, by symbol table (must_crossproduct comes from it). Only
 *  successful results are kept; a NormalizeError is raised again the same way each time. */
const normalForms = new WeakMap<Symtab, WeakMap<Expr, readonly Term[]>>();

class Normalizer {
  private readonly memo: WeakMap<Expr, readonly Term[]>;

  constructor(private readonly symtab: Symtab) {
    this.memo = memoOf(normalForms, symtab);
  }

  private checkTerms(n: number): void {
    if (n > normalizeTermsMax) {
      throw new NormalizeError('tooComplex', `Expression too complex: its disjunctive normal form exceeds ${normalizeTermsMax} `
        + 'terms (normalizeTermsMax).');
    }
  }

  private mustCrossproduct(field: string): boolean {
    const s = this.symtab.get(field);
    return s !== undefined && s.kind === 'field' && s.mustCrossproduct;
  }

  /** A disjunction of tests all on one field, which can stay a single clause. */
  private singleFieldOr(e: AndOr): Clause | null {
    const leaves: Leaf[] = [];
    for (const s of e.subs) {
      const l = leafOf(s);
      if (l === null || (leaves[0] !== undefined && leaves[0].field !== l.field)) return null;
      leaves.push(l);
    }
    const first = leaves[0];
    if (first === undefined || this.mustCrossproduct(first.field)) return null;
    return { field: first.field, alts: dedupe(leaves) };
  }

  /** Terms that each test only one field, the same one, fold back into a single clause (as
   *  OVN's crush_or does), so `f == 1 || (f >= 2 && f <= 3)` stays one disjunction. */
  private crushOr(terms: readonly Term[]): readonly Term[] {
    const field = terms[0]?.clauses[0]?.field;
    if (field === undefined || this.mustCrossproduct(field)) return terms;
    const alts: Leaf[] = [];
    for (const t of terms) {
      const only = t.clauses[0];
      if (t.clauses.length !== 1 || only === undefined || only.field !== field) return terms;
      alts.push(...only.alts);
    }
    const unique = dedupe(alts);
    if (unique.length > clauseAltsMax) {
      throw new NormalizeError('tooComplex', `Expression too complex: a disjunction on ${field} exceeds `
        + `${clauseAltsMax} alternatives (clauseAltsMax).`);
    }
    return [{ clauses: [{ field, alts: unique }] }];
  }

  dnf(e: Expr): readonly Term[] {
    if (!isShared(e)) return this.dnfOf(e);
    let out = this.memo.get(e);
    if (out === undefined) {
      out = this.dnfOf(e);
      this.memo.set(e, out);
    }
    return out;
  }

  private dnfOf(e: Expr): readonly Term[] {
    switch (e.kind) {
      case 'bool':
        return e.value ? [{ clauses: [] }] : [];
      case 'cmp':
      case 'strcmp': {
        const l = leafOf(e);
        assert(l !== null);
        return [{ clauses: [{ field: l.field, alts: [l] }] }];
      }
      case 'chassisResident':
        return assert.fail('conditions are evaluated before normalization');
      case 'or': {
        const clause = this.singleFieldOr(e);
        if (clause !== null) return [{ clauses: [clause] }];
        const out: Term[] = [];
        for (const s of e.subs) {
          out.push(...this.dnf(s));
          this.checkTerms(out.length);
        }
        return this.crushOr(out);
      }
      case 'and': {
        let product: readonly Term[] = [{ clauses: [] }];
        for (const s of e.subs) {
          if (s.kind === 'cmp' || s.kind === 'strcmp') {
            // A single test (most operands): ANDed into each term directly, which is what the
            // product with its one-term, one-clause normal form would do.
            const l = leafOf(s);
            assert(l !== null);
            const clause: Clause = { field: l.field, alts: [l] };
            const next: Term[] = [];
            for (const a of product) {
              const t = andClause(a, clause);
              if (t !== null) next.push(t);
            }
            product = next;
            if (product.length === 0) break;
            continue;
          }
          const right = this.dnf(s);
          const next: Term[] = [];
          for (const a of product) {
            for (const b of right) {
              const t = andTerms(a, b);
              if (t !== null) {
                next.push(t);
                this.checkTerms(next.length);
              }
            }
          }
          product = next;
          if (product.length === 0) break;
        }
        return product;
      }
    }
  }
}

/** Decides conditions, simplifies, and normalizes an annotated expression. Throws
 *  NormalizeError (an expected outcome) when the expansion passes its bounds. */
export function normalize(annotated: Expr, ctx: NormalizeContext): Dnf {
  const isResident = ctx.isChassisResident ?? ((): boolean => false);
  const simplified = simplify(evaluateConditions(annotated, isResident), ctx.symtab);
  return new Normalizer(ctx.symtab).dnf(simplified);
}
