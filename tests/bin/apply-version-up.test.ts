// Apply versions on real processes (`ovnts up`, three `ovnts central`, Raft over gRPC): a new
// cluster moves to this build's highest apply version once its leader has heard every member
// (their highest travels in the Raft streams' metadata); `cluster status` shows it; a member
// started again with --apply-version-max below the cluster's version stops with exit status 4
// and says why, changing nothing, while the others serve; started as before it catches up and
// the three hold the same database; once its snapshot is past the move, the older version is
// refused as it starts.
import { spawn } from 'node:child_process';
import t from 'tap';
import { APPLY_VERSION_MAX } from '../../server/apply-version.js';
import { AdminClient, type StatusReplyJson } from '../../server/admin-service.js';
import { NorthboundClient } from '../../server/northbound-service.js';
import { ovnts, until, upCluster } from '../helpers/ovnts-cli.js';
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
  /** Member 3 on its own command line plus `extra`; its exit code and stderr once it ends. */
  const member3 = (extra: string[]): { child: ReturnType<typeof spawn>; exited: Promise<{ code: number | null; stderr: string }> } => {
    const child = spawn(argv[0] as string, [...argv.slice(1), ...extra], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr?.on('data', (b: Buffer) => (stderr += b.toString()));
    const exited = new Promise<{ code: number | null; stderr: string }>((resolve) => child.on('exit', (code) => resolve({ code, stderr })));
    t.teardown(() => (child.pid !== undefined && child.exitCode === null ? stopPid(child.pid, (a) => a.includes('central')) : undefined));
    return { child, exited };
  };
  const older = await member3(['--apply-version-max=1']).exited;
  t.equal(older.code, 4, 'it exits with status 4');
  t.match(older.stderr, new RegExp(`at apply version ${APPLY_VERSION_MAX}, and this build applies versions up to 1: start this member on software that implements version ${APPLY_VERSION_MAX}`), 'saying why');
  await add('after');
  t.same((await nb.list('Logical_Switch', [], { columns: ['name'] })).rows.map((r) => r.name).sort(), ['after', 'before', 'while-down'], 'the other two serve');

  // As before (snapshotting after every entry): it catches up, and the three agree.
  const again = member3(['--snapshot-entries=1', '--snapshot-log-ratio=0']);
  const agreed = await until('the three members to agree', async () => {
    const s = await Promise.all(env.nbGrpc.map((a) => statusOf(a, true)));
    if (s.some((x) => x === undefined)) return undefined;
    const views = s as StatusReplyJson[];
    return views.every((x) => x.applied === views[0]?.applied && x.nbSha256 === views[0]?.nbSha256 && x.applyVersion === APPLY_VERSION_MAX) ? views : undefined;
  });
  t.equal(new Set(agreed.map((s) => s.nbSha256)).size, 1, 'every member holds the same NB');
  await add('snapshot');
  await until('member 3 to take a snapshot past the move', async () => ((await statusOf(env.nbGrpc[2] as string))?.snapshotIndex ?? 0) > 0 || undefined);
  await stopPid(again.child.pid as number, (a) => a.includes('central'));
  // Its snapshot is past the move now: refused as it starts, before any entry.
  const fromSnapshot = await member3(['--apply-version-max=1']).exited;
  t.equal(fromSnapshot.code, 4, 'a snapshot past the move: exit status 4 too');
  t.match(fromSnapshot.stderr, new RegExp(`the snapshot at revision \\d+ is at apply version ${APPLY_VERSION_MAX}, and this build applies versions up to 1`), 'saying so');
});
