// Goal: a logical flow with fwd_group follows its child ports and the tunnels it watches, as
// ovn-controller 23.03 recomputes it: the select group is made, changed and freed as children
// are bound, unbound, moved and re-keyed and as tunnels come, go and change port; the flow's
// action is group:N, or nothing while a child is unknown or (with liveness) has no tunnel; and
// only the flows that read what changed are compiled again. Method: the small topology of
// flows-fixtures.ts (vif1 and vif2 bound here on hv1, vif3 on hv2 behind tunnel port 10) plus a
// port "kid" (key 12) and chassis hv3, two fwd_group flows on sw0 (with and without liveness),
// and a sequence of SB and LocalView updates; after each, the group text, the flow's actions and
// the groups to install are checked, and the engine must equal a fresh one fed the same rows.

import t from 'tap';
import { formatActions } from '../../agent/compile/index.js';
import { DesiredFlows } from '../../agent/flows/desired.js';
import type { SbRowChange } from '../../agent/sb-source.js';
import type { Row } from '../../ovsdb/index.js';
import { chassis, ids, IncrementalRun, logicalFlow, port, resetOf, smallTopology, smallView, U } from './flows-fixtures.js';

const hv3 = U(3, 0xc);
const kid = U(40, 0xa);
const live = U(41, 0x1f);
const plain = U(42, 0x1f);
/** Another logical flow that names no child: compiled again only when its own inputs change. */
const other = U(43, 0x1f);
const VMAC = '00:11:de:ad:be:ef';

const rows = (): [string, Row][] => [
  ...smallTopology(),
  ['Chassis', chassis(hv3, 'hv3')],
  ['Port_Binding', port(kid, ids.sw0, 'kid', 12)],
  ['Logical_Flow', logicalFlow(live, ids.sw0, 'ingress', 27, 50, `eth.dst == ${VMAC}`, 'fwd_group(liveness="true", childports="vif3", "kid");')],
  ['Logical_Flow', logicalFlow(plain, ids.sw0, 'ingress', 27, 51, `eth.dst == ${VMAC}`, 'fwd_group(childports="vif1", "kid"); next;')],
  ['Logical_Flow', logicalFlow(other, ids.sw0, 'ingress', 27, 52, 'eth.mcast', 'outport = "_MC_flood"; output;')],
];

/** The group text a flow's group:N stands for, or its OpenFlow actions when it has no group. */
function actionsOf(d: DesiredFlows, lf: string): string {
  const flows = d.table.flowsOf(`lf:${lf}`);
  if (flows.length !== 1) return `${flows.length} flows`;
  const acts = (flows[0] as { actions: readonly { kind: string; groupId?: number }[] }).actions;
  const table = d.groupTable();
  return acts.map((a) => {
    if (a.kind !== 'group') return formatActions([a as never]);
    const desc = [...table].find(([, id]) => id === a.groupId)?.[0];
    return `group{${desc ?? `? ${a.groupId}`}}`;
  }).join(',') || 'drop';
}

const bucket = (key: number, watch?: number): string =>
  `bucket=${watch === undefined ? '' : `watch_port:${watch},`}load=0x${key.toString(16)}->NXM_NX_REG15[0..15],resubmit(,37)`;
const group = (...buckets: string[]): string => `group{type=select,selection_method=dp_hash,${buckets.join(',')}}`;

t.test('fwd_group follows its child ports and the tunnels it watches', async (t) => {
  const run = new IncrementalRun(t, new DesiredFlows(), rows(), smallView());
  const d = run.d;
  const setKid = (o: Parameters<typeof port>[4], key = 12): SbRowChange[] => [{ table: 'Port_Binding', uuid: kid, row: port(kid, ids.sw0, 'kid', key, o) }];
  const tunnel = (ofport: number) => ({ ofport, type: 'geneve', remoteIp: '192.0.2.3' });
  const groupsNow = (): string[] => [...d.groupTable().keys()].sort();

  // kid is not bound: liveness finds no tunnel for it; without liveness it needs only its key.
  t.equal(actionsOf(d, live), 'drop', 'unbound child, liveness: nothing for the action');
  t.equal(actionsOf(d, plain), `${group(bucket(1), bucket(12))},resubmit(,36)`, 'without liveness: key 12 loaded as 0xc');
  t.equal(groupsNow().length, 1);

  let st = run.change(setKid({ chassis: hv3 }), run.view, 'kid bound on hv3');
  t.equal(actionsOf(d, live), 'drop', 'hv3 has no tunnel yet: still nothing');
  t.ok(st.logicalFlows >= 1 && d.table.flowsOf(`lf:${other}`).length === 1, 'the binding recompiled the flows that name kid');

  st = run.change([], { ...run.view, tunnels: new Map([...run.view.tunnels, ['hv3', tunnel(11)]]) }, 'tunnel to hv3 appears');
  t.equal(actionsOf(d, live), group(bucket(3, 10), bucket(12, 11)), 'both children watched: vif3 through hv2 (10), kid through hv3 (11)');
  t.equal(st.logicalFlows, 1, 'only the flow that watched for hv3\'s tunnel compiled again');
  const firstIds = new Set(d.groupTable().values());
  t.equal(firstIds.size, 2);
  d.takeDirtyGroups();

  st = run.change([], { ...run.view, tunnels: new Map([...run.view.tunnels, ['hv3', tunnel(13)]]) }, 'hv3\'s tunnel changes port');
  t.equal(st.logicalFlows, 1, 'again only the flow that watches it');
  t.equal(actionsOf(d, live), group(bucket(3, 10), bucket(12, 13)));
  t.equal(d.groupTable().size, 2, 'the old group is freed');
  t.equal(d.takeDirtyGroups().length, 2, 'one group removed, one added');

  st = run.change([], { ...run.view, tunnels: new Map([...run.view.tunnels, ['hv4', tunnel(14)]]) }, 'an unrelated tunnel');
  t.equal(st.logicalFlows, 0, 'a tunnel no child is behind compiles nothing again');

  run.change(setKid({ chassis: ids.hv2 }), run.view, 'kid moves to hv2');
  t.equal(actionsOf(d, live), group(bucket(3, 10), bucket(12, 10)), 'kid now watched through hv2\'s tunnel');

  run.change(setKid({ chassis: ids.hv1 }), run.view, 'kid moves here');
  t.equal(actionsOf(d, live), 'drop', 'no tunnel to this chassis itself: nothing, as ovn-controller');
  t.equal(groupsNow().length, 1, 'the liveness group is freed');

  run.change(setKid({ chassis: ids.hv2 }, 13), run.view, 'kid re-keyed on hv2');
  t.equal(actionsOf(d, live), group(bucket(3, 10), bucket(13, 10)));
  t.equal(actionsOf(d, plain), `${group(bucket(1), bucket(13))},resubmit(,36)`);

  const noHv2 = new Map(run.view.tunnels);
  noHv2.delete('hv2');
  run.change([], { ...run.view, tunnels: noHv2 }, 'hv2\'s tunnel goes');
  t.equal(actionsOf(d, live), 'drop');
  t.equal(actionsOf(d, plain), `${group(bucket(1), bucket(13))},resubmit(,36)`, 'without liveness the tunnel does not matter');

  run.change([{ table: 'Port_Binding', uuid: kid }], run.view, 'kid deleted');
  t.equal(actionsOf(d, plain), 'resubmit(,36)', 'an unknown child: nothing for the action, next stands');
  t.equal(d.groupTable().size, 0, 'no group left');

  run.change(setKid({ chassis: ids.hv2 }, 12), smallView({ tunnels: new Map([['hv2', tunnel(10)], ['hv3', tunnel(13)]]) }), 'kid back');
  t.equal(actionsOf(d, live), group(bucket(3, 10), bucket(12, 10)));

  // The chassis row renamed: its tunnel is looked up by the new name.
  run.change([{ table: 'Chassis', uuid: ids.hv2, row: chassis(ids.hv2, 'hv3') }, { table: 'Chassis', uuid: hv3, row: chassis(hv3, 'hv9') }], run.view, 'chassis renamed');
  t.equal(actionsOf(d, live), group(bucket(3, 13), bucket(12, 13)), 'both children behind the tunnel named hv3 now');
});

t.test('fwd_group rows stay out of the compile cache shared between agents', async (t) => {
  // Their tunnels are each chassis's own: two agents with different tunnel ports must differ.
  const { SharedCompileCache } = await import('../../agent/flows/compile-cache.js');
  const cache = new SharedCompileCache();
  const a = new DesiredFlows({ sharedCache: cache });
  const b = new DesiredFlows({ sharedCache: cache });
  const bound = rows().map(([table, r]): [string, Row] => (r._uuid === kid ? [table, port(kid, ids.sw0, 'kid', 12, { chassis: ids.hv2 })] : [table, r]));
  a.update(resetOf(bound), smallView());
  b.update(resetOf(bound), smallView({ tunnels: new Map([['hv2', { ofport: 77, type: 'geneve', remoteIp: '192.0.2.2' }]]) }));
  t.equal(actionsOf(a, live), group(bucket(3, 10), bucket(12, 10)));
  t.equal(actionsOf(b, live), group(bucket(3, 77), bucket(12, 77)));
});
