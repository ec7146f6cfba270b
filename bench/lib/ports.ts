// A free range of loopback ports for a cluster a benchmark starts. `ovnts up --base-port B`
// binds B+1..3 (Northbound gRPC), B+11..13 (Raft), B+21..23 (NB OVSDB), B+31..33 (metrics) and
// B+41..43 (SB OVSDB); the anchors' real clusters use offsets within these. Ranges are picked
// below the kernel's ephemeral ports: a port there can be taken at any moment by an outgoing
// connection (a member's own Raft or forwarding client), and a member that loses that race
// cannot bind and exits.
import { readFileSync } from 'node:fs';
import net from 'node:net';

/** Offsets from the base port that `ovnts up` binds. */
const UP_OFFSETS = [1, 2, 3, 11, 12, 13, 21, 22, 23, 31, 32, 33, 41, 42, 43] as const;
const RANGE_LOW = 20_000;
/** Linux's default first ephemeral port, when /proc does not say. */
const EPHEMERAL_DEFAULT = 32_768;
const ATTEMPTS = 50;

function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > RANGE_LOW + 1000 ? low : EPHEMERAL_DEFAULT;
  } catch {
    return EPHEMERAL_DEFAULT;
  }
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

/** A base port B, below the ephemeral range, with every port `ovnts up` binds free now. */
export async function freeBasePort(): Promise<number> {
  const span = ephemeralLow() - RANGE_LOW - 100;
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const base = RANGE_LOW + Math.floor(Math.random() * span);
    if ((await Promise.all(UP_OFFSETS.map((d) => portFree(base + d)))).every(Boolean)) return base;
  }
  throw new Error(`no free base port found in ${ATTEMPTS} attempts`);
}
