// Conntrack zones across agent restarts, as ovn-controller keeps them: the agent starts from the
// zones in br-int's external_ids:ct-zone-<user> and writes the zones in force back there. A zone
// set there before the agent first starts is the one its port's flows load (reg13); after a
// restart every port keeps its zone, and a port added meanwhile takes a free one.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Test } from 'tap';
import t from 'tap';
import { ctZoneOps, persistedCtZones } from '../../agent/local/agent-runtime.js';
import type { ChassisHost } from '../helpers/chassis-host.js';
import { createChassisHost, createUnderlay } from '../helpers/chassis-host.js';
import { brIntExists, e2eSkip, nbctlOf, startAgent, untilLogged } from '../helpers/agent-e2e.js';
import { until, upCluster } from '../helpers/ovnts-cli.js';
import { stopPid } from '../helpers/process.js';
import { testdirAfterTeardowns } from '../helpers/testdir.js';

const execFileAsync = promisify(execFile);

t.test('persisted zones: read from external_ids, written back as mutations', async (t) => {
  t.same([...persistedCtZones(new Map([['ct-zone-vm1', '7'], ['ct-zone-x_dnat', '65535'], ['ct-zone-bad', '0'], ['ct-zone-big', '70000'], ['ct-zone-nan', 'seven'], ['other', '3']]))],
    [['vm1', 7], ['x_dnat', 65535]], 'zone numbers 1..65535 under ct-zone-*, the rest ignored');
  t.equal(ctZoneOps('b', new Map([['vm1', 7]]), new Map([['vm1', 7]])), undefined, 'nothing to write when they agree');
  t.same(ctZoneOps('b', new Map([['vm1', 7], ['gone', 3]]), new Map([['vm1', 8], ['new', 4]])), [{
    op: 'mutate', table: 'Bridge', where: [['_uuid', '==', ['uuid', 'b']]],
    mutations: [['external_ids', 'delete', ['set', ['ct-zone-gone', 'ct-zone-vm1']]], ['external_ids', 'insert', ['map', [['ct-zone-new', '4'], ['ct-zone-vm1', '8']]]]],
  }], 'stale and changed keys deleted, new and changed ones inserted');
});

/** br-int's ct-zone-* entries, by user. */
async function zonesOf(ch: ChassisHost): Promise<Map<string, number>> {
  const text = await ch.ovs.vsctl('--format=json', '--columns=external_ids', 'find', 'Bridge', 'name=br-int');
  const data = (JSON.parse(text) as { data: [[string, [string, string][]]][] }).data[0]?.[0];
  return persistedCtZones(new Map(data?.[1] ?? []));
}

/** Whether br-int has a flow loading `zone` into reg13 (a port's conntrack zone). */
async function loadsZone(ch: ChassisHost, zone: number): Promise<boolean> {
  const { stdout: flows } = await execFileAsync('ovs-ofctl', ['-O', 'OpenFlow15', 'dump-flows', `unix:${path.join(ch.ovs.dir, 'br-int.mgmt')}`, 'table=0']);
  return new RegExp(`(load:0x${zone.toString(16)}->NXM_NX_REG13\\[0\\.\\.15\\]|set_field:0x${zone.toString(16)}->reg13)`).test(flows);
}

async function agentUp(t: Test, ch: ChassisHost, env: Parameters<typeof startAgent>[2]): Promise<ReturnType<typeof startAgent>> {
  const agent = startAgent(t, ch, env);
  await until('the agent has br-int', () => brIntExists(ch).then((b) => (b ? true : undefined)), 90_000);
  return agent;
}

t.test('an agent keeps its ports\' ct zones across a restart', { skip: e2eSkip }, async (t) => {
  const env = await upCluster(t, testdirAfterTeardowns(t));
  const nbctl = nbctlOf(env);
  const ul = await createUnderlay('172.30.18');
  t.teardown(() => ul.remove());
  const hv1 = await createChassisHost(ul, { name: 'hv1', index: 1 });
  t.teardown(() => hv1.stop());
  await nbctl('ls-add', 'sw0');
  for (const i of [1, 2, 3]) await nbctl('lsp-add', 'sw0', `vm${i}`, '--', 'lsp-set-addresses', `vm${i}`, `0a:00:00:00:18:0${i} 10.18.0.${i}`);
  // A zone for vm1 from "before" (a previous agent's), on a br-int made here.
  await hv1.ovs.vsctl('--may-exist', 'add-br', 'br-int', '--', 'set', 'Bridge', 'br-int', 'fail_mode=secure', 'datapath_type=netdev', 'external_ids:ct-zone-vm1=77');
  await hv1.addVm('vm1', { mac: '0a:00:00:00:18:01', cidr: '10.18.0.1/24' });
  await hv1.addVm('vm2', { mac: '0a:00:00:00:18:02', cidr: '10.18.0.2/24' });

  const first = await agentUp(t, hv1, env);
  // The ports' zones and their switch's DNAT and SNAT zones ("<datapath>_dnat" / "_snat").
  const before = await untilLogged('zones for vm1, vm2 and their switch in br-int', async () => {
    const z = await zonesOf(hv1);
    const keys = [...z.keys()];
    return z.has('vm1') && z.has('vm2') && keys.some((k) => k.endsWith('_dnat')) && keys.some((k) => k.endsWith('_snat')) ? z : undefined;
  }, 90_000, [first]);
  t.equal(before.get('vm1'), 77, 'vm1 kept the zone it had before the agent started');
  await untilLogged('vm1\'s flows load zone 77', async () => ((await loadsZone(hv1, 77)) ? true : undefined), 90_000, [first]);
  t.pass('vm1\'s table-0 flow loads zone 77 into reg13');
  const vm2Zone = before.get('vm2') as number;
  t.not(vm2Zone, 77, 'vm2 has a zone of its own');
  t.equal(before.size, 4, `two ports and the switch's two NAT zones: ${[...before.keys()].join(', ')}`);

  // Stop the agent, add vm3 while it is down, start a new one.
  await stopPid(first.pid, (argv) => argv.includes('agent'));
  await hv1.addVm('vm3', { mac: '0a:00:00:00:18:03', cidr: '10.18.0.3/24' });
  const second = await agentUp(t, hv1, env);
  const after = await untilLogged('a zone for vm3 after the restart', async () => {
    const z = await zonesOf(hv1);
    return z.has('vm3') ? z : undefined;
  }, 90_000, [second]);
  for (const [user, zone] of before) t.equal(after.get(user), zone, `${user} keeps zone ${zone}`);
  t.notOk([...before.values()].includes(after.get('vm3') as number), `vm3 took a free zone (${after.get('vm3') ?? '?'})`);
  t.ok(await loadsZone(hv1, vm2Zone), 'vm2\'s flows load its old zone after the restart');
  t.match(second.output(), /ct zones kept from before/, 'the new agent says it took the zones from br-int');
});
