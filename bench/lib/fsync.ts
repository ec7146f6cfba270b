// The disk's fsync latency, the floor under a durable commit: write 100 bytes and fsync, many
// times, in a temp file on the same filesystem as the benchmark's data.
import { closeSync, fsyncSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { median, percentile } from './report.js';

export function measureFsync(samples = 500, dir = tmpdir()): { p50Ms: number; p99Ms: number } {
  const d = mkdtempSync(join(dir, 'fsync-'));
  const fd = openSync(join(d, 'f'), 'w');
  const buf = Buffer.alloc(100, 7);
  const times: number[] = [];
  try {
    for (let i = 0; i < samples; i++) {
      const t0 = process.hrtime.bigint();
      writeSync(fd, buf);
      fsyncSync(fd);
      times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
  } finally {
    closeSync(fd);
    rmSync(d, { recursive: true, force: true });
  }
  return { p50Ms: median(times), p99Ms: percentile(times, 99) };
}
