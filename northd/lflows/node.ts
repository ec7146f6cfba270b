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
import type { DatapathsChange, DatapathsData } from '../datapaths.js';
import type { EngineNode, NodeInputs } from '../engine.js';
import type { MulticastChange, MulticastData } from '../multicast.js';
import { hasUnknown } from '../multicast.js';
import type { PortInfo, PortsChange, PortsData } from '../ports.js';
import { SbChangeSet, SbTable } from '../sb-changes.js';
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

function datapathOwner(sbUuid: Uuid): string {
  return `d ${sbUuid}`;
}

function portOwner(name: string): string {
  return `p ${name}`;
}

/** Whether an owner (its datapath or port) still exists in the inputs. */
function ownerExists(owner: string, dps: DatapathsData, ports: PortsData): boolean {
  const id = owner.slice(2);
  return owner.startsWith('d ') ? dps.bySb.has(id) : ports.byName.has(id);
}

function regenDatapath(data: LflowsData, dps: DatapathsData, mc: MulticastData, nbUuid: Uuid | undefined, sbUuid: Uuid, out: SbChangeSet): void {
  const info = nbUuid === undefined ? undefined : dps.byNb.get(nbUuid);
  const flows = info !== undefined && info.kind === 'switch' ? switchDatapathFlows(info, hasUnknown(mc, sbUuid)) : NO_FLOWS;
  setOwner(data, datapathOwner(sbUuid), flows, out);
}

function regenPort(data: LflowsData, dps: DatapathsData, ports: PortsData, name: string, p: PortInfo | undefined, out: SbChangeSet): void {
  let flows = NO_FLOWS;
  if (p !== undefined) {
    const dp = dps.bySb.get(p.dp);
    if (dp === undefined) assert.fail(`port ${name} is bound to datapath ${p.dp}, which does not exist`);
    flows = switchPortFlows(p, ports.allRouter.get(p.dp) === true, dp.logicalDatapath);
  }
  setOwner(data, portOwner(name), flows, out);
}

export function lflowsNode(): EngineNode<LflowsData, SbChangeSet> {
  return {
    name: 'lflows',
    inputs: ['datapaths', 'ports', 'multicast'],
    init: () => ({ owners: new Map(), holders: new Map(), table: new SbTable('Logical_Flow') }),
    newChange: () => new SbChangeSet(),
    isEmpty: (c) => c.size === 0,
    recompute(data: LflowsData, inputs: NodeInputs, out: SbChangeSet): void {
      out.maybeTrackWhole(data.table);
      const dps = inputs.data<DatapathsData>('datapaths');
      const ports = inputs.data<PortsData>('ports');
      const mc = inputs.data<MulticastData>('multicast');
      // Owners that went away first (the result does not depend on the order), then every
      // datapath and port afresh.
      const gone = [...data.owners.keys()].filter((owner) => !ownerExists(owner, dps, ports));
      for (const owner of gone.sort()) setOwner(data, owner, NO_FLOWS, out);
      for (const info of [...dps.byNb.values()].sort((a, b) => (a.sbUuid < b.sbUuid ? -1 : 1))) regenDatapath(data, dps, mc, info.nbUuid, info.sbUuid, out);
      for (const name of [...ports.byName.keys()].sort()) regenPort(data, dps, ports, name, ports.byName.get(name), out);
    },
    handlers: {
      datapaths(data: LflowsData, change: unknown, inputs: NodeInputs, out: SbChangeSet) {
        const dps = inputs.data<DatapathsData>('datapaths');
        const mc = inputs.data<MulticastData>('multicast');
        for (const [sbUuid, { new: now }] of (change as DatapathsChange).datapaths) regenDatapath(data, dps, mc, now?.nbUuid, sbUuid, out);
        return 'handled';
      },
      ports(data: LflowsData, change: unknown, inputs: NodeInputs, out: SbChangeSet) {
        const dps = inputs.data<DatapathsData>('datapaths');
        const ports = inputs.data<PortsData>('ports');
        const c = change as PortsChange;
        const names = new Set(c.ports.keys());
        // Router ports' ARP/ND flows depend on whether their switch has only router ports.
        for (const dp of c.allRouterFlipped) for (const name of ports.routersByDp.get(dp) ?? []) names.add(name);
        for (const name of [...names].sort()) regenPort(data, dps, ports, name, ports.byName.get(name), out);
        return 'handled';
      },
      multicast(data: LflowsData, change: unknown, inputs: NodeInputs, out: SbChangeSet) {
        const flipped = (change as MulticastChange).unknownFlipped;
        if (flipped.size === 0) return 'unchanged';
        const dps = inputs.data<DatapathsData>('datapaths');
        const mc = inputs.data<MulticastData>('multicast');
        for (const sbUuid of [...flipped].sort()) regenDatapath(data, dps, mc, dps.bySb.get(sbUuid)?.nbUuid, sbUuid, out);
        return 'handled';
      },
    },
  };
}
