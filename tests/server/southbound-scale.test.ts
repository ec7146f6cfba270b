// The agent stream at scale, in one process: 200 agents (the real client) on one member of a
// 3-member cluster, in four interest groups of 50. A change every group sees is encoded once
// per group and written to all 200; one on a single switch reaches only its 50; the acks of all
// 200 are written in a few batched transactions and `Wait(HV)` returns; an agent whose runtime
// stalls while hundreds of revisions go by costs the member a bounded queue, then gets one
// coalesced catch-up. The figures (latency of the fan-out, memory per stream) are printed as
// comments: timing on a shared machine is noise, so only counts and bounds are asserted.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import * as grpc from '@grpc/grpc-js';
import t from 'tap';
import { loadProto } from '../../cluster/grpc-proto.js';
import type { CentralMember } from '../helpers/central-cluster.js';
import { startCentralCluster } from '../helpers/central-cluster.js';
import { until } from '../helpers/ovnts-cli.js';
import { ViewAgent, geneve } from '../helpers/sb-agents.js';
import { testdirAfterTeardowns } from '../helpers/testdir.js';

const agentsMax = 200;
const switches = 4;

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
function heapUsed(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] as number;
}

/** n streams that say Hello and count what comes, holding nothing; resolves once each got its first step. */
async function bareStreams(address: string, n: number): Promise<{ close: () => void }> {
  const root = loadProto('southbound.proto');
  const agentMessage = root.lookupType('ovnts.southbound.AgentMessage');
  const client = new grpc.Client(address, grpc.credentials.createInsecure());
  const calls: grpc.ClientDuplexStream<Buffer, Buffer>[] = [];
  await Promise.all(
    Array.from({ length: n }, (_, k) => {
      const call = client.makeBidiStreamRequest('/ovnts.southbound.Southbound/Stream', (m: Buffer) => m, (b: Buffer) => b);
      calls.push(call);
      call.on('error', () => undefined);
      call.write(Buffer.from(agentMessage.encode(agentMessage.fromObject({ hello: { chassis: `bare${k}`, hostname: 'bare', encaps: [{ type: 'geneve', ip: `10.254.${k >> 8}.${k & 255}` }] } })).finish()));
      return new Promise<void>((resolve) => {
        let seen = 0;
        call.on('data', () => {
          if (++seen === 2) resolve();
        });
      });
    }),
  );
  return {
    close: () => {
      for (const c of calls) c.cancel();
      client.close();
    },
  };
}

const portName = (k: number): string => `p${k % switches}_${Math.floor(k / switches)}`;

t.test('200 streams: shared encodings, fan-out, batched acks, Wait(HV)', async (t) => {
  // Progress steps only when the test asks: a timer's would be counted with the steps measured.
  const cl = await startCentralCluster(testdirAfterTeardowns(t), { southbound: { progressIntervalMs: 3_600_000 } });
  t.teardown(cl.stop);
  const [m0, m1] = cl.members as [CentralMember, CentralMember, CentralMember];
  await m0.client.transact([{ op: 'insert', table: 'NB_Global', row: {} }]);
  for (let s = 0; s < switches; s++) {
    const ports = Array.from({ length: agentsMax / switches }, (_, j) => `p${s}_${j}`);
    await m0.client.transact([
      { op: 'insert', table: 'Logical_Switch', 'uuid-name': 'ls', row: { name: `sw${s}`, ports: ['set', ports.map((_, i) => ['named-uuid', `p${i}`])] } },
      ...ports.map((p, i) => ({ op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': `p${i}`, row: { name: p, addresses: `00:00:00:0${s}:00:${(i + 16).toString(16)} 10.${s}.0.${i + 2}` } })),
    ]);
  }
  const fanout = m1.southbound.fanout;

  // What a stream costs the member: 200 bare streams (clients that keep nothing).
  const bareBefore = heapUsed();
  const bare = await bareStreams(m1.address, agentsMax);
  const bareAfter = heapUsed();
  t.equal(fanout.stats().sessions, agentsMax, 'bare streams open');
  t.comment(`member memory per stream (session, gRPC call and HTTP/2 stream, both ends): ${((bareAfter - bareBefore) / agentsMax / 1024).toFixed(1)} KiB`);
  // Their registrations are transactions the member forwards to the leader: all committed
  // before the deletion below, or one landing after it would register a chassis again that
  // never acknowledges (hv_cfg would wait for it).
  const bareRegistered = (): number => [...m0.central.sm.chassis.rows('Chassis_Private').values()].filter((r) => String(r.name).startsWith('bare')).length;
  for (const deadline = Date.now() + 60_000; bareRegistered() < agentsMax && Date.now() < deadline;) await new Promise((r) => setTimeout(r, 50));
  t.equal(bareRegistered(), agentsMax, 'the bare streams registered');
  bare.close();
  // They registered; gone for good, they are deleted (ovn-sbctl chassis-del), or hv_cfg would wait for them.
  const del = await m0.client.transact(Array.from({ length: agentsMax }, (_, k) => [{ op: 'delete', table: 'Chassis', where: [['name', '==', `bare${k}`]] }, { op: 'delete', table: 'Chassis_Private', where: [['name', '==', `bare${k}`]] }]).flat(), 'OVN_Southbound');
  t.equal(del.failed, false, 'the bare chassis deleted');

  const heapBefore = heapUsed();
  const agents = Array.from({ length: agentsMax }, (_, k) => {
    const a = new ViewAgent({ chassis: `hv${k}`, hostname: `hv${k}`, encaps: geneve(`10.255.${k >> 8}.${k & 255}`), lastRevision: 0, ifaceIds: [portName(k)] }, { endpoints: [m1.address] });
    a.keepUpdates = false;
    return a.start();
  });
  t.teardown(() => Promise.all(agents.map((a) => a.close())));
  for (const [k, a] of agents.entries()) await a.until(() => a.find('Chassis', (r) => r.name === `hv${k}`) !== undefined && a.find('Port_Binding', (r) => r.logical_port === portName(k)) !== undefined, 'registration', 120_000);
  // Every agent claims its port; its switch becomes local.
  await Promise.all(agents.map((a, k) => a.source.transact([{ op: 'update', table: 'Port_Binding', where: [['logical_port', '==', portName(k)]], row: { chassis: ['uuid', a.find('Chassis', (r) => r.name === `hv${k}`)?._uuid as string], up: true } }])));
  // Settled: each agent sees every port of its switch bound (all 200 claims applied here).
  for (const a of agents) await a.until(() => a.rows('Datapath_Binding').length === 1 && a.rows('Port_Binding').filter((p) => (p.chassis as string[]).length === 1).length === agentsMax / switches, 'its switch, all bound', 120_000);
  await new Promise<void>((resolve) => setImmediate(resolve));
  fanout.progress();
  const heapAfter = heapUsed();
  const settled = fanout.stats();
  t.equal(settled.sessions, agentsMax, `${agentsMax} streams on one member`);
  t.equal(settled.live, agentsMax, 'all live');
  t.equal(settled.groups, switches, `in ${switches} groups (one per switch)`);
  t.comment(`heap per stream, member and agent sides together: ${((heapAfter - heapBefore) / agentsMax / 1024).toFixed(1)} KiB (each agent holds ${agents[0]?.canonical().length} rows)`);

  // A change every agent sees (SB_Global.nb_cfg), with acks held back: one encoding per group.
  for (const a of agents) a.autoAck = false;
  const latencies: number[] = [];
  const roundsBefore = fanout.stats();
  for (let round = 0; round < 10; round++) {
    const before = fanout.stats();
    const started = performance.now();
    const out = await m0.client.transact([{ op: 'mutate', table: 'NB_Global', where: [], mutations: [['nb_cfg', '+=', 1]] }, { op: 'select', table: 'NB_Global', where: [], columns: ['nb_cfg'] }]);
    const target = (out.results[1] as { rows: { nb_cfg: number }[] }).rows[0]?.nb_cfg as number;
    await Promise.all(agents.map((a) => a.until(() => a.nbCfg() >= target, `nb_cfg ${target}`)));
    latencies.push(performance.now() - started);
    const after = fanout.stats();
    t.equal(after.encoded - before.encoded, switches, `round ${round}: ${switches} encodings`);
    t.equal(after.written - before.written, agentsMax, `round ${round}: ${agentsMax} writes`);
  }
  t.comment(`fan-out to ${agentsMax} streams, write through the NB API to the last agent's update: p50 ${quantile(latencies, 0.5).toFixed(1)} ms, max ${Math.max(...latencies).toFixed(1)} ms (${latencies.map((x) => x.toFixed(0)).join(' ')})`);
  const roundsAfter = fanout.stats();
  t.comment(`of which in the member's fan-out (filter, encode, write to ${agentsMax} streams): ${((roundsAfter.commitMsTotal - roundsBefore.commitMsTotal) / (roundsAfter.commits - roundsBefore.commits)).toFixed(2)} ms per revision`);
  t.comment(`written before these rounds: ${settled.written} messages, ${(settled.bytesWritten / 1e6).toFixed(1)} MB (200 registrations and claims, each seen by every agent)`);

  // A change on one switch: its 50 agents only.
  const before = fanout.stats();
  await m0.client.transact([{ op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': 'p', row: { name: 'late' } }, { op: 'mutate', table: 'Logical_Switch', where: [['name', '==', 'sw2']], mutations: [['ports', 'insert', ['set', [['named-uuid', 'p']]]]] }]);
  const onSw2 = agents.filter((_, k) => k % switches === 2);
  await Promise.all(onSw2.map((a) => a.until(() => a.find('Port_Binding', (r) => r.logical_port === 'late') !== undefined, 'the new port')));
  const after = fanout.stats();
  t.ok(after.encoded - before.encoded <= 2, `one switch's change encoded ${after.encoded - before.encoded} time(s)`);
  t.equal(after.written - before.written, agentsMax / switches, `written to its ${agentsMax / switches} agents only`);
  t.notOk(agents[0]?.find('Port_Binding', (r) => r.logical_port === 'late'), 'an agent of another switch did not get it');

  // --wait=hv: every agent acks; the member writes them in batches.
  for (const a of agents) {
    a.autoAck = true;
    a.source.ack(a.source.revision, a.nbCfg());
  }
  const acks0 = m1.southbound.acks.stats();
  const written0 = fanout.stats().written;
  const started = performance.now();
  const out = await m0.client.transact([{ op: 'mutate', table: 'NB_Global', where: [], mutations: [['nb_cfg', '+=', 1]] }, { op: 'select', table: 'NB_Global', where: [], columns: ['nb_cfg'] }]);
  const target = (out.results[1] as { rows: { nb_cfg: number }[] }).rows[0]?.nb_cfg as number;
  const waited = await m0.client.wait(target, 'hv', 60_000);
  const waitMs = performance.now() - started;
  t.ok(waited.hvCfg >= target, 'Wait(HV) returned once all 200 acknowledged');
  const acks1 = m1.southbound.acks.stats();
  const txns = acks1.transactions - acks0.transactions;
  t.ok(txns < agentsMax / 4, `${agentsMax} acks in ${txns} transactions`);
  t.equal(acks1.failures, 0, 'no ack write failed');
  // The records of the acks (each agent's Chassis_Private.nb_cfg) are applied on m1 too, and
  // cost its agents no step: one each for the change, none for what their acks wrote.
  await until('m1 to apply the last record', async () => (m1.central.revision >= waited.revision ? true : undefined), 10_000);
  await new Promise<void>((resolve) => setImmediate(resolve));
  t.equal(fanout.stats().written - written0, agentsMax, `${agentsMax} steps written: the change, and nothing for the records of the acks`);
  t.comment(`--wait=hv with ${agentsMax} agents: ${waitMs.toFixed(0)} ms, ${txns} Chassis_Private transactions`);
});

t.test('a stalled agent costs a bounded queue, then one coalesced catch-up', async (t) => {
  const limits = { queueBytesMax: 64 * 1024, queueBytesLow: 16 * 1024, queueMessagesMax: 32 };
  const cl = await startCentralCluster(testdirAfterTeardowns(t), { southbound: { limits } });
  t.teardown(cl.stop);
  const [m0, m1] = cl.members as [CentralMember, CentralMember, CentralMember];
  await m0.client.transact([{ op: 'insert', table: 'NB_Global', row: {} }]);
  const slow = new ViewAgent({ chassis: 'slow', hostname: 'slow', encaps: geneve('192.0.2.1'), lastRevision: 0 }, { endpoints: [m1.address], limits: { pendingChangesMax: 0 } }).start();
  t.teardown(() => slow.close());
  await slow.until(() => slow.rows('Chassis_Private').length === 1, 'registration');
  const fast = new ViewAgent({ chassis: 'fast', hostname: 'fast', encaps: geneve('192.0.2.2'), lastRevision: 0 }, { endpoints: [m1.address] }).start();
  t.teardown(() => fast.close());
  await fast.until(() => fast.rows('Chassis_Private').length === 1, 'registration');

  let release: () => void = () => undefined;
  slow.stall = new Promise<void>((r) => (release = r));
  const appliedBefore = slow.applied;
  const pad = 'x'.repeat(2000);
  const revisions = 300;
  let queuedMax = 0;
  for (let i = 0; i < revisions; i++) {
    await m0.client.transact([{ op: 'mutate', table: 'NB_Global', where: [], mutations: [['nb_cfg', '+=', 1]] }, { op: 'update', table: 'NB_Global', where: [], row: { options: ['map', [['pad', `${i}${pad}`]]] } }]);
    queuedMax = Math.max(queuedMax, m1.southbound.fanout.stats().queuedBytesMaxNow);
  }
  const final = (await m0.client.list('NB_Global')).rows[0]?.nb_cfg as number;
  await fast.until(() => fast.nbCfg() === final, 'the fast agent to see every revision');
  const stats = m1.southbound.fanout.stats();
  t.ok(stats.fellBehind >= 1, 'the stalled agent fell behind');
  t.ok(queuedMax <= limits.queueBytesMax + 8 * 1024, `its queue stayed under ${limits.queueBytesMax} bytes plus one message (max seen ${queuedMax})`);
  t.comment(`queued at most ${queuedMax} bytes for the stalled stream while ${revisions} revisions of ~2 KB went by`);

  slow.stall = undefined;
  release();
  await slow.until(() => slow.nbCfg() === final, 'the stalled agent to catch up', 60_000);
  const applied = slow.applied - appliedBefore;
  const widest = Math.max(...slow.updates.slice(-applied).map((u) => u.toRevision - u.fromRevision));
  t.ok(applied < revisions / 2, `the runtime applied ${applied} updates for ${revisions} revisions (some were already in flight)`);
  t.ok(widest >= revisions / 4, `one of them spans ${widest} revisions (coalesced)`);
  t.ok(m1.southbound.fanout.stats().catchUps >= 1, 'caught up from history');
  t.equal(slow.source.stats().snapshots, 1, 'without a snapshot');
  t.same(slow.rows('SB_Global').map((r) => (r.options as Map<string, string>).get('pad')?.slice(0, 3)), [`${revisions - 1}x`.slice(0, 3)], 'with the latest row');
});
