// The timers of background work (batched writes, retries), injectable so that tests move time
// by hand (tests/helpers/fake-timers.ts). Shared by the member's ack writer and the agent's
// pinctrl writers, which the agent imports from here as it does the stream's wire format.

export interface Timers {
  /** A monotonic clock in ms. */
  now(): number;
  setTimeout(f: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** Real timers that do not keep a process alive that is otherwise done. */
export const backgroundTimers: Timers = {
  now: () => performance.now(),
  setTimeout: (f, ms) => {
    const h = setTimeout(f, ms);
    h.unref();
    return h;
  },
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};
