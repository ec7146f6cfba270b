// The one way a listener of a member bounds its connections (server/listen-budget.ts sizes
// them): Node's own maxConnections, past which it closes a connection as soon as it accepts it
// and says so with 'drop'.
import type { Server } from 'node:net';

/** Caps `server` at `connectionsMax` connections; `onRefused` hears of each one turned away. */
export function capConnections(server: Server, connectionsMax: number, onRefused: () => void): void {
  // Node reads a maxConnections of 0 as no limit at all.
  if (!Number.isInteger(connectionsMax) || connectionsMax < 1) throw new RangeError(`connectionsMax must be a positive integer, got ${connectionsMax}`);
  server.maxConnections = connectionsMax;
  server.on('drop', onRefused);
}
