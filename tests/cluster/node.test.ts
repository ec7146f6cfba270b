// Goal: RaftNode (the shell) elects, replicates, applies, reads linearizably, restarts from its
// disk, survives losing its leader, applies a retried request once, and stops on a storage error.
// Method: 3 real nodes (LevelDB in t.testdir()) on an in-process LocalNetwork, 10 ms ticks;
// every wait is on node progress events with a timeout, never a sleep.

import t, { type Test } from 'tap';
import { KvStateMachine, encodeKvCommand, type KvResult, type KvValue } from '../../cluster/kv-state-machine.js';
import { LocalNetwork } from '../../cluster/local-transport.js';
import { ProposalError, RaftNode, type FatalError, type NodeStorage, type RaftNodeOptions } from '../../cluster/node.js';
import { RaftStorage, StorageError } from '../../cluster/storage.js';
import type { Transport, TransportHandlers } from '../../cluster/transport.js';
import type { Entry, NodeId } from '../../cluster/types.js';
import { until } from '../helpers/ovnts-cli.js';
import { testdirAfterTeardowns } from '../helpers/testdir.js';
// ---------------------------------------------------------------------------------------
// Harness: a cluster of RaftNodes over one LocalNetwork, each with a KvStateMachine and its
// own data folder.

const clusterId = 'node-test';
const waitMsMax = 20_000;

interface Member {
  readonly id: NodeId;
  readonly dir: string;
  node: RaftNode;
  kv: KvStateMachine;
  running: boolean;
}

type Extra = Partial<Omit<RaftNodeOptions, 'id' | 'clusterId' | 'dataDir' | 'transport' | 'stateMachine' | 'peers'>>;

class Cluster {
  readonly net = new LocalNetwork(clusterId);
  readonly members = new Map<NodeId, Member>();
  readonly peers: ReadonlyMap<NodeId, string>;

  private constructor(
    readonly ids: readonly NodeId[],
    private readonly dirs: ReadonlyMap<NodeId, string>,
    private readonly extra: (id: NodeId) => Extra,
    private readonly transportOf: ((net: LocalNetwork, id: NodeId) => Transport) | undefined,
  ) {
    this.peers = new Map(ids.map((id) => [id, `local:${id}`]));
  }

  /** Starts `ids` as founding voters, each in a folder of testdirAfterTeardowns(t); stops them at teardown. */
  static async start(
    t: Test,
    ids: readonly NodeId[],
    extra: (id: NodeId) => Extra = () => ({}),
    /** Each node's transport, made on every start; by default the network's own. */
    transportOf?: (net: LocalNetwork, id: NodeId) => Transport,
  ): Promise<Cluster> {
    const root = testdirAfterTeardowns(t, Object.fromEntries(ids.map((id) => [`n${id}`, {}])));
    const c = new Cluster(ids, new Map(ids.map((id) => [id, `${root}/n${id}`])), extra, transportOf);
    t.teardown(() => c.stopAll());
    for (const id of ids) await c.startNode(id);
    return c;
  }

  async startNode(id: NodeId): Promise<Member> {
    const dir = this.dirs.get(id);
    if (dir === undefined) throw new Error(`no folder for node ${id}`);
    const kv = new KvStateMachine();
    const node = await RaftNode.start({
      id,
      clusterId,
      dataDir: dir,
      transport: this.transportOf?.(this.net, id) ?? this.net.transport(id),
      stateMachine: kv,
      peers: this.peers,
      bootstrap: this.ids,
      tickMs: 10,
      log: () => undefined,
      ...this.extra(id),
    });
    const m: Member = { id, dir, node, kv, running: true };
    this.members.set(id, m);
    return m;
  }

  async stopNode(id: NodeId): Promise<void> {
    const m = this.member(id);
    m.running = false;
    await m.node.stop();
  }

  async stopAll(): Promise<void> {
    for (const m of this.members.values()) if (m.running) await this.stopNode(m.id);
  }

  member(id: NodeId): Member {
    const m = this.members.get(id);
    if (m === undefined) throw new Error(`no node ${id}`);
    return m;
  }

  running(): Member[] {
    return [...this.members.values()].filter((m) => m.running);
  }

  /** Resolves once `cond` holds, checked after every node's progress; rejects after waitMsMax. */
  until(cond: () => boolean, what: string, timeoutMs: number = waitMsMax): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (cond()) {
        resolve();
        return;
      }
      const offs = this.running().map((m) => m.node.onProgress(check));
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`));
      }, timeoutMs);
      function check(): void {
        if (!cond()) return;
        cleanup();
        resolve();
      }
      function cleanup(): void {
        clearTimeout(timer);
        for (const off of offs) off();
      }
    });
  }

  /** The leader every running node agrees on (at least `quorum` of them), once there is one. */
  async leader(quorum: number = this.running().length): Promise<Member> {
    let found: Member | undefined;
    await this.until(() => {
      const live = this.running();
      const lead = live.find((m) => m.node.status().role === 'leader');
      if (lead === undefined) return false;
      const agree = live.filter((m) => m.node.status().lead === lead.id).length;
      if (agree < quorum) return false;
      found = lead;
      return true;
    }, 'a leader');
    if (found === undefined) throw new Error('unreachable: until resolved without a leader');
    return found;
  }

  /** Resolves once every running node applied at least `index`. */
  applied(index: number): Promise<void> {
    return this.until(
      () => this.running().every((m) => m.node.status().appliedIndex >= index),
      `every running node to apply ${index}`,
    );
  }
}

function put(key: string, value: KvValue): Uint8Array {
  return encodeKvCommand({ op: 'put', key, value });
}

function hex(b: Uint8Array): string {
  return Buffer.from(b).toString('hex');
}

/**
 * RaftStorage with a switch that makes every write fail, as a dying disk would, and one that
 * makes writes of entries take longer, as a busier disk would.
 */
class FailingStorage implements NodeStorage {
  failing = false;
  entriesDelayMs = 0;

  private constructor(private readonly inner: RaftStorage) {}

  static async open(dir: string): Promise<FailingStorage> {
    return new FailingStorage(await RaftStorage.open(dir));
  }

  get warnings(): RaftStorage['warnings'] {
    return this.inner.warnings;
  }

  load(): ReturnType<RaftStorage['load']> {
    return this.inner.load();
  }

  private check(what: string): void {
    if (this.failing) throw new StorageError(`${what}: injected I/O error (disk failed)`);
  }

  async save(rd: Parameters<RaftStorage['save']>[0]): Promise<void> {
    this.check('save');
    if (this.entriesDelayMs > 0 && rd.entries.length > 0) await new Promise((resolve) => setTimeout(resolve, this.entriesDelayMs));
    await this.inner.save(rd);
  }

  async saveSnapshot(...args: Parameters<RaftStorage['saveSnapshot']>): Promise<void> {
    this.check('save snapshot');
    await this.inner.saveSnapshot(...args);
  }

  async compact(index: number): Promise<void> {
    this.check('compact');
    await this.inner.compact(index);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}

function kvResult(x: unknown): KvResult {
  return x as KvResult;
}

/** Every running node's KV image, which must be byte-identical across replicas. */
function images(c: Cluster): string[] {
  return c.running().map((m) => hex(m.kv.snapshot()));
}

async function expectProposalError(
  tt: Test,
  p: Promise<unknown>,
  kind: ProposalError['kind'],
  msg: string,
): Promise<ProposalError | undefined> {
  try {
    await p;
  } catch (err) {
    tt.ok(err instanceof ProposalError, `${msg}: a ProposalError`);
    if (!(err instanceof ProposalError)) return undefined;
    tt.equal(err.kind, kind, `${msg}: kind ${kind} (${err.message})`);
    return err;
  }
  tt.fail(`${msg}: resolved, expected a ${kind} rejection`);
  return undefined;
}

// ---------------------------------------------------------------------------------------

t.test('three nodes elect a leader and replicate 1000 proposals; a follower answers not-leader', async (t) => {
  const c = await Cluster.start(t, [1, 2, 3]);
  const leader = await c.leader();
  const proposals: Promise<{ index: number; result: unknown }>[] = [];
  for (let i = 0; i < 1000; i++) proposals.push(leader.node.propose(put(`k${i}`, `v${i}`)));
  const outcomes = await Promise.all(proposals);
  const indexes = outcomes.map((o) => o.index);
  t.same(
    indexes,
    [...indexes].sort((a, b) => a - b),
    'proposals got increasing indexes in the order they were made',
  );
  t.ok(outcomes.every((o) => kvResult(o.result).kind === 'done'), 'every put applied with kind done');
  t.same(kvResult(outcomes[0]?.result), { kind: 'done', previous: null }, 'the result is what the state machine returned');
  const last = indexes.at(-1) ?? 0;
  await c.applied(last);
  const img = images(c);
  t.equal(new Set(img).size, 1, 'all three replicas hold byte-identical state');
  t.equal(leader.kv.size, 1000, '1000 keys');
  t.equal(c.member(2).kv.get('k999'), 'v999', 'a follower applied the last write');
  t.ok(leader.node.status().counters.readies < 1000, `proposals were batched (${leader.node.status().counters.readies} Readys)`);

  const follower = c.running().find((m) => m.id !== leader.id);
  if (follower === undefined) throw new Error('no follower');
  const err = await expectProposalError(t, follower.node.propose(put('x', 'y')), 'not-leader', 'propose on a follower');
  t.equal(err?.leaderHint, leader.id, 'the hint names the leader');
  t.equal(err?.leaderAddress, `local:${leader.id}`, 'and its address');
});

type Recorded =
  | { kind: 'sent'; from: NodeId; to: NodeId; commit: number; entries: number }
  | { kind: 'received'; from: NodeId; to: NodeId; commit: number }
  | { kind: 'applied'; node: NodeId; index: number };

/**
 * Three nodes on a local network that record, in the order it happened (one thread), every
 * append and heartbeat sent and delivered and every entry applied; resolves once they agree on
 * a leader. The local network delivers in a later turn of the event loop, as gRPC writes do.
 */
async function recordingCluster(t: Test, options: Partial<RaftNodeOptions> = {}): Promise<{ events: Recorded[]; nodes: Map<NodeId, RaftNode>; leaderId: NodeId; followers: NodeId[] }> {
  const events: Recorded[] = [];
  const net = new LocalNetwork(clusterId);
  const ids = [1, 2, 3];
  const peers = new Map(ids.map((id) => [id, `local:${id}`]));
  const root = testdirAfterTeardowns(t, Object.fromEntries(ids.map((id) => [`n${id}`, {}])));
  const nodes = new Map<NodeId, RaftNode>();
  for (const id of ids) {
    const inner = net.transport(id);
    const transport: Transport = {
      start: (h) =>
        inner.start({
          ...h,
          onMessage: (m) => {
            if (m.type === 'app' || m.type === 'heartbeat') events.push({ kind: 'received', from: m.from, to: m.to, commit: m.commit });
            h.onMessage(m);
          },
        }),
      send: (ms) => {
        for (const m of ms) if (m.type === 'app' || m.type === 'heartbeat') events.push({ kind: 'sent', from: m.from, to: m.to, commit: m.commit, entries: m.type === 'app' ? m.entries.length : 0 });
        inner.send(ms);
      },
      setPeers: (p) => inner.setPeers(p),
      stats: () => inner.stats(),
      close: () => inner.close(),
    };
    class RecordingKv extends KvStateMachine {
      override apply(e: Entry, duplicate: boolean): KvResult {
        events.push({ kind: 'applied', node: id, index: e.index });
        return super.apply(e, duplicate);
      }
    }
    nodes.set(id, await RaftNode.start({ id, clusterId, dataDir: `${root}/n${id}`, transport, stateMachine: new RecordingKv(), peers, bootstrap: ids, tickMs: 10, log: () => undefined, ...options }));
  }
  t.teardown(async () => {
    for (const n of nodes.values()) await n.stop();
  });
  const leaderId = await new Promise<NodeId>((resolve) => {
    const check = (): void => {
      const l = ids.find((id) => nodes.get(id)?.status().role === 'leader');
      if (l !== undefined && ids.every((id) => nodes.get(id)?.status().lead === l)) resolve(l);
    };
    for (const n of nodes.values()) n.onProgress(check);
    check();
  });
  return { events, nodes, leaderId, followers: ids.filter((id) => id !== leaderId) };
}

t.test('a broadcastCommit proposal\'s commit index leaves before the leader applies it; a plain one\'s after', async (t) => {
  const { events, nodes, leaderId, followers } = await recordingCluster(t);
  const leader = nodes.get(leaderId) as RaftNode;
  /**
   * Whether, before the leader applied `index`, every follower had received a commit index
   * covering it: sent is not enough, since the leader's applies hold the loop the transport
   * writes in.
   */
  const sentBeforeApply = (index: number): boolean => {
    const applied = events.findIndex((e) => e.kind === 'applied' && e.node === leaderId && e.index === index);
    const before = events.slice(0, applied);
    return applied >= 0 && followers.every((f) => before.some((e) => e.kind === 'received' && e.from === leaderId && e.to === f && e.commit >= index));
  };
  // Serial: each proposal settles before the next is made, so none rides on another's append.
  const plain: boolean[] = [];
  const early: boolean[] = [];
  for (let i = 0; i < 10; i++) plain.push(sentBeforeApply((await leader.propose(put(`p${i}`, 'v'))).index));
  for (let i = 0; i < 10; i++) early.push(sentBeforeApply((await leader.propose(put(`e${i}`, 'v'), undefined, { broadcastCommit: true })).index));
  t.same(early, early.map(() => true), 'broadcastCommit: the commit index reached both followers before the leader applied each entry');
  t.ok(plain.filter(Boolean).length <= 1, `plain: it was held for the next append (sent before the apply ${plain.filter(Boolean).length} times of 10)`);
});

t.test('serial proposals: each commit index rides the next proposal\'s append within commitLingerMs, not empty appends of its own', async (t) => {
  // Heartbeats every second: in this test only appends carry commit indexes.
  const emptyAppends = async (tt: Test, commitLingerMs: number): Promise<number> => {
    const { events, nodes, leaderId } = await recordingCluster(tt, { tickMs: 1000, electionTicks: 2, commitLingerMs });
    const leader = nodes.get(leaderId) as RaftNode;
    await leader.propose(put('warm', 'v'));
    const from = events.length;
    for (let i = 0; i < 20; i++) {
      await leader.propose(put(`s${i}`, 'v'));
      // The next proposal comes a moment later, as a remote client's does after a round trip.
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    return events.slice(from).filter((e) => e.kind === 'sent' && e.from === leaderId && e.entries === 0).length;
  };
  let lingering = 0;
  let atOnce = 0;
  await t.test('with a linger', async (tt) => {
    lingering = await emptyAppends(tt, 500);
  });
  await t.test('without', async (tt) => {
    atOnce = await emptyAppends(tt, 0);
  });
  t.ok(atOnce >= 30, `without a linger the leader sent ${atOnce} empty appends for 20 serial proposals (about two each)`);
  t.ok(lingering <= 2, `with it, ${lingering}`);
});

t.test('serial proposals under a linger shorter than the run: each commit index gets a linger of its own', async (t) => {
  // A linger's timer outlives the commit index it was for once the next append carried that
  // one. Left running, it ended the linger of a later commit index early and sent that one in
  // empty appends, about once per linger period. That happens when the followers' answers
  // come while the leader still writes the entry (its disk the slower), so the leader's is.
  const disks = new Map<string, FailingStorage>();
  const openStorage = async (dir: string): Promise<NodeStorage> => {
    const disk = await FailingStorage.open(dir);
    disks.set(dir, disk);
    return disk;
  };
  const { events, nodes, leaderId } = await recordingCluster(t, { tickMs: 1000, electionTicks: 2, commitLingerMs: 40, openStorage });
  const leader = nodes.get(leaderId) as RaftNode;
  const leaderDisk = [...disks].find(([dir]) => dir.endsWith(`n${leaderId}`))?.[1];
  if (leaderDisk === undefined) throw new Error('no disk for the leader');
  leaderDisk.entriesDelayMs = 8;
  await leader.propose(put('warm', 'v'));
  const from = events.length;
  const started = performance.now();
  for (let i = 0; i < 60; i++) {
    await leader.propose(put(`s${i}`, 'v'));
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  const tookMs = performance.now() - started;
  const empty = events.slice(from).filter((e) => e.kind === 'sent' && e.from === leaderId && e.entries === 0).length;
  t.ok(tookMs > 200, `the run outlasted five lingers (${tookMs.toFixed(0)} ms)`);
  // Before, 24 to 26 here; a stall of the machine past a linger may still cost one or two.
  t.ok(empty <= 5, `the leader sent ${empty} empty appends for 60 serial proposals`);
});

t.test('an isolated write\'s commit index reaches the followers once the linger ends', async (t) => {
  const lingerMs = 300;
  const { events, nodes, leaderId, followers } = await recordingCluster(t, { tickMs: 1000, electionTicks: 2, commitLingerMs: lingerMs });
  const leader = nodes.get(leaderId) as RaftNode;
  const started = performance.now();
  const { index } = await leader.propose(put('alone', 'v'));
  const appliedBy = (id: NodeId): boolean => events.some((e) => e.kind === 'applied' && e.node === id && e.index === index);
  t.notOk(followers.some(appliedBy), 'the followers have not applied it when the leader has');
  await until('both followers applied it', async () => (followers.every(appliedBy) ? true : undefined), 5000);
  const tookMs = performance.now() - started;
  t.ok(tookMs >= lingerMs * 0.9 && tookMs < lingerMs + 900, `then both did, after the linger (${tookMs.toFixed(0)} ms; ${lingerMs} ms linger, heartbeats every 1,000 ms)`);
});

t.test('the same (clientId, seq) proposed twice applies once', async (t) => {
  const c = await Cluster.start(t, [1, 2, 3]);
  const leader = await c.leader();
  const tag = { clientId: 'client-a', seq: 1 };
  const [first, retry] = await Promise.all([
    leader.node.propose(put('k', 'first'), tag),
    leader.node.propose(put('k', 'retry'), tag),
  ]);
  t.same(kvResult(first.result), { kind: 'done', previous: null }, 'the first copy applies');
  t.same(kvResult(retry.result), { kind: 'duplicate' }, 'the retry is passed as a duplicate');
  const next = await leader.node.propose(put('k', 'second'), { clientId: 'client-a', seq: 2 });
  t.same(kvResult(next.result), { kind: 'done', previous: 'first' }, 'the retry changed nothing; the next seq applies');
  await c.applied(next.index);
  for (const m of c.running()) {
    t.equal(m.kv.get('k'), 'second', `node ${m.id} state`);
    t.equal(m.node.status().counters.duplicatesApplied, 1, `node ${m.id} saw one duplicate`);
  }
});

t.test('a proposal bound to an index goes only while the log ends there, all of it applied', async (t) => {
  const c = await Cluster.start(t, [1, 2, 3]);
  const leader = await c.leader();
  const first = await leader.node.propose(put('a', '1'));
  await c.applied(first.index);
  const follower = c.running().find((m) => m.id !== leader.id);
  t.equal(follower?.node.quiescentIndex(), undefined, 'a follower never knows the state a proposal will meet');
  const at = leader.node.quiescentIndex();
  t.equal(at, first.index, 'the leader with everything applied: its last index');
  const bound = leader.node.propose(put('b', '2'), undefined, { onlyAfter: at as number });
  t.equal(leader.node.quiescentIndex(), undefined, 'not while that proposal waits to apply');
  const stale = leader.node.propose(put('c', '3'), undefined, { onlyAfter: at as number });
  await expectProposalError(t, stale, 'dropped', 'a second proposal bound to the same index');
  t.equal((await bound).index, (at as number) + 1, 'the bound proposal took the next index');
  await c.applied((at as number) + 1);
  t.equal(leader.kv.get('c'), undefined, 'the refused one never applied');
  t.equal(leader.node.quiescentIndex(), (at as number) + 1, 'quiet again once it applied');
});

t.test('readIndex on the leader and on a follower', async (t) => {
  const c = await Cluster.start(t, [1, 2, 3]);
  const leader = await c.leader();
  const w = await leader.node.propose(put('r', 'written'));
  const follower = c.running().find((m) => m.id !== leader.id);
  if (follower === undefined) throw new Error('no follower');
  const [li, fi] = await Promise.all([leader.node.readIndex(), follower.node.readIndex()]);
  t.ok(li >= w.index, `leader read index ${li} covers the acknowledged write ${w.index}`);
  t.ok(fi >= w.index, `follower read index ${fi} covers the acknowledged write ${w.index}`);
  t.ok(leader.node.status().appliedIndex >= li, 'leader applied its read index');
  t.ok(follower.node.status().appliedIndex >= fi, 'follower applied its read index');
  t.equal(follower.kv.get('r'), 'written', 'so a local read on the follower sees the write');
});

t.test('a read the old leader never confirmed fails as dropped once another leads, not at its deadline', async (t) => {
  // Reads wait up to a minute for confirmation: far longer than an election here.
  const c = await Cluster.start(t, [1, 2, 3], () => ({ readTimeoutMs: 60_000 }));
  const leader = await c.leader();
  const follower = c.running().find((m) => m.id !== leader.id) as Member;
  // The leader cannot answer: the follower's read reaches it (or not) and is never confirmed.
  c.net.isolate(leader.id);
  const started = Date.now();
  const read = follower.node.readIndex();
  const err = await expectProposalError(t, read, 'dropped', 'the unconfirmed read');
  t.ok(Date.now() - started < 30_000, `it failed after ${Date.now() - started} ms, well before its 60 s deadline`);
  t.match(err?.message ?? '', /leader changed/, 'the message says why');
  t.ok(follower.node.status().counters.readsDropped >= 1, 'counted as dropped');
  // Retried (as callers do on 'dropped' and on not-leader while none is known), it is served.
  c.net.heal();
  const deadline = Date.now() + waitMsMax;
  let again: number | undefined;
  while (again === undefined && Date.now() < deadline) {
    again = await follower.node.readIndex().catch((e: unknown) => {
      if (!(e instanceof ProposalError) || (e.kind !== 'not-leader' && e.kind !== 'dropped')) throw e;
      return new Promise<undefined>((r) => setTimeout(() => r(undefined), 20));
    });
  }
  t.ok(again !== undefined && again > 0, `the retry got read index ${again ?? 'none'}`);
});

t.test('a new cluster\'s lowest-id founder campaigns soon after it starts, until its peers listen; a restarted one waits out its timeout', async (t) => {
  // 50 ms ticks, 10-tick election timeouts: a node that does not campaign by itself stands at
  // the earliest 500 ms after it starts (its first tick counts from then).
  const tickMs = 50;
  const electionMs = 10 * tickMs;
  const ids = [1, 2, 3];
  const peers = new Map(ids.map((id) => [id, `local:${id}`]));
  const timeToLeader = async (nodes: readonly RaftNode[], from: number): Promise<{ ms: number; leader: NodeId }> => {
    const leader = await until('a leader all running nodes know', async () => {
      const lead = nodes.find((n) => n.status().role === 'leader')?.id;
      return lead !== undefined && nodes.every((n) => n.status().lead === lead) ? lead : undefined;
    }, waitMsMax);
    return { ms: performance.now() - from, leader };
  };
  for (const foundingCampaignMs of [2 * tickMs, 0]) {
    await t.test(`foundingCampaignMs ${foundingCampaignMs}`, async (tt) => {
      const root = testdirAfterTeardowns(tt, { n1: {}, n2: {}, n3: {} });
      const net = new LocalNetwork(clusterId);
      let nodes: RaftNode[] = [];
      tt.teardown(async () => {
        for (const n of nodes) await n.stop();
      });
      const start = (id: NodeId): Promise<RaftNode> => RaftNode.start({
        id, clusterId, dataDir: `${root}/n${id}`, transport: net.transport(id), stateMachine: new KvStateMachine(), peers, bootstrap: ids, tickMs, electionTicks: 10, foundingCampaignMs, log: () => undefined,
      });
      nodes.push(await start(1));
      if (foundingCampaignMs > 0) {
        // Node 1 campaigns while nobody listens: the campaign must be made again later.
        await until('node 1 campaigns alone', async () => (nodes[0]?.status().role === 'pre-candidate' ? true : undefined), waitMsMax);
      }
      const othersStarted = performance.now();
      nodes.push(await start(2), await start(3));
      const first = await timeToLeader(nodes, othersStarted);
      if (foundingCampaignMs > 0) {
        tt.equal(first.leader, 1, 'node 1, the founder with the lowest id, leads');
        tt.ok(first.ms < electionMs, `a leader ${first.ms.toFixed(0)} ms after the others started, before either could have stood (${electionMs} ms)`);
      } else {
        tt.ok(first.ms >= electionMs, `a leader ${first.ms.toFixed(0)} ms after the others started: none stood before an election timeout`);
      }
      // Restarted on their data, no node founds anything: the first election waits for a timeout.
      for (const n of nodes) await n.stop();
      nodes = [];
      const restarted = performance.now();
      for (const id of ids) nodes.push(await start(id));
      const again = await timeToLeader(nodes, restarted);
      tt.ok(again.ms >= electionMs, `restarted: a leader after ${again.ms.toFixed(0)} ms, not before an election timeout`);
    });
  }
});

t.test('restart: state comes back from snapshot + log, a leader is elected, writes continue', async (t) => {
  const c = await Cluster.start(t, [1, 2, 3], () => ({ snapshotEntries: 50 }));
  const leader = await c.leader();
  for (let round = 0; round < 3; round++) {
    const batch = Array.from({ length: 100 }, (_, i) => put(`k${(round * 100 + i) % 150}`, `r${round}i${i}`));
    await Promise.all(batch.map((cmd) => leader.node.propose(cmd)));
  }
  const last = (await leader.node.propose(encodeKvCommand({ op: 'delete', key: 'k0' }))).index;
  await c.applied(last);
  const before = images(c)[0];
  for (const m of c.running()) {
    const s = m.node.status();
    t.ok(s.counters.snapshotsTaken >= 1, `node ${m.id} took ${s.counters.snapshotsTaken} snapshots`);
    t.ok(s.firstIndex > 1, `node ${m.id} compacted its log (first index ${s.firstIndex})`);
  }
  await c.stopAll();

  for (const id of c.ids) await c.startNode(id);
  for (const m of c.running()) {
    t.ok(m.node.status().snapshotIndex > 0, `node ${m.id} restored its state machine from a snapshot on start`);
  }
  await c.applied(last);
  t.same(images(c), [before, before, before], 'every node restored exactly the state it had');
  t.equal(c.member(1).kv.get('k0'), undefined, 'the delete survived');
  const leader2 = await c.leader();
  const w = await leader2.node.propose(put('after', 'restart'));
  t.ok(w.index > last, 'a new write goes after the old log');
  await c.applied(w.index);
  t.equal(new Set(images(c)).size, 1, 'and replicates');
});

t.test('leader stops: the others go on; it rejoins and catches up by snapshot', async (t) => {
  const c = await Cluster.start(t, [1, 2, 3], () => ({ snapshotEntries: 20 }));
  const old = await c.leader();
  await Promise.all(Array.from({ length: 30 }, (_, i) => old.node.propose(put(`a${i}`, 'x'))));
  await c.stopNode(old.id);

  const next = await c.leader();
  t.not(next.id, old.id, `node ${next.id} took over from ${old.id}`);
  const outcomes = await Promise.all(Array.from({ length: 200 }, (_, i) => next.node.propose(put(`b${i}`, 'y'))));
  const last = Math.max(...outcomes.map((o) => o.index));
  await c.applied(last);
  const first = next.node.status().firstIndex;
  t.ok(first > 40, `the new leader compacted past the old leader's log (first index ${first})`);

  const back = await c.startNode(old.id);
  await c.applied(last);
  t.ok(back.node.status().counters.snapshotsRestored >= 1, 'the old leader caught up through a snapshot');
  t.equal(new Set(images(c)).size, 1, 'all three hold the same state again');
  const w = await (await c.leader()).node.propose(put('c', 'z'));
  await c.applied(w.index);
  t.equal(back.kv.get('c'), 'z', 'and it follows new writes');
});

t.test('a proposal lost to a leader change rejects dropped', async (t) => {
  const c = await Cluster.start(t, [1, 2, 3]);
  const old = await c.leader();
  c.net.isolate(old.id);
  // The cut-off leader still accepts the proposal, but can never commit it.
  const lost = old.node.propose(put('lost', 'yes'));
  lost.catch(() => undefined);
  await c.until(() => c.running().some((m) => m.id !== old.id && m.node.status().role === 'leader'), 'a new leader');
  const next = c.running().find((m) => m.id !== old.id && m.node.status().role === 'leader');
  if (next === undefined) throw new Error('no new leader');
  const w = await Promise.all(Array.from({ length: 5 }, (_, i) => next.node.propose(put(`n${i}`, 'v'))));
  c.net.heal();
  await expectProposalError(t, lost, 'dropped', 'the lost proposal');
  await c.applied(Math.max(...w.map((o) => o.index)));
  t.equal(old.kv.get('lost'), undefined, 'its entry never applied anywhere');
  t.equal(new Set(images(c)).size, 1, 'replicas agree');
});

t.test('a storage error stops the node: fatalError set, pending proposals rejected stopped', async (t) => {
  const disks = new Map<NodeId, FailingStorage>();
  const fatal = new Map<NodeId, FatalError>();
  const c = await Cluster.start(t, [1, 2, 3], (id) => ({
    openStorage: async (dir: string) => {
      const s = await FailingStorage.open(dir);
      disks.set(id, s);
      return s;
    },
    onFatalError: (err: FatalError) => fatal.set(id, err),
  }));
  const leader = await c.leader();
  await leader.node.propose(put('before', 'ok'));
  const disk = disks.get(leader.id);
  if (disk === undefined) throw new Error('no disk');
  disk.failing = true;
  const pending = leader.node.propose(put('during', 'failure'));
  const err = await expectProposalError(t, pending, 'stopped', 'the pending proposal');
  t.ok(err?.cause instanceof StorageError, 'the rejection carries the storage error as its cause');
  t.ok(leader.node.fatalError instanceof StorageError, 'node.fatalError is set');
  t.equal(fatal.get(leader.id), leader.node.fatalError, 'onFatalError was told');
  t.equal(leader.node.status().fatalError, leader.node.fatalError, 'status shows it');
  await expectProposalError(t, leader.node.propose(put('after', 'x')), 'stopped', 'a later proposal');
  await expectProposalError(t, leader.node.readIndex(), 'stopped', 'a later read');
  // The failed node neither ticks nor votes: the other two elect a leader among themselves.
  await c.until(
    () => c.running().some((m) => m.id !== leader.id && m.node.status().role === 'leader'),
    'a new leader among the healthy nodes',
  );
  t.equal(leader.node.status().role, 'leader', 'the failed node is frozen where it stopped (steps nothing)');
  await c.stopNode(leader.id);
});

t.test('conf change and leadership transfer', async (t) => {
  const c = await Cluster.start(t, [1, 2, 3]);
  const leader = await c.leader();
  // A new leader takes conf changes only once its first entry applied ('dropped' until then).
  await leader.node.propose(put('warm', 'up'));
  const cc = await leader.node.proposeConfChange({ kind: 'set-election-ticks', ticks: 12 });
  t.equal(cc.conf.electionTicks, 12, 'resolves once applied, with the configuration now in force');
  t.same(cc.conf.voters, [1, 2, 3], 'voters unchanged');
  await c.applied(cc.index);
  for (const m of c.running()) t.equal(m.node.status().electionTicks, 12, `node ${m.id} uses the new election timeout`);

  const bad = leader.node.proposeConfChange({ kind: 'add-voter', id: 2 });
  await expectProposalError(t, bad, 'dropped', 'an invalid conf change');

  const target = c.running().find((m) => m.id !== leader.id);
  if (target === undefined) throw new Error('no follower');
  t.same(leader.node.transferLeadership(target.id), { kind: 'started' }, 'transfer started');
  await c.until(() => target.node.status().role === 'leader', `node ${target.id} to lead`);
  const w = await target.node.propose(put('after', 'transfer'));
  await c.applied(w.index);
  t.equal(leader.kv.get('after'), 'transfer', 'the new leader replicates to the old one');
});

t.test('limits: pending proposals are bounded, and time out with kind timeout', async (t) => {
  const c = await Cluster.start(t, [1, 2, 3], () => ({ proposalsPendingMax: 2, proposalTimeoutMs: 200, readTimeoutMs: 200 }));
  const leader = await c.leader();
  // Cut off, the leader accepts proposals it can never commit.
  c.net.isolate(leader.id);
  const a = leader.node.propose(put('a', '1'));
  const b = leader.node.propose(put('b', '1'));
  a.catch(() => undefined);
  b.catch(() => undefined);
  await expectProposalError(t, leader.node.propose(put('c', '1')), 'dropped', 'a third pending proposal');
  await expectProposalError(t, a, 'timeout', 'the first');
  await expectProposalError(t, b, 'timeout', 'the second');
  t.equal(leader.node.status().counters.proposalsTimedOut, 2, 'counted');
  t.equal(leader.node.status().proposalsPending, 0, 'nothing left pending');
});

t.test('throughput: 64 concurrent proposers, LocalNetwork, LevelDB (printed, not asserted)', async (t) => {
  const c = await Cluster.start(t, [1, 2, 3], () => ({ snapshotEntries: 10_000 }));
  const leader = await c.leader();
  const proposers = 64;
  const durationMs = 2000;
  let committed = 0;
  const started = performance.now();
  const deadline = started + durationMs;
  await Promise.all(
    Array.from({ length: proposers }, async (_, p) => {
      for (let seq = 1; performance.now() < deadline; seq++) {
        await leader.node.propose(put(`p${p}`, `s${seq}`), { clientId: `p${p}`, seq });
        committed++;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const s = leader.node.status().counters;
  t.comment(
    `${proposers} proposers: ${committed} proposals in ${seconds.toFixed(2)} s = ` +
      `${(committed / seconds).toFixed(0)} proposals/s ` +
      `(${s.readies} Readys on the leader, ${(s.entriesPersisted / Math.max(1, s.readies)).toFixed(1)} entries per fsync)`,
  );
  t.ok(committed > 0, 'some proposals committed');
});

t.test('a snapshot a follower keeps refusing is logged at once with the reason, then held back', async (t) => {
  // Snapshots to `refusing` are not delivered: the leader's transport reports each one failed
  // with a reason, as the gRPC transport does when the peer refuses it (over its
  // snapshotBytesMax, say).
  let refusing: NodeId = 0;
  let refusals = 0;
  const reason = 'snapshot of 5000 bytes exceeds snapshotBytesMax (1000)';
  const lines: string[] = [];
  const refusingTransport = (net: LocalNetwork, id: NodeId): Transport => {
    const inner = net.transport(id);
    let report: TransportHandlers['onReport'] | undefined;
    return {
      start: (h) => {
        report = h.onReport;
        return inner.start(h);
      },
      send: (ms) => {
        const pass = [];
        for (const m of ms) {
          if (m.type !== 'snap' || m.to !== refusing) {
            pass.push(m);
            continue;
          }
          refusals++;
          setImmediate(() => report?.({ kind: 'snapshot', to: m.to, ok: false, reason }));
        }
        inner.send(pass);
      },
      setPeers: (p) => inner.setPeers(p),
      stats: () => inner.stats(),
      close: () => inner.close(),
    };
  };
  const c = await Cluster.start(t, [1, 2, 3], (id) => ({ snapshotEntries: 20, log: (line) => lines.push(`${id}: ${line}`) }), refusingTransport);
  const leader = await c.leader();
  const behind = c.ids.find((id) => id !== leader.id) as NodeId;
  await c.stopNode(behind);
  let last = 0;
  for (let i = 0; i < 60; i++) last = (await leader.node.propose(put(`k${i}`, `v${i}`))).index;
  await c.until(() => leader.node.status().firstIndex > 2, 'the leader compacting its log past the stopped node');
  refusing = behind;
  await c.startNode(behind);
  await c.until(() => refusals >= 3, 'three snapshots refused', waitMsMax);
  const logged = lines.filter((l) => l.includes(`snapshot to ${behind} failed`));
  t.equal(logged.length, 1, `${refusals} refusals, one line within the interval: ${logged.join(' | ')}`);
  t.match(logged[0], `${leader.id}: raft node ${leader.id}: snapshot to ${behind} failed: ${reason}`, 'the line names the peer and the reason');
  t.ok(c.member(behind).node.status().appliedIndex < last, 'the refusing node stays behind');
  refusing = 0;
  await c.applied(last);
  t.pass('once snapshots get through, it catches up');
});
