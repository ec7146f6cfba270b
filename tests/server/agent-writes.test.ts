// What a member writes for its agents: the registration from a Hello (only what is missing; an
// existing Chassis is its agent's), and acks as Chassis_Private.nb_cfg — batched, advancing
// only, sent again after a failure. Method: the pure planner on hand-made rows, and the ack
// writer against a fake target that records transactions.
import t from 'tap';
import type { Row } from '../../ovsdb/index.js';
import type { TransactOutcome } from '../../server/central-node.js';
import { AckWriter, ackLimits, registrationOps } from '../../server/agent-writes.js';
import { FakeTimers, settle } from '../helpers/fake-timers.js';

type Tables = Record<string, Row[]>;
const rowsOf = (tables: Tables) => (table: string): ReadonlyMap<string, Row> => new Map((tables[table] ?? []).map((r) => [r._uuid, r]));
const u = (n: number): string => `00000000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;
const reg = { chassis: 'hv1', hostname: 'host1', encaps: [{ type: 'geneve', ip: '192.0.2.1' }, { type: 'geneve', ip: '192.0.2.1' }, { type: 'vxlan', ip: '192.0.2.1' }] };

t.test('registration: a new chassis whole; an existing one left to its agent', async (t) => {
  const fresh = registrationOps(rowsOf({}), reg) as { op: string; table: string; row: Record<string, unknown> }[];
  t.same(fresh.map((o) => [o.op, o.table]), [['insert', 'Encap'], ['insert', 'Encap'], ['insert', 'Chassis'], ['insert', 'Chassis_Private']], 'one Encap per distinct (type, ip), the Chassis, its Chassis_Private');
  t.same(fresh[2]?.row, { name: 'hv1', hostname: 'host1', encaps: ['set', [['named-uuid', 'encap0'], ['named-uuid', 'encap1']]] });
  t.same(fresh[3]?.row, { name: 'hv1', chassis: ['named-uuid', 'chassis'] });

  const chassis = { _uuid: u(1), _version: u(1), name: 'hv1', hostname: 'other', encaps: [u(2)] } as unknown as Row;
  const encap = { _uuid: u(2), _version: u(2), type: 'stt', ip: '198.51.100.1' } as unknown as Row;
  const linked = { _uuid: u(3), _version: u(3), name: 'hv1', chassis: [u(1)] } as unknown as Row;
  t.equal(registrationOps(rowsOf({ Chassis: [chassis], Encap: [encap], Chassis_Private: [linked] }), reg), undefined, 'an existing, linked chassis: nothing, even with other encaps and hostname');
  t.same(registrationOps(rowsOf({ Chassis: [chassis], Encap: [encap] }), reg), [{ op: 'insert', table: 'Chassis_Private', row: { name: 'hv1', chassis: ['uuid', u(1)] } }], 'a missing Chassis_Private is added');
  const stale = { ...linked, chassis: [] } as unknown as Row;
  t.same(registrationOps(rowsOf({ Chassis: [chassis], Encap: [encap], Chassis_Private: [stale] }), reg), [{ op: 'update', table: 'Chassis_Private', where: [['_uuid', '==', ['uuid', u(3)]]], row: { chassis: ['uuid', u(1)] } }], 'an unlinked one is linked');
});

/** A target that records transactions and answers them as told. */
function target(privs: Record<string, number>): { txns: unknown[][]; answer: ((ops: readonly unknown[]) => Promise<TransactOutcome>) | undefined; transact: (ops: readonly unknown[]) => Promise<TransactOutcome>; rows: (t: string) => ReadonlyMap<string, Row> } {
  const self = {
    txns: [] as unknown[][],
    answer: undefined as ((ops: readonly unknown[]) => Promise<TransactOutcome>) | undefined,
    transact: (ops: readonly unknown[]): Promise<TransactOutcome> => {
      self.txns.push([...ops]);
      return self.answer?.(ops) ?? Promise.resolve({ results: ops.map(() => ({ count: 1 })), revision: 1, failed: false });
    },
    rows: (table: string): ReadonlyMap<string, Row> => (table === 'Chassis_Private' ? new Map(Object.entries(privs).map(([name, nbCfg], i) => [u(i), { _uuid: u(i), _version: u(i), name, nb_cfg: nbCfg } as unknown as Row])) : new Map()),
  };
  return self;
}

t.test('acks: batched while one is in flight, advancing only, for registered chassis', async (t) => {
  const privs: Record<string, number> = { hv1: 0, hv2: 0, hv3: 5 };
  const tg = target(privs);
  let release: () => void = () => undefined;
  tg.answer = (ops) => new Promise((r) => (release = () => r({ results: ops.map(() => ({ count: 1 })), revision: 1, failed: false })));
  const w = new AckWriter(tg, () => 1234);
  w.record('hv1', 1);
  t.equal(tg.txns.length, 1, 'the first ack is written at once');
  t.same(tg.txns[0], [{ op: 'update', table: 'Chassis_Private', where: [['name', '==', 'hv1'], ['nb_cfg', '<', 1]], row: { nb_cfg: 1, nb_cfg_timestamp: 1234 } }], 'guarded so that it never goes back');
  w.record('hv2', 1);
  w.record('hv2', 2);
  w.record('hv2', 1);
  w.record('hv3', 4);
  w.record('nobody', 9);
  t.equal(tg.txns.length, 1, 'one transaction in flight at a time');
  tg.answer = undefined;
  release();
  await new Promise((r) => setImmediate(r));
  t.equal(tg.txns.length, 2, 'what came meanwhile goes in the next one');
  t.same(tg.txns[1], [{ op: 'update', table: 'Chassis_Private', where: [['name', '==', 'hv2'], ['nb_cfg', '<', 2]], row: { nb_cfg: 2, nb_cfg_timestamp: 1234 } }], 'the latest of hv2; hv3 already has more; an unregistered chassis has no row');
  t.equal(w.stats().rowsWritten, 2);
});

t.test('acks: a failed write is sent again', async (t) => {
  const tg = target({ hv1: 0 });
  tg.answer = () => Promise.reject(new Error('no leader'));
  const w = new AckWriter(tg, () => 7);
  t.teardown(() => w.close());
  w.record('hv1', 3);
  await new Promise((r) => setImmediate(r));
  t.match(w.stats(), { failures: 1, lastError: 'no leader', pending: 1 });
  tg.answer = undefined;
  const deadline = Date.now() + 10 * ackLimits.retryMs;
  while (tg.txns.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, ackLimits.retryMs / 5));
  t.equal(tg.txns.length, 2, `retried after ${ackLimits.retryMs} ms`);
  t.same(tg.txns[1], tg.txns[0], 'the same guarded update');
});

t.test('acks: at most acksPerTxnMax rows per transaction', async (t) => {
  const privs: Record<string, number> = {};
  for (let i = 0; i < ackLimits.acksPerTxnMax + 10; i++) privs[`hv${i}`] = 0;
  const tg = target(privs);
  let release: () => void = () => undefined;
  tg.answer = (ops) => new Promise((r) => (release = () => r({ results: ops.map(() => ({ count: 1 })), revision: 1, failed: false })));
  const w = new AckWriter(tg);
  w.record('hv0', 1);
  for (let i = 1; i < ackLimits.acksPerTxnMax + 10; i++) w.record(`hv${i}`, 1);
  tg.answer = undefined;
  release();
  await new Promise((r) => setImmediate(r));
  await new Promise((r) => setImmediate(r));
  t.same(tg.txns.map((x) => x.length), [1, ackLimits.acksPerTxnMax, 9]);
});

t.test('acks: wait for the other agents here to acknowledge the same, up to batchMsMax; the last one needed goes at once', async (t) => {
  const tg = target({ hv1: 0, hv2: 0, hv3: 0 });
  const clock = new FakeTimers();
  // What each agent on this member acknowledged last (as the fan-out counts them).
  const acked = new Map([['hv1', 0], ['hv2', 0], ['hv3', 0]]);
  const lagging = (nbCfg: number): boolean => [...acked.values()].some((v) => v < nbCfg);
  const w = new AckWriter(tg, () => 5, { lagging, timers: clock });
  t.teardown(() => w.close());
  const ack = (chassis: string, nbCfg: number): void => {
    acked.set(chassis, nbCfg);
    w.record(chassis, nbCfg);
  };
  ack('hv1', 1);
  ack('hv2', 1);
  t.equal(tg.txns.length, 0, 'hv3 is still installing nb_cfg 1: the acks wait');
  ack('hv3', 1);
  t.equal(tg.txns.length, 1, 'the last one needed is written at once, with the others');
  t.same(tg.txns[0]?.map((o) => (o as { where: unknown[][] }).where[0]?.[2]), ['hv1', 'hv2', 'hv3']);
  t.equal(clock.pending, 0, 'and no timer is left');
  await settle();

  // hv3 falls behind (or never installs): the others wait batchMsMax at most.
  ack('hv1', 2);
  await clock.advance(ackLimits.batchMsMax - 1);
  ack('hv2', 2);
  t.equal(tg.txns.length, 1, `still waiting after ${ackLimits.batchMsMax - 1} ms`);
  await clock.advance(1);
  t.equal(tg.txns.length, 2, `written after ${ackLimits.batchMsMax} ms`);
  t.same(tg.txns[1]?.map((o) => (o as { where: unknown[][] }).where[0]?.[2]), ['hv1', 'hv2']);

  // Without a lagging agent, an ack goes at once.
  acked.set('hv3', 3);
  ack('hv1', 3);
  t.equal(tg.txns.length, 2, 'hv2 lags now');
  await clock.advance(ackLimits.batchMsMax);
  ack('hv2', 3);
  t.equal(tg.txns.length, 4, 'hv1 after the wait, then hv2 alone at once: nobody lags');
});

t.test('acks: the wait is for the newest nb_cfg still pending, not for one already written', async (t) => {
  const tg = target({ hv1: 0, hv2: 0 });
  const clock = new FakeTimers();
  // An agent here has installed up to nb_cfg 4.
  const lagging = (nbCfg: number): boolean => nbCfg > 4;
  const w = new AckWriter(tg, () => 5, { lagging, timers: clock });
  t.teardown(() => w.close());
  w.record('hv1', 5);
  t.equal(tg.txns.length, 0, 'nb_cfg 5 waits: an agent here is behind it');
  await clock.advance(ackLimits.batchMsMax);
  t.equal(tg.txns.length, 1, `written after ${ackLimits.batchMsMax} ms`);
  await settle();
  w.record('hv2', 3);
  t.equal(tg.txns.length, 2, 'nb_cfg 3, which every agent here has, goes at once');
  t.equal(clock.pending, 0, 'and no timer is left');
});

t.test('acks: a chassis is found by name even after Chassis_Private rows come, go and change places', async (t) => {
  // The fake target numbers rows by their order in `privs`: reordering it gives each name
  // another row uuid, as a chassis leaving and registering again does.
  const privs: Record<string, number> = { hv1: 0, hv2: 0 };
  const tg = target(privs);
  const w = new AckWriter(tg, () => 1);
  w.record('hv1', 1);
  await settle();
  t.equal(tg.txns.length, 1, 'hv1 written');
  privs.hv1 = 1;
  w.record('hv1', 1);
  await settle();
  t.equal(tg.txns.length, 1, 'an ack its row already has writes nothing');
  // hv2 now holds the uuid hv1 had, and hv1 (at nb_cfg 5) the one hv2 had.
  delete privs.hv1;
  delete privs.hv2;
  privs.hv2 = 0;
  privs.hv1 = 5;
  w.record('hv2', 1);
  await settle();
  t.same(tg.txns.at(-1), [{ op: 'update', table: 'Chassis_Private', where: [['name', '==', 'hv2'], ['nb_cfg', '<', 1]], row: { nb_cfg: 1, nb_cfg_timestamp: 1 } }], 'hv2 is written, not taken for the row hv1 now has');
  t.equal(tg.txns.length, 2);
});

t.test('acks: a member that is not the leader holds its acks for the leader to write; what the log still lacks after followerHoldMs it writes itself', async (t) => {
  const privs: Record<string, number> = { hv1: 0, hv2: 0, hv3: 0 };
  const tg = target(privs);
  const clock = new FakeTimers();
  let follower = true;
  const w = new AckWriter(tg, () => 9, { leaderWrites: () => follower, timers: clock });
  t.teardown(() => w.close());
  w.record('hv1', 1);
  w.record('hv2', 1);
  w.record('hv2', 2);
  t.equal(tg.txns.length, 0, 'held while the leader writes them');
  t.match(w.stats(), { held: 2, pending: 0 });
  // The leader wrote hv1 (as relayed to it); hv2's 2 is not in the log yet.
  privs.hv1 = 1;
  privs.hv2 = 1;
  await clock.advance(ackLimits.followerHoldMs - 1);
  t.equal(tg.txns.length, 0, `still held after ${ackLimits.followerHoldMs - 1} ms`);
  await clock.advance(1);
  t.same(tg.txns, [[{ op: 'update', table: 'Chassis_Private', where: [['name', '==', 'hv2'], ['nb_cfg', '<', 2]], row: { nb_cfg: 2, nb_cfg_timestamp: 9 } }]],
    `after ${ackLimits.followerHoldMs} ms only what the log lacks is written here`);
  t.match(w.stats(), { held: 0 });
  privs.hv2 = 2;
  // An ack the log already has is not held either.
  w.record('hv1', 1);
  t.match(w.stats(), { held: 0 });
  t.equal(clock.pending, 0, 'and no timer is left');
  // hv3 acknowledges again and again; the leader writes each ack in time: never written here.
  for (let n = 1; n <= 10; n++) {
    w.record('hv3', n);
    await clock.advance(ackLimits.followerHoldMs / 4);
    privs.hv3 = n;
  }
  t.equal(tg.txns.length, 1, `an ack every ${ackLimits.followerHoldMs / 4} ms, each written by the leader in time: none written here`);
  // Now the leader writes none of them: the first unwritten one waits followerHoldMs, no more.
  w.record('hv3', 11);
  await clock.advance(ackLimits.followerHoldMs / 2);
  w.record('hv3', 12);
  await clock.advance(ackLimits.followerHoldMs / 2 - 1);
  t.equal(tg.txns.length, 1, 'held');
  await clock.advance(1);
  t.equal(tg.txns.length, 2, `written here ${ackLimits.followerHoldMs} ms after the first ack the log lacked`);
  t.match(tg.txns[1], [{ where: [['name', '==', 'hv3'], ['nb_cfg', '<', 12]] }], 'the newest');
  privs.hv3 = 12;
  // An ack heard during another's hold waits its own.
  w.record('hv1', 2);
  await clock.advance(ackLimits.followerHoldMs / 2);
  w.record('hv2', 3);
  await clock.advance(ackLimits.followerHoldMs / 2);
  t.equal(tg.txns.length, 3, 'hv1 after its hold');
  t.match(tg.txns[2], [{ where: [['name', '==', 'hv1'], ['nb_cfg', '<', 2]] }], 'hv1 alone');
  t.match(w.stats(), { held: 1 });
  await clock.advance(ackLimits.followerHoldMs / 2);
  t.match(tg.txns[3], [{ where: [['name', '==', 'hv2'], ['nb_cfg', '<', 3]] }], 'hv2 after its own');
  privs.hv1 = 2;
  privs.hv2 = 3;
  t.equal(clock.pending, 0, 'no timer left');
  // This member leads now: its own acks go at once.
  follower = false;
  w.record('hv3', 13);
  t.equal(tg.txns.length, 5, 'the leader writes at once');
});

t.test('acks: the leader writes acks relayed by the other members, by their Chassis_Private row, with its own', async (t) => {
  const tg = target({ hv1: 0, hv2: 0 });
  let release: () => void = () => undefined;
  tg.answer = (ops) => new Promise((r) => (release = () => r({ results: ops.map(() => ({ count: 1 })), revision: 1, failed: false })));
  const w = new AckWriter(tg, () => 3);
  w.record('hv1', 1);
  t.equal(tg.txns.length, 1);
  // The fake target gives hv2 the row u(1).
  w.recordRelayed(u(1), 1);
  w.recordRelayed(u(7), 1);
  tg.answer = undefined;
  release();
  await settle();
  t.same(tg.txns[1], [{ op: 'update', table: 'Chassis_Private', where: [['name', '==', 'hv2'], ['nb_cfg', '<', 1]], row: { nb_cfg: 1, nb_cfg_timestamp: 3 } }],
    'a relayed ack is written by the name of its row; one of a row this member does not have, not at all');
});
