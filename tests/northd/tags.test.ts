// Logical_Switch_Port.tag (northd/tags.ts). The property: after every transaction of a random
// (seeded) sequence of nested container ports (parents, tag_request, a client's own tag writes,
// deletions), the writes asked for from the transaction's delta leave nothing for a pass of
// ovn-northd's rules over every port to change, and no tag given is one a sibling held.
import t from 'tap';
import type { Database } from '../../ovsdb/index.js';
import { transact } from '../../ovsdb/index.js';
import type * as nb from '../../ovsdb/rows/nb.js';
import { tagWrites } from '../../northd/tags.js';
import { Rng } from '../helpers/seeded-rng.js';
import { addLsp, byUuid, nbFixture, set } from './nb-fixture.js';

const SEQUENCES = Number(process.env.OVNTS_LONG !== undefined ? 2000 : 200);
const PORTS = ['c0', 'c1', 'c2', 'c3', 'c4', 'c5', 'c6', 'c7'];

function ports(db: Database): nb.Logical_Switch_Port[] {
  return [...db.rows('Logical_Switch_Port').values()].map((r) => r as unknown as nb.Logical_Switch_Port).sort((a, b) => (a._uuid < b._uuid ? -1 : 1));
}

/** ovn-northd's rules over every port (tag_alloc_add_existing_tags, then tag_alloc_create_new_tag): the ports it would write. */
function fullPass(db: Database): string[] {
  const all = ports(db);
  const taken = new Map<string, Set<number>>();
  for (const p of all) {
    const parent = p.parent_name[0] ?? '';
    if (parent !== '' && p.tag[0] !== undefined) taken.set(parent, (taken.get(parent) ?? new Set()).add(p.tag[0]));
  }
  const out: string[] = [];
  for (const p of all) {
    const request = p.tag_request[0];
    const parent = p.parent_name[0] ?? '';
    if (request === undefined) continue;
    if (parent !== '' && request === 0) {
      if (p.tag.length === 0 && [...Array(4095).keys()].some((i) => !(taken.get(parent)?.has(i + 1) ?? false))) out.push(`${p.name} allocates`);
    } else if (request !== 0 && p.tag[0] !== request) out.push(`${p.name} copies ${request}`);
  }
  return out;
}

function randomOps(rng: Rng, db: Database): unknown[] {
  const name = rng.pick(PORTS);
  const lsp = ports(db).find((p) => p.name === name);
  const fields = (): Record<string, unknown> => ({
    parent_name: rng.pick<unknown>([set([]), 'vm1', 'vm2', '']),
    tag_request: rng.pick<unknown>([set([]), 0, 0, 0, rng.int(1, 4)]),
  });
  if (lsp === undefined) return addLsp('sw0', name, fields());
  return rng.weighted<unknown[]>([
    [[{ op: 'update', table: 'Logical_Switch_Port', where: byUuid(lsp._uuid), row: fields() }], 4],
    [[{ op: 'update', table: 'Logical_Switch_Port', where: byUuid(lsp._uuid), row: { tag: rng.pick<unknown>([set([]), rng.int(1, 4)]) } }], 2],
    [[{ op: 'mutate', table: 'Logical_Switch', where: [], mutations: [['ports', 'delete', set([['uuid', lsp._uuid]])]] }], 2],
  ]);
}

t.test("tags written from each transaction's delta are what a pass over every port settles on", async (t) => {
  let failures = 0;
  let given = 0;
  for (let seed = 1; seed <= SEQUENCES && failures < 3; seed++) {
    const rng = new Rng(seed);
    const fx = nbFixture();
    fx.run([{ op: 'insert', table: 'Logical_Switch', row: { name: 'sw0' } }]);
    let n = 0;
    for (let i = 0; i < 40; i++) {
      const out = transact(fx.db, randomOps(rng, fx.db), { newUuid: () => `00000000-0000-4000-8000-${(++n * 7919 % 0xffffff).toString(16).padStart(12, '0')}` });
      if (out.kind !== 'committed') continue;
      const writes = tagWrites(fx.db, out.delta);
      for (const w of writes) {
        const lsp = fx.db.get('Logical_Switch_Port', w.lsp) as unknown as nb.Logical_Switch_Port;
        const parent = lsp.parent_name[0] ?? '';
        if (lsp.tag_request[0] !== 0 || parent === '') continue;
        given++;
        const sibling = ports(fx.db).find((p) => p._uuid !== w.lsp && p.parent_name[0] === parent && (p.tag[0] === w.tag || writes.some((o) => o.lsp === p._uuid && o.tag === w.tag)));
        if (sibling !== undefined) {
          failures++;
          t.fail(`seed ${seed} txn ${i}: ${lsp.name} was given ${w.tag}, which ${sibling.name} holds`);
        }
      }
      if (writes.length > 0) fx.run(writes.map((w) => ({ op: 'update', table: 'Logical_Switch_Port', where: byUuid(w.lsp), row: { tag: w.tag } })));
      const left = fullPass(fx.db);
      if (left.length > 0) {
        failures++;
        t.fail(`seed ${seed} txn ${i}: left for a full pass: ${left.join(', ')}`);
        break;
      }
    }
  }
  t.equal(failures, 0, `${SEQUENCES} sequences`);
  t.ok(given > 100, `${given} tags allocated`);
});
