// `ovnts central`: run one central node — a Raft member holding the replicated NB database and
// serving the Northbound gRPC API. Members are named (n1, n2, ...); a member's Raft node id is
// its position in --peers (1-based), so every member must be given the same --peers list.
// Its control socket (<data-dir>/ovnts.ctl, or --unixctl) answers ovs-appctl/ovn-appctl with
// what OVN's ovsdb-servers and ovn-northd answer (server/unixctl-commands.ts). With
// -p/-c/-C (ovsdb-server's --private-key, --certificate, --ca-cert) every gRPC listener of the
// member takes only TLS connections that show a certificate chaining to the CA, and the member
// reaches its peers with that identity (docs/tls.md).
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import v8 from 'node:v8';
import * as grpc from '@grpc/grpc-js';
import type { Command } from 'commander';
import { GrpcTransport } from '../../cluster/grpc-transport.js';
import { TlsCredentials, tlsFilesFrom, type TlsReloadEvent } from '../../cluster/tls.js';
import { ApplyRefusedError } from '../../cluster/state-machine.js';
import type { NodeId } from '../../cluster/types.js';
import { APPLY_VERSION_MAX } from '../../server/apply-version.js';
import { CentralNode } from '../../server/central-node.js';
import { forwarder, northboundDefinition, northboundHandlers, northboundServerOptions } from '../../server/northbound-service.js';
import { passiveTarget, startOvsdbDoor } from '../../server/ovsdb-door.js';
import { tlsVersionRange } from '../../server/ovsdb-ssl.js';
import { adminDefinition, adminHandlers } from '../../server/admin-service.js';
import { startSbHousekeeping } from '../../server/sb-housekeeping.js';
import { SouthboundService, southboundDefinition } from '../../server/southbound-service.js';
import { CentralMetrics, startMetricsServer } from '../../server/metrics.js';
import { listenGrpc } from '../../cluster/grpc-listen.js';
import { defaultConnectionsMax } from '../../server/listen-budget.js';
import { clusterIdFile, defaultClusterId } from '../lib/cluster-id.js';
import { flagsNotGiven, nodeOptionsFlags } from '../lib/node-flags.js';
import { positiveInteger, snapshotLogRatio } from '../lib/numbers.js';
import { centralUnixctlCommands } from '../../server/unixctl-commands.js';
import { openControl } from '../lib/control-socket.js';
import { tlsFlagNames, tlsOption, type TlsFlagValues } from '../lib/tls-flags.js';
import { ovntsVersion } from '../lib/version.js';

export function parseNamedList(flag: string, s: string): { name: string; address: string }[] {
  return s.split(',').filter((p) => p.length > 0).map((part) => {
    const m = /^([A-Za-z0-9_.-]+(?:@\d+)?)=(.+)$/.exec(part);
    if (m === null) throw new Error(`${flag}: expected name=host:port, got "${part}"`);
    return { name: m[1] as string, address: m[2] as string };
  });
}

interface CentralOptions extends TlsFlagValues {
  name: string;
  dataDir: string;
  peers: string;
  nbPeers: string;
  grpc?: string;
  ovsdb?: string;
  ovsdbSb?: string;
  ovsdbRemotesFromDb?: boolean;
  sslProtocols?: string;
  sslCiphers?: string;
  metrics?: string;
  join?: boolean;
  clusterId?: string;
  tickMs: string;
  electionTicks: string;
  snapshotEntries?: string;
  snapshotLogBytes?: string;
  snapshotLogRatio?: string;
  snapshotHandoffMs?: string;
  applyVersionMax?: string;
  optimizeForSize?: boolean;
  unixctl?: string;
  agentRole?: string;
}

/**
 * V8 settings a member runs with when told `--optimize-for-size`: V8's own trade of speed for
 * memory (a heap kept closer to what is live, a memory reducer that acts sooner). Measured on a
 * 3-member cluster holding the 10,000-port topology: RSS 191-224 MiB with, 233-266 without; but
 * loading it took 27-35 s against 22-26 s, and on a loaded machine a follower's apply fell over
 * 5 s behind (a write's outcome reported unknown), so it is not the default. Set at start,
 * before the state is loaded.
 */
export const memberV8Flags: readonly string[] = ['--optimize-for-size'];

/**
 * V8 settings every member runs with, set at start unless node was given the flag either way (on
 * its command line or in NODE_OPTIONS; `ovnts up` gives them on the command line, in
 * memberNodeFlags). Allocation-site pretenuring off: with it, once a large NB had loaded, V8
 * made the projection's rows old while the member lists they hold stayed young, and every
 * scavenge copied lists that were already dead (docs/central.md, Memory). Set this way, it
 * takes effect: in one process, 32 switches added per entry to 30,000 switches, scavenges
 * promoted 0.13 MiB each instead of 1.39 and paused 2.2 ms instead of 13.2.
 */
export const memberStartV8Flags: readonly string[] = ['--no-allocation-site-pretenuring'];

export function registerCentralCommand(program: Command): void {
  program
    .command('central')
    .description('run one central node (Raft member + Northbound gRPC API)')
    .requiredOption('--name <name>', 'this member\'s name, as it appears in --peers')
    .requiredOption('--data-dir <dir>', 'folder for this member\'s Raft log and snapshots')
    .requiredOption('--peers <list>', 'every member\'s Raft address: n1=host:port,n2=host:port,... (same list, same order, on every member; a member\'s id is its position, or N in nX@N=host:port)')
    .requiredOption('--nb-peers <list>', 'every member\'s Northbound gRPC address: n1=host:port,...')
    .option('--grpc <host:port>', 'this member\'s Northbound address (default: its entry in --nb-peers)')
    .option('--ovsdb <target>', 'also serve OVN_Northbound over the OVSDB protocol: ptcp:PORT[:IP], pssl:PORT[:IP] (SSL with -p/-c/-C) or punix:PATH (as ovsdb-server --remote)')
    .option('--ovsdb-sb <target>', 'serve OVN_Southbound (the SB view, and what chassis write) over the OVSDB protocol: ptcp:PORT[:IP], pssl:PORT[:IP] or punix:PATH')
    .option('--ovsdb-remotes-from-db', 'also listen where the Connection rows say (ovn-nbctl/ovn-sbctl set-connection), opening and closing listeners as they change, as ovsdb-server --remote=db:OVN_Northbound,NB_Global,connections does; both databases')
    .option('--join', 'join a running cluster (after `ovnts cluster add-member`) instead of founding one on an empty data folder')
    .option('--metrics <host:port>', 'serve /healthz, /readyz and /metrics (Prometheus) over HTTP here')
    .option('--cluster-id <id>', `cluster id every Raft message carries (default: the one in DATA_DIR/${clusterIdFile}, else "${defaultClusterId}")`)
    .option('--tick-ms <n>', 'Raft tick (heartbeat) in ms', '100')
    .option('--election-ticks <n>', 'election timeout in ticks', '10')
    .option('--snapshot-entries <n>', 'take a snapshot and compact the log after at least N applied entries (default 10000)...')
    .option('--snapshot-log-ratio <r>', '...once their data is also R times the last snapshot\'s size (default 1; 0: every N entries)')
    .option('--snapshot-log-bytes <n>', 'and regardless once the entries applied since the last snapshot hold N bytes (default 67108864)')
    .option('--optimize-for-size', `run V8 with ${memberV8Flags.join(' ')}: less memory, slower applies and loads`)
    .option('--apply-version-max <n>', `the highest apply version this member offers its cluster (default: the most this software implements, ${APPLY_VERSION_MAX}); a lower one holds the whole cluster at that version until this member is restarted without it (docs/central.md, Upgrades)`)
    .option('--snapshot-handoff-ms <n>', 'a leader whose last snapshot encode held the event loop this long hands leadership to a voter before the next (default: a quarter of the election timeout)')
    // This member's TLS identity: every gRPC listener requires it, its peers are reached with it.
    .addOption(tlsOption.privateKey('this member\'s', ': its Raft, Northbound, admin and agent-stream gRPC ports take only TLS clients whose certificate chains to -C\'s CA, and it reaches its peers with this identity'))
    .addOption(tlsOption.certificate('this member\'s'))
    .addOption(tlsOption.caCert())
    .option('--ssl-protocols <list>', 'the TLS versions the OVSDB doors\' pssl: listeners allow: TLSv1, TLSv1.1, TLSv1.2, TLSv1.3, comma-separated (as ovsdb-server --ssl-protocols; default: TLS 1.2 and 1.3)')
    .option('--ssl-ciphers <list>', 'the OpenSSL cipher list of the OVSDB doors\' pssl: listeners (as ovsdb-server --ssl-ciphers)')
    .option('--agent-role <role>', 'hold the agents\' chassis writes to this RBAC role (OVN\'s "ovn-controller"), with the common name of each agent\'s certificate as its id, and take an agent stream only for the chassis its certificate names; needs -p/-c/-C (docs/tls.md)')
    .option('--unixctl <paths>', 'the control socket ovs-appctl/ovn-appctl talk to: cluster/status DB, status, inc-engine/show-stats, ... (default: DATA_DIR/ovnts.ctl; several, comma-separated, answer alike, e.g. ovn-ctl\'s /var/run/ovn/ovnnb_db.ctl,/var/run/ovn/ovnsb_db.ctl; "none": no socket)')
    .action(async (o: CentralOptions) => {
      for (const flag of flagsNotGiven(memberStartV8Flags, [...nodeOptionsFlags(), ...process.execArgv])) v8.setFlagsFromString(flag);
      if (o.optimizeForSize === true) for (const flag of memberV8Flags) v8.setFlagsFromString(flag);
      // name@id gives a member's id outright (members added later); otherwise it is the position.
      const peers = parseNamedList('--peers', o.peers).map((p, i) => {
        const m = /^(.+)@(\d+)$/.exec(p.name);
        return m === null ? { name: p.name, id: i + 1, address: p.address } : { name: m[1] as string, id: Number(m[2]), address: p.address };
      });
      const nbPeers = parseNamedList('--nb-peers', o.nbPeers);
      const ids = new Map<string, NodeId>(peers.map((p) => [p.name, p.id]));
      if (new Set(ids.values()).size !== peers.length) throw new Error('--peers gives two members the same id');
      const id = ids.get(o.name);
      if (id === undefined) throw new Error(`--name ${o.name} is not in --peers`);
      const raftPeers = new Map<NodeId, string>(peers.map((p) => [p.id, p.address]));
      const nbAddresses = new Map<NodeId, string>();
      for (const p of nbPeers) {
        const pid = ids.get(p.name.replace(/@\d+$/, ''));
        if (pid === undefined) throw new Error(`--nb-peers names ${p.name}, which is not in --peers`);
        nbAddresses.set(pid, p.address);
      }
      // The cluster id is the member's for life: kept beside its data (snapshot restore writes
      // it for a new cluster), so that a restart cannot join it to another cluster by mistake.
      const idPath = join(o.dataDir, clusterIdFile);
      const stored = existsSync(idPath) ? readFileSync(idPath, 'utf8').trim() : undefined;
      if (o.clusterId !== undefined && stored !== undefined && o.clusterId !== stored) {
        throw new Error(`--cluster-id ${o.clusterId}, but ${o.dataDir} belongs to cluster ${stored}`);
      }
      const clusterId = o.clusterId ?? stored ?? defaultClusterId;
      const listen = o.grpc ?? nbAddresses.get(id);
      if (listen === undefined) throw new Error('give --grpc or list this member in --nb-peers');
      // The files are read and checked here, before anything starts: one that cannot be used
      // stops the member with a message naming it. Renewed files are taken while it runs.
      const tls = tlsFilesFrom(o, tlsFlagNames);
      // A command-line pssl: listener serves with this member's identity (a Connection row's
      // may take the SSL row instead): without one, nothing starts.
      for (const [flag, target] of [['--ovsdb', o.ovsdb], ['--ovsdb-sb', o.ovsdbSb]] as const) {
        if (target?.startsWith('pssl:') === true && tls === undefined) throw new Error(`${flag} ${target}: pssl: needs this member's ${tlsFlagNames.privateKey}, ${tlsFlagNames.certificate} and ${tlsFlagNames.caCert}`);
      }
      if (tls === undefined && o.agentRole !== undefined && o.agentRole !== '') throw new Error(`--agent-role ${o.agentRole}: an agent's id is the common name of its certificate, so the role needs this member's ${tlsFlagNames.privateKey}, ${tlsFlagNames.certificate} and ${tlsFlagNames.caCert}`);
      if (tls === undefined && (o.sslProtocols !== undefined || o.sslCiphers !== undefined)) throw new Error('--ssl-protocols and --ssl-ciphers go with -p/-c/-C (an SSL row\'s own ssl_protocols and ssl_ciphers apply to it)');
      const protocolsRefused = o.sslProtocols === undefined ? undefined : tlsVersionRange(o.sslProtocols);
      if (typeof protocolsRefused === 'string') throw new Error(`--ssl-protocols: ${protocolsRefused}`);
      const onTlsReload = (e: TlsReloadEvent): void =>
        void process.stderr.write(`central ${o.name}: ${e.kind === 'reloaded' ? `TLS: took the renewed identity in ${e.files.privateKey}, ${e.files.certificate}, ${e.files.caCert}` : `TLS: kept the identity in use: ${e.reason}`}\n`);
      const grpcTls = tls === undefined ? undefined : new TlsCredentials(tls, { onReload: onTlsReload });
      const transport = new GrpcTransport({ id, clusterId, listenAddress: raftPeers.get(id) as string, peers: raftPeers, ...(grpcTls !== undefined ? { tls: grpcTls } : {}) });
      // A member added later is known by the address its conf change carried.
      const started: { central?: CentralNode } = {};
      const fwd = forwarder((leader) => started.central?.node.clientAddressOf(leader) ?? nbAddresses.get(leader), grpcTls);
      const metrics = new CentralMetrics();
      const stopOnRefusal = (err: ApplyRefusedError): never => {
        process.stderr.write(`central ${o.name}: stopping: ${err.message}\n`);
        process.exit(4);
      };
      // A snapshot past this build's apply version is refused as the node starts, before any entry.
      const central = await CentralNode.start({
        id,
        clusterId,
        dataDir: o.dataDir,
        transport,
        peers: raftPeers,
        ...(o.join === true ? {} : { bootstrap: [...raftPeers.keys()] }),
        tickMs: Number(o.tickMs),
        electionTicks: Number(o.electionTicks),
        ...(o.snapshotEntries !== undefined ? { snapshotEntries: positiveInteger('--snapshot-entries', o.snapshotEntries) } : {}),
        ...(o.snapshotLogBytes !== undefined ? { snapshotLogBytes: positiveInteger('--snapshot-log-bytes', o.snapshotLogBytes) } : {}),
        ...(o.snapshotLogRatio !== undefined ? { snapshotLogRatio: snapshotLogRatio('--snapshot-log-ratio', o.snapshotLogRatio) } : {}),
        ...(o.snapshotHandoffMs !== undefined ? { snapshotHandoffMs: positiveInteger('--snapshot-handoff-ms', o.snapshotHandoffMs) } : {}),
        forward: fwd.forward,
        observe: metrics,
        ...(o.applyVersionMax !== undefined ? { applyVersionMax: positiveInteger('--apply-version-max', o.applyVersionMax) } : {}),
        onFatalError: (err) => {
          if (err instanceof ApplyRefusedError) stopOnRefusal(err);
          process.stderr.write(`central ${o.name}: stopping on storage error: ${err.message}\n`);
          process.exit(3);
        },
      }).catch((err: unknown) => (err instanceof ApplyRefusedError ? stopOnRefusal(err) : Promise.reject(err)));
      // SIGTERM, SIGINT, or `exit` over the control socket stop the member.
      let exitRequested = (): void => undefined;
      const stopped = new Promise<void>((resolve) => {
        process.once('SIGTERM', () => resolve());
        process.once('SIGINT', () => resolve());
        exitRequested = resolve;
      });
      const control = await openControl({
        unixctl: o.unixctl,
        defaultUnixctl: join(o.dataDir, 'ovnts.ctl'),
        version: `ovnts central ${ovntsVersion()} (ovsdb-server's and ovn-northd's commands)`,
        commands: centralUnixctlCommands(central, { exit: () => exitRequested() }),
        warn: (m) => void process.stderr.write(`central ${o.name}: ${m}\n`),
      }).catch(async (err: unknown) => {
        await central.stop();
        throw err;
      });
      const server = new grpc.Server(northboundServerOptions);
      started.central = central;
      if (stored === undefined) writeFileSync(idPath, `${clusterId}\n`);
      metrics.attach(central);
      let http: Awaited<ReturnType<typeof startMetricsServer>> | undefined;
      if (o.metrics !== undefined) {
        const m = /^(.+):(\d+)$/.exec(o.metrics);
        if (m === null) throw new Error(`--metrics: expected host:port, got "${o.metrics}"`);
        http = await startMetricsServer(central, metrics, m[1] as string, Number(m[2]));
      }
      server.addService(northboundDefinition(), northboundHandlers(central));
      server.addService(adminDefinition(), adminHandlers(central));
      // The agent stream (one per chassis) on the same address as the Northbound API.
      // Acks relayed to the other members' Southbound service, on their Northbound address.
      const relayPeers = (): Map<NodeId, string> => {
        const out = new Map<NodeId, string>();
        for (const peer of central.node.otherMembers()) {
          const address = central.node.clientAddressOf(peer) ?? nbAddresses.get(peer);
          if (address !== undefined) out.set(peer, address);
        }
        return out;
      };
      const southbound = new SouthboundService(central, { relayPeers, ...(grpcTls !== undefined ? { tls: grpcTls } : {}), ...(o.agentRole !== undefined ? { agentRole: o.agentRole } : {}) });
      const housekeeping = startSbHousekeeping(central);
      metrics.attachHousekeeping(housekeeping.housekeeping);
      metrics.attachFanout(southbound.fanout, southbound.relay);
      server.addService(southboundDefinition(), southbound.handlers());
      const grpcListener = await listenGrpc(server, listen, defaultConnectionsMax, () => central.sessions.refuse('grpc'), grpcTls);
      const port = grpcListener.port;
      const fromDb = o.ovsdbRemotesFromDb === true;
      const openDoor = async (target: string | undefined, flag: string, db: 'OVN_Northbound' | 'OVN_Southbound'): Promise<Awaited<ReturnType<typeof startOvsdbDoor>>> => {
        // A command-line ptcp: without an address listens on loopback only.
        const where = target === undefined ? undefined : passiveTarget(target, '127.0.0.1');
        if (typeof where === 'string') throw new Error(`${flag}: expected ptcp:PORT[:IP], pssl:PORT[:IP] or punix:PATH, got "${target}" (${where})`);
        const onRemoteError = (remote: string, reason: string): void => void process.stderr.write(`central ${o.name}: ${db} Connection ${remote}: ${reason}\n`);
        // The member's identity serves the doors' pssl: listeners too, as ovsdb-server's -p/-c/-C
        // serve its pssl: remotes; without it a door following its database takes the SSL row.
        const ssl = tls === undefined ? undefined : { files: tls, protocols: o.sslProtocols, ciphers: o.sslCiphers };
        return startOvsdbDoor({ central, ...(where !== undefined ? { listen: where } : {}), clusterId, db, remotesFromDb: fromDb, onRemoteError, ...(ssl !== undefined ? { ssl } : {}) });
      };
      const doors: Awaited<ReturnType<typeof startOvsdbDoor>>[] = [];
      if (o.ovsdb !== undefined || fromDb) doors.push(await openDoor(o.ovsdb, '--ovsdb', 'OVN_Northbound'));
      if (o.ovsdbSb !== undefined || fromDb) doors.push(await openDoor(o.ovsdbSb, '--ovsdb-sb', 'OVN_Southbound'));
      process.stdout.write(JSON.stringify({ ready: { name: o.name, id, nb: listen.replace(/:0$/, `:${port}`), pid: process.pid, unixctl: control.servers.map((c) => c.path) } }) + '\n');
      await stopped;
      await control.close();
      for (const door of doors) await door.close();
      await http?.close();
      grpcListener.close();
      server.forceShutdown();
      southbound.close();
      housekeeping.close();
      fwd.close();
      await central.stop();
      // Stopped: the log and the database are closed. The gRPC server can still hold the socket
      // of a client whose graceful close never finished (a client that hangs, or whose host is
      // gone), and that socket alone would keep this process alive until TCP gives up on it.
      process.exit();
    });
}
