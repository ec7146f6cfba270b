// Goal: a router port's gateway_mtu (options:gateway_mtu, OVN's path MTU discovery for traffic
// leaving through a gateway) reaches a chassis as the real ovn-controller 23.03.1 installs it:
// the check_pkt_larger flows and the ICMPv4 "fragmentation needed" / ICMPv6 "packet too big"
// errors whose icmp4.frag_mtu / icmp6.frag_mtu become a paused controller action carrying the
// MTU, flow for flow, and again when the MTU changes or goes. Before, our agent refused those
// logical flows (icmp4.frag_mtu was no field it knew), so a chassis of such a router
// acknowledged every update with errors and held --wait=hv back. Method: real NB and SB
// ovsdb-servers and the real ovn-northd; the real ovn-controller as hv1 binds two VMs on bridge
// A. Our DesiredFlows, fed the same SB as incremental steps with hv1's view, installs the flows
// of the rows that check packet sizes or set a frag MTU (by cookie) into bridge B through our
// OpenFlow channel; `ovs-ofctl dump-flows` of both must be equal after every change, and the
// incremental engine must equal a fresh one.

import t, { type Test } from 'tap';
import { formatFlow } from '../../agent/compile/index.js';
import type { FlowSpec } from '../../agent/openflow/types.js';
import { convergeOnRows, oursBesideReal } from '../helpers/sb-follower.js';
import { realOvnInstalled, startRealCentral, startRealController, twoVms } from '../helpers/real-ovn-controller.js';

/** How long one step may take to converge. */
const STEP_MS_MAX = 60_000;

const texts = (fs: readonly FlowSpec[]): string[] => fs.map((f) => formatFlow(f, { cookie: true })).sort();

async function differential(t: Test): Promise<void> {
  const { sb, nbctl } = await startRealCentral(t, 'gwmtu-');
  await nbctl('ls-add', 'sw0');
  for (const v of twoVms) await nbctl('lsp-add', 'sw0', v.name, '--', 'lsp-set-addresses', v.name, v.addr);
  const { sw: swA, log } = await startRealController(t, sb.socketPath, twoVms, nbctl);
  // A gateway router on hv1 between sw0 and an outside network, its outside port with an MTU.
  await nbctl('lr-add', 'gw', '--', 'set', 'Logical_Router', 'gw', 'options:chassis=hv1');
  await nbctl('lrp-add', 'gw', 'gw-sw0', '00:00:00:00:ee:01', '10.0.0.254/24', 'fd00::fe/64');
  await nbctl('lsp-add', 'sw0', 'sw0-gw', '--', 'lsp-set-type', 'sw0-gw', 'router', '--', 'lsp-set-addresses', 'sw0-gw', 'router',
    '--', 'lsp-set-options', 'sw0-gw', 'router-port=gw-sw0');
  await nbctl('lrp-add', 'gw', 'gw-ext', '00:00:00:00:ee:02', '172.16.0.1/24', 'fd00:ee::1/64');
  await nbctl('set', 'Logical_Router_Port', 'gw-ext', 'options:gateway_mtu=1400');
  await nbctl('--wait=hv', 'sync');
  const { sw: swB, channel: ch, follower } = await oursBesideReal(t, sb.socketPath, twoVms, swA);
  const agent = follower.agent;

  const step = async (name: string, expect: (a: readonly string[]) => boolean): Promise<void> => {
    // The rows that check a packet's size or set an ICMP error's MTU.
    const { real: a, ours: b, ms } = await convergeOnRows(follower, ch, swA, swB, (lf) => /frag_mtu|check_pkt_larger/.test(lf.actions), expect, STEP_MS_MAX);
    t.comment(`${name}: ${a.length} flows, ${ms} ms`);
    t.ok(expect(a), `${name}: ovn-controller's flows are as expected${expect(a) ? '' : `\n${a.join('\n')}\n${log()}`}`);
    t.same(b, a, `${name}: ours equal ovn-controller's, flow for flow`);
    t.same([...agent.sourceErrors().values()], [], `${name}: no logical flow refused`);
    t.same(texts([...agent.table.flows()].map(([, f]) => f)), texts([...follower.fresh().table.flows()].map(([, f]) => f)), `${name}: the incremental engine equals a fresh one`);
  };
  const has = (s: string) => (a: readonly string[]): boolean => a.some((l) => l.includes(s));
  const lacks = (s: string) => (a: readonly string[]): boolean => !a.some((l) => l.includes(s));
  const both = (...ps: ((a: readonly string[]) => boolean)[]) => (a: readonly string[]): boolean => ps.every((p) => p(a));
  // 1400 = 0x578 (icmp4.frag_mtu, 16 bits); 1418 = 0x58a is what check_pkt_larger compares with.
  await step('gateway_mtu=1400', both(has('check_pkt_larger(1414)'), has('00.00.00.0d.00.00.00.00.05.78'), has('00.00.00.15.00.00.00.00.00.00.05.78')));
  await nbctl('set', 'Logical_Router_Port', 'gw-ext', 'options:gateway_mtu=1300');
  await nbctl('--wait=hv', 'sync');
  await step('gateway_mtu=1300', both(has('00.00.00.0d.00.00.00.00.05.14'), lacks('05.78')));
  await nbctl('remove', 'Logical_Router_Port', 'gw-ext', 'options', 'gateway_mtu');
  await nbctl('--wait=hv', 'sync');
  await step('gateway_mtu removed', (a) => a.length === 0);
}

t.test('a router port\'s gateway_mtu compiles as the real ovn-controller\'s, as the MTU changes and goes', {
  skip: realOvnInstalled() ? false : 'OVN 23.03 and Open vSwitch are not installed', timeout: 600_000,
}, differential);
