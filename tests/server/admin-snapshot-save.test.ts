// Goal: SnapshotSave on a member that cannot take a consistent snapshot (it cannot confirm a
// linearizable read: no quorum) ends the stream with UNAVAILABLE, rather than leaving the
// client waiting for ever (`ovnts snapshot save` has no deadline of its own).
// Method: three central nodes in this process; one is cut off from the others on the Raft
// network, and its Admin service is asked for a snapshot over real gRPC.
import * as grpc from '@grpc/grpc-js';
import t from 'tap';
import { AdminClient } from '../../server/admin-service.js';
import { startCentralCluster } from '../helpers/central-cluster.js';
import { testdirAfterTeardowns } from '../helpers/testdir.js';

/** Well past the central node's own bound on waiting for a leader (centralLimits.leaderWaitMsMax, 10 s). */
const answerMsMax = 30_000;

t.test('a snapshot a member cannot take is refused, not left hanging', async (t) => {
  const cluster = await startCentralCluster(testdirAfterTeardowns(t));
  t.teardown(() => cluster.stop());
  const cutOff = cluster.members[0];
  if (cutOff === undefined) throw new Error('no member');
  cluster.network.isolate(cutOff.central.id);
  const c = new AdminClient(cutOff.address);
  t.teardown(() => c.close());
  const started = performance.now();
  const outcome = await new Promise<{ kind: 'ended' } | { kind: 'error'; code: number; details: string } | { kind: 'no answer' }>((resolve) => {
    const timer = setTimeout(() => resolve({ kind: 'no answer' }), answerMsMax);
    const stream = c.snapshotSave();
    stream.on('data', () => undefined);
    stream.on('error', (err: grpc.ServiceError) => {
      clearTimeout(timer);
      resolve({ kind: 'error', code: err.code, details: err.details });
    });
    stream.on('end', () => {
      clearTimeout(timer);
      resolve({ kind: 'ended' });
    });
  });
  t.match(outcome, { kind: 'error', code: grpc.status.UNAVAILABLE }, `answered after ${((performance.now() - started) / 1000).toFixed(1)} s: ${JSON.stringify(outcome)}`);
});
