// An OVSDB client session (RFC 7047, with ovsdb-server's monitor_cond/update2 extension): it
// connects to unix: or tcp: targets, keeps a local replica of the monitored tables, transacts,
// answers and sends echo probes, and reconnects with exponential backoff. After a reconnect it
// monitors again and reports the difference between the old replica and the fresh one, so a
// consumer sees one consistent change stream whatever happened to the connection.
//
// A message that breaks the protocol (a reply that is not what was asked, an update for a row
// the replica does not hold, a value that does not fit the schema) drops the connection: the
// next one starts from a fresh copy, so the replica never holds a half-applied update.
import type { Atom, Uuid } from './atom.js';
import { zeroUuid } from './atom.js';
import type { Datum, Row, Value } from './datum.js';
import { datumFromJson, defaultValue, fromDatum, toDatum, valueFromJson, valuesEqual } from './datum.js';
import { compareAtoms } from './atom.js';
import type { ColumnType, DatabaseSchema, TableSchema } from './schema.js';
import { parseDatabaseSchema } from './schema.js';
import type { Endpoint } from './jsonrpc-client.js';
import { ConnectionClosedError, JsonRpcClient, JsonRpcError, endpointToString, parseEndpoint } from './jsonrpc-client.js';

/** Tables to replicate, each with the columns to monitor (undefined: every column). */
export type MonitorSpec = Readonly<Record<string, readonly string[] | undefined>>;

export interface ReplicaRowChange {
  readonly table: string;
  readonly uuid: Uuid;
  /** The row before; absent for an insert. */
  readonly old?: Row;
  /** The row after; absent for a delete. */
  readonly new?: Row;
}

export interface ReplicaChange {
  /** True for the difference a (re)connection's fresh copy made, false for a live update. */
  readonly resync: boolean;
  readonly rows: readonly ReplicaRowChange[];
}

export type OvsdbClientEvent =
  | { readonly kind: 'connected'; readonly target: string; readonly monitorMethod: 'monitor_cond' | 'monitor' }
  | { readonly kind: 'disconnected'; readonly target: string; readonly reason: string; readonly retryInMs: number };

export interface OvsdbClientOptions {
  /** unix:PATH or tcp:HOST:PORT. */
  readonly target: string;
  readonly database: string;
  readonly tables: MonitorSpec;
  /** First reconnect delay; doubles per failed attempt up to reconnectMsMax (with jitter). */
  readonly reconnectMsMin?: number;
  readonly reconnectMsMax?: number;
  /** Send an echo after this long without receiving anything, and drop the connection if it
   * gets no reply within as long again; 0 disables probing. */
  readonly probeIntervalMs?: number;
  readonly messageBytesMax?: number;
  readonly pendingRequestsMax?: number;
  readonly requestTimeoutMs?: number;
  /** Update notifications held while the initial copy is in flight, before the connection is
   * dropped as flooding. */
  readonly queuedUpdatesMax?: number;
  /** In [0, 1): the jitter of reconnect delays (a seeded source makes tests reproducible). */
  readonly random?: () => number;
  readonly onEvent?: (e: OvsdbClientEvent) => void;
}

export const ovsdbClientDefaults = {
  reconnectMsMin: 100,
  reconnectMsMax: 8_000,
  probeIntervalMs: 5_000,
  requestTimeoutMs: 30_000,
  queuedUpdatesMax: 10_000,
} as const;

/** A server's message that does not follow the protocol; the connection is dropped. */
export class OvsdbProtocolError extends Error {
  readonly kind = 'protocol error';
}

/** The operation results of a transaction that failed, with the first error spelled out. */
export class OvsdbTransactionError extends Error {
  readonly kind = 'transaction failed';
  constructor(
    readonly results: readonly unknown[],
    readonly error: string,
    readonly details: string | undefined,
  ) {
    super(`transaction failed: ${error}${details === undefined ? '' : `: ${details}`}`);
  }
}

/**
 * The first error of a transact reply (an {"error": ...} result, or fewer results than
 * operations), or undefined when every operation succeeded.
 */
export function transactionError(ops: readonly unknown[], results: readonly unknown[]): OvsdbTransactionError | undefined {
  for (const r of results) {
    if (r !== null && typeof r === 'object' && typeof (r as { error?: unknown }).error === 'string') {
      const e = r as { error: string; details?: unknown };
      return new OvsdbTransactionError(results, e.error, typeof e.details === 'string' ? e.details : undefined);
    }
  }
  if (results.length < ops.length) return new OvsdbTransactionError(results, 'incomplete reply', `${results.length} results for ${ops.length} operations`);
  return undefined;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

type TableReplica = Map<Uuid, Row>;

/** The type a diff of this column is decoded with: any number of elements. */
function diffType(type: ColumnType): ColumnType {
  return { ...type, min: 0, max: Infinity };
}

/**
 * Applies an update2 "modify" diff to one column value: a scalar is replaced; a set gets the
 * symmetric difference; a map's pair is added when its key is new, removed when key and value
 * both match, and otherwise its value replaced (ovsdb-server(7), update2).
 */
export function applyColumnDiff(type: ColumnType, old: Value, diffJson: unknown): Value {
  if (type.kind === 'scalar') return valueFromJson(type, diffJson);
  const diff = datumFromJson(diffType(type), diffJson);
  const before = toDatum(type, old);
  if (type.kind === 'set') {
    const keys = new Map<string, Atom>();
    const keyOf = (a: Atom): string => `${typeof a}:${String(a)}`;
    for (const k of before.keys) keys.set(keyOf(k), k);
    for (const k of diff.keys) {
      const id = keyOf(k);
      if (keys.has(id)) keys.delete(id);
      else keys.set(id, k);
    }
    const sorted = [...keys.values()].sort(compareAtoms);
    if (sorted.length > type.max) throw new OvsdbProtocolError(`set diff leaves ${sorted.length} elements where at most ${type.max} fit`);
    return fromDatum(type, { keys: sorted });
  }
  const map = new Map<Atom, Atom>();
  const values = before.values as readonly Atom[];
  before.keys.forEach((k, i) => map.set(k, values[i] as Atom));
  const diffValues = diff.values as readonly Atom[];
  diff.keys.forEach((k, i) => {
    const v = diffValues[i] as Atom;
    if (!map.has(k)) map.set(k, v);
    else if (compareAtoms(map.get(k) as Atom, v) === 0) map.delete(k);
    else map.set(k, v);
  });
  const keys = [...map.keys()].sort(compareAtoms);
  const d: Datum = { keys, values: keys.map((k) => map.get(k) as Atom) };
  return fromDatum(type, d);
}

/**
 * The replica of one database on one server, kept current by a monitor. Consumers read tables
 * with table(), are told of every change through onChange (in order, after it is applied), and
 * write with transact(). Nothing here retries a transaction: a caller whose transaction was cut
 * by a disconnect sees ConnectionClosedError and decides again from the replica it is shown next.
 */
export class OvsdbClient {
  private readonly endpoint: Endpoint;
  private readonly replica = new Map<string, TableReplica>();
  private readonly listeners = new Set<(c: ReplicaChange) => void>();
  private readonly syncWaiters = new Set<() => void>();
  private conn: JsonRpcClient | undefined;
  private synced = false;
  private closing = false;
  private running: Promise<void> | undefined;
  private wakeSleep: (() => void) | undefined;
  private schemaValue: DatabaseSchema | undefined;
  private monitorColumns = new Map<string, readonly string[]>();
  private monitorSeq = 0;

  constructor(private readonly options: OvsdbClientOptions) {
    this.endpoint = parseEndpoint(options.target);
    for (const t of Object.keys(options.tables)) this.replica.set(t, new Map());
  }

  /** Starts connecting (and reconnecting until close()). */
  start(): void {
    if (this.running !== undefined) return;
    this.running = this.run();
  }

  get isSynced(): boolean {
    return this.synced;
  }

  /** The server's schema, once a connection has read it. */
  get schema(): DatabaseSchema | undefined {
    return this.schemaValue;
  }

  /** The replicated rows of a monitored table (empty until the first copy arrives). */
  table(name: string): ReadonlyMap<Uuid, Row> {
    const t = this.replica.get(name);
    if (t === undefined) throw new Error(`table ${name} is not monitored`);
    return t;
  }

  /** Calls `listener` after every change of the replica; returns the unsubscribe function. */
  onChange(listener: (c: ReplicaChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Resolves once the replica mirrors a live connection (at once if it does now). */
  whenSynced(timeoutMs: number): Promise<void> {
    if (this.synced) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const done = (): void => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        this.syncWaiters.delete(done);
        reject(new Error(`no OVSDB connection to ${this.options.target} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.syncWaiters.add(done);
    });
  }

  /**
   * Sends one transaction ("transact" with the operations after the database name) and resolves
   * to the results array as the server sent it; a failed operation is in the array (see
   * transactionError). Rejects with ConnectionClosedError when there is no live connection.
   */
  async transact(ops: readonly unknown[], timeoutMs?: number): Promise<unknown[]> {
    const conn = this.conn;
    if (conn === undefined || !this.synced) throw new ConnectionClosedError(`not connected to ${this.options.target}`);
    const result = await conn.request('transact', [this.options.database, ...ops], timeoutMs ?? this.options.requestTimeoutMs ?? ovsdbClientDefaults.requestTimeoutMs);
    if (!Array.isArray(result)) {
      conn.abort(new OvsdbProtocolError(`transact reply is not an array: ${JSON.stringify(result).slice(0, 200)}`));
      throw new OvsdbProtocolError('transact reply is not an array');
    }
    return result;
  }

  /** Stops reconnecting and closes the connection. */
  async close(): Promise<void> {
    this.closing = true;
    this.wakeSleep?.();
    const conn = this.conn;
    if (conn !== undefined) await conn.close();
    await this.running;
  }

  private emit(change: ReplicaChange): void {
    if (change.rows.length === 0 && !change.resync) return;
    for (const l of this.listeners) l(change);
  }

  private async run(): Promise<void> {
    const min = this.options.reconnectMsMin ?? ovsdbClientDefaults.reconnectMsMin;
    const max = this.options.reconnectMsMax ?? ovsdbClientDefaults.reconnectMsMax;
    const random = this.options.random ?? Math.random;
    let failures = 0;
    while (!this.closing) {
      let reason = 'connection closed';
      try {
        const wasSynced = await this.session();
        if (wasSynced) failures = 0;
      } catch (err) {
        reason = (err as Error).message;
      }
      this.conn = undefined;
      this.synced = false;
      if (this.closing) break;
      // Exponential backoff with jitter in [delay/2, delay): many agents restarted together do
      // not reconnect to a recovering server in lockstep.
      const delay = Math.min(max, min * 2 ** Math.min(failures, 30));
      const retryInMs = Math.round(delay / 2 + (random() * delay) / 2);
      failures++;
      this.options.onEvent?.({ kind: 'disconnected', target: this.options.target, reason, retryInMs });
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, retryInMs);
        this.wakeSleep = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wakeSleep = undefined;
    }
  }

  /**
   * One connection from connect to close. Resolves to whether it reached a synced replica;
   * throws the reason it ended before that.
   */
  private async session(): Promise<boolean> {
    let closeReason: Error | undefined;
    let onClosed: (() => void) | undefined;
    const closed = new Promise<void>((resolve) => (onClosed = resolve));
    // Updates that arrive before the initial copy is in place wait here (the monitor reply and
    // the first updates can come in one chunk, and the reply's continuation runs after them).
    let queue: unknown[][] | undefined = [];
    let monitorId: string | undefined;
    let method: 'monitor_cond' | 'monitor' = 'monitor_cond';
    // Set once connect() resolves; a notification sent before that (no monitor exists yet) is
    // ignored rather than acted on through a connection object that is not there yet.
    const ready: { conn?: JsonRpcClient } = {};
    const conn = await JsonRpcClient.connect(this.endpoint, {
      ...(this.options.messageBytesMax !== undefined ? { messageBytesMax: this.options.messageBytesMax } : {}),
      ...(this.options.pendingRequestsMax !== undefined ? { pendingRequestsMax: this.options.pendingRequestsMax } : {}),
      requestTimeoutMs: this.options.requestTimeoutMs ?? ovsdbClientDefaults.requestTimeoutMs,
      onNotification: (m, params) => {
        const live = ready.conn;
        if ((m !== 'update' && m !== 'update2') || live === undefined) return;
        if (!Array.isArray(params) || params.length < 2) {
          live.abort(new OvsdbProtocolError(`${m} notification with params ${JSON.stringify(params).slice(0, 200)}`));
          return;
        }
        if (params[0] !== monitorId || monitorId === undefined) return;
        if (queue !== undefined) {
          if (queue.length >= (this.options.queuedUpdatesMax ?? ovsdbClientDefaults.queuedUpdatesMax)) {
            live.abort(new OvsdbProtocolError('too many updates before the initial copy'));
            return;
          }
          queue.push([m, params[1]]);
          return;
        }
        this.applyUpdate(live, m === 'update2', params[1]);
      },
      onClose: (err) => {
        closeReason = err;
        onClosed?.();
      },
    });
    ready.conn = conn;
    if (this.closing) {
      await conn.close();
      return false;
    }
    this.conn = conn;
    const probe = this.startProbe(conn);
    try {
      const schemaJson = await conn.request('get_schema', [this.options.database]);
      let schema: DatabaseSchema;
      try {
        schema = parseDatabaseSchema(schemaJson);
      } catch (err) {
        throw new OvsdbProtocolError(`get_schema reply is not a schema: ${(err as Error).message}`);
      }
      if (schema.name !== this.options.database) throw new OvsdbProtocolError(`asked for the schema of ${this.options.database}, got ${schema.name}`);
      const requests: Record<string, unknown> = {};
      const columns = new Map<string, readonly string[]>();
      for (const [name, cols] of Object.entries(this.options.tables)) {
        const t = schema.tables.get(name);
        if (t === undefined) throw new OvsdbProtocolError(`database ${schema.name} has no table ${name}`);
        const wanted = cols ?? [...t.columns.keys()];
        for (const c of wanted) if (!t.columns.has(c)) throw new OvsdbProtocolError(`table ${name} has no column ${c}`);
        columns.set(name, wanted);
        requests[name] = { columns: wanted };
      }
      this.schemaValue = schema;
      this.monitorColumns = columns;
      monitorId = `ovnts-${++this.monitorSeq}`;
      let initial: unknown;
      try {
        initial = await conn.request('monitor_cond', [this.options.database, monitorId, requests]);
      } catch (err) {
        // A server without the extension names the method unknown; plain "monitor" then.
        if (!(err instanceof JsonRpcError) || !/unknown method/i.test(JSON.stringify(err.error))) throw err;
        method = 'monitor';
        monitorId = `ovnts-${++this.monitorSeq}`;
        initial = await conn.request('monitor', [this.options.database, monitorId, requests]);
      }
      // Synced before the resync change is reported: a consumer reacting to it may transact.
      this.synced = true;
      this.resync(initial, method === 'monitor_cond');
      const held = queue;
      queue = undefined;
      for (const [m, updates] of held) {
        if (conn.isClosed) break;
        this.applyUpdate(conn, m === 'update2', updates);
      }
      if (conn.isClosed) throw closeReason ?? new ConnectionClosedError('connection closed');
      this.options.onEvent?.({ kind: 'connected', target: endpointToString(this.endpoint), monitorMethod: method });
      for (const w of [...this.syncWaiters]) w();
      this.syncWaiters.clear();
    } catch (err) {
      if (!conn.isClosed) conn.abort(err as Error);
      clearInterval(probe);
      await closed;
      throw err;
    }
    await closed;
    clearInterval(probe);
    if (closeReason !== undefined && !(closeReason instanceof ConnectionClosedError)) throw closeReason;
    return true;
  }

  private startProbe(conn: JsonRpcClient): NodeJS.Timeout | undefined {
    const intervalMs = this.options.probeIntervalMs ?? ovsdbClientDefaults.probeIntervalMs;
    if (intervalMs <= 0) return undefined;
    let probing = false;
    const timer = setInterval(() => {
      if (probing || conn.isClosed || Date.now() - conn.lastReceiveMs < intervalMs) return;
      probing = true;
      conn.request('echo', ['ovnts-probe'], intervalMs).then(
        () => (probing = false),
        (err: unknown) => {
          probing = false;
          if (!conn.isClosed) conn.abort(new OvsdbProtocolError(`no reply to an inactivity probe: ${(err as Error).message}`));
        },
      );
    }, intervalMs);
    timer.unref();
    return timer;
  }

  private tableSchema(name: string): TableSchema {
    const t = this.schemaValue?.tables.get(name);
    if (t === undefined || !this.replica.has(name)) throw new OvsdbProtocolError(`update for table ${name}, which is not monitored`);
    return t;
  }

  /** A full row from a <row> object: monitored columns it omits take their default value. */
  private decodeRow(t: TableSchema, uuid: Uuid, json: unknown): Row {
    if (!isRecord(json)) throw new OvsdbProtocolError(`row ${uuid} of ${t.name} is not an object`);
    const row: Record<string, Value> = { _uuid: uuid, _version: zeroUuid };
    for (const c of this.monitorColumns.get(t.name) ?? []) {
      const col = t.columns.get(c);
      if (col === undefined) continue;
      row[c] = c in json ? this.decodeValue(t, c, col.type, json[c]) : defaultValue(col.type);
    }
    return row as unknown as Row;
  }

  private decodeValue(t: TableSchema, column: string, type: ColumnType, json: unknown): Value {
    try {
      return valueFromJson(type, json);
    } catch (err) {
      throw new OvsdbProtocolError(`${t.name}.${column}: ${(err as Error).message}`);
    }
  }

  private parseUpdates(json: unknown): [string, TableSchema, Record<string, unknown>][] {
    if (!isRecord(json)) throw new OvsdbProtocolError(`table updates are not an object: ${JSON.stringify(json).slice(0, 200)}`);
    const out: [string, TableSchema, Record<string, unknown>][] = [];
    for (const [name, rows] of Object.entries(json)) {
      const t = this.tableSchema(name);
      if (!isRecord(rows)) throw new OvsdbProtocolError(`updates of ${name} are not an object`);
      out.push([name, t, rows]);
    }
    return out;
  }

  /** Replaces the replica by a monitor reply's initial copy and reports the difference. */
  private resync(initial: unknown, update2: boolean): void {
    const fresh = new Map<string, TableReplica>();
    for (const name of this.replica.keys()) fresh.set(name, new Map());
    for (const [name, t, rows] of this.parseUpdates(initial)) {
      const table = fresh.get(name) as TableReplica;
      for (const [uuid, u] of Object.entries(rows)) {
        if (!isRecord(u)) throw new OvsdbProtocolError(`update of ${name} ${uuid} is not an object`);
        const body = update2 ? u['initial'] : u['new'];
        if (body === undefined) throw new OvsdbProtocolError(`initial copy of ${name} ${uuid} has no ${update2 ? '"initial"' : '"new"'} row`);
        table.set(uuid, this.decodeRow(t, uuid, body));
      }
    }
    const changes: ReplicaRowChange[] = [];
    for (const [name, table] of this.replica) {
      const next = fresh.get(name) as TableReplica;
      const t = this.schemaValue?.tables.get(name) as TableSchema;
      for (const [uuid, old] of table) {
        const now = next.get(uuid);
        if (now === undefined) changes.push({ table: name, uuid, old });
        else if (!this.rowsEqual(t, old, now)) changes.push({ table: name, uuid, old, new: now });
      }
      for (const [uuid, now] of next) if (!table.has(uuid)) changes.push({ table: name, uuid, new: now });
      this.replica.set(name, next);
    }
    this.emit({ resync: true, rows: changes });
  }

  private rowsEqual(t: TableSchema, a: Row, b: Row): boolean {
    for (const c of this.monitorColumns.get(t.name) ?? []) {
      const col = t.columns.get(c);
      if (col !== undefined && !valuesEqual(col.type, a[c] as Value, b[c] as Value)) return false;
    }
    return true;
  }

  /**
   * Applies one update notification. Every row update is checked and decoded before any is
   * applied, so a bad one leaves the replica as it was (and drops the connection).
   */
  private applyUpdate(conn: JsonRpcClient, update2: boolean, json: unknown): void {
    let changes: ReplicaRowChange[];
    try {
      changes = update2 ? this.decodeUpdate2(json) : this.decodeUpdate(json);
    } catch (err) {
      if (!(err instanceof OvsdbProtocolError)) throw err;
      conn.abort(err);
      return;
    }
    for (const c of changes) {
      const table = this.replica.get(c.table) as TableReplica;
      if (c.new === undefined) table.delete(c.uuid);
      else table.set(c.uuid, c.new);
    }
    this.emit({ resync: false, rows: changes });
  }

  private decodeUpdate2(json: unknown): ReplicaRowChange[] {
    const changes: ReplicaRowChange[] = [];
    for (const [name, t, rows] of this.parseUpdates(json)) {
      const table = this.replica.get(name) as TableReplica;
      for (const [uuid, u] of Object.entries(rows)) {
        if (!isRecord(u)) throw new OvsdbProtocolError(`update2 of ${name} ${uuid} is not an object`);
        const old = table.get(uuid);
        if ('insert' in u || 'initial' in u) {
          if (old !== undefined) throw new OvsdbProtocolError(`insert of ${name} ${uuid}, which the replica already holds`);
          changes.push({ table: name, uuid, new: this.decodeRow(t, uuid, u['insert'] ?? u['initial']) });
        } else if ('delete' in u) {
          if (old === undefined) throw new OvsdbProtocolError(`delete of ${name} ${uuid}, which the replica does not hold`);
          changes.push({ table: name, uuid, old });
        } else if ('modify' in u) {
          if (old === undefined) throw new OvsdbProtocolError(`modify of ${name} ${uuid}, which the replica does not hold`);
          const diff = u['modify'];
          if (!isRecord(diff)) throw new OvsdbProtocolError(`modify of ${name} ${uuid} is not an object`);
          const next: Record<string, Value> = { ...(old as unknown as Record<string, Value>) };
          for (const [c, d] of Object.entries(diff)) {
            const col = t.columns.get(c);
            if (col === undefined || !(c in next)) throw new OvsdbProtocolError(`modify of ${name} ${uuid} names column ${c}, which is not monitored`);
            try {
              next[c] = applyColumnDiff(col.type, old[c] as Value, d);
            } catch (err) {
              throw new OvsdbProtocolError(`${name}.${c} of ${uuid}: ${(err as Error).message}`);
            }
          }
          changes.push({ table: name, uuid, old, new: next as unknown as Row });
        } else {
          throw new OvsdbProtocolError(`update2 of ${name} ${uuid} has none of initial, insert, delete, modify`);
        }
      }
    }
    return changes;
  }

  private decodeUpdate(json: unknown): ReplicaRowChange[] {
    const changes: ReplicaRowChange[] = [];
    for (const [name, t, rows] of this.parseUpdates(json)) {
      const table = this.replica.get(name) as TableReplica;
      for (const [uuid, u] of Object.entries(rows)) {
        if (!isRecord(u)) throw new OvsdbProtocolError(`update of ${name} ${uuid} is not an object`);
        const old = table.get(uuid);
        if (u['new'] === undefined) {
          if (old === undefined) throw new OvsdbProtocolError(`delete of ${name} ${uuid}, which the replica does not hold`);
          changes.push({ table: name, uuid, old });
          continue;
        }
        if (old === undefined) {
          changes.push({ table: name, uuid, new: this.decodeRow(t, uuid, u['new']) });
          continue;
        }
        // "monitor" sends only the changed columns in "new" for a modification.
        const body = u['new'];
        if (!isRecord(body)) throw new OvsdbProtocolError(`update of ${name} ${uuid}: "new" is not an object`);
        const next: Record<string, Value> = { ...(old as unknown as Record<string, Value>) };
        for (const [c, v] of Object.entries(body)) {
          const col = t.columns.get(c);
          if (col === undefined || !(c in next)) throw new OvsdbProtocolError(`update of ${name} ${uuid} names column ${c}, which is not monitored`);
          next[c] = this.decodeValue(t, c, col.type, v);
        }
        changes.push({ table: name, uuid, old, new: next as unknown as Row });
      }
    }
    return changes;
  }
}
