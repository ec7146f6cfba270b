// Goal: `ovs-appctl -t <member socket>` gets from ovnts central members what OVN operators get
// from their clustered ovsdb-servers and ovn-northd, filled from the real Raft state, and no
// client can take a member down through its socket. Method: a 3-member `ovnts up`; the real
// ovs-appctl at each member's socket (UNIXCTL in the env file, in a data folder deeper than
// sun_path allows); cluster/status parsed and checked against `ovnts cluster status` and
// against each other member's, its field names against a real clustered ovsdb-server's
// (ovsdb-tool create-cluster); status and inc-engine/show-stats against `ovnts sbctl
// engine-stats`; then a leadership transfer, a protocol fuzz and a flood of connections on a
// member (which keeps serving), and exit. And a member started by hand at ovn-ctl's two socket
// names answers at both.
import { execFileSync, spawn } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import t from 'tap';
import type { Test } from 'tap';
import { runAppctl, toolInstalled, type AppctlReply } from '../helpers/appctl.js';
import { JsonRpcClient } from '../helpers/jsonrpc-client.js';
import { freeBasePort, ovnts, until, upCluster } from '../helpers/ovnts-cli.js';
import { ovntsArgv } from '../helpers/ovnts-bin.js';
import { isAlive, stopPid, waitForExit } from '../helpers/process.js';
import { testdirAfterTeardowns } from '../helpers/testdir.js';

const skip = !toolInstalled('ovs-appctl') || !toolInstalled('ovsdb-tool') ? 'Open vSwitch is not installed'
  : existsSync('/usr/share/ovn/ovn-nb.ovsschema') ? false : 'OVN\'s schemas are not installed';

const appctl = (target: string, ...args: string[]): Promise<AppctlReply> => runAppctl('ovs-appctl', ['-t', target, ...args]);

/** cluster/status parsed: the nickname line, "Field: value" lines, the server lines. */
interface ClusterStatus {
  readonly nick: string;
  readonly fields: Map<string, string>;
  readonly servers: string[];
}

function parseStatus(text: string): ClusterStatus {
  const lines = text.split('\n');
  const fields = new Map<string, string>();
  const servers: string[] = [];
  let inServers = false;
  for (const line of lines.slice(1)) {
    if (inServers) {
      if (line !== '') servers.push(line.trim());
      continue;
    }
    if (line === 'Servers:') {
      inServers = true;
      continue;
    }
    // "Last Election started N ms ago, reason: R" is a field too (with no colon after its name).
    const m = /^(Last Election started) (.*)$/.exec(line) ?? /^([^:]+): ?(.*)$/.exec(line);
    if (m !== null) fields.set(m[1] as string, m[2] as string);
  }
  return { nick: lines[0] as string, fields, servers };
}

/** A real clustered ovsdb-server of one member (create-cluster), its cluster/status as it is now. */
async function realClusterStatus(t: Test): Promise<ClusterStatus> {
  const dir = mkdtempSync(join(tmpdir(), 'real-raft-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  execFileSync('ovsdb-tool', ['-vconsole:off', 'create-cluster', join(dir, 'nb.db'), '/usr/share/ovn/ovn-nb.ovsschema', `unix:${join(dir, 's1.raft')}`]);
  const ctl = join(dir, 's1.ctl');
  execFileSync('ovsdb-server', ['--detach', '--no-chdir', '-vconsole:off', `--pidfile=${join(dir, 's1.pid')}`, `--log-file=${join(dir, 's1.log')}`, `--unixctl=${ctl}`, `--remote=punix:${join(dir, 'nb.sock')}`, join(dir, 'nb.db')]);
  const pid = Number(readFileSync(join(dir, 's1.pid'), 'utf8').trim());
  t.teardown(() => stopPid(pid, (argv) => (argv[0] ?? '').endsWith('ovsdb-server') && argv.some((a) => a.includes(dir))));
  return until('the real server to lead', async () => {
    const s = parseStatus((await appctl(ctl, 'cluster/status', 'OVN_Northbound')).out);
    return s.fields.get('Role') === 'leader' ? s : undefined;
  }, 20_000);
}

/** The _Server database's Database row of a door: its cid and sid. */
async function serverRow(remote: string, db: string): Promise<{ cid: string; sid: string }> {
  const m = /^tcp:([\d.]+):(\d+)$/.exec(remote) as RegExpExecArray;
  const c = await JsonRpcClient.connect({ host: m[1] as string, port: Number(m[2]) });
  try {
    const [r] = (await c.request('transact', ['_Server', { op: 'select', table: 'Database', where: [['name', '==', db]], columns: ['cid', 'sid'] }])) as [{ rows: { cid: [string, string]; sid: [string, string] }[] }];
    return { cid: r.rows[0]?.cid[1] as string, sid: r.rows[0]?.sid[1] as string };
  } finally {
    await c.close();
  }
}

t.test('a 3-member cluster answers ovs-appctl as OVN\'s central daemons', { skip }, async (t) => {
  const dir = testdirAfterTeardowns(t);
  const env = await upCluster(t, dir);
  t.equal(env.unixctl.length, 3, `UNIXCTL names a socket per member: ${env.unixctl.join(' ')}`);
  t.ok(env.unixctl.every((p) => Buffer.byteLength(p) > 107), 'each deeper than sun_path allows (bound through /proc/self/fd)');
  const endpoints = `--endpoints=${env.nbGrpc.join(',')}`;
  const real = await realClusterStatus(t);

  const statuses = await Promise.all(env.unixctl.map(async (sock) => parseStatus((await appctl(sock, 'cluster/status', 'OVN_Northbound')).out)));
  const admin = JSON.parse((await ovnts('cluster', 'status', endpoints, '--format=json')).stdout) as { status: { id: number; role: string; term: number; firstIndex: number; lastIndex: number; commit: number; applied: number } }[];

  t.test('cluster/status OVN_Northbound: the Raft state each member has', async (t) => {
    const leaders = statuses.filter((s) => s.fields.get('Role') === 'leader');
    t.equal(leaders.length, 1, 'one member says Role: leader');
    const leader = leaders[0] as ClusterStatus;
    const nicks = statuses.map((s) => s.nick);
    t.equal(new Set(nicks).size, 3, `three servers, three nicknames (${nicks.join(' ')})`);
    for (const [i, s] of statuses.entries()) {
      const a = admin[i]?.status;
      t.equal(s.fields.get('Name'), 'OVN_Northbound');
      t.equal(s.fields.get('Status'), 'cluster member');
      t.equal(s.fields.get('Role'), a?.role, `member ${i + 1}: the role ovnts cluster status gives`);
      t.equal(s.fields.get('Term'), String(a?.term), `member ${i + 1}: its term`);
      t.equal(s.fields.get('Log'), `[${a?.firstIndex}, ${(a?.lastIndex ?? 0) + 1}]`, `member ${i + 1}: its log`);
      t.equal(s.fields.get('Entries not yet committed'), String((a?.lastIndex ?? 0) - (a?.commit ?? 0)));
      t.equal(s.fields.get('Cluster ID'), leader.fields.get('Cluster ID'), 'one cluster id');
      t.equal(s.fields.get('Leader'), s === leader ? 'self' : leader.nick, `member ${i + 1} names the leader`);
      t.equal(s.fields.get('Election timer'), '1000', 'the election timer (10 ticks of 100 ms)');
      t.match(s.fields.get('Address'), /^tcp:127\.0\.0\.1:\d+$/);
      t.equal(s.servers.length, 3, `member ${i + 1} lists the three servers`);
      t.same(s.servers.map((l) => l.split(' ')[0]).sort(), [...nicks].sort(), 'by their nicknames');
      t.ok(s.servers.some((l) => l.startsWith(`${s.nick} `) && l.includes('(self)')), 'itself marked (self)');
      t.equal(s.fields.get('Server ID')?.split(' ')[0], s.nick, 'the nickname is the server id\'s first four digits');
    }
    for (const other of statuses.filter((s) => s !== leader)) {
      t.match(leader.servers.find((l) => l.startsWith(`${other.nick} `)), /next_index=\d+ match_index=\d+ last msg \d+ ms ago$/, `the leader shows its progress with ${other.nick}`);
      t.match(leader.fields.get('Connections'), new RegExp(`->${other.nick}\\b`), `the leader sends to ${other.nick}`);
      t.match(leader.fields.get('Connections'), new RegExp(`<-${other.nick}\\b`), `and hears from it`);
    }
    t.match(leader.fields.get('Last Election won'), /^\d+ ms ago$/, 'the leader says when it won');
    t.same([...leader.fields.keys()].sort(), [...real.fields.keys()].sort(), `a leader's fields are a real clustered ovsdb-server leader's (${[...real.fields.keys()].join(', ')})`);
    t.match(real.servers[0], /^s1 \(\w{4} at unix:.*\) \(self\) next_index=\d+ match_index=\d+$/, 'and its server lines have the shape of ours');
  });

  t.test('cluster/cid, cluster/sid and OVN_Southbound agree with the _Server databases', async (t) => {
    for (const [i, sock] of env.unixctl.entries()) {
      const cid = (await appctl(sock, 'cluster/cid', 'OVN_Northbound')).out.trim();
      const nbSid = (await appctl(sock, 'cluster/sid', 'OVN_Northbound')).out.trim();
      const sbSid = (await appctl(sock, 'cluster/sid', 'OVN_Southbound')).out.trim();
      t.same(await serverRow(env.nbOvsdb[i] as string, 'OVN_Northbound'), { cid, sid: nbSid }, `member ${i + 1}: NB cid and sid are its NB door's`);
      t.same(await serverRow(env.sbOvsdb[i] as string, 'OVN_Southbound'), { cid, sid: sbSid }, `member ${i + 1}: SB sid is its SB door's, the cid the same`);
      t.equal(statuses[i]?.fields.get('Server ID'), `${nbSid.slice(0, 4)} (${nbSid})`);
      t.equal(statuses[i]?.fields.get('Cluster ID'), `${cid.slice(0, 4)} (${cid})`);
      const sb = parseStatus((await appctl(sock, 'cluster/status', 'OVN_Southbound')).out);
      t.equal(sb.fields.get('Name'), 'OVN_Southbound');
      t.equal(sb.fields.get('Server ID'), `${sbSid.slice(0, 4)} (${sbSid})`);
      t.equal(sb.fields.get('Role'), statuses[i]?.fields.get('Role'), 'one Raft group: the same role for both databases');
    }
    const sock = env.unixctl[0] as string;
    t.match((await appctl(sock, 'cluster/status', 'OVN_IC_Northbound')).err, /^unknown cluster\n/, 'another database: ovsdb/raft.c\'s error');
    t.match((await appctl(sock, 'cluster/status')).err, /^"cluster\/status" command requires at least 1 arguments\n/);
    t.same(await appctl(sock, 'ovsdb-server/list-dbs'), { code: 0, out: 'OVN_Northbound\nOVN_Southbound\n_Server\n', err: '' });
    t.match((await appctl(sock, 'memory/show')).out, /^agent-streams:\d+ heap-used-kB:\d+ nb-rows:[1-9]\d* ovsdb-sessions:\d+ raft-connections:[1-9]\d* raft-log:\d+ rss-kB:\d+ sb-rows:[1-9]\d* watches:\d+\n$/, 'memory/show: key:value pairs');
    t.match((await appctl(sock, 'version')).out, /^ovnts central \S+ /, 'version');
  });

  t.test('ovn-northd\'s status and inc-engine/show-stats', async (t) => {
    const want = statuses.map((s) => (s.fields.get('Role') === 'leader' ? 'Status: active\n' : 'Status: standby\n'));
    t.same(await Promise.all(env.unixctl.map(async (sock) => (await appctl(sock, 'status')).out)), want, 'active on the leader, standby elsewhere');
    // A write every member's engine follows incrementally.
    const nbctl = await ovnts('nbctl', endpoints, 'ls-add', 'sw-appctl');
    t.equal(nbctl.code, 0, nbctl.stderr);
    await until('every member applied it', async () => {
      const stats = JSON.parse((await ovnts('sbctl', 'engine-stats', endpoints, '--format=json')).stdout) as { stats: { revision: number } }[];
      return new Set(stats.map((s) => s.stats.revision)).size === 1 ? true : undefined;
    });
    const stats = JSON.parse((await ovnts('sbctl', 'engine-stats', endpoints, '--format=json')).stdout) as { stats: { nodes: { name: string; recomputes: number; incrementalRuns: number }[] } }[];
    for (const [i, sock] of env.unixctl.entries()) {
      const text = (await appctl(sock, 'inc-engine/show-stats')).out;
      const nodes = stats[i]?.stats.nodes ?? [];
      t.ok(nodes.length > 3, `member ${i + 1}: ${nodes.length} engine nodes`);
      t.equal(text, nodes.map((n) => `Node: ${n.name}\n- recompute: ${String(n.recomputes).padStart(12)}\n- compute:   ${String(n.incrementalRuns).padStart(12)}\n- abort:     ${String(0).padStart(12)}\n`).join(''), `member ${i + 1}: the counters of ovnts sbctl engine-stats, in ovn-northd's format`);
      t.ok(nodes.some((n) => n.incrementalRuns > 0), 'some nodes ran incrementally');
      const first = nodes[0] as { name: string; recomputes: number };
      t.equal((await appctl(sock, 'inc-engine/show-stats', first.name, 'recompute')).out, `${first.recomputes}\n`, 'one node\'s one counter');
      t.equal((await appctl(sock, 'inc-engine/show-stats', first.name, 'bogus')).out, 'Invalid stat type : bogus\n', 'an unknown counter, as OVN answers it');
    }
  });

  t.test('a leadership transfer shows in the new leader\'s cluster/status', async (t) => {
    const leader = statuses.findIndex((s) => s.fields.get('Role') === 'leader');
    const target = leader === 0 ? 1 : 0;
    const moved = await ovnts('cluster', 'transfer-leader', String((admin[target]?.status.id)), endpoints);
    t.equal(moved.code, 0, moved.stderr);
    const s = await until('the new leader', async () => {
      const st = parseStatus((await appctl(env.unixctl[target] as string, 'cluster/status', 'OVN_Northbound')).out);
      return st.fields.get('Role') === 'leader' ? st : undefined;
    });
    t.match(s.fields.get('Last Election started'), /^\d+ ms ago, reason: leadership_transfer$/, 'its election was a transfer\'s');
    t.equal((await appctl(env.unixctl[target] as string, 'status')).out, 'Status: active\n', 'and it is the active northd now');
  });

  t.test('hostile clients leave the member serving', async (t) => {
    const sock = env.unixctl[1] as string;
    const pid = env.pids[1] as number;
    // The path is past sun_path: raw clients connect through /proc/self/fd, as ovs-appctl does.
    const dirFd = openSync(dirname(sock), 'r');
    t.teardown(() => closeSync(dirFd));
    const viaFd = `/proc/self/fd/${dirFd}/${basename(sock)}`;
    const send = (data: string | Buffer): Promise<string> => new Promise((resolve) => {
      const s = net.connect({ path: viaFd });
      let text = '';
      s.on('data', (d) => (text += d.toString()));
      s.on('error', () => resolve(text));
      s.on('close', () => resolve(text));
      s.write(data);
      setTimeout(() => s.destroy(), 2000).unref();
    });
    for (const bad of ['{"method": "status", "params": [}', '[1,2,3]', '{"method":"status","params":"x","id":1}', '{"method":"status","params":[]}', `{"method":"status","params":["${'x'.repeat(2 * 1024 * 1024)}"],"id":1}`, Buffer.from([0xff, 0xfe, 0x00, 0x7b])]) {
      t.equal(await send(bad), '', `no answer to ${typeof bad === 'string' ? JSON.stringify(bad.slice(0, 40)) : 'binary bytes'}: the connection is closed`);
    }
    t.same(JSON.parse(await send('{"method":"cluster/status","params":[7],"id":3}')), { result: null, error: '"cluster/status" command has non-string argument\n', id: 3 }, 'a non-string argument: an error reply');
    // More connections than the socket takes: those past its bound are closed at once.
    const flood = Array.from({ length: 150 }, () => net.connect({ path: viaFd }).on('error', () => undefined));
    const closed = await Promise.all(flood.map((c) => new Promise<boolean>((resolve) => {
      c.once('close', () => resolve(true));
      setTimeout(() => resolve(false), 1000).unref();
    })));
    t.ok(closed.filter(Boolean).length >= 150 - 64, `connections past the 64 held are closed (${closed.filter(Boolean).length} of 150)`);
    for (const c of flood) c.destroy();
    await until('the socket answers again', async () => ((await appctl(sock, 'status')).code === 0 ? true : undefined), 10_000);
    t.same(await appctl(sock, 'status'), { code: 0, out: (await appctl(sock, 'cluster/status', 'OVN_Northbound')).out.includes('Role: leader') ? 'Status: active\n' : 'Status: standby\n', err: '' }, 'answers once the flood is gone');
    t.ok(isAlive(pid), 'the member is alive');
    t.equal((await ovnts('nbctl', `--endpoints=${env.nbGrpc[1]}`, 'ls-list')).code, 0, 'and serves the Northbound');
  });

  t.test('exit stops a member and removes its socket', async (t) => {
    const sock = env.unixctl[2] as string;
    const pid = env.pids[2] as number;
    t.same(await appctl(sock, 'exit'), { code: 0, out: '', err: '' });
    await waitForExit(pid, 30_000);
    t.notOk(existsSync(sock), 'the socket is gone');
    t.equal((await ovnts('nbctl', `--endpoints=${env.nbGrpc[0]}`, 'ls-list')).code, 0, 'two members still serve');
  });
});

t.test('a member started by hand answers at ovn-ctl\'s socket names, both alike', { skip }, async (t) => {
  const run = mkdtempSync(join(tmpdir(), 'ovn-run-'));
  t.teardown(() => rmSync(run, { recursive: true, force: true }));
  const base = await freeBasePort();
  const nb = join(run, 'ovnnb_db.ctl');
  const sb = join(run, 'ovnsb_db.ctl');
  const child = spawn(...ovntsArgv('central', '--name=n1', `--data-dir=${testdirAfterTeardowns(t)}`, `--peers=n1=127.0.0.1:${base + 11}`, `--nb-peers=n1=127.0.0.1:${base + 1}`, `--unixctl=${nb},${sb}`), { stdio: ['ignore', 'pipe', 'inherit'] });
  const pid = child.pid as number;
  t.teardown(() => stopPid(pid, (argv) => argv.includes('central')));
  const ready = await new Promise<{ unixctl: string[] }>((resolve) => {
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const line = out.split('\n').find((l) => l.startsWith('{"ready"'));
      if (line !== undefined) resolve((JSON.parse(line) as { ready: { unixctl: string[] } }).ready);
    });
  });
  t.same(ready.unixctl, [nb, sb], 'its ready line names both sockets');
  for (const [sock, db] of [[nb, 'OVN_Northbound'], [sb, 'OVN_Southbound']] as const) {
    const s = await until(`${db} leads`, async () => {
      const st = parseStatus((await appctl(sock, 'cluster/status', db)).out);
      return st.fields.get('Role') === 'leader' ? st : undefined;
    }, 20_000);
    t.equal(s.servers.length, 1, `${sock}: cluster/status ${db}, one server`);
  }
  t.equal((await appctl(nb, 'status')).out, (await appctl(sb, 'status')).out, 'the same commands at both');
  process.kill(pid, 'SIGTERM');
  await waitForExit(pid, 30_000);
  t.notOk(existsSync(nb) || existsSync(sb), 'a stopped member removes both');
});
