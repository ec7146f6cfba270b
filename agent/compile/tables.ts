// The OpenFlow table layout and register use of ovn-controller 23.03 (controller/lflow.h,
// include/ovn/logical-fields.h). The compiler places every logical flow with these; the physical
// tables (0, 37..41, 64..78) are filled by the agent's other parts.

/** OpenFlow table numbers (OFTABLE_*), as ovn-controller 23.03.1 defines them. */
export const OFTABLE = {
  PHY_TO_LOG: 0,
  LOG_INGRESS_PIPELINE: 8,
  OUTPUT_LARGE_PKT_DETECT: 37,
  OUTPUT_LARGE_PKT_PROCESS: 38,
  REMOTE_OUTPUT: 39,
  LOCAL_OUTPUT: 40,
  CHECK_LOOPBACK: 41,
  LOG_EGRESS_PIPELINE: 42,
  SAVE_INPORT: 64,
  LOG_TO_PHY: 65,
  MAC_BINDING: 66,
  MAC_LOOKUP: 67,
  CHK_LB_HAIRPIN: 68,
  CHK_LB_HAIRPIN_REPLY: 69,
  CT_SNAT_HAIRPIN: 70,
  GET_FDB: 71,
  LOOKUP_FDB: 72,
  CHK_IN_PORT_SEC: 73,
  CHK_IN_PORT_SEC_ND: 74,
  CHK_OUT_PORT_SEC: 75,
  ECMP_NH_MAC: 76,
  ECMP_NH: 77,
  CHK_LB_AFFINITY: 78,
} as const;

/** Where `output` goes: OFTABLE_OUTPUT_INIT from ingress, OFTABLE_SAVE_INPORT from egress. */
export const OFTABLE_OUTPUT_INIT = OFTABLE.OUTPUT_LARGE_PKT_DETECT;

/** Logical tables per pipeline (LOG_PIPELINE_LEN): `next` may not go past table 28. */
export const LOG_PIPELINE_LEN = 29;

/** OpenFlow registers with a logical meaning (MFF_LOG_*). */
export const LOG_REG = {
  /** MFF_LOG_FLAGS: the MLF_* bits. */
  FLAGS: 'reg10',
  DNAT_ZONE: 'reg11',
  SNAT_ZONE: 'reg12',
  CT_ZONE: 'reg13',
  INPORT: 'reg14',
  OUTPORT: 'reg15',
} as const;

/** MLF_* bit numbers of MFF_LOG_FLAGS (reg10) used by the actions' helper tables. */
export const MLF = {
  ALLOW_LOOPBACK: 0,
  RCV_FROM_RAMP: 1,
  FORCE_SNAT_FOR_DNAT: 2,
  FORCE_SNAT_FOR_LB: 3,
  LOCAL_ONLY: 4,
  NESTED_CONTAINER: 5,
  LOOKUP_MAC: 6,
  LOOKUP_LB_HAIRPIN: 7,
  LOOKUP_FDB: 8,
  SKIP_SNAT_FOR_LB: 9,
  LOCALPORT: 10,
  USE_SNAT_ZONE: 11,
  CHECK_PORT_SEC: 12,
  LOOKUP_COMMIT_ECMP_NH: 13,
  USE_LB_AFF_SESSION: 14,
} as const;

/** ACTION_OPCODE_* (include/ovn/actions.h, 23.03): the first word of a controller() userdata. */
export const ACTION_OPCODE = {
  ARP: 0,
  PUT_ARP: 1,
  PUT_DHCP_OPTS: 2,
  ND_NA: 3,
  PUT_ND: 4,
  PUT_DHCPV6_OPTS: 5,
  DNS_LOOKUP: 6,
  LOG: 7,
  PUT_ND_RA_OPTS: 8,
  ND_NS: 9,
  ICMP: 10,
  TCP_RESET: 11,
  ND_NA_ROUTER: 12,
  PUT_ICMP4_FRAG_MTU: 13,
  ICMP4_ERROR: 14,
  EVENT: 15,
  IGMP: 16,
  BIND_VPORT: 17,
  HANDLE_SVC_CHECK: 18,
  DHCP6_SERVER: 19,
  ICMP6_ERROR: 20,
  PUT_ICMP6_FRAG_MTU: 21,
  REJECT: 22,
  BFD_MSG: 23,
  SCTP_ABORT: 24,
  PUT_FDB: 25,
  ACTIVATION_STRATEGY_RARP: 26,
} as const;

/** OVN's controller userdata: its action header (the 32-bit opcode, 4 zero bytes), then `args`. */
export function controllerUserdata(opcode: number, args: readonly number[] = []): Uint8Array {
  const out = new Uint8Array(8 + args.length);
  new DataView(out.buffer).setUint32(0, opcode);
  out.set(args, 8);
  return out;
}

/** ct_mark / ct_label bits OVN sets on load-balanced connections (OVN_CT_*). */
export const OVN_CT = {
  BLOCKED: 1n,
  NATTED: 2n,
  LB_SKIP_SNAT: 4n,
  LB_FORCE_SNAT: 8n,
} as const;

/** NX_CTLR_NO_METER: a controller() action without a meter. */
export const NO_METER = 0xffffffff;
