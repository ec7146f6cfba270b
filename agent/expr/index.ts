// The match half of the logical-flow compiler: one logical flow's match string in, OpenFlow
// match specs out. Each export is chosen; callers should not need the stages' internals.
// compileMatch never throws for bad input: a flow it cannot handle gets a clear error string.

import { annotateExpr } from './annotate.js';
import { NormalizeError, normalize } from './normalize.js';
import { parseExpr, type ParseLookups } from './parser.js';
import type { Symtab } from './symbols.js';
import { toMatches, type FlowMatch, type ToMatchesContext } from './to-matches.js';

export { buildSymtab, type Symtab, type ExprSymbol } from './symbols.js';
export { formatMatch, formatMatches, type FlowMatch, type MaskedValue, type ConjunctionRef } from './to-matches.js';
export { normalizeTermsMax, clauseAltsMax } from './normalize.js';

export interface CompileContext extends ParseLookups {
  /** The logical field table, from buildSymtab(); built once by the caller and shared. */
  readonly symtab: Symtab;
  /** Logical port name → tunnel key (for inport/outport); unknown ports never match. */
  readonly lookupPort?: ((name: string) => number | undefined) | undefined;
  /** Decides is_chassis_resident("port") for this chassis; absent means "not resident". */
  readonly isChassisResident?: ((port: string) => boolean) | undefined;
  /** Leaves out finished matches the caller does not want (see ToMatchesContext.keepMatch). */
  readonly keepMatch?: ToMatchesContext['keepMatch'] | undefined;
}

export type CompileResult =
  | { readonly matches: FlowMatch[]; readonly conjunctionsN: number }
  | { readonly error: string };

/** Compiles one match expression. An empty list of matches means the flow can never match. */
export function compileMatch(text: string, ctx: CompileContext): CompileResult {
  const parsed = parseExpr(text, ctx.symtab, ctx);
  if ('error' in parsed) {
    return { error: `${parsed.error.message} (at offset ${parsed.error.offset})` };
  }
  const annotated = annotateExpr(parsed.expr, ctx.symtab);
  if ('error' in annotated) return { error: annotated.error };
  try {
    const dnf = normalize(annotated.expr, ctx);
    const set = toMatches(dnf, ctx);
    return { matches: [...set.matches], conjunctionsN: set.conjunctionsN };
  } catch (e) {
    if (e instanceof NormalizeError) return { error: e.message };
    throw e;
  }
}
