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
  /** ovn-encap-tos: the tunnel interfaces' options:tos (absent or "none": not set). */
  readonly encapTos: string | undefined;
  /** ovn-encap-df_default: the tunnel interfaces' options:df_default, as written. */
  readonly encapDfDefault: string | undefined;
  /** ovn-set-local-ip: the tunnel interfaces get options:local_ip (this chassis's encap IP). */
  readonly setLocalIp: boolean;
  /**
   * ovn-remote-probe-interval: the inactivity probe of the connection to the central (the SB
   * stream's gRPC keepalive), in ms; 0: none. Default 5000 (ovn-controller's for a TCP remote),
   * at least 1000 when not 0.
   */
  readonly remoteProbeIntervalMs: number;
  /** ovn-openflow-probe-interval: the OpenFlow channel's inactivity probe, in s; 0 (the default): none, else at least 5. */
  readonly openflowProbeIntervalSec: number;
  /** ovn-match-northd-version: hold everything while SB_Global's northd_internal_version is not ours. */
  readonly matchNorthdVersion: boolean;
  /** ovn-ofctrl-wait-before-clear (plain key only): ms to wait after a switch connection before the first install. */
  readonly ofctrlWaitBeforeClearMs: number;
  /** garp-max-timeout-sec (plain key only): 0, or the cap of the announcements' backoff, in s (they then never stop). */
  readonly garpMaxTimeoutSec: number;
  /** Things that are wrong but not fatal (a bad bridge mapping), for the log. */
  readonly warnings: readonly string[];
}

export type ChassisConfigResult =
  | { readonly kind: 'ok'; readonly config: ChassisConfig }
  | { readonly kind: 'incomplete'; readonly reason: string };

/** ovn-controller's probe of its SB connection when the remote needs one (TCP), and the least nonzero one. */
export const REMOTE_PROBE_INTERVAL_MS_DEFAULT = 5000;
export const REMOTE_PROBE_INTERVAL_MS_MIN = 1000;
/** rconn's least nonzero OpenFlow probe interval. */
export const OPENFLOW_PROBE_INTERVAL_SEC_MIN = 5;
/** The largest garp-max-timeout-sec taken (a day); a larger value is refused with a warning. */
export const GARP_MAX_TIMEOUT_SEC_MAX = 86_400;

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

/**
 * A decimal integer as Open vSwitch's str_to_llong reads one (strtoll, base 10, with nothing
 * after it): leading white space and a sign allowed; undefined when it does not parse or is
 * outside [min, max].
 */
export function parseCInteger(text: string, min: number, max: number): number | undefined {
  const m = /^[ \t\n\v\f\r]*([+-]?\d+)$/.exec(text);
  if (m === null) return undefined;
  const n = Number(m[1]);
  return Number.isSafeInteger(n) && n >= min && n <= max ? n : undefined;
}

const INT_MAX = 2 ** 31 - 1;
const INT_MIN = -(2 ** 31);
const UINT_MAX = 2 ** 32 - 1;

/**
 * An integer key as ovn-controller reads it (smap_get_int, smap_get_uint): a value that does not
 * parse counts as absent, so a bad "<key>-<chassis>" falls back to "<key>", and a bad "<key>" to
 * the default. Each bad value is a warning, since ovn-controller ignores it without a word.
 */
function integerKey(ids: ReadonlyMap<string, string>, chassis: string | undefined, key: string, def: number, min: number, max: number, warnings: string[]): number {
  const read = (k: string, fallback: number): number => {
    const text = ids.get(k);
    if (text === undefined) return fallback;
    const n = parseCInteger(text, min, max);
    if (n === undefined) warnings.push(`external_ids:${k}="${text}" is not an integer in [${min}, ${max}]; ignored`);
    return n ?? fallback;
  };
  const plain = read(key, def);
  return chassis === undefined ? plain : read(`${key}-${chassis}`, plain);
}

/** smap_get_bool with a false default: only "true", in any case, is true. */
const isTrue = (v: string | undefined): boolean => v !== undefined && v.toLowerCase() === 'true';

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
  const tos = get('ovn-encap-tos');
  // ovn-controller forces a probe interval it is given up to its minimum (reconnect.c, rconn.c).
  const remoteProbe = integerKey(ids, systemId, 'ovn-remote-probe-interval', REMOTE_PROBE_INTERVAL_MS_DEFAULT, INT_MIN, INT_MAX, warnings);
  const openflowProbe = integerKey(ids, systemId, 'ovn-openflow-probe-interval', 0, INT_MIN, INT_MAX, warnings);
  // garp-max-timeout-sec is an unsigned long long in ovn-controller, multiplied by 1000; here at
  // most a day, so that the product stays exact (a larger cap would never be reached anyway).
  const setLocalIp = isTrue(get('ovn-set-local-ip'));
  if (setLocalIp && encapIps.length > 1) warnings.push(`ovn-set-local-ip does not support several addresses in ovn-encap-ip ("${encapIp}"): the tunnels' local_ip is the first, ${encapIps[0] ?? ''}`);
  const garpMax = integerKey(ids, undefined, 'garp-max-timeout-sec', 0, 0, GARP_MAX_TIMEOUT_SEC_MAX, warnings);
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
      encapTos: tos === 'none' ? undefined : tos,
      encapDfDefault: get('ovn-encap-df_default'),
      setLocalIp,
      remoteProbeIntervalMs: remoteProbe === 0 ? 0 : Math.max(REMOTE_PROBE_INTERVAL_MS_MIN, remoteProbe),
      openflowProbeIntervalSec: openflowProbe === 0 ? 0 : Math.max(OPENFLOW_PROBE_INTERVAL_SEC_MIN, openflowProbe),
      matchNorthdVersion: isTrue(get('ovn-match-northd-version')),
      ofctrlWaitBeforeClearMs: integerKey(ids, undefined, 'ovn-ofctrl-wait-before-clear', 0, 0, UINT_MAX, warnings),
      garpMaxTimeoutSec: garpMax,
      warnings,
    },
  };
}
