// The OVSDB client session against a real ovsdb-server: its replica equals a fresh select after
// every change (the oracle), through update2 diffs of maps, sets and optional columns; it
// survives cut connections, refused reconnects and garbage from the server by reconnecting and
// reporting the difference. Method: a real ovsdb-server (from startOvsSwitch), a proxy in front
// of it that cuts and injects, a seeded sequence of ovs-vsctl changes.
import path from 'node:path';
import t from 'tap';
import type { Test } from 'tap';
import type { Row, TableSchema, Value } from '../../ovsdb/index.js';
import { valueFromJson, valuesEqual } from '../../ovsdb/index.js';
import type { ReplicaChange } from '../../ovsdb/client.js';
import { OvsdbClient, applyColumnDiff, transactionError } from '../../ovsdb/client.js';
import { ConnectionClosedError, JsonRpcClient, parseEndpoint } from '../../ovsdb/jsonrpc-client.js';
import { parseDatabaseSchema } from '../../ovsdb/index.js';
import { until } from '../helpers/ovnts-cli.js';
import { ovsSwitchInstalled, startOvsSwitch } from '../helpers/ovs-switch.js';
import type { OvsSwitch } from '../helpers/ovs-switch.js';
import { startOvsdbProxy } from '../helpers/ovsdb-proxy.js';
import { Rng } from '../helpers/seeded-rng.js';

const skip = ovsSwitchInstalled() ? false : 'Open vSwitch is not installed';
const tables = { Open_vSwitch: ['external_ids', 'bridges'], Bridge: undefined, Port: undefined, Interface: ['name', 'type', 'external_ids', 'options', 'ofport'] };

t.test('applyColumnDiff: scalar replaced, set symmetric difference, map add/remove/replace', async (t) => {
  const set = { key: { type: 'integer' as const }, min: 0, max: 1, kind: 'set' as const };
  t.same(applyColumnDiff(set, [], 5), [5], 'an optional value appears');
  t.same(applyColumnDiff(set, [5], ['set', [5, 7]]), [7], 'and changes: the diff holds old and new');
  t.same(applyColumnDiff(set, [7], 7), [], 'and goes');
  t.throws(() => applyColumnDiff(set, [5], 6), 'a diff that would leave two values in an optional column is refused');
  const map = { key: { type: 'string' as const }, value: { type: 'string' as const }, min: 0, max: Infinity, kind: 'map' as const };
  const m = applyColumnDiff(map, new Map([['a', '1'], ['b', '2']]), ['map', [['a', '1'], ['b', '3'], ['c', '4']]]) as ReadonlyMap<string, string>;
  t.same([...m], [['b', '3'], ['c', '4']], 'a equal pair is removed, a new value replaces, a new key is added');
  const scalar = { key: { type: 'string' as const }, min: 1, max: 1, kind: 'scalar' as const };
  t.equal(applyColumnDiff(scalar, 'x', 'y'), 'y');
});

t.test('parseEndpoint: unix:PATH, tcp:HOST:PORT and ssl:HOST:PORT, nothing else', async (t) => {
  t.same(parseEndpoint('unix:/run/db.sock'), { path: '/run/db.sock' });
  t.same(parseEndpoint('tcp:127.0.0.1:6640'), { host: '127.0.0.1', port: 6640 });
  t.same(parseEndpoint('tcp:[::1]:6640'), { host: '::1', port: 6640 });
  t.same(parseEndpoint('ssl:h:1'), { host: 'h', port: 1, ssl: true });
  for (const bad of ['unix:', 'tcp:127.0.0.1', 'tcp:h:0', 'tcp:h:70000', 'ssl:h:0', 'pssl:6640', '/run/db.sock', 'tcp:::1:5']) t.throws(() => parseEndpoint(bad), `${bad} is refused`);
});

/** Every monitored row as a fresh select returns it, decoded with the same schema. */
async function freshCopy(target: string): Promise<Map<string, Map<string, Row>>> {
  const c = await JsonRpcClient.connect(parseEndpoint(target));
  try {
    const schema = parseDatabaseSchema(await c.request('get_schema', ['Open_vSwitch']));
    const ops = Object.keys(tables).map((table) => ({ op: 'select', table, where: [] }));
    const results = (await c.request('transact', ['Open_vSwitch', ...ops])) as { rows: Record<string, unknown>[] }[];
    const out = new Map<string, Map<string, Row>>();
    Object.entries(tables).forEach(([table, cols], i) => {
      const ts = schema.tables.get(table) as TableSchema;
      const rows = new Map<string, Row>();
      for (const r of (results[i] as { rows: Record<string, unknown>[] }).rows) {
        const uuid = (r._uuid as [string, string])[1];
        const row: Record<string, Value> = { _uuid: uuid };
        for (const col of cols ?? [...ts.columns.keys()]) row[col] = valueFromJson(ts.columns.get(col)!.type, r[col]);
        rows.set(uuid, row as unknown as Row);
      }
      out.set(table, rows);
    });
    return out;
  } finally {
    await c.close();
  }
}

/** Differences between the client's replica and a fresh copy, as readable lines (none: equal). */
async function replicaDiff(client: OvsdbClient, target: string): Promise<string[]> {
  const fresh = await freshCopy(target);
  const out: string[] = [];
  for (const [table, rows] of fresh) {
    const ts = client.schema!.tables.get(table)!;
    const mine = client.table(table);
    for (const uuid of new Set([...rows.keys(), ...mine.keys()])) {
      const a = mine.get(uuid);
      const b = rows.get(uuid);
      if (a === undefined || b === undefined) {
        out.push(`${table} ${uuid}: ${a === undefined ? 'missing from' : 'extra in'} the replica`);
        continue;
      }
      for (const col of tables[table as keyof typeof tables] ?? [...ts.columns.keys()]) {
        if (!valuesEqual(ts.columns.get(col)!.type, a[col] as Value, b[col] as Value)) out.push(`${table} ${uuid}.${col} differs`);
      }
    }
  }
  return out;
}

async function startClient(t: Test, target: string, extra: Partial<ConstructorParameters<typeof OvsdbClient>[0]> = {}): Promise<{ client: OvsdbClient; changes: ReplicaChange[]; events: string[] }> {
  const changes: ReplicaChange[] = [];
  const events: string[] = [];
  const rng = new Rng(7);
  const client = new OvsdbClient({ target, database: 'Open_vSwitch', tables, reconnectMsMin: 20, reconnectMsMax: 200, random: () => rng.float(), onEvent: (e) => events.push(e.kind), ...extra });
  client.onChange((c) => changes.push(c));
  client.start();
  t.teardown(() => client.close());
  await client.whenSynced(30_000);
  return { client, changes, events };
}

t.test('against a real ovsdb-server', { skip }, async (t) => {
  const sw: OvsSwitch = await startOvsSwitch({ bridge: 'br-test' });
  t.teardown(() => sw.stop());
  const dbTarget = `unix:${path.join(sw.dir, 'db.sock')}`;

  await t.test('the replica follows a seeded sequence of changes exactly', async (t) => {
    const { client, changes } = await startClient(t, dbTarget);
    t.same(await replicaDiff(client, dbTarget), [], 'the initial copy equals a fresh select');
    t.ok(changes[0]?.resync, 'the first change is the initial copy, marked resync');
    const rng = new Rng(Number(process.env.OVNTS_SEED ?? 1));
    const ports: string[] = [];
    for (let step = 0; step < 25; step++) {
      const choice = rng.int(0, 4);
      if (choice === 0 || ports.length === 0) {
        const name = `q${step}`;
        ports.push(name);
        await sw.vsctl('add-port', 'br-test', name, '--', 'set', 'interface', name, 'type=dummy', `external_ids:iface-id=lp${step}`);
      } else if (choice === 1) {
        const name = ports.splice(rng.int(0, ports.length - 1), 1)[0]!;
        await sw.vsctl('del-port', 'br-test', name);
      } else if (choice === 2) {
        await sw.vsctl('set', 'interface', rng.pick(ports), `external_ids:k${rng.int(0, 2)}=v${rng.int(0, 2)}`);
      } else if (choice === 3) {
        await sw.vsctl('remove', 'interface', rng.pick(ports), 'external_ids', `k${rng.int(0, 2)}`);
      } else {
        await sw.vsctl('set', 'open_vswitch', '.', `external_ids:x=${rng.int(0, 3)}`);
      }
      // ovs-vsctl returns once ovsdb-server committed; our copy follows within moments.
      const diff = await until(() => `replica catches up after step ${step}`, async () => {
        const d = await replicaDiff(client, dbTarget);
        return d.length === 0 ? d : undefined;
      }, 20_000).catch(async () => replicaDiff(client, dbTarget));
      if (diff.length > 0) {
        t.same(diff, [], `step ${step}: the replica equals a fresh select (seed ${rng.seed})`);
        return;
      }
    }
    t.pass('after each of 25 steps the replica equals a fresh select');
    t.ok(changes.slice(1).every((c) => !c.resync), 'with live updates only: no reconnect happened');
  });

  await t.test('transact returns the results; a failed operation is spelled out', async (t) => {
    const { client } = await startClient(t, dbTarget);
    const ops = [{ op: 'select', table: 'Bridge', where: [['name', '==', 'br-test']], columns: ['name'] }];
    const ok = await client.transact(ops);
    t.same(ok, [{ rows: [{ name: 'br-test' }] }]);
    t.equal(transactionError(ops, ok), undefined);
    const bad = [{ op: 'insert', table: 'Bridge', row: { name: 'br-test' } }, { op: 'mutate', table: 'Open_vSwitch', where: [], mutations: [['bridges', 'insert', ['named-uuid', 'nope']]] }];
    const results = await client.transact(bad);
    const err = transactionError(bad, results);
    t.ok(err !== undefined, `a transaction that breaks a rule fails: ${err?.message}`);
  });

  await t.test('cut connections and refused reconnects: the replica resyncs with a diff', async (t) => {
    const proxy = await startOvsdbProxy(sw.dir, path.join(sw.dir, 'db.sock'));
    t.teardown(() => proxy.close());
    const { client, changes, events } = await startClient(t, proxy.target);
    proxy.refuse(true);
    proxy.cut();
    await until('the client sees the cut', async () => (client.isSynced ? undefined : true));
    await sw.vsctl('add-port', 'br-test', 'cut1', '--', 'set', 'interface', 'cut1', 'type=dummy', 'external_ids:iface-id=during-cut');
    await until('a refused attempt or two', async () => (proxy.accepted() >= 3 ? true : undefined));
    const refused = await client.transact([]).catch((e: unknown) => e);
    t.ok(refused instanceof ConnectionClosedError, 'transact fails fast while disconnected');
    const before = changes.length;
    proxy.refuse(false);
    await client.whenSynced(30_000);
    const resync = changes.slice(before).find((c) => c.resync);
    t.ok(resync?.rows.some((r) => r.table === 'Interface' && r.new?.name === 'cut1'), 'the row added while disconnected arrives in the resync diff');
    t.same(await replicaDiff(client, proxy.target), [], 'and the replica equals a fresh select');
    t.ok(events.filter((e) => e === 'disconnected').length >= 2, `it retried (${events.join(',')})`);
    await sw.vsctl('del-port', 'br-test', 'cut1');
    await until('the live update after the reconnect', async () => ([...client.table('Interface').values()].some((r) => r.name === 'cut1') ? undefined : true));
  });

  await t.test('garbage from the server drops the connection and the replica recovers', async (t) => {
    const proxy = await startOvsdbProxy(sw.dir, path.join(sw.dir, 'db.sock'));
    t.teardown(() => proxy.close());
    const { client, events } = await startClient(t, proxy.target);
    const cases: [string, string][] = [
      ['bytes that are not JSON', 'this is not json'],
      ['a JSON value that is not a message', '[1,2,3]'],
    ];
    for (const [what, text] of cases) {
      const accepted = proxy.accepted();
      proxy.inject(text);
      await until(`a new connection after ${what}`, async () => (proxy.accepted() > accepted && client.isSynced ? true : undefined));
      t.pass(`${what}: reconnected`);
    }
    // A monitor update that names a row the replica does not hold: the id must be the live one,
    // which the client does not expose; every id it has used is ovnts-N, so try them all.
    const accepted = proxy.accepted();
    for (let n = 1; n < 20; n++) {
      proxy.inject(JSON.stringify({ id: null, method: 'update2', params: [`ovnts-${n}`, { Interface: { '00000000-0000-0000-0000-000000000001': { modify: { name: 'x' } } } }] }));
    }
    await until('a new connection after an update for an unknown row', async () => (proxy.accepted() > accepted && client.isSynced ? true : undefined));
    t.pass('an update2 that modifies a row the replica lacks drops the connection');
    await sw.vsctl('set', 'open_vswitch', '.', 'external_ids:after-garbage=1');
    await until('the replica is current again', async () => ((await replicaDiff(client, proxy.target)).length === 0 ? true : undefined));
    t.ok(events.includes('connected'), 'and the session is live');
  });

  await t.test('inactivity probes: a server that stops answering is dropped', async (t) => {
    const proxy = await startOvsdbProxy(sw.dir, path.join(sw.dir, 'db.sock'));
    t.teardown(() => proxy.close());
    // A probe interval long enough for a loaded machine to answer a live connection's echo. A
    // connection opened during the stall may lose its get_schema reply and still answer later
    // echoes: the request timeout ends that one.
    const { client } = await startClient(t, proxy.target, { probeIntervalMs: 1_000, requestTimeoutMs: 3_000 });
    const accepted = proxy.accepted();
    // Pausing the upstream side makes the server silent without closing anything.
    proxy.stall(true);
    await until('the probe gives up', async () => (client.isSynced ? undefined : true), 20_000);
    proxy.stall(false);
    await client.whenSynced(30_000);
    t.ok(proxy.accepted() > accepted, 'and a new connection replaced the silent one');
  });
});
