// Apply versions: how the members of a cluster stay identical while they are upgraded one at a
// time. Every replica must turn the same log into the same state, but a newer build may apply
// an entry differently from an older one (it writes something into the NB the older one does
// not). So the way entries are applied is itself replicated: the log carries "from here on,
// apply as version N" entries, and a build applies each entry as the version in force at it
// says, never as it would like to.
//
// - Each build implements versions 1..APPLY_VERSION_MAX, the older ones kept as they were.
// - Each member tells its peers its highest version with its Raft messages (the transport's
//   member info). A leader that has heard every member of the configuration moves the
//   cluster to the lowest of their highest versions, when that is above the cluster's, with
//   one `apply-version` entry. A member down or not yet heard from holds the move back.
// - A member asked to apply a version above its own stops there (ApplyRefusedError) rather
//   than diverge, and says which version it needs: a member started on an older build after the
//   cluster moved on, or a new member of an older build. The cluster never moves back.
//
// The same idea as etcd's cluster version, decided by the leader from what the members run.
import type { NodeId } from '../cluster/types.js';

/**
 * What each version changes, in order. A log or snapshot from before apply versions existed
 * is at version 1.
 *  1. The NB as clients write it, plus what the state machine has always written itself:
 *     NB_Global's sb_cfg, hv_cfg and their timestamps, Logical_Switch_Port.up.
 *  2. Also what ovn-northd writes into the NB switch ports: dynamic_addresses (northd/ipam.ts)
 *     and tag (northd/tags.ts). Moving to 2 brings every port up to date in that entry.
 *  3. Also SB IGMP_Group rows written by chassis (what ovn-controller's IGMP/MLD snooping
 *     learned), which northd turns into multicast groups; refused as northd's table before.
 *  4. Also what a chassis writes while a port migrates: "mutate" of Port_Binding's
 *     chassis-owned columns (ovsdb-idl inserts a chassis into additional_chassis so) and
 *     options:additional-chassis-activated (activation-strategy=rarp); refused before.
 *  5. Also BFD: what ovn-northd writes into NB BFD.status (admin_down for a session no route
 *     uses, down for one a route starts using, a client's change between down/init/up undone),
 *     and SB BFD.status written by the chassis running a session, which is copied into the NB
 *     row (northd/bfd.ts); refused before. Moving to 5 settles every session's NB status.
 *  6. Also SB Controller_Event rows: a chassis inserts one for a packet that reached a load
 *     balancer VIP without backends (an empty_lb_backends event), the CMS deletes it once
 *     handled; refused as an unknown part of the SB before.
 *  7. Also NB_Global.options as ovn-northd writes them back: mac_prefix, svc_monitor_mac (when
 *     the NB has none that parses), max_tunid and northd_internal_version, in the entry that
 *     changes NB_Global (northd/sb-global.ts). Moving to 7 writes them once.
 *  8. Also VXLAN mode: while a Chassis has a vxlan encap, northd gives new datapaths keys up to
 *     4095 and new ports up to 2047 and ignores requests above them (ovn-northd's
 *     is_vxlan_mode), and max_tunid says 4095. Before 8 northd reads no encap.
 *  9. Also Logical_Switch_Port.up for every switch port as ovn-northd writes it, not only for
 *     ports a chassis reported: true for a router port, false for a port no chassis binds (it
 *     was left empty), from the entry that makes the port or changes its type or name. Moving to
 *     9 writes every port's.
 * 10. Also DHCPv6 prefix delegation: a chassis writes options:ipv6_ra_pd_list into a router
 *     port's binding (the prefix its pinctrl obtained), which northd keeps there and advertises,
 *     and from which the central writes the router port's NB ipv6_prefix when the port asks for
 *     a prefix (options:prefix=true); refused before.
 * 11. Also OVN's RBAC: an SB transaction from a session whose remote has a role (the door's
 *     Connection row says role=ovn-controller) carries the role and the client's id, and its
 *     writes are held to the role's permissions (northd/rbac.ts). A build before 11 would
 *     apply them unrestricted, so before 11 they are refused, never logged.
 * 12. Also Logical_Switch_Port.up as ovn-northd 23.03 reads a chassis that says
 *     other_config:port-up-notif=true (every ovn-controller 23.03 does): such a chassis's port is
 *     up once its Port_Binding.up is true, not while up is still unset (the port claimed, its
 *     flows not yet installed); a chassis without it has its ports up once bound. Before 12 an
 *     unset up counted as up whatever the chassis said. Moving to 12 writes every port's.
 */
export const APPLY_VERSION_MAX = 12;

/** The version of a state machine whose log has moved it nowhere yet. */
export const APPLY_VERSION_INITIAL = 1;

/** The first version with ovn-northd's writes into Logical_Switch_Port (IPAM, tags). */
export const APPLY_VERSION_NORTHD_WRITES = 2;

/** The first version where chassis write IGMP_Group. */
export const APPLY_VERSION_IGMP_GROUPS = 3;

/** The first version where chassis mutate Port_Binding's chassis-owned columns and set options:additional-chassis-activated. */
export const APPLY_VERSION_MIGRATION_WRITES = 4;

/** The first version with BFD status writes (ovn-northd's into the NB, the chassis's into the SB). */
export const APPLY_VERSION_BFD = 5;

/** The first version where chassis and clients write Controller_Event. */
export const APPLY_VERSION_CONTROLLER_EVENTS = 6;

/** The first version where the central writes ovn-northd's keys into NB_Global.options. */
export const APPLY_VERSION_NB_GLOBAL_OPTIONS = 7;

/** The first version where northd reads VXLAN mode from the Chassis' encaps. */
export const APPLY_VERSION_VXLAN_MODE = 8;

/** The first version where every switch port's up is written (a router port's true). */
export const APPLY_VERSION_PORTS_UP = 9;

/** The first version where chassis write options:ipv6_ra_pd_list and the NB router port's ipv6_prefix follows. */
export const APPLY_VERSION_PREFIX_DELEGATION = 10;

/** The first version that holds a restricted session's SB writes to its role's permissions (OVN's RBAC). */
export const APPLY_VERSION_RBAC = 11;

/** The first version where a port of a chassis with port-up-notif is up only once its binding's up is true. */
export const APPLY_VERSION_PORT_UP_NOTIF = 12;

const INFO_PREFIX = 'apply-max=';

/** The member info a member tells its peers: its highest apply version. */
export function memberInfoOf(applyVersionMax: number): string {
  return `${INFO_PREFIX}${applyVersionMax}`;
}

/** The highest apply version a member's info names; undefined for none (or a build before them). */
export function applyVersionMaxOf(info: string | undefined): number | undefined {
  if (info === undefined || !info.startsWith(INFO_PREFIX)) return undefined;
  const text = info.slice(INFO_PREFIX.length);
  const n = Number(text);
  return /^[1-9][0-9]{0,8}$/.test(text) && Number.isSafeInteger(n) ? n : undefined;
}

/**
 * The version a leader should move the cluster to now, or undefined for none: the lowest
 * highest version over itself and every other member, once every one of them has told its
 * own (`maxOf`), when that is above `current`. A member never heard from, or one whose info
 * names no version (software from before apply versions, which applies as version 1), holds it
 * back.
 */
export function applyVersionTarget(current: number, ownMax: number, others: readonly NodeId[], maxOf: (id: NodeId) => number | undefined): number | undefined {
  let target = ownMax;
  for (const id of others) {
    const max = maxOf(id);
    if (max === undefined) return undefined;
    if (max < target) target = max;
  }
  return target > current ? target : undefined;
}

/** Checks an apply-version bound given to a state machine (tests simulate older builds with it). */
export function checkApplyVersionMax(max: number): number {
  if (!Number.isSafeInteger(max) || max < APPLY_VERSION_INITIAL || max > APPLY_VERSION_MAX) {
    throw new Error(`apply version bound ${max} is not one this build implements (${APPLY_VERSION_INITIAL}..${APPLY_VERSION_MAX})`);
  }
  return max;
}
