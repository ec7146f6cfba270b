// Control plane protection (CoPP): a switch's or router's NB Copp row names, per kind of packet
// that its flows send to ovn-controller, a meter that limits them; ovn-northd 23.03 writes that
// meter into the Logical_Flow's controller_meter (copp_meter_get), and ovn-controller meters the
// flow's controller() actions with it. A kind counts only when an NB Meter of that name exists.
//
// ovn-northd passes the meter at each of its ~40 flow sites. Here the flows are built without
// it and the lflows node meters a datapath's flows on their way in (`withCopp`): each flow's kind
// follows from its stage and its controller action (`coppKind`), which is what each of those
// sites is about. tests/northd/differential-real-northd (z) checks the result against the real
// ovn-northd with a Copp naming every kind on switches and routers.
import type { Database, Uuid } from '../ovsdb/index.js';
import type * as nb from '../ovsdb/rows/nb.js';
import type * as sb from '../ovsdb/rows/sb.js';
import { nbGet } from './nb.js';
import { lflowUuid, shardOfRef } from './lflows/flow.js';

/** A datapath's CoPP: kind (Copp.meters key) → the meter its flows of that kind name. */
export type CoppMeters = ReadonlyMap<string, string>;

/** The CoPP of a datapath whose copp column names `copp`: the kinds whose meter exists. */
export function coppMetersOf(db: Database, copp: readonly Uuid[]): CoppMeters | undefined {
  const row = copp[0] === undefined ? undefined : nbGet<nb.Copp>(db, 'Copp', copp[0]);
  if (row === undefined) return undefined;
  let out: Map<string, string> | undefined;
  for (const [kind, meter] of row.meters) {
    if (db.findUnique('Meter', ['name'], [meter]) === undefined) continue;
    (out ??= new Map()).set(kind, meter);
  }
  return out;
}

/** The CoPP kind of a flow's controller action, or undefined (not a metered one). */
export function coppKind(stage: string, priority: number, actions: string): string | undefined {
  if (actions.includes('reject {')) return 'reject';
  if (actions.includes('put_dhcp_opts(')) return 'dhcpv4-opts';
  if (actions.includes('put_dhcpv6_opts(')) return 'dhcpv6-opts';
  if (actions.includes('dns_lookup()')) return 'dns';
  if (actions.includes('handle_svc_check(')) return 'svc-monitor';
  if (actions.includes('put_nd_ra_opts(')) return 'nd-ra-opts';
  if (actions.includes('tcp_reset {') || actions.includes('sctp_abort {')) return 'tcp-reset';
  if (actions.includes('icmp4 {') || actions.includes('icmp4_error {')) return 'icmp4-error';
  if (actions.includes('icmp6 {') || actions.includes('icmp6_error {')) return 'icmp6-error';
  if (actions.includes('put_arp(')) return 'arp';
  if (actions.includes('put_nd(inport, ip6.src')) return 'nd-ns';
  if (actions.includes('put_nd(')) return 'nd-na';
  if (actions.includes('handle_bfd_msg(')) return 'bfd';
  if (actions.includes('trigger_event(')) return 'event-elb';
  if (actions.includes('igmp;')) return 'igmp';
  if (stage === 'lr_in_arp_request') {
    if (actions.startsWith('arp {')) return 'arp-resolve';
    if (actions.startsWith('nd_ns {')) return 'nd-ns-resolve';
    return undefined;
  }
  // The ND responders of a switch's ports and of a router; not the health checks' responders
  // (ls_in_arp_rsp 110), which ovn-northd does not meter.
  if ((stage === 'ls_in_arp_rsp' && priority !== 110) || stage === 'lr_in_ip_input') {
    if (actions.startsWith('nd_na {') || actions.startsWith('nd_na_router {')) return 'nd-na';
  }
  return undefined;
}

/** A flow with its controller_meter (and the UUID that content names). */
function meteredFlow(f: sb.Logical_Flow, meter: string): sb.Logical_Flow {
  const stage = f.external_ids.get('stage-name') ?? '';
  return {
    ...f, _uuid: lflowUuid(shardOfRef(f.logical_datapath), stage, f.priority, f.match, f.actions, meter), controller_meter: [meter],
  };
}

function meterOf(f: sb.Logical_Flow, copp: CoppMeters): string | undefined {
  const kind = coppKind(f.external_ids.get('stage-name') ?? '', f.priority, f.actions);
  return kind === undefined ? undefined : copp.get(kind);
}

/** Metered copies of frozen templates, by template and CoPP (its entries as text). */
const meteredTemplates = new WeakMap<readonly sb.Logical_Flow[], Map<string, readonly sb.Logical_Flow[]>>();

/**
 * `flows` with the controller_meter each datapath's CoPP gives them (the same array when none
 * changes). `templateDp`: the datapath a frozen template is held in (all its flows are that
 * datapath's); otherwise each flow is its logical_datapath's. A template's metered copy is
 * frozen and made once per CoPP, so that switches with the same CoPP share it.
 */
export function withCopp(flows: readonly sb.Logical_Flow[], templateDp: Uuid | undefined, coppOf: (dp: Uuid) => CoppMeters | undefined): readonly sb.Logical_Flow[] {
  if (flows.length === 0) return flows;
  if (templateDp !== undefined && Object.isFrozen(flows)) {
    const copp = coppOf(templateDp);
    if (copp === undefined) return flows;
    const key = JSON.stringify([...copp]);
    let byCopp = meteredTemplates.get(flows);
    const done = byCopp?.get(key);
    if (done !== undefined) return done;
    let changed = false;
    const out = flows.map((f) => {
      const meter = meterOf(f, copp);
      if (meter === undefined) return f;
      changed = true;
      return meteredFlow(f, meter);
    });
    const result = changed ? Object.freeze(out) : flows;
    if (byCopp === undefined) meteredTemplates.set(flows, (byCopp = new Map()));
    byCopp.set(key, result);
    return result;
  }
  let out: sb.Logical_Flow[] | undefined;
  for (let i = 0; i < flows.length; i++) {
    const f = flows[i] as sb.Logical_Flow;
    const copp = coppOf(templateDp ?? (f.logical_datapath[0] as Uuid));
    const meter = copp === undefined ? undefined : meterOf(f, copp);
    if (meter === undefined) continue;
    out ??= flows.slice();
    out[i] = meteredFlow(f, meter);
  }
  return out ?? flows;
}
