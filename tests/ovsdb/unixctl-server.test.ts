// The unixctl server (ovsdb/unixctl-server.ts) against the real ovs-appctl of Open vSwitch 3.1:
// built-in commands, lib/unixctl.c's error texts, replies of async commands; then what a hostile
// client can do (malformed JSON, invalid JSON-RPC messages, a request over the bound, requests
// piled ahead of their replies, more connections than allowed, a client that never reads)
// leaves the server answering ovs-appctl. Method: a server in this process, ovs-appctl as a
// child process, raw sockets for what ovs-appctl never sends.
import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { Test } from 'tap';
import type { UnixctlCommand } from '../../ovsdb/unixctl-server.js';
import { runAppctl, toolInstalled, type AppctlReply } from '../helpers/appctl.js';
import { UnixctlServer, unixctlError, unixctlOk } from '../../ovsdb/unixctl-server.js';

const skip = toolInstalled('ovs-appctl') ? false : 'ovs-appctl is not installed';

const appctl = (path: string, ...args: string[]): Promise<AppctlReply> => runAppctl('ovs-appctl', ['-t', path, ...args]);

/** A folder with a short path: a unix socket's path is at most 107 bytes. */
function shortDir(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'uctl-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function serve(t: Test, extra: [string, UnixctlCommand][] = [], limits: Parameters<typeof UnixctlServer.listen>[0]['limits'] = {}): Promise<{ server: UnixctlServer; problems: string[] }> {
  const problems: string[] = [];
  const server = await UnixctlServer.listen({
    path: join(shortDir(t), 'test.ctl'),
    version: 'test-daemon 1.2.3',
    limits: { problemReportMs: 0, ...limits },
    onProblem: (m) => problems.push(m),
    commands: [
      ['echo', { usage: '[ARG...]', argsMin: 0, argsMax: 3, run: (args) => unixctlOk(args.join(' ')) }],
      ['need-two', { usage: 'A B', argsMin: 2, argsMax: 2, run: (args) => unixctlOk(`${args[0]}+${args[1]}`) }],
      ['fail', { usage: '', argsMin: 0, argsMax: 0, run: () => unixctlError('it failed') }],
      ['later', { usage: '', argsMin: 0, argsMax: 0, run: async () => new Promise((r) => setTimeout(() => r(unixctlOk('done later\n')), 50)) }],
      ...extra,
    ],
  });
  t.teardown(() => server.close());
  return { server, problems };
}

/** Sends raw bytes on a new connection; resolves with what came back before the server closed it (or timeoutMs passed). */
function raw(path: string, data: string | Buffer, timeoutMs = 2000): Promise<{ text: string; closedByServer: boolean }> {
  return new Promise((resolve) => {
    const s = net.connect(path);
    let text = '';
    const timer = setTimeout(() => {
      s.destroy();
      resolve({ text, closedByServer: false });
    }, timeoutMs);
    s.on('data', (d) => (text += d.toString()));
    s.on('close', () => {
      clearTimeout(timer);
      resolve({ text, closedByServer: true });
    });
    s.on('error', () => undefined);
    s.write(data);
  });
}

t.test('ovs-appctl: built-in commands, replies and lib/unixctl.c\'s errors', { skip }, async (t) => {
  const { server } = await serve(t);
  const list = await appctl(server.path, 'list-commands');
  t.equal(list.code, 0);
  t.equal(list.out, [
    'The available commands are:',
    '  echo                    [ARG...]',
    '  fail                    ',
    '  later                   ',
    '  list-commands           ',
    '  need-two                A B',
    '  version                 ',
    '',
  ].join('\n'), 'list-commands: sorted, names padded to 23 as lib/unixctl.c prints them');
  t.same(await appctl(server.path, 'version'), { code: 0, out: 'test-daemon 1.2.3\n', err: '' }, 'version, with the newline added');
  t.same(await appctl(server.path, 'echo', 'a', 'b c'), { code: 0, out: 'a b c\n', err: '' }, 'arguments arrive as strings');
  t.same(await appctl(server.path, 'echo'), { code: 0, out: '', err: '' }, 'an empty reply stays empty (no newline)');
  t.same(await appctl(server.path, 'later'), { code: 0, out: 'done later\n', err: '' }, 'an async command\'s reply (its own newline kept)');
  const unknown = await appctl(server.path, 'nope');
  t.equal(unknown.code, 2, 'a server error exits 2');
  t.match(unknown.err, /^"nope" is not a valid command \(use "list-commands" to see a list of valid commands\)\n/, 'unknown command: the text of lib/unixctl.c');
  t.match((await appctl(server.path, 'need-two', 'x')).err, /^"need-two" command requires at least 2 arguments\n/);
  t.match((await appctl(server.path, 'echo', '1', '2', '3', '4')).err, /^"echo" command takes at most 3 arguments\n/);
  const failed = await appctl(server.path, 'fail');
  t.equal(failed.code, 2);
  t.match(failed.err, /^it failed\n/, 'a command\'s error text, newline added');
});

t.test('the socket file: mode 0750, a stale socket replaced, a regular file refused, a path past sun_path bound through /proc/self/fd, removed on close', { skip }, async (t) => {
  const dir = shortDir(t);
  const path = join(dir, 'a.ctl');
  // A socket file left by a process that was killed (bound, never unlinked).
  spawnSync(process.execPath, ['-e', `require('net').createServer().listen(${JSON.stringify(path)}, () => process.kill(process.pid, 'SIGKILL'))`]);
  t.ok(lstatSync(path).isSocket(), 'a stale socket file is there');
  const server = await UnixctlServer.listen({ path, version: 'v' });
  t.equal(lstatSync(path).mode & 0o777, 0o750, 'rwxr-x---, as an Open vSwitch daemon\'s');
  t.equal((await appctl(path, 'version')).out, 'v\n', 'it answers on the replaced socket');
  await server.close();
  t.notOk(existsSync(path), 'close() removes the socket file');
  const file = join(dir, 'file.ctl');
  writeFileSync(file, 'not a socket');
  await t.rejects(UnixctlServer.listen({ path: file, version: 'v' }), { kind: 'listen', message: /exists and is not a socket/ }, 'a regular file is never replaced');
  // Past sun_path's 107 bytes: bound through /proc/self/fd/N/NAME as Open vSwitch binds it;
  // ovs-appctl connects to such a path the same way.
  const deep = join(dir, 'd'.repeat(60), 'e'.repeat(60));
  mkdirSync(deep, { recursive: true });
  const long = join(deep, 'long.ctl');
  t.ok(Buffer.byteLength(long) > 107, `a ${Buffer.byteLength(long)}-byte path`);
  const far = await UnixctlServer.listen({ path: long, version: 'far' });
  t.ok(lstatSync(long).isSocket(), 'the socket is at the long path');
  t.equal((await appctl(long, 'version')).out, 'far\n', 'ovs-appctl reaches it');
  await far.close();
  t.notOk(existsSync(long), 'and close() removes it');
  await t.rejects(UnixctlServer.listen({ path: join(dir, 'x'.repeat(120)), version: 'v' }), { kind: 'listen', message: /too long/ }, 'a name too long even through /proc/self/fd');
});

t.test('hostile clients leave the server answering', { skip }, async (t) => {
  const { server, problems } = await serve(t, [], { requestBytesMax: 4096, connectionsMax: 8, requestsQueuedMax: 4, idleMs: 300 });
  const path = server.path;
  const alive = async (what: string): Promise<void> => {
    t.same(await appctl(path, 'echo', 'ok'), { code: 0, out: 'ok\n', err: '' }, `still answering after ${what}`);
  };
  const closes = async (what: string, data: string | Buffer): Promise<void> => {
    const r = await raw(path, data);
    t.ok(r.closedByServer, `${what}: the connection is closed`);
    t.equal(r.text, '', `${what}: nothing is answered`);
    await alive(what);
  };
  await closes('malformed JSON', '{"method": "echo", "params": [}');
  await closes('a value that is not an object', '["echo"]');
  await closes('a notification (no id)', '{"method":"echo","params":[]}');
  await closes('a null id', '{"method":"echo","params":[],"id":null}');
  await closes('a reply', '{"result":"x","error":null,"id":1}');
  await closes('params not an array', '{"method":"echo","params":"a","id":1}');
  await closes('an unknown member', '{"method":"echo","params":[],"id":1,"extra":true}');
  await closes('a method that is not a string', '{"method":7,"params":[],"id":1}');
  await closes('bytes between values', 'garbage');
  await closes('a request over requestBytesMax', `{"method":"echo","params":["${'x'.repeat(8000)}"],"id":1}`);
  await closes('nesting past requestDepthMax', `{"method":"echo","params":${'['.repeat(100)}${']'.repeat(100)},"id":1}`);
  await closes('more requests ahead of their replies than allowed', '{"method":"echo","params":[],"id":1}'.repeat(20));
  // A request whose argument is not a string gets lib/unixctl.c's error, on a connection that stays.
  const nonString = await raw(path, '{"method":"echo","params":[1],"id":"x"}', 300);
  t.same(JSON.parse(nonString.text), { result: null, error: '"echo" command has non-string argument\n', id: 'x' }, 'a non-string argument: an error reply with the request\'s id');
  // Two requests in one write: both answered, in order.
  const two = await raw(path, '{"method":"echo","params":["a"],"id":1}{"method":"later","params":[],"id":2}', 500);
  t.equal(two.text, '{"result":"a\\n","error":null,"id":1}{"result":"done later\\n","error":null,"id":2}', 'pipelined requests answered in order');
  t.ok(two.closedByServer, 'then the silent connection is closed after idleMs');
  await alive('pipelined requests');

  // More connections than connectionsMax: those past it are closed at once; the rest still work.
  const held: net.Socket[] = [];
  for (let i = 0; i < 12; i++) held.push(net.connect(path).on('error', () => undefined));
  const closedOnes = await Promise.all(held.map((s) => new Promise<boolean>((resolve) => {
    s.once('close', () => resolve(true));
    setTimeout(() => resolve(false), 150);
  })));
  t.ok(closedOnes.filter(Boolean).length >= 4, `connections past the 8 allowed are closed (${closedOnes.filter(Boolean).length} of 12)`);
  for (const s of held) s.destroy();
  await alive('a flood of connections');

  // A client that sends requests and never reads: the server stops reading it (no next request
  // while a reply waits to go out) and closes it once silent; others are served meanwhile.
  const hog = net.connect(path);
  hog.on('error', () => undefined);
  hog.pause();
  await new Promise<void>((r) => hog.once('connect', () => r()));
  const big = 'y'.repeat(3000);
  for (let i = 0; i < 200 && !hog.destroyed; i++) hog.write(`{"method":"echo","params":["${big}","${big}","${big.slice(0, 1000)}"],"id":${i}}`);
  await alive('a client that does not read');
  await new Promise<void>((r) => (hog.destroyed ? r() : hog.once('close', () => r())));
  t.pass('the client that never read was closed');
  t.ok(problems.some((p) => /silent for 300 ms|more than 4 requests/.test(p)), 'why is reported');
  t.ok(problems.length > 0 && problems.every((p) => p.startsWith('control connection closed') || p.startsWith('a connection refused')), 'every problem reported names what happened');
});
