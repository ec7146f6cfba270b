// Whether our agent compiles what northd wrote: every Logical_Flow of an SB view (and the
// physical flows of its ports and groups) through the agent's DesiredFlows, on a chassis
// "hv-all" to which every VIF port of the view is bound, so that every datapath with such a port
// (and those patched to it) is local, and as each gateway router's chassis. Returns the flows that could not be compiled, each with
// its reason and text. An action or match ovn-northd writes that ovn-controller compiles and
// ours does not shows up here: icmp4.frag_mtu (gateway_mtu), select (ECMP routes) and address
// sets holding a template VIP did, before the agent learned them; and, run over the random
// topologies of tests/northd/incremental-equals-recompute, a flow our northd wrote in 23.03.3's
// spelling that 23.03.1's ovn-controller refuses (flags.localnet).
//
// Left out: rows ovn-controller refuses too, from NB values northd copies without checking
// them, which the tests set on purpose — template text ("^NAME": this chassis has no
// Chassis_Template_Var), a collector set or MTU printed negative (%d of a uint32; gateway_mtu
// below the Ethernet overhead), DHCP/RA option values given unquoted or out of their range, MACs
// not in the 17-character form ovn-controller's lexer takes (a server_id or a NAT's external_mac
// of "0:0:0:0:0:fd"; the generator's "bogus" values), an IPv6 forwarding group VIP in its ARP
// responder, a flag set before "drop;" (a router's load balancer VIP without backends); and
// port groups and address sets an ACL names that the SB does not hold for the flow's datapath
// (a group with no port on the switch, a set never created), which ovn-controller cannot
// resolve either: those are checked against the view, not by their text.
import { DesiredFlows } from '../../agent/flows/desired.js';
import type { LocalView } from '../../agent/local-view.js';
import type { SbRowChange } from '../../agent/sb-source.js';
import type { Row } from '../../ovsdb/index.js';

const CHASSIS = 'hv-all';
const CHASSIS_UUID = '0dd0c0de-0000-4000-8000-000000000001';

/** Text of rows ovn-controller 23.03 refuses as well (see the top of this file). */
const refusedByOvnControllerToo: readonly RegExp[] = [
  /\^[A-Za-z_]/,
  /collector_set=-|obs_domain=-|frag_mtu = -/,
  /\bbogus\b|hostname = [^"\s]/,
  /arp\.tpa == [0-9a-fA-F]*:/,
  // ovn-northd 23.03.1's action for a router VIP without backends under force_snat_for_lb or
  // skip_snat_for_lb: the flag, then "drop;", which OVN's action parser takes only alone.
  /; drop;/,
];

/** A token of six colon-separated hex groups that is not 17 characters: no MAC to OVN's lexer. */
const LOOSE_MAC = /(?<![\w:.])[0-9A-Fa-f]{1,2}(?::[0-9A-Fa-f]{1,2}){5}(?![\w:.])/g;

function hasLooseMac(text: string): boolean {
  for (const m of text.matchAll(LOOSE_MAC)) if (m[0].length !== 17) return true;
  return false;
}

/**
 * Whether `error` is the parser's for a port group ("@name") or address set ("$name") the view
 * does not hold: as ovn-controller looks them up, "<datapath key>_name" (a port group, for one of
 * the flow's datapaths) or "name".
 */
function namesAbsentSet(view: ReadonlyMap<string, ReadonlyMap<string, Row>>, lf: Row, error: string): boolean {
  const m = /Syntax error at `([@$])([^']+)' expecting (?:port group|address set) name/.exec(error);
  if (m === null) return false;
  const [, sigil, name] = m as unknown as [string, string, string];
  const table = sigil === '@' ? 'Port_Group' : 'Address_Set';
  const names = new Set([...(view.get(table)?.values() ?? [])].map((r) => r['name'] as string));
  if (sigil === '$') return !names.has(name);
  const datapaths = view.get('Datapath_Binding');
  const group = (lf['logical_dp_group'] as readonly string[])[0];
  const dps = group === undefined ? (lf['logical_datapath'] as readonly string[]) : (view.get('Logical_DP_Group')?.get(group)?.['datapaths'] as readonly string[] | undefined) ?? [];
  return dps.some((dp) => !names.has(`${String(datapaths?.get(dp)?.['tunnel_key'])}_${name}`) && !names.has(name));
}

/** A logical flow (or other source) our agent could not compile, and why. */
export interface AgentRefusal {
  /** The Logical_Flow's UUID; undefined for a source that is not a logical flow. */
  readonly uuid: string | undefined;
  readonly match: string;
  readonly actions: string;
  /** Which part the compiler stopped at, by its error. */
  readonly part: 'match' | 'actions' | 'other';
  readonly error: string;
  /** ovn-controller refuses it too (see the top of this file). */
  readonly refusedToo: boolean;
}

/**
 * Every refusal of our agent's compiler over `view`, and the Logical_Flows it compiles (a local
 * datapath; no in_out_port tag naming an unrelated port, which ovn-controller skips unparsed
 * too): on the chassis "hv-all" that binds every VIF, and again as each gateway router's chassis
 * (options:l3gateway-chassis of its ports), whose datapath is local there alone.
 */
export function agentCompile(view: ReadonlyMap<string, ReadonlyMap<string, Row>>): { readonly refusals: readonly AgentRefusal[]; readonly localFlows: ReadonlySet<string> } {
  const gateways = new Set<string>();
  for (const pb of view.get('Port_Binding')?.values() ?? []) {
    const chassis = pb['type'] === 'l3gateway' ? (pb['options'] as ReadonlyMap<string, string>).get('l3gateway-chassis') : undefined;
    if (chassis !== undefined && chassis !== '') gateways.add(chassis);
  }
  const refusals = new Map<string, AgentRefusal>();
  const localFlows = new Set<string>();
  for (const chassis of [CHASSIS, ...[...gateways].sort()]) {
    const one = compileOn(view, chassis);
    for (const r of one.refusals) if (!refusals.has(r.uuid ?? r.error)) refusals.set(r.uuid ?? r.error, r);
    for (const u of one.localFlows) localFlows.add(u);
  }
  return { refusals: [...refusals.values()], localFlows };
}

function compileOn(view: ReadonlyMap<string, ReadonlyMap<string, Row>>, chassis: string): { readonly refusals: readonly AgentRefusal[]; readonly localFlows: ReadonlySet<string> } {
  const changes: SbRowChange[] = [];
  const vifs = new Map<string, number>();
  for (const [table, rows] of view) {
    if (table === 'Chassis') continue;
    for (const r of rows.values()) {
      let row = r;
      if (table === 'Port_Binding' && r['type'] === '') {
        vifs.set(r['logical_port'] as string, vifs.size + 1);
        row = { ...r, chassis: [CHASSIS_UUID] };
      }
      changes.push({ table, uuid: r._uuid, row });
    }
  }
  changes.push({
    table: 'Chassis', uuid: CHASSIS_UUID,
    row: { _uuid: CHASSIS_UUID, _version: CHASSIS_UUID, name: chassis, hostname: chassis, encaps: [], vtep_logical_switches: [], nb_cfg: 0, external_ids: new Map(), other_config: new Map(), transport_zones: [] } as Row,
  });
  const local: LocalView = { chassis, vifs, tunnels: new Map(), localnetPatches: new Map() };
  const d = new DesiredFlows();
  d.update({ reset: true, fromRevision: 0, toRevision: 1, changes }, local);
  const flows = view.get('Logical_Flow') ?? new Map<string, Row>();
  const refusals: AgentRefusal[] = [];
  for (const [source, error] of d.sourceErrors()) {
    const uuid = source.startsWith('lf:') ? source.slice(3) : undefined;
    const lf = uuid === undefined ? undefined : flows.get(uuid);
    const match = lf === undefined ? '' : String(lf['match']);
    const actions = lf === undefined ? '' : String(lf['actions']);
    const text = lf === undefined ? '' : `${match} | ${actions}`;
    const part = / priority \d+\): match: /.test(error) ? 'match' : / priority \d+\): actions: /.test(error) ? 'actions' : 'other';
    const refusedToo = refusedByOvnControllerToo.some((re) => re.test(text)) || hasLooseMac(text) || (lf !== undefined && namesAbsentSet(view, lf, error));
    refusals.push({ uuid: lf === undefined ? undefined : uuid, match, actions, part, error, refusedToo });
  }
  const localFlows = new Set<string>();
  for (const uuid of flows.keys()) if (d.compilesLflow(uuid)) localFlows.add(uuid);
  return { refusals, localFlows };
}

/** What our agent refuses of `view` that ovn-controller would compile: each error with its flow's text. */
export function agentCompileErrors(view: ReadonlyMap<string, ReadonlyMap<string, Row>>): string[] {
  const out: string[] = [];
  for (const r of agentCompile(view).refusals) {
    if (r.refusedToo) continue;
    out.push(r.uuid === undefined ? r.error : `${r.error} [${r.match} | ${r.actions}]`);
  }
  return out.sort();
}
