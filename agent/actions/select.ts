// `FIELD = select(id[=weight], ...)`: the action ovn-northd 23.03 writes for ECMP routes
// (lr_in_ip_routing, `reg8[16..31] = select(1, 2);`) and ECMP reroute policies (lr_in_policy).
// It picks one member, by weight, and writes the member's id into FIELD; the next table goes
// on with it, and the _ecmp stage after matches the id to its next hop. ovn-controller encodes
// it (lib/actions.c, encode_SELECT, of OVN 23.03) as an OpenFlow select group with
// selection_method=dp_hash, one bucket per member that loads the id into FIELD's bits and
// resubmits to the next logical table; the flow's action is `group:N`. Where the datapath has
// the symmetric L4 hash (OVS_DP_HASH_L4_SYM_SUPPORT), the group asks for it with
// selection_method_param 1 << 32, so both directions of a connection take the same member.
//
// The group is described as ovs-ofctl group text, the key ovn-controller's group table and ours
// keep it under (agent/flows/group-desc.ts reads it back into the group the agent installs).

/** One member: its id (loaded into the result field) and its weight, both 16 bits. */
export interface SelectMember {
  readonly id: number;
  readonly weight: number;
}

/** The weight of a member that names none (parse_select_action). */
export const selectWeightDefault = 100;

/** The result field's OpenFlow bits, under Open vSwitch's own name for the field (xreg4, eth_src, ...). */
export interface SelectResult {
  readonly ovsName: string;
  readonly start: number;
  readonly end: number;
}

/**
 * The action as OVN formats it back (format_SELECT): every weight spelled, `, ` between
 * members. 'field' is the result field as OVN prints it (expr_field_format).
 */
export function formatSelect(field: string, members: readonly SelectMember[]): string {
  return `${field} = select(${members.map((m) => `${m.id}=${m.weight}`).join(', ')});`;
}

/**
 * The select group's ovs-ofctl text, as encode_SELECT writes it:
 * `type=select,selection_method=dp_hash[,selection_method_param=0x100000000]`, then per member
 * `,bucket=bucket_id=I,weight:W,actions=load:ID->FIELD[a..b],resubmit(,T)` (I the member's
 * place from 0, T the OpenFlow table of the next logical table).
 */
export function selectGroupDescription(members: readonly SelectMember[], result: SelectResult, nextTable: number, l4Sym: boolean): string {
  let desc = 'type=select,selection_method=dp_hash';
  if (l4Sym) desc += ',selection_method_param=0x100000000';
  members.forEach((m, i) => {
    desc += `,bucket=bucket_id=${i},weight:${m.weight},actions=load:${m.id}->${result.ovsName}[${result.start}..${result.end}],resubmit(,${nextTable})`;
  });
  return desc;
}
