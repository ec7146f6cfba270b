// Shared pieces of the differential tests: talking to a real ovsdb-server, dumping its
// contents in the same shape as our engine's dumpDatabaseJson(), and the normal forms in
// which results and dumps of the two implementations are compared.
import type { JsonRpcClient } from './jsonrpc-client.js';
import type { DbDump, Json, JsonRow, SchemaLite } from './ovsdb-json.js';
import { asciiJson, canonicalJson, canonicalize } from './ovsdb-json.js';

export async function realTransact(client: JsonRpcClient, dbName: string, ops: readonly Json[]): Promise<Json[]> {
  const result = await client.request('transact', [dbName, ...ops]);
  if (!Array.isArray(result)) throw new Error(`transact returned a non-array: ${JSON.stringify(result)}`);
  return result as Json[];
}

/** Every row of every table, keyed like dumpDatabaseJson(): table → uuid → columns (with _version). */
export async function dumpReal(client: JsonRpcClient, dbName: string, schema: SchemaLite): Promise<DbDump> {
  const tables = [...schema.tables.keys()].sort();
  const results = await realTransact(
    client,
    dbName,
    tables.map((table) => ({ op: 'select', table, where: [] })),
  );
  const dump: DbDump = {};
  tables.forEach((table, i) => {
    const result = results[i] as { rows?: JsonRow[] } | null;
    if (result?.rows === undefined) throw new Error(`dump of ${table} failed: ${JSON.stringify(result)}`);
    const rows: Record<string, JsonRow> = {};
    for (const row of result.rows) {
      const { _uuid: uuidAtom, ...rest } = row;
      if (!Array.isArray(uuidAtom) || typeof uuidAtom[1] !== 'string') throw new Error(`row without _uuid in ${table}`);
      rows[uuidAtom[1]] = rest;
    }
    dump[table] = rows;
  });
  return dump;
}

export type Outcome = { readonly kind: 'commit' } | { readonly kind: 'error'; readonly error: string };

/** What a transact reply says happened: committed, or the name of the (single) error. */
export function outcomeOf(results: readonly Json[]): Outcome {
  for (const r of results) {
    if (r !== null && typeof r === 'object' && !Array.isArray(r) && typeof r['error'] === 'string') return { kind: 'error', error: r['error'] };
  }
  return { kind: 'commit' };
}

/**
 * The normal form of a transact reply for comparison: error objects keep only "error" (the
 * "details" and "syntax" texts are free-form), _version values become a marker (they are
 * random on the real server), select rows are sorted (their order is unspecified), and sets
 * and maps are sorted.
 */
export function normalizeResults(results: readonly Json[]): Json {
  return canonicalize(
    results.map((r) => {
      if (r === null || typeof r !== 'object' || Array.isArray(r)) return r;
      if (typeof r['error'] === 'string') return { error: r['error'] };
      if (Array.isArray(r['rows'])) {
        const rows = (r['rows'] as Json[]).map((row) => maskVersion(row));
        rows.sort((a, b) => compareText(canonicalJson(a), canonicalJson(b)));
        return { ...r, rows };
      }
      return r;
    }),
  );
}

/** Error texts of a reply, for reporting differences in wording (not asserted). */
export function errorDetails(results: readonly Json[]): string | undefined {
  for (const r of results) {
    if (r !== null && typeof r === 'object' && !Array.isArray(r) && typeof r['error'] === 'string') {
      return `${r['error']}: ${String(r['details'] ?? '')}`;
    }
  }
  return undefined;
}

function maskVersion(row: Json): Json {
  if (row === null || typeof row !== 'object' || Array.isArray(row) || !('_version' in row)) return row;
  const versioned = row['_version'];
  const ok = Array.isArray(versioned) && versioned[0] === 'uuid' && typeof versioned[1] === 'string';
  return { ...row, _version: ok ? '<version>' : ['<bad _version>', versioned ?? null] };
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * The normal form of a dump: every schema table present, _uuid dropped from rows, and _version
 * replaced by what it says about the last transaction: "new" row, "same" version, or "changed".
 * Comparing these markers checks that both implementations bump _version on exactly the same
 * rows, without comparing the random values.
 */
export function normalizeDump(dump: DbDump, previous: DbDump | undefined, schema: SchemaLite): Record<string, Record<string, Json>> {
  const out: Record<string, Record<string, Json>> = {};
  for (const table of [...schema.tables.keys()].sort()) {
    const rows = dump[table] ?? {};
    const outRows: Record<string, Json> = {};
    for (const uuid of Object.keys(rows).sort()) {
      const { _uuid: _ignored, _version: version, ...columns } = rows[uuid] as JsonRow;
      const before = previous?.[table]?.[uuid]?.['_version'];
      let marker: string;
      if (version === undefined) marker = 'missing _version';
      else if (before === undefined) marker = 'new';
      else marker = canonicalJson(before) === canonicalJson(version) ? 'same' : 'changed';
      outRows[uuid] = canonicalize({ ...columns, _version: marker });
    }
    out[table] = outRows;
  }
  return out;
}

/** Up to `max` human-readable differences between two normalized dumps. */
export function diffNormalizedDumps(ours: Record<string, Record<string, Json>>, real: Record<string, Record<string, Json>>, max = 8): string[] {
  const diffs: string[] = [];
  const tables = new Set([...Object.keys(ours), ...Object.keys(real)]);
  for (const table of [...tables].sort()) {
    const a = ours[table] ?? {};
    const b = real[table] ?? {};
    for (const uuid of [...new Set([...Object.keys(a), ...Object.keys(b)])].sort()) {
      if (diffs.length >= max) return diffs;
      const ra = a[uuid];
      const rb = b[uuid];
      if (ra === undefined) diffs.push(`${table} ${uuid}: only in ovsdb-server: ${asciiJson(rb)}`);
      else if (rb === undefined) diffs.push(`${table} ${uuid}: only in ours: ${asciiJson(ra)}`);
      else if (canonicalJson(ra) !== canonicalJson(rb)) {
        const columns = new Set([...Object.keys(ra as object), ...Object.keys(rb as object)]);
        for (const column of columns) {
          const va = (ra as Record<string, Json>)[column] ?? null;
          const vb = (rb as Record<string, Json>)[column] ?? null;
          if (canonicalJson(va) !== canonicalJson(vb)) diffs.push(`${table} ${uuid} ${column}: ours ${asciiJson(va)} vs ovsdb-server ${asciiJson(vb)}`);
        }
      }
    }
  }
  return diffs;
}
