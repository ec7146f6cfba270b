// This chassis's rows in the Southbound — Chassis, its Encaps, Chassis_Private — as
// ovn-controller keeps them (controller/chassis.c): registered when missing, brought up to date
// when the Open_vSwitch configuration changes, deleted on a clean exit. Pure: the planner gets
// the configuration and the SB rows it knows, and returns the transaction that makes them agree
// (or nothing when they already do).
import type * as sb from '../../ovsdb/rows/sb.js';
import type { ChassisConfig } from './ovs-config.js';
import type { OpGroup, OpJson } from './ovsdb-json.js';
import { mapJson, mapsEqual, namedUuid, setJson, uuidJson, whereUuid } from './ovsdb-json.js';

/** What the planner reads of the SB (SbRows implements it; a test may fake it). */
export interface ChassisRows {
  chassisByName(name: string): sb.Chassis | undefined;
  chassisPrivateByName(name: string): sb.Chassis_Private | undefined;
  encap(uuid: string): sb.Encap | undefined;
}

/**
 * Chassis.other_config as ovn-controller sets it: the keys it owns replaced, any other key an
 * operator set kept. Of ovn-controller's feature flags only port-up-notif is claimed: this
 * agent sets Port_Binding.up once a port's flows are installed.
 */
export function desiredOtherConfig(config: ChassisConfig, datapathType: string, existing: ReadonlyMap<string, string>): Map<string, string> {
  const out = new Map(existing);
  out.set('ovn-bridge-mappings', config.bridgeMappingsText);
  out.set('datapath-type', datapathType);
  out.set('ovn-cms-options', config.cmsOptions);
  out.set('ovn-monitor-all', config.monitorAll);
  out.set('iface-types', config.ifaceTypes.join(','));
  out.set('ovn-chassis-mac-mappings', config.chassisMacMappings);
  out.set('is-interconn', config.isInterconn ? 'true' : 'false');
  out.set('port-up-notif', 'true');
  return out;
}

interface EncapSpec {
  readonly type: string;
  readonly ip: string;
  readonly csum: string;
}

/** Every (ip, type) pair of the configuration: one Encap each (chassis_build_encaps). */
export function desiredEncaps(config: ChassisConfig): EncapSpec[] {
  const out: EncapSpec[] = [];
  for (const ip of config.encapIps) for (const type of config.encapTypes) out.push({ type, ip, csum: config.encapCsum });
  return out;
}

function encapsMatch(chassis: sb.Chassis, rows: ChassisRows, want: readonly EncapSpec[]): boolean {
  if (chassis.encaps.length !== want.length) return false;
  const have = new Set<string>();
  for (const u of chassis.encaps) {
    const e = rows.encap(u);
    // An Encap we cannot see yet (or that names another chassis) makes the set not ours.
    if (e === undefined || e.chassis_name !== chassis.name) return false;
    have.add(`${e.type}|${e.ip}|${e.options.get('csum') ?? ''}`);
  }
  return want.every((w) => have.has(`${w.type}|${w.ip}|${w.csum}`)) && have.size === want.length;
}

function sameStrings(a: readonly string[], b: readonly string[]): boolean {
  const sa = [...a].sort();
  const sb_ = [...b].sort();
  return sa.length === sb_.length && sa.every((x, i) => x === sb_[i]);
}

/**
 * The transaction that registers or updates this chassis, or undefined when the SB already
 * agrees. Changed encapsulations replace the chassis's Encap rows (the old ones are deleted in
 * the same transaction, so their (type, ip) can be reused at once).
 */
export function chassisRecordOps(config: ChassisConfig, datapathType: string, rows: ChassisRows): OpGroup | undefined {
  const name = config.systemId;
  const chassis = rows.chassisByName(name);
  const priv = rows.chassisPrivateByName(name);
  const encaps = desiredEncaps(config);
  const ops: OpJson[] = [];
  const insertEncaps = (): unknown[] =>
    encaps.map((e, i) => {
      ops.push({ op: 'insert', table: 'Encap', 'uuid-name': `encap${i}`, row: { type: e.type, ip: e.ip, chassis_name: name, options: mapJson([['csum', e.csum]]) } });
      return namedUuid(`encap${i}`);
    });
  let chassisRef: unknown;
  let what: string;
  if (chassis === undefined) {
    const refs = insertEncaps();
    ops.push({
      op: 'insert', table: 'Chassis', 'uuid-name': 'chassis',
      row: { name, hostname: config.hostname, encaps: setJson(refs), other_config: mapJson(desiredOtherConfig(config, datapathType, new Map())), transport_zones: setJson(config.transportZones) },
    });
    chassisRef = namedUuid('chassis');
    what = `register chassis ${name}`;
  } else {
    const row: Record<string, unknown> = {};
    if (chassis.hostname !== config.hostname) row.hostname = config.hostname;
    const other = desiredOtherConfig(config, datapathType, chassis.other_config);
    if (!mapsEqual(other, chassis.other_config)) row.other_config = mapJson(other);
    if (!sameStrings(chassis.transport_zones, config.transportZones)) row.transport_zones = setJson(config.transportZones);
    if (!encapsMatch(chassis, rows, encaps)) {
      for (const u of chassis.encaps) ops.push({ op: 'delete', table: 'Encap', where: whereUuid(u) });
      row.encaps = setJson(insertEncaps());
    }
    if (Object.keys(row).length > 0) ops.push({ op: 'update', table: 'Chassis', where: whereUuid(chassis._uuid), row });
    chassisRef = uuidJson(chassis._uuid);
    what = `update chassis ${name} (${Object.keys(row).join(', ')})`;
  }
  if (priv === undefined) {
    ops.push({ op: 'insert', table: 'Chassis_Private', row: { name, chassis: chassisRef } });
  } else if (chassis === undefined || priv.chassis[0] !== chassis._uuid) {
    ops.push({ op: 'update', table: 'Chassis_Private', where: whereUuid(priv._uuid), row: { chassis: chassisRef } });
  }
  if (ops.length === 0) return undefined;
  if (chassis !== undefined && !ops.some((o) => o.table === 'Chassis')) what = `link Chassis_Private ${name}`;
  return { what, ops: [{ op: 'comment', comment: `ovnts agent: ${what}` }, ...ops] };
}

/** Deletes this chassis's rows (its Encaps go with the Chassis that holds them). */
export function chassisCleanupOps(name: string, rows: ChassisRows): OpGroup | undefined {
  const ops: OpJson[] = [];
  const priv = rows.chassisPrivateByName(name);
  if (priv !== undefined) ops.push({ op: 'delete', table: 'Chassis_Private', where: whereUuid(priv._uuid) });
  const chassis = rows.chassisByName(name);
  if (chassis !== undefined) ops.push({ op: 'delete', table: 'Chassis', where: whereUuid(chassis._uuid) });
  if (ops.length === 0) return undefined;
  return { what: `unregister chassis ${name}`, ops: [{ op: 'comment', comment: `ovnts agent: unregister chassis ${name}` }, ...ops] };
}
