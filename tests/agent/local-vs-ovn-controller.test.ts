// Differential: the real ovn-controller 23.03 and our agent as two chassis of one ovnts
// cluster, both on Geneve, then both on VXLAN. Each builds a tunnel to the other and registers itself; what ours writes must look
// like what the real one writes — the tunnel port's name pattern, interface type and options,
// its ovn-chassis-id, the Encap options, the Chassis other_config keys both set, and the
// integration bridge's settings. Method: `ovnts up` (real processes, the OVN_Southbound OVSDB
// door for ovn-controller), two real Open vSwitch instances, everything stopped by pid.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { AgentRuntime } from '../../agent/local/agent-runtime.js';
import { OVS_MONITOR } from '../../agent/local/ovs-rows.js';
import { SbWatchSource } from '../../agent/sb-watch-source.js';
import { OvsdbClient } from '../../ovsdb/client.js';
import { NorthboundClient } from '../../server/northbound-service.js';
import { upCluster } from '../helpers/ovnts-cli.js';
import type { OvsSwitch } from '../helpers/ovs-switch.js';
import { ovsSwitchInstalled, startOvsSwitch } from '../helpers/ovs-switch.js';
import { stopPid } from '../helpers/process.js';
import { eventually, mapOf, vsctlFind } from './local-harness.js';
import { testdirAfterTeardowns } from '../helpers/testdir.js';

const run = promisify(execFile);
function ovnControllerInstalled(): boolean {
  return existsSync('/usr/bin/ovn-controller');
}
const skip = ovsSwitchInstalled() && ovnControllerInstalled() ? false : 'Open vSwitch or ovn-controller is not installed';

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
  const ovnEnv = { ...a.env, OVN_RUNDIR: a.dir, OVN_LOGDIR: a.dir, OVN_DBDIR: a.dir };
  await run('ovn-controller', [`unix:${path.join(a.dir, 'db.sock')}`, '--detach', '--no-chdir', '-vconsole:off', `--pidfile=${path.join(a.dir, 'ovn-controller.pid')}`, `--log-file=${path.join(a.dir, 'ovn-controller.log')}`], { env: ovnEnv });
  const controllerPid = Number(readFileSync(path.join(a.dir, 'ovn-controller.pid'), 'utf8').trim());
  t.teardown(() => stopPid(controllerPid, (argv) => (argv[0] ?? '').endsWith('ovn-controller')));

  // Ours: hypervisor-ours on switch B.
  const b = await startOvsSwitch({ bridge: 'br-test' });
  t.teardown(() => b.stop());
  await b.vsctl('set', 'open_vswitch', '.', 'external_ids:system-id=hypervisor-ours', `external_ids:ovn-encap-type=${encap}`, 'external_ids:ovn-encap-ip=127.0.0.2',
    'external_ids:ovn-bridge-datapath-type=netdev', 'external_ids:ovn-bridge-mappings=physnet1:br-phys');
  const logs: string[] = [];
  const ovs = new OvsdbClient({ target: `unix:${path.join(b.dir, 'db.sock')}`, database: 'Open_vSwitch', tables: OVS_MONITOR });
  const runtime = new AgentRuntime({ ovs, source: new SbWatchSource({ endpoints: env.nbGrpc }), hostname: 'ours-host', log: (l, m) => logs.push(`${l}: ${m}`) });
  void runtime.start();
  t.teardown(async () => {
    await runtime.stop(false);
    await ovs.close();
  });

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
