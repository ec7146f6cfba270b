// Structural equality of the plain, immutable values the projections pass between nodes
// (numbers, strings, booleans, undefined, arrays, Maps, Sets and plain objects): a node compares
// what it derived before and after a change to report only real changes downstream.
import { isMapValue, sameEnds, setEditBetween } from '../ovsdb/datum.js';

export function sameData(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameData(a[i], b[i])) return false;
    return true;
  }
  if (isMapValue(a)) {
    if (!isMapValue(b) || a.size !== b.size) return false;
    for (const [k, v] of a) if (!b.has(k) || !sameData(v, b.get(k))) return false;
    return true;
  }
  if (a instanceof Set) {
    if (!(b instanceof Set) || a.size !== b.size) return false;
    for (const k of a) if (!b.has(k)) return false;
    return true;
  }
  if (Array.isArray(b) || isMapValue(b) || b instanceof Set) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  for (const k of ka) {
    if (!Object.prototype.hasOwnProperty.call(b, k)) return false;
    if (!sameData((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k])) return false;
  }
  return true;
}

/**
 * The elements only in `before` and only in `after`, two sorted, duplicate-free arrays (an
 * OVSDB set column's value): one merge walk, no hashing. The same array twice costs nothing.
 */
export function sortedDifference<T extends string>(before: readonly T[], after: readonly T[]): { readonly removed: T[]; readonly added: T[] } {
  const removed: T[] = [];
  const added: T[] = [];
  if (before === after) return { removed, added };
  // Made from `before` by a few small mutations: what they did, without a walk.
  const edit = setEditBetween(before, after);
  if (edit !== undefined) return { removed: [...edit.removed] as T[], added: [...edit.added] as T[] };
  // The elements both share at their start and end (one port added to a group of thousands)
  // are passed over, one equality check each, before the walk.
  const [start, beforeEnd, afterEnd] = sameEnds(before, after);
  let i = start;
  let j = start;
  while (i < beforeEnd || j < afterEnd) {
    const a = i < beforeEnd ? before[i] : undefined;
    const b = j < afterEnd ? after[j] : undefined;
    if (b === undefined || (a !== undefined && a < b)) {
      removed.push(a as T);
      i++;
    } else if (a === undefined || b < a) {
      added.push(b);
      j++;
    } else {
      i++;
      j++;
    }
  }
  return { removed, added };
}
