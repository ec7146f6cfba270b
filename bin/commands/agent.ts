// `ovnts agent`: the hypervisor agent (ovnts's ovn-controller). It reads its configuration from
// the local Open_vSwitch database (external_ids:system-id, hostname, ovn-remote, ovn-encap-type,
// ovn-encap-ip, ovn-bridge, ovn-bridge-mappings, ...), creates the integration bridge, registers
// the chassis with the central cluster, keeps tunnel and localnet patch ports, claims the
// logical ports whose interfaces carry an iface-id, and installs the flows through the flow side
// (agent/flows/ AgentFlows over OpenFlow to <rundir>/<bridge>.mgmt; --no-flows leaves it out).
// SIGTERM or SIGINT stop it; with --cleanup it first releases its ports and unregisters.
// Like ovn-controller it answers `ovn-appctl -t ovn-controller` (agent/unixctl-commands.ts): a
// control socket <rundir>/ovn-controller.<pid>.ctl and a pidfile <rundir>/ovn-controller.pid,
// where <rundir> is $OVN_RUNDIR or /var/run/ovn; `exit` there stops it as ovn-controller stops
// (with cleanup; `exit --restart` without).
// With -p/-c/-C, or else the SSL row of the Open_vSwitch table (`ovs-vsctl set-ssl KEY CERT CA`,
// which ovn-controller reads too), it reaches the central members over TLS (docs/tls.md).
import os from 'node:os';
import path from 'node:path';
import type { Command } from 'commander';
import { AgentFlows } from '../../agent/flows/agent-flows.js';
import { OfSwitch } from '../../agent/flows/ofswitch.js';
import { OfChannel } from '../../agent/openflow/channel.js';
import type { OfMessage } from '../../agent/openflow/messages.js';
import { bfdSessionSpecs, garpSpecs, PeriodicRaInputs, Pinctrl, periodicRaSpecs, querierSpecs, sbControllerEventLookup, sbPacketInContext, sbPinctrlLookup, sbIgmpLookup, sbPortKeys, sbVportLookup, serviceMonitorSpecs, type MacBindingRow } from '../../agent/pinctrl/index.js';
import { OvsdbClient } from '../../ovsdb/client.js';
import type * as sb from '../../ovsdb/rows/sb.js';
import type { FlowHook } from '../../agent/local/agent-runtime.js';
import { AgentRuntime } from '../../agent/local/agent-runtime.js';
import { chassisExternalId } from '../../agent/local/ovs-config.js';
import { OVS_MONITOR, openVswitchRow, sslOfOpenVswitch } from '../../agent/local/ovs-rows.js';
import { TlsCredentials, TlsError, type TlsFiles } from '../../cluster/tls.js';
import type { SbSource } from '../../agent/sb-source.js';
import { SbStream } from '../../agent/sb-stream.js';
import { SbWatchSource } from '../../agent/sb-watch-source.js';
import { agentUnixctlCommands } from '../../agent/unixctl-commands.js';
import { ControlSocketError, openControl, ovnRundir } from '../lib/control-socket.js';
import { tlsFilesOfFlags, tlsOption, type TlsFlagValues } from '../lib/tls-flags.js';
import { ovntsVersion } from '../lib/version.js';

interface AgentOptions extends TlsFlagValues {
  ovsDb: string;
  central?: string;
  cleanup?: boolean;
  datapathType?: string;
  monitorAll?: boolean;
  hostname?: string;
  ovsRundir?: string;
  flows: boolean;
  sbSource: string;
  unixctl?: string;
  pidfile?: string;
}

export class AgentConfigError extends Error {}

/**
 * The central members' Northbound gRPC addresses from --central or external_ids:ovn-remote:
 * "HOST:PORT" or "grpc:HOST:PORT", comma-separated. An OVSDB remote (tcp:, ssl:, unix:) is
 * refused with a message: it names ovn-controller's SB database, not an ovnts central.
 */
export function parseCentralEndpoints(text: string): string[] {
  const out: string[] = [];
  for (const raw of text.split(',')) {
    const item = raw.trim();
    if (item === '') continue;
    if (/^(tcp|ssl|unix|ptcp|pssl|punix):/.test(item)) {
      throw new AgentConfigError(`"${item}" is an OVSDB remote; give the central members' Northbound gRPC addresses (host:port or grpc:host:port)`);
    }
    const addr = item.startsWith('grpc:') ? item.slice(5) : item;
    if (!/^(\[[0-9a-fA-F:.]+\]|[^:[\]\s]+):\d{1,5}$/.test(addr)) throw new AgentConfigError(`bad central endpoint "${item}": expected host:port or grpc:host:port`);
    out.push(addr);
  }
  if (out.length === 0) throw new AgentConfigError(`no central endpoints in "${text}"`);
  return out;
}

/**
 * Open vSwitch's run directory, where ovs-vswitchd puts each bridge's OpenFlow management
 * socket (<bridge>.mgmt): --ovs-rundir, else the folder of a unix: --ovs-db, else the default.
 */
export function ovsRundir(flag: string | undefined, ovsDb: string): string {
  if (flag !== undefined) return flag;
  if (ovsDb.startsWith('unix:')) return path.dirname(ovsDb.slice(5));
  return '/var/run/openvswitch';
}

/** The tables whose changes may change which Service_Monitor rows this chassis probes, or how. */
const serviceMonitorInputs: ReadonlySet<string> = new Set(['Service_Monitor', 'Port_Binding', 'Chassis', 'Datapath_Binding']);
/** The SB tables the gratuitous ARPs read (agent/pinctrl/garp.ts); the local view is read on every update. */
const garpInputs: ReadonlySet<string> = new Set(['Port_Binding', 'Datapath_Binding', 'Chassis', 'HA_Chassis_Group', 'HA_Chassis']);
const querierInputs: ReadonlySet<string> = new Set(['IP_Multicast', 'Port_Binding', 'Datapath_Binding']);
/** The SB tables that decide which BFD rows this chassis runs (agent/pinctrl/bfd-specs.ts); the local view's live tunnels too. */
const bfdInputs: ReadonlySet<string> = new Set(['BFD', 'Port_Binding', 'Datapath_Binding', 'Chassis', 'HA_Chassis_Group', 'HA_Chassis']);

/**
 * The flow side's plug: agent/flows/ AgentFlows over an OpenFlow 1.5 channel to the integration
 * bridge's management socket. The channel reconnects by itself; `closers` gets its close.
 */
function flowSideOpener(
  rundir: string, closers: (() => void)[], source: SbSource, log: (level: string, message: string) => void, activate: (port: string) => void,
): (bridge: string, ctZones: ReadonlyMap<string, number>) => Promise<FlowHook> {
  return async (bridge, ctZones) => {
    // The channel's packet-ins go to pinctrl, which needs the channel and the flow side's SB
    // store: both exist only once the channel is up, so the handler looks them up late.
    const late: { pinctrl?: Pinctrl } = {};
    const onMessage = (m: OfMessage): void => {
      if (m.kind === 'packet_in2') late.pinctrl?.handlePacketIn(m);
    };
    // ovs-vswitchd opens the socket shortly after the bridge appears in its database.
    // No inactivity probe until the configuration says (ovn-openflow-probe-interval's default is
    // none, as in ovn-controller: the socket is local, a dead switch closes it).
    const channel = await OfChannel.connect({ target: `unix:${path.join(rundir, `${bridge}.mgmt`)}`, connectTimeoutMs: 120_000, packetIn2: true, onMessage, echoIntervalMs: 0 });
    const flows = new AgentFlows(new OfSwitch(channel), { ctZones });
    let waitBeforeClearMs = 0;
    const raInputs = new PeriodicRaInputs();
    const vports = sbVportLookup(() => flows.engine.sb, () => flows.engine.chassis());
    late.pinctrl = new Pinctrl({
      channel, sb: source, lookup: sbPinctrlLookup(() => flows.engine.sb), context: sbPacketInContext(() => flows.engine.sb),
      portKeys: sbPortKeys(() => flows.engine.sb),
      vportLookup: vports,
      igmpLookup: sbIgmpLookup(() => flows.engine.sb, () => flows.engine.chassis()),
      controllerEventLookup: sbControllerEventLookup(() => flows.engine.sb, () => flows.engine.chassis()),
      onProblem: (m) => log('warn', `pinctrl: ${m}`),
      onVportClaim: (vport, parent) => log('info', `pinctrl: claimed virtual port ${vport} for this chassis with the virtual parent ${parent}`),
      onActivate: (dpKey, portKey) => {
        const port = vports.port(dpKey, portKey)?.logicalPort;
        if (port === undefined) return;
        log('info', `pinctrl: ${port} activated by its RARP`);
        activate(port);
      },
    });
    closers.push(() => {
      late.pinctrl?.close();
      channel.close();
    });
    return {
      // New MAC bindings release the packets held for them (ovn-controller's buffered packets),
      // once the update that brought them is installed.
      async apply(u, view) {
        const r = await flows.apply(u, view);
        if (u !== null) {
          const rows: MacBindingRow[] = [];
          for (const c of u.changes) if (c.table === 'MAC_Binding' && c.row !== undefined) rows.push(c.row as unknown as MacBindingRow);
          if (rows.length > 0) late.pinctrl?.macBindingsChanged(rows);
          // A row the event writer inserted, seen now, no longer holds back a new event for its VIP.
          if (u.changes.some((c) => c.table === 'Controller_Event')) late.pinctrl?.controllerEventsChanged();
        }
        // Health checks follow the rows of the ports bound here (ovn-controller's
        // sync_svc_monitors), once their flows are installed.
        if (u === null || u.reset || u.changes.some((c) => serviceMonitorInputs.has(c.table))) {
          const { specs, skipped } = serviceMonitorSpecs(flows.engine.sb, view.chassis);
          late.pinctrl?.serviceMonitorsChanged(specs, skipped);
        }
        // BFD sessions run where their router port's traffic leaves: the gateway router's chassis,
        // or the active chassis of the distributed gateway port, which the live tunnels decide.
        if (u === null || u.reset || u.changes.some((c) => bfdInputs.has(c.table))) {
          const { specs, skipped } = bfdSessionSpecs(flows.engine.sb, flows.engine.chassis(), view.activeTunnels);
          late.pinctrl?.bfdChanged(specs, skipped);
        }
        // Router advertisements sent unasked follow the router ports' bindings and their peers.
        if (u === null || u.reset || raInputs.concerns(u.changes)) {
          const { specs, skipped } = periodicRaSpecs(flows.engine.sb, raInputs);
          late.pinctrl?.routerAdvertisementsChanged(specs, skipped);
        }
        // Gratuitous ARPs follow the bindings, the local datapaths and which gateway is active.
        if (u === null || u.reset || u.changes.some((c) => garpInputs.has(c.table))) {
          late.pinctrl?.garpsChanged(garpSpecs(flows.engine.sb, flows.engine.chassis(), view, flows.engine.localDatapaths()));
        }
        // IGMP queries follow the switches' IP_Multicast rows and which datapaths are local.
        if (u === null || u.reset || u.changes.some((c) => querierInputs.has(c.table))) {
          const rows = flows.engine.sb.table('IP_Multicast').values() as Iterable<unknown> as Iterable<sb.IP_Multicast>;
          late.pinctrl?.queriersChanged(querierSpecs(rows, (uuid) => flows.engine.sb.datapath(uuid), flows.engine.localDatapaths()));
        }
        return r;
      },
      configure(c) {
        channel.setProbeIntervalMs(c.openflowProbeIntervalSec * 1000);
        if (c.ofctrlWaitBeforeClearMs !== waitBeforeClearMs) {
          log('info', `ofctrl-wait-before-clear is now ${c.ofctrlWaitBeforeClearMs} ms (was ${waitBeforeClearMs} ms)`);
          waitBeforeClearMs = c.ofctrlWaitBeforeClearMs;
          flows.setWaitBeforeClearMs(waitBeforeClearMs);
        }
        late.pinctrl?.setGarpMaxTimeoutSec(c.garpMaxTimeoutSec);
      },
      ctZones: () => flows.ctZones(),
      extendTables: () => flows.extendTables(),
      forceRecompute: () => flows.forceRecompute(),
    };
  };
}

/** Waits until the Open_vSwitch row names the central (external_ids:ovn-remote). */
function centralFromOvs(ovs: OvsdbClient): Promise<string> {
  return new Promise((resolve) => {
    let warned = false;
    const check = (): void => {
      const ids = openVswitchRow((t) => ovs.table(t))?.external_ids as ReadonlyMap<string, string> | undefined;
      const remote = ids === undefined ? undefined : chassisExternalId(ids, ids.get('system-id'), 'ovn-remote');
      if (remote !== undefined && remote !== '') {
        off();
        resolve(remote);
      } else if (!warned && ovs.isSynced) {
        warned = true;
        process.stderr.write('ovnts agent: waiting for external_ids:ovn-remote in the Open_vSwitch table (or give --central)\n');
      }
    };
    const off = ovs.onChange(check);
  });
}

/**
 * The TLS files of the SSL row the Open_vSwitch row points to, once the replica holds the
 * database (undefined when there is no such row). A row without one of them is refused, naming
 * what it lacks, rather than the agent reaching the central in plaintext.
 */
function tlsFromOvs(ovs: OvsdbClient): Promise<TlsFiles | undefined> {
  return new Promise((resolve, reject) => {
    const check = (): void => {
      if (!ovs.isSynced) return;
      off();
      const ssl = sslOfOpenVswitch((t) => ovs.table(t));
      if (ssl === undefined) return resolve(undefined);
      const missing = (['private_key', 'certificate', 'ca_cert'] as const).filter((c) => ssl[c] === '');
      if (missing.length > 0) return reject(new AgentConfigError(`the Open_vSwitch table's SSL row has no ${missing.join(' and ')} (ovs-vsctl set-ssl KEY CERT CA sets all three)`));
      resolve({ privateKey: ssl.private_key, certificate: ssl.certificate, caCert: ssl.ca_cert });
    };
    const off = ovs.onChange(check);
    check();
  });
}

/**
 * Keeps `tls` on the files the Open_vSwitch table's SSL row names as the row changes; returns
 * the unsubscribe. A row removed or left without one of its files changes nothing (the identity
 * in use stays, said once); files that cannot be used are refused by TlsCredentials, which
 * says so and keeps the identity in use.
 */
function followSslRow(ovs: OvsdbClient, tls: TlsCredentials, log: (level: 'info' | 'warn', message: string) => void): () => void {
  const key = (f: TlsFiles): string => `${f.privateKey}\n${f.certificate}\n${f.caCert}`;
  let seen = key(tls.files);
  return ovs.onChange(() => {
    const ssl = sslOfOpenVswitch((t) => ovs.table(t));
    const files = ssl === undefined ? undefined : { privateKey: ssl.private_key, certificate: ssl.certificate, caCert: ssl.ca_cert };
    const now = files === undefined ? 'none' : key(files);
    if (now === seen) return;
    seen = now;
    if (files === undefined || files.privateKey === '' || files.certificate === '' || files.caCert === '') {
      log('warn', `TLS: the Open_vSwitch table's ${files === undefined ? 'SSL row is gone' : 'SSL row lacks a file'}; keeping the identity in use (${tls.files.privateKey}, ${tls.files.certificate}, CA ${tls.files.caCert})`);
      return;
    }
    log('info', `TLS: the Open_vSwitch table's SSL row now names ${files.privateKey}, ${files.certificate}, CA ${files.caCert}; new connections to the central use them`);
    tls.useFiles(files);
  });
}

export function registerAgentCommand(program: Command): void {
  program
    .command('agent')
    .description('run the hypervisor agent: chassis registration, port bindings, tunnels and flows from the local Open vSwitch')
    .option('--ovs-db <target>', 'the local Open_vSwitch database: unix:PATH or tcp:HOST:PORT', 'unix:/var/run/openvswitch/db.sock')
    .option('--central <endpoints>', 'central members\' Northbound gRPC addresses, comma-separated (default: external_ids:ovn-remote)')
    .option('--cleanup', 'on exit, release this chassis\'s ports, delete its Chassis, Encap and Chassis_Private rows and its tunnel ports')
    .option('--datapath-type <type>', 'the integration bridge\'s datapath type (default: external_ids:ovn-bridge-datapath-type, else the bridge\'s, else system)')
    .option('--monitor-all', 'receive every Southbound row, not only what concerns this chassis')
    .option('--hostname <name>', 'the hostname to register when external_ids:hostname is not set (default: this host\'s)')
    .option('--ovs-rundir <dir>', 'where ovs-vswitchd puts the bridges\' OpenFlow management sockets (default: the folder of a unix: --ovs-db)')
    .option('--no-flows', 'do not install flows (bindings and tunnels only): ports are claimed but never marked up')
    .option('--sb-source <kind>', 'how the Southbound arrives: "stream" (the per-chassis agent stream) or "watch" (a Northbound Watch of every SB row)', 'stream')
    .option('--unixctl <path>', 'the control socket ovn-appctl talks to (default: $OVN_RUNDIR/ovn-controller.<pid>.ctl, OVN_RUNDIR defaulting to /var/run/ovn; "none": no socket)')
    // The chassis's TLS identity for the central members (default: the Open_vSwitch table's SSL row).
    .addOption(tlsOption.privateKey('this chassis\'s', ' to the central members (default: the SSL row of the Open_vSwitch table, as ovs-vsctl set-ssl writes it and ovn-controller reads it)'))
    .addOption(tlsOption.certificate('this chassis\'s'))
    .addOption(tlsOption.caCert())
    .option('--pidfile <path>', 'the pidfile by which `ovn-appctl -t ovn-controller` finds the socket (default: $OVN_RUNDIR/ovn-controller.pid; "none": no pidfile)')
    .action(async (o: AgentOptions) => {
      const hostname = o.hostname ?? os.hostname();
      const log = (level: string, message: string): void => {
        process.stderr.write(`${new Date().toISOString()} agent ${level}: ${message}\n`);
      };
      const ovs = new OvsdbClient({
        target: o.ovsDb,
        database: 'Open_vSwitch',
        tables: OVS_MONITOR,
        onEvent: (e) => log(e.kind === 'connected' ? 'info' : 'warn', e.kind === 'connected' ? `connected to ${e.target}` : `lost ${e.target}: ${e.reason}; retrying in ${e.retryInMs} ms`),
      });
      let runtime: AgentRuntime | undefined;
      const closers: (() => void)[] = [];
      let exitRequested: (restart: boolean) => void = () => undefined;
      // A signal stops the agent as --cleanup says; `exit` over the control socket as
      // ovn-controller's does: with cleanup, unless --restart.
      const stopped = new Promise<{ reason: string; cleanup: boolean }>((resolve) => {
        process.once('SIGTERM', () => resolve({ reason: 'SIGTERM', cleanup: o.cleanup === true }));
        process.once('SIGINT', () => resolve({ reason: 'SIGINT', cleanup: o.cleanup === true }));
        exitRequested = (restart) => resolve({ reason: `exit${restart ? ' --restart' : ''} (control socket)`, cleanup: !restart });
      });
      let control: Awaited<ReturnType<typeof openControl>> | undefined;
      try {
        const rundir = ovnRundir();
        control = await openControl({
          unixctl: o.unixctl,
          defaultUnixctl: path.join(rundir, `ovn-controller.${process.pid}.ctl`),
          pidfile: o.pidfile,
          defaultPidfile: path.join(rundir, 'ovn-controller.pid'),
          version: `ovnts agent ${ovntsVersion()} (ovn-controller 23.03's commands)`,
          commands: agentUnixctlCommands({ runtime: () => runtime, exit: (restart) => exitRequested(restart) }),
          warn: (m) => log('warn', m),
        });
        for (const server of control.servers) log('info', `control socket ${server.path}${control.pidfile !== undefined ? `, pidfile ${control.pidfile.path}` : ''}`);
      } catch (err) {
        if (!(err instanceof ControlSocketError)) throw err;
        process.stderr.write(`ovnts agent: ${err.message}\n`);
        process.exitCode = 1;
        return;
      }
      ovs.start();
      try {
        const flagged = tlsFilesOfFlags(o);
        const central = await Promise.race([o.central !== undefined ? Promise.resolve(o.central) : centralFromOvs(ovs), stopped.then(() => undefined)]);
        // Without the flags, the SSL row once the replica holds the database.
        const tlsFiles = central === undefined || flagged !== undefined ? flagged : await Promise.race([tlsFromOvs(ovs), stopped.then(() => undefined)]);
        if (central !== undefined) {
          const endpoints = parseCentralEndpoints(central);
          const tls = tlsFiles === undefined ? undefined : new TlsCredentials(tlsFiles, {
            onReload: (e) => log(e.kind === 'reloaded' ? 'info' : 'warn', e.kind === 'reloaded' ? `TLS: took the identity in ${e.files.privateKey}, ${e.files.certificate}, CA ${e.files.caCert}` : `TLS: kept the identity in use: ${e.reason}`),
          });
          if (tlsFiles !== undefined) log('info', `TLS to the central with ${tlsFiles.privateKey}, ${tlsFiles.certificate}, CA ${tlsFiles.caCert}${flagged === undefined ? ' (the Open_vSwitch table\'s SSL row)' : ''}`);
          // An identity from the SSL row follows it, as ovn-controller's does: new paths are
          // taken for the next connections (`ovs-vsctl set-ssl` again, without a restart).
          if (tls !== undefined && flagged === undefined) closers.push(followSslRow(ovs, tls, log));
          const withTls = tls === undefined ? {} : { tls };
          let source: SbSource;
          if (o.sbSource === 'stream') source = new SbStream({ endpoints, ...withTls });
          else if (o.sbSource === 'watch') source = new SbWatchSource({ endpoints, log: (m) => log('warn', m), ...withTls });
          else throw new AgentConfigError(`--sb-source must be stream or watch, not "${o.sbSource}"`);
          runtime = new AgentRuntime({
            ovs, source, hostname, log,
            ...(o.flows ? { openFlows: flowSideOpener(ovsRundir(o.ovsRundir, o.ovsDb), closers, source, log, (port) => runtime?.activate(port)) } : {}),
            ...(o.datapathType !== undefined ? { datapathType: o.datapathType } : {}),
            ...(o.monitorAll === true ? { monitorAll: true } : {}),
          });
          await Promise.race([runtime.start(), stopped]);
          const stop = await stopped;
          log('info', `${stop.reason}: stopping${stop.cleanup ? ' (cleanup)' : ''}`);
          await runtime.stop(stop.cleanup);
        }
      } catch (err) {
        if (!(err instanceof AgentConfigError) && !(err instanceof TlsError)) throw err;
        process.stderr.write(`ovnts agent: ${err.message}\n`);
        process.exitCode = 1;
      } finally {
        for (const close of closers) close();
        await ovs.close();
        await control.close();
      }
    });
}
