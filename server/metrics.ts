// A member's health and metrics over HTTP: /healthz (the process serves and its disk has not
// failed), /readyz (it knows a leader and has applied what it knows committed, within a limit)
// and /metrics (Prometheus text, through prom-client). Gauges are read from the node when
// scraped; durations come from the CentralObserver hooks.
import { createServer, type Server } from 'node:http';
import client from 'prom-client';
import type { CentralNode, CentralObserver, TransactDb } from './central-node.js';
import { refusingListeners, sessionKinds } from './sessions.js';
import type { FanoutStats } from './sb-fanout.js';
import type { SbHousekeepingStats } from './sb-housekeeping.js';
import type { AckRelayStats } from './live-acks.js';
import type { RaftCounters } from '../cluster/raft.js';
import { capConnections } from '../cluster/connection-cap.js';

export const metricsLimits = {
  /** /readyz fails while the applied index lags the commit index by more than this. */
  readyApplyLagMax: 1000,
  /**
   * Connections the HTTP listener holds at once: scrapers and health probes need a few, and a
   * flood of them must not take the descriptors the member needs (server/listen-budget.ts).
   */
  connectionsMax: 32,
  /** A connection idle this long, or that has not sent a whole request within it, is closed. */
  requestMs: 10_000,
  /** How often the listener looks for requests past requestMs. */
  requestCheckMs: 1_000,
} as const;

const ms = (x: number): number => x / 1000;

/** The observer a member passes to CentralNode.start, and the registry that /metrics serves. */
export class CentralMetrics implements CentralObserver {
  readonly registry = new client.Registry();
  private readonly persistSeconds: client.Histogram;
  private readonly persistEntries: client.Histogram;
  private readonly snapshotSeconds: client.Histogram;
  private readonly snapshotEncodeSeconds: client.Histogram;
  private readonly snapshotBytes: client.Gauge;
  private readonly proposalSeconds: client.Histogram;
  private readonly transactSeconds: client.Histogram<'db' | 'outcome'>;
  private readonly projectionSeconds: client.Histogram;
  private central: CentralNode | undefined;
  private fanout: { stats(): FanoutStats } | undefined;
  private housekeeping: { stats(): SbHousekeepingStats } | undefined;
  private relay: { stats(): AckRelayStats } | undefined;

  constructor() {
    const registers = [this.registry];
    client.collectDefaultMetrics({ register: this.registry, prefix: 'ovnts_process_' });
    this.persistSeconds = new client.Histogram({
      name: 'ovnts_raft_persist_seconds',
      help: 'Duration of each synced Raft write (the fsync floor of a commit)',
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 1],
      registers,
    });
    this.persistEntries = new client.Histogram({ name: 'ovnts_raft_persist_entries', help: 'Log entries per synced write', buckets: [0, 1, 2, 4, 8, 16, 64, 256, 1024], registers });
    this.snapshotSeconds = new client.Histogram({ name: 'ovnts_raft_snapshot_seconds', help: 'Duration of taking a snapshot and compacting the log', buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 30], registers });
    this.snapshotEncodeSeconds = new client.Histogram({
      name: 'ovnts_raft_snapshot_encode_seconds',
      help: 'Part of each snapshot spent encoding the state machine, which holds the event loop',
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5],
      registers,
    });
    this.snapshotBytes = new client.Gauge({ name: 'ovnts_raft_snapshot_bytes', help: 'Size of the last snapshot taken here', registers });
    this.proposalSeconds = new client.Histogram({
      name: 'ovnts_raft_proposal_seconds',
      help: 'From a proposal on this member to its entry applied here (commit and apply latency)',
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 0.5, 2, 10],
      registers,
    });
    this.transactSeconds = new client.Histogram({
      name: 'ovnts_transact_seconds',
      help: 'Client transactions answered by this member, by database and outcome',
      labelNames: ['db', 'outcome'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 0.5, 2, 10],
      registers,
    });
    this.projectionSeconds = new client.Histogram({ name: 'ovnts_projection_seconds', help: 'Duration of each northd projection step inside apply', buckets: [0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 2], registers });
    const status = (): ReturnType<CentralNode['node']['status']> | undefined => this.central?.node.status();
    const gauge = (name: string, help: string, value: () => number | undefined): void => {
      new client.Gauge({
        name,
        help,
        registers,
        collect(this: client.Gauge) {
          const v = value();
          if (v !== undefined) this.set(v);
        },
      });
    };
    gauge('ovnts_raft_term', 'Current Raft term', () => status()?.term);
    gauge('ovnts_raft_leader', 'Id of the member this one follows (0: none known)', () => status()?.lead);
    gauge('ovnts_raft_is_leader', '1 on the leader', () => (status() === undefined ? undefined : status()?.role === 'leader' ? 1 : 0));
    gauge('ovnts_raft_commit_index', 'Highest log index known committed', () => status()?.commit);
    gauge('ovnts_raft_applied_index', 'Highest log index applied here', () => status()?.appliedIndex);
    gauge('ovnts_raft_apply_lag', 'Committed entries not yet applied here', () => {
      const s = status();
      return s === undefined ? undefined : s.commit - s.appliedIndex;
    });
    gauge('ovnts_raft_snapshot_index', 'Index of the latest snapshot', () => status()?.snapshotIndex);
    gauge('ovnts_raft_proposals_pending', 'Proposals waiting to apply', () => status()?.proposalsPending);
    gauge('ovnts_raft_reads_pending', 'Linearizable reads waiting', () => status()?.readsPending);
    gauge('ovnts_raft_entries_applied', 'Entries applied since start', () => status()?.counters.entriesApplied);
    gauge('ovnts_raft_proposals_accepted', 'Proposals accepted since start', () => status()?.counters.proposalsAccepted);
    gauge('ovnts_raft_proposals_timed_out', 'Proposals that timed out since start', () => status()?.counters.proposalsTimedOut);
    gauge('ovnts_raft_snapshots_taken', 'Snapshots taken here since start', () => status()?.counters.snapshotsTaken);
    gauge('ovnts_raft_snapshot_handoffs', 'Times this member handed leadership away rather than take a slow snapshot while leading', () => status()?.counters.snapshotHandoffs);
    gauge('ovnts_apply_version', 'The apply version in force here: how entries are applied, as the log has moved the cluster (docs/operations.md, Upgrades)', () => this.central?.sm.applyVersion);
    gauge('ovnts_apply_version_max', 'The highest apply version this member\'s software implements (or --apply-version-max)', () => this.central?.sm.applyVersionMax);
    gauge('ovnts_nb_group_entries', 'Group-commit entries this member proposed (each carrying several NB transactions)', () => this.central?.nbGroups.counters.groups);
    gauge('ovnts_nb_grouped_txns', 'NB transactions this member proposed inside group-commit entries', () => this.central?.nbGroups.counters.groupedTxns);
    gauge('ovnts_nb_single_txns', 'NB transactions this member proposed as an entry of their own', () => this.central?.nbGroups.counters.single);
    gauge('ovnts_nb_compacted_txns', 'NB transactions this member logged written smaller for the state they met (bulky waits and whole-set updates as comments and mutates)', () => this.central?.nbGroups.counters.compacted);
    gauge('ovnts_raft_log_bytes_since_snapshot', 'Bytes of entry data applied since the last snapshot', () => status()?.logBytesSinceSnapshot);
    // Raft messages the core refused (cluster/raft.ts counters): "foreign-cluster" (another
    // cluster id), "misaddressed", "stale-term", and "beyond-log" (an acknowledgement of entries
    // this leader does not have: a member holding another cluster's log).
    const dropped: [keyof RaftCounters, string][] = [
      ['droppedForeignCluster', 'foreign-cluster'],
      ['droppedMisaddressed', 'misaddressed'],
      ['droppedStaleTerm', 'stale-term'],
      ['droppedBeyondLog', 'beyond-log'],
    ];
    new client.Gauge({
      name: 'ovnts_raft_messages_dropped',
      help: 'Raft messages this member refused since start, by reason',
      labelNames: ['reason'],
      registers,
      collect(this: client.Gauge<'reason'>) {
        const c = status()?.raftCounters;
        if (c === undefined) return;
        for (const [key, reason] of dropped) this.set({ reason }, c[key]);
      },
    });
    const sessions = (): ReturnType<CentralNode['sessions']['all']> | undefined => this.central?.sessions.all();
    new client.Gauge({
      name: 'ovnts_sessions',
      help: 'Clients connected to this member: kind="watch" (Northbound gRPC watch streams), "ovsdb" (OVSDB protocol connections), "agent" (agent streams)',
      labelNames: ['kind'],
      registers,
      collect(this: client.Gauge<'kind'>) {
        const now = sessions();
        if (now === undefined) return;
        for (const kind of sessionKinds) this.set({ kind }, now[kind]);
      },
    });
    const refused = (): ReturnType<CentralNode['sessions']['refused']> | undefined => this.central?.sessions.refused();
    new client.Gauge({
      name: 'ovnts_connections_refused',
      help: 'Connections this member turned away since start because the listener held its most (listener="ovsdb": the OVSDB doors, "grpc": the gRPC API, "raft": the Raft port, "metrics": this HTTP listener)',
      labelNames: ['listener'],
      registers,
      collect(this: client.Gauge<'listener'>) {
        const now = refused();
        if (now === undefined) return;
        for (const listener of refusingListeners) this.set({ listener }, now[listener]);
        this.set({ listener: 'raft' }, status()?.transport.refusedConnections ?? 0);
      },
    });
    gauge('ovnts_revision', 'Revision (log index) of the database here', () => this.central?.revision);
    gauge('ovnts_history_min_revision', 'Oldest revision a watch can resume from', () => this.central?.history.minRevision);
    // The agent streams' fan-out (sb-fanout.ts): read from its counters when scraped.
    const fan = (): FanoutStats | undefined => this.fanout?.stats();
    new client.Gauge({
      name: 'ovnts_agent_streams',
      help: 'Agent streams on this member: state="live" (following each revision) or "syncing" (catching up from history or a snapshot)',
      labelNames: ['state'],
      registers,
      collect(this: client.Gauge<'state'>) {
        const f = fan();
        if (f === undefined) return;
        this.set({ state: 'live' }, f.live);
        this.set({ state: 'syncing' }, f.syncing);
      },
    });
    gauge('ovnts_agent_stream_groups', 'Groups of agent streams with the same interest (each revision is filtered and encoded once per group)', () => fan()?.groups);
    gauge('ovnts_agent_queued_bytes', 'Bytes queued to all agent streams, not yet taken by the transport', () => fan()?.queuedBytes);
    gauge('ovnts_agent_queued_bytes_max', 'The largest queue of one agent stream now', () => fan()?.queuedBytesMaxNow);
    gauge('ovnts_agent_sync_bytes', 'Bytes of catch-up and snapshot messages being written to syncing streams', () => fan()?.syncBytes);
    gauge('ovnts_agent_cache_bytes', 'Bytes of encoded steps kept for streams of the same group', () => fan()?.cacheBytes);
    const totals: [keyof FanoutStats, string, string][] = [
      ['encoded', 'ovnts_agent_messages_encoded_total', 'Agent stream messages encoded (one encoding can go to many streams)'],
      ['written', 'ovnts_agent_messages_written_total', 'Agent stream messages written'],
      ['bytesWritten', 'ovnts_agent_bytes_written_total', 'Bytes written to agent streams'],
      ['snapshots', 'ovnts_agent_snapshots_total', 'Snapshots sent to agents (a resume outside the retained history)'],
      ['catchUps', 'ovnts_agent_catch_ups_total', 'Agent resumes served from the retained history'],
      ['fellBehind', 'ovnts_agent_fell_behind_total', 'Live agent streams moved to syncing because their queue was full'],
      ['ackErrors', 'ovnts_agent_ack_errors_total', 'Acknowledgements from agents that reported an error'],
      ['cacheHits', 'ovnts_agent_cache_hits_total', 'Steps written from the encoding another stream of the group made'],
      ['budgetWaits', 'ovnts_agent_budget_waits_total', 'Catch-ups that waited for others to be written first'],
    ];
    /** A counter that follows a total kept elsewhere (it only grows): what was added since the last scrape. */
    const counterOf = (name: string, help: string, read: () => number | undefined): void => {
      let seen = 0;
      new client.Counter({
        name,
        help,
        registers,
        collect(this: client.Counter) {
          const v = read();
          if (typeof v === 'number' && v > seen) {
            this.inc(v - seen);
            seen = v;
          }
        },
      });
    };
    for (const [key, name, help] of totals) counterOf(name, help, () => fan()?.[key]);
    // Acks heard before they are committed, and relayed to the other members (live-acks.ts).
    gauge('ovnts_live_acks', 'Chassis whose latest ack this member has heard but not yet seen committed', () => this.central?.liveAcks.size);
    counterOf('ovnts_ack_relay_acks_total', 'Agent acks this member relayed to the other members', () => this.relay?.stats().acks);
    counterOf('ovnts_ack_relay_dropped_total', 'Agent acks not relayed because a member\'s relay queue was full', () => this.relay?.stats().dropped);
    counterOf('ovnts_ack_relay_call_errors_total', 'Relay calls to other members that failed (the acks they carried count once committed)', () => this.relay?.stats().callErrors);
    counterOf('ovnts_mac_binding_aged_total', 'MAC_Binding rows this member removed as their router\'s mac_binding_age_threshold passed', () => this.housekeeping?.stats().removed);
    counterOf('ovnts_sb_stale_rows_removed_total', 'MAC_Binding, FDB and IGMP_Group rows this member removed as their datapath or port was gone', () => this.housekeeping?.stats().staleRemoved);
    counterOf('ovnts_sb_housekeeping_failures_total', 'SB housekeeping transactions (aging, stale rows) that failed (tried again)', () => this.housekeeping?.stats().failures);
    gauge('ovnts_sb_rows', 'Rows in the derived SB view', () => {
      const view = this.central?.northd?.view();
      if (view === undefined) return undefined;
      let n = 0;
      for (const rows of view.values()) n += rows.size;
      return n;
    });
  }

  /** The member whose state the gauges read (after CentralNode.start). */
  attach(central: CentralNode): void {
    this.central = central;
  }

  /** The agent stream fan-out whose counters the ovnts_agent_* metrics read, and the ack relay's. */
  /** The member's SB housekeeping (sb-housekeeping.ts), whose counters are read when scraped. */
  attachHousekeeping(housekeeping: { stats(): SbHousekeepingStats }): void {
    this.housekeeping = housekeeping;
  }

  attachFanout(fanout: { stats(): FanoutStats }, relay?: { stats(): AckRelayStats }): void {
    this.fanout = fanout;
    this.relay = relay;
  }

  persisted(msTaken: number, entries: number): void {
    this.persistSeconds.observe(ms(msTaken));
    this.persistEntries.observe(entries);
  }

  snapshotTaken(msTaken: number, bytes: number, encodeMs: number): void {
    this.snapshotSeconds.observe(ms(msTaken));
    this.snapshotEncodeSeconds.observe(ms(encodeMs));
    this.snapshotBytes.set(bytes);
  }

  proposalApplied(msTaken: number): void {
    this.proposalSeconds.observe(ms(msTaken));
  }

  transacted(msTaken: number, db: TransactDb, outcome: 'committed' | 'failed' | 'error'): void {
    this.transactSeconds.observe({ db, outcome }, ms(msTaken));
  }

  projected(msTaken: number): void {
    this.projectionSeconds.observe(ms(msTaken));
  }
}

/** Why a member is not ready, or undefined when it is. */
export function notReady(central: CentralNode): string | undefined {
  const s = central.node.status();
  if (s.fatalError !== undefined) return `stopped on a storage error: ${s.fatalError.message}`;
  if (s.lead === 0) return 'no leader known';
  if (s.commit - s.appliedIndex > metricsLimits.readyApplyLagMax) return `applied ${s.appliedIndex} lags commit ${s.commit}`;
  return undefined;
}

/**
 * Serves /healthz, /readyz and /metrics on `host:port` (port 0 picks one). It holds at most
 * `connectionsMax` connections (a connection past them is closed as it is accepted, and counted
 * in ovnts_connections_refused{listener="metrics"}), and closes one that is slow to send its
 * request, so that silent clients free their places.
 */
export async function startMetricsServer(
  central: CentralNode,
  metrics: CentralMetrics,
  host: string,
  port: number,
  limits: { connectionsMax?: number; requestMs?: number } = {},
): Promise<{ port: number; close: () => Promise<void> }> {
  const connectionsMax = limits.connectionsMax ?? metricsLimits.connectionsMax;
  const requestMs = limits.requestMs ?? metricsLimits.requestMs;
  const server: Server = createServer({ connectionsCheckingInterval: metricsLimits.requestCheckMs }, (req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const text = (code: number, body: string, type = 'text/plain; charset=utf-8'): void => {
      res.writeHead(code, { 'content-type': type });
      res.end(body);
    };
    if (req.method !== 'GET') return text(405, 'GET only\n');
    if (path === '/healthz') {
      const fatal = central.node.status().fatalError;
      return fatal === undefined ? text(200, 'ok\n') : text(503, `stopped on a storage error: ${fatal.message}\n`);
    }
    if (path === '/readyz') {
      const why = notReady(central);
      return why === undefined ? text(200, 'ready\n') : text(503, `not ready: ${why}\n`);
    }
    if (path === '/metrics') {
      metrics.registry.metrics().then(
        (body) => text(200, body, metrics.registry.contentType),
        (err: unknown) => text(500, `${(err as Error).message}\n`),
      );
      return;
    }
    text(404, 'not found: try /healthz, /readyz or /metrics\n');
  });
  capConnections(server, connectionsMax, () => central.sessions.refuse('metrics'));
  // headersTimeout and requestTimeout start only with a request's first bytes; a socket idle
  // this long (one that never sends a byte, too) is destroyed.
  server.timeout = requestMs;
  server.headersTimeout = requestMs;
  server.requestTimeout = requestMs;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address();
  return {
    port: typeof address === 'object' && address !== null ? address.port : port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
