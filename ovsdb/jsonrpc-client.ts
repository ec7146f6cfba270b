// One OVSDB JSON-RPC 1.0 connection (RFC 7047 section 4): JSON values streamed over a unix or
// TCP socket with no framing, requests matched to replies by id, the server's "echo" requests
// answered, and every message without an id handed to a notification callback. It does not
// reconnect: ovsdb/client.ts builds the reconnecting, replicating session on top of it.
import net from 'node:net';
import tls from 'node:tls';
import { JsonStreamSyntaxError, JsonValueSplitter } from './json-stream.js';

/** Default bound on one incoming JSON value; a server that sends more is broken or hostile. */
export const MESSAGE_BYTES_MAX_DEFAULT = 64 * 1024 * 1024;

/** Default bound on requests in flight on one connection. */
export const PENDING_REQUESTS_MAX_DEFAULT = 10_000;

/** Default bound on the wait for one reply, so a hung server fails a request instead of stalling it. */
export const REQUEST_TIMEOUT_MS_DEFAULT = 60_000;

/** Default bound on connecting (TCP handshake, or a unix socket's accept). */
export const CONNECT_TIMEOUT_MS_DEFAULT = 10_000;

export { JsonStreamSyntaxError, JsonValueSplitter, JsonValueTooLargeError } from './json-stream.js';

/** The server answered a request with a JSON-RPC error (not an OVSDB per-operation error). */
export class JsonRpcError extends Error {
  readonly kind = 'rpc error';
  constructor(
    readonly method: string,
    readonly error: unknown,
  ) {
    super(`${method}: server replied with error ${JSON.stringify(error)}`);
  }
}

export class ConnectionClosedError extends Error {
  readonly kind = 'connection closed';
}

/** A request was refused before it was sent, or its reply did not come in time. */
export class RequestFailedError extends Error {
  constructor(
    readonly kind: 'too many requests' | 'timeout',
    message: string,
  ) {
    super(message);
  }
}

/** A server to connect to: a unix socket, or TCP (with SSL for an ssl: target). */
export type Endpoint = { readonly path: string } | { readonly host: string; readonly port: number; readonly ssl?: boolean };

/**
 * Parses an OVSDB active connection target as ovs-vsctl --db takes one: "unix:PATH",
 * "tcp:HOST:PORT" or "ssl:HOST:PORT" (an IPv6 host in brackets: "tcp:[::1]:6640"). Throws on
 * anything else, with a message that names the accepted forms.
 */
export function parseEndpoint(target: string): Endpoint {
  if (target.startsWith('unix:') && target.length > 5) return { path: target.slice(5) };
  const m = /^(tcp|ssl):(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(target);
  if (m !== null) {
    const port = Number(m[4]);
    if (port > 0 && port < 65536) return { host: (m[2] ?? m[3]) as string, port, ...(m[1] === 'ssl' ? { ssl: true } : {}) };
  }
  throw new Error(`bad OVSDB target "${target}": expected unix:PATH, tcp:HOST:PORT or ssl:HOST:PORT`);
}

export function endpointToString(e: Endpoint): string {
  return 'path' in e ? `unix:${e.path}` : `${e.ssl === true ? 'ssl' : 'tcp'}:${e.host.includes(':') ? `[${e.host}]` : e.host}:${e.port}`;
}

export interface JsonRpcClientOptions {
  readonly messageBytesMax?: number;
  readonly pendingRequestsMax?: number;
  /** Milliseconds to wait for a reply before rejecting the request (0: wait forever). */
  readonly requestTimeoutMs?: number;
  readonly connectTimeoutMs?: number;
  /** Called for each incoming message that carries a method and a null id (e.g. "update"). */
  readonly onNotification?: (method: string, params: unknown) => void;
  /** Called once when the connection is gone, with the reason (a protocol error, or closed). */
  readonly onClose?: (reason: Error) => void;
  /**
   * The key, certificate and CA certificate (PEM) for an ssl: endpoint, as ovsdb-client's -p, -c
   * and -C give them: the server's certificate must chain to the CA; its name is not checked,
   * as Open vSwitch does not check it.
   */
  readonly tls?: { readonly key: Buffer; readonly cert: Buffer; readonly ca: Buffer };
}

interface Pending {
  readonly method: string;
  readonly resolve: (result: unknown) => void;
  readonly reject: (err: Error) => void;
  readonly timer: NodeJS.Timeout | undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export class JsonRpcClient {
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly splitter: JsonValueSplitter;
  private readonly pendingRequestsMax: number;
  private closedError: Error | undefined;
  private readonly closed: Promise<void>;
  /** Milliseconds-since-epoch of the last byte received (for inactivity probes). */
  lastReceiveMs = Date.now();

  private constructor(
    private readonly socket: net.Socket,
    private readonly options: JsonRpcClientOptions,
  ) {
    this.splitter = new JsonValueSplitter(options.messageBytesMax ?? MESSAGE_BYTES_MAX_DEFAULT);
    this.pendingRequestsMax = options.pendingRequestsMax ?? PENDING_REQUESTS_MAX_DEFAULT;
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', (err) => this.fail(err));
    this.closed = new Promise((resolve) => {
      socket.on('close', () => {
        this.fail(new ConnectionClosedError('connection closed'));
        resolve();
      });
    });
  }

  /** Connects; resolves once the socket is connected, rejects on a connect error or timeout. */
  static connect(endpoint: Endpoint, options: JsonRpcClientOptions = {}): Promise<JsonRpcClient> {
    const ssl = !('path' in endpoint) && endpoint.ssl === true;
    if (ssl && options.tls === undefined) return Promise.reject(new Error(`${endpointToString(endpoint)} needs a private key, a certificate and a CA certificate`));
    return new Promise((resolve, reject) => {
      const socket =
        'path' in endpoint
          ? net.createConnection({ path: endpoint.path })
          : ssl
            ? tls.connect({ host: endpoint.host, port: endpoint.port, ...options.tls, checkServerIdentity: () => undefined })
            : net.createConnection({ host: endpoint.host, port: endpoint.port });
      const timeoutMs = options.connectTimeoutMs ?? CONNECT_TIMEOUT_MS_DEFAULT;
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new RequestFailedError('timeout', `no connection to ${endpointToString(endpoint)} within ${timeoutMs} ms`));
      }, timeoutMs);
      timer.unref();
      const onError = (err: Error): void => {
        clearTimeout(timer);
        reject(err);
      };
      socket.once('error', onError);
      // An SSL connection is usable once its handshake is done (and the server's certificate checked).
      socket.once(ssl ? 'secureConnect' : 'connect', () => {
        clearTimeout(timer);
        socket.off('error', onError);
        resolve(new JsonRpcClient(socket, options));
      });
    });
  }

  get isClosed(): boolean {
    return this.closedError !== undefined;
  }

  /** Sends a request and resolves with its "result"; rejects with JsonRpcError on an error reply. */
  request(method: string, params: unknown[], timeoutMs = this.options.requestTimeoutMs ?? REQUEST_TIMEOUT_MS_DEFAULT): Promise<unknown> {
    if (this.closedError !== undefined) return Promise.reject(this.closedError);
    if (this.pending.size >= this.pendingRequestsMax) {
      return Promise.reject(new RequestFailedError('too many requests', `more than ${this.pendingRequestsMax} requests in flight`));
    }
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer =
        timeoutMs > 0
          ? setTimeout(() => {
              this.pending.delete(id);
              reject(new RequestFailedError('timeout', `no reply to ${method} (id ${id}) within ${timeoutMs} ms`));
            }, timeoutMs)
          : undefined;
      timer?.unref();
      this.pending.set(id, { method, resolve, reject, timer });
      this.socket.write(JSON.stringify({ method, params, id }));
    });
  }

  /** Closes the connection; pending requests are rejected. Resolves once the socket is closed. */
  async close(): Promise<void> {
    this.socket.end();
    // A peer that never finishes the close handshake must not hold us: destroy after a while.
    const timer = setTimeout(() => this.socket.destroy(), 1_000);
    timer.unref();
    await this.closed;
    clearTimeout(timer);
  }

  /** Drops the connection at once (a protocol violation seen by the caller). */
  abort(reason: Error): void {
    this.fail(reason);
    this.socket.destroy();
  }

  private onData(chunk: Buffer): void {
    this.lastReceiveMs = Date.now();
    let messages: unknown[];
    try {
      messages = this.splitter.feed(chunk);
    } catch (err) {
      this.abort(err as Error);
      return;
    }
    for (const message of messages) {
      if (this.closedError !== undefined) return;
      this.dispatch(message);
    }
  }

  private dispatch(message: unknown): void {
    if (!isRecord(message)) {
      this.abort(new JsonStreamSyntaxError(`JSON-RPC message is not an object: ${JSON.stringify(message).slice(0, 200)}`));
      return;
    }
    const { id, method } = message;
    if (typeof method === 'string') {
      if (method === 'echo' && id !== null && id !== undefined) {
        this.socket.write(JSON.stringify({ id, result: message['params'] ?? [], error: null }));
      } else if (id === null || id === undefined) {
        this.options.onNotification?.(method, message['params']);
      } else {
        // A request we do not serve: answer so the server is not left waiting.
        this.socket.write(JSON.stringify({ id, result: null, error: `unknown method ${method}` }));
      }
      return;
    }
    if (typeof id !== 'number') return;
    const pending = this.pending.get(id);
    if (pending === undefined) return;
    this.pending.delete(id);
    clearTimeout(pending.timer);
    const error = message['error'];
    if (error !== null && error !== undefined) pending.reject(new JsonRpcError(pending.method, error));
    else pending.resolve(message['result']);
  }

  private fail(err: Error): void {
    if (this.closedError !== undefined) return;
    this.closedError = err;
    for (const pending of this.pending.values()) {
      clearTimeout(pending.timer);
      pending.reject(err);
    }
    this.pending.clear();
    this.options.onClose?.(err);
  }
}
