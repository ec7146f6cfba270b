// OXM/NXM match fields: which header each ovs-ofctl field name travels under in OpenFlow 1.5, and
// the ofp_match (OXM) encoding of a FlowMatch. The class/field numbers and widths are facts from
// Open vSwitch's meta-flow definitions: OpenFlow basic fields use class 0x8000, Nicira's NXM_OF_*
// class 0x0000 and NXM_NX_* class 0x0001, the 64-bit packet registers class 0x8001, and
// experimenter OXMs class 0xffff followed by a 32-bit experimenter id.
//
// Encoding prefers the OpenFlow basic header when one exists, as Open vSwitch itself does for
// OpenFlow 1.5; decoding also accepts the NXM and experimenter spellings of the same field.

import type { MaskedValue } from './types.js';
import { OfDecodeError, type Reader, type Writer, decodeFail, onesBits } from './wire.js';

export const OXM_CLASS_NXM0 = 0x0000;
export const OXM_CLASS_NXM1 = 0x0001;
export const OXM_CLASS_BASIC = 0x8000;
export const OXM_CLASS_PACKET_REGS = 0x8001;
export const OXM_CLASS_EXPERIMENTER = 0xffff;
export const NX_VENDOR_ID = 0x00002320;
export const ONF_VENDOR_ID = 0x4f4e4600;

/** The widest tun_metadata option Open vSwitch accepts (bytes). */
export const TUN_METADATA_BYTES_MAX = 124;

export interface FieldSpec {
  /** ovs-ofctl's name. */
  readonly name: string;
  readonly cls: number;
  readonly field: number;
  /** Value width in bytes; 0 for a variable-length field (tun_metadata). */
  readonly bytes: number;
  /** Meaningful bits (ip_dscp has 6 in its byte); a mask of all of them is an exact match. */
  readonly bits: number;
  /** The mask of all 'bits' (computed once; 0 for variable-length fields). */
  readonly full: bigint;
  readonly experimenter?: number;
}

/** Fields narrower than their bytes, as Open vSwitch defines them. */
const narrowBits: Readonly<Record<string, number>> = {
  ip_dscp: 6, ip_ecn: 2, ipv6_label: 20, mpls_label: 20, mpls_tc: 3, mpls_bos: 1, tcp_flags: 12, vlan_pcp: 3, vlan_vid: 13,
};

function f(name: string, cls: number, field: number, bytes: number, experimenter?: number): FieldSpec {
  const bits = narrowBits[name] ?? bytes * 8;
  const full = onesBits(bits);
  return experimenter === undefined ? { name, cls, field, bytes, bits, full } : { name, cls, field, bytes, bits, full, experimenter };
}

const B = OXM_CLASS_BASIC;
const N0 = OXM_CLASS_NXM0;
const N1 = OXM_CLASS_NXM1;

/** The header each field is encoded with (OpenFlow 1.5). */
const preferred: FieldSpec[] = [
  f('in_port', B, 0, 4), f('metadata', B, 2, 8), f('eth_dst', B, 3, 6), f('eth_src', B, 4, 6), f('eth_type', B, 5, 2),
  f('ip_dscp', B, 8, 1), f('ip_ecn', B, 9, 1), f('ip_proto', B, 10, 1), f('ipv4_src', B, 11, 4), f('ipv4_dst', B, 12, 4),
  f('tcp_src', B, 13, 2), f('tcp_dst', B, 14, 2), f('udp_src', B, 15, 2), f('udp_dst', B, 16, 2),
  f('sctp_src', B, 17, 2), f('sctp_dst', B, 18, 2), f('icmpv4_type', B, 19, 1), f('icmpv4_code', B, 20, 1),
  f('arp_op', B, 21, 2), f('arp_spa', B, 22, 4), f('arp_tpa', B, 23, 4), f('arp_sha', B, 24, 6), f('arp_tha', B, 25, 6),
  f('ipv6_src', B, 26, 16), f('ipv6_dst', B, 27, 16), f('ipv6_label', B, 28, 4), f('icmpv6_type', B, 29, 1),
  f('icmpv6_code', B, 30, 1), f('nd_target', B, 31, 16), f('nd_sll', B, 32, 6), f('nd_tll', B, 33, 6),
  f('mpls_label', B, 34, 4), f('mpls_tc', B, 35, 1), f('mpls_bos', B, 36, 1), f('tun_id', B, 38, 8),
  f('tcp_flags', B, 42, 2), f('actset_output', B, 43, 4), f('packet_type', B, 44, 4),
  f('vlan_tci', N0, 4, 2),
  f('ip_frag', N1, 26, 1), f('nw_ttl', N1, 29, 1), f('mpls_ttl', N1, 30, 1), f('tun_src', N1, 31, 4), f('tun_dst', N1, 32, 4),
  f('pkt_mark', N1, 33, 4), f('dp_hash', N1, 35, 4), f('recirc_id', N1, 36, 4), f('conj_id', N1, 37, 4),
  f('tun_gbp_id', N1, 38, 2), f('tun_gbp_flags', N1, 39, 1), f('tun_flags', N1, 104, 2),
  f('ct_state', N1, 105, 4), f('ct_zone', N1, 106, 2), f('ct_mark', N1, 107, 4), f('ct_label', N1, 108, 16),
  f('tun_ipv6_src', N1, 109, 16), f('tun_ipv6_dst', N1, 110, 16),
  f('ct_nw_proto', N1, 119, 1), f('ct_nw_src', N1, 120, 4), f('ct_nw_dst', N1, 121, 4),
  f('ct_ipv6_src', N1, 122, 16), f('ct_ipv6_dst', N1, 123, 16), f('ct_tp_src', N1, 124, 2), f('ct_tp_dst', N1, 125, 2),
];
for (let i = 0; i < 16; i++) preferred.push(f(`reg${i}`, N1, i, 4));
for (let i = 0; i < 4; i++) preferred.push(f(`xxreg${i}`, N1, 111 + i, 16));
for (let i = 0; i < 8; i++) preferred.push(f(`xreg${i}`, OXM_CLASS_PACKET_REGS, i, 8));
// Registers beyond reg15/xxreg3 exist only as Nicira experimenter OXMs (Open vSwitch 3.7+).
for (let i = 16; i < 32; i++) preferred.push(f(`reg${i}`, OXM_CLASS_EXPERIMENTER, 17 + (i - 16), 4, NX_VENDOR_ID));
for (let i = 4; i < 8; i++) preferred.push(f(`xxreg${i}`, OXM_CLASS_EXPERIMENTER, 33 + (i - 4), 16, NX_VENDOR_ID));
for (let i = 0; i < 64; i++) preferred.push(f(`tun_metadata${i}`, N1, 40 + i, 0));

/** Other spellings Open vSwitch may use for the same fields (decode only). */
const aliases: FieldSpec[] = [
  f('in_port', N0, 0, 2), f('eth_dst', N0, 1, 6), f('eth_src', N0, 2, 6), f('eth_type', N0, 3, 2),
  f('ip_proto', N0, 6, 1), f('ipv4_src', N0, 7, 4), f('ipv4_dst', N0, 8, 4), f('tcp_src', N0, 9, 2), f('tcp_dst', N0, 10, 2),
  f('udp_src', N0, 11, 2), f('udp_dst', N0, 12, 2), f('icmpv4_type', N0, 13, 1), f('icmpv4_code', N0, 14, 1),
  f('arp_op', N0, 15, 2), f('arp_spa', N0, 16, 4), f('arp_tpa', N0, 17, 4),
  f('tun_id', N1, 16, 8), f('arp_sha', N1, 17, 6), f('arp_tha', N1, 18, 6), f('ipv6_src', N1, 19, 16), f('ipv6_dst', N1, 20, 16),
  f('icmpv6_type', N1, 21, 1), f('icmpv6_code', N1, 22, 1), f('nd_target', N1, 23, 16), f('nd_sll', N1, 24, 6),
  f('nd_tll', N1, 25, 6), f('ipv6_label', N1, 27, 4), f('ip_ecn', N1, 28, 1), f('tcp_flags', N1, 34, 2),
  f('dp_hash', OXM_CLASS_EXPERIMENTER, 0, 4, NX_VENDOR_ID),
  f('tcp_flags', OXM_CLASS_EXPERIMENTER, 42, 2, ONF_VENDOR_ID),
  f('actset_output', OXM_CLASS_EXPERIMENTER, 43, 4, ONF_VENDOR_ID),
  // OXM VLAN_VID/VLAN_PCP and NXM_OF_IP_TOS are folded into vlan_tci and ip_dscp by decodeMatch.
  f('vlan_vid', B, 6, 2), f('vlan_pcp', B, 7, 1), f('nw_tos', N0, 5, 1),
];

const byName = new Map<string, FieldSpec>(preferred.map((s) => [s.name, s]));
const byKey = new Map<string, FieldSpec>();
function keyOf(cls: number, field: number, experimenter: number | undefined): string {
  return experimenter === undefined ? `${cls}:${field}` : `${cls}:${field}:${experimenter}`;
}
for (const s of [...preferred, ...aliases]) byKey.set(keyOf(s.cls, s.field, s.experimenter), s);

export function fieldSpec(name: string): FieldSpec | undefined {
  return byName.get(name);
}

export function isKnownField(name: string): boolean {
  return byName.has(name);
}

/** Field width in meaningful bits; tun_metadata counts as its largest size. */
export function fieldBits(name: string): number {
  const s = byName.get(name);
  if (s === undefined) throw new OfEncodeError(`unknown OpenFlow field ${name}`);
  return s.bytes === 0 ? TUN_METADATA_BYTES_MAX * 8 : s.bits;
}

/** A request the encoder cannot express (unknown field, value out of range): a caller's bug or bad
 *  input, reported with a message naming what was wrong. */
export class OfEncodeError extends Error {
  override readonly name = 'OfEncodeError';
}

/** Bytes for a tun_metadata value: the smallest multiple of 4 that holds value and mask. */
function varBytes(v: bigint): number {
  let n = 4;
  while (n < TUN_METADATA_BYTES_MAX && v >> BigInt(n * 8) !== 0n) n += 4;
  if (v >> BigInt(n * 8) !== 0n) throw new OfEncodeError(`tun_metadata value wider than ${TUN_METADATA_BYTES_MAX} bytes`);
  return n;
}

/** Writes an OXM/NXM header (4 bytes, or 8 with the experimenter id). 'payload' excludes the id. */
export function writeHeader(w: Writer, s: FieldSpec, hasMask: boolean, payloadBytes: number): void {
  const expBytes = s.experimenter === undefined ? 0 : 4;
  w.u32(((s.cls << 16) | (s.field << 9) | (hasMask ? 0x100 : 0) | (payloadBytes + expBytes)) >>> 0);
  if (s.experimenter !== undefined) w.u32(s.experimenter);
}

/** The width a field reference's header announces: the field's width, or for tun_metadata enough
 *  bytes (a multiple of 4) to hold bit 'end'. */
export function refFieldBytes(s: FieldSpec, end: number): number {
  return s.bytes !== 0 ? s.bytes : Math.max(4, Math.ceil((end + 1) / 32) * 4);
}

/** Fields that also have an NXM header (class 0x0000 or 0x0001): name → that header. */
const nxmByName = new Map<string, FieldSpec>(aliases.filter((s) => s.cls === N0 || s.cls === N1).map((s) => [s.name, s]));

/**
 * A field header alone, as actions name a field. OpenFlow 1.5's own actions (copy_field) use the
 * preferred header; Nicira's actions (`nxm`: output_reg, stack push and pop, ct's zone, learn's
 * specs, check_pkt_larger) are written with the NXM header where the field has one wide enough
 * for the bits named, as Open vSwitch writes them (ofp-actions.c passes version 0), so that an
 * action list carried as bytes (a controller action's userdata) is the same bytes.
 */
export function writeFieldHeader(w: Writer, name: string, end: number, nxm = false): void {
  const s = byName.get(name);
  if (s === undefined) throw new OfEncodeError(`unknown OpenFlow field ${name}`);
  const old = nxm ? nxmByName.get(name) : undefined;
  const use = old !== undefined && end < old.bits ? old : s;
  writeHeader(w, use, false, refFieldBytes(use, end));
}

export interface DecodedHeader {
  readonly spec: FieldSpec | undefined;
  readonly cls: number;
  readonly field: number;
  readonly hasMask: boolean;
  /** Payload bytes after the header (value, plus mask when hasMask). */
  readonly payloadBytes: number;
  readonly experimenter?: number;
}

export function readHeader(r: Reader): DecodedHeader {
  const h = r.u32('oxm header');
  const cls = h >>> 16;
  const field = (h >>> 9) & 0x7f;
  const hasMask = (h & 0x100) !== 0;
  let len = h & 0xff;
  let experimenter: number | undefined;
  if (cls === OXM_CLASS_EXPERIMENTER) {
    if (len < 4) decodeFail('bad_length', `experimenter OXM header with length ${len}`);
    experimenter = r.u32('oxm experimenter');
    len -= 4;
  }
  const spec = byKey.get(keyOf(cls, field, experimenter));
  const out: DecodedHeader = { spec, cls, field, hasMask, payloadBytes: len };
  return experimenter === undefined ? out : { ...out, experimenter };
}

/** The field a header names, or a typed error for a header we do not know. */
export function headerField(h: DecodedHeader): FieldSpec {
  if (h.spec === undefined) {
    const exp = h.experimenter === undefined ? '' : ` experimenter 0x${h.experimenter.toString(16)}`;
    decodeFail('unsupported', `unknown OXM class 0x${h.cls.toString(16)} field ${h.field}${exp}`);
  }
  return h.spec;
}

/** Reads a header naming a field (no payload follows), as in move/output_reg/stack. */
export function readFieldHeader(r: Reader): FieldSpec {
  return headerField(readHeader(r));
}

/** One OXM TLV: header, value, optional mask. A mask covering every meaningful bit of the field
 *  is left out (an exact match); mask bits beyond the field's width are dropped. */
export function writeOxm(w: Writer, name: string, v: MaskedValue, wholeBytes = false): void {
  const s = byName.get(name);
  if (s === undefined) throw new OfEncodeError(`unknown OpenFlow field ${name}`);
  const bytes = s.bytes !== 0 ? s.bytes : varBytes(v.mask | v.value);
  const full = s.bytes !== 0 ? s.full : onesBits(bytes * 8);
  const mask = v.mask & full;
  const value = v.value & mask;
  if (v.value < 0n || v.mask < 0n || (v.value & v.mask & ~full) !== 0n) {
    throw new OfEncodeError(`${name}: value or mask wider than ${s.bits} bits`);
  }
  // A mask is left out when it covers the field's bits, or with wholeBytes only when it covers
  // its bytes (a set-field of ip_dscp's six bits is masked 0x3f, as Open vSwitch writes it).
  const masked = mask !== (wholeBytes ? onesBits(bytes * 8) : full);
  writeHeader(w, s, masked, masked ? bytes * 2 : bytes);
  w.uint(value, bytes);
  if (masked) w.uint(mask, bytes);
}

export interface OxmEntry {
  readonly spec: FieldSpec;
  readonly value: bigint;
  /** All ones of the field's width when the TLV had no mask. */
  readonly mask: bigint;
  readonly bytes: number;
  readonly hasMask: boolean;
}

/** Reads one OXM TLV (header, value, mask). */
export function readOxm(r: Reader): OxmEntry {
  const h = readHeader(r);
  const spec = headerField(h);
  const bytes = h.hasMask ? h.payloadBytes / 2 : h.payloadBytes;
  if (!Number.isInteger(bytes) || bytes === 0) decodeFail('bad_length', `${spec.name}: payload of ${h.payloadBytes} bytes`);
  if (spec.bytes !== 0 ? bytes !== spec.bytes : bytes > TUN_METADATA_BYTES_MAX) {
    decodeFail('bad_length', `${spec.name}: ${bytes}-byte value, expected ${spec.bytes}`);
  }
  const value = r.uint(bytes, spec.name);
  const mask = h.hasMask ? r.uint(bytes, `${spec.name} mask`) : spec.bytes !== 0 ? spec.full : onesBits(bytes * 8);
  return { spec, value, mask, bytes, hasMask: h.hasMask };
}

/** Adds one decoded TLV to a match, folding Open vSwitch's alternative spellings into our names. */
function addToMatch(m: Map<string, MaskedValue>, e: OxmEntry): void {
  let name = e.spec.name;
  let value = e.value & e.mask;
  let mask = e.mask;
  if (name === 'vlan_vid' || name === 'vlan_pcp') {
    // vlan_tci = PCP(3) | CFI(1) | VID(12); OXM's VLAN_VID carries CFI as OFPVID_PRESENT (0x1000).
    const prev = m.get('vlan_tci') ?? { value: 0n, mask: 0n };
    const shift = name === 'vlan_pcp' ? 13n : 0n;
    const width = name === 'vlan_pcp' ? 0x7n : 0x1fffn;
    m.set('vlan_tci', { value: prev.value | ((value & width) << shift), mask: prev.mask | ((mask & width) << shift) });
    return;
  }
  const wide = name.charCodeAt(0) === 0x78 /* 'x' */ ? /^(xx?)reg([0-9]+)$/.exec(name) : null;
  if (wide !== null) {
    // Open vSwitch reports registers in pairs as 64-bit OXM_OF_PKT_REGn; our vocabulary is the
    // 32-bit regN, most significant piece first (xreg0 = reg0:reg1, xxreg0 = reg0..reg3).
    const n = wide[1] === 'xx' ? 4 : 2;
    const first = Number(wide[2]) * n;
    for (let i = 0; i < n; i++) {
      const shift = BigInt(32 * (n - 1 - i));
      const pm = (mask >> shift) & 0xffffffffn;
      if (pm === 0n) continue;
      const reg = `reg${first + i}`;
      if (m.has(reg)) decodeFail('bad_value', `field ${reg} appears twice in one match`);
      m.set(reg, { value: (value >> shift) & pm, mask: pm });
    }
    return;
  }
  if (name === 'nw_tos') {
    name = 'ip_dscp';
    value >>= 2n;
    mask >>= 2n;
  }
  if (name === 'in_port' && e.bytes === 2 && value >= 0xff00n) value += 0xffff0000n;
  if (name === 'in_port' && e.bytes === 2) mask = 0xffffffffn;
  if (m.has(name)) decodeFail('bad_value', `field ${name} appears twice in one match`);
  if (mask !== 0n) m.set(name, { value, mask });
}

const OFPMT_OXM = 1;

/**
 * Where a field may stand in an OXM list: Open vSwitch checks each field's prerequisites as it
 * reads it (OFPBMC_BAD_PREREQ otherwise), so eth_type comes before the L3 fields, ip_proto before
 * the L4 ones, icmpv6_type before the ND ones, and ct_nw_proto before the conntrack tuple.
 */
const prereqRank: ReadonlyMap<string, number> = new Map([
  ['eth_type', 1],
  ...['ip_proto', 'ip_dscp', 'ip_ecn', 'ip_frag', 'nw_ttl', 'ipv4_src', 'ipv4_dst', 'ipv6_src', 'ipv6_dst', 'ipv6_label',
    'arp_op', 'arp_spa', 'arp_tpa', 'arp_sha', 'arp_tha', 'mpls_label', 'mpls_tc', 'mpls_bos', 'mpls_ttl', 'ct_nw_proto']
    .map((n) => [n, 2] as const),
  ...['tcp_src', 'tcp_dst', 'udp_src', 'udp_dst', 'sctp_src', 'sctp_dst', 'icmpv4_type', 'icmpv4_code', 'icmpv6_type', 'icmpv6_code',
    'tcp_flags', 'ct_nw_src', 'ct_nw_dst', 'ct_ipv6_src', 'ct_ipv6_dst', 'ct_tp_src', 'ct_tp_dst']
    .map((n) => [n, 3] as const),
  ...['nd_target', 'nd_sll', 'nd_tll'].map((n) => [n, 4] as const),
]);

/** Encodes ofp_match (type OXM, length, TLVs, padding to 8). Fields with a zero mask are left out;
 *  the others go in prerequisite order (stable otherwise). */
export function writeMatch(w: Writer, match: ReadonlyMap<string, MaskedValue>): void {
  const start = w.length;
  w.u16(OFPMT_OXM).u16(0);
  let rank = 0;
  let ordered = true;
  for (const name of match.keys()) {
    const r = prereqRank.get(name) ?? 0;
    if (r < rank) ordered = false;
    rank = Math.max(rank, r);
  }
  const entries = ordered ? match : [...match].sort(([a], [b]) => (prereqRank.get(a) ?? 0) - (prereqRank.get(b) ?? 0));
  for (const [name, v] of entries) if (v.mask !== 0n) writeOxm(w, name, v);
  w.patchU16(start + 2, w.length - start);
  w.padFrom(start);
}

/** Decodes ofp_match and its padding. */
export function readMatch(r: Reader): Map<string, MaskedValue> {
  const start = r.offset;
  const type = r.u16('match type');
  const len = r.u16('match length');
  if (type !== OFPMT_OXM) decodeFail('unsupported', `match type ${type} (only OXM)`);
  if (len < 4) decodeFail('bad_length', `match length ${len}`);
  const body = r.sub(len - 4, 'match fields');
  r.alignFrom(start, 'match padding');
  return readOxmList(body);
}

/** Decodes TLVs to the end of 'r' (a match body, or NXPINT_METADATA). */
export function readOxmList(r: Reader): Map<string, MaskedValue> {
  const m = new Map<string, MaskedValue>();
  while (r.remaining > 0) addToMatch(m, readOxm(r));
  return m;
}

export { OfDecodeError };
