// Membership changes and replicated settings, carried in `conf-change` log entries.
//
// One change at a time (single-server changes, Raft thesis §4.1): a leader accepts a new
// conf change only when every earlier one is applied and it has committed an entry of its
// own term (the fix Ongaro posted to raft-dev in 2015). A change takes effect on each node
// when that node applies the committed entry, as in etcd; the leader counts the old
// configuration until then. Every node validates a change again when applying it, so an
// invalid change is a deterministic no-op everywhere.

import type { ConfState, NodeId } from './types.js';

export type ConfChange =
  /** The first entry of a new cluster's log: the founding voters. */
  | { readonly kind: 'bootstrap'; readonly voters: readonly NodeId[] }
  /**
   * `address` is where the new member's peers reach it (its Raft transport address), and
   * `clientAddress` where clients do (the application's API): the shell keeps them as
   * replicated state, so every member learns a newcomer's addresses from the log. The core
   * ignores both.
   */
  | { readonly kind: 'add-voter'; readonly id: NodeId; readonly address?: string; readonly clientAddress?: string }
  | { readonly kind: 'add-learner'; readonly id: NodeId; readonly address?: string; readonly clientAddress?: string }
  | { readonly kind: 'promote-learner'; readonly id: NodeId }
  | { readonly kind: 'remove'; readonly id: NodeId }
  /** Changes the election timeout on every node (must exceed the heartbeat interval). */
  | { readonly kind: 'set-election-ticks'; readonly ticks: number };

export type ConfChangeResult =
  | { readonly ok: true; readonly conf: ConfState }
  | { readonly ok: false; readonly reason: string };

export const emptyConfState: ConfState = { voters: [], learners: [], removed: [] };

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function encodeConfChange(cc: ConfChange): Uint8Array {
  return encoder.encode(JSON.stringify(cc));
}

export function decodeConfChange(data: Uint8Array): ConfChange {
  return JSON.parse(decoder.decode(data)) as ConfChange;
}

function isMember(conf: ConfState, id: NodeId): boolean {
  return conf.voters.includes(id) || conf.learners.includes(id);
}

function sorted(ids: Iterable<NodeId>): NodeId[] {
  return [...ids].sort((a, b) => a - b);
}

function validId(id: NodeId): boolean {
  return Number.isInteger(id) && id > 0;
}

/** The configuration after `cc`, or why `cc` does not apply to `conf`. Pure. */
export function applyConfChange(conf: ConfState, cc: ConfChange, heartbeatTicks: number): ConfChangeResult {
  const fail = (reason: string): ConfChangeResult => ({ ok: false, reason });
  switch (cc.kind) {
    case 'bootstrap': {
      if (conf.voters.length > 0 || conf.learners.length > 0) return fail('cluster already bootstrapped');
      if (cc.voters.length === 0 || !cc.voters.every(validId)) return fail('bootstrap needs valid voter ids');
      if (new Set(cc.voters).size !== cc.voters.length) return fail('duplicate voter ids');
      return { ok: true, conf: { ...conf, voters: sorted(cc.voters) } };
    }
    case 'add-voter':
    case 'add-learner': {
      if (!validId(cc.id)) return fail(`invalid node id ${cc.id}`);
      if (conf.removed.includes(cc.id)) return fail(`node ${cc.id} was removed; ids are never reused`);
      if (isMember(conf, cc.id)) return fail(`node ${cc.id} is already a member`);
      return cc.kind === 'add-voter'
        ? { ok: true, conf: { ...conf, voters: sorted([...conf.voters, cc.id]) } }
        : { ok: true, conf: { ...conf, learners: sorted([...conf.learners, cc.id]) } };
    }
    case 'promote-learner': {
      if (!conf.learners.includes(cc.id)) return fail(`node ${cc.id} is not a learner`);
      return {
        ok: true,
        conf: {
          ...conf,
          voters: sorted([...conf.voters, cc.id]),
          learners: conf.learners.filter((x) => x !== cc.id),
        },
      };
    }
    case 'remove': {
      if (!isMember(conf, cc.id)) return fail(`node ${cc.id} is not a member`);
      if (conf.voters.length === 1 && conf.voters[0] === cc.id) return fail('cannot remove the last voter');
      return {
        ok: true,
        conf: {
          ...conf,
          voters: conf.voters.filter((x) => x !== cc.id),
          learners: conf.learners.filter((x) => x !== cc.id),
          removed: sorted([...conf.removed, cc.id]),
        },
      };
    }
    case 'set-election-ticks': {
      if (!Number.isInteger(cc.ticks) || cc.ticks <= heartbeatTicks) {
        return fail(`election ticks ${cc.ticks} must be an integer above the heartbeat interval ${heartbeatTicks}`);
      }
      return { ok: true, conf: { ...conf, electionTicks: cc.ticks } };
    }
  }
}

export function formatConfState(conf: ConfState): string {
  const parts = [`voters=(${conf.voters.join(' ')})`];
  if (conf.learners.length > 0) parts.push(`learners=(${conf.learners.join(' ')})`);
  if (conf.removed.length > 0) parts.push(`removed=(${conf.removed.join(' ')})`);
  if (conf.electionTicks !== undefined) parts.push(`electionTicks=${conf.electionTicks}`);
  return parts.join(' ');
}
