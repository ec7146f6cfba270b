// Sub-expressions that recur in every flow: the annotated expansions of the symbol table's
// prerequisites and predicates (`ip4`, `!ip.later_frag`, ...), which annotate.ts computes once
// per symbol table and hands out as the same immutable objects. Marking them lets the later
// stages compute their normal forms once too (memoized by identity), where a flow's own
// comparisons are new objects every time and are not worth a memo lookup.

import type { Expr } from './ast.js';

const sharedNodes = new WeakSet<Expr>();

/** Marks 'e' and every AND/OR node under it as shared. Expressions are immutable, so a memo
 *  keyed by one of these nodes can never go stale; it goes away with the node. */
export function markShared(e: Expr): void {
  if (e.kind !== 'and' && e.kind !== 'or') return;
  if (sharedNodes.has(e)) return;
  sharedNodes.add(e);
  for (const s of e.subs) markShared(s);
}

/** Whether 'e' is an AND/OR node marked shared (leaves are cheap to recompute). */
export function isShared(e: Expr): boolean {
  return sharedNodes.has(e);
}
