// An interpreter for scripted Raft scenarios (tests/testdata/raft/*.txt), after etcd-io/raft's
// interaction tests. Each line is a command; the interpreter echoes it ("> command") followed
// by what happened, and the whole trace is compared with a reviewed snapshot.
//
// Nodes live in memory with a MemoryDisk each. The shell order is the production one:
// send messages → persist → send after-persist messages → apply → advance. Messages sit in a
// network queue until `deliver` or `stabilize` hands them over, so a script controls every
// interleaving.
//
// Commands:
//   add-nodes N                 founding voters 1..N, bootstrapped with the same first entry
//   campaign ID | tick ID N | tick-all N
//   propose ID DATA             a normal entry on node ID
//   process-ready [ID...]       handle each node's Ready (persist, queue messages, apply)
//   deliver [ID...]             step every queued message (to the listed nodes) once
//   stabilize                   process-ready and deliver until nothing moves
//   drop A->B                   discard queued messages from A to B
//   partition 1 | 2 3           cut every link between the groups; heal restores them
//   crash ID | restart ID       crash loses all that was not persisted
//   transfer-leader FROM TO | read-index ID CTX
//   add-voter ID | add-learner ID | promote ID | remove ID | set-election-ticks N
//                               proposed through the current leader; a new node starts empty
//   compact ID INDEX            node ID snapshots its state machine at INDEX and drops the log
//   status | log ID             print node state / one node's log
//   # comment                   echoed

import assert from 'node:assert';
import { bootstrapState, emptyState } from '../../cluster/bootstrap.js';
import { formatConfState, type ConfChange } from '../../cluster/conf-change.js';
import type { RaftConfig } from '../../cluster/config.js';
import { RawNode } from '../../cluster/raw-node.js';
import type { Message, NodeId, Ready } from '../../cluster/types.js';
import { formatEntries, formatEntry, formatMessage } from './format.js';
import { MemoryDisk } from './memory-disk.js';

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const clusterId = 'scenario';
const stabilizeRoundsMax = 1000;

export interface ScenarioNode {
  readonly id: NodeId;
  raw: RawNode | undefined;
  readonly disk: MemoryDisk;
  /** The state machine: the applied normal entries (index and data), in order. */
  applied: { index: number; data: string }[];
  appliedIndex: number;
  reads: { index: number; ctx: string }[];
}

export class Scenario {
  readonly nodes = new Map<NodeId, ScenarioNode>();
  private network: Message[] = [];
  private cut = new Set<string>();
  private out: string[] = [];
  private options: Record<string, number | boolean> = {};

  run(script: string): string {
    for (const raw of script.split('\n')) {
      const line = raw.trim();
      if (line === '') continue;
      this.out.push(`> ${line}`);
      if (line.startsWith('#')) continue;
      this.command(line);
    }
    return this.out.join('\n') + '\n';
  }

  private print(s: string): void {
    this.out.push(`  ${s}`);
  }

  node(id: NodeId): ScenarioNode {
    const n = this.nodes.get(id);
    assert(n !== undefined, `no node ${id}`);
    return n;
  }

  live(id: NodeId): RawNode {
    const raw = this.node(id).raw;
    assert(raw !== undefined, `node ${id} is down`);
    return raw;
  }

  /** The leader with the highest term among running nodes. */
  leader(): NodeId | undefined {
    let best: RawNode | undefined;
    for (const n of this.nodes.values()) {
      const r = n.raw;
      if (r !== undefined && r.raft.role === 'leader' && (best === undefined || r.raft.term > best.raft.term)) best = r;
    }
    return best?.id;
  }

  private newNode(id: NodeId, raw: RawNode, disk: MemoryDisk): void {
    this.nodes.set(id, { id, raw, disk, applied: [], appliedIndex: 0, reads: [] });
  }

  private config(id: NodeId): RaftConfig {
    return { ...this.options, id, clusterId, seed: id };
  }

  private command(line: string): void {
    const [cmd, ...args] = line.split(/\s+/);
    const num = (i: number): number => {
      const v = Number(args[i]);
      assert(Number.isInteger(v), `${cmd}: argument ${i + 1} must be an integer in "${line}"`);
      return v;
    };
    const ids = (): NodeId[] => (args.length > 0 ? args.map(Number) : [...this.nodes.keys()]);
    switch (cmd) {
      case 'add-nodes': {
        const n = num(0);
        // Options such as entriesPerMessageMax=1 apply to every node of the scenario.
        for (const opt of args.slice(1)) {
          const [k, v] = opt.split('=');
          assert(k !== undefined && v !== undefined, `add-nodes: bad option ${opt}`);
          this.options[k] = v === 'true' ? true : v === 'false' ? false : Number(v);
        }
        const voters = Array.from({ length: n }, (_, i) => i + 1);
        for (const id of voters) {
          const disk = new MemoryDisk(bootstrapState(voters));
          this.newNode(id, new RawNode(this.config(id), disk.load()), disk);
        }
        this.print(`nodes ${voters.join(' ')}: ${formatConfState({ voters, learners: [], removed: [] })}`);
        break;
      }
      case 'campaign':
        this.live(num(0)).campaign();
        break;
      case 'tick': {
        const raw = this.live(num(0));
        for (let i = 0; i < num(1); i++) raw.tick();
        break;
      }
      case 'tick-all':
        for (let i = 0; i < num(0); i++) for (const n of this.nodes.values()) n.raw?.tick();
        break;
      case 'propose': {
        const r = this.live(num(0)).propose(encoder.encode(args.slice(1).join(' ')));
        this.print(formatResult(r));
        break;
      }
      case 'process-ready':
        for (const id of ids()) this.processReady(id);
        break;
      case 'deliver':
        this.deliver(new Set(ids()));
        break;
      case 'stabilize':
        this.stabilize();
        break;
      case 'drop': {
        const [from, to] = (args[0] ?? '').split('->').map(Number);
        const before = this.network.length;
        this.network = this.network.filter((m) => !(m.from === from && m.to === to));
        this.print(`dropped ${before - this.network.length} message(s)`);
        break;
      }
      case 'partition': {
        const groups = args.join(' ').split('|').map((g) => g.trim().split(/\s+/).map(Number));
        for (const a of groups) {
          for (const b of groups) {
            if (a === b) continue;
            for (const x of a) for (const y of b) this.cut.add(`${x}->${y}`);
          }
        }
        break;
      }
      case 'heal':
        this.cut.clear();
        break;
      case 'crash': {
        const n = this.node(num(0));
        n.raw = undefined;
        this.network = this.network.filter((m) => m.to !== n.id && m.from !== n.id);
        break;
      }
      case 'restart': {
        const n = this.node(num(0));
        assert(n.raw === undefined, `node ${n.id} is running`);
        const stored = n.disk.load();
        n.raw = new RawNode(this.config(n.id), stored);
        // The state machine restarts from the snapshot and replays committed entries.
        n.appliedIndex = stored.snapshot?.meta.index ?? 0;
        n.applied = stored.snapshot === undefined ? [] : decodeImage(stored.snapshot.data);
        const hs = stored.hardState;
        this.print(`restarted ${n.id}: term=${hs.term} vote=${hs.vote} commit=${hs.commit} last=${n.disk.lastIndex()}`);
        break;
      }
      case 'transfer-leader': {
        const r = this.live(num(0)).transferLeadership(num(1));
        this.print(r.kind === 'not-leader' ? `not-leader (hint ${r.leaderHint})` : r.kind === 'invalid' ? `invalid: ${r.reason}` : r.kind);
        break;
      }
      case 'read-index': {
        const r = this.live(num(0)).readIndex(args[1] ?? '');
        this.print(r.kind === 'not-leader' ? `not-leader (hint ${r.leaderHint})` : r.kind === 'dropped' ? `dropped: ${r.reason}` : r.kind);
        break;
      }
      case 'add-voter':
      case 'add-learner':
      case 'promote':
      case 'remove':
      case 'set-election-ticks': {
        const arg = num(0);
        if ((cmd === 'add-voter' || cmd === 'add-learner') && !this.nodes.has(arg)) {
          const disk = new MemoryDisk(emptyState());
          this.newNode(arg, new RawNode(this.config(arg), disk.load()), disk);
        }
        const cc: ConfChange =
          cmd === 'add-voter' ? { kind: 'add-voter', id: arg }
          : cmd === 'add-learner' ? { kind: 'add-learner', id: arg }
          : cmd === 'promote' ? { kind: 'promote-learner', id: arg }
          : cmd === 'remove' ? { kind: 'remove', id: arg }
          : { kind: 'set-election-ticks', ticks: arg };
        const lead = this.leader();
        assert(lead !== undefined, `${cmd}: no leader`);
        this.print(`via ${lead}: ${formatResult(this.live(lead).proposeConfChange(cc))}`);
        break;
      }
      case 'compact': {
        const n = this.node(num(0));
        const index = num(1);
        assert(index <= n.appliedIndex, `compact ${index}: node ${n.id} applied only ${n.appliedIndex}`);
        // The scenario state machine's image is the list of applied data; take it at `index`.
        const image = n.applied.filter((a) => a.index <= index);
        const r = this.live(n.id).compact(index, encoder.encode(JSON.stringify(image)));
        if (r.kind === 'compacted') {
          n.disk.compact(r.snapshot);
          this.print(`compacted ${n.id} to ${r.snapshot.meta.term}/${r.snapshot.meta.index}`);
        } else if (r.kind === 'already-compacted') {
          this.print(`already compacted at ${r.snapshotIndex}`);
        } else {
          this.print('snapshot install pending');
        }
        break;
      }
      case 'status':
        for (const n of [...this.nodes.values()].sort((a, b) => a.id - b.id)) this.print(this.describe(n));
        break;
      case 'log': {
        const n = this.node(num(0));
        const snap = n.disk.snapshot;
        this.print(`${n.id}: snapshot=${snap === undefined ? 'none' : `${snap.meta.term}/${snap.meta.index}`} ${formatEntries(n.disk.entries)}`);
        break;
      }
      default:
        assert.fail(`unknown scenario command "${line}"`);
    }
  }

  describe(n: ScenarioNode): string {
    const raw = n.raw;
    if (raw === undefined) return `${n.id}: down (disk term=${n.disk.hardState.term} commit=${n.disk.hardState.commit} last=${n.disk.lastIndex()})`;
    const s = raw.status();
    let line = `${s.id}: ${s.role} term=${s.term} lead=${s.lead} commit=${s.commit} applied=${n.appliedIndex} log=${s.firstIndex}..${s.lastIndex} ${formatConfState(s.conf)}`;
    if (s.role === 'leader') line += ` progress={${[...s.progress].map(([id, p]) => `${id}: ${p}`).join(', ')}}`;
    return line;
  }

  processReady(id: NodeId): boolean {
    const n = this.node(id);
    const raw = n.raw;
    if (raw === undefined || !raw.hasReady()) return false;
    const rd = raw.ready();
    this.printReady(id, rd);
    this.network.push(...rd.messages);
    n.disk.persist(rd);
    this.network.push(...rd.messagesAfterPersist);
    if (rd.snapshot !== undefined) {
      n.applied = decodeImage(rd.snapshot.data);
      n.appliedIndex = rd.snapshot.meta.index;
    }
    for (const e of rd.committedEntries) {
      assert(e.index === n.appliedIndex + 1, `node ${id} applies ${e.index} after ${n.appliedIndex}`);
      n.appliedIndex = e.index;
      if (e.type === 'normal') n.applied.push({ index: e.index, data: decoder.decode(e.data) });
    }
    n.reads.push(...rd.readStates);
    raw.advance();
    return true;
  }

  private printReady(id: NodeId, rd: Ready): void {
    const lines: string[] = [];
    if (rd.softState !== undefined) lines.push(`role ${rd.softState.role} lead=${rd.softState.lead}`);
    if (rd.hardState !== undefined) lines.push(`hard state term=${rd.hardState.term} vote=${rd.hardState.vote} commit=${rd.hardState.commit}`);
    if (rd.snapshot !== undefined) lines.push(`snapshot ${rd.snapshot.meta.term}/${rd.snapshot.meta.index} ${formatConfState(rd.snapshot.meta.conf)}`);
    if (rd.entries.length > 0) lines.push(`persist ${formatEntries(rd.entries)}`);
    if (rd.committedEntries.length > 0) lines.push(`apply ${rd.committedEntries.map(formatEntry).join(', ')}`);
    for (const r of rd.readStates) lines.push(`read-state index=${r.index} ctx=${r.ctx}`);
    if (lines.length === 0) return;
    this.print(`ready ${id}:`);
    for (const l of lines) this.print(`  ${l}`);
  }

  private deliver(to: ReadonlySet<NodeId>): number {
    const now = this.network.filter((m) => to.has(m.to));
    this.network = this.network.filter((m) => !to.has(m.to));
    for (const m of now) {
      const target = this.nodes.get(m.to)?.raw;
      if (this.cut.has(`${m.from}->${m.to}`)) {
        this.print(`${formatMessage(m)} (cut)`);
        continue;
      }
      if (target === undefined) {
        this.print(`${formatMessage(m)} (down)`);
        continue;
      }
      this.print(formatMessage(m));
      target.step(m);
    }
    return now.length;
  }

  private stabilize(): void {
    for (let round = 0; round < stabilizeRoundsMax; round++) {
      let moved = false;
      for (const id of [...this.nodes.keys()].sort((a, b) => a - b)) moved = this.processReady(id) || moved;
      moved = this.deliver(new Set(this.nodes.keys())) > 0 || moved;
      if (!moved) return;
    }
    assert.fail(`stabilize: still moving after ${stabilizeRoundsMax} rounds`);
  }
}

function formatResult(r: ReturnType<RawNode['propose']>): string {
  switch (r.kind) {
    case 'accepted':
      return `accepted ${r.term}/${r.index}`;
    case 'not-leader':
      return `not-leader (hint ${r.leaderHint})`;
    case 'dropped':
      return `dropped: ${r.reason}${r.detail !== undefined ? ` (${r.detail})` : ''}`;
  }
}

function decodeImage(data: Uint8Array): { index: number; data: string }[] {
  return JSON.parse(decoder.decode(data)) as { index: number; data: string }[];
}

export function runScenario(script: string): { trace: string; scenario: Scenario } {
  const scenario = new Scenario();
  const trace = scenario.run(script);
  return { trace, scenario };
}
