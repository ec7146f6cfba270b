// `npm run bench -- <name>`: runs bench/<name>.ts in its own Node process (so one benchmark's
// heap and JIT state never colour another's). With no name, lists the benchmarks.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const available = readdirSync(here)
  .filter((f) => f.endsWith('.ts') && f !== 'run.ts')
  .map((f) => f.slice(0, -3))
  .sort();

const [name, ...args] = process.argv.slice(2);
if (name === undefined || !available.includes(name)) {
  if (name !== undefined) process.stderr.write(`bench: no benchmark named "${name}"\n`);
  process.stdout.write(`usage: npm run bench -- <name> [args]\nbenchmarks: ${available.join(', ')}\n`);
  process.exit(name === undefined ? 0 : 2);
}
const r = spawnSync(process.execPath, ['--import', 'tsx', '--expose-gc', join(here, `${name}.ts`), ...args], { stdio: 'inherit' });
process.exit(r.status ?? 1);
