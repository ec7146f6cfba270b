// SB Address_Set and SB_Global.options: NB address sets are published by name, the service
// monitor MAC both in SB_Global.options:svc_monitor_mac and as the `svc_monitor_mac` set
// (ovn-controller needs it to compile flows that match $svc_monitor_mac), derived from
// NB_Global's UUID unless NB_Global.options sets it; changes are handled without recomputes.
import { isDeepStrictEqual } from 'node:util';
import t from 'tap';
import { setEditBetween } from '../../ovsdb/datum.js';
import { createNorthd } from '../../northd/index.js';
import { derivedSvcMonitorMac } from '../../northd/sb-global.js';
import { Rng } from '../helpers/seeded-rng.js';
import { addLsp, byUuid, map, nbFixture, set } from './nb-fixture.js';

const rowsOf = (view: ReturnType<ReturnType<typeof createNorthd>['view']>, table: string): Record<string, unknown>[] => [...(view.get(table)?.values() ?? [])] as unknown as Record<string, unknown>[];

t.test('address sets and the service monitor MAC', (t) => {
  const nb = nbFixture();
  const northd = createNorthd();
  northd.apply(nb.db, nb.run([{ op: 'insert', table: 'NB_Global', row: {} }]));
  const globalUuid = [...nb.db.rows('NB_Global').keys()][0] as string;
  const mac = derivedSvcMonitorMac(globalUuid);
  t.match(mac, /^[0-9a-f][26ae](:[0-9a-f]{2}){5}$/, 'a unicast, locally administered MAC');
  t.equal(derivedSvcMonitorMac(globalUuid), mac, 'the same on every call (and replica)');
  t.same(rowsOf(northd.view(), 'Address_Set').map((r) => [r.name, r.addresses]), [['svc_monitor_mac', [mac]]]);
  t.equal((rowsOf(northd.view(), 'SB_Global')[0]?.options as Map<string, string>).get('svc_monitor_mac'), mac);

  const before = northd.stats();
  const d1 = northd.apply(nb.db, nb.run([{ op: 'insert', table: 'Address_Set', row: { name: 'as1', addresses: set(['10.0.0.2', '10.0.0.1']) } }]));
  t.same(d1.changes.map((c) => [c.kind, c.table]), [['insert', 'Address_Set']]);
  const as1 = rowsOf(northd.view(), 'Address_Set').find((r) => r.name === 'as1');
  t.same(as1?.addresses, ['10.0.0.1', '10.0.0.2']);
  const asUuid = [...nb.db.rows('Address_Set').keys()][0] as string;
  const d2 = northd.apply(nb.db, nb.run([{ op: 'mutate', table: 'Address_Set', where: byUuid(asUuid), mutations: [['addresses', 'insert', set(['10.0.0.3'])]] }]));
  t.same(d2.changes.map((c) => [c.kind, c.table]), [['modify', 'Address_Set']], 'an address added modifies the one row');
  const d3 = northd.apply(nb.db, nb.run([{ op: 'update', table: 'NB_Global', where: [], row: { options: map({ svc_monitor_mac: '0a:00:00:00:00:09' }) } }]));
  t.same(d3.changes.map((c) => c.table).sort(), ['Address_Set', 'SB_Global'], 'an explicit MAC replaces the derived one');
  t.same(rowsOf(northd.view(), 'Address_Set').find((r) => r.name === 'svc_monitor_mac')?.addresses, ['0a:00:00:00:00:09']);
  const d4 = northd.apply(nb.db, nb.run([{ op: 'delete', table: 'Address_Set', where: byUuid(asUuid) }]));
  t.same(d4.changes.map((c) => [c.kind, c.table]), [['delete', 'Address_Set']]);
  const after = northd.stats();
  t.equal(after.address_sets?.recomputes, before.address_sets?.recomputes, 'no recompute for any of these changes');
  t.same(northd.recompute(nb.db, northd.view()).get('Address_Set'), northd.view().get('Address_Set'), 'incremental equals a fresh recompute');
  t.end();
});

t.test('port group address sets: <pg>_ip4 and <pg>_ip6, incrementally, an NB set of the same name wins', (t) => {
  const nb = nbFixture();
  const northd = createNorthd();
  northd.apply(nb.db, nb.run([{ op: 'insert', table: 'NB_Global', row: {} }]));
  northd.apply(nb.db, nb.run([{ op: 'insert', table: 'Logical_Switch', row: { name: 'sw0' } }]));
  for (const [name, addresses] of [['p1', ['00:00:00:00:00:01 10.0.0.11 fd00::11']], ['p2', ['00:00:00:00:00:02 10.0.0.2', 'unknown']], ['p3', ['00:00:00:00:00:03 10.0.0.11']]] as const) {
    northd.apply(nb.db, nb.run(addLsp('sw0', name, { addresses: set(addresses) })));
  }
  const lsp = (name: string): string => (nb.db.findUnique('Logical_Switch_Port', ['name'], [name]) as { _uuid: string })._uuid;
  const sets = (): Record<string, unknown> => Object.fromEntries(rowsOf(northd.view(), 'Address_Set').filter((r) => r.name !== 'svc_monitor_mac').map((r) => [r.name, r.addresses]));
  const before = northd.stats();
  northd.apply(nb.db, nb.run([{ op: 'insert', table: 'Port_Group', row: { name: 'pg', ports: set([['uuid', lsp('p1')], ['uuid', lsp('p2')], ['uuid', lsp('p3')]]) } }]));
  t.same(sets(), { pg_ip4: ['10.0.0.11', '10.0.0.2'], pg_ip6: ['fd00::11'] }, 'sorted as strings, each address once');
  const pg = [...nb.db.rows('Port_Group').keys()][0] as string;
  northd.apply(nb.db, nb.run([{ op: 'mutate', table: 'Port_Group', where: byUuid(pg), mutations: [['ports', 'delete', set([['uuid', lsp('p1')]])]] }]));
  t.same(sets(), { pg_ip4: ['10.0.0.11', '10.0.0.2'], pg_ip6: [] }, 'p3 still gives 10.0.0.11 when p1 leaves');
  northd.apply(nb.db, nb.run([{ op: 'update', table: 'Logical_Switch_Port', where: byUuid(lsp('p3')), row: { addresses: set(['00:00:00:00:00:03 10.0.0.33']) } }]));
  t.same(sets(), { pg_ip4: ['10.0.0.2', '10.0.0.33'], pg_ip6: [] }, 'a member\'s new addresses');
  northd.apply(nb.db, nb.run([{ op: 'insert', table: 'Address_Set', row: { name: 'pg_ip4', addresses: set(['192.0.2.1']) } }]));
  t.same(sets(), { pg_ip4: ['192.0.2.1'], pg_ip6: [] }, 'an NB address set of the same name wins');
  northd.apply(nb.db, nb.run([{ op: 'delete', table: 'Address_Set', where: [['name', '==', 'pg_ip4']] }]));
  northd.apply(nb.db, nb.run([{ op: 'update', table: 'Port_Group', where: byUuid(pg), row: { name: 'web' } }]));
  t.same(sets(), { web_ip4: ['10.0.0.2', '10.0.0.33'], web_ip6: [] }, 'renamed');
  t.equal(northd.stats().address_sets?.recomputes, before.address_sets?.recomputes, 'no recompute');
  t.same(northd.recompute(nb.db, northd.view()).get('Address_Set'), northd.view().get('Address_Set'), 'incremental equals a fresh recompute');
  t.end();
});

t.test('port group address sets edited in place of copied: random member and address changes equal a recompute', (t) => {
  // 300 ports with addresses from a pool of 120, so that members share addresses; a group's
  // row is written as its previous row edited (CountedSet.takeFlips) and the edit recorded for
  // the SB change's readers. After every step the rows equal a fresh recompute, each edit
  // recorded names exactly what changed, and the edits were taken (not only whole copies).
  const rng = new Rng(Number(process.env.NORTHD_SEED ?? 7));
  const nb = nbFixture();
  const northd = createNorthd();
  northd.apply(nb.db, nb.run([{ op: 'insert', table: 'NB_Global', row: {} }]));
  northd.apply(nb.db, nb.run([{ op: 'insert', table: 'Logical_Switch', row: { name: 'sw0' } }]));
  const pool = Array.from({ length: 120 }, (_, i) => (i % 3 === 2 ? `fd00::${i}` : `10.0.${i >> 4}.${i}`));
  const addressesOf = (k: number): string[] => {
    const ips = rng.subset(pool, rng.int(0, 2));
    return [`00:00:00:00:${(k >> 8).toString(16).padStart(2, '0')}:${(k & 255).toString(16).padStart(2, '0')}${ips.map((ip) => ` ${ip}`).join('')}`];
  };
  const ports = Array.from({ length: 300 }, (_, k) => `p${k}`);
  for (let k = 0; k < ports.length; k += 50) northd.apply(nb.db, nb.run(ports.slice(k, k + 50).flatMap((p, j) => addLsp('sw0', p, { addresses: set(addressesOf(k + j)) }))));
  const lsp = (name: string): string => (nb.db.findUnique('Logical_Switch_Port', ['name'], [name]) as { _uuid: string })._uuid;
  northd.apply(nb.db, nb.run([{ op: 'insert', table: 'Port_Group', row: { name: 'pg', ports: set(ports.slice(0, 20).map((p) => ['uuid', lsp(p)])) } }]));
  const pg = [...nb.db.rows('Port_Group').keys()][0] as string;
  const rowNamed = (name: string): { addresses: readonly string[] } | undefined => rowsOf(northd.view(), 'Address_Set').find((r) => r.name === name) as { addresses: readonly string[] } | undefined;
  let pgName = 'pg';
  let edits = 0;
  let changed = 0;
  let problems = 0;
  for (let step = 0; step < 400 && problems === 0; step++) {
    const before = new Map(['_ip4', '_ip6'].map((s) => [pgName + s, rowNamed(pgName + s)?.addresses]));
    const roll = rng.int(0, 99);
    let what: string;
    if (roll < 60) {
      const some = rng.subset(ports, rng.int(1, 3)).map((p) => ['uuid', lsp(p)]);
      const op = rng.chance(0.55) ? 'insert' : 'delete';
      what = `ports ${op} ${some.length}`;
      northd.apply(nb.db, nb.run([{ op: 'mutate', table: 'Port_Group', where: byUuid(pg), mutations: [['ports', op, set(some)]] }]));
    } else if (roll < 85) {
      const k = rng.int(0, ports.length - 1);
      what = `addresses of p${k}`;
      northd.apply(nb.db, nb.run([{ op: 'update', table: 'Logical_Switch_Port', where: byUuid(lsp(`p${k}`)), row: { addresses: set(addressesOf(k)) } }]));
    } else if (roll < 90) {
      // More than a write lists as edits: the next write compares the whole set.
      const all = rng.chance(0.5);
      what = all ? 'every port joins' : 'all but five leave';
      const members = all ? ports : rng.subset(ports, 5);
      northd.apply(nb.db, nb.run([{ op: 'update', table: 'Port_Group', where: byUuid(pg), row: { ports: set(members.map((p) => ['uuid', lsp(p)])) } }]));
    } else if (roll < 95) {
      const own = nb.db.findUnique('Address_Set', ['name'], [`${pgName}_ip4`]) as { _uuid: string } | undefined;
      what = own === undefined ? 'an NB set takes the name' : 'the NB set goes';
      northd.apply(nb.db, nb.run(own === undefined ? [{ op: 'insert', table: 'Address_Set', row: { name: `${pgName}_ip4`, addresses: set(rng.subset(pool, 3)) } }] : [{ op: 'delete', table: 'Address_Set', where: byUuid(own._uuid) }]));
    } else {
      const own = nb.db.findUnique('Address_Set', ['name'], [`${pgName}_ip4`]) as { _uuid: string } | undefined;
      if (own !== undefined) northd.apply(nb.db, nb.run([{ op: 'delete', table: 'Address_Set', where: byUuid(own._uuid) }]));
      pgName = pgName === 'pg' ? 'web' : 'pg';
      what = `renamed ${pgName}`;
      northd.apply(nb.db, nb.run([{ op: 'update', table: 'Port_Group', where: byUuid(pg), row: { name: pgName } }]));
    }
    const recomputed = northd.recompute(nb.db, northd.view()).get('Address_Set');
    if (!tSame(recomputed, northd.view().get('Address_Set'))) {
      t.fail(`step ${step} (${what}): the rows differ from a recompute`);
      problems++;
    }
    for (const [name, old] of before) {
      const now = rowNamed(name)?.addresses;
      if (old === undefined || now === undefined || old === now) continue;
      changed++;
      const edit = setEditBetween(old, now);
      if (edit === undefined) continue;
      edits++;
      const added = now.filter((a) => !old.includes(a));
      const removed = old.filter((a) => !now.includes(a));
      if (!tSame([edit.added, edit.removed], [added, removed])) {
        t.fail(`step ${step} (${what}): ${name}'s recorded edit ${JSON.stringify(edit)} is not its change ${JSON.stringify({ added, removed })}`);
        problems++;
      }
    }
  }
  t.equal(problems, 0, 'every step equal to a recompute, every recorded edit exact');
  t.ok(edits > 50, `rows written as edits of the previous ones (${edits} of ${changed} changes)`);
  t.end();
});

/** Deep equality without an assertion. */
function tSame(a: unknown, b: unknown): boolean {
  return isDeepStrictEqual(a, b);
}
