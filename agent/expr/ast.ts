// The expression tree shared by the parser, the annotator and the normalizer, with OVN's
// printed form (lib/expr.c expr_format), so golden tables can be read against OVN's own tests.
// Values are immutable; every transformation builds new nodes.

import type { Symtab } from './symbols.js';

export type Relop = '==' | '!=' | '<' | '<=' | '>' | '>=';

/** A comparison on an integer symbol. 'value' and 'mask' span the whole symbol (a subfield
 *  reference `f[4..7]` is a mask over bits 4..7 of f), and value has no 1-bit outside mask. */
export interface Cmp {
  readonly kind: 'cmp';
  readonly symbol: string;
  readonly relop: Relop;
  readonly value: bigint;
  readonly mask: bigint;
}

/** A comparison on a string symbol (a logical port name). */
export interface StrCmp {
  readonly kind: 'strcmp';
  readonly symbol: string;
  readonly relop: '==' | '!=';
  readonly value: string;
}

export interface AndOr {
  readonly kind: 'and' | 'or';
  readonly subs: readonly Expr[];
}

export interface Bool {
  readonly kind: 'bool';
  readonly value: boolean;
}

/** is_chassis_resident("port"), decided by the caller's callback at normalization. */
export interface ChassisResident {
  readonly kind: 'chassisResident';
  readonly port: string;
  readonly negated: boolean;
}

export type Expr = Cmp | StrCmp | AndOr | Bool | ChassisResident;

export const TRUE: Bool = { kind: 'bool', value: true };
export const FALSE: Bool = { kind: 'bool', value: false };

export function bool(value: boolean): Bool {
  return value ? TRUE : FALSE;
}

/** Combines 'a' and 'b' with AND or OR, flattening same-kind operands as OVN's expr_combine. */
export function combine(kind: 'and' | 'or', a: Expr | null, b: Expr): Expr {
  if (a === null) return b;
  if (a.kind === kind) {
    return { kind, subs: b.kind === kind ? [...a.subs, ...b.subs] : [...a.subs, b] };
  }
  if (b.kind === kind) return { kind, subs: [a, ...b.subs] };
  return { kind, subs: [a, b] };
}

/** combine() folded over 'exprs' in one pass (linear, where a loop of combine() is quadratic).
 *  Returns null for an empty list and the operand itself for a list of one. */
export function combineAll(kind: 'and' | 'or', exprs: readonly Expr[]): Expr | null {
  if (exprs.length <= 1) return exprs[0] ?? null;
  const subs: Expr[] = [];
  for (const e of exprs) {
    if (e.kind === kind) subs.push(...e.subs);
    else subs.push(e);
  }
  return { kind, subs };
}

export function invertRelop(r: Relop): Relop {
  switch (r) {
    case '==': return '!=';
    case '!=': return '==';
    case '<': return '>=';
    case '<=': return '>';
    case '>': return '<=';
    case '>=': return '<';
  }
}

/** The relop that keeps meaning when the operands swap sides ("4 < f" is "f > 4"). */
export function turnRelop(r: Relop): Relop {
  switch (r) {
    case '<': return '>';
    case '<=': return '>=';
    case '>': return '<';
    case '>=': return '<=';
    default: return r;
  }
}

/** Logical negation pushed down to the leaves (De Morgan), as OVN's expr_not. */
export function negate(e: Expr): Expr {
  switch (e.kind) {
    case 'cmp': return { ...e, relop: invertRelop(e.relop) };
    case 'strcmp': return { ...e, relop: e.relop === '==' ? '!=' : '==' };
    case 'and': return { kind: 'or', subs: e.subs.map(negate) };
    case 'or': return { kind: 'and', subs: e.subs.map(negate) };
    case 'bool': return bool(!e.value);
    case 'chassisResident': return { ...e, negated: !e.negated };
  }
}

export function widthMask(width: number): bigint {
  return (1n << BigInt(width)) - 1n;
}

/** The single run of 1-bits in 'mask' as [start, length], or null if there is none or several. */
export function bitRange(mask: bigint): [number, number] | null {
  if (mask <= 0n) return null;
  let start = 0;
  while (((mask >> BigInt(start)) & 1n) === 0n) start++;
  const shifted = mask >> BigInt(start);
  if ((shifted & (shifted + 1n)) !== 0n) return null;
  return [start, shifted.toString(2).length];
}

function hex(v: bigint): string {
  return v === 0n ? '0' : `0x${v.toString(16)}`;
}

function quote(s: string): string {
  return JSON.stringify(s);
}

function formatCmp(e: Cmp, symtab: Symtab): string {
  const width = symtab.get(e.symbol)?.width ?? 0;
  const range = bitRange(e.mask);
  if (range !== null && range[1] === 1 && (e.relop === '==' || e.relop === '!=')) {
    const [ofs] = range;
    const bit = ((e.value >> BigInt(ofs)) & 1n) === 1n;
    const positive = bit !== (e.relop === '!=');
    return `${positive ? '' : '!'}${e.symbol}${width > 1 ? `[${ofs}]` : ''}`;
  }
  let s = e.symbol;
  if (range !== null && range[1] < width) {
    const [ofs, n] = range;
    s += n > 1 ? `[${ofs}..${ofs + n - 1}]` : `[${ofs}]`;
  }
  s += ` ${e.relop} `;
  s += range !== null ? hex(e.value >> BigInt(range[0])) : `${hex(e.value)}/${hex(e.mask)}`;
  return s;
}

/** OVN's printed form; parseable back into an equivalent expression. */
export function formatExpr(e: Expr, symtab: Symtab): string {
  switch (e.kind) {
    case 'cmp': return formatCmp(e, symtab);
    case 'strcmp': return `${e.symbol} ${e.relop} ${quote(e.value)}`;
    case 'bool': return e.value ? '1' : '0';
    case 'chassisResident': return `${e.negated ? '!' : ''}is_chassis_resident(${quote(e.port)})`;
    case 'and':
    case 'or':
      return e.subs
        .map((s) => (s.kind === 'and' || s.kind === 'or' ? `(${formatExpr(s, symtab)})` : formatExpr(s, symtab)))
        .join(e.kind === 'and' ? ' && ' : ' || ');
  }
}
