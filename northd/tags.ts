// Logical_Switch_Port.tag, as ovn-northd 23.03 writes it (tag_alloc_create_new_tag): a port with
// a nonzero tag_request gets that tag; a nested container port (a parent_name) asking for
// tag_request 0 gets the lowest tag in 1..4095 that no other port of the same parent holds, once
// (a tag it has is kept). A port with no tag_request, or 0 without a parent, is left as it is.
//
// ovn-northd does this for every port on each pass; the answer for a port depends on its own
// tag_request, parent_name and tag, and for an allocation on the tags of its parent's ports,
// which only grow by allocations. So only the ports a transaction inserts or whose tag_request,
// parent_name or tag it changes can get a new tag, and only those are looked at. (One port
// ovn-northd would look at again: a container whose parent had all 4,095 tags taken, when one
// is given up. Here it gets one when it is next written.)
import type { Database, DbDelta, Uuid } from '../ovsdb/index.js';
import type * as nb from '../ovsdb/rows/nb.js';
import { nbRows } from './nb.js';

/** Tags a nested container's VLAN may take (MAX_OVN_TAGS is 4096; 0 is no tag). */
const TAG_MAX = 4095;

const COLUMNS_READ: ReadonlySet<string> = new Set(['tag_request', 'parent_name', 'tag']);

export interface TagWrite {
  readonly lsp: Uuid;
  readonly tag: number;
}

/** After `delta` was applied to `db`: the tags to write, at most one per port. */
export function tagWrites(db: Database, delta: DbDelta): TagWrite[] {
  const ports: nb.Logical_Switch_Port[] = [];
  for (const c of delta.changes) {
    if (c.table !== 'Logical_Switch_Port' || c.kind === 'delete') continue;
    if (c.kind === 'modify' && !c.columns.some((col) => COLUMNS_READ.has(col))) continue;
    const lsp = c.new as unknown as nb.Logical_Switch_Port;
    if (lsp.tag_request.length > 0) ports.push(lsp);
  }
  if (ports.length === 0) return [];
  const writes: TagWrite[] = [];
  // The tags of each parent's ports, read once for the transaction (allocations add to them).
  let taken: Map<string, Set<number>> | undefined;
  // A delta lists its changes by (table, uuid): ports are taken in UUID order.
  for (const lsp of ports) {
    const request = lsp.tag_request[0] as number;
    const parent = lsp.parent_name[0] ?? '';
    if (parent !== '' && request === 0) {
      if (lsp.tag.length > 0) continue;
      taken ??= tagsByParent(db);
      const used = taken.get(parent) ?? new Set<number>();
      taken.set(parent, used);
      let tag = 1;
      while (tag <= TAG_MAX && used.has(tag)) tag++;
      if (tag > TAG_MAX) continue;
      used.add(tag);
      writes.push({ lsp: lsp._uuid, tag });
    } else if (request !== 0 && lsp.tag[0] !== request) {
      writes.push({ lsp: lsp._uuid, tag: request });
    }
  }
  return writes;
}

/** Every nested port's tag, by parent name (tag_alloc_add_existing_tags over every port). */
function tagsByParent(db: Database): Map<string, Set<number>> {
  const out = new Map<string, Set<number>>();
  for (const lsp of nbRows<nb.Logical_Switch_Port>(db, 'Logical_Switch_Port').values()) {
    const parent = lsp.parent_name[0];
    const tag = lsp.tag[0];
    if (parent === undefined || parent === '' || tag === undefined) continue;
    let tags = out.get(parent);
    if (tags === undefined) out.set(parent, (tags = new Set()));
    tags.add(tag);
  }
  return out;
}
