// The anchor for bench/ovsdb: the same workloads against a real standalone ovsdb-server,
// started in a temp folder and stopped by its pid. Returns undefined when Open vSwitch is not
// installed (the table then says so).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { JsonRpcClient } from '../../tests/helpers/jsonrpc-client.js';
import { startRealOvsdbServer } from '../../tests/helpers/real-ovsdb.js';
import { loadTopology, lsInsert, tenThousandPorts } from './nb-workload.js';
import { ovsdbServerInstalled } from './ovs.js';

const inFlightMax = 32;

function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const m = /VmRSS:\s+(\d+) kB/.exec(status);
  return m ? Number(m[1]) / 1024 : NaN;
}

export interface RealFigures {
  readonly insertsPerS: number;
  readonly loadMs: number;
  readonly rssMiB: number;
}

async function withServer<T>(schema: object, f: (client: JsonRpcClient, pid: number, dbName: string) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-ovsdb-'));
  const server = await startRealOvsdbServer({ dir, schemaJson: schema });
  const client = await JsonRpcClient.connect({ path: server.socketPath });
  try {
    return await f(client, server.pid, (schema as { name: string }).name);
  } finally {
    await client.close();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function realServerFigures(schema: object, inserts: number): Promise<RealFigures | undefined> {
  if (!ovsdbServerInstalled()) return undefined;
  const insertsPerS = await withServer(schema, async (client, _pid, db) => {
    const t0 = process.hrtime.bigint();
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < inserts) {
        const i = next++;
        await client.request('transact', [db, ...lsInsert(i)]);
      }
    };
    await Promise.all(Array.from({ length: inFlightMax }, worker));
    return inserts / (Number(process.hrtime.bigint() - t0) / 1e9);
  });
  const load = await withServer(schema, async (client, pid, db) => {
    const t0 = process.hrtime.bigint();
    await loadTopology(async (ops) => (await client.request('transact', [db, ...ops])) as unknown[], tenThousandPorts);
    const loadMs = Number(process.hrtime.bigint() - t0) / 1e6;
    return { loadMs, rssMiB: rssMiB(pid) };
  });
  return { insertsPerS, ...load };
}
