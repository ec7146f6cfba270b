// A deterministic simulator for the Raft core: a whole cluster, its network and its disks,
// driven by one seed. The network drops, duplicates, delays (and so reorders) messages and
// partitions nodes, symmetrically or in one direction; nodes crash, losing whatever their
// shell had not yet persisted (persistence completes a random number of steps after a Ready),
// and restart from their simulated disk. Clients write and read a key-value store; an admin
// adds and removes members, promotes learners, transfers leadership, changes the election
// timeout and compacts logs.
//
// After every step the simulator checks the safety properties (one leader per term, log
// matching, leader completeness, state-machine safety, monotonic commit, durable hard state
// never regressing); after the faults heal it checks liveness (a leader is elected and a new
// proposal commits within a bounded number of ticks). The client history is returned for the
// linearizability checker. A violation throws an AssertionError naming the seed and step.

import assert from 'node:assert';
import { bootstrapState, emptyState } from '../../../cluster/bootstrap.js';
import type { ConfChange } from '../../../cluster/conf-change.js';
import { Prng } from '../../../cluster/prng.js';
import { RawNode } from '../../../cluster/raw-node.js';
import type { Entry, Message, NodeId, Ready } from '../../../cluster/types.js';
import { formatEntry } from '../format.js';
import { MemoryDisk } from '../memory-disk.js';
import { Kv, encodeWrite } from './kv.js';
import type { Operation } from './linearizability.js';

export interface SimOptions {
  readonly seed: number;
  readonly voters: number;
  /** Steps (one tick each) with faults, then at most `healStepsMax` to recover. */
  readonly faultSteps?: number;
  readonly healStepsMax?: number;
}

export interface SimStats {
  readonly steps: number;
  readonly messages: number;
  readonly elections: number;
  readonly commits: number;
  readonly crashes: number;
  readonly snapshotsSent: number;
  readonly confChanges: number;
  readonly writes: number;
  readonly reads: number;
  readonly history: readonly Operation[];
}

const clusterId = 'sim';
const keys = ['a', 'b', 'c'] as const;
const clientCount = 3;
const writeTimeoutSteps = 40;
const readTimeoutSteps = 40;
const readiesPerStepMax = 4;
const logMatchEverySteps = 20;
const extraNodesMax = 3;

interface SimNode {
  readonly id: NodeId;
  raw: RawNode | undefined;
  readonly disk: MemoryDisk;
  kv: Kv;
  /** A Ready whose persistence is still in progress, and when it completes. */
  pending: { rd: Ready; doneAt: number } | undefined;
  /** Highest commit seen in this incarnation. */
  commitSeen: number;
  /** Role/term last observed, to detect elections. */
  seenRole: string;
  seenTerm: number;
  candidateStep: number;
}

interface Packet {
  readonly deliverAt: number;
  readonly seq: number;
  readonly msg: Message;
}

interface ClientState {
  readonly id: string;
  seq: number;
  leaderGuess: NodeId;
  op:
    | { kind: 'write'; key: string; value: string; seq: number; historyIndex: number; lastTry: number; tries: number }
    | { kind: 'read'; key: string; ctx: string; node: NodeId; call: number; index: number | undefined }
    | undefined;
  reads: number;
}

export class Simulation {
  private readonly rng: Prng;
  private readonly nodes = new Map<NodeId, SimNode>();
  private network: Packet[] = [];
  private packetSeq = 0;
  private now = 0;
  private readonly cut = new Set<string>();
  private dropRate: number;
  private dupRate: number;
  private delayMax: number;
  private nextNodeId: number;
  private readonly leaderOfTerm = new Map<number, NodeId>();
  /** Committed entries as first applied anywhere: index → rendering, term and step. */
  private readonly committed = new Map<number, { text: string; term: number; step: number }>();
  private readonly clients: ClientState[] = [];
  private readonly history: Operation[] = [];
  private readonly writeDone = new Set<string>();
  private stats = { messages: 0, elections: 0, commits: 0, crashes: 0, snapshotsSent: 0, confChanges: 0, writes: 0, reads: 0 };

  constructor(private readonly opts: SimOptions) {
    this.rng = new Prng(opts.seed);
    this.dropRate = this.rng.pick([0, 0.02, 0.1, 0.2]);
    this.dupRate = this.rng.pick([0, 0.02, 0.1]);
    this.delayMax = this.rng.pick([1, 2, 4, 8]);
    const voters = Array.from({ length: opts.voters }, (_, i) => i + 1);
    for (const id of voters) this.addNode(id, new MemoryDisk(bootstrapState(voters)));
    this.nextNodeId = opts.voters + 1;
    for (let i = 0; i < clientCount; i++) {
      this.clients.push({ id: `c${i}`, seq: 0, leaderGuess: this.rng.pick(voters), op: undefined, reads: 0 });
    }
  }

  private fail(msg: string): never {
    assert.fail(`seed ${this.opts.seed} step ${this.now}: ${msg}`);
  }

  private check(cond: boolean, msg: () => string): asserts cond {
    if (!cond) this.fail(msg());
  }

  private addNode(id: NodeId, disk: MemoryDisk): SimNode {
    const n: SimNode = {
      id,
      raw: undefined,
      disk,
      kv: new Kv(),
      pending: undefined,
      commitSeen: 0,
      seenRole: 'follower',
      seenTerm: 0,
      candidateStep: 0,
    };
    this.nodes.set(id, n);
    this.start(n);
    return n;
  }

  private start(n: SimNode): void {
    const stored = n.disk.load();
    const seed = (this.opts.seed * 131 + n.id * 7919 + this.now) >>> 0;
    n.raw = new RawNode({ id: n.id, clusterId, seed }, stored);
    n.kv = stored.snapshot === undefined ? new Kv() : Kv.restore(stored.snapshot.data, stored.snapshot.meta.index);
    n.commitSeen = stored.hardState.commit;
    n.pending = undefined;
    n.seenRole = 'follower';
    n.seenTerm = stored.hardState.term;
  }

  run(): SimStats {
    const faultSteps = this.opts.faultSteps ?? 300;
    for (let i = 0; i < faultSteps; i++) {
      this.faults();
      this.admin();
      this.clientsStep();
      this.step();
    }
    this.heal();
    this.checkLiveness(this.opts.healStepsMax ?? 400);
    this.finalChecks();
    return { steps: this.now, ...this.stats, history: this.history };
  }

  // ---------------------------------------------------------------------------------------
  // One step: tick, deliver, handle Readys, check.

  private step(): void {
    this.now++;
    for (const n of this.nodes.values()) n.raw?.tick();
    const due = this.network.filter((p) => p.deliverAt <= this.now).sort((a, b) => a.deliverAt - b.deliverAt || a.seq - b.seq);
    this.network = this.network.filter((p) => p.deliverAt > this.now);
    for (const p of due) {
      const target = this.nodes.get(p.msg.to)?.raw;
      if (target === undefined || this.cut.has(`${p.msg.from}->${p.msg.to}`)) continue;
      target.step(p.msg);
    }
    for (const n of this.nodes.values()) this.handleReadys(n);
    this.checkSafety();
  }

  private send(msgs: readonly Message[]): void {
    for (const m of msgs) {
      this.stats.messages++;
      if (m.type === 'snap') this.stats.snapshotsSent++;
      if (this.rng.chance(this.dropRate)) continue;
      const copies = this.rng.chance(this.dupRate) ? 2 : 1;
      for (let c = 0; c < copies; c++) {
        this.network.push({ deliverAt: this.now + 1 + this.rng.nextInt(this.delayMax), seq: this.packetSeq++, msg: m });
      }
    }
  }

  private handleReadys(n: SimNode): void {
    for (let i = 0; i < readiesPerStepMax; i++) {
      const raw = n.raw;
      if (raw === undefined) return;
      if (n.pending !== undefined) {
        if (n.pending.doneAt > this.now) {
          // The shell may send what promises nothing while its write is in flight.
          if (this.rng.chance(0.5)) this.send(raw.takeEarlyMessages());
          return;
        }
        this.completeReady(n, n.pending.rd);
        continue;
      }
      if (!raw.hasReady()) return;
      const rd = raw.ready();
      this.send(rd.messages);
      // The disk takes 0 to 2 steps; a crash in between loses this Ready's writes.
      const delay = this.rng.chance(0.5) ? 0 : 1 + this.rng.nextInt(2);
      n.pending = { rd, doneAt: this.now + delay };
    }
  }

  private completeReady(n: SimNode, rd: Ready): void {
    const raw = n.raw;
    assert(raw !== undefined);
    n.pending = undefined;
    n.disk.persist(rd);
    this.send(rd.messagesAfterPersist);
    if (rd.snapshot !== undefined) n.kv = Kv.restore(rd.snapshot.data, rd.snapshot.meta.index);
    for (const e of rd.committedEntries) this.apply(n, e);
    for (const rs of rd.readStates) {
      for (const c of this.clients) {
        if (c.op?.kind === 'read' && c.op.ctx === rs.ctx && c.op.node === n.id) c.op.index = rs.index;
      }
    }
    raw.advance();
    this.serveReads();
  }

  private apply(n: SimNode, e: Entry): void {
    const text = formatEntry(e) + (e.client === undefined ? '' : ` ${e.client.clientId}#${e.client.seq}`);
    const known = this.committed.get(e.index);
    if (known === undefined) {
      this.committed.set(e.index, { text, term: e.term, step: this.now });
      this.stats.commits++;
    } else {
      this.check(known.text === text, () => `state machine safety: node ${n.id} applies ${text} at ${e.index}, others applied ${known.text}`);
    }
    const w = n.kv.apply(e);
    if (w !== undefined && e.client !== undefined) {
      const tag = `${e.client.clientId}#${e.client.seq}`;
      if (!this.writeDone.has(tag)) {
        this.writeDone.add(tag);
        const c = this.clients.find((x) => x.id === e.client?.clientId);
        const op = c?.op;
        if (c !== undefined && op?.kind === 'write' && op.seq === e.client.seq) {
          const h = this.history[op.historyIndex];
          assert(h !== undefined);
          this.history[op.historyIndex] = { ...h, ret: this.now };
          c.op = undefined;
        }
      }
    }
  }

  private serveReads(): void {
    for (const c of this.clients) {
      const op = c.op;
      if (op?.kind !== 'read' || op.index === undefined) continue;
      const n = this.nodes.get(op.node);
      if (n?.raw === undefined) continue;
      if (n.kv.appliedIndex < op.index) continue;
      this.history.push({ client: c.id, key: op.key, kind: 'read', value: n.kv.get(op.key) ?? null, call: op.call, ret: this.now });
      this.stats.reads++;
      c.op = undefined;
    }
  }

  // ---------------------------------------------------------------------------------------
  // Safety

  private checkSafety(): void {
    for (const n of this.nodes.values()) {
      const raw = n.raw;
      if (raw === undefined) continue;
      const r = raw.raft;
      this.check(r.log.committed >= n.commitSeen, () => `node ${n.id} commit went back from ${n.commitSeen} to ${r.log.committed}`);
      n.commitSeen = r.log.committed;
      if (r.role === 'candidate' && (n.seenRole !== 'candidate' || n.seenTerm !== r.term)) n.candidateStep = this.now;
      if (r.role === 'leader') {
        const other = this.leaderOfTerm.get(r.term);
        this.check(other === undefined || other === n.id, () => `two leaders in term ${r.term}: ${other} and ${n.id}`);
        if (other === undefined) {
          this.leaderOfTerm.set(r.term, n.id);
          this.stats.elections++;
          this.checkLeaderCompleteness(n);
        }
      }
      n.seenRole = r.role;
      n.seenTerm = r.term;
    }
    if (this.now % logMatchEverySteps === 0) this.checkLogMatching();
  }

  /** A new leader holds every entry committed before its campaign began. */
  private checkLeaderCompleteness(n: SimNode): void {
    const log = n.raw?.raft.log;
    assert(log !== undefined);
    const since = n.seenRole === 'candidate' ? n.candidateStep : this.now;
    for (const [index, c] of this.committed) {
      if (c.step >= since || index < log.firstIndex()) continue;
      this.check(log.term(index) === c.term, () => `leader completeness: leader ${n.id} lacks committed ${c.text} at ${index}`);
    }
  }

  /** Where two logs have an entry with the same index and term, they agree up to there. */
  private checkLogMatching(): void {
    const live = [...this.nodes.values()].filter((n) => n.raw !== undefined);
    for (let i = 0; i < live.length; i++) {
      for (let j = i + 1; j < live.length; j++) {
        const a = (live[i] as SimNode).raw?.raft.log;
        const b = (live[j] as SimNode).raw?.raft.log;
        assert(a !== undefined && b !== undefined);
        const lo = Math.max(a.firstIndex(), b.firstIndex());
        const hi = Math.min(a.lastIndex(), b.lastIndex());
        let matched = false;
        for (let k = hi; k >= lo; k--) {
          if (!matched) {
            matched = a.term(k) === b.term(k);
            continue;
          }
          const ea = a.slice(k, k + 1)[0];
          const eb = b.slice(k, k + 1)[0];
          assert(ea !== undefined && eb !== undefined);
          this.check(formatEntry(ea) === formatEntry(eb), () => `log matching at ${k}: ${formatEntry(ea)} vs ${formatEntry(eb)}`);
        }
      }
    }
  }

  private finalChecks(): void {
    // Nodes that applied the same prefix hold the same state.
    const byIndex = new Map<number, string>();
    for (const n of this.nodes.values()) {
      if (n.raw === undefined) continue;
      const fp = n.kv.fingerprint();
      const other = byIndex.get(n.kv.appliedIndex);
      this.check(other === undefined || other === fp, () => `node ${n.id} state differs at applied ${n.kv.appliedIndex}`);
      byIndex.set(n.kv.appliedIndex, fp);
    }
  }

  // ---------------------------------------------------------------------------------------
  // Faults, admin, clients

  private liveNodes(): SimNode[] {
    return [...this.nodes.values()].filter((n) => n.raw !== undefined);
  }

  private leader(): SimNode | undefined {
    let best: SimNode | undefined;
    for (const n of this.nodes.values()) {
      const r = n.raw?.raft;
      if (r?.role === 'leader' && (best === undefined || r.term > (best.raw?.raft.term ?? 0))) best = n;
    }
    return best;
  }

  private faults(): void {
    const all = [...this.nodes.values()];
    if (this.rng.chance(0.01)) {
      const live = this.liveNodes();
      if (live.length > 1) {
        const n = this.rng.pick(live);
        n.raw = undefined;
        n.pending = undefined;
        this.stats.crashes++;
      }
    }
    if (this.rng.chance(0.03)) {
      const down = all.filter((n) => n.raw === undefined);
      if (down.length > 0) this.start(this.rng.pick(down));
    }
    if (this.rng.chance(0.01)) {
      this.cut.clear();
      const ids = all.map((n) => n.id);
      const side = new Set(ids.filter(() => this.rng.chance(0.5)));
      const oneWay = this.rng.chance(0.3);
      for (const a of ids) {
        for (const b of ids) {
          if (side.has(a) && !side.has(b)) {
            this.cut.add(`${a}->${b}`);
            if (!oneWay) this.cut.add(`${b}->${a}`);
          }
        }
      }
    }
    if (this.rng.chance(0.02)) this.cut.clear();
  }

  private admin(): void {
    const lead = this.leader();
    const raw = lead?.raw;
    if (lead === undefined || raw === undefined) return;
    const conf = raw.raft.conf;
    if (this.rng.chance(0.01)) {
      let cc: ConfChange | undefined;
      const roll = this.rng.nextInt(5);
      if (roll === 0 && this.nextNodeId <= this.opts.voters + extraNodesMax) {
        cc = { kind: this.rng.chance(0.5) ? 'add-voter' : 'add-learner', id: this.nextNodeId };
      } else if (roll === 1 && conf.learners.length > 0) {
        cc = { kind: 'promote-learner', id: this.rng.pick(conf.learners) };
      } else if (roll === 2 && conf.voters.length > 3) {
        cc = { kind: 'remove', id: this.rng.pick(conf.voters) };
      } else if (roll === 3 && conf.learners.length > 0) {
        cc = { kind: 'remove', id: this.rng.pick(conf.learners) };
      } else if (roll === 4) {
        cc = { kind: 'set-election-ticks', ticks: 6 + this.rng.nextInt(10) };
      }
      if (cc !== undefined) {
        const r = raw.proposeConfChange(cc);
        if (r.kind === 'accepted') {
          this.stats.confChanges++;
          if (cc.kind === 'add-voter' || cc.kind === 'add-learner') {
            this.addNode(this.nextNodeId++, new MemoryDisk(emptyState()));
          }
        }
      }
    }
    if (this.rng.chance(0.005) && conf.voters.length > 1) raw.transferLeadership(this.rng.pick(conf.voters));
    if (this.rng.chance(0.02)) {
      const live = this.liveNodes().filter((n) => n.pending === undefined);
      if (live.length > 0) {
        const n = this.rng.pick(live);
        const r = n.raw;
        assert(r !== undefined);
        if (n.kv.appliedIndex > r.raft.log.firstIndex() + 3) {
          const res = r.compact(n.kv.appliedIndex, n.kv.snapshot());
          if (res.kind === 'compacted') n.disk.compact(res.snapshot);
        }
      }
    }
  }

  private clientsStep(): void {
    const ids = [...this.nodes.keys()];
    for (const c of this.clients) {
      const op = c.op;
      if (op === undefined) {
        if (!this.rng.chance(0.1)) continue;
        const key = this.rng.pick(keys);
        if (this.rng.chance(0.6)) {
          c.seq++;
          const value = `${c.id}-${c.seq}`;
          this.history.push({ client: c.id, key, kind: 'write', value, call: this.now, ret: Number.POSITIVE_INFINITY });
          this.stats.writes++;
          c.op = { kind: 'write', key, value, seq: c.seq, historyIndex: this.history.length - 1, lastTry: -Infinity, tries: 0 };
        } else {
          const node = this.rng.pick(ids);
          const ctx = `${c.id}-r${++c.reads}`;
          const r = this.nodes.get(node)?.raw?.readIndex(ctx);
          if (r?.kind === 'accepted') c.op = { kind: 'read', key, ctx, node, call: this.now, index: undefined };
        }
        continue;
      }
      if (op.kind === 'read') {
        // A read that is not served in time is abandoned; it had no effect.
        if (this.now - op.call > readTimeoutSteps || this.nodes.get(op.node)?.raw === undefined) c.op = undefined;
        continue;
      }
      if (this.now - op.lastTry < writeTimeoutSteps / 4) continue;
      // (Re)send the write, same sequence number: the state machine applies it at most once.
      const target = this.nodes.get(c.leaderGuess)?.raw;
      const r = target?.propose(encodeWrite({ key: op.key, value: op.value }), { clientId: c.id, seq: op.seq });
      if (r?.kind === 'accepted') {
        op.lastTry = this.now;
        op.tries++;
      } else {
        c.leaderGuess = r?.kind === 'not-leader' && r.leaderHint !== 0 ? r.leaderHint : this.rng.pick(ids);
      }
      if (op.tries > 8) {
        // Give up waiting; the write stays pending in the history (it may still apply).
        c.op = undefined;
      }
    }
  }

  // ---------------------------------------------------------------------------------------
  // Liveness

  private heal(): void {
    this.cut.clear();
    this.dropRate = 0;
    this.dupRate = 0;
    this.delayMax = 1;
    for (const n of this.nodes.values()) if (n.raw === undefined) this.start(n);
  }

  private checkLiveness(stepsMax: number): void {
    let marker: { node: NodeId; index: number; term: number } | undefined;
    for (let i = 0; i < stepsMax; i++) {
      this.step();
      const lead = this.leader();
      const raw = lead?.raw;
      if (lead === undefined || raw === undefined) continue;
      if (marker !== undefined && (marker.node !== lead.id || marker.term !== raw.raft.term)) marker = undefined;
      if (marker === undefined) {
        const r = raw.propose(new TextEncoder().encode(JSON.stringify({ key: 'liveness', value: String(this.now) })));
        if (r.kind === 'accepted') marker = { node: lead.id, index: r.index, term: r.term };
        continue;
      }
      if (lead.kv.appliedIndex >= marker.index) return;
    }
    const states = [...this.nodes.values()]
      .map((n) => {
        const s = n.raw?.status();
        return s === undefined ? `${n.id}: down` : `${n.id}: ${s.role} term=${s.term} lead=${s.lead} commit=${s.commit} last=${s.lastIndex} voters=${s.conf.voters.join(',')} learners=${s.conf.learners.join(',')}`;
      })
      .join('; ');
    this.fail(`liveness: no proposal committed within ${stepsMax} steps after healing (${states})`);
  }
}

export function runSimulation(opts: SimOptions): SimStats {
  return new Simulation(opts).run();
}
