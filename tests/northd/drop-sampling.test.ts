// Drop sampling (NB_Global options debug_drop_collector_set and debug_drop_domain_id,
// northd/drop-sampling.ts): on a topology with drops at most of 23.03's sites, turning sampling
// on, changing it, refusing a domain (the drops' texts emptied, as in 23.03) and turning it off
// rewrites exactly the flows that drop and recomputes no node; the setting kept through a
// refused domain survives history() and a recompute given it.
import t from 'tap';
import type { Test } from 'tap';
import type { RowChange } from '../../ovsdb/index.js';
import type * as sb from '../../ovsdb/rows/sb.js';
import type { Northd, SbDelta, SbView } from '../../northd/index.js';
import { createNorthd } from '../../northd/index.js';
import { EMPTIED_DROPS, PLAIN_DROPS, checkDropSampling, dropActionsOf } from '../../northd/drop-sampling.js';
import { addLrp, addLsp, byUuid, map, nbFixture, set, viewDifference } from './nb-fixture.js';
import type { NbFixture } from './nb-fixture.js';

const SAMPLE_123_5 = 'sample(probability=65535,collector_set=123,obs_domain=5,obs_point=$cookie); /* drop */';

t.test('the action texts, as debug.c prints them', async (t) => {
  t.same(dropActionsOf({ collectorSet: 0, domain: 0 }), PLAIN_DROPS, 'off: drop; and /* drop */');
  t.same(dropActionsOf({ collectorSet: 123, domain: 5 }), { drop: SAMPLE_123_5, implicit: SAMPLE_123_5 }, 'on: one sample action for both');
  t.same(dropActionsOf({ collectorSet: 123, domain: 5 }, true), EMPTIED_DROPS, 'on, with the options naming a refused domain: no text');
  t.same(dropActionsOf({ collectorSet: 0, domain: 0 }, true), PLAIN_DROPS, 'off, with a refused domain: drop; as ever');
  t.equal(dropActionsOf({ collectorSet: 0xffffffff, domain: 254 }).drop, 'sample(probability=65535,collector_set=-1,obs_domain=254,obs_point=$cookie); /* drop */',
    'a collector set above 2^31 - 1 printed with %d');
  t.same(checkDropSampling({ collectorSet: 0, domain: 9 }), { collectorSet: 0, domain: 0 }, 'off whatever the domain');
  t.throws(() => checkDropSampling({ collectorSet: 1, domain: 255 }), /not a setting/, 'a refused domain is no setting in force');
  t.throws(() => checkDropSampling({ collectorSet: 2 ** 32, domain: 0 }), /not a setting/, 'nor a collector set beyond 32 bits');
});

/** Switches, a router with a gateway, ACLs, port security, load balancers, NAT, routes, multicast. */
function topology(): NbFixture {
  const fx = nbFixture();
  fx.run([{ op: 'insert', table: 'NB_Global', row: {} }]);
  fx.run([
    { op: 'insert', table: 'Logical_Switch', row: { name: 'sw1', other_config: map({ mcast_snoop: 'true' }) } },
    { op: 'insert', table: 'Logical_Switch', row: { name: 'sw2' } },
    { op: 'insert', table: 'Logical_Switch', row: { name: 'ext' } },
    { op: 'insert', table: 'Logical_Router', row: { name: 'lr0', options: map({ mcast_relay: 'true' }) } },
  ]);
  fx.run([
    ...addLrp('lr0', 'lr0-sw1', '00:00:00:00:ff:01', ['10.0.1.1/24', 'fd00:1::1/64']),
    ...addLrp('lr0', 'lr0-sw2', '00:00:00:00:ff:02', ['10.0.2.1/24']),
    ...addLrp('lr0', 'lr0-ext', '00:00:00:00:ff:03', ['172.16.0.1/24'], { options: map({ mcast_flood: 'true' }) }),
  ]);
  for (const [sw, lrp] of [['sw1', 'lr0-sw1'], ['sw2', 'lr0-sw2'], ['ext', 'lr0-ext']] as const) {
    fx.run(addLsp(sw, `${sw}-lr0`, { type: 'router', addresses: set(['router']), options: map({ 'router-port': lrp }) }));
  }
  fx.run([
    ...addLsp('sw1', 'vm1', { addresses: set(['00:00:00:00:01:0a 10.0.1.10']), port_security: set(['00:00:00:00:01:0a 10.0.1.10']) }),
    ...addLsp('sw1', 'off', { addresses: set(['00:00:00:00:01:0b 10.0.1.11']), enabled: set([false]) }),
    ...addLsp('sw2', 'vm2', { addresses: set(['00:00:00:00:02:0a 10.0.2.10']) }),
    ...addLsp('ext', 'ln', { type: 'localnet', addresses: set(['unknown']), options: map({ network_name: 'phys' }) }),
    ...addLsp('ext', 'bm', { type: 'external', addresses: set(['00:00:00:00:03:0a 172.16.0.10']) }),
  ]);
  fx.run([
    { op: 'insert', table: 'ACL', 'uuid-name': 'a1', row: { priority: 1001, direction: 'to-lport', match: 'ip4 && tcp.dst == 80', action: 'allow-related' } },
    { op: 'insert', table: 'ACL', 'uuid-name': 'a2', row: { priority: 1002, direction: 'from-lport', match: 'ip4.src == 10.0.1.66', action: 'drop', log: true } },
    { op: 'insert', table: 'ACL', 'uuid-name': 'a3', row: { priority: 1003, direction: 'from-lport', match: 'ip4.src == 10.0.2.66', action: 'drop' } },
    { op: 'update', table: 'Logical_Switch', where: [['name', '==', 'sw1']], row: { acls: set([['named-uuid', 'a1'], ['named-uuid', 'a2']]) } },
    { op: 'update', table: 'Logical_Switch', where: [['name', '==', 'sw2']], row: { acls: set([['named-uuid', 'a3']]) } },
    { op: 'insert', table: 'Load_Balancer', 'uuid-name': 'lb', row: { name: 'lb0', vips: map({ '10.0.0.100:80': '10.0.2.10:80', '10.0.0.101:80': '' }) } },
    { op: 'update', table: 'Logical_Switch', where: [['name', '==', 'sw2']], row: { load_balancer: set([['named-uuid', 'lb']]) } },
    { op: 'insert', table: 'Logical_Router_Static_Route', 'uuid-name': 'r1', row: { ip_prefix: '192.168.0.0/16', nexthop: 'discard' } },
    { op: 'insert', table: 'Logical_Router_Policy', 'uuid-name': 'p1', row: { priority: 100, match: 'ip4.src == 10.0.1.66', action: 'drop' } },
    { op: 'insert', table: 'NAT', 'uuid-name': 'n1', row: { type: 'snat', external_ip: '172.16.0.100', logical_ip: '10.0.1.0/24' } },
    {
      op: 'update', table: 'Logical_Router', where: [['name', '==', 'lr0']],
      row: { static_routes: set([['named-uuid', 'r1']]), policies: set([['named-uuid', 'p1']]), nat: set([['named-uuid', 'n1']]), load_balancer: set([['named-uuid', 'lb']]) },
    },
  ]);
  return fx;
}

function flows(view: SbView): sb.Logical_Flow[] {
  return [...(view.get('Logical_Flow')?.values() ?? [])] as unknown as sb.Logical_Flow[];
}

/**
 * A flow whose action ends in the drop action `text`: sampled, emptied (a drop ACL keeps its
 * ct_commit and log), or plain (PLAIN_DROPS.drop: "drop;", or an ACL's implicit "/* drop *\/";
 * not commit_lb_aff's, which learns and is no drop site).
 */
function drops(f: sb.Logical_Flow, text: string): boolean {
  const a = f.actions;
  if (text === EMPTIED_DROPS.drop) return a === '' || a.endsWith('verdict=drop); ') || a.endsWith('ct_mark.blocked = 1; }; ');
  if (text !== PLAIN_DROPS.drop) return a === text || a.endsWith(` ${text}`);
  return a === 'drop;' || a.endsWith(' drop;') || (a.endsWith(PLAIN_DROPS.implicit) && !a.includes('sample(') && !a.includes('commit_lb_aff'));
}

function setOptions(fx: NbFixture, northd: Northd, options: Record<string, string>): SbDelta {
  const g = [...fx.db.rows('NB_Global').keys()][0] as string;
  return northd.apply(fx.db, fx.run([{ op: 'update', table: 'NB_Global', where: byUuid(g), row: { options: map(options) } }]));
}

/**
 * Checks a change of the options from drop texts `from` to `to`: only flows that drop went and
 * came (every one that dropped as before), nothing but them and SB_Global changed, and the view
 * equals a recompute given the setting in force.
 */
function checkChange(t: Test, fx: NbFixture, northd: Northd, label: string, delta: SbDelta, from: string, to: string): void {
  const lflowChanges = delta.changes.filter((c) => c.table === 'Logical_Flow') as RowChange[];
  t.same(delta.changes.filter((c) => c.table !== 'Logical_Flow' && c.table !== 'SB_Global').map((c) => `${c.table} ${c.kind}`), [], `${label}: no rows but flows and SB_Global`);
  const bad = lflowChanges.filter((c) => (c.kind === 'delete' ? !drops(c.old as unknown as sb.Logical_Flow, from) : c.kind === 'insert' ? !drops(c.new as unknown as sb.Logical_Flow, to) : true));
  t.same(bad.map((c) => `${c.kind} ${String((c.kind === 'delete' ? c.old : c.new)['actions'])}`), [], `${label}: only flows that drop go and come`);
  t.ok(lflowChanges.length > 0, `${label}: ${lflowChanges.length} flow changes`);
  t.same(flows(northd.view()).filter((f) => drops(f, from)).map((f) => f.actions), [], `${label}: no flow drops as before`);
  const diff = viewDifference(northd.view(), createNorthd().recompute(fx.db, undefined, { dropSampling: northd.dropSampling() }));
  t.equal(diff, undefined, `${label}: incremental equals a recompute`);
}

t.test('turning sampling on, changing it and off rewrites the flows that drop and no other', async (t) => {
  const fx = topology();
  const northd = createNorthd();
  northd.apply(fx.db, { changes: [] });
  const plain = flows(northd.view()).filter((f) => drops(f, PLAIN_DROPS.drop));
  t.ok(plain.length >= 40, `${plain.length} flows drop`);
  const stagesOf = (fs: readonly sb.Logical_Flow[]): string[] => [...new Set(fs.map((f) => f.external_ids.get('stage-name') ?? ''))].sort();
  t.comment(`stages with drops: ${stagesOf(plain).join(' ')}`);
  const statsBefore = northd.stats();
  const check = (label: string, delta: SbDelta, from: string, to: string): void => checkChange(t, fx, northd, label, delta, from, to);
  check('on', setOptions(fx, northd, { debug_drop_collector_set: '123', debug_drop_domain_id: '5' }), PLAIN_DROPS.drop, SAMPLE_123_5);
  const sampled = flows(northd.view()).filter((f) => drops(f, SAMPLE_123_5));
  t.equal(sampled.length, plain.length, 'every flow that dropped samples now');
  t.same(stagesOf(sampled), stagesOf(plain), 'in the same stages');
  const other = 'sample(probability=65535,collector_set=7,obs_domain=0,obs_point=$cookie); /* drop */';
  check('another set, the default domain', setOptions(fx, northd, { debug_drop_collector_set: '7' }), SAMPLE_123_5, other);
  check('off', setOptions(fx, northd, { debug_drop_collector_set: '0', debug_drop_domain_id: '7' }), other, PLAIN_DROPS.drop);
  t.same(northd.stats(), Object.fromEntries(Object.entries(statsBefore).map(([n, s]) => [n, { recomputes: s.recomputes, incrementalRuns: northd.stats()[n]?.incrementalRuns }])),
    'no node recomputed');
});

t.test('a refused domain keeps the setting in force (its drops emptied), through history() and a recompute given it', async (t) => {
  const fx = topology();
  const northd = createNorthd();
  northd.apply(fx.db, { changes: [] });
  const dropCount = flows(northd.view()).filter((f) => drops(f, PLAIN_DROPS.drop)).length;
  setOptions(fx, northd, { debug_drop_collector_set: '123', debug_drop_domain_id: '5' });
  t.equal(northd.history().dropSampling, undefined, 'a valid domain: the options say what is in force, the history need not');
  const statsBefore = northd.stats();

  // Domain 255: refused. The setting in force stays, and as in ovn-northd 23.03 every drop loses
  // its text (it drops without sampling); so it stays with the collector set turned off beside
  // another refused domain.
  checkChange(t, fx, northd, 'domain 255', setOptions(fx, northd, { debug_drop_collector_set: '123', debug_drop_domain_id: '255' }), SAMPLE_123_5, EMPTIED_DROPS.drop);
  t.same(northd.dropSampling(), { collectorSet: 123, domain: 5 }, 'the setting in force is kept');
  t.same(northd.history().dropSampling, [123, 5], 'and the history carries it');
  t.equal(flows(northd.view()).filter((f) => drops(f, EMPTIED_DROPS.drop)).length, dropCount, 'every drop emptied');
  const offRefused = setOptions(fx, northd, { debug_drop_collector_set: '0', debug_drop_domain_id: '4096' });
  t.same(offRefused.changes.filter((c) => c.table === 'Logical_Flow'), [], 'collector set 0 with a refused domain: refused too, no flow changes');
  t.same(northd.dropSampling(), { collectorSet: 123, domain: 5 }, 'still in force');

  // A northd started from the history makes the same view; one without it drops plainly.
  const restored = createNorthd(northd.history());
  restored.apply(fx.db, { changes: [] });
  t.equal(viewDifference(restored.view(), northd.view()), undefined, 'restored from the history: the same view');
  t.same(restored.history(), northd.history(), 'and the same history');
  const fresh = createNorthd();
  fresh.apply(fx.db, { changes: [] });
  t.equal(flows(fresh.view()).filter((f) => drops(f, PLAIN_DROPS.drop)).length, dropCount, 'a fresh start with a refused domain drops plainly, as ovn-northd started then');
  t.equal(fresh.history().dropSampling, undefined);
  t.equal(viewDifference(northd.view(), northd.recompute(fx.db, undefined, { dropSampling: northd.dropSampling() })), undefined, 'a recompute given the setting in force agrees');
  t.not(viewDifference(northd.view(), northd.recompute(fx.db)), undefined, 'one not given it does not');

  // A valid domain again replaces it; the history needs nothing then.
  checkChange(t, fx, northd, 'domain 254 with collector set 0', setOptions(fx, northd, { debug_drop_collector_set: '0', debug_drop_domain_id: '254' }), EMPTIED_DROPS.drop, PLAIN_DROPS.drop);
  t.same(northd.dropSampling(), { collectorSet: 0, domain: 0 }, 'domain 254 is taken: collector set 0 turns sampling off');
  t.equal(northd.history().dropSampling, undefined);
  // A domain refused while sampling is off changes nothing, and needs no history.
  const refusedOff = setOptions(fx, northd, { debug_drop_collector_set: '9', debug_drop_domain_id: '300' });
  t.same(refusedOff.changes.filter((c) => c.table === 'Logical_Flow'), [], 'refused while off: no flow changes');
  t.equal(northd.history().dropSampling, undefined, 'and nothing to carry');
  t.same(northd.stats(), Object.fromEntries(Object.entries(statsBefore).map(([n, s]) => [n, { recomputes: s.recomputes, incrementalRuns: northd.stats()[n]?.incrementalRuns }])),
    'no node recomputed');
  // Values that are not numbers read as 0 (smap_get_uint): off, and a domain of 0.
  setOptions(fx, northd, { debug_drop_collector_set: '42', debug_drop_domain_id: 'x' });
  t.same(northd.dropSampling(), { collectorSet: 42, domain: 0 }, 'a domain that is no number is 0');
  setOptions(fx, northd, { debug_drop_collector_set: '-1', debug_drop_domain_id: '3' });
  t.same(northd.dropSampling(), { collectorSet: 0, domain: 0 }, 'a negative collector set is no uint: 0, off');
  // NB_Global deleted: no options, off.
  setOptions(fx, northd, { debug_drop_collector_set: '42' });
  const g = [...fx.db.rows('NB_Global').keys()][0] as string;
  northd.apply(fx.db, fx.run([{ op: 'delete', table: 'NB_Global', where: byUuid(g) }]));
  t.same(northd.dropSampling(), { collectorSet: 0, domain: 0 }, 'without NB_Global: off');
});
