// Goal: on a real Open vSwitch, a Flow_Sample_Collector_Set added to the integration bridge makes
// the installed flow of a logical flow with a sample action gain the action, and removing it
// makes the flow lose it; a collector set on another bridge counts for nothing until it is moved
// to the integration bridge. Method: a real ovsdb-server and ovs-vswitchd (userspace datapath,
// dummy devices); the LocalAgent reads the Open_vSwitch database (its SB side a recording fake)
// and hands every new LocalView to the flow side (AgentFlows over our OpenFlow channel to the
// same br-int, its SB rows the test's), as `ovnts agent` does; the collector sets are made with
// ovs-vsctl and the flows read back with ovs-ofctl dump-flows.
import t from 'tap';
import { AgentFlows } from '../../agent/flows/agent-flows.js';
import { OfSwitch } from '../../agent/flows/ofswitch.js';
import { LocalAgent } from '../../agent/local/local-agent.js';
import { OVS_MONITOR } from '../../agent/local/ovs-rows.js';
import type { LocalView } from '../../agent/local-view.js';
import { OfChannel } from '../../agent/openflow/channel.js';
import type { SbRowChange } from '../../agent/sb-source.js';
import type { ColumnSchema, Row } from '../../ovsdb/index.js';
import { parseDatabaseSchema } from '../../ovsdb/index.js';
import { OvsdbClient } from '../../ovsdb/client.js';
import { defaultValue } from '../../ovsdb/datum.js';
import { SB_SCHEMA_JSON } from '../../ovsdb/schemas/index.js';
import { FakeSb } from '../helpers/fake-sb.js';
import { until } from '../helpers/ovnts-cli.js';
import { ovsSwitchInstalled, startOvsSwitch } from '../helpers/ovs-switch.js';
import { chassis, datapath, logicalFlow, port, resetOf } from './flows-fixtures.js';

const skip = ovsSwitchInstalled() ? false : 'Open vSwitch is not installed';
const schema = parseDatabaseSchema(SB_SCHEMA_JSON);

/** A whole SB row for the LocalAgent: the schema's defaults, then `cols`. */
function sbRow(table: string, uuid: string, cols: Record<string, unknown>): Row {
  const ts = schema.tables.get(table);
  if (ts === undefined) throw new Error(table);
  const row: Record<string, unknown> = { _uuid: uuid, _version: uuid };
  for (const c of ts.columns.values()) row[c.name] = defaultValue((c as ColumnSchema).type);
  return Object.assign(row, cols) as Row;
}

const CH = '00000000-0000-4000-8000-000000000001';
const EN = '00000000-0000-4000-8000-000000000002';
const SW = '00000000-0000-4000-8000-000000000003';
const PB = '00000000-0000-4000-8000-000000000004';
/** Two sampled drops (ingress table 9: OpenFlow table 17), to collector sets 123 and 124. */
const DROP123 = 'b0000123-0000-4000-8000-000000000001';
const DROP124 = 'b0000124-0000-4000-8000-000000000002';

t.test('a collector set on br-int turns the sample action on, and off again', { skip, timeout: 120_000 }, async (t) => {
  const sw = await startOvsSwitch();
  t.teardown(() => sw.stop());
  await sw.vsctl('set', 'open_vswitch', '.', 'external_ids:system-id=hv1', 'external_ids:ovn-encap-type=geneve', 'external_ids:ovn-encap-ip=127.0.0.1');
  await sw.vsctl('add-br', 'br-ex', '--', 'set', 'bridge', 'br-ex', 'datapath_type=netdev');
  await sw.vsctl('add-port', 'br-int', 'tap1', '--', 'set', 'interface', 'tap1', 'type=dummy', 'ofport_request=1', 'external_ids:iface-id=vm1');

  const logs: string[] = [];
  const ovs = new OvsdbClient({ target: sw.dbTarget, database: 'Open_vSwitch', tables: OVS_MONITOR });
  const agent = new LocalAgent({ ovs, sbTransact: new FakeSb().transact, hostname: 'hv1', datapathType: 'netdev', resendMs: 500, log: (l, m) => logs.push(`${l}: ${m}`) });
  const channel = await OfChannel.connect({ target: sw.mgmtTarget });
  const flows = new AgentFlows(new OfSwitch(channel));
  t.teardown(async () => {
    await agent.stop();
    await ovs.close();
    channel.close();
  });

  // The flow side's SB: hv1 with vm1 on sw0 (key 5), and the two drops.
  const drop = (uuid: string, set: number, prio: number): Row =>
    logicalFlow(uuid, SW, 'ingress', 9, prio, `ip4.dst == 10.0.0.${set - 100}`, `sample(probability=65535,collector_set=${set},obs_domain=1,obs_point=$cookie); /* drop */`);
  const flowRows: [string, Row][] = [
    ['Chassis', chassis(CH, 'hv1')],
    ['Datapath_Binding', datapath(SW, 5, 'switch')],
    ['Port_Binding', port(PB, SW, 'vm1', 1, { chassis: CH })],
    ['Logical_Flow', drop(DROP123, 123, 100)],
    ['Logical_Flow', drop(DROP124, 124, 101)],
  ];
  // Views handed over one at a time, in order, as the runtime does; the first with the SB rows.
  let applied: Promise<unknown> = Promise.resolve();
  let first = true;
  const views: LocalView[] = [];
  const apply = (v: LocalView): void => {
    if (!v.vifs.has('vm1')) return;
    views.push(v);
    const u = first ? resetOf(flowRows) : null;
    first = false;
    applied = applied.then(async () => {
      const r = await flows.apply(u, v);
      if (r.errors.length > 0) logs.push(`flow errors: ${r.errors.join('; ')}`);
    });
  };
  agent.onViewChange(apply);
  agent.start();
  agent.applySbUpdate({
    reset: true, fromRevision: 0, toRevision: 1, changes: [
      { table: 'Chassis', uuid: CH, row: sbRow('Chassis', CH, { name: 'hv1', hostname: 'hv1', encaps: [EN] }) },
      { table: 'Encap', uuid: EN, row: sbRow('Encap', EN, { type: 'geneve', ip: '127.0.0.1', chassis_name: 'hv1', options: new Map([['csum', 'true']]) }) },
    ] satisfies SbRowChange[],
  });

  /** The actions of table 17's flow with `cookie`, as ovs-ofctl prints them. */
  const actionsOf = async (cookie: string): Promise<string | undefined> => {
    for (const line of (await sw.ofctl('dump-flows', '--no-stats', 'table=17')).split('\n')) {
      const m = new RegExp(`cookie=${cookie}, .* actions=(.*)$`).exec(line.trim());
      if (m !== null) return m[1];
    }
    return undefined;
  };
  const waitActions = async (label: string, cookie: string, want: string): Promise<string> => {
    let last: string | undefined;
    return until(() => `${label}: ${last} is not ${want}\n${logs.slice(-8).join('\n')}`, async () => ((last = await actionsOf(cookie)) === want ? want : undefined));
  };
  // Domain 1 in the high byte, sw0's key 5 in the low 24 bits: 0x01000005; the point is the cookie.
  const sampled = (set: number, point: number): string => `sample(probability=65535,collector_set_id=${set},obs_domain_id=16777221,obs_point_id=${point})`;

  t.equal(await waitActions('no collector set', '0xb0000123', 'drop'), 'drop', 'no collector set: a plain drop');
  t.equal(await actionsOf('0xb0000124'), 'drop');
  t.same([...(agent.view.sampleCollectors ?? [])], [], 'the view has no collector set');

  await sw.vsctl('--', '--id=@br', 'get', 'Bridge', 'br-int', '--', 'create', 'Flow_Sample_Collector_Set', 'id=123', 'bridge=@br');
  t.equal(await waitActions('set 123 on br-int', '0xb0000123', sampled(123, 0xb0000123)), sampled(123, 0xb0000123), 'set 123 added to br-int: the drop samples');
  t.same([...(agent.view.sampleCollectors ?? [])], [123]);

  // Set 124 on br-ex, in the transaction that plugs vm2 in: the view that has vm2 has seen it.
  const set124 = (await sw.vsctl('--', '--id=@br', 'get', 'Bridge', 'br-ex', '--', 'create', 'Flow_Sample_Collector_Set', 'id=124', 'bridge=@br',
    '--', 'add-port', 'br-int', 'tap2', '--', 'set', 'interface', 'tap2', 'type=dummy', 'ofport_request=2', 'external_ids:iface-id=vm2')).trim();
  await until('vm2 in the view', async () => (agent.view.vifs.has('vm2') ? true : undefined));
  t.same([...(agent.view.sampleCollectors ?? [])], [123], 'a set on br-ex is not the integration bridge\'s');
  await applied;
  t.equal(await actionsOf('0xb0000124'), 'drop', 'the drop to set 124 stays a plain drop');

  await sw.vsctl('--', '--id=@br', 'get', 'Bridge', 'br-int', '--', 'set', 'Flow_Sample_Collector_Set', set124, 'bridge=@br');
  t.equal(await waitActions('set 124 moved to br-int', '0xb0000124', sampled(124, 0xb0000124)), sampled(124, 0xb0000124), 'set 124 moved to br-int: that drop samples too');
  t.same([...(agent.view.sampleCollectors ?? [])].sort(), [123, 124]);

  await sw.vsctl('destroy', 'Flow_Sample_Collector_Set', '123');
  t.equal(await waitActions('set 123 removed', '0xb0000123', 'drop'), 'drop', 'set 123 removed: its drop is a plain drop again');
  t.equal(await actionsOf('0xb0000124'), sampled(124, 0xb0000124), 'the other one still samples');
  await applied;
  t.ok(views.length >= 4, `the flow side was handed ${views.length} views`);
});
