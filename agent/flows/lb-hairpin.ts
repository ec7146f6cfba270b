// Load-balancer hairpin flows (OpenFlow tables 68, 69 and 70), as ovn-controller 23.03.1 builds
// them from a local SB Load_Balancer (controller/lflow.c, consider_lb_hairpin_flows). A packet
// is hairpinned when a load balancer sent it back to the backend it came from: after DNAT,
// ip.src == ip.dst == a backend. Then
//   table 68 (chk_lb_hairpin) sets flags.lookup_lb_hairpin (reg10[7]) for such a packet and
//     learn()s a flow into table 69 that recognises the backend's replies;
//   table 69 (chk_lb_hairpin_reply) holds only learned flows;
//   table 70 (ct_snat_hairpin) SNATs the hairpinned packet to the VIP, or to the load
//     balancer's options:hairpin_snat_ip, in the SNAT zone (reg12).
// A load balancer whose ovn-northd keeps the original destination in registers
// (options:hairpin_orig_tuple=true: reg1 / xxreg1 the VIP, reg2[0..15] its port) is matched on
// those; otherwise on the conntrack original tuple (ct_nw_dst, ct_tp_dst, ...), which needs
// ct_state +trk+dnat. Whether "already load balanced" is ct_mark.natted or ct_label.natted is
// SB_Global options:lb_hairpin_use_ct_mark (true unless "false").
//
// A template load balancer (options:template=true) names this chassis's template variables
// ("^NAME") in its VIPs and backends; they are expanded before parsing (agent/expr/templates.ts).
//
// Bad input is skipped as ovn-controller skips it: a VIP that does not parse, or any of whose
// backends does not (wrong family, port where the VIP has none or none where it has one), is
// left out whole; an unreadable hairpin_snat_ip is ignored. Pure: rows in, flows out.

import type * as sb from '../../ovsdb/rows/sb.js';
import { cookieOf } from '../compile/logical-flow.js';
import { LOG_REG, MLF, OFTABLE, OVN_CT } from '../compile/tables.js';
import { expandTemplates } from '../expr/templates.js';
import { parseLbAddress, parseLbHost, type LbAddress, type LbBackend } from '../actions/lb-key.js';
import { formatIpv4, formatIpv6 } from '../expr/to-matches.js';
import type { FieldRef, FlowSpec, LearnSpec, MaskedValue, OfAction } from '../openflow/types.js';
import type { Locality } from './local-datapaths.js';
import type { SbLookups } from './sb-store.js';

export interface LbVip extends LbAddress {
  /** 0 = no port (the VIP balances every protocol's traffic to its address). */
  readonly port: number;
  readonly backends: readonly LbBackend[];
}

/** A Load_Balancer as the hairpin flows read it. */
export interface ParsedLb {
  readonly vips: readonly LbVip[];
  /** IP protocol number: tcp unless the row says udp or sctp. */
  readonly proto: number;
  readonly origTuple: boolean;
  readonly snatIp4: bigint | undefined;
  readonly snatIp6: bigint | undefined;
}

const IPPROTO = { tcp: 6, udp: 17, sctp: 132 } as const;
const ETH_TYPE_IP = 0x0800n;
const ETH_TYPE_IPV6 = 0x86ddn;
/** OVS_CS_F_TRACKED | OVS_CS_F_DST_NAT. */
const CT_STATE_TRK_DNAT = 0x20n | 0x80n;
/** OFP_DEFAULT_PRIORITY: the priority of learned reply flows. */
const LEARNED_PRIORITY = 0x8000;
/**
 * VIPs of one load balancer, and backends of one VIP, beyond which the rest are ignored
 * (ovn-controller has no such limit). The flows are linear in the row's text, which the stream
 * already bounds; these only make the bound explicit, far above what a CMS writes.
 */
export const LB_VIPS_MAX = 65_536;
export const LB_BACKENDS_MAX = 65_536;

/** smap_get_bool: with default true only "false" (any case) is false, else only "true" is true. */
function optionBool(options: ReadonlyMap<string, string>, key: string, dflt: boolean): boolean {
  const v = (options.get(key) ?? '').toLowerCase();
  return dflt ? v !== 'false' : v === 'true';
}

/** Whether ovn-northd asks for ct_mark.natted (SB_Global options:lb_hairpin_use_ct_mark). */
export function lbHairpinUseCtMark(global: sb.SB_Global | undefined): boolean {
  return global === undefined ? true : optionBool(global.options, 'lb_hairpin_use_ct_mark', true);
}

/** One VIP and its backends; undefined when the VIP or any backend is bad (OVN drops it whole). */
export function parseLbVip(key: string, value: string): LbVip | undefined {
  const vip = parseLbAddress(key);
  if (vip === undefined) return undefined;
  const backends: LbBackend[] = [];
  for (const token of value.split(',')) {
    if (token === '') continue;
    const b = parseLbAddress(token);
    if (b === undefined || b.v6 !== vip.v6 || (vip.port !== 0) !== (b.port !== 0)) return undefined;
    if (backends.length < LB_BACKENDS_MAX) backends.push(b);
  }
  return { ...vip, backends };
}

/** hairpin_snat_ip: space-separated addresses (a /plen is allowed and ignored), read up to the
 *  first that is not one; the first of each family is used. */
function parseSnatIps(text: string | undefined): { v4: bigint | undefined; v6: bigint | undefined } {
  let v4: bigint | undefined;
  let v6: bigint | undefined;
  for (const token of (text ?? '').split(/\s+/)) {
    if (token === '') continue;
    const m = /^([^/]+)(?:\/([0-9]{1,3}))?$/.exec(token);
    const a = m === null ? undefined : parseLbHost(m[1] as string);
    if (a === undefined || (m?.[2] !== undefined && Number(m[2]) > (a.v6 ? 128 : 32))) break;
    if (a.v6) v6 ??= a.ip;
    else v4 ??= a.ip;
  }
  return { v4, v6 };
}

/**
 * A Load_Balancer as this chassis reads it: a template load balancer's (options:template) VIPs
 * and backends with `templateVars` expanded first, then parsed as any other's.
 */
export function parseLoadBalancer(lb: sb.Load_Balancer, templateVars?: ReadonlyMap<string, string>): ParsedLb {
  const vips: LbVip[] = [];
  const template = optionBool(lb.options, 'template', false);
  const text = (s: string): string => (template ? expandTemplates(s, templateVars) : s);
  // Sorted: two keys that read as the same VIP keep the first, whatever the map's order.
  for (const key of [...lb.vips.keys()].sort()) {
    if (vips.length >= LB_VIPS_MAX) break;
    const v = parseLbVip(text(key), text(lb.vips.get(key) as string));
    if (v !== undefined) vips.push(v);
  }
  const p = lb.protocol[0];
  const snat = parseSnatIps(lb.options.get('hairpin_snat_ip'));
  return {
    vips,
    proto: p === 'udp' ? IPPROTO.udp : p === 'sctp' ? IPPROTO.sctp : IPPROTO.tcp,
    origTuple: optionBool(lb.options, 'hairpin_orig_tuple', false),
    snatIp4: snat.v4,
    snatIp6: snat.v6,
  };
}

/** Whether one of the load balancer's datapaths (its own or its group's) is local. */
export function isLocalLb(sbl: SbLookups, locality: Locality, lb: sb.Load_Balancer): boolean {
  for (const dp of datapathsOf(sbl, lb)) {
    const key = sbl.datapath(dp)?.tunnel_key;
    if (key !== undefined && locality.byKey.has(key)) return true;
  }
  return false;
}

function datapathsOf(sbl: SbLookups, lb: sb.Load_Balancer): string[] {
  const out = [...lb.datapaths];
  for (const g of lb.datapath_group) out.push(...(sbl.dpGroup(g)?.datapaths ?? []));
  return out;
}

const ones = (bits: number): bigint => (1n << BigInt(bits)) - 1n;
const exact = (value: bigint | number, bits: number): MaskedValue => ({ value: BigInt(value), mask: ones(bits) });
const ref = (field: string, bits: number, start = 0): FieldRef => ({ field, start, end: start + bits - 1 });
const l4 = (proto: number, dir: 'src' | 'dst'): string => `${proto === IPPROTO.udp ? 'udp' : proto === IPPROTO.sctp ? 'sctp' : 'tcp'}_${dir}`;

/** What both table 68 and table 70 match of the original destination (the VIP and its port). */
function origDestination(m: Map<string, MaskedValue>, lb: ParsedLb, vip: LbVip, withPort: boolean): void {
  if (!lb.origTuple) m.set('ct_state', { value: CT_STATE_TRK_DNAT, mask: CT_STATE_TRK_DNAT });
  m.set('eth_type', exact(vip.v6 ? ETH_TYPE_IPV6 : ETH_TYPE_IP, 16));
  if (lb.origTuple) m.set(vip.v6 ? 'xxreg1' : 'reg1', exact(vip.ip, vip.v6 ? 128 : 32));
  else m.set(vip.v6 ? 'ct_ipv6_dst' : 'ct_nw_dst', exact(vip.ip, vip.v6 ? 128 : 32));
  if (!withPort) return;
  m.set('ip_proto', exact(lb.proto, 8));
  if (lb.origTuple) {
    m.set('reg2', { value: BigInt(vip.port), mask: 0xffffn });
  } else {
    m.set('ct_nw_proto', exact(lb.proto, 8));
    m.set('ct_tp_dst', exact(vip.port, 16));
  }
}

/** Table 68's learn(): a table-69 flow for replies from the backend to the VIP (or SNAT IP). */
function learnReply(lb: ParsedLb, vip: LbVip, backend: LbBackend, cookie: bigint): OfAction {
  const v6 = vip.v6;
  const replyDst = (v6 ? lb.snatIp6 : lb.snatIp4) ?? vip.ip;
  const ipSrc = ref(v6 ? 'ipv6_src' : 'ipv4_src', v6 ? 128 : 32);
  const specs: LearnSpec[] = [
    { kind: 'match', dst: ref('metadata', 64), src: ref('metadata', 64) },
    { kind: 'match', dst: ref('eth_type', 16), value: v6 ? ETH_TYPE_IPV6 : ETH_TYPE_IP },
    { kind: 'match', dst: ipSrc, src: ipSrc },
    { kind: 'match', dst: ref(v6 ? 'ipv6_dst' : 'ipv4_dst', v6 ? 128 : 32), value: replyDst },
  ];
  if (backend.port !== 0) {
    specs.push({ kind: 'match', dst: ref('ip_proto', 8), value: BigInt(lb.proto) });
    specs.push({ kind: 'match', dst: ref(l4(lb.proto, 'src'), 16), src: ref(l4(lb.proto, 'dst'), 16) });
  } else {
    specs.push({ kind: 'match', dst: ref('ip_proto', 8), src: ref('ip_proto', 8) });
  }
  specs.push({ kind: 'load', dst: ref(LOG_REG.FLAGS, 1, MLF.LOOKUP_LB_HAIRPIN), value: 1n });
  return { kind: 'learn', table: OFTABLE.CHK_LB_HAIRPIN_REPLY, priority: LEARNED_PRIORITY, cookie, deleteLearned: true, specs };
}

/** Table 68: one flow per backend of each VIP. */
function hairpinFlow(lb: ParsedLb, vip: LbVip, backend: LbBackend, useCtMark: boolean, cookie: bigint): FlowSpec {
  const m = new Map<string, MaskedValue>();
  const bits = vip.v6 ? 128 : 32;
  origDestination(m, lb, vip, false);
  m.set(vip.v6 ? 'ipv6_src' : 'ipv4_src', exact(backend.ip, bits));
  m.set(vip.v6 ? 'ipv6_dst' : 'ipv4_dst', exact(backend.ip, bits));
  if (backend.port !== 0) {
    m.set('ip_proto', exact(lb.proto, 8));
    m.set(l4(lb.proto, 'dst'), exact(backend.port, 16));
    if (lb.origTuple) m.set('reg2', { value: BigInt(vip.port), mask: 0xffffn });
    else {
      m.set('ct_nw_proto', exact(lb.proto, 8));
      m.set('ct_tp_dst', exact(vip.port, 16));
    }
  }
  // Only traffic that was load balanced: ct_mark.natted, or ct_label.natted for an ovn-northd
  // that still keeps it there.
  m.set(useCtMark ? 'ct_mark' : 'ct_label', { value: OVN_CT.NATTED, mask: OVN_CT.NATTED });
  const actions: OfAction[] = [
    { kind: 'load', dst: ref(LOG_REG.FLAGS, 1, MLF.LOOKUP_LB_HAIRPIN), value: 1n },
    learnReply(lb, vip, backend, cookie),
  ];
  return { table: OFTABLE.CHK_LB_HAIRPIN, priority: 100, match: m, actions, cookie };
}

/**
 * Table 70 for one VIP: SNAT to the VIP in one flow for every datapath, or, when the load
 * balancer has a hairpin_snat_ip of the VIP's family, to that address in one flow per local
 * datapath of the load balancer, above the general ones (another load balancer may share the
 * VIP). A VIP without a port is below one with a port.
 */
function snatFlows(sbl: SbLookups, locality: Locality, lbRow: sb.Load_Balancer, lb: ParsedLb, vip: LbVip, cookie: bigint): FlowSpec[] {
  const snatIp = vip.v6 ? lb.snatIp6 : lb.snatIp4;
  const m = new Map<string, MaskedValue>();
  origDestination(m, lb, vip, vip.port !== 0);
  const text = vip.v6 ? formatIpv6(snatIp ?? vip.ip) : formatIpv4(snatIp ?? vip.ip);
  const actions: OfAction[] = [{ kind: 'ct', commit: true, zone: ref(LOG_REG.SNAT_ZONE, 16), exec: [], nat: { kind: 'src', addrMin: text } }];
  const drop = vip.port === 0 ? 10 : 0;
  if (snatIp === undefined) return [{ table: OFTABLE.CT_SNAT_HAIRPIN, priority: 100 - drop, match: m, actions, cookie }];
  const out: FlowSpec[] = [];
  for (const dp of datapathsOf(sbl, lbRow)) {
    const key = sbl.datapath(dp)?.tunnel_key;
    if (key === undefined || !locality.byKey.has(key)) continue;
    out.push({ table: OFTABLE.CT_SNAT_HAIRPIN, priority: 200 - drop, match: new Map([...m, ['metadata', exact(key, 64)]]), actions, cookie });
  }
  return out;
}

/**
 * The hairpin flows of one Load_Balancer on this chassis: none unless it is local. Within one
 * load balancer a (table, priority, match) is produced once, the first time (as ovn-controller's
 * desired flow table keeps the first of duplicates).
 */
export function lbHairpinFlows(sbl: SbLookups, locality: Locality, useCtMark: boolean, row: sb.Load_Balancer, templateVars?: ReadonlyMap<string, string>): FlowSpec[] {
  if (!isLocalLb(sbl, locality, row)) return [];
  const lb = parseLoadBalancer(row, templateVars);
  const cookie = cookieOf(row._uuid);
  const flows: FlowSpec[] = [];
  for (const vip of lb.vips) for (const b of vip.backends) flows.push(hairpinFlow(lb, vip, b, useCtMark, cookie));
  for (const vip of lb.vips) flows.push(...snatFlows(sbl, locality, row, lb, vip, cookie));
  const seen = new Set<string>();
  return flows.filter((f) => {
    const k = `${f.table}/${f.priority}/${[...f.match].map(([n, v]) => `${n}=${v.value}/${v.mask}`).sort().join(',')}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}
