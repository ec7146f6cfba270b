// nbctl's commands with ovn-nbctl's meanings and messages: switches, ports, routers, ACLs on
// switches and port groups, address sets, static routes, routing policies, NAT, load balancers,
// DHCP options, the generic database commands, wait-until, connections and SSL. Method: the
// command functions in-process against three central nodes (real gRPC on loopback).
import { createServer, type AddressInfo } from 'node:net';
import t from 'tap';
import { runNbctl, tlsFlagsOf } from '../../bin/lib/nbctl/commands.js';
import { Nb, NbctlError, setOf } from '../../bin/lib/nbctl/nb.js';
import { fixUuids } from '../../bin/lib/nbctl/transaction.js';
import type { TableRead } from '../../bin/lib/nbctl/nb.js';
import { NorthboundClient } from '../../server/northbound-service.js';
import { startCentralCluster } from '../helpers/central-cluster.js';
import { testdirAfterTeardowns } from '../helpers/testdir.js';

t.test('nbctl commands', async (t) => {
  const cluster = await startCentralCluster(testdirAfterTeardowns(t));
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
  // Several commands in one transaction: each sees what the ones before it wrote (sets they
  // added to too, unlike ovn-nbctl), and a failing one leaves nothing of the others behind.
  await fails(/^nope: switch name not found$/, 'ls-add', 'sw9', '--', 'lsp-add', 'sw9', 'p9', '--', 'lsp-add', 'nope', 'p10');
  t.notMatch(await run('ls-list'), /sw9/, 'nothing of a failed transaction of several commands was applied');
  t.match(await run('ls-add', 'sw9', '--', 'lsp-add', 'sw9', 'p9', '--', 'lsp-list', 'sw9'), /^[0-9a-f-]{36} \(p9\)\n$/, 'lsp-list sees the port lsp-add added before it');
  t.equal(await run('acl-add', 'sw9', 'to-lport', '5', 'ip4', 'drop', '--', 'acl-del', 'sw9', 'to-lport', '--', 'acl-list', 'sw9'), '', 'acl-del removes the ACL acl-add added before it');
  t.equal(await run('acl-list', 'sw9'), '', 'and the cluster holds neither');
  const created = (await run('create', 'Address_Set', 'name=as9', '--', 'get', 'Address_Set', 'as9', '_uuid')).split('\n');
  t.match(created[0], /^[0-9a-f-]{36}$/);
  t.equal(created[1], created[0], 'a row created in the transaction has its final UUID already');
  t.equal(await run('get', 'Address_Set', created[0] as string, 'name'), 'as9\n', 'the cluster holds the row under that UUID');
  t.equal(await run('get', 'Address_Set', (created[0] as string).slice(0, 8), 'name'), 'as9\n', 'or its first characters (at least 4)');
  await t.rejects(run('get', 'Address_Set', (created[0] as string).slice(0, 3), 'name'), /no row/, 'fewer are a name, not a UUID');
  // wait-until in a transaction: what holds on the copy (the commands before included) passes;
  // otherwise the whole line runs again once the table changed, within the global --timeout.
  t.equal(await run('ls-add', 'sw7', '--', 'wait-until', 'Logical_Switch', 'sw7'), '', 'wait-until sees a row an earlier command added');
  const other = new Nb(cluster.members.map((m) => new NorthboundClient(m.address, 10_000)));
  let waited = false;
  const waiting = runNbctl(other, ['--timeout=30', 'wait-until', 'Logical_Switch', 'sw6', 'other_config:go=yes', '--', 'ls-add', 'sw6-after']).then((out) => {
    waited = true;
    return out;
  });
  await new Promise((resolve) => setTimeout(resolve, 500));
  t.notOk(waited, 'a wait-until that does not hold holds the line back');
  await run('ls-add', 'sw6');
  await new Promise((resolve) => setTimeout(resolve, 300));
  t.notOk(waited, 'a change that does not satisfy it runs the line again, and it waits on');
  t.notMatch(await run('ls-list'), /sw6-after/, 'and nothing of it was committed');
  await run('set', 'Logical_Switch', 'sw6', 'other_config:go=yes');
  t.equal(await waiting, '', 'once the condition holds the line runs through');
  other.close();
  t.match(await run('ls-list'), /\(sw6-after\)/, 'the commands after the wait-until committed');
  await t.rejects(runNbctl(nb, ['--timeout=1', 'wait-until', 'Logical_Switch', 'sw5', '--', 'ls-add', 'sw5-after']), { message: 'terminating with signal 14 (Alarm clock)' });
  t.notMatch(await run('ls-list'), /sw5-after/, 'a line whose wait ran out of time committed nothing');
  await run('ls-del', 'sw7', '--', 'ls-del', 'sw6', '--', 'ls-del', 'sw6-after');
  // A table beyond gRPC's default 4 MiB reply (each write well under its request limit) is
  // still read whole: by list, and by the copy a transaction of several commands runs on.
  const big = 'x'.repeat(1_100_000);
  for (let i = 0; i < 5; i++) await run('create', 'Address_Set', `name=big${i}`, `external_ids={blob=${big}}`);
  t.equal((await run('--columns=name', '--bare', 'find', 'Address_Set', 'external_ids:blob=' + big)).split('\n').filter(Boolean).length, 5, 'a 5.5 MB table is read whole');
  t.equal(await run('ls-add', 'sw4', '--', 'lsp-add', 'sw4', 'sw4-p', '--', 'lsp-get-ls', 'sw4-p').then((out) => out.replace(/^\S+ /, '')), '(sw4)\n', 'a transaction of several commands copies it too');
  await run('ls-del', 'sw4', '--', 'destroy', 'Address_Set', 'big0', 'big1', 'big2', 'big3', 'big4');
  await fails(/^unknown command 'nope'/, 'ls-add', 'sw8', '--', 'nope');
  await fails(/^missing command name/, 'ls-add', 'sw8', '--', '--may-exist');
  t.notMatch(await run('ls-list'), /sw8/, 'a command line with a bad command runs none of it');
  t.equal(await run('ls-del', 'sw9', '--', '--if-exists', 'ls-del', 'sw9', '--', 'destroy', 'Address_Set', 'as9'), '');
  t.notMatch(await run('ls-list'), /sw9/);
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
  const asJson = JSON.parse(await run('--format=json', 'list', 'Address_Set', 'as2')) as { data: unknown[][]; headings: string[] };
  t.same(asJson.headings, ['_uuid', 'addresses', 'external_ids', 'name'], '--format=json: headings are _uuid and the columns');
  t.same(asJson.data[0]?.slice(1), [['set', ['1.1.1.1', '2.2.2.2']], ['map', []], 'as2'], '--format=json: cells in OVSDB JSON');
  t.match(await run('--format=table', '--columns=name,addresses', 'list', 'Address_Set', 'as2'), /^name addresses\n---- -+\nas2 {2}\["1\.1\.1\.1", "2\.2\.2\.2"\]\n$/, '--format=table with --columns');
  t.equal(await run('--bare', '--columns=addresses', 'find', 'Address_Set', 'name=as2'), '1.1.1.1 2.2.2.2\n', '--bare');
  await fails(/^unknown output format "yaml"$/, '--format=yaml', 'list', 'Address_Set');
  await run('destroy', 'Address_Set', 'as2');
  await fails(/no row "as2" in table Address_Set/, 'get', 'Address_Set', 'as2', 'name');
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
  await fails(/^'lsp-add' command requires at least 2 arguments$/, 'lsp-add', 'sw0');
  await fails(/^'ls-list' command takes at most 0 arguments$/, 'ls-list', 'sw0');
});

t.test("a transaction's operations name the rows they insert by UUID", async (t) => {
  const ops = fixUuids([
    { op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': 'p', row: { name: 'p', addresses: ['set', ['named-uuid', 'p']] } },
    { op: 'mutate', table: 'Logical_Switch', where: [['name', '==', 'sw0']], mutations: [['ports', 'insert', ['set', [['named-uuid', 'p']]]]] },
    { op: 'insert', table: 'Address_Set', row: { name: 'x' } },
    { op: 'update', table: 'Logical_Switch', where: [['_uuid', '==', ['named-uuid', 'elsewhere']]], row: { other_config: ['map', [['named-uuid', 'p']]] } },
  ]) as Record<string, unknown>[];
  const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
  const p = ops[0]?.uuid as string;
  t.match(p, uuid, 'an insert gets its UUID');
  t.notOk('uuid-name' in (ops[0] as object), 'and loses its uuid-name, which another command may use too');
  t.same((ops[0]?.row as Record<string, unknown>).addresses, ['set', ['named-uuid', 'p']], 'a set of strings that reads "named-uuid" is left as it is');
  t.same(ops[1]?.mutations, [['ports', 'insert', ['set', [['uuid', p]]]]], 'a reference to the named row becomes its UUID');
  t.match(ops[2]?.uuid, uuid, 'an insert without a name gets a UUID too');
  t.not(ops[2]?.uuid, p);
  t.same(ops[3]?.where, [['_uuid', '==', ['named-uuid', 'elsewhere']]], 'a name no insert gives stays, for the cluster to refuse');
  t.same(ops[3]?.row, { other_config: ['map', [['named-uuid', 'p']]] }, 'a map of strings is left as it is');
});

t.test('--wait=sb and --wait=hv bump nb_cfg and return once the cluster caught up', async (t) => {
  const cluster = await startCentralCluster(testdirAfterTeardowns(t));
  t.teardown(() => cluster.stop());
  const nbFor = (): Nb => new Nb(cluster.members.map((m) => new NorthboundClient(m.address, 10_000)));
  const plain = nbFor();
  t.teardown(() => plain.close());
  const noGlobal = nbFor();
  const err = await runNbctl(noGlobal, ['--wait=sb', 'ls-add', 'early']).then(() => undefined, (e: unknown) => e);
  noGlobal.close();
  t.match((err as Error | undefined)?.message, /no NB_Global row/, 'without NB_Global there is nothing to wait on');
  t.equal((await runNbctl(plain, ['ls-list'])).trim(), '', 'and the failed --wait transaction changed nothing');
  await runNbctl(plain, ['init']);
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
  const several = nbFor();
  await runNbctl(several, ['--wait=sb', 'ls-add', 'sw1', '--', 'lsp-add', 'sw1', 'p1']);
  several.close();
  t.match(await cfg(), { nb_cfg: 3, sb_cfg: 3 }, 'several commands in one transaction bump nb_cfg once');
  const timed = nbFor();
  const before = Date.now();
  const report = await runNbctl(timed, ['--wait=hv', '--print-wait-time', 'ls-add', 'sw2']);
  timed.close();
  const m = /^Time spent on processing nb_cfg 4:\n\tovn-northd delay before processing:\t(-?\d+)ms\n\tovn-northd completion:\t\t\t(-?\d+)ms\n\tovn-controller\(s\) completion:\t\t(-?\d+)ms\n$/.exec(report);
  t.ok(m, `--print-wait-time reports as ovn-nbctl does:\n${report}`);
  const spent = Date.now() - before;
  for (const ms of (m ?? []).slice(1).map(Number)) t.ok(ms >= 0 && ms <= spent, `a wait time within the command's own time (${ms} of ${spent} ms)`);
  t.match(await cfg(), { nb_cfg: 4, sb_cfg: 4, hv_cfg: 4 });
  t.ok(Number((await cfg()).nb_cfg_timestamp) >= before, 'NB_Global.nb_cfg_timestamp says when the SB view took nb_cfg up');
  const dry = nbFor();
  t.equal(await runNbctl(dry, ['--wait=sb', '--dry-run', 'ls-add', 'sw3']), '', '--dry-run with --wait neither commits nor waits');
  dry.close();
  t.match(await cfg(), { nb_cfg: 4 }, 'and bumps nothing');
  t.notMatch(await runNbctl(plain, ['ls-list']), /sw3/);
  const elsewhere = nbFor();
  await t.rejects(runNbctl(elsewhere, ['--db=tcp:127.0.0.1:6641', 'ls-add', 'sw4']), { message: /^--db names an OVSDB remote, which ovnts nbctl does not speak: give the cluster with `ovnts nbctl --endpoints=/ });
  elsewhere.close();
  t.notMatch(await runNbctl(plain, ['ls-list']), /sw4/, 'a command line with --db runs nothing');
  const bad = nbFor();
  await t.rejects(runNbctl(bad, ['--wait=later', 'sync']), { message: 'argument to --wait must be "none", "sb", or "hv"' });
  // ovn-nbctl's logging, daemon and SSL options are refused by name, and the line runs nothing.
  const refused: [string, string[]][] = [['--verbose', ['--verbose']], ['--verbose', ['-v']], ['--log-file', ['--log-file=/tmp/x']], ['--pidfile', ['--pidf']], ['--ssl-protocols', ['--ssl-protocols=TLSv1.2']], ['--bootstrap-ca-cert', ['--bootstrap-ca-cert', 'ca.pem']]];
  for (const [name, options] of refused) {
    const words = [...options, 'ls-add', 'sw6'];
    await t.rejects(runNbctl(bad, words), { message: `option '${name}' is one of ovn-nbctl's help, logging, daemon and SSL options, which this nbctl does not have` }, words.join(' '));
  }
  bad.close();
  t.notMatch(await runNbctl(plain, ['ls-list']), /sw6/, 'a refused option ran nothing');
  // An abbreviated --wait is --wait.
  const short = nbFor();
  t.equal(await runNbctl(short, ['--wai=sb', 'ls-add', 'sw7']), '');
  short.close();
  t.match(await cfg(), { nb_cfg: 5, sb_cfg: 5 }, '--wai=sb bumped nb_cfg and waited for sb_cfg');
});

t.test('routes, routing policies, NAT, load balancers and DHCP options', async (t) => {
  const cluster = await startCentralCluster(testdirAfterTeardowns(t));
  t.teardown(() => cluster.stop());
  const nb = new Nb(cluster.members.map((m) => new NorthboundClient(m.address, 10_000)));
  t.teardown(() => nb.close());
  const run = (...words: string[]): Promise<string> => runNbctl(nb, words);
  const client = cluster.members[0]!.client;
  const snapshot = async (): Promise<string> => {
    const out: unknown[] = [];
    for (const table of ['Logical_Router', 'Logical_Switch', 'Logical_Switch_Port', 'Logical_Router_Static_Route', 'Logical_Router_Policy', 'NAT', 'Load_Balancer', 'DHCP_Options']) out.push((await client.list(table)).rows);
    return JSON.stringify(out);
  };
  // A failing command is an NbctlError with ovn-nbctl's message, and it changes nothing.
  const fails = async (re: RegExp, ...words: string[]): Promise<void> => {
    const before = await snapshot();
    const err = await run(...words).then(() => undefined, (e: unknown) => e);
    t.ok(err instanceof NbctlError, `${words.join(' ')} fails as a command error`);
    t.match((err as Error | undefined)?.message, re, `${words.join(' ')}: ${re}`);
    t.equal(await snapshot(), before, `${words.join(' ')} changed nothing`);
  };
  const rows = async (table: string): Promise<Record<string, unknown>[]> => (await client.list(table)).rows;

  await run('ls-add', 'sw0');
  await run('lsp-add', 'sw0', 'p1');
  await run('lr-add', 'lr0');
  await run('lrp-add', 'lr0', 'lrp0', '00:00:00:00:ff:01', '10.0.0.1/24');

  // Static routes: prefixes normalized, ECMP, src-ip, route tables, discard, output ports.
  await run('lr-route-add', 'lr0', '10.1.2.3/16', '10.0.0.10');
  await fails(/^duplicate prefix: 10\.1\.0\.0\/16 \(policy: dst-ip\)\. Use option --ecmp to allow this for ECMP routing\.$/, 'lr-route-add', 'lr0', '10.1.0.0/16', '10.0.0.11');
  await run('--ecmp', 'lr-route-add', 'lr0', '10.1.0.0/16', '10.0.0.11');
  await fails(/^duplicate nexthop for the same ECMP route$/, '--ecmp', 'lr-route-add', 'lr0', '10.1.0.0/16', '10.0.0.11');
  t.equal(await run('--ecmp', '--may-exist', 'lr-route-add', 'lr0', '10.1.0.0/16', '10.0.0.11'), '');
  await run('--policy=src-ip', '--ecmp-symmetric-reply', 'lr-route-add', 'lr0', '10.0.0.0/24', '10.0.0.254', 'lrp0');
  await run('--route-table=t1', 'lr-route-add', 'lr0', '0.0.0.0/0', '10.0.0.253');
  await run('lr-route-add', 'lr0', '10.9.0.0/16', 'discard');
  await run('lr-route-add', 'lr0', '192.168.0.1', 'lrp0');
  await run('lr-route-add', 'lr0', 'fd01::1/64', 'fd00::1');
  await fails(/^ecmp is not valid for discard routes\.$/, '--ecmp', 'lr-route-add', 'lr0', '10.8.0.0/16', 'discard');
  await fails(/^outport is not valid for discard routes\.$/, 'lr-route-add', 'lr0', '10.8.0.0/16', 'discard', 'lrp0');
  await fails(/^discard nexthop for the same ECMP route exists\.$/, '--ecmp', 'lr-route-add', 'lr0', '10.9.0.0/16', '10.0.0.9');
  await fails(/^bad prefix argument: 10\.0\.0\.0\/33$/, 'lr-route-add', 'lr0', '10.0.0.0/33', '10.0.0.9');
  await fails(/^bad IPv4 nexthop argument: fd00::1$/, 'lr-route-add', 'lr0', '10.8.0.0/16', 'fd00::1');
  await fails(/^bad IPv6 nexthop argument: 10\.0\.0\.1$/, 'lr-route-add', 'lr0', 'fd08::/64', '10.0.0.1');
  await fails(/^bad policy: sideways$/, '--policy=sideways', 'lr-route-add', 'lr0', '10.8.0.0/16', '10.0.0.9');
  await fails(/^nope: port name not found$/, 'lr-route-add', 'lr0', '10.8.0.0/16', '10.0.0.9', 'nope');
  await fails(/^lr9: router name not found$/, 'lr-route-add', 'lr9', '10.8.0.0/16', '10.0.0.9');
  await fails(/^no entry found in the BFD table$/, '--bfd=nope', 'lr-route-add', 'lr0', '10.8.0.0/16', '10.0.0.9', 'lrp0');
  await fails(/^insert entry in the BFD table failed$/, '--bfd', 'lr-route-add', 'lr0', '10.8.0.0/16', '10.0.0.9');
  await fails(/^bfd dst_ip cannot be discard\.$/, '--bfd', 'lr-route-add', 'lr0', '10.8.0.0/16', 'discard');
  await run('--bfd', 'lr-route-add', 'lr0', '10.8.0.0/16', '10.0.0.9', 'lrp0');
  t.match(await rows('BFD'), [{ dst_ip: '10.0.0.9', logical_port: 'lrp0' }], 'a BFD session for the next hop on its port');
  t.match(await run('lr-route-list', 'lr0'), /10\.8\.0\.0\/16 {18}10\.0\.0\.9 dst-ip lrp0 bfd\n/);
  await run('lr-route-del', 'lr0', '10.8.0.0/16');
  t.same(await rows('BFD'), [], 'deleting the route deleted its BFD session');
  await fails(/^'lr-route-add' command requires at least 3 arguments$/, 'lr-route-add', 'lr0', '10.8.0.0/16');
  await fails(/^'lr-route-add' command takes at most 4 arguments$/, 'lr-route-add', 'lr0', '10.8.0.0/16', '10.0.0.9', 'lrp0', 'extra');
  await fails(/^'lr-route-add' command has no '--if-exists' option$/, '--if-exists', 'lr-route-add', 'lr0', '10.8.0.0/16', '10.0.0.9');
  // After "--" the command checks its options; before it, getopt does (and --policy takes the
  // next word as its value).
  await fails(/^missing argument to '--policy' option on 'lr-route-add' command$/, '--', '--policy', 'lr-route-add', 'lr0', '10.8.0.0/16', '10.0.0.9');
  await fails(/^unknown command 'lr0'; use --help for help$/, '--policy', 'lr-route-add', 'lr0', '10.8.0.0/16', '10.0.0.9');
  await fails(/^'--ecmp' option on 'lr-route-add' does not accept an argument$/, '--', '--ecmp=yes', 'lr-route-add', 'lr0', '10.8.0.0/16', '10.0.0.9');
  await fails(/^option '--ecmp=yes' doesn't allow an argument$/, '--ecmp=yes', 'lr-route-add', 'lr0', '10.8.0.0/16', '10.0.0.9');
  t.equal(
    await run('lr-route-list', 'lr0'),
    [
      'IPv4 Routes',
      'Route Table <main>:',
      '              192.168.0.1                           dst-ip lrp0',
      '              10.0.0.0/24                10.0.0.254 src-ip lrp0 ecmp-symmetric-reply',
      '              10.1.0.0/16                 10.0.0.10 dst-ip ecmp',
      '              10.1.0.0/16                 10.0.0.11 dst-ip ecmp',
      '              10.9.0.0/16                   discard dst-ip',
      '',
      'Route Table t1:',
      '                0.0.0.0/0                10.0.0.253 dst-ip',
      '',
      'IPv6 Routes',
      'Route Table <main>:',
      '                fd01::/64                   fd00::1 dst-ip',
      '',
    ].join('\n'),
  );
  t.equal(await run('--route-table=t1', 'lr-route-list', 'lr0'), 'IPv4 Routes\nRoute Table t1:\n                0.0.0.0/0                10.0.0.253 dst-ip\n');
  await run('--may-exist', 'lr-route-add', 'lr0', '10.9.0.0/16', '10.0.0.8');
  t.match(await run('lr-route-list', 'lr0'), /\n {14}10\.9\.0\.0\/16 {18}10\.0\.0\.8 dst-ip\n/, '--may-exist replaced the next hop');
  await fails(/^no matching route: policy 'any', prefix '10\.7\.0\.0\/16', nexthop 'any', output_port 'any'\.$/, 'lr-route-del', 'lr0', '10.7.0.0/16');
  t.equal(await run('--if-exists', 'lr-route-del', 'lr0', '10.7.0.0/16'), '');
  await run('lr-route-del', 'lr0', '10.1.0.0/16', '10.0.0.11');
  await run('--policy=src-ip', 'lr-route-del', 'lr0');
  t.notMatch(await run('lr-route-list', 'lr0'), /10\.0\.0\.11|src-ip/);
  t.equal((await rows('Logical_Router_Static_Route')).length, 5, 'deleted routes are gone from the table too');
  await run('lr-route-del', 'lr0');
  t.equal(await run('lr-route-list', 'lr0'), '');
  t.equal((await rows('Logical_Router_Static_Route')).length, 0);

  // Routing policies.
  await run('lr-policy-add', 'lr0', '100', 'ip4.src == 10.0.0.0/24', 'reroute', '10.0.0.20,10.0.0.21', 'pkt_mark=5');
  await run('lr-policy-add', 'lr0', '100', 'ip4.src == 10.0.1.0/24', 'allow');
  await run('lr-policy-add', 'lr0', '200', 'ip4.dst == 8.8.8.8', 'drop');
  await fails(/^Same routing policy already existed on the logical router lr0\.$/, 'lr-policy-add', 'lr0', '100', 'ip4.src == 10.0.1.0/24', 'drop');
  t.equal(await run('--may-exist', 'lr-policy-add', 'lr0', '100', 'ip4.src == 10.0.1.0/24', 'drop'), '');
  await fails(/^32768: priority must in range 0\.\.\.32767$/, 'lr-policy-add', 'lr0', '32768', 'ip4', 'drop');
  await fails(/^forward: action must be one of "allow", "drop", and "reroute"$/, 'lr-policy-add', 'lr0', '1', 'ip4', 'forward');
  await fails(/^Nexthop is required when action is reroute\.$/, 'lr-policy-add', 'lr0', '1', 'ip4', 'reroute');
  await fails(/^bad next hop argument: 10\.0\.0\.1,nope$/, 'lr-policy-add', 'lr0', '1', 'ip4', 'reroute', '10.0.0.1,nope');
  await fails(/^bad next hops argument, not in the same addr family : 10\.0\.0\.1,fd00::1$/, 'lr-policy-add', 'lr0', '1', 'ip4', 'reroute', '10.0.0.1,fd00::1');
  await fails(/^No value specified for the option : pkt_mark$/, 'lr-policy-add', 'lr0', '1', 'ip4', 'allow', 'pkt_mark');
  t.equal(
    await run('lr-policy-list', 'lr0'),
    'Routing Policies\n' +
      `       200 ${'ip4.dst == 8.8.8.8'.padStart(50)}            drop\n` +
      `       100 ${'ip4.src == 10.0.0.0/24'.padStart(50)}         reroute                 10.0.0.20, 10.0.0.21${' '.repeat(15)}pkt_mark=5\n` +
      `       100 ${'ip4.src == 10.0.1.0/24'.padStart(50)}           allow\n`,
  );
  const allow = (await rows('Logical_Router_Policy')).find((p) => p.action === 'allow')!;
  await run('lr-policy-del', 'lr0', (allow._uuid as [string, string])[1]);
  await fails(/^Logical router policy uuid is not found\.$/, 'lr-policy-del', 'lr0', (allow._uuid as [string, string])[1]);
  t.equal(await run('--if-exists', 'lr-policy-del', 'lr0', (allow._uuid as [string, string])[1]), '');
  await run('lr-policy-del', 'lr0', '200', 'ip4.dst == 8.8.8.8');
  t.equal((await run('lr-policy-list', 'lr0')).split('\n').length, 3, 'one policy is left');
  await run('lr-policy-del', 'lr0', '100');
  t.equal(await run('lr-policy-list', 'lr0'), '');

  // NAT.
  await run('lr-nat-add', 'lr0', 'snat', '172.16.0.1', '10.0.0.5/24');
  await run('lr-nat-add', 'lr0', 'dnat_and_snat', '172.16.0.2', '10.0.0.2', 'p1', '00:00:00:00:01:02');
  await run('--stateless', 'lr-nat-add', 'lr0', 'dnat_and_snat', '172.16.0.3', '10.0.0.3');
  await run('--portrange', 'lr-nat-add', 'lr0', 'dnat', '172.16.0.4', '10.0.0.4', '100-200');
  await fails(/^172\.16\.0\.1, 10\.0\.0\.0\/24: a NAT with this external_ip and logical_ip already exists$/, 'lr-nat-add', 'lr0', 'snat', '172.16.0.1', '10.0.0.0/24');
  await fails(/^a NAT with this type \(snat\), logical_ip \(10\.0\.0\.0\/24\) already exists$/, 'lr-nat-add', 'lr0', 'snat', '172.16.0.9', '10.0.0.0/24');
  await fails(/^172\.16\.0\.3, 10\.0\.0\.9: External ip cannot be shared across stateless and stateful NATs$/, 'lr-nat-add', 'lr0', 'dnat_and_snat', '172.16.0.3', '10.0.0.9');
  await fails(/^pat: type must be one of "dnat", "snat" and "dnat_and_snat"\.$/, 'lr-nat-add', 'lr0', 'pat', '172.16.0.9', '10.0.0.9');
  await fails(/^172\.16\.0\.256: Not a valid IPv4 or IPv6 address\.$/, 'lr-nat-add', 'lr0', 'dnat', '172.16.0.256', '10.0.0.9');
  await fails(/^10\.0\.0\.0\/24: Not a valid IPv4 address\.$/, 'lr-nat-add', 'lr0', 'dnat', '172.16.0.9', '10.0.0.0/24');
  await fails(/^fd00::\/64: should be an IPv4 address or network\.$/, 'lr-nat-add', 'lr0', 'snat', '172.16.0.9', 'fd00::/64');
  await fails(/^logical_port and external_mac are only valid when type is "dnat_and_snat"\.$/, 'lr-nat-add', 'lr0', 'dnat', '172.16.0.9', '10.0.0.9', 'p1', '00:00:00:00:01:09');
  await fails(/^invalid mac address zz\.$/, 'lr-nat-add', 'lr0', 'dnat_and_snat', '172.16.0.9', '10.0.0.9', 'p1', 'zz');
  await fails(/^lr-nat-add with logical_port must also specify external_mac\.$/, 'lr-nat-add', 'lr0', 'dnat_and_snat', '172.16.0.9', '10.0.0.9', 'p1');
  await fails(/^invalid port range 200-100\.$/, '--portrange', 'lr-nat-add', 'lr0', 'dnat', '172.16.0.9', '10.0.0.9', '200-100');
  await fails(/^stateless is not applicable to dnat or snat types$/, '--stateless', 'lr-nat-add', 'lr0', 'snat', '172.16.0.9', '10.0.0.9');
  t.equal(
    await run('lr-nat-list', 'lr0'),
    [
      'TYPE             GATEWAY_PORT          EXTERNAL_IP        EXTERNAL_PORT    LOGICAL_IP          EXTERNAL_MAC         LOGICAL_PORT',
      'dnat                                   172.16.0.4         100-200          10.0.0.4',
      'dnat_and_snat                          172.16.0.2                          10.0.0.2            00:00:00:00:01:02    p1',
      'dnat_and_snat                          172.16.0.3                          10.0.0.3',
      'snat                                   172.16.0.1                          10.0.0.0/24',
      '',
    ].join('\n'),
  );
  t.match((await rows('NAT')).find((n) => n.external_ip === '172.16.0.3'), { options: ['map', [['stateless', 'true']]] });
  await run('lr-nat-del', 'lr0', 'snat', '10.0.0.0/24');
  await run('lr-nat-del', 'lr0', 'dnat_and_snat', '172.16.0.2');
  await fails(/^nonsense: port name not found$/, 'lr-nat-del', 'lr0', 'dnat', 'nonsense');
  await fails(/^nonsense: Invalid IP address or CIDR$/, 'lr-nat-del', 'lr0', 'dnat', 'nonsense', 'lrp0');
  await fails(/^no matching NAT with the type \(dnat\), external_ip \(172\.16\.0\.4\) and gateway_port \(lrp0\)$/, 'lr-nat-del', 'lr0', 'dnat', '172.16.0.4', 'lrp0');
  t.equal((await run('lr-nat-list', 'lr0')).split('\n').length, 4, 'two NATs are left');
  await run('lr-nat-del', 'lr0', 'dnat');
  await run('lr-nat-del', 'lr0');
  t.equal(await run('lr-nat-list', 'lr0'), '');
  t.equal((await rows('NAT')).length, 0);

  // Load balancers.
  await run('lb-add', 'lb0', '30.0.0.1:80', '10.0.0.2:80,10.0.0.3:80');
  await run('lb-add', 'lb0', '[fd30::1]:443', '[fd00::2]:443', 'udp');
  await run('lb-add', 'lb1', '30.0.0.9', '10.0.0.9');
  await fails(/^lb0: a load balancer with this vip \(30\.0\.0\.1:80\) already exists$/, 'lb-add', 'lb0', '30.0.0.1:80', '10.0.0.4:80');
  await run('--may-exist', 'lb-add', 'lb0', '30.0.0.1:80', '10.0.0.4:80');
  await fails(/^30\.0\.0\.300:80: should be an IP address \(or an IP address and a port number with : as a separator\)\.$/, 'lb-add', 'lb2', '30.0.0.300:80', '10.0.0.4:80');
  await fails(/^10\.0\.0\.4: should be an IP address and a port number with : as a separator, fd00::4:80: IP address family is different from VIP 30\.0\.0\.1\.$/, 'lb-add', 'lb2', '30.0.0.1:80', '10.0.0.4,fd00::4:80');
  await fails(/^Protocol is unnecessary when no port of vip is given\.$/, 'lb-add', 'lb2', '30.0.0.1', '10.0.0.4', 'udp');
  await fails(/^icmp: protocol must be one of "tcp", "udp", {2}or "sctp"\.$/, 'lb-add', 'lb2', '30.0.0.1:80', '10.0.0.4:80', 'icmp');
  await fails(/^--reject and --event can't specified at the same time$/, '--reject', '--event', 'lb-add', 'lb2', '30.0.0.1:80', '10.0.0.4:80');
  await run('--add-duplicate', 'lb-add', 'lb1', '30.0.0.9', '10.0.0.10');
  await fails(/^Multiple load balancers named 'lb1'\. {2}Use a UUID\.$/, 'ls-lb-add', 'sw0', 'lb1');
  const lbs = await rows('Load_Balancer');
  const lb0 = (lbs.find((r) => r.name === 'lb0')!._uuid as [string, string])[1];
  const lb1s = lbs.filter((r) => r.name === 'lb1').map((r) => (r._uuid as [string, string])[1]);
  t.match(lbs.find((r) => r.name === 'lb0'), { protocol: 'udp', vips: ['map', [['30.0.0.1:80', '10.0.0.4:80'], ['[fd30::1]:443', '[fd00::2]:443']]] });
  t.equal(
    await run('lb-list', 'lb0'),
    `UUID                                    LB                  PROTO      VIP              IPs\n${lb0}    lb0                 udp        30.0.0.1:80      10.0.0.4:80\n${' '.repeat(60)}udp        [fd30::1]:443    [fd00::2]:443\n`,
  );
  await run('lb-del', lb1s[1]!);
  await run('ls-lb-add', 'sw0', 'lb0');
  await run('ls-lb-add', 'sw0', 'lb1');
  await fails(new RegExp(`^${lb0} : a load balancer with this UUID already exists$`), 'ls-lb-add', 'sw0', 'lb0');
  t.equal(await run('--may-exist', 'ls-lb-add', 'sw0', 'lb0'), '');
  await fails(/^nope: load balancer name not found$/, 'ls-lb-add', 'sw0', 'nope');
  await run('lr-lb-add', 'lr0', 'lb1');
  t.equal(
    await run('ls-lb-list', 'sw0'),
    `UUID                                    LB                  PROTO      VIP              IPs\n${lb0}    lb0                 udp        30.0.0.1:80      10.0.0.4:80\n${' '.repeat(60)}udp        [fd30::1]:443    [fd00::2]:443\n${lb1s[0]}    lb1                            30.0.0.9         10.0.0.9\n`,
  );
  t.equal(await run('lr-lb-list', 'lr0'), `UUID                                    LB                  PROTO      VIP         IPs\n${lb1s[0]}    lb1                            30.0.0.9    10.0.0.9\n`);
  await fails(/^load balancer lb0 is not part of any logical router\.$/, 'lr-lb-del', 'lr0', 'lb0');
  t.equal(await run('--if-exists', 'lr-lb-del', 'lr0', 'lb0'), '');
  await run('lr-lb-del', 'lr0', 'lb1');
  t.equal(await run('lr-lb-list', 'lr0'), '');
  await fails(/^vip 30\.0\.0\.2:80 is not part of the load balancer\.$/, 'lb-del', 'lb0', '30.0.0.2:80');
  await run('lb-del', 'lb0', '30.0.0.1:80');
  t.match(await run('ls-lb-list', 'sw0'), /\[fd30::1\]:443/);
  await run('lb-del', 'lb0', '[fd30::1]:443');
  t.equal((await rows('Load_Balancer')).length, 1, 'removing its last VIP removed lb0');
  t.equal(await run('lb-del', 'lb-never'), '', 'lb-del of an unknown load balancer is no error');
  await run('ls-lb-del', 'sw0');
  t.equal(await run('ls-lb-list', 'sw0'), '');
  // A VIP without a port shows no protocol.
  t.equal(await run('lb-list'), `UUID                                    LB                  PROTO      VIP         IPs\n${lb1s[0]}    lb1                            30.0.0.9    10.0.0.9\n`);

  // DHCP options.
  await run('dhcp-options-create', '10.0.0.0/24', 'owner=me');
  await run('dhcp-options-create', 'fd00::/64');
  await fails(/^Invalid cidr format '10\.0\.0\.0\/40'$/, 'dhcp-options-create', '10.0.0.0/40');
  const dhcp = await rows('DHCP_Options');
  const v4 = (dhcp.find((r) => r.cidr === '10.0.0.0/24')!._uuid as [string, string])[1];
  const v6 = (dhcp.find((r) => r.cidr === 'fd00::/64')!._uuid as [string, string])[1];
  t.match(dhcp.find((r) => r.cidr === '10.0.0.0/24'), { external_ids: ['map', [['owner', 'me']]] });
  t.equal(await run('dhcp-options-list'), `${v4}\n${v6}\n`);
  await run('dhcp-options-set-options', v4, 'lease_time=3600', 'router=10.0.0.1', 'server_id=10.0.0.1', 'server_mac=c0:ff:ee:00:00:01');
  // The order is that of OVS's smap (hash buckets), as checked against ovn-nbctl by nbctl-vs-ovn-nbctl.
  t.equal(await run('dhcp-options-get-options', v4), 'server_mac=c0:ff:ee:00:00:01\nrouter=10.0.0.1\nserver_id=10.0.0.1\nlease_time=3600\n');
  await fails(/^nope: dhcp options UUID not found$/, 'dhcp-options-get-options', 'nope');
  await run('lsp-set-dhcpv4-options', 'p1', v4);
  t.equal(await run('lsp-get-dhcpv4-options', 'p1'), `${v4} (10.0.0.0/24)\n`);
  await fails(/^DHCP options cidr 'fd00::\/64' is not IPv4$/, 'lsp-set-dhcpv4-options', 'p1', v6);
  await fails(/^nope: port name not found$/, 'lsp-get-dhcpv4-options', 'nope');
  await run('lsp-set-dhcpv4-options', 'p1');
  t.equal(await run('lsp-get-dhcpv4-options', 'p1'), '');
  await run('dhcp-options-del', v6);
  await fails(new RegExp(`^${v6}: dhcp options UUID not found$`), 'dhcp-options-del', v6);
  await fails(/^'dhcp-options-del' command has no '--if-exists' option$/, '--if-exists', 'dhcp-options-del', v6);
  t.equal(await run('dhcp-options-list'), `${v4}\n`);
});

/** An Nb that tells when a wait-until starts watching (it has read the table and found it wanting). */
class WatchedNb extends Nb {
  private watchers: (() => void)[] = [];
  /** Resolves at the next watch; ask before what should make one happen. */
  nextWatch(): Promise<void> {
    return new Promise((resolve) => this.watchers.push(resolve));
  }
  override changedSince(read: TableRead, timeoutMs: number | undefined): Promise<'changed' | 'timeout' | 'cut'> {
    const outcome = super.changedSince(read, timeoutMs);
    for (const w of this.watchers.splice(0)) w();
    return outcome;
  }
}

t.test('wait-until: returns once another client writes what it waits for; --timeout ends it with ovn-nbctl\'s last words', async (t) => {
  const cluster = await startCentralCluster(testdirAfterTeardowns(t));
  t.teardown(() => cluster.stop());
  const clients = (): NorthboundClient[] => cluster.members.map((m) => new NorthboundClient(m.address, 10_000));
  const waiter = new WatchedNb(clients());
  t.teardown(() => waiter.close());
  const writer = new Nb(clients());
  t.teardown(() => writer.close());

  // The record is not there, then it is but the condition is false, then it holds.
  const watching = waiter.nextWatch();
  const waited = runNbctl(waiter, ['wait-until', 'Logical_Switch', 'sw1', 'external_ids:ready=yes', 'ports{=}[]']);
  let done = false;
  void waited.then(() => (done = true), () => (done = true));
  await watching;
  const watchingAgain = waiter.nextWatch();
  await runNbctl(writer, ['ls-add', 'sw1']);
  await watchingAgain;
  t.notOk(done, 'the switch alone does not end the wait');
  const watchingOnce = waiter.nextWatch();
  await runNbctl(writer, ['set', 'Logical_Switch', 'sw1', 'external_ids:ready=no']);
  await watchingOnce;
  t.notOk(done, 'nor the key with another value');
  await runNbctl(writer, ['set', 'Logical_Switch', 'sw1', 'external_ids:ready=yes']);
  t.equal(await waited, '', 'the write that makes the condition true ends the wait');

  // Conditions that hold at once: every relation of db-ctl-base.
  t.equal(await runNbctl(waiter, ['wait-until', 'Logical_Switch', 'sw1', 'name>sw0', 'name<=sw1', 'external_ids{>=}{ready=yes}', 'external_ids:ready{in}[yes,no]', 'external_ids:gone{not-in}[x]', 'other_config{<}{a=b}', 'acls{<=}[]', 'external_ids!={}']), '');
  const sw1 = (await cluster.members[0]!.client.list('Logical_Switch')).rows[0] as { _uuid: [string, string] };
  t.equal(await runNbctl(waiter, ['wait-until', 'Logical_Switch', sw1._uuid[1].toUpperCase()]), '', 'a record by its UUID, in either case');

  const startedMs = Date.now();
  const err = await runNbctl(waiter, ['--timeout=1', 'wait-until', 'Logical_Switch', 'sw1', 'external_ids:ready=no']).then(() => undefined, (e: unknown) => e);
  t.ok(err instanceof NbctlError, 'a wait that runs out of time is a command error');
  t.equal((err as Error | undefined)?.message, 'terminating with signal 14 (Alarm clock)', "with ovn-nbctl's last words");
  t.ok(Date.now() - startedMs >= 900, 'after the --timeout');
  const short = await runNbctl(waiter, ['-t', '1', 'wait-until', 'Logical_Switch', 'nope']).then(() => undefined, (e: unknown) => e);
  t.equal((short as Error | undefined)?.message, 'terminating with signal 14 (Alarm clock)', '-t 1, for a record that never comes');
  await t.rejects(runNbctl(waiter, ['--timeout=0', 'wait-until', 'Logical_Switch', 'sw1']), { message: 'value 0 on -t or --timeout is invalid' });
  await t.rejects(runNbctl(waiter, ['wait-until', 'Logical_Switch', 'sw1', 'external_ids:ready=yes', 'name:x=1']), { message: 'cannot specify key to check for non-map column name' });
});

t.test('set-connection and set-ssl make the NB_Global row they hang off when there is none', async (t) => {
  const cluster = await startCentralCluster(testdirAfterTeardowns(t));
  t.teardown(() => cluster.stop());
  const nb = new Nb(cluster.members.map((m) => new NorthboundClient(m.address, 10_000)));
  t.teardown(() => nb.close());
  const client = cluster.members[0]!.client;
  await runNbctl(nb, ['--inactivity-probe=5000', 'set-connection', 'ptcp:6641', 'ptcp:6642']);
  const [global] = (await client.list('NB_Global')).rows;
  t.equal(setOf(global?.connections).length, 2, 'NB_Global was made, pointing at both connections');
  t.equal(await runNbctl(nb, ['get-connection']), 'ptcp:6641\nptcp:6642\n');
  t.match((await client.list('Connection')).rows, [{ inactivity_probe: 5000 }, { inactivity_probe: 5000 }]);
  await runNbctl(nb, ['set-ssl', '/k', '/c', '/ca']);
  t.equal((await client.list('NB_Global')).rows.length, 1, 'and the one NB_Global row stays one');
  t.equal(await runNbctl(nb, ['get-ssl']), 'Private key: /k\nCertificate: /c\nCA Certificate: /ca\nBootstrap: false\n');
  await runNbctl(nb, ['del-connection']);
  await runNbctl(nb, ['del-ssl']);
  t.same([(await client.list('Connection')).rows, (await client.list('SSL')).rows], [[], []], 'del-connection and del-ssl remove the rows');
  t.equal(await runNbctl(nb, ['init']), '');
  t.equal((await client.list('NB_Global')).rows.length, 1, 'init keeps the row there is');
});

t.test('-p/-c/-C before the command give the TLS files, read as getopt reads them; the commands ignore them', async (t) => {
  t.same(tlsFlagsOf(['-p', 'k.pem', '--certificate=c.pem', '-Cca.pem', 'ls-add', 'sw0']), { privateKey: 'k.pem', certificate: 'c.pem', caCert: 'ca.pem' });
  t.same(tlsFlagsOf(['--priv=k.pem', '--cert', 'c.pem', '--ca-c=ca.pem', '--wait=sb', 'show']), { privateKey: 'k.pem', certificate: 'c.pem', caCert: 'ca.pem' }, 'abbreviated');
  t.same(tlsFlagsOf(['-p', 'old.pem', '-p', 'new.pem', 'show']), { privateKey: 'new.pem' }, 'the last one given wins');
  t.same(tlsFlagsOf(['ls-add', 'sw0', '-p', 'k.pem']), {}, 'after the command, a word is an argument');
  t.throws(() => tlsFlagsOf(['-p']), { message: "option '-p' requires an argument" });
  const cluster = await startCentralCluster(testdirAfterTeardowns(t));
  t.teardown(() => cluster.stop());
  const nb = new Nb([new NorthboundClient((cluster.members[0] as { address: string }).address)]);
  t.teardown(() => nb.close());
  t.equal(await runNbctl(nb, ['-p', 'k.pem', '-c', 'c.pem', '-C', 'ca.pem', 'ls-add', 'sw0']), '', 'the command runs');
  t.match(await runNbctl(nb, ['ls-list']), /\(sw0\)/);
});

t.test('with no member reachable, the error names each endpoint and why, as ovn-nbctl does', async (t) => {
  // Two ports that were just free: nothing listens there.
  const ports: number[] = [];
  for (let i = 0; i < 2; i++) {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    ports.push((server.address() as AddressInfo).port);
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
  const nb = new Nb(ports.map((p) => new NorthboundClient(`127.0.0.1:${p}`, 10_000)));
  t.teardown(() => nb.close());
  const err = await runNbctl(nb, ['ls-list']).then(() => undefined, (e: unknown) => e);
  t.ok(err instanceof NbctlError, 'a command error, not a crash');
  t.equal((err as Error).message, `no member answered (${ports.map((p) => `127.0.0.1:${p}: database connection failed (Connection refused)`).join('; ')})`);
});
