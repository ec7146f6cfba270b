// Building Logical_Flow rows. A flow's UUID is the hash of (shard, stage, priority, match,
// actions): content-addressed, so every replica names it the same, and the datapaths of a shard
// that produce the same flow share its row (lflows/node.ts settles which datapath or group the
// row names). A datapath's shard is a range of tunnel keys (`shardOfKey`), carried by its
// logical_datapath array (`datapathRef`).
//
// Row values are immutable once made, so flows share them wherever the content is the same:
// one logical_datapath array per datapath, one external_ids map per stage for flows without a
// stage-hint, one tags map per port, and the empty values. Tens of thousands of flows would
// otherwise each carry their own copies.
import type { Uuid } from '../../ovsdb/index.js';
import { SmallMap } from '../../ovsdb/index.js';
import type * as sb from '../../ovsdb/rows/sb.js';
import { hashUuid6 } from '../hash.js';
import type { Stage, StageName } from '../stages.js';
import { LR_EGRESS_STAGES, LR_INGRESS_STAGES, LS_EGRESS_STAGES, LS_INGRESS_STAGES, stage } from '../stages.js';

export interface FlowHints {
  /** The NB row the flow comes from: OVN's stage-hint is its UUID's first 8 hex digits. */
  readonly hint?: Uuid;
  /** The flow's tags: `portTags(name)` for a flow about a logical port (in_out_port). */
  readonly tags?: ReadonlyMap<string, string>;
  /** Shares the external_ids map among flows of one owner with the same hint and stage. */
  readonly ids?: StageIds;
}

/**
 * The external_ids maps of one owner's hinted flows, one per (hint, stage): an owner's flows in
 * one stage usually come from one NB row, and tens of thousands of two-entry maps add up.
 * Made afresh for each regeneration of an owner; the maps are immutable once made.
 */
export class StageIds {
  /**
   * The first hint's maps by stage, in a short list (an owner's flows fall in a few stages and
   * mostly come from one NB row); other hints' in a map by hint, then stage.
   */
  private firstHint: Uuid | undefined = undefined;
  /** The first hint's stage-hint value, shared by its maps. */
  private firstShort = '';
  private readonly firstStages: string[] = [];
  private readonly firstIds: ReadonlyMap<string, string>[] = [];
  private others: Map<Uuid, Map<string, ReadonlyMap<string, string>>> | undefined = undefined;

  get(hint: Uuid, stageName: string): ReadonlyMap<string, string> {
    if (this.firstHint === undefined) {
      this.firstHint = hint;
      this.firstShort = hintShort(hint);
    }
    if (hint === this.firstHint) {
      const i = this.firstStages.indexOf(stageName);
      if (i >= 0) return this.firstIds[i] as ReadonlyMap<string, string>;
      const ids = new SmallMap('stage-hint', this.firstShort, 'stage-name', stageName);
      this.firstStages.push(stageName);
      this.firstIds.push(ids);
      return ids;
    }
    this.others ??= new Map();
    let byStage = this.others.get(hint);
    if (byStage === undefined) this.others.set(hint, (byStage = new Map()));
    let ids = byStage.get(stageName);
    if (ids === undefined) byStage.set(stageName, (ids = stageIds(hint, stageName)));
    return ids;
  }
}

/** A hinted flow's external_ids. Keys in sorted order, as every map value is built: stage-hint < stage-name. */
function stageIds(hint: Uuid, stageName: string): ReadonlyMap<string, string> {
  return new SmallMap('stage-hint', hintShort(hint), 'stage-name', stageName);
}

/** A stage-hint value: the first eight hex digits of the NB row's UUID. */
function hintShort(hint: Uuid): string {
  return hint.slice(0, 8);
}

const NO_UUIDS: readonly Uuid[] = Object.freeze([]);
const NO_STRINGS: readonly string[] = Object.freeze([]);
const NO_TAGS: ReadonlyMap<string, string> = new Map();
const NO_HINTS: FlowHints = Object.freeze({});

/** external_ids of a flow without stage-hint, one map per stage. */
const STAGE_IDS: ReadonlyMap<string, ReadonlyMap<string, string>> = new Map(
  [...LS_INGRESS_STAGES, ...LS_EGRESS_STAGES, ...LR_INGRESS_STAGES, ...LR_EGRESS_STAGES].map((s: Stage) => [s.name, new Map([['stage-name', s.name]])]),
);

/** The tags of a flow about logical port `name` (OVN's tags:in_out_port); share it per port. */
export function portTags(name: string): ReadonlyMap<string, string> {
  return new SmallMap('in_out_port', name);
}

/**
 * Datapaths are split into shards by tunnel key, this many keys a shard (keys 1-256 are shard
 * 0, 257-512 shard 1, ...): the datapaths of one shard that produce the same flow share one row.
 * One row per content for all datapaths (as ovn-northd 23.03 has it) makes every new switch
 * rewrite a group of every switch, a cost per transaction that grows with the topology, on
 * every replica and for every agent holding the group. Keys are given lowest-free first, so the
 * switches a CMS adds one after the other fall into one shard: a new switch rewrites one group
 * of at most this many datapaths, however many there are, and only the agents holding that group
 * hear of it. (Split by UUID instead, a run of new switches rewrote a group in nearly every
 * shard, each of 1/16 of all switches.) A topology of up to this many datapaths has one shard,
 * so its switches share one copy of each flow they have in common.
 */
export const FLOW_SHARD_KEYS = 256;

/** The shard of the datapath whose tunnel key is `key` (a key is at least 1). */
export function shardOfKey(key: number): number {
  return Math.floor((key - 1) / FLOW_SHARD_KEYS);
}

/** The shard of each datapath array datapathRef made. */
const shardOfRefs = new WeakMap<readonly Uuid[], number>();

/**
 * The logical_datapath value of datapath `sbUuid` in shard `shard`, which every flow of the
 * datapath shares: frozen, with its shard recorded for `lflow`. A datapath whose key moves it to
 * another shard gets a new one (its flows are other rows then).
 */
export function datapathRef(sbUuid: Uuid, shard: number): readonly Uuid[] {
  const ld = Object.freeze([sbUuid]);
  shardOfRefs.set(ld, shard);
  return ld;
}

/** The array shardOfRef answered last, and its shard: an owner's flows name one datapath. */
let lastRef: readonly Uuid[] | undefined;
let lastShard = 0;

/** The shard of a datapath array that datapathRef made; any other array is a mistake. */
export function shardOfRef(ld: readonly Uuid[]): number {
  if (ld === lastRef) return lastShard;
  const shard = shardOfRefs.get(ld);
  if (shard === undefined) throw new Error(`lflow: the datapath array [${ld.join(', ')}] was not made by datapathRef`);
  lastRef = ld;
  lastShard = shard;
  return shard;
}

/**
 * A Logical_Flow row's UUID: its content without the datapath, and the datapath's shard, so
 * the datapaths of a shard that produce the same flow share one row (through a
 * Logical_DP_Group). The stage name keeps switch and router flows apart, as ovn-northd's stage
 * does.
 */
/** No flows: what a datapath, port or rule without any holds. */
export const NO_FLOWS: readonly sb.Logical_Flow[] = Object.freeze([]);

export function lflowUuid(shard: number, stageName: string, priority: number, match: string, actions: string, controllerMeter?: string): Uuid {
  // A metered flow (copp.ts) is another row than the same flow unmetered, as in ovn-northd.
  const what = controllerMeter === undefined ? 'Logical_Flow' : `Logical_Flow meter=${controllerMeter}`;
  return hashUuid6(what, String(shard), stageName, String(priority), match, actions);
}

/**
 * A template's lineage, for templates that replace one another in place (a load balancer's
 * chunk of VIPs in one shard, lflows/lb.ts): the name of its class's Logical_DP_Group comes from
 * it instead of from the content, so the flows that stay when one VIP of the chunk changes keep
 * their group and their rows. Templates without one are named by their content.
 */
export const templateLineages = new WeakMap<readonly sb.Logical_Flow[], string>();

/** The placeholder datapath of each shard used so far (bounded by the shards the key space has). */
const shardTemplateRefs = new Map<number, readonly Uuid[]>();

/**
 * A placeholder datapath of shard `shard`, for flows built once per shard and held in its
 * datapaths (a switch's own flows are such templates): a UUID no datapath has, its shard in its
 * first eight hex digits. The same array for every caller.
 */
export function shardTemplateRef(shard: number): readonly Uuid[] {
  let ld = shardTemplateRefs.get(shard);
  if (ld === undefined) shardTemplateRefs.set(shard, (ld = datapathRef(`${shard.toString(16).padStart(8, '0')}-0000-0000-0000-000000000000`, shard)));
  return ld;
}

/**
 * One flow of datapath `logicalDatapath` (the datapath's shared one-element array from
 * datapathRef: its Datapath_Binding UUID).
 */
export function lflow(logicalDatapath: readonly Uuid[], stageName: StageName, priority: number, match: string, actions: string, hints: FlowHints = NO_HINTS): sb.Logical_Flow {
  const s = stage(stageName);
  const uuid = lflowUuid(shardOfRef(logicalDatapath), s.name, priority, match, actions);
  // Keys in sorted order, as every map value is built: stage-hint < stage-name.
  let ids: ReadonlyMap<string, string>;
  if (hints.hint === undefined) ids = STAGE_IDS.get(s.name) as ReadonlyMap<string, string>;
  else ids = hints.ids !== undefined ? hints.ids.get(hints.hint, s.name) : stageIds(hints.hint, s.name);
  return {
    // _version is filled in when the flow is first shown as its row (lflows/node.ts).
    _uuid: uuid, _version: '', logical_datapath: logicalDatapath, logical_dp_group: NO_UUIDS, pipeline: s.pipeline, table_id: s.table,
    priority, match, actions, tags: hints.tags ?? NO_TAGS, controller_meter: NO_STRINGS, external_ids: ids,
  };
}

/** A logical port name as OVN quotes it in matches and actions (its json_key). */
export function jsonKey(name: string): string {
  return JSON.stringify(name);
}

/**
 * The datapaths a Logical_Flow row applies to: its logical_datapath, or the members of its
 * logical_dp_group as `view` holds them.
 */
export function flowDatapaths(view: ReadonlyMap<string, ReadonlyMap<Uuid, unknown>>, flow: Pick<sb.Logical_Flow, 'logical_datapath' | 'logical_dp_group'>): readonly Uuid[] {
  if (flow.logical_dp_group.length === 0) return flow.logical_datapath;
  const groups = view.get('Logical_DP_Group');
  return flow.logical_dp_group.flatMap((g) => (groups?.get(g) as sb.Logical_DP_Group | undefined)?.datapaths ?? []);
}
