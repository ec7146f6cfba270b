// Helpers for northd tests: an NB database of our NB schema, transactions through ovsdb's
// `transact`, and a canonical text of an SB view for exact comparisons.
import { Database, parseDatabaseSchema, transact } from '../../ovsdb/index.js';
import type { DbDelta } from '../../ovsdb/index.js';
import { NB_SCHEMA_JSON } from '../../ovsdb/schemas/index.js';
import type { SbView } from '../../northd/index.js';
import { canonicalText, changedColumns } from '../../northd/sb-changes.js';

const NB_SCHEMA = parseDatabaseSchema(NB_SCHEMA_JSON);

export interface NbFixture {
  readonly db: Database;
  /** Runs one transaction; throws with the error when it does not commit. */
  run(ops: readonly unknown[]): DbDelta;
}

export function nbFixture(newUuid?: () => string): NbFixture {
  const db = new Database(NB_SCHEMA);
  let n = 0;
  const uuid = newUuid ?? ((): string => `00000000-0000-4000-8000-${(++n).toString(16).padStart(12, '0')}`);
  return {
    db,
    run(ops: readonly unknown[]): DbDelta {
      const out = transact(db, [...ops], { newUuid: uuid });
      if (out.kind !== 'committed') throw new Error(`transaction did not commit: ${JSON.stringify(out)}`);
      return out.delta;
    },
  };
}

export const set = (items: readonly unknown[]): unknown => ['set', items];
export const map = (pairs: Record<string, string>): unknown => ['map', Object.entries(pairs)];
export const named = (name: string): unknown => ['named-uuid', name];
export const uuidAtom = (u: string): unknown => ['uuid', u];
export const byUuid = (u: string): unknown[] => [['_uuid', '==', ['uuid', u]]];

/** Ops that add a switch port `name` (extra NB columns in `row`) to the switch `ls`. */
export function addLsp(ls: string, name: string, row: Record<string, unknown> = {}): unknown[] {
  const tag = `lsp_${name.replace(/[^a-zA-Z0-9_]/g, '_')}`;
  return [
    { op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': tag, row: { name, ...row } },
    { op: 'mutate', table: 'Logical_Switch', where: [['name', '==', ls]], mutations: [['ports', 'insert', set([named(tag)])]] },
  ];
}

export function addLrp(lr: string, name: string, mac: string, networks: readonly string[], row: Record<string, unknown> = {}): unknown[] {
  const tag = `lrp_${name.replace(/[^a-zA-Z0-9_]/g, '_')}`;
  return [
    { op: 'insert', table: 'Logical_Router_Port', 'uuid-name': tag, row: { name, mac, networks: set(networks), ...row } },
    { op: 'mutate', table: 'Logical_Router', where: [['name', '==', lr]], mutations: [['ports', 'insert', set([named(tag)])]] },
  ];
}

/** The SB view as one canonical text: tables and rows in order, maps sorted. */
export function viewText(view: SbView): string {
  return canonicalText(view);
}

/** How many columns a row has (_uuid and _version included). */
function columnCount(row: object): number {
  let n = 0;
  for (const _ in row) n++;
  return n;
}

/**
 * Compares two views exactly (tables, row UUIDs, every column including _version) without
 * serializing them; returns the first difference, or undefined when they are equal.
 */
export function viewDifference(a: SbView, b: SbView): string | undefined {
  const tables = new Set([...a.keys(), ...b.keys()]);
  for (const table of [...tables].sort()) {
    const ra = a.get(table) ?? new Map();
    const rb = b.get(table) ?? new Map();
    for (const [uuid, row] of ra) {
      const other = rb.get(uuid);
      if (other === undefined) return `${table} ${uuid} only in the first: ${canonicalText(row)}`;
      const cols = changedColumns(row, other);
      if (cols.length > 0 || row._version !== other._version || columnCount(row) !== columnCount(other)) {
        return `${table} ${uuid} differs in [${cols.join(', ')}]:\n  ${canonicalText(row)}\n  ${canonicalText(other)}`;
      }
    }
    for (const [uuid, row] of rb) if (!ra.has(uuid)) return `${table} ${uuid} only in the second: ${canonicalText(row)}`;
  }
  return undefined;
}
