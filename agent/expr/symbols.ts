// The logical field table of OVN 23.03 (lib/logical-fields.c, ovn_init_symtab): every name a
// logical flow's match may use, with its width, its OpenFlow field (or the register bits it
// occupies), and its prerequisites. Pure data plus one builder; no module state.

import assert from 'node:assert/strict';

/** ordinal: fully maskable, any relop. nominal: == only (and only positively for predicates).
 *  boolean: a 1-bit predicate or subfield that is not nominal. */
export type Level = 'nominal' | 'boolean' | 'ordinal';

/** A field with its own OpenFlow match field. 'of' names the field as our OpenFlow text prints it;
 *  xxregN and xregN are printed as the 32-bit registers they span. */
export interface FieldSymbol {
  readonly kind: 'field';
  readonly name: string;
  readonly width: number;
  readonly of: string;
  readonly level: Level;
  /** Never used as a conjunctive-match dimension: always cross-multiplied (OVN's must_crossproduct). */
  readonly mustCrossproduct: boolean;
  readonly prereqs: string | null;
}

/** A string field: a logical port name, resolved to its tunnel key in a 32-bit register. */
export interface StringSymbol {
  readonly kind: 'string';
  readonly name: string;
  readonly width: 0;
  readonly of: string;
  readonly level: 'nominal';
  readonly prereqs: string | null;
}

export interface SubfieldSymbol {
  readonly kind: 'subfield';
  readonly name: string;
  readonly width: number;
  readonly parent: string;
  readonly parentOfs: number;
  readonly level: Level;
  readonly prereqs: string | null;
}

/** A 1-bit name for a whole expression, e.g. `ip4` for `eth.type == 0x800`. */
export interface PredicateSymbol {
  readonly kind: 'predicate';
  readonly name: string;
  readonly width: 1;
  readonly expansion: string;
  readonly level: Level;
  readonly prereqs: null;
}

export type ExprSymbol = FieldSymbol | StringSymbol | SubfieldSymbol | PredicateSymbol;
export type Symtab = ReadonlyMap<string, ExprSymbol>;

/** ct_state bit numbers, as Open vSwitch's CS_* bits (the order of CS_STATES). */
export const ctStateBits = {
  new: 0, est: 1, rel: 2, rpl: 3, inv: 4, trk: 5, snat: 6, dnat: 7,
} as const;

/** Logical flag bits in MFF_LOG_FLAGS (reg10), from include/ovn/logical-fields.h. */
export const logFlagBits = {
  loopback: 0,
  force_snat_for_dnat: 2,
  force_snat_for_lb: 3,
  skip_snat_for_lb: 9,
  use_snat_zone: 11,
} as const;

/** Logical register count (MFF_N_LOG_REGS): reg0..reg9, xreg0..xreg4, xxreg0..xxreg1. */
export const logRegsN = 10;

export function buildSymtab(): Symtab {
  const t = new Map<string, ExprSymbol>();
  const add = (s: ExprSymbol): void => {
    assert(!t.has(s.name), `symbol ${s.name} defined twice`);
    t.set(s.name, s);
  };
  const field = (name: string, width: number, of: string, prereqs: string | null,
    opts: { nominal?: boolean; cross?: boolean } = {}): void => {
    add({ kind: 'field', name, width, of, level: opts.nominal === true ? 'nominal' : 'ordinal',
      mustCrossproduct: opts.cross === true, prereqs });
  };
  // A subfield "name" = parent[lo..hi]; it inherits the parent's level, as OVN's does.
  const sub = (name: string, prereqs: string | null, parent: string, lo: number, hi: number): void => {
    const p = t.get(parent);
    assert(p !== undefined && (p.kind === 'field' || p.kind === 'subfield'), `bad parent ${parent}`);
    add({ kind: 'subfield', name, width: hi - lo + 1, parent, parentOfs: lo, level: p.level, prereqs });
  };
  const pred = (name: string, expansion: string, level: 'nominal' | 'boolean'): void => {
    add({ kind: 'predicate', name, width: 1, expansion, level, prereqs: null });
  };

  // Logical ports: MFF_LOG_INPORT = reg14, MFF_LOG_OUTPORT = reg15.
  add({ kind: 'string', name: 'inport', width: 0, of: 'reg14', level: 'nominal', prereqs: null });
  add({ kind: 'string', name: 'outport', width: 0, of: 'reg15', level: 'nominal', prereqs: null });

  // Registers: xxreg0..1 are real fields; xreg0..3 and reg0..7 are their subfields; xreg4 is a
  // real field and reg8, reg9 are its halves.
  for (let xxi = 0; xxi < Math.floor(logRegsN / 4); xxi++) field(`xxreg${xxi}`, 128, `xxreg${xxi}`, null);
  for (let xi = 0; xi < logRegsN / 2; xi++) {
    const xxi = Math.floor(xi / 2);
    if (xxi < Math.floor(logRegsN / 4)) {
      const lsb = 64 * (1 - (xi % 2));
      sub(`xreg${xi}`, null, `xxreg${xxi}`, lsb, lsb + 63);
    } else {
      field(`xreg${xi}`, 64, `xreg${xi}`, null);
    }
  }
  for (let i = 0; i < logRegsN; i++) {
    const xxi = Math.floor(i / 4);
    const xi = Math.floor(i / 2);
    if (xxi < Math.floor(logRegsN / 4)) {
      const lsb = 32 * (3 - (i % 4));
      sub(`reg${i}`, null, `xxreg${xxi}`, lsb, lsb + 31);
    } else {
      const lsb = 32 * (1 - (i % 2));
      sub(`reg${i}`, null, `xreg${xi}`, lsb, lsb + 31);
    }
  }

  field('flags', 32, 'reg10', null);
  for (const [flag, bit] of Object.entries(logFlagBits)) sub(`flags.${flag}`, null, 'flags', bit, bit);

  field('ct_mark', 32, 'ct_mark', null);
  sub('ct_mark.blocked', null, 'ct_mark', 0, 0);
  sub('ct_mark.natted', null, 'ct_mark', 1, 1);
  sub('ct_mark.ecmp_reply_port', null, 'ct_mark', 16, 31);
  sub('ct_mark.skip_snat', null, 'ct_mark', 2, 2);
  sub('ct_mark.force_snat', null, 'ct_mark', 3, 3);
  field('ct_label', 128, 'ct_label', null);
  sub('ct_label.blocked', null, 'ct_label', 0, 0);
  sub('ct_label.natted', null, 'ct_label', 1, 1);
  sub('ct_label.ecmp_reply_eth', null, 'ct_label', 32, 79);
  sub('ct_label.ecmp_reply_port', null, 'ct_label', 80, 95);
  sub('ct_label.label', null, 'ct_label', 96, 127);
  sub('ct_label.skip_snat', null, 'ct_label', 2, 2);
  sub('ct_label.force_snat', null, 'ct_label', 3, 3);

  field('ct_state', 32, 'ct_state', null);
  for (const [name, bit] of Object.entries(ctStateBits)) {
    sub(`ct.${name}`, bit === ctStateBits.trk ? null : 'ct.trk', 'ct_state', bit, bit);
  }

  field('eth.src', 48, 'eth_src', null);
  field('eth.dst', 48, 'eth_dst', null);
  field('eth.type', 16, 'eth_type', null, { nominal: true, cross: true });
  pred('eth.bcast', 'eth.dst == ff:ff:ff:ff:ff:ff', 'boolean');
  sub('eth.mcast', null, 'eth.dst', 40, 40);
  pred('eth.mcastv6', 'eth.dst[32..47] == 0x3333', 'boolean');

  field('vlan.tci', 16, 'vlan_tci', null);
  pred('vlan.present', 'vlan.tci[12]', 'boolean');
  sub('vlan.pcp', 'vlan.present', 'vlan.tci', 13, 15);
  sub('vlan.vid', 'vlan.present', 'vlan.tci', 0, 11);

  pred('ip4', 'eth.type == 0x800', 'nominal');
  pred('ip6', 'eth.type == 0x86dd', 'nominal');
  pred('ip', 'ip4 || ip6', 'nominal');
  field('ip.proto', 8, 'ip_proto', 'ip', { nominal: true, cross: true });
  field('ip.dscp', 6, 'ip_dscp', 'ip', { nominal: true });
  field('ip.ecn', 2, 'ip_ecn', 'ip', { nominal: true });
  field('ip.ttl', 8, 'nw_ttl', 'ip', { nominal: true });

  field('ip4.src', 32, 'ipv4_src', 'ip4');
  field('ip4.dst', 32, 'ipv4_dst', 'ip4');
  pred('ip4.src_mcast', 'ip4.src[28..31] == 0xe', 'boolean');
  pred('ip4.mcast', 'eth.mcast && ip4.dst[28..31] == 0xe', 'boolean');

  pred('icmp4', 'ip4 && ip.proto == 1', 'nominal');
  field('icmp4.type', 8, 'icmpv4_type', 'icmp4', { nominal: true });
  field('icmp4.code', 8, 'icmpv4_code', 'icmp4', { nominal: true });
  pred('igmp', 'ip4 && ip.proto == 2', 'nominal');

  field('ip6.src', 128, 'ipv6_src', 'ip6');
  field('ip6.dst', 128, 'ipv6_dst', 'ip6');
  field('ip6.label', 20, 'ipv6_label', 'ip6');
  pred('ip6.mcast_rsvd', 'ip6.dst[116..127] == 0xff0 && ip6.dst[0..111] == 0x0', 'boolean');
  pred('ip6.mcast_all_nodes', 'ip6.dst == ff01::1 || ip6.dst == ff02::1', 'boolean');
  pred('ip6.mcast_all_rtrs', 'ip6.dst == ff01::2 || ip6.dst == ff02::2 || ip6.dst == ff05::2', 'boolean');
  pred('ip6.mcast_sol_node', 'ip6.dst == ff02::1:ff00:0000/104', 'boolean');
  pred('ip6.mcast_flood', 'eth.mcastv6 && (ip6.mcast_rsvd || ip6.mcast_all_nodes || '
    + 'ip6.mcast_all_rtrs || ip6.mcast_sol_node)', 'boolean');
  pred('ip6.mcast', 'eth.mcastv6 && ip6.dst[120..127] == 0xff', 'boolean');

  pred('icmp6', 'ip6 && ip.proto == 58', 'nominal');
  field('icmp6.type', 8, 'icmpv6_type', 'icmp6', { nominal: true, cross: true });
  field('icmp6.code', 8, 'icmpv6_code', 'icmp6', { nominal: true, cross: true });
  pred('icmp', 'icmp4 || icmp6', 'nominal');

  field('ip.frag', 8, 'ip_frag', 'ip');
  pred('ip.is_frag', 'ip.frag[0]', 'boolean');
  pred('ip.later_frag', 'ip.frag[1]', 'boolean');
  pred('ip.first_frag', 'ip.is_frag && !ip.later_frag', 'boolean');

  pred('arp', 'eth.type == 0x806', 'nominal');
  field('arp.op', 16, 'arp_op', 'arp', { nominal: true });
  field('arp.spa', 32, 'arp_spa', 'arp');
  field('arp.sha', 48, 'arp_sha', 'arp');
  field('arp.tpa', 32, 'arp_tpa', 'arp');
  field('arp.tha', 48, 'arp_tha', 'arp');

  // RARP uses ARP's layout and therefore ARP's OpenFlow fields.
  pred('rarp', 'eth.type == 0x8035', 'nominal');
  field('rarp.op', 16, 'arp_op', 'rarp', { nominal: true });
  field('rarp.spa', 32, 'arp_spa', 'rarp');
  field('rarp.sha', 48, 'arp_sha', 'rarp');
  field('rarp.tpa', 32, 'arp_tpa', 'rarp');
  field('rarp.tha', 48, 'arp_tha', 'rarp');

  pred('nd', 'icmp6.type == {135, 136} && icmp6.code == 0 && ip.ttl == 255', 'nominal');
  pred('nd_ns', 'icmp6.type == 135 && icmp6.code == 0 && ip.ttl == 255', 'nominal');
  pred('nd_na', 'icmp6.type == 136 && icmp6.code == 0 && ip.ttl == 255', 'nominal');
  pred('nd_rs', 'icmp6.type == 133 && icmp6.code == 0 && ip.ttl == 255', 'nominal');
  pred('nd_ra', 'icmp6.type == 134 && icmp6.code == 0 && ip.ttl == 255', 'nominal');
  field('nd.target', 128, 'nd_target', 'nd');
  field('nd.sll', 48, 'nd_sll', 'nd_ns');
  field('nd.tll', 48, 'nd_tll', 'nd_na');

  pred('mldv1', 'ip6.src == fe80::/10 && icmp6.type == {130, 131, 132}', 'nominal');
  pred('mldv2', 'ip6.dst == ff02::16 && icmp6.type == 143', 'nominal');

  pred('tcp', 'ip.proto == 6', 'nominal');
  field('tcp.src', 16, 'tcp_src', 'tcp');
  field('tcp.dst', 16, 'tcp_dst', 'tcp');
  field('tcp.flags', 16, 'tcp_flags', 'tcp');
  pred('udp', 'ip.proto == 17', 'nominal');
  field('udp.src', 16, 'udp_src', 'udp');
  field('udp.dst', 16, 'udp_dst', 'udp');
  pred('sctp', 'ip.proto == 132', 'nominal');
  field('sctp.src', 16, 'sctp_src', 'sctp');
  field('sctp.dst', 16, 'sctp_dst', 'sctp');

  field('pkt.mark', 32, 'pkt_mark', null);
  return t;
}
