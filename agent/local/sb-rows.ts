// The few Southbound tables the local side reads — Chassis, Encap, Chassis_Private,
// Port_Binding, the HA tables that decide who binds chassisredirect and external ports and with
// which chassis to run BFD, and SB_Global (its BFD timers) —
// folded from the agent's SbUpdates, with the lookups it needs. The flow side
// keeps its own store of everything; this one is small and local to agent/local/.
import type { Row } from '../../ovsdb/index.js';
import type * as sb from '../../ovsdb/rows/sb.js';
import type { HaLookups } from '../ha-chassis.js';
import type { SbUpdate } from '../sb-source.js';
import { mapsEqual } from './ovsdb-json.js';

export const LOCAL_SB_TABLES = ['Chassis', 'Encap', 'Chassis_Private', 'Port_Binding', 'HA_Chassis_Group', 'HA_Chassis', 'SB_Global'] as const;
type LocalTable = (typeof LOCAL_SB_TABLES)[number];

const isLocalTable = (t: string): t is LocalTable => (LOCAL_SB_TABLES as readonly string[]).includes(t);

/**
 * Whether a Chassis_Private or SB_Global row changed only in what the local side never reads. Of
 * Chassis_Private it reads the name and the chassis link (chassis-record.ts), of SB_Global the
 * options (the BFD timers), while nb_cfg and its timestamp move with every acknowledgement and
 * every --wait: a pass for those would run for nothing.
 */
function sameForLocal(table: 'Chassis_Private' | 'SB_Global', old: Row, row: Row): boolean {
  if (table === 'SB_Global') return mapsEqual(old.options as ReadonlyMap<string, string>, row.options as ReadonlyMap<string, string>);
  const a = old.chassis as readonly string[];
  const b = row.chassis as readonly string[];
  return old.name === row.name && a.length === b.length && a.every((x, i) => x === b[i]);
}

export class SbRows implements HaLookups {
  private readonly tables = new Map<LocalTable, Map<string, Row>>(LOCAL_SB_TABLES.map((t) => [t, new Map()]));
  private readonly portByName = new Map<string, string>();
  /** Whether a first update (the initial snapshot) has arrived. */
  ready = false;
  revision = 0;

  /**
   * Folds one update in; returns whether any row of these tables changed in what the local
   * side reads (a Chassis_Private whose name and chassis stayed the same does not count). A
   * reset replaces everything held.
   */
  apply(u: SbUpdate): boolean {
    let changed = false;
    if (u.reset) {
      for (const t of this.tables.values()) {
        if (t.size > 0) changed = true;
        t.clear();
      }
      this.portByName.clear();
    }
    for (const c of u.changes) {
      if (!isLocalTable(c.table)) continue;
      const t = this.tables.get(c.table) as Map<string, Row>;
      const old = t.get(c.uuid);
      // The name leaves the index only if it still names this row: a port deleted and re-created
      // under the same name in one update may come in either order.
      if (c.table === 'Port_Binding' && old !== undefined && this.portByName.get(old.logical_port as string) === c.uuid) this.portByName.delete(old.logical_port as string);
      if (c.row === undefined) t.delete(c.uuid);
      else {
        t.set(c.uuid, c.row);
        if (c.table === 'Port_Binding') this.portByName.set(c.row.logical_port as string, c.uuid);
      }
      if ((c.table === 'Chassis_Private' || c.table === 'SB_Global') && old !== undefined && c.row !== undefined && sameForLocal(c.table, old, c.row)) continue;
      changed = true;
    }
    if (!this.ready) changed = true;
    this.ready = true;
    this.revision = u.toRevision;
    return changed;
  }

  /** The rows of one table, typed as the SB schema's row interface for it. */
  rows<T>(table: LocalTable): ReadonlyMap<string, T> {
    return this.tables.get(table) as unknown as ReadonlyMap<string, T>;
  }

  chassis(uuid: string): sb.Chassis | undefined {
    return this.rows<sb.Chassis>('Chassis').get(uuid);
  }

  haChassisGroup(uuid: string): sb.HA_Chassis_Group | undefined {
    return this.rows<sb.HA_Chassis_Group>('HA_Chassis_Group').get(uuid);
  }

  haChassis(uuid: string): sb.HA_Chassis | undefined {
    return this.rows<sb.HA_Chassis>('HA_Chassis').get(uuid);
  }

  /** The SB_Global row, if the SB has one. */
  sbGlobal(): sb.SB_Global | undefined {
    for (const r of this.rows<sb.SB_Global>('SB_Global').values()) return r;
    return undefined;
  }

  chassisByName(name: string): sb.Chassis | undefined {
    for (const r of this.rows<sb.Chassis>('Chassis').values()) if (r.name === name) return r;
    return undefined;
  }

  chassisPrivateByName(name: string): sb.Chassis_Private | undefined {
    for (const r of this.rows<sb.Chassis_Private>('Chassis_Private').values()) if (r.name === name) return r;
    return undefined;
  }

  encap(uuid: string): sb.Encap | undefined {
    return this.rows<sb.Encap>('Encap').get(uuid);
  }

  portBinding(logicalPort: string): sb.Port_Binding | undefined {
    const uuid = this.portByName.get(logicalPort);
    return uuid === undefined ? undefined : this.rows<sb.Port_Binding>('Port_Binding').get(uuid);
  }
}
