// Router port networks as ovn-northd reads them (extract_lrp_networks): IPv4 and IPv6
// addresses printed the way inet_ntop prints them, plus the IPv6 link-local address that OVN
// always derives from the port's MAC (EUI-64).

/** An IPv4 address in dotted decimal, or undefined when `s` is not one. */
export function parseIpv4(s: string): string | undefined {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(s);
  if (m === null) return undefined;
  const parts = m.slice(1, 5).map(Number);
  if (parts.some((p) => p > 255)) return undefined;
  return parts.join('.');
}

/** The eight 16-bit groups of an IPv6 address, or undefined when `s` is not one. */
export function parseIpv6Groups(s: string): number[] | undefined {
  if (!/^[0-9a-fA-F:]+$/.test(s)) return undefined;
  const halves = s.split('::');
  if (halves.length > 2) return undefined;
  const parse = (part: string): number[] | undefined => {
    if (part === '') return [];
    const groups = part.split(':');
    if (groups.some((g) => g.length === 0 || g.length > 4)) return undefined;
    return groups.map((g) => Number.parseInt(g, 16));
  };
  const head = parse(halves[0] ?? '');
  const tail = halves.length === 2 ? parse(halves[1] ?? '') : [];
  if (head === undefined || tail === undefined) return undefined;
  if (halves.length === 1) return head.length === 8 ? head : undefined;
  if (head.length + tail.length > 7) return undefined;
  return [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail];
}

/** RFC 5952 text of eight groups: lowercase, no leading zeros, longest zero run (>= 2) as "::". */
export function formatIpv6(groups: readonly number[]): string {
  let bestStart = -1;
  let bestLen = 0;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestLen < 2) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLen).join(':')}`;
}

/** The IPv6 link-local address OVN derives from a MAC (fe80::/64 with the EUI-64 of it). */
export function linkLocalOf(mac: string): string {
  return formatIpv6(eui64In([0xfe80, 0, 0, 0], mac));
}

/**
 * in6_generate_eui64: the first four groups of `prefix`, then the MAC (xx:xx:xx:xx:xx:xx) with
 * its universal/local bit flipped around ff:fe.
 */
export function eui64In(prefix: readonly number[], mac: string): number[] {
  const b = mac.split(':').map((h) => Number.parseInt(h, 16));
  const byte = (i: number): number => b[i] ?? 0;
  return [prefix[0] ?? 0, prefix[1] ?? 0, prefix[2] ?? 0, prefix[3] ?? 0, ((byte(0) ^ 0x02) << 8) | byte(1), (byte(2) << 8) | 0xff, 0xfe00 | byte(3), (byte(4) << 8) | byte(5)];
}

export interface RouterPortAddresses {
  readonly ipv4: readonly string[];
  readonly ipv6: readonly string[];
}

/** The addresses of a router port's networks ("addr/plen"), unparsable entries left out. */
export function routerPortAddresses(mac: string, networks: readonly string[]): RouterPortAddresses {
  const ipv4: string[] = [];
  const ipv6: string[] = [];
  for (const n of networks) {
    const addr = n.split('/')[0] ?? '';
    const v4 = parseIpv4(addr);
    if (v4 !== undefined) {
      ipv4.push(v4);
      continue;
    }
    const v6 = parseIpv6Groups(addr);
    if (v6 !== undefined) ipv6.push(formatIpv6(v6));
  }
  ipv6.push(linkLocalOf(mac));
  return { ipv4, ipv6 };
}
