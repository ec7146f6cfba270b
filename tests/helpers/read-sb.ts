// Reading a whole Southbound over OVSDB as the agent holds it: every table the agent's SB store
// keeps, each row decoded into ovsdb values (absent columns as empty sets), as SbRowChanges.
import { storedTables } from '../../agent/flows/sb-store.js';
import type { SbRowChange } from '../../agent/sb-source.js';
import type { Row } from '../../ovsdb/index.js';
import { parseDatabaseSchema, valueFromJson } from '../../ovsdb/index.js';
import { SB_SCHEMA_JSON } from '../../ovsdb/schemas/index.js';
import { JsonRpcClient, type Endpoint } from './jsonrpc-client.js';

export async function readStoredSb(endpoint: Endpoint): Promise<SbRowChange[]> {
  const schema = parseDatabaseSchema(SB_SCHEMA_JSON);
  const c = await JsonRpcClient.connect(endpoint);
  try {
    const tables = storedTables.filter((n) => schema.tables.has(n));
    const res = (await c.request('transact', ['OVN_Southbound', ...tables.map((table) => ({ op: 'select', table, where: [] }))])) as { rows: Record<string, unknown>[] }[];
    const out: SbRowChange[] = [];
    tables.forEach((table, i) => {
      const ts = schema.tables.get(table);
      if (ts === undefined) return;
      for (const r of res[i]?.rows ?? []) {
        const row: Record<string, unknown> = { _uuid: (r._uuid as [string, string])[1], _version: (r._version as [string, string])[1] };
        for (const [name, col] of ts.columns) row[name] = r[name] === undefined ? valueFromJson(col.type, ['set', []]) : valueFromJson(col.type, r[name]);
        out.push({ table, uuid: row._uuid as string, row: row as unknown as Row });
      }
    });
    return out;
  } finally {
    await c.close();
  }
}
