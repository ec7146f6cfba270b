// A fake clock and timer queue for shells that take injected timers (the pinctrl writers and
// health checks): the test moves time by hand and the due callbacks run in order, each followed
// by a few turns of the event loop so that the transactions they start can settle.

/** Lets promise chains and setImmediate callbacks started by a timer run to their next wait. */
export const settle = async (): Promise<void> => {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
};

export class FakeTimers {
  nowMs = 1000;
  private seq = 0;
  private readonly queue = new Map<number, { at: number; f: () => void }>();
  now = (): number => this.nowMs;
  setTimeout = (f: () => void, ms: number): unknown => {
    const id = ++this.seq;
    this.queue.set(id, { at: this.nowMs + ms, f });
    return id;
  };
  clearTimeout = (h: unknown): void => {
    this.queue.delete(h as number);
  };
  /** Timers armed and not yet run or cleared. */
  get pending(): number {
    return this.queue.size;
  }
  /** Moves the clock and runs every timer that came due, in order (armed first among equals). */
  async advance(ms: number): Promise<void> {
    const end = this.nowMs + ms;
    for (let guard = 0; guard < 10_000; guard++) {
      const due = [...this.queue.entries()].filter(([, x]) => x.at <= end).sort((a, b) => a[1].at - b[1].at || a[0] - b[0])[0];
      if (due === undefined) break;
      this.queue.delete(due[0]);
      this.nowMs = Math.max(this.nowMs, due[1].at);
      due[1].f();
      await settle();
    }
    this.nowMs = end;
    await settle();
  }
}
