// SB Address_Set: every NB Address_Set by name with its addresses, and `svc_monitor_mac`
// holding the service-monitor MAC of SB_Global (ovn-northd publishes it as an address set so
// that flows can match $svc_monitor_mac). Not yet: the <port_group>_ip4/_ip6 sets.
// The SB row's UUID derives from the set's name, so replicas agree and a set keeps its row.
import type { Database, DbDelta } from '../ovsdb/index.js';
import type * as nb from '../ovsdb/rows/nb.js';
import type * as sb from '../ovsdb/rows/sb.js';
import type { EngineNode, NodeInputs } from './engine.js';
import { hashUuid } from './hash.js';
import { nbRows } from './nb.js';
import { SbChangeSet, SbTable, versioned } from './sb-changes.js';
import { svcMonitorMacOf } from './sb-global.js';

export interface AddressSetsData {
  readonly table: SbTable;
}

/** The SB rows by name: what the NB holds now. */
function desired(db: Database): Map<string, readonly string[]> {
  const out = new Map<string, readonly string[]>();
  for (const s of nbRows<nb.Address_Set>(db, 'Address_Set').values()) out.set(s.name, s.addresses);
  const mac = svcMonitorMacOf(db);
  if (mac !== undefined && !out.has('svc_monitor_mac')) out.set('svc_monitor_mac', [mac]);
  return out;
}

function sync(data: AddressSetsData, db: Database, out: SbChangeSet): void {
  const want = desired(db);
  const keep = new Set<string>();
  for (const name of [...want.keys()].sort()) {
    const uuid = hashUuid(['Address_Set', name]);
    keep.add(uuid);
    data.table.put(versioned<sb.Address_Set>({ _uuid: uuid, _version: '', name, addresses: want.get(name) as readonly string[] }), out);
  }
  for (const uuid of [...data.table.rows.keys()].sort()) if (!keep.has(uuid)) data.table.remove(uuid, out);
}

export function addressSetsNode(): EngineNode<AddressSetsData, SbChangeSet> {
  return {
    name: 'address_sets',
    inputs: ['nb'],
    init: () => ({ table: new SbTable('Address_Set') }),
    newChange: () => new SbChangeSet(),
    isEmpty: (c) => c.size === 0,
    recompute(data: AddressSetsData, inputs: NodeInputs, out: SbChangeSet): void {
      sync(data, inputs.data<Database>('nb'), out);
    },
    handlers: {
      nb(data: AddressSetsData, change: unknown, inputs: NodeInputs, out: SbChangeSet) {
        if (!(change as DbDelta).changes.some((c) => c.table === 'Address_Set' || c.table === 'NB_Global')) return 'unchanged';
        // Address sets are few and small next to flows: re-syncing them all is cheap, and put()
        // records only the rows that really changed.
        sync(data, inputs.data<Database>('nb'), out);
        return 'handled';
      },
    },
  };
}
