// A TCP proxy a test controls, for one ordered link between two processes (the dialer's side
// is "up", the listener's answers "down"). It forwards bytes unchanged while the link is
// healthy, and on command:
//   - cut: resets every connection through it and, until healed, accepts new ones but forwards
//     nothing in either direction (a dialer sees its handshake go unanswered, as when packets
//     are dropped), then resets those too when healed;
//   - stall one direction: stops reading from its source, so the bytes wait in the kernel and
//     TCP's flow control pushes back on the sender; they arrive, late, when the stall ends;
//   - delay one direction: each chunk is held for delayMs (plus up to jitterMs), order kept;
//   - reset: destroys every current connection at once (the dialer reconnects).
// Bytes are never dropped from the middle of a live connection: that would only corrupt the
// framing above TCP, not model a network. Every buffer is bounded (see proxyLimits).
import { createConnection, createServer, type Server, type Socket } from 'node:net';

export type Direction = 'up' | 'down';

export const proxyLimits = {
  /** Bytes held for delay in one direction of one connection before its source is paused. */
  delayedBytesMax: 4 * 1024 * 1024,
  /** Connections through one proxy at once; more are refused (reset). */
  connectionsMax: 256,
} as const;

export interface ProxyStats {
  readonly accepted: number;
  readonly refused: number;
  readonly reset: number;
  readonly bytesUp: number;
  readonly bytesDown: number;
  /** Bytes read while cut, thrown away with their connection. */
  readonly bytesDiscarded: number;
}

interface Held {
  readonly chunk: Buffer;
  readonly dueMs: number;
}

/** One direction of one connection: reads from `src`, writes to `dst`, with delay and stall. */
class Pipe {
  private queue: Held[] = [];
  private queuedBytes = 0;
  private lastDueMs = 0;
  private timer: NodeJS.Timeout | undefined;
  private waitingDrain = false;

  constructor(
    private readonly src: Socket,
    private readonly dst: Socket,
    private readonly proxy: FaultProxy,
    readonly dir: Direction,
  ) {
    src.on('data', (chunk: Buffer) => this.onData(chunk));
  }

  private onData(chunk: Buffer): void {
    this.proxy.countBytes(this.dir, chunk.byteLength);
    const { delayMs, jitterMs } = this.proxy.delayOf(this.dir);
    const now = performance.now();
    const jitter = jitterMs > 0 ? this.proxy.random() * jitterMs : 0;
    // Never before the chunk ahead of it: TCP keeps order, so does the proxy.
    const dueMs = Math.max(this.lastDueMs, now + delayMs + jitter);
    this.lastDueMs = dueMs;
    this.queue.push({ chunk, dueMs });
    this.queuedBytes += chunk.byteLength;
    if (this.queuedBytes > proxyLimits.delayedBytesMax) this.src.pause();
    this.pump();
  }

  /** Writes every chunk that is due, unless stalled or the destination pushes back. */
  pump(): void {
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    if (this.proxy.isStalled(this.dir)) {
      this.src.pause();
      return;
    }
    const now = performance.now();
    while (this.queue.length > 0 && !this.waitingDrain) {
      const head = this.queue[0] as Held;
      if (head.dueMs > now) {
        this.timer = setTimeout(() => this.pump(), Math.max(1, Math.ceil(head.dueMs - now)));
        break;
      }
      this.queue.shift();
      this.queuedBytes -= head.chunk.byteLength;
      if (!this.dst.write(head.chunk)) {
        this.waitingDrain = true;
        this.dst.once('drain', () => {
          this.waitingDrain = false;
          this.pump();
        });
      }
    }
    if (this.queuedBytes <= proxyLimits.delayedBytesMax / 2 && !this.waitingDrain) this.src.resume();
  }

  stop(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.queue = [];
    this.queuedBytes = 0;
  }
}

interface Connection {
  readonly client: Socket;
  readonly server: Socket | undefined;
  readonly pipes: Pipe[];
}

export class FaultProxy {
  private readonly connections = new Set<Connection>();
  private cutNow = false;
  private readonly stalled = { up: false, down: false };
  private readonly delays = { up: { delayMs: 0, jitterMs: 0 }, down: { delayMs: 0, jitterMs: 0 } };
  private counters = { accepted: 0, refused: 0, reset: 0, bytesUp: 0, bytesDown: 0, bytesDiscarded: 0 };
  private closed = false;

  private constructor(
    private readonly server: Server,
    readonly port: number,
    readonly target: { readonly host: string; readonly port: number },
    /** [0, 1): the jitter's randomness, injected so a run can be replayed. */
    readonly random: () => number,
  ) {}

  /** Listens on host:port (port must be free) and forwards to target. */
  static async start(listen: { host: string; port: number }, target: { host: string; port: number }, random: () => number): Promise<FaultProxy> {
    const server = createServer({ noDelay: true, pauseOnConnect: true });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(listen.port, listen.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    const proxy = new FaultProxy(server, listen.port, target, random);
    server.on('connection', (socket) => proxy.accept(socket));
    return proxy;
  }

  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  private accept(client: Socket): void {
    if (this.closed || this.connections.size >= proxyLimits.connectionsMax) {
      this.counters.refused++;
      client.resetAndDestroy();
      return;
    }
    this.counters.accepted++;
    client.setNoDelay(true);
    client.on('error', () => undefined);
    if (this.cutNow) {
      // A black hole: read and throw away, answer nothing, until heal() resets it.
      const conn: Connection = { client, server: undefined, pipes: [] };
      this.connections.add(conn);
      client.on('data', (b: Buffer) => (this.counters.bytesDiscarded += b.byteLength));
      client.on('close', () => this.connections.delete(conn));
      client.resume();
      return;
    }
    const server = createConnection({ host: this.target.host, port: this.target.port, noDelay: true });
    server.on('error', () => undefined);
    const conn: Connection = { client, server, pipes: [] };
    conn.pipes.push(new Pipe(client, server, this, 'up'), new Pipe(server, client, this, 'down'));
    this.connections.add(conn);
    // Either side closing closes the other (bytes still held for delay go with it).
    const end = (): void => this.drop(conn, false);
    client.on('close', end);
    server.on('close', end);
    client.resume();
  }

  private drop(conn: Connection, reset: boolean): void {
    if (!this.connections.delete(conn)) return;
    for (const p of conn.pipes) p.stop();
    if (reset) {
      this.counters.reset++;
      if (!conn.client.destroyed) conn.client.resetAndDestroy();
      if (conn.server !== undefined && !conn.server.destroyed) conn.server.resetAndDestroy();
    } else {
      conn.client.destroy();
      conn.server?.destroy();
    }
  }

  /** @internal for Pipe */
  countBytes(dir: Direction, n: number): void {
    if (dir === 'up') this.counters.bytesUp += n;
    else this.counters.bytesDown += n;
  }

  /** @internal for Pipe */
  delayOf(dir: Direction): { delayMs: number; jitterMs: number } {
    return this.delays[dir];
  }

  /** @internal for Pipe */
  isStalled(dir: Direction): boolean {
    return this.stalled[dir];
  }

  /** Resets every connection; until heal(), new ones are held and answered with nothing. */
  cut(): void {
    this.cutNow = true;
    this.resetAll();
  }

  get isCut(): boolean {
    return this.cutNow;
  }

  /** Ends a cut (resetting the held connections), every stall and every delay. */
  heal(): void {
    if (this.cutNow) {
      this.cutNow = false;
      this.resetAll();
    }
    this.delays.up = { delayMs: 0, jitterMs: 0 };
    this.delays.down = { delayMs: 0, jitterMs: 0 };
    this.stall('up', false);
    this.stall('down', false);
  }

  /** Stops (or restarts) forwarding one direction; held bytes flow again when it ends. */
  stall(dir: Direction, on: boolean): void {
    this.stalled[dir] = on;
    this.repump(dir);
  }

  /** Holds every later chunk of one direction delayMs plus up to jitterMs. */
  delay(dir: Direction, delayMs: number, jitterMs = 0): void {
    if (!(delayMs >= 0 && jitterMs >= 0)) throw new Error(`FaultProxy.delay: bad delay ${delayMs} / jitter ${jitterMs}`);
    this.delays[dir] = { delayMs, jitterMs };
    this.repump(dir);
  }

  private repump(dir: Direction): void {
    for (const c of this.connections) for (const p of c.pipes) if (p.dir === dir) p.pump();
  }

  /** Destroys every connection through the proxy with a TCP reset; returns how many. */
  resetAll(): number {
    const all = [...this.connections];
    for (const c of all) this.drop(c, true);
    return all.length;
  }

  stats(): ProxyStats {
    return { ...this.counters };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.resetAll();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
