// FlowSpecs as ovs-ofctl flow text, so golden tests read like `ovs-ofctl dump-flows`:
// `table=10, priority=50, metadata=0x1,reg14=0x2,dl_src=00:00:00:00:00:01 actions=resubmit(,11)`.
// Actions are written exactly as ovs-ofctl prints them (field names, NXM names for subfields,
// value notation), so a line can be fed to `ovs-ofctl parse-flow` and compared. Match fields
// use names ovs-ofctl accepts, in a fixed order (ovs-ofctl's own order depends on its flow
// normalization and is not reproduced). One exception: a controller_op's nested actions are
// OpenFlow 1.5 bytes only the codec produces; without an encoder they are shown as
// `nested(…)` after the 8-byte action header, which ovs-ofctl does not accept.

import type { FieldRef, FlowSpec, MaskedValue, NatSpec, OfAction } from '../openflow/types.js';
import { formatIpv4, formatIpv6, formatMac } from '../expr/to-matches.js';
import { ofWidth } from '../actions/fields.js';

export interface OfctlOptions {
  /** Print cookie=0x… (off by default: golden tables are easier to read without). */
  readonly cookie?: boolean;
  /** Encodes nested actions as OpenFlow 1.5 (the codec's encoder) for controller_op userdata. */
  readonly encodeNested?: (actions: readonly OfAction[]) => Uint8Array;
}

/** Our OpenFlow field names (the symbol table's) → ovs-ofctl's match keywords. */
const matchNames: Readonly<Record<string, string>> = {
  eth_src: 'dl_src', eth_dst: 'dl_dst', eth_type: 'dl_type', ip_proto: 'nw_proto', ipv4_src: 'nw_src',
  ipv4_dst: 'nw_dst', icmpv4_type: 'icmp_type', icmpv4_code: 'icmp_code', ip_ecn: 'nw_ecn', ip_frag: 'nw_frag',
};

/** Our names → ovs-ofctl's set_field names (Open vSwitch's own names, meta-flow's, for the fields actions write). */
const setFieldNames: Readonly<Record<string, string>> = {
  ipv4_src: 'ip_src', ipv4_dst: 'ip_dst', icmpv4_type: 'icmp_type', icmpv4_code: 'icmp_code', ip_ecn: 'nw_ecn',
};
const setFieldNamesBack: ReadonlyMap<string, string> = new Map(Object.entries(setFieldNames).map(([ours, ovs]) => [ovs, ours]));

/** Open vSwitch's name of a field an action writes (ipv4_dst is ip_dst, registers keep theirs). */
export function ovsFieldName(field: string): string {
  return setFieldNames[field] ?? field;
}

/**
 * Our name of the field Open vSwitch calls 'name' (the inverse of ovsFieldName); undefined for
 * a name only we use (ipv4_dst: Open vSwitch knows no such field).
 */
export function fieldOfOvsName(name: string): string | undefined {
  if (Object.prototype.hasOwnProperty.call(setFieldNames, name)) return undefined;
  return setFieldNamesBack.get(name) ?? name;
}

/** Our names → the NXM/OXM names ovs-ofctl prints for subfields (move, push, pop, …). */
const nxmNames: Readonly<Record<string, string>> = {
  eth_src: 'NXM_OF_ETH_SRC', eth_dst: 'NXM_OF_ETH_DST', eth_type: 'NXM_OF_ETH_TYPE', vlan_tci: 'NXM_OF_VLAN_TCI',
  ip_proto: 'NXM_OF_IP_PROTO', ip_dscp: 'OXM_OF_IP_DSCP', ip_ecn: 'NXM_NX_IP_ECN', nw_ttl: 'NXM_NX_IP_TTL',
  ipv4_src: 'NXM_OF_IP_SRC', ipv4_dst: 'NXM_OF_IP_DST', ipv6_src: 'NXM_NX_IPV6_SRC', ipv6_dst: 'NXM_NX_IPV6_DST',
  ipv6_label: 'NXM_NX_IPV6_LABEL', icmpv4_type: 'NXM_OF_ICMP_TYPE', icmpv4_code: 'NXM_OF_ICMP_CODE',
  icmpv6_type: 'NXM_NX_ICMPV6_TYPE', icmpv6_code: 'NXM_NX_ICMPV6_CODE', ip_frag: 'NXM_NX_IP_FRAG',
  arp_op: 'NXM_OF_ARP_OP', arp_spa: 'NXM_OF_ARP_SPA', arp_tpa: 'NXM_OF_ARP_TPA', arp_sha: 'NXM_NX_ARP_SHA',
  arp_tha: 'NXM_NX_ARP_THA', nd_target: 'NXM_NX_ND_TARGET', nd_sll: 'NXM_NX_ND_SLL', nd_tll: 'NXM_NX_ND_TLL',
  tcp_src: 'NXM_OF_TCP_SRC', tcp_dst: 'NXM_OF_TCP_DST', tcp_flags: 'NXM_NX_TCP_FLAGS', udp_src: 'NXM_OF_UDP_SRC',
  udp_dst: 'NXM_OF_UDP_DST', sctp_src: 'OXM_OF_SCTP_SRC', sctp_dst: 'OXM_OF_SCTP_DST', pkt_mark: 'NXM_NX_PKT_MARK',
  ct_state: 'NXM_NX_CT_STATE', ct_mark: 'NXM_NX_CT_MARK', ct_label: 'NXM_NX_CT_LABEL', metadata: 'OXM_OF_METADATA',
};

const macFields = new Set(['eth_src', 'eth_dst', 'arp_sha', 'arp_tha', 'nd_sll', 'nd_tll']);
const ipv4Fields = new Set(['ipv4_src', 'ipv4_dst', 'arp_spa', 'arp_tpa']);
const ipv6Fields = new Set(['ipv6_src', 'ipv6_dst', 'nd_target']);
const decimalFields = new Set(['tcp_src', 'tcp_dst', 'udp_src', 'udp_dst', 'sctp_src', 'sctp_dst', 'ip_proto', 'nw_ttl',
  'ip_dscp', 'ip_ecn', 'icmpv4_type', 'icmpv4_code', 'icmpv6_type', 'icmpv6_code', 'arp_op', 'conj_id']);

const hex = (v: bigint): string => (v === 0n ? '0' : `0x${v.toString(16)}`);
const full = (field: string): bigint => (1n << BigInt(ofWidth(field) ?? (field === 'conj_id' ? 32 : 128))) - 1n;

function prefixLen(mask: bigint, width: number): number | null {
  const bits = mask.toString(2);
  if (mask === 0n) return 0;
  if (bits.length !== width || !/^1+0*$/.test(bits)) return null;
  return bits.indexOf('0') < 0 ? width : bits.indexOf('0');
}

/** A value (and mask, if not the whole field) in ovs-ofctl's notation for 'field'. */
export function formatValue(field: string, v: MaskedValue): string {
  const exact = v.mask === full(field);
  if (macFields.has(field)) return exact ? formatMac(v.value) : `${formatMac(v.value)}/${formatMac(v.mask)}`;
  if (ipv4Fields.has(field) || ipv6Fields.has(field)) {
    const w = ipv4Fields.has(field) ? 32 : 128;
    const f = w === 32 ? formatIpv4 : formatIpv6;
    if (exact) return f(v.value);
    const p = prefixLen(v.mask, w);
    return p !== null ? `${f(v.value)}/${p}` : `${f(v.value)}/${f(v.mask)}`;
  }
  if (exact && decimalFields.has(field)) return v.value.toString();
  return exact ? hex(v.value) : `${hex(v.value)}/${hex(v.mask)}`;
}

const ctStateBits: readonly (readonly [string, number])[] = [
  ['new', 0], ['est', 1], ['rel', 2], ['rpl', 3], ['inv', 4], ['trk', 5], ['snat', 6], ['dnat', 7],
];

function formatMatchField(field: string, v: MaskedValue): string {
  if (field === 'ct_state') {
    let s = '';
    let rest = v.mask;
    for (const [name, bit] of ctStateBits) {
      const b = 1n << BigInt(bit);
      if ((v.mask & b) === 0n) continue;
      s += `${(v.value & b) !== 0n ? '+' : '-'}${name}`;
      rest &= ~b;
    }
    return `ct_state=${rest === 0n ? s : `${hex(v.value)}/${hex(v.mask)}`}`;
  }
  if (field === 'ip_frag') {
    const key = `${v.value}/${v.mask}`;
    const names: Record<string, string> = { '0/1': 'no', '1/1': 'yes', '1/3': 'first', '3/3': 'later', '0/2': 'not_later', '2/2': 'later' };
    const n = names[key];
    if (n !== undefined) return `nw_frag=${n}`;
  }
  return `${matchNames[field] ?? field}=${formatValue(field, v)}`;
}

/** Registers first by number, then the other fields in a fixed, readable order. */
const fieldOrder = ['metadata', 'conj_id', 'ct_state', 'ct_mark', 'ct_label', 'pkt_mark', 'eth_src', 'eth_dst', 'eth_type',
  'vlan_tci', 'ip_proto', 'ip_frag', 'nw_ttl', 'ip_dscp', 'ip_ecn', 'ipv4_src', 'ipv4_dst', 'ipv6_src', 'ipv6_dst', 'ipv6_label',
  'arp_op', 'arp_spa', 'arp_tpa', 'arp_sha', 'arp_tha', 'icmpv4_type', 'icmpv4_code', 'icmpv6_type', 'icmpv6_code',
  'nd_target', 'nd_sll', 'nd_tll', 'tcp_src', 'tcp_dst', 'tcp_flags', 'udp_src', 'udp_dst', 'sctp_src', 'sctp_dst'];

function fieldRank(f: string): number {
  const r = /^reg([0-9]+)$/.exec(f);
  if (r !== null) return 2.5 + Number(r[1]) / 100;
  const i = fieldOrder.indexOf(f);
  return i < 0 ? 1000 : i < 2 ? i : i + 3;
}

export function formatMatchFields(match: ReadonlyMap<string, MaskedValue>): string {
  return [...match.entries()]
    .sort((a, b) => fieldRank(a[0]) - fieldRank(b[0]) || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .map(([k, v]) => formatMatchField(k, v))
    .join(',');
}

/** A subfield as ovs-ofctl prints it: NXM_NX_REG14[], NXM_NX_XXREG0[96..127], NXM_NX_REG10[6]. */
export function formatFieldRef(f: FieldRef): string {
  let m = /^reg([0-9]+)$/.exec(f.field);
  let name = nxmNames[f.field];
  if (m !== null) name = `NXM_NX_REG${m[1]}`;
  m = /^xxreg([0-9]+)$/.exec(f.field);
  if (m !== null) name = `NXM_NX_XXREG${m[1]}`;
  m = /^xreg([0-9]+)$/.exec(f.field);
  if (m !== null) name = `OXM_OF_PKT_REG${m[1]}`;
  const width = ofWidth(f.field);
  const bits = f.start === 0 && width !== undefined && f.end === width - 1 ? '' : f.start === f.end ? `${f.start}` : `${f.start}..${f.end}`;
  return `${name ?? f.field}[${bits}]`;
}

function formatNat(n: NatSpec): string {
  if (n.kind === 'plain' && n.addrMin === undefined) return 'nat';
  if (n.addrMin === undefined) return `nat(${n.kind})`;
  const v6 = n.addrMin.includes(':');
  const hasPort = n.portMin !== undefined;
  let addr = n.addrMin + (n.addrMax !== undefined ? `-${n.addrMax}` : '');
  if (v6 && hasPort) addr = `[${addr}]`;
  let s = `${n.kind}=${addr}`;
  if (hasPort) s += `:${n.portMin}${n.portMax !== undefined ? `-${n.portMax}` : ''}`;
  const flags = [n.persistent === true ? 'persistent' : '', n.hash === true ? 'hash' : '', n.random === true ? 'random' : ''].filter((x) => x !== '');
  return `nat(${[s, ...flags].join(',')})`;
}

function bytesText(b: Uint8Array | readonly number[]): string {
  return [...b].map((x) => x.toString(16).padStart(2, '0')).join('.');
}

function formatController(userdata: string, pause: boolean | undefined, meterId: number | undefined, extra: string[] = []): string {
  const parts = [`userdata=${userdata}`, ...extra];
  if (pause === true) parts.push('pause');
  if (meterId !== undefined) parts.push(`meter_id=${meterId}`);
  return `controller(${parts.join(',')})`;
}

export function formatAction(a: OfAction, opts: OfctlOptions = {}): string {
  switch (a.kind) {
    case 'output': return `output:${a.port}`;
    case 'output_reg': return `output:${formatFieldRef(a.src)}`;
    case 'resubmit': return `resubmit(${a.inPort ?? ''},${a.table})`;
    case 'set_field': {
      const name = ovsFieldName(a.field);
      // Open vSwitch calls a mask whole when it covers the field's bytes (ip_dscp's six bits
      // are one byte on the wire), and writes a masked decimal field as decimal/hex.
      const bits = ofWidth(a.field);
      const bytesMask = bits === undefined ? undefined : (1n << BigInt(Math.ceil(bits / 8) * 8)) - 1n;
      if (a.mask !== undefined && a.mask !== bytesMask && decimalFields.has(a.field)) return `set_field:${a.value}/${hex(a.mask)}->${name}`;
      return `set_field:${formatValue(a.field, { value: a.value, mask: a.mask ?? full(a.field) })}->${name}`;
    }
    case 'load': return `load:${hex(a.value)}->${formatFieldRef(a.dst)}`;
    case 'move': return `move:${formatFieldRef(a.src)}->${formatFieldRef(a.dst)}`;
    case 'push': return `push:${formatFieldRef(a.src)}`;
    case 'pop': return `pop:${formatFieldRef(a.dst)}`;
    case 'dec_ttl': return 'dec_ttl';
    case 'set_nw_ttl': return `mod_nw_ttl:${a.ttl}`;
    case 'dec_ttl_cnt_ids': return `dec_ttl(${a.controllerIds.join(',')})`;
    case 'bundle_active_backup': return `bundle(eth_src,0,active_backup,ofport,members:${a.members.join(',')})`;
    case 'ct': {
      const parts: string[] = [];
      if (a.commit) parts.push('commit');
      if (a.force === true) parts.push('force');
      if (a.table !== undefined) parts.push(`table=${a.table}`);
      if (a.zone !== undefined) parts.push(`zone=${typeof a.zone === 'number' ? a.zone : formatFieldRef(a.zone)}`);
      if (a.nat !== undefined) parts.push(formatNat(a.nat));
      if (a.alg !== undefined) parts.push(`alg=${a.alg}`);
      if (a.exec.length > 0) parts.push(`exec(${a.exec.map((x) => formatAction(x, opts)).join(',')})`);
      return parts.length === 0 ? 'ct' : `ct(${parts.join(',')})`;
    }
    case 'ct_clear': return 'ct_clear';
    case 'conjunction': return `conjunction(${a.id},${a.clause + 1}/${a.nClauses})`;
    case 'controller': return formatController(bytesText(a.userdata), a.pause, a.meterId);
    case 'controller_op': {
      const header = [(a.opcode >>> 24) & 0xff, (a.opcode >>> 16) & 0xff, (a.opcode >>> 8) & 0xff, a.opcode & 0xff, 0, 0, 0, 0];
      if (opts.encodeNested !== undefined || a.nested.length === 0) {
        const nested = a.nested.length === 0 ? [] : [...(opts.encodeNested?.(a.nested) ?? [])];
        return formatController(bytesText([...header, ...nested]), a.pause, a.meterId);
      }
      return formatController(bytesText(header), a.pause, a.meterId, [`nested(${formatActions(a.nested, opts)})`]);
    }
    case 'group': return `group:${a.groupId}`;
    case 'meter': return `meter:${a.meterId}`;
    case 'clone': return `clone(${a.actions.map((x) => formatAction(x, opts)).join(',')})`;
    case 'check_pkt_larger': return `check_pkt_larger(${a.pktLen})->${formatFieldRef(a.dst)}`;
    case 'note': return `note:${bytesText(a.data)}`;
    case 'drop': return 'drop';
    case 'push_vlan': return `push_vlan:0x${a.ethertype.toString(16)}`;
    case 'pop_vlan': return 'pop_vlan';
    case 'exit': return 'exit';
    case 'learn': return formatLearn(a);
    case 'sample': return `sample(probability=${a.probability},collector_set_id=${a.collectorSetId},obs_domain_id=${a.obsDomainId},obs_point_id=${a.obsPointId})`;
  }
}

/** learn(...) in ovs-ofctl's order: table, timeouts, priority, flags, cookie, then the specs. */
function formatLearn(a: Extract<OfAction, { kind: 'learn' }>): string {
  const parts = [`table=${a.table}`];
  if (a.idleTimeout !== undefined) parts.push(`idle_timeout=${a.idleTimeout}`);
  if (a.hardTimeout !== undefined) parts.push(`hard_timeout=${a.hardTimeout}`);
  if (a.finIdleTimeout !== undefined) parts.push(`fin_idle_timeout=${a.finIdleTimeout}`);
  if (a.finHardTimeout !== undefined) parts.push(`fin_hard_timeout=${a.finHardTimeout}`);
  if (a.priority !== 0x8000) parts.push(`priority=${a.priority}`);
  if (a.sendFlowRem === true) parts.push('send_flow_rem');
  if (a.deleteLearned === true) parts.push('delete_learned');
  if (a.cookie !== 0n) parts.push(`cookie=${hex(a.cookie)}`);
  for (const s of a.specs) {
    const whole = (r: FieldRef): boolean => r.start === 0 && r.end === (ofWidth(r.field) ?? 0) - 1;
    if (s.kind === 'load') {
      parts.push(`load:${'value' in s ? hex(s.value) : formatFieldRef(s.src)}->${formatFieldRef(s.dst)}`);
    } else if ('value' in s) {
      parts.push(whole(s.dst) ? `${learnNames[s.dst.field] ?? s.dst.field}=${formatValue(s.dst.field, { value: s.value, mask: full(s.dst.field) })}`
        : `${formatFieldRef(s.dst)}=${hex(s.value)}`);
    } else {
      const same = s.src.field === s.dst.field && s.src.start === s.dst.start && s.src.end === s.dst.end;
      parts.push(same ? formatFieldRef(s.dst) : `${formatFieldRef(s.dst)}=${formatFieldRef(s.src)}`);
    }
  }
  return `learn(${parts.join(',')})`;
}

/** The names ovs-ofctl prints for a learned match on a whole field. */
const learnNames: Readonly<Record<string, string>> = { ipv4_src: 'ip_src', ipv4_dst: 'ip_dst', ip_proto: 'nw_proto' };

/** An action list; an empty list is "drop", as ovs-ofctl prints it. */
export function formatActions(actions: readonly OfAction[], opts: OfctlOptions = {}): string {
  return actions.length === 0 ? 'drop' : actions.map((a) => formatAction(a, opts)).join(',');
}

/** One flow: `table=T, priority=P[, cookie=C], <match> actions=<actions>`. */
export function formatFlow(f: FlowSpec, opts: OfctlOptions = {}): string {
  const head = [`table=${f.table}`, `priority=${f.priority}`];
  if (opts.cookie === true) head.push(`cookie=${hex(f.cookie)}`);
  const match = formatMatchFields(f.match);
  return `${head.join(', ')}${match === '' ? '' : `, ${match}`} actions=${formatActions(f.actions, opts)}`;
}
