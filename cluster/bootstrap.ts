// The persisted state of a founding member of a new cluster: one committed conf-change entry
// naming the founding voters. Every founder starts with the same entry at (index 1, term 1),
// so the logs agree from the start; a node added later receives it (or a snapshot that
// includes it) from the leader and so learns the membership.

import assert from 'node:assert';
import { encodeConfChange } from './conf-change.js';
import type { NodeId, PersistedState } from './types.js';

export function bootstrapState(voters: readonly NodeId[]): PersistedState {
  assert(voters.length > 0, 'a cluster needs at least one voter');
  // In id order: founders may be given their peers in any order (`nX@ID=...`), and the entry
  // at (1, 1) must still be the same bytes on every one of them.
  const sorted = [...voters].sort((a, b) => a - b);
  return {
    hardState: { term: 1, vote: 0, commit: 1 },
    entries: [{ term: 1, index: 1, type: 'conf-change', data: encodeConfChange({ kind: 'bootstrap', voters: sorted }) }],
  };
}

/** A node that joins an existing cluster starts empty and learns everything from the leader. */
export function emptyState(): PersistedState {
  return { hardState: { term: 0, vote: 0, commit: 0 }, entries: [] };
}
