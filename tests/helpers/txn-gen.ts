// A seeded random generator of OVSDB "transact" operation arrays, driven by a schema and the
// current database contents. Most transactions are valid; a configurable share end in exactly
// one deliberate fault (referential integrity, index uniqueness, constraints, type errors,
// unknown names, arithmetic errors, failed waits, abort, ...), and each transaction carries the
// outcome the generator expects so the generator itself can be checked against ovsdb-server.
//
// The generator never reads _version values (they are random on the real server) and walks
// rows in UUID order, so its choices depend only on the seed and on the database contents.
import type { BaseTypeLite, ColumnLite, ColumnTypeLite, DbDump, Json, JsonRow, SchemaLite, TableLite } from './ovsdb-json.js';
import { canonicalJson, datumKey, isMapType, mapPairs, namedUuidAtom, referencedUuids, setElements, uuidAtom } from './ovsdb-json.js';
import { Rng } from './seeded-rng.js';

export type Expectation =
  | { readonly kind: 'commit' }
  | { readonly kind: 'error'; readonly error: string }
  /** The generator cannot predict the outcome (it still must agree between servers). */
  | { readonly kind: 'any' };

export interface GeneratedTxn {
  readonly ops: Json[];
  readonly expect: Expectation;
  /** One label per step, e.g. "insert:Logical_Switch" or "fault:delete-referenced". */
  readonly steps: readonly string[];
}

export interface TxnGeneratorOptions {
  readonly schema: SchemaLite;
  readonly seed: number;
  /** Share of transactions that carry one deliberate fault. */
  readonly faultProbability?: number;
  /** Share of inserts that carry an explicit "uuid" member (an Open vSwitch extension). */
  readonly explicitUuidProbability?: number;
  /** Bound on the operations of one transaction (a safety net; typical sizes are far below). */
  readonly opsMax?: number;
  /**
   * Relative weight of unsatisfied waits with a timeout, which an engine reports as blocked
   * (default 0: ovsdb-server would really wait, so differential runs leave them out).
   */
  readonly blockingWaitWeight?: number;
}

/** Integers stay inside the range JSON.parse represents exactly. */
const SAFE_INTEGER_MAX = Number.MAX_SAFE_INTEGER;
const SAFE_INTEGER_MIN = -Number.MAX_SAFE_INTEGER;
const INT64_MAX = (1n << 63n) - 1n;
const INT64_MIN = -(1n << 63n);
const INSERT_DEPTH_MAX = 2;
const STEP_ATTEMPTS_MAX = 20;

/** Characters chosen to stress JSON escaping, UTF-8 and UTF-16 handling. */
const STRING_CHUNKS = [
  'a', 'b', 'c', 'x', 'y', 'z', '0', '1', '9', '-', '_', '.', ' ', '/', ':',
  '"', '\\', '{', '}', '[', ']', ',', '\t', '\n', '\u0001', 'é', 'ß', '中', '😀', '\u2028', '\uffee',
];

/**
 * Steps allowed after the fault: none of them deletes rows, removes references or changes
 * index columns, so none can cure or mask the fault that precedes it.
 */
const TRAILING_STEP_KINDS = ['insert', 'select', 'comment', 'wait-row', 'update-broad', 'mutate-broad'];

const COMPARISON_FUNCTIONS = ['==', '!=', 'includes', 'excludes'] as const;
const ORDERING_FUNCTIONS = ['<', '<=', '>', '>='] as const;
const ARITHMETIC_MUTATORS = ['+=', '-=', '*=', '/=', '%='] as const;
type ArithmeticMutator = (typeof ARITHMETIC_MUTATORS)[number];

interface InsertedRow {
  readonly table: string;
  /** The explicit UUID, when the insert carried one. */
  readonly uuid: string | undefined;
  readonly name: string;
  readonly ref: Json;
}

interface LiveRow {
  readonly table: string;
  readonly uuid: string;
  readonly row: JsonRow;
}

function isNumeric(base: BaseTypeLite): boolean {
  return base.type === 'integer' || base.type === 'real';
}

function codePoints(s: string): number {
  return [...s].length;
}

function integerBounds(base: BaseTypeLite): [number, number] {
  return [Math.max(base.minInteger ?? SAFE_INTEGER_MIN, SAFE_INTEGER_MIN), Math.min(base.maxInteger ?? SAFE_INTEGER_MAX, SAFE_INTEGER_MAX)];
}

/** The result of an integer mutation as ovsdb-server computes it (C semantics), or an error name. */
export function applyIntegerMutator(x: bigint, mutator: ArithmeticMutator, arg: bigint): bigint | 'range error' | 'domain error' {
  let result: bigint;
  switch (mutator) {
    case '+=':
      result = x + arg;
      break;
    case '-=':
      result = x - arg;
      break;
    case '*=':
      result = x * arg;
      break;
    case '/=':
      if (arg === 0n) return 'domain error';
      result = x / arg; // BigInt division truncates toward zero, like C.
      break;
    case '%=':
      if (arg === 0n) return 'domain error';
      result = x % arg; // Sign follows the dividend, like C.
      break;
  }
  if (result > INT64_MAX || result < INT64_MIN) return 'range error';
  return result;
}

/**
 * ovsdb-server 3.1 (and OVS master as of this writing) crashes with SIGFPE on "*=" 0 applied
 * to a negative integer: its overflow check in ovsdb/mutation.c mul_int() evaluates
 * `INT64_MAX / y` with y == 0 when *x < 0. The generator never sends that.
 */
function crashesOvsdbServer(values: readonly bigint[], mutator: ArithmeticMutator, arg: number): boolean {
  return mutator === '*=' && arg === 0 && values.some((v) => v < 0n);
}

export class TxnGenerator {
  readonly rng: Rng;
  private readonly schema: SchemaLite;
  private readonly faultProbability: number;
  private readonly explicitUuidProbability: number;
  private readonly opsMax: number;
  readonly blockingWaitWeight: number;
  private freshCounter = 0;
  private txnCounter = 0;
  /** Tables that some strong reference column points at. */
  private readonly stronglyReferencedTables: Set<string>;

  constructor(options: TxnGeneratorOptions) {
    this.schema = options.schema;
    this.rng = new Rng(options.seed);
    this.faultProbability = options.faultProbability ?? 0.35;
    this.explicitUuidProbability = options.explicitUuidProbability ?? 1;
    this.opsMax = options.opsMax ?? 200;
    this.blockingWaitWeight = options.blockingWaitWeight ?? 0;
    this.stronglyReferencedTables = new Set();
    for (const table of this.schema.tables.values()) {
      for (const column of table.columns.values()) {
        for (const base of [column.type.key, column.type.value]) {
          if (base?.refTable !== undefined && base.refType === 'strong') this.stronglyReferencedTables.add(base.refTable);
        }
      }
    }
  }

  /** Generates the next transaction against the given database contents. */
  next(dump: DbDump): GeneratedTxn {
    this.txnCounter++;
    const builder = new TxnBuilder(this, this.schema, dump, this.rng);
    const safeSteps = this.rng.int(0, 3);
    for (let i = 0; i < safeSteps && builder.ops.length < this.opsMax; i++) builder.addSafeStep();
    if (this.rng.chance(this.faultProbability)) builder.addFault();
    if (builder.steps.length === 0 || this.rng.chance(0.2)) builder.addSafeStep();
    return { ops: builder.ops, expect: builder.expect, steps: builder.steps };
  }

  /** A value never produced before by this generator (for index columns and fresh names). */
  freshToken(): string {
    this.freshCounter++;
    return `${this.txnCounter.toString(36)}.${this.freshCounter.toString(36)}`;
  }

  useExplicitUuid(): boolean {
    return this.rng.chance(this.explicitUuidProbability);
  }

  isStronglyReferenced(table: string): boolean {
    return this.stronglyReferencedTables.has(table);
  }
}

/** Builds one transaction; holds what the transaction has done so far. */
class TxnBuilder {
  readonly ops: Json[] = [];
  readonly steps: string[] = [];
  expect: Expectation = { kind: 'commit' };
  private faulted = false;
  private readonly deleted = new Set<string>();
  /** Rows inserted, updated, mutated, deleted, or otherwise changed by this transaction. */
  private readonly touched = new Set<string>();
  /** Rows that gained a strong reference in this transaction; deleting them would fail. */
  private readonly pinned = new Set<string>();
  /** "table.column" changed on rows the generator did not track individually. */
  private readonly dirtyColumns = new Set<string>();
  /** Tables whose row set may have changed in ways the generator did not track. */
  private readonly volatileTables = new Set<string>();
  /** Tables with any insert or delete in this transaction. */
  private readonly changedTables = new Set<string>();
  private readonly inserted: InsertedRow[] = [];
  /** Strong referrers of each row in the dump: target uuid → [table, uuid, column]. */
  private readonly strongReferrers = new Map<string, { table: string; uuid: string; column: string }[]>();

  /** Every row of the dump, sorted by table and UUID once per transaction. */
  private readonly allRows: LiveRow[] = [];

  constructor(
    private readonly gen: TxnGenerator,
    private readonly schema: SchemaLite,
    private readonly dump: DbDump,
    private readonly rng: Rng,
  ) {
    for (const table of [...schema.tables.keys()].sort()) {
      const rows = dump[table] ?? {};
      for (const uuid of Object.keys(rows).sort()) this.allRows.push({ table, uuid, row: rows[uuid] as JsonRow });
    }
    for (const table of schema.tables.values()) {
      const rows = dump[table.name] ?? {};
      for (const [uuid, row] of Object.entries(rows)) {
        for (const column of table.columns.values()) {
          const datum = row[column.name];
          if (datum === undefined) continue;
          for (const [base, uuids] of [
            [column.type.key, referencedUuids(datum, column.type).key],
            [column.type.value, referencedUuids(datum, column.type).value],
          ] as const) {
            if (base?.refTable === undefined || base.refType !== 'strong') continue;
            for (const target of uuids) {
              const list = this.strongReferrers.get(target) ?? [];
              list.push({ table: table.name, uuid, column: column.name });
              this.strongReferrers.set(target, list);
            }
          }
        }
      }
    }
  }

  // ---------------------------------------------------------------- steps

  addSafeStep(): void {
    for (let attempt = 0; attempt < STEP_ATTEMPTS_MAX; attempt++) {
      const kind = this.faulted ? this.rng.pick(TRAILING_STEP_KINDS) : this.rng.weighted<string>([
        ['insert', 6],
        ['insert-orphan', 0.5],
        ['update-row', 2.5],
        ['update-new-row', 0.7],
        ['update-broad', 1.5],
        ['mutate-row', 3],
        ['mutate-broad', 1.5],
        ['delete-root', 1.5],
        ['delete-child', 1],
        ['delete-broad', 0.5],
        ['insert-delete', 0.3],
        ['select', 2],
        ['wait-row', 1],
        ['wait-table', 0.5],
        ['comment', 0.3],
        ['commit', 0.2],
      ]);
      const label = this.trySafeStep(kind);
      if (label !== undefined) {
        this.steps.push(label);
        return;
      }
    }
    this.ops.push({ op: 'comment', comment: 'no applicable step' });
    this.steps.push('comment');
  }

  private trySafeStep(kind: string): string | undefined {
    switch (kind) {
      case 'insert':
        return this.stepInsert();
      case 'insert-orphan':
        return this.stepInsertOrphan();
      case 'update-row':
        return this.stepUpdateRow();
      case 'update-new-row':
        return this.stepUpdateNewRow();
      case 'update-broad':
        return this.stepUpdateBroad();
      case 'mutate-row':
        return this.stepMutateRow();
      case 'mutate-broad':
        return this.stepMutateBroad();
      case 'delete-root':
        return this.stepDeleteRoot();
      case 'delete-child':
        return this.stepDeleteChild();
      case 'delete-broad':
        return this.stepDeleteBroad();
      case 'insert-delete':
        return this.stepInsertDelete();
      case 'select':
        return this.stepSelect();
      case 'wait-row':
        return this.stepWaitRow();
      case 'wait-table':
        return this.stepWaitTable();
      case 'comment':
        this.ops.push({ op: 'comment', comment: this.randomString(0, 20) });
        return 'comment';
      case 'commit':
        this.ops.push({ op: 'commit', durable: this.rng.chance(0.5) });
        return 'commit';
      default:
        throw new Error(`unknown step ${kind}`);
    }
  }

  private stepInsert(): string | undefined {
    const roots = [...this.schema.tables.values()].filter((t) => t.isRoot && this.canInsert(t));
    if (roots.length === 0) return undefined;
    const weighted = roots.map((t) => [t, /^(Logical_Switch|Logical_Router|Port_Group|Address_Set|Meter|ACL)$/.test(t.name) ? 4 : 1] as const);
    const table = this.rng.weighted(weighted);
    this.insertRow(table, 0);
    return `insert:${table.name}`;
  }

  /** A non-root row nobody references: ovsdb-server garbage-collects it at commit. */
  private stepInsertOrphan(): string | undefined {
    const tables = [...this.schema.tables.values()].filter((t) => !t.isRoot && this.canInsert(t));
    if (tables.length === 0) return undefined;
    const table = this.rng.pick(tables);
    this.insertRow(table, INSERT_DEPTH_MAX);
    return `insert-orphan:${table.name}`;
  }

  private stepUpdateRow(): string | undefined {
    const target = this.pickRow({ untouched: true });
    if (target === undefined) return undefined;
    const table = this.table(target.table);
    const columns = this.rng.subset(this.userColumns(table).filter((c) => c.mutable), 3);
    if (columns.length === 0) return undefined;
    const row: Record<string, Json> = {};
    for (const column of columns) row[column.name] = this.columnValue(table, column, 1);
    this.ops.push({ op: 'update', table: table.name, where: [['_uuid', '==', uuidAtom(target.uuid)]], row });
    this.touched.add(target.uuid);
    return `update-row:${table.name}`;
  }

  /** Updates a row inserted earlier in this transaction, found by its uuid-name. */
  private stepUpdateNewRow(): string | undefined {
    const candidates = this.inserted.filter((r) => !this.deleted.has(r.name));
    if (candidates.length === 0) return undefined;
    const target = this.rng.pick(candidates);
    const table = this.table(target.table);
    const columns = this.rng.subset(
      this.userColumns(table).filter((c) => c.mutable && !this.isIndexColumn(table, c.name) && !this.isRefColumn(c)),
      2,
    );
    if (columns.length === 0) return undefined;
    const row: Record<string, Json> = {};
    for (const column of columns) row[column.name] = this.columnValue(table, column, INSERT_DEPTH_MAX);
    this.ops.push({ op: 'update', table: table.name, where: [['_uuid', '==', target.ref]], row });
    return `update-new-row:${table.name}`;
  }

  /** Updates unconstrained, unindexed, non-reference columns on every row a random condition matches. */
  private stepUpdateBroad(): string | undefined {
    const table = this.pickTable((t) => this.freeColumns(t).length > 0);
    if (table === undefined) return undefined;
    const columns = this.rng.subset(this.freeColumns(table), 2);
    if (columns.length === 0) return undefined;
    const row: Record<string, Json> = {};
    for (const column of columns) {
      row[column.name] = this.columnValue(table, column, INSERT_DEPTH_MAX);
      this.dirtyColumns.add(`${table.name}.${column.name}`);
    }
    this.ops.push({ op: 'update', table: table.name, where: this.randomWhere(table), row });
    return `update-broad:${table.name}`;
  }

  private stepMutateRow(): string | undefined {
    const target = this.pickRow({ untouched: true });
    if (target === undefined) return undefined;
    const table = this.table(target.table);
    const mutations: Json[] = [];
    const kinds: string[] = [];
    const mutable = this.userColumns(table).filter((c) => c.mutable);
    // Arithmetic needs integer columns, which are rarer than sets and maps: favour them.
    const integers = mutable.filter((c) => c.type.value === undefined && c.type.key.type === 'integer' && c.type.max === 1);
    const chosen = integers.length > 0 && this.rng.chance(0.5) ? [this.rng.pick(integers)] : this.rng.subset(mutable, 2);
    for (const column of chosen) {
      if (this.isIndexColumn(table, column.name)) continue;
      // A broad update or mutation earlier in this transaction may have changed the value: the
      // one read here is from before it (an integer there times 3 can leave the range both sides
      // represent exactly, SB seed 1163775666).
      if (this.dirtyColumns.has(`${table.name}.${column.name}`)) continue;
      const mutation = this.exactMutation(table, column, target.row[column.name] ?? null);
      if (mutation === undefined) continue;
      mutations.push(mutation);
      kinds.push(String((mutation as Json[])[1]));
    }
    if (mutations.length === 0) return undefined;
    this.ops.push({ op: 'mutate', table: table.name, where: [['_uuid', '==', uuidAtom(target.uuid)]], mutations });
    this.touched.add(target.uuid);
    return `mutate-row:${table.name}:${kinds.join(',')}`;
  }

  /** Whether an op of the transaction being built so far updates or mutates rows of `table`. */
  private writesTableSoFar(table: string): boolean {
    return this.ops.some((op) => {
      const o = op as { op?: unknown; table?: unknown } | null;
      return o !== null && o.table === table && (o.op === 'update' || o.op === 'mutate');
    });
  }

  /** A mutation of one column of a row whose current value is known, that keeps the row valid. */
  private exactMutation(table: TableLite, column: ColumnLite, current: Json): Json | undefined {
    const type = column.type;
    if (type.value === undefined && isNumeric(type.key) && type.max === 1 && type.key.type === 'integer' && type.key.enum === undefined) {
      const values = setElements(current).map((v) => BigInt(v as number));
      const [lo, hi] = integerBounds(type.key);
      for (let attempt = 0; attempt < 10; attempt++) {
        const mutator = this.rng.pick(ARITHMETIC_MUTATORS);
        const arg = this.arithmeticOperand(mutator);
        if (crashesOvsdbServer(values, mutator, arg)) continue;
        // The value read is the one before this transaction: an earlier op of it may have made
        // it negative (an update of the whole table, say), and then "*=" 0 would crash it.
        if (mutator === '*=' && arg === 0 && this.writesTableSoFar(table.name)) continue;
        const results = values.map((v) => applyIntegerMutator(v, mutator, BigInt(arg)));
        if (results.every((r) => typeof r === 'bigint' && r >= BigInt(lo) && r <= BigInt(hi))) return [column.name, mutator, arg];
      }
      return undefined;
    }
    if (type.max > 1 || (type.min === 0 && type.max === 1) || type.value !== undefined) {
      return this.setOrMapMutation(table, column, current);
    }
    return undefined;
  }

  private arithmeticOperand(mutator: ArithmeticMutator): number {
    if (mutator === '*=') return this.rng.pick([-3, -1, 0, 1, 2, 3, 7]);
    if (mutator === '/=' || mutator === '%=') return this.rng.pick([-7, -3, -2, -1, 1, 2, 3, 5, 1000]);
    return this.rng.pick([-1000, -7, -1, 0, 1, 2, 5, 100, 4096]);
  }

  /** insert/delete on a set or map column, respecting the size bounds given the known current value. */
  private setOrMapMutation(table: TableLite, column: ColumnLite, current: Json): Json | undefined {
    const type = column.type;
    if (isMapType(type)) {
      const pairs = mapPairs(current);
      const choice = this.rng.pick(['insert', 'delete-keys', 'delete-pairs'] as const);
      if (choice === 'insert') {
        if (this.isRefColumn(column)) return undefined;
        const room = type.max - pairs.length;
        const add = this.randomPairs(type, Math.min(3, Math.max(0, room)));
        // Existing keys may be repeated: "insert" leaves a present key's value alone.
        if (pairs.length > 0 && this.rng.chance(0.4)) add.push([this.rng.pick(pairs)[0], this.randomAtom(type.value as BaseTypeLite)]);
        const unique = this.uniquePairs(add);
        const newKeys = unique.filter(([k]) => !pairs.some(([pk]) => canonicalJson(pk) === canonicalJson(k)));
        if (pairs.length + newKeys.length > type.max) return undefined;
        return [column.name, 'insert', ['map', unique]];
      }
      const removable = this.rng.subset(pairs, 3);
      if (pairs.length - removable.length < type.min) return undefined;
      if (choice === 'delete-keys') {
        const keys = removable.map(([k]) => k);
        if (this.rng.chance(0.5) && !this.isRefBase(type.key)) keys.push(this.randomAtom(type.key));
        return [column.name, 'delete', ['set', this.uniqueAtoms(keys)]];
      }
      // Delete by pairs: a pair whose value differs from the stored one deletes nothing.
      const byPairs: [Json, Json][] = removable.map(([k, v]) => [k, v]);
      if (pairs.length > 0 && this.rng.chance(0.5) && !this.isRefBase(type.value as BaseTypeLite)) {
        const [k] = this.rng.pick(pairs);
        if (!byPairs.some(([bk]) => canonicalJson(bk) === canonicalJson(k))) byPairs.push([k, this.randomAtom(type.value as BaseTypeLite)]);
      }
      if (byPairs.length === 0) return undefined;
      return [column.name, 'delete', ['map', byPairs]];
    }
    const elements = setElements(current);
    if (this.rng.chance(0.5)) {
      const room = type.max - elements.length;
      if (room <= 0) return undefined;
      const add = this.isRefBase(type.key)
        ? this.refAtoms(table, column, type.key, this.rng.int(1, Math.min(2, room)), INSERT_DEPTH_MAX)
        : this.uniqueAtoms(Array.from({ length: this.rng.int(1, Math.min(3, room)) }, () => this.randomAtom(type.key)));
      if (add.length === 0) return undefined;
      const merged = this.uniqueAtoms([...elements, ...add]);
      if (merged.length > type.max) return undefined;
      // A weak reference to a missing row is dropped at commit; that must not break "min".
      return [column.name, 'insert', this.encodeSet(add, type)];
    }
    const remove = this.rng.subset(elements, 2);
    if (!this.isRefBase(type.key) && this.rng.chance(0.4)) remove.push(this.randomAtom(type.key));
    const unique = this.uniqueAtoms(remove);
    const remaining = elements.filter((e) => !unique.some((r) => canonicalJson(r) === canonicalJson(e)));
    if (remaining.length < type.min || unique.length === 0) return undefined;
    return [column.name, 'delete', this.encodeSet(unique, type)];
  }

  /** Mutations on many rows at once, guarded by conditions so every matched row stays valid. */
  private stepMutateBroad(): string | undefined {
    const table = this.pickTable(() => true);
    if (table === undefined) return undefined;
    const where = this.randomWhere(table).slice(0, 1);
    const mutations: Json[] = [];
    const candidates = this.userColumns(table).filter((c) => c.mutable && !this.isIndexColumn(table, c.name) && !this.isRefColumn(c));
    for (const column of this.rng.subset(candidates, 2)) {
      const type = column.type;
      if (type.value === undefined && type.key.type === 'integer' && type.max === 1 && type.key.enum === undefined) {
        const guarded = this.guardedArithmetic(column);
        if (guarded === undefined) continue;
        where.push(...guarded.guards);
        mutations.push(guarded.mutation);
      } else if (isMapType(type) && type.min === 0 && type.max === Infinity) {
        const mutator = this.rng.pick(['insert', 'delete'] as const);
        if (mutator === 'insert') mutations.push([column.name, 'insert', ['map', this.randomPairs(type, this.rng.int(1, 2))]]);
        else if (this.rng.chance(0.5)) mutations.push([column.name, 'delete', ['set', this.uniqueAtoms([this.randomAtom(type.key), this.randomAtom(type.key)])]]);
        else mutations.push([column.name, 'delete', ['map', this.randomPairs(type, 2)]]);
      } else if (!isMapType(type) && type.min === 0 && type.max === Infinity) {
        const atoms = this.uniqueAtoms([this.randomAtom(type.key), this.randomAtom(type.key)]);
        mutations.push([column.name, this.rng.pick(['insert', 'delete']), this.encodeSet(atoms, type)]);
      } else {
        continue;
      }
      this.dirtyColumns.add(`${table.name}.${column.name}`);
    }
    if (mutations.length === 0) return undefined;
    this.ops.push({ op: 'mutate', table: table.name, where, mutations });
    return `mutate-broad:${table.name}:${mutations.map((m) => (m as Json[])[1]).join(',')}`;
  }

  /** An arithmetic mutation plus ordering conditions that keep every matched value in range. */
  private guardedArithmetic(column: ColumnLite): { mutation: Json; guards: Json[] } | undefined {
    const [lo, hi] = integerBounds(column.type.key);
    const mutator = this.rng.pick(ARITHMETIC_MUTATORS);
    const arg = this.arithmeticOperand(mutator);
    const name = column.name;
    const guards: Json[] = [];
    switch (mutator) {
      case '+=':
      case '-=': {
        const delta = mutator === '+=' ? arg : -arg;
        if (delta >= 0) guards.push([name, '<=', hi - delta]);
        else guards.push([name, '>=', lo - delta]);
        break;
      }
      case '*=': {
        if (arg === 0) {
          if (lo > 0 || hi < 0) return undefined;
          // A negative value times 0 crashes ovsdb-server 3.1 (see crashesOvsdbServer).
          if (lo < 0) guards.push([name, '>=', 0]);
          break;
        }
        const a = Math.abs(arg);
        const limitHi = Math.floor(hi / a);
        const limitLo = Math.ceil(lo / a);
        // x * arg in [lo, hi]: bound |x| by the tighter side for either sign of arg.
        const bound = Math.min(Math.abs(limitHi), Math.abs(limitLo));
        if (lo >= 0) guards.push([name, '<=', limitHi], [name, '>=', Math.ceil(lo / a)]);
        else guards.push([name, '<=', bound], [name, '>=', -bound]);
        if (arg < 0 && lo >= 0) return undefined;
        break;
      }
      case '/=':
        if (lo > 0) {
          if (arg < 0) return undefined;
          guards.push([name, '>=', lo * arg]);
        }
        if (arg < 0 && lo === 0) return undefined;
        break;
      case '%=':
        if (lo > 0) return undefined;
        if (lo === 0) guards.push([name, '>=', 0]);
        break;
    }
    // ovsdb-server checks condition values against the column's constraints too.
    if (guards.some((g) => { const v = (g as Json[])[2] as number; return v < lo || v > hi; })) return undefined;
    return { mutation: [name, mutator, arg], guards };
  }

  /** Deletes a root row that nothing references strongly; its children are garbage-collected. */
  private stepDeleteRoot(): string | undefined {
    const target = this.pickRow({
      untouched: false,
      filter: (r) => this.table(r.table).isRoot && !this.pinned.has(r.uuid) && this.liveStrongReferrers(r.uuid).length === 0,
    });
    if (target === undefined) return undefined;
    this.ops.push({ op: 'delete', table: target.table, where: this.whereIdentifying(target) });
    this.markDeleted(target.uuid, target.table);
    return `delete-root:${target.table}`;
  }

  /** Removes every strong reference to a non-root row, then deletes it explicitly. */
  private stepDeleteChild(): string | undefined {
    const target = this.pickRow({
      untouched: true,
      filter: (r) => !this.table(r.table).isRoot && !this.pinned.has(r.uuid),
    });
    if (target === undefined) return undefined;
    const referrers = this.strongReferrers.get(target.uuid) ?? [];
    if (referrers.some((ref) => this.touched.has(ref.uuid) || this.deleted.has(ref.uuid))) return undefined;
    const unrefs: Json[] = [];
    for (const ref of referrers) {
      const column = this.column(ref.table, ref.column);
      const current = this.dump[ref.table]?.[ref.uuid]?.[ref.column] ?? null;
      const count = isMapType(column.type) ? mapPairs(current).length : setElements(current).length;
      if (count - 1 < column.type.min) return undefined;
      if (isMapType(column.type)) return undefined;
      unrefs.push({ op: 'mutate', table: ref.table, where: [['_uuid', '==', uuidAtom(ref.uuid)]], mutations: [[ref.column, 'delete', uuidAtom(target.uuid)]] });
    }
    this.ops.push(...unrefs);
    for (const ref of referrers) this.touched.add(ref.uuid);
    this.ops.push({ op: 'delete', table: target.table, where: [['_uuid', '==', uuidAtom(target.uuid)]] });
    this.markDeleted(target.uuid, target.table);
    return `delete-child:${target.table}`;
  }

  /** A delete with a random condition on a table nothing can reference strongly. */
  private stepDeleteBroad(): string | undefined {
    const table = this.pickTable((t) => t.isRoot && !this.gen.isStronglyReferenced(t.name));
    if (table === undefined) return undefined;
    this.ops.push({ op: 'delete', table: table.name, where: this.randomWhere(table) });
    this.volatileTables.add(table.name);
    this.changedTables.add(table.name);
    return `delete-broad:${table.name}`;
  }

  /** Inserts a root row and deletes it again in the same transaction. */
  private stepInsertDelete(): string | undefined {
    const roots = [...this.schema.tables.values()].filter((t) => t.isRoot && this.canInsert(t));
    if (roots.length === 0) return undefined;
    const table = this.rng.pick(roots);
    const inserted = this.insertRow(table, INSERT_DEPTH_MAX);
    if (this.pinned.has(inserted.name)) return undefined;
    this.ops.push({ op: 'delete', table: table.name, where: [['_uuid', '==', inserted.ref]] });
    this.deleted.add(inserted.name);
    if (inserted.uuid !== undefined) this.deleted.add(inserted.uuid);
    return `insert-delete:${table.name}`;
  }

  private stepSelect(): string | undefined {
    const table = this.pickTable(() => true);
    if (table === undefined) return undefined;
    const op: Record<string, Json> = { op: 'select', table: table.name, where: this.randomWhere(table) };
    if (this.rng.chance(0.6)) {
      const names = [...table.columns.keys(), '_uuid', '_version'];
      op['columns'] = this.rng.subset(names, 4);
    }
    this.ops.push(op);
    return `select:${table.name}`;
  }

  /** A satisfied wait on one untouched row: "==" with its values, or "!=" with other values. */
  private stepWaitRow(): string | undefined {
    const target = this.pickRow({ untouched: true, filter: (r) => !this.volatileTables.has(r.table) });
    if (target === undefined) return undefined;
    const table = this.table(target.table);
    const columns = this.rng
      .subset(this.userColumns(table), 3)
      .filter((c) => !this.dirtyColumns.has(`${table.name}.${c.name}`) && target.row[c.name] !== undefined);
    if (columns.length === 0) return undefined;
    const until = this.rng.pick(['==', '!='] as const);
    const row: Record<string, Json> = {};
    for (const c of columns) row[c.name] = target.row[c.name] as Json;
    if (until === '!=') {
      const c = this.rng.pick(columns);
      const other = this.columnValue(table, c, INSERT_DEPTH_MAX, { noInserts: true });
      if (datumKey(other) === datumKey(row[c.name] as Json)) return undefined;
      row[c.name] = other;
    }
    const op: Record<string, Json> = {
      op: 'wait',
      table: table.name,
      where: [['_uuid', '==', uuidAtom(target.uuid)]],
      columns: columns.map((c) => c.name),
      until,
      rows: [row],
    };
    if (this.rng.chance(0.7)) op['timeout'] = 0;
    this.ops.push(op);
    return `wait-row:${until}`;
  }

  /** A satisfied "==" wait over a whole table the transaction has not changed. */
  private stepWaitTable(): string | undefined {
    const table = this.pickTable(
      (t) =>
        !this.changedTables.has(t.name) &&
        !this.volatileTables.has(t.name) &&
        !Object.keys(this.dump[t.name] ?? {}).some((u) => this.touched.has(u)),
    );
    if (table === undefined) return undefined;
    const columns = this.rng
      .subset(this.userColumns(table), 2)
      .filter((c) => ![...this.dirtyColumns].some((d) => d === `${table.name}.${c.name}`));
    if (columns.length === 0) return undefined;
    const rows = this.tableRows(table.name).map(({ row: r }) => {
      const projected: Record<string, Json> = {};
      for (const c of columns) projected[c.name] = r[c.name] as Json;
      return projected;
    });
    this.ops.push({ op: 'wait', table: table.name, where: [], columns: columns.map((c) => c.name), until: '==', rows: this.rng.shuffle(rows), timeout: 0 });
    return 'wait-table';
  }

  // ---------------------------------------------------------------- faults

  addFault(): void {
    for (let attempt = 0; attempt < STEP_ATTEMPTS_MAX; attempt++) {
      const kind = this.rng.weighted<string>([
        ['abort', 1],
        ['assert', 0.5],
        ['delete-referenced', 3],
        ['dangling-strong', 3],
        ['index-dup', 3],
        ['enum', 1.5],
        ['range', 2],
        ['string-length', 0.7],
        ['set-size', 2],
        ['immutable', 1],
        ['unknown-table', 0.7],
        ['unknown-column', 1.5],
        ['type-error', 2],
        ['duplicate-in-set', 0.7],
        ['max-rows', 1],
        ['range-error', 1],
        ['domain-error', 1],
        ['wait-fail', 1.5],
        ['syntax', 2],
        ['condition-constraint', 0.7],
        ['duplicate-uuid', 0.7],
        ['weak-missing', 1],
        ['default-violates', 1],
        ['condition-size', 0.7],
        ['wait-blocked', this.gen.blockingWaitWeight],
      ]);
      const label = this.tryFault(kind);
      if (label !== undefined) {
        this.steps.push(`fault:${label}`);
        this.faulted = true;
        return;
      }
    }
  }

  private fail(error: string, label: string): string {
    this.expect = { kind: 'error', error };
    return label;
  }

  private tryFault(kind: string): string | undefined {
    switch (kind) {
      case 'abort':
        this.ops.push({ op: 'abort' });
        return this.fail('aborted', 'abort');
      case 'assert':
        this.ops.push({ op: 'assert', lock: `lock_${this.rng.int(0, 9)}` });
        return this.fail('not owner', 'assert');
      case 'delete-referenced':
        return this.faultDeleteReferenced();
      case 'dangling-strong':
        return this.faultDanglingStrong();
      case 'index-dup':
        return this.faultIndexDup();
      case 'enum':
        return this.faultBadAtom('enum');
      case 'range':
        return this.faultBadAtom('range');
      case 'string-length':
        return this.faultBadAtom('length');
      case 'set-size':
        return this.faultSetSize();
      case 'immutable':
        return this.faultImmutable();
      case 'unknown-table':
        return this.faultUnknownTable();
      case 'unknown-column':
        return this.faultUnknownColumn();
      case 'type-error':
        return this.faultTypeError();
      case 'duplicate-in-set':
        return this.faultDuplicateInSet();
      case 'max-rows':
        return this.faultMaxRows();
      case 'range-error':
        return this.faultRangeError();
      case 'domain-error':
        return this.faultDomainError();
      case 'wait-fail':
        return this.faultWait(0);
      case 'wait-blocked':
        return this.faultWait(this.rng.pick([1, 1000]));
      case 'syntax':
        return this.faultSyntax();
      case 'condition-constraint':
        return this.faultConditionConstraint();
      case 'condition-size':
        return this.faultConditionSize();
      case 'duplicate-uuid':
        return this.faultDuplicateUuid();
      case 'weak-missing':
        return this.faultWeakMissing();
      case 'default-violates':
        return this.faultDefaultViolates();
      default:
        throw new Error(`unknown fault ${kind}`);
    }
  }

  /** Deletes a row that an untouched row still references strongly. */
  private faultDeleteReferenced(): string | undefined {
    const target = this.pickRow({
      untouched: true,
      filter: (r) => {
        const refs = this.strongReferrers.get(r.uuid) ?? [];
        return (
          refs.length > 0 &&
          refs.every((ref) => !this.touched.has(ref.uuid) && !this.deleted.has(ref.uuid) && !this.volatileTables.has(ref.table)) &&
          refs.some((ref) => ref.uuid !== r.uuid)
        );
      },
    });
    if (target === undefined) return undefined;
    this.ops.push({ op: 'delete', table: target.table, where: [['_uuid', '==', uuidAtom(target.uuid)]] });
    this.markDeleted(target.uuid, target.table);
    return this.fail('referential integrity violation', `delete-referenced:${target.table}`);
  }

  /** A strong reference to a row that does not exist (or lives in another table). */
  private faultDanglingStrong(): string | undefined {
    const candidates: { table: TableLite; column: ColumnLite }[] = [];
    for (const table of this.schema.tables.values()) {
      for (const column of table.columns.values()) {
        if (column.mutable && column.type.key.refTable !== undefined && column.type.key.refType === 'strong' && !isMapType(column.type)) {
          candidates.push({ table, column });
        }
      }
    }
    if (candidates.length === 0) return undefined;
    const { table, column } = this.rng.pick(candidates);
    const refTable = column.type.key.refTable as string;
    const how = this.rng.pick(['insert', 'mutate'] as const);
    const owner =
      how === 'mutate'
        ? this.pickRow({
            untouched: true,
            filter: (r) => r.table === table.name && setElements(r.row[column.name] ?? ['set', []]).length < column.type.max,
          })
        : undefined;
    if (how === 'mutate' && owner === undefined) return undefined;
    // The missing target: a fresh UUID, an undeclared uuid-name, or a row of a different table.
    // (ovsdb-server ignores a reference from a row to its own UUID, whatever the table.)
    const otherTableRows = this.liveRows((r) => r.table !== refTable && !this.touched.has(r.uuid) && r.uuid !== owner?.uuid);
    let variant = this.rng.pick(['fresh', 'undeclared-name', 'wrong-table'] as const);
    if (variant === 'wrong-table' && otherTableRows.length === 0) variant = 'fresh';
    let atom: Json;
    if (variant === 'wrong-table') atom = uuidAtom(this.rng.pick(otherTableRows).uuid);
    else if (variant === 'undeclared-name') atom = namedUuidAtom(`undeclared_${this.gen.freshToken().replace(/\W/g, '_')}`);
    else atom = uuidAtom(this.gen.rng.uuid());
    if (owner !== undefined) {
      this.ops.push({ op: 'mutate', table: table.name, where: [['_uuid', '==', uuidAtom(owner.uuid)]], mutations: [[column.name, 'insert', atom]] });
      this.touched.add(owner.uuid);
    } else {
      if (!table.isRoot || !this.canInsert(table) || column.type.max < 1) return undefined;
      const inserted = this.insertRow(table, INSERT_DEPTH_MAX, { override: { [column.name]: atom } });
      this.touched.add(inserted.name);
    }
    return this.fail('referential integrity violation', `dangling-strong:${variant}:${how}`);
  }

  /** Two rows with equal values in an index: an insert or an update copying another row's key. */
  private faultIndexDup(): string | undefined {
    const tables = [...this.schema.tables.values()].filter((t) => t.indexes.length > 0);
    if (tables.length === 0) return undefined;
    const table = this.rng.pick(tables);
    const index = this.rng.pick(table.indexes);
    // Both rows must survive garbage collection: uniqueness is checked after it.
    const existing = this.pickRow({
      untouched: true,
      filter: (r) => r.table === table.name && !index.some((c) => this.dirtyColumns.has(`${table.name}.${c}`)) && !this.mayBeCollected(r.uuid, r.table),
    });
    const variant = this.rng.pick(['insert-copy', 'update-copy', 'two-inserts'] as const);
    const key: Record<string, Json> = {};
    if (variant === 'two-inserts' || existing === undefined) {
      if (!table.isRoot || table.maxRows < 2 || !this.canInsert(table, 2)) return undefined;
      for (const c of index) key[c] = this.freshValue(table, this.column(table.name, c));
      this.insertRow(table, INSERT_DEPTH_MAX, { override: key, keepIndex: true });
      this.insertRow(table, INSERT_DEPTH_MAX, { override: key, keepIndex: true });
      return this.fail('constraint violation', `index-dup:two-inserts:${table.name}`);
    }
    for (const c of index) key[c] = existing.row[c] as Json;
    if (variant === 'insert-copy') {
      if (!this.canInsert(table)) return undefined;
      this.touched.add(existing.uuid);
      this.insertRow(table, INSERT_DEPTH_MAX, { override: key, keepIndex: true });
      if (!table.isRoot) {
        // Nobody references the new row, so it is garbage-collected before the index check.
        this.expect = { kind: 'commit' };
        return 'index-dup:orphan-gc';
      }
      return this.fail('constraint violation', `index-dup:insert:${table.name}`);
    }
    const other = this.pickRow({ untouched: true, filter: (r) => r.table === table.name && r.uuid !== existing.uuid && !this.mayBeCollected(r.uuid, r.table) });
    if (other === undefined || index.some((c) => !this.column(table.name, c).mutable)) return undefined;
    this.ops.push({ op: 'update', table: table.name, where: [['_uuid', '==', uuidAtom(other.uuid)]], row: key });
    this.touched.add(other.uuid);
    this.touched.add(existing.uuid);
    return this.fail('constraint violation', `index-dup:update:${table.name}`);
  }

  /** An atom outside its enum, integer range, or string length, written by insert, update or mutate. */
  private faultBadAtom(kind: 'enum' | 'range' | 'length'): string | undefined {
    const candidates: { table: TableLite; column: ColumnLite; base: BaseTypeLite; part: 'key' | 'value' }[] = [];
    for (const table of this.schema.tables.values()) {
      for (const column of table.columns.values()) {
        for (const part of ['key', 'value'] as const) {
          const base = column.type[part];
          if (base === undefined || !column.mutable) continue;
          if (kind === 'enum' && base.enum !== undefined) candidates.push({ table, column, base, part });
          if (kind === 'range' && base.type === 'integer' && base.enum === undefined && (base.minInteger !== undefined || base.maxInteger !== undefined)) {
            candidates.push({ table, column, base, part });
          }
          if (kind === 'length' && base.type === 'string' && base.enum === undefined && (base.maxLength !== undefined || (base.minLength ?? 0) > 0)) {
            candidates.push({ table, column, base, part });
          }
        }
      }
    }
    if (candidates.length === 0) return undefined;
    const { table, column, base, part } = this.rng.pick(candidates);
    const bad = this.badAtom(base, kind);
    const type = column.type;
    let datum: Json;
    if (isMapType(type)) {
      const other = part === 'key' ? (type.value as BaseTypeLite) : type.key;
      if (this.isRefBase(other)) return undefined;
      const pair: [Json, Json] = part === 'key' ? [bad, this.randomAtom(other)] : [this.randomAtom(type.key), bad];
      datum = ['map', [pair]];
    } else {
      datum = type.max === 1 && this.rng.chance(0.5) ? bad : ['set', [bad]];
    }
    if (type.max < 1) return undefined;
    const how = this.rng.pick(['insert', 'update', 'mutate'] as const);
    if (how === 'insert' || (how === 'mutate' && type.max === 1 && !isMapType(type) && type.min === 1)) {
      if (!this.canInsert(table)) return undefined;
      this.insertRow(table, INSERT_DEPTH_MAX, { override: { [column.name]: datum } });
    } else {
      const target = this.pickRow({ untouched: true, filter: (r) => r.table === table.name });
      if (target === undefined) return undefined;
      if (how === 'update') {
        this.ops.push({ op: 'update', table: table.name, where: [['_uuid', '==', uuidAtom(target.uuid)]], row: { [column.name]: datum } });
      } else {
        if (type.min === type.max) return undefined;
        if (!isMapType(type) && setElements(target.row[column.name] ?? ['set', []]).length >= type.max) return undefined;
        if (isMapType(type) && mapPairs(target.row[column.name] ?? ['map', []]).length >= type.max) return undefined;
        this.ops.push({ op: 'mutate', table: table.name, where: [['_uuid', '==', uuidAtom(target.uuid)]], mutations: [[column.name, 'insert', datum]] });
      }
      this.touched.add(target.uuid);
    }
    return this.fail('constraint violation', `${kind}:${how}:${table.name}.${column.name}`);
  }

  private badAtom(base: BaseTypeLite, kind: 'enum' | 'range' | 'length'): Json {
    if (kind === 'enum') {
      if (base.type === 'string') return this.rng.pick(['bogus', '', 'ALLOW', 'drop ']);
      if (base.type === 'integer') return 987654;
      return this.rng.pick(base.enum ?? [true]) === true ? false : true;
    }
    if (kind === 'range') {
      const options: number[] = [];
      if (base.minInteger !== undefined && base.minInteger > SAFE_INTEGER_MIN) options.push(base.minInteger - 1, base.minInteger - 1000);
      if (base.maxInteger !== undefined && base.maxInteger < SAFE_INTEGER_MAX) options.push(base.maxInteger + 1, base.maxInteger + 12345);
      return this.rng.pick(options);
    }
    if (base.maxLength !== undefined) {
      const char = this.rng.pick(['a', 'é', '😀']);
      return char.repeat(base.maxLength + this.rng.int(1, 3));
    }
    return '';
  }

  /** Too many or too few elements: parse-time "syntax error" or mutate-time "constraint violation". */
  private faultSetSize(): string | undefined {
    const variant = this.rng.pick(['literal-too-big', 'literal-too-small', 'mutate-too-big', 'mutate-too-small'] as const);
    const columns: { table: TableLite; column: ColumnLite }[] = [];
    for (const table of this.schema.tables.values()) {
      for (const column of table.columns.values()) {
        if (!column.mutable || isMapType(column.type) || column.type.key.type === 'uuid' || column.type.key.type === 'boolean') continue;
        const t = column.type;
        const scalar = t.min === 1 && t.max === 1;
        if (variant === 'literal-too-big' && t.max !== Infinity) columns.push({ table, column });
        if (variant === 'literal-too-small' && t.min >= 1) columns.push({ table, column });
        // "insert" and "delete" do not apply to scalars (that is a type mismatch, a syntax error).
        if (variant === 'mutate-too-big' && t.max !== Infinity && !scalar) columns.push({ table, column });
        if (variant === 'mutate-too-small' && t.min >= 1 && !scalar) columns.push({ table, column });
      }
    }
    if (columns.length === 0) return undefined;
    const { table, column } = this.rng.pick(columns);
    const t = column.type;
    if (variant === 'literal-too-big' || variant === 'literal-too-small') {
      const n = variant === 'literal-too-big' ? t.max + 1 : 0;
      const atoms = this.uniqueAtoms(Array.from({ length: n + 4 }, () => this.randomAtom(t.key))).slice(0, n);
      if (atoms.length !== n) return undefined;
      const target = this.pickRow({ untouched: true, filter: (r) => r.table === table.name });
      if (target !== undefined && this.rng.chance(0.5)) {
        this.ops.push({ op: 'update', table: table.name, where: [['_uuid', '==', uuidAtom(target.uuid)]], row: { [column.name]: ['set', atoms] } });
        this.touched.add(target.uuid);
      } else {
        if (!this.canInsert(table)) return undefined;
        this.insertRow(table, INSERT_DEPTH_MAX, { override: { [column.name]: ['set', atoms] } });
      }
      return this.fail('syntax error', `set-size:${variant}:${table.name}.${column.name}`);
    }
    const target = this.pickRow({ untouched: true, filter: (r) => r.table === table.name && !this.dirtyColumns.has(`${table.name}.${column.name}`) });
    if (target === undefined) return undefined;
    const current = setElements(target.row[column.name] ?? ['set', []]);
    let mutation: Json;
    if (variant === 'mutate-too-big') {
      const add = this.uniqueAtoms(Array.from({ length: t.max + 4 }, () => this.randomAtom(t.key))).filter(
        (a) => !current.some((c) => canonicalJson(c) === canonicalJson(a)),
      );
      // The argument of "insert" must itself fit in the column, so the set must be non-empty.
      const needed = t.max - current.length + 1;
      if (add.length < needed || needed > t.max) return undefined;
      mutation = [column.name, 'insert', ['set', add.slice(0, needed)]];
    } else {
      mutation = [column.name, 'delete', ['set', current]];
    }
    this.ops.push({ op: 'mutate', table: table.name, where: [['_uuid', '==', uuidAtom(target.uuid)]], mutations: [mutation] });
    this.touched.add(target.uuid);
    return this.fail('constraint violation', `set-size:${variant}:${table.name}.${column.name}`);
  }

  private faultImmutable(): string | undefined {
    const immutable: { table: TableLite; column: string }[] = [];
    for (const table of this.schema.tables.values()) {
      immutable.push({ table, column: '_uuid' }, { table, column: '_version' });
      for (const column of table.columns.values()) if (!column.mutable) immutable.push({ table, column: column.name });
    }
    const { table, column } = this.rng.pick(immutable);
    const how = this.rng.pick(['update', 'mutate'] as const);
    const where = this.randomWhere(table);
    if (column === '_uuid' || column === '_version') {
      const value = uuidAtom(this.gen.rng.uuid());
      if (how === 'update') this.ops.push({ op: 'update', table: table.name, where, row: { [column]: value } });
      else this.ops.push({ op: 'mutate', table: table.name, where, mutations: [[column, 'insert', value]] });
    } else {
      const c = this.column(table.name, column);
      const value = this.columnValue(table, c, INSERT_DEPTH_MAX, { noInserts: true });
      if (how === 'update') this.ops.push({ op: 'update', table: table.name, where, row: { [column]: value } });
      else return undefined;
    }
    return this.fail('constraint violation', `immutable:${how}:${column}`);
  }

  private faultUnknownTable(): string | undefined {
    const name = this.rng.pick(['No_Such_Table', 'logical_switch', '', 'Logical_Switch ']);
    const op = this.rng.pick([
      { op: 'insert', table: name, row: {} },
      { op: 'select', table: name, where: [] },
      { op: 'delete', table: name, where: [] },
      { op: 'update', table: name, where: [], row: {} },
      { op: 'mutate', table: name, where: [], mutations: [] },
      { op: 'wait', table: name, where: [], columns: [], until: '==', rows: [], timeout: 0 },
    ] as Json[]);
    this.ops.push(op);
    return this.fail('syntax error', `unknown-table:${(op as Record<string, Json>)['op'] as string}`);
  }

  private faultUnknownColumn(): string | undefined {
    const table = this.pickTable(() => true, true);
    if (table === undefined) return undefined;
    const bogus = this.rng.pick(['no_such_column', 'NAME', '_uuid2', '']);
    const variant = this.rng.pick(['insert', 'update', 'where', 'mutate', 'wait-rows', 'select-columns'] as const);
    switch (variant) {
      case 'insert':
        this.ops.push({ op: 'insert', table: table.name, row: { [bogus]: 1 } });
        break;
      case 'update':
        this.ops.push({ op: 'update', table: table.name, where: [], row: { [bogus]: 'x' } });
        break;
      case 'where':
        this.ops.push({ op: 'select', table: table.name, where: [[bogus, '==', 1]] });
        break;
      case 'mutate':
        this.ops.push({ op: 'mutate', table: table.name, where: [], mutations: [[bogus, '+=', 1]] });
        break;
      case 'wait-rows':
        this.ops.push({ op: 'wait', table: table.name, where: [], columns: [], until: '==', rows: [{ [bogus]: 1 }], timeout: 0 });
        break;
      case 'select-columns':
        this.ops.push({ op: 'select', table: table.name, where: [], columns: [bogus] });
        return this.fail('syntax error', 'unknown-column:select-columns');
    }
    return this.fail('unknown column', `unknown-column:${variant}`);
  }

  /** JSON of the wrong shape for the column type: always a parse-time "syntax error". */
  private faultTypeError(): string | undefined {
    const table = this.pickTable((t) => this.userColumns(t).some((c) => c.mutable), true);
    if (table === undefined) return undefined;
    const column = this.rng.pick(this.userColumns(table).filter((c) => c.mutable));
    const t = column.type;
    const wrongAtom = (base: BaseTypeLite): Json => {
      switch (base.type) {
        case 'integer':
          return this.rng.pick<Json>(['5', 5.5, true, ['set', 'x']]);
        case 'real':
          return this.rng.pick<Json>(['1.5', false]);
        case 'boolean':
          return this.rng.pick<Json>(['true', 1, null]);
        case 'string':
          return this.rng.pick<Json>([5, true, ['uuid', '00000000-0000-0000-0000-000000000000']]);
        case 'uuid':
          return this.rng.pick<Json>([['uuid', 'not-a-uuid'], 'b8f5b1d0-0000-0000-0000-000000000000', ['uuid'], ['named-uuid', 5]]);
      }
    };
    let bad: Json;
    if (isMapType(t)) bad = this.rng.pick<Json>([['set', []], ['map', [[this.randomAtom(t.key)]]], ['map', {}], ['map', [[wrongAtom(t.key), this.randomAtom(t.value as BaseTypeLite)]]]]);
    else if (t.max > 1) bad = this.rng.pick<Json>([['map', []], ['set', [wrongAtom(t.key)]], ['set', 'x'], ['set']]);
    else bad = wrongAtom(t.key);
    const how = this.rng.pick(['insert', 'update', 'where'] as const);
    if (how === 'insert') this.ops.push({ op: 'insert', table: table.name, row: { [column.name]: bad } });
    else if (how === 'update') this.ops.push({ op: 'update', table: table.name, where: [], row: { [column.name]: bad } });
    else this.ops.push({ op: 'select', table: table.name, where: [[column.name, '==', bad]] });
    return this.fail('syntax error', `type-error:${how}:${t.key.type}${isMapType(t) ? '-map' : t.max > 1 ? '-set' : ''}`);
  }

  /** A set literal with a repeated element, or a map literal with a repeated key. */
  private faultDuplicateInSet(): string | undefined {
    const table = this.pickTable((t) => this.userColumns(t).some((c) => c.mutable && c.type.max > 1 && !this.isRefColumn(c)), true);
    if (table === undefined) return undefined;
    const column = this.rng.pick(this.userColumns(table).filter((c) => c.mutable && c.type.max > 1 && !this.isRefColumn(c)));
    const t = column.type;
    const atom = this.randomAtom(t.key);
    const datum: Json = isMapType(t)
      ? ['map', [[atom, this.randomAtom(t.value as BaseTypeLite)], [atom, this.randomAtom(t.value as BaseTypeLite)]]]
      : ['set', [atom, atom]];
    const how = this.rng.pick(['insert', 'update', 'mutate'] as const);
    if (how === 'insert') this.ops.push({ op: 'insert', table: table.name, row: { [column.name]: datum } });
    else if (how === 'update') this.ops.push({ op: 'update', table: table.name, where: [], row: { [column.name]: datum } });
    else this.ops.push({ op: 'mutate', table: table.name, where: [], mutations: [[column.name, 'insert', datum]] });
    return this.fail('ovsdb error', `duplicate-in-set:${how}`);
  }

  private faultMaxRows(): string | undefined {
    const tables = [...this.schema.tables.values()].filter((t) => t.isRoot && t.maxRows !== Infinity && !this.volatileTables.has(t.name));
    if (tables.length === 0) return undefined;
    const table = this.rng.pick(tables);
    const live = this.liveCount(table);
    for (let i = live; i <= table.maxRows; i++) this.insertRow(table, INSERT_DEPTH_MAX, { ignoreMaxRows: true });
    return this.fail('constraint violation', `max-rows:${table.name}`);
  }

  /** An integer mutation whose result leaves the signed 64-bit range. */
  private faultRangeError(): string | undefined {
    const target = this.pickRow({
      untouched: true,
      filter: (r) =>
        this.userColumns(this.table(r.table)).some((c) => this.isUnboundedIntegerScalar(c) && setElements(r.row[c.name] ?? ['set', []]).length === 1),
    });
    if (target === undefined) return undefined;
    const table = this.table(target.table);
    const column = this.rng.pick(
      this.userColumns(table).filter((c) => this.isUnboundedIntegerScalar(c) && setElements(target.row[c.name] ?? ['set', []]).length === 1),
    );
    if (this.dirtyColumns.has(`${table.name}.${column.name}`)) return undefined;
    const value = BigInt(setElements(target.row[column.name] as Json)[0] as number);
    // Move the value far from zero, then multiply past 2^63.
    const delta = value >= 0n ? 1n << 40n : -(1n << 40n);
    // ovsdb-server 3.1 misses the overflow of a negative times a negative (its check compares
    // the wrong operand, and the product wraps), so the factor is positive for negative values.
    const factor = value >= 0n ? this.rng.pick([1 << 30, -(1 << 30)]) : 1 << 30;
    const shifted = applyIntegerMutator(value, '+=', delta);
    if (typeof shifted !== 'bigint' || applyIntegerMutator(shifted, '*=', BigInt(factor)) !== 'range error') return undefined;
    this.ops.push({
      op: 'mutate',
      table: table.name,
      where: [['_uuid', '==', uuidAtom(target.uuid)]],
      mutations: [
        [column.name, '+=', Number(delta)],
        [column.name, '*=', factor],
      ],
    });
    this.touched.add(target.uuid);
    return this.fail('range error', `range-error:${table.name}.${column.name}`);
  }

  private isUnboundedIntegerScalar(c: ColumnLite): boolean {
    return c.mutable && c.type.value === undefined && c.type.max === 1 && c.type.key.type === 'integer' && c.type.key.enum === undefined && c.type.key.minInteger === undefined && c.type.key.maxInteger === undefined;
  }

  /** Division or remainder by zero; with no matching row ovsdb-server reports nothing. */
  private faultDomainError(): string | undefined {
    const columns: { table: TableLite; column: ColumnLite }[] = [];
    for (const table of this.schema.tables.values()) {
      for (const column of table.columns.values()) {
        if (column.mutable && column.type.value === undefined && column.type.key.type === 'integer' && column.type.key.enum === undefined) columns.push({ table, column });
      }
    }
    if (columns.length === 0) return undefined;
    const { table, column } = this.rng.pick(columns);
    const mutator = this.rng.pick(['/=', '%='] as const);
    const target = this.pickRow({
      untouched: true,
      filter: (r) => r.table === table.name && setElements(r.row[column.name] ?? ['set', []]).length > 0,
    });
    if (target === undefined || this.dirtyColumns.has(`${table.name}.${column.name}`)) {
      this.ops.push({ op: 'mutate', table: table.name, where: [['_uuid', '==', uuidAtom(this.gen.rng.uuid())]], mutations: [[column.name, mutator, 0]] });
      this.expect = { kind: 'commit' };
      return `domain-error:no-rows:${mutator}`;
    }
    this.ops.push({ op: 'mutate', table: table.name, where: [['_uuid', '==', uuidAtom(target.uuid)]], mutations: [[column.name, mutator, 0]] });
    this.touched.add(target.uuid);
    return this.fail('domain error', `domain-error:${mutator}`);
  }

  /** A wait whose condition does not hold: with timeout 0 it fails, otherwise it blocks. */
  private faultWait(timeout: number): string | undefined {
    const target = this.pickRow({ untouched: true, filter: (r) => !this.volatileTables.has(r.table) });
    if (target === undefined) return undefined;
    const table = this.table(target.table);
    const columns = this.userColumns(table).filter((c) => !this.dirtyColumns.has(`${table.name}.${c.name}`) && target.row[c.name] !== undefined);
    if (columns.length === 0) return undefined;
    const column = this.rng.pick(columns);
    const until = this.rng.pick(['==', '!='] as const);
    let value = target.row[column.name] as Json;
    if (until === '==') {
      const other = this.columnValue(table, column, INSERT_DEPTH_MAX, { noInserts: true });
      if (datumKey(other) === datumKey(value)) return undefined;
      value = other;
    }
    this.ops.push({
      op: 'wait',
      table: table.name,
      where: [['_uuid', '==', uuidAtom(target.uuid)]],
      columns: [column.name],
      until,
      rows: [{ [column.name]: value }],
      timeout,
    });
    if (timeout > 0) {
      this.expect = { kind: 'any' };
      return `wait-blocked:${until}`;
    }
    return this.fail('timed out', `wait-fail:${until}`);
  }

  /** Malformed operations and conditions. */
  private faultSyntax(): string | undefined {
    const table = this.pickTable(() => true, true);
    if (table === undefined) return undefined;
    const stringColumn = this.userColumns(table).find((c) => c.type.key.type === 'string' && c.type.max === 1 && c.type.min === 1 && c.type.value === undefined);
    const variants: [string, Json, string][] = [
      ['unknown-op', { op: 'frobnicate', table: table.name }, 'syntax error'],
      ['missing-op', { table: table.name, where: [] }, 'syntax error'],
      ['missing-where', { op: 'select', table: table.name }, 'syntax error'],
      ['extra-member', { op: 'select', table: table.name, where: [], extra: 1 }, 'syntax error'],
      ['insert-row-not-object', { op: 'insert', table: table.name, row: [] }, 'syntax error'],
      ['condition-arity', { op: 'select', table: table.name, where: [['_uuid', '==']] }, 'syntax error'],
      ['condition-not-array', { op: 'select', table: table.name, where: [{ column: '_uuid' }] }, 'syntax error'],
      ['unknown-function', { op: 'select', table: table.name, where: [['_uuid', 'like', ['uuid', this.gen.rng.uuid()]]] }, 'unknown function'],
      ['uuid-ordering', { op: 'select', table: table.name, where: [['_uuid', '<', ['uuid', this.gen.rng.uuid()]]] }, 'syntax error'],
      ['wait-bad-until', { op: 'wait', table: table.name, where: [], columns: [], until: '<', rows: [], timeout: 0 }, 'syntax error'],
      ['select-duplicate-columns', { op: 'select', table: table.name, where: [], columns: ['_uuid', '_uuid'] }, 'syntax error'],
      ['comment-not-string', { op: 'comment', comment: 5 }, 'syntax error'],
      ['bad-uuid-member', { op: 'insert', table: table.name, row: {}, uuid: 'zz' }, 'syntax error'],
      ['bad-uuid-name', { op: 'insert', table: table.name, row: {}, 'uuid-name': 5 }, 'syntax error'],
      // The immutability of _uuid is checked before the mutator's name, so use a user column.
      ['unknown-mutator', { op: 'mutate', table: table.name, where: [], mutations: [[this.rng.pick(this.userColumns(table)).name, '^=', 1]] }, 'unknown mutator'],
      ['mutation-arity', { op: 'mutate', table: table.name, where: [], mutations: [['_uuid', 'insert']] }, 'syntax error'],
      ['op-not-object', 'select', 'syntax error'],
    ];
    if (stringColumn !== undefined) {
      variants.push(
        ['string-ordering', { op: 'select', table: table.name, where: [[stringColumn.name, '>', 'a']] }, 'syntax error'],
        ['string-arithmetic', { op: 'mutate', table: table.name, where: [], mutations: [[stringColumn.name, '+=', 'a']] }, 'syntax error'],
        ['scalar-empty-set', { op: 'select', table: table.name, where: [[stringColumn.name, '==', ['set', []]]] }, 'syntax error'],
      );
    }
    if (this.inserted.length > 0 || this.rng.chance(0.5)) {
      const name = `dup_${this.gen.freshToken().replace(/\W/g, '_')}`;
      if (table.isRoot && this.canInsert(table, 1)) {
        variants.push(['duplicate-uuid-name', [{ op: 'insert', table: table.name, row: {}, 'uuid-name': name }, { op: 'insert', table: table.name, row: {}, 'uuid-name': name }], 'duplicate uuid-name']);
      }
    }
    const [label, op, error] = this.rng.pick(variants);
    if (label === 'duplicate-uuid-name') {
      // The first insert needs its unique columns set; build it like any other row.
      const name = ((op as Json[])[0] as Record<string, Json>)['uuid-name'] as string;
      this.insertRow(table, INSERT_DEPTH_MAX, { uuidName: name, noExplicitUuid: true });
      this.ops.push({ op: 'insert', table: table.name, row: {}, 'uuid-name': name });
    } else {
      this.ops.push(op);
    }
    return this.fail(error, `syntax:${label}`);
  }

  /** A condition value that violates the column's constraints (ovsdb-server checks them). */
  private faultConditionConstraint(): string | undefined {
    const candidates: { table: TableLite; column: ColumnLite }[] = [];
    for (const table of this.schema.tables.values()) {
      for (const column of table.columns.values()) {
        const base = column.type.key;
        if (column.type.value !== undefined || column.type.max !== 1) continue;
        if (base.enum !== undefined && base.type === 'string') candidates.push({ table, column });
        if (base.type === 'integer' && base.enum === undefined && (base.minInteger !== undefined || base.maxInteger !== undefined)) candidates.push({ table, column });
      }
    }
    if (candidates.length === 0) return undefined;
    const { table, column } = this.rng.pick(candidates);
    const bad = this.badAtom(column.type.key, column.type.key.enum !== undefined ? 'enum' : 'range');
    const fn = this.rng.pick(COMPARISON_FUNCTIONS);
    this.ops.push({ op: 'select', table: table.name, where: [[column.name, fn, bad]] });
    return this.fail('constraint violation', `condition-constraint:${fn}`);
  }

  /**
   * A condition value with the wrong number of elements: "==" and "!=" need the column's full
   * size range, "includes" relaxes only the minimum, "excludes" relaxes both.
   */
  private faultConditionSize(): string | undefined {
    const candidates: { table: TableLite; column: ColumnLite; variant: 'empty' | 'includes-big' | 'excludes-big' }[] = [];
    for (const table of this.schema.tables.values()) {
      for (const column of table.columns.values()) {
        const t = column.type;
        if (isMapType(t) || this.isRefBase(t.key) || t.key.type === 'boolean' || t.key.enum !== undefined) continue;
        if (t.min >= 1) candidates.push({ table, column, variant: 'empty' });
        if (t.max !== Infinity && !(t.min === 1 && t.max === 1)) {
          candidates.push({ table, column, variant: 'includes-big' }, { table, column, variant: 'excludes-big' });
        }
      }
    }
    if (candidates.length === 0) return undefined;
    const { table, column, variant } = this.rng.pick(candidates);
    const t = column.type;
    if (variant === 'empty') {
      this.ops.push({ op: 'select', table: table.name, where: [[column.name, this.rng.pick(['==', '!=']), ['set', []]]], columns: ['_uuid'] });
      return this.fail('syntax error', `condition-size:empty:${table.name}.${column.name}`);
    }
    const atoms = this.uniqueAtoms(Array.from({ length: t.max + 4 }, () => this.randomAtom(t.key))).slice(0, t.max + 1);
    if (atoms.length !== t.max + 1) return undefined;
    const fn = variant === 'includes-big' ? 'includes' : 'excludes';
    this.ops.push({ op: 'select', table: table.name, where: [[column.name, fn, ['set', atoms]]], columns: ['_uuid'] });
    if (variant === 'excludes-big') {
      this.expect = { kind: 'commit' };
      return `condition-size:excludes-big:${table.name}.${column.name}`;
    }
    return this.fail('syntax error', `condition-size:includes-big:${table.name}.${column.name}`);
  }

  /** An insert whose explicit "uuid" is already taken by a row of the same table. */
  private faultDuplicateUuid(): string | undefined {
    const existing = this.pickRow({ untouched: true, filter: (r) => this.table(r.table).isRoot && this.canInsert(this.table(r.table)) });
    if (existing === undefined) return undefined;
    this.insertRow(this.table(existing.table), INSERT_DEPTH_MAX, { explicitUuid: existing.uuid });
    return this.fail('duplicate uuid', 'duplicate-uuid');
  }

  /**
   * A weak reference to a missing row: dropped silently, unless the column may not become
   * smaller than it is ("min" > 0), which is a constraint violation.
   */
  private faultWeakMissing(): string | undefined {
    const candidates: { table: TableLite; column: ColumnLite }[] = [];
    for (const table of this.schema.tables.values()) {
      for (const column of table.columns.values()) {
        if (column.mutable && column.type.key.refType === 'weak' && column.type.key.refTable !== undefined && !isMapType(column.type)) candidates.push({ table, column });
      }
    }
    if (candidates.length === 0) return undefined;
    const { table, column } = this.rng.pick(candidates);
    const missing = uuidAtom(this.gen.rng.uuid());
    const target = this.pickRow({ untouched: true, filter: (r) => r.table === table.name });
    if (target !== undefined && this.rng.chance(0.6)) {
      this.ops.push({ op: 'update', table: table.name, where: [['_uuid', '==', uuidAtom(target.uuid)]], row: { [column.name]: missing } });
      this.touched.add(target.uuid);
    } else {
      if (!this.canInsert(table) || !table.isRoot) return undefined;
      this.insertRow(table, INSERT_DEPTH_MAX, { override: { [column.name]: missing } });
    }
    if (column.type.min > 0) return this.fail('constraint violation', `weak-missing:min:${table.name}.${column.name}`);
    this.expect = { kind: 'commit' };
    return `weak-missing:dropped:${table.name}.${column.name}`;
  }

  /**
   * An insert that omits a column whose default (0, "", false, the all-zeros UUID) breaks the
   * column's constraints: ovsdb-server checks defaults too.
   */
  private faultDefaultViolates(): string | undefined {
    const candidates: { table: TableLite; column: ColumnLite }[] = [];
    for (const table of this.schema.tables.values()) {
      if (!table.isRoot || !this.canInsert(table)) continue;
      for (const column of table.columns.values()) {
        if (!isMapType(column.type) && !this.isIndexColumn(table, column.name) && this.mustSet(table, column)) candidates.push({ table, column });
      }
    }
    if (candidates.length === 0) return undefined;
    const { table, column } = this.rng.pick(candidates);
    this.insertRow(table, INSERT_DEPTH_MAX, { omit: column.name });
    const base = column.type.key;
    const error = base.refTable !== undefined && base.refType === 'strong' ? 'referential integrity violation' : 'constraint violation';
    return this.fail(error, `default-violates:${table.name}.${column.name}`);
  }

  // ---------------------------------------------------------------- rows and values

  private insertRow(
    table: TableLite,
    depth: number,
    options: {
      override?: Record<string, Json>;
      keepIndex?: boolean;
      ignoreMaxRows?: boolean;
      explicitUuid?: string;
      noExplicitUuid?: boolean;
      uuidName?: string;
      omit?: string;
    } = {},
  ): InsertedRow {
    const row: Record<string, Json> = {};
    for (const column of this.userColumns(table)) {
      if (options.override !== undefined && column.name in options.override) continue;
      if (column.name === options.omit) continue;
      const required = this.mustSet(table, column);
      if (!required && !this.rng.chance(0.55)) continue;
      row[column.name] = this.columnValue(table, column, depth + 1, { forInsert: true });
    }
    Object.assign(row, options.override ?? {});
    const name = options.uuidName ?? `row_${this.gen.freshToken().replace(/\W/g, '_')}`;
    const op: Record<string, Json> = { op: 'insert', table: table.name, row, 'uuid-name': name };
    let uuid: string | undefined;
    if (options.explicitUuid !== undefined) uuid = options.explicitUuid;
    else if (!options.noExplicitUuid && this.gen.useExplicitUuid()) uuid = this.gen.rng.uuid();
    if (uuid !== undefined) op['uuid'] = uuid;
    this.ops.push(op);
    const inserted: InsertedRow = { table: table.name, uuid, name, ref: namedUuidAtom(name) };
    this.inserted.push(inserted);
    this.touched.add(name);
    if (uuid !== undefined) this.touched.add(uuid);
    this.changedTables.add(table.name);
    return inserted;
  }

  /** True when the column must be given on insert for the row to be valid. */
  private mustSet(table: TableLite, column: ColumnLite): boolean {
    if (this.isIndexColumn(table, column.name)) return true;
    const t = column.type;
    if (t.min === 0) return false;
    // Defaults: 0, "", false, all-zeros UUID; they can violate enums, ranges and references.
    return (
      t.key.refTable !== undefined ||
      t.key.enum !== undefined ||
      (t.key.minInteger ?? 0) > 0 ||
      (t.key.maxInteger ?? 0) < 0 ||
      (t.key.minLength ?? 0) > 0 ||
      (t.value !== undefined && (t.value.refTable !== undefined || t.value.enum !== undefined))
    );
  }

  /** A valid new value for a column; index columns get values no other row has. */
  private columnValue(table: TableLite, column: ColumnLite, depth: number, opts: { forInsert?: boolean; noInserts?: boolean } = {}): Json {
    const t = column.type;
    if (this.isIndexColumn(table, column.name)) return this.freshValue(table, column);
    if (this.isRefColumn(column) && !isMapType(t)) {
      const max = Math.min(t.max, t.min + 2);
      const n = this.rng.int(t.min, max);
      const atoms = opts.noInserts
        ? this.refAtoms(table, column, t.key, n, INSERT_DEPTH_MAX + 1, true)
        : this.refAtoms(table, column, t.key, n, depth);
      if (atoms.length < t.min) return this.encodeSet(atoms, t);
      return this.encodeSet(atoms, t);
    }
    if (isMapType(t)) {
      if (this.isRefBase(t.key) || this.isRefBase(t.value as BaseTypeLite)) return ['map', []];
      const n = this.rng.int(t.min, Math.min(t.max, t.min + 3));
      return ['map', this.randomPairs(t, n)];
    }
    const n = this.rng.int(t.min, Math.min(t.max, t.min + 3));
    const atoms = this.uniqueAtoms(Array.from({ length: n }, () => this.randomAtom(t.key)));
    if (atoms.length < t.min) atoms.push(...this.exhaustiveAtoms(t.key).filter((a) => !atoms.some((x) => canonicalJson(x) === canonicalJson(a))).slice(0, t.min - atoms.length));
    void opts;
    return this.encodeSet(atoms.slice(0, t.max), t);
  }

  /** Encodes a set: a bare atom for exactly one element sometimes (always for scalars). */
  private encodeSet(atoms: Json[], type: ColumnTypeLite): Json {
    if (atoms.length === 1 && (type.max === 1 && type.min === 1 ? true : this.rng.chance(0.4))) return atoms[0] as Json;
    return ['set', atoms];
  }

  /**
   * Reference atoms for a column: new child rows (inserted now, before the referencing op),
   * existing rows, and for weak references sometimes a missing row. Strong targets are pinned.
   */
  private refAtoms(table: TableLite, column: ColumnLite, base: BaseTypeLite, n: number, depth: number, noInserts = false): Json[] {
    const refTable = this.table(base.refTable as string);
    const atoms: Json[] = [];
    const seen = new Set<string>();
    const add = (atom: Json, key: string): void => {
      if (seen.has(key)) return;
      seen.add(key);
      atoms.push(atom);
    };
    const strong = base.refType === 'strong';
    for (let i = 0; i < n * 3 && atoms.length < n; i++) {
      const existing = this.liveRows((r) => r.table === refTable.name && !(strong && this.volatileTables.has(r.table)));
      // Past the depth limit, a new child is made only when the column needs one ("min").
      const mayInsert = !noInserts && this.canInsert(refTable) && (depth <= INSERT_DEPTH_MAX || (atoms.length < column.type.min && existing.length === 0));
      const weights: [('new' | 'existing' | 'missing'), number][] = [
        ['new', mayInsert ? (refTable.isRoot ? 1 : 3) : 0],
        ['existing', existing.length > 0 ? 2 : 0],
        ['missing', !strong && column.type.min === 0 ? 0.5 : 0],
      ];
      if (weights.every(([, w]) => w === 0)) break;
      const choice = this.rng.weighted(weights);
      if (choice === 'existing') {
        const target = this.rng.pick(existing);
        if (strong) this.pinned.add(target.uuid);
        add(uuidAtom(target.uuid), target.uuid);
      } else if (choice === 'missing') {
        const u = this.gen.rng.uuid();
        add(uuidAtom(u), u);
      } else {
        const child = this.insertRow(refTable, Math.max(depth, 1));
        if (strong) this.pinned.add(child.name);
        if (strong && child.uuid !== undefined) this.pinned.add(child.uuid);
        add(child.ref, child.name);
      }
    }
    return atoms;
  }

  private randomPairs(type: ColumnTypeLite, n: number): [Json, Json][] {
    const pairs: [Json, Json][] = [];
    for (let i = 0; i < n * 3 && pairs.length < n; i++) {
      const key = this.randomAtom(type.key);
      if (pairs.some(([k]) => canonicalJson(k) === canonicalJson(key))) continue;
      pairs.push([key, this.randomAtom(type.value as BaseTypeLite)]);
    }
    return pairs;
  }

  private uniquePairs(pairs: [Json, Json][]): [Json, Json][] {
    const out: [Json, Json][] = [];
    for (const pair of pairs) if (!out.some(([k]) => canonicalJson(k) === canonicalJson(pair[0]))) out.push(pair);
    return out;
  }

  private uniqueAtoms(atoms: Json[]): Json[] {
    const out: Json[] = [];
    const seen = new Set<string>();
    for (const atom of atoms) {
      const key = canonicalJson(atom);
      if (seen.has(key)) continue;
      seen.add(key);
      out.push(atom);
    }
    return out;
  }

  private exhaustiveAtoms(base: BaseTypeLite): Json[] {
    if (base.enum !== undefined) return [...base.enum];
    if (base.type === 'boolean') return [false, true];
    return Array.from({ length: 8 }, () => this.randomAtom(base));
  }

  /** A random valid atom (never a reference: those come from refAtoms). */
  randomAtom(base: BaseTypeLite): Json {
    if (base.enum !== undefined) return this.rng.pick(base.enum);
    switch (base.type) {
      case 'integer': {
        const [lo, hi] = integerBounds(base);
        const r = this.rng.float();
        if (r < 0.15) return this.rng.pick([lo, hi]);
        if (r < 0.6) return Math.min(hi, Math.max(lo, this.rng.int(-5, 100)));
        return this.rng.int(Math.max(lo, -1_000_000_000), Math.min(hi, 1_000_000_000));
      }
      case 'real': {
        const lo = base.minReal ?? -1e12;
        const hi = base.maxReal ?? 1e12;
        const options = [0, 0.5, -2.25, 1e-3, 3.0e10, lo, hi].filter((x) => x >= lo && x <= hi);
        return this.rng.pick(options);
      }
      case 'boolean':
        return this.rng.chance(0.5);
      case 'string':
        return this.randomString(base.minLength ?? 0, Math.min(base.maxLength ?? 12, 12));
      case 'uuid':
        return uuidAtom(this.gen.rng.uuid());
    }
  }

  randomString(minLength: number, maxLength: number): string {
    const length = this.rng.int(minLength, Math.max(minLength, maxLength));
    let s = '';
    for (let i = 0; i < length; i++) s += this.rng.chance(0.6) ? this.rng.pick(['a', 'b', 'c', 'x', '1']) : this.rng.pick(STRING_CHUNKS);
    return s;
  }

  /** A value for an index column that no row has had (so inserts and updates stay unique). */
  private freshValue(table: TableLite, column: ColumnLite): Json {
    const base = column.type.key;
    const token = this.gen.freshToken();
    let atom: Json;
    if (base.enum !== undefined) atom = this.rng.pick(base.enum);
    else if (base.type === 'string') {
      const decorated = this.rng.chance(0.3) ? `${this.rng.pick(['é', '😀', '"', '\\', '{'])}${table.name.slice(0, 3)}-${token}` : `${table.name.slice(0, 3).toLowerCase()}-${token}`;
      const maxLength = base.maxLength ?? Infinity;
      atom = codePoints(decorated) <= maxLength ? decorated : [...token].slice(-maxLength).join('');
    } else if (base.type === 'integer') {
      const [lo, hi] = integerBounds(base);
      atom = Math.min(hi, Math.max(lo, Number.parseInt(token.replace(/\D/g, '').slice(0, 12) || '0', 10)));
    } else atom = this.randomAtom(base);
    return column.type.max === 1 && column.type.min === 1 ? atom : ['set', [atom]];
  }

  // ---------------------------------------------------------------- conditions

  private randomWhere(table: TableLite): Json[] {
    const n = this.rng.weighted([
      [0, 1],
      [1, 3],
      [2, 1.5],
      [3, 0.5],
    ] as const);
    return Array.from({ length: n }, () => this.randomCondition(table));
  }

  /** A valid condition on a column of the table, often built from a value some row has. */
  private randomCondition(table: TableLite): Json {
    // Rows in UUID order, never in the order the server listed them (it may differ run to run).
    const rows = this.tableRows(table.name).map((r) => r.row);
    const useUuid = this.rng.chance(0.2);
    if (useUuid) {
      const uuids = this.tableRows(table.name).map((r) => r.uuid);
      const fn = this.rng.pick(COMPARISON_FUNCTIONS);
      const atom = uuids.length > 0 && this.rng.chance(0.8) ? uuidAtom(this.rng.pick(uuids)) : uuidAtom(this.gen.rng.uuid());
      if (fn === '==' || fn === '!=') return ['_uuid', fn, atom];
      return ['_uuid', fn, this.rng.chance(0.5) ? atom : ['set', [atom]]];
    }
    const columns = this.userColumns(table);
    const isOrderable = (c: ColumnLite): boolean => c.type.value === undefined && c.type.max === 1 && isNumeric(c.type.key) && c.type.key.enum === undefined;
    // Ordering functions apply to numeric columns only, which are rare: favour them.
    const numeric = columns.filter(isOrderable);
    const column = numeric.length > 0 && this.rng.chance(0.35) ? this.rng.pick(numeric) : this.rng.pick(columns);
    const t = column.type;
    const sample = rows.length > 0 && this.rng.chance(0.7) ? (this.rng.pick(rows)[column.name] ?? null) : null;
    const orderable = isOrderable(column);
    const fns: string[] = orderable && this.rng.chance(0.6) ? [...ORDERING_FUNCTIONS] : [...COMPARISON_FUNCTIONS];
    const fn = this.rng.pick(fns);
    if (ORDERING_FUNCTIONS.includes(fn as (typeof ORDERING_FUNCTIONS)[number])) {
      const atoms = sample === null ? [] : setElements(sample);
      const atom = atoms.length > 0 && this.rng.chance(0.7) ? (atoms[0] as Json) : this.randomAtom(t.key);
      return [column.name, fn, atom];
    }
    // ==/!= take a whole datum; includes/excludes take any subset (size limits still apply).
    if (fn === '==' || fn === '!=') {
      const value = sample !== null ? sample : this.columnValue(table, column, INSERT_DEPTH_MAX + 1, { noInserts: true });
      return [column.name, fn, value];
    }
    let value: Json;
    if (sample !== null && this.rng.chance(0.7)) {
      if (isMapType(t)) value = ['map', this.rng.subset(mapPairs(sample), 2)];
      else value = this.encodeSet(this.rng.subset(setElements(sample), 2), { ...t, min: 0 });
    } else {
      value = this.columnValue(table, column, INSERT_DEPTH_MAX + 1, { noInserts: true });
    }
    if (t.min === 1 && t.max === 1 && Array.isArray(value) && value[0] === 'set' && (value[1] as Json[]).length !== 1) {
      value = this.columnValue(table, column, INSERT_DEPTH_MAX + 1, { noInserts: true });
    }
    return [column.name, fn, value];
  }

  // ---------------------------------------------------------------- bookkeeping

  private table(name: string): TableLite {
    const table = this.schema.tables.get(name);
    if (table === undefined) throw new Error(`no table ${name}`);
    return table;
  }

  private column(table: string, name: string): ColumnLite {
    const column = this.table(table).columns.get(name);
    if (column === undefined) throw new Error(`no column ${table}.${name}`);
    return column;
  }

  private userColumns(table: TableLite): ColumnLite[] {
    return [...table.columns.values()];
  }

  /** Columns any value can be written to on many rows at once without breaking a constraint. */
  private freeColumns(table: TableLite): ColumnLite[] {
    return this.userColumns(table).filter((c) => c.mutable && !this.isIndexColumn(table, c.name) && !this.isRefColumn(c));
  }

  private isIndexColumn(table: TableLite, column: string): boolean {
    return table.indexes.some((index) => index.includes(column));
  }

  private isRefBase(base: BaseTypeLite): boolean {
    return base.type === 'uuid' && base.refTable !== undefined;
  }

  private isRefColumn(column: ColumnLite): boolean {
    return this.isRefBase(column.type.key) || (column.type.value !== undefined && this.isRefBase(column.type.value));
  }

  /** A condition matching exactly this row: its _uuid, or the values of one of its indexes. */
  private whereIdentifying(target: LiveRow): Json[] {
    const table = this.table(target.table);
    const usable = this.touched.has(target.uuid)
      ? []
      : table.indexes.filter((index) => index.every((c) => !this.dirtyColumns.has(`${table.name}.${c}`) && target.row[c] !== undefined));
    if (usable.length > 0 && this.rng.chance(0.4)) {
      return this.rng.pick(usable).map((c) => [c, '==', target.row[c] as Json]);
    }
    return [['_uuid', '==', uuidAtom(target.uuid)]];
  }

  private markDeleted(uuid: string, table: string): void {
    this.deleted.add(uuid);
    this.touched.add(uuid);
    this.changedTables.add(table);
  }

  /** Every row the table had when the transaction started, in UUID order. */
  private tableRows(table: string): LiveRow[] {
    return this.allRows.filter((r) => r.table === table);
  }

  /** Rows of the dump not deleted by this transaction, in (table, UUID) order (deterministic). */
  private liveRows(filter: (row: LiveRow) => boolean = () => true): LiveRow[] {
    return this.allRows.filter((r) => !this.deleted.has(r.uuid) && filter(r));
  }

  private pickRow(options: { untouched: boolean; filter?: (row: LiveRow) => boolean }): LiveRow | undefined {
    const rows = this.liveRows(
      (r) => (!options.untouched || !this.touched.has(r.uuid)) && !this.volatileTables.has(r.table) && (options.filter?.(r) ?? true),
    );
    return rows.length === 0 ? undefined : this.rng.pick(rows);
  }

  /** A table, preferring ones with rows; `anyTable` allows empty tables too. */
  private pickTable(filter: (table: TableLite) => boolean, anyTable = false): TableLite | undefined {
    const tables = [...this.schema.tables.values()].filter(filter);
    if (tables.length === 0) return undefined;
    const withRows = tables.filter((t) => Object.keys(this.dump[t.name] ?? {}).length > 0);
    if (!anyTable && withRows.length > 0 && this.rng.chance(0.85)) return this.rng.pick(withRows);
    return this.rng.pick(tables);
  }

  /**
   * True when a non-root row might be garbage-collected by this transaction: one of the rows
   * that reference it was deleted, changed, or may itself be collected.
   */
  private mayBeCollected(uuid: string, table: string, depth = 0): boolean {
    if (this.table(table).isRoot) return false;
    if (depth > 8) return true;
    return (this.strongReferrers.get(uuid) ?? []).some(
      (ref) => this.deleted.has(ref.uuid) || this.touched.has(ref.uuid) || this.volatileTables.has(ref.table) || this.mayBeCollected(ref.uuid, ref.table, depth + 1),
    );
  }

  /** Strong referrers of a dump row that are still live in this transaction. */
  private liveStrongReferrers(uuid: string): { table: string; uuid: string; column: string }[] {
    return (this.strongReferrers.get(uuid) ?? []).filter((ref) => !this.deleted.has(ref.uuid) && ref.uuid !== uuid);
  }

  private liveCount(table: TableLite): number {
    const existing = Object.keys(this.dump[table.name] ?? {}).filter((u) => !this.deleted.has(u)).length;
    const added = this.inserted.filter((r) => r.table === table.name && !this.deleted.has(r.name)).length;
    return existing + added;
  }

  /** True when n more rows fit under the table's maxRows (counting this transaction's changes). */
  private canInsert(table: TableLite, n = 1): boolean {
    if (table.maxRows === Infinity) return true;
    if (this.volatileTables.has(table.name)) return false;
    if (!table.isRoot) {
      // A non-root table's count also depends on garbage collection; only insert into an empty one.
      return this.liveCount(table) + n <= table.maxRows && Object.keys(this.dump[table.name] ?? {}).length === 0;
    }
    return this.liveCount(table) + n <= table.maxRows;
  }
}
