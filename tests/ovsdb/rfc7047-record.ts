// Records the expectations of the RFC 7047 conformance cases from the real ovsdb-server:
// runs every case of tests/testdata/ovsdb/rfc7047-cases.json on a fresh database and rewrites
// the file with the normalized replies ("expected"), the normalized contents afterwards
// ("dump") and the server's error texts ("details"). Review the diff before committing it.
//
//   npx tsx tests/ovsdb/rfc7047-record.ts
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { dumpReal, realTransact } from '../helpers/differential.js';
import { JsonRpcClient } from '../helpers/jsonrpc-client.js';
import type { Json } from '../helpers/ovsdb-json.js';
import { parseSchemaLite } from '../helpers/ovsdb-json.js';
import { startRealOvsdbServer } from '../helpers/real-ovsdb.js';
import { CaseNormalizer, RFC7047_CASES_PATH, RFC7047_SCHEMA_PATH, formatRfc7047Cases, knownUuids, readRfc7047Cases } from '../helpers/rfc7047-cases.js';

const schemaJson = JSON.parse(fs.readFileSync(RFC7047_SCHEMA_PATH, 'utf8')) as unknown;
const schema = parseSchemaLite(schemaJson);
const file = readRfc7047Cases();
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ovnts-rfc7047-'));
const server = await startRealOvsdbServer({ dir, schemaJson });
try {
  for (const c of file.cases) {
    // A fresh connection (no locks held) and an empty database for every case.
    const client = await JsonRpcClient.connect({ path: server.socketPath });
    try {
      await realTransact(client, schema.name, [...schema.tables.keys()].map((table) => ({ op: 'delete', table, where: [] })));
      const empty = await dumpReal(client, schema.name, schema);
      if (Object.values(empty).some((rows) => Object.keys(rows).length > 0)) throw new Error(`database not empty before "${c.name}"`);
      for (const lock of c.locks ?? []) {
        const reply = (await client.request('lock', [lock])) as { locked?: boolean };
        if (reply.locked !== true) throw new Error(`could not take lock ${lock}`);
      }
      const normalizer = new CaseNormalizer(knownUuids(c));
      const expected: Json[] = [];
      const details: string[] = [];
      for (const ops of c.txns) {
        const results = await realTransact(client, schema.name, ops);
        expected.push(normalizer.results(results));
        for (const r of results) {
          if (r !== null && typeof r === 'object' && !Array.isArray(r) && typeof r['error'] === 'string') {
            details.push(`${r['error']}: ${String(r['details'] ?? '')}`);
          }
        }
      }
      c.expected = expected;
      c.dump = normalizer.dump(await dumpReal(client, schema.name, schema));
      c.details = details;
    } finally {
      await client.close();
    }
  }
} finally {
  await server.stop();
  fs.rmSync(dir, { recursive: true, force: true });
}
fs.writeFileSync(RFC7047_CASES_PATH, formatRfc7047Cases(file));
console.log(`recorded ${file.cases.length} cases into ${path.relative(process.cwd(), RFC7047_CASES_PATH)}`);
