// Goal: the desired-flow table's rules for keys several sources want (conjunctions merged,
// allow beats drop beats conjunction, ties by source name, whatever the order of arrival), its
// change tracking, its canonical register matches; the id spaces; the ct_lb group description
// reader. Method: small hand-made flows; orders of arrival permuted.

import t from 'tap';
import { formatFlow } from '../../agent/compile/index.js';
import { FlowTable, canonicalMatch, flowTableLimits } from '../../agent/flows/flow-table.js';
import { parseGroupDescription } from '../../agent/flows/group-desc.js';
import { IdSpace } from '../../agent/flows/id-space.js';
import type { FlowSpec, MaskedValue, OfAction } from '../../agent/openflow/types.js';

const ex = (v: bigint, bits: number): MaskedValue => ({ value: v, mask: (1n << BigInt(bits)) - 1n });
const m = (o: Record<string, MaskedValue>): Map<string, MaskedValue> => new Map(Object.entries(o));
const f = (actions: OfAction[], cookie = 1n, match = m({ metadata: ex(1n, 64) })): FlowSpec => ({ table: 10, priority: 5, match, actions, cookie });
const conj = (id: number, clause: number): OfAction => ({ kind: 'conjunction', id, clause, nClauses: 2 });
const out = (p: number): OfAction => ({ kind: 'output', port: p });

function permutations<T>(xs: T[]): T[][] {
  if (xs.length <= 1) return [xs];
  return xs.flatMap((x, i) => permutations([...xs.slice(0, i), ...xs.slice(i + 1)]).map((p) => [x, ...p]));
}

t.test('one key, several sources: the same winner in any order of arrival', async (t) => {
  const contributions: [string, FlowSpec][] = [
    ['lf:b', f([conj(7, 0)], 0n)], ['lf:a', f([conj(3, 1)], 0n)], ['lf:c', f([], 3n)], ['lf:d', f([out(2)], 4n)], ['lf:e', f([out(9)], 5n)],
  ];
  const results = new Set<string>();
  for (const order of permutations(contributions)) {
    const table = new FlowTable();
    for (const [src, flow] of order) table.setSource(src, [flow]);
    const [[k, eff]] = [...table.flows()] as [[string, FlowSpec]];
    results.add(`${formatFlow(eff, { cookie: true })} refs=${table.refs(k).join(',')}`);
  }
  t.same([...results], ['table=10, priority=5, cookie=0x4, metadata=0x1 actions=output:2 refs=lf:a,lf:b,lf:c,lf:d,lf:e'],
    'allow wins, the smallest source name among allows');
  const table = new FlowTable();
  for (const [src, flow] of contributions) table.setSource(src, [flow]);
  table.removeSource('lf:d');
  table.removeSource('lf:e');
  t.equal(formatFlow(table.flow([...table.keys()][0] as string) as FlowSpec), 'table=10, priority=5, metadata=0x1 actions=drop', 'then drop');
  table.removeSource('lf:c');
  t.equal(formatFlow(table.flow([...table.keys()][0] as string) as FlowSpec), 'table=10, priority=5, metadata=0x1 actions=conjunction(3,2/2),conjunction(7,1/2)',
    'then the conjunctions, merged and sorted');
  table.removeSource('lf:a');
  table.removeSource('lf:b');
  t.equal(table.size, 0);
});

t.test('changes are tracked by key; an identical replacement changes nothing', async (t) => {
  const table = new FlowTable();
  t.equal(table.setSource('pb:1', [f([out(1)]), f([out(2)], 1n, m({ metadata: ex(2n, 64) }))]), true);
  t.equal(table.takeDirty().length, 2);
  t.equal(table.setSource('pb:1', [f([out(1)]), f([out(2)], 1n, m({ metadata: ex(2n, 64) }))]), false, 'same flows: no change');
  t.same(table.takeDirty(), []);
  table.setSource('pb:1', [f([out(1)])]);
  t.equal(table.takeDirty().length, 1, 'only the key that went');
  table.markAllDirty();
  t.equal(table.takeDirty().length, 1);
});

t.test('xreg and xxreg matches are kept as the 32-bit registers the switch reports', async (t) => {
  const c = canonicalMatch(m({ xxreg0: ex(0xfd000000000000000000000000000009n, 128), xreg3: { value: 5n, mask: 0xffffn }, metadata: ex(1n, 64) }));
  t.same([...c.entries()].map(([k, v]) => `${k}=${v.value.toString(16)}/${v.mask.toString(16)}`).sort(),
    ['metadata=1/ffffffffffffffff', 'reg0=fd000000/ffffffff', 'reg1=0/ffffffff', 'reg2=0/ffffffff', 'reg3=9/ffffffff', 'reg7=5/ffff'].sort());
  const plain = m({ reg0: ex(1n, 32) });
  t.equal(canonicalMatch(plain), plain, 'a match without wide registers is returned as is');
  const table = new FlowTable();
  table.setSource('a', [f([out(1)], 1n, m({ xxreg0: ex(9n, 128) }))]);
  table.setSource('b', [f([out(2)], 1n, m({ reg0: ex(0n, 32), reg1: ex(0n, 32), reg2: ex(0n, 32), reg3: ex(9n, 32) }))]);
  t.equal(table.size, 1, 'both spellings are one flow');
});

t.test('a key wanted by one source, then two, then one again; equal match values held as one object, within a bound', async (t) => {
  const table = new FlowTable();
  const a = f([out(1)], 1n);
  table.setSource('lf:a', [a]);
  const [k] = [...table.keys()] as [string];
  t.same(table.refs(k), ['lf:a']);
  t.equal(table.flow(k), a, 'one source: its own flow, as given');
  table.setSource('lf:b', [f([out(2)], 2n)]);
  t.same(table.refs(k), ['lf:a', 'lf:b']);
  t.equal(table.flow(k)?.cookie, 1n, 'two: the smaller source name among allows');
  table.removeSource('lf:a');
  t.same(table.refs(k), ['lf:b']);
  t.equal(table.flow(k)?.cookie, 2n, 'back to one: the one left');
  table.removeSource('lf:b');
  t.equal(table.size, 0, 'none: the key is gone');

  // Two flows whose matches hold equal values made as different objects.
  const x = f([out(1)], 1n, m({ metadata: ex(5n, 64), reg14: ex(3n, 32) }));
  const y: FlowSpec = { ...f([out(2)], 2n, m({ metadata: ex(5n, 64), reg14: ex(4n, 32) })), table: 11 };
  table.setSource('lf:x', [x]);
  table.setSource('lf:y', [y]);
  const held = [...table.flows()].map(([, fl]) => fl);
  t.equal(held[0]?.match.get('metadata'), held[1]?.match.get('metadata'), 'metadata=5: one object for both');
  t.not(held[0]?.match.get('reg14'), held[1]?.match.get('reg14'), 'different values stay different');
  t.same(held.map((fl) => formatFlow(fl, {})), [formatFlow(x, {}), formatFlow(y, {})], 'and the flows read the same');

  // More distinct values than the bound: the table starts over, flows stay whole.
  const many = Array.from({ length: flowTableLimits.sharedValuesMax + 10 }, (_, i) => f([out(1)], 1n, m({ metadata: ex(BigInt(i + 100), 64) })));
  table.setSource('lf:many', many.map((fl, i) => ({ ...fl, priority: i % 100, table: 20 + Math.floor(i / 100) % 200 })));
  const mine = ex(BigInt(flowTableLimits.sharedValuesMax + 105), 64);
  const again = f([out(1)], 1n, m({ metadata: mine }));
  table.setSource('lf:again', [{ ...again, table: 250 }]);
  const late = table.flowsOf('lf:many')[flowTableLimits.sharedValuesMax + 5];
  t.equal(late?.match.get('metadata')?.value, BigInt(flowTableLimits.sharedValuesMax + 105));
  t.equal(table.flowsOf('lf:again')[0]?.match.get('metadata'), late?.match.get('metadata'), 'a value seen after the start over is shared again');
  t.not(table.flowsOf('lf:again')[0]?.match.get('metadata'), mine, 'not the object it came with');
  t.equal(again.match.get('metadata'), late?.match.get('metadata'), 'replaced in the match it came in');
  t.equal(table.flowsOf('lf:many')[0]?.match.get('metadata')?.value, 100n, 'values shared before it are kept by their flows');
});

t.test('id spaces: the same owner gets the same ids; collisions probe upwards; released ids are reused', async (t) => {
  const s = new IdSpace(1000, 1100, 50);
  const a = s.allocate('lf-a|dp1', 3) as number;
  t.ok(a >= 1000 && a + 2 <= 1100);
  t.equal(s.allocate('lf-a|dp1', 3), a, 'stable for its owner');
  const ids = new Set<number>();
  for (let i = 0; i < 15; i++) {
    const first = s.allocate(`o${i}`, 3) as number;
    for (let k = 0; k < 3; k++) ids.add(first + k);
  }
  t.equal(ids.size, 45, 'no two owners share an id');
  t.notOk([a, a + 1, a + 2].some((x) => ids.has(x)));
  t.equal(s.allocate('one-too-many', 3), undefined, 'full');
  s.release('lf-a|dp1');
  t.equal(s.allocate('one-too-many', 3) !== undefined, true);
  const fresh = new IdSpace(1000, 1100, 50);
  t.equal(fresh.allocate('lf-a|dp1', 3), a, 'a fresh space gives the owner the same ids (a restarted agent)');
});

t.test('ct_lb group descriptions read back into group specs', async (t) => {
  const desc = 'type=select,selection_method=dp_hash,bucket=bucket_id=0,weight:100,actions=ct(nat(dst=10.0.0.1:80),commit,table=21,zone=NXM_NX_REG13[0..15],'
    + 'exec(set_field:2/2->ct_mark)),bucket=bucket_id=1,weight:100,actions=ct(nat(dst=[fd00::2]:8080),commit,table=21,zone=NXM_NX_REG11[0..15],'
    + 'exec(set_field:2/2->ct_mark,set_field:4/4->ct_mark))';
  const g = parseGroupDescription(7, desc);
  t.same(g, {
    groupId: 7, type: 'select', selectionMethod: 'dp_hash', buckets: [
      { weight: 100, actions: [{ kind: 'ct', commit: true, table: 21, zone: { field: 'reg13', start: 0, end: 15 }, nat: { kind: 'dst', addrMin: '10.0.0.1', portMin: 80 },
        exec: [{ kind: 'set_field', field: 'ct_mark', value: 2n, mask: 2n }] }] },
      { weight: 100, actions: [{ kind: 'ct', commit: true, table: 21, zone: { field: 'reg11', start: 0, end: 15 }, nat: { kind: 'dst', addrMin: 'fd00::2', portMin: 8080 },
        exec: [{ kind: 'set_field', field: 'ct_mark', value: 2n, mask: 2n }, { kind: 'set_field', field: 'ct_mark', value: 4n, mask: 4n }] }] },
    ],
  });
  const h = parseGroupDescription(8, 'type=select,selection_method=hash,fields(ip_src,tcp_dst),bucket=bucket_id=0,weight:100,actions=ct(nat(dst=10.0.0.1),commit,table=21,zone=NXM_NX_REG13[0..15],exec())');
  t.match(h, { selectionMethod: 'hash', fields: ['ipv4_src', 'tcp_dst'] });
  t.match(parseGroupDescription(9, 'type=all,bucket=actions=output:1'), { error: /not a select group/ });
  t.match(parseGroupDescription(9, 'type=select,selection_method=hash,fields(bogus),bucket=x'), { error: /unknown selection field bogus/ });
});
