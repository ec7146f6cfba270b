// Several nbctl commands in one transaction ("CMD -- CMD ..."), as ovn-nbctl runs them: each
// command sees what the ones before it wrote, and the cluster gets all their writes in one
// transaction or none of them.
//
// The commands run against a local copy of the Northbound database, read from one member at
// one revision. Their operations are queued, and each command's reads and writes are answered
// by the ovsdb transaction engine running the queue so far, then them, on the copy without
// committing (tryTransaction): every check the cluster makes at commit is made for each command
// as it comes, yet a row one command creates for a later one to reference is not collected as
// garbage in between. commit() sends the queue as one transaction.
//
// A row a command inserts gets its UUID here, written into the queued insert ("uuid", an Open
// vSwitch extension of RFC 7047), so that a later command naming the row by that UUID names the
// same row in the cluster. Named UUIDs are resolved to those UUIDs within their command's
// operations, so two commands may use the same uuid-name. db-ctl-base's row ids ("--id=@name"
// on create and get) are names that hold across commands: commands write them as uuid-names
// and named UUIDs that begin with "@".
//
// As with ovn-nbctl, the transaction holds no lock between the read and the commit: what the
// commands decided from the copy is checked again by the cluster only as far as the operations
// themselves check it (a row that went away fails the update that names it).
import { randomUUID } from 'node:crypto';
import type { Database } from '../../../ovsdb/index.js';
import { Database as DatabaseClass, parseDatabaseSchema, transact, tryTransaction } from '../../../ovsdb/index.js';
import type { Nb, NbAccess, RowJson, TableRead } from './nb.js';
import { NbctlError, isRowId, mapNamedUuids, rowIdNeverCreated, transactionFailure, uuidOf } from './nb.js';

/**
 * How many times the copy is read again when its tables came back at different revisions (a
 * write landed between two reads). After that, a copy whose rows still fit together is used.
 */
export const copyReadAttemptsMax = 5;

const localContext = { newUuid: randomUUID };

/** A row id's UUID, and whether a command has created (or, with get, named) its row yet. */
export interface RowId {
  readonly uuid: string;
  created: boolean;
}

/**
 * Gives every insert in `ops` its UUID ("uuid") and replaces each named UUID with the UUID of
 * the insert that names it. Row ids ("@name") are looked up in, and added to, `rowIds`, which
 * the commands of one transaction share: a reference may come before the command that creates
 * the row, as in ovn-nbctl (mapNamedUuids reads the value notation).
 */
export function fixUuids(ops: readonly unknown[], rowIds: Map<string, RowId> = new Map()): unknown[] {
  const named = new Map<string, string>();
  const fixed = ops.map((op) => {
    if (!isInsert(op) || op.uuid !== undefined) return op;
    const name = op['uuid-name'];
    let uuid: string = randomUUID();
    if (typeof name === 'string' && isRowId(name)) {
      const id = rowIds.get(name);
      if (id?.created === true) throw new NbctlError(`row id "${name}" may only be specified on one --id option`);
      if (id !== undefined) uuid = id.uuid;
      rowIds.set(name, { uuid, created: true });
    } else if (typeof name === 'string' && !named.has(name)) {
      named.set(name, uuid);
    }
    const { 'uuid-name': _, ...rest } = op;
    return { ...rest, uuid };
  });
  return mapNamedUuids(fixed, (name) => {
    if (isRowId(name)) {
      let id = rowIds.get(name);
      if (id === undefined) rowIds.set(name, (id = { uuid: randomUUID(), created: false }));
      return ['uuid', id.uuid];
    }
    const uuid = named.get(name);
    return uuid === undefined ? ['named-uuid', name] : ['uuid', uuid];
  }) as unknown[];
}

function isInsert(op: unknown): op is Record<string, unknown> {
  return op !== null && typeof op === 'object' && (op as { op?: unknown }).op === 'insert';
}

/**
 * What a command (wait-until) throws when the copy does not hold what it waits for: as in
 * ovn-nbctl, the whole command line runs again, on a fresh copy, once `read`'s table changes.
 */
export class TryAgain extends Error {
  constructor(readonly read: TableRead) {
    super(`waiting for a change to ${read.table}`);
  }
}

export class NbTransaction implements NbAccess {
  private readonly queued: unknown[] = [];
  /** The row ids ("@name") used so far, and the UUIDs they stand for. */
  private rowIds = new Map<string, RowId>();

  private constructor(
    private readonly nb: Nb,
    private readonly copy: Database,
    /** The reads the copy was made of, by table: what a TryAgain watches from. */
    private readonly reads: ReadonlyMap<string, TableRead>,
  ) {}

  /** Reads the copy the commands will run against. */
  static async open(nb: Nb): Promise<NbTransaction> {
    const schema = parseDatabaseSchema(await nb.schema());
    const names = [...schema.tables.keys()];
    for (let attempt = 1; ; attempt++) {
      const reads = await Promise.all(names.map((t) => nb.read(t)));
      const consistent = new Set(reads.map((r) => r.revision)).size === 1;
      if (!consistent && attempt < copyReadAttemptsMax) continue;
      const copy = new DatabaseClass(schema);
      const inserts = reads.flatMap((r) =>
        r.rows.map((row) => {
          const { _uuid: _, _version: __, ...columns } = row;
          return { op: 'insert', table: r.table, uuid: uuidOf(row), row: columns };
        }),
      );
      const loaded = transact(copy, inserts, localContext);
      if (loaded.kind === 'committed') return new NbTransaction(nb, copy, new Map(reads.map((r) => [r.table, r])));
      if (attempt >= copyReadAttemptsMax) {
        throw new NbctlError(`the database kept changing while it was read (${copyReadAttemptsMax} attempts); try again`);
      }
    }
  }

  /**
   * The queue so far, then `ops`, on the copy (which stays as it is): the results of `ops`.
   * While a row id is referenced and not yet created, a failure of the commit step (the
   * dangling reference) waits for the commands still to come: commit() checks the whole queue.
   */
  private run(ops: readonly unknown[], rowIds = this.rowIds): unknown[] {
    const all = [...this.queued, ...ops];
    const out = tryTransaction(this.copy, all, localContext);
    if (out.kind === 'blocked') throw new NbctlError('transaction error: a "wait" operation would block');
    const atCommit = out.kind === 'failed' && out.results.length > all.length;
    const awaited = [...rowIds.values()].some((id) => !id.created);
    if (out.kind === 'failed' && !(atCommit && awaited)) throw transactionFailure(out.results.slice(this.queued.length));
    return out.results.slice(this.queued.length, all.length);
  }

  async rows(table: string, where: unknown[] = []): Promise<RowJson[]> {
    return (this.run([{ op: 'select', table, where }])[0] as { rows: RowJson[] }).rows;
  }

  /** The table as the commands before left it, at the revision the copy was read at. */
  async read(table: string): Promise<TableRead> {
    const made = this.reads.get(table);
    if (made === undefined) throw new NbctlError(`unknown table "${table}"`);
    return { ...made, rows: await this.rows(table) };
  }

  /** The copy never changes: the command line is to run again once the table does. */
  changedSince(read: TableRead): Promise<'changed' | 'timeout' | 'cut'> {
    return Promise.reject(new TryAgain(read));
  }

  schema(): Promise<unknown> {
    return this.nb.schema();
  }

  nameRow(id: string, uuid: string): void {
    const known = this.rowIds.get(id);
    if (known?.created === true) throw new NbctlError(`row id "${id}" may only be specified on one --id option`);
    if (known !== undefined) throw new NbctlError(`row id "${id}" specified on "get" command was used before it was defined`);
    this.rowIds.set(id, { uuid, created: true });
  }

  /** Answers ops as the cluster would after the commands before, and queues them; a failure
   *  leaves the queue (and the row ids) as they were. */
  async transact(ops: unknown[]): Promise<unknown[]> {
    const rowIds = new Map([...this.rowIds].map(([name, id]) => [name, { ...id }]));
    const fixed = fixUuids(ops, rowIds);
    const results = this.run(fixed, rowIds);
    this.queued.push(...fixed);
    this.rowIds = rowIds;
    return results;
  }

  /**
   * Sends every queued operation as one transaction, then waits as --wait asks (and returns
   * what --print-wait-time prints). Every row id used must have been created, and the whole
   * queue must pass the commit step.
   */
  async commit(): Promise<string> {
    this.check();
    if (this.queued.length > 0) await this.nb.transact(this.queued);
    return this.nb.finish();
  }

  /** What commit() checks before it sends anything; --dry-run stops after it. */
  check(): void {
    for (const [name, id] of this.rowIds) if (!id.created) throw rowIdNeverCreated(name);
    this.run([]);
  }
}
