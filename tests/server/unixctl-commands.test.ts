// cluster/status's text (server/unixctl-commands.ts) for the states a 3-member test cluster does
// not show: a follower's whole text as ovsdb/raft.c lays it out, then a member joining, one
// removed, one whose storage failed, a candidate past its election timeout, a learner, links
// down; and inc-engine/show-stats's filters. Method: ClusterStatusInput built by hand.
import t from 'tap';
import type { ClusterStatusInput } from '../../server/unixctl-commands.js';
import { clusterStatusText, engineStatsText } from '../../server/unixctl-commands.js';
import { ovsdbClusterUuid, ovsdbServerId } from '../../server/ovsdb-door.js';
import { StorageError } from '../../cluster/storage.js';

const nick = (id: number): string => ovsdbServerId('c1', id, 'OVN_Northbound').slice(0, 4);

function input(over: Partial<ClusterStatusInput['status']> = {}, rest: Partial<ClusterStatusInput> = {}): ClusterStatusInput {
  return {
    db: 'OVN_Northbound',
    clusterId: 'c1',
    self: 2,
    addressOf: (id) => `127.0.0.1:700${id}`,
    links: new Map([[1, { outgoing: 'open', incoming: 1 }]]),
    disconnections: 3,
    ...rest,
    status: {
      role: 'follower', term: 7, vote: 1, lead: 1, commit: 40, appliedIndex: 39, firstIndex: 11, lastIndex: 42,
      conf: { voters: [1, 2, 3], learners: [], removed: [] }, electionTicks: 10, tickMs: 100,
      peers: [{ id: 1, address: '127.0.0.1:7001', lastContactMsAgo: 12 }, { id: 3, address: '127.0.0.1:7003', lastContactMsAgo: undefined }],
      fatalError: undefined, election: {},
      ...over,
    },
  };
}

t.test('a follower, line by line', async (t) => {
  const sid = ovsdbServerId('c1', 2, 'OVN_Northbound');
  const cid = ovsdbClusterUuid('c1');
  t.equal(clusterStatusText(input()), [
    nick(2),
    'Name: OVN_Northbound',
    `Cluster ID: ${cid.slice(0, 4)} (${cid})`,
    `Server ID: ${sid.slice(0, 4)} (${sid})`,
    'Address: tcp:127.0.0.1:7002',
    'Status: cluster member',
    'Role: follower',
    'Term: 7',
    `Leader: ${nick(1)}`,
    `Vote: ${nick(1)}`,
    '',
    'Election timer: 1000',
    'Log: [11, 43]',
    'Entries not yet committed: 2',
    'Entries not yet applied: 3',
    `Connections: ->${nick(1)} <-${nick(1)}`,
    'Disconnections: 3',
    'Servers:',
    `    ${nick(1)} (${nick(1)} at tcp:127.0.0.1:7001) last msg 12 ms ago`,
    `    ${nick(2)} (${nick(2)} at tcp:127.0.0.1:7002) (self)`,
    `    ${nick(3)} (${nick(3)} at tcp:127.0.0.1:7003)`,
    '',
  ].join('\n'));
});

t.test('the states and marks a quiet cluster does not show', async (t) => {
  const joining = clusterStatusText(input({ conf: { voters: [], learners: [], removed: [] }, lead: 0, vote: 0 }));
  t.match(joining, /^Status: joining cluster\nRemotes for joining: tcp:127\.0\.0\.1:7001 tcp:127\.0\.0\.1:7003\n/m, 'joining, with the remotes it knows');
  t.match(joining, /^Leader: unknown\nVote: unknown\n/m);
  t.match(clusterStatusText(input({ conf: { voters: [1, 3], learners: [], removed: [2] } })), /^Status: left cluster$/m, 'removed: left cluster');
  t.match(clusterStatusText(input({ fatalError: new StorageError('disk gone') })), /^Status: failed$/m, 'a storage error: failed');
  t.match(clusterStatusText(input({ role: 'pre-candidate', election: { startedMsAgo: 2500, reason: 'timeout' } })), /^Status: disconnected from the cluster \(election timeout\)\nRole: candidate\n[^]*^Last Election started 2500 ms ago, reason: timeout$/m,
    'campaigning past the election timeout: disconnected, and a pre-candidate is a candidate');
  t.match(clusterStatusText(input({ role: 'candidate', election: { startedMsAgo: 50, reason: 'timeout' } })), /^Status: cluster member$/m, 'a fresh campaign: still a member');
  t.match(clusterStatusText(input({ conf: { voters: [1, 2], learners: [3], removed: [] } })), new RegExp(`^    ${nick(3)} \\(${nick(3)} at tcp:127\\.0\\.0\\.1:7003\\) \\(learner\\)$`, 'm'), 'a learner is marked');
  t.match(clusterStatusText(input({}, { links: new Map([[1, { outgoing: 'down', incoming: 0 }], [3, { outgoing: undefined, incoming: 2 }]]) })), new RegExp(`^Connections: \\(->${nick(1)}\\) <-${nick(3)}$`, 'm'), 'a stream wanted and down is parenthesized');
  const leader = clusterStatusText(input({ role: 'leader', lead: 2, vote: 2, peers: [{ id: 1, address: 'a', match: 41, next: 43, lastContactMsAgo: 5 }, { id: 3, address: 'b', lastContactMsAgo: undefined }], election: { startedMsAgo: 900, reason: 'leadership_transfer', wonMsAgo: 850 } }));
  t.match(leader, /^Leader: self\nVote: self\n\nLast Election started 900 ms ago, reason: leadership_transfer\nLast Election won: 850 ms ago\n/m);
  t.match(leader, new RegExp(`^    ${nick(1)} .* next_index=43 match_index=41 last msg 5 ms ago\\n    ${nick(2)} .*\\(self\\) next_index=43 match_index=42\\n`, 'm'), 'progress on a leader, its own too');
  t.equal(clusterStatusText(input({}, { db: 'OVN_Southbound' })).split('\n')[0], ovsdbServerId('c1', 2, 'OVN_Southbound').slice(0, 4), 'the SB has server ids of its own');
});

t.test('inc-engine/show-stats: all, one node, one counter', async (t) => {
  const nodes = [{ name: 'a', recomputes: 1, incrementalRuns: 22 }, { name: 'b', recomputes: 3, incrementalRuns: 0 }];
  t.equal(engineStatsText(nodes), 'Node: a\n- recompute:            1\n- compute:             22\n- abort:                0\nNode: b\n- recompute:            3\n- compute:              0\n- abort:                0\n');
  t.equal(engineStatsText(nodes, 'b'), 'Node: b\n- recompute:            3\n- compute:              0\n- abort:                0\n');
  t.equal(engineStatsText(nodes, 'a', 'compute'), '22');
  t.equal(engineStatsText(nodes, 'nope'), '', 'an unknown node: nothing, as OVN answers');
});
