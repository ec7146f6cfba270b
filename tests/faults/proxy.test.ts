// Goal: the fault proxy forwards, delays, stalls, cuts and heals as the fault suite relies on.
// Method: an echo server behind a proxy on loopback; bytes and timings measured at the dialer.
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import t from 'tap';
import { FaultProxy } from './proxy.js';
import { freePortBlock } from './ports.js';

async function echoServer(port: number): Promise<Server> {
  const server = createServer((s) => {
    s.on('error', () => undefined);
    s.pipe(s);
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return server;
}

function dial(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = createConnection({ host: '127.0.0.1', port }, () => resolve(s));
    s.once('error', reject);
  });
}

/** Resolves with what arrives on `s` within `ms` (possibly nothing), and whether it was reset. */
function receive(s: Socket, ms: number): Promise<{ text: string; closed: boolean }> {
  return new Promise((resolve) => {
    let text = '';
    let closed = false;
    const onData = (b: Buffer): void => void (text += b.toString());
    const onClose = (): void => void (closed = true);
    s.on('data', onData);
    s.on('close', onClose);
    s.on('error', () => undefined);
    setTimeout(() => {
      s.off('data', onData);
      s.off('close', onClose);
      resolve({ text, closed: closed || s.destroyed });
    }, ms);
  });
}

t.test('forward, delay, stall, cut, heal, reset', async (t) => {
  const [echoPort, proxyPort] = await freePortBlock(2);
  const echo = await echoServer(echoPort as number);
  const proxy = await FaultProxy.start({ host: '127.0.0.1', port: proxyPort as number }, { host: '127.0.0.1', port: echoPort as number }, Math.random);
  t.teardown(async () => {
    await proxy.close();
    await new Promise((r) => echo.close(r));
  });

  const a = await dial(proxyPort as number);
  a.write('hello');
  t.equal((await receive(a, 200)).text, 'hello', 'bytes pass both ways');

  proxy.delay('up', 300);
  const started = performance.now();
  a.write('slow');
  const late = await new Promise<number>((resolve) => a.once('data', () => resolve(performance.now() - started)));
  t.ok(late >= 290, `a delayed direction arrives after the delay (${late.toFixed(0)} ms)`);
  proxy.heal();

  proxy.stall('down', true);
  a.write('held');
  t.equal((await receive(a, 300)).text, '', 'a stalled direction delivers nothing');
  proxy.stall('down', false);
  t.equal((await receive(a, 300)).text, 'held', 'and delivers what it held once the stall ends');

  proxy.cut();
  t.ok((await receive(a, 200)).closed, 'a cut resets the live connection');
  const b = await dial(proxyPort as number);
  b.write('void');
  const inCut = await receive(b, 300);
  t.equal(inCut.text, '', 'a connection made during the cut is answered with nothing');
  proxy.heal();
  t.ok((await receive(b, 200)).closed, 'and is reset when the link heals');
  const c = await dial(proxyPort as number);
  c.write('again');
  t.equal((await receive(c, 300)).text, 'again', 'after the heal, bytes pass again');
  t.equal(proxy.resetAll(), 1, 'reset destroys the live connection');
  t.ok((await receive(c, 200)).closed);
  const s = proxy.stats();
  t.ok(s.reset >= 3 && s.bytesDiscarded === 4 && s.bytesUp >= 18, `counters: ${JSON.stringify(s)}`);
});
