// KeySpace: requested tunnel keys decided as ovn-northd 23.03 decides them, deterministically.
// Each case states a pass's changes and what every owner holds after settle.
import t from 'tap';
import { KeySpace } from '../../northd/tunnel-keys.js';

/** Owners added in id order with no request, settled: they hold 1..n. */
function spaceOf(owners: readonly string[], max = 10, limit = max): KeySpace {
  const s = new KeySpace(1, max, limit);
  for (const o of owners) s.add(o);
  s.settle();
  s.takeChanged();
  return s;
}

const keysOf = (s: KeySpace, owners: readonly string[]): Record<string, number | undefined> => Object.fromEntries(owners.map((o) => [o, s.keyOf(o)]));

t.test('new owners take the lowest free keys in id order; keys stay while nothing is requested', async (t) => {
  const s = new KeySpace(1, 10);
  for (const o of ['c', 'a', 'b']) s.add(o);
  t.same(s.settle(), []);
  t.same(keysOf(s, ['a', 'b', 'c']), { a: 1, b: 2, c: 3 });
  t.same(s.takeChanged(), ['a', 'b', 'c']);
  s.remove('a');
  s.add('d');
  s.settle();
  t.same(keysOf(s, ['b', 'c', 'd']), { b: 2, c: 3, d: 1 }, 'a freed key is the lowest free one');
  t.same(s.takeChanged(), ['a', 'd']);
  s.settle();
  t.same(s.takeChanged(), [], 'a pass with no change moves nothing');
});

t.test('a request takes the key from an owner that did not ask for it, which takes the lowest free one', async (t) => {
  const s = spaceOf(['a', 'b', 'c']);
  s.request('c', 1);
  s.settle();
  t.same(keysOf(s, ['a', 'b', 'c']), { a: 3, b: 2, c: 1 }, "c's old key 3 is the lowest free one for a");
  t.same(s.takeChanged(), ['a', 'c']);
});

t.test('a new owner asking for a held key gets it at once', async (t) => {
  const s = spaceOf(['a', 'b']);
  s.add('n');
  s.request('n', 2);
  s.settle();
  t.same(keysOf(s, ['a', 'b', 'n']), { a: 1, b: 3, n: 2 });
});

t.test('two asking for one key: the one holding it keeps it, else the lowest id', async (t) => {
  const s = spaceOf(['a', 'b', 'c']);
  s.request('b', 2);
  s.request('a', 2);
  s.settle();
  t.same(keysOf(s, ['a', 'b', 'c']), { a: 1, b: 2, c: 3 }, 'b holds 2: it keeps it, a keeps its own');
  s.request('c', 5);
  s.request('a', 5);
  s.settle();
  t.same(keysOf(s, ['a', 'b', 'c']), { a: 5, b: 2, c: 3 }, 'nobody held 5: the lowest id, a');
  t.same(s.takeChanged(), ['a']);
});

t.test('a key freed goes to an owner still asking for it, and that owner frees its own', async (t) => {
  const s = spaceOf(['a', 'b', 'c', 'd']);
  s.request('b', 1); // b takes 1, a goes to 2
  s.request('c', 1); // c waits for 1
  s.request('d', 2); // d waits for 2? 2 was b's: freed, a took it at allocation... d's request beats a
  s.settle();
  t.same(keysOf(s, ['a', 'b', 'c', 'd']), { a: 4, b: 1, c: 3, d: 2 });
  s.takeChanged();
  s.remove('b');
  s.settle();
  t.same(keysOf(s, ['a', 'c', 'd']), { a: 4, c: 1, d: 2 }, "b's key goes to c, c's old key 3 stays free");
  t.same(s.takeChanged(), ['b', 'c']);
  s.add('e');
  s.settle();
  t.equal(s.keyOf('e'), 3);
});

t.test('clearing a request keeps the key; changing it moves the owner', async (t) => {
  const s = spaceOf(['a', 'b']);
  s.request('a', 7);
  s.settle();
  t.equal(s.keyOf('a'), 7);
  s.request('a', undefined);
  s.settle();
  t.equal(s.keyOf('a'), 7, 'kept without the request, as ovn-northd keeps a nonconflicting key');
  s.request('b', 7);
  s.settle();
  t.same(keysOf(s, ['a', 'b']), { a: 1, b: 7 }, 'an owner asking takes it from one that no longer asks');
});

t.test('requests within (max, limit] are kept, never allocated; others are ignored', async (t) => {
  const s = spaceOf(['a', 'b'], 10, 20);
  s.request('a', 15);
  s.request('b', 21);
  s.settle();
  t.same(keysOf(s, ['a', 'b']), { a: 15, b: 2 });
  t.notOk(s.requestable(0));
  t.notOk(s.requestable(21));
  t.notOk(s.requestable(2.5));
  t.ok(s.requestable(20));
  for (let i = 0; i < 9; i++) s.add(`n${i}`);
  s.settle();
  t.same([...Array(9).keys()].map((i) => s.keyOf(`n${i}`)), [1, 3, 4, 5, 6, 7, 8, 9, 10], 'allocation stops at max');
});

t.test('an exhausted space leaves owners without a key until one is free', async (t) => {
  const s = spaceOf(['a', 'b'], 2);
  s.add('c');
  t.same(s.settle(), ['c']);
  t.equal(s.keyOf('c'), undefined);
  t.ok(s.has('c'));
  s.request('c', 1);
  s.settle();
  t.same(keysOf(s, ['a', 'b', 'c']), { a: undefined, b: 2, c: 1 }, 'a request still takes a key: the holder waits instead');
  s.takeChanged();
  s.remove('b');
  t.same(s.settle(), []);
  t.same(keysOf(s, ['a', 'c']), { a: 2, c: 1 });
  t.same(s.takeChanged(), ['a', 'b']);
});

t.test('a recompute from the keys held before gives the same keys as the passes that led there', async (t) => {
  // Random passes over eight owners; after each, a fresh space given every owner's key as
  // its memory (keep) and every request must hold exactly the same keys.
  let seed = 7;
  const rnd = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed % n;
  };
  const ids = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];
  const s = new KeySpace(1, 6, 9);
  const requests = new Map<string, number>();
  for (let pass = 0; pass < 400; pass++) {
    for (let k = rnd(3); k >= 0; k--) {
      const o = ids[rnd(ids.length)] as string;
      const what = rnd(4);
      if (what === 0 && s.has(o)) {
        s.remove(o);
        requests.delete(o);
      } else if (what === 1 && !s.has(o)) {
        s.add(o);
      } else if (s.has(o)) {
        const key = rnd(3) === 0 ? undefined : 1 + rnd(10);
        s.request(o, key);
        if (key === undefined) requests.delete(o);
        else requests.set(o, key);
      }
    }
    s.settle();
    const fresh = new KeySpace(1, 6, 9);
    const present = ids.filter((o) => s.has(o));
    for (const o of present) fresh.add(o);
    for (const o of present) {
      const k = s.keyOf(o);
      if (k !== undefined) fresh.keep(o, k);
      fresh.request(o, requests.get(o));
    }
    fresh.settle();
    const a = keysOf(s, present);
    const b = keysOf(fresh, present);
    if (JSON.stringify(a) !== JSON.stringify(b)) {
      t.same(b, a, `pass ${pass}`);
      return;
    }
    // Every key requested (and requestable) is held by one of its requesters.
    for (const [o, k] of requests) {
      if (!s.requestable(k)) continue;
      const holders = present.filter((x) => s.keyOf(x) === k);
      if (holders.length !== 1 || requests.get(holders[0] as string) !== k) {
        t.fail(`pass ${pass}: key ${k} asked for by ${o} is held by ${holders.join(',') || 'nobody'}`);
        return;
      }
    }
  }
  t.pass('400 passes agree with a recompute, and every request is honoured');
});
