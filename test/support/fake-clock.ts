/**
 * A clock a test advances by hand. Timers fire in due order as time passes;
 * between them, pending promise callbacks run, so code that awaits a fake
 * API between timers behaves as it would in real time, only instantly.
 */
import type { Clock, TimerHandle } from '../../kube/clock.js';

interface Pending {
  readonly at: number;
  readonly seq: number;
  readonly fn: () => void;
  cancelled: boolean;
}

export class FakeClock implements Clock {
  private time = 0;
  private seq = 0;
  private readonly timers: Pending[] = [];
  /** What random() returns (jitter off the middle of its range by default). */
  randomValue = 0.5;

  constructor(private readonly epoch = Date.parse('2026-11-22T12:00:00Z')) {}

  now(): number {
    return this.epoch + this.time;
  }

  monotonic(): number {
    return this.time;
  }

  after(ms: number, fn: () => void): TimerHandle {
    const pending: Pending = { at: this.time + Math.max(0, ms), seq: this.seq++, fn, cancelled: false };
    this.timers.push(pending);
    const handle: TimerHandle = { cancel: () => (pending.cancelled = true), unref: () => handle };
    return handle;
  }

  random(): number {
    return this.randomValue;
  }

  /** Timers not yet fired or cancelled. */
  get pendingTimers(): number {
    return this.timers.filter((t) => !t.cancelled).length;
  }

  /** Advances time by `ms`, firing every timer that falls due, in order, letting promises settle in between. */
  async advance(ms: number): Promise<void> {
    const end = this.time + ms;
    await settle();
    for (;;) {
      const next = this.timers.filter((t) => !t.cancelled && t.at <= end).sort((a, b) => a.at - b.at || a.seq - b.seq)[0];
      if (!next) break;
      this.timers.splice(this.timers.indexOf(next), 1);
      this.time = next.at;
      next.fn();
      await settle();
    }
    this.time = end;
    await settle();
  }
}

/** Lets every promise callback that is ready run (a few macrotask turns, for chains of awaits). */
export async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}
