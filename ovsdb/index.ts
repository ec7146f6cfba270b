// The ovsdb module's public surface, each export chosen: the schema model, datums, the
// in-memory database and the transaction engine.
export type { Atom, Uuid } from './atom.js';
export { compareAtoms, isUuid, lowerBound, zeroUuid } from './atom.js';
export type { OvsdbErrorJson, OvsdbErrorNameValue } from './errors.js';
export { OvsdbError, OvsdbErrorName } from './errors.js';
export type { AtomicType, BaseType, ColumnKind, ColumnSchema, ColumnType, DatabaseSchema, RefType, TableSchema } from './schema.js';
export { findColumn, parseDatabaseSchema, schemaToJson } from './schema.js';
export type { Datum, Row, Value } from './datum.js';
export { SmallMap, datumFromJson, datumToJson, forEachRefChange, isMapValue, valueFromJson, valueToJson, valuesEqual } from './datum.js';
export type { DatabaseOptions, DbDelta, RowChange, SecondaryIndexSpec } from './database.js';
export { Database, dumpDatabaseJson, insertChange, rowToJson } from './database.js';
export type { TransactContext, TransactOutcome } from './transaction.js';
export { answerRefused, precheckTransaction, refusalIsStateFree, transact, tryTransaction } from './transaction.js';
export type { RbacGate, RbacPermission, RbacPermissions, RbacSession } from './rbac.js';
export { rbacAuthorized, rbacGate, rbacRefusal } from './rbac.js';
export { COMPACT_ELEMENTS_MIN, compactTransaction } from './compact.js';
export type { UuidSeed } from './uuid-source.js';
export { uuidFromCodes, uuidSource } from './uuid-source.js';
