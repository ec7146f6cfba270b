// The claim decisions as a pure function: table-driven cases for each rule, then a seeded
// simulation of two chassis and a central applying their transactions in some order while a
// port's interface moves from one to the other, with lagging views: the port always ends bound
// to the new chassis, and the binding changes a bounded number of times (no flapping).
import t from 'tap';
import type * as sb from '../../ovsdb/rows/sb.js';
import type { BindingAction, BindingChassis, BindingState, LocalIface } from '../../agent/local/binding.js';
import { bindingOvsOps, bindingSbOps, canBindHere, decideBindings, initialBindingState, markInstalled } from '../../agent/local/binding.js';
import { Rng } from '../helpers/seeded-rng.js';

const CH_A = 'aaaaaaaa-0000-0000-0000-000000000001';
const CH_B = 'bbbbbbbb-0000-0000-0000-000000000002';
const PB = 'cccccccc-0000-0000-0000-000000000003';

function pb(over: Partial<Record<keyof sb.Port_Binding, unknown>> = {}): sb.Port_Binding {
  return {
    _uuid: PB, _version: '', logical_port: 'vm1', type: '', gateway_chassis: [], ha_chassis_group: [], options: new Map(), datapath: 'dp', tunnel_key: 1,
    parent_port: [], tag: [], virtual_parent: [], chassis: [], additional_chassis: [], encap: [], additional_encap: [], mirror_rules: [], mac: [],
    port_security: [], nat_addresses: [], up: [false], external_ids: new Map(), requested_chassis: [], requested_additional_chassis: [],
    ...over,
  } as sb.Port_Binding;
}

const chassisA: BindingChassis = { name: 'hv-a', hostname: 'host-a', uuid: CH_A, encapByIp: new Map([['10.0.0.1', 'e-a']]) };
const iface = (over: Partial<LocalIface> = {}): LocalIface => ({ ifaceUuid: 'if-1', name: 'tap1', ofport: 5, ovnInstalled: false, ...over });

function decide(state: BindingState, p: sb.Port_Binding, ifaces: Map<string, LocalIface>, chassis: BindingChassis = chassisA, inflight: Set<string> = new Set()): { state: BindingState; actions: BindingAction[] } {
  return decideBindings(state, { chassis, ifaces, portBindings: [p], inflight });
}

t.test('an unbound port with a local interface is claimed, up=false', async (t) => {
  const { actions } = decide(initialBindingState(), pb(), new Map([['vm1', iface()]]));
  t.same(actions, [{ kind: 'claim', port: 'vm1', pbUuid: PB, from: undefined, encap: undefined, up: false, clearIface: undefined }]);
  t.same(bindingSbOps(actions, CH_A).map((o) => o.op), [{ op: 'update', table: 'Port_Binding', where: [['_uuid', '==', ['uuid', PB]]], row: { chassis: ['uuid', CH_A], up: false, encap: ['set', []] } }]);
  t.same(decide(initialBindingState(), pb(), new Map([['vm1', iface()]]), { ...chassisA, uuid: undefined }).actions, [], 'nothing is claimed before the Chassis row exists');
  t.same(decide(initialBindingState(), pb(), new Map()).actions, [], 'nor without an interface');
  t.same(decide(initialBindingState(), pb({ type: 'localport' }), new Map([['vm1', iface()]])).actions, [], 'nor a localport');
  t.same(decide(initialBindingState(), pb({ parent_port: ['vm0'] }), new Map([['vm1', iface()]])).actions, [], 'nor a container port (not supported yet)');
  t.same(decide(initialBindingState(), pb(), new Map([['vm1', iface()]]), chassisA, new Set(['vm1'])).actions, [], 'nor one with a transaction in flight');
  const withEncap = decide(initialBindingState(), pb(), new Map([['vm1', iface({ encapIp: '10.0.0.1' })]])).actions;
  t.match(withEncap, [{ kind: 'claim', encap: 'e-a' }], 'external_ids:encap-ip picks the Encap with that IP');
});

t.test('requested-chassis: the first name (or hostname) only', async (t) => {
  const ch = chassisA;
  t.ok(canBindHere(pb({ options: new Map([['requested-chassis', 'hv-a']]) }), ch));
  t.ok(canBindHere(pb({ options: new Map([['requested-chassis', 'host-a']]) }), ch), 'a hostname matches too');
  t.notOk(canBindHere(pb({ options: new Map([['requested-chassis', 'hv-b']]) }), ch));
  t.notOk(canBindHere(pb({ options: new Map([['requested-chassis', 'hv-b,hv-a']]) }), ch), 'an additional chassis is not bound as main');
  t.ok(canBindHere(pb({ requested_chassis: [CH_A], options: new Map([['requested-chassis', 'elsewhere']]) }), ch), 'the requested_chassis column wins');
  const bound = pb({ chassis: [CH_A], up: [true], options: new Map([['requested-chassis', 'hv-b']]) });
  t.same(decide(initialBindingState(), bound, new Map([['vm1', iface({ ovnInstalled: true })]])).actions, [{ kind: 'release', port: 'vm1', pbUuid: PB, clearIface: 'if-1' }], 'a port requested elsewhere is released and its mark cleared');
});

t.test('up and ovn-installed follow the installed flows of the current OpenFlow port', async (t) => {
  const bound = pb({ chassis: [CH_A] });
  const ifaces = new Map([['vm1', iface()]]);
  let r = decide(initialBindingState(), bound, ifaces);
  t.same(r.actions, [], 'bound, but no flows reported: nothing yet');
  r = decide(markInstalled(r.state, 'vm1', 7), bound, ifaces);
  t.same(r.actions, [], 'flows for another OpenFlow port do not count');
  r = decide(markInstalled(r.state, 'vm1', 5), bound, ifaces);
  t.same(r.actions, [{ kind: 'set-up', port: 'vm1', pbUuid: PB, sbUp: true, markIface: 'if-1' }]);
  t.same(bindingSbOps(r.actions, CH_A).map((o) => o.op.row), [{ up: true }]);
  const ovs = bindingOvsOps(r.actions, 1234).map((o) => o.op);
  t.same(ovs, [{ op: 'mutate', table: 'Interface', where: [['_uuid', '==', ['uuid', 'if-1']]], mutations: [['external_ids', 'delete', ['set', ['ovn-installed', 'ovn-installed-ts']]], ['external_ids', 'insert', ['map', [['ovn-installed', 'true'], ['ovn-installed-ts', '1234']]]]] }]);
  const done = decide(r.state, pb({ chassis: [CH_A], up: [true] }), new Map([['vm1', iface({ ovnInstalled: true })]]));
  t.same(done.actions, [], 'once both are set there is nothing more to do');
  const moved = decide(done.state, pb({ chassis: [CH_A], up: [true] }), new Map([['vm1', iface({ ofport: 9, ovnInstalled: true })]]));
  t.same(moved.actions, [], 'a new OpenFlow port waits for its own flows');
  t.same([...moved.state.installed], [], 'and the old report is forgotten');
});

t.test('release when the interface goes, conditionally on still being bound here', async (t) => {
  const { actions } = decide(initialBindingState(), pb({ chassis: [CH_A], up: [true] }), new Map());
  t.same(actions, [{ kind: 'release', port: 'vm1', pbUuid: PB, clearIface: undefined }]);
  t.same(bindingSbOps(actions, CH_A)[0]?.op, { op: 'update', table: 'Port_Binding', where: [['_uuid', '==', ['uuid', PB]], ['chassis', '==', ['uuid', CH_A]]], row: { chassis: ['set', []], up: false, encap: ['set', []] } });
  t.same(decide(initialBindingState(), pb({ chassis: [CH_B] }), new Map()).actions, [], 'a port bound elsewhere is none of our business');
});

t.test('a port taken from our interface is yielded; a new interface takes it over', async (t) => {
  const ifaces = new Map([['vm1', iface({ ovnInstalled: true })]]);
  const seen = decide(initialBindingState(), pb({ chassis: [CH_A], up: [true] }), ifaces).state;
  t.same([...seen.heldWith], [['vm1', 'if-1']], 'bound here with if-1');
  const taken = decide(seen, pb({ chassis: [CH_B] }), ifaces);
  t.same(taken.actions, [{ kind: 'clear-installed', port: 'vm1', clearIface: 'if-1' }], 'taken by B while if-1 remains: yield, drop the mark, no claim');
  t.same(decide(taken.state, pb({ chassis: [CH_B] }), new Map([['vm1', iface()]])).actions, [], 'and it stays yielded');
  const readded = decide(taken.state, pb({ chassis: [CH_B] }), new Map([['vm1', iface({ ifaceUuid: 'if-2' })]]));
  t.match(readded.actions, [{ kind: 'claim', from: CH_B }], 'a new interface for the port takes it over');
  t.match(decide(initialBindingState(), pb({ chassis: [CH_B] }), new Map([['vm1', iface()]])).actions, [{ kind: 'claim', from: CH_B }], 'as does one we never saw bound (a move to here)');
  t.match(decide(taken.state, pb({ chassis: [] }), new Map([['vm1', iface()]])).actions, [{ kind: 'claim', from: undefined }], 'once released by the other chassis, it is claimed again');
});

t.test('l3gateway ports follow options:l3gateway-chassis', async (t) => {
  const gw = (name: string, chassis: string[] = []): sb.Port_Binding => pb({ type: 'l3gateway', options: new Map([['l3gateway-chassis', name]]), chassis });
  t.match(decide(initialBindingState(), gw('hv-a'), new Map()).actions, [{ kind: 'claim', up: true }]);
  t.same(decide(initialBindingState(), gw('hv-a', [CH_A]), new Map()).actions, []);
  t.match(decide(initialBindingState(), gw('hv-b', [CH_A]), new Map()).actions, [{ kind: 'release' }]);
  t.same(decide(initialBindingState(), gw('hv-b'), new Map()).actions, []);
});

// --- Two chassis, one central, lagging views --------------------------------------------------

interface SbPort {
  chassis: string | undefined;
  up: boolean;
  /** Bumped on every change: the agents' "SB changed since I sent" test. */
  version: number;
}

interface Agent {
  readonly chassis: BindingChassis;
  ifaces: Map<string, LocalIface>;
  state: BindingState;
  view: SbPort;
  /** Port → the SB version seen when its transaction left. */
  inflight: Map<string, number>;
  queue: { op: Record<string, unknown> }[];
}

function simulate(seed: number): { final: SbPort; changes: number; overlapChanges: number; trace: string[] } {
  const rng = new Rng(seed);
  const central: SbPort = { chassis: undefined, up: false, version: 0 };
  const trace: string[] = [];
  const mk = (name: string, uuid: string): Agent => ({
    chassis: { name, hostname: name, uuid, encapByIp: new Map() }, ifaces: new Map(), state: initialBindingState(),
    view: { ...central }, inflight: new Map(), queue: [],
  });
  const a = mk('hv-a', CH_A);
  const b = mk('hv-b', CH_B);
  a.ifaces.set('vm1', iface({ ifaceUuid: 'if-a' }));
  let changes = 0;
  let overlapChanges = 0;
  let phase: 'a' | 'both' | 'b' = 'a';
  const toPb = (v: SbPort): sb.Port_Binding => pb({ chassis: v.chassis === undefined ? [] : [v.chassis], up: [v.up] });
  const step = (agent: Agent): void => {
    const inflight = new Set([...agent.inflight].filter(([, v]) => v === agent.view.version).map(([p]) => p));
    const r = decideBindings(agent.state, { chassis: agent.chassis, ifaces: agent.ifaces, portBindings: [toPb(agent.view)], inflight });
    agent.state = r.state;
    for (const { port, op } of bindingSbOps(r.actions, agent.chassis.uuid as string)) {
      agent.queue.push({ op });
      agent.inflight.set(port, agent.view.version);
    }
    // The runtime installs flows for whatever is bound here and reports them.
    const i = agent.ifaces.get('vm1');
    if (i !== undefined && agent.view.chassis === agent.chassis.uuid) agent.state = markInstalled(agent.state, 'vm1', i.ofport);
  };
  const apply = (agent: Agent): void => {
    const t = agent.queue.shift();
    if (t === undefined) return;
    const where = t.op.where as unknown[][];
    const cond = where.find((w) => w[0] === 'chassis');
    if (cond !== undefined && central.chassis !== (cond[2] as string[])[1]) return;
    const row = t.op.row as Record<string, unknown>;
    const before = central.chassis;
    if ('chassis' in row) central.chassis = Array.isArray(row.chassis) && row.chassis[0] === 'uuid' ? (row.chassis[1] as string) : undefined;
    if ('up' in row) central.up = row.up as boolean;
    central.version++;
    if (central.chassis !== before) {
      changes++;
      if (phase === 'both') overlapChanges++;
      trace.push(`${agent.chassis.name}: chassis ${before?.slice(0, 2) ?? '-'} -> ${central.chassis?.slice(0, 2) ?? '-'}`);
    }
  };
  const deliver = (agent: Agent): void => {
    agent.view = { ...central };
  };
  const agents = [a, b];
  const moveAt = rng.int(5, 40);
  const removeAt = moveAt + rng.int(0, 40);
  for (let i = 0; i < 200; i++) {
    if (i === moveAt) {
      b.ifaces.set('vm1', iface({ ifaceUuid: 'if-b' }));
      phase = 'both';
    }
    if (i === removeAt) {
      a.ifaces.delete('vm1');
      phase = 'b';
    }
    const agent = rng.pick(agents);
    const what = rng.int(0, 2);
    if (what === 0) step(agent);
    else if (what === 1) apply(agent);
    else deliver(agent);
  }
  // Quiesce: everything delivered, decided and applied until nothing moves.
  for (let round = 0; round < 20; round++) {
    for (const agent of agents) {
      deliver(agent);
      step(agent);
      while (agent.queue.length > 0) apply(agent);
    }
  }
  return { final: central, changes, overlapChanges, trace };
}

t.test('a port moved from A to B ends bound to B, without flapping', async (t) => {
  const seeds = Number(process.env.OVNTS_LONG === '1' ? 5000 : 300);
  let worst = 0;
  for (let seed = 1; seed <= seeds; seed++) {
    const r = simulate(seed);
    worst = Math.max(worst, r.changes);
    if (r.final.chassis !== CH_B || r.changes > 6 || r.overlapChanges > 3) {
      t.fail(`seed ${seed}: final ${r.final.chassis}, ${r.changes} changes (${r.overlapChanges} while both had it): ${r.trace.join('; ')}`);
      return;
    }
  }
  t.pass(`${seeds} schedules: always bound to B at the end, at most ${worst} binding changes`);
});
