// Goal: what operators read of a member counts what is really there: Watch streams and OVSDB
// connections in `cluster status` and /metrics as clients come and go, the agent-stream hook,
// proposal latency and snapshot timings in /metrics, and every `ovnts cluster` subcommand
// (add-learner included) answering --format json.
// Method: central nodes in this process with real gRPC and OVSDB listeners on loopback, real
// clients, the metrics HTTP server, and the real command line as a child process.
import { APPLY_VERSION_MAX } from '../../server/apply-version.js';
import { join } from 'node:path';
import net from 'node:net';
import t from 'tap';
import { LocalNetwork } from '../../cluster/local-transport.js';
import { AdminClient } from '../../server/admin-service.js';
import { CentralNode } from '../../server/central-node.js';
import { CentralMetrics, startMetricsServer } from '../../server/metrics.js';
import { startOvsdbDoor } from '../../server/ovsdb-door.js';
import { startCentralCluster } from '../helpers/central-cluster.js';
import { ViewAgent, geneve } from '../helpers/sb-agents.js';
import { JsonRpcClient } from '../helpers/jsonrpc-client.js';
import { ovnts, until } from '../helpers/ovnts-cli.js';
import { testdirAfterTeardowns } from '../helpers/testdir.js';

async function scrape(base: string): Promise<string> {
  const r = await fetch(`${base}/metrics`);
  return r.text();
}

function sample(text: string, name: string): number | undefined {
  const m = new RegExp(`^${name.replace(/[{}"=]/g, (c) => `\\${c}`)} (\\S+)$`, 'm').exec(text);
  return m === null ? undefined : Number(m[1]);
}

t.test('connected clients in status and /metrics: watch streams, OVSDB sessions, agents', async (t) => {
  const cluster = await startCentralCluster(testdirAfterTeardowns(t));
  t.teardown(() => cluster.stop());
  const member = cluster.members[0];
  if (member === undefined) throw new Error('no member');
  const admin = new AdminClient(member.address);
  t.teardown(() => admin.close());
  const metrics = new CentralMetrics();
  metrics.attach(member.central);
  const http = await startMetricsServer(member.central, metrics, '127.0.0.1', 0);
  t.teardown(() => http.close());
  const base = `http://127.0.0.1:${http.port}`;
  const counts = async (): Promise<{ watch: number; ovsdb: number; agent: number }> => {
    const s = (await admin.status()).sessions;
    if (s === null) throw new Error('no session counts in the status reply');
    return s;
  };

  t.same(await counts(), { watch: 0, ovsdb: 0, agent: 0 }, 'nobody connected yet');
  const idle = await scrape(base);
  for (const kind of ['watch', 'ovsdb', 'agent']) t.equal(sample(idle, `ovnts_sessions{kind="${kind}"}`), 0, `/metrics shows 0 ${kind} sessions`);
  for (const reason of ['foreign-cluster', 'misaddressed', 'beyond-log']) {
    t.equal(sample(idle, `ovnts_raft_messages_dropped{reason="${reason}"}`), 0, `/metrics shows no Raft message dropped as ${reason}`);
  }
  // An election can leave answers of an earlier term behind: present, whatever the count.
  t.ok((sample(idle, 'ovnts_raft_messages_dropped{reason="stale-term"}') ?? -1) >= 0, '/metrics counts messages of stale terms');

  // One Watch: counted once its first event has arrived (the server counts it before sending).
  const watch = member.client.watch(['Logical_Switch'], 0);
  await new Promise<void>((resolve, reject) => {
    watch.once('data', () => resolve());
    watch.once('error', reject);
  });
  watch.on('error', () => undefined);
  // One OVSDB session, counted once it has answered a request.
  const door = await startOvsdbDoor({ central: member.central, listen: { host: '127.0.0.1', port: 0 } });
  t.teardown(() => door.close());
  const port = door.address !== undefined && 'port' in door.address ? door.address.port : 0;
  const rpc = await JsonRpcClient.connect({ host: '127.0.0.1', port });
  t.same(await rpc.request('list_dbs', []), ['OVN_Northbound', '_Server']);
  // The agent stream's hook (server/southbound-service.ts opens one per agent).
  const closeAgent = member.central.sessions.open('agent');

  t.same(await counts(), { watch: 1, ovsdb: 1, agent: 1 }, 'one of each');
  const busy = await scrape(base);
  for (const kind of ['watch', 'ovsdb', 'agent']) t.equal(sample(busy, `ovnts_sessions{kind="${kind}"}`), 1, `/metrics shows 1 ${kind} session`);
  for (const listener of ['ovsdb', 'grpc']) t.equal(sample(busy, `ovnts_connections_refused{listener="${listener}"}`), 0, `/metrics shows no ${listener} connection refused`);
  // A door that is full (it holds at most 1, and has 1) turns the next client away.
  const full = await startOvsdbDoor({ central: member.central, listen: { host: '127.0.0.1', port: 0 }, limits: { connectionsMax: 1 } });
  t.teardown(() => full.close());
  const fullPort = full.address !== undefined && 'port' in full.address ? full.address.port : 0;
  const holder = await JsonRpcClient.connect({ host: '127.0.0.1', port: fullPort });
  t.same(await holder.request('list_dbs', []), ['OVN_Northbound', '_Server']);
  const turnedAway = net.connect(fullPort, '127.0.0.1');
  turnedAway.on('error', () => undefined);
  await new Promise<void>((resolve) => turnedAway.on('close', () => resolve()));
  t.equal(sample(await scrape(base), 'ovnts_connections_refused{listener="ovsdb"}'), 1, '/metrics counts the OVSDB client a full door refused');
  await holder.close();

  // The HTTP listener holds at most its connectionsMax too, and frees the places of clients that
  // send no request.
  const small = await startMetricsServer(member.central, metrics, '127.0.0.1', 0, { connectionsMax: 2, requestMs: 500 });
  t.teardown(() => small.close());
  const silent = [net.connect(small.port, '127.0.0.1'), net.connect(small.port, '127.0.0.1')];
  const silentClosed = silent.map((s) => new Promise<void>((resolve) => s.on('close', () => resolve())));
  for (const s of silent) {
    s.on('error', () => undefined);
    await new Promise<void>((resolve) => s.on('connect', () => resolve()));
  }
  // Node accepts in order: the first two take the places, the third is refused.
  const third = net.connect(small.port, '127.0.0.1');
  third.on('error', () => undefined);
  await new Promise<void>((resolve) => third.on('close', () => resolve()));
  t.equal(member.central.sessions.refused().metrics, 1, 'a third client of a full HTTP listener is refused');
  await Promise.all(silentClosed);
  t.pass('clients that send no request are closed after requestMs');
  t.equal(sample(await scrape(`http://127.0.0.1:${small.port}`), 'ovnts_connections_refused{listener="metrics"}'), 1, '/metrics counts the client the full HTTP listener refused');
  await until('the holding client gone', async () => ((await counts()).ovsdb === 1 ? true : undefined), 10_000);
  const table = await ovnts('cluster', 'status', `--endpoints=${cluster.members.map((m) => m.address).join(',')}`);
  t.match(table.stdout, /election\s+clients\s+agents\s+apply version\n/, 'status has clients, agents and apply version columns');
  t.match(table.stdout, new RegExp(`${member.address.replace(/\./g, '\\.')} .* ms\\s+2\\s+1\\s+${APPLY_VERSION_MAX} \\(max ${APPLY_VERSION_MAX}\\)\\n`), 'this member: 2 clients (a watch, an OVSDB session), 1 agent, at its highest apply version');
  t.match(table.stdout, /last contact\s+apply max\n/, 'the leader\'s view of its peers has the highest version each told');

  watch.cancel();
  await rpc.close();
  closeAgent();
  closeAgent();
  await until('every session to be closed', async () => {
    const c = await counts();
    return c.watch === 0 && c.ovsdb === 0 && c.agent === 0 ? true : undefined;
  }, 10_000);
  t.pass('the counts fall back to 0 as clients go (closing twice counts once)');
});

t.test('/metrics: the agent streams\' fan-out (streams, groups, messages and bytes written, snapshots)', async (t) => {
  const cluster = await startCentralCluster(testdirAfterTeardowns(t));
  t.teardown(() => cluster.stop());
  const member = cluster.members[0];
  if (member === undefined) throw new Error('no member');
  const metrics = new CentralMetrics();
  metrics.attach(member.central);
  metrics.attachFanout(member.southbound.fanout, member.southbound.relay);
  const http = await startMetricsServer(member.central, metrics, '127.0.0.1', 0);
  t.teardown(() => http.close());
  const base = `http://127.0.0.1:${http.port}`;
  const idle = await scrape(base);
  t.equal(sample(idle, 'ovnts_agent_streams{state="live"}'), 0, 'no agent stream yet');
  t.equal(sample(idle, 'ovnts_agent_bytes_written_total'), 0, 'nothing written yet');

  // Two agents with the same (empty) interest: one group; each starts from a snapshot.
  const agents = ['hv1', 'hv2'].map((c, i) => new ViewAgent({ chassis: c, hostname: c, encaps: geneve(`192.0.2.${i + 1}`), lastRevision: 0 }, { endpoints: [member.address] }).start());
  t.teardown(() => Promise.all(agents.map((a) => a.close())));
  for (const a of agents) await a.until(() => a.rows('SB_Global').length > 0, 'the SB_Global row');
  await member.client.transact([{ op: 'insert', table: 'Logical_Switch', row: { name: 'sw0' } }]);
  const busy = await until('both streams live in /metrics', async () => {
    const text = await scrape(base);
    return sample(text, 'ovnts_agent_streams{state="live"}') === 2 ? text : undefined;
  }, 20_000);
  t.equal(sample(busy, 'ovnts_agent_streams{state="syncing"}'), 0, 'none syncing');
  t.equal(sample(busy, 'ovnts_agent_stream_groups'), 1, 'one group: the same interest');
  t.ok((sample(busy, 'ovnts_agent_snapshots_total') ?? 0) >= 2, 'a snapshot for each new agent');
  const written = sample(busy, 'ovnts_agent_bytes_written_total') ?? 0;
  t.ok(written > 0, `${written} bytes written to agents`);
  t.ok((sample(busy, 'ovnts_agent_messages_written_total') ?? 0) >= (sample(busy, 'ovnts_agent_messages_encoded_total') ?? 0), 'messages written >= messages encoded (one encoding per group)');
  const stats = member.southbound.fanout.stats();
  t.equal(sample(busy, 'ovnts_agent_bytes_written_total'), stats.bytesWritten, 'the counter is the fan-out\'s own total');
  // Counters only grow between scrapes.
  await member.client.transact([{ op: 'insert', table: 'Logical_Switch', row: { name: 'sw1' } }]);
  const later = await until('more bytes written', async () => {
    const text = await scrape(base);
    return (sample(text, 'ovnts_agent_bytes_written_total') ?? 0) > written ? text : undefined;
  }, 20_000);
  t.ok((sample(later, 'ovnts_agent_messages_written_total') ?? 0) > (sample(busy, 'ovnts_agent_messages_written_total') ?? 0), 'messages written keep counting');
  // An nb_cfg bump both agents acknowledge: the acks are relayed to the two other members.
  await member.client.transact([{ op: 'insert', table: 'NB_Global', row: {} }]);
  await member.client.transact([{ op: 'mutate', table: 'NB_Global', where: [], mutations: [['nb_cfg', '+=', 1]] }]);
  const relayed = await until('the acks relayed', async () => {
    const text = await scrape(base);
    return (sample(text, 'ovnts_ack_relay_acks_total') ?? 0) >= 4 ? text : undefined;
  }, 20_000);
  t.equal(sample(relayed, 'ovnts_ack_relay_acks_total'), member.southbound.relay?.stats().acks, 'two acks to each of two members, as the relay counted them');
  t.equal(sample(relayed, 'ovnts_ack_relay_dropped_total'), 0, 'none dropped');
  t.ok(sample(relayed, 'ovnts_live_acks') !== undefined, 'the acks heard and not yet committed: a gauge');
});

t.test('/metrics: proposal latency, snapshot duration and encode time, snapshots taken', async (t) => {
  const net = new LocalNetwork('metrics-test');
  const metrics = new CentralMetrics();
  const central = await CentralNode.start({ id: 1, clusterId: 'metrics-test', dataDir: join(testdirAfterTeardowns(t), 'n1'), transport: net.transport(1), peers: new Map([[1, 'local:1']]), bootstrap: [1], tickMs: 10, snapshotEntries: 5, snapshotLogRatio: 0, observe: metrics });
  t.teardown(() => central.stop());
  metrics.attach(central);
  for (let i = 0; i < 12; i++) {
    const out = await central.transact([{ op: 'insert', table: 'Logical_Switch', row: { name: `sw${i}` } }]);
    t.equal(out.failed, false);
  }
  const text = await metrics.registry.metrics();
  t.ok((sample(text, 'ovnts_raft_proposal_seconds_count') ?? 0) >= 12, 'every transaction\'s proposal is timed from propose to applied');
  t.ok((sample(text, 'ovnts_raft_snapshots_taken') ?? 0) >= 2, 'snapshots are counted');
  t.equal(sample(text, 'ovnts_raft_snapshot_encode_seconds_count'), sample(text, 'ovnts_raft_snapshot_seconds_count'), 'each snapshot has its encode time');
  t.ok((sample(text, 'ovnts_raft_snapshot_seconds_count') ?? 0) >= 2);
  t.ok(sample(text, 'ovnts_raft_log_bytes_since_snapshot') !== undefined, 'the byte threshold\'s measure is exported');
  t.equal(sample(text, 'ovnts_raft_snapshot_handoffs'), 0, 'a single member never hands off');
  t.equal(sample(text, 'ovnts_apply_version'), APPLY_VERSION_MAX, 'a single member moved itself to its highest apply version');
  t.equal(sample(text, 'ovnts_apply_version_max'), APPLY_VERSION_MAX);
});

t.test('every cluster subcommand answers --format json; add-learner adds a learner', async (t) => {
  const cluster = await startCentralCluster(testdirAfterTeardowns(t));
  t.teardown(() => cluster.stop());
  const endpoints = `--endpoints=${cluster.members.map((m) => m.address).join(',')}`;
  const json = async (...args: string[]): Promise<Record<string, unknown>> => {
    const r = await ovnts('cluster', ...args, endpoints, '--format=json');
    t.equal(r.code, 0, `cluster ${args[0]}: ${r.stderr}`);
    return JSON.parse(r.stdout) as Record<string, unknown>;
  };
  const status = (await json('status')) as unknown as { status: { id: number; role: string; sessions: unknown; lastSnapshotMs: number } }[];
  t.equal(status.length, 3);
  t.ok(status.every((m) => m.status.sessions !== null && typeof m.status.lastSnapshotMs === 'number'), 'status carries sessions and compaction figures');
  const learner = await json('add-learner', '--raft-address=127.0.0.1:9');
  t.ok((learner.learners as number[]).includes(learner.id as number), `member ${String(learner.id)} is a learner`);
  t.match(learner.start, /^ovnts central --join /, 'with the command that starts it');
  const removed = await json('remove-member', String(learner.id));
  t.ok((removed.removed as number[]).includes(learner.id as number), 'and removed again');
  const timer = await json('change-election-timer', '300');
  t.equal(timer.electionTicks, 30);
  const leader = status.find((m) => m.status.role === 'leader')?.status.id ?? 1;
  const target = leader === 1 ? 2 : 1;
  t.same(await json('transfer-leader', String(target)), { leader: target });
  const added = await json('add-member', '--raft-address=127.0.0.1:9', '--learner');
  t.ok((added.learners as number[]).includes(added.id as number), 'add-member --learner does the same as add-learner');
  const promoted = await json('promote', String(added.id));
  t.ok((promoted.voters as number[]).includes(added.id as number), 'promote makes it a voter');
  t.ok((await json('remove-member', String(added.id))).removed !== undefined, 'and it goes again');
});
