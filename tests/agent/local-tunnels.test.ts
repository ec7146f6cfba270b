// Tunnel and localnet patch ports as the agent keeps them on a real Open vSwitch: a Geneve port
// to every other chassis (named, optioned and marked as ovn-controller does) that goes when the
// chassis leaves, and patch-port pairs to the physical bridges of ovn-bridge-mappings for the
// localnet ports of local datapaths, following the mappings. Method: two chassis (two Open
// vSwitch instances, two agents) on one ovnts central; OVS state read with ovs-vsctl.
import t from 'tap';
import { ovsSwitchInstalled } from '../helpers/ovs-switch.js';
import type { Chassis } from './local-harness.js';
import { eventually, mapOf, startCentral, startChassis, uuids, vsctlFind } from './local-harness.js';

const skip = ovsSwitchInstalled() ? false : 'Open vSwitch is not installed';

async function portNamed(hv: Chassis, name: string): Promise<Record<string, unknown> | undefined> {
  return (await vsctlFind(hv.sw, 'port', `name=${name}`))[0];
}

async function brIntPorts(hv: Chassis): Promise<string[]> {
  const [br] = await vsctlFind(hv.sw, 'bridge', 'name=br-int');
  if (br === undefined) return [];
  const ports = await vsctlFind(hv.sw, 'port');
  const mine = new Set(uuids(br.ports));
  return ports.filter((p) => mine.has(uuids(p._uuid)[0] as string)).map((p) => p.name as string).sort();
}

t.test('a Geneve tunnel port to each other chassis, gone when the chassis leaves', { skip }, async (t) => {
  const central = await startCentral(t);
  const hv1 = await startChassis(t, central, { name: 'hv1', encapIp: '192.0.2.1' });
  const hv2 = await startChassis(t, central, { name: 'hypervisor-2', encapIp: '192.0.2.2', extraIds: ['external_ids:ovn-encap-csum=false'] });
  const port = await eventually('hv1 has a tunnel to hypervisor-2', async () => portNamed(hv1, 'ovn-hyperv-0'), [hv1, hv2]);
  t.same(mapOf(port.external_ids), new Map([['ovn-chassis-id', 'hypervisor-2@192.0.2.2']]), 'named ovn-<6 chars>-0, ovn-chassis-id=<chassis>@<ip>');
  // With the agent stream, hypervisor-2 may first be registered from its Hello (an Encap with
  // no options) and then by its agent (csum=false): the tunnel follows, in place.
  const iface = await eventually('the tunnel carries the remote csum', async () => {
    const [i] = await vsctlFind(hv1.sw, 'interface', 'name=ovn-hyperv-0');
    return mapOf(i?.options).has('csum') ? i : undefined;
  }, [hv1, hv2]);
  t.equal(iface?.type, 'geneve');
  t.same(mapOf(iface?.options), new Map([['csum', 'false'], ['key', 'flow'], ['remote_ip', '192.0.2.2']]), 'key=flow, remote_ip and the remote Encap\'s csum');
  const back = await eventually('and hypervisor-2 one to hv1', async () => portNamed(hv2, 'ovn-hv1-0'), [hv2]);
  t.same(mapOf(back.external_ids), new Map([['ovn-chassis-id', 'hv1@192.0.2.1']]));
  const tunnel = await eventually('the LocalView has the tunnel with its OpenFlow port', async () => hv1.runtime.local.view.tunnels.get('hypervisor-2'), [hv1]);
  t.match(tunnel, { type: 'geneve', remoteIp: '192.0.2.2' });
  t.ok(tunnel.ofport > 0);

  // The tunnel's identity is <chassis>@<ip>: a new IP is a new tunnel, and the old one goes.
  await hv2.sw.vsctl('set', 'open_vswitch', '.', 'external_ids:ovn-encap-ip=192.0.2.22');
  const moved = await eventually('a tunnel to the new IP, and none to the old', async () => {
    const ports = await vsctlFind(hv1.sw, 'port');
    const ids = ports.map((p) => mapOf(p.external_ids).get('ovn-chassis-id')).filter((x) => x !== undefined);
    return ids.length === 1 && ids[0] === 'hypervisor-2@192.0.2.22' ? ports.find((p) => mapOf(p.external_ids).has('ovn-chassis-id')) : undefined;
  }, [hv1, hv2]);
  t.match(moved?.name, /^ovn-hyperv-[0-9a-f]+$/, `the new tunnel port is ${String(moved?.name)}`);

  await hv2.stop(true);
  await eventually('the tunnel goes with the chassis', async () => ((await brIntPorts(hv1)).length === 1 ? true : undefined), [hv1]);
  t.same(await brIntPorts(hv1), ['br-int'], 'nothing but br-int is left on hv1\'s integration bridge');
  t.same(await brIntPorts(hv2), ['br-int'], 'and --cleanup removed hypervisor-2\'s own tunnel ports');
  t.notOk(hv1.runtime.local.view.tunnels.has('hypervisor-2'), 'and the LocalView forgot it');
});

t.test('localnet patch ports follow ovn-bridge-mappings', { skip }, async (t) => {
  const central = await startCentral(t);
  for (const w of [['ls-add', 'pub'], ['lsp-add', 'pub', 'ln-pub'], ['lsp-set-type', 'ln-pub', 'localnet'], ['lsp-set-options', 'ln-pub', 'network_name=physnet1'],
    ['lsp-add', 'pub', 'vmp'], ['ls-add', 'other'], ['lsp-add', 'other', 'ln-other'], ['lsp-set-type', 'ln-other', 'localnet'], ['lsp-set-options', 'ln-other', 'network_name=physnet1']]) {
    await central.nbctl(...w);
  }
  const hv1 = await startChassis(t, central, { name: 'hv1', encapIp: '192.0.2.1', extraIds: ['external_ids:ovn-bridge-mappings=physnet1:br-phys'] });
  await hv1.sw.vsctl('add-br', 'br-phys', '--', 'set', 'bridge', 'br-phys', 'datapath_type=netdev');
  await eventually('br-int', async () => ((await vsctlFind(hv1.sw, 'bridge', 'name=br-int')).length === 1 ? true : undefined), [hv1]);
  await eventually('registered', async () => ((await central.sb('Chassis')).length === 1 ? true : undefined), [hv1]);
  await hv1.runtime.local.whenIdle();
  t.equal(await portNamed(hv1, 'patch-br-int-to-ln-pub'), undefined, 'no patch port while no port of the datapath is bound here');

  await hv1.sw.vsctl('add-port', 'br-int', 'tap-vmp', '--', 'set', 'interface', 'tap-vmp', 'type=dummy', 'external_ids:iface-id=vmp');
  const p1 = await eventually('patch port on br-int', async () => portNamed(hv1, 'patch-br-int-to-ln-pub'), [hv1]);
  const p2 = await eventually('and its peer on br-phys', async () => portNamed(hv1, 'patch-ln-pub-to-br-int'), [hv1]);
  t.same(mapOf(p1.external_ids), new Map([['ovn-localnet-port', 'ln-pub']]));
  t.same(mapOf(p2.external_ids), new Map([['ovn-localnet-port', 'ln-pub']]));
  const [i1] = await vsctlFind(hv1.sw, 'interface', 'name=patch-br-int-to-ln-pub');
  const [i2] = await vsctlFind(hv1.sw, 'interface', 'name=patch-ln-pub-to-br-int');
  t.equal(i1?.type, 'patch');
  t.same(mapOf(i1?.options), new Map([['peer', 'patch-ln-pub-to-br-int']]), 'each names the other as peer');
  t.same(mapOf(i2?.options), new Map([['peer', 'patch-br-int-to-ln-pub']]));
  const [phys] = await vsctlFind(hv1.sw, 'bridge', 'name=br-phys');
  t.ok(uuids(phys?.ports).includes(uuids(p2._uuid)[0] as string), 'the peer sits on the mapped bridge');
  t.equal(await portNamed(hv1, 'patch-br-int-to-ln-other'), undefined, 'a localnet port of a datapath not local here gets none');
  const ofport = await eventually('the LocalView has physnet1', async () => hv1.runtime.local.view.localnetPatches.get('physnet1'), [hv1]);
  t.ok(ofport > 0);

  await hv1.sw.vsctl('set', 'open_vswitch', '.', 'external_ids:ovn-bridge-mappings=physnet2:br-phys');
  await eventually('patch ports removed when the mapping goes', async () => ((await portNamed(hv1, 'patch-br-int-to-ln-pub')) === undefined && (await portNamed(hv1, 'patch-ln-pub-to-br-int')) === undefined ? true : undefined), [hv1]);
  t.pass('both patch ports are removed when physnet1 is no longer mapped');
  t.notOk(hv1.runtime.local.view.localnetPatches.has('physnet1'));

  await hv1.sw.vsctl('set', 'open_vswitch', '.', 'external_ids:ovn-bridge-mappings=physnet1:br-phys');
  await eventually('and back', async () => portNamed(hv1, 'patch-br-int-to-ln-pub'), [hv1]);
  await hv1.sw.vsctl('del-port', 'br-int', 'tap-vmp');
  await eventually('gone when the datapath is no longer local', async () => ((await portNamed(hv1, 'patch-br-int-to-ln-pub')) === undefined ? true : undefined), [hv1]);
  t.pass('patch ports come back with the mapping, and go when no port of the datapath is bound here');
});
