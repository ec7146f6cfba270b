// Goal: Raft stays safe under any schedule of faults and recovers once they heal.
// Method: thousands of seeded whole-cluster simulations (3 and 5 voters; lossy network,
// partitions, crashes losing unsynced writes, membership changes, transfers, compaction),
// safety checked after every step, liveness after healing, client histories checked for
// linearizability. Replay one seed: OVNTS_SEED=<seed> npm run test:one -- tests/cluster/simulator.test.ts
// Seeds not run before: OVNTS_SEED_FROM=<first seed> (with OVNTS_LONG=1 for 50,000 of them).

import t from 'tap';
import { checkLinearizable } from './sim/linearizability.js';
import { runSimulation } from './sim/simulator.js';

const only = process.env.OVNTS_SEED;
const from = Number(process.env.OVNTS_SEED_FROM ?? 1);
const seeds: number[] =
  only !== undefined
    ? [Number(only)]
    : Array.from({ length: process.env.OVNTS_LONG !== undefined ? 50_000 : 2_000 }, (_, i) => from + i);
const failuresMax = 5;

const totals = { steps: 0, elections: 0, commits: 0, crashes: 0, snapshotsSent: 0, confChanges: 0, writes: 0, reads: 0 };
const failures: string[] = [];
const started = performance.now();
for (const seed of seeds) {
  const replay = `OVNTS_SEED=${seed} npm run test:one -- tests/cluster/simulator.test.ts`;
  try {
    const stats = runSimulation({ seed, voters: seed % 2 === 0 ? 3 : 5 });
    for (const k of Object.keys(totals) as (keyof typeof totals)[]) totals[k] += stats[k];
    const lin = checkLinearizable(stats.history);
    if (lin.kind !== 'ok') {
      failures.push(`seed ${seed}: history not linearizable (${lin.kind}, key ${lin.key}); replay: ${replay}`);
    }
  } catch (err) {
    failures.push(`${(err as Error).message}\n  replay: ${replay}`);
  }
  if (failures.length >= failuresMax) break;
}
const seconds = (performance.now() - started) / 1000;
t.comment(`${seeds.length} seeds in ${seconds.toFixed(1)} s (${(seeds.length / seconds).toFixed(0)} seeds/s)`);
t.comment(JSON.stringify(totals));

t.same(failures, [], 'no seed violated safety, liveness or linearizability');
if (only === undefined) {
  // The schedules must keep exercising what they claim to, or the checks above prove little.
  t.ok(totals.elections >= seeds.length, 'elections happen');
  t.ok(totals.crashes > seeds.length / 4, 'nodes crash');
  t.ok(totals.snapshotsSent > 0, 'lagging followers receive snapshots');
  t.ok(totals.confChanges > seeds.length / 4, 'membership changes are proposed');
  t.ok(totals.writes > seeds.length * 5 && totals.reads > seeds.length, 'clients write and read');
}
