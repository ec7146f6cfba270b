// Goal: compaction never silences a leader: its heartbeats go on while a snapshot is written,
// a leader whose snapshot encodes are slow hands leadership to a voter and compacts as a
// follower, the byte threshold triggers compaction as the entry threshold does, and a log
// that is small beside the last snapshot waits until it has grown to its size (or a cap).
// Method: 3 RaftNodes on an in-process LocalNetwork with real LevelDB, behind a storage double
// that makes snapshot writes slow or a state machine whose snapshots take long to encode;
// waits are on node progress events with timeouts.
import t, { type Test } from 'tap';
import { KvStateMachine, encodeKvCommand } from '../../cluster/kv-state-machine.js';
import { LocalNetwork } from '../../cluster/local-transport.js';
import { ProposalError, RaftNode, type NodeStorage, type RaftNodeOptions } from '../../cluster/node.js';
import { RaftStorage } from '../../cluster/storage.js';
import type { NodeId } from '../../cluster/types.js';
import { testdirAfterTeardowns } from '../helpers/testdir.js';

const waitMsMax = 20_000;
const tickMs = 10;
const electionTicks = 10;

/**
 * RaftStorage whose snapshot writes take longer, as a slow or busy disk's would: `delayMs()`
 * is asked at the start of each write; `during` is called every tick of the wait.
 */
class SlowSnapshotStorage implements NodeStorage {
  private constructor(
    private readonly inner: RaftStorage,
    private readonly delayMs: () => number,
    private readonly during: (() => void) | undefined,
  ) {}

  static async open(dir: string, delayMs: () => number, during?: () => void): Promise<SlowSnapshotStorage> {
    return new SlowSnapshotStorage(await RaftStorage.open(dir), delayMs, during);
  }

  get warnings(): RaftStorage['warnings'] {
    return this.inner.warnings;
  }

  load(): ReturnType<RaftStorage['load']> {
    return this.inner.load();
  }

  save(rd: Parameters<RaftStorage['save']>[0]): Promise<void> {
    return this.inner.save(rd);
  }

  async saveSnapshot(...args: Parameters<RaftStorage['saveSnapshot']>): Promise<void> {
    const delayMs = this.delayMs();
    for (let waitedMs = 0; waitedMs < delayMs; waitedMs += tickMs) {
      await new Promise((r) => setTimeout(r, tickMs));
      this.during?.();
    }
    await this.inner.saveSnapshot(...args);
  }

  compact(index: number): Promise<void> {
    return this.inner.compact(index);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}

interface Member {
  readonly id: NodeId;
  readonly node: RaftNode;
}

type Extra = (id: NodeId) => Partial<RaftNodeOptions>;

async function startCluster(t: Test, ids: readonly NodeId[], extra: Extra): Promise<Member[]> {
  const root = testdirAfterTeardowns(t, Object.fromEntries(ids.map((id) => [`n${id}`, {}])));
  const net = new LocalNetwork('compaction-test');
  const peers = new Map(ids.map((id) => [id, `local:${id}`]));
  const members: Member[] = [];
  for (const id of ids) {
    const node = await RaftNode.start({
      id,
      clusterId: 'compaction-test',
      dataDir: `${root}/n${id}`,
      transport: net.transport(id),
      stateMachine: new KvStateMachine(),
      peers,
      bootstrap: ids,
      tickMs,
      electionTicks,
      log: () => undefined,
      ...extra(id),
    });
    members.push({ id, node });
  }
  t.teardown(async () => {
    for (const m of members) await m.node.stop();
  });
  return members;
}

function until(members: readonly Member[], cond: () => boolean, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    if (cond()) return resolve();
    const offs = members.map((m) => m.node.onProgress(check));
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`timed out after ${waitMsMax} ms waiting for ${what}`));
    }, waitMsMax);
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

async function leaderOf(members: readonly Member[]): Promise<Member> {
  let found: Member | undefined;
  await until(members, () => {
    found = members.find((m) => m.node.status().role === 'leader' && members.every((o) => o.node.status().lead === m.id));
    return found !== undefined;
  }, 'a leader every member follows');
  return found as Member;
}

/** Proposes through whichever member leads, again after a hand-off refused or redirected it. */
async function propose(members: readonly Member[], data: Uint8Array): Promise<number> {
  for (let attempt = 0; ; attempt++) {
    const leader = await leaderOf(members);
    try {
      return (await leader.node.propose(data)).index;
    } catch (err) {
      const retry = err instanceof ProposalError && (err.kind === 'not-leader' || (err.kind === 'dropped' && !err.outcomeUnknown));
      if (!retry || attempt > 100) throw err;
      await new Promise((r) => setTimeout(r, tickMs));
    }
  }
}

/** A KV state machine whose snapshot() holds the event loop for `encodeMs`, as a big database's encode does. */
class SlowEncodeKv extends KvStateMachine {
  constructor(private readonly encodeMs: number) {
    super();
  }

  override snapshot(): Uint8Array {
    const until = performance.now() + this.encodeMs;
    while (performance.now() < until) {
      // Busy: this is the cost being modelled.
    }
    return super.snapshot();
  }
}

const put = (i: number, bytes = 16): Uint8Array => encodeKvCommand({ op: 'put', key: `k${i}`, value: 'x'.repeat(bytes) });

t.test('a leader writing a slow snapshot keeps its heartbeats going', async (t) => {
  // The leader's snapshot write takes 6 election timeouts. Throughout it, the followers must
  // have heard from the leader within one election timeout. (Only the leader's disk is slow:
  // a follower's heartbeat responses wait for its own writes, as its acks do.)
  const slowMs = 6 * electionTicks * tickMs;
  const silences: number[] = [];
  let members: Member[] = [];
  const leads = (id: NodeId): boolean => members.find((m) => m.id === id)?.node.status().role === 'leader';
  const sample = (id: NodeId) => (): void => {
    if (!leads(id)) return;
    for (const f of members) {
      if (f.id === id) continue;
      const contact = f.node.status().peers.find((p) => p.id === id)?.lastContactMsAgo;
      if (contact !== undefined) silences.push(contact);
    }
  };
  members = await startCluster(t, [1, 2, 3], (id) => ({
    snapshotEntries: 30,
    // Never hand off: this leader must compact in place.
    snapshotHandoffMs: 1e9,
    openStorage: (dir) => SlowSnapshotStorage.open(dir, () => (leads(id) ? slowMs : 0), sample(id)),
  }));
  const leader = await leaderOf(members);
  const term = leader.node.status().term;
  for (let i = 0; i < 40; i++) await propose(members, put(i));
  await until(members, () => leader.node.status().counters.snapshotsTaken >= 1, 'the leader to take a snapshot');
  t.ok(silences.length >= 10, `the followers were sampled during the leader's snapshot write (${silences.length} samples)`);
  t.ok(Math.max(...silences) < electionTicks * tickMs, `the followers heard the leader within an election timeout throughout (longest silence ${Math.max(...silences)} ms; the write took ${slowMs} ms)`);
  t.equal(leader.node.status().role, 'leader', 'it still leads');
  t.equal(leader.node.status().term, term, 'no election happened');
});

t.test('a leader whose snapshot encodes are slow hands leadership away and compacts as a follower', async (t) => {
  const snapshotEntries = 40;
  // Who began each snapshot write (after its encode), and in which role.
  const writes: { id: NodeId; role: string }[] = [];
  let members: Member[] = [];
  const noteWrite = (id: NodeId): number => {
    writes.push({ id, role: members.find((m) => m.id === id)?.node.status().role ?? '?' });
    return 0;
  };
  // Every encode takes 3 ticks: more than the 2-tick hand-off limit. The nodes share one event
  // loop here, so a longer election timeout keeps their encodes from looking like a dead leader.
  members = await startCluster(t, [1, 2, 3], (id) => ({
    snapshotEntries,
    snapshotLogRatio: 0,
    snapshotHandoffMs: 2 * tickMs,
    electionTicks: 40,
    stateMachine: new SlowEncodeKv(3 * tickMs),
    openStorage: (dir) => SlowSnapshotStorage.open(dir, () => noteWrite(id)),
  }));
  const first = await leaderOf(members);
  let last = 0;
  for (let i = 0; i < 6 * snapshotEntries; i++) last = await propose(members, put(i));
  await until(members, () => members.every((m) => m.node.status().appliedIndex >= last), 'every member to apply the last entry');
  const handoffs = members.reduce((n, m) => n + m.node.status().counters.snapshotHandoffs, 0);
  t.ok(handoffs >= 2, `leadership was handed away to compact (${handoffs} times)`);
  // Before a member's first snapshot it cannot know its encodes are slow: that one may be
  // taken as leader. Every later one must be begun as a follower.
  const later = writes.filter((w, i) => writes.findIndex((o) => o.id === w.id) !== i);
  t.ok(later.length >= 6, `members took later snapshots (${later.length})`);
  t.same(later.filter((w) => w.role === 'leader'), [], 'no later snapshot was begun while leading');
  t.ok(handoffs <= Math.ceil(last / snapshotEntries), `no hand-off ping-pong (${handoffs} hand-offs for ${last} entries)`);
  const now = await leaderOf(members);
  t.ok(now.id !== first.id || handoffs >= 2, `leadership moved (first ${first.id}, now ${now.id})`);
  for (const m of members) t.ok(m.node.status().firstIndex > snapshotEntries, `member ${m.id} compacted its log (first index ${m.node.status().firstIndex})`);
});

t.test('the byte threshold compacts a log of few, large entries', async (t) => {
  const members = await startCluster(t, [1, 2, 3], () => ({ snapshotEntries: 1_000_000, snapshotLogBytes: 20_000 }));
  let last = 0;
  for (let i = 0; i < 30; i++) last = await propose(members, put(i, 1000));
  await until(members, () => members.every((m) => m.node.status().appliedIndex >= last), 'every member to apply the last entry');
  for (const m of members) {
    const s = m.node.status();
    t.ok(s.counters.snapshotsTaken >= 1, `member ${m.id} took a snapshot after ${last} entries of ~1 KB`);
    t.ok(s.logBytesSinceSnapshot < 20_000, `member ${m.id} counts bytes from its snapshot (${s.logBytesSinceSnapshot})`);
  }
});

t.test('a single voter with slow encodes compacts in place, at the threshold: there is no one to hand to', async (t) => {
  const members = await startCluster(t, [1], () => ({ snapshotEntries: 10, snapshotLogRatio: 0, snapshotHandoffMs: 1, stateMachine: new SlowEncodeKv(3 * tickMs) }));
  let last = 0;
  for (let i = 0; i < 50; i++) last = await propose(members, put(i));
  const [only] = members as [Member];
  await until(members, () => only.node.status().appliedIndex >= last, 'the member to apply the last entry');
  t.ok(only.node.status().counters.snapshotsTaken >= 4, `it compacted every 10 entries (${only.node.status().counters.snapshotsTaken} snapshots for ${last})`);
  t.equal(only.node.status().counters.snapshotHandoffs, 0);
  t.equal(only.node.status().role, 'leader');
});

t.test('a log small beside the last snapshot waits until it has outgrown it, or reaches the entry cap', async (t) => {
  const big = 40_000;
  const small = 100;
  for (const cap of [undefined, 120]) await t.test(cap === undefined ? 'no cap' : `a cap of ${cap} entries`, async (t) => {
    const sizes: number[] = [];
    const members = await startCluster(t, [1], () => ({
      snapshotEntries: 10,
      ...(cap !== undefined ? { snapshotEntriesMax: cap } : {}),
      observe: { snapshotTaken: (_ms: number, bytes: number) => void sizes.push(bytes) },
    }));
    const [only] = members as [Member];
    const taken = (): number => only.node.status().counters.snapshotsTaken;
    let last = await propose(members, put(0, big));
    for (let i = 1; i < 10; i++) last = await propose(members, put(i, small));
    await until(members, () => taken() >= 1, 'the first snapshot (none before it to compare with)');
    const first = sizes[0] as number;
    t.ok(first > big, `the first snapshot holds the big value (${first} bytes)`);
    // ~110 bytes of log per entry: 150 entries are well under the first snapshot.
    for (let i = 10; i < 160; i++) last = await propose(members, put(i, small));
    await until(members, () => only.node.status().appliedIndex >= last, 'the member to apply the last entry');
    if (cap === undefined) {
      t.equal(taken(), 1, `no second snapshot after 150 entries holding ${only.node.status().logBytesSinceSnapshot} bytes`);
      let logBytes = 0;
      for (let i = 160; taken() < 2 && i < 1000; i++) {
        logBytes = only.node.status().logBytesSinceSnapshot;
        last = await propose(members, put(i, small));
      }
      t.equal(taken(), 2, 'a second snapshot once the log had grown');
      t.ok(logBytes >= first - 200, `it waited until the log (${logBytes} bytes before the last entry) was the size of the first snapshot (${first})`);
    } else {
      await until(members, () => taken() >= 2, `the snapshot at the cap of ${cap} entries`);
      t.ok(only.node.status().firstIndex > cap, `the cap of ${cap} entries compacted a log far smaller than the snapshot (first index ${only.node.status().firstIndex})`);
    }
  });
});
