// The identity of the software that derives a member's Southbound view. Apply versions
// (server/apply-version.ts) keep the NB identical on every member, but the SB view is derived
// from it by this member's northd, and two builds may derive it differently (a new flow, a
// changed match). A reader that built its copy of the view from one member's changes can take
// the changes after its revision from another member only if that member derives the view the
// same way; otherwise it must read the view anew. So the SB view's resume tokens (an agent's
// Hello, an OVSDB client's last-txn-id) carry this id, and a member whose id differs answers
// with the whole view.
//
// The id is a digest of the code that decides what the view holds, read once from the running
// build's files: any change to that code gives another id (a change that alters nothing costs
// each reader one full read, once, when it moves between members of different builds).
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The folders of the build, beside this file's, whose code decides what the SB view holds. */
const VIEW_CODE_DIRS = ['northd', 'server', 'ovsdb'];

/** Characters of the id (hex digits of a SHA-256). */
export const SB_VIEW_ID_CHARS = 16;

let memo: string | undefined;

/** This build's SB view id: SB_VIEW_ID_CHARS hex digits, the same for every process of it. */
export function sbViewId(): string {
  if (memo !== undefined) return memo;
  const root = join(dirname(fileURLToPath(import.meta.url)), '..');
  const hash = createHash('sha256');
  for (const dir of VIEW_CODE_DIRS) {
    for (const file of codeFiles(join(root, dir))) {
      hash.update(`${dir}/${file}\n`);
      hash.update(readFileSync(join(root, dir, file)));
    }
  }
  memo = hash.digest('hex').slice(0, SB_VIEW_ID_CHARS);
  return memo;
}

/** The code files under `dir` (compiled or source, not maps or declarations), sorted, relative. */
function codeFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !/\.(js|ts)$/.test(entry.name) || entry.name.endsWith('.d.ts')) continue;
    out.push(join(entry.parentPath, entry.name).slice(dir.length + 1));
  }
  return out.sort();
}
