// Normal form → OpenFlow match specs, after OVN's expr_to_matches. Each term gives flows: a term
// of single tests is one flow; a term with one disjunction is one flow per alternative; a term
// with two or more disjunctions uses OpenFlow's conjunctive match: one flow per alternative with
// conjunction(id, k/n) plus one flow matching conj_id=id. (OVN's rule has no size threshold:
// any two disjunctive clauses in one term make a conjunction.) Equal matches merge as OVN's
// expr_match_add does: a plain flow absorbs conjunctive ones; conjunctive ones pool their actions.

import assert from 'node:assert/strict';
import { bitRange, widthMask } from './ast.js';
import { formatIntPart } from './lexer.js';
import type { Clause, Dnf, Leaf, Term } from './normalize.js';
import { ctStateBits, type Symtab } from './symbols.js';

export interface MaskedValue {
  readonly value: bigint;
  readonly mask: bigint;
}

export interface ConjunctionRef {
  /** Conjunction ids start at 1 within one compiled match; the caller offsets them. */
  readonly id: number;
  /** Zero-based clause index, as on the wire (ovs-ofctl prints it one-based: conjunction(id, k+1/n)). */
  readonly clause: number;
  readonly nClauses: number;
}

export interface FlowMatch {
  /** OpenFlow field name → masked value; a field absent is wildcarded. Includes "conj_id" on
   *  the flow that completes a conjunction. */
  readonly fields: ReadonlyMap<string, MaskedValue>;
  /** Non-empty for a conjunctive clause flow, whose action is these conjunction()s. */
  readonly conjunctions: readonly ConjunctionRef[];
}

export interface ToMatchesContext {
  readonly symtab: Symtab;
  /** Logical port name → tunnel key; undefined makes a test on that port never match. */
  readonly lookupPort?: ((name: string) => number | undefined) | undefined;
  /**
   * Decides, from a finished match's fields alone, whether to keep it (absent: keep all). A match
   * left out is as if deleted from the result: conjunction ids and the merging of equal matches
   * are unchanged, because equal matches are kept or left out together. It saves the work on
   * matches the caller would drop anyway (the flows of ports not related to this chassis).
   */
  readonly keepMatch?: ((fields: FieldLookup) => boolean) | undefined;
}

/** Read access to a match's fields by OpenFlow name (a ReadonlyMap is one). */
export interface FieldLookup {
  get(name: string): MaskedValue | undefined;
}

export interface MatchSet {
  readonly matches: readonly FlowMatch[];
  /** How many conjunction ids (1..n) the matches use. */
  readonly conjunctionsN: number;
}

/** OpenFlow field widths in bits, for the fields the symbol table maps to. */
const ofWidths: Readonly<Record<string, number>> = {
  eth_src: 48, eth_dst: 48, eth_type: 16, vlan_tci: 16, ip_proto: 8, ip_dscp: 6, ip_ecn: 2, nw_ttl: 8,
  ipv4_src: 32, ipv4_dst: 32, ipv6_src: 128, ipv6_dst: 128, ipv6_label: 20, icmpv4_type: 8, icmpv4_code: 8,
  icmpv6_type: 8, icmpv6_code: 8, ip_frag: 8, arp_op: 16, arp_spa: 32, arp_tpa: 32, arp_sha: 48, arp_tha: 48,
  nd_target: 128, nd_sll: 48, nd_tll: 48, tcp_src: 16, tcp_dst: 16, tcp_flags: 16, udp_src: 16, udp_dst: 16,
  sctp_src: 16, sctp_dst: 16, pkt_mark: 32, ct_state: 32, ct_mark: 32, ct_label: 128, conj_id: 32,
};

export function ofFieldWidth(name: string): number {
  if (/^reg[0-9]+$/.test(name)) return 32;
  const w = ofWidths[name];
  assert(w !== undefined, `unknown OpenFlow field ${name}`);
  return w;
}

/** The 32-bit registers an extended register spans, most significant first. */
function registerPiecesOf(of: string): string[] | null {
  const xx = /^xxreg([0-9]+)$/.exec(of);
  if (xx !== null) {
    const n = Number(xx[1]) * 4;
    return [`reg${n}`, `reg${n + 1}`, `reg${n + 2}`, `reg${n + 3}`];
  }
  const x = /^xreg([0-9]+)$/.exec(of);
  if (x !== null) {
    const n = Number(x[1]) * 2;
    return [`reg${n}`, `reg${n + 1}`];
  }
  return null;
}

/** registerPiecesOf by name: a symbol table names a few dozen OpenFlow fields. */
const piecesByName = new Map<string, readonly string[] | null>();

function registerPieces(of: string): readonly string[] | null {
  let p = piecesByName.get(of);
  if (p === undefined) piecesByName.set(of, (p = registerPiecesOf(of)));
  return p;
}

/**
 * A match being built: its fields in the order first constrained (the order a Map would keep).
 * A handful of fields, so a linear search; copying one per alternative of a disjunction (fifty
 * ports of a port group, say) is two array slices where a Map copy walks an iterator.
 */
class MutableMatch implements FieldLookup {
  constructor(readonly names: string[] = [], readonly values: MaskedValue[] = []) {}

  get(name: string): MaskedValue | undefined {
    const i = this.names.indexOf(name);
    return i < 0 ? undefined : this.values[i];
  }

  set(name: string, v: MaskedValue): void {
    const i = this.names.indexOf(name);
    if (i < 0) {
      this.names.push(name);
      this.values.push(v);
    } else {
      this.values[i] = v;
    }
  }

  copy(): MutableMatch {
    return new MutableMatch(this.names.slice(), this.values.slice());
  }

  toMap(): Map<string, MaskedValue> {
    const m = new Map<string, MaskedValue>();
    for (let i = 0; i < this.names.length; i++) m.set(this.names[i] as string, this.values[i] as MaskedValue);
    return m;
  }

  /** A key equal for two matches exactly when their fields are (names sorted). */
  key(): string {
    const order = this.names.map((_, i) => i).sort((a, b) => {
      const x = this.names[a] as string;
      const y = this.names[b] as string;
      return x < y ? -1 : x > y ? 1 : 0;
    });
    let key = '';
    for (const i of order) {
      const v = this.values[i] as MaskedValue;
      key += `${this.names[i] as string}=${v.value.toString(16)}/${v.mask.toString(16)},`;
    }
    return key;
  }
}

/** ANDs value/mask on OpenFlow field 'of' into 'm'; false if the two can never both hold.
 *  'value' has no 1-bit outside 'mask' (every test keeps that invariant, from the parser on). */
function constrainOf(m: MutableMatch, of: string, value: bigint, mask: bigint): boolean {
  if (mask === 0n) return true;
  const prev = m.get(of);
  if (prev === undefined) {
    m.set(of, { value, mask });
    return true;
  }
  if (((prev.value ^ value) & prev.mask & mask) !== 0n) return false;
  m.set(of, { value: prev.value | value, mask: prev.mask | mask });
  return true;
}

interface Entry {
  readonly fields: MutableMatch;
  readonly conjunctions: ConjunctionRef[];
}

class MatchBuilder {
  /** Matches in the order first added; equal ones are merged into the first. */
  private readonly entries: Entry[] = [];
  /** The entries by their fields' key, built once there are two (most expressions yield one match). */
  private byKey: Map<string, Entry> | null = null;
  conjunctionsN = 0;

  constructor(private readonly ctx: ToMatchesContext) {}

  /** ANDs one test into 'm'; false if it can never match (an unknown port, a conflict). */
  private constrain(m: MutableMatch, leaf: Leaf): boolean {
    const sym = this.ctx.symtab.get(leaf.field);
    assert(sym !== undefined && (sym.kind === 'field' || sym.kind === 'string'), `${leaf.field} is not a base field`);
    if (leaf.kind === 'port') {
      const key = this.ctx.lookupPort?.(leaf.port);
      if (key === undefined) return false;
      return constrainOf(m, sym.of, BigInt(key >>> 0), 0xffffffffn);
    }
    const pieces = registerPieces(sym.of);
    if (pieces === null) return constrainOf(m, sym.of, leaf.value, leaf.mask);
    for (let i = 0; i < pieces.length; i++) {
      const shift = BigInt(32 * (pieces.length - 1 - i));
      const ok = constrainOf(m, pieces[i] as string, (leaf.value >> shift) & 0xffffffffn, (leaf.mask >> shift) & 0xffffffffn);
      if (!ok) return false;
    }
    return true;
  }

  private add(fields: MutableMatch, conj: ConjunctionRef | null): void {
    if (this.ctx.keepMatch !== undefined && !this.ctx.keepMatch(fields)) return;
    let prev: Entry | undefined;
    if (this.entries.length > 0) {
      if (this.byKey === null) {
        this.byKey = new Map();
        for (const e of this.entries) this.byKey.set(e.fields.key(), e);
      }
      const key = fields.key();
      prev = this.byKey.get(key);
      if (prev === undefined) {
        const e: Entry = { fields, conjunctions: conj === null ? [] : [conj] };
        this.entries.push(e);
        this.byKey.set(key, e);
        return;
      }
    }
    if (prev === undefined) {
      this.entries.push({ fields, conjunctions: conj === null ? [] : [conj] });
    } else if (prev.conjunctions.length === 0 || conj === null) {
      prev.conjunctions.length = 0;
    } else {
      prev.conjunctions.push(conj);
    }
  }

  /** One match per alternative of 'clause' that can match; with 'skipUnkept', not those
   *  keepMatch would leave out (only where the matches are added as they are). */
  private expandClause(base: MutableMatch, clause: Clause, skipUnkept = false): MutableMatch[] {
    const out: MutableMatch[] = [];
    const keep = skipUnkept ? this.ctx.keepMatch : undefined;
    for (const alt of clause.alts) {
      if (keep !== undefined && alt.kind === 'port' && !this.portAltKept(base, alt, keep)) continue;
      const m = base.copy();
      if (this.constrain(m, alt)) out.push(m);
    }
    return out;
  }

  /**
   * Whether keepMatch keeps base ∧ (port test 'alt'), judged without building that match: a
   * port test sets its whole 32-bit register to the port's key (or conflicts with base, and
   * then there is no match either way), so the match is base with that one field replaced.
   */
  private portAltKept(base: MutableMatch, alt: Leaf & { kind: 'port' }, keep: (fields: FieldLookup) => boolean): boolean {
    const sym = this.ctx.symtab.get(alt.field);
    const key = this.ctx.lookupPort?.(alt.port);
    if (sym === undefined || (sym.kind !== 'field' && sym.kind !== 'string') || key === undefined) return true;
    const of = sym.of;
    const v: MaskedValue = { value: BigInt(key >>> 0), mask: 0xffffffffn };
    return keep({ get: (name) => (name === of ? v : base.get(name)) });
  }

  addTerm(term: Term): void {
    const base = new MutableMatch();
    const disjunctions: Clause[] = [];
    for (const c of term.clauses) {
      const only = c.alts[0];
      if (c.alts.length === 1 && only !== undefined) {
        if (!this.constrain(base, only)) return;
      } else {
        disjunctions.push(c);
      }
    }
    const [first] = disjunctions;
    if (first === undefined) {
      this.add(base, null);
    } else if (disjunctions.length === 1) {
      // Each match goes straight to add(), so one keepMatch would leave out is not built at all.
      for (const m of this.expandClause(base, first, true)) this.add(m, null);
    } else {
      // A clause none of whose alternatives can match (say, only unknown ports) makes the whole
      // conjunction unmatchable; unlike OVN, which leaves the clauses it already added, we then
      // add none, so no orphan conjunctive flows are installed.
      const clauses = disjunctions.map((c) => this.expandClause(base, c));
      if (clauses.some((ms) => ms.length === 0)) return;
      const id = ++this.conjunctionsN;
      clauses.forEach((ms, k) => {
        for (const m of ms) this.add(m, { id, clause: k, nClauses: clauses.length });
      });
      const done = base.copy();
      done.set('conj_id', { value: BigInt(id), mask: 0xffffffffn });
      this.add(done, null);
    }
  }

  result(): FlowMatch[] {
    return this.entries.map((e) => ({ fields: e.fields.toMap(), conjunctions: e.conjunctions }));
  }
}

/** Converts a normal form to OpenFlow matches. */
export function toMatches(dnf: Dnf, ctx: ToMatchesContext): MatchSet {
  const b = new MatchBuilder(ctx);
  for (const t of dnf) b.addTerm(t);
  return { matches: b.result(), conjunctionsN: b.conjunctionsN };
}

// ---- Canonical text -------------------------------------------------------------------------

const macFields = new Set(['eth_src', 'eth_dst', 'arp_sha', 'arp_tha', 'nd_sll', 'nd_tll']);
const ipv4Fields = new Set(['ipv4_src', 'ipv4_dst', 'arp_spa', 'arp_tpa']);
const ipv6Fields = new Set(['ipv6_src', 'ipv6_dst', 'nd_target']);
const decimalFields = new Set(['tcp_src', 'tcp_dst', 'udp_src', 'udp_dst', 'sctp_src', 'sctp_dst', 'ip_proto',
  'nw_ttl', 'ip_dscp', 'ip_ecn', 'icmpv4_type', 'icmpv4_code', 'icmpv6_type', 'icmpv6_code', 'arp_op', 'conj_id']);

/** A MAC as OVN prints it (the lexer's ethernet format). */
export function formatMac(v: bigint): string {
  return formatIntPart(v, 'ethernet');
}

export function formatIpv4(v: bigint): string {
  return formatIntPart(v, 'ipv4');
}

/** RFC 5952 text, with ::ffff:a.b.c.d for IPv4-mapped addresses. */
export function formatIpv6(v: bigint): string {
  return formatIntPart(v, 'ipv6');
}

/** A prefix length if 'mask' is a CIDR mask of 'width' bits, else null. */
function prefixLen(mask: bigint, width: number): number | null {
  const r = bitRange(mask);
  if (mask === 0n) return 0;
  if (r === null || r[0] + r[1] !== width) return null;
  return r[1];
}

const ctStateNames = Object.entries(ctStateBits).sort((a, b) => a[1] - b[1]);

function formatCtState(v: MaskedValue): string {
  let s = '';
  let rest = v.mask;
  for (const [name, bit] of ctStateNames) {
    const b = 1n << BigInt(bit);
    if ((v.mask & b) === 0n) continue;
    s += `${(v.value & b) !== 0n ? '+' : '-'}${name}`;
    rest &= ~b;
  }
  return rest === 0n ? s : `0x${v.value.toString(16)}/0x${v.mask.toString(16)}`;
}

/** ovs-ofctl-like text for one field: addresses in their usual notation, CIDR masks as /n. */
export function formatFieldValue(name: string, v: MaskedValue): string {
  const width = ofFieldWidth(name);
  const exact = v.mask === widthMask(width);
  if (name === 'ct_state') return formatCtState(v);
  if (macFields.has(name)) return exact ? formatMac(v.value) : `${formatMac(v.value)}/${formatMac(v.mask)}`;
  if (ipv4Fields.has(name) || ipv6Fields.has(name)) {
    const f = ipv4Fields.has(name) ? formatIpv4 : formatIpv6;
    if (exact) return f(v.value);
    const p = prefixLen(v.mask, width);
    return p !== null ? `${f(v.value)}/${p}` : `${f(v.value)}/${f(v.mask)}`;
  }
  if (exact && decimalFields.has(name)) return v.value.toString();
  const hex = (x: bigint): string => (x === 0n ? '0' : `0x${x.toString(16)}`);
  return exact ? hex(v.value) : `${hex(v.value)}/${hex(v.mask)}`;
}

function formatFields(fields: ReadonlyMap<string, MaskedValue>): string {
  return [...fields.entries()]
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .map(([name, v]) => `${name}=${formatFieldValue(name, v)}`)
    .join(',');
}

/** Canonical one-line text: sorted fields ("*" when none), then the conjunction actions if any. */
export function formatMatch(m: FlowMatch): string {
  const fields = formatFields(m.fields) || '*';
  if (m.conjunctions.length === 0) return fields;
  const conj = [...m.conjunctions]
    .sort((a, b) => a.id - b.id || a.clause - b.clause)
    .map((c) => `conjunction(${c.id},${c.clause}/${c.nClauses})`)
    .join(',');
  return `${fields} ${conj}`;
}

/** All matches as sorted lines, for golden comparison. */
export function formatMatches(ms: readonly FlowMatch[]): string[] {
  return ms.map(formatMatch).sort();
}
