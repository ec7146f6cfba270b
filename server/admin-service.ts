// The Admin gRPC service (proto/admin.proto): status, leadership transfer, the replicated
// election timer, and consistent snapshots for backups. Errors map to gRPC codes through the
// Northbound door's statusOf, the one place that does it.
import { createHash } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import { loadProto, serviceDefinition } from '../cluster/grpc-proto.js';
import { applyConfChange, type ConfChange } from '../cluster/conf-change.js';
import { channelCredentials, tlsChannelOptions, type TlsCredentials } from '../cluster/tls.js';
import { ProposalError } from '../cluster/node.js';
import type { NodeId } from '../cluster/types.js';
import { compareAtoms, isMapValue, type Atom, type Row, type Value } from '../ovsdb/index.js';
import { encodeDatabase } from '../ovsdb/codec.js';
import { NB_SCHEMA_JSON, SB_SCHEMA_JSON } from '../ovsdb/schemas/index.js';
import { CentralNodeError, type CentralNode } from './central-node.js';
import { statusOf } from './northbound-service.js';
import type { SessionCounts } from './sessions.js';
import { snapshotFileFormat, type SnapshotHeader } from './snapshot-file.js';

const serviceName = 'ovnts.admin.Admin';

export function adminDefinition(): grpc.ServiceDefinition {
  return serviceDefinition(loadProto('admin.proto'), serviceName);
}

export const adminLimits = {
  /** Bytes of snapshot data per streamed message. */
  snapshotChunkBytes: 1024 * 1024,
  /** Rows measured between two turns of the event loop while a snapshot is prepared for saving. */
  snapshotRowsPerStep: 2000,
  /** How long a leadership transfer may take before the call reports a timeout. */
  transferWaitMs: 10_000,
} as const;

export interface StatusReplyJson {
  id: number;
  clusterId: string;
  role: string;
  term: number;
  vote: number;
  leader: number;
  leaderAddress: string;
  commit: number;
  applied: number;
  firstIndex: number;
  lastIndex: number;
  snapshotIndex: number;
  voters: number[];
  learners: number[];
  removed: number[];
  electionTicks: number;
  tickMs: number;
  peers: { id: number; address: string; hasProgress: boolean; match: number; next: number; state: string; learner: boolean; lastContactMsAgo: number; applyVersionMax: number }[];
  revision: number;
  proposalsPending: number;
  readsPending: number;
  historyMinRevision: number;
  fatalError: string;
  /** Empty unless the request asked for digests (see stateDigests). */
  nbSha256: string;
  sbSha256: string;
  /** Absent from a member that predates it. */
  sessions: SessionCounts | null;
  logBytesSinceSnapshot: number;
  lastSnapshotMs: number;
  snapshotsTaken: number;
  snapshotHandoffs: number;
  /** 0 from a member that predates apply versions. */
  applyVersion: number;
  applyVersionMax: number;
}

/** A value with its set elements and map entries in atom order, whatever order it was built in. */
function canonicalValue(v: Value): unknown {
  if (isMapValue(v)) return [...(v as ReadonlyMap<Atom, Atom>)].sort((a, b) => compareAtoms(a[0], b[0]));
  if (Array.isArray(v)) return [...(v as readonly Atom[])].sort(compareAtoms);
  return v;
}

/**
 * SHA-256 digests (hex) of this replica's state at its applied index, taken in one synchronous
 * step: the NB database as its snapshot encodes it (byte for byte equal on replicas that
 * applied the same prefix, row order included), and the SB view — northd's rows and the
 * chassis-owned tables — with tables, rows (by UUID) and set and map elements in sorted order,
 * columns in schema order. Replicas at the same applied index must agree on both; a
 * difference is a replica that diverged.
 */
export function stateDigests(central: CentralNode): { nbSha256: string; sbSha256: string } {
  const nbSha256 = createHash('sha256').update(encodeDatabase(central.sm.nb)).digest('hex');
  const sb = createHash('sha256');
  const view = central.sbView();
  for (const name of [...view.schema.tables.keys()].sort()) {
    const ts = view.schema.tables.get(name);
    if (ts === undefined) continue;
    const rows = view.rows(name);
    const columns = [...ts.columns.keys()];
    sb.update(JSON.stringify([name, rows.size]));
    for (const uuid of [...rows.keys()].sort()) {
      const row = rows.get(uuid) as Row;
      sb.update(JSON.stringify([row._uuid, row._version, ...columns.map((c) => canonicalValue(row[c] as Value))]));
    }
  }
  return { nbSha256, sbSha256: sb.digest('hex') };
}

export interface EngineStatsJson {
  id: number;
  revision: number;
  nodes: { name: string; recomputes: number; incrementalRuns: number }[];
}

/** The member's northd engine counters, per projection node in run order. */
export function engineStatsOf(central: CentralNode): EngineStatsJson {
  const engine = central.northd?.stats().engine ?? {};
  return {
    id: central.id,
    revision: central.revision,
    nodes: Object.entries(engine).map(([name, s]) => ({ name, recomputes: s.recomputes, incrementalRuns: s.incrementalRuns })),
  };
}

export function statusOfCentral(central: CentralNode, digests = false): StatusReplyJson {
  const s = central.node.status();
  return {
    ...(digests ? stateDigests(central) : { nbSha256: '', sbSha256: '' }),
    id: s.id,
    clusterId: central.clusterId,
    role: s.role,
    term: s.term,
    vote: s.vote,
    leader: s.lead,
    leaderAddress: central.node.addressOf(s.lead) ?? '',
    commit: s.commit,
    applied: s.appliedIndex,
    firstIndex: s.firstIndex,
    lastIndex: s.lastIndex,
    snapshotIndex: s.snapshotIndex,
    voters: [...s.conf.voters],
    learners: [...s.conf.learners],
    removed: [...s.conf.removed],
    electionTicks: s.electionTicks,
    tickMs: s.tickMs,
    peers: s.peers.map((p) => ({
      id: p.id,
      address: p.address ?? '',
      hasProgress: p.match !== undefined,
      match: p.match ?? 0,
      next: p.next ?? 0,
      state: p.state ?? '',
      learner: p.learner ?? false,
      lastContactMsAgo: p.lastContactMsAgo ?? -1,
      applyVersionMax: central.peerApplyVersionMax(p.id) ?? 0,
    })),
    revision: central.revision,
    proposalsPending: s.proposalsPending,
    readsPending: s.readsPending,
    historyMinRevision: central.history.minRevision,
    fatalError: s.fatalError?.message ?? '',
    sessions: central.sessions.all(),
    logBytesSinceSnapshot: s.logBytesSinceSnapshot,
    lastSnapshotMs: s.lastSnapshotMs ?? -1,
    snapshotsTaken: s.counters.snapshotsTaken,
    snapshotHandoffs: s.counters.snapshotHandoffs,
    applyVersion: central.sm.applyVersion,
    applyVersionMax: central.sm.applyVersionMax,
  };
}

type Handler<Req, Res> = (call: grpc.ServerUnaryCall<Req, Res>, cb: grpc.sendUnaryData<Res>) => void;

function unary<Req, Res>(f: (req: Req) => Promise<Res>): Handler<Req, Res> {
  return (call, cb) => {
    f(call.request).then(
      (res) => cb(null, res),
      (err: unknown) => cb(statusOf(err) as grpc.ServiceError, null),
    );
  };
}

function notLeader(central: CentralNode): CentralNodeError {
  const lead = central.node.status().lead;
  const where = lead === 0 ? 'no leader is known yet' : `the leader is node ${lead} (${central.node.addressOf(lead) ?? 'address unknown'})`;
  return new CentralNodeError('unavailable', `node ${central.id} is not the leader: ${where}; ask the leader`);
}

function waitForLeader(central: CentralNode, to: NodeId, timeoutMs: number): Promise<NodeId> {
  return new Promise((resolve, reject) => {
    const check = (): boolean => {
      const lead = central.node.status().lead;
      if (lead !== to) return false;
      off();
      clearTimeout(timer);
      resolve(lead);
      return true;
    };
    const off = central.node.onProgress(() => void check());
    const timer = setTimeout(() => {
      off();
      reject(new CentralNodeError('timeout', `node ${to} did not take over within ${timeoutMs} ms (leader is ${central.node.status().lead})`));
    }, timeoutMs);
    check();
  });
}

export function adminHandlers(central: CentralNode): grpc.UntypedServiceImplementation {
  return {
    status: unary(async (req: { digests: boolean }) => statusOfCentral(central, req.digests)),
    engineStats: unary(async () => engineStatsOf(central)),
    transferLeader: unary(async (req: { to: number }) => {
      if (central.node.status().role !== 'leader') throw notLeader(central);
      if (req.to === central.id) return { leader: central.id };
      const r = central.node.transferLeadership(req.to);
      if (r.kind === 'not-leader') throw notLeader(central);
      if (r.kind === 'invalid') throw new CentralNodeError('bad-request', `cannot transfer leadership to ${req.to}: ${r.reason}`);
      return { leader: await waitForLeader(central, req.to, adminLimits.transferWaitMs) };
    }),
    changeElectionTimer: unary(async (req: { electionMs: number }) => {
      const tickMs = central.node.status().tickMs;
      const ticks = Math.round(req.electionMs / tickMs);
      if (!Number.isInteger(ticks) || ticks < 2) throw new CentralNodeError('bad-request', `the election timer must be at least 2 ticks (${2 * tickMs} ms), got ${req.electionMs} ms`);
      try {
        const out = await central.node.proposeConfChange({ kind: 'set-election-ticks', ticks });
        return { electionTicks: out.conf.electionTicks ?? ticks, index: out.index };
      } catch (err) {
        if (err instanceof ProposalError && err.kind === 'not-leader') throw notLeader(central);
        if (err instanceof ProposalError) throw new CentralNodeError('unavailable', err.message);
        throw err;
      }
    }),
    snapshotSave: (call: grpc.ServerWritableStream<unknown, unknown>) => void snapshotSave(central, call),
    addMember: unary(async (req: { id: number; raftAddress: string; nbAddress: string; learner: boolean }) => {
      if (!/^[^\s:]+:\d+$/.test(req.raftAddress)) throw new CentralNodeError('bad-request', `raft_address must be host:port, got "${req.raftAddress}"`);
      if (req.nbAddress !== '' && !/^[^\s:]+:\d+$/.test(req.nbAddress)) throw new CentralNodeError('bad-request', `nb_address must be host:port, got "${req.nbAddress}"`);
      const s = central.node.status();
      const id = req.id !== 0 ? req.id : Math.max(0, ...s.conf.voters, ...s.conf.learners, ...s.conf.removed, ...s.peers.map((p) => p.id)) + 1;
      return changeMembership(central, {
        kind: req.learner ? 'add-learner' : 'add-voter',
        id,
        address: req.raftAddress,
        ...(req.nbAddress !== '' ? { clientAddress: req.nbAddress } : {}),
      });
    }),
    promoteMember: unary(async (req: { id: number }) => changeMembership(central, { kind: 'promote-learner', id: req.id })),
    removeMember: unary(async (req: { id: number }) => changeMembership(central, { kind: 'remove', id: req.id })),
  };
}

/** Proposes one membership change on the leader; answers once it applied there. */
async function changeMembership(central: CentralNode, cc: ConfChange): Promise<unknown> {
  if (central.node.status().role !== 'leader') throw notLeader(central);
  const before = central.node.status().conf;
  const check = applyConfChange(before, cc, 1);
  if (!check.ok) throw new CentralNodeError('bad-request', check.reason);
  try {
    const out = await central.node.proposeConfChange(cc);
    const id = 'id' in cc ? cc.id : 0;
    const applied = out.conf.voters.includes(id) || out.conf.learners.includes(id) || out.conf.removed.includes(id);
    if (!applied) throw new CentralNodeError('bad-request', `the change was refused when it applied (configuration: voters ${out.conf.voters.join(',')})`);
    return { id, index: out.index, voters: out.conf.voters, learners: out.conf.learners, removed: out.conf.removed, clusterId: central.clusterId };
  } catch (err) {
    if (err instanceof ProposalError && err.kind === 'not-leader') throw notLeader(central);
    if (err instanceof ProposalError) throw new CentralNodeError('unavailable', err.message);
    throw err;
  }
}

/** Lets timers and I/O run (Raft ticks, heartbeats) between steps of a long job. */
const yieldToEventLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Streams a consistent snapshot to the caller without holding it: the state is captured (row
 * references), measured in steps (the header carries the size), then encoded a piece at a time
 * as the stream drains. The event loop runs between steps and pieces, so a save from the
 * leader does not hold its heartbeats.
 */
async function snapshotSave(central: CentralNode, call: grpc.ServerWritableStream<unknown, unknown>): Promise<void> {
  let gone = false;
  const goneNow = (): void => {
    gone = true;
  };
  call.once('cancelled', goneNow);
  call.once('close', goneNow);
  let snap: Awaited<ReturnType<CentralNode['consistentSnapshot']>>;
  try {
    snap = await central.consistentSnapshot();
  } catch (err) {
    // An 'error' event is how a grpc-js server stream sends a status: destroy() sent none, and
    // a client without a deadline (`ovnts snapshot save`) waited for ever.
    call.emit('error', statusOf(err));
    return;
  }
  const measuring = snap.measure(adminLimits.snapshotRowsPerStep);
  let measured = measuring.next();
  for (; measured.done !== true; measured = measuring.next()) {
    await yieldToEventLoop();
    if (gone) return;
  }
  const header: SnapshotHeader = {
    format: snapshotFileFormat,
    clusterId: central.clusterId,
    revision: snap.revision,
    nbSchema: { name: NB_SCHEMA_JSON.name, version: NB_SCHEMA_JSON.version ?? '' },
    sbSchema: { name: SB_SCHEMA_JSON.name, version: SB_SCHEMA_JSON.version ?? '' },
    createdAt: new Date().toISOString(),
    dataBytes: measured.value,
  };
  const headerJson = JSON.stringify(header);
  const hash = createHash('sha256').update(headerJson, 'utf8');
  // Written with backpressure: a slow reader holds up the encoding, not this member's memory.
  const write = (msg: unknown): Promise<void> =>
    new Promise((resolve) => {
      if (call.write(msg)) return resolve();
      const done = (): void => {
        call.off('drain', done);
        call.off('cancelled', done);
        call.off('close', done);
        resolve();
      };
      call.on('drain', done);
      call.on('cancelled', done);
      call.on('close', done);
    });
  await write({ headerJson });
  for (const piece of snap.pieces(adminLimits.snapshotChunkBytes)) {
    // A piece may exceed a message (northd's history comes whole): cut it to size.
    for (let off = 0; off < piece.byteLength; off += adminLimits.snapshotChunkBytes) {
      if (gone) return;
      const chunk = piece.subarray(off, off + adminLimits.snapshotChunkBytes);
      hash.update(chunk);
      await write({ data: chunk });
    }
    await yieldToEventLoop();
  }
  if (gone) return;
  await write({ sha256: hash.digest() });
  call.end();
}

export interface MemberReply {
  id: number;
  index: number;
  voters: number[];
  learners: number[];
  removed: number[];
  clusterId: string;
}

/** The client side of the Admin service. */
export class AdminClient {
  private static ctor: grpc.ServiceClientConstructor | undefined;
  private readonly client: grpc.Client;

  /** With `tls`, the member is reached over TLS with that identity (cluster/tls.ts). */
  constructor(
    readonly address: string,
    private readonly callTimeoutMs = 15_000,
    tls?: TlsCredentials,
  ) {
    AdminClient.ctor ??= grpc.makeGenericClientConstructor(adminDefinition(), 'Admin');
    this.client = new AdminClient.ctor(address, channelCredentials(tls), tlsChannelOptions(tls, address));
  }

  private call(method: string, req: unknown): Promise<unknown> {
    const c = this.client as unknown as Record<string, (req: unknown, o: grpc.CallOptions, cb: (e: grpc.ServiceError | null, r: unknown) => void) => void>;
    const f = c[method] as (req: unknown, o: grpc.CallOptions, cb: (e: grpc.ServiceError | null, r: unknown) => void) => void;
    return new Promise((resolve, reject) => f.call(c, req, { deadline: Date.now() + this.callTimeoutMs }, (e, r) => (e ? reject(e) : resolve(r))));
  }

  /** With `digests`, the reply carries the state digests at its applied index (stateDigests). */
  async status(options: { digests?: boolean } = {}): Promise<StatusReplyJson> {
    return (await this.call('status', { digests: options.digests === true })) as StatusReplyJson;
  }

  async engineStats(): Promise<EngineStatsJson> {
    const r = (await this.call('engineStats', {})) as { id: number; revision: number | string; nodes?: { name: string; recomputes: number | string; incrementalRuns: number | string }[] };
    return { id: r.id, revision: Number(r.revision), nodes: (r.nodes ?? []).map((n) => ({ name: n.name, recomputes: Number(n.recomputes), incrementalRuns: Number(n.incrementalRuns) })) };
  }

  async transferLeader(to: number): Promise<number> {
    return ((await this.call('transferLeader', { to })) as { leader: number }).leader;
  }

  async changeElectionTimer(electionMs: number): Promise<{ electionTicks: number; index: number }> {
    return (await this.call('changeElectionTimer', { electionMs })) as { electionTicks: number; index: number };
  }

  async addMember(req: { id?: number; raftAddress: string; nbAddress?: string; learner?: boolean }): Promise<MemberReply> {
    return (await this.call('addMember', { id: req.id ?? 0, raftAddress: req.raftAddress, nbAddress: req.nbAddress ?? '', learner: req.learner ?? false })) as MemberReply;
  }

  async promoteMember(id: number): Promise<MemberReply> {
    return (await this.call('promoteMember', { id })) as MemberReply;
  }

  async removeMember(id: number): Promise<MemberReply> {
    return (await this.call('removeMember', { id })) as MemberReply;
  }

  /** Streams a consistent snapshot: header, data chunks, then the checksum. */
  snapshotSave(): grpc.ClientReadableStream<{ headerJson: string; data: Uint8Array; sha256: Uint8Array }> {
    const c = this.client as unknown as Record<string, (req: unknown) => grpc.ClientReadableStream<never>>;
    return (c.snapshotSave as (req: unknown) => grpc.ClientReadableStream<never>).call(c, {});
  }

  close(): void {
    this.client.close();
  }
}
