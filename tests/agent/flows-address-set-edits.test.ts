// Goal: a logical flow over an address set is brought up to date by the set's added and removed
// addresses alone where that equals compiling it whole (agent/flows/address-set-edits.ts), and
// the table after every edit equals one computed from scratch, for matches where it does not
// too: the set named twice, negated, beside a constant of its own field or another set, beside
// a second many-valued field (conjunctions), and sets holding prefixes, other spellings of an
// address, IPv6 and Ethernet addresses. Method: seeded random edits of a few addresses at a time
// to three sets, each step checked against a fresh DesiredFlows fed the same rows (a failing
// seed is printed and replays exactly); and the plain case must take the difference.

import t from 'tap';
import type { Test } from 'tap';
import { addressSetDiff, isPlainAddress, setFieldIsolated } from '../../agent/flows/address-set-edits.js';
import { buildSymtab } from '../../agent/expr/index.js';
import { DesiredFlows } from '../../agent/flows/desired.js';
import type { LocalView } from '../../agent/local-view.js';
import type { SbRowChange } from '../../agent/sb-source.js';
import type { Row } from '../../ovsdb/index.js';
import { Rng } from '../helpers/seeded-rng.js';
import { addressSet, chassis, datapath, difference, logicalFlow, port, portGroup, snapshotOf, U } from './flows-fixtures.js';

const long = process.env.OVNTS_LONG === '1';
const SEEDS = long ? 60 : 8;
const STEPS = long ? 80 : 40;

const sw = U(1, 0xd);
const hv1 = U(1, 0xc);
const setUuid = { as4: U(1, 0x5), as6: U(2, 0x5), asmac: U(3, 0x5) } as const;

/** Matches over the sets: the first few can take the difference, the rest must not (and still agree). */
const MATCHES: readonly string[] = [
  'ip4.src == $as4',
  'outport == "p1" && ip4.src == $as4 && tcp.dst == 80',
  '(tcp.dst == 80 || udp.dst == 53) && ip4.dst == $as4',
  'ip6.src == $as6 && icmp6',
  'eth.src == $asmac',
  // Conjunctions: the set's clause beside a port group's or a value set's.
  'outport == @pg1 && ip4 && ip4.src == $as4',
  'ip4.src == $as4 && tcp.dst == {80, 443, 8080}',
  'ip6.dst == $as6 && udp.dst == {53, 5353}',
  // Beside a prefix of its own field, alone and in a conjunction (a member outside it has no flow).
  'ip4.src == $as4 && ip4.src == 10.0.0.0/28',
  'ip4.src == $as4 && ip4.src == 10.0.1.0/28 && tcp.dst == {22, 80}',
  'ip4.src == $as4 && ip4.dst == 10.0.0.0/8',
  // Not by difference: beside a constant of the same field, named twice, negated.
  'ip4.src == {$as4, 192.168.9.9}',
  'ip4.src == $as4 && ip4.dst == $as4',
  'ip4.src != $as4 && tcp',
  '!(ip4.src == $as4) && udp',
  'ip4.src == $as4 || ip4.src == 10.0.0.3',
];

/** Empty SB tables, and a function that puts a row into one. */
function tables(): { rows: Map<string, Map<string, Row>>; put: (table: string, r: Row) => void } {
  const rows = new Map<string, Map<string, Row>>();
  const put = (table: string, r: Row): void => {
    let m = rows.get(table);
    if (m === undefined) rows.set(table, (m = new Map()));
    m.set(r._uuid, r);
  };
  return { rows, put };
}

function world(): { rows: Map<string, Map<string, Row>>; revision: number } {
  const { rows, put } = tables();
  put('Chassis', chassis(hv1, 'hv1'));
  put('Datapath_Binding', datapath(sw, 1, 'switch'));
  put('Port_Binding', port(U(1, 0xa), sw, 'p1', 1, { chassis: hv1 }));
  put('Port_Binding', port(U(2, 0xa), sw, 'p2', 2, {}));
  // Ports of another chassis in the group: in the ingress pipeline `outport == @pg1` keeps
  // their matches too, so the edit must read the whole group there.
  put('Chassis', chassis(U(2, 0xc), 'hv2'));
  for (let k = 3; k <= 5; k++) put('Port_Binding', port(U(k, 0xa), sw, `p${k}`, k, { chassis: U(2, 0xc) }));
  put('Port_Group', portGroup(U(1, 0x6), 'pg1', ['p1', 'p2', 'p3', 'p4', 'p5']));
  MATCHES.forEach((m, i) => put('Logical_Flow', logicalFlow(U(i + 1, 0x1f), sw, 'ingress', 8, 100 + i, m, 'next;')));
  return { rows, revision: 1 };
}

const view: LocalView = { chassis: 'hv1', vifs: new Map([['p1', 1]]), tunnels: new Map(), localnetPatches: new Map() };

/** Folds `changes` into `inc` as `w`'s next revision; the first difference from a recompute of `w`, if any. */
function stepAndCompare(inc: DesiredFlows, w: { readonly rows: Map<string, Map<string, Row>>; revision: number }, changes: SbRowChange[]): string | undefined {
  w.revision++;
  inc.update({ reset: false, fromRevision: w.revision - 1, toRevision: w.revision, changes }, view);
  const full = new DesiredFlows({ ctZones: inc.ctZones() });
  full.update(snapshotOf(w), view);
  return difference(inc, full);
}

/** A world of rows and its revision, with the engine kept up to date incrementally. */
interface Run {
  readonly w: { readonly rows: Map<string, Map<string, Row>>; revision: number };
  readonly inc: DesiredFlows;
  /** The SB changes of step i (the world's rows already changed). */
  readonly step: (i: number) => SbRowChange[];
}

/**
 * SEEDS seeds of STEPS random steps from `start` (seeds seedBase+1…), each step checked
 * against a recompute; fails the test at the first difference. Returns the steps run and the
 * logical flows brought up to date by difference, or undefined after a failure.
 */
function randomSteps(t: Test, seedBase: number, start: (rng: Rng, seed: number) => Run): { steps: number; edits: number } | undefined {
  let steps = 0;
  let edits = 0;
  for (let seed = seedBase + 1; seed <= seedBase + SEEDS; seed++) {
    const run = start(new Rng(seed), seed);
    const before = run.inc.counters.addressSetEdits;
    for (let i = 0; i < STEPS; i++) {
      const failed = stepAndCompare(run.inc, run.w, run.step(i));
      steps++;
      if (failed !== undefined) {
        t.fail(`seed ${seed} step ${i}: ${failed}`);
        return undefined;
      }
    }
    edits += run.inc.counters.addressSetEdits - before;
  }
  return { steps, edits };
}

/** Candidate members: mostly plain addresses, some prefixes and other spellings of the same ones. */
const CANDIDATES = {
  as4: [
    ...Array.from({ length: 40 }, (_, i) => `10.0.${i >> 4}.${i & 15}`),
    '10.0.0.0/24', '10.0.0.3/32', '010.0.0.4', '10.0.1.0/255.255.255.0', '192.168.9.9',
  ],
  as6: [...Array.from({ length: 20 }, (_, i) => `fd00::${(i + 1).toString(16)}`), 'FD00::1', 'fd00:0::2', 'fd00::/64'],
  asmac: [...Array.from({ length: 20 }, (_, i) => `0a:00:00:00:00:${(i + 1).toString(16).padStart(2, '0')}`), '0A:00:00:00:00:01'],
} as const;

t.test('address set edits: incremental equals recompute, and the plain case takes the difference', async (t) => {
  const r = randomSteps(t, 0, (rng, seed) => {
    const w = world();
    const members = new Map<keyof typeof CANDIDATES, Set<string>>();
    const sets = new Map<string, Row>();
    w.rows.set('Address_Set', sets);
    for (const name of Object.keys(CANDIDATES) as (keyof typeof CANDIDATES)[]) {
      // Mostly plain at first; odd seeds start with some of the others in.
      const start = CANDIDATES[name].filter((a, i) => (isPlainAddress(a) || seed % 2 === 1) && i % 3 !== 0 && rng.int(0, 1) === 0);
      members.set(name, new Set(start));
      sets.set(setUuid[name], addressSet(setUuid[name], name, start));
    }
    const inc = new DesiredFlows();
    inc.update(snapshotOf(w), view);
    const step = (i: number): SbRowChange[] => {
      const changes: SbRowChange[] = [];
      for (const name of Object.keys(CANDIDATES) as (keyof typeof CANDIDATES)[]) {
        if (rng.int(0, 2) === 0) continue;
        const m = members.get(name) as Set<string>;
        const pool = CANDIDATES[name];
        for (let k = rng.int(1, 3); k > 0; k--) {
          // Late in odd seeds, the other spellings come and go too.
          const a = pool[rng.int(0, seed % 2 === 1 || i > STEPS / 2 ? pool.length - 1 : pool.length - 6)] as string;
          if (m.has(a)) m.delete(a);
          else m.add(a);
        }
        const row = addressSet(setUuid[name], name, [...m]);
        sets.set(row._uuid, row);
        changes.push({ table: 'Address_Set', uuid: row._uuid, row });
      }
      return changes;
    };
    return { w, inc, step };
  });
  if (r === undefined) return;
  t.pass(`${r.steps} steps over ${SEEDS} seeds: incremental equals recompute after each`);
  t.ok(r.edits > r.steps, `logical flows brought up to date by difference: ${r.edits}`);
});

t.test('a port group edited with the set: ports of other chassis come and go, some are bound here', async (t) => {
  // The switch's own group "1_pg1" (key 1), ports p1..p8: p1 bound here, p2 nowhere, the rest on
  // hv2 until a step binds one here (then its group's flows must change) or moves it back.
  const hv2 = U(2, 0xc);
  const GROUP_MATCHES = [
    'outport == @pg1 && ip4 && ip4.src == $as4',
    'inport == @pg1 && ip4 && ip4.dst == $as4 && tcp.dst == {80, 443}',
    'outport == @pg1 && ip4',
    // Not where the compile keeps related ports' matches alone (inport in the egress
    // pipeline, a set of ports): every port's flows count.
    'inport == @pg1 && ip4.src == $as4',
    'outport == {@pg1, "p2"} && ip4.src == $as4',
  ];
  const r = randomSteps(t, 100, (rng) => {
    const { rows, put } = tables();
    put('Chassis', chassis(hv1, 'hv1'));
    put('Chassis', chassis(hv2, 'hv2'));
    put('Datapath_Binding', datapath(sw, 1, 'switch'));
    const where = new Map<string, string | undefined>();
    const bindPort = (k: number, ch: string | undefined): Row => {
      where.set(`p${k}`, ch);
      return port(U(k, 0xa), sw, `p${k}`, k, ch === undefined ? {} : { chassis: ch });
    };
    for (let k = 1; k <= 8; k++) put('Port_Binding', bindPort(k, k === 1 ? hv1 : k === 2 ? undefined : hv2));
    const members = new Set(['p1', 'p2', 'p3']);
    const addresses = new Set(CANDIDATES.as4.filter((a, i) => isPlainAddress(a) && i % 2 === 0));
    put('Port_Group', portGroup(U(1, 0x6), '1_pg1', [...members]));
    put('Address_Set', addressSet(setUuid.as4, 'as4', [...addresses]));
    GROUP_MATCHES.forEach((m, i) => put('Logical_Flow', logicalFlow(U(i + 1, 0x1f), sw, i === 1 ? 'ingress' : 'egress', 8, 100 + i, m, 'next;')));
    const w = { rows, revision: 1 };
    const inc = new DesiredFlows();
    inc.update(snapshotOf(w), view);
    const step = (): SbRowChange[] => {
      const changes: SbRowChange[] = [];
      // Mostly ports of hv2 joining or leaving, with the set; sometimes a port bound here or moved back.
      for (let k = rng.int(1, 2); k > 0; k--) {
        const p = `p${rng.int(2, 8)}`;
        if (members.has(p) && members.size > 1) members.delete(p);
        else members.add(p);
      }
      const g = portGroup(U(1, 0x6), '1_pg1', [...members]);
      put('Port_Group', g);
      changes.push({ table: 'Port_Group', uuid: g._uuid, row: g });
      const a = CANDIDATES.as4[rng.int(0, 39)] as string;
      if (addresses.has(a) && addresses.size > 1) addresses.delete(a);
      else addresses.add(a);
      const as = addressSet(setUuid.as4, 'as4', [...addresses]);
      put('Address_Set', as);
      changes.push({ table: 'Address_Set', uuid: as._uuid, row: as });
      if (rng.int(0, 5) === 0) {
        const k = rng.int(3, 8);
        const pb = bindPort(k, where.get(`p${k}`) === hv1 ? hv2 : hv1);
        put('Port_Binding', pb);
        changes.push({ table: 'Port_Binding', uuid: pb._uuid, row: pb });
      }
      return changes;
    };
    return { w, inc, step };
  });
  if (r === undefined) return;
  t.pass(`${r.steps} steps over ${SEEDS} seeds: incremental equals recompute after each`);
  t.ok(r.edits > r.steps / 2, `logical flows over the group and the set brought up to date by difference: ${r.edits}`);
});

t.test('each match through the same edits: a member that is also a constant of the match, removed and added back', async (t) => {
  const sequence: readonly (readonly string[])[] = [
    ['10.0.0.1', '10.0.0.2', '10.0.0.3'],
    ['10.0.0.1', '10.0.0.2'],
    ['10.0.0.1', '10.0.0.2', '10.0.0.3'],
    ['10.0.0.2', '10.0.0.3', '10.0.0.4'],
    ['10.0.0.2', '10.0.0.3', '10.0.0.4', '10.0.0.5', '10.0.0.6'],
    ['10.0.0.4'],
  ];
  for (const [i, match] of MATCHES.entries()) {
    const w = world();
    w.rows.set('Logical_Flow', new Map([[U(1, 0x1f), logicalFlow(U(1, 0x1f), sw, 'ingress', 8, 100, match, 'next;')]]));
    const sets = new Map<string, Row>([[setUuid.as4, addressSet(setUuid.as4, 'as4', [...(sequence[0] as string[])])]]);
    w.rows.set('Address_Set', sets);
    const inc = new DesiredFlows();
    inc.update(snapshotOf(w), view);
    let failed: string | undefined;
    for (const members of sequence.slice(1)) {
      const r = addressSet(setUuid.as4, 'as4', [...members]);
      sets.set(r._uuid, r);
      failed ??= stepAndCompare(inc, w, [{ table: 'Address_Set', uuid: r._uuid, row: r }]);
    }
    t.equal(failed, undefined, `match ${i} (${match}): equal to a recompute after every edit`);
  }
});

t.test('one address more in a set of 2,000: the flows take the difference, no compile', async (t) => {
  const w = world();
  const addresses = Array.from({ length: 2000 }, (_, i) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);
  w.rows.set('Address_Set', new Map([[setUuid.as4, addressSet(setUuid.as4, 'as4', addresses)]]));
  // One flow over the set alone, one in a conjunction with the port group.
  w.rows.set('Logical_Flow', new Map([
    [U(1, 0x1f), logicalFlow(U(1, 0x1f), sw, 'ingress', 8, 100, MATCHES[1] as string, 'next;')],
    [U(2, 0x1f), logicalFlow(U(2, 0x1f), sw, 'egress', 8, 100, 'outport == @pg1 && ip4 && ip4.src == $as4', 'next;')],
  ]));
  const d = new DesiredFlows();
  d.update(snapshotOf(w), view);
  t.equal(d.table.size > 2000, true, `the set's flows are there (${d.table.size})`);
  const compiled = d.counters.logicalFlowsCompiled;
  const r = addressSet(setUuid.as4, 'as4', [...addresses.slice(1), '10.200.0.1']);
  d.update({ reset: false, fromRevision: 1, toRevision: 2, changes: [{ table: 'Address_Set', uuid: r._uuid, row: r }] }, view);
  t.equal(d.counters.logicalFlowsCompiled, compiled, 'not compiled again');
  t.equal(d.counters.addressSetEdits, 2, 'both edited by difference, the conjunction too');
  w.rows.get('Address_Set')?.set(r._uuid, r);
  const full = new DesiredFlows();
  full.update(snapshotOf(w), view);
  t.equal(difference(d, full), undefined, 'equal to a recompute');
});

t.test('helpers: differences, plain spellings, references', async (t) => {
  t.same(addressSetDiff({ before: ['a', 'b', 'd'], after: ['b', 'c', 'd', 'e'] }), { added: ['c', 'e'], removed: ['a'] });
  for (const a of ['10.0.0.1', 'fd00::1', '0a:00:00:00:00:01']) t.equal(isPlainAddress(a), true, a);
  for (const a of ['10.0.0.1/32', '10.0.0.0/24', '010.0.0.1', 'FD00::1', 'fd00:0::1', '0A:00:00:00:00:01', 'x', '']) t.equal(isPlainAddress(a), false, a);
  const symtab = buildSymtab();
  const isolated = (m: string): boolean => setFieldIsolated(m, 'as1', symtab);
  t.equal(isolated('outport == @pg1 && ip4 && ip4.src == $as1 && tcp.dst == {80, 443}'), true, 'beside other fields and prerequisites');
  t.equal(isolated('ip4.src == $as1 && ip4.dst == $as10 && inport == "ip4.src"'), true, 'another set, a quoted name');
  t.equal(isolated('ip4.src == $as1 || ip4.dst == {$as1}'), false, 'named twice');
  t.equal(isolated('ip4.src == $as1_ip4'), false, 'another set only');
  t.equal(isolated('ip4.src == $as1 && ip4.src == 10.0.0.0/8'), false, 'the field compared again');
  t.equal(isolated('ip4.src == $as1 && ip4.src[0..7] == 1'), false, 'a subfield of it');
  t.equal(isolated('ip4.dst == $as1 && ip4.mcast'), false, 'a predicate reading it');
  t.equal(isolated('ip4.src != $as1'), false, 'not by ==');
});
