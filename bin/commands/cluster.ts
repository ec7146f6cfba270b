// `ovnts cluster status | add-member | add-learner | promote | remove-member | transfer-leader |
// change-election-timer`: the operations view of a running cluster through each member's Admin
// service (proto/admin.proto). Status asks every member, so a member that is down or
// partitioned shows as such rather than hiding. Every subcommand takes --format json.
import type { Command } from 'commander';
import { AdminClient, type StatusReplyJson } from '../../server/admin-service.js';
import { clusterFrom, type ClusterTarget } from '../lib/endpoints.js';
import type { MemberAnswer } from '../lib/members.js';
import { askEveryMember } from '../lib/members.js';
import { addTlsFlags, clientTlsDefaults, type TlsFlagValues } from '../lib/tls-flags.js';

interface Common extends TlsFlagValues {
  endpoints?: string;
  format: string;
}

type MemberStatus = MemberAnswer<'status', StatusReplyJson>;

function statusOfAll(target: ClusterTarget): Promise<MemberStatus[]> {
  return askEveryMember(target, 'status', (c) => c.status());
}

function table(rows: string[][]): string {
  const widths = (rows[0] ?? []).map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows.map((r) => r.map((c, i) => c.padEnd(widths[i] ?? 0)).join('  ').trimEnd()).join('\n') + '\n';
}

function formatStatus(all: readonly MemberStatus[]): string {
  const rows: string[][] = [['member', 'address', 'role', 'term', 'leader', 'commit', 'applied', 'log', 'snapshot', 'revision', 'election', 'clients', 'agents', 'apply version']];
  for (const m of all) {
    if ('error' in m) {
      rows.push(['?', m.address, `unreachable: ${m.error}`]);
      continue;
    }
    const s = m.status;
    rows.push([
      String(s.id),
      m.address,
      s.fatalError !== '' ? `stopped: ${s.fatalError}` : s.role,
      String(s.term),
      s.leader === 0 ? '-' : String(s.leader),
      String(s.commit),
      String(s.applied),
      `${s.firstIndex}..${s.lastIndex}`,
      String(s.snapshotIndex),
      String(s.revision),
      `${s.electionTicks * s.tickMs} ms`,
      // Watch streams and OVSDB sessions; a member that predates the counts shows '?'.
      s.sessions === null || s.sessions === undefined ? '?' : String(s.sessions.watch + s.sessions.ovsdb),
      s.sessions === null || s.sessions === undefined ? '?' : String(s.sessions.agent),
      // In force / the most this member's software applies (0: a member from before them).
      s.applyVersion > 0 ? `${s.applyVersion} (max ${s.applyVersionMax})` : '?',
    ]);
  }
  let out = table(rows);
  const leader = all.find((m): m is { address: string; status: StatusReplyJson } => 'status' in m && m.status.role === 'leader');
  if (leader !== undefined) {
    const s = leader.status;
    out += `\ncluster ${s.clusterId}: voters ${s.voters.join(',') || '-'}; learners ${s.learners.join(',') || '-'}; removed ${s.removed.join(',') || '-'}\n`;
    out += `as seen by the leader (member ${s.id}):\n`;
    const peerRows: string[][] = [['peer', 'address', 'state', 'match', 'next', 'last contact', 'apply max']];
    for (const p of s.peers) {
      const applyMax = p.applyVersionMax > 0 ? String(p.applyVersionMax) : 'not told';
      peerRows.push([String(p.id) + (p.learner ? ' (learner)' : ''), p.address, p.state || '-', String(p.match), String(p.next), p.lastContactMsAgo < 0 ? 'never' : `${p.lastContactMsAgo} ms ago`, applyMax]);
    }
    out += table(peerRows);
  } else {
    out += '\nno member reports itself leader\n';
  }
  return out;
}

/** The address of the member that leads, asking each in turn. */
async function leaderAddress(target: ClusterTarget): Promise<{ address: string; status: StatusReplyJson }> {
  const all = await statusOfAll(target);
  const leader = all.find((m): m is { address: string; status: StatusReplyJson } => 'status' in m && m.status.role === 'leader');
  if (leader === undefined) throw new Error(`no member reports itself leader (${all.map((m) => ('error' in m ? `${m.address}: ${m.error}` : `${m.address}: ${m.status.role}`)).join('; ')})`);
  return leader;
}

export function registerClusterCommand(program: Command): void {
  const cluster = program.command('cluster').description('status and operations of a running cluster');
  const common = (c: Command): Command =>
    addTlsFlags(c.option('--endpoints <list>', 'members\' gRPC addresses, comma-separated (default: $OVNTS_NB or ./.ovnts/env)').option('--format <f>', 'table or json', 'table'), 'the client\'s', clientTlsDefaults);

  common(cluster.command('status').description('every member\'s role, term, leader, commit/applied index, log range, snapshot, and the leader\'s view of its peers')).action(async (o: Common) => {
    const all = await statusOfAll(clusterFrom(o));
    process.stdout.write(o.format === 'json' ? JSON.stringify(all, null, 2) + '\n' : formatStatus(all));
    if (all.every((m) => 'error' in m)) process.exitCode = 1;
  });

  common(cluster.command('transfer-leader').argument('<member>', 'the member id to hand leadership to').description('move leadership to another voter')).action(async (member: string, o: Common) => {
    const to = Number(member);
    if (!Number.isInteger(to) || to < 1) throw new Error(`member must be a positive member id, got "${member}"`);
    const target = clusterFrom(o);
    const leader = await leaderAddress(target);
    const c = new AdminClient(leader.address, undefined, target.tls);
    try {
      const now = await c.transferLeader(to);
      process.stdout.write(o.format === 'json' ? JSON.stringify({ leader: now }) + '\n' : `member ${now} leads\n`);
    } finally {
      c.close();
    }
  });

  interface AddOptions extends Common {
    raftAddress: string;
    nbAddress?: string;
    learner?: boolean;
    id?: string;
  }
  const addMember = async (o: AddOptions, learner: boolean): Promise<void> => {
    const target = clusterFrom(o);
    const all = await statusOfAll(target);
    const leader = await leaderAddress(target);
    const c = new AdminClient(leader.address, undefined, target.tls);
    try {
      const r = await c.addMember({ raftAddress: o.raftAddress, ...(o.nbAddress !== undefined ? { nbAddress: o.nbAddress } : {}), learner, ...(o.id !== undefined ? { id: Number(o.id) } : {}) });
      // The new member's command line: every current member by id (raft addresses from the
      // leader's view, NB addresses from the endpoints that answered), then itself.
      const raft = [`n${leader.status.id}@${leader.status.id}=${leader.status.leaderAddress}`, ...leader.status.peers.filter((p) => !r.removed.includes(p.id) && p.id !== r.id).map((p) => `n${p.id}@${p.id}=${p.address}`), `n${r.id}@${r.id}=${o.raftAddress}`];
      const nb = all.flatMap((m) => ('status' in m && !r.removed.includes(m.status.id) ? [`n${m.status.id}=${m.address}`] : []));
      if (o.nbAddress !== undefined) nb.push(`n${r.id}=${o.nbAddress}`);
      const start = `ovnts central --join --name=n${r.id} --cluster-id=${r.clusterId} --data-dir=DIR --peers=${raft.join(',')} --nb-peers=${nb.join(',')}`;
      process.stdout.write(o.format === 'json' ? JSON.stringify({ ...r, start }) + '\n' : `member ${r.id} added as a ${learner ? 'learner' : 'voter'} (log index ${r.index}); voters ${r.voters.join(',')}${r.learners.length > 0 ? `; learners ${r.learners.join(',')}` : ''}\nstart it with:\n  ${start}\n`);
    } finally {
      c.close();
    }
  };
  const addOptions = (c: Command): Command =>
    common(c)
      .requiredOption('--raft-address <host:port>', 'where the other members will reach the new one')
      .option('--nb-address <host:port>', 'where clients will reach its Northbound API')
      .option('--id <n>', 'its id (default: the next never used)');

  addOptions(cluster.command('add-member'))
    .option('--learner', 'add it as a learner (receives the log, does not vote until promoted)')
    .description('add one member (then start it with the printed `ovnts central --join` command)')
    .action((o: AddOptions) => addMember(o, o.learner === true));

  addOptions(cluster.command('add-learner'))
    .description('add one learner: it receives the log and serves reads, and votes only once promoted (same as add-member --learner)')
    .action((o: AddOptions) => addMember(o, true));

  for (const [name, what] of [['promote', 'make a caught-up learner a voter'], ['remove-member', 'remove a member (its id is never used again)']] as const) {
    common(cluster.command(name).argument('<member>', 'the member id').description(what)).action(async (member: string, o: Common) => {
      const id = Number(member);
      if (!Number.isInteger(id) || id < 1) throw new Error(`member must be a positive member id, got "${member}"`);
      const target = clusterFrom(o);
      const leader = await leaderAddress(target);
      const c = new AdminClient(leader.address, undefined, target.tls);
      try {
        const r = name === 'promote' ? await c.promoteMember(id) : await c.removeMember(id);
        process.stdout.write(o.format === 'json' ? JSON.stringify(r) + '\n' : `${name === 'promote' ? `member ${id} is a voter` : `member ${id} removed`} (log index ${r.index}); voters ${r.voters.join(',')}${r.learners.length > 0 ? `; learners ${r.learners.join(',')}` : ''}\n`);
      } finally {
        c.close();
      }
    });
  }

  common(cluster.command('change-election-timer').argument('<ms>', 'the new election timeout in milliseconds').description('change every member\'s election timeout through the log')).action(async (ms: string, o: Common) => {
    const electionMs = Number(ms);
    if (!Number.isInteger(electionMs) || electionMs < 1) throw new Error(`the election timer must be a positive number of ms, got "${ms}"`);
    const target = clusterFrom(o);
    const leader = await leaderAddress(target);
    const c = new AdminClient(leader.address, undefined, target.tls);
    try {
      const r = await c.changeElectionTimer(electionMs);
      process.stdout.write(o.format === 'json' ? JSON.stringify(r) + '\n' : `election timer is ${r.electionTicks * leader.status.tickMs} ms (${r.electionTicks} ticks), from log index ${r.index}\n`);
    } finally {
      c.close();
    }
  });
}
