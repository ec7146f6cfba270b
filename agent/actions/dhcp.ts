// DHCPv4 options for put_dhcp_opts and DHCPv6 options for put_dhcpv6_opts: names, codes and
// value types as OVN 23.03 defines them (lib/ovn-l7.h), and their encoding into the controller()
// userdata (DHCPv4: code and length bytes, value; DHCPv6: 16-bit code and length, value).
// ovn-controller takes these tables from the SB DHCP_Options and DHCPv6_Options rows, which
// northd fills from the same lists; callers may pass their own.

import type { IntFormat } from '../expr/lexer.js';

export type DhcpOptType = 'ipv4' | 'bool' | 'uint8' | 'uint16' | 'uint32' | 'str' | 'host_id' | 'static_routes' | 'domains' | 'ipv6' | 'mac';

export interface DhcpOpt {
  readonly code: number;
  readonly type: DhcpOptType;
}

export const dhcpOffererIpCode = 0;
const bootfileCode = 67;
const bootfileAltCode = 254;
const nextServerCode = 253;

export const defaultDhcpOpts: ReadonlyMap<string, DhcpOpt> = new Map<string, DhcpOpt>([
  ['offerip', { code: 0, type: 'ipv4' }],
  ['netmask', { code: 1, type: 'ipv4' }],
  ['router', { code: 3, type: 'ipv4' }],
  ['dns_server', { code: 6, type: 'ipv4' }],
  ['log_server', { code: 7, type: 'ipv4' }],
  ['lpr_server', { code: 9, type: 'ipv4' }],
  ['hostname', { code: 12, type: 'str' }],
  ['domain_name', { code: 15, type: 'str' }],
  ['swap_server', { code: 16, type: 'ipv4' }],
  ['ip_forward_enable', { code: 19, type: 'bool' }],
  ['policy_filter', { code: 21, type: 'ipv4' }],
  ['default_ttl', { code: 23, type: 'uint8' }],
  ['mtu', { code: 26, type: 'uint16' }],
  ['broadcast_address', { code: 28, type: 'ipv4' }],
  ['router_discovery', { code: 31, type: 'bool' }],
  ['router_solicitation', { code: 32, type: 'ipv4' }],
  ['arp_cache_timeout', { code: 35, type: 'uint32' }],
  ['ethernet_encap', { code: 36, type: 'bool' }],
  ['tcp_ttl', { code: 37, type: 'uint8' }],
  ['tcp_keepalive_interval', { code: 38, type: 'uint32' }],
  ['nis_server', { code: 41, type: 'ipv4' }],
  ['ntp_server', { code: 42, type: 'ipv4' }],
  ['netbios_name_server', { code: 44, type: 'ipv4' }],
  ['netbios_node_type', { code: 46, type: 'uint8' }],
  ['lease_time', { code: 51, type: 'uint32' }],
  ['server_id', { code: 54, type: 'ipv4' }],
  ['T1', { code: 58, type: 'uint32' }],
  ['T2', { code: 59, type: 'uint32' }],
  ['tftp_server', { code: 66, type: 'host_id' }],
  ['bootfile_name', { code: bootfileCode, type: 'str' }],
  ['domain_search_list', { code: 119, type: 'domains' }],
  ['classless_static_route', { code: 121, type: 'static_routes' }],
  ['tftp_server_address', { code: 150, type: 'ipv4' }],
  ['path_prefix', { code: 210, type: 'str' }],
  ['ms_classless_static_route', { code: 249, type: 'static_routes' }],
  ['wpad', { code: 252, type: 'str' }],
  ['next_server', { code: nextServerCode, type: 'ipv4' }],
  ['bootfile_name_alt', { code: bootfileAltCode, type: 'str' }],
]);

/** One parsed option value: integers (with an optional CIDR mask) or one string. */
export type DhcpValue =
  | { readonly kind: 'ints'; readonly values: readonly { readonly value: bigint; readonly mask: bigint | null; readonly format?: IntFormat }[] }
  | { readonly kind: 'string'; readonly value: string };

export interface DhcpOption {
  readonly name: string;
  readonly opt: DhcpOpt;
  readonly value: DhcpValue;
}

const be = (v: bigint, bytes: number): number[] => {
  const out: number[] = [];
  for (let i = bytes - 1; i >= 0; i--) out.push(Number((v >> BigInt(8 * i)) & 0xffn));
  return out;
};
const utf8 = (s: string): number[] => [...new TextEncoder().encode(s)];

function prefixLen(mask: bigint): number {
  let n = 0;
  for (let i = 31; i >= 0 && ((mask >> BigInt(i)) & 1n) === 1n; i--) n++;
  return n;
}

/** One option's bytes, or an error for a value the option cannot carry. */
function encodeOne(o: DhcpOption): number[] | string {
  const v = o.value;
  const ints = v.kind === 'ints' ? v.values : [];
  const first = ints[0]?.value ?? 0n;
  let body: number[];
  switch (o.opt.type) {
    case 'bool': case 'uint8': body = be(first, 1); break;
    case 'uint16': body = be(first, 2); break;
    case 'uint32': body = be(first, 4); break;
    case 'ipv4': body = ints.flatMap((c) => be(c.value, 4)); break;
    case 'str': body = v.kind === 'string' ? utf8(v.value) : []; break;
    case 'host_id': body = v.kind === 'string' ? utf8(v.value) : be(first, 4); break;
    case 'static_routes': {
      body = [];
      for (let i = 0; i + 1 < ints.length; i += 2) {
        const dst = ints[i] as { value: bigint; mask: bigint | null };
        const plen = dst.mask === null ? 32 : prefixLen(dst.mask);
        body.push(plen, ...be(dst.value, 4).slice(0, Math.ceil(plen / 8)), ...be((ints[i + 1] as { value: bigint }).value, 4));
      }
      break;
    }
    case 'domains':
      return `DHCPv4 option ${o.name} (domain search list) is not supported by this compiler.`;
    case 'ipv6': case 'mac':
      return `DHCPv4 option ${o.name} has type ${o.opt.type}, which DHCPv4 does not carry.`;
  }
  if (body.length > 255) return `DHCPv4 option ${o.name} is longer than 255 bytes.`;
  return [o.opt.code, body.length, ...body];
}

/** The option bytes after the offer IP, in OVN's order: bootfile_name, bootfile_name_alt and
 *  next_server first, then the rest as written (offerip itself is encoded by the caller). */
export function encodeDhcpOptions(options: readonly DhcpOption[]): number[] | string {
  const out: number[] = [];
  const special = [bootfileCode, bootfileAltCode, nextServerCode];
  for (const code of special) {
    const o = options.find((x) => x.opt.code === code);
    if (o === undefined) continue;
    const b = encodeOne(o);
    if (typeof b === 'string') return b;
    out.push(...b);
  }
  for (const o of options) {
    if (o.opt.code === dhcpOffererIpCode || special.includes(o.opt.code)) continue;
    const b = encodeOne(o);
    if (typeof b === 'string') return b;
    out.push(...b);
  }
  return out;
}

/** put_dhcpv6_opts' options (northd's supported_dhcpv6_opts). */
export const defaultDhcpv6Opts: ReadonlyMap<string, DhcpOpt> = new Map<string, DhcpOpt>([
  ['server_id', { code: 2, type: 'mac' }],
  ['ia_addr', { code: 5, type: 'ipv6' }],
  ['dns_server', { code: 23, type: 'ipv6' }],
  ['domain_search', { code: 24, type: 'str' }],
]);

/**
 * The DHCPv6 option TLVs of put_dhcpv6_opts, in the order written: an ipv6 option carries every
 * value (16 bytes each), a mac option its first value (6 bytes), a str option its first string.
 * As in OVN, a constant is read through the type's width whatever its own format (the low 128
 * or 48 bits of the integer).
 */
export function encodeDhcpv6Options(options: readonly DhcpOption[]): number[] | string {
  const out: number[] = [];
  for (const o of options) {
    const v = o.value;
    const ints = v.kind === 'ints' ? v.values : [];
    let body: number[];
    switch (o.opt.type) {
      case 'ipv6': body = ints.flatMap((c) => be(c.value, 16)); break;
      case 'mac': body = be(ints[0]?.value ?? 0n, 6); break;
      case 'str': body = v.kind === 'string' ? utf8(v.value) : []; break;
      default: return `DHCPv6 option ${o.name} has type ${o.opt.type}, which DHCPv6 does not carry.`;
    }
    if (body.length > 0xffff) return `DHCPv6 option ${o.name} is longer than 65535 bytes.`;
    out.push(...be(BigInt(o.opt.code), 2), ...be(BigInt(body.length), 2), ...body);
  }
  return out;
}
