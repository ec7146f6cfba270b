// Goal: `ovnts snapshot save` streams a checked copy into the file, draws a progress bar only
// when stderr is a terminal, and says nothing on stderr otherwise.
// Method: three central nodes in this process (real gRPC Admin service on loopback), the real
// command line as a child process, once with pipes and once under util-linux `script`, which
// gives it a pseudo-terminal.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { readSnapshotFile } from '../../server/snapshot-file.js';
import { startCentralCluster } from '../helpers/central-cluster.js';
import { ovnts } from '../helpers/ovnts-cli.js';
import { testdirAfterTeardowns } from '../helpers/testdir.js';
import { ovntsCommand } from '../helpers/ovnts-bin.js';

const run = promisify(execFile);

t.test('snapshot save: a checked file; a progress bar on a terminal only', async (t) => {
  const dir = testdirAfterTeardowns(t, { cluster: {} });
  const cluster = await startCentralCluster(join(dir, 'cluster'));
  t.teardown(() => cluster.stop());
  const client = cluster.members[0]?.client;
  if (client === undefined) throw new Error('no member');
  for (let i = 0; i < 20; i++) {
    const ports = Array.from({ length: 50 }, (_, j) => ({ op: 'insert', table: 'Logical_Switch_Port', 'uuid-name': `p${j}`, row: { name: `sw${i}-p${j}`, addresses: `0a:00:00:00:${i.toString(16).padStart(2, '0')}:${j.toString(16).padStart(2, '0')}` } }));
    const out = await client.transact([...ports, { op: 'insert', table: 'Logical_Switch', row: { name: `sw${i}`, ports: ['set', ports.map((p) => ['named-uuid', p['uuid-name']])] } }]);
    t.equal(out.failed, false);
  }
  const endpoints = cluster.members.map((m) => m.address).join(',');

  const piped = join(dir, 'piped.snap');
  const r = await ovnts('snapshot', 'save', piped, `--endpoints=${endpoints}`);
  t.equal(r.code, 0, r.stderr);
  t.equal(r.stderr, '', 'nothing on stderr when it is not a terminal');
  t.match(r.stdout, /^saved revision \d+ of cluster central-test \(\d+ bytes of data\)/);
  const { header, data } = readSnapshotFile(piped);
  t.equal(data.byteLength, header.dataBytes, 'the header announced the size the data has');
  t.ok(header.dataBytes > 100_000, `a snapshot of 1,000 ports (${header.dataBytes} bytes)`);
  const inspected = await ovnts('snapshot', 'inspect', piped, '--format=json');
  t.equal((JSON.parse(inspected.stdout) as { nbRows: Record<string, number> }).nbRows.Logical_Switch_Port, 1000, 'every port is in it');

  const onTerminal = join(dir, 'terminal.snap');
  const command = [...ovntsCommand(), 'snapshot', 'save', onTerminal, `--endpoints=${endpoints}`].map((a) => `'${a}'`).join(' ');
  const tty = await run('script', ['-qec', command, '/dev/null'], { timeout: 60_000, env: { ...process.env, COLUMNS: '120' } });
  t.match(tty.stdout, /saving from 127\.0\.0\.1:\d+ \[.*\] 100% [\d.]+\/[\d.]+ MiB/, 'a progress bar that reaches 100%');
  t.match(tty.stdout, /saved revision \d+/);
  t.equal(readSnapshotFile(onTerminal).header.dataBytes, header.dataBytes, 'the same size from the terminal');
});
