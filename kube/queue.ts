/**
 * A work queue keyed by `namespace/name`, with client-go's guarantees: a key
 * waiting in the queue is queued once however often it is added; a key being
 * processed is never handed to a second worker, and if it is added meanwhile
 * it is processed again afterwards; failed keys come back after a per-key
 * exponential backoff with jitter.
 */
export interface BackoffPolicy {
  /** First retry delay. @default 2000 */
  readonly baseMs: number;
  /** Longest retry delay. @default 300000 */
  readonly maxMs: number;
}

import { realClock, type Clock, type TimerHandle } from './clock.js';

export class WorkQueue {
  private readonly queue: string[] = [];
  private readonly queued = new Set<string>();
  private readonly processing = new Set<string>();
  private readonly dirtyWhileProcessing = new Set<string>();
  private readonly failures = new Map<string, number>();
  private readonly delayed = new Map<string, TimerHandle>();
  private readonly waiters: ((key: string | undefined) => void)[] = [];
  private shuttingDown = false;

  constructor(
    private readonly backoff: BackoffPolicy = { baseMs: 2000, maxMs: 300_000 },
    private readonly onDepthChange?: (depth: number) => void,
    private readonly clock: Clock = realClock,
  ) {}

  get depth(): number {
    return this.queue.length;
  }

  add(key: string): void {
    if (this.shuttingDown) return;
    const timer = this.delayed.get(key);
    if (timer) {
      // An event supersedes a pending retry: the new state is worth a look now.
      timer.cancel();
      this.delayed.delete(key);
    }
    if (this.processing.has(key)) {
      this.dirtyWhileProcessing.add(key);
      return;
    }
    if (this.queued.has(key)) return;
    const waiter = this.waiters.shift();
    if (waiter) {
      this.processing.add(key);
      waiter(key);
      return;
    }
    this.queued.add(key);
    this.queue.push(key);
    this.onDepthChange?.(this.queue.length);
  }

  /** Adds the key after `ms`, unless an add() comes first. */
  addAfter(key: string, ms: number): void {
    if (this.shuttingDown) return;
    this.delayed.get(key)?.cancel();
    const timer = this.clock.after(ms, () => {
      this.delayed.delete(key);
      this.add(key);
    }).unref();
    this.delayed.set(key, timer);
  }

  /** Requeues a failed key after its backoff: base × 2^failures, capped, ±20% jitter. Returns the delay. */
  addRateLimited(key: string): number {
    const failures = this.failures.get(key) ?? 0;
    this.failures.set(key, failures + 1);
    const delay = Math.min(this.backoff.maxMs, this.backoff.baseMs * 2 ** failures) * (0.8 + this.clock.random() * 0.4);
    this.addAfter(key, delay);
    return delay;
  }

  /** Clears a key's failure count after a success (or a terminal error). */
  forget(key: string): void {
    this.failures.delete(key);
  }

  failureCount(key: string): number {
    return this.failures.get(key) ?? 0;
  }

  /** The next key to process, waiting for one; undefined after shutdown. */
  get(): Promise<string | undefined> {
    const key = this.queue.shift();
    if (key !== undefined) {
      this.queued.delete(key);
      this.processing.add(key);
      this.onDepthChange?.(this.queue.length);
      return Promise.resolve(key);
    }
    if (this.shuttingDown) return Promise.resolve(undefined);
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Marks a key's processing finished; a key added meanwhile goes back in the queue. */
  done(key: string): void {
    this.processing.delete(key);
    if (this.dirtyWhileProcessing.delete(key)) this.add(key);
  }

  /** Stops handing out keys; waiting workers receive undefined. */
  shutDown(): void {
    this.shuttingDown = true;
    for (const timer of this.delayed.values()) timer.cancel();
    this.delayed.clear();
    for (const waiter of this.waiters.splice(0)) waiter(undefined);
  }

  /** Accepts keys again after shutDown (a controller that regains leadership). */
  reopen(): void {
    this.shuttingDown = false;
  }

  get inFlight(): number {
    return this.processing.size;
  }
}
