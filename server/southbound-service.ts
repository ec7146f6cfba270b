// The Southbound gRPC service (proto/southbound.proto) over a CentralNode: the per-chassis
// agent stream and the chassis Transact. The stream's logic is in Fanout (sb-fanout.ts); this
// file validates what agents send (a message that is not what the protocol says ends the stream
// with INVALID_ARGUMENT before anything of it takes effect), turns gRPC streams into sinks,
// registers chassis from their Hello, writes their acks (agent-writes.ts) and sends progress.
import { isIP } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { MalformedRequestError, malformedReason } from '../cluster/grpc-proto.js';
import { isUuid } from '../ovsdb/index.js';
import { AckWriter, type AckWriterTarget, registrationOps } from './agent-writes.js';
import type { CentralNode } from './central-node.js';
import { CentralNodeError } from './central-node.js';
import { NONE, type NodeId } from '../cluster/types.js';
import { channelCredentials, peerCommonName, tlsChannelOptions, type TlsCredentials } from '../cluster/tls.js';
import { AckRelay, type AckRelayMessage, malformedRelay } from './live-acks.js';
import { statusOf } from './northbound-service.js';
import type { FanoutLimits, Session, SessionHello, StreamSink } from './sb-fanout.js';
import { Fanout, StreamEnd } from './sb-fanout.js';

import { southboundDefinition } from './southbound-wire.js';

export { southboundDefinition };

let clientCtor: grpc.ServiceClientConstructor | undefined;
/** The Southbound service's client class (members relaying acks to each other). */
function southboundClient(): grpc.ServiceClientConstructor {
  clientCtor ??= grpc.makeGenericClientConstructor(southboundDefinition(), 'Southbound');
  return clientCtor;
}

/** Named limits of the Southbound door. */
export const southboundLimits = {
  /** How long a Hello waits for this member to apply the agent's revision before UNAVAILABLE. */
  helloWaitMsMax: 5_000,
  /** Interval of progress steps to idle groups. */
  progressIntervalMs: 2_000,
  /** Messages an agent may send while its Hello is being answered. */
  pendingMessagesMax: 64,
  chassisNameCharsMax: 256,
  hostnameCharsMax: 256,
  encapsMax: 16,
  ifaceIdCharsMax: 256,
  ackErrorCharsMax: 4096,
  /** Attempts to register a chassis (a concurrent registration may make the first fail). */
  registerAttemptsMax: 3,
  /** Hello.set_difference_tables: names, and characters per name. */
  setDifferenceTablesMax: 64,
  tableNameCharsMax: 64,
  /** Hello.view (an SB view id is 16 characters). */
  viewCharsMax: 64,
} as const;

interface AgentMessage {
  readonly kind?: string;
  readonly hello?: {
    chassis: string;
    hostname: string;
    encaps: { type: string; ip: string }[];
    lastRevision: number;
    heldDatapaths: string[];
    ifaceIds: string[];
    monitorAll: boolean;
    setDifferenceTables?: string[];
    view?: string;
  };
  readonly ack?: { revision: number; nbCfg: number; error: string };
  readonly interest?: { ifaceIds: string[] };
}

const encapTypes = new Set(['geneve', 'stt', 'vxlan']);

function invalid(message: string): StreamEnd {
  return new StreamEnd('invalid', message);
}

function checkIfaceIds(ids: readonly string[]): void {
  for (const id of ids) {
    if (id.length === 0 || id.length > southboundLimits.ifaceIdCharsMax) throw invalid(`an iface-id is 1 to ${southboundLimits.ifaceIdCharsMax} characters, got ${JSON.stringify(id.slice(0, 64))}`);
  }
}

/** A caller's id for RBAC: the common name of its TLS certificate, undefined for none. */
function peerIdOf(call: Pick<grpc.ServerUnaryCall<unknown, unknown>, 'getAuthContext'>): string | undefined {
  return peerCommonName(call.getAuthContext().sslPeerCertificate);
}

/** A Hello as the protocol allows it, or StreamEnd('invalid') saying what is wrong. */
export function validateHello(h: NonNullable<AgentMessage['hello']>): SessionHello & { hostname: string; encaps: { type: string; ip: string }[] } {
  const name = h.chassis;
  // eslint-disable-next-line no-control-regex
  if (name.length === 0 || name.length > southboundLimits.chassisNameCharsMax || /[\u0000-\u001f]/.test(name)) throw invalid(`Hello.chassis must be 1 to ${southboundLimits.chassisNameCharsMax} printable characters`);
  if (h.hostname.length > southboundLimits.hostnameCharsMax) throw invalid(`Hello.hostname is at most ${southboundLimits.hostnameCharsMax} characters`);
  if (h.encaps.length === 0 || h.encaps.length > southboundLimits.encapsMax) throw invalid(`Hello.encaps: 1 to ${southboundLimits.encapsMax} encapsulations, got ${h.encaps.length}`);
  for (const e of h.encaps) {
    if (!encapTypes.has(e.type)) throw invalid(`Hello.encaps: type ${JSON.stringify(e.type)} is not geneve, stt or vxlan`);
    if (isIP(e.ip) === 0) throw invalid(`Hello.encaps: ${JSON.stringify(e.ip.slice(0, 64))} is not an IP address`);
  }
  if (!Number.isSafeInteger(h.lastRevision) || h.lastRevision < 0) throw invalid(`Hello.last_revision ${h.lastRevision} is not a revision`);
  for (const d of h.heldDatapaths) if (!isUuid(d)) throw invalid(`Hello.held_datapaths: ${JSON.stringify(String(d).slice(0, 64))} is not a uuid`);
  checkIfaceIds(h.ifaceIds);
  const diffTables = h.setDifferenceTables ?? [];
  if (diffTables.length > southboundLimits.setDifferenceTablesMax) throw invalid(`Hello.set_difference_tables: at most ${southboundLimits.setDifferenceTablesMax} tables, got ${diffTables.length}`);
  for (const t of diffTables) if (t.length === 0 || t.length > southboundLimits.tableNameCharsMax) throw invalid(`Hello.set_difference_tables: a table name is 1 to ${southboundLimits.tableNameCharsMax} characters`);
  const view = h.view ?? '';
  if (view.length > southboundLimits.viewCharsMax) throw invalid(`Hello.view is at most ${southboundLimits.viewCharsMax} characters`);
  return {
    chassis: name, hostname: h.hostname, encaps: h.encaps, lastRevision: h.lastRevision, heldDatapaths: h.heldDatapaths, ifaceIds: h.ifaceIds, monitorAll: h.monitorAll,
    setDifferenceTables: diffTables, view,
  };
}

export interface SouthboundServiceOptions {
  readonly limits?: Partial<FanoutLimits>;
  readonly progressIntervalMs?: number;
  /**
   * The other members' Southbound addresses (asked as acks come): this member's agents' acks
   * are relayed to them (server/live-acks.ts). Without it, they are not.
   */
  readonly relayPeers?: () => ReadonlyMap<NodeId, string>;
  /** Writes the acks' Chassis_Private updates (default: this member's transact; tests hold it back). */
  readonly ackTransact?: AckWriterTarget['transact'];
  /** How long this member, when not the leader, holds its agents' acks for the leader to write (default ackLimits.followerHoldMs). */
  readonly ackFollowerHoldMs?: number;
  /** The member's TLS identity, with which acks are relayed to the other members. */
  readonly tls?: TlsCredentials;
  /**
   * An RBAC role the agents' chassis writes are held to (OVN's "ovn-controller"), as a
   * Connection row's role holds ovn-controller's on an SB remote; the client's id is the common
   * name of its certificate, and an agent stream's Hello must name that chassis. Needs the
   * gRPC endpoints on TLS with client certificates (without one there is no id to hold to).
   * Absent or empty: agents are trusted with any chassis, as on an SB remote without a role.
   */
  readonly agentRole?: string;
}

/** The agent streams and chassis writes of one member. */
export class SouthboundService {
  readonly fanout: Fanout;
  readonly acks: AckWriter;
  readonly relay: AckRelay | undefined;
  private readonly off: (() => void)[] = [];
  private readonly timer: NodeJS.Timeout;
  /** Registration failures, for status and tests. */
  registrationFailures = 0;
  /** SouthboundServiceOptions.agentRole, undefined for none. */
  private readonly agentRole: string | undefined;
  /** Whether the leader writes the acks other members relay to it (not under an agent role). */
  private readonly leaderWritesRelayed: boolean;

  constructor(
    private readonly central: CentralNode,
    options: SouthboundServiceOptions = {},
  ) {
    const feed = central.feed('OVN_Southbound');
    this.agentRole = options.agentRole === undefined || options.agentRole === '' ? undefined : options.agentRole;
    // The leader writes every member's acks (agent-writes.ts): its batch waits for the agents of
    // every member, the others hold theirs for it while they relay to it. Not under an agent
    // role: the relay takes any certificate of the CA, an agent's too, so there each member
    // writes only the acks of the streams it checked (docs/tls.md).
    this.leaderWritesRelayed = this.agentRole === undefined;
    this.acks = new AckWriter({ transact: options.ackTransact ?? ((ops, db) => central.transact(ops, db)), rows: feed.rows }, Date.now, {
      lagging: (nbCfg) => this.fanout.lagging(nbCfg) || (this.leads() && !central.acknowledgedEverywhere(nbCfg)),
      leaderWrites: () => {
        if (!this.leaderWritesRelayed || this.relay === undefined || !this.relay.open) return false;
        const { role, lead } = central.node.leadership();
        return role !== 'leader' && lead !== NONE;
      },
      ...(options.ackFollowerHoldMs !== undefined ? { followerHoldMs: options.ackFollowerHoldMs } : {}),
    });
    this.fanout = new Fanout(
      { schema: feed.schema, rows: feed.rows, history: feed.history, revision: () => central.revision },
      { member: central.id, view: central.sbViewId, onAck: (chassis, nbCfg) => this.onAck(chassis, nbCfg), ...(options.limits ? { limits: options.limits } : {}) },
    );
    const peers = options.relayPeers;
    const tls = options.tls;
    this.relay = peers === undefined ? undefined : new AckRelay({ peers, member: central.id, makeClient: (address) => new (southboundClient())(address, channelCredentials(tls), tlsChannelOptions(tls, address)) });
    this.off.push(feed.onChange((e) => this.fanout.commit(e.revision, e.delta)));
    this.off.push(central.onRestore((revision) => this.fanout.restore(revision)));
    this.timer = setInterval(() => this.fanout.progress(), options.progressIntervalMs ?? southboundLimits.progressIntervalMs);
    this.timer.unref();
  }

  private leads(): boolean {
    return this.central.node.leadership().role === 'leader';
  }

  close(): void {
    clearInterval(this.timer);
    for (const f of this.off) f();
    this.acks.close();
    this.relay?.close();
  }

  /**
   * An agent here acknowledged nb_cfg: written to its Chassis_Private row (AckWriter), and
   * meanwhile counted by Wait(HV) on this member and, relayed, on the others.
   */
  private onAck(chassis: string, nbCfg: number): void {
    // Counted first: the writer's batch waits for what every chassis has acknowledged.
    const row = this.acks.privateRow(chassis);
    if (row !== undefined && (row.nb_cfg as number) < nbCfg && this.central.liveAcks.note(row._uuid, nbCfg)) this.relay?.send(row._uuid, nbCfg);
    this.acks.record(chassis, nbCfg);
  }

  /**
   * Acks another member's agents sent it (see onAck): counted here until they are committed,
   * and written by the leader.
   */
  private relayed(call: grpc.ServerReadableStream<AckRelayMessage, unknown>, callback: grpc.sendUnaryData<unknown>): void {
    let done = false;
    const finish = (err: Partial<grpc.StatusObject> | null): void => {
      if (done) return;
      done = true;
      callback(err, err === null ? {} : undefined);
    };
    call.on('data', (m: AckRelayMessage) => {
      if (done) return;
      const bad = malformedReason(m) ?? malformedRelay(m);
      if (bad !== undefined) {
        finish({ code: grpc.status.INVALID_ARGUMENT, details: bad });
        return;
      }
      const leads = this.leaderWritesRelayed && this.leads();
      for (const a of m.acks) {
        this.central.liveAcks.note(a.chassisPrivate, a.nbCfg);
        // The leader writes the other members' acks too (server/agent-writes.ts).
        if (leads) this.acks.recordRelayed(a.chassisPrivate, a.nbCfg);
      }
    });
    call.on('end', () => finish(null));
    call.on('error', () => finish({ code: grpc.status.CANCELLED, details: 'relay call ended' }));
  }

  handlers(): grpc.UntypedServiceImplementation {
    return {
      stream: (call: grpc.ServerDuplexStream<AgentMessage, Buffer>) => this.stream(call),
      transact: (call: grpc.ServerUnaryCall<{ opsJson: string }, unknown>, callback: grpc.sendUnaryData<unknown>) => {
        const malformed = malformedReason(call.request);
        if (malformed !== undefined) return callback(statusOf(new MalformedRequestError(malformed)));
        let ops: unknown;
        try {
          ops = JSON.parse(call.request.opsJson);
        } catch (err) {
          return callback(statusOf(new CentralNodeError('bad-request', `ops_json is not valid JSON: ${(err as Error).message}`)));
        }
        // Under a role, held to it in apply with the certificate's id (as the SB door's remotes).
        const role = this.agentRole;
        const id = role === undefined ? undefined : peerIdOf(call);
        const options = role === undefined ? {} : { rbac: id === undefined ? { role } : { role, id } };
        this.central.transact(ops, 'OVN_Southbound', options).then(
          (out) => callback(null, { resultsJson: JSON.stringify(out.results), revision: out.revision, failed: out.failed }),
          (err: unknown) => callback(statusOf(err)),
        );
      },
      relayAcks: (call: grpc.ServerReadableStream<AckRelayMessage, unknown>, callback: grpc.sendUnaryData<unknown>) => this.relayed(call, callback),
    };
  }

  private stream(call: grpc.ServerDuplexStream<AgentMessage, Buffer>): void {
    let session: Session | undefined;
    let ended = false;
    // Counted in `ovnts cluster status` and /metrics while the stream is open.
    const closeCount = this.central.sessions.open('agent');
    let pending = 0;
    let chain: Promise<void> = Promise.resolve();
    const sink: StreamSink = {
      write: (m, flushed) => {
        if (!ended) call.write(m, flushed);
      },
      end: (err) => {
        if (ended) return;
        ended = true;
        closeCount();
        call.emit('error', statusOf(err));
      },
    };
    const fail = (err: unknown): void => {
      const e = err instanceof StreamEnd ? err : err instanceof CentralNodeError ? new StreamEnd(err.kind === 'bad-request' || err.kind === 'too-large' ? 'invalid' : 'unavailable', err.message) : undefined;
      if (e === undefined) throw err;
      if (session !== undefined) this.fanout.end(session, e);
      else sink.end(e);
    };
    const handle = async (msg: AgentMessage): Promise<void> => {
      if (ended) return;
      const malformed = malformedReason(msg);
      if (malformed !== undefined) throw invalid(`a message that is not an AgentMessage: ${malformed}`);
      if (session === undefined) {
        if (msg.kind !== 'hello' || msg.hello === undefined) throw invalid(`the first message of a stream is Hello, got ${msg.kind ?? 'an empty message'}`);
        const hello = validateHello(msg.hello);
        if (this.agentRole !== undefined) {
          // Under a role a chassis is the certificate's: an agent may speak only for its own.
          const id = peerIdOf(call);
          if (id === undefined) throw new StreamEnd('denied', `agents are held to role "${this.agentRole}": the client's certificate names no chassis (no common name)`);
          if (id !== hello.chassis) throw new StreamEnd('denied', `agents are held to role "${this.agentRole}": Hello.chassis ${JSON.stringify(hello.chassis)} is not the chassis of the client's certificate (${JSON.stringify(id)})`);
        }
        await this.waitForRevision(hello.lastRevision);
        if (ended) return;
        session = this.fanout.open(hello, sink);
        void this.register(session, hello);
        return;
      }
      switch (msg.kind) {
        case 'hello':
          throw invalid('Hello is only the first message of a stream');
        case 'ack': {
          const a = msg.ack as NonNullable<AgentMessage['ack']>;
          if (a.error.length > southboundLimits.ackErrorCharsMax) throw invalid(`Ack.error is at most ${southboundLimits.ackErrorCharsMax} characters`);
          this.fanout.ack(session, a.revision, a.nbCfg, a.error);
          return;
        }
        case 'interest': {
          const ids = (msg.interest as NonNullable<AgentMessage['interest']>).ifaceIds;
          checkIfaceIds(ids);
          this.fanout.setIfaceIds(session, ids);
          return;
        }
        default:
          throw invalid('an AgentMessage with nothing in it');
      }
    };
    call.on('data', (msg: AgentMessage) => {
      if (ended) return;
      if (++pending > southboundLimits.pendingMessagesMax) {
        fail(invalid(`more than ${southboundLimits.pendingMessagesMax} messages sent before the previous ones were handled`));
        return;
      }
      chain = chain.then(() => handle(msg)).then(
        () => {
          pending--;
        },
        (err: unknown) => {
          pending--;
          fail(err);
        },
      );
    });
    const gone = (): void => {
      ended = true;
      closeCount();
      if (session !== undefined) this.fanout.close(session);
    };
    call.on('cancelled', gone);
    call.on('end', () => {
      gone();
      call.end();
    });
    call.on('close', gone);
  }

  /** Waits (bounded) until this member has applied `revision`, or ends with UNAVAILABLE. */
  private async waitForRevision(revision: number): Promise<void> {
    if (revision <= this.central.revision) return;
    const limitMs = southboundLimits.helloWaitMsMax;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        off();
        reject(new StreamEnd('unavailable', `this member has applied revision ${this.central.revision}, not yet the agent's ${revision}, after ${limitMs} ms; try another member`));
      }, limitMs);
      const off = this.central.onCommit(() => {
        if (this.central.revision < revision) return;
        clearTimeout(timer);
        off();
        resolve();
      });
    });
  }

  /** Registers the chassis of a Hello when the SB does not have it yet (see registrationOps). */
  private async register(s: Session, reg: { chassis: string; hostname: string; encaps: { type: string; ip: string }[] }): Promise<void> {
    const view = this.central.sbView();
    const rows = (t: string): ReturnType<typeof view.rows> => view.rows(t);
    for (let attempt = 1; attempt <= southboundLimits.registerAttemptsMax; attempt++) {
      const ops = registrationOps(rows, reg);
      if (ops === undefined || s.state === 'closed') return;
      try {
        const out = await this.central.transact(ops, 'OVN_Southbound');
        if (!out.failed) return;
        if (attempt === southboundLimits.registerAttemptsMax) {
          const err = (out.results.find((r) => r !== null && typeof r === 'object' && 'error' in r) ?? {}) as { error?: string; details?: string };
          this.registrationFailures++;
          this.fanout.end(s, new StreamEnd('invalid', `registering chassis ${reg.chassis} failed: ${err.error ?? 'failed'}: ${err.details ?? ''}`));
          return;
        }
      } catch (err) {
        if (attempt === southboundLimits.registerAttemptsMax) {
          this.registrationFailures++;
          this.fanout.end(s, new StreamEnd('unavailable', `registering chassis ${reg.chassis}: ${(err as Error).message}`));
          return;
        }
      }
    }
  }
}
