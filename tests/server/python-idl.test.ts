// Goal: the Python OVSDB IDL of Open vSwitch (python3-openvswitch), the library under Neutron's
// ovsdbapp, works against ovnts's OVSDB door as it works against ovsdb-server: transactions,
// optimistic concurrency ("try again" after a stale read), set and map mutations, nb_cfg
// increments, index violations, garbage collection of unreferenced rows and monitor
// conditions; and with the three remotes of `ovnts up` it rides through the leader's death.
// Method: tests/helpers/python-idl.py, run by /usr/bin/python3. Its fixed script against a real
// standalone ovsdb-server on OVN's NB schema and against a door on an in-process central must
// print the same lines. Its insert loop against `ovnts up`, with the leader killed (SIGKILL)
// part way, must end with every insert it reported committed there exactly once.
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import t from 'tap';
import { NB_SCHEMA_PATH, startDoorBesideReal } from '../helpers/door-beside-real.js';
import { JsonRpcClient } from '../helpers/jsonrpc-client.js';
import { upCluster, waitForLeader } from '../helpers/ovnts-cli.js';
import { isAlive, waitForExit } from '../helpers/process.js';
import { testsDir } from '../helpers/source-tree.js';
import { testdirAfterTeardowns } from '../helpers/testdir.js';

const PYTHON = '/usr/bin/python3';
const SCRIPT = join(testsDir, 'helpers/python-idl.py');
const scriptTimeoutMs = 120_000;
/** Inserts in the failover loop, and after how many the leader is killed. */
const loopN = 60;
const killAfter = 20;

/** Why the test cannot run here, or undefined: the IDL, ovsdb-server and the NB schema. */
function missing(): Promise<string | undefined> {
  if (!existsSync(PYTHON)) return Promise.resolve(`${PYTHON} is not installed`);
  if (!existsSync('/usr/sbin/ovsdb-server') || !existsSync(NB_SCHEMA_PATH)) return Promise.resolve('ovsdb-server or the OVN NB schema is not installed');
  return new Promise((resolve) => {
    execFile(PYTHON, ['-c', 'import ovs.db.idl'], (err) => resolve(err === null ? undefined : 'the Python OVS library (python3-openvswitch) is not installed'));
  });
}

function runScript(remote: string): Promise<{ lines: Record<string, unknown>[]; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(PYTHON, [SCRIPT, 'script', remote], { timeout: scriptTimeoutMs }, (err, stdout, stderr) => {
      if (err !== null) reject(new Error(`python-idl.py script ${remote}: ${err.message}\n${stderr}`));
      else resolve({ lines: stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>), stderr });
    });
  });
}

const why = await missing();

t.test('the same IDL script against ovsdb-server and against an ovnts door: the same outcomes', { skip: why ?? false }, async (t) => {
  const { real, doorRemote } = await startDoorBesideReal(t, 'python-idl');
  const theirs = await runScript(`unix:${real.socketPath}`);
  const ours = await runScript(doorRemote);
  const step = (lines: Record<string, unknown>[], name: string): Record<string, unknown> | undefined => lines.find((l) => l.step === name);
  // The script's own expectations hold on the real server, so a match below means something.
  t.equal(step(theirs.lines, 'verified add, second (stale read)')?.status, 'try again', 'ovsdb-server: a stale verify gets "try again"');
  t.equal(step(theirs.lines, 'duplicate port group name')?.error, 'constraint violation', 'ovsdb-server: the index refuses a duplicate name');
  t.equal(step(theirs.lines, 'increment nb_cfg')?.increment, 1, 'ovsdb-server: the increment comes back');
  t.same(step(theirs.lines, 'condition name == cond-x')?.names, ['cond-x'], 'ovsdb-server: the condition filters');
  t.equal(theirs.lines.length, 19, 'the script ran to its end against ovsdb-server');
  t.equal(ours.lines.length, theirs.lines.length, 'and against the door');
  for (const [i, line] of theirs.lines.entries()) t.same(ours.lines[i], line, String(line.step));
});

t.test('an IDL insert loop over the three remotes of ovnts up while the leader is killed: nothing lost or doubled', { skip: why ?? false }, async (t) => {
  const env = await upCluster(t, testdirAfterTeardowns(t));
  const leader = await waitForLeader(env.nbOvsdb);
  const leaderPid = env.pids[leader] as number;
  const child = spawn(PYTHON, [SCRIPT, 'loop', env.nbOvsdb.join(','), String(loopN)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), scriptTimeoutMs);
  t.teardown(() => {
    clearTimeout(timer);
    child.kill('SIGKILL');
  });
  const outcomes = new Map<string, string>();
  let summary: { connected: boolean; statuses: Record<string, number>; seconds: number; names: string[] } | undefined;
  for await (const text of createInterface({ input: child.stdout })) {
    const line = JSON.parse(text) as { kind: string; name?: string; outcome?: string } & Partial<NonNullable<typeof summary>>;
    if (line.kind === 'insert') {
      outcomes.set(line.name as string, line.outcome as string);
      if (outcomes.size === killAfter) process.kill(leaderPid, 'SIGKILL');
    } else if (line.kind === 'summary') summary = line as NonNullable<typeof summary>;
  }
  clearTimeout(timer);
  if (summary === undefined) throw new Error(`no summary from python-idl.py loop: ${stderr}`);
  t.comment(`${loopN} IDL inserts in ${summary.seconds} s; commit statuses ${JSON.stringify(summary.statuses)}`);
  await waitForExit(leaderPid, 10_000);
  t.notOk(isAlive(leaderPid), 'the leader was killed');
  t.ok((summary.statuses['try again'] ?? 0) > 0, 'the IDL felt the kill ("try again")');
  const failed = [...outcomes].filter(([, o]) => o !== 'ok' && o !== 'uncertain');
  t.same(failed, [], 'every insert committed, after retries');
  t.equal(outcomes.size, loopN);
  const counts = new Map<string, number>();
  for (const n of summary.names) counts.set(n, (counts.get(n) ?? 0) + 1);
  t.same([...outcomes.keys()].filter((n) => counts.get(n) !== 1), [], 'each is there exactly once');
  t.same(summary.names.filter((n) => !outcomes.has(n)), [], 'nothing else is there');
  const newLeader = await waitForLeader(env.nbOvsdb, new Set([leader]));
  t.not(newLeader, leader, 'another member leads');
  // The same rows read from the new leader's door, outside the IDL.
  const [host, port] = (env.nbOvsdb[newLeader] as string).replace(/^tcp:/, '').split(':');
  const c = await JsonRpcClient.connect({ host: host as string, port: Number(port) });
  const [sel] = (await c.request('transact', ['OVN_Northbound', { op: 'select', table: 'Logical_Switch', where: [], columns: ['name'] }])) as [{ rows: { name: string }[] }];
  await c.close();
  t.same(sel.rows.map((r) => r.name).sort(), [...summary.names].sort(), 'the new leader holds the rows the IDL shows');
});
