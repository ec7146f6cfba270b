// Goal: template load balancers (options:template=true, ovn-kubernetes's NodePort services),
// session affinity (options:affinity_timeout, a Service's sessionAffinity) and symmetric replies
// over ECMP routes (ecmp_symmetric_reply, on a gateway router) reach a chassis as the real
// ovn-controller 23.03.1 makes them: the chassis's Chassis_Template_Var values put in the
// logical flows that name them ("^NAME") and in the load balancer's VIPs and backends (the
// hairpin tables 68..70), and chk_lb_aff / commit_lb_aff (table 78 and its learn()) on a switch
// and a router, IPv4 and IPv6, and commit_ecmp_nh's learn()s and the conntrack marks of the
// ECMP flows, and the hash select groups of load balancers with selection_fields, flow for
// flow, and again when the values change or go. Method:
// real NB and SB ovsdb-servers and the real ovn-northd; the real ovn-controller as hv1 binds two
// VMs on bridge A. Our DesiredFlows, fed the same SB as incremental steps with hv1's view,
// installs the flows of the rows that name variables, affinity or ECMP next hops (by cookie) and its tables
// 68..70 into bridge B through our OpenFlow channel, with its groups; `ovs-ofctl dump-flows` of both, each group action
// replaced by the group's buckets, must be equal after every change. The incremental engine
// must also equal a fresh one at each step. (A deleted Chassis_Template_Var row reaches
// ovn-controller 23.03.1 only through a recompute; see the last step.)

import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t, { type Test } from 'tap';
import { formatFlow } from '../../agent/compile/index.js';
import { OFTABLE } from '../../agent/compile/tables.js';
import type { FlowSpec } from '../../agent/openflow/types.js';
import type { SbRowChange } from '../../agent/sb-source.js';
import type * as sb from '../../ovsdb/rows/sb.js';
import { converge, dumpFlowsWithGroups, oursBesideReal } from '../helpers/sb-follower.js';
import { realOvnInstalled, startRealCentral, startRealController, twoVms } from '../helpers/real-ovn-controller.js';

const run = promisify(execFile);
const HAIRPIN_TABLES: readonly number[] = [OFTABLE.CHK_LB_HAIRPIN, OFTABLE.CHK_LB_HAIRPIN_REPLY, OFTABLE.CT_SNAT_HAIRPIN];
/** How long one step may take to converge. */
const STEP_MS_MAX = 60_000;

const vms = twoVms;

/** The cookies (first 32 bits of the UUID) of the logical flows whose text names a variable, affinity or an ECMP next hop. */
function templateCookies(rows: Iterable<SbRowChange>): Set<bigint> {
  const out = new Set<bigint>();
  for (const c of rows) {
    if (c.table !== 'Logical_Flow' || c.row === undefined) continue;
    const lf = c.row as unknown as sb.Logical_Flow;
    const text = `${lf.match} ${lf.actions}`;
    if (text.includes('^') || text.includes('lb_aff') || text.includes('ecmp_nh') || text.includes('ecmp_reply') || text.includes('hash_fields')) out.add(BigInt(`0x${lf._uuid.slice(0, 8)}`));
  }
  return out;
}

const texts = (fs: readonly FlowSpec[]): string[] => fs.map((f) => formatFlow(f, { cookie: true })).sort();

async function differential(t: Test): Promise<void> {
  const { sb, nbctl } = await startRealCentral(t, 'templatelb-');
  await nbctl('ls-add', 'sw0');
  for (const v of vms) await nbctl('lsp-add', 'sw0', v.name, '--', 'lsp-set-addresses', v.name, v.addr);
  // As ovn-kubernetes writes a NodePort service: the node's address and port from variables,
  // the backends a list in one variable; IPv6 with a literal port and a backend variable; a
  // VIP whose port variable hv1 does not have yet.
  await nbctl('--template', 'lb-add', 'lbt', '^NODEIP:^NODEPORT', '^BACKENDS', 'tcp');
  await nbctl('--template', 'lb-add', 'lbt6', '^NODEIP6:8080', '^B6', 'tcp', 'ipv6');
  await nbctl('--template', 'lb-add', 'lbt-later', '^NODEIP:^LATERPORT', '^BACKENDS', 'udp');
  for (const lb of ['lbt', 'lbt6', 'lbt-later']) await nbctl('ls-lb-add', 'sw0', lb);
  // Session affinity on sw0 and on lr0 (a router joined to sw0, so local too): IPv4 with ports,
  // IPv6, a port-less VIP.
  await nbctl('lr-add', 'lr0');
  await nbctl('lrp-add', 'lr0', 'lr0-sw0', '00:00:00:00:ff:01', '10.0.0.254/24', 'fd00::fe/64');
  await nbctl('lsp-add', 'sw0', 'sw0-lr0', '--', 'lsp-set-type', 'sw0-lr0', 'router', '--', 'lsp-set-addresses', 'sw0-lr0', 'router',
    '--', 'lsp-set-options', 'sw0-lr0', 'router-port=lr0-sw0');
  await nbctl('lb-add', 'lb-aff', '10.0.0.100:80', '10.0.0.1:8080,10.0.0.2:8080', 'tcp');
  await nbctl('lb-add', 'lb-aff', '10.0.0.101', '10.0.0.1,10.0.0.2');
  await nbctl('lb-add', 'lb-aff6', '[fd00::100]:443', '[fd00::1]:8443,[fd00::2]:8443', 'udp');
  await nbctl('set', 'Load_Balancer', 'lb-aff', 'options:affinity_timeout=60');
  await nbctl('set', 'Load_Balancer', 'lb-aff6', 'options:affinity_timeout=600');
  for (const lb of ['lb-aff', 'lb-aff6']) {
    await nbctl('ls-lb-add', 'sw0', lb);
    await nbctl('lr-lb-add', 'lr0', lb);
  }
  // Selection fields (a hash select group): ovn-northd names tp_src and tp_dst after the
  // protocol (udp_src), but leaves them as they are on a load balancer without one, and Open
  // vSwitch reads those as tcp_src and tcp_dst; IPv4 without a protocol, IPv6 over UDP.
  await nbctl('lb-add', 'lb-hash', '10.0.0.105:443', '10.0.0.1:443,10.0.0.2:443', 'tcp');
  await nbctl('clear', 'Load_Balancer', 'lb-hash', 'protocol');
  await nbctl('lb-add', 'lb-hash6', '[fd00::105]:53', '[fd00::1]:53,[fd00::2]:53', 'udp');
  await nbctl('set', 'Load_Balancer', 'lb-hash', 'selection_fields=ip_src,tp_dst');
  await nbctl('set', 'Load_Balancer', 'lb-hash6', 'selection_fields=eth_src,ip_dst,tp_src');
  for (const lb of ['lb-hash', 'lb-hash6']) await nbctl('ls-lb-add', 'sw0', lb);
  // A gateway router on hv1 with symmetric replies over two ECMP routes, IPv4 and IPv6.
  await nbctl('lr-add', 'gw', '--', 'set', 'Logical_Router', 'gw', 'options:chassis=hv1');
  await nbctl('lrp-add', 'gw', 'gw-sw0', '00:00:00:00:ee:01', '10.0.0.253/24');
  await nbctl('lsp-add', 'sw0', 'sw0-gw', '--', 'lsp-set-type', 'sw0-gw', 'router', '--', 'lsp-set-addresses', 'sw0-gw', 'router',
    '--', 'lsp-set-options', 'sw0-gw', 'router-port=gw-sw0');
  await nbctl('lrp-add', 'gw', 'gw-ext', '00:00:00:00:ee:02', '172.16.0.1/24', 'fd00:ee::1/64');
  for (const [prefix, hops] of [['192.168.0.0/16', ['172.16.0.11', '172.16.0.12']], ['fd00:99::/64', ['fd00:ee::11', 'fd00:ee::12']]] as const) {
    for (const hop of hops) await nbctl('--ecmp-symmetric-reply', 'lr-route-add', 'gw', prefix, hop);
  }
  await nbctl('create', 'Chassis_Template_Var', 'chassis=hv1', 'variables:NODEIP=10.0.0.200', 'variables:NODEPORT=30080',
    'variables:BACKENDS="10.0.0.1:8080,10.0.0.2:8080"', 'variables:NODEIP6="fd00::200"', 'variables:B6="[fd00::2]:80"');
  await nbctl('create', 'Chassis_Template_Var', 'chassis=hv2', 'variables:NODEIP=10.0.0.222', 'variables:NODEPORT=30099');

  const { sw: swA, pid: controllerPid, log } = await startRealController(t, sb.socketPath, vms, nbctl);
  const { sw: swB, channel: ch, follower } = await oursBesideReal(t, sb.socketPath, vms, swA);
  const agent = follower.agent;

  const step = async (name: string, expect: (a: readonly string[]) => boolean): Promise<void> => {
    const cookies = (): Set<bigint> => templateCookies(follower.rows());
    const { real: a, ours: b, ms } = await converge(follower,
      () => ch.reconcile([...agent.table.flows()].map(([, f]) => f).filter((f) => cookies().has(f.cookie) || HAIRPIN_TABLES.includes(f.table)), { groups: [...agent.groupSpecs().values()] }),
      () => {
        const now = cookies();
        const keep = (cookie: bigint, table: number): boolean => now.has(cookie) || HAIRPIN_TABLES.includes(table);
        return Promise.all([dumpFlowsWithGroups(swA, keep), dumpFlowsWithGroups(swB, keep)]);
      }, expect, STEP_MS_MAX);
    t.comment(`${name}: ${a.length} flows, ${ms} ms`);
    t.ok(expect(a), `${name}: ovn-controller's flows are as expected${expect(a) ? '' : `\n${a.join('\n')}\n${log()}`}`);
    t.same(b, a, `${name}: ours equal ovn-controller's, flow for flow`);
    t.same(texts([...agent.table.flows()].map(([, f]) => f)), texts([...follower.fresh().table.flows()].map(([, f]) => f)), `${name}: the incremental engine equals a fresh one`);
  };
  const has = (s: string) => (a: readonly string[]): boolean => a.some((l) => l.includes(s));
  const lacks = (s: string) => (a: readonly string[]): boolean => !a.some((l) => l.includes(s));
  const both = (...ps: ((a: readonly string[]) => boolean)[]) => (a: readonly string[]): boolean => ps.every((p) => p(a));

  await step('hv1\'s values', both(has('nw_dst=10.0.0.200'), has('tp_dst=30080'), has('ipv6_dst=fd00::200'), lacks('10.0.0.222'), has('fields(ip_src,tcp_dst)')));
  await nbctl('set', 'Chassis_Template_Var', 'hv1', 'variables:NODEIP=10.0.0.201', 'variables:LATERPORT=30053');
  await nbctl('--wait=hv', 'sync');
  await step('a value changed, a missing one set', both(has('nw_dst=10.0.0.201'), lacks('nw_dst=10.0.0.200'), has('tp_dst=30053')));
  await nbctl('set', 'Chassis_Template_Var', 'hv1', 'variables:BACKENDS="10.0.0.2:8080"');
  await nbctl('remove', 'Chassis_Template_Var', 'hv1', 'variables', 'NODEPORT');
  await nbctl('--wait=hv', 'sync');
  await step('a backend fewer, a variable gone', both(lacks('tp_dst=30080'), has('tp_dst=30053')));
  // The row deleted: ovn-controller 23.03.1 keeps the flows made with the last values (seen
  // here: its incremental step does not pick up the deletion) until it recomputes, which leaves
  // none of them, as ours does at once. So it is asked to recompute before the comparison.
  await nbctl('destroy', 'Chassis_Template_Var', 'hv1');
  await nbctl('--wait=hv', 'sync');
  await run('ovn-appctl', ['-t', join(swA.dir, `ovn-controller.${controllerPid}.ctl`), 'recompute']);
  await step('hv1\'s row gone (ovn-controller recomputed)', both(lacks('10.0.0.201'), lacks('fd00::200')));
}

t.test('template and affinity load balancers and ECMP symmetric replies compile as the real ovn-controller\'s, as the variables change', {
  skip: realOvnInstalled() ? false : 'OVN 23.03 and Open vSwitch are not installed', timeout: 600_000,
}, differential);
