// Which chassis of an SB HA_Chassis_Group is active, read by the binding planner (which claims
// chassisredirect and external ports there) and by the flow side (is_chassis_resident, the
// physical flows of a chassisredirect port, the patch ports a standby member follows).
//
// A member names its chassis by HA_Chassis.chassis (our northd, like ovn-northd, sets it while
// a Chassis of the member's name is registered), or else by external_ids:chassis-name (for
// rows written without the column).
// The rule without BFD: the active chassis is the member of highest priority whose Chassis row
// exists (the chassis is registered); on equal priorities the greater chassis name wins, as in
// ovn-controller's ordering (ha-chassis.c). ovn-controller additionally drops members it has no
// live BFD session with (active_tunnels); we have no BFD, so a chassis that stops without
// unregistering stays active until its Chassis row is deleted (`ovnts sbctl chassis-del`, or
// the agent's own --cleanup exit).
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
function memberChassis(ha: HaLookups, hc: sb.HA_Chassis): sb.Chassis | undefined {
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
  return chassisUuid !== undefined && orderedHaMembers(ha, groupUuid).some((m) => m.chassis === chassisUuid);
}
