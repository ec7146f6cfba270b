// OpenFlow 1.5 messages ↔ bytes: the header (version 0x06, type, length, xid) and the bodies the
// agent uses. Each message is a tagged value ({ kind: 'flow_mod', ... }); decodeMessage turns any
// well-framed message into one (kind 'unknown' for types we do not interpret) or throws
// OfDecodeError, and encodeMessage is its inverse for the kinds we send.

import { readActions, writeActions } from './actions.js';
import { NX_VENDOR_ID, OfEncodeError, fieldSpec, readMatch, readOxmList, writeMatch, writeOxm } from './fields.js';
import type { GroupSpec, MaskedValue, MeterBand, MeterSpec, OfAction } from './types.js';
import { Reader, Writer, decodeFail, tryDecode } from './wire.js';

export const OFP_VERSION = 0x06;
export const OFP_HEADER_BYTES = 8;
/** OpenFlow's length field is 16 bits: no message is longer. */
export const OFP_MESSAGE_BYTES_MAX = 0xffff;

export const OFPT = {
  HELLO: 0, ERROR: 1, ECHO_REQUEST: 2, ECHO_REPLY: 3, EXPERIMENTER: 4, FEATURES_REQUEST: 5, FEATURES_REPLY: 6,
  SET_CONFIG: 9, PACKET_IN: 10, FLOW_REMOVED: 11, PORT_STATUS: 12, PACKET_OUT: 13, FLOW_MOD: 14, GROUP_MOD: 15,
  MULTIPART_REQUEST: 18, MULTIPART_REPLY: 19, BARRIER_REQUEST: 20, BARRIER_REPLY: 21, METER_MOD: 29,
  BUNDLE_CONTROL: 33, BUNDLE_ADD_MESSAGE: 34,
} as const;

export const NXT = { SET_PACKET_IN_FORMAT: 16, TLV_TABLE_MOD: 24, TLV_TABLE_REQUEST: 25, TLV_TABLE_REPLY: 26, RESUME: 28, PACKET_IN2: 30 } as const;
export const NXPIF = { STANDARD: 0, NXT_PACKET_IN: 1, NXT_PACKET_IN2: 2 } as const;
const NXPINT = { PACKET: 0, FULL_LEN: 1, BUFFER_ID: 2, TABLE_ID: 3, COOKIE: 4, REASON: 5, METADATA: 6, USERDATA: 7, CONTINUATION: 8 } as const;
const OFPMP_FLOW_DESC = 1;
const OFPMP_GROUP_DESC = 7;
const OFPMP_METER_CONFIG = 10;
/** A meter band as OpenFlow 1.3+ lays it out: type, len, rate, burst_size, then 4 bytes (the
 *  precedence level of a dscp_remark band, else padding). Every band type is this long. */
const METER_BAND_BYTES = 16;
const meterBandTypes = { drop: 1, dscp_remark: 2 } as const;
/** OFPM13_ALL: every meter (in a delete or a request). */
export const OFPM_ALL = 0xffffffff;const OFPMPF_MORE = 1;
const OFPHET_VERSIONBITMAP = 1;
export const OFPTT_ALL = 0xff;
export const OFPG_ANY = 0xffffffff;
export const OFPG_ALL = 0xfffffffc;
export const OFP_NO_BUFFER = 0xffffffff;
const OFPG15_BUCKET_ALL = 0xffffffff;
const OFPGBPT15_WEIGHT = 0;
const OFPGBPT15_WATCH_PORT = 1;
/** OFPP_ANY as an OpenFlow 1.1+ port number: a bucket that watches no port. */
const OFPP11_ANY = 0xffffffff;
const OFPGPT15_EXPERIMENTER = 0xffff;
const NTR_VENDOR_ID = 0x0000154d;
const NTRT_SELECTION_METHOD = 1;
const NTR_SELECTION_METHOD_BYTES = 16;
const OXS_CLASS_BASIC = 0x8002;
const OXS = { DURATION: 0, IDLE_TIME: 1, FLOW_COUNT: 3, PACKET_COUNT: 4, BYTE_COUNT: 5 } as const;
const OFPIT = { GOTO_TABLE: 1, WRITE_METADATA: 2, APPLY_ACTIONS: 4 } as const;

export const flowModCommands = ['add', 'modify', 'modify_strict', 'delete', 'delete_strict'] as const;
export type FlowModCommand = (typeof flowModCommands)[number];

export const OFPFF = { SEND_FLOW_REM: 1, CHECK_OVERLAP: 2, RESET_COUNTS: 4, NO_PKT_COUNTS: 8, NO_BYT_COUNTS: 16 } as const;

export interface FlowMod {
  readonly command: FlowModCommand;
  readonly table: number;
  readonly priority: number;
  readonly match: ReadonlyMap<string, MaskedValue>;
  readonly actions: readonly OfAction[];
  readonly cookie: bigint;
  /** For modify/delete: only flows whose cookie matches cookie under this mask; 0 = any. */
  readonly cookieMask?: bigint;
  readonly idleTimeout?: number;
  readonly hardTimeout?: number;
  /** OFPFF_* bits. */
  readonly flags?: number;
  readonly importance?: number;
  /** For delete: only flows that output to this port / group. */
  readonly outPort?: number;
  readonly outGroup?: number;
  readonly writeMetadata?: MaskedValue;
  readonly gotoTable?: number;
}

/** One installed flow, from a flow-desc multipart reply. */
export interface FlowStats {
  readonly table: number;
  readonly priority: number;
  readonly idleTimeout: number;
  readonly hardTimeout: number;
  readonly flags: number;
  readonly importance: number;
  readonly cookie: bigint;
  readonly match: ReadonlyMap<string, MaskedValue>;
  readonly durationSec?: number;
  readonly durationNsec?: number;
  readonly idleAgeSec?: number;
  readonly packetCount?: bigint;
  readonly byteCount?: bigint;
  /** The apply-actions, or an error text when an action is one this codec does not know. */
  readonly actions: readonly OfAction[] | { readonly undecodable: string };
  /** The raw apply-actions bytes (empty for a drop flow). */
  readonly actionBytes: Buffer;
  readonly writeMetadata?: MaskedValue;
  readonly gotoTable?: number;
}

export const groupModCommands = ['add', 'modify', 'delete'] as const;
export type GroupModCommand = (typeof groupModCommands)[number];
const groupTypes = ['all', 'select', 'indirect', 'ff'] as const;

export interface GroupMod {
  readonly command: GroupModCommand;
  /** For delete only groupId matters (OFPG_ALL deletes every group). */
  readonly group: GroupSpec;
}

export const meterModCommands = ['add', 'modify', 'delete'] as const;
export type MeterModCommand = (typeof meterModCommands)[number];

export interface MeterMod {
  readonly command: MeterModCommand;
  /** For delete only meterId matters (OFPM_ALL deletes every meter); flags and bands go out as
   *  zero and none. */
  readonly meter: MeterSpec;
}

export const bundleCtrlTypes = [
  'open_request', 'open_reply', 'close_request', 'close_reply', 'commit_request', 'commit_reply', 'discard_request', 'discard_reply',
] as const;
export type BundleCtrlType = (typeof bundleCtrlTypes)[number];
export const OFPBF = { ATOMIC: 1, ORDERED: 2 } as const;

export interface TlvMapping {
  readonly optClass: number;
  readonly optType: number;
  /** Option length in bytes, a multiple of 4 up to 124. */
  readonly optLen: number;
  /** N of tun_metadataN. */
  readonly index: number;
}

export const tlvTableCommands = ['add', 'delete', 'clear'] as const;

export interface PacketIn2 {
  readonly packet: Buffer;
  readonly fullLen?: number;
  readonly bufferId?: number;
  readonly table?: number;
  readonly cookie?: bigint;
  readonly reason?: number;
  readonly metadata?: ReadonlyMap<string, MaskedValue>;
  readonly userdata?: Buffer;
  /** Opaque state Open vSwitch needs to resume a paused pipeline (NXT_RESUME). */
  readonly continuation?: Buffer;
}

export type OfMessage =
  | { readonly kind: 'hello'; readonly versions: readonly number[] }
  | { readonly kind: 'error'; readonly errType: number; readonly code: number; readonly experimenter?: number; readonly data: Buffer }
  | { readonly kind: 'echo_request'; readonly data: Buffer }
  | { readonly kind: 'echo_reply'; readonly data: Buffer }
  | { readonly kind: 'features_request' }
  | {
      readonly kind: 'features_reply'; readonly datapathId: bigint; readonly nBuffers: number; readonly nTables: number;
      readonly auxiliaryId: number; readonly capabilities: number;
    }
  | { readonly kind: 'barrier_request' }
  | { readonly kind: 'barrier_reply' }
  | { readonly kind: 'flow_mod'; readonly mod: FlowMod }
  | { readonly kind: 'group_mod'; readonly mod: GroupMod }
  | { readonly kind: 'bundle_control'; readonly bundleId: number; readonly ctrl: BundleCtrlType; readonly flags: number }
  /** The inner message travels with the outer message's xid, as OpenFlow requires. */
  | { readonly kind: 'bundle_add'; readonly bundleId: number; readonly flags: number; readonly message: OfMessage }
  | {
      readonly kind: 'flow_stats_request'; readonly table: number; readonly outPort: number; readonly outGroup: number;
      readonly cookie: bigint; readonly cookieMask: bigint; readonly match: ReadonlyMap<string, MaskedValue>;
    }
  | { readonly kind: 'flow_stats_reply'; readonly more: boolean; readonly flows: readonly FlowStats[] }
  /** OFPMP_GROUP_DESC: the installed groups (OFPG_ALL for every group). */
  | { readonly kind: 'group_desc_request'; readonly groupId: number }
  | { readonly kind: 'group_desc_reply'; readonly more: boolean; readonly groups: readonly GroupSpec[] }
  /** OFPT_METER_MOD. Not a bundle message in Open vSwitch: it takes effect on its own. */
  | { readonly kind: 'meter_mod'; readonly mod: MeterMod }
  /** OFPMP_METER_CONFIG: the installed meters (OFPM_ALL for every meter). */
  | { readonly kind: 'meter_config_request'; readonly meterId: number }
  | { readonly kind: 'meter_config_reply'; readonly more: boolean; readonly meters: readonly MeterSpec[] }
  | { readonly kind: 'multipart_reply'; readonly mpType: number; readonly more: boolean; readonly body: Buffer }
  | {
      readonly kind: 'packet_in'; readonly bufferId: number; readonly totalLen: number; readonly reason: number;
      readonly table: number; readonly cookie: bigint; readonly match: ReadonlyMap<string, MaskedValue>; readonly data: Buffer;
    }
  | ({ readonly kind: 'packet_in2' } & PacketIn2)
  | ({ readonly kind: 'resume' } & PacketIn2)
  | { readonly kind: 'packet_out'; readonly bufferId: number; readonly inPort: number; readonly actions: readonly OfAction[]; readonly data: Buffer }
  | { readonly kind: 'set_packet_in_format'; readonly format: number }
  /** OFPT_SET_CONFIG: a service connection (the bridge's mgmt socket) gets packet-ins only once
   *  it sets a nonzero miss_send_len. */
  | { readonly kind: 'set_config'; readonly flags: number; readonly missSendLen: number }
  | { readonly kind: 'tlv_table_mod'; readonly command: (typeof tlvTableCommands)[number]; readonly mappings: readonly TlvMapping[] }
  | { readonly kind: 'tlv_table_request' }
  | { readonly kind: 'tlv_table_reply'; readonly maxOptionSpace: number; readonly maxFields: number; readonly mappings: readonly TlvMapping[] }
  | { readonly kind: 'experimenter'; readonly experimenter: number; readonly expType: number; readonly data: Buffer }
  | { readonly kind: 'unknown'; readonly ofType: number; readonly body: Buffer };

export type OfMessageKind = OfMessage['kind'];

// ---- Encoding --------------------------------------------------------------------------------

function startMessage(w: Writer, type: number, xid: number): number {
  const at = w.length;
  w.u8(OFP_VERSION).u8(type).u16(0).u32(xid);
  return at;
}

function finishMessage(w: Writer, at: number): void {
  const len = w.length - at;
  if (len > OFP_MESSAGE_BYTES_MAX) throw new OfEncodeError(`message of ${len} bytes exceeds OpenFlow's ${OFP_MESSAGE_BYTES_MAX}`);
  w.patchU16(at + 2, len);
}

function startNxt(w: Writer, subtype: number, xid: number): number {
  const at = startMessage(w, OFPT.EXPERIMENTER, xid);
  w.u32(NX_VENDOR_ID).u32(subtype);
  return at;
}

function writeProp(w: Writer, type: number, payload: (w: Writer) => void): void {
  const at = w.length;
  w.u16(type).u16(0);
  payload(w);
  w.patchU16(at + 2, w.length - at);
  w.padFrom(at);
}

function writeInstructions(w: Writer, m: { readonly actions: readonly OfAction[]; readonly writeMetadata?: MaskedValue; readonly gotoTable?: number }): void {
  const real = m.actions.filter((a) => a.kind !== 'drop');
  if (real.length > 0) {
    const at = w.length;
    w.u16(OFPIT.APPLY_ACTIONS).u16(0).zeros(4);
    writeActions(w, real);
    w.patchU16(at + 2, w.length - at);
  }
  if (m.writeMetadata !== undefined) w.u16(OFPIT.WRITE_METADATA).u16(24).zeros(4).u64(m.writeMetadata.value).u64(m.writeMetadata.mask);
  if (m.gotoTable !== undefined) w.u16(OFPIT.GOTO_TABLE).u16(8).u8(m.gotoTable).zeros(3);
}

function writeFlowMod(w: Writer, m: FlowMod): void {
  w.u64(m.cookie).u64(m.cookieMask ?? 0n).u8(m.table).u8(flowModCommands.indexOf(m.command));
  w.u16(m.idleTimeout ?? 0).u16(m.hardTimeout ?? 0).u16(m.priority).u32(OFP_NO_BUFFER);
  w.u32(m.outPort ?? 0xffffffff).u32(m.outGroup ?? OFPG_ANY).u16(m.flags ?? 0).u16(m.importance ?? 0);
  writeMatch(w, m.match);
  writeInstructions(w, m);
}

/** Buckets then group properties (OF1.5 group_mod and group desc share them); patches the
 *  bucket array length at 'lenAt'. */
function writeGroupBody(w: Writer, g: GroupSpec, lenAt: number, withBuckets: boolean): void {
  const bucketsAt = w.length;
  if (withBuckets) {
    g.buckets.forEach((b, i) => {
      const at = w.length;
      w.u16(0).u16(0).u32(i);
      writeActions(w, b.actions.filter((a) => a.kind !== 'drop'));
      w.patchU16(at + 2, w.length - at - 8);
      if (g.type === 'select' && b.weight !== undefined) w.u16(OFPGBPT15_WEIGHT).u16(8).u16(b.weight).zeros(2);
      if (b.watchPort !== undefined) w.u16(OFPGBPT15_WATCH_PORT).u16(8).u32(b.watchPort);
      w.patchU16(at, w.length - at);
    });
  }
  w.patchU16(lenAt, w.length - bucketsAt);
  if (withBuckets && g.selectionMethod === undefined && g.selectionMethodParam !== undefined) {
    // Open vSwitch refuses a parameter without a method; so does the encoder, rather than drop it.
    throw new OfEncodeError(`group ${g.groupId}: selection_method_param without a selection_method`);
  }
  if (withBuckets && g.selectionMethod !== undefined) {
    const at = w.length;
    w.u16(OFPGPT15_EXPERIMENTER).u16(0).u32(NTR_VENDOR_ID).u32(NTRT_SELECTION_METHOD).zeros(4);
    const name = Buffer.from(g.selectionMethod, 'ascii');
    w.bytes(name).zeros(NTR_SELECTION_METHOD_BYTES - name.length).u64(g.selectionMethodParam ?? 0n);
    for (const f of g.fields ?? []) {
      const s = fieldSpec(f);
      if (s === undefined || s.bytes === 0) throw new OfEncodeError(`group selection field ${f} unknown`);
      // The value of each field is the mask applied before hashing: all of it.
      writeOxm(w, f, { value: s.full, mask: s.full });
    }
    w.patchU16(at + 2, w.length - at);
    w.padFrom(at);
  }
}

function groupTypeNumber(g: GroupSpec): number {
  const type = groupTypes.indexOf(g.type);
  return type < 0 ? 0 : type;
}

function writeGroupMod(w: Writer, m: GroupMod): void {
  const g = m.group;
  w.u16(groupModCommands.indexOf(m.command)).u8(groupTypeNumber(g)).u8(0).u32(g.groupId);
  const lenAt = w.length;
  w.u16(0).zeros(2).u32(OFPG15_BUCKET_ALL);
  writeGroupBody(w, g, lenAt, m.command !== 'delete');
}

function writeGroupDesc(w: Writer, g: GroupSpec): void {
  const at = w.length;
  w.u16(0).u8(groupTypeNumber(g)).u8(0).u32(g.groupId);
  const lenAt = w.length;
  w.u16(0).zeros(6);
  writeGroupBody(w, g, lenAt, true);
  w.patchU16(at, w.length - at);
}

function writeMeterBands(w: Writer, bands: readonly MeterBand[]): void {
  for (const b of bands) {
    w.u16(meterBandTypes[b.type]).u16(METER_BAND_BYTES).u32(b.rate).u32(b.burstSize).u8(b.precLevel ?? 0).zeros(3);
  }
}

function writeMeterMod(w: Writer, m: MeterMod): void {
  const del = m.command === 'delete';
  w.u16(meterModCommands.indexOf(m.command)).u16(del ? 0 : m.meter.flags).u32(m.meter.meterId);
  if (!del) writeMeterBands(w, m.meter.bands);
}

function writeTlvMaps(w: Writer, maps: readonly TlvMapping[]): void {
  for (const m of maps) w.u16(m.optClass).u8(m.optType).u8(m.optLen).u16(m.index).zeros(2);
}

function writePacketIn2Props(w: Writer, p: PacketIn2): void {
  writeProp(w, NXPINT.PACKET, (x) => x.bytes(p.packet));
  if (p.fullLen !== undefined) writeProp(w, NXPINT.FULL_LEN, (x) => x.u32(p.fullLen as number));
  if (p.bufferId !== undefined) writeProp(w, NXPINT.BUFFER_ID, (x) => x.u32(p.bufferId as number));
  if (p.table !== undefined) writeProp(w, NXPINT.TABLE_ID, (x) => x.u8(p.table as number));
  if (p.cookie !== undefined) writeProp(w, NXPINT.COOKIE, (x) => x.u64(p.cookie as bigint));
  if (p.reason !== undefined) writeProp(w, NXPINT.REASON, (x) => x.u8(p.reason as number));
  if (p.metadata !== undefined) {
    const md = p.metadata;
    writeProp(w, NXPINT.METADATA, (x) => {
      for (const [name, v] of md) if (v.mask !== 0n) writeOxm(x, name, v);
    });
  }
  if (p.userdata !== undefined) writeProp(w, NXPINT.USERDATA, (x) => x.bytes(p.userdata as Buffer));
  if (p.continuation !== undefined) writeProp(w, NXPINT.CONTINUATION, (x) => x.bytes(p.continuation as Buffer));
}

/** Appends one message to 'w' (so many messages can share one buffer). */
export function writeMessage(w: Writer, msg: OfMessage, xid: number): void {
  let at: number;
  switch (msg.kind) {
    case 'hello':
      at = startMessage(w, OFPT.HELLO, xid);
      if (msg.versions.length > 0) {
        const max = Math.max(...msg.versions);
        const words = Math.floor(max / 32) + 1;
        const bitmap = new Array<number>(words).fill(0);
        for (const v of msg.versions) bitmap[Math.floor(v / 32)] = ((bitmap[Math.floor(v / 32)] ?? 0) | (1 << (v % 32))) >>> 0;
        const el = w.length;
        w.u16(OFPHET_VERSIONBITMAP).u16(4 + 4 * words);
        for (const b of bitmap) w.u32(b);
        w.padFrom(el);
      }
      break;
    case 'error':
      at = startMessage(w, OFPT.ERROR, xid);
      if (msg.experimenter !== undefined) w.u16(0xffff).u16(msg.code).u32(msg.experimenter);
      else w.u16(msg.errType).u16(msg.code);
      w.bytes(msg.data);
      break;
    case 'echo_request':
    case 'echo_reply':
      at = startMessage(w, msg.kind === 'echo_request' ? OFPT.ECHO_REQUEST : OFPT.ECHO_REPLY, xid);
      w.bytes(msg.data);
      break;
    case 'features_request':
      at = startMessage(w, OFPT.FEATURES_REQUEST, xid);
      break;
    case 'features_reply':
      at = startMessage(w, OFPT.FEATURES_REPLY, xid);
      w.u64(msg.datapathId).u32(msg.nBuffers).u8(msg.nTables).u8(msg.auxiliaryId).zeros(2).u32(msg.capabilities).u32(0);
      break;
    case 'barrier_request':
    case 'barrier_reply':
      at = startMessage(w, msg.kind === 'barrier_request' ? OFPT.BARRIER_REQUEST : OFPT.BARRIER_REPLY, xid);
      break;
    case 'flow_mod':
      at = startMessage(w, OFPT.FLOW_MOD, xid);
      writeFlowMod(w, msg.mod);
      break;
    case 'group_mod':
      at = startMessage(w, OFPT.GROUP_MOD, xid);
      writeGroupMod(w, msg.mod);
      break;
    case 'bundle_control':
      at = startMessage(w, OFPT.BUNDLE_CONTROL, xid);
      w.u32(msg.bundleId).u16(bundleCtrlTypes.indexOf(msg.ctrl)).u16(msg.flags);
      break;
    case 'bundle_add':
      at = startMessage(w, OFPT.BUNDLE_ADD_MESSAGE, xid);
      w.u32(msg.bundleId).zeros(2).u16(msg.flags);
      writeMessage(w, msg.message, xid);
      break;
    case 'flow_stats_request':
      at = startMessage(w, OFPT.MULTIPART_REQUEST, xid);
      w.u16(OFPMP_FLOW_DESC).u16(0).zeros(4);
      w.u8(msg.table).zeros(3).u32(msg.outPort).u32(msg.outGroup).zeros(4).u64(msg.cookie).u64(msg.cookieMask);
      writeMatch(w, msg.match);
      break;
    case 'flow_stats_reply':
      at = startMessage(w, OFPT.MULTIPART_REPLY, xid);
      w.u16(OFPMP_FLOW_DESC).u16(msg.more ? OFPMPF_MORE : 0).zeros(4);
      for (const fs of msg.flows) writeFlowStats(w, fs);
      break;
    case 'group_desc_request':
      at = startMessage(w, OFPT.MULTIPART_REQUEST, xid);
      w.u16(OFPMP_GROUP_DESC).u16(0).zeros(4).u32(msg.groupId).zeros(4);
      break;
    case 'group_desc_reply':
      at = startMessage(w, OFPT.MULTIPART_REPLY, xid);
      w.u16(OFPMP_GROUP_DESC).u16(msg.more ? OFPMPF_MORE : 0).zeros(4);
      for (const g of msg.groups) writeGroupDesc(w, g);
      break;
    case 'meter_mod':
      at = startMessage(w, OFPT.METER_MOD, xid);
      writeMeterMod(w, msg.mod);
      break;
    case 'meter_config_request':
      at = startMessage(w, OFPT.MULTIPART_REQUEST, xid);
      w.u16(OFPMP_METER_CONFIG).u16(0).zeros(4).u32(msg.meterId).zeros(4);
      break;
    case 'meter_config_reply':
      at = startMessage(w, OFPT.MULTIPART_REPLY, xid);
      w.u16(OFPMP_METER_CONFIG).u16(msg.more ? OFPMPF_MORE : 0).zeros(4);
      for (const m of msg.meters) {
        w.u16(8 + METER_BAND_BYTES * m.bands.length).u16(m.flags).u32(m.meterId);
        writeMeterBands(w, m.bands);
      }
      break;
    case 'multipart_reply':
      at = startMessage(w, OFPT.MULTIPART_REPLY, xid);
      w.u16(msg.mpType).u16(msg.more ? OFPMPF_MORE : 0).zeros(4).bytes(msg.body);
      break;
    case 'packet_in':
      at = startMessage(w, OFPT.PACKET_IN, xid);
      w.u32(msg.bufferId).u16(msg.totalLen).u8(msg.reason).u8(msg.table).u64(msg.cookie);
      writeMatch(w, msg.match);
      w.zeros(2).bytes(msg.data);
      break;
    case 'packet_in2':
    case 'resume':
      at = startNxt(w, msg.kind === 'packet_in2' ? NXT.PACKET_IN2 : NXT.RESUME, xid);
      writePacketIn2Props(w, msg);
      break;
    case 'packet_out': {
      at = startMessage(w, OFPT.PACKET_OUT, xid);
      w.u32(msg.bufferId);
      const lenAt = w.length;
      w.u16(0).zeros(2);
      writeMatch(w, new Map([['in_port', { value: BigInt(msg.inPort), mask: 0xffffffffn }]]));
      const actionsAt = w.length;
      writeActions(w, msg.actions.filter((a) => a.kind !== 'drop'));
      w.patchU16(lenAt, w.length - actionsAt);
      w.bytes(msg.data);
      break;
    }
    case 'set_config':
      at = startMessage(w, OFPT.SET_CONFIG, xid);
      w.u16(msg.flags).u16(msg.missSendLen);
      break;
    case 'set_packet_in_format':
      at = startNxt(w, NXT.SET_PACKET_IN_FORMAT, xid);
      w.u32(msg.format);
      break;
    case 'tlv_table_mod':
      at = startNxt(w, NXT.TLV_TABLE_MOD, xid);
      w.u16(tlvTableCommands.indexOf(msg.command)).zeros(6);
      writeTlvMaps(w, msg.mappings);
      break;
    case 'tlv_table_request':
      at = startNxt(w, NXT.TLV_TABLE_REQUEST, xid);
      break;
    case 'tlv_table_reply':
      at = startNxt(w, NXT.TLV_TABLE_REPLY, xid);
      w.u32(msg.maxOptionSpace).u16(msg.maxFields).zeros(10);
      writeTlvMaps(w, msg.mappings);
      break;
    case 'experimenter':
      at = startMessage(w, OFPT.EXPERIMENTER, xid);
      w.u32(msg.experimenter).u32(msg.expType).bytes(msg.data);
      break;
    case 'unknown':
      at = startMessage(w, msg.ofType, xid);
      w.bytes(msg.body);
      break;
  }
  finishMessage(w, at);
}

function writeFlowStats(w: Writer, fs: FlowStats): void {
  const at = w.length;
  w.u16(0).zeros(2).u8(fs.table).u8(0).u16(fs.priority).u16(fs.idleTimeout).u16(fs.hardTimeout).u16(fs.flags).u16(fs.importance).u64(fs.cookie);
  writeMatch(w, fs.match);
  const statAt = w.length;
  w.u16(0).u16(0);
  const oxs = (field: number, bytes: number): Writer => w.u32(((OXS_CLASS_BASIC << 16) | (field << 9) | bytes) >>> 0);
  if (fs.durationSec !== undefined) oxs(OXS.DURATION, 8).u32(fs.durationSec).u32(fs.durationNsec ?? 0);
  if (fs.idleAgeSec !== undefined) oxs(OXS.IDLE_TIME, 8).u32(fs.idleAgeSec).u32(0);
  if (fs.packetCount !== undefined) oxs(OXS.PACKET_COUNT, 8).u64(fs.packetCount);
  if (fs.byteCount !== undefined) oxs(OXS.BYTE_COUNT, 8).u64(fs.byteCount);
  w.patchU16(statAt + 2, w.length - statAt);
  w.padFrom(statAt);
  if (fs.actionBytes.length > 0) w.u16(OFPIT.APPLY_ACTIONS).u16(8 + fs.actionBytes.length).zeros(4).bytes(fs.actionBytes);
  if (fs.writeMetadata !== undefined) w.u16(OFPIT.WRITE_METADATA).u16(24).zeros(4).u64(fs.writeMetadata.value).u64(fs.writeMetadata.mask);
  if (fs.gotoTable !== undefined) w.u16(OFPIT.GOTO_TABLE).u16(8).u8(fs.gotoTable).zeros(3);
  w.patchU16(at, w.length - at);
}

export function encodeMessage(msg: OfMessage, xid: number): Buffer {
  const w = new Writer(256);
  writeMessage(w, msg, xid);
  return w.finish();
}

// ---- Decoding --------------------------------------------------------------------------------

interface Instructions {
  actions: Buffer;
  writeMetadata?: MaskedValue;
  gotoTable?: number;
}

function readInstructions(r: Reader): Instructions {
  const out: Instructions = { actions: Buffer.alloc(0) };
  let seenApply = false;
  while (r.remaining > 0) {
    const type = r.u16('instruction type');
    const len = r.u16('instruction length');
    if (len < 8 || len % 8 !== 0) decodeFail('bad_length', `instruction type ${type} with length ${len}`);
    const body = r.sub(len - 4, 'instruction');
    switch (type) {
      case OFPIT.APPLY_ACTIONS:
        if (seenApply) decodeFail('bad_value', 'two apply-actions instructions');
        seenApply = true;
        body.skip(4);
        out.actions = body.bytes(body.remaining);
        break;
      case OFPIT.WRITE_METADATA:
        body.skip(4);
        out.writeMetadata = { value: body.u64(), mask: body.u64() };
        break;
      case OFPIT.GOTO_TABLE:
        out.gotoTable = body.u8();
        break;
      default:
        decodeFail('unsupported', `instruction type ${type}`);
    }
  }
  return out;
}

function decodeActionsIn(bytes: Buffer): OfAction[] {
  return readActions(new Reader(bytes));
}

function commandName<T>(names: readonly T[], v: number, what: string): T {
  const n = names[v];
  if (n === undefined) decodeFail('unsupported', `${what} ${v}`);
  return n;
}

function readFlowMod(r: Reader): FlowMod {
  const cookie = r.u64();
  const cookieMask = r.u64();
  const table = r.u8();
  const command = commandName(flowModCommands, r.u8(), 'flow_mod command');
  const idleTimeout = r.u16();
  const hardTimeout = r.u16();
  const priority = r.u16();
  r.u32();
  const outPort = r.u32();
  const outGroup = r.u32();
  const flags = r.u16();
  const importance = r.u16();
  const match = readMatch(r);
  const ins = readInstructions(r);
  const mod: { -readonly [K in keyof FlowMod]: FlowMod[K] } = {
    command, table, priority, match, actions: decodeActionsIn(ins.actions), cookie, cookieMask, idleTimeout, hardTimeout, flags, importance, outPort, outGroup,
  };
  if (ins.writeMetadata !== undefined) mod.writeMetadata = ins.writeMetadata;
  if (ins.gotoTable !== undefined) mod.gotoTable = ins.gotoTable;
  return mod;
}

/** Buckets (in 'br') and the group properties that fill the rest of 'props'. */
function readGroupBody(groupId: number, type: GroupSpec['type'], br: Reader, props: Reader): GroupSpec {
  const buckets: { weight?: number; watchPort?: number; actions: OfAction[] }[] = [];
  while (br.remaining > 0) {
    const len = br.u16('bucket length');
    const actionBytes = br.u16('bucket actions length');
    br.u32();
    if (len < 8 + actionBytes) decodeFail('bad_length', `bucket of ${len} bytes with ${actionBytes} bytes of actions`);
    const actions = readActions(br.sub(actionBytes, 'bucket actions'));
    const bp = br.sub(len - 8 - actionBytes, 'bucket properties');
    const bucket: { weight?: number; watchPort?: number; actions: OfAction[] } = { actions };
    while (bp.remaining > 0) {
      const pt = bp.u16('bucket property');
      const pl = bp.u16('bucket property length');
      if (pl < 4 || pl % 8 !== 0) decodeFail('bad_length', `bucket property of ${pl} bytes`);
      const p = bp.sub(pl - 4);
      if (pt === OFPGBPT15_WEIGHT) bucket.weight = p.u16();
      else if (pt === OFPGBPT15_WATCH_PORT) {
        const port = p.u32();
        if (port !== OFPP11_ANY) bucket.watchPort = port;
      }
    }
    buckets.push(bucket);
  }
  const group: { -readonly [K in keyof GroupSpec]: GroupSpec[K] } = { groupId, type, buckets };
  while (props.remaining > 0) {
    const start = props.offset;
    const pt = props.u16('group property');
    const pl = props.u16('group property length');
    if (pl < 4) decodeFail('bad_length', `group property of ${pl} bytes`);
    const p = props.sub(pl - 4);
    props.alignFrom(start);
    if (pt !== OFPGPT15_EXPERIMENTER) continue;
    const exp = p.u32();
    const expType = p.u32();
    if (exp !== NTR_VENDOR_ID || expType !== NTRT_SELECTION_METHOD) continue;
    p.skip(4);
    const name = p.bytes(NTR_SELECTION_METHOD_BYTES);
    const text = name.subarray(0, name.indexOf(0) < 0 ? name.length : name.indexOf(0)).toString('ascii');
    if (text !== 'hash' && text !== 'dp_hash') decodeFail('unsupported', `selection method ${JSON.stringify(text)}`);
    group.selectionMethod = text;
    // 0 is no parameter: left out, so a group reads back as the spec that made it.
    const param = p.u64();
    if (param !== 0n) group.selectionMethodParam = param;
    const fields = [...readOxmList(p).keys()];
    if (fields.length > 0) group.fields = fields;
  }
  return group;
}

function readGroupMod(r: Reader): GroupMod {
  const command = commandName(groupModCommands, r.u16(), 'group_mod command');
  const type = commandName(groupTypes, r.u8(), 'group type');
  r.skip(1);
  const groupId = r.u32();
  const bucketBytes = r.u16();
  r.skip(2);
  r.u32();
  const br = r.sub(bucketBytes, 'buckets');
  return { command, group: readGroupBody(groupId, type, br, r) };
}

function readGroupDesc(r: Reader): GroupSpec {
  const length = r.u16('group desc length');
  if (length < 16) decodeFail('bad_length', `group desc of ${length} bytes`);
  const e = r.sub(length - 2, 'group desc');
  const type = commandName(groupTypes, e.u8(), 'group type');
  e.skip(1);
  const groupId = e.u32();
  const bucketBytes = e.u16();
  e.skip(6);
  return readGroupBody(groupId, type, e.sub(bucketBytes, 'buckets'), e);
}

function readFlowStats(r: Reader): FlowStats {
  const start = r.offset;
  const length = r.u16('flow desc length');
  if (length < 24) decodeFail('bad_length', `flow desc of ${length} bytes`);
  const e = new Reader(r.buf, start, start + length);
  r.skip(length - 2, 'flow desc');
  e.skip(4);
  const table = e.u8();
  e.u8();
  const priority = e.u16();
  const idleTimeout = e.u16();
  const hardTimeout = e.u16();
  const flags = e.u16();
  const importance = e.u16();
  const cookie = e.u64();
  const match = readMatch(e);
  const statStart = e.offset;
  e.u16('stats reserved');
  const statLen = e.u16('stats length');
  if (statLen < 4) decodeFail('bad_length', `stats of ${statLen} bytes`);
  const st = e.sub(statLen - 4, 'stats');
  e.alignFrom(statStart);
  const stats: { durationSec?: number; durationNsec?: number; idleAgeSec?: number; packetCount?: bigint; byteCount?: bigint } = {};
  while (st.remaining > 0) {
    const h = st.u32('oxs header');
    const cls = h >>> 16;
    const field = (h >>> 9) & 0x7f;
    let n = h & 0xff;
    if (cls === 0xffff) {
      if (n < 4) decodeFail('bad_length', 'experimenter OXS');
      st.u32();
      n -= 4;
    }
    const v = st.sub(n, 'oxs value');
    if (cls !== OXS_CLASS_BASIC) continue;
    if (field === OXS.DURATION && n === 8) {
      stats.durationSec = v.u32();
      stats.durationNsec = v.u32();
    } else if (field === OXS.IDLE_TIME && n === 8) {
      stats.idleAgeSec = v.u32();
    } else if (field === OXS.PACKET_COUNT && n === 8) {
      stats.packetCount = v.u64();
    } else if (field === OXS.BYTE_COUNT && n === 8) {
      stats.byteCount = v.u64();
    }
  }
  const ins = readInstructions(e);
  const decoded = tryDecode(() => decodeActionsIn(ins.actions));
  const fs: { -readonly [K in keyof FlowStats]: FlowStats[K] } = {
    table, priority, idleTimeout, hardTimeout, flags, importance, cookie, match, ...stats,
    actions: decoded.ok ? decoded.value : { undecodable: decoded.error.message },
    actionBytes: Buffer.from(ins.actions),
  };
  if (ins.writeMetadata !== undefined) fs.writeMetadata = ins.writeMetadata;
  if (ins.gotoTable !== undefined) fs.gotoTable = ins.gotoTable;
  return fs;
}

/** Bands filling all of 'r'. */
function readMeterBands(r: Reader): MeterBand[] {
  const bands: MeterBand[] = [];
  while (r.remaining > 0) {
    const type = r.u16('meter band type');
    const len = r.u16('meter band length');
    if (len !== METER_BAND_BYTES) decodeFail('bad_length', `meter band of ${len} bytes`);
    const rate = r.u32();
    const burstSize = r.u32();
    const precLevel = r.u8();
    r.skip(3);
    if (type === meterBandTypes.drop) bands.push({ type: 'drop', rate, burstSize });
    else if (type === meterBandTypes.dscp_remark) bands.push({ type: 'dscp_remark', rate, burstSize, precLevel });
    else decodeFail('unsupported', `meter band type ${type}`);
  }
  return bands;
}

function readMeterMod(r: Reader): MeterMod {
  const command = commandName(meterModCommands, r.u16(), 'meter_mod command');
  const flags = r.u16();
  const meterId = r.u32();
  return { command, meter: { meterId, flags, bands: readMeterBands(r) } };
}

function readMeterConfig(r: Reader): MeterSpec {
  const length = r.u16('meter config length');
  if (length < 8) decodeFail('bad_length', `meter config of ${length} bytes`);
  const flags = r.u16();
  const meterId = r.u32();
  return { meterId, flags, bands: readMeterBands(r.sub(length - 8, 'meter bands')) };
}

function readTlvMaps(r: Reader): TlvMapping[] {
  if (r.remaining % 8 !== 0) decodeFail('bad_length', `TLV mappings of ${r.remaining} bytes`);
  const out: TlvMapping[] = [];
  while (r.remaining > 0) {
    const optClass = r.u16();
    const optType = r.u8();
    const optLen = r.u8();
    const index = r.u16();
    r.skip(2);
    out.push({ optClass, optType, optLen, index });
  }
  return out;
}

function readPacketIn2Props(r: Reader): PacketIn2 {
  const p: { -readonly [K in keyof PacketIn2]?: PacketIn2[K] } = {};
  let packet: Buffer | undefined;
  while (r.remaining > 0) {
    const start = r.offset;
    const type = r.u16('property type');
    const len = r.u16('property length');
    if (len < 4) decodeFail('bad_length', `packet-in property of ${len} bytes`);
    const v = r.sub(len - 4, 'packet-in property');
    r.alignFrom(start);
    switch (type) {
      case NXPINT.PACKET: packet = Buffer.from(v.bytes(v.remaining)); break;
      case NXPINT.FULL_LEN: p.fullLen = v.u32(); break;
      case NXPINT.BUFFER_ID: p.bufferId = v.u32(); break;
      case NXPINT.TABLE_ID: p.table = v.u8(); break;
      case NXPINT.COOKIE: p.cookie = v.u64(); break;
      case NXPINT.REASON: p.reason = v.u8(); break;
      case NXPINT.METADATA: p.metadata = readOxmList(v); break;
      case NXPINT.USERDATA: p.userdata = Buffer.from(v.bytes(v.remaining)); break;
      case NXPINT.CONTINUATION: p.continuation = Buffer.from(v.bytes(v.remaining)); break;
      default: break; // Unknown properties carry nothing we act on.
    }
  }
  if (packet === undefined) decodeFail('bad_value', 'packet-in without NXPINT_PACKET');
  return { packet, ...p };
}

function readExperimenter(r: Reader): OfMessage {
  const experimenter = r.u32('experimenter');
  const expType = r.u32('experimenter type');
  if (experimenter === NX_VENDOR_ID) {
    switch (expType) {
      case NXT.PACKET_IN2:
        return { kind: 'packet_in2', ...readPacketIn2Props(r) };
      case NXT.RESUME:
        return { kind: 'resume', ...readPacketIn2Props(r) };
      case NXT.SET_PACKET_IN_FORMAT:
        return { kind: 'set_packet_in_format', format: r.u32() };
      case NXT.TLV_TABLE_MOD: {
        const command = commandName(tlvTableCommands, r.u16(), 'TLV table command');
        r.skip(6);
        return { kind: 'tlv_table_mod', command, mappings: readTlvMaps(r) };
      }
      case NXT.TLV_TABLE_REQUEST:
        return { kind: 'tlv_table_request' };
      case NXT.TLV_TABLE_REPLY: {
        const maxOptionSpace = r.u32();
        const maxFields = r.u16();
        r.skip(10);
        return { kind: 'tlv_table_reply', maxOptionSpace, maxFields, mappings: readTlvMaps(r) };
      }
    }
  }
  return { kind: 'experimenter', experimenter, expType, data: Buffer.from(r.bytes(r.remaining)) };
}

function readHello(r: Reader): OfMessage {
  const versions: number[] = [];
  while (r.remaining >= 4) {
    const start = r.offset;
    const type = r.u16('hello element type');
    const len = r.u16('hello element length');
    if (len < 4) decodeFail('bad_length', `hello element of ${len} bytes`);
    const body = r.sub(len - 4, 'hello element');
    r.alignFrom(start);
    if (type !== OFPHET_VERSIONBITMAP) continue;
    for (let word = 0; body.remaining >= 4; word++) {
      const bits = body.u32();
      for (let b = 0; b < 32; b++) if ((bits >>> b) & 1) versions.push(word * 32 + b);
    }
  }
  return { kind: 'hello', versions };
}

function readBody(type: number, r: Reader): OfMessage {
  switch (type) {
    case OFPT.HELLO:
      return readHello(r);
    case OFPT.ERROR: {
      const errType = r.u16();
      const code = r.u16();
      if (errType === 0xffff) {
        const experimenter = r.u32();
        return { kind: 'error', errType, code, experimenter, data: Buffer.from(r.bytes(r.remaining)) };
      }
      return { kind: 'error', errType, code, data: Buffer.from(r.bytes(r.remaining)) };
    }
    case OFPT.ECHO_REQUEST:
      return { kind: 'echo_request', data: Buffer.from(r.bytes(r.remaining)) };
    case OFPT.ECHO_REPLY:
      return { kind: 'echo_reply', data: Buffer.from(r.bytes(r.remaining)) };
    case OFPT.EXPERIMENTER:
      return readExperimenter(r);
    case OFPT.FEATURES_REQUEST:
      return { kind: 'features_request' };
    case OFPT.FEATURES_REPLY: {
      const datapathId = r.u64();
      const nBuffers = r.u32();
      const nTables = r.u8();
      const auxiliaryId = r.u8();
      r.skip(2);
      const capabilities = r.u32();
      r.u32();
      return { kind: 'features_reply', datapathId, nBuffers, nTables, auxiliaryId, capabilities };
    }
    case OFPT.BARRIER_REQUEST:
      return { kind: 'barrier_request' };
    case OFPT.SET_CONFIG:
      return { kind: 'set_config', flags: r.u16(), missSendLen: r.u16() };
    case OFPT.BARRIER_REPLY:
      return { kind: 'barrier_reply' };
    case OFPT.FLOW_MOD:
      return { kind: 'flow_mod', mod: readFlowMod(r) };
    case OFPT.GROUP_MOD:
      return { kind: 'group_mod', mod: readGroupMod(r) };
    case OFPT.METER_MOD:
      return { kind: 'meter_mod', mod: readMeterMod(r) };
    case OFPT.BUNDLE_CONTROL: {
      const bundleId = r.u32();
      const ctrl = commandName(bundleCtrlTypes, r.u16(), 'bundle control type');
      return { kind: 'bundle_control', bundleId, ctrl, flags: r.u16() };
    }
    case OFPT.MULTIPART_REQUEST: {
      const mpType = r.u16();
      r.u16();
      r.skip(4);
      if (mpType === OFPMP_GROUP_DESC) {
        const groupId = r.u32();
        r.skip(4);
        return { kind: 'group_desc_request', groupId };
      }
      if (mpType === OFPMP_METER_CONFIG) {
        const meterId = r.u32();
        r.skip(4);
        return { kind: 'meter_config_request', meterId };
      }
      if (mpType !== OFPMP_FLOW_DESC) return { kind: 'unknown', ofType: type, body: Buffer.from(r.buf.subarray(r.offset - 8, r.offset + r.remaining)) };
      const table = r.u8();
      r.skip(3);
      const outPort = r.u32();
      const outGroup = r.u32();
      r.skip(4);
      const cookie = r.u64();
      const cookieMask = r.u64();
      return { kind: 'flow_stats_request', table, outPort, outGroup, cookie, cookieMask, match: readMatch(r) };
    }
    case OFPT.MULTIPART_REPLY: {
      const mpType = r.u16();
      const more = (r.u16() & OFPMPF_MORE) !== 0;
      r.skip(4);
      if (mpType === OFPMP_GROUP_DESC) {
        const groups: GroupSpec[] = [];
        while (r.remaining > 0) groups.push(readGroupDesc(r));
        return { kind: 'group_desc_reply', more, groups };
      }
      if (mpType === OFPMP_METER_CONFIG) {
        const meters: MeterSpec[] = [];
        while (r.remaining > 0) meters.push(readMeterConfig(r));
        return { kind: 'meter_config_reply', more, meters };
      }
      if (mpType !== OFPMP_FLOW_DESC) return { kind: 'multipart_reply', mpType, more, body: Buffer.from(r.bytes(r.remaining)) };
      const flows: FlowStats[] = [];
      while (r.remaining > 0) flows.push(readFlowStats(r));
      return { kind: 'flow_stats_reply', more, flows };
    }
    case OFPT.PACKET_IN: {
      const bufferId = r.u32();
      const totalLen = r.u16();
      const reason = r.u8();
      const table = r.u8();
      const cookie = r.u64();
      const match = readMatch(r);
      r.skip(2);
      return { kind: 'packet_in', bufferId, totalLen, reason, table, cookie, match, data: Buffer.from(r.bytes(r.remaining)) };
    }
    case OFPT.PACKET_OUT: {
      const bufferId = r.u32();
      const actionsLen = r.u16();
      r.skip(2);
      const match = readMatch(r);
      const actions = readActions(r.sub(actionsLen, 'packet-out actions'));
      const inPort = match.get('in_port');
      return { kind: 'packet_out', bufferId, inPort: inPort === undefined ? 0xfffffffd : Number(inPort.value), actions, data: Buffer.from(r.bytes(r.remaining)) };
    }
  }
  return { kind: 'unknown', ofType: type, body: Buffer.from(r.bytes(r.remaining)) };
}

export interface DecodedMessage {
  readonly version: number;
  readonly xid: number;
  readonly msg: OfMessage;
}

/** How deep bundle_add may nest messages before a decoder gives up (OpenFlow allows one level). */
const BUNDLE_NESTING_MAX = 2;

/** Decodes exactly one message occupying all of 'buf'. */
export function decodeMessage(buf: Buffer, depth = 0): DecodedMessage {
  if (depth > BUNDLE_NESTING_MAX) decodeFail('too_large', 'bundle messages nested too deep');
  const r = new Reader(buf);
  const version = r.u8('version');
  const type = r.u8('type');
  const length = r.u16('length');
  const xid = r.u32('xid');
  if (length !== buf.length) decodeFail('bad_length', `header says ${length} bytes, have ${buf.length}`);
  if (version !== OFP_VERSION && type !== OFPT.HELLO) decodeFail('unsupported', `OpenFlow version 0x${version.toString(16)}`);
  if (type === OFPT.BUNDLE_ADD_MESSAGE) {
    const body = new Reader(buf, 8);
    const bundleId = body.u32();
    body.skip(2);
    const flags = body.u16();
    const inner = decodeMessage(body.bytes(body.remaining), depth + 1);
    if (inner.xid !== xid) decodeFail('bad_value', `bundled message xid ${inner.xid} differs from ${xid}`);
    return { version, xid, msg: { kind: 'bundle_add', bundleId, flags, message: inner.msg } };
  }
  return { version, xid, msg: readBody(type, r) };
}

/** The length a message announces in its first 4 bytes (for framing a byte stream). */
export function peekLength(buf: Buffer, at: number): number {
  return buf.readUInt16BE(at + 2);
}
