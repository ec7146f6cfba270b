// A central member's control commands: where OVN runs two clustered ovsdb-servers and an
// ovn-northd, ovnts runs one process, so its one socket answers what operators ask of all
// three (`ovs-appctl -t <data-dir>/ovnts.ctl cluster/status OVN_Northbound`, `... status`).
// From ovsdb-server (Open vSwitch 3.1's ovsdb/raft.c and ovsdb/ovsdb-server.c):
// cluster/status, cluster/cid and cluster/sid of OVN_Northbound or OVN_Southbound,
// ovsdb-server/list-dbs, memory/show; from ovn-northd (OVN 23.03's northd/ovn-northd.c and
// lib/inc-proc-eng.c): status and inc-engine/show-stats; and exit. Formats are theirs, filled
// from our Raft node, doors and northd engine; docs/operations.md (Control sockets) says which
// fields are approximations and which commands are left out, and why.
import type { ElectionTimes, RaftNodeStatus } from '../cluster/node.js';
import type { PeerLinks } from '../cluster/transport.js';
import type { NodeId } from '../cluster/types.js';
import type { UnixctlCommand, UnixctlResult } from '../ovsdb/unixctl-server.js';
import { unixctlError, unixctlOk } from '../ovsdb/unixctl-server.js';
import { engineStatsOf } from './admin-service.js';
import type { CentralNode, TransactDb } from './central-node.js';
import { ovsdbClusterUuid, ovsdbServerId } from './ovsdb-door.js';

/** The databases a member serves, as ovsdb-server/list-dbs names them (its sorted order). */
export const CLUSTERED_DBS: readonly TransactDb[] = ['OVN_Northbound', 'OVN_Southbound'];

/** What cluster/status prints, gathered from one member (plain data: tests build one by hand). */
export interface ClusterStatusInput {
  readonly db: TransactDb;
  readonly clusterId: string;
  readonly self: NodeId;
  readonly status: Pick<RaftNodeStatus, 'role' | 'term' | 'vote' | 'lead' | 'commit' | 'appliedIndex' | 'firstIndex' | 'lastIndex' | 'conf' | 'electionTicks' | 'tickMs' | 'peers' | 'fatalError'> & { readonly election: ElectionTimes };
  readonly addressOf: (id: NodeId) => string | undefined;
  /** The transport's connections by peer (undefined: a transport without connections). */
  readonly links: ReadonlyMap<NodeId, PeerLinks> | undefined;
  /** Connections lost (the transport's failed outgoing streams). */
  readonly disconnections: number;
}

/** ovsdb-server's first four hex digits of a UUID (SID_FMT, CID_FMT). */
const short = (uuid: string): string => uuid.slice(0, 4);

/** A Raft address as ovsdb-server writes one: ours are host:port over TCP (gRPC). */
function raftAddress(a: string | undefined): string {
  if (a === undefined) return 'unknown';
  return /^(\[[^\]]+\]|[^:[\]]+):\d+$/.test(a) ? `tcp:${a}` : a;
}

/** The text of ovsdb/raft.c's raft_unixctl_status for this member and database. */
export function clusterStatusText(i: ClusterStatusInput): string {
  const s = i.status;
  const sid = (id: NodeId): string => ovsdbServerId(i.clusterId, id, i.db);
  // raft_address_to_nickname: a TCP server is known by its SID's first four hex digits.
  const nick = (id: NodeId): string => short(sid(id));
  const named = (title: string, id: NodeId): string => `${title}: ${id === i.self ? 'self' : id === 0 ? 'unknown' : nick(id)}\n`;
  const cid = ovsdbClusterUuid(i.clusterId);
  const members = new Set<NodeId>([...s.conf.voters, ...s.conf.learners]);
  const electionMs = s.electionTicks * s.tickMs;
  const campaigning = s.role === 'candidate' || s.role === 'pre-candidate';
  const status = s.fatalError !== undefined ? 'failed'
    : s.conf.removed.includes(i.self) ? 'left cluster'
    : !members.has(i.self) ? 'joining cluster'
    : campaigning && (s.election.startedMsAgo ?? 0) > electionMs ? 'disconnected from the cluster (election timeout)'
    : 'cluster member';
  let out = `${nick(i.self)}\n`;
  out += `Name: ${i.db}\n`;
  out += `Cluster ID: ${short(cid)} (${cid})\n`;
  out += `Server ID: ${nick(i.self)} (${sid(i.self)})\n`;
  out += `Address: ${raftAddress(i.addressOf(i.self))}\n`;
  out += `Status: ${status}\n`;
  if (status === 'joining cluster') {
    const remotes = s.peers.map((p) => raftAddress(p.address)).filter((a) => a !== 'unknown');
    out += `Remotes for joining:${remotes.map((a) => ` ${a}`).join('')}\n`;
  }
  out += `Role: ${s.role === 'pre-candidate' ? 'candidate' : s.role}\n`;
  out += `Term: ${s.term}\n`;
  out += named('Leader', s.lead);
  out += named('Vote', s.vote);
  out += '\n';
  if (s.election.startedMsAgo !== undefined) out += `Last Election started ${s.election.startedMsAgo} ms ago, reason: ${s.election.reason ?? 'timeout'}\n`;
  if (s.election.wonMsAgo !== undefined) out += `Last Election won: ${s.election.wonMsAgo} ms ago\n`;
  out += `Election timer: ${electionMs}\n`;
  out += `Log: [${s.firstIndex}, ${s.lastIndex + 1}]\n`;
  out += `Entries not yet committed: ${s.lastIndex - s.commit}\n`;
  out += `Entries not yet applied: ${s.lastIndex - s.appliedIndex}\n`;
  let connections = '';
  for (const [id, l] of [...(i.links ?? [])].sort(([a], [b]) => a - b)) {
    if (l.outgoing === 'open') connections += ` ->${nick(id)}`;
    else if (l.outgoing === 'down') connections += ` (->${nick(id)})`;
    if (l.incoming > 0) connections += ` <-${nick(id)}`;
  }
  out += `Connections:${connections}\n`;
  out += `Disconnections: ${i.disconnections}\n`;
  out += 'Servers:\n';
  const peers = new Map(s.peers.map((p) => [p.id, p]));
  for (const id of [...members].sort((a, b) => a - b)) {
    out += `    ${nick(id)} (${nick(id)} at ${raftAddress(i.addressOf(id))})`;
    if (id === i.self) out += ' (self)';
    if (s.conf.learners.includes(id)) out += ' (learner)';
    const p = peers.get(id);
    if (s.role === 'leader') {
      if (id === i.self) out += ` next_index=${s.lastIndex + 1} match_index=${s.lastIndex}`;
      else if (p?.next !== undefined && p.match !== undefined) out += ` next_index=${p.next} match_index=${p.match}`;
    }
    if (id !== i.self && p?.lastContactMsAgo !== undefined) out += ` last msg ${p.lastContactMsAgo} ms ago`;
    out += '\n';
  }
  return out;
}

/** ovn-northd's inc-engine/show-stats [NODE [STAT]] over the northd engine's counters. */
export function engineStatsText(nodes: readonly { name: string; recomputes: number; incrementalRuns: number }[], node?: string, stat?: string): string {
  let out = '';
  for (const n of nodes) {
    if (node !== undefined && n.name !== node) continue;
    // OVN's engine aborts a recompute it may not finish; ours never does.
    const values = { recompute: n.recomputes, compute: n.incrementalRuns, abort: 0 };
    if (stat === undefined) {
      out += `Node: ${n.name}\n- recompute: ${String(values.recompute).padStart(12)}\n- compute:   ${String(values.compute).padStart(12)}\n- abort:     ${String(values.abort).padStart(12)}\n`;
    } else {
      out += stat in values ? String(values[stat as keyof typeof values]) : `Invalid stat type : ${stat}`;
    }
    if (node !== undefined) break;
  }
  return out;
}

function dbOf(name: string | undefined): TransactDb | undefined {
  return CLUSTERED_DBS.find((d) => d === name);
}

/** ovsdb-server's memory/show line: "key:value" pairs, sorted by key. */
function memoryText(central: CentralNode, links: ReadonlyMap<NodeId, PeerLinks> | undefined): string {
  const s = central.node.status();
  const nb = central.sm.nb;
  let nbRows = 0;
  for (const table of nb.schema.tables.keys()) nbRows += nb.rows(table).size;
  let sbRows = 0;
  for (const rows of central.northd?.view().values() ?? []) sbRows += rows.size;
  const mem = process.memoryUsage();
  const sessions = central.sessions.all();
  let connections = 0;
  for (const l of links?.values() ?? []) connections += (l.outgoing === 'open' ? 1 : 0) + l.incoming;
  const pairs: [string, number][] = [
    ['agent-streams', sessions.agent],
    ['heap-used-kB', Math.round(mem.heapUsed / 1024)],
    ['nb-rows', nbRows],
    ['ovsdb-sessions', sessions.ovsdb],
    ['raft-connections', connections],
    ['raft-log', s.lastIndex - s.firstIndex + 1],
    ['rss-kB', Math.round(mem.rss / 1024)],
    ['sb-rows', sbRows],
    ['watches', sessions.watch],
  ];
  return pairs.map(([k, v]) => `${k}:${v}`).join(' ');
}

export interface CentralControlOptions {
  /** Stops the member after the reply went out (ovsdb-server's and ovn-northd's exit). */
  readonly exit: () => void;
}

export function centralUnixctlCommands(central: CentralNode, options: CentralControlOptions): [string, UnixctlCommand][] {
  const links = (): ReadonlyMap<NodeId, PeerLinks> | undefined => central.node.links();
  const perDb = (run: (db: TransactDb) => UnixctlResult): UnixctlCommand => ({
    usage: 'DB',
    argsMin: 1,
    argsMax: 1,
    run: (args) => {
      const db = dbOf(args[0]);
      return db === undefined ? unixctlError('unknown cluster') : run(db);
    },
  });
  return [
    ['cluster/status', perDb((db) => {
      const status = central.node.status();
      const t = status.transport as { readonly streamFailures?: number };
      return unixctlOk(clusterStatusText({
        db, clusterId: central.clusterId, self: central.id, status,
        addressOf: (id) => central.node.addressOf(id), links: links(), disconnections: t.streamFailures ?? 0,
      }));
    })],
    ['cluster/cid', perDb(() => unixctlOk(ovsdbClusterUuid(central.clusterId)))],
    ['cluster/sid', perDb((db) => unixctlOk(ovsdbServerId(central.clusterId, central.id, db)))],
    ['ovsdb-server/list-dbs', { usage: '', argsMin: 0, argsMax: 0, run: () => unixctlOk([...CLUSTERED_DBS, '_Server'].map((d) => `${d}\n`).join('')) }],
    ['memory/show', { usage: '', argsMin: 0, argsMax: 0, run: () => unixctlOk(memoryText(central, links())) }],
    // ovn-northd holding the SB lock is "active", the others "standby": here the leader.
    ['status', { usage: '', argsMin: 0, argsMax: 0, run: () => unixctlOk(`Status: ${central.node.leadership().role === 'leader' ? 'active' : 'standby'}\n`) }],
    ['inc-engine/show-stats', { usage: '', argsMin: 0, argsMax: 2, run: (args) => unixctlOk(engineStatsText(engineStatsOf(central).nodes, args[0], args[1])) }],
    ['exit', {
      usage: '',
      argsMin: 0,
      argsMax: 0,
      run: () => {
        setImmediate(options.exit);
        return unixctlOk();
      },
    }],
  ];
}
