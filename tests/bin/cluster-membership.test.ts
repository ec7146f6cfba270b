// Membership changes against real member processes: `ovnts cluster add-member` adds a fourth
// member whose addresses travel in the log, and prints the command that starts it; the new
// member catches up, serves writes, can lead, and the old members forward to it at the address
// they learned from the log. `remove-member` takes a member out for good: its id is refused
// when offered again, and the cluster carries on without it.
import { spawn } from 'node:child_process';
import { openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { AdminClient, type StatusReplyJson } from '../../server/admin-service.js';
import { freeBasePort, ovnts, readUpEnv, until } from '../helpers/ovnts-cli.js';
import { stopPid } from '../helpers/process.js';
import { testdirAfterTeardowns } from '../helpers/testdir.js';
import { ovntsArgv } from '../helpers/ovnts-bin.js';



async function status(address: string): Promise<StatusReplyJson> {
  const c = new AdminClient(address, 3_000);
  try {
    return await c.status();
  } finally {
    c.close();
  }
}

t.test('add a member, let it lead, remove another; ids are never reused', async (t) => {
  const root = testdirAfterTeardowns(t, { cluster: {}, n4: {} });
  const base = await freeBasePort();
  const up = await ovnts('up', `--data-dir=${join(root, 'cluster')}`, `--base-port=${base}`, '--detach');
  t.equal(up.code, 0, `up: ${up.stderr}`);
  const env = readUpEnv(join(root, 'cluster'));
  const pids = [...env.pids];
  t.teardown(async () => {
    for (const pid of pids) await stopPid(pid, (argv) => argv.includes('central'));
  });
  const endpoints = env.nbGrpc.join(',');
  t.equal((await ovnts('nbctl', `--endpoints=${endpoints}`, 'ls-add', 'sw0')).code, 0);

  const free = await freeBasePort();
  const nb4 = `127.0.0.1:${free + 1}`;
  const raft4 = `127.0.0.1:${free + 11}`;
  const added = await ovnts('cluster', 'add-member', `--raft-address=${raft4}`, `--nb-address=${nb4}`, `--endpoints=${endpoints}`, '--format=json');
  t.equal(added.code, 0, `add-member: ${added.stderr}`);
  const reply = JSON.parse(added.stdout) as { id: number; voters: number[]; start: string };
  t.equal(reply.id, 4, 'the next id never used');
  t.same(reply.voters, [1, 2, 3, 4]);
  const args = reply.start.replace('DIR', join(root, 'n4')).split(' ').slice(1);
  const log = openSync(join(root, 'n4.log'), 'a');
  const child = spawn(...ovntsArgv(...args), { stdio: ['ignore', log, log], detached: true });
  child.unref();
  pids.push(child.pid as number);

  const leaderCommit = async (): Promise<number> => (await status(env.nbGrpc[0] as string)).commit;
  await until(() => `member 4 catches up (its log: ${readFileSync(join(root, 'n4.log'), 'utf8').slice(-1500)})`, async () => {
    const s = await status(nb4);
    return s.voters.includes(4) && s.applied >= (await leaderCommit()) - 1 ? s : undefined;
  });
  t.equal((await ovnts('nbctl', `--endpoints=${nb4}`, 'ls-add', 'sw-from-4')).code, 0, 'a write through the new member');
  const listed = (await ovnts('nbctl', `--endpoints=${nb4}`, 'ls-list')).stdout;
  t.ok(listed.includes('(sw0)') && listed.includes('(sw-from-4)'), `it has the whole database: ${listed}`);

  const moved = await ovnts('cluster', 'transfer-leader', '4', `--endpoints=${endpoints}`);
  t.equal(moved.code, 0, `transfer-leader 4: ${moved.stderr}`);
  t.equal((await ovnts('nbctl', `--endpoints=${env.nbGrpc[1] as string}`, 'ls-add', 'sw-via-2')).code, 0, 'a follower forwards to the new leader at the address it learned from the log');
  t.equal((await status(env.nbGrpc[1] as string)).leaderAddress, raft4);

  const removed = await ovnts('cluster', 'remove-member', '2', `--endpoints=${endpoints},${nb4}`);
  t.equal(removed.code, 0, `remove-member: ${removed.stderr}`);
  t.match(removed.stdout, /member 2 removed .*voters 1,3,4/);
  await stopPid(env.pids[1] as number, (argv) => argv.includes('central'));
  t.equal((await ovnts('nbctl', `--endpoints=${env.nbGrpc[0] as string}`, 'ls-add', 'sw-after')).code, 0, 'the cluster carries on without member 2');
  const again = await ovnts('cluster', 'add-member', `--raft-address=${env.nbGrpc[1] as string}`, '--id=2', `--endpoints=${env.nbGrpc[0] as string},${nb4}`);
  t.not(again.code, 0);
  t.match(again.stderr, /node 2 was removed; ids are never reused/);
  const s4 = await status(nb4);
  t.same(s4.voters, [1, 3, 4]);
  t.same(s4.removed, [2]);
});
