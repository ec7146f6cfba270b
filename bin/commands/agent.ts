// `ovnts agent`: the hypervisor agent (ovnts's ovn-controller). It reads its configuration from
// the local Open_vSwitch database (external_ids:system-id, hostname, ovn-remote, ovn-encap-type,
// ovn-encap-ip, ovn-bridge, ovn-bridge-mappings, ...), creates the integration bridge, registers
// the chassis with the central cluster, keeps tunnel and localnet patch ports, claims the
// logical ports whose interfaces carry an iface-id, and (with a flow side) installs their flows.
// SIGTERM or SIGINT stop it; with --cleanup it first releases its ports and unregisters.
import os from 'node:os';
import type { Command } from 'commander';
import { OvsdbClient } from '../../ovsdb/client.js';
import type { FlowHook } from '../../agent/local/agent-runtime.js';
import { AgentRuntime } from '../../agent/local/agent-runtime.js';
import { chassisExternalId } from '../../agent/local/ovs-config.js';
import { OVS_MONITOR, openVswitchRow } from '../../agent/local/ovs-rows.js';
import { SbWatchSource } from '../../agent/sb-watch-source.js';

interface AgentOptions {
  ovsDb: string;
  central?: string;
  cleanup?: boolean;
  datapathType?: string;
  monitorAll?: boolean;
  hostname?: string;
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
 * The flow side's plug. agent/flows/ provides AgentFlows (it fits FlowHook) over an OpenFlow
 * connection to the integration bridge; until it is wired here the agent runs without one:
 * ports are claimed and released, but not marked up, and revisions are not acknowledged.
 */
function openFlowSide(): FlowHook | undefined {
  return undefined;
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
      ovs.start();
      let runtime: AgentRuntime | undefined;
      const stopped = new Promise<NodeJS.Signals>((resolve) => {
        process.once('SIGTERM', () => resolve('SIGTERM'));
        process.once('SIGINT', () => resolve('SIGINT'));
      });
      try {
        const central = await Promise.race([o.central !== undefined ? Promise.resolve(o.central) : centralFromOvs(ovs), stopped.then(() => undefined)]);
        if (central !== undefined) {
          const source = new SbWatchSource({ endpoints: parseCentralEndpoints(central), log: (m) => log('warn', m) });
          const flows = openFlowSide();
          runtime = new AgentRuntime({
            ovs, source, hostname, log,
            ...(flows !== undefined ? { flows } : {}),
            ...(o.datapathType !== undefined ? { datapathType: o.datapathType } : {}),
            ...(o.monitorAll === true ? { monitorAll: true } : {}),
          });
          await Promise.race([runtime.start(), stopped]);
          const signal = await stopped;
          log('info', `${signal}: stopping${o.cleanup === true ? ' (cleanup)' : ''}`);
          await runtime.stop(o.cleanup === true);
        }
      } catch (err) {
        if (!(err instanceof AgentConfigError)) throw err;
        process.stderr.write(`ovnts agent: ${err.message}\n`);
        process.exitCode = 1;
      } finally {
        await ovs.close();
      }
    });
}
