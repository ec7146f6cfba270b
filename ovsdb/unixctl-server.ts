// The server side of Open vSwitch's control protocol ("unixctl"), which ovs-appctl and
// ovn-appctl speak: JSON-RPC 1.0 over a unix stream socket, one request at a time per
// connection. A request is {"method": NAME, "params": [STRING, ...], "id": ID}; the reply is
// {"result": TEXT, "error": null, "id": ID} or {"result": null, "error": TEXT, "id": ID}, its
// text ending in a newline unless empty. The facts come from Open vSwitch 3.1's lib/unixctl.c,
// lib/jsonrpc.c and utilities/ovs-appctl.c: the error texts for an unknown command and for
// argument counts are theirs word for word; a message that is not a valid JSON-RPC request (a
// notification, a reply, an unknown member, params not an array) ends the connection, as
// there; `list-commands` and `version` are built in. Each program registers its own commands
// (`exit` among them). Framing is ovsdb/json-stream.ts's splitter, as for the OVSDB doors.
//
// Bounded: a request's size and depth, the connections at once, the requests a client may send
// ahead of its replies, and a client that reads nothing: like Open vSwitch, the server reads
// no request while a reply is still waiting to go out, and a connection with nothing in
// progress that stays silent for idleMs is closed.
import assert from 'node:assert/strict';
import { chmodSync, closeSync, lstatSync, openSync, unlinkSync } from 'node:fs';
import net from 'node:net';
import { basename, dirname } from 'node:path';
import { capConnections } from '../cluster/connection-cap.js';
import { JsonValueSplitter } from './json-stream.js';

/** What a command answers: its text, or an error text (ovs-appctl prints it and exits 2). */
export type UnixctlResult = { readonly ok: string } | { readonly error: string };

export const unixctlOk = (text = ''): UnixctlResult => ({ ok: text });
export const unixctlError = (text: string): UnixctlResult => ({ error: text });

export interface UnixctlCommand {
  /** What `list-commands` shows after the name (OVS's usage strings: '' for none, "DB", ...). */
  readonly usage: string;
  readonly argsMin: number;
  readonly argsMax: number;
  /**
   * Runs the command with its arguments (the name not included), whose count is within
   * [argsMin, argsMax]. An expected failure is an error result; a throw is a bug.
   */
  readonly run: (args: readonly string[]) => UnixctlResult | Promise<UnixctlResult>;
}

export interface UnixctlLimits {
  /** One request's JSON text; a larger one closes the connection. */
  readonly requestBytesMax: number;
  /** Nesting of one request (an object holding an array of strings is 2). */
  readonly requestDepthMax: number;
  /** Connections open at once; one more is closed as soon as it is accepted. */
  readonly connectionsMax: number;
  /** Requests a client sent ahead of their replies (read from one chunk); more closes the connection. */
  readonly requestsQueuedMax: number;
  /** Silence, with no request being served, after which a connection is closed. */
  readonly idleMs: number;
  /** At most one problem (a malformed request, a refused connection) is reported per interval. */
  readonly problemReportMs: number;
}

export const unixctlDefaults: UnixctlLimits = {
  requestBytesMax: 1024 * 1024,
  requestDepthMax: 32,
  connectionsMax: 64,
  requestsQueuedMax: 256,
  idleMs: 60_000,
  problemReportMs: 1_000,
};

/**
 * The longest path a unix socket can be bound to: sockaddr_un's sun_path is 108 bytes with the
 * terminating NUL. A longer one is bound as Open vSwitch binds it (lib/socket-util-unix.c):
 * through /proc/self/fd/N/NAME, N a descriptor of its folder.
 */
export const UNIX_SOCKET_PATH_BYTES_MAX = 107;

/** How long close() lets a client finish reading before it cuts the connection. */
const CLOSE_GRACE_MS = 1_000;

export interface UnixctlServerOptions {
  readonly path: string;
  /** What `version` answers (ovs_get_program_version's place). */
  readonly version: string;
  readonly commands?: Iterable<readonly [string, UnixctlCommand]>;
  readonly limits?: Partial<UnixctlLimits>;
  /** Hears of malformed requests and refused connections (rate-limited by problemReportMs). */
  readonly onProblem?: (message: string) => void;
}

export class UnixctlListenError extends Error {
  readonly kind = 'listen';
}

/** A valid request, or why the message is not one (lib/jsonrpc.c's rules for a request). */
function parseRequest(v: unknown): { method: string; params: unknown[]; id: unknown } | string {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return 'message is not a JSON object';
  const o = v as Record<string, unknown>;
  for (const k of Object.keys(o)) {
    if (k !== 'method' && k !== 'params' && k !== 'id' && k !== 'result' && k !== 'error') return `message has unexpected member "${k}"`;
  }
  const present = (k: string): boolean => o[k] !== undefined && o[k] !== null;
  if (present('method') && typeof o.method !== 'string') return 'method is not a JSON string';
  if (present('params') && !Array.isArray(o.params)) return '"params" must be JSON array';
  if (present('result') || present('error')) return 'received unexpected reply message';
  if (!present('id')) return 'received unexpected notify message';
  if (!present('method')) return 'request must have "method"';
  if (!present('params')) return 'request must have "params"';
  return { method: o.method as string, params: o.params as unknown[], id: o.id };
}

/** A reply's text as lib/unixctl.c sends it: a newline added to a non-empty text without one. */
function replyText(text: string): string {
  return text !== '' && !text.endsWith('\n') ? `${text}\n` : text;
}

export class UnixctlServer {
  private readonly commands = new Map<string, UnixctlCommand>();
  private readonly limits: UnixctlLimits;
  private readonly connections = new Set<net.Socket>();
  private lastProblemMs = -Infinity;
  private problemsUnreported = 0;
  private closed: Promise<void> | undefined;
  /** The folder's descriptor a long path was bound through, held until the server is closed. */
  private folderFd: number | undefined;

  private constructor(
    private readonly server: net.Server,
    readonly path: string,
    private readonly options: UnixctlServerOptions,
  ) {
    this.limits = { ...unixctlDefaults, ...options.limits };
    this.register('list-commands', { usage: '', argsMin: 0, argsMax: 0, run: () => unixctlOk(this.listCommands()) });
    this.register('version', { usage: '', argsMin: 0, argsMax: 0, run: () => unixctlOk(options.version) });
    for (const [name, c] of options.commands ?? []) this.register(name, c);
  }

  /**
   * Listens on `options.path`, replacing a socket file left there (as Open vSwitch does); a path
   * that exists and is not a socket is refused. The socket file is made rwxr-x--- (Open
   * vSwitch's daemons run with umask 027) and removed by close().
   */
  static async listen(options: UnixctlServerOptions): Promise<UnixctlServer> {
    const path = options.path;
    let stale: boolean;
    try {
      stale = lstatSync(path).isSocket();
      if (!stale) throw new UnixctlListenError(`${path} exists and is not a socket`);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      stale = false;
    }
    if (stale) unlinkSync(path);
    const netServer = net.createServer({ allowHalfOpen: false });
    const server = new UnixctlServer(netServer, path, options);
    capConnections(netServer, server.limits.connectionsMax, () => server.problem(`a connection refused: ${server.limits.connectionsMax} are open`));
    netServer.on('connection', (socket) => server.accept(socket));
    let bindPath = path;
    if (Buffer.byteLength(path) > UNIX_SOCKET_PATH_BYTES_MAX) {
      // libuv unlinks the bound name when the server closes, so the folder's descriptor stays
      // open until then: the name keeps meaning this folder.
      server.folderFd = openSync(dirname(path), 'r');
      bindPath = `/proc/self/fd/${server.folderFd}/${basename(path)}`;
      if (Buffer.byteLength(bindPath) > UNIX_SOCKET_PATH_BYTES_MAX) {
        server.closeFolder();
        throw new UnixctlListenError(`${path}: the socket's name is too long for a unix socket`);
      }
    }
    // Bound with umask 077, so that no other user can connect before the mode is set.
    try {
      await new Promise<void>((resolve, reject) => {
        const failed = (err: Error): void => reject(new UnixctlListenError(`${path}: could not initialize control socket: ${err.message}`));
        netServer.once('error', failed);
        const umask = process.umask(0o077);
        try {
          netServer.listen(bindPath, () => {
            netServer.off('error', failed);
            resolve();
          });
        } finally {
          process.umask(umask);
        }
      });
    } catch (err) {
      server.closeFolder();
      throw err;
    }
    chmodSync(path, 0o750);
    return server;
  }

  private closeFolder(): void {
    if (this.folderFd !== undefined) closeSync(this.folderFd);
    this.folderFd = undefined;
  }

  /** Adds a command; a name may be registered once. */
  register(name: string, command: UnixctlCommand): void {
    assert.ok(!this.commands.has(name), `unixctl: ${name} registered twice`);
    assert.ok(Number.isInteger(command.argsMin) && command.argsMin >= 0 && command.argsMax >= command.argsMin, `unixctl: ${name}'s argument counts`);
    this.commands.set(name, command);
  }

  /** Stops listening, ends every connection and removes the socket file. Idempotent. */
  close(): Promise<void> {
    this.closed ??= new Promise<void>((resolve) => {
      // Ended rather than destroyed, so that a reply being written (exit's) still goes out;
      // a client that does not close its end is cut a moment later.
      for (const s of this.connections) {
        s.end();
        setTimeout(() => s.destroy(), CLOSE_GRACE_MS).unref();
      }
      this.server.close(() => resolve());
    }).then(() => {
      this.closeFolder();
      try {
        unlinkSync(this.path);
      } catch (err) {
        // Node removes a unix socket it listened on when the server closes.
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
    });
    return this.closed;
  }

  private listCommands(): string {
    let out = 'The available commands are:\n';
    for (const name of [...this.commands.keys()].sort()) {
      out += `  ${name.padEnd(23)} ${(this.commands.get(name) as UnixctlCommand).usage}\n`;
    }
    return out;
  }

  private problem(message: string): void {
    const now = Date.now();
    if (now - this.lastProblemMs < this.limits.problemReportMs) {
      this.problemsUnreported++;
      return;
    }
    this.lastProblemMs = now;
    const more = this.problemsUnreported;
    this.problemsUnreported = 0;
    this.options.onProblem?.(more > 0 ? `${message} (and ${more} more since the last report)` : message);
  }

  private accept(socket: net.Socket): void {
    if (this.closed !== undefined) {
      socket.destroy();
      return;
    }
    this.connections.add(socket);
    const splitter = new JsonValueSplitter(this.limits.requestBytesMax, this.limits.requestDepthMax);
    const queue: unknown[] = [];
    let busy = false;
    const drop = (why: string): void => {
      this.problem(`control connection closed: ${why}`);
      socket.destroy();
    };
    const serveNext = (): void => {
      while (!busy && !socket.destroyed && queue.length > 0) {
        const request = parseRequest(queue.shift());
        if (typeof request === 'string') return drop(request);
        busy = true;
        socket.pause();
        void Promise.resolve(this.run(request.method, request.params)).then((result) => {
          if (socket.destroyed) return;
          const reply = 'ok' in result ? { result: replyText(result.ok), error: null, id: request.id } : { result: null, error: replyText(result.error), id: request.id };
          const done = (): void => {
            busy = false;
            socket.resume();
            serveNext();
          };
          // Like Open vSwitch, no next request while this reply is still waiting to go out.
          if (socket.write(JSON.stringify(reply))) done();
          else socket.once('drain', done);
        });
      }
    };
    socket.setTimeout(this.limits.idleMs, () => {
      if (!busy) drop(`silent for ${this.limits.idleMs} ms`);
    });
    socket.on('data', (chunk: Buffer) => {
      let values: unknown[];
      try {
        values = splitter.feed(chunk);
      } catch (err) {
        return drop((err as Error).message);
      }
      queue.push(...values);
      if (queue.length > this.limits.requestsQueuedMax) return drop(`more than ${this.limits.requestsQueuedMax} requests sent ahead of their replies`);
      serveNext();
    });
    socket.on('error', () => socket.destroy());
    socket.on('close', () => this.connections.delete(socket));
  }

  /** One request, checked as lib/unixctl.c's process_command checks it. */
  private run(method: string, params: readonly unknown[]): UnixctlResult | Promise<UnixctlResult> {
    const command = this.commands.get(method);
    if (command === undefined) return unixctlError(`"${method}" is not a valid command (use "list-commands" to see a list of valid commands)`);
    if (params.length < command.argsMin) return unixctlError(`"${method}" command requires at least ${command.argsMin} arguments`);
    if (params.length > command.argsMax) return unixctlError(`"${method}" command takes at most ${command.argsMax} arguments`);
    if (params.some((p) => typeof p !== 'string')) return unixctlError(`"${method}" command has non-string argument`);
    return command.run(params as string[]);
  }
}
