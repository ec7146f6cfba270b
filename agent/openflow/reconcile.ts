// Reconciliation, pure: given the flows the compiler wants and the flows the switch reports, the
// flow_mods that turn the second into the first without clearing any table. A flow is identified
// as OpenFlow identifies it for strict commands: (table, priority, match). Its content is its
// cookie and its actions, compared in canonical wire form so that two spellings of one action
// (Open vSwitch re-encodes what it was given) count as equal.

import { encodeActions, writeActions } from './actions.js';
import { encodeMessage, type FlowMod, type FlowStats, type GroupMod, type MeterMod } from './messages.js';
import type { FlowSpec, GroupSpec, MaskedValue, MeterSpec, OfAction } from './types.js';
import { Writer } from './wire.js';

/**
 * The identity of a flow: table, priority and the canonical match, as one flat string (made by a
 * single join: a key built by concatenation stays a tree of string pieces in the tables that
 * hold it as a key: 5 to 9 MB more in a chassis holding 88,685 flows).
 */
export function flowKey(table: number, priority: number, match: ReadonlyMap<string, MaskedValue>): string {
  const parts: string[] = [];
  for (const [name, v] of match) {
    if (v.mask === 0n) continue;
    parts.push(`${name}=${(v.value & v.mask).toString(16)}/${v.mask.toString(16)}`);
  }
  parts.sort();
  parts.unshift(`${table}|${priority}`);
  return parts.join('|');
}

/** Whether an installed flow's actions equal 'want' (our canonical encoding): byte-equal as
 *  sent, or equal once re-encoded from their decoded form (Open vSwitch may spell an action
 *  differently from us, e.g. output_reg2 for output_reg). */
function sameActions(want: Buffer, f: FlowStats): boolean {
  if (want.equals(f.actionBytes)) return true;
  return Array.isArray(f.actions) && want.equals(encodeActions(f.actions as readonly OfAction[]));
}

export interface FlowDiff {
  /** Deletes first, then modifications, then additions. */
  readonly mods: readonly FlowMod[];
  readonly added: number;
  readonly modified: number;
  readonly deleted: number;
  readonly unchanged: number;
  /** Desired flows that repeat an earlier flow's identity; the first one wins. */
  readonly duplicates: number;
}

export interface DiffOptions {
  /** Only installed flows in these tables are candidates for deletion; absent = every table. */
  readonly tables?: ReadonlySet<number>;
  /** Desired flows the switch holds as they are that must be sent again all the same (a
   *  modify with the same actions); absent = none. */
  readonly refresh?: (f: FlowSpec) => boolean;
}

export function diffFlows(desired: readonly FlowSpec[], installed: readonly FlowStats[], options: DiffOptions = {}): FlowDiff {
  const want = new Map<string, FlowSpec>();
  let duplicates = 0;
  for (const f of desired) {
    const k = flowKey(f.table, f.priority, f.match);
    if (want.has(k)) duplicates++;
    else want.set(k, f);
  }
  const deletes: FlowMod[] = [];
  const modifies: FlowMod[] = [];
  const adds: FlowMod[] = [];
  const seen = new Set<string>();
  let unchanged = 0;
  // One scratch buffer for every desired flow's canonical actions.
  const scratch = new Writer(1024);
  for (const f of installed) {
    const k = flowKey(f.table, f.priority, f.match);
    const d = want.get(k);
    if (d === undefined) {
      if (options.tables !== undefined && !options.tables.has(f.table)) continue;
      deletes.push({ command: 'delete_strict', table: f.table, priority: f.priority, match: f.match, actions: [], cookie: 0n, cookieMask: 0n });
      continue;
    }
    seen.add(k);
    scratch.reset();
    writeActions(scratch, d.actions);
    const same = sameActions(scratch.view(), f);
    if (d.cookie !== f.cookie) {
      // OpenFlow 1.5's modify cannot change a cookie; an add over the same identity replaces
      // the flow whole.
      adds.push({ command: 'add', table: d.table, priority: d.priority, match: d.match, actions: d.actions, cookie: d.cookie });
    } else if (!same || options.refresh?.(d) === true) {
      modifies.push({ command: 'modify_strict', table: d.table, priority: d.priority, match: d.match, actions: d.actions, cookie: d.cookie, cookieMask: 0n });
    } else {
      unchanged++;
    }
  }
  const modified = modifies.length + adds.length;
  for (const [k, d] of want) {
    if (!seen.has(k)) adds.push({ command: 'add', table: d.table, priority: d.priority, match: d.match, actions: d.actions, cookie: d.cookie });
  }
  return {
    mods: [...deletes, ...modifies, ...adds],
    added: adds.length - (modified - modifies.length),
    modified,
    deleted: deletes.length,
    unchanged,
    duplicates,
  };
}

/** Canonical bytes of a group: its add group_mod, with select buckets' default weight spelled. */
function groupBytes(g: GroupSpec): Buffer {
  const buckets = g.type === 'select' ? g.buckets.map((b) => ({ ...b, weight: b.weight ?? SELECT_WEIGHT_DEFAULT })) : g.buckets;
  return encodeMessage({ kind: 'group_mod', mod: { command: 'add', group: { ...g, buckets } } }, 0);
}

/** The weight Open vSwitch gives a select group's bucket that names none (it reports 1). */
export const SELECT_WEIGHT_DEFAULT = 1;

export interface GroupDiff {
  /** Adds and modifications: apply before the flows that use them. */
  readonly before: readonly GroupMod[];
  /** Deletions: apply after the flows that used them are gone. */
  readonly after: readonly GroupMod[];
  readonly unchanged: number;
}

/** Group reconciliation by group id: add the missing, modify the changed, delete the extra. */
export function diffGroups(desired: readonly GroupSpec[], installed: readonly GroupSpec[]): GroupDiff {
  const have = new Map(installed.map((g) => [g.groupId, g]));
  const want = new Map<number, GroupSpec>();
  for (const g of desired) if (!want.has(g.groupId)) want.set(g.groupId, g);
  const before: GroupMod[] = [];
  const after: GroupMod[] = [];
  let unchanged = 0;
  for (const [id, g] of want) {
    const h = have.get(id);
    if (h === undefined) before.push({ command: 'add', group: g });
    else if (!groupBytes(g).equals(groupBytes(h))) before.push({ command: 'modify', group: g });
    else unchanged++;
  }
  for (const [id, h] of have) if (!want.has(id)) after.push({ command: 'delete', group: { groupId: id, type: h.type, buckets: [] } });
  return { before, after, unchanged };
}

/**
 * Canonical bytes of a meter: its add meter_mod, a band's burst size of 0 spelled as its rate.
 * Open vSwitch's datapaths take 0 to mean the rate (the userspace one stores and reports the
 * rate; the kernel one passes the rate down), so both are the same meter.
 */
function meterBytes(m: MeterSpec): Buffer {
  const bands = m.bands.map((b) => (b.burstSize === 0 ? { ...b, burstSize: b.rate } : b));
  return encodeMessage({ kind: 'meter_mod', mod: { command: 'add', meter: { ...m, bands } } }, 0);
}

export interface MeterDiff {
  /** Adds and modifications: send before the flows that use them. */
  readonly before: readonly MeterMod[];
  /** Deletions: send after the flows that used them are gone. */
  readonly after: readonly MeterMod[];
  /** The ids of the meters added (not modified). */
  readonly added: ReadonlySet<number>;
  readonly unchanged: number;
}

/** Meter reconciliation by meter id: add the missing, modify the changed, delete the extra. */
export function diffMeters(desired: readonly MeterSpec[], installed: readonly MeterSpec[]): MeterDiff {
  const have = new Map(installed.map((m) => [m.meterId, m]));
  const want = new Map<number, MeterSpec>();
  for (const m of desired) if (!want.has(m.meterId)) want.set(m.meterId, m);
  const before: MeterMod[] = [];
  const after: MeterMod[] = [];
  const added = new Set<number>();
  let unchanged = 0;
  for (const [id, m] of want) {
    const h = have.get(id);
    if (h === undefined) {
      before.push({ command: 'add', meter: m });
      added.add(id);
    } else if (!meterBytes(m).equals(meterBytes(h))) {
      before.push({ command: 'modify', meter: m });
    } else {
      unchanged++;
    }
  }
  for (const id of have.keys()) if (!want.has(id)) after.push({ command: 'delete', meter: { meterId: id, flags: 0, bands: [] } });
  return { before, after, added, unchanged };
}

/** Whether a controller() among the actions (or nested in clone) names one of these meters. */
export function usesControllerMeter(actions: readonly OfAction[], meters: ReadonlySet<number>): boolean {
  for (const a of actions) {
    if ((a.kind === 'controller' || a.kind === 'controller_op') && a.meterId !== undefined && meters.has(a.meterId)) return true;
    if (a.kind === 'clone' && usesControllerMeter(a.actions, meters)) return true;
  }
  return false;
}

/** The meters meter:N actions among the actions (or nested in clone) pass through. */
export function metersUsed(actions: readonly OfAction[], out: Set<number>): void {
  for (const a of actions) {
    if (a.kind === 'meter') out.add(a.meterId);
    else if (a.kind === 'clone') metersUsed(a.actions, out);
  }
}
