// Goal: the Raft core behaves as designed in hand-written scenarios (election, pre-vote,
// check-quorum, figure 8, conflicts, snapshots, membership, transfer, ReadIndex, crashes).
// Method: each tests/testdata/raft/*.txt trace is compared with a reviewed snapshot, and the
// key facts are asserted directly so that a carelessly regenerated snapshot cannot hide a bug.

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { testsDir } from '../helpers/source-tree.js';
import { runScenario, type Scenario } from './scenario.js';

const dir = join(testsDir, 'testdata', 'raft');
// The reviewed traces live beside the scripts. Their keys name the compiled file, which npm test
// runs; regenerate: npm run build:all && npx tap --snapshot dist/tests/cluster/scenarios.test.js
t.snapshotFile = join(dir, 'tap-snapshots', 'scenarios.test.ts.test.cjs');

interface Fact {
  readonly node: number;
  readonly role?: string;
  readonly term?: number;
  readonly commit?: number;
  readonly applied?: number;
}

function check(tt: Test, s: Scenario, facts: readonly Fact[]): void {
  for (const f of facts) {
    const n = s.node(f.node);
    const st = n.raw?.status();
    tt.ok(st !== undefined, `node ${f.node} is running`);
    if (st === undefined) continue;
    if (f.role !== undefined) tt.equal(st.role, f.role, `node ${f.node} role`);
    if (f.term !== undefined) tt.equal(st.term, f.term, `node ${f.node} term`);
    if (f.commit !== undefined) tt.equal(st.commit, f.commit, `node ${f.node} commit`);
    if (f.applied !== undefined) tt.equal(n.appliedIndex, f.applied, `node ${f.node} applied`);
  }
}

const data = (s: Scenario, id: number): string[] => s.node(id).applied.map((a) => a.data);

const expectations: Record<string, (tt: Test, s: Scenario) => void> = {
  'election.txt': (tt, s) => {
    check(tt, s, [
      { node: 1, role: 'leader', term: 2, commit: 3 },
      { node: 2, role: 'follower', term: 2, commit: 3, applied: 3 },
      { node: 3, role: 'follower', term: 2, commit: 3, applied: 3 },
    ]);
    tt.same(data(s, 3), ['hello']);
  },
  'prevote.txt': (tt, s) => {
    // The rejoining node never raised the cluster's term.
    check(tt, s, [
      { node: 1, role: 'leader', term: 2, commit: 3 },
      { node: 3, role: 'follower', term: 2, commit: 3 },
    ]);
  },
  'check-quorum.txt': (tt, s) => {
    check(tt, s, [
      { node: 1, role: 'follower', term: 3 },
      { node: 2, role: 'leader', term: 3, commit: 3 },
      { node: 3, role: 'follower', term: 3 },
    ]);
  },
  'figure-8.txt': (tt, s) => {
    check(tt, s, [
      { node: 5, role: 'leader', term: 5, commit: 5 },
      { node: 2, commit: 5 },
      { node: 3, commit: 5 },
    ]);
    // The term-2 entry "a" was on a majority but never committed; it is gone, "b" won.
    for (const id of [2, 3, 4, 5]) tt.same(data(s, id), ['b'], `node ${id} applied only "b"`);
  },
  'log-conflict.txt': (tt, s) => {
    check(tt, s, [
      { node: 2, role: 'leader', term: 4, commit: 7 },
      { node: 3, role: 'follower', term: 4, commit: 7, applied: 7 },
    ]);
    tt.same(data(s, 3), ['y1', 'y2', 'y3']);
  },
  'snapshot.txt': (tt, s) => {
    check(tt, s, [
      { node: 1, role: 'leader', commit: 6 },
      { node: 3, role: 'follower', commit: 6, applied: 6 },
    ]);
    tt.equal(s.node(3).disk.snapshot?.meta.index, 4, 'node 3 installed the snapshot at 4');
    tt.same(data(s, 3), ['a', 'b', 'c', 'd']);
  },
  'membership.txt': (tt, s) => {
    const st = s.node(1).raw?.status();
    tt.same(st?.conf.voters, [1, 2, 4, 5]);
    tt.same(st?.conf.learners, []);
    tt.same(st?.conf.removed, [3]);
    check(tt, s, [
      { node: 1, role: 'leader', term: 2, commit: 7 },
      { node: 3, role: 'follower', term: 2 },
      { node: 5, commit: 7, applied: 7 },
    ]);
  },
  'transfer.txt': (tt, s) => {
    check(tt, s, [
      { node: 3, role: 'leader', term: 3, commit: 5 },
      { node: 2, role: 'follower', term: 3, commit: 5 },
    ]);
    tt.same(data(s, 2), ['a', 'c'], 'proposals during a transfer were dropped');
  },
  'read-index.txt': (tt, s) => {
    tt.same(s.node(1).reads, [{ index: 3, ctx: 'r1' }]);
    tt.same(s.node(2).reads, [{ index: 3, ctx: 'r2' }]);
  },
  'crash-restart.txt': (tt, s) => {
    check(tt, s, [
      { node: 1, role: 'leader', commit: 4 },
      { node: 2, commit: 4, applied: 4 },
    ]);
    tt.equal(s.node(2).raw?.status().electionTicks, 20);
    tt.equal(s.node(3).raw?.status().electionTicks, 20);
  },
};

const files = readdirSync(dir).filter((f) => f.endsWith('.txt')).sort();
t.ok(files.length >= 10, 'scenario files found');
for (const file of files) {
  t.test(file, (tt) => {
    const { trace, scenario } = runScenario(readFileSync(join(dir, file), 'utf8'));
    tt.matchSnapshot(trace, 'trace');
    const expect = expectations[file];
    tt.ok(expect !== undefined, `facts for ${file} are checked`);
    expect?.(tt, scenario);
    tt.end();
  });
}
