// A stand-in for the agent runtime over SbStream, for tests of the agent stream: it holds the SB
// view it was given, acks every update with the view's SB_Global.nb_cfg (as a runtime does once
// it has installed the update), and lets a test wait for a condition on its view — events with
// a timeout, no sleeps.
import type { Row } from '../../ovsdb/index.js';
import { isMapValue } from '../../ovsdb/index.js';
import type { ChassisHello, SbSourceState, SbUpdate } from '../../agent/sb-source.js';
import type { SbStreamOptions } from '../../agent/sb-stream.js';
import { SbStream } from '../../agent/sb-stream.js';

export class ViewAgent {
  readonly source: SbStream;
  readonly view = new Map<string, Map<string, Row>>();
  readonly updates: SbUpdate[] = [];
  readonly states: SbSourceState[] = [];
  /** Record every update (off for agents that get many). */
  keepUpdates = true;
  /** Ack every update once applied. */
  autoAck = true;
  /** While set, each update waits for it before it is applied (a stalled runtime). */
  stall: Promise<void> | undefined;
  /** Updates applied so far. */
  applied = 0;
  private waiters: (() => void)[] = [];

  constructor(
    readonly hello: ChassisHello,
    options: SbStreamOptions,
  ) {
    this.source = new SbStream(options);
  }

  start(): this {
    this.source.start(
      this.hello,
      async (u) => {
        while (this.stall !== undefined) await this.stall;
        this.applied++;
        if (this.keepUpdates) this.updates.push(u);
        if (u.reset) this.view.clear();
        for (const c of u.changes) {
          let t = this.view.get(c.table);
          if (t === undefined) this.view.set(c.table, (t = new Map()));
          if (c.row === undefined) t.delete(c.uuid);
          else t.set(c.uuid, c.row);
        }
        if (this.autoAck) this.source.ack(u.toRevision, this.nbCfg());
        this.wake();
      },
      (s) => {
        this.states.push(s);
        this.wake();
      },
    );
    return this;
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  rows(table: string): Row[] {
    return [...(this.view.get(table)?.values() ?? [])];
  }

  find(table: string, pred: (r: Row) => boolean): Row | undefined {
    return this.rows(table).find(pred);
  }

  nbCfg(): number {
    return (this.rows('SB_Global')[0]?.nb_cfg as number | undefined) ?? 0;
  }

  /** Resolves once `pred` holds (checked now and after every update or state change). */
  async until(pred: () => boolean, what: string, timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!pred()) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`${this.hello.chassis}: timed out after ${timeoutMs} ms waiting for ${what}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** The view as text, row by row, for comparing two agents' views. */
  canonical(): string[] {
    const out: string[] = [];
    for (const [table, rows] of this.view) for (const [uuid, row] of rows) out.push(`${table} ${uuid} ${JSON.stringify(row, (_k, v: unknown) => (isMapValue(v) ? [...v].sort() : v))}`);
    return out.sort();
  }

  close(): Promise<void> {
    return this.source.close();
  }
}

export const geneve = (ip: string): ChassisHello['encaps'] => [{ type: 'geneve', ip }];
