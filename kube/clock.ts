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

/**
 * The longest delay setTimeout keeps (2^31 - 1 ms, about 24.8 days). Node
 * fires a longer one after 1 ms, with a TimeoutOverflowWarning: a requeue
 * at a backup's stale time a year away reconciled the cluster again at once.
 * realClock.after waits longer ones out in steps of this.
 */
export const LONGEST_TIMER_MS = 2 ** 31 - 1;

export const realClock: Clock = {
  now: () => Date.now(),
  monotonic: () => performance.now(),
  after: (ms, fn) => {
    let timer: NodeJS.Timeout;
    let unrefed = false;
    const arm = (remaining: number): void => {
      timer = setTimeout(() => (remaining > LONGEST_TIMER_MS ? arm(remaining - LONGEST_TIMER_MS) : fn()), Math.min(remaining, LONGEST_TIMER_MS));
      if (unrefed) timer.unref();
    };
    arm(ms);
    const handle: TimerHandle = {
      cancel: () => clearTimeout(timer),
      unref: () => {
        unrefed = true;
        timer.unref();
        return handle;
      },
    };
    return handle;
  },
  random: () => Math.random(),
};
