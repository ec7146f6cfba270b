// The agent stream's interest sets and steps, incremental == from scratch: a random SB view
// changes revision by revision (bindings moving between chassis, patch links made and broken,
// container ports changing parents, ports becoming chassisredirect or external ones that every
// chassis sees,
// flows and load balancers on datapaths and datapath groups, FDBs by tunnel key, DNS rows by
// their datapaths, chassis coming and going, HA groups whose members hold the datapaths of their
// chassisredirect and external ports); the interest index's
// local datapaths must equal a scan of every Port_Binding, and agents fed by two Fanouts
// ("members") over that view — reading at random speeds, falling behind, reconnecting to the
// other member with what they hold, changing their iface-ids — must each hold exactly the rows
// their interest sees, evaluated from scratch. Method: seeded generator, no gRPC, deferred work
// run by the test.
import t from 'tap';
import type { ColumnSchema, DatabaseSchema, DbDelta, Row, RowChange } from '../../ovsdb/index.js';
import { isMapValue, parseDatabaseSchema } from '../../ovsdb/index.js';
import { defaultValue } from '../../ovsdb/datum.js';
import { SB_SCHEMA_JSON } from '../../ovsdb/schemas/index.js';
import { History } from '../../server/history.js';
import type { Session, SessionHello, StreamEnd, StreamSink } from '../../server/sb-fanout.js';
import { Fanout } from '../../server/sb-fanout.js';
import type { Interest } from '../../server/sb-interest.js';
import { InterestIndex, localDatapathsFromScratch, visibleFromScratch } from '../../server/sb-interest.js';
import { decodeServerMessage, decodeTableRows } from '../../server/southbound-wire.js';
import { Rng } from '../helpers/seeded-rng.js';

const schema: DatabaseSchema = parseDatabaseSchema(SB_SCHEMA_JSON);
const tables = [...schema.tables.keys()];
const chassisNames = ['hv0', 'hv1', 'hv2', 'hv3'];

/** A mutable SB view with a retained history, as a member's feed is. */
class FakeSb {
  private readonly data = new Map<string, Map<string, Row>>();
  readonly history: History;
  revision = 0;
  constructor(
    private readonly rng: Rng,
    historyRevisions: number,
  ) {
    this.history = new History({ revisionsMax: historyRevisions, bytesMax: 1 << 30 });
  }
  rows = (table: string): ReadonlyMap<string, Row> => this.data.get(table) ?? new Map<string, Row>();
  all(table: string): Row[] {
    return [...this.rows(table).values()];
  }
  /** A full row of `table`: the schema's defaults, then `cols`. */
  make(table: string, uuid: string, cols: Record<string, unknown>): Row {
    const ts = schema.tables.get(table);
    if (ts === undefined) throw new Error(table);
    const row: Record<string, unknown> = { _uuid: uuid, _version: this.rng.uuid() };
    for (const c of ts.columns.values()) row[c.name] = defaultValue((c as ColumnSchema).type);
    return Object.assign(row, cols) as Row;
  }
  /** Applies row writes (undefined deletes) as one revision; returns its delta. */
  commit(writes: Map<string, { table: string; uuid: string; row: Row | undefined }>): DbDelta {
    this.revision++;
    const changes: RowChange[] = [];
    for (const { table, uuid, row } of writes.values()) {
      let t = this.data.get(table);
      if (t === undefined) this.data.set(table, (t = new Map()));
      const old = t.get(uuid);
      if (row === undefined) {
        if (old === undefined) continue;
        t.delete(uuid);
        changes.push({ kind: 'delete', table, uuid, old });
      } else if (old === undefined) {
        t.set(uuid, row);
        changes.push({ kind: 'insert', table, uuid, new: row });
      } else {
        t.set(uuid, row);
        changes.push({ kind: 'modify', table, uuid, old, new: row, columns: [] });
      }
    }
    changes.sort((a, b) => (a.table < b.table ? -1 : a.table > b.table ? 1 : a.uuid < b.uuid ? -1 : a.uuid > b.uuid ? 1 : 0));
    const delta = { changes };
    if (changes.length > 0) this.history.append(this.revision, delta);
    return delta;
  }
}

/** One random revision's worth of writes to the view. */
function randomWrites(sb: FakeSb, rng: Rng, portNames: string[]): Map<string, { table: string; uuid: string; row: Row | undefined }> {
  const w = new Map<string, { table: string; uuid: string; row: Row | undefined }>();
  const current = (table: string, uuid: string): Row | undefined => {
    const k = `${table}\0${uuid}`;
    return w.has(k) ? w.get(k)?.row : sb.rows(table).get(uuid);
  };
  const rowsOf = (table: string): Row[] => {
    const out = new Map<string, Row>();
    for (const r of sb.all(table)) out.set(r._uuid, r);
    for (const x of w.values()) if (x.table === table) {
      if (x.row === undefined) out.delete(x.uuid);
      else out.set(x.uuid, x.row);
    }
    return [...out.values()];
  };
  const put = (table: string, uuid: string, row: Row | undefined): void => void w.set(`${table}\0${uuid}`, { table, uuid, row });
  const update = (table: string, row: Row, cols: Record<string, unknown>): void => put(table, row._uuid, { ...row, _version: rng.uuid(), ...cols } as Row);
  const dps = (): Row[] => rowsOf('Datapath_Binding');
  const dpUuids = (): string[] => dps().map((d) => d._uuid);
  const chassisUuids = (): string[] => rowsOf('Chassis').map((c) => c._uuid);
  const pick = <T>(xs: readonly T[]): T | undefined => (xs.length === 0 ? undefined : rng.pick(xs));
  const ops = rng.int(1, 4);
  for (let i = 0; i < ops; i++) {
    const op = rng.weighted<string>([
      ['dp-add', 3], ['dp-del', 1], ['port-add', 5], ['patch-add', 3], ['port-del', 2], ['bind', 8], ['port-move', 1], ['peer-change', 2],
      ['chassis-add', 2], ['chassis-del', 1], ['flow-add', 4], ['flow-del', 2], ['flow-mod', 2], ['dpg-add', 2], ['dpg-mod', 2], ['fdb', 2],
      ['mac', 2], ['cp', 3], ['ctv', 2], ['global', 2], ['mcast', 1], ['mcast-mod', 3], ['lb-add', 3], ['lb-mod', 2], ['lb-del', 1], ['dns', 2],
      ['parent-change', 2], ['type-change', 2], ['ha-add', 3], ['ha-mod', 6], ['ha-del', 1], ['ha-attach', 4],
    ]);
    switch (op) {
      case 'dp-add': {
        const keys = new Set(dps().map((d) => d.tunnel_key));
        let key = rng.int(1, 40);
        while (keys.has(key)) key = rng.int(1, 40);
        const uuid = rng.uuid();
        put('Datapath_Binding', uuid, sb.make('Datapath_Binding', uuid, { tunnel_key: key }));
        break;
      }
      case 'dp-del': {
        const d = pick(dps());
        if (d === undefined) break;
        put('Datapath_Binding', d._uuid, undefined);
        for (const t2 of ['Port_Binding', 'Multicast_Group', 'MAC_Binding']) for (const r of rowsOf(t2)) if (r.datapath === d._uuid) put(t2, r._uuid, undefined);
        for (const f of rowsOf('Logical_Flow')) if ((f.logical_datapath as string[])[0] === d._uuid) put('Logical_Flow', f._uuid, undefined);
        // Load_Balancer.datapaths is a weak reference: the database drops the datapath from it.
        for (const lb of rowsOf('Load_Balancer')) if ((lb.datapaths as string[]).includes(d._uuid)) update('Load_Balancer', lb, { datapaths: (lb.datapaths as string[]).filter((u) => u !== d._uuid) });
        break;
      }
      case 'port-add': {
        const dp = pick(dpUuids());
        if (dp === undefined) break;
        const name = `p${portNames.length}`;
        portNames.push(name);
        const uuid = rng.uuid();
        const l3 = rng.chance(0.15);
        const options = l3 ? new Map([['l3gateway-chassis', rng.pick(chassisNames)], ['peer', pick(portNames) ?? 'none']]) : new Map();
        // Some VIFs are container ports behind another port (often on another datapath).
        const parent = !l3 && rng.chance(0.2) ? [rng.pick(portNames)] : [];
        const type = l3 ? 'l3gateway' : rng.chance(0.1) ? rng.pick(['chassisredirect', 'external']) : '';
        put('Port_Binding', uuid, sb.make('Port_Binding', uuid, { logical_port: name, datapath: dp, type, options, parent_port: parent, tunnel_key: rng.int(1, 100) }));
        break;
      }
      case 'parent-change': {
        const p = pick(rowsOf('Port_Binding').filter((r) => r.type === ''));
        if (p !== undefined) update('Port_Binding', p, { parent_port: rng.chance(0.7) ? [rng.pick(portNames)] : [] });
        break;
      }
      case 'type-change': {
        const p = pick(rowsOf('Port_Binding').filter((r) => r.type === '' || r.type === 'chassisredirect' || r.type === 'external'));
        if (p !== undefined) update('Port_Binding', p, { type: rng.pick(['', 'chassisredirect', 'external']) });
        break;
      }
      case 'patch-add': {
        const a = pick(dpUuids());
        const b = pick(dpUuids());
        if (a === undefined || b === undefined) break;
        const na = `p${portNames.length}`;
        const nb = `p${portNames.length + 1}`;
        portNames.push(na, nb);
        const ua = rng.uuid();
        const ub = rng.uuid();
        put('Port_Binding', ua, sb.make('Port_Binding', ua, { logical_port: na, datapath: a, type: 'patch', options: new Map([['peer', nb]]) }));
        // Sometimes only one side names the other: the link is followed from that side only.
        if (rng.chance(0.8)) put('Port_Binding', ub, sb.make('Port_Binding', ub, { logical_port: nb, datapath: b, type: 'patch', options: new Map([['peer', na]]) }));
        break;
      }
      case 'port-del': {
        const p = pick(rowsOf('Port_Binding'));
        if (p !== undefined) put('Port_Binding', p._uuid, undefined);
        break;
      }
      case 'bind': {
        const p = pick(rowsOf('Port_Binding'));
        if (p === undefined) break;
        const column = rng.weighted<string>([['chassis', 6], ['additional_chassis', 1], ['requested_chassis', 1], ['requested_additional_chassis', 1]]);
        const c = rng.chance(0.25) ? undefined : pick(chassisUuids());
        update('Port_Binding', p, { [column]: c === undefined ? [] : [c] });
        break;
      }
      case 'port-move': {
        const p = pick(rowsOf('Port_Binding'));
        const dp = pick(dpUuids());
        if (p !== undefined && dp !== undefined) update('Port_Binding', p, { datapath: dp });
        break;
      }
      case 'peer-change': {
        const p = pick(rowsOf('Port_Binding').filter((r) => r.type !== ''));
        if (p !== undefined) update('Port_Binding', p, { options: new Map([...(p.options as Map<string, string>)].filter(([k]) => k !== 'peer').concat(rng.chance(0.8) ? [['peer', rng.pick(portNames)]] : [])) });
        break;
      }
      case 'chassis-add': {
        const name = rng.pick(chassisNames);
        if (rowsOf('Chassis').some((c) => c.name === name)) break;
        const uuid = rng.uuid();
        put('Chassis', uuid, sb.make('Chassis', uuid, { name, hostname: name }));
        break;
      }
      case 'chassis-del': {
        const c = pick(rowsOf('Chassis'));
        if (c === undefined) break;
        put('Chassis', c._uuid, undefined);
        // Weak references to it go, as the database drops them.
        for (const p of rowsOf('Port_Binding')) {
          const cols: Record<string, unknown> = {};
          for (const col of ['chassis', 'additional_chassis', 'requested_chassis', 'requested_additional_chassis']) if ((p[col] as string[]).includes(c._uuid)) cols[col] = (p[col] as string[]).filter((u) => u !== c._uuid);
          if (Object.keys(cols).length > 0) update('Port_Binding', current('Port_Binding', p._uuid) as Row, cols);
        }
        for (const hc of rowsOf('HA_Chassis')) if ((hc.chassis as string[]).includes(c._uuid)) update('HA_Chassis', hc, { chassis: [] });
        break;
      }
      case 'ha-add':
      case 'ha-mod': {
        // A group of members naming their chassis by reference or by name (registered or not).
        const member = (): string => {
          const uuid = rng.uuid();
          const c = rng.chance(0.6) ? pick(chassisUuids()) : undefined;
          put('HA_Chassis', uuid, sb.make('HA_Chassis', uuid, c !== undefined ? { chassis: [c], priority: rng.int(1, 30) } : { external_ids: new Map([['chassis-name', rng.pick(chassisNames)]]), priority: rng.int(1, 30) }));
          return uuid;
        };
        const g = op === 'ha-mod' ? pick(rowsOf('HA_Chassis_Group')) : undefined;
        if (op === 'ha-mod' && g === undefined) break;
        if (g !== undefined && rng.chance(0.5)) {
          const hc = pick((g.ha_chassis as string[]).map((u) => current('HA_Chassis', u)).filter((r): r is Row => r !== undefined));
          const c = pick(chassisUuids());
          if (hc !== undefined) update('HA_Chassis', hc, rng.chance(0.5) && c !== undefined ? { chassis: [c] } : { chassis: [], external_ids: new Map([['chassis-name', rng.pick(chassisNames)]]) });
          break;
        }
        const kept = g === undefined ? [] : rng.subset(g.ha_chassis as string[], 2);
        for (const u of (g?.ha_chassis as string[] | undefined) ?? []) if (!kept.includes(u)) put('HA_Chassis', u, undefined);
        const members = [...kept, ...Array.from({ length: rng.int(0, 2) }, member)].sort();
        if (g !== undefined) update('HA_Chassis_Group', g, { ha_chassis: members });
        else {
          const uuid = rng.uuid();
          put('HA_Chassis_Group', uuid, sb.make('HA_Chassis_Group', uuid, { name: `g${rng.int(0, 999)}`, ha_chassis: members }));
        }
        break;
      }
      case 'ha-del': {
        const g = pick(rowsOf('HA_Chassis_Group'));
        if (g === undefined) break;
        put('HA_Chassis_Group', g._uuid, undefined);
        for (const u of g.ha_chassis as string[]) put('HA_Chassis', u, undefined);
        for (const p of rowsOf('Port_Binding')) if ((p.ha_chassis_group as string[]).includes(g._uuid)) update('Port_Binding', p, { ha_chassis_group: [] });
        break;
      }
      case 'ha-attach': {
        const p = pick(rowsOf('Port_Binding').filter((r) => r.type === 'chassisredirect' || r.type === 'external' || rng.chance(0.1)));
        const g = pick(rowsOf('HA_Chassis_Group'));
        if (p !== undefined) update('Port_Binding', p, { ha_chassis_group: g === undefined || rng.chance(0.2) ? [] : [g._uuid] });
        break;
      }
      case 'flow-add': {
        const uuid = rng.uuid();
        const group = rng.chance(0.3) ? pick(rowsOf('Logical_DP_Group')) : undefined;
        const dp = pick(dpUuids());
        if (group === undefined && dp === undefined) break;
        put('Logical_Flow', uuid, sb.make('Logical_Flow', uuid, group !== undefined ? { logical_dp_group: [group._uuid], match: `m${rng.int(0, 999)}` } : { logical_datapath: [dp], match: `m${rng.int(0, 999)}` }));
        break;
      }
      case 'flow-del': {
        const f = pick(rowsOf('Logical_Flow'));
        if (f !== undefined) put('Logical_Flow', f._uuid, undefined);
        break;
      }
      case 'flow-mod': {
        const f = pick(rowsOf('Logical_Flow'));
        if (f !== undefined) update('Logical_Flow', f, { actions: `a${rng.int(0, 999)};` });
        break;
      }
      case 'dpg-add': {
        const uuid = rng.uuid();
        put('Logical_DP_Group', uuid, sb.make('Logical_DP_Group', uuid, { datapaths: rng.subset(dpUuids(), 4).sort() }));
        break;
      }
      case 'dpg-mod': {
        const g = pick(rowsOf('Logical_DP_Group'));
        if (g === undefined) break;
        // Often one datapath more or fewer, as northd's groups change (and the wire may send the difference).
        const had = g.datapaths as string[];
        const other = dpUuids().filter((d) => !had.includes(d));
        let next = rng.subset(dpUuids(), 6);
        if (rng.chance(0.6)) next = rng.chance(0.5) && other.length > 0 ? [...had, rng.pick(other)] : had.filter((d) => d !== rng.pick(had));
        update('Logical_DP_Group', g, { datapaths: next.sort() });
        break;
      }
      case 'fdb': {
        const f = pick(rowsOf('FDB'));
        if (f !== undefined && rng.chance(0.4)) put('FDB', f._uuid, undefined);
        else {
          const uuid = rng.uuid();
          put('FDB', uuid, sb.make('FDB', uuid, { mac: `00:00:00:00:00:${rng.int(10, 99)}`, dp_key: rng.int(1, 40), port_key: rng.int(1, 9) }));
        }
        break;
      }
      case 'mac': {
        const dp = pick(dpUuids());
        if (dp === undefined) break;
        const uuid = rng.uuid();
        put('MAC_Binding', uuid, sb.make('MAC_Binding', uuid, { logical_port: rng.pick(portNames.length > 0 ? portNames : ['x']), ip: `10.0.0.${rng.int(1, 200)}`, mac: '00:00:00:00:00:01', datapath: dp }));
        break;
      }
      case 'cp': {
        const name = rng.pick(chassisNames);
        const cp = rowsOf('Chassis_Private').find((r) => r.name === name);
        if (cp === undefined) {
          const uuid = rng.uuid();
          put('Chassis_Private', uuid, sb.make('Chassis_Private', uuid, { name }));
        } else update('Chassis_Private', cp, { nb_cfg: (cp.nb_cfg as number) + 1 });
        break;
      }
      case 'ctv': {
        // A chassis's template variables: made, changed, moved to another chassis, deleted.
        const v = pick(rowsOf('Chassis_Template_Var'));
        if (v !== undefined && rng.chance(0.3)) put('Chassis_Template_Var', v._uuid, undefined);
        else if (v !== undefined) update('Chassis_Template_Var', v, rng.chance(0.5) ? { chassis: rng.pick(chassisNames) } : { variables: new Map([['VIP', `10.0.0.${rng.int(1, 200)}`]]) });
        else {
          const uuid = rng.uuid();
          put('Chassis_Template_Var', uuid, sb.make('Chassis_Template_Var', uuid, { chassis: rng.pick(chassisNames), variables: new Map([['VIP', '10.0.0.1']]) }));
        }
        break;
      }
      case 'global': {
        const g = rowsOf('SB_Global')[0];
        if (g === undefined) {
          const uuid = rng.uuid();
          put('SB_Global', uuid, sb.make('SB_Global', uuid, {}));
        } else update('SB_Global', g, { nb_cfg: (g.nb_cfg as number) + 1 });
        break;
      }
      case 'lb-add':
      case 'lb-mod': {
        // On its own datapaths, on a datapath group, or both (ovn-northd uses one or the other).
        const old = op === 'lb-mod' ? pick(rowsOf('Load_Balancer')) : undefined;
        if (op === 'lb-mod' && old === undefined) break;
        const group = rng.chance(0.4) ? pick(rowsOf('Logical_DP_Group')) : undefined;
        const own = group === undefined || rng.chance(0.3) ? rng.subset(dpUuids(), 3).sort() : [];
        const cols = { datapaths: own, datapath_group: group === undefined ? [] : [group._uuid], vips: new Map([[`10.0.0.${rng.int(1, 200)}:80`, '10.0.1.1:8080']]) };
        if (old !== undefined) update('Load_Balancer', old, cols);
        else {
          const uuid = rng.uuid();
          put('Load_Balancer', uuid, sb.make('Load_Balancer', uuid, { name: `lb${rng.int(0, 999)}`, ...cols }));
        }
        break;
      }
      case 'lb-del': {
        const lb = pick(rowsOf('Load_Balancer'));
        if (lb !== undefined) put('Load_Balancer', lb._uuid, undefined);
        break;
      }
      case 'dns': {
        // DNS rows are seen through their datapaths column: made, moved between datapaths, deleted.
        const d = pick(rowsOf('DNS'));
        if (d !== undefined && rng.chance(0.3)) put('DNS', d._uuid, undefined);
        else if (d !== undefined && rng.chance(0.6)) update('DNS', d, { datapaths: rng.subset(dpUuids(), 3).sort() });
        else {
          const uuid = rng.uuid();
          put('DNS', uuid, sb.make('DNS', uuid, { datapaths: rng.subset(dpUuids(), 3).sort(), records: new Map([[`vm${rng.int(0, 9)}.ovn.org`, `10.0.0.${rng.int(1, 200)}`]]) }));
        }
        break;
      }
      case 'mcast': {
        const dp = pick(dpUuids());
        if (dp === undefined) break;
        const uuid = rng.uuid();
        const ports = rowsOf('Port_Binding').filter((p) => p.datapath === dp).map((p) => p._uuid);
        put('Multicast_Group', uuid, sb.make('Multicast_Group', uuid, { datapath: dp, name: `_MC_${rng.int(0, 99)}`, tunnel_key: rng.int(32768, 33000), ports: rng.subset(ports, 8).sort() }));
        break;
      }
      case 'mcast-mod': {
        // A port joins or leaves a group, one at a time as northd changes them (the wire may send the difference).
        const g = pick(rowsOf('Multicast_Group'));
        if (g === undefined) break;
        const had = g.ports as string[];
        const other = rowsOf('Port_Binding').filter((p) => p.datapath === g.datapath && !had.includes(p._uuid)).map((p) => p._uuid);
        const next = rng.chance(0.5) && other.length > 0 ? [...had, rng.pick(other)] : had.filter((u) => u !== rng.pick(had));
        update('Multicast_Group', g, { ports: next.sort() });
        break;
      }
    }
  }
  return w;
}

/** An agent as the protocol sees it: applies steps in order, checks every revision. */
class Agent {
  readonly inbox: { m: Buffer; flushed: () => void }[] = [];
  readonly view = new Map<string, Map<string, Row>>();
  revision = 0;
  resumed = false;
  ended: StreamEnd | undefined;
  session: Session | undefined;
  member = 0;
  /** Tables whose set columns it takes as differences (Hello.set_difference_tables). */
  diffTables: string[] = [];
  /** Rows a difference was applied to. */
  differences = 0;
  part: { from: number; to: number; reset: boolean; changes: { table: string; uuid: string; row: Row | undefined }[] } | undefined;
  readonly sink: StreamSink = { write: (m, flushed) => this.inbox.push({ m, flushed }), end: (e) => (this.ended = e) };
  constructor(
    readonly name: string,
    readonly chassis: string,
    readonly monitorAll: boolean,
    public wanted: string[],
    public readsPerRound: number,
  ) {}

  /** Reads up to n messages; throws on anything the protocol forbids. */
  read(n: number): number {
    let count = 0;
    while (count < n && this.inbox.length > 0) {
      const { m, flushed } = this.inbox.shift() as { m: Buffer; flushed: () => void };
      count++;
      const msg = decodeServerMessage(m);
      if (!this.resumed) {
        if (msg.kind !== 'resume' || msg.resume === undefined) throw new Error(`${this.name}: first message ${msg.kind}`);
        if (msg.resume.fromRevision !== this.revision) throw new Error(`${this.name}: resume from ${msg.resume.fromRevision}, agent at ${this.revision}`);
        this.resumed = true;
        flushed();
        continue;
      }
      const d = msg.delta;
      if (msg.kind !== 'delta' || d === undefined) throw new Error(`${this.name}: expected a delta`);
      if (this.part === undefined) {
        if (d.fromRevision !== this.revision) throw new Error(`${this.name}: step from ${d.fromRevision} but agent at ${this.revision}`);
        this.part = { from: d.fromRevision, to: d.toRevision, reset: d.reset, changes: [] };
      } else if (this.part.from !== d.fromRevision || this.part.to !== d.toRevision || this.part.reset !== d.reset) {
        throw new Error(`${this.name}: parts disagree`);
      }
      const part = this.part;
      // The row a difference applies to: the latest this agent has of it, earlier in the step included.
      const held = (table: string, uuid: string): Row | undefined => {
        this.differences++;
        for (let k = part.changes.length - 1; k >= 0; k--) {
          const c = part.changes[k] as { table: string; uuid: string; row: Row | undefined };
          if (c.table === table && c.uuid === uuid) return c.row;
        }
        return part.reset ? undefined : this.view.get(table)?.get(uuid);
      };
      // An agent that asked for none must never get one: without `held`, a difference is a WireError.
      for (const tr of d.tables) part.changes.push(...decodeTableRows(schema, tr, this.diffTables.length > 0 ? held : undefined));
      if (!d.more) {
        const p = this.part;
        this.part = undefined;
        if (p.reset) this.view.clear();
        for (const c of p.changes) {
          let tbl = this.view.get(c.table);
          if (tbl === undefined) this.view.set(c.table, (tbl = new Map()));
          if (c.row === undefined) tbl.delete(c.uuid);
          else tbl.set(c.uuid, c.row);
        }
        this.revision = p.to;
      }
      flushed();
    }
    return count;
  }

  /** What a reconnecting agent says it holds (as agent/sb-stream.ts computes it). */
  hello(): SessionHello {
    const dps = new Set(this.view.get('Datapath_Binding')?.keys() ?? []);
    const byIface = [...(this.view.get('Port_Binding')?.values() ?? [])].filter((p) => !dps.has(p.datapath as string)).map((p) => p.logical_port as string);
    return {
      chassis: this.chassis, lastRevision: this.revision, heldDatapaths: this.revision > 0 ? [...dps] : [], ifaceIds: this.revision > 0 ? byIface : this.wanted, monitorAll: this.monitorAll,
      setDifferenceTables: this.diffTables,
    };
  }
}

function canon(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) => (isMapValue(x) ? [...x].sort() : x));
}

/** What the runs went through, summed: so that a path the generator never reaches shows. */
const exercised = { snapshots: 0, catchUps: 0, fellBehind: 0, budgetWaits: 0, cacheHits: 0, differences: 0 };

function run(seed: number, steps: number): void {
  const rng = new Rng(seed);
  const sb = new FakeSb(rng, rng.int(3, 40));
  const deferred: (() => void)[] = [];
  const limits = {
    queueMessagesMax: rng.int(2, 6),
    queueBytesMax: 8 * 1024,
    queueBytesLow: 2 * 1024,
    partBytesMax: rng.pick([300, 2000, 64 * 1024]),
    // Small budgets make catch-ups wait for each other, and the cache evict.
    syncBytesMax: rng.pick([1, 64 << 20]),
    cacheEntriesMax: rng.pick([1, 4]),
    cacheBytesMax: rng.pick([4096, 64 << 20]),
    catchUpChangesMax: rng.pick([5, 200_000]),
  };
  const source = { schema, rows: sb.rows, history: sb.history, revision: () => sb.revision };
  const members = [0, 1].map((id) => new Fanout(source, { member: id, limits, defer: (f) => deferred.push(f) }));
  const fresh = (): InterestIndex => new InterestIndex(sb.rows);
  const portNames: string[] = [];
  const agents: Agent[] = [];
  for (let i = 0; i < 6; i++) agents.push(new Agent(`a${i}`, rng.pick(chassisNames), i === 5, [], rng.pick([1, 2, 50, 1000])));
  // Half take set differences for every table (the rest get rows whole), so a group's step is encoded both
  // ways; they also name a table the member does not have, which it leaves out.
  for (const a of agents) if (rng.chance(0.5)) a.diffTables = [...tables, 'No_Such_Table'];
  const connect = (a: Agent): void => {
    a.inbox.length = 0;
    a.resumed = false;
    a.member = rng.int(0, 1);
    const hello = a.hello();
    a.session = (members[a.member] as Fanout).open(hello, a.sink);
    // As the client does: the wanted iface-ids right after its Hello's.
    (members[a.member] as Fanout).setIfaceIds(a.session, a.wanted);
  };
  const settle = (): void => {
    for (let round = 0; round < 10_000; round++) {
      let busy = false;
      for (const a of agents) if (a.read(Infinity) > 0) busy = true;
      while (deferred.length > 0) {
        busy = true;
        (deferred.shift() as () => void)();
      }
      if (!busy) return;
    }
    throw new Error('never settled');
  };
  for (let step = 0; step < steps; step++) {
    const delta = sb.commit(randomWrites(sb, rng, portNames));
    if (delta.changes.length > 0) for (const f of members) f.commit(sb.revision, delta);
    for (const a of agents) {
      if (a.session === undefined && step >= 2 + agents.indexOf(a)) connect(a);
      a.read(a.readsPerRound);
      if (a.session !== undefined && rng.chance(0.03)) {
        // The stream breaks: the agent keeps what it applied, reconnects to either member.
        (members[a.member] as Fanout).close(a.session);
        a.part = undefined;
        connect(a);
      }
      if (a.session !== undefined && !a.monitorAll && rng.chance(0.05)) {
        a.wanted = rng.subset([...portNames, 'nosuchport'], 3);
        (members[a.member] as Fanout).setIfaceIds(a.session, a.wanted);
      }
    }
    if (rng.chance(0.3)) while (deferred.length > 0) (deferred.shift() as () => void)();
    for (const name of chassisNames) {
      const inc = members[0]?.index.localDatapaths(name) as Set<string>;
      const scratch = localDatapathsFromScratch(sb.rows, name);
      if (canon([...inc].sort()) !== canon([...scratch].sort())) throw new Error(`seed ${seed} step ${step}: local datapaths of ${name}: incremental ${[...inc].sort()} from scratch ${[...scratch].sort()}`);
    }
    if (step % 7 === 6 || step === steps - 1) {
      settle();
      for (const f of members) f.progress();
      settle();
      const rebuilt = fresh();
      for (const name of chassisNames) {
        if (canon([...rebuilt.localDatapaths(name)].sort()) !== canon([...(members[1]?.index.localDatapaths(name) ?? [])].sort())) throw new Error(`seed ${seed} step ${step}: a rebuilt index disagrees for ${name}`);
      }
      if (step === steps - 1) {
        for (const f of members) for (const k of ['snapshots', 'catchUps', 'fellBehind', 'budgetWaits', 'cacheHits'] as const) exercised[k] += f.stats()[k];
        for (const a of agents) exercised.differences += a.differences;
      }
      for (const a of agents) {
        if (a.session === undefined) continue;
        if (a.ended !== undefined) throw new Error(`seed ${seed}: ${a.name} ended: ${a.ended.message}`);
        if (a.session.state !== 'live') throw new Error(`seed ${seed} step ${step}: ${a.name} is ${a.session.state} after settling`);
        if (a.revision !== sb.revision) throw new Error(`seed ${seed} step ${step}: ${a.name} at ${a.revision}, view at ${sb.revision}`);
        const interest: Interest = { chassis: a.chassis, monitorAll: a.monitorAll, datapaths: localDatapathsFromScratch(sb.rows, a.chassis), ifaceIds: new Set(a.wanted) };
        const want = visibleFromScratch(sb.rows, tables, interest);
        const have = new Map<string, string>();
        const expected = new Map<string, string>();
        for (const [tb, rows] of a.view) for (const [u, r] of rows) have.set(`${tb} ${u}`, canon(r));
        for (const [tb, rows] of want) for (const [u, r] of rows) expected.set(`${tb} ${u}`, canon(r));
        const missing = [...expected.keys()].filter((k) => have.get(k) !== expected.get(k));
        const extra = [...have.keys()].filter((k) => !expected.has(k));
        if (missing.length > 0 || extra.length > 0) {
          throw new Error(`seed ${seed} step ${step}: ${a.name} (${a.chassis}${a.monitorAll ? ', monitor-all' : ''}) differs: missing or stale ${missing.slice(0, 5).join('; ')}; extra ${extra.slice(0, 5).join('; ')}`);
        }
      }
    }
  }
}

t.test('incremental interest and steps equal a computation from scratch', async (t) => {
  const seeds = process.env.OVNTS_LONG === '1' ? 400 : 60;
  const base = Number(process.env.OVNTS_SEED ?? 1);
  for (let seed = base; seed < base + seeds; seed++) {
    try {
      run(seed, 60);
    } catch (err) {
      throw new Error(`seed ${seed} (replay: OVNTS_SEED=${seed}): ${(err as Error).message}`, { cause: err });
    }
  }
  t.pass(`${seeds} seeds of 60 revisions, agents reconnecting, lagging, changing interest`);
  // Frequent paths must have been taken; the budget's is rare here and has its own test below.
  for (const [k, n] of Object.entries(exercised)) {
    if (k === 'budgetWaits') t.comment(`${k}: ${n}`);
    else t.ok(n > 0, `${k}: ${n}`);
  }
});

t.test('a fan-out shares one encoding per group and keeps every queue bounded', async (t) => {
  const rng = new Rng(7);
  const sb = new FakeSb(rng, 1000);
  const deferred: (() => void)[] = [];
  const limits = { queueMessagesMax: 8, queueBytesMax: 16 * 1024, queueBytesLow: 4 * 1024 };
  const f = new Fanout({ schema, rows: sb.rows, history: sb.history, revision: () => sb.revision }, { member: 1, limits, defer: (x) => deferred.push(x) });
  const global = rng.uuid();
  sb.commit(new Map([['g', { table: 'SB_Global', uuid: global, row: sb.make('SB_Global', global, {}) }]]));
  const agents = Array.from({ length: 50 }, (_, i) => new Agent(`a${i}`, `hv${i}`, false, [], i === 0 ? 0 : 1000));
  for (const a of agents) a.session = f.open(a.hello(), a.sink);
  for (const a of agents) a.read(Infinity);
  while (deferred.length > 0) (deferred.shift() as () => void)();
  const before = f.stats();
  let row = sb.rows('SB_Global').get(global) as Row;
  for (let i = 1; i <= 300; i++) {
    row = { ...row, _version: rng.uuid(), nb_cfg: i, options: new Map([['pad', 'x'.repeat(200)]]) } as Row;
    const delta = sb.commit(new Map([['g', { table: 'SB_Global', uuid: global, row }]]));
    f.commit(sb.revision, delta);
    for (const a of agents.slice(1)) a.read(Infinity);
    t.ok(f.stats().queuedBytesMaxNow <= limits.queueBytesMax + 4096, 'no queue grows past its limit (plus one message)');
  }
  const after = f.stats();
  // 300 revisions for 49 live agents in one group: one encoding each, 49 writes each.
  t.equal(after.encoded - before.encoded <= 300 + 10, true, `encodings: ${after.encoded - before.encoded} for 300 revisions`);
  t.ok(after.written - before.written >= 300 * 49, 'every live agent got every step');
  t.ok(after.fellBehind >= 1, 'the agent that reads nothing fell behind');
  const slow = agents[0] as Agent;
  const queued = slow.inbox.length;
  t.ok(queued <= limits.queueMessagesMax + 2, `the slow agent has ${queued} messages queued, not 300`);
  // It reads again: a catch-up from history brings it to the latest state in one step.
  let rounds = 0;
  while (slow.inbox.length > 0 || deferred.length > 0) {
    slow.read(Infinity);
    while (deferred.length > 0) (deferred.shift() as () => void)();
    rounds++;
  }
  t.equal(slow.revision, sb.revision, 'the slow agent caught up');
  t.equal((slow.view.get('SB_Global')?.get(global) as Row).nb_cfg, 300, 'with the latest row');
  t.ok(f.stats().catchUps >= 1, 'from history');
  t.ok(rounds < 10, `in ${rounds} rounds`);
  t.equal(slow.session?.state, 'live', 'and is live again');
});

t.test('catch-ups wait for the sync budget, in turn', async (t) => {
  const rng = new Rng(11);
  const sb = new FakeSb(rng, 1000);
  const deferred: (() => void)[] = [];
  const run = (): void => {
    while (deferred.length > 0) (deferred.shift() as () => void)();
  };
  // Tiny parts and queue: a snapshot stays partly unwritten while its agent does not read.
  const limits = { syncBytesMax: 1, partBytesMax: 200, queueBytesMax: 1024, queueBytesLow: 256, queueMessagesMax: 4 };
  const f = new Fanout({ schema, rows: sb.rows, history: sb.history, revision: () => sb.revision }, { member: 1, limits, defer: (x) => deferred.push(x) });
  const writes = new Map<string, { table: string; uuid: string; row: Row | undefined }>();
  for (let i = 0; i < 40; i++) {
    const u = rng.uuid();
    writes.set(u, { table: 'Address_Set', uuid: u, row: sb.make('Address_Set', u, { name: `as${i}`, addresses: ['10.0.0.1', '10.0.0.2'] }) });
  }
  const delta = sb.commit(writes);
  f.commit(sb.revision, delta);
  const a = new Agent('a', 'hv0', false, [], 0);
  const b = new Agent('b', 'hv1', false, [], 0);
  a.session = f.open(a.hello(), a.sink);
  t.ok(f.stats().syncBytes > 0, 'a\'s snapshot is partly written, the rest waits for its queue');
  b.session = f.open(b.hello(), b.sink);
  t.equal(f.stats().budgetWaits, 1, 'b\'s catch-up waits for the budget');
  t.equal(b.inbox.length, 0, 'and nothing of it is written yet');
  for (let i = 0; i < 100 && (a.inbox.length > 0 || deferred.length > 0); i++) {
    a.read(Infinity);
    run();
  }
  t.equal(a.session.state, 'live', 'a caught up');
  for (let i = 0; i < 100 && (b.inbox.length > 0 || deferred.length > 0); i++) {
    b.read(Infinity);
    run();
  }
  t.equal(b.session.state, 'live', 'then b');
  for (const x of [a, b]) t.equal(x.view.get('Address_Set')?.size, 40, `${x.name} holds every row`);
  t.equal(f.stats().syncBytes, 0, 'the budget is free again');
});

/** A view with its history and one Fanout over it, writes committed at once, deferred work held for the test. */
function oneFanout(seed: number): { rng: Rng; sb: FakeSb; deferred: (() => void)[]; f: Fanout; write: (rows: [string, string, Row | undefined][]) => void } {
  const rng = new Rng(seed);
  const sb = new FakeSb(rng, 1000);
  const deferred: (() => void)[] = [];
  const f = new Fanout({ schema, rows: sb.rows, history: sb.history, revision: () => sb.revision }, { member: 1, defer: (x) => deferred.push(x) });
  const write = (rows: [string, string, Row | undefined][]): void => {
    f.commit(sb.revision + 1, sb.commit(new Map(rows.map(([table, uuid, row]) => [`${table} ${uuid}`, { table, uuid, row }]))));
  };
  return { rng, sb, deferred, f, write };
}

t.test('a DNS row reaches exactly the chassis with one of its datapaths local, and follows its datapaths column', async (t) => {
  const { rng, sb, deferred, f, write } = oneFanout(23);
  const [dpA, dpB, dpC, hv0, hv1, pA, pB, dns] = Array.from({ length: 8 }, () => rng.uuid()) as [string, string, string, string, string, string, string, string];
  write([
    ['Datapath_Binding', dpA, sb.make('Datapath_Binding', dpA, { tunnel_key: 1 })],
    ['Datapath_Binding', dpB, sb.make('Datapath_Binding', dpB, { tunnel_key: 2 })],
    ['Datapath_Binding', dpC, sb.make('Datapath_Binding', dpC, { tunnel_key: 3 })],
    ['Chassis', hv0, sb.make('Chassis', hv0, { name: 'hv0' })],
    ['Chassis', hv1, sb.make('Chassis', hv1, { name: 'hv1' })],
    ['Port_Binding', pA, sb.make('Port_Binding', pA, { logical_port: 'vmA', datapath: dpA, chassis: [hv0], tunnel_key: 1 })],
    ['Port_Binding', pB, sb.make('Port_Binding', pB, { logical_port: 'vmB', datapath: dpB, chassis: [hv1], tunnel_key: 1 })],
  ]);
  const agents = [new Agent('a0', 'hv0', false, [], 1000), new Agent('a1', 'hv1', false, [], 1000)];
  for (const a of agents) a.session = f.open(a.hello(), a.sink);
  const drain = (): void => {
    for (let i = 0; i < 1000 && (agents.some((a) => a.inbox.length > 0) || deferred.length > 0); i++) {
      for (const a of agents) a.read(Infinity);
      while (deferred.length > 0) (deferred.shift() as () => void)();
    }
  };
  // As in the random runs: revisions an agent sees nothing of reach it with the next progress.
  const settle = (): void => {
    drain();
    f.progress();
    drain();
  };
  const holders = (): string[] => agents.filter((a) => a.view.get('DNS')?.has(dns) === true).map((a) => a.chassis);
  const records = (a: Agent): ReadonlyMap<unknown, unknown> | undefined => (a.view.get('DNS')?.get(dns) as Row | undefined)?.records as ReadonlyMap<unknown, unknown> | undefined;
  settle();
  write([['DNS', dns, sb.make('DNS', dns, { datapaths: [dpA], records: new Map([['vm1.ovn.org', '10.0.0.1']]) })]]);
  settle();
  t.same(holders(), ['hv0'], 'on datapath A: only hv0, whose port is there');
  write([['DNS', dns, { ...(sb.rows('DNS').get(dns) as Row), _version: rng.uuid(), datapaths: [dpB] } as Row]]);
  settle();
  t.same(holders(), ['hv1'], 'moved to B: hv0 gets its delete, hv1 its insert');
  write([['DNS', dns, { ...(sb.rows('DNS').get(dns) as Row), _version: rng.uuid(), datapaths: [dpA, dpB], records: new Map([['vm1.ovn.org', '10.0.0.2']]) } as Row]]);
  settle();
  t.same(holders(), ['hv0', 'hv1'], 'on A and B: both');
  t.same(agents.map((a) => [...(records(a) ?? [])]), [[['vm1.ovn.org', '10.0.0.2']], [['vm1.ovn.org', '10.0.0.2']]], 'with the new records');
  write([['DNS', dns, { ...(sb.rows('DNS').get(dns) as Row), _version: rng.uuid(), datapaths: [dpC] } as Row]]);
  settle();
  t.same(holders(), [], 'on C, local nowhere: no one');
  write([['Port_Binding', pA, { ...(sb.rows('Port_Binding').get(pA) as Row), _version: rng.uuid(), datapath: dpC } as Row]]);
  settle();
  t.same(holders(), ['hv0'], 'hv0\'s port moves to C: C becomes local there and the row arrives');
  write([['DNS', dns, undefined]]);
  settle();
  t.same(holders(), [], 'deleted: gone everywhere');
  for (const a of agents) t.equal(a.revision, sb.revision, `${a.name} is up to date`);
});

t.test('an agent that resumes claiming an external port it did not ask for still gets that port\'s containers', async (t) => {
  // hv0 has nothing local. p2 is an external port (every chassis sees it); p4 is a container
  // port whose parent is p2 (seen only by a chassis that wants p2). The agent asks for p2 and
  // its stream breaks before the answer: its Hello infers p2 from the Port_Binding it holds
  // outside its datapaths (as agent/sb-stream.ts does), though its view never had p4.
  const { rng, sb, deferred, f, write } = oneFanout(31);
  const [dp, hv0, p2, p4] = Array.from({ length: 4 }, () => rng.uuid()) as [string, string, string, string];
  write([
    ['Datapath_Binding', dp, sb.make('Datapath_Binding', dp, { tunnel_key: 1 })],
    ['Chassis', hv0, sb.make('Chassis', hv0, { name: 'hv0' })],
    ['Port_Binding', p2, sb.make('Port_Binding', p2, { logical_port: 'p2', type: 'external', datapath: dp, tunnel_key: 2 })],
    ['Port_Binding', p4, sb.make('Port_Binding', p4, { logical_port: 'p4', parent_port: ['p2'], datapath: dp, tunnel_key: 4 })],
  ]);
  const a = new Agent('a', 'hv0', false, [], 1000);
  const drain = (): void => {
    for (let i = 0; i < 1000 && (a.inbox.length > 0 || deferred.length > 0); i++) {
      a.read(Infinity);
      while (deferred.length > 0) (deferred.shift() as () => void)();
    }
  };
  a.session = f.open(a.hello(), a.sink);
  drain();
  t.ok(a.view.get('Port_Binding')?.has(p2) === true && a.view.get('Port_Binding')?.has(p4) !== true, 'the external port only');
  a.wanted = ['p2'];
  f.setIfaceIds(a.session, a.wanted);
  // The stream breaks before the agent reads the answer; it reconnects with what it holds.
  f.close(a.session);
  a.inbox.length = 0;
  a.resumed = false;
  const hello = a.hello();
  t.same(hello.ifaceIds, ['p2'], 'the Hello claims p2, inferred from the external port it holds');
  a.session = f.open(hello, a.sink);
  f.setIfaceIds(a.session, a.wanted);
  drain();
  t.ok(a.view.get('Port_Binding')?.has(p4) === true, 'p4 (a container of p2) reached it');
});

t.test('the members of a gateway port\'s HA group hold its router; the datapath follows the members', async (t) => {
  // A router R with a chassisredirect port whose HA group lists hv0 (by reference) and hv1 (by
  // external_ids:chassis-name); hv2 is in no group. R's flow reaches the members only, standby
  // included, and moves as members are renamed, dropped and added; a port leaving the group
  // takes R with it.
  const { rng, sb, deferred, f, write } = oneFanout(41);
  const change = (table: string, uuid: string, cols: Record<string, unknown>): [string, string, Row] => [table, uuid, { ...(sb.rows(table).get(uuid) as Row), _version: rng.uuid(), ...cols } as Row];
  const [dp, hv0, hv1, hv2, cr, g, m0, m1, m2, flow] = Array.from({ length: 10 }, () => rng.uuid()) as [string, string, string, string, string, string, string, string, string, string];
  write([
    ['Datapath_Binding', dp, sb.make('Datapath_Binding', dp, { tunnel_key: 1 })],
    ...(['hv0', 'hv1', 'hv2'] as const).map((name, i): [string, string, Row] => [
      'Chassis', [hv0, hv1, hv2][i] as string, sb.make('Chassis', [hv0, hv1, hv2][i] as string, { name }),
    ]),
    ['HA_Chassis', m0, sb.make('HA_Chassis', m0, { chassis: [hv0], priority: 20 })],
    ['HA_Chassis', m1, sb.make('HA_Chassis', m1, { external_ids: new Map([['chassis-name', 'hv1']]), priority: 10 })],
    ['HA_Chassis_Group', g, sb.make('HA_Chassis_Group', g, { name: 'lrp-gw', ha_chassis: [m0, m1].sort() })],
    ['Port_Binding', cr, sb.make('Port_Binding', cr, { logical_port: 'cr-lrp-gw', type: 'chassisredirect', datapath: dp, tunnel_key: 2, ha_chassis_group: [g] })],
    ['Logical_Flow', flow, sb.make('Logical_Flow', flow, { logical_datapath: [dp], match: 'ip4' })],
  ]);
  const agents = ['hv0', 'hv1', 'hv2'].map((c) => new Agent(`a-${c}`, c, false, [], 1000));
  for (const a of agents) a.session = f.open(a.hello(), a.sink);
  const settle = (): void => {
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < 1000 && (agents.some((a) => a.inbox.length > 0) || deferred.length > 0); i++) {
        for (const a of agents) a.read(Infinity);
        while (deferred.length > 0) (deferred.shift() as () => void)();
      }
      if (round === 0) f.progress();
    }
  };
  const holders = (): string[] => agents.filter((a) => a.view.get('Logical_Flow')?.has(flow) === true).map((a) => a.chassis);
  settle();
  t.same(holders(), ['hv0', 'hv1'], 'both members, the standby too; not hv2');
  write([change('HA_Chassis', m1, { external_ids: new Map([['chassis-name', 'hv2']]) })]);
  settle();
  t.same(holders(), ['hv0', 'hv2'], 'the member renamed to hv2: hv1 loses R, hv2 gains it');
  write([change('HA_Chassis', m0, { chassis: [] })]);
  settle();
  t.same(holders(), ['hv2'], 'a member whose reference is dropped (its chassis unknown) is no member');
  write([change('HA_Chassis_Group', g, { ha_chassis: [m1] }), ['HA_Chassis', m0, undefined]]);
  settle();
  t.same(holders(), ['hv2'], 'the group shrinks to hv2');
  write([['HA_Chassis', m2, sb.make('HA_Chassis', m2, { chassis: [hv1], priority: 30 })], change('HA_Chassis_Group', g, { ha_chassis: [m1, m2].sort() })]);
  settle();
  t.same(holders(), ['hv1', 'hv2'], 'a member added by reference');
  write([change('Port_Binding', cr, { ha_chassis_group: [] })]);
  settle();
  t.same(holders(), [], 'the port leaves the group: R is local nowhere');
  write([change('Port_Binding', cr, { ha_chassis_group: [g] })]);
  settle();
  t.same(holders(), ['hv1', 'hv2'], 'and back');
  write([['Chassis', hv1, undefined], change('HA_Chassis', m2, { chassis: [] })]);
  settle();
  t.same(holders(), ['hv2'], 'hv1 unregisters (the database drops the weak reference)');
  for (const a of agents) t.equal(a.revision, sb.revision, `${a.name} is up to date`);
  for (const c of ['hv0', 'hv1', 'hv2']) t.same([...f.index.localDatapaths(c)].sort(), [...localDatapathsFromScratch(sb.rows, c)].sort(), `${c}: the index equals a scan`);
});
