// OVSDB role-based access control (ovsdb/rbac.ts) as ovsdb-server 3.1 applies it: who a row's
// authorization names, what each operation needs, the refusal texts word for word, and the
// gate inside the transaction engine, where each operation sees the transaction's earlier ones.
// Method: a small schema, a permission table, transactions and exact expectations.
import t from 'tap';
import type { RbacPermission, Row } from '../../ovsdb/index.js';
import { Database, dumpDatabaseJson, parseDatabaseSchema, rbacAuthorized, rbacGate, transact } from '../../ovsdb/index.js';

const schema = parseDatabaseSchema({
  name: 'Rbac_Test',
  version: '1.0.0',
  tables: {
    Chassis: {
      isRoot: true,
      indexes: [['name']],
      columns: {
        name: { type: 'string' },
        hostname: { type: 'string' },
        nb_cfg: { type: 'integer' },
        external_ids: { type: { key: 'string', value: 'string', min: 0, max: 'unlimited' } },
        owner: { type: { key: 'string', min: 0, max: 1 } },
        tags: { type: { key: 'string', min: 0, max: 'unlimited' } },
      },
    },
    Encap: { isRoot: true, columns: { chassis_name: { type: 'string' }, ip: { type: 'string' } } },
    Shared: { isRoot: true, columns: { value: { type: 'string' } } },
    Fixed: { isRoot: true, columns: { value: { type: 'string' } } },
    Private: { isRoot: true, columns: { value: { type: 'string' } } },
  },
});
const table = (name: string): NonNullable<ReturnType<typeof schema.tables.get>> => schema.tables.get(name) as NonNullable<ReturnType<typeof schema.tables.get>>;

/** The role "hv": its own Chassis (by name) and Encap (by chassis_name); any Shared row; Fixed rows updated, never inserted or deleted; nothing on Private. */
const permissions: Record<string, RbacPermission> = {
  Chassis: { table: 'Chassis', authorization: ['name'], insertDelete: true, update: ['nb_cfg', 'external_ids', 'name'] },
  Encap: { table: 'Encap', authorization: ['chassis_name'], insertDelete: true, update: ['ip'] },
  Shared: { table: 'Shared', authorization: [''], insertDelete: true, update: ['value'] },
  Fixed: { table: 'Fixed', authorization: [''], insertDelete: false, update: ['value'] },
};
const lookup = (role: string, name: string): RbacPermission | undefined => (role === 'hv' ? permissions[name] : undefined);

const row = (values: Record<string, unknown>): Row => ({ _uuid: '00000000-0000-4000-8000-000000000001', _version: '00000000-0000-4000-8000-000000000002', ...values }) as unknown as Row;
const chassis = (name: string, extra: Record<string, unknown> = {}): Row => row({ name, hostname: '', nb_cfg: 0, external_ids: new Map<string, string>(), owner: [], tags: [], ...extra });

t.test('authorization: "" is anyone, "col" a string column, "col:key" a map entry; the first match suffices', async (t) => {
  const perm = (authorization: string[]): RbacPermission => ({ table: 'Chassis', authorization, insertDelete: true, update: [] });
  const hv1 = chassis('hv1', { external_ids: new Map([['system-id', 'sys1']]), owner: ['o1'], hostname: 'host1', tags: ['hv1'] });
  const c = table('Chassis');
  t.ok(rbacAuthorized(perm(['']), 'anyone', c, hv1), '"" authorizes every client');
  t.ok(rbacAuthorized(perm(['name']), 'hv1', c, hv1), 'the row\'s name is the id');
  t.notOk(rbacAuthorized(perm(['name']), 'hv2', c, hv1), 'another id is not');
  t.ok(rbacAuthorized(perm(['external_ids:system-id']), 'sys1', c, hv1), 'a map column at a key');
  t.notOk(rbacAuthorized(perm(['external_ids:system-id']), 'hv1', c, hv1), 'the map entry, not the name');
  t.notOk(rbacAuthorized(perm(['external_ids:other']), 'sys1', c, hv1), 'a key the map lacks matches no one');
  t.ok(rbacAuthorized(perm(['owner']), 'o1', c, hv1), 'an optional string column holding one value');
  t.notOk(rbacAuthorized(perm(['owner']), 'o1', c, chassis('hv1')), 'an empty optional column matches no one');
  t.notOk(rbacAuthorized(perm(['tags']), 'hv1', c, hv1), 'a set of strings is not a string column');
  t.notOk(rbacAuthorized(perm(['nb_cfg']), '0', c, hv1), 'nor is an integer column');
  t.notOk(rbacAuthorized(perm(['no_such_column', 'name:x']), 'hv1', c, hv1), 'a missing column, or a key of a non-map column, matches no one');
  t.ok(rbacAuthorized(perm(['hostname', 'name']), 'hv1', c, hv1), 'any one of several suffices');
  t.notOk(rbacAuthorized(perm([]), 'hv1', c, hv1), 'no authorization at all: no one');
});

t.test('the gate: each operation as ovsdb-server judges it, with its refusal text', async (t) => {
  const hv1 = rbacGate({ role: 'hv', id: 'hv1' }, lookup);
  const c = table('Chassis');
  const e = table('Encap');
  t.equal(hv1.insert(c, chassis('hv1')), undefined, 'hv1 inserts its own Chassis');
  t.equal(hv1.insert(c, chassis('hv2')), 'RBAC rules for client "hv1" role "hv" prohibit row insertion into table "Chassis".', 'not another\'s');
  t.equal(hv1.insert(e, row({ chassis_name: 'hv1', ip: '192.0.2.1' })), undefined, 'its Encap by chassis_name');
  t.equal(hv1.insert(e, row({ chassis_name: 'hv2', ip: '192.0.2.1' })), 'RBAC rules for client "hv1" role "hv" prohibit row insertion into table "Encap".');
  t.equal(hv1.insert(table('Fixed'), row({ value: 'x' })), 'RBAC rules for client "hv1" role "hv" prohibit row insertion into table "Fixed".', 'insert_delete false: no insert, even authorized');
  t.equal(hv1.insert(table('Private'), row({ value: 'x' })), 'RBAC rules for client "hv1" role "hv" prohibit row insertion into table "Private".', 'no permission on the table');

  t.equal(hv1.update(c, [chassis('hv1')], ['nb_cfg', 'external_ids']), undefined, 'its own row, listed columns');
  t.equal(hv1.update(c, [chassis('hv1')], ['nb_cfg', 'hostname']), 'RBAC rules for client "hv1" role "hv" prohibit modification of table "Chassis".', 'a column not in update');
  t.equal(hv1.update(c, [chassis('hv1'), chassis('hv2')], ['nb_cfg']), 'RBAC rules for client "hv1" role "hv" prohibit modification of table "Chassis".', 'one row of another chassis among those selected');
  t.equal(hv1.update(c, [], ['hostname']), undefined, 'no row selected: allowed whatever it names (judged row by row)');
  t.equal(hv1.update(table('Fixed'), [row({ value: 'a' })], ['value']), undefined, 'Fixed rows may be updated');
  t.equal(hv1.update(table('Private'), [], ['value']), 'RBAC rules for client "hv1" role "hv" prohibit modification of table "Private".', 'no permission: refused even with no row selected');

  t.equal(hv1.mutate(c, [chassis('hv1')], ['nb_cfg']), undefined);
  t.equal(hv1.mutate(c, [chassis('hv2')], ['nb_cfg']), 'RBAC rules for client "hv1" role "hv" prohibit mutate operation on table "Chassis".');
  t.equal(hv1.mutate(c, [chassis('hv1')], ['tags']), 'RBAC rules for client "hv1" role "hv" prohibit mutate operation on table "Chassis".', 'a mutated column not in update');
  t.equal(hv1.mutate(c, [], ['tags']), undefined, 'no row: allowed');
  t.equal(hv1.mutate(table('Private'), [], ['value']), 'RBAC rules for client "hv1" role "hv" prohibit mutate operation on table "Private".');

  t.equal(hv1.delete(c, [chassis('hv1')]), undefined, 'its own row');
  t.equal(hv1.delete(c, [chassis('hv1'), chassis('hv3')]), 'RBAC rules for client "hv1" role "hv" prohibit row deletion from table "Chassis".', 'not with another\'s among them');
  t.equal(hv1.delete(table('Fixed'), [row({ value: 'a' })]), 'RBAC rules for client "hv1" role "hv" prohibit row deletion from table "Fixed".', 'insert_delete false');
  t.equal(hv1.delete(table('Fixed'), []), undefined, 'no row: allowed');
  t.equal(hv1.delete(table('Private'), []), 'RBAC rules for client "hv1" role "hv" prohibit row deletion from table "Private".');
});

t.test('a client without an id, and a role without permissions, may write nothing', async (t) => {
  const anonymous = rbacGate({ role: 'hv' }, lookup);
  const s = table('Shared');
  t.equal(anonymous.insert(s, row({ value: 'x' })), 'RBAC rules for client "(null)" role "hv" prohibit row insertion into table "Shared".', 'no id: printed as ovsdb-server prints a null string');
  t.equal(anonymous.update(s, [], ['value']), 'RBAC rules for client "(null)" role "hv" prohibit modification of table "Shared".', 'even with no row selected');
  t.equal(anonymous.mutate(s, [], ['value']), 'RBAC rules for client "(null)" role "hv" prohibit mutate operation on table "Shared".');
  t.equal(anonymous.delete(s, []), 'RBAC rules for client "(null)" role "hv" prohibit row deletion from table "Shared".');
  const stranger = rbacGate({ role: 'nobody', id: 'hv1' }, lookup);
  t.equal(stranger.insert(s, row({ value: 'x' })), 'RBAC rules for client "hv1" role "nobody" prohibit row insertion into table "Shared".', 'an unknown role has no permission anywhere');
  t.equal(stranger.update(table('Chassis'), [chassis('hv1')], ['nb_cfg']), 'RBAC rules for client "hv1" role "nobody" prohibit modification of table "Chassis".');
  t.throws(() => rbacGate({ role: '' }, lookup), /empty role means no RBAC/, 'an empty role is no RBAC, not a role');
});

t.test('in a transaction each operation sees the earlier ones, and a refusal changes nothing', async (t) => {
  let n = 0;
  const newUuid = (): string => `00000000-0000-4000-8000-${(++n).toString(16).padStart(12, '0')}`;
  const db = new Database(schema);
  const setup = transact(db, [
    { op: 'insert', table: 'Chassis', row: { name: 'hv2' } },
    { op: 'insert', table: 'Fixed', row: { value: 'a' } },
  ], { newUuid });
  t.equal(setup.kind, 'committed', 'rows written without RBAC');
  const rbac = rbacGate({ role: 'hv', id: 'hv1' }, lookup);

  const own = transact(db, [
    { op: 'insert', table: 'Chassis', 'uuid-name': 'c', row: { name: 'hv1' } },
    { op: 'update', table: 'Chassis', where: [['_uuid', '==', ['named-uuid', 'c']]], row: { nb_cfg: 5 } },
    { op: 'mutate', table: 'Chassis', where: [['name', '==', 'hv1']], mutations: [['external_ids', 'insert', ['map', [['k', 'v']]]]] },
    { op: 'insert', table: 'Encap', row: { chassis_name: 'hv1', ip: '192.0.2.1' } },
    { op: 'update', table: 'Fixed', where: [], row: { value: 'b' } },
  ], { newUuid, rbac });
  t.match(own, { kind: 'committed', results: [{ uuid: ['uuid', /./] }, { count: 1 }, { count: 1 }, { uuid: ['uuid', /./] }, { count: 1 }] },
    'hv1 inserts its Chassis and updates and mutates it in the same transaction: the update sees the row the insert made');
  const hv1 = [...db.rows('Chassis').values()].find((r) => r.name === 'hv1');
  t.equal(hv1?.nb_cfg, 5);

  const before = JSON.stringify(dumpDatabaseJson(db));
  const renamed = transact(db, [
    { op: 'update', table: 'Chassis', where: [['name', '==', 'hv1']], row: { name: 'hv1-old' } },
    { op: 'update', table: 'Chassis', where: [['name', '==', 'hv1-old']], row: { nb_cfg: 6 } },
  ], { newUuid, rbac });
  t.same(renamed, {
    kind: 'failed',
    results: [{ count: 1 }, { error: 'permission error', details: 'RBAC rules for client "hv1" role "hv" prohibit modification of table "Chassis".' }],
    error: renamed.kind === 'failed' ? renamed.error : undefined,
  }, 'once an earlier operation renamed the row, it is no longer hv1\'s: the second update is judged on the row as the first left it');
  t.equal(JSON.stringify(dumpDatabaseJson(db)), before, 'and the refused transaction changed nothing, the first update included');

  const others = transact(db, [
    { op: 'update', table: 'Chassis', where: [['name', '==', 'hv1']], row: { nb_cfg: 7 } },
    { op: 'delete', table: 'Chassis', where: [['name', '==', 'hv2']] },
    { op: 'insert', table: 'Chassis', row: { name: 'hv3' } },
  ], { newUuid, rbac });
  t.same(others.kind === 'failed' ? others.results : others, [{ count: 1 }, { error: 'permission error', details: 'RBAC rules for client "hv1" role "hv" prohibit row deletion from table "Chassis".' }, null],
    'hv2\'s Chassis may not be deleted; the operations after the refused one are not run');
  t.equal(JSON.stringify(dumpDatabaseJson(db)), before, 'nothing changed');

  const reads = transact(db, [
    { op: 'select', table: 'Private', where: [] },
    { op: 'wait', table: 'Chassis', where: [['name', '==', 'hv2']], columns: ['name'], until: '==', rows: [{ name: 'hv2' }], timeout: 0 },
    { op: 'delete', table: 'Private', where: [['value', '==', 'none']] },
  ], { newUuid, rbac });
  t.same(reads.kind === 'failed' ? reads.results : reads, [{ rows: [] }, {}, { error: 'permission error', details: 'RBAC rules for client "hv1" role "hv" prohibit row deletion from table "Private".' }],
    'reads are never restricted; a write to a table without a permission is, even when it selects no row');
});
