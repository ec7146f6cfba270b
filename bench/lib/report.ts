// Shared output for benchmarks: a readable table, then one last line of key=value figures.

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const n = s.length;
  if (n === 0) return NaN;
  return n % 2 === 1 ? (s[(n - 1) / 2] as number) : ((s[n / 2 - 1] as number) + (s[n / 2] as number)) / 2;
}

export function percentile(xs: readonly number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] as number;
}

export function fmt(x: number, digits = 0): string {
  if (!Number.isFinite(x)) return 'n/a';
  return x.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
}

/** Prints rows as an aligned table; the first row is the header. */
export function printTable(title: string, rows: readonly (readonly string[])[]): void {
  const widths: number[] = [];
  for (const r of rows) r.forEach((c, i) => (widths[i] = Math.max(widths[i] ?? 0, c.length)));
  process.stdout.write(`\n${title}\n`);
  rows.forEach((r, ri) => {
    process.stdout.write(r.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join('  ') + '\n');
    if (ri === 0) process.stdout.write(widths.map((w) => '-'.repeat(w)).join('  ') + '\n');
  });
}

/** The last line of every benchmark: machine-readable figures. */
export function printFigures(figures: Readonly<Record<string, number | string>>): void {
  const parts = Object.entries(figures).map(([k, v]) => `${k}=${typeof v === 'number' ? (Number.isInteger(v) ? v : v.toFixed(3)) : v}`);
  process.stdout.write(`\n${parts.join(' ')}\n`);
}
