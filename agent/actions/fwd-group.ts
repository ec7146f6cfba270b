// fwd_group(liveness=true|false, childports="p1", "p2", ...): the action ovn-northd writes for an
// NB Forwarding_Group (ls_in_l2_lkup, `eth.dst == vmac`). It spreads the traffic over the child
// ports with an OpenFlow select group (selection_method=dp_hash): one bucket per child, which
// loads the child's tunnel key into the outport's low 16 bits and resubmits to the output
// table; with liveness, each bucket watches the tunnel to the chassis the child is bound on, so
// a chassis whose BFD session is down is left out (lib/actions.c, encode_FWD_GROUP, of OVN 23.03).
//
// The group is described as ovs-ofctl group text, the key ovn-controller's group table and ours
// keep it under (agent/flows/group-desc.ts reads it back). One departure: ovn-controller 23.03
// (and OVN's main branch as of this writing) prints the key with "load=0x%d", the decimal
// digits read as hex, so a child whose key is 10 or more gets another port's key (10 → 0x10 =
// 16) and never receives the traffic meant for it. Here the key is written in hex ("0x" and
// its hex digits): the same text for keys 0..9, the right port for the others.

/** The parsed action (OVN's struct ovnact_fwd_group). */
export interface FwdGroup {
  readonly liveness: boolean;
  readonly childPorts: readonly string[];
}

/** One child's bucket: its port's tunnel key, and with liveness the tunnel's OpenFlow port. */
export interface FwdGroupBucket {
  readonly portKey: number;
  readonly watchPort?: number;
}

/**
 * The action as OVN formats it back (format_FWD_GROUP): `fwd_group(liveness="true",
 * childports="a", "b");`, the names quoted as they are (OVN escapes nothing in them either).
 */
export function formatFwdGroup(fg: FwdGroup): string {
  let s = 'fwd_group(';
  if (fg.liveness) s += 'liveness="true", ';
  if (fg.childPorts.length > 0) s += `childports=${fg.childPorts.map((p) => `"${p}"`).join(', ')}`;
  return `${s});`;
}

/**
 * The select group's ovs-ofctl text: `type=select,selection_method=dp_hash`, then per child
 * `,bucket=[watch_port:P,]load=0xK->NXM_NX_REG15[0..15],resubmit(,T)` (K the key in hex, see
 * above; T the output table of the flow's pipeline).
 */
export function fwdGroupDescription(buckets: readonly FwdGroupBucket[], outputTable: number): string {
  let desc = 'type=select,selection_method=dp_hash';
  for (const b of buckets) {
    desc += ',bucket=';
    if (b.watchPort !== undefined) desc += `watch_port:${b.watchPort},`;
    desc += `load=0x${b.portKey.toString(16)}->NXM_NX_REG15[0..15],resubmit(,${outputTable})`;
  }
  return desc;
}
