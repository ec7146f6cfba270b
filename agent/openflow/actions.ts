// OfAction ↔ OpenFlow 1.5 action bytes. Standard actions use their OFPAT_* encodings; the rest
// are Nicira extension actions (type 0xffff, vendor 0x00002320, NXAST_* subtype). Open vSwitch
// accepts neither reg_load nor reg_move in OpenFlow 1.5, so 'load' and 'set_field' become
// OFPAT_SET_FIELD (masked when partial) and 'move' becomes OFPAT_COPY_FIELD.
//
// Decoding yields one canonical spelling: a set-field whose mask is one contiguous run of bits is a
// 'load', an unmasked one a 'set_field'; so decode(encode(a)) equals 'a' for canonical actions.

import { formatIpv4, formatIpv6 } from '../expr/to-matches.js';
import {
  NX_VENDOR_ID, OfEncodeError, fieldSpec, readFieldHeader, readOxm, refFieldBytes, writeFieldHeader, writeOxm,
  type FieldSpec,
} from './fields.js';
import type { FieldRef, LearnSpec, NatSpec, OfAction } from './types.js';
import { Reader, Writer, decodeFail, onesBits } from './wire.js';

export const OFPAT = {
  OUTPUT: 0, PUSH_VLAN: 17, POP_VLAN: 18, GROUP: 22, SET_NW_TTL: 23, DEC_NW_TTL: 24, SET_FIELD: 25, COPY_FIELD: 28, METER: 29, EXPERIMENTER: 0xffff,
} as const;

export const NXAST = {
  RESUBMIT: 1, REG_MOVE: 6, REG_LOAD: 7, NOTE: 8, RESUBMIT_TABLE: 14, OUTPUT_REG: 15, LEARN: 16, EXIT: 17, DEC_TTL: 18,
  CONTROLLER: 20, DEC_TTL_CNT_IDS: 21, STACK_PUSH: 27, STACK_POP: 28, OUTPUT_REG2: 32, REG_LOAD2: 33,
  BUNDLE: 12, SAMPLE: 29, CONJUNCTION: 34, CT: 35, NAT: 36, CONTROLLER2: 37, CLONE: 42, CT_CLEAR: 43, CHECK_PKT_LARGER: 49,
} as const;
/** NXAST_BUNDLE: the active-backup algorithm, hashing on eth_src (ignored by it), members by OpenFlow port (NXM_OF_IN_PORT). */
const NX_BD_ALG_ACTIVE_BACKUP = 0;
const NX_HASH_FIELDS_ETH_SRC = 0;
const NXM_OF_IN_PORT = 0x00000002;
/** Open vSwitch's BUNDLE_MAX_MEMBERS. */
export const BUNDLE_MEMBERS_MAX = 2048;

/** Reserved OpenFlow 1.1+ port numbers. */
export const OFPP = { IN_PORT: 0xfffffff8, TABLE: 0xfffffff9, NORMAL: 0xfffffffa, FLOOD: 0xfffffffb, ALL: 0xfffffffc, CONTROLLER: 0xfffffffd, LOCAL: 0xfffffffe, ANY: 0xffffffff } as const;
/** The 16-bit in_port of resubmit that means "keep the packet's in_port". */
const OFPP10_IN_PORT = 0xfff8;
const NX_CT_F_COMMIT = 1;
const NX_CT_F_FORCE = 2;
const NX_CT_RECIRC_NONE = 0xff;
const NX_NAT_F = { SRC: 1, DST: 2, PERSISTENT: 4, PROTO_HASH: 8, PROTO_RANDOM: 16 } as const;
const NX_NAT_RANGE = { IPV4_MIN: 1, IPV4_MAX: 2, IPV6_MIN: 4, IPV6_MAX: 8, PROTO_MIN: 16, PROTO_MAX: 32 } as const;
const NXAC2PT = { MAX_LEN: 0, CONTROLLER_ID: 1, REASON: 2, USERDATA: 3, PAUSE: 4, METER_ID: 5 } as const;
const OFPR = { no_match: 0, action: 1, invalid_ttl: 2 } as const;
const OFPCML_NO_BUFFER = 0xffff;
const NX_CTLR_NO_METER = 0xffffffff;
const NX_LEARN_F = { SEND_FLOW_REM: 1, DELETE_LEARNED: 2 } as const;
/** A flow_mod_spec header: bit 13 = immediate source, bits 11..12 = destination, 0..10 = n_bits. */
const NX_LEARN_SRC_IMMEDIATE = 1 << 13;
const NX_LEARN_DST_LOAD = 1 << 11;
const NX_LEARN_DST_MASK = 3 << 11;
const NX_LEARN_N_BITS_MASK = 0x7ff;

/** How deep ct(...) and clone(...) may nest before a decoder gives up. */
export const ACTION_NESTING_MAX = 16;

// ---- Encoding --------------------------------------------------------------------------------

function refBits(ref: FieldRef): number {
  return ref.end - ref.start + 1;
}

function checkRef(ref: FieldRef, what: string): FieldSpec {
  const s = fieldSpec(ref.field);
  if (s === undefined) throw new OfEncodeError(`${what}: unknown OpenFlow field ${ref.field}`);
  const width = refFieldBytes(s, ref.end) * 8;
  if (!(Number.isInteger(ref.start) && Number.isInteger(ref.end) && ref.start >= 0 && ref.end >= ref.start && ref.end < width)) {
    throw new OfEncodeError(`${what}: bad bit range ${ref.field}[${ref.start}..${ref.end}]`);
  }
  return s;
}

function ofsNbits(ref: FieldRef): number {
  return (ref.start << 6) | (refBits(ref) - 1);
}

/** Starts a Nicira action; returns its offset for finishNx. */
function startNx(w: Writer, subtype: number): number {
  const at = w.length;
  w.u16(OFPAT.EXPERIMENTER).u16(0).u32(NX_VENDOR_ID).u16(subtype);
  return at;
}

/** Pads an action to 'minBytes' and to a multiple of 8, and writes its length. */
function finish(w: Writer, at: number, minBytes = 8): void {
  if (w.length - at < minBytes) w.zeros(minBytes - (w.length - at));
  w.padFrom(at);
  const len = w.length - at;
  if (len > 0xffff) throw new OfEncodeError(`action of ${len} bytes does not fit OpenFlow's 16-bit length`);
  w.patchU16(at + 2, len);
}

function parseIpv4(text: string): number | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  let v = 0;
  for (const p of parts) {
    if (!/^[0-9]{1,3}$/.test(p) || Number(p) > 255) return undefined;
    v = v * 256 + Number(p);
  }
  return v;
}

function parseIpv6(text: string): bigint | undefined {
  let head = text;
  let tail4: number | undefined;
  const lastColon = text.lastIndexOf(':');
  if (text.includes('.') && lastColon >= 0) {
    tail4 = parseIpv4(text.slice(lastColon + 1));
    if (tail4 === undefined) return undefined;
    head = `${text.slice(0, lastColon + 1)}0:0`;
  }
  const halves = head.split('::');
  if (halves.length > 2) return undefined;
  const groups = (s: string): string[] => (s === '' ? [] : s.split(':'));
  const left = groups(halves[0] ?? '');
  const right = halves.length === 2 ? groups(halves[1] ?? '') : [];
  const missing = 8 - left.length - right.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return undefined;
  const all = [...left, ...Array<string>(halves.length === 2 ? missing : 0).fill('0'), ...right];
  let v = 0n;
  for (const g of all) {
    if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return undefined;
    v = (v << 16n) | BigInt(parseInt(g, 16));
  }
  if (tail4 !== undefined) v = (v & ~0xffffffffn) | BigInt(tail4);
  return v;
}

function writeNat(w: Writer, nat: NatSpec): void {
  const at = startNx(w, NXAST.NAT);
  let flags = nat.kind === 'src' ? NX_NAT_F.SRC : nat.kind === 'dst' ? NX_NAT_F.DST : 0;
  if (nat.persistent === true) flags |= NX_NAT_F.PERSISTENT;
  if (nat.hash === true) flags |= NX_NAT_F.PROTO_HASH;
  if (nat.random === true) flags |= NX_NAT_F.PROTO_RANDOM;
  w.zeros(2).u16(flags);
  const presentAt = w.length;
  w.u16(0);
  let present = 0;
  const addrs = [nat.addrMin, nat.addrMax];
  const v4 = addrs.every((a) => a === undefined || parseIpv4(a) !== undefined);
  addrs.forEach((a, i) => {
    if (a === undefined) return;
    if (v4) {
      w.u32(parseIpv4(a) as number);
      present |= i === 0 ? NX_NAT_RANGE.IPV4_MIN : NX_NAT_RANGE.IPV4_MAX;
    } else {
      const v6 = parseIpv6(a);
      if (v6 === undefined) throw new OfEncodeError(`nat: bad address ${a}`);
      w.uint(v6, 16);
      present |= i === 0 ? NX_NAT_RANGE.IPV6_MIN : NX_NAT_RANGE.IPV6_MAX;
    }
  });
  if (nat.portMin !== undefined) {
    w.u16(nat.portMin);
    present |= NX_NAT_RANGE.PROTO_MIN;
  }
  if (nat.portMax !== undefined) {
    w.u16(nat.portMax);
    present |= NX_NAT_RANGE.PROTO_MAX;
  }
  w.patchU16(presentAt, present);
  finish(w, at, 16);
}

function writeProp(w: Writer, type: number, payload: (w: Writer) => void): void {
  const at = w.length;
  w.u16(type).u16(0);
  payload(w);
  w.patchU16(at + 2, w.length - at);
  w.padFrom(at);
}

function writeSetField(w: Writer, field: string, value: bigint, mask: bigint | undefined): void {
  const s = fieldSpec(field);
  if (s === undefined) throw new OfEncodeError(`set_field: unknown OpenFlow field ${field}`);
  const at = w.length;
  w.u16(OFPAT.SET_FIELD).u16(0);
  const full = s.bytes === 0 ? undefined : onesBits(s.bytes * 8);
  // A mask given is written unless it covers the field's bytes (Open vSwitch keeps a set-field
  // masked to all of ip_dscp's six bits masked, and reports it so).
  writeOxm(w, field, { value, mask: mask ?? full ?? onesBits(Math.max(4, Math.ceil(value.toString(16).length / 8) * 4) * 8) }, mask !== undefined);
  finish(w, at);
}

function writeAction(w: Writer, a: OfAction, depth: number): void {
  if (depth > ACTION_NESTING_MAX) throw new OfEncodeError(`actions nested deeper than ${ACTION_NESTING_MAX}`);
  switch (a.kind) {
    case 'output': {
      w.u16(OFPAT.OUTPUT).u16(16).u32(a.port).u16(a.port === OFPP.CONTROLLER ? OFPCML_NO_BUFFER : 0).zeros(6);
      return;
    }
    case 'group':
      w.u16(OFPAT.GROUP).u16(8).u32(a.groupId);
      return;
    case 'meter':
      w.u16(OFPAT.METER).u16(8).u32(a.meterId);
      return;
    case 'push_vlan':
      w.u16(OFPAT.PUSH_VLAN).u16(8).u16(a.ethertype).zeros(2);
      return;
    case 'pop_vlan':
      w.u16(OFPAT.POP_VLAN).u16(8).zeros(4);
      return;
    case 'dec_ttl':
      w.u16(OFPAT.DEC_NW_TTL).u16(8).zeros(4);
      return;
    case 'set_nw_ttl':
      if (!Number.isInteger(a.ttl) || a.ttl < 0 || a.ttl > 0xff) throw new OfEncodeError(`mod_nw_ttl: ${a.ttl} is not an 8-bit TTL`);
      w.u16(OFPAT.SET_NW_TTL).u16(8).u8(a.ttl).zeros(3);
      return;
    case 'drop':
      return;
    case 'set_field':
      writeSetField(w, a.field, a.value, a.mask);
      return;
    case 'load': {
      checkRef(a.dst, 'load');
      const bits = refBits(a.dst);
      if (a.value < 0n || a.value >> BigInt(bits) !== 0n) throw new OfEncodeError(`load: value 0x${a.value.toString(16)} wider than ${bits} bits`);
      const shift = BigInt(a.dst.start);
      writeSetField(w, a.dst.field, a.value << shift, onesBits(bits) << shift);
      return;
    }
    case 'move': {
      checkRef(a.src, 'move');
      checkRef(a.dst, 'move');
      if (refBits(a.src) !== refBits(a.dst)) throw new OfEncodeError('move: source and destination widths differ');
      const at = w.length;
      w.u16(OFPAT.COPY_FIELD).u16(0).u16(refBits(a.dst)).u16(a.src.start).u16(a.dst.start).zeros(2);
      writeFieldHeader(w, a.src.field, a.src.end);
      writeFieldHeader(w, a.dst.field, a.dst.end);
      finish(w, at, 16);
      return;
    }
    case 'resubmit': {
      const at = startNx(w, NXAST.RESUBMIT_TABLE);
      w.u16(a.inPort ?? OFPP10_IN_PORT).u8(a.table).zeros(3);
      finish(w, at);
      return;
    }
    case 'output_reg': {
      const s = checkRef(a.src, 'output_reg');
      if (s.experimenter === undefined) {
        const at = startNx(w, NXAST.OUTPUT_REG);
        w.u16(ofsNbits(a.src));
        writeFieldHeader(w, a.src.field, a.src.end, true);
        w.u16(OFPCML_NO_BUFFER);
        finish(w, at, 24);
      } else {
        const at = startNx(w, NXAST.OUTPUT_REG2);
        w.u16(ofsNbits(a.src)).u16(OFPCML_NO_BUFFER);
        writeFieldHeader(w, a.src.field, a.src.end, true);
        finish(w, at, 24);
      }
      return;
    }
    case 'push':
    case 'pop': {
      const ref = a.kind === 'push' ? a.src : a.dst;
      checkRef(ref, a.kind);
      const at = startNx(w, a.kind === 'push' ? NXAST.STACK_PUSH : NXAST.STACK_POP);
      w.u16(ref.start);
      writeFieldHeader(w, ref.field, ref.end, true);
      w.u16(refBits(ref));
      finish(w, at, 24);
      return;
    }
    case 'ct': {
      const at = startNx(w, NXAST.CT);
      let flags = a.commit ? NX_CT_F_COMMIT : 0;
      if (a.force === true) flags |= NX_CT_F_FORCE;
      w.u16(flags);
      if (typeof a.zone === 'object') {
        if (checkRef(a.zone, 'ct zone').experimenter !== undefined) throw new OfEncodeError(`ct zone: ${a.zone.field} has no 32-bit NXM header`);
        writeFieldHeader(w, a.zone.field, a.zone.end, true);
        w.u16(ofsNbits(a.zone));
      } else {
        w.u32(0).u16(a.zone ?? 0);
      }
      w.u8(a.table ?? NX_CT_RECIRC_NONE).zeros(3).u16(a.alg ?? 0);
      if (a.nat !== undefined) writeNat(w, a.nat);
      for (const x of a.exec) writeAction(w, x, depth + 1);
      finish(w, at, 24);
      return;
    }
    case 'ct_clear':
    case 'exit': {
      const at = startNx(w, a.kind === 'exit' ? NXAST.EXIT : NXAST.CT_CLEAR);
      finish(w, at, 16);
      return;
    }
    case 'conjunction': {
      const at = startNx(w, NXAST.CONJUNCTION);
      w.u8(a.clause).u8(a.nClauses).u32(a.id);
      finish(w, at, 16);
      return;
    }
    case 'controller': {
      // Defaults are left out, as Open vSwitch does when it re-encodes the action.
      const at = startNx(w, NXAST.CONTROLLER2);
      w.zeros(6);
      const { maxLen, controllerId, reason, meterId } = a;
      if (maxLen !== undefined && maxLen !== OFPCML_NO_BUFFER) writeProp(w, NXAC2PT.MAX_LEN, (p) => p.u16(maxLen));
      if (controllerId !== undefined && controllerId !== 0) writeProp(w, NXAC2PT.CONTROLLER_ID, (p) => p.u16(controllerId));
      if (reason !== undefined && reason !== 'action') writeProp(w, NXAC2PT.REASON, (p) => p.u8(OFPR[reason]));
      if (a.userdata.length > 0) writeProp(w, NXAC2PT.USERDATA, (p) => p.bytes(a.userdata));
      if (a.pause === true) writeProp(w, NXAC2PT.PAUSE, () => undefined);
      if (meterId !== undefined && meterId !== NX_CTLR_NO_METER) writeProp(w, NXAC2PT.METER_ID, (p) => p.u32(meterId));
      finish(w, at, 16);
      return;
    }
    case 'controller_op': {
      // OVN's userdata: its action header (32-bit opcode, 4 zero bytes), then the nested actions.
      const inner = new Writer(64);
      inner.u32(a.opcode).zeros(4);
      writeActions(inner, a.nested, depth + 1);
      const op: OfAction = { kind: 'controller', userdata: inner.finish(), ...(a.pause === true ? { pause: true } : {}), ...(a.meterId !== undefined ? { meterId: a.meterId } : {}) };
      writeAction(w, op, depth);
      return;
    }
    case 'clone': {
      const at = startNx(w, NXAST.CLONE);
      w.zeros(6);
      for (const x of a.actions) writeAction(w, x, depth + 1);
      finish(w, at, 16);
      return;
    }
    case 'check_pkt_larger': {
      checkRef(a.dst, 'check_pkt_larger');
      if (refBits(a.dst) !== 1) throw new OfEncodeError('check_pkt_larger: destination must be one bit');
      const at = startNx(w, NXAST.CHECK_PKT_LARGER);
      w.u16(a.pktLen).u16(a.dst.start);
      writeFieldHeader(w, a.dst.field, a.dst.end, true);
      finish(w, at, 24);
      return;
    }
    case 'bundle_active_backup': {
      if (a.members.length > BUNDLE_MEMBERS_MAX) throw new OfEncodeError(`bundle: ${a.members.length} members, at most ${BUNDLE_MEMBERS_MAX}`);
      const at = startNx(w, NXAST.BUNDLE);
      // algorithm, fields, basis, member type, n_members, ofs_nbits and dst (none: not bundle_load), 4 zero bytes.
      w.u16(NX_BD_ALG_ACTIVE_BACKUP).u16(NX_HASH_FIELDS_ETH_SRC).u16(0).u32(NXM_OF_IN_PORT).u16(a.members.length).u16(0).u32(0).zeros(4);
      for (const m of a.members) w.u16(m);
      finish(w, at, 32);
      return;
    }
    case 'dec_ttl_cnt_ids': {
      // Open vSwitch keeps this spelling (even for the single id 0) when it re-encodes.
      const at = startNx(w, NXAST.DEC_TTL_CNT_IDS);
      w.u16(a.controllerIds.length).zeros(4);
      for (const id of a.controllerIds) w.u16(id);
      finish(w, at, 16);
      return;
    }
    case 'learn': {
      const at = startNx(w, NXAST.LEARN);
      const flags = (a.sendFlowRem === true ? NX_LEARN_F.SEND_FLOW_REM : 0) | (a.deleteLearned === true ? NX_LEARN_F.DELETE_LEARNED : 0);
      w.u16(a.idleTimeout ?? 0).u16(a.hardTimeout ?? 0).u16(a.priority).u64(a.cookie).u16(flags).u8(a.table).zeros(1)
        .u16(a.finIdleTimeout ?? 0).u16(a.finHardTimeout ?? 0);
      for (const s of a.specs) writeLearnSpec(w, s);
      // The specs end where the action does; its zero padding reads as an empty header.
      finish(w, at, 32);
      return;
    }
    case 'sample': {
      // nx_action_sample: 24 bytes, no padding.
      const at = startNx(w, NXAST.SAMPLE);
      w.u16(a.probability).u32(a.collectorSetId).u32(a.obsDomainId).u32(a.obsPointId);
      finish(w, at, 24);
      return;
    }
    case 'note': {
      const at = startNx(w, NXAST.NOTE);
      w.bytes(a.data);
      finish(w, at, 16);
      return;
    }
  }
  const never: never = a;
  throw new OfEncodeError(`unknown action ${JSON.stringify(never)}`);
}

function writeLearnSpec(w: Writer, s: LearnSpec): void {
  checkRef(s.dst, 'learn');
  const bits = refBits(s.dst);
  if (bits > NX_LEARN_N_BITS_MASK) throw new OfEncodeError(`learn: ${bits} bits do not fit a flow_mod_spec`);
  const immediate = 'value' in s;
  w.u16((immediate ? NX_LEARN_SRC_IMMEDIATE : 0) | (s.kind === 'load' ? NX_LEARN_DST_LOAD : 0) | bits);
  if ('value' in s) {
    if (s.value < 0n || s.value >> BigInt(bits) !== 0n) throw new OfEncodeError(`learn: value 0x${s.value.toString(16)} wider than ${bits} bits`);
    // An immediate fills whole 16-bit words, right-aligned.
    w.uint(s.value, 2 * Math.ceil(bits / 16));
  } else {
    checkRef(s.src, 'learn');
    if (refBits(s.src) !== bits) throw new OfEncodeError('learn: source and destination widths differ');
    writeFieldHeader(w, s.src.field, s.src.end, true);
    w.u16(s.src.start);
  }
  writeFieldHeader(w, s.dst.field, s.dst.end, true);
  w.u16(s.dst.start);
}

/** Encodes an action list (no instruction header). */
export function writeActions(w: Writer, actions: readonly OfAction[], depth = 0): void {
  for (const a of actions) writeAction(w, a, depth);
}

export function encodeActions(actions: readonly OfAction[]): Buffer {
  const w = new Writer(128);
  writeActions(w, actions);
  return w.finish();
}

// ---- Decoding --------------------------------------------------------------------------------

function refFrom(s: FieldSpec, start: number, bits: number, what: string): FieldRef {
  const width = s.bytes === 0 ? 124 * 8 : s.bytes * 8;
  if (bits < 1 || start + bits > width) decodeFail('bad_value', `${what}: bits ${start}+${bits} outside ${s.name}`);
  return { field: s.name, start, end: start + bits - 1 };
}

function refFromOfsNbits(s: FieldSpec, v: number, what: string): FieldRef {
  return refFrom(s, v >>> 6, (v & 0x3f) + 1, what);
}

/** A contiguous run of one bits: [start, count], or null. */
function bitRun(mask: bigint): [number, number] | null {
  if (mask <= 0n) return null;
  let start = 0;
  let m = mask;
  while ((m & 1n) === 0n) {
    m >>= 1n;
    start++;
  }
  let n = 0;
  while ((m & 1n) === 1n) {
    m >>= 1n;
    n++;
  }
  return m === 0n ? [start, n] : null;
}

function readSetField(r: Reader): OfAction {
  const e = readOxm(r);
  if (e.hasMask && (e.value & ~e.mask) !== 0n) decodeFail('bad_value', `set_field ${e.spec.name}: value outside mask`);
  if (!e.hasMask) return { kind: 'set_field', field: e.spec.name, value: e.value };
  const run = bitRun(e.mask);
  if (run !== null) {
    return { kind: 'load', dst: { field: e.spec.name, start: run[0], end: run[0] + run[1] - 1 }, value: e.value >> BigInt(run[0]) };
  }
  return { kind: 'set_field', field: e.spec.name, value: e.value, mask: e.mask };
}

function addrText(r: Reader, v6: boolean): string {
  return v6 ? formatIpv6(r.uint(16, 'nat address')) : formatIpv4(BigInt(r.u32('nat address')));
}

function readNat(r: Reader): NatSpec {
  r.skip(2);
  const flags = r.u16('nat flags');
  const present = r.u16('nat range_present');
  if ((flags & NX_NAT_F.SRC) !== 0 && (flags & NX_NAT_F.DST) !== 0) decodeFail('bad_value', 'nat: both src and dst');
  const kind: NatSpec['kind'] = (flags & NX_NAT_F.SRC) !== 0 ? 'src' : (flags & NX_NAT_F.DST) !== 0 ? 'dst' : 'plain';
  const nat: { -readonly [K in keyof NatSpec]: NatSpec[K] } = { kind };
  if ((present & (NX_NAT_RANGE.IPV4_MIN | NX_NAT_RANGE.IPV4_MAX)) !== 0 && (present & (NX_NAT_RANGE.IPV6_MIN | NX_NAT_RANGE.IPV6_MAX)) !== 0) {
    decodeFail('bad_value', 'nat: both IPv4 and IPv6 ranges');
  }
  if ((present & NX_NAT_RANGE.IPV4_MIN) !== 0) nat.addrMin = addrText(r, false);
  if ((present & NX_NAT_RANGE.IPV4_MAX) !== 0) nat.addrMax = addrText(r, false);
  if ((present & NX_NAT_RANGE.IPV6_MIN) !== 0) nat.addrMin = addrText(r, true);
  if ((present & NX_NAT_RANGE.IPV6_MAX) !== 0) nat.addrMax = addrText(r, true);
  if ((present & NX_NAT_RANGE.PROTO_MIN) !== 0) nat.portMin = r.u16('nat port');
  if ((present & NX_NAT_RANGE.PROTO_MAX) !== 0) nat.portMax = r.u16('nat port');
  if ((flags & NX_NAT_F.PERSISTENT) !== 0) nat.persistent = true;
  if ((flags & NX_NAT_F.PROTO_HASH) !== 0) nat.hash = true;
  if ((flags & NX_NAT_F.PROTO_RANDOM) !== 0) nat.random = true;
  return nat;
}

const reasonNames = ['no_match', 'action', 'invalid_ttl'] as const;

function reasonName(v: number): 'no_match' | 'action' | 'invalid_ttl' {
  const n = reasonNames[v];
  if (n === undefined) decodeFail('unsupported', `controller reason ${v}`);
  return n;
}

function readController2(r: Reader): OfAction {
  r.skip(6);
  let userdata: Uint8Array = Buffer.alloc(0);
  const a: { maxLen?: number; controllerId?: number; reason?: 'no_match' | 'action' | 'invalid_ttl'; pause?: boolean; meterId?: number } = {};
  while (r.remaining > 0) {
    const start = r.offset;
    const type = r.u16('property type');
    const len = r.u16('property length');
    if (len < 4) decodeFail('bad_length', `controller property of ${len} bytes`);
    const p = r.sub(len - 4, 'controller property');
    r.alignFrom(start);
    switch (type) {
      case NXAC2PT.MAX_LEN: a.maxLen = p.u16(); break;
      case NXAC2PT.CONTROLLER_ID: a.controllerId = p.u16(); break;
      case NXAC2PT.REASON: a.reason = reasonName(p.u8()); break;
      case NXAC2PT.USERDATA: userdata = Buffer.from(p.bytes(p.remaining)); break;
      case NXAC2PT.PAUSE: a.pause = true; break;
      case NXAC2PT.METER_ID: a.meterId = p.u32(); break;
      default: decodeFail('unsupported', `controller property ${type}`);
    }
  }
  if (a.maxLen === OFPCML_NO_BUFFER) delete a.maxLen;
  if (a.controllerId === 0) delete a.controllerId;
  if (a.reason === 'action') delete a.reason;
  if (a.meterId === NX_CTLR_NO_METER) delete a.meterId;
  return { kind: 'controller', userdata, ...a };
}

function readNx(r: Reader, depth: number): OfAction[] {
  const vendor = r.u32('vendor');
  if (vendor !== NX_VENDOR_ID) decodeFail('unsupported', `experimenter action vendor 0x${vendor.toString(16)}`);
  const subtype = r.u16('subtype');
  switch (subtype) {
    case NXAST.RESUBMIT: {
      const inPort = r.u16();
      return [inPort === OFPP10_IN_PORT ? { kind: 'resubmit', table: 0xff } : { kind: 'resubmit', table: 0xff, inPort }];
    }
    case NXAST.RESUBMIT_TABLE: {
      const inPort = r.u16();
      const table = r.u8();
      return [inPort === OFPP10_IN_PORT ? { kind: 'resubmit', table } : { kind: 'resubmit', table, inPort }];
    }
    case NXAST.REG_MOVE: {
      const bits = r.u16();
      const srcOfs = r.u16();
      const dstOfs = r.u16();
      const src = readFieldHeader(r);
      const dst = readFieldHeader(r);
      return [{ kind: 'move', src: refFrom(src, srcOfs, bits, 'move'), dst: refFrom(dst, dstOfs, bits, 'move') }];
    }
    case NXAST.REG_LOAD: {
      const on = r.u16();
      const dst = refFromOfsNbits(readFieldHeader(r), on, 'load');
      return [{ kind: 'load', dst, value: r.u64() & onesBits(dst.end - dst.start + 1) }];
    }
    case NXAST.REG_LOAD2:
      return [readSetField(r)];
    case NXAST.NOTE:
      return [{ kind: 'note', data: Buffer.from(r.bytes(r.remaining)) }];
    case NXAST.OUTPUT_REG: {
      const on = r.u16();
      return [{ kind: 'output_reg', src: refFromOfsNbits(readFieldHeader(r), on, 'output_reg') }];
    }
    case NXAST.OUTPUT_REG2: {
      const on = r.u16();
      r.u16();
      return [{ kind: 'output_reg', src: refFromOfsNbits(readFieldHeader(r), on, 'output_reg') }];
    }
    case NXAST.EXIT:
      return [{ kind: 'exit' }];
    case NXAST.LEARN:
      return [readLearn(r)];
    case NXAST.DEC_TTL:
      return [{ kind: 'dec_ttl' }];
    case NXAST.DEC_TTL_CNT_IDS: {
      const n = r.u16();
      r.skip(4);
      if (n * 2 > r.remaining) decodeFail('truncated', `dec_ttl with ${n} controller ids in ${r.remaining} bytes`);
      return [{ kind: 'dec_ttl_cnt_ids', controllerIds: Array.from({ length: n }, () => r.u16('controller id')) }];
    }
    case NXAST.CONTROLLER: {
      const maxLen = r.u16();
      const controllerId = r.u16();
      const reason = reasonName(r.u8());
      return [{
        kind: 'controller', userdata: Buffer.alloc(0),
        ...(maxLen !== OFPCML_NO_BUFFER ? { maxLen } : {}), ...(controllerId !== 0 ? { controllerId } : {}), ...(reason !== 'action' ? { reason } : {}),
      }];
    }
    case NXAST.STACK_PUSH:
    case NXAST.STACK_POP: {
      const ofs = r.u16();
      const s = readFieldHeader(r);
      const ref = refFrom(s, ofs, r.u16('n_bits'), 'stack');
      return [subtype === NXAST.STACK_PUSH ? { kind: 'push', src: ref } : { kind: 'pop', dst: ref }];
    }
    case NXAST.CONJUNCTION: {
      const clause = r.u8();
      const nClauses = r.u8();
      const id = r.u32();
      if (nClauses < 2 || nClauses > 64 || clause >= nClauses) decodeFail('bad_value', `conjunction clause ${clause}/${nClauses}`);
      return [{ kind: 'conjunction', id, clause, nClauses }];
    }
    case NXAST.CT: {
      const flags = r.u16();
      const zoneSrc = r.u32();
      const zoneWord = r.u16();
      const table = r.u8();
      r.skip(3);
      const alg = r.u16();
      let zone: FieldRef | number | undefined;
      if (zoneSrc !== 0) {
        const hdr = Buffer.alloc(4);
        hdr.writeUInt32BE(zoneSrc);
        zone = refFromOfsNbits(readFieldHeader(new Reader(hdr)), zoneWord, 'ct zone');
      } else if (zoneWord !== 0) {
        zone = zoneWord;
      }
      let nat: NatSpec | undefined;
      const exec: OfAction[] = [];
      for (const x of readActionList(r, depth + 1, true)) {
        if ('natSpec' in x) nat = x.natSpec;
        else exec.push(x);
      }
      const ct: { -readonly [K in keyof Extract<OfAction, { kind: 'ct' }>]: Extract<OfAction, { kind: 'ct' }>[K] } = { kind: 'ct', commit: (flags & NX_CT_F_COMMIT) !== 0, exec };
      if ((flags & NX_CT_F_FORCE) !== 0) ct.force = true;
      if (zone !== undefined) ct.zone = zone;
      if (table !== NX_CT_RECIRC_NONE) ct.table = table;
      if (alg !== 0) ct.alg = alg;
      if (nat !== undefined) ct.nat = nat;
      return [ct];
    }
    case NXAST.CT_CLEAR:
      return [{ kind: 'ct_clear' }];
    case NXAST.CONTROLLER2:
      return [readController2(r)];
    case NXAST.CLONE: {
      r.skip(6);
      return [{ kind: 'clone', actions: readActionList(r, depth + 1, false) as OfAction[] }];
    }
    case NXAST.BUNDLE: {
      const algorithm = r.u16();
      r.u16();
      r.u16();
      const memberType = r.u32();
      const n = r.u16();
      r.u16();
      r.u32();
      r.skip(4);
      if (algorithm !== NX_BD_ALG_ACTIVE_BACKUP || memberType !== NXM_OF_IN_PORT) return decodeFail('unsupported', `bundle algorithm ${algorithm} over member type 0x${memberType.toString(16)}`);
      return [{ kind: 'bundle_active_backup', members: Array.from({ length: n }, () => r.u16('bundle member')) }];
    }
    case NXAST.SAMPLE: {
      const probability = r.u16();
      return [{ kind: 'sample', probability, collectorSetId: r.u32(), obsDomainId: r.u32(), obsPointId: r.u32() }];
    }
    case NXAST.CHECK_PKT_LARGER: {
      const pktLen = r.u16();
      const ofs = r.u16();
      const s = readFieldHeader(r);
      return [{ kind: 'check_pkt_larger', pktLen, dst: refFrom(s, ofs, 1, 'check_pkt_larger') }];
    }
  }
  return decodeFail('unsupported', `Nicira action subtype ${subtype}`);
}

function readLearn(r: Reader): OfAction {
  const idleTimeout = r.u16();
  const hardTimeout = r.u16();
  const priority = r.u16();
  const cookie = r.u64();
  const flags = r.u16();
  const table = r.u8();
  r.skip(1);
  const finIdleTimeout = r.u16();
  const finHardTimeout = r.u16();
  if ((flags & ~(NX_LEARN_F.SEND_FLOW_REM | NX_LEARN_F.DELETE_LEARNED)) !== 0) decodeFail('unsupported', `learn flags 0x${flags.toString(16)}`);
  const specs: LearnSpec[] = [];
  while (r.remaining >= 2) {
    const header = r.u16('flow_mod_spec');
    if (header === 0) break;
    const bits = header & NX_LEARN_N_BITS_MASK;
    const dstKind = header & NX_LEARN_DST_MASK;
    if (dstKind !== 0 && dstKind !== NX_LEARN_DST_LOAD) decodeFail('unsupported', 'learn: only match and load specs are read');
    if ((header & ~(NX_LEARN_SRC_IMMEDIATE | NX_LEARN_DST_MASK | NX_LEARN_N_BITS_MASK)) !== 0 || bits === 0) decodeFail('bad_value', `learn spec header 0x${header.toString(16)}`);
    let value: bigint | undefined;
    let src: FieldRef | undefined;
    if ((header & NX_LEARN_SRC_IMMEDIATE) !== 0) {
      value = r.uint(2 * Math.ceil(bits / 16), 'learn immediate') & onesBits(bits);
    } else {
      const s = readFieldHeader(r);
      src = refFrom(s, r.u16('learn src ofs'), bits, 'learn');
    }
    const d = readFieldHeader(r);
    const dst = refFrom(d, r.u16('learn dst ofs'), bits, 'learn');
    const kind = dstKind === NX_LEARN_DST_LOAD ? 'load' : 'match';
    specs.push(value !== undefined ? { kind, dst, value } : { kind, dst, src: src as FieldRef });
  }
  const a: { -readonly [K in keyof Extract<OfAction, { kind: 'learn' }>]: Extract<OfAction, { kind: 'learn' }>[K] } = { kind: 'learn', table, priority, cookie, specs };
  if (idleTimeout !== 0) a.idleTimeout = idleTimeout;
  if (hardTimeout !== 0) a.hardTimeout = hardTimeout;
  if (finIdleTimeout !== 0) a.finIdleTimeout = finIdleTimeout;
  if (finHardTimeout !== 0) a.finHardTimeout = finHardTimeout;
  if ((flags & NX_LEARN_F.SEND_FLOW_REM) !== 0) a.sendFlowRem = true;
  if ((flags & NX_LEARN_F.DELETE_LEARNED) !== 0) a.deleteLearned = true;
  return a;
}

type Decoded = OfAction | { readonly natSpec: NatSpec };

function readOne(r: Reader, type: number, depth: number, inCt: boolean): Decoded[] {
  switch (type) {
    case OFPAT.OUTPUT: {
      const port = r.u32();
      return [{ kind: 'output', port }];
    }
    case OFPAT.GROUP:
      return [{ kind: 'group', groupId: r.u32() }];
    case OFPAT.METER:
      return [{ kind: 'meter', meterId: r.u32() }];
    case OFPAT.PUSH_VLAN:
      return [{ kind: 'push_vlan', ethertype: r.u16() }];
    case OFPAT.POP_VLAN:
      return [{ kind: 'pop_vlan' }];
    case OFPAT.DEC_NW_TTL:
      return [{ kind: 'dec_ttl' }];
    case OFPAT.SET_NW_TTL:
      return [{ kind: 'set_nw_ttl', ttl: r.u8() }];
    case OFPAT.SET_FIELD:
      return [readSetField(r)];
    case OFPAT.COPY_FIELD: {
      const bits = r.u16();
      const srcOfs = r.u16();
      const dstOfs = r.u16();
      r.skip(2);
      const src = readFieldHeader(r);
      const dst = readFieldHeader(r);
      return [{ kind: 'move', src: refFrom(src, srcOfs, bits, 'copy_field'), dst: refFrom(dst, dstOfs, bits, 'copy_field') }];
    }
    case OFPAT.EXPERIMENTER: {
      if (inCt && r.remaining >= 6 && r.buf.readUInt32BE(r.offset) === NX_VENDOR_ID && r.buf.readUInt16BE(r.offset + 4) === NXAST.NAT) {
        r.skip(6);
        return [{ natSpec: readNat(r) }];
      }
      return readNx(r, depth);
    }
  }
  return decodeFail('unsupported', `action type ${type}`);
}

function readActionList(r: Reader, depth: number, inCt: boolean): Decoded[] {
  if (depth > ACTION_NESTING_MAX) decodeFail('too_large', `actions nested deeper than ${ACTION_NESTING_MAX}`);
  const out: Decoded[] = [];
  while (r.remaining > 0) {
    const type = r.u16('action type');
    const len = r.u16('action length');
    if (len < 8 || len % 8 !== 0) decodeFail('bad_length', `action type ${type} with length ${len}`);
    const body = r.sub(len - 4, `action type ${type}`);
    out.push(...readOne(body, type, depth, inCt));
  }
  return out;
}

/** Decodes an action list that fills 'r'. */
export function readActions(r: Reader): OfAction[] {
  return readActionList(r, 0, false) as OfAction[];
}

export function decodeActions(buf: Buffer): OfAction[] {
  return readActions(new Reader(buf));
}
