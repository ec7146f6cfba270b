// What the agent reads of its hypervisor's configuration: the external_ids of the single
// Open_vSwitch row, with ovn-controller's keys and defaults (controller/chassis.c,
// ovn-controller.8). A key may be given per chassis as "<key>-<system-id>", which wins over the
// plain key, so several chassis can share one Open vSwitch. Pure.
import type { Row } from '../../ovsdb/index.js';

export interface ChassisConfig {
  /** external_ids:system-id, the SB Chassis.name. */
  readonly systemId: string;
  readonly hostname: string;
  /** external_ids:ovn-remote as written (undefined when absent). */
  readonly ovnRemote: string | undefined;
  /** ovn-encap-type, comma-separated in OVS; deduplicated, in the order given. */
  readonly encapTypes: readonly string[];
  /** ovn-encap-ip, comma-separated in OVS; deduplicated, in the order given. */
  readonly encapIps: readonly string[];
  /** ovn-encap-csum ("true" unless set), copied into Encap.options:csum. */
  readonly encapCsum: string;
  /** ovn-bridge, default "br-int". */
  readonly integrationBridge: string;
  /** ovn-bridge-datapath-type, if set. */
  readonly bridgeDatapathType: string | undefined;
  /** ovn-bridge-mappings as written (Chassis.other_config carries it verbatim). */
  readonly bridgeMappingsText: string;
  /** Physical network → OVS bridge name, from ovn-bridge-mappings. */
  readonly bridgeMappings: ReadonlyMap<string, string>;
  readonly cmsOptions: string;
  readonly monitorAll: string;
  readonly chassisMacMappings: string;
  readonly isInterconn: boolean;
  /** ovn-transport-zones: tunnels form only between chassis that share one (or both have none). */
  readonly transportZones: readonly string[];
  /** Open_vSwitch.iface_types: the interface types this switch supports. */
  readonly ifaceTypes: readonly string[];
  /** Things that are wrong but not fatal (a bad bridge mapping), for the log. */
  readonly warnings: readonly string[];
}

export type ChassisConfigResult =
  | { readonly kind: 'ok'; readonly config: ChassisConfig }
  | { readonly kind: 'incomplete'; readonly reason: string };

/** The tunnel types OVN knows, by preference when two chassis share several (encaps.c). */
export const TUNNEL_TYPES = ['geneve', 'stt', 'vxlan'] as const;

/** external_ids:<key>-<chassis> if set, else external_ids:<key> (ovn-util.c). */
export function chassisExternalId(ids: ReadonlyMap<string, string>, chassis: string | undefined, key: string): string | undefined {
  if (chassis !== undefined) {
    const own = ids.get(`${key}-${chassis}`);
    if (own !== undefined) return own;
  }
  return ids.get(key);
}

function commaList(s: string): string[] {
  const out: string[] = [];
  for (const part of s.split(',')) {
    const v = part.trim();
    if (v !== '' && !out.includes(v)) out.push(v);
  }
  return out;
}

/**
 * Parses "physnet1:br-eth1,physnet2:br-eth2". An entry without a network or a bridge stops the
 * parse with a warning (ovn-controller does the same); later duplicates of a network are ignored.
 */
export function parseBridgeMappings(text: string): { mappings: Map<string, string>; warnings: string[] } {
  const mappings = new Map<string, string>();
  const warnings: string[] = [];
  for (const entry of text.split(',')) {
    if (entry === '') break;
    const i = entry.indexOf(':');
    const network = i < 0 ? entry : entry.slice(0, i);
    const bridge = i < 0 ? '' : entry.slice(i + 1);
    if (network === '' || bridge === '') {
      warnings.push(`invalid ovn-bridge-mappings entry "${entry}" in "${text}"`);
      break;
    }
    if (!mappings.has(network)) mappings.set(network, bridge);
  }
  return { mappings, warnings };
}

/**
 * The chassis configuration from the Open_vSwitch row, or why there is none yet: system-id,
 * ovn-encap-type and ovn-encap-ip are required (without them ovn-controller does not register).
 * `defaultHostname` stands in when external_ids:hostname is absent (the host's name).
 */
export function readChassisConfig(ovs: Row | undefined, defaultHostname: string): ChassisConfigResult {
  if (ovs === undefined) return { kind: 'incomplete', reason: 'the Open_vSwitch table has no row' };
  const ids = ovs.external_ids as ReadonlyMap<string, string>;
  const systemId = ids.get('system-id');
  if (systemId === undefined || systemId === '') return { kind: 'incomplete', reason: 'external_ids:system-id is not set' };
  const get = (key: string): string | undefined => chassisExternalId(ids, systemId, key);
  const encapType = get('ovn-encap-type');
  const encapIp = get('ovn-encap-ip');
  if (encapType === undefined || encapIp === undefined) return { kind: 'incomplete', reason: 'external_ids:ovn-encap-type and ovn-encap-ip must both be set' };
  const encapTypes = commaList(encapType);
  const encapIps = commaList(encapIp);
  const warnings: string[] = [];
  const known = new Set<string>(TUNNEL_TYPES);
  for (const ty of encapTypes) if (!known.has(ty)) warnings.push(`unknown tunnel type "${ty}" in ovn-encap-type`);
  const usable = encapTypes.filter((ty) => known.has(ty));
  if (usable.length === 0 || encapIps.length === 0) return { kind: 'incomplete', reason: `no usable encapsulation in ovn-encap-type="${encapType}" ovn-encap-ip="${encapIp}"` };
  const bridgeMappingsText = get('ovn-bridge-mappings') ?? '';
  const parsed = parseBridgeMappings(bridgeMappingsText);
  warnings.push(...parsed.warnings);
  const hostname = get('hostname');
  return {
    kind: 'ok',
    config: {
      systemId,
      hostname: hostname ?? defaultHostname,
      ovnRemote: get('ovn-remote'),
      encapTypes: usable,
      encapIps,
      encapCsum: get('ovn-encap-csum') ?? 'true',
      integrationBridge: get('ovn-bridge') ?? 'br-int',
      bridgeDatapathType: get('ovn-bridge-datapath-type'),
      bridgeMappingsText,
      bridgeMappings: parsed.mappings,
      cmsOptions: get('ovn-cms-options') ?? '',
      monitorAll: get('ovn-monitor-all') ?? 'false',
      chassisMacMappings: get('ovn-chassis-mac-mappings') ?? '',
      isInterconn: get('ovn-is-interconn') === 'true',
      transportZones: commaList(get('ovn-transport-zones') ?? ''),
      ifaceTypes: (ovs.iface_types as readonly string[] | undefined) ?? [],
      warnings,
    },
  };
}
