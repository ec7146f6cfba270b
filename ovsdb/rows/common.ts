// What every row of every table has, as the engine holds rows in memory.

/** A UUID in lowercase canonical form: 36 characters, 8-4-4-4-12 hex digits. */
export type Uuid = string;

/**
 * The columns the server adds to every table. `_version` changes on every modification of
 * the row, so comparing it is enough to know whether a row changed.
 */
export interface Row {
  readonly _uuid: Uuid;
  readonly _version: Uuid;
}
