// Tunnel ports from the integration bridge to every other chassis, as ovn-controller keeps
// them (controller/encaps.c): for each remote chassis in a shared transport zone, its preferred
// encapsulation (geneve over stt over vxlan, among the types this chassis has too) and one
// port per Encap of that type, named "ovn-<first 6 characters of the chassis name>-<n>" with
// n the first free hex number, interface options key=flow, remote_ip=<Encap.ip>, the Encap's
// csum and dst_port, and from this chassis's configuration tos (ovn-encap-tos), df_default
// (ovn-encap-df_default) and local_ip (ovn-set-local-ip: this chassis's encap IP), Port
// external_ids:ovn-chassis-id="<chassis>@<ip>". Ports whose chassis or Encap is gone are
// removed; a port whose options differ is updated in place. Pure.
import type * as sb from '../../ovsdb/rows/sb.js';
import type { ChassisConfig } from './ovs-config.js';
import { TUNNEL_TYPES } from './ovs-config.js';
import { mapJson, mapsEqual, type OpGroup } from './ovsdb-json.js';
import type { OvsBridge, OvsInterface, OvsPort, OvsTables } from './ovs-rows.js';
import { addPortOps, interfacesOf, portsOf, removePortOps } from './ovs-rows.js';

/** The Port external_ids key that marks a tunnel port and names its far end. */
export const CHASSIS_ID_KEY = 'ovn-chassis-id';

export interface TunnelSpec {
  /** The remote chassis's name. */
  readonly chassis: string;
  /** "<chassis>@<ip>": one tunnel per remote encap IP. */
  readonly id: string;
  readonly type: string;
  readonly remoteIp: string;
  readonly options: ReadonlyMap<string, string>;
}

export interface TunnelRows {
  readonly chassis: Iterable<sb.Chassis>;
  encap(uuid: string): sb.Encap | undefined;
}

const preference = (type: string): number => {
  const i = (TUNNEL_TYPES as readonly string[]).indexOf(type);
  return i < 0 ? -1 : TUNNEL_TYPES.length - i;
};

export function tunnelId(chassis: string, ip: string): string {
  return `${chassis}@${ip}`;
}

/** Splits "<chassis>@<ip>" at its last "@"; undefined when either part is empty. */
export function parseTunnelId(id: string): { chassis: string; ip: string } | undefined {
  const i = id.lastIndexOf('@');
  if (i <= 0 || i === id.length - 1) return undefined;
  return { chassis: id.slice(0, i), ip: id.slice(i + 1) };
}

function zonesOverlap(ours: readonly string[], theirs: readonly string[]): boolean {
  if (ours.length === 0 && theirs.length === 0) return true;
  return theirs.some((z) => ours.includes(z));
}

/** The tunnels this chassis should have, sorted by id. */
export function desiredTunnels(config: ChassisConfig, rows: TunnelRows): TunnelSpec[] {
  const out: TunnelSpec[] = [];
  const ourTypes = new Set(config.encapTypes);
  // ovn-set-local-ip pins the tunnels' source address to this chassis's encap IP. With several
  // (ovn-encap-ip a list), ovn-controller logs an error and takes its first Encap's; here the
  // first of ovn-encap-ip (readChassisConfig warns).
  const localIp = config.setLocalIp ? config.encapIps[0] : undefined;
  for (const ch of rows.chassis) {
    if (ch.name === config.systemId) continue;
    if (!zonesOverlap(config.transportZones, ch.transport_zones)) continue;
    if (ch.other_config.get('is-remote') === 'true' && !config.isInterconn) continue;
    const encaps = ch.encaps.map((u) => rows.encap(u)).filter((e): e is sb.Encap => e !== undefined);
    let best = -1;
    for (const e of encaps) if (ourTypes.has(e.type) && preference(e.type) > best) best = preference(e.type);
    if (best < 0) continue;
    for (const e of encaps) {
      if (preference(e.type) !== best) continue;
      const options = new Map<string, string>([['key', 'flow'], ['remote_ip', e.ip]]);
      const csum = e.options.get('csum');
      if (csum === 'true' || csum === 'false') options.set('csum', csum);
      const dstPort = e.options.get('dst_port');
      if (dstPort !== undefined) options.set('dst_port', dstPort);
      if (config.encapTos !== undefined) options.set('tos', config.encapTos);
      if (config.encapDfDefault !== undefined) options.set('df_default', config.encapDfDefault);
      if (localIp !== undefined) options.set('local_ip', localIp);
      out.push({ chassis: ch.name, id: tunnelId(ch.name, e.ip), type: e.type, remoteIp: e.ip, options });
    }
  }
  return out.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/** "ovn-<6 chars>-<n>" with the first hex n that no port of the bridge has taken. */
export function tunnelPortName(chassis: string, taken: ReadonlySet<string>): string {
  for (let i = 0; i < 0x10000; i++) {
    const name = `ovn-${chassis.slice(0, 6)}-${i.toString(16)}`;
    if (!taken.has(name)) return name;
  }
  throw new Error(`no free tunnel port name for chassis ${chassis}`);
}

/** One group per tunnel port to add, change or remove on the integration bridge. */
export function tunnelOps(ovs: OvsTables, brInt: OvsBridge, desired: readonly TunnelSpec[]): OpGroup[] {
  const groups: OpGroup[] = [];
  const ports = portsOf(ovs, brInt);
  const taken = new Set(ports.map((p) => p.name));
  const existing = new Map<string, { port: OvsPort; ifaces: OvsInterface[] }>();
  for (const port of ports) {
    const id = port.external_ids.get(CHASSIS_ID_KEY);
    if (id === undefined) continue;
    if (existing.has(id)) {
      groups.push({ what: `remove duplicate tunnel port ${port.name} (${id})`, ops: removePortOps(brInt, port) });
      continue;
    }
    existing.set(id, { port, ifaces: interfacesOf(ovs, port) });
  }
  let n = 0;
  for (const want of desired) {
    const have = existing.get(want.id);
    existing.delete(want.id);
    if (have !== undefined && have.port.interfaces.length === 1 && have.ifaces.length === 1) {
      const iface = have.ifaces[0] as OvsInterface;
      if (iface.type === want.type && mapsEqual(iface.options, want.options)) continue;
      groups.push({
        what: `update tunnel port ${have.port.name} to ${want.id} (${want.type})`,
        ops: [{ op: 'update', table: 'Interface', where: [['_uuid', '==', ['uuid', iface._uuid]]], row: { type: want.type, options: mapJson(want.options) } }],
      });
      continue;
    }
    // A malformed port (not exactly one interface) is replaced under a new name: reusing its
    // name in the transaction that removes it would rely on the order of garbage collection
    // and index checks inside ovsdb-server.
    const ops = have === undefined ? [] : removePortOps(brInt, have.port);
    const name = tunnelPortName(want.chassis, taken);
    taken.add(name);
    ops.push(...addPortOps(brInt, `tun${n++}`, { name, external_ids: new Map([[CHASSIS_ID_KEY, want.id]]) }, { type: want.type, options: want.options }));
    groups.push({ what: `add tunnel port ${name} to ${want.id} (${want.type})`, ops });
  }
  for (const [id, { port }] of existing) groups.push({ what: `remove tunnel port ${port.name} (${id} is gone)`, ops: removePortOps(brInt, port) });
  return groups;
}
