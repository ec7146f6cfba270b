// Three central members as real processes (`ovnts up --detach`): two clients write through
// every member while a watch follows on the leader; the leader is killed with SIGKILL
// mid-stream. The clients carry on through the survivors, the watch resumes on another member
// from the last revision it saw, and at the end: every acknowledged write is there exactly
// once, a write whose outcome the client never learned is there at most once, nothing else
// is, and the watch's revisions rose without gaps in meaning, repeats or reversals, ending in
// exactly the table a linearizable read returns.
import t from 'tap';
import { NorthboundClient } from '../../server/northbound-service.js';
import type { WireChange } from '../../server/northbound-service.js';
import { ovnts, upCluster, waitForLeader } from '../helpers/ovnts-cli.js';
import { isAlive, waitForExit } from '../helpers/process.js';

const writesPerClient = 120;
const killAfterWrites = 40;



interface Watcher {
  /** name -> present, as the watch's events built it. */
  readonly names: Map<string, string>;
  readonly revisions: number[];
  lastRevision: number;
  resumes: number;
  errors: string[];
}

/** Follows Logical_Switch on member `start`; on a stream error resumes on the next live member. */
function follow(endpoints: readonly string[], start: number, dead: ReadonlySet<number>, w: Watcher): { stop: () => void } {
  let current: { cancel: () => void } | undefined;
  let stopped = false;
  const open = (i: number): void => {
    if (stopped) return;
    const client = new NorthboundClient(endpoints[i] as string);
    const stream = client.watch(['Logical_Switch'], w.lastRevision);
    current = stream;
    stream.on('data', (e: { revision: number; changes: WireChange[]; initial: boolean; progress: boolean }) => {
      const rev = Number(e.revision);
      if (e.progress) return;
      if (!e.initial) {
        w.revisions.push(rev);
      }
      for (const c of e.changes) {
        if (c.newJson !== '') w.names.set(c.uuid, (JSON.parse(c.newJson) as { name: string }).name);
        else w.names.delete(c.uuid);
      }
      w.lastRevision = Math.max(w.lastRevision, rev);
    });
    stream.on('error', (err: Error & { code?: number }) => {
      client.close();
      if (stopped || err.code === 1 /* CANCELLED */) return;
      w.errors.push(`member ${i}: ${err.message}`);
      // The next member that is not known dead, from the one after this.
      let next = (i + 1) % endpoints.length;
      while (dead.has(next)) next = (next + 1) % endpoints.length;
      w.resumes++;
      setTimeout(() => open(next), 50);
    });
  };
  open(start);
  return {
    stop: () => {
      stopped = true;
      current?.cancel();
    },
  };
}

t.test('the leader killed mid-stream: clients carry on, the watch resumes, nothing lost or repeated', async (t) => {
  const dir = t.testdir();
  const env = await upCluster(t, dir);
  t.equal(env.pids.length, 3);
  const dead = new Set<number>();
  const leader = await waitForLeader(env.nbOvsdb, dead);

  const w: Watcher = { names: new Map(), revisions: [], lastRevision: 0, resumes: 0, errors: [] };
  const watch = follow(env.nbGrpc, leader, dead, w);

  const acked = new Set<string>();
  const uncertain = new Set<string>();
  let killed = false;
  const writer = async (id: number): Promise<void> => {
    const clients = env.nbGrpc.map((a) => new NorthboundClient(a, 15_000));
    try {
      for (let i = 0; i < writesPerClient; i++) {
        const name = `w${id}-${i}`;
        // Each write goes through the next member in turn, skipping those found dead.
        let m = (id + i) % clients.length;
        while (dead.has(m)) m = (m + 1) % clients.length;
        try {
          const out = await (clients[m] as NorthboundClient).transact([{ op: 'insert', table: 'Logical_Switch', row: { name } }]);
          if (out.failed) throw new Error(`failed: ${JSON.stringify(out.results)}`);
          acked.add(name);
        } catch {
          // The outcome is unknown (the member died, or its leader did): not retried, so it
          // may be there once or not at all.
          uncertain.add(name);
        }
        if (id === 0 && i === killAfterWrites && !killed) {
          killed = true;
          process.kill(env.pids[leader] as number, 'SIGKILL');
          dead.add(leader);
        }
      }
    } finally {
      for (const c of clients) c.close();
    }
  };
  await Promise.all([writer(0), writer(1)]);
  t.ok(killed, 'the leader was killed mid-stream');
  await waitForExit(env.pids[leader] as number, 10_000);
  t.notOk(isAlive(env.pids[leader] as number));
  const newLeader = await waitForLeader(env.nbOvsdb, dead);
  t.not(newLeader, leader, 'another member leads');
  t.ok(acked.size >= writesPerClient * 2 - 20, `most writes acknowledged (${acked.size} acked, ${uncertain.size} uncertain)`);

  const survivor = new NorthboundClient(env.nbGrpc[newLeader] as string);
  const final = await survivor.list('Logical_Switch', [], { columns: ['name'] });
  survivor.close();
  const counts = new Map<string, number>();
  for (const r of final.rows) counts.set(r.name as string, (counts.get(r.name as string) ?? 0) + 1);
  const missing = [...acked].filter((n) => counts.get(n) !== 1);
  t.same(missing, [], 'every acknowledged write is there exactly once');
  const extra = [...counts].filter(([n, c]) => !acked.has(n) && !(uncertain.has(n) && c === 1));
  t.same(extra, [], 'nothing else: an uncertain write at most once');

  // The watch catches up to the final revision on a live member.
  const deadline = Date.now() + 20_000;
  while (w.lastRevision < final.revision && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  watch.stop();
  t.ok(w.lastRevision >= final.revision, `the watch reached revision ${final.revision} (at ${w.lastRevision})`);
  t.ok(w.resumes >= 1, `the watch resumed on another member (${w.resumes} times: ${w.errors.join('; ')})`);
  const rising = w.revisions.every((r, i) => i === 0 || r > (w.revisions[i - 1] as number));
  t.ok(rising, 'revisions strictly rise across the resume: no repeats, never backwards');
  t.same([...w.names.values()].sort(), final.rows.map((r) => r.name as string).sort(), 'the watch built exactly the table the read returns');

  const down = await ovnts('down', `--data-dir=${dir}`);
  t.equal(down.code, 0, `down: ${down.stderr}`);
  t.ok(env.pids.every((p) => !isAlive(p)), 'every member stopped');
});
