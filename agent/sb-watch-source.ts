// An SbSource over the Northbound gRPC service as it is: Watch on OVN_Southbound (every table,
// every row: monitor-all) and Transact on OVN_Southbound for the chassis-side writes. It is the
// fallback beside the per-chassis stream: simpler, heavier (every agent holds everything), and
// enough for tests and small deployments.
//
// The watch sends the initial state as one or more events of the same revision, in batches of
// northboundLimits.initialRowsPerEventMax rows: a batch with fewer rows (or the first event
// after them) ends it, and the whole state is delivered as one reset update. Later events are
// deltas. On a broken stream the source reconnects (the next endpoint, with backoff) and
// resumes after the last revision it delivered, or starts over with a reset when the server no
// longer retains that revision.
import type * as grpc from '@grpc/grpc-js';
import type { TlsCredentials } from '../cluster/tls.js';
import type { ColumnType, DatabaseSchema, Row, TableSchema, Value } from '../ovsdb/index.js';
import { parseDatabaseSchema, valueFromJson } from '../ovsdb/index.js';
import { defaultValue } from '../ovsdb/datum.js';
import { SB_SCHEMA_JSON } from '../ovsdb/schemas/index.js';
import type { WireChange } from '../server/northbound-service.js';
import { NorthboundClient, northboundLimits } from '../server/northbound-service.js';
import type { ChassisHello, SbRowChange, SbSource, SbSourceState, SbUpdate } from './sb-source.js';

export interface SbWatchSourceOptions {
  /** Northbound gRPC addresses (host:port) of the central members, tried in turn. */
  readonly endpoints: readonly string[];
  readonly reconnectMsMin?: number;
  readonly reconnectMsMax?: number;
  /** Watch events held while the agent applies an update, before the stream is dropped and
   * resumed from the last delivered revision (a slow agent never grows this process). */
  readonly queuedEventsMax?: number;
  readonly callTimeoutMs?: number;
  readonly random?: () => number;
  readonly log?: (message: string) => void;
  /** The chassis's TLS identity (cluster/tls.ts); without, the members are reached in plaintext. */
  readonly tls?: TlsCredentials;
}

export const sbWatchSourceDefaults = {
  reconnectMsMin: 100,
  reconnectMsMax: 5_000,
  queuedEventsMax: 10_000,
  callTimeoutMs: 30_000,
} as const;

interface WatchEvent {
  readonly revision: number | string;
  readonly changes: readonly WireChange[];
  readonly initial: boolean;
  readonly progress: boolean;
  /** The member's SB view id (proto WatchEvent.sb_view). */
  readonly sbView?: string;
}

let sbSchemaCache: DatabaseSchema | undefined;
function sbSchema(): DatabaseSchema {
  sbSchemaCache ??= parseDatabaseSchema(SB_SCHEMA_JSON);
  return sbSchemaCache;
}

/** A Row from the RFC 7047 JSON the watch carries; absent columns take their defaults. */
export function rowFromWatchJson(table: TableSchema, text: string): Row {
  const json = JSON.parse(text) as Record<string, unknown>;
  const uuidOf = (v: unknown): string => (Array.isArray(v) && typeof v[1] === 'string' ? v[1] : '');
  const row: Record<string, Value> = { _uuid: uuidOf(json._uuid), _version: uuidOf(json._version) };
  for (const [name, col] of table.columns) {
    const type: ColumnType = col.type;
    row[name] = name in json ? valueFromJson(type, json[name]) : defaultValue(type);
  }
  return row as unknown as Row;
}

function changeOf(c: WireChange): SbRowChange | undefined {
  const t = sbSchema().tables.get(c.table);
  if (t === undefined) return undefined;
  return c.newJson === '' ? { table: c.table, uuid: c.uuid } : { table: c.table, uuid: c.uuid, row: rowFromWatchJson(t, c.newJson) };
}

export class SbWatchSource implements SbSource {
  private readonly clients: NorthboundClient[];
  private endpointIndex = 0;
  private hello: ChassisHello | undefined;
  private onUpdate: ((u: SbUpdate) => Promise<void>) | undefined;
  private onState: ((s: SbSourceState) => void) | undefined;
  private stream: grpc.ClientReadableStream<WatchEvent> | undefined;
  private closed = false;
  /** The last revision delivered to the agent (what a reconnect resumes after). */
  private delivered = 0;
  /** The SB view id of the member whose events built what was delivered (WatchEvent.sb_view). */
  private view = '';
  private readonly queue: WatchEvent[] = [];
  /** The drain applying updates now, if any. */
  private draining: Promise<void> | undefined;
  private initial: { revision: number; changes: SbRowChange[] } | undefined;
  private failures = 0;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private lastAckedNbCfg: number | undefined;
  private pendingNbCfg: number | undefined;
  private acking: Promise<void> | undefined;
  /** The next watch starts from revision 0: the whole view again (resync). */
  private resyncNext = false;

  constructor(private readonly options: SbWatchSourceOptions) {
    if (options.endpoints.length === 0) throw new Error('SbWatchSource needs at least one endpoint');
    const timeoutMs = options.callTimeoutMs ?? sbWatchSourceDefaults.callTimeoutMs;
    this.clients = options.endpoints.map((e) => new NorthboundClient(e, timeoutMs, options.tls));
  }

  start(hello: ChassisHello, onUpdate: (u: SbUpdate) => Promise<void>, onState?: (s: SbSourceState) => void): void {
    if (this.hello !== undefined) throw new Error('SbWatchSource.start called twice');
    this.hello = hello;
    this.onUpdate = onUpdate;
    if (onState !== undefined) this.onState = onState;
    this.delivered = hello.lastRevision;
    this.connect();
  }

  /**
   * Makes nbCfg this chassis's Chassis_Private.nb_cfg when it advanced (what `--wait=hv`
   * waits for); a revision with an error is not acknowledged. One write at a time: acks that
   * come while one is in flight are folded into the next (only the latest nb_cfg matters).
   */
  ack(revision: number, nbCfg: number, error?: string): void {
    void revision;
    if (error !== undefined && error !== '') return;
    if (this.hello === undefined || nbCfg === this.lastAckedNbCfg) return;
    this.pendingNbCfg = nbCfg;
    if (this.acking === undefined) this.acking = this.writeAcks();
  }

  private async writeAcks(): Promise<void> {
    try {
      while (this.pendingNbCfg !== undefined && !this.closed) {
        const nbCfg = this.pendingNbCfg;
        this.pendingNbCfg = undefined;
        const ops = [{ op: 'update', table: 'Chassis_Private', where: [['name', '==', (this.hello as ChassisHello).chassis]], row: { nb_cfg: nbCfg, nb_cfg_timestamp: Date.now() } }];
        try {
          const results = await this.transact(ops);
          // No Chassis_Private yet (the chassis registers itself first): the next ack retries.
          if ((results[0] as { count?: number } | undefined)?.count === 1) this.lastAckedNbCfg = nbCfg;
        } catch (err) {
          this.options.log?.(`acknowledging nb_cfg ${nbCfg}: ${(err as Error).message}`);
        }
      }
    } finally {
      this.acking = undefined;
    }
  }

  resync(): void {
    if (this.closed) return;
    this.resyncNext = true;
    // Not watching now: the next watch starts over.
    if (this.stream !== undefined) this.reconnect('a resync was asked for', false);
  }

  async transact(ops: readonly unknown[]): Promise<unknown[]> {
    // Any member serves a write (followers forward it); on an unreachable one, the next.
    let lastErr: unknown;
    for (let i = 0; i < this.clients.length; i++) {
      const client = this.clients[(this.endpointIndex + i) % this.clients.length] as NorthboundClient;
      try {
        return (await client.transact(ops, 'OVN_Southbound')).results;
      } catch (err) {
        lastErr = err;
        if ((err as { code?: number }).code !== 14 /* UNAVAILABLE */) throw err;
      }
    }
    throw lastErr;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.reconnectTimer);
    this.stream?.cancel();
    await this.acking;
    for (const c of this.clients) c.close();
  }

  private get endpoint(): string {
    return this.options.endpoints[this.endpointIndex] as string;
  }

  private connect(): void {
    if (this.closed) return;
    const client = this.clients[this.endpointIndex] as NorthboundClient;
    // Called once no update is being applied, so nothing sets `delivered` after this.
    if (this.resyncNext) this.delivered = 0;
    this.resyncNext = false;
    this.initial = undefined;
    this.queue.length = 0;
    const stream = client.watch([], this.delivered, 'OVN_Southbound', this.delivered > 0 ? this.view : '') as unknown as grpc.ClientReadableStream<WatchEvent>;
    this.stream = stream;
    let announced = false;
    stream.on('data', (e: WatchEvent) => {
      if (this.stream !== stream) return;
      if (!announced) {
        announced = true;
        this.failures = 0;
        this.onState?.({ state: 'connected', endpoint: this.endpoint });
      }
      if (this.queue.length >= (this.options.queuedEventsMax ?? sbWatchSourceDefaults.queuedEventsMax)) {
        this.reconnect(`the agent fell more than ${this.queue.length} events behind; resuming from revision ${this.delivered}`, false);
        return;
      }
      // The view the events to come build on: given back when resuming.
      if (e.sbView !== undefined && e.sbView !== '') this.view = e.sbView;
      this.queue.push(e);
      this.drain(stream);
    });
    stream.on('error', (err: Error & { code?: number }) => {
      if (this.stream !== stream) return;
      // OUT_OF_RANGE: the revision is compacted (or unknown here), or the member derives the
      // SB view with other software: start over with a snapshot.
      if (err.code === 11) this.delivered = 0;
      this.reconnect(err.message, true);
    });
    stream.on('end', () => {
      if (this.stream === stream) this.reconnect('the watch ended', true);
    });
  }

  private reconnect(reason: string, nextEndpoint: boolean): void {
    if (this.closed) return;
    const old = this.stream;
    this.stream = undefined;
    old?.cancel();
    this.onState?.({ state: 'disconnected', endpoint: this.endpoint, reason });
    if (nextEndpoint) this.endpointIndex = (this.endpointIndex + 1) % this.clients.length;
    const min = this.options.reconnectMsMin ?? sbWatchSourceDefaults.reconnectMsMin;
    const max = this.options.reconnectMsMax ?? sbWatchSourceDefaults.reconnectMsMax;
    const delay = Math.min(max, min * 2 ** Math.min(this.failures, 30));
    this.failures++;
    const random = this.options.random ?? Math.random;
    this.reconnectTimer = setTimeout(() => {
      // A drain still applying an update finishes first; the new stream resumes after it.
      void this.waitDrained().then(() => this.connect());
    }, Math.round(delay / 2 + (random() * delay) / 2));
  }

  private async waitDrained(): Promise<void> {
    await this.draining;
  }

  /** Delivers queued events in order, one update at a time. */
  private drain(stream: grpc.ClientReadableStream<WatchEvent>): void {
    if (this.draining !== undefined) return;
    this.draining = (async () => {
      try {
        while (this.queue.length > 0 && this.stream === stream) {
          const e = this.queue.shift() as WatchEvent;
          const u = this.step(e);
          if (u === undefined) continue;
          await (this.onUpdate as (u: SbUpdate) => Promise<void>)(u);
          this.delivered = u.toRevision;
        }
      } finally {
        this.draining = undefined;
      }
    })();
  }

  /** The update an event completes, if any (initial batches accumulate until the last). */
  private step(e: WatchEvent): SbUpdate | undefined {
    const revision = Number(e.revision);
    const changes: SbRowChange[] = [];
    for (const c of e.changes) {
      const rc = changeOf(c);
      if (rc !== undefined) changes.push(rc);
    }
    if (e.initial) {
      this.initial ??= { revision, changes: [] };
      this.initial.changes.push(...changes);
      if (e.changes.length >= northboundLimits.initialRowsPerEventMax) return undefined;
      const snapshot = this.initial;
      this.initial = undefined;
      return { reset: true, fromRevision: this.delivered, toRevision: snapshot.revision, changes: snapshot.changes };
    }
    if (revision <= this.delivered) return undefined;
    return { reset: false, fromRevision: this.delivered, toRevision: revision, changes };
  }
}
