// OVN's match language → an expression tree, after lib/expr.c (expr_parse): comparisons with
// masks, CIDR prefixes and bit ranges, value sets, $address_set and @port_group references
// (resolved through lookups the caller passes in), `!`, `&&`, `||` (which must be parenthesized
// when mixed), range forms `1 < f < 4`, and is_chassis_resident("port"). Negation is pushed to
// the leaves while parsing, so the tree has no NOT node. Pure; bad input is an error value.

import { bool, combine, combineAll, FALSE, negate, turnRelop, widthMask, type Expr, type Relop } from './ast.js';
import { lex, type IntFormat, type Token } from './lexer.js';
import type { ExprSymbol, Symtab } from './symbols.js';

export interface ParseLookups {
  /** The addresses of an address set, each as OVN stores it ("10.0.0.0/8", "00:00:00:00:00:01");
   *  undefined if there is no such set. */
  readonly addressSet?: ((name: string) => readonly string[] | undefined) | undefined;
  /** The port names of a port group; undefined if there is no such group. */
  readonly portGroup?: ((name: string) => readonly string[] | undefined) | undefined;
}

export interface ParseError {
  readonly message: string;
  readonly offset: number;
}

export type ParseResult = { readonly expr: Expr } | { readonly error: ParseError };

/** OVN's MAX_PAREN_DEPTH. */
export const parenDepthMax = 100;

interface Constant {
  readonly value: bigint | string;
  readonly mask: bigint | null;
  readonly format: IntFormat | 'string';
}

interface ConstantSet {
  readonly type: 'integer' | 'string' | null;
  readonly values: Constant[];
  readonly inCurlies: boolean;
}

interface FieldRef {
  /** Where the field's name starts, for errors about the comparison as a whole. */
  readonly offset: number;
  readonly symbol: ExprSymbol;
  readonly ofs: number;
  readonly nBits: number;
}

class Fail extends Error {
  constructor(readonly parseError: ParseError) {
    super(parseError.message);
  }
}

function tokenLabel(t: Token): string {
  return t.kind === 'end' ? 'end of input' : `\`${t.text}'`;
}

function bitWidth(v: bigint): number {
  return v === 0n ? 0 : v.toString(2).length;
}

class Parser {
  private pos = 0;
  private not = false;
  private parenDepth = 0;

  constructor(
    private readonly tokens: readonly Token[],
    private readonly symtab: Symtab,
    private readonly lookups: ParseLookups,
  ) {}

  private get tok(): Token {
    return this.tokens[Math.min(this.pos, this.tokens.length - 1)] as Token;
  }

  private peek(n: number): Token {
    return this.tokens[Math.min(this.pos + n, this.tokens.length - 1)] as Token;
  }

  private advance(): void {
    if (this.pos < this.tokens.length - 1) this.pos++;
  }

  private isPunct(op: string, t: Token = this.tok): boolean {
    return t.kind === 'punct' && t.op === op;
  }

  private match(op: string): boolean {
    if (this.isPunct(op)) {
      this.advance();
      return true;
    }
    return false;
  }

  private error(message: string, offset: number = this.tok.offset): never {
    throw new Fail({ message, offset });
  }

  private syntaxError(expecting: string): never {
    this.error(`Syntax error at ${tokenLabel(this.tok)} expecting ${expecting}.`);
  }

  private forceMatch(op: string): void {
    if (!this.match(op)) this.syntaxError(`\`${op}'`);
  }

  private relop(t: Token = this.tok): Relop | null {
    if (t.kind !== 'punct') return null;
    switch (t.op) {
      case '==': case '!=': case '<': case '<=': case '>': case '>=': return t.op;
      default: return null;
    }
  }

  parseWhole(): Expr {
    const e = this.parseOr();
    if (this.tok.kind !== 'end') this.syntaxError('end of input');
    return e;
  }

  /** expr := not (('&&' not)* | ('||' not)*), mixing requires parentheses. */
  private parseOr(): Expr {
    let e = this.parseNot();
    if (this.isPunct('&&') || this.isPunct('||')) {
      const op = (this.tok as { op: '&&' | '||' }).op;
      const kind = op === '&&' ? 'and' : 'or';
      this.advance();
      const operands = [e];
      do {
        operands.push(this.parseNot());
      } while (this.match(op));
      e = combineAll(kind, operands) ?? e;
      if (this.isPunct('&&') || this.isPunct('||')) {
        this.error('&& and || must be parenthesized when used together.');
      }
    }
    return e;
  }

  private parseNot(): Expr {
    if (this.match('!')) {
      this.not = !this.not;
      const [e, atomic] = this.parsePrimary();
      this.not = !this.not;
      if (!atomic) this.error('Missing parentheses around operand of !.');
      return negate(e);
    }
    return this.parsePrimary()[0];
  }

  /** Returns the expression and whether it is "atomic" (may be the operand of `!`). */
  private parsePrimary(): [Expr, boolean] {
    if (this.match('(')) {
      if (this.parenDepth >= parenDepthMax) this.error('Parentheses nested too deeply.');
      this.parenDepth++;
      const e = this.parseOr();
      this.parenDepth--;
      this.forceMatch(')');
      return [e, true];
    }
    const t = this.tok;
    if (t.kind === 'id') {
      if (this.isPunct('(', this.peek(1))) {
        if (t.text !== 'is_chassis_resident') this.error(`Unknown function \`${t.text}'.`);
        this.advance();
        this.advance();
        const arg = this.tok;
        if (arg.kind !== 'string') this.syntaxError('string');
        this.advance();
        this.forceMatch(')');
        return [{ kind: 'chassisResident', port: arg.value, negated: false }, true];
      }
      const f = this.parseField();
      const r = this.relop();
      if (r === null) {
        if (f.nBits === 0 || this.isPunct('=')) this.syntaxError('relational operator');
        if (f.nBits > 1 && !this.not) {
          this.error('Explicit `!= 0\' is required for inequality test of multibit field against 0.');
        }
        const zero: ConstantSet = { type: 'integer', values: [{ value: 0n, mask: null, format: 'hex' }], inCurlies: false };
        return [this.makeCmp(f, '!=', zero), true];
      }
      this.advance();
      return [this.makeCmp(f, r, this.parseConstantSet()), false];
    }

    const c1 = this.parseConstantSet();
    const only = c1.values[0];
    if (this.relop() === null && c1.values.length === 1 && only !== undefined && only.format === 'decimal'
      && only.mask === null && !c1.inCurlies && typeof only.value === 'bigint' && only.value <= 1n) {
      return [bool(only.value === 1n), true];
    }
    const r1 = this.relop();
    if (r1 === null) this.syntaxError('relational operator');
    this.advance();
    const f = this.parseField();
    const r2 = this.relop();
    if (r2 === null) return [this.makeCmp(f, turnRelop(r1), c1), false];
    this.advance();
    const c2 = this.parseConstantSet();
    const lt = (r: Relop): boolean => r === '<' || r === '<=';
    const gt = (r: Relop): boolean => r === '>' || r === '>=';
    if (!((lt(r1) && lt(r2)) || (gt(r1) && gt(r2)))) {
      this.error('Range expressions must have the form `x < field < y\' or `x > field > y\', with '
        + 'each `<\' optionally replaced by `<=\' or `>\' by `>=\').');
    }
    const e1 = this.makeCmp(f, turnRelop(r1), c1);
    const e2 = this.makeCmp(f, r2, c2);
    return [combine('and', e1, e2), false];
  }

  private smallInt(): number {
    const t = this.tok;
    if (t.kind !== 'integer' || t.format !== 'decimal' || t.mask !== null || t.value > 0x7fffffffn) {
      this.syntaxError('small integer');
    }
    this.advance();
    return Number(t.value);
  }

  private parseField(): FieldRef {
    const t = this.tok;
    const symbol = t.kind === 'id' ? this.symtab.get(t.text) : undefined;
    if (symbol === undefined) this.syntaxError('field name');
    this.advance();
    if (!this.match('[')) return { offset: t.offset, symbol, ofs: 0, nBits: symbol.width };
    if (symbol.width === 0) this.error(`Cannot select subfield of string field ${symbol.name}.`);
    const low = this.smallInt();
    const high = this.match('..') ? this.smallInt() : low;
    this.forceMatch(']');
    if (low > high) this.error(`Invalid bit range ${low} to ${high}.`);
    if (high >= symbol.width) {
      this.error(`Cannot select bits ${low} to ${high} of ${symbol.width}-bit field ${symbol.name}.`);
    }
    if (symbol.level === 'nominal' && (low !== 0 || high !== symbol.width - 1)) {
      this.error(`Cannot select subfield of nominal field ${symbol.name}.`);
    }
    return { offset: t.offset, symbol, ofs: low, nBits: high - low + 1 };
  }

  private parseConstantSet(): ConstantSet {
    const set: { type: 'integer' | 'string' | null; values: Constant[]; inCurlies: boolean } = {
      type: null, values: [], inCurlies: false,
    };
    if (this.match('{')) {
      set.inCurlies = true;
      do {
        this.parseConstant(set);
        this.match(',');
      } while (!this.match('}'));
    } else {
      this.parseConstant(set);
    }
    return set;
  }

  private assignType(set: { type: 'integer' | 'string' | null; values: Constant[] }, type: 'integer' | 'string'): void {
    if (set.values.length > 0 && set.type !== type) this.syntaxError(set.type === 'integer' ? 'integer' : 'string');
    set.type = type;
  }

  private parseConstant(set: { type: 'integer' | 'string' | null; values: Constant[] }): void {
    const t = this.tok;
    if (t.kind === 'string') {
      this.assignType(set, 'string');
      set.values.push({ value: t.value, mask: null, format: 'string' });
    } else if (t.kind === 'integer') {
      this.assignType(set, 'integer');
      set.values.push({ value: t.value, mask: t.mask, format: t.format });
    } else if (t.kind === 'addressSet') {
      const members = this.lookups.addressSet?.(t.name);
      if (members === undefined) this.syntaxError('address set name');
      this.assignType(set, 'integer');
      for (const m of members) {
        const c = addressConstant(m);
        if (c !== undefined) set.values.push(c);
      }
    } else if (t.kind === 'template') {
      this.error('Unexpanded template.');
    } else if (t.kind === 'portGroup') {
      const members = this.lookups.portGroup?.(t.name);
      if (members === undefined) this.syntaxError('port group name');
      this.assignType(set, 'string');
      for (const m of members) set.values.push({ value: m, mask: null, format: 'string' });
    } else {
      this.syntaxError('constant');
    }
    this.advance();
  }

  private makeCmp(f: FieldRef, r: Relop, cs: ConstantSet): Expr {
    const { symbol } = f;
    if (cs.values.length > 0 && cs.type !== (symbol.width > 0 ? 'integer' : 'string')) {
      this.error(`${symbol.width > 0 ? 'Integer' : 'String'} field ${symbol.name} is not compatible with `
        + `${cs.type === 'integer' ? 'integer' : 'string'} constant.`, f.offset);
    }
    if (symbol.width > 0) {
      for (const c of cs.values) {
        const w = constantWidth(c);
        if (w > symbol.width) {
          this.error(`${w}-bit constant is not compatible with ${symbol.width}-bit field ${symbol.name}.`, f.offset);
        }
      }
    }
    if (r !== '==' && r !== '!=') {
      if (cs.inCurlies) this.error('Only == and != operators may be used with value sets.', f.offset);
      if (symbol.level === 'nominal' || symbol.level === 'boolean') {
        this.error(`Only == and != operators may be used with ${symbol.level === 'nominal' ? 'nominal' : 'Boolean'} `
          + `field ${symbol.name}.`, f.offset);
      }
      if (cs.values.length === 0) {
        this.error('Only == and != operators may be used to compare a field against an empty value set.', f.offset);
      }
      if (cs.values[0]?.mask !== null) {
        this.error('Only == and != operators may be used with masked constants.  Consider using subfields '
          + 'instead (e.g. eth.src[0..15] > 0x1111 in place of eth.src > 00:00:00:00:11:11/00:00:00:00:ff:ff).', f.offset);
      }
    }
    if (symbol.level === 'nominal') {
      if (symbol.kind === 'predicate') {
        for (const c of cs.values) {
          let positive = typeof c.value === 'bigint' && (c.value & 1n) === 1n;
          positive = positive !== (r === '!=');
          positive = positive !== this.not;
          if (!positive) {
            const n = symbol.name;
            this.error(`Nominal predicate ${n} may only be tested positively, e.g. \`${n}' or \`${n} == 1' `
              + `but not \`!${n}' or \`${n} == 0'.`, f.offset);
          }
        }
      } else if (r !== (this.not ? '!=' : '==')) {
        this.error(`Nominal field ${symbol.name} may only be tested for equality `
          + '(taking enclosing `!\' operators into account).', f.offset);
      }
    }
    if (cs.values.length === 0) return bool(r === '!=');
    return combineAll(r === '==' ? 'or' : 'and', cs.values.map((c) => cmpOf(f, r, c))) ?? FALSE;
  }
}

function constantWidth(c: Constant): number {
  if (c.mask !== null) return bitWidth(c.mask);
  switch (c.format) {
    case 'ipv4': return 32;
    case 'ipv6': return 128;
    case 'ethernet': return 48;
    default: return typeof c.value === 'bigint' ? bitWidth(c.value) : 0;
  }
}

/** One comparison; the constant's low nBits land at the field's offset (higher bits are dropped,
 *  as OVN's bitwise_copy does after a width check against the whole symbol). */
function cmpOf(f: FieldRef, r: Relop, c: Constant): Expr {
  if (typeof c.value === 'string') {
    return { kind: 'strcmp', symbol: f.symbol.name, relop: r === '!=' ? '!=' : '==', value: c.value };
  }
  const bits = widthMask(f.nBits);
  const ofs = BigInt(f.ofs);
  const mask = ((c.mask ?? bits) & bits) << ofs;
  return { kind: 'cmp', symbol: f.symbol.name, relop: r, value: ((c.value & bits) << ofs) & mask, mask };
}

/** Parses 'text' against 'symtab'. Never throws for bad input. */
export function parseExpr(text: string, symtab: Symtab, lookups: ParseLookups = {}): ParseResult {
  const lexed = lex(text);
  if ('error' in lexed) return { error: lexed.error };
  try {
    return { expr: new Parser(lexed.tokens, symtab, lookups).parseWhole() };
  } catch (e) {
    if (e instanceof Fail) return { error: e.parseError };
    throw e;
  }
}

/**
 * One member of an address set as ovn-controller reads it (expr_constant_set_create_integers):
 * the first token of its text, if that is an integer (an address, masked or not); any other
 * member, template text from a template load balancer's VIP for one, is skipped (ovn-controller
 * warns "Invalid constant set entry") and the set stands without it.
 */
function addressConstant(text: string): Constant | undefined {
  let r = lex(text);
  // ovn-controller lexes the first token alone: what follows it does not matter.
  if (!('tokens' in r)) r = lex(text.trim().split(/\s+/)[0] ?? '');
  const t = 'tokens' in r ? r.tokens[0] : undefined;
  return t === undefined || t.kind !== 'integer' ? undefined : { value: t.value, mask: t.mask, format: t.format };
}
