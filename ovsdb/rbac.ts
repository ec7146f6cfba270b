// Role-based access control of a session's writes, as ovsdb-server applies it (OVS 3.1
// ovsdb/rbac.c): a session whose remote has a role may insert, update, mutate and delete only
// what that role's permissions allow, row by row, judged against the client's identity (the
// common name of its SSL certificate). Reads are never restricted. The transaction engine asks
// the gate at the point ovsdb-server does (ovsdb/transaction.ts, TransactContext.rbac), so each
// operation sees the rows as the transaction's earlier operations left them.
//
// What a role may do comes from a lookup (role, table) → permission: in ovsdb-server the
// database's RBAC_Role and RBAC_Permission rows, in ovnts the permission set ovn-northd writes
// (northd/rbac.ts). Pure: the gate reads only the rows it is given.
import type { Row, Value } from './datum.js';
import type { ColumnSchema, TableSchema } from './schema.js';

/** One RBAC_Permission row: what a role may do to one table. */
export interface RbacPermission {
  readonly table: string;
  /**
   * Who may touch a row, any one sufficing: "" anyone; "col:key" a client whose id is the
   * row's string map column `col` at `key`; "col" a client whose id is the row's string column
   * `col`.
   */
  readonly authorization: readonly string[];
  /** Whether rows may be inserted and deleted (by an authorized client). */
  readonly insertDelete: boolean;
  /** The columns an update or mutate may name. */
  readonly update: readonly string[];
}

/** Who writes: the role of the remote the session came through, and the client's id, if it has one. */
export interface RbacSession {
  /** Non-empty: an empty role means no RBAC, and no session is made for it. */
  readonly role: string;
  /** The common name of the client's certificate; undefined for a client without one (tcp:, unix:). */
  readonly id?: string;
}

/** The permission `role` has on `table`, or undefined for none (the role or the permission missing). */
export type RbacPermissions = (role: string, table: string) => RbacPermission | undefined;

/**
 * What the transaction engine asks before each write. Each returns the details of the
 * "permission error" that refuses the operation, or undefined to let it run. The rows are those
 * the operation's "where" selects, as the transaction's earlier operations left them; an
 * insert's row has the column defaults filled in.
 */
export interface RbacGate {
  insert(table: TableSchema, row: Row): string | undefined;
  update(table: TableSchema, rows: readonly Row[], columns: readonly string[]): string | undefined;
  mutate(table: TableSchema, rows: readonly Row[], columns: readonly string[]): string | undefined;
  delete(table: TableSchema, rows: readonly Row[]): string | undefined;
}

/** The value of a column that holds one optional string (ovsdb-server's read_string_column), or undefined. */
function stringColumn(table: TableSchema, row: Row, name: string): string | undefined {
  const column = table.columns.get(name);
  if (column === undefined || !isString(column) || column.type.value !== undefined || column.type.max !== 1) return undefined;
  const v = row[name] as Value;
  if (typeof v === 'string') return v;
  return Array.isArray(v) && typeof v[0] === 'string' ? v[0] : undefined;
}

/** The value at `key` of a string-to-string map column (ovsdb-server's read_map_string_column), or undefined. */
function mapColumn(table: TableSchema, row: Row, name: string, key: string): string | undefined {
  const column = table.columns.get(name);
  if (column === undefined || column.type.kind !== 'map' || !isString(column) || column.type.value?.type !== 'string') return undefined;
  const v = (row[name] as ReadonlyMap<unknown, unknown>).get(key);
  return typeof v === 'string' ? v : undefined;
}

function isString(column: ColumnSchema): boolean {
  return column.type.key.type === 'string';
}

/** Whether `id` may touch `row` under `perm` (ovsdb-server's ovsdb_rbac_authorized). */
export function rbacAuthorized(perm: RbacPermission, id: string, table: TableSchema, row: Row): boolean {
  for (const name of perm.authorization) {
    if (name === '') return true;
    const colon = name.indexOf(':');
    const value = colon >= 0 ? mapColumn(table, row, name.slice(0, colon), name.slice(colon + 1)) : stringColumn(table, row, name);
    if (value === id) return true;
  }
  return false;
}

/**
 * The refusal texts, word for word ovsdb-server's (ovsdb/execution.c), which prints a missing
 * id as C's printf prints a null string.
 */
export const rbacRefusal = {
  insert: (s: RbacSession, table: string): string => `RBAC rules for client "${s.id ?? '(null)'}" role "${s.role}" prohibit row insertion into table "${table}".`,
  update: (s: RbacSession, table: string): string => `RBAC rules for client "${s.id ?? '(null)'}" role "${s.role}" prohibit modification of table "${table}".`,
  mutate: (s: RbacSession, table: string): string => `RBAC rules for client "${s.id ?? '(null)'}" role "${s.role}" prohibit mutate operation on table "${table}".`,
  delete: (s: RbacSession, table: string): string => `RBAC rules for client "${s.id ?? '(null)'}" role "${s.role}" prohibit row deletion from table "${table}".`,
} as const;

/**
 * The gate of one session. As in ovsdb-server: a client without an id, or a table the role has
 * no permission on, is refused every write (even one whose "where" selects no row); otherwise
 * an insert needs its new row authorized and insert_delete; an update or mutate needs every
 * selected row authorized and every column it names in `update`; a delete needs every selected
 * row authorized and insert_delete. The last three judge row by row, so one that selects no row
 * is allowed whatever it names.
 */
export function rbacGate(session: RbacSession, permissions: RbacPermissions): RbacGate {
  if (session.role === '') throw new Error('an RBAC session needs a role: an empty role means no RBAC');
  /** The session's permission on the table, or undefined when it may not write there at all. */
  const permission = (table: TableSchema): { perm: RbacPermission; id: string } | undefined => {
    if (session.id === undefined) return undefined;
    const perm = permissions(session.role, table.name);
    return perm === undefined ? undefined : { perm, id: session.id };
  };
  const columnsAllowed = (perm: RbacPermission, columns: readonly string[]): boolean => columns.every((c) => perm.update.includes(c));
  return {
    insert(table, row) {
      const p = permission(table);
      if (p !== undefined && p.perm.insertDelete && rbacAuthorized(p.perm, p.id, table, row)) return undefined;
      return rbacRefusal.insert(session, table.name);
    },
    update(table, rows, columns) {
      const p = permission(table);
      if (p !== undefined && (rows.length === 0 || (columnsAllowed(p.perm, columns) && rows.every((r) => rbacAuthorized(p.perm, p.id, table, r))))) return undefined;
      return rbacRefusal.update(session, table.name);
    },
    mutate(table, rows, columns) {
      const p = permission(table);
      if (p !== undefined && (rows.length === 0 || (columnsAllowed(p.perm, columns) && rows.every((r) => rbacAuthorized(p.perm, p.id, table, r))))) return undefined;
      return rbacRefusal.mutate(session, table.name);
    },
    delete(table, rows) {
      const p = permission(table);
      if (p !== undefined && (rows.length === 0 || (p.perm.insertDelete && rows.every((r) => rbacAuthorized(p.perm, p.id, table, r))))) return undefined;
      return rbacRefusal.delete(session, table.name);
    },
  };
}
