// In-memory agents for bench/agent, spread over worker threads. An agent here is the real stream
// client and flow side (SbStream + AgentFlows) over an in-memory switch, without a hypervisor.
// Each worker thread has its own V8 heap, as each hypervisor's agent has its own process: with
// all N agents in one heap, that heap grew to several GB over a run at 500 agents (every agent
// holds every port's rows and flows), and collecting it stalled every agent at once (a 2 s
// mark-compact was the steady-state p99). The main thread asks the workers for their counters
// between rounds; nothing crosses threads inside a timed round.
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { AgentFlows } from '../../agent/flows/agent-flows.js';
import { SharedCompileCache } from '../../agent/flows/compile-cache.js';
import { MemorySwitch } from '../../agent/flows/memory-switch.js';
import type { LocalView } from '../../agent/local-view.js';
import type { SbUpdate } from '../../agent/sb-source.js';
import { SbStream } from '../../agent/sb-stream.js';

/** One agent to run: chassis name, the port it binds, and a number for its encap address. */
export interface AgentSpec {
  readonly name: string;
  readonly port: string;
  readonly k: number;
}

/** Counters of a set of agents (of one, or summed over several; for the times, the latest). */
export interface AgentsStatus {
  readonly agents: number;
  readonly registered: number;
  readonly bound: number;
  /** Updates applied with flow errors (acknowledged with the error). */
  readonly errors: number;
  readonly failing: number;
  /** One failing agent's name and last error, if any. */
  readonly firstError: string;
  /** Time spent in AgentFlows.apply, all agents together. */
  readonly applyMsTotal: number;
  /** When an agent last advanced its installed nb_cfg: the latest, in epoch ms (performance.timeOrigin based). */
  readonly nbCfgInstalledAtMs: number;
}

type Request =
  | { readonly id: number; readonly cmd: 'status' }
  | { readonly id: number; readonly cmd: 'gc' }
  | { readonly id: number; readonly cmd: 'close' };

/**
 * An agent without a hypervisor: it acknowledges each update once installed, as the runtime
 * does (with the errors, if any, which hold nb_cfg back). Its port is bound by the bench.
 */
class MemoryAgent {
  readonly source: SbStream;
  readonly flows: AgentFlows;
  readonly view: LocalView;
  registered = false;
  bound = false;
  errors = 0;
  lastError = '';
  applyMsTotal = 0;
  nbCfgInstalledAtMs = 0;

  constructor(readonly spec: AgentSpec, endpoints: readonly string[], cache: SharedCompileCache | undefined) {
    this.flows = new AgentFlows(new MemorySwitch(), cache === undefined ? {} : { sharedCache: cache });
    this.source = new SbStream({ endpoints });
    this.view = { chassis: spec.name, vifs: new Map([[spec.port, 1]]), tunnels: new Map(), localnetPatches: new Map() };
  }

  start(): this {
    const { name, port, k } = this.spec;
    this.source.start(
      { chassis: name, hostname: name, encaps: [{ type: 'geneve', ip: `10.254.${k >> 8}.${k & 255}` }], lastRevision: 0, ifaceIds: [port] },
      (u) => this.onUpdate(u),
    );
    return this;
  }

  private async onUpdate(u: SbUpdate): Promise<void> {
    for (const c of u.changes) {
      if (c.table === 'Chassis' && c.row?.name === this.spec.name) this.registered = true;
      if (c.table === 'Port_Binding' && c.row?.logical_port === this.spec.port) this.bound = (c.row.chassis as string[]).length === 1;
    }
    const t0 = performance.now();
    const nbCfgBefore = this.flows.nbCfg;
    const r = await this.flows.apply(u, this.view);
    const t1 = performance.now();
    this.applyMsTotal += t1 - t0;
    if (this.flows.nbCfg !== nbCfgBefore) this.nbCfgInstalledAtMs = performance.timeOrigin + t1;
    if (r.errors.length > 0) {
      this.errors++;
      this.lastError = r.errors.join('; ');
    }
    this.source.ack(u.toRevision, this.flows.nbCfg, r.errors.length > 0 ? this.lastError : undefined);
  }

  close(): Promise<void> {
    return this.source.close();
  }
}

function statusOf(a: MemoryAgent): AgentsStatus {
  const failing = a.lastError !== '';
  return {
    agents: 1,
    registered: a.registered ? 1 : 0,
    bound: a.bound ? 1 : 0,
    errors: a.errors,
    failing: failing ? 1 : 0,
    firstError: failing ? `${a.spec.name}: ${a.lastError.slice(0, 500)}` : '',
    applyMsTotal: a.applyMsTotal,
    nbCfgInstalledAtMs: a.nbCfgInstalledAtMs,
  };
}

function sumStatus(xs: readonly AgentsStatus[]): AgentsStatus {
  return {
    agents: xs.reduce((s, x) => s + x.agents, 0),
    registered: xs.reduce((s, x) => s + x.registered, 0),
    bound: xs.reduce((s, x) => s + x.bound, 0),
    errors: xs.reduce((s, x) => s + x.errors, 0),
    failing: xs.reduce((s, x) => s + x.failing, 0),
    firstError: xs.find((x) => x.firstError !== '')?.firstError ?? '',
    applyMsTotal: xs.reduce((s, x) => s + x.applyMsTotal, 0),
    nbCfgInstalledAtMs: xs.reduce((m, x) => Math.max(m, x.nbCfgInstalledAtMs), 0),
  };
}

/** The worker side: runs its agents and answers the main thread's requests. */
function runWorker(): void {
  const port = parentPort;
  if (port === null) throw new Error('memory-agents: not started as a worker');
  const { specs, endpoints, shareCompiles } = workerData as { specs: AgentSpec[]; endpoints: string[]; shareCompiles: boolean };
  const cache = shareCompiles ? new SharedCompileCache() : undefined;
  const agents = specs.map((s) => new MemoryAgent(s, endpoints, cache).start());
  port.on('message', (req: Request) => {
    switch (req.cmd) {
      case 'status':
        port.postMessage({ id: req.id, status: sumStatus(agents.map(statusOf)) });
        return;
      case 'gc':
        (globalThis as { gc?: () => void }).gc?.();
        port.postMessage({ id: req.id });
        return;
      case 'close':
        void Promise.all(agents.map((a) => a.close())).then(() => {
          port.postMessage({ id: req.id });
          port.close();
        });
        return;
    }
  });
}

/** N agents over `workers` threads (agents dealt round-robin), driven from the main thread. */
export class AgentPool {
  private nextId = 0;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();

  private constructor(private readonly workers: readonly Worker[]) {
    for (const w of workers) {
      w.on('message', (m: { id: number; status?: AgentsStatus }) => {
        const p = this.pending.get(m.id);
        this.pending.delete(m.id);
        p?.resolve(m.status);
      });
      // A worker that dies takes its agents with it: every request waiting fails, loudly.
      w.on('error', (err) => this.failAll(new Error(`an agent worker failed: ${err.message}`)));
    }
  }

  private failAll(err: Error): void {
    for (const p of this.pending.values()) p.reject(err);
    this.pending.clear();
  }

  static start(specs: readonly AgentSpec[], endpoints: readonly string[], workers: number, shareCompiles = true): AgentPool {
    const count = Math.max(1, Math.min(workers, specs.length));
    const slices: AgentSpec[][] = Array.from({ length: count }, () => []);
    specs.forEach((s, i) => (slices[i % count] as AgentSpec[]).push(s));
    const self = new URL(import.meta.url);
    return new AgentPool(slices.map((slice) => new Worker(self, { workerData: { specs: slice, endpoints: [...endpoints], shareCompiles } })));
  }

  get threads(): number {
    return this.workers.length;
  }

  private ask(w: Worker, cmd: Request['cmd']): Promise<unknown> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      w.postMessage({ id, cmd });
    });
  }

  async status(): Promise<AgentsStatus> {
    return sumStatus((await Promise.all(this.workers.map((w) => this.ask(w, 'status')))) as AgentsStatus[]);
  }

  /** A full collection in every worker (with --expose-gc, which workers inherit). */
  async gc(): Promise<void> {
    await Promise.all(this.workers.map((w) => this.ask(w, 'gc')));
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.map((w) => this.ask(w, 'close').catch(() => undefined)));
    await Promise.all(this.workers.map((w) => w.terminate()));
  }
}

if (!isMainThread && (workerData as { specs?: unknown } | null)?.specs !== undefined) runWorker();
