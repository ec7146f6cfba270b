// What nbctl commands stand on: a Northbound connection that fails over between members, the
// error type whose message is printed as ovn-nbctl prints its own, and record lookup by name
// or UUID as ovn-nbctl does it.
import type { NorthboundClient } from '../../../server/northbound-service.js';

export class NbctlError extends Error {}

export type RowJson = Record<string, unknown>;

/**
 * What a command reads and writes through: the cluster itself (Nb), or, for several commands
 * in one transaction, a local copy that queues their writes (NbTransaction).
 */
export interface NbAccess {
  rows(table: string, where?: unknown[]): Promise<RowJson[]>;
  read(table: string): Promise<TableRead>;
  changedSince(read: TableRead, timeoutMs: number | undefined): Promise<'changed' | 'timeout' | 'cut'>;
  schema(): Promise<unknown>;
  /** Commits ops (or queues them, in a transaction of several commands) and returns their results. */
  transact(ops: unknown[]): Promise<unknown[]>;
  /** Names a row for the later commands of the transaction (get's --id=@name). */
  nameRow(id: string, uuid: string): void;
}

/** Whether a uuid-name is a row id ("@name", db-ctl-base's --id) rather than a name local to
 *  one command's operations. */
export const isRowId = (name: string): boolean => name.startsWith('@');

/** db-ctl-base's words for a row id used and never defined. */
export const rowIdNeverCreated = (id: string): NbctlError => new NbctlError(`row id "${id}" is referenced but never created (e.g. with "-- --id=${id} create ...")`);

/**
 * `v` (operations, or any part of them) with every ["named-uuid", name] replaced by what `f`
 * returns for the name. It reads RFC 7047's value notation: a set's or map's elements are values
 * of their own, so a set of strings that happens to hold "named-uuid" is left alone.
 */
export function mapNamedUuids(v: unknown, f: (name: string) => unknown): unknown {
  const walk = (x: unknown): unknown => {
    if (Array.isArray(x)) {
      if (x.length === 2 && x[0] === 'named-uuid' && typeof x[1] === 'string') return f(x[1]);
      if (x.length === 2 && x[0] === 'set' && Array.isArray(x[1])) return ['set', (x[1] as unknown[]).map(walk)];
      if (x.length === 2 && x[0] === 'map' && Array.isArray(x[1])) return ['map', (x[1] as unknown[]).map((pair) => (Array.isArray(pair) ? pair.map(walk) : pair))];
      return x.map(walk);
    }
    if (x !== null && typeof x === 'object') return Object.fromEntries(Object.entries(x).map(([k, y]) => [k, walk(y)]));
    return x;
  };
  return walk(v);
}

/**
 * A lone command's row ids: what it names (an insert's "@name") names nothing later, so the
 * name goes; a reference to one is to a row no command created.
 */
function withoutRowIds(ops: unknown[]): unknown[] {
  mapNamedUuids(ops, (name) => {
    if (isRowId(name)) throw rowIdNeverCreated(name);
  });
  return ops.map((op) => {
    const name = (op as { 'uuid-name'?: unknown } | null)?.['uuid-name'];
    if (typeof name !== 'string' || !isRowId(name)) return op;
    const { 'uuid-name': _, ...rest } = op as Record<string, unknown>;
    return rest;
  });
}

/** One nbctl command: how many arguments it takes, its own options, and what it does. */
export interface CommandSpec {
  readonly args: [number, number];
  readonly run: (nb: NbAccess, args: string[], flags: ReadonlySet<string>) => Promise<string>;
  /**
   * The command's own options in ovn-nbctl's notation ("--may-exist,--policy=,--bfd?": "="
   * takes a value, "?" may); any other option but a global one before the command is refused,
   * as ovn-nbctl refuses it.
   */
  readonly options: string;
}

/** One read of a whole table (Nb.read), which Nb.changedSince watches for changes after. */
export interface TableRead {
  readonly table: string;
  readonly rows: RowJson[];
  readonly revision: number;
  readonly member: NorthboundClient;
}

/** grpc status codes after which the next member is tried. */
const retryableCodes = new Set([4 /* DEADLINE_EXCEEDED */, 14 /* UNAVAILABLE */]);

/** How long `--wait` waits by default, as ovn-nbctl waits without --timeout: long. */
export const nbctlWaitMsDefault = 300_000;

/** Socket errors as ovn-nbctl words them ("database connection failed (Connection refused)"). */
const socketErrors: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'Connection refused',
  EHOSTUNREACH: 'No route to host',
  ENETUNREACH: 'Network is unreachable',
  ETIMEDOUT: 'Connection timed out',
  ENOTFOUND: 'unknown host',
};

/** Why a member did not answer, in one short phrase rather than grpc's whole status text. */
function unreachableReason(err: unknown): string {
  const e = err as { code?: number; details?: string; message?: string };
  const text = e.details ?? e.message ?? String(err);
  const socket = /\b(ECONNREFUSED|EHOSTUNREACH|ENETUNREACH|ETIMEDOUT|ENOTFOUND)\b/.exec(text)?.[1];
  if (socket !== undefined) return `database connection failed (${socketErrors[socket]})`;
  if (e.code === 4) return 'no answer in time';
  return text.replace(/\s*Resolution note:\s*$/, '');
}

/** A failed transaction's results as ovn-nbctl words the failure. */
export function transactionFailure(results: readonly unknown[]): NbctlError {
  const err = results.find((r) => r !== null && typeof r === 'object' && 'error' in r) as { error: string; details?: string } | undefined;
  return new NbctlError(`transaction error: ${err ? JSON.stringify({ details: err.details ?? '', error: err.error }) : 'failed'}`);
}

/** Talks to the first member that answers. */
export class Nb implements NbAccess {
  /** With --wait: every transaction also bumps NB_Global.nb_cfg, and the command then waits. */
  private waitFor: 'sb' | 'hv' | undefined;
  private waitMs = nbctlWaitMsDefault;
  /** The nb_cfg the last transaction set (with --wait), which the command waits for, and the
   *  revision that transaction committed at (the Wait is judged against state that holds it). */
  private waitTarget: number | undefined;
  private waitRevision = 0;
  private waitTimesFromMs: number | undefined;

  constructor(private readonly clients: readonly NorthboundClient[]) {}

  /** A lone command's row id names nothing later: only checked (by the command). */
  nameRow(): void {}

  /** ovn-nbctl's --wait=sb|hv: see transact() and finish(). */
  setWait(which: 'sb' | 'hv', timeoutMs = nbctlWaitMsDefault): void {
    this.waitFor = which;
    this.waitMs = timeoutMs;
  }

  private async first<T>(f: (c: NorthboundClient) => Promise<T>, retryable: ReadonlySet<number> = retryableCodes): Promise<T> {
    const failures: string[] = [];
    for (const c of this.clients) {
      try {
        return await f(c);
      } catch (err) {
        if (!retryable.has((err as { code?: number }).code ?? -1)) throw err;
        failures.push(`${c.address}: ${unreachableReason(err)}`);
      }
    }
    throw new NbctlError(failures.length === 0 ? 'no endpoints' : `no member answered (${failures.join('; ')})`);
  }

  /** Commits ops; a failed transaction becomes an NbctlError with ovn-nbctl's wording. */
  async transact(ops: unknown[]): Promise<unknown[]> {
    // With --wait, the transaction also bumps nb_cfg (as ovn-nbctl does) and reads the new value
    // back in the same transaction, so the target is exactly the one this change set.
    // The leading "wait" fails the whole transaction (so nothing changes) when there is no
    // NB_Global row to bump.
    const bump = this.waitFor === undefined ? [] : [
      { op: 'wait', table: 'NB_Global', where: [], columns: ['_uuid'], until: '!=', rows: [], timeout: 0 },
      { op: 'mutate', table: 'NB_Global', where: [], mutations: [['nb_cfg', '+=', 1]] },
      { op: 'select', table: 'NB_Global', where: [], columns: ['nb_cfg'] },
    ];
    const out = await this.first((c) => c.transact([...withoutRowIds(ops), ...bump]));
    if (out.failed && bump.length > 0 && (out.results[ops.length] as { error?: string } | null)?.error === 'timed out') {
      throw new NbctlError('--wait: the database has no NB_Global row (run `ovnts up`, which creates it)');
    }
    if (out.failed) throw transactionFailure(out.results);
    if (bump.length > 0) {
      const selected = out.results[ops.length + 2] as { rows?: { nb_cfg?: number }[] } | undefined;
      const target = selected?.rows?.[0]?.nb_cfg;
      if (target === undefined) throw new NbctlError('--wait: the database has no NB_Global row (run `ovnts up`, which creates it)');
      this.waitTarget = target;
      this.waitRevision = out.revision;
    }
    return out.results.slice(0, ops.length);
  }

  /**
   * Ends a command: with --wait, a command that wrote nothing still bumps nb_cfg (ovn-nbctl's
   * `--wait=sb sync`), then waits until sb_cfg or hv_cfg reaches it.
   */
  async finish(): Promise<string> {
    const which = this.waitFor;
    if (which === undefined) return '';
    if (this.waitTarget === undefined) await this.transact([]);
    const target = this.waitTarget as number;
    try {
      // A member that timed out waiting would not do better than the next: only UNAVAILABLE moves on.
      await this.first((c) => c.wait(target, which, this.waitMs, this.waitRevision), new Set([14]));
    } catch (err) {
      if ((err as { code?: number }).code === 4) throw new NbctlError(`timed out waiting for ${which}_cfg to reach ${target}`);
      throw err;
    }
    return this.waitTimesFromMs === undefined ? '' : this.waitTimes(target, which, this.waitTimesFromMs);
  }

  /** ovn-nbctl's --print-wait-time: finish() also says how long the wait took, counted from
   *  `fromMs` (ms since the epoch: when the command line started). */
  printWaitTimes(fromMs: number): void {
    this.waitTimesFromMs = fromMs;
  }

  /**
   * ovn-nbctl's report of the wait, from NB_Global's timestamps (ms since the epoch). A Wait for
   * hv can return on acks not yet committed (server/live-acks.ts); hv_cfg_timestamp is written
   * with them, a commit later, and the report waits for it.
   */
  private async waitTimes(target: number, which: 'sb' | 'hv', fromMs: number): Promise<string> {
    let g: RowJson = {};
    for (;;) {
      const read = await this.read('NB_Global');
      g = read.rows[0] ?? {};
      if (which === 'sb' || Number(g.hv_cfg ?? 0) >= target) break;
      if ((await this.changedSince(read, this.waitMs)) === 'timeout') throw new NbctlError(`timed out waiting for hv_cfg to reach ${target}`);
    }
    const since = (column: string): number => Number(g[column] ?? 0) - fromMs;
    let out = `Time spent on processing nb_cfg ${target}:\n`;
    out += `\tovn-northd delay before processing:\t${since('nb_cfg_timestamp')}ms\n`;
    out += `\tovn-northd completion:\t\t\t${since('sb_cfg_timestamp')}ms\n`;
    if (which === 'hv') out += `\tovn-controller(s) completion:\t\t${since('hv_cfg_timestamp')}ms\n`;
    return out;
  }

  private schemaJson: unknown;

  /** The OVN_Northbound schema (RFC 7047 JSON), fetched once. */
  async schema(): Promise<unknown> {
    this.schemaJson ??= await this.first((c) => c.getSchema());
    return this.schemaJson;
  }

  rows(table: string, where: unknown[] = []): Promise<RowJson[]> {
    return this.first((c) => c.list(table, where)).then((r) => r.rows);
  }

  /** Every row of `table`, the revision they were read at, and the member that read them. */
  read(table: string): Promise<TableRead> {
    return this.first(async (c) => ({ table, ...(await c.list(table)), member: c }));
  }

  /**
   * Waits for the first change to the read's table after its revision, watched on the member
   * that made the read: 'changed' then, 'timeout' after timeoutMs (never without one), and 'cut'
   * when the member ends the watch (it went away, or dropped the watcher), after which the
   * caller reads again, from whichever member answers.
   */
  changedSince(read: TableRead, timeoutMs: number | undefined): Promise<'changed' | 'timeout' | 'cut'> {
    return new Promise((resolve) => {
      const stream = read.member.watch([read.table], read.revision);
      let timer: NodeJS.Timeout | undefined;
      const done = (outcome: 'changed' | 'timeout' | 'cut'): void => {
        if (timer !== undefined) clearTimeout(timer);
        stream.removeAllListeners();
        // The cancellation itself ends the stream with an error no one needs to hear.
        stream.on('error', () => undefined);
        stream.cancel();
        resolve(outcome);
      };
      if (timeoutMs !== undefined) timer = setTimeout(() => done('timeout'), Math.max(0, timeoutMs));
      // Progress beats carry no changes; an initial state (only for revision 0) is what was read.
      stream.on('data', (e: { changes: unknown[]; initial: boolean }) => {
        if (!e.initial && e.changes.length > 0) done('changed');
      });
      stream.on('error', () => done('cut'));
      stream.on('end', () => done('cut'));
    });
  }

  close(): void {
    for (const c of this.clients) c.close();
  }
}

/** The elements of an RFC 7047 set value (a bare atom is a one-element set). */
export const setOf = (v: unknown): unknown[] => (Array.isArray(v) && v[0] === 'set' ? (v[1] as unknown[]) : v === undefined ? [] : [v]);
/** The pairs of an RFC 7047 map value. */
export const mapOf = (v: unknown): [unknown, unknown][] => (Array.isArray(v) && v[0] === 'map' ? (v[1] as [unknown, unknown][]) : []);
export const uuidOf = (row: RowJson): string => (row._uuid as [string, string])[1];
/** An atom as text: a uuid's id, or the value itself. */
export const text = (v: unknown): string => (Array.isArray(v) && (v[0] === 'uuid' || v[0] === 'named-uuid') ? String(v[1]) : String(v));
export const uuidRef = (u: string): [string, string] => ['uuid', u];

/** How ovn-nbctl's "Multiple ... named" message names a kind of record, where it is not "<what>s". */
const multipleName: Record<string, string> = { router: 'logical routers', switch: 'logical switches', 'address set': 'Address Sets' };


/**
 * Finds a row by name (or by UUID), as ovn-nbctl's lookups do, with its messages: `what` is
 * e.g. "switch", "router", "port"; `nameColumn` the column holding names.
 */
export async function findRecord(nb: NbAccess, table: string, id: string, what: string, nameColumn = 'name'): Promise<RowJson> {
  // A UUID in either case, as OVS reads one (rows hold them in lower case).
  if (isUuid(id)) {
    const byUuid = await nb.rows(table, [['_uuid', '==', uuidRef(id.toLowerCase())]]);
    if (byUuid[0] !== undefined) return byUuid[0];
  }
  const byName = await nb.rows(table, [[nameColumn, '==', id]]);
  if (byName.length > 1) throw new NbctlError(`Multiple ${multipleName[what] ?? `${what}s`} named '${id}'.  Use a UUID.`);
  if (byName[0] !== undefined) return byName[0];
  throw new NbctlError(`${id}: ${what} ${isUuid(id) ? 'UUID' : 'name'} not found`);
}

/** Like findRecord, but undefined when absent. */
export async function maybeRecord(nb: NbAccess, table: string, id: string, what: string, nameColumn = 'name'): Promise<RowJson | undefined> {
  try {
    return await findRecord(nb, table, id, what, nameColumn);
  } catch (err) {
    if (err instanceof NbctlError && /not found$/.test(err.message)) return undefined;
    throw err;
  }
}

/** Lines sorted the way ovn-nbctl sorts its listings: by the name in parentheses. */
export function listing(rows: RowJson[], nameColumn = 'name'): string {
  return rows
    .map((r) => ({ name: String(r[nameColumn] ?? ''), line: `${uuidOf(r)} (${String(r[nameColumn] ?? '')})\n` }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((x) => x.line)
    .join('');
}

/** An optional column's value (a set of at most one), or undefined. */
export const optional = (v: unknown): unknown => setOf(v)[0];
/** An optional string column's value, or undefined. */
export const optionalText = (v: unknown): string | undefined => {
  const x = optional(v);
  return x === undefined ? undefined : text(x);
};
/** C's strcmp on ASCII text, for the orders ovn-nbctl sorts in. */
export const strcmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
/** The value of a "--name=value" flag, or undefined. */
export function flagValue(flags: ReadonlySet<string>, name: string): string | undefined {
  for (const f of flags) if (f.startsWith(`${name}=`)) return f.slice(name.length + 1);
  return undefined;
}
/** Whether `s` reads as a UUID to OVS's uuid_from_string (hex digits in either case). */
export const isUuid = (s: string): boolean => /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/.test(s);
/** printf's "%-W.Ps", as ovn-nbctl's tables use it: at most P characters, left-aligned in W. */
export const col = (s: string, width: number, precision: number): string => s.slice(0, precision).padEnd(width);

/** ovn-nbctl's parse_direction: only the first letter counts ("t..." or "f..."). */
export function parseDirection(arg: string): 'to-lport' | 'from-lport' {
  if (arg.startsWith('t')) return 'to-lport';
  if (arg.startsWith('f')) return 'from-lport';
  throw new NbctlError(`${arg}: direction must be "to-lport" or "from-lport"`);
}

/** ovn-nbctl's parse_enabled: "enabled" or "disabled", in any case. */
export function parseEnabled(state: string): boolean {
  const s = state.toLowerCase();
  if (s === 'enabled') return true;
  if (s === 'disabled') return false;
  throw new NbctlError(`${state}: state must be "enabled" or "disabled"`);
}

/** The where clause that selects `row` by its UUID. */
export const byUuid = (row: RowJson): unknown[] => [['_uuid', '==', uuidRef(uuidOf(row))]];
