// Structural equality of the plain, immutable values the projections pass between nodes
// (numbers, strings, booleans, undefined, arrays, Maps, Sets and plain objects): a node compares
// what it derived before and after a change to report only real changes downstream.
import { isMapValue } from '../ovsdb/datum.js';

export { sortedDifference } from '../ovsdb/datum.js';

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

