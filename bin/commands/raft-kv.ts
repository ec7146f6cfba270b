// `ovnts raft-kv`: one member of a Raft group serving a key-value store, as a real process —
// gRPC peer transport, LevelDB storage, the RaftKv client door. The multi-process tests and
// bench/raft start three of these on loopback. Prints one JSON line {"ready":...} on stdout
// once it listens; SIGTERM stops it cleanly; SIGKILL is what the crash tests use.
import * as grpc from '@grpc/grpc-js';
import type { Command } from 'commander';
import { GrpcTransport } from '../../cluster/grpc-transport.js';
import { KvStateMachine } from '../../cluster/kv-state-machine.js';
import { kvServiceDefinition, kvServiceHandlers } from '../../cluster/kv-service.js';
import { RaftNode } from '../../cluster/node.js';
import type { NodeId } from '../../cluster/types.js';
import { snapshotLogRatio } from '../lib/numbers.js';

function parsePeers(s: string): Map<NodeId, string> {
  const peers = new Map<NodeId, string>();
  for (const part of s.split(',').filter((p) => p.length > 0)) {
    const m = /^(\d+)=(.+)$/.exec(part);
    if (m === null) throw new Error(`--peers: expected id=host:port, got "${part}"`);
    peers.set(Number(m[1]), m[2] as string);
  }
  return peers;
}

function parseIds(s: string): NodeId[] {
  return s.split(',').filter((p) => p.length > 0).map((p) => {
    const n = Number(p);
    if (!Number.isInteger(n) || n <= 0) throw new Error(`expected positive node ids, got "${p}"`);
    return n;
  });
}

function bindServer(server: grpc.Server, address: string): Promise<number> {
  return new Promise((resolve, reject) =>
    server.bindAsync(address, grpc.ServerCredentials.createInsecure(), (err, port) => (err ? reject(err) : resolve(port))),
  );
}

interface RaftKvOptions {
  id: string;
  clusterId: string;
  data: string;
  raft: string;
  client: string;
  peers: string;
  bootstrap?: string;
  tickMs: string;
  electionTicks: string;
  snapshotEntries: string;
  snapshotLogRatio?: string;
}

export function registerRaftKvCommand(program: Command): void {
  program
    .command('raft-kv')
    .description('run one member of a Raft-replicated key-value store (for tests and bench/raft)')
    .requiredOption('--id <n>', 'this node id (positive integer)')
    .option('--cluster-id <s>', 'cluster id every message carries', 'raft-kv')
    .requiredOption('--data <dir>', 'LevelDB folder for the Raft log and snapshots')
    .requiredOption('--raft <host:port>', 'address for Raft peer traffic')
    .requiredOption('--client <host:port>', 'address of the RaftKv client service')
    .requiredOption('--peers <list>', 'every member as id=host:port (Raft addresses), comma-separated')
    .option('--bootstrap <ids>', 'founding voters, comma-separated (used only on an empty data folder)')
    .option('--tick-ms <n>', 'tick length in ms (the heartbeat interval)', '100')
    .option('--election-ticks <n>', 'election timeout in ticks', '10')
    .option('--snapshot-entries <n>', 'snapshot and compact after at least this many applied entries...', '10000')
    .option('--snapshot-log-ratio <r>', '...once their data is also R times the last snapshot\'s size (default 1; 0: every N entries)')
    .action(async (o: RaftKvOptions) => {
      const id = Number(o.id);
      const peers = parsePeers(o.peers);
      const transport = new GrpcTransport({ id, clusterId: o.clusterId, listenAddress: o.raft, peers });
      const kv = new KvStateMachine();
      const node = await RaftNode.start({
        id,
        clusterId: o.clusterId,
        dataDir: o.data,
        transport,
        stateMachine: kv,
        peers,
        ...(o.bootstrap !== undefined ? { bootstrap: parseIds(o.bootstrap) } : {}),
        tickMs: Number(o.tickMs),
        electionTicks: Number(o.electionTicks),
        snapshotEntries: Number(o.snapshotEntries),
        ...(o.snapshotLogRatio !== undefined ? { snapshotLogRatio: snapshotLogRatio('--snapshot-log-ratio', o.snapshotLogRatio) } : {}),
        onFatalError: (err) => {
          process.stderr.write(`raft-kv ${id}: stopping on storage error: ${err.message}\n`);
          process.exit(3);
        },
      });
      const server = new grpc.Server();
      server.addService(kvServiceDefinition(), kvServiceHandlers(node, kv));
      const port = await bindServer(server, o.client);
      process.stdout.write(JSON.stringify({ ready: { id, raft: transport.address(), clientPort: port, pid: process.pid } }) + '\n');
      await new Promise<void>((resolve) => {
        process.once('SIGTERM', resolve);
        process.once('SIGINT', resolve);
      });
      server.forceShutdown();
      await node.stop();
    });
}
