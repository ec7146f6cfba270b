// Goal: the agent learns a VIF's MTU from Open vSwitch as ovn-controller does (Interface.mtu, what
// the datapath reports, not mtu_request), and a change of it alone hands the flow side a new
// LocalView (whose multichassis ports' path MTU flows follow it). Method: a real ovsdb-server and
// ovs-vswitchd (userspace datapath, dummy devices); the LocalAgent reads the Open_vSwitch
// database (its SB side a recording fake) and reports every new view; the MTU is changed with
// ovs-vsctl set interface ... mtu_request.
import t from 'tap';
import { LocalAgent } from '../../agent/local/local-agent.js';
import { OVS_MONITOR } from '../../agent/local/ovs-rows.js';
import type { LocalView } from '../../agent/local-view.js';
import { OvsdbClient } from '../../ovsdb/client.js';
import { FakeSb } from '../helpers/fake-sb.js';
import { until } from '../helpers/ovnts-cli.js';
import { ovsSwitchInstalled, startOvsSwitch } from '../helpers/ovs-switch.js';

const skip = ovsSwitchInstalled() ? false : 'Open vSwitch is not installed';

t.test('a VIF\'s MTU as the switch reports it, in the view, as mtu_request changes it', { skip, timeout: 120_000 }, async (t) => {
  const sw = await startOvsSwitch();
  t.teardown(() => sw.stop());
  await sw.vsctl('set', 'open_vswitch', '.', 'external_ids:system-id=hv1', 'external_ids:ovn-encap-type=geneve', 'external_ids:ovn-encap-ip=127.0.0.1');
  await sw.vsctl('add-port', 'br-int', 'tap1', '--', 'set', 'interface', 'tap1', 'type=dummy', 'ofport_request=1', 'external_ids:iface-id=vm1');

  const logs: string[] = [];
  const ovs = new OvsdbClient({ target: sw.dbTarget, database: 'Open_vSwitch', tables: OVS_MONITOR });
  const agent = new LocalAgent({ ovs, sbTransact: new FakeSb().transact, hostname: 'hv1', datapathType: 'netdev', resendMs: 500, log: (l, m) => logs.push(`${l}: ${m}`) });
  t.teardown(async () => {
    await agent.stop();
    await ovs.close();
  });
  const views: LocalView[] = [];
  agent.onViewChange((v) => views.push(v));
  agent.start();

  const mtuOf = (): number | undefined => agent.view.vifMtus?.get('vm1');
  const waitMtu = async (want: number): Promise<number> => until(() => `vm1's MTU ${want} in the view (it is ${mtuOf()}; ${logs.slice(-4).join('; ')})`,
    async () => (mtuOf() === want ? want : undefined));
  t.equal(await waitMtu(1500), 1500, 'the dummy interface\'s MTU, 1500');
  t.same(agent.view.vifs.get('vm1'), 1, 'vm1 on OpenFlow port 1');

  const before = views.length;
  await sw.vsctl('set', 'Interface', 'tap1', 'mtu_request=1400');
  t.equal(await waitMtu(1400), 1400, 'mtu_request=1400: the switch reports 1400, and so does the view');
  t.ok(views.length > before && views.at(-1)?.vifMtus?.get('vm1') === 1400, 'the flow side was handed the view with the new MTU');
  t.equal((await sw.vsctl('get', 'Interface', 'tap1', 'mtu')).trim(), '1400', 'Interface.mtu is what was read');

  await sw.vsctl('set', 'Interface', 'tap1', 'mtu_request=9000');
  t.equal(await waitMtu(9000), 9000, 'mtu_request=9000: 9000');
});
