// Goal: the LocalView carries the MTU Open vSwitch reports for each VIF's interface (Interface.mtu),
// which a multichassis port's path MTU flows are computed from, and a change of it alone is a new
// view. Method: buildLocalView over hand-made Open_vSwitch rows (a replica as OvsdbClient holds
// it), and localViewsEqual on views that differ only there.
import t from 'tap';
import { buildLocalView, localViewsEqual } from '../../agent/local/local-view-builder.js';
import type { OvsBridge, OvsTables } from '../../agent/local/ovs-rows.js';
import type { Row } from '../../ovsdb/index.js';

/** br-int with a dummy VIF per entry (iface-id, ofport, Interface.mtu as the replica holds it) and a tunnel to hv2. */
function replica(vifs: readonly { id: string; ofport: number[]; mtu: number[] }[]): { tables: OvsTables; br: OvsBridge } {
  const t = new Map<string, Map<string, Row>>(['Open_vSwitch', 'Datapath', 'Bridge', 'Port', 'Interface', 'Mirror', 'SSL', 'Flow_Sample_Collector_Set'].map((n) => [n, new Map()]));
  const put = (table: string, uuid: string, row: Record<string, unknown>): void => {
    t.get(table)?.set(uuid, { _uuid: uuid, _version: '', ...row } as Row);
  };
  const ports: string[] = [];
  const addPort = (name: string, type: string, ifaceIds: Map<string, string>, portIds: Map<string, string>, ofport: number[], mtu: number[]): void => {
    put('Interface', `i-${name}`, { name, type, options: new Map(), external_ids: ifaceIds, ofport, mtu, bfd: new Map(), bfd_status: new Map() });
    put('Port', `p-${name}`, { name, interfaces: [`i-${name}`], external_ids: portIds });
    ports.push(`p-${name}`);
  };
  for (const v of vifs) addPort(`tap-${v.id}`, 'dummy', new Map([['iface-id', v.id]]), new Map(), v.ofport, v.mtu);
  // A tunnel reports an MTU too; it is no VIF.
  addPort('ovn-hv2-0', 'geneve', new Map(), new Map([['ovn-chassis-id', 'hv2@192.0.2.2']]), [9], [1500]);
  put('Bridge', 'br', { name: 'br-int', ports, mirrors: [], datapath_type: 'netdev', fail_mode: ['secure'], other_config: new Map(), external_ids: new Map() });
  return { tables: (name) => t.get(name) as Map<string, Row>, br: t.get('Bridge')?.get('br') as unknown as OvsBridge };
}

t.test('the VIFs\' MTUs, by iface-id, for the interfaces that report one', async (t) => {
  const { tables, br } = replica([
    { id: 'vm1', ofport: [1], mtu: [1500] },
    { id: 'vm2', ofport: [2], mtu: [] },
    { id: 'vm3', ofport: [], mtu: [1500] },
  ]);
  const { view } = buildLocalView('hv1', tables, br, new Map());
  t.same([...view.vifs], [['vm1', 1], ['vm2', 2]], 'vm3 has no OpenFlow port yet: no VIF');
  t.same([...(view.vifMtus ?? [])], [['vm1', 1500]], 'vm2 reports no MTU, vm3 is no VIF, the tunnel is no VIF');
  t.same([...view.tunnels.keys()], ['hv2']);
});

t.test('a view differs from one whose only change is a VIF\'s MTU', async (t) => {
  const at = (mtu: number[]) => {
    const { tables, br } = replica([{ id: 'vm1', ofport: [1], mtu }]);
    return buildLocalView('hv1', tables, br, new Map()).view;
  };
  t.ok(localViewsEqual(at([1500]), at([1500])), 'the same MTU: equal views');
  t.notOk(localViewsEqual(at([1500]), at([1400])), 'mtu_request=1400 took effect: a new view');
  t.notOk(localViewsEqual(at([1500]), at([])), 'the MTU no longer reported: a new view');
  const { vifMtus: _, ...without } = at([]);
  t.ok(localViewsEqual(without, at([])), 'no map and an empty one say the same');
});
