// The lexical syntax of OVN's match language, after OVN's lib/lex.c: identifiers may contain
// dots, integers come in decimal, hexadecimal, Ethernet, IPv4 and IPv6 forms, each optionally
// followed by "/mask" (a CIDR prefix length for IPv4 and IPv6), and "$name" / "@name" name an
// address set or a port group. Pure: a string in, tokens or the first error out.

/** How an integer constant was written; the parser uses it for width checks. */
export type IntFormat = 'decimal' | 'hex' | 'ethernet' | 'ipv4' | 'ipv6';

export type Punct =
  | '==' | '!=' | '<' | '<=' | '>' | '>=' | '&&' | '||' | '!'
  | '(' | ')' | '{' | '}' | '[' | ']' | ',' | ';' | '..' | '=' | ':' | '->' | '<->' | '-';

export type Token =
  | { readonly kind: 'id'; readonly text: string; readonly offset: number }
  | { readonly kind: 'string'; readonly value: string; readonly text: string; readonly offset: number }
  | {
      readonly kind: 'integer';
      readonly value: bigint;
      /** Null for an unmasked constant. Invariant: value has no 1-bit outside mask. */
      readonly mask: bigint | null;
      readonly format: IntFormat;
      readonly text: string;
      readonly offset: number;
    }
  | { readonly kind: 'addressSet'; readonly name: string; readonly text: string; readonly offset: number }
  | { readonly kind: 'portGroup'; readonly name: string; readonly text: string; readonly offset: number }
  /** "^name": a chassis template variable, which the caller must expand before compiling. */
  | { readonly kind: 'template'; readonly name: string; readonly text: string; readonly offset: number }
  | { readonly kind: 'punct'; readonly op: Punct; readonly text: string; readonly offset: number }
  | { readonly kind: 'end'; readonly text: ''; readonly offset: number };

export interface LexError {
  readonly message: string;
  /** Zero-based character offset in the input where the bad token starts. */
  readonly offset: number;
}

export type LexResult = { readonly tokens: Token[] } | { readonly error: LexError };

/** Bounds the work done on one match string; longer inputs are rejected, not lexed. */
export const matchCharsMax = 256 * 1024;

const U64_MAX = (1n << 64n) - 1n;
const U128_MAX = (1n << 128n) - 1n;

// Character classes by UTF-16 code unit (charCodeAt gives NaN past the end, which is in none).
function isDigitCode(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}
function isLetterCode(c: number): boolean {
  return (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
}
function isHexCode(c: number): boolean {
  return isDigitCode(c) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);
}
/** [A-Za-z_.]: may start an identifier. */
function isId1Code(c: number): boolean {
  return isLetterCode(c) || c === 0x5f || c === 0x2e;
}
/** [A-Za-z0-9_.]: may continue an identifier. */
function isIdnCode(c: number): boolean {
  return isId1Code(c) || isDigitCode(c);
}
function isAlnumCode(c: number): boolean {
  return isLetterCode(c) || isDigitCode(c);
}
/** JavaScript's \s (as lex.c skips white space), with the ASCII cases decided without a regex. */
function isSpaceCode(c: number): boolean {
  if (c < 0x80) return c === 0x20 || (c >= 0x09 && c <= 0x0d);
  return /\s/.test(String.fromCharCode(c));
}

/** A dotted quad (each part one to three decimal digits, at most 255), else null. */
export function parseIpv4(s: string): bigint | null {
  let v = 0;
  let parts = 0;
  let digits = 0;
  let part = 0;
  for (let i = 0; i <= s.length; i++) {
    const c = i < s.length ? s.charCodeAt(i) : 0x2e;
    if (c === 0x2e) {
      if (digits === 0 || part > 255 || ++parts > 4) return null;
      v = v * 256 + part;
      digits = 0;
      part = 0;
    } else if (isDigitCode(c) && digits < 3) {
      part = part * 10 + (c - 0x30);
      digits++;
    } else {
      return null;
    }
  }
  return parts === 4 ? BigInt(v) : null;
}

export function parseIpv6(s: string): bigint | null {
  if (s.length === 0 || s.length > 45) return null;
  let tail: bigint[] = [];
  let text = s;
  // An embedded IPv4 address in the last 32 bits (e.g. ::ffff:192.0.2.128).
  const lastColon = text.lastIndexOf(':');
  if (lastColon >= 0 && text.slice(lastColon + 1).includes('.')) {
    const v4 = parseIpv4(text.slice(lastColon + 1));
    if (v4 === null) return null;
    tail = [v4 >> 16n, v4 & 0xffffn];
    const prefix = text.slice(0, lastColon + 1);
    text = prefix.endsWith('::') ? prefix : prefix.slice(0, -1);
  }
  const halves = text.split('::');
  if (halves.length > 2) return null;
  const parseGroups = (h: string): bigint[] | null => {
    if (h === '') return [];
    const out: bigint[] = [];
    for (const g of h.split(':')) {
      if (!/^[0-9A-Fa-f]{1,4}$/.test(g)) return null;
      out.push(BigInt('0x' + g));
    }
    return out;
  };
  const head = parseGroups(halves[0] ?? '');
  if (head === null) return null;
  let groups: bigint[];
  if (halves.length === 2) {
    const rest = parseGroups(halves[1] ?? '');
    if (rest === null) return null;
    const fill = 8 - head.length - rest.length - tail.length;
    if (fill < 1) return null;
    groups = [...head, ...new Array<bigint>(fill).fill(0n), ...rest, ...tail];
  } else {
    groups = [...head, ...tail];
    if (groups.length !== 8) return null;
  }
  let v = 0n;
  for (const g of groups) v = (v << 16n) | g;
  return v;
}

/** xx:xx:xx:xx:xx:xx (two hex digits each), else null. 48 bits fit a double exactly. */
function parseMac(s: string): bigint | null {
  if (s.length !== 17) return null;
  let v = 0;
  for (let i = 0; i < 17; i++) {
    const c = s.charCodeAt(i);
    if (i % 3 === 2) {
      if (c !== 0x3a) return null;
    } else if (isHexCode(c)) {
      v = v * 16 + (c <= 0x39 ? c - 0x30 : (c | 0x20) - 0x57);
    } else {
      return null;
    }
  }
  return BigInt(v);
}

/** True if 'text' is one or more decimal digits. */
function allDigits(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    if (!isDigitCode(text.charCodeAt(i))) return false;
  }
  return text.length > 0;
}

type IntParse = { value: bigint; format: IntFormat; end: number } | { error: string; end: number };

/** Parses the extent of an "integer" token starting at 'start', as lex.c does. */
function parseIntegerAt(input: string, start: number): IntParse {
  let end = start;
  let sawDot = false;
  for (;;) {
    const c = input.charCodeAt(end);
    if (isAlnumCode(c) || (c === 0x3a && !sawDot) || (c === 0x2e && input.charCodeAt(end + 1) !== 0x2e)) {
      if (c === 0x2e) sawDot = true;
      end++;
    } else {
      break;
    }
  }
  const text = input.slice(start, end);
  if (text.length === 0) return { error: 'Integer constant expected.', end };
  const mac = text.length === 17 ? parseMac(text) : null;
  if (mac !== null) return { value: mac, format: 'ethernet', end };
  if (allDigits(text)) {
    if (text[0] === '0' && text.length > 1) {
      return { error: 'Decimal constants must not have leading zeros.', end };
    }
    const v = BigInt(text);
    if (v > U64_MAX) return { error: 'Decimal constants must be less than 2**64.', end };
    return { value: v, format: 'decimal', end };
  }
  if (text[0] === '0' && (text[1] === 'x' || text[1] === 'X')) {
    if (text.length === 2) return { error: `Hex digits expected following 0${text[1]}.`, end };
    const digits = text.slice(2);
    if (!/^[0-9A-Fa-f]+$/.test(digits)) return { error: 'Invalid syntax in hexadecimal constant.', end };
    const v = BigInt('0x' + digits);
    if (v > U128_MAX) return { error: 'Hexadecimal constant requires more than 128 bits.', end };
    return { value: v, format: 'hex', end };
  }
  if (text.length < 46) {
    const v4 = parseIpv4(text);
    if (v4 !== null) return { value: v4, format: 'ipv4', end };
    const v6 = parseIpv6(text);
    if (v6 !== null) return { value: v6, format: 'ipv6', end };
  }
  return { error: 'Invalid numeric constant.', end };
}

/** True if the run of hex digits at 'p' is followed by ':' (a MAC or IPv6 address, not an id). */
function hexRunThenColon(input: string, p: number): boolean {
  let e = p;
  while (isHexCode(input.charCodeAt(e))) e++;
  return input.charCodeAt(e) === 0x3a;
}

function prefixMask(bits: number, width: number): bigint {
  if (bits === 0) return 0n;
  return ((1n << BigInt(bits)) - 1n) << BigInt(width - bits);
}

/** Lexes all of 'input'. Never throws; the first problem comes back as an error. */
export function lex(input: string): LexResult {
  if (input.length > matchCharsMax) {
    return { error: { message: `Input longer than ${matchCharsMax} characters.`, offset: 0 } };
  }
  const tokens: Token[] = [];
  let p = 0;
  const fail = (message: string, offset: number): LexResult => ({ error: { message, offset } });
  const punct = (op: Punct, len: number): void => {
    tokens.push({ kind: 'punct', op, text: op, offset: p });
    p += len;
  };
  while (p < input.length) {
    const code = input.charCodeAt(p);
    if (isSpaceCode(code)) { p++; continue; }
    // Identifiers are the most common token; a letter or `_' starts one unless it begins a
    // hex run followed by `:' (a MAC or IPv6 address). No punctuation case below is a letter.
    if ((isLetterCode(code) || code === 0x5f) && !(isHexCode(code) && hexRunThenColon(input, p))) {
      let e = p + 1;
      while (isIdnCode(input.charCodeAt(e))) e++;
      tokens.push({ kind: 'id', text: input.slice(p, e), offset: p });
      p = e;
      continue;
    }
    const c = input[p] as string;
    const next = input[p + 1];
    switch (c) {
      case '/':
        if (next === '*') {
          const close = input.indexOf('*/', p + 2);
          if (close < 0) return fail('`/*\' without matching `*/\'.', p);
          p = close + 2;
          continue;
        } else if (next === '/') {
          const nl = input.indexOf('\n', p);
          p = nl < 0 ? input.length : nl + 1;
          continue;
        }
        return fail('`/\' is only valid as part of `//\' or `/*\'.', p);
      case '(': case ')': case '{': case '}': case '[': case ']': case ',': case ';':
        punct(c, 1); continue;
      case '=':
        if (next === '=') punct('==', 2); else punct('=', 1);
        continue;
      case '!':
        if (next === '=') punct('!=', 2); else punct('!', 1);
        continue;
      case '&':
        if (next === '&') { punct('&&', 2); continue; }
        return fail('`&\' is only valid as part of `&&\'.', p);
      case '|':
        if (next === '|') { punct('||', 2); continue; }
        return fail('`|\' is only valid as part of `||\'.', p);
      case '<':
        if (next === '=') punct('<=', 2);
        else if (next === '-' && input[p + 2] === '>') punct('<->', 3);
        else punct('<', 1);
        continue;
      case '>':
        if (next === '=') punct('>=', 2); else punct('>', 1);
        continue;
      case '-':
        if (next === '>') punct('->', 2); else punct('-', 1);
        continue;
      case '.':
        if (next === '.') { punct('..', 2); continue; }
        return fail('`.\' is only valid as part of `..\' or a number.', p);
      case '$': case '@': case '^': {
        if (!isId1Code(input.charCodeAt(p + 1))) return fail(`\`${c}' must be followed by a valid identifier.`, p);
        let e = p + 1;
        while (isIdnCode(input.charCodeAt(e))) e++;
        const text = input.slice(p, e);
        const name = text.slice(1);
        const kind = c === '$' ? 'addressSet' : c === '@' ? 'portGroup' : 'template';
        tokens.push({ kind, name, text, offset: p });
        p = e;
        continue;
      }
      case '"': {
        // Most strings (port names) hold no escape: one slice, not a string per character.
        const close = input.indexOf('"', p + 1);
        let plain = close >= 0;
        for (let i = p + 1; plain && i < close; i++) if (input.charCodeAt(i) === 0x5c) plain = false;
        if (plain) {
          tokens.push({ kind: 'string', value: input.slice(p + 1, close), text: input.slice(p, close + 1), offset: p });
          p = close + 1;
          continue;
        }
        let e = p + 1;
        let value = '';
        for (;;) {
          const ch = input[e];
          if (ch === undefined) return fail('Input ends inside quoted string.', p);
          if (ch === '"') break;
          if (ch === '\\') {
            const esc = input[e + 1];
            if (esc === undefined) return fail('Input ends inside quoted string.', p);
            if (esc === 'u') {
              const hex = input.slice(e + 2, e + 6);
              if (!/^[0-9A-Fa-f]{4}$/.test(hex)) return fail('Malformed \\u escape in quoted string.', e);
              value += String.fromCharCode(parseInt(hex, 16));
              e += 6;
              continue;
            }
            // The JSON escapes, as OVN unescapes strings with json_string_unescape().
            const map: Record<string, string> = {
              n: '\n', t: '\t', r: '\r', b: '\b', f: '\f', '"': '"', '\\': '\\', '/': '/',
            };
            const m = map[esc];
            if (m === undefined) return fail(`Invalid escape \`\\${esc}' in quoted string.`, e);
            value += m;
            e += 2;
            continue;
          }
          value += ch;
          e++;
        }
        tokens.push({ kind: 'string', value, text: input.slice(p, e + 1), offset: p });
        p = e + 1;
        continue;
      }
      default:
        break;
    }
    const startsNumber = isDigitCode(code) || (c === ':' && next === ':')
      || (isHexCode(code) && hexRunThenColon(input, p));
    if (c === ':' && next !== ':') { punct(':', 1); continue; }
    if (startsNumber) {
      const start = p;
      const v = parseIntegerAt(input, p);
      if ('error' in v) return fail(v.error, start);
      p = v.end;
      let value = v.value;
      let format = v.format;
      let mask: bigint | null = null;
      if (input[p] === '/') {
        const m = parseIntegerAt(input, p + 1);
        if ('error' in m) return fail(m.error, p + 1);
        p = m.end;
        if (m.format === format) {
          mask = m.value;
        } else if (format === 'ipv4' && m.format === 'decimal' && m.value <= 32n) {
          mask = prefixMask(Number(m.value), 32);
        } else if (format === 'ipv6' && m.format === 'decimal' && m.value <= 128n) {
          mask = prefixMask(Number(m.value), 128);
        } else if (format === 'decimal' && m.format === 'hex' && value === 0n) {
          format = 'hex';
          mask = m.value;
        } else {
          return fail('Value and mask have incompatible formats.', start);
        }
        value &= mask;
      }
      tokens.push({ kind: 'integer', value, mask, format, text: input.slice(start, p), offset: start });
      continue;
    }
    if (isId1Code(code)) {
      let e = p + 1;
      while (isIdnCode(input.charCodeAt(e))) e++;
      tokens.push({ kind: 'id', text: input.slice(p, e), offset: p });
      p = e;
      continue;
    }
    return fail(code >= 0x20 && code < 0x7f
      ? `Invalid character \`${c}' in input.`
      : `Invalid byte 0x${code.toString(16)} in input.`, p);
  }
  tokens.push({ kind: 'end', text: '', offset: input.length });
  return { tokens };
}

/** An integer as the lexer's format spells it (IPv6 per RFC 5952, with ::ffff:a.b.c.d). */
export function formatIntPart(v: bigint, format: IntFormat): string {
  switch (format) {
    case 'decimal': return v.toString();
    case 'hex': return v === 0n ? '0' : `0x${v.toString(16)}`;
    case 'ethernet': return v.toString(16).padStart(12, '0').match(/../g)?.join(':') ?? '';
    case 'ipv4': return [24n, 16n, 8n, 0n].map((s) => ((v >> s) & 0xffn).toString()).join('.');
    case 'ipv6': return formatIpv6Text(v);
  }
}

function formatIpv6Text(v: bigint): string {
  const groups: number[] = [];
  for (let i = 7; i >= 0; i--) groups.push(Number((v >> BigInt(16 * i)) & 0xffffn));
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    return `::ffff:${formatIntPart(v & 0xffffffffn, 'ipv4')}`;
  }
  // The longest run of two or more zero groups becomes "::" (RFC 5952).
  let bestStart = -1;
  let bestLen = 1;
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) { i++; continue; }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen) { bestStart = i; bestLen = j - i; }
    i = j;
  }
  const hex = (gs: number[]): string => gs.map((g) => g.toString(16)).join(':');
  if (bestStart < 0) return hex(groups);
  return `${hex(groups.slice(0, bestStart))}::${hex(groups.slice(bestStart + bestLen))}`;
}

/** OVN's printed form of a token (lex_token_format): CIDR masks print as a prefix length. */
export function formatToken(t: Token): string {
  switch (t.kind) {
    case 'id': return t.text;
    case 'string': return JSON.stringify(t.value);
    case 'addressSet': return `$${t.name}`;
    case 'portGroup': return `@${t.name}`;
    case 'template': return `^${t.name}`;
    case 'punct': return t.op;
    case 'end': return '';
    case 'integer': {
      const value = formatIntPart(t.value, t.format);
      if (t.mask === null) return value;
      const width = t.format === 'ipv4' ? 32 : 128;
      if (t.format === 'ipv4' || t.format === 'ipv6') {
        const m = t.mask;
        const bits = m.toString(2);
        const isCidr = m === 0n || (bits.length === width && /^1+0*$/.test(bits));
        if (isCidr) return `${value}/${m === 0n ? 0 : bits.indexOf('0') < 0 ? width : bits.indexOf('0')}`;
      }
      return `${value}/${formatIntPart(t.mask, t.format)}`;
    }
  }
}
