// Differential: the real ovn-controller 23.03 and our agent as two chassis of one ovnts
// cluster, both on Geneve, then both on VXLAN. Each builds a tunnel to the other and registers itself; what ours writes must look
// like what the real one writes — the tunnel port's name pattern, interface type and options,
// its ovn-chassis-id, the Encap options, the Chassis other_config keys both set, and the
// integration bridge's settings; then, with ovn-encap-tos, ovn-encap-df_default and
// ovn-set-local-ip set on both, the same tunnel options, and iface-id-ver binding on neither
// side until the interface's version is the port's. Method: `ovnts up` (real processes, the OVN_Southbound OVSDB
// door for ovn-controller), two real Open vSwitch instances, everything stopped by pid.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import type { Test } from 'tap';
import { AgentRuntime } from '../../agent/local/agent-runtime.js';
import { OVS_MONITOR } from '../../agent/local/ovs-rows.js';
import { SbWatchSource } from '../../agent/sb-watch-source.js';
import { OvsdbClient } from '../../ovsdb/client.js';
import { NorthboundClient } from '../../server/northbound-service.js';
import { upCluster } from '../helpers/ovnts-cli.js';
import type { OvsSwitch } from '../helpers/ovs-switch.js';
import { ovsSwitchInstalled, startOvsSwitch } from '../helpers/ovs-switch.js';
import { stopPid } from '../helpers/process.js';
import { eventually, mapOf, uuids, vsctlFind } from './local-harness.js';
import { nbctlOf } from '../helpers/agent-e2e.js';
import { testdirAfterTeardowns } from '../helpers/testdir.js';

const run = promisify(execFile);
function ovnControllerInstalled(): boolean {
  return existsSync('/usr/bin/ovn-controller');
}
const skip = ovsSwitchInstalled() && ovnControllerInstalled() ? false : 'Open vSwitch or ovn-controller is not installed';

/** The real ovn-controller on switch `sw` (its external_ids already set), stopped by pid with the test. */
async function startRealController(t: Test, sw: OvsSwitch): Promise<void> {
  const env = { ...sw.env, OVN_RUNDIR: sw.dir, OVN_LOGDIR: sw.dir, OVN_DBDIR: sw.dir };
  await run('ovn-controller', [`unix:${path.join(sw.dir, 'db.sock')}`, '--detach', '--no-chdir', '-vconsole:off', `--pidfile=${path.join(sw.dir, 'ovn-controller.pid')}`, `--log-file=${path.join(sw.dir, 'ovn-controller.log')}`], { env });
  const pid = Number(readFileSync(path.join(sw.dir, 'ovn-controller.pid'), 'utf8').trim());
  t.teardown(() => stopPid(pid, (argv) => (argv[0] ?? '').endsWith('ovn-controller')));
}

/** Our agent runtime on switch `sw` (its external_ids already set), stopped with the test; its log lines. */
function startOurAgent(t: Test, sw: OvsSwitch, endpoints: readonly string[]): string[] {
  const logs: string[] = [];
  const ovs = new OvsdbClient({ target: `unix:${path.join(sw.dir, 'db.sock')}`, database: 'Open_vSwitch', tables: OVS_MONITOR });
  const runtime = new AgentRuntime({ ovs, source: new SbWatchSource({ endpoints: [...endpoints] }), hostname: 'ours-host', log: (l, m) => logs.push(`${l}: ${m}`) });
  void runtime.start();
  t.teardown(async () => {
    await runtime.stop(false);
    await ovs.close();
  });
  return logs;
}

async function tunnelPorts(sw: OvsSwitch): Promise<{ name: string; chassisId: string; type: string; options: Map<string, string> }[]> {
  const ports = await vsctlFind(sw, 'port');
  const ifaces = await vsctlFind(sw, 'interface');
  const out = [];
  for (const p of ports) {
    const id = mapOf(p.external_ids).get('ovn-chassis-id');
    if (id === undefined) continue;
    const iface = ifaces.find((i) => i.name === p.name);
    out.push({ name: p.name as string, chassisId: id, type: iface?.type as string, options: mapOf(iface?.options) });
  }
  return out;
}

for (const encap of ['geneve', 'vxlan'] as const) t.test(`our agent and the real ovn-controller build the same kind of chassis (${encap})`, { skip }, async (t) => {
  const env = await upCluster(t, path.join(testdirAfterTeardowns(t), 'c'));
  const nb = new NorthboundClient(env.nbGrpc[0] as string);
  t.teardown(() => nb.close());
  const sb = async (table: string): Promise<Record<string, unknown>[]> => (await nb.list(table, [], { db: 'OVN_Southbound' })).rows;

  // The real one: hypervisor-real on switch A (whose own bridge is br-test: each side creates
  // its integration bridge).
  const a = await startOvsSwitch({ bridge: 'br-test' });
  t.teardown(() => a.stop());
  await a.vsctl('set', 'open_vswitch', '.', 'external_ids:system-id=hypervisor-real', `external_ids:ovn-remote=${env.sbOvsdb.join(',')}`,
    `external_ids:ovn-encap-type=${encap}`, 'external_ids:ovn-encap-ip=127.0.0.1', 'external_ids:ovn-bridge-datapath-type=netdev', 'external_ids:ovn-bridge-mappings=physnet1:br-phys');
  await startRealController(t, a);

  // Ours: hypervisor-ours on switch B.
  const b = await startOvsSwitch({ bridge: 'br-test' });
  t.teardown(() => b.stop());
  await b.vsctl('set', 'open_vswitch', '.', 'external_ids:system-id=hypervisor-ours', `external_ids:ovn-encap-type=${encap}`, 'external_ids:ovn-encap-ip=127.0.0.2',
    'external_ids:ovn-bridge-datapath-type=netdev', 'external_ids:ovn-bridge-mappings=physnet1:br-phys');
  const logs = startOurAgent(t, b, env.nbGrpc);

  const theirs = await eventually('ovn-controller builds a tunnel to our chassis', async () => {
    const ports = await tunnelPorts(a);
    return ports.length === 1 ? ports[0] : undefined;
  }, [], 90_000);
  const ours = await eventually('our agent builds a tunnel to the real chassis', async () => {
    const ports = await tunnelPorts(b);
    return ports.length === 1 ? ports[0] : undefined;
  }, [], 90_000).catch((err: Error) => { throw new Error(`${err.message}\n${logs.join('\n')}`); });

  t.equal(theirs?.name, 'ovn-hyperv-0', 'the real name for hypervisor-ours');
  t.equal(ours?.name, 'ovn-hyperv-0', 'ours for hypervisor-real: the same pattern');
  t.equal(theirs?.chassisId, 'hypervisor-ours@127.0.0.2');
  t.equal(ours?.chassisId, 'hypervisor-real@127.0.0.1', 'ovn-chassis-id spelled the same way');
  t.equal(theirs?.type, encap, `ovn-controller's tunnel is ${encap}`);
  t.equal(ours?.type, theirs?.type, `interface type ${String(theirs?.type)}`);
  const norm = (m: Map<string, string> | undefined): string[] => [...(m ?? new Map<string, string>())].filter(([k]) => k !== 'remote_ip').map(([k, v]) => `${k}=${v}`).sort();
  t.same(norm(ours?.options), norm(theirs?.options), `the same options besides remote_ip (${norm(theirs?.options).join(' ')})`);

  const chassis = await sb('Chassis');
  const real = chassis.find((c) => c.name === 'hypervisor-real');
  const mine = chassis.find((c) => c.name === 'hypervisor-ours');
  const realOc = mapOf(real?.other_config);
  const mineOc = mapOf(mine?.other_config);
  for (const [k, v] of mineOc) {
    t.ok(realOc.has(k), `other_config:${k} is a key ovn-controller sets too`);
    t.equal(v, realOc.get(k), `other_config:${k} has the same value (${v})`);
  }
  const encaps = await sb('Encap');
  const encapOf = (name: string): Record<string, unknown> | undefined => encaps.find((e) => e.chassis_name === name);
  t.same(mapOf(encapOf('hypervisor-ours')?.options), mapOf(encapOf('hypervisor-real')?.options), 'Encap options alike');
  t.equal(encapOf('hypervisor-ours')?.type, encapOf('hypervisor-real')?.type);

  const [realBr] = await vsctlFind(a, 'bridge', 'name=br-int');
  const [ourBr] = await vsctlFind(b, 'bridge', 'name=br-int');
  t.equal(ourBr?.fail_mode, realBr?.fail_mode, 'br-int fail_mode alike');
  t.equal(ourBr?.datapath_type, realBr?.datapath_type, 'br-int datapath_type alike');
  t.same([...mapOf(ourBr?.other_config).keys()].sort(), [...mapOf(realBr?.other_config).keys()].sort(), 'br-int other_config keys alike');
});

t.test('the tunnel tunables and iface-id-ver, beside the real ovn-controller', { skip }, async (t) => {
  const env = await upCluster(t, path.join(testdirAfterTeardowns(t), 'c'));
  const nb = new NorthboundClient(env.nbGrpc[0] as string);
  t.teardown(() => nb.close());
  const nbctl = nbctlOf(env);
  const sb = async (table: string): Promise<Record<string, unknown>[]> => (await nb.list(table, [], { db: 'OVN_Southbound' })).rows;
  // ovn-encap-tos per chassis on one side and plain on the other: both spellings are read.
  const tunables = (name: string): string[] => [`external_ids:ovn-encap-tos-${name}=inherit`, 'external_ids:ovn-encap-df_default=false', 'external_ids:ovn-set-local-ip=true'];

  const a = await startOvsSwitch({ bridge: 'br-test' });
  t.teardown(() => a.stop());
  await a.vsctl('set', 'open_vswitch', '.', 'external_ids:system-id=hypervisor-real', `external_ids:ovn-remote=${env.sbOvsdb.join(',')}`,
    'external_ids:ovn-encap-type=geneve', 'external_ids:ovn-encap-ip=127.0.0.1', 'external_ids:ovn-bridge-datapath-type=netdev', ...tunables('hypervisor-real'));
  await startRealController(t, a);

  const b = await startOvsSwitch({ bridge: 'br-test' });
  t.teardown(() => b.stop());
  await b.vsctl('set', 'open_vswitch', '.', 'external_ids:system-id=hypervisor-ours', 'external_ids:ovn-encap-type=geneve', 'external_ids:ovn-encap-ip=127.0.0.2',
    'external_ids:ovn-bridge-datapath-type=netdev', 'external_ids:ovn-encap-tos=inherit', 'external_ids:ovn-encap-df_default=false', 'external_ids:ovn-set-local-ip=true');
  const logs = startOurAgent(t, b, env.nbGrpc);

  const theirs = await eventually('ovn-controller builds a tunnel to our chassis', async () => (await tunnelPorts(a))[0], [], 90_000);
  const ours = await eventually('our agent builds a tunnel to the real chassis', async () => (await tunnelPorts(b))[0], [], 90_000)
    .catch((err: Error) => { throw new Error(`${err.message}\n${logs.join('\n')}`); });
  t.match(Object.fromEntries(theirs.options), { tos: 'inherit', df_default: 'false', local_ip: '127.0.0.1' }, 'ovn-controller sets tos, df_default and local_ip');
  const norm = (m: Map<string, string>): string[] => [...m].filter(([k]) => k !== 'remote_ip' && k !== 'local_ip').map(([k, v]) => `${k}=${v}`).sort();
  t.same(norm(ours.options), norm(theirs.options), `ours the same options besides the addresses (${norm(theirs.options).join(' ')})`);
  t.equal(ours.options.get('local_ip'), '127.0.0.2', 'local_ip is each side\'s own encap IP');
  t.equal(ours.options.get('remote_ip'), theirs.options.get('local_ip'), 'and the other side\'s remote_ip');

  // iface-id-ver: each side has a port whose interface carries an older version, and a control
  // port without one. Once both control ports are bound, the versioned ones must not be.
  await nbctl('ls-add', 'sw0');
  for (const side of ['real', 'ours']) {
    await nbctl('lsp-add', 'sw0', `vm-${side}`);
    await nbctl('lsp-set-options', `vm-${side}`, 'iface-id-ver=v2');
    await nbctl('lsp-add', 'sw0', `ctl-${side}`);
  }
  for (const [sw, side] of [[a, 'real'], [b, 'ours']] as const) {
    await eventually(`br-int on ${side}`, async () => ((await vsctlFind(sw, 'bridge', 'name=br-int')).length === 1 ? true : undefined), [], 60_000);
    await sw.vsctl('add-port', 'br-int', 'vif1', '--', 'set', 'interface', 'vif1', 'type=dummy', `external_ids:iface-id=vm-${side}`, 'external_ids:iface-id-ver=v1');
    await sw.vsctl('add-port', 'br-int', 'ctl1', '--', 'set', 'interface', 'ctl1', 'type=dummy', `external_ids:iface-id=ctl-${side}`);
  }
  const boundOf = async (): Promise<Map<string, string>> => {
    const chassis = new Map((await sb('Chassis')).map((c) => [uuids(c._uuid)[0], c.name as string]));
    return new Map((await sb('Port_Binding')).map((p) => [p.logical_port as string, chassis.get(uuids(p.chassis)[0]) ?? '']));
  };
  await eventually('both control ports bound', async () => {
    const m = await boundOf();
    return m.get('ctl-real') === 'hypervisor-real' && m.get('ctl-ours') === 'hypervisor-ours' ? true : undefined;
  }, [], 60_000).catch((err: Error) => { throw new Error(`${err.message}\n${logs.join('\n')}`); });
  const before = await boundOf();
  t.equal(before.get('vm-real'), '', 'ovn-controller does not bind a port through an interface of another iface-id-ver');
  t.equal(before.get('vm-ours'), '', 'nor does ours');
  t.ok(readFileSync(path.join(a.dir, 'ovn-controller.log'), 'utf8').includes('Mismatch iface-id-ver for lport vm-real'), 'ovn-controller logs the mismatch');
  t.ok(logs.some((l) => l.includes('not binding vm-ours: its iface-id-ver is v2, its interface\'s v1')), 'ours too');
  for (const sw of [a, b]) await sw.vsctl('set', 'interface', 'vif1', 'external_ids:iface-id-ver=v2');
  await eventually('both bound once the interfaces carry v2', async () => {
    const m = await boundOf();
    return m.get('vm-real') === 'hypervisor-real' && m.get('vm-ours') === 'hypervisor-ours' ? true : undefined;
  }, [], 60_000);
  t.pass('the same version binds, on both');
});
