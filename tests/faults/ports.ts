// Free loopback ports for the fault suite: below 32768, where the kernel never picks an
// ephemeral port (so a dialer can never connect to itself on a port a dead member left), and
// apart from the ranges freeBasePort() hands to `ovnts up` clusters (27000 and up).
import { createServer } from 'node:net';

const firstPort = 20_000;
const lastPort = 26_999;
/** Ports handed out by this process so far: never given twice. */
const given = new Set<number>();

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

/** `n` ports free now, not given before by this process. */
export async function freePortBlock(n: number): Promise<number[]> {
  const span = lastPort - firstPort + 1;
  let port = firstPort + ((process.pid * 97) % span);
  const out: number[] = [];
  for (let tried = 0; tried < span && out.length < n; tried++) {
    if (!given.has(port) && (await portFree(port))) {
      out.push(port);
      given.add(port);
    }
    port = port === lastPort ? firstPort : port + 1;
  }
  if (out.length < n) throw new Error(`only ${out.length} of ${n} free ports in ${firstPort}..${lastPort}`);
  return out;
}
