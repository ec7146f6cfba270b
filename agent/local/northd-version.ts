// ovn-match-northd-version, as ovn-controller 23.03 checks it (check_northd_version): with the
// key true, the agent stops processing while SB_Global's options:northd_internal_version is not
// its own version, so that during an upgrade it never installs flows compiled from logical flows
// of a northd it does not know (new actions, new stages). Without an SB_Global row, or without
// the option, the versions differ. Pure.
import type * as sb from '../../ovsdb/rows/sb.js';

/**
 * The agent's own version, in ovn_get_internal_version's form
 * "<release>-<SB schema version>-<number of logical actions>.<internal minor version>": the
 * logical flows it compiles are those of ovn-northd 23.03.1 (SB schema 20.27.0, 70 actions,
 * internal minor version 6), which is also what our northd writes (northd/sb-global.ts,
 * NORTHD_INTERNAL_VERSION; tests/agent/local-northd-version checks that the two agree). When the
 * compiler learns a newer northd's actions, this moves with it.
 */
export const AGENT_INTERNAL_VERSION = '23.03.1-20.27.0-70.6';

export type NorthdVersionGate =
  | { readonly kind: 'open' }
  /** Closed: nothing is processed until the versions match or the key is turned off. */
  | { readonly kind: 'closed'; readonly ours: string; readonly northd: string };

const OPEN: NorthdVersionGate = { kind: 'open' };

/** Whether the agent may process: always without the key, else only while the versions are equal. */
export function northdVersionGate(matchNorthdVersion: boolean, sbGlobal: sb.SB_Global | undefined, ours: string = AGENT_INTERNAL_VERSION): NorthdVersionGate {
  if (!matchNorthdVersion) return OPEN;
  const northd = sbGlobal?.options.get('northd_internal_version') ?? '';
  return sbGlobal !== undefined && northd === ours ? OPEN : { kind: 'closed', ours, northd };
}

/** The log line of a gate that closed (or, closed, now says other versions). */
export function gateMessage(gate: NorthdVersionGate): string {
  if (gate.kind === 'open') return 'ovn-match-northd-version: the northd version matches this agent\'s (or the check is off): processing again, with a full recompute';
  return `ovn-match-northd-version: this agent's version ${gate.ours} does not match northd's ${gate.northd === '' ? '<none>' : gate.northd} (SB_Global options:northd_internal_version): not processing SB or Open vSwitch changes, no flows installed, until they match`;
}
