// The agent's runtime loop, as `ovnts agent` runs it: the local side (LocalAgent: Open_vSwitch,
// chassis, tunnels, bindings), an SbSource, and the flow side plugged in through FlowHook. For
// each SB update, in revision order: the local side folds it in, the flow side installs what it
// changed, the ports whose flows are in place are reported installed (so they go up), and the
// revision is acknowledged with its nb_cfg — only when the flow side installed it in full.
// A new LocalView (a VIF, tunnel or patch port appeared or went) is handed to the flow side too.
// Flow-side calls never overlap.
import type { LocalView } from '../local-view.js';
import type { ChassisHello, SbSource, SbSourceState, SbUpdate } from '../sb-source.js';
import type { OvsdbClient } from '../../ovsdb/client.js';
import type { LocalAgentOptions, LogLevel } from './local-agent.js';
import { LocalAgent } from './local-agent.js';

/**
 * Where the flow side plugs in (agent/flows/ AgentFlows fits): apply one SB update (null: only
 * the LocalView changed), install the difference, and resolve once the switch has it, with the
 * logical ports bound here whose flows are installed now and what could not be done.
 */
export interface FlowHook {
  apply(u: SbUpdate | null, view: LocalView): Promise<{ readonly installedPorts: Iterable<string>; readonly errors: readonly string[] }>;
}

export interface AgentRuntimeOptions {
  readonly ovs: OvsdbClient;
  readonly source: SbSource;
  /** The flow side; without one, ports are claimed but never marked up, and no revision is
   * acknowledged (nothing was installed). */
  readonly flows?: FlowHook;
  /**
   * Or a way to open it once the integration bridge exists (its OpenFlow management socket
   * appears with it): called once, before the SB source starts, so the flow side sees every
   * update from the first.
   */
  readonly openFlows?: (bridge: string) => Promise<FlowHook>;
  readonly hostname: string;
  readonly datapathType?: string;
  readonly monitorAll?: boolean;
  readonly log?: (level: LogLevel, message: string) => void;
  readonly localOptions?: Partial<Pick<LocalAgentOptions, 'resendMs' | 'now'>>;
}

export class AgentRuntime {
  readonly local: LocalAgent;
  private nbCfg = 0;
  private sbGlobal: string | undefined;
  /** Flow-side work, one after the other. */
  private chain: Promise<void> = Promise.resolve();
  private offView: (() => void) | undefined;
  private readonly log: (level: LogLevel, message: string) => void;
  private sourceState: SbSourceState | undefined;
  private lastIfaceIds = '';
  private flows: FlowHook | undefined;

  constructor(private readonly options: AgentRuntimeOptions) {
    this.log = options.log ?? ((level, message) => process.stderr.write(`agent ${level}: ${message}\n`));
    this.flows = options.flows;
    this.local = new LocalAgent({
      ovs: options.ovs,
      sbTransact: (ops) => options.source.transact(ops),
      hostname: options.hostname,
      ...(options.datapathType !== undefined ? { datapathType: options.datapathType } : {}),
      log: this.log,
      ...options.localOptions,
    });
  }

  /** The source's connection state as last reported. */
  get state(): SbSourceState | undefined {
    return this.sourceState;
  }

  /**
   * Starts the local side, waits for a complete chassis configuration in the Open_vSwitch row
   * (system-id, ovn-encap-type, ovn-encap-ip), then starts the SB source with this chassis's
   * hello. Resolves once the source is started.
   */
  async start(): Promise<void> {
    this.local.start();
    const config = await this.local.whenConfigured();
    if (this.flows === undefined && this.options.openFlows !== undefined) {
      const bridge = await this.local.whenBridgeReady();
      this.flows = await this.options.openFlows(bridge);
      this.log('info', `flow side connected to ${bridge}`);
    }
    if (this.flows === undefined) this.log('warn', 'no flow side: ports are claimed but not marked up, and no revision is acknowledged');
    const hello: ChassisHello = {
      chassis: config.systemId,
      hostname: config.hostname,
      encaps: config.encapIps.flatMap((ip) => config.encapTypes.map((type) => ({ type, ip }))),
      lastRevision: 0,
      monitorAll: this.options.monitorAll ?? config.monitorAll === 'true',
      ifaceIds: this.ifaceIds(this.local.view),
    };
    this.lastIfaceIds = hello.ifaceIds?.join('\n') ?? '';
    this.offView = this.local.onViewChange((view) => {
      // A source that serves only this chassis's interest must send the Port_Bindings of the
      // local interfaces, bound or not, so that they can be claimed.
      const ids = this.ifaceIds(view);
      if (ids.join('\n') !== this.lastIfaceIds) {
        this.lastIfaceIds = ids.join('\n');
        this.options.source.setIfaceIds?.(ids);
      }
      if (this.flows !== undefined) void this.enqueue(null);
    });
    this.options.source.start(hello, (u) => this.onUpdate(u), (s) => {
      this.sourceState = s;
      this.log(s.state === 'connected' ? 'info' : 'warn', s.state === 'connected' ? `SB source connected to ${s.endpoint}${s.resumedBy === undefined ? '' : ` (resumed by ${s.resumedBy})`}` : `SB source disconnected from ${s.endpoint}: ${s.reason}`);
    });
  }

  /** Stops; with cleanup, first releases this chassis's ports and unregisters it (--cleanup). */
  async stop(cleanup: boolean): Promise<void> {
    this.offView?.();
    if (cleanup) {
      try {
        await this.local.cleanup();
      } finally {
        await this.chain;
        await this.options.source.close();
      }
      return;
    }
    await this.local.stop();
    await this.chain;
    await this.options.source.close();
  }

  private ifaceIds(view: LocalView): string[] {
    return [...view.vifs.keys()].sort();
  }

  private trackNbCfg(u: SbUpdate): void {
    if (u.reset) this.sbGlobal = undefined;
    for (const c of u.changes) {
      if (c.table !== 'SB_Global') continue;
      if (c.row === undefined) {
        if (this.sbGlobal === c.uuid) this.sbGlobal = undefined;
        continue;
      }
      this.sbGlobal = c.uuid;
      this.nbCfg = typeof c.row.nb_cfg === 'number' ? c.row.nb_cfg : this.nbCfg;
    }
  }

  private async onUpdate(u: SbUpdate): Promise<void> {
    this.local.applySbUpdate(u);
    this.trackNbCfg(u);
    const nbCfg = this.nbCfg;
    if (this.flows === undefined) return;
    const errors = await this.enqueue(u);
    this.options.source.ack(u.toRevision, nbCfg, errors.length > 0 ? errors.join('; ') : undefined);
  }

  /** Runs one flow-side apply after the ones queued before it; resolves with its errors. */
  private enqueue(u: SbUpdate | null): Promise<readonly string[]> {
    const flows = this.flows as FlowHook;
    const run = this.chain.then(async () => {
      const view = this.local.view;
      const r = await flows.apply(u, view);
      this.local.markInstalled(r.installedPorts, view);
      for (const e of r.errors) this.log('warn', e);
      return r.errors;
    });
    this.chain = run.then(() => undefined);
    return run;
  }
}
