// The agent's local side, the imperative shell around the planners of agent/local/: it watches
// the Open_vSwitch database (through an OvsdbClient replica) and the Southbound rows the
// runtime hands it, and after every change runs one reconcile pass:
//   1. read the chassis configuration from the Open_vSwitch row;
//   2. create or fix the integration bridge; then stop there while ovn-match-northd-version
//      holds everything (northd-version.ts);
//   3. register or update this chassis in the SB (Chassis, Encap, Chassis_Private);
//   4. add and remove tunnel ports and localnet patch ports, and run BFD on the tunnels to the
//      chassis that share an HA group with this one (bfd.ts);
//   5. rebuild the LocalView and tell the flow side if it changed;
//   6. make the port mirrors that the VIFs bound here name (mirrors.ts);
//   7. claim, release and mark up the logical ports, in the SB and on the interfaces (VIFs and
//      l3gateway ports by binding.ts, virtual ports after their parents by virtual-binding.ts).
// Every step is a pure planner's output sent as a transaction; the pass never waits for its own
// writes to come back: the next change runs the next pass. A write that was just sent is not
// sent again until the SB or OVS shows something new about it or `resendMs` passed, and a failed
// one is logged and retried after `resendMs`.
import type { OvsdbClient } from '../../ovsdb/client.js';
import { transactionError } from '../../ovsdb/client.js';
import type * as sb from '../../ovsdb/rows/sb.js';
import type { LocalView } from '../local-view.js';
import { emptyLocalView } from '../local-view.js';
import type { SbUpdate } from '../sb-source.js';
import type { BindingChassis, BindingState, IfaceIdVerMismatch } from './binding.js';
import { bindingOvsOps, bindingSbOps, decideBindings, initialBindingState, isContainerPort, markInstalled } from './binding.js';
import { chassisCleanupOps, chassisRecordOps } from './chassis-record.js';
import { bridgeDatapathOps, integrationBridgeOps, wantedDatapathType } from './integration-bridge.js';
import { buildLocalView, localViewsEqual } from './local-view-builder.js';
import type { ChassisConfig } from './ovs-config.js';
import { readChassisConfig } from './ovs-config.js';
import type { OpGroup, OpJson } from './ovsdb-json.js';
import { setJson, uuidJson } from './ovsdb-json.js';
import type { OvsTables } from './ovs-rows.js';
import { bridgeByName, openVswitchRow, portsOf, removePortOps } from './ovs-rows.js';
import { localDatapaths, localnetPortsOf, patchPortOps } from './patch-ports.js';
import { SbRows } from './sb-rows.js';
import { decideVirtualBindings, virtualBindingSbOps } from './virtual-binding.js';
import { CHASSIS_ID_KEY, desiredTunnels, tunnelOps } from './tunnels.js';
import { bfdChassis, bfdOps, bfdSettings } from './bfd.js';
import { mirrorOps, mirroredVifs } from './mirrors.js';
import type { NorthdVersionGate } from './northd-version.js';
import { AGENT_INTERNAL_VERSION, gateMessage, northdVersionGate } from './northd-version.js';

export type LogLevel = 'info' | 'warn' | 'error';

export interface LocalAgentOptions {
  /** A client monitoring OVS_MONITOR (agent/local/ovs-rows.ts); the agent starts it. */
  readonly ovs: OvsdbClient;
  /** Chassis-side SB transactions (SbSource.transact). */
  readonly sbTransact: (ops: readonly unknown[]) => Promise<unknown[]>;
  /** The host's name, used when external_ids:hostname is not set. */
  readonly hostname: string;
  /** The integration bridge's datapath type; overrides external_ids:ovn-bridge-datapath-type. */
  readonly datapathType?: string;
  /** How long a sent write is trusted to be on its way before it is sent again. */
  readonly resendMs?: number;
  readonly now?: () => number;
  readonly log?: (level: LogLevel, message: string) => void;
  /** This agent's version for ovn-match-northd-version (default AGENT_INTERNAL_VERSION; tests pretend to be another). */
  readonly internalVersion?: string;
}

export const localAgentDefaults = { resendMs: 3_000 } as const;

const OPEN_GATE: NorthdVersionGate = { kind: 'open' };

/** The configuration keys that other parts of the agent apply (onConfigChange), as one string. */
function tunablesKey(c: ChassisConfig): string {
  return [c.remoteProbeIntervalMs, c.openflowProbeIntervalSec, c.matchNorthdVersion, c.ofctrlWaitBeforeClearMs, c.garpMaxTimeoutSec].join('|');
}

/** The columns of a Port_Binding this chassis writes, as one comparable string. */
function ownedKey(pb: sb.Port_Binding): string {
  return `${pb.chassis.join(',')}|${pb.up.join(',')}|${pb.encap.join(',')}|${pb.additional_chassis.join(',')}|${pb.additional_encap.join(',')}`;
}

export class LocalAgent {
  private readonly sb = new SbRows();
  private readonly now: () => number;
  private readonly resendMs: number;
  private readonly log: (level: LogLevel, message: string) => void;
  private viewValue: LocalView = emptyLocalView('');
  private configValue: ChassisConfig | undefined;
  private bindings: BindingState = initialBindingState();
  private readonly viewListeners = new Set<(v: LocalView) => void>();
  private readonly configListeners = new Set<(c: ChassisConfig) => void>();
  private readonly gateListeners = new Set<(g: NorthdVersionGate) => void>();
  /** The tunables of the last configuration read (tunablesKey), for onConfigChange. */
  private lastTunables = '';
  /** The gate as the last pass found it, and its log line. */
  private gateValue: NorthdVersionGate = OPEN_GATE;
  private gateLogged = '';
  private readonly idleWaiters = new Set<() => void>();
  private readonly configWaiters = new Set<(c: ChassisConfig) => void>();
  private readonly bridgeWaiters = new Set<(name: string) => void>();
  /** Write groups sent recently: key → when. */
  private readonly sent = new Map<string, number>();
  /** Ports with an SB write in flight: port → (its owned columns when sent, when). */
  private readonly inflight = new Map<string, { key: string; atMs: number }>();
  /** Migrating ports activated here by their VM's RARP (activation-strategy=rarp), by name. */
  private readonly activated = new Set<string>();
  private dirty = false;
  private running = false;
  private stopped = false;
  /** Paused (debug/pause): changes are noted, no pass runs until resume(). */
  private paused = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private lastProblem = '';
  private mirrorProblems: ReadonlySet<string> = new Set();
  private ifaceIdVerProblems: ReadonlySet<string> = new Set();
  private offOvs: (() => void) | undefined;

  constructor(private readonly options: LocalAgentOptions) {
    this.now = options.now ?? Date.now;
    this.resendMs = options.resendMs ?? localAgentDefaults.resendMs;
    this.log = options.log ?? ((level, message) => process.stderr.write(`agent ${level}: ${message}\n`));
  }

  start(): void {
    this.offOvs = this.options.ovs.onChange(() => this.schedule());
    this.options.ovs.start();
    this.schedule();
  }

  /** The LocalView as of the last pass. */
  get view(): LocalView {
    return this.viewValue;
  }

  /** The chassis configuration as of the last pass (undefined while incomplete). */
  get config(): ChassisConfig | undefined {
    return this.configValue;
  }

  /** The SB rows this side holds (read-only use). */
  get sbRows(): SbRows {
    return this.sb;
  }

  /** Resolves with the chassis configuration once the Open_vSwitch row has a complete one. */
  whenConfigured(): Promise<ChassisConfig> {
    if (this.configValue !== undefined) return Promise.resolve(this.configValue);
    return new Promise((resolve) => this.configWaiters.add(resolve));
  }

  /** Resolves with the integration bridge's name once it exists in the Open_vSwitch database. */
  whenBridgeReady(): Promise<string> {
    return new Promise((resolve) => {
      this.bridgeWaiters.add(resolve);
      this.schedule();
    });
  }

  /**
   * Calls `listener` with the configuration after every pass that read one whose tunables (the
   * probe intervals, ovn-match-northd-version, wait-before-clear, the GARP cap) differ from the
   * last pass's, and with the first.
   */
  onConfigChange(listener: (config: ChassisConfig) => void): () => void {
    this.configListeners.add(listener);
    return () => this.configListeners.delete(listener);
  }

  /**
   * ovn-match-northd-version's gate as of now (the configuration of the last pass, the SB_Global
   * row held now): closed, nothing is processed here and the runtime holds the flow side back.
   */
  get northdGate(): NorthdVersionGate {
    if (!this.sb.ready) return OPEN_GATE;
    return northdVersionGate(this.configValue?.matchNorthdVersion ?? false, this.sb.sbGlobal(), this.options.internalVersion ?? AGENT_INTERNAL_VERSION);
  }

  /** Calls `listener` after every pass in which the gate opened or closed. */
  onGateChange(listener: (gate: NorthdVersionGate) => void): () => void {
    this.gateListeners.add(listener);
    return () => this.gateListeners.delete(listener);
  }

  /** Calls `listener` with every new LocalView (after the pass that built it). */
  onViewChange(listener: (view: LocalView) => void): () => void {
    this.viewListeners.add(listener);
    return () => this.viewListeners.delete(listener);
  }

  /** Folds one SB update in; a pass follows if it touched what this side reads. */
  applySbUpdate(u: SbUpdate): void {
    if (this.sb.apply(u)) this.schedule();
  }

  /**
   * The runtime installed the flows of these logical ports, computed from `view` (after its
   * barrier). A port's up and ovn-installed follow once it is still bound here through the
   * OpenFlow port it had in `view` (a container port: its parent's).
   */
  markInstalled(ports: Iterable<string>, view: LocalView): void {
    let changed = false;
    for (const port of ports) {
      // A container port's flows are on its parent's OpenFlow port.
      const pb = this.sb.portBinding(port);
      const ofport = view.vifs.get(pb !== undefined && isContainerPort(pb) ? (pb.parent_port[0] as string) : port);
      if (ofport === undefined) continue;
      const next = markInstalled(this.bindings, port, ofport);
      if (next !== this.bindings) changed = true;
      this.bindings = next;
    }
    if (changed) this.schedule();
  }

  /**
   * A migrating port's VM sent its RARP here (activation-strategy=rarp): its traffic flows from
   * now on, and options:additional-chassis-activated gets this chassis.
   */
  activate(port: string): void {
    if (this.activated.has(port)) return;
    this.activated.add(port);
    this.schedule();
  }

  /**
   * The SB writes that record the ports activated here, as ovn-controller's pinctrl writes them
   * (this chassis appended to the key); a port the SB shows activated here, or no longer has
   * this chassis as an additional one, leaves the set.
   */
  private activationWrites(name: string, us: string | undefined): { port: string; op: OpJson }[] {
    const out: { port: string; op: OpJson }[] = [];
    for (const port of [...this.activated].sort()) {
      const pb = this.sb.portBinding(port);
      const was = pb?.options.get('additional-chassis-activated');
      if (pb === undefined || us === undefined || !pb.additional_chassis.includes(us) || (was ?? '').split(',').includes(name)) {
        this.activated.delete(port);
        continue;
      }
      out.push({
        port,
        op: {
          op: 'mutate', table: 'Port_Binding', where: [['_uuid', '==', uuidJson(pb._uuid)]], mutations: [
            ['options', 'delete', setJson(['additional-chassis-activated'])],
            ['options', 'insert', ['map', [['additional-chassis-activated', was === undefined ? name : `${was},${name}`]]]],
          ],
        },
      });
    }
    return out;
  }

  /** No pass runs until resume() (the one running, if any, finishes). */
  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
    if (this.dirty) this.schedule();
  }

  /** Resolves once a pass has run with nothing left to do right now. */
  whenIdle(): Promise<void> {
    if (!this.running && !this.dirty) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.add(resolve));
  }

  /**
   * What `--cleanup` does on exit, as ovn-controller's exit path: releases every port bound
   * here, deletes this chassis's SB rows, and removes the tunnel ports from the integration
   * bridge; also the OVN port mirrors and their output ports, which ovn-controller leaves (with
   * no port bound here, none is wanted: what a pass would do after the release). Throws when a
   * write fails (the caller reports it; nothing half-done is hidden).
   */
  async cleanup(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    await this.whenIdleAfterStop();
    const config = this.configValue;
    if (config === undefined) return;
    const us = this.sb.chassisByName(config.systemId)?._uuid;
    const ops: OpJson[] = [];
    if (us !== undefined) {
      for (const pb of this.sb.rows<sb.Port_Binding>('Port_Binding').values()) {
        if (pb.chassis[0] !== us) continue;
        ops.push({ op: 'update', table: 'Port_Binding', where: [['_uuid', '==', uuidJson(pb._uuid)], ['chassis', '==', uuidJson(us)]], row: { chassis: setJson([]), up: false, encap: setJson([]) } });
      }
    }
    const unregister = chassisCleanupOps(config.systemId, this.sb);
    if (unregister !== undefined) ops.push(...unregister.ops);
    if (ops.length > 0) {
      const results = await this.options.sbTransact(ops);
      const err = transactionError(ops, results);
      if (err !== undefined) throw new Error(`cleanup of chassis ${config.systemId} in the SB failed: ${err.message}`);
    }
    const tables = this.tables();
    const br = bridgeByName(tables, config.integrationBridge);
    if (br !== undefined && this.options.ovs.isSynced) {
      const mirrors = mirrorOps(tables, br, [], []);
      const ovsOps = [
        ...portsOf(tables, br).filter((p) => p.external_ids.has(CHASSIS_ID_KEY)).flatMap((p) => removePortOps(br, p)),
        ...mirrors.groups.flatMap((g) => g.ops),
      ];
      if (ovsOps.length > 0) {
        const results = await this.options.ovs.transact(ovsOps);
        const err = transactionError(ovsOps, results);
        if (err !== undefined) throw new Error(`removing tunnel ports and mirrors from ${config.integrationBridge} failed: ${err.message}`);
      }
    }
  }

  /** Stops reconciling (the OVS client stays open: its owner closes it). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    this.offOvs?.();
    await this.whenIdleAfterStop();
  }

  private async whenIdleAfterStop(): Promise<void> {
    if (this.running) await new Promise<void>((resolve) => this.idleWaiters.add(resolve));
  }

  private schedule(): void {
    this.dirty = true;
    if (!this.running && !this.stopped && !this.paused) void this.loop();
  }

  private async loop(): Promise<void> {
    this.running = true;
    try {
      while (this.dirty && !this.stopped && !this.paused) {
        this.dirty = false;
        await this.reconcile();
      }
    } finally {
      this.running = false;
      for (const w of [...this.idleWaiters]) w();
      this.idleWaiters.clear();
    }
  }

  /** Runs a pass again after `ms`, for writes held back or failed. */
  private retryIn(ms: number): void {
    if (this.retryTimer !== undefined || this.stopped) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.schedule();
    }, ms);
    this.retryTimer.unref();
  }

  private tables(): OvsTables {
    const ovs = this.options.ovs;
    return (t) => ovs.table(t);
  }

  private problem(message: string): void {
    if (message === this.lastProblem) return;
    this.lastProblem = message;
    if (message !== '') this.log('warn', message);
  }

  /** Logs each mirror problem once, when it appears (a pass runs on every change). */
  private noteMirrorProblems(problems: readonly string[]): void {
    const now = new Set(problems);
    for (const p of now) if (!this.mirrorProblems.has(p)) this.log('warn', p);
    this.mirrorProblems = now;
  }

  /** Records the gate; a change is logged and told to the listeners. */
  private noteGate(gate: NorthdVersionGate): NorthdVersionGate {
    const was = this.gateValue;
    this.gateValue = gate;
    const message = gateMessage(gate);
    if (gate.kind === 'closed' ? message !== this.gateLogged : was.kind === 'closed') this.log(gate.kind === 'closed' ? 'warn' : 'info', message);
    this.gateLogged = gate.kind === 'closed' ? message : '';
    if (gate.kind !== was.kind) for (const l of [...this.gateListeners]) l(gate);
    return gate;
  }

  /** Logs each iface-id-ver mismatch once, when it appears (as ovn-controller, rate-limited, at info). */
  private noteIfaceIdVerMismatches(mismatches: readonly IfaceIdVerMismatch[]): void {
    const now = new Set<string>();
    for (const m of mismatches) {
      const text = `not binding ${m.port}: its iface-id-ver is ${m.expected}, its interface's ${m.found ?? '<empty>'}`;
      now.add(text);
      if (!this.ifaceIdVerProblems.has(text)) this.log('info', text);
    }
    this.ifaceIdVerProblems = now;
  }

  private setView(view: LocalView): void {
    if (localViewsEqual(view, this.viewValue)) return;
    this.viewValue = view;
    for (const l of this.viewListeners) l(view);
  }

  /** Whether a group with this key went out less than resendMs ago (then it is not resent). */
  private recentlySent(key: string): boolean {
    const at = this.sent.get(key);
    const now = this.now();
    if (at !== undefined && now - at < this.resendMs) {
      this.retryIn(this.resendMs - (now - at) + 1);
      return true;
    }
    return false;
  }

  private async send(where: 'sb' | 'ovs', groups: readonly OpGroup[]): Promise<void> {
    const fresh = groups.filter((g) => !this.recentlySent(`${where}:${JSON.stringify(g.ops)}`));
    await Promise.all(fresh.map((g) => {
      this.sent.set(`${where}:${JSON.stringify(g.ops)}`, this.now());
      return this.sendNow(where, g);
    }));
    this.pruneSent();
  }

  private pruneSent(): void {
    const now = this.now();
    for (const [k, at] of this.sent) if (now - at >= this.resendMs) this.sent.delete(k);
  }

  private async reconcile(): Promise<void> {
    const ovs = this.options.ovs;
    if (!ovs.isSynced) return;
    const tables = this.tables();
    const read = readChassisConfig(openVswitchRow(tables), this.options.hostname);
    if (read.kind !== 'ok') {
      this.problem(`not registering: ${read.reason}`);
      this.configValue = undefined;
      this.setView(emptyLocalView(''));
      return;
    }
    const config = read.config;
    this.problem(config.warnings.join('; '));
    this.configValue = config;
    for (const w of [...this.configWaiters]) w(config);
    this.configWaiters.clear();
    const tunables = tunablesKey(config);
    if (tunables !== this.lastTunables) {
      this.lastTunables = tunables;
      for (const l of [...this.configListeners]) l(config);
    }

    // 2. The integration bridge; the rest waits until it exists.
    let br = bridgeByName(tables, config.integrationBridge);
    const datapathType = wantedDatapathType(this.options.datapathType, config.bridgeDatapathType, br?.datapath_type);
    const brOps = integrationBridgeOps(tables, config.systemId, config.integrationBridge, datapathType);
    if (brOps !== undefined) await this.send('ovs', [brOps]);
    const dpOps = bridgeDatapathOps(tables, datapathType);
    if (dpOps !== undefined) await this.send('ovs', [dpOps]);
    br = bridgeByName(tables, config.integrationBridge);
    if (br === undefined) {
      this.setView(emptyLocalView(config.systemId));
      return;
    }
    for (const w of [...this.bridgeWaiters]) w(br.name);
    this.bridgeWaiters.clear();

    // ovn-match-northd-version: like ovn-controller, which makes its integration bridge whatever
    // the versions say and then stops, nothing more while they differ (no chassis update, no
    // tunnel, no claim or release, no new LocalView).
    if (this.noteGate(this.northdGate).kind === 'closed') return;

    // 3. This chassis in the SB, once the SB rows arrived (so an existing record is known).
    const sbReady = this.sb.ready;
    if (sbReady) {
      const rec = chassisRecordOps(config, br.datapath_type, this.sb);
      if (rec !== undefined) await this.send('sb', [rec]);
    }
    const us: sb.Chassis | undefined = sbReady ? this.sb.chassisByName(config.systemId) : undefined;
    // Only the bindings a pass can act on (SbRows.portBindingsFor): for the local datapaths,
    // every patch and localnet port and those bound here.
    const localPorts = this.sb.portBindingsFor(us?._uuid, []);

    // 4. Tunnels and localnet patch ports. Without SB rows there is nothing to compare with,
    // and removing what exists would only disturb a restarted agent's dataplane.
    const locals = localDatapaths(localPorts, us?._uuid);
    const localnet = localnetPortsOf(localPorts, locals);
    if (sbReady) {
      const tunnels = tunnelOps(tables, br, desiredTunnels(config, { chassis: this.sb.rows<sb.Chassis>('Chassis').values(), encap: (u) => this.sb.encap(u) }));
      const patches = patchPortOps(tables, br, config.bridgeMappings, localnet);
      if (patches.missingBridges.length > 0) this.problem(`no bridge for the ovn-bridge-mappings of network(s) ${patches.missingBridges.join(', ')}`);
      // BFD on the tunnels as they are now (a tunnel just added gets it in a later pass).
      const bfd = bfdOps(tables, br, bfdChassis(this.sb, this.sb.rows<sb.HA_Chassis_Group>('HA_Chassis_Group').values(), us?._uuid), bfdSettings(this.sb.sbGlobal()));
      await this.send('ovs', [...tunnels, ...patches.groups, ...bfd]);
    }

    // 5. The LocalView, from the replica as it is now (the writes above show up in a later pass),
    // with the ports activated here that the SB does not show activated yet.
    const built = buildLocalView(config.systemId, tables, bridgeByName(tables, config.integrationBridge), new Map(localnet.map((l) => [l.logicalPort, l.network])));
    for (const c of built.conflicts) this.problem(c);
    const activation = sbReady ? this.activationWrites(config.systemId, us?._uuid) : [];
    this.setView(this.activated.size === 0 ? built.view : { ...built.view, activatedPorts: new Set(this.activated) });
    if (!sbReady) return;
    // Resent after resendMs until the SB shows it (send holds back a repeat until then).
    if (activation.length > 0) await this.send('sb', [{ what: `activated by RARP: ${activation.map((a) => a.port).join(', ')}`, ops: activation.map((a) => a.op) }]);

    // 6. Port mirrors, for the VIFs bound here as the SB shows them now (a claim in flight
    // counts once it is there), on the bridge as the replica has it now (the writes above were
    // awaited). Without SB mirrors and mirrors on the bridge there is nothing to compare.
    const brNow = bridgeByName(tables, config.integrationBridge);
    const sbMirrors = this.sb.rows<sb.Mirror>('Mirror');
    if (brNow !== undefined && (sbMirrors.size > 0 || brNow.mirrors.length > 0)) {
      const mirrors = mirrorOps(tables, brNow, sbMirrors.values(), mirroredVifs(tables, brNow, built.ifaces, (name) => this.sb.portBinding(name), us?._uuid));
      this.noteMirrorProblems(mirrors.problems);
      if (mirrors.groups.length > 0) await this.send('ovs', mirrors.groups);
    } else {
      this.noteMirrorProblems([]);
    }

    // 7. Port bindings.
    const encapByIp = new Map<string, string>();
    for (const u of us?.encaps ?? []) {
      const e = this.sb.encap(u);
      if (e !== undefined && !encapByIp.has(e.ip)) encapByIp.set(e.ip, u);
    }
    const chassis: BindingChassis = { name: config.systemId, hostname: config.hostname, uuid: us?._uuid, encapByIp };
    const now = this.now();
    const inflight = new Set<string>();
    for (const [port, f] of this.inflight) {
      const pb = this.sb.portBinding(port);
      if (pb !== undefined && ownedKey(pb) === f.key && now - f.atMs < this.resendMs) {
        inflight.add(port);
        this.retryIn(this.resendMs - (now - f.atMs) + 1);
      } else {
        this.inflight.delete(port);
      }
    }
    // For the bindings, also the ports the local interfaces name and those with a write in flight.
    const portBindings = this.sb.portBindingsFor(us?._uuid, [...built.ifaces.keys(), ...inflight]);
    const decided = decideBindings(this.bindings, { chassis, ifaces: built.ifaces, portBindings, inflight, ha: this.sb, activeTunnels: built.view.activeTunnels });
    this.bindings = decided.state;
    this.noteIfaceIdVerMismatches(decided.mismatches);
    const virtual = decideVirtualBindings({ chassis, ifaces: built.ifaces, portBindings, inflight });
    if (decided.actions.length === 0 && virtual.length === 0) return;
    const sbOps = us === undefined ? [] : [...bindingSbOps(decided.actions, us._uuid), ...virtualBindingSbOps(virtual, us._uuid)];
    for (const { port } of sbOps) {
      const pb = this.sb.portBinding(port);
      if (pb !== undefined) this.inflight.set(port, { key: ownedKey(pb), atMs: now });
    }
    const what = [...decided.actions, ...virtual.map((a) => ({ kind: `${a.kind} virtual`, port: a.port }))].map((a) => `${a.kind} ${a.port}`).join(', ');
    const groups: Promise<void>[] = [];
    if (sbOps.length > 0) groups.push(this.sendNow('sb', { what: `port bindings: ${what}`, ops: sbOps.map((o) => o.op) }));
    const ovsOps = bindingOvsOps(decided.actions, now).filter((o) => !this.recentlySent(`ovs:${o.key}`));
    for (const o of ovsOps) this.sent.set(`ovs:${o.key}`, now);
    if (ovsOps.length > 0) groups.push(this.sendNow('ovs', { what: `interface marks: ${ovsOps.map((o) => o.port).join(', ')}`, ops: ovsOps.map((o) => o.op) }));
    await Promise.all(groups);
  }

  /**
   * Sends one group without the resend filter (its caller tracks what is in flight); a refusal
   * or a failure is logged and retried after resendMs.
   */
  private async sendNow(where: 'sb' | 'ovs', g: OpGroup): Promise<void> {
    try {
      const results = where === 'sb' ? await this.options.sbTransact(g.ops) : await this.options.ovs.transact(g.ops);
      const err = transactionError(g.ops, results);
      if (err === undefined) this.log('info', g.what);
      else {
        this.log('warn', `${g.what}: ${err.message}`);
        this.retryIn(this.resendMs);
      }
    } catch (err) {
      this.log('warn', `${g.what}: ${(err as Error).message}`);
      this.retryIn(this.resendMs);
    }
  }
}
