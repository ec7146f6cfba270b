// Conditions (RFC 7047 section 5.1, <condition>): [column, function, value] clauses, all of
// which must hold for a row to match. Parsing validates against the schema once; evaluation
// is a pure function of the row.
import type { Atom } from './atom.js';
import { compareAtoms } from './atom.js';
import type { Datum, NamedUuidResolver, Row } from './datum.js';
import { datumFromJson, datumsEqual, toDatum } from './datum.js';
import { OvsdbError, OvsdbErrorName, syntaxError, quote } from './errors.js';
import type { ColumnSchema, ColumnType, TableSchema } from './schema.js';
import { findColumn } from './schema.js';

export const conditionFunctions = ['<', '<=', '==', '!=', '>=', '>', 'includes', 'excludes'] as const;
export type ConditionFunction = (typeof conditionFunctions)[number];

export interface Clause {
  readonly column: ColumnSchema;
  readonly fn: ConditionFunction;
  readonly arg: Datum;
}

function isOrdered(type: ColumnType): boolean {
  const numeric = type.key.type === 'integer' || type.key.type === 'real';
  return numeric && type.value === undefined && type.max === 1;
}

/** Parses a `where` array. Throws OvsdbError with the RFC's names on bad input. */
export function parseConditions(table: TableSchema, json: unknown, resolve?: NamedUuidResolver): Clause[] {
  if (!Array.isArray(json)) throw syntaxError('"where" must be an array of conditions');
  return json.map((c: unknown) => parseClause(table, c, resolve));
}

function parseClause(table: TableSchema, json: unknown, resolve?: NamedUuidResolver): Clause {
  if (!Array.isArray(json) || json.length !== 3 || typeof json[0] !== 'string' || typeof json[1] !== 'string') {
    throw syntaxError(`condition must be [column, function, value], got ${quote(json)}`);
  }
  const [name, fnName, valueJson] = json as [string, string, unknown];
  const column = findColumn(table, name);
  if (column === undefined) throw new OvsdbError(OvsdbErrorName.unknownColumn, `No column ${name} in table ${table.name}.`);
  if (!(conditionFunctions as readonly string[]).includes(fnName)) throw new OvsdbError(OvsdbErrorName.unknownFunction, `No function named ${fnName}.`);
  const fn = fnName as ConditionFunction;
  let argType: ColumnType = column.type;
  if (fn === '<' || fn === '<=' || fn === '>' || fn === '>=') {
    if (!isOrdered(column.type)) {
      throw syntaxError(`Type mismatch: "${fn}" operator may not be applied to column ${name} of type ${column.type.key.type}`);
    }
    argType = { ...column.type, min: 1, max: 1, kind: 'scalar' };
  } else if (column.type.kind !== 'scalar' && fn === 'includes') {
    // For a set or map, what it must include may be fewer elements than the column's
    // minimum, but never more than it can hold; what it must exclude may be any number.
    // A scalar's argument is always exactly one atom.
    argType = { ...column.type, min: 0 };
  } else if (column.type.kind !== 'scalar' && fn === 'excludes') {
    argType = { ...column.type, min: 0, max: Infinity };
  }
  return { column, fn, arg: datumFromJson(argType, valueJson, resolve) };
}

function includes(col: Datum, arg: Datum): boolean {
  // Both are sorted by key: a merge walk.
  let i = 0;
  for (let j = 0; j < arg.keys.length; j++) {
    const k = arg.keys[j] as Atom;
    while (i < col.keys.length && compareAtoms(col.keys[i] as Atom, k) < 0) i++;
    if (i >= col.keys.length || compareAtoms(col.keys[i] as Atom, k) !== 0) return false;
    if (arg.values !== undefined && compareAtoms((col.values as readonly Atom[])[i] as Atom, arg.values[j] as Atom) !== 0) return false;
  }
  return true;
}

function excludes(col: Datum, arg: Datum): boolean {
  let i = 0;
  for (let j = 0; j < arg.keys.length; j++) {
    const k = arg.keys[j] as Atom;
    while (i < col.keys.length && compareAtoms(col.keys[i] as Atom, k) < 0) i++;
    if (i < col.keys.length && compareAtoms(col.keys[i] as Atom, k) === 0) {
      if (arg.values === undefined) return false;
      if (compareAtoms((col.values as readonly Atom[])[i] as Atom, arg.values[j] as Atom) === 0) return false;
    }
  }
  return true;
}

export function evaluateClause(clause: Clause, row: Row): boolean {
  const value = row[clause.column.name];
  if (value === undefined) return false;
  if (clause.column.type.kind === 'scalar') {
    // A scalar's value is its one atom, and the argument is exactly one atom: compared as it
    // is, with no datum made per row (a scan of a large table is mostly this).
    const arg = clause.arg.keys[0] as Atom;
    switch (clause.fn) {
      case '==':
      case 'includes':
        return value === arg;
      case '!=':
      case 'excludes':
        return value !== arg;
      default:
        break;
    }
  }
  const col = toDatum(clause.column.type, value);
  switch (clause.fn) {
    case '==':
      return datumsEqual(col, clause.arg);
    case '!=':
      return !datumsEqual(col, clause.arg);
    case 'includes':
      return includes(col, clause.arg);
    case 'excludes':
      return excludes(col, clause.arg);
    default: {
      // An optional numeric column with no value satisfies no ordering comparison.
      if (col.keys.length === 0) return false;
      const c = compareAtoms(col.keys[0] as Atom, clause.arg.keys[0] as Atom);
      switch (clause.fn) {
        case '<':
          return c < 0;
        case '<=':
          return c <= 0;
        case '>':
          return c > 0;
        case '>=':
          return c >= 0;
      }
    }
  }
}

export function evaluateConditions(clauses: readonly Clause[], row: Row): boolean {
  for (const c of clauses) if (!evaluateClause(c, row)) return false;
  return true;
}

/** If the clauses pin `_uuid == X`, returns X, so callers can look the row up directly. */
export function pinnedUuid(clauses: readonly Clause[]): string | undefined {
  for (const c of clauses) {
    if (c.column.name === '_uuid' && c.fn === '==' && c.arg.keys.length === 1) return c.arg.keys[0] as string;
  }
  return undefined;
}
