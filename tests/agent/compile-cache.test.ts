// Goal: agents that share a compile cache but decoded the SB rows on their own (each agent its
// own row objects, as agents on streams of their own have) find each other's compiles, and
// install exactly what an agent compiling alone installs, before and after a row changes; the
// cache holds at most two generations of entries.
// Method: the small topology of flows-fixtures.ts, copied per agent with structuredClone; the
// engine's flow table of a caching agent compared with one of an agent without the cache.

import t from 'tap';
import { AgentFlows } from '../../agent/flows/agent-flows.js';
import { SharedCompileCache, type CachedCompile } from '../../agent/flows/compile-cache.js';
import { deepEqual } from '../../agent/flows/flow-table.js';
import { MemorySwitch } from '../../agent/flows/memory-switch.js';
import type { SbUpdate } from '../../agent/sb-source.js';
import type { Row } from '../../ovsdb/index.js';
import { difference, ids, logicalFlow, resetOf, smallTopology, smallView, U } from './flows-fixtures.js';

const flows = (): [string, Row][] => [
  ['Logical_Flow', logicalFlow(U(1, 0x1f), ids.sw0, 'ingress', 0, 50, 'inport == "vif1"', 'next;')],
  ['Logical_Flow', logicalFlow(U(2, 0x1f), ids.sw0, 'ingress', 25, 50, 'eth.dst == 00:00:00:00:00:03', 'outport = "vif3"; output;')],
  ['Logical_Flow', logicalFlow(U(3, 0x1f), ids.sw0, 'egress', 9, 100, 'outport == "vif2" && ip4.src == {10.0.0.1, 10.0.0.2}', 'output;')],
  ['Logical_Flow', logicalFlow(U(4, 0x1f), ids.lr0, 'ingress', 10, 90, 'ip4.dst == 10.0.0.1', 'ip.ttl--; next;')],
];

t.test('agents with rows of their own share compiles, and match an agent compiling alone', async (t) => {
  const reset = resetOf([...smallTopology(), ...flows()]);
  const cache = new SharedCompileCache();
  const sharing = Array.from({ length: 4 }, () => new AgentFlows(new MemorySwitch(), { sharedCache: cache }));
  const alone = new AgentFlows(new MemorySwitch());
  // Each agent applies its own copy: no row object is shared between them.
  const copy = (u: SbUpdate): SbUpdate => structuredClone(u);
  t.same((await alone.apply(copy(reset), smallView())).errors, []);
  for (const a of sharing) t.same((await a.apply(copy(reset), smallView())).errors, []);
  const { hits, misses } = cache.counters;
  t.ok(misses > 0, `the first agent compiled (${misses} misses)`);
  t.equal(hits, misses * 3, 'the other three were served every compile the first made');
  for (const [i, a] of sharing.entries()) t.equal(difference(a.engine, alone.engine), undefined, `agent ${i} installs what the agent alone installs`);

  // A row changed in place (same UUID, new content, so a new _version) is compiled again,
  // once, and every agent takes the new result.
  const changed = logicalFlow(U(2, 0x1f), ids.sw0, 'ingress', 25, 50, 'eth.dst == 00:00:00:00:00:03', 'drop;');
  const update: SbUpdate = { reset: false, fromRevision: 1, toRevision: 2, changes: [{ table: 'Logical_Flow', uuid: changed._uuid, row: changed }] };
  const before = new Map([...alone.engine.table.flows()]);
  t.same((await alone.apply(copy(update), smallView())).errors, []);
  const missesBefore = cache.counters.misses;
  for (const a of sharing) t.same((await a.apply(copy(update), smallView())).errors, []);
  t.equal(cache.counters.misses - missesBefore, 1, 'the changed row compiled once for the four');
  for (const [i, a] of sharing.entries()) t.equal(difference(a.engine, alone.engine), undefined, `after the change, agent ${i} installs what the agent alone installs`);
  const after = [...alone.engine.table.flows()];
  t.ok(after.some(([k, f]) => !deepEqual(before.get(k), f)), 'the change changed what is installed');
});

t.test('the cache keeps at most two generations', (t) => {
  const value: CachedCompile = { flows: [], conjunctionsN: 0 };
  const cache = new SharedCompileCache(3);
  const row = (n: number): { _uuid: string } => ({ _uuid: U(n, 0x1f) });
  for (let n = 1; n <= 3; n++) cache.set(row(n), 'k', value);
  t.equal(cache.size, 3);
  cache.set(row(4), 'k', value); // the first generation is full: it becomes the previous one
  t.equal(cache.size, 4);
  t.equal(cache.get(row(1), 'k'), value, 'a previous-generation entry is still found...');
  for (let n = 5; n <= 6; n++) cache.set(row(n), 'k', value);
  // Current now holds 4, 1 (moved up), 5; adding 6 rotates again: 2 and 3 are dropped.
  t.equal(cache.get(row(2), 'k'), undefined, 'an entry nobody asked for leaves after two generations');
  t.equal(cache.get(row(1), 'k'), value, '...and, asked for, moved into the current one, it stays');
  t.ok(cache.size <= 6, `never more than two generations (${cache.size})`);
  t.equal(cache.get(row(1), 'other'), undefined, 'another signature of the same row is another entry');
  t.end();
});
