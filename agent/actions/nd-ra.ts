// put_nd_ra_opts: the IPv6 router advertisement options of OVN 23.03 (lib/ovn-l7.h,
// nd_ra_opts_init), their checks (lib/actions.c, parse_put_nd_ra_opts) and the Router
// Advertisement they make (encode_PUT_ND_RA_OPTS): the whole ICMPv6 message, header and options
// in the order written, goes in the controller() userdata, and the agent's pinctrl puts it in
// place of the Router Solicitation it answers (agent/pinctrl/nd-ra-reply.ts).
//
// Pure: options in, bytes or an error message out.

import { parseIpv6 } from '../expr/lexer.js';
import type { DhcpOpt, DhcpOption } from './dhcp.js';

/** Option codes (ND_OPT_* of RFC 4861/4191/8106; the two flags are OVN's own). */
const ND_RA_FLAG_ADDR_MODE = 0;
const ND_RA_FLAG_PRF = 255;
const ND_OPT_SOURCE_LINKADDR = 1;
const ND_OPT_PREFIX_INFORMATION = 3;
const ND_OPT_MTU = 5;
const ND_OPT_ROUTE_INFO_TYPE = 24;
const ND_OPT_RDNSS = 25;
const ND_OPT_DNSSL = 31;

/** The options put_nd_ra_opts takes, by name. */
export const ndRaOpts: ReadonlyMap<string, DhcpOpt> = new Map<string, DhcpOpt>([
  ['addr_mode', { code: ND_RA_FLAG_ADDR_MODE, type: 'str' }],
  ['router_preference', { code: ND_RA_FLAG_PRF, type: 'str' }],
  ['slla', { code: ND_OPT_SOURCE_LINKADDR, type: 'mac' }],
  ['prefix', { code: ND_OPT_PREFIX_INFORMATION, type: 'ipv6' }],
  ['mtu', { code: ND_OPT_MTU, type: 'uint32' }],
  ['rdnss', { code: ND_OPT_RDNSS, type: 'ipv6' }],
  ['dnssl', { code: ND_OPT_DNSSL, type: 'str' }],
  ['route_info', { code: ND_OPT_ROUTE_INFO_TYPE, type: 'str' }],
]);

const ND_ROUTER_ADVERT = 134;
const CUR_HOP_LIMIT = 255;
const ROUTER_LIFETIME = 0xffff;
const FLAG_MANAGED = 0x80;
const FLAG_OTHER = 0x40;
const PRF_HIGH = 0x08;
const PRF_NORMAL = 0x00;
const PRF_LOW = 0x18;
const PREFIX_ON_LINK = 0x80;
const PREFIX_AUTONOMOUS = 0x40;
const INFINITE = 0xffffffff;
/** The DNSSL option's buffer in OVN (a longer list is left out). */
const DNSSL_BYTES_MAX = 255;

const be16 = (v: number): number[] => [(v >>> 8) & 0xff, v & 0xff];
const be32 = (v: number): number[] => [(v >>> 24) & 0xff, (v >>> 16) & 0xff, (v >>> 8) & 0xff, v & 0xff];
const bytesOf = (v: bigint, n: number): number[] => Array.from({ length: n }, (_, i) => Number((v >> BigInt(8 * (n - 1 - i))) & 0xffn));

/** The number of leading one bits of a 128-bit mask (ipv6_count_cidr_bits). */
function cidrBits(mask: bigint): number {
  let n = 0;
  for (let i = 127; i >= 0 && ((mask >> BigInt(i)) & 1n) === 1n; i--) n++;
  return n;
}

/** One value's integer, when it has exactly one and of `format`. */
function only(o: DhcpOption): { value: bigint; mask: bigint | null; format?: string } | undefined {
  return o.value.kind === 'ints' && o.value.values.length === 1 ? o.value.values[0] : undefined;
}

/** The checks of parse_put_nd_ra_opts, in its order; undefined when the options are good. */
export function checkNdRaOptions(options: readonly DhcpOption[]): string | undefined {
  let stateful = false;
  let prefix = false;
  let slla = false;
  for (const o of options) {
    if (o.value.kind === 'ints' && o.value.values.length > 1) return `Invalid value for "${o.name}" option`;
    const s = o.value.kind === 'string' ? o.value.value : undefined;
    const c = only(o);
    let ok = true;
    switch (o.opt.code) {
      case ND_RA_FLAG_ADDR_MODE:
        ok = s === 'slaac' || s === 'dhcpv6_stateful' || s === 'dhcpv6_stateless';
        if (s === 'dhcpv6_stateful') stateful = true;
        break;
      case ND_RA_FLAG_PRF:
        ok = s === 'MEDIUM' || s === 'HIGH' || s === 'LOW';
        break;
      case ND_OPT_SOURCE_LINKADDR:
        ok = c?.format === 'ethernet';
        slla = true;
        break;
      case ND_OPT_PREFIX_INFORMATION:
        ok = c?.format === 'ipv6' && c.mask !== null;
        prefix = true;
        break;
      case ND_OPT_MTU:
        ok = c?.format === 'decimal';
        break;
      case ND_OPT_RDNSS:
        ok = c?.format === 'ipv6';
        break;
      case ND_OPT_ROUTE_INFO_TYPE:
      case ND_OPT_DNSSL:
        ok = s !== undefined;
        break;
    }
    if (!ok) return `Invalid value for "${o.name}" option`;
  }
  if (!slla) return 'slla option not present';
  if (!stateful && !prefix) return 'prefix option needs to be set when address mode is slaac/dhcpv6_stateless.';
  return undefined;
}

/** The DNSSL option's names (RFC 1035 labels), or undefined when they do not fit (encode_ra_dnssl_opt). */
function dnsslOption(list: string): number[] | undefined {
  let size = 8;
  const names: number[] = [];
  for (const name of list.split(',').filter((n) => n !== '')) {
    size += Buffer.byteLength(name) + 2;
    if (size > DNSSL_BYTES_MAX) return undefined;
    for (const label of name.split('.').filter((l) => l !== '')) {
      const bytes = [...Buffer.from(label, 'utf8')].slice(0, 255);
      names.push(bytes.length, ...bytes);
    }
    names.push(0);
  }
  const total = Math.ceil(size / 8) * 8;
  const body = [...names, ...new Array<number>(Math.max(0, total - 8 - names.length)).fill(0)].slice(0, total - 8);
  return [ND_OPT_DNSSL, total / 8, 0, 0, ...be32(INFINITE), ...body];
}

/** An IPv6 prefix "addr/plen" as extract_ip_addresses reads it: the network and length. */
function ipv6Prefix(text: string): { network: bigint; plen: number } | undefined {
  const m = /^([0-9a-fA-F:.]+)\/(\d{1,3})$/.exec(text.trim());
  if (m === null || Number(m[2]) > 128) return undefined;
  const addr = parseIpv6(m[1] as string);
  if (addr === null) return undefined;
  const plen = Number(m[2]);
  const mask = plen === 0 ? 0n : ((1n << 128n) - 1n) ^ ((1n << BigInt(128 - plen)) - 1n);
  return { network: addr & mask, plen };
}

/**
 * "PRF-prefix,..." route information options (encode_ra_route_info_opt): each prefix after the
 * preference is one option (OVN reads a third part as another prefix of the same preference);
 * the first that is not an IPv6 prefix ends the list.
 */
function routeInfoOptions(list: string): number[] {
  const out: number[] = [];
  for (const route of list.split(',').filter((r) => r !== '')) {
    const [prf, ...prefixes] = route.split('-').filter((p) => p !== '');
    const flags = prf === 'HIGH' ? PRF_HIGH : prf === 'LOW' ? PRF_LOW : PRF_NORMAL;
    for (const prefix of prefixes) {
      const p = ipv6Prefix(prefix);
      if (p === undefined) return out;
      const words = Math.ceil(p.plen / 64);
      out.push(ND_OPT_ROUTE_INFO_TYPE, 1 + words, p.plen, flags, ...be32(INFINITE), ...bytesOf(p.network, 16).slice(0, words * 8));
    }
  }
  return out;
}

/** The Router Advertisement (ICMPv6 header, RA fields and options) of checked options. */
export function encodeNdRa(options: readonly DhcpOption[]): number[] {
  const ra = [ND_ROUTER_ADVERT, 0, 0, 0, CUR_HOP_LIMIT, 0, ...be16(ROUTER_LIFETIME), 0, 0, 0, 0, 0, 0, 0, 0];
  const MO = 5;
  for (const o of options) {
    const s = o.value.kind === 'string' ? o.value.value : '';
    const c = only(o);
    switch (o.opt.code) {
      case ND_RA_FLAG_ADDR_MODE:
        if (s === 'dhcpv6_stateful') ra[MO] = (ra[MO] as number) | FLAG_MANAGED;
        else if (s === 'dhcpv6_stateless') ra[MO] = (ra[MO] as number) | FLAG_OTHER;
        break;
      case ND_RA_FLAG_PRF:
        ra[MO] = (ra[MO] as number) | (s === 'LOW' ? PRF_LOW : s === 'HIGH' ? PRF_HIGH : PRF_NORMAL);
        break;
      case ND_OPT_SOURCE_LINKADDR:
        ra.push(ND_OPT_SOURCE_LINKADDR, 1, ...bytesOf(c?.value ?? 0n, 6));
        break;
      case ND_OPT_MTU:
        ra.push(ND_OPT_MTU, 1, 0, 0, ...bytesOf((c?.value ?? 0n) & 0xffffffffn, 4));
        break;
      case ND_OPT_PREFIX_INFORMATION: {
        const flags = PREFIX_ON_LINK | (((ra[MO] as number) & FLAG_MANAGED) === 0 ? PREFIX_AUTONOMOUS : 0);
        ra.push(ND_OPT_PREFIX_INFORMATION, 4, cidrBits(c?.mask ?? 0n), flags, ...be32(INFINITE), ...be32(INFINITE), 0, 0, 0, 0, ...bytesOf(c?.value ?? 0n, 16));
        break;
      }
      case ND_OPT_RDNSS:
        ra.push(ND_OPT_RDNSS, 3, 0, 0, ...be32(INFINITE), ...bytesOf(c?.value ?? 0n, 16));
        break;
      case ND_OPT_DNSSL:
        ra.push(...(dnsslOption(s) ?? []));
        break;
      case ND_OPT_ROUTE_INFO_TYPE:
        ra.push(...routeInfoOptions(s));
        break;
    }
  }
  return ra;
}
