// The Logical_Flow node: flows are owned by a datapath ("d <uuid>") or a port ("p <name>");
// regenerating an owner replaces its flows. Two owners may produce the same flow (same
// content, same UUID): the row is kept while any owner holds it, and its external_ids come from
// the lowest owner, so the result does not depend on the order of changes.
//
// Memory: the row in the table is the flow object an owner produced (no copy). Almost every
// flow has one owner, recorded as the owner's name; only a flow held by several keeps each
// owner's version in a map.
import assert from 'node:assert/strict';
import type * as sb from '../../ovsdb/rows/sb.js';
import type { Uuid } from '../../ovsdb/index.js';
import type { DatapathInfo, DatapathsChange, DatapathsData } from '../datapaths.js';
import type { EngineNode, NodeInputs } from '../engine.js';
import type { MulticastChange, MulticastData } from '../multicast.js';
import { hasUnknown } from '../multicast.js';
import type { PortInfo, PortsChange, PortsData } from '../ports.js';
import type { AclsChange, AclsData, SwitchAcls } from '../acls.js';
import type { RoutersChange, RoutersData } from '../routers.js';
import { sameData } from '../same-data.js';
import { SbChangeSet, SbTable } from '../sb-changes.js';
import { NO_ACL_FLAGS, aclFlows } from './acl.js';
import { routerDatapathFlows, routerPortFlows } from './router.js';
import type { SwitchRouterPort } from './switch.js';
import { switchDatapathFlows, switchPortFlows } from './switch.js';

export interface LflowsData {
  /** Owner → its flows (one per UUID), in the order it produced them. */
  readonly owners: Map<string, readonly sb.Logical_Flow[]>;
  /** Flow UUID → its one owner, or, when several produce it, each owner's version. */
  readonly holders: Map<Uuid, string | Map<string, sb.Logical_Flow>>;
  readonly table: SbTable;
}

const NO_FLOWS: readonly sb.Logical_Flow[] = Object.freeze([]);

function lowestKey<T>(m: ReadonlyMap<string, T>): string | undefined {
  let best: string | undefined;
  for (const k of m.keys()) if (best === undefined || k < best) best = k;
  return best;
}

function sameHints(a: sb.Logical_Flow, b: sb.Logical_Flow): boolean {
  return a.external_ids.get('stage-hint') === b.external_ids.get('stage-hint') && a.tags.get('in_out_port') === b.tags.get('in_out_port');
}

/** Makes `row` the table's row for its UUID unless the current one has the same hints. */
function show(data: LflowsData, row: sb.Logical_Flow, out: SbChangeSet): void {
  const current = data.table.rows.get(row._uuid) as unknown as sb.Logical_Flow | undefined;
  if (current !== undefined && sameHints(current, row)) return;
  // Same UUID means same _version: the old row goes first so that `put` writes the new one.
  if (current !== undefined) data.table.remove(row._uuid, out);
  data.table.put(row, out);
}

/** Shows the lowest owner's version of a shared flow, or the last one's when one is left. */
function showShared(data: LflowsData, uuid: Uuid, versions: Map<string, sb.Logical_Flow>, out: SbChangeSet): void {
  const first = lowestKey(versions) as string;
  if (versions.size === 1) data.holders.set(uuid, first);
  show(data, versions.get(first) as sb.Logical_Flow, out);
}

function release(data: LflowsData, owner: string, uuid: Uuid, out: SbChangeSet): void {
  const h = data.holders.get(uuid);
  if (h === undefined) assert.fail(`lflow ${uuid} released by ${owner} but held by nobody`);
  if (typeof h === 'string') {
    if (h !== owner) assert.fail(`lflow ${uuid} released by ${owner} but held by ${h}`);
    data.holders.delete(uuid);
    data.table.remove(uuid, out);
    return;
  }
  h.delete(owner);
  showShared(data, uuid, h, out);
}

function hold(data: LflowsData, owner: string, flow: sb.Logical_Flow, out: SbChangeSet): void {
  const uuid = flow._uuid;
  const h = data.holders.get(uuid);
  if (h === undefined) {
    // A flow nobody holds has no row (the table holds exactly the held flows): the common
    // case of a new flow costs one lookup and two inserts in these large maps.
    data.holders.set(uuid, owner);
    data.table.insert(flow, out);
    return;
  }
  if (h === owner) {
    show(data, flow, out);
    return;
  }
  let versions = h;
  if (typeof versions === 'string') {
    versions = new Map([[versions, data.table.rows.get(uuid) as unknown as sb.Logical_Flow]]);
    data.holders.set(uuid, versions);
  }
  versions.set(owner, flow);
  showShared(data, uuid, versions, out);
}

/** The same flows, by UUID and hints, in the same order: regenerating changed nothing. */
function sameFlows(a: readonly sb.Logical_Flow[], b: readonly sb.Logical_Flow[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as sb.Logical_Flow;
    const y = b[i] as sb.Logical_Flow;
    if (x._uuid !== y._uuid || !sameHints(x, y)) return false;
  }
  return true;
}

/** Up to this many flows, an owner's flows are compared pairwise rather than through a map. */
const PAIRWISE_FLOWS_MAX = 8;

/**
 * `produced` without repeated UUIDs: an owner may produce a flow twice (an address listed
 * twice); its last copy counts, in the place of its first.
 */
function distinctFlows(produced: readonly sb.Logical_Flow[]): readonly sb.Logical_Flow[] {
  if (produced.length <= PAIRWISE_FLOWS_MAX) {
    let repeated = false;
    for (let i = 1; i < produced.length && !repeated; i++) {
      for (let j = 0; j < i; j++) if ((produced[j] as sb.Logical_Flow)._uuid === (produced[i] as sb.Logical_Flow)._uuid) repeated = true;
    }
    if (!repeated) return produced;
  }
  const byUuid = new Map<Uuid, sb.Logical_Flow>();
  for (const f of produced) byUuid.set(f._uuid, f);
  return byUuid.size === produced.length ? produced : [...byUuid.values()];
}

function setOwner(data: LflowsData, owner: string, produced: readonly sb.Logical_Flow[], out: SbChangeSet): void {
  const flows = distinctFlows(produced);
  const old = data.owners.get(owner) ?? NO_FLOWS;
  if (sameFlows(old, flows)) return;
  if (old.length > 0) {
    const kept = flows.length > PAIRWISE_FLOWS_MAX ? new Set(flows.map((f) => f._uuid)) : undefined;
    for (const f of old) {
      const stays = kept !== undefined ? kept.has(f._uuid) : flows.some((g) => g._uuid === f._uuid);
      if (!stays) release(data, owner, f._uuid, out);
    }
  }
  for (const f of flows) hold(data, owner, f, out);
  if (flows.length === 0) data.owners.delete(owner);
  else data.owners.set(owner, flows);
}

/**
 * The node's change in one run: the flow rows written, and the owners already regenerated.
 * Every input is final when the node runs, so an owner that two handlers of the run both
 * reach (a new switch: its datapath, its multicast group, its ACL state) is built once.
 */
export class FlowChanges extends SbChangeSet {
  readonly regenerated = new Set<string>();

  /** Whether `owner` still has to be regenerated in this run (and notes that it will be). */
  claim(owner: string): boolean {
    if (this.regenerated.has(owner)) return false;
    this.regenerated.add(owner);
    return true;
  }
}

function datapathOwner(sbUuid: Uuid): string {
  return `d ${sbUuid}`;
}

function portOwner(name: string): string {
  return `p ${name}`;
}

/** What regenerating an owner reads: the inputs' current data. */
interface Sources {
  readonly dps: DatapathsData;
  readonly ports: PortsData;
  readonly mc: MulticastData;
  readonly routers: RoutersData;
  readonly acls: AclsData;
}

function sourcesOf(inputs: NodeInputs): Sources {
  return {
    dps: inputs.data<DatapathsData>('datapaths'),
    ports: inputs.data<PortsData>('ports'),
    mc: inputs.data<MulticastData>('multicast'),
    routers: inputs.data<RoutersData>('routers'),
    acls: inputs.data<AclsData>('acls'),
  };
}

/** The owner of one ACL's flows on one switch. */
function aclOwner(dp: Uuid, acl: Uuid): string {
  return `a ${dp} ${acl}`;
}

/** Whether an owner (its datapath or port) still exists in the inputs. */
function ownerExists(owner: string, src: Sources): boolean {
  const id = owner.slice(2);
  if (owner.startsWith('a ')) {
    const [dp, acl] = id.split(' ') as [Uuid, Uuid];
    return src.acls.bySwitch.get(dp)?.acls.has(acl) === true;
  }
  return owner.startsWith('d ') ? src.dps.bySb.has(id) : src.ports.byName.has(id);
}

function regenDatapath(data: LflowsData, src: Sources, sbUuid: Uuid, out: FlowChanges): void {
  if (!out.claim(datapathOwner(sbUuid))) return;
  const info = src.dps.bySb.get(sbUuid);
  let flows: readonly sb.Logical_Flow[] = NO_FLOWS;
  if (info !== undefined && info.kind === 'switch') flows = switchDatapathFlows(info, hasUnknown(src.mc, sbUuid), src.acls.bySwitch.get(sbUuid) ?? NO_ACL_FLAGS);
  else if (info !== undefined) {
    const facts = src.routers.bySb.get(sbUuid);
    if (facts !== undefined) flows = routerDatapathFlows(facts);
  }
  setOwner(data, datapathOwner(sbUuid), flows, out);
}

/** The router ports of a switch, with their peers, in name order. */
function routerPortsOf(src: Sources, dp: Uuid): SwitchRouterPort[] {
  const out: SwitchRouterPort[] = [];
  for (const name of [...(src.ports.routersByDp.get(dp) ?? [])].sort()) {
    const peer = src.ports.byName.get(name)?.routerPeer;
    const routerLd = peer === undefined ? undefined : src.dps.bySb.get(peer.dp)?.logicalDatapath;
    if (peer !== undefined && routerLd !== undefined) out.push({ lsp: name, peer, routerLd });
  }
  return out;
}

function lspFlows(src: Sources, p: PortInfo, dp: DatapathInfo): readonly sb.Logical_Flow[] {
  return switchPortFlows(p, {
    dp: dp.logicalDatapath, allRouter: src.ports.allRouter.get(p.dp) === true, vlanPassthru: dp.vlanPassthru,
    hasStateful: src.acls.bySwitch.get(p.dp)?.hasStateful === true,
    routerPorts: routerPortsOf(src, p.dp), peerRouter: p.routerPeer === undefined ? undefined : src.routers.bySb.get(p.routerPeer.dp),
  });
}

function lrpFlows(src: Sources, p: PortInfo): readonly sb.Logical_Flow[] {
  const router = src.routers.bySb.get(p.dp);
  const facts = router?.ports.find((rp) => rp.name === p.name);
  if (router === undefined || facts === undefined) return NO_FLOWS;
  const peer = p.peer === undefined ? undefined : src.ports.byName.get(p.peer);
  const peerLd = peer === undefined || !p.peerIsLrp ? undefined : src.dps.bySb.get(peer.dp)?.logicalDatapath;
  return routerPortFlows(facts, router, {
    lrpPeer: peer !== undefined && peerLd !== undefined ? { name: peer.name, logicalDatapath: peerLd } : undefined,
    hasPeer: p.peer !== undefined, peerColumnSet: p.peerColumnSet,
  });
}

function regenPort(data: LflowsData, src: Sources, name: string, out: FlowChanges): void {
  if (!out.claim(portOwner(name))) return;
  const p = src.ports.byName.get(name);
  let flows = NO_FLOWS;
  if (p !== undefined) {
    const dp = src.dps.bySb.get(p.dp);
    if (dp === undefined) assert.fail(`port ${name} is bound to datapath ${p.dp}, which does not exist`);
    flows = p.kind === 'lsp' ? lspFlows(src, p, dp) : lrpFlows(src, p);
  }
  setOwner(data, portOwner(name), flows, out);
}

function regenAcl(data: LflowsData, src: Sources, dp: Uuid, acl: Uuid, out: FlowChanges): void {
  if (!out.claim(aclOwner(dp, acl))) return;
  const state = src.acls.bySwitch.get(dp);
  const facts = state?.acls.get(acl);
  const ld = src.dps.bySb.get(dp)?.logicalDatapath;
  const flows = state === undefined || facts === undefined || ld === undefined ? NO_FLOWS : aclFlows(ld, facts, state.hasStateful);
  setOwner(data, aclOwner(dp, acl), flows, out);
}

/** Owners to regenerate in one handler, gathered first so each is regenerated once, in order. */
class Dirty {
  readonly datapaths = new Set<Uuid>();
  readonly ports = new Set<string>();
  /** [switch, ACL] pairs, as "<dp> <acl>". */
  readonly acls = new Set<string>();
  /** Every port bound to switch `dp` (their flows read the switch's router ports). */
  allPortsOf(src: Sources, dp: Uuid): void {
    for (const name of src.ports.byDp.get(dp) ?? []) this.ports.add(name);
  }
  regen(data: LflowsData, src: Sources, out: FlowChanges): void {
    for (const sbUuid of [...this.datapaths].sort()) regenDatapath(data, src, sbUuid, out);
    for (const name of [...this.ports].sort()) regenPort(data, src, name, out);
    for (const pair of [...this.acls].sort()) {
      const [dp, acl] = pair.split(' ') as [Uuid, Uuid];
      regenAcl(data, src, dp, acl, out);
    }
  }
}

export function lflowsNode(): EngineNode<LflowsData, FlowChanges> {
  return {
    name: 'lflows',
    inputs: ['datapaths', 'ports', 'multicast', 'routers', 'acls'],
    init: () => ({ owners: new Map(), holders: new Map(), table: new SbTable('Logical_Flow') }),
    newChange: () => new FlowChanges(),
    isEmpty: (c) => c.size === 0,
    recompute(data: LflowsData, inputs: NodeInputs, out: FlowChanges): void {
      out.maybeTrackWhole(data.table);
      const src = sourcesOf(inputs);
      // Owners that went away first (the result does not depend on the order), then every
      // datapath and port afresh.
      const gone = [...data.owners.keys()].filter((owner) => !ownerExists(owner, src));
      for (const owner of gone.sort()) setOwner(data, owner, NO_FLOWS, out);
      for (const sbUuid of [...src.dps.bySb.keys()].sort()) regenDatapath(data, src, sbUuid, out);
      for (const name of [...src.ports.byName.keys()].sort()) regenPort(data, src, name, out);
      for (const dp of [...src.acls.bySwitch.keys()].sort()) {
        for (const acl of [...(src.acls.bySwitch.get(dp) as SwitchAcls).acls.keys()].sort()) regenAcl(data, src, dp, acl, out);
      }
    },
    handlers: {
      datapaths(data: LflowsData, change: unknown, inputs: NodeInputs, out: FlowChanges) {
        const src = sourcesOf(inputs);
        const dirty = new Dirty();
        for (const [sbUuid, { old, new: now }] of (change as DatapathsChange).datapaths) {
          dirty.datapaths.add(sbUuid);
          // A switch's ARP responder flows depend on vlan-passthru.
          if (old !== undefined && now !== undefined && old.vlanPassthru !== now.vlanPassthru) dirty.allPortsOf(src, sbUuid);
        }
        dirty.regen(data, src, out);
        return 'handled';
      },
      ports(data: LflowsData, change: unknown, inputs: NodeInputs, out: FlowChanges) {
        const src = sourcesOf(inputs);
        const c = change as PortsChange;
        const dirty = new Dirty();
        for (const [name, { old, new: now }] of c.ports) {
          dirty.ports.add(name);
          for (const p of [old, now]) {
            if (p === undefined) continue;
            // A router port of a switch: every port there resolves addresses through it.
            if (p.kind === 'lsp' && p.routerPeer !== undefined) dirty.allPortsOf(src, p.dp);
            // An LRP: the LRPs peering with it emit flows into its router.
            if (p.kind === 'lrp') for (const other of src.ports.peerRefs.get(name) ?? []) dirty.ports.add(other);
          }
        }
        // Router ports' ARP/ND flows depend on whether their switch has only router ports.
        for (const dp of c.allRouterFlipped) for (const name of src.ports.routersByDp.get(dp) ?? []) dirty.ports.add(name);
        dirty.regen(data, src, out);
        return 'handled';
      },
      multicast(data: LflowsData, change: unknown, inputs: NodeInputs, out: FlowChanges) {
        const flipped = (change as MulticastChange).unknownFlipped;
        if (flipped.size === 0) return 'unchanged';
        const src = sourcesOf(inputs);
        for (const sbUuid of [...flipped].sort()) regenDatapath(data, src, sbUuid, out);
        return 'handled';
      },
      acls(data: LflowsData, change: unknown, inputs: NodeInputs, out: FlowChanges) {
        const src = sourcesOf(inputs);
        const dirty = new Dirty();
        for (const [dp, { old, new: now }] of (change as AclsChange).switches) {
          // A switch without ACL state has the default flags (no ACLs, not stateful).
          const flagsChanged = (old?.hasAcls ?? false) !== (now?.hasAcls ?? false) || (old?.hasStateful ?? false) !== (now?.hasStateful ?? false);
          if (flagsChanged) {
            // The switch's default ACL stages, its router/localnet/DHCP ports' conntrack flows
            // and every ACL's flows depend on whether the switch is stateful.
            dirty.datapaths.add(dp);
            dirty.allPortsOf(src, dp);
          }
          for (const [acl, facts] of old?.acls ?? []) if (flagsChanged || !sameData(facts, now?.acls.get(acl))) dirty.acls.add(`${dp} ${acl}`);
          for (const [acl, facts] of now?.acls ?? []) if (flagsChanged || !sameData(facts, old?.acls.get(acl))) dirty.acls.add(`${dp} ${acl}`);
        }
        dirty.regen(data, src, out);
        return 'handled';
      },
      routers(data: LflowsData, change: unknown, inputs: NodeInputs, out: FlowChanges) {
        const src = sourcesOf(inputs);
        const dirty = new Dirty();
        for (const [sbUuid, { old, new: now }] of (change as RoutersChange).routers) {
          dirty.datapaths.add(sbUuid);
          // A port's own facts changing regenerates it through the ports input.
          if (old !== undefined && now !== undefined && sameData(old.portFacing, now.portFacing)) continue;
          // Its ports' flows, and the switch side of the router LSPs facing them, read the
          // router's port-facing facts.
          for (const facts of [old, now]) {
            for (const rp of facts?.ports ?? []) {
              dirty.ports.add(rp.name);
              for (const lsp of src.ports.routerPortRefs.get(rp.name) ?? []) dirty.ports.add(lsp);
            }
          }
        }
        dirty.regen(data, src, out);
        return 'handled';
      },
    },
  };
}
