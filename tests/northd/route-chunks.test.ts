// A router's static routes, held past routeChunkLimits.groupsMin route groups in chunks of
// their own (lflows/router.ts, lflows/node.ts): after every change (routes added, removed,
// re-pointed and re-prefixed, ECMP groups made and broken, route tables, connected-origin
// routes, the router's ports re-addressed or given another MAC, the chunk count crossing a power of two, the router
// dropping below the threshold) the incremental view equals a fresh recompute exactly, and one
// route added to a router of a thousand writes its own flow, not the router's. And ECMP groups
// get ovn-northd's numbers (which the random differential test against it found we did not).
import t from 'tap';
import { createNorthd } from '../../northd/index.js';
import { Rng } from '../helpers/seeded-rng.js';
import { byUuid, map, nbFixture, set, uuidAtom, viewDifference } from './nb-fixture.js';

const ROUTES = 1000;
const prefix = (k: number): string => `192.${(k >> 8) & 255}.${k & 255}.0/24`;

t.test('a router of a thousand static routes: incremental == recompute, and a route added writes few rows', async (t) => {
  const rng = new Rng(97);
  const fx = nbFixture();
  const northd = createNorthd();
  const step = (ops: readonly unknown[]): number => northd.apply(fx.db, fx.run(ops)).changes.length;
  step([{ op: 'insert', table: 'NB_Global', row: {} }]);
  step([
    { op: 'insert', table: 'Logical_Router_Port', 'uuid-name': 'p0', row: { name: 'lrp0', mac: '0a:00:00:00:00:01', networks: set(['10.0.0.1/16']) } },
    { op: 'insert', table: 'Logical_Router_Port', 'uuid-name': 'p1', row: { name: 'lrp1', mac: '0a:00:00:00:00:02', networks: set(['10.1.0.1/16', 'fd00::1/64']) } },
    { op: 'insert', table: 'Logical_Router', row: { name: 'lr0', ports: set([['named-uuid', 'p0'], ['named-uuid', 'p1']]) } },
  ]);
  const lr = [...fx.db.rows('Logical_Router').keys()][0] as string;
  const nexthop = (): string => rng.pick(['10.0.0.254', '10.0.0.253', '10.1.0.254', '10.9.0.1', 'discard']);
  const routeRow = (k: number): Record<string, unknown> => {
    const row: Record<string, unknown> = { ip_prefix: prefix(k), nexthop: nexthop() };
    if (rng.chance(0.05)) row['route_table'] = 'rtb1';
    if (rng.chance(0.05)) row['options'] = map({ origin: 'connected' });
    if (rng.chance(0.05)) row['policy'] = 'src-ip';
    return row;
  };
  const addRoutes = (keys: readonly number[]): number =>
    step([
      ...keys.map((k, i) => ({ op: 'insert', table: 'Logical_Router_Static_Route', 'uuid-name': `r${i}`, row: routeRow(k) })),
      { op: 'mutate', table: 'Logical_Router', where: byUuid(lr), mutations: [['static_routes', 'insert', set(keys.map((_, i) => ['named-uuid', `r${i}`]))]] },
    ]);
  for (let b = 0; b < ROUTES; b += 250) addRoutes(Array.from({ length: 250 }, (_, i) => b + i));
  const same = (what: string): boolean => {
    const diff = viewDifference(northd.view(), createNorthd().recompute(fx.db));
    if (diff !== undefined) t.fail(`${what}: incremental differs from recompute: ${diff.slice(0, 400)}`);
    return diff === undefined;
  };
  same('setup');

  // One unique route added: its one flow (no group, no other row).
  const added = step([
    { op: 'insert', table: 'Logical_Router_Static_Route', 'uuid-name': 'r', row: { ip_prefix: '193.0.0.0/24', nexthop: '10.0.0.254' } },
    { op: 'mutate', table: 'Logical_Router', where: byUuid(lr), mutations: [['static_routes', 'insert', set([['named-uuid', 'r']])]] },
  ]);
  same('one route added');
  t.ok(added > 0 && added <= 3, `one route added to ${ROUTES} changed ${added} SB rows`);

  const routes = (): string[] => [...((fx.db.get('Logical_Router', lr)?.['static_routes'] as readonly string[] | undefined) ?? [])];
  let failures = 0;
  for (let i = 0; i < 120; i++) {
    const kind = rng.weighted<string>([
      ['add', 3], ['ecmp', 2], ['del', 2], ['nexthop', 2], ['prefix', 1], ['table', 0.5], ['port', 0.5], ['mac', 0.7], ['many', 0.3], ['shrink', 0.1],
    ]);
    const all = routes();
    let ops: unknown[];
    if (kind === 'add' || all.length === 0) {
      addRoutes([ROUTES + rng.int(0, 3000)]);
      ops = [];
    } else if (kind === 'ecmp') {
      // Another route to the prefix of an existing one: a group of two or more (ECMP ids renumber).
      const other = fx.db.get('Logical_Router_Static_Route', rng.pick(all));
      ops = [
        { op: 'insert', table: 'Logical_Router_Static_Route', 'uuid-name': 'e', row: { ip_prefix: other?.['ip_prefix'] as string, nexthop: rng.pick(['10.0.0.7', '10.1.0.7', '10.0.0.8']), ...(other?.['route_table'] !== '' ? { route_table: other?.['route_table'] } : {}) } },
        { op: 'mutate', table: 'Logical_Router', where: byUuid(lr), mutations: [['static_routes', 'insert', set([['named-uuid', 'e']])]] },
      ];
    } else if (kind === 'del') ops = [{ op: 'mutate', table: 'Logical_Router', where: byUuid(lr), mutations: [['static_routes', 'delete', set([uuidAtom(rng.pick(all))])]] }];
    else if (kind === 'nexthop') ops = [{ op: 'update', table: 'Logical_Router_Static_Route', where: byUuid(rng.pick(all)), row: { nexthop: nexthop() } }];
    else if (kind === 'prefix') ops = [{ op: 'update', table: 'Logical_Router_Static_Route', where: byUuid(rng.pick(all)), row: { ip_prefix: prefix(rng.int(0, 3000)) } }];
    else if (kind === 'table') ops = [{ op: 'update', table: 'Logical_Router_Port', where: [['name', '==', rng.pick(['lrp0', 'lrp1'])]], row: { options: map(rng.chance(0.5) ? { route_table: rng.pick(['rtb1', 'rtb2']) } : {}) } }];
    else if (kind === 'port') ops = [{ op: 'update', table: 'Logical_Router_Port', where: [['name', '==', 'lrp1']], row: { networks: set([rng.pick(['10.1.0.1/16', '10.9.0.2/16', '10.0.0.2/24'])]), mac: rng.pick(['0a:00:00:00:00:02', '0a:00:00:00:00:03']) } }];
    else if (kind === 'mac') ops = [{ op: 'update', table: 'Logical_Router_Port', where: [['name', '==', rng.pick(['lrp0', 'lrp1'])]], row: { mac: `0a:00:00:00:01:${rng.int(16, 99)}` } }];
    else if (kind === 'many') {
      addRoutes(Array.from({ length: 300 }, () => ROUTES + rng.int(3000, 9000)));
      ops = [];
    } else ops = [{ op: 'update', table: 'Logical_Router', where: byUuid(lr), row: { static_routes: set(all.slice(0, rng.int(0, 70)).map(uuidAtom)) } }];
    if (ops.length > 0) step(ops);
    if (!same(`step ${i} (${kind}), ${routes().length} routes`)) failures++;
    if (failures >= 3) break;
  }
  t.equal(failures, 0, 'every step agrees with a recompute');
});

t.test('ECMP groups are numbered as ovn-northd numbers them: when a group\'s second route comes, in UUID order', async (t) => {
  const fx = nbFixture();
  const northd = createNorthd();
  northd.apply(fx.db, fx.run([{ op: 'insert', table: 'NB_Global', row: {} }]));
  // Routes A1, B1, B2, A2 by UUID: B meets its second route first, so B is group 1 and A group 2.
  const route = (n: number, ipPrefix: string, nexthop: string): unknown =>
    ({ op: 'insert', table: 'Logical_Router_Static_Route', uuid: `5e000000-0000-4000-8000-00000000000${n}`, row: { ip_prefix: ipPrefix, nexthop } });
  northd.apply(fx.db, fx.run([
    route(1, '192.168.1.0/24', '10.0.0.11'),
    route(2, '192.168.2.0/24', '10.0.0.12'),
    route(3, '192.168.2.0/24', '10.0.0.13'),
    route(4, '192.168.1.0/24', '10.0.0.14'),
    { op: 'insert', table: 'Logical_Router_Port', 'uuid-name': 'p0', row: { name: 'lrp0', mac: '0a:00:00:00:00:01', networks: set(['10.0.0.1/24']) } },
    { op: 'insert', table: 'Logical_Router', row: { name: 'lr0', ports: set([['named-uuid', 'p0']]), static_routes: set([1, 2, 3, 4].map((n) => uuidAtom(`5e000000-0000-4000-8000-00000000000${n}`))) } },
  ]));
  const flows = [...(northd.view().get('Logical_Flow')?.values() ?? [])] as unknown as { match: string; actions: string }[];
  const group = (dst: string): string | undefined => flows.find((f) => f.match.includes(`ip4.dst == ${dst}`) && f.actions.includes('select('))?.actions.match(/reg8\[0\.\.15\] = (\d+)/)?.[1];
  t.equal(group('192.168.2.0/24'), '1', 'the group whose second route comes first is 1');
  t.equal(group('192.168.1.0/24'), '2', 'the other is 2');
  const members = flows.filter((f) => f.match.startsWith('reg8[0..15] == 2 && reg8[16..31] == ')).map((f) => `${f.match.slice(-1)} ${/reg0 = ([\d.]+)/.exec(f.actions)?.[1] ?? '?'}`).sort();
  t.same(members, ['1 10.0.0.11', '2 10.0.0.14'], 'members numbered in UUID order within the group');
});
