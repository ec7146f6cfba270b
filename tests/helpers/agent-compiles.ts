// Whether our agent compiles what northd wrote: every Logical_Flow of an SB view (and the
// physical flows of its ports and groups) through the agent's DesiredFlows, on a chassis
// "hv-all" to which every VIF port of the view is bound, so that every datapath with such a port
// (and those patched to it) is local. Returns the flows that could not be compiled, each with
// its reason and text. An action or match ovn-northd writes that ovn-controller compiles and
// ours does not shows up here: icmp4.frag_mtu (gateway_mtu), select (ECMP routes) and address
// sets holding a template VIP did, before the agent learned them.
//
// Left out: rows ovn-controller refuses too, from NB values northd copies without checking
// them, which the differential tests set on purpose — template text ("^NAME": this chassis has
// no Chassis_Template_Var), a collector set or MTU printed negative (%d of a uint32; gateway_mtu
// below the Ethernet overhead), and the DHCP/RA option values tests/northd's cases give unquoted
// or out of their range.
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
  /router_preference = "bogus"|hostname = [^"\s]|\b0:0:0:0:ff:3\b/,
];

export function agentCompileErrors(view: ReadonlyMap<string, ReadonlyMap<string, Row>>): string[] {
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
    row: { _uuid: CHASSIS_UUID, _version: CHASSIS_UUID, name: CHASSIS, hostname: CHASSIS, encaps: [], vtep_logical_switches: [], nb_cfg: 0, external_ids: new Map(), other_config: new Map(), transport_zones: [] } as Row,
  });
  const local: LocalView = { chassis: CHASSIS, vifs, tunnels: new Map(), localnetPatches: new Map() };
  const d = new DesiredFlows();
  d.update({ reset: true, fromRevision: 0, toRevision: 1, changes }, local);
  const flows = view.get('Logical_Flow');
  const out: string[] = [];
  for (const [source, error] of d.sourceErrors()) {
    const lf = source.startsWith('lf:') ? flows?.get(source.slice(3)) : undefined;
    const text = lf === undefined ? '' : `${String(lf['match'])} | ${String(lf['actions'])}`;
    if (refusedByOvnControllerToo.some((re) => re.test(text))) continue;
    out.push(text === '' ? error : `${error} [${text}]`);
  }
  return out.sort();
}
