// Goal: `ovn-appctl -t ovn-controller CMD` works against `ovnts agent` and answers from what the
// agent really has, in ovn-controller 23.03's formats. Method: the real ovn-controller (beside
// real NB/SB ovsdb-servers and ovn-northd) and our agent process (beside an in-process ovnts
// central), each on its own real ovs-vswitchd with vm1 bound, get the same NB (a load balancer,
// a logged ACL through a meter, a QoS rate); the real ovn-appctl asks both by name through the
// pidfile in their OVN_RUNDIR. Ours is checked against its switch (zones in br-int's
// external_ids, meters and groups installed) and against ovn-controller's answers (same zone
// users, meter names and group descriptions); then pause/resume, recompute, resync, the
// protocol errors, and exit with and without --restart.
import path from 'node:path';
import t from 'tap';
import type { Test } from 'tap';
import { persistedCtZones } from '../../agent/local/agent-runtime.js';
import { existsSync } from 'node:fs';
import { spawnAgent } from '../helpers/agent-e2e.js';
import { runAppctl, type AppctlReply } from '../helpers/appctl.js';
import { until } from '../helpers/ovnts-cli.js';
import { startOvsSwitch, type OvsSwitch } from '../helpers/ovs-switch.js';
import { waitForExit } from '../helpers/process.js';
import { realOvnInstalled, startRealCentral, startRealController, twoVms } from '../helpers/real-ovn-controller.js';
import { boundTo, startCentral, uuids } from './local-harness.js';

const skip = realOvnInstalled() ? false : 'the real OVN and Open vSwitch are not installed';

/** The same NB for both: vm1 and vm2 on sw0, a load balancer (a select group), a logged ACL through a meter, a QoS rate (set_meter). */
const topology: readonly (readonly string[])[] = [
  ['ls-add', 'sw0'],
  ...twoVms.map((v) => ['lsp-add', 'sw0', v.name, '--', 'lsp-set-addresses', v.name, v.addr]),
  ['lb-add', 'lb0', '10.0.0.100:80', '10.0.0.1:8080,10.0.0.2:8080', 'tcp'],
  ['ls-lb-add', 'sw0', 'lb0'],
  ['meter-add', 'acl-meter', 'drop', '10', 'pktps'],
  ['--log', '--meter=acl-meter', '--name=dns', 'acl-add', 'sw0', 'to-lport', '1000', 'udp.dst == 53', 'allow'],
  ['qos-add', 'sw0', 'from-lport', '100', 'inport == "vm1"', 'rate=1000', 'burst=200'],
];

/** The real ovn-appctl with OVN_RUNDIR=rundir: `-t ovn-controller` goes through rundir's pidfile. */
const controller = (rundir: string, ...args: string[]): Promise<AppctlReply> => runAppctl('ovn-appctl', ['-t', 'ovn-controller', ...args], { OVN_RUNDIR: rundir });

/** "NAME: ID" lines (meter-table-list, group-table-list) as a map; refuses any other line. */
function parseTable(t: Test, text: string, what: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n').filter((l) => l !== '')) {
    const m = /^(.*): (\d+)$/.exec(line);
    t.ok(m !== null, `${what}: "${line}" is NAME: ID`);
    if (m !== null) out.set(m[1] as string, Number(m[2]));
  }
  return out;
}

/** "USER ZONE" lines (ct-zone-list) as a map. */
function parseZones(t: Test, text: string, what: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n').filter((l) => l !== '')) {
    const m = /^(\S+) (\d+)$/.exec(line);
    t.ok(m !== null, `${what}: "${line}" is USER ZONE`);
    if (m !== null) out.set(m[1] as string, Number(m[2]));
  }
  return out;
}

/** Zone users with datapath UUIDs replaced by the datapath's name, so that two SBs compare. */
function zoneUsers(zones: ReadonlyMap<string, number>, datapathName: ReadonlyMap<string, string>): string[] {
  return [...zones.keys()].map((u) => u.replace(/^([0-9a-f-]{36})_(dnat|snat)$/, (_, dp: string, k: string) => `${datapathName.get(dp) ?? `?${dp}`}_${k}`)).sort();
}

/** Meter names with the logical flow UUID a set_meter name carries (its SB row's) taken out. */
function meterNames(meters: ReadonlyMap<string, number>): string[] {
  return [...meters.keys()].map((n) => n.replace(/^__string: uuid [0-9a-f-]{36} /, '__string: uuid <lflow> ')).sort();
}

async function brIntZones(sw: OvsSwitch): Promise<Map<string, number>> {
  const text = await sw.vsctl('--format=json', '--columns=external_ids', 'find', 'Bridge', 'name=br-int');
  const data = (JSON.parse(text) as { data: [[string, [string, string][]]][] }).data[0]?.[0];
  return persistedCtZones(new Map(data?.[1] ?? []));
}

/** What both chassis answer, for the comparison. */
interface Answers {
  readonly commands: string[];
  readonly zones: string[];
  readonly meters: string[];
  readonly groups: string[];
  readonly connection: string;
  readonly status: string;
}

async function answersOf(t: Test, rundir: string, datapathName: ReadonlyMap<string, string>): Promise<Answers> {
  const list = await controller(rundir, 'list-commands');
  t.equal(list.code, 0, list.err);
  return {
    commands: list.out.split('\n').slice(1).filter((l) => l !== '').map((l) => l.trim().split(/\s+/)[0] as string),
    zones: zoneUsers(parseZones(t, (await controller(rundir, 'ct-zone-list')).out, 'ct-zone-list'), datapathName),
    meters: meterNames(parseTable(t, (await controller(rundir, 'meter-table-list')).out, 'meter-table-list')),
    groups: [...parseTable(t, (await controller(rundir, 'group-table-list')).out, 'group-table-list').keys()].sort(),
    connection: (await controller(rundir, 'connection-status')).out,
    status: (await controller(rundir, 'debug/status')).out,
  };
}

t.test('ovn-appctl -t ovn-controller: our agent beside the real ovn-controller', { skip }, async (t) => {
  // --- The real one.
  const real = await startRealCentral(t, 'appctl-real-');
  for (const c of topology) await real.nbctl(...c);
  const rc = await startRealController(t, real.sb.socketPath, [{ name: 'vm1', ofport: 1 }], real.nbctl);
  const realDp = new Map([[(await real.sbctl('--bare', '--columns=datapath', 'find', 'Port_Binding', 'logical_port=vm1')).trim(), 'sw0']]);
  const theirs = await answersOf(t, rc.sw.dir, realDp);

  // --- Ours, on its own switch.
  const central = await startCentral(t);
  await central.client.transact([{ op: 'insert', table: 'NB_Global', row: {} }]);
  for (const c of topology) await central.nbctl(...c);
  const sw = await startOvsSwitch();
  t.teardown(() => sw.stop());
  await sw.vsctl('set', 'open_vswitch', '.', 'external_ids:system-id=hv1', 'external_ids:ovn-encap-type=geneve', 'external_ids:ovn-encap-ip=127.0.0.1',
    'external_ids:ovn-bridge-datapath-type=netdev', `external_ids:ovn-remote=grpc:${central.address}`);
  const rundir = sw.dir;
  const ovsDb = `--ovs-db=unix:${path.join(sw.dir, 'db.sock')}`;
  let agent = spawnAgent(t, rundir, [ovsDb]);
  const logged = (what: string) => (err: Error): never => {
    throw new Error(`${what}: ${err.message}\n--- agent:\n${agent.output().slice(-3000)}`);
  };
  await until('br-int', async () => ((await sw.vsctl('--bare', '--columns=name', 'find', 'Bridge', 'name=br-int')).trim() === 'br-int' ? true : undefined), 60_000).catch(logged('br-int'));
  await sw.vsctl('add-port', 'br-int', 'vif1', '--', 'set', 'interface', 'vif1', 'type=dummy', 'ofport_request=1', 'external_ids:iface-id=vm1');
  const lspUp = async (name: string): Promise<boolean> => (await central.client.list('Logical_Switch_Port', [['name', '==', name]])).rows[0]?.up === true;
  await until('vm1 up', async () => ((await lspUp('vm1')) ? true : undefined), 60_000).catch(logged('vm1 up'));
  await central.nbctl('--wait=hv', 'sync');
  const vm1Binding = (await central.sb('Port_Binding')).find((r) => r.logical_port === 'vm1');
  const ours = await answersOf(t, rundir, new Map([[uuids(vm1Binding?.datapath)[0] as string, 'sw0']]));

  t.test('found by name: the pidfile and ovn-controller.<pid>.ctl in OVN_RUNDIR', async (t) => {
    t.ok(existsSync(path.join(rundir, 'ovn-controller.pid')), 'the pidfile');
    t.ok(existsSync(path.join(rundir, `ovn-controller.${agent.pid}.ctl`)), 'the socket named after the pid');
    t.match((await controller(rundir, 'version')).out, /^ovnts agent \S+ \(ovn-controller 23\.03's commands\)\n$/, 'version');
    const unknown = await controller(rundir, 'inject-pkt', 'x');
    t.equal(unknown.code, 2);
    t.match(unknown.err, /^"inject-pkt" is not a valid command \(use "list-commands" to see a list of valid commands\)\n/, 'a command of ovn-controller\'s we do not offer: unixctl\'s error');
    t.match((await controller(rundir, 'exit', 'a', 'b')).err, /^"exit" command takes at most 1 arguments\n/, 'exit takes at most one argument, as ovn-controller\'s');
    t.match((await controller(rundir, 'ct-zone-list', 'x')).err, /^"ct-zone-list" command takes at most 0 arguments\n/);
  });

  t.test('the same answers as ovn-controller 23.03', async (t) => {
    const missing = ours.commands.filter((c) => !theirs.commands.includes(c));
    t.same(missing, [], `every command we offer is one of ovn-controller's (${ours.commands.length} of its ${theirs.commands.length})`);
    t.equal(ours.connection, 'connected\n', 'connection-status');
    t.equal(ours.connection, theirs.connection);
    t.equal(ours.status, 'running\n', 'debug/status');
    t.equal(ours.status, theirs.status);
    t.same(ours.zones, theirs.zones, `ct-zone-list: the same zone users (${ours.zones.join(', ')})`);
    t.ok(ours.zones.includes('vm1') && ours.zones.includes('sw0_dnat') && ours.zones.includes('sw0_snat'), 'the bound port and its switch\'s NAT zones');
    t.same(ours.meters, theirs.meters, `meter-table-list: the same meter names (${ours.meters.join(' | ')})`);
    t.equal(ours.meters.length, 2, 'the ACL\'s meter and the QoS rate\'s');
    t.same(ours.groups, theirs.groups, 'group-table-list: the same group descriptions');
    t.equal(ours.groups.length, 1, 'the load balancer\'s');
    t.match(ours.groups[0], /^type=select,selection_method=dp_hash,bucket=bucket_id=0,weight:100,actions=ct\(nat\(dst=10\.0\.0\.1:8080\)/, ours.groups[0] ?? 'no group');
  });

  t.test('the answers are what the agent holds and installed', async (t) => {
    const zones = parseZones(t, (await controller(rundir, 'ct-zone-list')).out, 'ct-zone-list');
    t.same(zones, await brIntZones(sw), 'ct-zone-list: the zones the agent persisted in br-int\'s external_ids, number for number');
    const meters = parseTable(t, (await controller(rundir, 'meter-table-list')).out, 'meter-table-list');
    // `ovs-ofctl dump-meters`: meter id → its configuration on one line.
    const installed = new Map((await sw.ofctl('dump-meters')).split(/\n(?=meter=)/).map((m) => /^meter=(\d+) (.*)$/s.exec(m.trim())).filter((m) => m !== null).map((m) => [Number(m[1]), (m[2] as string).replace(/\s+/g, ' ')]));
    for (const [name, id] of meters) t.ok(installed.has(id), `meter ${id} (${name}) is in the switch`);
    t.match(installed.get(meters.get('acl-meter') ?? -1), /^pktps .*type=drop rate=10$/, 'acl-meter\'s id is the 10 pktps meter there');
    const qos = [...meters].find(([n]) => n.startsWith('__string:'));
    t.match(installed.get(qos?.[1] ?? -1), /^kbps burst .*type=drop rate=1000 burst_size=200$/, 'the QoS rate\'s id is its 1000 kbps meter');
    const groups = parseTable(t, (await controller(rundir, 'group-table-list')).out, 'group-table-list');
    const dumped = await sw.ofctl('dump-groups');
    for (const [, id] of groups) t.match(dumped, new RegExp(`group_id=${id},type=select`), `group ${id} is in the switch`);
  });

  t.test('debug/pause holds everything until debug/resume; recompute; sb-cluster-state-reset', async (t) => {
    t.same(await controller(rundir, 'debug/pause'), { code: 0, out: '', err: '' });
    t.equal((await controller(rundir, 'debug/status')).out, 'paused\n');
    await central.nbctl('lsp-add', 'sw0', 'vm3', '--', 'lsp-set-addresses', 'vm3', '00:00:00:00:00:03 10.0.0.3');
    await sw.vsctl('add-port', 'br-int', 'vif3', '--', 'set', 'interface', 'vif3', 'type=dummy', 'ofport_request=3', 'external_ids:iface-id=vm3');
    // Long enough for an agent that runs to claim it (it takes well under a second here).
    await new Promise((r) => setTimeout(r, 2000));
    t.equal(await boundTo(central, 'vm3'), '', 'paused: vm3 is not claimed');
    t.notOk((await controller(rundir, 'ct-zone-list')).out.includes('vm3 '), 'and has no zone');
    t.equal((await controller(rundir, 'connection-status')).out, 'connected\n', 'the control socket still answers');
    t.same(await controller(rundir, 'debug/resume'), { code: 0, out: '', err: '' });
    t.equal((await controller(rundir, 'debug/status')).out, 'running\n');
    await until('vm3 up after resume', async () => ((await lspUp('vm3')) ? true : undefined), 60_000).catch(logged('vm3 up'));
    t.match((await controller(rundir, 'ct-zone-list')).out, /^vm3 \d+$/m, 'resumed: vm3 has its zone');

    const flows = async (): Promise<string> => (await sw.ofctl('dump-flows', '--no-stats')).split('\n').map((l) => l.trim()).filter((l) => l.startsWith('cookie=')).sort().join('\n');
    const before = await flows();
    t.same(await controller(rundir, 'recompute'), { code: 0, out: '', err: '' }, 'recompute answers once the recompute is installed');
    t.same(await controller(rundir, 'inc-engine/recompute'), { code: 0, out: '', err: '' });
    t.equal(await flows(), before, 'and leaves the same flows');

    const snapshots = (): number => (agent.output().match(/resumed by snapshot/g) ?? []).length;
    const was = snapshots();
    t.same(await controller(rundir, 'sb-cluster-state-reset'), { code: 0, out: '', err: '' });
    await until('a new stream with the whole view', async () => (snapshots() > was ? true : undefined), 30_000).catch(logged('reset'));
    t.pass('the agent connected again and got a snapshot');
    await central.nbctl('--wait=hv', 'sync');
    t.equal(await flows(), before, 'the flows after the resync are the same');
  });

  t.test('exit --restart leaves bindings and flows; exit cleans up, as ovn-controller', async (t) => {
    const chassisOf = async (): Promise<unknown[]> => (await central.sb('Chassis')).filter((r) => r.name === 'hv1');
    const flowCount = async (): Promise<number> => (await sw.ofctl('dump-flows', '--no-stats')).split('\n').filter((l) => l.includes('cookie=')).length;
    const flowsBefore = await flowCount();
    const first = agent;
    t.same(await controller(rundir, 'exit', '--restart'), { code: 0, out: '', err: '' });
    await waitForExit(first.pid, 30_000);
    t.match(first.output(), /exit --restart \(control socket\): stopping\n/, 'it says why it stops');
    t.notOk(existsSync(path.join(rundir, 'ovn-controller.pid')), 'the pidfile is removed');
    t.notOk(existsSync(path.join(rundir, `ovn-controller.${first.pid}.ctl`)), 'and the socket');
    t.equal((await chassisOf()).length, 1, 'the Chassis stays');
    t.equal(await boundTo(central, 'vm1'), 'hv1', 'vm1 stays bound');
    t.equal(await flowCount(), flowsBefore, 'the flows stay installed');

    agent = spawnAgent(t, rundir, [ovsDb]);
    const second = agent;
    await until('the second agent answers', async () => ((await controller(rundir, 'connection-status')).out === 'connected\n' ? true : undefined), 60_000).catch(logged('second agent'));
    t.not(second.pid, first.pid);
    t.same(await controller(rundir, 'exit'), { code: 0, out: '', err: '' });
    await waitForExit(second.pid, 30_000);
    t.match(second.output(), /exit \(control socket\): stopping \(cleanup\)\n/);
    t.same(await chassisOf(), [], 'exit without --restart unregisters the chassis');
    t.equal(await boundTo(central, 'vm1'), '', 'and releases vm1');
    t.match((await controller(rundir, 'version')).err, /cannot read pidfile/, 'nothing answers by that name any more');
  });
});
