// Where the anchor scripts (the real OVN's figures on the same workloads) are: ANCHORS_DIR, or
// ../shared/anchors beside the repository.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = ((): string => {
  let d = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(d, 'package.json'))) d = dirname(d);
  return d;
})();

export const anchorsDir = process.env.ANCHORS_DIR ?? join(repoRoot, '..', 'shared', 'anchors');
