// Which logical datapaths concern this chassis, in OVN's sense (controller/local_data.c,
// binding.c): the datapath of every port bound here (Port_Binding.chassis or
// additional_chassis is our Chassis), then, transitively, the datapath on the other side of each
// patch port (options:peer) — unless the patch port is a distributed gateway port whose
// always-redirect chassis-redirect port lives elsewhere — and of each l3gateway port bound
// here. For each local datapath: its localnet port (the first, by name, whose network has a
// bridge mapping here), its external ports and its peer-port pairs. Pure: SB rows and the
// LocalView in, plain data out.

import type * as sb from '../../ovsdb/rows/sb.js';
import { haActiveHere, haGroupContains } from '../ha-chassis.js';
import type { LocalView } from '../local-view.js';
import type { SbLookups } from './sb-store.js';

export interface PeerPort {
  /** The patch Port_Binding in this datapath. */
  readonly local: string;
  /** Its peer in the other datapath. */
  readonly remote: string;
}

export interface LocalDatapath {
  readonly uuid: string;
  readonly tunnelKey: number;
  readonly isSwitch: boolean;
  /** external_ids:interconn-ts: an OVN-IC transit switch (patch ports deliver on both sides). */
  readonly isTransitSwitch: boolean;
  /** The Port_Binding uuid of the datapath's localnet port whose network is plugged here. */
  readonly localnetPort?: string;
  /** Port_Binding uuids of the datapath's ports of type external, sorted. */
  readonly externalPorts: readonly string[];
  /** Port_Binding uuids of the datapath's ports bound on several chassis (additional_chassis set), sorted. */
  readonly multichassisPorts: readonly string[];
  /** Patch-port pairs through which the datapath was reached or reaches, sorted by local. */
  readonly peerPorts: readonly PeerPort[];
}

export interface Locality {
  /** Local datapaths by Datapath_Binding uuid. */
  readonly datapaths: ReadonlyMap<string, LocalDatapath>;
  /** Local datapaths by tunnel key. */
  readonly byKey: ReadonlyMap<number, LocalDatapath>;
}

/** OVN stops following patch ports this deep (add_local_datapath__). */
export const PATCH_DEPTH_MAX = 100;

/** Whether a Port_Binding is bound to this chassis, as main or additional chassis. */
export function isBoundHere(pb: sb.Port_Binding, chassisUuid: string | undefined): boolean {
  return chassisUuid !== undefined && (pb.chassis[0] === chassisUuid || pb.additional_chassis.includes(chassisUuid));
}

/**
 * Whether a chassisredirect port is active on this chassis: bound here, or this chassis is the
 * active member of its HA_Chassis_Group (agent/ha-chassis.ts, haActiveHere, with the live BFD
 * sessions of `activeTunnels`, or without BFD when that is undefined).
 */
export function isRedirectActiveHere(sbl: SbLookups, pb: sb.Port_Binding, chassisUuid: string | undefined, activeTunnels: ReadonlySet<string> | undefined): boolean {
  if (chassisUuid === undefined) return false;
  if (pb.chassis[0] === chassisUuid) return true;
  return haActiveHere(sbl, pb.ha_chassis_group[0], chassisUuid, activeTunnels);
}

/**
 * Whether the port named `name` is resident on this chassis (lport_is_chassis_resident, what
 * is_chassis_resident() asks): a port bound nowhere is resident nowhere; a chassisredirect port
 * is where it is active (isRedirectActiveHere); any other port where it is bound.
 */
export function isChassisResident(sbl: SbLookups, name: string, chassisUuid: string | undefined, activeTunnels: ReadonlySet<string> | undefined): boolean {
  const pb = sbl.portByName(name);
  if (pb === undefined || pb.chassis.length === 0 || chassisUuid === undefined) return false;
  if (pb.type !== 'chassisredirect') return pb.chassis[0] === chassisUuid;
  return isRedirectActiveHere(sbl, pb, chassisUuid, activeTunnels);
}

/** The peer of a patch or l3gateway port: the port its options:peer names, when that port has the
 *  same type and names it back (get_binding_peer). */
export function bindingPeer(sbl: SbLookups, pb: sb.Port_Binding): sb.Port_Binding | undefined {
  const name = pb.options.get('peer');
  if (name === undefined) return undefined;
  const peer = sbl.portByName(name);
  if (peer === undefined || peer.type !== pb.type) return undefined;
  return peer.options.get('peer') === pb.logical_port ? peer : undefined;
}

/** need_add_peer_to_local: whether a patch (or l3gateway) port extends locality to its peer. */
function needAddPeer(sbl: SbLookups, pb: sb.Port_Binding, chassisUuid: string | undefined): boolean {
  if (pb.type === 'l3gateway' && chassisUuid !== undefined && pb.chassis[0] === chassisUuid) return true;
  if (pb.type !== 'patch') return false;
  const crp = pb.options.get('chassis-redirect-port');
  if (crp === undefined) return true;
  const cr = sbl.portByName(crp);
  if (cr === undefined) return false;
  if (cr.options.get('always-redirect') !== 'true') return true;
  return haGroupContains(sbl, cr.ha_chassis_group[0], chassisUuid);
}

/**
 * The chassisredirect and external ports whose HA_Chassis_Group has this chassis as a member
 * (consider_ha_lport): a standby member holds their datapath as local too, so that the flows
 * are in place before it becomes the active one.
 */
function haStandbyPorts(sbl: SbLookups, chassisUuid: string): string[] {
  const out: string[] = [];
  for (const u of sbl.haGroupPorts()) {
    const pb = sbl.portBinding(u);
    if (pb !== undefined && haGroupContains(sbl, pb.ha_chassis_group[0], chassisUuid)) out.push(u);
  }
  return out;
}

/** The datapaths reachable from the ports bound here and the HA ports this chassis stands by for. */
export function computeLocality(sbl: SbLookups, chassisUuid: string | undefined, view: LocalView): Locality {
  const reached = new Set<string>();
  const peers = new Map<string, PeerPort[]>();
  const addPeer = (dp: string, p: PeerPort): void => {
    let l = peers.get(dp);
    if (l === undefined) peers.set(dp, (l = []));
    if (!l.some((x) => x.local === p.local)) l.push(p);
  };
  // Breadth first, each datapath with its depth.
  const queue: [string, number][] = [];
  const seeds = chassisUuid === undefined ? [] : [...sbl.portsOfChassis(chassisUuid), ...haStandbyPorts(sbl, chassisUuid)].sort();
  for (const u of seeds) {
    const pb = sbl.portBinding(u);
    if (pb === undefined || sbl.datapath(pb.datapath) === undefined || reached.has(pb.datapath)) continue;
    reached.add(pb.datapath);
    queue.push([pb.datapath, 0]);
  }
  for (let i = 0; i < queue.length; i++) {
    const [dp, depth] = queue[i] as [string, number];
    if (depth >= PATCH_DEPTH_MAX) continue;
    for (const u of [...sbl.patchPortsOfDatapath(dp)].sort()) {
      const pb = sbl.portBinding(u);
      if (pb === undefined) continue;
      const peerName = pb.options.get('peer');
      const peer = peerName === undefined ? undefined : sbl.portByName(peerName);
      if (peer === undefined || sbl.datapath(peer.datapath) === undefined || !needAddPeer(sbl, pb, chassisUuid)) continue;
      addPeer(dp, { local: pb._uuid, remote: peer._uuid });
      addPeer(peer.datapath, { local: peer._uuid, remote: pb._uuid });
      if (!reached.has(peer.datapath)) {
        reached.add(peer.datapath);
        queue.push([peer.datapath, depth + 1]);
      }
    }
  }
  const datapaths = new Map<string, LocalDatapath>();
  const byKey = new Map<number, LocalDatapath>();
  for (const dp of [...reached].sort()) {
    const row = sbl.datapath(dp) as sb.Datapath_Binding;
    let localnet: sb.Port_Binding | undefined;
    const external: string[] = [];
    const multichassis: string[] = [];
    for (const u of sbl.portsOfDatapath(dp)) {
      const pb = sbl.portBinding(u);
      if (pb === undefined) continue;
      if (pb.additional_chassis.length > 0) multichassis.push(u);
      if (pb.type === 'localnet') {
        const net = pb.options.get('network_name');
        if (net !== undefined && view.localnetPatches.has(net) && (localnet === undefined || pb.logical_port < localnet.logical_port)) localnet = pb;
      } else if (pb.type === 'external') {
        external.push(u);
      }
    }
    const ld: LocalDatapath = {
      uuid: dp,
      tunnelKey: row.tunnel_key,
      isSwitch: row.external_ids.has('logical-switch'),
      isTransitSwitch: row.external_ids.get('interconn-ts') !== undefined,
      ...(localnet === undefined ? {} : { localnetPort: localnet._uuid }),
      externalPorts: external.sort(),
      multichassisPorts: multichassis.sort(),
      peerPorts: (peers.get(dp) ?? []).sort((a, b) => (a.local < b.local ? -1 : a.local > b.local ? 1 : 0)),
    };
    datapaths.set(dp, ld);
    byKey.set(ld.tunnelKey, ld);
  }
  return { datapaths, byKey };
}

/** Two local datapath records say the same thing. */
export function sameLocalDatapath(a: LocalDatapath, b: LocalDatapath): boolean {
  return a.tunnelKey === b.tunnelKey && a.isSwitch === b.isSwitch && a.isTransitSwitch === b.isTransitSwitch
    && a.localnetPort === b.localnetPort && a.externalPorts.length === b.externalPorts.length
    && a.externalPorts.every((x, i) => x === b.externalPorts[i])
    && a.multichassisPorts.length === b.multichassisPorts.length && a.multichassisPorts.every((x, i) => x === b.multichassisPorts[i])
    && a.peerPorts.length === b.peerPorts.length
    && a.peerPorts.every((p, i) => p.local === b.peerPorts[i]?.local && p.remote === b.peerPorts[i]?.remote);
}

/**
 * OVN's "related" ports (binding.c related_lports): logical flows whose match names a port of a
 * logical switch (inport in ingress, outport in egress) are installed only for these. Patch,
 * vtep, localport and localnet ports are related everywhere; VIFs, containers and virtual ports
 * when bound here; gateway ports when this is their chassis; chassis-redirect and external
 * ports when this is their chassis or a member of their HA_Chassis_Group (active or standby);
 * remote ports never. A function of the row, our chassis and the HA rows.
 */
export function isRelatedPort(sbl: SbLookups, pb: sb.Port_Binding, chassisUuid: string | undefined): boolean {
  switch (pb.type) {
    case 'patch':
    case 'vtep':
    case 'localport':
    case 'localnet':
      return true;
    case 'remote':
      return false;
    case 'chassisredirect':
    case 'external':
      return isBoundHere(pb, chassisUuid) || haGroupContains(sbl, pb.ha_chassis_group[0], chassisUuid);
    default:
      return isBoundHere(pb, chassisUuid);
  }
}
