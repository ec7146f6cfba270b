// SB Mirror: one row per NB Mirror (ovn-northd 23.03's sync_mirrors), with its name, filter,
// sink, type and index as the NB row has them and no external_ids (ovn-northd copies none).
// Port_Binding.mirror_rules (ports.ts) names the rows of the mirrors a switch port is attached
// to; the chassis that binds the port makes the OVS mirror (agent/local).
//
// ovn-northd finds an SB row by the mirror's name and makes one when none has it; a renamed
// mirror so gets a new row. Here a row's UUID comes from the NB row's, so a port's mirror_rules
// is known from the port alone, and a rename changes the row, not the reference. Every NB
// Mirror has its row (the NB indexes names, so no two rows compete for one).
import type { Database, DbDelta, Uuid } from '../ovsdb/index.js';
import type * as nb from '../ovsdb/rows/nb.js';
import type * as sb from '../ovsdb/rows/sb.js';
import type { EngineNode, NodeInputs } from './engine.js';
import { hashUuid } from './hash.js';
import { nbGet, nbRows } from './nb.js';
import { SbChangeSet, SbTable, versioned } from './sb-changes.js';

export interface MirrorsData {
  readonly table: SbTable;
}

const NO_IDS: ReadonlyMap<string, string> = new Map();

/** The SB Mirror row of NB Mirror `nbUuid`. */
export function mirrorSbUuid(nbUuid: Uuid): Uuid {
  return hashUuid(['Mirror', nbUuid]);
}

function write(db: Database, data: MirrorsData, nbUuid: Uuid, out: SbChangeSet): void {
  const uuid = mirrorSbUuid(nbUuid);
  const m = nbGet<nb.Mirror>(db, 'Mirror', nbUuid);
  if (m === undefined) {
    data.table.remove(uuid, out);
    return;
  }
  data.table.put(versioned<sb.Mirror>({ _uuid: uuid, _version: '', name: m.name, filter: m.filter, sink: m.sink, type: m.type, index: m.index, external_ids: NO_IDS }), out);
}

export function mirrorsNode(): EngineNode<MirrorsData, SbChangeSet> {
  return {
    name: 'mirrors',
    inputs: ['nb'],
    init: () => ({ table: new SbTable('Mirror') }),
    newChange: () => new SbChangeSet(),
    isEmpty: (c) => c.size === 0,
    recompute(data: MirrorsData, inputs: NodeInputs, out: SbChangeSet): void {
      out.maybeTrackWhole(data.table);
      const db = inputs.data<Database>('nb');
      const live = [...nbRows(db, 'Mirror').keys()].sort();
      const wanted = new Set(live.map(mirrorSbUuid));
      for (const uuid of [...data.table.rows.keys()]) if (!wanted.has(uuid)) data.table.remove(uuid, out);
      for (const nbUuid of live) write(db, data, nbUuid, out);
    },
    handlers: {
      nb(data: MirrorsData, change: unknown, inputs: NodeInputs, out: SbChangeSet) {
        const db = inputs.data<Database>('nb');
        let any = false;
        for (const c of (change as DbDelta).changes) {
          if (c.table !== 'Mirror') continue;
          write(db, data, c.uuid, out);
          any = true;
        }
        return any ? 'handled' : 'unchanged';
      },
    },
  };
}
