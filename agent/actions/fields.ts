// How a logical field named in an action becomes an OpenFlow (sub)field: the symbol's chain of
// parents is walked down to a real field, as OVN's expr_resolve_field does, so `reg0[1..3]` is
// xxreg0[97..99] and `inport` is reg14. Also which fields an action may write (OVN's rw scopes:
// ct_mark and ct_label only inside ct_commit { }). Pure data and functions.

import type { ExprSymbol, Symtab } from '../expr/symbols.js';
import type { FieldRef } from '../openflow/types.js';

/** A field as parsed in an action: the named symbol and the selected bits (nBits 0 = string). */
export interface ActionField {
  readonly symbol: ExprSymbol;
  readonly ofs: number;
  readonly nBits: number;
}

/** An OpenFlow field and its width in bits, for the fields the logical symbol table maps to. */
const ofWidths: Readonly<Record<string, number>> = {
  eth_src: 48, eth_dst: 48, eth_type: 16, vlan_tci: 16, ip_proto: 8, ip_dscp: 6, ip_ecn: 2, nw_ttl: 8,
  ipv4_src: 32, ipv4_dst: 32, ipv6_src: 128, ipv6_dst: 128, ipv6_label: 20, icmpv4_type: 8, icmpv4_code: 8,
  icmpv6_type: 8, icmpv6_code: 8, ip_frag: 8, arp_op: 16, arp_spa: 32, arp_tpa: 32, arp_sha: 48, arp_tha: 48,
  nd_target: 128, nd_sll: 48, nd_tll: 48, tcp_src: 16, tcp_dst: 16, tcp_flags: 16, udp_src: 16, udp_dst: 16,
  sctp_src: 16, sctp_dst: 16, pkt_mark: 32, ct_state: 32, ct_mark: 32, ct_label: 128, metadata: 64,
};

/** True if 'field' is 'prefix' followed by one or more decimal digits (/^prefix[0-9]+$/). */
function isNumbered(field: string, prefix: string): boolean {
  if (field.length <= prefix.length || !field.startsWith(prefix)) return false;
  for (let i = prefix.length; i < field.length; i++) {
    const c = field.charCodeAt(i);
    if (c < 0x30 || c > 0x39) return false;
  }
  return true;
}

/** The width of an OpenFlow field, or undefined for a name this compiler does not know. */
export function ofWidth(field: string): number | undefined {
  if (isNumbered(field, 'reg')) return 32;
  if (isNumbered(field, 'xreg')) return 64;
  if (isNumbered(field, 'xxreg')) return 128;
  return Object.prototype.hasOwnProperty.call(ofWidths, field) ? ofWidths[field] : undefined;
}

/** OpenFlow fields Open vSwitch lets actions write. eth_type, ip_proto, ip_frag, tcp_flags and
 *  ct_state are read-only; ct_mark and ct_label are writable only in ct_commit's scope. */
const readOnly = new Set(['eth_type', 'ip_proto', 'ip_frag', 'tcp_flags', 'ct_state']);
const ctCommitOnly = new Set(['ct_mark', 'ct_label']);

export type WriteScope = 'default' | 'ct_commit';

/** The base OpenFlow field of a symbol and the offset of the symbol's bit 0 in it. */
export function baseOf(symtab: Symtab, symbol: ExprSymbol): { field: string; ofs: number } | undefined {
  let s: ExprSymbol | undefined = symbol;
  let ofs = 0;
  for (let depth = 0; s !== undefined && depth < 8; depth++) {
    if (s.kind === 'field' || s.kind === 'string') return { field: s.of, ofs };
    if (s.kind !== 'subfield') return undefined;
    ofs += s.parentOfs;
    s = symtab.get(s.parent);
  }
  return undefined;
}

/** The OpenFlow bits an action field names; a string field is its whole 32-bit register. */
export function resolveField(symtab: Symtab, f: ActionField): FieldRef | undefined {
  const base = baseOf(symtab, f.symbol);
  if (base === undefined) return undefined;
  const width = ofWidth(base.field);
  if (width === undefined) return undefined;
  if (f.nBits === 0) return { field: base.field, start: 0, end: width - 1 };
  return { field: base.field, start: base.ofs + f.ofs, end: base.ofs + f.ofs + f.nBits - 1 };
}

/** Null if 'f' may be written in 'scope', else OVN's message. */
export function checkWritable(symtab: Symtab, f: ActionField, scope: WriteScope): string | null {
  const base = baseOf(symtab, f.symbol);
  const ok = base !== undefined && !readOnly.has(base.field)
    && (ctCommitOnly.has(base.field) ? scope === 'ct_commit' : scope === 'default');
  return ok ? null : `Field ${f.symbol.name} is not modifiable.`;
}
