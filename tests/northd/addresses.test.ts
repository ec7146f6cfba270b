// Router port address handling: IPv4/IPv6 parsing and RFC 5952 printing as inet_ntop does, and
// the EUI-64 link-local address OVN derives from a MAC. Method: table of inputs and outputs.
import t from 'tap';
import { formatIpv6, linkLocalOf, parseIpv4, parseIpv6Groups, routerPortAddresses } from '../../northd/addresses.js';

t.test('IPv6 text', async (t) => {
  const cases: [string, string | undefined][] = [
    ['fd00::1', 'fd00::1'],
    ['FD00:0:0:0:0:0:0:1', 'fd00::1'],
    ['2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1'],
    ['2001:0db8:0000:0001:0000:0000:0000:0001', '2001:db8:0:1::1'],
    ['::', '::'],
    ['::1', '::1'],
    ['1::', '1::'],
    ['1:0:2:3:4:5:6:7', '1:0:2:3:4:5:6:7'],
    ['1:::2', undefined],
    ['1:2:3:4:5:6:7', undefined],
    ['10.0.0.1', undefined],
  ];
  for (const [input, want] of cases) {
    const g = parseIpv6Groups(input);
    t.equal(g === undefined ? undefined : formatIpv6(g), want, input);
  }
});

t.test('IPv4, link-local and router port networks', async (t) => {
  t.equal(parseIpv4('10.0.0.254'), '10.0.0.254');
  t.equal(parseIpv4('10.0.0.256'), undefined);
  t.equal(linkLocalOf('00:00:00:00:ff:01'), 'fe80::200:ff:fe00:ff01');
  t.equal(linkLocalOf('0a:00:00:00:ff:02'), 'fe80::800:ff:fe00:ff02');
  t.same(routerPortAddresses('00:00:00:00:ff:02', ['172.16.0.1/24', 'fd00:ab::1/64', 'junk/8']), {
    ipv4: ['172.16.0.1'],
    ipv6: ['fd00:ab::1', 'fe80::200:ff:fe00:ff02'],
  });
});
