// The SB view's resume tokens name the software that derived the view (server/sb-view-id.ts):
// during an upgrade, members on different builds may derive different SB views from the same
// NB, and a reader must not take one member's changes onto a view another member built.
// Members of a 3-member in-process cluster stand for two builds (CentralNodeOptions.sbViewId):
//   - an agent stream resuming on a member of another view gets a snapshot, and its view then
//     equals a fresh one; on a member of the same view it resumes without one;
//   - an SB Watch resumed with another view's sb_view is refused OUT_OF_RANGE, with its own
//     resumes; every SB event names the view;
//   - the SB door's last-txn-ids carry the view: another view's id is not found, its own is,
//     and the NB door's ids stay the same on every member.
import t from 'tap';
import type * as grpc from '@grpc/grpc-js';
import { SB_VIEW_ID_CHARS, sbViewId } from '../../server/sb-view-id.js';
import { revisionOfTxnId, sbTxnTag, startOvsdbDoor, txnIdOf } from '../../server/ovsdb-door.js';
import type { CentralMember } from '../helpers/central-cluster.js';
import { startCentralCluster } from '../helpers/central-cluster.js';
import { JsonRpcClient } from '../helpers/jsonrpc-client.js';
import { ViewAgent, geneve } from '../helpers/sb-agents.js';
import { testdirAfterTeardowns } from '../helpers/testdir.js';

const VIEW_A = 'aaaaaaaaaaaaaaaa';
const VIEW_B = 'bbbbbbbbbbbbbbbb';

const lsWithPorts = (ls: string, ports: string[]): unknown[] => [
  { op: 'insert', table: 'Logical_Switch', 'uuid-name': 'ls', row: { name: ls, ports: ['set', ports.map((_, i) => ['named-uuid', `p${i}`])] } },
  ...ports.map((p, i) => ({ op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': `p${i}`, row: { name: p, addresses: `00:00:00:00:00:${(16 + i).toString(16)} 10.0.0.${10 + i}` } })),
];

t.test('this build\'s view id: hex, the same on every call', async (t) => {
  const id = sbViewId();
  t.match(id, new RegExp(`^[0-9a-f]{${SB_VIEW_ID_CHARS}}$`));
  t.equal(sbViewId(), id);
  t.equal(sbTxnTag(id), id.slice(0, 8), 'the SB door\'s tag is its start');
  t.equal(sbTxnTag('00000000ffff'), 'ffffffff', 'never the NB\'s all-zero tag');
  t.equal(revisionOfTxnId(txnIdOf(42, 'abcdef01'), 'abcdef01'), 42);
  t.equal(revisionOfTxnId(txnIdOf(42, 'abcdef01')), undefined, 'another tag names no revision');
});

t.test('an agent resuming on a member of another view gets a snapshot; of the same view, a resume', async (t) => {
  // Members 1 and 2 derive the view as one build, member 3 as another.
  const cl = await startCentralCluster(testdirAfterTeardowns(t), { sbViewId: (id) => (id === 3 ? VIEW_B : VIEW_A) });
  t.teardown(cl.stop);
  const [m1, m2, m3] = cl.members as [CentralMember, CentralMember, CentralMember];
  await m3.client.transact([{ op: 'insert', table: 'NB_Global', row: {} }]);
  await m3.client.transact(lsWithPorts('sw0', ['vm1', 'vm2']));
  // Both start on member 1; when it goes, one moves to member 2 (same view), one to member 3.
  const agent = (chassis: string, ip: string, port: string, next: CentralMember): ViewAgent => {
    const a = new ViewAgent({ chassis, hostname: chassis, encaps: geneve(ip), lastRevision: 0, ifaceIds: [port] }, { endpoints: [m1.address, next.address], random: () => 0 }).start();
    t.teardown(() => a.close());
    return a;
  };
  const same = agent('hv1', '192.0.2.1', 'vm1', m2);
  const other = agent('hv2', '192.0.2.2', 'vm2', m3);
  for (const [a, chassis, port] of [[same, 'hv1', 'vm1'], [other, 'hv2', 'vm2']] as const) {
    await a.until(() => a.find('Chassis', (r) => r.name === chassis) !== undefined && a.find('Port_Binding', (r) => r.logical_port === port) !== undefined, `${chassis} registered`);
    const uuid = a.find('Chassis', (r) => r.name === chassis)?._uuid as string;
    await a.source.transact([{ op: 'update', table: 'Port_Binding', where: [['logical_port', '==', port]], row: { chassis: ['uuid', uuid] } }]);
    await a.until(() => a.rows('Datapath_Binding').length === 1, `sw0 local to ${chassis}`);
    t.match(a.states.at(-1), { state: 'connected', endpoint: m1.address });
  }

  await cl.stopMember(m1);
  await m3.client.transact([{ op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': 'p', row: { name: 'vm3' } }, { op: 'mutate', table: 'Logical_Switch', where: [['name', '==', 'sw0']], mutations: [['ports', 'insert', ['set', [['named-uuid', 'p']]]]] }]);
  for (const a of [same, other]) await a.until(() => a.find('Port_Binding', (r) => r.logical_port === 'vm3') !== undefined, 'vm3 after the failover', 30_000);
  t.match(same.states.at(-1), { state: 'connected', endpoint: m2.address, resumedBy: 'delta' }, 'resumed on member 2, which derives the view as member 1 did');
  t.equal(same.source.stats().snapshots, 1, 'no second snapshot there');
  t.match(other.states.at(-1), { state: 'connected', endpoint: m3.address, resumedBy: 'snapshot' }, 'a snapshot on member 3, which derives it otherwise');
  t.equal(other.source.stats().snapshots, 2, 'the second snapshot');
  t.equal(other.updates.filter((u) => u.reset).length, 2, 'a reset update');

  const fresh = new ViewAgent({ chassis: 'hv2', hostname: 'hv2', encaps: geneve('192.0.2.2'), lastRevision: 0, ifaceIds: ['vm2'] }, { endpoints: [m3.address] }).start();
  t.teardown(() => fresh.close());
  await fresh.until(() => fresh.source.revision > 0, 'a snapshot');
  await Promise.all([other, fresh].map((x) => x.until(() => x.source.revision === Math.max(other.source.revision, fresh.source.revision), 'the same revision')));
  t.same(other.canonical(), fresh.canonical(), 'the view after the snapshot equals a fresh one');
});

/** The events of an SB watch until `n` arrived, or its error. */
function watchEvents(m: CentralMember, since: number, view: string, n: number): Promise<{ events: { revision: number; sbView?: string }[]; error?: grpc.ServiceError }> {
  return new Promise((resolve) => {
    const events: { revision: number; sbView?: string }[] = [];
    const stream = m.client.watch([], since, 'OVN_Southbound', view);
    stream.on('data', (e: { revision: number | string; sbView?: string }) => {
      events.push({ revision: Number(e.revision), ...(e.sbView !== undefined ? { sbView: e.sbView } : {}) });
      if (events.length >= n) {
        stream.cancel();
        resolve({ events });
      }
    });
    stream.on('error', (error: grpc.ServiceError) => resolve({ events, error }));
  });
}

t.test('an SB watch names its view, and resumes only on a member of the same view', async (t) => {
  const cl = await startCentralCluster(testdirAfterTeardowns(t), { sbViewId: (id) => (id === 3 ? VIEW_B : VIEW_A) });
  t.teardown(cl.stop);
  const [m1, m2, m3] = cl.members as [CentralMember, CentralMember, CentralMember];
  await m1.client.transact(lsWithPorts('sw0', ['vm1']));
  const first = await watchEvents(m1, 0, '', 1);
  t.equal(first.events[0]?.sbView, VIEW_A, 'the initial state names member 1\'s view');
  const since = first.events[0]?.revision as number;
  await m1.client.transact(lsWithPorts('sw1', ['vm2']));
  const same = await watchEvents(m2, since, VIEW_A, 1);
  t.equal(same.error, undefined, 'member 2 resumes it');
  t.ok((same.events[0]?.revision ?? 0) > since, 'with the changes after it');
  t.equal(same.events[0]?.sbView, VIEW_A);
  const other = await watchEvents(m3, since, VIEW_A, 1);
  t.equal(other.error?.code, 11, 'member 3 refuses it OUT_OF_RANGE');
  t.match(other.error?.details, /derived by other software .*re-read with since_revision 0/);
  const untold = await watchEvents(m3, since, '', 1);
  t.equal(untold.error, undefined, 'a watcher that names no view is not checked');
  const nb = await new Promise<{ sbView?: string }>((resolve) => {
    const s = m3.client.watch([], 0, 'OVN_Northbound');
    s.on('error', () => undefined); // CANCELLED, once cancelled below
    s.on('data', (e: { sbView?: string }) => {
      s.cancel();
      resolve(e);
    });
  });
  t.notOk(nb.sbView, 'an NB watch names no view');
});

t.test('the SB door\'s last-txn-ids carry the view; the NB door\'s are the same everywhere', async (t) => {
  const cl = await startCentralCluster(testdirAfterTeardowns(t), { sbViewId: (id) => (id === 3 ? VIEW_B : VIEW_A) });
  t.teardown(cl.stop);
  const [m1, m2, m3] = cl.members as [CentralMember, CentralMember, CentralMember];
  await m1.client.transact(lsWithPorts('sw0', ['vm1']));
  const open = async (m: CentralMember, db: 'OVN_Northbound' | 'OVN_Southbound'): Promise<JsonRpcClient> => {
    const door = await startOvsdbDoor({ central: m.central, listen: { host: '127.0.0.1', port: 0 }, db });
    t.teardown(() => door.close());
    const c = await JsonRpcClient.connect({ host: '127.0.0.1', port: (door.address as { port: number }).port });
    t.teardown(() => c.close());
    return c;
  };
  type Reply = [boolean, string, Record<string, unknown>];
  const req = { Datapath_Binding: [{ columns: ['tunnel_key'] }] };
  const c1 = await open(m1, 'OVN_Southbound');
  const first = (await c1.request('monitor_cond_since', ['OVN_Southbound', 'm', req, '00000000-0000-0000-0000-000000000000'])) as Reply;
  t.match(first[1], /^aaaaaaaa-0000-0000-0000-[0-9a-f]{12}$/, 'member 1\'s SB ids carry its view');
  await m1.client.transact(lsWithPorts('sw1', ['vm2']));
  await m3.client.transact([{ op: 'insert', table: 'Logical_Switch', row: { name: 'sw2' } }]);
  const target = m3.central.revision;
  while (m2.central.revision < target) await new Promise((r) => setTimeout(r, 5));
  const c2 = await open(m2, 'OVN_Southbound');
  const same = (await c2.request('monitor_cond_since', ['OVN_Southbound', 'm', req, first[1]])) as Reply;
  t.equal(same[0], true, 'found on member 2, same view');
  t.equal(Object.keys(same[2]['Datapath_Binding'] as object).length, 2, 'only the datapaths added since (sw1, sw2)');
  const c3 = await open(m3, 'OVN_Southbound');
  const other = (await c3.request('monitor_cond_since', ['OVN_Southbound', 'm', req, first[1]])) as Reply;
  t.equal(other[0], false, 'not found on member 3, another view');
  t.equal(Object.keys(other[2]['Datapath_Binding'] as object).length, 3, 'which sends everything');
  t.match(other[1], /^bbbbbbbb-/, 'under its own view');
  // The NB is the same on every member: its ids resume anywhere.
  const n1 = await open(m1, 'OVN_Northbound');
  const nbFirst = (await n1.request('monitor_cond_since', ['OVN_Northbound', 'm', { Logical_Switch: [{ columns: ['name'] }] }, '00000000-0000-0000-0000-000000000000'])) as Reply;
  t.match(nbFirst[1], /^00000000-0000-0000-0000-/);
  const n3 = await open(m3, 'OVN_Northbound');
  const nbOther = (await n3.request('monitor_cond_since', ['OVN_Northbound', 'm', { Logical_Switch: [{ columns: ['name'] }] }, nbFirst[1]])) as Reply;
  t.equal(nbOther[0], true, 'the NB resumes on member 3 whatever its view');
});
