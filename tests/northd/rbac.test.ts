// The RBAC permission set ovnts enforces (northd/rbac.ts) is the one the real ovn-northd 23.03
// writes into the SB's RBAC_Role and RBAC_Permission: same role, same tables, same
// authorization, insert_delete and update columns. Method: a real NB and SB ovsdb-server with
// ovn-northd between them in a temp folder; its rows read back and compared with ours.
import { existsSync } from 'node:fs';
import t from 'tap';
import { OVN_CONTROLLER_ROLE, ovnControllerPermissions, ovnRbacPermission } from '../../northd/rbac.js';
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
});
