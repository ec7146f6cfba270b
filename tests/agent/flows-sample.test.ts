// Goal: logical flows with OVN's sample action (drop sampling) follow the integration bridge's
// collector sets, as ovn-controller 23.03 recomputes them: the flow gains the sample action when
// its collector set is added to the bridge and loses it when the set goes, with the datapath's
// key in the observation domain and the row's cookie for $cookie, each row and datapath its own;
// only the rows with a sample action are compiled again. With SB_Global
// options:debug_drop_collector_set naming a set the bridge has, the drops of the physical
// tables sample too (ovn-controller's put_drop). Method: the small topology of
// flows-fixtures.ts, rows with sample actions on sw0 (key 1) and pub (key 3), and a sequence of
// LocalView updates (its sampleCollectors) and SB updates; after each, the flows' actions are
// checked, and the engine must equal a fresh one fed the same rows. Last, end to end with our
// northd: the sampled drops it writes from the NB options compile, on a chassis binding a port,
// into OpenFlow's sample action with each flow's cookie; emptied ones (a refused domain) into drops.

import t from 'tap';
import { formatActions } from '../../agent/compile/index.js';
import { SharedCompileCache } from '../../agent/flows/compile-cache.js';
import { DesiredFlows } from '../../agent/flows/desired.js';
import type { LocalView } from '../../agent/local-view.js';
import type { SbRowChange } from '../../agent/sb-source.js';
import type { Row } from '../../ovsdb/index.js';
import { formatFlow } from '../../agent/compile/index.js';
import { createNorthd } from '../../northd/index.js';
import type * as sb from '../../ovsdb/rows/sb.js';
import { addLrp, addLsp, map, nbFixture, set } from '../northd/nb-fixture.js';
import { chassis, dpGroup, ids, IncrementalRun, logicalFlow, resetOf, sbGlobal, smallTopology, smallView, U } from './flows-fixtures.js';

/** Rows with cookies of their own (the fixtures' U() gives every row of a kind one cookie). */
const lf = (n: number): string => `${(0xa0000000 + n).toString(16)}-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;
/** What ovn-northd 23.03 writes for an ACL drop with debug_drop_collector_set=123, domain 1. */
const DROP = 'sample(probability=65535,collector_set=123,obs_domain=1,obs_point=$cookie); /* drop */';
/**
 * Three rows of the same match and actions on sw0 (priorities apart): were their compiled bodies
 * shared (agent/compile's memo), the third would carry the second's cookie.
 */
const drops = [lf(1), lf(2), lf(3)];
/** A row on sw0 and pub through a datapath group, another collector set, a fixed point. */
const both = lf(4);
const group = U(1, 0xf);
/** A row without sample: never compiled again for a collector set. */
const other = lf(5);

const rows = (): [string, Row][] => [
  ...smallTopology(),
  ...drops.map((u, i): [string, Row] => ['Logical_Flow', logicalFlow(u, ids.sw0, 'ingress', 9, 100 + i, 'ip4.src == 10.9.9.9', DROP)]),
  ['Logical_DP_Group', dpGroup(group, [ids.sw0, ids.pub])],
  ['Logical_Flow', logicalFlow(both, { group }, 'egress', 4, 50, 'ip6', 'sample(probability=100, collector_set=7, obs_point=1000); next;')],
  ['Logical_Flow', logicalFlow(other, ids.sw0, 'ingress', 9, 10, 'ip4', 'next;')],
];

/** The actions of a row's flows, by datapath key (metadata), one line each. */
function actionsOf(d: DesiredFlows, u: string): string[] {
  return d.table.flowsOf(`lf:${u}`).map((f) => `dp${f.match.get('metadata')?.value ?? '?'}: ${formatActions(f.actions) || 'drop'}`).sort();
}

const sampled = (domain: number, point: number): string => `sample(probability=65535,collector_set_id=123,obs_domain_id=${domain},obs_point_id=${point})`;

t.test('sample actions follow the bridge\'s collector sets', async (t) => {
  const run = new IncrementalRun(t, new DesiredFlows(), rows(), smallView());
  const d = run.d;
  const collectors = (...idList: number[]): LocalView => smallView({ sampleCollectors: new Set(idList) });

  t.same(drops.map((u) => actionsOf(d, u)), [['dp1: drop'], ['dp1: drop'], ['dp1: drop']], 'no collector set: the drops stay plain drops');
  t.same(actionsOf(d, both), ['dp1: resubmit(,47)', 'dp3: resubmit(,47)'], 'and the sample is left out of the other flow');

  let st = run.change([], collectors(123), 'set 123 added');
  // Domain 1 in the high byte, sw0's key 1 in the low 24 bits; the point is each row's own cookie.
  t.same(drops.map((u) => actionsOf(d, u)), drops.map((_, i) => [`dp1: ${sampled(0x01000001, 0xa0000001 + i)}`]), 'the drops sample, each with its own cookie');
  t.same(actionsOf(d, both), ['dp1: resubmit(,47)', 'dp3: resubmit(,47)'], 'set 7 is not there yet');
  t.equal(st.logicalFlows, 4, 'the four rows with sample were compiled again, no other');
  t.notOk(st.full, 'not a full recompute');

  st = run.change([], collectors(7, 123), 'set 7 added');
  t.same(actionsOf(d, both), [
    'dp1: sample(probability=100,collector_set_id=7,obs_domain_id=1,obs_point_id=1000),resubmit(,47)',
    'dp3: sample(probability=100,collector_set_id=7,obs_domain_id=3,obs_point_id=1000),resubmit(,47)',
  ], 'each datapath\'s key in the domain');
  t.equal(st.logicalFlows, 4);

  st = run.change([], collectors(7), 'set 123 removed');
  t.equal(st.logicalFlows, 4);
  t.same(drops.map((u) => actionsOf(d, u)), [['dp1: drop'], ['dp1: drop'], ['dp1: drop']], 'the drops lose the sample');
  t.equal(actionsOf(d, both).length, 2);
  t.match(actionsOf(d, both)[0], /^dp1: sample\(/, 'set 7\'s sample stays');

  st = run.change([], collectors(7), 'the same sets again');
  t.equal(st.logicalFlows, 0, 'nothing compiled when the sets did not change');
  st = run.change([], smallView(), 'no sets');
  t.equal(st.logicalFlows, 4);
  t.equal(actionsOf(d, both)[0], 'dp1: resubmit(,47)');
  st = run.change([], collectors(), 'an empty set where there was none');
  t.equal(st.logicalFlows, 0, 'absent and empty are the same: nothing compiled');

  // A row's text changed while its set is there: compiled with the sets in force.
  run.change([], collectors(123), 'set 123 back');
  const edited = logicalFlow(drops[0] as string, ids.sw0, 'ingress', 9, 100, 'ip4.src == 10.9.9.9', 'sample(probability=1,collector_set=123,obs_domain=255,obs_point=5); /* drop */');
  run.change([{ table: 'Logical_Flow', uuid: drops[0] as string, row: edited }], run.view, 'a drop edited');
  t.same(actionsOf(d, drops[0] as string), ['dp1: sample(probability=1,collector_set_id=123,obs_domain_id=4278190081,obs_point_id=5)']);
  t.same(actionsOf(d, other), ['dp1: resubmit(,18)'], 'the row without sample is as it was');
});

t.test('sample rows stay out of the compile cache shared between agents', async (t) => {
  // The collector sets are each chassis's own: two agents with different sets must differ.
  const cache = new SharedCompileCache();
  const a = new DesiredFlows({ sharedCache: cache });
  const b = new DesiredFlows({ sharedCache: cache });
  // The same row objects (the cache keeps compiles by row).
  const same = rows();
  a.update(resetOf(same), smallView({ sampleCollectors: new Set([123]) }));
  b.update(resetOf(same), smallView());
  t.ok(cache.counters.hits > 0, `the cache was used for the other rows (${cache.counters.hits} hits)`);
  t.same(actionsOf(a, drops[0] as string), [`dp1: ${sampled(0x01000001, 0xa0000001)}`]);
  t.same(actionsOf(b, drops[0] as string), ['dp1: drop']);
});

t.test('the physical tables\' drops sample into SB_Global\'s debug_drop_collector_set when the bridge has it', async (t) => {
  const global = U(1, 0x3);
  const run = new IncrementalRun(t, new DesiredFlows(), rows(), smallView());
  const d = run.d;
  const options = (o: Record<string, string>): SbRowChange[] => [{ table: 'SB_Global', uuid: global, row: sbGlobal(global, 0, o) }];
  /** The physical drops: the defaults of tables 0, 40 and 65, table 41's loopback and localnet drops. */
  const drops = (): string[] => [...d.table.flows()].map(([, f]) => f)
    .filter((f) => ([0, 40, 65].includes(f.table) && f.priority === 0) || (f.table === 41 && (f.priority === 100 || f.priority === 160)))
    .map((f) => formatFlow(f)).sort();
  const sampledTo = (set: number, domain: number) => (f: string): boolean => {
    const table = Number(/^table=(\d+),/.exec(f)?.[1]);
    return f.endsWith(`actions=sample(probability=65535,collector_set_id=${set},obs_domain_id=${domain},obs_point_id=${table})`);
  };
  const plain = (f: string): boolean => f.endsWith('actions=drop');
  const n = drops().length;
  // Tables 0, 40, 65; the loopback drops of vif1, vif2, the patch ports and ln-pub; ln-pub's
  // two localnet drops (physnet is bridged here).
  t.equal(n, 12, `${n} physical drops`);
  t.ok(drops().every(plain), 'no option: plain drops');

  run.change(options({ debug_drop_collector_set: '123', debug_drop_domain_id: '2' }), smallView(), 'the option, no collector set');
  t.ok(drops().every(plain), 'the bridge has no set 123: plain drops');
  let st = run.change([], smallView({ sampleCollectors: new Set([123]) }), 'set 123 added');
  t.ok(st.full, 'a full recompute, as ovn-controller recomputes its physical flows');
  t.ok(drops().every(sampledTo(123, 0x02000000)), `each drop samples, its table the point:\n${drops().join('\n')}`);
  t.equal(drops().length, n);
  run.change(options({ debug_drop_collector_set: '123' }), smallView({ sampleCollectors: new Set([123]) }), 'no domain');
  t.ok(drops().every(sampledTo(123, 0)), 'domain 0');
  run.change(options({ debug_drop_collector_set: '7', debug_drop_domain_id: '1' }), smallView({ sampleCollectors: new Set([123]) }), 'another set in the option');
  t.ok(drops().every(plain), 'set 7 is not on the bridge: plain drops');
  st = run.change(options({ debug_drop_collector_set: '7', debug_drop_domain_id: '1', other: 'x' }), smallView({ sampleCollectors: new Set([123]) }), 'an unrelated option');
  t.notOk(st.full, 'the sampling did not change: no full recompute');
  run.change([], smallView({ sampleCollectors: new Set([7, 123]) }), 'set 7 added');
  t.ok(drops().every(sampledTo(7, 0x01000000)));
  run.change(options({ debug_drop_collector_set: 'x7' }), smallView({ sampleCollectors: new Set([7, 123]) }), 'a bad number');
  t.ok(drops().every(plain), 'not a number: off, as smap_get_uint gives 0');
  run.change(options({ debug_drop_collector_set: '7', debug_drop_domain_id: '256' }), smallView({ sampleCollectors: new Set([7]) }), 'domain 256');
  t.ok(drops().every(sampledTo(7, 0)), 'domain 256 << 24 in 32 bits is 0, as ovn-controller computes it');
  run.change([{ table: 'SB_Global', uuid: global }], smallView({ sampleCollectors: new Set([7]) }), 'SB_Global gone');
  t.ok(drops().every(plain));
});

t.test('end to end: the drops our northd samples compile into OpenFlow sample actions on the chassis', async (t) => {
  // sw0 with vm1 (bound to hv1) and a drop ACL, behind lr0: the switch and the router are local.
  const fx = nbFixture();
  fx.run([{ op: 'insert', table: 'NB_Global', row: { options: map({ debug_drop_collector_set: '123', debug_drop_domain_id: '2' }) } }]);
  fx.run([{ op: 'insert', table: 'Logical_Switch', row: { name: 'sw0' } }, { op: 'insert', table: 'Logical_Router', row: { name: 'lr0' } }]);
  fx.run([
    ...addLsp('sw0', 'vm1', { addresses: set(['00:00:00:00:00:01 10.0.0.1']) }),
    ...addLrp('lr0', 'lr0-sw0', '00:00:00:00:ff:01', ['10.0.0.254/24']),
    ...addLsp('sw0', 'sw0-lr0', { type: 'router', addresses: set(['router']), options: map({ 'router-port': 'lr0-sw0' }) }),
    { op: 'insert', table: 'ACL', 'uuid-name': 'a', row: { priority: 1001, direction: 'from-lport', match: 'ip4.src == 10.0.0.66', action: 'drop' } },
    { op: 'update', table: 'Logical_Switch', where: [['name', '==', 'sw0']], row: { acls: set([['named-uuid', 'a']]) } },
  ]);
  const northd = createNorthd();
  northd.apply(fx.db, { changes: [] });
  northd.setChassisOwned(fx.db, new Map([['vm1', { chassis: [ids.hv1] }]]), new Map([['hv1', ids.hv1]]));
  const compiled = (): { d: DesiredFlows; flows: sb.Logical_Flow[]; keyOf: Map<string, number> } => {
    const rows: [string, Row][] = [['Chassis', chassis(ids.hv1, 'hv1')]];
    for (const [table, byUuid] of northd.view()) for (const r of byUuid.values()) rows.push([table, r]);
    const d = new DesiredFlows();
    d.update(resetOf(rows), smallView({ vifs: new Map([['vm1', 1]]), sampleCollectors: new Set([123]) }));
    t.same(d.sourceErrors(), new Map(), 'every flow compiles');
    const keyOf = new Map([...(northd.view().get('Datapath_Binding') ?? new Map<string, Row>()).values()].map((r) => [r._uuid, r['tunnel_key'] as number]));
    return { d, flows: [...(northd.view().get('Logical_Flow') ?? new Map<string, Row>()).values()] as unknown as sb.Logical_Flow[], keyOf };
  };

  const on = compiled();
  const sampledRows = on.flows.filter((f) => f.actions.endsWith('sample(probability=65535,collector_set=123,obs_domain=2,obs_point=$cookie); /* drop */'));
  t.ok(sampledRows.length >= 20, `${sampledRows.length} drops sampled by our northd`);
  const wrong: string[] = [];
  let installed = 0;
  for (const f of sampledRows) {
    const cookie = Number.parseInt(f._uuid.slice(0, 8), 16);
    for (const spec of on.d.table.flowsOf(`lf:${f._uuid}`)) {
      installed++;
      const key = Number(spec.match.get('metadata')?.value ?? -1);
      const expected = `sample(probability=65535,collector_set_id=123,obs_domain_id=${(0x02000000 | key) >>> 0},obs_point_id=${cookie})`;
      if (!formatActions(spec.actions).includes(expected)) wrong.push(`${f.external_ids.get('stage-name') ?? ''} ${f.match}: ${formatActions(spec.actions)} (expected ${expected})`);
    }
  }
  t.ok(installed >= sampledRows.length, `${installed} OpenFlow flows from them`);
  t.same(wrong, [], 'each with the datapath\'s key in the domain and the row\'s cookie as the point');

  // A refused domain: the drops lose their text (as ovn-northd 23.03 writes them); they compile
  // into drops, with no sample.
  const g = [...fx.db.rows('NB_Global').keys()][0] as string;
  northd.apply(fx.db, fx.run([{ op: 'update', table: 'NB_Global', where: [['_uuid', '==', ['uuid', g]]], row: { options: map({ debug_drop_collector_set: '123', debug_drop_domain_id: '255' }) } }]));
  const refused = compiled();
  const emptied = refused.flows.filter((f) => f.actions === '');
  t.ok(emptied.length === sampledRows.length, `${emptied.length} drops without text`);
  const specs = emptied.flatMap((f) => refused.d.table.flowsOf(`lf:${f._uuid}`));
  t.equal(specs.length, installed, 'as many OpenFlow flows as sampled before');
  t.same(specs.filter((spec) => spec.actions.length > 0).map((spec) => formatActions(spec.actions)), [], 'each without actions: a drop');
  t.notOk(refused.flows.some((f) => f.actions.includes('sample(')), 'nothing samples');
});
