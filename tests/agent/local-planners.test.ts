// The local side's pure planners, table-driven: the Open_vSwitch configuration with
// ovn-controller's keys and per-chassis overrides, the chassis record transaction (nothing when
// the SB agrees), tunnel choice and naming, local datapaths through patch ports, and the active
// member of an HA_Chassis_Group. Method: rows built by hand, planner outputs compared with what
// ovn-controller 23.03 would do (for HA: what it would do with every tunnel alive).
import t from 'tap';
import type { Row } from '../../ovsdb/index.js';
import type * as sb from '../../ovsdb/rows/sb.js';
import type { ChassisConfig } from '../../agent/local/ovs-config.js';
import { parseBridgeMappings, readChassisConfig } from '../../agent/local/ovs-config.js';
import { chassisCleanupOps, chassisRecordOps, desiredOtherConfig } from '../../agent/local/chassis-record.js';
import { desiredTunnels, parseTunnelId, tunnelPortName } from '../../agent/local/tunnels.js';
import { localDatapaths, localnetPortsOf } from '../../agent/local/patch-ports.js';
import { bridgeDatapathOps, bridgeHwaddr, datapathCtZeroSnat, datapathDpHashL4Sym, maxHashAlgIsSymL4, wantedDatapathType } from '../../agent/local/integration-bridge.js';
import { activeHaChassis, haGroupContains, orderedHaMembers } from '../../agent/ha-chassis.js';
import type { HaLookups } from '../../agent/ha-chassis.js';

const ovsRow = (ids: Record<string, string>, ifaceTypes: string[] = ['geneve', 'vxlan']): Row =>
  ({ _uuid: 'r', _version: '', external_ids: new Map(Object.entries(ids)), iface_types: ifaceTypes }) as unknown as Row;

function config(ids: Record<string, string>): ChassisConfig {
  const r = readChassisConfig(ovsRow({ 'system-id': 'hv1', 'ovn-encap-type': 'geneve', 'ovn-encap-ip': '10.0.0.1', ...ids }), 'host');
  if (r.kind !== 'ok') throw new Error(r.reason);
  return r.config;
}

t.test('readChassisConfig', async (t) => {
  t.match(readChassisConfig(undefined, 'h'), { kind: 'incomplete' });
  t.match(readChassisConfig(ovsRow({}), 'h'), { kind: 'incomplete', reason: /system-id/ });
  t.match(readChassisConfig(ovsRow({ 'system-id': 'hv1', 'ovn-encap-type': 'geneve' }), 'h'), { kind: 'incomplete', reason: /ovn-encap-ip/ });
  t.match(readChassisConfig(ovsRow({ 'system-id': 'hv1', 'ovn-encap-type': 'gre', 'ovn-encap-ip': '1.1.1.1' }), 'h'), { kind: 'incomplete', reason: /no usable encapsulation/ });
  const c = config({});
  t.match(c, { systemId: 'hv1', hostname: 'host', encapTypes: ['geneve'], encapIps: ['10.0.0.1'], encapCsum: 'true', integrationBridge: 'br-int', monitorAll: 'false', isInterconn: false });
  t.same(config({ 'ovn-encap-ip': '10.0.0.1,10.0.0.2,10.0.0.1', 'ovn-encap-type': 'vxlan, geneve' }).encapIps, ['10.0.0.1', '10.0.0.2'], 'comma lists, deduplicated');
  t.equal(config({ 'ovn-bridge': 'br-x', 'ovn-bridge-hv1': 'br-mine' }).integrationBridge, 'br-mine', '<key>-<system-id> wins over <key>');
  t.equal(config({ hostname: 'given' }).hostname, 'given');
  t.same(config({ 'ovn-transport-zones': 'tz1,tz2' }).transportZones, ['tz1', 'tz2']);
});

t.test('readChassisConfig: the tunables, with ovn-controller\'s defaults, bounds and per-chassis keys', async (t) => {
  const c = config({});
  t.match(c, {
    encapTos: undefined, encapDfDefault: undefined, setLocalIp: false, remoteProbeIntervalMs: 5000, openflowProbeIntervalSec: 0,
    matchNorthdVersion: false, ofctrlWaitBeforeClearMs: 0, garpMaxTimeoutSec: 0, warnings: [],
  }, 'defaults: a 5 s SB probe (a TCP remote), no OpenFlow probe, nothing else');
  t.equal(config({ 'ovn-encap-tos': 'none' }).encapTos, undefined, 'tos "none" is no tos');
  t.equal(config({ 'ovn-encap-tos': 'inherit', 'ovn-encap-tos-hv1': '46' }).encapTos, '46', 'ovn-encap-tos-<chassis> wins');
  t.equal(config({ 'ovn-encap-df_default': 'false' }).encapDfDefault, 'false');
  t.equal(config({ 'ovn-set-local-ip': 'TRUE' }).setLocalIp, true, 'booleans: "true" in any case');
  t.equal(config({ 'ovn-set-local-ip': 'yes' }).setLocalIp, false, 'anything else is false');
  t.equal(config({ 'ovn-match-northd-version': 'false', 'ovn-match-northd-version-hv1': 'true' }).matchNorthdVersion, true);
  t.equal(config({ 'ovn-match-northd-version-hv2': 'true' }).matchNorthdVersion, false, 'another chassis\'s key is not ours');
  t.equal(config({ 'ovn-remote-probe-interval': '0' }).remoteProbeIntervalMs, 0, '0 disables the SB probe');
  t.equal(config({ 'ovn-remote-probe-interval': '200' }).remoteProbeIntervalMs, 1000, 'a nonzero SB probe is at least 1000 ms');
  t.equal(config({ 'ovn-remote-probe-interval': ' +30000' }).remoteProbeIntervalMs, 30000, 'read as strtoll reads: leading blanks and a sign');
  t.equal(config({ 'ovn-remote-probe-interval': '-7' }).remoteProbeIntervalMs, 1000, 'a negative one is forced up too, as reconnect.c does');
  t.equal(config({ 'ovn-openflow-probe-interval': '2' }).openflowProbeIntervalSec, 5, 'a nonzero OpenFlow probe is at least 5 s');
  t.equal(config({ 'ovn-openflow-probe-interval': '30', 'ovn-openflow-probe-interval-hv1': '60' }).openflowProbeIntervalSec, 60);
  const bad = config({ 'ovn-openflow-probe-interval': '10', 'ovn-openflow-probe-interval-hv1': '10s' });
  t.equal(bad.openflowProbeIntervalSec, 10, 'a per-chassis value that does not parse falls back to the plain key (smap_get_int)');
  t.match(bad.warnings, [/ovn-openflow-probe-interval-hv1="10s" is not an integer/], 'and is logged');
  t.equal(config({ 'ovn-remote-probe-interval': '5e3' }).remoteProbeIntervalMs, 5000, 'not an integer: the default');
  t.equal(config({ 'ovn-ofctrl-wait-before-clear': '8000' }).ofctrlWaitBeforeClearMs, 8000);
  t.equal(config({ 'ovn-ofctrl-wait-before-clear-hv1': '8000' }).ofctrlWaitBeforeClearMs, 0, 'wait-before-clear has no per-chassis key (ofctrl.c reads the plain one)');
  const negative = config({ 'ovn-ofctrl-wait-before-clear': '-1' });
  t.equal(negative.ofctrlWaitBeforeClearMs, 0, 'an unsigned key refuses a negative value (smap_get_uint): 0');
  t.match(negative.warnings, [/ovn-ofctrl-wait-before-clear="-1"/]);
  t.equal(config({ 'garp-max-timeout-sec': '4' }).garpMaxTimeoutSec, 4);
  t.match(config({ 'garp-max-timeout-sec': '86401' }), { garpMaxTimeoutSec: 0, warnings: [/garp-max-timeout-sec="86401" is not an integer in \[0, 86400\]/] }, 'at most a day');
  t.match(config({ 'ovn-set-local-ip': 'true', 'ovn-encap-ip': '10.0.0.1,10.0.0.2' }).warnings, [/ovn-set-local-ip does not support several addresses/]);
});

t.test('parseBridgeMappings', async (t) => {
  t.same([...parseBridgeMappings('physnet1:br-eth1,physnet2:br-eth2').mappings], [['physnet1', 'br-eth1'], ['physnet2', 'br-eth2']]);
  t.same([...parseBridgeMappings('').mappings], []);
  const bad = parseBridgeMappings('a:b,broken,c:d');
  t.same([...bad.mappings], [['a', 'b']], 'a malformed entry stops the parse, as in ovn-controller');
  t.equal(bad.warnings.length, 1);
  t.same([...parseBridgeMappings('a:b,a:c').mappings], [['a', 'b']], 'the first mapping of a network wins');
});

const encapRow = (uuid: string, chassis: string, ip: string, type = 'geneve', csum = 'true'): sb.Encap =>
  ({ _uuid: uuid, _version: '', type, ip, chassis_name: chassis, options: new Map([['csum', csum]]) }) as sb.Encap;
const chassisRow = (uuid: string, name: string, encaps: string[], over: Partial<Record<keyof sb.Chassis, unknown>> = {}): sb.Chassis =>
  ({ _uuid: uuid, _version: '', name, hostname: 'host', encaps, vtep_logical_switches: [], nb_cfg: 0, external_ids: new Map(), other_config: new Map(), transport_zones: [], ...over }) as sb.Chassis;

function rowsOf(chassis: sb.Chassis[], encaps: sb.Encap[], privs: sb.Chassis_Private[] = []): Parameters<typeof chassisRecordOps>[2] {
  return {
    chassisByName: (n) => chassis.find((c) => c.name === n),
    chassisPrivateByName: (n) => privs.find((p) => p.name === n),
    encap: (u) => encaps.find((e) => e._uuid === u),
  };
}

t.test('chassisRecordOps: register, nothing when current, update what changed', async (t) => {
  const c = config({});
  const first = chassisRecordOps(c, 'netdev', rowsOf([], []));
  t.match(first?.ops.map((o) => `${String(o.op)} ${String(o.table ?? '')}`), ['comment ', 'insert Encap', 'insert Chassis', 'insert Chassis_Private']);
  const oc = desiredOtherConfig(c, 'netdev', new Map());
  const current = chassisRow('c1', 'hv1', ['e1'], { other_config: oc });
  const priv = { _uuid: 'p1', _version: '', name: 'hv1', chassis: ['c1'], nb_cfg: 0, nb_cfg_timestamp: 0, external_ids: new Map() } as sb.Chassis_Private;
  t.equal(chassisRecordOps(c, 'netdev', rowsOf([current], [encapRow('e1', 'hv1', '10.0.0.1')], [priv])), undefined, 'nothing to do when the SB agrees');
  const csum = chassisRecordOps(c, 'netdev', rowsOf([current], [encapRow('e1', 'hv1', '10.0.0.1', 'geneve', 'false')], [priv]));
  t.match(csum?.ops.map((o) => `${String(o.op)} ${String(o.table ?? '')}`), ['comment ', 'delete Encap', 'insert Encap', 'update Chassis'], 'a changed csum replaces the Encap');
  const dp = chassisRecordOps(c, 'system', rowsOf([current], [encapRow('e1', 'hv1', '10.0.0.1')], [priv]));
  t.same(dp?.ops.slice(1).map((o) => Object.keys(o.row as object)), [['other_config']], 'a datapath type change updates other_config only');
  const kept = desiredOtherConfig(c, 'netdev', new Map([['operator-key', 'x'], ['datapath-type', 'old']]));
  t.equal(kept.get('operator-key'), 'x', 'keys others set in other_config are kept');
  t.equal(kept.get('datapath-type'), 'netdev');
  const relink = chassisRecordOps(c, 'netdev', rowsOf([current], [encapRow('e1', 'hv1', '10.0.0.1')], [{ ...priv, chassis: [] }]));
  t.match(relink?.ops.slice(1), [{ op: 'update', table: 'Chassis_Private', row: { chassis: ['uuid', 'c1'] } }], 'a Chassis_Private whose weak reference was dropped is linked again');
  t.match(chassisCleanupOps('hv1', rowsOf([current], [], [priv]))?.ops.slice(1), [{ op: 'delete', table: 'Chassis_Private' }, { op: 'delete', table: 'Chassis' }]);
  t.equal(chassisCleanupOps('hv1', rowsOf([], [])), undefined);
});

t.test('desiredTunnels: preferred type, transport zones, is-remote', async (t) => {
  const c = config({ 'ovn-encap-type': 'geneve,vxlan' });
  const encaps = [encapRow('a1', 'hv2', '10.0.0.2', 'vxlan'), encapRow('a2', 'hv2', '10.0.0.2', 'geneve', 'false'), encapRow('b1', 'hv3', '10.0.0.3', 'vxlan'), encapRow('r1', 'remote', '10.9.0.1')];
  const chassis = [chassisRow('x', 'hv1', []), chassisRow('h2', 'hv2', ['a1', 'a2']), chassisRow('h3', 'hv3', ['b1']), chassisRow('r', 'remote', ['r1'], { other_config: new Map([['is-remote', 'true']]) })];
  const tunnels = desiredTunnels(c, { chassis, encap: (u) => encaps.find((e) => e._uuid === u) });
  t.same(tunnels.map((x) => [x.id, x.type, [...x.options]]), [
    ['hv2@10.0.0.2', 'geneve', [['key', 'flow'], ['remote_ip', '10.0.0.2'], ['csum', 'false']]],
    ['hv3@10.0.0.3', 'vxlan', [['key', 'flow'], ['remote_ip', '10.0.0.3'], ['csum', 'true']]],
  ], 'geneve preferred over vxlan, vxlan where it is all they share; none to itself or to a remote chassis');
  const zoned = desiredTunnels(config({ 'ovn-transport-zones': 'tz1' }), { chassis: [chassisRow('h2', 'hv2', ['a2'], { transport_zones: ['tz2'] })], encap: (u) => encaps.find((e) => e._uuid === u) });
  t.same(zoned, [], 'no tunnel across transport zones');
  const tuned = desiredTunnels(config({ 'ovn-encap-tos': 'inherit', 'ovn-encap-df_default': 'false', 'ovn-set-local-ip': 'true', 'ovn-encap-ip': '10.0.0.1,10.0.0.9' }), { chassis: [chassisRow('h2', 'hv2', ['a2'])], encap: (u) => encaps.find((e) => e._uuid === u) });
  t.same(tuned.map((x) => Object.fromEntries(x.options)), [{ key: 'flow', remote_ip: '10.0.0.2', csum: 'false', tos: 'inherit', df_default: 'false', local_ip: '10.0.0.1' }],
    'ovn-encap-tos, ovn-encap-df_default and ovn-set-local-ip (the first encap IP) in the tunnel\'s options');
  t.equal(tunnelPortName('hypervisor-2', new Set()), 'ovn-hyperv-0');
  t.equal(tunnelPortName('hv2', new Set(['ovn-hv2-0', 'ovn-hv2-1'])), 'ovn-hv2-2');
  t.same(parseTunnelId('a@b@10.0.0.1'), { chassis: 'a@b', ip: '10.0.0.1' });
  t.equal(parseTunnelId('nothing'), undefined);
});

t.test('local datapaths through patch ports, and their localnet ports', async (t) => {
  const pb = (name: string, dp: string, over: Partial<Record<keyof sb.Port_Binding, unknown>> = {}): sb.Port_Binding =>
    ({ _uuid: name, logical_port: name, datapath: dp, type: '', options: new Map(), chassis: [], additional_chassis: [], ...over }) as unknown as sb.Port_Binding;
  const pbs = [
    pb('vm1', 'ls1', { chassis: ['me'] }),
    pb('ls1-lr', 'ls1', { type: 'patch', options: new Map([['peer', 'lr-ls1']]) }),
    pb('lr-ls1', 'lr', { type: 'patch', options: new Map([['peer', 'ls1-lr']]) }),
    pb('lr-ls2', 'lr', { type: 'patch', options: new Map([['peer', 'ls2-lr']]) }),
    pb('ls2-lr', 'ls2', { type: 'patch', options: new Map([['peer', 'lr-ls2']]) }),
    pb('ln2', 'ls2', { type: 'localnet', options: new Map([['network_name', 'physnet']]) }),
    pb('ln3', 'ls3', { type: 'localnet', options: new Map([['network_name', 'physnet']]) }),
  ];
  const locals = localDatapaths(pbs, 'me');
  t.same([...locals].sort(), ['lr', 'ls1', 'ls2'], 'the bound port\'s switch, the router behind it and the switch behind that');
  t.same(localnetPortsOf(pbs, locals), [{ logicalPort: 'ln2', network: 'physnet' }]);
  t.same([...localDatapaths(pbs, undefined)], [], 'nothing before the chassis exists');
});

t.test('integration bridge details', async (t) => {
  t.equal(wantedDatapathType('netdev', 'system', 'x'), 'netdev', 'the command line wins');
  t.equal(wantedDatapathType(undefined, 'netdev', 'system'), 'netdev', 'then ovn-bridge-datapath-type');
  t.equal(wantedDatapathType(undefined, undefined, 'netdev'), 'netdev', 'then the bridge\'s own');
  t.equal(wantedDatapathType(undefined, undefined, ''), 'system', 'else system');
  const mac = bridgeHwaddr('hv1', 'br-int');
  t.match(mac, /^[0-9a-f][26ae](:[0-9a-f]{2}){5}$/, 'a locally administered unicast MAC');
  t.equal(bridgeHwaddr('hv1', 'br-int'), mac, 'the same every time');
  t.not(bridgeHwaddr('hv2', 'br-int'), mac);
});

t.test('the Datapath record of the bridge\'s datapath type, and its ct_zero_snat and max_hash_alg capabilities', async (t) => {
  const tablesOf = (datapaths: Map<string, string>, dps: Record<string, Record<string, string>>) => (name: string): ReadonlyMap<string, Row> => {
    if (name === 'Open_vSwitch') return new Map([['root', { _uuid: 'root', _version: '', datapaths } as unknown as Row]]);
    if (name === 'Datapath') return new Map(Object.entries(dps).map(([u, caps]) => [u, { _uuid: u, _version: '', capabilities: new Map(Object.entries(caps)) } as unknown as Row]));
    return new Map();
  };
  const none = tablesOf(new Map(), {});
  t.match(bridgeDatapathOps(none, 'netdev')?.ops, [
    { op: 'insert', table: 'Datapath', 'uuid-name': 'dp' },
    { op: 'mutate', table: 'Open_vSwitch', mutations: [['datapaths', 'insert', ['map', [['netdev', ['named-uuid', 'dp']]]]]] },
  ], 'missing: made and named in Open_vSwitch.datapaths under the type, as ovn-controller does');
  t.equal(datapathCtZeroSnat(none, 'netdev'), false, 'no record: not supported');
  const made = tablesOf(new Map([['netdev', 'dp1'], ['system', 'dp2']]), { dp1: { ct_zero_snat: 'true' }, dp2: { ct_zero_snat: 'false' } });
  t.equal(bridgeDatapathOps(made, 'netdev'), undefined, 'there: nothing to do');
  t.same([datapathCtZeroSnat(made, 'netdev'), datapathCtZeroSnat(made, 'system'), datapathCtZeroSnat(made, '')], [true, false, false], 'read from the record of the bridge\'s type (empty: system)');
  // OVS_DP_HASH_L4_SYM_SUPPORT: max_hash_alg equal to OVS_HASH_ALG_SYM_L4 (1), as smap_get_int reads it.
  const hashes = tablesOf(new Map([['netdev', 'dp1'], ['system', 'dp2']]), { dp1: { max_hash_alg: '1' }, dp2: { max_hash_alg: '0' } });
  t.same([datapathDpHashL4Sym(hashes, 'netdev'), datapathDpHashL4Sym(hashes, 'system'), datapathDpHashL4Sym(hashes, ''), datapathDpHashL4Sym(none, 'netdev')],
    [true, false, false, false], 'read from the record of the bridge\'s type; no record: not supported');
  t.same(['1', ' 1', '+1', '01', '\t1'].map(maxHashAlgIsSymL4), [true, true, true, true, true], 'leading blanks, a sign and zeros, as strtoll reads them');
  t.same([undefined, '', '0', '2', '1 ', '1.0', '0x1', 'one', '-1', '4294967297'].map(maxHashAlgIsSymL4), Array(10).fill(false), 'anything else is not 1 (an unreadable value counts 0)');
});

t.test('HA_Chassis_Group: the active member is the highest-priority registered chassis', async (t) => {
  const chassis = [chassisRow('u-gw1', 'gw1', []), chassisRow('u-gw2', 'gw2', []), chassisRow('u-gw3', 'gw3', [])];
  const member = (uuid: string, name: string, priority: number, ref: string[] = []): sb.HA_Chassis =>
    ({ _uuid: uuid, _version: '', chassis: ref, priority, external_ids: new Map(name === '' ? [] : [['chassis-name', name]]) }) as sb.HA_Chassis;
  const lookups = (members: sb.HA_Chassis[], registered: sb.Chassis[] = chassis): HaLookups => ({
    haChassisGroup: (u) => (u === 'g' ? ({ _uuid: 'g', _version: '', name: 'g', ha_chassis: members.map((m) => m._uuid), ref_chassis: [], external_ids: new Map() }) as sb.HA_Chassis_Group : undefined),
    haChassis: (u) => members.find((m) => m._uuid === u),
    chassis: (u) => registered.find((c) => c._uuid === u),
    chassisByName: (n) => registered.find((c) => c.name === n),
  });
  const names = (ha: HaLookups): string[] => orderedHaMembers(ha, 'g').map((m) => `${m.name}:${m.priority}`);
  t.same(names(lookups([member('m1', 'gw1', 10), member('m2', 'gw2', 30), member('m3', 'gw3', 20)])), ['gw2:30', 'gw3:20', 'gw1:10'], 'by priority, highest first');
  t.same(names(lookups([member('m1', 'gw1', 10), member('m2', 'gw3', 10), member('m3', 'gw2', 10)])), ['gw3:10', 'gw2:10', 'gw1:10'], 'equal priorities: greater name first (compare_chassis_prio_)');
  t.same(names(lookups([member('m1', 'gw1', 10), member('m2', 'gw9', 30)])), ['gw1:10'], 'a member whose chassis is not registered is left out');
  t.same(names(lookups([member('m1', '', 10), member('m2', 'gw2', 5)])), ['gw2:5'], 'a member naming no chassis is left out');
  t.same(names(lookups([member('m1', 'gw1', 10, ['u-gw3'])])), ['gw3:10'], 'the chassis column, when set, names the chassis');
  t.same(names(lookups([member('m1', 'gw1', 10, ['u-gone'])])), [], 'a chassis column naming a deleted Chassis is not a live member');
  t.same(names(lookups([member('m1', 'gw1', 10), member('m2', 'gw1', 20)])), ['gw1:20'], 'a chassis listed twice counts once, at its highest priority');
  const ha = lookups([member('m1', 'gw1', 10), member('m2', 'gw2', 30)]);
  t.equal(activeHaChassis(ha, 'g'), 'u-gw2');
  t.equal(activeHaChassis(lookups([member('m1', 'gw1', 10), member('m2', 'gw2', 30)], [chassis[0] as sb.Chassis]), 'g'), 'u-gw1', 'gw2 unregistered: gw1 is active');
  t.equal(activeHaChassis(ha, 'other'), undefined, 'an unknown group has no active member');
  t.equal(activeHaChassis(ha, undefined), undefined);
  t.ok(haGroupContains(ha, 'g', 'u-gw1'));
  t.notOk(haGroupContains(ha, 'g', 'u-gw3'));
  t.notOk(haGroupContains(ha, 'g', undefined));
});
