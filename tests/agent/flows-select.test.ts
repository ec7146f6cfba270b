// Goal: logical flows with select (ovn-northd's ECMP routes and reroute policies) get their
// select groups as ovn-controller 23.03 makes them: one group per distinct text, shared by the
// flows that ask for the same one, freed with the last of them, and remade with the symmetric
// L4 hash when the datapath's capabilities say it has one (a change of the LocalView, which
// recomputes as ovn-controller recomputes on an OVS feature change); select rows stay out of
// the compile cache agents share, since groups are each agent's own. Method: the small
// topology of flows-fixtures.ts (lr0 local to hv1 through sw0) with three select flows on lr0
// and a sequence of SB and LocalView updates; after each, the flows' group texts, the groups to
// install and the engine against a fresh one fed the same rows are checked.

import t from 'tap';
import { formatActions } from '../../agent/compile/index.js';
import { DesiredFlows } from '../../agent/flows/desired.js';
import type { Row } from '../../ovsdb/index.js';
import { ids, IncrementalRun, logicalFlow, resetOf, smallTopology, smallView, U } from './flows-fixtures.js';

/** lr_in_ip_routing (ingress 13) and lr_in_policy (ingress 15), as ovn-northd 23.03 numbers them. */
const IP_ROUTING = 13;
const POLICY = 15;
const route4 = U(50, 0x1f);
const route4b = U(51, 0x1f);
const policy = U(52, 0x1f);

const rows = (): [string, Row][] => [
  ...smallTopology(),
  ['Logical_Flow', logicalFlow(route4, ids.lr0, 'ingress', IP_ROUTING, 49, 'ip4.dst == 192.168.0.0/16',
    'ip.ttl--; flags.loopback = 1; reg8[0..15] = 1; reg8[16..31] = select(1, 2);')],
  // Another prefix over the same next hops: the same select, so the same group.
  ['Logical_Flow', logicalFlow(route4b, ids.lr0, 'ingress', IP_ROUTING, 49, 'ip4.dst == 192.169.0.0/16',
    'ip.ttl--; flags.loopback = 1; reg8[0..15] = 1; reg8[16..31] = select(1, 2);')],
  ['Logical_Flow', logicalFlow(policy, ids.lr0, 'ingress', POLICY, 100, 'ip4.src == 10.0.0.0/24',
    'reg8[0..15] = 2; reg8[16..31] = select(1, 2, 3);')],
];

/** A flow's actions, its group:N written as the group's text. */
function actionsOf(d: DesiredFlows, lf: string): string {
  const flows = d.table.flowsOf(`lf:${lf}`);
  if (flows.length !== 1) return `${flows.length} flows`;
  const table = d.groupTable();
  return (flows[0]?.actions ?? []).map((a) => {
    if (a.kind !== 'group') return formatActions([a]);
    return `group{${[...table].find(([, id]) => id === a.groupId)?.[0] ?? `? ${a.groupId}`}}`;
  }).join(',');
}

const head = (sym: boolean): string => `type=select,selection_method=dp_hash${sym ? ',selection_method_param=0x100000000' : ''}`;
/** The group of select(1..n) into reg8[16..31] (xreg4[48..63]) going on to OpenFlow table 'next'. */
const group = (sym: boolean, n: number, next: number): string => `group{${head(sym)}${Array.from({ length: n }, (_, i) =>
  `,bucket=bucket_id=${i},weight:100,actions=load:${i + 1}->xreg4[48..63],resubmit(,${next})`).join('')}}`;
const routeActions = (sym: boolean): string => `dec_ttl(),set_field:0x1/0x1->reg10,set_field:0x100000000/0xffff00000000->xreg4,${group(sym, 2, 22)}`;
const policyActions = (sym: boolean): string => `set_field:0x200000000/0xffff00000000->xreg4,${group(sym, 3, 24)}`;

t.test('select groups follow the flows that use them and the datapath\'s symmetric L4 hash', async (t) => {
  const run = new IncrementalRun(t, new DesiredFlows(), rows(), smallView());
  const d = run.d;
  const params = (): (bigint | undefined)[] => [...d.groupSpecs().values()].map((g) => g.selectionMethodParam);

  t.same(d.sourceErrors(), new Map(), 'every select row compiles');
  t.equal(actionsOf(d, route4), routeActions(false), 'no capability: dp_hash alone');
  t.equal(actionsOf(d, route4b), routeActions(false));
  t.equal(actionsOf(d, policy), policyActions(false));
  t.equal(d.groupTable().size, 2, 'the two routes share one group');
  t.same(params(), [undefined, undefined]);
  d.takeDirtyGroups();

  run.change([], { ...run.view, dpHashL4Sym: true }, 'the datapath has the symmetric L4 hash');
  t.equal(actionsOf(d, route4), routeActions(true), 'selection_method_param asks for it');
  t.equal(actionsOf(d, policy), policyActions(true));
  t.equal(d.groupTable().size, 2, 'the old groups are freed');
  t.same(params(), [1n << 32n, 1n << 32n], 'the groups to install carry the parameter');
  t.equal(d.takeDirtyGroups().length, 4, 'two groups removed, two added');

  run.change([{ table: 'Logical_Flow', uuid: route4 }], run.view, 'one route of the shared group deleted');
  t.equal(d.groupTable().size, 2, 'the other route still uses it');
  t.equal(d.takeDirtyGroups().length, 0, 'nothing to install or remove');
  run.change([{ table: 'Logical_Flow', uuid: route4b }], run.view, 'the other one deleted');
  t.equal(d.groupTable().size, 1, 'freed with its last user');
  t.equal(d.takeDirtyGroups().length, 1);

  run.change([], { ...run.view, dpHashL4Sym: false }, 'the capability gone');
  t.equal(actionsOf(d, policy), policyActions(false));
  t.same(params(), [undefined]);

  // Absent from the view: the engine's own option decides.
  const opt = new DesiredFlows({ dpHashL4Sym: true });
  opt.update(resetOf(rows()), smallView());
  t.equal(actionsOf(opt, policy), policyActions(true), 'the option, without a reading in the view');
  opt.update(null, smallView({ dpHashL4Sym: false }));
  t.equal(actionsOf(opt, policy), policyActions(false), 'the view\'s reading wins');
});

t.test('select rows stay out of the compile cache shared between agents', async (t) => {
  // Each agent allocates its own group ids: a row compiled by one must not hand its ids to another.
  const { SharedCompileCache } = await import('../../agent/flows/compile-cache.js');
  const cache = new SharedCompileCache();
  const a = new DesiredFlows({ sharedCache: cache });
  const b = new DesiredFlows({ sharedCache: cache });
  a.update(resetOf(rows()), smallView());
  b.update(resetOf(rows()), smallView());
  for (const [name, d] of [['a', a], ['b', b]] as const) {
    t.equal(d.groupTable().size, 2, `${name} has the groups its flows use`);
    t.equal(actionsOf(d, policy), policyActions(false), `${name}'s flow names its own group`);
  }
});
