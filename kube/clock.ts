/**
 * Time, timers and randomness, injected (client-go's clock.Clock is the
 * model): the work queue's backoff, leader election's lease arithmetic and
 * the informer's reconnects and liveness are tested against a fake clock
 * that a test advances, instead of against the wall clock and fixed sleeps.
 */
export interface TimerHandle {
  cancel(): void;
  /** The timer alone does not keep the process alive. */
  unref(): TimerHandle;
}

export interface Clock {
  /** Wall-clock time, ms since the epoch: for timestamps others read (a Lease's renewTime). */
  now(): number;
  /** Monotonic ms: for every interval measured on this process's own clock. */
  monotonic(): number;
  /** Runs `fn` once, `ms` from now. */
  after(ms: number, fn: () => void): TimerHandle;
  /** In [0, 1): jitter. */
  random(): number;
}

export const realClock: Clock = {
  now: () => Date.now(),
  monotonic: () => performance.now(),
  after: (ms, fn) => {
    const timer = setTimeout(fn, ms);
    const handle: TimerHandle = {
      cancel: () => clearTimeout(timer),
      unref: () => {
        timer.unref();
        return handle;
      },
    };
    return handle;
  },
  random: () => Math.random(),
};
