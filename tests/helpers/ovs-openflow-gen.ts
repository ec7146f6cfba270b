// Seeded generators of canonical OpenFlow values (matches, actions, messages) for the codec's
// round-trip and fuzz tests. "Canonical" means in the one spelling the decoder produces, so
// decode(encode(x)) must equal x exactly.
import { formatIpv4, formatIpv6 } from '../../agent/expr/to-matches.js';
import { encodeActions } from '../../agent/openflow/actions.js';
import { fieldBits, fieldSpec } from '../../agent/openflow/fields.js';
import type { FlowMod, FlowStats, GroupMod, MeterMod, OfMessage, PacketIn2, TlvMapping } from '../../agent/openflow/messages.js';
import type { FieldRef, LearnSpec, MaskedValue, MeterBand, MeterSpec, NatSpec, OfAction } from '../../agent/openflow/types.js';
import type { Rng } from './seeded-rng.js';

/** Match fields that decode under their own name (xreg/xxreg split into regs, so they are left out). */
export const matchFields = [
  'in_port', 'metadata', 'eth_src', 'eth_dst', 'eth_type', 'vlan_tci', 'ip_proto', 'ip_dscp', 'ip_ecn', 'nw_ttl',
  'ipv4_src', 'ipv4_dst', 'ipv6_src', 'ipv6_dst', 'ipv6_label', 'icmpv4_type', 'icmpv4_code', 'icmpv6_type',
  'icmpv6_code', 'ip_frag', 'arp_op', 'arp_spa', 'arp_tpa', 'arp_sha', 'arp_tha', 'nd_target', 'nd_sll', 'nd_tll',
  'tcp_src', 'tcp_dst', 'tcp_flags', 'udp_src', 'udp_dst', 'sctp_src', 'sctp_dst', 'pkt_mark', 'ct_state', 'ct_zone',
  'ct_mark', 'ct_label', 'conj_id', 'tun_id', 'tun_metadata0', 'tun_metadata63', 'dp_hash',
  ...Array.from({ length: 16 }, (_, i) => `reg${i}`), 'reg16', 'reg31',
];

/** 32-bit fields with plain NXM headers, usable in bit-range references. */
const refFields = ['reg0', 'reg5', 'reg13', 'reg14', 'reg15', 'pkt_mark', 'ct_mark', 'conj_id', 'metadata', 'eth_src', 'ipv4_src', 'ct_label', 'xxreg1', 'xreg3', 'reg20', 'xxreg6'];

function bitsOf(field: string): number {
  const s = fieldSpec(field);
  if (s === undefined) throw new Error(`no field ${field}`);
  return s.bytes === 0 ? 64 : fieldBits(field);
}

export function bigRandom(rng: Rng, bits: number): bigint {
  let v = 0n;
  for (let i = 0; i < bits; i += 32) v = (v << 32n) | BigInt(rng.u32());
  return v & ((1n << BigInt(bits)) - 1n);
}

function masked(rng: Rng, bits: number): MaskedValue {
  const full = (1n << BigInt(bits)) - 1n;
  let mask = rng.chance(0.5) ? full : bigRandom(rng, bits);
  if (mask === 0n) mask = 1n;
  return { value: bigRandom(rng, bits) & mask, mask };
}

export function genMatch(rng: Rng, fieldsMax = 6): Map<string, MaskedValue> {
  const m = new Map<string, MaskedValue>();
  const n = rng.int(0, fieldsMax);
  for (let i = 0; i < n; i++) {
    const f = rng.pick(matchFields);
    m.set(f, masked(rng, bitsOf(f)));
  }
  return m;
}

function genRef(rng: Rng, fields = refFields, bits?: number): FieldRef {
  const field = rng.pick(fields);
  const width = bitsOf(field);
  const n = bits ?? rng.int(1, width);
  const start = rng.int(0, width - n);
  return { field, start, end: start + n - 1 };
}

function genNat(rng: Rng): NatSpec {
  const kind = rng.pick(['src', 'dst', 'plain'] as const);
  const nat: { -readonly [K in keyof NatSpec]: NatSpec[K] } = { kind };
  if (kind !== 'plain' && rng.chance(0.8)) {
    const v6 = rng.chance(0.3);
    const addr = (): string => (v6 ? formatIpv6(bigRandom(rng, 128) | 1n) : formatIpv4(BigInt(rng.u32() | 1)));
    nat.addrMin = addr();
    if (rng.chance(0.5)) nat.addrMax = addr();
    if (rng.chance(0.5)) nat.portMin = rng.int(1, 65535);
    if (rng.chance(0.5)) nat.portMax = rng.int(1, 65535);
  }
  if (rng.chance(0.3)) nat.persistent = true;
  const proto = rng.int(0, 2);
  if (proto === 1) nat.hash = true;
  if (proto === 2) nat.random = true;
  return nat;
}

function genLoad(rng: Rng, fields: readonly string[]): OfAction {
  // A load never covers a whole field: that spelling is canonically set_field.
  const ref = genRef(rng, [...fields]);
  const width = bitsOf(ref.field);
  const dst = ref.start === 0 && ref.end === width - 1 ? { ...ref, end: ref.end - 1 } : ref;
  if (dst.end < dst.start) return { kind: 'set_field', field: ref.field, value: bigRandom(rng, width) };
  return { kind: 'load', dst, value: bigRandom(rng, dst.end - dst.start + 1) };
}

export const actionKinds = [
  'output', 'output_reg', 'resubmit', 'set_field', 'load', 'move', 'push', 'pop', 'dec_ttl', 'ct', 'ct_clear',
  'conjunction', 'controller', 'group', 'meter', 'clone', 'check_pkt_larger', 'note', 'push_vlan', 'pop_vlan', 'exit', 'dec_ttl_cnt_ids',
  'learn', 'sample', 'set_nw_ttl',
] as const;

export function genAction(rng: Rng, kind: (typeof actionKinds)[number], depth = 0): OfAction {
  switch (kind) {
    case 'output': return { kind, port: rng.u32() };
    case 'output_reg': return { kind, src: genRef(rng, ['reg0', 'reg15', 'pkt_mark', 'ct_mark', 'reg25']) };
    case 'resubmit': return rng.chance(0.5) ? { kind, table: rng.int(0, 254) } : { kind, table: rng.int(0, 254), inPort: rng.int(0, 0xfff7) };
    case 'set_field': {
      const field = rng.pick(matchFields.filter((f) => f !== 'in_port' && !f.startsWith('tun_metadata')));
      return { kind, field, value: bigRandom(rng, bitsOf(field)) };
    }
    case 'load': return genLoad(rng, refFields);
    case 'move': {
      const src = genRef(rng);
      return { kind, src, dst: genRef(rng, refFields.filter((f) => bitsOf(f) >= src.end - src.start + 1), src.end - src.start + 1) };
    }
    case 'push': return { kind, src: genRef(rng) };
    case 'pop': return { kind, dst: genRef(rng) };
    case 'ct': {
      const commit = rng.chance(0.5);
      const ct: { -readonly [K in keyof Extract<OfAction, { kind: 'ct' }>]: Extract<OfAction, { kind: 'ct' }>[K] } = {
        kind, commit, exec: Array.from({ length: commit ? rng.int(0, 2) : 0 }, () => genLoad(rng, ['ct_mark', 'ct_label'])),
      };
      if (commit && rng.chance(0.3)) ct.force = true;
      const z = rng.int(0, 2);
      if (z === 1) ct.zone = rng.int(1, 65535);
      if (z === 2) ct.zone = genRef(rng, ['reg13', 'reg0', 'ct_mark'], 16);
      if (rng.chance(0.5)) ct.table = rng.int(0, 254);
      if (rng.chance(0.2)) ct.alg = rng.int(1, 65535);
      if (rng.chance(0.6)) ct.nat = genNat(rng);
      return ct;
    }
    case 'conjunction': {
      const nClauses = rng.int(2, 64);
      return { kind, id: rng.u32(), clause: rng.int(0, nClauses - 1), nClauses };
    }
    case 'controller': {
      const userdata = Buffer.from(Array.from({ length: rng.int(0, 24) }, () => rng.int(0, 255)));
      const c: { -readonly [K in keyof Extract<OfAction, { kind: 'controller' }>]: Extract<OfAction, { kind: 'controller' }>[K] } = { kind, userdata };
      if (rng.chance(0.5)) c.pause = true;
      if (rng.chance(0.3)) c.maxLen = rng.int(0, 65534);
      if (rng.chance(0.3)) c.reason = rng.pick(['no_match', 'invalid_ttl'] as const);
      if (rng.chance(0.3)) c.meterId = rng.int(0, 0xfffffffe);
      if (rng.chance(0.3)) c.controllerId = rng.int(1, 65535);
      return c;
    }
    case 'group': return { kind, groupId: rng.u32() };
    case 'meter': return { kind, meterId: rng.u32() };
    case 'clone': return { kind, actions: depth >= 2 ? [] : genActions(rng, 3, depth + 1) };
    case 'check_pkt_larger': return { kind, pktLen: rng.int(0, 65535), dst: genRef(rng, ['reg9', 'reg10', 'pkt_mark'], 1) };
    case 'note': return { kind, data: Buffer.from(Array.from({ length: 6 + 8 * rng.int(0, 3) }, () => rng.int(0, 255))) };
    case 'dec_ttl_cnt_ids': return { kind, controllerIds: Array.from({ length: rng.int(0, 5) }, () => rng.int(0, 65535)) };
    case 'push_vlan': return { kind, ethertype: rng.pick([0x8100, 0x88a8]) };
    case 'learn': {
      // learn() names fields by their 32-bit headers: no experimenter OXMs.
      const fields = refFields.filter((f) => fieldSpec(f)?.experimenter === undefined);
      const specs = Array.from({ length: rng.int(0, 5) }, (): LearnSpec => {
        const dst = genRef(rng, fields);
        const bits = dst.end - dst.start + 1;
        const k = rng.pick(['match', 'load'] as const);
        return rng.chance(0.5) ? { kind: k, dst, value: bigRandom(rng, bits) } : { kind: k, dst, src: genRef(rng, fields.filter((f) => bitsOf(f) >= bits), bits) };
      });
      const l: { -readonly [K in keyof Extract<OfAction, { kind: 'learn' }>]: Extract<OfAction, { kind: 'learn' }>[K] } = {
        kind, table: rng.int(0, 254), priority: rng.int(0, 65535), cookie: bigRandom(rng, 64), specs,
      };
      if (rng.chance(0.3)) l.idleTimeout = rng.int(1, 65535);
      if (rng.chance(0.3)) l.hardTimeout = rng.int(1, 65535);
      if (rng.chance(0.2)) l.finIdleTimeout = rng.int(1, 65535);
      if (rng.chance(0.2)) l.finHardTimeout = rng.int(1, 65535);
      if (rng.chance(0.5)) l.deleteLearned = true;
      if (rng.chance(0.3)) l.sendFlowRem = true;
      return l;
    }
    case 'set_nw_ttl': return { kind, ttl: rng.int(0, 255) };
    case 'sample': return { kind, probability: rng.int(0, 65535), collectorSetId: rng.u32(), obsDomainId: rng.u32(), obsPointId: rng.u32() };
    case 'dec_ttl': case 'ct_clear': case 'pop_vlan': case 'exit': return { kind };
  }
}

export function genActions(rng: Rng, max = 6, depth = 0): OfAction[] {
  return Array.from({ length: rng.int(0, max) }, () => genAction(rng, rng.pick(actionKinds), depth));
}

function genFlowMod(rng: Rng): FlowMod {
  const mod: { -readonly [K in keyof FlowMod]: FlowMod[K] } = {
    command: rng.pick(['add', 'modify', 'modify_strict', 'delete', 'delete_strict'] as const),
    table: rng.int(0, 254), priority: rng.int(0, 65535), match: genMatch(rng), actions: genActions(rng),
    cookie: bigRandom(rng, 64), cookieMask: bigRandom(rng, 64), idleTimeout: rng.int(0, 65535), hardTimeout: rng.int(0, 65535),
    flags: rng.int(0, 31), importance: rng.int(0, 65535), outPort: rng.u32(), outGroup: rng.u32(),
  };
  if (rng.chance(0.2)) mod.writeMetadata = { value: bigRandom(rng, 64), mask: bigRandom(rng, 64) };
  if (rng.chance(0.2)) mod.gotoTable = rng.int(0, 254);
  return mod;
}

function genGroupMod(rng: Rng, only?: 'add'): GroupMod {
  const command = only ?? rng.pick(['add', 'modify', 'delete'] as const);
  const type = rng.pick(['all', 'select', 'indirect', 'ff'] as const);
  const group: { -readonly [K in keyof GroupMod['group']]: GroupMod['group'][K] } = { groupId: rng.u32(), type, buckets: [] };
  if (command !== 'delete') {
    group.buckets = Array.from({ length: rng.int(0, 4) }, () => {
      const actions = genActions(rng, 3);
      // A watched port below OFPP_MAX (0xff00), as fwd_group's liveness sets it.
      const watch = rng.chance(0.3) ? { watchPort: rng.int(1, 0xfeff) } : {};
      return type === 'select' && rng.chance(0.8) ? { weight: rng.int(0, 65535), ...watch, actions } : { ...watch, actions };
    });
    if (type === 'select' && rng.chance(0.6)) {
      group.selectionMethod = rng.pick(['hash', 'dp_hash'] as const);
      // A parameter of 0 is none (it reads back absent): only nonzero ones, OVN's among them.
      if (rng.chance(0.5)) group.selectionMethodParam = rng.chance(0.5) ? 1n << 32n : (bigRandom(rng, 64) | 1n);
      if (rng.chance(0.6)) group.fields = ['ipv4_src', 'ipv4_dst', 'tcp_src'].slice(0, rng.int(1, 3));
    }
  }
  return { command, group };
}

function genMeter(rng: Rng): MeterSpec {
  const bands = Array.from({ length: rng.int(0, 3) }, (): MeterBand => (rng.chance(0.8)
    ? { type: 'drop', rate: rng.u32(), burstSize: rng.u32() }
    : { type: 'dscp_remark', rate: rng.u32(), burstSize: rng.u32(), precLevel: rng.int(0, 255) }));
  return { meterId: rng.u32(), flags: rng.int(0, 15), bands };
}

function genMeterMod(rng: Rng): MeterMod {
  const command = rng.pick(['add', 'modify', 'delete'] as const);
  const meter = genMeter(rng);
  return { command, meter: command === 'delete' ? { meterId: meter.meterId, flags: 0, bands: [] } : meter };
}

function genFlowStats(rng: Rng): FlowStats {
  const actions = genActions(rng);
  const fs: { -readonly [K in keyof FlowStats]: FlowStats[K] } = {
    table: rng.int(0, 254), priority: rng.int(0, 65535), idleTimeout: rng.int(0, 65535), hardTimeout: rng.int(0, 65535),
    flags: rng.int(0, 31), importance: rng.int(0, 65535), cookie: bigRandom(rng, 64), match: genMatch(rng),
    actions, actionBytes: encodeActions(actions),
  };
  if (rng.chance(0.8)) {
    fs.durationSec = rng.u32();
    fs.durationNsec = rng.int(0, 999_999_999);
    fs.idleAgeSec = rng.u32();
    fs.packetCount = bigRandom(rng, 64);
    fs.byteCount = bigRandom(rng, 64);
  }
  return fs;
}

function genBytes(rng: Rng, max: number): Buffer {
  return Buffer.from(Array.from({ length: rng.int(0, max) }, () => rng.int(0, 255)));
}

function genPacketIn2(rng: Rng): PacketIn2 {
  const p: { -readonly [K in keyof PacketIn2]: PacketIn2[K] } = { packet: genBytes(rng, 80) };
  if (rng.chance(0.5)) p.fullLen = rng.u32();
  if (rng.chance(0.5)) p.bufferId = rng.u32();
  if (rng.chance(0.5)) p.table = rng.int(0, 255);
  if (rng.chance(0.5)) p.cookie = bigRandom(rng, 64);
  if (rng.chance(0.5)) p.reason = rng.int(0, 255);
  if (rng.chance(0.5)) p.metadata = genMatch(rng, 4);
  if (rng.chance(0.5)) p.userdata = genBytes(rng, 30);
  if (rng.chance(0.5)) p.continuation = genBytes(rng, 60);
  return p;
}

function genTlvMaps(rng: Rng): TlvMapping[] {
  return Array.from({ length: rng.int(0, 4) }, () => ({ optClass: rng.int(0, 65535), optType: rng.int(0, 255), optLen: 4 * rng.int(1, 31), index: rng.int(0, 63) }));
}

export const messageKinds = [
  'hello', 'error', 'echo_request', 'echo_reply', 'features_request', 'features_reply', 'barrier_request', 'barrier_reply',
  'flow_mod', 'group_mod', 'bundle_control', 'bundle_add', 'flow_stats_request', 'flow_stats_reply', 'group_desc_request',
  'group_desc_reply', 'meter_mod', 'meter_config_request', 'meter_config_reply', 'multipart_reply',
  'packet_in', 'packet_in2', 'resume', 'packet_out', 'set_config', 'set_packet_in_format', 'tlv_table_mod', 'tlv_table_request',
  'tlv_table_reply', 'experimenter', 'unknown',
] as const satisfies readonly OfMessage['kind'][];

export function genMessage(rng: Rng, kind: (typeof messageKinds)[number]): OfMessage {
  switch (kind) {
    case 'hello': return { kind, versions: [...new Set([6, ...Array.from({ length: rng.int(0, 3) }, () => rng.int(1, 70))])].sort((a, b) => a - b) };
    case 'error': return rng.chance(0.5)
      ? { kind, errType: rng.int(0, 17), code: rng.int(0, 20), data: genBytes(rng, 64) }
      : { kind, errType: 0xffff, code: rng.int(0, 50), experimenter: 0x2320, data: genBytes(rng, 64) };
    case 'echo_request': case 'echo_reply': return { kind, data: genBytes(rng, 40) };
    case 'features_request': case 'barrier_request': case 'barrier_reply': case 'tlv_table_request': return { kind };
    case 'features_reply': return { kind, datapathId: bigRandom(rng, 64), nBuffers: rng.u32(), nTables: rng.int(0, 255), auxiliaryId: rng.int(0, 255), capabilities: rng.u32() };
    case 'flow_mod': return { kind, mod: genFlowMod(rng) };
    case 'group_mod': return { kind, mod: genGroupMod(rng) };
    case 'bundle_control': return { kind, bundleId: rng.u32(), ctrl: rng.pick(['open_request', 'open_reply', 'close_request', 'close_reply', 'commit_request', 'commit_reply', 'discard_request', 'discard_reply'] as const), flags: rng.int(0, 3) };
    case 'bundle_add': return { kind, bundleId: rng.u32(), flags: rng.int(0, 3), message: rng.chance(0.7) ? { kind: 'flow_mod', mod: genFlowMod(rng) } : { kind: 'group_mod', mod: genGroupMod(rng) } };
    case 'flow_stats_request': return { kind, table: rng.int(0, 255), outPort: rng.u32(), outGroup: rng.u32(), cookie: bigRandom(rng, 64), cookieMask: bigRandom(rng, 64), match: genMatch(rng) };
    case 'flow_stats_reply': return { kind, more: rng.chance(0.5), flows: Array.from({ length: rng.int(0, 4) }, () => genFlowStats(rng)) };
    case 'multipart_reply': return { kind, mpType: rng.pick([0, 2, 3, 4, 5, 6, 8, 9, 11, 12, 13, 20]), more: rng.chance(0.5), body: genBytes(rng, 40) };
    case 'group_desc_request': return { kind, groupId: rng.u32() };
    case 'group_desc_reply': return { kind, more: rng.chance(0.5), groups: Array.from({ length: rng.int(0, 3) }, () => genGroupMod(rng, 'add').group) };
    case 'meter_mod': return { kind, mod: genMeterMod(rng) };
    case 'meter_config_request': return { kind, meterId: rng.u32() };
    case 'meter_config_reply': return { kind, more: rng.chance(0.5), meters: Array.from({ length: rng.int(0, 3) }, () => genMeter(rng)) };
    case 'packet_in': return { kind, bufferId: rng.u32(), totalLen: rng.int(0, 65535), reason: rng.int(0, 5), table: rng.int(0, 254), cookie: bigRandom(rng, 64), match: genMatch(rng), data: genBytes(rng, 80) };
    case 'packet_in2': return { kind, ...genPacketIn2(rng) };
    case 'resume': return { kind, ...genPacketIn2(rng) };
    case 'packet_out': return { kind, bufferId: rng.u32(), inPort: rng.u32(), actions: genActions(rng, 4), data: genBytes(rng, 80) };
    case 'set_packet_in_format': return { kind, format: rng.int(0, 2) };
    case 'set_config': return { kind, flags: rng.int(0, 3), missSendLen: rng.int(0, 65535) };
    case 'tlv_table_mod': return { kind, command: rng.pick(['add', 'delete', 'clear'] as const), mappings: genTlvMaps(rng) };
    case 'tlv_table_reply': return { kind, maxOptionSpace: rng.u32(), maxFields: rng.int(0, 65535), mappings: genTlvMaps(rng) };
    case 'experimenter': return { kind, experimenter: rng.u32() === 0x2320 ? 1 : rng.int(1, 0x2000), expType: rng.u32(), data: genBytes(rng, 40) };
    case 'unknown': return { kind, ofType: rng.pick([7, 8, 11, 12, 16, 17, 24, 25, 26, 30, 31, 35]), body: genBytes(rng, 40) };
  }
}
