// The SB view our northd projects from a benchmark NB topology: the NB built in this process
// by the same transactions the real OVN receives, then one full projection.
import { createNorthd } from '../../northd/index.js';
import type { Row } from '../../ovsdb/index.js';
import { Database, parseDatabaseSchema, transact } from '../../ovsdb/index.js';
import { NB_SCHEMA_JSON } from '../../ovsdb/schemas/index.js';
import type { TopologyShape } from './nb-workload.js';
import { loadTopology } from './nb-workload.js';

/** SB tables (table → uuid → row) of `shape`, with NB row UUIDs numbered from 1. */
export async function ourSbOf(shape: TopologyShape): Promise<Map<string, Map<string, Row>>> {
  const nb = new Database(parseDatabaseSchema(NB_SCHEMA_JSON));
  let n = 0;
  const newUuid = (): string => `00000000-0000-4000-8000-${(++n).toString(16).padStart(12, '0')}`;
  await loadTopology((ops) => {
    const out = transact(nb, ops, { newUuid });
    if (out.kind !== 'committed') throw new Error(`NB transaction failed: ${JSON.stringify(out)}`);
    return out.results as unknown[];
  }, shape);
  return createNorthd().recompute(nb) as Map<string, Map<string, Row>>;
}
