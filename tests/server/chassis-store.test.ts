// What chassis write into the SB, through the replicated state machine: a chassis registers
// (Chassis + Encap + Chassis_Private), claims a port (Port_Binding.chassis/up in northd's
// row), Logical_Switch_Port.up follows, hv_cfg follows the chassis' acknowledgements (the
// lowest, as ovn-northd computes it), deleting a chassis drops the weak references to it, and a
// write to anything northd derives is a permission error that changes nothing. Replicas fed the
// same entries agree, and a snapshot carries the chassis tables. Method: hand-made log entries
// into NbStateMachine with the real northd projection. northd hears of Chassis through the same
// log: HA members name them, ref_chassis follows the claims.
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
  private push(data: Uint8Array): ApplyResult {
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
