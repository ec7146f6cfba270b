// One SB Logical_Flow row → the OpenFlow flows ovn-controller 23.03 installs for it: the table
// from pipeline and table_id (ingress N → 8+N, egress N → 42+N), the priority, the match (the
// row's match ANDed with its actions' prerequisites, compiled by agent/expr) plus
// metadata = the datapath's tunnel key, the cookie = the first 32 bits of the row's UUID, and
// the compiled actions. A conjunctive match yields clause flows whose actions are
// conjunction(id, k/n) (cookie 0, as OVN adds them) and a conj_id flow with the real actions.
// Chassis template variables ("^NAME") are expanded first, from ctx.templateVars. A sample
// action is installed only for the chassis's collector sets (ctx.sampleCollectors).
// Pure; a flow that cannot be compiled is an error value naming the flow, never a throw and
// never a partly compiled flow.

import { compileMatch, type CompileContext } from '../expr/index.js';
import { expandTemplates } from '../expr/templates.js';
import type { ConjunctionRef, FieldLookup, FlowMatch, MaskedValue } from '../expr/to-matches.js';
import { compileActions, type ActionContext, type GroupRequest } from '../actions/compile.js';
import type { FlowSpec, OfAction } from '../openflow/types.js';
import { LOG_PIPELINE_LEN, LOG_REG, OFTABLE } from './tables.js';

/** The columns of a Logical_Flow the compiler reads (an sb.Logical_Flow row has them all). */
export interface LogicalFlowRow {
  readonly _uuid: string;
  readonly logical_datapath: readonly string[];
  readonly logical_dp_group: readonly string[];
  readonly pipeline: 'ingress' | 'egress';
  readonly table_id: number;
  readonly priority: number;
  readonly match: string;
  readonly actions: string;
  readonly controller_meter?: readonly string[];
}

export interface DatapathInfo {
  readonly tunnelKey: number;
  readonly isSwitch: boolean;
  /** The router has options snat-ct-zone: ct_*_in_czone use the SNAT zone (reg12). */
  readonly snatCtZone?: boolean;
}

export interface FlowCompileContext extends Omit<CompileContext, 'lookupPort' | 'keepMatch'> {
  /** A datapath by its Datapath_Binding UUID; undefined = not known (the flow is an error). */
  readonly datapath: (uuid: string) => DatapathInfo | undefined;
  /** Whether a datapath is local to this chassis; flows of other datapaths are not compiled
   *  (as ovn-controller skips them). Absent: every known datapath is local. */
  readonly isLocalDatapath?: (uuid: string) => boolean;
  /** The datapaths of a Logical_DP_Group; undefined = no such group. */
  readonly dpGroup?: (uuid: string) => readonly string[] | undefined;
  /** A port group's ports as seen from datapath 'dp' (OVN 23.03 keeps one SB Port_Group per
   *  datapath); when absent, the plain portGroup lookup is used. */
  readonly portGroupIn?: (dp: string, name: string) => readonly string[] | undefined;
  /** A port or multicast group name → tunnel key within datapath 'dp'. */
  readonly lookupPort?: (dp: string, name: string) => number | undefined;
  /**
   * A port of datapath 'dp' → the OpenFlow port of the tunnel to the chassis it is bound on
   * (fwd_group's liveness; ovn-controller's tunnel_ofport_cb); undefined when there is none.
   */
  readonly tunnelOfport?: (dp: string, name: string) => number | undefined;
  /**
   * Allocates 'n' consecutive conjunction ids for this row on datapath 'dp' and returns the first
   * id minus 1 (ovn-controller starts the search at a hash of both UUIDs; absent: ids from 1).
   */
  readonly conjIdOfs?: (n: number, lflowUuid: string, dp: string) => number;
  readonly groupId?: ActionContext['groupId'];
  /**
   * Meter name → id for controller_meter, log(meter=…) and set_meter's own meter (named after
   * the row: actions/set-meter.ts). Called for controller_meter on every local datapath the
   * row compiles on, whether or not its actions punt to the controller, as ovn-controller
   * assigns the id when it reads the row. Bodies whose actions asked for a meter are not
   * memoized, so that every row's compile asks for its own.
   */
  readonly meterId?: (name: string) => number | undefined;
  readonly ctZeroSnat?: boolean;
  /** The datapath has the symmetric L4 dp_hash: select's groups ask for it (ActionContext.dpHashL4Sym). */
  readonly dpHashL4Sym?: boolean;
  readonly dhcpOpts?: ActionContext['dhcpOpts'];
  /**
   * For switch datapaths, OVN skips flows whose match names a logical port (inport in ingress,
   * outport in egress) that is not related to this chassis. Absent: every port is local.
   */
  readonly isRelatedPort?: (dp: string, portKey: number) => boolean;
  /** Compiled rows shared across datapaths (see CompileMemo); absent = compile every time. */
  readonly memo?: CompileMemo;
  /** This chassis's template variables ("^NAME" in a row's text; agent/expr/templates.ts). */
  readonly templateVars?: ReadonlyMap<string, string>;
  /**
   * The ids of the Flow_Sample_Collector_Sets on this chassis's integration bridge: a sample
   * action encodes only for one of them. Absent: none. Bodies whose actions looked a
   * collector set up are not memoized: they carry the datapath's key and the row's cookie.
   */
  readonly sampleCollectors?: ReadonlySet<number>;
}

export type LogicalFlowResult =
  | { readonly flows: FlowSpec[]; readonly groups: GroupRequest[]; readonly conjunctionsN: number }
  | { readonly error: string };

/** metadata holds the datapath's tunnel key, matched exactly (all 64 bits). */
const METADATA_MASK = (1n << 64n) - 1n;

/** The OVN port name every datapath knows: "none" is key 0 (lookup_port_cb). */
const NONE_PORT = 'none';

function fail(row: LogicalFlowRow, message: string): { error: string } {
  return { error: `Logical_Flow ${row._uuid} (${row.pipeline} table ${row.table_id} priority ${row.priority}): ${message}` };
}

/** The first 32 bits of a UUID as OVN's cookie (uuid.parts[0]). */
export function cookieOf(uuid: string): bigint {
  if (uuid.length > 8 && uuid.charCodeAt(8) === 0x2d) {
    // The usual form: eight hex digits, then a dash.
    let n = 0;
    let i = 0;
    for (; i < 8; i++) {
      const c = uuid.charCodeAt(i);
      const l = c | 0x20;
      const d = c >= 0x30 && c <= 0x39 ? c - 0x30 : l >= 0x61 && l <= 0x66 ? l - 0x57 : -1;
      if (d < 0) break;
      n = n * 16 + d;
    }
    if (i === 8) return BigInt(n);
  }
  const hex = uuid.replace(/-/g, '').slice(0, 8);
  return /^[0-9a-fA-F]{8}$/.test(hex) ? BigInt(`0x${hex}`) : 0n;
}

/** Compiles a row for every datapath it applies to. */
export function compileLogicalFlow(given: LogicalFlowRow, ctx: FlowCompileContext): LogicalFlowResult {
  const row = given.match.includes('^') || given.actions.includes('^')
    ? { ...given, match: expandTemplates(given.match, ctx.templateVars), actions: expandTemplates(given.actions, ctx.templateVars) }
    : given;
  if (row.table_id < 0 || row.table_id >= LOG_PIPELINE_LEN || !Number.isInteger(row.table_id)) {
    return fail(row, `table_id ${row.table_id} is outside 0..${LOG_PIPELINE_LEN - 1}.`);
  }
  if (row.pipeline !== 'ingress' && row.pipeline !== 'egress') return fail(row, `unknown pipeline ${String(row.pipeline)}.`);
  const dps: string[] = [...row.logical_datapath];
  for (const g of row.logical_dp_group) {
    const members = ctx.dpGroup?.(g);
    if (members === undefined) return fail(row, `unknown Logical_DP_Group ${g}.`);
    dps.push(...members);
  }
  const flows: FlowSpec[] = [];
  const groups: GroupRequest[] = [];
  let conjunctionsN = 0;
  for (const dp of dps) {
    if (ctx.isLocalDatapath !== undefined && !ctx.isLocalDatapath(dp)) continue;
    const r = compileForDatapath(row, dp, ctx);
    if ('error' in r) return r;
    flows.push(...r.flows);
    groups.push(...r.groups);
    conjunctionsN += r.conjunctionsN;
  }
  return { flows, groups, conjunctionsN };
}

/** What a row compiles to before the datapath's metadata, cookie and conjunction ids. */
type Body =
  | { readonly matches: readonly FlowMatch[]; readonly conjunctionsN: number; readonly actions: readonly OfAction[]; readonly groups: GroupRequest[] }
  | { readonly error: string };

/**
 * A cache of compiled rows for one compile context, the way OVN's lflow cache keeps compiled
 * matches: rows whose text names no logical port or port group compile to the same flows on
 * every datapath of the same kind, so a row shared by 200 switches is parsed once. The owner
 * must drop the memo whenever anything the context reads changes (address sets, groups,
 * chassis residency); entries are only added, up to `compileMemoEntriesMax`.
 */
export interface CompileMemo {
  /**
   * Bodies by the row's match text, then by the rest of what they depend on. The match string
   * keys the map (a string keeps its hash, so the usual miss costs one lookup and builds
   * nothing); the few entries under one match are told apart field by field.
   */
  readonly bodies: Map<string, MemoEntry[]>;
  /**
   * Match texts compiled once without being kept. A body is kept the second time its match is
   * compiled: most rows of a real SB are compiled once (a match naming one port's address), and
   * keeping their bodies would only make the garbage collector copy them around.
   */
  readonly seen: Set<string>;
  /** Bodies held, across all matches; at most compileMemoEntriesMax. */
  entries: number;
}

/** One memoized body and everything besides the match text it was compiled from. */
interface MemoEntry {
  readonly pipeline: string;
  readonly table: number;
  readonly isSwitch: boolean;
  readonly snatCtZone: boolean;
  readonly meter: string | undefined;
  readonly actions: string;
  readonly body: Body;
}

export const compileMemoEntriesMax = 200_000;

export function createCompileMemo(): CompileMemo {
  return { bodies: new Map(), seen: new Set(), entries: 0 };
}

function memoFind(entries: readonly MemoEntry[] | undefined, row: LogicalFlowRow, dp: DatapathInfo): Body | undefined {
  if (entries === undefined) return undefined;
  const snat = dp.snatCtZone === true;
  const meter = row.controller_meter?.[0];
  for (const e of entries) {
    if (e.table === row.table_id && e.pipeline === row.pipeline && e.isSwitch === dp.isSwitch && e.snatCtZone === snat
      && e.meter === meter && e.actions === row.actions) return e.body;
  }
  return undefined;
}

function compileBody(row: LogicalFlowRow, dpUuid: string, dp: DatapathInfo, ctrlMeterId: number | undefined, ctx: FlowCompileContext): Body {
  const memo = ctx.memo;
  const sameMatch = memo?.bodies.get(row.match);
  const hit = memoFind(sameMatch, row, dp);
  if (hit !== undefined) return hit;
  // Whether the result depends on the datapath beyond its kind (a port or port group lookup), or
  // on the row itself (a meter its actions asked for, a sample's key and cookie).
  let dpDependent = false;
  const lookupPort = (name: string): number | undefined => {
    dpDependent = true;
    return name === NONE_PORT ? 0 : ctx.lookupPort?.(dpUuid, name);
  };
  const tunnelOfportOf = ctx.tunnelOfport;
  const tunnelOfport = tunnelOfportOf === undefined ? undefined : (name: string): number | undefined => {
    dpDependent = true;
    return tunnelOfportOf(dpUuid, name);
  };
  const meterIdOf = ctx.meterId;
  const meterId = meterIdOf === undefined ? undefined : (name: string): number | undefined => {
    dpDependent = true;
    return meterIdOf(name);
  };
  const collectors = ctx.sampleCollectors;
  const sampleCollector = (id: number): boolean => {
    dpDependent = true;
    return collectors?.has(id) === true;
  };
  const body = ((): Body => {
    // Every property present (some undefined): one object shape for every call.
    const acts = compileActions(row.actions, {
      symtab: ctx.symtab,
      pipeline: row.pipeline,
      table: row.table_id,
      isSwitch: dp.isSwitch,
      lookupPort,
      tunnelOfport,
      groupId: ctx.groupId,
      ctrlMeterId,
      meterId,
      lflowUuid: row._uuid,
      dpKey: dp.tunnelKey,
      sampleCollector,
      ctZeroSnat: ctx.ctZeroSnat,
      dpHashL4Sym: ctx.dpHashL4Sym,
      commonNatZone: dp.snatCtZone === true ? LOG_REG.SNAT_ZONE : LOG_REG.DNAT_ZONE,
      dhcpOpts: ctx.dhcpOpts,
    });
    if ('error' in acts) return { error: `actions: ${acts.error}` };
    // The match and the actions' prerequisites, as OVN combines them before annotation. The
    // newline ends a `//` comment the match may finish with.
    const uniquePrereqs = [...new Set(acts.prereqs)];
    const text = uniquePrereqs.length === 0 ? row.match : `(${row.match}\n) && (${uniquePrereqs.join(') && (')})`;
    const portGroupIn = ctx.portGroupIn;
    const portGroup = portGroupIn === undefined ? ctx.portGroup : (n: string): readonly string[] | undefined => {
      dpDependent = true;
      return portGroupIn(dpUuid, n);
    };
    // For switch datapaths, OVN skips the flows that match a logical port (inport in ingress,
    // outport in egress) not related to this chassis; they are left out as they are made.
    const isRelatedPort = ctx.isRelatedPort;
    const portReg = row.pipeline === 'ingress' ? LOG_REG.INPORT : LOG_REG.OUTPORT;
    const keepMatch = !dp.isSwitch || isRelatedPort === undefined ? undefined
      : (fields: FieldLookup): boolean => {
        const port = fields.get(portReg);
        if (port === undefined || port.value === 0n) return true;
        dpDependent = true;
        return isRelatedPort(dpUuid, Number(port.value));
      };
    const m = compileMatch(text, {
      symtab: ctx.symtab,
      addressSet: ctx.addressSet,
      portGroup,
      lookupPort,
      isChassisResident: ctx.isChassisResident,
      keepMatch,
    });
    if ('error' in m) return { error: `match: ${m.error}` };
    return { matches: m.matches, conjunctionsN: m.conjunctionsN, actions: acts.actions, groups: acts.groups };
  })();
  if (memo !== undefined && !dpDependent && memo.entries < compileMemoEntriesMax && sameMatch === undefined
    && memo.seen.size < compileMemoEntriesMax && !memo.seen.has(row.match)) {
    memo.seen.add(row.match);
  } else if (memo !== undefined && !dpDependent && memo.entries < compileMemoEntriesMax) {
    const entry: MemoEntry = {
      pipeline: row.pipeline, table: row.table_id, isSwitch: dp.isSwitch, snatCtZone: dp.snatCtZone === true,
      meter: row.controller_meter?.[0], actions: row.actions, body,
    };
    if (sameMatch === undefined) memo.bodies.set(row.match, [entry]);
    else sameMatch.push(entry);
    memo.entries++;
  }
  return body;
}

function compileForDatapath(row: LogicalFlowRow, dpUuid: string, ctx: FlowCompileContext): LogicalFlowResult {
  const dp = ctx.datapath(dpUuid);
  if (dp === undefined) return fail(row, `unknown datapath ${dpUuid}.`);
  const meterName = row.controller_meter?.[0];
  const ctrlMeterId = meterName === undefined ? undefined : ctx.meterId?.(meterName);
  const m = compileBody(row, dpUuid, dp, ctrlMeterId, ctx);
  if ('error' in m) return fail(row, m.error);
  const acts = m;
  const base = (row.pipeline === 'ingress' ? OFTABLE.LOG_INGRESS_PIPELINE : OFTABLE.LOG_EGRESS_PIPELINE);
  const table = base + row.table_id;
  const cookie = cookieOf(row._uuid);
  const ofs = m.conjunctionsN > 0 ? (ctx.conjIdOfs?.(m.conjunctionsN, row._uuid, dpUuid) ?? 0) : 0;
  const metadata: MaskedValue = { value: BigInt(dp.tunnelKey), mask: METADATA_MASK };
  const flows: FlowSpec[] = [];
  for (const fm of m.matches) flows.push(flowOf(fm, table, row.priority, metadata, ofs, acts.actions, cookie));
  return { flows, groups: acts.groups, conjunctionsN: m.conjunctionsN };
}

function flowOf(fm: FlowMatch, table: number, priority: number, metadata: MaskedValue, conjOfs: number,
  actions: readonly OfAction[], cookie: bigint): FlowSpec {
  const match = new Map<string, MaskedValue>();
  match.set('metadata', metadata);
  for (const [k, v] of fm.fields) {
    match.set(k, k === 'conj_id' ? { value: v.value + BigInt(conjOfs), mask: v.mask } : v);
  }
  if (fm.conjunctions.length === 0) return { table, priority, match, actions, cookie };
  const conj = [...fm.conjunctions]
    .sort((a: ConjunctionRef, b: ConjunctionRef) => a.id - b.id || a.clause - b.clause)
    .map((c): OfAction => ({ kind: 'conjunction', id: c.id + conjOfs, clause: c.clause, nClauses: c.nClauses }));
  return { table, priority, match, actions: conj, cookie: 0n };
}
