// bench/tls: what encryption costs, ours beside the real OVN's. The anchor's NB drivers (serial,
// 32 in flight, 1,000-op batches of single-row Logical_Switch inserts) through the OVSDB door of
// the leader of a 3-process `ovnts up --detach` cluster and through the real 3-member clustered
// ovsdb-server, each run twice: in the clear, and deployed encrypted (ours: the members' gRPC,
// Raft included, and the door's pssl: with certificates from ovs-pki; the real one: Raft over
// ssl: and clients on pssl:, the same certificates). The client is this process in both, over
// TCP on loopback (JSON-RPC, TLS when encrypted).
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { readTlsFiles, type TlsFiles } from '../cluster/tls.js';
import { JsonRpcClient, parseEndpoint } from '../ovsdb/jsonrpc-client.js';
import { makePki } from '../tests/helpers/pki.js';
import { drive, ovsdbTxn, type Run } from './lib/nb-drivers.js';
import { ovsdbServerInstalled } from './lib/ovs.js';
import { freeBasePort } from './lib/ports.js';
import { startRealNbCluster } from './lib/real-ovsdb-cluster.js';
import { fmt, percentile, printFigures, printTable } from './lib/report.js';

const run = promisify(execFile);
const ovntsJs = fileURLToPath(new URL('../bin/ovnts.js', import.meta.url));
const serialN = Number(process.env.N ?? 2000);
const inFlight = Number(process.env.W ?? 32);
const batchOps = Number(process.env.BATCH ?? 1000);
const batchTxns = 5;

interface Drivers {
  readonly serial: Run;
  readonly pipelined: Run;
  readonly batched: Run;
}

/** The drivers on one cluster, after 200 serial warm-up writes. */
async function drivers(client: JsonRpcClient, tag: string): Promise<Drivers> {
  const txn = ovsdbTxn(client);
  await drive(txn, 200, 1, 1, `${tag}-warm`);
  const serial = await drive(txn, serialN, 1, 1, `${tag}-A`);
  const pipelined = await drive(txn, serialN, inFlight, 1, `${tag}-B`);
  const batched = await drive(txn, batchTxns, 1, batchOps, `${tag}-C`);
  return { serial, pipelined, batched };
}

function connect(target: string, identity: TlsFiles | undefined): Promise<JsonRpcClient> {
  return JsonRpcClient.connect(parseEndpoint(target), { requestTimeoutMs: 120_000, ...(identity === undefined ? {} : { tls: readTlsFiles(identity) }) });
}

/** Ours: a fresh `ovnts up --detach` cluster (encrypted with `central`'s identity), the drivers through its leader's door. */
async function ours(central: TlsFiles | undefined, client: TlsFiles | undefined, tag: string): Promise<Drivers> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-tls-'));
  const base = await freeBasePort();
  const tlsFlags = central === undefined ? [] : [`--private-key=${central.privateKey}`, `--certificate=${central.certificate}`, `--ca-cert=${central.caCert}`];
  try {
    await run(process.execPath, [ovntsJs, 'up', '--detach', '--data-dir', dir, '--base-port', String(base), ...tlsFlags]);
    const env = readFileSync(join(dir, 'env'), 'utf8');
    const get = (k: string): string[] => (new RegExp(`^${k}="([^"]*)"`, 'm').exec(env)?.[1] ?? '').split(/[ ,]/).filter(Boolean);
    const doors = get('NB_OVSDB');
    const metrics = get('METRICS');
    let leader = -1;
    for (const [i, m] of metrics.entries()) if (/^ovnts_raft_is_leader 1/m.test(await (await fetch(`${m}/metrics`)).text())) leader = i;
    if (leader < 0) throw new Error('no member says it leads');
    const c = await connect(doors[leader] as string, client);
    try {
      return await drivers(c, tag);
    } finally {
      await c.close();
    }
  } finally {
    await run(process.execPath, [ovntsJs, 'down', '--data-dir', dir]).catch((err: unknown) => process.stderr.write(`ovnts down failed: ${(err as Error).message}\n`));
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The real one: a fresh 3-member clustered ovsdb-server (encrypted with `central`'s identity), the drivers through its leader. */
async function real(central: TlsFiles | undefined, client: TlsFiles | undefined, raftPortBase: number, tag: string): Promise<Drivers> {
  const cluster = await startRealNbCluster('/usr/share/ovn/ovn-nb.ovsschema', raftPortBase, central === undefined ? {} : { ssl: central });
  try {
    const socket = await cluster.leaderSocket();
    const m = cluster.members.find((x) => x.socket === socket);
    if (m === undefined) throw new Error('no leader');
    const c = await connect(`${central === undefined ? 'tcp' : 'ssl'}:127.0.0.1:${m.clientPort}`, client);
    try {
      return await drivers(c, tag);
    } finally {
      await c.close();
    }
  } finally {
    await cluster.stop();
  }
}

if (!ovsdbServerInstalled()) {
  process.stdout.write('bench/tls: ovsdb-server is not installed; nothing to compare with\n');
  process.exit(0);
}
const pkiDir = mkdtempSync(join(tmpdir(), 'bench-tls-pki-'));
const pki = makePki(pkiDir);
const central = pki.identity('central');
const client = pki.identity('client');
process.stderr.write('bench/tls: ours in the clear...\n');
const oursPlain = await ours(undefined, undefined, 'op');
process.stderr.write('bench/tls: ours encrypted...\n');
const oursTls = await ours(central, client, 'ot');
process.stderr.write('bench/tls: the real OVN in the clear...\n');
const realPlain = await real(undefined, undefined, 26_900, 'rp');
process.stderr.write('bench/tls: the real OVN encrypted...\n');
const realTls = await real(central, client, 26_920, 'rt');
rmSync(pkiDir, { recursive: true, force: true });

const txnPerS = (r: Run): number => r.txns / r.wallS;
const rowsPerS = (r: Run): number => r.rows / r.wallS;
/** What encryption costs: the share of throughput lost, or of latency added (negative: it gained). */
const cost = (plain: number, enc: number, rate: boolean): string => `${fmt((rate ? 1 - enc / plain : enc / plain - 1) * 100, 0)} %`;
const rows: string[][] = [];
const line = (label: string, pick: (d: Drivers) => number, unit: string, rate: boolean, digits: number): void => {
  const [op, ot, rp, rt] = [oursPlain, oursTls, realPlain, realTls].map(pick) as [number, number, number, number];
  rows.push([`${label} (${unit})`, fmt(op, digits), fmt(ot, digits), cost(op, ot, rate), fmt(rp, digits), fmt(rt, digits), cost(rp, rt, rate), `${fmt(rate ? ot / rt : rt / ot, 2)}x`]);
};
line('A serial', (d) => txnPerS(d.serial), 'txn/s', true, 0);
line('A serial p50', (d) => percentile(d.serial.latMs, 50), 'ms', false, 2);
line('B 32 in flight', (d) => txnPerS(d.pipelined), 'txn/s', true, 0);
line('C 1,000-op batches', (d) => rowsPerS(d.batched), 'rows/s', true, 0);
printTable('NB writes in the clear and encrypted (one run each, fresh clusters)', [
  ['driver', 'ours clear', 'ours TLS', 'TLS cost', 'real clear', 'real TLS', 'TLS cost', 'ours vs real, TLS'],
  ...rows,
]);
process.stdout.write(
  '\nNotes: ours is three `ovnts central` processes (`ovnts up --detach`); encrypted, every gRPC\n' +
    'connection between members (Raft, forwarding) and the OVSDB door use TLS with client\n' +
    'certificates. The real one is three ovsdb-servers in one Raft cluster; encrypted, Raft runs\n' +
    'over ssl: and clients connect to pssl:. Certificates from ovs-pki; the client is this process,\n' +
    'over TCP on loopback. "TLS cost" is the share of throughput lost (for p50, the share of latency\n' +
    'added); the last column is ours over the real one (for p50, the real one\'s latency over ours).\n',
);
printFigures({
  ours_clear_serial_txn_s: Math.round(txnPerS(oursPlain.serial)),
  ours_tls_serial_txn_s: Math.round(txnPerS(oursTls.serial)),
  real_clear_serial_txn_s: Math.round(txnPerS(realPlain.serial)),
  real_tls_serial_txn_s: Math.round(txnPerS(realTls.serial)),
  ours_tls_pipelined_txn_s: Math.round(txnPerS(oursTls.pipelined)),
  real_tls_pipelined_txn_s: Math.round(txnPerS(realTls.pipelined)),
  ours_tls_batched_rows_s: Math.round(rowsPerS(oursTls.batched)),
  real_tls_batched_rows_s: Math.round(rowsPerS(realTls.batched)),
  tls_serial_ratio: Number((txnPerS(oursTls.serial) / txnPerS(realTls.serial)).toFixed(2)),
  tls_pipelined_ratio: Number((txnPerS(oursTls.pipelined) / txnPerS(realTls.pipelined)).toFixed(2)),
  tls_batched_ratio: Number((rowsPerS(oursTls.batched) / rowsPerS(realTls.batched)).toFixed(2)),
});
