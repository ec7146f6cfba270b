// Conntrack zone assignment (ovn-controller's update_ct_zones): every local logical port gets a
// zone (reg13), every local datapath a DNAT and an SNAT zone (reg11, reg12) named
// "<datapath uuid>_dnat" / "_snat"; a router's external_ids:snat-ct-zone asks for a specific
// SNAT zone. Zone 0 is never assigned. Deterministic for its input and stable: a user keeps its
// zone for as long as it stays a user (unless a requested zone takes it), and new users, taken in
// name order, get the lowest free zones. The runtime may persist the result (OVN keeps it in
// br-int external_ids:ct-zone-<name>) and hand it back after a restart.

import type * as sb from '../../ovsdb/rows/sb.js';
import type { LocalView } from '../local-view.js';
import { isBoundHere, type Locality } from './local-datapaths.js';
import type { SbLookups } from './sb-store.js';

/** OVN's MAX_CT_ZONES: zones are 16-bit and 0 is reserved. */
export const CT_ZONE_MAX = 65535;

export const dnatZoneKey = (dp: string): string => `${dp}_dnat`;
export const snatZoneKey = (dp: string): string => `${dp}_snat`;

export interface ZoneUsers {
  /** Every name that needs a zone. */
  readonly users: ReadonlySet<string>;
  /** SNAT zone keys with a requested zone number. */
  readonly requested: ReadonlyMap<string, number>;
}

/**
 * The zone users of this chassis: every interface iface-id on the bridge, every port bound here,
 * the localnet ports of local datapaths, and the NAT zone keys of every local datapath.
 */
export function ctZoneUsers(sbl: SbLookups, chassisUuid: string | undefined, view: LocalView, locality: Locality): ZoneUsers {
  const users = new Set<string>(view.vifs.keys());
  if (chassisUuid !== undefined) {
    for (const u of sbl.portsOfChassis(chassisUuid)) {
      const pb = sbl.portBinding(u);
      if (pb !== undefined && isBoundHere(pb, chassisUuid)) users.add(pb.logical_port);
    }
  }
  const requested = new Map<string, number>();
  for (const ld of locality.datapaths.values()) {
    if (ld.localnetPort !== undefined) {
      const ln = sbl.portBinding(ld.localnetPort);
      if (ln !== undefined) users.add(ln.logical_port);
    }
    users.add(dnatZoneKey(ld.uuid));
    users.add(snatZoneKey(ld.uuid));
    const req = Number((sbl.datapath(ld.uuid) as sb.Datapath_Binding).external_ids.get('snat-ct-zone') ?? NaN);
    if (Number.isInteger(req) && req >= 0 && req <= CT_ZONE_MAX) requested.set(snatZoneKey(ld.uuid), req);
  }
  return { users, requested };
}

/**
 * The new assignment: 'previous' kept for users that remain, requested zones honoured (a user
 * holding a requested zone by chance gives it up), every other user given the lowest free zone,
 * users in name order. Users beyond the zone space get none.
 */
export function assignCtZones(previous: ReadonlyMap<string, number>, input: ZoneUsers): Map<string, number> {
  const out = new Map<string, number>();
  const taken = new Set<number>([0]);
  const requestedZones = new Set(input.requested.values());
  for (const [name, zone] of input.requested) {
    out.set(name, zone);
    taken.add(zone);
  }
  for (const [name, zone] of previous) {
    if (!input.users.has(name) || out.has(name) || requestedZones.has(zone) || taken.has(zone)) continue;
    if (!Number.isInteger(zone) || zone < 1 || zone > CT_ZONE_MAX) continue;
    out.set(name, zone);
    taken.add(zone);
  }
  let next = 1;
  for (const name of [...input.users].sort()) {
    if (out.has(name)) continue;
    while (next <= CT_ZONE_MAX && taken.has(next)) next++;
    if (next > CT_ZONE_MAX) break;
    out.set(name, next);
    taken.add(next);
  }
  // Requested zones exist only for users that are present.
  for (const name of input.requested.keys()) if (!input.users.has(name)) out.delete(name);
  return out;
}

/** Names whose zone differs between two assignments (added, removed or changed). */
export function changedZones(a: ReadonlyMap<string, number>, b: ReadonlyMap<string, number>): string[] {
  const out: string[] = [];
  for (const [k, v] of a) if (b.get(k) !== v) out.push(k);
  for (const k of b.keys()) if (!a.has(k)) out.push(k);
  return out;
}
