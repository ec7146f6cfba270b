// Which virtual ports (Port_Binding type "virtual") this chassis keeps, as ovn-controller's
// binding.c (consider_virtual_lport) decides it. A virtual port has no interface of its own:
// pinctrl claims it when a parent sends a GARP or an ND message for its VIP (chassis = this
// chassis, virtual_parent = the parent; agent/pinctrl/vport-binding-writer.ts), and from then on
// it is bound where its virtual_parent is bound:
//   - while the parent named by virtual_parent has its interface here and is bound here, the
//     virtual port is claimed here (if the SB shows another chassis, or none), its encap follows
//     the parent interface's, and it is up once the parent is up;
//   - when the parent goes (its interface removed, or bound by another chassis) or
//     virtual_parent is cleared, a virtual port bound here is released: chassis, encap and
//     virtual_parent cleared, up false;
//   - a virtual port bound to another chassis is left alone: that chassis's pinctrl took it.
// Pure, beside binding.ts (VIFs, l3gateway): the shell sends both planners' ops.
import type * as sb from '../../ovsdb/rows/sb.js';
import type { BindingChassis, LocalIface } from './binding.js';
import type { OpJson } from './ovsdb-json.js';
import { setJson, uuidJson } from './ovsdb-json.js';

export interface VirtualBindingInputs {
  readonly chassis: BindingChassis;
  readonly ifaces: ReadonlyMap<string, LocalIface>;
  readonly portBindings: Iterable<sb.Port_Binding>;
  /** Ports with a transaction in flight that the SB does not show yet: left as they are. */
  readonly inflight: ReadonlySet<string>;
}

export type VirtualBindingAction =
  | { readonly kind: 'claim'; readonly port: string; readonly pbUuid: string; readonly parent: string; readonly encap: string | undefined; readonly up: boolean }
  | { readonly kind: 'set-up'; readonly port: string; readonly pbUuid: string }
  | { readonly kind: 'set-encap'; readonly port: string; readonly pbUuid: string; readonly encap: string | undefined }
  | { readonly kind: 'release'; readonly port: string; readonly pbUuid: string };

export function decideVirtualBindings(inputs: VirtualBindingInputs): VirtualBindingAction[] {
  const us = inputs.chassis.uuid;
  if (us === undefined) return [];
  const virtual: sb.Port_Binding[] = [];
  const byName = new Map<string, sb.Port_Binding>();
  for (const pb of inputs.portBindings) {
    byName.set(pb.logical_port, pb);
    if (pb.type === 'virtual') virtual.push(pb);
  }
  const actions: VirtualBindingAction[] = [];
  for (const pb of virtual) {
    const port = pb.logical_port;
    const parentName = pb.virtual_parent[0];
    if (inputs.inflight.has(port) || (parentName !== undefined && inputs.inflight.has(parentName))) continue;
    const here = pb.chassis[0] === us;
    const parent = parentName === undefined || parentName === '' ? undefined : byName.get(parentName);
    const parentIface = parentName === undefined ? undefined : inputs.ifaces.get(parentName);
    const parentHere = parent !== undefined && parentIface !== undefined && parent.chassis[0] === us;
    if (!parentHere) {
      if (here) actions.push({ kind: 'release', port, pbUuid: pb._uuid });
      continue;
    }
    const encap = parentIface.encapIp === undefined ? undefined : inputs.chassis.encapByIp.get(parentIface.encapIp);
    const parentUp = parent.up[0] === true;
    if (!here) {
      actions.push({ kind: 'claim', port, pbUuid: pb._uuid, parent: parent.logical_port, encap, up: parentUp });
      continue;
    }
    if (pb.encap[0] !== encap) actions.push({ kind: 'set-encap', port, pbUuid: pb._uuid, encap });
    if (parentUp && pb.up[0] !== true) actions.push({ kind: 'set-up', port, pbUuid: pb._uuid });
  }
  return actions;
}

/**
 * The SB operations of the actions, in action order. A claim applies only while virtual_parent
 * still names the parent it was decided for (pinctrl elsewhere may have moved the VIP since);
 * the others only while the port is bound here.
 */
export function virtualBindingSbOps(actions: readonly VirtualBindingAction[], us: string): { port: string; op: OpJson }[] {
  const boundHere = (pbUuid: string): unknown[] => [['_uuid', '==', uuidJson(pbUuid)], ['chassis', '==', uuidJson(us)]];
  const encapJson = (encap: string | undefined): unknown => setJson(encap === undefined ? [] : [uuidJson(encap)]);
  return actions.map((a) => {
    switch (a.kind) {
      case 'claim':
        return {
          port: a.port,
          op: { op: 'update', table: 'Port_Binding', where: [['_uuid', '==', uuidJson(a.pbUuid)], ['virtual_parent', '==', a.parent]], row: { chassis: uuidJson(us), up: a.up, encap: encapJson(a.encap) } },
        };
      case 'set-up':
        return { port: a.port, op: { op: 'update', table: 'Port_Binding', where: boundHere(a.pbUuid), row: { up: true } } };
      case 'set-encap':
        return { port: a.port, op: { op: 'update', table: 'Port_Binding', where: boundHere(a.pbUuid), row: { encap: encapJson(a.encap) } } };
      case 'release':
        return { port: a.port, op: { op: 'update', table: 'Port_Binding', where: boundHere(a.pbUuid), row: { chassis: setJson([]), up: false, encap: setJson([]), virtual_parent: setJson([]) } } };
    }
  });
}
