// SB_Global as the SB view shows it: northd's row joined with the operator's columns, and one
// revision's changes of either half given as one change of the joined row. Method: hand-made
// rows and deltas into sbViewDelta; every case checks the kind, the rows and the columns.
import t from 'tap';
import type { DbDelta, Row, RowChange } from '../../ovsdb/index.js';
import { joinSbGlobal, sbViewDelta } from '../../server/sb-global-view.js';

const U = '10b37fda-b900-4755-9e33-352b1b1ecf2d';
const row = (r: Record<string, unknown>): Row => ({ _uuid: U, ...r }) as unknown as Row;
const northd = (nbCfg: number, version = `v${nbCfg}`): Row => row({ _version: version, nb_cfg: nbCfg, options: new Map([['svc_monitor_mac', 'x']]), ipsec: false, connections: [], ssl: [], external_ids: new Map() });
const operator = (connections: string[], version: string): Row => row({ _version: version, connections, ssl: [], external_ids: new Map([['k', 'v']]) });
const modify = (old: Row, now: Row, columns: string[]): RowChange => ({ kind: 'modify', table: 'SB_Global', uuid: U, old, new: now, columns });
const chassisChange: RowChange = { kind: 'insert', table: 'Chassis', uuid: 'c0', new: { _uuid: 'c0', _version: 'x', name: 'hv1' } as unknown as Row };
const global = (d: DbDelta): RowChange[] => d.changes.filter((c) => c.table === 'SB_Global');

t.test('northd bumps nb_cfg: the joined row keeps the operator columns on both sides', async (t) => {
  const op = operator(['conn1'], 'o1');
  const d = sbViewDelta({ changes: [modify(northd(1), northd(2), ['nb_cfg'])] }, undefined, northd(2), op);
  const [c] = global(d);
  t.match(c, { kind: 'modify', columns: ['nb_cfg'] });
  t.same((c as { old: Record<string, unknown> }).old.connections, ['conn1']);
  t.same((c as { new: Record<string, unknown> }).new.connections, ['conn1']);
  t.same((c as { new: Record<string, unknown> }).new.external_ids, new Map([['k', 'v']]));
});

t.test("the operator's half changes: one modify of the joined row, a new _version, other tables as they were", async (t) => {
  const before = operator([], 'o1');
  const after = operator(['conn1'], 'o2');
  const d = sbViewDelta({ changes: [] }, { changes: [chassisChange, modify(before, after, ['connections'])] }, northd(3), after);
  t.same(d.changes.map((c) => c.table), ['Chassis', 'SB_Global'], 'ordered by table');
  const [c] = global(d) as [Extract<RowChange, { kind: 'modify' }>];
  t.same(c.columns, ['connections']);
  t.not(c.new._version, c.old._version, '_version follows the operator half');
  t.equal(c.old._version, joinSbGlobal(northd(3), before)._version);
});

t.test('an operator half with no northd row is not shown; northd making its row shows it joined', async (t) => {
  const op = operator(['conn1'], 'o1');
  t.same(global(sbViewDelta({ changes: [] }, { changes: [{ kind: 'insert', table: 'SB_Global', uuid: U, new: op }] }, undefined, op)), []);
  const [c] = global(sbViewDelta({ changes: [{ kind: 'insert', table: 'SB_Global', uuid: U, new: northd(0) }] }, undefined, northd(0), op));
  t.match(c, { kind: 'insert' });
  t.same((c as { new: Record<string, unknown> }).new.connections, ['conn1']);
  const [gone] = global(sbViewDelta({ changes: [{ kind: 'delete', table: 'SB_Global', uuid: U, old: northd(0) }] }, undefined, undefined, op));
  t.match(gone, { kind: 'delete' });
  t.same((gone as { old: Record<string, unknown> }).old.connections, ['conn1'], 'the deleted row as it was shown');
});

t.test('both halves change in one revision: one change with both columns; no change when nothing shown moved', async (t) => {
  const d = sbViewDelta({ changes: [modify(northd(1), northd(2), ['nb_cfg'])] }, { changes: [modify(operator([], 'o1'), operator(['c'], 'o2'), ['connections'])] }, northd(2), operator(['c'], 'o2'));
  t.same(global(d).map((c) => (c.kind === 'modify' ? c.columns : [])), [['connections', 'nb_cfg']]);
  const same = operator(['c'], 'o3');
  t.same(global(sbViewDelta({ changes: [] }, { changes: [modify(operator(['c'], 'o2'), same, [])] }, northd(2), same)), [], 'a rewrite with the same values shows nothing');
  t.same(sbViewDelta({ changes: [] }, { changes: [chassisChange] }, northd(2), same).changes, [chassisChange], 'without SB_Global changes, the rest passes through');
});
