// Goal: a virtual port is bound where its virtual_parent is bound, as ovn-controller's
// consider_virtual_lport has it: kept (up with its parent, encap of the parent's interface) while
// the parent is bound here with its interface, claimed when the SB names a parent that is here,
// released when the parent's interface goes, another chassis binds the parent or virtual_parent
// is cleared; a virtual port another chassis holds through a parent elsewhere is left alone.
// Method: table-driven cases of the pure planner, and the exact SB ops.
import t from 'tap';
import type { HaLookups } from '../../agent/ha-chassis.js';
import type * as sb from '../../ovsdb/rows/sb.js';
import type { BindingChassis, LocalIface } from '../../agent/local/binding.js';
import { decideBindings, initialBindingState } from '../../agent/local/binding.js';
import type { VirtualBindingAction } from '../../agent/local/virtual-binding.js';
import { decideVirtualBindings, virtualBindingSbOps } from '../../agent/local/virtual-binding.js';

/** No HA_Chassis_Group rows at all (the virtual ports here have none). */
const noHa: HaLookups = { haChassisGroup: () => undefined, haChassis: () => undefined, chassis: () => undefined, chassisByName: () => undefined };

const CH_A = 'aaaaaaaa-0000-0000-0000-000000000001';
const CH_B = 'bbbbbbbb-0000-0000-0000-000000000002';
const VIP = 'cccccccc-0000-0000-0000-000000000003';
const VM1 = 'cccccccc-0000-0000-0000-000000000004';
const VM2 = 'cccccccc-0000-0000-0000-000000000005';

function pb(uuid: string, name: string, over: Partial<Record<keyof sb.Port_Binding, unknown>> = {}): sb.Port_Binding {
  return {
    _uuid: uuid, _version: '', logical_port: name, type: '', gateway_chassis: [], ha_chassis_group: [], options: new Map(), datapath: 'dp', tunnel_key: 1,
    parent_port: [], tag: [], virtual_parent: [], chassis: [], additional_chassis: [], encap: [], additional_encap: [], mirror_rules: [], mac: [],
    port_security: [], nat_addresses: [], up: [false], external_ids: new Map(), requested_chassis: [], requested_additional_chassis: [],
    ...over,
  } as sb.Port_Binding;
}

const chassisA: BindingChassis = { name: 'hv-a', hostname: 'host-a', uuid: CH_A, encapByIp: new Map([['10.0.0.1', 'e-a']]) };
const iface = (name: string, over: Partial<LocalIface> = {}): LocalIface => ({ ifaceUuid: `if-${name}`, name: `tap-${name}`, ofport: 5, ovnInstalled: true, ...over });
const vip = (over: Partial<Record<keyof sb.Port_Binding, unknown>> = {}): sb.Port_Binding => pb(VIP, 'vip', { type: 'virtual', ...over });
const vm1Here = pb(VM1, 'vm1', { chassis: [CH_A], up: [true] });
const vm2Elsewhere = pb(VM2, 'vm2', { chassis: [CH_B], up: [true] });
const localIfaces = new Map([['vm1', iface('vm1')]]);

function decide(ports: sb.Port_Binding[], ifaces: ReadonlyMap<string, LocalIface> = localIfaces, inflight: ReadonlySet<string> = new Set(), chassis = chassisA): VirtualBindingAction[] {
  return decideVirtualBindings({ chassis, ifaces, portBindings: ports, inflight });
}

t.test('claimed here through a parent that is here: kept, up with the parent', async (t) => {
  t.same(decide([vip({ chassis: [CH_A], virtual_parent: ['vm1'] }), vm1Here]), [{ kind: 'set-up', port: 'vip', pbUuid: VIP }], 'pinctrl claimed it (up false): up follows the parent');
  t.same(decide([vip({ chassis: [CH_A], virtual_parent: ['vm1'], up: [true] }), vm1Here]), [], 'up already: nothing to do');
  t.same(decide([vip({ chassis: [CH_A], virtual_parent: ['vm1'] }), pb(VM1, 'vm1', { chassis: [CH_A], up: [false] })]), [], 'the parent not up yet: neither is the VIP');
  t.same(decide([vip({ chassis: [CH_A], virtual_parent: ['vm1'], up: [true] }), vm1Here], new Map([['vm1', iface('vm1', { encapIp: '10.0.0.1' })]])),
    [{ kind: 'set-encap', port: 'vip', pbUuid: VIP, encap: 'e-a' }], 'the encap of the parent\'s interface');
});

t.test('released when the parent goes, moves to another chassis, or is no longer named', async (t) => {
  const release = [{ kind: 'release', port: 'vip', pbUuid: VIP }];
  t.same(decide([vip({ chassis: [CH_A], virtual_parent: ['vm1'], up: [true] }), vm1Here], new Map()), release, 'the parent\'s interface is gone');
  t.same(decide([vip({ chassis: [CH_A], virtual_parent: ['vm1'], up: [true] }), pb(VM1, 'vm1', { chassis: [CH_B] })]), release, 'another chassis bound the parent');
  t.same(decide([vip({ chassis: [CH_A], virtual_parent: [] }), vm1Here]), release, 'virtual_parent cleared');
  t.same(decide([vip({ chassis: [CH_A], virtual_parent: ['ghost'] }), vm1Here]), release, 'a parent the SB does not have');
  t.same(decide([vip({ chassis: [CH_A], virtual_parent: ['vm2'] }), vm1Here, vm2Elsewhere]), release, 'a parent bound elsewhere');
});

t.test('claimed when the SB names a parent that is here; left alone when held elsewhere through a parent elsewhere', async (t) => {
  t.same(decide([vip({ virtual_parent: ['vm1'] }), vm1Here]), [{ kind: 'claim', port: 'vip', pbUuid: VIP, parent: 'vm1', encap: undefined, up: true }], 'unbound, parent here');
  t.same(decide([vip({ chassis: [CH_B], virtual_parent: ['vm1'] }), vm1Here]), [{ kind: 'claim', port: 'vip', pbUuid: VIP, parent: 'vm1', encap: undefined, up: true }], 'the other chassis\'s claim is stale: the parent is here');
  t.same(decide([vip({ chassis: [CH_B], virtual_parent: ['vm2'], up: [true] }), vm1Here, vm2Elsewhere], new Map([['vm1', iface('vm1')], ['vm2', iface('vm2')]])), [],
    'held by the chassis of its parent (even with an interface of that name here)');
  t.same(decide([vip(), vm1Here]), [], 'unclaimed and no parent: pinctrl claims it on a GARP');
});

t.test('in flight, no chassis yet, and the VIF planner leaves virtual ports alone', async (t) => {
  const claimed = vip({ chassis: [CH_A], virtual_parent: ['vm1'] });
  t.same(decide([claimed, vm1Here], localIfaces, new Set(['vip'])), [], 'the virtual port has a write in flight');
  t.same(decide([claimed, vm1Here], localIfaces, new Set(['vm1'])), [], 'its parent has one');
  t.same(decide([claimed, vm1Here], localIfaces, new Set(), { ...chassisA, uuid: undefined }), [], 'before the Chassis row exists');
  const vifPlan = decideBindings(initialBindingState(), { chassis: chassisA, ifaces: new Map([['vip', iface('vip')]]), portBindings: [vip()], inflight: new Set(), ha: noHa });
  t.same(vifPlan.actions, [], 'an interface named after a virtual port does not make binding.ts claim it');
});

t.test('the SB ops: a claim conditional on virtual_parent, the others on being bound here', async (t) => {
  const ops = virtualBindingSbOps([
    { kind: 'claim', port: 'vip', pbUuid: VIP, parent: 'vm1', encap: 'e-a', up: true },
    { kind: 'set-up', port: 'vip', pbUuid: VIP },
    { kind: 'set-encap', port: 'vip', pbUuid: VIP, encap: undefined },
    { kind: 'release', port: 'vip', pbUuid: VIP },
  ], CH_A);
  const here = [['_uuid', '==', ['uuid', VIP]], ['chassis', '==', ['uuid', CH_A]]];
  t.same(ops, [
    { port: 'vip', op: { op: 'update', table: 'Port_Binding', where: [['_uuid', '==', ['uuid', VIP]], ['virtual_parent', '==', 'vm1']], row: { chassis: ['uuid', CH_A], up: true, encap: ['set', [['uuid', 'e-a']]] } } },
    { port: 'vip', op: { op: 'update', table: 'Port_Binding', where: here, row: { up: true } } },
    { port: 'vip', op: { op: 'update', table: 'Port_Binding', where: here, row: { encap: ['set', []] } } },
    { port: 'vip', op: { op: 'update', table: 'Port_Binding', where: here, row: { chassis: ['set', []], up: false, encap: ['set', []], virtual_parent: ['set', []] } } },
  ]);
});
