// The anchor's NB write drivers (../shared/anchors/bench-nb-txn.sh: single-row Logical_Switch
// inserts, serial, N in flight, or many per transaction), over any transport that can run one
// OVSDB transaction.
import type { JsonRpcClient } from '../../ovsdb/jsonrpc-client.js';

/** One transaction of OVSDB operations; resolves once committed, throws if it failed. */
export type Txn = (ops: unknown[]) => Promise<void>;

export interface Run {
  readonly txns: number;
  readonly rows: number;
  readonly wallS: number;
  readonly latMs: readonly number[];
  /** The members' CPU during the run, summed over them (ms): main threads, and their other threads. */
  readonly cpu?: CpuMs;
}

export interface CpuMs {
  readonly main: number;
  readonly other: number;
}

export const insert = (name: string): unknown => ({ op: 'insert', table: 'Logical_Switch', row: { name } });

/** The anchor's driver: `parallel` workers take the next index until n transactions are done. */
export async function drive(txn: Txn, n: number, parallel: number, opsPerTxn: number, prefix: string): Promise<Run> {
  const latMs: number[] = [];
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < n) {
        const k = next++;
        const ops = Array.from({ length: opsPerTxn }, (_, j) => insert(`${prefix}-${k * opsPerTxn + j}`));
        const s = performance.now();
        await txn(ops);
        latMs.push(performance.now() - s);
      }
    }),
  );
  return { txns: n, rows: n * opsPerTxn, wallS: (performance.now() - t0) / 1000, latMs };
}

/** A transaction on OVN_Northbound over an OVSDB JSON-RPC connection (any server: ours or the real one). */
export function ovsdbTxn(client: JsonRpcClient): Txn {
  return async (ops) => {
    const results = (await client.request('transact', ['OVN_Northbound', ...ops])) as unknown[];
    for (const r of results) {
      if (r !== null && typeof r === 'object' && 'error' in r) throw new Error(`transaction failed: ${JSON.stringify(results).slice(0, 500)}`);
    }
  };
}
