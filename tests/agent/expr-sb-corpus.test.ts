// Goal: every match the real ovn-northd 23.03.1 writes compiles, with no error and some flows.
// Method: the SB Logical_Flow matches of a small real topology (tests/testdata/agent/
// sb-lflow-matches.json, with its address sets, port groups and port keys), each compiled.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { buildSymtab, compileMatch } from '../../agent/expr/index.js';
import { testsDir } from '../helpers/source-tree.js';

interface Corpus {
  readonly addressSets: Record<string, string[]>;
  readonly portGroups: Record<string, string[]>;
  readonly portKeys: Record<string, number>;
  readonly matches: string[];
}

const corpus = JSON.parse(readFileSync(join(testsDir, 'testdata/agent/sb-lflow-matches.json'), 'utf8')) as Corpus;
const symtab = buildSymtab();

// SB Port_Group names carry the datapath key ("2_pg_web"); OVN looks up "<key>_<name>" and then
// the bare name. Without a datapath here, accept either spelling.
const portGroup = (name: string): string[] | undefined =>
  corpus.portGroups[name] ?? Object.entries(corpus.portGroups).find(([k]) => k.replace(/^[0-9]+_/, '') === name)?.[1];

t.test('every northd match compiles', async (t) => {
  t.ok(corpus.matches.length > 150, `${corpus.matches.length} distinct matches`);
  let flows = 0;
  let never = 0;
  for (const m of corpus.matches) {
    const r = compileMatch(m, {
      symtab, addressSet: (n) => corpus.addressSets[n], portGroup, lookupPort: (n) => corpus.portKeys[n],
      isChassisResident: () => true,
    });
    if ('error' in r) {
      t.fail(`${m}: ${r.error}`);
      continue;
    }
    flows += r.matches.length;
    if (r.matches.length === 0) never++;
  }
  t.ok(flows >= corpus.matches.length, `${flows} OpenFlow matches`);
  t.ok(never < 5, `${never} matches can never match (e.g. "0")`);
});
