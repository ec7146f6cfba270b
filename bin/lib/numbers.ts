// Numeric command-line values, checked with the flag named in the error: shared by `central`
// and `raft-kv`, and light enough for either to load.

export function positiveInteger(flag: string, s: string): number {
  const n = Number(s);
  if (!Number.isSafeInteger(n) || n < 1) throw new Error(`${flag}: expected a positive integer, got "${s}"`);
  return n;
}

/** A snapshot-log ratio: a number >= 0 (0: snapshots by entry count alone). */
export function snapshotLogRatio(flag: string, s: string): number {
  const n = Number(s);
  if (s.trim() === '' || !Number.isFinite(n) || n < 0) throw new Error(`${flag}: expected a number >= 0, got "${s}"`);
  return n;
}
