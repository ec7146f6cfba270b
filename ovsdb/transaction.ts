// The transaction engine: `transact(db, ops, ctx)` executes one RFC 7047 "transact" request
// against the database, atomically. Operations run against an overlay of changed rows; the
// commit step then checks referential integrity, collects garbage, removes dangling weak
// references, checks sizes, maxRows and unique indexes, and only then writes the overlay into
// the database. Any failure leaves the database untouched.
//
// Pure and deterministic: everything that would be chosen at random (row UUIDs, _version)
// comes from ctx.newUuid(), called in an order fixed by the ops, and time comes in as
// ctx.elapsedMs. Iteration order comes from data (insertion order, sorted UUIDs), never from
// hashing or timing.
import type { Uuid } from './atom.js';
import { compareAtoms, isUuid, zeroUuid } from './atom.js';
import type { Clause } from './condition.js';
import { evaluateConditions, parseConditions, pinnedUuid } from './condition.js';
import type { Datum, Row, Value } from './datum.js';
import { forEachRef, forEachRefChange, fromDatum, toDatum, valueFromJson, valueIsEmpty, valuesEqual } from './datum.js';
import type { Database, DbDelta, RowChange, TableData } from './database.js';
import { Database as DatabaseClass } from './database.js';
import { deleteChange, indexKey, insertChange, modifyChange, rowToJson } from './database.js';
import { OvsdbError, OvsdbErrorName, constraintViolation, syntaxError, quote } from './errors.js';
import { applyMutation, parseMutations } from './mutation.js';
import type { RbacGate } from './rbac.js';
import type { ColumnSchema, ColumnType, TableSchema } from './schema.js';
import { findColumn } from './schema.js';

export interface TransactContext {
  /** Supplies row UUIDs and _version values; deterministic callers pass a seeded source. */
  readonly newUuid: () => Uuid;
  /** Locks the client holds, for "assert". */
  readonly locksHeld?: ReadonlySet<string>;
  /** Milliseconds since the request first arrived, for "wait" timeouts. Default 0. */
  readonly elapsedMs?: number;
  /** Refuse operations that write (a read-only server or a read-only request). */
  readonly readOnly?: boolean;
  /**
   * The role-based access control of the session that sent the transaction (ovsdb/rbac.ts):
   * each insert, update, mutate and delete asks it once its row or rows are known, where
   * ovsdb-server asks, so an operation sees what the transaction's earlier ones did. A refusal
   * fails the operation with a "permission error" and the transaction changes nothing.
   */
  readonly rbac?: RbacGate;
}

/**
 * Checks what can be checked without the database's contents: every operation's shape, table
 * and column names, value types and constraints, condition functions and mutators. A central
 * node runs this before proposing a transaction, so malformed requests never reach the log.
 * Returns the failed outcome ovsdb-server would give, or undefined when the transaction may
 * be proposed (it can still fail at apply time on the state it then meets).
 *
 * The failure it finds does not depend on the state, but the results of the operations before
 * the failing one do (a select's rows, an update's count): they are an empty database's here.
 * To answer the client, run the transaction again with answerRefused on the real rows.
 */
export function precheckTransaction(schema: Database['schema'], ops: readonly unknown[]): Extract<TransactOutcome, { kind: 'failed' }> | undefined {
  // Execute against an empty database: updates, mutates and deletes match nothing, inserts
  // parse their rows; "wait" and "assert" depend on state and are skipped.
  let emptyDb = emptyDatabases.get(schema);
  if (emptyDb === undefined) {
    emptyDb = new DatabaseClass(schema);
    emptyDatabases.set(schema, emptyDb);
  }
  let n = 0;
  return executeUncommitted(emptyDb, ops, { newUuid: () => `00000000-0000-4000-8000-${(++n).toString(16).padStart(12, '0')}` });
}

/**
 * Whether the answer precheckTransaction gave to `refused` holds for any database: true when
 * no operation before the failing one returns something read from the rows (only comments,
 * waits and asserts come before it).
 */
export function refusalIsStateFree(ops: readonly unknown[], refused: Extract<TransactOutcome, { kind: 'failed' }>): boolean {
  const failedAt = refused.results.findIndex((r) => r !== null && typeof r === 'object' && 'error' in r);
  for (let i = 0; i < failedAt; i++) {
    const name = (ops[i] as { op?: unknown }).op;
    if (name !== 'comment' && name !== 'wait' && name !== 'assert') return false;
  }
  return true;
}

/**
 * The answer ovsdb-server gives to a transaction precheckTransaction refused, on `db`'s rows:
 * the operations before the failing one run on them (a select returns its rows, an insert the
 * UUID its row would have had), then the failure. Nothing is committed, whatever happens.
 * "wait" and "assert" are skipped as in the precheck; a refused transaction fails however they
 * would have gone.
 */
export function answerRefused(db: Database, ops: readonly unknown[], refused: Extract<TransactOutcome, { kind: 'failed' }>, ctx: TransactContext): Extract<TransactOutcome, { kind: 'failed' }> {
  // The precheck's failure does not depend on the rows, so it recurs here (or an operation
  // before it fails first on the rows, as it would in ovsdb-server). Should neither happen,
  // the precheck's own answer stands: this never commits.
  return executeUncommitted(db, ops, ctx) ?? refused;
}

/**
 * Executes `ops` on `db` and returns the failed outcome at the first failing operation, or
 * undefined when every operation succeeded. Never commits: `db` is left as it was.
 */
function executeUncommitted(db: Database, ops: readonly unknown[], ctx: TransactContext): Extract<TransactOutcome, { kind: 'failed' }> | undefined {
  const x = new Execution(db, ctx);
  const results: unknown[] = [];
  for (let i = 0; i < ops.length; i++) {
    try {
      const { name, op } = parseOp(ops[i], i, ops.length);
      results.push(name === 'wait' || name === 'assert' ? {} : x.execute(name, op));
    } catch (err) {
      if (!(err instanceof OvsdbError)) throw err;
      results.push(err.toJson());
      while (results.length < ops.length) results.push(null);
      return { kind: 'failed', results, error: err };
    }
  }
  return undefined;
}

const emptyDatabases = new WeakMap<Database['schema'], Database>();

export type TransactOutcome =
  | { readonly kind: 'committed'; readonly results: unknown[]; readonly delta: DbDelta; readonly durable: boolean; readonly comments: readonly string[] }
  | { readonly kind: 'failed'; readonly results: unknown[]; readonly error: OvsdbError }
  /** A "wait" is not satisfied yet and may be later: retry when the database changes. */
  | { readonly kind: 'blocked'; readonly timeoutMs: number };

const idPattern = /^[A-Za-z_][A-Za-z0-9_]*$/;

interface Pending {
  readonly uuid: Uuid;
  readonly table: TableData;
  /** The row as committed before this transaction; undefined for a row inserted now. */
  readonly old: Row | undefined;
  /** The row as it stands in this transaction; undefined once deleted. */
  current: Row | undefined;
}

/** Raised by a "wait" that may succeed later; caught by transact. */
class WaitBlocked {
  constructor(readonly timeoutMs: number) {}
}

/**
 * The schema's single-column unique indexes over string columns (min 1, max 1) of a table: column
 * name → position in TableData.uniqueIndexes. A "where" pinning one of them (`name == "x"`) finds
 * its committed row through the index instead of scanning the table.
 */
function stringKeyIndexes(schema: TableSchema): ReadonlyMap<string, number> {
  const cached = stringKeyIndexCache.get(schema);
  if (cached !== undefined) return cached;
  const m = new Map<string, number>();
  for (const [i, cols] of schema.indexes.entries()) {
    const col = cols.length === 1 ? schema.columns.get(cols[0] as string) : undefined;
    const t = col?.type;
    if (col !== undefined && t !== undefined && t.key.type === 'string' && t.value === undefined && t.min === 1 && t.max === 1) m.set(col.name, i);
  }
  stringKeyIndexCache.set(schema, m);
  return m;
}

const stringKeyIndexCache = new WeakMap<TableSchema, ReadonlyMap<string, number>>();

/** The overlay of one transaction on the database. */
class Overlay {
  readonly pending = new Map<Uuid, Pending>();
  /** Rows inserted by this transaction, per table, in insertion order. */
  readonly inserted = new Map<TableData, Uuid[]>();
  /** Committed rows this transaction changed an indexed column of (a string-keyed unique one, see stringKeyIndexes, or a secondary one), per table. */
  private readonly rekeyed = new Map<TableData, Set<Uuid>>();
  /** Tables with a committed row this transaction modified or deleted: a scan of any other reads its rows as they are. */
  private readonly touched = new Set<TableData>();

  constructor(
    readonly db: Database,
    private readonly newUuid: () => Uuid,
  ) {}

  get(table: TableData, uuid: Uuid): Row | undefined {
    const p = this.pending.get(uuid);
    if (p !== undefined) return p.table === table ? p.current : undefined;
    return table.rows.get(uuid);
  }

  exists(uuid: Uuid): boolean {
    const p = this.pending.get(uuid);
    return p !== undefined ? p.current !== undefined : this.db.rowTable.has(uuid);
  }

  /** Rows of a table matching the clauses, in a deterministic order. */
  query(table: TableData, clauses: readonly Clause[]): Row[] {
    const pinned = pinnedUuid(clauses);
    if (pinned !== undefined) {
      const row = this.get(table, pinned);
      return row !== undefined && evaluateConditions(clauses, row) ? [row] : [];
    }
    return this.queryByIndex(table, clauses) ?? this.scan(table, clauses);
  }

  /**
   * The rows a query matches, found through an index when a clause pins a string column that
   * has one (`name == "x"`): the schema's unique index on it (see stringKeyIndexes) or a
   * secondary index the database keeps (DatabaseOptions.secondaryIndexes). The committed rows
   * the index names (as this transaction left them), the committed rows this transaction
   * re-keyed, and the rows it inserted. Undefined when no clause pins an index, or when more
   * than one committed row matches (their order is the table's, which the index does not
   * keep; and a unique value may repeat until commit): the scan then gives them in order.
   */
  private queryByIndex(table: TableData, clauses: readonly Clause[]): Row[] | undefined {
    if (table.secondary.size === 0 && stringKeyIndexes(table.schema).size === 0) return undefined;
    let held: Uuid | ReadonlySet<Uuid> | undefined;
    let pinned = false;
    for (const c of clauses) {
      const type = c.column.type;
      if (c.fn !== '==' || type.kind !== 'scalar' || type.key.type !== 'string') continue;
      const key = c.arg.keys[0] as string;
      const i = stringKeyIndexes(table.schema).get(c.column.name);
      const secondary = i === undefined ? table.secondary.get(c.column.name) : undefined;
      if (i === undefined && secondary === undefined) continue;
      held = i !== undefined ? (table.uniqueIndexes[i] as Map<string, Uuid>).get(key) : secondary?.get(key);
      pinned = true;
      break;
    }
    if (!pinned) return undefined;
    const out: Row[] = [];
    const rekeyed = this.rekeyed.get(table);
    const consider = (uuid: Uuid): void => {
      if (rekeyed?.has(uuid) === true) return;
      const row = this.get(table, uuid);
      if (row !== undefined && evaluateConditions(clauses, row)) out.push(row);
    };
    if (typeof held === 'string') consider(held);
    else if (held !== undefined) for (const uuid of held) consider(uuid);
    for (const u of rekeyed ?? []) {
      const row = (this.pending.get(u) as Pending).current;
      if (row !== undefined && evaluateConditions(clauses, row)) out.push(row);
    }
    if (out.length > 1) return undefined;
    for (const u of this.inserted.get(table) ?? []) {
      const row = (this.pending.get(u) as Pending).current;
      if (row !== undefined && evaluateConditions(clauses, row)) out.push(row);
    }
    return out;
  }

  /** Rows of a table matching the clauses, every row looked at: committed ones in the table's order, then inserted ones. */
  private scan(table: TableData, clauses: readonly Clause[]): Row[] {
    const out: Row[] = [];
    if (!this.touched.has(table)) {
      // No committed row of this table changed yet: the rows as committed, without a look
      // into the overlay per row (most of a large table's scan).
      for (const row of table.rows.values()) if (evaluateConditions(clauses, row)) out.push(row);
    } else {
      for (const [uuid, base] of table.rows) {
        const p = this.pending.get(uuid);
        const row = p === undefined ? base : p.current;
        if (row !== undefined && evaluateConditions(clauses, row)) out.push(row);
      }
    }
    for (const uuid of this.inserted.get(table) ?? []) {
      const row = (this.pending.get(uuid) as Pending).current;
      if (row !== undefined && evaluateConditions(clauses, row)) out.push(row);
    }
    return out;
  }

  insert(table: TableData, row: Row): void {
    // A UUID already committed is caught where the row is committed (Database.commitChanges):
    // a look into the map of every row here was a tenth of a large insert's time.
    const size = this.pending.size;
    this.pending.set(row._uuid, { uuid: row._uuid, table, old: undefined, current: row });
    if (this.pending.size === size) throw new Error(`overlay: row ${row._uuid} inserted twice`);
    let list = this.inserted.get(table);
    if (list === undefined) {
      list = [];
      this.inserted.set(table, list);
    }
    list.push(row._uuid);
  }

  /**
   * Stores a new image of a row. A committed row gets a new _version the first time this
   * transaction modifies it (as in ovsdb-server, a select later in the transaction shows it);
   * callers build the new image from the current one, so later changes keep that version.
   */
  replace(table: TableData, row: Row): void {
    const p = this.pending.get(row._uuid);
    if (p !== undefined) p.current = row;
    else {
      this.pending.set(row._uuid, { uuid: row._uuid, table, old: table.rows.get(row._uuid), current: { ...row, _version: this.newUuid() } });
      this.touched.add(table);
    }
    const old = p === undefined ? table.rows.get(row._uuid) : p.old;
    if (old === undefined) return;
    for (const columns of [stringKeyIndexes(table.schema).keys(), table.secondary.keys()]) {
      for (const column of columns) {
        if (row[column] === old[column]) continue;
        let set = this.rekeyed.get(table);
        if (set === undefined) this.rekeyed.set(table, (set = new Set()));
        set.add(row._uuid);
        return;
      }
    }
  }

  delete(table: TableData, uuid: Uuid): void {
    const p = this.pending.get(uuid);
    if (p !== undefined) p.current = undefined;
    else {
      this.pending.set(uuid, { uuid, table, old: table.rows.get(uuid), current: undefined });
      this.touched.add(table);
    }
  }
}

interface OpSpec {
  readonly members: Readonly<Record<string, 'id' | 'string' | 'array' | 'object' | 'boolean' | 'number'>>;
  readonly optional: readonly string[];
  readonly writes: boolean;
  readonly memberNames: readonly string[];
}

const opSpecList: Readonly<Record<string, Omit<OpSpec, 'memberNames'>>> = {
  insert: { members: { table: 'id', row: 'object', 'uuid-name': 'id', uuid: 'string' }, optional: ['uuid-name', 'uuid'], writes: true },
  select: { members: { table: 'id', where: 'array', columns: 'array', sort: 'array' }, optional: ['columns', 'sort'], writes: false },
  update: { members: { table: 'id', where: 'array', row: 'object' }, optional: [], writes: true },
  mutate: { members: { table: 'id', where: 'array', mutations: 'array' }, optional: [], writes: true },
  delete: { members: { table: 'id', where: 'array' }, optional: [], writes: true },
  wait: { members: { timeout: 'number', table: 'id', where: 'array', columns: 'array', until: 'string', rows: 'array' }, optional: ['timeout', 'columns'], writes: false },
  commit: { members: { durable: 'boolean' }, optional: [], writes: true },
  abort: { members: {}, optional: [], writes: false },
  comment: { members: { comment: 'string' }, optional: [], writes: false },
  assert: { members: { lock: 'id' }, optional: [], writes: false },
};

const opSpecs: Readonly<Record<string, OpSpec>> = Object.fromEntries(
  Object.entries(opSpecList).map(([name, spec]) => [name, { ...spec, memberNames: Object.keys(spec.members) }]),
);

function checkMemberType(kind: OpSpec['members'][string], v: unknown): boolean {
  switch (kind) {
    case 'id':
      return typeof v === 'string' && idPattern.test(v);
    case 'string':
      return typeof v === 'string';
    case 'array':
      return Array.isArray(v);
    case 'object':
      return typeof v === 'object' && v !== null && !Array.isArray(v);
    case 'boolean':
      return typeof v === 'boolean';
    case 'number':
      return typeof v === 'number';
  }
}

function describeKind(kind: OpSpec['members'][string]): string {
  return kind === 'id' ? 'an identifier' : kind === 'object' ? 'an object' : kind === 'array' ? 'an array' : `a ${kind}`;
}

/** Validates an operation's shape (RFC 7047 section 5.2) and returns its name and members. */
function parseOp(json: unknown, i: number, n: number): { name: string; op: Record<string, unknown> } {
  // Spelled out only for an error: a valid op (all but one at most) needs no text.
  const where = (): string => `ovsdb operation ${i + 1} of ${n}`;
  if (typeof json !== 'object' || json === null || Array.isArray(json)) throw syntaxError(`Parsing ${where()} failed: operation must be a JSON object`);
  const op = json as Record<string, unknown>;
  const name = op.op;
  if (typeof name !== 'string' || !idPattern.test(name)) throw syntaxError(`Parsing ${where()} failed: Required 'op' member is missing or not an identifier.`);
  const spec = opSpecs[name];
  if (spec === undefined) throw syntaxError(`Parsing ${where()} failed: No operation "${name}"`);
  for (const member of spec.memberNames) {
    const v = op[member];
    const kind = spec.members[member] as OpSpec['members'][string];
    if (v === undefined) {
      if (!spec.optional.includes(member)) throw syntaxError(`Parsing ${where()} failed: Required '${member}' member is missing.`);
    } else if (!checkMemberType(kind, v)) {
      throw syntaxError(`Parsing ${where()} failed: Type mismatch for member '${member}': it must be ${describeKind(kind)}.`);
    }
  }
  for (const member in op) {
    if (member !== 'op' && !Object.hasOwn(spec.members, member)) throw syntaxError(`Parsing ${where()} failed: Member '${member}' is present but not allowed here.`);
  }
  return { name, op };
}

interface Symbol_ {
  readonly uuid: Uuid;
  created: boolean;
}

class Execution {
  readonly overlay: Overlay;
  readonly symbols = new Map<string, Symbol_>();
  durable = false;
  readonly comments: string[] = [];
  /** The smallest "wait" timeout seen, for a blocked outcome. */
  timeoutMs = Infinity;

  constructor(
    readonly db: Database,
    readonly ctx: TransactContext,
  ) {
    this.overlay = new Overlay(db, ctx.newUuid);
  }

  readonly resolve = (name: string): Uuid => {
    let s = this.symbols.get(name);
    if (s === undefined) {
      // A forward reference: the name gets its UUID now, and a later insert with this
      // uuid-name creates the row. A name never created leaves a dangling reference, which
      // the commit step reports (strong) or removes (weak).
      s = { uuid: this.ctx.newUuid(), created: false };
      this.symbols.set(name, s);
    }
    return s.uuid;
  };

  table(name: unknown): TableData {
    const t = typeof name === 'string' ? this.db.tables.get(name) : undefined;
    if (t === undefined) throw syntaxError(`No table named ${String(name)}.`);
    return t;
  }

  /** Parses a "row" object: column → value, for the columns present. */
  parseRow(table: TableSchema, json: Record<string, unknown>): Map<ColumnSchema, Value> {
    const out = new Map<ColumnSchema, Value>();
    for (const [name, vjson] of Object.entries(json)) {
      const column = findColumn(table, name);
      if (column === undefined) throw new OvsdbError(OvsdbErrorName.unknownColumn, `No column ${name} in table ${table.name}.`);
      out.set(column, valueFromJson(column.type, vjson, this.resolve));
    }
    return out;
  }

  parseColumns(table: TableSchema, json: unknown): ColumnSchema[] | undefined {
    if (json === undefined) return undefined;
    const out: ColumnSchema[] = [];
    for (const name of json as unknown[]) {
      const column = typeof name === 'string' ? findColumn(table, name) : undefined;
      if (column === undefined) throw syntaxError(`${quote(name)} is not a valid column name in table ${table.name}.`);
      if (out.includes(column)) throw syntaxError(`column ${column.name} appears more than once in the column list`);
      out.push(column);
    }
    return out;
  }

  /** Fails the operation with the refusal of the session's RBAC gate, when it gave one. */
  refuseIf(refusal: string | undefined): void {
    if (refusal !== undefined) throw new OvsdbError(OvsdbErrorName.permissionError, refusal);
  }

  execute(name: string, op: Record<string, unknown>): Record<string, unknown> {
    switch (name) {
      case 'insert':
        return this.insert(op);
      case 'select':
        return this.select(op);
      case 'update':
        return this.update(op);
      case 'mutate':
        return this.mutate(op);
      case 'delete':
        return this.delete(op);
      case 'wait':
        return this.wait(op);
      case 'commit':
        if (op.durable === true) this.durable = true;
        return {};
      case 'abort':
        throw new OvsdbError(OvsdbErrorName.aborted, 'aborted by request');
      case 'comment':
        this.comments.push(op.comment as string);
        return {};
      case 'assert': {
        const lock = op.lock as string;
        if (this.ctx.locksHeld?.has(lock) !== true) throw new OvsdbError(OvsdbErrorName.notOwner, `Asserted lock ${lock} not held.`);
        return {};
      }
    }
    throw new Error(`unreachable: op ${name}`);
  }

  insert(op: Record<string, unknown>): Record<string, unknown> {
    const t = this.table(op.table);
    let uuid: Uuid;
    const name = op['uuid-name'] as string | undefined;
    if (op.uuid !== undefined) {
      const given = (op.uuid as string).toLowerCase();
      if (!isUuid(given)) throw syntaxError(`"uuid" member ${quote(op.uuid)} is not a valid UUID.`);
      if (this.overlay.pending.has(given) || this.db.rowTable.has(given)) {
        throw new OvsdbError(OvsdbErrorName.duplicateUuid, `This UUID would duplicate a UUID already present within the table or deleted within the same transaction.`);
      }
      uuid = given;
    }
    if (name !== undefined) {
      const s = this.symbols.get(name);
      if (s?.created === true) throw new OvsdbError(OvsdbErrorName.duplicateUuidName, 'This "uuid-name" appeared on an earlier "insert" operation.');
      if (op.uuid === undefined) uuid = this.resolve(name);
      else this.symbols.set(name, { uuid: uuid!, created: false });
      (this.symbols.get(name) as Symbol_).created = true;
    }
    const values = this.parseRow(t.schema, op.row as Record<string, unknown>);
    uuid ??= this.ctx.newUuid();
    const row: Record<string, Value> = { _uuid: uuid, _version: this.ctx.newUuid(), ...t.defaultRow };
    for (const [column, v] of values) {
      // _uuid and _version given in an insert are parsed, then ignored, as ovsdb-server does.
      if (column.name !== '_uuid' && column.name !== '_version') row[column.name] = v;
    }
    // A default value may not satisfy the column's constraints (an enum, a range).
    for (const [name, error] of t.invalidDefaults) if (!values.has(t.schema.columns.get(name) as ColumnSchema)) throw error;
    this.refuseIf(this.ctx.rbac?.insert(t.schema, row as Row));
    this.overlay.insert(t, row as Row);
    return { uuid: ['uuid', uuid] };
  }

  select(op: Record<string, unknown>): Record<string, unknown> {
    const t = this.table(op.table);
    const clauses = parseConditions(t.schema, op.where, this.resolve);
    const columns = this.parseColumns(t.schema, op.columns);
    const sort = this.parseColumns(t.schema, op.sort);
    let rows = this.overlay.query(t, clauses);
    const names = columns?.map((c) => c.name);
    if (sort !== undefined && sort.length > 0) {
      rows = [...rows].sort((a, b) => {
        for (const c of sort) {
          const d = compareDatums(toDatum(c.type, a[c.name] as Value), toDatum(c.type, b[c.name] as Value));
          if (d !== 0) return d;
        }
        return 0;
      });
    }
    let out = rows.map((r) => rowToJson(t.schema, r, names));
    if (columns !== undefined && !columns.some((c) => c.name === '_uuid')) {
      // Like ovsdb-server, a projection returns distinct rows only.
      const seen = new Set<string>();
      out = out.filter((r) => {
        const k = JSON.stringify(r);
        if (seen.has(k)) return false;
        seen.add(k);
        return true;
      });
    }
    return { rows: out };
  }

  update(op: Record<string, unknown>): Record<string, unknown> {
    const t = this.table(op.table);
    const values = this.parseRow(t.schema, op.row as Record<string, unknown>);
    for (const column of values.keys()) {
      if (!column.mutable) throw constraintViolation(`Cannot update immutable column ${column.name} in table ${t.schema.name}.`);
    }
    const clauses = parseConditions(t.schema, op.where, this.resolve);
    const rows = this.overlay.query(t, clauses);
    if (this.ctx.rbac !== undefined) this.refuseIf(this.ctx.rbac.update(t.schema, rows, [...values.keys()].map((c) => c.name)));
    for (const row of rows) {
      let changed = false;
      for (const [column, v] of values) {
        if (!valuesEqual(column.type, row[column.name] as Value, v)) changed = true;
      }
      if (!changed) continue;
      const next: Record<string, Value> = { ...row };
      for (const [column, v] of values) next[column.name] = v;
      this.overlay.replace(t, next as Row);
    }
    return { count: rows.length };
  }

  mutate(op: Record<string, unknown>): Record<string, unknown> {
    const t = this.table(op.table);
    const mutations = parseMutations(t.schema, op.mutations, this.resolve);
    const clauses = parseConditions(t.schema, op.where, this.resolve);
    const rows = this.overlay.query(t, clauses);
    if (this.ctx.rbac !== undefined) this.refuseIf(this.ctx.rbac.mutate(t.schema, rows, mutations.map((m) => m.column.name)));
    for (const row of rows) {
      const next: Record<string, Value> = { ...row };
      for (const m of mutations) {
        const type = m.column.type;
        const d = applyMutation(m, toDatum(type, next[m.column.name] as Value));
        next[m.column.name] = fromDatum(type, d);
      }
      this.overlay.replace(t, next as Row);
    }
    return { count: rows.length };
  }

  delete(op: Record<string, unknown>): Record<string, unknown> {
    const t = this.table(op.table);
    const clauses = parseConditions(t.schema, op.where, this.resolve);
    const rows = this.overlay.query(t, clauses);
    this.refuseIf(this.ctx.rbac?.delete(t.schema, rows));
    for (const row of rows) this.overlay.delete(t, row._uuid);
    return { count: rows.length };
  }

  wait(op: Record<string, unknown>): Record<string, unknown> {
    const t = this.table(op.table);
    const clauses = parseConditions(t.schema, op.where, this.resolve);
    const columns = this.parseColumns(t.schema, op.columns) ?? [...allColumns(t.schema)];
    const timeout = op.timeout as number | undefined;
    if (timeout !== undefined && timeout < 0) throw syntaxError('timeout must be nonnegative');
    const until = op.until as string;
    if (until !== '==' && until !== '!=') throw syntaxError('"until" must be "==" or "!="');
    const expected: Row[] = [];
    for (const rjson of op.rows as unknown[]) {
      if (typeof rjson !== 'object' || rjson === null || Array.isArray(rjson)) throw syntaxError('row must be JSON object');
      const values = this.parseRow(t.schema, rjson as Record<string, unknown>);
      const row: Record<string, Value> = {};
      for (const c of allColumns(t.schema)) row[c.name] = values.get(c) ?? t.defaultRow[c.name] ?? zeroUuid;
      expected.push(row as Row);
    }
    const equal = sameRowSets(this.overlay.query(t, clauses), expected, columns);
    if ((until === '==') !== equal) {
      const elapsed = this.ctx.elapsedMs ?? 0;
      if (timeout !== undefined && elapsed >= timeout) {
        throw new OvsdbError(OvsdbErrorName.timedOut, elapsed > 0 ? `"wait" timed out after ${elapsed} ms` : '"where" clause test failed');
      }
      this.timeoutMs = Math.min(this.timeoutMs, timeout ?? Infinity);
      throw new WaitBlocked(this.timeoutMs);
    }
    return {};
  }
}

/** Row pairs a wait compares one by one; more, and each row is spelled out once as a key. */
const WAIT_PAIRWISE_MAX = 256;

/**
 * Whether `a` and `b` hold the same rows as sets, looking only at `columns` (a wait's "rows"
 * against its query). A wait usually verifies one row, whose columns may be sets of thousands
 * (ovn-nbctl verifies a switch's ports before it writes them): compared value by value, not
 * spelled out as text first.
 */
function sameRowSets(a: readonly Row[], b: readonly Row[], columns: readonly ColumnSchema[]): boolean {
  if (a.length * b.length <= WAIT_PAIRWISE_MAX) {
    const same = (x: Row, y: Row): boolean => columns.every((c) => valuesEqual(c.type, x[c.name] as Value, y[c.name] as Value));
    return a.every((x) => b.some((y) => same(x, y))) && b.every((y) => a.some((x) => same(x, y)));
  }
  const key = (r: Row): string => JSON.stringify(columns.map((c) => toDatum(c.type, r[c.name] as Value)));
  const left = new Set(a.map(key));
  const right = new Set(b.map(key));
  return left.size === right.size && [...left].every((k) => right.has(k));
}

function* allColumns(table: TableSchema): Iterable<ColumnSchema> {
  yield findColumn(table, '_uuid') as ColumnSchema;
  yield findColumn(table, '_version') as ColumnSchema;
  yield* table.columns.values();
}

function compareDatums(a: Datum, b: Datum): number {
  const n = Math.min(a.keys.length, b.keys.length);
  for (let i = 0; i < n; i++) {
    const c = compareAtoms(a.keys[i] as never, b.keys[i] as never);
    if (c !== 0) return c;
  }
  if (a.keys.length !== b.keys.length) return a.keys.length < b.keys.length ? -1 : 1;
  for (let i = 0; i < (a.values?.length ?? 0); i++) {
    const c = compareAtoms((a.values as never[])[i] as never, (b.values as never[])[i] as never);
    if (c !== 0) return c;
  }
  return 0;
}

/** Runs the commit-time checks on the overlay and produces the delta, or throws OvsdbError. */
function precommit(x: Execution): RowChange[] {
  const { overlay, db } = x;
  // 1. Drop no-op changes: rows modified back to their old values, rows inserted and deleted.
  // (Deleting the entry being visited is safe while iterating a Map.)
  for (const [uuid, p] of overlay.pending) {
    if (p.old === undefined && p.current === undefined) overlay.pending.delete(uuid);
    else if (p.old !== undefined && p.current !== undefined && rowsEqual(p.table.schema, p.old, p.current)) overlay.pending.delete(uuid);
  }
  if (overlay.pending.size === 0) return [];

  // 2. Strong reference counts after the transaction, as a delta on the committed counts.
  const strongDelta = new Map<Uuid, number>();
  const countRefs = (t: TableData, row: Row, sign: number, visit?: (target: Uuid, refTable: string, column: ColumnSchema) => void): void => {
    for (const column of t.schema.refColumns) {
      forEachRef(column.type, row[column.name] as Value, (target, base) => {
        if (base.refType === 'weak') return;
        // Self-references do not count (see Database.strongRefCount), but must still exist.
        if (target !== row._uuid) strongDelta.set(target, (strongDelta.get(target) ?? 0) + sign);
        visit?.(target, base.refTable as string, column);
      });
    }
  };
  const refCount = (uuid: Uuid): number => db.strongRefCount(uuid) + (strongDelta.get(uuid) ?? 0);
  // From here on entries are only added to `pending` (or changed in place), never removed: a
  // list of the same length is still the whole of it, in order.
  const sorted = sortedPending(overlay);
  for (const p of sorted) {
    const row = p.current;
    const mustExist = (target: Uuid, refTable: string, column: ColumnSchema): void => {
      const dest = db.tables.get(refTable) as TableData;
      if (overlay.get(dest, target) === undefined) {
        throw new OvsdbError(
          OvsdbErrorName.referentialIntegrityViolation,
          `Table ${p.table.schema.name} column ${column.name} row ${(row as Row)._uuid} references nonexistent row ${target} in table ${refTable}.`,
        );
      }
    };
    if (p.old !== undefined && row !== undefined) {
      // A modified row counts only the references it gained or lost, as ovsdb-server counts
      // only its changed columns. A reference it kept pointed at a committed row: if this
      // transaction deletes that row, the row's remaining reference refuses the delete below.
      for (const column of p.table.schema.refColumns) {
        forEachRefChange(column.type, p.old[column.name] as Value, row[column.name] as Value, (target, base, sign) => {
          if (base.refType === 'weak') return;
          if (target !== row._uuid) strongDelta.set(target, (strongDelta.get(target) ?? 0) + sign);
          if (sign > 0) mustExist(target, base.refTable as string, column);
        });
      }
      continue;
    }
    if (p.old !== undefined) countRefs(p.table, p.old, -1);
    if (row !== undefined) countRefs(p.table, row, +1, mustExist);
  }
  for (const p of sorted) {
    if (p.old !== undefined && p.current === undefined) {
      const n = refCount(p.old._uuid);
      if (n > 0) {
        throw new OvsdbError(
          OvsdbErrorName.referentialIntegrityViolation,
          `cannot delete ${p.table.schema.name} row ${p.old._uuid} because of ${n} remaining reference(s)`,
        );
      }
    }
  }

  // 3. Garbage collection: a non-root row that nothing refers to strongly is deleted, which
  //    may leave further rows unreferenced.
  const work: Uuid[] = [];
  for (const [uuid, p] of overlay.pending) if (p.current !== undefined && !p.table.schema.isRoot) work.push(uuid);
  for (const [target, d] of strongDelta) if (d < 0) work.push(target);
  work.sort();
  while (work.length > 0) {
    const uuid = work.pop() as Uuid;
    const p = overlay.pending.get(uuid);
    const t = p?.table ?? db.rowTable.get(uuid);
    if (t === undefined || t.schema.isRoot) continue;
    const row = overlay.get(t, uuid);
    if (row === undefined || refCount(uuid) > 0) continue;
    overlay.delete(t, uuid);
    const targets: Uuid[] = [];
    countRefs(t, row, -1, (target) => targets.push(target));
    targets.sort().reverse();
    work.push(...targets);
  }

  // 4. Weak references to rows that no longer exist are removed; then sizes are re-checked.
  //    The rows to look at: every inserted row; the committed referrers of every deleted row;
  //    and a modified row only when a weak reference it gained points nowhere (one it kept
  //    pointed at a committed row, whose deletion names the row among its referrers).
  const assess = new Set<Uuid>();
  for (const [uuid, p] of overlay.pending) {
    const row = p.current;
    if (row !== undefined && p.old === undefined) assess.add(uuid);
    else if (row !== undefined && p.old !== undefined) {
      const old = p.old;
      for (const column of p.table.schema.refColumns) {
        if (column.type.key.refType !== 'weak' && column.type.value?.refType !== 'weak') continue;
        forEachRefChange(column.type, old[column.name] as Value, row[column.name] as Value, (target, base, sign) => {
          if (sign > 0 && base.refType === 'weak' && overlay.get(db.tables.get(base.refTable as string) as TableData, target) === undefined) assess.add(uuid);
        });
      }
    } else if (p.old !== undefined) for (const referrer of db.weakReferrers(uuid).keys()) assess.add(referrer);
  }
  for (const uuid of [...assess].sort()) {
    const t = overlay.pending.get(uuid)?.table ?? (db.rowTable.get(uuid) as TableData);
    const row = overlay.get(t, uuid);
    if (row === undefined) continue;
    let next: Record<string, Value> | undefined;
    for (const column of t.schema.refColumns) {
      const type = column.type;
      if (type.key.refType !== 'weak' && type.value?.refType !== 'weak') continue;
      if (valueIsEmpty(type, row[column.name] as Value)) continue;
      const d = toDatum(type, row[column.name] as Value);
      const keep = (u: unknown, weak: boolean, refTable: string | undefined): boolean =>
        !weak || overlay.get(db.tables.get(refTable as string) as TableData, u as Uuid) !== undefined;
      const keys: typeof d.keys[number][] = [];
      const values: typeof d.keys[number][] = [];
      for (let i = 0; i < d.keys.length; i++) {
        const k = d.keys[i] as Uuid;
        const v = d.values?.[i];
        if (!keep(k, type.key.refType === 'weak', type.key.refTable)) continue;
        if (v !== undefined && !keep(v, type.value?.refType === 'weak', type.value?.refTable)) continue;
        keys.push(k);
        if (v !== undefined) values.push(v);
      }
      if (keys.length === d.keys.length) continue;
      if (keys.length < type.min) {
        throw constraintViolation(
          `Deletion of ${d.keys.length - keys.length} weak reference(s) to deleted (or never-existing) rows from column "${column.name}" in "${t.schema.name}" row ${uuid} caused this column to have ${keys.length} element(s), but it must have at least ${type.min}.`,
        );
      }
      next ??= { ...row };
      next[column.name] = fromDatum(type, d.values === undefined ? { keys } : { keys, values });
    }
    if (next !== undefined) overlay.replace(t, next as Row);
  }

  // 5. maxRows.
  for (const [t, uuids] of overlay.inserted) {
    if (t.schema.maxRows === Infinity || uuids.length === 0) continue;
    let n = t.rows.size;
    for (const [, p] of overlay.pending) {
      if (p.table !== t) continue;
      if (p.old === undefined && p.current !== undefined) n++;
      else if (p.old !== undefined && p.current === undefined) n--;
    }
    if (n > t.schema.maxRows) {
      throw constraintViolation(`transaction causes "${t.schema.name}" table to contain ${n} rows, greater than the schema-defined limit of ${t.schema.maxRows} row(s)`);
    }
  }

  // 6. Unique indexes.
  const byTable = new Map<TableData, Pending[]>();
  for (const p of overlay.pending.values()) {
    if (p.table.schema.indexes.length === 0) continue;
    const list = byTable.get(p.table) ?? [];
    list.push(p);
    byTable.set(p.table, list);
  }
  for (const [t, list] of byTable) {
    for (let i = 0; i < t.schema.indexes.length; i++) {
      const cols = t.schema.indexes[i] as readonly string[];
      const types = t.uniqueIndexTypes[i] as ColumnType[];
      const seen = new Map<string, Uuid>();
      for (const p of list) {
        if (p.current === undefined) continue;
        const row = p.current;
        // A modified row that keeps its key held it before, uniquely: a row that takes the
        // key from it meets it below through the committed index, so it needs no check here.
        if (p.old !== undefined && keyKept(types, cols, p.old, row)) continue;
        const key = indexKey(types, cols.map((c) => row[c] as Value));
        const other = seen.get(key) ?? (t.uniqueIndexes[i] as Map<string, Uuid>).get(key);
        const otherNow = other === undefined || other === row._uuid ? undefined : overlay.get(t, other);
        const otherKeyNow = otherNow === undefined ? undefined : indexKey(types, cols.map((c) => otherNow[c] as Value));
        if (otherNow !== undefined && otherKeyNow === key) {
          throw constraintViolation(
            `Transaction causes multiple rows in "${t.schema.name}" table to have identical values (${cols.map((c) => quote(row[c])).join(', ')}) for index on column${cols.length > 1 ? 's' : ''} "${cols.join('", "')}".  First row, with UUID ${other}, and second row, with UUID ${row._uuid}.`,
          );
        }
        seen.set(key, row._uuid);
      }
    }
  }

  // 7. The delta, in (table, uuid) order.
  const changes: RowChange[] = [];
  for (const p of overlay.pending.size === sorted.length ? sorted : sortedPending(overlay)) {
    const name = p.table.schema.name;
    if (p.current === undefined) {
      if (p.old !== undefined) changes.push(deleteChange(name, p.old));
      continue;
    }
    const row = p.current;
    if (p.old === undefined) changes.push(insertChange(name, row));
    else {
      const old = p.old;
      const columns: string[] = [];
      for (const c of p.table.schema.columns.values()) if (!valuesEqual(c.type, old[c.name] as Value, row[c.name] as Value)) columns.push(c.name);
      // A row can come out of weak-reference cleanup equal to how it started (an update that
      // only set a dangling weak reference). ovsdb-server still counts it as modified and gives
      // it a new _version; so do we, with an empty list of changed columns.
      changes.push(modifyChange(name, p.old, row, columns));
    }
  }
  return changes;
}

/** Whether `next` has the same values as `prev` in every column of one index. */
function keyKept(types: readonly ColumnType[], cols: readonly string[], prev: Row, next: Row): boolean {
  for (let i = 0; i < cols.length; i++) {
    const c = cols[i] as string;
    if (!valuesEqual(types[i] as ColumnType, prev[c] as Value, next[c] as Value)) return false;
  }
  return true;
}

function byTableThenUuid(a: Pending, b: Pending): number {
  const ta = a.table.schema.name;
  const tb = b.table.schema.name;
  if (ta !== tb) return ta < tb ? -1 : 1;
  return a.uuid < b.uuid ? -1 : a.uuid > b.uuid ? 1 : 0;
}

function sortedPending(overlay: Overlay): Pending[] {
  const list = [...overlay.pending.values()];
  return list.length > 1 ? list.sort(byTableThenUuid) : list;
}

function rowsEqual(schema: TableSchema, a: Row, b: Row): boolean {
  for (const c of schema.columns.values()) if (!valuesEqual(c.type, a[c.name] as Value, b[c.name] as Value)) return false;
  return true;
}

/**
 * Executes one transaction (the "transact" params without the database name) atomically.
 * On 'committed' the database has changed and `delta` says how; on 'failed' or 'blocked' the
 * database is exactly as before.
 */
export function transact(db: Database, ops: readonly unknown[], ctx: TransactContext): TransactOutcome {
  return execute(db, ops, ctx, true);
}

/**
 * Executes one transaction as transact() does, every check of the commit step included, and
 * answers as it would, but leaves the database as it was (the outcome's delta is what a commit
 * would have written).
 */
export function tryTransaction(db: Database, ops: readonly unknown[], ctx: TransactContext): TransactOutcome {
  return execute(db, ops, ctx, false);
}

function execute(db: Database, ops: readonly unknown[], ctx: TransactContext, commit: boolean): TransactOutcome {
  const x = new Execution(db, ctx);
  const results: unknown[] = [];
  const fail = (error: OvsdbError): TransactOutcome => {
    results.push(error.toJson());
    while (results.length < ops.length) results.push(null);
    return { kind: 'failed', results, error };
  };
  for (let i = 0; i < ops.length; i++) {
    try {
      const { name, op } = parseOp(ops[i], i, ops.length);
      if (ctx.readOnly === true && (opSpecs[name] as OpSpec).writes) {
        throw new OvsdbError(OvsdbErrorName.notAllowed, `${name} operation not allowed when database server is in read only mode`);
      }
      results.push(x.execute(name, op));
    } catch (err) {
      if (err instanceof WaitBlocked) return { kind: 'blocked', timeoutMs: err.timeoutMs };
      if (err instanceof OvsdbError) return fail(err);
      throw err;
    }
  }
  let changes: RowChange[];
  try {
    changes = precommit(x);
  } catch (err) {
    if (!(err instanceof OvsdbError)) throw err;
    // A commit-time error follows the results of all operations, as ovsdb-server reports it.
    results.push(err.toJson());
    return { kind: 'failed', results, error: err };
  }
  const delta: DbDelta = { changes };
  if (commit) db.commitChanges(delta);
  return { kind: 'committed', results, delta, durable: x.durable, comments: x.comments };
}
