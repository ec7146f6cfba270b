// Three `ovnts raft-kv` processes on loopback with LevelDB in temp folders: kill -9 the
// leader 20 times (OVNTS_LONG: 40) during a stream of writes, restarting it each time. Afterwards every
// acknowledged write is on every node and all replicas hold byte-identical state.
import t from 'tap';
import type { KvClient } from '../../cluster/kv-service.js';
import { RaftKvCluster } from '../helpers/raft-kv-cluster.js';
import { testdirAfterTeardowns } from '../helpers/testdir.js';
import { ovntsCommand } from '../helpers/ovnts-bin.js';

const kills = Number(process.env.OVNTS_KILLS ?? (process.env.OVNTS_LONG ? 40 : 20));
const writers = 4;
const acksBetweenKills = 10;

async function until<T>(what: string, timeoutMs: number, f: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await f().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

t.test(`kill -9 the leader ${kills} times during writes: no acknowledged write is lost`, { timeout: 600_000 }, async (t) => {
  const dir = testdirAfterTeardowns(t);
  const cluster = await RaftKvCluster.start({
    dir,
    ovnts: ovntsCommand(),
    tickMs: 20,
    electionTicks: 10,
    snapshotEntries: 200,
    // Compactions (and snapshot installs) while the leaders die, not only when the log has
    // outgrown the state.
    snapshotLogRatio: 0,
  });
  t.teardown(() => cluster.stop());
  const client = cluster.client({ callTimeoutMs: 1000, operationTimeoutMs: 30_000 });
  t.teardown(() => client.close());

  const acked = new Map<string, string>();
  let failed = 0;
  let stop = false;
  const writer = async (w: number, c: KvClient): Promise<void> => {
    for (let seq = 1; !stop; seq++) {
      const key = `w${w}-${seq}`;
      const value = `v${seq}`;
      try {
        await c.put(key, Buffer.from(value), { clientId: `writer-${w}`, seq });
        acked.set(key, value);
      } catch {
        // Not acknowledged: the write may or may not have applied, so it is not checked.
        failed++;
      }
    }
  };
  const running = Array.from({ length: writers }, (_, w) => writer(w, client));

  let killed = 0;
  for (let k = 0; k < kills; k++) {
    const before = acked.size;
    await until('writes to be acknowledged', 30_000, async () => (acked.size >= before + acksBetweenKills ? true : undefined));
    const leader = await until('a leader', 30_000, async () => {
      const l = await cluster.leader(client);
      return l > 0 ? l : undefined;
    });
    await cluster.kill(leader, 'SIGKILL');
    killed++;
    const afterKill = acked.size;
    await until('writes after the kill', 30_000, async () => (acked.size > afterKill ? true : undefined));
    await cluster.startMember(leader);
  }
  stop = true;
  await Promise.all(running);
  t.equal(killed, kills, `killed the leader ${kills} times`);
  t.comment(`${acked.size} writes acknowledged, ${failed} gave up`);
  t.ok(acked.size > kills * acksBetweenKills, 'writes kept being acknowledged');

  // All replicas converge to the same applied index and byte-identical state.
  const digests = await until('replicas to converge', 60_000, async () => {
    const ds = await Promise.all(cluster.members.map((m) => client.digest(m.id)));
    const first = ds[0];
    if (first === undefined) return undefined;
    const same = ds.every((d) => d.applied === first.applied && Buffer.from(d.sha256).equals(Buffer.from(first.sha256)));
    return same ? ds : undefined;
  });
  t.equal(new Set(digests.map((d) => Buffer.from(d.sha256).toString('hex'))).size, 1, 'every replica holds the same state');

  let missing = 0;
  for (const m of cluster.members) {
    const { entries } = await client.dump(m.id);
    for (const [key, value] of acked) {
      const got = entries.get(key);
      if (got === undefined || Buffer.from(got).toString() !== value) missing++;
    }
  }
  t.equal(missing, 0, 'every acknowledged write is on every node');
});
