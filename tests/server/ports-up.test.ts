// From apply version 9 the central writes every switch port's up as ovn-northd does: true for a
// router port, false for a port no chassis binds, what the chassis reports for one it binds; in
// the entry that makes the port or changes its type or name. Before 9 only ports a chassis
// reported had one; the move to 9 writes every port's. From 12 a port of a chassis that says
// other_config:port-up-notif=true is up only once its binding's up is true (ovn-northd 23.03's
// handle_port_binding_changes). (tests/server/nb-writes-real-northd compares them with the real
// ovn-northd's after every command of its script.)
import t from 'tap';
import type { Entry } from '../../cluster/types.js';
import { parseDatabaseSchema } from '../../ovsdb/index.js';
import { NB_SCHEMA_JSON } from '../../ovsdb/schemas/index.js';
import { APPLY_VERSION_PORT_UP_NOTIF, APPLY_VERSION_PORTS_UP } from '../../server/apply-version.js';
import { encodeCommand, nbTxn, sbTxn } from '../../server/commands.js';
import { NbStateMachine } from '../../server/nb-state-machine.js';
import { NorthdProjection } from '../../server/northd-projection.js';

const schema = parseDatabaseSchema(NB_SCHEMA_JSON);

function machine(version: number): { sm: NbStateMachine; nb(ops: unknown[]): void; sb(ops: unknown[]): void; move(v: number): void } {
  const sm = new NbStateMachine({ schema, projection: new NorthdProjection() });
  const entry = (data: Uint8Array): Entry => ({ term: 1, index: sm.revision + 1, type: 'normal', data }) as Entry;
  const move = (v: number): void => void sm.apply(entry(encodeCommand({ kind: 'apply-version', version: v, seed: [7, 7, 7, 7] })), false);
  move(version);
  return {
    sm, move,
    nb: (ops) => void sm.apply(entry(encodeCommand(nbTxn(ops, [sm.revision + 1, 1, 2, 3], 0, 1000 + sm.revision))), false),
    sb: (ops) => void sm.apply(entry(encodeCommand(sbTxn(ops, [sm.revision + 1, 4, 5, 6], 0, 5000))), false),
  };
}

/** Each switch port's up: 'true', 'false' or 'empty'. */
function ups(sm: NbStateMachine): Record<string, string> {
  const out: Record<string, string> = {};
  for (const r of sm.nb.rows('Logical_Switch_Port').values()) {
    const up = r.up as readonly boolean[];
    out[r.name as string] = up.length === 0 ? 'empty' : String(up[0]);
  }
  return out;
}

const switchWithPorts: unknown[] = [
  { op: 'insert', table: 'Logical_Switch', row: { name: 'sw0', ports: ['set', [['named-uuid', 'vm1'], ['named-uuid', 'rp']]] } },
  { op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': 'vm1', row: { name: 'vm1', addresses: '00:00:00:00:00:01 10.0.0.1' } },
  { op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': 'rp', row: { name: 'sw0-r0', type: 'router', addresses: 'router', options: ['map', [['router-port', 'r0-sw0']]] } },
];

const chassis: unknown[] = [
  { op: 'insert', table: 'Encap', 'uuid-name': 'e', row: { type: 'geneve', ip: '192.0.2.1', chassis_name: 'hv1' } },
  { op: 'insert', table: 'Chassis', 'uuid-name': 'c', row: { name: 'hv1', hostname: 'hv1', encaps: ['named-uuid', 'e'] } },
];

t.test('version 9: router ports up, unbound ports down, bound ports as reported', async (t) => {
  const m = machine(APPLY_VERSION_PORTS_UP);
  m.nb([{ op: 'insert', table: 'NB_Global', row: {} }]);
  m.nb(switchWithPorts);
  t.same(ups(m.sm), { vm1: 'false', 'sw0-r0': 'true' }, 'written in the entry that makes them');
  m.sb(chassis);
  const hv1 = [...m.sm.chassis.rows('Chassis').values()][0]?._uuid as string;
  m.sb([{ op: 'update', table: 'Port_Binding', where: [['logical_port', '==', 'vm1']], row: { chassis: ['uuid', hv1], up: true } }]);
  t.same(ups(m.sm), { vm1: 'true', 'sw0-r0': 'true' }, 'vm1 up once bound and reported up');
  // A chassis's report on the router port leaves it up.
  m.sb([{ op: 'update', table: 'Port_Binding', where: [['logical_port', '==', 'sw0-r0']], row: { chassis: ['uuid', hv1], up: false } }]);
  t.equal(ups(m.sm)['sw0-r0'], 'true', 'a router port stays up whatever a chassis says');
  // Types change: the router port made a VIF (its chassis's report says down), vm1 a router port.
  m.nb([
    { op: 'update', table: 'Logical_Switch_Port', where: [['name', '==', 'sw0-r0']], row: { type: '' } },
    { op: 'update', table: 'Logical_Switch_Port', where: [['name', '==', 'vm1']], row: { type: 'router', options: ['map', [['router-port', 'nope']]] } },
  ]);
  t.same(ups(m.sm), { vm1: 'true', 'sw0-r0': 'false' }, 'each as its new type says');
  // A column other than type or name changing writes nothing.
  m.nb([{ op: 'update', table: 'Logical_Switch_Port', where: [['name', '==', 'sw0-r0']], row: { up: ['set', []] } }]);
  t.same(ups(m.sm), { vm1: 'true', 'sw0-r0': 'empty' }, 'a client clearing up is not undone until the port changes');
  m.nb([{ op: 'update', table: 'Logical_Switch_Port', where: [['name', '==', 'sw0-r0']], row: { name: 'p9' } }]);
  t.equal(ups(m.sm)['p9'], 'false', 'renamed: written again, for its new name (no chassis reported it)');
});

t.test('before version 9 only reported ports have one; the move to 9 writes every port\'s', async (t) => {
  const m = machine(APPLY_VERSION_PORTS_UP - 1);
  m.nb([{ op: 'insert', table: 'NB_Global', row: {} }]);
  m.nb(switchWithPorts);
  t.same(ups(m.sm), { vm1: 'empty', 'sw0-r0': 'empty' }, 'nothing written at 8');
  m.sb(chassis);
  const hv1 = [...m.sm.chassis.rows('Chassis').values()][0]?._uuid as string;
  m.sb([{ op: 'update', table: 'Port_Binding', where: [['logical_port', '==', 'sw0-r0']], row: { chassis: ['uuid', hv1], up: false } }]);
  t.same(ups(m.sm), { vm1: 'empty', 'sw0-r0': 'false' }, 'at 8 a router port follows its report');
  m.move(APPLY_VERSION_PORTS_UP);
  t.same(ups(m.sm), { vm1: 'false', 'sw0-r0': 'true' }, 'the move writes every port');
});

/** sw0 with its ports, and hv1 registered as ovn-controller 23.03 registers (port-up-notif=true); hv1's uuid. */
function notifyingChassisWithPorts(m: ReturnType<typeof machine>): string {
  m.nb([{ op: 'insert', table: 'NB_Global', row: {} }]);
  m.nb(switchWithPorts);
  m.sb([
    { op: 'insert', table: 'Encap', 'uuid-name': 'e', row: { type: 'geneve', ip: '192.0.2.1', chassis_name: 'hv1' } },
    { op: 'insert', table: 'Chassis', 'uuid-name': 'c', row: { name: 'hv1', hostname: 'hv1', encaps: ['named-uuid', 'e'], other_config: ['map', [['port-up-notif', 'true']]] } },
  ]);
  return [...m.sm.chassis.rows('Chassis').values()][0]?._uuid as string;
}

t.test('version 12: a port of a chassis with port-up-notif is up once its binding says so, as ovn-northd 23.03 reads it', async (t) => {
  const m = machine(APPLY_VERSION_PORT_UP_NOTIF);
  const hv1 = notifyingChassisWithPorts(m);
  // ovn-controller's claim: the chassis, up not yet written (its flows are not installed).
  m.sb([{ op: 'update', table: 'Port_Binding', where: [['logical_port', '==', 'vm1']], row: { chassis: ['uuid', hv1] } }]);
  t.equal(ups(m.sm)['vm1'], 'false', 'claimed, up unset: down (before 12 this read up)');
  m.sb([{ op: 'update', table: 'Port_Binding', where: [['logical_port', '==', 'vm1']], row: { up: false } }]);
  t.equal(ups(m.sm)['vm1'], 'false', 'up false: down');
  m.sb([{ op: 'update', table: 'Port_Binding', where: [['logical_port', '==', 'vm1']], row: { up: true } }]);
  t.equal(ups(m.sm)['vm1'], 'true', 'up true: up');
  m.sb([{ op: 'update', table: 'Port_Binding', where: [['logical_port', '==', 'vm1']], row: { up: ['set', []] } }]);
  t.equal(ups(m.sm)['vm1'], 'false', 'up cleared: down');
  // The chassis stops saying port-up-notif (an older controller, say): its bound ports are up.
  m.sb([{ op: 'update', table: 'Chassis', where: [['name', '==', 'hv1']], row: { other_config: ['map', []] } }]);
  t.equal(ups(m.sm)['vm1'], 'true', 'a chassis without port-up-notif: up once bound, in the entry that changed the chassis');
  m.sb([{ op: 'update', table: 'Chassis', where: [['name', '==', 'hv1']], row: { other_config: ['map', [['port-up-notif', 'TRUE']]] } }]);
  t.equal(ups(m.sm)['vm1'], 'false', 'and down again once it says it (any case), its binding\'s up unset');
  t.equal(ups(m.sm)['sw0-r0'], 'true', 'a router port stays up');
});

t.test('the move to 12 rewrites the up of ports claimed but not yet reported up', async (t) => {
  const m = machine(APPLY_VERSION_PORT_UP_NOTIF - 1);
  const hv1 = notifyingChassisWithPorts(m);
  m.sb([{ op: 'update', table: 'Port_Binding', where: [['logical_port', '==', 'vm1']], row: { chassis: ['uuid', hv1] } }]);
  t.equal(ups(m.sm)['vm1'], 'true', 'at 11 an unset up reads up');
  m.move(APPLY_VERSION_PORT_UP_NOTIF);
  t.equal(ups(m.sm)['vm1'], 'false', 'the move to 12 writes it as ovn-northd reads it');
});
