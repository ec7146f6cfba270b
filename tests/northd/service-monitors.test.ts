// Health checks (northd/service-monitors.ts) case by case, where the differential test cannot
// reach: source IPs as inet_parse_address reads them, a backend monitored by two load
// balancers with different settings (ovn-northd's choice is its hash order; ours the lowest
// load balancer UUID), a router port named in a mapping (ovn-northd would crash), and the
// engine counters proving that a reported status rebuilds only what it must. Method: NB rows
// in, SB rows and flows out.
import t from 'tap';
import { createNorthd } from '../../northd/index.js';
import { contentVersion } from '../../northd/sb-changes.js';
import { parseSourceIp } from '../../northd/service-monitors.js';
import type * as sb from '../../ovsdb/rows/sb.js';
import { addLrp, addLsp, map, nbFixture, set } from './nb-fixture.js';

t.test('source IPs: IPv4 as inet_pton reads it, IPv6 with or without brackets, printed as inet_ntop prints them', async (t) => {
  const cases: [string, string | undefined][] = [
    ['10.0.0.1', '10.0.0.1'], ['010.0.0.1', undefined], ['10.0.0.256', undefined], ['', undefined], ['bogus', undefined],
    ['[fd00::1]', 'fd00::1'], ['fd00:0:0::1', 'fd00::1'], ['[FD00::A]', 'fd00::a'], ['[fd00::1', 'fd00::1'], ['fe80::1%eth0', undefined],
    ['10.0.0.1:80', undefined],
  ];
  for (const [text, want] of cases) t.equal(parseSourceIp(text), want, JSON.stringify(text));
});

const LB_A = 'aaaaaaaa-0000-4000-8000-000000000001';
const LB_B = 'bbbbbbbb-0000-4000-8000-000000000001';

function build(): { fx: ReturnType<typeof nbFixture>; northd: ReturnType<typeof createNorthd> } {
  const fx = nbFixture();
  const northd = createNorthd();
  northd.apply(fx.db, fx.run([{ op: 'insert', table: 'NB_Global', row: { options: map({ svc_monitor_mac: '0A:00:00:00:00:EE' }) } }]));
  northd.apply(fx.db, fx.run([{ op: 'insert', table: 'Logical_Switch', row: { name: 'sw0' } }, { op: 'insert', table: 'Logical_Router', row: { name: 'lr0' } }]));
  northd.apply(fx.db, fx.run([...addLsp('sw0', 'vm1', { addresses: set(['00:00:00:00:00:01 10.0.0.1']) }), ...addLsp('sw0', 'vm2', { addresses: set(['00:00:00:00:00:02 10.0.0.2']) })]));
  northd.apply(fx.db, fx.run(addLrp('lr0', 'lrp0', '00:00:00:00:ff:01', ['10.0.0.254/24'])));
  return { fx, northd };
}

/** A load balancer with UUID `uuid` on sw0, health checked, with these mappings. */
function lbOps(uuid: string, name: string, hcOptions: Record<string, string>, mappings: Record<string, string>): unknown[] {
  return [
    { op: 'insert', table: 'Load_Balancer_Health_Check', 'uuid-name': `hc_${name}`, row: { vip: '10.0.0.100:80', options: map(hcOptions) } },
    { op: 'insert', table: 'Load_Balancer', uuid, row: { name, vips: map({ '10.0.0.100:80': '10.0.0.1:80,10.0.0.2:80' }), health_check: ['named-uuid', `hc_${name}`], ip_port_mappings: map(mappings) } },
    { op: 'mutate', table: 'Logical_Switch', where: [['name', '==', 'sw0']], mutations: [['load_balancer', 'insert', set([['uuid', uuid]])]] },
  ];
}

const rows = <T>(northd: ReturnType<typeof createNorthd>, table: string): T[] => [...(northd.view().get(table)?.values() ?? [])] as unknown as T[];

t.test('a backend two load balancers monitor: one row, the lowest load balancer UUID wins, the other takes over when it goes', async (t) => {
  const { fx, northd } = build();
  // Inserted in the other order: the choice does not depend on it.
  northd.apply(fx.db, fx.run(lbOps(LB_B, 'b', { interval: '9' }, { '10.0.0.1': 'vm1:10.0.0.98' })));
  northd.apply(fx.db, fx.run(lbOps(LB_A, 'a', { interval: '5' }, { '10.0.0.1': 'vm1:10.0.0.99' })));
  const monitors = rows<sb.Service_Monitor>(northd, 'Service_Monitor');
  t.equal(monitors.length, 1, 'one row for (10.0.0.1, 80, tcp, vm1)');
  t.same([monitors[0]?.src_ip, [...(monitors[0]?.options ?? [])], monitors[0]?.src_mac], ['10.0.0.99', [['interval', '5']], '0a:00:00:00:00:ee'], 'load balancer a\'s settings, svc_monitor_mac normalized');
  const arps = rows<sb.Logical_Flow>(northd, 'Logical_Flow').filter((f) => f.external_ids.get('stage-name') === 'ls_in_arp_rsp' && f.priority === 110).map((f) => f.match).sort();
  t.same(arps, ['arp.tpa == 10.0.0.98 && arp.op == 1', 'arp.tpa == 10.0.0.99 && arp.op == 1'], 'each source IP answered');
  const lbActions = rows<sb.Logical_Flow>(northd, 'Logical_Flow').filter((f) => f.external_ids.get('stage-name') === 'ls_in_lb' && f.priority > 0).map((f) => f.actions);
  t.same(lbActions, ['reg0[1] = 0; ct_lb_mark(backends=10.0.0.1:80);'], 'vm2 is not mapped: never chosen');
  northd.apply(fx.db, fx.run([{ op: 'delete', table: 'Load_Balancer', where: [['name', '==', 'a']] }]));
  t.same(rows<sb.Service_Monitor>(northd, 'Service_Monitor').map((m) => m.src_ip), ['10.0.0.98'], 'load balancer b\'s settings now');
  t.equal(northd.recompute(fx.db, northd.view()).get('Service_Monitor')?.size, 1);
});

t.test('a mapping that names a router port monitors nothing and answers nothing', async (t) => {
  const { fx, northd } = build();
  northd.apply(fx.db, fx.run(lbOps(LB_A, 'a', {}, { '10.0.0.1': 'lrp0:10.0.0.99', '10.0.0.2': 'vm2:10.0.0.99' })));
  t.same(rows<sb.Service_Monitor>(northd, 'Service_Monitor').map((m) => m.logical_port), ['vm2']);
  t.same(rows<sb.Logical_Flow>(northd, 'Logical_Flow').filter((f) => f.external_ids.get('stage-name') === 'ls_in_lb' && f.priority > 0).map((f) => f.actions), ['reg0[1] = 0; ct_lb_mark(backends=10.0.0.2:80);']);
});

t.test('a status report rebuilds the load balancer\'s flows and its row, incrementally', async (t) => {
  const { fx, northd } = build();
  northd.apply(fx.db, fx.run(lbOps(LB_A, 'a', {}, { '10.0.0.1': 'vm1:10.0.0.99', '10.0.0.2': 'vm2:10.0.0.99' })));
  const vm1 = rows<sb.Service_Monitor>(northd, 'Service_Monitor').find((m) => m.logical_port === 'vm1')?._uuid as string;
  const before = northd.stats();
  const delta = northd.setServiceMonitorStatus(fx.db, new Map([[vm1, 'offline']]));
  t.same([...new Set(delta.changes.map((c) => `${c.table} ${c.kind}`))].sort(), ['Logical_Flow delete', 'Logical_Flow insert', 'Service_Monitor modify'], 'one flow replaced, one row changed');
  for (const [node, s] of Object.entries(northd.stats())) t.equal(s.recomputes, before[node]?.recomputes, `${node} did not recompute`);
  t.same(northd.setServiceMonitorStatus(fx.db, new Map([['00000000-0000-4000-8000-0000000000ff', 'offline']])).changes, [], 'a report for no row changes nothing');
  t.notOk(northd.serviceMonitorStatus().has('00000000-0000-4000-8000-0000000000ff'), 'and is not kept');
  t.same(northd.setServiceMonitorStatus(fx.db, new Map([[vm1, 'offline']])).changes, [], 'the same report again changes nothing');
  for (const row of northd.view().get('Service_Monitor')?.values() ?? []) {
    const { _uuid, _version, ...columns } = row;
    t.equal(_version, contentVersion(columns), `Service_Monitor ${_uuid}: _version is the hash of its columns`);
  }
});
