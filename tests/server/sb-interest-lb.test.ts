// Load_Balancer rows follow the chassis's local datapaths: one on a datapath comes into a
// chassis's view when a port there is bound to it and leaves when the port is unbound; one held
// through a Logical_DP_Group comes and goes with the group's members. Method: a scripted SB view
// under the InterestIndex, each step's group part (candidatesOf + groupStep) checked by name,
// and every state checked against the from-scratch oracle.
import t from 'tap';
import type { DbDelta, Row, RowChange } from '../../ovsdb/index.js';
import {
  InterestIndex, candidatesOf, candidatesOfDatapaths, groupStep, localDatapathsFromScratch, visibleFromScratch, visibleRows, windowOf,
  type GroupInterest, type Interest, type ViewChange,
} from '../../server/sb-interest.js';

const U = (n: number): string => `00000000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;
const dp1 = U(1);
const dp2 = U(2);
const hv1 = U(10);
const p1 = U(20);
const p2 = U(21);
const group = U(30);
const lbOwn = U(40);
const lbGroup = U(41);
const lbElsewhere = U(42);
const names = new Map([[lbOwn, 'lb-own'], [lbGroup, 'lb-group'], [lbElsewhere, 'lb-elsewhere']]);

class View {
  readonly data = new Map<string, Map<string, Row>>();
  rows = (table: string): ReadonlyMap<string, Row> => this.data.get(table) ?? new Map<string, Row>();
  private version = 0;
  /** Writes rows (undefined deletes); returns the delta as the view saw it. */
  write(...writes: [string, string, Record<string, unknown> | undefined][]): DbDelta {
    const changes: RowChange[] = [];
    for (const [table, uuid, cols] of writes) {
      let m = this.data.get(table);
      if (m === undefined) this.data.set(table, (m = new Map()));
      const old = m.get(uuid);
      if (cols === undefined) {
        if (old === undefined) continue;
        m.delete(uuid);
        changes.push({ kind: 'delete', table, uuid, old });
        continue;
      }
      const row = { ...(old ?? {}), ...cols, _uuid: uuid, _version: String(++this.version) } as Row;
      m.set(uuid, row);
      changes.push(old === undefined ? { kind: 'insert', table, uuid, new: row } : { kind: 'modify', table, uuid, old, new: row, columns: Object.keys(cols) });
    }
    return { changes };
  }
}

const port = (name: string, dp: string, chassis: string[]): Record<string, unknown> => ({
  logical_port: name, datapath: dp, type: '', options: new Map(), chassis, additional_chassis: [], requested_chassis: [], requested_additional_chassis: [], tunnel_key: 1,
});
const lb = (datapaths: string[], dpGroup: string[]): Record<string, unknown> => ({
  name: 'lb', vips: new Map([['10.0.0.10:80', '10.0.0.2:8080']]), protocol: [], datapaths, datapath_group: dpGroup, options: new Map(), external_ids: new Map(),
});

t.test('load balancers enter and leave a chassis view with its local datapaths', async (t) => {
  const v = new View();
  v.write(
    ['Chassis', hv1, { name: 'hv1', hostname: 'hv1', encaps: [], other_config: new Map(), external_ids: new Map() }],
    ['Datapath_Binding', dp1, { tunnel_key: 1, external_ids: new Map(), load_balancers: [] }],
    ['Datapath_Binding', dp2, { tunnel_key: 2, external_ids: new Map(), load_balancers: [] }],
    ['Port_Binding', p1, port('p1', dp1, [])],
    ['Port_Binding', p2, port('p2', dp2, [])],
    ['Logical_DP_Group', group, { datapaths: [dp2] }],
    ['Load_Balancer', lbOwn, lb([dp1], [])],
    ['Load_Balancer', lbGroup, lb([], [group])],
    ['Load_Balancer', lbElsewhere, lb([dp2], [])],
  );
  const index = new InterestIndex(v.rows);
  let interest: Interest = { chassis: 'hv1', monitorAll: false, datapaths: new Set(), ifaceIds: new Set() };

  /** The group part of the step for `delta`, as "+name" / "-name" of load balancers. */
  const step = (delta: DbDelta): string[] => {
    index.apply(delta);
    const before: GroupInterest = interest;
    const datapaths = index.localDatapaths('hv1');
    interest = { ...interest, datapaths };
    const w = windowOf([delta]);
    const cands = candidatesOf(index, v.rows, w);
    const taken = new Set(cands.map((c) => `${c.table}\0${c.uuid}`));
    const entered = [...datapaths].filter((d) => !before.datapaths.has(d));
    const left = [...before.datapaths].filter((d) => !datapaths.has(d));
    cands.push(...candidatesOfDatapaths(index, v.rows, [...entered, ...left], taken));
    return groupStep(cands, before, interest).filter((c: ViewChange) => c.table === 'Load_Balancer').map((c) => `${c.row === undefined ? '-' : '+'}${names.get(c.uuid) ?? c.uuid}`).sort();
  };
  const visibleLbs = (): string[] => visibleRows(index, v.rows, ['Load_Balancer'], interest, 'all').filter((c) => c.table === 'Load_Balancer').map((c) => names.get(c.uuid) ?? c.uuid).sort();
  const oracleLbs = (): string[] => [...(visibleFromScratch(v.rows, ['Load_Balancer'], { ...interest, datapaths: localDatapathsFromScratch(v.rows, 'hv1') }).get('Load_Balancer')?.keys() ?? [])].map((u) => names.get(u) ?? u).sort();

  t.same(visibleLbs(), [], 'nothing bound: no load balancer');
  t.same(oracleLbs(), [], 'and the oracle agrees');

  t.same(step(v.write(['Port_Binding', p1, { chassis: [hv1] }])), ['+lb-own'], 'binding p1 on dp1 brings the load balancer of dp1');
  t.same(visibleLbs(), ['lb-own']);
  t.same(oracleLbs(), ['lb-own']);

  t.same(step(v.write(['Logical_DP_Group', group, { datapaths: [dp1, dp2] }])), ['+lb-group'], 'dp1 joining the group brings the group\'s load balancer');
  t.same(visibleLbs(), ['lb-group', 'lb-own']);
  t.same(oracleLbs(), ['lb-group', 'lb-own']);

  t.same(step(v.write(['Load_Balancer', lbElsewhere, { datapaths: [dp2, dp1] }])), ['+lb-elsewhere'], 'a load balancer attached to dp1 arrives');
  t.same(step(v.write(['Load_Balancer', lbElsewhere, { datapaths: [dp2] }])), ['-lb-elsewhere'], 'and leaves when detached');

  t.same(step(v.write(['Port_Binding', p1, { chassis: [] }])), ['-lb-group', '-lb-own'], 'unbinding p1 takes both away');
  t.same(visibleLbs(), []);
  t.same(oracleLbs(), []);

  t.same(step(v.write(['Port_Binding', p2, { chassis: [hv1] }])), ['+lb-elsewhere', '+lb-group'], 'binding p2 on dp2: the group\'s and dp2\'s');
  t.same(step(v.write(['Load_Balancer', lbGroup, undefined])), ['-lb-group'], 'a deleted load balancer leaves');
  t.same(visibleLbs(), ['lb-elsewhere']);
  t.same(oracleLbs(), ['lb-elsewhere']);
});
