// Apply versions on real processes (`ovnts up`, three `ovnts central`, Raft over gRPC): a new
// cluster moves to this build's highest apply version once its leader has heard every member
// (their highest travels in the Raft streams' metadata); `cluster status` shows it; a member
// started again with --apply-version-max below the cluster's version stops with exit status 4
// and says why, changing nothing, while the others serve; started as before it catches up and
// the three hold the same database.
import { spawn } from 'node:child_process';
import t from 'tap';
import { APPLY_VERSION_MAX } from '../../server/apply-version.js';
import { AdminClient, type StatusReplyJson } from '../../server/admin-service.js';
import { NorthboundClient } from '../../server/northbound-service.js';
import { ovnts, readUpEnv, until, upCluster } from '../helpers/ovnts-cli.js';
import { processArgv, stopPid } from '../helpers/process.js';
import { testdirAfterTeardowns } from '../helpers/testdir.js';

t.test('a member on an older apply version stops at the move, the others go on', async (t) => {
  const dir = testdirAfterTeardowns(t);
  const env = await upCluster(t, dir);
  const statusOf = async (address: string, digests = false): Promise<StatusReplyJson | undefined> => {
    const c = new AdminClient(address);
    try {
      return await c.status({ digests });
    } catch {
      return undefined;
    } finally {
      c.close();
    }
  };
  const all = async (): Promise<(StatusReplyJson | undefined)[]> => Promise.all(env.nbGrpc.map((a) => statusOf(a)));
  await until('every member at the highest apply version', async () => ((await all()).every((s) => s?.applyVersion === APPLY_VERSION_MAX) ? true : undefined));
  const table = await ovnts('cluster', 'status', `--endpoints=${env.nbGrpc.join(',')}`);
  t.equal(table.code, 0, table.stderr);
  t.match(table.stdout, new RegExp(`apply version\\n(.*${APPLY_VERSION_MAX} \\(max ${APPLY_VERSION_MAX}\\)\\n){3}`), 'status shows each member\'s version');
  t.match(table.stdout, new RegExp(`last contact\\s+apply max\\n(.*\\s${APPLY_VERSION_MAX}\\n){2}`), 'and what each peer told the leader');

  const nb = new NorthboundClient(env.nbGrpc[0] as string);
  t.teardown(() => nb.close());
  const add = (name: string) => nb.transact([{ op: 'insert', table: 'Logical_Switch', row: { name } }]);
  await add('before');

  // Member 3 again, on "older software": the same command line with --apply-version-max 1.
  const pid3 = env.pids[2] as number;
  const argv = processArgv(pid3)?.filter((a) => a !== ''); // cmdline ends with a NUL
  if (argv === undefined) throw new Error('no command line for member 3');
  await stopPid(pid3, (a) => a.includes('central'));
  await add('while-down');
  const old = spawn(argv[0] as string, [...argv.slice(1), `--apply-version-max=1`], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  old.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
  const code = await new Promise<number | null>((resolve) => old.on('exit', (c) => resolve(c)));
  t.equal(code, 4, 'it exits with status 4');
  t.match(stderr, new RegExp(`at apply version ${APPLY_VERSION_MAX}, and this build applies versions up to 1: start this member on software that implements version ${APPLY_VERSION_MAX}`), 'saying why');
  await add('after');
  t.same((await nb.list('Logical_Switch', [], { columns: ['name'] })).rows.map((r) => r.name).sort(), ['after', 'before', 'while-down'], 'the other two serve');

  // As before: it catches up, and the three agree.
  const up = await ovnts('up', `--data-dir=${dir}`, '--detach');
  t.equal(up.code, 0, up.stderr);
  const restarted = readUpEnv(dir).pids[2] as number;
  t.teardown(() => stopPid(restarted, (a) => a.includes('central')));
  const agreed = await until('the three members to agree', async () => {
    const s = await Promise.all(env.nbGrpc.map((a) => statusOf(a, true)));
    if (s.some((x) => x === undefined)) return undefined;
    const views = s as StatusReplyJson[];
    return views.every((x) => x.applied === views[0]?.applied && x.nbSha256 === views[0]?.nbSha256 && x.applyVersion === APPLY_VERSION_MAX) ? views : undefined;
  });
  t.equal(new Set(agreed.map((s) => s.nbSha256)).size, 1, 'every member holds the same NB');
});
