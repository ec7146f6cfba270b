// A reader that goes away before `ovnts` writes (`ovnts up | head -1`, a script's pipe closed
// early) must not turn a command that did its work into a crash: the output is dropped, the
// command finishes and exits 0. It used to die on the unhandled EPIPE with a stack trace, after
// `up` had started members or `db create` had written its file.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { ovntsArgv } from '../helpers/ovnts-bin.js';

t.test('stdout closed by its reader: the work is done, exit 0, nothing on stderr', async (t) => {
  const file = join(t.testdir(), 'nb.db');
  const [cmd, args] = ovntsArgv('db', 'create', file, 'nb');
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  // Gone before the command can write: node takes far longer than this to start.
  child.stdout.destroy();
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
  t.equal(code, 0, 'exit 0');
  t.equal(stderr, '', 'no error printed');
  t.ok(existsSync(file), 'the database file was created');
});
