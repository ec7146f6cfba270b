// Ethernet, IPv4 and IPv6 addresses as ovn-northd parses and prints them (lib/ovn-util.c's
// lport_addresses): an LSP address entry "MAC [IP[/PLEN] ...]", a router port's networks (plus
// the IPv6 link-local address derived from its MAC), each IP with its prefix, network,
// broadcast (IPv4) and solicited-node multicast (IPv6) addresses, printed as inet_ntop does.
// Pure functions; IPv4 addresses are unsigned 32-bit numbers, IPv6 ones eight 16-bit groups.
import { formatIpv6, linkLocalOf, parseIpv6Groups } from './addresses.js';
import { isNormalMac } from './nb.js';
import { fitted } from './fitted.js';

export interface Ipv4NetAddr {
  readonly addr: number;
  readonly plen: number;
  readonly mask: number;
  readonly network: number;
  readonly addrS: string;
  readonly networkS: string;
  readonly bcastS: string;
}

export interface Ipv6NetAddr {
  readonly addr: readonly number[];
  readonly plen: number;
  readonly network: readonly number[];
  readonly addrS: string;
  readonly networkS: string;
  /** The solicited-node multicast address ff02::1:ffXX:XXXX. */
  readonly snAddrS: string;
  /** Whether the network starts fe80:0:0:0 (OVN's in6_is_lla on the network). */
  readonly isLla: boolean;
}

export interface LportAddresses {
  /** The Ethernet address, xx:xx:xx:xx:xx:xx lowercase. */
  readonly ea: string;
  readonly ipv4: readonly Ipv4NetAddr[];
  readonly ipv6: readonly Ipv6NetAddr[];
}

export function ipv4Text(a: number): string {
  return `${a >>> 24}.${(a >>> 16) & 0xff}.${(a >>> 8) & 0xff}.${a & 0xff}`;
}

export function ipv4Mask(plen: number): number {
  return plen === 0 ? 0 : (0xffffffff << (32 - plen)) >>> 0;
}

/**
 * The value of a dotted-decimal IPv4 address, read as parseIpv4 reads it (four fields of one to
 * three decimal digits, each at most 255, nothing else), or undefined. A scan rather than a
 * regular expression and a re-join: every address of every port goes through here.
 */
export function ipv4Value(text: string): number | undefined {
  return scanIpv4(text, false);
}

const DOT = 46;
const DIGIT_0 = 48;
const DIGIT_9 = 57;

/**
 * Whether `text` is an IPv4 address exactly as ipv4Text prints its value (four decimal fields
 * of at most 255 without leading zeros, nothing else): then that text need not be built again.
 * Most ports' addresses are written so, and a full run reads every one of them twice.
 */
export function isPrintedIpv4(text: string): boolean {
  return scanIpv4(text, true) !== undefined;
}

/** The scan of both: four fields of one to three digits, each at most 255; `printed` also refuses leading zeros. */
function scanIpv4(text: string, printed: boolean): number | undefined {
  let value = 0;
  let i = 0;
  for (let field = 0; field < 4; field++) {
    if (field > 0) {
      if (text.charCodeAt(i) !== DOT) return undefined;
      i++;
    }
    let n = 0;
    const start = i;
    for (let c = text.charCodeAt(i); c >= DIGIT_0 && c <= DIGIT_9 && i - start < 3; c = text.charCodeAt(++i)) n = n * 10 + (c - DIGIT_0);
    if (i === start || n > 255 || (printed && i - start > 1 && text.charCodeAt(start) === DIGIT_0)) return undefined;
    value = ((value << 8) | n) >>> 0;
  }
  return i === text.length ? value : undefined;
}

/** `addrS` is the address's text when the caller has it as ipv4Text would print it. */
export function ipv4NetAddr(addr: number, plen: number, addrS = ipv4Text(addr)): Ipv4NetAddr {
  const mask = ipv4Mask(plen);
  const network = (addr & mask) >>> 0;
  // A host address (a VIF's, most often) is its own network and broadcast: one text for all three.
  if (plen === 32) return { addr, plen, mask, network, addrS, networkS: addrS, bcastS: addrS };
  return { addr, plen, mask, network, addrS, networkS: ipv4Text(network), bcastS: ipv4Text((addr | ~mask) >>> 0) };
}

export function ipv6Masked(groups: readonly number[], plen: number): number[] {
  return groups.map((g, i) => {
    const bits = Math.max(0, Math.min(16, plen - 16 * i));
    return bits === 0 ? 0 : g & ((0xffff << (16 - bits)) & 0xffff);
  });
}

export function ipv6NetAddr(addr: readonly number[], plen: number): Ipv6NetAddr {
  const network = ipv6Masked(addr, plen);
  const sn = [0xff02, 0, 0, 0, 0, 1, 0xff00 | ((addr[6] as number) & 0xff), addr[7] as number];
  return {
    addr, plen, network, addrS: formatIpv6(addr), networkS: formatIpv6(network), snAddrS: formatIpv6(sn),
    isLla: network[0] === 0xfe80 && network[1] === 0 && network[2] === 0 && network[3] === 0,
  };
}

/** "A.B.C.D" or "A.B.C.D/PLEN" (host bits allowed), as ip_parse_cidr reads it. */
export function parseIpv4Cidr(text: string): { addr: number; plen: number } | undefined {
  const slash = text.indexOf('/');
  const addr = ipv4Value(slash < 0 ? text : text.slice(0, slash));
  if (addr === undefined) return undefined;
  if (slash < 0) return { addr, plen: 32 };
  const p = text.slice(slash + 1);
  if (!/^\d{1,2}$/.test(p) || Number(p) > 32) return undefined;
  return { addr, plen: Number(p) };
}

/** "X::Y" or "X::Y/PLEN", as ipv6_parse_cidr reads it. */
export function parseIpv6Cidr(text: string): { addr: number[]; plen: number } | undefined {
  const slash = text.indexOf('/');
  const addr = parseIpv6Groups(slash < 0 ? text : text.slice(0, slash));
  if (addr === undefined) return undefined;
  if (slash < 0) return { addr, plen: 128 };
  const p = text.slice(slash + 1);
  if (!/^\d{1,3}$/.test(p) || Number(p) > 128) return undefined;
  return { addr, plen: Number(p) };
}

/** The 128-bit mask of a prefix length, as eight groups. */
export function ipv6PrefixMask(plen: number): number[] {
  return ipv6Masked([0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff], plen);
}

const IPV6_SCAN_CHARS = /^[0-9a-fA-F:.]{1,46}/;

/**
 * An IPv6 address with an optional "/PLEN" or "/MASK", as ovn-northd's ipv6_parse_masked reads
 * a DHCPv6 options' cidr: leading white space is skipped, a prefix length is tried before a
 * mask, and nothing may follow. The address may end in dotted IPv4 (inet_pton's "::ffff:a.b.c.d").
 */
export function parseIpv6Masked(text: string): { addr: number[]; mask: number[] } | undefined {
  const rest = text.replace(/^\s+/, '');
  const a = IPV6_SCAN_CHARS.exec(rest);
  if (a === null) return undefined;
  const addr = ipv6WithDottedTail(a[0]);
  if (addr === undefined) return undefined;
  const tail = rest.slice(a[0].length);
  if (tail === '') return { addr, mask: [0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff] };
  if (tail[0] !== '/') return undefined;
  const prefix = /^\/\s*([+-]?\d+)/.exec(tail);
  if (prefix !== null) {
    const plen = Number(prefix[1]);
    if (plen < 0 || plen > 128 || prefix[0].length !== tail.length) return undefined;
    return { addr, mask: ipv6PrefixMask(plen) };
  }
  const m = IPV6_SCAN_CHARS.exec(tail.slice(1));
  if (m === null || m[0].length !== tail.length - 1) return undefined;
  const mask = ipv6WithDottedTail(m[0]);
  return mask === undefined ? undefined : { addr, mask };
}

/** An IPv6 address as inet_pton reads it: hex groups, the last two maybe as dotted IPv4. */
function ipv6WithDottedTail(text: string): number[] | undefined {
  if (!text.includes('.')) return parseIpv6Groups(text);
  const colon = text.lastIndexOf(':');
  const v4 = ipv4Value(text.slice(colon + 1));
  if (colon < 0 || v4 === undefined) return undefined;
  return parseIpv6Groups(`${text.slice(0, colon + 1)}${(v4 >>> 16).toString(16)}:${(v4 & 0xffff).toString(16)}`);
}

/** Whether `addr` is within `cidr` (both as eight groups; the mask's set bits compared). */
export function ipv6InMasked(addr: readonly number[], cidr: { readonly addr: readonly number[]; readonly mask: readonly number[] }): boolean {
  for (let i = 0; i < 8; i++) if ((((addr[i] as number) ^ (cidr.addr[i] as number)) & (cidr.mask[i] as number)) !== 0) return false;
  return true;
}

/**
 * An Ethernet address as OVS's eth_addr_from_string reads it: six hexadecimal numbers
 * separated by ':', each maybe preceded by white space, a sign or "0x", of any length (the low
 * byte counts); nothing may follow. Returns the bytes, or undefined.
 */
export function ethAddrFromString(text: string): number[] | undefined {
  const scanned = scanEthAddr(text);
  return scanned !== undefined && scanned.end === text.length ? scanned.bytes : undefined;
}

/**
 * Whether `text` begins with an Ethernet address as ovs_scan(ETH_ADDR_SCAN_FMT) reads one: as
 * ethAddrFromString, but anything may follow (ovn-nbctl's check of an LSP address entry).
 */
export function startsWithEthAddr(text: string): boolean {
  return scanEthAddr(text) !== undefined;
}

/** Six fields as OVS's scanner reads them (see ethAddrFromString), and where they end. */
function scanEthAddr(text: string): { bytes: number[]; end: number } | undefined {
  const bytes: number[] = [];
  let i = 0;
  for (let field = 0; field < 6; field++) {
    if (field > 0) {
      if (text[i] !== ':') return undefined;
      i++;
    }
    const m = /^\s*([+-]?)(?:0[xX](?=[0-9a-fA-F]))?([0-9a-fA-F]+)/.exec(text.slice(i));
    if (m === null) return undefined;
    // OVS's scanner wraps without an overflow check: the last two digits are the low byte.
    const v = Number.parseInt((m[2] as string).slice(-2), 16);
    bytes.push(m[1] === '-' ? (256 - v) & 0xff : v);
    i += m[0].length;
  }
  return { bytes, end: i };
}

/** An Ethernet address token (1 or 2 hex digits per byte), normalized; undefined otherwise. */
export function parseMac(token: string): string | undefined {
  // The common spelling is already normal: no regular expression, no rebuilt string.
  if (isNormalMac(token)) return token;
  const m = /^([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})$/.exec(token);
  if (m === null) return undefined;
  return m.slice(1, 7).map((h) => h.toLowerCase().padStart(2, '0')).join(':');
}

/**
 * IP tokens in order (from `from`) until the first that is neither IPv4 nor IPv6 (as
 * parse_and_store_addresses stops).
 */
function parseIps(tokens: readonly string[], from = 0): { ipv4: readonly Ipv4NetAddr[]; ipv6: readonly Ipv6NetAddr[] } {
  const ipv4: Ipv4NetAddr[] = [];
  const ipv6: Ipv6NetAddr[] = [];
  for (let i = from; i < tokens.length; i++) {
    const token = tokens[i] as string;
    const v4 = parseIpv4Cidr(token);
    if (v4 !== undefined) {
      ipv4.push(isPrintedIpv4(token) ? ipv4NetAddr(v4.addr, 32, token) : ipv4NetAddr(v4.addr, v4.plen));
      continue;
    }
    const v6 = parseIpv6Cidr(token);
    if (v6 === undefined) break;
    ipv6.push(ipv6NetAddr(v6.addr, v6.plen));
  }
  return { ipv4: fitted(ipv4), ipv6: fitted(ipv6) };
}

function tokensOf(text: string): string[] {
  // The common spelling, tokens separated by single spaces, splits on ' ' alike.
  if (singleSpaced(text)) return text.split(' ');
  return text.split(/\s+/).filter((s) => s.length > 0);
}

/** Non-empty, no white space but single spaces between other characters. */
function singleSpaced(text: string): boolean {
  const n = text.length;
  if (n === 0 || text.charCodeAt(0) === SPACE || text.charCodeAt(n - 1) === SPACE) return false;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    // Every white space character \s matches is a space, a control below 0x21, or at least 0xa0.
    if (c === SPACE ? text.charCodeAt(i + 1) === SPACE : c < 0x21 || c >= 0xa0) return false;
  }
  return true;
}

const SPACE = 32;

/** An LSP address entry "MAC [IP ...]" (extract_lsp_addresses); undefined without a leading MAC. */
export function extractLspAddresses(entry: string): LportAddresses | undefined {
  const tokens = tokensOf(entry);
  const ea = parseMac(tokens[0] ?? '');
  if (ea === undefined) return undefined;
  const { ipv4, ipv6 } = parseIps(tokens, 1);
  return { ea, ipv4, ipv6 };
}

/**
 * The texts of an LSP address entry's IPv4 and IPv6 addresses, appended to `v4` and `v6`: the
 * `addrS` of extractLspAddresses's, without the rest of each address (a port group's address
 * sets read only these).
 */
export function extractLspIps(entry: string, v4: string[], v6: string[]): void {
  const tokens = tokensOf(entry);
  if (parseMac(tokens[0] ?? '') === undefined) return;
  for (let i = 1; i < tokens.length; i++) {
    const token = tokens[i] as string;
    if (isPrintedIpv4(token)) {
      v4.push(token);
      continue;
    }
    const a4 = parseIpv4Cidr(token);
    if (a4 !== undefined) {
      v4.push(ipv4Text(a4.addr));
      continue;
    }
    const a6 = parseIpv6Cidr(token);
    if (a6 === undefined) break;
    v6.push(formatIpv6(a6.addr));
  }
}

/** "IP [IP ...]" (extract_ip_addresses); undefined when no IP is found. */
export function extractIpAddresses(text: string): { ipv4: readonly Ipv4NetAddr[]; ipv6: readonly Ipv6NetAddr[] } | undefined {
  const r = parseIps(tokensOf(text));
  return r.ipv4.length + r.ipv6.length === 0 ? undefined : r;
}

/**
 * A router port's MAC and networks (extract_lrp_networks): unparsable networks and the IPv4
 * address 0.0.0.0 are left out, and the EUI-64 link-local address is always last.
 */
export function extractLrpNetworks(mac: string, networks: readonly string[]): LportAddresses | undefined {
  const ea = parseMac(mac.trim());
  if (ea === undefined) return undefined;
  const ipv4: Ipv4NetAddr[] = [];
  const ipv6: Ipv6NetAddr[] = [];
  for (const n of networks) {
    const v4 = parseIpv4Cidr(n);
    if (v4 !== undefined) {
      if (v4.addr !== 0) ipv4.push(ipv4NetAddr(v4.addr, v4.plen));
      continue;
    }
    const v6 = parseIpv6Cidr(n);
    if (v6 !== undefined) ipv6.push(ipv6NetAddr(v6.addr, v6.plen));
  }
  ipv6.push(ipv6NetAddr(parseIpv6Groups(linkLocalOf(ea)) as number[], 64));
  return { ea, ipv4: fitted(ipv4), ipv6: fitted(ipv6) };
}

/** The port address on the same network as `ip` (find_lport_address), if any. */
export function findLportAddress(laddrs: LportAddresses, ip: string): string | undefined {
  if (ip.includes('.')) {
    const v = ipv4Value(ip);
    if (v === undefined) return undefined;
    for (const na of laddrs.ipv4) if ((((na.network ^ v) & na.mask) >>> 0) === 0) return na.addrS;
    return undefined;
  }
  const g = parseIpv6Groups(ip);
  if (g === undefined) return undefined;
  for (const na of laddrs.ipv6) {
    const masked = ipv6Masked(g, na.plen);
    if (masked.every((x, i) => x === na.network[i])) return na.addrS;
  }
  return undefined;
}

/** IPv4 `{a, b}` or `a` when there is one and no broadcast is asked for (op_put_v4_networks). */
export function v4NetworksText(laddrs: LportAddresses, addBcast: boolean): string {
  if (!addBcast && laddrs.ipv4.length === 1) return (laddrs.ipv4[0] as Ipv4NetAddr).addrS;
  const parts: string[] = [];
  for (const na of laddrs.ipv4) {
    parts.push(na.addrS);
    if (addBcast) parts.push(na.bcastS);
  }
  return `{${parts.join(', ')}}`;
}

/** IPv6 `{a, b}` or `a` when there is one (op_put_v6_networks). */
export function v6NetworksText(laddrs: LportAddresses): string {
  if (laddrs.ipv6.length === 1) return (laddrs.ipv6[0] as Ipv6NetAddr).addrS;
  return `{${laddrs.ipv6.map((na) => na.addrS).join(', ')}}`;
}

/** The solicited-node multicast Ethernet address of an IPv6 address (33:33:ff:XX:XX:XX). */
export function solicitedNodeMac(addr: readonly number[]): string {
  const b = [0x33, 0x33, 0xff, (addr[6] as number) & 0xff, (addr[7] as number) >> 8, (addr[7] as number) & 0xff];
  return b.map((x) => x.toString(16).padStart(2, '0')).join(':');
}

/**
 * Whether an LSP addresses entry asks for dynamic allocation (is_dynamic_lsp_address):
 * "dynamic", "dynamic IPV4", "dynamic IPV6", "dynamic IPV4 IPV6" or "MAC dynamic". Most
 * entries do not mention it at all.
 */
export function isDynamicAddress(entry: string): boolean {
  return entry.includes('dynamic') && parseDynamicEntry(entry) !== undefined;
}

/**
 * What a dynamic entry fixes itself: the MAC of "MAC dynamic", the IPv4 address of "dynamic
 * IPV4 [IPV6]", the IPv6 text of "dynamic [IPV4] IPV6" (as ovn-northd scans it: characters an
 * IPv6 address may hold, checked only when it is used). The rest is for IPAM to choose.
 */
export interface DynamicEntry {
  readonly mac: string | undefined;
  readonly ipv4: number | undefined;
  readonly ipv6: string | undefined;
}

const NOTHING_FIXED: DynamicEntry = Object.freeze({ mac: undefined, ipv4: undefined, ipv6: undefined });
const IPV6_TOKEN = /^[0-9a-fA-F:.]{1,46}$/;

/** The entry's fixed parts when it is one of is_dynamic_lsp_address's forms; undefined otherwise. */
export function parseDynamicEntry(entry: string): DynamicEntry | undefined {
  if (entry === 'dynamic') return NOTHING_FIXED;
  const tokens = entry.split(' ');
  if (tokens[0] !== 'dynamic') {
    const mac = tokens.length === 2 && tokens[1] === 'dynamic' ? parseMac(tokens[0] as string) : undefined;
    return mac === undefined ? undefined : { mac, ipv4: undefined, ipv6: undefined };
  }
  if (tokens.length === 2) {
    const ipv4 = ipv4Value(tokens[1] as string);
    if (ipv4 !== undefined) return { mac: undefined, ipv4, ipv6: undefined };
    return IPV6_TOKEN.test(tokens[1] as string) ? { mac: undefined, ipv4: undefined, ipv6: tokens[1] } : undefined;
  }
  if (tokens.length === 3) {
    const ipv4 = ipv4Value(tokens[1] as string);
    if (ipv4 !== undefined && IPV6_TOKEN.test(tokens[2] as string)) return { mac: undefined, ipv4, ipv6: tokens[2] };
  }
  return undefined;
}
