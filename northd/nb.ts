// Reading the NB database the way the projections need it. Every function here is a pure read.
import { smapGetUint } from '../ovsdb/smap.js';
import type { Database, Uuid } from '../ovsdb/index.js';
import type * as nb from '../ovsdb/rows/nb.js';

export function nbRows<T>(db: Database, table: string): ReadonlyMap<Uuid, T> {
  return db.rows(table) as unknown as ReadonlyMap<Uuid, T>;
}

export function nbGet<T>(db: Database, table: string, uuid: Uuid): T | undefined {
  return db.get(table, uuid) as unknown as T | undefined;
}

/**
 * The row of `ownerTable` that holds `uuid` strongly; when several do (the schema allows it,
 * OVN does not expect it), the lowest UUID, so the choice is deterministic.
 */
export function ownerOf(db: Database, ownerTable: string, uuid: Uuid): Uuid | undefined {
  let best: Uuid | undefined;
  // The index's list, not a map of it: a full run asks this of every port.
  const referrers = db.strongReferrerList(uuid);
  for (let i = 0; i < referrers.length; i++) {
    const referrer = referrers[i] as Uuid;
    if (db.get(ownerTable, referrer) === undefined) continue;
    if (best === undefined || referrer < best) best = referrer;
  }
  return best;
}

export function findLsp(db: Database, name: string): nb.Logical_Switch_Port | undefined {
  return db.findUnique('Logical_Switch_Port', ['name'], [name]) as unknown as nb.Logical_Switch_Port | undefined;
}

export function findLrp(db: Database, name: string): nb.Logical_Router_Port | undefined {
  return db.findUnique('Logical_Router_Port', ['name'], [name]) as unknown as nb.Logical_Router_Port | undefined;
}

export function lspIsEnabled(lsp: nb.Logical_Switch_Port): boolean {
  return lsp.enabled.length === 0 || lsp.enabled[0] === true;
}

/** Whether code is a lowercase hex digit. */
function isLowerHex(code: number): boolean {
  return (code >= 0x30 && code <= 0x39) || (code >= 0x61 && code <= 0x66);
}

/** `address` starts with a MAC already in OVN's form (xx:xx:xx:xx:xx:xx, lowercase), then ends or a space follows. */
function startsWithNormalMac(address: string): boolean {
  if (address.length < 17 || (address.length > 17 && address.charCodeAt(17) !== 0x20)) return false;
  for (let i = 0; i < 17; i++) {
    const code = address.charCodeAt(i);
    if (i % 3 === 2 ? code !== 0x3a : !isLowerHex(code)) return false;
  }
  return true;
}

/** `text` is exactly a MAC in OVN's form (xx:xx:xx:xx:xx:xx, lowercase). */
export function isNormalMac(text: string): boolean {
  return text.length === 17 && startsWithNormalMac(text);
}

/** An LSP address entry's leading Ethernet address, normalized as OVN prints it, if any. */
export function leadingMac(address: string): string | undefined {
  // The common spelling is already normal: no regular expression, no rebuilt string.
  if (startsWithNormalMac(address)) return address.length === 17 ? address : address.slice(0, 17);
  const m = /^\s*([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})(?![0-9a-fA-F:])/.exec(address);
  if (m === null) return undefined;
  return m.slice(1, 7).map((h) => h.toLowerCase().padStart(2, '0')).join(':');
}

/**
 * An integer option as ovn-northd reads one with smap_get_int (OVS's str_to_int, base 10):
 * optional leading white space and sign, then decimal digits to the end, within a C int;
 * anything else (unset, "1500 ", "0x10", too large) gives `def`.
 */
export function optionInt(options: ReadonlyMap<string, string>, key: string, def: number): number {
  const text = options.get(key);
  if (text === undefined) return def;
  const m = /^[ \t\n\v\f\r]*([+-]?[0-9]+)$/.exec(text);
  if (m === null) return def;
  const n = Number(m[1]);
  return n >= -0x80000000 && n <= 0x7fffffff ? n + 0 : def;
}

/** smap_get_uint (ovsdb/smap.ts). */
export const optionUint = smapGetUint;

/** smap_get_bool: case-insensitive "true" (or anything but "false" when the default is true). */
export function boolOption(options: ReadonlyMap<string, string>, key: string, def: boolean): boolean {
  const v = (options.get(key) ?? '').toLowerCase();
  return def ? v !== 'false' : v === 'true';
}
