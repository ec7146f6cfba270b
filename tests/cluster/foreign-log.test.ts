// Goal: a leader stays up, and counts nothing, when a member answers with an acknowledgement
// beyond the leader's log: what a member holding another cluster's log under this cluster's id
// answers (it replies to an append below its own commit index with that index). The leader
// used to take it as the member's match, then failed an assertion looking for a snapshot to
// send. Method: the core stepped by hand, a leader of {1,2,3} elected with 2's vote.
import t from 'tap';
import { bootstrapState } from '../../cluster/bootstrap.js';
import { RawNode } from '../../cluster/raw-node.js';
import type { Message } from '../../cluster/types.js';

const clusterId = 'foreign-log';
const header = (from: number, term: number): { clusterId: string; from: number; to: number; term: number } => ({ clusterId, from, to: 1, term });

t.test('an acknowledgement beyond the leader\'s log is dropped and counted', async (t) => {
  const raw = new RawNode({ id: 1, clusterId, seed: 1, preVote: false }, bootstrapState([1, 2, 3]));
  raw.campaign();
  const term = raw.raft.term;
  raw.step({ ...header(2, term), type: 'vote-resp', reject: false } as Message);
  t.equal(raw.raft.role, 'leader', 'node 1 leads');
  // Its no-op persisted: the leader counts its own entries from then on.
  raw.ready();
  raw.advance();
  const last = raw.raft.log.lastIndex();
  const commitBefore = raw.raft.log.committed;

  // Member 3 claims entries up to last + 40, as a member with another cluster's longer log does.
  raw.step({ ...header(3, term), type: 'app-resp', index: last + 40, reject: false, rejectHint: 0, logTerm: 0 } as Message);
  t.equal(raw.raft.role, 'leader', 'the leader is still up');
  t.equal(raw.raft.counters.droppedBeyondLog, 1, 'the answer is counted as dropped');
  t.ok((raw.raft.progress.get(3)?.match ?? 0) <= last, 'and not taken as member 3\'s match');
  t.equal(raw.raft.log.committed, commitBefore, 'nothing commits on it');

  // A real acknowledgement from member 2 still commits the leader's entries.
  raw.step({ ...header(2, term), type: 'app-resp', index: last, reject: false, rejectHint: 0, logTerm: 0 } as Message);
  t.equal(raw.raft.log.committed, last, 'member 2\'s acknowledgement commits up to the last index');
  t.equal(raw.raft.counters.droppedBeyondLog, 1);
});
