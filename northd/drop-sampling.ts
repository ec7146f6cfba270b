// Drop sampling, after ovn-northd 23.03's northd/debug.c: NB_Global options
// debug_drop_collector_set (C) and debug_drop_domain_id (D), read as smap_get_uint reads them
// (0 when unset or not a number), turn every drop of the logical pipelines into
//
//   sample(probability=65535,collector_set=C,obs_domain=D,obs_point=$cookie); /* drop */
//
// which each chassis compiles into Open vSwitch's sample action towards its IPFIX collector set
// C, the flow's cookie as the observation point (docs/agent-sample.md). C = 0 turns it off.
//
// What is in force is history, not a function of the NB alone. ovn-northd keeps its setting in
// a static: a domain of 255 or more is refused with an error and the setting in force stays as
// it was (at ovn-northd's start: off). But its action text does not stay: every run of its
// northd engine node begins with northd_destroy, which empties the text (destroy_debug_config),
// and init_debug_config returns before writing it again. So while the options name a refused
// domain, a setting in force that samples gives every drop an empty action text (the flow drops
// without sampling: no actions), and one that does not gives "drop;" as ever. The real
// ovn-northd 23.03.1 does exactly that (tests/northd/differential-real-northd, case oo).
//
// The node keeps the setting in its data the same way, across recomputes too;
// `NorthdHistory.dropSampling` carries it whenever the options alone would not give it back
// (their domain is refused and sampling is on), so a replica restored from a snapshot agrees
// with one that applied the log.
//
// The flows read the two action texts (`DropActions`): debug_drop_action() where 23.03 writes
// "drop;", debug_implicit_drop_action() where it writes "/* drop */" (the drop ACLs).
import type { Database, DbDelta } from '../ovsdb/index.js';
import type { EngineNode, NodeInputs } from './engine.js';
import { optionUint } from './nb.js';
import { nbGlobalOf } from './sb-global.js';

/** The drop sampling in force: collector set 0 is off (and then the domain is 0 too). */
export interface DropSampling {
  readonly collectorSet: number;
  readonly domain: number;
}

export const DROP_SAMPLING_OFF: DropSampling = Object.freeze({ collectorSet: 0, domain: 0 });

/** Observation domains from this one up are refused (debug.c's `>= UINT8_MAX`). */
export const DROP_DOMAIN_LIMIT = 255;

/** The action texts of the flows that drop. */
export interface DropActions {
  /** debug_drop_action(): "drop;", or the sample action. */
  readonly drop: string;
  /** debug_implicit_drop_action(): "/* drop *\/" (the drop is implicit), or the sample action. */
  readonly implicit: string;
}

export const PLAIN_DROPS: DropActions = Object.freeze({ drop: 'drop;', implicit: '/* drop */' });

/** What a setting in force that samples gives while the options name a refused domain: no text. */
export const EMPTIED_DROPS: DropActions = Object.freeze({ drop: '', implicit: '' });

/**
 * The action texts for `s` in force, `held` when the options name a refused domain.
 * ovn-northd prints the two uint32 values with %d: a collector set above 2^31 - 1 shows as a
 * negative number, as there.
 */
export function dropActionsOf(s: DropSampling, held = false): DropActions {
  if (s.collectorSet === 0) return PLAIN_DROPS;
  if (held) return EMPTIED_DROPS;
  const sample = `sample(probability=65535,collector_set=${s.collectorSet | 0},obs_domain=${s.domain | 0},obs_point=$cookie); /* drop */`;
  return Object.freeze({ drop: sample, implicit: sample });
}

/** A valid setting, normalized (off is DROP_SAMPLING_OFF); undefined when the domain is refused. */
function validSetting(collectorSet: number, domain: number): DropSampling | undefined {
  if (domain >= DROP_DOMAIN_LIMIT) return undefined;
  return collectorSet === 0 ? DROP_SAMPLING_OFF : Object.freeze({ collectorSet, domain });
}

/** Checks a drop sampling given from outside (a snapshot's history, a recompute's reports). */
export function checkDropSampling(s: DropSampling): DropSampling {
  const valid = Number.isInteger(s.collectorSet) && s.collectorSet >= 0 && s.collectorSet <= 0xffffffff && Number.isInteger(s.domain) && s.domain >= 0 ? validSetting(s.collectorSet, s.domain) : undefined;
  if (valid === undefined) throw new Error(`drop sampling [${String(s.collectorSet)}, ${String(s.domain)}] is not a setting ovn-northd keeps`);
  return valid;
}

export interface DropSamplingData {
  /** The setting in force. */
  inForce: DropSampling;
  /** NB_Global's options name a refused domain: `inForce` was kept from before them. */
  held: boolean;
  /** The flows' action texts for `inForce` (emptied while `held` and sampling). */
  actions: DropActions;
}

export interface DropSamplingChange {
  /** The action texts before this run (undefined: they did not change). */
  actionsWere: DropActions | undefined;
}

/**
 * Reads the options as init_debug_config does after northd_destroy, into `data`; true when the
 * action texts changed (their object is kept while they do not: templates are cached by it).
 */
function readOptions(db: Database, data: DropSamplingData): boolean {
  const options = nbGlobalOf(db)?.options ?? new Map<string, string>();
  const next = validSetting(optionUint(options, 'debug_drop_collector_set', 0), optionUint(options, 'debug_drop_domain_id', 0));
  data.held = next === undefined;
  if (next !== undefined) data.inForce = next;
  const actions = dropActionsOf(data.inForce, data.held);
  if (actions.drop === data.actions.drop && actions.implicit === data.actions.implicit) return false;
  data.actions = actions;
  return true;
}

/** The node holding the drop sampling in force. Its data may be seeded before the first run (createNorthd). */
export function dropSamplingNode(): EngineNode<DropSamplingData, DropSamplingChange> {
  const read = (data: DropSamplingData, inputs: NodeInputs, out: DropSamplingChange): void => {
    const was = data.actions;
    if (readOptions(inputs.data<Database>('nb'), data)) out.actionsWere ??= was;
  };
  return {
    name: 'drop_sampling',
    inputs: ['nb'],
    init: () => ({ inForce: DROP_SAMPLING_OFF, held: false, actions: PLAIN_DROPS }),
    newChange: () => ({ actionsWere: undefined }),
    isEmpty: (c) => c.actionsWere === undefined,
    recompute(data: DropSamplingData, inputs: NodeInputs, out: DropSamplingChange): void {
      // What is in force before the recompute stays unless the options replace it.
      read(data, inputs, out);
    },
    handlers: {
      nb(data: DropSamplingData, change: unknown, inputs: NodeInputs, out: DropSamplingChange) {
        if (!(change as DbDelta).changes.some((c) => c.table === 'NB_Global')) return 'unchanged';
        read(data, inputs, out);
        return 'handled';
      },
    },
  };
}

/** Seeds a node's data (before its engine's first run, which reads the options) with a setting in force. */
export function seedDropSampling(data: DropSamplingData, s: DropSampling): void {
  const valid = checkDropSampling(s);
  data.inForce = valid;
  data.actions = dropActionsOf(valid);
}

/**
 * What a history must carry of `data`: the setting in force when the options alone would not
 * give it back (their domain is refused and sampling is on); otherwise nothing.
 */
export function heldDropSampling(data: DropSamplingData): DropSampling | undefined {
  return data.held && data.inForce.collectorSet !== 0 ? data.inForce : undefined;
}
