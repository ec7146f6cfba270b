// Client connections cost file descriptors, and a member needs some of its own: a member whose
// LevelDB cannot open a file stops. So every listener that clients reach (the OVSDB doors and
// the gRPC API) holds at most a share of the process's open-files limit, and closes a
// connection past it as soon as it is accepted. This file sizes the shares and puts the gRPC
// server behind a listener of our own (grpc-js's connection injector), where connections can
// be counted; the doors count theirs themselves (server/ovsdb-door.ts).
import { readFileSync } from 'node:fs';
import net from 'node:net';
import grpc from '@grpc/grpc-js';

/** File descriptors a member keeps for itself: LevelDB, Raft peers, metrics, its own clients. */
const FDS_RESERVED = 512;
/** Listeners clients reach on one member: the NB and SB OVSDB doors and the gRPC API. */
const LISTENERS_PER_MEMBER = 3;
/** When the process's limit is unknown (not Linux). */
const CONNECTIONS_MAX_FALLBACK = 8192;
/** However small the limit, a listener takes at least this many. */
const CONNECTIONS_MAX_MIN = 64;

/**
 * The default most connections of one listener in a process allowed `openFiles` descriptors:
 * all listeners together leave FDS_RESERVED for the rest of the member.
 */
export function connectionsMaxFor(openFiles: number | undefined): number {
  if (openFiles === undefined) return CONNECTIONS_MAX_FALLBACK;
  return Math.max(CONNECTIONS_MAX_MIN, Math.floor((openFiles - FDS_RESERVED) / LISTENERS_PER_MEMBER));
}

/** The process's soft limit on open files ("Max open files" in /proc/self/limits), if known. */
export function openFilesLimit(): number | undefined {
  try {
    const line = readFileSync('/proc/self/limits', 'utf8').split('\n').find((l) => l.startsWith('Max open files'));
    const soft = line?.slice('Max open files'.length).trim().split(/\s+/)[0];
    return soft === undefined || !/^\d+$/.test(soft) ? undefined : Number(soft);
  } catch {
    return undefined;
  }
}

/** This process's default share: connectionsMaxFor(openFilesLimit()). */
export const defaultConnectionsMax = connectionsMaxFor(openFilesLimit());

export interface GrpcListener {
  readonly port: number;
  /** Connections open now. */
  connections(): number;
  close(): void;
}

/**
 * Serves `server` on `address` ("host:port", port 0 for any) through a listener of our own that
 * holds at most `connectionsMax` connections; one past it is closed at once and reported to
 * `onRefused`. Connections get TCP_NODELAY, as the OVSDB doors' do: a reply is one small write.
 */
export async function listenGrpc(server: grpc.Server, address: string, connectionsMax: number, onRefused: () => void): Promise<GrpcListener> {
  const m = /^\[?([^\]]*)\]?:(\d+)$/.exec(address);
  if (m === null) throw new Error(`expected host:port, got "${address}"`);
  const injector = server.createConnectionInjector(grpc.ServerCredentials.createInsecure());
  let open = 0;
  const listener = net.createServer({ noDelay: true }, (socket) => {
    if (open >= connectionsMax) {
      onRefused();
      socket.destroy();
      return;
    }
    open++;
    socket.once('close', () => open--);
    injector.injectConnection(socket);
  });
  await new Promise<void>((resolve, reject) => {
    listener.once('error', reject);
    listener.listen(Number(m[2]), m[1], () => {
      listener.off('error', reject);
      resolve();
    });
  });
  const bound = listener.address();
  return {
    port: typeof bound === 'object' && bound !== null ? bound.port : Number(m[2]),
    connections: () => open,
    close: () => {
      listener.close();
      injector.destroy();
    },
  };
}
