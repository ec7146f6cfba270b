// The SB view is a pure function of the log prefix on every replica, restarts included.
// Method: random NB transaction sequences (deletes that free tunnel keys, re-adds of the same
// names, requested tunnel keys that move others' keys) applied by replicas that never restart, restore mid-way from a snapshot, or start
// late; then three central nodes with compaction and a restart. Views compared as canonical text.
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { Packr } from 'msgpackr';
import t from 'tap';
import { LocalNetwork } from '../../cluster/local-transport.js';
import type { Entry } from '../../cluster/types.js';
import type { Row, Uuid } from '../../ovsdb/index.js';
import { Database, dumpDatabaseJson, parseDatabaseSchema } from '../../ovsdb/index.js';
import type * as sb from '../../ovsdb/rows/sb.js';
import { NB_SCHEMA_JSON } from '../../ovsdb/schemas/index.js';
import type { NorthdHistory, SbDelta, SbView } from '../../northd/index.js';
import { flowDatapaths } from '../../northd/index.js';
import { canonicalText } from '../../northd/sb-changes.js';
import type { CentralNode } from '../../server/central-node.js';
import { CentralNode as Central } from '../../server/central-node.js';
import { encodeCommand, nbTxn, sbTxn } from '../../server/commands.js';
import { NbStateMachine } from '../../server/nb-state-machine.js';
import { NorthboundClient, northboundDefinition, northboundHandlers } from '../../server/northbound-service.js';
import { NorthdProjection, decodeNorthdHistory, encodeNorthdHistory } from '../../server/northd-projection.js';
import { Rng } from '../helpers/seeded-rng.js';
import { testdirAfterTeardowns } from '../helpers/testdir.js';

const schema = parseDatabaseSchema(NB_SCHEMA_JSON);
const SEQUENCES = Number(process.env.NORTHD_SEQUENCES ?? 40);
const TXNS = 60;

const set = (items: readonly unknown[]): unknown => ['set', items];
const uuidAtom = (u: string): unknown => ['uuid', u];
const byUuid = (u: string): unknown[] => [['_uuid', '==', ['uuid', u]]];

function addLsp(ls: string, name: string, row: Record<string, unknown> = {}): unknown[] {
  const tag = `lsp_${name}`;
  return [
    { op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': tag, row: { name, addresses: set([`0a:00:00:00:00:01 10.0.0.1`]), ...row } },
    { op: 'mutate', table: 'Logical_Switch', where: [['name', '==', ls]], mutations: [['ports', 'insert', set([['named-uuid', tag]])]] },
  ];
}

function addLrp(lr: string, name: string, n: number): unknown[] {
  const tag = `lrp_${name}`;
  const mac = `0a:00:00:00:ff:${(n % 256).toString(16).padStart(2, '0')}`;
  return [
    { op: 'insert', table: 'Logical_Router_Port', 'uuid-name': tag, row: { name, mac, networks: set([`192.168.${n % 256}.1/24`]) } },
    { op: 'mutate', table: 'Logical_Router', where: [['name', '==', lr]], mutations: [['ports', 'insert', set([['named-uuid', tag]])]] },
  ];
}

function names(db: Database, table: string): { uuid: Uuid; name: string }[] {
  return [...db.rows(table).values()].map((r) => ({ uuid: r._uuid, name: (r as unknown as { name: string }).name })).sort((a, b) => (a.name < b.name ? -1 : 1));
}

/**
 * One random transaction for `db`. Switch, router and port names come from small pools, so
 * deleted objects come back under the same names while lower keys may have been freed.
 */
function randomOps(rng: Rng, db: Database, n: number): unknown[] {
  const lss = names(db, 'Logical_Switch');
  const lsps = names(db, 'Logical_Switch_Port');
  const lrs = names(db, 'Logical_Router');
  const lrps = names(db, 'Logical_Router_Port');
  const freeName = (prefix: string, pool: number, used: readonly { name: string }[]): string | undefined => {
    const free = Array.from({ length: pool }, (_, i) => `${prefix}${i}`).filter((x) => !used.some((u) => u.name === x));
    return free.length === 0 ? undefined : rng.pick(free);
  };
  const kind = rng.weighted<string>([
    ['ls-add', lss.length < 4 ? 2 : 0], ['ls-del', lss.length > 1 ? 0.7 : 0], ['lsp-add', lss.length > 0 ? 6 : 0],
    ['lsp-del', lsps.length > 0 ? 4 : 0], ['lsp-move', lsps.length > 0 && lss.length > 1 ? 1 : 0], ['lr-add', lrs.length < 2 ? 1 : 0],
    ['lr-del', lrs.length > 0 ? 0.3 : 0], ['lrp-add', lrs.length > 0 ? 1.5 : 0], ['lrp-del', lrps.length > 0 ? 1 : 0], ['nb-cfg', 0.3],
    ['key-request', lss.length + lsps.length > 0 ? 1.5 : 0], ['drop-sampling', 2],
  ]);
  switch (kind) {
    case 'ls-add': {
      const name = freeName('ls', 5, lss);
      return name === undefined ? [] : [{ op: 'insert', table: 'Logical_Switch', row: { name } }];
    }
    case 'ls-del':
      return [{ op: 'delete', table: 'Logical_Switch', where: byUuid(rng.pick(lss).uuid) }];
    case 'lsp-add': {
      const ops: unknown[] = [];
      const taken = [...lsps];
      for (let i = rng.int(1, 3); i > 0; i--) {
        const name = freeName('p', 16, taken);
        if (name === undefined) break;
        taken.push({ uuid: '', name });
        const router = lrps.length > 0 && rng.chance(0.2) ? { type: 'router', options: ['map', [['router-port', rng.pick(lrps).name]]], addresses: set(['router']) } : {};
        ops.push(...addLsp(rng.pick(lss).name, name, router));
      }
      return ops;
    }
    case 'lsp-del': {
      const ops: unknown[] = [];
      for (const p of rng.subset(lsps, 3)) ops.push({ op: 'mutate', table: 'Logical_Switch', where: [], mutations: [['ports', 'delete', set([uuidAtom(p.uuid)])]] });
      return ops;
    }
    case 'lsp-move': {
      const p = rng.pick(lsps);
      const to = rng.pick(lss);
      return [
        { op: 'mutate', table: 'Logical_Switch', where: [['_uuid', '!=', uuidAtom(to.uuid)]], mutations: [['ports', 'delete', set([uuidAtom(p.uuid)])]] },
        { op: 'mutate', table: 'Logical_Switch', where: byUuid(to.uuid), mutations: [['ports', 'insert', set([uuidAtom(p.uuid)])]] },
      ];
    }
    case 'lr-add': {
      const name = freeName('lr', 3, lrs);
      return name === undefined ? [] : [{ op: 'insert', table: 'Logical_Router', row: { name } }];
    }
    case 'lr-del':
      return [{ op: 'delete', table: 'Logical_Router', where: byUuid(rng.pick(lrs).uuid) }];
    case 'lrp-add': {
      const name = freeName('rp', 6, lrps);
      return name === undefined ? [] : addLrp(rng.pick(lrs).name, name, n);
    }
    case 'lrp-del':
      return [{ op: 'mutate', table: 'Logical_Router', where: [], mutations: [['ports', 'delete', set([uuidAtom(rng.pick(lrps).uuid)])]] }];
    case 'key-request': {
      // A requested tunnel key set or cleared: low keys, held by others, move them.
      const [table, column, rows] = lsps.length > 0 && rng.chance(0.5) ? ['Logical_Switch_Port', 'options', lsps] as const : ['Logical_Switch', 'other_config', lss] as const;
      const mutations: unknown[] = [[column, 'delete', set(['requested-tnl-key'])]];
      if (rng.chance(0.8)) mutations.push([column, 'insert', ['map', [['requested-tnl-key', String(rng.int(1, 4))]]]]);
      return [{ op: 'mutate', table, where: byUuid(rng.pick(rows).uuid), mutations }];
    }
    case 'drop-sampling': {
      // NB_Global's drop sampling options, a domain ovn-northd refuses now and then: what is in
      // force is then history (northd/drop-sampling.ts), which a snapshot must carry.
      const options = ['map', [['debug_drop_collector_set', String(rng.pick([0, 1, 123]))], ['debug_drop_domain_id', String(rng.pick([0, 5, 254, 255, 300, 4096]))]]];
      if (db.rows('NB_Global').size === 0) return [{ op: 'insert', table: 'NB_Global', row: { options } }];
      return [{ op: 'update', table: 'NB_Global', where: [], row: { options } }];
    }
    default:
      return [{ op: 'insert', table: 'NB_Global', row: { nb_cfg: n } }, { op: 'delete', table: 'NB_Global', where: [] }];
  }
}

function seedOf(rng: Rng): [number, number, number, number] {
  return [rng.int(1, 0x7fffffff), rng.int(0, 0x7fffffff), rng.int(0, 0x7fffffff), rng.int(0, 0x7fffffff)];
}

/** A state machine over a NorthdProjection whose listener folds every SB delta into a copy. */
function replica(): { sm: NbStateMachine; projection: NorthdProjection; folded: Map<string, Map<Uuid, Row>>; revisions: number[]; problems: string[] } {
  const projection = new NorthdProjection();
  const folded = new Map<string, Map<Uuid, Row>>();
  const revisions: number[] = [];
  const problems: string[] = [];
  projection.onSbChange((revision, delta: SbDelta) => {
    revisions.push(revision);
    for (const c of delta.changes) {
      let rows = folded.get(c.table);
      if (rows === undefined) folded.set(c.table, (rows = new Map()));
      const had = rows.get(c.uuid);
      const expectOld = c.kind === 'insert' ? undefined : c.old;
      if (canonicalText(had) !== canonicalText(expectOld)) problems.push(`r${revision} ${c.kind} ${c.table} ${c.uuid}: old does not match`);
      if (c.kind === 'delete') rows.delete(c.uuid);
      else rows.set(c.uuid, c.new);
    }
  });
  return { sm: new NbStateMachine({ schema, projection }), projection, folded, revisions, problems };
}

/** The view without empty tables (a folded copy has no entry for a table that never had rows). */
function viewText(view: SbView): string {
  return canonicalText(new Map([...view].filter(([, rows]) => rows.size > 0)));
}

function strictlyIncreasing(xs: readonly number[]): boolean {
  return xs.every((x, i) => i === 0 || x > (xs[i - 1] as number));
}

/** Tunnel keys of live datapaths and ports, by SB UUID. */
function keysOf(view: SbView): Map<Uuid, number> {
  const out = new Map<Uuid, number>();
  for (const table of ['Datapath_Binding', 'Port_Binding']) for (const [u, r] of view.get(table) ?? []) out.set(u, (r as unknown as { tunnel_key: number }).tunnel_key);
  return out;
}

t.test('determinism across restore: never restarted, restored mid-way, from scratch', async (t) => {
  let restoredWithKeys = 0;
  let keysMoved = 0;
  let heldAtSnapshot = 0;
  for (let s = 1; s <= SEQUENCES; s++) {
    const rng = new Rng(s * 7919);
    const a = replica();
    const entries: Entry[] = [];
    const snapshotAt = rng.int(5, TXNS - 5);
    let snapshot: Uint8Array | undefined;
    let moved = false;
    for (let i = 1; i <= TXNS; i++) {
      const e: Entry = { term: 1, index: i, type: 'normal', data: encodeCommand(nbTxn(randomOps(rng, a.sm.nb, i), seedOf(rng))) };
      entries.push(e);
      const before = keysOf(a.projection.view());
      a.sm.apply(e, false);
      for (const [k, key] of keysOf(a.projection.view())) if (before.has(k) && before.get(k) !== key) moved = true;
      if (i === snapshotAt) {
        snapshot = a.sm.snapshot();
        if (a.projection.history().dropSampling !== undefined) heldAtSnapshot++;
      }
    }
    if (moved) keysMoved++;
    if (snapshot === undefined) throw new Error('no snapshot taken');
    const b = replica();
    b.sm.restore(snapshot);
    for (const e of entries.slice(snapshotAt)) b.sm.apply(e, false);
    const c = replica();
    for (const e of entries) c.sm.apply(e, false);
    const texts = [a, b, c].map((r) => viewText(r.projection.view()));
    if (new Set(texts).size !== 1) {
      t.fail(`seed ${s}: views differ (snapshot at ${snapshotAt})`);
      continue;
    }
    // The northd history bytes (what the snapshot carries) are equal too. (The NB database's
    // own encoding follows row insertion order, which a restore changes, so it is compared as
    // a dump.)
    const histories = [a, b, c].map((r) => Buffer.from(r.projection.snapshot()).toString('hex'));
    if (new Set(histories).size !== 1) t.fail(`seed ${s}: northd snapshot bytes differ`);
    const dumps = [a, b, c].map((r) => canonicalText(dumpDatabaseJson(r.sm.nb)));
    if (new Set(dumps).size !== 1) {
      t.fail(`seed ${s}: NB databases differ`);
      if (process.env.DBG) {
        const [x, y] = dumps as [string, string];
        let k = 0;
        while (x[k] === y[k]) k++;
        console.log(x.slice(k - 300, k + 200), '\n----\n', y.slice(k - 300, k + 200));
      }
    }
    for (const [name, r] of [['A', a], ['B', b], ['C', c]] as const) {
      if (r.problems.length > 0) t.fail(`seed ${s} ${name}: ${r.problems[0] ?? ''}`);
      if (!strictlyIncreasing(r.revisions)) t.fail(`seed ${s} ${name}: SB deltas out of revision order`);
      if (viewText(r.folded) !== texts[0]) t.fail(`seed ${s} ${name}: folding the SB deltas does not give the view`);
    }
    if (b.projection.history().portKeys.length > 0) restoredWithKeys++;
  }
  t.ok(restoredWithKeys > SEQUENCES / 2, `most sequences end with ports (${restoredWithKeys}/${SEQUENCES})`);
  t.ok(keysMoved > SEQUENCES / 4, `requested keys moved keys of live objects in many sequences (${keysMoved}/${SEQUENCES})`);
  t.ok(heldAtSnapshot >= SEQUENCES / 10, `snapshots taken while a refused domain held drop sampling in force (${heldAtSnapshot}/${SEQUENCES})`);
  t.pass(`${SEQUENCES} sequences of ${TXNS} transactions agree`);
});

t.test('a port deleted and added again after a restore takes the lowest free key, as elsewhere', async (t) => {
  let n = 0;
  const entry = (ops: unknown[]): Entry => ({ term: 1, index: ++n, type: 'normal', data: encodeCommand(nbTxn(ops, [n, 1, 2, 3])) });
  const before = [entry([{ op: 'insert', table: 'Logical_Switch', row: { name: 'sw' } }]), entry([...addLsp('sw', 'p1'), ...addLsp('sw', 'p2'), ...addLsp('sw', 'p3')])];
  const a = replica();
  for (const e of before) t.equal(a.sm.apply(e, false).kind, 'committed');
  const keyOf = (r: { projection: NorthdProjection }, port: string): number | undefined =>
    [...(r.projection.view().get('Port_Binding')?.values() ?? [])].map((row) => row as unknown as sb.Port_Binding).find((p) => p.logical_port === port)?.tunnel_key;
  t.same(['p1', 'p2', 'p3'].map((p) => keyOf(a, p)), [1, 2, 3]);
  const b = replica();
  b.sm.restore(a.sm.snapshot());
  const p1 = names(a.sm.nb, 'Logical_Switch_Port').find((p) => p.name === 'p1')?.uuid as string;
  const p3 = names(a.sm.nb, 'Logical_Switch_Port').find((p) => p.name === 'p3')?.uuid as string;
  const after = [entry([{ op: 'mutate', table: 'Logical_Switch', where: [], mutations: [['ports', 'delete', set([uuidAtom(p1), uuidAtom(p3)])]] }]), entry(addLsp('sw', 'p3'))];
  for (const e of after) {
    a.sm.apply(e, false);
    b.sm.apply(e, false);
  }
  t.equal(keyOf(a, 'p3'), 1, 'the lowest free key');
  t.equal(keyOf(b, 'p3'), 1, 'the restored replica agrees (its restore-time key preferences are gone)');
  t.equal(viewText(b.projection.view()), viewText(a.projection.view()));
});

t.test('requested chassis by hostname: a replica restored from a snapshot takes the hostnames from the chassis database beside it', async (t) => {
  let n = 0;
  const nbEntry = (ops: unknown[]): Entry => ({ term: 1, index: ++n, type: 'normal', data: encodeCommand(nbTxn(ops, [n, 1, 2, 3])) });
  const sbEntry = (ops: unknown[]): Entry => ({ term: 1, index: ++n, type: 'normal', data: encodeCommand(sbTxn(ops, [n, 4, 5, 6])) });
  const chassis = (name: string, hostname: string, ip: string): unknown[] => [
    { op: 'insert', table: 'Encap', 'uuid-name': 'e', row: { type: 'geneve', ip, chassis_name: name, options: ['map', [['csum', 'true']]] } },
    { op: 'insert', table: 'Chassis', row: { name, hostname, encaps: ['named-uuid', 'e'] } },
  ];
  const a = replica();
  const before = [
    nbEntry([{ op: 'insert', table: 'Logical_Switch', row: { name: 'sw' } }]),
    nbEntry([...addLsp('sw', 'p1', { options: ['map', [['requested-chassis', 'node-a']]] }), ...addLsp('sw', 'p2', { options: ['map', [['requested-chassis', 'hv2,node-a']]] })]),
    sbEntry(chassis('hv1', 'node-a', '192.0.2.1')),
    sbEntry(chassis('hv2', 'node-b', '192.0.2.2')),
  ];
  for (const e of before) t.equal(a.sm.apply(e, false).kind, 'committed');
  const b = replica();
  b.sm.restore(a.sm.snapshot());
  const after = [
    sbEntry([{ op: 'update', table: 'Chassis', where: [['name', '==', 'hv1']], row: { hostname: 'node-c' } }]),
    sbEntry([{ op: 'update', table: 'Chassis', where: [['name', '==', 'hv2']], row: { hostname: 'node-a' } }]),
  ];
  const bindings = (r: { projection: NorthdProjection }): sb.Port_Binding[] =>
    ([...(r.projection.view().get('Port_Binding')?.values() ?? [])] as unknown as sb.Port_Binding[]).sort((x, y) => (x.logical_port < y.logical_port ? -1 : 1));
  const requested = (r: { projection: NorthdProjection }): string[] =>
    bindings(r).map((p) => `${p.logical_port}:${p.requested_chassis.length}+${p.requested_additional_chassis.length}`);
  t.same(requested(a), ['p1:1+0', 'p2:1+1'], 'p1 asks for hv1 by hostname; p2 for hv2, then hv1 by hostname');
  t.same(requested(b), requested(a), 'the restored replica agrees');
  for (const e of after) {
    t.equal(a.sm.apply(e, false).kind, 'committed');
    b.sm.apply(e, false);
  }
  const main = (r: { projection: NorthdProjection }, port: string): readonly string[] => bindings(r).find((p) => p.logical_port === port)?.requested_chassis ?? [];
  t.same(main(a, 'p1'), main(a, 'p2'), 'node-a is hv2\'s hostname now (p2 names hv2 first)');
  t.same(bindings(a).find((p) => p.logical_port === 'p2')?.requested_additional_chassis, main(a, 'p2'), 'and p2\'s additional chassis is hv2 too');
  t.equal(viewText(b.projection.view()), viewText(a.projection.view()), 'and the restored replica follows the hostnames it restored');
  const c = replica();
  for (const e of [...before, ...after]) c.sm.apply(e, false);
  t.equal(viewText(c.projection.view()), viewText(a.projection.view()), 'as does one that applied the whole log');
});

t.test('northd history: Service_Monitor statuses and the registered Chassis round-trip; a format 1 history (from before both) still restores', async (t) => {
  const packr = new Packr({ useRecords: false });
  const h = {
    datapathKeys: [['00000000-0000-4000-8000-000000000001', 1]] as const, portKeys: [['00000000-0000-4000-8000-000000000002', 'vm1', 1]] as const,
    chassisOwned: [['vm1', { chassis: ['c1-uuid'], up: [true] }]] as const, serviceMonitorStatus: [['00000000-0000-4000-8000-000000000003', 'offline']] as const,
    chassis: [['hv1', 'c1-uuid']] as const, igmpKeys: [] as const,
  };
  t.same(decodeNorthdHistory(encodeNorthdHistory(h)), h, 'format 2 round trip: statuses and Chassis both');
  t.same(packr.unpack(encodeNorthdHistory(h)), [2, h.datapathKeys, h.portKeys, [['vm1', [['chassis', ['c1-uuid']], ['up', [true]]]]], h.serviceMonitorStatus, h.chassis],
    'format 2 is [2, datapath keys, port keys, chassis-owned columns, statuses, Chassis]');
  const v1 = packr.pack([1, h.datapathKeys, h.portKeys, [['vm1', [['chassis', ['c1-uuid']], ['up', [true]]]]]]);
  t.same(decodeNorthdHistory(v1, [['hv9', 'u9']]), { ...h, serviceMonitorStatus: [], chassis: [['hv9', 'u9']] }, 'format 1: no statuses, the Chassis given beside it');
  // Learned multicast groups' keys: format 3, written only when there are some.
  const h3 = { ...h, igmpKeys: [['00000000-0000-4000-8000-000000000001', '239.1.1.1', 32773]] as const };
  t.same(decodeNorthdHistory(encodeNorthdHistory(h3)), h3, 'format 3 round trip: the learned groups\' keys');
  t.equal((packr.unpack(encodeNorthdHistory(h3)) as unknown[])[0], 3, 'with learned groups, format 3');
  t.throws(() => decodeNorthdHistory(packr.pack([3, [], [], [], [], []])), /unknown format/, 'format 3 has seven parts');
  t.throws(() => decodeNorthdHistory(packr.pack([3, [], [], [], [], [], 'x'])), /malformed/, 'the learned keys must be a list');
  t.same(decodeNorthdHistory(v1), { ...h, serviceMonitorStatus: [], chassis: [] }, 'format 1 without a chassis database: no Chassis');
  t.throws(() => decodeNorthdHistory(packr.pack([2, [], [], []])), /unknown format/, 'format 2 has six parts');
  t.throws(() => decodeNorthdHistory(packr.pack([2, [], [], [], []])), /unknown format/, 'a five-part format 2 (statuses or Chassis alone, never released) is refused');
  t.throws(() => decodeNorthdHistory(packr.pack([1, [], [], [], []])), /unknown format/, 'format 1 has four parts');
  t.throws(() => decodeNorthdHistory(packr.pack([2, [], [], [], [], 'x'])), /malformed/, 'the Chassis must be a list');
  // Drop sampling kept in force through a refused domain: format 4, written only then.
  const h4 = { ...h3, dropSampling: [123, 5] as const };
  t.same(decodeNorthdHistory(encodeNorthdHistory(h4)), h4, 'format 4 round trip: the drop sampling kept in force');
  t.equal((packr.unpack(encodeNorthdHistory(h4)) as unknown[])[0], 4, 'with drop sampling kept, format 4');
  t.same(decodeNorthdHistory(encodeNorthdHistory({ ...h, dropSampling: [1, 0] })), { ...h, dropSampling: [1, 0] }, 'format 4 without learned groups');
  t.equal(decodeNorthdHistory(encodeNorthdHistory(h3)).dropSampling, undefined, 'a format 3 history keeps no drop sampling: the options say what is in force');
  t.throws(() => decodeNorthdHistory(packr.pack([4, [], [], [], [], [], []])), /unknown format/, 'format 4 has eight parts');
  for (const bad of [[0, 5], [123, 255], [123], [2 ** 32, 1], [1.5, 1], 'x', null]) {
    t.throws(() => decodeNorthdHistory(packr.pack([4, [], [], [], [], [], [], bad])), /malformed drop sampling/, `format 4 refuses ${JSON.stringify(bad)}`);
  }
  // Through a NorthdProjection: what a snapshot carries is what a restore starts from.
  const restored = new NorthdProjection();
  restored.restore(new Database(parseDatabaseSchema(NB_SCHEMA_JSON)), encodeNorthdHistory(h), 5);
  t.same(restored.history().chassis, h.chassis, 'a restored projection has the Chassis of the history');
  t.equal(restored.history().dropSampling, undefined);
});

t.test('drop sampling kept through a refused domain: a restored replica empties the drops as the one it came from', async (t) => {
  let n = 0;
  const entry = (ops: unknown[]): Entry => ({ term: 1, index: ++n, type: 'normal', data: encodeCommand(nbTxn(ops, [n, 1, 2, 3])) });
  const options = (collectorSet: string, domain: string): unknown => ['map', [['debug_drop_collector_set', collectorSet], ['debug_drop_domain_id', domain]]];
  const sample = 'sample(probability=65535,collector_set=9,obs_domain=3,obs_point=$cookie); /* drop */';
  const withActions = (r: { projection: NorthdProjection }, pick: (actions: string) => boolean): number =>
    [...(r.projection.view().get('Logical_Flow')?.values() ?? [])].filter((f) => pick(String(f['actions']))).length;
  const sampled = (r: { projection: NorthdProjection }): number => withActions(r, (a) => a.endsWith(sample));
  // While a refused domain holds sampling on, every drop is written without text (northd/drop-sampling.ts).
  const emptied = (r: { projection: NorthdProjection }): number => withActions(r, (a) => a === '');
  const plain = (r: { projection: NorthdProjection }): number => withActions(r, (a) => a === 'drop;');
  const a = replica();
  const before = [
    entry([{ op: 'insert', table: 'NB_Global', row: { options: options('9', '3') } }]),
    entry([{ op: 'insert', table: 'Logical_Switch', row: { name: 'ls0' } }, { op: 'insert', table: 'Logical_Router', row: { name: 'lr0' } }]),
  ];
  for (const e of before) a.sm.apply(e, false);
  const count = sampled(a);
  t.ok(count > 10, `the switch and router sample their drops (${count} flows)`);
  const refused = entry([{ op: 'update', table: 'NB_Global', where: [], row: { options: options('9', '300') } }]);
  before.push(refused);
  a.sm.apply(refused, false);
  t.same([emptied(a), sampled(a)], [count, 0], 'the domain 300 is refused: the drops are emptied');
  t.same(a.projection.history().dropSampling, [9, 3], '9/3 stays in force, in the history');
  const snapshot = a.sm.snapshot();
  const b = replica();
  b.sm.restore(snapshot);
  t.equal(viewText(b.projection.view()), viewText(a.projection.view()), 'restored: the same view');
  t.equal(emptied(b), count, 'the drops emptied as on the replica it came from');
  // A switch added after the restore has its drops emptied on both (the kept setting is in force
  // there too), and so with collector set 0 beside another refused domain.
  const after = [entry([{ op: 'insert', table: 'Logical_Switch', row: { name: 'ls1' } }]), entry([{ op: 'update', table: 'NB_Global', where: [], row: { options: options('0', '255') } }])];
  for (const e of after) {
    a.sm.apply(e, false);
    b.sm.apply(e, false);
  }
  // ls1 shares ls0's flow shard (keys given lowest-free first), so its drops are rows it shares.
  const ls1 = [...(a.projection.view().get('Datapath_Binding')?.values() ?? [])].find((b) => (b['external_ids'] as ReadonlyMap<string, string>).get('name') === 'ls1')?._uuid;
  const emptiedOfLs1 = [...(a.projection.view().get('Logical_Flow')?.values() ?? [])]
    .filter((f) => f['actions'] === '' && flowDatapaths(a.projection.view(), f as unknown as sb.Logical_Flow).includes(ls1 ?? '')).length;
  t.ok(emptiedOfLs1 > 0 && emptied(a) >= count && plain(a) === 0, `the new switch's drops are emptied too (${emptiedOfLs1} flows)`);
  t.equal(viewText(b.projection.view()), viewText(a.projection.view()), 'and the restored replica follows');
  const c = replica();
  for (const e of [...before, ...after]) c.sm.apply(e, false);
  t.equal(viewText(c.projection.view()), viewText(a.projection.view()), 'as does one that applied the whole log');
  // An old snapshot (no drop sampling in its history) restores as "off unless the options say".
  const d = replica();
  const held = a.projection.history();
  const older: NorthdHistory = {
    datapathKeys: held.datapathKeys, portKeys: held.portKeys, chassisOwned: held.chassisOwned, serviceMonitorStatus: held.serviceMonitorStatus, chassis: held.chassis, igmpKeys: held.igmpKeys,
  };
  t.equal((new Packr({ useRecords: false }).unpack(encodeNorthdHistory(older)) as unknown[])[0], 2, 'written as format 2');
  d.projection.restore(a.sm.nb, encodeNorthdHistory(older), n);
  t.same([emptied(d), sampled(d), plain(d) > 0], [0, 0, true], 'a history without it: plain drops while the options name a refused domain');
});

t.test('the SB delta listener: every change, in revision order, folding to the view', async (t) => {
  const r = replica();
  const rng = new Rng(42);
  for (let i = 1; i <= 80; i++) r.sm.apply({ term: 1, index: i * 2, type: 'normal', data: encodeCommand(nbTxn(randomOps(rng, r.sm.nb, i), seedOf(rng))) }, false);
  r.sm.apply({ term: 1, index: 162, type: 'normal', data: encodeCommand(nbTxn([{ op: 'insert', table: 'Logical_Switch', row: { name: 'final' } }], [7, 7, 7, 7])) }, false);
  t.ok(r.revisions.length > 20, `${r.revisions.length} SB deltas`);
  t.ok(strictlyIncreasing(r.revisions), 'revisions strictly increase');
  t.ok(r.revisions.every((x) => x % 2 === 0), 'each delta is tagged with the revision (log index) of its NB transaction');
  t.same(r.problems, [], 'every change starts from the row the listener holds');
  t.equal(viewText(r.folded), viewText(r.projection.view()), 'folding every delta gives the view');
  t.equal(r.projection.lastChange()?.revision, r.revisions.at(-1));
  const stats = r.projection.stats();
  t.equal(stats.revision, 162);
  t.equal(r.revisions.at(-1), 162);
  t.ok(stats.applies >= r.revisions.length - 1 && stats.applies <= 81, `one apply per NB transaction that changed something (${stats.applies})`);
  t.equal(r.revisions[0], 0, 'the first delta is the initial computation (SB_Global) at revision 0');
  t.ok((stats.rows.Datapath_Binding ?? 0) >= 1);
  // A restore is one delta too: from the current view to the restored one.
  const other = replica();
  for (let i = 1; i <= 10; i++) other.sm.apply({ term: 1, index: 1000 + i, type: 'normal', data: encodeCommand(nbTxn(randomOps(rng, other.sm.nb, i), seedOf(rng))) }, false);
  other.sm.restore(r.sm.snapshot());
  t.equal(other.revisions.at(-1), 162);
  t.equal(viewText(other.folded), viewText(r.projection.view()), 'after a restore the folded deltas give the restored view');
  t.same(other.problems, []);
  const off = r.projection.onSbChange(() => t.fail('unsubscribed listener called'));
  off();
  r.sm.apply({ term: 1, index: 163, type: 'normal', data: encodeCommand(nbTxn([{ op: 'insert', table: 'Logical_Switch', row: { name: 'late' } }], [9, 9, 9, 9])) }, false);
});

async function waitFor(what: string, cond: () => boolean, timeoutMs = 15_000): Promise<void> {
  const started = Date.now();
  while (!cond()) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

t.test('three central nodes with compaction; a stopped node restarts and catches up to the same SB view', async (t) => {
  const dir = testdirAfterTeardowns(t);
  const net = new LocalNetwork('northd-central');
  const ids = [1, 2, 3];
  const peers = new Map(ids.map((id) => [id, `local:${id}`]));
  const start = (id: number): Promise<CentralNode> =>
    Central.start({ id, clusterId: 'northd-central', dataDir: join(dir, `n${id}`), transport: net.transport(id), peers, bootstrap: ids, tickMs: 10, snapshotEntries: 5, snapshotLogRatio: 0 });
  const nodes = new Map<number, CentralNode>();
  for (const id of ids) nodes.set(id, await start(id));
  t.teardown(async () => {
    for (const n of nodes.values()) await n.stop();
  });
  const leader = async (): Promise<CentralNode> => {
    let found: CentralNode | undefined;
    await waitFor('a leader', () => (found = [...nodes.values()].find((n) => n.node.status().role === 'leader')) !== undefined);
    return found as CentralNode;
  };
  const rng = new Rng(2026);
  const write = async (count: number, base: number): Promise<void> => {
    for (let i = 0; i < count; i++) {
      // A leader may hand leadership away before a slow snapshot (under load): a write it
      // refused as "not the leader" never reached the log, and goes to the new leader.
      for (let attempt = 0; ; attempt++) {
        const l = await leader();
        const ops = randomOps(rng, l.sm.nb, base + i);
        if (ops.length === 0) break;
        try {
          await l.transact(ops);
          break;
        } catch (err) {
          if (attempt >= 3 || !/is not the leader/.test((err as Error).message)) throw err;
        }
      }
    }
  };
  await write(25, 0);
  const l0 = await leader();
  const victim = ids.find((id) => id !== l0.id) ?? 3;
  await (nodes.get(victim) as CentralNode).stop();
  nodes.delete(victim);
  await write(40, 100);
  const restarted = await start(victim);
  nodes.set(victim, restarted);
  const target = (await leader()).revision;
  await waitFor('every node applied the last write', () => [...nodes.values()].every((n) => n.revision >= target));
  const views = [...nodes.values()].map((n) => {
    const p = n.northd;
    if (p === undefined) throw new Error('no northd projection');
    return viewText(p.view());
  });
  t.equal(new Set(views).size, 1, 'all three SB views are identical');
  t.ok((restarted.northd?.stats().restores ?? 0) >= 1, 'the restarted node restored from a snapshot (its own or the leader\'s)');
  t.ok((restarted.northd?.history().portKeys.length ?? 0) > 0, 'with ports bound');
  t.ok([...nodes.values()].every((n) => n.node.status().counters.snapshotsTaken > 0 || n === restarted), 'compaction happened');

  // The SB view, read-only through the Northbound API (db = OVN_Southbound).
  const server = new grpc.Server();
  server.addService(northboundDefinition(), northboundHandlers(restarted));
  const port = await new Promise<number>((res, rej) => server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? rej(e) : res(p))));
  const client = new NorthboundClient(`127.0.0.1:${port}`);
  t.teardown(() => {
    client.close();
    server.forceShutdown();
  });
  const viaApi = await client.list('Port_Binding', [], { db: 'OVN_Southbound', columns: ['logical_port', 'tunnel_key'] });
  const direct = await (await leader()).listSouthbound('Port_Binding', [], ['logical_port', 'tunnel_key'], 'linearizable');
  t.same(viaApi.rows, direct.rows, 'the restarted node serves the same Port_Binding rows as the leader');
  t.equal(viaApi.rows.length, restarted.northd?.view().get('Port_Binding')?.size);
  const one = viaApi.rows[0] as { logical_port: string; tunnel_key: number };
  const filtered = await client.list('Port_Binding', [['logical_port', '==', one.logical_port]], { db: 'OVN_Southbound', consistency: 'serializable' });
  t.equal(filtered.rows.length, 1, 'an OVSDB "where" selects SB rows');
  t.match(filtered.rows[0], { logical_port: one.logical_port, tunnel_key: one.tunnel_key, _uuid: ['uuid', String] });
  t.same((await client.list('Chassis', [], { db: 'OVN_Southbound' })).rows, [], 'tables northd does not fill are empty');
  await t.rejects(client.list('Nope', [], { db: 'OVN_Southbound' }), { code: grpc.status.INVALID_ARGUMENT });
  await t.rejects(client.list('Logical_Switch', [], { db: 'OVN_Southbound' }), { code: grpc.status.INVALID_ARGUMENT }, 'an NB table is not in the SB view');
  t.equal((await client.list('Logical_Switch', [], { db: 'OVN_Northbound' })).rows.length, restarted.sm.nb.rows('Logical_Switch').size, 'the NB database as before');
});
