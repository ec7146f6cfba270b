// SB Chassis_Template_Var: a copy of each NB Chassis_Template_Var (sync_template_vars), its
// chassis name and its variables. Template load balancers name the variables ("^NAME") in their
// VIPs and backends; each chassis reads the row named after it and expands them in its flows.
//
// A row is the NB row's, keyed by the NB UUID, so a change is one row written again.
import type { Database, DbDelta, Uuid } from '../ovsdb/index.js';
import type * as nb from '../ovsdb/rows/nb.js';
import type * as sb from '../ovsdb/rows/sb.js';
import type { EngineNode, NodeInputs } from './engine.js';
import { hashUuid } from './hash.js';
import { nbGet, nbRows } from './nb.js';
import { SbChangeSet, SbTable, versioned } from './sb-changes.js';

export interface TemplateVarsData {
  readonly table: SbTable;
}

/** The SB row's UUID: a function of the NB row's, as every replica derives it. */
export function sbTemplateVarUuid(nbUuid: Uuid): Uuid {
  return hashUuid(['Chassis_Template_Var', nbUuid]);
}

function write(db: Database, data: TemplateVarsData, nbUuid: Uuid, out: SbChangeSet): void {
  const row = nbGet<nb.Chassis_Template_Var>(db, 'Chassis_Template_Var', nbUuid);
  const uuid = sbTemplateVarUuid(nbUuid);
  if (row === undefined) data.table.remove(uuid, out);
  else data.table.put(versioned<sb.Chassis_Template_Var>({ _uuid: uuid, _version: '', chassis: row.chassis, variables: row.variables }), out);
}

export function templateVarsNode(): EngineNode<TemplateVarsData, SbChangeSet> {
  return {
    name: 'template_vars',
    inputs: ['nb'],
    init: () => ({ table: new SbTable('Chassis_Template_Var') }),
    newChange: () => new SbChangeSet(),
    isEmpty: (c) => c.size === 0,
    recompute(data: TemplateVarsData, inputs: NodeInputs, out: SbChangeSet): void {
      out.maybeTrackWhole(data.table);
      const db = inputs.data<Database>('nb');
      const present = new Set(nbRows<nb.Chassis_Template_Var>(db, 'Chassis_Template_Var').keys());
      const wanted = new Set([...present].map(sbTemplateVarUuid));
      for (const uuid of [...data.table.rows.keys()]) if (!wanted.has(uuid)) data.table.remove(uuid, out);
      for (const nbUuid of [...present].sort()) write(db, data, nbUuid, out);
    },
    handlers: {
      nb(data: TemplateVarsData, change: unknown, inputs: NodeInputs, out: SbChangeSet) {
        const db = inputs.data<Database>('nb');
        const touched = new Set<Uuid>();
        for (const c of (change as DbDelta).changes) if (c.table === 'Chassis_Template_Var') touched.add(c.uuid);
        if (touched.size === 0) return 'unchanged';
        for (const nbUuid of [...touched].sort()) write(db, data, nbUuid, out);
        return 'handled';
      },
    },
  };
}
