// A packet-in's pipeline metadata (NXPINT_METADATA): what the handlers read from it (the
// logical datapath in `metadata`, the logical ports in reg14/reg15, the arguments the actions
// left in reg0/xxreg0), the set_field actions that reload it into a packet-out (ovn-controller's
// reload_metadata), and the one-bit result a paused action writes into it before the resume.
//
// Open vSwitch reports registers either as 32-bit regN (NXM) or, in OpenFlow 1.5, as the 64-bit
// packet registers xregN (reg2N in the high half, reg2N+1 in the low half); both are read here.
// A register that is absent or fully wildcarded is zero.

import assert from 'node:assert/strict';
import type { MaskedValue, OfAction } from '../openflow/types.js';

export type PacketInMetadata = ReadonlyMap<string, MaskedValue>;

/** How many 32-bit registers the logical pipeline uses (reg0..reg15 = xxreg0..xxreg3). */
export const LOGICAL_REGS_N = 16;

const M32 = 0xffffffffn;

/** reg N (0..15) as the packet-in reported it: its value and which bits the switch set. */
export function regOf(md: PacketInMetadata, n: number): MaskedValue {
  const r = md.get(`reg${n}`);
  if (r !== undefined) return { value: r.value & r.mask & M32, mask: r.mask & M32 };
  const x = md.get(`xreg${n >> 1}`);
  if (x === undefined) return { value: 0n, mask: 0n };
  const shift = n % 2 === 0 ? 32n : 0n;
  return { value: ((x.value & x.mask) >> shift) & M32, mask: (x.mask >> shift) & M32 };
}

export function readReg(md: PacketInMetadata, n: number): number {
  return Number(regOf(md, n).value);
}

/** xxreg N: reg 4N is its most significant word, reg 4N+3 its least. */
export function readXxreg(md: PacketInMetadata, n: number): bigint {
  let v = 0n;
  for (let i = 0; i < 4; i++) v = (v << 32n) | regOf(md, 4 * n + i).value;
  return v;
}

/** The logical datapath's tunnel key (OpenFlow metadata; ovn-controller reads its low 32 bits). */
export function readDatapathKey(md: PacketInMetadata): number {
  const m = md.get('metadata');
  return m === undefined ? 0 : Number(m.value & m.mask & M32);
}

/** set_field actions that give a generated packet the pipeline state of the packet-in: every
 *  register reg0..reg15 and the metadata the switch reported (reload_metadata in pinctrl.c). */
export function reloadActions(md: PacketInMetadata): OfAction[] {
  const out: OfAction[] = [];
  for (let n = 0; n < LOGICAL_REGS_N; n++) {
    const r = regOf(md, n);
    if (r.mask !== 0n) out.push({ kind: 'set_field', field: `reg${n}`, value: r.value });
  }
  const m = md.get('metadata');
  if (m !== undefined && m.mask !== 0n) out.push({ kind: 'set_field', field: 'metadata', value: m.value & m.mask });
  return out;
}

/** A one-bit destination a paused action names in its userdata (an NXM/OXM header and an offset). */
export interface ResultBit {
  readonly field: string;
  readonly ofs: number;
}

/**
 * Reads the 4-byte field header and the 32-bit bit offset at the start of a paused action's
 * arguments (put_dhcp_opts, dns_lookup, put_nd_ra_opts, put_dhcpv6_opts). Only the fields OVN's
 * compiler uses as results are accepted: reg0..15 (NXM class 1), xxreg0..3 (NXM class 1, fields
 * 111..114) and xreg0..7 (OXM packet-register class 0x8001).
 */
export function parseResultBit(args: Uint8Array): { bit: ResultBit; rest: Buffer } | { error: string } {
  if (args.length < 8) return { error: `a result field needs 8 bytes of userdata, got ${args.length}` };
  const b = Buffer.from(args.buffer, args.byteOffset, args.length);
  const cls = b.readUInt16BE(0);
  const field = b[2] as number >> 1;
  const hasMask = ((b[2] as number) & 1) === 1;
  const len = b[3] as number;
  const ofs = b.readUInt32BE(4);
  if (hasMask) return { error: 'a result field header with a mask' };
  let name: string | undefined;
  let width = 0;
  if (cls === 0x0001 && field <= 15 && len === 4) {
    name = `reg${field}`;
    width = 32;
  } else if (cls === 0x0001 && field >= 111 && field <= 114 && len === 16) {
    name = `xxreg${field - 111}`;
    width = 128;
  } else if (cls === 0x8001 && field <= 7 && len === 8) {
    name = `xreg${field}`;
    width = 64;
  }
  if (name === undefined) return { error: `result field class 0x${cls.toString(16)} field ${field} length ${len} is not a register` };
  if (ofs >= width) return { error: `result bit ${ofs} is outside the ${width}-bit ${name}` };
  return { bit: { field: name, ofs }, rest: Buffer.from(b.subarray(8)) };
}

/** The 32-bit register and the bit within it that a result bit names. */
function regBit(bit: ResultBit): { reg: number; bit: number } {
  const m = /^(x{0,2})reg([0-9]+)$/.exec(bit.field);
  assert(m !== null, `not a register: ${bit.field}`);
  const n = Number(m[2]);
  const words = m[1] === 'xx' ? 4 : m[1] === 'x' ? 2 : 1;
  const word = Math.floor(bit.ofs / 32);
  return { reg: n * words + (words - 1 - word), bit: bit.ofs % 32 };
}

/** A copy of 'md' with the result bit set to 'value', in whichever spelling the switch used. */
export function writeResultBit(md: PacketInMetadata, bit: ResultBit, value: boolean): Map<string, MaskedValue> {
  const out = new Map(md);
  const { reg, bit: b } = regBit(bit);
  const put = (name: string, pos: bigint): void => {
    const old = out.get(name) ?? { value: 0n, mask: 0n };
    const one = 1n << pos;
    out.set(name, { value: value ? old.value | one : old.value & ~one, mask: old.mask | one });
  };
  // Into the field the packet-in carries the register in. One it lacks is added as the 64-bit
  // register holding it, unless the packet-in names the other half of that one as a 32-bit
  // register: then as itself, since naming a bit twice makes Open vSwitch refuse the resume
  // (OFPBMC_DUP_FIELD).
  const xreg = `xreg${reg >> 1}`;
  if (out.has(`reg${reg}`) || (!out.has(xreg) && out.has(`reg${reg ^ 1}`))) put(`reg${reg}`, BigInt(b));
  else put(xreg, BigInt(b + (reg % 2 === 0 ? 32 : 0)));
  return out;
}
