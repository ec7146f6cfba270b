// Table-driven: NB rows in (through ovsdb transact) → SB rows out, for each projection of this
// part: Datapath_Binding, Port_Binding, Multicast_Group, SB_Global and the switch flows. The
// expectations restate ovn-northd 23.03's behaviour (checked against the real one).
import t from 'tap';
import type { Row } from '../../ovsdb/index.js';
import type * as sb from '../../ovsdb/rows/sb.js';
import { Ipam, createNorthd, flowDatapaths, hashUuid } from '../../northd/index.js';
import { contentVersion } from '../../northd/sb-changes.js';
import { EMPTY_SET_SUM, setSumWith, setVersion, textWords } from '../../northd/hash.js';
import { multicastGroupUuid } from '../../northd/multicast.js';
import { lflowUuid, shardOfKey } from '../../northd/lflows/flow.js';
import type { SbView } from '../../northd/index.js';
import { LR_EGRESS_STAGES, LR_INGRESS_STAGES, LS_EGRESS_STAGES, LS_INGRESS_STAGES } from '../../northd/stages.js';
import { addLrp, addLsp, byUuid, map, nbFixture, set, uuidAtom, viewDifference } from './nb-fixture.js';

function rows<T>(view: SbView, table: string): T[] {
  return [...(view.get(table)?.values() ?? [])] as unknown as T[];
}

function build(): { view: SbView; fx: ReturnType<typeof nbFixture>; northd: ReturnType<typeof createNorthd> } {
  const fx = nbFixture();
  const northd = createNorthd();
  const steps: unknown[][] = [
    [{ op: 'insert', table: 'NB_Global', row: { nb_cfg: 5 } }],
    [{ op: 'insert', table: 'Logical_Switch', row: { name: 'sw0' } }],
    [{ op: 'insert', table: 'Logical_Switch', row: { name: 'sw1' } }],
    [{ op: 'insert', table: 'Logical_Router', row: { name: 'lr0' } }],
    addLsp('sw0', 'p1', { addresses: set(['00:00:00:00:00:01 10.0.0.1']) }),
    addLsp('sw0', 'p2', { addresses: set(['00:00:00:00:00:02 10.0.0.2']), port_security: set(['00:00:00:00:00:02 10.0.0.2']) }),
    addLsp('sw0', 'p3', { addresses: set(['unknown']), options: map({ 'iface-id-ver': 'v7' }) }),
    addLrp('lr0', 'lrp0', '00:00:00:00:ff:01', ['10.0.0.254/24']),
    addLsp('sw0', 'sw0-lr0', { type: 'router', addresses: set(['router']), options: map({ 'router-port': 'lrp0' }) }),
    addLsp('sw1', 'q1', { addresses: set(['00:00:00:00:01:01 20.0.0.1']) }),
    addLsp('sw1', 'ln1', { type: 'localnet', addresses: set(['unknown']), options: map({ network_name: 'phys' }) }),
    addLsp('sw1', 'c1', { addresses: set(['00:00:00:00:01:07']), parent_name: 'q1', tag_request: 7 }),
    addLsp('sw1', 'ext', { type: 'external', addresses: set(['00:00:00:00:01:08', 'unknown']) }),
    addLsp('sw1', 'off', { addresses: set(['0:0:0:0:1:9']), enabled: false }),
  ];
  for (const ops of steps) northd.apply(fx.db, fx.run(ops));
  return { view: northd.view(), fx, northd };
}

t.test('stage catalog: 27/10 switch and 22/7 router stages of 23.03', async (t) => {
  t.equal(LS_INGRESS_STAGES.length, 27);
  t.equal(LS_EGRESS_STAGES.length, 10);
  t.equal(LR_INGRESS_STAGES.length, 22);
  t.equal(LR_EGRESS_STAGES.length, 7);
  t.same([LS_INGRESS_STAGES[25]?.name, LS_INGRESS_STAGES[25]?.table], ['ls_in_l2_lkup', 25]);
  t.same([LR_EGRESS_STAGES[6]?.name, LR_EGRESS_STAGES[6]?.table], ['lr_out_delivery', 6]);
});

t.test('Datapath_Binding and SB_Global', async (t) => {
  const { view } = build();
  const dps = rows<sb.Datapath_Binding>(view, 'Datapath_Binding')
    .map((d) => ({ key: d.tunnel_key, ids: Object.fromEntries(d.external_ids) }))
    .sort((a, b) => a.key - b.key);
  t.same(dps, [
    { key: 1, ids: { 'logical-switch': '00000000-0000-4000-8000-000000000003', name: 'sw0' } },
    { key: 2, ids: { 'logical-switch': '00000000-0000-4000-8000-000000000005', name: 'sw1' } },
    { key: 3, ids: { 'logical-router': '00000000-0000-4000-8000-000000000007', name: 'lr0' } },
  ]);
  t.same(rows<sb.SB_Global>(view, 'SB_Global').map((g) => g.nb_cfg), [5]);
  t.same(rows<sb.SB_Global>(view, 'SB_Global').map((g) => g.ipsec), [false]);
});

t.test('SB_Global.ipsec follows NB_Global.ipsec, as ovn-northd copies it', async (t) => {
  const { fx, northd } = build();
  northd.apply(fx.db, fx.run([{ op: 'update', table: 'NB_Global', where: [], row: { ipsec: true } }]));
  t.same(rows<sb.SB_Global>(northd.view(), 'SB_Global').map((g) => g.ipsec), [true]);
  northd.apply(fx.db, fx.run([{ op: 'update', table: 'NB_Global', where: [], row: { ipsec: false } }]));
  t.same(rows<sb.SB_Global>(northd.view(), 'SB_Global').map((g) => g.ipsec), [false]);
});

t.test('SB_Global options: NB_Global\'s, with the MAC prefix dynamic addresses use, max_tunid and northd_internal_version', async (t) => {
  const { fx, northd } = build();
  const options = (): Record<string, string> => Object.fromEntries((rows<sb.SB_Global>(northd.view(), 'SB_Global')[0] as sb.SB_Global).options);
  const o = options();
  t.match(o, { max_tunid: '16711680', northd_internal_version: '23.03.1-20.27.0-70.6', svc_monitor_mac: /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/ });
  t.match(o['mac_prefix'], /^[0-9a-f]{2}:[0-9a-f]{2}:[0-9a-f]{2}$/);
  // A port's dynamic MAC starts with the prefix written there.
  northd.apply(fx.db, fx.run([{ op: 'update', table: 'Logical_Switch', where: [['name', '==', 'sw0']], row: { other_config: map({ mac_only: 'true' }) } }]));
  northd.apply(fx.db, fx.run(addLsp('sw0', 'dyn', { addresses: set(['dynamic']) })));
  const macs = new Ipam().recompute(fx.db).map((w) => w.dynamicAddresses?.slice(0, 8));
  t.same(macs, [o['mac_prefix']], 'the prefix of the MACs IPAM gives');
  // NB's own prefix (any case, single digits) is written as ovn-northd formats it; other options are copied.
  northd.apply(fx.db, fx.run([{ op: 'update', table: 'NB_Global', where: [], row: { options: map({ mac_prefix: '0A:b:c', foo: 'bar' }) } }]));
  t.match(options(), { mac_prefix: '0a:0b:0c', foo: 'bar', max_tunid: '16711680' });
});

t.test('Port_Binding', async (t) => {
  const { view } = build();
  const dpName = new Map(rows<sb.Datapath_Binding>(view, 'Datapath_Binding').map((d) => [d._uuid, d.external_ids.get('name')]));
  const pbs = Object.fromEntries(rows<sb.Port_Binding>(view, 'Port_Binding').map((p) => [p.logical_port, {
    dp: dpName.get(p.datapath), type: p.type, key: p.tunnel_key, options: Object.fromEntries(p.options), mac: p.mac,
    ps: p.port_security, parent: p.parent_port, tag: p.tag, up: p.up, chassis: p.chassis,
  }]));
  const base = { ps: [], parent: [], tag: [], up: [false], chassis: [] };
  t.same(pbs, {
    p1: { ...base, dp: 'sw0', type: '', key: 1, options: {}, mac: ['00:00:00:00:00:01 10.0.0.1'] },
    p2: { ...base, dp: 'sw0', type: '', key: 2, options: {}, mac: ['00:00:00:00:00:02 10.0.0.2'], ps: ['00:00:00:00:00:02 10.0.0.2'] },
    // A VIF's options are copied, options:iface-id-ver among them (the agent binds by it).
    p3: { ...base, dp: 'sw0', type: '', key: 3, options: { 'iface-id-ver': 'v7' }, mac: ['unknown'] },
    'sw0-lr0': { ...base, dp: 'sw0', type: 'patch', key: 4, options: { peer: 'lrp0' }, mac: ['router'] },
    lrp0: { ...base, dp: 'lr0', type: 'patch', key: 1, options: { peer: 'sw0-lr0' }, mac: ['00:00:00:00:ff:01 10.0.0.254/24'] },
    q1: { ...base, dp: 'sw1', type: '', key: 1, options: {}, mac: ['00:00:00:00:01:01 20.0.0.1'] },
    ln1: { ...base, dp: 'sw1', type: 'localnet', key: 2, options: { network_name: 'phys' }, mac: ['unknown'] },
    c1: { ...base, dp: 'sw1', type: '', key: 3, options: {}, mac: ['00:00:00:00:01:07'], parent: ['q1'], tag: [7] },
    ext: { ...base, dp: 'sw1', type: 'external', key: 4, options: {}, mac: ['00:00:00:00:01:08', 'unknown'] },
    off: { ...base, dp: 'sw1', type: '', key: 5, options: {}, mac: ['0:0:0:0:1:9'] },
  });
});

t.test('Multicast_Group', async (t) => {
  const { view } = build();
  const name = new Map<string, string>();
  for (const p of rows<sb.Port_Binding>(view, 'Port_Binding')) name.set(p._uuid, p.logical_port);
  for (const d of rows<sb.Datapath_Binding>(view, 'Datapath_Binding')) name.set(d._uuid, d.external_ids.get('name') ?? '');
  const groups = rows<sb.Multicast_Group>(view, 'Multicast_Group')
    .map((g) => `${name.get(g.datapath) ?? ''} ${g.name} ${g.tunnel_key}: ${g.ports.map((p) => name.get(p)).sort().join(',')}`)
    .sort();
  t.same(groups, [
    'sw0 _MC_flood 32768: p1,p2,p3,sw0-lr0',
    'sw0 _MC_flood_l2 32772: p1,p2,p3',
    'sw0 _MC_unknown 32769: p3',
    'sw1 _MC_flood 32768: c1,ext,ln1,q1',
    'sw1 _MC_flood_l2 32772: c1,ext,ln1,q1',
    'sw1 _MC_unknown 32769: ln1',
  ], 'disabled ports are in no group; external ports not in _MC_unknown; router ports not in _MC_flood_l2');
});

t.test('switch flows', async (t) => {
  const { view } = build();
  const dpName = new Map(rows<sb.Datapath_Binding>(view, 'Datapath_Binding').map((d) => [d._uuid, d.external_ids.get('name')]));
  const flows = rows<sb.Logical_Flow>(view, 'Logical_Flow');
  const text = (f: sb.Logical_Flow, dp: string): string => `${dpName.get(dp) ?? ''} ${f.pipeline} ${f.table_id} ${f.external_ids.get('stage-name') ?? ''} ${f.priority} (${f.match}) (${f.actions})`;
  const all = new Set(flows.flatMap((f) => flowDatapaths(view, f).map((dp) => text(f, dp))));
  for (const expected of [
    'sw0 ingress 0 ls_in_check_port_sec 100 (vlan.present) (drop;)',
    'sw0 ingress 0 ls_in_check_port_sec 100 (eth.src[40]) (drop;)',
    'sw0 ingress 0 ls_in_check_port_sec 50 (1) (reg0[15] = check_in_port_sec(); next;)',
    'sw0 ingress 1 ls_in_apply_port_sec 50 (reg0[15] == 1) (drop;)',
    'sw0 ingress 2 ls_in_lookup_fdb 100 (inport == "p3") (reg0[11] = lookup_fdb(inport, eth.src); next;)',
    'sw0 ingress 3 ls_in_put_fdb 100 (inport == "p3" && reg0[11] == 0) (put_fdb(inport, eth.src); next;)',
    'sw0 ingress 25 ls_in_l2_lkup 70 (eth.mcast) (outport = "_MC_flood"; output;)',
    'sw0 ingress 25 ls_in_l2_lkup 50 (eth.dst == 00:00:00:00:00:01) (outport = "p1"; output;)',
    'sw0 ingress 25 ls_in_l2_lkup 0 (1) (outport = get_fdb(eth.dst); next;)',
    'sw0 ingress 26 ls_in_l2_unknown 50 (outport == "none") (outport = "_MC_unknown"; output;)',
    'sw0 ingress 25 ls_in_l2_lkup 50 (eth.dst == 00:00:00:00:ff:01) (outport = "sw0-lr0"; output;)',
    'sw0 egress 9 ls_out_apply_port_sec 0 (1) (output;)',
    'sw1 ingress 0 ls_in_check_port_sec 100 (inport == "off") (reg0[15] = 1; next;)',
    'sw1 ingress 26 ls_in_l2_unknown 50 (outport == "off") (drop;)',
    'sw1 ingress 25 ls_in_l2_lkup 50 (eth.dst == 00:00:00:00:01:09) (drop;)',
  ]) t.ok(all.has(expected), expected);
  for (const absent of [
    'sw1 ingress 25 ls_in_l2_lkup 50 (eth.dst == 00:00:00:00:01:08) (outport = "ext"; output;)',
    'sw1 ingress 2 ls_in_lookup_fdb 100 (inport == "ln1") (reg0[11] = lookup_fdb(inport, eth.src); next;)',
  ]) t.notOk(all.has(absent), `absent: ${absent}`);
  // Every stage of the switch pipelines has at least one flow on every switch.
  for (const dp of ['sw0', 'sw1']) {
    for (const s of [...LS_INGRESS_STAGES, ...LS_EGRESS_STAGES]) {
      t.ok(flows.some((f) => flowDatapaths(view, f).some((d) => dpName.get(d) === dp) && f.pipeline === s.pipeline && f.table_id === s.table), `${dp} ${s.name} has flows`);
    }
  }
  const hinted = flows.find((f) => f.match === 'inport == "p3"');
  t.equal(hinted?.tags.get('in_out_port'), 'p3');
  t.match(hinted?.external_ids.get('stage-hint') ?? '', /^[0-9a-f]{8}$/);
});

t.test('an NB change yields exactly the SB delta that turns the old view into the new', async (t) => {
  const { fx, northd } = build();
  const before = new Map([...northd.view()].map(([k, v]) => [k, new Map(v)]));
  const delta = northd.apply(fx.db, fx.run([{ op: 'update', table: 'Logical_Switch_Port', where: [['name', '==', 'p3']], row: { addresses: set(['00:00:00:00:00:03']) } }]));
  const replayed = new Map<string, Map<string, Row>>(before);
  for (const c of delta.changes) {
    const table = replayed.get(c.table) ?? new Map<string, Row>();
    replayed.set(c.table, table);
    if (c.kind === 'delete') table.delete(c.uuid);
    else table.set(c.uuid, c.new);
  }
  // sw0 loses its only port with "unknown": its own flows move to another template, and the
  // template it leaves is held nowhere else, so the flows both templates share change group.
  t.same(new Set(delta.changes.map((c) => c.table)), new Set(['Logical_DP_Group', 'Logical_Flow', 'Multicast_Group', 'Port_Binding']));
  for (const [table, rowsNow] of northd.view()) t.same([...(replayed.get(table)?.keys() ?? [])].sort(), [...rowsNow.keys()].sort(), table);
  const sorted = delta.changes.map((c) => `${c.table} ${c.uuid}`);
  t.same(sorted, [...sorted].sort(), 'changes in (table, uuid) order');
});

t.test('chassis-owned columns come from agents, incrementally', async (t) => {
  const { fx, northd } = build();
  const before = northd.stats();
  const chassis = '11111111-1111-4111-8111-111111111111';
  const delta = northd.setChassisOwned(fx.db, new Map([['p1', { chassis: [chassis], up: [true] }], ['not-yet', { up: [true] }]]));
  t.same(delta.changes.map((c) => [c.kind, c.table, c.kind === 'modify' ? c.columns : []]), [['modify', 'Port_Binding', ['chassis', 'up']]]);
  const p1 = rows<sb.Port_Binding>(northd.view(), 'Port_Binding').find((p) => p.logical_port === 'p1');
  t.same([p1?.chassis, p1?.up], [[chassis], [true]]);
  for (const [node, s] of Object.entries(northd.stats())) t.equal(s.recomputes, before[node]?.recomputes, `${node} did not recompute`);
  // A report that arrived before its port is applied when the port appears.
  northd.apply(fx.db, fx.run(addLsp('sw0', 'not-yet')));
  t.same(rows<sb.Port_Binding>(northd.view(), 'Port_Binding').find((p) => p.logical_port === 'not-yet')?.up, [true]);
  northd.setChassisOwned(fx.db, new Map([['p1', undefined]]));
  t.same(rows<sb.Port_Binding>(northd.view(), 'Port_Binding').find((p) => p.logical_port === 'p1')?.chassis, []);
});

t.test('a port deleted and added again is a new binding: its old chassis and up do not come back', async (t) => {
  const { fx, northd } = build();
  const chassis = '11111111-1111-4111-8111-111111111111';
  northd.setChassisOwned(fx.db, new Map([['p1', { chassis: [chassis], up: [true] }]]));
  const p1 = (): sb.Port_Binding | undefined => rows<sb.Port_Binding>(northd.view(), 'Port_Binding').find((p) => p.logical_port === 'p1');
  t.same(p1()?.chassis, [chassis]);
  const lsp = [...fx.db.rows('Logical_Switch_Port').values()].find((r) => r.name === 'p1')?._uuid as string;
  const ls = [...fx.db.rows('Logical_Switch').values()].find((r) => (r.ports as string[]).includes(lsp))?._uuid as string;
  northd.apply(fx.db, fx.run([{ op: 'mutate', table: 'Logical_Switch', where: byUuid(ls), mutations: [['ports', 'delete', uuidAtom(lsp)]] }]));
  t.equal(p1(), undefined, 'the binding is gone with its port');
  t.notOk(northd.chassisOwned().has('p1'), 'and so is what its chassis reported');
  northd.apply(fx.db, fx.run(addLsp([...fx.db.rows('Logical_Switch').values()].find((r) => r._uuid === ls)?.name as string, 'p1')));
  t.same(p1()?.chassis, [], 'added again, it waits for a chassis to claim it');
  t.notSame(p1()?.up, [true], 'and is not up');
});

t.test('router port ARP/ND flows follow the switch becoming router-only and back', async (t) => {
  const fx = nbFixture();
  const northd = createNorthd();
  northd.apply(fx.db, fx.run([{ op: 'insert', table: 'Logical_Switch', row: { name: 'transit' } }, { op: 'insert', table: 'Logical_Router', row: { name: 'lr' } }]));
  northd.apply(fx.db, fx.run(addLrp('lr', 'lrp1', '00:00:00:00:ff:02', ['172.16.0.1/24'])));
  northd.apply(fx.db, fx.run(addLsp('transit', 't-lr', { type: 'router', addresses: set(['router']), options: map({ 'router-port': 'lrp1' }) })));
  const l2 = (): string[] => rows<sb.Logical_Flow>(northd.view(), 'Logical_Flow')
    .filter((f) => f.external_ids.get('stage-name') === 'ls_in_l2_lkup' && f.priority >= 75 && f.priority <= 80)
    .map((f) => `${f.priority} (${f.match}) (${f.actions})`).sort();
  t.same(l2(), [
    '80 (flags[1] == 0 && arp.op == 1 && arp.tpa == 172.16.0.1) (outport = "t-lr"; output;)',
    '80 (flags[1] == 0 && nd_ns && nd.target == fe80::200:ff:fe00:ff02) (outport = "t-lr"; output;)',
  ], 'router-only switch: no flooding');
  const before = northd.stats();
  northd.apply(fx.db, fx.run(addLsp('transit', 'vm', { addresses: set(['00:00:00:00:00:09']) })));
  t.same(l2(), [
    '75 (eth.src == {00:00:00:00:ff:02} && (arp.op == 1 || rarp.op == 3 || nd_ns)) (outport = "_MC_flood_l2"; output;)',
    '80 (flags[1] == 0 && arp.op == 1 && arp.tpa == 172.16.0.1) (clone {outport = "t-lr"; output; }; outport = "_MC_flood_l2"; output;)',
    '80 (flags[1] == 0 && nd_ns && nd.target == fe80::200:ff:fe00:ff02) (clone {outport = "t-lr"; output; }; outport = "_MC_flood_l2"; output;)',
  ], 'with a VIF: also flooded');
  for (const [node, s] of Object.entries(northd.stats())) t.equal(s.recomputes, before[node]?.recomputes, `${node} did not recompute`);
  northd.apply(fx.db, fx.run([{ op: 'mutate', table: 'Logical_Switch', where: [], mutations: [['ports', 'delete', set([['uuid', (fx.db.findUnique('Logical_Switch_Port', ['name'], ['vm']) as Row)._uuid]])]] }]));
  t.equal(l2().length, 2, 'router-only again');
  t.equal(northd.view().get('Logical_Flow')?.size, northd.recompute(fx.db, northd.view()).get('Logical_Flow')?.size);
});

t.test('a datapath whose requested key is in another shard: every flow it holds moves there, as a recompute has it', async (t) => {
  const { fx, northd } = build();
  const dpOf = (name: string): sb.Datapath_Binding =>
    rows<sb.Datapath_Binding>(northd.view(), 'Datapath_Binding').find((b) => b.external_ids.get('name') === name) as sb.Datapath_Binding;
  // sw0 holds ports (one a router port of lr0), an ACL, a QoS rule and a load balancer with a
  // health check whose ARP responder sits on sw0; lr0 holds sw0's peer and static routes.
  northd.apply(fx.db, fx.run([
    { op: 'insert', table: 'ACL', 'uuid-name': 'acl', row: { direction: 'from-lport', priority: 1001, match: 'ip4', action: 'allow-related' } },
    { op: 'insert', table: 'QoS', 'uuid-name': 'qos', row: { direction: 'from-lport', priority: 100, match: 'ip4', action: ['map', [['dscp', 10]]] } },
    { op: 'insert', table: 'Load_Balancer_Health_Check', 'uuid-name': 'hc', row: { vip: '10.0.0.100:80' } },
    { op: 'insert', table: 'Load_Balancer', 'uuid-name': 'lb', row: { name: 'lb', vips: map({ '10.0.0.100:80': '10.0.0.1:80,10.0.0.2:80' }), health_check: set([['named-uuid', 'hc']]),
      ip_port_mappings: map({ '10.0.0.1': 'p1:10.0.0.254', '10.0.0.2': 'p2:10.0.0.254' }) } },
    { op: 'mutate', table: 'Logical_Switch', where: [['name', '==', 'sw0']], mutations: [['acls', 'insert', set([['named-uuid', 'acl']])], ['qos_rules', 'insert', set([['named-uuid', 'qos']])],
      ['load_balancer', 'insert', set([['named-uuid', 'lb']])]] },
    { op: 'insert', table: 'Logical_Router_Static_Route', 'uuid-name': 'r', row: { ip_prefix: '10.9.0.0/16', nexthop: '10.0.0.9' } },
    { op: 'mutate', table: 'Logical_Router', where: [['name', '==', 'lr0']], mutations: [['static_routes', 'insert', set([['named-uuid', 'r']])]] },
  ]));
  const flowsOf = (sbUuid: string): sb.Logical_Flow[] => rows<sb.Logical_Flow>(northd.view(), 'Logical_Flow').filter((f) => flowDatapaths(northd.view(), f).includes(sbUuid));
  const shardOfFlows = (sbUuid: string): number[] => [...new Set(flowsOf(sbUuid).map((f) => {
    const members = flowDatapaths(northd.view(), f);
    const keys = new Set(members.map((dp) => shardOfKey((northd.view().get('Datapath_Binding')?.get(dp) as unknown as sb.Datapath_Binding).tunnel_key)));
    return keys.size === 1 ? [...keys][0] as number : -1;
  }))].sort();
  const sw0 = dpOf('sw0')._uuid;
  const lr0 = dpOf('lr0')._uuid;
  t.ok(flowsOf(sw0).some((f) => f.external_ids.get('stage-name') === 'ls_in_arp_rsp' && f.priority === 110), 'sw0 has the health check ARP responder');
  t.ok(flowsOf(sw0).some((f) => f.external_ids.get('stage-name') === 'ls_in_qos_mark'), 'and a QoS flow');
  for (const [name, option, column, key, shard] of [
    ['sw0', 'requested-tnl-key', 'other_config', 700, 2],
    ['lr0', 'requested-tnl-key', 'options', 16711681, Math.floor(16711680 / 256)],
    ['sw0', 'requested-tnl-key', 'other_config', 5, 0],
  ] as const) {
    const table = column === 'other_config' ? 'Logical_Switch' : 'Logical_Router';
    const before = new Map([...northd.view()].map(([tb, r]) => [tb, new Map(r)]));
    northd.apply(fx.db, fx.run([{ op: 'mutate', table, where: [['name', '==', name]], mutations: [[column, 'delete', set([option])], [column, 'insert', map({ [option]: String(key) })]] }]));
    t.equal(dpOf(name).tunnel_key, key, `${name} has key ${key}`);
    t.same(shardOfFlows(dpOf(name)._uuid), [shard], `every flow ${name} holds is in shard ${shard}`);
    t.equal(viewDifference(northd.view(), northd.recompute(fx.db, before)), undefined, `after ${name} moved to key ${key}, the view is what a recompute makes`);
  }
  t.same(shardOfFlows(lr0), [Math.floor(16711680 / 256)], 'lr0 stayed where it moved');
});

t.test("every row's _version follows its content", async (t) => {
  const { fx, northd } = build();
  northd.apply(fx.db, fx.run([{ op: 'update', table: 'Logical_Switch', where: [['name', '==', 'sw1']], row: { other_config: map({ 'vlan-passthru': 'true' }) } }]));
  // Two shards (keys 1-256 and 257-512), each with switches sharing flows: sw0 and sw2 in the
  // first, sw3 and sw4 in the second.
  northd.apply(fx.db, fx.run([{ op: 'insert', table: 'Logical_Switch', row: { name: 'sw2' } }]));
  for (const [name, key] of [['sw3', '300'], ['sw4', '301']] as const) {
    northd.apply(fx.db, fx.run([{ op: 'insert', table: 'Logical_Switch', row: { name, other_config: map({ 'requested-tnl-key': key }) } }]));
  }
  northd.setChassisOwned(fx.db, new Map([['p1', { chassis: ['00000000-0000-4000-8000-0000000000aa'], encap: ['00000000-0000-4000-8000-0000000000bb'], up: [true] }]]));
  // Requested chassis, on a claimed port and on one no chassis claimed (two text paths).
  northd.setChassisOwned(fx.db, new Map(), new Map([['hv1', '00000000-0000-4000-8000-0000000000aa'], ['hv2', '00000000-0000-4000-8000-0000000000cc']]),
    new Map([['00000000-0000-4000-8000-0000000000cc', 'node-2']]));
  for (const [port, value] of [['p1', 'hv1,node-2'], ['p2', 'node-2']] as const) {
    northd.apply(fx.db, fx.run([{ op: 'mutate', table: 'Logical_Switch_Port', where: [['name', '==', port]], mutations: [['options', 'insert', map({ 'requested-chassis': value })]] }]));
  }
  const requested = rows<sb.Port_Binding>(northd.view(), 'Port_Binding').filter((b) => b.requested_chassis.length > 0).map((b) => `${b.logical_port} ${b.requested_additional_chassis.length}`).sort();
  t.same(requested, ['p1 1', 'p2 0'], 'p1 and p2 have requested chassis, p1 an additional one');
  // A port group over both switches (one SB row each), then a member out and another in.
  const lsp = (name: string): string => (fx.db.findUnique('Logical_Switch_Port', ['name'], [name]) as { _uuid: string })._uuid;
  northd.apply(fx.db, fx.run([{ op: 'insert', table: 'Port_Group', row: { name: 'pg', ports: set([['uuid', lsp('p1')], ['uuid', lsp('p2')], ['uuid', lsp('q1')]]) } }]));
  northd.apply(fx.db, fx.run([{ op: 'mutate', table: 'Port_Group', where: [['name', '==', 'pg']], mutations: [['ports', 'delete', set([['uuid', lsp('p1')]])]] }]));
  northd.apply(fx.db, fx.run([{ op: 'mutate', table: 'Port_Group', where: [['name', '==', 'pg']], mutations: [['ports', 'insert', set([['uuid', lsp('p3')]])]] }]));
  let checked = 0;
  const shardsSeen = new Set<number>();
  let grouped = 0;
  let mcGroups = 0;
  let pgRows = 0;
  let asRows = 0;
  for (const [table, rows] of northd.view()) {
    for (const row of rows.values()) {
      const { _uuid, _version, ...columns } = row;
      if (table === 'Logical_Flow') {
        // A flow's UUID is its content and shard; its version adds where it applies and its hints.
        const f = row as unknown as sb.Logical_Flow;
        const where = f.logical_dp_group[0] ?? f.logical_datapath[0] ?? '';
        if (f.logical_dp_group.length > 0) grouped++;
        const members = flowDatapaths(northd.view(), f);
        const shards = new Set(members.map((dp) => shardOfKey((northd.view().get('Datapath_Binding')?.get(dp) as unknown as sb.Datapath_Binding).tunnel_key)));
        t.equal(shards.size, 1, 'the datapaths sharing a row are of one shard');
        t.equal(lflowUuid([...shards][0] ?? -1, f.external_ids.get('stage-name') ?? '', f.priority, f.match, f.actions), _uuid, 'the UUID is the content and shard');
        shardsSeen.add([...shards][0] ?? -1);
        if (f.logical_dp_group.length > 0) t.ok(members.length >= 2, 'a flow names a group only for two datapaths or more');
        t.equal(_version, hashUuid(['Logical_Flow', _uuid, where, f.external_ids.get('stage-hint') ?? '', f.tags.get('in_out_port') ?? '']));
        t.equal(f.logical_datapath.length + f.logical_dp_group.length, 1, 'one datapath or one group');
      } else if (table === 'Logical_DP_Group') {
        // A group is named by its members (their UUIDs' 32-bit words summed), so its content
        // never changes under its name; or it is the group of the flows held through a set of
        // templates, named by them, and its version follows its members.
        const g = row as unknown as sb.Logical_DP_Group;
        const sum = setSumWith(EMPTY_SET_SUM, g.datapaths, 1);
        t.ok(g.datapaths.length >= 2, 'a group has two datapaths or more');
        if (_uuid === hashUuid(['Logical_DP_Group', String(g.datapaths.length), ...sum.map(String)])) t.equal(_version, _uuid);
        else t.equal(_version, hashUuid(['Logical_DP_Group', _uuid, String(g.datapaths.length), ...sum.map(String)]), 'a group named by its templates is versioned by its members');
      } else if (table === 'Multicast_Group') {
        // Its other columns are named by its UUID; its version follows its ports' count and
        // set sum, so one port joining a big switch does not hash every port again.
        const g = row as unknown as sb.Multicast_Group;
        t.same(g.ports, [...g.ports].sort(), 'a group lists its ports sorted');
        t.equal(_uuid, multicastGroupUuid(g.datapath, g.name));
        t.equal(_version, setVersion('Multicast_Group', _uuid, g.ports.length, setSumWith(EMPTY_SET_SUM, g.ports, 1)), 'a group is versioned by its ports');
        mcGroups++;
      } else if (table === 'Port_Group') {
        // Named by its name; versioned by its ports' count and set sum (of their names' digests).
        const g = row as unknown as sb.Port_Group;
        t.same(g.ports, [...g.ports].sort(), 'a port group lists its ports sorted');
        t.equal(_version, setVersion('Port_Group', _uuid, g.ports.length, setSumWith(EMPTY_SET_SUM, g.ports, 1, textWords)), 'a port group is versioned by its ports');
        pgRows++;
      } else if (table === 'Address_Set') {
        // Named by its name; versioned by its addresses' count and set sum.
        const a = row as unknown as sb.Address_Set;
        t.equal(_version, setVersion('Address_Set', _uuid, a.addresses.length, setSumWith(EMPTY_SET_SUM, a.addresses, 1, textWords)), 'an address set is versioned by its addresses');
        asRows++;
      } else if (_version !== contentVersion(columns)) t.fail(`${table} ${_uuid}: _version is not the hash of its columns`);
      checked++;
    }
  }
  t.ok(checked > 100, `${checked} rows checked`);
  t.ok(grouped > 10, `${grouped} flows shared by several datapaths`);
  t.same([...shardsSeen].sort(), [0, 1], 'flows of both shards checked');
  t.ok(mcGroups >= 2, `${mcGroups} multicast groups checked`);
  t.ok(pgRows >= 2, `${pgRows} port group rows checked`);
  t.ok(asRows >= 2, `${asRows} address set rows checked`);
});

t.test('IP_Multicast _version is the hash of its columns, with snooping options and JSON escapes', async (t) => {
  const fx = nbFixture();
  const northd = createNorthd();
  const configs: Record<string, string>[] = [
    {},
    { mcast_snoop: 'true', mcast_querier: 'false', mcast_table_size: '100', mcast_idle_timeout: '5', mcast_query_interval: '-1', mcast_query_max_response: '18446744073709551615' },
    { mcast_snoop: 'true', mcast_eth_src: '00:00:00:00:00:01', mcast_ip4_src: '10.0.0.1', mcast_ip6_src: 'fe80::1' },
    { mcast_eth_src: 'quote"d \\ \u0001 ünï', mcast_idle_timeout: '99999999999999999999', 'interconn-ts': 'ts' },
  ];
  for (const [i, oc] of configs.entries()) {
    northd.apply(fx.db, fx.run([{ op: 'insert', table: 'Logical_Switch', row: { name: `ls${i}`, other_config: map(oc) } }]));
  }
  const mcast = rows<sb.IP_Multicast>(northd.view(), 'IP_Multicast');
  t.equal(mcast.length, configs.length);
  for (const m of mcast) {
    const { _uuid, _version, ...columns } = m;
    t.equal(_version, contentVersion(columns), `${_uuid}: ${JSON.stringify(m.eth_src)}`);
  }
});

t.test('Datapath_Binding _version is the hash of its columns, with name2 and names JSON escapes', async (t) => {
  const fx = nbFixture();
  const northd = createNorthd();
  const names = ['plain', 'quote"d', 'back\\slash', 'tab\there', 'ünïcode', 'ctl\u0001', ''];
  for (const [i, name] of names.entries()) {
    northd.apply(fx.db, fx.run([{ op: 'insert', table: 'Logical_Switch', row: { name: `ls-${name}`, external_ids: map({ 'neutron:network_name': name }) } }]));
    northd.apply(fx.db, fx.run([{ op: 'insert', table: 'Logical_Router', row: { name: `lr-${i}`, external_ids: map({ 'neutron:router_name': name, other: 'x' }) } }]));
  }
  const bindings = rows<sb.Datapath_Binding>(northd.view(), 'Datapath_Binding');
  t.equal(bindings.length, names.length * 2);
  let withName2 = 0;
  for (const b of bindings) {
    const { _uuid, _version, ...columns } = b;
    t.equal(_version, contentVersion(columns), `${_uuid}: ${JSON.stringify(b.external_ids.get('name'))}`);
    if (b.external_ids.has('name2')) withName2++;
  }
  // An empty Neutron name gives no name2 (ovn-northd leaves it out too).
  t.equal(withName2, (names.length - 1) * 2);
});
