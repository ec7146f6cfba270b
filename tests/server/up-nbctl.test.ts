// The README's main path as a user runs it: `ovnts up --detach` starts three central processes,
// `ovnts nbctl` changes and reads the NB through them (also with a member killed), and
// `ovnts down` stops them by pid. Method: the real command line in child processes.
import { execFile, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import type { Test } from 'tap';
import { memberExecArgv, memberNodeFlags, upClusterOf } from '../../bin/commands/cluster-up.js';
import type { UpEnv } from '../helpers/ovnts-cli.js';
import { freeBasePort as freeBase, ovnts, readUpEnv, until } from '../helpers/ovnts-cli.js';
import { isAlive, stopPid, waitForExit } from '../helpers/process.js';
import { repoRoot } from '../helpers/source-tree.js';
import { testdirAfterTeardowns } from '../helpers/testdir.js';

const run = promisify(execFile);

/** `ovnts up --detach` in the test's folder; its members are stopped by pid at teardown. */
async function upDetached(t: Test): Promise<{ dir: string; env: UpEnv; base: number }> {
  const dir = testdirAfterTeardowns(t);
  const base = await freeBase();
  const up = await ovnts('up', `--data-dir=${dir}`, `--base-port=${base}`, '--detach');
  t.equal(up.code, 0, `up: ${up.stderr}`);
  const env = readUpEnv(dir);
  // tap may remove the test folder before teardowns run: the safety net stops members by pid.
  t.teardown(async () => {
    for (const pid of env.pids) await stopPid(pid, (argv) => argv.includes('central'));
  });
  return { dir, env, base };
}

t.test("a member's node flags: memberNodeFlags, less any of the same name `up` was given", async (t) => {
  t.same(memberExecArgv([]), [...memberNodeFlags]);
  t.same(memberExecArgv(['--max-semi-space-size=16']), ['--no-allocation-site-pretenuring', '--max-semi-space-size=16'], "up's size wins");
  t.same(memberExecArgv(['--allocation-site-pretenuring']), ['--max-semi-space-size=4', '--allocation-site-pretenuring'], "up's flag wins over the --no- form");
  t.same(memberExecArgv(['--no-allocation-site-pretenuring', '--trace-gc']), ['--max-semi-space-size=4', '--no-allocation-site-pretenuring', '--trace-gc'], 'given once, not twice');
});

t.test('up, nbctl through the cluster, a member killed, down', async (t) => {
  const { dir, env, base } = await upDetached(t);
  const pids = env.pids;
  t.equal(pids.length, 3);
  const endpoints = env.nbGrpc.join(',');

  // A second cluster on the same ports fails at once and names the port. It used to find this
  // cluster's leader and report success while its own members had already exited.
  const second = join(dir, 'second');
  const clash = await ovnts('up', `--data-dir=${second}`, `--base-port=${base}`, '--detach');
  t.equal(clash.code, 1, 'up on ports in use fails');
  t.match(clash.stderr, new RegExp(`port ${base + 1} \\(n1's Northbound gRPC\\) is in use on 127\\.0\\.0\\.1`));
  t.notOk(existsSync(join(second, 'env')), 'it started no member and wrote no env file');
  t.same(readUpEnv(dir).pids, pids, "the running cluster's env file is untouched");
  // Members run with memberNodeFlags: a bounded young generation (RSS once idle), no pretenuring.
  for (const pid of pids) {
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    for (const flag of memberNodeFlags) t.ok(argv.includes(flag), `member ${pid} has ${flag}`);
  }
  const nbctl = (...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> => ovnts('nbctl', `--endpoints=${endpoints}`, ...args);

  t.equal((await nbctl('ls-add', 'sw0')).code, 0);
  t.equal((await nbctl('lsp-add', 'sw0', 'p1')).code, 0);
  t.equal((await nbctl('lsp-set-addresses', 'p1', '00:00:00:00:00:01 10.0.0.1')).code, 0);
  const dup = await nbctl('ls-add', 'sw0');
  t.equal(dup.code, 1);
  t.match(dup.stderr, /sw0: a switch with this name already exists/);
  t.equal((await nbctl('--may-exist', 'ls-add', 'sw0')).code, 0, '--may-exist makes it a no-op');
  const show = await nbctl('show');
  t.match(show.stdout, /switch [0-9a-f-]{36} \(sw0\)\n {4}port p1\n {8}addresses: \["00:00:00:00:00:01 10.0.0.1"\]/);
  // The command line reaches nbctl whole: every "--" starts another command of one transaction.
  const several = await nbctl('--may-exist', 'ls-add', 'sw0', '--', 'ls-add', 'swt', '--', 'lsp-add', 'swt', 'pt9', '--', 'lsp-list', 'swt');
  t.equal(several.code, 0, several.stderr);
  t.match(several.stdout, /^[0-9a-f-]{36} \(pt9\)\n$/, 'the last command saw the first ones');

  // The engine's counters per member (ovnts sbctl engine-stats): an LSP add is an incremental
  // run on every member, never a recompute.
  type Stats = { address: string; stats?: { revision: number; nodes: { name: string; recomputes: number; incrementalRuns: number }[] } }[];
  const engineStats = async (): Promise<Stats> => {
    const r = await ovnts('sbctl', 'engine-stats', `--endpoints=${endpoints}`, '--format=json');
    t.equal(r.code, 0, `engine-stats: ${r.stderr}`);
    return JSON.parse(r.stdout) as Stats;
  };
  const sum = (all: Stats, key: 'recomputes' | 'incrementalRuns'): number =>
    all.reduce((a, m) => a + (m.stats?.nodes.find((n) => n.name === 'lflows')?.[key] ?? 0), 0);
  const before = await engineStats();
  t.equal(before.filter((m) => m.stats !== undefined).length, 3, 'every member answers');
  t.ok(before.every((m) => (m.stats?.nodes.length ?? 0) > 5 && m.stats?.nodes.some((n) => n.name === 'lflows')), 'each lists its engine nodes, lflows among them');
  t.equal((await nbctl('lsp-add', 'sw0', 'p2')).code, 0);
  const after = await engineStats();
  t.equal(sum(after, 'recomputes'), sum(before, 'recomputes'), 'no recompute for an LSP add');
  t.ok(sum(after, 'incrementalRuns') > sum(before, 'incrementalRuns'), 'incremental runs for it');
  const text = await ovnts('sbctl', 'engine-stats', `--endpoints=${endpoints}`);
  t.match(text.stdout, /^member \d \(127\.0\.0\.1:\d+\) at revision \d+:\n {2}node +recomputes +incremental\n[\s\S]* {2}lflows +\d+ +\d+\n/m, `the table:\n${text.stdout}`);

  // The real ovn-nbctl through the OVSDB door (NB_OVSDB in the env file), when installed.
  const ovsdbRemotes = env.nbOvsdb.join(',');
  t.match(ovsdbRemotes, /^tcp:127\.0\.0\.1:\d+(,tcp:127\.0\.0\.1:\d+){2}$/);
  const real = await run('ovn-nbctl', [`--db=${ovsdbRemotes}`, '--timeout=20', 'ls-list'], { timeout: 30_000 }).then(
    (r) => r.stdout,
    (err: { code?: string | number; stdout?: string }) => (err.code === 'ENOENT' ? undefined : `failed: ${JSON.stringify(err)}`),
  );
  if (real === undefined) t.comment('ovn-nbctl is not installed: skipping its check');
  else {
    t.match(real, /\(sw0\)/, 'the real ovn-nbctl sees what ovnts nbctl wrote');
    // --wait=sb bumps nb_cfg and waits for sb_cfg to catch up: the SB view is derived in apply.
    const waited = await run('ovn-nbctl', [`--db=${ovsdbRemotes}`, '--timeout=20', '--wait=sb', 'ls-add', 'sw-waited'], { timeout: 30_000 }).then(
      () => 'ok',
      (err: { stderr?: string }) => `failed: ${err.stderr ?? ''}`,
    );
    t.equal(waited, 'ok', 'ovn-nbctl --wait=sb returns');
    const wait2 = await run('ovn-nbctl', [`--db=${ovsdbRemotes}`, '--timeout=20', '--wait=hv', 'sync'], { timeout: 30_000 }).then(
      () => 'ok',
      (err: { stderr?: string }) => `failed: ${err.stderr ?? ''}`,
    );
    t.equal(wait2, 'ok', 'ovn-nbctl --wait=hv sync returns');
  }

  // Kill one member outright: the others carry on (the client skips the dead endpoint).
  const victim = pids[0] as number;
  process.kill(victim, 'SIGKILL');
  await waitForExit(victim, 10_000);
  t.equal((await nbctl('ls-add', 'sw1')).code, 0, 'writes continue with a member down');
  t.match((await nbctl('ls-list')).stdout, /\(sw0\)\n.*\(sw1\)\n/);

  // `up` again starts the dead member beside the running ones, on its ports and its data; it
  // used to refuse while any member ran, so a crashed member could only come back with a down
  // of the whole cluster.
  const moved = await ovnts('up', `--data-dir=${dir}`, `--base-port=${base + 100}`, '--detach');
  t.equal(moved.code, 1, 'not on other ports than the running members\'');
  t.match(moved.stderr, new RegExp(`n2, n3 of the cluster in .* run on --base-port ${base}: leave out --base-port`));
  const again = await ovnts('up', `--data-dir=${dir}`, '--detach');
  t.equal(again.code, 0, `up restarts the dead member: ${again.stderr}`);
  t.match(again.stdout, /restarting n1 beside n2, n3 \(running\)/);
  const now = readUpEnv(dir).pids;
  const n1 = now[0] as number;
  t.teardown(() => stopPid(n1, (argv) => argv.includes('central')));
  t.same(now.slice(1), pids.slice(1), 'the running members keep running');
  t.ok(n1 !== victim && isAlive(n1), 'n1 runs again, under a new pid');
  t.same(readUpEnv(dir).nbGrpc, env.nbGrpc, 'on the same ports');
  const alone = await until('n1 serves the write made while it was down', async () => {
    const r = await ovnts('nbctl', `--endpoints=${env.nbGrpc[0]}`, 'ls-list');
    return r.code === 0 && /\(sw1\)/.test(r.stdout) ? r.stdout : undefined;
  });
  t.match(alone, /\(sw0\)\n.*\(sw1\)\n/);
  const running = await ovnts('up', `--data-dir=${dir}`, '--detach');
  t.equal(running.code, 1, 'with every member running, up refuses');
  t.match(running.stderr, /is already running \(pids /);

  const down = await ovnts('down', `--data-dir=${dir}`);
  t.equal(down.code, 0);
  t.ok(now.every((p) => !isAlive(p)), 'every member stopped');
});

// A client that stops answering (hung, or its host gone) while it holds a connection must not
// keep a member alive once `ovnts down` has asked it to stop. The client here writes through
// every member (a follower forwards to the leader), closes its channels and is then frozen
// with SIGSTOP, so the graceful end of its connections never completes.
t.test('down stops the members while a frozen client still holds connections to them', async (t) => {
  const { dir, env } = await upDetached(t);
  const pids = env.pids;
  const endpoints = env.nbGrpc.join(',');
  const script = [
    `import { NorthboundClient } from ${JSON.stringify(join(repoRoot, 'dist/server/northbound-service.js'))};`,
    `const clients = ${JSON.stringify(endpoints)}.split(',').map((a) => new NorthboundClient(a));`,
    `for (const [i, c] of clients.entries()) await c.transact([{ op: 'insert', table: 'Logical_Switch', row: { name: 'held-' + i } }]);`,
    'for (const c of clients) c.close();',
    "process.stdout.write('written\\n');",
    'setInterval(() => {}, 1000);',
  ].join('\n');
  const client = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  t.teardown(() => {
    client.kill('SIGKILL');
  });
  const written = await new Promise<boolean>((resolve) => {
    client.stdout.on('data', (d: Buffer) => d.toString().includes('written') && resolve(true));
    client.once('exit', () => resolve(false));
  });
  t.ok(written, 'the client wrote through every member');
  client.kill('SIGSTOP');
  const started = Date.now();
  const down = await ovnts('down', `--data-dir=${dir}`);
  t.equal(down.code, 0, `down: ${down.stderr}`);
  t.ok(pids.every((p) => !isAlive(p)), 'every member stopped');
  t.ok(Date.now() - started < 10_000, `down took ${Date.now() - started} ms`);
});

// A folder keeps the cluster it holds: `up` restarts the members it finds there with their
// cluster id, and refuses a member count that would mix them with new, empty members (a new
// leader then took the old member's answers as its own log's: it stopped on an assertion).
// Each new cluster gets an id of its own, so two `up` clusters never take each other's messages.
t.test('up keeps a folder\'s members and cluster id, and gives each new cluster its own', async (t) => {
  const dir = testdirAfterTeardowns(t);
  const base = await freeBase();
  const one = join(dir, 'one');
  const first = await ovnts('up', `--data-dir=${one}`, `--base-port=${base}`, '--nodes=1', '--detach');
  t.equal(first.code, 0, `up --nodes=1: ${first.stderr}`);
  const firstPids = readUpEnv(one).pids;
  t.teardown(async () => {
    for (const pid of firstPids) await stopPid(pid, (argv) => argv.includes('central'));
  });
  const id = readFileSync(join(one, 'n1', 'cluster-id'), 'utf8').trim();
  t.match(id, /^ovnts-[0-9a-f]{16}$/, 'a random cluster id');
  t.equal((await ovnts('nbctl', `--endpoints=${readUpEnv(one).nbGrpc.join(',')}`, 'ls-add', 'kept')).code, 0);
  t.equal((await ovnts('down', `--data-dir=${one}`)).code, 0);

  const three = await ovnts('up', `--data-dir=${one}`, `--base-port=${base}`, '--nodes=3', '--detach');
  t.equal(three.code, 1, 'three members on a one-member folder are refused');
  t.match(three.stderr, /holds a cluster of 1 member\(s\) \(n1\), not 3: run ovnts up --nodes 1 there/);
  t.notOk(existsSync(join(one, 'n2')), 'and no member folder was made');

  const again = await ovnts('up', `--data-dir=${one}`, `--base-port=${base}`, '--detach');
  t.equal(again.code, 0, `up without --nodes restarts the folder's one member: ${again.stderr}`);
  const env = readUpEnv(one);
  t.teardown(async () => {
    for (const pid of env.pids) await stopPid(pid, (argv) => argv.includes('central'));
  });
  t.equal(env.pids.length, 1);
  t.match((await ovnts('nbctl', `--endpoints=${env.nbGrpc.join(',')}`, 'ls-list')).stdout, /\(kept\)/, 'on its data');
  t.equal(readFileSync(join(one, 'n1', 'cluster-id'), 'utf8').trim(), id, 'with its cluster id');
  t.equal((await ovnts('down', `--data-dir=${one}`)).code, 0);

  // A new folder's id, as up picks it: never the same twice.
  const fresh = new Set(Array.from({ length: 3 }, () => upClusterOf(join(dir, 'empty'), 1).clusterId));
  t.equal(fresh.size, 3, 'every new cluster gets an id of its own');
  t.notOk(fresh.has(id));
});
