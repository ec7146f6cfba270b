// An entry's size against what the transport carries: three RaftNodes on real GrpcTransports.
// An entry no follower can receive never commits, and every later entry waits behind it, so
// one oversized write would stop the cluster's writes for good. Proposals over
// `entryBytesMax` are refused instead, on the leader and on followers alike, and the largest
// allowed entry commits everywhere.
import t from 'tap';
import { GrpcTransport } from '../../cluster/grpc-transport.js';
import { KvStateMachine, encodeKvCommand } from '../../cluster/kv-state-machine.js';
import { ProposalError, RaftNode } from '../../cluster/node.js';
import type { NodeId } from '../../cluster/types.js';
import { freePort } from '../helpers/raft-kv-cluster.js';
import { testdirAfterTeardowns } from '../helpers/testdir.js';

const clusterId = 'entry-size';
/** A small transport bound keeps the test's largest entry small; the rule is the same at 16 MiB. */
const messageBytesMax = 2 * 1024 * 1024;

/** A put whose encoded command is exactly `bytes` long, and the length of its value. */
function putOfSize(key: string, bytes: number): { data: Uint8Array; valueLength: number } {
  const header = encodeKvCommand({ op: 'put', key, value: 'x'.repeat(70_000) }).byteLength - 70_000;
  const valueLength = bytes - header;
  const data = encodeKvCommand({ op: 'put', key, value: 'x'.repeat(valueLength) });
  if (data.byteLength !== bytes) throw new Error(`encoded ${data.byteLength} bytes, wanted ${bytes}`);
  return { data, valueLength };
}

t.test('a proposal over what a peer can receive is refused everywhere; the largest allowed one commits', async (t) => {
  const dir = testdirAfterTeardowns(t);
  const ids: NodeId[] = [1, 2, 3];
  const peers = new Map<NodeId, string>();
  for (const id of ids) peers.set(id, `127.0.0.1:${await freePort()}`);
  const nodes = new Map<NodeId, { node: RaftNode; kv: KvStateMachine; transport: GrpcTransport }>();
  t.teardown(async () => {
    for (const n of nodes.values()) await n.node.stop();
  });
  for (const id of ids) {
    const transport = new GrpcTransport({ id, clusterId, listenAddress: peers.get(id) as string, peers, messageBytesMax });
    const kv = new KvStateMachine();
    const node = await RaftNode.start({ id, clusterId, dataDir: `${dir}/n${id}`, transport, stateMachine: kv, peers, bootstrap: ids, tickMs: 10, log: () => undefined });
    nodes.set(id, { node, kv, transport });
  }
  const leaderId = await new Promise<NodeId>((resolve) => {
    const check = (): void => {
      const l = ids.find((id) => nodes.get(id)?.node.status().role === 'leader');
      if (l !== undefined) resolve(l);
    };
    for (const n of nodes.values()) n.node.onProgress(check);
    check();
  });
  const leader = nodes.get(leaderId)?.node as RaftNode;
  const follower = nodes.get(ids.find((id) => id !== leaderId) as NodeId)?.node as RaftNode;
  const transport = nodes.get(leaderId)?.transport as GrpcTransport;
  const bound = transport.entryBytesMax;
  t.ok(bound < messageBytesMax && bound > messageBytesMax / 2, `the transport carries entries of up to ${bound} bytes`);

  // One byte over the bound, and one byte over what a message may hold (proposed, that one
  // would never reach a follower, and no later write would commit).
  for (const size of [bound + 1, messageBytesMax + 1]) {
    for (const [who, node] of [['leader', leader], ['follower', follower]] as const) {
      const err = await node.propose(putOfSize('too-big', size).data).then(() => undefined, (e: unknown) => e);
      t.ok(err instanceof ProposalError && err.kind === 'too-large' && !err.outcomeUnknown, `${size} bytes: the ${who} refuses it, outcome known`);
      t.match(err, { message: new RegExp(`${size} bytes is over the ${bound}-byte bound`) });
    }
  }
  const small = await leader.propose(encodeKvCommand({ op: 'put', key: 'small', value: 'v' })).then((o) => o.index, (e: Error) => e.message);
  t.type(small, 'number', 'a small write after them commits');

  const { data, valueLength } = putOfSize('largest', bound);
  const largest = await leader.propose(data);
  // Every member applies it: the append that carried it reached both followers.
  const deadline = Date.now() + 15_000;
  while (![...nodes.values()].every((n) => n.node.status().appliedIndex >= largest.index) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  t.same([...nodes.values()].map((n) => (n.kv.get('largest') as string | undefined)?.length), [valueLength, valueLength, valueLength], 'an entry of exactly the bound is on every member');
  t.equal(nodes.get(leaderId)?.kv.get('small'), 'v');
});
