// The `ovnts` command that tests start as a process: the compiled dist/bin/ovnts.js, which
// `npm test` builds first (`npm run build:all`). Through tsx every process paid about a second
// of CPU more to compile its modules, and the suite starts hundreds of them (cluster members,
// agents, one-shot commands) on a 2-core machine.
//
// A dist older than its sources would test old code without saying so: that is refused, with
// the command that fixes it. `npm test` runs the tests compiled too (tests/helpers/source-tree.ts).
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { repoRoot } from './source-tree.js';

/** The folders whose compiled code a started `ovnts` runs. */
const SOURCE_DIRS = ['ovsdb', 'cluster', 'northd', 'server', 'agent', 'bin'] as const;

/** The compiled entry point. */
export const ovntsJs = join(repoRoot, 'dist/bin/ovnts.js');

function* sources(dir: string): Generator<string> {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) yield* sources(p);
    else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) yield p;
  }
}

/** The first source file whose compiled form is missing or older, or undefined when none is. */
function staleSource(): string | undefined {
  for (const dir of SOURCE_DIRS) {
    for (const src of sources(join(repoRoot, dir))) {
      const rel = relative(repoRoot, src);
      const js = join(repoRoot, 'dist', rel.replace(/\.ts$/, '.js'));
      if (!existsSync(js) || statSync(js).mtimeMs < statSync(src).mtimeMs) return rel;
    }
  }
  return undefined;
}

let checked = false;

/**
 * The command that starts `ovnts`, to put the command's arguments after: node on
 * dist/bin/ovnts.js, through `env -u NODE_OPTIONS`. tap's processinfo puts its loader into the
 * NODE_OPTIONS of every process a test starts (whatever env the spawn passes), and each
 * process passes it on to its own children: every ovnts process then loaded its modules
 * through that loader's hooks, and `ovnts --help` took 1.4 s instead of 0.5. Nothing here uses
 * what processinfo records (coverage is off). `env` execs node, so the pid is node's.
 */
export function ovntsCommand(): [string, ...string[]] {
  if (!checked) {
    const stale = staleSource();
    if (stale !== undefined) {
      throw new Error(`dist/ is older than ${stale} (or lacks it): run \`npm run build:all\` before the tests that start ovnts`);
    }
    checked = true;
  }
  return ['/usr/bin/env', '-u', 'NODE_OPTIONS', process.execPath, ovntsJs];
}

/** [file, args] for spawn/execFile: `ovnts ARGS...` as ovntsCommand() starts it. */
export function ovntsArgv(...args: string[]): [string, string[]] {
  const [file, ...prefix] = ovntsCommand();
  return [file, [...prefix, ...args]];
}
