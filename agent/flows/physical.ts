// The physical flows of ovn-controller 23.03 (controller/physical.c, and the neighbour flows of
// lflow.c): how packets enter the logical pipelines (table 0: from a local VIF, a localnet
// patch port or a Geneve or VXLAN tunnel), leave them (tables 37 and 38 a multichassis port's
// packets too big for its tunnels, 39 remote output over tunnels, 40 local output, 41 loopback
// check, 64 save in_port, 65 logical→physical) and how learned or
// static MAC bindings answer get_arp/get_nd and lookup_arp (tables 66, 67). Each function
// computes the flows of one SB row (a Port_Binding, a Multicast_Group, a MAC_Binding) or of the
// chassis itself (tunnels, the fixed defaults); the desired-flow table keys them by that row.
// With drop sampling (SB_Global options:debug_drop_collector_set and that collector set on the
// bridge: dropSamplingOf) the drops ovn-controller samples carry a sample action.
//
// Pure. Geneve carries the logical datapath in the tunnel id and, in OVN's option (class 0x0102,
// type 0x80, 4 bytes, mapped to a tun_metadata field), the ingress port in bits 16..30 and the
// egress port in bits 0..15. VXLAN has only its 24-bit VNI: the datapath key in bits 0..11 and
// the egress port key in bits 12..23 (a multicast group's key, 32768 and up, as 2048 | its low
// 11 bits: vxlanPortKey), and no ingress port at all. A receiving chassis so delivers a VXLAN
// packet with no logical inport (reg14 = 0): its egress pipeline cannot match on the inport
// (ACLs on inport in to-lport direction, as OVN's documentation warns), and its loopback check
// (table 41) does not apply; northd in VXLAN mode keeps datapath keys to 4095 and port keys to
// 2047 (keys held from before, beyond them, lose their high bits here as in ovn-controller). A
// VXLAN tunnel to a VTEP gateway (a "ramp switch", Chassis other_config:is-vtep) carries only
// the datapath: its packets enter the ingress pipeline as from the vtep port, flagged
// MLF_RCV_FROM_RAMP so that table 39 delivers them locally only (docs/agent-bindings.md,
// Tunnels). STT tunnels are not used (a chassis whose best common type is STT is not reached).
// Not produced (yet): chassis-MAC replacement flows for remote chassis MACs. Port security
// (tables 73..75) is in port-security.ts.

import { smapGetUint } from '../../ovsdb/smap.js';
import type * as sb from '../../ovsdb/rows/sb.js';
import { cookieOf } from '../compile/logical-flow.js';
import { ACTION_OPCODE, LOG_REG, MLF, OFTABLE, controllerUserdata } from '../compile/tables.js';
import { IPV4_HEADER_BYTES, IPV6_HEADER_BYTES } from '../pinctrl/packet.js';
import { orderedHaMembers, type HaMember } from '../ha-chassis.js';
import type { LocalView } from '../local-view.js';
import type { FieldRef, FlowSpec, MaskedValue, OfAction } from '../openflow/types.js';
import { bindingPeer, isBoundHere, isRedirectActiveHere, type LocalDatapath, type Locality } from './local-datapaths.js';
import { dnatZoneKey, snatZoneKey } from './ct-zones.js';
import { portSecurityFlows } from './port-security.js';
import type { SbLookups } from './sb-store.js';

/** OVN's Geneve option: class, type, length in bytes. */
export const OVN_GENEVE = { optClass: 0x0102, optType: 0x80, optLen: 4 } as const;

/**
 * Sets in_port to OFPP_NONE so that a packet may leave through the port it came in by. OVN
 * writes 0xffff into the 16-bit NXM_OF_IN_PORT; our OpenFlow codec names only the 32-bit
 * OXM in_port, into which Open vSwitch refuses a set_field of OFPP_NONE (0xffffffff, as
 * OpenFlow 1.1+ spells it) but accepts a copy from a register holding it. So: save reg0, load
 * it with 0xffffffff, copy it into in_port, restore reg0. Same effect, two more actions.
 */
const inPortAll = { field: 'in_port', start: 0, end: 31 } as const;
const reg0All = { field: 'reg0', start: 0, end: 31 } as const;
const setInPortNone: readonly OfAction[] = [
  { kind: 'push', src: reg0All },
  { kind: 'set_field', field: 'reg0', value: 0xffffffffn },
  { kind: 'move', src: reg0All, dst: inPortAll },
  { kind: 'pop', dst: reg0All },
];
/** The conjunction id of the chassis-MAC → router-MAC replacement (physical.c). */
export const CHASSIS_MAC_TO_ROUTER_MAC_CONJID = 100;
const VLAN_CFI = 0x1000;
const VLAN_VID_MASK = 0x0fff;

export interface PhysicalContext {
  readonly sb: SbLookups;
  /** Our Chassis row's uuid (the Chassis whose name is view.chassis); undefined until it exists. */
  readonly chassisUuid: string | undefined;
  readonly view: LocalView;
  readonly locality: Locality;
  /** ct zone assignments: logical port name or "<dp>_dnat"/"<dp>_snat" → zone. */
  readonly zones: ReadonlyMap<string, number>;
  /** The tun_metadata field OVN's Geneve option is mapped to on the switch. */
  readonly geneveField: string;
  /** Where the physical tables' drops are sampled to (dropSamplingOf); absent: they are not. */
  readonly dropSampling?: DropSampling | undefined;
}

/**
 * OVN 23.03's drop sampling of the physical tables (physical.c, pflow_output_get_debug and
 * put_drop): with SB_Global options:debug_drop_collector_set naming a collector set the
 * integration bridge has, the drops of tables 0, 40 and 65 (their defaults) and 41 (loopback,
 * a localport's traffic to a localnet port) sample every packet into it first, the observation
 * domain options:debug_drop_domain_id in the high byte and the table as the point.
 */
export interface DropSampling {
  readonly collectorSetId: number;
  /** debug_drop_domain_id << 24, in 32 bits. */
  readonly obsDomainId: number;
}

const NO_OPTIONS: ReadonlyMap<string, string> = new Map();

/** The drop sampling in force: SB_Global's options and the bridge's collector sets. */
export function dropSamplingOf(options: ReadonlyMap<string, string> | undefined, collectors: ReadonlySet<number> | undefined): DropSampling | undefined {
  const collectorSetId = smapGetUint(options ?? NO_OPTIONS, 'debug_drop_collector_set', 0);
  if (collectorSetId === 0 || collectors?.has(collectorSetId) !== true) return undefined;
  return { collectorSetId, obsDomainId: (smapGetUint(options ?? NO_OPTIONS, 'debug_drop_domain_id', 0) << 24) >>> 0 };
}

export function sameDropSampling(a: DropSampling | undefined, b: DropSampling | undefined): boolean {
  return a === undefined || b === undefined ? a === b : a.collectorSetId === b.collectorSetId && a.obsDomainId === b.obsDomainId;
}

/** put_drop: the actions of a drop in physical table `table` (none without sampling). */
function drop(ds: DropSampling | undefined, table: number): OfAction[] {
  if (ds === undefined) return [];
  return [{ kind: 'sample', probability: 0xffff, collectorSetId: ds.collectorSetId, obsDomainId: ds.obsDomainId, obsPointId: table }];
}

// ---- Building blocks ---------------------------------------------------------------------

const ones = (bits: number): bigint => (1n << BigInt(bits)) - 1n;
const exact = (value: number | bigint, bits: number): MaskedValue => ({ value: BigInt(value), mask: ones(bits) });
const bit = (n: number): MaskedValue => ({ value: 1n << BigInt(n), mask: 1n << BigInt(n) });
const ref = (field: string, start: number, end: number): FieldRef => ({ field, start, end });
const setField = (field: string, value: number | bigint): OfAction => ({ kind: 'set_field', field, value: BigInt(value) });
const loadBit = (field: string, n: number): OfAction => ({ kind: 'load', dst: ref(field, n, n), value: 1n });
const resubmit = (table: number): OfAction => ({ kind: 'resubmit', table });
const move = (src: FieldRef, dst: FieldRef): OfAction => ({ kind: 'move', src, dst });
const output = (port: number): OfAction => ({ kind: 'output', port });

function flow(table: number, priority: number, match: ReadonlyMap<string, MaskedValue>, actions: readonly OfAction[], cookie: bigint): FlowSpec {
  return { table, priority, match, actions, cookie };
}

function matchOutport(dpKey: number, portKey: number): Map<string, MaskedValue> {
  return new Map([['metadata', exact(dpKey, 64)], [LOG_REG.OUTPORT, exact(portKey, 32)]]);
}

/** match_set_dl_vlan(tag): an 802.1Q header with this VID. */
const dlVlan = (tag: number): MaskedValue => ({ value: BigInt(VLAN_CFI | tag), mask: BigInt(VLAN_CFI | VLAN_VID_MASK) });
/** No 802.1Q header. */
const noVlan: MaskedValue = { value: 0n, mask: BigInt(VLAN_CFI) };

interface ZoneIds {
  readonly ct: number;
  readonly dnat: number;
  readonly snat: number;
}

function zoneIds(ctx: PhysicalContext, pb: sb.Port_Binding): ZoneIds {
  return {
    ct: ctx.zones.get(pb.logical_port) ?? 0,
    dnat: ctx.zones.get(dnatZoneKey(pb.datapath)) ?? 0,
    snat: ctx.zones.get(snatZoneKey(pb.datapath)) ?? 0,
  };
}

/** put_zones_ofpacts: load the non-zero zones. */
function zoneActions(z: ZoneIds): OfAction[] {
  const out: OfAction[] = [];
  if (z.ct !== 0) out.push(setField(LOG_REG.CT_ZONE, z.ct));
  if (z.dnat !== 0) out.push(setField(LOG_REG.DNAT_ZONE, z.dnat));
  if (z.snat !== 0) out.push(setField(LOG_REG.SNAT_ZONE, z.snat));
  return out;
}

/** load_logical_ingress_metadata: zones, datapath and logical inport. */
function ingressMetadata(dpKey: number, pb: sb.Port_Binding, z: ZoneIds): OfAction[] {
  return [...zoneActions(z), setField('metadata', dpKey), setField(LOG_REG.INPORT, pb.tunnel_key)];
}

/** OVN_MIN_MULTICAST: Multicast_Group tunnel keys start here (16-bit port keys below). */
export const OVN_MIN_MULTICAST = 32768;
/** OVN_VXLAN_MIN_MULTICAST: in VXLAN's 12-bit egress port, multicast groups start here. */
export const OVN_VXLAN_MIN_MULTICAST = 2048;

/**
 * get_vxlan_port_key: an egress port key as VXLAN carries it. A multicast group's key (32768 and
 * up) becomes 2048 | its low 11 bits, which table 0 maps back (vxlanTunnelFlows); a port's key is
 * kept. Groups 2048 apart so share one VXLAN key: 32768 and 34816 both travel as 2048.
 */
export function vxlanPortKey(portKey: number): number {
  return portKey >= OVN_MIN_MULTICAST ? OVN_VXLAN_MIN_MULTICAST | (portKey & (OVN_VXLAN_MIN_MULTICAST - 1)) : portKey;
}

/** A tunnel the physical flows send through. */
interface Tunnel {
  readonly ofport: number;
  readonly type: 'geneve' | 'vxlan';
  /** The remote end is an IPv6 address: the outer header is IPv6's. */
  readonly ipv6: boolean;
}

/**
 * put_encapsulation. Geneve: the datapath into tun_id, the ports into OVN's option. VXLAN: the
 * datapath and the egress port (vxlanPortKey) into the 24-bit VNI, or the datapath alone to a
 * ramp switch (a VTEP gateway); bits beyond the VNI are dropped, as ovn-controller's load does.
 */
function encapsulation(ctx: PhysicalContext, type: Tunnel['type'], dpKey: number, outport: number, isRampSwitch: boolean): OfAction[] {
  if (type === 'vxlan') {
    const vni = isRampSwitch ? BigInt(dpKey) : BigInt(dpKey) | (BigInt(vxlanPortKey(outport)) << 12n);
    return [{ kind: 'load', dst: ref('tun_id', 0, 23), value: vni & ones(24) }];
  }
  return [
    { kind: 'load', dst: ref('tun_id', 0, 23), value: BigInt(dpKey) },
    { kind: 'load', dst: ref(ctx.geneveField, 0, 31), value: BigInt(outport) },
    move(ref(LOG_REG.INPORT, 0, 14), ref(ctx.geneveField, 16, 30)),
  ];
}

/** The tunnel to a chassis, by its name, if it is Geneve or VXLAN (STT is not produced). */
function tunnelTo(ctx: Pick<PhysicalContext, 'view'>, chassisName: string | undefined): Tunnel | undefined {
  if (chassisName === undefined) return undefined;
  const t = ctx.view.tunnels.get(chassisName);
  // As encaps_tunnel_id_parse and addr_is_ipv6: the remote address, without a "%<local IP>" tail.
  return t !== undefined && (t.type === 'geneve' || t.type === 'vxlan') ? { ofport: t.ofport, type: t.type, ipv6: (t.remoteIp.split('%')[0] ?? '').includes(':') } : undefined;
}

function firstMac(text: string | undefined): bigint | undefined {
  const m = /^\s*([0-9a-fA-F]{1,2}(?::[0-9a-fA-F]{1,2}){5})(?:\s|$)/.exec(text ?? '');
  if (m === null) return undefined;
  return (m[1] as string).split(':').reduce((a, b) => (a << 8n) | BigInt(parseInt(b, 16)), 0n);
}

// ---- Port_Binding ------------------------------------------------------------------------

/** put_local_common_flows: tables 40, 41 and 64 for a port delivered on this chassis. */
function localCommonFlows(dpKey: number, pb: sb.Port_Binding, parent: sb.Port_Binding | undefined, z: ZoneIds, ds: DropSampling | undefined): FlowSpec[] {
  const cookie = cookieOf(pb._uuid);
  const out: FlowSpec[] = [];
  out.push(flow(OFTABLE.LOCAL_OUTPUT, 100, matchOutport(dpKey, pb.tunnel_key), [...zoneActions(z), resubmit(OFTABLE.CHECK_LOOPBACK)], cookie));
  out.push(flow(OFTABLE.CHECK_LOOPBACK, 100, new Map([
    ['metadata', exact(dpKey, 64)], [LOG_REG.FLAGS, { value: 0n, mask: 1n << BigInt(MLF.ALLOW_LOOPBACK) }],
    [LOG_REG.INPORT, exact(pb.tunnel_key, 32)], [LOG_REG.OUTPORT, exact(pb.tunnel_key, 32)],
  ]), drop(ds, OFTABLE.CHECK_LOOPBACK), cookie));
  const hairpin: OfAction[] = [
    { kind: 'push', src: inPortAll },
    ...setInPortNone,
    resubmit(OFTABLE.LOG_TO_PHY),
    { kind: 'pop', dst: inPortAll },
  ];
  const m64 = matchOutport(dpKey, pb.tunnel_key);
  if (parent === undefined) m64.set(LOG_REG.FLAGS, bit(MLF.ALLOW_LOOPBACK));
  out.push(flow(OFTABLE.SAVE_INPORT, 100, m64, hairpin, cookie));
  if (parent !== undefined) {
    const mp = matchOutport(dpKey, parent.tunnel_key);
    mp.set(LOG_REG.FLAGS, bit(MLF.NESTED_CONTAINER));
    out.push(flow(OFTABLE.SAVE_INPORT, 100, mp, hairpin, 0n));
  }
  return out;
}

/** The OpenFlow port a port binding is delivered through on this chassis, if any. */
interface Attachment {
  readonly ofport: number;
  readonly tag: number;
  readonly parent?: sb.Port_Binding;
}

function attachment(ctx: PhysicalContext, pb: sb.Port_Binding): Attachment | undefined | 'skip' {
  const parentName = pb.parent_port[0];
  if (parentName !== undefined && parentName !== '') {
    const tag = pb.tag[0];
    if (tag === undefined) return 'skip';
    const parent = ctx.sb.portByName(parentName);
    const ofport = parent !== undefined && isBoundHere(parent, ctx.chassisUuid) ? ctx.view.vifs.get(parentName) : undefined;
    return ofport === undefined || parent === undefined ? undefined : { ofport, tag, parent };
  }
  if (pb.type === 'localnet' || pb.type === 'l2gateway') {
    if (pb.type === 'l2gateway' && !isBoundHere(pb, ctx.chassisUuid)) return undefined;
    const net = pb.options.get('network_name');
    const ofport = net === undefined ? undefined : ctx.view.localnetPatches.get(net);
    return ofport === undefined ? undefined : { ofport, tag: pb.tag[0] ?? 0 };
  }
  // A localport is on every chassis and never claimed; other ports need to be bound here. A
  // virtual port has no interface of its own (its traffic enters and leaves as its parent's), so
  // an interface named after it does not attach it: bound here, it is reached as a port without
  // one (through the localnet port, or not at all), as in ovn-controller 23.03.
  if (pb.type === 'virtual') return undefined;
  if (pb.type !== 'localport' && !isBoundHere(pb, ctx.chassisUuid)) return undefined;
  const ofport = ctx.view.vifs.get(pb.logical_port);
  return ofport === undefined ? undefined : { ofport, tag: 0 };
}

/** Every flow of one Port_Binding: consider_port_binding's, and its port security flows when
 *  it is bound here with an interface, its container parent's or, for a virtual port, its
 *  virtual parent's (lflow.c's add_port_sec_flows over the local binding lports). */
export function portBindingFlows(ctx: PhysicalContext, pb: sb.Port_Binding): FlowSpec[] {
  const flows = physicalPortFlows(ctx, pb);
  if (pb.type === 'vtep') flows.push(...rampSwitchFlows(ctx, pb));
  const ld = ctx.locality.datapaths.get(pb.datapath);
  const parent = pb.type === 'virtual' ? pb.virtual_parent[0] : pb.parent_port[0];
  const own = pb.type !== 'virtual' && ctx.view.vifs.has(pb.logical_port);
  if (ld !== undefined && pb.port_security.length > 0 && ctx.chassisUuid !== undefined && pb.chassis[0] === ctx.chassisUuid
    && (own || (parent !== undefined && parent !== '' && ctx.view.vifs.has(parent)))) {
    flows.push(...portSecurityFlows(pb, ld.tunnelKey));
  }
  return flows;
}

function physicalPortFlows(ctx: PhysicalContext, pb: sb.Port_Binding): FlowSpec[] {
  const ld = ctx.locality.datapaths.get(pb.datapath);
  if (ld === undefined) return [];
  const dpKey = ld.tunnelKey;
  const cookie = cookieOf(pb._uuid);
  const ours = ctx.chassisUuid !== undefined && pb.chassis[0] === ctx.chassisUuid;

  if (pb.type === 'patch' || (pb.type === 'l3gateway' && ours)) {
    const peer = bindingPeer(ctx.sb, pb);
    if (peer === undefined) return [];
    const out = localCommonFlows(dpKey, pb, undefined, zoneIds(ctx, pb), ctx.dropSampling);
    const peerDp = ctx.sb.datapath(peer.datapath);
    if (peerDp === undefined) return out;
    const inner: OfAction[] = [
      { kind: 'ct_clear' }, setField(LOG_REG.DNAT_ZONE, 0), setField(LOG_REG.SNAT_ZONE, 0), setField(LOG_REG.CT_ZONE, 0),
      ...ingressMetadata(peerDp.tunnel_key, peer, zoneIds(ctx, peer)),
      setField(LOG_REG.FLAGS, 0), setField(LOG_REG.OUTPORT, 0),
    ];
    for (let i = 0; i < 10; i++) inner.push(setField(`reg${i}`, 0));
    inner.push(resubmit(OFTABLE.LOG_INGRESS_PIPELINE));
    out.push(flow(OFTABLE.LOG_TO_PHY, 100, matchOutport(dpKey, pb.tunnel_key), [{ kind: 'clone', actions: inner }], cookie));
    return out;
  }

  if (pb.type === 'chassisredirect' && isRedirectActiveHere(ctx.sb, pb, ctx.chassisUuid, ctx.view.activeTunnels)) {
    const dist = ctx.sb.portByName(pb.options.get('distributed-port') ?? '');
    const actions: OfAction[] = [];
    if (dist !== undefined && dist.datapath === pb.datapath) {
      actions.push(setField(LOG_REG.OUTPORT, dist.tunnel_key), ...zoneActions(zoneIds(ctx, dist)), resubmit(OFTABLE.CHECK_LOOPBACK));
    }
    return [flow(OFTABLE.LOCAL_OUTPUT, 100, matchOutport(dpKey, pb.tunnel_key), actions, cookie)];
  }

  const att = attachment(ctx, pb);
  if (att === 'skip') return [];
  // Attached here, and copied over tunnels to the port's other chassis while it is bound on
  // several (a live migration: the main chassis and the additional ones).
  if (att !== undefined) return [...localPortFlows(ctx, ld, pb, att), ...remotePortFlows(ctx, dpKey, pb)];

  // Not attached here: through the datapath's localnet port, or over a tunnel. A port bound on
  // several chassis is reached over tunnels (a physical switch would deliver to one of them).
  const localnet = ld.localnetPort === undefined ? undefined : ctx.sb.portBinding(ld.localnetPort);
  if (localnet !== undefined && pb.additional_chassis.length === 0) {
    const net = localnet.options.get('network_name');
    if (net === undefined || !ctx.view.localnetPatches.has(net)) return [];
    return [flow(OFTABLE.LOCAL_OUTPUT, 100, matchOutport(dpKey, pb.tunnel_key),
      [setField(LOG_REG.OUTPORT, localnet.tunnel_key), resubmit(OFTABLE.LOCAL_OUTPUT)], cookie), ...multichassisTunnelFlows(ctx, ld, pb)];
  }
  if (pb.options.get('redirect-type')?.toLowerCase() === 'bridged') return bridgedRedirectFlows(ctx, ld, pb);
  const members = orderedHaMembers(ctx.sb, pb.ha_chassis_group[0]);
  if (members.length >= 2) return haRemoteFlows(ctx, dpKey, pb, members);
  return remotePortFlows(ctx, dpKey, pb);
}

/**
 * put_remote_port_redirect_overlay_ha_remote (access type PORT_HA_REMOTE): a port of an HA
 * chassis group of two or more members, not here, goes to the members' tunnels by priority
 * through an active-backup bundle, so that Open vSwitch sends to the first whose tunnel is up
 * (BFD): traffic leaves a failed gateway at once, before the port's binding moves.
 */
function haRemoteFlows(ctx: PhysicalContext, dpKey: number, pb: sb.Port_Binding, members: readonly HaMember[]): FlowSpec[] {
  // One encapsulation for every member: a group whose members' tunnels differ in type gets no
  // flow ("only uniform encapsulations are supported", ovn-controller logs).
  const ports: number[] = [];
  let type: Tunnel['type'] | undefined;
  for (const m of members) {
    const t = tunnelTo(ctx, m.name);
    if (t === undefined) continue;
    if (type !== undefined && t.type !== type) return [];
    type = t.type;
    ports.push(t.ofport);
  }
  if (type === undefined) return [];
  const actions: OfAction[] = [...encapsulation(ctx, type, dpKey, pb.tunnel_key, pb.type === 'vtep'), { kind: 'bundle_active_backup', members: ports }];
  return [flow(OFTABLE.REMOTE_OUTPUT, 100, matchOutport(dpKey, pb.tunnel_key), actions, cookieOf(pb._uuid))];
}

/** A port delivered through an OpenFlow port of this chassis (access type PORT_LOCAL). */
function localPortFlows(ctx: PhysicalContext, ld: LocalDatapath, pb: sb.Port_Binding, att: Attachment): FlowSpec[] {
  const dpKey = ld.tunnelKey;
  const cookie = cookieOf(pb._uuid);
  const z = zoneIds(ctx, pb);
  const out = localCommonFlows(dpKey, pb, att.parent, z, ctx.dropSampling);
  const isBridge = pb.type === 'localnet' || pb.type === 'l2gateway';

  // Table 0: into the ingress pipeline, stripping the VLAN tag of a container or a bridged net.
  const m0 = new Map<string, MaskedValue>([['in_port', exact(att.ofport, 32)]]);
  const pre: OfAction[] = [];
  if (att.tag !== 0 || isBridge) {
    if (att.parent !== undefined) pre.push(loadBit(LOG_REG.FLAGS, MLF.NESTED_CONTAINER));
    const passthru = pb.options.get('vlan-passthru') === 'true';
    if (!passthru || att.tag !== 0) {
      m0.set('vlan_tci', dlVlan(att.tag));
      pre.push({ kind: 'pop_vlan' });
    }
  }
  const body: OfAction[] = ingressMetadata(dpKey, pb, z);
  if (pb.type === 'localport') body.push(loadBit(LOG_REG.FLAGS, MLF.LOCALPORT));
  body.push(resubmit(OFTABLE.LOG_INGRESS_PIPELINE));
  out.push(flow(OFTABLE.PHY_TO_LOG, att.tag !== 0 ? 150 : 100, m0, [...pre, ...body], cookie));
  if (att.tag === 0 && isBridge) {
    out.push(flow(OFTABLE.PHY_TO_LOG, 100, new Map([['in_port', exact(att.ofport, 32)], ['vlan_tci', noVlan]]), body, cookie));
  }
  if (pb.type === 'localnet') out.push(...chassisMacFlows(ctx, ld, pb, att.ofport, z));

  // Table 65: out of the OpenFlow port, tagged for a container or a VLAN network.
  const deliver: OfAction[] = [];
  if (att.tag !== 0) {
    const localnet = ld.localnetPort === undefined ? undefined : ctx.sb.portBinding(ld.localnetPort);
    const ethtype = localnet?.options.get('ethtype')?.toLowerCase() === '802.11ad' ? 0x88a8 : 0x8100;
    // mod_vlan_vid: VID and CFI, the priority bits left alone.
    deliver.push({ kind: 'push_vlan', ethertype: ethtype }, { kind: 'set_field', field: 'vlan_tci', value: BigInt(VLAN_CFI | att.tag), mask: BigInt(VLAN_CFI | VLAN_VID_MASK) });
  }
  deliver.push(output(att.ofport));
  if (att.tag !== 0) deliver.push({ kind: 'pop_vlan' });
  out.push(flow(OFTABLE.LOG_TO_PHY, 100, matchOutport(dpKey, pb.tunnel_key), deliver, cookie));
  if (blockedUntilRarp(ctx, pb)) out.push(...rarpActivationFlows(dpKey, pb, att.ofport, z));

  if (pb.type === 'localnet') {
    // Table 41: a localport's traffic and LOCAL_ONLY traffic never leave through the localnet.
    for (const flag of [MLF.LOCALPORT, MLF.LOCAL_ONLY]) {
      const m = matchOutport(dpKey, pb.tunnel_key);
      m.set(LOG_REG.FLAGS, bit(flag));
      out.push(flow(OFTABLE.CHECK_LOOPBACK, 160, m, drop(ctx.dropSampling, OFTABLE.CHECK_LOOPBACK), cookie));
    }
    // ... except a localport's traffic to an external port bound here.
    for (const u of ld.externalPorts) {
      const ext = ctx.sb.portBinding(u);
      if (ext === undefined || ctx.chassisUuid === undefined || ext.chassis[0] !== ctx.chassisUuid) continue;
      const clear: OfAction[] = [];
      for (let i = 0; i < 10; i++) clear.push(setField(`reg${i}`, 0));
      clear.push(resubmit(OFTABLE.LOG_EGRESS_PIPELINE));
      for (const text of ext.mac) {
        const mac = firstMac(text);
        if (mac === undefined) continue;
        const m = matchOutport(dpKey, pb.tunnel_key);
        m.set(LOG_REG.FLAGS, bit(MLF.LOCALPORT));
        m.set('eth_dst', exact(mac, 48));
        out.push(flow(OFTABLE.CHECK_LOOPBACK, 170, m, clear, cookie));
      }
    }
  }
  if (pb.type === 'localport') {
    // Table 39: a localport's traffic is delivered on this chassis only.
    out.push(flow(OFTABLE.REMOTE_OUTPUT, 150, new Map([[LOG_REG.INPORT, exact(pb.tunnel_key, 32)], ['metadata', exact(dpKey, 64)]]),
      [resubmit(OFTABLE.LOCAL_OUTPUT)], cookie));
  }
  return out;
}

/**
 * A port this chassis has as an additional chassis under options:activation-strategy=rarp,
 * not activated here yet: neither in options:additional-chassis-activated nor by a RARP this
 * agent saw (LocalView.activatedPorts). Other strategies block nothing (ovn-controller warns).
 */
function blockedUntilRarp(ctx: PhysicalContext, pb: sb.Port_Binding): boolean {
  if (ctx.chassisUuid === undefined || !pb.additional_chassis.includes(ctx.chassisUuid)) return false;
  if (pb.options.get('activation-strategy') !== 'rarp') return false;
  if ((pb.options.get('additional-chassis-activated') ?? '').split(',').includes(ctx.view.chassis)) return false;
  return ctx.view.activatedPorts?.has(pb.logical_port) !== true;
}

/**
 * setup_rarp_activation_strategy: until the VM sends a RARP (as a hypervisor does when the
 * migrated VM resumes) its traffic is dropped both ways; the RARP itself goes to the agent
 * (activation_strategy_rarp, not paused), which activates the port, and on into the pipeline.
 */
function rarpActivationFlows(dpKey: number, pb: sb.Port_Binding, ofport: number, z: ZoneIds): FlowSpec[] {
  const cookie = cookieOf(pb._uuid);
  return [
    flow(OFTABLE.PHY_TO_LOG, 1010, new Map([['in_port', exact(ofport, 32)], ['eth_type', exact(0x8035, 16)]]),
      [...ingressMetadata(dpKey, pb, z), { kind: 'controller', userdata: controllerUserdata(ACTION_OPCODE.ACTIVATION_STRATEGY_RARP) }, resubmit(OFTABLE.LOG_INGRESS_PIPELINE)], cookie),
    flow(OFTABLE.PHY_TO_LOG, 1000, new Map([['in_port', exact(ofport, 32)]]), [], cookie),
    flow(OFTABLE.LOG_TO_PHY, 1000, matchOutport(dpKey, pb.tunnel_key), [], cookie),
  ];
}

/**
 * put_replace_chassis_mac_flows: packets entering from a localnet port that a remote chassis
 * routed carry that chassis' MAC; a conjunction with the chassis MACs (clause 0, from remote
 * Chassis other_config; not produced here) swaps in the router port's MAC.
 */
function chassisMacFlows(ctx: PhysicalContext, ld: LocalDatapath, localnet: sb.Port_Binding, ofport: number, z: ZoneIds): FlowSpec[] {
  const out: FlowSpec[] = [];
  const tag = localnet.tag[0] ?? 0;
  for (const pp of ld.peerPorts) {
    const rport = ctx.sb.portBinding(pp.remote);
    if (rport === undefined) continue;
    const mac = firstMac(rport.mac[0]);
    if (mac === undefined) return out;
    const cookie = cookieOf(rport._uuid);
    const vlan = tag !== 0 ? dlVlan(tag) : noVlan;
    const actions: OfAction[] = [];
    if (tag !== 0) actions.push({ kind: 'pop_vlan' });
    actions.push(...ingressMetadata(ld.tunnelKey, localnet, z), setField('eth_src', mac), resubmit(OFTABLE.LOG_INGRESS_PIPELINE));
    out.push(flow(OFTABLE.PHY_TO_LOG, 180, new Map([
      ['in_port', exact(ofport, 32)], ['conj_id', exact(CHASSIS_MAC_TO_ROUTER_MAC_CONJID, 32)], ['vlan_tci', vlan],
    ]), actions, cookie));
    out.push(flow(OFTABLE.PHY_TO_LOG, 180, new Map([['vlan_tci', vlan]]),
      [{ kind: 'conjunction', id: CHASSIS_MAC_TO_ROUTER_MAC_CONJID, clause: 1, nClauses: 2 }], cookie));
  }
  return out;
}

/** The tunnels to a port's chassis other than this one: its main chassis, then its additional ones (get_remote_tunnels). */
function tunnelsToPort(ctx: PhysicalContext, pb: sb.Port_Binding): Tunnel[] {
  const ports: Tunnel[] = [];
  const main = pb.chassis[0];
  if (main !== undefined && main !== ctx.chassisUuid) {
    const t = tunnelTo(ctx, ctx.sb.chassis(main)?.name);
    if (t !== undefined) ports.push(t);
  }
  for (const c of pb.additional_chassis) {
    if (c === ctx.chassisUuid) continue;
    const t = tunnelTo(ctx, ctx.sb.chassis(c)?.name);
    if (t !== undefined) ports.push(t);
  }
  return ports;
}

/**
 * enforce_tunneling_for_multichassis_ports: on a switch with a localnet port, traffic from a
 * port bound on several chassis to a port reached through the localnet goes over the tunnels
 * instead (table 39, priority 110), so that the copies the multichassis port's chassis make of
 * it meet no physical switch that would drop or misdeliver them. One flow per such port of the
 * datapath (`LocalDatapath.multichassisPorts`), and beside it, for such a port bound here whose
 * interface reports an MTU, the path MTU flows (pathMtuFlows) with the MTU left by the largest
 * overhead of those tunnels.
 */
function multichassisTunnelFlows(ctx: PhysicalContext, ld: LocalDatapath, pb: sb.Port_Binding): FlowSpec[] {
  if (ld.multichassisPorts.length === 0) return [];
  const ports = tunnelsToPort(ctx, pb);
  if (ports.length === 0) return [];
  const out: FlowSpec[] = [];
  const cookie = cookieOf(pb._uuid);
  for (const u of ld.multichassisPorts) {
    const mcp = ctx.sb.portBinding(u);
    if (mcp === undefined) continue;
    const actions: OfAction[] = [];
    if (pb.type === 'vtep') actions.push(...setInPortNone);
    for (const p of ports) actions.push(...encapsulation(ctx, p.type, ld.tunnelKey, pb.tunnel_key, pb.type === 'vtep'), output(p.ofport));
    const m = matchOutport(ld.tunnelKey, pb.tunnel_key);
    m.set(LOG_REG.INPORT, exact(mcp.tunnel_key, 32));
    out.push(flow(OFTABLE.REMOTE_OUTPUT, 110, m, actions, cookie));
    // ovn-controller knows the MTU of the interfaces of the ports it has claimed, as main or
    // additional chassis (if-status.c).
    const ifaceMtu = isBoundHere(mcp, ctx.chassisUuid) ? ctx.view.vifMtus?.get(mcp.logical_port) : undefined;
    const mtu = ifaceMtu === undefined ? 0 : effectiveMtu(ifaceMtu, ports);
    if (mtu !== 0) out.push(...pathMtuFlows(ld.tunnelKey, mcp.tunnel_key, mtu, cookie));
  }
  return out;
}

// ---- Path MTU of a multichassis port -----------------------------------------------------

/** lib/ovn-util.h: the bytes a tunnel's encapsulation adds besides its outer IP header. */
const TUNNEL_OVERHEAD_BYTES: Readonly<Record<Tunnel['type'], number>> = { geneve: 38, vxlan: 30 };
/** ETHERNET_OVERHEAD: an Ethernet header and its CRC, which the MTU an ICMP error states leaves out. */
const ETHERNET_OVERHEAD_BYTES = 18;
const IP_TTL_MAX = 255;

/**
 * get_effective_mtu: the interface's MTU less the largest overhead among the tunnels (the
 * encapsulation and its outer IPv4 or IPv6 header); 0, which means no flows, without tunnels.
 * In ovn-controller's 16-bit arithmetic: an MTU no bigger than the overhead wraps around (or
 * leaves 0), as there.
 */
export function effectiveMtu(ifaceMtu: number, tunnels: readonly Pick<Tunnel, 'type' | 'ipv6'>[]): number {
  let overhead = 0;
  for (const t of tunnels) overhead = Math.max(overhead, TUNNEL_OVERHEAD_BYTES[t.type] + (t.ipv6 ? IPV6_HEADER_BYTES : IPV4_HEADER_BYTES));
  if (overhead === 0) return 0;
  return ((ifaceMtu & 0xffff) - overhead) & 0xffff;
}

/**
 * handle_pkt_too_big: the flows that answer a packet of a multichassis port (key `portKey` on
 * datapath `dpKey`) too big for its tunnels, for IPv4 and IPv6, from the port (reg14) and to it
 * (reg15). Table 37 (priority 100) flags a packet longer than `mtu` in reg9[1] (northd's
 * REGBIT_PKT_LARGER) and goes on to table 38, whose priority-100 flow answers a flagged one
 * (icmpTooBig); the rest take the tables' defaults. `cookie`: the Port_Binding the flows are
 * made for (the port reached through the localnet), as in ovn-controller.
 */
export function pathMtuFlows(dpKey: number, portKey: number, mtu: number, cookie: bigint): FlowSpec[] {
  const out: FlowSpec[] = [];
  for (const ipv6 of [false, true]) {
    for (const reg of [LOG_REG.INPORT, LOG_REG.OUTPORT]) {
      const m = new Map([['eth_type', exact(ipv6 ? 0x86dd : 0x0800, 16)], ['metadata', exact(dpKey, 64)], [reg, exact(portKey, 32)]]);
      out.push(flow(OFTABLE.OUTPUT_LARGE_PKT_DETECT, 100, m,
        [{ kind: 'check_pkt_larger', pktLen: mtu, dst: ref('reg9', 1, 1) }, resubmit(OFTABLE.OUTPUT_LARGE_PKT_PROCESS)], cookie));
      out.push(flow(OFTABLE.OUTPUT_LARGE_PKT_PROCESS, 100, new Map([...m, ['reg9', bit(1)]]), [icmpTooBig(mtu, ipv6)], cookie));
    }
  }
  return out;
}

/**
 * reply_imcp_error_if_pkt_too_big: OVN's icmp4/icmp6 controller action, paused as there, whose
 * nested actions turn the error pinctrl builds into an ICMPv4 "fragmentation needed" (type 3,
 * code 4) or ICMPv6 "packet too big" (type 2, code 0) back to the sender: the large-packet flag
 * cleared, loopback allowed, Ethernet and IP addresses swapped, TTL 255, the MTU (`mtu` less the
 * Ethernet overhead, 16 or 32 bits) written in by a paused icmp4.frag_mtu / icmp6.frag_mtu, and
 * the error sent through the ingress pipeline again.
 */
function icmpTooBig(mtu: number, ipv6: boolean): OfAction {
  const swap = (a: string, b: string, bits: number): OfAction[] => [
    { kind: 'push', src: ref(a, 0, bits - 1) }, { kind: 'push', src: ref(b, 0, bits - 1) },
    { kind: 'pop', dst: ref(a, 0, bits - 1) }, { kind: 'pop', dst: ref(b, 0, bits - 1) },
  ];
  const fragMtu = (mtu - ETHERNET_OVERHEAD_BYTES) & 0xffff;
  const icmp = ipv6
    ? [setField('icmpv6_type', 2), setField('icmpv6_code', 0),
      { kind: 'controller', userdata: controllerUserdata(ACTION_OPCODE.PUT_ICMP6_FRAG_MTU, [0, 0, fragMtu >> 8, fragMtu & 0xff]), pause: true } as const]
    : [setField('icmpv4_type', 3), setField('icmpv4_code', 4),
      { kind: 'controller', userdata: controllerUserdata(ACTION_OPCODE.PUT_ICMP4_FRAG_MTU, [fragMtu >> 8, fragMtu & 0xff]), pause: true } as const];
  return {
    kind: 'controller_op', opcode: ACTION_OPCODE.ICMP, pause: true, nested: [
      { kind: 'load', dst: ref('reg9', 1, 1), value: 0n },
      loadBit(LOG_REG.FLAGS, MLF.ALLOW_LOOPBACK),
      ...swap('eth_dst', 'eth_src', 48),
      ...(ipv6 ? swap('ipv6_dst', 'ipv6_src', 128) : swap('ipv4_dst', 'ipv4_src', 32)),
      { kind: 'set_nw_ttl', ttl: IP_TTL_MAX },
      ...icmp,
      resubmit(OFTABLE.LOG_INGRESS_PIPELINE),
    ],
  };
}

/** put_remote_port_redirect_overlay: a port on other chassis, through their tunnels. */
function remotePortFlows(ctx: PhysicalContext, dpKey: number, pb: sb.Port_Binding): FlowSpec[] {
  const ports = tunnelsToPort(ctx, pb);
  if (ports.length === 0) return [];
  const actions: OfAction[] = [];
  if (pb.type === 'vtep') actions.push(...setInPortNone);
  for (const p of ports) actions.push(...encapsulation(ctx, p.type, dpKey, pb.tunnel_key, pb.type === 'vtep'), output(p.ofport));
  actions.push(resubmit(OFTABLE.LOCAL_OUTPUT));
  return [flow(OFTABLE.REMOTE_OUTPUT, 100, matchOutport(dpKey, pb.tunnel_key), actions, cookieOf(pb._uuid))];
}

/** put_remote_port_redirect_bridged: a chassisredirect port reached through the localnet of the
 *  switch its distributed port is patched to, with the port's MAC as source. */
function bridgedRedirectFlows(ctx: PhysicalContext, ld: LocalDatapath, pb: sb.Port_Binding): FlowSpec[] {
  if (pb.type !== 'chassisredirect') return [];
  const mac = firstMac(pb.mac[0]);
  if (mac === undefined) return [];
  const distributed = pb.options.get('distributed-port');
  let lsDp: LocalDatapath | undefined;
  for (const pp of ld.peerPorts) {
    const remote = ctx.sb.portBinding(pp.remote);
    if (remote !== undefined && remote.options.get('peer') === distributed) {
      lsDp = ctx.locality.datapaths.get(remote.datapath);
      break;
    }
  }
  const localnet = lsDp?.localnetPort === undefined ? undefined : ctx.sb.portBinding(lsDp.localnetPort);
  if (lsDp === undefined || localnet === undefined) return [];
  return [flow(OFTABLE.LOCAL_OUTPUT, 100, matchOutport(ld.tunnelKey, pb.tunnel_key), [
    setField('eth_src', mac), setField('metadata', lsDp.tunnelKey), setField(LOG_REG.OUTPORT, localnet.tunnel_key), resubmit(OFTABLE.LOG_TO_PHY),
  ], cookieOf(pb._uuid))];
}

// ---- Multicast_Group ---------------------------------------------------------------------

/**
 * One member's share of its multicast group's flows: what consider_mc_group's loop adds for
 * that port. The group's flows are the members' shares concatenated in the set's order (local
 * and remote actions) and united (the chassis to fan out to), so a caller may keep the shares
 * and recompute only those of members whose inputs changed (DesiredFlows does). A share reads
 * the member's Port_Binding, its ct zone, its VIF (or its container parent's), the Chassis
 * rows it is bound to, the tunnel to a 'remote' port's chassis, the bridge mappings (localnet,
 * l2gateway), a chassisredirect port's distributed port, and of the group's datapath only
 * what McGroupBasis holds.
 */
export interface McMemberShare {
  /** Actions of table 40's flow (delivery on this chassis). */
  readonly local: readonly OfAction[];
  /** Actions of table 39's flow before the group's own outport and tunnel outputs. */
  readonly remote: readonly OfAction[];
  /** Names of the Chassis (not VTEP gateways) the group fans out to through this member. */
  readonly chassis: readonly string[];
  /** Names of the VTEP gateway Chassis the group fans out to through this member. */
  readonly vtepChassis: readonly string[];
}

/** What a member's share reads of the group's local datapath. */
export interface McGroupBasis {
  readonly tunnelKey: number;
  readonly isTransitSwitch: boolean;
  readonly hasLocalnet: boolean;
}

export function mcGroupBasis(ld: LocalDatapath): McGroupBasis {
  return { tunnelKey: ld.tunnelKey, isTransitSwitch: ld.isTransitSwitch, hasLocalnet: ld.localnetPort !== undefined };
}

const NO_ACTIONS: readonly OfAction[] = [];
const NO_NAMES: readonly string[] = [];
const EMPTY_SHARE: McMemberShare = { local: NO_ACTIONS, remote: NO_ACTIONS, chassis: NO_NAMES, vtepChassis: NO_NAMES };

/** The share of member 'portUuid' (a Port_Binding uuid) in a group of datapath 'dp'. */
export function multicastMemberShare(ctx: PhysicalContext, basis: McGroupBasis, dp: string, portUuid: string): McMemberShare {
  const port = ctx.sb.portBinding(portUuid);
  if (port === undefined || port.datapath !== dp) return EMPTY_SHARE;
  const local: OfAction[] = [];
  const remote: OfAction[] = [];
  const remoteChassis: string[] = [];
  const vtepChassis: string[] = [];
  const toChassisSet = (uuid: string): void => {
    const ch = ctx.sb.chassis(uuid);
    if (ch === undefined) return;
    (ch.other_config.get('is-vtep') === 'true' ? vtepChassis : remoteChassis).push(ch.name);
  };
  const deliverLocal = (key: number): void => {
    local.push(setField(LOG_REG.OUTPORT, key), resubmit(OFTABLE.CHECK_LOOPBACK));
  };
  const zone = ctx.zones.get(port.logical_port) ?? 0;
  if (zone !== 0) local.push(setField(LOG_REG.CT_ZONE, zone));
  const lportName = port.parent_port[0] !== undefined && port.parent_port[0] !== '' ? port.parent_port[0] : port.logical_port;
  if (port.type === 'patch') {
    (basis.isTransitSwitch ? local : remote).push(setField(LOG_REG.OUTPORT, port.tunnel_key), resubmit(OFTABLE.CHECK_LOOPBACK));
  }
  if (port.type === 'remote') {
    const ch = port.chassis[0] === undefined ? undefined : ctx.sb.chassis(port.chassis[0]);
    if (ch !== undefined) {
      remote.push(setField(LOG_REG.OUTPORT, port.tunnel_key));
      const t = tunnelTo(ctx, ch.name);
      if (t !== undefined) remote.push(...encapsulation(ctx, t.type, basis.tunnelKey, port.tunnel_key, false), output(t.ofport));
    }
  } else if (port.type === 'localport') {
    remote.push(setField(LOG_REG.OUTPORT, port.tunnel_key), resubmit(OFTABLE.CHECK_LOOPBACK));
  } else if (isBoundHere(port, ctx.chassisUuid) && (boundLocally(ctx, lportName) || port.type === 'l3gateway')) {
    deliverLocal(port.tunnel_key);
  } else if (hasPatchOfport(ctx, port)) {
    deliverLocal(port.tunnel_key);
  } else if (port.type === 'chassisredirect' && ctx.chassisUuid !== undefined && port.chassis[0] === ctx.chassisUuid) {
    const dist = ctx.sb.portByName(port.options.get('distributed-port') ?? '');
    if (dist !== undefined && dist.datapath === port.datapath) deliverLocal(dist.tunnel_key);
  } else if (!basis.hasLocalnet) {
    if (port.chassis[0] !== undefined) toChassisSet(port.chassis[0]);
    for (const c of port.additional_chassis) toChassisSet(c);
  }
  if (local.length === 0 && remote.length === 0 && remoteChassis.length === 0 && vtepChassis.length === 0) return EMPTY_SHARE;
  return {
    local: local.length === 0 ? NO_ACTIONS : local,
    remote: remote.length === 0 ? NO_ACTIONS : remote,
    chassis: remoteChassis.length === 0 ? NO_NAMES : remoteChassis,
    vtepChassis: vtepChassis.length === 0 ? NO_NAMES : vtepChassis,
  };
}

/** A group's flows from its members' shares, given in the order of mc.ports. */
export function multicastGroupFlowsOf(ctx: PhysicalContext, basis: McGroupBasis, mc: sb.Multicast_Group, shares: Iterable<McMemberShare>): FlowSpec[] {
  const local: OfAction[] = [];
  const remote: OfAction[] = [];
  const remoteChassis = new Set<string>();
  const vtepChassis = new Set<string>();
  for (const s of shares) {
    if (s === EMPTY_SHARE) continue;
    for (const a of s.local) local.push(a);
    for (const a of s.remote) remote.push(a);
    for (const n of s.chassis) remoteChassis.add(n);
    for (const n of s.vtepChassis) vtepChassis.add(n);
  }
  return multicastFlowsFrom(ctx, basis, mc, local, remote, [...remoteChassis].sort(), [...vtepChassis].sort());
}

/**
 * A group's flows from its members' shares put together: their local and remote actions
 * concatenated in the order of mc.ports, and the names of the chassis (not VTEP, and VTEP) they
 * fan out to, each sorted and without repeats.
 */
export function multicastFlowsFrom(
  ctx: PhysicalContext, basis: McGroupBasis, mc: sb.Multicast_Group,
  local: readonly OfAction[], remoteActions: readonly OfAction[], remoteChassis: readonly string[], vtepChassis: readonly string[],
): FlowSpec[] {
  const out: FlowSpec[] = [];
  const match = matchOutport(basis.tunnelKey, mc.tunnel_key);
  const cookie = cookieOf(mc._uuid);
  const hasLocal = local.length > 0;
  if (hasLocal) out.push(flow(OFTABLE.LOCAL_OUTPUT, 100, match, [...local, setField(LOG_REG.OUTPORT, mc.tunnel_key)], cookie));
  if (remoteChassis.length > 0 || vtepChassis.length > 0 || remoteActions.length > 0) {
    const remote = [...remoteActions];
    if (remote.length > 0) remote.push(setField(LOG_REG.OUTPORT, mc.tunnel_key));
    // fanout_to_chassis: an encapsulation before the first tunnel and wherever the type
    // changes; the VTEP gateways' without the egress port (ramp switches).
    for (const [names, isRampSwitch] of [[remoteChassis, false], [vtepChassis, true]] as const) {
      let prev: Tunnel['type'] | undefined;
      for (const name of names) {
        const t = tunnelTo(ctx, name);
        if (t === undefined) continue;
        if (t.type !== prev) remote.push(...encapsulation(ctx, t.type, basis.tunnelKey, mc.tunnel_key, isRampSwitch));
        prev = t.type;
        remote.push(output(t.ofport));
      }
    }
    if (remote.length > 0) {
      if (hasLocal) remote.push(resubmit(OFTABLE.LOCAL_OUTPUT));
      out.push(flow(OFTABLE.REMOTE_OUTPUT, 100, match, remote, cookie));
    }
  }
  return out;
}

/** consider_mc_group: local members in table 40, remote chassis (once each) in table 39. The
 *  whole group from scratch (the reference for callers that keep members' shares). */
export function multicastGroupFlows(ctx: PhysicalContext, mc: sb.Multicast_Group): FlowSpec[] {
  const ld = ctx.locality.datapaths.get(mc.datapath);
  if (ld === undefined) return [];
  const basis = mcGroupBasis(ld);
  // In the set's order (sorted by uuid, as OVSDB keeps sets): the order of the actions.
  return multicastGroupFlowsOf(ctx, basis, mc, mc.ports.map((u) => multicastMemberShare(ctx, basis, mc.datapath, u)));
}

/** A VIF whose interface is on this chassis' bridge (local_binding_get_primary_pb). */
function boundLocally(ctx: PhysicalContext, name: string): boolean {
  return ctx.view.vifs.has(name);
}

/** A localnet port with a bridge mapping here, or an l2gateway port of this chassis (patch_ofports). */
function hasPatchOfport(ctx: PhysicalContext, pb: sb.Port_Binding): boolean {
  if (pb.type === 'l2gateway' && !isBoundHere(pb, ctx.chassisUuid)) return false;
  if (pb.type !== 'localnet' && pb.type !== 'l2gateway') return false;
  const net = pb.options.get('network_name');
  return net !== undefined && ctx.view.localnetPatches.has(net);
}

// ---- Tunnels and the fixed flows -----------------------------------------------------------

/**
 * Table 0: what a tunnel from a chassis brings in, delivered on this chassis (table 40). Geneve
 * (priority 100) carries datapath, inport and outport. VXLAN carries the datapath and the
 * outport in 12 bits each (priority 100), a multicast group's (VNI bit 23 set, priority 105) as
 * 2048 | its low 11 bits, mapped back to 32768 | those bits; no inport.
 */
export function tunnelFlows(ctx: Pick<PhysicalContext, 'view' | 'geneveField'>, chassisName: string): FlowSpec[] {
  const t = tunnelTo(ctx, chassisName);
  if (t === undefined) return [];
  const inPort = new Map([['in_port', exact(t.ofport, 32)]]);
  if (t.type === 'vxlan') {
    const mcastBit = BigInt(OVN_VXLAN_MIN_MULTICAST) << 12n;
    return [
      flow(OFTABLE.PHY_TO_LOG, 100, inPort, [
        move(ref('tun_id', 12, 23), ref(LOG_REG.OUTPORT, 0, 11)),
        move(ref('tun_id', 0, 11), ref('metadata', 0, 11)),
        resubmit(OFTABLE.LOCAL_OUTPUT),
      ], 0n),
      flow(OFTABLE.PHY_TO_LOG, 105, new Map([...inPort, ['tun_id', { value: mcastBit, mask: mcastBit }]]), [
        loadBit(LOG_REG.OUTPORT, 15),
        move(ref('tun_id', 12, 22), ref(LOG_REG.OUTPORT, 0, 10)),
        move(ref('tun_id', 0, 11), ref('metadata', 0, 11)),
        resubmit(OFTABLE.LOCAL_OUTPUT),
      ], 0n),
    ];
  }
  return [flow(OFTABLE.PHY_TO_LOG, 100, inPort, [
    move(ref('tun_id', 0, 23), ref('metadata', 0, 23)),
    move(ref(ctx.geneveField, 16, 30), ref(LOG_REG.INPORT, 0, 14)),
    move(ref(ctx.geneveField, 0, 15), ref(LOG_REG.OUTPORT, 0, 15)),
    resubmit(OFTABLE.LOCAL_OUTPUT),
  ], 0n)];
}

/**
 * Table 0, priority 110: a VTEP gateway (ramp switch) sends over VXLAN with only the datapath
 * in the VNI, for each of its vtep ports: the packet enters that datapath's ingress pipeline as
 * from the vtep port, flagged MLF_RCV_FROM_RAMP (table 39 then delivers it locally only, and
 * northd's ARP responders for router addresses skip it). As physical_run, for every vtep port
 * bound to a chassis this one has a VXLAN tunnel to, local datapath or not.
 */
function rampSwitchFlows(ctx: PhysicalContext, pb: sb.Port_Binding): FlowSpec[] {
  const t = tunnelTo(ctx, pb.chassis[0] === undefined ? undefined : ctx.sb.chassis(pb.chassis[0])?.name);
  const dp = ctx.sb.datapath(pb.datapath);
  if (t === undefined || t.type !== 'vxlan' || dp === undefined) return [];
  return [flow(OFTABLE.PHY_TO_LOG, 110, new Map([['in_port', exact(t.ofport, 32)], ['tun_id', exact(dp.tunnel_key, 64)]]), [
    move(ref('tun_id', 0, 23), ref('metadata', 0, 23)),
    { kind: 'load', dst: ref(LOG_REG.INPORT, 0, 14), value: BigInt(pb.tunnel_key) },
    loadBit(LOG_REG.FLAGS, MLF.RCV_FROM_RAMP),
    resubmit(OFTABLE.LOG_INGRESS_PIPELINE),
  ], cookieOf(pb._uuid))];
}

/** The flows every chassis has whatever its ports: the defaults of the physical tables. */
export function defaultFlows(ds?: DropSampling): FlowSpec[] {
  const none = new Map<string, MaskedValue>();
  const flags = (value: bigint, mask: bigint): Map<string, MaskedValue> => new Map([[LOG_REG.FLAGS, { value, mask }]]);
  const B = (n: number): bigint => 1n << BigInt(n);
  const clearRegs: OfAction[] = [];
  for (let i = 0; i < 10; i++) clearRegs.push(setField(`reg${i}`, 0));
  return [
    flow(OFTABLE.PHY_TO_LOG, 0, none, drop(ds, OFTABLE.PHY_TO_LOG), 0n),
    flow(OFTABLE.OUTPUT_LARGE_PKT_DETECT, 0, none, [resubmit(OFTABLE.REMOTE_OUTPUT)], 0n),
    flow(OFTABLE.OUTPUT_LARGE_PKT_PROCESS, 10, flags(B(MLF.ALLOW_LOOPBACK), B(MLF.ALLOW_LOOPBACK)), [resubmit(OFTABLE.LOCAL_OUTPUT)], 0n),
    flow(OFTABLE.OUTPUT_LARGE_PKT_PROCESS, 0, none, [resubmit(OFTABLE.REMOTE_OUTPUT)], 0n),
    flow(OFTABLE.REMOTE_OUTPUT, 150, flags(B(MLF.RCV_FROM_RAMP), B(MLF.RCV_FROM_RAMP) | B(MLF.ALLOW_LOOPBACK)), [resubmit(OFTABLE.LOCAL_OUTPUT)], 0n),
    flow(OFTABLE.REMOTE_OUTPUT, 150, flags(B(MLF.LOCAL_ONLY), B(MLF.LOCAL_ONLY)), [resubmit(OFTABLE.LOCAL_OUTPUT)], 0n),
    flow(OFTABLE.REMOTE_OUTPUT, 0, none, [resubmit(OFTABLE.LOCAL_OUTPUT)], 0n),
    flow(OFTABLE.LOCAL_OUTPUT, 0, none, drop(ds, OFTABLE.LOCAL_OUTPUT), 0n),
    flow(OFTABLE.CHECK_LOOPBACK, 0, none, [...clearRegs, resubmit(OFTABLE.LOG_EGRESS_PIPELINE)], 0n),
    flow(OFTABLE.SAVE_INPORT, 0, none, [resubmit(OFTABLE.LOG_TO_PHY)], 0n),
    flow(OFTABLE.LOG_TO_PHY, 0, none, drop(ds, OFTABLE.LOG_TO_PHY), 0n),
  ];
}

// ---- MAC_Binding / Static_MAC_Binding ------------------------------------------------------

function parseIpv4(text: string): bigint | undefined {
  const parts = text.split('.');
  if (parts.length !== 4 || !parts.every((p) => /^[0-9]{1,3}$/.test(p) && Number(p) <= 255)) return undefined;
  return parts.reduce((a, p) => (a << 8n) | BigInt(Number(p)), 0n);
}

function parseIpv6(text: string): bigint | undefined {
  const halves = text.split('::');
  if (halves.length > 2 || text.includes('.')) return undefined;
  const groups = (s: string): string[] => (s === '' ? [] : s.split(':'));
  const left = groups(halves[0] ?? '');
  const right = halves.length === 2 ? groups(halves[1] ?? '') : [];
  const missing = 8 - left.length - right.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return undefined;
  let v = 0n;
  for (const g of [...left, ...Array<string>(halves.length === 2 ? missing : 0).fill('0'), ...right]) {
    if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return undefined;
    v = (v << 16n) | BigInt(parseInt(g, 16));
  }
  return v;
}

/** xxreg0 == ip, spelled as the four 32-bit registers it is made of (reg0 the most significant):
 *  Open vSwitch reports such a match that way, and a flow's identity must read back the same. */
function setXxreg0(m: Map<string, MaskedValue>, ip: bigint): void {
  for (let i = 0; i < 4; i++) m.set(`reg${i}`, exact((ip >> BigInt(32 * (3 - i))) & 0xffffffffn, 32));
}

/**
 * consider_neighbor_flow: table 66 answers get_arp/get_nd for (outport, IP) with the MAC,
 * table 67 answers lookup_arp/lookup_nd for (inport, IP, MAC). The port must be in a local
 * datapath. Priority 100 for MAC_Binding; 150 or 50 for a Static_MAC_Binding that does or does
 * not override learned bindings.
 */
export function neighborFlows(ctx: Pick<PhysicalContext, 'sb' | 'locality'>, row: { readonly _uuid: string; readonly logical_port: string; readonly ip: string; readonly mac: string }, priority: number): FlowSpec[] {
  const pb = ctx.sb.portByName(row.logical_port);
  if (pb === undefined) return [];
  const ld = ctx.locality.datapaths.get(pb.datapath);
  if (ld === undefined) return [];
  const mac = firstMac(row.mac);
  if (mac === undefined || row.mac.trim().split(/\s+/).length !== 1) return [];
  const get = new Map<string, MaskedValue>();
  const lookup = new Map<string, MaskedValue>();
  if (row.ip.includes('.')) {
    const ip = parseIpv4(row.ip);
    if (ip === undefined) return [];
    get.set('reg0', exact(ip, 32));
    lookup.set('reg0', exact(ip, 32));
    lookup.set('eth_type', exact(0x0806, 16));
  } else {
    const ip = parseIpv6(row.ip);
    if (ip === undefined) return [];
    setXxreg0(get, ip);
    setXxreg0(lookup, ip);
    lookup.set('eth_type', exact(0x86dd, 16));
    lookup.set('ip_proto', exact(58, 8));
    lookup.set('icmpv6_code', exact(0, 8));
  }
  get.set('metadata', exact(ld.tunnelKey, 64));
  get.set(LOG_REG.OUTPORT, exact(pb.tunnel_key, 32));
  lookup.set('metadata', exact(ld.tunnelKey, 64));
  lookup.set(LOG_REG.INPORT, exact(pb.tunnel_key, 32));
  lookup.set('eth_src', exact(mac, 48));
  const cookie = cookieOf(row._uuid);
  return [
    flow(OFTABLE.MAC_BINDING, priority, get, [setField('eth_dst', mac), loadBit(LOG_REG.FLAGS, MLF.LOOKUP_MAC)], cookie),
    flow(OFTABLE.MAC_LOOKUP, priority, lookup, [loadBit(LOG_REG.FLAGS, MLF.LOOKUP_MAC)], cookie),
  ];
}

// ---- FDB -----------------------------------------------------------------------------------

/** consider_fdb_flows: table 71 answers get_fdb (MAC → outport), table 72 lookup_fdb (is this
 *  MAC learned on this inport). Only for local datapaths. */
export function fdbFlows(ctx: Pick<PhysicalContext, 'locality'>, fdb: sb.FDB): FlowSpec[] {
  if (!ctx.locality.byKey.has(fdb.dp_key)) return [];
  const mac = firstMac(fdb.mac);
  if (mac === undefined || fdb.mac.trim().split(/\s+/).length !== 1) return [];
  const cookie = cookieOf(fdb._uuid);
  return [
    flow(OFTABLE.GET_FDB, 100, new Map([['metadata', exact(fdb.dp_key, 64)], ['eth_dst', exact(mac, 48)]]),
      [setField(LOG_REG.OUTPORT, fdb.port_key)], cookie),
    flow(OFTABLE.LOOKUP_FDB, 100, new Map([['metadata', exact(fdb.dp_key, 64)], ['eth_src', exact(mac, 48)], [LOG_REG.INPORT, exact(fdb.port_key, 32)]]),
      [loadBit(LOG_REG.FLAGS, MLF.LOOKUP_FDB)], cookie),
  ];
}
