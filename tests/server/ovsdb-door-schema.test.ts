// Goal: the schema questions OVN's upgrade scripts ask get the answers a clustered
// ovsdb-server running OVN 23.03 gives: the installed schema's cksum, "no" from
// `ovsdb-client needs-conversion` against the installed schema files, and a `convert` to that
// same schema that succeeds and changes nothing. A convert to any other schema is refused
// with a clear error, and changes nothing either.
// Method: the real ovsdb-client against both doors (NB and SB) of a one-member central.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { LocalNetwork } from '../../cluster/local-transport.js';
import { CentralNode } from '../../server/central-node.js';
import { startOvsdbDoor } from '../../server/ovsdb-door.js';
import { testdirAfterTeardowns } from '../helpers/testdir.js';

const run = promisify(execFile);
const SCHEMAS = { OVN_Northbound: '/usr/share/ovn/ovn-nb.ovsschema', OVN_Southbound: '/usr/share/ovn/ovn-sb.ovsschema' } as const;
const haveTools = existsSync('/usr/bin/ovsdb-client') && Object.values(SCHEMAS).every((p) => existsSync(p));

async function client(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await run('ovsdb-client', args);
    return { code: 0, stdout: r.stdout.trim(), stderr: r.stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? -1, stdout: (e.stdout ?? '').trim(), stderr: e.stderr ?? '' };
  }
}

t.test('cksum, needs-conversion and convert through both doors', { skip: haveTools ? false : 'ovsdb-client or the OVN schema files are missing' }, async (t) => {
  const dir = testdirAfterTeardowns(t);
  const network = new LocalNetwork('door-schema');
  const central = await CentralNode.start({ id: 1, clusterId: 'door-schema', dataDir: join(dir, 'n1'), transport: network.transport(1), peers: new Map([[1, 'local:1']]), bootstrap: [1], tickMs: 10 });
  const doors = [await startOvsdbDoor({ central, listen: { host: '127.0.0.1', port: 0 } }), await startOvsdbDoor({ central, listen: { host: '127.0.0.1', port: 0 }, db: 'OVN_Southbound' })];
  t.teardown(async () => {
    for (const d of doors) await d.close();
    await central.stop();
  });
  t.equal((await central.transact([{ op: 'insert', table: 'Logical_Switch', row: { name: 'sw0' } }])).failed, false, 'a row to keep');

  for (const [i, [db, path]] of Object.entries(SCHEMAS).entries()) {
    const remote = `tcp:127.0.0.1:${((doors[i] as { address: unknown }).address as { port: number }).port}`;
    const file = JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
    const dump = async (): Promise<string> => (await client('dump', remote, db)).stdout;
    const before = await dump();
    t.equal((await client('get-schema-cksum', remote, db)).stdout, file['cksum'], `${db}: the installed file's cksum`);
    t.equal((await client('needs-conversion', remote, path)).stdout, 'no', `${db}: no conversion needed for the installed schema`);

    const same = await client('convert', remote, path);
    t.equal(same.code, 0, `${db}: convert to the schema served succeeds (${same.stderr.trim()})`);

    const newer = join(dir, `${db}-newer.ovsschema`);
    const tables = file['tables'] as Record<string, { columns: Record<string, unknown> }>;
    (Object.values(tables)[0] as { columns: Record<string, unknown> }).columns['added_later'] = { type: 'string' };
    writeFileSync(newer, JSON.stringify({ ...file, version: '99.0.0', cksum: '1 2', tables }));
    t.equal((await client('needs-conversion', remote, newer)).stdout, 'yes', `${db}: another schema needs conversion`);
    const refused = await client('convert', remote, newer);
    t.not(refused.code, 0, `${db}: convert to another schema fails`);
    t.match(refused.stderr, /not supported/, `${db}: as not supported`);
    t.match(refused.stderr, new RegExp(`${db} 99\\.0\\.0`), `${db}: naming the schema asked for`);
    t.equal((await client('get-schema-version', remote, db)).stdout, file['version'], `${db}: the schema served is unchanged`);
    t.equal(await dump(), before, `${db}: the rows are unchanged`);
  }
  t.match((await client('dump', `tcp:127.0.0.1:${(doors[0]?.address as { port: number }).port}`, 'OVN_Northbound', 'Logical_Switch')).stdout, /sw0/, 'the NB row is still there');
});
