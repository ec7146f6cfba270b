// The contract between the Raft node and the replicated state machine it drives (the NB
// database in server/, a key-value map in tests).
import type { Entry } from './types.js';

export interface StateMachine {
  /**
   * Applies one committed normal entry, in log order, exactly once per index (the node never
   * applies an index twice, even across restarts: it restores from snapshot and replays only
   * what follows). Must be deterministic: the same entries give the same state and the same
   * result on every replica. The result is handed to whoever proposed the entry on this node.
   * An entry carrying a client tag that was applied already is passed with `duplicate: true`:
   * the state machine must not change state for it, but may return the remembered result.
   *
   * A state machine that cannot apply an entry as every other replica would (it comes from
   * newer software than this build) throws ApplyRefusedError before changing anything: the
   * node stops there, as on a storage error, rather than diverge.
   */
  apply(entry: Entry, duplicate: boolean): unknown;
  /** A consistent image of the state after the last applied entry. */
  snapshot(): Uint8Array;
  /** Replaces the whole state with a snapshot's image (ApplyRefusedError as apply). */
  restore(data: Uint8Array): void;
}

/**
 * This build cannot apply an entry or a snapshot image the way the rest of the cluster does
 * (server/apply-version.ts): the node must stop without applying it. Not a storage error: the
 * data is sound, the software is too old for it.
 */
export class ApplyRefusedError extends Error {
  override name = 'ApplyRefusedError';
}
