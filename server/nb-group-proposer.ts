// Group commit for NB transactions. Every entry of the log costs each member a persist, an
// apply and a northd projection, and most of a projection's cost is per entry, not per row: a
// switch added alone costs nearly what ten added together cost. So the leader puts the NB
// transactions that reach it in one turn of its event loop into one nb-group entry
// (server/commands.ts); each is still applied on its own and answered with its own result,
// and the group is projected once. A transaction alone in its turn (a serial client) is
// proposed as a plain nb-txn, exactly as before.
//
// A turn of the event loop is a short window: under a steady pipelined load the replies of
// one group come back together and their clients' next transactions arrive together, so the
// load settles into many small groups in flight at once (about four transactions each with 32
// transactions in flight). So a new group also waits while `txnsInFlightMax` transactions are
// in entries proposed here and not yet settled: what arrives meanwhile goes in the next one,
// the same work in fewer, larger entries (about fourteen each at 32 in flight). Below that
// many in flight nothing waits, so a serial client, or a few, see no change. A group waits at
// most `groupWaitMsMax`: on a deposed leader the entries in flight may hang until their
// proposals time out, and what waits behind them should fail over (not-leader) at once.
//
// The window alone can settle into two groups taking turns: while one is in flight, the other
// fills with the next transactions of the clients answered before, and each goes out as the
// other settles (about sixteen each at 32 in flight through an OVSDB door, whose clients send
// their requests one by one). Every entry costs every member a persist and a projection, so
// when an entry settles while others wait for room, the group also waits, at most
// `settleHoldMs`, for as many more transactions as the settled entry carried: those clients,
// just answered, usually send their next ones within a round trip. The two groups so mostly
// become one (measured through the door: about 25 transactions per entry instead of 16).
//
// Grouping is decided here, on the proposer, and recorded in the entry: every replica applies
// the same groups, so the projection stays deterministic (tunnel keys, revisions) whatever
// the timing that formed them.
import type { ProposalOutcome } from '../cluster/node.js';
import { encodeNbGroup } from './commands.js';
import type { ApplyResult } from './nb-state-machine.js';

export interface GroupLimits {
  /** Transactions in one group entry. */
  readonly txnsMax: number;
  /** Encoded bytes of one group entry; a transaction this large or larger goes alone. */
  readonly bytesMax: number;
  /**
   * Transactions in entries proposed here and not yet settled: while this many are, a new
   * group waits to fill.
   */
  readonly txnsInFlightMax: number;
  /**
   * The longest a group waits for room. Entries in flight settle within a commit in a healthy
   * cluster; on a leader that lost its place they may hang until their proposal times out, and
   * what waits behind them should fail over at once (not-leader) rather than wait with them.
   */
  readonly groupWaitMsMax: number;
  /**
   * When an entry settles while transactions wait for room, how long the waiting group may
   * wait for as many more transactions as the settled entry carried (its clients' next ones)
   * before it is proposed. 0 proposes it at once.
   */
  readonly settleHoldMs: number;
}

export const groupDefaults: GroupLimits = {
  txnsMax: 64,
  bytesMax: 512 * 1024,
  txnsInFlightMax: 8,
  groupWaitMsMax: 100,
  settleHoldMs: 2,
};

interface Waiting {
  readonly data: Uint8Array;
  /** Its client waits on the followers' applies too (see ProposeOptions.broadcastCommit). */
  readonly broadcastCommit: boolean;
  readonly resolve: (r: ApplyResult) => void;
  readonly reject: (err: unknown) => void;
}

export class NbGroupProposer {
  private pending: Waiting[] = [];
  private pendingBytes = 0;
  private scheduled = false;
  /** Transactions in entries proposed and not yet settled (committed and applied, or failed). */
  private inFlight = 0;
  /** Flushes a group that has waited groupWaitMsMax for room. */
  private waitTimer: NodeJS.Timeout | undefined;
  /** Flushes a group held after an entry settled (settleHoldMs), if it did not fill first. */
  private holdTimer: NodeJS.Timeout | undefined;
  /** The size at which a held group goes at once. */
  private holdUntil = 0;
  /**
   * Group entries proposed, the transactions they carried, transactions proposed alone, and
   * those of them written for the state they meet (proposeAlone); for metrics and tests.
   */
  readonly counters = { groups: 0, groupedTxns: 0, single: 0, compacted: 0 };

  constructor(
    private readonly proposeEntry: (data: Uint8Array, broadcastCommit: boolean, onlyAfter?: number) => Promise<ProposalOutcome>,
    private readonly limits: GroupLimits = groupDefaults,
  ) {}

  /**
   * Proposes one encoded nb-txn command with whatever else arrives in this turn; resolves
   * with this transaction's own result, or rejects as the entry's proposal did (the caller
   * retries or forwards this transaction alone).
   */
  propose(data: Uint8Array, broadcastCommit = false): Promise<ApplyResult> {
    if (data.byteLength >= this.limits.bytesMax) return this.single(data, broadcastCommit);
    if (this.pending.length >= this.limits.txnsMax || this.pendingBytes + data.byteLength > this.limits.bytesMax) this.flush();
    return new Promise((resolve, reject) => {
      this.pending.push({ data, broadcastCommit, resolve, reject });
      this.pendingBytes += data.byteLength;
      if (this.scheduled) return;
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        // A held group goes once it has the transactions it waits for (or its timer ends it).
        if (this.holdTimer !== undefined) {
          if (this.pending.length >= this.holdUntil) this.flush();
          return;
        }
        // With the window full, the group keeps filling until an entry settles (settled()),
        // or for groupWaitMsMax at most.
        if (this.inFlight < this.limits.txnsInFlightMax) this.flush();
        else this.waitTimer ??= setTimeout(() => this.flush(), this.limits.groupWaitMsMax);
      });
    });
  }

  /**
   * Proposes one encoded nb-txn command on its own, now (in this turn), appended right after
   * log index `onlyAfter` or refused: a transaction written for the state there
   * (ovsdb/compact.ts) cannot share an entry with others, which would change the state it meets.
   */
  proposeAlone(data: Uint8Array, broadcastCommit: boolean, onlyAfter: number): Promise<ApplyResult> {
    this.counters.single++;
    this.counters.compacted++;
    return this.proposeCounted(data, 1, broadcastCommit, onlyAfter).then((out) => out.result as ApplyResult);
  }

  /** Proposes one entry of `txns` transactions, counting them in flight until it settles. */
  private proposeCounted(data: Uint8Array, txns: number, broadcastCommit: boolean, onlyAfter?: number): Promise<ProposalOutcome> {
    this.inFlight += txns;
    return this.proposeEntry(data, broadcastCommit, onlyAfter).finally(() => this.settled(txns));
  }

  private settled(txns: number): void {
    this.inFlight -= txns;
    if (this.scheduled || this.holdTimer !== undefined || this.inFlight >= this.limits.txnsInFlightMax) return;
    // Transactions waited for room: hold them for the settled entry's clients' next ones.
    if (this.pending.length > 0 && this.limits.settleHoldMs > 0) {
      this.holdUntil = Math.min(this.pending.length + txns, this.limits.txnsMax);
      this.holdTimer = setTimeout(() => this.flush(), this.limits.settleHoldMs);
      return;
    }
    this.flush();
  }

  private single(data: Uint8Array, broadcastCommit: boolean): Promise<ApplyResult> {
    this.counters.single++;
    return this.proposeCounted(data, 1, broadcastCommit).then((out) => out.result as ApplyResult);
  }

  private flush(): void {
    if (this.waitTimer !== undefined) {
      clearTimeout(this.waitTimer);
      this.waitTimer = undefined;
    }
    if (this.holdTimer !== undefined) {
      clearTimeout(this.holdTimer);
      this.holdTimer = undefined;
    }
    const batch = this.pending;
    if (batch.length === 0) return;
    this.pending = [];
    this.pendingBytes = 0;
    if (batch.length === 1) {
      const only = batch[0] as Waiting;
      this.single(only.data, only.broadcastCommit).then(only.resolve, only.reject);
      return;
    }
    this.counters.groups++;
    this.counters.groupedTxns += batch.length;
    this.proposeCounted(encodeNbGroup(batch.map((w) => w.data)), batch.length, batch.some((w) => w.broadcastCommit)).then(
      (out) => {
        const r = out.result as ApplyResult;
        if (r.kind !== 'group' || r.results.length !== batch.length) {
          const err = new Error(`an nb-group of ${batch.length} applied as ${JSON.stringify(r).slice(0, 200)}`);
          for (const w of batch) w.reject(err);
          return;
        }
        batch.forEach((w, i) => w.resolve(r.results[i] as ApplyResult));
      },
      (err: unknown) => {
        for (const w of batch) w.reject(err);
      },
    );
  }
}
