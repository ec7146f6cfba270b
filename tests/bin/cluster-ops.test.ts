// The operations tooling against real member processes: `ovnts cluster status` (table and
// json), `transfer-leader`, `change-election-timer`, and a backup cycle — `snapshot save` from
// a running cluster, `snapshot inspect` (and a damaged copy refused), `snapshot restore` of
// every member of a NEW cluster, which starts with the data, a new cluster id, revisions above
// the snapshot's, and tells an old watcher its revision is gone.
import { APPLY_VERSION_MAX } from '../../server/apply-version.js';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { NorthboundClient } from '../../server/northbound-service.js';
import { freeBasePort, ovnts, readUpEnv, until } from '../helpers/ovnts-cli.js';
import { stopPid } from '../helpers/process.js';
import { testdirAfterTeardowns } from '../helpers/testdir.js';

interface Status {
  address: string;
  status?: { id: number; role: string; term: number; leader: number; electionTicks: number; tickMs: number; clusterId: string; revision: number; peers: { id: number; match: number }[] };
  error?: string;
}

async function statusJson(endpoints: string): Promise<Status[]> {
  const r = await ovnts('cluster', 'status', `--endpoints=${endpoints}`, '--format=json');
  if (r.code !== 0) throw new Error(`cluster status: ${r.stderr}`);
  return JSON.parse(r.stdout) as Status[];
}


async function up(t: Test, dir: string): Promise<{ endpoints: string; pids: number[]; metrics: string[] }> {
  const base = await freeBasePort();
  const r = await ovnts('up', `--data-dir=${dir}`, `--base-port=${base}`, '--detach');
  t.equal(r.code, 0, `up ${dir}: ${r.stderr}`);
  const env = readUpEnv(dir);
  t.teardown(async () => {
    for (const pid of env.pids) await stopPid(pid, (argv) => argv.includes('central'));
  });
  return { endpoints: env.nbGrpc.join(','), pids: env.pids, metrics: env.metrics };
}

t.test('cluster status, transfer-leader, change-election-timer, snapshot save/inspect/restore', async (t) => {
  const root = testdirAfterTeardowns(t, { a: {}, b: {} });
  const a = await up(t, join(root, 'a'));
  const nbctl = (endpoints: string, ...args: string[]): ReturnType<typeof ovnts> => ovnts('nbctl', `--endpoints=${endpoints}`, ...args);
  for (const sw of ['sw0', 'sw1', 'sw2']) t.equal((await nbctl(a.endpoints, 'ls-add', sw)).code, 0);
  t.equal((await nbctl(a.endpoints, 'lsp-add', 'sw0', 'p1')).code, 0);

  let all = await statusJson(a.endpoints);
  t.equal(all.length, 3);
  const leaders = all.filter((m) => m.status?.role === 'leader');
  t.equal(leaders.length, 1, 'exactly one member leads');
  const leader = leaders[0]?.status;
  t.ok(leader !== undefined && leader.peers.length === 2 && leader.peers.every((p) => p.match > 0), 'the leader reports both peers\' progress');
  const table = await ovnts('cluster', 'status', `--endpoints=${a.endpoints}`);
  t.match(table.stdout, /member\s+address\s+role\s+term/);
  t.match(table.stdout, /as seen by the leader/);

  const target = (leader?.id ?? 1) === 1 ? 2 : 1;
  const moved = await ovnts('cluster', 'transfer-leader', String(target), `--endpoints=${a.endpoints}`);
  t.equal(moved.code, 0, `transfer-leader: ${moved.stderr}`);
  t.equal(moved.stdout, `member ${target} leads\n`);
  const bad = await ovnts('cluster', 'transfer-leader', '9', `--endpoints=${a.endpoints}`);
  t.not(bad.code, 0);
  t.match(bad.stderr, /cannot transfer leadership to 9/);

  const timer = await ovnts('cluster', 'change-election-timer', '2000', `--endpoints=${a.endpoints}`);
  t.equal(timer.code, 0, `change-election-timer: ${timer.stderr}`);
  await until('every member has the new election timer', async () => ((await statusJson(a.endpoints)).every((m) => m.status !== undefined && m.status.electionTicks * m.status.tickMs === 2000) ? true : undefined), 20_000);

  // Health and metrics over HTTP.
  t.equal(a.metrics.length, 3);
  const get = async (url: string): Promise<{ status: number; body: string }> => {
    const r = await fetch(url);
    return { status: r.status, body: await r.text() };
  };
  for (const base of a.metrics) {
    t.match(await get(`${base}/healthz`), { status: 200, body: 'ok\n' });
    t.match(await get(`${base}/readyz`), { status: 200, body: 'ready\n' });
  }
  const scraped = await Promise.all(a.metrics.map(async (base) => (await get(`${base}/metrics`)).body));
  t.ok(scraped.every((m) => /^ovnts_raft_term \d+$/m.test(m) && /^ovnts_raft_persist_seconds_count [1-9]\d*$/m.test(m)), 'every member reports its term and its synced writes');
  t.equal(scraped.filter((m) => /^ovnts_raft_is_leader 1$/m.test(m)).length, 1, 'one leader in the metrics');
  t.ok(scraped.some((m) => /^ovnts_transact_seconds_count\{db="OVN_Northbound",outcome="committed"\} [1-9]/m.test(m)), 'transactions are timed');
  t.ok(scraped.every((m) => /^ovnts_process_nodejs_eventloop_lag_seconds /m.test(m)), 'event-loop lag from the default metrics');
  t.match(await get(`${a.metrics[0] as string}/nope`), { status: 404 });

  // A backup, checked, and a damaged copy refused.
  const file = join(root, 'backup.snap');
  const saved = await ovnts('snapshot', 'save', file, `--endpoints=${a.endpoints}`);
  t.equal(saved.code, 0, `snapshot save: ${saved.stderr}`);
  const revision = Number(/saved revision (\d+)/.exec(saved.stdout)?.[1]);
  t.ok(revision > 0, saved.stdout);
  const inspected = await ovnts('snapshot', 'inspect', file, '--format=json');
  t.equal(inspected.code, 0, inspected.stderr);
  const info = JSON.parse(inspected.stdout) as { header: { revision: number; clusterId: string }; applyVersion: number; nbRows: Record<string, number>; sbRows: Record<string, number> };
  t.equal(info.header.revision, revision);
  t.equal(info.applyVersion, APPLY_VERSION_MAX, 'the snapshot carries the apply version the cluster moved to');
  t.equal(info.nbRows.Logical_Switch, 3);
  t.equal(info.nbRows.Logical_Switch_Port, 1);
  t.equal(info.sbRows.Datapath_Binding, 3, 'northd derives the SB view from the snapshot');
  const damaged = join(root, 'damaged.snap');
  copyFileSync(file, damaged);
  const bytes = readFileSync(damaged);
  bytes[bytes.length - 100] = (bytes[bytes.length - 100] as number) ^ 0xff;
  writeFileSync(damaged, bytes);
  const refused = await ovnts('snapshot', 'inspect', damaged);
  t.not(refused.code, 0);
  t.match(refused.stderr, /checksum mismatch/);

  // A new cluster from the backup, beside the old one.
  const bDir = join(root, 'b');
  for (const name of ['n1', 'n2', 'n3']) {
    const r = await ovnts('snapshot', 'restore', file, `--data-dir=${join(bDir, name)}`, `--name=${name}`, '--initial-cluster=n1,n2,n3');
    t.equal(r.code, 0, `restore ${name}: ${r.stderr}`);
  }
  const again = await ovnts('snapshot', 'restore', file, `--data-dir=${join(bDir, 'n1')}`, '--name=n1', '--initial-cluster=n1,n2,n3');
  t.match(again.stderr, /not empty/, 'restore never overwrites a member');
  const b = await up(t, bDir);
  t.match((await nbctl(b.endpoints, 'ls-list')).stdout, /\(sw0\)\n.*\(sw1\)\n.*\(sw2\)\n/, 'the new cluster has the data');
  t.equal((await nbctl(b.endpoints, 'ls-add', 'sw3')).code, 0, 'and takes writes');
  all = await statusJson(b.endpoints);
  const bStatus = all.find((m) => m.status?.role === 'leader')?.status;
  t.match(bStatus?.clusterId, /^restored-[0-9a-f]{16}$/, 'a new cluster id');
  t.not(bStatus?.clusterId, info.header.clusterId);
  t.ok((bStatus?.revision ?? 0) > revision, 'revisions continue above the snapshot\'s');
  const client = new NorthboundClient(b.endpoints.split(',')[0] as string);
  const err = await new Promise<Error>((resolve) => {
    const w = client.watch(['Logical_Switch'], 1);
    w.on('data', () => undefined);
    w.on('error', resolve);
  });
  client.close();
  t.match(err.message, /compacted/, 'an old watcher is told to re-read');
  t.not(a.pids.join(), b.pids.join());
});
