// Address set changes applied to logical flows by their difference, as ovn-controller 23.03 does
// for an address set's added and deleted addresses: a flow matching `ip4.src == $as` over a set
// of 10,000 addresses is 10,000 OpenFlow flows (times the rest of its match), and compiling it
// again for one address more took this agent hundreds of milliseconds.
//
// When the set appears once in the match, positively, and the match with the set empty
// compiles to no flow, the match is (Shannon's expansion) the union over the set's members of
// the match with that member alone: the flows for an added address are those of the match
// compiled with that address as the whole set, and likewise for a removed one. The flows of
// distinct members are distinct when each member is a plain address in the one spelling the
// agent prints it in (no mask, no other spelling of the same value): every flow of a member then
// matches that member exactly. So a removal is applied by difference only when every address
// left in the set, and every one removed, is such an address; an addition whose flows collide
// with flows kept (another spelling, or a prefix covering it) is caught by the flow table
// (FlowTable.editSource), and everything else compiles the flow whole, as before.
import type { Atom } from '../../ovsdb/atom.js';
import { sortedDifference } from '../../ovsdb/datum.js';
import { formatIntPart, lex } from '../expr/lexer.js';

/** An Address_Set row's addresses before and after one update. */
export interface AddressSetChange {
  readonly before: readonly string[];
  readonly after: readonly string[];
  /** Computed once, on first use. */
  diff?: { readonly added: readonly string[]; readonly removed: readonly string[] };
}

/** The addresses only in `after` and only in `before` (rows keep a set's members sorted). */
export function addressSetDiff(c: AddressSetChange): { readonly added: readonly string[]; readonly removed: readonly string[] } {
  c.diff ??= sortedDifference(c.before, c.after);
  return c.diff;
}

/** Whether `text` is an IPv4, IPv6 or Ethernet address without a mask, spelled as the agent prints it. */
export function isPlainAddress(text: string): boolean {
  const r = lex(text);
  if (!('tokens' in r) || r.tokens.length !== 2) return false;
  const t = r.tokens[0];
  if (t === undefined || t.kind !== 'integer' || t.mask !== null) return false;
  if (t.format !== 'ipv4' && t.format !== 'ipv6' && t.format !== 'ethernet') return false;
  return formatIntPart(t.value, t.format) === text;
}

/**
 * Remembers, per address set, whether its addresses (by the array's identity: row values are
 * never changed in place) are all plain addresses; a set checked once is then carried through
 * its edits by their added addresses alone.
 */
export class PlainAddressSets {
  private readonly known = new Map<string, { readonly addresses: readonly Atom[]; readonly plain: boolean }>();

  /** Whether every address of `change.after` is plain. */
  plainAfter(name: string, change: AddressSetChange): boolean {
    const had = this.known.get(name);
    let plain: boolean;
    if (had !== undefined && had.addresses === change.after) return had.plain;
    if (had !== undefined && had.addresses === change.before && had.plain) plain = addressSetDiff(change).added.every(isPlainAddress);
    else plain = change.after.every(isPlainAddress);
    this.known.set(name, { addresses: change.after, plain });
    return plain;
  }

  /** Forgets a set (its row went away). */
  forget(name: string): void {
    this.known.delete(name);
  }
}

/** How many times the match names address set `name` (`$name` not followed by a name character). */
export function addressSetRefs(match: string, name: string): number {
  const needle = `$${name}`;
  let n = 0;
  for (let i = match.indexOf(needle); i >= 0; i = match.indexOf(needle, i + needle.length)) {
    const next = match.charCodeAt(i + needle.length);
    const nameChar = (next >= 0x30 && next <= 0x39) || (next >= 0x41 && next <= 0x5a) || (next >= 0x61 && next <= 0x7a) || next === 0x5f || next === 0x2e || next === 0x3a;
    if (!nameChar) n++;
  }
  return n;
}
