// SB_Global: the one row, mirroring NB_Global.nb_cfg (0 when there is no NB_Global row).
// ovn-northd also writes options (mac_prefix, svc_monitor_mac, ...) that it picks at random;
// those must be chosen before the log (by the leader) and are not projected here yet.
import type { Database, DbDelta } from '../ovsdb/index.js';
import type * as nb from '../ovsdb/rows/nb.js';
import type * as sb from '../ovsdb/rows/sb.js';
import type { EngineNode, NodeInputs } from './engine.js';
import { hashUuid } from './hash.js';
import { nbRows } from './nb.js';
import { SbChangeSet, SbTable, versioned } from './sb-changes.js';

export const SB_GLOBAL_UUID = hashUuid(['SB_Global']);

export interface SbGlobalData {
  readonly table: SbTable;
}

function nbCfgOf(db: Database): number {
  let cfg = 0;
  // NB_Global has at most one row (maxRows 1); iteration is over at most one.
  for (const g of nbRows<nb.NB_Global>(db, 'NB_Global').values()) cfg = g.nb_cfg;
  return cfg;
}

function write(data: SbGlobalData, db: Database, out: SbChangeSet): void {
  const row = versioned<sb.SB_Global>({ _uuid: SB_GLOBAL_UUID, _version: '', nb_cfg: nbCfgOf(db), external_ids: new Map<string, string>(), connections: [], ssl: [], options: new Map<string, string>(), ipsec: false });
  data.table.put(row, out);
}

export function sbGlobalNode(): EngineNode<SbGlobalData, SbChangeSet> {
  return {
    name: 'sb_global',
    inputs: ['nb'],
    init: () => ({ table: new SbTable('SB_Global') }),
    newChange: () => new SbChangeSet(),
    isEmpty: (c) => c.size === 0,
    recompute(data: SbGlobalData, inputs: NodeInputs, out: SbChangeSet): void {
      write(data, inputs.data<Database>('nb'), out);
    },
    handlers: {
      nb(data: SbGlobalData, change: unknown, inputs: NodeInputs, out: SbChangeSet) {
        if (!(change as DbDelta).changes.some((c) => c.table === 'NB_Global')) return 'unchanged';
        write(data, inputs.data<Database>('nb'), out);
        return 'handled';
      },
    },
  };
}
