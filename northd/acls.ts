// Port groups and the ACLs and QoS rules that apply to each logical switch.
//
// A port group applies to a switch when one of its ports is bound there (ovn-northd's
// build_port_group_lswitches); the switch's ACLs are its own plus those of every port group
// that applies to it. For each (port group, switch) pair with ports, SB Port_Group
// "<switch tunnel key>_<port group name>" lists the ports bound on that switch, so that
// ovn-controller expands @name per datapath.
//
// Incremental: port group membership is kept per member (a port group's ports column is
// diffed, a port's binding moves its membership), and only the (port group, switch) rows and
// the switches whose ACL sets may have changed are derived again; a switch's ACL state is
// reported only when it differs.
//
// QoS rules are a switch's own (Logical_Switch.qos_rules). An ACL's log meter is read here too:
// an ACL logging through a fair meter (NB Meter.fair) names its own copy of it,
// "<meter>__<ACL UUID>" (build_acl_log_meter), so a meter turning fair or unfair, or appearing
// or going, changes the flows of the ACLs naming it.
import type { Database, DbDelta, Uuid } from '../ovsdb/index.js';
import type * as nb from '../ovsdb/rows/nb.js';
import type * as sb from '../ovsdb/rows/sb.js';
import type { DatapathsChange, DatapathsData } from './datapaths.js';
import { datapathSbUuid } from './datapaths.js';
import type { EngineNode, NodeInputs } from './engine.js';
import { hashUuid, setVersion, SummedSet, textWords } from './hash.js';
import { fairCopyName } from './meters.js';
import { boolOption, nbGet, nbRows } from './nb.js';
import type { PortInfo, PortsChange, PortsData } from './ports.js';
import { sameData, sortedDifference } from './same-data.js';
import { SbChangeSet, SbTable } from './sb-changes.js';
import { nbGlobalOf } from './sb-global.js';

/** An ACL as its flows read it. */
export interface AclFacts {
  readonly uuid: Uuid;
  readonly priority: number;
  readonly direction: 'from-lport' | 'to-lport';
  readonly match: string;
  readonly action: nb.ACL['action'];
  readonly log: boolean;
  readonly name: string | undefined;
  readonly severity: string | undefined;
  /** The meter its log() names: the ACL's own copy when the NB meter of that name is fair. */
  readonly meter: string | undefined;
  readonly label: number;
  readonly options: ReadonlyMap<string, string>;
}

/** A QoS rule as its flows read it (build_qos). */
export interface QosFacts {
  readonly uuid: Uuid;
  readonly priority: number;
  readonly direction: 'from-lport' | 'to-lport';
  readonly match: string;
  /** action:dscp, when set. */
  readonly dscp: number | undefined;
  /** bandwidth:rate (kbps) when set and not 0: the rule meters. */
  readonly rate: number | undefined;
  /** bandwidth:burst (kbit), 0 when unset. */
  readonly burst: number;
}

/** What a switch's ACL and QoS flows read: its ACLs (own and port groups'), two flags, its QoS rules. */
export interface SwitchAcls {
  /** By ACL UUID. */
  readonly acls: ReadonlyMap<Uuid, AclFacts>;
  /** Any ACL applies (ovn-northd's od->has_acls). */
  readonly hasAcls: boolean;
  /** An allow-related ACL applies: traffic goes through conntrack (od->has_stateful_acl). */
  readonly hasStateful: boolean;
  /** Its QoS rules, by UUID. */
  readonly qos: readonly QosFacts[];
}

interface Member {
  readonly name: string;
  /** The switch datapath the port is bound to, if any. */
  readonly dp: Uuid | undefined;
}

interface PortGroupState {
  name: string;
  /** By LSP UUID. */
  readonly members: Map<Uuid, Member>;
  /**
   * Switch datapath → the names of the members bound there, with their set sum: the SB row's
   * ports and its version follow one member in constant time, however large the group.
   */
  readonly perSwitch: Map<Uuid, SummedSet>;
}

/**
 * NB_Global options every switch's flows read: default_acl_drop (ACL stages drop what no ACL
 * allows), use_ct_inv_match (false: the ACL stages do not match ct.inv, for hardware that
 * cannot offload it) and ignore_lsp_down (false: a port answers ARP and ND for its addresses
 * only while it is up).
 */
export interface SwitchGlobals {
  readonly defaultDrop: boolean;
  readonly ctInvMatch: boolean;
  readonly ignoreLspDown: boolean;
}

export const DEFAULT_SWITCH_GLOBALS: SwitchGlobals = Object.freeze({ defaultDrop: false, ctInvMatch: true, ignoreLspDown: true });

/** Those options of NB_Global as ovn-northd reads them (smap_get_bool, with its defaults). */
export function switchGlobalsOf(db: Database): SwitchGlobals {
  const g = nbGlobalOf(db);
  if (g === undefined) return DEFAULT_SWITCH_GLOBALS;
  const now: SwitchGlobals = {
    defaultDrop: boolOption(g.options, 'default_acl_drop', false), ctInvMatch: boolOption(g.options, 'use_ct_inv_match', true),
    ignoreLspDown: boolOption(g.options, 'ignore_lsp_down', true),
  };
  return sameData(now, DEFAULT_SWITCH_GLOBALS) ? DEFAULT_SWITCH_GLOBALS : now;
}

export interface AclsData {
  /** Switches with ACLs or QoS rules: a switch without either has no entry. */
  readonly bySwitch: Map<Uuid, SwitchAcls>;
  /** NB_Global's options every switch's flows read, as last read (they change with the ACLs'). */
  globals: SwitchGlobals;
  /**
   * The facts of each ACL in use, one object per ACL until its row changes: switches share
   * it, and comparing a switch's ACLs before and after is mostly identity checks.
   */
  readonly facts: Map<Uuid, AclFacts>;
  /** The facts of each QoS rule in use, likewise. */
  readonly qosFacts: Map<Uuid, QosFacts>;
  readonly pgs: Map<Uuid, PortGroupState>;
  /** Switch datapath → the port groups with members bound there. */
  readonly switchPgs: Map<Uuid, Set<Uuid>>;
  /** Port group → switch → the SB Port_Group row written for the pair. */
  readonly rows: Map<Uuid, Map<Uuid, Uuid>>;
  readonly table: SbTable;
}

export interface AclsChange {
  readonly sb: SbChangeSet;
  /** By switch datapath: its ACL state before and after (undefined: none). */
  readonly switches: Map<Uuid, { readonly old: SwitchAcls | undefined; readonly new: SwitchAcls | undefined }>;
  /** NB_Global's switch options changed: `globals` before the change (undefined: unchanged). */
  globalsWere: SwitchGlobals | undefined;
}

const NO_ACLS: ReadonlyMap<Uuid, AclFacts> = new Map();
const NO_QOS: readonly QosFacts[] = Object.freeze([]);

/** Whether NB Meter `name` exists and is fair (fair_meter_lookup_by_name). */
function isFairMeter(db: Database, name: string): boolean {
  const m = db.findUnique('Meter', ['name'], [name]) as nb.Meter | undefined;
  return m?.fair[0] === true;
}

/** The name of the SB Meter an ACL's log() uses: its own copy of a fair meter. */
function aclLogMeterName(db: Database, a: Pick<nb.ACL, '_uuid' | 'meter'>): string | undefined {
  const meter = a.meter[0];
  if (meter === undefined) return undefined;
  return isFairMeter(db, meter) ? fairCopyName(meter, a._uuid) : meter;
}

function aclFacts(db: Database, a: nb.ACL): AclFacts {
  return {
    uuid: a._uuid, priority: a.priority, direction: a.direction, match: a.match, action: a.action, log: a.log, name: a.name[0],
    severity: a.severity[0], meter: aclLogMeterName(db, a), label: a.label, options: a.options,
  };
}

function qosFacts(q: nb.QoS): QosFacts {
  const rate = q.bandwidth.get('rate');
  return {
    uuid: q._uuid, priority: q.priority, direction: q.direction, match: q.match, dscp: q.action.get('dscp'),
    rate: rate === undefined || rate === 0 ? undefined : rate, burst: q.bandwidth.get('burst') ?? 0,
  };
}

/** Dirty sets of one run: switches whose ACL state, and (port group, switch) rows, to derive again. */
class Dirty {
  readonly switches = new Set<Uuid>();
  readonly rows = new Map<Uuid, Set<Uuid>>();
  row(pg: Uuid, dp: Uuid): void {
    let s = this.rows.get(pg);
    if (s === undefined) this.rows.set(pg, (s = new Set()));
    s.add(dp);
  }
  /** Every switch a port group applies to (its ACLs changed). */
  pgSwitches(data: AclsData, pg: Uuid): void {
    for (const dp of data.pgs.get(pg)?.perSwitch.keys() ?? []) this.switches.add(dp);
  }
  /** Every switch a port group applies to, and its rows there (it was renamed or deleted). */
  pgEverywhere(data: AclsData, pg: Uuid): void {
    this.pgSwitches(data, pg);
    for (const dp of data.pgs.get(pg)?.perSwitch.keys() ?? []) this.row(pg, dp);
    for (const dp of data.rows.get(pg)?.keys() ?? []) this.row(pg, dp);
  }
}

function addTo(index: Map<Uuid, Set<Uuid>>, key: Uuid, value: Uuid): void {
  let s = index.get(key);
  if (s === undefined) index.set(key, (s = new Set()));
  s.add(value);
}

function dropFrom(index: Map<Uuid, Set<Uuid>>, key: Uuid, value: Uuid): void {
  const s = index.get(key);
  if (s === undefined) return;
  s.delete(value);
  if (s.size === 0) index.delete(key);
}

/** Where an LSP (by NB UUID) is bound now, by the ports' bindings. */
function memberOf(db: Database, ports: PortsData, lsp: Uuid): Member | undefined {
  const row = nbGet<nb.Logical_Switch_Port>(db, 'Logical_Switch_Port', lsp);
  if (row === undefined) return undefined;
  const p = ports.byName.get(row.name);
  return { name: row.name, dp: p !== undefined && p.kind === 'lsp' && p.nbUuid === lsp ? p.dp : undefined };
}

/** Sets one member of a port group (undefined: not a member), keeping the indexes and dirt. */
function setMember(data: AclsData, pgUuid: Uuid, pg: PortGroupState, lsp: Uuid, m: Member | undefined, dirty: Dirty): void {
  const old = pg.members.get(lsp);
  if (old !== undefined && m !== undefined && old.name === m.name && old.dp === m.dp) return;
  if (old !== undefined) {
    pg.members.delete(lsp);
    if (old.dp !== undefined) {
      const names = pg.perSwitch.get(old.dp);
      names?.delete(old.name);
      if (names !== undefined && names.size === 0) {
        pg.perSwitch.delete(old.dp);
        dropFrom(data.switchPgs, old.dp, pgUuid);
        dirty.switches.add(old.dp);
      }
      dirty.row(pgUuid, old.dp);
    }
  }
  if (m !== undefined) {
    pg.members.set(lsp, m);
    if (m.dp !== undefined) {
      let names = pg.perSwitch.get(m.dp);
      if (names === undefined) {
        pg.perSwitch.set(m.dp, (names = new SummedSet(textWords)));
        addTo(data.switchPgs, m.dp, pgUuid);
        dirty.switches.add(m.dp);
      }
      names.add(m.name);
      dirty.row(pgUuid, m.dp);
    }
  }
}

/** Brings port group `pgUuid` in step with its NB row (undefined: deleted), member by member. */
function syncPortGroup(db: Database, ports: PortsData, data: AclsData, pgUuid: Uuid, oldPorts: readonly Uuid[] | undefined, dirty: Dirty): void {
  const row = nbGet<nb.Port_Group>(db, 'Port_Group', pgUuid);
  let pg = data.pgs.get(pgUuid);
  if (row === undefined) {
    if (pg === undefined) return;
    dirty.pgEverywhere(data, pgUuid);
    for (const lsp of [...pg.members.keys()]) setMember(data, pgUuid, pg, lsp, undefined, dirty);
    data.pgs.delete(pgUuid);
    return;
  }
  if (pg === undefined) {
    data.pgs.set(pgUuid, (pg = { name: row.name, members: new Map(), perSwitch: new Map() }));
  } else if (pg.name !== row.name) {
    dirty.pgEverywhere(data, pgUuid);
    pg.name = row.name;
  }
  if (oldPorts === undefined) {
    // Every member afresh (a new group, or a recompute: a binding may have moved). A group
    // without members yet (every group of a first run) has none to drop.
    if (pg.members.size > 0) {
      const now = new Set(row.ports);
      for (const lsp of [...pg.members.keys()]) if (!now.has(lsp)) setMember(data, pgUuid, pg, lsp, undefined, dirty);
    }
    // Indexed: a recompute walks every member of every group.
    const members = row.ports;
    for (let i = 0; i < members.length; i++) setMember(data, pgUuid, pg, members[i] as Uuid, memberOf(db, ports, members[i] as Uuid), dirty);
    return;
  }
  // Only the ports that joined or left (set columns are sorted: one merge walk).
  const { removed, added } = sortedDifference(oldPorts, row.ports);
  for (const lsp of removed) setMember(data, pgUuid, pg, lsp, undefined, dirty);
  for (const lsp of added) setMember(data, pgUuid, pg, lsp, memberOf(db, ports, lsp), dirty);
}

/** The ACL state of switch `dp` from its NB row and the port groups bound there. */
function switchAclsOf(db: Database, dps: DatapathsData, data: AclsData, dp: Uuid): SwitchAcls | undefined {
  const facts = data.facts;
  const info = dps.bySb.get(dp);
  if (info === undefined || info.kind !== 'switch') return undefined;
  const ls = nbGet<nb.Logical_Switch>(db, 'Logical_Switch', info.nbUuid);
  if (ls === undefined) return undefined;
  const qos = switchQosOf(db, data, ls);
  const pgs = data.switchPgs.get(dp);
  // Its own ACLs are a set column, sorted already: copied only to add its port groups' ACLs.
  let uuids: readonly Uuid[] = ls.acls;
  if (pgs !== undefined) {
    const all = [...ls.acls];
    for (const pg of [...pgs].sort()) all.push(...(nbGet<nb.Port_Group>(db, 'Port_Group', pg)?.acls ?? []));
    uuids = all.sort();
  }
  // A switch without ACLs or QoS rules has no state: its flows read the defaults (no ACLs, not
  // stateful), and a new switch is not reported to the flows for a state that changes nothing.
  if (uuids.length === 0) return qos.length === 0 ? undefined : { acls: NO_ACLS, hasAcls: false, hasStateful: false, qos };
  const acls = new Map<Uuid, AclFacts>();
  for (const u of uuids) {
    let f = facts.get(u);
    if (f === undefined) {
      const row = nbGet<nb.ACL>(db, 'ACL', u);
      if (row === undefined) continue;
      facts.set(u, (f = aclFacts(db, row)));
    }
    acls.set(u, f);
  }
  let hasStateful = false;
  for (const f of acls.values()) if (f.action === 'allow-related') hasStateful = true;
  return { acls, hasAcls: acls.size > 0, hasStateful, qos };
}

/** A switch's QoS rules (qos_rules is a set: in UUID order). */
function switchQosOf(db: Database, data: AclsData, ls: nb.Logical_Switch): readonly QosFacts[] {
  if (ls.qos_rules.length === 0) return NO_QOS;
  const out: QosFacts[] = [];
  for (const u of ls.qos_rules) {
    let f = data.qosFacts.get(u);
    if (f === undefined) {
      const row = nbGet<nb.QoS>(db, 'QoS', u);
      if (row === undefined) continue;
      data.qosFacts.set(u, (f = qosFacts(row)));
    }
    out.push(f);
  }
  return out;
}

function portGroupRowUuid(name: string): Uuid {
  return hashUuid(['Port_Group', name]);
}

/**
 * Writes the SB Port_Group rows of the dirty (port group, switch) pairs. A row's name (hence
 * its UUID) carries its switch's tunnel key, and two switches can trade keys (a requested key):
 * every row that goes is removed before any is written, so that one switch's new row is not
 * taken for another's old one.
 */
function writeRows(dps: DatapathsData, data: AclsData, dirty: Dirty, out: SbChangeSet): void {
  const puts: sb.Port_Group[] = [];
  for (const pgUuid of [...dirty.rows.keys()].sort()) {
    const pg = data.pgs.get(pgUuid);
    let written = data.rows.get(pgUuid);
    for (const dp of [...(dirty.rows.get(pgUuid) as Set<Uuid>)].sort()) {
      const names = pg?.perSwitch.get(dp);
      const key = dps.bySb.get(dp)?.key;
      const old = written?.get(dp);
      const name = pg === undefined || key === undefined ? undefined : `${key}_${pg.name}`;
      const uuid = name === undefined ? undefined : portGroupRowUuid(name);
      const keep = names !== undefined && names.size > 0 && uuid !== undefined;
      if (old !== undefined && (!keep || old !== uuid)) {
        data.table.remove(old, out);
        written?.delete(dp);
      }
      if (!keep || name === undefined || uuid === undefined) continue;
      puts.push({ _uuid: uuid, _version: setVersion('Port_Group', uuid, names.size, names.sum), name, ports: names.copy() });
      if (written === undefined) data.rows.set(pgUuid, (written = new Map()));
      written.set(dp, uuid);
    }
    if (written !== undefined && written.size === 0) data.rows.delete(pgUuid);
  }
  for (const row of puts) data.table.put(row, out);
}

/** ACL `uuid` changed: the switches it applies to (through port groups too) read it again. */
function aclChanged(db: Database, data: AclsData, uuid: Uuid, dirty: Dirty): void {
  // A live ACL names its switches or port groups; a deleted one changed their rows.
  for (const owner of db.strongReferrers(uuid).keys()) {
    if (db.get('Logical_Switch', owner) !== undefined) dirty.switches.add(datapathSbUuid(owner));
    else if (data.pgs.has(owner)) dirty.pgSwitches(data, owner);
  }
}

/** Derives the ACL state of the dirty switches again, reporting those that changed. */
function refreshSwitches(db: Database, dps: DatapathsData, data: AclsData, dirty: Dirty, out: AclsChange): void {
  for (const dp of [...dirty.switches].sort()) {
    const old = data.bySwitch.get(dp);
    const now = switchAclsOf(db, dps, data, dp);
    if (old === undefined && now === undefined) continue;
    if (old !== undefined && now !== undefined && sameData(old, now)) continue;
    if (now === undefined) data.bySwitch.delete(dp);
    else data.bySwitch.set(dp, now);
    const prev = out.switches.get(dp);
    out.switches.set(dp, { old: prev === undefined ? old : prev.old, new: now });
  }
}

function finish(db: Database, dps: DatapathsData, data: AclsData, dirty: Dirty, out: AclsChange): 'handled' | 'unchanged' {
  if (dirty.switches.size === 0 && dirty.rows.size === 0) return 'unchanged';
  writeRows(dps, data, dirty, out.sb);
  refreshSwitches(db, dps, data, dirty, out);
  return 'handled';
}

export function aclsNode(): EngineNode<AclsData, AclsChange> {
  return {
    name: 'acls',
    inputs: ['nb', 'datapaths', 'ports'],
    init: () => ({
      bySwitch: new Map(), globals: DEFAULT_SWITCH_GLOBALS, facts: new Map(), qosFacts: new Map(), pgs: new Map(), switchPgs: new Map(), rows: new Map(), table: new SbTable('Port_Group'),
    }),
    newChange: () => ({ sb: new SbChangeSet(), switches: new Map(), globalsWere: undefined }),
    isEmpty: (c) => c.sb.size === 0 && c.switches.size === 0 && c.globalsWere === undefined,
    recompute(data: AclsData, inputs: NodeInputs, out: AclsChange): void {
      out.sb.maybeTrackWhole(data.table);
      const db = inputs.data<Database>('nb');
      const dps = inputs.data<DatapathsData>('datapaths');
      const ports = inputs.data<PortsData>('ports');
      const dirty = new Dirty();
      data.facts.clear();
      data.qosFacts.clear();
      data.globals = switchGlobalsOf(db);
      const pgUuids = new Set<Uuid>([...data.pgs.keys(), ...nbRows<nb.Port_Group>(db, 'Port_Group').keys()]);
      for (const pg of [...pgUuids].sort()) {
        // Every member afresh (a member's binding may have moved without its row changing).
        dirty.pgEverywhere(data, pg);
        syncPortGroup(db, ports, data, pg, undefined, dirty);
        dirty.pgEverywhere(data, pg);
      }
      for (const dp of data.bySwitch.keys()) dirty.switches.add(dp);
      for (const dp of dps.bySb.values()) if (dp.kind === 'switch') dirty.switches.add(dp.sbUuid);
      finish(db, dps, data, dirty, out);
    },
    handlers: {
      nb(data: AclsData, change: unknown, inputs: NodeInputs, out: AclsChange) {
        const db = inputs.data<Database>('nb');
        const ports = inputs.data<PortsData>('ports');
        const dirty = new Dirty();
        for (const c of (change as DbDelta).changes) {
          if (c.table === 'NB_Global') {
            const globals = switchGlobalsOf(db);
            if (!sameData(globals, data.globals)) {
              out.globalsWere ??= data.globals;
              data.globals = globals;
            }
          } else if (c.table === 'Logical_Switch') {
            // Only its acls and qos_rules columns reach its ACL state: a port added to a switch
            // of a thousand ACLs must not read them all again. A switch inserted or deleted
            // comes or goes with its datapath, through the datapaths input.
            if (c.kind === 'modify' && (c.columns.includes('acls') || c.columns.includes('qos_rules'))) dirty.switches.add(datapathSbUuid(c.uuid));
          } else if (c.table === 'Port_Group') {
            const oldRow = c.kind === 'insert' ? undefined : (c.old as unknown as nb.Port_Group);
            const newRow = c.kind === 'delete' ? undefined : (c.new as unknown as nb.Port_Group);
            // Its ACLs changed: the switches it applied to before and after.
            const aclsChanged = oldRow === undefined || newRow === undefined || !sameData(oldRow.acls, newRow.acls);
            if (aclsChanged) dirty.pgSwitches(data, c.uuid);
            syncPortGroup(db, ports, data, c.uuid, oldRow?.ports, dirty);
            if (aclsChanged) dirty.pgSwitches(data, c.uuid);
          } else if (c.table === 'ACL') {
            data.facts.delete(c.uuid);
            aclChanged(db, data, c.uuid, dirty);
          } else if (c.table === 'QoS') {
            data.qosFacts.delete(c.uuid);
            // A live rule names its switches; a deleted one changed their rows.
            for (const owner of db.strongReferrers(c.uuid).keys()) if (db.get('Logical_Switch', owner) !== undefined) dirty.switches.add(datapathSbUuid(owner));
          } else if (c.table === 'Meter') {
            // Whether a name is a fair meter: the ACLs in use that log through that name.
            if (c.kind === 'modify' && !c.columns.includes('name') && !c.columns.includes('fair')) continue;
            const names = new Set<string>();
            if (c.kind !== 'insert') names.add((c.old as unknown as nb.Meter).name);
            if (c.kind !== 'delete') names.add((c.new as unknown as nb.Meter).name);
            for (const acl of [...data.facts.keys()]) {
              const meter = nbGet<nb.ACL>(db, 'ACL', acl)?.meter[0];
              if (meter === undefined || !names.has(meter)) continue;
              data.facts.delete(acl);
              aclChanged(db, data, acl, dirty);
            }
          }
        }
        const result = finish(db, inputs.data<DatapathsData>('datapaths'), data, dirty, out);
        return out.globalsWere !== undefined ? 'handled' : result;
      },
      datapaths(data: AclsData, change: unknown, inputs: NodeInputs, out: AclsChange) {
        const dirty = new Dirty();
        for (const [sbUuid, { old, new: now }] of (change as DatapathsChange).datapaths) {
          if (old?.kind !== 'switch' && now?.kind !== 'switch') continue;
          dirty.switches.add(sbUuid);
          for (const pg of data.switchPgs.get(sbUuid) ?? []) dirty.row(pg, sbUuid);
        }
        return finish(inputs.data<Database>('nb'), inputs.data<DatapathsData>('datapaths'), data, dirty, out);
      },
      ports(data: AclsData, change: unknown, inputs: NodeInputs, out: AclsChange) {
        const db = inputs.data<Database>('nb');
        const ports = inputs.data<PortsData>('ports');
        const dirty = new Dirty();
        const lsps = new Set<Uuid>();
        const note = (p: PortInfo | undefined): void => {
          if (p !== undefined && p.kind === 'lsp') lsps.add(p.nbUuid);
        };
        for (const { old, new: now } of (change as PortsChange).ports.values()) {
          note(old);
          note(now);
        }
        for (const lsp of [...lsps].sort()) {
          for (const pg of db.weakReferrers(lsp).keys()) {
            const state = data.pgs.get(pg);
            if (state !== undefined && state.members.has(lsp)) setMember(data, pg, state, lsp, memberOf(db, ports, lsp), dirty);
          }
        }
        return finish(db, inputs.data<DatapathsData>('datapaths'), data, dirty, out);
      },
    },
  };
}

