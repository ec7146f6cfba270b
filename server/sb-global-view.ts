// SB_Global as the SB view shows it: northd's row (nb_cfg, options, ipsec) joined with the
// columns an operator writes (connections, ssl, external_ids: ovn-sbctl set-connection, set-ssl),
// which live in the chassis database in a row of their own with the same UUID
// (server/chassis-store.ts). Every reader of the SB view (the OVSDB door's monitors, agents'
// streams, List) sees the joined row, and every revision's change of either half as one change
// of it. Pure.
import { hashUuid } from '../northd/hash.js';
import { sameData } from '../northd/same-data.js';
import type { DbDelta, Row, RowChange } from '../ovsdb/index.js';
import { sbGlobalOperatorColumns } from './chassis-store.js';
import { mergeDeltas } from './nb-state-machine.js';

const TABLE = 'SB_Global';

/** northd's row with the operator's columns; its _version follows both halves'. */
export function joinSbGlobal(northd: Row, operator: Row | undefined): Row {
  if (operator === undefined) return northd;
  const out: Record<string, unknown> = { ...northd, _version: hashUuid([TABLE, northd._version, operator._version]) };
  for (const c of sbGlobalOperatorColumns) out[c] = (operator as unknown as Record<string, unknown>)[c];
  return out as unknown as Row;
}

const before = (c: RowChange | undefined, now: Row | undefined): Row | undefined => (c === undefined ? now : c.kind === 'insert' ? undefined : c.old);
const after = (c: RowChange | undefined, now: Row | undefined): Row | undefined => (c === undefined ? now : c.kind === 'delete' ? undefined : c.new);

/**
 * The joined row's change in one revision, from northd's change of its half and the operator
 * half's (either may be absent) and both halves as they are now. Undefined when the joined row
 * did not change: an operator half with no northd row to join is not shown.
 */
export function joinedSbGlobalChange(northd: RowChange | undefined, operator: RowChange | undefined, northdNow: Row | undefined, operatorNow: Row | undefined): RowChange | undefined {
  const northdOld = before(northd, northdNow);
  const northdNew = after(northd, northdNow);
  const old = northdOld === undefined ? undefined : joinSbGlobal(northdOld, before(operator, operatorNow));
  const now = northdNew === undefined ? undefined : joinSbGlobal(northdNew, after(operator, operatorNow));
  if (now === undefined) return old === undefined ? undefined : { kind: 'delete', table: TABLE, uuid: old._uuid, old };
  if (old === undefined) return { kind: 'insert', table: TABLE, uuid: now._uuid, new: now };
  const o = old as unknown as Record<string, unknown>;
  const n = now as unknown as Record<string, unknown>;
  const columns = Object.keys(n).filter((k) => k !== '_uuid' && k !== '_version' && !sameData(o[k], n[k])).sort();
  return columns.length === 0 ? undefined : { kind: 'modify', table: TABLE, uuid: now._uuid, old, new: now, columns };
}

/**
 * One revision's change of the SB view: northd's and the chassis database's, with SB_Global's
 * two halves (one from each, under the same UUID) given as one change of the joined row.
 */
export function sbViewDelta(northd: DbDelta, chassis: DbDelta | undefined, northdNow: Row | undefined, operatorNow: Row | undefined): DbDelta {
  const ofGlobal = (d: DbDelta | undefined): RowChange | undefined => d?.changes.find((c) => c.table === TABLE);
  const northdGlobal = ofGlobal(northd);
  const operatorGlobal = ofGlobal(chassis);
  const rest = (d: DbDelta): DbDelta => ({ changes: d.changes.filter((c) => c.table !== TABLE) });
  let delta = mergeDeltas(northdGlobal === undefined ? northd : rest(northd), chassis === undefined ? { changes: [] } : operatorGlobal === undefined ? chassis : rest(chassis));
  if (northdGlobal === undefined && operatorGlobal === undefined) return delta;
  const joined = joinedSbGlobalChange(northdGlobal, operatorGlobal, northdNow, operatorNow);
  if (joined !== undefined) delta = mergeDeltas(delta, { changes: [joined] });
  return delta;
}
