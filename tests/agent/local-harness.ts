// What the agent's local-side tests stand on: an in-process ovnts central (one member, real
// gRPC on loopback), and per chassis a real Open vSwitch (ovsdb-server + ovs-vswitchd with the
// userspace datapath and dummy devices, in its own temp folder) with an AgentRuntime on it,
// fed by the per-chassis agent stream (or the Watch-based SbSource). The flow side is a test double that reports every VIF bound
// here as installed: it installs no flow; it stands for "the runtime's barrier came back".
import path from 'node:path';
import type { Test } from 'tap';
import type { FlowHook } from '../../agent/local/agent-runtime.js';
import { AgentRuntime } from '../../agent/local/agent-runtime.js';
import { OVS_MONITOR } from '../../agent/local/ovs-rows.js';
import type { SbSource } from '../../agent/sb-source.js';
import type { TlsCredentials } from '../../cluster/tls.js';
import { SbStream } from '../../agent/sb-stream.js';
import { SbWatchSource } from '../../agent/sb-watch-source.js';
import { OvsdbClient } from '../../ovsdb/client.js';
import { Nb } from '../../bin/lib/nbctl/nb.js';
import { runNbctl } from '../../bin/lib/nbctl/commands.js';
import type { NorthboundClient } from '../../server/northbound-service.js';
import type { SouthboundServiceOptions } from '../../server/southbound-service.js';
import { startCentralCluster } from '../helpers/central-cluster.js';
import type { CentralCluster } from '../helpers/central-cluster.js';
import { until } from '../helpers/ovnts-cli.js';
import { startOvsSwitch } from '../helpers/ovs-switch.js';
import type { OvsSwitch } from '../helpers/ovs-switch.js';
import { Rng } from '../helpers/seeded-rng.js';
import { testdirAfterTeardowns } from '../helpers/testdir.js';

export type SbRow = Record<string, unknown>;

export interface Central {
  readonly cluster: CentralCluster;
  readonly client: NorthboundClient;
  readonly address: string;
  nbctl(...words: string[]): Promise<string>;
  sb(table: string): Promise<SbRow[]>;
}

/** One in-process member; with `tls`, its gRPC server takes only that CA's clients (tests/helpers/central-cluster.ts). */
export async function startCentral(t: Test, options: { tls?: TlsCredentials; southbound?: SouthboundServiceOptions } = {}): Promise<Central> {
  const cluster = await startCentralCluster(path.join(testdirAfterTeardowns(t), 'central'), { size: 1, ...options });
  t.teardown(() => cluster.stop());
  const member = cluster.members[0]!;
  return {
    cluster,
    client: member.client,
    address: member.address,
    // A fresh Nb per command: --wait sticks to the Nb it was given.
    nbctl: (...words) => runNbctl(new Nb([member.client]), words),
    sb: async (table) => (await member.client.list(table, [], { db: 'OVN_Southbound' })).rows,
  };
}

/** The uuid in an RFC 7047 ["uuid", u] value, or the members of a ["set", [...]]. */
export function uuids(v: unknown): string[] {
  if (Array.isArray(v) && v[0] === 'uuid') return [v[1] as string];
  if (Array.isArray(v) && v[0] === 'set') return (v[1] as unknown[]).flatMap(uuids);
  return [];
}

export function mapOf(v: unknown): Map<string, string> {
  return new Map(Array.isArray(v) && v[0] === 'map' ? (v[1] as [string, string][]) : []);
}

export interface Chassis {
  readonly name: string;
  readonly sw: OvsSwitch;
  readonly dbTarget: string;
  runtime: AgentRuntime;
  readonly logs: string[];
  /** Starts a new runtime on the same switch (after stop). */
  restart(): Promise<void>;
  stop(cleanup: boolean): Promise<void>;
}

export interface ChassisOptions {
  readonly name: string;
  readonly encapIp: string;
  readonly extraIds?: readonly string[];
  /** Target the agent connects to instead of the switch's db.sock (a proxy). */
  readonly ovsTarget?: (sw: OvsSwitch) => Promise<string>;
  /** Without the flow double: no port is ever reported installed. */
  readonly noFlows?: boolean;
  /** The SB source: the per-chassis agent stream (default, as `ovnts agent` uses) or the
   * monitor-all Watch. OVNTS_AGENT_SOURCE=watch switches the default. */
  readonly source?: 'stream' | 'watch';
  /** The agent's version for ovn-match-northd-version (default: its own). */
  readonly internalVersion?: string;
  /** Another flow side than the double below (which it may wrap: reportBoundVifs). */
  readonly flowHook?: (runtime: () => AgentRuntime) => FlowHook;
}

/** A FlowHook double: every VIF bound to this chassis counts as installed. */
export function reportBoundVifs(runtime: () => AgentRuntime): FlowHook {
  return {
    async apply(_u, view) {
      const rows = runtime().local.sbRows;
      const us = rows.chassisByName(view.chassis)?._uuid;
      const installedPorts = us === undefined ? [] : [...view.vifs.keys()].filter((p) => rows.portBinding(p)?.chassis[0] === us);
      return { installedPorts, errors: [] };
    },
  };
}

export async function startChassis(t: Test, central: Central, options: ChassisOptions): Promise<Chassis> {
  // The switch's own bridge is br-test: the agent must create br-int itself.
  const sw = await startOvsSwitch({ bridge: 'br-test' });
  t.teardown(() => sw.stop());
  await sw.vsctl('set', 'open_vswitch', '.', `external_ids:system-id=${options.name}`, `external_ids:hostname=${options.name}.example`,
    'external_ids:ovn-encap-type=geneve', `external_ids:ovn-encap-ip=${options.encapIp}`, ...(options.extraIds ?? []));
  const dbTarget = options.ovsTarget !== undefined ? await options.ovsTarget(sw) : `unix:${path.join(sw.dir, 'db.sock')}`;
  const logs: string[] = [];
  let ovs: OvsdbClient;
  let source: SbSource;
  const kind = options.source ?? (process.env.OVNTS_AGENT_SOURCE === 'watch' ? 'watch' : 'stream');
  let running = false;
  const make = (): AgentRuntime => {
    const rng = new Rng(options.name.length);
    ovs = new OvsdbClient({ target: dbTarget, database: 'Open_vSwitch', tables: OVS_MONITOR, reconnectMsMin: 50, reconnectMsMax: 500, random: () => rng.float() });
    source = kind === 'watch'
      ? new SbWatchSource({ endpoints: [central.address], reconnectMsMin: 50, reconnectMsMax: 500, log: (m) => logs.push(`source: ${m}`) })
      : new SbStream({ endpoints: [central.address], random: () => rng.float() });
    const rt: AgentRuntime = new AgentRuntime({
      ovs, source, hostname: `${options.name}-host`, datapathType: 'netdev',
      log: (level, m) => logs.push(`${level}: ${m}`),
      localOptions: { resendMs: 1_000, ...(options.internalVersion !== undefined ? { internalVersion: options.internalVersion } : {}) },
      ...(options.noFlows === true ? {} : { flows: (options.flowHook ?? reportBoundVifs)(() => rt) }),
    });
    return rt;
  };
  const chassis: Chassis = {
    name: options.name,
    sw,
    dbTarget,
    runtime: make(),
    logs,
    async restart() {
      chassis.runtime = make();
      launch();
    },
    async stop(cleanup) {
      if (!running) return;
      running = false;
      await chassis.runtime.stop(cleanup);
      await ovs.close();
    },
  };
  // The runtime's start waits for a complete configuration, which a test may withhold.
  function launch(): void {
    running = true;
    chassis.runtime.start().catch((err: unknown) => logs.push(`start failed: ${(err as Error).message}`));
  }
  launch();
  t.teardown(() => chassis.stop(false));
  return chassis;
}

/** Polls until `f` gives a value; the message says what did not happen, with the agents' logs. */
export function eventually<T>(what: string, f: () => Promise<T | undefined>, chassis: readonly Chassis[] = [], ms = 60_000): Promise<T> {
  return until(() => `${what}\n${chassis.map((c) => `--- ${c.name}:\n${c.logs.slice(-15).join('\n')}`).join('\n')}`, f, ms);
}

/** Port_Binding.chassis of a logical port as a Chassis name ('' when unbound). */
export async function boundTo(central: Central, port: string): Promise<string> {
  const pb = (await central.sb('Port_Binding')).find((r) => r.logical_port === port);
  const ch = uuids(pb?.chassis)[0];
  if (ch === undefined) return '';
  const row = (await central.sb('Chassis')).find((r) => uuids(r._uuid)[0] === ch);
  return (row?.name as string | undefined) ?? `?${ch}`;
}

/** `ovs-vsctl find` as one object per record, values in RFC 7047 JSON. */
export async function vsctlFind(sw: OvsSwitch, table: string, ...conditions: string[]): Promise<Record<string, unknown>[]> {
  const out = await sw.vsctl('--format=json', '--data=json', 'find', table, ...conditions);
  const parsed = JSON.parse(out) as { headings: string[]; data: unknown[][] };
  return parsed.data.map((row) => Object.fromEntries(parsed.headings.map((h, i) => [h, row[i]])));
}
