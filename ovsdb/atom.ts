// Atoms: the scalar values of OVSDB (RFC 7047 <atom>). In memory an integer or real is a JS
// number, a boolean a boolean, and a string or uuid a JS string; the column's type says which.
// Integers are exact up to 2^53; a larger integer is refused at the door as out of range.

export type Atom = number | boolean | string;

/** A canonical lowercase UUID string, 8-4-4-4-12 hex digits. */
export type Uuid = string;

export const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export const zeroUuid: Uuid = '00000000-0000-0000-0000-000000000000';

/**
 * Total order on atoms of one type, the order ovsdb-server sorts sets and maps in: numbers
 * numerically, false < true, strings and uuids by code unit (uuids are lowercase hex, so this
 * equals ovsdb-server's comparison of their 32-bit parts).
 */
export function compareAtoms(a: Atom, b: Atom): number {
  if (typeof a === 'number' && typeof b === 'number') return a < b ? -1 : a > b ? 1 : 0;
  if (typeof a === 'boolean' && typeof b === 'boolean') return a === b ? 0 : a ? 1 : -1;
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The first index of the sorted `list` whose atom is not below `x`: where `x` is, or would go. */
export function lowerBound(list: readonly Atom[], x: Atom): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareAtoms(list[mid] as Atom, x) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * Whether `s` is a canonical UUID. Spelled out by character code rather than with
 * uuidPattern: a set of thousands of UUIDs is checked on every member for every write that
 * carries it, and the loop took half the pattern's time.
 */
export function isUuid(s: unknown): s is Uuid {
  return typeof s === 'string' && spellsUuid(s);
}

/** 1 for the character codes of lowercase hex digits. */
const hexDigit = new Uint8Array(128);
for (const c of '0123456789abcdef') hexDigit[c.charCodeAt(0)] = 1;

/** Whether the string `s` spells a canonical UUID (isUuid without the type guard). */
export function spellsUuid(s: string): boolean {
  if (s.length !== 36 || s.charCodeAt(8) !== 45 || s.charCodeAt(13) !== 45 || s.charCodeAt(18) !== 45 || s.charCodeAt(23) !== 45) return false;
  for (let i = 0; i < 36; i++) {
    if (i === 8 || i === 13 || i === 18 || i === 23) continue;
    const c = s.charCodeAt(i);
    if (c >= 128 || hexDigit[c] !== 1) return false;
  }
  return true;
}
