// What pinctrl asks of the SB, answered from the flow side's SB store: tunnel keys back to
// names and UUIDs (a packet-in carries only keys), and the MAC_Binding already known for a
// (port, IP). The store holds this chassis's interest only, so the scans are short.

import type { SbStore } from '../flows/sb-store.js';
import type * as sb from '../../ovsdb/rows/sb.js';
import type { MacBindingLookup } from './mac-binding-writer.js';

export function sbPinctrlLookup(store: () => SbStore): MacBindingLookup {
  const datapathOfKey = (key: number): sb.Datapath_Binding | undefined => {
    for (const row of store().table('Datapath_Binding').values()) {
      const dp = row as unknown as sb.Datapath_Binding;
      if (dp.tunnel_key === key) return dp;
    }
    return undefined;
  };
  return {
    portName(dpKey, portKey) {
      const dp = datapathOfKey(dpKey);
      return dp === undefined ? undefined : store().portByKey(dp._uuid, portKey)?.logical_port;
    },
    datapathUuid: (dpKey) => datapathOfKey(dpKey)?._uuid,
    macBinding(logicalPort, ip) {
      const s = store();
      const rows = s.table('MAC_Binding');
      for (const u of s.macBindingsOfPort(logicalPort)) {
        const m = rows.get(u) as unknown as sb.MAC_Binding | undefined;
        if (m !== undefined && m.ip === ip) return { mac: m.mac };
      }
      return undefined;
    },
  };
}
