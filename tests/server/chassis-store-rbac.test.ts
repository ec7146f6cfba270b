// OVN's RBAC in apply: an sb-txn carrying a session's role and id (the door's remote has
// role=ovn-controller) is held to the ovn-controller role's permissions on every replica — a
// chassis registers itself and claims ports, and changes nothing of another chassis, of the
// rows northd derives beyond their chassis-owned columns, or of what operators write. Refused
// transactions change nothing; before apply version 11 a restricted write is refused whole.
// Method: hand-made log entries into two NbStateMachines with the real northd projection.
import t from 'tap';
import type { Entry } from '../../cluster/types.js';
import type { RbacSession } from '../../ovsdb/index.js';
import { dumpDatabaseJson, parseDatabaseSchema } from '../../ovsdb/index.js';
import { NB_SCHEMA_JSON } from '../../ovsdb/schemas/index.js';
import { APPLY_VERSION_MAX, APPLY_VERSION_RBAC } from '../../server/apply-version.js';
import { decodeCommand, encodeCommand, nbTxn, sbTxn } from '../../server/commands.js';
import type { ApplyResult } from '../../server/nb-state-machine.js';
import { NbStateMachine } from '../../server/nb-state-machine.js';
import { NorthdProjection } from '../../server/northd-projection.js';

const schema = parseDatabaseSchema(NB_SCHEMA_JSON);

class Replica {
  readonly projection = new NorthdProjection();
  readonly sm = new NbStateMachine({ schema, projection: this.projection });
  /** Everything a write could change: the chassis database, the NB, northd's SB view. */
  state(): string {
    const view = [...this.projection.view()].map(([table, rows]) => [table, [...rows.values()]]);
    return JSON.stringify([dumpDatabaseJson(this.sm.chassis), dumpDatabaseJson(this.sm.nb), view], (_k, v: unknown) => (v instanceof Map ? [...v] : v));
  }
}

/** A log applied to every replica, first moved to `version`. */
class Log {
  private index = 0;
  private seed = 1;
  constructor(private readonly replicas: readonly Replica[], version: number) {
    this.push(encodeCommand({ kind: 'apply-version', version, seed: [9, 9, 9, 9] }));
  }
  push(data: Uint8Array): ApplyResult {
    const e: Entry = { term: 1, index: ++this.index, type: 'normal', data };
    const results = this.replicas.map((r) => r.sm.apply(e, false));
    return results[0] as ApplyResult;
  }
  nb(ops: unknown[]): ApplyResult {
    return this.push(encodeCommand(nbTxn(ops, [this.seed++, 1, 2, 3], 0, 1000 + this.index)));
  }
  sb(ops: unknown[], rbac?: RbacSession): ApplyResult {
    return this.push(encodeCommand(sbTxn(ops, [this.seed++, 4, 5, 6], 0, 5000, rbac)));
  }
}

const hv1: RbacSession = { role: 'ovn-controller', id: 'hv1' };
const registerChassis = (name: string, ip: string): unknown[] => [
  { op: 'insert', table: 'Encap', 'uuid-name': 'e', row: { type: 'geneve', ip, chassis_name: name } },
  { op: 'insert', table: 'Chassis', 'uuid-name': 'c', row: { name, hostname: name, encaps: ['named-uuid', 'e'] } },
  { op: 'insert', table: 'Chassis_Private', row: { name, chassis: ['named-uuid', 'c'] } },
];
const refusal = (what: string, table: string, session: RbacSession = hv1): { error: string; details: string } => ({
  error: 'permission error',
  details: `RBAC rules for client "${session.id ?? '(null)'}" role "${session.role}" ${what} table "${table}".`,
});
const insertInto = (table: string, session?: RbacSession): { error: string; details: string } => refusal('prohibit row insertion into', table, session);
const modify = (table: string, session?: RbacSession): { error: string; details: string } => refusal('prohibit modification of', table, session);
const mutateOn = (table: string): { error: string; details: string } => refusal('prohibit mutate operation on', table);
const deleteFrom = (table: string): { error: string; details: string } => refusal('prohibit row deletion from', table);

/** A cluster at `version` with sw0 (vm1, vm2, a health-checked load balancer on vm1) and chassis hv2 and hv3 registered without RBAC. */
function setup(version: number): { a: Replica; b: Replica; log: Log } {
  const a = new Replica();
  const b = new Replica();
  const log = new Log([a, b], version);
  log.nb([{ op: 'insert', table: 'NB_Global', row: {} }]);
  log.nb([
    { op: 'insert', table: 'Logical_Switch', row: { name: 'sw0', ports: ['set', [['named-uuid', 'p1'], ['named-uuid', 'p2']]], load_balancer: ['named-uuid', 'lb'] } },
    { op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': 'p1', row: { name: 'vm1', addresses: '00:00:00:00:00:01 10.0.0.1' } },
    { op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': 'p2', row: { name: 'vm2', addresses: '00:00:00:00:00:02 10.0.0.2' } },
    { op: 'insert', table: 'Load_Balancer_Health_Check', 'uuid-name': 'hc', row: { vip: '10.0.0.100:80' } },
    { op: 'insert', table: 'Load_Balancer', 'uuid-name': 'lb', row: { name: 'lb', vips: ['map', [['10.0.0.100:80', '10.0.0.1:80']]], health_check: ['named-uuid', 'hc'], ip_port_mappings: ['map', [['10.0.0.1', 'vm1:10.0.0.254']]] } },
  ]);
  log.sb(registerChassis('hv2', '192.0.2.2'));
  log.sb(registerChassis('hv3', '192.0.2.3'));
  return { a, b, log };
}

const chassisUuid = (r: Replica, name: string): string => [...r.sm.chassis.rows('Chassis').values()].find((c) => c.name === name)?._uuid as string;
const lspUp = (r: Replica, port: string): unknown => [...r.sm.nb.rows('Logical_Switch_Port').values()].find((x) => x.name === port)?.up;
const pb = (r: Replica, port: string): Record<string, unknown> | undefined => {
  for (const row of r.projection.portBindings().values()) if (row.logical_port === port) return row as unknown as Record<string, unknown>;
  return undefined;
};

t.test('the sb-txn command carries the session only when there is one', async (t) => {
  const plain = encodeCommand(sbTxn([{ op: 'comment', comment: 'x' }], [1, 2, 3, 4], 0, 7));
  const withRbac = encodeCommand(sbTxn([{ op: 'comment', comment: 'x' }], [1, 2, 3, 4], 0, 7, hv1));
  t.same(decodeCommand(withRbac), { kind: 'sb-txn', ops: [{ op: 'comment', comment: 'x' }], seed: [1, 2, 3, 4], elapsedMs: 0, timestampMs: 7, rbac: hv1 }, 'role and id round-trip');
  t.same(decodeCommand(encodeCommand(sbTxn([], [1, 2, 3, 4], 0, 7, { role: 'ovn-controller' }))), { kind: 'sb-txn', ops: [], seed: [1, 2, 3, 4], elapsedMs: 0, timestampMs: 7, rbac: { role: 'ovn-controller' } }, 'a session without an id keeps having none');
  t.notOk('rbac' in (decodeCommand(plain) as object), 'an unrestricted write has no session');
  t.ok(withRbac.byteLength > plain.byteLength, 'and encodes without the extra element');
  t.match(decodeCommand(encodeCommand({ kind: 'sb-txn', ops: [], seed: [1, 2, 3, 4], elapsedMs: 0, timestampMs: 0, rbac: { role: '' } })), { kind: 'malformed', reason: /bad rbac/ }, 'an empty role is not a session');
});

t.test('a chassis under RBAC registers itself, claims ports and reports status; the rest of the SB is not its to change', async (t) => {
  const { a, b, log } = setup(APPLY_VERSION_MAX);
  t.ok(a.sm.applyVersion >= APPLY_VERSION_RBAC, 'the cluster enforces RBAC');

  t.match(log.sb(registerChassis('hv1', '192.0.2.1'), hv1), { kind: 'committed' }, 'hv1 inserts its Chassis, its Encap (chassis_name hv1) and its Chassis_Private');
  const hv1Uuid = chassisUuid(a, 'hv1');
  t.ok(hv1Uuid);
  t.match(log.sb([
    { op: 'update', table: 'Chassis', where: [['name', '==', 'hv1']], row: { nb_cfg: 3, external_ids: ['map', [['ovn-bridge-mappings', '']]] } },
    { op: 'mutate', table: 'Chassis', where: [['name', '==', 'hv1']], mutations: [['other_config', 'insert', ['map', [['datapath-type', 'netdev']]]]] },
    { op: 'update', table: 'Chassis_Private', where: [['name', '==', 'hv1']], row: { nb_cfg: 3, nb_cfg_timestamp: 100 } },
    { op: 'update', table: 'Encap', where: [['chassis_name', '==', 'hv1']], row: { ip: '192.0.2.11' } },
  ], hv1), { kind: 'committed', results: [{ count: 1 }, { count: 1 }, { count: 1 }, { count: 1 }] }, 'and updates and mutates its own rows, in the columns its role lists');

  const claim = log.sb([{ op: 'update', table: 'Port_Binding', where: [['logical_port', '==', 'vm1']], row: { chassis: ['uuid', hv1Uuid], up: true } }], hv1);
  t.match(claim, { kind: 'committed', results: [{ count: 1 }] }, 'it claims vm1: Port_Binding chassis and up');
  t.same(pb(a, 'vm1')?.chassis, [hv1Uuid]);
  t.same(lspUp(a, 'vm1'), [true], 'and Logical_Switch_Port.up follows');
  const monitor = [...(a.projection.view().get('Service_Monitor')?.values() ?? [])][0];
  t.match(log.sb([{ op: 'update', table: 'Service_Monitor', where: [['_uuid', '==', ['uuid', monitor?._uuid as string]]], row: { status: 'offline' } }], hv1), { kind: 'committed' }, 'it reports a Service_Monitor status');
  t.match(log.sb([{ op: 'insert', table: 'MAC_Binding', row: { logical_port: 'vm1', ip: '10.0.0.9', mac: '00:00:00:00:00:09', datapath: ['uuid', pb(a, 'vm1')?.datapath as string] } }], hv1), { kind: 'committed' }, 'and learns a MAC_Binding (any chassis may)');
  t.equal(a.state(), b.state(), 'both replicas agree');

  const denied: [string, unknown[], unknown][] = [
    ['a Chassis of another name', [{ op: 'insert', table: 'Chassis', row: { name: 'hv4', hostname: 'hv4' } }], insertInto('Chassis')],
    ['an Encap of another chassis', [{ op: 'insert', table: 'Encap', row: { type: 'geneve', ip: '192.0.2.4', chassis_name: 'hv4' } }], insertInto('Encap')],
    ['hv2\'s Encap', [{ op: 'update', table: 'Encap', where: [['chassis_name', '==', 'hv2']], row: { ip: '192.0.2.99' } }], modify('Encap')],
    ['hv2\'s Chassis', [{ op: 'update', table: 'Chassis', where: [['name', '==', 'hv2']], row: { nb_cfg: 9 } }], modify('Chassis')],
    ['every Chassis at once', [{ op: 'update', table: 'Chassis', where: [], row: { nb_cfg: 9 } }], modify('Chassis')],
    ['a mutation of hv2\'s Chassis', [{ op: 'mutate', table: 'Chassis', where: [['name', '==', 'hv2']], mutations: [['external_ids', 'insert', ['map', [['k', 'v']]]]] }], mutateOn('Chassis')],
    ['hv3\'s Chassis deleted', [{ op: 'delete', table: 'Chassis', where: [['name', '==', 'hv3']] }], deleteFrom('Chassis')],
    ['hv2\'s Chassis_Private', [{ op: 'update', table: 'Chassis_Private', where: [['name', '==', 'hv2']], row: { nb_cfg: 9 } }], modify('Chassis_Private')],
    ['its own hostname (not a column the role updates)', [{ op: 'update', table: 'Chassis', where: [['name', '==', 'hv1']], row: { hostname: 'elsewhere' } }], modify('Chassis')],
    ['its own Chassis renamed', [{ op: 'update', table: 'Chassis', where: [['name', '==', 'hv1']], row: { name: 'hv2b' } }], modify('Chassis')],
    ['a Port_Binding inserted', [{ op: 'insert', table: 'Port_Binding', row: { logical_port: 'x', tunnel_key: 9, datapath: ['uuid', pb(a, 'vm1')?.datapath as string] } }], insertInto('Port_Binding')],
    ['a Port_Binding deleted', [{ op: 'delete', table: 'Port_Binding', where: [['logical_port', '==', 'vm2']] }], deleteFrom('Port_Binding')],
    ['a Port_Binding column northd writes: RBAC\'s error, not ovnts\'s', [{ op: 'update', table: 'Port_Binding', where: [['logical_port', '==', 'vm2']], row: { tunnel_key: 99 } }], modify('Port_Binding')],
    ['a Service_Monitor column other than status', [{ op: 'update', table: 'Service_Monitor', where: [], row: { port: 81 } }], modify('Service_Monitor')],
    ['a logical flow', [{ op: 'update', table: 'Logical_Flow', where: [], row: { priority: 1 } }], modify('Logical_Flow')],
    ['set-connection', [{ op: 'insert', table: 'Connection', 'uuid-name': 'c', row: { target: 'ptcp:6642' } }, { op: 'update', table: 'SB_Global', where: [], row: { connections: ['named-uuid', 'c'] } }], insertInto('Connection')],
    ['SB_Global\'s connections', [{ op: 'update', table: 'SB_Global', where: [], row: { connections: ['set', []] } }], modify('SB_Global')],
    ['set-ssl', [{ op: 'insert', table: 'SSL', row: { private_key: 'k', certificate: 'c', ca_cert: 'a' } }], insertInto('SSL')],
    ['the RBAC tables', [{ op: 'insert', table: 'RBAC_Role', row: { name: 'ovn-controller' } }], insertInto('RBAC_Role')],
  ];
  for (const [what, ops, error] of denied) {
    const before = a.state();
    // Each refused write follows one hv1 may make, which must not happen either. (The result of
    // that first update is its count when the refusal came from the rows, found as the
    // transaction ran, and {} when it came before anything ran, as for every refusal of a table
    // northd derives.)
    const r = log.sb([{ op: 'update', table: 'Chassis', where: [['name', '==', 'hv1']], row: { nb_cfg: 42 } }, ...ops], hv1);
    t.match(r, { kind: 'failed', results: [{}, error, ...ops.slice(1).map(() => null)] }, `refused: ${what}`);
    t.equal(a.state(), before, `${what}: nothing changed`);
  }
  t.equal(a.state(), b.state(), 'the replicas still agree');

  // The same writes without RBAC (an operator's, through a remote without a role) go through.
  t.match(log.sb([{ op: 'update', table: 'Chassis', where: [['name', '==', 'hv2']], row: { nb_cfg: 9 } }, { op: 'delete', table: 'Chassis', where: [['name', '==', 'hv3']] }]), { kind: 'committed', results: [{ count: 1 }, { count: 1 }] },
    'an unrestricted session changes hv2 and deletes hv3');
});

t.test('a session without an id may read and write nothing; one of another role neither', async (t) => {
  const { a, log } = setup(APPLY_VERSION_MAX);
  const anonymous: RbacSession = { role: 'ovn-controller' };
  const before = a.state();
  t.match(log.sb(registerChassis('hv1', '192.0.2.1'), anonymous), { kind: 'failed', results: [insertInto('Encap', anonymous), null, null] }, 'no id: not even its own registration');
  t.match(log.sb([{ op: 'update', table: 'Port_Binding', where: [['logical_port', '==', 'nothing']], row: { up: true } }], anonymous), { kind: 'failed', results: [modify('Port_Binding', anonymous)] }, 'nor an update that selects no row');
  const other: RbacSession = { role: 'ovn-ic', id: 'hv1' };
  t.match(log.sb(registerChassis('hv1', '192.0.2.1'), other), { kind: 'failed', results: [insertInto('Encap', other), null, null] }, 'a role OVN does not define has no permission');
  t.equal(a.state(), before, 'nothing changed');
  const read = log.sb([
    { op: 'wait', table: 'Chassis', where: [['name', '==', 'hv2']], columns: ['name'], until: '==', rows: [{ name: 'hv2' }], timeout: 0 },
    { op: 'select', table: 'Chassis', where: [], columns: ['name'] },
    // The operator's half of SB_Global is made on first use inside the transaction: that
    // insert is the store's own, not the session's.
    { op: 'select', table: 'SB_Global', where: [], columns: ['connections'] },
  ], anonymous);
  t.match(read, { kind: 'committed', results: [{}, { rows: [{ name: 'hv2' }, { name: 'hv3' }] }, { rows: [{ connections: ['set', []] }] }] }, 'reads are never restricted');
});

t.test('before apply version 11 a restricted write is refused whole, never applied unrestricted', async (t) => {
  const { a, b, log } = setup(APPLY_VERSION_RBAC - 1);
  t.equal(a.sm.applyVersion, APPLY_VERSION_RBAC - 1);
  const before = a.state();
  const r = log.sb([{ op: 'select', table: 'Chassis', where: [] }, ...registerChassis('hv1', '192.0.2.1')], hv1);
  t.match(r, {
    kind: 'failed',
    results: [{}, { error: 'permission error', details: 'RBAC rules for client "hv1" role "ovn-controller" cannot be enforced until every member of the cluster runs a build that enforces them (apply version 11); the write is refused rather than applied without them' }, null, null],
  }, 'refused at its first write, saying what the cluster needs');
  t.match(log.sb([{ op: 'update', table: 'Chassis', where: [['name', '==', 'hv2']], row: { nb_cfg: 5 } }], hv1), { kind: 'failed' }, 'a write RBAC would refuse is refused too');
  t.equal(a.state(), before, 'nothing changed');
  t.match(log.sb([{ op: 'select', table: 'Chassis', where: [], columns: ['name'] }], hv1), { kind: 'committed', results: [{ rows: [{ name: 'hv2' }, { name: 'hv3' }] }] }, 'a transaction that only reads is answered');
  t.match(log.sb(registerChassis('hv1', '192.0.2.1')), { kind: 'committed' }, 'and unrestricted writes go on as before');
  log.push(encodeCommand({ kind: 'apply-version', version: APPLY_VERSION_RBAC, seed: [8, 8, 8, 8] }));
  t.match(log.sb([{ op: 'update', table: 'Chassis', where: [['name', '==', 'hv1']], row: { nb_cfg: 5 } }], hv1), { kind: 'committed', results: [{ count: 1 }] }, 'once the cluster moves to 11, the same session writes its own rows');
  t.match(log.sb([{ op: 'update', table: 'Chassis', where: [['name', '==', 'hv2']], row: { nb_cfg: 5 } }], hv1), { kind: 'failed', results: [modify('Chassis')] }, 'and only those');
  t.equal(a.state(), b.state(), 'the replicas agree throughout');
});
