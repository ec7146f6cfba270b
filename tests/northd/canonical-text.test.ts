// canonicalText (hand-written, it names every SB row's _version) against its reference
// definition, JSON.stringify with maps as sorted pairs: table cases, then seeded random values;
// and `versioned` (version filled into a built row) against contentVersion of its columns.
import t from 'tap';
import type * as sb from '../../ovsdb/rows/sb.js';
import { canonicalText, canonicalTextReference, contentVersion, versioned } from '../../northd/sb-changes.js';
import { Rng } from '../helpers/seeded-rng.js';

const CASES: unknown[] = [
  undefined, null, 0, -0, 1.5, NaN, Infinity, -3, 1e21, true, false, '', 'a"b\\c\n\u0001é\u{1F600}',
  [], [undefined, () => 1, null], {}, { a: undefined, b: 1, c: [new Map()] }, new Map<unknown, unknown>([['b', 1], ['a', 2], [3, 'x']]),
  new Map([['k', new Map([['z', [1, 2]], ['y', { q: 'r' }]])]]), { toJSON: () => 'custom' }, new Date(0), [new Set([1])],
  { logical_port: 'p1', options: new Map([['peer', 'lrp']]), up: [false], tunnel_key: 7 },
];

t.test('table cases', async (t) => {
  for (const v of CASES) t.equal(canonicalText(v), canonicalTextReference(v));
});

function randomValue(rng: Rng, depth: number): unknown {
  const kind = rng.int(0, depth > 3 ? 4 : 8);
  switch (kind) {
    case 0: return rng.pick(['', 'x', 'a b', '"q"', 'é', 'stage-name', '\\']);
    case 1: return rng.int(-5, 70000);
    case 2: return rng.chance(0.5);
    case 3: return rng.chance(0.5) ? null : undefined;
    case 4: return rng.int(0, 2) / 4;
    case 5: return Array.from({ length: rng.int(0, 3) }, () => randomValue(rng, depth + 1));
    case 6: return new Map(Array.from({ length: rng.int(0, 4) }, () => [rng.pick(['a', 'b', 'B', 'c', '', 'é', 'stage-hint', 'stage-name', 'stage', 10, 9]), randomValue(rng, depth + 1)]));
    default: {
      const o: Record<string, unknown> = {};
      for (let i = rng.int(0, 3); i > 0; i--) o[rng.pick(['_uuid', 'match', 'tags', 'x'])] = randomValue(rng, depth + 1);
      return o;
    }
  }
}

t.test('maps of many string keys, on both sides of the insertion sort\'s bound', async (t) => {
  const rng = new Rng(11);
  for (let n = 2; n <= 40; n++) {
    const m = new Map<string, unknown>();
    while (m.size < n) m.set(rng.pick(['a', 'b', 'B', 'é', '']) + String(rng.int(0, 99)), rng.int(0, 9));
    t.equal(canonicalText(m), canonicalTextReference(m), `${n} keys`);
  }
});

t.test('random values', async (t) => {
  const rng = new Rng(7);
  let differ = 0;
  for (let i = 0; i < 5000; i++) {
    const v = randomValue(rng, 0);
    if (canonicalText(v) !== canonicalTextReference(v)) differ++;
  }
  t.equal(differ, 0);
});

t.test('versioned gives the version of the columns alone', async (t) => {
  const columns = { datapath: '00000000-0000-4000-8000-000000000001', name: '_MC_flood', tunnel_key: 32768, ports: ['00000000-0000-4000-8000-000000000002'] };
  const row = versioned<sb.Multicast_Group>({ _uuid: '00000000-0000-4000-8000-000000000003', _version: '', ...columns });
  t.equal(row._version, contentVersion(columns));
  t.same(Object.keys(row), ['_uuid', '_version', 'datapath', 'name', 'tunnel_key', 'ports'], 'the version stays in second place');
  t.not(versioned<sb.Multicast_Group>({ ...row, _version: '', tunnel_key: 32769 })._version, row._version, 'other content, other version');
});
