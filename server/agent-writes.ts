// What a member writes into the SB on behalf of the agents it streams to, through the log like
// any chassis transaction: the chassis's registration from its Hello (Chassis, Encap,
// Chassis_Private, when missing), and Chassis_Private.nb_cfg from its Acks,
// which is what hv_cfg and `--wait=hv` follow. Acks of many agents are batched into one
// transaction (at most acksPerTxnMax rows), one transaction in flight at a time: under load a
// transaction carries every ack that came while the previous one was committing. And while
// other agents on this member have yet to acknowledge what the pending acks did (they are
// still installing the same change), the writer waits for them, up to batchMsMax: the change's
// acks then cost one log entry per member instead of one per turn of a committing transaction
// (measured at 100 agents: 24–36 entries per --wait=hv round). The last ack needed is written
// at once, so a --wait=hv waits no longer for it.
//
// The leader writes more than its own agents' acks: the other members relay theirs to it as they
// come (server/live-acks.ts), and it writes those too, holding a batch until every chassis has
// acknowledged (as far as it has heard) or batchMsMax has passed. A member that is not the
// leader holds its own agents' acks for followerHoldMs and writes only those the log does not
// have by then (a relay lost, a leader that changed, or one on software that does not write
// them). A change acknowledged by agents on every member so costs one Chassis_Private entry,
// not one per member (docs/agent-stream.md, Ack: at 100 agents over three members, 2 log
// entries per --wait=hv round instead of 4).
import type { Row } from '../ovsdb/index.js';
import type { TransactDb, TransactOutcome } from './central-node.js';
import { backgroundTimers, type Timers } from './timers.js';

export interface ChassisRegistration {
  readonly chassis: string;
  readonly hostname: string;
  readonly encaps: readonly { readonly type: string; readonly ip: string }[];
}

type Rows = (table: string) => ReadonlyMap<string, Row>;

function find(rows: Rows, table: string, name: string): Row | undefined {
  for (const r of rows(table).values()) if (r.name === name) return r;
  return undefined;
}

/**
 * The chassis transaction that registers `reg` when the SB does not have it yet (Chassis with
 * these encaps and this hostname, and a Chassis_Private pointing at it), or undefined when
 * there is nothing to add. A Chassis that exists is left as it is: keeping it up to date
 * (encaps, other_config, ...) is its agent's, as it is ovn-controller's
 * (agent/local/chassis-record.ts); only a missing or unlinked Chassis_Private is added or
 * linked, since acks are written there.
 */
export function registrationOps(rows: Rows, reg: ChassisRegistration): unknown[] | undefined {
  const chassis = find(rows, 'Chassis', reg.chassis);
  const priv = find(rows, 'Chassis_Private', reg.chassis);
  const ops: unknown[] = [];
  let chassisRef: unknown;
  if (chassis === undefined) {
    const encaps = new Map<string, { type: string; ip: string }>();
    for (const e of reg.encaps) encaps.set(`${e.type}\0${e.ip}`, e);
    const refs = [...encaps.values()].map((e, i) => {
      ops.push({ op: 'insert', table: 'Encap', 'uuid-name': `encap${i}`, row: { type: e.type, ip: e.ip, chassis_name: reg.chassis } });
      return ['named-uuid', `encap${i}`];
    });
    ops.push({ op: 'insert', table: 'Chassis', 'uuid-name': 'chassis', row: { name: reg.chassis, hostname: reg.hostname, encaps: ['set', refs] } });
    chassisRef = ['named-uuid', 'chassis'];
  } else {
    chassisRef = ['uuid', chassis._uuid];
  }
  if (priv === undefined) {
    ops.push({ op: 'insert', table: 'Chassis_Private', row: { name: reg.chassis, chassis: chassisRef } });
  } else if (chassis === undefined || (priv.chassis as readonly string[])[0] !== chassis._uuid) {
    ops.push({ op: 'update', table: 'Chassis_Private', where: [['_uuid', '==', ['uuid', priv._uuid]]], row: { chassis: chassisRef } });
  }
  return ops.length > 0 ? ops : undefined;
}

/** Named limits of the ack writer. */
export const ackLimits = {
  /** Chassis_Private rows updated by one transaction. */
  acksPerTxnMax: 1000,
  /** Wait before writing again after a failed transaction. */
  retryMs: 500,
  /** The longest an ack waits for the other agents on this member to acknowledge the same. */
  batchMsMax: 50,
  /**
   * How long a member that is not the leader holds its agents' acks for the leader to write
   * (relayed, see above) before writing what is still unwritten itself.
   */
  followerHoldMs: 250,
} as const;

export interface AckWriterOptions {
  /**
   * Whether an agent on this member that acknowledges (it has before) is still short of
   * `nbCfg`: the writer then waits for it (up to batchMsMax). Without it, acks are written as
   * they come.
   */
  readonly lagging?: (nbCfg: number) => boolean;
  /**
   * Whether the leader writes this member's acks (it is not the leader, and relays its acks to
   * it): they are then held for ackLimits.followerHoldMs first. Without it, written here.
   */
  readonly leaderWrites?: () => boolean;
  /** The hold of leaderWrites (default ackLimits.followerHoldMs). */
  readonly followerHoldMs?: number;
  readonly timers?: Timers;
}

export interface AckWriterTarget {
  transact(ops: readonly unknown[], db: TransactDb): Promise<TransactOutcome>;
  rows(table: string): ReadonlyMap<string, Row>;
}

export interface AckWriterStats {
  readonly pending: number;
  /** Acks held for the leader to write (leaderWrites). */
  readonly held: number;
  readonly transactions: number;
  readonly rowsWritten: number;
  readonly failures: number;
  readonly lastError: string | undefined;
}

/**
 * Makes each acknowledging chassis's Chassis_Private.nb_cfg follow its acks, never backwards:
 * the update's "where" requires a smaller nb_cfg, so a late or repeated ack changes nothing.
 */
export class AckWriter {
  private readonly pending = new Map<string, number>();
  /**
   * Acks held for the leader to write (leaderWrites): the newest per chassis, and since when the
   * log has lacked this chassis's acks (an ack the log has does not count); and the timer that
   * ends the oldest hold.
   */
  private readonly held = new Map<string, { nbCfg: number; since: number }>();
  private holdTimer: unknown;
  private inFlight = false;
  private retryTimer: unknown;
  /** When the oldest pending ack came (timers.now()), and the timer that ends its wait. */
  private pendingSince = 0;
  /** The highest nb_cfg in pending (0 when it is empty): holdBack asks at every ack. */
  private pendingNewest = 0;
  private batchTimer: unknown;
  private closed = false;
  private counters = { transactions: 0, rowsWritten: 0, failures: 0 };
  private lastError: string | undefined;
  private readonly timers: Timers;
  private readonly privateByName = new Map<string, string>();

  constructor(
    private readonly target: AckWriterTarget,
    private readonly now: () => number = Date.now,
    private readonly options: AckWriterOptions = {},
  ) {
    this.timers = options.timers ?? backgroundTimers;
  }

  stats(): AckWriterStats {
    return { pending: this.pending.size, held: this.held.size, ...this.counters, lastError: this.lastError };
  }

  /**
   * Chassis `chassis` (an agent of this member) has installed everything up to
   * SB_Global.nb_cfg = nbCfg.
   */
  record(chassis: string, nbCfg: number): void {
    if (this.options.leaderWrites?.() === true) this.hold(chassis, nbCfg);
    else this.write(chassis, nbCfg);
  }

  /**
   * Another member's agent acknowledged nb_cfg (relayed; by its Chassis_Private row): written
   * with this member's own, for the leader writes every member's acks. A row this member does
   * not have (yet) is left to the agent's member.
   */
  recordRelayed(privUuid: string, nbCfg: number): void {
    const row = this.target.rows('Chassis_Private').get(privUuid);
    if (row !== undefined) this.write(row.name as string, nbCfg);
  }

  /**
   * Held for the leader to write; what the log still lacks once it has lacked it for
   * followerHoldMs is written here. A chassis whose every ack the leader writes in time is never
   * written here, however often it acknowledges; one the leader does not write waits no longer
   * than followerHoldMs, however often it acknowledges.
   */
  private hold(chassis: string, nbCfg: number): void {
    if (this.closed || this.logHas(chassis, nbCfg)) return;
    const e = this.held.get(chassis);
    if (e === undefined || this.logHas(chassis, e.nbCfg)) this.held.set(chassis, { nbCfg, since: this.timers.now() });
    else if (e.nbCfg < nbCfg) e.nbCfg = nbCfg;
    this.armHold();
  }

  /** Whether the log already holds `nbCfg` (or more) in this chassis's Chassis_Private row. */
  private logHas(chassis: string, nbCfg: number): boolean {
    const have = this.privateRow(chassis)?.nb_cfg;
    return typeof have === 'number' && have >= nbCfg;
  }

  private holdMs(): number {
    return this.options.followerHoldMs ?? ackLimits.followerHoldMs;
  }

  /** The timer for the oldest hold, if none is armed. */
  private armHold(): void {
    if (this.holdTimer !== undefined || this.held.size === 0) return;
    let oldest = Infinity;
    for (const e of this.held.values()) oldest = Math.min(oldest, e.since);
    this.holdTimer = this.timers.setTimeout(() => {
      this.holdTimer = undefined;
      this.endHolds();
    }, Math.max(0, oldest + this.holdMs() - this.timers.now()));
  }

  /** Drops the holds the log has caught up with, writes those that have lasted followerHoldMs. */
  private endHolds(): void {
    const now = this.timers.now();
    // Deleting the entry being visited is safe in a Map's iteration; write() does not touch held.
    for (const [chassis, e] of this.held) {
      if (this.logHas(chassis, e.nbCfg)) this.held.delete(chassis);
      else if (e.since + this.holdMs() <= now) {
        this.held.delete(chassis);
        this.write(chassis, e.nbCfg);
      }
    }
    this.armHold();
  }

  private write(chassis: string, nbCfg: number): void {
    const prev = this.pending.get(chassis);
    if (prev !== undefined && prev >= nbCfg) return;
    // An agent may acknowledge every step, most of them with the nb_cfg its row already has:
    // nothing to write, nor to wait for.
    if (this.logHas(chassis, nbCfg)) return;
    if (this.pending.size === 0) this.pendingSince = this.timers.now();
    this.pending.set(chassis, nbCfg);
    this.pendingNewest = Math.max(this.pendingNewest, nbCfg);
    this.flush();
  }

  close(): void {
    this.closed = true;
    if (this.retryTimer !== undefined) this.timers.clearTimeout(this.retryTimer);
    if (this.holdTimer !== undefined) this.timers.clearTimeout(this.holdTimer);
    this.held.clear();
    this.stopBatchTimer();
  }

  /**
   * Whether the pending acks wait for more: another agent here is still short of the newest
   * of them, and the oldest has waited less than batchMsMax (a timer ends the wait).
   */
  private holdBack(): boolean {
    const lagging = this.options.lagging;
    if (lagging === undefined) return false;
    const newest = this.pendingNewest;
    const waited = this.timers.now() - this.pendingSince;
    if (!lagging(newest) || waited >= ackLimits.batchMsMax) {
      this.stopBatchTimer();
      return false;
    }
    this.batchTimer ??= this.timers.setTimeout(() => {
      this.batchTimer = undefined;
      this.flush();
    }, ackLimits.batchMsMax - waited);
    return true;
  }

  /**
   * The Chassis_Private row named `chassis`, through a name → uuid map rebuilt from the rows
   * when a name is missing or its row moved (rows come and go only as chassis register and
   * leave): an ack costs a lookup, not a scan of every chassis.
   */
  privateRow(chassis: string): Row | undefined {
    const rows = this.target.rows('Chassis_Private');
    const known = this.privateByName.get(chassis);
    const row = known === undefined ? undefined : rows.get(known);
    if (row !== undefined && row.name === chassis) return row;
    this.privateByName.clear();
    for (const r of rows.values()) this.privateByName.set(r.name as string, r._uuid);
    const found = this.privateByName.get(chassis);
    return found === undefined ? undefined : rows.get(found);
  }

  private stopBatchTimer(): void {
    if (this.batchTimer === undefined) return;
    this.timers.clearTimeout(this.batchTimer);
    this.batchTimer = undefined;
  }

  private flush(): void {
    if (this.inFlight || this.closed || this.retryTimer !== undefined || this.pending.size === 0) return;
    if (this.holdBack()) return;
    const batch: [string, number][] = [];
    for (const [chassis, nbCfg] of this.pending) {
      if (batch.length >= ackLimits.acksPerTxnMax) break;
      this.pending.delete(chassis);
      const have = this.privateRow(chassis)?.nb_cfg as number | undefined;
      // Only when it advances; a chassis without its Chassis_Private row has nothing to update.
      if (have !== undefined && have < nbCfg) batch.push([chassis, nbCfg]);
    }
    // Once per batch (usually nothing is left): what stays pending sets the newest.
    this.pendingNewest = 0;
    for (const v of this.pending.values()) this.pendingNewest = Math.max(this.pendingNewest, v);
    if (batch.length === 0) return;
    const at = this.now();
    const ops = batch.map(([chassis, nbCfg]) => ({
      op: 'update',
      table: 'Chassis_Private',
      where: [['name', '==', chassis], ['nb_cfg', '<', nbCfg]],
      row: { nb_cfg: nbCfg, nb_cfg_timestamp: at },
    }));
    this.inFlight = true;
    void this.target.transact(ops, 'OVN_Southbound').then(
      (out) => {
        this.counters.transactions++;
        if (out.failed) {
          // Updates by name with a guard cannot fail but for a bug: say so, do not retry.
          this.counters.failures++;
          this.lastError = `Chassis_Private update failed: ${JSON.stringify(out.results).slice(0, 512)}`;
        } else {
          for (const r of out.results) this.counters.rowsWritten += (r as { count?: number }).count ?? 0;
        }
      },
      (err: unknown) => {
        // No leader, or the outcome is unknown: the guarded updates are safe to send again.
        this.counters.failures++;
        this.lastError = (err as Error).message;
        for (const [chassis, nbCfg] of batch) {
          if ((this.pending.get(chassis) ?? -1) < nbCfg) this.pending.set(chassis, nbCfg);
          this.pendingNewest = Math.max(this.pendingNewest, nbCfg);
        }
        this.retryTimer = this.timers.setTimeout(() => {
          this.retryTimer = undefined;
          this.flush();
        }, ackLimits.retryMs);
      },
    ).finally(() => {
      this.inFlight = false;
      this.flush();
    });
  }
}
