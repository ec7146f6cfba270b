// What pinctrl asks of the SB, answered from the flow side's SB store: tunnel keys back to
// names and UUIDs (a packet-in carries only keys), the MAC_Binding already known for a
// (port, IP), the DNS records of a datapath, the ports a bind_vport names, and this chassis's
// Controller_Event rows. The store holds this chassis's interest only,
// so the scans are short.

import type { SbStore } from '../flows/sb-store.js';
import type * as sb from '../../ovsdb/rows/sb.js';
import type { PacketInContext } from './handlers.js';
import type { MacBindingLookup } from './mac-binding-writer.js';
import type { PortKeys } from './pinctrl.js';
import type { VportLookup } from './vport-binding-writer.js';
import { mcastSnoopConfig, type IgmpLookup } from './igmp-snooping.js';
import type { ControllerEventLookup, ControllerEventRow } from './controller-event-writer.js';
import { EMPTY_LB_BACKENDS } from '../actions/controller-event.js';

function datapathOfKey(s: SbStore, key: number): sb.Datapath_Binding | undefined {
  for (const row of s.table('Datapath_Binding').values()) {
    const dp = row as unknown as sb.Datapath_Binding;
    if (dp.tunnel_key === key) return dp;
  }
  return undefined;
}

/** The DNS records of a datapath: its DNS rows' records maps, by row UUID (ovn-controller takes
 *  the first row with the name, in its hash order; any fixed order will do). */
export function sbPacketInContext(store: () => SbStore): PacketInContext {
  return {
    dnsRecords(dpKey) {
      const s = store();
      const dp = datapathOfKey(s, dpKey);
      if (dp === undefined) return [];
      const rows = [...s.dnsOfDatapath(dp._uuid)].sort().map((u) => s.get<sb.DNS>('DNS', u));
      return rows.flatMap((r) => (r === undefined ? [] : [r.records]));
    },
  };
}

export function sbPinctrlLookup(store: () => SbStore): MacBindingLookup {
  return {
    portName(dpKey, portKey) {
      const dp = datapathOfKey(store(), dpKey);
      return dp === undefined ? undefined : store().portByKey(dp._uuid, portKey)?.logical_port;
    },
    datapathUuid: (dpKey) => datapathOfKey(store(), dpKey)?._uuid,
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

/** A port's tunnel keys and options:chassis-redirect-port by name (Pinctrl's portKeys). */
export function sbPortKeys(store: () => SbStore): (logicalPort: string) => PortKeys | undefined {
  return (logicalPort) => {
    const s = store();
    const pb = s.portByName(logicalPort);
    if (pb === undefined) return undefined;
    const dp = s.datapath(pb.datapath);
    if (dp === undefined) return undefined;
    const redirect = pb.options.get('chassis-redirect-port');
    return { dpKey: dp.tunnel_key, portKey: pb.tunnel_key, ...(redirect === undefined ? {} : { chassisRedirectPort: redirect }) };
  };
}

/** Ports by tunnel keys and this chassis's row, for bind_vport claims. */
export function sbVportLookup(store: () => SbStore, chassisUuid: () => string | undefined): VportLookup {
  return {
    port(dpKey, portKey) {
      const s = store();
      const dp = datapathOfKey(s, dpKey);
      const pb = dp === undefined ? undefined : s.portByKey(dp._uuid, portKey);
      if (pb === undefined) return undefined;
      return { uuid: pb._uuid, logicalPort: pb.logical_port, type: pb.type, chassis: pb.chassis[0], virtualParent: pb.virtual_parent[0] };
    },
    chassisUuid,
  };
}

/** IP_Multicast settings, ports and this chassis's IGMP_Group rows by tunnel keys, for IGMP snooping. */
export function sbIgmpLookup(store: () => SbStore, chassisUuid: () => string | undefined): IgmpLookup {
  return {
    chassisUuid,
    ipMulticast(dpKey) {
      const s = store();
      const dp = datapathOfKey(s, dpKey);
      if (dp === undefined) return undefined;
      for (const row of s.table('IP_Multicast').values()) {
        const r = row as unknown as sb.IP_Multicast;
        if (r.datapath === dp._uuid) return mcastSnoopConfig(r);
      }
      return undefined;
    },
    datapathUuid: (dpKey) => datapathOfKey(store(), dpKey)?._uuid,
    portUuid(dpKey, portKey) {
      const s = store();
      const dp = datapathOfKey(s, dpKey);
      return dp === undefined ? undefined : s.portByKey(dp._uuid, portKey)?._uuid;
    },
    igmpGroups(dpUuid, us) {
      const out = [];
      for (const row of store().table('IGMP_Group').values()) {
        const g = row as unknown as sb.IGMP_Group;
        if (g.datapath[0] === dpUuid && g.chassis[0] === us) out.push({ uuid: g._uuid, address: g.address, ports: g.ports });
      }
      return out;
    },
    igmpGroupDatapaths(us) {
      const s = store();
      const keys = new Set<number>();
      for (const row of s.table('IGMP_Group').values()) {
        const g = row as unknown as sb.IGMP_Group;
        const dp = g.chassis[0] === us && g.datapath[0] !== undefined ? s.datapath(g.datapath[0]) : undefined;
        if (dp !== undefined) keys.add(dp.tunnel_key);
      }
      return [...keys];
    },
  };
}

/** This chassis's empty_lb_backends Controller_Event rows, for the event writer. The CMS deletes
 *  the rows it has handled, so the scan stays short. */
export function sbControllerEventLookup(store: () => SbStore, chassisUuid: () => string | undefined): ControllerEventLookup {
  return {
    chassisUuid,
    *emptyLbBackendsRows(us): Iterable<ControllerEventRow> {
      for (const row of store().table('Controller_Event').values()) {
        const e = row as unknown as sb.Controller_Event;
        if (e.event_type !== EMPTY_LB_BACKENDS || e.chassis[0] !== us) continue;
        yield { vip: e.event_info.get('vip'), protocol: e.event_info.get('protocol'), loadBalancer: e.event_info.get('load_balancer'), seqNum: e.seq_num };
      }
    },
  };
}
