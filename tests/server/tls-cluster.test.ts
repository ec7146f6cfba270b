// Goal: a cluster whose gRPC endpoints run over mutual TLS, as a user runs it. `ovnts up -p -c
// -C` elects a leader; writes through every member (the followers forwarding over TLS) succeed
// with `ovnts nbctl -p -c -C`, with the env file alone and with $OVNTS_PRIVATE_KEY...; a
// plaintext client and clients with another CA's certificate fail and write nothing, and the
// members stay up; files that cannot be used are named; a later `up` keeps the identity. A
// member given another CA's certificate cannot take part: the other two keep their leader and
// term. Method: the real command line in child processes, certificates made by ovs-pki.
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import t from 'tap';
import type { Test } from 'tap';
import { TlsCredentials, channelCredentials, tlsChannelOptions } from '../../cluster/tls.js';
import type { StatusReplyJson } from '../../server/admin-service.js';
import { freeBasePort, readUpEnv, runTool, until, type CliResult, type UpEnv } from '../helpers/ovnts-cli.js';
import { ovntsArgv } from '../helpers/ovnts-bin.js';
import { makePki } from '../helpers/pki.js';
import { isAlive, stopPid } from '../helpers/process.js';
import { testdirAfterTeardowns } from '../helpers/testdir.js';

/** The environment of the commands run here: none of the caller's OVNTS_* settings. */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('OVNTS_')) env[k] = v;
  return { ...env, ...extra };
}

/** `ovnts ARGS...` run in `cwd` (its ./.ovnts/env is the one read); a non-zero exit is a result. */
function ovntsIn(cwd: string, args: readonly string[], extraEnv: Record<string, string> = {}): Promise<CliResult> {
  const [file, argv] = ovntsArgv(...args);
  return new Promise((resolve) => {
    execFile(file, argv, { cwd, env: cleanEnv(extraEnv), timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err === null ? 0 : typeof err.code === 'number' ? err.code : -1, stdout, stderr });
    });
  });
}

type MemberStatus = { address: string; status: StatusReplyJson } | { address: string; error: string };

/** `ovnts cluster status --format=json` as run in `cwd` with `args`. */
async function clusterStatus(t: Test, cwd: string, args: readonly string[]): Promise<MemberStatus[]> {
  const r = await ovntsIn(cwd, ['cluster', 'status', '--format=json', ...args]);
  t.equal(r.code, 0, `cluster status: ${r.stderr}`);
  return JSON.parse(r.stdout) as MemberStatus[];
}

/** Whether a channel to `address` with these credentials gets ready (a TLS handshake, if any) within 3 s. */
async function connects(address: string, credentials: grpc.ChannelCredentials, options: grpc.ChannelOptions): Promise<boolean> {
  const c = new grpc.Client(address, credentials, { ...options, 'grpc.use_local_subchannel_pool': 1 });
  try {
    return await new Promise<boolean>((resolve) => c.waitForReady(Date.now() + 3_000, (err) => resolve(err === undefined)));
  } finally {
    c.close();
  }
}

/** Stops the members an env file lists, when `t` ends. */
function stopAtTeardown(t: Test, env: UpEnv): void {
  t.teardown(async () => {
    for (const pid of env.pids) await stopPid(pid, (argv) => argv.includes('central'));
  });
}

t.test('ovnts up -p -c -C: a cluster over TLS, its clients, and the clients it refuses', async (t) => {
  const dir = testdirAfterTeardowns(t);
  const elsewhere = join(dir, 'elsewhere');
  mkdirSync(elsewhere);
  const a = makePki(join(dir, 'pki-a'));
  const b = makePki(join(dir, 'pki-b'));
  const member = a.identity('member');
  const client = a.identity('client');
  const foreign = b.identity('foreign');
  const dataDir = join(dir, '.ovnts');

  // Relative paths, as typed in `dir`: up makes them absolute for the members and the env file.
  const base = await freeBasePort();
  const rel = (p: string): string => relative(dir, p);
  const up = await ovntsIn(dir, ['up', '--detach', `--base-port=${base}`, '-p', rel(member.privateKey), '-c', rel(member.certificate), '-C', rel(member.caCert), '--agent-role=ovn-controller']);
  t.equal(up.code, 0, `up: ${up.stderr}`);
  const env = readUpEnv(dataDir);
  stopAtTeardown(t, env);
  t.match(up.stdout, `TLS: gRPC and the OVSDB doors with ${member.privateKey}, ${member.certificate}, CA ${member.caCert}`, 'up says the members run with TLS');
  const envText = readFileSync(join(dataDir, 'env'), 'utf8');
  t.match(envText, `\nOVNTS_PRIVATE_KEY="${member.privateKey}"\nOVNTS_CERTIFICATE="${member.certificate}"\nOVNTS_CA_CERT="${member.caCert}"\n`, 'the env file names the files, by absolute path');
  for (const pid of env.pids) {
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    t.ok(argv.includes(`--private-key=${member.privateKey}`) && argv.includes(`--certificate=${member.certificate}`) && argv.includes(`--ca-cert=${member.caCert}`), `member ${pid} runs with the identity`);
  }

  // The Raft ports take only TLS peers of the CA: a plaintext connection is refused, one with a
  // certificate of the CA is accepted.
  const raftPorts = env.nbGrpc.map((_, i) => `127.0.0.1:${base + 11 + i}`);
  const clientTls = new TlsCredentials(client);
  for (const address of raftPorts) {
    t.equal(await connects(address, grpc.credentials.createInsecure(), {}), false, `Raft port ${address}: a plaintext peer is refused`);
    t.equal(await connects(address, channelCredentials(clientTls), tlsChannelOptions(clientTls, address)), true, `Raft port ${address}: a peer of the CA connects`);
  }

  // A write through each member, with the client's own certificate: two of them are followers,
  // which forward their write to the leader over TLS.
  const tlsFlags = ['-p', client.privateKey, '-c', client.certificate, '-C', client.caCert];
  const status = await clusterStatus(t, elsewhere, [`--endpoints=${env.nbGrpc.join(',')}`, ...tlsFlags]);
  t.same(status.map((m) => ('status' in m ? m.status.role : m.error)).sort(), ['follower', 'follower', 'leader'], 'cluster status -p -c -C: every member answers, one leads');
  for (const [i, endpoint] of env.nbGrpc.entries()) {
    const r = await ovntsIn(elsewhere, ['nbctl', `--endpoints=${endpoint}`, ...tlsFlags, 'ls-add', `sw${i + 1}`]);
    t.equal(r.code, 0, `nbctl -p -c -C through member ${i + 1}: ${r.stderr}`);
  }

  // With the env file alone: from `dir`, endpoints and files come from .ovnts/env.
  const listed = await ovntsIn(dir, ['nbctl', 'ls-list']);
  t.equal(listed.code, 0, `nbctl with the env file alone: ${listed.stderr}`);
  t.match(listed.stdout, /\(sw1\)\n.*\(sw2\)\n.*\(sw3\)\n$/, 'it reads every write');
  const statusFromEnv = await clusterStatus(t, dir, []);
  t.equal(statusFromEnv.filter((m) => 'status' in m).length, 3, 'cluster status with the env file alone: every member answers');
  // With the environment variables, from a folder without an env file.
  const viaVariables = await ovntsIn(elsewhere, ['nbctl', 'ls-add', 'sw4'], { OVNTS_NB: env.nbGrpc.join(','), OVNTS_PRIVATE_KEY: client.privateKey, OVNTS_CERTIFICATE: client.certificate, OVNTS_CA_CERT: client.caCert });
  t.equal(viaVariables.code, 0, `nbctl with $OVNTS_NB and $OVNTS_PRIVATE_KEY...: ${viaVariables.stderr}`);

  // Refused: in plaintext, with a certificate another CA signed (trusting ours), as a client of
  // another CA. Each is tried on every member and writes nothing.
  const refused: [string, string[]][] = [
    ['plaintext', []],
    ['a certificate of another CA', ['-p', foreign.privateKey, '-c', foreign.certificate, '-C', client.caCert]],
    ['a client of another CA', ['-p', foreign.privateKey, '-c', foreign.certificate, '-C', foreign.caCert]],
  ];
  for (const [i, [what, flags]] of refused.entries()) {
    const r = await ovntsIn(elsewhere, ['nbctl', `--endpoints=${env.nbGrpc.join(',')}`, ...flags, 'ls-add', `refused${i}`]);
    t.equal(r.code, 1, `${what}: nbctl fails`);
    t.match(r.stderr, /^ovnts nbctl: no member answered \(127\.0\.0\.1:\d+: No connection established\. Last error: .*; 127\.0\.0\.1:\d+: No connection established/, `${what}: no member answered it`);
    const s = await ovntsIn(elsewhere, ['cluster', 'status', `--endpoints=${env.nbGrpc.join(',')}`, ...flags]);
    t.equal(s.code, 1, `${what}: cluster status reaches no member`);
  }
  const after = await ovntsIn(dir, ['nbctl', 'ls-list']);
  t.equal(after.code, 0, after.stderr);
  t.notMatch(after.stdout, /refused/, 'nothing the refused clients sent was written');
  t.match(after.stdout, /\(sw4\)/);
  for (const pid of env.pids) t.ok(isAlive(pid), `member ${pid} is still up`);

  // The OVSDB doors serve SSL too: the env file names ssl: remotes, the real ovn-nbctl and
  // ovn-sbctl work with the client's certificate, and a plaintext client gets nothing.
  t.ok(env.nbOvsdb.length === 3 && env.nbOvsdb.every((r) => r.startsWith('ssl:127.0.0.1:')), `NB_OVSDB names ssl: remotes (${env.nbOvsdb.join(',')})`);
  t.ok(env.sbOvsdb.length === 3 && env.sbOvsdb.every((r) => r.startsWith('ssl:127.0.0.1:')), 'SB_OVSDB too');
  if (existsSync('/usr/bin/ovn-nbctl')) {
    const ovnNbctl = (db: string, flags: readonly string[], ...args: string[]): Promise<CliResult> => runTool('ovn-nbctl', [`--db=${db}`, ...flags, '--timeout=10', ...args]);
    const viaDoor = await ovnNbctl(env.nbOvsdb.join(','), tlsFlags, '--wait=sb', 'ls-add', 'sw-door');
    t.equal(viaDoor.code, 0, `ovn-nbctl --db=$NB_OVSDB -p -c -C --wait=sb ls-add: ${viaDoor.stderr}`);
    t.match((await ovnNbctl(env.nbOvsdb.join(','), tlsFlags, 'ls-list')).stdout, /\(sw-door\)/, 'and reads it back');
    const plain = await ovnNbctl(env.nbOvsdb.map((r) => r.replace(/^ssl:/, 'tcp:')).join(','), [], 'ls-add', 'sw-plain');
    t.not(plain.code, 0, 'ovn-nbctl in plaintext against the doors fails');
    const foreignDoor = await ovnNbctl(env.nbOvsdb.join(','), ['-p', foreign.privateKey, '-c', foreign.certificate, '-C', client.caCert], 'ls-add', 'sw-foreign');
    t.not(foreignDoor.code, 0, "ovn-nbctl with another CA's certificate fails");
    const sb = await runTool('ovn-sbctl', [`--db=${env.sbOvsdb.join(',')}`, ...tlsFlags, '--timeout=10', 'chassis-add', 'hv-door', 'geneve', '127.0.0.1']);
    t.equal(sb.code, 0, `ovn-sbctl --db=$SB_OVSDB -p -c -C chassis-add: ${sb.stderr}`);
    const doorList = await ovntsIn(dir, ['nbctl', 'ls-list']);
    t.notMatch(doorList.stdout, /sw-plain|sw-foreign/, 'nothing the refused door clients sent was written');
  }

  // Files that cannot be used: the command names the file, with no stack trace.
  const missing = join(dir, 'missing-key.pem');
  const noKey = await ovntsIn(elsewhere, ['nbctl', `--endpoints=${env.nbGrpc[0]}`, '-p', missing, '-c', client.certificate, '-C', client.caCert, 'ls-list']);
  t.equal(noKey.code, 1);
  t.equal(noKey.stderr, `ovnts nbctl: cannot read the private key ${missing}: ENOENT: no such file or directory, stat '${missing}'\n`, 'nbctl names the missing key');
  const half = await ovntsIn(elsewhere, ['cluster', 'status', `--endpoints=${env.nbGrpc[0]}`, '-p', client.privateKey]);
  t.equal(half.code, 1);
  t.equal(half.stderr, 'ovnts: -p/--private-key, -c/--certificate, -C/--ca-cert go together: -c/--certificate and -C/--ca-cert not given\n', 'the flags go together');
  const wrongKey = await ovntsIn(elsewhere, ['central', '--name=n1', `--data-dir=${join(dir, 'never')}`, '--peers=n1=127.0.0.1:1', '--nb-peers=n1=127.0.0.1:2', '-p', foreign.privateKey, '-c', member.certificate, '-C', member.caCert]);
  t.equal(wrongKey.code, 1);
  t.equal(wrongKey.stderr, `ovnts: the private key ${foreign.privateKey} does not match the certificate ${member.certificate}\n`, 'central names a key that does not match its certificate');
  t.notOk(existsSync(join(dir, 'never')), 'and started nothing');
  const psslNoTls = await ovntsIn(elsewhere, ['central', '--name=n1', `--data-dir=${join(dir, 'never')}`, '--peers=n1=127.0.0.1:1', '--nb-peers=n1=127.0.0.1:2', '--ovsdb=pssl:1:127.0.0.1']);
  t.equal(psslNoTls.code, 1);
  t.equal(psslNoTls.stderr, "ovnts: --ovsdb pssl:1:127.0.0.1: pssl: needs this member's -p/--private-key, -c/--certificate and -C/--ca-cert\n", 'central refuses a pssl: door without an identity');
  const protocolsAlone = await ovntsIn(elsewhere, ['central', '--name=n1', `--data-dir=${join(dir, 'never')}`, '--peers=n1=127.0.0.1:1', '--nb-peers=n1=127.0.0.1:2', '-p', member.privateKey, '-c', member.certificate, '-C', member.caCert, '--ovsdb=pssl:1:127.0.0.1', '--ssl-protocols=SSLv3']);
  t.equal(protocolsAlone.code, 1);
  t.match(protocolsAlone.stderr, /SSLv3: SSL protocol not recognized/, 'and one whose --ssl-protocols names no TLS version');
  const roleNoTls = await ovntsIn(elsewhere, ['central', '--name=n1', `--data-dir=${join(dir, 'never')}`, '--peers=n1=127.0.0.1:1', '--nb-peers=n1=127.0.0.1:2', '--agent-role=ovn-controller']);
  t.equal(roleNoTls.code, 1);
  t.equal(roleNoTls.stderr, "ovnts: --agent-role ovn-controller: an agent's id is the common name of its certificate, so the role needs this member's -p/--private-key, -c/--certificate and -C/--ca-cert\n", 'central refuses an agent role without an identity');
  t.notOk(existsSync(join(dir, 'never')), 'none of them started anything');
  const otherData = join(dir, 'other-cluster');
  const upMissing = await ovntsIn(dir, ['up', '--detach', `--data-dir=${otherData}`, `--base-port=${base}`, '-p', member.privateKey, '-c', member.certificate, '-C', join(dir, 'no-ca.pem')]);
  t.equal(upMissing.code, 1);
  t.equal(upMissing.stderr, `ovnts: cannot read the CA certificate ${join(dir, 'no-ca.pem')}: ENOENT: no such file or directory, stat '${join(dir, 'no-ca.pem')}'\n`, 'up names the missing CA certificate');
  t.notOk(existsSync(join(otherData, 'env')) || existsSync(join(otherData, 'n1.log')), 'and started no member');
  const upRoleNoTls = await ovntsIn(dir, ['up', '--detach', `--data-dir=${otherData}`, `--base-port=${base}`, '--agent-role=ovn-controller']);
  t.equal(upRoleNoTls.code, 1);
  t.equal(upRoleNoTls.stderr, "ovnts: --agent-role ovn-controller: an agent's id is the common name of its certificate, so the role needs the members' -p/--private-key, -c/--certificate and -C/--ca-cert\n", 'up refuses an agent role without an identity');
  t.notOk(existsSync(join(otherData, 'env')) || existsSync(join(otherData, 'n1.log')), 'and started no member either');

  // Stopped and started again without the flags: the folder's env file keeps the identity.
  const down = await ovntsIn(dir, ['down']);
  t.equal(down.code, 0, down.stderr);
  const again = await ovntsIn(dir, ['up', '--detach', `--base-port=${base}`]);
  t.equal(again.code, 0, `up again: ${again.stderr}`);
  const envAgain = readUpEnv(dataDir);
  stopAtTeardown(t, envAgain);
  t.match(readFileSync(join(dataDir, 'env'), 'utf8'), `\nOVNTS_PRIVATE_KEY="${member.privateKey}"\n`, 'the env file still names the files');
  t.match(readFileSync(join(dataDir, 'env'), 'utf8'), '\nAGENT_ROLE="ovn-controller"\n', 'and the agents\' role');
  t.ok(envAgain.pids.every((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes('--agent-role=ovn-controller')), 'which the restarted members are given');
  const relisted = await ovntsIn(dir, ['nbctl', 'ls-list']);
  t.equal(relisted.code, 0, relisted.stderr);
  t.match(relisted.stdout, /\(sw4\)/, 'the restarted members serve over TLS');
});

t.test('a member given a certificate from another CA cannot take part; the other two keep their leader', async (t) => {
  const dir = testdirAfterTeardowns(t);
  const a = makePki(join(dir, 'pki-a'));
  const b = makePki(join(dir, 'pki-b'));
  const identities = [a.identity('n1'), a.identity('n2'), b.identity('n3')];
  const base = await freeBasePort();
  const names = ['n1', 'n2', 'n3'];
  const peers = names.map((n, i) => `${n}=127.0.0.1:${base + 11 + i}`).join(',');
  const nbPeers = names.map((n, i) => `${n}=127.0.0.1:${base + 1 + i}`).join(',');
  const logs: string[] = ['', '', ''];
  for (const [i, name] of names.entries()) {
    const id = identities[i] as (typeof identities)[number];
    const [file, argv] = ovntsArgv('central', `--name=${name}`, `--data-dir=${join(dir, name)}`, '--cluster-id=tls-foreign', `--peers=${peers}`, `--nb-peers=${nbPeers}`, '--unixctl=none', '-p', id.privateKey, '-c', id.certificate, '-C', id.caCert);
    const child = spawn(file, argv, { stdio: ['ignore', 'pipe', 'pipe'], env: cleanEnv() });
    child.stdout.on('data', (d: Buffer) => (logs[i] += d.toString()));
    child.stderr.on('data', (d: Buffer) => (logs[i] += d.toString()));
    t.teardown(() => (child.pid === undefined ? undefined : stopPid(child.pid, (argv) => argv.includes('central'))));
  }
  const clientA = a.identity('client');
  const clientB = b.identity('client');
  const flagsA = ['-p', clientA.privateKey, '-c', clientA.certificate, '-C', clientA.caCert];
  const flagsB = ['-p', clientB.privateKey, '-c', clientB.certificate, '-C', clientB.caCert];
  const endpoints = names.map((_, i) => `127.0.0.1:${base + 1 + i}`);
  const two = `--endpoints=${endpoints[0]},${endpoints[1]}`;
  const statusOf = async (args: string[]): Promise<StatusReplyJson[]> => {
    const r = await ovntsIn(dir, ['cluster', 'status', '--format=json', ...args]);
    return (JSON.parse(r.stdout) as MemberStatus[]).flatMap((m) => ('status' in m ? [m.status] : []));
  };
  const leader = await until(() => `a leader among n1 and n2; logs:\n${logs.join('\n')}`, async () => (await statusOf([two, ...flagsA])).find((s) => s.role === 'leader'));
  t.ok(leader.id === 1 || leader.id === 2, `member ${leader.id} leads`);
  for (const [i, endpoint] of endpoints.slice(0, 2).entries()) {
    const r = await ovntsIn(dir, ['nbctl', `--endpoints=${endpoint}`, ...flagsA, 'ls-add', `sw${i + 1}`]);
    t.equal(r.code, 0, `a write through n${i + 1}: ${r.stderr}`);
  }
  // n3 keeps calling elections that never reach the others (they refuse its connections, and it
  // theirs): the leader and its term stay as they were, and n3 never hears of the writes.
  await new Promise((r) => setTimeout(r, 3_000));
  const later = (await statusOf([two, ...flagsA])).find((s) => s.role === 'leader');
  t.equal(later?.id, leader.id, 'the same member leads');
  t.equal(later?.term, leader.term, 'in the same term');
  const seen = later?.peers.find((p) => p.id === 3);
  t.ok(seen !== undefined && seen.match === 0 && seen.lastContactMsAgo < 0, `the leader never heard from n3 (${JSON.stringify(seen)})`);
  const [n3] = await statusOf([`--endpoints=${endpoints[2]}`, ...flagsB]);
  t.ok(n3 !== undefined, 'n3 answers a client of its own CA');
  t.ok(n3 !== undefined && n3.role !== 'leader' && n3.leader === 0, `n3 knows no leader (${n3?.role}, leader ${n3?.leader})`);
  t.ok(n3 !== undefined && later !== undefined && n3.revision < later.revision, `n3 has none of the writes (revision ${n3?.revision} against ${later?.revision})`);
  const stale = await ovntsIn(dir, ['nbctl', `--endpoints=${endpoints[2]}`, ...flagsA, 'ls-list']);
  t.equal(stale.code, 1, 'a client of the cluster\'s CA cannot reach n3 either');
});
