// Three (or more) `ovnts raft-kv` processes on loopback, each with its own LevelDB folder,
// started and stopped by pid: for the multi-process crash tests and bench/raft.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { KvClient } from '../../cluster/kv-service.js';
import { isAlive, waitForExit } from './process.js';

/** A free TCP port on 127.0.0.1 (the kernel picks; we release it for the child to bind). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

export interface RaftKvClusterOptions {
  readonly dir: string;
  readonly size?: number;
  /** The command that runs `ovnts`: e.g. ovntsCommand() (tests/helpers/ovnts-bin.ts). */
  readonly ovnts: readonly string[];
  readonly tickMs?: number;
  readonly electionTicks?: number;
  readonly snapshotEntries?: number;
  /** Passed as --snapshot-log-ratio when given (0: a snapshot every snapshotEntries entries). */
  readonly snapshotLogRatio?: number;
  readonly readyTimeoutMs?: number;
}

interface Member {
  readonly id: number;
  readonly raft: string;
  readonly client: string;
  readonly data: string;
  child: ChildProcess | undefined;
  stderr: string;
}

export class RaftKvCluster {
  private constructor(
    private readonly options: RaftKvClusterOptions,
    readonly members: Member[],
  ) {}

  static async start(options: RaftKvClusterOptions): Promise<RaftKvCluster> {
    const size = options.size ?? 3;
    const members: Member[] = [];
    for (let id = 1; id <= size; id++) {
      const data = join(options.dir, `node${id}`);
      mkdirSync(data, { recursive: true });
      members.push({ id, raft: `127.0.0.1:${await freePort()}`, client: `127.0.0.1:${await freePort()}`, data, child: undefined, stderr: '' });
    }
    const cluster = new RaftKvCluster(options, members);
    await Promise.all(members.map((m) => cluster.startMember(m.id)));
    return cluster;
  }

  member(id: number): Member {
    const m = this.members.find((x) => x.id === id);
    if (m === undefined) throw new Error(`no member ${id}`);
    return m;
  }

  client(options: { callTimeoutMs?: number; operationTimeoutMs?: number } = {}): KvClient {
    return new KvClient({ nodes: new Map(this.members.map((m) => [m.id, m.client])), ...options });
  }

  async startMember(id: number): Promise<void> {
    const m = this.member(id);
    if (m.child !== undefined && m.child.pid !== undefined && isAlive(m.child.pid)) throw new Error(`member ${id} is running`);
    const o = this.options;
    const [cmd, ...pre] = o.ovnts;
    const args = [
      ...pre,
      'raft-kv',
      `--id=${id}`,
      `--data=${m.data}`,
      `--raft=${m.raft}`,
      `--client=${m.client}`,
      `--peers=${this.members.map((x) => `${x.id}=${x.raft}`).join(',')}`,
      `--bootstrap=${this.members.map((x) => x.id).join(',')}`,
      `--tick-ms=${o.tickMs ?? 100}`,
      `--election-ticks=${o.electionTicks ?? 10}`,
      `--snapshot-entries=${o.snapshotEntries ?? 10_000}`,
      ...(o.snapshotLogRatio !== undefined ? [`--snapshot-log-ratio=${o.snapshotLogRatio}`] : []),
    ];
    const child = spawn(cmd as string, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    m.child = child;
    m.stderr = '';
    child.stderr?.on('data', (b: Buffer) => {
      m.stderr = (m.stderr + b.toString()).slice(-4000);
    });
    const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`member ${id} not ready in time; stderr: ${m.stderr}`)), o.readyTimeoutMs ?? 20_000);
      lines.on('line', (line) => {
        if (line.startsWith('{"ready"')) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`member ${id} exited (${code ?? signal}) before ready; stderr: ${m.stderr}`));
      });
    });
  }

  /** Signals a member's process (by the pid we spawned) and waits until it is gone. */
  async kill(id: number, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const m = this.member(id);
    const pid = m.child?.pid;
    if (pid === undefined || !isAlive(pid)) return;
    process.kill(pid, signal);
    await waitForExit(pid, 15_000);
    m.child = undefined;
  }

  async leader(client: KvClient): Promise<number> {
    for (const m of this.members) {
      if (m.child === undefined) continue;
      const s = await client.status(m.id).catch(() => undefined);
      if (s?.role === 'leader') return m.id;
    }
    return 0;
  }

  async stop(): Promise<void> {
    await Promise.all(this.members.map((m) => this.kill(m.id, 'SIGTERM')));
  }
}
