// Goal: a transaction the central refuses without proposing it (the precheck finds an "abort"
// or a malformed operation) is answered as ovsdb-server answers it: the operations before the
// failing one report what they read from the database's rows (a select's rows, an update's
// count, an insert's fresh UUID), and nothing changes. `ovsdb-client query` is such a
// transaction: its operations, then "abort".
// Method: the same rows in a real ovsdb-server (NB schema) and a one-member central; each
// refused transaction goes to both, and their results must be equal once insert UUIDs are
// checked and masked; the rows must be unchanged on both. Then `ovsdb-client query` through
// the OVSDB door and against the real server must print the same.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';
import t, { type Test } from 'tap';
import { NB_SCHEMA_PATH, startDoorBesideReal } from '../helpers/door-beside-real.js';
import { normalizeResults, realTransact } from '../helpers/differential.js';
import { JsonRpcClient } from '../helpers/jsonrpc-client.js';
import type { Json } from '../helpers/ovsdb-json.js';

const run = promisify(execFile);
const haveTools = existsSync('/usr/sbin/ovsdb-server') && existsSync('/usr/bin/ovsdb-client') && existsSync(NB_SCHEMA_PATH);

const switches = { op: 'select', table: 'Logical_Switch', where: [], columns: ['name', 'other_config'] };
const ports = { op: 'select', table: 'Logical_Switch_Port', where: [['name', '!=', 'none']], columns: ['name', 'addresses'] };

const seed: Json[] = [
  { op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': 'p1', row: { name: 'p1', addresses: '00:00:00:00:00:01 10.0.0.1' } },
  { op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': 'p2', row: { name: 'p2' } },
  { op: 'insert', table: 'Logical_Switch', row: { name: 'sw0', ports: ['set', [['named-uuid', 'p1'], ['named-uuid', 'p2']]] } },
  { op: 'insert', table: 'Logical_Switch', row: { name: 'sw1', other_config: ['map', [['k', 'v']]] } },
];

/** Refused before any proposal: each ends in "abort" or a malformed operation. */
const refused: { name: string; ops: Json[] }[] = [
  { name: 'select, abort (ovsdb-client query)', ops: [switches, { op: 'abort' }] },
  { name: 'two selects, abort', ops: [switches, ports, { op: 'abort' }] },
  { name: 'insert, select, abort: the select sees the insert and the rows', ops: [{ op: 'insert', table: 'Logical_Switch', row: { name: 'sw9' } }, switches, { op: 'abort' }] },
  { name: 'update and mutate counts, abort', ops: [{ op: 'update', table: 'Logical_Switch', where: [['name', '==', 'sw1']], row: { other_config: ['map', [['k', 'w']]] } }, { op: 'mutate', table: 'Logical_Switch', where: [], mutations: [['other_config', 'insert', ['map', [['m', '1']]]]] }, switches, { op: 'abort' }] },
  { name: 'delete count, select, abort', ops: [{ op: 'delete', table: 'Logical_Switch', where: [['name', '==', 'sw1']] }, switches, { op: 'abort' }] },
  { name: 'select, then an unknown table', ops: [ports, { op: 'select', table: 'No_Such_Table', where: [] }] },
  { name: 'select, then a wrong column type', ops: [switches, { op: 'insert', table: 'Logical_Switch', row: { name: 7 } }] },
  { name: 'comment, abort', ops: [{ op: 'comment', comment: 'x' }, { op: 'abort' }] },
  { name: 'abort first', ops: [{ op: 'abort' }, switches] },
];

/** Insert results must name a UUID; the UUID itself differs between servers and is masked. */
function maskInsertUuids(t: Test, results: readonly Json[], who: string): Json[] {
  return results.map((r) => {
    if (r === null || typeof r !== 'object' || Array.isArray(r) || !Array.isArray(r['uuid'])) return r;
    const u = r['uuid'][1];
    t.match(u, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, `${who}: an insert names a UUID`);
    t.notMatch(u, /^00000000-0000-/, `${who}: not a placeholder`);
    return { uuid: 'masked' };
  });
}

t.test('refused transactions answer with what their operations read, as ovsdb-server does', { skip: haveTools ? false : 'ovsdb-server, ovsdb-client or the NB schema is missing' }, async (t) => {
  const { real, central, doorRemote } = await startDoorBesideReal(t, 'refused-txn');
  const client = await JsonRpcClient.connect({ path: real.socketPath });
  t.teardown(() => client.close());

  t.equal((await central.transact(seed)).failed, false, 'seeded here');
  t.notOk(JSON.stringify(await realTransact(client, 'OVN_Northbound', seed)).includes('"error"'), 'seeded there');
  const before = normalizeResults((await central.transact([switches, ports])).results as Json[]);
  t.same(before, normalizeResults(await realTransact(client, 'OVN_Northbound', [switches, ports])), 'the same rows on both');

  for (const c of refused) {
    const ours = await central.transact(c.ops);
    t.equal(ours.failed, true, `${c.name}: fails`);
    const theirs = await realTransact(client, 'OVN_Northbound', c.ops);
    t.same(normalizeResults(maskInsertUuids(t, ours.results as Json[], 'ours')), normalizeResults(maskInsertUuids(t, theirs, 'real')), c.name);
  }
  t.same(normalizeResults((await central.transact([switches, ports])).results as Json[]), before, 'nothing changed here');
  t.same(normalizeResults(await realTransact(client, 'OVN_Northbound', [switches, ports])), before, 'nor there');

  const query = JSON.stringify(['OVN_Northbound', switches, ports]);
  const viaDoor = await run('ovsdb-client', ['query', doorRemote, query]);
  const viaReal = await run('ovsdb-client', ['query', `unix:${real.socketPath}`, query]);
  t.same(normalizeResults(JSON.parse(viaDoor.stdout) as Json[]), normalizeResults(JSON.parse(viaReal.stdout) as Json[]), 'ovsdb-client query prints the same rows through the door');
  t.match(viaDoor.stdout, /sw0/, 'and they are the rows, not an empty answer');
});
