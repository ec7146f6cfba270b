// Goal: a chassis runs the BFD rows of the router ports whose traffic leaves through it, as
// ovn-controller 23.03 picks them — an l3gateway port bound here (not elsewhere), a distributed
// gateway port whose cr- port is resident here (bound here, or this chassis the active member of
// its HA group by the live tunnels), never a port without an existing peer — and takes the
// session's source from the port's addresses of the next hop's family.
// Method: SB rows through the agent's real SbStore, asked from each chassis with several sets
// of live tunnels.

import t from 'tap';
import { SbStore } from '../../agent/flows/sb-store.js';
import { bfdSessionSpecs, bfdSource, type BfdSessionSpec } from '../../agent/pinctrl/bfd-specs.js';
import { ipText } from '../../agent/pinctrl/svc-probe.js';
import type { Row } from '../../ovsdb/index.js';
import { chassis, datapath, haChassis, haChassisGroup, ids, port, resetOf, smallTopology, U } from './flows-fixtures.js';

const hv3 = U(3, 0xc);
const lrGw = U(20, 0xd);
const group = U(1, 0xf);
const CR = U(30, 0xa);

function bfd(n: number, logicalPort: string, dstIp: string, over: Record<string, unknown> = {}): [string, Row] {
  return ['BFD', {
    _uuid: U(n, 0xb), _version: U(n, 0xb), src_port: 49152 + n, disc: 1000 + n, logical_port: logicalPort, dst_ip: dstIp,
    min_tx: 1000, min_rx: 1000, detect_mult: 5, status: 'down', external_ids: new Map(), options: new Map(), ...over,
  } as unknown as Row];
}

/** The small topology, a gateway router on hv1 and one on hv2, lrp-pub distributed with an HA group. */
function topology(crChassis: string | undefined, extra: [string, Row][] = []): [string, Row][] {
  const members = [U(1, 0x9), U(2, 0x9)];
  return [
    ...smallTopology(),
    ['Chassis', chassis(hv3, 'hv3')],
    ['Datapath_Binding', datapath(lrGw, 5, 'router')],
    ['Port_Binding', port(U(20, 0xa), lrGw, 'lrp-gw', 1, { type: 'l3gateway', chassis: ids.hv1, options: { peer: 'rp-gw' }, mac: ['junk', '00:00:00:00:ff:10 172.16.1.1/24 fd00:1::1/64'] })],
    ['Port_Binding', port(U(21, 0xa), ids.pub, 'rp-gw', 9, { type: 'l3gateway', chassis: ids.hv1, options: { peer: 'lrp-gw' } })],
    ['Port_Binding', port(U(22, 0xa), lrGw, 'lrp-gw2', 2, { type: 'l3gateway', chassis: ids.hv2, options: { peer: 'rp-gw' }, mac: ['00:00:00:00:ff:11 172.16.2.1/24'] })],
    ['Port_Binding', port(U(23, 0xa), lrGw, 'lrp-nopeer', 3, { type: 'l3gateway', chassis: ids.hv1, mac: ['00:00:00:00:ff:12 172.16.3.1/24'] })],
    ['Port_Binding', port(U(24, 0xa), lrGw, 'lrp-ghost', 4, { type: 'l3gateway', chassis: ids.hv1, options: { peer: 'no-such-port' }, mac: ['00:00:00:00:ff:13 172.16.4.1/24'] })],
    ['Port_Binding', port(U(25, 0xa), lrGw, 'lrp-v4', 5, { type: 'l3gateway', chassis: ids.hv1, options: { peer: 'rp-gw' }, mac: ['00:00:00:00:ff:14 172.16.5.1/24'] })],
    ['Port_Binding', port(CR, ids.lr0, 'cr-lrp-pub', 7, {
      type: 'chassisredirect', ha_chassis_group: group, options: { 'distributed-port': 'lrp-pub' }, ...(crChassis === undefined ? {} : { chassis: crChassis }),
    })],
    ['HA_Chassis', haChassis(members[0] as string, 'hv1', 20)],
    ['HA_Chassis', haChassis(members[1] as string, 'hv2', 10)],
    ['HA_Chassis_Group', { ...haChassisGroup(group, 'g', members), ref_chassis: [hv3] } as unknown as Row],
    bfd(1, 'lrp-gw', '172.16.1.254'),
    bfd(2, 'lrp-gw2', '172.16.2.254'),
    bfd(3, 'lrp-pub', '172.16.0.254', { status: 'admin_down', min_tx: 300, min_rx: 200, detect_mult: 3 }),
    bfd(4, 'lrp-nopeer', '172.16.3.254'),
    bfd(5, 'lrp-ghost', '172.16.4.254'),
    bfd(6, 'lrp-gw', 'fd00:1:0:0::fe'),
    bfd(7, 'no-such-port', '172.16.9.254'),
    ...extra,
  ];
}

function specsOf(rows: [string, Row][], chassisName: string, activeTunnels?: ReadonlySet<string>): { specs: BfdSessionSpec[]; skipped: readonly string[] } {
  const store = new SbStore();
  store.apply(resetOf(rows));
  return bfdSessionSpecs(store, store.chassisByName(chassisName)?._uuid, activeTunnels);
}

const ports = (s: readonly BfdSessionSpec[]): string[] => s.map((x) => `${x.logicalPort}>${ipText(x.endpoints.dst)}`);

t.test('which rows a chassis runs', async (t) => {
  const rows = topology(ids.hv1);
  t.same(ports(specsOf(rows, 'hv1').specs), ['lrp-gw>172.16.1.254', 'lrp-pub>172.16.0.254', 'lrp-gw>fd00:1::fe'],
    'hv1: its gateway router port (both next hops) and the distributed port whose cr- port it holds; not hv2\'s gateway port, not a port without a peer or with a missing one');
  t.same(ports(specsOf(rows, 'hv2').specs), ['lrp-gw2>172.16.2.254'], 'hv2: its own gateway router port only; the cr- port is hv1\'s');
  t.same(ports(specsOf(rows, 'hv3').specs), [], 'hv3, a chassis that only uses the group, runs nothing');
  t.same(specsOf(rows, 'hv9').specs, [], 'an unregistered chassis runs nothing');
});

t.test('the cr- port decides where a distributed gateway port\'s sessions run', async (t) => {
  const has = (rows: [string, Row][], chassisName: string, tunnels?: ReadonlySet<string>): boolean =>
    specsOf(rows, chassisName, tunnels).specs.some((s) => s.logicalPort === 'lrp-pub');
  t.equal(has(topology(undefined), 'hv1'), false, 'a cr- port bound nowhere is resident nowhere, even on the active member');
  t.equal(has(topology(ids.hv2), 'hv2'), true, 'bound here: resident here');
  t.equal(has(topology(ids.hv1), 'hv1', new Set(['hv2', 'hv3'])), true, 'hv1 with live tunnels: the highest-priority member alive');
  t.equal(has(topology(ids.hv1), 'hv2', new Set(['hv1', 'hv3'])), false, 'hv2 while hv1 is alive: standby');
  t.equal(has(topology(ids.hv1), 'hv2', new Set(['hv3'])), true, 'hv2 once hv1\'s tunnel is down (hv3 still reachable): active, before the binding moves');
  t.equal(has(topology(ids.hv1), 'hv2', new Set()), false, 'hv2 cut off from everyone: active nowhere');
  const noPeer = topology(ids.hv1).map(([tb, r]): [string, Row] => (r._uuid === ids.lrpPub ? [tb, { ...r, options: new Map() } as unknown as Row] : [tb, r]));
  t.equal(has(noPeer, 'hv1'), false, 'the resident port without a peer: nothing');
});

t.test('a session\'s settings and source', async (t) => {
  const { specs, skipped } = specsOf(topology(ids.hv1, [
    bfd(8, 'lrp-gw', 'not-an-ip'),
    bfd(9, 'lrp-v4', 'fd00:5::fe'),
    bfd(10, 'lrp-gw', '172.16.1.254', { src_port: 49153 }),
    bfd(11, 'lrp-v4', '172.16.5.254/32', { disc: 2 ** 32 + 5, detect_mult: 259 }),
  ]), 'hv1');
  const by = new Map(specs.map((s) => [s.uuid, s]));
  t.match(by.get(U(1, 0xb)), {
    key: '172.16.1.254:49153', logicalPort: 'lrp-gw', dpKey: 5, portKey: 1, disc: 1001, minTxMs: 1000, minRxMs: 1000, detectMult: 5, sbStatus: 'down',
    endpoints: { srcMac: '00:00:00:00:ff:10', src: { kind: 'ipv4', v: 0xac100101 }, srcPort: 49153 },
  }, 'the first entry that parses and has an IPv4 address gives the MAC and the source');
  t.match(by.get(U(6, 0xb)), { endpoints: { src: { kind: 'ipv6' }, dst: { kind: 'ipv6' } } }, 'an IPv6 next hop: the port\'s IPv6 address');
  t.equal(by.get(U(6, 0xb)) === undefined ? '' : ipText(by.get(U(6, 0xb))!.endpoints.src), 'fd00:1::1');
  t.match(by.get(U(3, 0xb)), { dpKey: 2, portKey: 2, minTxMs: 300, minRxMs: 200, detectMult: 3, sbStatus: 'admin_down' }, 'the distributed port in lr0');
  t.match(by.get(U(11, 0xb)), { key: '172.16.5.254:49163', disc: 5, detectMult: 3 }, 'a prefix length on dst_ip is dropped; disc and mult are cut to their C widths');
  t.equal(by.has(U(10, 0xb)), false, 'a second row with the same next hop and source port');
  t.same(skipped.map((x) => x.replace(/^BFD \S+ /, '')), [
    '(not-an-ip via lrp-gw): dst_ip does not parse',
    '(fd00:5::fe via lrp-v4): the port has no IPv6 address',
    '(172.16.1.254 via lrp-gw): another row has the session 172.16.1.254:49153',
  ], 'the rows of this chassis that cannot run, each with why');
});

t.test('bfdSource reads the address entries as extract_lsp_addresses does', async (t) => {
  t.same(bfdSource(['router', '00:00:00:00:ff:01 fd00::1/64', '00:00:00:00:ff:02 10.0.0.1/24 10.0.0.2'], 'ipv4'), { mac: '00:00:00:00:ff:02', ip: { kind: 'ipv4', v: 0x0a000001 } },
    'an entry without a MAC is skipped, and so is one without an address of the family');
  t.same(bfdSource(['00:00:00:00:ff:01 10.0.0.1 junk fd00::1'], 'ipv6'), undefined, 'addresses stop at the first word that is none');
  t.same(bfdSource([], 'ipv4'), undefined);
});
