// Load balancers whose VIPs are held in chunks (northd/load-balancers.ts, lflows/node.ts), on
// many switches at once, so that several switches of one shard hold each chunk's template and
// its flows name a Logical_DP_Group: after every change (VIPs added, removed and changed, an
// option the flows read, a switch detached and attached again, a group's load balancers) the
// incremental view equals a fresh recompute exactly, and one VIP added writes only its own flows
// and its groups, not the rows of the VIPs that share its chunk.
import t from 'tap';
import { createNorthd } from '../../northd/index.js';
import { Rng } from '../helpers/seeded-rng.js';
import { byUuid, map, nbFixture, set, uuidAtom, viewDifference } from './nb-fixture.js';

const SWITCHES = 40;
const vipKey = (k: number): string => `172.16.${(k >> 8) & 255}.${k & 255}:80`;
const backends = (k: number, v = 0): string => `10.0.${v}.${(k % 250) + 1}:8080,10.0.${v}.${((k + 7) % 250) + 1}:8080`;

t.test('chunked load balancers on 40 switches: incremental == recompute, and a VIP added writes few rows', async (t) => {
  const rng = new Rng(43);
  const fx = nbFixture();
  const northd = createNorthd();
  const step = (ops: readonly unknown[]): number => northd.apply(fx.db, fx.run(ops)).changes.length;
  step([{ op: 'insert', table: 'NB_Global', row: {} }]);
  step([
    { op: 'insert', table: 'Load_Balancer', row: { name: 'big', vips: map(Object.fromEntries(Array.from({ length: 150 }, (_, k) => [vipKey(k), backends(k)]))) } },
    { op: 'insert', table: 'Load_Balancer', row: { name: 'grouped', protocol: set(['udp']), vips: map(Object.fromEntries(Array.from({ length: 90 }, (_, k) => [vipKey(1000 + k), backends(k)]))) } },
  ]);
  const lb = (name: string): string => [...fx.db.rows('Load_Balancer').values()].find((r) => r['name'] === name)?._uuid as string;
  step([{ op: 'insert', table: 'Load_Balancer_Group', row: { name: 'g', load_balancer: set([uuidAtom(lb('grouped'))]) } }]);
  const group = [...fx.db.rows('Load_Balancer_Group').keys()][0] as string;
  for (let s = 0; s < SWITCHES; s++) {
    step([
      { op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': 'p', row: { name: `p${s}`, addresses: set([`0a:00:00:00:00:${(s + 16).toString(16)} 10.1.0.${s + 2}`]) } },
      { op: 'insert', table: 'Logical_Switch', row: { name: `sw${s}`, ports: set([['named-uuid', 'p']]), load_balancer: set([uuidAtom(lb('big'))]), load_balancer_group: s % 2 === 0 ? set([uuidAtom(group)]) : set([]) } },
    ]);
  }
  const same = (what: string): void => {
    const diff = viewDifference(northd.view(), createNorthd().recompute(fx.db));
    if (diff !== undefined) t.fail(`${what}: incremental differs from recompute: ${diff.slice(0, 400)}`);
  };
  same('setup');

  // One VIP added to the big load balancer: its two flows in each shard its switches span, and
  // the groups of its chunk; the other VIPs of the chunk keep their rows.
  const added = step([{ op: 'mutate', table: 'Load_Balancer', where: byUuid(lb('big')), mutations: [['vips', 'insert', map({ [vipKey(500)]: backends(500) })]] }]);
  same('one VIP added');
  t.ok(added > 0 && added < 80, `one VIP added to 150 on ${SWITCHES} switches changed ${added} SB rows`);

  let failures = 0;
  for (let i = 0; i < 60; i++) {
    const name = rng.chance(0.6) ? 'big' : 'grouped';
    const kind = rng.pick(['add', 'add', 'del', 'modify', 'option', 'detach', 'group'] as const);
    const k = rng.int(0, 700);
    let ops: unknown[];
    if (kind === 'add') ops = [{ op: 'mutate', table: 'Load_Balancer', where: byUuid(lb(name)), mutations: [['vips', 'insert', map({ [vipKey(name === 'big' ? k : 1000 + k)]: backends(k) })]] }];
    else if (kind === 'del') ops = [{ op: 'mutate', table: 'Load_Balancer', where: byUuid(lb(name)), mutations: [['vips', 'delete', set([vipKey(name === 'big' ? rng.int(0, 160) : 1000 + rng.int(0, 95))])]] }];
    else if (kind === 'modify') {
      const vips = new Map(fx.db.get('Load_Balancer', lb(name))?.['vips'] as ReadonlyMap<string, string>);
      const key = [...vips.keys()][rng.int(0, vips.size - 1)] as string;
      vips.set(key, backends(k, 9));
      ops = [{ op: 'update', table: 'Load_Balancer', where: byUuid(lb(name)), row: { vips: map(Object.fromEntries(vips)) } }];
    } else if (kind === 'option') ops = [{ op: 'update', table: 'Load_Balancer', where: byUuid(lb(name)), row: { options: map(rng.chance(0.5) ? { reject: 'true' } : {}) } }];
    else if (kind === 'detach') {
      const sw = `sw${rng.int(0, SWITCHES - 1)}`;
      const attached = (([...fx.db.rows('Logical_Switch').values()].find((r) => r['name'] === sw)?.['load_balancer'] as readonly string[] | undefined) ?? []).length > 0;
      ops = [{ op: 'update', table: 'Logical_Switch', where: [['name', '==', sw]], row: { load_balancer: attached ? set([]) : set([uuidAtom(lb('big'))]) } }];
    } else ops = [{ op: 'mutate', table: 'Load_Balancer_Group', where: byUuid(group), mutations: [['load_balancer', rng.chance(0.5) ? 'insert' : 'delete', set([uuidAtom(lb(rng.chance(0.5) ? 'big' : 'grouped'))])]] }];
    step(ops);
    const diff = viewDifference(northd.view(), createNorthd().recompute(fx.db));
    if (diff !== undefined) {
      failures++;
      if (failures <= 3) t.fail(`step ${i} (${kind} on ${name}): incremental differs from recompute: ${diff.slice(0, 400)}`);
    }
  }
  t.equal(failures, 0, 'every step agrees with a recompute');
});
