// The OVSDB door: JSON-RPC 1.0 (RFC 7047 with the Open vSwitch extensions of ovsdb-server(7))
// over TCP or a unix socket, serving one database of a central node (OVN_Northbound, or
// OVN_Southbound: the SB view northd derives plus the chassis tables) with the `_Server`
// database that lets clustered clients find the leader, one listener per database as OVN does.
// Reads and monitors are served from this member's replica; writes go through
// central.transact, which forwards to the leader (SB writes are limited to what chassis own).
// Every input is validated here: a bad request gets an error reply or a closed connection,
// never a crash and never a half-applied transaction.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import net from 'node:net';
import tls from 'node:tls';
import type { CentralNode, DbFeed, TransactDb } from './central-node.js';
import { CentralNodeError } from './central-node.js';
import { JSON_DEPTH_MAX_DEFAULT, JSON_VALUE_BYTES_MAX_DEFAULT, JsonValueSplitter } from './json-stream.js';
import { defaultConnectionsMax } from './listen-budget.js';
import type { Monitor, MonitorVersion, ReadableDb, TableUpdates } from './ovsdb-monitor.js';
import { changeUpdates, conditionChangeUpdates, initialUpdates, netChanges, parseMonitorRequests, parseMonitorWhere } from './ovsdb-monitor.js';
import type { DbDelta, Row } from '../ovsdb/index.js';
import { Database, OvsdbError, OvsdbErrorName, findColumn, parseDatabaseSchema, rowToJson, schemaToJson, transact } from '../ovsdb/index.js';
import { evaluateConditions, parseConditions } from '../ovsdb/condition.js';
import { capConnections } from '../cluster/connection-cap.js';
import { peerCommonName } from '../cluster/tls.js';
import { DoorSsl, SSL_FILES_POLL_MS, sslRowSettings, type OvsdbSslSettings } from './ovsdb-ssl.js';

/** Named limits of the door; each bounds a queue or a wait. */
export interface OvsdbDoorLimits {
  /** One incoming JSON value; a larger one closes the connection. */
  readonly messageBytesMax: number;
  /** Nesting depth of one incoming JSON value (the value itself is 1); deeper closes the connection. */
  readonly messageDepthMax: number;
  /** Requests of one connection being served at once; beyond it they wait and reading pauses. */
  readonly requestsInFlightMax: number;
  /**
   * Bytes queued to a slow reader beyond the largest single message sent on the connection;
   * past it the connection is dropped. One reply may be larger than the bound (the initial
   * rows of a monitor on a big database): a reader that reads it is kept.
   */
  readonly outgoingBytesMax: number;
  /** Silence after which the server sends an echo; a second one without reply closes. */
  readonly inactivityProbeMs: number;
  /** Monitors on one connection. */
  readonly monitorsMax: number;
  /**
   * Connections open at once; one more is closed as soon as it is accepted. Clients must not
   * take all of the process's file descriptors: its storage and its peers need some too (a
   * member whose LevelDB cannot open a file stops). The default is a share of the process's
   * own limit (server/listen-budget.ts).
   */
  readonly connectionsMax: number;
  /** How often the `_Server` row (leader, connected, index) is refreshed. */
  readonly serverStatusMs: number;
  /** A pssl: client that has not finished its TLS handshake after this long is dropped. */
  readonly tlsHandshakeMs: number;
}

export const ovsdbDoorDefaults: OvsdbDoorLimits = {
  messageBytesMax: JSON_VALUE_BYTES_MAX_DEFAULT,
  messageDepthMax: JSON_DEPTH_MAX_DEFAULT,
  requestsInFlightMax: 1000,
  outgoingBytesMax: 256 * 1024 * 1024,
  inactivityProbeMs: 5000,
  monitorsMax: 1000,
  connectionsMax: defaultConnectionsMax,
  serverStatusMs: 250,
  tlsHandshakeMs: 10_000,
};

/** Where a listener listens: TCP (with SSL for a pssl: remote) or a unix socket. */
export type DoorListen = { readonly host: string; readonly port: number; readonly ssl?: boolean } | { readonly path: string };

export interface OvsdbDoorOptions {
  readonly central: CentralNode;
  /** Where the door listens from the start (a command-line remote); optional with remotesFromDb. */
  readonly listen?: DoorListen;
  /**
   * Also listen where the served database's Connection rows say, as ovsdb-server does when run
   * with --remote=db:OVN_Northbound,NB_Global,connections (the rows `ovn-nbctl set-connection`
   * and `ovn-sbctl set-connection` write): listeners open and close as the rows come and go.
   */
  readonly remotesFromDb?: boolean;
  /** Hears of a Connection row's target this door cannot serve (and why), once per target and reason. */
  readonly onRemoteError?: (target: string, reason: string) => void;
  readonly limits?: Partial<OvsdbDoorLimits>;
  /** Names the cluster in `_Server`'s cid; the same on every member. */
  readonly clusterId?: string;
  /** Which database this listener serves (default OVN_Northbound). */
  readonly db?: TransactDb;
  /**
   * The SSL of pssl: listeners, as given on the command line; without it a door that follows
   * its database (remotesFromDb) takes the database's SSL row (server/ovsdb-ssl.ts).
   */
  readonly ssl?: OvsdbSslSettings;
}

export interface OvsdbDoor {
  /** Where the door's command-line listener listens (with the port bound, for port 0). */
  readonly address: DoorListen | undefined;
  /** The remotes the Connection rows asked for (with remotesFromDb), in target order. */
  remotes(): RemoteStatus[];
  close(): Promise<void>;
}

/** One Connection row's target as this door serves it: where it listens, or why it cannot. */
export interface RemoteStatus {
  readonly target: string;
  readonly listening?: DoorListen;
  readonly readOnly?: boolean;
  readonly error?: string;
}

const SERVER_SCHEMA_JSON = {
  name: '_Server',
  version: '1.2.0',
  cksum: '3009684573 744',
  tables: {
    Database: {
      columns: {
        cid: { type: { key: 'uuid', min: 0 } },
        connected: { type: 'boolean' },
        index: { type: { key: 'integer', min: 0 } },
        leader: { type: 'boolean' },
        model: { type: { key: { enum: ['set', ['clustered', 'relay', 'standalone']], type: 'string' } } },
        name: { type: 'string' },
        schema: { type: { key: 'string', min: 0 } },
        sid: { type: { key: 'uuid', min: 0 } },
      },
    },
  },
} as const;

/** The view tag of the NB's transaction ids: every member holds the same NB (apply versions). */
const NB_TXN_TAG = '00000000';

/** The tag of the SB view's transaction ids: the SB view id's first 8 hex digits (never all zero). */
export function sbTxnTag(viewId: string): string {
  const tag = viewId.slice(0, 8).padEnd(8, '0');
  return /^[0-9a-f]{8}$/.test(tag) && tag !== NB_TXN_TAG ? tag : 'ffffffff';
}

/**
 * The last-txn-id of a revision: UUID-shaped, the same on every member that holds the same data
 * at that revision. `tag` (8 hex digits) says which data: zeros for the NB; for the SB view,
 * the start of the member's SB view id (server/sb-view-id.ts), since members on different
 * software may derive different views, and a client resuming on a member of another view must
 * read it anew rather than apply that member's changes to a view it never had.
 */
export function txnIdOf(revision: number, tag = NB_TXN_TAG): string {
  return `${tag}-0000-0000-0000-${revision.toString(16).padStart(12, '0')}`;
}

/** The revision a last-txn-id of `tag` names, or undefined (foreign, another tag, or the all-zero "none"). */
export function revisionOfTxnId(id: unknown, tag = NB_TXN_TAG): number | undefined {
  const prefix = `${tag}-0000-0000-0000-`;
  if (typeof id !== 'string' || !id.startsWith(prefix)) return undefined;
  const hex = id.slice(prefix.length);
  if (!/^[0-9a-f]{12}$/.test(hex)) return undefined;
  const r = parseInt(hex, 16);
  return r > 0 ? r : undefined;
}

function uuidFrom(text: string): string {
  const h = createHash('sha256').update(text).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/**
 * The cluster's UUID as `_Server`'s Database.cid and cluster/cid give it: derived from the
 * cluster id, the same on every member and for both databases (they are one Raft group).
 */
export function ovsdbClusterUuid(clusterId: string): string {
  return uuidFrom(`cid:${clusterId}`);
}

/** A member's server UUID for one database, as `_Server`'s Database.sid, get_server_id and cluster/sid give it. */
export function ovsdbServerId(clusterId: string, member: number, db: TransactDb): string {
  return uuidFrom(`server:${clusterId}:${member}:${db}`);
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * A schema's JSON (as schemaToJson writes it) as a clustered ovsdb-server serves it: with every
 * column persistent, since clusters store ephemeral columns like any other. Clients compare
 * schemas on this (`ovsdb-client needs-conversion` makes a file's columns persistent first when
 * the server is clustered), so a door that serves "ephemeral" asks for a conversion forever.
 */
function asClustered(schema: Record<string, unknown>): Record<string, unknown> {
  return JSON.parse(JSON.stringify(schema), (key, value: unknown) => (key === 'ephemeral' ? undefined : value)) as Record<string, unknown>;
}

/** JSON text with object members sorted: equal for equal schemas, whatever their tables' order. */
function canonicalText(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v,
  );
}

/** A JSON-RPC error reply's "error" member, as ovsdb-server spells them. */
class RpcError extends Error {
  constructor(
    readonly error: string,
    readonly details?: string,
  ) {
    super(details === undefined ? error : `${error}: ${details}`);
  }
  toJson(): unknown {
    return this.details === undefined ? this.error : { error: this.error, details: this.details };
  }
}

/** gRPC status codes a write forwarded to the leader can fail with (see grpc.status). */
const GRPC_INVALID_ARGUMENT = 3;
const GRPC_DEADLINE_EXCEEDED = 4;

/** A gRPC status error: the Northbound call that forwarded a write to the leader failed. */
function isGrpcStatusError(err: unknown): err is Error & { code: number; details: string } {
  return err instanceof Error && typeof (err as { code?: unknown }).code === 'number' && typeof (err as { details?: unknown }).details === 'string';
}

/** The one place an exception becomes a JSON-RPC error; anything else is a bug and is rethrown. */
function toRpcError(err: unknown): RpcError {
  if (err instanceof RpcError) return err;
  if (err instanceof OvsdbError) return new RpcError(err.error, err.details);
  if (err instanceof CentralNodeError) {
    const name = err.kind === 'bad-request' ? OvsdbErrorName.syntaxError : err.kind === 'too-large' ? OvsdbErrorName.resourcesExhausted : err.kind;
    return new RpcError(name, err.message);
  }
  // The leader died or was cut off while it had the write: an expected outcome, not a bug.
  if (isGrpcStatusError(err)) {
    if (err.code === GRPC_INVALID_ARGUMENT) return new RpcError(OvsdbErrorName.syntaxError, err.details);
    const kind = err.code === GRPC_DEADLINE_EXCEEDED ? 'timeout' : 'unavailable';
    return new RpcError(kind, `the leader did not answer a forwarded transaction (gRPC status ${err.code}: ${err.details}); it may or may not have committed`);
  }
  throw err;
}

/** The `_Server` database of this member: one Database row for OVN_Northbound. */
class ServerDb {
  readonly db = new Database(parseDatabaseSchema(SERVER_SCHEMA_JSON));
  private uuid: string | undefined;
  private counter = 0;
  /** What the row says now (the last values written to it). */
  private reported = { leader: false, connected: false, index: 0 };

  constructor(
    private readonly central: CentralNode,
    private readonly name: string,
    private readonly cid: string,
    private readonly sid: string,
    private readonly schemaText: string,
  ) {}

  private newUuid = (): string => uuidFrom(`_Server:${this.sid}:${this.counter++}`);

  private status(): { name: string; model: string; connected: boolean; leader: boolean; schema: string; cid: unknown; sid: unknown; index: number } {
    const s = this.central.node.leadership();
    return {
      name: this.name,
      model: 'clustered',
      connected: s.lead !== 0,
      leader: s.role === 'leader',
      schema: this.schemaText,
      cid: ['uuid', this.cid],
      sid: ['uuid', this.sid],
      index: this.central.revision,
    };
  }

  /**
   * Brings the row up to date and returns the change, if any. A change of leader or
   * connected is always reported; the index alone only when `withIndex` (the periodic
   * refresh), so a busy cluster does not double its notifications.
   */
  refresh(withIndex: boolean): DbDelta | undefined {
    if (this.uuid !== undefined && !withIndex) {
      // Called on every commit: most find the leader and connected as they were.
      const s = this.central.node.leadership();
      if (this.reported.leader === (s.role === 'leader') && this.reported.connected === (s.lead !== 0)) return undefined;
    }
    const row = this.status();
    if (this.uuid === undefined) {
      const out = transact(this.db, [{ op: 'insert', table: 'Database', row }], { newUuid: this.newUuid });
      if (out.kind !== 'committed') assert.fail(`_Server insert failed: ${JSON.stringify(out)}`);
      this.uuid = (out.results[0] as { uuid: [string, string] }).uuid[1];
      this.reported = { leader: row.leader, connected: row.connected, index: row.index };
      return out.delta;
    }
    const last = this.reported;
    if (last.leader === row.leader && last.connected === row.connected && (!withIndex || last.index === row.index)) return undefined;
    this.reported = { leader: row.leader, connected: row.connected, index: row.index };
    const update = { connected: row.connected, leader: row.leader, index: row.index };
    const out = transact(this.db, [{ op: 'update', table: 'Database', where: [['_uuid', '==', ['uuid', this.uuid]]], row: update }], { newUuid: this.newUuid });
    if (out.kind !== 'committed') assert.fail(`_Server update failed: ${JSON.stringify(out)}`);
    return out.delta.changes.length > 0 ? out.delta : undefined;
  }
}

/**
 * A read-only transaction (select and comment ops) answered from a view, as ovsdb-server
 * would: rows matching each "where", with the requested columns.
 */
function selectFromView(view: ReadableDb, ops: readonly Record<string, unknown>[]): unknown[] {
  const results: unknown[] = [];
  for (const [i, op] of ops.entries()) {
    if (op['op'] === 'comment') {
      results.push({});
      continue;
    }
    const fail = (e: OvsdbError): unknown[] => [...results, e.toJson(), ...ops.slice(i + 1).map(() => null)];
    const table = view.schema.tables.get(String(op['table']));
    if (table === undefined) return fail(new OvsdbError(OvsdbErrorName.unknownTable, `unknown table ${JSON.stringify(op['table'])}`));
    let clauses;
    try {
      clauses = parseConditions(table, op['where'] ?? []);
    } catch (err) {
      if (err instanceof OvsdbError) return fail(err);
      throw err;
    }
    const columns = op['columns'];
    if (columns !== undefined && (!Array.isArray(columns) || !columns.every((c) => typeof c === 'string' && (c === '_uuid' || c === '_version' || findColumn(table, c) !== undefined)))) {
      return fail(new OvsdbError(OvsdbErrorName.syntaxError, 'select "columns" must name columns of the table'));
    }
    const rows: unknown[] = [];
    for (const row of view.rows(table.name).values()) {
      if (evaluateConditions(clauses, row)) rows.push(rowToJson(table, row, columns as string[] | undefined));
    }
    results.push({ rows });
  }
  return results;
}

/** Locks by name, shared by every connection of one door (ovsdb-server(7) "lock"). */
class LockTable {
  private readonly locks = new Map<string, Connection[]>();

  /** Queues `c` for the lock; true when it owns it now. */
  lock(name: string, c: Connection): boolean {
    const q = this.locks.get(name) ?? [];
    this.locks.set(name, q);
    if (!q.includes(c)) q.push(c);
    return q[0] === c;
  }

  /** `c` takes the lock from its owner, who is told "stolen". */
  steal(name: string, c: Connection): void {
    const q = (this.locks.get(name) ?? []).filter((x) => x !== c);
    const owner = q[0];
    this.locks.set(name, [c, ...q]);
    if (owner !== undefined) owner.notify('stolen', [name]);
  }

  unlock(name: string, c: Connection): void {
    const q = this.locks.get(name);
    if (q === undefined) return;
    const wasOwner = q[0] === c;
    const rest = q.filter((x) => x !== c);
    if (rest.length === 0) this.locks.delete(name);
    else this.locks.set(name, rest);
    if (wasOwner && rest[0] !== undefined) rest[0].notify('locked', [name]);
  }

  owns(name: string, c: Connection): boolean {
    return this.locks.get(name)?.[0] === c;
  }
}

/** Shared state of one door: the central node, the `_Server` db and the connections. */
class Door {
  readonly connections = new Set<Connection>();
  readonly locks = new LockTable();
  readonly serverDb: ServerDb;
  readonly serverId: string;
  /** The database this door serves, as a feed (rows, history, changes). */
  readonly feed: DbFeed;
  /** The tag of its last-txn-ids (txnIdOf): the SB view id's start for the SB. */
  readonly txnTag: string;
  readonly mainSchemaJson: unknown;
  readonly serverSchemaJson: unknown;
  /** What pssl: listeners serve with. */
  readonly ssl: DoorSsl;

  constructor(
    readonly central: CentralNode,
    readonly limits: OvsdbDoorLimits,
    clusterId: string,
    readonly dbName: TransactDb,
    sslFlags: OvsdbSslSettings | undefined,
    sslFromRow: boolean,
  ) {
    this.feed = central.feed(dbName);
    this.ssl = new DoorSsl(sslFlags, sslFromRow ? () => sslRowSettings(this.main()) : undefined);
    this.txnTag = dbName === 'OVN_Southbound' ? sbTxnTag(central.sbViewId) : NB_TXN_TAG;
    this.serverId = ovsdbServerId(clusterId, central.id, dbName);
    this.mainSchemaJson = asClustered(schemaToJson(this.feed.schema));
    this.serverSchemaJson = SERVER_SCHEMA_JSON;
    this.serverDb = new ServerDb(central, dbName, ovsdbClusterUuid(clusterId), this.serverId, JSON.stringify(this.mainSchemaJson));
    this.serverDb.refresh(true);
  }

  /** The served database as monitors read it, live (the NB object changes on a restore). */
  main(): ReadableDb {
    return this.dbName === 'OVN_Northbound' ? this.central.sm.nb : this.feed;
  }

  /** The served database, or `_Server`; anything else is an unknown database. */
  database(name: unknown): ReadableDb | Database {
    if (name === this.dbName) return this.main();
    if (name === '_Server') {
      // Current as of this request: a member elected since the last commit or periodic
      // refresh must not be read as not connected (a clustered client gives up on that).
      this.refreshServer(false);
      return this.serverDb.db;
    }
    throw new RpcError(OvsdbErrorName.unknownDatabase, `unknown database ${JSON.stringify(name)}`);
  }

  /** Every listening socket of this door: the command-line one, and those Connection rows opened. */
  readonly listeners = new Set<Listener>();
  remotesFromDb = false;
  onRemoteError: ((target: string, reason: string) => void) | undefined;
  /** Targets of Connection rows this door could not serve, with the reason. */
  readonly remoteErrors = new Map<string, string>();
  /** Opening and closing listeners is asynchronous: one reconciliation at a time, in order. */
  private reconciling: Promise<void> = Promise.resolve();
  private closing = false;

  /** The Connection rows of the served database. */
  connectionRows(): Row[] {
    return [...this.main().rows('Connection').values()];
  }

  /**
   * A Connection row changed (or the rows were replaced by a snapshot): every listener reads
   * its options again, and, when this door follows the rows, listeners open and close.
   */
  connectionsChanged(): void {
    const rows = this.connectionRows();
    for (const l of this.listeners) l.optionsChanged(rows);
    if (!this.remotesFromDb || this.closing) return;
    // Whatever one reconciliation meets is reported, so that the chain (and the next) goes on.
    this.reconciling = this.reconciling.then(() => this.reconcile()).catch((err: unknown) => this.onRemoteError?.('(all)', `reconciling the listeners failed: ${(err as Error).message}`));
  }

  /** Waits for the listeners the last change asked for to be open (or to have failed). */
  settled(): Promise<void> {
    return this.reconciling;
  }

  private async reconcile(): Promise<void> {
    if (this.closing) return;
    const wanted = new Set<string>();
    for (const row of this.connectionRows()) {
      const target = (row as unknown as { target?: unknown }).target;
      if (typeof target === 'string') wanted.add(target);
    }
    for (const l of [...this.listeners]) {
      if (l.fromDb && !wanted.has(l.target)) await l.close();
    }
    for (const target of [...this.remoteErrors.keys()]) if (!wanted.has(target)) this.remoteErrors.delete(target);
    const served = new Set([...this.listeners].map((l) => l.target));
    for (const target of [...wanted].sort()) {
      if (served.has(target) || this.closing) continue;
      const where = passiveTarget(target);
      if (typeof where === 'string') {
        this.remoteFailed(target, where);
        continue;
      }
      try {
        await openListener(this, target, where, true);
        this.remoteErrors.delete(target);
      } catch (err) {
        this.remoteFailed(target, `cannot listen: ${(err as Error).message}`);
      }
    }
  }

  /**
   * The SSL settings, or the files they name, may have changed: pssl: listeners serve with the
   * new context from their next handshake (connections made keep theirs), and pssl: remotes that
   * could not open without SSL are tried again. Settings that make no context leave the
   * listeners with the one they have, and are reported.
   */
  sslChanged(): void {
    if (this.closing || !this.ssl.refresh()) return;
    const context = this.ssl.current();
    for (const l of this.listeners) {
      if (!(l.server instanceof tls.Server)) continue;
      if ('error' in context) this.onRemoteError?.(l.target, `keeps serving with its SSL settings as they were: ${context.error}`);
      else l.server.setSecureContext(context.options);
    }
    if ('options' in context) this.connectionsChanged();
  }

  private remoteFailed(target: string, reason: string): void {
    if (this.remoteErrors.get(target) === reason) return;
    this.remoteErrors.set(target, reason);
    this.onRemoteError?.(target, reason);
  }

  remotes(): RemoteStatus[] {
    const out: RemoteStatus[] = [];
    for (const l of this.listeners) if (l.fromDb && l.address !== undefined) out.push({ target: l.target, listening: l.address, readOnly: l.readOnly });
    for (const [target, error] of this.remoteErrors) out.push({ target, error });
    return out.sort((a, b) => (a.target < b.target ? -1 : a.target > b.target ? 1 : 0));
  }

  async close(): Promise<void> {
    this.closing = true;
    await this.reconciling;
    for (const l of [...this.listeners]) await l.close();
  }

  refreshServer(withIndex: boolean): void {
    const delta = this.serverDb.refresh(withIndex);
    if (delta === undefined) return;
    for (const c of this.connections) c.onServerDelta(delta);
  }
}

/** One client connection: its requests, monitors and locks. */
class Connection {
  private readonly splitter: JsonValueSplitter;
  private readonly monitors = new Map<string, Monitor>();
  private readonly locksHeld = new Set<string>();
  private inFlight = 0;
  /** Requests read but not yet started (see drain). */
  private readonly backlog: unknown[] = [];
  private paused = false;
  private closed = false;
  private probeTimer: NodeJS.Timeout | undefined;
  private probeSent = false;
  /** The socket holds this turn's messages, to write them together at its end (see send). */
  private corked = false;
  /** The longest message written on this connection (see OvsdbDoorLimits.outgoingBytesMax). */
  private longestMessage = 0;
  private readonly offCommit: () => void;
  private readonly closeSession: () => void;
  /**
   * The client's id for RBAC: the common name of its certificate on an SSL connection (the
   * first, as ovsdb-server reads it), none on any other.
   */
  private readonly peerId: string | undefined;

  constructor(
    private readonly door: Door,
    private readonly listener: Listener,
    private readonly socket: net.Socket,
  ) {
    this.peerId = socket instanceof tls.TLSSocket ? peerCommonName(socket.getPeerCertificate()) : undefined;
    this.closeSession = door.central.sessions.open('ovsdb');
    this.splitter = new JsonValueSplitter(door.limits.messageBytesMax, door.limits.messageDepthMax);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', () => this.destroy());
    socket.on('close', () => this.cleanup());
    this.offCommit = door.feed.onChange((e) => this.onMainCommit(e.revision, e.delta));
    this.armProbe();
  }

  destroy(): void {
    // What this turn already sent (a reply before the malformed message that ends the
    // connection) still goes, as it would have without the cork.
    if (this.corked) {
      this.corked = false;
      this.socket.uncork();
    }
    this.socket.destroy();
    this.cleanup();
  }

  private cleanup(): void {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.probeTimer);
    this.offCommit();
    for (const name of this.locksHeld) this.door.locks.unlock(name, this);
    this.locksHeld.clear();
    this.monitors.clear();
    this.backlog.length = 0;
    this.door.connections.delete(this);
    this.listener.connections.delete(this);
    this.closeSession();
  }

  private armProbe(): void {
    clearTimeout(this.probeTimer);
    this.probeSent = false;
    this.scheduleProbe();
  }

  /** The next probe, one interval from now (none while the interval is 0: probes are off). */
  private scheduleProbe(): void {
    const ms = this.listener.probeMs();
    if (ms === 0) return;
    this.probeTimer = setTimeout(() => this.probe(), ms);
    this.probeTimer.unref();
  }

  /** The probe interval changed: start counting the silence again with the new one. */
  rearmProbe(): void {
    if (!this.closed) this.armProbe();
  }

  /** Inactivity: send an echo; if the peer is still silent one interval later, drop it. */
  private probe(): void {
    if (this.closed) return;
    if (this.probeSent) {
      this.destroy();
      return;
    }
    this.probeSent = true;
    this.send({ method: 'echo', params: [], id: 'echo' });
    this.scheduleProbe();
  }

  private send(message: unknown): void {
    if (this.closed) return;
    // What is sent in one turn of the event loop (the replies to the transactions one batch of
    // the log committed, a monitor's updates with them) leaves in one write at its end: one
    // system call for the lot. With 32 transactions in flight a reply's write was a tenth of
    // the leader's CPU time.
    if (!this.corked) {
      this.corked = true;
      this.socket.cork();
      process.nextTick(() => {
        this.corked = false;
        this.socket.uncork();
      });
    }
    const text = JSON.stringify(message);
    this.socket.write(text);
    // A reader that does not keep up is dropped rather than buffered without bound. The bound
    // is beyond the longest message: with the bound alone, a monitor whose initial rows were
    // larger was dropped as soon as it was answered, and its client asked again, for ever.
    if (text.length > this.longestMessage) this.longestMessage = text.length;
    if (this.socket.writableLength > this.door.limits.outgoingBytesMax + this.longestMessage) this.destroy();
  }

  notify(method: string, params: unknown[]): void {
    this.send({ method, params, id: null });
  }

  private onData(chunk: Buffer): void {
    this.armProbe();
    let messages: unknown[];
    try {
      messages = this.splitter.feed(chunk);
    } catch {
      // Malformed or oversized input: the stream cannot be resynchronized, so it ends here.
      this.destroy();
      return;
    }
    this.backlog.push(...messages);
    this.drain();
  }

  /**
   * Starts queued requests while fewer than requestsInFlightMax are being served. While some
   * wait, reading pauses, so the backlog never holds more than one chunk's messages.
   */
  private drain(): void {
    while (this.backlog.length > 0 && this.inFlight < this.door.limits.requestsInFlightMax && !this.closed) this.dispatch(this.backlog.shift());
    if (this.closed) return;
    if (this.backlog.length > 0 && !this.paused) {
      this.paused = true;
      this.socket.pause();
    } else if (this.backlog.length === 0 && this.paused) {
      this.paused = false;
      this.socket.resume();
    }
  }

  private dispatch(message: unknown): void {
    if (!isRecord(message)) {
      this.destroy();
      return;
    }
    const { method, params, id } = message;
    if (method === undefined) return; // A reply (to our echo): its arrival already reset the probe.
    const isNotification = id === null || id === undefined;
    if (typeof method !== 'string' || !Array.isArray(params)) {
      if (!isNotification) this.send({ id, result: null, error: { error: OvsdbErrorName.syntaxError, details: 'a request needs a string "method" and an array "params"' } });
      return;
    }
    if (isNotification) return; // "cancel" and other notifications need no answer.
    this.inFlight++;
    this.serve(method, params)
      .then(
        (result) => this.send({ id, result, error: null }),
        (err: unknown) => this.send({ id, result: null, error: toRpcError(err).toJson() }),
      )
      .finally(() => {
        this.inFlight--;
        this.drain();
      });
  }

  private async serve(method: string, params: unknown[]): Promise<unknown> {
    switch (method) {
      case 'echo':
        return params;
      case 'list_dbs':
        return [this.door.dbName, '_Server'];
      case 'get_schema': {
        const db = this.door.database(params[0]);
        return db === this.door.serverDb.db ? this.door.serverSchemaJson : this.door.mainSchemaJson;
      }
      case 'get_server_id':
        return this.door.serverId;
      case 'set_db_change_aware':
        return {};
      case 'cancel':
        return {};
      case 'transact':
        return this.transact(params);
      case 'monitor':
        return this.monitor(params, 1);
      case 'monitor_cond':
        return this.monitor(params, 2);
      case 'monitor_cond_since':
        return this.monitor(params, 3);
      case 'monitor_cond_change':
        return this.monitorCondChange(params);
      case 'monitor_cancel': {
        const key = JSON.stringify(params[0] ?? null);
        if (!this.monitors.delete(key)) throw new RpcError('unknown monitor');
        return {};
      }
      case 'lock':
      case 'steal':
      case 'unlock':
        return this.lock(method, params);
      case 'convert':
        return this.convert(params);
      default:
        throw new RpcError(OvsdbErrorName.unknownMethod);
    }
  }

  /**
   * "convert" to the schema this door serves succeeds and changes nothing: the rows already
   * conform. Ephemeral columns count as persistent, as a cluster stores them (asClustered).
   * Any other schema is refused: ovnts serves the schema it was built with.
   */
  private convert(params: unknown[]): unknown {
    if (this.door.database(params[0]) === this.door.serverDb.db) throw new RpcError(OvsdbErrorName.notAllowed, 'the _Server database cannot be converted');
    let wanted: Record<string, unknown>;
    try {
      wanted = schemaToJson(parseDatabaseSchema(params[1]));
    } catch (err) {
      throw new RpcError(OvsdbErrorName.syntaxError, `convert: ${(err as Error).message}`);
    }
    const served = this.door.mainSchemaJson as Record<string, unknown>;
    if (canonicalText(asClustered(wanted)) === canonicalText(served)) return {};
    throw new RpcError(
      OvsdbErrorName.notSupported,
      `this server serves ${String(served['name'])} ${String(served['version'])} (cksum ${String(served['cksum'] ?? 'none')}), the schema it was built with; converting to ${String(wanted['name'])} ${String(wanted['version'])} (cksum ${String(wanted['cksum'] ?? 'none')}) is not supported`,
    );
  }

  private async transact(params: unknown[]): Promise<unknown> {
    const db = this.door.database(params[0]);
    const ops = params.slice(1);
    if (db === this.door.serverDb.db) {
      // `_Server` is read-only: selects (and other reads) run on the local copy.
      const out = transact(this.door.serverDb.db, ops, { newUuid: () => '00000000-0000-0000-0000-000000000000', readOnly: true });
      if (out.kind === 'blocked') return [{ error: OvsdbErrorName.timedOut, details: '"wait" not satisfied on _Server' }];
      return out.results;
    }
    // SB reads (select and comment only) are answered from this replica's view; the log
    // sees only writes, which central checks against what chassis may change.
    if (this.door.dbName === 'OVN_Southbound' && ops.every((op) => isRecord(op) && (op['op'] === 'select' || op['op'] === 'comment'))) {
      return selectFromView(this.door.feed, ops as Record<string, unknown>[]);
    }
    // Locks live in this door, not in the log: "assert" is checked here and, when the lock
    // is held, replaced by a comment (both answer {}), so the replicated ops stay lock-free.
    const asserted = ops.findIndex((op) => isRecord(op) && op['op'] === 'assert' && !(typeof op['lock'] === 'string' && this.door.locks.owns(op['lock'], this)));
    if (asserted >= 0) {
      const lock = (ops[asserted] as Record<string, unknown>)['lock'];
      if (typeof lock !== 'string') return ops.map((_, i) => (i < asserted ? {} : i === asserted ? { error: OvsdbErrorName.syntaxError, details: '"assert" needs a "lock" name' } : null));
      return ops.map((_, i) => (i < asserted ? {} : i === asserted ? { error: OvsdbErrorName.notOwner, details: `lock ${lock} is not held by this connection` } : null));
    }
    // A remote its Connection row makes read_only refuses the first write, as ovsdb-server
    // does: the operations before it are answered, the rest are null, nothing is written.
    const firstWrite = this.listener.readOnly ? ops.findIndex((op) => isRecord(op) && typeof op['op'] === 'string' && writeOps.has(op['op'])) : -1;
    if (firstWrite >= 0) {
      const before = firstWrite === 0 ? [] : ((await this.transact([params[0], ...ops.slice(0, firstWrite)])) as unknown[]);
      const failed = before.some((r) => isRecord(r) && 'error' in r);
      const refusal = { error: OvsdbErrorName.notAllowed, details: `${String((ops[firstWrite] as Record<string, unknown>)['op'])} operation not allowed when database server is in read only mode` };
      return ops.map((_, i) => (i < firstWrite ? before[i] ?? null : i === firstWrite && !failed ? refusal : null));
    }
    const replicated = ops.map((op) => (isRecord(op) && op['op'] === 'assert' ? { op: 'comment', comment: `assert ${String(op['lock'])}` } : op));
    // A remote with a role holds an SB session's writes to it (OVN's RBAC), judged in apply with
    // the role as the Connection rows say it now and the id of this client's certificate.
    const role = this.door.dbName === 'OVN_Southbound' ? this.listener.role : '';
    const options = role === '' ? {} : { rbac: this.peerId === undefined ? { role } : { role, id: this.peerId } };
    // Replies follow the updates they caused, as with ovsdb-server: a write forwarded to the
    // leader is answered once this replica has applied it (CentralNode.transact).
    return (await this.door.central.transact(replicated, this.door.dbName, options)).results;
  }

  private async monitor(params: unknown[], version: MonitorVersion): Promise<unknown> {
    const db = this.door.database(params[0]);
    const key = JSON.stringify(params[1] ?? null);
    if (this.monitors.has(key)) throw new RpcError('duplicate monitor ID');
    if (this.monitors.size >= this.door.limits.monitorsMax) throw new RpcError(OvsdbErrorName.resourcesExhausted, `more than ${this.door.limits.monitorsMax} monitors`);
    const monitor: Monitor = { id: params[1] ?? null, db: db.schema.name, version, tables: parseMonitorRequests(db, params[2], version) };
    const isMain = db !== this.door.serverDb.db;
    // Everything below runs without awaiting: the snapshot and the subscription are taken at
    // the same revision, so no change is missed or reported twice.
    const revision = isMain ? this.door.central.revision : 0;
    this.monitors.set(key, monitor);
    if (version !== 3) return initialUpdates(monitor, db);
    const tag = this.door.txnTag;
    const since = isMain ? revisionOfTxnId(params[3], tag) : undefined;
    if (since !== undefined && since <= revision) {
      const h = this.door.feed.history.since(since);
      if (h.kind === 'ok') {
        const updates = changeUpdates(monitor, netChanges(db, h.items.map((i) => i.delta))) ?? {};
        return [true, txnIdOf(revision, tag), updates];
      }
    }
    return [false, txnIdOf(revision, tag), initialUpdates(monitor, db)];
  }

  private monitorCondChange(params: unknown[]): unknown {
    const [oldId, newId, requests] = params;
    const oldKey = JSON.stringify(oldId ?? null);
    const monitor = this.monitors.get(oldKey);
    if (monitor === undefined) throw new RpcError('unknown monitor');
    if (monitor.version === 1) throw new RpcError(OvsdbErrorName.syntaxError, 'monitor_cond_change on a plain monitor');
    const newKey = JSON.stringify(newId ?? null);
    if (newKey !== oldKey && this.monitors.has(newKey)) throw new RpcError('duplicate monitor ID');
    if (!isRecord(requests)) throw new RpcError(OvsdbErrorName.syntaxError, 'monitor_cond_change requests must be an object');
    // Validate every table's new condition before changing any.
    const changes: [string, ReturnType<typeof parseMonitorWhere>][] = [];
    for (const [table, value] of Object.entries(requests)) {
      const tm = monitor.tables.get(table);
      if (tm === undefined) throw new RpcError(OvsdbErrorName.syntaxError, `table ${table} is not monitored`);
      const first: unknown = Array.isArray(value) ? value[0] : value;
      if (!isRecord(first)) throw new RpcError(OvsdbErrorName.syntaxError, `condition change for ${table} must be an object`);
      changes.push([table, parseMonitorWhere(tm.schema, first['where'])]);
    }
    const db = this.door.database(monitor.db);
    const updates: TableUpdates = {};
    for (const [table, where] of changes) {
      const tm = monitor.tables.get(table);
      if (tm === undefined) continue;
      const oldWhere = tm.where;
      tm.where = where;
      const rows = conditionChangeUpdates(monitor, table, oldWhere, db);
      if (Object.keys(rows).length > 0) updates[table] = rows;
    }
    this.monitors.delete(oldKey);
    monitor.id = newId ?? null;
    this.monitors.set(newKey, monitor);
    if (Object.keys(updates).length > 0) this.sendUpdates(monitor, updates, this.door.central.revision);
    return {};
  }

  private lock(method: 'lock' | 'steal' | 'unlock', params: unknown[]): unknown {
    const name = params[0];
    if (typeof name !== 'string' || params.length !== 1) throw new RpcError(OvsdbErrorName.syntaxError, `${method} takes one lock name`);
    const locks = this.door.locks;
    switch (method) {
      case 'lock': {
        if (this.locksHeld.has(name)) throw new RpcError(OvsdbErrorName.syntaxError, `lock ${name} already requested on this connection`);
        this.locksHeld.add(name);
        return { locked: locks.lock(name, this) };
      }
      case 'steal':
        this.locksHeld.add(name);
        locks.steal(name, this);
        return { locked: true };
      case 'unlock':
        if (!this.locksHeld.delete(name)) throw new RpcError(OvsdbErrorName.syntaxError, `lock ${name} not held or requested on this connection`);
        locks.unlock(name, this);
        return {};
    }
  }

  private sendUpdates(m: Monitor, updates: TableUpdates, revision: number): void {
    if (m.version === 1) this.notify('update', [m.id, updates]);
    else if (m.version === 2) this.notify('update2', [m.id, updates]);
    else this.notify('update3', [m.id, txnIdOf(revision, this.door.txnTag), updates]);
  }

  private onMainCommit(revision: number, delta: DbDelta): void {
    const name = this.door.dbName;
    for (const m of this.monitors.values()) {
      if (m.db !== name) continue;
      const updates = changeUpdates(m, delta.changes);
      if (updates !== undefined) this.sendUpdates(m, updates, revision);
    }
  }

  onServerDelta(delta: DbDelta): void {
    for (const m of this.monitors.values()) {
      if (m.db !== '_Server') continue;
      const updates = changeUpdates(m, delta.changes);
      if (updates !== undefined) this.sendUpdates(m, updates, 0);
    }
  }
}

/** The operations that write; a read-only remote refuses them. */
const writeOps = new Set(['insert', 'update', 'mutate', 'delete']);

/** Whether a Connection row's target names a listener: ptcp:/pssl: by port, punix: by path. */
function targetNames(target: string, listen: DoorListen): boolean {
  if ('path' in listen) return target === `punix:${listen.path}`;
  const m = /^p(?:tcp|ssl):(\d+)(?::.*)?$/.exec(target);
  return m !== null && Number(m[1]) === listen.port;
}

/** What the Connection rows set for one listener (see connectionOptions). */
export interface ListenerOptions {
  /** The inactivity probe in ms (0: none); undefined when no row sets one. */
  readonly probeMs: number | undefined;
  readonly readOnly: boolean;
  /** The RBAC role of the listener's sessions ("" for none): OVN's role=ovn-controller. */
  readonly role: string;
}

/**
 * The options Connection rows set for a listener, as ovsdb-server applies a row's to the remote
 * it names: of the rows whose passive target names the listener — ptcp: or pssl: with its port
 * (the address in the target is not compared), punix: with its path — the first (in UUID
 * order) that sets a column gives it. inactivity_probe 0 turns probes off; other values are at
 * least 1000 ms, as OVS's reconnect rounds them. read_only true refuses writes. A non-empty role
 * holds the listener's sessions to RBAC (an SB door's; the NB has no RBAC): a row that names the
 * listener with one gives it, whatever another such row leaves empty, so that no row of the
 * operator's can be lifted by one that happens to sort first.
 */
export function connectionOptions(rows: Iterable<Row>, listen: DoorListen): ListenerOptions {
  let probeMs: number | undefined;
  let readOnly: boolean | undefined;
  let role: string | undefined;
  for (const row of [...rows].sort((a, b) => (a._uuid < b._uuid ? -1 : a._uuid > b._uuid ? 1 : 0))) {
    const r = row as unknown as { target?: unknown; inactivity_probe?: unknown; read_only?: unknown; role?: unknown };
    if (typeof r.target !== 'string' || !targetNames(r.target, listen)) continue;
    const probe = Array.isArray(r.inactivity_probe) ? (r.inactivity_probe[0] as number | undefined) : undefined;
    if (probeMs === undefined && probe !== undefined) probeMs = probe === 0 ? 0 : Math.max(1000, probe);
    if (readOnly === undefined && typeof r.read_only === 'boolean') readOnly = r.read_only;
    if (role === undefined && typeof r.role === 'string' && r.role !== '') role = r.role;
  }
  return { probeMs, readOnly: readOnly ?? false, role: role ?? '' };
}

/**
 * Where a Connection row's target asks the door to listen, or why it cannot: ptcp:PORT[:IP] and
 * pssl:PORT[:IP] (`defaultHost` when IP is left out: every IPv4 address, as ovsdb-server reads a
 * row; an IPv6 address in brackets) and punix:PATH are served. The active targets (tcp:, ssl:,
 * unix:) would have the server connect out, which it does not do.
 */
export function passiveTarget(target: string, defaultHost = '0.0.0.0'): DoorListen | string {
  const tcp = /^p(tcp|ssl):(\d+)(?::(.+))?$/.exec(target);
  if (tcp !== null) {
    const port = Number(tcp[2]);
    if (port > 65535) return `port ${port} is out of range`;
    const host = tcp[3] === undefined ? defaultHost : tcp[3].replace(/^\[(.*)\]$/, '$1');
    return tcp[1] === 'ssl' ? { host, port, ssl: true } : { host, port };
  }
  const punix = /^punix:(.+)$/.exec(target);
  if (punix !== null) return { path: punix[1] as string };
  if (/^(tcp|ssl|unix):/.test(target)) return 'active remotes (the server connecting out) are not supported';
  return 'not a remote: expected ptcp:PORT[:IP], pssl:PORT[:IP] or punix:PATH';
}

/** One listening socket of a door, with the options its Connection rows give it. */
class Listener {
  readonly connections = new Set<Connection>();
  address: DoorListen | undefined;
  private options: ListenerOptions = { probeMs: undefined, readOnly: false, role: '' };

  constructor(
    private readonly door: Door,
    readonly target: string,
    readonly server: net.Server,
    /** Opened because a Connection row asked (closed when the row goes). */
    readonly fromDb: boolean,
  ) {}

  get readOnly(): boolean {
    return this.options.readOnly;
  }

  /** The RBAC role of this listener's sessions as the Connection rows set it now ("" for none). */
  get role(): string {
    return this.options.role;
  }

  /** The inactivity probe of this listener's connections (the door's own unless a row sets one). */
  probeMs(): number {
    return this.options.probeMs ?? this.door.limits.inactivityProbeMs;
  }

  /** Reads the rows' options again; connections re-arm their probe if its interval changed. */
  optionsChanged(rows: readonly Row[]): void {
    if (this.address === undefined) return;
    const before = this.probeMs();
    this.options = connectionOptions(rows, this.address);
    if (this.probeMs() !== before) for (const c of this.connections) c.rearmProbe();
  }

  /** Stops listening and ends the connections it accepted, as ovsdb-server does for a removed remote. */
  async close(): Promise<void> {
    this.door.listeners.delete(this);
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const c of [...this.connections]) c.destroy();
    await closed;
  }
}

/** The target a command-line listener answers to in the Connection rows (as ovsdb-server keys remotes). */
function targetOf(listen: DoorListen): string {
  return 'path' in listen ? `punix:${listen.path}` : `${listen.ssl === true ? 'pssl' : 'ptcp'}:${listen.port}:${listen.host.includes(':') ? `[${listen.host}]` : listen.host}`;
}

/** Opens one listener of `door`; resolves once it listens (with its options read). */
async function openListener(door: Door, target: string, where: DoorListen, fromDb: boolean): Promise<Listener> {
  const ssl = !('path' in where) && where.ssl === true;
  let server: net.Server;
  if (ssl) {
    const context = door.ssl.current();
    if ('error' in context) throw new Error(context.error);
    server = tls.createServer({ ...context.options, handshakeTimeout: door.limits.tlsHandshakeMs });
  } else {
    server = net.createServer();
  }
  const listener = new Listener(door, target, server, fromDb);
  // A reply and the update it caused are written one after the other, each small: with
  // Nagle's algorithm on, the second waits for the client's delayed ACK (~40 ms on Linux),
  // which was most of an ovn-nbctl write's time. ovsdb-server sets TCP_NODELAY too.
  // (A TLS server hears of each TCP connection this way too, before its handshake.)
  server.on('connection', (socket: net.Socket) => socket.setNoDelay(true));
  // A client whose handshake fails (no certificate, another CA's, garbage, too slow) is dropped.
  // Node leaves the socket to this listener once it listens for the event (a handshake that
  // timed out would otherwise stay open), so it is destroyed here.
  if (ssl) server.on('tlsClientError', (_err: Error, socket: tls.TLSSocket) => socket.destroy());
  server.on(ssl ? 'secureConnection' : 'connection', (socket: net.Socket) => {
    // connectionsMax bounds the door as a whole, whatever number of listeners it has.
    if (door.connections.size >= door.limits.connectionsMax) {
      socket.destroy();
      door.central.sessions.refuse('ovsdb');
      return;
    }
    const c = new Connection(door, listener, socket);
    door.connections.add(c);
    listener.connections.add(c);
  });
  capConnections(server, door.limits.connectionsMax, () => door.central.sessions.refuse('ovsdb'));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    if ('path' in where) server.listen(where.path, resolve);
    else server.listen(where.port, where.host, resolve);
  });
  server.on('error', () => undefined);
  const bound = server.address();
  listener.address = 'path' in where ? where : { ...where, port: typeof bound === 'object' && bound !== null ? bound.port : where.port };
  door.listeners.add(listener);
  listener.optionsChanged(door.connectionRows());
  return listener;
}

/** Opens the door; resolves once it listens (and has opened what the Connection rows ask for). */
export async function startOvsdbDoor(options: OvsdbDoorOptions): Promise<OvsdbDoor> {
  if (options.listen === undefined && options.remotesFromDb !== true) throw new Error('an OVSDB door needs a listener or remotesFromDb');
  const limits: OvsdbDoorLimits = { ...ovsdbDoorDefaults, ...options.limits };
  const door = new Door(options.central, limits, options.clusterId ?? options.central.schema.name, options.db ?? 'OVN_Northbound', options.ssl, options.remotesFromDb === true);
  door.onRemoteError = options.onRemoteError;
  const main = options.listen === undefined ? undefined : await openListener(door, targetOf(options.listen), options.listen, false);
  const offCommit = options.central.onCommit(() => door.refreshServer(false));
  const offConnections = door.feed.onChange((e) => {
    if (e.delta.changes.some((c) => c.table === 'Connection')) door.connectionsChanged();
    if (e.delta.changes.some((c) => c.table === 'SSL')) door.sslChanged();
  });
  // A snapshot installed from the leader replaces the rows without a change to read.
  const offRestore = options.central.onRestore(() => {
    door.sslChanged();
    door.connectionsChanged();
  });
  const statusTimer = setInterval(() => door.refreshServer(true), limits.serverStatusMs);
  statusTimer.unref();
  const sslTimer = setInterval(() => door.sslChanged(), SSL_FILES_POLL_MS);
  sslTimer.unref();
  door.remotesFromDb = options.remotesFromDb === true;
  door.connectionsChanged();
  await door.settled();
  return {
    address: main?.address,
    remotes: () => door.remotes(),
    close: async () => {
      clearInterval(statusTimer);
      clearInterval(sslTimer);
      offCommit();
      offConnections();
      offRestore();
      await door.close();
    },
  };
}
