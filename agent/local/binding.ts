// Which logical ports this chassis claims and releases, decided from the local interfaces, the
// SB Port_Bindings and this chassis's identity (controller/binding.c, lport.c, if-status.c).
// Pure: `decideBindings(state, inputs)` returns the next state and the actions; the shell turns
// actions into SB and OVS transactions with `bindingSbOps` and `bindingOvsOps`.
//
// The rules, for a VIF Port_Binding (type "") whose logical_port is some local interface's
// external_ids:iface-id:
//   - it is claimed (chassis set, up=false) when unbound, or bound elsewhere and the interface is
//     new to us since the port was last bound here; requested-chassis must allow this chassis;
//   - once the runtime reports the port's flows installed (for the interface's current OpenFlow
//     port), up is set true and the interface gets external_ids:ovn-installed=true;
//   - it is released (chassis cleared, up=false) when the interface goes, or requested-chassis
//     moves it elsewhere, conditionally on still being bound here;
//   - when another chassis binds it while the interface that held (or last claimed) it here
//     remains, this chassis yields (it drops ovn-installed and does not claim back). That is the move of a
//     port: the newer interface wins, once, and two chassis never take turns;
//   - when requested-chassis names this chassis after the first (a live migration's
//     destination), it is bound as an additional chassis: this chassis joins additional_chassis
//     (and additional_encap), leaves the main chassis alone, never sets up, marks ovn-installed
//     once its flows are installed, and leaves additional_chassis when the interface goes or the
//     request drops it; named first later (the migration done), it claims the port as main and
//     leaves additional_chassis in the same transaction. Those writes replace the sets under a
//     condition that they are as this chassis saw them, so that two chassis writing at once
//     never lose each other's entry (the loser's write matches nothing and is decided again).
// A Port_Binding with options:iface-id-ver (northd copies it from the LSP's options) is bound
// only through an interface whose external_ids:iface-id-ver is the same; through any other it is
// not claimed, and it is released where it is held (ifaceIdVerMismatch).
// ovn-controller 23.03 instead claims back after 500 ms when both chassis have the interface;
// yielding keeps the moved port still.
//
// A container port (type "", parent_port set: a VLAN-tagged container inside the VM of its
// parent VIF) is bound wherever its parent is held by the rules above, in the same transaction,
// and released when the parent is released or yields, when its parent_port changes to a port
// not held here, or when requested-chassis names another chassis. Its up follows its own
// installed flows (on the parent's OpenFlow port) once the parent is up.
//
// Ports bound by a rule rather than by an interface are claimed with up=true (and set up again
// if something cleared it) and released when the rule names another chassis: an l3gateway port
// by options:l3gateway-chassis; a chassisredirect or external port by its HA_Chassis_Group,
// whose active member (agent/ha-chassis.ts: the highest-priority member alive by BFD, or
// without BFD the highest-priority registered chassis) binds it.
import type * as sb from '../../ovsdb/rows/sb.js';
import type { HaLookups } from '../ha-chassis.js';
import { haActiveHere } from '../ha-chassis.js';
import type { OpJson } from './ovsdb-json.js';
import { setJson, uuidJson } from './ovsdb-json.js';

export const OVN_INSTALLED = 'ovn-installed';
export const OVN_INSTALLED_TS = 'ovn-installed-ts';

/** A local interface that carries an iface-id and has an OpenFlow port. */
export interface LocalIface {
  readonly ifaceUuid: string;
  readonly name: string;
  readonly ofport: number;
  /** external_ids:ovn-installed is "true". */
  readonly ovnInstalled: boolean;
  /** external_ids:encap-ip: bind the port to this chassis's Encap with that IP. */
  readonly encapIp?: string;
  /** external_ids:iface-id-ver: what a Port_Binding's options:iface-id-ver must equal. */
  readonly ifaceIdVer?: string;
}

/**
 * An interface whose iface-id names a Port_Binding with options:iface-id-ver must carry the same
 * external_ids:iface-id-ver to bind it (binding.c's ovs_iface_matches_lport_iface_id_ver). A CMS
 * sets both, so that an interface left over from an older incarnation of the VM does not take
 * the port.
 */
export function ifaceIdVerMismatch(pb: sb.Port_Binding, iface: LocalIface): { readonly expected: string; readonly found: string | undefined } | undefined {
  const expected = pb.options.get('iface-id-ver');
  if (expected === undefined || iface.ifaceIdVer === expected) return undefined;
  return { expected, found: iface.ifaceIdVer };
}

export interface BindingChassis {
  readonly name: string;
  readonly hostname: string;
  /** This chassis's Chassis row; nothing is claimed before it exists. */
  readonly uuid: string | undefined;
  /** This chassis's Encap rows by IP. */
  readonly encapByIp: ReadonlyMap<string, string>;
}

export interface BindingState {
  /** Ports seen bound here, each with the interface that held it then. */
  readonly heldWith: ReadonlyMap<string, string>;
  /** Ports whose flows the runtime reported installed, with the OpenFlow port they were for. */
  readonly installed: ReadonlyMap<string, number>;
}

export const initialBindingState = (): BindingState => ({ heldWith: new Map(), installed: new Map() });

export interface BindingInputs {
  readonly chassis: BindingChassis;
  readonly ifaces: ReadonlyMap<string, LocalIface>;
  readonly portBindings: Iterable<sb.Port_Binding>;
  /** Ports with a transaction in flight that the SB does not show yet: left as they are. */
  readonly inflight: ReadonlySet<string>;
  /** The HA_Chassis_Group, HA_Chassis and Chassis rows: who is active for an HA port. */
  readonly ha: HaLookups;
  /** The chassis with a live BFD session (LocalView.activeTunnels); undefined: no BFD here. */
  readonly activeTunnels?: ReadonlySet<string> | undefined;
}

/** A binding's additional chassis and encaps. */
export interface AdditionalSets {
  readonly chassis: readonly string[];
  readonly encaps: readonly string[];
}

/** A write of a binding's additional sets, guarded by what this chassis saw of them. */
export interface AdditionalWrite {
  readonly seen: AdditionalSets;
  readonly next: AdditionalSets;
}

export type BindingAction =
  | {
    readonly kind: 'claim'; readonly port: string; readonly pbUuid: string; readonly from: string | undefined; readonly encap: string | undefined; readonly up: boolean;
    readonly clearIface: string | undefined;
    /** This chassis was an additional chassis of the port: it leaves that set in the same transaction. */
    readonly leaveAdditional?: AdditionalWrite;
  }
  /** Joins the port's additional chassis (and its encap the additional encaps); `dropMain`: it was the main chassis. */
  | { readonly kind: 'claim-additional'; readonly port: string; readonly pbUuid: string; readonly write: AdditionalWrite; readonly dropMain: boolean }
  | { readonly kind: 'release-additional'; readonly port: string; readonly pbUuid: string; readonly write: AdditionalWrite; readonly clearIface: string | undefined }
  | { readonly kind: 'set-additional-encap'; readonly port: string; readonly pbUuid: string; readonly write: AdditionalWrite }
  | { readonly kind: 'release'; readonly port: string; readonly pbUuid: string; readonly clearIface: string | undefined }
  | { readonly kind: 'set-up'; readonly port: string; readonly pbUuid: string; readonly sbUp: boolean; readonly markIface: string | undefined }
  | { readonly kind: 'set-encap'; readonly port: string; readonly pbUuid: string; readonly encap: string | undefined }
  | { readonly kind: 'clear-installed'; readonly port: string; readonly clearIface: string };

/**
 * How requested-chassis lets this chassis bind a port (lport.c's lport_can_bind_on_this_chassis):
 * as its main chassis (the requested_chassis column names it, or no chassis is requested, or
 * the option's first entry is its name or hostname), as an additional chassis (the
 * requested_additional_chassis column, or a later entry of the option), or not at all.
 */
export function bindRole(pb: sb.Port_Binding, chassis: BindingChassis): 'main' | 'additional' | 'none' {
  if (chassis.uuid !== undefined && pb.requested_chassis[0] === chassis.uuid) return 'main';
  if (chassis.uuid !== undefined && pb.requested_additional_chassis.includes(chassis.uuid)) return 'additional';
  const requested = pb.options.get('requested-chassis');
  if (requested === undefined || requested === '') return 'main';
  // strtok_r's entries: empty ones are none.
  const entries = requested.split(',').filter((e) => e !== '');
  const i = entries.findIndex((e) => e === chassis.name || e === chassis.hostname);
  return i < 0 ? 'none' : i === 0 ? 'main' : 'additional';
}

/** Whether requested-chassis lets this chassis be the port's main chassis. */
export function canBindHere(pb: sb.Port_Binding, chassis: BindingChassis): boolean {
  return bindRole(pb, chassis) === 'main';
}

/**
 * The write that puts this chassis in (`joining`) or out of a binding's additional chassis,
 * with `encap` (when joining) as its one additional encap among this chassis's encaps.
 */
function additionalWrite(pb: sb.Port_Binding, chassis: BindingChassis, us: string, joining: boolean, encap: string | undefined): AdditionalWrite {
  const ours = new Set(chassis.encapByIp.values());
  const others = pb.additional_chassis.filter((u) => u !== us);
  const otherEncaps = pb.additional_encap.filter((u) => !ours.has(u));
  return {
    seen: { chassis: pb.additional_chassis, encaps: pb.additional_encap },
    next: { chassis: joining ? [...others, us].sort() : others, encaps: joining && encap !== undefined ? [...otherEncaps, encap].sort() : otherEncaps },
  };
}

function sameSet(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && [...a].sort().every((x, i) => x === [...b].sort()[i]);
}

/** A container port (OVN's "nested" port): a VIF whose parent_port names the VIF it rides on. */
export function isContainerPort(pb: sb.Port_Binding): boolean {
  const parent = pb.parent_port[0];
  return pb.type === '' && parent !== undefined && parent !== '';
}

/** Ports whose chassis is the active member of their HA_Chassis_Group. */
const HA_TYPES: ReadonlySet<string> = new Set(['chassisredirect', 'external']);

/** A VIF whose interface is not bound to it for its iface-id-ver, for the log. */
export interface IfaceIdVerMismatch {
  readonly port: string;
  readonly expected: string;
  readonly found: string | undefined;
}

export function decideBindings(state: BindingState, inputs: BindingInputs): { state: BindingState; actions: BindingAction[]; mismatches: IfaceIdVerMismatch[] } {
  const { chassis, ifaces, inflight } = inputs;
  const mismatches: IfaceIdVerMismatch[] = [];
  const heldWith = new Map<string, string>();
  const installed = new Map<string, number>();
  const actions: BindingAction[] = [];
  const us = chassis.uuid;
  /** VIFs this chassis holds after this pass (bound here and kept, or claimed now), with their
   *  interface: their container ports go with them. */
  const holding = new Map<string, LocalIface>();
  /** VIFs with a transaction in flight: their container ports wait too. */
  const waiting = new Set<string>();
  const byName = new Map<string, sb.Port_Binding>();
  const containers: sb.Port_Binding[] = [];
  /** Keeps what we knew of a port with a transaction in flight. */
  const keep = (port: string, here: boolean): void => {
    const held = state.heldWith.get(port);
    if (held !== undefined) heldWith.set(port, held);
    const inst = state.installed.get(port);
    if (inst !== undefined && here) installed.set(port, inst);
  };
  /** A port this chassis binds by rule rather than by interface (gateway and HA ports): claimed
   *  with up=true (ovn-controller's claimed_lport_set_up), released when the rule moves it. */
  const byRule = (pb: sb.Port_Binding, wanted: boolean, here: boolean): void => {
    const port = pb.logical_port;
    if (wanted && !here && us !== undefined) actions.push({ kind: 'claim', port, pbUuid: pb._uuid, from: pb.chassis[0], encap: undefined, up: true, clearIface: undefined });
    else if (wanted && here && pb.up[0] === false) actions.push({ kind: 'set-up', port, pbUuid: pb._uuid, sbUp: true, markIface: undefined });
    else if (!wanted && here) actions.push({ kind: 'release', port, pbUuid: pb._uuid, clearIface: undefined });
  };
  for (const pb of inputs.portBindings) {
    const port = pb.logical_port;
    byName.set(port, pb);
    const owner = pb.chassis[0];
    const here = us !== undefined && owner === us;
    if (isContainerPort(pb)) {
      // Decided once every VIF is (a parent may come later in the iteration).
      containers.push(pb);
      continue;
    }
    if (inflight.has(port)) {
      // Keep what we knew; decide again once the SB shows the transaction's effect.
      keep(port, here);
      waiting.add(port);
      continue;
    }
    if (pb.type === 'l3gateway') {
      byRule(pb, pb.options.get('l3gateway-chassis') === chassis.name, here);
      continue;
    }
    if (HA_TYPES.has(pb.type)) {
      byRule(pb, haActiveHere(inputs.ha, pb.ha_chassis_group[0], us, inputs.activeTunnels), here);
      continue;
    }
    if (pb.type !== '') continue;
    const found = ifaces.get(port);
    const mismatch = found === undefined ? undefined : ifaceIdVerMismatch(pb, found);
    if (mismatch !== undefined) mismatches.push({ port, ...mismatch });
    // An interface of another iface-id-ver counts as no interface: the port is not claimed,
    // and released (or left as an additional chassis) where it is held.
    const iface = mismatch === undefined ? found : undefined;
    const held = state.heldWith.get(port);
    const clear = found?.ovnInstalled === true ? found.ifaceUuid : undefined;
    const role = bindRole(pb, chassis);
    const extra = us !== undefined && pb.additional_chassis.includes(us);
    if (iface === undefined || us === undefined || role === 'none') {
      if (here) actions.push({ kind: 'release', port, pbUuid: pb._uuid, clearIface: clear });
      if (extra && us !== undefined) actions.push({ kind: 'release-additional', port, pbUuid: pb._uuid, write: additionalWrite(pb, chassis, us, false, undefined), clearIface: here ? undefined : clear });
      else if (!here && clear !== undefined) actions.push({ kind: 'clear-installed', port, clearIface: clear });
      continue;
    }
    const encap = iface.encapIp === undefined ? undefined : chassis.encapByIp.get(iface.encapIp);
    if (role === 'additional') {
      // A migration's destination: beside the main chassis, whoever that is.
      const write = additionalWrite(pb, chassis, us, true, encap);
      if (!extra || here) {
        actions.push({ kind: 'claim-additional', port, pbUuid: pb._uuid, write, dropMain: here });
        continue;
      }
      if (!sameSet(write.next.encaps, pb.additional_encap)) actions.push({ kind: 'set-additional-encap', port, pbUuid: pb._uuid, write });
      const inst = state.installed.get(port);
      if (inst === iface.ofport) {
        installed.set(port, inst);
        if (!iface.ovnInstalled) actions.push({ kind: 'set-up', port, pbUuid: pb._uuid, sbUp: false, markIface: iface.ifaceUuid });
      }
      continue;
    }
    const leaveAdditional = extra ? additionalWrite(pb, chassis, us, false, undefined) : undefined;
    if (here) {
      if (leaveAdditional !== undefined) actions.push({ kind: 'release-additional', port, pbUuid: pb._uuid, write: leaveAdditional, clearIface: undefined });
      heldWith.set(port, iface.ifaceUuid);
      holding.set(port, iface);
      if (pb.encap[0] !== encap) actions.push({ kind: 'set-encap', port, pbUuid: pb._uuid, encap });
      const inst = state.installed.get(port);
      if (inst === iface.ofport) {
        installed.set(port, inst);
        const sbUp = pb.up[0] !== true;
        if (sbUp || !iface.ovnInstalled) actions.push({ kind: 'set-up', port, pbUuid: pb._uuid, sbUp, markIface: iface.ovnInstalled ? undefined : iface.ifaceUuid });
      }
      continue;
    }
    if (owner !== undefined && held === iface.ifaceUuid) {
      // Another chassis took the port from this very interface: the port moved. Stay off it.
      heldWith.set(port, held);
      if (clear !== undefined) actions.push({ kind: 'clear-installed', port, clearIface: clear });
      continue;
    }
    // A claim counts as holding the port with this interface from now on, even before we see
    // it applied: if another chassis then takes it, the port moved and we stay off it. With
    // stale views two chassis could otherwise each claim back a port they never saw bound.
    heldWith.set(port, iface.ifaceUuid);
    holding.set(port, iface);
    actions.push({ kind: 'claim', port, pbUuid: pb._uuid, from: owner, encap, up: false, clearIface: clear, ...(leaveAdditional !== undefined ? { leaveAdditional } : {}) });
  }
  // Container ports follow their parent VIF (consider_container_lport): bound where the parent
  // is held, through the parent's interface, released when the parent goes, moves or stops
  // being a plain VIF. Claimed in the same transaction as the parent, so a chassis that takes
  // a moved parent takes its containers at once, and the one it took them from, yielding the
  // parent, lets them go. No ovn-installed mark: the interface is the parent's.
  for (const pb of containers) {
    const port = pb.logical_port;
    const here = us !== undefined && pb.chassis[0] === us;
    const parentName = pb.parent_port[0] as string;
    if (inflight.has(port) || waiting.has(parentName)) {
      keep(port, here);
      continue;
    }
    const parent = byName.get(parentName);
    const parentIface = holding.get(parentName);
    if (parent === undefined || parentIface === undefined || us === undefined || !canBindHere(pb, chassis)) {
      if (here) actions.push({ kind: 'release', port, pbUuid: pb._uuid, clearIface: undefined });
      continue;
    }
    const encap = parentIface.encapIp === undefined ? undefined : chassis.encapByIp.get(parentIface.encapIp);
    if (!here) {
      actions.push({ kind: 'claim', port, pbUuid: pb._uuid, from: pb.chassis[0], encap, up: false, clearIface: undefined });
      continue;
    }
    if (pb.encap[0] !== encap) actions.push({ kind: 'set-encap', port, pbUuid: pb._uuid, encap });
    // Up once the container's own flows are installed on the parent's OpenFlow port, and never
    // before the parent is up (a container is up only behind an up parent, as in OVN).
    const inst = state.installed.get(port);
    if (inst === parentIface.ofport) {
      installed.set(port, inst);
      if (pb.up[0] !== true && parent.up[0] === true) actions.push({ kind: 'set-up', port, pbUuid: pb._uuid, sbUp: true, markIface: undefined });
    }
  }
  return { state: { heldWith, installed }, actions, mismatches };
}

/**
 * Records that the runtime installed the flows of `port` for OpenFlow port `ofport`. It counts
 * only while the port stays bound here through that same OpenFlow port.
 */
export function markInstalled(state: BindingState, port: string, ofport: number): BindingState {
  if (state.installed.get(port) === ofport) return state;
  const installed = new Map(state.installed);
  installed.set(port, ofport);
  return { heldWith: state.heldWith, installed };
}

const whereBoundHere = (pbUuid: string, us: string): unknown[] => [['_uuid', '==', uuidJson(pbUuid)], ['chassis', '==', uuidJson(us)]];

/** The additional sets replaced, where they are still as this chassis saw them. */
function additionalOp(pbUuid: string, w: AdditionalWrite): OpJson {
  return {
    op: 'update', table: 'Port_Binding',
    where: [['_uuid', '==', uuidJson(pbUuid)], ['additional_chassis', '==', setJson(w.seen.chassis.map(uuidJson))], ['additional_encap', '==', setJson(w.seen.encaps.map(uuidJson))]],
    row: { additional_chassis: setJson(w.next.chassis.map(uuidJson)), additional_encap: setJson(w.next.encaps.map(uuidJson)) },
  };
}

/**
 * The SB operations of the actions, one per action that writes the SB (in action order).
 * Releases and updates apply only while the port is still bound here, so a late release never
 * undoes another chassis's newer claim.
 */
export function bindingSbOps(actions: readonly BindingAction[], us: string): { port: string; op: OpJson }[] {
  const out: { port: string; op: OpJson }[] = [];
  for (const a of actions) {
    switch (a.kind) {
      case 'claim':
        // Leaving the additional chassis first: the claim's update changes no additional set.
        if (a.leaveAdditional !== undefined) out.push({ port: a.port, op: additionalOp(a.pbUuid, a.leaveAdditional) });
        out.push({ port: a.port, op: { op: 'update', table: 'Port_Binding', where: [['_uuid', '==', uuidJson(a.pbUuid)]], row: { chassis: uuidJson(us), up: a.up, encap: setJson(a.encap === undefined ? [] : [uuidJson(a.encap)]) } } });
        break;
      case 'claim-additional':
        out.push({ port: a.port, op: additionalOp(a.pbUuid, a.write) });
        if (a.dropMain) out.push({ port: a.port, op: { op: 'update', table: 'Port_Binding', where: whereBoundHere(a.pbUuid, us), row: { chassis: setJson([]), encap: setJson([]) } } });
        break;
      case 'release-additional':
      case 'set-additional-encap':
        out.push({ port: a.port, op: additionalOp(a.pbUuid, a.write) });
        break;
      case 'release':
        out.push({ port: a.port, op: { op: 'update', table: 'Port_Binding', where: whereBoundHere(a.pbUuid, us), row: { chassis: setJson([]), up: false, encap: setJson([]) } } });
        break;
      case 'set-up':
        if (a.sbUp) out.push({ port: a.port, op: { op: 'update', table: 'Port_Binding', where: whereBoundHere(a.pbUuid, us), row: { up: true } } });
        break;
      case 'set-encap':
        out.push({ port: a.port, op: { op: 'update', table: 'Port_Binding', where: whereBoundHere(a.pbUuid, us), row: { encap: setJson(a.encap === undefined ? [] : [uuidJson(a.encap)]) } } });
        break;
      case 'clear-installed':
        break;
    }
  }
  return out;
}

/**
 * The Open_vSwitch operations of the actions: ovn-installed marks set and cleared. `key` names
 * the write without its timestamp, for a shell that holds back repeats.
 */
export function bindingOvsOps(actions: readonly BindingAction[], nowMs: number): { port: string; key: string; op: OpJson }[] {
  const out: { port: string; key: string; op: OpJson }[] = [];
  const clearKeys = ['external_ids', 'delete', setJson([OVN_INSTALLED, OVN_INSTALLED_TS])];
  for (const a of actions) {
    const iface = a.kind === 'set-up' ? a.markIface : a.kind === 'claim' || a.kind === 'release' || a.kind === 'clear-installed' || a.kind === 'release-additional' ? a.clearIface : undefined;
    if (iface === undefined) continue;
    const where = [['_uuid', '==', uuidJson(iface)]];
    const key = `${a.kind === 'set-up' ? 'mark' : 'clear'}:${a.port}:${iface}`;
    if (a.kind === 'set-up') {
      out.push({ port: a.port, key, op: { op: 'mutate', table: 'Interface', where, mutations: [clearKeys, ['external_ids', 'insert', ['map', [[OVN_INSTALLED, 'true'], [OVN_INSTALLED_TS, String(nowMs)]]]]] } });
    } else {
      out.push({ port: a.port, key, op: { op: 'mutate', table: 'Interface', where, mutations: [clearKeys] } });
    }
  }
  return out;
}
