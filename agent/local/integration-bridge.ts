// The integration bridge (ovn-bridge, default br-int), as ovn-controller keeps it
// (process_br_int, create_br_int): created when missing with fail_mode=secure,
// other_config:disable-in-band=true and a fixed other_config:hwaddr, its datapath_type kept at
// the configured one, its fail_mode kept secure. Pure.
import { createHash } from 'node:crypto';
import type { OpGroup, OpJson } from './ovsdb-json.js';
import { mapJson, namedUuid, setJson, uuidJson, whereUuid } from './ovsdb-json.js';
import type { OvsTables } from './ovs-rows.js';
import { bridgeByName, openVswitchRow } from './ovs-rows.js';

/** Open vSwitch's own default ("system", the kernel datapath) when nothing says otherwise. */
export const DEFAULT_DATAPATH_TYPE = 'system';

/**
 * The datapath type the integration bridge should have: the command line's, else
 * external_ids:ovn-bridge-datapath-type, else the bridge's current one, else "system".
 */
export function wantedDatapathType(flag: string | undefined, configured: string | undefined, current: string | undefined): string {
  return flag ?? configured ?? (current !== undefined && current !== '' ? current : DEFAULT_DATAPATH_TYPE);
}

/**
 * A locally administered unicast MAC derived from the chassis and bridge names. ovn-controller
 * picks a random one; any fixed value serves the purpose (ovs-vswitchd then derives the
 * datapath-id from it and does not change it when the first port is added, which would
 * reconnect every OpenFlow controller), and a derived one is the same after a re-creation.
 */
export function bridgeHwaddr(systemId: string, bridge: string): string {
  const h = createHash('sha256').update(`${systemId}\0${bridge}`).digest();
  const bytes = [((h[0] as number) & 0xfc) | 0x02, ...h.subarray(1, 6)];
  return bytes.map((b) => b.toString(16).padStart(2, '0')).join(':');
}

/** The operations that create or fix the integration bridge, or undefined when it is right. */
export function integrationBridgeOps(ovs: OvsTables, systemId: string, name: string, datapathType: string): OpGroup | undefined {
  const root = openVswitchRow(ovs);
  if (root === undefined) return undefined;
  const br = bridgeByName(ovs, name);
  if (br === undefined) {
    const ops: OpJson[] = [
      { op: 'comment', comment: `ovnts agent: creating integration bridge '${name}'` },
      { op: 'insert', table: 'Interface', 'uuid-name': 'iface', row: { name, type: 'internal' } },
      { op: 'insert', table: 'Port', 'uuid-name': 'port', row: { name, interfaces: namedUuid('iface') } },
      {
        op: 'insert', table: 'Bridge', 'uuid-name': 'bridge',
        row: { name, ports: namedUuid('port'), fail_mode: 'secure', datapath_type: datapathType, other_config: mapJson([['disable-in-band', 'true'], ['hwaddr', bridgeHwaddr(systemId, name)]]) },
      },
      { op: 'mutate', table: 'Open_vSwitch', where: whereUuid(root._uuid), mutations: [['bridges', 'insert', setJson([namedUuid('bridge')])]] },
    ];
    return { what: `create integration bridge ${name} (datapath_type ${datapathType})`, ops };
  }
  const row: Record<string, unknown> = {};
  if (br.datapath_type !== datapathType) row.datapath_type = datapathType;
  if (br.fail_mode[0] !== 'secure') row.fail_mode = 'secure';
  if (Object.keys(row).length === 0) return undefined;
  return { what: `set ${Object.keys(row).join(', ')} of integration bridge ${name}`, ops: [{ op: 'update', table: 'Bridge', where: [['_uuid', '==', uuidJson(br._uuid)]], row }] };
}

/**
 * The Datapath record of the integration bridge's datapath type, created when missing
 * (ovn-controller's create_br_datapath): ovs-vswitchd fills its capabilities, which say what the
 * datapath supports (ct_zero_snat: see datapathCtZeroSnat). Undefined when it exists.
 */
export function bridgeDatapathOps(ovs: OvsTables, datapathType: string): OpGroup | undefined {
  const root = openVswitchRow(ovs);
  if (root === undefined) return undefined;
  const datapaths = root.datapaths as ReadonlyMap<string, string> | undefined;
  if (datapaths?.has(datapathType) === true) return undefined;
  return {
    what: `create the Datapath record of datapath type ${datapathType}`,
    ops: [
      { op: 'insert', table: 'Datapath', 'uuid-name': 'dp', row: {} },
      { op: 'mutate', table: 'Open_vSwitch', where: whereUuid(root._uuid), mutations: [['datapaths', 'insert', ['map', [[datapathType, namedUuid('dp')]]]]] },
    ],
  };
}

/**
 * Whether the datapath of `datapathType` can commit connections with an all-zero SNAT
 * (capabilities:ct_zero_snat, OVS_CT_ZERO_SNAT_SUPPORT): then ct_commit on a router adds
 * nat(src), as ovn-controller does where the datapath allows it.
 */
export function datapathCtZeroSnat(ovs: OvsTables, datapathType: string): boolean {
  return (datapathCapabilities(ovs, datapathType)?.get('ct_zero_snat') ?? '').toLowerCase() === 'true';
}

/** OVS_HASH_ALG_SYM_L4 (Open vSwitch's enum ovs_hash_alg: OVS_HASH_ALG_L4 is 0). */
export const OVS_HASH_ALG_SYM_L4 = 1;

/**
 * Whether the datapath of `datapathType` has the symmetric L4 dp_hash (OVN's
 * OVS_DP_HASH_L4_SYM_SUPPORT: capabilities:max_hash_alg equal to OVS_HASH_ALG_SYM_L4, read as
 * an int the way smap_get_int reads it, anything else 0): then the groups of select actions ask
 * for it, as ovn-controller's do.
 */
export function datapathDpHashL4Sym(ovs: OvsTables, datapathType: string): boolean {
  return maxHashAlgIsSymL4(datapathCapabilities(ovs, datapathType)?.get('max_hash_alg'));
}

/** capabilities:max_hash_alg's value read as smap_get_int reads it (a whole decimal int, else 0), compared with OVS_HASH_ALG_SYM_L4. */
export function maxHashAlgIsSymL4(value: string | undefined): boolean {
  if (value === undefined || !/^[ \t\n\v\f\r]*[+-]?[0-9]+$/.test(value)) return false;
  return BigInt(value.trim()) === BigInt(OVS_HASH_ALG_SYM_L4);
}

/** The capabilities ovs-vswitchd wrote in the Datapath record of `datapathType` (empty: system); undefined without one. */
function datapathCapabilities(ovs: OvsTables, datapathType: string): ReadonlyMap<string, string> | undefined {
  const root = openVswitchRow(ovs);
  const uuid = (root?.datapaths as ReadonlyMap<string, string> | undefined)?.get(datapathType === '' ? DEFAULT_DATAPATH_TYPE : datapathType);
  const dp = uuid === undefined ? undefined : ovs('Datapath').get(uuid);
  return dp?.capabilities as ReadonlyMap<string, string> | undefined;
}
