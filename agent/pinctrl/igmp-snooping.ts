// IGMP/MLD snooping on this chassis (ovn-controller 23.03's ip_mcast_snoop_*, ip_mcast_sync and
// pinctrl_ip_mcast_handle): the `igmp;` action sends every IGMP and MLD message of a switch with
// other_config:mcast_snoop=true here. Per datapath whose SB IP_Multicast row has enabled=true, a
// group table (igmp-table.ts) learns from them; the message then goes on into the logical
// output stage, a report to _MC_mrouter_flood and a query to _MC_flood_l2, as
// pinctrl_forward_pkt sends it. What is learned is written to the SB as IGMP_Group rows of this
// chassis, one per (group, datapath) naming the member ports and one named "mrouters" for the
// router ports; northd makes them Multicast_Groups and the flows that use them.
//
// A datapath's table starts with its first message (a packet-in comes only from a datapath whose
// flows this chassis installed, so it is local). A timer every recheckMs (and at the next expiry)
// drops memberships past idle_timeout, rereads each table's IP_Multicast row (a cleared seq_no
// flushes the table, enabled=false or a missing row drops it) and compares the SB with the
// tables: rows are inserted, their ports updated and rows of groups gone deleted, only when they
// differ. The writes go through the batching writer, one datapath per key, at most batchMax
// datapaths per transaction, a failed one retried after retryDelayMs (a row the SB view had not
// shown yet makes an insert fail on the unique index; by the retry the view has it).
//
// Departures from ovn-controller: the "mrouters" row exists only while there are router ports
// (ovn-controller keeps an empty one); a group none of whose ports the SB view knows is not
// written; rows of this chassis on a datapath that has no table here (after a restart, or on a
// datapath no longer local) are deleted when the timer next compares. The querier that keeps
// memberships alive is igmp-querier.ts.

import { OFTABLE_OUTPUT_INIT } from '../compile/tables.js';
import { OFPP } from '../openflow/actions.js';
import type { OfMessage } from '../openflow/messages.js';
import type { SbSource } from '../sb-source.js';
import { BatchWriter, realTimers, type BatchEntry, type BatchPlan, type WriterTimers } from './batch-writer.js';
import type { McastMessage } from './igmp-packet.js';
import { McastGroupTable, mcastDefaults } from './igmp-table.js';

/** OVN_MCAST_MROUTER_FLOOD_TUNNEL_KEY and OVN_MCAST_FLOOD_L2_TUNNEL_KEY (lib/mcast-group-index.h). */
export const MC_MROUTER_FLOOD_KEY = 32770;
export const MC_FLOOD_L2_KEY = 32772;
/** OVN_IGMP_GROUP_MROUTERS: the row of a datapath's router ports. */
export const IGMP_GROUP_MROUTERS = 'mrouters';

export const igmpLimits = {
  /** Datapaths waiting to be written at once (a switch per key). */
  pendingMax: 4096,
  /** Datapaths per transaction; each brings at most table_size + 1 rows. */
  batchMax: 16,
  /** How long a failed transaction's datapaths wait before they are compared again. */
  retryDelayMs: 1000,
  /** Transactions a datapath's write may be part of before it waits for the next recheck. */
  attemptsMax: 3,
  /** How often the tables are aged, their settings reread and the SB compared with them. */
  recheckMs: 5000,
} as const;

/** A switch's snooping settings from its IP_Multicast row (ip_mcast_snoop_cfg_load). */
export interface McastSnoopConfig {
  readonly enabled: boolean;
  readonly tableSize: number;
  readonly idleTimeoutS: number;
  readonly seqNo: number;
}

/** What the settings of an IP_Multicast row are, its optional columns defaulted as OVN does. */
export function mcastSnoopConfig(row: {
  readonly enabled: readonly boolean[]; readonly table_size: readonly number[]; readonly idle_timeout: readonly number[]; readonly seq_no: number;
}): McastSnoopConfig {
  return {
    enabled: row.enabled[0] === true,
    tableSize: row.table_size[0] ?? mcastDefaults.tableSize,
    idleTimeoutS: row.idle_timeout[0] ?? mcastDefaults.idleTimeoutS,
    seqNo: row.seq_no,
  };
}

/** An IGMP_Group row of this chassis as the sync reads it. */
export interface IgmpGroupRow {
  readonly uuid: string;
  readonly address: string;
  /** Port_Binding UUIDs. */
  readonly ports: readonly string[];
}

/** What the snooping reads of the agent's SB view; every call is a plain map read or a short scan. */
export interface IgmpLookup {
  chassisUuid(): string | undefined;
  /** The IP_Multicast settings of the datapath with this tunnel key, if it has a row. */
  ipMulticast(dpKey: number): McastSnoopConfig | undefined;
  datapathUuid(dpKey: number): string | undefined;
  /** The Port_Binding UUID of port `portKey` of datapath `dpKey`. */
  portUuid(dpKey: number, portKey: number): string | undefined;
  /** The IGMP_Group rows of chassis `chassisUuid` on datapath `dpUuid`. */
  igmpGroups(dpUuid: string, chassisUuid: string): readonly IgmpGroupRow[];
  /** Tunnel keys of the datapaths where chassis `chassisUuid` has IGMP_Group rows. */
  igmpGroupDatapaths(chassisUuid: string): readonly number[];
}

/** The packet-out that sends a snooped message on from the logical output stage (pinctrl_forward_pkt). */
export function mcastForwardPacketOut(dpKey: number, inportKey: number, outportKey: number, packet: Uint8Array): Extract<OfMessage, { kind: 'packet_out' }> {
  return {
    kind: 'packet_out', bufferId: 0xffffffff, inPort: OFPP.CONTROLLER, data: Buffer.from(packet),
    actions: [
      { kind: 'set_field', field: 'metadata', value: BigInt(dpKey) },
      { kind: 'set_field', field: 'reg14', value: BigInt(inportKey) },
      { kind: 'set_field', field: 'reg15', value: BigInt(outportKey) },
      // OpenFlow 1.0's 16-bit OFPP_CONTROLLER, as resubmit's in_port spells it.
      { kind: 'resubmit', table: OFTABLE_OUTPUT_INIT, inPort: 0xfffd },
    ],
  };
}

/** The tables' state for one datapath, as the SB should show it: group address → port keys. */
export type DatapathGroups = ReadonlyMap<string, readonly number[]>;

/**
 * The operations that make this chassis's IGMP_Group rows of datapath `dpKey` show `desired`
 * (undefined: no table here, every row goes). Empty when the SB shows it already.
 */
export function igmpSyncOps(dpKey: number, desired: DatapathGroups | undefined, lookup: IgmpLookup, chassisUuid: string): unknown[] {
  const dpUuid = lookup.datapathUuid(dpKey);
  if (dpUuid === undefined) return [];
  const want = new Map<string, string[]>();
  for (const [address, keys] of desired ?? []) {
    const ports = [...new Set(keys.flatMap((k) => lookup.portUuid(dpKey, k) ?? []))].sort();
    if (ports.length > 0) want.set(address, ports);
  }
  const ops: unknown[] = [];
  const have = new Set<string>();
  const rows = [...lookup.igmpGroups(dpUuid, chassisUuid)].sort((a, b) => (a.address < b.address ? -1 : a.address > b.address ? 1 : 0));
  for (const row of rows) {
    const ports = want.get(row.address);
    const where = [['_uuid', '==', ['uuid', row.uuid]]];
    if (ports === undefined || have.has(row.address)) {
      ops.push({ op: 'delete', table: 'IGMP_Group', where });
      continue;
    }
    have.add(row.address);
    if (!sameList([...row.ports].sort(), ports)) ops.push({ op: 'update', table: 'IGMP_Group', where, row: { ports: uuidSet(ports) } });
  }
  for (const [address, ports] of want) {
    if (have.has(address)) continue;
    ops.push({
      op: 'insert', table: 'IGMP_Group',
      row: { address, datapath: ['uuid', dpUuid], chassis: ['uuid', chassisUuid], ports: uuidSet(ports) },
    });
  }
  return ops;
}

const uuidSet = (uuids: readonly string[]): unknown => ['set', uuids.map((u) => ['uuid', u])];

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

export interface IgmpSnoopingOptions {
  readonly sb: Pick<SbSource, 'transact'>;
  readonly lookup: IgmpLookup;
  readonly timers?: WriterTimers;
  readonly limits?: Partial<typeof igmpLimits>;
  /** Told of failed transactions (for logs). */
  readonly onProblem?: (message: string) => void;
}

/** What one `igmp;` packet-in did. */
export type IgmpOutcome =
  | {
      readonly kind: 'snooped';
      /** Whether the table changed (a new group, member or router, or a leave). */
      readonly changed: boolean;
      /** The packet-out that sends the message on, when it is a report or a query. */
      readonly forward?: Extract<OfMessage, { kind: 'packet_out' }>;
    }
  | { readonly kind: 'not_snooping'; readonly dpKey: number };

export interface IgmpStats {
  /** Messages learned from (snooping on). */
  snooped: number;
  /** Messages from datapaths without snooping enabled (dropped, as ovn-controller does). */
  notSnooping: number;
  joins: number;
  leaves: number;
  queries: number;
  /** Memberships and routers aged out, in recheck passes that dropped any. */
  expiries: number;
  // The batching writer's counters.
  queued: number;
  replaced: number;
  droppedFull: number;
  transactions: number;
  failedTransactions: number;
  /** Datapaths whose comparison found nothing to write. */
  unchanged: number;
}

interface Snooped {
  readonly table: McastGroupTable;
  config: McastSnoopConfig;
}

export class IgmpSnooping {
  private readonly lookup: IgmpLookup;
  private readonly timers: WriterTimers;
  private readonly limits: typeof igmpLimits;
  private readonly onProblem: ((message: string) => void) | undefined;
  private readonly writer: BatchWriter<number>;
  /** Snooping datapaths by tunnel key. */
  private readonly tables = new Map<number, Snooped>();
  private timer: unknown;
  private closed = false;
  readonly stats: IgmpStats = {
    snooped: 0, notSnooping: 0, joins: 0, leaves: 0, queries: 0, expiries: 0,
    queued: 0, replaced: 0, droppedFull: 0, transactions: 0, failedTransactions: 0, unchanged: 0,
  };

  constructor(options: IgmpSnoopingOptions) {
    this.lookup = options.lookup;
    this.timers = options.timers ?? realTimers;
    this.limits = { ...igmpLimits, ...options.limits };
    this.onProblem = options.onProblem;
    this.writer = new BatchWriter<number>({
      name: 'IgmpSnooping', sb: options.sb, timers: this.timers, stats: this.stats,
      pendingMax: this.limits.pendingMax, batchMax: this.limits.batchMax, flushBatchesMax: Math.ceil(this.limits.pendingMax / this.limits.batchMax),
      retryDelayMs: this.limits.retryDelayMs, attemptsMax: this.limits.attemptsMax,
      plan: (batch) => this.plan(batch),
    });
    this.arm();
  }

  /** Datapaths snooping here, by tunnel key. */
  get datapathsN(): number {
    return this.tables.size;
  }

  /** The groups and member port keys of datapath `dpKey`'s table (for tests and logs). */
  groupsOf(dpKey: number): Map<string, number[]> | undefined {
    return this.tables.get(dpKey)?.table.groupMembers();
  }

  /** The router port keys of datapath `dpKey`'s table. */
  mroutersOf(dpKey: number): number[] | undefined {
    return this.tables.get(dpKey)?.table.mrouterPorts();
  }

  /** One IGMP or MLD message from logical port `inportKey` of datapath `dpKey`. */
  handle(dpKey: number, inportKey: number, m: McastMessage, packet: Uint8Array): IgmpOutcome {
    const s = this.refresh(dpKey);
    if (s === undefined) {
      this.stats.notSnooping++;
      return { kind: 'not_snooping', dpKey };
    }
    this.stats.snooped++;
    const now = this.timers.now();
    let changed = false;
    let outport: number | undefined;
    if (m.kind === 'report') {
      for (const r of m.records) {
        if (r.join) this.stats.joins++;
        else this.stats.leaves++;
        if (r.join ? s.table.join(r.group, inportKey, now) : s.table.leave(r.group, inportKey)) changed = true;
      }
      outport = MC_MROUTER_FLOOD_KEY;
    } else if (m.kind === 'query') {
      this.stats.queries++;
      if (m.fromRouter && s.table.addMrouter(inportKey, now)) changed = true;
      outport = MC_FLOOD_L2_KEY;
    }
    // A refreshed membership moves its expiry: the timer may have to fire later, never sooner
    // than now + idle_timeout, so only a change needs the SB write.
    if (changed) this.queue(dpKey);
    return { kind: 'snooped', changed, ...(outport === undefined ? {} : { forward: mcastForwardPacketOut(dpKey, inportKey, outport, packet) }) };
  }

  /**
   * Ages every table, rereads its settings and compares the SB with it now (the timer calls it;
   * tests call it with their clock moved). Returns the datapaths queued for comparison.
   */
  recheck(): number {
    const now = this.timers.now();
    const keys = new Set<number>();
    for (const dpKey of [...this.tables.keys()]) {
      const s = this.refresh(dpKey);
      if (s !== undefined && s.table.expire(now)) this.stats.expiries++;
      keys.add(dpKey);
    }
    const us = this.lookup.chassisUuid();
    if (us !== undefined) for (const k of this.lookup.igmpGroupDatapaths(us)) keys.add(k);
    for (const k of [...keys].sort((a, b) => a - b)) this.queue(k);
    this.arm();
    return keys.size;
  }

  /** Writes every comparison that is due; resolves when its transactions are done. */
  flush(): Promise<void> {
    return this.writer.flush();
  }

  close(): void {
    this.closed = true;
    this.timers.clearTimeout(this.timer);
    this.writer.close();
  }

  /**
   * The datapath's table after its IP_Multicast row is read again: made when snooping is
   * enabled, flushed when seq_no moved, dropped (and its rows queued for deletion) when the row
   * is gone or disabled.
   */
  private refresh(dpKey: number): Snooped | undefined {
    const config = this.lookup.ipMulticast(dpKey);
    const s = this.tables.get(dpKey);
    if (config === undefined || !config.enabled) {
      if (s !== undefined) {
        this.tables.delete(dpKey);
        this.queue(dpKey);
      }
      return undefined;
    }
    if (s === undefined) {
      const made = { table: new McastGroupTable(config.tableSize, config.idleTimeoutS), config };
      this.tables.set(dpKey, made);
      return made;
    }
    if (config.seqNo !== s.config.seqNo && s.table.flush()) this.queue(dpKey);
    if (config.tableSize !== s.config.tableSize || config.idleTimeoutS !== s.config.idleTimeoutS) s.table.configure(config.tableSize, config.idleTimeoutS);
    s.config = config;
    return s;
  }

  private queue(dpKey: number): void {
    if (this.closed) return;
    this.writer.put(String(dpKey), dpKey, () => this.timers.now());
  }

  /** The timer: at the next expiry, or recheckMs from now, whichever is sooner. */
  private arm(): void {
    if (this.closed) return;
    this.timers.clearTimeout(this.timer);
    const now = this.timers.now();
    let at = now + this.limits.recheckMs;
    for (const s of this.tables.values()) at = Math.min(at, s.table.nextExpiryMs());
    this.timer = this.timers.setTimeout(() => this.recheck(), Math.max(0, at - now));
  }

  /** One transaction for a batch of datapaths: each compared with its table now. */
  private plan(batch: readonly BatchEntry<number>[]): BatchPlan | undefined {
    const us = this.lookup.chassisUuid();
    if (us === undefined) return undefined;
    const ops: unknown[] = [];
    for (const { item: dpKey } of batch) {
      const s = this.tables.get(dpKey);
      let desired: Map<string, readonly number[]> | undefined;
      if (s !== undefined) {
        desired = s.table.groupMembers();
        const mrouters = s.table.mrouterPorts();
        if (mrouters.length > 0) desired.set(IGMP_GROUP_MROUTERS, mrouters);
      }
      const dpOps = igmpSyncOps(dpKey, desired, this.lookup, us);
      if (dpOps.length === 0) this.stats.unchanged++;
      ops.push(...dpOps);
    }
    return {
      ops,
      committed: () => undefined,
      failed: (failure) => this.onProblem?.(`IGMP_Group write for datapaths ${batch.map((e) => e.item).join(', ')} failed: ${failure}`),
    };
  }
}
