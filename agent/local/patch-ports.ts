// Patch ports between the integration bridge and the physical bridges of ovn-bridge-mappings,
// one pair per localnet port of a datapath local to this chassis, as ovn-controller keeps them
// (controller/patch.c): "patch-<br-int>-to-<localnet port>" on the integration bridge and
// "patch-<localnet port>-to-<br-int>" on the physical bridge, each an Interface of type patch
// whose options:peer names the other, both Ports with external_ids:ovn-localnet-port=<localnet
// port>. Pairs whose mapping, bridge or port is gone are removed. Pure.
import type * as sb from '../../ovsdb/rows/sb.js';
import type { OpGroup } from './ovsdb-json.js';
import type { OvsBridge, OvsPort, OvsTables } from './ovs-rows.js';
import { addPortOps, bridgeByName, interfacesOf, portsOf, removePortOps } from './ovs-rows.js';

export const LOCALNET_PORT_KEY = 'ovn-localnet-port';

export interface LocalnetPort {
  /** The localnet Port_Binding's logical_port. */
  readonly logicalPort: string;
  /** Its options:network_name. */
  readonly network: string;
}

export const patchPortName = (src: string, dst: string): string => `patch-${src}-to-${dst}`;

export interface PatchPlan {
  readonly groups: OpGroup[];
  /** Networks whose bridge mapping names a bridge that does not exist (for the log). */
  readonly missingBridges: readonly string[];
}

/** Whether `port` is a patch port whose interface's peer is `peer` (match_patch_port). */
function isPatchTo(ovs: OvsTables, port: OvsPort, peer: string): boolean {
  return interfacesOf(ovs, port).some((i) => i.type === 'patch' && i.options.get('peer') === peer);
}

/**
 * The localnet ports of the given datapaths that have a network_name, sorted by name. OVN
 * plugs localnet ports only on datapaths that concern this chassis.
 */
export function localnetPortsOf(portBindings: Iterable<sb.Port_Binding>, localDatapaths: ReadonlySet<string>): LocalnetPort[] {
  const out: LocalnetPort[] = [];
  for (const pb of portBindings) {
    if (pb.type !== 'localnet' || !localDatapaths.has(pb.datapath)) continue;
    const network = pb.options.get('network_name');
    if (network !== undefined && network !== '') out.push({ logicalPort: pb.logical_port, network });
  }
  return out.sort((a, b) => (a.logicalPort < b.logicalPort ? -1 : a.logicalPort > b.logicalPort ? 1 : 0));
}

/**
 * Datapaths that concern this chassis: those of the ports bound to it, and, through patch ports
 * (options:peer), every datapath reachable from them (add_local_datapath).
 */
export function localDatapaths(portBindings: Iterable<sb.Port_Binding>, chassisUuid: string | undefined): Set<string> {
  const byName = new Map<string, sb.Port_Binding>();
  const patchesOf = new Map<string, sb.Port_Binding[]>();
  const start: string[] = [];
  for (const pb of portBindings) {
    byName.set(pb.logical_port, pb);
    if (pb.type === 'patch') {
      const list = patchesOf.get(pb.datapath) ?? [];
      list.push(pb);
      patchesOf.set(pb.datapath, list);
    }
    if (chassisUuid !== undefined && (pb.chassis[0] === chassisUuid || pb.additional_chassis.includes(chassisUuid))) start.push(pb.datapath);
  }
  const seen = new Set<string>();
  const queue = [...start];
  while (queue.length > 0) {
    const dp = queue.pop() as string;
    if (seen.has(dp)) continue;
    seen.add(dp);
    for (const p of patchesOf.get(dp) ?? []) {
      const peer = byName.get(p.options.get('peer') ?? '');
      if (peer !== undefined && !seen.has(peer.datapath)) queue.push(peer.datapath);
    }
  }
  return seen;
}

/** The operations that make the localnet patch ports match `localnet` and `mappings`. */
export function patchPortOps(ovs: OvsTables, brInt: OvsBridge, mappings: ReadonlyMap<string, string>, localnet: readonly LocalnetPort[]): PatchPlan {
  // Every port on any bridge that carries our key, by bridge: candidates for removal.
  const existing = new Map<string, { bridge: OvsBridge; port: OvsPort }>();
  for (const r of ovs('Bridge').values()) {
    const bridge = r as unknown as OvsBridge;
    for (const port of portsOf(ovs, bridge)) if (port.external_ids.has(LOCALNET_PORT_KEY)) existing.set(port._uuid, { bridge, port });
  }
  const groups: OpGroup[] = [];
  const missing = new Set<string>();
  let n = 0;
  const ensure = (src: OvsBridge, srcName: string, dstName: string, logicalPort: string): void => {
    for (const port of portsOf(ovs, src)) {
      if (isPatchTo(ovs, port, dstName)) {
        existing.delete(port._uuid);
        return;
      }
    }
    groups.push({
      what: `create patch port ${srcName} on ${src.name} (peer ${dstName})`,
      ops: addPortOps(src, `patch${n++}`, { name: srcName, external_ids: new Map([[LOCALNET_PORT_KEY, logicalPort]]) }, { type: 'patch', options: new Map([['peer', dstName]]) }),
    });
  };
  for (const lp of localnet) {
    const brName = mappings.get(lp.network);
    if (brName === undefined) continue;
    const br = bridgeByName(ovs, brName);
    if (br === undefined || br._uuid === brInt._uuid) {
      missing.add(lp.network);
      continue;
    }
    const name1 = patchPortName(brInt.name, lp.logicalPort);
    const name2 = patchPortName(lp.logicalPort, brInt.name);
    ensure(brInt, name1, name2, lp.logicalPort);
    ensure(br, name2, name1, lp.logicalPort);
  }
  for (const { bridge, port } of existing.values()) {
    groups.push({ what: `remove patch port ${port.name} from ${bridge.name}`, ops: removePortOps(bridge, port) });
  }
  return { groups, missingBridges: [...missing].sort() };
}
