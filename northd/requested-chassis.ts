// Port_Binding.requested_chassis and requested_additional_chassis: where the CMS wants a port
// bound (a Neutron port's binding host, a pod's node), from the LSP's options:requested-chassis,
// a comma-separated list of Chassis names or hostnames. The first one found is the main
// chassis; the others are additional chassis (a port bound on several chassis at once while a
// VM migrates live). Each entry is looked up as a Chassis name first, then as a hostname;
// entries naming no registered Chassis are skipped, as ovn-northd skips them (with a warning).
//
// The Chassis come from the chassis database: names from the `sb_chassis` input, hostnames
// from `sb_hostnames`. Both change when a chassis registers, renames itself, changes its
// hostname or goes, and the ports whose option names the name or hostname are projected again
// (ports.ts keeps that index).
import type { Uuid } from '../ovsdb/index.js';

/**
 * The sb_hostnames source: hostname → the Chassis rows with it, their UUIDs in ascending order
 * (hostnames, unlike names, may be shared); a change is the set of hostnames that gained or
 * lost a row.
 */
export type SbHostnamesData = ReadonlyMap<string, readonly Uuid[]>;
export type SbHostnamesChange = ReadonlySet<string>;

/** The registered Chassis as northd looks them up. */
export interface ChassisRegistry {
  /** Name → UUID (the sb_chassis source). */
  readonly byName: ReadonlyMap<string, Uuid>;
  readonly byHostname: SbHostnamesData;
}

/**
 * The entries of an options:requested-chassis value, as strtok_r splits it on commas: empty
 * entries (",," or a trailing comma) are no entries.
 */
export function requestedEntries(option: string | undefined): string[] {
  return option === undefined ? [] : option.split(',').filter((e) => e !== '');
}

/**
 * The Chassis an options:requested-chassis value names: the main one (none when no entry is
 * registered) and the additional ones, a set (sorted, each once). A hostname several Chassis
 * share resolves to the lowest UUID among them; ovn-northd takes the first its index holds,
 * which follows memory addresses, so no order is more faithful than another.
 */
export function requestedChassis(option: string | undefined, registry: ChassisRegistry): { main: readonly Uuid[]; additional: readonly Uuid[] } {
  const found: Uuid[] = [];
  for (const entry of requestedEntries(option)) {
    const uuid = registry.byName.get(entry) ?? registry.byHostname.get(entry)?.[0];
    if (uuid !== undefined) found.push(uuid);
  }
  if (found.length === 0) return { main: [], additional: [] };
  const [main, ...rest] = found as [Uuid, ...Uuid[]];
  return { main: [main], additional: [...new Set(rest)].sort() };
}

/**
 * Applies hostname changes (Chassis UUID → its hostname now, undefined when the row is gone or
 * has none) to `byHostname` and `hostnameOf`; returns the hostnames whose rows changed.
 */
export function applyHostnameUpdates(
  byHostname: Map<string, readonly Uuid[]>,
  hostnameOf: Map<Uuid, string>,
  updates: Iterable<readonly [Uuid, string | undefined]>,
): Set<string> {
  const touched = new Set<string>();
  for (const [uuid, hostname] of updates) {
    const before = hostnameOf.get(uuid);
    if (before === hostname) continue;
    if (before !== undefined) {
      const rest = (byHostname.get(before) ?? []).filter((u) => u !== uuid);
      if (rest.length === 0) byHostname.delete(before);
      else byHostname.set(before, rest);
      hostnameOf.delete(uuid);
      touched.add(before);
    }
    if (hostname !== undefined) {
      byHostname.set(hostname, [...(byHostname.get(hostname) ?? []), uuid].sort());
      hostnameOf.set(uuid, hostname);
      touched.add(hostname);
    }
  }
  return touched;
}
