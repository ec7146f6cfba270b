// The agent's end of the per-chassis Southbound stream (proto/southbound.proto,
// docs/agent-stream.md): an SbSource that connects to one member of the central cluster, says
// Hello, and hands the agent runtime its part of the SB view step by step. When the member goes
// away the source reconnects — to the next endpoint, after a jittered exponential backoff of at
// most backoffMsMax — and resumes after the last revision it delivered: the member sends the
// changes since (no resync) while it retains them, or a snapshot, delivered as a reset update.
//
// To resume, the member must know what the agent's view holds; the source tells it in Hello
// from a small record of what it delivered: the Datapath_Binding rows, and the Port_Bindings
// held by iface-id rather than through a local datapath. That record exists only for what this
// source delivered, so a source started with ChassisHello.lastRevision > 0 asks for a snapshot.
//
// The connection's inactivity probe (ovn-remote-probe-interval) is gRPC keepalive: a ping every
// interval, the connection dropped when one goes unanswered for an interval (setProbeIntervalMs).
//
// Steps that arrive while the runtime is still applying an earlier one are coalesced into one
// pending update (the latest state of each row; a reset absorbs what came before it), so the
// source holds at most one update besides the one being applied. Past pendingChangesMax rows it
// stops reading the stream, and the member's bounded queue takes over.
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import type { DatabaseSchema, Row } from '../ovsdb/index.js';
import { parseDatabaseSchema } from '../ovsdb/index.js';
import { SB_SCHEMA_JSON } from '../ovsdb/schemas/index.js';
import { malformedReason } from '../cluster/grpc-proto.js';
import { channelCredentials, tlsChannelOptions, type TlsCredentials } from '../cluster/tls.js';
import type { HeldRow, WireDelta, WireResume, WireServerMessage } from '../server/southbound-wire.js';
import { WireError, decodeTableRows, southboundDefinition, wireLimits } from '../server/southbound-wire.js';
import type { ChassisHello, SbRowChange, SbSource, SbSourceState, SbUpdate } from './sb-source.js';

/** Named limits of the stream client. */
export const sbStreamLimits = {
  /** The first reconnect waits about this long; each failure doubles it, up to backoffMsMax. */
  backoffMsInitial: 100,
  backoffMsMax: 10_000,
  /** Rows in the pending (not yet delivered) update before the stream is paused. */
  pendingChangesMax: 1_000_000,
  /** Parts of one step (a snapshot of a large view comes in many). */
  partsPerStepMax: 100_000,
  transactTimeoutMs: 30_000,
} as const;

export type SbStreamLimits = { readonly [K in keyof typeof sbStreamLimits]: number };

export interface SbStreamOptions {
  /** Southbound gRPC addresses (host:port) of the central members. */
  readonly endpoints: readonly string[];
  readonly limits?: Partial<SbStreamLimits>;
  /** Randomness for the first endpoint and the backoff jitter (tests inject a seeded one). */
  readonly random?: () => number;
  readonly channelOptions?: grpc.ChannelOptions;
  /** The chassis's TLS identity (cluster/tls.ts); without, the members are reached in plaintext. */
  readonly tls?: TlsCredentials;
}

/**
 * The wait before reconnect attempt `failures` + 1: backoffMsInitial doubled per failure, at
 * most backoffMsMax, times a jitter between 0.5 and 1 (`random` in [0, 1)), so that agents cut
 * off together do not all come back at once.
 */
export function backoffDelayMs(failures: number, random: number, limits: Pick<SbStreamLimits, 'backoffMsInitial' | 'backoffMsMax'> = sbStreamLimits): number {
  const exp = Math.min(limits.backoffMsMax, limits.backoffMsInitial * 2 ** Math.min(failures, 30));
  return exp * (0.5 + 0.5 * random);
}

/**
 * Tables whose rows the stream keeps as it delivered them, so that the member may send their
 * set columns as differences (Hello.set_difference_tables): the ones with sets that grow with
 * the deployment — a switch's flood groups with its ports, port groups, datapath groups with
 * the datapaths sharing a flow, address sets — and change one member at a time. Sending such a
 * set whole on every change costs every agent O(members) to decode per change.
 */
export const setDifferenceTables: readonly string[] = ['Multicast_Group', 'Port_Group', 'Logical_DP_Group', 'Address_Set'];
const keptTables: ReadonlySet<string> = new Set(setDifferenceTables);

let schemaCache: DatabaseSchema | undefined;
function sbSchema(): DatabaseSchema {
  schemaCache ??= parseDatabaseSchema(SB_SCHEMA_JSON);
  return schemaCache;
}

type ClientCtor = grpc.ServiceClientConstructor;
let clientCtor: ClientCtor | undefined;

interface AgentMessageOut {
  hello?: unknown;
  ack?: { revision: number; nbCfg: number; error: string };
  interest?: { ifaceIds: string[] };
}

/** A step being assembled from its parts. */
interface Assembly {
  readonly from: number;
  readonly to: number;
  readonly reset: boolean;
  readonly changes: Map<string, SbRowChange>;
  parts: number;
}

const keyOf = (table: string, uuid: string): string => `${table}\0${uuid}`;

/** Why a stream is given up: the member said something the protocol does not allow. */
class ProtocolError extends Error {}

export interface SbStreamStats {
  readonly connects: number;
  readonly resumes: number;
  readonly snapshots: number;
  readonly steps: number;
  readonly delivered: number;
  readonly protocolErrors: number;
}

export class SbStream implements SbSource {
  private readonly limits: SbStreamLimits;
  private readonly random: () => number;
  private readonly clients = new Map<string, grpc.Client>();
  private hello: ChassisHello | undefined;
  private onUpdate: ((u: SbUpdate) => Promise<void>) | undefined;
  private onState: ((s: SbSourceState) => void) | undefined;
  private closed = false;
  private endpointIndex: number;
  private failures = 0;
  private call: grpc.ClientDuplexStream<AgentMessageOut, WireServerMessage> | undefined;
  private callEndpoint = '';
  private reconnectTimer: NodeJS.Timeout | undefined;
  /** The stream's Resume came: Acks and Interests may be sent. */
  private resumed = false;
  /** The revision the next step must start from (the last received step's to_revision). */
  private expected = 0;
  private assembly: Assembly | undefined;
  /** Steps received and not yet handed to the runtime, coalesced into one. */
  private pending: { reset: boolean; from: number; to: number; changes: Map<string, SbRowChange> } | undefined;
  private delivering = false;
  private paused = false;
  /** The to_revision of the last update handed to the runtime. */
  private deliveredRevision = 0;
  /**
   * The SB view id of the member whose Resume began the view delivered so far (proto
   * Resume.view): given back in Hello, so that a member deriving the view otherwise (other
   * software, during an upgrade) sends a snapshot rather than its changes.
   */
  private view = '';
  /** What the delivered updates hold: Datapath_Bindings, and each Port_Binding's port and datapath. */
  private readonly heldDatapaths = new Set<string>();
  private readonly heldPorts = new Map<string, { port: string; datapath: string }>();
  /** The delivered rows of setDifferenceTables, by keyOf(table, uuid): what differences apply to. */
  private readonly heldRows = new Map<string, Row>();
  /** The row a difference in the step being decoded applies to: the latest the stream has of it. */
  private readonly heldRow: HeldRow = (table, uuid) => {
    const k = keyOf(table, uuid);
    const a = this.assembly;
    if (a !== undefined) {
      const c = a.changes.get(k);
      if (c !== undefined) return c.row;
      if (a.reset) return undefined;
    }
    const p = this.pending;
    if (p !== undefined) {
      const c = p.changes.get(k);
      if (c !== undefined) return c.row;
      // A pending reset is the whole view: a row it does not list is not there.
      if (p.reset) return undefined;
    }
    return this.heldRows.get(k);
  };
  private ifaceIds: readonly string[] = [];
  /** The iface-ids the current stream's Hello carried. */
  private helloIfaceIds: ReadonlySet<string> = new Set();
  /** The latest Ack not yet sent (sent after the next Resume when disconnected). */
  private unsentAck: { revision: number; nbCfg: number; error: string } | undefined;
  /** The last Ack written to a stream. */
  private lastAck: { revision: number; nbCfg: number; error: string } | undefined;
  private readonly counters = { connects: 0, resumes: 0, snapshots: 0, steps: 0, delivered: 0, protocolErrors: 0 };
  /** The next connection claims no revision, so the member sends the whole view (resync). */
  private resyncNext = false;
  /** ovn-remote-probe-interval, once set (setProbeIntervalMs); until then no keepalive. */
  private probeIntervalMs: number | undefined;
  /** Ends the current stream and connects again at once (resync), while there is one. */
  private endCall: ((reason: string) => void) | undefined;

  constructor(private readonly options: SbStreamOptions) {
    assert.ok(options.endpoints.length > 0, 'SbStream: at least one endpoint');
    this.limits = { ...sbStreamLimits, ...options.limits };
    this.random = options.random ?? Math.random;
    // Agents spread over the members rather than all starting on the first.
    this.endpointIndex = Math.floor(this.random() * options.endpoints.length) % options.endpoints.length;
  }

  stats(): SbStreamStats {
    return { ...this.counters };
  }

  /** The revision of the last update handed to the runtime. */
  get revision(): number {
    return this.deliveredRevision;
  }

  start(hello: ChassisHello, onUpdate: (u: SbUpdate) => Promise<void>, onState?: (s: SbSourceState) => void): void {
    assert.ok(this.hello === undefined, 'SbStream.start: already started');
    this.hello = hello;
    this.onUpdate = onUpdate;
    if (onState !== undefined) this.onState = onState;
    this.ifaceIds = [...(hello.ifaceIds ?? [])];
    // Without a record of what that revision's view holds, only a snapshot is safe.
    this.deliveredRevision = 0;
    this.connect();
  }

  ack(revision: number, nbCfg: number, error?: string): void {
    assert.ok(revision <= this.deliveredRevision, `SbStream.ack: revision ${revision} was never delivered (last ${this.deliveredRevision})`);
    const e = error ?? '';
    // The runtime acknowledges every update, and most say what the last Ack said (the same
    // nb_cfg, no error). Such an Ack changes nothing at the member, which acts on nb_cfg and
    // errors only, and would cost a message per chassis per step: it is not sent. A new stream
    // gets the last one again after its Resume (see resume).
    const last = this.lastAck;
    if (this.unsentAck === undefined && last !== undefined && last.nbCfg === nbCfg && last.error === e) return;
    this.unsentAck = { revision, nbCfg, error: e };
    this.sendAck();
  }

  setIfaceIds(ifaceIds: readonly string[]): void {
    this.ifaceIds = [...ifaceIds];
    if (this.resumed) this.call?.write({ interest: { ifaceIds: [...this.ifaceIds] } });
  }

  resync(): void {
    if (this.closed) return;
    this.resyncNext = true;
    // Not connected now: the next connection resyncs.
    this.endCall?.('a resync was asked for');
  }

  async transact(ops: readonly unknown[]): Promise<unknown[]> {
    const n = this.options.endpoints.length;
    let last: unknown;
    // The member the stream is on first; others only when it cannot be reached at all.
    for (let i = 0; i < n; i++) {
      const endpoint = this.options.endpoints[(this.endpointIndex + i) % n] as string;
      try {
        const reply = await new Promise<{ resultsJson: string }>((resolve, reject) => {
          const c = this.client(endpoint) as unknown as Record<string, (req: unknown, o: grpc.CallOptions, cb: (e: grpc.ServiceError | null, r: unknown) => void) => void>;
          (c.transact as NonNullable<(typeof c)['transact']>).call(c, { opsJson: JSON.stringify(ops) }, { deadline: Date.now() + this.limits.transactTimeoutMs }, (e, r) => (e ? reject(e) : resolve(r as { resultsJson: string })));
        });
        return JSON.parse(reply.resultsJson) as unknown[];
      } catch (err) {
        last = err;
        if ((err as { code?: number }).code !== grpc.status.UNAVAILABLE) throw err;
      }
    }
    throw last;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.reconnectTimer !== undefined) clearTimeout(this.reconnectTimer);
    this.call?.cancel();
    this.call = undefined;
    for (const c of this.clients.values()) c.close();
    this.clients.clear();
  }

  /**
   * ovn-remote-probe-interval: gRPC keepalive on the connection to the member, a ping every `ms`
   * that must be answered within `ms` or the connection is dropped (and the stream resumes on the
   * next member); 0: no pings. A channel takes its keepalive when it is made, so a change makes
   * new channels and, with a stream open, reconnects to the same member at once, resuming after
   * the last revision delivered (no snapshot).
   */
  setProbeIntervalMs(ms: number): void {
    assert.ok(Number.isInteger(ms) && ms >= 0, `SbStream.setProbeIntervalMs: ${ms} is not a count of ms`);
    if (ms === this.probeIntervalMs) return;
    this.probeIntervalMs = ms;
    if (this.clients.size === 0) return;
    // The stream ends first (it reconnects without backoff), then the channels go.
    this.endCall?.(`the probe interval is now ${ms} ms`);
    for (const c of this.clients.values()) c.close();
    this.clients.clear();
  }

  private keepaliveOptions(): grpc.ChannelOptions {
    const ms = this.probeIntervalMs ?? 0;
    if (ms === 0) return {};
    return { 'grpc.keepalive_time_ms': ms, 'grpc.keepalive_timeout_ms': ms, 'grpc.keepalive_permit_without_calls': 1 };
  }

  private client(endpoint: string): grpc.Client {
    let c = this.clients.get(endpoint);
    if (c === undefined) {
      clientCtor ??= grpc.makeGenericClientConstructor(southboundDefinition(), 'Southbound');
      c = new clientCtor(endpoint, channelCredentials(this.options.tls), { ...tlsChannelOptions(this.options.tls, endpoint), 'grpc.max_receive_message_length': wireLimits.agentMessageBytesMax, ...this.keepaliveOptions(), ...this.options.channelOptions });
      this.clients.set(endpoint, c);
    }
    return c;
  }

  // --- The stream --------------------------------------------------------------------------

  private connect(): void {
    if (this.closed) return;
    const hello = this.hello as ChassisHello;
    const endpoint = this.options.endpoints[this.endpointIndex] as string;
    const c = this.client(endpoint) as unknown as { stream: () => grpc.ClientDuplexStream<AgentMessageOut, WireServerMessage> };
    const call = c.stream.call(c);
    this.call = call;
    this.callEndpoint = endpoint;
    this.counters.connects++;
    this.resumed = false;
    this.assembly = undefined;
    this.pending = undefined;
    this.paused = false;
    // A resync claims nothing: the member sends a snapshot from revision 0, delivered as a
    // reset. Acks of what was delivered before wait until this stream has reached them.
    const lastRevision = this.resyncNext ? 0 : this.deliveredRevision;
    this.resyncNext = false;
    this.expected = lastRevision;
    // The Port_Bindings held by iface-id: those not on a held datapath.
    const heldByIface = new Set<string>();
    if (lastRevision > 0) for (const p of this.heldPorts.values()) if (!this.heldDatapaths.has(p.datapath)) heldByIface.add(p.port);
    this.helloIfaceIds = lastRevision > 0 ? heldByIface : new Set(this.ifaceIds);
    call.write({
      hello: {
        chassis: hello.chassis,
        hostname: hello.hostname,
        encaps: hello.encaps.map((e) => ({ type: e.type, ip: e.ip })),
        lastRevision,
        heldDatapaths: lastRevision > 0 ? [...this.heldDatapaths] : [],
        ifaceIds: [...this.helloIfaceIds],
        monitorAll: hello.monitorAll === true,
        setDifferenceTables: [...setDifferenceTables],
        view: lastRevision > 0 ? this.view : '',
      },
    });
    let done = false;
    const finish = (reason: string, again: 'backoff' | 'now' = 'backoff'): void => {
      if (done) return;
      done = true;
      if (this.call === call) this.call = undefined;
      if (this.endCall === end) this.endCall = undefined;
      this.resumed = false;
      this.pending = undefined;
      this.assembly = undefined;
      if (this.closed) return;
      this.onState?.({ state: 'disconnected', endpoint, reason });
      if (again === 'backoff') this.scheduleReconnect();
      else this.reconnectNow();
    };
    const end = (reason: string): void => {
      finish(reason, 'now');
      call.cancel();
    };
    this.endCall = end;
    call.on('data', (m: WireServerMessage) => {
      if (done) return;
      try {
        this.receive(call, m);
      } catch (err) {
        if (!(err instanceof ProtocolError || err instanceof WireError)) throw err;
        this.counters.protocolErrors++;
        finish(`protocol error from ${endpoint}: ${err.message}`);
        call.cancel();
      }
    });
    call.on('error', (err: grpc.ServiceError) => finish(`${grpc.status[err.code] ?? err.code}: ${err.details}`));
    call.on('end', () => finish('the member ended the stream'));
  }

  /** Connects again to the same member without waiting (resync). */
  private reconnectNow(): void {
    if (this.closed || this.reconnectTimer !== undefined) return;
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      this.connect();
    }, 0);
  }

  private scheduleReconnect(): void {
    if (this.closed || this.reconnectTimer !== undefined) return;
    const n = this.options.endpoints.length;
    this.endpointIndex = (this.endpointIndex + 1) % n;
    const delayMs = backoffDelayMs(this.failures++, this.random(), this.limits);
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      this.connect();
    }, delayMs);
  }

  private receive(call: grpc.ClientDuplexStream<AgentMessageOut, WireServerMessage>, m: WireServerMessage): void {
    const malformed = malformedReason(m);
    if (malformed !== undefined) throw new ProtocolError(`not a ServerMessage: ${malformed}`);
    if (!this.resumed) {
      if (m.kind !== 'resume' || m.resume === undefined) throw new ProtocolError(`the first message must be Resume, got ${m.kind ?? 'nothing'}`);
      this.resume(call, m.resume);
      return;
    }
    if (m.kind !== 'delta' || m.delta === undefined) throw new ProtocolError(`expected Delta, got ${m.kind ?? 'nothing'}`);
    this.step(m.delta);
  }

  private resume(call: grpc.ClientDuplexStream<AgentMessageOut, WireServerMessage>, r: WireResume): void {
    if (r.fromRevision !== this.expected) throw new ProtocolError(`Resume from revision ${r.fromRevision}, but this agent is at ${this.expected}`);
    if (r.toRevision < r.fromRevision) throw new ProtocolError(`Resume to revision ${r.toRevision} before ${r.fromRevision}`);
    if (r.mode === 'SNAPSHOT') this.counters.snapshots++;
    else this.counters.resumes++;
    this.view = r.view ?? '';
    this.resumed = true;
    this.failures = 0;
    this.onState?.({ state: 'connected', endpoint: this.callEndpoint, resumedBy: r.mode === 'SNAPSHOT' ? 'snapshot' : 'delta' });
    // The member took Hello's iface-ids as those of the view it holds; now the ones wanted.
    const sent = this.helloIfaceIds;
    const wanted = new Set(this.ifaceIds);
    if (sent.size !== wanted.size || [...wanted].some((x) => !sent.has(x))) call.write({ interest: { ifaceIds: [...wanted] } });
    // The previous member may have died before it wrote what the last Ack said: this one hears
    // it again (its revision was delivered, so this stream starts at or after it).
    this.unsentAck ??= this.lastAck;
    this.sendAck();
  }

  private sendAck(): void {
    const a = this.unsentAck;
    if (a === undefined || !this.resumed || this.call === undefined) return;
    // The member refuses an Ack beyond what this stream sent, which only an Ack from before a
    // resync can be: it waits until this stream has reached its revision (or a newer one replaces it).
    if (a.revision > this.expected) return;
    this.unsentAck = undefined;
    this.lastAck = a;
    this.call.write({ ack: a });
  }

  private step(d: WireDelta): void {
    const a = this.assembly;
    if (a === undefined) {
      if (d.fromRevision !== this.expected) throw new ProtocolError(`a step from revision ${d.fromRevision}, but this agent is at ${this.expected}`);
      if (d.toRevision < d.fromRevision) throw new ProtocolError(`a step to revision ${d.toRevision} before ${d.fromRevision}`);
      this.assembly = { from: d.fromRevision, to: d.toRevision, reset: d.reset, changes: new Map(), parts: 0 };
    } else if (a.from !== d.fromRevision || a.to !== d.toRevision || a.reset !== d.reset) {
      throw new ProtocolError(`a part of step ${d.fromRevision}→${d.toRevision} inside step ${a.from}→${a.to}`);
    }
    const cur = this.assembly as Assembly;
    if (++cur.parts > this.limits.partsPerStepMax) throw new ProtocolError(`a step of more than ${this.limits.partsPerStepMax} parts`);
    const schema = sbSchema();
    for (const t of d.tables) {
      for (const c of decodeTableRows(schema, t, this.heldRow)) cur.changes.set(keyOf(c.table, c.uuid), c.row === undefined ? { table: c.table, uuid: c.uuid } : (c as SbRowChange));
    }
    if (d.more) return;
    this.assembly = undefined;
    this.expected = cur.to;
    this.counters.steps++;
    this.sendAck();
    this.enqueue(cur);
  }

  /** Coalesces a complete step into the pending update and drives delivery. */
  private enqueue(s: Assembly): void {
    const p = this.pending;
    if (p === undefined) {
      this.pending = { reset: s.reset, from: s.from, to: s.to, changes: s.changes };
    } else if (s.reset) {
      // A snapshot replaces whatever was pending: the runtime goes from its revision to it.
      this.pending = { reset: true, from: p.from, to: s.to, changes: s.changes };
    } else {
      for (const [k, c] of s.changes) {
        p.changes.delete(k);
        // In a pending reset (a whole view) a removed row is simply not there.
        if (c.row !== undefined || !p.reset) p.changes.set(k, c);
      }
      p.to = s.to;
    }
    const pending = this.pending as { changes: Map<string, SbRowChange> };
    if (!this.paused && pending.changes.size > this.limits.pendingChangesMax && this.call !== undefined) {
      this.paused = true;
      this.call.pause();
    }
    void this.deliver();
  }

  private async deliver(): Promise<void> {
    if (this.delivering) return;
    this.delivering = true;
    try {
      while (this.pending !== undefined && !this.closed) {
        const p = this.pending;
        this.pending = undefined;
        if (this.paused) {
          this.paused = false;
          this.call?.resume();
        }
        // A reset's changes are the whole view: rows only.
        const changes = p.reset ? [...p.changes.values()].filter((c) => c.row !== undefined) : [...p.changes.values()];
        this.hold(p.reset, changes);
        this.deliveredRevision = p.to;
        this.counters.delivered++;
        await (this.onUpdate as (u: SbUpdate) => Promise<void>)({ reset: p.reset, fromRevision: p.from, toRevision: p.to, changes });
      }
    } finally {
      this.delivering = false;
    }
  }

  /** Records what the runtime's view holds after an update (what the next Hello reports). */
  private hold(reset: boolean, changes: readonly SbRowChange[]): void {
    if (reset) {
      this.heldDatapaths.clear();
      this.heldPorts.clear();
      this.heldRows.clear();
    }
    for (const c of changes) {
      if (keptTables.has(c.table)) {
        if (c.row === undefined) this.heldRows.delete(keyOf(c.table, c.uuid));
        else this.heldRows.set(keyOf(c.table, c.uuid), c.row);
      }
      if (c.table === 'Datapath_Binding') {
        if (c.row === undefined) this.heldDatapaths.delete(c.uuid);
        else this.heldDatapaths.add(c.uuid);
      } else if (c.table === 'Port_Binding') {
        if (c.row === undefined) this.heldPorts.delete(c.uuid);
        else this.heldPorts.set(c.uuid, { port: (c.row as Row).logical_port as string, datapath: (c.row as Row).datapath as string });
      }
    }
  }
}
