// Goal: a multicast group's flows built from its members' kept shares (DesiredFlows recomputes
// only the shares of members that are new or whose port is dirty) equal the group's flows
// computed from scratch, after every step of random port adds, removes, binds, moves, type
// changes, VIFs, tunnels (Geneve or VXLAN), Chassis rows, bridge mappings and datapath changes; and a port add
// recomputes a few shares, not the whole group. Method: a seeded generator; after each step a
// fresh DesiredFlows fed the same rows as one reset is the oracle (it has no shares to reuse).

import t from 'tap';
import { DesiredFlows } from '../../agent/flows/desired.js';
import type { LocalView } from '../../agent/local-view.js';
import type { SbRowChange } from '../../agent/sb-source.js';
import type { Row } from '../../ovsdb/index.js';
import { Rng } from '../helpers/seeded-rng.js';
import { chassis, datapath, multicastGroup, port, sbGlobal, U, difference, snapshotOf } from './flows-fixtures.js';

const long = process.env.OVNTS_LONG === '1';
const SEEDS = long ? 300 : 30;
const STEPS = long ? 200 : 80;

const SLOTS = 14;
const CHASSIS = ['hv1', 'hv2', 'hv3', 'hv4', 'hv5'];
const chassisUuid = (i: number): string => U(i + 1, 0xc);
const sw = U(1, 0xd);
const lr = U(2, 0xd);
const slotUuid = (i: number): string => U(i + 1, 0xa);
const slotName = (i: number): string => `p${i}`;
const routerPort = U(100, 0xa);
const redirectPort = U(101, 0xa);
const GROUPS = [
  { uuid: U(1, 0xe), dp: sw, name: '_MC_flood', key: 32768 },
  { uuid: U(2, 0xe), dp: sw, name: '_MC_unknown', key: 32769 },
  { uuid: U(3, 0xe), dp: lr, name: '_MC_flood', key: 32768 },
] as const;

interface World {
  readonly rows: Map<string, Map<string, Row>>;
  view: LocalView;
  revision: number;
  nbCfg: number;
}

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

const pick = <T>(rng: Rng, xs: readonly T[]): T => xs[rng.int(0, xs.length - 1)] as T;
const coin = (rng: Rng): boolean => rng.int(0, 1) === 1;

/** A switch port of a random kind: a VIF (maybe a container), remote, localport, patch, localnet, l2gateway. */
function slotRow(rng: Rng, i: number): Row {
  const chassisOpt = (): { chassis?: string; additional_chassis?: string[] } => {
    const c = rng.int(0, CHASSIS.length);
    const extra = rng.int(0, 5) === 0 ? [chassisUuid(rng.int(0, CHASSIS.length - 1))] : [];
    return c === CHASSIS.length ? {} : { chassis: chassisUuid(c), additional_chassis: extra.filter((x) => x !== chassisUuid(c)) };
  };
  const key = i + 1 + 20 * rng.int(0, 1);
  switch (rng.int(0, 11)) {
    case 0: return port(slotUuid(i), sw, slotName(i), key, { type: 'remote', ...chassisOpt() });
    case 1: return port(slotUuid(i), sw, slotName(i), key, { type: 'localport' });
    case 2: return port(slotUuid(i), sw, slotName(i), key, { type: 'patch', options: { peer: 'lrp0' } });
    case 3: return port(slotUuid(i), sw, slotName(i), key, { type: 'localnet', options: { network_name: pick(rng, ['phys', 'other']) } });
    case 4: return port(slotUuid(i), sw, slotName(i), key, { type: 'l2gateway', options: { network_name: 'phys' }, ...chassisOpt() });
    case 5: return port(slotUuid(i), sw, slotName(i), key, { parent_port: slotName(rng.int(0, SLOTS - 1)), tag: 10 + i, ...chassisOpt() });
    case 6: return port(slotUuid(i), lr, slotName(i), key, chassisOpt());
    default: return port(slotUuid(i), sw, slotName(i), key, chassisOpt());
  }
}

/** A group's new member list: the current one with the slot added or removed (or a random subset). */
function members(rng: Rng, w: World, g: (typeof GROUPS)[number], slot: number, add: boolean): string[] {
  const have = new Set((get(w, 'Multicast_Group', g.uuid)?.ports as string[] | undefined) ?? []);
  if (add) have.add(slotUuid(slot));
  else have.delete(slotUuid(slot));
  if (rng.int(0, 9) === 0) for (const p of [...have]) if (coin(rng)) have.delete(p);
  return [...have];
}

function initialWorld(rng: Rng): { w: World; changes: SbRowChange[] } {
  const w: World = { rows: new Map(), view: { chassis: 'hv1', vifs: new Map(), tunnels: new Map(), localnetPatches: new Map() }, revision: 1, nbCfg: 1 };
  const c: SbRowChange[] = [];
  put(w, c, 'SB_Global', sbGlobal(U(1, 0x3), w.nbCfg));
  CHASSIS.forEach((n, i) => put(w, c, 'Chassis', chassis(chassisUuid(i), n, i > 2 && coin(rng) ? { 'is-vtep': 'true' } : {})));
  put(w, c, 'Datapath_Binding', datapath(sw, 1, 'switch'));
  put(w, c, 'Datapath_Binding', datapath(lr, 100, 'router'));
  put(w, c, 'Port_Binding', port(routerPort, lr, 'lrp0', 1, { type: 'patch', options: { peer: slotName(0) }, mac: ['00:00:00:00:ff:01 10.0.0.1/24'] }));
  put(w, c, 'Port_Binding', port(redirectPort, lr, 'cr-lrp0', 2, { type: 'chassisredirect', chassis: chassisUuid(rng.int(0, 1)), options: { 'distributed-port': 'lrp0' } }));
  // Slot 0 is always bound here with a VIF, so the switch (and through its patch, the router) is local.
  put(w, c, 'Port_Binding', port(slotUuid(0), sw, slotName(0), 1, { chassis: chassisUuid(0) }));
  for (let i = 1; i < SLOTS; i++) if (rng.int(0, 3) > 0) put(w, c, 'Port_Binding', slotRow(rng, i));
  const present = (i: number): boolean => get(w, 'Port_Binding', slotUuid(i)) !== undefined;
  const slots = Array.from({ length: SLOTS }, (_, i) => i).filter(present);
  put(w, c, 'Multicast_Group', multicastGroup(GROUPS[0].uuid, sw, GROUPS[0].name, GROUPS[0].key, slots.map(slotUuid)));
  put(w, c, 'Multicast_Group', multicastGroup(GROUPS[1].uuid, sw, GROUPS[1].name, GROUPS[1].key, slots.filter(() => coin(rng)).map(slotUuid)));
  put(w, c, 'Multicast_Group', multicastGroup(GROUPS[2].uuid, lr, GROUPS[2].name, GROUPS[2].key, [routerPort, redirectPort, ...slots.filter(() => coin(rng)).map(slotUuid)]));
  const vifs = new Map<string, number>([[slotName(0), 1]]);
  for (let i = 1; i < SLOTS; i++) if (coin(rng)) vifs.set(slotName(i), 1 + i);
  const tunnels = new Map(CHASSIS.slice(1).filter(() => rng.int(0, 3) > 0).map((n, i) => [n, { ofport: 50 + i, type: 'geneve' as const, remoteIp: `192.0.2.${i}` }]));
  w.view = { chassis: 'hv1', vifs, tunnels, localnetPatches: coin(rng) ? new Map([['phys', 60]]) : new Map() };
  return { w, changes: c };
}

/** One random step: SB rows (returned) or the LocalView (replaced). */
function step(rng: Rng, w: World): SbRowChange[] {
  const c: SbRowChange[] = [];
  const i = rng.int(1, SLOTS - 1);
  const pb = get(w, 'Port_Binding', slotUuid(i));
  switch (rng.int(0, 11)) {
    case 0: case 1: case 2: { // A port added to (or removed from) the switch and its groups, in one update, as northd writes it.
      const add = pb === undefined;
      if (add) put(w, c, 'Port_Binding', slotRow(rng, i));
      else put(w, c, 'Port_Binding', undefined, slotUuid(i));
      for (const g of GROUPS) if (!add || g.uuid !== GROUPS[2].uuid || coin(rng)) put(w, c, 'Multicast_Group', multicastGroup(g.uuid, g.dp, g.name, g.key, members(rng, w, g, i, add)));
      w.nbCfg++;
      put(w, c, 'SB_Global', sbGlobal(U(1, 0x3), w.nbCfg));
      break;
    }
    case 3: case 4: { // Bind, move, release; or a new kind of port in the same slot.
      if (pb === undefined) break;
      const r = slotRow(rng, i);
      if (coin(rng)) {
        const kept = { ...pb, _version: (r as unknown as { _version: string })._version, chassis: (r as unknown as { chassis: string[] }).chassis, additional_chassis: (r as unknown as { additional_chassis: string[] }).additional_chassis };
        put(w, c, 'Port_Binding', kept as unknown as Row);
      } else put(w, c, 'Port_Binding', r);
      break;
    }
    case 5: // Membership (and sometimes the group's tunnel key).
      if (coin(rng)) put(w, c, 'Multicast_Group', multicastGroup(GROUPS[1].uuid, sw, GROUPS[1].name, GROUPS[1].key + 100 * rng.int(0, 1), members(rng, w, GROUPS[1], i, coin(rng))));
      else put(w, c, 'Multicast_Group', multicastGroup(GROUPS[2].uuid, lr, GROUPS[2].name, GROUPS[2].key, members(rng, w, GROUPS[2], i, coin(rng))));
      break;
    case 6: { // VIFs.
      const vifs = new Map(w.view.vifs);
      const name = slotName(i);
      if (vifs.has(name)) vifs.delete(name);
      else vifs.set(name, 100 + i);
      w.view = { ...w.view, vifs };
      break;
    }
    case 7: { // Tunnels come, go, change port or encapsulation.
      const tunnels = new Map(w.view.tunnels);
      const name = pick(rng, CHASSIS.slice(1));
      if (tunnels.has(name) && coin(rng)) tunnels.delete(name);
      else tunnels.set(name, { ofport: 50 + rng.int(0, 5), type: coin(rng) ? 'geneve' : 'vxlan', remoteIp: '192.0.2.9' });
      w.view = { ...w.view, tunnels };
      break;
    }
    case 8: { // A remote Chassis row goes, returns, turns VTEP or back.
      const k = rng.int(1, CHASSIS.length - 1);
      if (get(w, 'Chassis', chassisUuid(k)) !== undefined && coin(rng)) put(w, c, 'Chassis', undefined, chassisUuid(k));
      else put(w, c, 'Chassis', chassis(chassisUuid(k), CHASSIS[k] as string, coin(rng) ? { 'is-vtep': 'true' } : {}));
      break;
    }
    case 9: { // Bridge mappings.
      const lp = new Map(w.view.localnetPatches);
      if (lp.has('phys')) lp.delete('phys');
      else lp.set('phys', 60);
      w.view = { ...w.view, localnetPatches: lp };
      break;
    }
    case 10: // The switch turns into (or out of) a transit switch, or changes key.
      put(w, c, 'Datapath_Binding', datapath(sw, coin(rng) ? 1 : 7, 'switch', coin(rng) ? { 'interconn-ts': 'ts0' } : {}));
      break;
    default: { // The chassisredirect port moves (here or elsewhere).
      const cr = get(w, 'Port_Binding', redirectPort);
      if (cr !== undefined) put(w, c, 'Port_Binding', port(redirectPort, lr, 'cr-lrp0', 2, { type: 'chassisredirect', chassis: chassisUuid(rng.int(0, 2)), options: { 'distributed-port': 'lrp0' } }));
      break;
    }
  }
  return c;
}

t.test('multicast group flows from kept member shares == from scratch, over random port changes', async (t) => {
  let steps = 0;
  let mcFlowsSeen = 0;
  let remoteOutputsSeen = 0;
  let sumsUpdated = 0;
  let sumsAdded = 0;
  for (let seed = 1; seed <= SEEDS; seed++) {
    const rng = new Rng(seed);
    const { w, changes } = initialWorld(rng);
    const inc = new DesiredFlows();
    inc.update({ reset: true, fromRevision: 0, toRevision: 1, changes }, w.view);
    for (let s = 0; s < STEPS; s++) {
      const c = step(rng, w);
      w.revision++;
      inc.update(c.length === 0 ? null : { reset: false, fromRevision: w.revision - 1, toRevision: w.revision, changes: c }, w.view);
      const full = new DesiredFlows({ ctZones: inc.ctZones() });
      full.update(snapshotOf(w), w.view);
      steps++;
      const diff = difference(inc, full);
      if (diff !== undefined) {
        t.fail(`seed ${seed} step ${s}: ${diff}`);
        return;
      }
      for (const g of GROUPS) {
        const flows = inc.table.flowsOf(`mc:${g.uuid}`);
        mcFlowsSeen += flows.length;
        for (const f of flows) if (f.table === 39) remoteOutputsSeen += f.actions.filter((a) => a.kind === 'output').length;
      }
    }
    sumsUpdated += inc.counters.mcSumsUpdated;
    sumsAdded += inc.counters.mcSumsAdded;
  }
  t.pass(`${steps} steps over ${SEEDS} seeds: group flows from kept shares equal a recompute after each`);
  t.ok(mcFlowsSeen > steps && remoteOutputsSeen > steps, `the groups had flows (${mcFlowsSeen}) and tunnel outputs (${remoteOutputsSeen})`);
  t.ok(sumsUpdated > steps / 4 && sumsAdded > steps / 4, `both ways were taken: ${sumsUpdated} group recomputes from the kept sums, ${sumsAdded} adding every share up`);
});

t.test('a remote port added to a large group recomputes its own share only', async (t) => {
  // hv1 holds p0; n ports on other chassis (tunnels to all) are in the flood group. Adding one
  // more (port and group in one update) computes one share; the flows equal a recompute.
  const n = 200;
  const names = Array.from({ length: n + 2 }, (_, k) => `hv${k}`);
  const w: World = {
    rows: new Map(), revision: 1, nbCfg: 1,
    view: { chassis: 'hv0', vifs: new Map([['q0', 1]]), tunnels: new Map(names.slice(1).map((nm, k) => [nm, { ofport: 100 + k, type: 'geneve' as const, remoteIp: '192.0.2.1' }])), localnetPatches: new Map() },
  };
  const c: SbRowChange[] = [];
  names.forEach((nm, k) => put(w, c, 'Chassis', chassis(U(k + 1, 0xc), nm)));
  put(w, c, 'Datapath_Binding', datapath(sw, 1, 'switch'));
  for (let k = 0; k <= n; k++) put(w, c, 'Port_Binding', port(U(k + 1, 0xa), sw, `q${k}`, k + 1, { chassis: U(k + 1, 0xc) }));
  const group = (count: number): Row => multicastGroup(GROUPS[0].uuid, sw, '_MC_flood', 32768, Array.from({ length: count }, (_, k) => U(k + 1, 0xa)));
  put(w, c, 'Multicast_Group', group(n + 1));
  const inc = new DesiredFlows();
  inc.update({ reset: true, fromRevision: 0, toRevision: 1, changes: c }, w.view);
  const before = inc.counters.mcMemberShares;
  const add: SbRowChange[] = [];
  put(w, add, 'Port_Binding', port(U(n + 2, 0xa), sw, `q${n + 1}`, n + 2, { chassis: U(n + 2, 0xc) }));
  put(w, add, 'Multicast_Group', group(n + 2));
  w.revision++;
  const st = inc.update({ reset: false, fromRevision: 1, toRevision: 2, changes: add }, w.view);
  t.equal(st.full, false);
  t.equal(inc.counters.mcMemberShares - before, 1, 'one share computed for the new member');
  t.equal(inc.counters.mcSumsUpdated, 1, 'the group\'s sums were updated for it alone');
  const full = new DesiredFlows({ ctZones: inc.ctZones() });
  full.update(snapshotOf(w), w.view);
  t.equal(difference(inc, full), undefined, 'the flows equal a recompute');
  const outputs = inc.table.flowsOf(`mc:${GROUPS[0].uuid}`).flatMap((f) => f.actions).filter((a) => a.kind === 'output').length;
  t.equal(outputs, n + 1, 'the group fans out to every other chassis');
});
