// `npm run bench -- <name>`: runs one benchmark in its own Node process (so one benchmark's
// heap and JIT state never colour another's). With no name, lists the benchmarks.
// `npm run bench` compiles with tsc first and runs dist/bench/*.js: measured code is what
// `npm run build` ships, not a development loader's output.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const ext = import.meta.url.endsWith('.ts') ? '.ts' : '.js';
const loader = ext === '.ts' ? ['--import', 'tsx'] : [];
const available = readdirSync(here)
  .filter((f) => f.endsWith(ext) && !f.endsWith('.d.ts') && f !== `run${ext}`)
  .map((f) => f.slice(0, -ext.length))
  .sort();

const [name, ...args] = process.argv.slice(2);
if (name === undefined || !available.includes(name)) {
  if (name !== undefined) process.stderr.write(`bench: no benchmark named "${name}"\n`);
  process.stdout.write(`usage: npm run bench -- <name> [args]\nbenchmarks: ${available.join(', ')}\n`);
  process.exit(name === undefined ? 0 : 2);
}
/**
 * V8 flags some benchmarks need. bench/agent holds its 500 in-memory agents in this one process
 * (over a few worker threads, a heap each), each agent with its own SB copy and flows: with one
 * heap it went past 4 GB after the 100-agent run, where V8's default limit stopped it (and a
 * process that dies of it cannot stop the cluster it started).
 */
const v8Flags: Readonly<Record<string, readonly string[]>> = { agent: ['--max-old-space-size=8192'] };
const r = spawnSync(process.execPath, [...loader, '--expose-gc', ...(v8Flags[name] ?? []), join(here, `${name}${ext}`), ...args], { stdio: 'inherit' });
process.exit(r.status ?? 1);
