// Client connections cost file descriptors, and a member needs some of its own: a member whose
// LevelDB cannot open a file stops. So every listener that clients reach (the OVSDB doors and
// the gRPC API) holds at most a share of the process's open-files limit, and closes a
// connection past it as soon as it is accepted. This file sizes the shares; every listener
// applies its cap through capConnections (cluster/connection-cap.ts): the doors, the gRPC API
// (through listenGrpc), the metrics listener (a small fixed number, server/metrics.ts), the
// Raft port (a small fixed number, grpc-transport.ts) and the control socket (a small fixed
// number, ovsdb/unixctl-server.ts).
import { readFileSync } from 'node:fs';

/**
 * File descriptors a member keeps for itself: LevelDB, the Raft port (64), metrics (32), the
 * control socket (64, ovsdb/unixctl-server.ts), its own clients.
 */
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
function openFilesLimit(): number | undefined {
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

