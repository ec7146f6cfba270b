// The RaftKv gRPC service (proto/raftkv.proto): a client door onto one RaftNode driving a
// KvStateMachine, and a client that follows the leader. Used by `ovnts raft-kv`, the
// multi-process tests and bench/raft. Errors become gRPC statuses in exactly one place
// (statusOf); a not-leader answer carries the leader's id in the "leader-id" trailer.
import { createHash } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import { loadProto, malformedReason, serviceDefinition } from './grpc-proto.js';
import { KvStateMachine, encodeKvCommand } from './kv-state-machine.js';
import type { KvResult, KvValue } from './kv-state-machine.js';
import type { RaftNode } from './node.js';
import { ProposalError } from './node.js';
import type { NodeId } from './types.js';

const serviceName = 'ovnts.raftkv.RaftKv';

export function kvServiceDefinition(): grpc.ServiceDefinition {
  return serviceDefinition(loadProto('raftkv.proto'), serviceName);
}

/** Limits of the client door. */
export const kvLimits = {
  keyBytesMax: 1024,
  valueBytesMax: 1024 * 1024,
  loadCountMax: 1_000_000,
  loadInFlightMax: 4096,
  /** Dump refuses a state larger than this (gRPC's default message limit is 4 MiB). */
  dumpBytesMax: 4 * 1024 * 1024 - 1024,
} as const;

interface PutRequest {
  key: string;
  value: Uint8Array;
  clientId: string;
  seq: number;
}
interface GetRequest {
  key: string;
  linearizable: boolean;
}

class BadRequest extends Error {}

/** The single place where an outcome becomes a gRPC status. */
function statusOf(err: unknown): Partial<grpc.StatusObject> {
  if (err instanceof ProposalError) {
    const metadata = new grpc.Metadata();
    switch (err.kind) {
      case 'not-leader':
        metadata.set('leader-id', String(err.leaderHint));
        return { code: grpc.status.FAILED_PRECONDITION, details: `not leader (leader ${err.leaderHint})`, metadata };
      case 'dropped':
        return { code: grpc.status.ABORTED, details: err.message };
      case 'timeout':
        return { code: grpc.status.DEADLINE_EXCEEDED, details: err.message };
      case 'stopped':
        return { code: grpc.status.UNAVAILABLE, details: err.message };
      case 'too-large':
        return { code: grpc.status.INVALID_ARGUMENT, details: err.message };
    }
  }
  if (err instanceof BadRequest) return { code: grpc.status.INVALID_ARGUMENT, details: err.message };
  return { code: grpc.status.INTERNAL, details: (err as Error).message };
}

function unary<Req, Res>(f: (req: Req) => Promise<Res>): grpc.handleUnaryCall<Req, Res> {
  return (call, callback) => {
    const malformed = malformedReason(call.request);
    if (malformed !== undefined) {
      callback(statusOf(new BadRequest(malformed)));
      return;
    }
    f(call.request).then(
      (res) => callback(null, res),
      (err: unknown) => callback(statusOf(err)),
    );
  };
}

export function kvServiceHandlers(node: RaftNode, kv: KvStateMachine): grpc.UntypedServiceImplementation {
  return {
    put: unary(async (req: PutRequest) => {
      if (req.key.length === 0 || Buffer.byteLength(req.key) > kvLimits.keyBytesMax) throw new BadRequest(`key must be 1 to ${kvLimits.keyBytesMax} bytes`);
      if (req.value.byteLength > kvLimits.valueBytesMax) throw new BadRequest(`value exceeds ${kvLimits.valueBytesMax} bytes`);
      const data = encodeKvCommand({ op: 'put', key: req.key, value: req.value });
      const out = await node.propose(data, req.clientId === '' ? undefined : { clientId: req.clientId, seq: req.seq });
      const result = out.result as KvResult;
      return { index: out.index, duplicate: result.kind === 'duplicate' };
    }),
    get: unary(async (req: GetRequest) => {
      const index = req.linearizable ? await node.readIndex() : node.status().appliedIndex;
      const v = kv.get(req.key);
      const value = v === undefined ? new Uint8Array() : typeof v === 'string' ? Buffer.from(v) : v;
      return { found: v !== undefined, value, index };
    }),
    status: unary(async () => {
      const s = node.status();
      return { id: s.id, role: s.role, term: s.term, leader: s.lead, commit: s.commit, applied: s.appliedIndex, lastIndex: s.lastIndex };
    }),
    load: unary(async (req: { count: number; inFlight: number; valueBytes: number }) => {
      if (req.count < 1 || req.count > kvLimits.loadCountMax) throw new BadRequest(`count must be 1 to ${kvLimits.loadCountMax}`);
      if (req.inFlight < 1 || req.inFlight > kvLimits.loadInFlightMax) throw new BadRequest(`in_flight must be 1 to ${kvLimits.loadInFlightMax}`);
      if (req.valueBytes > kvLimits.valueBytesMax) throw new BadRequest(`value_bytes exceeds ${kvLimits.valueBytesMax}`);
      const value = new Uint8Array(req.valueBytes).fill(120);
      const latencies: number[] = [];
      let next = 0;
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: req.inFlight }, async () => {
          while (next < req.count) {
            const i = next++;
            const s = performance.now();
            await node.propose(encodeKvCommand({ op: 'put', key: `load-${i}`, value }));
            latencies.push(performance.now() - s);
          }
        }),
      );
      const seconds = (performance.now() - t0) / 1000;
      latencies.sort((a, b) => a - b);
      const at = (p: number): number => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] ?? 0;
      return { commitsPerS: req.count / seconds, p50Ms: at(0.5), p99Ms: at(0.99) };
    }),
    dump: unary(async () => {
      const applied = node.status().appliedIndex;
      const snapshot = kv.snapshot();
      if (snapshot.byteLength > kvLimits.dumpBytesMax) throw new BadRequest(`state is ${snapshot.byteLength} bytes, over the dump limit of ${kvLimits.dumpBytesMax}`);
      return { applied, snapshot };
    }),
    digest: unary(async () => {
      // snapshot() and the applied index are read in one synchronous step: they agree.
      const applied = node.status().appliedIndex;
      const sha256 = createHash('sha256').update(kv.snapshot()).digest();
      return { applied, sha256, keys: kv.size };
    }),
  };
}

const Client = grpc.makeGenericClientConstructor(kvServiceDefinition(), 'RaftKv');

type UnaryFn = (req: unknown, options: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res: unknown) => void) => void;

export interface KvClientOptions {
  /** Client address of every node, by node id. */
  readonly nodes: ReadonlyMap<NodeId, string>;
  /** Per-call deadline. */
  readonly callTimeoutMs?: number;
  /** How long one operation keeps retrying across leader changes before giving up. */
  readonly operationTimeoutMs?: number;
}

export class KvClientError extends Error {
  constructor(
    message: string,
    readonly code: grpc.status | undefined,
  ) {
    super(message);
  }
}

/**
 * Talks to whichever node leads: starts with a guess, follows "leader-id" hints, and on an
 * unreachable node or an unknown leader tries the next node after a short pause. A put with a
 * client id is safe to retry: the state machine applies it at most once.
 */
export class KvClient {
  private readonly clients = new Map<NodeId, grpc.Client>();
  private leader: NodeId;
  private readonly ids: NodeId[];
  private readonly callTimeoutMs: number;
  private readonly operationTimeoutMs: number;

  constructor(options: KvClientOptions) {
    this.ids = [...options.nodes.keys()].sort((a, b) => a - b);
    for (const [id, address] of options.nodes) this.clients.set(id, new Client(address, grpc.credentials.createInsecure()));
    this.leader = this.ids[0] ?? 0;
    this.callTimeoutMs = options.callTimeoutMs ?? 2000;
    this.operationTimeoutMs = options.operationTimeoutMs ?? 30_000;
  }

  private call(id: NodeId, method: 'put' | 'get' | 'status' | 'digest' | 'load' | 'dump', req: unknown, timeoutMs = this.callTimeoutMs): Promise<unknown> {
    const client = this.clients.get(id) as unknown as Record<string, UnaryFn>;
    return new Promise((resolve, reject) => {
      (client[method] as UnaryFn).call(client, req, { deadline: Date.now() + timeoutMs }, (err, res) => (err ? reject(err) : resolve(res)));
    });
  }

  private async withLeader(method: 'put' | 'get', req: unknown): Promise<unknown> {
    const deadline = Date.now() + this.operationTimeoutMs;
    let lastError: grpc.ServiceError | undefined;
    for (let attempt = 0; Date.now() < deadline; attempt++) {
      try {
        return await this.call(this.leader, method, req);
      } catch (e) {
        const err = e as grpc.ServiceError;
        lastError = err;
        if (err.code === grpc.status.INVALID_ARGUMENT) throw new KvClientError(err.details, err.code);
        const hint = Number(err.metadata?.get('leader-id')[0] ?? 0);
        if (err.code === grpc.status.FAILED_PRECONDITION && hint > 0 && this.clients.has(hint) && hint !== this.leader) {
          this.leader = hint;
          continue;
        }
        // No usable hint: the node is down, or there is no leader yet. Try the next one.
        this.leader = this.ids[(this.ids.indexOf(this.leader) + 1) % this.ids.length] ?? this.leader;
        await new Promise((r) => setTimeout(r, Math.min(100, 5 * (attempt + 1))));
      }
    }
    throw new KvClientError(`no answer within ${this.operationTimeoutMs} ms: ${lastError?.details ?? 'no attempt'}`, lastError?.code);
  }

  async put(key: string, value: Uint8Array, tag?: { clientId: string; seq: number }): Promise<{ index: number; duplicate: boolean }> {
    return (await this.withLeader('put', { key, value, clientId: tag?.clientId ?? '', seq: tag?.seq ?? 0 })) as { index: number; duplicate: boolean };
  }

  async get(key: string): Promise<{ found: boolean; value: Uint8Array; index: number }> {
    return (await this.withLeader('get', { key, linearizable: true })) as { found: boolean; value: Uint8Array; index: number };
  }

  /** A local (possibly stale) read from one particular node. */
  async getLocal(id: NodeId, key: string): Promise<{ found: boolean; value: Uint8Array; index: number }> {
    return (await this.call(id, 'get', { key, linearizable: false })) as { found: boolean; value: Uint8Array; index: number };
  }

  async status(id: NodeId): Promise<{ id: number; role: string; term: number; leader: number; commit: number; applied: number; lastIndex: number }> {
    return (await this.call(id, 'status', {})) as { id: number; role: string; term: number; leader: number; commit: number; applied: number; lastIndex: number };
  }

  async digest(id: NodeId): Promise<{ applied: number; sha256: Uint8Array; keys: number }> {
    return (await this.call(id, 'digest', {})) as { applied: number; sha256: Uint8Array; keys: number };
  }

  /** The whole state of node `id`, as a key → value map, with the applied index it reflects. */
  async dump(id: NodeId): Promise<{ applied: number; entries: Map<string, KvValue> }> {
    const r = (await this.call(id, 'dump', {})) as { applied: number; snapshot: Uint8Array };
    const kv = new KvStateMachine();
    kv.restore(r.snapshot);
    return { applied: r.applied, entries: kv.entries() };
  }

  /** Runs the Load benchmark door on node `id` (which must lead). */
  async load(id: NodeId, count: number, inFlight: number, valueBytes: number): Promise<{ commitsPerS: number; p50Ms: number; p99Ms: number }> {
    return (await this.call(id, 'load', { count, inFlight, valueBytes }, 600_000)) as { commitsPerS: number; p50Ms: number; p99Ms: number };
  }

  close(): void {
    for (const c of this.clients.values()) c.close();
  }
}
