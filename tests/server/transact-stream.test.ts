// TransactStream: many transactions pipelined on one stream, each answered by id with what a
// Transact call would have returned; per-request errors leave the stream usable; a follower's
// stream forwards to the leader; the unary Transact still works beside it; closing the client
// fails what is still waiting instead of leaving it hanging.
import * as grpc from '@grpc/grpc-js';
import t from 'tap';
import type { Test } from 'tap';
import { northboundDefinition, northboundLimits } from '../../server/northbound-service.js';
import type { CentralMember } from '../helpers/central-cluster.js';
import { startCentralCluster } from '../helpers/central-cluster.js';
import { nodeDefaults } from '../../cluster/node.js';
import { loadProto } from '../../cluster/grpc-proto.js';
import { testdirAfterTeardowns } from '../helpers/testdir.js';

const lsAdd = (name: string): unknown[] => [{ op: 'insert', table: 'Logical_Switch', row: { name } }];

interface StreamReply {
  id: number | string;
  reply?: { resultsJson: string; revision: number | string; failed: boolean } | null;
  waitReply?: { revision: number | string; nbCfg: number | string; sbCfg: number | string; hvCfg: number | string } | null;
  statusCode: number;
  statusDetails: string;
}

/** A raw TransactStream (not through NorthboundClient): what any gRPC client would send. */
function rawStream(address: string): { client: grpc.Client; stream: grpc.ClientDuplexStream<unknown, StreamReply>; replies: StreamReply[]; next: (n: number) => Promise<StreamReply[]> } {
  const Ctor = grpc.makeGenericClientConstructor(northboundDefinition(), 'Northbound');
  const client = new Ctor(address, grpc.credentials.createInsecure());
  const stream = (client as unknown as { transactStream: () => grpc.ClientDuplexStream<unknown, StreamReply> }).transactStream();
  const replies: StreamReply[] = [];
  let waiter: (() => void) | undefined;
  stream.on('data', (m: StreamReply) => {
    replies.push(m);
    waiter?.();
  });
  stream.on('error', () => undefined);
  const next = async (n: number): Promise<StreamReply[]> => {
    const deadline = Date.now() + 20_000;
    while (replies.length < n) {
      if (Date.now() > deadline) throw new Error(`only ${replies.length} of ${n} replies`);
      await new Promise<void>((r) => {
        waiter = r;
        setTimeout(r, 100);
      });
    }
    return replies.splice(0, n);
  };
  return { client, stream, replies, next };
}

/** A cluster and a raw stream to its first member, both closed at teardown. */
async function memberWithRawStream(t: Test): Promise<{ m: CentralMember; raw: ReturnType<typeof rawStream> }> {
  const { members, stop } = await startCentralCluster(testdirAfterTeardowns(t));
  t.teardown(stop);
  const m = members[0] as CentralMember;
  const raw = rawStream(m.address);
  t.teardown(() => {
    raw.stream.cancel();
    raw.client.close();
  });
  return { m, raw };
}

t.test('pipelined transactions on one stream, through the leader and a follower', async (t) => {
  const { members, stop } = await startCentralCluster(testdirAfterTeardowns(t));
  t.teardown(stop);
  const leader = members.find((m) => m.central.node.status().role === 'leader') as CentralMember;
  const follower = members.find((m) => m !== leader) as CentralMember;
  for (const [who, m] of [['leader', leader], ['follower', follower]] as const) {
    const outs = await Promise.all(Array.from({ length: 200 }, (_, i) => m.client.transact(lsAdd(`${who}-${i}`))));
    t.ok(outs.every((o) => !o.failed), `200 pipelined writes through the ${who} committed`);
    // Transactions that reach the leader together share a group entry (one revision), so
    // revisions repeat; each reply is still its own transaction's.
    t.same(outs.map((o) => typeof (o.results[0] as { uuid?: unknown[] }).uuid?.[1]), Array(200).fill('string'), 'each reply is its own insert result');
    t.equal(new Set(outs.map((o) => (o.results[0] as { uuid: unknown[] }).uuid[1])).size, 200, 'each with its own UUID');
  }
  const { rows } = await leader.client.list('Logical_Switch', [], { columns: ['name'] });
  t.equal(rows.length, 400, 'every acknowledged write is there');
});

t.test('per-request errors come back by id and leave the stream usable', async (t) => {
  const { m, raw } = await memberWithRawStream(t);
  raw.stream.write({ id: 7, request: { opsJson: 'not json', db: '' } });
  raw.stream.write({ id: 8 });
  raw.stream.write({ id: 9, request: { opsJson: JSON.stringify(lsAdd('ok')), db: 'Nope_DB' } });
  raw.stream.write({ id: 10, request: { opsJson: JSON.stringify([{ op: 'insert', table: 'Nope', row: {} }]), db: '' } });
  raw.stream.write({ id: 11, request: { opsJson: JSON.stringify(lsAdd('ok')), db: '' } });
  const got = new Map((await raw.next(5)).map((r) => [Number(r.id), r]));
  t.match(got.get(7), { statusCode: grpc.status.INVALID_ARGUMENT, statusDetails: /ops_json is not valid JSON/ });
  t.match(got.get(8), { statusCode: grpc.status.INVALID_ARGUMENT, statusDetails: /needs its request or its wait, not both/ });
  t.match(got.get(9), { statusCode: grpc.status.INVALID_ARGUMENT, statusDetails: /unknown database Nope_DB/ });
  t.match(got.get(10), { statusCode: 0, reply: { failed: true } }, 'a refused transaction is a reply, as from Transact');
  t.match(got.get(11), { statusCode: 0, reply: { failed: false } });
  const names = (await m.client.list('Logical_Switch', [], { columns: ['name'] })).rows.map((r) => r.name);
  t.same(names, ['ok'], 'only the good transaction changed anything');
  // The unary call beside it.
  const unary = await new Promise<{ failed: boolean }>((resolve, reject) => (raw.client as unknown as Record<string, (req: unknown, cb: (e: unknown, r: { failed: boolean }) => void) => void>).transact!({ opsJson: JSON.stringify(lsAdd('unary')), db: '' }, (e, r) => (e ? reject(e) : resolve(r))));
  t.equal(unary.failed, false, 'Transact (unary) still works');
});

t.test('the client closed with transactions waiting: they fail, and a new client works', async (t) => {
  const { members, stop } = await startCentralCluster(testdirAfterTeardowns(t));
  t.teardown(stop);
  const m = members[0] as CentralMember;
  const { NorthboundClient } = await import('../../server/northbound-service.js');
  const c = new NorthboundClient(m.address);
  // A transaction that blocks on a "wait" until its timeout.
  const blocked = c.transact([{ op: 'wait', table: 'Logical_Switch', where: [], columns: ['name'], until: '==', rows: [{ name: 'never' }], timeout: 5000 }]);
  await new Promise((r) => setTimeout(r, 200));
  c.close();
  await t.rejects(blocked, { code: grpc.status.CANCELLED }, 'the waiting transaction fails when the client closes');
  const d = new NorthboundClient(m.address);
  t.teardown(() => d.close());
  t.equal((await d.transact(lsAdd('after'))).failed, false);
});

t.test('Wait on the stream: answered by id as the Wait call answers, errors included', async (t) => {
  const { m, raw } = await memberWithRawStream(t);
  raw.stream.write({ id: 1, request: { opsJson: JSON.stringify([{ op: 'insert', table: 'NB_Global', row: { nb_cfg: 3 } }]), db: '' } });
  const [write] = await raw.next(1);
  t.match(write, { id: 1, statusCode: 0, reply: { failed: false } });
  const revision = Number(write?.reply?.revision);
  raw.stream.write({ id: 2, wait: { nbCfg: 3, waitFor: 'SB', timeoutMs: 5000, minRevision: revision } });
  raw.stream.write({ id: 3, wait: { nbCfg: 4, waitFor: 'SB', timeoutMs: 300, minRevision: revision } });
  raw.stream.write({ id: 4, request: { opsJson: '[]', db: '' }, wait: { nbCfg: 1, waitFor: 'SB', timeoutMs: 100 } });
  raw.stream.write({ id: 5, wait: { nbCfg: 3, waitFor: 'HV', timeoutMs: 5000 } });
  const got = new Map((await raw.next(4)).map((r) => [Number(r.id), r]));
  t.match(got.get(2), { statusCode: 0, waitReply: { nbCfg: '3', sbCfg: '3' } }, 'sb_cfg reached: answered in wait_reply');
  t.match(got.get(3), { statusCode: grpc.status.DEADLINE_EXCEEDED, statusDetails: /sb_cfg is 3, not yet 4, after 300 ms/ }, 'not reached: the Wait call\'s error');
  t.match(got.get(4), { statusCode: grpc.status.INVALID_ARGUMENT, statusDetails: /not both/ });
  t.match(got.get(5), { statusCode: 0, waitReply: { hvCfg: '3' } }, 'hv_cfg with no chassis follows nb_cfg; no min revision: a ReadIndex round first');
  // Through NorthboundClient, which now sends its Wait on the stream its transactions use.
  const out = await m.client.transact([{ op: 'mutate', table: 'NB_Global', where: [], mutations: [['nb_cfg', '+=', 1]] }]);
  t.match(await m.client.wait(4, 'sb', 5000, out.revision), { nbCfg: 4, sbCfg: 4 });
  await t.rejects(m.client.wait(9, 'sb', 200, out.revision), { code: grpc.status.DEADLINE_EXCEEDED, details: /not yet 9/ });
});

t.test('a write a follower took is one the leader takes when forwarded, however its JSON is re-encoded', async (t) => {
  const { members, stop } = await startCentralCluster(testdirAfterTeardowns(t));
  t.teardown(stop);
  const leader = members.find((m) => m.central.node.status().role === 'leader') as CentralMember;
  const follower = members.find((m) => m !== leader) as CentralMember;
  // 3.6 MB as the client wrote it; 4.9 MB (over gRPC's default 4 MiB) as the follower forwards
  // it, since JSON.stringify writes 1e9 as 1000000000.
  const where = Array.from({ length: 180_000 }, () => '["nb_cfg","!=",1e9]').join(',');
  const opsJson = `[{"op":"insert","table":"Logical_Switch","row":{"name":"big"}},{"op":"mutate","table":"NB_Global","where":[${where}],"mutations":[["nb_cfg","+=",0]]}]`;
  t.ok(opsJson.length < 4 * 1024 * 1024 && JSON.stringify(JSON.parse(opsJson)).length > 4 * 1024 * 1024, 'under 4 MiB as sent, over it re-encoded');
  const raw = rawStream(follower.address);
  t.teardown(() => {
    raw.stream.cancel();
    raw.client.close();
  });
  raw.stream.write({ id: 1, request: { opsJson, db: '' } });
  const [reply] = await raw.next(1);
  t.match(reply, { statusCode: 0, reply: { failed: false } }, 'committed');
  const { rows } = await leader.client.list('Logical_Switch', [['name', '==', 'big']], { columns: ['name'] });
  t.equal(rows.length, 1, 'the leader has it');
});

t.test('a request over the server\'s bound fails alone: the others on its stream are answered', async (t) => {
  const { members, stop } = await startCentralCluster(testdirAfterTeardowns(t));
  t.teardown(stop);
  const follower = members.find((m) => m.central.node.status().role !== 'leader') as CentralMember;
  const huge = [{ op: 'insert', table: 'Logical_Switch', row: { name: 'y'.repeat(northboundLimits.requestBytesMax) } }];
  const small = (k: string): Promise<string> => follower.client.transact(lsAdd(k)).then((o) => (o.failed ? 'failed' : 'committed'), (e: grpc.ServiceError) => `${grpc.status[e.code]}`);
  const before = Array.from({ length: 20 }, (_, i) => small(`a${i}`));
  const big = follower.client.transact(huge).then(() => 'committed', (e: grpc.ServiceError) => e);
  const after = Array.from({ length: 20 }, (_, i) => small(`b${i}`));
  t.match(await big, { code: grpc.status.RESOURCE_EXHAUSTED, details: /over the server's bound of \d+ bytes on one request/ }, 'the big one is refused');
  t.same([...(await Promise.all(before)), ...(await Promise.all(after))], Array(40).fill('committed'), 'the 40 beside it on the same stream commit');
  t.equal((await follower.client.transact(lsAdd('next'))).failed, false, 'the stream still serves');
});

t.test('a write too large for one log entry is refused with a clear error, and writes go on', async (t) => {
  const { members, stop } = await startCentralCluster(testdirAfterTeardowns(t));
  t.teardown(stop);
  const leader = members.find((m) => m.central.node.status().role === 'leader') as CentralMember;
  const follower = members.find((m) => m !== leader) as CentralMember;
  const blob = 'x'.repeat(nodeDefaults.entryBytesMax);
  for (const [who, m] of [['leader', leader], ['follower', follower]] as const) {
    const err = await m.client.transact([{ op: 'insert', table: 'Logical_Switch', row: { name: 'big', external_ids: ['map', [['blob', blob]]] } }]).then(() => undefined, (e: grpc.ServiceError) => e);
    t.match(err, { code: grpc.status.RESOURCE_EXHAUSTED, details: /too large for the log: an entry of \d+ bytes is over the \d+-byte bound on one log entry/ }, `through the ${who}`);
    t.equal((await m.client.transact(lsAdd(`after-${who}`))).failed, false, `a write through the ${who} after it commits`);
  }
  const { rows } = await leader.client.list('Logical_Switch', [], { columns: ['name'] });
  t.same(rows.map((r) => r.name).sort(), ['after-follower', 'after-leader'], 'nothing of the big one was written');
});

interface BatchReply { replies: StreamReply[] }

/**
 * A raw TransactStreamBatched call: every message received is kept whole. With `bytes`, what
 * is written goes as it is (Buffers), as a broken or hostile client could send it.
 */
function rawBatchedStream(t: Test, address: string, bytes = false): { stream: grpc.ClientDuplexStream<unknown, BatchReply>; messages: BatchReply[]; replies: (n: number) => Promise<Map<number, StreamReply>> } {
  const method = northboundDefinition().transactStreamBatched as grpc.MethodDefinition<unknown, unknown>;
  const Ctor = grpc.makeGenericClientConstructor({ batched: bytes ? { ...method, requestSerialize: (b: unknown) => b as Buffer } : method }, 'Raw');
  const client = new Ctor(address, grpc.credentials.createInsecure(), { 'grpc.max_receive_message_length': 64 * 1024 * 1024 });
  const stream = (client as unknown as { batched: () => grpc.ClientDuplexStream<unknown, BatchReply> }).batched();
  const messages: BatchReply[] = [];
  stream.on('data', (m: BatchReply) => messages.push(m));
  stream.on('error', () => undefined);
  t.teardown(() => {
    stream.cancel();
    client.close();
  });
  const replies = async (n: number): Promise<Map<number, StreamReply>> => {
    const deadline = Date.now() + 20_000;
    while (messages.reduce((k, m) => k + m.replies.length, 0) < n) {
      if (Date.now() > deadline) throw new Error(`only ${messages.reduce((k, m) => k + m.replies.length, 0)} of ${n} replies`);
      await new Promise((r) => setTimeout(r, 20));
    }
    return new Map(messages.flatMap((m) => m.replies).map((r) => [Number(r.id), r]));
  };
  return { stream, messages, replies };
}

t.test('TransactStreamBatched: many requests to a message, each answered by id as on TransactStream', async (t) => {
  const { members, stop } = await startCentralCluster(testdirAfterTeardowns(t));
  t.teardown(stop);
  const leader = members.find((m) => m.central.node.status().role === 'leader') as CentralMember;
  const raw = rawBatchedStream(t, leader.address);
  const good = Array.from({ length: 20 }, (_, i) => ({ id: 100 + i, request: { opsJson: JSON.stringify(lsAdd(`b${i}`)), db: '' } }));
  raw.stream.write({
    requests: [
      ...good,
      { id: 7, request: { opsJson: 'not json', db: '' } },
      { id: 8 },
      { id: 9, request: { opsJson: JSON.stringify(lsAdd('no')), db: 'Nope_DB' } },
      { id: 10, request: { opsJson: JSON.stringify([{ op: 'insert', table: 'Nope', row: {} }]), db: '' } },
    ],
  });
  const got = await raw.replies(24);
  t.match(got.get(7), { statusCode: grpc.status.INVALID_ARGUMENT, statusDetails: /ops_json is not valid JSON/ });
  t.match(got.get(8), { statusCode: grpc.status.INVALID_ARGUMENT, statusDetails: /needs its request or its wait, not both/ });
  t.match(got.get(9), { statusCode: grpc.status.INVALID_ARGUMENT, statusDetails: /unknown database Nope_DB/ });
  t.match(got.get(10), { statusCode: 0, reply: { failed: true } }, 'a refused transaction is a reply');
  t.same(good.map((g) => got.get(g.id)?.reply?.failed), Array(20).fill(false), 'the 20 good ones committed, each answered by its id');
  t.equal(new Set(good.map((g) => JSON.parse(got.get(g.id)?.reply?.resultsJson ?? '[]')[0]?.uuid?.[1])).size, 20, 'each reply is its own insert');
  // Written in one message, the 20 reach the leader in one turn and commit together, so their
  // replies are ready together and share messages.
  t.ok(raw.messages.length < 24, `24 replies came in ${raw.messages.length} messages`);
  // A Wait in a batch, after the write that set nb_cfg.
  raw.messages.length = 0;
  raw.stream.write({ requests: [{ id: 1, request: { opsJson: JSON.stringify([{ op: 'insert', table: 'NB_Global', row: { nb_cfg: 2 } }]), db: '' } }] });
  const revision = Number((await raw.replies(1)).get(1)?.reply?.revision);
  raw.messages.length = 0;
  raw.stream.write({ requests: [{ id: 2, wait: { nbCfg: 2, waitFor: 'SB', timeoutMs: 5000, minRevision: revision } }, { id: 3, wait: { nbCfg: 5, waitFor: 'SB', timeoutMs: 200, minRevision: revision } }] });
  const waits = await raw.replies(2);
  t.match(waits.get(2), { statusCode: 0, waitReply: { nbCfg: '2', sbCfg: '2' } });
  t.match(waits.get(3), { statusCode: grpc.status.DEADLINE_EXCEEDED, statusDetails: /not yet 5/ });
  const names = (await leader.client.list('Logical_Switch', [], { columns: ['name'] })).rows.map((r) => r.name as string);
  t.same(names.sort(), good.map((_, i) => `b${i}`).sort(), 'only the good transactions changed anything');
});

t.test('TransactStreamBatched: a batch of replies is cut near replyBatchBytesMax', async (t) => {
  const { members, stop } = await startCentralCluster(testdirAfterTeardowns(t));
  t.teardown(stop);
  const leader = members.find((m) => m.central.node.status().role === 'leader') as CentralMember;
  const blobChars = Math.floor(northboundLimits.replyBatchBytesMax * 0.4);
  await leader.client.transact([{ op: 'insert', table: 'Logical_Switch', row: { name: 'wide', external_ids: ['map', [['blob', 'x'.repeat(blobChars)]]] } }]);
  const raw = rawBatchedStream(t, leader.address);
  const select = JSON.stringify([{ op: 'select', table: 'Logical_Switch', where: [['name', '==', 'wide']], columns: ['external_ids'] }]);
  raw.stream.write({ requests: Array.from({ length: 6 }, (_, i) => ({ id: i + 1, request: { opsJson: select, db: '' } })) });
  const got = await raw.replies(6);
  t.same([...got.values()].map((r) => (r.reply?.resultsJson.length ?? 0) > blobChars), Array(6).fill(true), 'six wide replies');
  t.ok(raw.messages.length >= 3, `six replies of ${blobChars} chars came in ${raw.messages.length} messages (at most two fit under the bound)`);
  for (const m of raw.messages) {
    const chars = m.replies.reduce((k, r) => k + (r.reply?.resultsJson.length ?? 0), 0);
    t.ok(m.replies.length === 1 || chars <= northboundLimits.replyBatchBytesMax, `a message of ${m.replies.length} replies, ${chars} chars`);
  }
});

/** A Northbound server of our own making, with only the handlers given (others: UNIMPLEMENTED). */
async function fakeServer(t: Test, handlers: grpc.UntypedServiceImplementation): Promise<string> {
  const server = new grpc.Server();
  server.addService(northboundDefinition(), handlers);
  const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))));
  t.teardown(() => server.forceShutdown());
  return `127.0.0.1:${port}`;
}

const okReply = (id: number | string): StreamReply => ({ id, statusCode: 0, statusDetails: '', reply: { resultsJson: `[{"count":${Number(id)}}]`, revision: 1, failed: false } });

t.test('the client sends what it has at once in one message, cut near requestBatchBytesMax', async (t) => {
  const batches: number[][] = [];
  const address = await fakeServer(t, {
    transactStreamBatched: (call: grpc.ServerDuplexStream<{ requests: { id: number; request: { opsJson: string } }[] }, unknown>) => {
      call.on('data', (m: { requests: { id: number; request: { opsJson: string } }[] }) => {
        batches.push(m.requests.map((r) => r.request.opsJson.length));
        call.write({ replies: m.requests.map((r) => okReply(r.id)) });
      });
      call.on('end', () => call.end());
    },
  });
  const { NorthboundClient } = await import('../../server/northbound-service.js');
  const c = new NorthboundClient(address);
  t.teardown(() => c.close());
  const outs = await Promise.all(Array.from({ length: 10 }, () => c.transact(lsAdd('x'))));
  t.same(outs.map((o) => o.failed), Array(10).fill(false));
  t.same(batches.map((b) => b.length), [10], 'ten made in one turn go in one message');
  batches.length = 0;
  const wide = [{ op: 'insert', table: 'Logical_Switch', row: { name: 'y'.repeat(Math.floor(northboundLimits.requestBatchBytesMax * 0.4)) } }];
  await Promise.all(Array.from({ length: 5 }, () => c.transact(wide)));
  t.ok(batches.length >= 3, `five requests of 40% of the bound went in ${batches.length} messages`);
  t.ok(batches.every((b) => b.length === 1 || b.reduce((k, n) => k + n, 0) <= northboundLimits.requestBatchBytesMax), 'none past the bound but for one alone');
  t.equal(batches.flat().length, 5, 'each sent once');
});

t.test('against a server without TransactStreamBatched, the client goes on with TransactStream', async (t) => {
  let unbatched = 0;
  const address = await fakeServer(t, {
    transactStream: (call: grpc.ServerDuplexStream<{ id: number }, unknown>) => {
      call.on('data', (m: { id: number }) => {
        unbatched++;
        call.write(okReply(m.id));
      });
      call.on('end', () => call.end());
    },
  });
  const { NorthboundClient } = await import('../../server/northbound-service.js');
  const c = new NorthboundClient(address);
  t.teardown(() => c.close());
  const outs = await Promise.all(Array.from({ length: 6 }, () => c.transact(lsAdd('x'))));
  t.same(outs.map((o) => o.results), Array.from({ length: 6 }, (_, i) => [{ count: i + 1 }]), 'each answered, its own reply (the ids of the first stream are not reused)');
  t.equal(unbatched, 6, 'each handled once, on TransactStream');
  t.equal((await c.transact(lsAdd('later'))).failed, false, 'later ones too');
  t.equal(unbatched, 7);
});

t.test('TransactStreamBatched: bytes that are no batch get INVALID_ARGUMENT with id 0, and the stream goes on', async (t) => {
  const { m } = await memberWithRawStream(t);
  const raw = rawBatchedStream(t, m.address, true);
  // Field 1 (requests) declared 100 bytes long, with 2 there.
  raw.stream.write(Buffer.from([0x0a, 100, 0x08, 0x01]));
  t.match((await raw.replies(1)).get(0), { statusCode: grpc.status.INVALID_ARGUMENT, statusDetails: /TransactStreamRequestBatch/ });
  const type = loadProto('northbound.proto').lookupType('ovnts.northbound.TransactStreamRequestBatch');
  raw.stream.write(Buffer.from(type.encode(type.fromObject({ requests: [{ id: 5, request: { opsJson: JSON.stringify(lsAdd('after')), db: '' } }] })).finish()));
  t.match((await raw.replies(2)).get(5), { statusCode: 0, reply: { failed: false } }, 'a good batch after it is answered');
  t.same((await m.client.list('Logical_Switch', [], { columns: ['name'] })).rows.map((r) => r.name), ['after'], 'only the good one changed anything');
});
