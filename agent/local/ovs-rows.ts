// Reading the Open_vSwitch database replica the way the planners need it: the single
// Open_vSwitch row, bridges by name, a bridge's ports, a port's interfaces. Rows are as
// ovsdb/client.ts decodes them (maps as ReadonlyMap, sets and optional columns as arrays).
import type { Row } from '../../ovsdb/index.js';

/** The monitored tables and columns the local side needs, for OvsdbClient. */
export const OVS_MONITOR = {
  Open_vSwitch: ['external_ids', 'other_config', 'iface_types', 'bridges', 'datapaths', 'ssl'],
  Datapath: ['capabilities'],
  Bridge: ['name', 'ports', 'mirrors', 'datapath_type', 'fail_mode', 'other_config', 'external_ids'],
  Port: ['name', 'interfaces', 'external_ids'],
  Interface: ['name', 'type', 'options', 'external_ids', 'ofport', 'mtu', 'bfd', 'bfd_status'],
  Mirror: ['name', 'select_src_port', 'select_dst_port', 'output_port', 'external_ids'],
  // What `ovs-vsctl set-ssl KEY CERT CA` writes: the agent's TLS identity when not given one.
  SSL: ['private_key', 'certificate', 'ca_cert'],
  // IPFIX collector sets: those on the integration bridge are what sample actions report to.
  Flow_Sample_Collector_Set: ['id', 'bridge'],
} as const;

export interface OvsBridge {
  readonly _uuid: string;
  readonly name: string;
  readonly ports: readonly string[];
  readonly mirrors: readonly string[];
  readonly datapath_type: string;
  readonly fail_mode: readonly string[];
  readonly other_config: ReadonlyMap<string, string>;
}

export interface OvsPort {
  readonly _uuid: string;
  readonly name: string;
  readonly interfaces: readonly string[];
  readonly external_ids: ReadonlyMap<string, string>;
}

export interface OvsInterface {
  readonly _uuid: string;
  readonly name: string;
  readonly type: string;
  readonly options: ReadonlyMap<string, string>;
  readonly external_ids: ReadonlyMap<string, string>;
  readonly ofport: readonly number[];
  /** The MTU the datapath reports for the interface (none before it is up, or for some types). */
  readonly mtu: readonly number[];
  readonly bfd: ReadonlyMap<string, string>;
  readonly bfd_status: ReadonlyMap<string, string>;
}

export interface OvsMirror {
  readonly _uuid: string;
  readonly name: string;
  readonly select_src_port: readonly string[];
  readonly select_dst_port: readonly string[];
  /** The port the mirrored packets go out of (at most one). */
  readonly output_port: readonly string[];
  readonly external_ids: ReadonlyMap<string, string>;
}

/** A read-only view of the replica: OvsdbClient.table fits. */
export type OvsTables = (table: keyof typeof OVS_MONITOR) => ReadonlyMap<string, Row>;

export function openVswitchRow(ovs: OvsTables): Row | undefined {
  for (const r of ovs('Open_vSwitch').values()) return r;
  return undefined;
}

/**
 * The SSL row the Open_vSwitch row points to (`ovs-vsctl set-ssl`), as ovn-controller reads it
 * for its SSL remotes: undefined when there is none, the columns as they are otherwise.
 */
export function sslOfOpenVswitch(ovs: OvsTables): { readonly private_key: string; readonly certificate: string; readonly ca_cert: string } | undefined {
  const ref = (openVswitchRow(ovs)?.ssl as readonly string[] | undefined)?.[0];
  const row = ref === undefined ? undefined : ovs('SSL').get(ref);
  if (row === undefined) return undefined;
  return { private_key: row.private_key as string, certificate: row.certificate as string, ca_cert: row.ca_cert as string };
}

export function bridgeByName(ovs: OvsTables, name: string): OvsBridge | undefined {
  for (const r of ovs('Bridge').values()) if (r.name === name) return r as unknown as OvsBridge;
  return undefined;
}

/**
 * The ids of the Flow_Sample_Collector_Set rows on `bridge` (none without a bridge). Rows of
 * other bridges do not count: their collectors do not see the integration bridge's samples.
 */
export function sampleCollectorsOf(ovs: OvsTables, bridge: OvsBridge | undefined): Set<number> {
  const ids = new Set<number>();
  if (bridge === undefined) return ids;
  for (const r of ovs('Flow_Sample_Collector_Set').values()) {
    if (r.bridge === bridge._uuid) ids.add(r.id as number);
  }
  return ids;
}

export function portsOf(ovs: OvsTables, bridge: OvsBridge): OvsPort[] {
  const ports = ovs('Port');
  return bridge.ports.map((u) => ports.get(u) as unknown as OvsPort | undefined).filter((p): p is OvsPort => p !== undefined);
}

export function interfacesOf(ovs: OvsTables, port: OvsPort): OvsInterface[] {
  const ifaces = ovs('Interface');
  return port.interfaces.map((u) => ifaces.get(u) as unknown as OvsInterface | undefined).filter((i): i is OvsInterface => i !== undefined);
}

/** The interface's OpenFlow port number, or undefined when it has none (yet, or it failed). */
export function ofportOf(iface: OvsInterface): number | undefined {
  const n = iface.ofport[0];
  return n !== undefined && n > 0 ? n : undefined;
}

/** The interface's MTU as the datapath reports it, or undefined when it reports none (if-status.c, get_iface_mtu). */
export function mtuOf(iface: OvsInterface): number | undefined {
  const n = iface.mtu[0];
  return n !== undefined && n > 0 ? n : undefined;
}

/** Ops that remove one port from a bridge (the Port and its Interfaces are garbage-collected). */
export function removePortOps(bridge: OvsBridge, port: OvsPort): Record<string, unknown>[] {
  return [{ op: 'mutate', table: 'Bridge', where: [['_uuid', '==', ['uuid', bridge._uuid]]], mutations: [['ports', 'delete', ['set', [['uuid', port._uuid]]]]] }];
}

/**
 * Ops that add a port with one interface to a bridge; `tag` makes the named uuids unique when
 * several are added in one transaction.
 */
export function addPortOps(bridge: OvsBridge, tag: string, port: { name: string; external_ids: ReadonlyMap<string, string> }, iface: { type: string; options: ReadonlyMap<string, string> }): Record<string, unknown>[] {
  const sortedMap = (m: ReadonlyMap<string, string>): unknown => ['map', [...m].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))];
  return [
    { op: 'insert', table: 'Interface', 'uuid-name': `i_${tag}`, row: { name: port.name, type: iface.type, options: sortedMap(iface.options) } },
    { op: 'insert', table: 'Port', 'uuid-name': `p_${tag}`, row: { name: port.name, interfaces: ['named-uuid', `i_${tag}`], external_ids: sortedMap(port.external_ids) } },
    { op: 'mutate', table: 'Bridge', where: [['_uuid', '==', ['uuid', bridge._uuid]]], mutations: [['ports', 'insert', ['set', [['named-uuid', `p_${tag}`]]]]] },
  ];
}
