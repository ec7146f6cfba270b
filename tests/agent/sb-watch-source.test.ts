// The Watch-based SbSource against an in-process ovnts central: the first update is a reset
// holding the whole SB view (rows decoded with the SB schema), later ones are deltas in
// revision order; a cut stream is resumed after the last delivered revision (a delta, not a
// new snapshot); ack writes Chassis_Private.nb_cfg; transact reaches the chassis tables.
// Method: a TCP proxy between the source and the gRPC server, cut by the test.
import t from 'tap';
import type { SbUpdate } from '../../agent/sb-source.js';
import { SbWatchSource } from '../../agent/sb-watch-source.js';
import { startTcpProxy } from '../helpers/tcp-proxy.js';
import { eventually, startCentral } from './local-harness.js';

t.test('snapshot, deltas, resume after a cut, ack and transact', async (t) => {
  const central = await startCentral(t);
  await central.nbctl('ls-add', 'sw0');
  await central.nbctl('lsp-add', 'sw0', 'p1');
  const proxy = await startTcpProxy(t, central.address);
  const source = new SbWatchSource({ endpoints: [proxy.address], reconnectMsMin: 20, reconnectMsMax: 200 });
  t.teardown(() => source.close());
  const updates: SbUpdate[] = [];
  const states: string[] = [];
  source.start({ chassis: 'hv1', hostname: 'h', encaps: [{ type: 'geneve', ip: '192.0.2.1' }], lastRevision: 0 }, async (u) => {
    updates.push(u);
  }, (s) => states.push(s.state));

  const first = await eventually('the snapshot', async () => updates[0]);
  t.ok(first.reset, 'the first update is a reset');
  const pb = first.changes.find((c) => c.table === 'Port_Binding' && c.row?.logical_port === 'p1');
  t.ok(pb?.row !== undefined, 'holding p1\'s Port_Binding');
  t.same(pb?.row?.up, [false], 'decoded with the SB schema (up is an optional boolean)');
  t.ok(pb?.row?.options instanceof Map, 'maps as Maps');

  await central.nbctl('lsp-add', 'sw0', 'p2');
  const delta = await eventually('the delta for p2', async () => updates.find((u) => !u.reset && u.changes.some((c) => c.row?.logical_port === 'p2')));
  t.equal(delta.fromRevision, updates[updates.indexOf(delta) - 1]?.toRevision, 'deltas chain: each starts where the one before ended');

  const lastBefore = updates[updates.length - 1]!.toRevision;
  proxy.cut();
  await eventually('the source notices the cut', async () => (states.includes('disconnected') ? true : undefined));
  await central.nbctl('lsp-add', 'sw0', 'p3');
  const resumed = await eventually('p3 after the reconnect', async () => updates.find((u) => u.changes.some((c) => c.row?.logical_port === 'p3')));
  t.notOk(resumed.reset, 'the stream resumed with a delta, not a new snapshot');
  t.ok(resumed.fromRevision >= lastBefore, `from revision ${resumed.fromRevision}, at or after the last delivered ${lastBefore}`);
  t.equal(updates.filter((u) => u.reset).length, 1, 'one snapshot in all');
  for (let i = 1; i < updates.length; i++) t.ok(updates[i]!.toRevision > updates[i - 1]!.toRevision || updates[i]!.changes.length === 0, 'revisions only go up');

  const results = await source.transact([
    { op: 'insert', table: 'Encap', 'uuid-name': 'e', row: { type: 'geneve', ip: '192.0.2.1', chassis_name: 'hv1' } },
    { op: 'insert', table: 'Chassis', 'uuid-name': 'c', row: { name: 'hv1', encaps: ['named-uuid', 'e'] } },
    { op: 'insert', table: 'Chassis_Private', row: { name: 'hv1', chassis: ['named-uuid', 'c'] } },
  ]);
  t.equal(results.length, 3, 'transact reaches the chassis tables');
  await central.cluster.members[0]!.client.transact([{ op: 'mutate', table: 'NB_Global', where: [], mutations: [['nb_cfg', '+=', 1]] }]);
  source.ack(updates[updates.length - 1]!.toRevision, 7);
  await eventually('Chassis_Private.nb_cfg follows the ack', async () => ((await central.sb('Chassis_Private'))[0]?.nb_cfg === 7 ? true : undefined));
  t.pass('ack writes nb_cfg into Chassis_Private');
});
