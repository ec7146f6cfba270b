// The agent's port mirrors on a real Open vSwitch: the LocalAgent, fed SB rows by the test (no
// central: the SB Mirror rows and Port_Binding.mirror_rules are the test's), makes, changes and
// removes the OVS Mirror and its GRE/ERSPAN output port as the rows change, ovs-vswitchd takes
// the tunnel port (it gets an OpenFlow port and no error), a mirror without ovn-owned is left
// alone, a restarted agent finds nothing to redo, and --cleanup removes what it made. Method: a
// real ovsdb-server and ovs-vswitchd (userspace datapath, dummy devices) in a temp folder, read
// back with ovs-vsctl; the SB side is a recording fake that accepts every transaction.
import t from 'tap';
import type { ColumnSchema, Row } from '../../ovsdb/index.js';
import { parseDatabaseSchema } from '../../ovsdb/index.js';
import { defaultValue } from '../../ovsdb/datum.js';
import { SB_SCHEMA_JSON } from '../../ovsdb/schemas/index.js';
import { OvsdbClient } from '../../ovsdb/client.js';
import { LocalAgent } from '../../agent/local/local-agent.js';
import { OVS_MONITOR } from '../../agent/local/ovs-rows.js';
import type { SbRowChange } from '../../agent/sb-source.js';
import { ovsSwitchInstalled, startOvsSwitch } from '../helpers/ovs-switch.js';
import { FakeSb } from '../helpers/fake-sb.js';
import { until } from '../helpers/ovnts-cli.js';
import { mapOf, uuids, vsctlFind } from './local-harness.js';

const skip = ovsSwitchInstalled() ? false : 'Open vSwitch is not installed';
const schema = parseDatabaseSchema(SB_SCHEMA_JSON);

/** A whole SB row: the schema's defaults, then `cols`. */
function sbRow(table: string, uuid: string, cols: Record<string, unknown>): Row {
  const ts = schema.tables.get(table);
  if (ts === undefined) throw new Error(table);
  const row: Record<string, unknown> = { _uuid: uuid, _version: `${uuid}-${JSON.stringify(cols, (_k, v: unknown) => (v instanceof Map ? [...v] : v))}` };
  for (const c of ts.columns.values()) row[c.name] = defaultValue((c as ColumnSchema).type);
  return Object.assign(row, cols) as Row;
}

const CH = '00000000-0000-4000-8000-000000000001';
const EN = '00000000-0000-4000-8000-000000000002';
const PB = '00000000-0000-4000-8000-000000000003';
const M1 = '00000000-0000-4000-8000-000000000011';
const M2 = '00000000-0000-4000-8000-000000000012';

t.test('OVS mirrors follow the SB rows on a real switch', { skip }, async (t) => {
  const sw = await startOvsSwitch({ bridge: 'br-test' });
  t.teardown(() => sw.stop());
  await sw.vsctl('set', 'open_vswitch', '.', 'external_ids:system-id=hv1', 'external_ids:ovn-encap-type=geneve', 'external_ids:ovn-encap-ip=127.0.0.1');
  const logs: string[] = [];
  const fake = new FakeSb();
  let revision = 0;
  const start = (): { agent: LocalAgent; ovs: OvsdbClient } => {
    const ovs = new OvsdbClient({ target: sw.dbTarget, database: 'Open_vSwitch', tables: OVS_MONITOR });
    const agent = new LocalAgent({ ovs, sbTransact: fake.transact, hostname: 'hv1-host', datapathType: 'netdev', resendMs: 500, log: (l, m) => logs.push(`${l}: ${m}`) });
    agent.start();
    return { agent, ovs };
  };
  let { agent, ovs } = start();
  t.teardown(async () => {
    await agent.stop();
    await ovs.close();
  });
  const feed = (changes: SbRowChange[], reset = false): void => {
    agent.applySbUpdate({ reset, fromRevision: revision, toRevision: revision + 1, changes });
    revision++;
  };
  const base: SbRowChange[] = [
    { table: 'Chassis', uuid: CH, row: sbRow('Chassis', CH, { name: 'hv1', hostname: 'hv1-host', encaps: [EN] }) },
    { table: 'Encap', uuid: EN, row: sbRow('Encap', EN, { type: 'geneve', ip: '127.0.0.1', chassis_name: 'hv1', options: new Map([['csum', 'true']]) }) },
  ];
  const pb = (rules: string[]): SbRowChange => ({ table: 'Port_Binding', uuid: PB, row: sbRow('Port_Binding', PB, { logical_port: 'vm1', chassis: [CH], tunnel_key: 1, mirror_rules: rules }) });
  const mirror = (uuid: string, name: string, cols: Record<string, unknown>): SbRowChange =>
    ({ table: 'Mirror', uuid, row: sbRow('Mirror', uuid, { name, filter: 'from-lport', sink: '192.0.2.9', type: 'gre', index: 7, ...cols }) });

  await until('br-int', async () => ((await vsctlFind(sw, 'bridge', 'name=br-int')).length === 1 ? true : undefined));
  await sw.vsctl('add-port', 'br-int', 'tap1', '--', 'set', 'interface', 'tap1', 'type=dummy', 'external_ids:iface-id=vm1');
  const tap1 = uuids((await vsctlFind(sw, 'port', 'name=tap1'))[0]?._uuid)[0];
  // A mirror the operator made: never ours to touch.
  await sw.vsctl('--', '--id=@m', 'create', 'mirror', 'name=operator', 'select-all=true', '--', 'add', 'bridge', 'br-int', 'mirrors', '@m');

  const state = async (): Promise<{ mirrors: Record<string, unknown>[]; port: Record<string, unknown> | undefined; iface: Record<string, unknown> | undefined }> => ({
    mirrors: await vsctlFind(sw, 'mirror'),
    port: (await vsctlFind(sw, 'port', 'name=ovn-m1'))[0],
    iface: (await vsctlFind(sw, 'interface', 'name=ovn-m1'))[0],
  });
  const ours = (s: { mirrors: Record<string, unknown>[] }): Record<string, unknown> | undefined => s.mirrors.find((m) => mapOf(m.external_ids).get('ovn-owned') === 'true');

  feed([...base, pb([M1]), mirror(M1, 'm1', {})], true);
  const made = await until(() => `mirror m1 made\n${logs.slice(-10).join('\n')}`, async () => {
    const s = await state();
    const ofport = s.iface?.ofport;
    return ours(s) !== undefined && typeof ofport === 'number' && ofport > 0 ? s : undefined;
  });
  const m = ours(made);
  t.equal(m?.name, 'm1');
  t.same(uuids(m?.select_src_port), [tap1], 'select_src_port: the VIF of the from-lport mirror');
  t.same(uuids(m?.select_dst_port), []);
  t.same(uuids(m?.output_port), uuids(made.port?._uuid), 'output_port: ovn-m1');
  t.equal(made.iface?.type, 'gre');
  t.same(Object.fromEntries(mapOf(made.iface?.options)), { remote_ip: '192.0.2.9', key: '7' });
  t.same(made.iface?.error, ['set', []], 'ovs-vswitchd took the GRE port');
  const br = (await vsctlFind(sw, 'bridge', 'name=br-int'))[0];
  t.ok(uuids(br?.mirrors).includes(uuids(m?._uuid)[0] as string), 'the mirror is in Bridge.mirrors');
  t.equal(made.mirrors.length, 2, "ours and the operator's");

  // ERSPAN to an IPv6 sink, to-lport.
  feed([mirror(M1, 'm1', { type: 'erspan', sink: 'fd00::9', index: 5, filter: 'to-lport' })]);
  const v6 = await until(() => `mirror m1 as ip6erspan\n${logs.slice(-10).join('\n')}`, async () => {
    const s = await state();
    return s.iface?.type === 'ip6erspan' && uuids(ours(s)?.select_dst_port).length === 1 ? s : undefined;
  });
  t.same(Object.fromEntries(mapOf(v6.iface?.options)), { remote_ip: 'fd00::9', key: '5', erspan_idx: '5', erspan_ver: '1' });
  t.same(uuids(ours(v6)?.select_src_port), [], 'moved from select_src_port');
  t.same(uuids(ours(v6)?.select_dst_port), [tap1], 'to select_dst_port');
  t.same(v6.iface?.error, ['set', []], 'ovs-vswitchd took the ip6erspan port');
  t.equal(v6.port?._uuid !== undefined && uuids(v6.port._uuid)[0], uuids(made.port?._uuid)[0], 'changed in place: the same port');

  // A malformed second mirror is logged and skipped; the first stays.
  feed([pb([M1, M2]), mirror(M2, 'm2', { sink: 'sink.example' })]);
  await until(() => `m2 skipped\n${logs.join('\n')}`, async () => (logs.some((l) => l.includes('SB mirror m2 skipped: sink "sink.example"')) ? true : undefined));
  await agent.whenIdle();
  t.equal((await vsctlFind(sw, 'mirror', 'name=m2')).length, 0, 'no mirror m2');
  t.equal((await vsctlFind(sw, 'port', 'name=ovn-m2')).length, 0, 'no port ovn-m2');

  // A restarted agent finds nothing to redo.
  await agent.stop();
  await ovs.close();
  // Statistics change on their own (every 5 s): the columns the agent writes.
  const written = async (): Promise<string> => JSON.stringify((await vsctlFind(sw, 'mirror')).map((r) => [r._uuid, r.name, r.select_src_port, r.select_dst_port, r.output_port, r.external_ids]));
  const before = await written();
  const txnsBefore = logs.filter((l) => l.includes('mirror m1')).length;
  ({ agent, ovs } = start());
  feed([...base, pb([M1, M2]), mirror(M1, 'm1', { type: 'erspan', sink: 'fd00::9', index: 5, filter: 'to-lport' }), mirror(M2, 'm2', { sink: 'sink.example' })], true);
  await until('the restarted agent sees the bridge', () => agent.whenBridgeReady().then(() => true));
  await agent.whenIdle();
  t.equal(await written(), before, 'the same Mirror rows after a restart');
  t.equal(logs.filter((l) => l.includes('mirror m1')).length, txnsBefore, 'and no mirror transaction');

  // Detached: the mirror and its port go, the operator's stays.
  feed([pb([])]);
  await until(() => `m1 removed\n${logs.slice(-10).join('\n')}`, async () => ((await vsctlFind(sw, 'mirror', 'name=m1')).length === 0 ? true : undefined));
  t.equal((await vsctlFind(sw, 'port', 'name=ovn-m1')).length, 0, 'ovn-m1 removed with it');
  t.same((await vsctlFind(sw, 'mirror')).map((r) => r.name), ['operator'], "the operator's mirror stays");
  t.equal((await vsctlFind(sw, 'port', 'name=tap1')).length, 1, 'the VIF stays');

  // Attached again, then the SB row deleted.
  feed([pb([M1])]);
  await until('m1 made again', async () => ((await vsctlFind(sw, 'mirror', 'name=m1')).length === 1 ? true : undefined));
  feed([{ table: 'Mirror', uuid: M1 }]);
  await until('m1 removed with its SB row', async () => ((await vsctlFind(sw, 'mirror', 'name=m1')).length === 0 && (await vsctlFind(sw, 'port', 'name=ovn-m1')).length === 0 ? true : undefined));

  // Made again, then --cleanup.
  feed([mirror(M1, 'm1', {})]);
  await until('m1 made a third time', async () => ((await vsctlFind(sw, 'mirror', 'name=m1')).length === 1 ? true : undefined));
  await agent.whenIdle();
  await agent.cleanup();
  t.same((await vsctlFind(sw, 'mirror')).map((r) => r.name), ['operator'], '--cleanup removes our mirror only');
  t.equal((await vsctlFind(sw, 'port', 'name=ovn-m1')).length, 0, 'and its port');
});
