// The pidfile of bin/lib/pidfile.ts as Open vSwitch's tools read it: `ovs-appctl -t NAME` finds
// <rundir>/NAME.<pid>.ctl through a pidfile locked by that pid (real ovs-appctl, OVS_RUNDIR set);
// a second process is refused while the holder lives, takes over a stale file once it is gone,
// and close() removes the file. Method: holders are child processes (a POSIX lock belongs to a
// process), each with a unixctl server at the name ovs-appctl derives.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import t from 'tap';
import type { Test } from 'tap';
import { repoRoot } from '../helpers/source-tree.js';
import { runAppctl, toolInstalled, type AppctlReply } from '../helpers/appctl.js';
import { stopPid, waitForExit } from '../helpers/process.js';
import { until } from '../helpers/ovnts-cli.js';

const skip = toolInstalled('ovs-appctl') ? false : 'ovs-appctl is not installed';

const lib = (p: string): string => pathToFileURL(join(repoRoot, 'dist', p)).href;

/**
 * A child that takes `dir/thing.pid` and serves `dir/thing.<pid>.ctl`, printing "ready" or
 * "refused: <message>"; it removes both on SIGTERM.
 */
function holder(t: Test, dir: string): { pid: number; said: Promise<string> } {
  const script = `
    const { createPidfile } = await import(${JSON.stringify(lib('bin/lib/pidfile.js'))});
    const { UnixctlServer, unixctlOk } = await import(${JSON.stringify(lib('ovsdb/unixctl-server.js'))});
    let pidfile;
    try {
      pidfile = await createPidfile(${JSON.stringify(join(dir, 'thing.pid'))});
    } catch (err) {
      console.log('refused: ' + err.message);
      process.exit(0);
    }
    const server = await UnixctlServer.listen({ path: ${JSON.stringify(dir)} + '/thing.' + process.pid + '.ctl', version: 'thing ' + process.pid,
      commands: [['whoami', { usage: '', argsMin: 0, argsMax: 0, run: () => unixctlOk(String(process.pid)) }]] });
    console.log('ready');
    process.once('SIGTERM', async () => { await server.close(); await pidfile.close(); process.exit(0); });
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const pid = child.pid as number;
  t.teardown(() => stopPid(pid, (argv) => argv.includes('--input-type=module')));
  const said = new Promise<string>((resolve) => {
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('\n')) resolve(out.trim());
    });
    child.once('exit', () => resolve(out.trim()));
  });
  return { pid, said };
}

const appctl = (dir: string, ...args: string[]): Promise<AppctlReply> => runAppctl('ovs-appctl', args, { OVS_RUNDIR: dir });

t.test('ovs-appctl -t NAME finds a process through its pidfile', { skip }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pidf-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const first = holder(t, dir);
  t.equal(await first.said, 'ready');
  t.equal(readFileSync(join(dir, 'thing.pid'), 'utf8'), `${first.pid}\n`, 'the pidfile holds the pid and a newline');
  t.same(await appctl(dir, '-t', 'thing', 'whoami'), { code: 0, out: `${first.pid}\n`, err: '' }, 'ovs-appctl accepts the lock and reaches thing.<pid>.ctl');

  const second = holder(t, dir);
  t.match(await second.said, new RegExp(`^refused: .*thing\\.pid: already running as pid ${first.pid}, aborting$`), 'a second process is refused while the first holds it');
  t.same(await appctl(dir, '-t', 'thing', 'whoami'), { code: 0, out: `${first.pid}\n`, err: '' }, 'the refused one changed nothing');

  // Stopped hard: the file stays, unlocked: stale to ovs-appctl and to the next holder.
  process.kill(first.pid, 'SIGKILL');
  await waitForExit(first.pid, 10_000);
  t.ok(existsSync(join(dir, 'thing.pid')), 'a killed holder leaves its pidfile');
  const lockDirsOf = (pid: number): string[] => readdirSync(tmpdir()).filter((n) => n.startsWith(`ovnts-pidlock-${pid}-`));
  t.equal(lockDirsOf(first.pid).length, 1, 'and its lock folder');
  // Its lock goes once every thread of the process has exited, which may come after /proc shows
  // the process a zombie.
  const stale = await until('ovs-appctl to find the pidfile stale', async () => {
    const r = await appctl(dir, '-t', 'thing', 'whoami');
    return r.code === 1 && /cannot read pidfile/.test(r.err) ? r : undefined;
  }, 10_000);
  t.match(stale.err, /cannot read pidfile ".*thing\.pid" \(No such process\)/, `ovs-appctl refuses the unlocked pidfile: ${stale.err.trim()}`);
  const third = holder(t, dir);
  t.equal(await third.said, 'ready', 'a stale pidfile is taken over');
  t.same(lockDirsOf(first.pid), [], 'the dead holder\'s lock folder was swept');
  t.same(await appctl(dir, '-t', 'thing', 'whoami'), { code: 0, out: `${third.pid}\n`, err: '' });
  process.kill(third.pid, 'SIGTERM');
  await waitForExit(third.pid, 10_000);
  t.notOk(existsSync(join(dir, 'thing.pid')), 'a holder stopped by SIGTERM removes its pidfile');
  t.notOk(existsSync(join(dir, `thing.${third.pid}.ctl`)), 'and its socket');
});

t.test('a pidfile in a folder that does not exist is an io error', async (t) => {
  const { createPidfile } = await import('../../bin/lib/pidfile.js');
  await t.rejects(createPidfile('/nonexistent-ovnts-dir/x.pid'), { kind: 'io', message: /nonexistent-ovnts-dir/ });
  const dir = mkdtempSync(join(tmpdir(), 'pidf-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  // An unlocked file with someone's pid (a crash): replaced by this process's.
  writeFileSync(join(dir, 'y.pid'), '999999\n');
  const p = await createPidfile(join(dir, 'y.pid'));
  await p.close();
  t.notOk(existsSync(join(dir, 'y.pid')), 'close() removes it');
});
