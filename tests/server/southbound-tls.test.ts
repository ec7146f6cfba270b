// Goal: the agent stream and the members' ack relay over mutual TLS. An agent with a certificate
// of the members' CA registers and receives the SB deltas of what the CMS adds after it came;
// its acks, relayed over TLS, make a Wait(HV) on a member it is not on return before they are
// committed; an agent whose certificate another CA signed gets no connection, no view and no
// Chassis row. Method: three in-process members whose gRPC servers and clients run with one
// identity (tests/helpers/central-cluster.ts), agents on the real stream client (SbStream).
import { join } from 'node:path';
import t from 'tap';
import * as grpc from '@grpc/grpc-js';
import { TlsCredentials, channelCredentials, tlsChannelOptions } from '../../cluster/tls.js';
import { ackLimits } from '../../server/agent-writes.js';
import { southboundDefinition } from '../../server/southbound-service.js';
import type { TransactOutcome } from '../../server/central-node.js';
import type { CentralCluster, CentralMember } from '../helpers/central-cluster.js';
import { startCentralCluster } from '../helpers/central-cluster.js';
import { makePki } from '../helpers/pki.js';
import { ViewAgent, geneve } from '../helpers/sb-agents.js';
import { testdirAfterTeardowns } from '../helpers/testdir.js';

const bump = [
  { op: 'mutate', table: 'NB_Global', where: [], mutations: [['nb_cfg', '+=', 1]] },
  { op: 'select', table: 'NB_Global', where: [], columns: ['nb_cfg'] },
];

t.test('the agent stream over TLS delivers deltas, its acks are relayed over TLS; an agent of another CA gets nothing', async (t) => {
  const dir = testdirAfterTeardowns(t);
  const a = makePki(join(dir, 'pki-a'));
  const b = makePki(join(dir, 'pki-b'));
  // The acks' Chassis_Private writes wait for `release`: a Wait(HV) on another member that
  // returns meanwhile learned of the ack through the relay.
  let release: () => void = () => undefined;
  let held = Promise.resolve();
  const box: { cl?: CentralCluster } = {};
  const ackTransact = async (ops: readonly unknown[], db: 'OVN_Northbound' | 'OVN_Southbound'): Promise<TransactOutcome> => {
    await held;
    return (box.cl as CentralCluster).members[0]?.client.transact(ops, db) as Promise<TransactOutcome>;
  };
  const cl = await startCentralCluster(join(dir, 'central'), { tls: new TlsCredentials(a.identity('member')), southbound: { ackTransact } });
  box.cl = cl;
  t.teardown(cl.stop);
  const [m0, m1, m2] = cl.members as [CentralMember, CentralMember, CentralMember];
  await m0.client.transact([{ op: 'insert', table: 'NB_Global', row: {} }]);

  const agent = new ViewAgent({ chassis: 'hv1', hostname: 'host1', encaps: geneve('192.0.2.1'), lastRevision: 0, ifaceIds: ['vm1'] }, { endpoints: [m1.address], tls: new TlsCredentials(a.identity('hv1')) }).start();
  t.teardown(() => agent.close());
  await agent.until(() => agent.rows('Chassis_Private').length === 1, 'its registration');
  t.ok(agent.states.some((s) => s.state === 'connected'), 'an agent of the members\' CA connects');

  // What the CMS adds after the agent came arrives as deltas on its stream.
  const updatesBefore = agent.updates.length;
  await m0.client.transact([
    { op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': 'p', row: { name: 'vm1', addresses: ['set', ['00:00:00:00:00:01 10.0.0.1']] } },
    { op: 'insert', table: 'Logical_Switch', row: { name: 'sw0', ports: ['set', [['named-uuid', 'p']]] } },
  ]);
  await agent.until(() => agent.find('Port_Binding', (r) => r.logical_port === 'vm1') !== undefined, 'vm1\'s Port_Binding');
  t.ok(agent.updates.slice(updatesBefore).some((u) => !u.reset && u.changes.some((c) => c.table === 'Port_Binding')), 'vm1\'s Port_Binding came as a delta, not a resync');

  // An ack relayed from m1 to m2 over TLS: Wait(HV) on m2 returns while the write is held.
  held = new Promise<void>((r) => (release = r));
  const out = await m0.client.transact(bump);
  const target = (out.results[1] as { rows: { nb_cfg: number }[] }).rows[0]?.nb_cfg as number;
  const waited = await m2.client.wait(target, 'hv', 20_000, out.revision);
  t.equal(waited.hvCfg, target, 'Wait(HV) on a member the agent is not on returned before the ack was written');
  t.ok((m1.southbound.relay?.stats().acks ?? 0) >= 1, 'm1 relayed it');
  release();

  // An agent whose certificate another CA signed (trusting the members' CA): refused.
  const foreign = new ViewAgent({ chassis: 'hv2', hostname: 'host2', encaps: geneve('192.0.2.2'), lastRevision: 0, ifaceIds: ['vm1'] }, { endpoints: [m0.address, m1.address], tls: new TlsCredentials({ ...b.identity('hv2'), caCert: a.caCert }) }).start();
  t.teardown(() => foreign.close());
  await foreign.until(() => foreign.states.filter((s) => s.state === 'disconnected').length >= 3, 'three failed connections');
  t.notOk(foreign.states.some((s) => s.state === 'connected'), 'it never connects');
  t.equal(foreign.updates.length, 0, 'it receives nothing');
  const chassis = (await m0.client.list('Chassis', [], { db: 'OVN_Southbound' })).rows.map((r) => r.name);
  t.same(chassis, ['hv1'], 'and registers nothing');
  t.match(foreign.states.find((s) => s.state === 'disconnected'), { reason: /UNAVAILABLE/ }, 'each attempt fails as unavailable');
});

t.test('with --agent-role, an agent speaks only for the chassis its certificate names, and its writes are held to the role', async (t) => {
  const dir = testdirAfterTeardowns(t);
  const pki = makePki(join(dir, 'pki'));
  const cl = await startCentralCluster(join(dir, 'central'), { tls: new TlsCredentials(pki.identity('member')), southbound: { agentRole: 'ovn-controller' } });
  t.teardown(cl.stop);
  const [m0, m1] = cl.members as [CentralMember, CentralMember, CentralMember];
  await m0.client.transact([{ op: 'insert', table: 'NB_Global', row: {} }]);
  await m0.client.transact([
    { op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': 'p', row: { name: 'vm1' } },
    { op: 'insert', table: 'Logical_Switch', row: { name: 'sw0', ports: ['set', [['named-uuid', 'p']]] } },
  ]);
  const sbRows = async (table: string): Promise<Record<string, unknown>[]> => (await m0.client.list(table, [], { db: 'OVN_Southbound' })).rows;

  // Each agent's certificate names its chassis: both register.
  const start = (chassis: string, cert: string, ip: string): ViewAgent => {
    const agent = new ViewAgent({ chassis, hostname: chassis, encaps: geneve(ip), lastRevision: 0, ifaceIds: ['vm1'] }, { endpoints: [m1.address], tls: new TlsCredentials(pki.identity(cert)) }).start();
    t.teardown(() => agent.close());
    return agent;
  };
  const hv1 = start('hv1', 'hv1', '192.0.2.1');
  start('hv2', 'hv2', '192.0.2.2');
  await hv1.until(() => hv1.rows('Chassis').length === 2, 'both chassis registered');
  const uuidOf = (rows: Record<string, unknown>[], name: string): string => ((rows.find((r) => r.name === name)?._uuid as [string, string] | undefined)?.[1]) as string;
  const chassis = await sbRows('Chassis');

  // Its own Chassis row: written. Another's: refused, with ovsdb-server's words, nothing written.
  const own = await hv1.source.transact([{ op: 'update', table: 'Chassis', where: [['name', '==', 'hv1']], row: { external_ids: ['map', [['k', 'mine']]] } }]);
  t.same(own, [{ count: 1 }], 'hv1 updates its own Chassis row');
  const other = await hv1.source.transact([{ op: 'update', table: 'Chassis', where: [['name', '==', 'hv2']], row: { external_ids: ['map', [['k', 'stolen']]] } }]);
  t.match(other[0], { error: 'permission error', details: 'RBAC rules for client "hv1" role "ovn-controller" prohibit modification of table "Chassis".' }, 'hv1 may not update hv2\'s Chassis row');
  const after = await sbRows('Chassis');
  t.same(after.find((r) => r.name === 'hv2')?.external_ids, ['map', []], 'hv2\'s row is as it was');
  // A port claim is any chassis's to make (Port_Binding's authorization is empty in OVN's role).
  const pb = ((await sbRows('Port_Binding')).find((r) => r.logical_port === 'vm1')?._uuid as [string, string])[1];
  const claim = await hv1.source.transact([{ op: 'update', table: 'Port_Binding', where: [['_uuid', '==', ['uuid', pb]]], row: { chassis: ['uuid', uuidOf(chassis, 'hv1')] } }]);
  t.same(claim, [{ count: 1 }], 'hv1 claims vm1');
  const inserted = await hv1.source.transact([{ op: 'insert', table: 'Datapath_Binding', row: { tunnel_key: 4000 } }]);
  t.match(inserted[0], { error: 'permission error', details: 'RBAC rules for client "hv1" role "ovn-controller" prohibit row insertion into table "Datapath_Binding".' }, 'a table the role does not name is refused by it');

  // A Hello for another chassis than the certificate's: the stream ends, nothing registers.
  const liar = start('hv9', 'hv3', '192.0.2.3');
  await liar.until(() => liar.states.filter((s) => s.state === 'disconnected').length >= 2, 'two refused streams');
  t.notOk(liar.states.some((s) => s.state === 'connected' && liar.updates.length > 0), 'it never gets the view');
  t.match(liar.states.find((s) => s.state === 'disconnected'), { reason: /PERMISSION_DENIED.*Hello\.chassis "hv9" is not the chassis of the client's certificate \("hv3"\)/ }, 'refused as permission denied, naming both');
  t.same((await sbRows('Chassis')).map((r) => r.name).sort(), ['hv1', 'hv2'], 'no hv9 registered');

  // An agent's certificate reaches the members' ack relay too (any certificate of the CA): under
  // the role, the leader writes no relayed ack, so hv1 cannot set hv2's nb_cfg through it.
  const leader = cl.members.find((m) => m.central.node.leadership().role === 'leader') as CentralMember;
  const hv2Private = uuidOf(await sbRows('Chassis_Private'), 'hv2');
  const tls1 = new TlsCredentials(pki.identity('hv1'));
  const Client = grpc.makeGenericClientConstructor(southboundDefinition(), 'Southbound');
  const c = new Client(leader.address, channelCredentials(tls1), tlsChannelOptions(tls1, leader.address)) as unknown as grpc.Client & { relayAcks: (cb: (e: grpc.ServiceError | null) => void) => grpc.ClientWritableStream<unknown> };
  t.teardown(() => c.close());
  const relayed = await new Promise<grpc.ServiceError | null>((resolve) => {
    const call = c.relayAcks((e) => resolve(e));
    call.write({ member: 9, acks: [{ chassisPrivate: hv2Private, nbCfg: 999 }] });
    call.end();
  });
  t.equal(relayed, null, 'the relay takes it (it is counted for Wait(HV) on that member)');
  await new Promise((r) => setTimeout(r, 4 * ackLimits.batchMsMax));
  const hv2Cfg = (await sbRows('Chassis_Private')).find((r) => r.name === 'hv2')?.nb_cfg as number;
  t.ok(hv2Cfg < 999, `but it is not written: hv2's Chassis_Private.nb_cfg is ${hv2Cfg}`);
  t.equal(leader.southbound.acks.stats().held, 0, 'and no member holds acks for the leader');
});
