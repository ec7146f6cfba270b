// Three central nodes in one process: Raft on an in-process network, real LevelDB in the
// test's folder, and a real gRPC server per node on loopback (port 0) with the Northbound,
// Admin and Southbound (agent stream) services; with `tls`, those servers take only mutual TLS,
// and the members' own clients (forwarding, relayed acks, `client`) use that identity.
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { LocalNetwork } from '../../cluster/local-transport.js';
import { serverCredentials, type TlsCredentials } from '../../cluster/tls.js';
import { adminDefinition, adminHandlers } from '../../server/admin-service.js';
import { CentralNode } from '../../server/central-node.js';
import { NorthboundClient, forwarder, northboundDefinition, northboundHandlers, northboundServerOptions } from '../../server/northbound-service.js';
import type { SouthboundServiceOptions } from '../../server/southbound-service.js';
import { SouthboundService, southboundDefinition } from '../../server/southbound-service.js';

export interface CentralMember {
  readonly central: CentralNode;
  readonly server: grpc.Server;
  readonly address: string;
  readonly client: NorthboundClient;
  readonly southbound: SouthboundService;
}

export interface CentralCluster {
  readonly members: readonly CentralMember[];
  /** The in-process Raft network (partition, isolate, heal). */
  readonly network: LocalNetwork;
  /** Stops one member (its server, services and Raft node), as if its process died. */
  stopMember(m: CentralMember): Promise<void>;
  stop(): Promise<void>;
}

export interface CentralClusterOptions {
  readonly size?: number;
  readonly history?: { revisionsMax: number; bytesMax: number };
  readonly southbound?: SouthboundServiceOptions;
  /** Raft timing (see RaftNodeOptions); tickMs defaults to 10 here. */
  readonly tickMs?: number;
  readonly commitLingerMs?: number;
  /** Each member's SB view id (CentralNodeOptions.sbViewId): members standing for other software. */
  readonly sbViewId?: (id: number) => string;
  /** Every member's TLS identity (cluster/tls.ts) for its gRPC server and its clients. */
  readonly tls?: TlsCredentials;
}

export async function startCentralCluster(dir: string, options: CentralClusterOptions = {}): Promise<CentralCluster> {
  const size = options.size ?? 3;
  const net = new LocalNetwork('central-test');
  const ids = Array.from({ length: size }, (_, i) => i + 1);
  const peers = new Map(ids.map((id) => [id, `local:${id}`]));
  const addresses = new Map<number, string>();
  const fwd = forwarder(addresses, options.tls);
  const members: CentralMember[] = [];
  for (const id of ids) {
    const central = await CentralNode.start({ id, clusterId: 'central-test', dataDir: join(dir, `n${id}`), transport: net.transport(id), peers, bootstrap: ids, tickMs: options.tickMs ?? 10, forward: fwd.forward, ...(options.history ? { history: options.history } : {}), ...(options.commitLingerMs !== undefined ? { commitLingerMs: options.commitLingerMs } : {}), ...(options.sbViewId ? { sbViewId: options.sbViewId(id) } : {}) });
    const server = new grpc.Server(northboundServerOptions);
    server.addService(northboundDefinition(), northboundHandlers(central));
    server.addService(adminDefinition(), adminHandlers(central));
    const relayPeers = (): Map<number, string> => new Map([...addresses].filter(([peer]) => peer !== id));
    const southbound = new SouthboundService(central, { relayPeers, ...options.southbound, ...(options.tls !== undefined ? { tls: options.tls } : {}) });
    server.addService(southboundDefinition(), southbound.handlers());
    const port = await new Promise<number>((res, rej) => server.bindAsync('127.0.0.1:0', serverCredentials(options.tls), (e, p) => (e ? rej(e) : res(p))));
    const address = `127.0.0.1:${port}`;
    addresses.set(id, address);
    members.push({ central, server, address, client: new NorthboundClient(address, undefined, options.tls), southbound });
  }
  // Return once a leader is elected, so the first request does not race the election.
  const deadline = Date.now() + 10_000;
  while (!members.some((m) => m.central.node.status().role === 'leader')) {
    if (Date.now() > deadline) throw new Error('no leader elected within 10 s');
    await new Promise((r) => setTimeout(r, 10));
  }
  const stopped = new Set<CentralMember>();
  const stopMember = async (m: CentralMember): Promise<void> => {
    if (stopped.has(m)) return;
    stopped.add(m);
    m.client.close();
    m.server.forceShutdown();
    m.southbound.close();
    await m.central.stop();
  };
  return {
    members,
    network: net,
    stopMember,
    stop: async () => {
      fwd.close();
      for (const m of members) await stopMember(m);
    },
  };
}
