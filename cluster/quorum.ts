// Majority arithmetic over a set of voters. Learners never appear here.

import type { NodeId } from './types.js';

export type VoteResult = 'won' | 'lost' | 'pending';

export function majority(voterCount: number): number {
  return Math.floor(voterCount / 2) + 1;
}

/**
 * The largest index that a majority of voters has durably matched: sort the match indexes
 * in descending order and take the one at position majority-1. Voters without a known match
 * count as 0.
 */
export function committedIndex(voters: readonly NodeId[], matchOf: (id: NodeId) => number): number {
  if (voters.length === 0) return 0;
  const matches = voters.map(matchOf).sort((a, b) => b - a);
  return matches[majority(voters.length) - 1] ?? 0;
}

/** Tallies an election: won once a majority granted, lost once a majority can no longer. */
export function voteResult(voters: readonly NodeId[], votes: ReadonlyMap<NodeId, boolean>): VoteResult {
  if (voters.length === 0) return 'lost';
  let granted = 0;
  let rejected = 0;
  for (const id of voters) {
    const v = votes.get(id);
    if (v === true) granted++;
    else if (v === false) rejected++;
  }
  const q = majority(voters.length);
  if (granted >= q) return 'won';
  if (voters.length - rejected < q) return 'lost';
  return 'pending';
}

/** Whether the voters in `active` form a majority. */
export function isQuorum(voters: readonly NodeId[], active: (id: NodeId) => boolean): boolean {
  let n = 0;
  for (const id of voters) if (active(id)) n++;
  return n >= majority(voters.length);
}
