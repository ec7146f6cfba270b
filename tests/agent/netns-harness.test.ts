// The end-to-end harness itself: two namespace hosts on a real ovs-vswitchd (userspace datapath,
// real veth devices) ping each other through a NORMAL flow, and stop doing so once it is gone.
// If this fails, the agent's end-to-end tests cannot mean anything on this machine.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import t from 'tap';
import { createChassisHost, createUnderlay } from '../helpers/chassis-host.js';
import { createNsHost, netnsAvailable } from '../helpers/netns.js';
import { ovsSwitchInstalled, startOvsSwitch } from '../helpers/ovs-switch.js';

const execFileAsync = promisify(execFile);
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

t.test('two chassis namespaces carry a ping through Geneve over their underlay', { skip }, async (t) => {
  const ul = await createUnderlay('172.30.9');
  t.teardown(() => ul.remove());
  const hosts = [];
  for (const [i, name] of ['hv1', 'hv2'].entries()) {
    const ch = await createChassisHost(ul, { name, index: i + 1 });
    t.teardown(() => ch.stop());
    hosts.push(ch);
  }
  const vms = [];
  for (const [i, ch] of hosts.entries()) {
    const other = hosts[1 - i]!;
    await ch.ovs.vsctl('add-br', 'br-int', '--', 'set', 'bridge', 'br-int', 'datapath_type=netdev', 'fail-mode=secure', 'protocols=OpenFlow15',
      '--', 'add-port', 'br-int', 'gnv', '--', 'set', 'interface', 'gnv', 'type=geneve', `options:remote_ip=${other.encapIp}`, 'options:key=flow', 'ofport_request=10');
    const vm = await ch.addVm(`vm${i + 1}`, { mac: `0a:00:00:00:09:0${i + 1}`, cidr: `10.99.0.${i + 1}/24` });
    await ch.ovs.vsctl('set', 'Interface', vm.peer, 'ofport_request=1');
    const mgmt = ch.ovs.mgmtTarget.slice('unix:'.length).replace(/br-phy\.mgmt$/, 'br-int.mgmt');
    const ofctl = (flow: string): Promise<unknown> => execFileAsync('ovs-ofctl', ['-O', 'OpenFlow15', 'add-flow', mgmt, flow]);
    await ofctl('in_port=1,actions=set_field:5->tun_id,output:10');
    await ofctl('in_port=10,tun_id=5,actions=output:1');
    vms.push(vm);
  }
  let ok = false;
  for (let i = 0; i < 10 && !ok; i++) ok = await vms[0]!.ping('10.99.0.2', 1);
  t.ok(ok, 'vm1 reaches vm2 on the other chassis');
});
