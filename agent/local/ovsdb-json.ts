// RFC 7047 JSON spellings for the operations agent/local/ builds, and the one shape every
// planner returns: groups of operations, each group applied whole (its named uuids refer only
// within the group), so a shell can send groups together or skip one it just sent.

export type OpJson = Record<string, unknown>;

/** Operations that belong together; `what` says in words what they do, for logs. */
export interface OpGroup {
  readonly what: string;
  readonly ops: readonly OpJson[];
}

export const uuidJson = (u: string): [string, string] => ['uuid', u];
export const namedUuid = (n: string): [string, string] => ['named-uuid', n];
export const setJson = (items: readonly unknown[]): [string, unknown[]] => ['set', [...items]];
export const mapJson = (m: ReadonlyMap<string, string> | Iterable<readonly [string, string]>): [string, [string, string][]] =>
  ['map', [...(m instanceof Map ? (m as ReadonlyMap<string, string>).entries() : (m as Iterable<readonly [string, string]>))].map(([k, v]) => [k, v] as [string, string]).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))];

export const whereUuid = (u: string): unknown[] => [['_uuid', '==', uuidJson(u)]];

export function mapsEqual(a: ReadonlyMap<string, string>, b: ReadonlyMap<string, string>): boolean {
  if (a.size !== b.size) return false;
  for (const [k, v] of a) if (b.get(k) !== v) return false;
  return true;
}
