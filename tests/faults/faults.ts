// The faults the suite injects, each a step that leaves the cluster whole again: it breaks
// something, measures what it should (the time to a new leader when the leader was taken
// away), repairs it, and waits until the member it hit has caught up. Scenarios are lists of
// these steps; see faults.test.ts.
import { AdminClient } from '../../server/admin-service.js';
import { NorthboundClient } from '../../server/northbound-service.js';
import type { Rng } from '../helpers/seeded-rng.js';
import type { FaultCluster } from './cluster.js';

export interface FaultRecorder {
  /** One fault injected (`what` says which, for the notes). */
  fault(what: string): void;
  /** The time from a fault that took the leader away to a new leader. */
  newLeader(ms: number): void;
  note(line: string): void;
  /** One line of what happened when (the nemesis' schedule), printed line by line. */
  timeline(line: string): void;
}

export interface FaultContext {
  readonly cluster: FaultCluster;
  readonly rng: Rng;
  readonly rec: FaultRecorder;
  /** The election timeout the members run with (ms). */
  readonly electionMs: number;
}

export type FaultStep = (ctx: FaultContext) => Promise<void>;

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Waits until member `id` has applied what the leader had committed when this was called. */
export async function waitCaughtUp(cluster: FaultCluster, id: number, timeoutMs = 90_000): Promise<void> {
  const leader = await cluster.waitForStableLeader();
  const target = (await cluster.status(leader.id)).commit;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const s = await cluster.status(id).catch(() => undefined);
    if (s !== undefined && s.applied >= target) return;
    if (Date.now() > deadline) {
      throw new Error(`n${id} did not catch up to ${target} within ${timeoutMs} ms (at ${s?.applied ?? 'no answer'}): ${cluster.logTail(cluster.member(id))}`);
    }
    await sleep(100);
  }
}

/** A follower of the current leader, chosen at random. */
async function someFollower(ctx: FaultContext, leader: number): Promise<number> {
  const followers = ctx.cluster.current.filter((m) => m.id !== leader && m.state === 'running').map((m) => m.id);
  return ctx.rng.pick(followers);
}

/** kill -9 the leader; time the election; restart it on its data; wait until it caught up. */
export function killLeader(downMs: number): FaultStep {
  return async ({ cluster, rec }) => {
    const l = await cluster.waitForStableLeader();
    const t0 = performance.now();
    await cluster.kill(l.id, 'SIGKILL');
    rec.fault(`kill -9 leader n${l.id}`);
    const next = await cluster.waitForNewLeader(l.term, new Set([l.id]), t0);
    rec.newLeader(next.afterMs);
    await sleep(downMs);
    await cluster.restart(l.id);
    await waitCaughtUp(cluster, l.id);
  };
}

/** kill -9 a follower, leave it down a while under load, restart it, wait until it caught up. */
export function killFollower(downMs: number): FaultStep {
  return async (ctx) => {
    const { cluster, rec } = ctx;
    const l = await cluster.waitForStableLeader();
    const f = await someFollower(ctx, l.id);
    await cluster.kill(f, 'SIGKILL');
    rec.fault(`kill -9 follower n${f}`);
    await sleep(downMs);
    await cluster.restart(f);
    await waitCaughtUp(cluster, f);
  };
}

/**
 * SIGSTOP a member for longer than the election timeout, then SIGCONT. When it led, the time
 * to a new leader among the others is measured.
 */
export function stopMember(role: 'leader' | 'follower', stoppedMs: number): FaultStep {
  return async (ctx) => {
    const { cluster, rec } = ctx;
    const l = await cluster.waitForStableLeader();
    const target = role === 'leader' ? l.id : await someFollower(ctx, l.id);
    const t0 = performance.now();
    cluster.pause(target);
    rec.fault(`SIGSTOP ${role} n${target} for ${stoppedMs} ms`);
    if (role === 'leader') {
      const next = await cluster.waitForNewLeader(l.term, new Set([target]), t0);
      rec.newLeader(next.afterMs);
    }
    const left = stoppedMs - (performance.now() - t0);
    if (left > 0) await sleep(left);
    cluster.resume(target);
    await waitCaughtUp(cluster, target);
  };
}

/** Cuts the leader off from everyone, both ways; times the election; heals after holdMs. */
export function isolateLeader(holdMs: number): FaultStep {
  return async ({ cluster, rec }) => {
    const l = await cluster.waitForStableLeader();
    const t0 = performance.now();
    cluster.isolate(l.id);
    rec.fault(`leader n${l.id} isolated`);
    const next = await cluster.waitForNewLeader(l.term, new Set([l.id]), t0);
    rec.newLeader(next.afterMs);
    await sleep(holdMs);
    cluster.healAll();
    await waitCaughtUp(cluster, l.id);
  };
}

/** Cuts a follower off from everyone, both ways, for holdMs. */
export function isolateFollower(holdMs: number): FaultStep {
  return async (ctx) => {
    const { cluster, rec } = ctx;
    const l = await cluster.waitForStableLeader();
    const f = await someFollower(ctx, l.id);
    cluster.isolate(f);
    rec.fault(`follower n${f} isolated`);
    await sleep(holdMs);
    cluster.healAll();
    await waitCaughtUp(cluster, f);
  };
}

/**
 * A symmetric split of one link: leader and one follower cannot reach each other either way,
 * while both still reach the third member (which sits between the two sides).
 */
export function splitLeaderFollower(holdMs: number): FaultStep {
  return async (ctx) => {
    const { cluster, rec } = ctx;
    const l = await cluster.waitForStableLeader();
    const f = await someFollower(ctx, l.id);
    cluster.cutBetween(l.id, f);
    rec.fault(`link n${l.id}<->n${f} cut both ways`);
    await noteLeaderChanges(ctx, l.term, holdMs);
    cluster.healAll();
    await waitCaughtUp(cluster, f);
  };
}

/** One-way loss: what `from` says to `to` is lost, the other way works ('leader→follower' or back). */
export function oneWay(direction: 'leader-to-follower' | 'follower-to-leader' | 'leader-to-all', holdMs: number): FaultStep {
  return async (ctx) => {
    const { cluster, rec } = ctx;
    const l = await cluster.waitForStableLeader();
    const t0 = performance.now();
    if (direction === 'leader-to-all') {
      for (const m of cluster.current) if (m.id !== l.id) cluster.cutOneWay(l.id, m.id);
      rec.fault(`everything n${l.id} (leader) sends is lost`);
      const next = await cluster.waitForNewLeader(l.term, new Set([l.id]), t0);
      rec.newLeader(next.afterMs);
      await sleep(holdMs);
    } else {
      const f = await someFollower(ctx, l.id);
      const [from, to] = direction === 'leader-to-follower' ? [l.id, f] : [f, l.id];
      cluster.cutOneWay(from, to);
      rec.fault(`n${from}->n${to} lost (${direction})`);
      await noteLeaderChanges(ctx, l.term, holdMs);
    }
    cluster.healAll();
    for (const m of cluster.current) await waitCaughtUp(cluster, m.id);
  };
}

/** Every link gets delayMs (+ up to jitterMs) each way, for holdMs. */
export function latency(delayMs: number, jitterMs: number, holdMs: number): FaultStep {
  return async (ctx) => {
    const { cluster, rec } = ctx;
    const l = await cluster.waitForStableLeader();
    cluster.delayAll(delayMs, jitterMs);
    rec.fault(`latency ${delayMs}+${jitterMs} ms on every link`);
    await noteLeaderChanges(ctx, l.term, holdMs);
    cluster.healAll();
    for (const m of cluster.current) await waitCaughtUp(cluster, m.id);
  };
}

/** Watches for holdMs; notes a change of term (an election the fault caused). */
async function noteLeaderChanges(ctx: FaultContext, term: number, holdMs: number): Promise<void> {
  const end = performance.now() + holdMs;
  let maxTerm = term;
  while (performance.now() < end) {
    for (const s of (await ctx.cluster.statuses()).values()) if (s !== undefined) maxTerm = Math.max(maxTerm, s.term);
    await sleep(200);
  }
  if (maxTerm > term) ctx.rec.note(`terms ${term}->${maxTerm} during the fault`);
}

/**
 * Snapshots under load: `saves` consistent snapshots streamed from random members, while the
 * members' own snapshots compact their logs (--snapshot-entries); a follower is killed and
 * kept down until the leader compacted past it, so that it must be sent a snapshot.
 */
export function snapshotsAndCompaction(saves: number): FaultStep {
  return async (ctx) => {
    const { cluster, rec, rng } = ctx;
    const before = new Map([...(await cluster.statuses()).entries()].map(([id, s]) => [id, s?.snapshotIndex ?? 0]));
    const l = await cluster.waitForStableLeader();
    const f = await someFollower(ctx, l.id);
    const fStatus = await cluster.status(f);
    await cluster.kill(f, 'SIGKILL');
    rec.fault(`kill -9 follower n${f} (to be caught up by snapshot)`);
    for (let i = 0; i < saves; i++) {
      const from = rng.pick(cluster.current.filter((m) => m.state === 'running')).id;
      const bytes = await saveSnapshot(cluster.nbAddress(from));
      rec.fault(`snapshot save from n${from} (${bytes} bytes)`);
    }
    // Down until the leader's log no longer holds what the follower lacks.
    const deadline = Date.now() + 120_000;
    for (;;) {
      const leader = await cluster.waitForStableLeader();
      const s = await cluster.status(leader.id);
      if (s.firstIndex > fStatus.applied + 1) break;
      if (Date.now() > deadline) throw new Error(`the leader did not compact past ${fStatus.applied} within 120 s (log ${s.firstIndex}..${s.lastIndex})`);
      await sleep(200);
    }
    await cluster.restart(f);
    await waitCaughtUp(cluster, f);
    const after = await cluster.statuses();
    for (const [id, s] of after) {
      const was = before.get(id) ?? 0;
      if (s === undefined || s.snapshotIndex <= was) throw new Error(`n${id} did not take or receive a snapshot (snapshot index ${was} -> ${s?.snapshotIndex ?? '?'})`);
    }
    rec.note(`snapshot index ${[...after].map(([id, s]) => `n${id} ${before.get(id) ?? 0}->${s?.snapshotIndex ?? '?'}`).join(', ')}`);
  };
}

/** A snapshot save that neither ends nor fails within this is a member that never answers. */
export const snapshotSaveMsMax = 60_000;

/** Why a snapshot save failed where it should not have: a wrong checksum, or no answer at all. */
export class SnapshotSaveBroken extends Error {}

/**
 * Streams one consistent snapshot (Admin SnapshotSave) and checks its SHA-256; returns its size.
 * Throws SnapshotSaveBroken on a wrong checksum or no end within snapshotSaveMsMax; any other
 * error is the member's refusal or a lost connection.
 */
export async function saveSnapshot(address: string): Promise<number> {
  const { createHash } = await import('node:crypto');
  const c = new AdminClient(address, snapshotSaveMsMax);
  const stream = c.snapshotSave();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    stream.cancel();
  }, snapshotSaveMsMax);
  try {
    const hash = createHash('sha256');
    let bytes = 0;
    let sum: Uint8Array | undefined;
    for await (const chunk of stream as AsyncIterable<{ headerJson: string; data: Uint8Array; sha256: Uint8Array }>) {
      if (chunk.headerJson !== '') hash.update(chunk.headerJson, 'utf8');
      if (chunk.data.byteLength > 0) {
        hash.update(chunk.data);
        bytes += chunk.data.byteLength;
      }
      if (chunk.sha256.byteLength > 0) sum = chunk.sha256;
    }
    if (sum === undefined || Buffer.compare(Buffer.from(sum), hash.digest()) !== 0) throw new SnapshotSaveBroken(`snapshot from ${address}: checksum missing or wrong`);
    return bytes;
  } catch (err) {
    if (timedOut) throw new SnapshotSaveBroken(`snapshot from ${address}: neither ended nor failed within ${snapshotSaveMsMax} ms`);
    throw err;
  } finally {
    clearTimeout(timer);
    c.close();
  }
}

/** Removes a follower under load, then adds a fresh member and waits until it caught up. */
export function replaceMember(): FaultStep {
  return async (ctx) => {
    const { cluster, rec } = ctx;
    const l = await cluster.waitForStableLeader();
    const f = await someFollower(ctx, l.id);
    await cluster.removeMember(f);
    rec.fault(`member n${f} removed`);
    const m = await cluster.addMember();
    rec.fault(`member n${m.id} added`);
    await waitCaughtUp(cluster, m.id);
  };
}

/**
 * A torn write, as a crash can leave one: only what the member wrote after its last
 * acknowledgement is at risk. So first everything the member says is cut off (a follower's
 * acknowledgements go nowhere; a leader is isolated and can commit nothing), it keeps
 * writing what it receives for a moment, then it is killed -9 and its newest LevelDB log is
 * cut at a random point after the mark taken at the cut. It must restart, rejoin and catch up.
 */
export function tornWrite(role: 'leader' | 'follower'): FaultStep {
  return async (ctx) => {
    const { cluster, rec, rng } = ctx;
    const l = await cluster.waitForStableLeader();
    const target = role === 'leader' ? l.id : await someFollower(ctx, l.id);
    const t0 = performance.now();
    if (role === 'leader') cluster.isolate(target);
    else for (const m of cluster.current) if (m.id !== target) cluster.cutOneWay(target, m.id);
    const mark = cluster.logMark(target);
    // A cut-off leader appends what clients send it straight, until check-quorum makes it step
    // down; a few writes of its own make sure there is such an entry. Their outcome stays
    // unknown (nothing can commit them), and they touch no key the workload checks.
    const extra = role === 'leader' ? writesNobodyAcknowledges(cluster.nbAddress(target), 3) : Promise.resolve();
    // Let it write something nobody hears about (bounded: a leader soon stops taking writes).
    const deadline = performance.now() + 3 * ctx.electionMs;
    while (performance.now() < deadline) {
      const now = cluster.logMark(target);
      if (mark === undefined || now === undefined || now.file !== mark.file || now.size > mark.size) break;
      await sleep(50);
    }
    if (role === 'leader') {
      const next = await cluster.waitForNewLeader(l.term, new Set([target]), t0);
      rec.newLeader(next.afterMs);
    }
    await cluster.kill(target, 'SIGKILL');
    const tear = mark === undefined ? undefined : cluster.tearLogTail(target, (lo, hi) => rng.int(lo, hi), mark);
    rec.fault(`torn write on ${role} n${target}: ${tear === undefined ? 'nothing written after its last acknowledgement' : `${tear.cut} of ${tear.sizeBefore} bytes cut from ${tear.file} (after byte ${mark?.size ?? 0})`}`);
    cluster.healAll();
    await extra;
    await cluster.restart(target);
    await waitCaughtUp(cluster, target);
  };
}

/** `n` writes to one member's NB_Global external_ids whose answers are ignored (see tornWrite). */
async function writesNobodyAcknowledges(address: string, n: number): Promise<void> {
  const c = new NorthboundClient(address, 5_000);
  try {
    const write = (i: number): Promise<unknown> =>
      c.transact([{ op: 'mutate', table: 'NB_Global', where: [], mutations: [['external_ids', 'insert', ['map', [[`torn-${Date.now()}-${i}`, 'x']]]]] }]).catch(() => undefined);
    await Promise.all(Array.from({ length: n }, (_, i) => write(i)));
  } finally {
    c.close();
  }
}

/**
 * A disk that lost synced writes: kill -9 a follower and cut up to bytesMax bytes off its
 * newest LevelDB log regardless of what it acknowledged. Either the cut held only
 * unacknowledged writes and the member catches up, or it must stop with the storage error
 * that says it lost acknowledged entries (never crash, never serve); then it is replaced by a
 * fresh member, as that error tells the operator to do.
 */
export function lostSyncedWrites(bytesMax: number): FaultStep {
  return async (ctx) => {
    const { cluster, rec, rng } = ctx;
    const l = await cluster.waitForStableLeader();
    const f = await someFollower(ctx, l.id);
    await cluster.kill(f, 'SIGKILL');
    const tear = cluster.tearLogTail(f, (lo, hi) => Math.max(lo, hi + 1 - rng.int(1, bytesMax)));
    rec.fault(`synced writes lost on follower n${f}: ${tear === undefined ? 'no log data' : `${tear.cut} of ${tear.sizeBefore} bytes cut from ${tear.file}`}`);
    cluster.expectedStops.add(f);
    // It may stop before it answered once (the leader's first heartbeat gives it away).
    await cluster.restart(f).catch(() => undefined);
    const leader = await cluster.waitForStableLeader();
    const target = (await cluster.status(leader.id)).commit;
    const deadline = Date.now() + 90_000;
    for (;;) {
      const m = cluster.member(f);
      const s = m.state === 'running' ? await cluster.status(f).catch(() => undefined) : undefined;
      if (s !== undefined && s.fatalError === '' && s.applied >= target) {
        rec.note(`n${f} rejoined: the cut held no acknowledged entry`);
        cluster.expectedStops.delete(f);
        return;
      }
      if (m.state === 'down' || (s !== undefined && s.fatalError !== '')) break;
      if (Date.now() > deadline) throw new Error(`n${f} neither caught up nor stopped within 90 s: ${cluster.logTail(m)}`);
      await sleep(100);
    }
    const log = cluster.logTail(cluster.member(f), 4000);
    if (!/acknowledged entries up to \d+: its storage lost writes after syncing them/.test(log)) {
      throw new Error(`n${f} stopped without saying it lost acknowledged entries: ${log}`);
    }
    rec.note(`n${f} stopped: it lost acknowledged entries, as its log says; replaced`);
    await cluster.kill(f, 'SIGKILL');
    await cluster.removeMember(f);
    rec.fault(`member n${f} removed`);
    const m = await cluster.addMember();
    rec.fault(`member n${m.id} added`);
    await waitCaughtUp(cluster, m.id);
  };
}
