// A fake SB for the agent's chassis-side transactions: it records each transaction and answers
// it at once (with `auto`), or, when auto is undefined, when the test calls answer(); it counts
// how many transactions were in flight at once.

/** A fake SB: records each transaction and answers it when the test says so (or at once). */
export class FakeSb {
  readonly txns: unknown[][] = [];
  private readonly waiting: ((r: unknown[]) => void)[] = [];
  inFlightMax = 0;
  private inFlight = 0;
  auto: ((ops: readonly unknown[]) => unknown[]) | undefined = (ops) => ops.map(() => ({}));
  transact = (ops: readonly unknown[]): Promise<unknown[]> => {
    this.txns.push([...ops]);
    this.inFlight++;
    this.inFlightMax = Math.max(this.inFlightMax, this.inFlight);
    return new Promise((resolve) => {
      const done = (r: unknown[]): void => {
        this.inFlight--;
        resolve(r);
      };
      if (this.auto !== undefined) {
        const auto = this.auto;
        queueMicrotask(() => done(auto(ops)));
      } else {
        this.waiting.push(done);
      }
    });
  };
  answer(r: unknown[] = []): void {
    this.waiting.shift()?.(r);
  }
}
