// Distributed gateway ports, as ovn-northd 23.03 reads them from the NB: a Logical_Router_Port
// with gateway_chassis rows or an ha_chassis_group, on a router without options:chassis, has a
// derived chassisredirect port "cr-<port>" bound in the same router datapath, and an SB
// HA_Chassis_Group: the NB group copied (named as it is), or one named after the port made of
// its Gateway_Chassis rows. Which chassis a port's flows must be resident on (its own redirect
// port, or the router's only one for a port with reside-on-redirect-chassis) is decided here,
// for ports.ts to put into the bindings' facts.
//
// Pure functions of the NB database; ports.ts owns the SB rows and their incremental upkeep.
import type { Database, Uuid } from '../ovsdb/index.js';
import type * as nb from '../ovsdb/rows/nb.js';
import type * as sb from '../ovsdb/rows/sb.js';
import { hashUuid } from './hash.js';
import { nbGet } from './nb.js';
import { versioned } from './sb-changes.js';

/** The name of a distributed gateway port's chassisredirect port (ovn_chassis_redirect_name). */
export function crPortName(lrp: string): string {
  return `cr-${lrp}`;
}

/** The LRP a chassisredirect port name stands for, when it has the prefix. */
export function lrpOfCrName(name: string): string | undefined {
  return name.startsWith('cr-') ? name.slice(3) : undefined;
}

/** Whether an LRP is configured as a gateway port (it need not be on a distributed router). */
export function lrpHasGateway(lrp: nb.Logical_Router_Port): boolean {
  return lrp.gateway_chassis.length > 0 || lrp.ha_chassis_group.length > 0;
}

/** smap_get_bool: "true" in any case is true, anything else is the default (false). */
function optionOn(options: ReadonlyMap<string, string>, key: string): boolean {
  return options.get(key)?.toLowerCase() === 'true';
}

/** What a router's distributed gateway ports make of it. */
export interface RouterGateways {
  /** Its distributed gateway ports, in NB order (od->l3dgw_ports); none on a gateway router. */
  readonly l3dgw: readonly string[];
  /** A dnat_and_snat rule with logical_port and external_mac (od->has_distributed_nat). */
  readonly hasDistributedNat: boolean;
}

const NO_GATEWAYS: RouterGateways = Object.freeze({ l3dgw: [], hasDistributedNat: false });

export function routerGateways(db: Database, routerNbUuid: Uuid | undefined): RouterGateways {
  const lr = routerNbUuid === undefined ? undefined : nbGet<nb.Logical_Router>(db, 'Logical_Router', routerNbUuid);
  if (lr === undefined || lr.options.get('chassis') !== undefined) return NO_GATEWAYS;
  const l3dgw: string[] = [];
  for (const u of lr.ports) {
    const lrp = nbGet<nb.Logical_Router_Port>(db, 'Logical_Router_Port', u);
    if (lrp !== undefined && lrpHasGateway(lrp)) l3dgw.push(lrp.name);
  }
  if (l3dgw.length === 0) return NO_GATEWAYS;
  const hasDistributedNat = lr.nat.some((u) => {
    const n = nbGet<nb.NAT>(db, 'NAT', u);
    return n !== undefined && n.type === 'dnat_and_snat' && n.logical_port.length > 0 && n.external_mac.length > 0;
  });
  return { l3dgw, hasDistributedNat };
}

/**
 * The chassisredirect port whose residence gates router port `lrp`'s presence on its link:
 * its own when it is a distributed gateway port, else the router's only one when the port
 * has options:reside-on-redirect-chassis; undefined when neither.
 */
export function residentCrOf(lrp: nb.Logical_Router_Port, gw: RouterGateways): string | undefined {
  if (gw.l3dgw.length === 0) return undefined;
  if (gw.l3dgw.includes(lrp.name)) return crPortName(lrp.name);
  if (optionOn(lrp.options, 'reside-on-redirect-chassis') && gw.l3dgw.length === 1) return crPortName(gw.l3dgw[0] as string);
  return undefined;
}

/** Whether switch `nbUuid` has a port of one of these types (localnet, vtep). */
export function switchHasPortType(db: Database, nbUuid: Uuid | undefined, type: string): boolean {
  const ls = nbUuid === undefined ? undefined : nbGet<nb.Logical_Switch>(db, 'Logical_Switch', nbUuid);
  return ls !== undefined && ls.ports.some((u) => nbGet<nb.Logical_Switch_Port>(db, 'Logical_Switch_Port', u)?.type === type);
}

/** One member of an SB HA_Chassis_Group as ovn-northd writes it. */
export interface HaMember {
  readonly chassisName: string;
  readonly priority: number;
}

/** The SB HA_Chassis_Group a binding names. */
export interface HaGroupDesired {
  readonly name: string;
  readonly members: readonly HaMember[];
}

/**
 * The group a port's binding names: an NB HA_Chassis_Group wins over Gateway_Chassis rows
 * (which become a group named after the port, members in NB order).
 */
export function haGroupOf(db: Database, portName: string, haGroup: readonly Uuid[], gatewayChassis: readonly Uuid[]): HaGroupDesired | undefined {
  const g = haGroup[0] === undefined ? undefined : nbGet<nb.HA_Chassis_Group>(db, 'HA_Chassis_Group', haGroup[0]);
  if (g !== undefined) {
    const members: HaMember[] = [];
    for (const u of g.ha_chassis) {
      const c = nbGet<nb.HA_Chassis>(db, 'HA_Chassis', u);
      if (c !== undefined) members.push({ chassisName: c.chassis_name, priority: c.priority });
    }
    return { name: g.name, members };
  }
  if (gatewayChassis.length === 0) return undefined;
  const members: HaMember[] = [];
  for (const u of gatewayChassis) {
    const c = nbGet<nb.Gateway_Chassis>(db, 'Gateway_Chassis', u);
    if (c !== undefined) members.push({ chassisName: c.chassis_name, priority: c.priority });
  }
  return { name: portName, members };
}

export function haGroupSbUuid(name: string): Uuid {
  return hashUuid(['HA_Chassis_Group', name]);
}

/**
 * The SB rows of a group: the group and its HA_Chassis members. A member names its chassis in
 * external_ids:chassis-name, and in its chassis column when a Chassis of that name is
 * registered (`chassisByName`), as ovn-northd writes it: the column is a weak reference, so a
 * member of a chassis that has not registered (or has left) has it empty. `refChassis` is the
 * group's ref_chassis (ha-ref-chassis.ts), sorted.
 */
export function haGroupRows(g: HaGroupDesired, chassisByName: ReadonlyMap<string, Uuid>, refChassis: readonly Uuid[]): { group: sb.HA_Chassis_Group; members: sb.HA_Chassis[] } {
  const members = g.members.map((m, i) => {
    const chassis = chassisByName.get(m.chassisName);
    return versioned<sb.HA_Chassis>({
      _uuid: haChassisSbUuid(g.name, i, m.chassisName), _version: '', chassis: chassis === undefined ? [] : [chassis], priority: m.priority,
      external_ids: new Map([['chassis-name', m.chassisName]]),
    });
  });
  return { group: haGroupRow(g.name, members.map((m) => m._uuid).sort(), refChassis), members };
}

/** The UUID of a group's `index`th member, of chassis `chassisName`. */
function haChassisSbUuid(group: string, index: number, chassisName: string): Uuid {
  return hashUuid(['HA_Chassis', group, String(index), chassisName]);
}

/** The SB HA_Chassis_Group row: its members (sorted UUIDs) and ref_chassis (sorted). */
export function haGroupRow(name: string, members: readonly Uuid[], refChassis: readonly Uuid[]): sb.HA_Chassis_Group {
  return versioned<sb.HA_Chassis_Group>({ _uuid: haGroupSbUuid(name), _version: '', name, ha_chassis: members, ref_chassis: refChassis, external_ids: new Map() });
}
