// Goal: the real ovn-nbctl, given all three OVSDB doors of `ovnts up --detach`, rides through the
// leader's death. Method: a loop of `ovn-nbctl ls-add sw<i>` processes; the leader (as _Server
// says) is killed with SIGKILL while one command is in flight; at the end every command that
// reported success is there exactly once, nothing else is, and every command after the kill
// succeeds. A command is retried as a script would: when ovn-nbctl could not connect (outside
// daemon mode it tries each remote once, so during the election it gives up on the dead one
// with "database connection failed"), and when it ran into its own --timeout (the command in
// flight at the kill: ovn-nbctl 23.03 then waits in reconnect backoff, against the real
// clustered ovsdb-server too). A retry that finds the switch there means the lost attempt
// committed: that name is "uncertain", and must then be there exactly once as well.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import t from 'tap';
import { JsonRpcClient } from '../helpers/jsonrpc-client.js';
import { upCluster, waitForLeader } from '../helpers/ovnts-cli.js';
import { isAlive, waitForExit } from '../helpers/process.js';

const commandsN = 40;
const killAfter = 15;
/** ovn-nbctl's own bound on one command (it waits for a leader within it). */
const nbctlTimeoutS = 8;
/** How long one name is retried after a lost connection or a timeout, and the pause between tries. */
const retryMsMax = 30_000;
const retryPauseMs = 100;
/** How long after starting command killAfter the leader is killed. */
const killDelayMs = 15;

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

function run(cmd: string, args: readonly string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(cmd, args, { timeout: (nbctlTimeoutS + 10) * 1000 }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof err.code === 'number' ? err.code : 1;
      resolve({ code, stdout, stderr });
    });
  });
}

function endpointOf(remote: string): { host: string; port: number } {
  const m = /^tcp:([\d.]+):(\d+)$/.exec(remote);
  if (m === null) throw new Error(`unexpected OVSDB remote ${remote}`);
  return { host: m[1] as string, port: Number(m[2]) };
}


const haveNbctl = existsSync('/usr/bin/ovn-nbctl');

t.test('ovn-nbctl ls-add in a loop while the leader is killed: no loss, no duplicate, writes resume', { skip: haveNbctl ? false : 'ovn-nbctl is not installed' }, async (t) => {
  const dir = t.testdir();
  const env = await upCluster(t, dir);
  t.equal(env.nbOvsdb.length, 3);
  const db = env.nbOvsdb.join(',');
  const dead = new Set<number>();
  const leader = await waitForLeader(env.nbOvsdb, dead);

  /**
   * Per name: 'ok' (ovn-nbctl reported success), 'uncertain' (an attempt lost its connection and
   * a retry — ours, or ovn-nbctl's own after reconnecting — found the switch already there: the
   * lost attempt committed), or the error.
   */
  const outcomes = new Map<string, { kind: 'ok' | 'uncertain' } | { kind: 'failed'; stderr: string }>();
  let retries = 0;
  const started = Date.now();
  for (let i = 0; i < commandsN; i++) {
    const name = `sw${i}`;
    const deadline = Date.now() + retryMsMax;
    let lostConnection = false;
    for (;;) {
      const pending = run('ovn-nbctl', [`--db=${db}`, `--timeout=${nbctlTimeoutS}`, 'ls-add', name]);
      if (i === killAfter && !dead.has(leader)) {
        // While this command is connecting or transacting (no event tells which): a moment in.
        await new Promise((resolve) => setTimeout(resolve, killDelayMs));
        process.kill(env.pids[leader] as number, 'SIGKILL');
        dead.add(leader);
        // This command's connection may be lost under it, and ovn-nbctl then reconnects to
        // another remote and runs the command again by itself: if the lost attempt had
        // committed, the retry reports "already exists" from this very run.
        lostConnection = true;
      }
      const r = await pending;
      if (r.code === 0) {
        outcomes.set(name, { kind: 'ok' });
        break;
      }
      if (/database connection failed|Alarm clock/.test(r.stderr) && Date.now() < deadline) {
        lostConnection = true;
        retries++;
        await new Promise((resolve) => setTimeout(resolve, retryPauseMs));
        continue;
      }
      outcomes.set(name, lostConnection && /already exists/.test(r.stderr) ? { kind: 'uncertain' } : { kind: 'failed', stderr: r.stderr.trim() });
      break;
    }
  }
  const count = (kind: string): number => [...outcomes.values()].filter((o) => o.kind === kind).length;
  const failed = [...outcomes].filter(([, o]) => o.kind === 'failed');
  t.comment(`${commandsN} ovn-nbctl ls-add in ${Date.now() - started} ms: ${count('ok')} ok, ${count('uncertain')} uncertain, ${count('failed')} failed; ${retries} retries after a lost connection or ovn-nbctl's timeout${failed.length > 0 ? `; failed: ${JSON.stringify(failed)}` : ''}`);
  await waitForExit(env.pids[leader] as number, 10_000);
  t.notOk(isAlive(env.pids[leader] as number), 'the old leader is gone');
  const newLeader = await waitForLeader(env.nbOvsdb, dead);
  t.not(newLeader, leader, 'another member leads');
  t.ok(retries > 0, 'the kill was felt (some command had to retry)');
  t.same(failed, [], 'no command failed for good: writes resumed after the failover');
  t.ok(count('ok') >= commandsN - 2, `at most the commands in flight at the kill are uncertain (${count('uncertain')})`);

  // The table as ovn-nbctl lists it, and as a select on the new leader's door returns it.
  const listed = await run('ovn-nbctl', [`--db=${db}`, `--timeout=${nbctlTimeoutS}`, '--bare', '--columns=name', 'list', 'Logical_Switch']);
  t.equal(listed.code, 0, `list: ${listed.stderr}`);
  const names = listed.stdout.split('\n').map((l) => l.trim()).filter(Boolean);
  const c = await JsonRpcClient.connect(endpointOf(env.nbOvsdb[newLeader] as string));
  const [sel] = (await c.request('transact', ['OVN_Northbound', { op: 'select', table: 'Logical_Switch', where: [], columns: ['name'] }])) as [{ rows: { name: string }[] }];
  await c.close();
  t.same(sel.rows.map((r) => r.name).sort(), [...names].sort(), 'ovn-nbctl list and a JSON-RPC select agree');

  const counts = new Map<string, number>();
  for (const n of names) counts.set(n, (counts.get(n) ?? 0) + 1);
  t.same([...outcomes].filter(([n, o]) => o.kind === 'ok' && counts.get(n) !== 1).map(([n]) => n), [], 'every command that reported success is there exactly once');
  t.same([...outcomes].filter(([n, o]) => o.kind === 'uncertain' && counts.get(n) !== 1).map(([n]) => n), [], 'an uncertain one exactly once too (its retry saw it)');
  t.same(names.filter((n) => !outcomes.has(n)), [], 'nothing else is there');
});
