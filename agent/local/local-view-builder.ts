// The LocalView the flow side reads, built from the integration bridge in the Open_vSwitch
// replica: VIFs (interfaces with external_ids:iface-id and an OpenFlow port), tunnel ports (by
// their ovn-chassis-id) and localnet patch ports (by their ovn-localnet-port, mapped to its
// network), the MTUs the datapath reports for the VIFs' interfaces, and the ids of its IPFIX
// collector sets (Flow_Sample_Collector_Set). Also the
// interface facts the binding decisions need. Pure.
import { sameActiveTunnels, sameSampleCollectors, type LocalView, type TunnelPort } from '../local-view.js';
import type { LocalIface } from './binding.js';
import type { OvsBridge, OvsTables } from './ovs-rows.js';
import { interfacesOf, mtuOf, ofportOf, portsOf, sampleCollectorsOf } from './ovs-rows.js';
import { LOCALNET_PORT_KEY } from './patch-ports.js';
import { CHASSIS_ID_KEY, parseTunnelId } from './tunnels.js';
import { activeTunnels } from './bfd.js';
import { datapathCtZeroSnat, datapathDpHashL4Sym } from './integration-bridge.js';

export interface BuiltView {
  readonly view: LocalView;
  /** iface-id → the interface that carries it (the binding decisions' input). */
  readonly ifaces: ReadonlyMap<string, LocalIface>;
  /** Two interfaces claiming one iface-id (the first by name wins), for the log. */
  readonly conflicts: readonly string[];
}

/**
 * `networkOf` maps a localnet logical port to its network (options:network_name). With
 * several localnet ports of one network plugged here, the network's patch port in the view is
 * the one of the first port by name.
 */
export function buildLocalView(chassis: string, ovs: OvsTables, brInt: OvsBridge | undefined, networkOf: ReadonlyMap<string, string>): BuiltView {
  const vifs = new Map<string, number>();
  const vifMtus = new Map<string, number>();
  const tunnels = new Map<string, TunnelPort>();
  const patches = new Map<string, { port: string; ofport: number }>();
  const ifaces = new Map<string, LocalIface>();
  const conflicts: string[] = [];
  if (brInt !== undefined) {
    const ports = portsOf(ovs, brInt).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const port of ports) {
      const tunnelId = port.external_ids.get(CHASSIS_ID_KEY);
      const localnet = port.external_ids.get(LOCALNET_PORT_KEY);
      for (const iface of interfacesOf(ovs, port)) {
        const ofport = ofportOf(iface);
        if (tunnelId !== undefined) {
          const id = parseTunnelId(tunnelId);
          // One tunnel per remote chassis in the view: the first by port name.
          if (id !== undefined && ofport !== undefined && !tunnels.has(id.chassis)) tunnels.set(id.chassis, { ofport, type: iface.type, remoteIp: id.ip });
          continue;
        }
        if (localnet !== undefined) {
          const network = networkOf.get(localnet);
          const prev = network === undefined ? undefined : patches.get(network);
          if (network !== undefined && ofport !== undefined && iface.type === 'patch' && (prev === undefined || localnet < prev.port)) patches.set(network, { port: localnet, ofport });
          continue;
        }
        const ifaceId = iface.external_ids.get('iface-id');
        if (ifaceId === undefined || ifaceId === '') continue;
        // ovn-controller binds only interfaces that have an OpenFlow port.
        if (ofport === undefined) continue;
        const prev = ifaces.get(ifaceId);
        if (prev !== undefined) {
          conflicts.push(`interfaces ${prev.name} and ${iface.name} both carry iface-id ${ifaceId}; ${prev.name} is used`);
          continue;
        }
        vifs.set(ifaceId, ofport);
        const mtu = mtuOf(iface);
        if (mtu !== undefined) vifMtus.set(ifaceId, mtu);
        const encapIp = iface.external_ids.get('encap-ip');
        const ifaceIdVer = iface.external_ids.get('iface-id-ver');
        ifaces.set(ifaceId, {
          ifaceUuid: iface._uuid,
          name: iface.name,
          ofport,
          ovnInstalled: iface.external_ids.get('ovn-installed') === 'true',
          ...(encapIp !== undefined ? { encapIp } : {}),
          ...(ifaceIdVer !== undefined ? { ifaceIdVer } : {}),
        });
      }
    }
  }
  const localnetPatches = new Map([...patches].map(([net, p]) => [net, p.ofport] as const));
  const ctZeroSnat = brInt !== undefined && datapathCtZeroSnat(ovs, brInt.datapath_type);
  const dpHashL4Sym = brInt !== undefined && datapathDpHashL4Sym(ovs, brInt.datapath_type);
  const sampleCollectors = sampleCollectorsOf(ovs, brInt);
  return {
    view: { chassis, vifs, vifMtus, tunnels, localnetPatches, activeTunnels: activeTunnels(ovs, brInt), ctZeroSnat, dpHashL4Sym, sampleCollectors },
    ifaces, conflicts,
  };
}

function mapEqual<V>(a: ReadonlyMap<string, V>, b: ReadonlyMap<string, V>, eq: (x: V, y: V) => boolean): boolean {
  if (a.size !== b.size) return false;
  for (const [k, v] of a) {
    const w = b.get(k);
    if (w === undefined || !eq(v, w)) return false;
  }
  return true;
}

export function localViewsEqual(a: LocalView, b: LocalView): boolean {
  return a.chassis === b.chassis
    && sameActiveTunnels(a.activeTunnels, b.activeTunnels)
    && a.ctZeroSnat === b.ctZeroSnat
    && a.dpHashL4Sym === b.dpHashL4Sym
    && sameActiveTunnels(a.activatedPorts, b.activatedPorts)
    && sameSampleCollectors(a.sampleCollectors, b.sampleCollectors)
    && mapEqual(a.vifs, b.vifs, (x, y) => x === y)
    && mapEqual(a.vifMtus ?? new Map(), b.vifMtus ?? new Map(), (x, y) => x === y)
    && mapEqual(a.localnetPatches, b.localnetPatches, (x, y) => x === y)
    && mapEqual(a.tunnels, b.tunnels, (x, y) => x.ofport === y.ofport && x.type === y.type && x.remoteIp === y.remoteIp);
}
