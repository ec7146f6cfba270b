// SSL on the OVSDB doors (pssl: listeners), as ovsdb-server serves it: the real ovn-nbctl and
// ovn-sbctl connect with -p/-c/-C and certificates made by ovs-pki; clients without a
// certificate, with another CA's or in plain TCP get nothing; the settings come from the command
// line or, for a door following its database, from the SSL row `set-ssl` writes; a renewed
// certificate is served without a restart; settings OpenSSL refuses are reported and change
// nothing.
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import tls from 'node:tls';
import t from 'tap';
import { LocalNetwork } from '../../cluster/local-transport.js';
import { readTlsFiles, type TlsFiles } from '../../cluster/tls.js';
import { CentralNode } from '../../server/central-node.js';
import type { OvsdbDoor, RemoteStatus } from '../../server/ovsdb-door.js';
import { startOvsdbDoor } from '../../server/ovsdb-door.js';
import { DoorSsl, sslContext, tlsVersionRange } from '../../server/ovsdb-ssl.js';
import { JsonRpcClient, parseEndpoint } from '../../ovsdb/jsonrpc-client.js';
import { runTool, type CliResult } from '../helpers/ovnts-cli.js';
import { makePki } from '../helpers/pki.js';
import { freePort } from '../helpers/raft-kv-cluster.js';

const haveTools = existsSync('/usr/bin/ovn-nbctl') && existsSync('/usr/bin/ovn-sbctl') && existsSync('/usr/bin/ovs-pki');

type Run = CliResult;
const run = runTool;

/** ovn-nbctl or ovn-sbctl over ssl: with an identity (--timeout: a refused handshake is retried until then). */
function ctl(tool: 'ovn-nbctl' | 'ovn-sbctl', port: number, id: TlsFiles, ...args: string[]): Promise<Run> {
  return run(tool, [`--db=ssl:127.0.0.1:${port}`, '-p', id.privateKey, '-c', id.certificate, '-C', id.caCert, '--timeout=5', ...args]);
}

/** What a test client presents and trusts: a key and certificate (or none), and a CA. */
type ClientId = TlsFiles | { readonly caCert: string };

/**
 * One list_dbs over TLS (or plain TCP with `plain`): the answer's result, or the reason there
 * was none (the handshake refused, the connection closed without an answer).
 */
function listDbs(port: number, id: ClientId, plain = false): Promise<unknown> {
  return new Promise((resolve) => {
    const request = JSON.stringify({ method: 'list_dbs', params: [], id: 1 });
    const idFiles = 'privateKey' in id ? readTlsFiles(id) : { ca: readFileSync(id.caCert) };
    const socket = plain
      ? net.connect(port, '127.0.0.1', () => socket.write(request))
      : tls.connect({ port, host: '127.0.0.1', ...idFiles, checkServerIdentity: () => undefined }, () => socket.write(request));
    let text = '';
    const timer = setTimeout(() => finish('no answer in 5 s'), 5000);
    function finish(v: unknown): void {
      clearTimeout(timer);
      socket.destroy();
      resolve(v);
    }
    socket.on('data', (d: Buffer) => {
      text += d.toString();
      try {
        finish((JSON.parse(text) as { result: unknown }).result);
      } catch {
        // Not a whole value yet.
      }
    });
    socket.on('error', (err) => finish(`error: ${err.message}`));
    socket.on('close', () => finish('closed without an answer'));
  });
}

async function until<T>(what: string, f: () => T | Promise<T>, ok: (v: T) => boolean, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (ok(v) || Date.now() > deadline) return v;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function startCentral(t: { teardown(fn: () => unknown): void }, name: string): Promise<{ central: CentralNode; dir: string }> {
  const network = new LocalNetwork(name);
  const dir = mkdtempSync(join(tmpdir(), `${name}-`));
  const central = await CentralNode.start({ id: 1, clusterId: name, dataDir: join(dir, 'n1'), transport: network.transport(1), peers: new Map([[1, 'local:1']]), bootstrap: [1], tickMs: 10 });
  await central.transact([{ op: 'insert', table: 'NB_Global', row: {} }]);
  t.teardown(async () => {
    await central.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  return { central, dir };
}

const portOf = (door: OvsdbDoor): number => (door.address as { port: number }).port;

t.test('ssl_protocols as Open vSwitch reads them', async (t) => {
  t.same(tlsVersionRange('TLSv1.2'), { minVersion: 'TLSv1.2', maxVersion: 'TLSv1.3' }, 'TLS 1.3 is never turned off (OVS 3.1 has no flag for it)');
  t.same(tlsVersionRange('tlsv1,TLSv1.1 TLSv1.2'), { minVersion: 'TLSv1', maxVersion: 'TLSv1.3' }, 'case-insensitive; commas and blanks separate');
  t.same(tlsVersionRange('TLSv1.3'), { minVersion: 'TLSv1.3', maxVersion: 'TLSv1.3' });
  t.match(tlsVersionRange('SSLv3'), /SSLv3: SSL protocol not recognized/);
  t.match(tlsVersionRange(' , '), /no protocol named/);
});

t.test('SSL settings that make no context are errors naming what is wrong', { skip: haveTools ? false : 'ovs-pki is not installed' }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'door-ssl-ctx-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const pki = makePki(join(dir, 'ca'));
  const a = pki.identity('a');
  const b = pki.identity('b');
  t.ok('options' in sslContext({ files: a }), 'a key with its certificate makes a context');
  t.match(sslContext({ files: { ...a, privateKey: b.privateKey } }), { error: /do not make a TLS context/ }, "another certificate's key");
  t.match(sslContext({ files: { ...a, certificate: join(dir, 'none.pem') } }), { error: /cannot read the certificate .*none\.pem/ });
  t.match(sslContext({ files: { ...a, caCert: join(dir, 'ca', 'ovs-pki.log') } }), { error: /CA certificate .* holds no PEM block/ });
  t.match(sslContext({ files: a, protocols: 'TLSv9' }), { error: /TLSv9: SSL protocol not recognized/ });
  t.match(sslContext({ files: a, ciphers: 'NO-SUCH-CIPHER' }), { error: /do not make a TLS context/ });
  const none = new DoorSsl(undefined, undefined);
  t.match(none.current(), { error: /--private-key, --certificate and --ca-cert$/ }, 'without settings: the flags to give');
  t.equal(none.refresh(), false, 'nothing changed, nothing to swap');
});

t.test('a pssl: listener serves ovn-nbctl with certificates and refuses every other client', { skip: haveTools ? false : 'ovn-nbctl or ovs-pki is not installed' }, async (t) => {
  const { central, dir } = await startCentral(t, 'door-ssl');
  const pki = makePki(join(dir, 'ca1'));
  const other = makePki(join(dir, 'ca2'));
  const client = pki.identity('client');
  const stranger = other.identity('stranger');
  await t.rejects(startOvsdbDoor({ central, listen: { host: '127.0.0.1', port: 0, ssl: true } }), /pssl: needs a private key, a certificate and a CA certificate/, 'no SSL settings: the door does not start');
  await t.rejects(startOvsdbDoor({ central, listen: { host: '127.0.0.1', port: 0, ssl: true }, ssl: { files: pki.identity('server'), protocols: 'SSLv3' } }), /SSL protocol not recognized/);
  const door = await startOvsdbDoor({ central, listen: { host: '127.0.0.1', port: 0, ssl: true }, ssl: { files: pki.identity('server') } });
  t.teardown(() => door.close());
  const port = portOf(door);
  t.same(door.address, { host: '127.0.0.1', port, ssl: true });

  const add = await ctl('ovn-nbctl', port, client, 'ls-add', 'sw0');
  t.equal(add.code, 0, `ovn-nbctl ls-add over ssl: ${add.stderr}`);
  const wait = await ctl('ovn-nbctl', port, client, '--wait=sb', 'lsp-add', 'sw0', 'p1');
  t.equal(wait.code, 0, `--wait=sb over ssl: ${wait.stderr}`);
  t.match((await ctl('ovn-nbctl', port, client, 'show')).stdout, /switch [0-9a-f-]{36} \(sw0\)\n\s+port p1/, 'show reads it back');

  t.same(await listDbs(port, client), ['OVN_Northbound', '_Server'], 'a client with a certificate of the CA is answered');
  // The clients below all trust the server's CA: what is refused is what they present.
  t.match(await listDbs(port, { caCert: pki.caCert }), /closed without an answer|error/, 'a client without a certificate is not');
  t.match(await listDbs(port, { ...stranger, caCert: pki.caCert }), /closed without an answer|error/, "nor one with another CA's certificate");
  t.match(await listDbs(port, { ...client, caCert: other.caCert }), /error: .*certificate/, 'a client that trusts another CA refuses the server');
  t.match(await listDbs(port, client, true), /closed without an answer|error|no answer/, 'nor plain JSON-RPC on the SSL port');
  const refused = await ctl('ovn-nbctl', port, { ...stranger, caCert: pki.caCert }, 'ls-add', 'sw-stranger');
  t.not(refused.code, 0, "ovn-nbctl with another CA's certificate fails");
  t.same(
    [...central.sm.nb.rows('Logical_Switch').values()].map((r) => (r as unknown as { name: string }).name),
    ['sw0'],
    'nothing but what the good client wrote',
  );
  t.same(await listDbs(port, client), ['OVN_Northbound', '_Server'], 'the door still answers afterwards');

  // Garbage where a handshake should be, and handshakes cut short: each is dropped, the door
  // goes on, and no socket of the door's is left behind (a socket the server kept would show
  // in the kernel's table for its port until the handshake timeout at most).
  let seed = 7;
  const random = (): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  await Promise.all(
    Array.from({ length: 200 }, (_, i) => new Promise<void>((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => {
        const bytes = Buffer.from(Array.from({ length: 3 + Math.floor(random() * 600) }, () => Math.floor(random() * 256)));
        // Every fourth starts like a TLS handshake record, so it gets past the record layer.
        if (i % 4 === 0) bytes.set([0x16, 0x03, 0x01], 0);
        s.write(bytes);
        // Half of them stay (a handshake never finished), the others leave at once.
        setTimeout(() => s.destroy(), i % 2 === 0 ? 300 : 0);
      });
      s.on('error', () => resolve());
      s.on('close', () => resolve());
    })),
  );
  t.same(await listDbs(port, client), ['OVN_Northbound', '_Server'], '200 connections of garbage later, the door still answers');
  // The door's accepted sockets still open (its listener, and TIME-WAIT entries the kernel keeps
  // after a close, are not sockets it holds).
  const sockets = (): Promise<string> =>
    run('ss', ['-tnH', 'state', 'all', `( sport = :${port} )`]).then((r) => r.stdout.split('\n').filter((l) => l.trim() !== '' && !/^(LISTEN|TIME-WAIT)\s/.test(l)).join('\n'));
  t.equal(await until('the door to drop what it accepted', sockets, (v) => v === '', 15_000), '', 'none of those connections is held by the door');

  // Clients that start a handshake and never finish it are dropped at the door's bound.
  const slow = await startOvsdbDoor({ central, listen: { host: '127.0.0.1', port: 0, ssl: true }, ssl: { files: pki.identity('server') }, limits: { tlsHandshakeMs: 300 } });
  t.teardown(() => slow.close());
  const started = Date.now();
  const heldMs = await Promise.all(
    Array.from({ length: 20 }, () => new Promise<number>((resolve) => {
      const s = net.connect(portOf(slow), '127.0.0.1', () => s.write(Buffer.from([0x16, 0x03, 0x01, 0x00, 0x40, 0x01])));
      const giveUp = setTimeout(() => s.destroy(), 10_000);
      s.on('error', () => undefined);
      s.on('close', () => {
        clearTimeout(giveUp);
        resolve(Date.now() - started);
      });
    })),
  );
  t.ok(Math.max(...heldMs) < 5000, `a handshake left unfinished is dropped by the door (the last after ${Math.max(...heldMs)} ms; bound 300 ms)`);

  // Our own OVSDB client speaks ssl: targets too (ovsdb-client's -p/-c/-C).
  const endpoint = parseEndpoint(`ssl:127.0.0.1:${port}`);
  t.same(endpoint, { host: '127.0.0.1', port, ssl: true });
  await t.rejects(JsonRpcClient.connect(endpoint), /needs a private key, a certificate and a CA certificate/, 'an ssl: target without an identity');
  const c = await JsonRpcClient.connect(endpoint, { tls: readTlsFiles(client) });
  t.same(await c.request('list_dbs', []), ['OVN_Northbound', '_Server'], 'JsonRpcClient over ssl:');
  await c.close();
  await t.rejects(JsonRpcClient.connect(endpoint, { tls: readTlsFiles({ ...client, caCert: other.caCert }) }), /certificate/, 'it refuses a server of another CA');
});

t.test('set-ssl and set-connection pssl: open an SSL listener; bad settings keep the one in force', { skip: haveTools ? false : 'ovn-nbctl or ovs-pki is not installed' }, async (t) => {
  const { central, dir } = await startCentral(t, 'door-ssl-row');
  const pki = makePki(join(dir, 'ca'));
  const server = pki.identity('server');
  const client = pki.identity('client');
  const errors: string[] = [];
  const door = await startOvsdbDoor({ central, listen: { host: '127.0.0.1', port: 0 }, remotesFromDb: true, onRemoteError: (target, reason) => void errors.push(`${target}: ${reason}`) });
  t.teardown(() => door.close());
  const nbctl = (...args: string[]): Promise<Run> => run('ovn-nbctl', [`--db=tcp:127.0.0.1:${portOf(door)}`, '--timeout=20', ...args]);
  const sslPort = await freePort();
  const target = `pssl:${sslPort}:127.0.0.1`;

  t.equal((await nbctl('set-connection', target)).code, 0);
  const before = await until('the target to fail', () => door.remotes(), (r: RemoteStatus[]) => r.some((x) => x.error !== undefined));
  t.match(before, [{ target, error: /pssl: needs a private key.*SSL row/ }], 'without an SSL row the target cannot be served');

  const set = await nbctl('set-ssl', server.privateKey, server.certificate, server.caCert);
  t.equal(set.code, 0, `set-ssl: ${set.stderr}`);
  t.match((await nbctl('get-ssl')).stdout, /Private key: .*server-privkey\.pem/);
  const open = await until('the listener to open', () => door.remotes(), (r: RemoteStatus[]) => r.some((x) => x.listening !== undefined));
  t.same(open, [{ target, listening: { host: '127.0.0.1', port: sslPort, ssl: true }, readOnly: false }], 'the SSL row makes the target servable');
  const add = await ctl('ovn-nbctl', sslPort, client, 'ls-add', 'sw-ssl');
  t.equal(add.code, 0, `ovn-nbctl through the row's pssl: listener: ${add.stderr}`);
  t.match((await nbctl('ls-list')).stdout, /\(sw-ssl\)/);

  // Protocols OpenSSL does not know: reported, and the listener keeps serving as before.
  errors.length = 0;
  t.equal((await nbctl('set-ssl', server.privateKey, server.certificate, server.caCert, 'TLSv1.2,SSLv2')).code, 0);
  await until('the bad settings to be reported', () => errors.join('\n'), (e: string) => e.includes('SSLv2'));
  t.match(errors.join('\n'), new RegExp(`${target}: keeps serving with its SSL settings as they were: SSLv2: SSL protocol not recognized`));
  t.same(await listDbs(sslPort, client), ['OVN_Northbound', '_Server'], 'still answered over SSL');
  t.equal((await nbctl('set-ssl', server.privateKey, server.certificate, server.caCert, 'TLSv1.2')).code, 0);
  t.same(await listDbs(sslPort, client), ['OVN_Northbound', '_Server'], 'TLSv1.2 alone serves this client');

  t.equal((await nbctl('del-connection')).code, 0);
  await until('the listener to close', () => door.remotes(), (r: RemoteStatus[]) => r.length === 0);
  t.match(await listDbs(sslPort, client), /error|closed/, 'nothing listens once the row is gone');
});

t.test('a renewed certificate is served from the next handshake, without a restart', { skip: haveTools ? false : 'ovs-pki is not installed' }, async (t) => {
  const { central, dir } = await startCentral(t, 'door-ssl-renew');
  const first = makePki(join(dir, 'ca1'));
  const second = makePki(join(dir, 'ca2'));
  const files = { privateKey: join(dir, 'key.pem'), certificate: join(dir, 'cert.pem'), caCert: join(dir, 'cacert.pem') };
  const install = (id: TlsFiles): void => {
    copyFileSync(id.privateKey, files.privateKey);
    copyFileSync(id.certificate, files.certificate);
    copyFileSync(id.caCert, files.caCert);
  };
  install(first.identity('server'));
  const door = await startOvsdbDoor({ central, listen: { host: '127.0.0.1', port: 0, ssl: true }, ssl: { files } });
  t.teardown(() => door.close());
  const port = portOf(door);
  const oldClient = first.identity('client');
  const newClient = second.identity('client');
  t.same(await listDbs(port, oldClient), ['OVN_Northbound', '_Server'], 'served with the first CA');
  t.match(await listDbs(port, { ...newClient, caCert: first.caCert }), /error|closed/, "a certificate of the second CA is refused while the server trusts the first");

  install(second.identity('server'));
  const renewed = await until('the renewed files to be served', () => listDbs(port, newClient), (v) => Array.isArray(v));
  t.same(renewed, ['OVN_Northbound', '_Server'], "the second CA's client is served once the files change");
  t.match(await listDbs(port, { ...oldClient, caCert: second.caCert }), /error|closed/, "and a certificate of the first CA is refused now");
});

t.test('ovn-sbctl over SSL: a chassis registers and is listed', { skip: haveTools ? false : 'ovn-sbctl or ovs-pki is not installed' }, async (t) => {
  const { central, dir } = await startCentral(t, 'door-ssl-sb');
  const pki = makePki(join(dir, 'ca'));
  const door = await startOvsdbDoor({ central, listen: { host: '127.0.0.1', port: 0, ssl: true }, ssl: { files: pki.identity('server') }, db: 'OVN_Southbound' });
  t.teardown(() => door.close());
  const hv = pki.identity('hv1');
  const add = await ctl('ovn-sbctl', portOf(door), hv, 'chassis-add', 'hv1', 'geneve', '192.0.2.1');
  t.equal(add.code, 0, `ovn-sbctl chassis-add over ssl: ${add.stderr}`);
  const list = await ctl('ovn-sbctl', portOf(door), hv, '--columns=name', 'list', 'Chassis');
  t.match(list.stdout, /name\s+: hv1/, 'listed over ssl');
});
