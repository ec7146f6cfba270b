// Goal: Admin Status's NB and SB digests are equal on replicas at the same applied index, move
// when the state moves, and cost nothing unless asked. Method: three in-process central nodes,
// writes through one member, digests asked of all three once they applied the same prefix.
import t from 'tap';
import { AdminClient, type StatusReplyJson } from '../../server/admin-service.js';
import { startCentralCluster } from '../helpers/central-cluster.js';
import { testdirAfterTeardowns } from '../helpers/testdir.js';

async function statusOf(address: string, digests: boolean): Promise<StatusReplyJson> {
  const c = new AdminClient(address, 5_000);
  try {
    return await c.status({ digests });
  } finally {
    c.close();
  }
}

/** Every member's status with digests, once all have applied the same index. */
async function converged(addresses: readonly string[]): Promise<StatusReplyJson[]> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const all = await Promise.all(addresses.map((a) => statusOf(a, true)));
    if (all.every((s) => s.applied === all[0]?.applied)) return all;
    if (Date.now() > deadline) throw new Error(`members did not converge: applied ${all.map((s) => s.applied).join(', ')}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

t.test('digests agree across replicas and follow the state', async (t) => {
  const cluster = await startCentralCluster(testdirAfterTeardowns(t));
  t.teardown(() => cluster.stop());
  const addresses = cluster.members.map((m) => m.address);
  const client = cluster.members[1]?.client;
  if (client === undefined) throw new Error('no member 2');
  await client.transact([{ op: 'insert', table: 'NB_Global', row: {} }]);
  await client.transact([{ op: 'insert', table: 'Logical_Switch', row: { name: 'sw0' } }]);

  const plain = await statusOf(addresses[0] as string, false);
  t.equal(plain.nbSha256, '', 'no digest unless asked');
  t.equal(plain.sbSha256, '');

  const before = await converged(addresses);
  const first = before[0] as StatusReplyJson;
  t.match(first.nbSha256, /^[0-9a-f]{64}$/);
  t.match(first.sbSha256, /^[0-9a-f]{64}$/);
  t.same(before.map((s) => [s.nbSha256, s.sbSha256]), before.map(() => [first.nbSha256, first.sbSha256]), 'every replica reports the same digests');

  await client.transact([{ op: 'insert', table: 'Logical_Switch', row: { name: 'sw1' } }]);
  const after = await converged(addresses);
  const next = after[0] as StatusReplyJson;
  t.ok(next.applied > first.applied);
  t.not(next.nbSha256, first.nbSha256, 'a new switch changes the NB digest');
  t.not(next.sbSha256, first.sbSha256, 'and its datapath binding changes the SB digest');
  t.same(after.map((s) => [s.nbSha256, s.sbSha256]), after.map(() => [next.nbSha256, next.sbSha256]), 'and the replicas still agree');
});
