// Building Logical_Flow rows. A flow's UUID is the hash of (datapath, pipeline, table,
// priority, match, actions): content-addressed, so every replica names it the same, and its
// _version equals its UUID because a flow's content never changes under one name.
import type { Uuid } from '../../ovsdb/index.js';
import type * as sb from '../../ovsdb/rows/sb.js';
import { hashUuid } from '../hash.js';
import type { StageName } from '../stages.js';
import { stage } from '../stages.js';

export interface FlowHints {
  /** The NB row the flow comes from: OVN's stage-hint is its UUID's first 8 hex digits. */
  readonly hint?: Uuid;
  /** The logical port a flow is about (OVN's tags:in_out_port). */
  readonly inOutPort?: string;
}

export function lflowUuid(dp: Uuid, pipeline: string, table: number, priority: number, match: string, actions: string): Uuid {
  return hashUuid(['Logical_Flow', dp, pipeline, String(table), String(priority), match, actions]);
}

export function lflow(dp: Uuid, stageName: StageName, priority: number, match: string, actions: string, hints: FlowHints = {}): sb.Logical_Flow {
  const s = stage(stageName);
  const uuid = lflowUuid(dp, s.pipeline, s.table, priority, match, actions);
  const ids = new Map<string, string>();
  if (hints.hint !== undefined) ids.set('stage-hint', hints.hint.slice(0, 8));
  ids.set('stage-name', s.name);
  const tags = new Map<string, string>();
  if (hints.inOutPort !== undefined) tags.set('in_out_port', hints.inOutPort);
  return {
    _uuid: uuid, _version: uuid, logical_datapath: [dp], logical_dp_group: [], pipeline: s.pipeline, table_id: s.table,
    priority, match, actions, tags, controller_meter: [], external_ids: ids,
  };
}

/** A logical port name as OVN quotes it in matches and actions (its json_key). */
export function jsonKey(name: string): string {
  return JSON.stringify(name);
}
