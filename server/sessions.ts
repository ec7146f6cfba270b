// Who is connected to a central member, by kind: Northbound gRPC watch streams, OVSDB door
// connections (OVN_Northbound and OVN_Southbound), and agent streams. Each door opens a session
// when a client arrives and closes it when the client goes; `ovnts cluster status` and
// /metrics read the counts.
import assert from 'node:assert/strict';

export const sessionKinds = ['watch', 'ovsdb', 'agent'] as const;
export type SessionKind = (typeof sessionKinds)[number];

export type SessionCounts = Readonly<Record<SessionKind, number>>;

export class Sessions {
  private readonly counts = new Map<SessionKind, number>(sessionKinds.map((k) => [k, 0]));
  private readonly refusals = new Map<SessionKind, number>(sessionKinds.map((k) => [k, 0]));

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

  /** Notes a client of `kind` turned away at the door because it was full. */
  refuse(kind: SessionKind): void {
    this.refusals.set(kind, (this.refusals.get(kind) ?? 0) + 1);
  }

  /** Clients turned away since start, by kind. */
  refused(): SessionCounts {
    return { watch: this.refusals.get('watch') ?? 0, ovsdb: this.refusals.get('ovsdb') ?? 0, agent: this.refusals.get('agent') ?? 0 };
  }

  all(): SessionCounts {
    return { watch: this.count('watch'), ovsdb: this.count('ovsdb'), agent: this.count('agent') };
  }
}
