// External switch ports (a bare-metal host or an SR-IOV VM on a provider network, reached
// through the switch's localnet ports and served from the active member of its HA group):
// random sequences of the changes their flows read (localnet ports coming and going, DHCPv4 and
// DHCPv6 options, HA groups, enabled, addresses, the routers on the switch and their networks,
// a port's type), each followed by a check that the incremental view equals a full run over the
// same NB. The big random test (incremental-equals-recompute) makes these combinations too
// rarely: an external port with DHCP options in its CIDR, an HA group and a localnet port on
// its switch. The flows themselves are checked against the real ovn-northd in
// differential-real-northd (ff).
import t from 'tap';
import type * as sb from '../../ovsdb/rows/sb.js';
import type { SbView } from '../../northd/index.js';
import { createNorthd } from '../../northd/index.js';
import { Rng } from '../helpers/seeded-rng.js';
import { addLsp, byUuid, map, nbFixture, set, uuidAtom, viewDifference } from './nb-fixture.js';

const LONG = process.env.OVNTS_LONG !== undefined;
const SEQUENCES = LONG ? 2000 : 150;
const STEPS = 30;

const EXTERNALS = ['ext1', 'ext2', 'ext3'];
const ADDRESSES = ['0a:00:00:00:0e:01 10.0.1.50', '0a:00:00:00:0e:02 10.0.1.51 fd00:1::51', '0a:00:00:00:0e:03 10.0.2.52', '0a:00:00:00:0e:04', '0a:00:00:00:0e:05 10.0.9.9'];

function runSequence(seed: number): { problem?: string; dhcp: number; drops: number } {
  const rng = new Rng(seed);
  const fx = nbFixture();
  const northd = createNorthd();
  let dhcp = 0;
  let drops = 0;
  const apply = (ops: readonly unknown[]): boolean => {
    let delta;
    try {
      delta = fx.run(ops);
    } catch {
      return false; // refused by the NB schema (a name taken, a row gone): skipped
    }
    northd.apply(fx.db, delta);
    return true;
  };
  apply([{ op: 'insert', table: 'NB_Global', row: {} }]);
  apply([
    { op: 'insert', table: 'Logical_Switch', row: { name: 'sw1' } },
    { op: 'insert', table: 'Logical_Switch', row: { name: 'sw2' } },
    { op: 'insert', table: 'Logical_Router', row: { name: 'lr0' } },
  ]);
  const uuidOf = (table: string, name: string): string | undefined => [...fx.db.rows(table).values()].find((r) => r['name'] === name)?._uuid;
  const dhcpRow = (v6: boolean): unknown[] => {
    const options = v6 ? { server_id: '00:00:00:00:ff:01' } : { server_id: '10.0.1.1', server_mac: '00:00:00:00:ff:01', lease_time: '3600', router: '10.0.1.1' };
    const cidr = v6 ? rng.pick(['fd00:1::/64', 'fd00:9::/64']) : rng.pick(['10.0.1.0/24', '10.0.2.0/24', '10.0.1.0/24']);
    return [{ op: 'insert', table: 'DHCP_Options', 'uuid-name': 'd', row: { cidr, options: map(options) } }];
  };
  for (let step = 0; step < STEPS; step++) {
    const port = rng.pick(EXTERNALS);
    const portUuid = uuidOf('Logical_Switch_Port', port);
    const what = rng.weighted<string>([
      ['ext-add', portUuid === undefined ? 4 : 0], ['ext-del', portUuid !== undefined ? 1 : 0], ['localnet', 3], ['dhcp', portUuid !== undefined ? 4 : 0],
      ['group', portUuid !== undefined ? 4 : 0], ['enabled', portUuid !== undefined ? 1 : 0], ['addresses', portUuid !== undefined ? 1 : 0],
      ['type', portUuid !== undefined ? 1 : 0], ['router', 2], ['networks', 1],
    ]);
    const before: SbView = new Map([...northd.view()].map(([table, rows]) => [table, new Map(rows)]));
    let ops: unknown[];
    switch (what) {
      case 'ext-add':
        ops = addLsp(rng.pick(['sw1', 'sw1', 'sw2']), port, { type: 'external', addresses: set(rng.subset(ADDRESSES, 2)) });
        break;
      case 'ext-del':
        ops = [{ op: 'mutate', table: 'Logical_Switch', where: [], mutations: [['ports', 'delete', set([uuidAtom(portUuid as string)])]] }];
        break;
      case 'localnet': {
        const name = rng.pick(['ln1', 'ln2', 'ln3']);
        const existing = uuidOf('Logical_Switch_Port', name);
        ops = existing !== undefined && rng.chance(0.6)
          ? [{ op: 'mutate', table: 'Logical_Switch', where: [], mutations: [['ports', 'delete', set([uuidAtom(existing)])]] }]
          : existing !== undefined ? [{ op: 'update', table: 'Logical_Switch_Port', where: byUuid(existing), row: { type: rng.pick(['localnet', '']) } }]
          : addLsp(name === 'ln3' ? 'sw2' : rng.pick(['sw1', 'sw2']), name, { type: 'localnet', addresses: set(['unknown']), options: map({ network_name: 'phys' }) });
        break;
      }
      case 'dhcp': {
        const v6 = rng.chance(0.4);
        const column = v6 ? 'dhcpv6_options' : 'dhcpv4_options';
        ops = rng.chance(0.75)
          ? [...dhcpRow(v6), { op: 'update', table: 'Logical_Switch_Port', where: byUuid(portUuid as string), row: { [column]: ['named-uuid', 'd'] } }]
          : [{ op: 'update', table: 'Logical_Switch_Port', where: byUuid(portUuid as string), row: { [column]: set([]) } }];
        break;
      }
      case 'group':
        ops = rng.chance(0.7)
          ? [
            { op: 'insert', table: 'HA_Chassis', 'uuid-name': 'h', row: { chassis_name: rng.pick(['hv1', 'hv2']), priority: rng.int(1, 30) } },
            { op: 'insert', table: 'HA_Chassis_Group', 'uuid-name': 'g', row: { name: `grp-${port}-${step}`, ha_chassis: set([['named-uuid', 'h']]) } },
            { op: 'update', table: 'Logical_Switch_Port', where: byUuid(portUuid as string), row: { ha_chassis_group: ['named-uuid', 'g'] } },
          ]
          : [{ op: 'update', table: 'Logical_Switch_Port', where: byUuid(portUuid as string), row: { ha_chassis_group: set([]) } }];
        break;
      case 'enabled':
        ops = [{ op: 'update', table: 'Logical_Switch_Port', where: byUuid(portUuid as string), row: { enabled: set([rng.chance(0.5)]) } }];
        break;
      case 'addresses':
        ops = [{ op: 'update', table: 'Logical_Switch_Port', where: byUuid(portUuid as string), row: { addresses: set(rng.subset(ADDRESSES, 2)) } }];
        break;
      case 'type':
        ops = [{ op: 'update', table: 'Logical_Switch_Port', where: byUuid(portUuid as string), row: { type: rng.pick(['external', 'external', '', 'localport']) } }];
        break;
      case 'router': {
        // A router port on a switch (its LRP and router LSP), or the router LSP taken away.
        const sw = rng.pick(['sw1', 'sw2']);
        const lsp = `${sw}-lr0`;
        const existing = uuidOf('Logical_Switch_Port', lsp);
        if (existing !== undefined) {
          ops = [{ op: 'mutate', table: 'Logical_Switch', where: [], mutations: [['ports', 'delete', set([uuidAtom(existing)])]] }];
          break;
        }
        const lrp = `lr0-${sw}`;
        const net = sw === 'sw1' ? ['10.0.1.1/24', 'fd00:1::1/64'] : ['10.0.2.1/24'];
        ops = [
          ...(uuidOf('Logical_Router_Port', lrp) === undefined
            ? [{ op: 'insert', table: 'Logical_Router_Port', 'uuid-name': 'rp', row: { name: lrp, mac: sw === 'sw1' ? '00:00:00:00:ff:01' : '00:00:00:00:ff:02', networks: set(net) } },
              { op: 'mutate', table: 'Logical_Router', where: [], mutations: [['ports', 'insert', set([['named-uuid', 'rp']])]] }]
            : []),
          ...addLsp(sw, lsp, { type: 'router', addresses: set(rng.chance(0.8) ? ['router'] : ['00:00:00:00:ff:09 10.0.1.9']), options: map({ 'router-port': lrp }) }),
        ];
        break;
      }
      default: {
        const lrp = uuidOf('Logical_Router_Port', rng.pick(['lr0-sw1', 'lr0-sw2']));
        if (lrp === undefined) continue;
        ops = [{ op: 'update', table: 'Logical_Router_Port', where: byUuid(lrp), row: { networks: set(rng.subset(['10.0.1.1/24', '10.0.5.1/24', 'fd00:1::1/64', '10.0.2.1/24'], 2)) } }];
      }
    }
    if (!apply(ops)) continue;
    const difference = viewDifference(northd.view(), northd.recompute(fx.db, before));
    if (difference !== undefined) return { problem: `step ${step} (${what}): incremental view (first) differs from recompute (second): ${difference}`, dhcp, drops };
    const flows = [...(northd.view().get('Logical_Flow')?.values() ?? [])] as unknown as sb.Logical_Flow[];
    if (flows.some((f) => f.external_ids.get('stage-name') === 'ls_in_dhcp_options' && f.match.includes('is_chassis_resident('))) dhcp++;
    if (flows.some((f) => f.external_ids.get('stage-name') === 'ls_in_external_port' && f.priority === 100)) drops++;
  }
  return { dhcp, drops };
}

t.test(`external ports: incremental == recompute over ${process.env.NORTHD_SEED ?? SEQUENCES} sequences of ${STEPS} changes`, async (t) => {
  const only = process.env.NORTHD_SEED;
  const seeds = only !== undefined ? [Number(only)] : Array.from({ length: SEQUENCES }, (_, i) => i + 1);
  let failures = 0;
  let dhcp = 0;
  let drops = 0;
  for (const seed of seeds) {
    const r = runSequence(seed);
    dhcp += r.dhcp;
    drops += r.drops;
    if (r.problem !== undefined) {
      failures++;
      t.fail(`seed ${seed}: ${r.problem}\nreplay: NORTHD_SEED=${seed} npm run test:one -- tests/northd/external-ports.test.ts`);
      if (failures >= 3) break;
    }
  }
  t.equal(failures, 0, 'every sequence agrees');
  if (only === undefined) {
    t.comment(`steps with an external port's DHCP flow: ${dhcp}, with its drops where it does not reside: ${drops}`);
    t.ok(dhcp >= seeds.length && drops >= seeds.length * 3, 'external ports\' DHCP and drops were exercised');
  }
});
