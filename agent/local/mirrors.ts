// Port mirroring on the integration bridge, as ovn-controller 23.03 keeps it
// (controller/mirror.c): for every SB Mirror that a VIF bound here names in its
// Port_Binding.mirror_rules, an Open vSwitch Mirror on the integration bridge named as the SB
// row, marked external_ids:ovn-owned=true, that copies what the VIF sends (filter "from-lport":
// select_src_port) or what it receives ("to-lport": select_dst_port) to an output port named
// "ovn-<mirror name>": one Interface of type gre or erspan (ip6gre, ip6erspan for an IPv6 sink)
// with options remote_ip=<sink> and key=<index>, and for erspan erspan_idx=<index> and
// erspan_ver=1. The tunnel type and options follow the SB row; the Mirror and its port go when no
// VIF bound here names it any more or the SB row is gone. Mirrors without ovn-owned are not ours
// and are never touched. Pure: the shell sends the groups.
//
// Where this differs from ovn-controller, and why:
//   - an SB row that cannot make a working tunnel (a sink that is not an IPv4 or IPv6 address, a
//     type or filter OVN does not define, an index that is no 32-bit key) is logged and treated
//     as absent, so whatever was made of it before goes; ovn-controller writes the port anyway
//     and leaves Open vSwitch to refuse it;
//   - at most `mirrorsMax` mirrors are made (Open vSwitch keeps at most 32 on a bridge and
//     refuses the others in its log), the first by name; the rest are logged;
//   - "ovn-<name>" held by a port that is not a mirror port (a tunnel, a VIF, a patch port) is a
//     conflict logged and skipped; ovn-controller's insert would fail its whole transaction on
//     the Port name index;
//   - a lone port of that name and shape (its mirror deleted by hand) is taken as the output
//     port rather than left behind.
import { isIP } from 'node:net';
import type * as sb from '../../ovsdb/rows/sb.js';
import type { LocalIface } from './binding.js';
import type { OpGroup, OpJson } from './ovsdb-json.js';
import { mapJson, mapsEqual, namedUuid, setJson, uuidJson, whereUuid } from './ovsdb-json.js';
import type { OvsBridge, OvsInterface, OvsMirror, OvsPort, OvsTables } from './ovs-rows.js';
import { addPortOps, interfacesOf, portsOf } from './ovs-rows.js';

/** The OVS Mirror external_ids key that marks a mirror as made by OVN. */
export const MIRROR_OWNED_KEY = 'ovn-owned';

export interface MirrorLimits {
  /** Mirrors made on the integration bridge at most (Open vSwitch's MAX_MIRRORS per bridge). */
  readonly mirrorsMax: number;
}

export const mirrorLimits: MirrorLimits = { mirrorsMax: 32 };

/** The interface types of mirror output ports. */
const MIRROR_PORT_TYPES: ReadonlySet<string> = new Set(['gre', 'erspan', 'ip6gre', 'ip6erspan']);

/** External ids that mark a port or interface as something else the agent or the CMS made. */
const FOREIGN_KEYS = ['iface-id', 'ovn-chassis-id', 'ovn-localnet-port'] as const;

const KEY_MAX = 0xffff_ffff;

/** What one valid SB Mirror asks of the output port. */
export interface MirrorSpec {
  readonly name: string;
  readonly filter: 'from-lport' | 'to-lport';
  readonly type: string;
  readonly options: ReadonlyMap<string, string>;
}

export type MirrorCheck = { readonly kind: 'ok'; readonly spec: MirrorSpec } | { readonly kind: 'bad'; readonly reason: string };

export const mirrorPortName = (mirror: string): string => `ovn-${mirror}`;

/** The output port's interface type and options for an SB Mirror, or why it cannot have one. */
export function checkSbMirror(m: sb.Mirror): MirrorCheck {
  const type = m.type as string;
  if (type !== 'gre' && type !== 'erspan') return { kind: 'bad', reason: `type "${type}" is neither gre nor erspan` };
  const filter = m.filter as string;
  if (filter !== 'from-lport' && filter !== 'to-lport') return { kind: 'bad', reason: `filter "${filter}" is neither from-lport nor to-lport` };
  const family = isIP(m.sink);
  if (family === 0) return { kind: 'bad', reason: `sink "${m.sink}" is not an IPv4 or IPv6 address` };
  if (!Number.isInteger(m.index) || m.index < 0 || m.index > KEY_MAX) return { kind: 'bad', reason: `index ${m.index} is not a tunnel key (0..${KEY_MAX})` };
  const key = String(m.index);
  const options = new Map<string, string>([['remote_ip', m.sink], ['key', key]]);
  if (type === 'erspan') {
    options.set('erspan_idx', key);
    options.set('erspan_ver', '1');
  }
  return { kind: 'ok', spec: { name: m.name, filter, type: family === 6 ? `ip6${type}` : type, options } };
}

/** One VIF bound here, with the OVS Port on the integration bridge that carries it. */
export interface MirroredVif {
  readonly pb: sb.Port_Binding;
  readonly ovsPort: string;
}

/**
 * The local VIF bindings whose mirrors count, as ovn-controller's local_binding_get_primary_pb
 * gives them: for each local interface's iface-id, its Port_Binding when that is a plain VIF
 * (type "", no parent port) bound to this chassis, as its main or an additional chassis.
 * Sorted by logical port.
 */
export function mirroredVifs(ovs: OvsTables, brInt: OvsBridge, ifaces: ReadonlyMap<string, LocalIface>, portBinding: (name: string) => sb.Port_Binding | undefined, chassisUuid: string | undefined): MirroredVif[] {
  if (chassisUuid === undefined) return [];
  const portOfIface = new Map<string, string>();
  for (const port of portsOf(ovs, brInt)) for (const i of port.interfaces) portOfIface.set(i, port._uuid);
  const out: MirroredVif[] = [];
  for (const [name, iface] of [...ifaces].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const pb = portBinding(name);
    if (pb === undefined || pb.type !== '' || (pb.parent_port[0] ?? '') !== '') continue;
    if (pb.chassis[0] !== chassisUuid && !pb.additional_chassis.includes(chassisUuid)) continue;
    const ovsPort = portOfIface.get(iface.ifaceUuid);
    if (ovsPort !== undefined) out.push({ pb, ovsPort });
  }
  return out;
}

export interface MirrorPlan {
  readonly groups: OpGroup[];
  /** SB rows skipped and conflicts, for the log. */
  readonly problems: string[];
}

const byString = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** Whether an OVS Mirror says external_ids:ovn-owned=true (Open vSwitch reads it case-blind). */
export function isOvnOwned(m: OvsMirror): boolean {
  return (m.external_ids.get(MIRROR_OWNED_KEY) ?? '').toLowerCase() === 'true';
}

/** A port that looks like a mirror output port: one tunnel interface of a mirror type, no mark of another owner. */
function isMirrorPortShape(ovs: OvsTables, port: OvsPort): boolean {
  if (port.interfaces.length !== 1) return false;
  const ifaces = interfacesOf(ovs, port);
  const iface = ifaces[0];
  if (iface === undefined || !MIRROR_PORT_TYPES.has(iface.type)) return false;
  return FOREIGN_KEYS.every((k) => !port.external_ids.has(k) && !iface.external_ids.has(k));
}

const sameSet = (a: readonly string[], b: ReadonlySet<string>): boolean => a.length === b.size && a.every((x) => b.has(x));
const refSet = (uuids: ReadonlySet<string>): unknown => setJson([...uuids].sort(byString).map(uuidJson));

/**
 * The groups that make the integration bridge's OVN mirrors what `sbMirrors` and `vifs` ask:
 * one group per mirror to create, update or delete, in mirror name order.
 */
export function mirrorOps(ovs: OvsTables, brInt: OvsBridge, sbMirrors: Iterable<sb.Mirror>, vifs: readonly MirroredVif[], limits: MirrorLimits = mirrorLimits): MirrorPlan {
  const problems: string[] = [];
  // 1. The SB mirrors that can be made, by uuid (mirror_rules name them so); the first of a name.
  const specs = new Map<string, MirrorSpec>();
  const names = new Set<string>();
  for (const m of [...sbMirrors].sort((a, b) => byString(a.name, b.name) || byString(a._uuid, b._uuid))) {
    const checked = checkSbMirror(m);
    if (checked.kind === 'bad') {
      problems.push(`SB mirror ${m.name} skipped: ${checked.reason}`);
      continue;
    }
    if (names.has(m.name)) {
      problems.push(`SB mirror ${m.name} skipped: another SB mirror has that name`);
      continue;
    }
    names.add(m.name);
    specs.set(m._uuid, checked.spec);
  }

  // 2. The local ports of each, by direction.
  const selected = new Map<string, { spec: MirrorSpec; src: Set<string>; dst: Set<string> }>();
  for (const vif of vifs) {
    for (const rule of vif.pb.mirror_rules) {
      const spec = specs.get(rule);
      if (spec === undefined) continue;
      let s = selected.get(spec.name);
      if (s === undefined) selected.set(spec.name, (s = { spec, src: new Set(), dst: new Set() }));
      (spec.filter === 'from-lport' ? s.src : s.dst).add(vif.ovsPort);
    }
  }
  const wanted = [...selected.keys()].sort(byString);
  for (const name of wanted.slice(limits.mirrorsMax)) {
    problems.push(`mirror ${name} not made: at most ${limits.mirrorsMax} mirrors are kept on ${brInt.name}`);
    selected.delete(name);
  }

  // 3. The OVN mirrors on the bridge, by name; a second of one name is removed.
  const mirrorRows = ovs('Mirror');
  const existing = new Map<string, OvsMirror>();
  const groups: OpGroup[] = [];
  const bridgePorts = new Set(brInt.ports);
  const portsTable = ovs('Port');
  const portRow = (u: string | undefined): OvsPort | undefined => (u === undefined ? undefined : (portsTable.get(u) as unknown as OvsPort | undefined));
  const removeOps = (m: OvsMirror): OpJson[] => {
    const ops: OpJson[] = [{ op: 'mutate', table: 'Bridge', where: whereUuid(brInt._uuid), mutations: [['mirrors', 'delete', setJson([uuidJson(m._uuid)])]] }];
    const out = portRow(m.output_port[0]);
    if (out !== undefined && bridgePorts.has(out._uuid)) {
      if (isMirrorPortShape(ovs, out)) ops.push({ op: 'mutate', table: 'Bridge', where: whereUuid(brInt._uuid), mutations: [['ports', 'delete', setJson([uuidJson(out._uuid)])]] });
      else problems.push(`mirror ${m.name}: its output port ${out.name} is not a mirror port; left on ${brInt.name}`);
    }
    return ops;
  };
  const ownedOnBridge = brInt.mirrors
    .map((u) => mirrorRows.get(u) as unknown as OvsMirror | undefined)
    .filter((m): m is OvsMirror => m !== undefined && isOvnOwned(m))
    .sort((a, b) => byString(a.name, b.name) || byString(a._uuid, b._uuid));
  for (const m of ownedOnBridge) {
    if (!existing.has(m.name)) existing.set(m.name, m);
    else groups.push({ what: `remove duplicate mirror ${m.name} from ${brInt.name}`, ops: removeOps(m) });
  }

  // 4. Create, update or delete each.
  const portByName = new Map<string, OvsPort>();
  for (const r of portsTable.values()) portByName.set(r.name as string, r as unknown as OvsPort);
  const outputs = new Set<string>();
  for (const r of mirrorRows.values()) for (const u of (r as unknown as OvsMirror).output_port) outputs.add(u);
  let n = 0;
  for (const name of [...new Set([...selected.keys(), ...existing.keys()])].sort(byString)) {
    const want = selected.get(name);
    const have = existing.get(name);
    if (want === undefined) {
      if (have !== undefined) groups.push({ what: `remove mirror ${name} from ${brInt.name} (${names.has(name) ? 'no port bound here uses it' : 'its SB row is gone'})`, ops: removeOps(have) });
      continue;
    }
    const ops: OpJson[] = [];
    const changed: string[] = [];
    // The output port: the mirror's own, else a lone mirror port of the name, else a new one.
    const current = portRow(have?.output_port[0]);
    let outRef: unknown;
    if (current !== undefined) {
      outRef = uuidJson(current._uuid);
      const iface = interfacesOf(ovs, current)[0] as OvsInterface | undefined;
      if (iface !== undefined && (iface.type !== want.spec.type || !mapsEqual(iface.options, want.spec.options))) {
        ops.push({ op: 'update', table: 'Interface', where: whereUuid(iface._uuid), row: { type: want.spec.type, options: mapJson(want.spec.options) } });
        changed.push(`${want.spec.type} to ${want.spec.options.get('remote_ip') ?? ''} key ${want.spec.options.get('key') ?? ''}`);
      }
    } else {
      const portName = mirrorPortName(name);
      const taken = portByName.get(portName);
      if (taken !== undefined && (!isMirrorPortShape(ovs, taken) || outputs.has(taken._uuid) || !bridgePorts.has(taken._uuid))) {
        problems.push(`mirror ${name} not made: port ${portName} exists and is not a free mirror port on ${brInt.name}`);
        continue;
      }
      if (taken !== undefined) {
        outRef = uuidJson(taken._uuid);
        const iface = interfacesOf(ovs, taken)[0] as OvsInterface;
        ops.push({ op: 'update', table: 'Interface', where: whereUuid(iface._uuid), row: { type: want.spec.type, options: mapJson(want.spec.options) } });
        changed.push(`output port ${portName} taken over`);
      } else {
        const tag = `mirror${n++}`;
        ops.push(...addPortOps(brInt, tag, { name: portName, external_ids: new Map() }, { type: want.spec.type, options: want.spec.options }));
        outRef = namedUuid(`p_${tag}`);
        changed.push(`output port ${portName} (${want.spec.type} to ${want.spec.options.get('remote_ip') ?? ''} key ${want.spec.options.get('key') ?? ''})`);
      }
    }
    if (have === undefined) {
      const m = `m_mirror${n++}`;
      ops.push(
        {
          op: 'insert', table: 'Mirror', 'uuid-name': m,
          row: { name, output_port: outRef, select_src_port: refSet(want.src), select_dst_port: refSet(want.dst), external_ids: mapJson([[MIRROR_OWNED_KEY, 'true']]) },
        },
        { op: 'mutate', table: 'Bridge', where: whereUuid(brInt._uuid), mutations: [['mirrors', 'insert', setJson([namedUuid(m)])]] },
      );
      groups.push({ what: `create mirror ${name} on ${brInt.name}: ${changed.join(', ')}; ${want.src.size} source and ${want.dst.size} destination port(s)`, ops });
      continue;
    }
    const row: Record<string, unknown> = {};
    if (current === undefined) row.output_port = outRef;
    if (!sameSet(have.select_src_port, want.src)) row.select_src_port = refSet(want.src);
    if (!sameSet(have.select_dst_port, want.dst)) row.select_dst_port = refSet(want.dst);
    if (Object.keys(row).length > 0) {
      ops.push({ op: 'update', table: 'Mirror', where: whereUuid(have._uuid), row });
      changed.push(...Object.keys(row).filter((k) => k !== 'output_port'));
    }
    if (ops.length > 0) groups.push({ what: `update mirror ${name} on ${brInt.name}: ${changed.join(', ')}`, ops });
  }
  return { groups, problems };
}
