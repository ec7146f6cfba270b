// What chassis write into the SB, through the replicated state machine: a chassis registers
// (Chassis + Encap + Chassis_Private), claims a port (Port_Binding.chassis/up in northd's
// row), Logical_Switch_Port.up follows, hv_cfg follows the chassis' acknowledgements (the
// lowest, as ovn-northd computes it), deleting a chassis drops the weak references to it,
// Service_Monitor.status is writable (the load balancer flows follow) while every other column
// and op of that table is not, and a write to anything northd derives is a permission error
// that changes nothing. Replicas fed the same entries agree, and a snapshot carries the chassis
// tables and the reported statuses. Method: hand-made log entries into NbStateMachine with the
// real northd projection. northd hears of Chassis through the same log: HA members name them,
// ref_chassis follows the claims.
import t from 'tap';
import type { Entry } from '../../cluster/types.js';
import { dumpDatabaseJson, parseDatabaseSchema } from '../../ovsdb/index.js';
import { NB_SCHEMA_JSON } from '../../ovsdb/schemas/index.js';
import { encodeCommand, nbTxn, sbTxn } from '../../server/commands.js';
import type { ApplyResult } from '../../server/nb-state-machine.js';
import { NbStateMachine } from '../../server/nb-state-machine.js';
import { NorthdProjection } from '../../server/northd-projection.js';

const schema = parseDatabaseSchema(NB_SCHEMA_JSON);

class Replica {
  readonly projection = new NorthdProjection();
  readonly sm = new NbStateMachine({ schema, projection: this.projection });
}

/** A log: entries numbered from 1, each NB or SB, applied to every replica given. */
class Log {
  private index = 0;
  private seed = 1;
  constructor(private readonly replicas: readonly Replica[]) {}
  push(data: Uint8Array): ApplyResult {
    const e: Entry = { term: 1, index: ++this.index, type: 'normal', data };
    const results = this.replicas.map((r) => r.sm.apply(e, false));
    return results[0] as ApplyResult;
  }
  nb(ops: unknown[]): ApplyResult {
    return this.push(encodeCommand(nbTxn(ops, [this.seed++, 1, 2, 3], 0, 1000 + this.index)));
  }
  sb(ops: unknown[], timestampMs = 5000): ApplyResult {
    return this.push(encodeCommand(sbTxn(ops, [this.seed++, 4, 5, 6], 0, timestampMs)));
  }
}

const registerChassis = (name: string, ip: string, nbCfg = 0): unknown[] => [
  { op: 'insert', table: 'Encap', 'uuid-name': 'e', row: { type: 'geneve', ip, chassis_name: name, options: ['map', [['csum', 'true']]] } },
  { op: 'insert', table: 'Chassis', 'uuid-name': 'c', row: { name, hostname: name, encaps: ['named-uuid', 'e'] } },
  { op: 'insert', table: 'Chassis_Private', row: { name, chassis: ['named-uuid', 'c'], nb_cfg: nbCfg, nb_cfg_timestamp: 100 } },
];

function pb(r: Replica, port: string): Record<string, unknown> | undefined {
  for (const row of r.projection.portBindings().values()) if (row.logical_port === port) return row as unknown as Record<string, unknown>;
  return undefined;
}
function lspUp(r: Replica, port: string): unknown {
  return [...r.sm.nb.rows('Logical_Switch_Port').values()].find((x) => x.name === port)?.up;
}
function global(r: Replica): Record<string, unknown> {
  return [...r.sm.nb.rows('NB_Global').values()][0] as unknown as Record<string, unknown>;
}
const chassisUuid = (r: Replica, name: string): string => [...r.sm.chassis.rows('Chassis').values()].find((c) => c.name === name)?._uuid as string;

t.test('register, claim, up, hv_cfg, delete, permissions; replicas agree; snapshot round trip', async (t) => {
  const a = new Replica();
  const b = new Replica();
  const log = new Log([a, b]);
  t.match(log.nb([{ op: 'insert', table: 'NB_Global', row: {} }]), { kind: 'committed' });
  t.match(log.nb([{ op: 'insert', table: 'Logical_Switch', 'uuid-name': 's', row: { name: 'sw0', ports: ['named-uuid', 'p'] } }, { op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': 'p', row: { name: 'vm1', addresses: '00:00:00:00:00:01 10.0.0.1' } }]), { kind: 'committed' });
  t.ok(pb(a, 'vm1'), 'northd made a Port_Binding for vm1');
  t.same(lspUp(a, 'vm1'), [], 'not up before a chassis claims it');

  t.match(log.sb(registerChassis('hv1', '192.0.2.1')), { kind: 'committed' });
  t.equal(a.sm.chassis.rows('Chassis').size, 1);
  t.equal(a.sm.chassis.rows('Encap').size, 1);
  const hv1 = chassisUuid(a, 'hv1');
  t.match(global(a), { hv_cfg: 0 }, 'one chassis at nb_cfg 0');

  // Claim: the real ovn-controller updates the Port_Binding by its logical_port.
  const claim = log.sb([{ op: 'update', table: 'Port_Binding', where: [['logical_port', '==', 'vm1']], row: { chassis: ['uuid', hv1], up: true } }]);
  t.match(claim, { kind: 'committed', results: [{ count: 1 }] });
  t.same(pb(a, 'vm1')?.chassis, [hv1], 'the claim shows in northd\'s Port_Binding row');
  t.same(pb(a, 'vm1')?.up, [true]);
  t.same(lspUp(a, 'vm1'), [true], 'Logical_Switch_Port.up follows');

  // nb_cfg bumped: hv_cfg waits for the chassis' acknowledgement; sb_cfg does not.
  t.match(log.nb([{ op: 'mutate', table: 'NB_Global', where: [], mutations: [['nb_cfg', '+=', 1]] }]), { kind: 'committed' });
  t.match(global(a), { nb_cfg: 1, sb_cfg: 1, hv_cfg: 0 });
  t.match(log.sb(registerChassis('hv2', '192.0.2.2', 1)), { kind: 'committed' });
  t.match(global(a), { hv_cfg: 0 }, 'the lowest acknowledgement counts');
  t.match(log.sb([{ op: 'update', table: 'Chassis_Private', where: [['name', '==', 'hv1']], row: { nb_cfg: 1, nb_cfg_timestamp: 4242 } }]), { kind: 'committed' });
  t.match(global(a), { hv_cfg: 1, hv_cfg_timestamp: 4242 }, 'every chassis acknowledged: hv_cfg and its timestamp follow');

  // Permission errors change nothing.
  const before = JSON.stringify(dumpDatabaseJson(a.sm.chassis));
  const denied = [
    [{ op: 'insert', table: 'Chassis', row: { name: 'hv9', hostname: 'x' } }, { op: 'insert', table: 'Logical_Flow', row: {} }],
    [{ op: 'update', table: 'Port_Binding', where: [['logical_port', '==', 'vm1']], row: { tunnel_key: 7 } }],
    [{ op: 'delete', table: 'Port_Binding', where: [] }],
    [{ op: 'update', table: 'Port_Binding', where: [], row: { chassis: ['named-uuid', 'nope'] } }],
  ];
  for (const ops of denied) {
    const r = log.sb(ops);
    t.equal(r.kind, 'failed', `refused: ${JSON.stringify(ops).slice(0, 80)}`);
  }
  t.match((log.sb(denied[1] as unknown[]) as { results: unknown[] }).results[0], { error: 'permission error', details: /tunnel_key is written by northd/ });
  t.equal(JSON.stringify(dumpDatabaseJson(a.sm.chassis)), before, 'the chassis tables are unchanged');
  t.same(pb(a, 'vm1')?.chassis, [hv1]);

  // Snapshot round trip keeps the chassis tables and the claims.
  const c = new Replica();
  c.sm.restore(a.sm.snapshot());
  t.equal(JSON.stringify(dumpDatabaseJson(c.sm.chassis)), JSON.stringify(dumpDatabaseJson(a.sm.chassis)));
  t.same(pb(c, 'vm1')?.chassis, [hv1], 'the restored northd has the claim');

  // Deleting the chassis drops the weak reference and the port goes down.
  t.match(log.sb([{ op: 'delete', table: 'Chassis_Private', where: [['name', '==', 'hv1']] }, { op: 'delete', table: 'Chassis', where: [['name', '==', 'hv1']] }]), { kind: 'committed' });
  t.equal(a.sm.chassis.rows('Encap').size, 1, 'hv1\'s Encap went with it (strong reference, not root)');
  t.same(pb(a, 'vm1')?.chassis, [], 'Port_Binding.chassis to a deleted chassis is dropped');
  t.same(lspUp(a, 'vm1'), [false], 'a port bound to no chassis is down');

  // Replicas agree byte for byte.
  t.equal(JSON.stringify(dumpDatabaseJson(b.sm.nb)), JSON.stringify(dumpDatabaseJson(a.sm.nb)));
  t.equal(JSON.stringify(dumpDatabaseJson(b.sm.chassis)), JSON.stringify(dumpDatabaseJson(a.sm.chassis)));
  t.same([...b.projection.portBindings()], [...a.projection.portBindings()]);
});

t.test('northd hears of Chassis through the log: HA members name them, ref_chassis follows claims, a restore keeps both', async (t) => {
  const a = new Replica();
  const b = new Replica();
  const log = new Log([a, b]);
  log.nb([{ op: 'insert', table: 'NB_Global', row: {} }]);
  // sw0 (vm1) joined to lr0, whose port lr0-ext is a gateway port on hv1 and hv2.
  t.match(log.nb([
    { op: 'insert', table: 'Logical_Switch', row: { name: 'sw0', ports: ['set', [['named-uuid', 'vm'], ['named-uuid', 'rp']]] } },
    { op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': 'vm', row: { name: 'vm1', addresses: '00:00:00:00:00:01 10.0.0.1' } },
    { op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': 'rp', row: { name: 'sw0-lr0', type: 'router', addresses: 'router', options: ['map', [['router-port', 'lr0-sw0']]] } },
    { op: 'insert', table: 'Logical_Router', row: { name: 'lr0', ports: ['set', [['named-uuid', 'l1'], ['named-uuid', 'l2']]] } },
    { op: 'insert', table: 'Logical_Router_Port', 'uuid-name': 'l1', row: { name: 'lr0-sw0', mac: '00:00:00:00:ff:01', networks: '10.0.0.254/24' } },
    { op: 'insert', table: 'Logical_Router_Port', 'uuid-name': 'l2', row: { name: 'lr0-ext', mac: '00:00:00:00:ff:02', networks: '172.16.0.1/24', gateway_chassis: ['set', [['named-uuid', 'g1'], ['named-uuid', 'g2']]] } },
    { op: 'insert', table: 'Gateway_Chassis', 'uuid-name': 'g1', row: { name: 'lr0-ext-hv1', chassis_name: 'hv1', priority: 20 } },
    { op: 'insert', table: 'Gateway_Chassis', 'uuid-name': 'g2', row: { name: 'lr0-ext-hv2', chassis_name: 'hv2', priority: 10 } },
  ]), { kind: 'committed' });
  const members = (r: Replica): Record<string, unknown> => {
    const view = r.projection.view();
    const out: Record<string, unknown> = {};
    for (const m of view.get('HA_Chassis')?.values() ?? []) out[(m.external_ids as Map<string, string>).get('chassis-name') as string] = m.chassis;
    return out;
  };
  const ref = (r: Replica): unknown => [...(r.projection.view().get('HA_Chassis_Group')?.values() ?? [])].map((g) => g.ref_chassis);
  t.same(members(a), { hv1: [], hv2: [] }, 'no Chassis registered: members name none');

  log.sb(registerChassis('hv1', '192.0.2.1'));
  log.sb(registerChassis('c1', '192.0.2.11'));
  const hv1 = chassisUuid(a, 'hv1');
  const c1 = chassisUuid(a, 'c1');
  t.same(members(a), { hv1: [hv1], hv2: [] }, 'hv1 registered: its member names it');
  log.sb([{ op: 'update', table: 'Port_Binding', where: [['logical_port', '==', 'vm1']], row: { chassis: ['uuid', c1], up: true } }]);
  t.same(ref(a), [[c1]], 'vm1 bound on c1: c1 is a reference chassis of lr0-ext\'s group');

  // Renamed, hv1's Chassis is no member's any more; deleted, c1 leaves ref_chassis with vm1's binding.
  log.sb([{ op: 'update', table: 'Chassis', where: [['name', '==', 'hv1']], row: { name: 'hv1-old' } }]);
  t.same(members(a), { hv1: [], hv2: [] }, 'a renamed Chassis no longer named');
  const c = new Replica();
  c.sm.restore(a.sm.snapshot());
  t.same([members(c), ref(c)], [members(a), ref(a)], 'a replica restored from a snapshot has the same members and ref_chassis');
  log.sb([{ op: 'update', table: 'Chassis', where: [['name', '==', 'hv1-old']], row: { name: 'hv2' } }]);
  t.same(members(a), { hv1: [], hv2: [hv1] }, 'renamed to another member\'s name: that member names it');
  log.sb([{ op: 'delete', table: 'Chassis', where: [['name', '==', 'c1']] }]);
  t.same(ref(a), [[]], 'c1 deleted: its binding and ref_chassis drop it');
  t.same([...b.projection.view().get('HA_Chassis_Group')?.values() ?? []], [...a.projection.view().get('HA_Chassis_Group')?.values() ?? []], 'replicas agree');
  t.same([...b.projection.view().get('HA_Chassis')?.values() ?? []], [...a.projection.view().get('HA_Chassis')?.values() ?? []]);
});

/** northd's Service_Monitor rows on replica `r`. */
function monitors(r: Replica): Record<string, unknown>[] {
  return [...(r.projection.view().get('Service_Monitor')?.values() ?? [])] as unknown as Record<string, unknown>[];
}

/** The actions of the ls_in_lb flow of VIP `vip` on replica `r`. */
function lbActions(r: Replica, vip: string): string | undefined {
  for (const f of r.projection.view().get('Logical_Flow')?.values() ?? []) {
    const flow = f as unknown as { match: string; actions: string; external_ids: ReadonlyMap<string, string> };
    if (flow.external_ids.get('stage-name') === 'ls_in_lb' && flow.match.includes(`ip4.dst == ${vip}`)) return flow.actions;
  }
  return undefined;
}

t.test('Service_Monitor.status is the one column of the table a chassis writes; the rest is refused whole', async (t) => {
  const a = new Replica();
  const b = new Replica();
  const log = new Log([a, b]);
  t.match(log.nb([{ op: 'insert', table: 'NB_Global', row: {} }]), { kind: 'committed' });
  t.match(log.nb([
    { op: 'insert', table: 'Logical_Switch', row: { name: 'sw0', ports: ['set', [['named-uuid', 'p1'], ['named-uuid', 'p2']]], load_balancer: ['named-uuid', 'lb'] } },
    { op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': 'p1', row: { name: 'vm1', addresses: '00:00:00:00:00:01 10.0.0.1' } },
    { op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': 'p2', row: { name: 'vm2', addresses: '00:00:00:00:00:02 10.0.0.2' } },
    { op: 'insert', table: 'Load_Balancer_Health_Check', 'uuid-name': 'hc', row: { vip: '10.0.0.100:80', options: ['map', [['interval', '5']]] } },
    {
      op: 'insert', table: 'Load_Balancer', 'uuid-name': 'lb',
      row: { name: 'lb', vips: ['map', [['10.0.0.100:80', '10.0.0.1:80,10.0.0.2:80']]], health_check: ['named-uuid', 'hc'], ip_port_mappings: ['map', [['10.0.0.1', 'vm1:10.0.0.254'], ['10.0.0.2', 'vm2:10.0.0.254']]] },
    },
  ]), { kind: 'committed' });
  t.equal(monitors(a).length, 2, 'northd made a Service_Monitor per backend');
  const vm1 = monitors(a).find((m) => m['logical_port'] === 'vm1') as { _uuid: string };
  t.equal(lbActions(a, '10.0.0.100'), 'reg0[1] = 0; ct_lb_mark(backends=10.0.0.1:80,10.0.0.2:80);');

  // Refused: other columns, inserts, deletes, mutations, a value outside the schema's enum.
  // Each fails whole (the Chassis insert beside it does not happen) and changes nothing.
  const before = JSON.stringify([dumpDatabaseJson(a.sm.chassis), monitors(a)]);
  const register = { op: 'insert', table: 'Chassis', row: { name: 'hv9', hostname: 'hv9' } };
  const byUuid = [['_uuid', '==', ['uuid', vm1._uuid]]];
  const denied: [unknown[], RegExp][] = [
    [[register, { op: 'update', table: 'Service_Monitor', where: byUuid, row: { src_ip: '10.0.0.9' } }], /Service_Monitor column src_ip is written by northd; a chassis may set only status/],
    [[register, { op: 'update', table: 'Service_Monitor', where: byUuid, row: { status: 'offline', port: 81 } }], /Service_Monitor column port is written by northd/],
    [[register, { op: 'insert', table: 'Service_Monitor', row: { ip: '10.0.0.3', logical_port: 'vm1', port: 80 } }], /table Service_Monitor is derived by northd/],
    [[register, { op: 'delete', table: 'Service_Monitor', where: byUuid }], /table Service_Monitor is derived by northd/],
    [[register, { op: 'mutate', table: 'Service_Monitor', where: byUuid, mutations: [['options', 'insert', ['map', [['x', 'y']]]]] }], /table Service_Monitor is derived by northd/],
  ];
  for (const [ops, details] of denied) {
    const r = log.sb(ops) as { kind: string; results: unknown[] };
    t.equal(r.kind, 'failed', `refused: ${JSON.stringify(ops[1]).slice(0, 90)}`);
    t.match(r.results[1], { error: 'permission error', details }, 'with a permission error that says what a chassis may write');
  }
  const badValue = log.sb([register, { op: 'update', table: 'Service_Monitor', where: byUuid, row: { status: 'sleepy' } }]) as { kind: string; results: unknown[] };
  t.equal(badValue.kind, 'failed', 'a status outside the schema is refused');
  t.match(badValue.results[1], { error: 'constraint violation' });
  const badPb = log.sb([register, { op: 'update', table: 'Port_Binding', where: [['logical_port', '==', 'vm1']], row: { up: 'yes' } }]) as { kind: string; results: unknown[] };
  t.equal(badPb.kind, 'failed', 'a Port_Binding value of the wrong type fails the transaction (it does not throw out of apply)');
  t.match(badPb.results[1], { error: 'syntax error' });
  t.equal(JSON.stringify([dumpDatabaseJson(a.sm.chassis), monitors(a)]), before, 'nothing changed');

  // Allowed: status by _uuid (as ovn-controller writes it) and by another column; the flows follow.
  t.match(log.sb([{ op: 'update', table: 'Service_Monitor', where: byUuid, row: { status: 'offline' } }]), { kind: 'committed', results: [{ count: 1 }] });
  t.same(monitors(a).find((m) => m['logical_port'] === 'vm1')?.['status'], ['offline']);
  t.equal(lbActions(a, '10.0.0.100'), 'reg0[1] = 0; ct_lb_mark(backends=10.0.0.2:80);', 'the offline backend leaves ct_lb_mark');
  t.match(log.sb([{ op: 'update', table: 'Service_Monitor', where: [['logical_port', '==', 'vm2']], row: { status: 'error' } }]), { kind: 'committed', results: [{ count: 1 }] });
  t.equal(lbActions(a, '10.0.0.100'), 'drop;', 'no backend left: the VIP drops');
  // A where on status sees what an earlier op of the same transaction set.
  t.match(log.sb([
    { op: 'update', table: 'Service_Monitor', where: byUuid, row: { status: 'online' } },
    { op: 'update', table: 'Service_Monitor', where: [['status', '==', 'online']], row: {} },
  ]), { kind: 'committed', results: [{ count: 1 }, { count: 1 }] });
  t.same(monitors(a).find((m) => m['logical_port'] === 'vm1')?.['status'], ['offline'], '"online" shows as offline while vm1 is not up');
  t.match(log.sb([{ op: 'update', table: 'Port_Binding', where: [['logical_port', '==', 'vm1']], row: { up: true } }]), { kind: 'committed' });
  t.same(monitors(a).find((m) => m['logical_port'] === 'vm1')?.['status'], ['online'], 'and as online once it is');
  t.equal(lbActions(a, '10.0.0.100'), 'reg0[1] = 0; ct_lb_mark(backends=10.0.0.1:80);');
  t.match(log.sb([{ op: 'update', table: 'Service_Monitor', where: [['logical_port', '==', 'nobody']], row: { status: 'online' } }]), { kind: 'committed', results: [{ count: 0 }] }, 'a where that selects nothing counts 0');

  // Replicas agree; a snapshot carries the statuses (northd's history), and a restored replica
  // derives the same rows and flows.
  t.same(monitors(b), monitors(a), 'the other replica has the same rows');
  const c = new Replica();
  c.sm.restore(a.sm.snapshot());
  t.same(monitors(c), monitors(a), 'a replica restored from a snapshot has the same rows');
  t.equal(lbActions(c, '10.0.0.100'), lbActions(a, '10.0.0.100'), 'and the same flows');
  t.same([...c.projection.serviceMonitorStatus()].sort(), [...a.projection.serviceMonitorStatus()].sort());

  // The row goes (its mapping removed): its status goes with it, on every replica.
  t.match(log.nb([{ op: 'mutate', table: 'Load_Balancer', where: [['name', '==', 'lb']], mutations: [['ip_port_mappings', 'delete', ['set', ['10.0.0.2']]]] }]), { kind: 'committed' });
  t.equal(monitors(a).length, 1);
  t.equal(a.projection.serviceMonitorStatus().size, 1, 'only vm1\'s status is kept');
  t.same([...b.projection.serviceMonitorStatus()], [...a.projection.serviceMonitorStatus()]);
});

t.test('a chassis claims a virtual port with its virtual_parent (pinctrl) and releases it (the binding planner); northd follows', async (t) => {
  const a = new Replica();
  const b = new Replica();
  const log = new Log([a, b]);
  t.match(log.nb([{ op: 'insert', table: 'NB_Global', row: {} }]), { kind: 'committed' });
  t.match(log.nb([
    { op: 'insert', table: 'Logical_Router', 'uuid-name': 'r', row: { name: 'lr0', ports: ['named-uuid', 'rp'] } },
    { op: 'insert', table: 'Logical_Router_Port', 'uuid-name': 'rp', row: { name: 'lr0-sw0', mac: '00:00:00:00:ff:01', networks: '10.0.0.1/24' } },
    { op: 'insert', table: 'Logical_Switch', row: { name: 'sw0', ports: ['set', [['named-uuid', 'p'], ['named-uuid', 'v'], ['named-uuid', 'rl']]] } },
    { op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': 'p', row: { name: 'vm1', addresses: '00:00:00:00:00:01 10.0.0.11' } },
    { op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': 'v', row: { name: 'vip', type: 'virtual', options: ['map', [['virtual-ip', '10.0.0.100'], ['virtual-parents', 'vm1']]] } },
    { op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': 'rl', row: { name: 'sw0-lr0', type: 'router', addresses: 'router', options: ['map', [['router-port', 'lr0-sw0']]] } },
  ]), { kind: 'committed' });
  t.match(log.sb(registerChassis('hv1', '192.0.2.1')), { kind: 'committed' });
  const hv1 = chassisUuid(a, 'hv1');
  const resolve = (r: Replica): string[] => [...(r.projection.view().get('Logical_Flow')?.values() ?? [])]
    .map((f) => f as unknown as { match: string; actions: string }).filter((f) => f.match === 'outport == "lr0-sw0" && reg0 == 10.0.0.100').map((f) => f.actions);
  t.same(resolve(a), ['eth.dst = 00:00:00:00:00:00; next;'], 'unclaimed: the router asks for the VIP');

  // pinctrl's claim: chassis and virtual_parent, by the row's UUID.
  const vipUuid = pb(a, 'vip')?._uuid as string;
  const claim = log.sb([{ op: 'update', table: 'Port_Binding', where: [['_uuid', '==', ['uuid', vipUuid]]], row: { chassis: ['uuid', hv1], virtual_parent: 'vm1' } }]);
  t.match(claim, { kind: 'committed', results: [{ count: 1 }] });
  t.same(pb(a, 'vip')?.virtual_parent, ['vm1'], 'virtual_parent is a column a chassis writes');
  t.same(pb(a, 'vip')?.chassis, [hv1]);
  t.same(resolve(a), ['eth.dst = 00:00:00:00:00:01; next;'], 'claimed: the VIP resolves to the parent\'s MAC');
  // The planner's claim is conditional on virtual_parent: a stale one matches nothing.
  t.match(log.sb([{ op: 'update', table: 'Port_Binding', where: [['_uuid', '==', ['uuid', vipUuid]], ['virtual_parent', '==', 'vm9']], row: { up: true } }]), { kind: 'committed', results: [{ count: 0 }] });
  // The planner's release, conditional on being bound here.
  const release = log.sb([{ op: 'update', table: 'Port_Binding', where: [['_uuid', '==', ['uuid', vipUuid]], ['chassis', '==', ['uuid', hv1]]], row: { chassis: ['set', []], up: false, encap: ['set', []], virtual_parent: ['set', []] } }]);
  t.match(release, { kind: 'committed', results: [{ count: 1 }] });
  t.same([pb(a, 'vip')?.chassis, pb(a, 'vip')?.virtual_parent], [[], []]);
  t.same(resolve(a), ['eth.dst = 00:00:00:00:00:00; next;'], 'released: unclaimed again');
  t.same([...b.projection.portBindings()], [...a.projection.portBindings()], 'replicas agree');
});

t.test("an operator's Connection, SSL and SB_Global columns: kept beside northd's row, collected when unnamed, refused for northd's columns", async (t) => {
  const a = new Replica();
  const b = new Replica();
  const log = new Log([a, b]);
  const sbGlobal = (): string => a.projection.sbGlobalUuid() as string;
  t.match(log.nb([{ op: 'insert', table: 'NB_Global', row: {} }]), { kind: 'committed' });
  const uuid = sbGlobal();
  t.ok(uuid, 'northd made SB_Global');
  t.equal(a.sm.chassis.rows('SB_Global').size, 0, "the operator's half is made on first use");
  // An update of a row that is not SB_Global's names nothing, and makes nothing.
  t.match(log.sb([{ op: 'update', table: 'SB_Global', where: [['_uuid', '==', ['uuid', '0b7f0e4c-0000-4000-8000-000000000000']]], row: { external_ids: ['map', [['k', 'v']]] } }]), { kind: 'committed', results: [{ count: 0 }] });
  // ovn-sbctl set-connection: a Connection row, named from SB_Global.connections, with the IDL's verify.
  const set = log.sb([
    { op: 'wait', table: 'SB_Global', where: [['_uuid', '==', ['uuid', uuid]]], columns: ['connections'], until: '==', rows: [{ connections: ['set', []] }], timeout: 0 },
    { op: 'insert', table: 'Connection', 'uuid-name': 'c', row: { target: 'ptcp:6642' } },
    { op: 'update', table: 'SB_Global', where: [['_uuid', '==', ['uuid', uuid]]], row: { connections: ['named-uuid', 'c'] } },
  ]);
  t.match(set, { kind: 'committed', results: [{}, { uuid: ['uuid', /./] }, { count: 1 }] }, 'three results, for the three operations');
  const conn = [...a.sm.chassis.rows('Connection').keys()];
  t.equal(conn.length, 1);
  t.same(a.sm.chassis.get('SB_Global', uuid)?.connections, conn, "the operator's half of SB_Global names it, under northd's row's UUID");
  t.match(log.sb([{ op: 'update', table: 'Connection', where: [], row: { inactivity_probe: 180000 } }]), { kind: 'committed', results: [{ count: 1 }] });
  // northd's columns and the row itself stay northd's; a refused transaction changes nothing.
  const before = JSON.stringify(dumpDatabaseJson(a.sm.chassis));
  const refused = [
    [{ op: 'update', table: 'SB_Global', where: [], row: { options: ['map', [['x', '1']]] } }],
    [{ op: 'update', table: 'SB_Global', where: [['nb_cfg', '==', 0]], row: { external_ids: ['map', []] } }],
    [{ op: 'insert', table: 'Connection', row: { target: 'ptcp:1' } }, { op: 'delete', table: 'SB_Global', where: [] }],
    [{ op: 'select', table: 'SB_Global', where: [] }],
    [{ op: 'insert', table: 'SB_Global', row: {} }],
  ];
  for (const ops of refused) {
    const r = log.sb(ops);
    t.equal(r.kind, 'failed', `refused: ${JSON.stringify(ops).slice(0, 90)}`);
    t.match((r as { results: unknown[] }).results.find((x) => x !== null && typeof x === 'object' && 'error' in x), { error: 'permission error', details: /SB_Global/ });
  }
  t.equal(JSON.stringify(dumpDatabaseJson(a.sm.chassis)), before, 'unchanged');
  t.match(log.sb([{ op: 'select', table: 'SB_Global', where: [], columns: ['_uuid', 'connections'] }]), { kind: 'committed', results: [{ rows: [{ _uuid: ['uuid', uuid], connections: ['uuid', conn[0]] }] }] }, 'its own columns can be read');
  // A snapshot carries them; replicas agree.
  const c = new Replica();
  c.sm.restore(a.sm.snapshot());
  t.equal(JSON.stringify(dumpDatabaseJson(c.sm.chassis)), JSON.stringify(dumpDatabaseJson(a.sm.chassis)));
  t.equal(JSON.stringify(dumpDatabaseJson(b.sm.chassis)), JSON.stringify(dumpDatabaseJson(a.sm.chassis)));
  // ovn-sbctl del-connection: no longer named, the Connection row is collected.
  t.match(log.sb([{ op: 'update', table: 'SB_Global', where: [['_uuid', '==', ['uuid', uuid]]], row: { connections: ['set', []] } }]), { kind: 'committed' });
  t.equal(a.sm.chassis.rows('Connection').size, 0, 'collected, as OVSDB collects a row nothing names');
});

t.test('IGMP_Group: refused before apply version 3, then chassis write it and northd makes multicast groups; replicas and a restore agree', async (t) => {
  const a = new Replica();
  const b = new Replica();
  const log = new Log([a, b]);
  log.nb([{ op: 'insert', table: 'NB_Global', row: {} }]);
  log.nb([
    { op: 'insert', table: 'Logical_Switch', row: { name: 'sw0', other_config: ['map', [['mcast_snoop', 'true']]], ports: ['set', [['named-uuid', 'v1'], ['named-uuid', 'v2']]] } },
    { op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': 'v1', row: { name: 'vm1', addresses: '00:00:00:00:00:01 10.0.0.1' } },
    { op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': 'v2', row: { name: 'vm2', addresses: '00:00:00:00:00:02 10.0.0.2' } },
  ]);
  log.sb(registerChassis('hv1', '192.0.2.1'));
  const dp = [...a.projection.view().get('Datapath_Binding')?.keys() ?? []][0] as string;
  const pbUuid = (port: string): string => pb(a, port)?._uuid as string;
  const join = (address: string, ports: string[], chassis = 'hv1'): unknown[] => [{
    op: 'insert', table: 'IGMP_Group',
    row: { address, datapath: ['uuid', dp], chassis: ['uuid', chassisUuid(a, chassis)], ports: ['set', ports.map((p) => ['uuid', pbUuid(p)])] },
  }];
  const out = log.sb(join('239.1.1.1', ['vm1']));
  t.match(out, { kind: 'failed' }, 'at apply version 1 the table is northd\'s');
  t.match(JSON.stringify(out), /IGMP_Group is read-only until every member/, 'with a clear reason');
  t.equal(a.sm.chassis.rows('IGMP_Group').size, 0, 'nothing written');

  log.push(encodeCommand({ kind: 'apply-version', version: 3, seed: [9, 9, 9, 9] }));
  t.equal(a.sm.applyVersion, 3);
  t.match(log.sb(join('239.1.1.1', ['vm1'])), { kind: 'committed' });
  t.match(log.sb(join('239.1.1.1', ['vm2'])), { kind: 'failed' }, 'one row per address, datapath and chassis (the table\'s index)');
  log.sb(registerChassis('hv2', '192.0.2.2'));
  t.match(log.sb(join('239.1.1.1', ['vm2'], 'hv2')), { kind: 'committed' }, 'another chassis\'s row for the group');
  const groups = (r: Replica): string[] => [...(r.projection.view().get('Multicast_Group')?.values() ?? [])]
    .filter((g) => (g.tunnel_key as number) >= 32773)
    .map((g) => `${String(g.name)} ${String(g.tunnel_key)} ${(g.ports as string[]).length}`);
  t.same(groups(a), ['239.1.1.1 32773 2'], 'one group of both ports, key 32773');
  const flow = [...(a.projection.view().get('Logical_Flow')?.values() ?? [])].find((f) => f.priority === 90 && (f.match as string).includes('239.1.1.1'));
  t.equal(flow?.actions, 'outport = "239.1.1.1"; output; ', 'its ls_in_l2_lkup flow');
  t.match(log.sb(join('239.2.2.2', ['vm2'])), { kind: 'committed' });
  t.same(groups(a).sort(), ['239.1.1.1 32773 2', '239.2.2.2 32774 1']);
  // The first group leaves; a restored replica keeps the second's key (history), a new one takes the lowest free.
  log.sb([{ op: 'delete', table: 'IGMP_Group', where: [['address', '==', '239.1.1.1']] }]);
  const c = new Replica();
  c.sm.restore(a.sm.snapshot());
  t.same(groups(c), groups(a), 'restored: the same groups and keys');
  t.same(groups(b), groups(a), 'replicas agree');
  // From here every entry goes to the restored replica too.
  const log2 = new Log([a, b, c]);
  Object.assign(log2, { index: (log as unknown as { index: number }).index, seed: (log as unknown as { seed: number }).seed });
  log2.sb(join('239.3.3.3', ['vm1']));
  t.same(groups(c).sort(), groups(a).sort(), 'and go on alike');
  t.same(groups(a).sort(), ['239.2.2.2 32774 1', '239.3.3.3 32773 1'], 'the freed key reused');
  // The Chassis goes: its rows lose their chassis (a weak reference) and northd drops them.
  log2.sb([{ op: 'delete', table: 'Chassis', where: [['name', '==', 'hv1']] }]);
  t.equal(a.sm.chassis.rows('IGMP_Group').size, 0, 'its rows go with it, as ovn-northd deletes them');
  t.same(groups(a), [], 'rows without a chassis make no group');
  t.same(groups(c), groups(a), 'the restored replica agrees');
});

t.test('Port_Binding "mutate" of chassis-owned columns and options:additional-chassis-activated: refused before apply version 4, then applied in order; a result the column cannot hold fails whole', async (t) => {
  const a = new Replica();
  const b = new Replica();
  const log = new Log([a, b]);
  log.nb([{ op: 'insert', table: 'NB_Global', row: {} }]);
  log.nb([
    { op: 'insert', table: 'Logical_Switch', row: { name: 'sw0', ports: ['set', [['named-uuid', 'v1']]] } },
    { op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': 'v1', row: { name: 'vm1', addresses: '00:00:00:00:00:01 10.0.0.1', options: ['map', [['requested-chassis', 'hv1,hv2']]] } },
  ]);
  log.sb(registerChassis('hv1', '192.0.2.1'));
  log.sb(registerChassis('hv2', '192.0.2.2'));
  const hv1 = chassisUuid(a, 'hv1');
  const hv2 = chassisUuid(a, 'hv2');
  const vm1 = pb(a, 'vm1')?._uuid as string;
  t.same([pb(a, 'vm1')?.requested_chassis, pb(a, 'vm1')?.requested_additional_chassis], [[hv1], [hv2]], 'northd resolved requested-chassis');
  const byUuid = [['_uuid', '==', ['uuid', vm1]]];
  const addHv2 = { op: 'mutate', table: 'Port_Binding', where: byUuid, mutations: [['additional_chassis', 'insert', ['set', [['uuid', hv2]]]]] };
  t.match(JSON.stringify(log.sb([{ op: 'update', table: 'Port_Binding', where: byUuid, row: { options: ['map', [['additional-chassis-activated', 'hv2']]] } }])),
    /column options is written by northd/, 'nor the activation key before version 4');
  const refused = log.sb([addHv2]);
  t.match(refused, { kind: 'failed' }, 'at apply version 1 only "update" writes a binding');
  t.match(JSON.stringify(refused), /apply version 4/, 'with a clear reason');
  t.same(pb(a, 'vm1')?.additional_chassis, [], 'nothing written');

  log.push(encodeCommand({ kind: 'apply-version', version: 4, seed: [9, 9, 9, 9] }));
  t.equal(a.sm.applyVersion, 4);
  // As ovn-controller binds: hv1 the main chassis (update), hv2 an additional one (mutate).
  t.match(log.sb([{ op: 'update', table: 'Port_Binding', where: byUuid, row: { chassis: ['uuid', hv1], up: true } }]), { kind: 'committed' });
  const added = log.sb([addHv2]);
  t.match(added, { kind: 'committed' });
  t.same(pb(a, 'vm1')?.additional_chassis, [hv2], 'hv2 is an additional chassis');
  t.same(pb(a, 'vm1')?.chassis, [hv1], 'the main chassis kept');
  // Two mutations of one column in one op, and a second op seeing the first's result.
  t.match(log.sb([
    { op: 'mutate', table: 'Port_Binding', where: byUuid, mutations: [['additional_chassis', 'insert', ['uuid', hv1]], ['additional_chassis', 'delete', ['uuid', hv2]]] },
    { op: 'mutate', table: 'Port_Binding', where: [['additional_chassis', 'includes', ['uuid', hv2]]], mutations: [['up', 'delete', true]] },
  ]), { kind: 'committed', results: [{ count: 1 }, { count: 1 }] });
  t.same([pb(a, 'vm1')?.additional_chassis, pb(a, 'vm1')?.up], [[hv1], []], 'applied in order (the where sees the binding as it was before the transaction)');
  // A second main chassis: the column holds one. The whole transaction fails, the Encap insert too.
  const encaps = a.sm.chassis.rows('Encap').size;
  const over = log.sb([
    { op: 'insert', table: 'Encap', row: { type: 'geneve', ip: '192.0.2.9', chassis_name: 'hv1', options: ['map', [['csum', 'true']]] } },
    { op: 'mutate', table: 'Port_Binding', where: byUuid, mutations: [['chassis', 'insert', ['uuid', hv2]]] },
  ]);
  t.match(over, { kind: 'failed' });
  t.match(JSON.stringify(over), /constraint violation/, 'a constraint violation');
  t.equal(a.sm.chassis.rows('Encap').size, encaps, 'the Encap insert did not happen');
  t.same(pb(a, 'vm1')?.chassis, [hv1], 'nor the mutation');
  // An Encap the same transaction inserts (and hv2 takes, or it would be collected), by name; a
  // column northd writes is refused.
  t.match(log.sb([
    { op: 'insert', table: 'Encap', 'uuid-name': 'e9', row: { type: 'geneve', ip: '192.0.2.9', chassis_name: 'hv2', options: ['map', [['csum', 'true']]] } },
    { op: 'mutate', table: 'Chassis', where: [['name', '==', 'hv2']], mutations: [['encaps', 'insert', ['named-uuid', 'e9']]] },
    { op: 'mutate', table: 'Port_Binding', where: byUuid, mutations: [['additional_encap', 'insert', ['named-uuid', 'e9']]] },
  ]), { kind: 'committed' });
  t.equal((pb(a, 'vm1')?.additional_encap as string[]).length, 1, 'the new Encap in additional_encap');
  const northds = log.sb([{ op: 'mutate', table: 'Port_Binding', where: byUuid, mutations: [['options', 'insert', ['map', [['x', 'y']]]]] }]);
  t.match(JSON.stringify(northds), /a chassis may set only options:additional-chassis-activated \(not x\)/, 'of options, one key only');
  t.match(JSON.stringify(log.sb([{ op: 'mutate', table: 'Port_Binding', where: byUuid, mutations: [['tag', 'insert', ['set', [5]]]] }])), /column tag is written by northd/);
  // That key, as ovn-controller sets it (setkey: delete, then insert) and by a whole-map update.
  const activate = (value: string): unknown[] => [{ op: 'mutate', table: 'Port_Binding', where: byUuid, mutations: [
    ['options', 'delete', ['set', ['additional-chassis-activated']]], ['options', 'insert', ['map', [['additional-chassis-activated', value]]]],
  ] }];
  t.match(log.sb(activate('hv2')), { kind: 'committed' });
  const options = (): Record<string, string> => Object.fromEntries(pb(a, 'vm1')?.options as Map<string, string>);
  t.same(options(), { 'additional-chassis-activated': 'hv2', 'requested-chassis': 'hv1,hv2' }, 'northd shows it while vm1 has an additional chassis');
  t.match(log.sb([{ op: 'update', table: 'Port_Binding', where: byUuid, row: { options: ['map', [['requested-chassis', 'hv1,hv2']]] } }]), { kind: 'committed' }, 'a whole map without it withdraws it');
  t.same(options(), { 'requested-chassis': 'hv1,hv2' });
  t.match(JSON.stringify(log.sb([{ op: 'update', table: 'Port_Binding', where: byUuid, row: { options: ['map', []] } }])), /not requested-chassis/, 'a whole map must keep northd\'s keys');
  log.sb(activate('hv2'));
  // The migration ends: the key goes, and is not back for the next one.
  log.nb([{ op: 'mutate', table: 'Logical_Switch_Port', where: [['name', '==', 'vm1']], mutations: [['options', 'delete', ['set', ['requested-chassis']]], ['options', 'insert', ['map', [['requested-chassis', 'hv2']]]]] }]);
  t.same(options(), { 'requested-chassis': 'hv2' });
  log.nb([{ op: 'mutate', table: 'Logical_Switch_Port', where: [['name', '==', 'vm1']], mutations: [['options', 'delete', ['set', ['requested-chassis']]], ['options', 'insert', ['map', [['requested-chassis', 'hv2,hv1']]]]] }]);
  t.same(options(), { 'requested-chassis': 'hv2,hv1' }, 'a new migration starts unactivated');
  const c = new Replica();
  c.sm.restore(a.sm.snapshot());
  t.same(Object.fromEntries(pb(c, 'vm1')?.options as Map<string, string>), options(), 'a restored replica agrees');
  t.same(dumpDatabaseJson(b.sm.chassis), dumpDatabaseJson(a.sm.chassis), 'replicas agree');
  t.same([...b.projection.portBindings().values()].map((r) => r.additional_chassis), [...a.projection.portBindings().values()].map((r) => r.additional_chassis));
});

t.test('Controller_Event: refused before apply version 6, then a chassis reports events and the CMS deletes them; the Chassis going leaves them without one', async (t) => {
  const a = new Replica();
  const b = new Replica();
  const log = new Log([a, b]);
  log.nb([{ op: 'insert', table: 'NB_Global', row: {} }]);
  log.sb(registerChassis('hv1', '192.0.2.1'));
  const lb = '6f0e4c1a-0000-4000-8000-000000000001';
  const report = (vip: string, seq: number): unknown[] => [{
    op: 'insert', table: 'Controller_Event',
    row: { event_type: 'empty_lb_backends', event_info: ['map', [['vip', vip], ['protocol', 'tcp'], ['load_balancer', lb]]], chassis: ['uuid', chassisUuid(a, 'hv1')], seq_num: seq },
  }];
  const out = log.sb(report('10.0.0.100:80', 1));
  t.match(out, { kind: 'failed' }, 'at apply version 1 the table is not writable');
  t.match(JSON.stringify(out), /Controller_Event is read-only until every member of the cluster runs a build where chassis write it \(apply version 6\)/, 'with a clear reason');
  t.equal(a.sm.chassis.rows('Controller_Event').size, 0, 'nothing written');

  log.push(encodeCommand({ kind: 'apply-version', version: 6, seed: [6, 6, 6, 6] }));
  t.equal(a.sm.applyVersion, 6);
  t.match(log.sb(report('10.0.0.100:80', 1)), { kind: 'committed' });
  t.match(log.sb(report('[fd00::100]:8080', 2)), { kind: 'committed' });
  const events = (r: Replica): string[] => [...r.sm.chassis.rows('Controller_Event').values()]
    .map((e) => `${String(e.event_type)} ${(e.event_info as ReadonlyMap<string, string>).get('vip') ?? '?'} ${String(e.seq_num)} ${(e.chassis as string[]).length}`).sort();
  t.same(events(a), ['empty_lb_backends 10.0.0.100:80 1 1', 'empty_lb_backends [fd00::100]:8080 2 1']);
  t.match(log.sb([{ ...(report('x', 3)[0] as object), row: { event_type: 'no_such_event', seq_num: 3 } }]), { kind: 'failed' }, 'an event type the schema does not name is a constraint violation');
  // The CMS handles one and deletes it (ovn-sbctl destroy, or its IDL).
  t.match(log.sb([{ op: 'delete', table: 'Controller_Event', where: [['seq_num', '==', 1]] }]), { kind: 'committed', results: [{ count: 1 }] });
  t.same(events(a), ['empty_lb_backends [fd00::100]:8080 2 1']);
  // The Chassis goes: the weak reference empties, the event stays for the CMS.
  log.sb([{ op: 'delete', table: 'Chassis', where: [['name', '==', 'hv1']] }]);
  t.same(events(a), ['empty_lb_backends [fd00::100]:8080 2 0'], 'kept, without its chassis');
  const c = new Replica();
  c.sm.restore(a.sm.snapshot());
  t.same(events(c), events(a), 'a restore agrees');
  t.same(events(b), events(a), 'replicas agree');
});
