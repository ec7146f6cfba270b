// Goal: mutual TLS on the gRPC endpoints (cluster/tls.ts). An identity is read and checked, and
// an error names the file that cannot be used; a listener given one serves only clients whose
// certificate chains to its CA (plaintext, no certificate, another CA's: refused, and it serves
// on); the Raft transport delivers between members of one CA and neither to nor from a member
// of another; renewed files are taken without a restart, a half-renewed pair is refused and the
// identity in use kept. Method: CAs made by ovs-pki (tests/helpers/pki.ts), real gRPC on
// loopback, each client on a connection of its own (a local subchannel pool), so that every
// call is a new handshake.
import { copyFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import t, { type Test } from 'tap';
import { listenGrpc } from '../../cluster/grpc-listen.js';
import { GrpcTransport } from '../../cluster/grpc-transport.js';
import { TlsCredentials, TlsError, acceptAnyServerName, channelCredentials, tlsChannelOptions, tlsFilesFrom, type TlsFiles, type TlsReloadEvent } from '../../cluster/tls.js';
import type { TransportHandlers } from '../../cluster/transport.js';
import type { Message, NodeId } from '../../cluster/types.js';
import { makePki } from '../helpers/pki.js';

const WAIT_MS_MAX = 15_000;

// Every warning the process emits: a channel to a member reached by IP address must not make
// Node warn of an IP address as the TLS server name (tlsChannelOptions).
const warnings: string[] = [];
process.on('warning', (w: Error & { code?: string }) => warnings.push(`${w.code ?? w.name}: ${w.message}`));

const identity = (b: Buffer): Buffer => b;
const pingDefinition: grpc.ServiceDefinition = {
  ping: { path: '/ovnts.test.Ping/Ping', requestStream: false, responseStream: false, requestSerialize: identity, requestDeserialize: identity, responseSerialize: identity, responseDeserialize: identity },
};
const PingClient = grpc.makeGenericClientConstructor(pingDefinition, 'Ping');

/** A Ping service through listenGrpc with `tls`; `served` counts the calls that reached it. */
async function pingServer(t: Test, tls: TlsCredentials): Promise<{ address: string; served: () => number }> {
  let served = 0;
  const server = new grpc.Server();
  server.addService(pingDefinition, {
    ping: (_call: unknown, cb: grpc.sendUnaryData<Buffer>) => {
      served++;
      cb(null, Buffer.from('pong'));
    },
  });
  const listener = await listenGrpc(server, '127.0.0.1:0', 16, () => undefined, tls);
  t.teardown(() => {
    listener.close();
    server.forceShutdown();
  });
  return { address: `127.0.0.1:${listener.port}`, served: () => served };
}

/** One call on a connection of its own: 'pong', or the error's text. */
async function ping(address: string, credentials: grpc.ChannelCredentials, options: grpc.ChannelOptions = {}): Promise<string> {
  const c = new PingClient(address, credentials, { 'grpc.use_local_subchannel_pool': 1, ...options }) as unknown as grpc.Client & { ping: (req: Buffer, o: grpc.CallOptions, cb: (e: grpc.ServiceError | null, r?: Buffer) => void) => void };
  try {
    return await new Promise<string>((resolve) => c.ping(Buffer.from('ping'), { deadline: Date.now() + 5_000 }, (e, r) => resolve(e === null ? String(r) : `failed: ${e.message}`)));
  } finally {
    c.close();
  }
}

/** `ping` with `tls`'s channel credentials and options, as ovnts's clients make them. */
function pingWith(address: string, tls: TlsCredentials): Promise<string> {
  return ping(address, channelCredentials(tls), tlsChannelOptions(tls, address));
}

async function until(pred: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + WAIT_MS_MAX;
  while (!pred()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Replaces the file `to` by a copy of `from` at once (a copy beside it, renamed over it). */
function replaceFile(from: string, to: string): void {
  copyFileSync(from, `${to}.new`);
  renameSync(`${to}.new`, to);
}

/** Replaces an identity's three files, one after the other, by `from`'s. */
function install(from: TlsFiles, to: TlsFiles): void {
  replaceFile(from.privateKey, to.privateKey);
  replaceFile(from.certificate, to.certificate);
  replaceFile(from.caCert, to.caCert);
}

t.test('an identity is read and checked; an error names the file that cannot be used', async (t) => {
  const dir = t.testdir();
  const a = makePki(join(dir, 'a'));
  const m = a.identity('m');
  const other = a.identity('other');
  const tls = new TlsCredentials(m);
  t.ok(tls.identity().cert.includes('-----BEGIN CERTIFICATE-----'), 'a good identity loads');
  const refused = (files: TlsFiles, message: RegExp, what: string): void => {
    t.throws(() => new TlsCredentials(files), message, what);
    try {
      new TlsCredentials(files);
    } catch (err) {
      t.ok(err instanceof TlsError, `${what}: a TlsError, which the commands print as it is`);
    }
  };
  refused({ ...m, privateKey: join(dir, 'nope.pem') }, new RegExp(`^cannot read the private key ${join(dir, 'nope.pem')}: ENOENT`), 'a missing key');
  writeFileSync(join(dir, 'garbage.pem'), 'not a certificate\n');
  refused({ ...m, certificate: join(dir, 'garbage.pem') }, new RegExp(`^the certificate ${join(dir, 'garbage.pem')} holds no PEM block$`), 'a file without PEM');
  refused({ ...m, privateKey: other.privateKey }, new RegExp(`^the private key ${other.privateKey} does not match the certificate ${m.certificate}$`), "another identity's key");
  refused({ ...m, caCert: m.privateKey }, new RegExp(`^the CA certificate ${m.privateKey} cannot be used: `), 'a key given as the CA certificate');
  refused({ ...m, certificate: m.caCert, caCert: m.certificate }, new RegExp(`^the private key ${m.privateKey} does not match the certificate ${m.caCert}$`), 'certificate and CA swapped');
  t.equal(tlsFilesFrom({}), undefined, 'no flag: no TLS');
  t.throws(() => tlsFilesFrom({ privateKey: 'k.pem' }), { message: '--private-key, --certificate, --ca-cert go together: --certificate and --ca-cert not given' });
});

t.test('a TLS listener serves only clients whose certificate chains to its CA, and serves on', async (t) => {
  const dir = t.testdir();
  const a = makePki(join(dir, 'a'));
  const b = makePki(join(dir, 'b'));
  const server = await pingServer(t, new TlsCredentials(a.identity('server')));
  const good = new TlsCredentials(a.identity('client'));
  t.equal(await pingWith(server.address, good), 'pong', 'a client of the same CA is served');
  t.match(await ping(server.address, grpc.credentials.createInsecure()), /^failed: 14 UNAVAILABLE/, 'a plaintext client is refused');
  const caOnly = grpc.credentials.createSsl(good.identity().ca, null, null, { checkServerIdentity: acceptAnyServerName });
  t.match(await ping(server.address, caOnly, tlsChannelOptions(good, server.address)), /^failed: 14 UNAVAILABLE.*certificate required/, 'a TLS client without a certificate is refused: the server asks for one');
  const foreign = b.identity('client');
  const foreignTrustingA = new TlsCredentials({ ...foreign, caCert: a.caCert });
  t.match(await pingWith(server.address, foreignTrustingA), /^failed: 14 UNAVAILABLE/, "a client whose certificate another CA signed is refused, though it trusts the server's");
  t.match(await pingWith(server.address, new TlsCredentials(foreign)), /^failed: 14 UNAVAILABLE.*self-signed certificate in certificate chain/, 'a client of another CA refuses the server');
  t.equal(await pingWith(server.address, good), 'pong', 'the listener still serves');
  t.equal(server.served(), 2, 'no refused client reached the service');
  // The negative checks are not blind: the same call in plaintext to a plaintext listener works.
  const plainServer = new grpc.Server();
  plainServer.addService(pingDefinition, { ping: (_c: unknown, cb: grpc.sendUnaryData<Buffer>) => cb(null, Buffer.from('pong')) });
  const plain = await listenGrpc(plainServer, '127.0.0.1:0', 16, () => undefined);
  t.teardown(() => {
    plain.close();
    plainServer.forceShutdown();
  });
  t.equal(await ping(`127.0.0.1:${plain.port}`, grpc.credentials.createInsecure()), 'pong', 'without an identity, listenGrpc serves plaintext as before');
  t.same(warnings.filter((w) => w.startsWith('DEP0123')), [], 'no warning of an IP address as the TLS server name');
});

const CLUSTER = 'tls-test';

function heartbeat(from: NodeId, to: NodeId): Message {
  return { clusterId: CLUSTER, from, to, term: 1, type: 'heartbeat', commit: 0, readSeq: 0 };
}

t.test('the Raft transport over TLS: members of one CA talk, a member of another neither sends nor receives', async (t) => {
  const dir = t.testdir();
  const a = makePki(join(dir, 'a'));
  const b = makePki(join(dir, 'b'));
  const nodes = new Map<NodeId, { tr: GrpcTransport; got: Message[] }>();
  for (const [id, files] of [[1, a.identity('n1')], [2, a.identity('n2')], [3, b.identity('n3')]] as const) {
    const tr = new GrpcTransport({ id, clusterId: CLUSTER, listenAddress: '127.0.0.1:0', peers: new Map(), tls: new TlsCredentials(files), connectTimeoutMs: 500 });
    const got: Message[] = [];
    const handlers: TransportHandlers = { onMessage: (m) => void got.push(m), onReport: () => undefined };
    await tr.start(handlers);
    t.teardown(() => tr.close());
    nodes.set(id, { tr, got });
  }
  const node = (id: NodeId): { tr: GrpcTransport; got: Message[] } => nodes.get(id) as { tr: GrpcTransport; got: Message[] };
  const addresses = new Map([...nodes].map(([id, n]) => [id, n.tr.address()]));
  for (const n of nodes.values()) n.tr.setPeers(addresses);
  node(1).tr.send([heartbeat(1, 2), heartbeat(1, 3)]);
  node(2).tr.send([heartbeat(2, 1)]);
  node(3).tr.send([heartbeat(3, 1), heartbeat(3, 2)]);
  await until(() => node(2).got.some((m) => m.from === 1) && node(1).got.some((m) => m.from === 2), 'members 1 and 2 to hear each other');
  t.pass('members of one CA deliver to each other over TLS');
  await until(() => node(3).tr.stats().connectFailures >= 2 && node(1).tr.stats().connectFailures >= 1, 'the connections to and from member 3 to fail');
  t.same(node(1).got.filter((m) => m.from === 3), [], 'member 1 received nothing from member 3');
  t.same(node(2).got.filter((m) => m.from === 3), [], 'member 2 received nothing from member 3');
  t.same(node(3).got, [], 'member 3 received nothing');
  t.equal(node(1).tr.stats().received + node(2).tr.stats().received, 2, 'the two heartbeats between 1 and 2, and nothing else, arrived');
});

t.test('renewed files are taken without a restart; a half-renewed pair is refused and the identity in use kept', async (t) => {
  const dir = t.testdir();
  const a = makePki(join(dir, 'a'));
  const b = makePki(join(dir, 'b'));
  // The server's files, as an operator's renewal overwrites them.
  const files: TlsFiles = { privateKey: join(dir, 'server-key.pem'), certificate: join(dir, 'server-cert.pem'), caCert: join(dir, 'server-ca.pem') };
  install(a.identity('server'), files);
  const events: TlsReloadEvent[] = [];
  const server = await pingServer(t, new TlsCredentials(files, { reloadIntervalMs: 50, onReload: (e) => void events.push(e) }));
  const clientA = new TlsCredentials(a.identity('client'));
  const clientB = new TlsCredentials(b.identity('client'));
  t.equal(await pingWith(server.address, clientA), 'pong', 'before: a client of CA a is served');
  t.match(await pingWith(server.address, clientB), /^failed/, 'before: a client of CA b is not');

  // The whole identity replaced by one of CA b, trusting CA b.
  install(b.identity('server'), files);
  await until(() => events.some((e) => e.kind === 'reloaded'), 'the renewed identity to be taken');
  t.equal(await pingWith(server.address, clientB), 'pong', 'after: a client of CA b is served');
  t.match(await pingWith(server.address, clientA), /^failed/, 'after: a client of CA a is not');

  // Half a renewal: a new key, the certificate not yet replaced.
  const next = b.identity('server-next');
  events.length = 0;
  replaceFile(next.privateKey, files.privateKey);
  await until(() => events.length > 0, 'the half-renewed pair to be looked at');
  t.same(events, [{ kind: 'refused', reason: `the private key ${files.privateKey} does not match the certificate ${files.certificate}` }], 'refused, naming both files');
  t.equal(await pingWith(server.address, clientB), 'pong', 'the identity in use is kept: clients are still served');
  replaceFile(next.certificate, files.certificate);
  await until(() => events.some((e) => e.kind === 'reloaded'), 'the completed renewal to be taken');
  t.equal(await pingWith(server.address, clientB), 'pong', 'the completed renewal serves');

  // A client's files renewed while it has no connection open: its next connection uses them.
  const clientFiles: TlsFiles = { privateKey: join(dir, 'client-key.pem'), certificate: join(dir, 'client-cert.pem'), caCert: join(dir, 'client-ca.pem') };
  install(a.identity('client-old'), clientFiles);
  const client = new TlsCredentials(clientFiles, { reloadIntervalMs: 60_000 });
  t.match(await pingWith(server.address, client), /^failed/, "a client still of CA a is refused by the server (and refuses it)");
  install(b.identity('client-new'), clientFiles);
  t.equal(await pingWith(server.address, client), 'pong', 'once its files are of CA b, its next connection is served, without waiting for the reload interval');
  t.equal(server.served(), 5, 'every refused call was refused before the service');
});

t.test('an identity moved to other files (an SSL row set to new paths) is taken for the next connections; files that cannot be used are refused', async (t) => {
  const dir = t.testdir();
  const a = makePki(join(dir, 'a'));
  const b = makePki(join(dir, 'b'));
  const server = await pingServer(t, new TlsCredentials(b.identity('server')));
  const events: TlsReloadEvent[] = [];
  const client = new TlsCredentials(a.identity('client'), { reloadIntervalMs: 60_000, onReload: (e) => void events.push(e) });
  t.match(await pingWith(server.address, client), /^failed/, 'a client of CA a is refused by a server of CA b');
  // Paths to a half-made identity: refused, the one in use kept.
  const half = { ...b.identity('client'), privateKey: a.identity('client').privateKey };
  t.notOk(client.useFiles(half), 'a key that is not the certificate\'s is not taken');
  t.match(events, [{ kind: 'refused', reason: /does not match the certificate/ }], 'and reported');
  t.match(await pingWith(server.address, client), /^failed/, 'the identity in use is still CA a\'s');
  // Paths to a whole identity of CA b: taken, the next connection is served.
  t.ok(client.useFiles(b.identity('client')), 'an identity of CA b at other paths is taken');
  t.same(client.files, b.identity('client'), 'and its paths are the ones followed');
  t.equal(await pingWith(server.address, client), 'pong', 'the next connection shows it and is served');
  t.notOk(client.useFiles(b.identity('client')), 'the same paths again change nothing');
});
