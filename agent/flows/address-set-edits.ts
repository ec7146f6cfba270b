// Address set changes applied to logical flows by their difference (ovn-controller has the same
// idea for an address set's added and deleted addresses): a flow matching `ip4.src == $as` over
// a set of 10,000 addresses is 10,000 OpenFlow flows (times the rest of its match), and compiling
// it again for one address more took this agent hundreds of milliseconds.
//
// When the set is compared once with `==` to a field nothing else in the match reads, every
// member is an alternative of its own in the match's normal form, and the flows of any set of
// two members or more are a frame (the match's other clauses, a conjunction's conj_id flow)
// plus each member's own flows. The frame is what the match makes of two stand-in addresses;
// an added address's flows are what the match makes of it and one stand-in beyond the frame, and
// likewise for a removed one (desired.ts, editLflowAddresses). The flows of distinct members are
// distinct when each member is a plain address in the one spelling the agent prints it in (no
// mask, no other spelling of the same value): every flow of a member then matches that member
// exactly. So a removal is applied by difference only when every address left in the set, and
// every one removed, is such an address; an addition whose flows collide with flows kept
// (another spelling, or a prefix covering it) is caught by the flow table
// (FlowTable.editSource), and everything else compiles the flow whole, as before.
import type { Atom } from '../../ovsdb/atom.js';
import { lowerBound } from '../../ovsdb/atom.js';
import { sortedDifference } from '../../ovsdb/datum.js';
import { formatIntPart, lex } from '../expr/lexer.js';
import type { Symtab } from '../expr/symbols.js';
import type { FlowSpec } from '../openflow/types.js';

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

/** `text` as one address constant (IPv4, IPv6 or Ethernet, with or without a mask), or undefined. */
function addressToken(text: string): { readonly format: string; readonly value: bigint; readonly mask: bigint | null } | undefined {
  const r = lex(text);
  if (!('tokens' in r) || r.tokens.length !== 2) return undefined;
  const t = r.tokens[0];
  if (t === undefined || t.kind !== 'integer' || (t.format !== 'ipv4' && t.format !== 'ipv6' && t.format !== 'ethernet')) return undefined;
  return { format: t.format, value: t.value, mask: t.mask };
}

/** Whether `text` is an IPv4, IPv6 or Ethernet address without a mask, spelled as the agent prints it. */
export function isPlainAddress(text: string): boolean {
  const t = addressToken(text);
  return t !== undefined && t.mask === null && formatIntPart(t.value, t.format as 'ipv4' | 'ipv6' | 'ethernet') === text;
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

/** OpenFlow fields an address of each format is matched in (agent/expr/to-matches.ts names). */
const addressFields: Readonly<Record<string, ReadonlySet<string>>> = {
  ipv4: new Set(['ipv4_src', 'ipv4_dst', 'arp_spa', 'arp_tpa']),
  ipv6: new Set(['ipv6_src', 'ipv6_dst', 'nd_target']),
  ethernet: new Set(['eth_src', 'eth_dst', 'arp_sha', 'arp_tha', 'nd_sll', 'nd_tll']),
};
const formatBits: Readonly<Record<string, bigint>> = { ipv4: 32n, ipv6: 128n, ethernet: 48n };
const standIns: Readonly<Record<string, readonly string[]>> = {
  ipv4: ['255.255.255.254', '255.255.255.253', '255.255.255.252', '255.255.255.251'],
  ipv6: ['ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe', 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffd', 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffc', 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffb'],
  ethernet: ['fe:ff:ff:ff:ff:fe', 'fe:ff:ff:ff:ff:fd', 'fe:ff:ff:ff:ff:fc', 'fe:ff:ff:ff:ff:fb'],
};

function sortedHas(list: readonly string[], x: string): boolean {
  const i = lowerBound(list, x);
  return i < list.length && list[i] === x;
}

/**
 * Two addresses of the kind `sample` is that neither set holds: compiled as a set of two, they
 * give the flows the match makes of any set of two or more besides its members' own.
 */
export function sentinels(sample: string, before: readonly string[], after: readonly string[]): [string, string] | undefined {
  const format = addressToken(sample)?.format;
  if (format === undefined) return undefined;
  const free = (standIns[format] as readonly string[]).filter((a) => !sortedHas(before, a) && !sortedHas(after, a));
  return free.length >= 2 ? [free[0] as string, free[1] as string] : undefined;
}

/**
 * A test of whether a flow matches one of `addresses` (plain addresses) exactly, in a field of
 * its kind. The addresses are read once, not once per flow.
 */
export function matchesOneOf(addresses: readonly string[]): (flow: FlowSpec) => boolean {
  const values = new Map<string, Set<bigint>>();
  for (const a of addresses) {
    const t = addressToken(a);
    if (t === undefined) continue;
    let v = values.get(t.format);
    if (v === undefined) values.set(t.format, (v = new Set()));
    v.add(t.value);
  }
  return (flow) => {
    for (const [format, vs] of values) {
      const fields = addressFields[format] as ReadonlySet<string>;
      const full = (1n << (formatBits[format] as bigint)) - 1n;
      for (const [name, v] of flow.match) if (fields.has(name) && vs.has(v.value) && (v.mask & full) === full) return true;
    }
    return false;
  };
}

const identifier = /[A-Za-z_][A-Za-z0-9_.]*/g;

/** The OpenFlow fields a symbol reads, through subfields, predicates and prerequisites. */
function fieldsOf(symtab: Symtab, name: string, seen = new Set<string>()): Set<string> {
  const out = new Set<string>();
  if (seen.has(name)) return out;
  seen.add(name);
  const sym = symtab.get(name);
  if (sym === undefined) return out;
  const texts: string[] = [];
  if (sym.kind === 'field' || sym.kind === 'string') out.add(sym.of);
  else if (sym.kind === 'subfield') texts.push(sym.parent);
  else texts.push(sym.expansion);
  if (sym.prereqs !== null) texts.push(sym.prereqs);
  for (const text of texts) for (const m of text.matchAll(identifier)) for (const f of fieldsOf(symtab, m[0], seen)) out.add(f);
  return out;
}

/**
 * Whether the match compares one field with `$set` (`field == $set`) and nothing else in it
 * reads that field (another comparison, a subfield, a predicate such as ip4.mcast): then every
 * member of the set is an alternative of its own, none dropped or merged by the rest of the
 * match, and the match's terms have the same shape for any two members or more.
 */
export function setFieldIsolated(match: string, set: string, symtab: Symtab): boolean {
  // Quoted port names, $sets and @groups are not symbols.
  const text = match.replace(/"(?:[^"\\]|\\.)*"/g, '""').replace(/[$@][A-Za-z_][A-Za-z0-9_.:]*/g, (m) => (m === `$${set}` ? '$SET' : '_'));
  const cmp = [...text.matchAll(/([A-Za-z_][A-Za-z0-9_.]*)\s*==\s*\$SET/g)];
  const c = cmp[0];
  if (cmp.length !== 1 || c === undefined || (text.match(/\$SET/g) ?? []).length !== 1) return false;
  const sym = symtab.get(c[1] as string);
  if (sym === undefined || sym.kind !== 'field') return false;
  for (const m of text.matchAll(identifier)) {
    if (m.index !== c.index && fieldsOf(symtab, m[0]).has(sym.of)) return false;
  }
  return true;
}
