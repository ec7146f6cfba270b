// A unix-socket proxy in front of a real ovsdb-server, for tests of what a client does when the
// connection misbehaves: it can cut every connection, refuse new ones for a while, and write
// bytes of the test's choosing to the client as if the server had sent them.
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

export interface OvsdbProxy {
  /** unix:… target clients connect to. */
  readonly target: string;
  /** Connections accepted so far. */
  readonly accepted: () => number;
  /** Connections open now. */
  readonly open: () => number;
  /** Destroys every open connection (both sides). */
  cut(): void;
  /** While refusing, new connections are closed at once. */
  refuse(on: boolean): void;
  /** While stalled, what the server sends is dropped: a server that stops answering. */
  stall(on: boolean): void;
  /** Writes `text` to every open client connection, as if from the server. */
  inject(text: string): void;
  close(): Promise<void>;
}

export async function startOvsdbProxy(dir: string, upstreamPath: string): Promise<OvsdbProxy> {
  const sock = path.join(dir, `proxy-${process.pid}-${Math.floor(Math.random() * 1e9)}.sock`);
  const pairs = new Set<{ client: net.Socket; server: net.Socket }>();
  let accepted = 0;
  let refusing = false;
  let stalled = false;
  const server = net.createServer((client) => {
    accepted++;
    if (refusing) {
      client.destroy();
      return;
    }
    const upstream = net.createConnection({ path: upstreamPath });
    const pair = { client, server: upstream };
    pairs.add(pair);
    const drop = (): void => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', drop);
    upstream.on('error', drop);
    client.on('close', drop);
    upstream.on('close', drop);
    client.pipe(upstream);
    upstream.on('data', (chunk: Buffer) => {
      if (!stalled) client.write(chunk);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(sock, () => resolve());
  });
  return {
    target: `unix:${sock}`,
    accepted: () => accepted,
    open: () => pairs.size,
    cut(): void {
      for (const p of [...pairs]) {
        p.client.destroy();
        p.server.destroy();
      }
      pairs.clear();
    },
    refuse(on: boolean): void {
      refusing = on;
    },
    stall(on: boolean): void {
      stalled = on;
    },
    inject(text: string): void {
      for (const p of pairs) p.client.write(text);
    },
    async close(): Promise<void> {
      for (const p of [...pairs]) {
        p.client.destroy();
        p.server.destroy();
      }
      await new Promise<void>((resolve) => server.close(() => resolve()));
      fs.rmSync(sock, { force: true });
    },
  };
}
