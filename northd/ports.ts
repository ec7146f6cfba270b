// Port_Binding: one per Logical_Switch_Port and Logical_Router_Port attached to a datapath,
// named by logical_port. Types as ovn-northd 23.03 sets them (router LSP → "patch" with
// options:peer = router-port; LRP → "patch" with options:peer = its peer), mac, options,
// parent_port/tag, and a tunnel key per datapath: the lowest free key when the port first
// appears there (ports appearing together take keys in name order), kept while it stays,
// unless the port or another asks for a key (options:requested-tnl-key; tunnel-keys.ts).
// Chassis-owned columns (chassis, encap, up, ...) are never computed here: they come from the
// `sb_owned` input (agents' claims), which may be empty; up defaults to [false] as in OVN.
// The SB HA_Chassis_Group and HA_Chassis rows the bindings name are written here too: a
// member's chassis column from the `sb_chassis` input (the registered Chassis by name), a
// group's ref_chassis from the bindings' chassis (ha-ref-chassis.ts). A switch port's
// requested chassis come from its options and the Chassis by name or hostname (`sb_chassis`,
// `sb_hostnames`; requested-chassis.ts).
//
// Dependencies between names: a router LRP's peer option and a router LSP's "router" MAC
// depend on each other's rows, and an LRP's peer on the LRP it names; `project` follows them
// one step from every changed name through reverse indexes.
//
// Incremental strategy: every NB change is turned into a set of dirty port names, and each
// dirty name is projected afresh from the NB database; a recompute projects every name. So
// the two paths share the projection and differ only in which names they visit.
import assert from 'node:assert/strict';
import type { ColumnSchema, Database, DbDelta, Row, Uuid } from '../ovsdb/index.js';
import { forEachRefChange } from '../ovsdb/index.js';
import type * as nb from '../ovsdb/rows/nb.js';
import type * as sb from '../ovsdb/rows/sb.js';
import type { DatapathInfo, DatapathsChange, DatapathsData } from './datapaths.js';
import { datapathSbUuid } from './datapaths.js';
import type { EngineNode, NodeInputs } from './engine.js';
import type { HaGroupDesired, RouterGateways } from './gateway-ports.js';
import { crPortName, haGroupOf, haGroupRow, haGroupRows, haGroupSbUuid, lrpHasGateway, lrpOfCrName, residentCrOf, routerGateways, switchHasPortType } from './gateway-ports.js';
import type { RefContribution } from './ha-ref-chassis.js';
import { HaRefChassis } from './ha-ref-chassis.js';
import type { TextSink } from './hash.js';
import { hashUuid, hashUuidOfWritten } from './hash.js';
import { boolOption, findLrp, findLsp, leadingMac, lspIsEnabled, nbGet, nbRows, optionInt, ownerOf } from './nb.js';
import { lbFacts } from './load-balancers.js';
import { mirrorSbUuid } from './mirrors.js';
import { relaying } from './ip-multicast.js';
import type { LportAddresses } from './netaddr.js';
import { extractLrpNetworks, extractLspAddresses, findLportAddress, isDynamicAddress } from './netaddr.js';
import { ssetOrder } from './ovs-hash.js';
import { fitted } from './fitted.js';
import { sameData } from './same-data.js';
import { SbChangeSet, SbTable, canonicalText } from './sb-changes.js';
import type { ChassisRegistry, SbHostnamesChange, SbHostnamesData } from './requested-chassis.js';
import { requestedChassis, requestedEntries } from './requested-chassis.js';
import type { SbEncapsData } from './tunnel-keys.js';
import { KeySpace, PORT_KEY_MAX, PORT_KEY_MAX_VXLAN, PORT_KEY_MIN } from './tunnel-keys.js';
import type { VirtualPortFacts } from './virtual-ports.js';
import { virtualPortFacts, virtualPortRefs } from './virtual-ports.js';

/** The options key chassis write (server/chassis-store.ts), shown while a port has additional chassis. */
export const ACTIVATED_OPTION = 'additional-chassis-activated';

/** The key of a router port's binding options its chassis writes the delegated IPv6 prefix under. */
export const PD_LIST_OPTION = 'ipv6_ra_pd_list';

/** The chassis-owned columns of a Port_Binding, as agents report them (by logical_port). */
export interface ChassisOwnedColumns {
  readonly chassis?: readonly Uuid[];
  readonly additional_chassis?: readonly Uuid[];
  readonly encap?: readonly Uuid[];
  readonly additional_encap?: readonly Uuid[];
  readonly virtual_parent?: readonly string[];
  readonly up?: readonly boolean[];
  /**
   * options:additional-chassis-activated as the chassis wrote it (the chassis that activated a
   * migrating port, comma-separated); shown in the binding's options while it has additional
   * chassis.
   */
  readonly additional_chassis_activated?: string;
  /**
   * options:ipv6_ra_pd_list as the chassis wrote it ("aid:prefix/plen", what a router port's
   * DHCPv6 prefix delegation obtained): kept in the router port's binding options and
   * advertised after its own prefixes.
   */
  readonly ipv6_ra_pd_list?: string;
}

/** The sb_owned source: data is logical_port → columns; a change is the set of names touched. */
export type SbOwnedData = ReadonlyMap<string, ChassisOwnedColumns>;
export type SbOwnedChange = ReadonlySet<string>;

/**
 * The sb_chassis source: the registered SB Chassis rows, name → UUID (names are unique in the
 * SB schema); a change is the set of names whose Chassis came, went or moved to another row.
 */
export type SbChassisData = ReadonlyMap<string, Uuid>;
export type SbChassisChange = ReadonlySet<string>;

/** What other projections need to know about one bound port. */
export interface PortInfo {
  readonly name: string;
  readonly kind: 'lsp' | 'lrp';
  readonly nbUuid: Uuid;
  readonly sbUuid: Uuid;
  /** The Datapath_Binding UUID. */
  readonly dp: Uuid;
  readonly key: number;
  /** The NB type ("" for a VIF; "router", "localnet", ...); "" for an LRP. */
  readonly type: string;
  readonly enabled: boolean;
  /** addresses contains "unknown". */
  readonly hasUnknown: boolean;
  /** An LSP's NB up column is true (ovn-northd's lsp_is_up); false for an LRP. */
  readonly nbUp: boolean;
  /** The leading Ethernet address of each addresses entry that has one, in order. */
  readonly macs: readonly string[];
  readonly portSecurityCount: number;
  readonly localnetLearnFdb: boolean;
  /** For a router LSP whose router-port names an attached LRP: that LRP's facts. */
  readonly routerPeer: RouterPeer | undefined;
  /** The NB row's options (LSP or LRP). */
  readonly options: ReadonlyMap<string, string>;
  /**
   * LSP: its addresses as ovn-northd parses them (op->lsp_addrs): the "MAC IP..." entries, then
   * the dynamic addresses, then the peer router port's networks for "router".
   */
  readonly lspAddrs: readonly LportAddresses[];
  /** LSP: its DHCPv4 options row, when it names one. */
  readonly dhcpv4: DhcpOptionsFacts | undefined;
  /** LSP: its DHCPv6 options row, when it names one. */
  readonly dhcpv6: DhcpOptionsFacts | undefined;
  /** LRP: its MAC and networks (with the link-local address last); undefined for an LSP. */
  readonly networks: LportAddresses | undefined;
  /** LRP: the port it is connected to (options:peer of its binding): an LRP or a router LSP. */
  readonly peer: string | undefined;
  readonly peerIsLrp: boolean;
  /** LRP: its own peer column is set (whatever it names). */
  readonly peerColumnSet: boolean;
  /** LRP: a distributed gateway port (gateway_chassis or ha_chassis_group set). */
  readonly gateway: boolean;
  /**
   * LRP: its chassisredirect port (ovn-northd's op->cr_port), for a gateway port on a router
   * that is not a gateway router; undefined otherwise, and for every other port.
   */
  readonly crPort: string | undefined;
  /** LRP: ipv6_ra_configs. */
  readonly ipv6RaConfigs: ReadonlyMap<string, string>;
  /**
   * The chassisredirect port this port's presence on its link is gated by (a distributed
   * gateway port's own, or the router's only one under reside-on-redirect-chassis), when the
   * switch of the link has a localnet port: an LRP's ARP replies, a router LSP's MAC lookup.
   */
  readonly residentCr: string | undefined;
  /** LRP: its peer is a router LSP on a switch with a vtep port (has_vtep_lports). */
  readonly peerHasVtep: boolean;
  /**
   * LRP: its peer is a router LSP on a switch with a localnet port that has a tag_request:
   * frames on that link carry a VLAN header, which the gateway_mtu check counts.
   */
  readonly peerVlanLocalnet: boolean;
  /**
   * Router LSP on a switch with a vtep port facing a distributed gateway port: that port's cr
   * port, where traffic from the vtep (ramp) switch goes on to ARP/ND hairpinning.
   */
  readonly vtepHairpinCr: string | undefined;
  /**
   * A virtual LSP with a virtual-ip that parses and virtual-parents: those, and the parent its
   * binding names once a chassis claimed it (the one chassis-owned fact a port's flows read).
   */
  readonly virtual: VirtualPortFacts | undefined;
  /** LSP: its ha_chassis_group column names a group (an external port's DHCP is served only then). */
  readonly haGroupSet: boolean;
}

/** A DHCP_Options row as the flows read it. */
export interface DhcpOptionsFacts {
  readonly uuid: Uuid;
  readonly cidr: string;
  readonly options: ReadonlyMap<string, string>;
}

export interface RouterPeer {
  readonly name: string;
  readonly mac: string;
  readonly enabled: boolean;
  readonly ipv4: readonly string[];
  readonly ipv6: readonly string[];
  /** The LRP's networks (extract_lrp_networks). */
  readonly networks: LportAddresses;
  /** The router's Datapath_Binding UUID. */
  readonly dp: Uuid;
  readonly nbUuid: Uuid;
  /** The router's options:chassis: a gateway router's ports are l3gateway ports. */
  readonly chassis: string | undefined;
  /** The router relays IP multicast (options:mcast_relay). */
  readonly mcastRelay: boolean;
  /**
   * A distributed gateway port's routable addresses (ovn-northd's op->routables): its router's
   * NAT external IPs and load balancer VIPs with options:add_route, as "MAC IP..." entries
   * parsed; the other routers on its switch route to them through it. Empty for other ports.
   */
  readonly routables: readonly LportAddresses[];
}

export interface PortsData {
  /**
   * VXLAN mode (`sb_encaps`) as this run reads it: new ports take keys up to 2047 and requests
   * from 2048 are ignored. Its change recomputes the node (no handler for it).
   */
  vxlan: boolean;
  readonly byName: Map<string, PortInfo>;
  readonly byDp: Map<Uuid, Set<string>>;
  /** Per datapath (Datapath_Binding UUID): its ports' keys, by port name. */
  readonly keys: Map<Uuid, KeySpace>;
  /** Ports waiting for a key (their datapath's keys exhausted): name → datapath. */
  readonly keyless: Map<string, Uuid>;
  readonly table: SbTable;
  /** LSP name → its options:router-port, and the reverse. */
  readonly routerPortOf: Map<string, string>;
  readonly routerPortRefs: Map<string, Set<string>>;
  /** LRP name → its peer column, and the reverse. */
  readonly peerOf: Map<string, string>;
  readonly peerRefs: Map<string, Set<string>>;
  /** Keys to reuse for ports first seen by a recompute: `${dp} ${name}` → key. */
  readonly preferredKeys: Map<string, number>;
  /** Per switch datapath: its router LSPs with a resolved peer (OVN's od->router_ports). */
  readonly routersByDp: Map<Uuid, Set<string>>;
  /** Per switch datapath: every port of the switch is such a router port. */
  readonly allRouter: Map<Uuid, boolean>;
  /** SB HA_Chassis_Group and HA_Chassis rows, written for the bindings naming them. */
  readonly haGroupTable: SbTable;
  readonly haChassisTable: SbTable;
  /** Port → the name of the SB HA_Chassis_Group its binding names; group → those ports. */
  readonly haGroupOfPort: Map<string, string>;
  readonly haGroupUsers: Map<string, Set<string>>;
  /** Group name → its HA_Chassis rows as written. */
  readonly haMembers: Map<string, readonly Uuid[]>;
  /** Group name → what it was written from; chassis name → the groups with a member of it. */
  readonly haDesired: Map<string, HaGroupDesired>;
  readonly haGroupsByChassisName: Map<string, Set<string>>;
  /** The groups' ref_chassis and what it is computed from (ha-ref-chassis.ts). */
  readonly refChassis: HaRefChassis;
  /** Port name → the virtual ports whose facts name it as a parent (listed or bound). */
  readonly virtualRefs: Map<string, Set<string>>;
  /** LSP name → the entries of its options:requested-chassis; entry → the LSPs naming it. */
  readonly requestedOf: Map<string, readonly string[]>;
  readonly requestedRefs: Map<string, Set<string>>;
}

export interface PortsChange {
  readonly sb: SbChangeSet;
  readonly ports: Map<string, { readonly old: PortInfo | undefined; readonly new: PortInfo | undefined }>;
  /** Switch datapaths whose allRouter flag changed. */
  readonly allRouterFlipped: Set<Uuid>;
}

export function portSbUuid(name: string): Uuid {
  return hashUuid(['Port_Binding', name]);
}

/** The NB-derived columns of a Port_Binding; the rest are constant, the key or reported. */
interface BindingColumns {
  readonly type: string;
  readonly options: ReadonlyMap<string, string>;
  readonly nat_addresses?: readonly string[];
  readonly parent_port: readonly string[];
  readonly tag: readonly number[];
  readonly mac: readonly string[];
  readonly port_security: readonly string[];
  readonly external_ids: ReadonlyMap<string, string>;
  readonly ha_chassis_group?: readonly Uuid[];
  readonly requested_chassis?: readonly Uuid[];
  readonly requested_additional_chassis?: readonly Uuid[];
  /** The SB Mirror rows of the mirrors a switch port is attached to, in UUID order. */
  readonly mirror_rules?: readonly Uuid[];
}

interface Desired {
  /** Its key is KEY_UNSET until `project` gives it one (the object is not shared before). */
  readonly info: PortInfo;
  readonly columns: BindingColumns;
  /** The SB HA_Chassis_Group the binding names. */
  readonly haGroup?: HaGroupDesired | undefined;
  /**
   * The datapath this port joins its own to, as 23.03's router groups follow links: a router
   * LSP's router, an LRP's peer LRP's router.
   */
  readonly link?: Uuid | undefined;
}

// Shared immutable values: most Port_Binding columns are empty for most ports.
const NO_UUIDS: readonly Uuid[] = Object.freeze([]);
const NO_STRINGS: readonly string[] = Object.freeze([]);
const NO_NUMBERS: readonly number[] = Object.freeze([]);
const UP_FALSE: readonly boolean[] = Object.freeze([false]);

function addRef(index: Map<string, Set<string>>, target: string, from: string): void {
  let s = index.get(target);
  if (s === undefined) index.set(target, (s = new Set()));
  s.add(from);
}

function dropRef(index: Map<string, Set<string>>, target: string, from: string): void {
  const s = index.get(target);
  if (s === undefined) return;
  s.delete(from);
  if (s.size === 0) index.delete(target);
}

function datapathOf(dps: DatapathsData, nbUuid: Uuid | undefined): DatapathInfo | undefined {
  return nbUuid === undefined ? undefined : dps.byNb.get(nbUuid);
}

/**
 * The Port_Binding row, columns in the order ovn-northd's schema lists them (its _version is
 * computed over this order). Chassis-owned columns come from the agents' report, if any.
 */
function bindingRow(info: PortInfo, c: BindingColumns, owned: ChassisOwnedColumns | undefined): sb.Port_Binding {
  const row = {
    _uuid: info.sbUuid, _version: '', logical_port: info.name, type: c.type, gateway_chassis: NO_UUIDS, ha_chassis_group: c.ha_chassis_group ?? NO_UUIDS,
    options: c.options, datapath: info.dp, tunnel_key: info.key, parent_port: c.parent_port, tag: c.tag, mirror_rules: c.mirror_rules ?? NO_UUIDS,
    mac: c.mac, port_security: c.port_security, nat_addresses: c.nat_addresses ?? NO_STRINGS, external_ids: c.external_ids, requested_chassis: c.requested_chassis ?? NO_UUIDS,
    requested_additional_chassis: c.requested_additional_chassis ?? NO_UUIDS, chassis: owned?.chassis ?? NO_UUIDS, additional_chassis: owned?.additional_chassis ?? NO_UUIDS,
    encap: owned?.encap ?? NO_UUIDS, additional_encap: owned?.additional_encap ?? NO_UUIDS, virtual_parent: owned?.virtual_parent ?? NO_STRINGS,
    up: owned?.up ?? UP_FALSE,
  };
  row._version = hashUuidOfWritten('version', row, writeBindingText);
  return row;
}

/**
 * The canonical text of a binding's columns, spelled out for the one shape bindingRow builds:
 * the text contentVersion would write, without walking the row's keys (a full run writes ten
 * thousand of these), put piece by piece into the hash (the text itself is never built).
 * tests/northd/projections.test.ts checks every row against contentVersion.
 */
function writeBindingText(w: TextSink, r: sb.Port_Binding): void {
  // gateway_chassis is always empty here (bindingRow); the rest go through
  // the cheap forms of canonicalText below.
  // Runs of columns that are usually empty are one piece when they are (a VIF's parent_port
  // and tag, an unclaimed port's chassis-owned columns): each piece costs a call and a copy.
  w.put('{"logical_port":');
  w.putString(r.logical_port);
  w.put(',"type":');
  w.putString(r.type);
  if (r.ha_chassis_group.length === 0) w.put(',"gateway_chassis":[],"ha_chassis_group":[],"options":');
  else {
    w.put(',"gateway_chassis":[],"ha_chassis_group":');
    w.put(atomsText(r.ha_chassis_group));
    w.put(',"options":');
  }
  w.put(mapText(r.options));
  w.put(',"datapath":');
  w.putString(r.datapath);
  w.put(',"tunnel_key":');
  w.put(String(r.tunnel_key));
  if (r.mirror_rules.length === 0) putPair(w, PARENT_TAG, r.parent_port, r.tag);
  else {
    putPair(w, PARENT_TAG_MIRRORS, r.parent_port, r.tag);
    w.put(atomsText(r.mirror_rules));
    w.put(',"mac":');
  }
  w.put(atomsText(r.mac));
  putPair(w, SECURITY_NAT, r.port_security, r.nat_addresses);
  w.put(mapText(r.external_ids));
  const unrequested = r.requested_chassis.length === 0 && r.requested_additional_chassis.length === 0;
  if (unrequested && r.chassis.length === 0 && r.additional_chassis.length === 0 && r.encap.length === 0 && r.additional_encap.length === 0 &&
    r.virtual_parent.length === 0 && r.up.length === 1 && r.up[0] === false) {
    w.put(UNCLAIMED_TAIL);
    return;
  }
  putPair(w, REQUESTED, r.requested_chassis, r.requested_additional_chassis);
  w.put(atomsText(r.chassis));
  w.put(',"additional_chassis":');
  w.put(atomsText(r.additional_chassis));
  w.put(',"encap":');
  w.put(atomsText(r.encap));
  w.put(',"additional_encap":');
  w.put(atomsText(r.additional_encap));
  w.put(',"virtual_parent":');
  w.put(atomsText(r.virtual_parent));
  w.put(',"up":');
  w.put(atomsText(r.up));
  w.put('}');
}

/**
 * Two set columns that are usually both empty, and the text up to the next column's value:
 * the whole text as one piece for the usual case.
 */
interface PairText {
  readonly first: string;
  readonly second: string;
  readonly after: string;
  readonly empty: string;
}

function pairText(first: string, second: string, after: string): PairText {
  return { first: `,"${first}":`, second: `,"${second}":`, after, empty: `,"${first}":[],"${second}":[]${after}` };
}

const PARENT_TAG = pairText('parent_port', 'tag', ',"mirror_rules":[],"mac":');
const PARENT_TAG_MIRRORS = pairText('parent_port', 'tag', ',"mirror_rules":');
const SECURITY_NAT = pairText('port_security', 'nat_addresses', ',"external_ids":');
const REQUESTED = pairText('requested_chassis', 'requested_additional_chassis', ',"chassis":');

function putPair(w: TextSink, p: PairText, a: readonly (string | number)[], b: readonly (string | number)[]): void {
  if (a.length === 0 && b.length === 0) {
    w.put(p.empty);
    return;
  }
  w.put(p.first);
  w.put(atomsText(a));
  w.put(p.second);
  w.put(atomsText(b));
  w.put(p.after);
}

/** The text of a binding's columns from requested_chassis on, for a port no chassis claimed nor was requested for. */
const UNCLAIMED_TAIL = ',"requested_chassis":[],"requested_additional_chassis":[],"chassis":[],"additional_chassis":[],"encap":[],"additional_encap":[],"virtual_parent":[],"up":[false]}';

/** canonicalText of an array of strings, numbers or booleans: JSON.stringify writes it so. */
function atomsText(a: readonly (string | number | boolean)[]): string {
  return a.length === 0 ? '[]' : JSON.stringify(a);
}

/** canonicalText of a map, most often empty. */
function mapText(m: ReadonlyMap<string, string>): string {
  return m.size === 0 ? '[]' : canonicalText(m);
}

/** The key of a desired port's info until it is allocated. */
const KEY_UNSET = -1;

/** `i` (a desired port's fresh info) with its tunnel key: set in place, not copied. */
function withKey(i: PortInfo, key: number): PortInfo {
  assert(i.key === KEY_UNSET, `port ${i.name}: a key given twice`);
  (i as { key: number }).key = key;
  return i;
}

/** The LSP of a router port's peer: the lowest-named attached router LSP naming it as router-port. */
function lspPeerOf(db: Database, data: PortsData, lrpName: string): string | undefined {
  const refs = data.routerPortRefs.get(lrpName);
  if (refs === undefined) return undefined;
  for (const name of [...refs].sort()) {
    const lsp = findLsp(db, name);
    if (lsp !== undefined && lsp.type === 'router' && ownerOf(db, 'Logical_Switch', lsp._uuid) !== undefined) return name;
  }
  return undefined;
}

/** The router port `name`, when it is an attached LRP (not shadowed by an LSP of that name). */
function routerPeerOf(db: Database, dps: DatapathsData, name: string | undefined): RouterPeer | undefined {
  if (name === undefined || findLsp(db, name) !== undefined) return undefined;
  const lrp = findLrp(db, name);
  if (lrp === undefined) return undefined;
  const dp = datapathOf(dps, ownerOf(db, 'Logical_Router', lrp._uuid));
  if (dp === undefined) return undefined;
  const networks = extractLrpNetworks(lrp.mac, lrp.networks);
  if (networks === undefined) return undefined;
  const peer: RouterPeer = {
    name, mac: networks.ea, enabled: lrp.enabled.length === 0 || lrp.enabled[0] === true, ipv4: networks.ipv4.map((a) => a.addrS),
    ipv6: networks.ipv6.map((a) => a.addrS), networks, dp: dp.sbUuid, nbUuid: lrp._uuid, chassis: routerChassis(db, dp.nbUuid),
    mcastRelay: relaying(dp.mcast), routables: NO_ROUTABLES,
  };
  if (!lrpHasGateway(lrp)) return peer;
  // assign_routable_addresses: for distributed gateway ports only.
  const gw = routerGateways(db, dp.nbUuid);
  if (!gw.l3dgw.includes(name)) return peer;
  const routables: LportAddresses[] = [];
  for (const entry of routerNatAddresses(db, peer, lrp, gw, true, true)) {
    const parsed = extractLspAddresses(entry);
    if (parsed !== undefined) routables.push(parsed);
  }
  return routables.length === 0 ? peer : { ...peer, routables };
}

const NO_ROUTABLES: readonly LportAddresses[] = Object.freeze([]);

/** Whether switch `nbUuid` has a localnet port (a gateway router's port there sends GARPs). */
function hasLocalnet(db: Database, nbUuid: Uuid): boolean {
  const ls = nbGet<nb.Logical_Switch>(db, 'Logical_Switch', nbUuid);
  return ls !== undefined && ls.ports.some((u) => nbGet<nb.Logical_Switch_Port>(db, 'Logical_Switch_Port', u)?.type === 'localnet');
}

/** Whether switch `nbUuid` has a localnet port with a tag_request (build_gateway_get_l2_hdr_size). */
function hasVlanLocalnet(db: Database, nbUuid: Uuid | undefined): boolean {
  const ls = nbUuid === undefined ? undefined : nbGet<nb.Logical_Switch>(db, 'Logical_Switch', nbUuid);
  return ls !== undefined && ls.ports.some((u) => {
    const lsp = nbGet<nb.Logical_Switch_Port>(db, 'Logical_Switch_Port', u);
    return lsp !== undefined && lsp.type === 'localnet' && lsp.tag_request.length > 0;
  });
}

/** What a switch's port types make of the router ports facing it. */
interface SwitchPortTypes {
  readonly localnet: boolean;
  readonly vtep: boolean;
  readonly vlanLocalnet: boolean;
}

/**
 * NB facts that many ports of one `project` call read, each worked out once: every router LSP
 * reads its peer router's gateway ports (a walk of all the router's ports, so a full run was
 * quadratic in router ports: 40,000 row reads at 200 switches), every router port its link
 * switch's port types (a walk of the switch's ports, three times). The database does not
 * change while `project` runs, and nothing here outlives the call.
 */
class ProjectFacts {
  private readonly gateways = new Map<Uuid, RouterGateways>();
  private readonly portTypes = new Map<Uuid, SwitchPortTypes>();

  constructor(private readonly db: Database) {}

  routerGateways(routerNbUuid: Uuid | undefined): RouterGateways {
    if (routerNbUuid === undefined) return routerGateways(this.db, undefined);
    let gw = this.gateways.get(routerNbUuid);
    if (gw === undefined) this.gateways.set(routerNbUuid, (gw = routerGateways(this.db, routerNbUuid)));
    return gw;
  }

  /** Switch `nbUuid`'s port types (none for no switch). */
  switchPortTypes(nbUuid: Uuid | undefined): SwitchPortTypes {
    if (nbUuid === undefined) return NO_PORT_TYPES;
    let t = this.portTypes.get(nbUuid);
    if (t === undefined) {
      const db = this.db;
      t = { localnet: hasLocalnet(db, nbUuid), vtep: switchHasPortType(db, nbUuid, 'vtep'), vlanLocalnet: hasVlanLocalnet(db, nbUuid) };
      this.portTypes.set(nbUuid, t);
    }
    return t;
  }
}

const NO_PORT_TYPES: SwitchPortTypes = Object.freeze({ localnet: false, vtep: false, vlanLocalnet: false });

/** options:chassis of router `nbUuid`: set on a gateway router. */
function routerChassis(db: Database, nbUuid: Uuid): string | undefined {
  return nbGet<nb.Logical_Router>(db, 'Logical_Router', nbUuid)?.options.get('chassis');
}

function dhcpOptionsOf(db: Database, uuid: Uuid | undefined): DhcpOptionsFacts | undefined {
  if (uuid === undefined) return undefined;
  const row = nbGet<nb.DHCP_Options>(db, 'DHCP_Options', uuid);
  return row === undefined ? undefined : { uuid, cidr: row.cidr, options: row.options };
}

const NO_MAP: ReadonlyMap<string, string> = new Map();
const NO_ADDRS: readonly LportAddresses[] = Object.freeze([]);

function desiredLsp(db: Database, facts: ProjectFacts, dps: DatapathsData, registry: ChassisRegistry, lsp: nb.Logical_Switch_Port, owned: ChassisOwnedColumns | undefined): Desired | undefined {
  const dp = datapathOf(dps, ownerOf(db, 'Logical_Switch', lsp._uuid));
  if (dp === undefined) return undefined;
  const name = lsp.name;
  const sbUuid = portSbUuid(name);
  const isRouter = lsp.type === 'router';
  // NB maps are immutable values: the binding shares them unless it adds a key.
  // A router LSP facing a gateway router is an l3gateway port bound to that chassis.
  const routerPeer = isRouter ? routerPeerOf(db, dps, lsp.options.get('router-port')) : undefined;
  const gatewayChassis = routerPeer?.chassis;
  // The peer LRP's router's distributed gateway ports gate its MAC and GARPs on this switch.
  const peerLrp = routerPeer === undefined ? undefined : nbGet<nb.Logical_Router_Port>(db, 'Logical_Router_Port', routerPeer.nbUuid);
  const peerGw = peerLrp === undefined ? undefined : facts.routerGateways(ownerOf(db, 'Logical_Router', peerLrp._uuid));
  const peerCr = peerLrp === undefined || peerGw === undefined ? undefined : residentCrOf(peerLrp, peerGw);
  let options: ReadonlyMap<string, string> = lsp.options;
  if (isRouter) {
    const rp = lsp.options.get('router-port');
    // Keys in sorted order, as every map value is built.
    const o = new Map<string, string>();
    if (gatewayChassis !== undefined) o.set('l3gateway-chassis', gatewayChassis);
    if (rp !== undefined) o.set('peer', rp);
    options = o;
  } else if (dp.vlanPassthru) {
    options = new Map(lsp.options).set('vlan-passthru', 'true');
  }
  // Where the CMS wants the port bound; not for router ports, which no chassis claims.
  const requested = isRouter ? undefined : requestedChassis(lsp.options.get('requested-chassis'), registry);
  // The chassis that activated the port (a migration's destination) while it has additional chassis.
  const activated = owned?.additional_chassis_activated;
  if (activated !== undefined && requested !== undefined && requested.additional.length > 0) {
    options = new Map([...options, [ACTIVATED_OPTION, activated] as const].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)));
  }
  let ids: ReadonlyMap<string, string> = lsp.external_ids;
  const neutronName = lsp.external_ids.get('neutron:port_name');
  if (neutronName !== undefined && neutronName !== '') ids = new Map(lsp.external_ids).set('name', neutronName);
  const tagRequest = lsp.tag_request[0];
  const tag = lsp.tag.length > 0 ? lsp.tag : lsp.parent_name.length > 0 && tagRequest !== undefined && tagRequest >= 1 ? [tagRequest] : NO_NUMBERS;
  // The Ethernet addresses the switch delivers to this port, as ovn-northd reads addresses:
  // a leading MAC; "dynamic" → the MAC of dynamic_addresses; "router" → the MAC of the peer
  // router port (a router LSP's router-port, when that names an attached router port).
  const macs: string[] = [];
  for (const a of lsp.addresses) {
    const m = leadingMac(a);
    if (m !== undefined) macs.push(m);
    else if (a === 'dynamic' || a.startsWith('dynamic ')) {
      const dyn = lsp.dynamic_addresses[0] === undefined ? undefined : leadingMac(lsp.dynamic_addresses[0]);
      if (dyn !== undefined) macs.push(dyn);
    } else if (a === 'router' && routerPeer !== undefined) {
      macs.push(routerPeer.mac);
    }
  }
  // The parsed addresses, in ovn-northd's order: static entries, the dynamic ones, then the
  // router port's networks for "router".
  const lspAddrs: LportAddresses[] = [];
  let dynamic = false;
  for (const a of lsp.addresses) {
    if (a === 'unknown' || a === 'router') continue;
    if (isDynamicAddress(a)) {
      dynamic = true;
      continue;
    }
    const parsed = extractLspAddresses(a);
    if (parsed !== undefined) lspAddrs.push(parsed);
  }
  const dynText = lsp.dynamic_addresses[0];
  if (dynamic && dynText !== undefined) {
    const parsed = extractLspAddresses(dynText);
    if (parsed !== undefined) lspAddrs.push(parsed);
  }
  if (routerPeer !== undefined && lsp.addresses.includes('router')) lspAddrs.push(routerPeer.networks);
  const info: PortInfo = {
    name, key: KEY_UNSET, kind: 'lsp', nbUuid: lsp._uuid, sbUuid, dp: dp.sbUuid, type: lsp.type, enabled: lspIsEnabled(lsp),
    hasUnknown: lsp.addresses.includes('unknown'), nbUp: lsp.up[0] === true, macs: fitted(macs), portSecurityCount: lsp.port_security.length,
    localnetLearnFdb: lsp.options.get('localnet_learn_fdb') === 'true', routerPeer, options: lsp.options,
    lspAddrs: fitted(lspAddrs), dhcpv4: dhcpOptionsOf(db, lsp.dhcpv4_options[0]),
    dhcpv6: dhcpOptionsOf(db, lsp.dhcpv6_options[0]), networks: undefined,
    peer: undefined, peerIsLrp: false, peerColumnSet: false, gateway: false, crPort: undefined, ipv6RaConfigs: NO_MAP,
    residentCr: peerCr !== undefined && facts.switchPortTypes(dp.nbUuid).localnet ? peerCr : undefined, peerHasVtep: false, peerVlanLocalnet: false,
    vtepHairpinCr: peerLrp !== undefined && peerGw?.l3dgw.includes(peerLrp.name) === true && facts.switchPortTypes(dp.nbUuid).vtep ? crPortName(peerLrp.name) : undefined,
    virtual: virtualPortFacts(lsp, owned), haGroupSet: lsp.ha_chassis_group.length > 0,
  };
  // GARPs for the peer router port's MAC and IPv4s: from the chassis of its distributed gateway
  // port (whatever the switch), or from a gateway router's chassis on a switch with a localnet port.
  // Besides, the addresses of options:nat-addresses as written (when they parse), facing a
  // gateway router or a router with distributed gateway ports (then sent from the chassis of
  // the peer's, or the router's first, gateway port); with "router", the router's NAT and load
  // balancer addresses (routerGarpAddresses). A set column: sorted.
  const natAddresses: string[] = [];
  const natOption = isRouter ? lsp.options.get('nat-addresses') : undefined;
  const dgpCount = peerGw?.l3dgw.length ?? 0;
  if (natOption === 'router' && routerPeer !== undefined && peerLrp !== undefined && peerGw !== undefined && (gatewayChassis !== undefined || dgpCount > 0)) {
    natAddresses.push(...routerNatAddresses(db, routerPeer, peerLrp, peerGw, !boolOption(lsp.options, 'exclude-lb-vips-from-garp', false), false));
  }
  if (natOption !== undefined && natOption !== 'router' && peerLrp !== undefined && peerGw !== undefined && (gatewayChassis !== undefined || dgpCount > 0) &&
    extractLspAddresses(natOption) !== undefined) {
    const cr = dgpCount === 0 ? undefined : crPortName(peerGw.l3dgw.includes(peerLrp.name) ? peerLrp.name : (peerGw.l3dgw[0] as string));
    natAddresses.push(cr === undefined ? natOption : `${natOption} is_chassis_resident(${JSON.stringify(cr)})`);
  }
  if (routerPeer !== undefined && dgpCount > 0) {
    if (peerCr !== undefined) natAddresses.push([routerPeer.mac, ...routerPeer.ipv4, `is_chassis_resident(${JSON.stringify(peerCr)})`].join(' '));
  } else if (gatewayChassis !== undefined && routerPeer !== undefined && facts.switchPortTypes(dp.nbUuid).localnet) {
    natAddresses.push([routerPeer.mac, ...routerPeer.ipv4].join(' '));
  }
  // An external port's HA_Chassis_Group is copied to the SB.
  const haGroup = lsp.type === 'external' ? haGroupOf(db, name, lsp.ha_chassis_group, NO_UUIDS) : undefined;
  return {
    info,
    columns: {
      type: isRouter ? (gatewayChassis !== undefined ? 'l3gateway' : 'patch') : lsp.type, options, nat_addresses: natAddresses.length === 0 ? NO_STRINGS : natAddresses.sort(),
      parent_port: lsp.parent_name, tag, mac: lsp.addresses, port_security: lsp.port_security, external_ids: ids,
      ha_chassis_group: haGroup === undefined ? NO_UUIDS : [haGroupSbUuid(haGroup.name)],
      ...(requested !== undefined && requested.main.length > 0 ? { requested_chassis: requested.main, requested_additional_chassis: requested.additional } : {}),
      ...(lsp.mirror_rules.length > 0 ? { mirror_rules: lsp.mirror_rules.map(mirrorSbUuid).sort() } : {}),
    },
    haGroup,
    link: routerPeer?.dp,
  };
}

/** A MAC as eth_addr_from_string reads it (one or two hex digits a byte), printed as ETH_ADDR_FMT. */
function ethAddr(text: string): string | undefined {
  const m = /^([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})$/.exec(text.trim());
  return m === null ? undefined : m.slice(1).map((x) => x.toLowerCase().padStart(2, '0')).join(':');
}

/** Whether a NAT's external_ip is one IPv4 address (ip_parse_masked with an all-ones mask). */
function isHostIpv4(text: string): boolean {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})(?:\/(32|255\.255\.255\.255))?$/.exec(text);
  return m !== null && m.slice(1, 5).every((x) => Number(x) <= 255);
}

/**
 * The NAT addresses of router port `peer` (ovn-northd's get_nat_addresses): each distributed
 * dnat_and_snat rule (on a router with distributed gateway ports, with logical_port and
 * external_mac) as "MAC IP is_chassis_resident("PORT")"; the other rules' external IPs that are
 * not the port's own, and, with `includeLbIps`, the router's load balancer VIPs (IPv4 then
 * IPv6, in ovn-northd's sset order), in one entry after the port's MAC, restricted to the port's
 * chassisredirect port when it is a distributed gateway port. Rules whose gateway_port is
 * another port, or (on a router with several gateway ports) that name none and are outside the
 * port's networks, are left out. External IPs are IPv4 here, as in get_nat_addresses. What
 * options:nat-addresses=router announces; with `routableOnly`, the port's routable addresses:
 * only rules that are not SNAT with options:add_route, and load balancers with add_route.
 */
function routerNatAddresses(db: Database, peer: RouterPeer, lrp: nb.Logical_Router_Port, gw: RouterGateways, includeLbIps: boolean, routableOnly: boolean): string[] {
  const router = nbGet<nb.Logical_Router>(db, 'Logical_Router', ownerOf(db, 'Logical_Router', lrp._uuid) ?? '');
  if (router === undefined) return [];
  const lbs: nb.Load_Balancer[] = [];
  const lbUuids = new Set<Uuid>(router.load_balancer);
  for (const g of router.load_balancer_group) for (const u of nbGet<nb.Load_Balancer_Group>(db, 'Load_Balancer_Group', g)?.load_balancer ?? []) lbUuids.add(u);
  for (const u of [...lbUuids].sort()) {
    const lb = nbGet<nb.Load_Balancer>(db, 'Load_Balancer', u);
    if (lb !== undefined) lbs.push(lb);
  }
  const hasLbVip = lbs.some((lb) => lb.vips.size > 0);
  if (router.nat.length === 0 && !hasLbVip) return [];
  const out: string[] = [];
  const central: string[] = [];
  for (const u of router.nat) {
    const nat = nbGet<nb.NAT>(db, 'NAT', u);
    if (nat === undefined) continue;
    if (routableOnly && (nat.type === 'snat' || !boolOption(nat.options, 'add_route', false))) continue;
    if (!isHostIpv4(nat.external_ip)) continue;
    const gatewayPort = nat.gateway_port[0];
    if (gw.l3dgw.length > 1 && ((gatewayPort === undefined && findLportAddress(peer.networks, nat.external_ip) === undefined) || (gatewayPort !== undefined && gatewayPort !== lrp._uuid))) continue;
    const logicalPort = nat.logical_port[0];
    const externalMac = nat.external_mac[0];
    if (gw.l3dgw.length > 0 && nat.type === 'dnat_and_snat' && logicalPort !== undefined && externalMac !== undefined) {
      const mac = ethAddr(externalMac);
      if (mac !== undefined) out.push(`${mac} ${nat.external_ip} is_chassis_resident("${logicalPort}")`);
    } else if (!peer.ipv4.includes(nat.external_ip) && !peer.ipv6.includes(nat.external_ip)) {
      central.push(nat.external_ip);
    }
  }
  if (includeLbIps) {
    const v4: string[] = [];
    const v6: string[] = [];
    for (const lb of lbs) {
      const facts = lbFacts(lb);
      if (routableOnly && !facts.routable) continue;
      for (const v of facts.vips) (v.addrV6 ? v6 : v4).push(v.ip);
    }
    central.push(...ssetOrder(v4), ...ssetOrder(v6));
  }
  if (central.length > 0) {
    const resident = gw.l3dgw.includes(lrp.name) ? ` is_chassis_resident(${JSON.stringify(crPortName(lrp.name))})` : '';
    out.push(`${peer.mac} ${central.join(' ')}${resident}`);
  }
  return out;
}

/**
 * The port router port `lrp` is connected to: a peer column naming another attached router
 * port wins (`peerDp` is that port's datapath); otherwise the router LSP that names this port
 * in options:router-port.
 */
function lrpPeerOf(db: Database, dps: DatapathsData, data: PortsData, lrp: nb.Logical_Router_Port): { peer: string | undefined; peerIsLrp: boolean; peerDp: Uuid | undefined } {
  const peerName = lrp.peer[0];
  if (peerName !== undefined && findLsp(db, peerName) === undefined) {
    const other = findLrp(db, peerName);
    const peerDp = other === undefined ? undefined : datapathOf(dps, ownerOf(db, 'Logical_Router', other._uuid))?.sbUuid;
    if (peerDp !== undefined) return { peer: peerName, peerIsLrp: true, peerDp };
  }
  return { peer: lspPeerOf(db, data, lrp.name), peerIsLrp: false, peerDp: undefined };
}

function desiredLrp(db: Database, facts: ProjectFacts, dps: DatapathsData, data: PortsData, lrp: nb.Logical_Router_Port, owned: ChassisOwnedColumns | undefined): Desired | undefined {
  const dp = datapathOf(dps, ownerOf(db, 'Logical_Router', lrp._uuid));
  if (dp === undefined) return undefined;
  const name = lrp.name;
  const sbUuid = portSbUuid(name);
  const { peer, peerIsLrp, peerDp } = lrpPeerOf(db, dps, data, lrp);
  const peerName = lrp.peer[0];
  // A gateway router's ports are l3gateway ports bound to its chassis; a gateway port with a
  // peer names its chassisredirect port (even on a gateway router). Keys in sorted order.
  const options = new Map<string, string>();
  const chassis = routerChassis(db, dp.nbUuid);
  if (peer !== undefined && lrpHasGateway(lrp)) options.set('chassis-redirect-port', crPortName(name));
  if (chassis !== undefined) options.set('l3gateway-chassis', chassis);
  if (peer !== undefined) options.set('peer', peer);
  const networks = extractLrpNetworks(lrp.mac, lrp.networks);
  const pdList = owned?.ipv6_ra_pd_list;
  if (peer !== undefined && peerName === undefined && networks !== undefined && networks.ipv6.length > 0) ipv6Options(lrp, networks, options, pdList);
  // What the chassis's prefix delegation wrote stays, on any router port (ovn-northd keeps it).
  if (pdList !== undefined) options.set(PD_LIST_OPTION, pdList);
  // Its ARP replies come from one chassis when its link's switch has a localnet port.
  const peerLsp = peer === undefined || peerIsLrp ? undefined : findLsp(db, peer);
  const peerSwitch = peerLsp === undefined ? undefined : ownerOf(db, 'Logical_Switch', peerLsp._uuid);
  const peerTypes = facts.switchPortTypes(peerSwitch);
  const residentCr = peerTypes.localnet ? residentCrOf(lrp, facts.routerGateways(dp.nbUuid)) : undefined;
  const info: PortInfo = {
    name, key: KEY_UNSET, kind: 'lrp', nbUuid: lrp._uuid, sbUuid, dp: dp.sbUuid, type: '', enabled: lrp.enabled.length === 0 || lrp.enabled[0] === true,
    hasUnknown: false, nbUp: false, macs: [lrp.mac], portSecurityCount: 0, localnetLearnFdb: false, routerPeer: undefined, options: lrp.options,
    lspAddrs: NO_ADDRS, dhcpv4: undefined, dhcpv6: undefined, networks, peer, peerIsLrp, peerColumnSet: peerName !== undefined,
    gateway: lrpHasGateway(lrp), crPort: lrpHasGateway(lrp) && chassis === undefined ? crPortName(name) : undefined, ipv6RaConfigs: lrp.ipv6_ra_configs, residentCr, peerHasVtep: peerTypes.vtep,
    peerVlanLocalnet: peerTypes.vlanLocalnet, vtepHairpinCr: undefined, virtual: undefined, haGroupSet: false,
  };
  return {
    info,
    columns: { type: chassis !== undefined ? 'l3gateway' : 'patch', options: sortedMap(options), parent_port: NO_STRINGS, tag: NO_NUMBERS, mac: [[lrp.mac, ...lrp.networks].join(' ')], port_security: NO_STRINGS, external_ids: lrp.external_ids },
    link: peerDp,
  };
}

/** RFC 4861's limits on the advertisement intervals (seconds), as ovn-northd applies them. */
const RA_MAX_INTERVAL = { def: 600, min: 4, max: 1800 } as const;
const RA_MIN_INTERVAL_MIN = 3;

/**
 * The IPv6 options of a router port with a switch peer (ovn_update_ipv6_options): prefix
 * delegation asked for (options:prefix_delegation, options:prefix, on an enabled port), and for
 * ipv6_ra_configs:send_periodic the router advertisement the chassis send unasked
 * (copy_ra_to_sb): mode, intervals, MTU, prefixes, source MAC and link-local address, DNS
 * servers and search list, preference and route information.
 */
function ipv6Options(lrp: nb.Logical_Router_Port, networks: LportAddresses, options: Map<string, string>, pdList: string | undefined): void {
  const enabled = lrp.enabled.length === 0 || lrp.enabled[0] === true;
  if (enabled && boolOption(lrp.options, 'prefix_delegation', false)) options.set('ipv6_prefix_delegation', 'true');
  if (enabled && boolOption(lrp.options, 'prefix', false)) options.set('ipv6_prefix', 'true');
  const ra = lrp.ipv6_ra_configs;
  const mode = ra.get('address_mode');
  if ((mode !== 'slaac' && mode !== 'dhcpv6_stateful' && mode !== 'dhcpv6_stateless') || !boolOption(ra, 'send_periodic', false)) return;
  options.set('ipv6_ra_send_periodic', 'true');
  options.set('ipv6_ra_address_mode', mode);
  const max = Math.max(RA_MAX_INTERVAL.min, Math.min(RA_MAX_INTERVAL.max, optionInt(ra, 'max_interval', RA_MAX_INTERVAL.def)));
  options.set('ipv6_ra_max_interval', String(max));
  const minDefault = max >= 9 ? Math.trunc(max / 3) : Math.trunc((max * 3) / 4);
  const min = Math.max(RA_MIN_INTERVAL_MIN, Math.min(Math.trunc((max * 3) / 4), optionInt(ra, 'min_interval', minDefault)));
  options.set('ipv6_ra_min_interval', String(min));
  const mtu = optionInt(ra, 'mtu', 0);
  if (mtu >= 1280) options.set('ipv6_ra_mtu', String(mtu));
  const prefixes: string[] = [];
  for (const a of networks.ipv6) {
    if (a.isLla) options.set('ipv6_ra_src_addr', a.addrS);
    else prefixes.push(`${a.networkS}/${a.plen}`);
  }
  // The delegated prefix is advertised too, as the chassis wrote it; one trailing space goes
  // (ds_chomp).
  let text = prefixes.map((x) => `${x} `).join('') + (pdList ?? '');
  if (text.endsWith(' ')) text = text.slice(0, -1);
  options.set('ipv6_ra_prefixes', text);
  for (const [from, to] of [['rdnss', 'ipv6_ra_rdnss'], ['dnssl', 'ipv6_ra_dnssl']] as const) {
    const v = ra.get(from);
    if (v !== undefined) options.set(to, v);
  }
  options.set('ipv6_ra_src_eth', networks.ea);
  const prf = ra.get('router_preference');
  options.set('ipv6_ra_prf', prf === 'HIGH' || prf === 'LOW' ? prf : 'MEDIUM');
  const routeInfo = ra.get('route_info');
  if (routeInfo !== undefined) options.set('ipv6_ra_route_info', routeInfo);
}

/** A map with its keys in order, as the SB keeps every map here. */
function sortedMap(m: ReadonlyMap<string, string>): Map<string, string> {
  return new Map([...m].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/**
 * The chassisredirect binding of distributed gateway port `lrpName` (none on a gateway router):
 * the port's MAC and networks, options:distributed-port, its redirect-type, and always-redirect
 * unless the router has distributed NAT, the port's switch has vtep ports or redirect-type is
 * bridged; it names the port's SB HA_Chassis_Group.
 */
function desiredCr(db: Database, facts: ProjectFacts, dps: DatapathsData, data: PortsData, name: string, lrpName: string): Desired | undefined {
  const lrp = findLrp(db, lrpName);
  if (lrp === undefined || !lrpHasGateway(lrp)) return undefined;
  const router = ownerOf(db, 'Logical_Router', lrp._uuid);
  const dp = datapathOf(dps, router);
  if (dp === undefined || routerChassis(db, dp.nbUuid) !== undefined) return undefined;
  const gw = facts.routerGateways(dp.nbUuid);
  // Its peer's switch (an LRP peer is a router: no vtep ports there).
  const { peer, peerIsLrp } = lrpPeerOf(db, dps, data, lrp);
  const peerLspRow = peer === undefined || peerIsLrp ? undefined : findLsp(db, peer);
  const peerSwitch = peerLspRow === undefined ? undefined : ownerOf(db, 'Logical_Switch', peerLspRow._uuid);
  const redirectType = lrp.options.get('redirect-type');
  const options = new Map<string, string>();
  if (!gw.hasDistributedNat && !facts.switchPortTypes(peerSwitch).vtep && redirectType !== 'bridged') options.set('always-redirect', 'true');
  options.set('distributed-port', lrpName);
  if (redirectType !== undefined) options.set('redirect-type', redirectType);
  const haGroup = haGroupOf(db, lrpName, lrp.ha_chassis_group, lrp.gateway_chassis);
  const info: PortInfo = {
    name, key: KEY_UNSET, kind: 'lrp', nbUuid: lrp._uuid, sbUuid: portSbUuid(name), dp: dp.sbUuid, type: 'chassisredirect', enabled: lrp.enabled.length === 0 || lrp.enabled[0] === true,
    hasUnknown: false, nbUp: false, macs: [lrp.mac], portSecurityCount: 0, localnetLearnFdb: false, routerPeer: undefined, options: lrp.options,
    lspAddrs: NO_ADDRS, dhcpv4: undefined, dhcpv6: undefined, networks: extractLrpNetworks(lrp.mac, lrp.networks), peer: undefined, peerIsLrp: false,
    peerColumnSet: false, gateway: false, crPort: undefined, ipv6RaConfigs: NO_MAP, residentCr: undefined, peerHasVtep: false, peerVlanLocalnet: false, vtepHairpinCr: undefined,
    virtual: undefined, haGroupSet: false,
  };
  return {
    info,
    columns: {
      type: 'chassisredirect', options, parent_port: NO_STRINGS, tag: NO_NUMBERS, mac: [[lrp.mac, ...lrp.networks].join(' ')], port_security: NO_STRINGS,
      external_ids: lrp.external_ids, ha_chassis_group: haGroup === undefined ? NO_UUIDS : [haGroupSbUuid(haGroup.name)],
    },
    haGroup,
  };
}

/** Points port `name`'s binding at SB group `g` (or none), writing and dropping group rows. */
function setHaGroup(data: PortsData, chassis: SbChassisData, name: string, g: HaGroupDesired | undefined, out: PortsChange): void {
  const before = data.haGroupOfPort.get(name);
  if (g !== undefined) {
    data.haGroupOfPort.set(name, g.name);
    let users = data.haGroupUsers.get(g.name);
    if (users === undefined) data.haGroupUsers.set(g.name, (users = new Set()));
    users.add(name);
    writeHaGroup(data, chassis, g, out);
  } else {
    data.haGroupOfPort.delete(name);
  }
  if (before === undefined || before === g?.name) return;
  const users = data.haGroupUsers.get(before);
  users?.delete(name);
  if (users !== undefined && users.size > 0) return;
  data.haGroupUsers.delete(before);
  data.haGroupTable.remove(haGroupSbUuid(before), out.sb);
  for (const u of data.haMembers.get(before) ?? []) data.haChassisTable.remove(u, out.sb);
  data.haMembers.delete(before);
  indexMemberNames(data, before, data.haDesired.get(before), undefined);
  data.haDesired.delete(before);
  data.refChassis.touchGroup(before);
}

/**
 * Writes group `g`'s rows: its members with their chassis (`chassis`), and the group with its
 * ref_chassis as last settled (the node's finish settles it again when what it reads changed;
 * a change in the number of members is such a change).
 */
function writeHaGroup(data: PortsData, chassis: SbChassisData, g: HaGroupDesired, out: PortsChange): void {
  const { group, members } = haGroupRows(g, chassis, data.refChassis.refOf(g.name));
  const old = data.haMembers.get(g.name) ?? NO_UUIDS;
  const now = new Set(members.map((m) => m._uuid));
  for (const u of old) if (!now.has(u)) data.haChassisTable.remove(u, out.sb);
  for (const m of members) data.haChassisTable.put(m, out.sb);
  data.haMembers.set(g.name, [...now]);
  data.haGroupTable.put(group, out.sb);
  if (old.length !== now.size) data.refChassis.touchGroup(g.name);
  const prev = data.haDesired.get(g.name);
  if (prev !== g) indexMemberNames(data, g.name, prev, g);
  data.haDesired.set(g.name, g);
}

/** Keeps the index of groups by their members' chassis names in step with a group's rewrite. */
function indexMemberNames(data: PortsData, group: string, before: HaGroupDesired | undefined, after: HaGroupDesired | undefined): void {
  for (const m of before?.members ?? []) dropRef(data.haGroupsByChassisName, m.chassisName, group);
  for (const m of after?.members ?? []) addRef(data.haGroupsByChassisName, m.chassisName, group);
}

/** What a bound port contributes to ref_chassis (ha-ref-chassis.ts), undefined when nothing. */
function refContribution(info: PortInfo, d: Desired, owned: ChassisOwnedColumns | undefined): RefContribution | undefined {
  const chassis = info.kind === 'lsp' ? owned?.chassis?.[0] : undefined;
  const crGroup = info.type === 'chassisredirect' ? d.haGroup?.name : undefined;
  if (chassis === undefined && d.link === undefined && crGroup === undefined) return undefined;
  return {
    bound: chassis === undefined ? undefined : [info.dp, chassis],
    link: d.link === undefined ? undefined : [info.dp, d.link],
    crGroup: crGroup === undefined ? undefined : [info.dp, crGroup],
  };
}

/** Keeps the router-port, peer and requested-chassis reverse indexes in step with the NB rows named `name`. */
function reindex(data: PortsData, name: string, lsp: nb.Logical_Switch_Port | undefined, lrp: nb.Logical_Router_Port | undefined): void {
  const oldTarget = data.routerPortOf.get(name);
  if (oldTarget !== undefined) dropRef(data.routerPortRefs, oldTarget, name);
  data.routerPortOf.delete(name);
  const target = lsp?.options.get('router-port');
  if (target !== undefined) {
    data.routerPortOf.set(name, target);
    addRef(data.routerPortRefs, target, name);
  }
  const oldPeer = data.peerOf.get(name);
  if (oldPeer !== undefined) dropRef(data.peerRefs, oldPeer, name);
  data.peerOf.delete(name);
  const peer = lrp?.peer[0];
  if (peer !== undefined) {
    data.peerOf.set(name, peer);
    addRef(data.peerRefs, peer, name);
  }
  for (const entry of data.requestedOf.get(name) ?? []) dropRef(data.requestedRefs, entry, name);
  data.requestedOf.delete(name);
  const entries = requestedEntries(lsp?.options.get('requested-chassis'));
  if (entries.length > 0) {
    data.requestedOf.set(name, entries);
    for (const entry of entries) addRef(data.requestedRefs, entry, name);
  }
}

function spaceFor(data: PortsData, dp: Uuid): KeySpace {
  let a = data.keys.get(dp);
  if (a === undefined) data.keys.set(dp, (a = new KeySpace(PORT_KEY_MIN, PORT_KEY_MAX)));
  a.setMax(data.vxlan ? PORT_KEY_MAX_VXLAN : PORT_KEY_MAX);
  return a;
}

/** options:requested-tnl-key of an LSP or LRP (a chassisredirect port asks for none; in VXLAN mode, none from 2048). */
function requestedKeyOf(d: Desired, vxlan: boolean): number {
  const key = d.info.type === 'chassisredirect' ? 0 : optionInt(d.info.options, 'requested-tnl-key', 0);
  return vxlan && key > PORT_KEY_MAX_VXLAN ? 0 : key;
}

/**
 * The key spaces' part of `project`, before anything else changes: the ports in `names` leave
 * the datapath they leave, join the one they join (with their key from before, in a recompute)
 * and state their requests; then each space touched settles (KeySpace). Returns the ports
 * whose key changed.
 */
function settleKeys(data: PortsData, names: readonly string[], desired: readonly (Desired | undefined)[]): string[] {
  const touched = new Set<Uuid>();
  for (let i = 0; i < names.length; i++) {
    const name = names[i] as string;
    const d = desired[i];
    const was = data.byName.get(name)?.dp ?? data.keyless.get(name);
    if (was !== undefined && was !== d?.info.dp) {
      spaceFor(data, was).remove(name);
      data.keyless.delete(name);
      touched.add(was);
    }
    if (d === undefined) continue;
    const space = spaceFor(data, d.info.dp);
    if (!space.has(name)) {
      space.add(name);
      const k = data.preferredKeys.get(`${d.info.dp} ${name}`);
      if (k !== undefined) space.keep(name, k);
    }
    space.request(name, requestedKeyOf(d, data.vxlan));
    touched.add(d.info.dp);
  }
  const changed: string[] = [];
  for (const dp of touched) {
    const space = data.keys.get(dp) as KeySpace;
    for (const name of space.settle()) data.keyless.set(name, dp);
    for (const name of space.takeChanged()) {
      if (space.keyOf(name) !== undefined) data.keyless.delete(name);
      changed.push(name);
    }
    if (space.size === 0) data.keys.delete(dp);
  }
  return changed;
}

/**
 * Projects every name in `primary`, plus the names whose binding depends on them (the router
 * port a router LSP names, the router ports that name them as peer). Releases come before
 * allocations, and new ports take keys in name order.
 */
function project(db: Database, dps: DatapathsData, owned: SbOwnedData, registry: ChassisRegistry, data: PortsData, primary: ReadonlySet<string>, out: PortsChange, switchesTouched: ReadonlySet<Uuid> = new Set()): void {
  const dirty = new Set(primary);
  // An array, iterated by index: this runs once per run over every name of a full run, too
  // rarely to be optimized, and an unoptimized for-of over a set allocates a result per step.
  const primaryNames = [...primary];
  for (let i = 0; i < primaryNames.length; i++) {
    const name = primaryNames[i] as string;
    const before = data.routerPortOf.get(name);
    if (before !== undefined) dirty.add(before).add(crPortName(before));
  }
  // The NB rows of the primary names, looked up once: the loops below and the projection
  // read them again (the database does not change while this runs).
  const lspOf = new Map<string, nb.Logical_Switch_Port | undefined>();
  const lrpOf = new Map<string, nb.Logical_Router_Port | undefined>();
  for (let i = 0; i < primaryNames.length; i++) {
    const name = primaryNames[i] as string;
    const lsp = findLsp(db, name);
    const lrp = findLrp(db, name);
    lspOf.set(name, lsp);
    lrpOf.set(name, lrp);
    reindex(data, name, lsp, lrp);
  }
  // A localnet port coming, going or changing on a switch changes the GARP addresses
  // (nat_addresses) of the gateway routers' ports there, whether the router ports facing it
  // answer ARP from their gateway chassis only, and (by its tag_request) the header size their
  // gateway_mtu checks count; a vtep port changes the redirect options of the distributed
  // gateway ports facing it.
  const gatedTypes = ['localnet', 'vtep'];
  for (let i = 0; i < primaryNames.length; i++) {
    const name = primaryNames[i] as string;
    const old = data.byName.get(name);
    const lsp = lspOf.get(name);
    if (!gatedTypes.includes(old?.type ?? '') && !gatedTypes.includes(lsp?.type ?? '')) continue;
    const now = lsp === undefined ? undefined : ownerOf(db, 'Logical_Switch', lsp._uuid);
    for (const dp of [old?.dp, now === undefined ? undefined : datapathSbUuid(now)]) {
      for (const r of dp === undefined ? [] : data.routersByDp.get(dp) ?? []) {
        dirty.add(r);
        const lrp = data.routerPortOf.get(r);
        if (lrp !== undefined) dirty.add(lrp).add(crPortName(lrp));
      }
    }
  }
  // A router port becoming (or ceasing to be) a distributed gateway port changes its router's
  // gateway ports: every port of the router (reside-on-redirect-chassis) and the router LSPs
  // facing them. Every router port has its chassisredirect name projected with it.
  for (let i = 0; i < primaryNames.length; i++) {
    const name = primaryNames[i] as string;
    const old = data.byName.get(name);
    const lrp = lrpOf.get(name);
    if (lrp === undefined && old?.kind !== 'lrp') continue;
    if (old?.type !== 'chassisredirect') dirty.add(crPortName(name));
    if (old?.gateway !== true && (lrp === undefined || !lrpHasGateway(lrp))) continue;
    const router = lrp === undefined ? undefined : ownerOf(db, 'Logical_Router', lrp._uuid);
    for (const dp of [old?.dp, router === undefined ? undefined : datapathSbUuid(router)]) {
      for (const sibling of dp === undefined ? [] : data.byDp.get(dp) ?? []) {
        dirty.add(sibling);
        for (const lsp of data.routerPortRefs.get(sibling) ?? []) dirty.add(lsp);
      }
    }
  }
  for (let i = 0; i < primaryNames.length; i++) {
    const name = primaryNames[i] as string;
    const after = data.routerPortOf.get(name);
    if (after !== undefined) dirty.add(after).add(crPortName(after));
    // A router port naming this one as peer: its chassisredirect port's redirect options
    // read the peer's switch.
    for (const lrp of data.peerRefs.get(name) ?? []) dirty.add(lrp).add(crPortName(lrp));
    for (const lsp of data.routerPortRefs.get(name) ?? []) dirty.add(lsp);
  }
  const facts = new ProjectFacts(db);
  const desiredOf = (name: string): Desired | undefined => {
    const lsp = lspOf.has(name) ? lspOf.get(name) : findLsp(db, name);
    if (lsp !== undefined) return desiredLsp(db, facts, dps, registry, lsp, owned.get(name));
    const lrp = lrpOf.has(name) ? lrpOf.get(name) : findLrp(db, name);
    if (lrp !== undefined) return desiredLrp(db, facts, dps, data, lrp, owned.get(name));
    const gatewayPort = lrpOfCrName(name);
    return gatewayPort === undefined ? undefined : desiredCr(db, facts, dps, data, name, gatewayPort);
  };
  let names = [...dirty].sort();
  // desired[i] is what names[i] should be bound as (undefined: not bound).
  let desired: (Desired | undefined)[] = names.map(desiredOf);
  // Keys first: a port whose key another's request took is projected too (rewritten with its
  // new key), and one left without a key (its datapath's keys exhausted) is not bound.
  const rekeyed = settleKeys(data, names, desired).filter((name) => !dirty.has(name));
  if (rekeyed.length > 0) {
    const known = new Map(names.map((name, i) => [name, desired[i]] as const));
    for (const name of rekeyed) dirty.add(name);
    names = [...dirty].sort();
    desired = names.map((name) => (known.has(name) ? known.get(name) : desiredOf(name)));
  }
  for (let i = 0; i < names.length; i++) {
    const d = desired[i];
    if (d !== undefined && data.keys.get(d.info.dp)?.keyOf(names[i] as string) === undefined) desired[i] = undefined;
  }
  const note = (name: string, old: PortInfo | undefined, now: PortInfo | undefined): void => {
    const prev = out.ports.get(name);
    out.ports.set(name, { old: prev === undefined ? old : prev.old, new: now });
  };
  // Releases: ports gone, or moved to another datapath (whose binding row stays, to be rewritten).
  const moved = new Set<string>();
  for (let i = 0; i < names.length; i++) {
    const name = names[i] as string;
    const old = data.byName.get(name);
    const d = desired[i];
    if (old === undefined || (d !== undefined && d.info.dp === old.dp)) continue;
    data.byName.delete(name);
    setRouterMember(data, old, false);
    setVirtualRefs(data, old, false);
    data.byDp.get(old.dp)?.delete(name);
    if (data.byDp.get(old.dp)?.size === 0) data.byDp.delete(old.dp);
    data.refChassis.setPort(name, undefined);
    if (d === undefined) {
      data.table.remove(old.sbUuid, out.sb);
      setHaGroup(data, registry.byName, name, undefined, out);
    } else moved.add(name);
    note(name, old, undefined);
  }
  for (let i = 0; i < names.length; i++) {
    const name = names[i] as string;
    const d = desired[i];
    if (d === undefined) continue;
    const old = data.byName.get(name);
    const info = withKey(d.info, data.keys.get(d.info.dp)?.keyOf(name) as number);
    if (old !== undefined) {
      setRouterMember(data, old, false);
      setVirtualRefs(data, old, false);
    }
    data.byName.set(name, info);
    setRouterMember(data, info, true);
    setVirtualRefs(data, info, true);
    let members = data.byDp.get(info.dp);
    if (members === undefined) data.byDp.set(info.dp, (members = new Set()));
    members.add(name);
    // A port that was not bound (nor moved) has no row: one insert instead of a lookup first.
    const reported = owned.get(name);
    const row = bindingRow(info, d.columns, reported);
    if (old === undefined && !moved.has(name)) data.table.insert(row, out.sb);
    else data.table.put(row, out.sb);
    setHaGroup(data, registry.byName, name, d.haGroup, out);
    data.refChassis.setPort(name, refContribution(info, d, reported));
    if (old === undefined || !samePortInfo(old, info)) note(name, old, info);
  }
  updateAllRouter(db, dps, data, out, switchesTouched);
}

function setRouterMember(data: PortsData, p: PortInfo, present: boolean): void {
  if (p.routerPeer === undefined) return;
  let set = data.routersByDp.get(p.dp);
  if (set === undefined) data.routersByDp.set(p.dp, (set = new Set()));
  if (present) set.add(p.name);
  else set.delete(p.name);
  if (set.size === 0) data.routersByDp.delete(p.dp);
}

/** Files (or unfiles) a virtual port under the parents it names. */
function setVirtualRefs(data: PortsData, p: PortInfo, present: boolean): void {
  for (const parent of virtualPortRefs(p.virtual)) {
    if (present) addRef(data.virtualRefs, parent, p.name);
    else dropRef(data.virtualRefs, parent, p.name);
  }
}

/**
 * Re-evaluates "every port of the switch is a router port" (OVN: n_router_ports == n_ports)
 * for the switches whose ports changed in this run and those whose ports column changed.
 */
function updateAllRouter(db: Database, dps: DatapathsData, data: PortsData, out: PortsChange, switchesTouched: ReadonlySet<Uuid>): void {
  const touched = new Set<Uuid>(switchesTouched);
  for (const { old, new: now } of out.ports.values()) {
    if (old !== undefined) touched.add(old.dp);
    if (now !== undefined) touched.add(now.dp);
  }
  for (const dp of [...touched].sort()) {
    const info = dps.bySb.get(dp);
    const ls = info === undefined || info.kind !== 'switch' ? undefined : nbGet<nb.Logical_Switch>(db, 'Logical_Switch', info.nbUuid);
    const flag = ls !== undefined && (data.routersByDp.get(dp)?.size ?? 0) === ls.ports.length;
    if ((data.allRouter.get(dp) ?? false) === flag) continue;
    if (flag) data.allRouter.set(dp, true);
    else data.allRouter.delete(dp);
    out.allRouterFlipped.add(dp);
  }
}

function samePortInfo(a: PortInfo, b: PortInfo): boolean {
  return sameData(a, b);
}

function namesOfPortSet(db: Database, table: string, uuids: Iterable<Uuid>, into: Set<string>): void {
  for (const u of uuids) {
    const row = nbGet<{ name: string }>(db, table, u);
    if (row !== undefined) into.add(row.name);
  }
}

/** The names of the LSPs and LRPs referring to row `uuid`. */
function namesOfReferrers(db: Database, uuid: Uuid, into: Set<string>): void {
  const referrers = [...db.strongReferrers(uuid).keys()];
  namesOfPortSet(db, 'Logical_Router_Port', referrers, into);
  namesOfPortSet(db, 'Logical_Switch_Port', referrers, into);
}

/** The chassisredirect names of router `nbUuid`'s ports. */
function crNamesOfRouter(db: Database, nbUuid: Uuid, into: Set<string>): void {
  const names = new Set<string>();
  namesOfPortSet(db, 'Logical_Router_Port', nbGet<nb.Logical_Router>(db, 'Logical_Router', nbUuid)?.ports ?? [], names);
  for (const n of names) into.add(crPortName(n));
}

/** The switch ports (options:router-port) facing a port of router `nbUuid`. */
function switchPortsFacingRouter(db: Database, data: PortsData, nbUuid: Uuid, into: Set<string>): void {
  const lrps = new Set<string>();
  namesOfPortSet(db, 'Logical_Router_Port', nbGet<nb.Logical_Router>(db, 'Logical_Router', nbUuid)?.ports ?? [], lrps);
  for (const lrp of lrps) for (const lsp of data.routerPortRefs.get(lrp) ?? []) into.add(lsp);
}

/** The registered Chassis, by name and by hostname, as the node's inputs hold them. */
function registryOf(inputs: NodeInputs): ChassisRegistry {
  return { byName: inputs.data<SbChassisData>('sb_chassis'), byHostname: inputs.data<SbHostnamesData>('sb_hostnames') };
}

/** The LSPs whose options:requested-chassis names one of `entries` (Chassis names or hostnames). */
function requestingPorts(data: PortsData, entries: Iterable<string>): Set<string> {
  const out = new Set<string>();
  for (const e of entries) for (const name of data.requestedRefs.get(e) ?? []) out.add(name);
  return out;
}

export function portsNode(): EngineNode<PortsData, PortsChange> {
  return {
    name: 'ports',
    inputs: ['nb', 'datapaths', 'sb_owned', 'sb_chassis', 'sb_hostnames', 'sb_encaps'],
    init: () => ({
      vxlan: false,
      byName: new Map(), byDp: new Map(), keys: new Map(), keyless: new Map(), table: new SbTable('Port_Binding'), routerPortOf: new Map(),
      routerPortRefs: new Map(), peerOf: new Map(), peerRefs: new Map(), preferredKeys: new Map(), routersByDp: new Map(),
      allRouter: new Map(), haGroupTable: new SbTable('HA_Chassis_Group'), haChassisTable: new SbTable('HA_Chassis'), haGroupOfPort: new Map(),
      haGroupUsers: new Map(), haMembers: new Map(), haDesired: new Map(), haGroupsByChassisName: new Map(), refChassis: new HaRefChassis(),
      virtualRefs: new Map(), requestedOf: new Map(), requestedRefs: new Map(),
    }),
    newChange: () => ({ sb: new SbChangeSet(), ports: new Map(), allRouterFlipped: new Set() }),
    isEmpty: (c) => c.sb.size === 0 && c.ports.size === 0 && c.allRouterFlipped.size === 0,
    recompute(data: PortsData, inputs: NodeInputs, out: PortsChange): void {
      out.sb.maybeTrackWhole(data.table);
      out.sb.maybeTrackWhole(data.haGroupTable);
      out.sb.maybeTrackWhole(data.haChassisTable);
      const db = inputs.data<Database>('nb');
      data.vxlan = inputs.data<SbEncapsData>('sb_encaps').vxlan;
      const all = new Set<string>(data.byName.keys());
      for (const n of data.routerPortOf.keys()) all.add(n);
      for (const n of data.peerOf.keys()) all.add(n);
      for (const lsp of nbRows<nb.Logical_Switch_Port>(db, 'Logical_Switch_Port').values()) all.add(lsp.name);
      for (const lrp of nbRows<nb.Logical_Router_Port>(db, 'Logical_Router_Port').values()) all.add(lrp.name);
      const dps = inputs.data<DatapathsData>('datapaths');
      const switches = new Set<Uuid>(data.allRouter.keys());
      for (const info of dps.byNb.values()) if (info.kind === 'switch') switches.add(info.sbUuid);
      project(db, dps, inputs.data<SbOwnedData>('sb_owned'), registryOf(inputs), data, all, out, switches);
    },
    handlers: {
      nb(data: PortsData, change: unknown, inputs: NodeInputs, out: PortsChange) {
        const db = inputs.data<Database>('nb');
        const dirty = new Set<string>();
        const switchesTouched = new Set<Uuid>();
        for (const c of (change as DbDelta).changes) {
          const oldRow = c.kind === 'insert' ? undefined : (c.old as Row);
          const newRow = c.kind === 'delete' ? undefined : (c.new as Row);
          switch (c.table) {
            case 'Logical_Switch_Port':
            case 'Logical_Router_Port':
              if (oldRow !== undefined) dirty.add((oldRow as unknown as { name: string }).name);
              if (newRow !== undefined) dirty.add((newRow as unknown as { name: string }).name);
              break;
            case 'Logical_Switch':
            case 'Logical_Router': {
              const portTable = c.table === 'Logical_Switch' ? 'Logical_Switch_Port' : 'Logical_Router_Port';
              const oldPorts = (oldRow as unknown as { ports: readonly Uuid[] } | undefined)?.ports ?? [];
              const newPorts = (newRow as unknown as { ports: readonly Uuid[] } | undefined)?.ports ?? [];
              // The ports that joined or left: a merge of the sorted sets, not every port.
              const moved: Uuid[] = [];
              forEachRefChange((db.table(c.table).schema.columns.get('ports') as ColumnSchema).type, oldPorts, newPorts, (u) => moved.push(u));
              namesOfPortSet(db, portTable, moved, dirty);
              if (c.table === 'Logical_Switch' && oldPorts.length !== newPorts.length) switchesTouched.add(datapathSbUuid(c.uuid));
              // A router becoming (or ceasing to be) a gateway router changes its ports' type.
              const chassisOf = (r: Row | undefined): string | undefined => (r as unknown as nb.Logical_Router | undefined)?.options.get('chassis');
              if (c.table === 'Logical_Router' && chassisOf(oldRow) !== chassisOf(newRow)) namesOfPortSet(db, portTable, newPorts, dirty);
              // Its NAT rules decide whether its gateway ports always redirect.
              const natOf = (r: Row | undefined): readonly Uuid[] => (r as unknown as nb.Logical_Router | undefined)?.nat ?? [];
              if (c.table === 'Logical_Router' && !sameData(natOf(oldRow), natOf(newRow))) crNamesOfRouter(db, c.uuid, dirty);
              // Its NAT rules and load balancers are what nat-addresses=router announces.
              const lbsOf = (r: Row | undefined): readonly (readonly Uuid[])[] => {
                const lr = r as unknown as nb.Logical_Router | undefined;
                return [lr?.nat ?? [], lr?.load_balancer ?? [], lr?.load_balancer_group ?? []];
              };
              if (c.table === 'Logical_Router' && !sameData(lbsOf(oldRow), lbsOf(newRow))) switchPortsFacingRouter(db, data, c.uuid, dirty);
              break;
            }
            case 'NAT': {
              const router = ownerOf(db, 'Logical_Router', c.uuid);
              if (router !== undefined) {
                crNamesOfRouter(db, router, dirty);
                switchPortsFacingRouter(db, data, router, dirty);
              }
              break;
            }
            case 'Load_Balancer':
            case 'Load_Balancer_Group':
              // Routers announce their VIPs (nat-addresses=router): those naming the row, directly
              // or through a group (a deleted row's referrers changed their own row).
              for (const u of db.weakReferrers(c.uuid).keys()) {
                if (nbGet(db, 'Logical_Router', u) !== undefined) switchPortsFacingRouter(db, data, u, dirty);
                else for (const r of db.strongReferrers(u).keys()) switchPortsFacingRouter(db, data, r, dirty);
              }
              for (const u of db.strongReferrers(c.uuid).keys()) switchPortsFacingRouter(db, data, u, dirty);
              break;
            case 'Gateway_Chassis':
            case 'HA_Chassis_Group':
              // The ports naming them (a deleted row's referrers changed their own row).
              namesOfReferrers(db, c.uuid, dirty);
              break;
            case 'HA_Chassis':
              for (const group of db.strongReferrers(c.uuid).keys()) namesOfReferrers(db, group, dirty);
              break;
            case 'DHCP_Options':
              // The LSPs naming these options, as dhcpv4_options or dhcpv6_options (a deleted
              // row's referrers changed their own row).
              namesOfPortSet(db, 'Logical_Switch_Port', db.weakReferrers(c.uuid).keys(), dirty);
              break;
            default:
              break;
          }
        }
        if (dirty.size === 0 && switchesTouched.size === 0) return 'unchanged';
        project(db, inputs.data<DatapathsData>('datapaths'), inputs.data<SbOwnedData>('sb_owned'), registryOf(inputs), data, dirty, out, switchesTouched);
        return 'handled';
      },
      datapaths(data: PortsData, change: unknown, inputs: NodeInputs, out: PortsChange) {
        // A port's binding depends on its datapath's existence and vlan-passthru, a router LSP's
        // facts on whether its peer's router relays multicast (the router's LRPs bring their
        // LSPs); ports of a datapath that appeared or went away are reprojected (usually
        // already done above).
        const dirty = new Set<string>();
        for (const [sbUuid, { old, new: now }] of (change as DatapathsChange).datapaths) {
          if (old !== undefined && now !== undefined && old.vlanPassthru === now.vlanPassthru && relaying(old.mcast) === relaying(now.mcast)) continue;
          for (const name of data.byDp.get(sbUuid) ?? []) dirty.add(name);
          if (now !== undefined && old === undefined) {
            const db = inputs.data<Database>('nb');
            const table = now.kind === 'switch' ? 'Logical_Switch' : 'Logical_Router';
            const row = nbGet<{ ports: readonly Uuid[] }>(db, table, now.nbUuid);
            if (row !== undefined) namesOfPortSet(db, now.kind === 'switch' ? 'Logical_Switch_Port' : 'Logical_Router_Port', row.ports, dirty);
          }
        }
        if (dirty.size === 0) return 'unchanged';
        project(inputs.data<Database>('nb'), inputs.data<DatapathsData>('datapaths'), inputs.data<SbOwnedData>('sb_owned'), registryOf(inputs), data, dirty, out);
        return 'handled';
      },
      sb_owned(data: PortsData, change: unknown, inputs: NodeInputs, out: PortsChange) {
        const names = change as SbOwnedChange;
        if (names.size === 0) return 'unchanged';
        project(inputs.data<Database>('nb'), inputs.data<DatapathsData>('datapaths'), inputs.data<SbOwnedData>('sb_owned'), registryOf(inputs), data, new Set(names), out);
        return 'handled';
      },
      sb_chassis(data: PortsData, change: unknown, inputs: NodeInputs, out: PortsChange) {
        // A Chassis registering, leaving or renamed: the members naming it get (or lose) it in
        // their chassis column, the ports asking for it their requested chassis. ref_chassis
        // follows the ports' bindings, which the chassis transaction updates itself (a deleted
        // Chassis's weak references are dropped there).
        const names = change as SbChassisChange;
        const groups = new Set<string>();
        for (const name of names) for (const g of data.haGroupsByChassisName.get(name) ?? []) groups.add(g);
        const ports = requestingPorts(data, names);
        if (groups.size === 0 && ports.size === 0) return 'unchanged';
        const chassis = inputs.data<SbChassisData>('sb_chassis');
        for (const g of [...groups].sort()) {
          const desired = data.haDesired.get(g);
          assert.ok(desired !== undefined, `HA_Chassis_Group ${g} is indexed by a member's chassis name but not written`);
          writeHaGroup(data, chassis, desired, out);
        }
        if (ports.size > 0) project(inputs.data<Database>('nb'), inputs.data<DatapathsData>('datapaths'), inputs.data<SbOwnedData>('sb_owned'), registryOf(inputs), data, ports, out);
        return 'handled';
      },
      sb_hostnames(data: PortsData, change: unknown, inputs: NodeInputs, out: PortsChange) {
        // A Chassis's hostname came, went or changed: the ports asking for that hostname.
        const ports = requestingPorts(data, change as SbHostnamesChange);
        if (ports.size === 0) return 'unchanged';
        project(inputs.data<Database>('nb'), inputs.data<DatapathsData>('datapaths'), inputs.data<SbOwnedData>('sb_owned'), registryOf(inputs), data, ports, out);
        return 'handled';
      },
    },
    finish(data: PortsData, out: PortsChange): void {
      // The groups whose ref_chassis changed in this run get their row again.
      for (const g of data.refChassis.settle((name) => data.haMembers.get(name)?.length)) {
        const members = data.haMembers.get(g) as readonly Uuid[];
        data.haGroupTable.put(haGroupRow(g, [...members].sort(), data.refChassis.refOf(g)), out.sb);
      }
    },
  };
}
