// Which chassis of an SB HA_Chassis_Group is active, read by the binding planner (which claims
// chassisredirect and external ports there) and by the flow side (is_chassis_resident, the
// physical flows of a chassisredirect port, the patch ports a standby member follows).
//
// A member names its chassis by HA_Chassis.chassis (our northd, like ovn-northd, sets it while
// a Chassis of the member's name is registered), or else by external_ids:chassis-name (for
// rows written without the column).
// With BFD (an agent on Open vSwitch: agent/local/bfd.ts runs BFD on the tunnels to the chassis
// that share a group with it, and `activeTunnels` is the chassis whose session is up), the rule
// is ovn-controller's (ha_chassis_group_is_active): a group of one member is active on that
// member; otherwise a chassis with no live session at all is active nowhere (it may be the one
// cut off), and among the members that are this chassis or have a live session, the highest
// priority wins (on equal priorities the greater chassis name); when this chassis is the only
// one left, only while it has a live session with a chassis that uses the group (ref_chassis).
// A gateway that dies or loses its tunnel network so loses its ports within the BFD detection
// time, without anyone touching the database.
// Without BFD (an agent with no switch to run it, as the benchmarks' in-memory agents): the
// active chassis is the member of highest priority whose Chassis row exists, so a chassis that
// stops without unregistering stays active until its Chassis row is deleted.
//
// Pure: SB rows in through the lookups, answers out.
import type * as sb from '../ovsdb/rows/sb.js';

/** The SB rows the rule reads. */
export interface HaLookups {
  haChassisGroup(uuid: string): sb.HA_Chassis_Group | undefined;
  haChassis(uuid: string): sb.HA_Chassis | undefined;
  chassis(uuid: string): sb.Chassis | undefined;
  chassisByName(name: string): sb.Chassis | undefined;
}

/** external_ids key that names a member's chassis when its chassis column is empty. */
export const HA_CHASSIS_NAME_KEY = 'chassis-name';

/** One member of a group whose chassis is registered. */
export interface HaMember {
  /** The Chassis row's uuid. */
  readonly chassis: string;
  readonly name: string;
  readonly priority: number;
}

/** The registered Chassis an HA_Chassis names, if any. */
export function memberChassis(ha: HaLookups, hc: sb.HA_Chassis): sb.Chassis | undefined {
  const byRef = hc.chassis[0];
  if (byRef !== undefined) return ha.chassis(byRef);
  const name = hc.external_ids.get(HA_CHASSIS_NAME_KEY);
  return name === undefined || name === '' ? undefined : ha.chassisByName(name);
}

/** The group's members whose chassis is registered, highest priority first (then greater name). */
export function orderedHaMembers(ha: HaLookups, groupUuid: string | undefined): HaMember[] {
  const g = groupUuid === undefined ? undefined : ha.haChassisGroup(groupUuid);
  if (g === undefined) return [];
  const all: HaMember[] = [];
  for (const u of g.ha_chassis) {
    const hc = ha.haChassis(u);
    const ch = hc === undefined ? undefined : memberChassis(ha, hc);
    if (hc !== undefined && ch !== undefined) all.push({ chassis: ch._uuid, name: ch.name, priority: hc.priority });
  }
  all.sort((a, b) => b.priority - a.priority || (a.name < b.name ? 1 : a.name > b.name ? -1 : 0));
  // A chassis listed twice counts once, at its highest priority.
  const out: HaMember[] = [];
  for (const m of all) if (!out.some((x) => x.chassis === m.chassis)) out.push(m);
  return out;
}

/** The uuid of the group's active chassis (see the rule above), or undefined when none is. */
export function activeHaChassis(ha: HaLookups, groupUuid: string | undefined): string | undefined {
  return orderedHaMembers(ha, groupUuid)[0]?.chassis;
}

/** Whether chassis `chassisUuid` is a registered member of the group. */
export function haGroupContains(ha: HaLookups, groupUuid: string | undefined, chassisUuid: string | undefined): boolean {
  const g = chassisUuid === undefined || groupUuid === undefined ? undefined : ha.haChassisGroup(groupUuid);
  if (g === undefined) return false;
  // Read on every locality pass for every gateway port: no list built, nothing sorted.
  for (const u of g.ha_chassis) {
    const hc = ha.haChassis(u);
    if (hc !== undefined && memberChassis(ha, hc)?._uuid === chassisUuid) return true;
  }
  return false;
}

/**
 * Whether chassis `us` is the active member of the group. `activeTunnels` (remote chassis names
 * with a live BFD session) undefined: the rule without BFD (activeHaChassis).
 */
export function haActiveHere(ha: HaLookups, groupUuid: string | undefined, us: string | undefined, activeTunnels: ReadonlySet<string> | undefined): boolean {
  if (us === undefined) return false;
  if (activeTunnels === undefined) return activeHaChassis(ha, groupUuid) === us;
  const g = groupUuid === undefined ? undefined : ha.haChassisGroup(groupUuid);
  if (g === undefined || g.ha_chassis.length === 0) return false;
  if (g.ha_chassis.length === 1) {
    const only = ha.haChassis(g.ha_chassis[0] as string);
    return only !== undefined && memberChassis(ha, only)?._uuid === us;
  }
  if (activeTunnels.size === 0) return false;
  const alive = orderedHaMembers(ha, groupUuid).filter((m) => m.chassis === us || activeTunnels.has(m.name));
  if (alive.length === 0) return false;
  if (alive.length === 1 && !g.ref_chassis.some((u) => activeTunnels.has(ha.chassis(u)?.name ?? ''))) return false;
  return (alive[0] as HaMember).chassis === us;
}
