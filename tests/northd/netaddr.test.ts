// Address parsing as ovn-northd does it (lport_addresses): LSP address entries, router port
// networks with their derived addresses, and the lookups flows use. Method: a table of inputs
// and the texts ovn-northd prints for them.
import t from 'tap';
import { ethAddrFromString, extractIpAddresses, extractLrpNetworks, extractLspAddresses, extractLspIps, findLportAddress, ipv4Text, ipv4Value, ipv6InMasked, isPrintedIpv4, isDynamicAddress, parseIpv6Masked, solicitedNodeMac, v4NetworksText, v6NetworksText } from '../../northd/netaddr.js';
import { parseIpv4, parseIpv6Groups } from '../../northd/addresses.js';

t.test('LSP address entries', async (t) => {
  const a = extractLspAddresses('0A:0:0:0:1:a 10.0.0.5 fd00::5 192.168.1.9/24 junk 10.9.9.9');
  t.equal(a?.ea, '0a:00:00:00:01:0a', 'the MAC normalized');
  t.same(a?.ipv4.map((x) => [x.addrS, x.plen, x.networkS, x.bcastS]), [['10.0.0.5', 32, '10.0.0.5', '10.0.0.5'], ['192.168.1.9', 24, '192.168.1.0', '192.168.1.255']], 'IPv4 up to the first token that is no address');
  t.same(a?.ipv6.map((x) => [x.addrS, x.plen, x.snAddrS]), [['fd00::5', 128, 'ff02::1:ff00:5']]);
  t.equal(extractLspAddresses('unknown'), undefined, 'no MAC, no entry');
  t.equal(extractLspAddresses('router'), undefined);
  t.same(extractIpAddresses('172.16.0.1 fd00::1')?.ipv6.map((x) => x.addrS), ['fd00::1']);
  t.equal(extractIpAddresses('bogus'), undefined);
});

t.test('router port networks', async (t) => {
  const n = extractLrpNetworks('00:00:00:00:ff:01', ['10.0.1.1/24', '0.0.0.0/8', 'fd00:1::1/64', 'nonsense', '10.0.2.1/16']);
  t.ok(n !== undefined);
  if (n === undefined) return;
  t.same(n.ipv4.map((x) => `${x.addrS} ${x.networkS}/${x.plen} ${x.bcastS}`), ['10.0.1.1 10.0.1.0/24 10.0.1.255', '10.0.2.1 10.0.0.0/16 10.0.255.255'], '0.0.0.0 is left out');
  t.same(n.ipv6.map((x) => `${x.addrS} ${x.networkS}/${x.plen} ${x.snAddrS} ${x.isLla}`), [
    'fd00:1::1 fd00:1::/64 ff02::1:ff00:1 false',
    'fe80::200:ff:fe00:ff01 fe80::/64 ff02::1:ff00:ff01 true',
  ], 'the link-local address is always last');
  t.equal(v4NetworksText(n, false), '{10.0.1.1, 10.0.2.1}');
  t.equal(v4NetworksText(n, true), '{10.0.1.1, 10.0.1.255, 10.0.2.1, 10.0.255.255}');
  t.equal(v6NetworksText(n), '{fd00:1::1, fe80::200:ff:fe00:ff01}');
  const one = extractLrpNetworks('00:00:00:00:ff:02', ['192.168.0.1/24']);
  t.equal(one === undefined ? undefined : v4NetworksText(one, false), '192.168.0.1', 'a single address is written bare');
  t.equal(extractLrpNetworks('not-a-mac', ['10.0.0.1/24']), undefined);
  t.equal(findLportAddress(n, '10.0.1.77'), '10.0.1.1');
  t.equal(findLportAddress(n, '10.0.77.1'), '10.0.2.1');
  t.equal(findLportAddress(n, '10.1.0.1'), undefined);
  t.equal(findLportAddress(n, 'fd00:1::99'), 'fd00:1::1');
  t.equal(findLportAddress(n, 'fe80::1'), 'fe80::200:ff:fe00:ff01');
  t.equal(solicitedNodeMac(parseIpv6Groups('fd00:64::2') as number[]), '33:33:ff:00:00:02');
});

t.test('dynamic address entries', async (t) => {
  for (const [entry, want] of [['dynamic', true], ['dynamic 10.0.0.5', true], ['0a:00:00:00:00:01 dynamic', true], ['0a:00:00:00:00:01 10.0.0.1', false], ['dynamically', false], ['bogus dynamic', false]] as const) {
    t.equal(isDynamicAddress(entry), want, entry);
  }
});

t.test('DHCPv6 CIDRs as ipv6_parse_masked reads them', async (t) => {
  const inside = parseIpv6Groups('fd00:1::5') as number[];
  const outside = parseIpv6Groups('fd00:2::5') as number[];
  for (const cidr of ['fd00:1::/64', ' fd00:1::/64', 'fd00:1::/ffff:ffff:ffff:ffff::', 'fd00:1::/+64']) {
    const c = parseIpv6Masked(cidr);
    t.ok(c !== undefined && ipv6InMasked(inside, c) && !ipv6InMasked(outside, c), `${cidr} holds fd00:1::5 only`);
  }
  t.ok(ipv6InMasked(inside, parseIpv6Masked('fd00:1::5') as { addr: number[]; mask: number[] }), 'no prefix: the address itself');
  t.notOk(ipv6InMasked(inside, parseIpv6Masked('fd00:1::6') as { addr: number[]; mask: number[] }));
  t.ok(ipv6InMasked(outside, parseIpv6Masked('::/0') as { addr: number[]; mask: number[] }), '/0 holds everything');
  t.same(parseIpv6Masked('::ffff:10.0.0.1/120')?.addr, [0, 0, 0, 0, 0, 0xffff, 0x0a00, 1], 'a dotted IPv4 tail');
  t.same(parseIpv6Masked('fd00:1::/ 64')?.mask, parseIpv6Masked('fd00:1::/64')?.mask, 'white space before the prefix length');
  // Each checked against the real ovn-northd 23.03.1 (offer or no offer).
  for (const bad of ['fd00:1::/129', 'fd00:1::/-1', 'fd00:1::/64 ', 'fd00:1::/64x', 'bogus', '', '10.0.0.0/8', 'fd00:1::/', '::ffff:10.0.0.256']) {
    t.equal(parseIpv6Masked(bad), undefined, `"${bad}" is refused`);
  }
});

t.test('MACs as eth_addr_from_string reads them', async (t) => {
  t.same(ethAddrFromString('00:00:00:00:ff:01'), [0, 0, 0, 0, 0xff, 1]);
  t.same(ethAddrFromString('0:0:0:0:ff:3'), [0, 0, 0, 0, 0xff, 3], 'one digit per byte');
  t.same(ethAddrFromString('0A:0b:0:0:0x1:100'), [0x0a, 0x0b, 0, 0, 1, 0], 'a 0x prefix; only the low byte of a wider number counts');
  t.same(ethAddrFromString(' 0:0:0:0:0:1'), [0, 0, 0, 0, 0, 1], 'leading white space is skipped');
  // Checked against the real ovn-northd 23.03.1 (the link-local address of its DHCPv6 flows).
  t.same(ethAddrFromString('0:0:0:0:0:11111111111111111'), [0, 0, 0, 0, 0, 0x11], 'no overflow check');
  t.same(ethAddrFromString('0:0:0:0:0:-1'), [0, 0, 0, 0, 0, 0xff], 'a sign');
  t.same(ethAddrFromString('0:0:0:0:0:+2'), [0, 0, 0, 0, 0, 2]);
  for (const bad of ['not-a-mac', '00:00:00:00:00', '00:00:00:00:00:01 ', '00:00:00:00:00:01:02', '00-00-00-00-00-01', '', '0:0:0:0:0:0x']) {
    t.equal(ethAddrFromString(bad), undefined, `"${bad}" is refused`);
  }
});

t.test('ipv4Value reads what parseIpv4 reads', async (t) => {
  // The reference: parseIpv4's regular expression, then the fields as one 32-bit value.
  const reference = (s: string): number | undefined => {
    const dotted = parseIpv4(s);
    return dotted === undefined ? undefined : dotted.split('.').reduce((acc, p) => ((acc << 8) | Number(p)) >>> 0, 0);
  };
  const texts = ['', '1.2.3.4', '0.0.0.0', '255.255.255.255', '256.1.1.1', '1.2.3.256', '01.002.3.4', '1.2.3', '1.2.3.4.5', '1..3.4', '.1.2.3', '1.2.3.4 ', ' 1.2.3.4', '1.2.3.4\n', '1234.1.1.1', '1.2.3.0004', '10.1.0.10', 'a.b.c.d', '1.2.3.4/24', '1.2.3.٣'];
  // Random near-addresses: three to five fields of zero to four digits, sometimes a stray character.
  let x = 12345;
  const next = (m: number): number => {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    return (x >>> 16) % m;
  };
  for (let n = 0; n < 3000; n++) {
    const fields: string[] = [];
    const count = next(10) === 0 ? 3 + next(3) : 4;
    for (let f = 0; f < count; f++) fields.push(Array.from({ length: next(8) === 0 ? next(5) : 1 + next(3) }, () => String(next(10) < 3 ? 2 + next(4) : next(10))).join(''));
    let s = fields.join('.');
    if (next(6) === 0) {
      const at = next(s.length + 1);
      s = s.slice(0, at) + (' x/.-'[next(5)] as string) + s.slice(at);
    }
    texts.push(s);
  }
  let parsed = 0;
  for (const s of texts) {
    const want = reference(s);
    if (want !== undefined) parsed++;
    t.equal(ipv4Value(s), want, JSON.stringify(s));
  }
  t.ok(parsed > 500, `${parsed} of the texts are addresses`);
});

t.test('isPrintedIpv4 holds exactly for the texts ipv4Text prints', async (t) => {
  // The reference: read the text, print its value, compare.
  const reference = (s: string): boolean => {
    const v = ipv4Value(s);
    return v !== undefined && ipv4Text(v) === s;
  };
  const texts = ['', '1.2.3.4', '0.0.0.0', '255.255.255.255', '256.1.1.1', '01.2.3.4', '1.2.3.04', '00.0.0.0', '1.2.3.00', '10.1.0.10', '1.2.3', '1.2.3.4.5', '1.2.3.4/32', ' 1.2.3.4', '1.2.3.4 ', '1234.1.1.1', '1.2.3.٣'];
  let x = 99;
  const next = (m: number): number => {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    return (x >>> 16) % m;
  };
  for (let n = 0; n < 3000; n++) {
    const fields: string[] = [];
    for (let f = 0; f < (next(10) === 0 ? 3 + next(3) : 4); f++) fields.push(Array.from({ length: next(8) === 0 ? next(5) : 1 + next(3) }, () => String(next(10) < 3 ? 2 + next(4) : next(10))).join(''));
    texts.push(fields.join('.'));
  }
  let printed = 0;
  for (const s of texts) {
    if (reference(s)) printed++;
    t.equal(isPrintedIpv4(s), reference(s), JSON.stringify(s));
  }
  t.ok(printed > 300, `${printed} of the texts are printed addresses`);
  t.same(extractLspAddresses('0a:00:00:00:00:01 010.0.0.6 10.0.0.7')?.ipv4.map((a) => a.addrS), ['10.0.0.6', '10.0.0.7'], 'an address with leading zeros printed as ovn-northd prints it');
});

t.test('extractLspIps gives the addresses extractLspAddresses parses', async (t) => {
  // Entries from pieces: MACs good and bad, IPv4 and IPv6 with and without prefixes, junk,
  // separated by single spaces or other white space.
  const pieces = ['0a:00:00:00:00:01', '0A:0:0:0:0:2', 'zz:00:00:00:00:01', '10.0.0.5', '010.0.0.6', '192.168.1.9/24', '10.0.0.300', 'fd00::5', 'FD00::6/64', 'fe80::1/129', 'junk', '', ' ', '  ', '\t', '\u00a0', 'é'];
  const seps = [' ', ' ', ' ', '  ', '\t', ' \n'];
  let x = 7;
  const next = (m: number): number => {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    return (x >>> 16) % m;
  };
  let withIps = 0;
  for (let n = 0; n < 2000; n++) {
    const count = 1 + next(5);
    let entry = next(4) === 0 ? (pieces[next(pieces.length)] as string) : (pieces[next(3)] as string);
    for (let i = 1; i < count; i++) entry += (seps[next(seps.length)] as string) + (pieces[3 + next(pieces.length - 3)] as string);
    if (next(10) === 0) entry = ` ${entry}`;
    const parsed = extractLspAddresses(entry);
    const v4: string[] = [];
    const v6: string[] = [];
    extractLspIps(entry, v4, v6);
    t.same([v4, v6], [parsed?.ipv4.map((a) => a.addrS) ?? [], parsed?.ipv6.map((a) => a.addrS) ?? []], JSON.stringify(entry));
    if (v4.length + v6.length > 0) withIps++;
  }
  t.ok(withIps > 300, `${withIps} entries with addresses`);
});
