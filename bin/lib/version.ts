// This build's version, from the package.json of the ovnts tree it runs from (bin/ from source,
// dist/bin/ compiled: the folder depths differ, so it is looked for upwards).
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Folders above this module searched for package.json. */
const PARENTS_MAX = 5;

let cached: string | undefined;

/** The `version` of ovnts's package.json, or "unknown" when it is not found. */
export function ovntsVersion(): string {
  if (cached !== undefined) return cached;
  let dir = dirname(fileURLToPath(import.meta.url));
  cached = 'unknown';
  for (let i = 0; i <= PARENTS_MAX; i++) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: unknown; version?: unknown };
      if (pkg.name === 'ovnts' && typeof pkg.version === 'string') {
        cached = pkg.version;
        break;
      }
    }
    dir = dirname(dir);
  }
  return cached;
}
