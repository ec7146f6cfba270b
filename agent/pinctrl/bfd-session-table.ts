// The BFD sessions this chassis runs (ovn-controller 23.03's bfd_monitor_*), as a pure state
// machine: SB BFD rows in (sync), control packet-outs and state changes out (run, onMessage).
// No I/O and no clock: the caller passes the time in and sends what comes out; the jitter of
// the transmit interval comes from the injected `random`.
//
// One session per (next hop, source port), as ovn-controller keys them. A new one starts in
// admin_down, due to send at once, its last packet "received" now, a detection time of 30 s,
// and remote_min_rx 1 ms (RFC 5880 p. 29: until the peer says otherwise, send at our rate).
// Each sync takes the row's min_tx, min_rx, detect_mult and addresses again, and its status:
//   - status admin_down → the session is admin_down (remote discriminator 0), and sends nothing;
//   - any other status while the session is admin_down → down (remote discriminator 0).
// Neither is a change to report: the SB said it. Every other change of state is the session's
// own and is reported (`changes`) for BFD.status, those the SB view does not show yet as
// `writes`; a report of down also forgets the peer's discriminator.
//
// run(now), one pass (bfd_monitor_send_msg):
//   - a session in init or up that has received nothing for its detection time goes down;
//   - a session sends when its next_tx is due, unless it is admin_down, the peer's
//     required min RX is 0, or the peer is in demand mode; the next one is due after
//     max(min_tx, the peer's required min RX) ms less a random jitter of up to a quarter
//     (RFC 5880 §6.8.7).
// onMessage(packet), a control packet that passed the checks (pinctrl_handle_bfd_msg): the
// session is the one whose next hop sent it and whose discriminator it names as your_disc. It
// takes the peer's discriminator, required min RX and detection time (the peer's multiplier
// times max(the peer's desired min TX, our min_rx)); then the state machine of RFC 5880 §6.8.6
// as ovn-controller reads it:
//   peer admin_down while we are init or up → down;
//   down: peer down → init, peer init → up;   init: peer init or up → up;
//   up: peer down → down;   admin_down: nothing (not even the time of the packet).
// In up, a packet with the demand bit puts the session in remote demand mode (it stops
// sending; as in ovn-controller it stays so while the session lives). A poll is answered at
// once with a packet carrying the final bit.
//
// Departures from ovn-controller: a detection timeout is found at its time (ovn-controller
// looks on its next transmit pass, at most one interval later); a new session takes its row's
// status in the sync that makes it (ovn-controller, on its next pass); a session follows its
// port's tunnel keys and addresses when they change (ovn-controller keeps the first ones). The
// state changes are handed out as they happen; ovn-controller batches them (10, or 5 s) — the
// caller's writer decides when they are written.
//
// Bounded: at most sessionsMax sessions; rows past it are refused until others go.

import assert from 'node:assert/strict';
import type { OfMessage } from '../openflow/messages.js';
import {
  BFD_FLAG, BFD_STATE, bfdPacketOut, bfdStatusOf, composeBfdPacket, encodeBfdControl, u32,
  type BfdEndpoints, type BfdMessage, type BfdState, type BfdStatus,
} from './bfd-packet.js';
import type { BfdSessionSpec } from './bfd-specs.js';
import { ipText } from './svc-probe.js';

export interface BfdSessionLimits {
  /** Sessions at once (ovn-controller has no limit; northd hands out at most 16383 source ports). */
  readonly sessionsMax: number;
}

export const bfdSessionLimits: BfdSessionLimits = { sessionsMax: 1000 };

/** A new session's detection time, until the peer's first packet sets it. */
export const BFD_INITIAL_DETECTION_MS = 30_000;
/** A new session's idea of the peer's required min RX (RFC 5880 p. 29: 1, i.e. send at our rate). */
export const BFD_INITIAL_REMOTE_MIN_RX_MS = 1;
/** Intervals shorter than this have no jitter (a quarter of them rounds to nothing). */
const JITTER_INTERVAL_MS_MIN = 4;
const US_PER_MS = 1000;

/** What a test or a log sees of one session. */
export interface BfdSessionInfo {
  readonly key: string;
  readonly uuid: string;
  readonly state: BfdState;
  readonly status: BfdStatus;
  readonly localDisc: number;
  readonly remoteDisc: number;
  readonly localMinTxMs: number;
  readonly localMinRxMs: number;
  readonly localMult: number;
  readonly remoteMinRxMs: number;
  readonly remoteDemandMode: boolean;
  readonly detectionTimeoutMs: number;
  readonly lastRxMs: number;
  readonly nextTxMs: number;
  readonly dpKey: number;
  readonly portKey: number;
}

interface Session {
  readonly key: string;
  uuid: string;
  dpKey: number;
  portKey: number;
  endpoints: BfdEndpoints;
  localDisc: number;
  remoteDisc: number;
  localMinTxMs: number;
  localMinRxMs: number;
  localMult: number;
  remoteMinRxMs: number;
  remoteDemandMode: boolean;
  state: BfdState;
  /** The status this session last reported (undefined: none since the SB last set its state). */
  reported: BfdStatus | undefined;
  detectionTimeoutMs: number;
  lastRxMs: number;
  nextTxMs: number;
  sbStatus: string;
}

/** A state a session changed to, for BFD.status. */
export interface BfdStatusChange {
  readonly uuid: string;
  readonly status: BfdStatus;
}

export interface BfdSyncOutput {
  readonly added: number;
  /** The rows of the sessions that went (their pending writes are moot). */
  readonly removed: readonly string[];
  /** Rows whose session the SB just set to admin_down or down: what waits to be written for them is moot. */
  readonly overruled: readonly string[];
  /** Rows not run because sessionsMax sessions exist. */
  readonly refused: number;
}

export interface BfdRunOutput {
  /** Control packet-outs to send now, in order. */
  readonly packets: readonly OfMessage[];
  /** States the sessions changed to in this call. */
  readonly changes: readonly BfdStatusChange[];
  /** Those of them the SB view does not show: to be written. */
  readonly writes: readonly BfdStatusChange[];
  /** When run() must be called next (Infinity: nothing to do until a sync or a packet). */
  readonly nextRunMs: number;
}

export type BfdMessageOutcome = 'handled' | 'no_session';

export interface BfdMessageOutput {
  readonly outcome: BfdMessageOutcome;
  readonly key?: string;
  /** The final packet that answers a poll. */
  readonly packets: readonly OfMessage[];
  readonly changes: readonly BfdStatusChange[];
  readonly writes: readonly BfdStatusChange[];
}

export class BfdSessionTable {
  private readonly sessions = new Map<string, Session>();
  /** "next hop/local discriminator" → session: how a peer's packet finds its session. */
  private readonly byDisc = new Map<string, Session>();
  private readonly limits: BfdSessionLimits;
  private readonly random: () => number;

  constructor(options: { readonly random: () => number; readonly limits?: Partial<BfdSessionLimits> }) {
    this.random = options.random;
    this.limits = { ...bfdSessionLimits, ...options.limits };
    assert(this.limits.sessionsMax > 0, 'BfdSessionTable limits must be positive');
  }

  get size(): number {
    return this.sessions.size;
  }

  session(key: string): BfdSessionInfo | undefined {
    const s = this.sessions.get(key);
    return s === undefined ? undefined : info(s);
  }

  list(): BfdSessionInfo[] {
    return [...this.sessions.values()].map(info);
  }

  /**
   * Makes the sessions those of `specs` (the rows this chassis runs, bfdSessionSpecs): new ones
   * start, gone ones are dropped, kept ones take the row's settings and status. Kept sessions
   * come first when there are more than sessionsMax.
   */
  sync(specs: readonly BfdSessionSpec[], nowMs: number): BfdSyncOutput {
    const wanted = new Map<string, BfdSessionSpec>();
    for (const s of specs) if (!wanted.has(s.key)) wanted.set(s.key, s);
    const removed: string[] = [];
    for (const [key, s] of this.sessions) {
      if (wanted.has(key)) continue;
      this.sessions.delete(key);
      removed.push(s.uuid);
    }
    let added = 0;
    let refused = 0;
    const overruled: string[] = [];
    for (const [key, spec] of wanted) {
      let s = this.sessions.get(key);
      if (s === undefined) {
        if (this.sessions.size >= this.limits.sessionsMax) {
          refused++;
          continue;
        }
        s = {
          key, uuid: spec.uuid, dpKey: spec.dpKey, portKey: spec.portKey, endpoints: spec.endpoints,
          localDisc: spec.disc, remoteDisc: 0, localMinTxMs: spec.minTxMs, localMinRxMs: spec.minRxMs, localMult: spec.detectMult,
          remoteMinRxMs: BFD_INITIAL_REMOTE_MIN_RX_MS, remoteDemandMode: false, state: BFD_STATE.ADMIN_DOWN, reported: undefined,
          detectionTimeoutMs: BFD_INITIAL_DETECTION_MS, lastRxMs: nowMs, nextTxMs: nowMs, sbStatus: spec.sbStatus,
        };
        this.sessions.set(key, s);
        added++;
      }
      s.uuid = spec.uuid;
      s.dpKey = spec.dpKey;
      s.portKey = spec.portKey;
      s.endpoints = spec.endpoints;
      s.localMinTxMs = spec.minTxMs;
      s.localMinRxMs = spec.minRxMs;
      s.localMult = spec.detectMult;
      s.sbStatus = spec.sbStatus;
      if (this.applyStatus(s, spec.sbStatus)) overruled.push(s.uuid);
    }
    this.byDisc.clear();
    for (const s of this.sessions.values()) {
      const k = discKey(ipText(s.endpoints.dst), s.localDisc);
      if (!this.byDisc.has(k)) this.byDisc.set(k, s);
    }
    return { added, removed, overruled, refused };
  }

  /**
   * The reported states the SB view does not show (a write that failed, or was given up, is
   * asked for again): none for a session the SB holds admin_down.
   */
  statusWrites(): BfdStatusChange[] {
    const out: BfdStatusChange[] = [];
    for (const s of this.sessions.values()) {
      if (s.reported !== undefined && s.reported !== s.sbStatus && s.state !== BFD_STATE.ADMIN_DOWN) out.push({ uuid: s.uuid, status: s.reported });
    }
    return out;
  }

  /** One pass over every session at time `nowMs` (bfd_monitor_send_msg, with the detection check). */
  run(nowMs: number): BfdRunOutput {
    const packets: OfMessage[] = [];
    const out: Reports = { changes: [], writes: [] };
    let nextRunMs = Infinity;
    for (const s of this.sessions.values()) {
      if (live(s) && s.detectionTimeoutMs !== 0 && nowMs >= s.lastRxMs + s.detectionTimeoutMs) this.become(s, BFD_STATE.DOWN, out);
      if (live(s) && s.detectionTimeoutMs !== 0) nextRunMs = Math.min(nextRunMs, s.lastRxMs + s.detectionTimeoutMs);
      if (nowMs < s.nextTxMs) {
        nextRunMs = Math.min(nextRunMs, s.nextTxMs);
        continue;
      }
      if (s.remoteMinRxMs === 0 || s.state === BFD_STATE.ADMIN_DOWN || s.remoteDemandMode) continue;
      packets.push(this.packet(s, false));
      s.nextTxMs = nowMs + this.txIntervalMs(s);
      nextRunMs = Math.min(nextRunMs, s.nextTxMs);
    }
    return { packets, ...out, nextRunMs };
  }

  /** A control packet from a peer that passed parseBfdMessage's checks; call run() after it. */
  onMessage(m: BfdMessage, nowMs: number): BfdMessageOutput {
    const s = this.byDisc.get(discKey(m.src, m.control.yourDisc));
    if (s === undefined) return { outcome: 'no_session', packets: [], changes: [], writes: [] };
    const c = m.control;
    const out: Reports = { changes: [], writes: [] };
    const packets: OfMessage[] = [];
    s.remoteDisc = c.myDisc;
    const remoteMinTxMs = Math.floor(c.minTxUs / US_PER_MS);
    s.remoteMinRxMs = Math.floor(c.minRxUs / US_PER_MS);
    s.detectionTimeoutMs = u32(c.mult * Math.max(remoteMinTxMs, s.localMinRxMs));
    const peer = c.state;
    if (peer === BFD_STATE.ADMIN_DOWN && live(s)) {
      this.become(s, BFD_STATE.DOWN, out);
      s.lastRxMs = nowMs;
    } else {
      switch (s.state) {
        case BFD_STATE.DOWN:
          if (peer === BFD_STATE.DOWN) this.become(s, BFD_STATE.INIT, out);
          else if (peer === BFD_STATE.INIT) this.become(s, BFD_STATE.UP, out);
          s.lastRxMs = nowMs;
          break;
        case BFD_STATE.INIT:
          if (peer === BFD_STATE.INIT || peer === BFD_STATE.UP) this.become(s, BFD_STATE.UP, out);
          s.lastRxMs = nowMs;
          break;
        case BFD_STATE.UP:
          if (peer === BFD_STATE.DOWN) this.become(s, BFD_STATE.DOWN, out);
          s.lastRxMs = nowMs;
          break;
        case BFD_STATE.ADMIN_DOWN:
          break;
      }
      if (s.state === BFD_STATE.UP && (c.flags & BFD_FLAG.DEMAND) !== 0) s.remoteDemandMode = true;
      if ((c.flags & BFD_FLAG.POLL) !== 0) packets.push(this.packet(s, true));
    }
    return { outcome: 'handled', key: s.key, packets, ...out };
  }

  /** The SB's word on the session's state (see the header); true if it overruled the session. */
  private applyStatus(s: Session, sbStatus: string): boolean {
    const adminDown = sbStatus === 'admin_down';
    if (adminDown === (s.state === BFD_STATE.ADMIN_DOWN)) return false;
    s.state = adminDown ? BFD_STATE.ADMIN_DOWN : BFD_STATE.DOWN;
    s.remoteDisc = 0;
    s.reported = undefined;
    return true;
  }

  /** A change of state the session made itself: reported, and down forgets the peer. */
  private become(s: Session, state: BfdState, out: Reports): void {
    s.state = state;
    const status = bfdStatusOf(state);
    s.reported = status;
    // ovn-controller forgets the peer's discriminator when it writes down; we write at once.
    if (state === BFD_STATE.DOWN) s.remoteDisc = 0;
    out.changes.push({ uuid: s.uuid, status });
    if (status !== s.sbStatus) out.writes.push({ uuid: s.uuid, status });
  }

  /** max(min_tx, the peer's required min RX), less a jitter in [0, a quarter of it). */
  private txIntervalMs(s: Session): number {
    const base = Math.max(s.localMinTxMs, s.remoteMinRxMs);
    if (base < JITTER_INTERVAL_MS_MIN) return base;
    const quarter = Math.floor(base / 4);
    const jitter = Math.floor(this.random() * quarter) % quarter;
    assert(jitter >= 0 && jitter < quarter, 'BFD transmit jitter out of its bound');
    return base - jitter;
  }

  private packet(s: Session, final: boolean): OfMessage {
    const control = encodeBfdControl({
      state: s.state, final, mult: s.localMult, myDisc: s.localDisc, yourDisc: s.remoteDisc, minTxMs: s.localMinTxMs, minRxMs: s.localMinRxMs,
    });
    return bfdPacketOut(s, composeBfdPacket(s.endpoints, control));
  }
}

/** In init or up: the states a silent peer takes the session out of. */
const live = (s: Session): boolean => s.state === BFD_STATE.INIT || s.state === BFD_STATE.UP;

interface Reports {
  readonly changes: BfdStatusChange[];
  readonly writes: BfdStatusChange[];
}

const discKey = (ip: string, disc: number): string => `${ip}/${disc}`;

function info(s: Session): BfdSessionInfo {
  return {
    key: s.key, uuid: s.uuid, state: s.state, status: bfdStatusOf(s.state), localDisc: s.localDisc, remoteDisc: s.remoteDisc,
    localMinTxMs: s.localMinTxMs, localMinRxMs: s.localMinRxMs, localMult: s.localMult, remoteMinRxMs: s.remoteMinRxMs,
    remoteDemandMode: s.remoteDemandMode, detectionTimeoutMs: s.detectionTimeoutMs, lastRxMs: s.lastRxMs, nextTxMs: s.nextTxMs,
    dpKey: s.dpKey, portKey: s.portKey,
  };
}
