// SB Address_Set and SB_Global.options: NB address sets are published by name, the service
// monitor MAC both in SB_Global.options:svc_monitor_mac and as the `svc_monitor_mac` set
// (ovn-controller needs it to compile flows that match $svc_monitor_mac), derived from
// NB_Global's UUID unless NB_Global.options sets it; changes are handled without recomputes.
import t from 'tap';
import { createNorthd } from '../../northd/index.js';
import { derivedSvcMonitorMac } from '../../northd/sb-global.js';
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
