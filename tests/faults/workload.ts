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
// node use for that) did nothing and is left out. Any other failure is unknown: it may have
// applied, now or later (the checker's ret = Infinity). After one, the client moves to a new
// key, so an unknown write is always the last of its key: its address is the only one the
// final row may hold that no acknowledgement covers. Reads that fail are left out (a read
// changes nothing). A key also changes every writesPerKeyMax writes, keeping each key's
// history short for the checker.
//
// Clients talk to a random member each time, so writes through followers are forwarded to
// the leader over the links the test cuts.
import { NorthboundClient } from '../../server/northbound-service.js';
import type { Operation } from '../cluster/sim/linearizability.js';
import type { Rng } from '../helpers/seeded-rng.js';

export interface WorkloadOptions {
  /** Key names start with this (Address_Set names: letters, digits, underscores). */
  readonly prefix: string;
  readonly clients: number;
  /** The members' Northbound addresses a client may pick from, asked before every call. */
  readonly endpoints: () => readonly string[];
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
}

type RecordedOp = Operation & { readonly endpoint: string };

/** A gRPC failure that says the call never left the client. */
function neverDelivered(err: unknown): boolean {
  const e = err as { code?: number; details?: string };
  return e.code === 14 && typeof e.details === 'string' && /No connection established/i.test(e.details);
}

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
  readonly counts: WorkloadCounts = { ops: 0, writesAcked: 0, writesUnknown: 0, writesNotDelivered: 0, readsOk: 0, readsFailed: 0, writesRefused: 0 };
  readonly refusals: string[] = [];
  /** Each client's current key and how many writes it has had. */
  private readonly current: { key: KeyLog; writes: number }[] = [];
  private keySeq = 0;
  private stopping = false;
  private loops: Promise<void>[] = [];
  private readonly channels = new Map<string, NorthboundClient>();

  constructor(readonly options: WorkloadOptions) {
    for (let c = 0; c < options.clients; c++) this.current.push({ key: this.newKey(c), writes: 0 });
  }

  private newKey(client: number): KeyLog {
    const key = `${this.options.prefix}_c${client}_k${++this.keySeq}`;
    const log: KeyLog = { key, client, acked: [], unknown: undefined, missedRows: 0 };
    this.keys.set(key, log);
    return log;
  }

  private rotate(client: number): void {
    this.current[client] = { key: this.newKey(client), writes: 0 };
  }

  /** One channel per client and member; dropped after a failure so the next call dials anew. */
  private channel(client: number, endpoint: string): NorthboundClient {
    const id = `${client}@${endpoint}`;
    let ch = this.channels.get(id);
    if (ch === undefined) {
      ch = new NorthboundClient(endpoint, this.options.callTimeoutMs);
      this.channels.set(id, ch);
    }
    return ch;
  }

  private dropChannel(client: number, endpoint: string): void {
    const id = `${client}@${endpoint}`;
    this.channels.get(id)?.close();
    this.channels.delete(id);
  }

  start(): void {
    this.loops = this.current.map((_, c) => this.loop(c));
  }

  /** Stops invoking; resolves once every call in flight has an answer or its deadline passed. */
  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.all(this.loops);
    for (const ch of this.channels.values()) ch.close();
    this.channels.clear();
  }

  private async loop(client: number): Promise<void> {
    while (!this.stopping) {
      const endpoint = this.options.rng.pick(this.options.endpoints());
      this.counts.ops++;
      if (this.options.rng.chance(this.options.readShare)) await this.read(client, endpoint);
      else await this.write(client, endpoint);
    }
  }

  private async write(client: number, endpoint: string): Promise<void> {
    const cur = this.current[client] as { key: KeyLog; writes: number };
    const log = cur.key;
    const address = `10.${client}.${Math.floor(cur.writes / 200)}.${(cur.writes % 200) + 1}`;
    const value = registerValue([...log.acked, address]);
    const op =
      cur.writes === 0
        ? { op: 'insert', table: 'Address_Set', row: { name: log.key, addresses: ['set', [address]] } }
        : { op: 'mutate', table: 'Address_Set', where: [['name', '==', log.key]], mutations: [['addresses', 'insert', ['set', [address]]]] };
    const call = performance.now();
    try {
      const out = await this.channel(client, endpoint).transact([op]);
      const ret = performance.now();
      if (out.failed) {
        // A valid transaction refused: nothing changed (a finding, reported by the scenario).
        this.counts.writesRefused++;
        this.refusals.push(`${log.key} ${address}: ${JSON.stringify(out.results)}`);
        this.rotate(client);
        return;
      }
      if (cur.writes > 0 && (out.results[0] as { count?: number }).count !== 1) log.missedRows++;
      this.history.push({ client: String(client), key: log.key, kind: 'write', value, call, ret, endpoint });
      log.acked.push(address);
      this.counts.writesAcked++;
      cur.writes++;
      if (cur.writes >= this.options.writesPerKeyMax) this.rotate(client);
    } catch (err) {
      this.dropChannel(client, endpoint);
      if (neverDelivered(err)) {
        this.counts.writesNotDelivered++;
        await new Promise((r) => setTimeout(r, 20));
        return;
      }
      this.history.push({ client: String(client), key: log.key, kind: 'write', value, call, ret: Number.POSITIVE_INFINITY, endpoint });
      log.unknown = address;
      this.counts.writesUnknown++;
      this.rotate(client);
    }
  }

  private async read(client: number, endpoint: string): Promise<void> {
    // Half the reads look at another client's key, as it is at the call.
    const other = this.options.rng.chance(0.5) ? this.options.rng.int(0, this.options.clients - 1) : client;
    const key = (this.current[other] as { key: KeyLog }).key.key;
    const call = performance.now();
    try {
      const r = await this.channel(client, endpoint).list('Address_Set', [['name', '==', key]], { columns: ['addresses'], consistency: 'linearizable' });
      const ret = performance.now();
      const row = r.rows[0];
      const value = row === undefined ? null : registerValue(addressesOf(row.addresses));
      this.history.push({ client: String(client), key, kind: 'read', value, call, ret, endpoint });
      this.counts.readsOk++;
    } catch {
      this.dropChannel(client, endpoint);
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
      for (const a of have) if (!log.acked.includes(a) && a !== log.unknown) phantoms.push(`${log.key}: ${a}`);
      if (row === undefined && log.acked.length === 0 && log.unknown === undefined) continue;
      this.history.push({ client: 'final', key: log.key, kind: 'read', value: registerValue(row), call: atMs, ret: atMs + 1, endpoint: 'final' });
    }
    for (const [name] of finalRows) if (!this.keys.has(name)) phantoms.push(`${name}: a row no client inserted`);
    return { lost, phantoms };
  }
}
