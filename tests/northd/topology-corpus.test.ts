// The topology corpus (tests/fixtures/topologies/*.topo) against the real OVN 23.03: each
// script's ovn-nbctl commands build a network in a real NB, the real ovn-northd derives its
// SB and ovnts derives its own from the same NB rows; then the real `ovn-trace --minimal` walks
// every packet of the script through both SBs, and the two verdicts (output ports or drop,
// rewritten fields, connection-tracking steps) must be the same text. Prints the agreement
// table. See tests/fixtures/topologies/README.md for the script format.
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { testsDir } from '../helpers/source-tree.js';
import { missingTools, ovnTrace, realSbOf, startRealSandbox } from './real-northd.js';

const CORPUS = path.join(testsDir, 'fixtures/topologies');

/** Splits a line into words as a shell does for quotes alone: '…' and "…" group, nothing else is special. */
function splitWords(line: string): string[] {
  const words: string[] = [];
  let word: string | undefined;
  let quote: string | undefined;
  for (const c of line) {
    if (quote !== undefined) {
      if (c === quote) quote = undefined;
      else word += c;
    } else if (c === "'" || c === '"') {
      quote = c;
      word ??= '';
    } else if (c === ' ' || c === '\t') {
      if (word !== undefined) words.push(word);
      word = undefined;
    } else word = (word ?? '') + c;
  }
  if (quote !== undefined) throw new Error(`unterminated ${quote} in: ${line}`);
  if (word !== undefined) words.push(word);
  return words;
}

interface Trace {
  readonly line: number;
  readonly options: readonly string[];
  readonly datapath: string;
  readonly microflow: string;
  readonly expect: { readonly re: RegExp; readonly present: boolean }[];
}

interface Topology {
  readonly nbctl: readonly (readonly string[])[];
  readonly traces: readonly Trace[];
}

function parseTopology(text: string, file: string): Topology {
  const nbctl: string[][] = [];
  const traces: Trace[] = [];
  for (const [i, raw] of text.split('\n').entries()) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const where = `${file}:${i + 1}`;
    const [verb] = line.split(/\s/, 1);
    if (verb === 'expect' || verb === 'expect-not') {
      const last = traces.at(-1);
      if (last === undefined) throw new Error(`${where}: ${verb} before any trace`);
      last.expect.push({ re: new RegExp(line.slice(verb.length).trim()), present: verb === 'expect' });
      continue;
    }
    const words = splitWords(line);
    if (verb === 'ovn-nbctl') nbctl.push(words.slice(1));
    else if (verb === 'trace') {
      const args = words.slice(1);
      const options = args.filter((a) => a.startsWith('--'));
      const rest = args.filter((a) => !a.startsWith('--'));
      if (rest.length !== 2) throw new Error(`${where}: trace takes a datapath and a microflow, got ${JSON.stringify(rest)}`);
      traces.push({ line: i + 1, options, datapath: rest[0] as string, microflow: rest[1] as string, expect: [] });
    } else throw new Error(`${where}: a line is a comment, ovn-nbctl, trace, expect or expect-not, not "${verb}"`);
  }
  if (traces.length === 0) throw new Error(`${file}: no packet to trace`);
  return { nbctl, traces };
}

t.test('the script format', async (t) => {
  t.same(splitWords(`a 'b c' "d 'e'" f"g h"i`), ['a', 'b c', "d 'e'", 'fg hi']);
  t.same(splitWords(`x ''`), ['x', '']);
  t.throws(() => splitWords(`a 'b`), /unterminated/);
  const topo = parseTopology(`# c\novn-nbctl ls-add sw0\ntrace --ct=new sw0 'inport == "a"'\nexpect out\\(\nexpect-not drop\n`, 'x.topo');
  t.same(topo.nbctl, [['ls-add', 'sw0']]);
  t.same(topo.traces.map((tr) => [tr.options, tr.datapath, tr.microflow, tr.expect.map((e) => [e.re.source, e.present])]), [[['--ct=new'], 'sw0', 'inport == "a"', [['out\\(', true], ['drop', false]]]]);
  t.throws(() => parseTopology('expect x\n', 'y.topo'), /before any trace/);
  t.throws(() => parseTopology('ovn-nbctl ls-add a\n', 'z.topo'), /no packet/);
  t.throws(() => parseTopology('trace sw0\n', 'w.topo'), /a datapath and a microflow/);
});

const files = fs.readdirSync(CORPUS).filter((f) => f.endsWith('.topo')).sort();
const skip = await missingTools();
const table: [string, number, number][] = [];

t.test('every topology of the corpus', { skip }, async (t) => {
  t.ok(files.length >= 10, `${files.length} topologies`);
  for (const file of files) {
    await t.test(file, async (t) => {
      const topo = parseTopology(fs.readFileSync(path.join(CORPUS, file), 'utf8'), file);
      const real = await startRealSandbox(t);
      for (const step of topo.nbctl) await real.nbctl(step);
      const ours = await realSbOf(t, real.northd.view());
      let agree = 0;
      for (const tr of topo.traces) {
        const label = `${file}:${tr.line} ${tr.datapath}`;
        const ourTrace = await ovnTrace(ours.socketPath, tr.datapath, tr.microflow, tr.options);
        const realTrace = await ovnTrace(real.sbSocket, tr.datapath, tr.microflow, tr.options);
        if (process.env.CORPUS_DEBUG !== undefined) t.comment(`${label}\nours:\n${ourTrace}\nreal:\n${realTrace}`);
        if (ourTrace === realTrace) agree++;
        t.equal(ourTrace, realTrace, `${label}: the same verdict on both SBs`);
        for (const e of tr.expect) {
          if (e.present) t.match(ourTrace, e.re, `${label}: shows ${e.re.source}\n${ourTrace}`);
          else t.notMatch(ourTrace, e.re, `${label}: does not show ${e.re.source}\n${ourTrace}`);
        }
      }
      table.push([file, topo.traces.length, agree]);
    });
  }
  const total = table.reduce((a, [, n]) => a + n, 0);
  const agreed = table.reduce((a, [, , n]) => a + n, 0);
  const rows = [['topology', 'packets', 'same verdict'], ...table.map(([f, n, a]) => [f, String(n), String(a)]), ['total', String(total), `${agreed} (${total === 0 ? 0 : ((100 * agreed) / total).toFixed(1)} %)`]];
  const width = rows.reduce((w, r) => w.map((x, i) => Math.max(x, (r[i] as string).length)), [0, 0, 0]);
  t.comment(`agreement with the real ovn-northd through ovn-trace:\n${rows.map((r) => r.map((c, i) => (i === 0 ? c.padEnd(width[0] as number) : c.padStart(width[i] as number))).join('  ')).join('\n')}`);
  t.equal(agreed, total, 'every packet gets the same verdict');
});
