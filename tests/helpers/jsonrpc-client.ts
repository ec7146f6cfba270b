// A small OVSDB JSON-RPC 1.0 client for tests (RFC 7047 section 4): JSON values streamed over a
// unix or TCP socket with no framing, request/response matched by id, server "echo" requests
// answered, everything else that arrives without an id handed to a notification callback.
import net from 'node:net';

/** Default bound on one incoming JSON value; a server that sends more is broken or hostile. */
export const MESSAGE_BYTES_MAX_DEFAULT = 64 * 1024 * 1024;

/** Default bound on requests in flight on one connection. */
export const PENDING_REQUESTS_MAX_DEFAULT = 10_000;

/** Default bound on the wait for one reply, so a hung server fails a test instead of stalling it. */
export const REQUEST_TIMEOUT_MS_DEFAULT = 60_000;

export class JsonValueTooLargeError extends Error {
  readonly kind = 'message too large';
  constructor(readonly bytesMax: number) {
    super(`incoming JSON value exceeds ${bytesMax} bytes`);
  }
}

export class JsonStreamSyntaxError extends Error {
  readonly kind = 'syntax error';
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

function isJsonWhitespace(byte: number): boolean {
  return byte === 0x20 || byte === 0x09 || byte === 0x0a || byte === 0x0d;
}

/**
 * Splits a byte stream into top-level JSON objects and arrays, the only top-level values
 * JSON-RPC sends. It tracks nesting depth and string state (including backslash escapes), so
 * braces or quotes inside strings never end a value. It scans bytes, not characters: UTF-8
 * continuation bytes never collide with the ASCII delimiters, so a multibyte character split
 * across two chunks is reassembled correctly before decoding.
 *
 * The splitter does not validate the JSON; each complete value is handed to JSON.parse, and a
 * parse failure surfaces as an error from feed().
 */
export class JsonValueSplitter {
  private readonly parts: Buffer[] = [];
  private partsBytes = 0;
  private depth = 0;
  private inString = false;
  private escaped = false;

  constructor(private readonly bytesMax: number = MESSAGE_BYTES_MAX_DEFAULT) {}

  /** Feeds one chunk; returns every value completed by it, in order. */
  feed(chunk: Buffer): unknown[] {
    const values: unknown[] = [];
    let start = 0;
    for (let i = 0; i < chunk.length; i++) {
      const byte = chunk[i] as number;
      if (this.depth === 0) {
        if (isJsonWhitespace(byte)) {
          start = i + 1;
          continue;
        }
        if (byte !== OPEN_BRACE && byte !== OPEN_BRACKET) {
          throw new JsonStreamSyntaxError(
            `unexpected byte 0x${byte.toString(16)} between JSON values (only objects and arrays may appear at top level)`,
          );
        }
        start = i;
        this.depth = 1;
        continue;
      }
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (byte === BACKSLASH) this.escaped = true;
        else if (byte === QUOTE) this.inString = false;
        continue;
      }
      if (byte === QUOTE) this.inString = true;
      else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) this.depth++;
      else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) {
        this.depth--;
        if (this.depth === 0) {
          this.append(chunk.subarray(start, i + 1));
          values.push(this.takeValue());
          start = i + 1;
        }
      }
    }
    if (this.depth > 0) this.append(chunk.subarray(start));
    return values;
  }

  /** True when a value has started but not finished (bytes are buffered). */
  get isMidValue(): boolean {
    return this.depth > 0;
  }

  private append(part: Buffer): void {
    if (part.length === 0) return;
    this.partsBytes += part.length;
    if (this.partsBytes > this.bytesMax) throw new JsonValueTooLargeError(this.bytesMax);
    this.parts.push(Buffer.from(part));
  }

  private takeValue(): unknown {
    const text = Buffer.concat(this.parts, this.partsBytes).toString('utf8');
    this.parts.length = 0;
    this.partsBytes = 0;
    try {
      return JSON.parse(text) as unknown;
    } catch (err) {
      throw new JsonStreamSyntaxError(`invalid JSON value: ${(err as Error).message}`);
    }
  }
}

/** A JSON-RPC reply whose "error" member is not null. */
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
