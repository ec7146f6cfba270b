// Apply versions (server/apply-version.ts): the log says how its entries are applied, so members
// on different builds stay identical while a cluster is upgraded one member at a time.
//   - the pure parts: member info, the version a leader moves to;
//   - the state machine: version 1 leaves the switch ports as clients wrote them, the move to 2
//     brings every port up to date in its own revision, a build that cannot apply a version
//     refuses the entry (or the snapshot) and changes nothing, snapshots carry the version;
//   - a cluster: three in-process members, first all on an "older build" (highest version 1),
//     upgraded one at a time: the cluster moves only once the last one is, every member then
//     holds the same NB; a member started again on the older build stops at the move.
import { join } from 'node:path';
import { Packr } from 'msgpackr';
import t from 'tap';
import { LocalNetwork } from '../../cluster/local-transport.js';
import { ApplyRefusedError } from '../../cluster/state-machine.js';
import type { Entry, NodeId } from '../../cluster/types.js';
import type { Row } from '../../ovsdb/index.js';
import { parseDatabaseSchema } from '../../ovsdb/index.js';
import { NB_SCHEMA_JSON } from '../../ovsdb/schemas/index.js';
import { Ipam, tagWrites } from '../../northd/index.js';
import { APPLY_VERSION_MAX, applyVersionMaxOf, applyVersionTarget, memberInfoOf } from '../../server/apply-version.js';
import { CentralNode } from '../../server/central-node.js';
import { encodeCommand, nbTxn } from '../../server/commands.js';
import type { CommitEvent } from '../../server/nb-state-machine.js';
import { NbStateMachine } from '../../server/nb-state-machine.js';
import { NorthdProjection } from '../../server/northd-projection.js';
import { insertChange } from '../../ovsdb/index.js';
import { stateDigests } from '../../server/admin-service.js';
import { testdirAfterTeardowns } from '../helpers/testdir.js';

const schema = parseDatabaseSchema(NB_SCHEMA_JSON);

t.test('member info and the version a leader moves the cluster to', async (t) => {
  t.equal(applyVersionMaxOf(memberInfoOf(2)), 2, 'round trip');
  for (const bad of [undefined, '', 'apply-max=', 'apply-max=0', 'apply-max=02', 'apply-max=2x', 'apply-max=-1', 'other=2', 'apply-max=1e3']) {
    t.equal(applyVersionMaxOf(bad), undefined, `${JSON.stringify(bad)} names no version`);
  }
  const told = new Map<NodeId, number>([[2, 2], [3, 2]]);
  t.equal(applyVersionTarget(1, 2, [2, 3], (id) => told.get(id)), 2, 'everyone can go to 2');
  t.equal(applyVersionTarget(2, 2, [2, 3], (id) => told.get(id)), undefined, 'already there');
  t.equal(applyVersionTarget(1, 2, [2, 3, 4], (id) => told.get(id)), undefined, 'a member not heard from holds it back');
  told.set(4, 1);
  t.equal(applyVersionTarget(1, 2, [2, 3, 4], (id) => told.get(id)), undefined, 'a member that can only apply 1 holds it at 1');
  t.equal(applyVersionTarget(1, 1, [2, 3], (id) => told.get(id)), undefined, 'so does the leader\'s own bound');
  t.equal(applyVersionTarget(1, 3, [2, 3], (id) => told.get(id)), 2, 'the lowest highest version');
  t.equal(applyVersionTarget(1, 2, [], () => undefined), 2, 'a single member moves alone');
});

const addPort = (sw: string, name: string, row: Record<string, unknown>): unknown[] => [
  { op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': 'p', row: { name, ...row } },
  { op: 'mutate', table: 'Logical_Switch', where: [['name', '==', sw]], mutations: [['ports', 'insert', ['set', [['named-uuid', 'p']]]]] },
];

const setup = [
  { op: 'insert', table: 'NB_Global', row: { options: ['map', [['mac_prefix', '0a:00:00']]] } },
  { op: 'insert', table: 'Logical_Switch', row: { name: 'sw0', other_config: ['map', [['subnet', '10.0.0.0/24']]] } },
];

function machine(applyVersionMax?: number): { sm: NbStateMachine; nb(ops: unknown[]): void; move(version: number): unknown; port(name: string): Row } {
  const sm = new NbStateMachine({ schema, projection: new NorthdProjection(), ...(applyVersionMax !== undefined ? { applyVersionMax } : {}) });
  const entry = (data: Uint8Array): Entry => ({ term: 1, index: sm.revision + 1, type: 'normal', data }) as Entry;
  return {
    sm,
    nb: (ops) => void sm.apply(entry(encodeCommand(nbTxn(ops, [sm.revision + 1, 1, 2, 3], 0, 1000))), false),
    move: (version) => sm.apply(entry(encodeCommand({ kind: 'apply-version', version, seed: [sm.revision + 1, 7, 7, 7] })), false),
    port: (name) => [...sm.nb.rows('Logical_Switch_Port').values()].find((r) => r.name === name) as Row,
  };
}

/** A few dynamic ports and nested containers, written at whatever version is in force. */
function populate(m: ReturnType<typeof machine>): void {
  m.nb(setup);
  m.nb(addPort('sw0', 'vm1', { addresses: ['set', ['dynamic']] }));
  m.nb(addPort('sw0', 'vm2', { addresses: ['set', ['0a:00:00:00:00:99 dynamic']] }));
  m.nb(addPort('sw0', 'parent', { addresses: ['set', ['0a:00:00:00:01:00 10.0.0.100']] }));
  m.nb(addPort('sw0', 'c1', { parent_name: 'parent', tag_request: 0 }));
  m.nb(addPort('sw0', 'c2', { parent_name: 'parent', tag_request: 0 }));
  m.nb(addPort('sw0', 'ln', { type: 'localnet', tag_request: 100 }));
}

t.test('version 1 leaves the ports as written; the move to 2 brings them all up to date at once', async (t) => {
  const m = machine();
  t.equal(m.sm.applyVersion, 1, 'a new state machine applies as version 1');
  populate(m);
  for (const name of ['vm1', 'vm2', 'c1', 'c2', 'ln']) {
    t.same(m.port(name).dynamic_addresses, [], `${name}: no dynamic_addresses at version 1`);
    t.same(m.port(name).tag, [], `${name}: no tag at version 1`);
  }
  const events: CommitEvent[] = [];
  m.sm.onCommit((e) => events.push(e));
  const before = m.sm.revision;
  t.same(m.move(2), { kind: 'committed', results: [], revision: before + 1 });
  t.equal(m.sm.applyVersion, 2);
  // The two take the first two addresses in UUID order, as ovn-northd's pass takes ports in
  // its order; vm1's MAC follows its address, vm2 keeps the MAC it asked for.
  const vm1 = (m.port('vm1').dynamic_addresses as string[])[0] ?? '';
  const vm2 = (m.port('vm2').dynamic_addresses as string[])[0] ?? '';
  t.same([vm1.split(' ')[1], vm2.split(' ')[1]].sort(), ['10.0.0.2', '10.0.0.3'], 'vm1 and vm2 allocated by the move');
  t.equal(vm1, vm1.endsWith('10.0.0.2') ? '0a:00:00:00:00:03 10.0.0.2' : '0a:00:00:00:00:04 10.0.0.3', 'vm1\'s MAC from its address');
  t.match(vm2, /^0a:00:00:00:00:99 /, 'vm2 kept its MAC');
  t.same([m.port('c1').tag, m.port('c2').tag].sort(), [[1], [2]], 'the containers took the lowest free tags');
  t.same(m.port('ln').tag, [100], 'the localnet port its requested tag');
  t.equal(events.length, 1, 'the move is one revision');
  t.equal(events[0]?.revision, before + 1);
  t.same(events[0]?.delta.changes.map((c) => `${c.kind} ${c.table} ${(c.kind === 'delete' ? c.old : c.new).name as string}`).sort(), [
    'modify Logical_Switch_Port c1',
    'modify Logical_Switch_Port c2',
    'modify Logical_Switch_Port ln',
    'modify Logical_Switch_Port vm1',
    'modify Logical_Switch_Port vm2',
  ]);
  // Nothing is left for a full pass over every switch and port.
  t.same(new Ipam().recompute(m.sm.nb), [], 'nothing left for IPAM');
  const ports = [...m.sm.nb.rows('Logical_Switch_Port').values()].map((r) => insertChange('Logical_Switch_Port', r));
  t.same(tagWrites(m.sm.nb, { changes: ports }), [], 'nothing left for tags');
  // After the move, writes allocate as they come.
  m.nb(addPort('sw0', 'vm3', { addresses: ['set', ['dynamic']] }));
  t.same(m.port('vm3').dynamic_addresses, ['0a:00:00:00:00:05 10.0.0.4']);
  // A move to where the cluster already is, or below, changes nothing.
  const rev = m.sm.revision;
  t.same(m.move(1), { kind: 'committed', results: [], revision: rev + 1 });
  t.equal(m.sm.applyVersion, 2, 'never moves back');
});

t.test('a build that cannot apply a version refuses its entry and its snapshot, changing nothing', async (t) => {
  const old = machine(1);
  populate(old);
  const rev = old.sm.revision;
  const image = old.sm.snapshot();
  t.throws(() => old.move(2), new ApplyRefusedError(`the cluster from entry ${rev + 1} on is at apply version 2, and this build applies versions up to 1: start this member on software that implements version 2 (a cluster never moves back to an older version)`), 'the move to 2 is refused, saying why');
  t.equal(old.sm.revision, rev, 'the revision did not move');
  t.equal(Buffer.compare(Buffer.from(old.sm.snapshot()), Buffer.from(image)), 0, 'the state is byte for byte what it was');

  const upgraded = machine();
  populate(upgraded);
  upgraded.move(2);
  const v2 = upgraded.sm.snapshot();
  t.throws(() => old.sm.restore(v2), ApplyRefusedError, 'a snapshot at version 2 is refused too');
  t.equal(Buffer.compare(Buffer.from(old.sm.snapshot()), Buffer.from(image)), 0, 'and changes nothing');
  t.throws(() => new NbStateMachine({ schema, applyVersionMax: APPLY_VERSION_MAX + 1 }), /not one this build implements/);
});

t.test('snapshots carry the version; one from before versions restores at 1', async (t) => {
  const a = machine();
  populate(a);
  a.move(2);
  const b = machine();
  b.sm.restore(a.sm.snapshot());
  t.equal(b.sm.applyVersion, 2, 'restored at 2');
  const stream = a.sm.snapshotStream();
  const gen = stream.measure(100);
  for (let step = gen.next(); step.done !== true; step = gen.next());
  const streamed = Buffer.concat([...stream.pieces(4096)]);
  t.equal(Buffer.compare(streamed, Buffer.from(a.sm.snapshot())), 0, 'the streamed snapshot is the same bytes');
  // Both go on identically.
  a.nb(addPort('sw0', 'vm9', { addresses: ['set', ['dynamic']] }));
  b.nb(addPort('sw0', 'vm9', { addresses: ['set', ['dynamic']] }));
  t.equal(Buffer.compare(Buffer.from(a.sm.snapshot()), Buffer.from(b.sm.snapshot())), 0, 'the restored replica applies as the original');

  // Format 3 (no version in it): what builds before apply versions wrote.
  const packr = new Packr({ useRecords: false });
  const [, revision, nb, projection, sb] = packr.unpack(machineAt1Snapshot()) as unknown[];
  const c = machine();
  c.sm.restore(packr.pack([3, revision, nb, projection, sb]));
  t.equal(c.sm.applyVersion, 1, 'a format-3 snapshot restores at version 1');
  t.equal(c.sm.revision, revision);
});

function machineAt1Snapshot(): Uint8Array {
  const m = machine();
  populate(m);
  return m.sm.snapshot();
}

interface Member {
  central: CentralNode;
  id: NodeId;
}

t.test('a cluster upgraded one member at a time moves only once all are, and stays identical', async (t) => {
  const dir = testdirAfterTeardowns(t);
  const net = new LocalNetwork('upgrade');
  const ids = [1, 2, 3];
  const peers = new Map(ids.map((id) => [id, `local:${id}`]));
  const fatal = new Map<NodeId, Error>();
  const start = (id: NodeId, applyVersionMax: number): Promise<CentralNode> =>
    CentralNode.start({ id, clusterId: 'upgrade', dataDir: join(dir, `n${id}`), transport: net.transport(id), peers, bootstrap: ids, tickMs: 10, applyVersionMax, onFatalError: (err) => fatal.set(id, err) });
  const members: Member[] = [];
  for (const id of ids) members.push({ id, central: await start(id, 1) });
  t.teardown(async () => {
    for (const m of members) await m.central.stop();
  });
  const until = async (what: string, ok: () => boolean, ms = 10_000): Promise<void> => {
    const deadline = Date.now() + ms;
    while (!ok()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  };
  const leader = async (): Promise<CentralNode> => {
    let found: CentralNode | undefined;
    await until('a leader', () => (found = members.find((m) => m.central.node.leadership().role === 'leader' && m.central.node.status().fatalError === undefined)?.central) !== undefined);
    return found as CentralNode;
  };
  let written = 0;
  const write = async (ops: unknown[]): Promise<void> => {
    for (;;) {
      try {
        const out = await (await leader()).transact(ops);
        t.notOk(out.failed, `write ${++written} committed`);
        return;
      } catch (err) {
        if (!/unavailable|leader/i.test((err as Error).message)) throw err;
        await new Promise((r) => setTimeout(r, 20));
      }
    }
  };
  const settle = async (): Promise<void> => {
    const l = await leader();
    const target = l.revision;
    await until('every live member to apply', () => members.every((m) => m.central.node.status().fatalError !== undefined || m.central.revision >= target));
  };
  const agree = async (what: string): Promise<void> => {
    await settle();
    const live = members.filter((m) => m.central.node.status().fatalError === undefined);
    const digests = live.map((m) => stateDigests(m.central).nbSha256);
    t.equal(new Set(digests).size, 1, `${what}: every member holds the same NB (${live.length} members)`);
  };
  const dyn = (c: CentralNode, name: string): unknown => [...c.sm.nb.rows('Logical_Switch_Port').values()].find((r) => r.name === name)?.dynamic_addresses;
  await write(setup);
  await write(addPort('sw0', 'vm1', { addresses: ['set', ['dynamic']] }));
  await agree('all on the older build');
  t.ok(members.every((m) => m.central.sm.applyVersion === 1), 'the cluster applies as version 1');
  t.same(dyn(members[0]?.central as CentralNode, 'vm1'), [], 'as the older build would: no dynamic_addresses');

  // Upgrade members one at a time; writes go on in between.
  for (const [i, m] of members.entries()) {
    await m.central.stop();
    m.central = await start(m.id, APPLY_VERSION_MAX);
    // The upgraded member leads: it is the one that must not move the cluster past its peers.
    await until(`member ${m.id} to lead`, () => {
      if (m.central.node.leadership().role === 'leader') return true;
      const l = members.find((x) => x.central.node.leadership().role === 'leader');
      if (l !== undefined && m.central.revision >= l.central.revision) l.central.node.transferLeadership(m.id);
      return false;
    });
    await write(addPort('sw0', `during-${i}`, { addresses: ['set', ['dynamic']] }));
    await agree(`after member ${m.id} was upgraded`);
    if (i < members.length - 1) {
      t.ok(members.every((x) => x.central.sm.applyVersion === 1), `still version 1 with ${members.length - 1 - i} member(s) on the older build`);
      t.same(dyn(m.central, `during-${i}`), [], 'and the upgraded member applies as version 1 too');
    }
  }
  await until('the move to the newest version', () => members.every((m) => m.central.sm.applyVersion === APPLY_VERSION_MAX));
  await agree('once all were upgraded');
  const c = members[0]?.central as CentralNode;
  for (const name of ['vm1', 'during-0', 'during-1', 'during-2']) t.match(dyn(c, name), [/^0a:00:00:00:00:[0-9a-f]{2} 10\.0\.0\.\d+$/], `${name} got addresses when the cluster moved`);
  await write(addPort('sw0', 'after', { addresses: ['set', ['dynamic']] }));
  await agree('after the move');
  t.match(dyn(c, 'after'), [/^0a:00:00/], 'new ports are allocated as they are written');

  // Back to the older build on one member: it stops at the move rather than diverge.
  const back = members[2] as Member;
  await back.central.stop();
  fatal.delete(back.id);
  back.central = await start(back.id, 1);
  await until('the older build to stop', () => back.central.node.status().fatalError !== undefined);
  t.type(fatal.get(back.id), ApplyRefusedError, 'it stopped with ApplyRefusedError');
  t.match(fatal.get(back.id)?.message, new RegExp(`apply version ${APPLY_VERSION_MAX}, and this build applies versions up to 1`));
  t.equal(back.central.sm.applyVersion, 1, 'having applied nothing past the move');
  await write(addPort('sw0', 'two-left', { addresses: ['set', ['dynamic']] }));
  await agree('the two members still running');
});
