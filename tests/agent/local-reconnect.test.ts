// The agent survives its Open vSwitch connection being cut, refused for a while, or fed
// garbage: it reconnects, resynchronizes its replica, and acts on what changed meanwhile.
// Method: the agent talks to the real ovsdb-server through a proxy that cuts, refuses and
// injects (tests/helpers/ovsdb-proxy.ts); the test changes the switch directly meanwhile.
import path from 'node:path';
import t from 'tap';
import { ovsSwitchInstalled } from '../helpers/ovs-switch.js';
import type { OvsdbProxy } from '../helpers/ovsdb-proxy.js';
import { startOvsdbProxy } from '../helpers/ovsdb-proxy.js';
import { boundTo, eventually, mapOf, startCentral, startChassis, vsctlFind } from './local-harness.js';

const skip = ovsSwitchInstalled() ? false : 'Open vSwitch is not installed';

t.test('cut, refused and garbled OVSDB connections are survived', { skip }, async (t) => {
  const central = await startCentral(t);
  for (const w of [['ls-add', 'sw0'], ['lsp-add', 'sw0', 'vm1'], ['lsp-add', 'sw0', 'vm2']]) await central.nbctl(...w);
  let proxy: OvsdbProxy | undefined;
  const hv = await startChassis(t, central, {
    name: 'hv1', encapIp: '192.0.2.1',
    ovsTarget: async (sw) => {
      proxy = await startOvsdbProxy(sw.dir, path.join(sw.dir, 'db.sock'));
      t.teardown(() => proxy?.close());
      return proxy.target;
    },
  });
  const p = proxy as OvsdbProxy;
  await eventually('br-int and registration', async () => ((await vsctlFind(hv.sw, 'bridge', 'name=br-int')).length === 1 && (await central.sb('Chassis')).length === 1 ? true : undefined), [hv]);

  p.refuse(true);
  p.cut();
  await hv.sw.vsctl('add-port', 'br-int', 'vif1', '--', 'set', 'interface', 'vif1', 'type=dummy', 'external_ids:iface-id=vm1');
  const accepted = p.accepted();
  await eventually('the agent retries', async () => (p.accepted() >= accepted + 2 ? true : undefined), [hv]);
  t.equal(await boundTo(central, 'vm1'), '', 'nothing is claimed while the switch is unreachable');
  p.refuse(false);
  await eventually('vm1 claimed after the reconnect', async () => ((await boundTo(central, 'vm1')) === 'hv1' ? true : undefined), [hv]);
  await eventually('and marked installed', async () => (mapOf((await vsctlFind(hv.sw, 'interface', 'name=vif1'))[0]?.external_ids).get('ovn-installed') === 'true' ? true : undefined), [hv]);
  t.pass('an interface added while disconnected is claimed once the replica resyncs');

  for (const garbage of ['not json at all', '[1,2]', JSON.stringify({ id: 424242, result: { bogus: true }, error: null }) + '}']) {
    const before = p.accepted();
    p.inject(garbage);
    await eventually(`a new connection after ${JSON.stringify(garbage)}`, async () => (p.accepted() > before && p.open() === 1 ? true : undefined), [hv]);
  }
  await hv.sw.vsctl('add-port', 'br-int', 'vif2', '--', 'set', 'interface', 'vif2', 'type=dummy', 'external_ids:iface-id=vm2');
  await hv.sw.vsctl('del-port', 'br-int', 'vif1');
  await eventually('vm2 claimed and vm1 released', async () => ((await boundTo(central, 'vm2')) === 'hv1' && (await boundTo(central, 'vm1')) === '' ? true : undefined), [hv]);
  t.pass('after garbage from the server the agent reconnects and keeps working');
  // The agent stream's Hello may register the chassis before the local side does.
  t.ok(hv.logs.filter((l) => l.includes('register chassis hv1')).length <= 1, 'the local side registered at most once, not again after reconnects');
  t.equal((await central.sb('Chassis')).length, 1, 'and there is one Chassis');
  t.equal((await central.sb('Encap')).length, 1, 'with one Encap');
});
