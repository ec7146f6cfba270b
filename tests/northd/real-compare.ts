// Comparing ovnts's northd with the real ovn-northd 23.03 (tests/northd/real-northd.ts runs the
// real NB, SB and ovn-northd): compareWithReal checks every SB table northd derives and, per
// datapath, the set of logical flows (stage, priority, match, actions; hints apart), and that the
// view built transaction by transaction equals a fresh recompute. scenario() builds a topology
// with the real ovn-nbctl, one transaction per step, and compares. Used by the scripted
// differential tests and by the random topologies of differential-random.
import type { Test } from 'tap';
import type * as sb from '../../ovsdb/rows/sb.js';
import { isMapValue } from '../../ovsdb/index.js';
import type { SbView } from '../../northd/index.js';
import { flowDatapaths } from '../../northd/index.js';
import type { RealSandbox } from './real-northd.js';
import { asArray, compareWithOvnParser, startRealSandbox } from './real-northd.js';
import { viewDifference } from './nb-fixture.js';
import { agentCompileErrors } from '../helpers/agent-compiles.js';

export function ours<T>(view: SbView, table: string): T[] {
  return [...(view.get(table)?.values() ?? [])] as unknown as T[];
}

export const flowText = (pipeline: unknown, table: unknown, priority: unknown, match: unknown, actions: unknown, meter: unknown): string =>
  `${String(pipeline)} ${String(table)} ${String(priority)} (${String(match)}) (${String(actions)})${asArray(meter).length > 0 ? ` meter=${String(asArray(meter)[0])}` : ''}`;

export interface CompareOptions {
  /** The datapaths whose flows must be equal (all when omitted). */
  readonly datapaths?: readonly string[];
  /**
   * Whether port tunnel keys must agree. Ports that appear in one transaction take keys in
   * name order in ovnts and in hash order in ovn-northd, so they may not.
   */
  readonly portKeys?: boolean;
}

/** Every this many comparisons (every one under test:long), our view also goes through OVN's own parser. */
const PARSER_EVERY = process.env.OVNTS_LONG !== undefined ? 1 : 5;
let comparisons = 0;

/** Compares everything ovnts derives with the real SB. */
export async function compareWithReal(t: Test, real: RealSandbox, options: CompareOptions = {}): Promise<void> {
  const datapaths = options.datapaths;
  const view = real.northd.view();
  t.same(agentCompileErrors(view), [], 'our agent compiles every logical flow (every VIF port bound to one chassis)');
  if (comparisons++ % PARSER_EVERY === 0) {
    t.same((await compareWithOvnParser(view)).disagreements, [], 'OVN\'s parser (the real ovn-trace) refuses exactly the flows our agent refuses');
  }

  // Datapath_Binding: name, tunnel key, external_ids.
  const realDps = await real.sbList('Datapath_Binding');
  const realDpName = new Map(realDps.map((d) => [d['_uuid'] as string, (d['external_ids'] as Record<string, string>)['name'] as string]));
  const ourDpName = new Map(ours<sb.Datapath_Binding>(view, 'Datapath_Binding').map((d) => [d._uuid, d.external_ids.get('name') as string]));
  const byKey = (a: { key: unknown }, b: { key: unknown }): number => Number(a.key) - Number(b.key);
  t.same(
    ours<sb.Datapath_Binding>(view, 'Datapath_Binding').map((d) => ({ key: d.tunnel_key, ids: Object.fromEntries(d.external_ids) })).sort(byKey),
    realDps.map((d) => ({ key: d['tunnel_key'], ids: d['external_ids'] })).sort(byKey),
    'Datapath_Binding',
  );

  // HA_Chassis_Group: by name, its members by chassis name (external_ids:chassis-name),
  // priority and the Chassis their chassis column names (by its name), and its ref_chassis (by
  // their names). Our Chassis are those our chassis write path holds.
  const chassisNames = (rows: Iterable<Record<string, unknown>>): Map<string, string> => new Map([...rows].map((c) => [c['_uuid'] as string, c['name'] as string]));
  const haText = (groups: readonly Record<string, unknown>[], members: readonly Record<string, unknown>[], chassis: ReadonlyMap<string, string>): Map<string, string> => {
    const chassisOf = (refs: unknown): string[] => asArray(refs).map((u) => chassis.get(u as string) ?? `? ${String(u)}`).sort();
    const byUuid = new Map(members.map((m) => [m['_uuid'] as string,
      `${(m['external_ids'] as Record<string, string>)['chassis-name'] ?? '?'}:${String(m['priority'])}:${chassisOf(m['chassis']).join('') || '-'}`]));
    return new Map(groups.map((g) => [g['_uuid'] as string,
      `${String(g['name'])} [${asArray(g['ha_chassis']).map((u) => byUuid.get(u as string) ?? '?').sort().join(' ')}] ref [${chassisOf(g['ref_chassis']).join(' ')}]`]));
  };
  const realHa = haText(await real.sbList('HA_Chassis_Group'), await real.sbList('HA_Chassis'), chassisNames(await real.sbList('Chassis')));
  const ourHaRow = (table: string): Record<string, unknown>[] => ours<Record<string, unknown>>(view, table).map((r) => ({
    ...r, external_ids: isMapValue(r['external_ids']) ? Object.fromEntries(r['external_ids']) : r['external_ids'],
  }));
  const ourHa = haText(ourHaRow('HA_Chassis_Group'), ourHaRow('HA_Chassis'), chassisNames(real.chassisDb.rows('Chassis').values()));
  t.same([...ourHa.values()].sort(), [...realHa.values()].sort(), 'HA_Chassis_Group');
  t.equal(ours<unknown>(view, 'HA_Chassis').length, (await real.sbList('HA_Chassis')).length, 'HA_Chassis: as many rows');

  // Port_Binding: the NB-derived columns (the HA_Chassis_Group as its name and members, the
  // requested chassis by name).
  // Mirror: every column; a port's mirror_rules by the mirrors' names.
  const mirrorFacts = (m: Record<string, unknown>): string => JSON.stringify([m['name'], m['filter'], m['sink'], m['type'], m['index'], m['external_ids']]);
  const realMirrors = await real.sbList('Mirror');
  const ourMirrors = ours<sb.Mirror>(view, 'Mirror');
  t.same(ourMirrors.map((m) => mirrorFacts({ ...m, external_ids: Object.fromEntries(m.external_ids) })).sort(), realMirrors.map(mirrorFacts).sort(), 'Mirror');
  const realMirrorName = new Map(realMirrors.map((m) => [m['_uuid'] as string, m['name'] as string]));
  const ourMirrorName = new Map(ourMirrors.map((m) => [m._uuid, m.name]));
  const realPbs = await real.sbList('Port_Binding');
  const pbFacts = (p: Record<string, unknown>): string =>
    JSON.stringify([p['logical_port'], p['type'], p['options'], options.portKeys === false ? 0 : p['tunnel_key'], asArray(p['mac']), asArray(p['port_security']), p['dp'], asArray(p['parent_port']), asArray(p['tag']), asArray(p['nat_addresses']), p['ha'], p['requested'], p['mirrors']]);
  const realChassisName = chassisNames(await real.sbList('Chassis'));
  const ourChassisName = chassisNames(real.chassisDb.rows('Chassis').values());
  const requested = (main: unknown, additional: unknown, names: ReadonlyMap<string, string>): string[] =>
    [...asArray(main), ...asArray(additional).map((u) => `+${String(u)}`)].map((u) => (String(u).startsWith('+') ? `+${names.get(String(u).slice(1)) ?? '?'}` : names.get(String(u)) ?? '?'));
  const realPbFacts = realPbs.map((p) => pbFacts({
    ...p, dp: realDpName.get(p['datapath'] as string), ha: asArray(p['ha_chassis_group']).map((u) => realHa.get(u as string) ?? '?'),
    requested: requested(p['requested_chassis'], p['requested_additional_chassis'], realChassisName),
    mirrors: asArray(p['mirror_rules']).map((u) => realMirrorName.get(u as string) ?? '?').sort(),
  })).sort();
  const ourPbFacts = ours<sb.Port_Binding>(view, 'Port_Binding').map((p) => pbFacts({
    logical_port: p.logical_port, type: p.type, options: Object.fromEntries(p.options), tunnel_key: p.tunnel_key, mac: p.mac,
    port_security: p.port_security, dp: ourDpName.get(p.datapath), parent_port: p.parent_port, tag: p.tag, nat_addresses: p.nat_addresses,
    ha: p.ha_chassis_group.map((u) => ourHa.get(u) ?? '?'), requested: requested(p.requested_chassis, p.requested_additional_chassis, ourChassisName),
    mirrors: p.mirror_rules.map((u) => ourMirrorName.get(u) ?? '?').sort(),
  })).sort();
  t.same(ourPbFacts, realPbFacts, 'Port_Binding');

  // Multicast_Group: datapath, name, key, member port names. The keys of groups learned by
  // snooping (from 32773) depend on the order ovn-northd meets them in (its hash order) and
  // are compared by range only; that they are distinct is checked per datapath.
  const learnedKey = (k: number): string => (k >= 32773 && k <= 65535 ? 'learned' : String(k));
  const keysDistinct = (rows: readonly { dp: unknown; key: unknown }[]): boolean => new Set(rows.map((r) => `${String(r.dp)} ${String(r.key)}`)).size === rows.length;
  t.ok(keysDistinct(ours<sb.Multicast_Group>(view, 'Multicast_Group').map((g) => ({ dp: g.datapath, key: g.tunnel_key }))), 'Multicast_Group: keys distinct per datapath');
  const realPortName = new Map(realPbs.map((p) => [p['_uuid'] as string, p['logical_port'] as string]));
  const ourPortName = new Map(ours<sb.Port_Binding>(view, 'Port_Binding').map((p) => [p._uuid, p.logical_port]));
  const realMcs = (await real.sbList('Multicast_Group'))
    .map((g) => `${realDpName.get(g['datapath'] as string) ?? ''} ${String(g['name'])} ${learnedKey(g['tunnel_key'] as number)} ${asArray(g['ports']).map((u) => realPortName.get(u as string)).sort().join(',')}`).sort();
  const ourMcs = ours<sb.Multicast_Group>(view, 'Multicast_Group')
    .map((g) => `${ourDpName.get(g.datapath) ?? ''} ${g.name} ${learnedKey(g.tunnel_key)} ${g.ports.map((u) => ourPortName.get(u)).sort().join(',')}`).sort();
  t.same(ourMcs, realMcs, 'Multicast_Group');

  // IP_Multicast: every column but seq_no, the datapath by name.
  const ipMcText = (r: Record<string, unknown>, dp: string): string =>
    JSON.stringify([dp, ...['enabled', 'querier', 'eth_src', 'ip4_src', 'ip6_src', 'table_size', 'idle_timeout', 'query_interval', 'query_max_resp'].map((c) => asArray(r[c]))]);
  t.same(
    ours<sb.IP_Multicast>(view, 'IP_Multicast').map((r) => ipMcText({ ...r }, ourDpName.get(r.datapath) ?? '?')).sort(),
    (await real.sbList('IP_Multicast')).map((r) => ipMcText(r, realDpName.get(r['datapath'] as string) ?? '?')).sort(),
    'IP_Multicast',
  );

  // Port_Group, Address_Set, DHCP_Options, DHCPv6_Options: names and contents.
  const named = (rows: readonly Record<string, unknown>[], column: string): string[] => rows.map((r) => `${String(r['name'])}: ${asArray(r[column]).map(String).sort().join(' ')}`).sort();
  const ourRows = (table: string): Record<string, unknown>[] => ours<Record<string, unknown>>(view, table);
  t.same(named(ourRows('Port_Group'), 'ports'), named(await real.sbList('Port_Group'), 'ports'), 'Port_Group');
  t.same(named(ourRows('Address_Set'), 'addresses'), named(await real.sbList('Address_Set'), 'addresses'), 'Address_Set');
  const codes = (rows: readonly Record<string, unknown>[]): string[] => rows.map((r) => `${String(r['name'])} ${String(r['code'])} ${String(r['type'])}`).sort();
  t.same(codes(ourRows('DHCP_Options')), codes(await real.sbList('DHCP_Options')), 'DHCP_Options');
  t.same(codes(ourRows('DHCPv6_Options')), codes(await real.sbList('DHCPv6_Options')), 'DHCPv6_Options');

  // DNS: per NB DNS row (external_ids:dns_id), its records and the switches it applies to.
  const dnsText = (ids: Record<string, string>, records: Record<string, string>, dps: readonly string[]): string =>
    `${JSON.stringify(Object.entries(ids).sort())} ${JSON.stringify(Object.entries(records).sort())} ${[...dps].sort().join(',')}`;
  const realDns = (await real.sbList('DNS')).map((r) => dnsText(r['external_ids'] as Record<string, string>, r['records'] as Record<string, string>,
    asArray(r['datapaths']).map((u) => realDpName.get(u as string) ?? `? ${String(u)}`))).sort();
  const ourDns = ours<sb.DNS>(view, 'DNS').map((r) => dnsText(Object.fromEntries(r.external_ids), Object.fromEntries(r.records),
    r.datapaths.map((u) => ourDpName.get(u) ?? `? ${u}`))).sort();
  t.same(ourDns, realDns, 'DNS');

  // Logical_Flow: per datapath, the same set (flows shared by several datapaths sit in a
  // Logical_DP_Group in the real SB). Stage hints are compared as a second, separate check.
  const groups = new Map((await real.sbList('Logical_DP_Group')).map((g) => [g['_uuid'] as string, asArray(g['datapaths']) as string[]]));

  // Load_Balancer: every column, the datapaths by name through their groups.
  const lbFacts = (r: Record<string, unknown>, dpNames: readonly string[]): string =>
    JSON.stringify([r['name'], r['vips'], asArray(r['protocol']), r['options'], r['external_ids'], [...dpNames].sort()]);
  const realLbs = (await real.sbList('Load_Balancer')).map((r) => lbFacts(r, [...asArray(r['datapaths']), ...asArray(r['datapath_group']).flatMap((g) => groups.get(g as string) ?? [])]
    .map((d) => realDpName.get(d as string) ?? '?'))).sort();
  const ourLbs = ours<sb.Load_Balancer>(view, 'Load_Balancer').map((r) => lbFacts({
    name: r.name, vips: Object.fromEntries(r.vips), protocol: r.protocol, options: Object.fromEntries(r.options), external_ids: Object.fromEntries(r.external_ids),
  }, [...r.datapaths, ...flowDatapaths(view, { logical_datapath: [], logical_dp_group: r.datapath_group })].map((d) => ourDpName.get(d) ?? '?'))).sort();
  t.same(ourLbs, realLbs, 'Load_Balancer');

  // Chassis_Template_Var: the chassis and its variables.
  const tvFacts = (chassis: unknown, variables: Record<string, string>): string => JSON.stringify([chassis, Object.entries(variables).sort()]);
  t.same(
    ours<sb.Chassis_Template_Var>(view, 'Chassis_Template_Var').map((r) => tvFacts(r.chassis, Object.fromEntries(r.variables))).sort(),
    (await real.sbList('Chassis_Template_Var')).map((r) => tvFacts(r['chassis'], r['variables'] as Record<string, string>)).sort(),
    'Chassis_Template_Var',
  );

  // Static_MAC_Binding: port, IP, MAC, override, datapath by name.
  const smbFacts = (r: Record<string, unknown>, dp: string): string => JSON.stringify([r['logical_port'], r['ip'], r['mac'], r['override_dynamic_mac'], dp]);
  t.same(
    ours<sb.Static_MAC_Binding>(view, 'Static_MAC_Binding').map((r) => smbFacts({ ...r }, ourDpName.get(r.datapath) ?? '?')).sort(),
    (await real.sbList('Static_MAC_Binding')).map((r) => smbFacts(r, realDpName.get(r['datapath'] as string) ?? '?')).sort(),
    'Static_MAC_Binding',
  );
  // Service_Monitor: every column but the UUIDs (status included: the chassis's, or ovn-northd's
  // "offline" for a port that is not up).
  const smFacts = (r: Record<string, unknown>): string => JSON.stringify([r['ip'], asArray(r['protocol']), r['port'], r['logical_port'], r['src_mac'], r['src_ip'], asArray(r['status']), r['options'], r['external_ids']]);
  t.same(
    ours<sb.Service_Monitor>(view, 'Service_Monitor').map((r) => smFacts({ ...r, options: Object.fromEntries(r.options), external_ids: Object.fromEntries(r.external_ids) })).sort(),
    (await real.sbList('Service_Monitor')).map(smFacts).sort(),
    'Service_Monitor',
  );
  // SB_Global options: NB_Global's and those ovn-northd adds, with the same keys; the ones it
  // draws at random (a MAC prefix and a service monitor MAC when NB has none) only in form.
  const realOptions = ((await real.sbList('SB_Global'))[0]?.['options'] ?? {}) as Record<string, string>;
  const ourOptions = Object.fromEntries((ours<sb.SB_Global>(view, 'SB_Global')[0]?.options ?? new Map<string, string>()) as ReadonlyMap<string, string>);
  const drawn = (o: Record<string, string>): Record<string, string> => {
    const out = { ...o };
    for (const [k, form] of [['mac_prefix', /^[0-9a-f]{2}(:[0-9a-f]{2}){2}$/], ['svc_monitor_mac', /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/]] as const) {
      if (out[k] !== undefined) out[k] = form.test(out[k]) ? '(drawn)' : `(bad: ${out[k]})`;
    }
    return out;
  };
  t.same(drawn(ourOptions), drawn(realOptions), 'SB_Global options');
  // Meter: name, unit and bands (action, rate, burst) by name.
  const meterText = (m: Record<string, unknown>, bands: ReadonlyMap<string, Record<string, unknown>>): string =>
    `${String(m['name'])} ${String(m['unit'])} ${asArray(m['bands']).map((u) => {
      const b = bands.get(u as string);
      return b === undefined ? `? ${String(u)}` : `${String(b['action'])}/${String(b['rate'])}/${String(b['burst_size'])}`;
    }).sort().join(' ')}`;
  const realBands = new Map((await real.sbList('Meter_Band')).map((b) => [b['_uuid'] as string, b]));
  const ourBands = new Map(ourRows('Meter_Band').map((b) => [b['_uuid'] as string, b]));
  t.same(ourRows('Meter').map((m) => meterText(m, ourBands)).sort(), (await real.sbList('Meter')).map((m) => meterText(m, realBands)).sort(), 'Meter');
  t.equal(ourBands.size, realBands.size, 'Meter_Band: as many rows');
  const realFlowRows = await real.sbList('Logical_Flow');
  const names = datapaths ?? [...new Set(realDpName.values())].sort();
  // Per datapath name, per flow text: the stage-hints of the NB switches and routers holding it.
  const nbHint = new Map(realDps.map((d) => {
    const ids = d['external_ids'] as Record<string, string>;
    return [d['_uuid'] as string, (ids['logical-switch'] ?? ids['logical-router'] ?? '').slice(0, 8)];
  }));
  const realHolderHints = new Map<string, Map<string, ReadonlySet<string>>>();
  for (const f of realFlowRows) {
    const dps = [...asArray(f['logical_datapath']), ...asArray(f['logical_dp_group']).flatMap((g) => groups.get(g as string) ?? [])] as string[];
    const hints = new Set(dps.map((d) => nbHint.get(d) ?? ''));
    const text = flowText(f['pipeline'], f['table_id'], f['priority'], f['match'], f['actions'], f['controller_meter']);
    for (const d of dps) {
      const name = realDpName.get(d) ?? '';
      let m = realHolderHints.get(name);
      if (m === undefined) realHolderHints.set(name, (m = new Map()));
      m.set(text, hints);
    }
  }
  for (const dp of names) {
    const realFlows = new Map<string, string>();
    for (const f of realFlowRows) {
      const dps = [...asArray(f['logical_datapath']), ...asArray(f['logical_dp_group']).flatMap((g) => groups.get(g as string) ?? [])] as string[];
      if (!dps.some((d) => realDpName.get(d) === dp)) continue;
      const ids = f['external_ids'] as Record<string, string>;
      realFlows.set(flowText(f['pipeline'], f['table_id'], f['priority'], f['match'], f['actions'], f['controller_meter']), `${ids['stage-name'] ?? ''} ${ids['stage-hint'] ?? ''}`);
    }
    const ourFlows = new Map(ours<sb.Logical_Flow>(view, 'Logical_Flow')
      .filter((f) => flowDatapaths(view, f).some((d) => ourDpName.get(d) === dp))
      .map((f) => [flowText(f.pipeline, f.table_id, f.priority, f.match, f.actions, f.controller_meter), `${f.external_ids.get('stage-name') ?? ''} ${f.external_ids.get('stage-hint') ?? ''}`]));
    const extra = [...ourFlows.keys()].filter((f) => !realFlows.has(f)).sort();
    const missing = [...realFlows.keys()].filter((f) => !ourFlows.has(f)).sort();
    t.comment(`${dp}: ${ourFlows.size} flows, real ${realFlows.size}`);
    t.same(extra, [], `${dp}: no flow that the real northd does not produce`);
    t.same(missing, [], `${dp}: every flow the real northd produces`);
    // A flow hinted with its own datapath's NB row (the hairpin flows of build_lb_hairpin) and
    // shared by several datapaths shows one holder's hint: ovn-northd's first in its hash order,
    // ours the lowest. Either is right when it names a holder. ovn-northd also leaves such a
    // flow's hint as it was when the datapath it names stops holding the flow (a load balancer
    // taken off that switch while others keep it): ours then names a holder, the real one any
    // switch or router of the topology. A flow that two load balancers write alike (the same
    // backend behind two VIPs: their lr_out_undnat flow) is hinted with the one each northd met
    // first, ovn-northd in its hash order: either load balancer is right.
    const holderHints = realHolderHints.get(dp) ?? new Map<string, ReadonlySet<string>>();
    const nbIds = new Set(nbHint.values());
    const lbIds = new Set([...real.fx.db.rows('Load_Balancer').keys()].map((u) => u.slice(0, 8)));
    const hintOk = (f: string, ourHint: string, realHint: string): boolean => {
      if (ourHint === realHint) return true;
      const holders = holderHints.get(f);
      const [ourStage, ourId] = ourHint.split(' ');
      const [realStage, realId] = realHint.split(' ');
      if (ourStage === realStage && lbIds.has(ourId ?? '') && lbIds.has(realId ?? '')) return true;
      if (holders === undefined || ourStage !== realStage || !holders.has(ourId ?? '')) return false;
      return holders.has(realId ?? '') || (holders.size > 1 && nbIds.has(realId ?? ''));
    };
    const hintsDiffer = [...ourFlows].filter(([f, hint]) => realFlows.has(f) && !hintOk(f, hint, realFlows.get(f) ?? '')).map(([f, hint]) => `${f}: ours "${hint}", real "${realFlows.get(f) ?? ''}"`);
    t.same(hintsDiffer, [], `${dp}: stage names and hints agree`);
  }

  // The view built transaction by transaction equals a fresh computation.
  const difference = viewDifference(real.northd.view(), real.northd.recompute(real.fx.db, view, {
    chassisOwned: new Map(real.northd.chassisOwned()), serviceMonitorStatus: new Map(real.northd.serviceMonitorStatus()), chassis: new Map(real.northd.chassis()),
    igmpGroups: new Map(real.northd.igmpGroups()), hostnames: new Map(real.northd.hostnames()), vxlan: real.northd.vxlanMode(), dropSampling: real.northd.dropSampling(),
  }));
  t.equal(difference, undefined, `incremental view equals a recompute${difference === undefined ? '' : `: ${difference.slice(0, 600)}`}`);
}

/** Builds a topology step by step on both sides, then compares. */
export async function scenario(t: Test, steps: readonly (readonly string[])[]): Promise<RealSandbox> {
  const real = await startRealSandbox(t);
  for (const step of steps) await real.nbctl(step);
  await compareWithReal(t, real);
  return real;
}

/**
 * ovn-sbctl's arguments that add a chassis as ovn-controller 23.03 registers it, with the
 * features ovn-northd reads (our northd takes them as present; without them ovn-northd writes
 * flows for older chassis).
 */
export const chassisAdd = (name: string, ip: string, encaps = 'geneve'): string[] => ['chassis-add', name, encaps, ip, '--', 'set', 'Chassis', name,
  'other_config:ct-no-masked-label=true', 'other_config:mac-binding-timestamp=true', 'other_config:ovn-ct-lb-related=true'];

/** A localnet port with unknown addresses on network `net`. */
export const localnetLsp = (sw: string, name: string, net: string): string[] =>
  ['lsp-add', sw, name, '--', 'lsp-set-type', name, 'localnet', '--', 'lsp-set-options', name, `network_name=${net}`, '--', 'lsp-set-addresses', name, 'unknown'];

export const routerLsp = (sw: string, name: string, lrp: string): string[] =>
  ['lsp-add', sw, name, '--', 'lsp-set-type', name, 'router', '--', 'lsp-set-addresses', name, 'router', '--', 'lsp-set-options', name, `router-port=${lrp}`];
