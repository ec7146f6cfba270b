// What nbctl commands stand on: a Northbound connection that fails over between members, the
// error type whose message is printed as ovn-nbctl prints its own, and record lookup by name
// or UUID as ovn-nbctl does it.
import type { NorthboundClient } from '../../../server/northbound-service.js';

export class NbctlError extends Error {}

export type RowJson = Record<string, unknown>;

/** grpc status codes after which the next member is tried. */
const retryableCodes = new Set([4 /* DEADLINE_EXCEEDED */, 14 /* UNAVAILABLE */]);

/** Talks to the first member that answers. */
export class Nb {
  constructor(private readonly clients: readonly NorthboundClient[]) {}

  private async first<T>(f: (c: NorthboundClient) => Promise<T>): Promise<T> {
    let last: unknown;
    for (const c of this.clients) {
      try {
        return await f(c);
      } catch (err) {
        last = err;
        if (!retryableCodes.has((err as { code?: number }).code ?? -1)) throw err;
      }
    }
    throw new NbctlError(`no member answered: ${(last as Error | undefined)?.message ?? 'no endpoints'}`);
  }

  /** Commits ops; a failed transaction becomes an NbctlError with ovn-nbctl's wording. */
  async transact(ops: unknown[]): Promise<unknown[]> {
    const out = await this.first((c) => c.transact(ops));
    if (out.failed) {
      const err = out.results.find((r) => r !== null && typeof r === 'object' && 'error' in r) as { error: string; details?: string } | undefined;
      throw new NbctlError(`transaction error: ${err ? JSON.stringify({ details: err.details ?? '', error: err.error }) : 'failed'}`);
    }
    return out.results;
  }

  private schemaJson: unknown;

  /** The OVN_Northbound schema (RFC 7047 JSON), fetched once. */
  async schema(): Promise<unknown> {
    this.schemaJson ??= await this.first((c) => c.getSchema());
    return this.schemaJson;
  }

  rows(table: string, where: unknown[] = []): Promise<RowJson[]> {
    return this.first((c) => c.list(table, where)).then((r) => r.rows);
  }

  close(): void {
    for (const c of this.clients) c.close();
  }
}

/** The elements of an RFC 7047 set value (a bare atom is a one-element set). */
export const setOf = (v: unknown): unknown[] => (Array.isArray(v) && v[0] === 'set' ? (v[1] as unknown[]) : v === undefined ? [] : [v]);
/** The pairs of an RFC 7047 map value. */
export const mapOf = (v: unknown): [unknown, unknown][] => (Array.isArray(v) && v[0] === 'map' ? (v[1] as [unknown, unknown][]) : []);
export const uuidOf = (row: RowJson): string => (row._uuid as [string, string])[1];
/** An atom as text: a uuid's id, or the value itself. */
export const text = (v: unknown): string => (Array.isArray(v) && (v[0] === 'uuid' || v[0] === 'named-uuid') ? String(v[1]) : String(v));
export const uuidRef = (u: string): [string, string] => ['uuid', u];

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * Finds a row by name (or by UUID), as ovn-nbctl's lookups do, with its messages: `what` is
 * e.g. "switch", "router", "port"; `nameColumn` the column holding names.
 */
export async function findRecord(nb: Nb, table: string, id: string, what: string, nameColumn = 'name'): Promise<RowJson> {
  if (uuidPattern.test(id)) {
    const byUuid = await nb.rows(table, [['_uuid', '==', uuidRef(id)]]);
    if (byUuid[0] !== undefined) return byUuid[0];
  }
  const byName = await nb.rows(table, [[nameColumn, '==', id]]);
  if (byName.length > 1) throw new NbctlError(`Multiple ${what}s named '${id}'.  Use a UUID.`);
  if (byName[0] !== undefined) return byName[0];
  throw new NbctlError(`${id}: ${what} ${uuidPattern.test(id) ? 'UUID' : 'name'} not found`);
}

/** Like findRecord, but undefined when absent. */
export async function maybeRecord(nb: Nb, table: string, id: string, what: string, nameColumn = 'name'): Promise<RowJson | undefined> {
  try {
    return await findRecord(nb, table, id, what, nameColumn);
  } catch (err) {
    if (err instanceof NbctlError && /not found$/.test(err.message)) return undefined;
    throw err;
  }
}

/** Lines sorted the way ovn-nbctl sorts its listings: by the name in parentheses. */
export function listing(rows: RowJson[], nameColumn = 'name'): string {
  return rows
    .map((r) => ({ name: String(r[nameColumn] ?? ''), line: `${uuidOf(r)} (${String(r[nameColumn] ?? '')})\n` }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((x) => x.line)
    .join('');
}
