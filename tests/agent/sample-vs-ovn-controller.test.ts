// Goal: OVN 23.03's drop sampling reaches a chassis as the real ovn-controller 23.03.1 installs
// it: with NB_Global options:debug_drop_collector_set, ovn-northd writes every drop as
// sample(...); /* drop */, and the flows of those logical flows carry OpenFlow's sample action
// (the datapath's key in the observation domain, the flow's cookie as the point) exactly while
// the integration bridge has that Flow_Sample_Collector_Set, flow for flow; so do the drops of
// the physical tables (0, 40, 41 and 65: the observation point is the table), which ovn-controller
// samples from SB_Global's copy of the options; and again when the domain changes, when the NB
// names another set, and when a collector set comes and goes. Method: real NB and SB ovsdb-servers and the
// real ovn-northd; the real ovn-controller as hv1 with two VMs on bridge A. Our DesiredFlows,
// fed the same SB as incremental steps with hv1's view, whose collector sets are read from
// bridge B's own Open_vSwitch database as the agent reads them (agent/local/ovs-rows.ts),
// installs the flows of the logical flows with a sample action (by cookie) and the physical
// drops into bridge B through our OpenFlow channel. Each collector set is made on both switches with ovs-vsctl.
// `ovs-ofctl dump-flows` of both must be equal after every change, and the incremental engine
// must equal a fresh one.

import t, { type Test } from 'tap';
import { OVS_MONITOR, bridgeByName, sampleCollectorsOf } from '../../agent/local/ovs-rows.js';
import type { SbRowChange } from '../../agent/sb-source.js';
import { OvsdbClient } from '../../ovsdb/client.js';
import type * as sb from '../../ovsdb/rows/sb.js';
import type { OvsSwitch } from '../helpers/ovs-switch.js';
import { until } from '../helpers/ovnts-cli.js';
import { converge, oursBesideReal } from '../helpers/sb-follower.js';
import { realOvnInstalled, startRealCentral, startRealController, twoVms } from '../helpers/real-ovn-controller.js';
import { difference } from './flows-fixtures.js';

/** How long one step may take to converge. */
const STEP_MS_MAX = 60_000;

/** The cookies of the logical flows whose actions sample. */
function sampleCookies(rows: Iterable<SbRowChange>): Set<bigint> {
  const out = new Set<bigint>();
  for (const c of rows) {
    if (c.table !== 'Logical_Flow' || c.row === undefined) continue;
    const lf = c.row as unknown as sb.Logical_Flow;
    if (lf.actions.includes('sample(')) out.add(BigInt(`0x${lf._uuid.slice(0, 8)}`));
  }
  return out;
}

/**
 * The physical tables' drops ovn-controller samples (physical.c's put_drop): the defaults of
 * tables 0, 40 and 65, the loopback drops of table 41 (priority 100) and its localnet drops
 * (160).
 */
function physicalDrop(table: number, priority: number): boolean {
  return ([0, 40, 65].includes(table) && priority === 0) || (table === 41 && (priority === 100 || priority === 160));
}

/** A bridge's flows of those cookies and its physical drops, as `ovs-ofctl dump-flows --no-stats` prints them, sorted. */
async function dump(sw: OvsSwitch, cookies: ReadonlySet<bigint>): Promise<string[]> {
  const out: string[] = [];
  for (const line of (await sw.ofctl('dump-flows', '--no-stats')).split('\n').map((l) => l.trim())) {
    // ovs-ofctl leaves out a zero cookie and table 0.
    const m = /^(?:cookie=(0x[0-9a-f]+), )?(?:table=(\d+), )?priority=(\d+)/.exec(line);
    if (m !== null && (cookies.has(BigInt(m[1] ?? 0)) || physicalDrop(Number(m[2] ?? 0), Number(m[3])))) out.push(line);
  }
  return out.sort();
}

async function differential(t: Test): Promise<void> {
  const { sb, nbctl } = await startRealCentral(t, 'sample-');
  await nbctl('ls-add', 'sw0');
  for (const v of twoVms) await nbctl('lsp-add', 'sw0', v.name, '--', 'lsp-set-addresses', v.name, v.addr, '--', 'lsp-set-port-security', v.name, v.addr);
  // Drops of ACLs both ways, and a router's, beside the switch's own (port security, ...).
  await nbctl('acl-add', 'sw0', 'from-lport', '1001', 'ip4.dst == 10.0.0.99', 'drop');
  await nbctl('acl-add', 'sw0', 'to-lport', '1002', 'tcp.dst == 23', 'drop');
  await nbctl('lr-add', 'lr0');
  await nbctl('lrp-add', 'lr0', 'lr0-sw0', '00:00:00:00:ff:01', '10.0.0.254/24');
  await nbctl('lsp-add', 'sw0', 'sw0-lr0', '--', 'lsp-set-type', 'sw0-lr0', 'router', '--', 'lsp-set-addresses', 'sw0-lr0', 'router',
    '--', 'lsp-set-options', 'sw0-lr0', 'router-port=lr0-sw0');
  await nbctl('set', 'NB_Global', '.', 'options:debug_drop_collector_set=123', 'options:debug_drop_domain_id=1');

  const { sw: swA, log } = await startRealController(t, sb.socketPath, twoVms, nbctl);
  const { sw: swB, channel: ch, follower } = await oursBesideReal(t, sb.socketPath, twoVms, swA);
  const agent = follower.agent;
  // Our side reads bridge B's collector sets from its Open_vSwitch database, as the agent does.
  const ovsB = new OvsdbClient({ target: swB.dbTarget, database: 'Open_vSwitch', tables: OVS_MONITOR });
  ovsB.start();
  t.teardown(() => ovsB.close());
  const collectorsB = (): Set<number> => sampleCollectorsOf((name) => ovsB.table(name), bridgeByName((name) => ovsB.table(name), 'br-int'));
  const viewFromB = async (want: readonly number[]): Promise<void> => {
    await until(() => `bridge B's collector sets are ${[...collectorsB()].join(',')}, not ${want.join(',')}`,
      async () => ([...collectorsB()].sort().join(',') === want.join(',') ? true : undefined));
    follower.setView({ ...follower.localView, sampleCollectors: collectorsB() });
  };
  /** The same collector set on both bridges' br-int (what ovn.at's check_sample_drops makes, without the IPFIX target). */
  const addSet = async (id: number): Promise<void> => {
    for (const sw of [swA, swB]) await sw.vsctl('--', '--id=@br', 'get', 'Bridge', 'br-int', '--', 'create', 'Flow_Sample_Collector_Set', `id=${id}`, 'bridge=@br');
  };

  const step = async (name: string, expect: (a: readonly string[]) => boolean): Promise<void> => {
    const cookies = (): Set<bigint> => sampleCookies(follower.rows());
    const { real: a, ours: b, ms } = await converge(follower,
      () => ch.reconcile([...agent.table.flows()].map(([, f]) => f).filter((f) => cookies().has(f.cookie) || physicalDrop(f.table, f.priority))),
      () => Promise.all([dump(swA, cookies()), dump(swB, cookies())]), expect, STEP_MS_MAX);
    t.comment(`${name}: ${a.length} flows, ${ms} ms`);
    t.ok(expect(a), `${name}: ovn-controller's flows are as expected${expect(a) ? '' : `\n${a.join('\n')}\n${log()}`}`);
    t.same(b, a, `${name}: ours equal ovn-controller's, flow for flow`);
    t.equal(difference(agent, follower.fresh()), undefined, `${name}: the incremental engine equals a fresh one`);
  };
  const has = (s: string) => (a: readonly string[]): boolean => a.some((l) => l.includes(s));
  const lacks = (s: string) => (a: readonly string[]): boolean => !a.some((l) => l.includes(s));
  const both = (...ps: ((a: readonly string[]) => boolean)[]) => (a: readonly string[]): boolean => ps.every((p) => p(a));
  const many = (a: readonly string[]): boolean => a.length >= 10;
  /** The default drops of the physical tables: plain, or sampled to `set` in `domain` (its point the table). */
  const physical = (set?: number, domain = 0) => (a: readonly string[]): boolean => [0, 40, 65].every((table) => a.some((l) =>
    l.startsWith(table === 0 ? 'priority=0 ' : `table=${table}, priority=0 `)
    && l.endsWith(set === undefined ? 'actions=drop' : `actions=sample(probability=65535,collector_set_id=${set},obs_domain_id=${domain * 2 ** 24},obs_point_id=${table})`)));

  await step('no collector set on the bridge: plain drops', both(many, lacks('sample('), has('actions=drop'), physical()));
  await addSet(123);
  await viewFromB([123]);
  // Domain 1: 0x01 in the high byte, the datapath's key (sw0 and lr0: 1 and 2) below.
  await step('collector set 123 on br-int: the drops sample', both(many, has('actions=sample(probability=65535,collector_set_id=123,obs_domain_id=1677721'), lacks('actions=drop'), physical(123, 1)));
  await nbctl('set', 'NB_Global', '.', 'options:debug_drop_domain_id=7');
  await nbctl('--wait=hv', 'sync');
  await step('domain 7', both(has('obs_domain_id=11744051'), lacks('obs_domain_id=1677721'), physical(123, 7)));
  // Another collector set in the NB than on the bridge: nothing to report to.
  await nbctl('set', 'NB_Global', '.', 'options:debug_drop_collector_set=124');
  await nbctl('--wait=hv', 'sync');
  await step('the NB names set 124, the bridge has 123', both(many, lacks('sample('), has('actions=drop'), physical()));
  await addSet(124);
  await viewFromB([123, 124]);
  await step('set 124 added', both(many, has('collector_set_id=124'), lacks('actions=drop'), physical(124, 7)));
  for (const sw of [swA, swB]) await sw.vsctl('destroy', 'Flow_Sample_Collector_Set', '124');
  await viewFromB([123]);
  await step('set 124 removed: plain drops again', both(many, lacks('sample('), has('actions=drop'), physical()));
}

t.test('drop sampling as the real ovn-controller installs it, as the collector sets and options change', {
  skip: realOvnInstalled() ? false : 'OVN 23.03 and Open vSwitch are not installed', timeout: 600_000,
}, differential);
