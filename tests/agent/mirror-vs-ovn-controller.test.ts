// Differential: port mirrors made by the real ovn-controller 23.03 and by our agent, two chassis
// of one ovnts cluster, each with one VIF (interface "vif1") bound to a port of sw0 and the same
// NB mirrors attached to both ports (ovn-nbctl mirror-add, lsp-attach-mirror). The OVS Mirror,
// Port and Interface rows each one writes must look alike — names, ovn-owned, select columns by
// port name, the output port's name, type and options — as the mirrors are made, changed (sink,
// type, filter) and detached or deleted, and both must leave no mirror and no mirror port after.
// Our agent takes its SB rows from the per-chassis agent stream, so the SB Mirror rows are seen
// to reach it there. Method: `ovnts up` (real processes, the OVN_Northbound and OVN_Southbound
// OVSDB doors for ovn-nbctl and ovn-controller), two real Open vSwitch instances, everything
// stopped by pid.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { AgentRuntime } from '../../agent/local/agent-runtime.js';
import { OVS_MONITOR } from '../../agent/local/ovs-rows.js';
import { SbStream } from '../../agent/sb-stream.js';
import { OvsdbClient } from '../../ovsdb/client.js';
import { nbctlOf } from '../helpers/agent-e2e.js';
import { upCluster } from '../helpers/ovnts-cli.js';
import type { OvsSwitch } from '../helpers/ovs-switch.js';
import { ovsSwitchInstalled, startOvsSwitch } from '../helpers/ovs-switch.js';
import { stopPid } from '../helpers/process.js';
import { Rng } from '../helpers/seeded-rng.js';
import { testdirAfterTeardowns } from '../helpers/testdir.js';
import { eventually, mapOf, uuids, vsctlFind } from './local-harness.js';

const run = promisify(execFile);
const skip = ovsSwitchInstalled() && existsSync('/usr/bin/ovn-controller') ? false : 'Open vSwitch or ovn-controller is not installed';

/** One OVS mirror as the comparison sees it: references by port name. */
interface MirrorView {
  readonly name: string;
  readonly externalIds: string[];
  readonly src: string[];
  readonly dst: string[];
  readonly output: string;
  readonly outputExternalIds: string[];
  readonly type: string;
  readonly options: string[];
}

const entries = (v: unknown): string[] => [...mapOf(v)].map(([k, val]) => `${k}=${val}`).sort();

interface MirrorState {
  readonly mirrors: MirrorView[];
  /** Names of the interfaces of a mirror type (gre, erspan, ip6gre, ip6erspan). */
  readonly mirrorPorts: string[];
}

/** The switch's mirrors by name, and the names of its ports that have a mirror interface type. */
async function mirrorState(sw: OvsSwitch): Promise<MirrorState> {
  const [mirrors, ports, ifaces] = await Promise.all([vsctlFind(sw, 'mirror'), vsctlFind(sw, 'port'), vsctlFind(sw, 'interface')]);
  const port = (u: string | undefined): Record<string, unknown> | undefined => ports.find((p) => uuids(p._uuid)[0] === u);
  const names = (v: unknown): string[] => uuids(v).map((u) => String(port(u)?.name)).sort();
  const out: MirrorView[] = mirrors.map((m) => {
    const p = port(uuids(m.output_port)[0]);
    const iface = ifaces.find((i) => uuids(i._uuid)[0] === uuids(p?.interfaces)[0]);
    return {
      name: String(m.name), externalIds: entries(m.external_ids), src: names(m.select_src_port), dst: names(m.select_dst_port),
      output: String(p?.name), outputExternalIds: entries(p?.external_ids), type: String(iface?.type), options: entries(iface?.options),
    };
  });
  const mirrorPorts = ifaces.filter((i) => ['gre', 'erspan', 'ip6gre', 'ip6erspan'].includes(String(i.type))).map((i) => String(i.name)).sort();
  return { mirrors: out.sort((a, b) => (a.name < b.name ? -1 : 1)), mirrorPorts };
}

t.test('our agent and the real ovn-controller make the same port mirrors', { skip }, async (t) => {
  const env = await upCluster(t, path.join(testdirAfterTeardowns(t), 'c'));
  const nbctl = nbctlOf(env);

  // The real one: hypervisor-real on switch A.
  const a = await startOvsSwitch({ bridge: 'br-test' });
  t.teardown(() => a.stop());
  await a.vsctl('set', 'open_vswitch', '.', 'external_ids:system-id=hypervisor-real', `external_ids:ovn-remote=${env.sbOvsdb.join(',')}`,
    'external_ids:ovn-encap-type=geneve', 'external_ids:ovn-encap-ip=127.0.0.1', 'external_ids:ovn-bridge-datapath-type=netdev');
  const ovnEnv = { ...a.env, OVN_RUNDIR: a.dir, OVN_LOGDIR: a.dir, OVN_DBDIR: a.dir };
  const logFile = path.join(a.dir, 'ovn-controller.log');
  await run('ovn-controller', [`unix:${path.join(a.dir, 'db.sock')}`, '--detach', '--no-chdir', '-vconsole:off', `--pidfile=${path.join(a.dir, 'ovn-controller.pid')}`, `--log-file=${logFile}`], { env: ovnEnv });
  const controllerPid = Number(readFileSync(path.join(a.dir, 'ovn-controller.pid'), 'utf8').trim());
  t.teardown(() => stopPid(controllerPid, (argv) => (argv[0] ?? '').endsWith('ovn-controller')));
  const theirLog = (): string => (existsSync(logFile) ? readFileSync(logFile, 'utf8').slice(-2000) : '');

  // Ours: hypervisor-ours on switch B, on the per-chassis agent stream.
  const b = await startOvsSwitch({ bridge: 'br-test' });
  t.teardown(() => b.stop());
  await b.vsctl('set', 'open_vswitch', '.', 'external_ids:system-id=hypervisor-ours', 'external_ids:ovn-encap-type=geneve', 'external_ids:ovn-encap-ip=127.0.0.2');
  const logs: string[] = [];
  const rng = new Rng(7);
  const ovs = new OvsdbClient({ target: b.dbTarget, database: 'Open_vSwitch', tables: OVS_MONITOR });
  const runtime = new AgentRuntime({ ovs, source: new SbStream({ endpoints: env.sbGrpc, random: () => rng.float() }), hostname: 'ours-host', datapathType: 'netdev', log: (l, m) => logs.push(`${l}: ${m}`) });
  void runtime.start();
  t.teardown(async () => {
    await runtime.stop(false);
    await ovs.close();
  });
  const both = (what: string): string => `${what}\n--- ovn-controller:\n${theirLog()}\n--- ours:\n${logs.slice(-15).join('\n')}`;

  await nbctl('ls-add', 'sw0');
  await nbctl('lsp-add', 'sw0', 'vm-real');
  await nbctl('lsp-add', 'sw0', 'vm-ours');
  await nbctl('mirror-add', 'mir-gre', 'gre', '7', 'from-lport', '192.0.2.9');
  await nbctl('mirror-add', 'mir-erspan', 'erspan', '12', 'to-lport', '2001:db8::9');
  await nbctl('mirror-add', 'mir-unused', 'gre', '3', 'from-lport', '192.0.2.3');
  for (const port of ['vm-real', 'vm-ours']) for (const m of ['mir-gre', 'mir-erspan']) await nbctl('lsp-attach-mirror', port, m);
  for (const [sw, iface] of [[a, 'vm-real'], [b, 'vm-ours']] as const) {
    await eventually(`br-int on ${iface}'s switch`, async () => ((await vsctlFind(sw, 'bridge', 'name=br-int')).length === 1 ? true : undefined), [], 90_000)
      .catch((err: Error) => { throw new Error(both(err.message)); });
    await sw.vsctl('add-port', 'br-int', 'vif1', '--', 'set', 'interface', 'vif1', 'type=dummy', `external_ids:iface-id=${iface}`);
  }

  /** Waits until both switches satisfy `ready`, then returns both states. */
  const settle = async (what: string, ready: (s: MirrorState) => boolean): Promise<{ theirs: MirrorState; ours: MirrorState }> => {
    const theirs = await eventually(`ovn-controller: ${what}`, async () => { const s = await mirrorState(a); return ready(s) ? s : undefined; }, [], 60_000)
      .catch((err: Error) => { throw new Error(both(err.message)); });
    const ours = await eventually(`our agent: ${what}`, async () => { const s = await mirrorState(b); return ready(s) ? s : undefined; }, [], 60_000)
      .catch((err: Error) => { throw new Error(both(err.message)); });
    return { theirs, ours };
  };
  const named = (s: MirrorState, n: string): MirrorView | undefined => s.mirrors.find((m) => m.name === n);

  // Made.
  let s = await settle('both mirrors made', (x) => x.mirrors.length === 2);
  t.same(s.ours, s.theirs, 'the same Mirror, Port and Interface rows');
  t.same(s.theirs.mirrors.map((m) => m.name), ['mir-erspan', 'mir-gre'], "ovn-controller's: one per attached mirror, named as the NB mirror");
  t.same(named(s.theirs, 'mir-gre'), {
    name: 'mir-gre', externalIds: ['ovn-owned=true'], src: ['vif1'], dst: [], output: 'ovn-mir-gre', outputExternalIds: [], type: 'gre', options: ['key=7', 'remote_ip=192.0.2.9'],
  }, 'the gre mirror as ovn-controller writes it');
  t.same(named(s.ours, 'mir-erspan'), {
    name: 'mir-erspan', externalIds: ['ovn-owned=true'], src: [], dst: ['vif1'], output: 'ovn-mir-erspan', outputExternalIds: [], type: 'ip6erspan',
    options: ['erspan_idx=12', 'erspan_ver=1', 'key=12', 'remote_ip=2001:db8::9'],
  }, 'ours: erspan to an IPv6 sink is ip6erspan with erspan_idx and erspan_ver');

  // Changed: sink, type, index and filter of mir-gre.
  // ovn-nbctl's generic commands find a Mirror by UUID only.
  const mirGre = await nbctl('--bare', '--columns=_uuid', 'find', 'Mirror', 'name=mir-gre');
  await nbctl('set', 'Mirror', mirGre, 'sink=192.0.2.10', 'type=erspan', 'index=8', 'filter=to-lport');
  s = await settle('mir-gre changed', (x) => named(x, 'mir-gre')?.type === 'erspan' && named(x, 'mir-gre')?.dst.length === 1);
  t.same(s.ours, s.theirs, 'alike after the change');
  t.same(named(s.ours, 'mir-gre')?.options, ['erspan_idx=8', 'erspan_ver=1', 'key=8', 'remote_ip=192.0.2.10'], 'the new sink and index');
  t.same(named(s.ours, 'mir-gre')?.src, [], 'moved from select_src_port');
  t.same(s.ours.mirrorPorts, ['ovn-mir-erspan', 'ovn-mir-gre'], 'still one output port each');

  // Detached from one mirror: it goes on both, the other stays.
  for (const port of ['vm-real', 'vm-ours']) await nbctl('lsp-detach-mirror', port, 'mir-erspan');
  s = await settle('mir-erspan detached', (x) => x.mirrors.length === 1 && x.mirrorPorts.length === 1);
  t.same(s.ours, s.theirs, 'alike after a detach');
  t.same(s.theirs.mirrorPorts, ['ovn-mir-gre'], "ovn-controller removed mir-erspan's port");

  // The other deleted in the NB: everything goes.
  await nbctl('mirror-del', 'mir-gre');
  s = await settle('mir-gre deleted', (x) => x.mirrors.length === 0);
  t.same(s.ours, s.theirs, 'alike after mirror-del');
  t.same(s.ours, { mirrors: [], mirrorPorts: [] }, 'no mirror and no mirror port left');
});
