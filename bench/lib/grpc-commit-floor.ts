// The floor under a serial replicated commit with ovnts's transports, measured the way
// commit-floor.ts measures the bare one: still no Raft, no database and no encoding, but the
// hops a write takes are the ones it takes through ovnts. A client (this process) sends each
// 100-byte command to a "leader" process and waits for its answer; the leader appends the
// command to a file and fdatasyncs it while it sends it to two "follower" processes over gRPC
// bidirectional streams (as the Raft transport carries appends), which each append, fdatasync
// and answer; the leader answers the client once its own write and one follower's answer are
// done (or, in the second run, once one follower's answer is, without waiting on its own write:
// less than Raft needs, so a floor however the leader overlaps its write). The client's hop is
// a gRPC bidirectional stream too (as NorthboundClient's transactions go) or, for the OVSDB
// door, raw loopback TCP (JSON-RPC's framing costs more, so TCP is still a floor for it).
// Messages are raw bytes (no protobuf): what this adds to the bare commit is grpc-js and HTTP/2
// themselves, and the client's extra hop.
import * as grpc from '@grpc/grpc-js';
import { fork } from 'node:child_process';
import { closeSync, fdatasyncSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { appendAndSync, commandBytes, type CommitFloor, type FloorPair } from './commit-floor.js';
import { median, percentile } from './report.js';

export type ClientHop = 'grpc' | 'tcp';

const self = fileURLToPath(import.meta.url);
/** A command starting with this byte is answered only once the leader's own write is done too. */
const leaderWaitsByte = 1;
const raw = (b: Buffer): Buffer => b;
const streamMethod = (name: string): grpc.MethodDefinition<Buffer, Buffer> => ({
  path: `/floor.Floor/${name}`,
  requestStream: true,
  responseStream: true,
  requestSerialize: raw,
  requestDeserialize: raw,
  responseSerialize: raw,
  responseDeserialize: raw,
});
const service: grpc.ServiceDefinition = { Stream: streamMethod('Stream') };
const FloorClient = grpc.makeGenericClientConstructor(service, 'Floor');

/** A gRPC server of one bidirectional method on a free loopback port; resolves with the port. */
function serve(onStream: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => void): Promise<number> {
  const server = new grpc.Server();
  server.addService(service, { Stream: onStream });
  return new Promise((resolve, reject) => server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, port) => (err ? reject(err) : resolve(port))));
}

function openStream(port: number): grpc.ClientDuplexStream<Buffer, Buffer> {
  const client = new FloorClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as unknown as { Stream: () => grpc.ClientDuplexStream<Buffer, Buffer> };
  const call = client.Stream();
  call.on('error', () => undefined); // The stream ends when the run does.
  return call;
}

/** A follower: appends and fdatasyncs each command it receives, then answers it. */
async function follower(dir: string): Promise<void> {
  const fd = openSync(join(dir, `follower-${process.pid}`), 'w');
  const port = await serve((call) => {
    call.on('data', (d: Buffer) => {
      writeSync(fd, d);
      fdatasyncSync(fd);
      call.write(Buffer.alloc(1, 107));
    });
    call.on('end', () => call.end());
  });
  process.send?.(port);
  process.on('disconnect', () => process.exit(0));
}

/**
 * The leader: each command from the client goes to both followers and to its own file; it is
 * answered once one follower's answer is in and, when the command's first byte is
 * `leaderWaitsByte`, the leader's own write is done too. Commands are answered in order (the
 * client sends one at a time).
 */
async function leader(dir: string, hop: ClientHop, followerPorts: number[]): Promise<void> {
  const fd = openSync(join(dir, 'leader'), 'w');
  const peers = followerPorts.map(openStream);
  const answered = peers.map(() => 0);
  let sent = 0;
  let writes: Promise<void> = Promise.resolve();
  let waiting: { i: number; ownDone: boolean; leaderWaits: boolean; answer: () => void } | undefined;
  const settle = (): void => {
    const w = waiting;
    if (w === undefined || (w.leaderWaits && !w.ownDone) || !answered.some((a) => a >= w.i)) return;
    waiting = undefined;
    w.answer();
  };
  peers.forEach((p, k) => p.on('data', () => {
    answered[k] = (answered[k] as number) + 1;
    settle();
  }));
  const onCommand = (command: Buffer, answer: () => void): void => {
    const i = ++sent;
    for (const p of peers) p.write(command);
    const w = { i, ownDone: false, leaderWaits: command[0] === leaderWaitsByte, answer };
    waiting = w;
    writes = writes.then(() => appendAndSync(fd, command)).then(() => {
      w.ownDone = true;
      settle();
    });
  };
  let port: number;
  if (hop === 'grpc') {
    port = await serve((call) => {
      call.on('data', (d: Buffer) => onCommand(d, () => call.write(Buffer.alloc(1, 107))));
      call.on('end', () => call.end());
    });
  } else {
    const server = net.createServer((s) => {
      s.setNoDelay(true);
      let pending = Buffer.alloc(0);
      s.on('data', (d: Buffer) => {
        pending = Buffer.concat([pending, d]);
        while (pending.length >= commandBytes) {
          onCommand(pending.subarray(0, commandBytes), () => s.write(Buffer.alloc(1, 107)));
          pending = pending.subarray(commandBytes);
        }
      });
    });
    port = await new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as net.AddressInfo).port)));
  }
  process.send?.(port);
  process.on('disconnect', () => {
    closeSync(fd);
    process.exit(0);
  });
}

/** A client connection to the leader: `send` resolves with the answer to one command (one at a time). */
interface FloorClientConnection {
  send(command: Buffer): Promise<void>;
  close(): void;
}

function serialConnection(write: (b: Buffer) => void, onData: (f: () => void) => void, close: () => void): FloorClientConnection {
  let onAnswer: (() => void) | undefined;
  onData(() => onAnswer?.());
  return {
    send: (command) => new Promise<void>((resolve) => {
      onAnswer = resolve;
      write(command);
    }),
    close,
  };
}

async function connectClient(hop: ClientHop, port: number): Promise<FloorClientConnection> {
  if (hop === 'grpc') {
    const call = openStream(port);
    return serialConnection((b) => call.write(b), (f) => call.on('data', f), () => call.end());
  }
  const s = await new Promise<net.Socket>((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1', () => resolve(sock));
    sock.setNoDelay(true);
    sock.once('error', reject);
  });
  return serialConnection((b) => s.write(b), (f) => s.on('data', f), () => s.destroy());
}

/**
 * Runs `n` serial commits (after as many for warm-up) with the leader waiting on its own write,
 * then `n` without; every process is stopped before it returns.
 */
export async function measureTransportCommitFloor(n: number, hop: ClientHop): Promise<FloorPair> {
  const dir = mkdtempSync(join(tmpdir(), 'grpc-commit-floor-'));
  const portOf = (k: ReturnType<typeof fork>): Promise<number> => new Promise((resolve) => k.once('message', (p) => resolve(p as number)));
  const kids = [fork(self, ['grpc-follower', dir]), fork(self, ['grpc-follower', dir])];
  try {
    const followerPorts = await Promise.all(kids.map(portOf));
    const lead = fork(self, ['grpc-leader', dir, hop, ...followerPorts.map(String)]);
    kids.push(lead);
    const client = await connectClient(hop, await portOf(lead));
    const run = async (leaderWaits: boolean): Promise<CommitFloor> => {
      const command = Buffer.alloc(commandBytes, leaderWaits ? leaderWaitsByte : 0);
      const lat: number[] = [];
      const t0 = performance.now();
      for (let i = 0; i < n; i++) {
        const started = performance.now();
        await client.send(command);
        lat.push(performance.now() - started);
      }
      return { perS: n / ((performance.now() - t0) / 1000), p50Ms: median(lat), p99Ms: percentile(lat, 99) };
    };
    await run(true); // warm-up
    const leaderWaits = await run(true);
    const followersOnly = await run(false);
    client.close();
    return { leaderWaits, followersOnly };
  } finally {
    for (const k of kids) k.disconnect();
    await Promise.all(kids.map((k) => (k.exitCode !== null ? undefined : new Promise((resolve) => k.once('exit', resolve)))));
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] === self && process.argv[2] === 'grpc-follower') void follower(process.argv[3] as string);
if (process.argv[1] === self && process.argv[2] === 'grpc-leader') void leader(process.argv[3] as string, process.argv[4] as ClientHop, process.argv.slice(5).map(Number));
