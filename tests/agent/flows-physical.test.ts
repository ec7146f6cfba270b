// Goal: the physical flows, local datapaths and ct zones follow ovn-controller 23.03
// (physical.c, local_data.c, lflow.c neighbour flows) on a small topology: two VIFs on a
// switch, a remote port behind a Geneve or VXLAN tunnel, a router joined by patch ports, a localnet
// switch, multicast fan-out, containers, localports, MAC bindings, port security. Method: SB rows in, flows
// rendered as ovs-ofctl-like text out, compared with lines written from OVN's rules; VXLAN's key
// layout also by running the sender's and the receiver's flows over the VNI (a round trip).

import t from 'tap';
import { formatActions, formatFlow } from '../../agent/compile/index.js';
import { encodeActions } from '../../agent/openflow/actions.js';
import { assignCtZones, ctZoneUsers, dnatZoneKey, snatZoneKey } from '../../agent/flows/ct-zones.js';
import { computeLocality } from '../../agent/flows/local-datapaths.js';
import {
  defaultFlows, effectiveMtu, fdbFlows, multicastGroupFlows, neighborFlows, pathMtuFlows, portBindingFlows, tunnelFlows, vxlanPortKey, type PhysicalContext,
} from '../../agent/flows/physical.js';
import { parsePortSecurity } from '../../agent/flows/port-security.js';
import { SbStore } from '../../agent/flows/sb-store.js';
import type { LocalView } from '../../agent/local-view.js';
import type { FieldRef, FlowSpec, OfAction } from '../../agent/openflow/types.js';
import type { Row } from '../../ovsdb/index.js';
import type * as sb from '../../ovsdb/rows/sb.js';
import {
  chassis, datapath, fdb, haChassis, haChassisGroup, ids, macBinding, multicastGroup, port, resetOf, smallTopology, smallView, staticMacBinding, U,
} from './flows-fixtures.js';

function context(rows: [string, Row][], view: LocalView, zones?: ReadonlyMap<string, number>): PhysicalContext & { store: SbStore } {
  const store = new SbStore();
  store.apply(resetOf(rows));
  const chassisUuid = store.chassisByName(view.chassis)?._uuid;
  const locality = computeLocality(store, chassisUuid, view);
  const z = zones ?? assignCtZones(new Map(), ctZoneUsers(store, chassisUuid, view, locality));
  return { store, sb: store, chassisUuid, view, locality, zones: z, geneveField: 'tun_metadata0' };
}

const text = (flows: readonly FlowSpec[]): string[] => flows.map((f) => formatFlow(f, { cookie: true }));
const pb = (c: PhysicalContext & { store: SbStore }, uuid: string): sb.Port_Binding => c.store.portBinding(uuid) as sb.Port_Binding;

/** Fixed zones, so expectations name them: vif1 11, vif2 12, ln-pub 13, datapath NAT zones 2x/2x+1. */
const zones = new Map<string, number>([
  ['vif1', 11], ['vif2', 12], ['ln-pub', 13],
  [dnatZoneKey(ids.sw0), 20], [snatZoneKey(ids.sw0), 21], [dnatZoneKey(ids.lr0), 22], [snatZoneKey(ids.lr0), 23],
  [dnatZoneKey(ids.pub), 24], [snatZoneKey(ids.pub), 25],
]);

/** in_port := OFPP_NONE around the resubmit to 65 (through reg0: see physical.ts). */
const HAIRPIN = 'push:in_port[0..31],push:NXM_NX_REG0[],set_field:0xffffffff->reg0,move:NXM_NX_REG0[]->in_port[0..31],pop:NXM_NX_REG0[],'
  + 'resubmit(,65),pop:in_port[0..31]';

t.test('local datapaths: bound ports, then across patch ports; a switch reached only elsewhere is not local', async (t) => {
  const c = context(smallTopology(), smallView());
  t.same([...c.locality.datapaths.keys()].sort(), [ids.sw0, ids.lr0, ids.pub].sort());
  t.equal(c.locality.datapaths.get(ids.pub)?.localnetPort, ids.lnPub, 'pub has its localnet port: physnet is bridged here');
  t.same(c.locality.datapaths.get(ids.lr0)?.peerPorts.map((p) => p.remote).sort(), [ids.rpPub, ids.rpSw0].sort());
  const unplugged = context(smallTopology(), smallView({ localnetPatches: new Map() }));
  t.equal(unplugged.locality.datapaths.get(ids.pub)?.localnetPort, undefined, 'no bridge mapping: no localnet port');
  const hv2 = context(smallTopology(), smallView({ chassis: 'hv2' }));
  t.same([...hv2.locality.datapaths.keys()].sort(), [ids.sw0, ids.lr0, ids.pub, ids.sw9].sort(), 'hv2 has vif3, ext1 and vif9');
  const nobody = context(smallTopology(), smallView({ chassis: 'hv3' }));
  t.equal(nobody.locality.datapaths.size, 0, 'a chassis with nothing bound has nothing local');
  // A distributed gateway port whose always-redirect chassis-redirect port is on another
  // chassis does not pull the outside switch in.
  const rows = smallTopology().map(([tb, r]): [string, Row] => (r._uuid === ids.lrpPub
    ? [tb, port(ids.lrpPub, ids.lr0, 'lrp-pub', 2, { type: 'patch', options: { peer: 'rp-pub', 'chassis-redirect-port': 'cr-lrp-pub' } })]
    : [tb, r]));
  rows.push(['Port_Binding', port(U(20, 0xa), ids.lr0, 'cr-lrp-pub', 3, { type: 'chassisredirect', chassis: ids.hv2, options: { 'always-redirect': 'true', 'distributed-port': 'lrp-pub' } })]);
  const dgp = context(rows.filter(([, r]) => r._uuid !== ids.ext1), smallView());
  t.same([...dgp.locality.datapaths.keys()].sort(), [ids.sw0, ids.lr0].sort());
});

/**
 * smallTopology with a chassis hv3 and cr-lrp-pub (key 7, bound to `boundTo`), the
 * chassisredirect port of lrp-pub's HA group: hv2 (HA_Chassis U(1, 9), priority 20) and hv3
 * (U(2, 9), `hv3Priority`).
 */
function withHaGroup(hv3Priority: number, boundTo: string): [string, Row][] {
  const group = U(1, 0x8);
  const hv3 = U(3, 0xc);
  return [
    ...smallTopology(),
    ['Chassis', chassis(hv3, 'hv3')],
    ['HA_Chassis', haChassis(U(1, 0x9), 'hv2', 20, ids.hv2)],
    ['HA_Chassis', haChassis(U(2, 0x9), 'hv3', hv3Priority, hv3)],
    ['HA_Chassis_Group', haChassisGroup(group, 'lrp-pub', [U(1, 0x9), U(2, 0x9)])],
    ['Port_Binding', port(U(30, 0xa), ids.lr0, 'cr-lrp-pub', 7, { type: 'chassisredirect', chassis: boundTo, ha_chassis_group: group, options: { 'distributed-port': 'lrp-pub' } })],
  ];
}

t.test('local datapaths: a standby member of a gateway port\'s HA group holds the router and what it reaches', async (t) => {
  // hv3 has nothing bound; it is the lower-priority member of cr-lrp-pub's group (bound to hv2,
  // the active one), as binding.c's consider_ha_lport makes a standby's datapath local.
  const rows = withHaGroup(10, ids.hv2);
  const standby = context(rows, smallView({ chassis: 'hv3' }));
  t.same([...standby.locality.datapaths.keys()].sort(), [ids.sw0, ids.lr0, ids.pub].sort(), 'lr0, and the switches its patch ports reach');
  const noGroup = context(rows.filter(([tb]) => tb !== 'HA_Chassis_Group'), smallView({ chassis: 'hv3' }));
  t.equal(noGroup.locality.datapaths.size, 0, 'without the group, nothing');
  const byName = context(rows.map(([tb, r]): [string, Row] => (r._uuid === U(2, 0x9) ? [tb, haChassis(U(2, 0x9), 'hv3', 10)] : [tb, r])), smallView({ chassis: 'hv3' }));
  t.same([...byName.locality.datapaths.keys()].sort(), [ids.sw0, ids.lr0, ids.pub].sort(), 'a member named by external_ids:chassis-name alone (agent/ha-chassis.ts)');
});

t.test('two VIFs on a switch: table 0 in, 40/41/64 local common flows, 65 out', async (t) => {
  const c = context(smallTopology(), smallView(), zones);
  t.same(text(portBindingFlows(c, pb(c, ids.vif1))), [
    'table=40, priority=100, cookie=0xa, metadata=0x1,reg15=0x1 actions=set_field:0xb->reg13,set_field:0x14->reg11,set_field:0x15->reg12,resubmit(,41)',
    'table=41, priority=100, cookie=0xa, metadata=0x1,reg10=0/0x1,reg14=0x1,reg15=0x1 actions=drop',
    `table=64, priority=100, cookie=0xa, metadata=0x1,reg10=0x1/0x1,reg15=0x1 actions=${HAIRPIN}`,
    'table=0, priority=100, cookie=0xa, in_port=0x1/0xffffffff actions=set_field:0xb->reg13,set_field:0x14->reg11,set_field:0x15->reg12,set_field:0x1->metadata,set_field:0x1->reg14,resubmit(,8)',
    'table=65, priority=100, cookie=0xa, metadata=0x1,reg15=0x1 actions=output:1',
  ]);
  t.match(text(portBindingFlows(c, pb(c, ids.vif2))), [/reg15=0x2 actions=set_field:0xc->reg13/, /reg14=0x2,reg15=0x2 actions=drop/, /table=64/, /in_port=0x2\/0xffffffff actions=set_field:0xc->reg13,.*set_field:0x2->reg14,resubmit\(,8\)/, /table=65.*reg15=0x2 actions=output:2/]);
  const gone = context(smallTopology(), smallView({ vifs: new Map([['vif1', 1]]) }), zones);
  t.same(portBindingFlows(gone, pb(gone, ids.vif2)), [], 'bound here but its interface is gone: no flows at all');
});

t.test('a port on another chassis: Geneve to its tunnel; tunnel packets come in by table 0', async (t) => {
  const c = context(smallTopology(), smallView(), zones);
  t.same(text(portBindingFlows(c, pb(c, ids.vif3))), [
    'table=39, priority=100, cookie=0xa, metadata=0x1,reg15=0x3 actions=load:0x1->tun_id[0..23],load:0x3->tun_metadata0[0..31],'
      + 'move:NXM_NX_REG14[0..14]->tun_metadata0[16..30],output:10,resubmit(,40)',
  ]);
  t.same(text(tunnelFlows(c, 'hv2')), [
    'table=0, priority=100, cookie=0, in_port=0xa/0xffffffff actions=move:tun_id[0..23]->OXM_OF_METADATA[0..23],'
      + 'move:tun_metadata0[16..30]->NXM_NX_REG14[0..14],move:tun_metadata0[0..15]->NXM_NX_REG15[0..15],resubmit(,40)',
  ]);
  const noTunnel = context(smallTopology(), smallView({ tunnels: new Map() }), zones);
  t.same(portBindingFlows(noTunnel, pb(noTunnel, ids.vif3)), [], 'no tunnel to its chassis: no remote flow');
  const gen1 = { ...c, geneveField: 'tun_metadata1' };
  t.match(text(portBindingFlows(gen1, pb(gen1, ids.vif3))), [/tun_metadata1\[0\.\.31\]/], 'the switch\'s Geneve field is used');
});

t.test('a chassisredirect port of an HA group elsewhere: an active-backup bundle over the members\' tunnels, by priority', async (t) => {
  const group = U(1, 0x8);
  const rows: [string, Row][] = [
    ...smallTopology(),
    ['Chassis', chassis(U(3, 0xc), 'hv3')],
    ['HA_Chassis', haChassis(U(1, 0x9), 'hv2', 20, ids.hv2)],
    ['HA_Chassis', haChassis(U(2, 0x9), 'hv3', 30, U(3, 0xc))],
    ['HA_Chassis', haChassis(U(3, 0x9), 'hv1', 5, ids.hv1)],
    ['HA_Chassis_Group', haChassisGroup(group, 'lrp-pub', [U(1, 0x9), U(2, 0x9), U(3, 0x9)])],
    ['Port_Binding', port(U(30, 0xa), ids.lr0, 'cr-lrp-pub', 7, { type: 'chassisredirect', chassis: U(3, 0xc), ha_chassis_group: group, options: { 'distributed-port': 'lrp-pub' } })],
  ];
  const tunnels = new Map([['hv2', { ofport: 10, type: 'geneve', remoteIp: '192.0.2.2' }], ['hv3', { ofport: 11, type: 'geneve', remoteIp: '192.0.2.3' }]]);
  const c = context(rows, smallView({ tunnels }), zones);
  t.same(text(portBindingFlows(c, pb(c, U(30, 0xa)))), [
    'table=39, priority=100, cookie=0xa, metadata=0x2,reg15=0x7 actions=load:0x2->tun_id[0..23],load:0x7->tun_metadata0[0..31],'
      + 'move:NXM_NX_REG14[0..14]->tun_metadata0[16..30],bundle(eth_src,0,active_backup,ofport,members:11,10)',
  ], 'hv3 first (priority 30), then hv2; this chassis (a member without a tunnel to itself) is left out');
  const oneTunnel = context(rows, smallView(), zones);
  t.match(text(portBindingFlows(oneTunnel, pb(oneTunnel, U(30, 0xa)))), [/members:10\)$/], 'a member without a tunnel yet is left out');
  const none = context(rows, smallView({ tunnels: new Map() }), zones);
  t.same(portBindingFlows(none, pb(none, U(30, 0xa))), [], 'no tunnel to any member: no flow');
});

const vxlan = (ofport: number, remoteIp: string): LocalView['tunnels'] extends ReadonlyMap<string, infer T> ? T : never => ({ ofport, type: 'vxlan', remoteIp });

t.test('a port on another chassis over VXLAN: datapath and egress port in the VNI, no ingress port; table 0 splits it', async (t) => {
  const c = context(smallTopology(), smallView({ tunnels: new Map([['hv2', vxlan(10, '192.0.2.2')]]) }), zones);
  t.same(text(portBindingFlows(c, pb(c, ids.vif3))), [
    'table=39, priority=100, cookie=0xa, metadata=0x1,reg15=0x3 actions=load:0x3001->tun_id[0..23],output:10,resubmit(,40)',
  ], 'VNI = datapath 1 | port 3 << 12');
  t.same(text(tunnelFlows(c, 'hv2')), [
    'table=0, priority=100, cookie=0, in_port=0xa/0xffffffff actions=move:tun_id[12..23]->NXM_NX_REG15[0..11],move:tun_id[0..11]->OXM_OF_METADATA[0..11],resubmit(,40)',
    'table=0, priority=105, cookie=0, in_port=0xa/0xffffffff,tun_id=0x800000/0x800000 actions=load:0x1->NXM_NX_REG15[15],'
      + 'move:tun_id[12..22]->NXM_NX_REG15[0..10],move:tun_id[0..11]->OXM_OF_METADATA[0..11],resubmit(,40)',
  ], 'a multicast VNI (bit 23) takes reg15 bit 15 back');
  const stt = context(smallTopology(), smallView({ tunnels: new Map([['hv2', { ofport: 10, type: 'stt', remoteIp: '192.0.2.2' }]]) }), zones);
  t.same([...portBindingFlows(stt, pb(stt, ids.vif3)), ...tunnelFlows(stt, 'hv2')], [], 'STT is not produced: no flows either way');
});

/** Runs load and move actions over a state of whole fields (enough for tun_id, metadata, reg15). */
function runActions(actions: readonly OfAction[], state: Map<string, bigint>): void {
  const mask = (r: FieldRef): bigint => ((1n << BigInt(r.end - r.start + 1)) - 1n) << BigInt(r.start);
  const get = (r: FieldRef): bigint => ((state.get(r.field) ?? 0n) & mask(r)) >> BigInt(r.start);
  const put = (r: FieldRef, v: bigint): void => {
    state.set(r.field, ((state.get(r.field) ?? 0n) & ~mask(r)) | ((v << BigInt(r.start)) & mask(r)));
  };
  for (const a of actions) {
    if (a.kind === 'load') put(a.dst, a.value);
    else if (a.kind === 'move') put(a.dst, get(a.src));
  }
}

t.test('VXLAN port keys at the edges: 12 bits each way, multicast groups as 2048 | low 11 bits, and back', async (t) => {
  t.same([1, 2047, 32768, 32769, 32773, 32774, 34815, 34816, 65535].map(vxlanPortKey), [1, 2047, 2048, 2049, 2053, 2054, 4095, 2048, 4095]);
  // The sender's table-39 flow for a port or group of key k on datapath d, then the receiver's
  // table-0 flow that matches the VNI (105 for a multicast one, else 100): what reg15 and
  // metadata hold when the packet reaches table 40 over there.
  const tunnels = new Map([['hv2', vxlan(10, '192.0.2.2')]]);
  const roundTrip = (dpKey: number, key: number): { metadata: bigint; reg15: bigint; vni: bigint } => {
    const rows = smallTopology().filter(([tb, r]) => tb !== 'Multicast_Group' && r._uuid !== ids.sw0);
    rows.push(['Datapath_Binding', datapath(ids.sw0, dpKey, 'switch')]);
    if (key >= 32768) rows.push(['Multicast_Group', multicastGroup(ids.flood, ids.sw0, 'g', key, [ids.vif3])]);
    else rows.push(['Port_Binding', port(U(60, 0xa), ids.sw0, 'far', key, { chassis: ids.hv2 })]);
    const c = context(rows, smallView({ tunnels }), zones);
    const sent = key >= 32768 ? multicastGroupFlows(c, c.store.multicastGroup(ids.flood) as sb.Multicast_Group) : portBindingFlows(c, pb(c, U(60, 0xa)));
    const out = sent.find((f) => f.table === 39);
    if (out === undefined) throw new Error(`no table-39 flow for key ${key}`);
    const wire = new Map<string, bigint>();
    runActions(out.actions, wire);
    const vni = wire.get('tun_id') ?? 0n;
    const recv = tunnelFlows(c, 'hv2').filter((f) => {
      const m = f.match.get('tun_id');
      return m === undefined || (vni & m.mask) === m.value;
    }).sort((a, b) => b.priority - a.priority)[0] as FlowSpec;
    const there = new Map([['tun_id', vni]]);
    runActions(recv.actions, there);
    return { metadata: there.get('metadata') ?? 0n, reg15: there.get('reg15') ?? 0n, vni };
  };
  for (const dpKey of [1, 4095]) {
    for (const key of [1, 2, 2047, 32768, 32769, 32772, 32773, 32774, 34815]) {
      const r = roundTrip(dpKey, key);
      t.same([r.metadata, r.reg15], [BigInt(dpKey), BigInt(key)], `datapath ${dpKey}, key ${key}: VNI 0x${r.vni.toString(16)} and back`);
    }
  }
  t.equal(roundTrip(1, 34816).reg15, 32768n, 'group 34816 arrives as 32768: groups 2048 apart share a VXLAN key, as in OVN');
  t.equal(roundTrip(1, 2048).reg15, 32768n, 'a port key of 2048 (northd gives none in VXLAN mode) sets the multicast bit: read as group 32768');
  t.same(roundTrip(1, 4097), { metadata: 1n, reg15: 1n, vni: 0x1001n }, 'a port key beyond 12 bits loses its high bits in the 24-bit VNI, as ovn-controller\'s load');
});

t.test('VXLAN multicast fan-out: one encapsulation per run of a type, ramp switches with the datapath only', async (t) => {
  const [hv3, hv4, vtep1] = [U(3, 0xc), U(4, 0xc), U(5, 0xc)];
  const rows: [string, Row][] = [...smallTopology().filter(([tb]) => tb !== 'Multicast_Group'),
    ['Chassis', chassis(hv3, 'hv3')], ['Chassis', chassis(hv4, 'hv4')], ['Chassis', chassis(vtep1, 'vtep1', { 'is-vtep': 'true' })],
    ['Port_Binding', port(U(30, 0xa), ids.sw0, 'vif5', 5, { chassis: hv3 })],
    ['Port_Binding', port(U(31, 0xa), ids.sw0, 'vif6', 6, { chassis: hv4 })],
    ['Port_Binding', port(U(32, 0xa), ids.sw0, 'vtep0', 7, { type: 'vtep', chassis: vtep1 })],
    ['Multicast_Group', multicastGroup(ids.flood, ids.sw0, '_MC_flood', 32768, [ids.vif1, ids.vif3, U(30, 0xa), U(31, 0xa), U(32, 0xa)])],
  ];
  // hv2 and hv4 over VXLAN, hv3 over Geneve (its best common type), the VTEP gateway over VXLAN.
  const tunnels = new Map([['hv2', vxlan(10, '192.0.2.2')], ['hv3', { ofport: 11, type: 'geneve', remoteIp: '192.0.2.3' }], ['hv4', vxlan(12, '192.0.2.4')], ['vtep1', vxlan(13, '192.0.2.5')]]);
  const c = context(rows, smallView({ tunnels }), zones);
  t.same(text(multicastGroupFlows(c, c.store.multicastGroup(ids.flood) as sb.Multicast_Group)).filter((l) => l.startsWith('table=39')), [
    'table=39, priority=100, cookie=0xe, metadata=0x1,reg15=0x8000 actions=load:0x800001->tun_id[0..23],output:10,'
      + 'load:0x1->tun_id[0..23],load:0x8000->tun_metadata0[0..31],move:NXM_NX_REG14[0..14]->tun_metadata0[16..30],output:11,'
      + 'load:0x800001->tun_id[0..23],output:12,load:0x1->tun_id[0..23],output:13,resubmit(,40)',
  ], 'hv2 (VXLAN, group 2048), hv3 (Geneve), hv4 (VXLAN again), then the VTEP gateway: VNI = datapath');
});

t.test('a vtep port (a ramp switch behind a VTEP gateway) over VXLAN: out with the datapath only, in through the ingress pipeline', async (t) => {
  const vtep1 = U(5, 0xc);
  const vtepPort = U(32, 0xa);
  const rows: [string, Row][] = [...smallTopology(), ['Chassis', chassis(vtep1, 'vtep1', { 'is-vtep': 'true' })],
    ['Port_Binding', port(vtepPort, ids.sw0, 'vtep0', 7, { type: 'vtep', chassis: vtep1 })]];
  const c = context(rows, smallView({ tunnels: new Map([['vtep1', vxlan(13, '192.0.2.5')]]) }), zones);
  t.same(text(portBindingFlows(c, pb(c, vtepPort))), [
    'table=39, priority=100, cookie=0xa, metadata=0x1,reg15=0x7 actions=push:NXM_NX_REG0[],set_field:0xffffffff->reg0,move:NXM_NX_REG0[]->in_port[0..31],pop:NXM_NX_REG0[],'
      + 'load:0x1->tun_id[0..23],output:13,resubmit(,40)',
    'table=0, priority=110, cookie=0xa, in_port=0xd/0xffffffff,tun_id=0x1/0xffffffffffffffff actions=move:tun_id[0..23]->OXM_OF_METADATA[0..23],load:0x7->NXM_NX_REG14[0..14],'
      + 'load:0x1->NXM_NX_REG10[1],resubmit(,8)',
  ]);
  // Table 39 then keeps what came from the ramp switch here (a default flow, unless loopback is allowed).
  t.ok(defaultFlows().some((f) => formatFlow(f) === 'table=39, priority=150, reg10=0x2/0x3 actions=resubmit(,40)'));
  const geneve = context(rows, smallView({ tunnels: new Map([['vtep1', { ofport: 13, type: 'geneve', remoteIp: '192.0.2.5' }]]) }), zones);
  t.notOk(text(portBindingFlows(geneve, pb(geneve, vtepPort))).some((l) => l.startsWith('table=0')), 'no ramp entry over a Geneve tunnel');
  const elsewhere = context(rows, smallView({ chassis: 'hv3', tunnels: new Map([['vtep1', vxlan(13, '192.0.2.5')]]) }), zones);
  t.equal(elsewhere.locality.datapaths.size, 0, 'a chassis without sw0 locally...');
  t.match(text(portBindingFlows(elsewhere, pb(elsewhere, vtepPort))), [/^table=0, priority=110, /], '...still has the ramp entry, as physical_run makes it for every vtep port');
});

t.test('an HA group\'s bundle over VXLAN tunnels; members with mixed encapsulations get none', async (t) => {
  const rows = withHaGroup(30, U(3, 0xc));
  const c = context(rows, smallView({ tunnels: new Map([['hv2', vxlan(10, '192.0.2.2')], ['hv3', vxlan(11, '192.0.2.3')]]) }), zones);
  t.same(text(portBindingFlows(c, pb(c, U(30, 0xa)))), [
    'table=39, priority=100, cookie=0xa, metadata=0x2,reg15=0x7 actions=load:0x7002->tun_id[0..23],bundle(eth_src,0,active_backup,ofport,members:11,10)',
  ]);
  const mixed = context(rows, smallView({ tunnels: new Map([['hv2', vxlan(10, '192.0.2.2')], ['hv3', { ofport: 11, type: 'geneve', remoteIp: '192.0.2.3' }]]) }), zones);
  t.same(portBindingFlows(mixed, pb(mixed, U(30, 0xa))), [], 'one member over Geneve, one over VXLAN: no flow, as ovn-controller');
});

t.test('a router joined by patch ports: table 65 clones into the peer datapath with its zones', async (t) => {
  const c = context(smallTopology(), smallView(), zones);
  const clear = 'set_field:0->reg10,set_field:0->reg15,' + Array.from({ length: 10 }, (_, i) => `set_field:0->reg${i}`).join(',');
  t.same(text(portBindingFlows(c, pb(c, ids.rpSw0))), [
    'table=40, priority=100, cookie=0xa, metadata=0x1,reg15=0x4 actions=set_field:0x14->reg11,set_field:0x15->reg12,resubmit(,41)',
    'table=41, priority=100, cookie=0xa, metadata=0x1,reg10=0/0x1,reg14=0x4,reg15=0x4 actions=drop',
    `table=64, priority=100, cookie=0xa, metadata=0x1,reg10=0x1/0x1,reg15=0x4 actions=${HAIRPIN}`,
    'table=65, priority=100, cookie=0xa, metadata=0x1,reg15=0x4 actions=clone(ct_clear,set_field:0->reg11,set_field:0->reg12,set_field:0->reg13,'
      + `set_field:0x16->reg11,set_field:0x17->reg12,set_field:0x2->metadata,set_field:0x1->reg14,${clear},resubmit(,8))`,
  ]);
  t.match(text(portBindingFlows(c, pb(c, ids.lrpSw0))), [/table=40/, /table=41/, /table=64/,
    /table=65, .*metadata=0x2,reg15=0x1 actions=clone\(.*set_field:0x14->reg11,set_field:0x15->reg12,set_field:0x1->metadata,set_field:0x4->reg14,/]);
  const orphan = context([...smallTopology().filter(([, r]) => r._uuid !== ids.lrpSw0)], smallView(), zones);
  t.same(portBindingFlows(orphan, pb(orphan, ids.rpSw0)), [], 'a patch port without its peer has no flows');
});

t.test('a localnet switch: tagged and untagged entry, exit through the patch port, remote ports through it', async (t) => {
  const c = context(smallTopology(), smallView(), zones);
  const meta = 'set_field:0xd->reg13,set_field:0x18->reg11,set_field:0x19->reg12,set_field:0x3->metadata,set_field:0x1->reg14';
  t.same(text(portBindingFlows(c, pb(c, ids.lnPub))), [
    'table=40, priority=100, cookie=0xa, metadata=0x3,reg15=0x1 actions=set_field:0xd->reg13,set_field:0x18->reg11,set_field:0x19->reg12,resubmit(,41)',
    'table=41, priority=100, cookie=0xa, metadata=0x3,reg10=0/0x1,reg14=0x1,reg15=0x1 actions=drop',
    `table=64, priority=100, cookie=0xa, metadata=0x3,reg10=0x1/0x1,reg15=0x1 actions=${HAIRPIN}`,
    `table=0, priority=100, cookie=0xa, vlan_tci=0x1000/0x1fff,in_port=0x14/0xffffffff actions=pop_vlan,${meta},resubmit(,8)`,
    `table=0, priority=100, cookie=0xa, vlan_tci=0/0x1000,in_port=0x14/0xffffffff actions=${meta},resubmit(,8)`,
    `table=0, priority=180, cookie=0xa, conj_id=100,vlan_tci=0/0x1000,in_port=0x14/0xffffffff actions=${meta},set_field:00:00:00:00:ff:02->eth_src,resubmit(,8)`,
    'table=0, priority=180, cookie=0xa, vlan_tci=0/0x1000 actions=conjunction(100,2/2)',
    'table=65, priority=100, cookie=0xa, metadata=0x3,reg15=0x1 actions=output:20',
    'table=41, priority=160, cookie=0xa, metadata=0x3,reg10=0x400/0x400,reg15=0x1 actions=drop',
    'table=41, priority=160, cookie=0xa, metadata=0x3,reg10=0x10/0x10,reg15=0x1 actions=drop',
  ]);
  t.same(text(portBindingFlows(c, pb(c, ids.ext1))), [
    'table=40, priority=100, cookie=0xa, metadata=0x3,reg15=0x3 actions=set_field:0x1->reg15,resubmit(,40)',
  ], 'a port on another chassis of a bridged switch is reached through the localnet port, not a tunnel');
  // A VLAN network: tagged entry at 150 only, and tagged exit.
  const tagged = smallTopology().map(([tb, r]): [string, Row] => (r._uuid === ids.lnPub
    ? [tb, port(ids.lnPub, ids.pub, 'ln-pub', 1, { type: 'localnet', options: { network_name: 'physnet' }, tag: 7 })] : [tb, r]));
  const v = context(tagged, smallView(), zones);
  const flows = text(portBindingFlows(v, pb(v, ids.lnPub)));
  t.ok(flows.includes(`table=0, priority=150, cookie=0xa, vlan_tci=0x1007/0x1fff,in_port=0x14/0xffffffff actions=pop_vlan,${meta},resubmit(,8)`));
  t.notOk(flows.some((l) => l.includes('vlan_tci=0/0x1000,in_port')), 'no untagged entry on a VLAN network');
  t.ok(flows.includes('table=65, priority=100, cookie=0xa, metadata=0x3,reg15=0x1 actions=push_vlan:0x8100,set_field:0x1007/0x1fff->vlan_tci,output:20,pop_vlan'));
});

/**
 * The userdata of the table-38 flows the real ovn-controller 23.03.1 installed for a multichassis
 * port whose interface MTU is 1500, tunnelled over Geneve and IPv4 (dumped by ovs-ofctl in
 * tests/agent/multichassis-pmtu-vs-ovn-controller): icmp4 / icmp6 (opcode 10, paused) with the
 * nested actions, the frag MTU 1424 (0x590) in 16 or 32 bits.
 */
const OVN_PMTU_USERDATA = {
  ip4: '00.00.00.0a.00.00.00.00.00.19.00.10.00.01.13.08.00.00.00.00.00.00.00.02.00.19.00.10.00.01.15.08.00.00.00.01.00.00.00.01.'
    + 'ff.ff.00.18.00.00.23.20.00.1b.00.00.00.00.02.06.00.30.00.00.00.00.00.00.ff.ff.00.18.00.00.23.20.00.1b.00.00.00.00.04.06.00.30.00.00.00.00.00.00.'
    + 'ff.ff.00.18.00.00.23.20.00.1c.00.00.00.00.02.06.00.30.00.00.00.00.00.00.ff.ff.00.18.00.00.23.20.00.1c.00.00.00.00.04.06.00.30.00.00.00.00.00.00.'
    + 'ff.ff.00.18.00.00.23.20.00.1b.00.00.00.00.10.04.00.20.00.00.00.00.00.00.ff.ff.00.18.00.00.23.20.00.1b.00.00.00.00.0e.04.00.20.00.00.00.00.00.00.'
    + 'ff.ff.00.18.00.00.23.20.00.1c.00.00.00.00.10.04.00.20.00.00.00.00.00.00.ff.ff.00.18.00.00.23.20.00.1c.00.00.00.00.0e.04.00.20.00.00.00.00.00.00.'
    + '00.17.00.08.ff.00.00.00.00.19.00.10.80.00.26.01.03.00.00.00.00.00.00.00.00.19.00.10.80.00.28.01.04.00.00.00.00.00.00.00.'
    + 'ff.ff.00.28.00.00.23.20.00.25.00.00.00.00.00.00.00.03.00.0e.00.00.00.0d.00.00.00.00.05.90.00.00.00.04.00.04.00.00.00.00.'
    + 'ff.ff.00.10.00.00.23.20.00.0e.ff.f8.08.00.00.00',
  ip6: '00.00.00.0a.00.00.00.00.00.19.00.10.00.01.13.08.00.00.00.00.00.00.00.02.00.19.00.10.00.01.15.08.00.00.00.01.00.00.00.01.'
    + 'ff.ff.00.18.00.00.23.20.00.1b.00.00.00.00.02.06.00.30.00.00.00.00.00.00.ff.ff.00.18.00.00.23.20.00.1b.00.00.00.00.04.06.00.30.00.00.00.00.00.00.'
    + 'ff.ff.00.18.00.00.23.20.00.1c.00.00.00.00.02.06.00.30.00.00.00.00.00.00.ff.ff.00.18.00.00.23.20.00.1c.00.00.00.00.04.06.00.30.00.00.00.00.00.00.'
    + 'ff.ff.00.18.00.00.23.20.00.1b.00.00.00.01.28.10.00.80.00.00.00.00.00.00.ff.ff.00.18.00.00.23.20.00.1b.00.00.00.01.26.10.00.80.00.00.00.00.00.00.'
    + 'ff.ff.00.18.00.00.23.20.00.1c.00.00.00.01.28.10.00.80.00.00.00.00.00.00.ff.ff.00.18.00.00.23.20.00.1c.00.00.00.01.26.10.00.80.00.00.00.00.00.00.'
    + '00.17.00.08.ff.00.00.00.00.19.00.10.80.00.3a.01.02.00.00.00.00.00.00.00.00.19.00.10.80.00.3c.01.00.00.00.00.00.00.00.00.'
    + 'ff.ff.00.28.00.00.23.20.00.25.00.00.00.00.00.00.00.03.00.10.00.00.00.15.00.00.00.00.00.00.05.90.00.04.00.04.00.00.00.00.'
    + 'ff.ff.00.10.00.00.23.20.00.0e.ff.f8.08.00.00.00',
} as const;

t.test('a multichassis port on a localnet switch: tunnelled to ports reached through the localnet, its packets too big for the tunnels answered', async (t) => {
  // vm4 (pub, key 4) is bound here and on hv2; ext1 (key 3) is on hv2, reached through the localnet.
  const vm4 = U(30, 0xa);
  const rows: [string, Row][] = [...smallTopology(), ['Port_Binding', port(vm4, ids.pub, 'vm4', 4, { chassis: ids.hv1, additional_chassis: [ids.hv2] })]];
  const view = (over: Partial<LocalView> = {}): LocalView => smallView({ vifs: new Map([['vif1', 1], ['vif2', 2], ['vm4', 4]]), vifMtus: new Map([['vm4', 1500]]), ...over });
  const c = context(rows, view(), zones);
  const flows = portBindingFlows(c, pb(c, ids.ext1));
  const nested = text(flows.filter((f) => f.table === 38)).map((l) => l.replace(/ actions=.*/, ''));
  t.same(text(flows.filter((f) => f.table !== 38)), [
    'table=40, priority=100, cookie=0xa, metadata=0x3,reg15=0x3 actions=set_field:0x1->reg15,resubmit(,40)',
    'table=39, priority=110, cookie=0xa, metadata=0x3,reg14=0x4,reg15=0x3 actions=load:0x3->tun_id[0..23],load:0x3->tun_metadata0[0..31],'
      + 'move:NXM_NX_REG14[0..14]->tun_metadata0[16..30],output:10',
    // 1500 less Geneve's 38 bytes and an IPv4 header's 20.
    'table=37, priority=100, cookie=0xa, metadata=0x3,reg14=0x4,dl_type=0x800 actions=check_pkt_larger(1442)->NXM_NX_REG9[1],resubmit(,38)',
    'table=37, priority=100, cookie=0xa, metadata=0x3,reg15=0x4,dl_type=0x800 actions=check_pkt_larger(1442)->NXM_NX_REG9[1],resubmit(,38)',
    'table=37, priority=100, cookie=0xa, metadata=0x3,reg14=0x4,dl_type=0x86dd actions=check_pkt_larger(1442)->NXM_NX_REG9[1],resubmit(,38)',
    'table=37, priority=100, cookie=0xa, metadata=0x3,reg15=0x4,dl_type=0x86dd actions=check_pkt_larger(1442)->NXM_NX_REG9[1],resubmit(,38)',
  ], 'the tunnel flow, and the large-packet checks from and to vm4, in ext1\'s name');
  t.same(nested, [
    'table=38, priority=100, cookie=0xa, metadata=0x3,reg9=0x2/0x2,reg14=0x4,dl_type=0x800',
    'table=38, priority=100, cookie=0xa, metadata=0x3,reg9=0x2/0x2,reg15=0x4,dl_type=0x800',
    'table=38, priority=100, cookie=0xa, metadata=0x3,reg9=0x2/0x2,reg14=0x4,dl_type=0x86dd',
    'table=38, priority=100, cookie=0xa, metadata=0x3,reg9=0x2/0x2,reg15=0x4,dl_type=0x86dd',
  ]);
  const userdata = flows.filter((f) => f.table === 38).map((f) => formatActions(f.actions, { encodeNested: encodeActions }));
  t.same(userdata, [OVN_PMTU_USERDATA.ip4, OVN_PMTU_USERDATA.ip4, OVN_PMTU_USERDATA.ip6, OVN_PMTU_USERDATA.ip6].map((u) => `controller(userdata=${u},pause)`),
    'the ICMP errors\' controller actions are ovn-controller\'s, byte for byte');
  const pmtu = (over: Partial<LocalView>, rs: [string, Row][] = rows): FlowSpec[] => {
    const x = context(rs, view(over), zones);
    return portBindingFlows(x, pb(x, ids.ext1)).filter((f) => f.table === 37 || f.table === 38);
  };
  t.same(pmtu({ vifMtus: new Map() }), [], 'no MTU reported for vm4\'s interface: no path MTU flows (the tunnel flow stays)');
  t.same(pmtu({ tunnels: new Map([['hv2', { ofport: 10, type: 'vxlan', remoteIp: '192.0.2.2' }]]) }).map((f) => f.actions[0]).filter((a) => a?.kind === 'check_pkt_larger').map((a) => a.pktLen),
    [1450, 1450, 1450, 1450], 'VXLAN: 30 bytes and the IPv4 header');
  t.same(pmtu({ tunnels: new Map([['hv2', { ofport: 10, type: 'geneve', remoteIp: 'fd00::2' }]]) }).map((f) => f.actions[0]).filter((a) => a?.kind === 'check_pkt_larger').map((a) => a.pktLen),
    [1422, 1422, 1422, 1422], 'Geneve over IPv6: 38 bytes and the IPv6 header');
  const elsewhere = rows.map(([tb, r]): [string, Row] => (r._uuid === vm4 ? [tb, port(vm4, ids.pub, 'vm4', 4, { chassis: U(3, 0xc), additional_chassis: [ids.hv2] })] : [tb, r]));
  t.same(pmtu({}, elsewhere), [], 'vm4 bound on other chassis only: its interface here is not its, no path MTU flows');
  const additional = rows.map(([tb, r]): [string, Row] => (r._uuid === vm4 ? [tb, port(vm4, ids.pub, 'vm4', 4, { chassis: ids.hv2, additional_chassis: [ids.hv1] })] : [tb, r]));
  t.equal(pmtu({}, additional).length, 8, 'vm4 held here as an additional chassis: the flows are there');
});

t.test('the effective MTU: the largest tunnel overhead taken off, in 16 bits as ovn-controller computes it', async (t) => {
  t.equal(effectiveMtu(1500, []), 0, 'no tunnel: no flows');
  t.equal(effectiveMtu(1500, [{ type: 'vxlan', ipv6: false }, { type: 'geneve', ipv6: false }]), 1442, 'the largest of Geneve (58) and VXLAN (50)');
  t.equal(effectiveMtu(1500, [{ type: 'vxlan', ipv6: true }, { type: 'geneve', ipv6: false }]), 1430, 'VXLAN over IPv6 (70) beats Geneve over IPv4');
  t.equal(effectiveMtu(58, [{ type: 'geneve', ipv6: false }]), 0, 'an MTU of just the overhead leaves 0: no flows');
  t.equal(effectiveMtu(50, [{ type: 'geneve', ipv6: false }]), 65528, 'below the overhead it wraps around, as uint16_t arithmetic does');
  const f = pathMtuFlows(1, 2, 16, 0n).find((x) => x.table === 38);
  const op = f?.actions[0];
  const frag = op?.kind === 'controller_op' ? op.nested.find((a) => a.kind === 'controller') : undefined;
  t.same(frag?.kind === 'controller' ? [...frag.userdata.subarray(8)] : undefined, [0xff, 0xfe], 'an MTU under the Ethernet overhead wraps in the ICMP error too');
});

t.test('multicast groups: local members in 40, patch ports and each remote chassis once in 39', async (t) => {
  const hv3 = U(3, 0xc);
  const rows = [...smallTopology().filter(([tb]) => tb !== 'Multicast_Group'),
    ['Chassis', chassis(hv3, 'hv3')] as [string, Row],
    ['Port_Binding', port(U(30, 0xa), ids.sw0, 'vif4', 5, { chassis: ids.hv2 })] as [string, Row],
    ['Port_Binding', port(U(31, 0xa), ids.sw0, 'vif5', 6, { chassis: hv3 })] as [string, Row],
    ['Multicast_Group', multicastGroup(ids.flood, ids.sw0, '_MC_flood', 32768, [ids.vif1, ids.vif2, ids.vif3, ids.rpSw0, U(30, 0xa), U(31, 0xa)])] as [string, Row],
  ];
  const view = smallView({ tunnels: new Map([['hv2', { ofport: 10, type: 'geneve', remoteIp: '192.0.2.2' }], ['hv3', { ofport: 11, type: 'geneve', remoteIp: '192.0.2.3' }]]) });
  const c = context(rows, view, zones);
  const mc = c.store.multicastGroup(ids.flood) as sb.Multicast_Group;
  t.same(text(multicastGroupFlows(c, mc)), [
    'table=40, priority=100, cookie=0xe, metadata=0x1,reg15=0x8000 actions=set_field:0xb->reg13,set_field:0x1->reg15,resubmit(,41),'
      + 'set_field:0xc->reg13,set_field:0x2->reg15,resubmit(,41),set_field:0x8000->reg15',
    'table=39, priority=100, cookie=0xe, metadata=0x1,reg15=0x8000 actions=set_field:0x4->reg15,resubmit(,41),set_field:0x8000->reg15,'
      + 'load:0x1->tun_id[0..23],load:0x8000->tun_metadata0[0..31],move:NXM_NX_REG14[0..14]->tun_metadata0[16..30],output:10,output:11,resubmit(,40)',
  ], 'vif3 and vif4 share hv2: one output to it; one encapsulation for both tunnels');
  const pubMc = context(smallTopology(), smallView(), zones);
  t.same(text(multicastGroupFlows(pubMc, pubMc.store.multicastGroup(ids.floodPub) as sb.Multicast_Group)), [
    'table=40, priority=100, cookie=0xe, metadata=0x3,reg15=0x8000 actions=set_field:0xd->reg13,set_field:0x1->reg15,resubmit(,41),set_field:0x8000->reg15',
    'table=39, priority=100, cookie=0xe, metadata=0x3,reg15=0x8000 actions=set_field:0x2->reg15,resubmit(,41),set_field:0x8000->reg15,resubmit(,40)',
  ], 'a bridged switch reaches other chassis through its localnet port, never by tunnel');
});

t.test('containers and localports', async (t) => {
  const rows = [...smallTopology(),
    ['Port_Binding', port(U(40, 0xa), ids.sw0, 'c1', 7, { parent_port: 'vif1', tag: 42, chassis: ids.hv1 })] as [string, Row],
    ['Port_Binding', port(U(41, 0xa), ids.sw0, 'lp', 8, { type: 'localport' })] as [string, Row],
  ];
  const c = context(rows, smallView({ vifs: new Map([['vif1', 1], ['vif2', 2], ['lp', 5]]) }), new Map([...zones, ['c1', 14], ['lp', 15]]));
  const c1 = text(portBindingFlows(c, pb(c, U(40, 0xa))));
  t.ok(c1.includes(`table=64, priority=100, cookie=0, metadata=0x1,reg10=0x20/0x20,reg15=0x1 actions=${HAIRPIN}`), 'the parent gets the nested-container hairpin');
  t.ok(c1.includes(`table=64, priority=100, cookie=0xa, metadata=0x1,reg15=0x7 actions=${HAIRPIN}`), 'a container hairpins without the loopback flag');
  t.ok(c1.includes('table=0, priority=150, cookie=0xa, vlan_tci=0x102a/0x1fff,in_port=0x1/0xffffffff actions=load:0x1->NXM_NX_REG10[5],pop_vlan,'
    + 'set_field:0xe->reg13,set_field:0x14->reg11,set_field:0x15->reg12,set_field:0x1->metadata,set_field:0x7->reg14,resubmit(,8)'));
  t.ok(c1.includes('table=65, priority=100, cookie=0xa, metadata=0x1,reg15=0x7 actions=push_vlan:0x8100,set_field:0x102a/0x1fff->vlan_tci,output:1,pop_vlan'));
  const lp = text(portBindingFlows(c, pb(c, U(41, 0xa))));
  t.ok(lp.some((l) => l.startsWith('table=0, priority=100, cookie=0xa, in_port=0x5/0xffffffff') && l.includes('set_field:0x8->reg14,load:0x1->NXM_NX_REG10[10],resubmit(,8)')),
    'traffic from a localport is flagged');
  t.ok(lp.includes('table=39, priority=150, cookie=0xa, metadata=0x1,reg14=0x8 actions=resubmit(,40)'), 'and never tunnelled');
});

t.test('MAC bindings (tables 66/67) and FDB (71/72) for local datapaths only', async (t) => {
  const rows = [...smallTopology(),
    ['MAC_Binding', macBinding(U(50, 0xb), ids.lr0, 'lrp-pub', '172.16.0.9', '0a:00:00:00:00:09')] as [string, Row],
    ['MAC_Binding', macBinding(U(51, 0xb), ids.lr0, 'lrp-pub', 'fd00::9', '0a:00:00:00:00:0a')] as [string, Row],
    ['Static_MAC_Binding', staticMacBinding(U(52, 0xb), ids.lr0, 'lrp-sw0', '10.0.0.7', '0a:00:00:00:00:07', true)] as [string, Row],
    ['MAC_Binding', macBinding(U(53, 0xb), ids.sw9, 'vif9', '10.9.0.1', '0a:00:00:00:00:0b')] as [string, Row],
  ];
  const c = context(rows, smallView(), zones);
  const mb = (u: string): { _uuid: string; logical_port: string; ip: string; mac: string } => c.store.get('MAC_Binding', u) ?? c.store.get('Static_MAC_Binding', u) as sb.MAC_Binding;
  t.same(text(neighborFlows(c, mb(U(50, 0xb)), 100)), [
    'table=66, priority=100, cookie=0xb, metadata=0x2,reg0=0xac100009,reg15=0x2 actions=set_field:0a:00:00:00:00:09->eth_dst,load:0x1->NXM_NX_REG10[6]',
    'table=67, priority=100, cookie=0xb, metadata=0x2,reg0=0xac100009,reg14=0x2,dl_src=0a:00:00:00:00:09,dl_type=0x806 actions=load:0x1->NXM_NX_REG10[6]',
  ]);
  t.match(text(neighborFlows(c, mb(U(51, 0xb)), 100)), [
    /table=66, priority=100, .*metadata=0x2,reg0=0xfd000000,reg1=0,reg2=0,reg3=0x9,reg15=0x2 actions=set_field:0a:00:00:00:00:0a->eth_dst/,
    /table=67, priority=100, .*metadata=0x2,reg0=0xfd000000,reg1=0,reg2=0,reg3=0x9,reg14=0x2,dl_src=0a:00:00:00:00:0a,dl_type=0x86dd,nw_proto=58,icmpv6_code=0 /,
  ]);
  t.match(text(neighborFlows(c, mb(U(52, 0xb)), 150)), [/table=66, priority=150, .*reg15=0x1 /, /table=67, priority=150/]);
  t.same(neighborFlows(c, mb(U(53, 0xb)), 100), [], 'a binding in a datapath that is not local');
  t.same(text(fdbFlows(c, fdb(U(54, 0xb), 1, 2, '0a:00:00:00:00:22') as unknown as sb.FDB)), [
    'table=71, priority=100, cookie=0xb, metadata=0x1,dl_dst=0a:00:00:00:00:22 actions=set_field:0x2->reg15',
    'table=72, priority=100, cookie=0xb, metadata=0x1,reg14=0x2,dl_src=0a:00:00:00:00:22 actions=load:0x1->NXM_NX_REG10[8]',
  ]);
  t.same(fdbFlows(c, fdb(U(55, 0xb), 9, 1, '0a:00:00:00:00:23') as unknown as sb.FDB), []);
});

t.test('the fixed flows of the physical tables', async (t) => {
  t.same(defaultFlows().map((f) => formatFlow(f)), [
    'table=0, priority=0 actions=drop',
    'table=37, priority=0 actions=resubmit(,39)',
    'table=38, priority=10, reg10=0x1/0x1 actions=resubmit(,40)',
    'table=38, priority=0 actions=resubmit(,39)',
    'table=39, priority=150, reg10=0x2/0x3 actions=resubmit(,40)',
    'table=39, priority=150, reg10=0x10/0x10 actions=resubmit(,40)',
    'table=39, priority=0 actions=resubmit(,40)',
    'table=40, priority=0 actions=drop',
    `table=41, priority=0 actions=${Array.from({ length: 10 }, (_, i) => `set_field:0->reg${i}`).join(',')},resubmit(,42)`,
    'table=64, priority=0 actions=resubmit(,65)',
    'table=65, priority=0 actions=drop',
  ]);
});

t.test('ct zones: every local port and datapath, stable across changes, requested SNAT zones honoured', async (t) => {
  const c = context(smallTopology(), smallView());
  const users = ctZoneUsers(c.store, c.chassisUuid, c.view, c.locality);
  t.same([...users.users].sort(), ['ln-pub', 'vif1', 'vif2', ...[ids.sw0, ids.lr0, ids.pub].flatMap((d) => [dnatZoneKey(d), snatZoneKey(d)])].sort());
  const first = assignCtZones(new Map(), users);
  t.same([...first.values()].sort((a, b) => a - b), [1, 2, 3, 4, 5, 6, 7, 8, 9], 'lowest zones, zone 0 never');
  t.same(assignCtZones(new Map(), users), first, 'deterministic');
  // vif1 leaves, a new port arrives: everyone else keeps their zone, the newcomer takes the free one.
  const next = assignCtZones(first, { users: new Set([...users.users].filter((u) => u !== 'vif1').concat('vif7')), requested: new Map() });
  for (const [k, v] of first) if (k !== 'vif1') t.equal(next.get(k), v, `${k} keeps zone ${v}`);
  t.equal(next.get('vif7'), first.get('vif1'));
  t.notOk(next.has('vif1'));
  // A router asks for SNAT zone 4, which vif-something holds: it gets it, the holder moves.
  const holder = [...first].find(([, z]) => z === 4)?.[0] as string;
  const req = assignCtZones(first, { users: users.users, requested: new Map([[snatZoneKey(ids.lr0), 4]]) });
  t.equal(req.get(snatZoneKey(ids.lr0)), 4);
  if (holder !== snatZoneKey(ids.lr0)) t.not(req.get(holder), 4, 'the previous holder gave it up');
  t.equal(new Set(req.values()).size, req.size, 'no zone is shared');
  const rows = smallTopology().map(([tb, r]): [string, Row] => (r._uuid === ids.lr0 ? [tb, datapath(ids.lr0, 2, 'router', { 'snat-ct-zone': '100' })] : [tb, r]));
  const rc = context(rows, smallView());
  t.equal(ctZoneUsers(rc.store, rc.chassisUuid, rc.view, rc.locality).requested.get(snatZoneKey(ids.lr0)), 100, 'read from external_ids:snat-ct-zone');
});

t.test('port security (tables 73-75): in by source MAC and IPs, ARP and ND checked, out by destination', async (t) => {
  const secured = port(ids.vif1, ids.sw0, 'vif1', 1, { chassis: ids.hv1 });
  const withPs = (r: Row, ps: string[]): Row => ({ ...r, port_security: ps }) as unknown as Row;
  const rows = smallTopology().map(([tb, r]): [string, Row] => (r._uuid === ids.vif1 ? [tb, withPs(secured, ['00:00:00:00:00:01 10.0.0.1 fd00::1'])]
    : r._uuid === ids.vif3 ? [tb, withPs(r, ['00:00:00:00:00:03'])] : [tb, r]));
  const c = context(rows, smallView(), zones);
  const ps = text(portBindingFlows(c, pb(c, ids.vif1))).filter((l) => /^table=7[345],/.test(l));
  const perTable = (n: number): number => ps.filter((l) => l.startsWith(`table=${n},`)).length;
  t.same([perTable(73), perTable(74), perTable(75)], [9, 10, 10]);
  const has = (line: string): void => {
    t.ok(ps.includes(line), line);
  };
  has('table=73, priority=80, cookie=0xa, metadata=0x1,reg14=0x1 actions=load:0x1->NXM_NX_REG10[12]');
  has('table=73, priority=90, cookie=0xa, metadata=0x1,reg14=0x1,dl_src=00:00:00:00:00:01,dl_type=0x800,nw_src=10.0.0.1 actions=load:0->NXM_NX_REG10[12]');
  has('table=73, priority=90, cookie=0xa, metadata=0x1,reg14=0x1,dl_src=00:00:00:00:00:01,dl_type=0x800,nw_proto=17,nw_src=0.0.0.0,nw_dst=255.255.255.255,udp_src=68,udp_dst=67 actions=load:0->NXM_NX_REG10[12]');
  has('table=74, priority=90, cookie=0xa, metadata=0x1,reg14=0x1,dl_src=00:00:00:00:00:01,dl_type=0x806,arp_spa=10.0.0.1,arp_sha=00:00:00:00:00:01 actions=load:0->NXM_NX_REG10[12]');
  // OVN's neighbour-discovery flows carry over fields of the previous flow, and its hop limit
  // of 225; an advertisement's flow never names a source link-layer address.
  has('table=74, priority=90, cookie=0xa, metadata=0x1,reg14=0x1,dl_type=0x86dd,nw_proto=58,nw_ttl=225,icmpv6_type=136,icmpv6_code=0,nd_target=fe80::200:ff:fe00:1,nd_tll=00:00:00:00:00:01 actions=load:0->NXM_NX_REG10[12]');
  has('table=75, priority=95, cookie=0xa, metadata=0x1,reg15=0x1,dl_dst=00:00:00:00:00:01,dl_type=0x800,nw_dst=224.0.0.0/4 actions=load:0->NXM_NX_REG10[12]');
  has('table=75, priority=95, cookie=0xa, metadata=0x1,reg15=0x1,dl_dst=00:00:00:00:00:01,dl_type=0x86dd,ipv6_dst=ff00::/8 actions=load:0->NXM_NX_REG10[12]');
  t.same(text(portBindingFlows(c, pb(c, ids.vif3))).filter((l) => /^table=7[345],/.test(l)), [], 'a port bound elsewhere: its chassis checks it');
  const subnet = parsePortSecurity('00:00:00:00:00:c1 10.0.0.0/24 10.0.1.5/24 fd00:1::/64 bogus');
  t.same(subnet && { ip4: subnet.ip4.map((a) => `${a.addr.toString(16)}/${a.plen}`), ip6: subnet.ip6.map((a) => a.plen) }, { ip4: ['a000000/24', 'a000105/24'], ip6: [64] });
  t.equal(parsePortSecurity('10.0.0.1'), undefined, 'no MAC first: ignored, as OVN does');
});

t.test('virtual ports: no interface of their own; bound elsewhere, reached over the tunnel; port security through the parent', async (t) => {
  // vip on sw0, claimed here through vif1 (pinctrl): an interface named after it attaches nothing
  // (ovn-controller finds no primary binding for it), and without a localnet port nothing
  // reaches it; traffic of the VIP is vif1's own.
  const vip = U(30, 0xa);
  const rows = (o: Parameters<typeof port>[4]): [string, Row][] => [...smallTopology(), ['Port_Binding', port(vip, ids.sw0, 'vip', 30, { type: 'virtual', ...o })]];
  const here = context(rows({ chassis: ids.hv1, virtual_parent: 'vif1' }), smallView({ vifs: new Map([['vif1', 1], ['vif2', 2], ['vip', 7]]) }), zones);
  t.same(portBindingFlows(here, pb(here, vip)), [], 'bound here: no flows of its own');
  const elsewhere = context(rows({ chassis: ids.hv2, virtual_parent: 'vif3' }), smallView(), zones);
  t.same(text(portBindingFlows(elsewhere, pb(elsewhere, vip))), [
    'table=39, priority=100, cookie=0xa, metadata=0x1,reg15=0x1e actions=load:0x1->tun_id[0..23],load:0x1e->tun_metadata0[0..31],move:NXM_NX_REG14[0..14]->tun_metadata0[16..30],output:10,resubmit(,40)',
  ], 'bound to hv2: over the tunnel, as any remote port');
  // With port security, the parent's interface here gives it the port security flows (matched on
  // its logical port, not on an OpenFlow port).
  const secured = context(rows({ chassis: ids.hv1, virtual_parent: 'vif1', port_security: ['00:00:00:00:00:64 10.0.0.100'] }), smallView(), zones);
  const sec = text(portBindingFlows(secured, pb(secured, vip)));
  t.ok(sec.length > 0 && sec.every((l) => /table=7[345],/.test(l)), 'only port security flows (tables 73-75)');
  t.ok(sec.some((l) => l.includes('reg14=0x1e,dl_src=00:00:00:00:00:64')), 'checked on the virtual port\'s own key');
  const parentGone = context(rows({ chassis: ids.hv1, virtual_parent: 'vif1', port_security: ['00:00:00:00:00:64 10.0.0.100'] }), smallView({ vifs: new Map([['vif2', 2]]) }), zones);
  t.same(portBindingFlows(parentGone, pb(parentGone, vip)), [], 'its parent\'s interface gone: none');
  // A conntrack zone, as every port bound here.
  t.ok(ctZoneUsers(here.store, here.chassisUuid, here.view, here.locality).users.has('vip'), 'a conntrack zone user');
});
