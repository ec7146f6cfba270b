// `ovnts check-cluster`: stopped members' logs cross-checked for Raft's guarantees. Method:
// hand-written LevelDB stores (agreeing; an uncommitted tail that legitimately differs; a
// committed entry that differs), then a real `ovnts up` cluster written to and stopped.
import { join } from 'node:path';
import t from 'tap';
import { checkCluster } from '../../bin/commands/check-cluster.js';
import { RaftStorage } from '../../cluster/storage.js';
import type { Entry } from '../../cluster/types.js';
import { ovnts, upCluster } from '../helpers/ovnts-cli.js';

const entry = (index: number, term: number, data = index): Entry => ({ index, term, type: 'normal', data: Uint8Array.of(data) });

async function store(dir: string, entries: Entry[], commit: number, term = 2): Promise<void> {
  const s = await RaftStorage.open(dir);
  await s.save({ entries, hardState: { term, vote: 1, commit } });
  await s.close();
}

t.test('agreeing logs, a legitimately different uncommitted tail, a corrupted committed entry', async (t) => {
  const root = t.testdir();
  const common = [entry(1, 1), entry(2, 1), entry(3, 1)];
  await store(join(root, 'a'), [...common, entry(4, 1), entry(5, 1)], 5);
  await store(join(root, 'b'), [...common, entry(4, 1), entry(5, 1)], 5);
  // c lost leadership with entries 4..5 of its own term 2 that never committed.
  await store(join(root, 'c'), [...common, entry(4, 2, 40), entry(5, 2, 50)], 3);
  const ok = await checkCluster(['a', 'b', 'c'].map((d) => join(root, d)));
  t.same(ok.problems, [], 'an uncommitted divergent tail is allowed');
  t.match(ok.lines.at(-1), /3 members read, \d+ entry pairs compared/);

  await store(join(root, 'd'), [entry(1, 1), entry(2, 1), entry(3, 1, 99), entry(4, 1), entry(5, 1)], 5);
  const bad = await checkCluster([join(root, 'a'), join(root, 'd')]);
  t.match(bad.problems, [/log matching broken at index 3/], 'a committed entry that differs is found');

  await store(join(root, 'e'), [entry(1, 1), entry(2, 1), entry(3, 3, 7)], 3, 3);
  const diverged = await checkCluster([join(root, 'a'), join(root, 'e')]);
  t.match(diverged.problems, [/committed entries differ at index 3/], 'two different committed entries at one index');
  const missing = await checkCluster([join(root, 'a'), join(root, 'nope')]);
  t.match(missing.problems, [/nope: no Raft storage here/], 'a folder without a store is reported, not created');
});

t.test('a real cluster, written to and stopped, checks clean', async (t) => {
  const dir = join(t.testdir(), 'c');
  const env = await upCluster(t, dir);
  for (const sw of ['sw0', 'sw1', 'sw2']) t.equal((await ovnts('nbctl', `--endpoints=${env.nbGrpc.join(',')}`, 'ls-add', sw)).code, 0);
  t.equal((await ovnts('down', `--data-dir=${dir}`)).code, 0);
  const r = await ovnts('check-cluster', join(dir, 'n1'), join(dir, 'n2'), join(dir, 'n3'));
  t.equal(r.code, 0, r.stdout + r.stderr);
  t.match(r.stdout, /ok: Raft's guarantees hold across these members/);
});
