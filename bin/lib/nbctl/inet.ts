// IP addresses as ovn-nbctl reads and prints them: glibc's inet_pton/inet_ntop (strict dotted
// quads, IPv6 with an optional dotted tail), OVS's ip_parse_cidr/ipv6_parse_cidr (which scan
// with ovs_scan: blanks skipped, a sign allowed, numbers wrapping instead of failing), OVN's
// normalize_*_prefix (host bits cleared, "/32" and "/128" dropped) and inet_parse_active for
// load balancer VIPs and backends. Pure functions; an IPv4 address is an unsigned 32-bit number,
// an IPv6 one sixteen bytes.

const isSpace = (c: string | undefined): boolean => c !== undefined && ' \t\n\v\f\r'.includes(c);

/** glibc inet_pton(AF_INET): four decimal octets, no leading zeros, nothing else. */
export function inetPton4(s: string): number | undefined {
  const m = /^(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})$/.exec(s);
  if (m === null) return undefined;
  const parts = m.slice(1, 5).map(Number);
  if (parts.some((p) => p > 255)) return undefined;
  return parts.reduce((acc, p) => ((acc << 8) | p) >>> 0, 0);
}

const hexit = (c: string): number => (/^[0-9a-fA-F]$/.test(c) ? Number.parseInt(c, 16) : -1);

/** glibc inet_pton(AF_INET6), ported step by step (the "::" and dotted-tail rules are its own). */
export function inetPton6(s: string): number[] | undefined {
  const out = new Array<number>(16).fill(0);
  let tp = 0;
  let colonp = -1;
  let i = 0;
  if (s.length === 0) return undefined;
  if (s[0] === ':') {
    i++;
    if (i === s.length || s[i] !== ':') return undefined;
  }
  let curtok = i;
  let seen = 0;
  let val = 0;
  while (i < s.length) {
    const ch = s[i++] as string;
    const d = hexit(ch);
    if (d >= 0) {
      if (seen === 4) return undefined;
      val = (val << 4) | d;
      seen++;
      continue;
    }
    if (ch === ':') {
      curtok = i;
      if (seen === 0) {
        if (colonp >= 0) return undefined;
        colonp = tp;
        continue;
      } else if (i === s.length) return undefined;
      if (tp + 2 > 16) return undefined;
      out[tp++] = (val >> 8) & 0xff;
      out[tp++] = val & 0xff;
      seen = 0;
      val = 0;
      continue;
    }
    if (ch === '.' && tp + 4 <= 16) {
      const v4 = inetPton4(s.slice(curtok));
      if (v4 === undefined) return undefined;
      out[tp++] = v4 >>> 24;
      out[tp++] = (v4 >>> 16) & 0xff;
      out[tp++] = (v4 >>> 8) & 0xff;
      out[tp++] = v4 & 0xff;
      seen = 0;
      break;
    }
    return undefined;
  }
  if (seen > 0) {
    if (tp + 2 > 16) return undefined;
    out[tp++] = (val >> 8) & 0xff;
    out[tp++] = val & 0xff;
  }
  if (colonp >= 0) {
    if (tp === 16) return undefined;
    const n = tp - colonp;
    const moved = out.slice(colonp, tp);
    for (let k = colonp; k < 16; k++) out[k] = 0;
    for (let k = 0; k < n; k++) out[16 - n + k] = moved[k] as number;
    tp = 16;
  }
  return tp === 16 ? out : undefined;
}

export const ipv4Text = (a: number): string => `${a >>> 24}.${(a >>> 16) & 0xff}.${(a >>> 8) & 0xff}.${a & 0xff}`;

/** glibc inet_ntop(AF_INET6): longest zero run (>= 2) as "::", "::a.b.c.d" and "::ffff:a.b.c.d" tails. */
export function inetNtop6(b: readonly number[]): string {
  const w = [0, 1, 2, 3, 4, 5, 6, 7].map((i) => (((b[2 * i] as number) << 8) | (b[2 * i + 1] as number)) >>> 0);
  let best = { base: -1, len: 0 };
  let cur = { base: -1, len: 0 };
  for (let i = 0; i < 8; i++) {
    if (w[i] === 0) {
      if (cur.base === -1) cur = { base: i, len: 1 };
      else cur.len++;
    } else if (cur.base !== -1) {
      if (best.base === -1 || cur.len > best.len) best = cur;
      cur = { base: -1, len: 0 };
    }
  }
  if (cur.base !== -1 && (best.base === -1 || cur.len > best.len)) best = cur;
  if (best.base !== -1 && best.len < 2) best = { base: -1, len: 0 };
  let s = '';
  for (let i = 0; i < 8; i++) {
    if (best.base !== -1 && i >= best.base && i < best.base + best.len) {
      if (i === best.base) s += ':';
      continue;
    }
    if (i !== 0) s += ':';
    if (i === 6 && best.base === 0 && (best.len === 6 || (best.len === 5 && w[5] === 0xffff))) {
      s += `${b[12]}.${b[13]}.${b[14]}.${b[15]}`;
      break;
    }
    s += (w[i] as number).toString(16);
  }
  if (best.base !== -1 && best.base + best.len === 8) s += ':';
  return s;
}

/**
 * OVS's scan_int after ovs_scan's blank skipping: an optional sign and decimal digits, the
 * value wrapping modulo 2^64 (no overflow check). Returns the value and the index after it.
 */
function scanInt(s: string, at: number): { value: bigint; end: number } | undefined {
  let i = at;
  while (isSpace(s[i])) i++;
  const negative = s[i] === '-';
  if (s[i] === '-' || s[i] === '+') i++;
  const m = /^\d+/.exec(s.slice(i));
  if (m === null) return undefined;
  const v = BigInt.asUintN(64, BigInt(m[0]));
  return { value: negative ? BigInt.asUintN(64, -v) : v, end: i + m[0].length };
}

/** ovs_scan(arg, "%"SCNd64): a 64-bit integer at the start of arg; whatever follows is ignored. */
export function scanInt64(s: string): bigint | undefined {
  const r = scanInt(s, 0);
  return r === undefined ? undefined : BigInt.asIntN(64, r.value);
}

/** IP_SCAN_FMT ("%hhu.%hhu.%hhu.%hhu") at `at`: each octet is the low byte of what was read. */
function scanDotted(s: string, at: number): { addr: number; end: number } | undefined {
  let addr = 0;
  let i = at;
  for (let k = 0; k < 4; k++) {
    if (k > 0) {
      if (s[i] !== '.') return undefined;
      i++;
    }
    const r = scanInt(s, i);
    if (r === undefined) return undefined;
    addr = ((addr << 8) | Number(r.value & 0xffn)) >>> 0;
    i = r.end;
  }
  return { addr, end: i };
}

const ipv4Mask = (plen: number): number => (plen === 0 ? 0 : (0xffffffff << (32 - plen)) >>> 0);

/** OVS ip_parse_cidr: "A.B.C.D", "A.B.C.D/PLEN" or "A.B.C.D/MASK" with a CIDR mask, nothing after. */
export function ipParseCidr(s: string): { addr: number; plen: number } | undefined {
  const ip = scanDotted(s, 0);
  if (ip === undefined) return undefined;
  let mask = 0xffffffff;
  let end = ip.end;
  if (s[end] === '/') {
    const dotted = scanDotted(s, end + 1);
    if (dotted !== undefined) {
      mask = dotted.addr;
      end = dotted.end;
    } else {
      const p = scanInt(s, end + 1);
      if (p === undefined) return undefined;
      const prefix = Number(BigInt.asIntN(32, p.value));
      if (prefix < 0 || prefix > 32) return undefined;
      mask = ipv4Mask(prefix);
      end = p.end;
    }
  }
  if (end !== s.length) return undefined;
  // ip_is_cidr: the mask's ones are contiguous from the top.
  const plen = Math.clz32(~mask >>> 0);
  if (ipv4Mask(plen) !== mask) return undefined;
  return { addr: ip.addr, plen };
}

function ipv6Mask(plen: number): number[] {
  return Array.from({ length: 16 }, (_, i) => {
    const bits = Math.max(0, Math.min(8, plen - 8 * i));
    return (0xff00 >> bits) & 0xff;
  });
}

const V6_SCAN = /^[0-9a-fA-F:.]{1,46}/;

/** OVS ipv6_parse_cidr: an IPv6 address with an optional "/PLEN" or CIDR "/MASK", nothing after. */
export function ipv6ParseCidr(s: string): { addr: number[]; plen: number } | undefined {
  let i = 0;
  while (isSpace(s[i])) i++;
  const a = V6_SCAN.exec(s.slice(i));
  if (a === null) return undefined;
  const addr = inetPton6(a[0]);
  if (addr === undefined) return undefined;
  i += a[0].length;
  let mask = ipv6Mask(128);
  if (s[i] === '/') {
    const p = scanInt(s, i + 1);
    if (p !== undefined) {
      const prefix = Number(BigInt.asIntN(32, p.value));
      if (prefix < 0 || prefix > 128) return undefined;
      mask = ipv6Mask(prefix);
      i = p.end;
    } else {
      const m = V6_SCAN.exec(s.slice(i + 1));
      const parsed = m === null ? undefined : inetPton6(m[0]);
      if (m === null || parsed === undefined) return undefined;
      mask = parsed;
      i += 1 + m[0].length;
    }
  }
  if (i !== s.length) return undefined;
  let plen = 0;
  while (plen < 128 && (((mask[plen >> 3] as number) >> (7 - (plen & 7))) & 1) === 1) plen++;
  if (ipv6Mask(plen).some((x, k) => x !== mask[k])) return undefined;
  return { addr, plen };
}

/** OVN normalize_ipv4_prefix: the network, and "/PLEN" unless 32. */
export function normalizeIpv4Prefix(addr: number, plen: number): string {
  const net = ipv4Text((addr & ipv4Mask(plen)) >>> 0);
  return plen === 32 ? net : `${net}/${plen}`;
}

export function normalizeIpv6Prefix(addr: readonly number[], plen: number): string {
  const mask = ipv6Mask(plen);
  const net = inetNtop6(addr.map((x, i) => x & (mask[i] as number)));
  return plen === 128 ? net : `${net}/${plen}`;
}

export function normalizeIpv4PrefixStr(s: string): string | undefined {
  const p = ipParseCidr(s);
  return p === undefined ? undefined : normalizeIpv4Prefix(p.addr, p.plen);
}

export function normalizeIpv6PrefixStr(s: string): string | undefined {
  const p = ipv6ParseCidr(s);
  return p === undefined ? undefined : normalizeIpv6Prefix(p.addr, p.plen);
}

/** ovn-nbctl's normalize_prefix_str: IPv4 first, then IPv6. */
export const normalizePrefixStr = (s: string): string | undefined => normalizeIpv4PrefixStr(s) ?? normalizeIpv6PrefixStr(s);

export function normalizeIpv4AddrStr(s: string): string | undefined {
  const a = inetPton4(s);
  return a === undefined ? undefined : ipv4Text(a);
}

export function normalizeIpv6AddrStr(s: string): string | undefined {
  const a = inetPton6(s);
  return a === undefined ? undefined : inetNtop6(a);
}

/** ovn-nbctl's normalize_addr_str: an unmasked IPv4 or IPv6 address, normalized. */
export const normalizeAddrStr = (s: string): string | undefined => normalizeIpv4AddrStr(s) ?? normalizeIpv6AddrStr(s);

export interface LbEndpoint {
  /** The address as ss_format_address_nobracks prints it. */
  readonly ip: string;
  readonly family: 4 | 6;
  /** 0 when absent (OVS cannot tell ":0" from no port). */
  readonly port: number;
}

/**
 * OVS inet_parse_active(key, 0, ..., resolve_host=false): "IP", "IP:PORT", "[IPv6]" or
 * "[IPv6]:PORT"; with more than one colon outside brackets the whole text is the host.
 */
export function inetParseActive(key: string): LbEndpoint | undefined {
  let nColons = 0;
  let colon = -1;
  let inBrackets = false;
  for (let i = 0; i < key.length; i++) {
    const c = key[i];
    if (c === '[') inBrackets = true;
    else if (c === ']') inBrackets = false;
    else if (c === ':' && !inBrackets) {
      nColons++;
      colon = i;
    }
  }
  const unbracket = (t: string): string => (t.startsWith('[') ? (t.endsWith(']') && t.length > 1 ? t.slice(1, -1) : t.slice(1)) : t);
  let host: string;
  let portS: string | undefined;
  if (nColons > 1) host = key;
  else if (colon >= 0) {
    host = unbracket(key.slice(0, colon));
    portS = unbracket(key.slice(colon + 1));
  } else host = unbracket(key);
  let port = 0;
  if (portS !== undefined && portS !== '') {
    // str_to_int: strtol over the whole text (leading blanks and a sign allowed).
    if (!/^[ \t\n\v\f\r]*[+-]?\d+$/.test(portS)) return undefined;
    port = Number(portS.trim());
    if (port < 0 || port > 65535) return undefined;
  }
  if (host.includes(':')) {
    const [addr = '', scope] = host.split('%');
    const a = inetPton6(addr);
    if (a === undefined) return undefined;
    // A named scope would need if_nametoindex; only numeric scopes are taken here.
    if (scope !== undefined && scope !== '' && !/^\d+$/.test(scope)) return undefined;
    return { ip: inetNtop6(a), family: 6, port };
  }
  const a = inetPton4(host);
  return a === undefined ? undefined : { ip: ipv4Text(a), family: 4, port };
}
