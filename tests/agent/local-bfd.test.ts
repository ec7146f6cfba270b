// BFD for HA gateway chassis, as ovn-controller decides it: with which chassis a chassis runs BFD
// (bfd_calculate_chassis), what the tunnels' Interface.bfd holds, which tunnels count as alive
// (bfd_calculate_active_tunnels), and which member of a group is active given the live sessions
// (ha_chassis_group_is_active). The cases are those ovn-controller's own comments walk through.
import t from 'tap';
import type * as sb from '../../ovsdb/rows/sb.js';
import type { Row } from '../../ovsdb/index.js';
import type { HaLookups } from '../../agent/ha-chassis.js';
import { haActiveHere } from '../../agent/ha-chassis.js';
import { activeTunnels, bfdChassis, bfdOps, bfdSettings } from '../../agent/local/bfd.js';
import type { OvsBridge, OvsTables } from '../../agent/local/ovs-rows.js';

const chassis = (name: string, remote = false): sb.Chassis =>
  ({ _uuid: `u-${name}`, _version: '', name, hostname: name, encaps: [], other_config: new Map(remote ? [['is-remote', 'true']] : []), external_ids: new Map(), nb_cfg: 0, transport_zones: [], vtep_logical_switches: [] }) as unknown as sb.Chassis;

interface World extends HaLookups {
  readonly groups: sb.HA_Chassis_Group[];
}

/** Groups given as name → [[member, priority]...], ref chassis names. */
function world(groups: Record<string, { members: [string, number][]; refs?: string[] }>, remote: string[] = []): World {
  const allChassis = new Map<string, sb.Chassis>();
  const haChassis = new Map<string, sb.HA_Chassis>();
  const rows: sb.HA_Chassis_Group[] = [];
  const ch = (name: string): sb.Chassis => {
    let c = allChassis.get(name);
    if (c === undefined) allChassis.set(name, (c = chassis(name, remote.includes(name))));
    return c;
  };
  for (const [g, { members, refs = [] }] of Object.entries(groups)) {
    const ids = members.map(([name, priority]) => {
      const hc = { _uuid: `hc-${g}-${name}`, _version: '', chassis: [ch(name)._uuid], priority, external_ids: new Map([['chassis-name', name]]) } as unknown as sb.HA_Chassis;
      haChassis.set(hc._uuid, hc);
      return hc._uuid;
    });
    rows.push({ _uuid: `g-${g}`, _version: '', name: g, ha_chassis: ids, ref_chassis: refs.map((r) => ch(r)._uuid), external_ids: new Map() } as unknown as sb.HA_Chassis_Group);
  }
  return {
    groups: rows,
    haChassisGroup: (u) => rows.find((r) => r._uuid === u),
    haChassis: (u) => haChassis.get(u),
    chassis: (u) => [...allChassis.values()].find((c) => c._uuid === u),
    chassisByName: (n) => allChassis.get(n),
  };
}

t.test('with which chassis a chassis runs BFD', async (t) => {
  // bfd.c's example: two groups sharing HA1 and C1.
  const w = world({
    hapgrp1: { members: [['HA1', 10], ['HA2', 20], ['HA3', 30]], refs: ['C1', 'C2'] },
    hapgrp2: { members: [['HA1', 10], ['HA4', 20], ['HA5', 30]], refs: ['C1', 'C3', 'C4'] },
    lone: { members: [['HA9', 10]], refs: ['C5'] },
  });
  const of = (name: string): string[] => [...bfdChassis(w, w.groups, w.chassisByName(name)?._uuid ?? `u-${name}`)].sort();
  t.same(of('HA1'), ['C1', 'C2', 'C3', 'C4', 'HA2', 'HA3', 'HA4', 'HA5'], 'a member of both groups: the other members and every ref chassis');
  t.same(of('C1'), ['HA1', 'HA2', 'HA3', 'HA4', 'HA5'], 'a ref chassis of both: every member');
  t.same(of('HA5'), ['C1', 'C3', 'C4', 'HA1', 'HA4']);
  t.same(of('C2'), ['HA1', 'HA2', 'HA3']);
  t.same(of('C5'), [], 'a group of one member needs no BFD');
  t.same(of('HA9'), []);
  t.same(of('X'), [], 'a chassis in no group runs none');
  t.same([...bfdChassis(w, w.groups, undefined)], [], 'nor one not registered yet');
  const r = world({ g: { members: [['HA1', 10], ['HA2', 20]], refs: ['C1', 'R1'] } }, ['R1']);
  t.same([...bfdChassis(r, r.groups, 'u-HA1')].sort(), ['C1', 'HA2'], 'a ref chassis marked is-remote is left out');
});

t.test('which member of a group is active, given the live BFD sessions', async (t) => {
  // ha-chassis.c's example: HA1 priority 30, HA2 40, HA3 20; ref chassis C1 and C2.
  const w = world({ g: { members: [['HA1', 30], ['HA2', 40], ['HA3', 20]], refs: ['C1', 'C2'] } });
  const active = (us: string, live: string[]): boolean => haActiveHere(w, 'g-g', `u-${us}`, new Set(live));
  t.ok(active('HA2', ['HA1', 'HA3', 'C1', 'C2']), 'all alive: the highest priority');
  t.notOk(active('HA3', ['HA1', 'HA2', 'C1', 'C2']));
  t.notOk(active('HA3', ['HA1', 'C1', 'C2']), 'HA2 gone: HA1 before HA3');
  t.ok(active('HA1', ['HA3', 'C1', 'C2']), 'and HA1 knows it');
  t.ok(active('HA3', ['C1', 'C2']), 'HA3 alone with the ref chassis: active');
  t.notOk(active('HA3', []), 'no live session at all: cut off, active nowhere');
  t.notOk(active('HA1', []), 'even for the highest priority');
  t.notOk(active('HA3', ['X']), 'alone, with no ref chassis alive: not active');
  t.notOk(haActiveHere(w, 'g-g', undefined, new Set(['C1'])), 'an unregistered chassis is never active');
  t.notOk(haActiveHere(w, 'g-none', 'u-HA1', new Set(['C1'])), 'nor in a group that is not there');
  const one = world({ g: { members: [['HA1', 10]] } });
  t.ok(haActiveHere(one, 'g-g', 'u-HA1', new Set()), 'a group of one member: that member, BFD or not');
  t.notOk(haActiveHere(one, 'g-g', 'u-HA2', new Set(['HA1'])));
  t.ok(haActiveHere(w, 'g-g', 'u-HA2', undefined), 'no BFD on this agent: the highest registered member');
  t.notOk(haActiveHere(w, 'g-g', 'u-HA1', undefined));
  const tie = world({ g: { members: [['gw1', 10], ['gw2', 10]], refs: ['C1'] } });
  t.ok(haActiveHere(tie, 'g-g', 'u-gw2', new Set(['gw1', 'C1'])), 'equal priorities: the greater name');
  t.notOk(haActiveHere(tie, 'g-g', 'u-gw1', new Set(['gw2', 'C1'])));
});

t.test('the tunnels\' Interface.bfd, and which count as alive', async (t) => {
  const settings = bfdSettings({ options: new Map([['bfd-min-rx', '200'], ['bfd-mult', '5'], ['other', 'x']]) } as unknown as sb.SB_Global);
  t.same([...settings], [['enable', 'true'], ['min_rx', '200'], ['mult', '5'], ['check_tnl_key', 'true']], 'enable, the SB_Global timers that are set, check_tnl_key');
  t.same([...bfdSettings(undefined)], [['enable', 'true']], 'no SB_Global yet: enable alone');
  const iface = (name: string, bfd: [string, string][], status: [string, string][] = []): Row =>
    ({ _uuid: `i-${name}`, _version: '', name, type: 'geneve', options: new Map([['remote_ip', '192.0.2.9'], ['key', 'flow']]), external_ids: new Map(), ofport: [1], mtu: [], bfd: new Map(bfd), bfd_status: new Map(status) }) as unknown as Row;
  const port = (name: string, far: string | undefined): Row =>
    ({ _uuid: `p-${name}`, _version: '', name, interfaces: [`i-${name}`], external_ids: new Map(far === undefined ? [] : [['ovn-chassis-id', `${far}@192.0.2.9`]]) }) as unknown as Row;
  const on = [...settings];
  const interfaces = new Map([
    ['i-t-gw2', iface('t-gw2', [])],
    ['i-t-hv1', iface('t-hv1', [['enable', 'true']], [['state', 'up'], ['forwarding', 'true']])],
    ['i-t-hv9', iface('t-hv9', on, [['state', 'up']])],
    ['i-t-hv3', iface('t-hv3', on, [['state', 'down']])],
    ['i-t-hv4', iface('t-hv4', [], [['state', 'up']])],
    ['i-vm', iface('vm', on, [['state', 'up']])],
  ]);
  const ports = new Map([['t-gw2', 'gw2'], ['t-hv1', 'hv1'], ['t-hv9', 'hv9'], ['t-hv3', 'hv3'], ['t-hv4', 'hv4'], ['vm', undefined]].map(([n, far]) => [`p-${n}`, port(n as string, far)]));
  const br = { _uuid: 'b', name: 'br-int', ports: [...ports.keys()], datapath_type: 'netdev', fail_mode: ['secure'], other_config: new Map(), mirrors: [] } as OvsBridge;
  const tables: OvsTables = (table) => (table === 'Interface' ? interfaces : table === 'Port' ? ports : new Map());
  const ops = bfdOps(tables, br, new Set(['gw2', 'hv1', 'hv3']), settings);
  t.same(ops.map((g) => g.what), [
    'enable BFD on tunnel t-gw2 to gw2',
    'enable BFD on tunnel t-hv1 to hv1',
    'disable BFD on tunnel t-hv9 to hv9',
  ], 'enabled where wanted and not yet as wanted, disabled where no longer wanted; a VIF is left alone');
  t.same(ops[0]?.ops, [{ op: 'update', table: 'Interface', where: [['_uuid', '==', ['uuid', 'i-t-gw2']]], row: { bfd: ['map', [...on].sort()] } }], 'the map as OVSDB writes it, keys sorted');
  t.same(ops[2]?.ops[0], { op: 'update', table: 'Interface', where: [['_uuid', '==', ['uuid', 'i-t-hv9']]], row: { bfd: ['map', []] } });
  t.same([...activeTunnels(tables, br)].sort(), ['hv1', 'hv9'], 'alive: BFD enabled and its state up (not a VIF, not down, not without BFD)');
  t.same([...activeTunnels(tables, undefined)], [], 'no integration bridge, no tunnels');
});
