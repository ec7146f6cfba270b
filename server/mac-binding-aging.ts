// MAC binding aging (ovn-northd 23.03's mac-binding-aging.c): on a router with
// options:mac_binding_age_threshold=N (seconds), a MAC_Binding that chassis learned goes once N
// seconds have passed since its timestamp (written by the chassis that learned or last changed
// it); a chassis that still needs the address asks for it again and learns it anew. At most
// NB_Global options:mac_binding_removal_limit rows go in one transaction (0: no limit); when the
// limit is reached the next removal waits removalDelayMs, as ovn-northd's does.
//
// Time comes from outside the log: the leader reads its wall clock, picks the expired rows and
// proposes their deletion as an ordinary SB transaction, each delete conditioned on the row's
// timestamp, so a row a chassis refreshed meanwhile stays. Every replica applies the same
// deletes; only the leader ages (ovn-northd: the instance holding the SB lock).
import type { DbDelta, Row, Uuid } from '../ovsdb/index.js';
import type * as nb from '../ovsdb/rows/nb.js';
import { optionUint } from '../northd/nb.js';
import type * as sb from '../ovsdb/rows/sb.js';
import type { CentralNode, TransactOutcome } from './central-node.js';
import { backgroundTimers, type Timers } from './timers.js';

export const macBindingAgingLimits = {
  /** After a transaction that hit mac_binding_removal_limit, the next one waits this long (ovn-northd: 5 s). */
  removalDelayMs: 5000,
  /** Rows deleted in one transaction when NB_Global sets no limit: a transaction stays bounded. */
  rowsPerTxnMax: 1000,
  /** After a failed transaction, the next attempt waits this long. */
  retryMs: 1000,
  /** A change to the rows aging reads makes it look again after at most this long (changes coalesce). */
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
  const cap = limit > 0 ? Math.min(limit, macBindingAgingLimits.rowsPerTxnMax) : macBindingAgingLimits.rowsPerTxnMax;
  if (expired.length > cap) {
    // ovn-northd stops at the limit and looks again after a delay; past our own cap, at once.
    return { expired: expired.slice(0, cap), nextMs: limit > 0 && cap === limit ? macBindingAgingLimits.removalDelayMs : 0 };
  }
  if (limit > 0 && expired.length === limit) return { expired, nextMs: macBindingAgingLimits.removalDelayMs };
  return { expired, nextMs };
}

/** The SB transaction deleting `expired`, each row only while its timestamp is the one it expired with. */
export function agingOps(expired: AgingPlan['expired']): unknown[] {
  return expired.map((e) => ({ op: 'delete', table: 'MAC_Binding', where: [['_uuid', '==', ['uuid', e.uuid]], ['timestamp', '==', e.timestamp]] }));
}

export interface MacBindingAgingTarget {
  /** The NB and the SB view as this member has applied them. */
  nbRows: Rows;
  sbRows: Rows;
  isLeader(): boolean;
  transact(ops: unknown[]): Promise<TransactOutcome>;
}

export interface MacBindingAgingStats {
  readonly transactions: number;
  readonly removed: number;
  readonly failures: number;
  readonly lastError: string | undefined;
}

/**
 * Runs aging on the member: looks at the rows when told they changed (`changed()`, after a
 * commit touching MAC_Binding, Datapath_Binding, Logical_Router or NB_Global) and when the
 * earliest binding is due, proposes the deletions while this member leads, one transaction at a
 * time.
 */
export class MacBindingAging {
  private timer: unknown;
  private timerAt = Infinity;
  private inFlight = false;
  private closed = false;
  private counters = { transactions: 0, removed: 0, failures: 0 };
  private lastError: string | undefined;

  constructor(
    private readonly target: MacBindingAgingTarget,
    private readonly wallClockMs: () => number = Date.now,
    private readonly timers: Timers = backgroundTimers,
  ) {}

  stats(): MacBindingAgingStats {
    return { ...this.counters, lastError: this.lastError };
  }

  /** The rows aging reads changed (or leadership did): look again soon. */
  changed(): void {
    this.schedule(macBindingAgingLimits.settleMs);
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
    const plan = macBindingAgingPlan(this.target.nbRows, this.target.sbRows, this.wallClockMs(), limit);
    if (plan.expired.length === 0) {
      if (plan.nextMs !== undefined) this.schedule(plan.nextMs);
      return;
    }
    this.inFlight = true;
    this.target.transact(agingOps(plan.expired)).then(
      (out) => {
        this.inFlight = false;
        this.counters.transactions++;
        if (out.failed) {
          this.counters.failures++;
          this.lastError = JSON.stringify(out.results).slice(0, 500);
          this.schedule(macBindingAgingLimits.retryMs);
          return;
        }
        for (const r of out.results as { count?: number }[]) this.counters.removed += r.count ?? 0;
        this.schedule(plan.nextMs ?? macBindingAgingLimits.settleMs);
      },
      (err: unknown) => {
        // Not the leader any more, or the log refused it: the new leader ages instead.
        this.inFlight = false;
        this.counters.failures++;
        this.lastError = err instanceof Error ? err.message : String(err);
        this.schedule(macBindingAgingLimits.retryMs);
      },
    );
  }
}

/** Tables whose changes can change what ages or when. */
const agingTables: ReadonlySet<string> = new Set(['MAC_Binding', 'Datapath_Binding', 'Logical_Router', 'NB_Global']);

/** Aging on a running member: its NB and SB view, its commits, and its leadership. */
export function startMacBindingAging(central: CentralNode): { readonly aging: MacBindingAging; close(): void } {
  const nbFeed = central.feed('OVN_Northbound');
  const sbFeed = central.feed('OVN_Southbound');
  const aging = new MacBindingAging({
    nbRows: (table) => nbFeed.rows(table),
    sbRows: (table) => sbFeed.rows(table),
    isLeader: () => central.node.leadership().role === 'leader',
    transact: (ops) => central.transact(ops, 'OVN_Southbound'),
  });
  const touches = (e: { delta: DbDelta }): boolean => e.delta.changes.some((c) => agingTables.has(c.table));
  const offNb = nbFeed.onChange((e) => {
    if (touches(e)) aging.changed();
  });
  const offSb = sbFeed.onChange((e) => {
    if (touches(e)) aging.changed();
  });
  // A member that becomes leader takes over what the last one would have aged.
  let leading = false;
  const offProgress = central.node.onProgress(() => {
    const now = central.node.leadership().role === 'leader';
    if (now && !leading) aging.changed();
    leading = now;
  });
  return {
    aging,
    close: () => {
      offNb();
      offSb();
      offProgress();
      aging.close();
    },
  };
}
