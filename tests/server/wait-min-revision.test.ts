// Wait with min_revision (the revision of the write the target was read from): answered from
// the member's own state without a ReadIndex round, and never from a state before that write.
// Method: three in-process members; the ReadIndex counter, and a follower cut off from the rest.
import * as grpc from '@grpc/grpc-js';
import t from 'tap';
import type { CentralMember } from '../helpers/central-cluster.js';
import { startCentralCluster } from '../helpers/central-cluster.js';
import { testdirAfterTeardowns } from '../helpers/testdir.js';

const setNbCfg = (n: number): unknown[] => [{ op: 'update', table: 'NB_Global', where: [], row: { nb_cfg: n } }];

t.test('Wait with min_revision: no ReadIndex round, and no answer from before the write', async (t) => {
  const { members, network, stop } = await startCentralCluster(testdirAfterTeardowns(t));
  t.teardown(stop);
  const leader = members.find((m) => m.central.node.status().role === 'leader') as CentralMember;
  const follower = members.find((m) => m !== leader) as CentralMember;
  await leader.client.transact([{ op: 'insert', table: 'NB_Global', row: {} }]);
  const five = await leader.client.transact(setNbCfg(5));
  t.equal(five.failed, false);

  const reads = (): number => follower.central.node.status().counters.readsServed;
  const before = reads();
  t.match(await follower.client.wait(5, 'sb', 10_000, five.revision), { sbCfg: 5 }, 'reached, on a follower');
  t.ok((await follower.client.wait(5, 'hv', 10_000, five.revision)).revision >= five.revision, 'answered from a state that holds the write');
  t.equal(reads(), before, 'with min_revision: no ReadIndex round');
  await follower.client.wait(5, 'sb', 10_000);
  t.equal(reads(), before + 1, 'without it: one ReadIndex round');

  // nb_cfg set lower while the follower is cut off: its state (sb_cfg 5) already "reaches" 1,
  // but it is a state before the write, so the Wait must not answer from it.
  network.isolate(follower.central.id);
  const one = await leader.client.transact(setNbCfg(1));
  t.equal(one.failed, false);
  t.ok(follower.central.revision < one.revision, 'the follower has not applied the write');
  await t.rejects(follower.client.wait(1, 'sb', 300, one.revision), { code: grpc.status.DEADLINE_EXCEEDED }, 'no answer from a state before the write');
  const pending = follower.client.wait(1, 'sb', 20_000, one.revision);
  network.heal();
  const s = await pending;
  t.ok(s.revision >= one.revision, 'answered once the write is applied there');
  t.equal(s.nbCfg, 1);
  await t.rejects(leader.central.waitCfg(1, 'sb', 1000, -1), /min_revision must be a revision/, 'a min_revision that is no revision is refused');
});
