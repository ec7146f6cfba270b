// Port bindings end to end: a real ovs-vswitchd, the agent, an ovnts central. An interface with
// external_ids:iface-id claims its Port_Binding, which goes up (and the interface gets
// ovn-installed) once the runtime reports its flows installed; removing the interface releases
// it; a port whose interface moves from one chassis to another ends bound to the second only,
// without flapping. Method: startChassis per hypervisor (its own Open vSwitch), the SB view
// read through List, and a Watch of Port_Binding recording every binding change.
import t from 'tap';
import { ovsSwitchInstalled } from '../helpers/ovs-switch.js';
import type { Central, Chassis } from './local-harness.js';
import { boundTo, eventually, mapOf, startCentral, startChassis, vsctlFind } from './local-harness.js';

const skip = ovsSwitchInstalled() ? false : 'Open vSwitch is not installed';

async function brInt(hv: Chassis): Promise<void> {
  await eventually(`${hv.name} has br-int`, async () => ((await vsctlFind(hv.sw, 'bridge', 'name=br-int')).length === 1 ? true : undefined), [hv]);
}

async function addVif(hv: Chassis, name: string, ifaceId: string): Promise<void> {
  await hv.sw.vsctl('add-port', 'br-int', name, '--', 'set', 'interface', name, 'type=dummy', `external_ids:iface-id=${ifaceId}`);
}

async function ifaceIds(hv: Chassis, name: string): Promise<Map<string, string>> {
  const [row] = await vsctlFind(hv.sw, 'interface', `name=${name}`);
  return mapOf(row?.external_ids);
}

async function portUp(central: Central, port: string): Promise<boolean | undefined> {
  const pb = (await central.sb('Port_Binding')).find((r) => r.logical_port === port);
  return pb === undefined ? undefined : pb.up === true;
}

t.test('claim, up, release', { skip }, async (t) => {
  const central = await startCentral(t);
  for (const w of [['ls-add', 'sw0'], ['lsp-add', 'sw0', 'vm1'], ['lsp-set-addresses', 'vm1', '00:00:00:00:00:01 10.0.0.1']]) await central.nbctl(...w);
  const hv1 = await startChassis(t, central, { name: 'hv1', encapIp: '192.0.2.1' });
  await brInt(hv1);
  await eventually('hv1 registered', async () => ((await central.sb('Chassis')).length === 1 ? true : undefined), [hv1]);
  t.equal(await boundTo(central, 'vm1'), '', 'vm1 starts unbound');

  await addVif(hv1, 'vif1', 'vm1');
  await eventually('vm1 bound to hv1', async () => ((await boundTo(central, 'vm1')) === 'hv1' ? true : undefined), [hv1]);
  t.pass('the interface with iface-id=vm1 claims its Port_Binding');
  await eventually('vm1 up', async () => ((await portUp(central, 'vm1')) === true ? true : undefined), [hv1]);
  t.pass('it goes up once the runtime reports its flows installed');
  const ids = await eventually('ovn-installed on vif1', async () => {
    const m = await ifaceIds(hv1, 'vif1');
    return m.get('ovn-installed') === 'true' ? m : undefined;
  }, [hv1]);
  t.match(ids.get('ovn-installed-ts'), /^\d{13}$/, 'with ovn-installed-ts');
  t.equal(await central.nbctl('lsp-get-up', 'vm1'), 'up\n', 'and the NB sees the port up');
  t.ok(hv1.runtime.local.view.vifs.get('vm1')! > 0, 'the LocalView maps vm1 to its OpenFlow port');

  await hv1.sw.vsctl('del-port', 'br-int', 'vif1');
  await eventually('vm1 released', async () => ((await boundTo(central, 'vm1')) === '' ? true : undefined), [hv1]);
  t.equal(await portUp(central, 'vm1'), false, 'removing the interface releases the port and sets it down');
  t.equal(await central.nbctl('lsp-get-up', 'vm1'), 'down\n');
  t.notOk(hv1.runtime.local.view.vifs.has('vm1'), 'and it leaves the LocalView');

  await addVif(hv1, 'vif1b', 'vm1');
  await eventually('vm1 bound again', async () => ((await boundTo(central, 'vm1')) === 'hv1' && (await portUp(central, 'vm1')) === true ? true : undefined), [hv1]);
  t.pass('a new interface for the port claims it again');
});

t.test('requested-chassis keeps a port off another chassis', { skip }, async (t) => {
  const central = await startCentral(t);
  for (const w of [['ls-add', 'sw0'], ['lsp-add', 'sw0', 'vm1'], ['lsp-set-options', 'vm1', 'requested-chassis=hv2']]) await central.nbctl(...w);
  const hv1 = await startChassis(t, central, { name: 'hv1', encapIp: '192.0.2.1' });
  await brInt(hv1);
  await addVif(hv1, 'vif1', 'vm1');
  // Once hv1 sees its own Chassis and the interface, it has decided about vm1.
  await eventually('hv1 knows itself and vif1', async () => (hv1.runtime.local.sbRows.chassisByName('hv1') !== undefined && hv1.runtime.local.view.vifs.has('vm1') ? true : undefined), [hv1]);
  await hv1.runtime.local.whenIdle();
  t.equal(await boundTo(central, 'vm1'), '', 'hv1 does not claim a port requested for hv2');
  await central.nbctl('lsp-set-options', 'vm1', 'requested-chassis=hv1');
  await eventually('claimed once requested here', async () => ((await boundTo(central, 'vm1')) === 'hv1' ? true : undefined), [hv1]);
  t.pass('and claims it once requested-chassis names it');
});

t.test('a port moved from hv1 to hv2 ends bound to hv2, without flapping', { skip }, async (t) => {
  const central = await startCentral(t);
  for (const w of [['ls-add', 'sw0'], ['lsp-add', 'sw0', 'vm2']]) await central.nbctl(...w);
  const hv1 = await startChassis(t, central, { name: 'hv1', encapIp: '192.0.2.1' });
  const hv2 = await startChassis(t, central, { name: 'hv2', encapIp: '192.0.2.2' });
  await brInt(hv1);
  await brInt(hv2);
  await eventually('both registered', async () => ((await central.sb('Chassis')).length === 2 ? true : undefined), [hv1, hv2]);
  const chassisName = new Map((await central.sb('Chassis')).map((r) => [(r._uuid as [string, string])[1], r.name as string]));

  // Every binding change of vm2 from now on, as the SB records it.
  const history: string[] = [];
  const watch = central.client.watch(['Port_Binding'], 0, 'OVN_Southbound');
  t.teardown(() => watch.cancel());
  watch.on('error', () => {});
  watch.on('data', (e: { changes: { newJson: string }[] }) => {
    for (const c of e.changes) {
      if (c.newJson === '') continue;
      const row = JSON.parse(c.newJson) as { logical_port: string; chassis: unknown };
      if (row.logical_port !== 'vm2') continue;
      const ch = Array.isArray(row.chassis) && row.chassis[0] === 'uuid' ? chassisName.get(row.chassis[1] as string) ?? '?' : '';
      if (history[history.length - 1] !== ch) history.push(ch);
    }
  });

  await addVif(hv1, 'tap-vm2', 'vm2');
  await eventually('vm2 up on hv1', async () => ((await boundTo(central, 'vm2')) === 'hv1' && (await portUp(central, 'vm2')) === true ? true : undefined), [hv1, hv2]);
  // Live migration: the destination's interface appears while the source's still exists.
  await addVif(hv2, 'tap-vm2', 'vm2');
  await eventually('vm2 bound to hv2', async () => ((await boundTo(central, 'vm2')) === 'hv2' ? true : undefined), [hv1, hv2]);
  await eventually('hv1 drops its ovn-installed', async () => ((await ifaceIds(hv1, 'tap-vm2')).has('ovn-installed') ? undefined : true), [hv1]);
  t.pass('hv2 took vm2 over, and hv1 yielded while its interface still exists');
  await hv1.sw.vsctl('del-port', 'br-int', 'tap-vm2');
  await eventually('vm2 up on hv2', async () => ((await portUp(central, 'vm2')) === true ? true : undefined), [hv1, hv2]);
  // A stability window (not a synchronization): several resend periods in which a flapping
  // pair of agents would have moved the port again.
  await new Promise((r) => setTimeout(r, 4_000));
  t.equal(await boundTo(central, 'vm2'), 'hv2', 'vm2 stays on hv2');
  t.same(history.filter((h) => h !== ''), ['hv1', 'hv2'], `bound to hv1, then to hv2, and nothing else (history: ${history.join(' → ')})`);
  t.equal((await ifaceIds(hv2, 'tap-vm2')).get('ovn-installed'), 'true', 'hv2 marked its interface installed');
});
