// The OpenFlow vocabulary shared by the flow compiler (which produces it) and the OpenFlow
// channel (which encodes it on the wire). Plain data, no behaviour: a compiled logical flow is a
// list of FlowSpecs, and the channel turns each into a flow_mod. Field names are the ones
// ovs-ofctl prints (eth_src, reg14, metadata, ct_state, tun_metadata0, …), so a FlowSpec can be
// rendered as ovs-ofctl text for golden tests and read by eye.
//
// Additions are welcome (a new action kind appended to the union); changing the meaning of an
// existing member breaks both sides.

import type { FlowMatch, MaskedValue } from '../expr/to-matches.js';

export type { FlowMatch, MaskedValue };

/** A bit range of an OpenFlow field, as ovs-ofctl writes NXM_NX_REG13[0..15] or reg13[0..15].
 *  start and end are inclusive bit offsets; a whole field has start 0 and end width-1. */
export interface FieldRef {
  readonly field: string;
  readonly start: number;
  readonly end: number;
}

/** ct(nat(...)): src or dst NAT, with an optional address range and port range. */
export interface NatSpec {
  readonly kind: 'src' | 'dst' | 'plain';
  /** Dotted IPv4 or IPv6 text; absent for a bare nat (reuse the committed mapping). */
  readonly addrMin?: string;
  readonly addrMax?: string;
  readonly portMin?: number;
  readonly portMax?: number;
  readonly persistent?: boolean;
  readonly hash?: boolean;
  readonly random?: boolean;
}

/**
 * One flow_mod_spec of learn(): a field the learned flow matches, or loads when it runs, taken
 * from a field of the packet that learns (`src`) or from an immediate `value`. The widths of
 * `dst` and `src` are equal.
 */
export type LearnSpec =
  | { readonly kind: 'match' | 'load'; readonly dst: FieldRef; readonly src: FieldRef }
  | { readonly kind: 'match' | 'load'; readonly dst: FieldRef; readonly value: bigint };

export type OfAction =
  /** Output to a numbered OpenFlow port (or a reserved one: 0xfffffff8 in_port, …). */
  | { readonly kind: 'output'; readonly port: number }
  /** output:NXM_NX_REG15[0..31] style: the port number is read from a field. */
  | { readonly kind: 'output_reg'; readonly src: FieldRef }
  /** resubmit(,table) (inPort absent) or resubmit(port,table). */
  | { readonly kind: 'resubmit'; readonly table: number; readonly inPort?: number }
  /** set_field:value[/mask]->field (a load of the whole field or the masked bits). */
  | { readonly kind: 'set_field'; readonly field: string; readonly value: bigint; readonly mask?: bigint }
  /** load:value->field[start..end]. */
  | { readonly kind: 'load'; readonly dst: FieldRef; readonly value: bigint }
  /** move:src->dst; widths equal. */
  | { readonly kind: 'move'; readonly src: FieldRef; readonly dst: FieldRef }
  | { readonly kind: 'push'; readonly src: FieldRef }
  | { readonly kind: 'pop'; readonly dst: FieldRef }
  | { readonly kind: 'dec_ttl' }
  /** mod_nw_ttl:N (OFPAT_SET_NW_TTL): the IPv4 TTL or IPv6 hop limit set to `ttl`. */
  | { readonly kind: 'set_nw_ttl'; readonly ttl: number }
  | {
      readonly kind: 'ct';
      readonly commit: boolean;
      readonly force?: boolean;
      /** A zone from a field (reg13[0..15]) or an immediate zone number. */
      readonly zone?: FieldRef | number;
      /** Recirculate into this table after conntrack; absent = no recirculation. */
      readonly table?: number;
      readonly alg?: number;
      readonly nat?: NatSpec;
      /** Actions run inside ct(exec(...)): only set_field/load to ct_mark and ct_label. */
      readonly exec: readonly OfAction[];
    }
  | { readonly kind: 'ct_clear' }
  | { readonly kind: 'conjunction'; readonly id: number; readonly clause: number; readonly nClauses: number }
  /** controller(userdata=…, pause, meter_id=…): a packet-in carrying OVN's action opcode and args. */
  | {
      readonly kind: 'controller';
      readonly userdata: Uint8Array;
      readonly pause?: boolean;
      readonly maxLen?: number;
      readonly reason?: 'no_match' | 'action' | 'invalid_ttl';
      readonly meterId?: number;
      /** The controller connection id packet-ins go to (NXAC2PT_CONTROLLER_ID); absent = 0. */
      readonly controllerId?: number;
    }
  | { readonly kind: 'group'; readonly groupId: number }
  /** meter:N (OpenFlow 1.5's OFPAT_METER): the packet passes meter N, which may drop it. The
   *  meter must exist when the flow is installed. */
  | { readonly kind: 'meter'; readonly meterId: number }
  | { readonly kind: 'clone'; readonly actions: readonly OfAction[] }
  /** check_pkt_larger(len)->dst: dst is a 1-bit field. */
  | { readonly kind: 'check_pkt_larger'; readonly pktLen: number; readonly dst: FieldRef }
  | { readonly kind: 'note'; readonly data: Uint8Array }
  | { readonly kind: 'drop' }
  | { readonly kind: 'push_vlan'; readonly ethertype: number }
  | { readonly kind: 'pop_vlan' }
  /** Anything that writes a register from a learned table lookup is expressed with these and resubmit. */
  | { readonly kind: 'exit' }
  /**
   * controller(userdata=…) for OVN's nested-action opcodes (arp, nd_na, nd_ns, icmp4, icmp6,
   * icmp4_error, icmp6_error, tcp_reset, reject, …). The userdata is OVN's 8-byte action header
   * (the 32-bit opcode, then 4 zero bytes) followed by `nested` encoded as OpenFlow 1.5 actions,
   * which ovn-controller hands back in a packet-out. The codec produces those bytes; the
   * compiler only says what they are. max_len is 65535 and the reason "action", as for OVN.
   */
  | {
      readonly kind: 'controller_op';
      readonly opcode: number;
      readonly nested: readonly OfAction[];
      readonly pause?: boolean;
      /** Absent: no meter (NX_CTLR_NO_METER). */
      readonly meterId?: number;
    }
  /**
   * dec_ttl(id,…) as Nicira's NXAST_DEC_TTL_CNT_IDS: on TTL expiry, packet-in to these
   * controller ids. OVN's `ip.ttl--` installs it with no ids, `dec_ttl()` (expired packets are
   * dropped, not sent to a controller), which plain 'dec_ttl' (OFPAT_DEC_NW_TTL) cannot say.
   */
  | { readonly kind: 'dec_ttl_cnt_ids'; readonly controllerIds: readonly number[] }
  /**
   * bundle(eth_src,0,active_backup,ofport,members:...): output to the first member port that is
   * up (Open vSwitch reads a port's BFD or CFM state and carrier), as OVN sends to an HA group.
   */
  | { readonly kind: 'bundle_active_backup'; readonly members: readonly number[] }
  /**
   * sample(...) as Nicira's NXAST_SAMPLE: with probability/65535, the packet is reported to the
   * IPFIX collectors of the switch's Flow_Sample_Collector_Set `collectorSetId`, tagged with the
   * observation domain and point (all four fields 32 bits but probability, 16). Only the form
   * without sampling_port and direction, the one OVN installs.
   */
  | {
      readonly kind: 'sample';
      readonly probability: number;
      readonly collectorSetId: number;
      readonly obsDomainId: number;
      readonly obsPointId: number;
    }
  /**
   * learn(...) as Nicira's NXAST_LEARN: the packet adds (or refreshes) a flow in `table`, built
   * from `specs`. Timeouts absent are 0 (permanent); deleteLearned removes the learned flows
   * with the flow that holds this action (NX_LEARN_F_DELETE_LEARNED), sendFlowRem asks for a
   * flow-removed message from them.
   */
  | {
      readonly kind: 'learn';
      readonly table: number;
      readonly priority: number;
      readonly cookie: bigint;
      readonly idleTimeout?: number;
      readonly hardTimeout?: number;
      readonly finIdleTimeout?: number;
      readonly finHardTimeout?: number;
      readonly sendFlowRem?: true;
      readonly deleteLearned?: true;
      readonly specs: readonly LearnSpec[];
    };

/** One OpenFlow flow as the compiler wants it installed. */
export interface FlowSpec {
  readonly table: number;
  readonly priority: number;
  /** OpenFlow field name → masked value; absent fields are wildcarded. */
  readonly match: ReadonlyMap<string, MaskedValue>;
  readonly actions: readonly OfAction[];
  /** The flow's cookie: OVN puts the first 32 bits of the logical flow's UUID here. */
  readonly cookie: bigint;
}

/** One bucket of a group. */
export interface GroupBucket {
  readonly weight?: number;
  /**
   * The port whose liveness decides whether the bucket may be chosen (OFPGBPT15_WATCH_PORT):
   * fwd_group(liveness=true) watches the tunnel to the child's chassis. Absent: none (OFPP_ANY).
   */
  readonly watchPort?: number;
  readonly actions: readonly OfAction[];
}

/** An OpenFlow group (select groups carry ct_lb_mark backends and fwd_group's child ports). */
export interface GroupSpec {
  readonly groupId: number;
  readonly type: 'all' | 'select' | 'indirect' | 'ff';
  /** selection_method=dp_hash / hash and its fields, as OVN sets them for load balancers. */
  readonly selectionMethod?: 'dp_hash' | 'hash';
  /**
   * selection_method_param, the 64-bit parameter of the selection method (only with one):
   * OVN's select action sets 1 << 32, which asks dp_hash for the symmetric L4 hash
   * (OVS_HASH_ALG_SYM_L4). Absent means 0, and a group that reads back with 0 has none.
   */
  readonly selectionMethodParam?: bigint;
  readonly fields?: readonly string[];
  readonly buckets: readonly GroupBucket[];
}

/** OFPMF13_* meter flags: the rate unit (exactly one of KBPS and PKTPS), whether bands have a
 *  burst size, whether the switch keeps statistics. */
export const OFPMF = { KBPS: 1, PKTPS: 2, BURST: 4, STATS: 8 } as const;

/** One band of a meter: above `rate` (in the meter's unit), with `burstSize` of slack, drop
 *  (or, for a band some other controller made, lower the DSCP by `precLevel`). */
export interface MeterBand {
  readonly type: 'drop' | 'dscp_remark';
  readonly rate: number;
  readonly burstSize: number;
  readonly precLevel?: number;
}

/** An OpenFlow meter as the agent installs it (meter_mod) and the switch reports it
 *  (OFPMP_METER_CONFIG). */
export interface MeterSpec {
  readonly meterId: number;
  /** OFPMF bits. */
  readonly flags: number;
  readonly bands: readonly MeterBand[];
}
