// BFD on the tunnels to the chassis that share an HA_Chassis_Group with this one, as
// ovn-controller runs it (controller/bfd.c), so that the active member of a group is the
// highest-priority one still alive (agent/ha-chassis.ts, haActiveHere):
//   - a member of a group of two or more runs BFD with the other members and with the group's
//     ref_chassis (the chassis whose ports reach the group's gateway port; those marked
//     other_config:is-remote=true excepted);
//   - a chassis in a group's ref_chassis runs BFD with the group's members.
// Open vSwitch runs the sessions (Interface.bfd: enable=true, the timers of SB_Global's options
// bfd-min-rx, bfd-decay-min-rx, bfd-min-tx and bfd-mult when set, and check_tnl_key=true so that
// a logical port's packet is never taken for a BFD message); Interface.bfd_status:state says
// whether one is up. The tunnels to every other chassis have no BFD. Pure.
import type * as sb from '../../ovsdb/rows/sb.js';
import type { HaLookups } from '../ha-chassis.js';
import { orderedHaMembers } from '../ha-chassis.js';
import { mapJson, mapsEqual, type OpGroup } from './ovsdb-json.js';
import type { OvsBridge, OvsInterface, OvsTables } from './ovs-rows.js';
import { interfacesOf, portsOf } from './ovs-rows.js';
import { CHASSIS_ID_KEY, parseTunnelId } from './tunnels.js';

/** SB_Global option → the Interface.bfd key it sets. */
const TIMER_OPTIONS = [
  ['bfd-min-rx', 'min_rx'],
  ['bfd-decay-min-rx', 'decay_min_rx'],
  ['bfd-min-tx', 'min_tx'],
  ['bfd-mult', 'mult'],
] as const;

/** The names of the chassis this one runs BFD with (bfd_calculate_chassis); never itself. */
export function bfdChassis(ha: HaLookups, groups: Iterable<sb.HA_Chassis_Group>, us: string | undefined): Set<string> {
  const out = new Set<string>();
  if (us === undefined) return out;
  for (const g of groups) {
    if (g.ha_chassis.length < 2) continue;
    const members = orderedHaMembers(ha, g._uuid);
    const member = members.some((m) => m.chassis === us);
    const refs = g.ref_chassis.map((u) => ha.chassis(u)).filter((c): c is sb.Chassis => c !== undefined);
    if (member) {
      for (const r of refs) if (r.other_config.get('is-remote') !== 'true') out.add(r.name);
    } else if (!refs.some((r) => r._uuid === us)) continue;
    for (const m of members) out.add(m.name);
  }
  const ours = ha.chassis(us)?.name;
  if (ours !== undefined) out.delete(ours);
  return out;
}

/** What Interface.bfd holds on a tunnel with BFD (bfd_run). */
export function bfdSettings(sbGlobal: sb.SB_Global | undefined): Map<string, string> {
  const out = new Map<string, string>([['enable', 'true']]);
  if (sbGlobal === undefined) return out;
  for (const [option, key] of TIMER_OPTIONS) {
    const v = sbGlobal.options.get(option);
    if (v !== undefined) out.set(key, v);
  }
  out.set('check_tnl_key', 'true');
  return out;
}

/** The integration bridge's tunnel interfaces, each with the chassis at its far end. */
function tunnelInterfaces(ovs: OvsTables, brInt: OvsBridge): { chassis: string; iface: OvsInterface }[] {
  const out: { chassis: string; iface: OvsInterface }[] = [];
  for (const port of portsOf(ovs, brInt)) {
    const id = port.external_ids.get(CHASSIS_ID_KEY);
    const far = id === undefined ? undefined : parseTunnelId(id);
    if (far === undefined) continue;
    for (const iface of interfacesOf(ovs, port)) out.push({ chassis: far.chassis, iface });
  }
  return out;
}

/** One update per tunnel interface whose bfd column is not what it should be. */
export function bfdOps(ovs: OvsTables, brInt: OvsBridge, chassis: ReadonlySet<string>, settings: ReadonlyMap<string, string>): OpGroup[] {
  const none = new Map<string, string>();
  const groups: OpGroup[] = [];
  for (const { chassis: far, iface } of tunnelInterfaces(ovs, brInt)) {
    const want = chassis.has(far) ? settings : none;
    if (mapsEqual(iface.bfd, want)) continue;
    groups.push({
      what: `${want.size > 0 ? 'enable' : 'disable'} BFD on tunnel ${iface.name} to ${far}`,
      ops: [{ op: 'update', table: 'Interface', where: [['_uuid', '==', ['uuid', iface._uuid]]], row: { bfd: mapJson(want) } }],
    });
  }
  return groups;
}

/** The chassis at the far end of a tunnel whose BFD session is up (bfd_calculate_active_tunnels). */
export function activeTunnels(ovs: OvsTables, brInt: OvsBridge | undefined): Set<string> {
  const out = new Set<string>();
  if (brInt === undefined) return out;
  for (const { chassis, iface } of tunnelInterfaces(ovs, brInt)) {
    if (!iface.options.has('remote_ip')) continue;
    if (iface.bfd.get('enable') === 'true' && iface.bfd_status.get('state') === 'up') out.add(chassis);
  }
  return out;
}
