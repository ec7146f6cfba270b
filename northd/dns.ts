// SB DNS: one row per NB DNS row that at least one logical switch names in dns_records, as
// ovn-northd 23.03 writes it (sync_dns_entries): records copied with their values in lowercase
// (the names keep their case), datapaths = the switches naming it, external_ids:dns_id = the
// NB row's UUID, and nothing else. The row's UUID is a hash of the NB UUID, so every replica
// names it alike.
//
// The node also tells the switch flows whether a switch has DNS records (ovn-northd's
// ls_has_dns_records: one of its DNS rows has a non-empty records map), which turns on the
// ls_in_dns_lookup / ls_in_dns_response flows and the ls_out_acl pass for DNS replies.
//
// Incremental: an NB change makes some switches (their dns_records column, their datapath)
// and some DNS rows (their records) dirty; each dirty switch's references are read again,
// every DNS row a dirty switch named before or after, or that changed itself, is written
// again, and the flag is derived again for the dirty switches and those naming a dirty row.
import type { Database, DbDelta, Uuid } from '../ovsdb/index.js';
import type * as nb from '../ovsdb/rows/nb.js';
import type * as sb from '../ovsdb/rows/sb.js';
import type { DatapathsChange, DatapathsData } from './datapaths.js';
import { datapathSbUuid } from './datapaths.js';
import type { EngineNode, NodeInputs } from './engine.js';
import { hashUuid } from './hash.js';
import { nbGet, nbRows } from './nb.js';
import { SbChangeSet, SbTable, versioned } from './sb-changes.js';

export interface DnsData {
  /** Switch (NB UUID) → the NB DNS rows its dns_records names (sorted), when it has a datapath. */
  readonly refsBySwitch: Map<Uuid, readonly Uuid[]>;
  /** NB DNS UUID → the switches (NB UUIDs) naming it. */
  readonly switchesByDns: Map<Uuid, Set<Uuid>>;
  /** Switch datapaths with DNS records (ls_has_dns_records). */
  readonly withRecords: Set<Uuid>;
  readonly table: SbTable;
}

export interface DnsChange {
  readonly sb: SbChangeSet;
  /** Switch datapaths whose "has DNS records" flag changed. */
  readonly flipped: Set<Uuid>;
}

const NO_UUIDS: readonly Uuid[] = Object.freeze([]);

export function dnsSbUuid(nbUuid: Uuid): Uuid {
  return hashUuid(['DNS', nbUuid]);
}

/** What one run derives again: switches by NB UUID, and NB DNS rows. */
interface Dirty {
  readonly switches: Set<Uuid>;
  readonly dns: Set<Uuid>;
}

/** The NB DNS rows switch `nbUuid` names, when it is a switch with a datapath. */
function refsOf(db: Database, dps: DatapathsData, nbUuid: Uuid): readonly Uuid[] {
  const info = dps.byNb.get(nbUuid);
  if (info === undefined || info.kind !== 'switch') return NO_UUIDS;
  const ls = nbGet<nb.Logical_Switch>(db, 'Logical_Switch', nbUuid);
  // Set columns are sorted; a weak reference to a deleted row is already gone from it.
  return ls === undefined || ls.dns_records.length === 0 ? NO_UUIDS : ls.dns_records;
}

function sameUuids(a: readonly Uuid[], b: readonly Uuid[]): boolean {
  return a.length === b.length && a.every((u, i) => u === b[i]);
}

/** ls_has_dns_records: a DNS row the switch names has records. */
function hasRecords(db: Database, refs: readonly Uuid[]): boolean {
  return refs.some((u) => (nbGet<nb.DNS>(db, 'DNS', u)?.records.size ?? 0) > 0);
}

/** `text` with A-Z in lowercase and every other character as it is (C's tolower, as str_tolower). */
function asciiLower(text: string): string {
  return /[A-Z]/.test(text) ? text.replace(/[A-Z]+/g, (run) => run.toLowerCase()) : text;
}

/** The SB row of NB DNS row `nbUuid`, or undefined when no switch names it. */
function dnsRow(db: Database, data: DnsData, nbUuid: Uuid): sb.DNS | undefined {
  const row = nbGet<nb.DNS>(db, 'DNS', nbUuid);
  const switches = data.switchesByDns.get(nbUuid);
  if (row === undefined || switches === undefined || switches.size === 0) return undefined;
  // Keys in sorted order, as every map value is built (NB maps are sorted already).
  const records = new Map<string, string>();
  for (const [name, addresses] of row.records) records.set(name, asciiLower(addresses));
  return versioned<sb.DNS>({
    _uuid: dnsSbUuid(nbUuid), _version: '', records, datapaths: [...switches].map(datapathSbUuid).sort(), external_ids: new Map([['dns_id', nbUuid]]),
  });
}

/** Brings the dirty switches' references, the dirty rows and the switches' flags up to date. */
function derive(db: Database, dps: DatapathsData, data: DnsData, dirty: Dirty, out: DnsChange): void {
  const flagged = new Set<Uuid>();
  for (const nbUuid of [...dirty.switches].sort()) {
    const old = data.refsBySwitch.get(nbUuid) ?? NO_UUIDS;
    const now = refsOf(db, dps, nbUuid);
    // With the same rows named, only a change of those rows (below) can flip its flag: a new
    // switch naming none is not looked at again.
    if (sameUuids(old, now)) continue;
    flagged.add(nbUuid);
    for (const dns of old) {
      dirty.dns.add(dns);
      const s = data.switchesByDns.get(dns);
      s?.delete(nbUuid);
      if (s?.size === 0) data.switchesByDns.delete(dns);
    }
    for (const dns of now) {
      dirty.dns.add(dns);
      let s = data.switchesByDns.get(dns);
      if (s === undefined) data.switchesByDns.set(dns, (s = new Set()));
      s.add(nbUuid);
    }
    if (now.length === 0) data.refsBySwitch.delete(nbUuid);
    else data.refsBySwitch.set(nbUuid, now);
  }
  for (const dns of [...dirty.dns].sort()) {
    const row = dnsRow(db, data, dns);
    if (row === undefined) data.table.remove(dnsSbUuid(dns), out.sb);
    else data.table.put(row, out.sb);
    for (const nbUuid of data.switchesByDns.get(dns) ?? []) flagged.add(nbUuid);
  }
  for (const nbUuid of [...flagged].sort()) {
    const sbUuid = datapathSbUuid(nbUuid);
    const flag = hasRecords(db, data.refsBySwitch.get(nbUuid) ?? NO_UUIDS);
    if (flag === data.withRecords.has(sbUuid)) continue;
    if (flag) data.withRecords.add(sbUuid);
    else data.withRecords.delete(sbUuid);
    out.flipped.add(sbUuid);
  }
}

function finish(db: Database, dps: DatapathsData, data: DnsData, dirty: Dirty, out: DnsChange): 'handled' | 'unchanged' {
  if (dirty.switches.size === 0 && dirty.dns.size === 0) return 'unchanged';
  derive(db, dps, data, dirty, out);
  return 'handled';
}

export function dnsNode(): EngineNode<DnsData, DnsChange> {
  return {
    name: 'dns',
    inputs: ['nb', 'datapaths'],
    init: () => ({ refsBySwitch: new Map(), switchesByDns: new Map(), withRecords: new Set(), table: new SbTable('DNS') }),
    newChange: () => ({ sb: new SbChangeSet(), flipped: new Set() }),
    isEmpty: (c) => c.sb.size === 0 && c.flipped.size === 0,
    recompute(data: DnsData, inputs: NodeInputs, out: DnsChange): void {
      out.sb.maybeTrackWhole(data.table);
      const db = inputs.data<Database>('nb');
      const dirty: Dirty = { switches: new Set(), dns: new Set() };
      // Every switch of the NB and every one referring before (it may be gone), every DNS row
      // of the NB and every one written before.
      for (const nbUuid of nbRows(db, 'Logical_Switch').keys()) dirty.switches.add(nbUuid);
      for (const nbUuid of data.refsBySwitch.keys()) dirty.switches.add(nbUuid);
      for (const dns of nbRows(db, 'DNS').keys()) dirty.dns.add(dns);
      for (const dns of data.switchesByDns.keys()) dirty.dns.add(dns);
      derive(db, inputs.data<DatapathsData>('datapaths'), data, dirty, out);
    },
    handlers: {
      nb(data: DnsData, change: unknown, inputs: NodeInputs, out: DnsChange) {
        const db = inputs.data<Database>('nb');
        const dirty: Dirty = { switches: new Set(), dns: new Set() };
        for (const c of (change as DbDelta).changes) {
          if (c.table === 'Logical_Switch') {
            const oldRefs = c.kind === 'insert' ? NO_UUIDS : (c.old as unknown as nb.Logical_Switch).dns_records;
            const newRefs = c.kind === 'delete' ? NO_UUIDS : (c.new as unknown as nb.Logical_Switch).dns_records;
            if (!sameUuids(oldRefs, newRefs)) dirty.switches.add(c.uuid);
          } else if (c.table === 'DNS') {
            const oldRecords = c.kind === 'insert' ? undefined : (c.old as unknown as nb.DNS).records;
            const newRecords = c.kind === 'delete' ? undefined : (c.new as unknown as nb.DNS).records;
            // external_ids of the NB row are not copied: a change there is none here.
            if (oldRecords === undefined || newRecords === undefined || !sameRecords(oldRecords, newRecords)) dirty.dns.add(c.uuid);
          }
        }
        return finish(db, inputs.data<DatapathsData>('datapaths'), data, dirty, out);
      },
      datapaths(data: DnsData, change: unknown, inputs: NodeInputs, out: DnsChange) {
        // A switch datapath that appeared or went away (its NB row may not have changed: the
        // key space had no room for it before).
        const dirty: Dirty = { switches: new Set(), dns: new Set() };
        for (const { old, new: now } of (change as DatapathsChange).datapaths.values()) {
          if ((old === undefined) === (now === undefined)) continue;
          const info = old ?? now;
          if (info?.kind === 'switch') dirty.switches.add(info.nbUuid);
        }
        return finish(inputs.data<Database>('nb'), inputs.data<DatapathsData>('datapaths'), data, dirty, out);
      },
    },
  };
}

function sameRecords(a: ReadonlyMap<string, string>, b: ReadonlyMap<string, string>): boolean {
  if (a.size !== b.size) return false;
  for (const [k, v] of a) if (b.get(k) !== v) return false;
  return true;
}
