// The SB rows chassis write that the leader removes, as ovn-northd 23.03 removes them from the
// SB it owns:
//   - MAC binding aging (mac-binding-aging.c): on a router with
//     options:mac_binding_age_threshold=N (seconds), a MAC_Binding that chassis learned goes
//     once N seconds have passed since its timestamp (written by the chassis that learned or
//     last changed it); a chassis that still needs the address asks for it again and learns it
//     anew. At most NB_Global options:mac_binding_removal_limit rows go in one transaction (0:
//     no limit); when the limit is reached the next removal waits removalDelayMs, as
//     ovn-northd's does.
//   - stale rows (cleanup_mac_bindings, cleanup_stale_fdb_entries, and the IGMP_Group purge of
//     build_mcast_groups): a MAC_Binding whose datapath or logical port is gone, an FDB entry
//     whose datapath key or port key no longer names a datapath or one of its ports, an
//     IGMP_Group whose datapath is gone. Without this they stayed for ever: our chassis tables
//     keep their references to northd's rows as plain UUIDs.
//
// Time comes from outside the log: the leader reads its wall clock, picks the rows and proposes
// their deletion as an ordinary SB transaction (an aged row's delete is conditioned on its
// timestamp, so a row a chassis refreshed meanwhile stays). Every replica applies the same
// deletes; only the leader proposes (ovn-northd: the instance holding the SB lock).
import type { DbDelta, Row, Uuid } from '../ovsdb/index.js';
import type * as nb from '../ovsdb/rows/nb.js';
import { optionUint } from '../northd/nb.js';
import type * as sb from '../ovsdb/rows/sb.js';
import type { CentralNode, TransactOutcome } from './central-node.js';
import { backgroundTimers, type Timers } from './timers.js';

export const housekeepingLimits = {
  /** After a transaction that hit mac_binding_removal_limit, the next one waits this long (ovn-northd: 5 s). */
  removalDelayMs: 5000,
  /** Aged rows deleted in one transaction when NB_Global sets no limit: a transaction stays bounded. */
  rowsPerTxnMax: 1000,
  /** Stale rows deleted in one transaction; more follow at once. */
  staleRowsPerTxnMax: 1000,
  /** After a failed transaction, the next attempt waits this long. */
  retryMs: 1000,
  /** A change to the rows the plans read makes it look again after at most this long (changes coalesce). */
  settleMs: 50,
} as const;

type Rows = (table: string) => ReadonlyMap<string, Row>;

export interface AgingPlan {
  /** Rows to delete, each with the timestamp it was chosen at; oldest first. */
  readonly expired: readonly { readonly uuid: Uuid; readonly timestamp: number }[];
  /** When to look again, in ms from now; undefined when nothing ages. */
  readonly nextMs: number | undefined;
}

/**
 * The MAC bindings to remove at wall time `nowMs` (ms since the epoch), from the NB routers'
 * thresholds and the SB view (Datapath_Binding names its router in external_ids). Rows whose
 * routers set no threshold (or 0, or one that does not parse) never age. A row whose timestamp
 * is ahead of this clock (a chassis's clock ahead of the leader's) ages a threshold after that
 * timestamp; ovn-northd passes over it and looks again only when something else changes. With
 * `limit`, at most that many rows, the oldest, and the next look after removalDelayMs.
 */
export function macBindingAgingPlan(nbRows: Rows, sbRows: Rows, nowMs: number, limit: number): AgingPlan {
  // No bindings, nothing ages: the routers are not read (this runs after every change to them).
  if (sbRows('MAC_Binding').size === 0) return { expired: [], nextMs: undefined };
  const thresholdByDp = new Map<Uuid, number>();
  for (const row of sbRows('Datapath_Binding').values()) {
    const dp = row as unknown as sb.Datapath_Binding;
    const lr = dp.external_ids.get('logical-router');
    if (lr === undefined) continue;
    const router = nbRows('Logical_Router').get(lr) as unknown as nb.Logical_Router | undefined;
    const seconds = router === undefined ? 0 : optionUint(router.options, 'mac_binding_age_threshold', 0);
    if (seconds > 0) thresholdByDp.set(dp._uuid, seconds * 1000);
  }
  if (thresholdByDp.size === 0) return { expired: [], nextMs: undefined };
  const expired: { uuid: Uuid; timestamp: number }[] = [];
  let nextMs: number | undefined;
  for (const row of sbRows('MAC_Binding').values()) {
    const mb = row as unknown as sb.MAC_Binding;
    const threshold = thresholdByDp.get(mb.datapath);
    if (threshold === undefined) continue;
    const elapsed = nowMs - mb.timestamp;
    if (elapsed >= threshold) expired.push({ uuid: mb._uuid, timestamp: mb.timestamp });
    else nextMs = Math.min(nextMs ?? Infinity, threshold - elapsed);
  }
  expired.sort((a, b) => a.timestamp - b.timestamp || (a.uuid < b.uuid ? -1 : a.uuid > b.uuid ? 1 : 0));
  const cap = limit > 0 ? Math.min(limit, housekeepingLimits.rowsPerTxnMax) : housekeepingLimits.rowsPerTxnMax;
  if (expired.length > cap) {
    // ovn-northd stops at the limit and looks again after a delay; past our own cap, at once.
    return { expired: expired.slice(0, cap), nextMs: limit > 0 && cap === limit ? housekeepingLimits.removalDelayMs : 0 };
  }
  if (limit > 0 && expired.length === limit) return { expired, nextMs: housekeepingLimits.removalDelayMs };
  return { expired, nextMs };
}

/** The SB transaction deleting `expired`, each row only while its timestamp is the one it expired with. */
export function agingOps(expired: AgingPlan['expired']): unknown[] {
  return expired.map((e) => ({ op: 'delete', table: 'MAC_Binding', where: [['_uuid', '==', ['uuid', e.uuid]], ['timestamp', '==', e.timestamp]] }));
}

/** A chassis-written row whose datapath or port is gone. */
export interface StaleRow {
  readonly table: 'MAC_Binding' | 'FDB' | 'IGMP_Group';
  readonly uuid: Uuid;
}

/**
 * The chassis rows northd's view no longer supports, at most `max`, by table then UUID:
 * MAC_Binding rows whose datapath is not a Datapath_Binding or whose logical_port names no
 * Port_Binding; FDB rows whose dp_key is no datapath's tunnel key or whose port_key is no port's
 * key in that datapath; IGMP_Group rows without a datapath or whose datapath is gone.
 */
export function staleRows(sbRows: Rows, max: number = housekeepingLimits.staleRowsPerTxnMax): StaleRow[] {
  const macBindings = sbRows('MAC_Binding');
  const fdbs = sbRows('FDB');
  const igmpGroups = sbRows('IGMP_Group');
  // The looks come after every change to the port bindings (every port added, bound or moved):
  // with none of the chassis' rows to check, the bindings are not read at all, and otherwise
  // only what the rows present need.
  if (macBindings.size === 0 && fdbs.size === 0 && igmpGroups.size === 0) return [];
  const dps = sbRows('Datapath_Binding');
  const out: StaleRow[] = [];
  const ports = new Set<string>();
  const portKeys = new Map<Uuid, Set<number>>();
  if (macBindings.size > 0 || fdbs.size > 0) {
    for (const row of sbRows('Port_Binding').values()) {
      const pb = row as unknown as sb.Port_Binding;
      ports.add(pb.logical_port);
      let keys = portKeys.get(pb.datapath);
      if (keys === undefined) portKeys.set(pb.datapath, (keys = new Set()));
      keys.add(pb.tunnel_key);
    }
  }
  const collect = (table: StaleRow['table'], rows: ReadonlyMap<string, Row>, stale: (row: Row) => boolean): void => {
    const found: Uuid[] = [];
    for (const row of rows.values()) if (stale(row)) found.push(row._uuid);
    for (const uuid of found.sort()) if (out.length < max) out.push({ table, uuid });
  };
  collect('MAC_Binding', macBindings, (row) => {
    const mb = row as unknown as sb.MAC_Binding;
    return !dps.has(mb.datapath) || !ports.has(mb.logical_port);
  });
  if (fdbs.size > 0) {
    const dpByKey = new Map<number, Uuid>();
    for (const row of dps.values()) dpByKey.set((row as unknown as sb.Datapath_Binding).tunnel_key, row._uuid);
    collect('FDB', fdbs, (row) => {
      const fdb = row as unknown as sb.FDB;
      const dp = dpByKey.get(fdb.dp_key);
      return dp === undefined || portKeys.get(dp)?.has(fdb.port_key) !== true;
    });
  }
  collect('IGMP_Group', igmpGroups, (row) => {
    const dp = (row as unknown as sb.IGMP_Group).datapath[0];
    return dp === undefined || !dps.has(dp);
  });
  return out;
}

export function staleOps(rows: readonly StaleRow[]): unknown[] {
  return rows.map((r) => ({ op: 'delete', table: r.table, where: [['_uuid', '==', ['uuid', r.uuid]]] }));
}

export interface SbHousekeepingTarget {
  /** The NB and the SB view as this member has applied them. */
  nbRows: Rows;
  sbRows: Rows;
  isLeader(): boolean;
  transact(ops: unknown[]): Promise<TransactOutcome>;
}

export interface SbHousekeepingStats {
  readonly transactions: number;
  /** MAC_Binding rows aged out. */
  readonly removed: number;
  /** Stale rows removed (MAC_Binding, FDB, IGMP_Group). */
  readonly staleRemoved: number;
  readonly failures: number;
  readonly lastError: string | undefined;
}

/**
 * Runs the housekeeping on the member: looks at the rows when told they changed (`changed()`,
 * after a commit touching what the plans read) and when the earliest binding is due, proposes
 * the deletions while this member leads, one transaction at a time (stale rows first, then aged
 * ones, each set bounded).
 */
export class SbHousekeeping {
  private timer: unknown;
  private timerAt = Infinity;
  private inFlight = false;
  private closed = false;
  private counters = { transactions: 0, removed: 0, staleRemoved: 0, failures: 0 };
  private lastError: string | undefined;

  constructor(
    private readonly target: SbHousekeepingTarget,
    private readonly wallClockMs: () => number = Date.now,
    private readonly timers: Timers = backgroundTimers,
  ) {}

  stats(): SbHousekeepingStats {
    return { ...this.counters, lastError: this.lastError };
  }

  /** The rows the plans read changed (or leadership did): look again soon. */
  changed(): void {
    this.schedule(housekeepingLimits.settleMs);
  }

  close(): void {
    this.closed = true;
    this.cancel();
  }

  private cancel(): void {
    if (this.timer !== undefined) this.timers.clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
  }

  /** Looks again in `ms` unless a look is due sooner already. */
  private schedule(ms: number): void {
    if (this.closed) return;
    const at = this.timers.now() + ms;
    if (this.timer !== undefined && this.timerAt <= at) return;
    this.cancel();
    this.timerAt = at;
    this.timer = this.timers.setTimeout(() => {
      this.timer = undefined;
      this.timerAt = Infinity;
      this.run();
    }, ms);
  }

  private run(): void {
    if (this.closed || this.inFlight || !this.target.isLeader()) return;
    const global = this.target.nbRows('NB_Global').values().next().value as nb.NB_Global | undefined;
    const limit = global === undefined ? 0 : optionUint(global.options, 'mac_binding_removal_limit', 0);
    const stale = staleRows(this.target.sbRows);
    if (stale.length > 0) {
      // Aging waits for the next look, right after.
      this.propose(staleOps(stale), (removed) => {
        this.counters.staleRemoved += removed;
      }, housekeepingLimits.settleMs);
      return;
    }
    const plan = macBindingAgingPlan(this.target.nbRows, this.target.sbRows, this.wallClockMs(), limit);
    if (plan.expired.length === 0) {
      if (plan.nextMs !== undefined) this.schedule(plan.nextMs);
      return;
    }
    this.propose(agingOps(plan.expired), (removed) => {
      this.counters.removed += removed;
    }, plan.nextMs ?? housekeepingLimits.settleMs);
  }

  /** Proposes `ops` (deletes), counts the rows removed, and looks again after `nextMs`. */
  private propose(ops: unknown[], count: (removed: number) => void, nextMs: number): void {
    this.inFlight = true;
    this.target.transact(ops).then(
      (out) => {
        this.inFlight = false;
        this.counters.transactions++;
        if (out.failed) {
          this.counters.failures++;
          this.lastError = JSON.stringify(out.results).slice(0, 500);
          this.schedule(housekeepingLimits.retryMs);
          return;
        }
        let removed = 0;
        for (const r of out.results as { count?: number }[]) removed += r.count ?? 0;
        count(removed);
        this.schedule(nextMs);
      },
      (err: unknown) => {
        // Not the leader any more, or the log refused it: the new leader looks instead.
        this.inFlight = false;
        this.counters.failures++;
        this.lastError = err instanceof Error ? err.message : String(err);
        this.schedule(housekeepingLimits.retryMs);
      },
    );
  }
}

/** NB tables whose changes can change what ages or when. */
const nbTables: ReadonlySet<string> = new Set(['Logical_Router', 'NB_Global']);

/**
 * Whether an SB change can make a row stale or change what ages: a chassis row written, a
 * datapath or port going or taking another key. Ports come and are bound far more often than
 * they go: those changes are passed over.
 */
function sbTouches(c: DbDelta['changes'][number]): boolean {
  switch (c.table) {
    case 'MAC_Binding':
    case 'FDB':
    case 'IGMP_Group':
      return c.kind !== 'delete';
    case 'Datapath_Binding':
    case 'Port_Binding':
      return c.kind === 'delete' || (c.kind === 'modify' && (c.columns.includes('tunnel_key') || c.columns.includes('logical_port') || c.columns.includes('datapath')));
    default:
      return false;
  }
}

/** Housekeeping on a running member: its NB and SB view, its commits, and its leadership. */
export function startSbHousekeeping(central: CentralNode): { readonly housekeeping: SbHousekeeping; close(): void } {
  const nbFeed = central.feed('OVN_Northbound');
  const sbFeed = central.feed('OVN_Southbound');
  const housekeeping = new SbHousekeeping({
    nbRows: (table) => nbFeed.rows(table),
    sbRows: (table) => sbFeed.rows(table),
    isLeader: () => central.node.leadership().role === 'leader',
    transact: (ops) => central.transact(ops, 'OVN_Southbound'),
  });
  const offNb = nbFeed.onChange((e) => {
    if (e.delta.changes.some((c) => nbTables.has(c.table))) housekeeping.changed();
  });
  const offSb = sbFeed.onChange((e) => {
    if (e.delta.changes.some(sbTouches)) housekeeping.changed();
  });
  // A member that becomes leader takes over what the last one would have aged.
  let leading = false;
  const offProgress = central.node.onProgress(() => {
    const now = central.node.leadership().role === 'leader';
    if (now && !leading) housekeeping.changed();
    leading = now;
  });
  return {
    housekeeping,
    close: () => {
      offNb();
      offSb();
      offProgress();
      housekeeping.close();
    },
  };
}
