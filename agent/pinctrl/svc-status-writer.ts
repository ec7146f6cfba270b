// Service_Monitor.status writes: the health this chassis's probes found, written by the shared
// status-column writer (status-column-writer.ts: only on change, batched, bounded, retried).

import { StatusColumnWriter, statusBatchMax, statusPendingMax, type StatusColumnWriterOptions, type StatusWriterStats } from './status-column-writer.js';
import type { SvcStatus } from './svc-monitor-table.js';

export type { SetResult } from './status-column-writer.js';
export type SvcStatusWriterOptions = StatusColumnWriterOptions;
export type SvcStatusStats = StatusWriterStats;

export const svcStatusPendingMax = statusPendingMax;
export const svcStatusBatchMax = statusBatchMax;

export class SvcStatusWriter extends StatusColumnWriter<SvcStatus> {
  constructor(options: SvcStatusWriterOptions) {
    super({ table: 'Service_Monitor', name: 'SvcStatusWriter' }, options);
  }
}
