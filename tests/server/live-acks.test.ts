// Wait(HV) counts agents' acks before they are committed (server/live-acks.ts): on the member
// the agent streams from, and, relayed, on the others. With the Chassis_Private write held
// back, a Wait on another member returns once the agent acked, while NB_Global.hv_cfg and the
// row still say the old value; without the relay it does not. The leader writes the relayed acks
// with its own (one transaction for agents on three members), the others hold theirs for it; a
// member whose relay is closed writes its own. A malformed relay is refused and counts for
// nothing.
import * as grpc from '@grpc/grpc-js';
import t from 'tap';
import type { TransactOutcome } from '../../server/central-node.js';
import { LiveAcks, liveAckLimits, malformedRelay } from '../../server/live-acks.js';
import { ackLimits } from '../../server/agent-writes.js';
import { southboundDefinition } from '../../server/southbound-service.js';
import type { CentralCluster, CentralMember } from '../helpers/central-cluster.js';
import { startCentralCluster } from '../helpers/central-cluster.js';
import { until } from '../helpers/ovnts-cli.js';
import { ViewAgent, geneve } from '../helpers/sb-agents.js';
import { testdirAfterTeardowns } from '../helpers/testdir.js';

const uuid = (n: number): string => `00000000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;

t.test('LiveAcks: only advances, wakes once per turn, prunes what is committed', async (t) => {
  const committed = new Map<string, number>();
  const live = new LiveAcks((u) => committed.get(u));
  let woken = 0;
  const off = live.onAdvance(() => woken++);
  t.ok(live.note(uuid(1), 5));
  t.notOk(live.note(uuid(1), 4), 'an older ack changes nothing');
  t.notOk(live.note(uuid(1), 5), 'nor the same one');
  t.ok(live.note(uuid(2), 5));
  t.equal(woken, 0, 'listeners run after the turn');
  await Promise.resolve();
  t.equal(woken, 1, 'once for all the acks of the turn');
  committed.set(uuid(1), 5).set(uuid(2), 3);
  live.prune();
  t.equal(live.get(uuid(1)), undefined, 'committed as far: dropped');
  t.equal(live.get(uuid(2)), 5, 'committed behind: kept');
  committed.clear();
  live.prune();
  t.equal(live.size, 0, 'rows that are gone: dropped');
  off();
  live.note(uuid(3), 1);
  await Promise.resolve();
  t.equal(woken, 1, 'a removed listener is not called');
});

t.test('LiveAcks: bounded; a full map first drops what is committed', async (t) => {
  const committed = new Map<string, number>();
  const live = new LiveAcks((u) => committed.get(u));
  for (let i = 0; i < liveAckLimits.entriesMax; i++) {
    live.note(uuid(i), 2);
    committed.set(uuid(i), 1);
  }
  t.notOk(live.note(uuid(liveAckLimits.entriesMax), 2), 'full, and nothing committed as far: refused');
  t.equal(live.size, liveAckLimits.entriesMax);
  committed.set(uuid(0), 2);
  t.ok(live.note(uuid(liveAckLimits.entriesMax), 2), 'one committed since: it makes room');
  t.equal(live.size, liveAckLimits.entriesMax);
});

t.test('malformedRelay', async (t) => {
  t.equal(malformedRelay({ member: 1, acks: [{ chassisPrivate: uuid(1), nbCfg: 3 }] }), undefined);
  t.match(malformedRelay({ member: 1 }), /needs acks/);
  t.match(malformedRelay({ member: 1, acks: [{ chassisPrivate: 'hv1', nbCfg: 3 }] }), /must be a UUID/);
  t.match(malformedRelay({ member: 1, acks: [{ chassisPrivate: uuid(1), nbCfg: 1.5 }] }), /must be an integer/);
  const many = Array.from({ length: liveAckLimits.relayBatchMax + 1 }, (_, i) => ({ chassisPrivate: uuid(i), nbCfg: 1 }));
  t.match(malformedRelay({ member: 1, acks: many }), /at most/);
});

const bump = [
  { op: 'mutate', table: 'NB_Global', where: [], mutations: [['nb_cfg', '+=', 1]] },
  { op: 'select', table: 'NB_Global', where: [], columns: ['nb_cfg'] },
];

async function bumped(m: CentralMember): Promise<{ target: number; revision: number }> {
  const out = await m.client.transact(bump);
  return { target: (out.results[1] as { rows: { nb_cfg: number }[] }).rows[0]?.nb_cfg as number, revision: out.revision };
}

async function privateNbCfg(m: CentralMember): Promise<number> {
  return (await m.client.list('Chassis_Private', [['name', '==', 'hv1']], { db: 'OVN_Southbound', consistency: 'serializable' })).rows[0]?.nb_cfg as number;
}

t.test('Wait(HV) on another member returns on the relayed ack, before the ack is committed', async (t) => {
  // The acks' Chassis_Private writes wait for `release` (every member's AckWriter).
  let release: () => void = () => undefined;
  let held = new Promise<void>((r) => (release = r));
  const box: { cl?: CentralCluster } = {};
  const ackTransact = async (ops: readonly unknown[], db: 'OVN_Northbound' | 'OVN_Southbound'): Promise<TransactOutcome> => {
    await held;
    return (box.cl as CentralCluster).members[0]?.client.transact(ops, db) as Promise<TransactOutcome>;
  };
  const cl = await startCentralCluster(testdirAfterTeardowns(t), { southbound: { ackTransact } });
  box.cl = cl;
  t.teardown(cl.stop);
  const [m0, m1, m2] = cl.members as [CentralMember, CentralMember, CentralMember];
  await m0.client.transact([{ op: 'insert', table: 'NB_Global', row: {} }]);
  const a = new ViewAgent({ chassis: 'hv1', hostname: 'host1', encaps: geneve('192.0.2.1'), lastRevision: 0, ifaceIds: [] }, { endpoints: [m1.address] }).start();
  t.teardown(() => a.close());
  await a.until(() => a.rows('Chassis_Private').length === 1, 'its registration');
  // The first acks are written: the row starts where the agent is.
  release();
  const first = await bumped(m0);
  await m2.client.wait(first.target, 'hv', 20_000, first.revision);
  await until('the first ack to be committed', async () => ((await privateNbCfg(m2)) === first.target ? true : undefined), 20_000);

  held = new Promise<void>((r) => (release = r));
  const { target, revision } = await bumped(m0);
  const waited = await m2.client.wait(target, 'hv', 20_000, revision);
  t.equal(waited.hvCfg, target, 'Wait(HV) on a member the agent is not on returned');
  t.ok((await privateNbCfg(m2)) < target, 'while Chassis_Private.nb_cfg is still behind');
  const global = (await m2.client.list('NB_Global', [], { consistency: 'serializable' })).rows[0];
  t.ok((global?.hv_cfg as number) < target, `and NB_Global.hv_cfg too (${String(global?.hv_cfg)})`);
  t.ok((m1.southbound.relay?.stats().acks ?? 0) >= 1, 'm1 relayed it');
  const local = await m1.client.wait(target, 'hv', 20_000, revision);
  t.equal(local.hvCfg, target, 'on the agent\'s own member too');

  // Without the relay, the other member waits for the commit.
  m1.southbound.relay?.close();
  const next = await bumped(m0);
  await a.until(() => a.nbCfg() >= next.target, 'the agent to see the next nb_cfg');
  await t.rejects(m2.client.wait(next.target, 'hv', 1_000, next.revision), /hv_cfg is .* not yet/, 'no relay: the other member does not know yet');
  t.equal((await m1.client.wait(next.target, 'hv', 20_000, next.revision)).hvCfg, next.target, 'the agent\'s member does');
  release();
  const committed = await m2.client.wait(next.target, 'hv', 20_000, next.revision);
  t.ok(committed.hvCfg >= next.target, 'once written, every member agrees');
  const g2 = (await m2.client.list('NB_Global', [], { consistency: 'linearizable' })).rows[0];
  t.equal(g2?.hv_cfg, next.target, 'NB_Global.hv_cfg followed the committed ack');
});

t.test('the leader writes the acks of every member\'s agents; a member that cannot relay writes its own', async (t) => {
  // Followers hold their acks for a minute here: any write of theirs would be the fallback.
  const cl = await startCentralCluster(testdirAfterTeardowns(t), { southbound: { ackFollowerHoldMs: 60_000 } });
  t.teardown(cl.stop);
  const m0 = cl.members[0] as CentralMember;
  await m0.client.transact([{ op: 'insert', table: 'NB_Global', row: {} }]);
  const agents = cl.members.map((m, i) => new ViewAgent({ chassis: `hv${i + 1}`, hostname: `host${i + 1}`, encaps: geneve(`192.0.2.${i + 1}`), lastRevision: 0, ifaceIds: [] }, { endpoints: [m.address] }).start());
  t.teardown(() => Promise.all(agents.map((a) => a.close())));
  const leader = cl.members.find((m) => m.central.node.leadership().role === 'leader') as CentralMember;
  const followers = cl.members.filter((m) => m !== leader);
  const written = (m: CentralMember): { transactions: number; rowsWritten: number } => m.southbound.acks.stats();
  const nbCfgs = async (): Promise<number[]> => (await leader.client.list('Chassis_Private', [], { db: 'OVN_Southbound', consistency: 'serializable' })).rows.map((r) => r.nb_cfg as number);
  await until('every registration', async () => ((await nbCfgs()).length === 3 ? true : undefined), 20_000);
  // The registrations' first acks may still be held: let them land first.
  const first = await bumped(m0);
  await until('the first acks to be written', async () => ((await nbCfgs()).every((n) => n >= first.target) ? true : undefined), 20_000);
  const before = cl.members.map(written);

  const { target, revision } = await bumped(m0);
  for (const m of cl.members) t.ok((await m.client.wait(target, 'hv', 20_000, revision)).hvCfg >= target, `Wait(HV) on n${m.central.id}`);
  await until('every Chassis_Private row to reach the target', async () => ((await nbCfgs()).every((n) => n >= target) ? true : undefined), 20_000);
  const after = cl.members.map(written);
  const delta = cl.members.map((m, i) => ({ id: m.central.id, txns: (after[i]?.transactions ?? 0) - (before[i]?.transactions ?? 0), rows: (after[i]?.rowsWritten ?? 0) - (before[i]?.rowsWritten ?? 0) }));
  const mine = delta[cl.members.indexOf(leader)];
  t.equal(mine?.rows, 3, `the leader (n${leader.central.id}) wrote all three rows, in ${String(mine?.txns)} transaction(s) (1 unless an agent took over ${ackLimits.batchMsMax} ms)`);
  for (const f of followers) t.equal(delta[cl.members.indexOf(f)]?.txns, 0, `n${f.central.id} held its agent's ack and wrote nothing`);
  t.equal(followers.reduce((n, f) => n + f.southbound.acks.stats().held, 0), 2, 'the followers\' holds are still on (their timers have not fired)');

  // A follower that no longer relays writes its own at once.
  const lone = followers[0] as CentralMember;
  lone.southbound.relay?.close();
  const txnsBefore = written(lone).transactions;
  const next = await bumped(m0);
  await until('every row to reach the next target', async () => ((await nbCfgs()).every((n) => n >= next.target) ? true : undefined), 20_000);
  t.ok(written(lone).transactions > txnsBefore, `n${lone.central.id}, its relay closed, wrote its agent's ack itself`);
});

t.test('a malformed relay is refused and counts for nothing', async (t) => {
  const cl = await startCentralCluster(testdirAfterTeardowns(t));
  t.teardown(cl.stop);
  const m0 = cl.members[0] as CentralMember;
  const Client = grpc.makeGenericClientConstructor(southboundDefinition(), 'Southbound');
  const c = new Client(m0.address, grpc.credentials.createInsecure()) as unknown as grpc.Client & { relayAcks: (cb: (e: grpc.ServiceError | null) => void) => grpc.ClientWritableStream<unknown> };
  t.teardown(() => c.close());
  const refused = await new Promise<grpc.ServiceError | null>((resolve) => {
    const call = c.relayAcks((e) => resolve(e));
    call.write({ member: 2, acks: [{ chassisPrivate: uuid(7), nbCfg: 9 }, { chassisPrivate: 'not-a-uuid', nbCfg: 10 }] });
    call.end();
  });
  t.equal(refused?.code, grpc.status.INVALID_ARGUMENT, 'INVALID_ARGUMENT');
  t.match(refused?.details, /must be a UUID/);
  t.equal(m0.central.liveAcks.size, 0, 'not even the well-formed ack before it was counted');
  const fine = await new Promise<grpc.ServiceError | null>((resolve) => {
    const call = c.relayAcks((e) => resolve(e));
    call.write({ member: 2, acks: [{ chassisPrivate: uuid(7), nbCfg: 9 }] });
    call.end();
  });
  t.equal(fine, null, 'a well-formed relay ends OK');
  t.equal(m0.central.liveAcks.get(uuid(7)), 9, 'and is counted (a row this member may not know: it counts only if it has it)');
});
