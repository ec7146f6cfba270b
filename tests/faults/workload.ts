// The fault suite's write load, with every operation recorded for the linearizability checker.
//
// Model. Each NB Address_Set row is one register, named by its key; only one client writes a
// key, one write at a time. Write n of a key adds address v_n to the row's `addresses` (an
// insert for the first, a mutate for the rest), so once n writes have taken effect the row
// holds {v_1..v_n}: the register's value is that set. A write is recorded as a register write
// of the set it leaves; a read (a LINEARIZABLE List of the row) as a read of the set it saw
// (null: no row). Because the value carries every earlier write, an acknowledged write that
// was lost shows in the final row (its address is missing), not only in the last value.
//
// Outcomes. A call answered with success is a completed write. A call that never reached a
// member (gRPC UNAVAILABLE "No connection established", the wording grpc-js and the central
// node use for that) did nothing and is left out. Any other failure of a gRPC call is unknown:
// it may have applied, now or later (the checker's ret = Infinity). After one (or a definite
// failure, below), the client moves to a new key, so an unknown write is always the last of its
// key: its address is the only one the final row may hold that no acknowledgement covers.
// Reads that fail are left out (a read changes nothing). A key also changes every
// writesPerKeyMax writes, keeping each key's history short for the checker.
//
// Clients talk to a random member each time, so writes through followers are forwarded to
// the leader over the links the test cuts. Some clients use the Northbound gRPC API, the others
// the OVSDB door (`transact` over JSON-RPC), which forwards a follower's writes too. Both reach
// members through the client proxies, so a call can lose its connection half-way.
//
// The door's outcomes. A connection that cannot be made: not delivered. A connection that
// drops, or no reply within the deadline: unknown. A reply whose results hold an OVSDB error
// (the transaction was answered and aborted): refused, as a failed gRPC transaction. A JSON-RPC
// error reply is a definite failure (nothing was or will be written) unless the door says
// otherwise, which it does in the error's own words (see doorErrorOutcome): such a write is
// recorded as failed, leaves the history, and its address must never show in the final row.
import { JsonRpcClient, JsonRpcError, RequestFailedError } from '../../ovsdb/jsonrpc-client.js';
import { NorthboundClient } from '../../server/northbound-service.js';
import type { Operation } from '../cluster/sim/linearizability.js';
import type { Rng } from '../helpers/seeded-rng.js';
import type { ClientEndpoint } from './cluster.js';

export interface WorkloadOptions {
  /** Key names start with this (Address_Set names: letters, digits, underscores). */
  readonly prefix: string;
  readonly clients: number;
  /** How many of the clients (the last ones) use the OVSDB door; the others the Northbound gRPC API. */
  readonly ovsdbClients: number;
  /** Where the members a client may pick from are reached, asked before every call. */
  readonly endpoints: () => readonly ClientEndpoint[];
  readonly rng: Rng;
  /** A client's deadline for one call. */
  readonly callTimeoutMs: number;
  readonly writesPerKeyMax: number;
  /** The share of operations that are reads. */
  readonly readShare: number;
}

/** One key's writes as its client saw them. */
export interface KeyLog {
  readonly key: string;
  readonly client: number;
  /** Addresses of acknowledged writes, in order. */
  readonly acked: string[];
  /** The address of the write whose outcome is unknown (the key's last), if any. */
  unknown: string | undefined;
  /** The address of a write answered as a definite failure (the key's last), if any. */
  failed: string | undefined;
  /** Acknowledged mutates that matched no row (the row of an acknowledged insert was gone). */
  missedRows: number;
}

export interface WorkloadCounts {
  /** Operations invoked. */
  ops: number;
  writesAcked: number;
  writesUnknown: number;
  /** Never reached a member: left out of the history. */
  writesNotDelivered: number;
  readsOk: number;
  readsFailed: number;
  /** Transactions answered "failed" (none is expected: every one is valid). */
  writesRefused: number;
  /** Writes the door answered with an error that says nothing was written (left out of the history). */
  writesFailed: number;
}

type RecordedOp = Operation & { readonly endpoint: string };

/** How a call that did not answer with a result ended, for the model. */
type Outcome = 'not-delivered' | 'failed' | 'unknown';

/** A gRPC failure that says the call never left the client. */
function neverDelivered(err: unknown): boolean {
  const e = err as { code?: number; details?: string };
  return e.code === 14 && typeof e.details === 'string' && /No connection established/i.test(e.details);
}

/**
 * What a JSON-RPC error reply of the door to `transact` says about the write. The door names an
 * outcome it cannot know: "timeout", or words saying the transaction may have committed
 * ("the outcome of this transaction is unknown", "it may or may not have committed"). Any other
 * error is given before anything was proposed that could still apply ("no leader", a syntax
 * error): a definite failure.
 */
export function doorErrorOutcome(error: unknown): 'failed' | 'unknown' {
  const name = typeof error === 'string' ? error : String((error as { error?: unknown } | null)?.error);
  const details = typeof error === 'object' && error !== null ? String((error as { details?: unknown }).details ?? '') : '';
  if (name === 'timeout' || /outcome of this transaction is unknown|may or may not have committed/.test(details)) return 'unknown';
  return 'failed';
}

/** The outcome of a door call that threw (the connection was made and the request written). */
function doorOutcome(err: unknown): Outcome {
  if (err instanceof JsonRpcError) return doorErrorOutcome(err.error);
  // Refused by the client before it was written.
  if (err instanceof RequestFailedError && err.kind === 'too many requests') return 'not-delivered';
  // The connection dropped, or no reply in time.
  return 'unknown';
}

/** One client's connection to one member, over either protocol. */
interface Session {
  /** Resolves with the transaction's results, or rejects with what the outcome() of the error reads. */
  transact(op: Record<string, unknown>): Promise<{ results: unknown[]; failed: boolean }>;
  /** The `addresses` of the key's row (undefined: no row), read linearizably. */
  read(key: string): Promise<readonly string[] | undefined>;
  outcome(err: unknown): Outcome;
  close(): void;
}

class GrpcSession implements Session {
  private readonly client: NorthboundClient;

  constructor(address: string, callTimeoutMs: number) {
    this.client = new NorthboundClient(address, callTimeoutMs);
  }

  async transact(op: Record<string, unknown>): Promise<{ results: unknown[]; failed: boolean }> {
    const out = await this.client.transact([op]);
    return { results: out.results, failed: out.failed };
  }

  async read(key: string): Promise<readonly string[] | undefined> {
    const r = await this.client.list('Address_Set', [['name', '==', key]], { columns: ['addresses'], consistency: 'linearizable' });
    const row = r.rows[0];
    return row === undefined ? undefined : addressesOf(row.addresses);
  }

  outcome(err: unknown): Outcome {
    return neverDelivered(err) ? 'not-delivered' : 'unknown';
  }

  close(): void {
    this.client.close();
  }
}

/** The door's transact answers with one result per operation; an aborted one holds an error. */
function hasError(results: readonly unknown[]): boolean {
  return results.some((r) => typeof r === 'object' && r !== null && 'error' in r);
}

class OvsdbSession implements Session {
  private connection: Promise<JsonRpcClient> | undefined;

  constructor(
    private readonly endpoint: { readonly host: string; readonly port: number },
    private readonly callTimeoutMs: number,
  ) {}

  /** Connects on first use; a connection that cannot be made is "not delivered". */
  private async connected(): Promise<JsonRpcClient> {
    this.connection ??= JsonRpcClient.connect(this.endpoint, { requestTimeoutMs: this.callTimeoutMs, connectTimeoutMs: this.callTimeoutMs });
    try {
      const c = await this.connection;
      if (!c.isClosed) return c;
    } catch (err) {
      throw new NotConnectedError((err as Error).message);
    }
    throw new NotConnectedError('the connection closed before the request was written');
  }

  async transact(op: Record<string, unknown>): Promise<{ results: unknown[]; failed: boolean }> {
    const results = (await (await this.connected()).request('transact', ['OVN_Northbound', op])) as unknown[];
    return { results, failed: hasError(results) };
  }

  async read(key: string): Promise<readonly string[] | undefined> {
    const select = { op: 'select', table: 'Address_Set', where: [['name', '==', key]], columns: ['addresses'] };
    const [result] = (await (await this.connected()).request('transact', ['OVN_Northbound', select])) as { rows?: { addresses: unknown }[]; error?: unknown }[];
    if (result?.rows === undefined) throw new Error(`select answered ${JSON.stringify(result)}`);
    const row = result.rows[0];
    return row === undefined ? undefined : addressesOf(row.addresses);
  }

  outcome(err: unknown): Outcome {
    return err instanceof NotConnectedError ? 'not-delivered' : doorOutcome(err);
  }

  close(): void {
    void this.connection?.then((c) => c.abort(new Error('the workload is done with this connection')), () => undefined);
  }
}

class NotConnectedError extends Error {}

/** The `addresses` set of a row as List returns it: OVSDB JSON, a bare atom for one element. */
function addressesOf(json: unknown): string[] {
  if (typeof json === 'string') return [json];
  if (Array.isArray(json) && json[0] === 'set' && Array.isArray(json[1])) return (json[1] as unknown[]).map(String);
  throw new Error(`unexpected addresses value ${JSON.stringify(json)}`);
}

/** The register value of a set of addresses: sorted, space-joined (null for no row). */
export function registerValue(addresses: readonly string[] | undefined): string | null {
  return addresses === undefined ? null : [...addresses].sort().join(' ');
}

export class Workload {
  readonly history: RecordedOp[] = [];
  readonly keys = new Map<string, KeyLog>();
  readonly counts: WorkloadCounts = { ops: 0, writesAcked: 0, writesUnknown: 0, writesNotDelivered: 0, readsOk: 0, readsFailed: 0, writesRefused: 0, writesFailed: 0 };
  readonly refusals: string[] = [];
  /** Each client's current key and how many writes it has had. */
  private readonly current: { key: KeyLog; writes: number }[] = [];
  private keySeq = 0;
  private stopping = false;
  private loops: Promise<void>[] = [];
  private readonly sessions = new Map<string, Session>();

  constructor(readonly options: WorkloadOptions) {
    for (let c = 0; c < options.clients; c++) this.current.push({ key: this.newKey(c), writes: 0 });
  }

  private newKey(client: number): KeyLog {
    const key = `${this.options.prefix}_c${client}_k${++this.keySeq}`;
    const log: KeyLog = { key, client, acked: [], unknown: undefined, failed: undefined, missedRows: 0 };
    this.keys.set(key, log);
    return log;
  }

  private rotate(client: number): void {
    this.current[client] = { key: this.newKey(client), writes: 0 };
  }

  /** Whether client `client` uses the OVSDB door. */
  private usesOvsdb(client: number): boolean {
    return client >= this.options.clients - this.options.ovsdbClients;
  }

  /** One session per client and member; dropped after a failure so the next call dials anew. */
  private session(client: number, endpoint: ClientEndpoint): Session {
    const id = `${client}@${endpoint.member}`;
    let s = this.sessions.get(id);
    if (s === undefined) {
      s = this.usesOvsdb(client) ? new OvsdbSession(endpoint.ovsdb, this.options.callTimeoutMs) : new GrpcSession(endpoint.nb, this.options.callTimeoutMs);
      this.sessions.set(id, s);
    }
    return s;
  }

  private dropSession(client: number, endpoint: ClientEndpoint): void {
    const id = `${client}@${endpoint.member}`;
    this.sessions.get(id)?.close();
    this.sessions.delete(id);
  }

  private endpointName(client: number, endpoint: ClientEndpoint): string {
    return `${endpoint.member}/${this.usesOvsdb(client) ? 'ovsdb' : 'grpc'}`;
  }

  start(): void {
    this.loops = this.current.map((_, c) => this.loop(c));
  }

  /** Stops invoking; resolves once every call in flight has an answer or its deadline passed. */
  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.all(this.loops);
    for (const s of this.sessions.values()) s.close();
    this.sessions.clear();
  }

  private async loop(client: number): Promise<void> {
    while (!this.stopping) {
      const endpoint = this.options.rng.pick(this.options.endpoints());
      this.counts.ops++;
      if (this.options.rng.chance(this.options.readShare)) await this.read(client, endpoint);
      else await this.write(client, endpoint);
    }
  }

  private async write(client: number, endpoint: ClientEndpoint): Promise<void> {
    const cur = this.current[client] as { key: KeyLog; writes: number };
    const log = cur.key;
    const address = `10.${client}.${Math.floor(cur.writes / 200)}.${(cur.writes % 200) + 1}`;
    const value = registerValue([...log.acked, address]);
    const op =
      cur.writes === 0
        ? { op: 'insert', table: 'Address_Set', row: { name: log.key, addresses: ['set', [address]] } }
        : { op: 'mutate', table: 'Address_Set', where: [['name', '==', log.key]], mutations: [['addresses', 'insert', ['set', [address]]]] };
    const name = this.endpointName(client, endpoint);
    const session = this.session(client, endpoint);
    const call = performance.now();
    try {
      const out = await session.transact(op);
      const ret = performance.now();
      if (out.failed) {
        // A valid transaction refused: nothing changed (a finding, reported by the scenario).
        this.counts.writesRefused++;
        this.refusals.push(`${log.key} ${address} via ${name}: ${JSON.stringify(out.results)}`);
        this.rotate(client);
        return;
      }
      if (cur.writes > 0 && (out.results[0] as { count?: number }).count !== 1) log.missedRows++;
      this.history.push({ client: String(client), key: log.key, kind: 'write', value, call, ret, endpoint: name });
      log.acked.push(address);
      this.counts.writesAcked++;
      cur.writes++;
      if (cur.writes >= this.options.writesPerKeyMax) this.rotate(client);
    } catch (err) {
      this.dropSession(client, endpoint);
      switch (session.outcome(err)) {
        case 'not-delivered':
          this.counts.writesNotDelivered++;
          await new Promise((r) => setTimeout(r, 20));
          return;
        case 'failed':
          // Nothing was written: out of the history, and its address must not show up.
          log.failed = address;
          this.counts.writesFailed++;
          this.rotate(client);
          await new Promise((r) => setTimeout(r, 20));
          return;
        case 'unknown':
          this.history.push({ client: String(client), key: log.key, kind: 'write', value, call, ret: Number.POSITIVE_INFINITY, endpoint: name });
          log.unknown = address;
          this.counts.writesUnknown++;
          this.rotate(client);
      }
    }
  }

  private async read(client: number, endpoint: ClientEndpoint): Promise<void> {
    // Half the reads look at another client's key, as it is at the call.
    const other = this.options.rng.chance(0.5) ? this.options.rng.int(0, this.options.clients - 1) : client;
    const key = (this.current[other] as { key: KeyLog }).key.key;
    const session = this.session(client, endpoint);
    const call = performance.now();
    try {
      const addresses = await session.read(key);
      const ret = performance.now();
      this.history.push({ client: String(client), key, kind: 'read', value: registerValue(addresses), call, ret, endpoint: this.endpointName(client, endpoint) });
      this.counts.readsOk++;
    } catch {
      this.dropSession(client, endpoint);
      this.counts.readsFailed++;
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /**
   * Checks the rows as they finally are (name → addresses, read once everything settled)
   * against what the clients were told: every acknowledged address must be there, and
   * nothing else but an unknown write's. Adds the final values to the history as reads
   * after every other operation. Returns the acknowledged-but-lost writes and the phantoms.
   */
  settle(finalRows: ReadonlyMap<string, readonly string[]>, atMs: number): { lost: string[]; phantoms: string[] } {
    const lost: string[] = [];
    const phantoms: string[] = [];
    for (const log of this.keys.values()) {
      const row = finalRows.get(log.key);
      const have = new Set(row ?? []);
      for (const a of log.acked) if (!have.has(a)) lost.push(`${log.key}: ${a}`);
      for (const a of have) {
        if (a === log.failed) phantoms.push(`${log.key}: ${a} (answered as a definite failure)`);
        else if (!log.acked.includes(a) && a !== log.unknown) phantoms.push(`${log.key}: ${a}`);
      }
      if (row === undefined && log.acked.length === 0 && log.unknown === undefined) continue;
      this.history.push({ client: 'final', key: log.key, kind: 'read', value: registerValue(row), call: atMs, ret: atMs + 1, endpoint: 'final' });
    }
    for (const [name] of finalRows) if (!this.keys.has(name)) phantoms.push(`${name}: a row no client inserted`);
    return { lost, phantoms };
  }
}
