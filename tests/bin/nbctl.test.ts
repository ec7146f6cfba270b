// nbctl's commands with ovn-nbctl's meanings and messages: switches, ports, routers, ACLs on
// switches and port groups, address sets, and the generic database commands. Method: the
// command functions in-process against three central nodes (real gRPC on loopback).
import t from 'tap';
import { runNbctl } from '../../bin/lib/nbctl/commands.js';
import { Nb, NbctlError } from '../../bin/lib/nbctl/nb.js';
import { NorthboundClient } from '../../server/northbound-service.js';
import { startCentralCluster } from '../helpers/central-cluster.js';

t.test('nbctl commands', async (t) => {
  const cluster = await startCentralCluster(t.testdir());
  t.teardown(() => cluster.stop());
  // Through a follower and the leader alike: the client tries the members in order.
  const nb = new Nb(cluster.members.map((m) => new NorthboundClient(m.address, 10_000)));
  t.teardown(() => nb.close());
  const run = (...words: string[]): Promise<string> => runNbctl(nb, words);
  const fails = async (re: RegExp, ...words: string[]): Promise<void> => {
    const err = await run(...words).then(() => undefined, (e: unknown) => e);
    t.ok(err instanceof NbctlError, `${words.join(' ')} fails as a command error`);
    t.match((err as Error | undefined)?.message, re, `${words.join(' ')}: ${re}`);
  };

  await run('ls-add', 'sw0');
  await fails(/^sw0: a switch with this name already exists$/, 'ls-add', 'sw0');
  t.equal(await run('--may-exist', 'ls-add', 'sw0'), '');
  await run('lsp-add', 'sw0', 'p1');
  await run('lsp-add', 'sw0', 'p2');
  await fails(/^p1: a port with this name already exists$/, 'lsp-add', 'sw0', 'p1');
  await fails(/^nope: switch name not found$/, 'lsp-add', 'nope', 'p9');
  await run('lsp-set-addresses', 'p1', '00:00:00:00:00:01 10.0.0.1');
  t.equal(await run('lsp-get-addresses', 'p1'), '00:00:00:00:00:01 10.0.0.1\n');
  await run('lsp-set-port-security', 'p1', '00:00:00:00:00:01 10.0.0.1');
  t.equal(await run('lsp-get-port-security', 'p1'), '00:00:00:00:00:01 10.0.0.1\n');
  await run('lsp-set-type', 'p2', 'localport');
  t.equal(await run('lsp-get-type', 'p2'), 'localport\n');
  await fails(/type 'bogus' is unrecognized/, 'lsp-set-type', 'p2', 'bogus');
  await run('lsp-set-options', 'p2', 'a=1', 'b=2');
  t.equal(await run('lsp-get-options', 'p2'), 'a=1\nb=2\n');
  t.match(await run('lsp-list', 'sw0'), /^[0-9a-f-]{36} \(p1\)\n[0-9a-f-]{36} \(p2\)\n$/);
  t.equal(await run('lsp-get-up', 'p1'), 'down\n');

  await run('lr-add', 'lr0');
  await run('lrp-add', 'lr0', 'lrp0', '00:00:00:00:ff:01', '10.0.0.254/24');
  await fails(/invalid mac address/, 'lrp-add', 'lr0', 'lrp1', 'zz', '10.0.1.1/24');
  t.match(await run('lrp-list', 'lr0'), /\(lrp0\)/);
  t.match(await run('show'), /switch [0-9a-f-]{36} \(sw0\)\n {4}port p1\n {8}addresses: \["00:00:00:00:00:01 10\.0\.0\.1"\]\n {4}port p2\n {8}type: localport\nrouter [0-9a-f-]{36} \(lr0\)\n {4}port lrp0\n {8}mac: "00:00:00:00:ff:01"\n {8}networks: \["10\.0\.0\.254\/24"\]\n/);

  await run('acl-add', 'sw0', 'to-lport', '1001', 'ip4 && tcp.dst == 22', 'allow-related');
  await run('acl-add', 'sw0', 'from-lport', '100', 'ip4', 'drop');
  await fails(/Same ACL already existed on the ls sw0/, 'acl-add', 'sw0', 'to-lport', '1001', 'ip4 && tcp.dst == 22', 'allow-related');
  await fails(/direction must be/, 'acl-add', 'sw0', 'sideways', '1', 'ip4', 'drop');
  await fails(/priority must in range/, 'acl-add', 'sw0', 'to-lport', '99999', 'ip4', 'drop');
  t.equal(await run('acl-list', 'sw0'), `from-lport   100 (ip4) drop\n  to-lport  1001 (ip4 && tcp.dst == 22) allow-related\n`);
  await run('pg-add', 'pg0', 'p1', 'p2');
  await run('acl-add', 'pg0', 'to-lport', '1002', 'outport == @pg0 && ip4', 'allow');
  t.equal(await run('acl-list', 'pg0'), `  to-lport  1002 (outport == @pg0 && ip4) allow\n`);
  await run('acl-del', 'sw0', 'to-lport');
  t.equal(await run('acl-list', 'sw0'), `from-lport   100 (ip4) drop\n`);
  await run('pg-set-ports', 'pg0', 'p1');
  t.match(await run('get', 'Port_Group', 'pg0', 'ports'), /^\[[0-9a-f-]{36}\]\n$/);
  await run('as-add', 'as1', '10.0.0.1', '10.0.0.2');
  t.equal(await run('get', 'Address_Set', 'as1', 'addresses'), '["10.0.0.1", "10.0.0.2"]\n');

  // Generic database commands.
  await run('set', 'Logical_Switch', 'sw0', 'other_config:mcast_snoop=true', 'external_ids={a=b}');
  t.equal(await run('get', 'Logical_Switch', 'sw0', 'other_config:mcast_snoop'), '"true"\n');
  t.equal(await run('get', 'Logical_Switch', 'sw0', 'external_ids'), '{a=b}\n');
  t.match(await run('find', 'Logical_Switch', 'name=sw0'), /name\s+: sw0\n/);
  const uuid = (await run('create', 'Address_Set', 'name=as2', 'addresses=[1.1.1.1,2.2.2.2]')).trim();
  t.match(uuid, /^[0-9a-f-]{36}$/);
  t.match(await run('list', 'Address_Set', 'as2'), /addresses\s+: \["1\.1\.1\.1", "2\.2\.2\.2"\]/);
  await run('destroy', 'Address_Set', 'as2');
  await fails(/as2: Address_Set row name not found/, 'get', 'Address_Set', 'as2', 'name');
  await fails(/unknown table "Nope"/, 'list', 'Nope');
  await fails(/does not contain a column whose name matches "nope"/, 'get', 'Logical_Switch', 'sw0', 'nope');

  await run('lsp-del', 'p2');
  await fails(/^p2: port name not found$/, 'lsp-del', 'p2');
  t.equal(await run('--if-exists', 'lsp-del', 'p2'), '');
  await run('lrp-del', 'lrp0');
  await run('lr-del', 'lr0');
  await run('pg-del', 'pg0');
  await run('as-del', 'as1');
  await run('ls-del', 'sw0');
  t.equal(await run('ls-list'), '');
  t.equal((await cluster.members[0]?.client.list('Logical_Switch_Port'))?.rows.length, 0, 'ports went with their switch');
  await fails(/unknown command 'frob'/, 'frob');
  await fails(/'lsp-add' command requires 2 to 4 arguments/, 'lsp-add', 'sw0');
});

t.test('--wait=sb and --wait=hv bump nb_cfg and return once the cluster caught up', async (t) => {
  const cluster = await startCentralCluster(t.testdir());
  t.teardown(() => cluster.stop());
  const nbFor = (): Nb => new Nb(cluster.members.map((m) => new NorthboundClient(m.address, 10_000)));
  const plain = nbFor();
  t.teardown(() => plain.close());
  const noGlobal = nbFor();
  const err = await runNbctl(noGlobal, ['--wait=sb', 'ls-add', 'early']).then(() => undefined, (e: unknown) => e);
  noGlobal.close();
  t.match((err as Error | undefined)?.message, /no NB_Global row/, 'without NB_Global there is nothing to wait on');
  t.equal((await runNbctl(plain, ['ls-list'])).trim(), '', 'and the failed --wait transaction changed nothing');
  await runNbctl(plain, ['create', 'NB_Global']);
  const cfg = async (): Promise<Record<string, unknown>> => (await cluster.members[0]!.client.list('NB_Global')).rows[0] as Record<string, unknown>;
  t.match(await cfg(), { nb_cfg: 0, sb_cfg: 0, hv_cfg: 0 });

  const sb = nbFor();
  await runNbctl(sb, ['--wait=sb', 'ls-add', 'sw0']);
  sb.close();
  t.match(await cfg(), { nb_cfg: 1, sb_cfg: 1 }, 'the change and the nb_cfg bump are one transaction');
  const hv = nbFor();
  t.equal(await runNbctl(hv, ['--wait=hv', 'sync']), '', 'sync with --wait bumps nb_cfg by itself');
  hv.close();
  t.match(await cfg(), { nb_cfg: 2, hv_cfg: 2 });
  t.equal((await runNbctl(plain, ['ls-list'])).match(/\(sw0\)/g)?.length, 1);
  const bad = nbFor();
  await t.rejects(runNbctl(bad, ['--wait=later', 'sync']), { message: /--wait takes sb, hv or none/ });
  bad.close();
});
