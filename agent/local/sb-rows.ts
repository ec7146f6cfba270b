// The few Southbound tables the local side reads — Chassis, Encap, Chassis_Private,
// Port_Binding, the HA tables that decide who binds chassisredirect and external ports and with
// which chassis to run BFD, SB_Global (its BFD timers) and Mirror (the port mirrors made on the
// integration bridge, mirrors.ts) —
// folded from the agent's SbUpdates, with the lookups it needs. The flow side
// keeps its own store of everything; this one is small and local to agent/local/.
import type { Row } from '../../ovsdb/index.js';
import type * as sb from '../../ovsdb/rows/sb.js';
import type { HaLookups } from '../ha-chassis.js';
import type { SbUpdate } from '../sb-source.js';
import { mapsEqual } from './ovsdb-json.js';

export const LOCAL_SB_TABLES = ['Chassis', 'Encap', 'Chassis_Private', 'Port_Binding', 'HA_Chassis_Group', 'HA_Chassis', 'SB_Global', 'Mirror'] as const;
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
  /** Port_Bindings that are not plain VIFs (a type, or a parent port): few, and each may matter. */
  private readonly specialPorts = new Set<string>();
  /** Port_Bindings by the chassis they are bound to (chassis and additional_chassis). */
  private readonly portsByChassis = new Map<string, Set<string>>();
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
      this.specialPorts.clear();
      this.portsByChassis.clear();
    }
    for (const c of u.changes) {
      if (!isLocalTable(c.table)) continue;
      const t = this.tables.get(c.table) as Map<string, Row>;
      const old = t.get(c.uuid);
      // The name leaves the index only if it still names this row: a port deleted and re-created
      // under the same name in one update may come in either order.
      if (c.table === 'Port_Binding' && old !== undefined) {
        if (this.portByName.get(old.logical_port as string) === c.uuid) this.portByName.delete(old.logical_port as string);
        this.indexPort(old as unknown as sb.Port_Binding, false);
      }
      if (c.row === undefined) t.delete(c.uuid);
      else {
        t.set(c.uuid, c.row);
        if (c.table === 'Port_Binding') {
          this.portByName.set(c.row.logical_port as string, c.uuid);
          this.indexPort(c.row as unknown as sb.Port_Binding, true);
        }
      }
      if ((c.table === 'Chassis_Private' || c.table === 'SB_Global') && old !== undefined && c.row !== undefined && sameForLocal(c.table, old, c.row)) continue;
      changed = true;
    }
    if (!this.ready) changed = true;
    this.ready = true;
    this.revision = u.toRevision;
    return changed;
  }

  /**
   * The Port_Bindings a pass of the local side can act on, of all it holds: every port that is
   * not a plain VIF (patch, localnet, gateway, HA, virtual, container ports...), those bound to
   * `chassisUuid`, and those named in `names` (the local interfaces' iface-ids, the ports with a
   * transaction in flight). A plain VIF outside these is neither here nor wanted here, so
   * nothing is decided for it (decideBindings, decideVirtualBindings, localDatapaths: the peer
   * of a patch port is a patch or l3gateway port, as northd makes them): a switch of thousands
   * of ports elsewhere costs a pass nothing.
   */
  portBindingsFor(chassisUuid: string | undefined, names: Iterable<string>): sb.Port_Binding[] {
    const t = this.tables.get('Port_Binding') as Map<string, Row>;
    const uuids = new Set<string>(this.specialPorts);
    if (chassisUuid !== undefined) for (const u of this.portsByChassis.get(chassisUuid) ?? []) uuids.add(u);
    for (const name of names) {
      const u = this.portByName.get(name);
      if (u !== undefined) uuids.add(u);
    }
    const out: sb.Port_Binding[] = [];
    for (const u of uuids) {
      const row = t.get(u);
      if (row !== undefined) out.push(row as unknown as sb.Port_Binding);
    }
    return out;
  }

  private indexPort(pb: sb.Port_Binding, add: boolean): void {
    // Rows from the stream are whole; tolerate a row that lacks a column (as an empty set).
    const parent = pb.parent_port?.[0];
    if ((pb.type ?? '') !== '' || (parent !== undefined && parent !== '')) {
      if (add) this.specialPorts.add(pb._uuid);
      else this.specialPorts.delete(pb._uuid);
    }
    for (const ch of [...(pb.chassis ?? []), ...(pb.additional_chassis ?? [])]) {
      let set = this.portsByChassis.get(ch);
      if (add) {
        if (set === undefined) this.portsByChassis.set(ch, (set = new Set()));
        set.add(pb._uuid);
      } else if (set !== undefined) {
        set.delete(pb._uuid);
        if (set.size === 0) this.portsByChassis.delete(ch);
      }
    }
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
