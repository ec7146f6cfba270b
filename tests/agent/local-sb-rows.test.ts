// SbRows (the local side's SB tables): which changes call for a pass. Table-driven updates in,
// the "changed" answer and the rows held out.
import t from 'tap';
import type { Row } from '../../ovsdb/index.js';
import type { SbUpdate } from '../../agent/sb-source.js';
import { SbRows } from '../../agent/local/sb-rows.js';

const PRIV = '00000000-0000-4000-8000-000000000001';
const CH1 = '00000000-0000-4000-8000-0000000000c1';
const CH2 = '00000000-0000-4000-8000-0000000000c2';
let revision = 0;
const update = (table: string, uuid: string, row: Record<string, unknown> | undefined): SbUpdate => {
  revision++;
  return { reset: false, fromRevision: revision - 1, toRevision: revision, changes: [row === undefined ? { table, uuid } : { table, uuid, row: { _uuid: uuid, _version: `v${revision}`, ...row } as Row }] };
};
const priv = (chassis: string[], nbCfg: number, name = 'hv1'): Record<string, unknown> => ({ name, chassis, nb_cfg: nbCfg, nb_cfg_timestamp: 1000 + nbCfg, external_ids: new Map() });

t.test('a Chassis_Private that moved only nb_cfg does not call for a pass; anything the local side reads does', async (t) => {
  const rows = new SbRows();
  t.equal(rows.apply(update('Chassis_Private', PRIV, priv([CH1], 0))), true, 'first sight of the row');
  t.equal(rows.apply(update('Chassis_Private', PRIV, priv([CH1], 7))), false, 'nb_cfg and its timestamp only');
  t.equal(rows.chassisPrivateByName('hv1')?.nb_cfg, 7, 'the row held is the new one all the same');
  t.equal(rows.revision, revision);
  t.equal(rows.apply(update('Chassis_Private', PRIV, priv([CH2], 7))), true, 'linked to another chassis');
  t.equal(rows.apply(update('Chassis_Private', PRIV, priv([], 7))), true, 'unlinked');
  t.equal(rows.apply(update('Chassis_Private', PRIV, priv([], 7, 'hv2'))), true, 'renamed');
  t.equal(rows.apply(update('Chassis_Private', PRIV, undefined)), true, 'deleted');
  t.equal(rows.chassisPrivateByName('hv2'), undefined);
  t.equal(rows.apply(update('Chassis', CH1, { name: 'hv1', hostname: 'h', encaps: [] })), true, 'other local tables count as before');
  t.equal(rows.apply(update('Logical_Flow', CH2, { table_id: 0 })), false, 'tables the local side does not hold never count');
});

t.test('a port re-created under the same name in one update is found by name, whatever the order of the two changes', async (t) => {
  const A = '00000000-0000-4000-8000-0000000000a1';
  const B = '00000000-0000-4000-8000-0000000000b2';
  const pbRow = (uuid: string, port: string): Row => ({ _uuid: uuid, _version: uuid, logical_port: port, type: '', chassis: [] }) as unknown as Row;
  for (const order of ['delete first', 'insert first'] as const) {
    const rows = new SbRows();
    rows.apply({ reset: false, fromRevision: 0, toRevision: 1, changes: [{ table: 'Port_Binding', uuid: A, row: pbRow(A, 'vm1') }] });
    t.equal(rows.portBinding('vm1')?._uuid, A, `${order}: the first row`);
    const del = { table: 'Port_Binding', uuid: A };
    const ins = { table: 'Port_Binding', uuid: B, row: pbRow(B, 'vm1') };
    rows.apply({ reset: false, fromRevision: 1, toRevision: 2, changes: order === 'delete first' ? [del, ins] : [ins, del] });
    t.equal(rows.portBinding('vm1')?._uuid, B, `${order}: the new row`);
    // A rename away from the name leaves the name to whoever holds it now.
    rows.apply({ reset: false, fromRevision: 2, toRevision: 3, changes: [{ table: 'Port_Binding', uuid: B, row: pbRow(B, 'vm2') }] });
    t.equal(rows.portBinding('vm1'), undefined, `${order}: renamed away`);
    t.equal(rows.portBinding('vm2')?._uuid, B, `${order}: under its new name`);
  }
});
