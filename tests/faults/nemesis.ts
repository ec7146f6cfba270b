// The nemesis: faults that start and end on a seeded schedule of their own over a window, so
// they overlap as real failures do (a partition while a member restarts, a paused leader
// under latency, clients cut mid-call while the leader changes). At the end of the window
// every fault is undone, stopped members are restarted, and a write must succeed within a
// bound: the scenario's own checks (convergence, nothing acknowledged lost, no phantom, a
// linearizable history) follow as for any step.
//
// The plan is drawn from the seed before the window opens; each planned fault carries the
// random draws that choose its target, and they are resolved against the cluster as it is
// when the fault starts (who leads, who is already down). So a seed replays the same choices,
// while what they hit depends on timing. The timeline of what happened is recorded line by
// line, with the leader changes a poller sees, for a failure to be read.
import { setTimeout as sleep } from 'node:timers/promises';
import { JsonRpcClient } from '../../ovsdb/jsonrpc-client.js';
import { NorthboundClient } from '../../server/northbound-service.js';
import { Rng } from '../helpers/seeded-rng.js';
import type { FaultCluster } from './cluster.js';
import { SnapshotSaveBroken, saveSnapshot, type FaultContext, type FaultStep } from './faults.js';
import type { Direction, FaultProxy } from './proxy.js';

export const nemesisLimits = {
  /** How often the leader poller asks the running members for their status. */
  leaderPollMs: 250,
  /** One liveness probe's deadline: a write that takes longer is tried again elsewhere. */
  probeCallMs: 3_000,
} as const;

export interface NemesisOptions {
  /** How long faults keep starting. */
  readonly windowMs: number;
  /** The mean time between two fault starts (drawn uniformly in [0, 2 x mean]). */
  readonly meanGapMs: number;
  /** After everything is healed and every member answers, a write must succeed within this. */
  readonly livenessMsMax: number;
}

const faultKinds = ['kill', 'pause', 'partition', 'bridge', 'one-way', 'latency', 'client-cut', 'client-stall', 'client-delay', 'client-reset', 'snapshot'] as const;
export type NemesisFaultKind = (typeof faultKinds)[number];

/** How often each kind is drawn, relative to the others. */
const kindWeights: Readonly<Record<NemesisFaultKind, number>> = {
  kill: 3,
  pause: 2,
  partition: 2,
  bridge: 1,
  'one-way': 1,
  latency: 1,
  'client-cut': 1,
  'client-stall': 1,
  'client-delay': 1,
  'client-reset': 1,
  snapshot: 1,
};

/** How long each kind lasts, [min, max] ms (0: it is over as it starts). */
const holdMsRange: Readonly<Record<NemesisFaultKind, readonly [number, number]>> = {
  // Up to a few compactions' worth of writes, so that some restarts need a snapshot.
  kill: [300, 8_000],
  pause: [300, 3_000],
  partition: [500, 5_000],
  bridge: [1_000, 5_000],
  'one-way': [1_000, 4_000],
  latency: [1_000, 6_000],
  'client-cut': [300, 3_000],
  'client-stall': [300, 4_000],
  'client-delay': [1_000, 5_000],
  'client-reset': [0, 0],
  snapshot: [0, 0],
};

/** One fault of the plan; `draws` (each in [0, 1)) choose its target and details when it starts. */
export interface PlannedFault {
  readonly atMs: number;
  readonly kind: NemesisFaultKind;
  readonly holdMs: number;
  /** Aim at the leader (or keep it on the minority side) when there is one to aim at. */
  readonly atLeader: boolean;
  readonly draws: readonly [number, number, number];
}

/** The faults of one window, in start order: a pure function of the generator's state. */
export function planNemesis(rng: Rng, options: Pick<NemesisOptions, 'windowMs' | 'meanGapMs'>): PlannedFault[] {
  const plan: PlannedFault[] = [];
  const weighted = faultKinds.map((k) => [k, kindWeights[k]] as const);
  for (let at = rng.int(0, options.meanGapMs); at < options.windowMs; at += rng.int(0, 2 * options.meanGapMs)) {
    const kind = rng.weighted(weighted);
    const [lo, hi] = holdMsRange[kind];
    plan.push({ atMs: at, kind, holdMs: rng.int(lo, hi), atLeader: rng.chance(0.5), draws: [rng.float(), rng.float(), rng.float()] });
  }
  return plan;
}

/** What one fault does to one proxy. */
interface ProxyEffect {
  readonly cut?: true;
  readonly stall?: Direction;
  readonly delay?: { readonly delayMs: number; readonly jitterMs: number };
}

/**
 * The proxies' state as the sum of the faults on them, so that overlapping faults add up and
 * the end of one leaves the others in force: a proxy is cut while any fault cuts it, stalled
 * in a direction while any fault stalls it, and delayed by the largest delay in force.
 */
class LinkBoard {
  private readonly active = new Map<number, { readonly proxies: readonly FaultProxy[]; readonly effect: ProxyEffect }>();
  private nextId = 1;

  add(proxies: readonly FaultProxy[], effect: ProxyEffect): number {
    const id = this.nextId++;
    this.active.set(id, { proxies, effect });
    this.refresh(proxies);
    return id;
  }

  remove(id: number): void {
    const a = this.active.get(id);
    if (a === undefined) return;
    this.active.delete(id);
    this.refresh(a.proxies);
  }

  /** Forgets every fault (the caller heals the proxies). */
  clear(): void {
    this.active.clear();
  }

  private refresh(proxies: readonly FaultProxy[]): void {
    for (const p of proxies) {
      const effects = [...this.active.values()].filter((a) => a.proxies.includes(p)).map((a) => a.effect);
      const cut = effects.some((e) => e.cut === true);
      // heal() ends stalls and delays too: they are set again below.
      if (cut && !p.isCut) p.cut();
      else if (!cut && p.isCut) p.heal();
      let delay = { delayMs: 0, jitterMs: 0 };
      for (const e of effects) if (e.delay !== undefined && e.delay.delayMs + e.delay.jitterMs > delay.delayMs + delay.jitterMs) delay = e.delay;
      for (const dir of ['up', 'down'] as const) {
        p.delay(dir, delay.delayMs, delay.jitterMs);
        p.stall(dir, effects.some((e) => e.stall === dir));
      }
    }
  }
}

/** The leader the poller saw last, and the timeline's clock. */
interface Watch {
  leader: { id: number; term: number } | undefined;
  readonly startedMs: number;
  line(text: string): void;
}

function names(ids: readonly number[]): string {
  return `{${ids.map((id) => `n${id}`).join(',')}}`;
}

/** The item a draw in [0, 1) picks. */
function drawn<T>(items: readonly T[], draw: number): T {
  if (items.length === 0) throw new Error('drawn: no items');
  return items[Math.min(items.length - 1, Math.floor(draw * items.length))] as T;
}

/** Runs one planned fault; resolves once it has started, with what undoes it (undefined: nothing to undo). */
type Starter = (f: PlannedFault) => Promise<(() => Promise<void>) | undefined>;

class NemesisRun {
  private readonly board = new LinkBoard();
  /** Members killed or paused by a fault still in force (until restarted or resumed). */
  private readonly hit = new Set<number>();
  /** Faults in force: their end timers and what undoes them. */
  private readonly inForce = new Set<{ timer: NodeJS.Timeout | undefined; undo: () => Promise<void> }>();
  /** Starts and undos under way, and snapshot saves: awaited before the heal. */
  private readonly pending = new Set<Promise<void>>();
  private failure: Error | undefined;
  /** Once set, a fault that finishes starting is undone at once. */
  private healing = false;
  readonly counts = new Map<NemesisFaultKind, number>();

  constructor(
    private readonly cluster: FaultCluster,
    private readonly watch: Watch,
  ) {}

  /** Members that a process fault may take: running, not already hit, and never the last. */
  private processTargets(): number[] {
    const running = this.cluster.current.filter((m) => m.state === 'running' && !this.hit.has(m.id)).map((m) => m.id);
    return this.hit.size + 1 >= this.cluster.current.length ? [] : running;
  }

  /** How the poller last saw `id`: for the timeline. */
  private role(id: number): string {
    const l = this.watch.leader;
    return l === undefined ? 'no leader known' : l.id === id ? `leader t${l.term}` : 'follower';
  }

  /** The leader when `atLeader` and it is among `ids`, else the member the draw picks. */
  private target(f: PlannedFault, ids: readonly number[], draw: number): number {
    const l = this.watch.leader?.id;
    return f.atLeader && l !== undefined && ids.includes(l) ? l : drawn(ids, draw);
  }

  private track(p: Promise<void>): void {
    const tracked = p.catch((err: Error) => {
      this.failure ??= err;
      this.watch.line(`FAILED: ${err.message}`);
    });
    this.pending.add(tracked);
    void tracked.finally(() => this.pending.delete(tracked));
  }

  start(f: PlannedFault): void {
    const starter = this.starters[f.kind];
    this.track(
      (async () => {
        const undo = await starter(f);
        if (undo === undefined) return;
        if (this.healing) {
          this.track(undo());
          return;
        }
        const entry = { timer: undefined as NodeJS.Timeout | undefined, undo };
        this.inForce.add(entry);
        entry.timer = setTimeout(() => {
          this.inForce.delete(entry);
          this.track(undo());
        }, f.holdMs);
      })(),
    );
  }

  /** One fault started: for the scenario's count of faults, by kind. */
  private count(kind: NemesisFaultKind): void {
    this.counts.set(kind, (this.counts.get(kind) ?? 0) + 1);
  }

  private readonly starters: Readonly<Record<NemesisFaultKind, Starter>> = {
    kill: async (f) => {
      const ids = this.processTargets();
      if (ids.length === 0) return this.skipped(f, 'every other member is already down or paused');
      const id = this.target(f, ids, f.draws[0]);
      this.hit.add(id);
      this.watch.line(`kill -9 n${id} (${this.role(id)}), restart in ${f.holdMs} ms`);
      this.count(f.kind);
      await this.cluster.kill(id, 'SIGKILL');
      return async () => {
        const t0 = performance.now();
        await this.cluster.restart(id);
        this.hit.delete(id);
        this.watch.line(`n${id} restarted, answering after ${(performance.now() - t0).toFixed(0)} ms${await this.behind(id)}`);
      };
    },
    pause: async (f) => {
      const ids = this.processTargets();
      if (ids.length === 0) return this.skipped(f, 'every other member is already down or paused');
      const id = this.target(f, ids, f.draws[0]);
      this.hit.add(id);
      this.cluster.pause(id);
      this.watch.line(`SIGSTOP n${id} (${this.role(id)}) for ${f.holdMs} ms`);
      this.count(f.kind);
      return async () => {
        this.cluster.resume(id);
        this.hit.delete(id);
        this.watch.line(`SIGCONT n${id}`);
      };
    },
    partition: async (f) => {
      // A minority side (with the leader on it when atLeader) cut off from the majority, both ways.
      const all = this.cluster.current.map((m) => m.id);
      const size = 1 + Math.floor(f.draws[1] * Math.floor((all.length - 1) / 2));
      const l = this.watch.leader?.id;
      const first = f.atLeader && l !== undefined ? l : drawn(all.filter((id) => id !== l), f.draws[0]);
      // The rest of the minority (none with three members) in an order drawn from the plan.
      const minority = [first, ...new Rng(Math.floor(f.draws[2] * 2 ** 32)).shuffle(all.filter((id) => id !== first && id !== l)).slice(0, size - 1)].sort((x, y) => x - y);
      const majority = all.filter((id) => !minority.includes(id));
      const proxies = minority.flatMap((a) => majority.flatMap((b) => [...this.cluster.proxiesOf(a, b), ...this.cluster.proxiesOf(b, a)]));
      const fault = this.board.add(proxies, { cut: true });
      const where = l === undefined ? 'no leader known' : `leader n${l} on the ${minority.includes(l) ? 'minority' : 'majority'} side`;
      this.watch.line(`partition ${names(minority)} | ${names(majority)} (${where}) for ${f.holdMs} ms`);
      this.count(f.kind);
      return this.ending(fault, `partition ${names(minority)} | ${names(majority)} healed`);
    },
    bridge: async (f) => {
      // One pair cut both ways; the others still reach both.
      const all = this.cluster.current.map((m) => m.id);
      const a = this.target(f, all, f.draws[0]);
      const b = drawn(all.filter((id) => id !== a), f.draws[1]);
      const fault = this.board.add([...this.cluster.proxiesOf(a, b), ...this.cluster.proxiesOf(b, a)], { cut: true });
      this.watch.line(`link n${a} (${this.role(a)}) <-> n${b} (${this.role(b)}) cut both ways for ${f.holdMs} ms`);
      this.count(f.kind);
      return this.ending(fault, `link n${a} <-> n${b} healed`);
    },
    'one-way': async (f) => {
      const all = this.cluster.current.map((m) => m.id);
      const a = this.target(f, all, f.draws[0]);
      const b = drawn(all.filter((id) => id !== a), f.draws[1]);
      const [from, to] = f.draws[2] < 0.5 ? [a, b] : [b, a];
      const fault = this.board.add(this.cluster.proxiesOf(from, to), { cut: true });
      this.watch.line(`what n${from} (${this.role(from)}) sends n${to} (${this.role(to)}) is lost for ${f.holdMs} ms`);
      this.count(f.kind);
      return this.ending(fault, `n${from} -> n${to} healed`);
    },
    latency: async (f) => {
      // Every member link, or only one member's (to and from it).
      const all = this.cluster.current.map((m) => m.id);
      const one = f.draws[0] < 0.5 ? this.target(f, all, 2 * f.draws[0]) : undefined;
      const pairs = all.flatMap((a) => all.filter((b) => b !== a).map((b) => [a, b] as const)).filter(([a, b]) => one === undefined || a === one || b === one);
      const delay = { delayMs: 10 + Math.floor(f.draws[1] * 240), jitterMs: Math.floor(f.draws[2] * 100) };
      const fault = this.board.add(
        pairs.flatMap(([a, b]) => this.cluster.proxiesOf(a, b)),
        { delay },
      );
      this.watch.line(`latency ${delay.delayMs}+${delay.jitterMs} ms on ${one === undefined ? 'every member link' : `n${one}'s links (${this.role(one)})`} for ${f.holdMs} ms`);
      this.count(f.kind);
      return this.ending(fault, `latency on ${one === undefined ? 'every member link' : `n${one}'s links`} ended`);
    },
    'client-cut': async (f) => this.onClients(f, { cut: true }, 'cut'),
    'client-stall': async (f) => {
      const stall = f.draws[1] < 0.5 ? 'up' : 'down';
      return this.onClients(f, { stall }, stall === 'up' ? 'stalled (requests held)' : 'stalled (answers held)');
    },
    'client-delay': async (f) => {
      const delay = { delayMs: 50 + Math.floor(f.draws[1] * 450), jitterMs: Math.floor(f.draws[2] * 200) };
      return this.onClients(f, { delay }, `delayed ${delay.delayMs}+${delay.jitterMs} ms`);
    },
    'client-reset': async (f) => {
      const all = this.cluster.current.map((m) => m.id);
      const id = this.target(f, all, f.draws[0]);
      const l = this.cluster.clientLinkOf(id);
      const n = l.nb.resetAll() + l.ovsdb.resetAll();
      this.watch.line(`client connections to n${id} (${this.role(id)}) reset: ${n}`);
      this.count(f.kind);
      return undefined;
    },
    snapshot: async (f) => {
      const running = this.cluster.current.filter((m) => m.state === 'running' && !this.hit.has(m.id)).map((m) => m.id);
      if (running.length === 0) return this.skipped(f, 'no member running');
      const id = this.target(f, running, f.draws[0]);
      this.watch.line(`snapshot save from n${id} (${this.role(id)})`);
      this.count(f.kind);
      // A save a fault breaks (the member killed under it, no quorum to confirm the read) is
      // noted; a wrong checksum or no answer at all fails.
      this.track(
        saveSnapshot(this.cluster.nbAddress(id)).then(
          (bytes) => this.watch.line(`snapshot from n${id}: ${bytes} bytes, checksum right`),
          (err: Error) => {
            if (err instanceof SnapshotSaveBroken) throw err;
            this.watch.line(`snapshot from n${id} broke off: ${err.message}`);
          },
        ),
      );
      return undefined;
    },
  };

  /** Whether a restarted member must be sent a snapshot (the leader compacted past it), for the timeline. */
  private async behind(id: number): Promise<string> {
    const l = this.watch.leader;
    if (l === undefined || l.id === id) return '';
    const [mine, theirs] = await Promise.all([this.cluster.status(id).catch(() => undefined), this.cluster.status(l.id).catch(() => undefined)]);
    if (mine === undefined || theirs === undefined) return '';
    return theirs.firstIndex > mine.applied + 1 ? `; at ${mine.applied}, behind n${l.id}'s log (from ${theirs.firstIndex}): it needs a snapshot` : '';
  }

  /** A cut, stall or delay of the proxies clients reach one member through (gRPC and the door). */
  private async onClients(f: PlannedFault, effect: ProxyEffect, what: string): Promise<() => Promise<void>> {
    const all = this.cluster.current.map((m) => m.id);
    const id = this.target(f, all, f.draws[0]);
    const l = this.cluster.clientLinkOf(id);
    const fault = this.board.add([l.nb, l.ovsdb], effect);
    this.watch.line(`client links to n${id} (${this.role(id)}) ${what} for ${f.holdMs} ms`);
    this.count(f.kind);
    return this.ending(fault, `client links to n${id} healed`);
  }

  private ending(fault: number, line: string): () => Promise<void> {
    return async () => {
      this.board.remove(fault);
      this.watch.line(line);
    };
  }

  private async skipped(f: PlannedFault, why: string): Promise<undefined> {
    this.watch.line(`${f.kind} skipped: ${why}`);
    return undefined;
  }

  /**
   * Ends every fault in force now, and every one still starting as soon as it has started;
   * waits for all of it (a restart answering, a snapshot save that a paused member held);
   * then heals whatever is left.
   */
  async healAll(): Promise<void> {
    this.healing = true;
    while (this.inForce.size > 0 || this.pending.size > 0) {
      for (const entry of [...this.inForce]) {
        clearTimeout(entry.timer);
        this.inForce.delete(entry);
        this.track(entry.undo());
      }
      await Promise.all([...this.pending]);
    }
    this.board.clear();
    this.cluster.healAll();
    if (this.failure !== undefined) throw this.failure;
  }
}

/** Polls the running members for the leader of the highest term; records every change. */
function pollLeader(cluster: FaultCluster, watch: Watch, stop: { stopped: boolean }): Promise<void> {
  return (async () => {
    let last = '';
    while (!stop.stopped) {
      const l = await cluster.leader();
      watch.leader = l;
      const now = l === undefined ? 'no leader among the running members' : `leader n${l.id} t${l.term}`;
      if (now !== last) watch.line(now);
      last = now;
      await sleep(nemesisLimits.leaderPollMs);
    }
  })();
}

/**
 * A write through a member's client proxies (gRPC and the door in turn, member after member)
 * until one is acknowledged; returns the milliseconds it took, or throws after boundMs. Each
 * attempt inserts a row of its own outside the workload's keys, so an attempt whose outcome is
 * unknown cannot collide with a later one.
 */
async function firstWriteMs(cluster: FaultCluster, rowPrefix: string, boundMs: number): Promise<{ ms: number; via: string; attempts: string[] }> {
  const t0 = performance.now();
  const attempts: string[] = [];
  for (let i = 0; performance.now() - t0 < boundMs; i++) {
    const endpoints = cluster.clientEndpoints();
    const ep = endpoints[i % endpoints.length] as (typeof endpoints)[number];
    const door = Math.floor(i / endpoints.length) % 2 === 1;
    const op = { op: 'insert', table: 'Address_Set', row: { name: `${rowPrefix}_${i}` } };
    const via = `${ep.member}/${door ? 'ovsdb' : 'grpc'}`;
    try {
      if (door) {
        const c = await JsonRpcClient.connect(ep.ovsdb, { connectTimeoutMs: nemesisLimits.probeCallMs, requestTimeoutMs: nemesisLimits.probeCallMs });
        try {
          const results = (await c.request('transact', ['OVN_Northbound', op])) as unknown[];
          if (results.some((r) => typeof r === 'object' && r !== null && 'error' in r)) throw new Error(`refused: ${JSON.stringify(results)}`);
        } finally {
          c.abort(new Error('probe done'));
        }
      } else {
        const c = new NorthboundClient(ep.nb, nemesisLimits.probeCallMs);
        try {
          const out = await c.transact([op]);
          if (out.failed) throw new Error(`refused: ${JSON.stringify(out.results)}`);
        } finally {
          c.close();
        }
      }
      return { ms: performance.now() - t0, via, attempts };
    } catch (err) {
      attempts.push(`${via}: ${(err as Error).message.slice(0, 200)}`);
      await sleep(100);
    }
  }
  throw new Error(`no write succeeded within ${boundMs} ms after the heal: ${attempts.join('; ')}`);
}

/**
 * The nemesis as a step: runs a window of overlapping faults, heals everything, restarts what
 * is down, and checks that a write succeeds within livenessMsMax of every member answering.
 */
export function nemesis(options: NemesisOptions): FaultStep {
  return async (ctx: FaultContext) => {
    const { cluster, rec } = ctx;
    const planSeed = ctx.rng.u32();
    const plan = planNemesis(new Rng(planSeed), options);
    const watch: Watch = {
      leader: undefined,
      startedMs: performance.now(),
      line: (text) => rec.timeline(`+${((performance.now() - watch.startedMs) / 1000).toFixed(2)}s ${text}`),
    };
    watch.line(`window of ${options.windowMs} ms, ${plan.length} faults planned (plan seed ${planSeed})`);
    const snapshotsBefore = new Map([...(await cluster.statuses()).entries()].map(([id, s]) => [id, s?.snapshotIndex ?? 0]));
    const stop = { stopped: false };
    const poller = pollLeader(cluster, watch, stop);
    const run = new NemesisRun(cluster, watch);
    try {
      for (const f of plan) {
        const wait = watch.startedMs + f.atMs - performance.now();
        if (wait > 0) await sleep(wait);
        run.start(f);
      }
      const left = watch.startedMs + options.windowMs - performance.now();
      if (left > 0) await sleep(left);
      watch.line('window over: healing every fault');
      await run.healAll();
      // Faults undo themselves; this is the net under them.
      for (const m of cluster.current) {
        if (m.state === 'paused') {
          cluster.resume(m.id);
          throw new Error(`n${m.id} was still paused after every fault ended`);
        }
        if (m.state === 'down') throw new Error(`n${m.id} was still down after every fault ended`);
      }
      watch.line('healed; every member runs and answers');
      const live = await firstWriteMs(cluster, `nemesis_live_${planSeed}`, options.livenessMsMax);
      watch.line(`first write after the heal acknowledged in ${live.ms.toFixed(0)} ms via ${live.via}${live.attempts.length > 0 ? ` (after ${live.attempts.length} failed: ${live.attempts.join('; ')})` : ''}`);
      rec.note(`first write after the heal: ${live.ms.toFixed(0)} ms`);
    } finally {
      stop.stopped = true;
      await poller;
    }
    // One entry per fault (the scenario counts them), named by kind: the timeline has the rest.
    for (const [kind, n] of [...run.counts].sort()) for (let i = 0; i < n; i++) rec.fault(kind);
    const after = await cluster.statuses();
    rec.note(`snapshot index ${[...after].map(([id, s]) => `n${id} ${snapshotsBefore.get(id) ?? 0}->${s?.snapshotIndex ?? '?'}`).join(', ')}`);
  };
}
