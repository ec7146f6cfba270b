// Goal: ECMP routes (`ovn-nbctl --ecmp lr-route-add`) and ECMP reroute policies (several next
// hops, as ovn-kubernetes writes for multiple gateways) reach a chassis as the real
// ovn-controller 23.03.1 installs them: northd's `reg8[16..31] = select(...)` in lr_in_ip_routing
// and lr_in_policy becomes a select group (dp_hash, with the symmetric L4 hash when the datapath
// has it) whose buckets load the member's number and go on to the next table, and the
// lr_in_ip_routing_ecmp / lr_in_policy_ecmp flows pick the next hop by that number; flow for
// flow, with each group action replaced by the group as `ovs-ofctl dump-groups` prints it, and
// again when a next hop is added and when next hops are removed. Before, our agent refused the
// select rows ("Syntax error at `select'"), so ECMP did not route at all and the chassis acked
// each update with errors. Method: real NB and SB ovsdb-servers and the real ovn-northd; the
// real ovn-controller as hv1 binds two VMs on bridge A. Our DesiredFlows, fed the same SB as
// incremental steps with hv1's view (its datapath capabilities read from bridge A's switch),
// installs the flows of those four stages (by cookie) and its groups into bridge B through our
// OpenFlow channel; the dumps of both must be equal after every change, and the incremental
// engine must equal a fresh one.

import t, { type Test } from 'tap';
import { formatFlow } from '../../agent/compile/index.js';
import type { FlowSpec } from '../../agent/openflow/types.js';
import { convergeOnRows, oursBesideReal } from '../helpers/sb-follower.js';
import { realOvnInstalled, startRealCentral, startRealController, twoVms } from '../helpers/real-ovn-controller.js';

/** How long one step may take to converge. */
const STEP_MS_MAX = 60_000;
/** The router stages that choose among ECMP next hops (select) and act on the choice. */
const ECMP_STAGES: ReadonlySet<string> = new Set(['lr_in_ip_routing', 'lr_in_ip_routing_ecmp', 'lr_in_policy', 'lr_in_policy_ecmp']);

const texts = (fs: readonly FlowSpec[]): string[] => fs.map((f) => formatFlow(f, { cookie: true })).sort();

async function differential(t: Test): Promise<void> {
  const { sb, nbctl } = await startRealCentral(t, 'ecmpselect-');
  await nbctl('ls-add', 'sw0');
  for (const v of twoVms) await nbctl('lsp-add', 'sw0', v.name, '--', 'lsp-set-addresses', v.name, v.addr);
  const { sw: swA, log } = await startRealController(t, sb.socketPath, twoVms, nbctl);
  // A distributed router joined to sw0 (so local to hv1) with an outside network of next hops:
  // ECMP routes for IPv4 and IPv6 and a reroute policy over two next hops.
  await nbctl('lr-add', 'lr0');
  await nbctl('lrp-add', 'lr0', 'lr0-sw0', '00:00:00:00:ff:01', '10.0.0.254/24', 'fd00::fe/64');
  await nbctl('lsp-add', 'sw0', 'sw0-lr0', '--', 'lsp-set-type', 'sw0-lr0', 'router', '--', 'lsp-set-addresses', 'sw0-lr0', 'router',
    '--', 'lsp-set-options', 'sw0-lr0', 'router-port=lr0-sw0');
  await nbctl('lrp-add', 'lr0', 'lr0-ext', '00:00:00:00:ff:02', '172.16.0.1/24', 'fd00:ee::1/64');
  for (const hop of ['172.16.0.11', '172.16.0.12']) await nbctl('--ecmp', 'lr-route-add', 'lr0', '192.168.0.0/16', hop);
  for (const hop of ['fd00:ee::11', 'fd00:ee::12']) await nbctl('--ecmp', 'lr-route-add', 'lr0', 'fd00:99::/64', hop);
  await nbctl('lr-policy-add', 'lr0', '100', 'ip4.src == 10.0.0.0/24 && ip4.dst == 198.51.100.0/24', 'reroute', '172.16.0.21,172.16.0.22');
  await nbctl('--wait=hv', 'sync');
  const { sw: swB, channel: ch, follower } = await oursBesideReal(t, sb.socketPath, twoVms, swA);
  const agent = follower.agent;

  const step = async (name: string, expect: (a: readonly string[]) => boolean): Promise<void> => {
    const { real: a, ours: b, ms } = await convergeOnRows(follower, ch, swA, swB, (lf) => ECMP_STAGES.has(lf.external_ids.get('stage-name') ?? ''), expect, STEP_MS_MAX);
    t.comment(`${name}: ${a.length} flows, ${ms} ms`);
    t.ok(expect(a), `${name}: ovn-controller's flows are as expected${expect(a) ? '' : `\n${a.join('\n')}\n${log()}`}`);
    t.same(b, a, `${name}: ours equal ovn-controller's, flow for flow`);
    // Our reading of the datapath's capabilities agrees with what ovn-controller made of them.
    t.equal(a.some((l) => l.includes('selection_method_param=4294967296')), follower.localView.dpHashL4Sym === true,
      `${name}: the symmetric L4 hash asked for exactly when our view says the datapath has it`);
    t.same([...agent.sourceErrors().values()], [], `${name}: no logical flow refused`);
    t.same(texts([...agent.table.flows()].map(([, f]) => f)), texts([...follower.fresh().table.flows()].map(([, f]) => f)), `${name}: the incremental engine equals a fresh one`);
  };
  /** How many of the dumped flows jump to a select group of exactly `buckets` buckets. */
  const selects = (a: readonly string[], buckets: number): number => a.filter((l) => {
    const g = /group:\{type=select,selection_method=dp_hash[^}]*\}/.exec(l)?.[0] ?? '';
    return g !== '' && g.includes(`bucket_id:${buckets - 1},`) && !g.includes(`bucket_id:${buckets},`);
  }).length;
  const groupsOf = (...sizes: number[]) => (a: readonly string[]): boolean => {
    const want = new Map<number, number>();
    for (const s of sizes) want.set(s, (want.get(s) ?? 0) + 1);
    return [...want].every(([s, n]) => selects(a, s) === n) && selects(a, 1) === 0;
  };

  // IPv4 route, IPv6 route, policy: one select group of two each.
  await step('two next hops each', groupsOf(2, 2, 2));
  await nbctl('--ecmp', 'lr-route-add', 'lr0', '192.168.0.0/16', '172.16.0.13');
  const policy = (await nbctl('--bare', '--columns=_uuid', 'find', 'Logical_Router_Policy', 'priority=100')).trim();
  await nbctl('set', 'Logical_Router_Policy', policy, 'nexthops="172.16.0.21","172.16.0.22","172.16.0.23"');
  await nbctl('--wait=hv', 'sync');
  await step('a third next hop for the IPv4 route and the policy', groupsOf(3, 2, 3));
  await nbctl('lr-route-del', 'lr0', '192.168.0.0/16', '172.16.0.11');
  await nbctl('lr-route-del', 'lr0', 'fd00:99::/64', 'fd00:ee::12');
  await nbctl('--wait=hv', 'sync');
  // The IPv6 prefix is left with one route: a plain route, no group.
  await step('a next hop removed from each route', groupsOf(2, 3));
}

t.test('ECMP routes and reroute policies (select) compile as the real ovn-controller\'s, as next hops come and go', {
  skip: realOvnInstalled() ? false : 'OVN 23.03 and Open vSwitch are not installed', timeout: 600_000,
}, differential);
