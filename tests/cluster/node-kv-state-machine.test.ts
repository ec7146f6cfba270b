// Goal: the test key-value state machine is deterministic (same commands, same bytes), answers
// with the previous value, treats bad commands as no-ops, and round-trips through snapshots.
// Method: direct calls with hand-made entries; snapshots compared as bytes.

import t from 'tap';
import { KvStateMachine, encodeKvCommand, type KvCommand } from '../../cluster/kv-state-machine.js';
import type { Entry } from '../../cluster/types.js';

let index = 0;
function entry(c: KvCommand | Uint8Array): Entry {
  const data = c instanceof Uint8Array ? c : encodeKvCommand(c);
  return { term: 1, index: ++index, type: 'normal', data };
}

t.test('put, delete, cas return the previous value', async (t) => {
  const kv = new KvStateMachine();
  t.same(kv.apply(entry({ op: 'put', key: 'a', value: '1' }), false), { kind: 'done', previous: null });
  t.same(kv.apply(entry({ op: 'put', key: 'a', value: '2' }), false), { kind: 'done', previous: '1' });
  t.same(kv.apply(entry({ op: 'cas', key: 'a', expected: '1', value: '3' }), false), { kind: 'cas-failed', previous: '2' });
  t.same(kv.apply(entry({ op: 'cas', key: 'a', expected: '2', value: '3' }), false), { kind: 'done', previous: '2' });
  const fresh = kv.apply(entry({ op: 'cas', key: 'b', expected: null, value: Uint8Array.of(7) }), false);
  t.same(fresh, { kind: 'done', previous: null }, 'cas on an absent key');
  t.same(kv.get('b'), Uint8Array.of(7), 'bytes values');
  t.same(kv.apply(entry({ op: 'delete', key: 'a' }), false), { kind: 'done', previous: '3' });
  t.equal(kv.get('a'), undefined);
  t.same(kv.apply(entry({ op: 'put', key: 'z', value: 'x' }), true), { kind: 'duplicate' }, 'a duplicate changes nothing');
  t.equal(kv.get('z'), undefined);
});

t.test('bad commands are deterministic no-ops', async (t) => {
  const kv = new KvStateMachine();
  const before = kv.snapshot();
  const garbage = kv.apply(entry(Uint8Array.of(0xc1)), false) as { kind: string };
  t.equal(garbage.kind, 'invalid', 'undecodable bytes');
  const numericKey = { op: 'put', key: 1, value: 'x' } as unknown as KvCommand;
  const noKey = kv.apply(entry(encodeKvCommand(numericKey)), false) as { kind: string };
  t.equal(noKey.kind, 'invalid', 'a non-string key');
  const op = kv.apply(entry(encodeKvCommand({ op: 'incr', key: 'a' } as unknown as KvCommand)), false) as { kind: string };
  t.equal(op.kind, 'invalid', 'an unknown op');
  t.same(kv.snapshot(), before, 'state unchanged');
});

t.test('snapshots are sorted bytes and restore exactly', async (t) => {
  const a = new KvStateMachine();
  const b = new KvStateMachine();
  for (const k of ['x', 'b', 'm']) a.apply(entry({ op: 'put', key: k, value: k.toUpperCase() }), false);
  for (const k of ['m', 'x', 'b']) b.apply(entry({ op: 'put', key: k, value: k.toUpperCase() }), false);
  t.same(a.snapshot(), b.snapshot(), 'insertion order does not show in the bytes');
  const c = new KvStateMachine();
  c.apply(entry({ op: 'put', key: 'gone', value: 'soon' }), false);
  c.restore(a.snapshot());
  t.equal(c.get('gone'), undefined, 'restore replaces the whole state');
  t.equal(c.get('m'), 'M');
  t.same(c.snapshot(), a.snapshot(), 'round trip');
});
