// A FlowCompileContext over SB rows: datapaths (a switch has external_ids:logical-switch),
// logical ports and multicast groups by (datapath, name), address sets, port groups (per
// datapath, as OVN 23.03 names them "<tunnel_key>_<name>", falling back to the plain name) and
// datapath groups. Built once per SB state; the lookups are then plain map reads.

import type { Row } from '../../ovsdb/index.js';
import type * as sb from '../../ovsdb/rows/sb.js';
import type { Symtab } from '../expr/symbols.js';
import type { DatapathInfo, FlowCompileContext } from './logical-flow.js';

/** The SB tables the context reads; each is uuid → row, as an SbView holds them. */
export type SbTables = ReadonlyMap<string, ReadonlyMap<string, Row>>;

export interface SbContextOptions {
  readonly symtab: Symtab;
  /** Extra address sets (name → addresses), for sets the SB does not carry. */
  readonly extraAddressSets?: ReadonlyMap<string, readonly string[]>;
  readonly groupId?: FlowCompileContext['groupId'];
  readonly conjIdOfs?: FlowCompileContext['conjIdOfs'];
  readonly isChassisResident?: FlowCompileContext['isChassisResident'];
}

function rows<T>(tables: SbTables, name: string): T[] {
  return [...(tables.get(name)?.values() ?? [])] as unknown as T[];
}

export function sbCompileContext(tables: SbTables, opts: SbContextOptions): FlowCompileContext {
  const datapaths = new Map<string, DatapathInfo>();
  for (const d of rows<sb.Datapath_Binding>(tables, 'Datapath_Binding')) {
    datapaths.set(d._uuid, {
      tunnelKey: d.tunnel_key,
      isSwitch: d.external_ids.has('logical-switch'),
      ...(d.external_ids.has('snat-ct-zone') ? { snatCtZone: true } : {}),
    });
  }
  // Datapath → name → key: ports first, then multicast groups for names no port has.
  const ports = new Map<string, Map<string, number>>();
  const portsOf = (dp: string): Map<string, number> => {
    let m = ports.get(dp);
    if (m === undefined) ports.set(dp, (m = new Map()));
    return m;
  };
  for (const p of rows<sb.Port_Binding>(tables, 'Port_Binding')) portsOf(p.datapath).set(p.logical_port, p.tunnel_key);
  for (const m of rows<sb.Multicast_Group>(tables, 'Multicast_Group')) {
    const byName = portsOf(m.datapath);
    if (!byName.has(m.name)) byName.set(m.name, m.tunnel_key);
  }
  const addressSets = new Map<string, readonly string[]>(opts.extraAddressSets ?? []);
  for (const a of rows<sb.Address_Set>(tables, 'Address_Set')) addressSets.set(a.name, a.addresses);
  const portGroups = new Map<string, readonly string[]>();
  for (const g of rows<sb.Port_Group>(tables, 'Port_Group')) portGroups.set(g.name, g.ports);
  const dpGroups = new Map<string, readonly string[]>();
  for (const g of rows<sb.Logical_DP_Group>(tables, 'Logical_DP_Group')) dpGroups.set(g._uuid, g.datapaths);
  return {
    symtab: opts.symtab,
    datapath: (u) => datapaths.get(u),
    dpGroup: (u) => dpGroups.get(u),
    lookupPort: (dp, name) => ports.get(dp)?.get(name),
    addressSet: (n) => addressSets.get(n),
    portGroup: (n) => portGroups.get(n),
    portGroupIn: (dp, n) => {
      const key = datapaths.get(dp)?.tunnelKey;
      return (key === undefined ? undefined : portGroups.get(`${key}_${n}`)) ?? portGroups.get(n);
    },
    ...(opts.groupId === undefined ? {} : { groupId: opts.groupId }),
    ...(opts.conjIdOfs === undefined ? {} : { conjIdOfs: opts.conjIdOfs }),
    ...(opts.isChassisResident === undefined ? {} : { isChassisResident: opts.isChassisResident }),
  };
}
