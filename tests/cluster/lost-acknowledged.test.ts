// Goal: a member whose storage lost entries it had acknowledged (found by the fault suite's
// torn LevelDB log: the leader's heartbeat then names a commit index beyond the member's log)
// stops with a storage error that says what happened and what to do, instead of crashing on an
// assertion at every restart. Method: the core stepped by hand; then a RaftNode on real
// LevelDB, its transport a stub the test delivers the heartbeat through.
import t from 'tap';
import { bootstrapState } from '../../cluster/bootstrap.js';
import { KvStateMachine } from '../../cluster/kv-state-machine.js';
import { RaftNode, type FatalError } from '../../cluster/node.js';
import { RawNode } from '../../cluster/raw-node.js';
import { RaftStorage, StorageCorruptError } from '../../cluster/storage.js';
import type { Transport, TransportHandlers } from '../../cluster/transport.js';
import type { Entry, Message, PersistedState } from '../../cluster/types.js';
import { testdirAfterTeardowns } from '../helpers/testdir.js';

const clusterId = 'lost-ack';

/** Follower 2 of {1,2,3} at term 2, holding entries 1..3 with 1 committed. */
function followerState(): PersistedState {
  const boot = bootstrapState([1, 2, 3]);
  const entries: Entry[] = [...boot.entries, { index: 2, term: 2, type: 'normal', data: Uint8Array.of(2) }, { index: 3, term: 2, type: 'normal', data: Uint8Array.of(3) }];
  return { hardState: { term: 2, vote: 1, commit: 1 }, entries };
}

const heartbeat = (commit: number): Message => ({ clusterId, from: 1, to: 2, term: 2, type: 'heartbeat', commit, readSeq: 0 });

t.test('the core: a heartbeat beyond the log is noted, not committed, not answered', async (t) => {
  const raw = new RawNode({ id: 2, clusterId, seed: 1 }, followerState());
  raw.step(heartbeat(3));
  t.equal(raw.status().commit, 3, 'a heartbeat within the log commits as usual');
  t.equal(raw.raft.lostAcknowledged, undefined);
  t.match(raw.raft.msgs, [{ type: 'heartbeat-resp', to: 1 }], 'and is answered');
  raw.raft.msgs = [];

  raw.step(heartbeat(7));
  t.same(raw.raft.lostAcknowledged, { leader: 1, commit: 7, lastIndex: 3 }, 'commit 7 beyond last index 3 is noted');
  t.equal(raw.status().commit, 3, 'nothing beyond the log is committed');
  t.same(raw.raft.msgs, [], 'and nothing is answered');
});

t.test('the node stops on it with a storage error that says what to do', async (t) => {
  const dir = testdirAfterTeardowns(t);
  const storage = await RaftStorage.open(dir);
  const state = followerState();
  await storage.save({ entries: state.entries, hardState: state.hardState });
  await storage.close();

  let handlers: TransportHandlers | undefined;
  const sent: Message[] = [];
  const transport: Transport = {
    start: async (h) => void (handlers = h),
    send: (ms) => void sent.push(...ms),
    setPeers: () => undefined,
    stats: () => ({ droppedQueueFull: new Map(), refusedForeign: 0, sent: 0, received: 0 }),
    close: async () => undefined,
  };
  const fatal: FatalError[] = [];
  const node = await RaftNode.start({
    id: 2,
    clusterId,
    dataDir: dir,
    transport,
    stateMachine: new KvStateMachine(),
    peers: new Map([[1, 'a'], [2, 'b'], [3, 'c']]),
    tickMs: 1000,
    onFatalError: (err) => fatal.push(err),
    log: () => undefined,
  });
  t.teardown(() => node.stop());
  if (handlers === undefined) throw new Error('transport not started');
  handlers.onMessage(heartbeat(9));
  t.equal(fatal.length, 1, 'the node reports one fatal storage error');
  const err = fatal[0];
  t.ok(err instanceof StorageCorruptError, 'a corruption of its storage');
  t.match(err?.message, /log ends at 3, but leader 1 knows this member acknowledged entries up to 9/);
  t.match(err?.message, /remove this member and add it back with an empty data folder/);
  t.equal(node.status().fatalError, err, 'status shows it');
  const before = sent.length;
  handlers.onMessage(heartbeat(3));
  t.equal(sent.length, before, 'a stopped node answers nothing more');
});
