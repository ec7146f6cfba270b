// The RBAC permission set ovnts enforces (northd/rbac.ts) is the one the real ovn-northd 23.03
// writes into the SB's RBAC_Role and RBAC_Permission, and our SB view shows it in those tables
// as ovn-northd writes them: same role, same tables, same authorization, insert_delete and
// update columns. Method: a real NB and SB ovsdb-server with ovn-northd between them in a temp
// folder; its rows read back and compared with the constant and with our northd's view.
import { existsSync } from 'node:fs';
import t from 'tap';
import type { Row } from '../../ovsdb/index.js';
import { Database, parseDatabaseSchema, transact } from '../../ovsdb/index.js';
import { NB_SCHEMA_JSON } from '../../ovsdb/schemas/index.js';
import { createNorthd } from '../../northd/index.js';
import { OVN_CONTROLLER_ROLE, ovnControllerPermissions, ovnRbacPermission, rbacPermissionUuid, rbacRoleUuid } from '../../northd/rbac.js';
import { until } from '../helpers/ovnts-cli.js';
import { startRealCentral } from '../helpers/real-ovn-controller.js';

const haveOvn = existsSync('/usr/bin/ovn-northd') && existsSync('/usr/sbin/ovsdb-server');

t.test('the lookup: the ovn-controller role\'s permissions, none for another role or table', async (t) => {
  t.same(ovnRbacPermission('ovn-controller', 'Encap'), { table: 'Encap', authorization: ['chassis_name'], insertDelete: true, update: ['type', 'options', 'ip'] });
  t.equal(ovnRbacPermission('ovn-controller', 'Logical_Flow'), undefined, 'a table northd derives and no chassis writes');
  t.equal(ovnRbacPermission('ovn-controller', 'Connection'), undefined, 'an operator\'s table');
  t.equal(ovnRbacPermission('ovn-ic', 'Encap'), undefined, 'a role OVN does not define');
});

t.test('equal to what the real ovn-northd 23.03 writes', { skip: haveOvn ? false : 'OVN is not installed' }, async (t) => {
  const real = await startRealCentral(t, 'northd-rbac-');
  const json = async (table: string): Promise<Record<string, unknown>[]> => {
    const out = JSON.parse(await real.sbctl('--format=json', 'list', table)) as { headings: string[]; data: unknown[][] };
    return out.data.map((row) => Object.fromEntries(out.headings.map((h, i) => [h, row[i]])));
  };
  const roles = await until('ovn-northd to write its RBAC rows', async () => {
    const rows = await json('RBAC_Role');
    return rows.length > 0 ? rows : undefined;
  });
  t.same(roles.map((r) => r.name), [OVN_CONTROLLER_ROLE], 'one role, ovn-controller');
  const set = (v: unknown): string[] => (Array.isArray(v) && v[0] === 'set' ? (v[1] as string[]) : [v as string]).slice().sort();
  const uuidOf = (v: unknown): string => (v as [string, string])[1];
  const byUuid = new Map((await json('RBAC_Permission')).map((p) => [uuidOf(p._uuid), p]));
  const theirs = (roles[0]?.permissions as ['map', [string, ['uuid', string]][]])[1].map(([table, ref]) => {
    const p = byUuid.get(uuidOf(ref)) as Record<string, unknown>;
    return { key: table, table: p.table, authorization: set(p.authorization), insertDelete: p.insert_delete, update: set(p.update) };
  }).sort((a, b) => (a.key < b.key ? -1 : 1));
  const ours = [...ovnControllerPermissions].map(([key, p]) => ({ key, table: p.table, authorization: [...p.authorization].sort(), insertDelete: p.insertDelete, update: [...p.update].sort() }))
    .sort((a, b) => (a.key < b.key ? -1 : 1));
  t.same(ours, theirs, 'every table\'s permission, as the role maps it');

  // Our northd's view, read the same way: the role's map names the permission rows.
  const view = createNorthd();
  view.apply(new Database(parseDatabaseSchema(NB_SCHEMA_JSON)), { changes: [] });
  const ourRoles = [...(view.view().get('RBAC_Role')?.values() ?? [])];
  t.same(ourRoles.map((r) => r.name), [OVN_CONTROLLER_ROLE], 'our view: the same one role');
  const ourPermissions = view.view().get('RBAC_Permission') ?? new Map<string, Row>();
  const inView = [...(ourRoles[0]?.permissions as ReadonlyMap<string, string>)].map(([table, uuid]) => {
    const p = ourPermissions.get(uuid) as Row;
    return { key: table, table: p.table, authorization: [...(p.authorization as string[])], insertDelete: p.insert_delete, update: [...(p.update as string[])] };
  });
  t.same(inView, theirs, 'and the same permission rows');
  t.equal(ourPermissions.size, theirs.length, 'no other');
});

t.test('our view\'s RBAC rows: one per permission, named from the role and table, unchanged by NB changes', async (t) => {
  const nb = new Database(parseDatabaseSchema(NB_SCHEMA_JSON));
  const northd = createNorthd();
  const first = northd.apply(nb, { changes: [] });
  t.equal(first.changes.filter((c) => c.table === 'RBAC_Role' || c.table === 'RBAC_Permission').length, 1 + ovnControllerPermissions.size, 'the first run writes the role and its permissions');
  t.same([...(northd.view().get('RBAC_Role')?.keys() ?? [])], [rbacRoleUuid('ovn-controller')]);
  t.same([...(northd.view().get('RBAC_Permission')?.keys() ?? [])].sort(), [...ovnControllerPermissions.keys()].map((table) => rbacPermissionUuid('ovn-controller', table)).sort());
  const added = transact(nb, [{ op: 'insert', table: 'NB_Global', row: {} }, { op: 'insert', table: 'Logical_Switch', row: { name: 'sw0' } }], { newUuid: (() => {
    let n = 0;
    return () => `00000000-0000-4000-8000-${(++n).toString(16).padStart(12, '0')}`;
  })() });
  if (added.kind !== 'committed') throw new Error('the NB write failed');
  const next = northd.apply(nb, added.delta);
  t.ok(next.changes.length > 0, 'an NB change changes the view');
  t.same(next.changes.filter((c) => c.table.startsWith('RBAC_')), [], 'but not its RBAC rows');
  t.same(northd.recompute(nb).get('RBAC_Permission'), northd.view().get('RBAC_Permission'), 'a recompute gives the same rows');
});
