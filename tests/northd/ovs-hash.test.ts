// OVS's hash_string and sset iteration order, against orders the real ovn-northd 23.03.1 wrote
// (the self-originated ARP flood flow's eth.src set, seen in differential scenarios (l), (n)).
import t from 'tap';
import { ovsHashString, ssetOrder } from '../../northd/ovs-hash.js';

t.test('sset orders seen in the real SB', async (t) => {
  t.same(ssetOrder(['00:00:00:00:ff:02', '00:00:00:00:ee:10']), ['00:00:00:00:ff:02', '00:00:00:00:ee:10']);
  t.same(ssetOrder(['00:00:00:00:ff:02', '00:00:00:00:ee:11']), ['00:00:00:00:ee:11', '00:00:00:00:ff:02']);
  t.same(ssetOrder(['00:00:00:00:ff:03', '00:00:00:00:ee:11']), ['00:00:00:00:ee:11', '00:00:00:00:ff:03']);
});

t.test('sset: duplicates once, every element kept as the set grows', async (t) => {
  const items = Array.from({ length: 40 }, (_, i) => `0a:00:00:00:00:${i.toString(16).padStart(2, '0')}`);
  const order = ssetOrder([...items, ...items.slice(0, 5)]);
  t.equal(order.length, items.length);
  t.same([...order].sort(), [...items].sort());
  t.not(order.join(), items.join(), 'not insertion order');
});

t.test('hash_string: 32-bit, deterministic, basis and tail bytes count', async (t) => {
  const h = ovsHashString('00:00:00:00:ff:02');
  t.ok(Number.isInteger(h) && h >= 0 && h <= 0xffffffff);
  t.equal(ovsHashString('00:00:00:00:ff:02'), h);
  t.not(ovsHashString('00:00:00:00:ff:02', 1), h);
  t.not(ovsHashString('abcde'), ovsHashString('abcd'));
});
