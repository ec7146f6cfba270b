// The agent's chassis life cycle against a real ovs-vswitchd and an ovnts central: it creates
// the integration bridge, registers Chassis, Encap and Chassis_Private as ovn-controller does,
// follows changes of the Open_vSwitch external_ids, and with --cleanup removes what it
// registered. Method: startChassis (real OVS, AgentRuntime, Watch source) and the central's SB
// view read back through the Northbound List.
import t from 'tap';
import { ovsSwitchInstalled } from '../helpers/ovs-switch.js';
import { eventually, mapOf, startCentral, startChassis, uuids, vsctlFind } from './local-harness.js';

const skip = ovsSwitchInstalled() ? false : 'Open vSwitch is not installed';

t.test('registration, updates and cleanup of one chassis', { skip }, async (t) => {
  const central = await startCentral(t);
  const hv = await startChassis(t, central, { name: 'hv1', encapIp: '192.0.2.1', extraIds: ['external_ids:ovn-bridge-mappings=physnet1:br-phys'] });

  const [br] = await eventually('br-int is created', async () => {
    const rows = await vsctlFind(hv.sw, 'bridge', 'name=br-int');
    return rows.length === 1 ? rows : undefined;
  }, [hv]);
  t.equal(br?.fail_mode, 'secure', 'br-int has fail_mode secure');
  t.equal(br?.datapath_type, 'netdev', 'and the datapath type asked for');
  const other = mapOf(br?.other_config);
  t.equal(other.get('disable-in-band'), 'true');
  t.match(other.get('hwaddr'), /^[0-9a-f][26ae](:[0-9a-f]{2}){5}$/, 'and a fixed, locally administered hwaddr');
  const roots = await vsctlFind(hv.sw, 'open_vswitch');
  t.ok(uuids(roots[0]?.bridges).includes(uuids(br?._uuid)[0] as string), 'listed in Open_vSwitch.bridges');

  // The agent stream's Hello may register a bare Chassis first; wait for the agent's own record
  // (other_config, and an Encap with options:csum).
  const chassis = await eventually('Chassis hv1 as the agent keeps it', async () => {
    const c = (await central.sb('Chassis')).find((r) => r.name === 'hv1');
    const e = await central.sb('Encap');
    return mapOf(c?.other_config).has('port-up-notif') && e.length === 1 && mapOf(e[0]?.options).has('csum') ? c : undefined;
  }, [hv]);
  t.equal(chassis.hostname, 'hv1.example', 'hostname from external_ids:hostname');
  const oc = mapOf(chassis.other_config);
  t.equal(oc.get('ovn-bridge-mappings'), 'physnet1:br-phys');
  t.equal(oc.get('datapath-type'), 'netdev');
  t.equal(oc.get('is-interconn'), 'false');
  t.equal(oc.get('port-up-notif'), 'true', 'it announces that it sets Port_Binding.up');
  t.ok((oc.get('iface-types') ?? '').split(',').includes('geneve'), 'iface-types from Open_vSwitch.iface_types');
  const encaps = await central.sb('Encap');
  t.equal(encaps.length, 1);
  t.match(encaps[0], { type: 'geneve', ip: '192.0.2.1', chassis_name: 'hv1' });
  t.same(mapOf(encaps[0]?.options), new Map([['csum', 'true']]));
  t.same(uuids(chassis.encaps), uuids(encaps[0]?._uuid), 'Chassis.encaps names it');
  const priv = await eventually('Chassis_Private hv1', async () => (await central.sb('Chassis_Private')).find((r) => r.name === 'hv1'));
  t.same(uuids(priv.chassis), uuids(chassis._uuid), 'Chassis_Private points at the Chassis');

  await hv.sw.vsctl('set', 'open_vswitch', '.', 'external_ids:ovn-encap-ip=192.0.2.99', 'external_ids:ovn-encap-csum=false');
  const moved = await eventually('Encap follows ovn-encap-ip', async () => {
    const e = await central.sb('Encap');
    return e.length === 1 && e[0]?.ip === '192.0.2.99' ? e : undefined;
  }, [hv]);
  t.same(mapOf(moved[0]?.options), new Map([['csum', 'false']]), 'and ovn-encap-csum');
  const after = (await central.sb('Chassis')).find((r) => r.name === 'hv1');
  t.same(uuids(after?._uuid), uuids(chassis._uuid), 'the Chassis row is updated in place');
  t.same(uuids(after?.encaps), uuids(moved[0]?._uuid), 'and names the new Encap; the old one is gone');

  await hv.sw.vsctl('set', 'open_vswitch', '.', 'external_ids:ovn-bridge-mappings=physnet2:br-ex', 'external_ids:hostname=renamed');
  await eventually('other_config and hostname follow', async () => {
    const c = (await central.sb('Chassis')).find((r) => r.name === 'hv1');
    return mapOf(c?.other_config).get('ovn-bridge-mappings') === 'physnet2:br-ex' && c?.hostname === 'renamed' ? true : undefined;
  }, [hv]);
  t.pass('ovn-bridge-mappings and hostname changes reach the Chassis row');

  await hv.sw.vsctl('set', 'open_vswitch', '.', 'external_ids:ovn-encap-type=geneve,vxlan');
  const two = await eventually('one Encap per type', async () => {
    const e = await central.sb('Encap');
    return e.length === 2 ? e : undefined;
  }, [hv]);
  t.same(two.map((e) => e.type).sort(), ['geneve', 'vxlan']);

  await hv.stop(true);
  t.same(await central.sb('Chassis'), [], '--cleanup deletes the Chassis');
  t.same(await central.sb('Encap'), [], 'its Encaps');
  t.same(await central.sb('Chassis_Private'), [], 'and its Chassis_Private');
});

t.test('an agent whose configuration lacks ovn-encap-ip waits, and registers once it is set', { skip }, async (t) => {
  const central = await startCentral(t);
  const hv = await startChassis(t, central, { name: 'hv-late', encapIp: '192.0.2.5' });
  await eventually('registered', async () => ((await central.sb('Chassis')).length === 1 ? true : undefined), [hv]);
  // Another switch whose row lacks the encapsulation: nothing is registered until it is set.
  const late = await startChassis(t, central, { name: 'hv-2', encapIp: '192.0.2.6', extraIds: ['--', 'remove', 'open_vswitch', '.', 'external_ids', 'ovn-encap-ip'] });
  await eventually('it says why it waits', async () => (late.logs.some((l) => l.includes('ovn-encap-ip')) ? true : undefined), [late]);
  t.same((await central.sb('Chassis')).map((r) => r.name), ['hv-late'], 'no Chassis for the incomplete configuration');
  await late.sw.vsctl('set', 'open_vswitch', '.', 'external_ids:ovn-encap-ip=192.0.2.6');
  await eventually('registered once configured', async () => ((await central.sb('Chassis')).length === 2 ? true : undefined), [late]);
  t.pass('hv-2 registers once ovn-encap-ip is set');
});
