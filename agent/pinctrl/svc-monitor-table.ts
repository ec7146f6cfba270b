// The load balancer health checks this chassis runs (ovn-controller's svc_monitors), as a pure
// state machine: SB Service_Monitor rows in (sync), probe packet-outs and status changes out
// (run, onReply). No I/O and no clock: the caller passes the time in and sends what comes out;
// randomness (TCP sequence numbers, source ports) comes from the injected `random`.
//
// One monitor per (datapath, port, backend IP, backend port, protocol), as ovn-controller keys
// them. Options as in 23.03: interval (s, default 5), timeout (s, default 3), success_count and
// failure_count (default 1), read as smap_get_int reads them (a value that is not an integer is
// the default). A monitor's state and counters survive an options change. Its life:
//
//   init     → send a probe, waiting.
//   waiting  → a reply decides (onReply): TCP SYN+ACK is a success (and an RST+ACK closes the
//              half-open connection), TCP RST a failure, ICMP port unreachable a UDP failure;
//              state online after a success, offline after a failure, next probe one interval
//              after the reply. Or the timeout passes (now > sent + timeout): a TCP failure, a
//              UDP success (a UDP service is taken to be up when nothing says it is not).
//   online   → if successes ≥ success_count: status online, successes = 0. Probe again once
//              the interval is over.
//   offline  → if failures ≥ failure_count: status offline, failures = 0. Probe again once
//              the interval is over.
//
// As in 23.03 the counters are not reset by the other outcome (with success_count 2, success,
// failure, success is online), a reply counts whatever the state (a late SYN+ACK too), and the
// count is applied on the next run: run() right after onReply() (ovn-controller runs its monitors
// in the same loop iteration as the packet-ins), else when the monitor's next probe is due. The
// status starts unknown and is not written until a count decides it.
//
// Bounded: at most monitorsMax monitors (rows past it are refused until others go) and at most
// probesInFlightMax probes waiting for an answer; a monitor whose probe is due while that many
// wait is deferred until one of them is answered or times out.

import assert from 'node:assert/strict';
import type { OfMessage } from '../openflow/messages.js';
import { TCP_FLAG, type Mac } from './packet.js';
import { composeTcpProbe, composeUdpProbe, ipText, probePacketOut, type IpAddr, type ProbeTarget, type SvcReply } from './svc-probe.js';

export type SvcProtocol = 'tcp' | 'udp';
export type SvcStatus = 'online' | 'offline';
export type SvcState = 'init' | 'waiting' | 'online' | 'offline';

/** One Service_Monitor row this chassis probes, with what the SB view says of its port. */
export interface SvcMonitorSpec {
  readonly uuid: string;
  /** The tunnel keys of the backend port's switch and of the port (bound to this chassis). */
  readonly dpKey: number;
  readonly portKey: number;
  readonly ip: IpAddr;
  readonly port: number;
  readonly protocol: SvcProtocol;
  /** The backend port's MAC for ip (Port_Binding.mac). */
  readonly dstMac: Mac;
  readonly srcMac: Mac;
  /** Service_Monitor.src_ip, of ip's family. */
  readonly srcIp: IpAddr;
  readonly options: ReadonlyMap<string, string>;
  /** Service_Monitor.status as the SB view has it now (absent: unset). */
  readonly sbStatus?: string;
}

export interface SvcMonitorLimits {
  /** Monitors at once (ovn-controller has no limit). */
  readonly monitorsMax: number;
  /** Probes sent and not yet answered or timed out. */
  readonly probesInFlightMax: number;
}

export const svcMonitorLimits: SvcMonitorLimits = { monitorsMax: 1000, probesInFlightMax: 100 };

/** 23.03's defaults for absent (or non-integer) options. */
export const svcMonitorDefaults = { intervalS: 5, timeoutS: 3, successCount: 1, failureCount: 1 } as const;

/** What a test or a log sees of one monitor. */
export interface SvcMonitorInfo {
  readonly key: string;
  readonly uuid: string;
  readonly protocol: SvcProtocol;
  readonly state: SvcState;
  /** Undefined until a count decides it. */
  readonly status: SvcStatus | undefined;
  readonly nSuccess: number;
  readonly nFailures: number;
  readonly intervalMs: number;
  readonly timeoutMs: number;
  readonly successCount: number;
  readonly failureCount: number;
  /** When the probe in flight times out (state waiting). */
  readonly waitUntilMs: number;
  /** When the next probe is due (states online and offline). */
  readonly nextSendMs: number;
  /** The source port of the last probe (0 before the first). */
  readonly srcPort: number;
}

interface Monitor {
  readonly key: string;
  uuid: string;
  readonly protocol: SvcProtocol;
  target: ProbeTarget;
  sbStatus: string | undefined;
  optionsText: string;
  intervalMs: number;
  timeoutMs: number;
  successCount: number;
  failureCount: number;
  state: SvcState;
  status: SvcStatus | undefined;
  nSuccess: number;
  nFailures: number;
  waitUntilMs: number;
  nextSendMs: number;
  seq: number;
  srcPort: number;
}

/** A status a run decided, for the SB. */
export interface SvcStatusChange {
  readonly uuid: string;
  readonly status: SvcStatus;
}

export interface SyncOutput {
  readonly added: number;
  /** The rows of the monitors that went (their pending writes are moot). */
  readonly removed: readonly string[];
  /** Monitors whose options or row changed. */
  readonly updated: number;
  /** Rows not monitored because monitorsMax monitors exist. */
  readonly refused: number;
}

export interface RunOutput {
  /** Probe packet-outs to send now, in order. */
  readonly probes: readonly OfMessage[];
  /** Statuses that changed in this run. */
  readonly changed: readonly SvcStatusChange[];
  /** Those of them the SB view does not show yet: to be written. */
  readonly writes: readonly SvcStatusChange[];
  /** When run() must be called next (Infinity: nothing to do until a sync or a reply). */
  readonly nextRunMs: number;
  /** Probes due but not sent because probesInFlightMax were waiting. */
  readonly deferred: number;
}

export type ReplyOutcome = 'success' | 'failure' | 'no_monitor' | 'not_ours' | 'not_decisive';

export interface ReplyOutput {
  readonly outcome: ReplyOutcome;
  /** Packets to send now (the RST+ACK that closes a successful TCP probe). */
  readonly packets: readonly OfMessage[];
  readonly key?: string;
}

export function monitorKey(dpKey: number, portKey: number, ip: string, port: number, protocol: SvcProtocol): string {
  return `${dpKey}/${portKey}/${ip}/${port}/${protocol}`;
}

/** smap_get_int: the option as a C int, or `def` when absent or not entirely an integer. */
export function optionInt(options: ReadonlyMap<string, string>, key: string, def: number): number {
  const text = options.get(key);
  if (text === undefined || !/^\s*[+-]?[0-9]+$/.test(text)) return def;
  const v = Number(text.trim());
  return Number.isSafeInteger(v) && v >= -0x80000000 && v <= 0x7fffffff ? v : def;
}

function optionsText(options: ReadonlyMap<string, string>): string {
  return JSON.stringify([...options].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

const TWO_32 = 0x1_0000_0000;
const SRC_PORT_MIN = 1024;

export class SvcMonitorTable {
  private readonly monitors = new Map<string, Monitor>();
  private readonly limits: SvcMonitorLimits;
  private readonly random: () => number;

  constructor(options: { readonly random: () => number; readonly limits?: Partial<SvcMonitorLimits> }) {
    this.random = options.random;
    this.limits = { ...svcMonitorLimits, ...options.limits };
    assert(this.limits.monitorsMax > 0 && this.limits.probesInFlightMax > 0, 'SvcMonitorTable limits must be positive');
  }

  get size(): number {
    return this.monitors.size;
  }

  /** Probes waiting for an answer. */
  get waitingN(): number {
    let n = 0;
    for (const m of this.monitors.values()) if (m.state === 'waiting') n++;
    return n;
  }

  monitor(key: string): SvcMonitorInfo | undefined {
    const m = this.monitors.get(key);
    return m === undefined ? undefined : info(m);
  }

  list(): SvcMonitorInfo[] {
    return [...this.monitors.values()].map(info);
  }

  /**
   * Makes the monitors those of `specs` (the rows whose port is bound here): new ones start in
   * init, gone ones are dropped, kept ones take the row's options, MACs and source address.
   * Kept monitors come first when there are more than monitorsMax.
   */
  sync(specs: readonly SvcMonitorSpec[]): SyncOutput {
    const wanted = new Map<string, SvcMonitorSpec>();
    for (const s of specs) wanted.set(monitorKey(s.dpKey, s.portKey, ipText(s.ip), s.port, s.protocol), s);
    const removed: string[] = [];
    for (const [key, m] of this.monitors) {
      if (wanted.has(key)) continue;
      this.monitors.delete(key);
      removed.push(m.uuid);
    }
    let added = 0;
    let updated = 0;
    let refused = 0;
    for (const [key, s] of wanted) {
      const m = this.monitors.get(key);
      if (m !== undefined) {
        if (this.update(m, s)) updated++;
        continue;
      }
      if (this.monitors.size >= this.limits.monitorsMax) {
        refused++;
        continue;
      }
      const fresh: Monitor = {
        key, uuid: s.uuid, protocol: s.protocol, target: targetOf(s), sbStatus: s.sbStatus, optionsText: '',
        intervalMs: 0, timeoutMs: 0, successCount: 0, failureCount: 0,
        state: 'init', status: undefined, nSuccess: 0, nFailures: 0, waitUntilMs: 0, nextSendMs: 0, seq: 0, srcPort: 0,
      };
      this.readOptions(fresh, s.options);
      this.monitors.set(key, fresh);
      added++;
    }
    return { added, removed, updated, refused };
  }

  /** The decided statuses the SB view does not show yet. */
  statusWrites(): SvcStatusChange[] {
    const out: SvcStatusChange[] = [];
    for (const m of this.monitors.values()) if (m.status !== undefined && m.status !== m.sbStatus) out.push({ uuid: m.uuid, status: m.status });
    return out;
  }

  /** One pass over every monitor at time `nowMs` (svc_monitors_run). */
  run(nowMs: number): RunOutput {
    const probes: OfMessage[] = [];
    const changed: SvcStatusChange[] = [];
    const writes: SvcStatusChange[] = [];
    let waiting = this.waitingN;
    let deferred = 0;
    let nextRunMs = Infinity;
    const trySend = (m: Monitor): number => {
      if (waiting >= this.limits.probesInFlightMax) {
        deferred++;
        return Infinity;
      }
      probes.push(this.probe(m, nowMs));
      waiting++;
      return m.waitUntilMs + 1;
    };
    for (const m of this.monitors.values()) {
      const old = m.status;
      let next: number;
      switch (m.state) {
        case 'init':
          next = trySend(m);
          break;
        case 'waiting':
          if (nowMs > m.waitUntilMs) {
            // Silence: a TCP backend did not answer; a UDP one did not refuse.
            if (m.protocol === 'tcp') this.fail(m, nowMs);
            else this.succeed(m, nowMs);
            waiting--;
            next = m.nextSendMs;
          } else {
            next = m.waitUntilMs + 1;
          }
          break;
        case 'online':
        case 'offline':
          if (m.state === 'online' && m.nSuccess >= m.successCount) {
            m.status = 'online';
            m.nSuccess = 0;
          } else if (m.state === 'offline' && m.nFailures >= m.failureCount) {
            m.status = 'offline';
            m.nFailures = 0;
          }
          next = nowMs >= m.nextSendMs ? trySend(m) : m.nextSendMs;
          break;
      }
      nextRunMs = Math.min(nextRunMs, next);
      if (m.status !== old && m.status !== undefined) {
        changed.push({ uuid: m.uuid, status: m.status });
        if (m.status !== m.sbStatus) writes.push({ uuid: m.uuid, status: m.status });
      }
    }
    if (deferred > 0) {
      // A deferred probe goes when a slot frees: at a reply (the caller runs again) or a timeout.
      for (const m of this.monitors.values()) if (m.state === 'waiting') nextRunMs = Math.min(nextRunMs, m.waitUntilMs + 1);
    }
    return { probes, changed, writes, nextRunMs, deferred };
  }

  /** A handle_svc_check reply (pinctrl_handle_svc_check); call run() after it. */
  onReply(r: SvcReply, nowMs: number): ReplyOutput {
    const key = monitorKey(r.dpKey, r.portKey, r.ip, r.port, r.kind === 'tcp' ? 'tcp' : 'udp');
    const m = this.monitors.get(key);
    if (m === undefined) return { outcome: 'no_monitor', packets: [] };
    if (r.kind === 'port_unreachable') {
      if (r.srcPort !== m.srcPort) return { outcome: 'not_ours', packets: [], key };
      this.fail(m, nowMs);
      return { outcome: 'failure', packets: [], key };
    }
    if (r.dstPort !== m.srcPort || r.ack !== (m.seq + 1) % TWO_32) return { outcome: 'not_ours', packets: [], key };
    if ((r.flags & (TCP_FLAG.SYN | TCP_FLAG.ACK)) === (TCP_FLAG.SYN | TCP_FLAG.ACK)) {
      this.succeed(m, nowMs);
      // Close the half-open connection, with the sequence number ovn-controller uses.
      const rst = composeTcpProbe(m.target, { srcPort: m.srcPort, flags: TCP_FLAG.RST | TCP_FLAG.ACK, seq: (r.ack + 1) % TWO_32, ack: (r.seq + 1) % TWO_32 });
      return { outcome: 'success', packets: [probePacketOut(m.target, rst)], key };
    }
    if ((r.flags & TCP_FLAG.RST) !== 0) {
      this.fail(m, nowMs);
      return { outcome: 'failure', packets: [], key };
    }
    return { outcome: 'not_decisive', packets: [], key };
  }

  private succeed(m: Monitor, nowMs: number): void {
    m.nSuccess++;
    m.state = 'online';
    m.nextSendMs = nowMs + m.intervalMs;
  }

  private fail(m: Monitor, nowMs: number): void {
    m.nFailures++;
    m.state = 'offline';
    m.nextSendMs = nowMs + m.intervalMs;
  }

  /** Sends m's probe: a SYN from a fresh port and sequence number, or a UDP datagram from the
   *  port chosen at the first probe. */
  private probe(m: Monitor, nowMs: number): OfMessage {
    let packet: Buffer;
    if (m.protocol === 'tcp') {
      m.seq = Math.floor(this.random() * TWO_32) % TWO_32;
      m.srcPort = this.randomSrcPort();
      packet = composeTcpProbe(m.target, { srcPort: m.srcPort, flags: TCP_FLAG.SYN, seq: m.seq, ack: 0 });
    } else {
      if (m.srcPort === 0) m.srcPort = this.randomSrcPort();
      packet = composeUdpProbe(m.target, m.srcPort);
    }
    m.waitUntilMs = nowMs + m.timeoutMs;
    m.state = 'waiting';
    return probePacketOut(m.target, packet);
  }

  /** A port in 1024..65535. */
  private randomSrcPort(): number {
    return SRC_PORT_MIN + (Math.floor(this.random() * (65536 - SRC_PORT_MIN)) % (65536 - SRC_PORT_MIN));
  }

  private update(m: Monitor, s: SvcMonitorSpec): boolean {
    const target = targetOf(s);
    const moved = m.uuid !== s.uuid || JSON.stringify(target, bigintJson) !== JSON.stringify(m.target, bigintJson);
    m.uuid = s.uuid;
    m.target = target;
    m.sbStatus = s.sbStatus;
    return this.readOptions(m, s.options) || moved;
  }

  /** Reads the options when they changed; true if they did. */
  private readOptions(m: Monitor, options: ReadonlyMap<string, string>): boolean {
    const text = optionsText(options);
    if (text === m.optionsText) return false;
    m.optionsText = text;
    m.intervalMs = Math.max(0, optionInt(options, 'interval', svcMonitorDefaults.intervalS) * 1000);
    m.timeoutMs = Math.max(0, optionInt(options, 'timeout', svcMonitorDefaults.timeoutS) * 1000);
    m.successCount = optionInt(options, 'success_count', svcMonitorDefaults.successCount);
    m.failureCount = optionInt(options, 'failure_count', svcMonitorDefaults.failureCount);
    return true;
  }
}

function targetOf(s: SvcMonitorSpec): ProbeTarget {
  return { dpKey: s.dpKey, portKey: s.portKey, srcMac: s.srcMac, dstMac: s.dstMac, src: s.srcIp, dst: s.ip, port: s.port };
}

const bigintJson = (_k: string, v: unknown): unknown => (typeof v === 'bigint' ? v.toString() : v);

function info(m: Monitor): SvcMonitorInfo {
  return {
    key: m.key, uuid: m.uuid, protocol: m.protocol, state: m.state, status: m.status, nSuccess: m.nSuccess, nFailures: m.nFailures,
    intervalMs: m.intervalMs, timeoutMs: m.timeoutMs, successCount: m.successCount, failureCount: m.failureCount,
    waitUntilMs: m.waitUntilMs, nextSendMs: m.nextSendMs, srcPort: m.srcPort,
  };
}
