// The OVN 23.03 logical pipeline stages, by name and table number, exactly as ovn-northd 23.03
// spells them (verified against `ovn-sbctl lflow-list` of the real 23.03.1): a logical switch
// has 27 ingress and 10 egress stages, a logical router 22 ingress and 7 egress. A stage's
// table number is its index in its pipeline.

export type Pipeline = 'ingress' | 'egress';

export interface Stage {
  readonly name: string;
  readonly pipeline: Pipeline;
  readonly table: number;
}

const LS_IN = [
  'ls_in_check_port_sec', 'ls_in_apply_port_sec', 'ls_in_lookup_fdb', 'ls_in_put_fdb', 'ls_in_pre_acl',
  'ls_in_pre_lb', 'ls_in_pre_stateful', 'ls_in_acl_hint', 'ls_in_acl', 'ls_in_qos_mark', 'ls_in_qos_meter',
  'ls_in_lb_aff_check', 'ls_in_lb', 'ls_in_lb_aff_learn', 'ls_in_pre_hairpin', 'ls_in_nat_hairpin',
  'ls_in_hairpin', 'ls_in_acl_after_lb', 'ls_in_stateful', 'ls_in_arp_rsp', 'ls_in_dhcp_options',
  'ls_in_dhcp_response', 'ls_in_dns_lookup', 'ls_in_dns_response', 'ls_in_external_port', 'ls_in_l2_lkup',
  'ls_in_l2_unknown',
] as const;

const LS_OUT = [
  'ls_out_pre_acl', 'ls_out_pre_lb', 'ls_out_pre_stateful', 'ls_out_acl_hint', 'ls_out_acl',
  'ls_out_qos_mark', 'ls_out_qos_meter', 'ls_out_stateful', 'ls_out_check_port_sec', 'ls_out_apply_port_sec',
] as const;

const LR_IN = [
  'lr_in_admission', 'lr_in_lookup_neighbor', 'lr_in_learn_neighbor', 'lr_in_ip_input', 'lr_in_unsnat',
  'lr_in_defrag', 'lr_in_lb_aff_check', 'lr_in_dnat', 'lr_in_lb_aff_learn', 'lr_in_ecmp_stateful',
  'lr_in_nd_ra_options', 'lr_in_nd_ra_response', 'lr_in_ip_routing_pre', 'lr_in_ip_routing',
  'lr_in_ip_routing_ecmp', 'lr_in_policy', 'lr_in_policy_ecmp', 'lr_in_arp_resolve', 'lr_in_chk_pkt_len',
  'lr_in_larger_pkts', 'lr_in_gw_redirect', 'lr_in_arp_request',
] as const;

const LR_OUT = [
  'lr_out_chk_dnat_local', 'lr_out_undnat', 'lr_out_post_undnat', 'lr_out_snat', 'lr_out_post_snat',
  'lr_out_egr_loop', 'lr_out_delivery',
] as const;

export type StageName = (typeof LS_IN)[number] | (typeof LS_OUT)[number] | (typeof LR_IN)[number] | (typeof LR_OUT)[number];

function catalog(names: readonly StageName[], pipeline: Pipeline): readonly Stage[] {
  return names.map((name, table) => ({ name, pipeline, table }));
}

export const LS_INGRESS_STAGES: readonly Stage[] = catalog(LS_IN, 'ingress');
export const LS_EGRESS_STAGES: readonly Stage[] = catalog(LS_OUT, 'egress');
export const LR_INGRESS_STAGES: readonly Stage[] = catalog(LR_IN, 'ingress');
export const LR_EGRESS_STAGES: readonly Stage[] = catalog(LR_OUT, 'egress');

const BY_NAME: ReadonlyMap<string, Stage> = new Map(
  [...LS_INGRESS_STAGES, ...LS_EGRESS_STAGES, ...LR_INGRESS_STAGES, ...LR_EGRESS_STAGES].map((s) => [s.name, s]),
);

/** The stage of that name; a name not in the catalog is a programmer error. */
export function stage(name: StageName): Stage {
  const s = BY_NAME.get(name);
  if (s === undefined) throw new Error(`unknown stage ${name}`);
  return s;
}
