// SbStore's member indexes (port → multicast groups, port name → port groups, datapath →
// datapath groups) after random inserts, member changes and deletes equal the same lookups
// computed naively from the rows the store holds. Member sets come sorted (as OVSDB keeps them:
// the store's merge walk) or not (its fallback), and some changes carry the set difference the
// stream applied (SbRowChange.diffs): used when made from the very row the store holds, ignored
// (even when wrong) when made from another. The members each update reports as come and gone
// equal the naive set differences.
import t from 'tap';
import { SbStore } from '../../agent/flows/sb-store.js';
import type { SbRowChange } from '../../agent/sb-source.js';
import type { Row } from '../../ovsdb/index.js';

/** A small seeded PRNG (mulberry32): the sequence replays from the seed. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

const MEMBERS = Array.from({ length: 12 }, (_, i) => `m${i}`);
const ROWS = 5;
type Kind = 'Multicast_Group' | 'Port_Group' | 'Logical_DP_Group';
const KINDS: readonly Kind[] = ['Multicast_Group', 'Port_Group', 'Logical_DP_Group'];
const column: Record<Kind, string> = { Multicast_Group: 'ports', Port_Group: 'ports', Logical_DP_Group: 'datapaths' };

function row(kind: Kind, i: number, members: readonly string[], version: number): Row {
  const r: Record<string, unknown> = { _uuid: `${kind}-${i}`, _version: `v${version}`, [column[kind]]: [...members] };
  if (kind === 'Multicast_Group') Object.assign(r, { datapath: 'dp0', name: `mc${i}`, tunnel_key: 32768 + i });
  if (kind === 'Port_Group') r.name = `pg${i}`;
  return r as unknown as Row;
}

function lookup(store: SbStore, kind: Kind, member: string): string[] {
  const s = kind === 'Multicast_Group' ? store.multicastGroupsOfPort(member) : kind === 'Port_Group' ? store.portGroupsOfPort(member) : store.groupsOfDatapath(member);
  return [...s].sort();
}

t.test('member indexes follow inserts, member changes and deletes', async (t) => {
  for (let seed = 1; seed <= 50; seed++) {
    const rand = prng(seed);
    const store = new SbStore();
    const live = new Map<string, { kind: Kind; members: string[] }>();
    const held = new Map<string, Row>();
    let version = 0;
    for (let step = 0; step < 60; step++) {
      const changes: SbRowChange[] = [];
      const before = new Map([...live].map(([u, v]) => [u, v.members]));
      for (let c = 1 + Math.floor(rand() * 3); c > 0; c--) {
        const kind = KINDS[Math.floor(rand() * KINDS.length)] as Kind;
        const i = Math.floor(rand() * ROWS);
        const uuid = `${kind}-${i}`;
        if (changes.some((x) => x.uuid === uuid)) continue;
        if (live.has(uuid) && rand() < 0.25) {
          changes.push({ table: kind, uuid });
          live.delete(uuid);
          held.delete(uuid);
          continue;
        }
        const members = MEMBERS.filter(() => rand() < 0.4);
        if (rand() < 0.7) members.sort();
        const r = row(kind, i, members, ++version);
        const base = held.get(uuid);
        const was = live.get(uuid)?.members;
        const roll = rand();
        if (base !== undefined && was !== undefined && roll < 0.3) {
          // The difference the stream would have applied to the held row.
          const diff = { added: members.filter((m) => !was.includes(m)).sort(), removed: was.filter((m) => !members.includes(m)).sort() };
          changes.push({ table: kind, uuid, row: r, diffs: { base, columns: new Map([[column[kind], diff]]) } });
        } else if (base !== undefined && roll < 0.45) {
          // One made from a row the store does not hold (steps coalesced): must not be used.
          changes.push({ table: kind, uuid, row: r, diffs: { base: { ...base } as Row, columns: new Map([[column[kind], { added: ['bogus'], removed: [] }]]) } });
        } else changes.push({ table: kind, uuid, row: r });
        live.set(uuid, { kind, members });
        held.set(uuid, r);
      }
      const deltas = store.apply({ reset: false, fromRevision: step, toRevision: step + 1, changes });
      for (const d of deltas) {
        const was = before.get(d.uuid);
        const now = live.get(d.uuid)?.members;
        if (was === undefined || now === undefined) continue;
        const want = { added: now.filter((m) => !was.includes(m)).sort(), removed: was.filter((m) => !now.includes(m)).sort() };
        const got = { added: [...d.members?.added ?? ['(none)']].sort(), removed: [...d.members?.removed ?? ['(none)']].sort() };
        if (JSON.stringify(got) !== JSON.stringify(want)) {
          t.fail(`seed ${seed} step ${step}: ${d.uuid} reported ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
          return;
        }
      }
      for (const kind of KINDS) {
        for (const m of MEMBERS) {
          const want = [...live].filter(([, v]) => v.kind === kind && v.members.includes(m)).map(([u]) => u).sort();
          if (JSON.stringify(lookup(store, kind, m)) !== JSON.stringify(want)) {
            t.fail(`seed ${seed} step ${step}: ${kind} of ${m} is ${JSON.stringify(lookup(store, kind, m))}, want ${JSON.stringify(want)}`);
            return;
          }
        }
      }
    }
  }
  t.pass('50 seeds × 60 steps: every member lookup matched');
});
