// Goal: the majority arithmetic and the seeded PRNG the Raft core relies on are right.
// Method: compare committedIndex and voteResult with a brute-force reference on random
// inputs; check the PRNG is deterministic per seed and stays in range.

import t from 'tap';
import { Prng } from '../../cluster/prng.js';
import { committedIndex, voteResult } from '../../cluster/quorum.js';

t.test('committedIndex is the largest index a majority has', (tt) => {
  const rng = new Prng(7);
  for (let round = 0; round < 2000; round++) {
    const n = 1 + rng.nextInt(7);
    const voters = Array.from({ length: n }, (_, i) => i + 1);
    const match = new Map(voters.map((id) => [id, rng.nextInt(10)]));
    // Reference: the largest i such that more than half of the voters have match >= i.
    let expected = 0;
    for (let i = 0; i <= 10; i++) {
      if (voters.filter((id) => (match.get(id) ?? 0) >= i).length * 2 > n) expected = i;
    }
    tt.equal(committedIndex(voters, (id) => match.get(id) ?? 0), expected);
  }
  tt.end();
});

t.test('voteResult decides as soon as the outcome is certain', (tt) => {
  const rng = new Prng(11);
  for (let round = 0; round < 2000; round++) {
    const n = 1 + rng.nextInt(7);
    const voters = Array.from({ length: n }, (_, i) => i + 1);
    const votes = new Map<number, boolean>();
    for (const id of voters) if (rng.chance(0.7)) votes.set(id, rng.chance(0.5));
    const yes = [...votes.values()].filter((v) => v).length;
    const no = [...votes.values()].filter((v) => !v).length;
    const expected = yes * 2 > n ? 'won' : (n - no) * 2 <= n ? 'lost' : 'pending';
    tt.equal(voteResult(voters, votes), expected);
  }
  tt.end();
});

t.test('Prng is deterministic and in range', (tt) => {
  const a = new Prng(42);
  const b = new Prng(42);
  const c = new Prng(43);
  const sa = Array.from({ length: 100 }, () => a.nextInt(1000));
  const sb = Array.from({ length: 100 }, () => b.nextInt(1000));
  const sc = Array.from({ length: 100 }, () => c.nextInt(1000));
  tt.same(sa, sb, 'same seed, same sequence');
  tt.not(sa.join(), sc.join(), 'another seed, another sequence');
  const counts = new Array<number>(10).fill(0);
  for (let i = 0; i < 10_000; i++) {
    const v = a.nextInt(10);
    tt.ok(v >= 0 && v < 10);
    counts[v] = (counts[v] ?? 0) + 1;
  }
  tt.ok(counts.every((k) => k > 800 && k < 1200), `roughly uniform: ${counts.join(' ')}`);
  tt.end();
});
