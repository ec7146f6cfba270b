// Goal: LocalNetwork delivers like a network the node can rely on (asynchronously, in order,
// to the addressed node of the same cluster) and fails like one (partitions, drops, full queues).
// Method: two or three LocalTransports with recording handlers; waits are on delivery promises.

import t from 'tap';
import { LocalNetwork, type LocalTransport } from '../../cluster/local-transport.js';
import type { TransportReport } from '../../cluster/transport.js';
import type { Message, NodeId } from '../../cluster/types.js';

interface Endpoint {
  readonly transport: LocalTransport;
  readonly received: Message[];
  readonly reports: TransportReport[];
}

const peers: ReadonlyMap<NodeId, string> = new Map([
  [1, 'local:1'],
  [2, 'local:2'],
  [3, 'local:3'],
]);

async function endpoint(net: LocalNetwork, id: NodeId, clusterId?: string): Promise<Endpoint> {
  const transport = net.transport(id, clusterId);
  const e: Endpoint = { transport, received: [], reports: [] };
  transport.setPeers(peers);
  await transport.start({ onMessage: (m) => e.received.push(m), onReport: (r) => e.reports.push(r) });
  return e;
}

function heartbeat(from: NodeId, to: NodeId, commit: number, clusterId = 'c'): Message {
  return { clusterId, from, to, term: 1, type: 'heartbeat', commit, readSeq: 0 };
}

/** Resolves after the network's pending deliveries (it flushes on setImmediate). */
function delivered(): Promise<void> {
  return new Promise<void>((resolve) => setImmediate(resolve));
}

t.test('delivers asynchronously and in order', async (t) => {
  const net = new LocalNetwork('c');
  const a = await endpoint(net, 1);
  const b = await endpoint(net, 2);
  a.transport.send([heartbeat(1, 2, 1), heartbeat(1, 2, 2), heartbeat(1, 2, 3)]);
  t.equal(b.received.length, 0, 'nothing is delivered inside send()');
  await delivered();
  t.same(
    b.received.map((m) => (m.type === 'heartbeat' ? m.commit : -1)),
    [1, 2, 3],
    'delivered in the order sent',
  );
  t.equal(a.transport.stats().sent, 3, 'sent counted');
  t.equal(b.transport.stats().received, 3, 'received counted');
});

t.test('refuses messages for another cluster or node', async (t) => {
  const net = new LocalNetwork('c');
  const a = await endpoint(net, 1);
  const b = await endpoint(net, 2, 'other');
  a.transport.send([heartbeat(1, 2, 1)]);
  await delivered();
  t.equal(b.received.length, 0, 'a message naming cluster c is refused by a node of cluster other');
  t.equal(b.transport.stats().refusedForeign, 1, 'and counted');
});

t.test('partition, heal, drop switch, unknown peers, absent nodes', async (t) => {
  const net = new LocalNetwork('c');
  const a = await endpoint(net, 1);
  const b = await endpoint(net, 2);
  net.partition(1, 2);
  a.transport.send([heartbeat(1, 2, 1)]);
  const conf = { voters: [1, 2], learners: [], removed: [] };
  const snapshot = { meta: { index: 5, term: 1, conf }, data: Uint8Array.of(1) };
  a.transport.send([{ clusterId: 'c', from: 1, to: 2, term: 1, type: 'snap', snapshot }]);
  await delivered();
  t.equal(b.received.length, 0, 'nothing crosses a partition');
  t.same(a.reports, [{ kind: 'snapshot', to: 2, ok: false }], 'a lost snapshot is reported failed; other losses are silent');
  net.heal();
  a.transport.send([heartbeat(1, 2, 2)]);
  await delivered();
  t.equal(b.received.length, 1, 'heal restores the link');
  net.dropAll = true;
  a.transport.send([heartbeat(1, 2, 3)]);
  await delivered();
  t.equal(b.received.length, 1, 'the drop switch loses everything');
  net.dropAll = false;

  a.reports.length = 0;
  a.transport.send([heartbeat(1, 9, 1)]);
  t.same(a.reports, [{ kind: 'unreachable', to: 9 }], 'a peer without an address is unreachable at once');
  a.reports.length = 0;
  a.transport.send([heartbeat(1, 3, 1)]);
  await delivered();
  t.same(a.reports, [{ kind: 'unreachable', to: 3 }], 'a peer that is not listening is reported unreachable');

  await b.transport.close();
  a.transport.send([heartbeat(1, 2, 4)]);
  await delivered();
  t.equal(b.received.length, 1, 'a closed transport receives nothing');
  const b2 = await endpoint(net, 2);
  t.not(b2.transport, b.transport, 'a restarted node gets a fresh transport');
  a.transport.send([heartbeat(1, 2, 5)]);
  await delivered();
  t.equal(b2.received.length, 1, 'and receives again');
});

t.test('a full queue drops, counts and reports', async (t) => {
  const net = new LocalNetwork('c', { queueMessagesMax: 2 });
  const a = await endpoint(net, 1);
  const b = await endpoint(net, 2);
  a.transport.send([heartbeat(1, 2, 1), heartbeat(1, 2, 2), heartbeat(1, 2, 3)]);
  t.same([...a.transport.stats().droppedQueueFull], [[2, 1]], 'one message over the bound is dropped');
  t.same(a.reports, [{ kind: 'unreachable', to: 2 }], 'and reported');
  await delivered();
  t.equal(b.received.length, 2, 'the queued ones arrive');
});
