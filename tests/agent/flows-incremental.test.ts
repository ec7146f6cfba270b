// Goal: the desired-flow table maintained incrementally equals the table computed from scratch,
// after every step of random SB and LocalView changes (ports bound and moved, some on two
// chassis at once, patch ports,
// localnet ports, port security, multicast groups, logical flows with port, group, set,
// residency and conjunctive matches, fwd_group over ports that move and tunnels that change, load-balancer groups, load balancers' hairpin flows on
// datapaths and datapath groups, SB_Global's lb_hairpin_use_ct_mark, MAC bindings, FDB, tunnels
// (Geneve or VXLAN) and vtep ports behind them,
// VIFs and their MTUs (a multichassis port's path MTU flows), bridge mappings, a chassisredirect port's HA_Chassis_Group priorities and its members'
// Chassis rows coming and going, meters of set_meter, log(meter=…) and controller_meter with their
// SB Meter and Meter_Band rows, sampled drops, SB_Global's drop sampling and the bridge's
// collector sets); and the common case recomputes a few sources, not all. Method: a seeded generator
// of changes; after each step a fresh DesiredFlows fed the same rows as one reset (and given the
// incremental side's ct zones, as a restarted agent would be) is the oracle. A failing seed is
// printed and replays exactly.

import t from 'tap';
import { SharedCompileCache } from '../../agent/flows/compile-cache.js';
import { DesiredFlows } from '../../agent/flows/desired.js';
import { deepEqual } from '../../agent/flows/flow-table.js';
import type { LocalView } from '../../agent/local-view.js';
import type { SbRowChange, SbUpdate } from '../../agent/sb-source.js';
import type { Row } from '../../ovsdb/index.js';
import { Rng as SeededRng } from '../helpers/seeded-rng.js';
import {
  addressSet, chassis, datapath, dpGroup, fdb, haChassis, haChassisGroup, loadBalancer, logicalFlow, macBinding, meter, meterBand, multicastGroup, port, portGroup,
  sbGlobal, staticMacBinding, U, difference, snapshotOf, withControllerMeter,
} from './flows-fixtures.js';

const long = process.env.OVNTS_LONG === '1';
const SEEDS = long ? 200 : 12;
const STEPS = long ? 150 : 60;

/** The seeded PRNG with the two draws this generator uses: int(n) in [0, n), and a coin. */
class Rng {
  private readonly r: SeededRng;
  constructor(seed: number) {
    this.r = new SeededRng(seed);
  }
  int(n: number): number {
    return this.r.int(0, n - 1);
  }
  bool(): boolean {
    return this.r.int(0, 1) === 1;
  }
}

interface World {
  readonly rows: Map<string, Map<string, Row>>;
  view: LocalView;
  revision: number;
}

const SWITCHES = 4;
const PORTS_PER_SWITCH = 5;
const CHASSIS = ['hv1', 'hv2', 'hv3'];
const chassisUuid = (i: number): string => U(i + 1, 0xc);
const swUuid = (i: number): string => U(i + 1, 0xd);
const lrUuid = U(100, 0xd);
const pbUuid = (s: number, p: number): string => U(s * 100 + p + 1, 0xa);
const pbName = (s: number, p: number): string => `s${s}p${p}`;
/** The router's chassisredirect port (for lrp0) and its HA_Chassis_Group, one member per chassis. */
const crUuid = U(990, 0xa);
const haGroupUuid = U(1, 0x8);
const haMemberUuid = (i: number): string => U(i + 1, 0x9);
/** Meter names the logical flows use; the SB has rows for some of them at a time. */
const METERS = ['m0', 'm1', 'm2'];
const meterUuid = (i: number): string => U(i + 1, 0x10);
const bandUuid = (i: number, j: number): string => U(i * 10 + j + 1, 0x11);

function get(w: World, table: string, uuid: string): Record<string, unknown> | undefined {
  return w.rows.get(table)?.get(uuid) as unknown as Record<string, unknown> | undefined;
}

function put(w: World, out: SbRowChange[], table: string, r: Row | undefined, uuid?: string): void {
  const id = r?._uuid ?? uuid as string;
  let m = w.rows.get(table);
  if (m === undefined) w.rows.set(table, (m = new Map()));
  if (r === undefined) m.delete(id);
  else m.set(id, r);
  out.push(r === undefined ? { table, uuid: id } : { table, uuid: id, row: r });
}

/** Lflow texts that exercise every kind of dependency. */
function lflowRow(rng: Rng, uuid: string, sw: number): Row {
  const dp = swUuid(sw);
  const p = pbName(sw, rng.int(PORTS_PER_SWITCH));
  const q = pbName(rng.int(SWITCHES), rng.int(PORTS_PER_SWITCH));
  const kind = rng.int(14);
  switch (kind) {
    case 0: return logicalFlow(uuid, dp, 'ingress', 1, 50, `inport == "${p}"`, 'next;');
    case 1: return logicalFlow(uuid, dp, 'egress', 9, 50, `outport == "${p}"`, 'output;', { in_out_port: p });
    case 2: return logicalFlow(uuid, dp, 'ingress', 25, 50, `eth.dst == 00:00:00:00:0${sw}:0${rng.int(9)}`, `outport = "${q}"; output;`);
    case 3: return logicalFlow(uuid, dp, 'ingress', 8, 60, 'ip4.src == $as1', 'next;');
    case 4: return logicalFlow(uuid, dp, 'ingress', 9, 70, 'inport == @pg1 && ip4', 'next;');
    case 5: return logicalFlow(uuid, dp, 'ingress', 10, 80, `is_chassis_resident("${q}")`, 'next;');
    case 6: return logicalFlow(uuid, dp, 'ingress', 11, 90, `ip4.src == {10.0.0.${rng.int(4)}, 10.0.1.${rng.int(4)}} && tcp.dst == {80, 443}`, 'next;');
    case 7: return logicalFlow(uuid, dp, 'ingress', 25, 70, 'eth.mcast', 'outport = "_MC_flood"; output;');
    case 8: return logicalFlow(uuid, dp, 'ingress', 12, 100, `ip4.dst == 10.9.9.${rng.int(3)} && tcp.dst == 80`,
      `ct_lb_mark(backends=10.0.0.${rng.int(3) + 1}:80,10.0.0.9:80);`);
    case 9: return logicalFlow(uuid, { group: U(1, 0xf) }, 'ingress', 0, 100, 'vlan.present', 'drop;');
    case 10: return logicalFlow(uuid, rng.bool() ? dp : { group: U(1, 0xf) }, 'ingress', 7, 100 + rng.int(3), `inport == "${p}"`,
      rng.bool() ? `set_meter(${1000 * (1 + rng.int(2))}); next;` : `set_meter(1000, ${100 * rng.int(3)}); next;`);
    case 11: {
      const lf = logicalFlow(uuid, dp, 'ingress', 9, 1000, `ip4 && tcp.dst == ${80 + rng.int(3)}`, `log(name="a", severity=info, verdict=drop, meter="${METERS[rng.int(3)]}"); next;`);
      return rng.bool() ? withControllerMeter(lf, METERS[rng.int(3)] as string) : lf;
    }
    case 12: // A drop sampled to one of two collector sets (the bridge has either, both or none).
      return logicalFlow(uuid, rng.bool() ? dp : { group: U(1, 0xf) }, 'ingress', 9, 200 + rng.int(3), `ip4.dst == 10.8.${sw}.${rng.int(3)}`,
        `sample(probability=65535,collector_set=${rng.bool() ? 5 : 6},obs_domain=${rng.int(3)},obs_point=${rng.bool() ? '$cookie' : '7'}); /* drop */`);
    case 13: {
      // A forwarding group: children of this switch (bound, moved, re-keyed by the steps), maybe
      // one of another switch (unknown here: nothing for the action); liveness reads tunnels.
      const kids = [p, pbName(sw, rng.int(PORTS_PER_SWITCH)), ...(rng.int(4) === 0 ? [q] : [])];
      return logicalFlow(uuid, dp, 'ingress', 25, 50, `eth.dst == 00:00:00:00:ff:0${rng.int(3)}`,
        `fwd_group(${rng.bool() ? 'liveness="true", ' : ''}childports=${kids.map((k) => `"${k}"`).join(', ')});`);
    }
    default: return logicalFlow(uuid, dp, 'egress', 8, 100 + rng.int(3), `outport == "${p}" && ip4.dst == $as1`, 'next;');
  }
}

function initialWorld(rng: Rng): { w: World; changes: SbRowChange[] } {
  const w: World = { rows: new Map(), view: { chassis: 'hv1', vifs: new Map(), tunnels: new Map(), localnetPatches: new Map() }, revision: 1 };
  const c: SbRowChange[] = [];
  CHASSIS.forEach((n, i) => put(w, c, 'Chassis', chassis(chassisUuid(i), n)));
  put(w, c, 'Datapath_Binding', datapath(lrUuid, 100, 'router'));
  for (let s = 0; s < SWITCHES; s++) {
    put(w, c, 'Datapath_Binding', datapath(swUuid(s), s + 1, 'switch'));
    for (let p = 0; p < PORTS_PER_SWITCH; p++) {
      const ch = rng.int(4);
      put(w, c, 'Port_Binding', port(pbUuid(s, p), swUuid(s), pbName(s, p), p + 1, ch < 3 ? { chassis: chassisUuid(ch), mac: [`00:00:00:00:0${s}:0${p} 10.0.${s}.${p}`] } : {}));
    }
    put(w, c, 'Multicast_Group', multicastGroup(U(s + 1, 0xe), swUuid(s), '_MC_flood', 32768,
      Array.from({ length: PORTS_PER_SWITCH }, (_, p) => pbUuid(s, p))));
  }
  put(w, c, 'Address_Set', addressSet(U(1, 0x5), 'as1', ['10.0.0.1', '10.0.0.2']));
  put(w, c, 'Port_Group', portGroup(U(1, 0x6), 'pg1', [pbName(0, 0), pbName(1, 1)]));
  put(w, c, 'Logical_DP_Group', dpGroup(U(1, 0xf), [swUuid(0), swUuid(1)]));
  put(w, c, 'Meter_Band', meterBand(bandUuid(0, 0), 10));
  put(w, c, 'Meter', meter(meterUuid(0), 'm0', 'pktps', [bandUuid(0, 0)]));
  for (let i = 0; i < 60; i++) put(w, c, 'Logical_Flow', lflowRow(rng, U(i + 1, 0x1f), rng.int(SWITCHES)));
  CHASSIS.forEach((n, i) => put(w, c, 'HA_Chassis', haChassis(haMemberUuid(i), n, 10 * (i + 1))));
  put(w, c, 'HA_Chassis_Group', haChassisGroup(haGroupUuid, 'lrp0', CHASSIS.map((_, i) => haMemberUuid(i))));
  put(w, c, 'Port_Binding', port(crUuid, lrUuid, 'cr-lrp0', 50, { type: 'chassisredirect', ha_chassis_group: haGroupUuid, options: { 'distributed-port': 'lrp0' } }));
  put(w, c, 'Logical_Flow', logicalFlow(U(200, 0x1f), lrUuid, 'ingress', 10, 80, 'is_chassis_resident("cr-lrp0")', 'next;'));
  const vifs = new Map<string, number>();
  for (let s = 0; s < SWITCHES; s++) for (let p = 0; p < PORTS_PER_SWITCH; p++) if (rng.int(3) > 0) vifs.set(pbName(s, p), 1 + s * 10 + p);
  // sw0 bridged to "phys" from the start (cases 4 and 14 take it away and back), with s0p0
  // migrating from here to hv2 (until case 0 moves it): sw0's remote ports leave through the
  // localnet, tunnel s0p0's traffic instead and answer its packets too big for the tunnels.
  put(w, c, 'Port_Binding', port(U(700, 0xa), swUuid(0), 'ln0', 30, { type: 'localnet', options: { network_name: 'phys' } }));
  put(w, c, 'Port_Binding', port(pbUuid(0, 0), swUuid(0), pbName(0, 0), 1, { chassis: chassisUuid(0), additional_chassis: [chassisUuid(1)], mac: ['00:00:00:00:00:00 10.0.0.0'] }));
  vifs.set(pbName(0, 0), 1);
  const vifMtus = new Map([...vifs.keys()].map((n) => [n, 1500]));
  w.view = { chassis: 'hv1', vifs, vifMtus, tunnels: new Map([['hv2', { ofport: 50, type: 'geneve', remoteIp: '192.0.2.2' }]]), localnetPatches: new Map([['phys', 60]]) };
  return { w, changes: c };
}

/** One random change: SB rows (returned) or the LocalView (mutated in place). */
function step(rng: Rng, w: World): SbRowChange[] {
  const c: SbRowChange[] = [];
  const s = rng.int(SWITCHES);
  const p = rng.int(PORTS_PER_SWITCH);
  const pbu = pbUuid(s, p);
  const pb = get(w, 'Port_Binding', pbu);
  switch (rng.int(21)) {
    case 0: case 1: { // Bind, move or release a port.
      if (pb === undefined) break;
      const ch = rng.int(4);
      const ps = rng.bool() ? { port_security: [`00:00:00:00:0${s}:0${p} 10.0.${s}.${p}${rng.bool() ? ' fd00::1' : ''}`] } : {};
      // Sometimes on a second chassis too (a live migration), maybe this one.
      const more = rng.int(4) === 0 ? { additional_chassis: [chassisUuid(rng.int(3))] } : {};
      put(w, c, 'Port_Binding', port(pbu, swUuid(s), pbName(s, p), pb.tunnel_key as number, ch < 3 ? { chassis: chassisUuid(ch), ...ps, ...more } : ps));
      break;
    }
    case 2: // Delete or re-create a port (new tunnel key sometimes), or give it another key in place (a requested key).
      if (pb !== undefined && rng.bool()) put(w, c, 'Port_Binding', port(pbu, swUuid(s), pbName(s, p), (pb.tunnel_key as number) === p + 1 ? p + 11 : p + 1, {
        ...((pb.chassis as string[]).length > 0 ? { chassis: (pb.chassis as string[])[0] as string } : {}), mac: pb.mac as string[], port_security: pb.port_security as string[],
      }));
      else if (pb !== undefined) put(w, c, 'Port_Binding', undefined, pbu);
      else put(w, c, 'Port_Binding', port(pbu, swUuid(s), pbName(s, p), p + 1 + 10 * rng.int(2), { chassis: chassisUuid(rng.int(3)) }));
      break;
    case 3: { // Connect or disconnect switch s to the router (a patch pair).
      const a = U(500 + s, 0xa);
      const b = U(600 + s, 0xa);
      if (get(w, 'Port_Binding', a) !== undefined) {
        put(w, c, 'Port_Binding', undefined, a);
        put(w, c, 'Port_Binding', undefined, b);
      } else {
        put(w, c, 'Port_Binding', port(a, swUuid(s), `rp${s}`, 20, { type: 'patch', options: { peer: `lrp${s}` } }));
        put(w, c, 'Port_Binding', port(b, lrUuid, `lrp${s}`, s + 1, { type: 'patch', options: { peer: `rp${s}` }, mac: [`00:00:00:00:ff:0${s} 10.${s}.0.1/24`] }));
      }
      break;
    }
    case 4: { // A localnet port on switch s, or a vtep port of a VTEP gateway (a ramp switch).
      if (rng.int(3) === 0) {
        const u = U(750 + s, 0xa);
        if (get(w, 'Port_Binding', u) !== undefined && rng.bool()) put(w, c, 'Port_Binding', undefined, u);
        else put(w, c, 'Port_Binding', port(u, swUuid(s), `vtep${s}`, 31, { type: 'vtep', chassis: chassisUuid(1 + rng.int(2)) }));
        break;
      }
      const u = U(700 + s, 0xa);
      if (get(w, 'Port_Binding', u) !== undefined) put(w, c, 'Port_Binding', undefined, u);
      else put(w, c, 'Port_Binding', port(u, swUuid(s), `ln${s}`, 30, { type: 'localnet', options: { network_name: rng.bool() ? 'phys' : 'other' }, ...(rng.bool() ? { tag: 5 } : {}) }));
      break;
    }
    case 5: { // Multicast group membership.
      const all = Array.from({ length: PORTS_PER_SWITCH }, (_, i) => pbUuid(s, i)).filter(() => rng.bool());
      put(w, c, 'Multicast_Group', multicastGroup(U(s + 1, 0xe), swUuid(s), '_MC_flood', 32768, all));
      break;
    }
    case 6: case 7: { // Add, replace or delete a logical flow.
      const u = U(rng.int(70) + 1, 0x1f);
      if (get(w, 'Logical_Flow', u) !== undefined && rng.bool()) put(w, c, 'Logical_Flow', undefined, u);
      else put(w, c, 'Logical_Flow', lflowRow(rng, u, rng.int(SWITCHES)));
      break;
    }
    case 8: // Address set contents.
      put(w, c, 'Address_Set', addressSet(U(1, 0x5), 'as1', ['10.0.0.1', '10.0.0.2', '10.0.0.3', '10.0.0.4'].filter(() => rng.bool())));
      break;
    case 9: { // Port group members: the plain group, or switch s's own "<key>_pg1" (which wins there).
      if (rng.bool()) {
        put(w, c, 'Port_Group', portGroup(U(1, 0x6), 'pg1', [pbName(s, p), pbName(rng.int(SWITCHES), rng.int(PORTS_PER_SWITCH))]));
        break;
      }
      const u = U(2 + s, 0x6);
      const key = get(w, 'Datapath_Binding', swUuid(s))?.tunnel_key as number;
      if (get(w, 'Port_Group', u) !== undefined && rng.bool()) put(w, c, 'Port_Group', undefined, u);
      else put(w, c, 'Port_Group', portGroup(u, `${key}_pg1`, [pbName(s, p), pbName(s, rng.int(PORTS_PER_SWITCH))]));
      break;
    }
    case 10: { // MAC bindings, static bindings and FDB entries.
      const k = rng.int(3);
      const u = U(800 + s * 10 + p, 0xb);
      const table = ['MAC_Binding', 'Static_MAC_Binding', 'FDB'][k] as string;
      if (get(w, table, u) !== undefined) put(w, c, table, undefined, u);
      else if (k === 0) put(w, c, table, macBinding(u, swUuid(s), pbName(s, p), rng.bool() ? `10.0.0.${p}` : `fd00::${p}`, `0a:00:00:00:0${s}:0${p}`));
      else if (k === 1) put(w, c, table, staticMacBinding(u, swUuid(s), pbName(s, p), `10.1.0.${p}`, `0a:00:00:00:1${s}:0${p}`, rng.bool()));
      else put(w, c, table, fdb(u, s + 1, p + 1, `0a:00:00:00:2${s}:0${p}`));
      break;
    }
    case 11: // Datapath attributes: a requested SNAT zone, or a tunnel key change.
      put(w, c, 'Datapath_Binding', rng.bool() ? datapath(lrUuid, 100, 'router', rng.bool() ? { 'snat-ct-zone': String(rng.int(20) + 1) } : {})
        : datapath(swUuid(s), rng.bool() ? s + 1 : s + 50, 'switch'));
      break;
    case 12: { // VIFs come (with an MTU) and go, or an interface's MTU changes or is no longer reported.
      const vifs = new Map(w.view.vifs);
      const mtus = new Map(w.view.vifMtus);
      const name = pbName(s, p);
      if (vifs.has(name) && rng.int(3) === 0) {
        const mtu = [1500, 1400, 9000, undefined][rng.int(4)];
        if (mtu === undefined) mtus.delete(name);
        else mtus.set(name, mtu);
      } else if (vifs.has(name)) {
        vifs.delete(name);
        mtus.delete(name);
      } else {
        vifs.set(name, 100 + s * 10 + p);
        mtus.set(name, 1500);
      }
      w.view = { ...w.view, vifs, vifMtus: mtus };
      break;
    }
    case 13: { // Tunnels come, go, change port or encapsulation.
      const tunnels = new Map(w.view.tunnels);
      const name = CHASSIS[rng.int(3)] as string;
      if (tunnels.has(name) && rng.bool()) tunnels.delete(name);
      else tunnels.set(name, { ofport: 50 + rng.int(4), type: rng.bool() ? 'geneve' : 'vxlan', remoteIp: rng.bool() ? '192.0.2.9' : '2001:db8::9' });
      w.view = { ...w.view, tunnels };
      break;
    }
    case 14: { // Bridge mappings.
      const lp = new Map(w.view.localnetPatches);
      if (lp.has('phys')) lp.delete('phys');
      else lp.set('phys', 60 + rng.int(2));
      w.view = { ...w.view, localnetPatches: lp };
      break;
    }
    case 15: { // A load balancer on switches, on the datapath group, or gone; bad VIPs too.
      const u = U(900 + rng.int(4), 0x7);
      if (get(w, 'Load_Balancer', u) !== undefined && rng.int(4) === 0) {
        put(w, c, 'Load_Balancer', undefined, u);
        break;
      }
      const vips: Record<string, string> = {};
      vips[`10.9.${s}.${p}:80`] = `10.0.${s}.${p}:8080,10.0.${s}.${rng.int(PORTS_PER_SWITCH)}:8080`;
      if (rng.bool()) vips[`10.9.9.${p}`] = `10.0.${s}.${p}`;
      if (rng.bool()) vips['[fd00::99]:80'] = '[fd00::1]:80';
      if (rng.int(4) === 0) vips['10.9.9.300:80'] = '10.0.0.1:80';
      const options: Record<string, string> = rng.bool() ? { hairpin_orig_tuple: 'true' } : {};
      if (rng.bool()) options.hairpin_snat_ip = rng.bool() ? '169.254.0.1' : '169.254.0.1 fd00::ff';
      const on = rng.int(3);
      put(w, c, 'Load_Balancer', loadBalancer(u, vips, {
        ...(on !== 1 ? { datapaths: Array.from({ length: SWITCHES }, (_, i) => swUuid(i)).filter(() => rng.bool()) } : {}),
        ...(on !== 0 ? { group: U(1, 0xf) } : {}),
        protocol: (['tcp', 'udp', 'sctp'] as const)[rng.int(3)] as 'tcp' | 'udp' | 'sctp',
        options,
      }));
      break;
    }
    case 16: // ct_mark or ct_label for load-balanced traffic; the physical drops sampled or not.
      put(w, c, 'SB_Global', sbGlobal(U(1, 0x3), 0, {
        ...(rng.bool() ? { lb_hairpin_use_ct_mark: 'false' } : {}),
        ...(rng.bool() ? { debug_drop_collector_set: String(5 + rng.int(2)), debug_drop_domain_id: String(rng.int(3)) } : {}),
      }));
      break;
    case 17: { // HA: a member's priority (named by name or by the chassis column), or a member's Chassis row.
      const i = rng.int(3);
      if (i > 0 && rng.bool()) {
        // The row goes, comes back, or turns into (or out of) a VTEP gateway (groups reach
        // those through another set of outputs).
        if (get(w, 'Chassis', chassisUuid(i)) !== undefined && rng.bool()) put(w, c, 'Chassis', undefined, chassisUuid(i));
        else put(w, c, 'Chassis', chassis(chassisUuid(i), CHASSIS[i] as string, rng.bool() ? { 'is-vtep': 'true' } : {}));
      } else {
        put(w, c, 'HA_Chassis', haChassis(haMemberUuid(i), CHASSIS[i] as string, rng.int(4) * 10, rng.bool() ? chassisUuid(i) : undefined));
      }
      break;
    }
    case 18: { // A meter comes, goes, or changes its unit or a band (in place or for another band row).
      const i = rng.int(METERS.length);
      const m = get(w, 'Meter', meterUuid(i));
      const k = rng.int(4);
      if (m !== undefined && k === 0) {
        put(w, c, 'Meter', undefined, meterUuid(i));
        for (const b of m.bands as string[]) put(w, c, 'Meter_Band', undefined, b);
      } else if (m !== undefined && k === 1) {
        const b = (m.bands as string[])[0] as string;
        put(w, c, 'Meter_Band', meterBand(b, 10 * (1 + rng.int(5)), rng.int(2) * 50));
      } else {
        const bands = Array.from({ length: 1 + rng.int(2) }, (_, j) => bandUuid(i, j + 2 * rng.int(2)));
        for (const b of bands) if (get(w, 'Meter_Band', b) === undefined) put(w, c, 'Meter_Band', meterBand(b, 10 * (1 + rng.int(5)), rng.int(2) * 50));
        put(w, c, 'Meter', meter(meterUuid(i), METERS[i] as string, rng.bool() ? 'kbps' : 'pktps', bands));
        for (const b of (m?.bands as string[] | undefined) ?? []) if (!bands.includes(b)) put(w, c, 'Meter_Band', undefined, b);
      }
      break;
    }
    case 19: { // A collector set added to or removed from the bridge.
      const sets = new Set(w.view.sampleCollectors);
      const id = 5 + rng.int(2);
      if (sets.has(id)) sets.delete(id);
      else sets.add(id);
      w.view = { ...w.view, sampleCollectors: sets };
      break;
    }
    default: // Datapath group membership.
      put(w, c, 'Logical_DP_Group', dpGroup(U(1, 0xf), Array.from({ length: SWITCHES }, (_, i) => swUuid(i)).filter(() => rng.bool())));
      break;
  }
  return c;
}

t.test('incremental == recompute over random SB and LocalView changes', async (t) => {
  let steps = 0;
  let partial = 0;
  let sourcesRecomputed = 0;
  let sourcesTotal = 0;
  let flowsSeen = 0;
  let groupsSeen = 0;
  let metersSeen = 0;
  let pmtuSeen = 0;
  for (let seed = 1; seed <= SEEDS; seed++) {
    const rng = new Rng(seed);
    const { w, changes } = initialWorld(rng);
    const inc = new DesiredFlows();
    inc.update({ reset: true, fromRevision: 0, toRevision: 1, changes }, w.view);
    let failed: string | undefined;
    for (let i = 0; i < STEPS && failed === undefined; i++) {
      const c = step(rng, w);
      w.revision++;
      const st = inc.update(c.length === 0 ? null : { reset: false, fromRevision: w.revision - 1, toRevision: w.revision, changes: c }, w.view);
      const full = new DesiredFlows({ ctZones: inc.ctZones() });
      full.update(snapshotOf(w), w.view);
      steps++;
      if (!st.full) {
        partial++;
        sourcesRecomputed += st.logicalFlows + st.ports + st.multicastGroups + st.neighbors;
        sourcesTotal += full.table.sourceCount;
      }
      if (!deepEqual(full.ctZones(), inc.ctZones())) failed = 'ct zones differ';
      if (inc.sourceErrors().size > 0) failed = `errors: ${[...inc.sourceErrors().values()].join('; ')}`;
      flowsSeen = Math.max(flowsSeen, inc.table.size);
      groupsSeen = Math.max(groupsSeen, inc.groupSpecs().size);
      metersSeen = Math.max(metersSeen, inc.meterSpecs().size);
      for (const [, f] of inc.table.flows()) if (f.table === 37 && f.priority === 100) pmtuSeen++;
      failed ??= difference(inc, full);
      if (failed !== undefined) failed = `seed ${seed} step ${i}: ${failed}`;
    }
    if (failed !== undefined) {
      t.fail(failed);
      return;
    }
  }
  t.pass(`${steps} steps over ${SEEDS} seeds: incremental equals recompute after each`);
  t.ok(flowsSeen > 100 && groupsSeen > 0 && metersSeen > 1, `the tables were not trivial (up to ${flowsSeen} flows, ${groupsSeen} groups, ${metersSeen} meters)`);
  t.ok(pmtuSeen > 0, `a multichassis port's path MTU flows were there to compare (${pmtuSeen} table-37 flows over the steps)`);
  t.ok(partial > steps * 0.8, `most updates are incremental (${partial} of ${steps})`);
  t.ok(sourcesRecomputed < sourcesTotal / 3, `incremental updates recomputed ${sourcesRecomputed} sources, a fraction of the ${sourcesTotal} a recompute would`);
});

t.test('a logical flow change recompiles that flow only; an unrelated port change recompiles nothing', async (t) => {
  const rng = new Rng(7);
  const { w, changes } = initialWorld(rng);
  const d = new DesiredFlows();
  d.update({ reset: true, fromRevision: 0, toRevision: 1, changes }, w.view);
  const before = d.counters.logicalFlowsCompiled;
  const c: SbRowChange[] = [];
  put(w, c, 'Logical_Flow', logicalFlow(U(5, 0x1f), swUuid(0), 'ingress', 3, 10, 'ip6', 'next;'));
  const st = d.update({ reset: false, fromRevision: 1, toRevision: 2, changes: c }, w.view);
  t.equal(st.full, false);
  t.equal(d.counters.logicalFlowsCompiled - before, 1, 'one logical flow compiled');
  t.equal(st.ports + st.multicastGroups + st.neighbors, 0, 'no physical source recomputed');
  // A MAC binding: only its own flows.
  const c2: SbRowChange[] = [];
  put(w, c2, 'MAC_Binding', macBinding(U(999, 0xb), swUuid(0), pbName(0, 0), '10.0.0.99', '0a:00:00:00:00:99'));
  const st2 = d.update({ reset: false, fromRevision: 2, toRevision: 3, changes: c2 }, w.view);
  t.same([st2.logicalFlows, st2.ports, st2.multicastGroups, st2.neighbors], [0, 0, 0, 1]);
});

t.test('an HA member\'s Chassis leaving or registering moves a chassisredirect port\'s residency, incrementally', async (t) => {
  // hv1 holds s0p0 on sw0, patched to the router; cr-lrp0's group ranks hv3 (30) over hv2 (20)
  // over hv1 (10). Only the members' Chassis rows change; each step must equal a recompute.
  const w: World = { rows: new Map(), view: { chassis: 'hv1', vifs: new Map([[pbName(0, 0), 1]]), tunnels: new Map(), localnetPatches: new Map() }, revision: 1 };
  const c: SbRowChange[] = [];
  CHASSIS.forEach((n, i) => put(w, c, 'Chassis', chassis(chassisUuid(i), n)));
  put(w, c, 'Datapath_Binding', datapath(lrUuid, 100, 'router'));
  put(w, c, 'Datapath_Binding', datapath(swUuid(0), 1, 'switch'));
  put(w, c, 'Port_Binding', port(pbUuid(0, 0), swUuid(0), pbName(0, 0), 1, { chassis: chassisUuid(0) }));
  put(w, c, 'Port_Binding', port(U(500, 0xa), swUuid(0), 'rp0', 20, { type: 'patch', options: { peer: 'lrp0' } }));
  put(w, c, 'Port_Binding', port(U(600, 0xa), lrUuid, 'lrp0', 1, { type: 'patch', options: { peer: 'rp0' }, mac: ['00:00:00:00:ff:00 10.0.0.1/24'] }));
  CHASSIS.forEach((n, i) => put(w, c, 'HA_Chassis', haChassis(haMemberUuid(i), n, 10 * (i + 1))));
  put(w, c, 'HA_Chassis_Group', haChassisGroup(haGroupUuid, 'lrp0', CHASSIS.map((_, i) => haMemberUuid(i))));
  put(w, c, 'Port_Binding', port(crUuid, lrUuid, 'cr-lrp0', 50, { type: 'chassisredirect', ha_chassis_group: haGroupUuid, options: { 'distributed-port': 'lrp0' } }));
  put(w, c, 'Logical_Flow', logicalFlow(U(200, 0x1f), lrUuid, 'ingress', 10, 80, 'is_chassis_resident("cr-lrp0")', 'next;'));
  const inc = new DesiredFlows();
  inc.update({ reset: true, fromRevision: 0, toRevision: 1, changes: c }, w.view);
  const resident = (d: DesiredFlows): boolean => [...d.table.keys()].some((k) => d.table.flow(k)?.table === 40 && d.table.refs(k).includes(`pb:${crUuid}`));
  t.notOk(resident(inc), 'hv3 is active: no table-40 flow for cr-lrp0 here');
  const steps: [string, number, boolean][] = [['hv3 leaves', 2, false], ['hv2 leaves', 1, true], ['hv3 registers', 2, false], ['hv3 leaves again', 2, true], ['hv2 registers', 1, false]];
  for (const [what, i, want] of steps) {
    const ch: SbRowChange[] = [];
    if (get(w, 'Chassis', chassisUuid(i)) !== undefined) put(w, ch, 'Chassis', undefined, chassisUuid(i));
    else put(w, ch, 'Chassis', chassis(chassisUuid(i), CHASSIS[i] as string));
    w.revision++;
    inc.update({ reset: false, fromRevision: w.revision - 1, toRevision: w.revision, changes: ch }, w.view);
    const full = new DesiredFlows({ ctZones: inc.ctZones() });
    full.update(snapshotOf(w), w.view);
    t.equal(resident(full), want, `${what}: cr-lrp0 is ${want ? '' : 'not '}resident here (recompute)`);
    t.equal(difference(inc, full), undefined, `${what}: incremental equals recompute`);
  }
});

t.test('a remote chassis leaving, returning or turning VTEP changes the groups its ports are in, incrementally', async (t) => {
  // hv1 holds s0p0; s0p1 is on hv2, s0p2 on hv3, all in sw0's flood group, so the group's
  // remote flow outputs to both tunnels. Only Chassis rows change; each step equals a recompute.
  const w: World = {
    rows: new Map(), revision: 1,
    view: { chassis: 'hv1', vifs: new Map([[pbName(0, 0), 1]]), tunnels: new Map([['hv2', { ofport: 10, type: 'geneve', remoteIp: '192.0.2.2' }], ['hv3', { ofport: 11, type: 'geneve', remoteIp: '192.0.2.3' }]]), localnetPatches: new Map() },
  };
  const c: SbRowChange[] = [];
  CHASSIS.forEach((n, i) => put(w, c, 'Chassis', chassis(chassisUuid(i), n)));
  put(w, c, 'Datapath_Binding', datapath(swUuid(0), 1, 'switch'));
  for (let p = 0; p < 3; p++) put(w, c, 'Port_Binding', port(pbUuid(0, p), swUuid(0), pbName(0, p), p + 1, { chassis: chassisUuid(p) }));
  put(w, c, 'Multicast_Group', multicastGroup(U(1, 0xe), swUuid(0), '_MC_flood', 32768, [0, 1, 2].map((p) => pbUuid(0, p))));
  const inc = new DesiredFlows();
  inc.update({ reset: true, fromRevision: 0, toRevision: 1, changes: c }, w.view);
  const steps: [string, number, Record<string, string> | undefined][] = [
    ['hv3 leaves', 2, undefined], ['hv3 returns', 2, {}], ['hv2 turns VTEP', 1, { 'is-vtep': 'true' }], ['hv3 turns VTEP', 2, { 'is-vtep': 'true' }],
    ['hv2 leaves', 1, undefined], ['hv2 returns, not VTEP', 1, {}],
  ];
  for (const [what, i, other] of steps) {
    const ch: SbRowChange[] = [];
    if (other === undefined) put(w, ch, 'Chassis', undefined, chassisUuid(i));
    else put(w, ch, 'Chassis', chassis(chassisUuid(i), CHASSIS[i] as string, other));
    w.revision++;
    inc.update({ reset: false, fromRevision: w.revision - 1, toRevision: w.revision, changes: ch }, w.view);
    const full = new DesiredFlows({ ctZones: inc.ctZones() });
    full.update(snapshotOf(w), w.view);
    t.equal(difference(inc, full), undefined, `${what}: incremental equals recompute`);
  }
});

t.test('a container port\'s parent VIF coming or going changes the groups the container is in, incrementally', async (t) => {
  // hv1 holds s0p0 (a VIF, so sw0 is local) and s0p2, a container port whose parent is s0p1;
  // s0p1 itself has no Port_Binding. Whether s0p2 is delivered here follows the parent's VIF
  // alone: no row of it changes. Each step equals a recompute.
  const w: World = {
    rows: new Map(), revision: 1,
    view: { chassis: 'hv1', vifs: new Map([[pbName(0, 0), 1]]), tunnels: new Map(), localnetPatches: new Map() },
  };
  const c: SbRowChange[] = [];
  put(w, c, 'Chassis', chassis(chassisUuid(0), CHASSIS[0] as string));
  put(w, c, 'Datapath_Binding', datapath(swUuid(0), 1, 'switch'));
  put(w, c, 'Port_Binding', port(pbUuid(0, 0), swUuid(0), pbName(0, 0), 1, { chassis: chassisUuid(0) }));
  put(w, c, 'Port_Binding', port(pbUuid(0, 2), swUuid(0), pbName(0, 2), 3, { chassis: chassisUuid(0), parent_port: pbName(0, 1), tag: 10 }));
  put(w, c, 'Multicast_Group', multicastGroup(U(1, 0xe), swUuid(0), '_MC_flood', 32768, [pbUuid(0, 0), pbUuid(0, 2)]));
  const inc = new DesiredFlows();
  inc.update({ reset: true, fromRevision: 0, toRevision: 1, changes: c }, w.view);
  const delivered = (): boolean => inc.table.flowsOf(`mc:${U(1, 0xe)}`).some((f) => f.table === 40 && f.actions.some((a) => a.kind === 'set_field' && a.field === 'reg15' && a.value === 3n));
  t.notOk(delivered(), 'without its parent\'s VIF the container is not delivered here');
  for (const [what, present] of [['the parent VIF comes', true], ['the parent VIF goes', false], ['it comes back', true]] as const) {
    const vifs = new Map(w.view.vifs);
    if (present) vifs.set(pbName(0, 1), 2);
    else vifs.delete(pbName(0, 1));
    w.view = { ...w.view, vifs };
    w.revision++;
    inc.update(null, w.view);
    const full = new DesiredFlows({ ctZones: inc.ctZones() });
    full.update(snapshotOf(w), w.view);
    t.equal(difference(inc, full), undefined, `${what}: incremental equals recompute`);
    t.equal(delivered(), present, `${what}: the group delivers to the container ${present ? 'here' : 'no more'}`);
  }
});

t.test('a multichassis port\'s path MTU flows follow its interface\'s MTU, where it is bound and the tunnels, incrementally', async (t) => {
  // sw0 bridged to "phys": s0p0 migrates between hv1 and hv2, s0p1 is on hv2 (reached through
  // the localnet, so it tunnels s0p0's traffic and answers its packets too big for the tunnel),
  // s0p2 stays here (sw0 stays local whoever holds s0p0). Each step changes the view or one
  // Port_Binding; each must equal a recompute, with the check_pkt_larger length the MTU and the
  // tunnels' overhead give (none: no path MTU flows).
  const w: World = {
    rows: new Map(), revision: 1,
    view: {
      chassis: 'hv1', vifs: new Map([[pbName(0, 0), 1], [pbName(0, 2), 3]]), vifMtus: new Map([[pbName(0, 0), 1500]]), localnetPatches: new Map([['phys', 60]]),
      tunnels: new Map([['hv2', { ofport: 10, type: 'geneve', remoteIp: '192.0.2.2' }], ['hv3', { ofport: 11, type: 'vxlan', remoteIp: '192.0.2.3' }]]),
    },
  };
  const c: SbRowChange[] = [];
  CHASSIS.forEach((n, i) => put(w, c, 'Chassis', chassis(chassisUuid(i), n)));
  put(w, c, 'Datapath_Binding', datapath(swUuid(0), 1, 'switch'));
  put(w, c, 'Port_Binding', port(U(700, 0xa), swUuid(0), 'ln0', 30, { type: 'localnet', options: { network_name: 'phys' } }));
  const mcp = (chassisIdx: number, additional: number[]): Row => port(pbUuid(0, 0), swUuid(0), pbName(0, 0), 1, { chassis: chassisUuid(chassisIdx), additional_chassis: additional.map(chassisUuid) });
  put(w, c, 'Port_Binding', mcp(0, [1]));
  put(w, c, 'Port_Binding', port(pbUuid(0, 1), swUuid(0), pbName(0, 1), 2, { chassis: chassisUuid(1) }));
  put(w, c, 'Port_Binding', port(pbUuid(0, 2), swUuid(0), pbName(0, 2), 3, { chassis: chassisUuid(0) }));
  const inc = new DesiredFlows();
  inc.update({ reset: true, fromRevision: 0, toRevision: 1, changes: c }, w.view);
  /** The check_pkt_larger lengths of the table-37 flows, with the flows counted per table. */
  const pmtu = (d: DesiredFlows): { lens: number[]; t37: number; t38: number } => {
    const fs = [...d.table.flows()].map(([, f]) => f).filter((f) => f.priority === 100 && (f.table === 37 || f.table === 38));
    const lens = new Set(fs.flatMap((f) => f.actions.flatMap((a) => (a.kind === 'check_pkt_larger' ? [a.pktLen] : []))));
    return { lens: [...lens], t37: fs.filter((f) => f.table === 37).length, t38: fs.filter((f) => f.table === 38).length };
  };
  const some = (len: number): { lens: number[]; t37: number; t38: number } => ({ lens: [len], t37: 4, t38: 4 });
  const none = { lens: [], t37: 0, t38: 0 };
  t.same(pmtu(inc), some(1500 - 38 - 20), 'MTU 1500, Geneve over IPv4: 1442');
  const view = (v: Partial<LocalView>) => (): SbRowChange[] => {
    w.view = { ...w.view, ...v };
    return [];
  };
  const sb = (r: Row) => (): SbRowChange[] => {
    const ch: SbRowChange[] = [];
    put(w, ch, 'Port_Binding', r);
    return ch;
  };
  const steps: [string, () => SbRowChange[], { lens: number[]; t37: number; t38: number }][] = [
    ['MTU 1400', view({ vifMtus: new Map([[pbName(0, 0), 1400]]) }), some(1400 - 58)],
    ['no MTU reported', view({ vifMtus: new Map() }), none],
    ['MTU 9000', view({ vifMtus: new Map([[pbName(0, 0), 9000]]) }), some(9000 - 58)],
    ['the tunnel to hv2 over IPv6', view({ tunnels: new Map([...w.view.tunnels, ['hv2', { ofport: 10, type: 'geneve', remoteIp: '2001:db8::2' }]]) }), some(9000 - 38 - 40)],
    ['s0p0 bound on hv3 and hv2: not here', sb(mcp(2, [1])), none],
    ['hv1 one of its additional chassis', sb(mcp(2, [1, 0])), some(9000 - 78)],
    ['s0p1 moves to hv3, over VXLAN and IPv4', sb(port(pbUuid(0, 1), swUuid(0), pbName(0, 1), 2, { chassis: chassisUuid(2) })), some(9000 - 30 - 20)],
    ['s0p0 on hv1 alone: no multichassis port', sb(mcp(0, [])), none],
  ];
  for (const [what, change, want] of steps) {
    const ch = change();
    w.revision++;
    inc.update(ch.length === 0 ? null : { reset: false, fromRevision: w.revision - 1, toRevision: w.revision, changes: ch }, w.view);
    const full = new DesiredFlows({ ctZones: inc.ctZones() });
    full.update(snapshotOf(w), w.view);
    t.same(pmtu(full), want, `${what}: the recompute's path MTU flows`);
    t.equal(difference(inc, full), undefined, `${what}: incremental equals recompute`);
  }
});

t.test('a compile cache shared with other chassis changes nothing', async (t) => {
  // Three agents fed the same updates: hv1 alone, hv1 and hv2 sharing one cache (hv2 fills it
  // first each step, so hv1 often reads what another chassis compiled).
  let hits = 0;
  for (let seed = 1; seed <= Math.max(3, SEEDS / 2); seed++) {
    const rng = new Rng(1000 + seed);
    const { w, changes } = initialWorld(rng);
    const cache = new SharedCompileCache();
    const alone = new DesiredFlows();
    const other = new DesiredFlows({ sharedCache: cache });
    const shared = new DesiredFlows({ sharedCache: cache });
    const first: SbUpdate = { reset: true, fromRevision: 0, toRevision: 1, changes };
    const hv2 = (v: LocalView): LocalView => ({ ...v, chassis: 'hv2' });
    other.update(first, hv2(w.view));
    alone.update(first, w.view);
    shared.update(first, w.view);
    for (let i = 0; i < STEPS; i++) {
      const c = step(rng, w);
      w.revision++;
      const u = c.length === 0 ? null : { reset: false, fromRevision: w.revision - 1, toRevision: w.revision, changes: c };
      other.update(u, hv2(w.view));
      alone.update(u, w.view);
      shared.update(u, w.view);
      const diff = difference(shared, alone);
      if (diff !== undefined) {
        t.fail(`seed ${1000 + seed} step ${i}: ${diff}`);
        return;
      }
    }
    hits += cache.counters.hits;
  }
  t.ok(hits > 100, `the cache was used (${hits} hits)`);
});
