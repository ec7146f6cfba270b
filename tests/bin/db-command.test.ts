// `ovnts db` end to end as a user runs it: create a file, commit, fail, dump; the failed
// transaction must leave the file byte-identical. Method: run the real command line in a child.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { ovntsArgv } from '../helpers/ovnts-bin.js';

const run = promisify(execFile);
const ovnts = async (...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> => {
  try {
    const { stdout, stderr } = await run(...ovntsArgv(...args));
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
};

t.test('create, transact, fail without change, dump', async (t) => {
  const dir = t.testdir();
  const file = join(dir, 'nb.db');
  t.match((await ovnts('db', 'create', file, 'nb')).stdout, /created .*OVN_Northbound 7\.0\.0/);
  const ok = await ovnts('db', 'transact', file, JSON.stringify(['OVN_Northbound', { op: 'insert', table: 'Logical_Switch', row: { name: 'sw0' } }]));
  t.equal(ok.code, 0);
  t.match(JSON.parse(ok.stdout), [{ uuid: ['uuid', /^[0-9a-f-]{36}$/] }]);
  const before = readFileSync(file);
  const bad = await ovnts('db', 'transact', file, JSON.stringify(['OVN_Northbound', { op: 'insert', table: 'Logical_Switch_Port', row: { name: 'p', tag: 5000 } }]));
  t.equal(bad.code, 1, 'a failed transaction exits 1');
  t.equal(JSON.parse(bad.stdout)[0].error, 'constraint violation');
  t.same(readFileSync(file), before, 'the file is unchanged');
  const dump = JSON.parse((await ovnts('db', 'dump', file)).stdout);
  t.same(Object.values(dump.Logical_Switch).map((r) => (r as { name: string }).name), ['sw0']);
  const wrongDb = await ovnts('db', 'transact', file, JSON.stringify(['OVN_Southbound']));
  t.equal(wrongDb.code, 1);
  t.match(wrongDb.stderr, /first element is "OVN_Northbound"/);
});

t.test('--help lists the subcommands', async (t) => {
  const help = await ovnts('--help');
  t.equal(help.code, 0);
  t.match(help.stdout, /schema <db>/);
  t.match(help.stdout, /db /);
});
