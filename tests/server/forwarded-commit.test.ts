// A write a follower forwards to the leader is answered once the follower applied it: the
// leader sends its commit index at once (TransactOptions.forwarded), rather than holding it
// for an append that the follower's serial client cannot send before that answer.
import t from 'tap';
import { startCentralCluster } from '../helpers/central-cluster.js';
import { testdirAfterTeardowns } from '../helpers/testdir.js';

t.test('serial writes through a follower are not held for the leader\'s next append or heartbeat', async (t) => {
  // Heartbeats every 300 ms and a linger far longer: a held commit index would reach the
  // follower only with the next heartbeat, about 150 ms later on average, so ten held writes
  // would take about 1.5 s (less than 0.8 s about once in 200 runs). Not held, they took 429 ms
  // at worst on a machine running other suites beside this one. (Longer ticks would set the
  // first election, 10 to 20 ticks, beyond the 10 s the cluster helper waits.)
  const cluster = await startCentralCluster(testdirAfterTeardowns(t), { tickMs: 300, commitLingerMs: 5_000 });
  t.teardown(() => cluster.stop());
  const follower = cluster.members.find((m) => m.central.node.status().role !== 'leader');
  if (follower === undefined) throw new Error('no follower');
  await follower.client.transact([{ op: 'insert', table: 'Logical_Switch', row: { name: 'warm' } }]);
  const writes = 10;
  const started = performance.now();
  for (let i = 0; i < writes; i++) {
    const out = await follower.client.transact([{ op: 'insert', table: 'Logical_Switch', row: { name: `f${i}` } }]);
    t.equal(out.failed, false);
    t.ok(follower.central.revision >= out.revision, 'answered once the follower applied it');
  }
  const ms = performance.now() - started;
  t.ok(ms < 800, `${writes} serial writes through a follower took ${ms.toFixed(0)} ms (held ones wait up to a heartbeat interval, 300 ms, each)`);
  const rows = await follower.client.list('Logical_Switch', [], { consistency: 'serializable' });
  t.equal(rows.rows.length, writes + 1, 'all of them are there');
});
