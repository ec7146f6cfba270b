// The hook for applying client requests at most once. A client tags each proposal with its
// id and a sequence number that grows by one per request; a retried request keeps its number.
// The state machine asks `shouldApply` before applying a tagged entry: a number at or below
// the client's last applied one is a duplicate. Because it is driven only by the log, every
// replica makes the same decisions, including which idle session to forget at the limit.

import type { Entry } from './types.js';

export class ClientSessions {
  /** Last applied sequence per client, in least-recently-used order. */
  private readonly lastSeq = new Map<string, number>();

  constructor(private readonly sessionsMax: number = 10_000) {}

  shouldApply(entry: Entry): boolean {
    const tag = entry.client;
    if (tag === undefined) return true;
    const last = this.lastSeq.get(tag.clientId);
    if (last !== undefined && tag.seq <= last) return false;
    this.lastSeq.delete(tag.clientId);
    this.lastSeq.set(tag.clientId, tag.seq);
    if (this.lastSeq.size > this.sessionsMax) {
      const oldest = this.lastSeq.keys().next();
      if (oldest.done !== true) this.lastSeq.delete(oldest.value);
    }
    return true;
  }

  lastApplied(clientId: string): number | undefined {
    return this.lastSeq.get(clientId);
  }

  /** For snapshots: the sessions in their eviction order. */
  entries(): [string, number][] {
    return [...this.lastSeq];
  }

  static fromEntries(entries: Iterable<[string, number]>, sessionsMax?: number): ClientSessions {
    const s = new ClientSessions(sessionsMax);
    for (const [id, seq] of entries) s.lastSeq.set(id, seq);
    return s;
  }
}
