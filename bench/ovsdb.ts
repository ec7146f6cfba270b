// bench/ovsdb: the OVSDB engine in memory — single-row insert transactions per second, and the
// load time and memory of a 10,000-port Northbound database (200 switches x 50 ports, one
// router, a port group holding every port, 10 ACLs). Beside ours: the real ovsdb-server
// (standalone, same schema, same transactions over its unix socket) when it is installed.
import { readFileSync } from 'node:fs';
import { Database, parseDatabaseSchema, transact } from '../ovsdb/index.js';
import type { DatabaseSchema } from '../ovsdb/index.js';
import { decodeDatabase, encodeDatabase } from '../ovsdb/codec.js';
import { NB_SCHEMA_JSON } from '../ovsdb/schemas/index.js';
import { fmt, median, printFigures, printTable } from './lib/report.js';
import { loadTopology, lsInsert, tenThousandPorts } from './lib/nb-workload.js';
import { realServerFigures } from './lib/real-ovsdb-anchor.js';

const insertsPerRound = Number(process.env.BENCH_INSERTS ?? 100_000);
const rounds = Number(process.env.BENCH_ROUNDS ?? 5);

function uuidSource(): () => string {
  let n = 0;
  return () => {
    n++;
    return `00000000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;
  };
}

function gc(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

function insertRound(schema: DatabaseSchema): number {
  const db = new Database(schema);
  const ctx = { newUuid: uuidSource() };
  const txns = Array.from({ length: insertsPerRound }, (_, i) => lsInsert(i));
  const t0 = process.hrtime.bigint();
  for (const ops of txns) {
    const out = transact(db, ops, ctx);
    if (out.kind !== 'committed') throw new Error(`insert failed: ${JSON.stringify(out)}`);
  }
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  return insertsPerRound / s;
}

async function loadRound(schema: DatabaseSchema): Promise<{ ms: number; bytesPerRow: number; heapMiB: number; rows: number; decodeMs: number; snapshotBytes: number }> {
  gc();
  const heap0 = process.memoryUsage().heapUsed;
  const db = new Database(schema);
  const ctx = { newUuid: uuidSource() };
  const t0 = process.hrtime.bigint();
  const { rows } = await loadTopology((ops) => {
    const out = transact(db, ops, ctx);
    return out.kind === 'blocked' ? [] : out.results;
  }, tenThousandPorts);
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  gc();
  const heap = process.memoryUsage().heapUsed - heap0;
  const bytes = encodeDatabase(db);
  const t1 = process.hrtime.bigint();
  decodeDatabase(schema, bytes);
  const decodeMs = Number(process.hrtime.bigint() - t1) / 1e6;
  return { ms, bytesPerRow: heap / rows, heapMiB: heap / 2 ** 20, rows, decodeMs, snapshotBytes: bytes.length };
}

const schema = parseDatabaseSchema(NB_SCHEMA_JSON);
const ins: number[] = [];
for (let r = 0; r < rounds; r++) ins.push(insertRound(schema));
const loads = [];
for (let r = 0; r < rounds; r++) loads.push(await loadRound(schema));
const ours = {
  insertsPerS: median(ins),
  loadMs: median(loads.map((l) => l.ms)),
  bytesPerRow: median(loads.map((l) => l.bytesPerRow)),
  heapMiB: median(loads.map((l) => l.heapMiB)),
  decodeMs: median(loads.map((l) => l.decodeMs)),
  rows: loads[0]?.rows ?? 0,
  snapshotBytes: loads[0]?.snapshotBytes ?? 0,
};

const nbSchemaPath = '/usr/share/ovn/ovn-nb.ovsschema';
const real = await realServerFigures(JSON.parse(readFileSync(nbSchemaPath, 'utf8')) as object, Math.min(insertsPerRound, 20_000));

printTable(`bench/ovsdb — medians of ${rounds} rounds; ${fmt(insertsPerRound)} single-row insert txns per round; 10k-port NB = ${fmt(ours.rows)} rows`, [
  ['figure', 'ovnts (in-memory apply)', 'real ovsdb-server (standalone, unix socket)', 'ratio'],
  ['single-row insert txns/s', fmt(ours.insertsPerS), real ? fmt(real.insertsPerS) : 'not installed', real ? `${fmt(ours.insertsPerS / real.insertsPerS, 1)}x` : ''],
  ['10k-port NB load, ms', fmt(ours.loadMs, 1), real ? fmt(real.loadMs, 1) : 'not installed', real ? `${fmt(real.loadMs / ours.loadMs, 1)}x faster` : ''],
  ['memory after load, MiB', `${fmt(ours.heapMiB, 1)} (JS heap)`, real ? `${fmt(real.rssMiB, 1)} (RSS)` : 'not installed', ''],
  ['bytes per row', fmt(ours.bytesPerRow), real ? fmt((real.rssMiB * 2 ** 20) / ours.rows) : '', ''],
  ['snapshot decode (10k ports), ms', fmt(ours.decodeMs, 1), '', ''],
  ['snapshot size, bytes', fmt(ours.snapshotBytes), '', ''],
]);
process.stdout.write(
  '\nNotes: ours applies parsed transactions in memory (no socket, no disk); the real server\n' +
    'numbers include JSON-RPC over a unix socket (32 requests in flight) and its disk log, so the\n' +
    'ratio is the cost of the whole request path there, not of apply alone. Goals: >= 200,000\n' +
    'inserts/s, 10k-port load < 1 s.\n',
);
printFigures({
  insert_txn_per_s: Math.round(ours.insertsPerS),
  load_10k_ms: Number(ours.loadMs.toFixed(1)),
  bytes_per_row: Math.round(ours.bytesPerRow),
  heap_mib: Number(ours.heapMiB.toFixed(1)),
  decode_10k_ms: Number(ours.decodeMs.toFixed(1)),
  real_insert_txn_per_s: real ? Math.round(real.insertsPerS) : 'na',
  real_load_10k_ms: real ? Number(real.loadMs.toFixed(1)) : 'na',
  real_rss_mib: real ? Number(real.rssMiB.toFixed(1)) : 'na',
});
