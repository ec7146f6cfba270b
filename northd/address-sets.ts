// SB Address_Set, as ovn-northd 23.03 syncs it: `svc_monitor_mac` holding the service-monitor
// MAC of SB_Global (so that flows can match $svc_monitor_mac), `<port_group>_ip4` and
// `<port_group>_ip6` for every NB port group (the IP addresses in its ports' addresses and
// dynamic_addresses, MACs ignored; empty sets included), and every NB address set by name,
// which wins over a generated set of the same name; `_rtr_lb_<router key>_ip4/_ip6` for a
// router's load balancer VIPs that its ports answer ARP/ND for. Addresses are sorted, as a set
// column is.
// The SB row's UUID derives from the set's name, so replicas agree and a set keeps its row.
//
// Incremental: a port group's addresses are counted per member port, so a port joining or
// leaving, or changing its addresses, updates only its groups' sets (kept sorted, not sorted
// again); only the names a change touches are written, and a group's row as its previous
// addresses edited by the few that came or went (CountedSet.takeFlips).
import type { Database, DbDelta, Uuid } from '../ovsdb/index.js';
import { lowerBound } from '../ovsdb/atom.js';
import { recordSetEdit, withEdits } from '../ovsdb/datum.js';
import type * as nb from '../ovsdb/rows/nb.js';
import type * as sb from '../ovsdb/rows/sb.js';
import type { EngineNode, NodeInputs } from './engine.js';
import { EMPTY_SET_SUM, hashUuid, setSumWith, setVersion, textWords, type SetSum } from './hash.js';
import { nbGet, nbRows } from './nb.js';
import { extractLspIps, isDynamicAddress } from './netaddr.js';
import { sameData, sortedDifference } from './same-data.js';
import type { DatapathsChange, DatapathsData } from './datapaths.js';
import type { RoutersChange, RoutersData } from './routers.js';
import { routerLbAddressSetName } from './lflows/router.js';
import { SbChangeSet, SbTable } from './sb-changes.js';
import { fitted } from './fitted.js';
import { svcMonitorMacOf } from './sb-global.js';

const SVC_MONITOR_MAC = 'svc_monitor_mac';

/**
 * The most addresses a CountedSet lists as come or gone between two writes of its SB row;
 * beyond it the next write compares the whole set (a group's first members, a bulk change).
 */
const FLIPS_MAX = 256;

/**
 * One family's addresses of a port group: how many members give each, and them sorted. It also
 * notes which addresses came or went since its SB row was last written (`takeFlips`), so that the
 * next write edits the row's addresses rather than copy and compare the whole set: a group of
 * tens of thousands of ports gaining one is then one address, not a walk of both lists.
 */
class CountedSet {
  readonly counts = new Map<string, number>();
  readonly sorted: string[] = [];
  private flips = new Set<string>();
  private flipsOverflow = false;

  add(a: string): void {
    const n = this.counts.get(a) ?? 0;
    this.counts.set(a, n + 1);
    if (n === 0) {
      this.sorted.splice(lowerBound(this.sorted, a), 0, a);
      this.flip(a);
    }
  }

  /**
   * Adds many at once: the new ones are sorted together and merged in, rather than inserted one
   * by one (a port group of ten thousand ports would move the list ten thousand times).
   */
  addAll(list: readonly string[]): void {
    const fresh: string[] = [];
    for (const a of list) {
      const n = this.counts.get(a) ?? 0;
      this.counts.set(a, n + 1);
      if (n === 0) fresh.push(a);
    }
    if (fresh.length === 0) return;
    for (const a of fresh) this.flip(a);
    // The default sort compares UTF-16 code units, as `position` does.
    fresh.sort();
    const merged: string[] = [];
    let i = 0;
    for (const a of fresh) {
      while (i < this.sorted.length && (this.sorted[i] as string) < a) merged.push(this.sorted[i++] as string);
      merged.push(a);
    }
    while (i < this.sorted.length) merged.push(this.sorted[i++] as string);
    this.sorted.length = 0;
    for (const a of merged) this.sorted.push(a);
  }

  remove(a: string): void {
    const n = this.counts.get(a) ?? 0;
    if (n <= 1) {
      this.counts.delete(a);
      const i = lowerBound(this.sorted, a);
      if (this.sorted[i] === a) this.sorted.splice(i, 1);
      this.flip(a);
    } else {
      this.counts.set(a, n - 1);
    }
  }

  /**
   * The addresses that came or went since the last call (some may have come and gone again), or
   * undefined when more did than FLIPS_MAX; either way the list starts afresh.
   */
  takeFlips(): ReadonlySet<string> | undefined {
    const flips = this.flipsOverflow ? undefined : this.flips;
    this.flips = new Set();
    this.flipsOverflow = false;
    return flips;
  }

  private flip(a: string): void {
    if (this.flipsOverflow) return;
    if (this.flips.size >= FLIPS_MAX) {
      this.flipsOverflow = true;
      this.flips.clear();
    } else this.flips.add(a);
  }
}

interface Contribution {
  readonly v4: readonly string[];
  readonly v6: readonly string[];
}

interface PortGroupAddresses {
  name: string;
  readonly members: Map<Uuid, Contribution>;
  readonly v4: CountedSet;
  readonly v6: CountedSet;
}

export interface AddressSetsData {
  readonly table: SbTable;
  readonly pgs: Map<Uuid, PortGroupAddresses>;
  /** Port group name → its UUID (NB names are unique). */
  readonly pgByName: Map<string, Uuid>;
  /** `_rtr_lb_<key>_ip4/6` → a router's reachable load balancer VIPs (only non-empty sets). */
  readonly routerSets: Map<string, readonly string[]>;
  /** Router datapath → the names of its sets, as last written. */
  readonly routerSetNames: Map<Uuid, readonly string[]>;
  /** Set name → the router that wrote it last: only that router's change takes it away. */
  readonly routerSetOwner: Map<string, Uuid>;
  /** Each written row's addresses as summed for its version (by row UUID). */
  readonly sums: Map<Uuid, WrittenSum>;
}

interface WrittenSum {
  readonly sum: SetSum;
  /** The addresses were sorted and each there once: a later write sums only the difference. */
  readonly sorted: boolean;
  /** The port group set the row was written from, whose flips since then are the row's edits. */
  readonly from?: CountedSet;
}

/** The IP addresses a port gives its port groups (split_addresses of each entry). */
function contributionOf(lsp: nb.Logical_Switch_Port | undefined): Contribution {
  const v4: string[] = [];
  const v6: string[] = [];
  if (lsp === undefined) return { v4, v6 };
  // Indexed, with no filtered copy of the entries: a recompute asks this of every member.
  const addresses = lsp.addresses;
  for (let i = 0; i < addresses.length; i++) {
    const a = addresses[i] as string;
    if (!isDynamicAddress(a)) extractLspIps(a, v4, v6);
  }
  if (lsp.dynamic_addresses[0] !== undefined) extractLspIps(lsp.dynamic_addresses[0], v4, v6);
  return { v4: fitted(v4), v6: fitted(v6) };
}

function setContribution(pg: PortGroupAddresses, lsp: Uuid, c: Contribution | undefined): void {
  const old = pg.members.get(lsp);
  if (old !== undefined) {
    for (const a of old.v4) pg.v4.remove(a);
    for (const a of old.v6) pg.v6.remove(a);
    pg.members.delete(lsp);
  }
  if (c !== undefined) {
    for (const a of c.v4) pg.v4.add(a);
    for (const a of c.v6) pg.v6.add(a);
    pg.members.set(lsp, c);
  }
}

function touchPg(dirty: Set<string>, name: string): void {
  dirty.add(`${name}_ip4`);
  dirty.add(`${name}_ip6`);
}

/** Brings a port group's addresses in step with its NB row (undefined: deleted). */
function syncPortGroup(db: Database, data: AddressSetsData, pgUuid: Uuid, oldPorts: readonly Uuid[] | undefined, dirty: Set<string>): void {
  const row = nbGet<nb.Port_Group>(db, 'Port_Group', pgUuid);
  let pg = data.pgs.get(pgUuid);
  if (pg !== undefined && (row === undefined || row.name !== pg.name)) {
    touchPg(dirty, pg.name);
    if (data.pgByName.get(pg.name) === pgUuid) data.pgByName.delete(pg.name);
  }
  if (row === undefined) {
    data.pgs.delete(pgUuid);
    return;
  }
  const renamed = pg === undefined || pg.name !== row.name;
  if (pg === undefined) data.pgs.set(pgUuid, (pg = { name: row.name, members: new Map(), v4: new CountedSet(), v6: new CountedSet() }));
  pg.name = row.name;
  data.pgByName.set(row.name, pgUuid);
  const contribution = (lsp: Uuid): Contribution => contributionOf(nbGet<nb.Logical_Switch_Port>(db, 'Logical_Switch_Port', lsp));
  if (oldPorts === undefined) {
    touchPg(dirty, row.name);
    if (pg.members.size > 0) {
      const now = new Set(row.ports);
      for (const lsp of [...pg.members.keys()]) if (!now.has(lsp)) setContribution(pg, lsp, undefined);
      for (const lsp of row.ports) setContribution(pg, lsp, contribution(lsp));
      return;
    }
    // A group seen for the first time (every group, in a recompute): its members' addresses
    // are added together.
    const v4: string[] = [];
    const v6: string[] = [];
    // Indexed: this runs once per group per recompute, over every member.
    const ports = row.ports;
    for (let i = 0; i < ports.length; i++) {
      const lsp = ports[i] as Uuid;
      const c = contribution(lsp);
      pg.members.set(lsp, c);
      for (let j = 0; j < c.v4.length; j++) v4.push(c.v4[j] as string);
      for (let j = 0; j < c.v6.length; j++) v6.push(c.v6[j] as string);
    }
    pg.v4.addAll(v4);
    pg.v6.addAll(v6);
    return;
  }
  // Only the ports that joined or left (set columns are sorted: one merge walk); a change of
  // another column (its ACLs) leaves the sets as they are.
  const { removed, added } = sortedDifference(oldPorts, row.ports);
  if (renamed || removed.length > 0 || added.length > 0) touchPg(dirty, row.name);
  for (const lsp of removed) setContribution(pg, lsp, undefined);
  for (const lsp of added) setContribution(pg, lsp, contribution(lsp));
}

/**
 * What SB row `name` should hold now, or undefined for none: its addresses, `sorted` when they
 * are sorted and each there once (an NB set column, a port group's set), or for a port group's
 * set the CountedSet itself (`write` copies or edits it).
 */
function desired(db: Database, data: AddressSetsData, name: string): { readonly addresses: readonly string[]; readonly sorted: boolean } | CountedSet | undefined {
  const own = db.findUnique('Address_Set', ['name'], [name]) as unknown as nb.Address_Set | undefined;
  if (own !== undefined) return { addresses: own.addresses, sorted: true };
  // Synced after the port groups' sets, before the NB ones: it wins over a port group's.
  const router = data.routerSets.get(name);
  if (router !== undefined) return { addresses: router, sorted: false };
  for (const suffix of ['_ip4', '_ip6'] as const) {
    if (!name.endsWith(suffix)) continue;
    const pgUuid = data.pgByName.get(name.slice(0, -suffix.length));
    const pg = pgUuid === undefined ? undefined : data.pgs.get(pgUuid);
    if (pg !== undefined) return suffix === '_ip4' ? pg.v4 : pg.v6;
  }
  if (name === SVC_MONITOR_MAC) {
    const mac = svcMonitorMacOf(db);
    return mac === undefined ? undefined : { addresses: [mac], sorted: true };
  }
  return undefined;
}

/** What an SB Address_Set row is to hold: its addresses, and their set sum for its version. */
interface Written {
  readonly addresses: readonly string[];
  readonly sum: SetSum;
}

/**
 * A port group set's addresses for its row, when the row was last written from the same set:
 * the row's addresses edited by what came or went since (`flips`), recorded as an edit so that
 * the SB change's readers take it too, and the sum moved by the same.
 */
function edited(set: CountedSet, old: readonly string[], oldSum: SetSum, flips: ReadonlySet<string>): Written {
  const edits: [number, string | undefined][] = [];
  const added: string[] = [];
  const removed: string[] = [];
  // Sorted, the flips' positions in `old` ascend; an address inserted at the position of one
  // removed sorts before it, so the insertion comes first, as withEdits wants.
  for (const a of [...flips].sort()) {
    const at = lowerBound(old, a);
    const was = old[at] === a;
    const is = set.counts.has(a);
    if (was && !is) {
      edits.push([at, undefined]);
      removed.push(a);
    } else if (!was && is) {
      edits.push([at, a]);
      added.push(a);
    }
  }
  if (edits.length === 0) return { addresses: old, sum: oldSum };
  const addresses = withEdits(old, edits);
  recordSetEdit(addresses, old, added, removed);
  return { addresses, sum: setSumWith(setSumWith(oldSum, added, 1, textWords), removed, -1, textWords) };
}

/** `addresses` for a row, its sum taken from the row's previous one when both are sorted sets. */
function compared(addresses: readonly string[], sorted: boolean, old: sb.Address_Set | undefined, before: WrittenSum | undefined): Written {
  if (before?.sorted !== true || !sorted || old === undefined) return { addresses, sum: setSumWith(EMPTY_SET_SUM, addresses, 1, textWords) };
  const { removed, added } = sortedDifference(old.addresses, addresses);
  return { addresses, sum: setSumWith(setSumWith(before.sum, added, 1, textWords), removed, -1, textWords) };
}

function write(db: Database, data: AddressSetsData, names: Iterable<string>, out: SbChangeSet): void {
  for (const name of [...new Set(names)].sort()) {
    const uuid = hashUuid(['Address_Set', name]);
    const want = desired(db, data, name);
    if (want === undefined) {
      data.table.remove(uuid, out);
      data.sums.delete(uuid);
      continue;
    }
    const before = data.sums.get(uuid);
    const old = data.table.rows.get(uuid) as unknown as sb.Address_Set | undefined;
    let written: Written;
    if (want instanceof CountedSet) {
      const flips = want.takeFlips();
      written =
        flips !== undefined && before?.from === want && old !== undefined
          ? edited(want, old.addresses, before.sum, flips)
          : compared(want.sorted.slice(), true, old, before);
      data.sums.set(uuid, { sum: written.sum, sorted: true, from: want });
    } else {
      written = compared(want.addresses, want.sorted, old, before);
      data.sums.set(uuid, { sum: written.sum, sorted: want.sorted });
    }
    const { addresses, sum } = written;
    const row: sb.Address_Set = { _uuid: uuid, _version: setVersion('Address_Set', uuid, addresses.length, sum), name, addresses };
    data.table.put(row, out);
  }
}

/** A router's load balancer VIP sets (en-sync-sb's lr_lb_address_set_name), by its facts now. */
/**
 * The load balancer VIP sets of routers `sbUuids`, derived again: every one's old sets go before
 * any is written, since their names carry tunnel keys, and routers that trade keys in one run
 * (a requested key taken from its holder) trade names too.
 */
function syncRouters(inputs: NodeInputs, data: AddressSetsData, sbUuids: Iterable<Uuid>, dirty: Set<string>): void {
  const routers = [...sbUuids];
  for (const sbUuid of routers) {
    for (const name of data.routerSetNames.get(sbUuid) ?? []) {
      // A name another router took meanwhile (through another input of this run) is its own.
      if (data.routerSetOwner.get(name) !== sbUuid) continue;
      data.routerSets.delete(name);
      data.routerSetOwner.delete(name);
      dirty.add(name);
    }
    data.routerSetNames.delete(sbUuid);
  }
  for (const sbUuid of routers) {
    const facts = inputs.data<RoutersData>('routers').bySb.get(sbUuid);
    const key = inputs.data<DatapathsData>('datapaths').bySb.get(sbUuid)?.key;
    if (facts === undefined || key === undefined) continue;
    const names: string[] = [];
    const lb = facts.portFacing.lbIps;
    for (const [v6, ips] of [[false, lb.v4Reachable], [true, lb.v6Reachable]] as const) {
      if (ips.length === 0) continue;
      const name = routerLbAddressSetName(key, v6);
      data.routerSets.set(name, ips);
      data.routerSetOwner.set(name, sbUuid);
      names.push(name);
      dirty.add(name);
    }
    if (names.length > 0) data.routerSetNames.set(sbUuid, names);
  }
}

export function addressSetsNode(): EngineNode<AddressSetsData, SbChangeSet> {
  return {
    name: 'address_sets',
    inputs: ['nb', 'datapaths', 'routers'],
    init: () => ({ table: new SbTable('Address_Set'), pgs: new Map(), pgByName: new Map(), routerSets: new Map(), routerSetNames: new Map(), routerSetOwner: new Map(), sums: new Map() }),
    newChange: () => new SbChangeSet(),
    isEmpty: (c) => c.size === 0,
    recompute(data: AddressSetsData, inputs: NodeInputs, out: SbChangeSet): void {
      const db = inputs.data<Database>('nb');
      const names = new Set<string>([SVC_MONITOR_MAC]);
      for (const row of data.table.rows.values()) names.add((row as unknown as sb.Address_Set).name);
      for (const s of nbRows<nb.Address_Set>(db, 'Address_Set').values()) names.add(s.name);
      data.pgs.clear();
      data.pgByName.clear();
      for (const pg of [...nbRows<nb.Port_Group>(db, 'Port_Group').keys()].sort()) syncPortGroup(db, data, pg, undefined, names);
      const routers = inputs.data<RoutersData>('routers');
      syncRouters(inputs, data, [...new Set([...data.routerSetNames.keys(), ...routers.bySb.keys()])].sort(), names);
      write(db, data, names, out);
    },
    handlers: {
      nb(data: AddressSetsData, change: unknown, inputs: NodeInputs, out: SbChangeSet) {
        const db = inputs.data<Database>('nb');
        const dirty = new Set<string>();
        for (const c of (change as DbDelta).changes) {
          switch (c.table) {
            case 'Address_Set':
              for (const r of [c.kind === 'insert' ? undefined : c.old, c.kind === 'delete' ? undefined : c.new]) {
                if (r !== undefined) dirty.add((r as unknown as nb.Address_Set).name);
              }
              break;
            case 'NB_Global':
              dirty.add(SVC_MONITOR_MAC);
              break;
            case 'Port_Group':
              syncPortGroup(db, data, c.uuid, c.kind === 'insert' ? undefined : (c.old as unknown as nb.Port_Group).ports, dirty);
              break;
            case 'Logical_Switch_Port': {
              // A member's addresses changed: its groups' counts follow.
              if (c.kind !== 'modify') break;
              const lsp = c.new as unknown as nb.Logical_Switch_Port;
              for (const pgUuid of db.weakReferrers(c.uuid).keys()) {
                const pg = data.pgs.get(pgUuid);
                if (pg === undefined || !pg.members.has(c.uuid)) continue;
                setContribution(pg, c.uuid, contributionOf(lsp));
                touchPg(dirty, pg.name);
              }
              break;
            }
            default:
              break;
          }
        }
        if (dirty.size === 0) return 'unchanged';
        write(db, data, dirty, out);
        return 'handled';
      },
      routers(data: AddressSetsData, change: unknown, inputs: NodeInputs, out: SbChangeSet) {
        const dirty = new Set<string>();
        const touched: Uuid[] = [];
        for (const [sbUuid, { old, new: now }] of (change as RoutersChange).routers) {
          if (old !== undefined && now !== undefined && sameData(old.portFacing.lbIps, now.portFacing.lbIps)) continue;
          touched.push(sbUuid);
        }
        syncRouters(inputs, data, touched, dirty);
        if (dirty.size === 0) return 'unchanged';
        write(inputs.data<Database>('nb'), data, dirty, out);
        return 'handled';
      },
      // A router's sets are named after its tunnel key, which a requested key can change while
      // it lives (its router facts come and go with the router itself).
      datapaths(data: AddressSetsData, change: unknown, inputs: NodeInputs, out: SbChangeSet) {
        const dirty = new Set<string>();
        const moved: Uuid[] = [];
        for (const [sbUuid, { old, new: now }] of (change as DatapathsChange).datapaths) {
          if (old === undefined || now === undefined || old.key === now.key || now.kind !== 'router') continue;
          moved.push(sbUuid);
        }
        syncRouters(inputs, data, moved, dirty);
        if (dirty.size === 0) return 'unchanged';
        write(inputs.data<Database>('nb'), data, dirty, out);
        return 'handled';
      },
    },
  };
}
