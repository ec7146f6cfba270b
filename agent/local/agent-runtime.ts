// The agent's runtime loop, as `ovnts agent` runs it: the local side (LocalAgent: Open_vSwitch,
// chassis, tunnels, bindings), an SbSource, and the flow side plugged in through FlowHook. For
// each SB update, in revision order: the local side folds it in, the flow side installs what it
// changed, the ports whose flows are in place are reported installed (so they go up), and the
// revision is acknowledged with its nb_cfg — only when the flow side installed it in full.
// A new LocalView (a VIF, tunnel or patch port appeared or went) is handed to the flow side too.
// Flow-side calls never overlap.
//
// Conntrack zones survive a restart as in ovn-controller: the flow side starts from the zones
// in the integration bridge's external_ids:ct-zone-<user>, and the zones in force are written
// back there after each install that changed them, so a restarted agent gives every port and
// datapath the zone its connections are tracked in.
import type { LocalView } from '../local-view.js';
import type { ChassisHello, SbSource, SbSourceState, SbUpdate } from '../sb-source.js';
import type { OvsdbClient } from '../../ovsdb/client.js';
import type { Row } from '../../ovsdb/index.js';
import { bridgeByName } from './ovs-rows.js';
import { whereUuid } from './ovsdb-json.js';
import type { LocalAgentOptions, LogLevel } from './local-agent.js';
import { LocalAgent } from './local-agent.js';
import type { ChassisConfig } from './ovs-config.js';
import { HeldUpdates } from '../held-updates.js';

/**
 * Where the flow side plugs in (agent/flows/ AgentFlows fits): apply one SB update (null: only
 * the LocalView changed), install the difference, and resolve once the switch has it, with the
 * logical ports bound here whose flows are installed now and what could not be done.
 */
export interface FlowHook {
  /**
   * `waitingUntilMs`: nothing was installed, as ovn-ofctrl-wait-before-clear asks after a new
   * switch connection; the runtime applies again (null) at that time and acknowledges then.
   */
  apply(u: SbUpdate | null, view: LocalView): Promise<{ readonly installedPorts: Iterable<string>; readonly errors: readonly string[]; readonly waitingUntilMs?: number | undefined }>;
  /** The configuration the flow side applies itself (OpenFlow probe, wait-before-clear, GARP cap), at start and on every change. */
  configure?(config: ChassisConfig): void;
  /** The conntrack zones in force, by user (port name, "<datapath>_dnat"/"_snat"): persisted. */
  ctZones?(): ReadonlyMap<string, number>;
  /** The meters and groups the flows use, by name, with their ids (meter-table-list, group-table-list). */
  extendTables?(): { readonly meters: ReadonlyMap<string, number>; readonly groups: ReadonlyMap<string, number> };
  /** The next apply recomputes every flow (the `recompute` command). */
  forceRecompute?(): void;
}

/** The integration bridge's external_ids key of a zone user, as ovn-controller names it. */
export const CT_ZONE_PREFIX = 'ct-zone-';

/** The zones persisted in a bridge's external_ids (entries that are not zone numbers are skipped). */
export function persistedCtZones(externalIds: ReadonlyMap<string, string> | undefined): Map<string, number> {
  const out = new Map<string, number>();
  for (const [k, v] of externalIds ?? []) {
    if (!k.startsWith(CT_ZONE_PREFIX) || !/^\d{1,5}$/.test(v)) continue;
    const zone = Number(v);
    if (zone >= 1 && zone <= 65535) out.set(k.slice(CT_ZONE_PREFIX.length), zone);
  }
  return out;
}

/**
 * The mutations that make a bridge's ct-zone-* external_ids say `zones`, or undefined when they
 * do: stale and changed keys deleted, new and changed ones inserted (one transaction).
 */
export function ctZoneOps(bridgeUuid: string, persisted: ReadonlyMap<string, number>, zones: ReadonlyMap<string, number>): Record<string, unknown>[] | undefined {
  const remove: string[] = [];
  const add: [string, string][] = [];
  for (const [user, zone] of persisted) if (zones.get(user) !== zone) remove.push(`${CT_ZONE_PREFIX}${user}`);
  for (const [user, zone] of zones) if (persisted.get(user) !== zone) add.push([`${CT_ZONE_PREFIX}${user}`, String(zone)]);
  if (remove.length === 0 && add.length === 0) return undefined;
  const mutations: unknown[] = [];
  if (remove.length > 0) mutations.push(['external_ids', 'delete', ['set', remove.sort()]]);
  if (add.length > 0) mutations.push(['external_ids', 'insert', ['map', add.sort(([a], [b]) => (a < b ? -1 : 1))]]);
  return [{ op: 'mutate', table: 'Bridge', where: whereUuid(bridgeUuid), mutations }];
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
  readonly openFlows?: (bridge: string, ctZones: ReadonlyMap<string, number>) => Promise<FlowHook>;
  readonly hostname: string;
  readonly datapathType?: string;
  readonly monitorAll?: boolean;
  readonly log?: (level: LogLevel, message: string) => void;
  readonly localOptions?: Partial<Pick<LocalAgentOptions, 'resendMs' | 'now' | 'internalVersion'>>;
  /** How many SB rows are held while ovn-match-northd-version's gate is closed before a resync is due instead. */
  readonly heldChangesMax?: number;
}

type PendingAck = { readonly revision: number; readonly nbCfg: number };

/** The later of two acks due (by revision). */
function laterAck(a: PendingAck | undefined, b: PendingAck | undefined): PendingAck | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return a.revision >= b.revision ? a : b;
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
  /** The integration bridge, and the zones last read from or written to its external_ids. */
  private bridge: string | undefined;
  private persistedZones = new Map<string, number>();
  /** SB updates not given to the flow side while ovn-match-northd-version's gate is closed. */
  private held: HeldUpdates | undefined;
  /**
   * The last revision delivered and not acknowledged because the flow side did not install it
   * (the gate is closed, or it waits before its first install): acknowledged by the next apply
   * that installs in full.
   */
  private pendingAck: { readonly revision: number; readonly nbCfg: number } | undefined;
  /** The apply due when the flow side's wait before its first install ends. */
  private waitTimer: NodeJS.Timeout | undefined;
  private waitUntilMs: number | undefined;
  /** A resync was asked for (too much held): updates wait for the reset it brings. */
  private resyncPending = false;
  private offConfig: (() => void) | undefined;
  private offGate: (() => void) | undefined;
  private stopping = false;
  /** Set while paused (debug/pause): SB updates and flow-side work wait until it is released. */
  private pausedGate: { readonly until: Promise<void>; readonly release: () => void } | undefined;

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

  /** A migrating port's VM sent its RARP here (activation-strategy=rarp; LocalAgent.activate). */
  activate(port: string): void {
    this.local.activate(port);
  }

  /** The source's connection state as last reported. */
  get state(): SbSourceState | undefined {
    return this.sourceState;
  }

  /** The flow side, once open (undefined before, and with none). */
  get flowSide(): FlowHook | undefined {
    return this.flows;
  }

  get paused(): boolean {
    return this.pausedGate !== undefined;
  }

  /**
   * ovn-controller's debug/pause: nothing is processed until resume(). SB updates wait (the
   * source holds the ones that follow, within its bounds), no flow is computed or installed, no
   * revision acknowledged, and the local side makes no pass (no port claimed or released).
   * Packet-ins are still answered, as ovn-controller's pinctrl thread answers them.
   */
  pause(): void {
    if (this.pausedGate !== undefined) return;
    let release = (): void => undefined;
    const until = new Promise<void>((resolve) => {
      release = resolve;
    });
    this.pausedGate = { until, release };
    this.local.pause();
  }

  /** debug/resume: what waited goes on. */
  resume(): void {
    const gate = this.pausedGate;
    if (gate === undefined) return;
    this.pausedGate = undefined;
    gate.release();
    this.local.resume();
  }

  /**
   * ovn-controller's `recompute`: the flow side computes every flow again and installs the
   * difference. Resolves once that is installed, or at once while paused (it runs on resume)
   * and without a flow side.
   */
  async recompute(): Promise<void> {
    const flows = this.flows;
    if (flows?.forceRecompute === undefined) return;
    flows.forceRecompute();
    const done = this.enqueue(null, undefined);
    if (!this.paused) await done;
  }

  /**
   * ovn-controller's sb-cluster-state-reset: the SB source starts over, and the reset it
   * delivers recomputes every flow. False when the source cannot.
   */
  resync(): boolean {
    const source = this.options.source;
    if (source.resync === undefined) return false;
    source.resync();
    return true;
  }

  /** Resolves once not paused. */
  private async whileRunning(): Promise<void> {
    while (this.pausedGate !== undefined) await this.pausedGate.until;
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
      this.bridge = bridge;
      this.persistedZones = persistedCtZones(this.bridgeRow()?.external_ids as ReadonlyMap<string, string> | undefined);
      this.flows = await this.options.openFlows(bridge, this.persistedZones);
      this.log('info', `flow side connected to ${bridge}${this.persistedZones.size > 0 ? ` (${this.persistedZones.size} ct zones kept from before)` : ''}`);
    }
    if (this.flows === undefined) this.log('warn', 'no flow side: ports are claimed but not marked up, and no revision is acknowledged');
    // The tunables the source and the flow side apply themselves, now and on every change.
    this.configure(this.local.config ?? config);
    this.offConfig = this.local.onConfigChange((c) => this.configure(c));
    // The gate opening without an SB update (the key turned off): what was held goes in now.
    this.offGate = this.local.onGateChange((gate) => {
      if (gate.kind === 'open') this.releaseHeld();
    });
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
      if (this.flows !== undefined) void this.enqueue(null, undefined);
    });
    this.options.source.start(hello, (u) => this.onUpdate(u), (s) => {
      this.sourceState = s;
      this.log(s.state === 'connected' ? 'info' : 'warn', s.state === 'connected' ? `SB source connected to ${s.endpoint}${s.resumedBy === undefined ? '' : ` (resumed by ${s.resumedBy})`}` : `SB source disconnected from ${s.endpoint}: ${s.reason}`);
    });
  }

  /** Stops; with cleanup, first releases this chassis's ports and unregisters it (--cleanup). */
  async stop(cleanup: boolean): Promise<void> {
    this.offView?.();
    this.offConfig?.();
    this.offGate?.();
    this.stopping = true;
    clearTimeout(this.waitTimer);
    // Work held by a pause finishes (the local side stays paused: it is stopping).
    const gate = this.pausedGate;
    this.pausedGate = undefined;
    gate?.release();
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

  private bridgeRow(): Row | undefined {
    if (this.bridge === undefined) return undefined;
    return bridgeByName((t) => this.options.ovs.table(t), this.bridge) as unknown as Row | undefined;
  }

  /** Writes the zones in force to the bridge when they differ from what it holds. */
  private async persistZones(flows: FlowHook): Promise<void> {
    if (flows.ctZones === undefined) return;
    const br = this.bridgeRow();
    if (br === undefined) return;
    const zones = flows.ctZones();
    const ops = ctZoneOps(br._uuid, this.persistedZones, zones);
    if (ops === undefined) return;
    try {
      const results = await this.options.ovs.transact(ops);
      const failed = results.find((r) => r !== null && typeof r === 'object' && 'error' in r);
      if (failed !== undefined) throw new Error(JSON.stringify(failed));
      this.persistedZones = new Map(zones);
    } catch (err) {
      // Kept for the next install: the zones stay in force here, only a restart would lose them.
      this.log('warn', `could not save ct zones in ${this.bridge ?? 'the bridge'}: ${(err as Error).message}`);
    }
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

  /** Hands the tunables to the parts that apply them: the SB source's probe, the flow side's own. */
  private configure(config: ChassisConfig): void {
    this.options.source.setProbeIntervalMs?.(config.remoteProbeIntervalMs);
    this.flows?.configure?.(config);
  }

  private async onUpdate(u: SbUpdate): Promise<void> {
    await this.whileRunning();
    this.local.applySbUpdate(u);
    this.trackNbCfg(u);
    const nbCfg = this.nbCfg;
    if (this.flows === undefined) return;
    if (this.local.northdGate.kind === 'closed') {
      // ovn-controller keeps reading the SB while the versions differ and computes nothing: the
      // update waits, coalesced with the others, and is not acknowledged (--wait=hv waits too).
      this.hold(u);
      this.pendingAck = { revision: u.toRevision, nbCfg };
      return;
    }
    if (this.resyncPending) {
      // Asked for the whole view: what comes before it is superseded by it.
      this.pendingAck = { revision: u.toRevision, nbCfg };
      if (!u.reset) return;
      this.resyncPending = false;
    }
    const held = this.held;
    this.held = undefined;
    if (held !== undefined) {
      held.add(u);
      await this.applyReleased(held, { revision: u.toRevision, nbCfg });
      return;
    }
    await this.enqueue(u, { revision: u.toRevision, nbCfg });
  }

  private hold(u: SbUpdate): void {
    // A reset held is the whole view a resync asked for.
    if (u.reset) this.resyncPending = false;
    if (this.held === undefined) this.held = new HeldUpdates(u, this.options.heldChangesMax);
    else this.held.add(u);
  }

  /** The gate opened: what was held goes to the flow side (it was already read by the local side). */
  private releaseHeld(): void {
    const held = this.held;
    if (held === undefined || this.flows === undefined || this.local.northdGate.kind === 'closed') return;
    this.held = undefined;
    void this.applyReleased(held, this.pendingAck);
  }

  /**
   * Applies what was held with a full recompute (ovn-controller recomputes everything once the
   * versions match again); too much held to keep: the source sends the whole view again instead.
   */
  private applyReleased(held: HeldUpdates, ack: { revision: number; nbCfg: number } | undefined): Promise<readonly string[]> {
    const flows = this.flows as FlowHook;
    flows.forceRecompute?.();
    const source = this.options.source;
    if (held.overflowed && source.resync !== undefined) {
      this.log('info', `the SB changes held while the northd version differed were too many: asking for the whole view again (revision ${held.toRevision})`);
      // The flow side's rows are too old to install anything from: the reset the source sends
      // next is applied in full and acknowledges what is pending.
      this.resyncPending = true;
      source.resync();
      return Promise.resolve([]);
    }
    return this.enqueue(held.update(), ack);
  }

  /** Applies again when the flow side's wait before its first install ends (one timer). */
  private wakeAt(untilMs: number): void {
    if (this.stopping || this.waitUntilMs === untilMs) return;
    clearTimeout(this.waitTimer);
    this.waitUntilMs = untilMs;
    const now = this.options.localOptions?.now?.() ?? Date.now();
    this.waitTimer = setTimeout(() => {
      this.waitTimer = undefined;
      this.waitUntilMs = undefined;
      if (!this.stopping && this.flows !== undefined) void this.enqueue(null, undefined);
    }, Math.max(0, untilMs - now));
  }

  /**
   * Runs one flow-side apply after the ones queued before it, and acknowledges `ack` (or a
   * revision left unacknowledged before) once installed: in the chain, so acks go out in order.
   * Resolves with its errors. While the gate is closed a view change (null) waits too.
   */
  private enqueue(u: SbUpdate | null, ack: { revision: number; nbCfg: number } | undefined): Promise<readonly string[]> {
    const flows = this.flows as FlowHook;
    const run = this.chain.then(async () => {
      await this.whileRunning();
      if (u === null && this.local.northdGate.kind === 'closed') return [];
      const view = this.local.view;
      const r = await flows.apply(u, view);
      this.local.markInstalled(r.installedPorts, view);
      for (const e of r.errors) this.log('warn', e);
      await this.persistZones(flows);
      // A revision left pending is installed now unless it is held (the gate) or superseded (a resync).
      const due = ack ?? (this.held === undefined && !this.resyncPending ? this.pendingAck : undefined);
      if (r.waitingUntilMs !== undefined) {
        this.pendingAck = laterAck(due, this.pendingAck);
        this.wakeAt(r.waitingUntilMs);
        return r.errors;
      }
      // A revision held since (the gate closed meanwhile) stays pending: it is not installed.
      if (this.pendingAck !== undefined && due !== undefined && this.pendingAck.revision <= due.revision) this.pendingAck = undefined;
      if (due !== undefined) this.options.source.ack(due.revision, due.nbCfg, r.errors.length > 0 ? r.errors.join('; ') : undefined);
      return r.errors;
    });
    this.chain = run.then(() => undefined);
    return run;
  }
}
