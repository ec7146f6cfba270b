// How `ovnts nbctl` reads and prints addresses, and in which order it prints a string map: the
// cases where glibc and OVS differ from a naive parser (wrapping octets, masks, dotted IPv6
// tails, bracketed VIPs). Method: table-driven cases whose answers come from ovn-nbctl 23.03
// and glibc; nbctl-vs-ovn-nbctl.test.ts checks the same code end to end against ovn-nbctl.
import t from 'tap';
import { inetNtop6, inetParseActive, inetPton6, normalizeAddrStr, normalizePrefixStr, scanInt64 } from '../../bin/lib/nbctl/inet.js';
import { smapOrder } from '../../bin/lib/nbctl/smap-order.js';

t.test('prefixes as normalize_prefix_str reads them', async (t) => {
  const cases: [string, string | undefined][] = [
    ['10.0.0.5/24', '10.0.0.0/24'],
    ['10.0.0.1/32', '10.0.0.1'],
    ['10.0.0.0/255.255.255.0', '10.0.0.0/24'],
    ['10.0.0.0/255.0.255.0', undefined], // not a CIDR mask
    ['300.1.1.0/24', '44.1.1.0/24'], // ovs_scan's %hhu keeps the low byte (ovn-nbctl prints 44.1.1.0/24)
    [' 1.2.3.4', '1.2.3.4'], // ovs_scan skips leading blanks
    ['1.2.3.4/33', undefined],
    ['1.2.3', undefined],
    ['fd00::5/64', 'fd00::/64'],
    ['fd00::/64 ', undefined], // nothing may follow
    ['::ffff:1.2.3.4/128', '::ffff:1.2.3.4'],
    ['bogus', undefined],
  ];
  for (const [input, want] of cases) t.equal(normalizePrefixStr(input), want, JSON.stringify(input));
});

t.test('addresses as inet_pton reads them and inet_ntop prints them', async (t) => {
  const cases: [string, string | undefined][] = [
    ['10.0.0.1', '10.0.0.1'],
    ['010.0.0.1', undefined], // glibc refuses leading zeros
    ['10.0.0.256', undefined],
    ['FD00:0:0::1', 'fd00::1'],
    ['1::2::3', undefined],
    ['1:2:3:4:5:6:7::', '1:2:3:4:5:6:7:0'],
    ['1:2:3:4:5:6:7::8', undefined], // "::" must stand for at least one group
    ['::102:304', '::1.2.3.4'],
    ['::ffff:102:304', '::ffff:1.2.3.4'],
    ['0:0:0:0:0:1:0:0', '::1:0:0'],
    ['::1', '::1'],
  ];
  for (const [input, want] of cases) t.equal(normalizeAddrStr(input), want, input);
  t.equal(inetNtop6(inetPton6('::')!), '::');
});

t.test('VIPs and backends as inet_parse_active reads them', async (t) => {
  t.same(inetParseActive('30.0.0.1:80'), { ip: '30.0.0.1', family: 4, port: 80 });
  t.same(inetParseActive('30.0.0.1'), { ip: '30.0.0.1', family: 4, port: 0 });
  t.same(inetParseActive('[fd00::01]:80'), { ip: 'fd00::1', family: 6, port: 80 });
  // More than one colon outside brackets: all of it is the host, no port.
  t.same(inetParseActive('fd00::1:80'), { ip: 'fd00::1:80', family: 6, port: 0 });
  t.equal(inetParseActive('30.0.0.1:65536'), undefined);
  t.equal(inetParseActive(':80'), undefined);
  t.equal(inetParseActive('lb.example:80'), undefined, 'no name resolution');
});

t.test('priorities as ovs_scan reads "%"SCNd64', async (t) => {
  t.equal(scanInt64('100'), 100n);
  t.equal(scanInt64(' +7x'), 7n, 'leading blanks and a sign; what follows the number is ignored');
  t.equal(scanInt64('-1'), -1n);
  t.equal(scanInt64('x1'), undefined);
});

t.test('string maps print in OVS hash order, not sorted', async (t) => {
  // ovn-nbctl printed these options in this order (see nbctl-vs-ovn-nbctl.test.ts).
  const keys = ['lease_time', 'router', 'server_id', 'server_mac'];
  t.same(smapOrder(keys.map((k) => [k, ''] as const)).map(([k]) => k), ['server_mac', 'router', 'server_id', 'lease_time']);
  const seven = ['dns_server', 'domain_name', 'lease_time', 'mtu', 'router', 'server_id', 'server_mac'];
  t.same(smapOrder(seven.map((k) => [k, ''] as const)).map(([k]) => k), ['server_mac', 'router', 'server_id', 'mtu', 'domain_name', 'lease_time', 'dns_server']);
  t.same(smapOrder([]), []);
});
