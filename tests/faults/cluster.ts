// A cluster of real `ovnts central` processes whose every peer link runs through a FaultProxy
// the test controls. Member i is told that member j is at the proxy of the ordered link i→j,
// for both Raft (the gRPC transport: i's messages to j travel on i's own connection to j) and
// the Northbound address followers forward writes to; so cutting the link i→j loses exactly
// what i says to j. A member added later is known to the others by the address its conf change
// carries: one inbound proxy per added member, shared by every sender.
//
// Clients reach a member through proxies of their own, one for its Northbound gRPC service
// and one for its OVSDB door, so a test can cut, stall or delay what clients send and hear
// without touching the members' links. The harness's own calls (Status, the final read,
// snapshot saves) go to the member's Northbound port directly: they must stay reliable.
//
// Processes are started by pid and stopped by pid; liveness comes from the child's exit event.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, statSync, truncateSync } from 'node:fs';
import { join } from 'node:path';
import { AdminClient, type StatusReplyJson } from '../../server/admin-service.js';
import type { Rng } from '../helpers/seeded-rng.js';
import { freePortBlock } from './ports.js';
import { FaultProxy } from './proxy.js';
import { ovntsArgv } from '../helpers/ovnts-bin.js';


export const clusterLimits = {
  /** How long a member may take to answer Status after it was started (under load, on a 2-core machine). */
  startMsMax: 60_000,
  /** How long a process may take to die after SIGKILL/SIGTERM. */
  exitMsMax: 20_000,
  /** One Status call while polling. */
  statusCallMs: 2_000,
  pollMs: 50,
} as const;

export type MemberState = 'running' | 'paused' | 'down' | 'removed';

export interface Member {
  readonly id: number;
  readonly name: string;
  readonly nbPort: number;
  readonly raftPort: number;
  /** Where its OVSDB door (OVN_Northbound over JSON-RPC) listens. */
  readonly ovsdbPort: number;
  readonly dataDir: string;
  readonly logPath: string;
  /** Joined after the founding (its addresses travel in the log). */
  readonly joined: boolean;
  state: MemberState;
  child: ChildProcess | undefined;
  starts: number;
}

interface Link {
  readonly raft: FaultProxy;
  readonly nb: FaultProxy;
}

/** The proxies clients reach one member through. */
export interface ClientLink {
  /** To its Northbound gRPC service. */
  readonly nb: FaultProxy;
  /** To its OVSDB door. */
  readonly ovsdb: FaultProxy;
}

/** Where a client reaches one member (through that member's client proxies). */
export interface ClientEndpoint {
  readonly member: string;
  /** host:port of the Northbound gRPC service. */
  readonly nb: string;
  readonly ovsdb: { readonly host: string; readonly port: number };
}

export interface FaultClusterOptions {
  readonly dir: string;
  readonly size: number;
  readonly clusterId: string;
  /** For the proxies' jitter. */
  readonly rng: Rng;
  /** Passed to every member as --snapshot-entries. */
  readonly snapshotEntries: number;
  readonly tickMs?: number;
  readonly electionTicks?: number;
}

/** Where a member's newest write-ahead log ended at some moment. */
export interface LogMark {
  readonly file: string;
  readonly size: number;
}

export interface LeaderSeen {
  readonly id: number;
  readonly term: number;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** `p`, or a rejection with `message` after `ms`. */
async function withTimeout<T>(p: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(message)), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

export class FaultCluster {
  readonly members: Member[] = [];
  /** Members a scenario expects to stop on a storage error (their disks were made to lose synced writes). */
  readonly expectedStops = new Set<number>();
  /** `${from}>${to}` → the proxies that carry what `from` sends to `to`. */
  private readonly links = new Map<string, Link>();
  /** For members added later: the proxies every other member reaches them through. */
  private readonly inbound = new Map<number, Link>();
  /** Member id → the proxies clients reach it through. */
  private readonly clientLinks = new Map<number, ClientLink>();

  private constructor(readonly options: FaultClusterOptions) {}

  static async start(options: FaultClusterOptions): Promise<FaultCluster> {
    const c = new FaultCluster(options);
    const n = options.size;
    // Per member: its Northbound, Raft and OVSDB ports and its two client proxies; per
    // ordered pair, a Raft and a Northbound proxy.
    const ports = await freePortBlock(5 * n + 2 * n * (n - 1));
    const take = (): number => {
      const p = ports.shift();
      if (p === undefined) throw new Error('ran out of ports');
      return p;
    };
    for (let id = 1; id <= n; id++) {
      const m = c.newMember(id, take(), take(), take(), false);
      c.members.push(m);
      c.clientLinks.set(id, await c.newClientLink(take(), take(), m));
    }
    for (const from of c.members) {
      for (const to of c.members) {
        if (from.id === to.id) continue;
        c.links.set(`${from.id}>${to.id}`, await c.newLink(take(), take(), to));
      }
    }
    try {
      for (const m of c.members) c.spawn(m);
      for (const m of c.members) await c.waitStarted(m);
    } catch (err) {
      await c.stop();
      throw err;
    }
    return c;
  }

  private newMember(id: number, nbPort: number, raftPort: number, ovsdbPort: number, joined: boolean): Member {
    const dataDir = join(this.options.dir, `n${id}`);
    mkdirSync(dataDir, { recursive: true });
    return { id, name: `n${id}`, nbPort, raftPort, ovsdbPort, dataDir, logPath: join(this.options.dir, `n${id}.log`), joined, state: 'down', child: undefined, starts: 0 };
  }

  private async newClientLink(nbPort: number, ovsdbPort: number, to: Member): Promise<ClientLink> {
    const random = (): number => this.options.rng.float();
    return {
      nb: await FaultProxy.start({ host: '127.0.0.1', port: nbPort }, { host: '127.0.0.1', port: to.nbPort }, random),
      ovsdb: await FaultProxy.start({ host: '127.0.0.1', port: ovsdbPort }, { host: '127.0.0.1', port: to.ovsdbPort }, random),
    };
  }

  private async newLink(raftPort: number, nbPort: number, to: Member): Promise<Link> {
    const random = (): number => this.options.rng.float();
    return {
      raft: await FaultProxy.start({ host: '127.0.0.1', port: raftPort }, { host: '127.0.0.1', port: to.raftPort }, random),
      nb: await FaultProxy.start({ host: '127.0.0.1', port: nbPort }, { host: '127.0.0.1', port: to.nbPort }, random),
    };
  }

  /** The proxy link `from` sends to `to` through (the inbound one for added members). */
  private linkOf(from: number, to: number): Link {
    const l = this.links.get(`${from}>${to}`) ?? this.inbound.get(to);
    if (l === undefined) throw new Error(`no link ${from}>${to}`);
    return l;
  }

  member(id: number): Member {
    const m = this.members.find((x) => x.id === id);
    if (m === undefined) throw new Error(`no member ${id}`);
    return m;
  }

  /** Members that belong to the cluster (not removed), in id order. */
  get current(): Member[] {
    return this.members.filter((m) => m.state !== 'removed');
  }

  /** Where clients reach the members they may use (every one not removed), through the client proxies. */
  clientEndpoints(): ClientEndpoint[] {
    return this.current.map((m) => {
      const l = this.clientLinkOf(m.id);
      return { member: m.name, nb: l.nb.address, ovsdb: { host: '127.0.0.1', port: l.ovsdb.port } };
    });
  }

  clientLinkOf(id: number): ClientLink {
    const l = this.clientLinks.get(id);
    if (l === undefined) throw new Error(`no client link to ${id}`);
    return l;
  }

  /** A member's Northbound address, direct (no proxy): for the harness's own calls. */
  nbAddress(id: number): string {
    return `127.0.0.1:${this.member(id).nbPort}`;
  }

  private argsOf(m: Member): string[] {
    const others = this.current.filter((o) => o.id !== m.id);
    const peers = [`${m.name}@${m.id}=127.0.0.1:${m.raftPort}`, ...others.map((o) => `${o.name}@${o.id}=${this.linkOf(m.id, o.id).raft.address}`)];
    const nbPeers = [`${m.name}=127.0.0.1:${m.nbPort}`, ...others.map((o) => `${o.name}=${this.linkOf(m.id, o.id).nb.address}`)];
    return [
      'central',
      `--name=${m.name}`,
      `--data-dir=${m.dataDir}`,
      `--peers=${peers.join(',')}`,
      `--nb-peers=${nbPeers.join(',')}`,
      `--cluster-id=${this.options.clusterId}`,
      `--ovsdb=ptcp:${m.ovsdbPort}:127.0.0.1`,
      `--snapshot-entries=${this.options.snapshotEntries}`,
      // Every snapshotEntries entries, however small the log against the state: the faults
      // are meant to land during compactions and snapshot installs.
      '--snapshot-log-ratio=0',
      `--tick-ms=${this.options.tickMs ?? 100}`,
      `--election-ticks=${this.options.electionTicks ?? 10}`,
      ...(m.joined ? ['--join'] : []),
    ];
  }

  private spawn(m: Member): void {
    if (m.state === 'running' || m.state === 'paused') throw new Error(`${m.name} is already running`);
    const log = openSync(m.logPath, 'a');
    const child = spawn(...ovntsArgv(...this.argsOf(m)), { stdio: ['ignore', log, log] });
    closeSync(log);
    m.child = child;
    m.state = 'running';
    m.starts++;
    child.once('exit', () => {
      if (m.child === child) {
        m.child = undefined;
        if (m.state !== 'removed') m.state = 'down';
      }
    });
  }

  private async waitStarted(m: Member): Promise<void> {
    const deadline = Date.now() + clusterLimits.startMsMax;
    for (;;) {
      if (m.child === undefined) throw new Error(`${m.name} exited while starting: ${this.logTail(m)}`);
      if ((await this.status(m.id).catch(() => undefined)) !== undefined) return;
      if (Date.now() > deadline) throw new Error(`${m.name} did not answer within ${clusterLimits.startMsMax} ms: ${this.logTail(m)}`);
      await sleep(100);
    }
  }

  /** The last lines a member wrote (for failure messages). */
  logTail(m: Member, bytes = 2000): string {
    if (!existsSync(m.logPath)) return '(no log)';
    const text = readFileSync(m.logPath, 'utf8');
    return text.slice(-bytes);
  }

  /** Lines a member logged that point at trouble (storage errors, recovery, crashes). */
  alarmingLogLines(m: Member): string[] {
    if (!existsSync(m.logPath)) return [];
    return readFileSync(m.logPath, 'utf8')
      .split('\n')
      .filter((l) => /storage|corrupt|torn|fatal|Error|assert/i.test(l));
  }

  async status(id: number, digests = false, timeoutMs: number = clusterLimits.statusCallMs): Promise<StatusReplyJson> {
    // A fresh channel each time: a cached one to a member that was down backs off for long.
    const c = new AdminClient(this.nbAddress(id), timeoutMs);
    try {
      return await c.status({ digests });
    } finally {
      c.close();
    }
  }

  /** Status of every running member (paused and down ones are skipped); failures as undefined. */
  async statuses(digests = false): Promise<Map<number, StatusReplyJson | undefined>> {
    const running = this.current.filter((m) => m.state === 'running');
    const all = await Promise.all(running.map((m) => this.status(m.id, digests).catch(() => undefined)));
    return new Map(running.map((m, i) => [m.id, all[i]]));
  }

  /** The leader of the highest term among what running members say, if one says it leads. */
  async leader(exclude: ReadonlySet<number> = new Set()): Promise<LeaderSeen | undefined> {
    let best: LeaderSeen | undefined;
    for (const [id, s] of await this.statuses()) {
      if (s === undefined || exclude.has(id) || s.role !== 'leader') continue;
      if (best === undefined || s.term > best.term) best = { id, term: s.term };
    }
    return best;
  }

  /**
   * Polls until a member outside `exclude` leads in a term above `aboveTerm`; returns it and
   * the milliseconds since `sinceMs` (performance.now() of the fault).
   */
  async waitForNewLeader(aboveTerm: number, exclude: ReadonlySet<number>, sinceMs: number, timeoutMs = 60_000): Promise<LeaderSeen & { afterMs: number }> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const l = await this.leader(exclude);
      if (l !== undefined && l.term > aboveTerm) return { ...l, afterMs: performance.now() - sinceMs };
      if (Date.now() > deadline) throw new Error(`no new leader above term ${aboveTerm} within ${timeoutMs} ms`);
      await sleep(clusterLimits.pollMs);
    }
  }

  /** A leader that the majority of current members follow (their `leader` field names it). */
  async waitForStableLeader(timeoutMs = 60_000): Promise<LeaderSeen> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const all = await this.statuses();
      const l = await this.leader();
      if (l !== undefined) {
        const following = [...all.values()].filter((s) => s !== undefined && s.leader === l.id && s.term === l.term).length;
        if (following > this.current.length / 2) return l;
      }
      if (Date.now() > deadline) throw new Error(`no stable leader within ${timeoutMs} ms: ${[...all].map(([id, s]) => `n${id}: ${s === undefined ? 'no answer' : `${s.role} term ${s.term} leader ${s.leader}`}`).join('; ')}`);
      await sleep(clusterLimits.pollMs);
    }
  }

  // --- faults on processes ---------------------------------------------------------------

  /** SIGKILL (or another signal) and wait until the process is gone. */
  async kill(id: number, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const m = this.member(id);
    const child = m.child;
    if (child === undefined) return;
    if (m.state === 'paused' && signal !== 'SIGKILL') process.kill(child.pid as number, 'SIGCONT');
    const exited = new Promise<void>((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve() : child.once('exit', () => resolve())));
    process.kill(child.pid as number, signal);
    await withTimeout(exited, clusterLimits.exitMsMax, `${m.name} (pid ${child.pid}) still alive ${clusterLimits.exitMsMax} ms after ${signal}`);
  }

  /** Starts a stopped member on its data again and waits until it answers. */
  async restart(id: number): Promise<void> {
    const m = this.member(id);
    this.spawn(m);
    await this.waitStarted(m);
  }

  pause(id: number): void {
    const m = this.member(id);
    if (m.child === undefined || m.state !== 'running') throw new Error(`${m.name} is not running`);
    process.kill(m.child.pid as number, 'SIGSTOP');
    m.state = 'paused';
  }

  resume(id: number): void {
    const m = this.member(id);
    if (m.child === undefined || m.state !== 'paused') throw new Error(`${m.name} is not paused`);
    process.kill(m.child.pid as number, 'SIGCONT');
    m.state = 'running';
  }

  /** The newest non-empty LevelDB write-ahead log (*.log) in a member's data folder, and its size. */
  logMark(id: number): LogMark | undefined {
    const m = this.member(id);
    const logs = readdirSync(m.dataDir)
      .filter((f) => /^\d+\.log$/.test(f))
      .map((f) => ({ file: f, n: Number(f.slice(0, -4)), size: statSync(join(m.dataDir, f)).size }))
      .filter((x) => x.size > 0)
      .sort((a, b) => b.n - a.n);
    const newest = logs[0];
    return newest === undefined ? undefined : { file: newest.file, size: newest.size };
  }

  /**
   * A torn write: truncates the newest LevelDB write-ahead log of a stopped member at a point
   * drawn by `pick` from what may be cut. With `after`, only bytes written after that mark
   * may go (the file it names, from its size on; a newer file, all of it). Returns what was
   * cut, or undefined when there was nothing to cut.
   */
  tearLogTail(id: number, pick: (lo: number, hi: number) => number, after?: LogMark): { file: string; sizeBefore: number; cut: number } | undefined {
    const m = this.member(id);
    if (m.child !== undefined) throw new Error(`${m.name} must be stopped before its log is torn`);
    const newest = this.logMark(id);
    if (newest === undefined) return undefined;
    const floor = after === undefined ? 0 : newest.file === after.file ? after.size : Number(newest.file.slice(0, -4)) > Number(after.file.slice(0, -4)) ? 0 : newest.size;
    if (newest.size <= floor) return undefined;
    const keep = pick(floor, newest.size - 1);
    truncateSync(join(m.dataDir, newest.file), keep);
    return { file: newest.file, sizeBefore: newest.size, cut: newest.size - keep };
  }

  // --- faults on links --------------------------------------------------------------------

  /** Every link (Raft and Northbound forwarding) from `from` to `to`. */
  proxiesOf(from: number, to: number): FaultProxy[] {
    const l = this.linkOf(from, to);
    return [l.raft, l.nb];
  }

  /** Cuts what `from` says to `to` (one way). */
  cutOneWay(from: number, to: number): void {
    for (const p of this.proxiesOf(from, to)) p.cut();
  }

  /** Cuts both ways between a and b. */
  cutBetween(a: number, b: number): void {
    this.cutOneWay(a, b);
    this.cutOneWay(b, a);
  }

  /** Cuts `id` off from every other member, both ways. */
  isolate(id: number): void {
    for (const o of this.current) if (o.id !== id) this.cutBetween(id, o.id);
  }

  /** Adds latency (each direction of every link) of delayMs plus up to jitterMs. */
  delayAll(delayMs: number, jitterMs: number): void {
    for (const p of this.allProxies()) {
      p.delay('up', delayMs, jitterMs);
      p.delay('down', delayMs, jitterMs);
    }
  }

  /** Ends every cut, stall and delay, on the members' links and the clients'. */
  healAll(): void {
    for (const p of this.allProxies()) p.heal();
  }

  private allProxies(): FaultProxy[] {
    const clients = [...this.clientLinks.values()].flatMap((l) => [l.nb, l.ovsdb]);
    return [...[...this.links.values(), ...this.inbound.values()].flatMap((l) => [l.raft, l.nb]), ...clients];
  }

  // --- membership -------------------------------------------------------------------------

  /** Removes `id` through the leader, then stops its process. */
  async removeMember(id: number): Promise<void> {
    const leader = await this.waitForStableLeader();
    const c = new AdminClient(this.nbAddress(leader.id), 20_000);
    try {
      await c.removeMember(id);
    } finally {
      c.close();
    }
    await this.kill(id, 'SIGTERM');
    this.member(id).state = 'removed';
  }

  /** Adds a fresh voter (the next id) through the leader, starts it with --join, waits until it answers. */
  async addMember(): Promise<Member> {
    const [nbPort, raftPort, ovsdbPort, clientNb, clientOvsdb, inRaft, inNb, ...outPorts] = await freePortBlock(7 + 2 * this.current.length);
    const id = Math.max(...this.members.map((m) => m.id)) + 1;
    const m = this.newMember(id, nbPort as number, raftPort as number, ovsdbPort as number, true);
    this.clientLinks.set(id, await this.newClientLink(clientNb as number, clientOvsdb as number, m));
    const random = (): number => this.options.rng.float();
    this.inbound.set(id, {
      raft: await FaultProxy.start({ host: '127.0.0.1', port: inRaft as number }, { host: '127.0.0.1', port: m.raftPort }, random),
      nb: await FaultProxy.start({ host: '127.0.0.1', port: inNb as number }, { host: '127.0.0.1', port: m.nbPort }, random),
    });
    for (const o of this.current) {
      this.links.set(`${id}>${o.id}`, await this.newLink(outPorts.shift() as number, outPorts.shift() as number, o));
    }
    const leader = await this.waitForStableLeader();
    const c = new AdminClient(this.nbAddress(leader.id), 20_000);
    try {
      const inb = this.inbound.get(id) as Link;
      const r = await c.addMember({ id, raftAddress: inb.raft.address, nbAddress: inb.nb.address });
      if (r.id !== id) throw new Error(`asked for member ${id}, the cluster added ${r.id}`);
    } finally {
      c.close();
    }
    this.members.push(m);
    this.spawn(m);
    await this.waitStarted(m);
    return m;
  }

  // --- convergence -------------------------------------------------------------------------

  /**
   * Waits until every current member runs, answers, has applied the same index as the
   * others, and reports the same NB and SB digests (no writes may be in flight). Returns
   * the common applied index and digests; throws with every member's view on timeout.
   */
  async converge(timeoutMs = 90_000): Promise<{ applied: number; nbSha256: string; sbSha256: string; voters: number[] }> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const down = this.current.filter((m) => m.state !== 'running');
      if (down.length > 0) throw new Error(`cannot converge with members not running: ${down.map((m) => `${m.name} ${m.state}`).join(', ')}`);
      const all = await this.statuses(true);
      const views = [...all.values()];
      const first = views[0];
      if (first !== undefined && views.every((s) => s !== undefined && s.fatalError === '' && s.applied === first.applied && s.nbSha256 === first.nbSha256 && s.sbSha256 === first.sbSha256 && s.commit === first.applied)) {
        return { applied: first.applied, nbSha256: first.nbSha256, sbSha256: first.sbSha256, voters: first.voters };
      }
      const last = [...all].map(([id, s]) => (s === undefined ? `n${id}: no answer` : `n${id}: ${s.role} t${s.term} commit ${s.commit} applied ${s.applied} nb ${s.nbSha256.slice(0, 12)} sb ${s.sbSha256.slice(0, 12)}${s.fatalError ? ` FATAL ${s.fatalError}` : ''}`)).join('; ');
      if (Date.now() > deadline) throw new Error(`members did not converge within ${timeoutMs} ms: ${last}`);
      await sleep(200);
    }
  }

  /** Stops every member (SIGTERM, then SIGKILL) and every proxy. */
  async stop(): Promise<void> {
    for (const m of this.members) {
      if (m.child === undefined) continue;
      if (m.state === 'paused') process.kill(m.child.pid as number, 'SIGCONT');
      await this.kill(m.id, 'SIGTERM').catch(() => this.kill(m.id, 'SIGKILL'));
    }
    for (const p of this.allProxies()) await p.close();
  }
}
