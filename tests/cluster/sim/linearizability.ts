// A linearizability checker for a map of read/write registers (Wing & Gong's search with
// Lowe's memoization, as in Porcupine). Keys are independent, so each key's history is
// checked on its own. Times are integers; an operation whose response was never seen has
// ret = Infinity: it may have taken effect at any point after its call, or never.

export interface Operation {
  readonly client: string;
  readonly key: string;
  readonly kind: 'read' | 'write';
  /** The value written, or the value the read returned (null: never written). */
  readonly value: string | null;
  readonly call: number;
  readonly ret: number;
}

export type LinearizabilityResult =
  | { readonly kind: 'ok' }
  | { readonly kind: 'violation'; readonly key: string; readonly ops: readonly Operation[] }
  | { readonly kind: 'unknown'; readonly key: string; readonly reason: string };

const searchStepsMax = 2_000_000;

export function checkLinearizable(history: readonly Operation[]): LinearizabilityResult {
  const byKey = new Map<string, Operation[]>();
  for (const op of history) {
    const list = byKey.get(op.key) ?? [];
    list.push(op);
    byKey.set(op.key, list);
  }
  for (const [key, ops] of [...byKey].sort((a, b) => (a[0] < b[0] ? -1 : 1))) {
    const r = checkRegister(ops);
    if (r === 'violation') return { kind: 'violation', key, ops };
    if (r === 'unknown') return { kind: 'unknown', key, reason: `search exceeded ${searchStepsMax} steps` };
  }
  return { kind: 'ok' };
}

/** Whether one register's history has a linearization, starting from null. */
function checkRegister(input: readonly Operation[]): 'ok' | 'violation' | 'unknown' {
  const ops = [...input].sort((a, b) => a.call - b.call);
  const n = ops.length;
  const done = new Uint8Array(n);
  const completedTotal = ops.filter((o) => Number.isFinite(o.ret)).length;
  const seen = new Set<string>();
  let steps = 0;
  let exhausted = false;

  const search = (state: string | null, completedDone: number): boolean => {
    if (completedDone === completedTotal) return true;
    if (++steps > searchStepsMax) {
      exhausted = true;
      return false;
    }
    const memoKey = `${String.fromCharCode(...done)}|${state ?? '\u0000null'}`;
    if (seen.has(memoKey)) return false;
    seen.add(memoKey);
    // An operation may go next only if no pending operation returned before it was called.
    let minRet = Number.POSITIVE_INFINITY;
    for (let i = 0; i < n; i++) if (done[i] === 0) minRet = Math.min(minRet, (ops[i] as Operation).ret);
    for (let i = 0; i < n; i++) {
      const op = ops[i] as Operation;
      if (done[i] === 1) continue;
      if (op.call > minRet) break;
      if (op.kind === 'read' && op.value !== state) continue;
      done[i] = 1;
      const next = op.kind === 'write' ? op.value : state;
      const ok = search(next, completedDone + (Number.isFinite(op.ret) ? 1 : 0));
      done[i] = 0;
      if (ok) return true;
      if (exhausted) return false;
    }
    return false;
  };

  const ok = search(null, 0);
  if (ok) return 'ok';
  return exhausted ? 'unknown' : 'violation';
}
