// A small OVSDB JSON-RPC 1.0 client for tests (RFC 7047 section 4): JSON values streamed over a
// unix or TCP socket with no framing, request/response matched by id, server "echo" requests
// answered, everything else that arrives without an id handed to a notification callback.
import { JsonStreamSyntaxError, JsonValueSplitter } from '../../server/json-stream.js';
import net from 'node:net';

/** Default bound on one incoming JSON value; a server that sends more is broken or hostile. */
export const MESSAGE_BYTES_MAX_DEFAULT = 64 * 1024 * 1024;

/** Default bound on requests in flight on one connection. */
export const PENDING_REQUESTS_MAX_DEFAULT = 10_000;

/** Default bound on the wait for one reply, so a hung server fails a test instead of stalling it. */
export const REQUEST_TIMEOUT_MS_DEFAULT = 60_000;

// The stream splitter is the server's own (server/json-stream.ts): one implementation of
// RFC 7047's unframed JSON stream for both ends.
export { JsonStreamSyntaxError, JsonValueSplitter, JsonValueTooLargeError } from '../../server/json-stream.js';

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

export type Endpoint = { readonly path: string } | { readonly host: string; readonly port: number };

export interface JsonRpcClientOptions {
  readonly messageBytesMax?: number;
  readonly pendingRequestsMax?: number;
  /** Milliseconds to wait for a reply before rejecting the request (0: wait forever). */
  readonly requestTimeoutMs?: number;
  /** Called for each incoming message that carries a method and a null id (e.g. "update"). */
  readonly onNotification?: (method: string, params: unknown) => void;
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

  /** Connects; resolves once the socket is connected, rejects on a connect error. */
  static connect(endpoint: Endpoint, options: JsonRpcClientOptions = {}): Promise<JsonRpcClient> {
    return new Promise((resolve, reject) => {
      const socket =
        'path' in endpoint ? net.createConnection({ path: endpoint.path }) : net.createConnection({ host: endpoint.host, port: endpoint.port });
      const onError = (err: Error): void => reject(err);
      socket.once('error', onError);
      socket.once('connect', () => {
        socket.off('error', onError);
        resolve(new JsonRpcClient(socket, options));
      });
    });
  }

  /** Sends a request and resolves with its "result"; rejects with JsonRpcError on an error reply. */
  request(method: string, params: unknown[]): Promise<unknown> {
    if (this.closedError !== undefined) return Promise.reject(this.closedError);
    if (this.pending.size >= this.pendingRequestsMax) {
      return Promise.reject(new Error(`more than ${this.pendingRequestsMax} requests in flight`));
    }
    const id = this.nextId++;
    const timeoutMs = this.options.requestTimeoutMs ?? REQUEST_TIMEOUT_MS_DEFAULT;
    return new Promise((resolve, reject) => {
      const timer =
        timeoutMs > 0
          ? setTimeout(() => {
              this.pending.delete(id);
              reject(new Error(`no reply to ${method} (id ${id}) within ${timeoutMs} ms`));
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
    await this.closed;
  }

  private onData(chunk: Buffer): void {
    let messages: unknown[];
    try {
      messages = this.splitter.feed(chunk);
    } catch (err) {
      this.fail(err as Error);
      this.socket.destroy();
      return;
    }
    for (const message of messages) this.dispatch(message);
  }

  private dispatch(message: unknown): void {
    if (!isRecord(message)) {
      this.fail(new JsonStreamSyntaxError(`JSON-RPC message is not an object: ${JSON.stringify(message)}`));
      this.socket.destroy();
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
    if (this.closedError === undefined) this.closedError = err;
    for (const pending of this.pending.values()) {
      clearTimeout(pending.timer);
      pending.reject(err);
    }
    this.pending.clear();
  }
}
