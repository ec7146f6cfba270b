// SbRows (the local side's SB tables): which changes call for a pass. Table-driven updates in,
// the "changed" answer and the rows held out.
import t from 'tap';
import type { Row } from '../../ovsdb/index.js';
import type { SbUpdate } from '../../agent/sb-source.js';
import { SbRows } from '../../agent/local/sb-rows.js';
import { decideBindings, type BindingChassis, type BindingState, type LocalIface } from '../../agent/local/binding.js';
import { decideVirtualBindings } from '../../agent/local/virtual-binding.js';
import { localDatapaths, localnetPortsOf } from '../../agent/local/patch-ports.js';
import type * as sb from '../../ovsdb/rows/sb.js';

const PRIV = '00000000-0000-4000-8000-000000000001';
const CH1 = '00000000-0000-4000-8000-0000000000c1';
const CH2 = '00000000-0000-4000-8000-0000000000c2';
let revision = 0;
const update = (table: string, uuid: string, row: Record<string, unknown> | undefined): SbUpdate => {
  revision++;
  return { reset: false, fromRevision: revision - 1, toRevision: revision, changes: [row === undefined ? { table, uuid } : { table, uuid, row: { _uuid: uuid, _version: `v${revision}`, ...row } as Row }] };
};
const priv = (chassis: string[], nbCfg: number, name = 'hv1'): Record<string, unknown> => ({ name, chassis, nb_cfg: nbCfg, nb_cfg_timestamp: 1000 + nbCfg, external_ids: new Map() });

t.test('a Chassis_Private that moved only nb_cfg does not call for a pass; anything the local side reads does', async (t) => {
  const rows = new SbRows();
  t.equal(rows.apply(update('Chassis_Private', PRIV, priv([CH1], 0))), true, 'first sight of the row');
  t.equal(rows.apply(update('Chassis_Private', PRIV, priv([CH1], 7))), false, 'nb_cfg and its timestamp only');
  t.equal(rows.chassisPrivateByName('hv1')?.nb_cfg, 7, 'the row held is the new one all the same');
  t.equal(rows.revision, revision);
  t.equal(rows.apply(update('Chassis_Private', PRIV, priv([CH2], 7))), true, 'linked to another chassis');
  t.equal(rows.apply(update('Chassis_Private', PRIV, priv([], 7))), true, 'unlinked');
  t.equal(rows.apply(update('Chassis_Private', PRIV, priv([], 7, 'hv2'))), true, 'renamed');
  t.equal(rows.apply(update('Chassis_Private', PRIV, undefined)), true, 'deleted');
  t.equal(rows.chassisPrivateByName('hv2'), undefined);
  t.equal(rows.apply(update('Chassis', CH1, { name: 'hv1', hostname: 'h', encaps: [] })), true, 'other local tables count as before');
  t.equal(rows.apply(update('Logical_Flow', CH2, { table_id: 0 })), false, 'tables the local side does not hold never count');
});

t.test('a port re-created under the same name in one update is found by name, whatever the order of the two changes', async (t) => {
  const A = '00000000-0000-4000-8000-0000000000a1';
  const B = '00000000-0000-4000-8000-0000000000b2';
  const pbRow = (uuid: string, port: string): Row => ({ _uuid: uuid, _version: uuid, logical_port: port, type: '', chassis: [] }) as unknown as Row;
  for (const order of ['delete first', 'insert first'] as const) {
    const rows = new SbRows();
    rows.apply({ reset: false, fromRevision: 0, toRevision: 1, changes: [{ table: 'Port_Binding', uuid: A, row: pbRow(A, 'vm1') }] });
    t.equal(rows.portBinding('vm1')?._uuid, A, `${order}: the first row`);
    const del = { table: 'Port_Binding', uuid: A };
    const ins = { table: 'Port_Binding', uuid: B, row: pbRow(B, 'vm1') };
    rows.apply({ reset: false, fromRevision: 1, toRevision: 2, changes: order === 'delete first' ? [del, ins] : [ins, del] });
    t.equal(rows.portBinding('vm1')?._uuid, B, `${order}: the new row`);
    // A rename away from the name leaves the name to whoever holds it now.
    rows.apply({ reset: false, fromRevision: 2, toRevision: 3, changes: [{ table: 'Port_Binding', uuid: B, row: pbRow(B, 'vm2') }] });
    t.equal(rows.portBinding('vm1'), undefined, `${order}: renamed away`);
    t.equal(rows.portBinding('vm2')?._uuid, B, `${order}: under its new name`);
  }
});

t.test('portBindingsFor: deciding over its ports is deciding over them all (random SB states)', async (t) => {
  let state = 4242;
  const next = (n: number): number => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return (state >>> 8) % n;
  };
  const US = CH1;
  const pick = <T>(xs: readonly T[]): T => xs[next(xs.length)] as T;
  const sorted = (xs: readonly unknown[]): string[] => xs.map((x) => JSON.stringify(x)).sort();
  let bound = 0;
  let acted = 0;
  for (let round = 0; round < 300; round++) {
    const rows = new SbRows();
    const names = Array.from({ length: 40 }, (_, i) => `p${i}`);
    const dps = ['dp1', 'dp2', 'dp3', 'dp4'];
    const live = new Map<string, Record<string, unknown>>();
    // Rows written, rewritten and deleted over a few updates, so the indexes see every kind of change.
    for (let step = 0; step < 120; step++) {
      const i = next(names.length);
      const uuid = `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`;
      if (next(8) === 0) {
        live.delete(uuid);
        rows.apply(update('Port_Binding', uuid, undefined));
        continue;
      }
      // As northd makes them, a patch port's peer is a router-facing port with a type of its own
      // (patch or l3gateway): every fourth name is one.
      const type = i % 4 === 0 ? pick(['patch', 'l3gateway']) : pick(['', '', '', '', 'patch', 'localnet', 'virtual', 'chassisredirect']);
      const container = type === '' && next(6) === 0;
      const row: Record<string, unknown> = {
        logical_port: names[i], type, datapath: pick(dps), tunnel_key: i + 1,
        chassis: pick([[], [], [US], [CH2]]), additional_chassis: next(10) === 0 ? [US] : [],
        parent_port: container ? [pick(names)] : [], virtual_parent: type === 'virtual' ? [pick(names)] : [],
        options: new Map(type === 'patch' ? [['peer', pick(names.filter((_, k) => k % 4 === 0))]] : type === 'localnet' ? [['network_name', 'phys']] : type === 'l3gateway' ? [['l3gateway-chassis', pick(['hv1', 'hv2'])]] : []),
        up: pick([[], [true], [false]]), encap: [], additional_encap: [], ha_chassis_group: [],
        // Sometimes requested here as an additional chassis (a migration's destination).
        requested_chassis: [], requested_additional_chassis: next(8) === 0 ? [US] : [],
      };
      live.set(uuid, row);
      rows.apply(update('Port_Binding', uuid, row));
    }
    const all = [...rows.rows<sb.Port_Binding>('Port_Binding').values()];
    const ifaces = new Map<string, LocalIface>();
    for (let k = next(8); k > 0; k--) {
      const name = pick(names);
      ifaces.set(name, { ifaceUuid: `iface-${name}`, name: `tap-${name}`, ofport: 1 + next(3), ovnInstalled: next(2) === 0 });
    }
    const inflight = new Set<string>(next(3) === 0 ? [pick(names)] : []);
    const chassis: BindingChassis = { name: 'hv1', hostname: 'hv1', uuid: US, encapByIp: new Map() };
    const held = new Map<string, string>();
    const installed = new Map<string, number>();
    for (const name of names) {
      if (next(5) === 0) held.set(name, pick([`iface-${name}`, 'iface-other']));
      if (next(5) === 0) installed.set(name, 1 + next(3));
    }
    const bindingState: BindingState = { heldWith: held, installed };
    const some = rows.portBindingsFor(US, [...ifaces.keys(), ...inflight]);
    bound += some.filter((pb) => pb.chassis[0] === US).length;
    const fullDecided = decideBindings(bindingState, { chassis, ifaces, portBindings: all, inflight, ha: rows });
    const someDecided = decideBindings(bindingState, { chassis, ifaces, portBindings: some, inflight, ha: rows });
    acted += fullDecided.actions.length;
    const same = (a: unknown, b: unknown, what: string): void => {
      if (JSON.stringify(a) !== JSON.stringify(b)) t.fail(`round ${round}: ${what} differ:\n${JSON.stringify(a)}\n${JSON.stringify(b)}`);
    };
    same(sorted(someDecided.actions), sorted(fullDecided.actions), 'binding actions');
    same(sorted([...someDecided.state.heldWith]), sorted([...fullDecided.state.heldWith]), 'held ports');
    same(sorted([...someDecided.state.installed]), sorted([...fullDecided.state.installed]), 'installed ports');
    same(sorted(decideVirtualBindings({ chassis, ifaces, portBindings: some, inflight })), sorted(decideVirtualBindings({ chassis, ifaces, portBindings: all, inflight })), 'virtual binding actions');
    const localSome = rows.portBindingsFor(US, []);
    const dpsSome = localDatapaths(localSome, US);
    const dpsAll = localDatapaths(all, US);
    same([...dpsSome].sort(), [...dpsAll].sort(), 'local datapaths');
    same(localnetPortsOf(localSome, dpsSome), localnetPortsOf(all, dpsAll), 'localnet ports');
    if (live.size !== all.length) t.fail(`round ${round}: ${all.length} rows held, ${live.size} written`);
  }
  t.ok(bound > 100 && acted > 100, `300 SB states agree (${bound} ports bound here, ${acted} binding actions)`);
});
