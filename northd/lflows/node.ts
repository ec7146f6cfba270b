// The Logical_Flow node: flows are owned by a datapath ("d <uuid>") or a port ("p <name>");
// regenerating an owner replaces its flows. Two owners may produce the same flow (same
// content, same UUID): the row is kept while any owner holds it, and its external_ids come from
// the lowest owner, so the result does not depend on the order of changes.
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
  readonly owners: Map<string, Uuid[]>;
  readonly holders: Map<Uuid, Map<string, sb.Logical_Flow>>;
  readonly table: SbTable;
}

function lowestKey<T>(m: ReadonlyMap<string, T>): string | undefined {
  let best: string | undefined;
  for (const k of m.keys()) if (best === undefined || k < best) best = k;
  return best;
}

function setOwner(data: LflowsData, owner: string, flows: readonly sb.Logical_Flow[], out: SbChangeSet): void {
  const touched = new Set<Uuid>();
  for (const uuid of data.owners.get(owner) ?? []) {
    data.holders.get(uuid)?.delete(owner);
    touched.add(uuid);
  }
  const uuids: Uuid[] = [];
  for (const f of flows) {
    let h = data.holders.get(f._uuid);
    if (h === undefined) data.holders.set(f._uuid, (h = new Map()));
    h.set(owner, f);
    uuids.push(f._uuid);
    touched.add(f._uuid);
  }
  if (uuids.length === 0) data.owners.delete(owner);
  else data.owners.set(owner, uuids);
  for (const uuid of touched) {
    const h = data.holders.get(uuid);
    const first = h === undefined ? undefined : lowestKey(h);
    if (h === undefined || first === undefined) {
      data.holders.delete(uuid);
      data.table.remove(uuid, out);
      continue;
    }
    const row = h.get(first) as sb.Logical_Flow;
    const current = data.table.rows.get(uuid) as unknown as sb.Logical_Flow | undefined;
    if (current === undefined || current.external_ids.get('stage-hint') !== row.external_ids.get('stage-hint') ||
      current.tags.get('in_out_port') !== row.tags.get('in_out_port')) {
      if (current !== undefined) data.table.remove(uuid, out);
      data.table.put(row, out);
    }
  }
}

function datapathOwner(sbUuid: Uuid): string {
  return `d ${sbUuid}`;
}

function portOwner(name: string): string {
  return `p ${name}`;
}

function regenDatapath(data: LflowsData, dps: DatapathsData, mc: MulticastData, nbUuid: Uuid | undefined, sbUuid: Uuid, out: SbChangeSet): void {
  const info = nbUuid === undefined ? undefined : dps.byNb.get(nbUuid);
  const flows = info !== undefined && info.kind === 'switch' ? switchDatapathFlows(info, hasUnknown(mc, sbUuid)) : [];
  setOwner(data, datapathOwner(sbUuid), flows, out);
}

function regenPort(data: LflowsData, ports: PortsData, name: string, p: PortInfo | undefined, out: SbChangeSet): void {
  setOwner(data, portOwner(name), p === undefined ? [] : switchPortFlows(p, ports.allRouter.get(p.dp) === true), out);
}

export function lflowsNode(): EngineNode<LflowsData, SbChangeSet> {
  return {
    name: 'lflows',
    inputs: ['datapaths', 'ports', 'multicast'],
    init: () => ({ owners: new Map(), holders: new Map(), table: new SbTable('Logical_Flow') }),
    newChange: () => new SbChangeSet(),
    isEmpty: (c) => c.size === 0,
    recompute(data: LflowsData, inputs: NodeInputs, out: SbChangeSet): void {
      const dps = inputs.data<DatapathsData>('datapaths');
      const ports = inputs.data<PortsData>('ports');
      const mc = inputs.data<MulticastData>('multicast');
      const wanted = new Set<string>();
      for (const info of [...dps.byNb.values()].sort((a, b) => (a.sbUuid < b.sbUuid ? -1 : 1))) {
        wanted.add(datapathOwner(info.sbUuid));
        regenDatapath(data, dps, mc, info.nbUuid, info.sbUuid, out);
      }
      for (const name of [...ports.byName.keys()].sort()) {
        wanted.add(portOwner(name));
        regenPort(data, ports, name, ports.byName.get(name), out);
      }
      for (const owner of [...data.owners.keys()].sort()) if (!wanted.has(owner)) setOwner(data, owner, [], out);
    },
    handlers: {
      datapaths(data: LflowsData, change: unknown, inputs: NodeInputs, out: SbChangeSet) {
        const dps = inputs.data<DatapathsData>('datapaths');
        const mc = inputs.data<MulticastData>('multicast');
        for (const [sbUuid, { new: now }] of (change as DatapathsChange).datapaths) regenDatapath(data, dps, mc, now?.nbUuid, sbUuid, out);
        return 'handled';
      },
      ports(data: LflowsData, change: unknown, inputs: NodeInputs, out: SbChangeSet) {
        const ports = inputs.data<PortsData>('ports');
        const c = change as PortsChange;
        const names = new Set(c.ports.keys());
        // Router ports' ARP/ND flows depend on whether their switch has only router ports.
        for (const dp of c.allRouterFlipped) for (const name of ports.routersByDp.get(dp) ?? []) names.add(name);
        for (const name of [...names].sort()) regenPort(data, ports, name, ports.byName.get(name), out);
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
