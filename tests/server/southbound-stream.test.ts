// The agent stream on a real 3-member cluster (Raft in process, real LevelDB, real gRPC on
// loopback) with the real client (agent/sb-stream.ts): a chassis registers by its Hello, gets
// the rows of its interest (Port_Bindings wanted by iface-id before they are bound, then the
// datapaths of its bound ports), its Acks become Chassis_Private.nb_cfg and `Wait(HV)` returns;
// when its member dies it resumes on another without a snapshot; when the changes it missed
// are no longer retained it gets a snapshot; malformed messages end the stream with
// INVALID_ARGUMENT and change nothing; a resync (sb-cluster-state-reset) brings the whole view.
import * as grpc from '@grpc/grpc-js';
import t from 'tap';
import { loadProto } from '../../cluster/grpc-proto.js';
import type { CentralMember } from '../helpers/central-cluster.js';
import { startCentralCluster } from '../helpers/central-cluster.js';
import { until } from '../helpers/ovnts-cli.js';
import { ViewAgent, geneve } from '../helpers/sb-agents.js';
import { flowDatapaths } from '../../northd/index.js';
import type * as sb from '../../ovsdb/rows/sb.js';
import { testdirAfterTeardowns } from '../helpers/testdir.js';

const hex2 = (n: number): string => n.toString(16).padStart(2, '0');
// Ports on subnet N get MACs 00:00:00:00:0N:xx and IPs 10.0.N.x. Two switches whose UUIDs fall
// in one shard share the row of a flow they both produce (northd/lflows/flow.ts): with the same
// addresses on sw0 and sw1, a port's ARP responder on one would be a row of the other's too.
const lsWithPorts = (ls: string, ports: string[], subnet = 0): unknown[] => [
  { op: 'insert', table: 'Logical_Switch', 'uuid-name': 'ls', row: { name: ls, ports: ['set', ports.map((_, i) => ['named-uuid', `p${i}`])] } },
  ...ports.map((p, i) => ({ op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': `p${i}`, row: { name: p, addresses: `00:00:00:00:${hex2(subnet)}:${hex2(10 + i)} 10.0.${subnet}.${10 + i}` } })),
];
const bumpNbCfg = [
  { op: 'mutate', table: 'NB_Global', where: [], mutations: [['nb_cfg', '+=', 1]] },
  { op: 'select', table: 'NB_Global', where: [], columns: ['nb_cfg'] },
];

async function setUp(m: CentralMember): Promise<void> {
  await m.client.transact([{ op: 'insert', table: 'NB_Global', row: {} }]);
  await m.client.transact(lsWithPorts('sw0', ['vm1', 'vm3']));
  await m.client.transact(lsWithPorts('sw1', ['vm2'], 1));
}

const datapathOf = (a: ViewAgent, port: string): string | undefined => a.find('Port_Binding', (r) => r.logical_port === port)?.datapath as string | undefined;

t.test('register, wanted ports, claim, acks → Chassis_Private.nb_cfg → Wait(HV)', async (t) => {
  const cl = await startCentralCluster(testdirAfterTeardowns(t));
  t.teardown(cl.stop);
  const [m0, m1] = cl.members as [CentralMember, CentralMember, CentralMember];
  await setUp(m0);
  const a = new ViewAgent({ chassis: 'hv1', hostname: 'host1', encaps: geneve('192.0.2.1'), lastRevision: 0, ifaceIds: ['vm1'] }, { endpoints: [m1.address] }).start();
  t.teardown(() => a.close());
  await a.until(() => a.find('Chassis', (r) => r.name === 'hv1') !== undefined && a.rows('Chassis_Private').length === 1, 'its own registration');
  const chassis = a.find('Chassis', (r) => r.name === 'hv1');
  t.equal(chassis?.hostname, 'host1', 'Hello registered the chassis with its hostname');
  t.same(a.rows('Encap').map((e) => [e.type, e.ip]), [['geneve', '192.0.2.1']], 'and its encap');
  t.ok(a.find('Port_Binding', (r) => r.logical_port === 'vm1'), 'the Port_Binding of a wanted iface-id comes before it is bound');
  t.equal(a.rows('Datapath_Binding').length, 0, 'but no datapath is local yet');
  t.equal(a.rows('Logical_Flow').length, 0, 'nor any of their flows');

  // Claim vm1: sw0 becomes local, with every row of it; sw1 stays away.
  const claim = await a.source.transact([{ op: 'update', table: 'Port_Binding', where: [['logical_port', '==', 'vm1']], row: { chassis: ['uuid', chassis?._uuid as string], up: true } }]);
  t.same(claim, [{ count: 1 }]);
  const sw0 = datapathOf(a, 'vm1') as string;
  await a.until(() => a.view.get('Datapath_Binding')?.has(sw0) === true && a.find('Port_Binding', (r) => r.logical_port === 'vm3') !== undefined, 'sw0 to become local');
  t.ok(a.rows('Logical_Flow').length > 10, `sw0's logical flows arrived (${a.rows('Logical_Flow').length})`);
  t.ok(a.rows('Logical_Flow').every((f) => flowDatapaths(a.view, f as unknown as sb.Logical_Flow).includes(sw0)), 'only flows of sw0');
  t.notOk(a.find('Port_Binding', (r) => r.logical_port === 'vm2'), 'nothing of sw1');

  // iface-ids change on the stream: vm2's binding comes, then goes, without its datapath.
  a.source.setIfaceIds(['vm1', 'vm2']);
  await a.until(() => a.find('Port_Binding', (r) => r.logical_port === 'vm2') !== undefined, 'vm2 by iface-id');
  t.equal(a.rows('Datapath_Binding').length, 1, 'sw1 is not local for it');
  a.source.setIfaceIds(['vm1']);
  await a.until(() => a.find('Port_Binding', (r) => r.logical_port === 'vm2') === undefined, 'vm2 to leave');

  // --wait=hv: bump nb_cfg; the agent gets SB_Global at that revision, acks it, and the leader
  // writes Chassis_Private.nb_cfg, which hv_cfg follows.
  const bumped = await m0.client.transact(bumpNbCfg);
  const target = (bumped.results[1] as { rows: { nb_cfg: number }[] }).rows[0]?.nb_cfg as number;
  const started = Date.now();
  const waited = await m0.client.wait(target, 'hv', 20_000);
  t.ok(waited.hvCfg >= target, `Wait(HV) returned hv_cfg ${waited.hvCfg} >= ${target} after ${Date.now() - started} ms`);
  const priv = await m0.client.list('Chassis_Private', [['name', '==', 'hv1']], { db: 'OVN_Southbound' });
  t.equal(priv.rows[0]?.nb_cfg, target, 'Chassis_Private.nb_cfg is the acknowledged nb_cfg');
  // The leader writes every member's acks (m1 relays its agent's to it; server/agent-writes.ts).
  const leader = cl.members.find((m) => m.central.node.leadership().role === 'leader');
  t.ok((leader?.southbound.acks.stats().rowsWritten ?? 0) >= 1, `written by the leader (n${String(leader?.central.id)}; the agent is on n${m1.central.id})`);
  t.equal(a.source.stats().snapshots, 1, 'one snapshot, at the start');
  t.equal(a.updates.filter((u) => u.reset).length, 1, 'one reset update');
  t.equal(m1.central.sessions.count('agent'), 1, 'the member counts one agent stream');
  await a.close();
  await until('the agent stream count to drop', async () => (m1.central.sessions.count('agent') === 0 ? true : undefined), 10_000);
  t.pass('and none once it closed');
});

t.test('an ack costs no step back: its record rides the next one; a step of one agent\'s own rows reaches it alone; every step is from the agent\'s own revision', async (t) => {
  // No progress steps during the test: what an agent receives is what the changes send it.
  const cl = await startCentralCluster(testdirAfterTeardowns(t), { southbound: { progressIntervalMs: 3_600_000 } });
  t.teardown(cl.stop);
  const [m0, m1] = cl.members as [CentralMember, CentralMember, CentralMember];
  await setUp(m0);
  const agents = (['vm1', 'vm3'] as const).map((port, i) =>
    new ViewAgent({ chassis: `hv${i + 1}`, hostname: `hv${i + 1}`, encaps: geneve(`192.0.2.${i + 1}`), lastRevision: 0, ifaceIds: [port] }, { endpoints: [m1.address] }).start());
  const [a, b] = agents as [ViewAgent, ViewAgent];
  for (const x of agents) t.teardown(() => x.close());
  for (const [x, port] of [[a, 'vm1'], [b, 'vm3']] as const) {
    await x.until(() => x.find('Chassis', (r) => r.name === x.hello.chassis) !== undefined && x.find('Port_Binding', (r) => r.logical_port === port) !== undefined, 'registration');
    const chassis = x.find('Chassis', (r) => r.name === x.hello.chassis)?._uuid as string;
    await x.source.transact([{ op: 'update', table: 'Port_Binding', where: [['logical_port', '==', port]], row: { chassis: ['uuid', chassis] } }]);
  }
  for (const x of agents) await x.until(() => x.rows('Datapath_Binding').length === 1 && x.rows('Port_Binding').every((r) => (r.chassis as string[]).length === 1), 'sw0 local, both ports bound');
  t.equal(m1.southbound.fanout.stats().groups, 1, 'both agents are in one group (the same local datapaths)');

  // b stops acknowledging; nb_cfg is bumped (a shared step: both get SB_Global) and a acks it.
  b.autoAck = false;
  const bumped = await m0.client.transact(bumpNbCfg);
  const target = (bumped.results[1] as { rows: { nb_cfg: number }[] }).rows[0]?.nb_cfg as number;
  for (const x of agents) await x.until(() => x.nbCfg() === target, 'SB_Global.nb_cfg');
  const held = a.source.revision;
  t.equal(b.source.revision, held, 'both at the bump\'s revision');
  const privateOfA = async (): Promise<Record<string, unknown> | undefined> =>
    (await m1.client.list('Chassis_Private', [['name', '==', 'hv1']], { db: 'OVN_Southbound', consistency: 'serializable' })).rows[0];
  // m1 applied the record of a's Ack (its Chassis_Private.nb_cfg): the step it would have sent
  // for it would have been written then, in the same apply.
  await until('the record of a\'s Ack on m1', async () => ((await privateOfA())?.nb_cfg === target ? true : undefined), 10_000);
  await new Promise((r) => setTimeout(r, 300));
  t.equal(a.source.revision, held, 'a was sent no step for the record of its own Ack');
  t.not(a.find('Chassis_Private', (r) => r.name === 'hv1')?.nb_cfg, target, 'so its copy of Chassis_Private is the one before');
  t.equal(b.source.revision, held, 'nor was b');
  t.ok(m1.southbound.fanout.lagging(target), 'b, which acknowledged before, is counted short of the new nb_cfg (the ack writer waits for it, a while)');
  t.notOk(m1.southbound.fanout.lagging(target - 1), 'but not of the one before');

  // A change of sw0 reaches both, each in one step from the revision it holds, and a's carries
  // its Chassis_Private as it is now.
  await m0.client.transact([{ op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': 'p', row: { name: 'vm9' } }, { op: 'mutate', table: 'Logical_Switch', where: [['name', '==', 'sw0']], mutations: [['ports', 'insert', ['set', [['named-uuid', 'p']]]]] }]);
  for (const x of agents) await x.until(() => x.find('Port_Binding', (r) => r.logical_port === 'vm9') !== undefined, 'vm9');
  t.equal(a.source.revision, b.source.revision, 'both at the same revision again');
  for (const x of agents) {
    t.same(x.updates.filter((u) => u.fromRevision >= held).map((u) => [u.fromRevision, u.toRevision]), [[held, x.source.revision]], `${x.hello.chassis}: one step from what it held to vm9's`);
  }
  const carried = a.updates.at(-1)?.changes.find((c) => c.table === 'Chassis_Private');
  t.equal(carried?.row?.nb_cfg, target, 'a\'s step carried its Chassis_Private with the nb_cfg it acknowledged');
  t.equal(a.find('Chassis_Private', (r) => r.name === 'hv1')?.nb_cfg, target, 'which a now holds');

  // A change of a row only a asked for (vm2, on sw1, local to neither) is a step for a alone
  // (vm2's addresses, old and new, are in no flow of sw0: see lsWithPorts).
  a.source.setIfaceIds(['vm1', 'vm2']);
  await a.until(() => a.find('Port_Binding', (r) => r.logical_port === 'vm2') !== undefined, 'vm2, asked for');
  const bAt = b.source.revision;
  const bSteps = b.updates.length;
  await m0.client.transact([{ op: 'update', table: 'Logical_Switch_Port', where: [['name', '==', 'vm2']], row: { addresses: '00:00:00:00:00:99 10.0.1.99' } }]);
  await a.until(() => ((a.find('Port_Binding', (r) => r.logical_port === 'vm2')?.mac as string[] | undefined) ?? []).includes('00:00:00:00:00:99 10.0.1.99'), 'vm2\'s new address');
  await new Promise((r) => setTimeout(r, 300));
  t.ok(a.source.revision > bAt, `a is at the change's revision ${a.source.revision}`);
  t.equal(b.updates.length, bSteps, 'b was sent no (empty) step for it');
  t.equal(b.source.revision, bAt, 'and holds the revision it held');
  await m0.client.transact([{ op: 'update', table: 'Logical_Switch_Port', where: [['name', '==', 'vm9']], row: { addresses: ['set', ['00:00:00:00:00:98']] } }]);
  for (const x of agents) await x.until(() => ((x.find('Port_Binding', (r) => r.logical_port === 'vm9')?.mac as string[] | undefined) ?? []).length === 1, 'vm9\'s address');
  t.same(b.updates.slice(bSteps).map((u) => [u.fromRevision, u.toRevision]), [[bAt, b.source.revision]], 'b\'s next step is from what it held');
  for (const x of agents) {
    const u = x.updates;
    t.ok(u.every((v, i) => i === 0 || v.fromRevision === (u[i - 1] as typeof v).toRevision), `${x.hello.chassis}: every step starts where the one before ended`);
  }
  b.source.ack(b.source.revision, b.nbCfg());
  await until('b to count as caught up', async () => (m1.southbound.fanout.lagging(target) ? undefined : true), 10_000);
  // One more change of sw0 brings both to the newest revision, b's Ack record with it.
  await m0.client.transact([{ op: 'update', table: 'Logical_Switch_Port', where: [['name', '==', 'vm9']], row: { addresses: ['set', ['00:00:00:00:00:97']] } }]);
  for (const x of agents) await x.until(() => ((x.find('Port_Binding', (r) => r.logical_port === 'vm9')?.mac as string[] | undefined) ?? []).includes('00:00:00:00:00:97'), 'vm9\'s last address');
  t.equal(b.find('Chassis_Private', (r) => r.name === 'hv2')?.nb_cfg, target, 'b holds the record of its Ack');
  // Each view equals a snapshot taken now by an agent with the same interest.
  for (const [x, ports] of [[a, ['vm1', 'vm2']], [b, ['vm3']]] as const) {
    const fresh = new ViewAgent({ ...x.hello, ifaceIds: [...ports] }, { endpoints: [m1.address] });
    fresh.autoAck = false;
    fresh.start();
    t.teardown(() => fresh.close());
    await fresh.until(() => fresh.source.revision > 0, 'a snapshot');
    await Promise.all([x, fresh].map((y) => y.until(() => y.source.revision === Math.max(x.source.revision, fresh.source.revision), 'the same revision')));
    t.same(x.canonical(), fresh.canonical(), `${x.hello.chassis}'s view equals a fresh snapshot`);
  }
});

t.test('a member dies: the agent resumes on another without a snapshot', async (t) => {
  const cl = await startCentralCluster(testdirAfterTeardowns(t));
  t.teardown(cl.stop);
  const [m0, m1, m2] = cl.members as [CentralMember, CentralMember, CentralMember];
  await setUp(m2);
  const a = new ViewAgent({ chassis: 'hv1', hostname: 'hv1', encaps: geneve('192.0.2.1'), lastRevision: 0, ifaceIds: ['vm1'] }, { endpoints: [m0.address, m1.address], random: () => 0 }).start();
  t.teardown(() => a.close());
  await a.until(() => a.find('Chassis', (r) => r.name === 'hv1') !== undefined && a.find('Port_Binding', (r) => r.logical_port === 'vm1') !== undefined, 'registration');
  const hv1 = a.find('Chassis', (r) => r.name === 'hv1')?._uuid as string;
  await a.source.transact([{ op: 'update', table: 'Port_Binding', where: [['logical_port', '==', 'vm1']], row: { chassis: ['uuid', hv1] } }]);
  await a.until(() => a.rows('Datapath_Binding').length === 1, 'sw0 local');
  t.match(a.states[0], { state: 'connected', endpoint: m0.address }, 'on the first member');

  await cl.stopMember(m0);
  // While it reconnects: a port added on its datapath, one on another, and a chassis-owned row.
  await m2.client.transact([{ op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': 'p', row: { name: 'vm4' } }, { op: 'mutate', table: 'Logical_Switch', where: [['name', '==', 'sw0']], mutations: [['ports', 'insert', ['set', [['named-uuid', 'p']]]]] }]);
  await m2.client.transact([{ op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': 'p', row: { name: 'vm5' } }, { op: 'mutate', table: 'Logical_Switch', where: [['name', '==', 'sw1']], mutations: [['ports', 'insert', ['set', [['named-uuid', 'p']]]]] }]);
  await a.until(() => a.find('Port_Binding', (r) => r.logical_port === 'vm4') !== undefined, 'vm4 after the failover', 30_000);
  t.ok(a.states.some((s) => s.state === 'disconnected' && s.endpoint === m0.address), 'it saw the member go');
  t.match(a.states[a.states.length - 1], { state: 'connected', endpoint: m1.address }, 'and is on the next one');
  t.equal(a.source.stats().resumes, 1, 'resumed from its revision');
  t.equal(a.source.stats().snapshots, 1, 'no second snapshot');
  t.equal(a.updates.filter((u) => u.reset).length, 1, 'no reset update after the first');
  t.notOk(a.find('Port_Binding', (r) => r.logical_port === 'vm5'), 'nothing of sw1');

  // What it holds equals a snapshot taken now by an agent with the same interest.
  const fresh = new ViewAgent({ chassis: 'hv1', hostname: 'hv1', encaps: geneve('192.0.2.1'), lastRevision: 0, ifaceIds: ['vm1'] }, { endpoints: [m1.address] }).start();
  t.teardown(() => fresh.close());
  await fresh.until(() => fresh.source.revision > 0, 'a snapshot');
  await Promise.all([a, fresh].map((x) => x.until(() => x.source.revision === Math.max(a.source.revision, fresh.source.revision), 'the same revision')));
  t.same(a.canonical(), fresh.canonical(), 'the resumed view equals a fresh snapshot');
});

t.test('changes no longer retained: the agent gets a snapshot', async (t) => {
  const cl = await startCentralCluster(testdirAfterTeardowns(t), { history: { revisionsMax: 3, bytesMax: 1 << 30 } });
  t.teardown(cl.stop);
  const [m0, m1, m2] = cl.members as [CentralMember, CentralMember, CentralMember];
  await setUp(m2);
  // A long first backoff: the changes below are all made before it reconnects.
  const a = new ViewAgent({ chassis: 'hv1', hostname: 'hv1', encaps: geneve('192.0.2.1'), lastRevision: 0, ifaceIds: ['vm1'] }, { endpoints: [m0.address, m1.address], random: () => 0, limits: { backoffMsInitial: 3000 } }).start();
  t.teardown(() => a.close());
  await a.until(() => a.find('Port_Binding', (r) => r.logical_port === 'vm1') !== undefined && a.rows('Chassis_Private').length === 1, 'registration');
  const before = a.source.revision;
  await cl.stopMember(m0);
  for (let i = 0; i < 6; i++) await m2.client.transact(lsWithPorts(`extra${i}`, [`x${i}`]));
  await a.until(() => a.source.stats().snapshots === 2, 'a second snapshot', 30_000);
  await a.until(() => a.updates.filter((u) => u.reset).length === 2, 'a reset update');
  const reset = a.updates.filter((u) => u.reset)[1];
  t.equal(reset?.fromRevision, before, 'from the revision it held');
  t.ok(a.find('Port_Binding', (r) => r.logical_port === 'vm1'), 'the view after the reset has its rows');
  t.equal(a.source.stats().resumes, 0, 'no resume was possible');
});

t.test('resync (sb-cluster-state-reset): the whole view again from revision 0, acks go on', async (t) => {
  const cl = await startCentralCluster(testdirAfterTeardowns(t));
  t.teardown(cl.stop);
  const [m0, m1] = cl.members as [CentralMember, CentralMember, CentralMember];
  await setUp(m0);
  const a = new ViewAgent({ chassis: 'hv1', hostname: 'hv1', encaps: geneve('192.0.2.1'), lastRevision: 0, ifaceIds: ['vm1'] }, { endpoints: [m1.address], random: () => 0 }).start();
  t.teardown(() => a.close());
  await a.until(() => a.find('Chassis', (r) => r.name === 'hv1') !== undefined && a.find('Port_Binding', (r) => r.logical_port === 'vm1') !== undefined, 'registration');
  const hv1 = a.find('Chassis', (r) => r.name === 'hv1')?._uuid as string;
  await a.source.transact([{ op: 'update', table: 'Port_Binding', where: [['logical_port', '==', 'vm1']], row: { chassis: ['uuid', hv1] } }]);
  await a.until(() => a.rows('Datapath_Binding').length === 1, 'sw0 local');
  // The runtime is busy with an update when the resync comes: its ack follows on the new stream.
  let release = (): void => undefined;
  a.stall = new Promise<void>((r) => (release = r));
  await m0.client.transact(bumpNbCfg);
  await a.until(() => a.source.stats().delivered > a.applied, 'an update held by the busy runtime');
  a.source.resync();
  await until('the new stream', async () => (a.source.stats().connects === 2 ? true : undefined), 10_000);
  a.stall = undefined;
  release();
  await a.until(() => a.source.stats().snapshots === 2, 'a second snapshot', 10_000);
  await a.until(() => a.updates.filter((u) => u.reset).length === 2, 'a reset update');
  const reset = a.updates.filter((u) => u.reset)[1];
  t.equal(reset?.fromRevision, 0, 'the reset claims nothing held: from revision 0');
  t.ok(a.find('Port_Binding', (r) => r.logical_port === 'vm1') !== undefined && a.rows('Datapath_Binding').length === 1, 'and holds the whole view');
  t.same(a.states.filter((s) => s.state === 'disconnected').map((s) => s.state === 'disconnected' && s.reason), ['a resync was asked for'], 'one disconnection, the resync\'s: no Ack was refused');
  t.match(a.states[a.states.length - 1], { state: 'connected', endpoint: m1.address, resumedBy: 'snapshot' }, 'back on the same member at once');
  // Acks still reach the member: --wait=hv returns.
  const bumped = await m0.client.transact(bumpNbCfg);
  const target = (bumped.results[1] as { rows: { nb_cfg: number }[] }).rows[0]?.nb_cfg as number;
  t.ok((await m0.client.wait(target, 'hv', 20_000)).hvCfg >= target, 'Wait(HV) returns after the resync');
});

t.test('malformed messages end the stream with INVALID_ARGUMENT and change nothing', async (t) => {
  const cl = await startCentralCluster(testdirAfterTeardowns(t));
  t.teardown(cl.stop);
  const [m0] = cl.members as [CentralMember, CentralMember, CentralMember];
  await setUp(m0);
  const root = loadProto('southbound.proto');
  const agentMessage = root.lookupType('ovnts.southbound.AgentMessage');
  const client = new grpc.Client(m0.address, grpc.credentials.createInsecure());
  t.teardown(() => client.close());
  /** Opens a stream, sends raw messages, resolves with how it ended. */
  const exchange = (messages: (Buffer | Record<string, unknown>)[], waitForFirst = false): Promise<{ code: number; details: string; received: number }> =>
    new Promise((resolve) => {
      const call = client.makeBidiStreamRequest('/ovnts.southbound.Southbound/Stream', (m: Buffer) => m, (b: Buffer) => b);
      let received = 0;
      const queue = messages.map((m) => (Buffer.isBuffer(m) ? m : Buffer.from(agentMessage.encode(agentMessage.fromObject(m)).finish())));
      const sendRest = (): void => {
        while (queue.length > 0) call.write(queue.shift() as Buffer);
      };
      call.on('data', () => {
        received++;
        if (received === 1) sendRest();
      });
      call.on('error', (e: grpc.ServiceError) => resolve({ code: e.code, details: e.details, received }));
      call.on('end', () => resolve({ code: 0, details: 'ended', received }));
      call.write(queue.shift() as Buffer);
      if (!waitForFirst) sendRest();
      setTimeout(() => call.cancel(), 10_000).unref();
    });
  const hello = (chassis: string, extra: Record<string, unknown> = {}): Record<string, unknown> => ({ hello: { chassis, hostname: chassis, encaps: [{ type: 'geneve', ip: '192.0.2.9' }], ...extra } });
  const INVALID = grpc.status.INVALID_ARGUMENT;

  t.match(await exchange([{ ack: { revision: 1, nbCfg: 0 } }]), { code: INVALID, details: /first message of a stream is Hello/ });
  t.match(await exchange([hello('bad-encap', { encaps: [{ type: 'gre', ip: '192.0.2.9' }] })]), { code: INVALID, details: /not geneve, stt or vxlan/ });
  t.match(await exchange([hello('bad-ip', { encaps: [{ type: 'geneve', ip: 'not-an-ip' }] })]), { code: INVALID, details: /not an IP address/ });
  t.match(await exchange([hello('')]), { code: INVALID, details: /Hello.chassis/ });
  t.match(await exchange([hello('no-encaps', { encaps: [] })]), { code: INVALID, details: /encapsulations/ });
  t.match(await exchange([hello('bad-held', { lastRevision: 1, heldDatapaths: ['nope'] })]), { code: INVALID, details: /not a uuid/ });
  t.match(await exchange([hello('many-diff-tables', { setDifferenceTables: Array.from({ length: 65 }, (_, i) => `T${i}`) })]), { code: INVALID, details: /set_difference_tables: at most 64/ });
  t.match(await exchange([hello('empty-diff-table', { setDifferenceTables: [''] })]), { code: INVALID, details: /set_difference_tables: a table name/ });
  t.match(await exchange([Buffer.from([0xff, 0xff, 0xff, 0x0f])]), { code: INVALID, details: /not an AgentMessage/ });
  // After a good Hello (and its Resume): the same stream is cut at the first bad message.
  t.match(await exchange([hello('hvx'), Buffer.from([0x0a, 0xff])], true), { code: INVALID, details: /not an AgentMessage/ });
  t.match(await exchange([hello('hvx'), hello('hvx')], true), { code: INVALID, details: /only the first message/ });
  t.match(await exchange([hello('hvx'), { ack: { revision: 1_000_000_000, nbCfg: 0 } }], true), { code: INVALID, details: /has sent up to/ });
  t.match(await exchange([hello('hvx'), { ack: { revision: 1, nbCfg: 99 } }], true), { code: INVALID, details: /beyond SB_Global.nb_cfg/ });
  t.match(await exchange([hello('hvx'), { interest: { ifaceIds: [''] } }], true), { code: INVALID, details: /iface-id/ });
  t.match(await exchange([hello('hvx'), {}], true), { code: INVALID, details: /nothing in it/ });

  const chassis = await m0.client.list('Chassis', [], { db: 'OVN_Southbound' });
  t.same(chassis.rows.map((r) => r.name), ['hvx'], 'only the chassis of a valid Hello was registered');
  const priv = await m0.client.list('Chassis_Private', [], { db: 'OVN_Southbound' });
  t.same(priv.rows.map((r) => [r.name, r.nb_cfg]), [['hvx', 0]], 'no bad Ack changed nb_cfg');

  // The chassis Transact: bad JSON is refused; a write to what northd derives is a permission error.
  const transact = (opsJson: string): Promise<{ code: number; reply?: { resultsJson: string; failed: boolean } }> =>
    new Promise((resolve) => {
      const T = root.lookupType('ovnts.southbound.TransactRequest');
      const R = root.lookupType('ovnts.southbound.TransactReply');
      client.makeUnaryRequest('/ovnts.southbound.Southbound/Transact', (m: Buffer) => m, (b: Buffer) => R.toObject(R.decode(b)), Buffer.from(T.encode(T.fromObject({ opsJson })).finish()), (err, reply) =>
        resolve(err ? { code: err.code } : { code: 0, reply: reply as { resultsJson: string; failed: boolean } }),
      );
    });
  t.match(await transact('{nope'), { code: INVALID });
  const denied = await transact(JSON.stringify([{ op: 'insert', table: 'Logical_Flow', row: {} }]));
  t.match(denied, { code: 0, reply: { failed: true } });
  t.match(JSON.parse(denied.reply?.resultsJson ?? '[]'), [{ error: 'permission error' }]);
});
