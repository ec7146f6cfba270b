// The end-to-end harness itself: two namespace hosts on a real ovs-vswitchd (userspace datapath,
// real veth devices) ping each other through a NORMAL flow, and stop doing so once it is gone.
// If this fails, the agent's end-to-end tests cannot mean anything on this machine.
import t from 'tap';
import { createNsHost, netnsAvailable } from '../helpers/netns.js';
import { ovsSwitchInstalled, startOvsSwitch } from '../helpers/ovs-switch.js';

const skip = !ovsSwitchInstalled() ? 'Open vSwitch is not installed' : !netnsAvailable() ? 'needs root and iproute2 for network namespaces' : false;

t.test('two namespaces ping through a netdev bridge', { skip }, async (t) => {
  const sw = await startOvsSwitch({ realDevices: true });
  t.teardown(() => sw.stop());
  const a = await createNsHost({ mac: '0a:00:00:00:00:01', cidr: '10.77.0.1/24' });
  t.teardown(() => a.remove());
  const b = await createNsHost({ mac: '0a:00:00:00:00:02', cidr: '10.77.0.2/24' });
  t.teardown(() => b.remove());
  await sw.vsctl('add-port', sw.bridge, a.peer, '--', 'add-port', sw.bridge, b.peer);
  t.notOk(await a.ping('10.77.0.2', 1), 'a secure bridge with no flows drops everything');
  await sw.ofctl('add-flow', 'priority=0,actions=NORMAL');
  let ok = false;
  for (let i = 0; i < 10 && !ok; i++) ok = await a.ping('10.77.0.2', 1);
  t.ok(ok, 'ping crosses the bridge');
  t.ok(await b.ping('10.77.0.1'), 'and back');
  await sw.ofctl('del-flows');
  t.notOk(await a.ping('10.77.0.2', 1), 'no flow, no ping');
});
