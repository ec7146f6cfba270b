// Who is connected to a central member, by kind: Northbound gRPC watch streams, OVSDB door
// connections (OVN_Northbound and OVN_Southbound), and agent streams. Each door opens a session
// when a client arrives and closes it when the client goes; `ovnts cluster status` and
// /metrics read the counts.
import assert from 'node:assert/strict';

export const sessionKinds = ['watch', 'ovsdb', 'agent'] as const;
export type SessionKind = (typeof sessionKinds)[number];

export type SessionCounts = Readonly<Record<SessionKind, number>>;

/** Listeners that turn connections away when full: the OVSDB doors, the gRPC API, /metrics. */
export const refusingListeners = ['ovsdb', 'grpc', 'metrics'] as const;
export type RefusingListener = (typeof refusingListeners)[number];

export class Sessions {
  private readonly counts = new Map<SessionKind, number>(sessionKinds.map((k) => [k, 0]));
  private readonly refusals = { ovsdb: 0, grpc: 0, metrics: 0 };

  /**
   * Counts one session of `kind` until the returned function is called. Calling it again does
   * nothing, so a door may call it from every path by which a client can go.
   */
  open(kind: SessionKind): () => void {
    this.counts.set(kind, this.count(kind) + 1);
    let open = true;
    return () => {
      if (!open) return;
      open = false;
      const n = this.count(kind);
      assert.ok(n > 0, `sessions: closing a ${kind} session when none is open`);
      this.counts.set(kind, n - 1);
    };
  }

  count(kind: SessionKind): number {
    return this.counts.get(kind) ?? 0;
  }

  /** Notes a connection turned away by a full listener (server/listen-budget.ts). */
  refuse(listener: RefusingListener): void {
    this.refusals[listener]++;
  }

  /** Connections turned away since start, by listener. */
  refused(): Readonly<Record<RefusingListener, number>> {
    return { ...this.refusals };
  }

  all(): SessionCounts {
    return { watch: this.count('watch'), ovsdb: this.count('ovsdb'), agent: this.count('agent') };
  }
}
