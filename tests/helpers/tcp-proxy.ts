// A loopback TCP proxy in front of a host:port, for tests of what a client does when its
// connection misbehaves: `cut` destroys every open connection (both sides); while stalled it
// forwards nothing either way and closes nothing (a peer that stopped answering). Closed with
// the test.
import net from 'node:net';
import type { Test } from 'tap';

export interface TcpProxy {
  /** host:port clients connect to. */
  readonly address: string;
  cut(): void;
  stall(on: boolean): void;
}

export async function startTcpProxy(t: Test, upstream: string): Promise<TcpProxy> {
  const [host, port] = [upstream.slice(0, upstream.lastIndexOf(':')), Number(upstream.slice(upstream.lastIndexOf(':') + 1))];
  let stalled = false;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const up = net.createConnection({ host, port });
    sockets.add(client);
    sockets.add(up);
    const drop = (): void => {
      client.destroy();
      up.destroy();
      sockets.delete(client);
      sockets.delete(up);
    };
    client.on('error', drop).on('close', drop);
    up.on('error', drop).on('close', drop);
    client.on('data', (b: Buffer) => void (stalled || up.write(b)));
    up.on('data', (b: Buffer) => void (stalled || client.write(b)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  t.teardown(() => new Promise<void>((resolve) => {
    for (const s of sockets) s.destroy();
    server.close(() => resolve());
  }));
  return {
    address: `127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    cut: () => {
      for (const s of [...sockets]) s.destroy();
    },
    stall: (on) => void (stalled = on),
  };
}
