// The leader's group commit (server/nb-group-proposer.ts), driven with a fake log: what one
// turn of the event loop gathers goes as one entry; while `txnsInFlightMax` transactions are
// in unsettled entries a new group waits and fills, for groupWaitMsMax at most; below that
// nothing waits; a full group goes at once; a failed entry frees its room and fails only its
// own transactions.
import t from 'tap';
import type { ProposalOutcome } from '../../cluster/node.js';
import { decodeCommand, encodeCommand, nbTxn } from '../../server/commands.js';
import { NbGroupProposer, type GroupLimits } from '../../server/nb-group-proposer.js';
import type { ApplyResult } from '../../server/nb-state-machine.js';

/** One entry proposed to the fake log: the names of its transactions, settled by the test. */
interface Proposed {
  readonly names: string[];
  readonly broadcastCommit: boolean;
  readonly resolve: (o: ProposalOutcome) => void;
  readonly reject: (err: unknown) => void;
}

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

function txn(name: string): Uint8Array {
  return encodeCommand(nbTxn([{ op: 'insert', table: 'Logical_Switch', row: { name } }], [1, 2, 3, 4]));
}

function nameOf(c: { kind: string; ops?: readonly unknown[] }): string {
  return ((c.ops?.[0] as { row: { name: string } }).row.name);
}

function fakeLog(limits: GroupLimits): { proposer: NbGroupProposer; entries: Proposed[] } {
  const entries: Proposed[] = [];
  const proposer = new NbGroupProposer(
    (data, broadcastCommit) =>
      new Promise<ProposalOutcome>((resolve, reject) => {
        const c = decodeCommand(data);
        const names = c.kind === 'nb-group' ? c.txns.map(nameOf) : c.kind === 'nb-txn' ? [nameOf(c)] : [`?${c.kind}`];
        entries.push({ names, broadcastCommit, resolve, reject });
      }),
    limits,
  );
  return { proposer, entries };
}

/** Settles entry `e` as applied: each transaction committed at revision `index`. */
function apply(e: Proposed, index: number): void {
  const one = (): ApplyResult => ({ kind: 'committed', results: [], revision: index });
  const result: ApplyResult = e.names.length === 1 ? one() : { kind: 'group', results: e.names.map(one), revision: index };
  e.resolve({ index, result });
}

const limits = (txnsInFlightMax: number, txnsMax = 64, groupWaitMsMax = 60_000, settleHoldMs = 0): GroupLimits => ({ txnsMax, bytesMax: 512 * 1024, txnsInFlightMax, groupWaitMsMax, settleHoldMs });

t.test('one turn, one entry; a lone transaction goes alone at once', async (t) => {
  const { proposer, entries } = fakeLog(limits(8));
  const lone = proposer.propose(txn('a'));
  await turn();
  t.same(entries.map((e) => e.names), [['a']], 'proposed after one turn, as a plain nb-txn');
  apply(entries[0] as Proposed, 5);
  t.same(await lone, { kind: 'committed', results: [], revision: 5 });
  const three = ['b', 'c', 'd'].map((n) => proposer.propose(txn(n)));
  await turn();
  t.same(entries.map((e) => e.names), [['a'], ['b', 'c', 'd']], 'the three of one turn in one group, in order');
  apply(entries[1] as Proposed, 6);
  t.same((await Promise.all(three)).map((r) => r.revision), [6, 6, 6], 'each hears its own result');
  t.same(proposer.counters, { groups: 1, groupedTxns: 3, single: 1, compacted: 0 });
});

t.test('a transaction written for the state it meets goes alone, in the same turn, bound to its index', async (t) => {
  const seen: (number | undefined)[] = [];
  const entries: Proposed[] = [];
  const proposer = new NbGroupProposer(
    (data, broadcastCommit, onlyAfter) =>
      new Promise<ProposalOutcome>((resolve, reject) => {
        seen.push(onlyAfter);
        const c = decodeCommand(data);
        entries.push({ names: c.kind === 'nb-group' ? c.txns.map(nameOf) : c.kind === 'nb-txn' ? [nameOf(c)] : [`?${c.kind}`], broadcastCommit, resolve, reject });
      }),
    limits(8),
  );
  const grouped = ['a', 'b'].map((n) => proposer.propose(txn(n)));
  const alone = proposer.proposeAlone(txn('c'), false, 41);
  t.same(entries.map((e) => e.names), [['c']], 'proposed at once, ahead of the turn\'s group');
  t.same(seen, [41], 'with the index it was written for');
  apply(entries[0] as Proposed, 42);
  t.same(await alone, { kind: 'committed', results: [], revision: 42 });
  await turn();
  t.same(seen, [41, undefined], 'the others go as a group, bound to nothing');
  apply(entries[1] as Proposed, 43);
  await Promise.all(grouped);
  t.same(proposer.counters, { groups: 1, groupedTxns: 2, single: 1, compacted: 1 });
});

t.test('below the window nothing waits: a second entry goes while the first is in flight', async (t) => {
  const { proposer, entries } = fakeLog(limits(4));
  const first = ['a', 'b', 'c'].map((n) => proposer.propose(txn(n)));
  await turn();
  const second = ['d'].map((n) => proposer.propose(txn(n)));
  await turn();
  t.same(entries.map((e) => e.names), [['a', 'b', 'c'], ['d']], 'three in flight, under four: the next went at once');
  apply(entries[0] as Proposed, 1);
  apply(entries[1] as Proposed, 2);
  await Promise.all([...first, ...second]);
});

t.test('with the window full a new group waits and fills until an entry settles', async (t) => {
  const { proposer, entries } = fakeLog(limits(4));
  const first = ['a', 'b', 'c', 'd'].map((n) => proposer.propose(txn(n)));
  await turn();
  t.equal(entries.length, 1, 'four in flight: the window is full');
  const waiting: Promise<ApplyResult>[] = [];
  for (const n of ['e', 'f', 'g']) {
    waiting.push(proposer.propose(txn(n)));
    await turn();
    await turn();
  }
  t.equal(entries.length, 1, 'nothing proposed while the window stayed full, over several turns');
  apply(entries[0] as Proposed, 1);
  await Promise.all(first);
  t.same(entries.map((e) => e.names), [['a', 'b', 'c', 'd'], ['e', 'f', 'g']], 'once it settled, the three that waited went as one group');
  apply(entries[1] as Proposed, 2);
  t.same((await Promise.all(waiting)).map((r) => r.revision), [2, 2, 2]);
});

t.test('a full group goes at once, window or not', async (t) => {
  const { proposer, entries } = fakeLog(limits(2, 3));
  const first = ['a', 'b'].map((n) => proposer.propose(txn(n)));
  await turn();
  const more = ['c', 'd', 'e', 'f'].map((n) => proposer.propose(txn(n)));
  t.same(entries.map((e) => e.names), [['a', 'b'], ['c', 'd', 'e']], 'the fourth found three pending (txnsMax) and sent them');
  await turn();
  t.equal(entries.length, 2, 'the one left waits: the window is full');
  apply(entries[0] as Proposed, 1);
  await Promise.all(first);
  t.equal(entries.length, 2, 'with a and b settled, c, d and e still fill the window');
  apply(entries[1] as Proposed, 2);
  await Promise.all(more.slice(0, 3));
  t.same(entries.map((e) => e.names).at(-1), ['f'], 'f goes once they settle');
  apply(entries[2] as Proposed, 3);
  t.equal((await more[3])?.revision, 3);
});

t.test('a failed entry fails its own transactions and frees its room', async (t) => {
  const { proposer, entries } = fakeLog(limits(2));
  const first = ['a', 'b'].map((n) => proposer.propose(txn(n)));
  await turn();
  const later = proposer.propose(txn('c'));
  await turn();
  t.equal(entries.length, 1, 'c waits behind a full window');
  const lost = new Error('not the leader');
  (entries[0] as Proposed).reject(lost);
  for (const p of first) await t.rejects(p, lost, 'its transactions fail as the entry did');
  t.same(entries.map((e) => e.names).at(-1), ['c'], 'the room it held is free: c is proposed');
  apply(entries[1] as Proposed, 7);
  t.equal((await later).revision, 7);
});

t.test('a group waits for room at most groupWaitMsMax', async (t) => {
  const { proposer, entries } = fakeLog(limits(2, 64, 20));
  const first = ['a', 'b'].map((n) => proposer.propose(txn(n)));
  await turn();
  const later = proposer.propose(txn('c'));
  // The first entry never settles here (a deposed leader's proposal, say): c goes anyway.
  await new Promise((resolve) => setTimeout(resolve, 200));
  t.same(entries.map((e) => e.names), [['a', 'b'], ['c']], 'proposed after the wait, with the window still full');
  apply(entries[1] as Proposed, 2);
  t.equal((await later).revision, 2);
  apply(entries[0] as Proposed, 1);
  await Promise.all(first);
});

t.test('an entry goes with broadcastCommit when any of its transactions asked for it', async (t) => {
  const { proposer, entries } = fakeLog(limits(8));
  const all = [proposer.propose(txn('a')), proposer.propose(txn('b'), true), proposer.propose(txn('c'))];
  await turn();
  void proposer.propose(txn('d'));
  await turn();
  t.same(entries.map((e) => [e.names, e.broadcastCommit]), [[['a', 'b', 'c'], true], [['d'], false]]);
  entries.forEach((e, i) => apply(e, i + 1));
  await Promise.all(all);
});

t.test('an entry that settles while a group waits for room holds that group for its clients\' next transactions', async (t) => {
  const { proposer, entries } = fakeLog(limits(4, 64, 60_000, 60_000));
  const first = ['a', 'b', 'c', 'd'].map((n) => proposer.propose(txn(n)));
  await turn();
  const waiting = ['e', 'f', 'g', 'h'].map((n) => proposer.propose(txn(n)));
  await turn();
  t.equal(entries.length, 1, 'the window is full: e to h wait');
  apply(entries[0] as Proposed, 1);
  await Promise.all(first);
  await turn();
  t.equal(entries.length, 1, 'the first settled, and e to h are held for the next transactions of its four clients');
  const next = ['a2', 'b2', 'c2'].map((n) => proposer.propose(txn(n)));
  await turn();
  t.equal(entries.length, 1, 'three of the four came: still held');
  next.push(proposer.propose(txn('d2')));
  await turn();
  t.same(entries.map((e) => e.names), [['a', 'b', 'c', 'd'], ['e', 'f', 'g', 'h', 'a2', 'b2', 'c2', 'd2']], 'the fourth: one group of eight, not two of four');
  apply(entries[1] as Proposed, 2);
  t.same((await Promise.all([...waiting, ...next])).map((r) => r.revision), [2, 2, 2, 2, 2, 2, 2, 2]);
});

t.test('a held group goes after settleHoldMs if its clients send nothing more', async (t) => {
  const { proposer, entries } = fakeLog(limits(2, 64, 60_000, 20));
  const first = ['a', 'b'].map((n) => proposer.propose(txn(n)));
  await turn();
  const later = proposer.propose(txn('c'));
  await turn();
  apply(entries[0] as Proposed, 1);
  await Promise.all(first);
  await turn();
  t.equal(entries.length, 1, 'c is held');
  await new Promise((resolve) => setTimeout(resolve, 200));
  t.same(entries.map((e) => e.names), [['a', 'b'], ['c']], 'and proposed once the hold ran out');
  apply(entries[1] as Proposed, 2);
  t.equal((await later).revision, 2);
});

t.test('nothing is held when nothing waited: a serial client sees no hold', async (t) => {
  const { proposer, entries } = fakeLog(limits(2, 64, 60_000, 60_000));
  for (let i = 0; i < 3; i++) {
    const p = proposer.propose(txn(`s${i}`));
    await turn();
    t.equal(entries.length, i + 1, `s${i} proposed at once`);
    apply(entries[i] as Proposed, i + 1);
    t.equal((await p).revision, i + 1);
  }
});
