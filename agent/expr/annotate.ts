// Annotation, after OVN's expr_annotate: every comparison gains its symbol's prerequisites
// (ANDed after it), subfields become masks over their parent field, and predicates are replaced
// by their (recursively annotated) expansions. When every leaf of an AND/OR names one symbol the
// prerequisites are added once, at that level, as OVN does. Pure.

import { combine, combineAll, negate, type Cmp, type Expr } from './ast.js';
import { parseExpr } from './parser.js';
import { isShared, markShared } from './shared.js';
import type { ExprSymbol, Symtab } from './symbols.js';

export type AnnotateResult = { readonly expr: Expr } | { readonly error: string };

class AnnotateError extends Error {}

/** Bounds the recursion through prerequisites and predicates; the table nests about six deep. */
export const annotateDepthMax = 32;

function uniqueSymbol(e: Expr): string | null {
  switch (e.kind) {
    case 'cmp':
    case 'strcmp':
      return e.symbol;
    case 'and':
    case 'or': {
      let prev: string | null = null;
      for (const s of e.subs) {
        const sym = uniqueSymbol(s);
        if (sym === null || (prev !== null && sym !== prev)) return null;
        prev = sym;
      }
      return prev;
    }
    default:
      return null;
  }
}

/**
 * A prerequisite or predicate text, annotated: the same for every flow (it is a function of the
 * symbol table and the text alone), except that the recursion and depth checks also look at the
 * symbols being expanded around it. So the expansion keeps what it visited: every symbol it
 * expanded and how many levels deeper than its own it went.
 */
interface Expansion {
  readonly expr: Expr;
  readonly symbols: ReadonlySet<string>;
  readonly depth: number;
}

/** Bounds one symbol table's cache; the built-in table has about 60 prerequisite texts. */
export const expansionsMax = 4096;

/**
 * Expansions by symbol table, then by text. A symbol table is immutable once built (Symtab is a
 * ReadonlyMap), so an entry never goes stale; the cache goes away with its table. Only
 * successful expansions are kept: an error is recomputed, so its message is always exact.
 */
const expansionCache = new WeakMap<Symtab, Map<string, Expansion>>();

/** The negations of shared expansions (`!ip.later_frag`), themselves shared. */
const negations = new WeakMap<Expr, Expr>();

class Annotator {
  private readonly expansions: Map<string, Expansion>;
  /** While an expansion is computed: the symbols it visits and the deepest nesting it reaches. */
  private visited: Set<string> | null = null;
  private deepest = 0;

  constructor(private readonly symtab: Symtab) {
    let m = expansionCache.get(symtab);
    if (m === undefined) expansionCache.set(symtab, (m = new Map()));
    this.expansions = m;
  }

  private symbol(name: string): ExprSymbol {
    const s = this.symtab.get(name);
    if (s === undefined) throw new AnnotateError(`Unknown symbol \`${name}'.`);
    return s;
  }

  /** Parses and annotates a prerequisite or predicate expansion from the symbol table. */
  private parseNested(text: string, nesting: readonly string[]): Expr {
    const hit = this.expansions.get(text);
    if (hit !== undefined && nesting.length + hit.depth < annotateDepthMax && !nesting.some((n) => hit.symbols.has(n))) {
      this.noteVisit(hit, nesting.length);
      return hit.expr;
    }
    const outer = this.visited;
    const outerDeepest = this.deepest;
    this.visited = new Set();
    this.deepest = nesting.length;
    try {
      const expr = this.parseNestedUncached(text, nesting);
      const e: Expansion = { expr, symbols: this.visited, depth: this.deepest - nesting.length };
      if (this.expansions.size < expansionsMax) {
        this.expansions.set(text, e);
        markShared(expr);
      }
      if (outer !== null) {
        for (const s of e.symbols) outer.add(s);
      }
      this.deepest = Math.max(outerDeepest, this.deepest);
      return expr;
    } finally {
      this.visited = outer;
    }
  }

  private noteVisit(e: Expansion, base: number): void {
    if (this.visited === null) return;
    for (const s of e.symbols) this.visited.add(s);
    this.deepest = Math.max(this.deepest, base + e.depth);
  }

  private parseNestedUncached(text: string, nesting: readonly string[]): Expr {
    const parsed = parseExpr(text, this.symtab);
    try {
      if ('error' in parsed) throw new AnnotateError(parsed.error.message);
      return this.annotate(parsed.expr, true, nesting);
    } catch (e) {
      if (!(e instanceof AnnotateError)) throw e;
      throw new AnnotateError(`Error parsing expression \`${text}' encountered as prerequisite or predicate `
        + `of initial expression: ${e.message}`);
    }
  }

  /** The negation of a predicate's expansion; for a shared (cached) expansion, computed once. */
  private negation(e: Expr): Expr {
    if (!isShared(e)) return negate(e);
    let n = negations.get(e);
    if (n === undefined) {
      n = negate(e);
      markShared(n);
      negations.set(e, n);
    }
    return n;
  }

  private withPrereqs(e: Expr, sym: ExprSymbol, nesting: readonly string[]): Expr {
    return sym.prereqs === null ? e : combine('and', e, this.parseNested(sym.prereqs, nesting));
  }

  private annotateLeaf(e: Cmp | Expr & { kind: 'strcmp' }, appendPrereqs: boolean, nesting: readonly string[]): Expr {
    const sym = this.symbol(e.symbol);
    if (nesting.includes(sym.name)) throw new AnnotateError(`Recursive expansion of symbol \`${sym.name}'.`);
    if (nesting.length >= annotateDepthMax) throw new AnnotateError('Symbol expansion nested too deeply.');
    if (this.visited !== null) {
      this.visited.add(sym.name);
      if (nesting.length > this.deepest) this.deepest = nesting.length;
    }
    const expands = sym.kind === 'predicate' || (sym.kind === 'subfield' && e.kind === 'cmp');
    const wantPrereqs = appendPrereqs && sym.prereqs !== null;
    if (!expands && !wantPrereqs) return e;
    const inner = [...nesting, sym.name];
    const prereqs = wantPrereqs && sym.prereqs !== null ? this.parseNested(sym.prereqs, inner) : null;
    let out: Expr = e;
    if (sym.kind === 'subfield' && e.kind === 'cmp') {
      const ofs = BigInt(sym.parentOfs);
      const shifted: Cmp = { ...e, symbol: sym.parent, value: e.value << ofs, mask: e.mask << ofs };
      // A parent that is itself a subfield (or has prerequisites) is annotated in turn.
      const parent = this.symbol(sym.parent);
      out = parent.kind === 'field' && parent.prereqs === null ? shifted : this.annotateLeaf(shifted, appendPrereqs, inner);
    } else if (sym.kind === 'predicate' && e.kind === 'cmp') {
      const expansion = this.parseNested(sym.expansion, inner);
      const positive = ((e.value & 1n) === 1n) !== (e.relop === '!=');
      out = positive ? expansion : this.negation(expansion);
    }
    return prereqs === null ? out : combine('and', out, prereqs);
  }

  annotate(e: Expr, appendPrereqs: boolean, nesting: readonly string[]): Expr {
    switch (e.kind) {
      case 'cmp':
      case 'strcmp':
        return this.annotateLeaf(e, appendPrereqs, nesting);
      case 'and':
      case 'or': {
        let subsAppend = appendPrereqs;
        let tail: ExprSymbol | null = null;
        if (appendPrereqs) {
          const u = uniqueSymbol(e);
          if (u !== null) {
            subsAppend = false;
            tail = this.symbol(u);
          }
        }
        const base = combineAll(e.kind, e.subs.map((s) => this.annotate(s, subsAppend, nesting))) ?? e;
        // OVN appends the shared prerequisites before annotating the subexpressions, which
        // combines them into the same AND when 'e' is itself an AND; keep that shape.
        return tail === null ? base : this.withPrereqs(base, tail, [...nesting, tail.name]);
      }
      case 'bool':
      case 'chassisResident':
        return e;
    }
  }
}

/** Adds prerequisites and expands subfields and predicates. Never throws for bad input. */
export function annotateExpr(e: Expr, symtab: Symtab): AnnotateResult {
  try {
    return { expr: new Annotator(symtab).annotate(e, true, []) };
  } catch (err) {
    if (err instanceof AnnotateError) return { error: err.message };
    throw err;
  }
}
